/*
 * bench/shm_steps.c - where a round of stress-ng's --shm-sysv worker spends
 * its time, step by step (issue 18).
 *
 *   shm_steps [MIB [SEGMENTS [SECONDS]]]     (4 MiB, 4 segments, 3 s)
 *
 * Makes the kinds of calls the stressor makes, in its order (written from
 * its description and an strace of it, not from its code): per segment a
 * key probe and shmget (now and then with a SHM_HUGETLB flag, which fails
 * here), shmat, mincore and a read of every page, msync, madvise with
 * varied advice over the segment, a write and check of every page,
 * SHM_LOCK + SHM_UNLOCK, the stat and info commands, SHM_LOCK again (left
 * locked), a look at /proc/self/map_files, more shmat variants; then a fork
 * whose child detaches everything, shmdt and IPC_RMID of each segment, and
 * the wait for the child.  Prints segments per second and the microseconds
 * a round spent in each step, for comparing the two sides step by step
 * (not run by `make bench`: by hand, on either side).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include "util.h"

#ifndef SHM_HUGE_2MB
#define SHM_HUGE_2MB (21 << 26)
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

#define MAX_SEGS 16
#define PAGE 4096

enum { S_KEY, S_GET, S_AT, S_TOUCH, S_MSYNC, S_MADV, S_CHECK, S_LOCK, S_STAT, S_LOCK2,
       S_MAPF, S_MOREAT, S_FORK, S_DT, S_RMID, S_WAIT, S_N };
static const char *const step_name[S_N] = {
	"key_probe", "shmget", "shmat", "read_pages", "msync", "madvise", "write_check",
	"lock_unlock", "stat_info", "lock_again", "map_files", "more_shmat", "fork",
	"shmdt", "rmid", "waitpid",
};
static double spent[S_N];
static unsigned rnd_state = 1;

static unsigned rnd(void)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return rnd_state >> 8;
}

/* run one step's code, adding its time to its step */
#define STEP(s, ...) do {                                       \
		uint64_t t0_ = bench_now_ns();                  \
		__VA_ARGS__;                                    \
		spent[s] += (double)(bench_now_ns() - t0_);     \
	} while (0)

static int make_segment(size_t sz)
{
	static const int flag[] = { SHM_HUGETLB, SHM_HUGETLB | SHM_HUGE_2MB, 0, 0, 0, 0 };
	key_t key = 0;
	int id = -1;

	STEP(S_KEY, do key = (key_t)(rnd() & 0xffff); while (!key || shmget(key, PAGE, 0) >= 0));
	STEP(S_GET, for (int i = 0; i < 10 && id < 0; i++)
		id = shmget(key, sz, IPC_CREAT | IPC_EXCL | 0600 | flag[rnd() % 6]));
	if (id < 0)
		bench_die(errno, "shmget");
	return id;
}

static void read_pages(char *a, size_t sz)
{
	static unsigned char vec[65536];

	mincore(a, sz < sizeof(vec) * PAGE ? sz : sizeof(vec) * PAGE, vec);
	for (size_t o = 0; o < sz; o += PAGE)
		(void)*(volatile char *)(a + o);
}

static void vary_advice(char *a, size_t sz)
{
	static const int advice[] = {
		MADV_NORMAL, MADV_RANDOM, MADV_SEQUENTIAL, MADV_WILLNEED, MADV_DONTNEED,
		MADV_REMOVE, MADV_DONTFORK, MADV_DOFORK, MADV_HUGEPAGE, MADV_NOHUGEPAGE,
		MADV_COLD, MADV_PAGEOUT, MADV_POPULATE_READ,
	};

	for (size_t o = 0; o + 16 * PAGE <= sz; o += 16 * PAGE)
		madvise(a + o, 16 * PAGE, advice[rnd() % (sizeof(advice) / sizeof(advice[0]))]);
	madvise(a, sz, MADV_DOFORK);
}

static void write_check(char *a, size_t sz)
{
	unsigned char v = 0;

	for (size_t o = 0; o < sz; o += PAGE)
		a[o] = (char)v++;
	v = 0;
	for (size_t o = 0; o < sz; o += PAGE)
		if ((unsigned char)a[o] != v++)
			bench_die(0, "page %zu lost its byte", o / PAGE);
}

