/*
 * crash_shm.c - SIGKILL at every journaled store of a shared memory
 * workload (attach, detach, create, IPC_RMID while attached and not, the
 * last detach of a removed segment, a fork whose child inherits), then
 * check: nattch equals the live attachments (the killed process's are
 * detached by the survivors), a segment marked SHM_DEST is gone once its
 * last attachment went, segments are whole (segsz, memory), no segment file
 * outlives its segment with its memory (what is left of a destroyed one is
 * an empty spare of the pool, at most SHM_POOL_CAP of them), a new segment
 * made from a spare that held data is all zeros, the allocator and the pool
 * are sound (uipc_ns_check).
 *
 * Run under uipc (the .t sets LD_PRELOAD and a fresh UIPC_DIR).  The child
 * re-executes this program with UIPC_FAILPOINT=N so that the library kills
 * it at its Nth journaled store.  Prints TAP.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crashkit.h"

#define KEY_TMP  0x7b7b01
#define KEY_TMP2 0x7b7b02
#define POOL_CAP 16         /* SHM_POOL_CAP (core/layout.h) */

static int workload(int a)
{
	char *p, *q, *t;
	int id, id2;
	pid_t c;

	/* a segment full of data destroyed: its file goes to the pool, and
	 * the shmget of KEY_TMP below takes it */
	id = shmget(IPC_PRIVATE, 8192, IPC_CREAT | 0600);
	t = id >= 0 ? shmat(id, NULL, 0) : (void *)-1;
	if (t == (void *)-1)
		return 15;
	memset(t, 'd', 8192);
	if (shmdt(t) < 0 || shmctl(id, IPC_RMID, NULL) < 0)
		return 16;
	p = shmat(a, NULL, 0);
	if (p == (void *)-1)
		return 1;
	q = shmat(a, NULL, SHM_RDONLY);
	if (q == (void *)-1)
		return 2;
	p[10] = 'w';
	/* cut in two pieces, both detached by shmdt */
	if (munmap(q + 4096, 4096) < 0)
		return 11;
	if (shmdt(q) < 0)
		return 3;
	/* moved: the attachment goes with it (closed here, opened there) */
	{
		char *r = mmap(NULL, 3 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (r == MAP_FAILED)
			return 12;
		p = mremap(p, 3 * 4096, 3 * 4096, MREMAP_MAYMOVE | MREMAP_FIXED, r);
		if (p != r || p[10] != 'w')
			return 13;
	}
	id = shmget(KEY_TMP, 8192, IPC_CREAT | 0600);
	if (id < 0)
		return 4;
	t = shmat(id, NULL, 0);
	if (t == (void *)-1)
		return 5;
	for (int i = 0; i < 8192; i++)
		if (t[i])
			return 17;      /* made from a spare: must be zeros */
	memset(t, 'e', 8192);
	/* two vmas: two attachments, inherited by the child */
	if (mprotect(t, 4096, PROT_READ) < 0)
		return 14;
	if (shmctl(id, IPC_RMID, NULL) < 0)
		return 6;
	/* a child inherits both attachments and exits */
	c = fork();
	if (c == 0)
		_exit(0);
	if (c < 0 || waitpid(c, NULL, 0) != c)
		return 7;
	if (shmdt(t) < 0)
		return 8;
	id2 = shmget(KEY_TMP2, 100, IPC_CREAT | 0600);
	if (id2 < 0)
		return 9;
	if (shmctl(id2, IPC_RMID, NULL) < 0)
		return 10;
	return 0; /* exit detaches p */
}

/* segment files beside the namespace: with a size (a segment's), and
 * empty (spares, *SPARES; empty means no blocks either) */
static int count_files(const char *dir, int *spares)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	*spares = 0;
	while (d && (e = readdir(d))) {
		struct stat st;

		if (!strstr(e->d_name, ".shm-") || fstatat(dirfd(d), e->d_name, &st, 0) < 0)
			continue;
		if (st.st_size == 0 && st.st_blocks == 0)
			(*spares)++;
		else
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

/* a new segment is all zeros, whatever spare it was made from */
static int fresh_is_zero(void)
{
	int id = shmget(IPC_PRIVATE, 8192, IPC_CREAT | 0600), z = 1;
	char *t = id >= 0 ? shmat(id, NULL, 0) : (void *)-1;

	if (t == (void *)-1)
		return 0;
	for (int i = 0; i < 8192; i++)
		z &= t[i] == 0;
	shmdt(t);
	shmctl(id, IPC_RMID, NULL);
	return z;
}

int main(int argc, char **argv)
{
	int a, n, done = 0;
	char *mine;
	const char *dir = getenv("UIPC_DIR");

	if (argc == 3 && !strcmp(argv[1], "work"))
		return workload(atoi(argv[2]));
	a = shmget(IPC_PRIVATE, 3 * 4096, 0600);
	mine = a >= 0 ? shmat(a, NULL, 0) : (void *)-1;
	if (a < 0 || mine == (void *)-1 || !dir) {
		printf("1..1\nnot ok 1 - setup: %s\n", strerror(errno));
		return 1;
	}
	alarm(getenv("CRASH_ALARM") ? atoi(getenv("CRASH_ALARM")) : 120);
	/* every store twice: killed just before it, and just after it */
	for (n = 2; n < 1200 && !done; n++) {
		char sa[16], why[160];
		struct shm_info si;
		struct shmid_ds ds;
		int st, maxidx, live = 0;
		pid_t p;

		mine[10] = 0;
		snprintf(sa, sizeof sa, "%d", a);
		p = fork();
		if (p == 0) {
			ck_arm(n);
			execl("/proc/self/exe", argv[0], "work", sa, (char *)NULL);
			_exit(127);
		}
		waitpid(p, &st, 0);
		done = ck_outcome(st, &n);
		/* a: only our own attachment is left */
		check(shmctl(a, IPC_STAT, &ds) == 0, "IPC_STAT of the base segment", n);
		snprintf(why, sizeof why, "nattch %lu, want 1 (ours)", (unsigned long)ds.shm_nattch);
		check(ds.shm_nattch == 1, why, n);
		check(ds.shm_segsz == 3 * 4096, "segsz changed", n);
		check(mine[10] == 0 || mine[10] == 'w', "memory not shared", n);
		/* every other segment: whole, unattached, not SHM_DEST (those
		 * must be gone with their last attachment) */
		maxidx = shmctl(0, SHM_INFO, (struct shmid_ds *)(void *)&si);
		for (int i = 0; i <= maxidx; i++) {
			int id = shmctl(i, SHM_STAT_ANY, &ds);

			if (id < 0)
				continue;
			live++;
			if (id == a)
				continue;
			snprintf(why, sizeof why, "segment %d: nattch %lu mode 0%o", id,
				 (unsigned long)ds.shm_nattch, (unsigned)ds.shm_perm.mode);
			check(ds.shm_nattch == 0 && !(ds.shm_perm.mode & 01000), why, n);
			check(ds.shm_segsz == 8192 || ds.shm_segsz == 100, "half-made segment", n);
			check(shmctl(id, IPC_RMID, NULL) == 0, "cannot remove a leftover", n);
			live--;
		}
		check(live == 1, "a segment is missing from SHM_STAT_ANY", n);
		check(shmget(KEY_TMP, 0, 0) < 0 && errno == ENOENT, "key KEY_TMP still there", n);
		check(shmget(KEY_TMP2, 0, 0) < 0 && errno == ENOENT, "key KEY_TMP2 still there", n);
		/* files: exactly the live segments' and empty spares (SHM_INFO
		 * swept leftovers and cleaned a dead destroyer's spare) */
		shmctl(0, SHM_INFO, (struct shmid_ds *)(void *)&si);
		{
			int spares, files = count_files(dir, &spares);

			snprintf(why, sizeof why, "%d segment files for 1 segment, %d spares",
				 files, spares);
			check(files == 1 && spares <= POOL_CAP, why, n);
		}
		check(fresh_is_zero(), "a new segment is not all zeros", n);
		check_namespace(n);
		if (ck_nfail)
			break;
	}
	check(done, "workload never completed", n);
	shmdt(mine);
	shmctl(a, IPC_RMID, NULL);
	{
		int spares, files = count_files(dir, &spares);

		check(files == 0 && spares <= POOL_CAP, "a file outlived the last segment", n);
	}
	return report();
}
