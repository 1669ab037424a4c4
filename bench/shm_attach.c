/*
 * bench/shm_attach.c - attach and detach an existing segment.
 *
 *   shm_attach BYTES
 *
 * One segment of BYTES (default 1 MiB) created once; shmat + shmdt
 * repeated.  Prints ns per attach+detach pair (median of 5 calibrated runs
 * of at least 100 ms each).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/shm.h>
#include "util.h"

static int shmid;

static void at_dt(void *arg, long n)
{
	(void)arg;
	for (long i = 0; i < n; i++) {
		char *p = shmat(shmid, NULL, 0);

		if (p == (void *)-1)
			bench_die(errno, "shmat");
		if (shmdt(p) < 0)
			bench_die(errno, "shmdt");
	}
}

int main(int argc, char **argv)
{
	size_t bytes = argc > 1 ? strtoul(argv[1], NULL, 0) : 1 << 20;
	double ns;

	bench_init(argv[0]);
	shmid = shmget(IPC_PRIVATE, bytes, IPC_CREAT | 0600);
	if (shmid < 0)
		bench_die(errno, "shmget");
	at_dt(NULL, 3);
	ns = bench_ns_per_op(at_dt, NULL, (uint64_t)(1e8 * bench_scale()), 5);
	if (shmctl(shmid, IPC_RMID, NULL) < 0)
		bench_die(errno, "shmctl");
	bench_out("ns_per_op", ns);
	return 0;
}