static void stat_info(int id)
{
	struct shmid_ds ds;
	struct shm_info si;

	shmctl(id, IPC_STAT, &ds);
	shmctl(id, SHM_STAT, &ds);
	shmctl(id, IPC_INFO, &ds);
	shmctl(id, SHM_INFO, (struct shmid_ds *)(void *)&si);
}

static void map_files(char *a, size_t sz)
{
	char path[128], link[256];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%lx-%lx", (int)getpid(),
		 (unsigned long)a, (unsigned long)(a + sz));
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	if (readlink(path, link, sizeof(link)) < 0)
		link[0] = 0;
	fsync(fd);
	close(fd);
}

static void more_shmat(int id)
{
	void *p;

	if ((p = shmat(id, NULL, SHM_RDONLY)) != (void *)-1)
		shmdt(p);
	if ((p = shmat(id, NULL, SHM_RND)) != (void *)-1) {
		shmdt(p);
		if ((p = shmat(id, p, SHM_REMAP)) != (void *)-1)
			shmdt(p);
	}
	if ((p = shmat(id, NULL, SHM_REMAP)) != (void *)-1)
		shmdt(p);
	if (shmat(-1, NULL, 0) != (void *)-1)
		bench_die(0, "shmat(-1) succeeded");
}

int main(int argc, char **argv)
{
	size_t sz = (size_t)(argc > 1 ? atol(argv[1]) : 4) << 20;
	int nseg = argc > 2 ? atoi(argv[2]) : 4;
	double secs = (argc > 3 ? atof(argv[3]) : 3.0) * bench_scale(), total = 0;
	uint64_t start, end;
	long rounds = 0;

	bench_init(argv[0]);
	if (nseg < 1 || nseg > MAX_SEGS || sz < PAGE)
		bench_die(0, "usage: shm_steps [MIB [SEGMENTS (1-16) [SECONDS]]]");
	start = bench_now_ns();
	end = start + (uint64_t)(secs * 1e9);
	while (bench_now_ns() < end) {
		int id[MAX_SEGS];
		char *a[MAX_SEGS];
		pid_t pid = -1;

		for (int i = 0; i < nseg; i++) {
			id[i] = make_segment(sz);
			STEP(S_AT, a[i] = shmat(id[i], NULL, 0));
			if (a[i] == (void *)-1)
				bench_die(errno, "shmat");
			STEP(S_TOUCH, read_pages(a[i], sz));
			STEP(S_MSYNC, msync(a[i], sz, (rnd() & 1) ? MS_ASYNC : MS_SYNC));
			STEP(S_MADV, vary_advice(a[i], sz));
			STEP(S_CHECK, write_check(a[i], sz));
			STEP(S_LOCK, if (shmctl(id[i], SHM_LOCK, NULL) == 0)
				shmctl(id[i], SHM_UNLOCK, NULL));
			STEP(S_STAT, stat_info(id[i]));
			STEP(S_LOCK2, shmctl(id[i], SHM_LOCK, NULL));
			STEP(S_MAPF, map_files(a[i], sz));
			STEP(S_MOREAT, more_shmat(id[i]));
		}
		STEP(S_FORK, pid = fork());
		if (pid == 0) {
			for (int i = 0; i < nseg; i++)
				shmdt(a[i]);
			_exit(0);
		}
		for (int i = 0; i < nseg; i++) {
			STEP(S_DT, shmdt(a[i]));
			STEP(S_RMID, shmctl(id[i], IPC_RMID, NULL));
		}
		STEP(S_WAIT, if (pid > 0) waitpid(pid, NULL, 0));
		rounds++;
	}
	for (int s = 0; s < S_N; s++)
		total += spent[s];
	bench_out("rounds", (double)rounds);
	bench_out("segments_per_s", (double)(rounds * nseg) / ((double)(bench_now_ns() - start) / 1e9));
	for (int s = 0; s < S_N; s++) {
		char key[64];

		snprintf(key, sizeof(key), "us_per_round_%s", step_name[s]);
		bench_out(key, rounds ? spent[s] / 1e3 / (double)rounds : 0);
	}
	bench_out("us_per_round_total", rounds ? total / 1e3 / (double)rounds : 0);
	return 0;
}
