/*
 * shm_at.c - shmat() and shmdt(): NULL address, a given address (SHMLBA
 * alignment, SHM_RND, overlap without SHM_REMAP, SHM_REMAP replacing
 * another attachment), SHM_RDONLY (writes fault), SHM_EXEC, memory really
 * shared between attachments, shmdt of an unaligned address or where
 * nothing is attached, the same segment attached several times, nattch,
 * atime/dtime/lpid, attaching a removed (SHM_DEST) segment, EINVAL/EIDRM.
 */
#include "dt.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* a free, page-aligned range of n pages (reserved then released) */
static char *free_range(size_t n)
{
	void *p = mmap(NULL, n * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(p, n * 4096);
	return p;
}

static void basic(int argc, char **argv)
{
	(void)argc, (void)argv;
	int id = dt_shmget(IPC_PRIVATE, 10000, 0600);
	dt_shmstat(id, IPC_STAT);
	char *a = dt_shmat(id, NULL, 0);
	char *b = dt_shmat(id, NULL, 0);
	dt_shmstat(id, IPC_STAT);
	strcpy(a, "hello");
	dt_out("b sees \"%s\"", b);
	b[8191] = 'x';
	dt_out("a[8191]=%c a[9999]=%d", a[8191], a[9999]);
	dt_shm_access(a + 12287, "read");
	dt_shm_access(a + 12287, "write");
	dt_shmdt(a, "a");
	dt_shmstat(id, IPC_STAT);
	dt_shmdt(a, "a");
	dt_shmdt(b + 1, "b+1");
	dt_shmdt(b + 4096, "b+4096");
	dt_shmdt(NULL, "NULL");
	dt_shmdt(b, "b");
	dt_shmstat(id, IPC_STAT);
	dt_shmat(-1, NULL, 0);
	dt_shmat(id + 1, NULL, 0);
	dt_shmat(id + 32768, NULL, 0);
	dt_shmctl(id, IPC_RMID);
	dt_shmat(id, NULL, 0);
	dt_shmdt(a, "a");
}

static void addresses(int argc, char **argv)
{
	(void)argc, (void)argv;
	int id = dt_shmget(IPC_PRIVATE, 8192, 0600);
	int id2 = dt_shmget(IPC_PRIVATE, 4096, 0600);
	char *r = free_range(8);
	char *a = dt_shmat(id, r, 0);
	dt_shmat(id, r + 1, 0);
	dt_shmat(id, r + 4096 * 4 + 5, 0);
	char *c = dt_shmat(id, r + 4096 * 4 + 5, SHM_RND);
	dt_shmat(id, r + 4096, 0);
	dt_shmat(id, r + 4096 * 3, 0);
	dt_shmat(id, NULL, SHM_REMAP);
	dt_shmat(id, (void *)5, SHM_RND | SHM_REMAP);
	dt_shmstat(id, IPC_STAT);
	/* SHM_REMAP over the first attachment: it goes */
	char *d = dt_shmat(id2, r, SHM_REMAP);
	dt_shmstat(id, IPC_STAT);
	dt_shmstat(id2, IPC_STAT);
	strcpy(d, "two");
	dt_shmdt(a, "a");
	dt_shmstat(id2, IPC_STAT);
	dt_shmdt(c, "c");
	dt_shmdt(r + 4096, "a+4096");
	dt_shmstat(id, IPC_STAT);
	/* a plain mapping in the way */
	char *m = mmap(r, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	dt_shmat(id, m, 0);
	dt_shmat(id, m + 4096 * 7, 0);
	char *e = dt_shmat(id, m, SHM_REMAP);
	dt_shmstat(id, IPC_STAT);
	dt_shmdt(e, "e");
	dt_shmctl(id, IPC_RMID);
	dt_shmctl(id2, IPC_RMID);
}

static void modes(int argc, char **argv)
{
	(void)argc, (void)argv;
	int id = dt_shmget(IPC_PRIVATE, 4096, 0600);
	char *w = dt_shmat(id, NULL, 0);
	char *ro = dt_shmat(id, NULL, SHM_RDONLY);
	w[0] = 42;
	dt_out("ro[0]=%d", ro[0]);
	dt_shm_access(ro, "read");
	dt_shm_access(ro, "write");
	char *x = dt_shmat(id, NULL, SHM_EXEC);
	x[0] = (char)0xc3; /* ret */
	dt_shm_access(x, "call");
	dt_shm_access(w, "call");
	char *xr = dt_shmat(id, NULL, SHM_EXEC | SHM_RDONLY);
	dt_shm_access(xr, "write");
	dt_shmstat(id, IPC_STAT);
	dt_shmdt(w, "w");
	dt_shmdt(ro, "ro");
	dt_shmdt(x, "x");
	dt_shmdt(xr, "xr");
	dt_shmstat(id, IPC_STAT);
	dt_shmctl(id, IPC_RMID);
}

static void removed(int argc, char **argv)
{
	(void)argc, (void)argv;
	int id = dt_shmget(0x7000, 4096, IPC_CREAT | 0600);
	char *a = dt_shmat(id, NULL, 0);
	strcpy(a, "kept");
	dt_shmctl(id, IPC_RMID);
	dt_shmstat(id, IPC_STAT);
	dt_shmstat(id & 0x7fff, SHM_STAT);
	dt_shmget(0x7000, 0, 0);
	int id2 = dt_shmget(0x7000, 4096, IPC_CREAT | 0600);
	dt_shminfo(SHM_INFO);
	char *b = dt_shmat(id, NULL, 0);
	dt_out("b sees \"%s\"", b);
	dt_shmstat(id, IPC_STAT);
	dt_shmctl(id, IPC_RMID);
	dt_shmset(id, 0, 0, 0640);
	dt_shmstat(id, IPC_STAT);
	dt_shmdt(a, "a");
	dt_shmstat(id, IPC_STAT);
	dt_shmdt(b, "b");
	dt_shmstat(id, IPC_STAT);
	dt_shmat(id, NULL, 0);
	dt_shminfo(SHM_INFO);
	dt_shmctl(id2, IPC_RMID);
	/* overlap failure on a removed segment with a last attach */
	int id3 = dt_shmget(IPC_PRIVATE, 4096, 0600);
	char *c = dt_shmat(id3, NULL, 0);
	dt_shmctl(id3, IPC_RMID);
	dt_shmat(id3, c, 0);
	dt_shmstat(id3, IPC_STAT);
	dt_shmdt(c, "c");
	dt_shmstat(id3, IPC_STAT);
}

static void many(int argc, char **argv)
{
	(void)argc, (void)argv;
	int id = dt_shmget(IPC_PRIVATE, 1 << 16, 0600);
	char *p[20];
	for (int i = 0; i < 20; i++)
		p[i] = shmat(id, NULL, i % 2 ? SHM_RDONLY : 0);
	dt_shmstat(id, IPC_STAT);
	for (int i = 0; i < 20; i += 3)
		shmdt(p[i]);
	dt_shmstat(id, IPC_STAT);
	dt_shmctl(id, IPC_RMID);
	dt_shmstat(id, IPC_STAT);
	for (int i = 0; i < 20; i++)
		if (i % 3)
			shmdt(p[i]);
	dt_shmstat(id, IPC_STAT);
	dt_shminfo(SHM_INFO);
}

const struct dt_case dt_cases[] = {
	{ "basic", basic, 0 },
	{ "addresses", addresses, 0 },
	{ "modes", modes, 0 },
	{ "removed", removed, 0 },
	{ "many", many, 0 },
	{ NULL, NULL, 0 },
};
