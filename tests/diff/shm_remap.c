/*
 * shm_remap.c - remap_file_pages on attachments.  The kernel emulates it
 * with an mmap(MAP_FIXED) of the vma's file (mm/mmap.c): the range must
 * begin in a shared vma and lie in vmas of the same file (one shmat) and
 * flags; the old vmas are closed (nattch--), then the new one is merged
 * into the vma before it (or after it) when the segment's pages follow on,
 * else shm_mmap opens it (nattch++) - unless closing the old ones destroyed
 * an IPC_RMID'd segment: then EINVAL and the range is left unmapped.
 * Pages past the segment's end give SIGBUS.  shmdt afterwards detaches the
 * pieces that map the segment from the address given (vm_pgoff).  The
 * contents are read back through the remapped pages.  Addresses are fixed
 * (ADDR) so that both runs make the same vmas.
 */
#include "dt.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define P 4096UL
#define ADDR ((char *)0x500000000000UL)

static int g_id;

/* "abcd": the first byte of each page of the attachment at A (N pages) */
static const char *firsts(const char *a, int n)
{
	static char buf[64];

	for (int i = 0; i < n && i < 63; i++)
		buf[i] = a[i * P];
	buf[n < 63 ? n : 63] = '\0';
	return buf;
}

static void remap(char *p, size_t len, int prot, size_t pgoff, int flags)
{
	errno = 0;
	int r = remap_file_pages(p, len, prot, pgoff, flags);
	int e = errno;

	dt_out("remap_file_pages(ADDR+%luP%s, %luP%s, prot %d, pgoff %zu, flags %#x) = %s; "
	       "nattch %ld", (unsigned long)((uintptr_t)(p - ADDR) / P),
	       ((uintptr_t)(p - ADDR) % P) ? "+5" : "", (unsigned long)(len / P),
	       (len % P) ? "+7" : "", prot, pgoff, flags, dt_res(r, e), dt_nattch(g_id));
}

/* a segment of N pages at ADDR, page i starting with 'a' + i */
static char *seg(int n)
{
	char *a;

	g_id = dt_shmget(IPC_PRIVATE, (size_t)n * P, 0600);
	a = dt_shmat(g_id, ADDR, 0);
	if (a == (void *)-1)
		return NULL;
	for (int i = 0; i < n; i++)
		a[i * P] = (char)('a' + i);
	return a;
}

static void basic(int argc, char **argv)
{
	(void)argc, (void)argv;
	char *a = seg(4);

	if (!a)
		return;
	remap(a + P, P, 0, 3, 0);
	dt_out("pages: %s", firsts(a, 4));
	a[P] = 'D';
	dt_out("written through page 1: page 3 of the segment is now: %s", firsts(a, 4));
	/* page 1 back to its own page: merged into the vma before it */
	remap(a + P, P, 0, 1, 0);
	dt_out("pages: %s", firsts(a, 4));
	/* the whole attachment, over its three vmas, in one vma */
	remap(a, 4 * P, 0, 0, 0);
	/* reversed: every page its own vma */
	remap(a, P, 0, 3, 0);
	remap(a + 3 * P, P, 0, 0, 0);
	dt_out("pages: %s", firsts(a, 4));
	/* the last two pages at the segment's first two: merge after? */
	remap(a + P, P, 0, 1, MAP_NONBLOCK);
	remap(a + 2 * P, P, 0, 2, 0);
	dt_out("pages: %s", firsts(a, 4));
	/* by number, through syscall() */
	errno = 0;
	long r = syscall(SYS_remap_file_pages, a, P, 0, 0, 0);
	dt_out("syscall(SYS_remap_file_pages, ADDR, 1P, 0, 0, 0) = %s; nattch %ld",
	       dt_res(r, errno), dt_nattch(g_id));
	dt_out("pages: %s", firsts(a, 4));
	/* shmdt finds the pieces mapping the segment from ADDR on */
	dt_shmdt(a, "ADDR");
	dt_out("nattch %ld", dt_nattch(g_id));
	dt_shmdt(a + 3 * P, "ADDR+3P");
	dt_out("nattch %ld", dt_nattch(g_id));
	if (dt_nattch(g_id) > 0)
		munmap(a, 4 * P);
	dt_shmctl(g_id, IPC_RMID);
}

