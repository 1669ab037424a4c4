/*
 * bench/sem_threads.c - seed 004 "reduce ipc_lock contention in semtimedop".
 *
 *   sem_threads NTHREADS [SECONDS [pin]]
 *
 * One array of NTHREADS semaphores; thread t loops semop(+1) / semop(-1) on
 * semaphore t (single-op calls, no SEM_UNDO) for SECONDS.  Prints the total
 * semop calls per second over all threads, and from the threads' CPU time
 * the CPUs they got (CPU time / wall time: below the thread count when
 * other processes share the CPUs, and then ops/s cannot scale) and the CPU
 * time per call (the same for 1 and 2 threads when no cache line written by
 * one is read by the other).  With "pin", thread t runs only on the t-th
 * allowed CPU (modulo their number), so that two threads never share one.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "util.h"

struct worker {
	pthread_t tid;
	unsigned short semnum;
	int cpu;                   /* -1: where the scheduler puts it */
	long ops;
	double cpu_ns;
	int err;
	char pad[64];
};

static double thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int semid;
static int stop;
static pthread_barrier_t barrier;

static void *work(void *arg)
{
	struct worker *w = arg;
	struct sembuf up = { .sem_num = w->semnum, .sem_op = 1, .sem_flg = 0 };
	struct sembuf down = { .sem_num = w->semnum, .sem_op = -1, .sem_flg = 0 };
	long n = 0;
	double c0;

	bench_pin(w->cpu);
	pthread_barrier_wait(&barrier);
	c0 = thread_cpu_ns();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		if (semop(semid, &up, 1) || semop(semid, &down, 1)) {
			w->err = errno;
			break;
		}
		n += 2;
	}
	w->cpu_ns = thread_cpu_ns() - c0;
	w->ops = n;
	return NULL;
}

int main(int argc, char **argv)
{
	struct worker *w;
	struct timespec ts;
	double secs, total = 0, cpu = 0;
	uint64_t t0, t1;
	int i, n, e, pin, ncpu = 0;
	cpu_set_t allowed;

	bench_init(argv[0]);
	if (argc < 2 || (n = atoi(argv[1])) < 1 || n > 1000)
		bench_die(0, "usage: sem_threads NTHREADS [SECONDS [pin]]");
	secs = (argc > 2 ? atof(argv[2]) : 1.0) * bench_scale();
	pin = argc > 3 && !strcmp(argv[3], "pin");
	if (pin && sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
		ncpu = CPU_COUNT(&allowed);
	w = calloc((size_t)n, sizeof(*w));
	if (!w)
		bench_die(ENOMEM, "calloc");
	semid = semget(IPC_PRIVATE, n, IPC_CREAT | 0600);
	if (semid < 0)
		bench_die(errno, "semget(IPC_PRIVATE, %d)", n);
	pthread_barrier_init(&barrier, NULL, (unsigned)n + 1);
	for (i = 0; i < n; i++) {
		w[i].semnum = (unsigned short)i;
		w[i].cpu = -1;
		for (int c = 0, k = 0; ncpu && c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &allowed) && k++ == i % ncpu)
				w[i].cpu = c;
		e = pthread_create(&w[i].tid, NULL, work, &w[i]);
		if (e)
			bench_die(e, "pthread_create");
	}
	pthread_barrier_wait(&barrier);
	t0 = bench_now_ns();
	ts.tv_sec = (time_t)secs;
	ts.tv_nsec = (long)((secs - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	t1 = bench_now_ns();
	for (i = 0; i < n; i++)
		pthread_join(w[i].tid, NULL);
	for (i = 0; i < n; i++) {
		if (w[i].err)
			bench_die(w[i].err, "thread %d: semop", i);
		total += (double)w[i].ops;
		cpu += w[i].cpu_ns;
	}
	bench_rmid(semid);
	bench_out("threads", n);
	bench_out_str("placement", pin ? "pinned" : "scheduler");
	bench_out("seconds", (double)(t1 - t0) / 1e9);
	bench_out("ops_per_s", total / ((double)(t1 - t0) / 1e9));
	bench_out("cpus_used", cpu / (double)(t1 - t0));
	bench_out("cpu_ns_per_op", total > 0 ? cpu / total : 0);
	free(w);
	return 0;
}
