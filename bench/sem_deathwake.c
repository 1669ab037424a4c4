/*
 * bench/sem_deathwake.c - how fast a sleeper gets a semaphore that a killed
 * process held with SEM_UNDO (issue 5's target: within 100 ms; the kernel
 * applies the undo as the process dies).
 *
 *   sem_deathwake [TRIALS]
 *
 * Per trial: a holder takes the semaphore with SEM_UNDO and waits; a sleeper
 * blocks on it; the holder is killed with SIGKILL; the time from the kill to
 * the sleeper's return is measured.  Prints the median and the maximum in
 * milliseconds.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include "util.h"

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* one trial: the latency in milliseconds */
static double trial(int semid)
{
	int pfd[2];
	pid_t holder, sleeper;
	double t0, t1;
	char c;

	if (semctl(semid, 0, SETVAL, 1) < 0 || pipe(pfd) < 0)
		bench_die(errno, "setup");
	holder = fork();
	if (holder == 0) {
		struct sembuf take = { 0, -1, SEM_UNDO };

		if (semop(semid, &take, 1) < 0 || write(pfd[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	if (read(pfd[0], &c, 1) != 1)
		bench_die(errno, "holder");
	sleeper = fork();
	if (sleeper == 0) {
		struct sembuf take = { 0, -1, 0 };
		double t;

		if (semop(semid, &take, 1) < 0)
			_exit(1);
		t = now_s();
		_exit(write(pfd[1], &t, sizeof(t)) == sizeof(t) ? 0 : 1);
	}
	while (semctl(semid, 0, GETNCNT) < 1)
		usleep(500);
	usleep(5000);
	t0 = now_s();
	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);
	if (read(pfd[0], &t1, sizeof(t1)) != sizeof(t1))
		bench_die(errno, "sleeper");
	waitpid(sleeper, NULL, 0);
	close(pfd[0]);
	close(pfd[1]);
	return (t1 - t0) * 1e3;
}

int main(int argc, char **argv)
{
	int trials = argc > 1 ? atoi(argv[1]) : 100;
	double *lat;
	int semid, i;

	bench_init(argv[0]);
	if (trials < 1)
		trials = 1;
	lat = calloc((size_t)trials, sizeof(*lat));
	semid = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
	if (!lat || semid < 0)
		bench_die(errno, "semget");
	for (i = 0; i < trials; i++)
		lat[i] = trial(semid);
	qsort(lat, (size_t)trials, sizeof(*lat), cmp);
	bench_rmid(semid);
	bench_out("median_ms", lat[trials / 2]);
	bench_out("max_ms", lat[trials - 1]);
	free(lat);
	return 0;
}
