/*
 * bench/sem_single.c - one semop without contention and without SEM_UNDO.
 *
 *   sem_single
 *
 * One thread, one semaphore: semop(+1) then semop(-1), repeated.  Prints ns
 * per semop call (median of 7 calibrated runs of at least 50 ms each).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "util.h"

static int semid;

static void up_down(void *arg, long n)
{
	struct sembuf up = { .sem_num = 0, .sem_op = 1, .sem_flg = 0 };
	struct sembuf down = { .sem_num = 0, .sem_op = -1, .sem_flg = 0 };
	long i;

	(void)arg;
	for (i = 0; i < n; i += 2)
		if (semop(semid, &up, 1) || semop(semid, &down, 1))
			bench_die(errno, "semop");
}

int main(int argc, char **argv)
{
	double ns;

	(void)argc;
	bench_init(argv[0]);
	semid = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
	if (semid < 0)
		bench_die(errno, "semget");
	ns = bench_ns_per_op(up_down, NULL, (uint64_t)(5e7 * bench_scale()), 7);
	bench_rmid(semid);
	bench_out("ns_per_op", ns);
	return 0;
}
