/*
 * bench/shm_cycle.c - the whole life of a segment.
 *
 *   shm_cycle BYTES
 *
 * shmget(IPC_PRIVATE, BYTES) + shmat + a write to every page + shmdt +
 * shmctl(IPC_RMID), repeated.  Prints ns per cycle (median of 5 calibrated
 * runs of at least 100 ms each).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/shm.h>
#include "util.h"

static size_t bytes;

static void cycle(void *arg, long n)
{
	(void)arg;
	for (long i = 0; i < n; i++) {
		int id = shmget(IPC_PRIVATE, bytes, IPC_CREAT | 0600);
		char *p;

		if (id < 0)
			bench_die(errno, "shmget");
		p = shmat(id, NULL, 0);
		if (p == (void *)-1)
			bench_die(errno, "shmat");
		for (size_t o = 0; o < bytes; o += 4096)
			p[o] = (char)o;
		if (shmdt(p) < 0)
			bench_die(errno, "shmdt");
		if (shmctl(id, IPC_RMID, NULL) < 0)
			bench_die(errno, "shmctl");
	}
}

int main(int argc, char **argv)
{
	double ns;

	bench_init(argv[0]);
	bytes = argc > 1 ? strtoul(argv[1], NULL, 0) : 4096;
	bench_warm_up();
	cycle(NULL, 3);
	ns = bench_ns_per_op(cycle, NULL, (uint64_t)(1e8 * bench_scale()), 5);
	bench_out("ns_per_cycle", ns);
	return 0;
}
