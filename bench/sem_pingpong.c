/*
 * bench/sem_pingpong.c - cross-process ping-pong over two semaphores.
 *
 *   sem_pingpong [SECONDS [any|same|split][-busy]]
 *
 * Process A posts s0 and waits for s1; process B (forked) waits for s0 and
 * posts s1.  Placement: any (the scheduler's choice), same (both on the
 * first allowed CPU) or split (A and B on two different CPUs); with -busy,
 * a third process that only burns CPU runs beside them (on the first CPU,
 * or where the scheduler puts it with any-busy).  A counts round trips for SECONDS (after a short warm-up), then
 * raises a stop flag in an anonymous shared page and posts s0 once more so B
 * sees it and exits.  Prints round trips per second.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include "util.h"

static int semid;

static void op(unsigned short num, short val)
{
	struct sembuf sb = { .sem_num = num, .sem_op = val, .sem_flg = 0 };

	if (semop(semid, &sb, 1))
		bench_die(errno, "semop(s%u, %d)", num, val);
}

static void side_b(int *stop)
{
	for (;;) {
		op(0, -1);
		if (__atomic_load_n(stop, __ATOMIC_ACQUIRE))
			_exit(0);
		op(1, 1);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "any";
	int cpu_a = -1, cpu_b = -1, busy = 0;
	pid_t busy_pid = -1;
	double secs;
	uint64_t t0, dt, limit;
	long n = 0, i;
	int *stop, status;
	pid_t pid;

	bench_init(argv[0]);
	secs = (argc > 1 ? atof(argv[1]) : 1.0) * bench_scale();
	if (bench_placement_busy(mode, &cpu_a, &cpu_b, &busy))
		bench_die(0, "usage: sem_pingpong [SECONDS [any|same|split][-busy]]");
	bench_out_str("placement", mode);
	stop = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (stop == MAP_FAILED)
		bench_die(errno, "mmap");
	semid = semget(IPC_PRIVATE, 2, IPC_CREAT | 0600);
	if (semid < 0)
		bench_die(errno, "semget");
	pid = fork();
	if (pid < 0)
		bench_die(errno, "fork");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (cpu_b >= 0)
			bench_pin(cpu_b);
		side_b(stop);
	}
	if (cpu_a >= 0)
		bench_pin(cpu_a);
	if (busy)
		busy_pid = bench_busy_start(cpu_a);
	for (i = 0; i < 2000; i++) {		/* warm up */
		op(0, 1);
		op(1, -1);
	}
	limit = (uint64_t)(secs * 1e9);
	t0 = bench_now_ns();
	do {
		for (i = 0; i < 64; i++) {
			op(0, 1);
			op(1, -1);
		}
		n += 64;
		dt = bench_now_ns() - t0;
	} while (dt < limit);
	if (busy_pid > 0)
		bench_busy_stop(busy_pid);
	__atomic_store_n(stop, 1, __ATOMIC_RELEASE);
	op(0, 1);
	if (waitpid(pid, &status, 0) != pid)
		bench_die(errno, "waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		bench_die(0, "process B failed (status %#x)", status);
	bench_rmid(semid);
	bench_out("round_trips", (double)n);
	bench_out("rtt_per_s", (double)n / ((double)dt / 1e9));
	bench_out("ns_per_rtt", (double)dt / (double)n);
	return 0;
}