static void errors(int argc, char **argv)
{
	(void)argc, (void)argv;
	char *a = seg(4), *b, *m;

	if (!a)
		return;
	remap(a + P, P, 1, 1, 0);                 /* prot must be 0 */
	remap(a + P, 0, 0, 1, 0);                 /* empty */
	remap(a + P, 7, 0, 1, 0);                 /* less than a page: empty */
	remap(a + P + 5, P, 0, 2, 0);             /* start rounded down */
	remap(a + P, P + 7, 0, 1, 0);             /* size rounded down */
	remap(a + 3 * P, 2 * P, 0, 0, 0);         /* past the attachment's end */
	remap(a + P, P, 0, ~(size_t)0, 0);        /* pgoff wraps */
	remap(a + P, P, 0, 1, MAP_PRIVATE | MAP_FIXED); /* other flags ignored */
	/* a second attachment right after the first: another file */
	b = dt_shmat(g_id, a + 4 * P, 0);
	if (b != (void *)-1) {
		remap(a + 3 * P, 2 * P, 0, 0, 0);
		dt_shmdt(b, "ADDR+4P");
	}
	/* a private mapping, and a shared one just before the attachment */
	m = mmap(a - P, P, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (m != MAP_FAILED) {
		remap(m, P, 0, 0, 0);
		munmap(m, P);
	}
	m = mmap(a - P, P, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (m != MAP_FAILED) {
		remap(m, 2 * P, 0, 0, 0);
		remap(m, P, 0, 0, 0);
		munmap(m, P);
	}
	/* unmapped */
	remap(a + 8 * P, P, 0, 0, 0);
	dt_shmdt(a, "ADDR");
	dt_shmctl(g_id, IPC_RMID);
}

/* the segment's pages past its end: SIGBUS */
static void beyond(int argc, char **argv)
{
	(void)argc, (void)argv;
	char *a = seg(2);

	if (!a)
		return;
	remap(a + P, P, 0, 9, 0);
	dt_shm_access(a + P, "read");
	dt_shm_access(a, "read");
	remap(a, 2 * P, 0, 1, 0);
	dt_shm_access(a, "read");
	dt_shm_access(a + P, "read");
	dt_out("page 0 now holds: %c", a[0]);
	dt_shmdt(a, "ADDR");
	dt_out("nattch %ld", dt_nattch(g_id));
	munmap(a, 2 * P);
	dt_shmctl(g_id, IPC_RMID);
}

/* after IPC_RMID: fine while the segment lives, EINVAL when the remap's
 * own closing destroyed it */
static void rmid(int argc, char **argv)
{
	(void)argc, (void)argv;
	char *a = seg(3), *b;

	if (!a)
		return;
	b = dt_shmat(g_id, ADDR + 16 * P, 0);
	dt_shmctl(g_id, IPC_RMID);
	remap(a + P, P, 0, 2, 0);
	dt_out("pages: %s", firsts(a, 3));
	/* the whole first attachment: the second keeps the segment */
	remap(a, 3 * P, 0, 0, 0);
	dt_out("pages: %s", firsts(a, 3));
	dt_shmdt(b, "ADDR+16P");
	/* a part of the last attachment: its other pieces keep it */
	remap(a + P, P, 0, 0, 0);
	dt_out("pages: %s", firsts(a, 3));
	/* the whole of it: closing its vmas destroys the segment */
	remap(a, 3 * P, 0, 0, 0);
	dt_out("IPC_STAT nattch: %ld", dt_nattch(g_id));
	dt_shm_access(a, "read");
	dt_shmdt(a, "ADDR");
}

/* the new vma has the mmap's flags: madvise(MADV_DONTFORK) is gone from
 * it, so a fork child inherits (and counts) it; mlock stays (MAP_LOCKED) */
static void flags(int argc, char **argv)
{
	(void)argc, (void)argv;
	char *a = seg(4);

	if (!a)
		return;
	int r = madvise(a, 4 * P, MADV_DONTFORK);

	dt_out("madvise DONTFORK = %s", dt_res(r, errno));
	remap(a + P, P, 0, 1, 0);
	/* page 1 no longer DONTFORK: not mergeable with page 0 */
	remap(a + 2 * P, P, 0, 2, 0);
	{
		int fds[2];

		if (pipe(fds) == 0) {
			pid_t c = fork();

			if (c == 0) {
				char x;

				close(fds[1]);
				if (read(fds[0], &x, 1) < 0)
					_exit(1);
				_exit(0);
			}
			close(fds[0]);
			dt_out("with a fork child: nattch %ld", dt_nattch(g_id));
			close(fds[1]);
			while (waitpid(c, NULL, 0) < 0 && errno == EINTR)
				;
		}
	}
	r = mlock(a, 4 * P);
	dt_out("mlock = %s", dt_res(r, errno));
	remap(a + 3 * P, P, 0, 3, 0);
	remap(a, 4 * P, 0, 0, 0);
	dt_shmdt(a, "ADDR");
	dt_out("nattch %ld", dt_nattch(g_id));
	dt_shmctl(g_id, IPC_RMID);
}

const struct dt_case dt_cases[] = {
	{ "basic", basic, 0 },
	{ "errors", errors, 0 },
	{ "beyond", beyond, 0 },
	{ "rmid", rmid, 0 },
	{ "flags", flags, 0 },
	{ NULL, NULL, 0 },
};
