/*
 * bench/ns_unshare.c - IPC namespaces: the seed 003 loop and the first
 * call in a brand-new namespace.
 *
 *   ns_unshare [N]
 *
 * unshare_total_ms: N (1000) x unshare(CLONE_NEWIPC) in one process, the
 * seed's own loop (the kernel frees each namespace left in a work queue;
 * uipc leaves it to the kernel to free the memfd).  Then, 50 times, in a
 * fresh namespace: the unshare itself, the first semget (which pays for
 * what the namespace builds lazily: the process's registration) and the
 * second; medians in us.  Then objects_total_ms: N x (unshare, a semaphore
 * array created, a 4 KiB segment created, attached, written and detached),
 * both left for the namespace's teardown.  Last, leaving a namespace whose
 * segment of 64 MiB is written: who pays for freeing it (leave_64m_us).
 */

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
#include "util.h"

#define ROUNDS 50

static double us_since(uint64_t t0)
{
	return (double)(bench_now_ns() - t0) / 1000.0;
}

static void do_unshare(void)
{
	if (unshare(CLONE_NEWIPC) < 0)
		bench_die(errno, "unshare");
}

static int new_sem(void)
{
	int id = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);

	if (id < 0)
		bench_die(errno, "semget");
	return id;
}

/* a semaphore array and a written 4 KiB segment, left in the namespace */
static void leave_objects(void)
{
	int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
	char *p = id < 0 ? (void *)-1 : shmat(id, NULL, 0);

	new_sem();
	if (p == (void *)-1)
		bench_die(errno, "shmget/shmat");
	p[0] = 1;
	if (shmdt(p))
		bench_die(errno, "shmdt");
}

/* leaving a namespace that holds a written 64 MiB segment, no attachment */
static double leave_with_segment(void)
{
	size_t size = 64u << 20;
	int id = shmget(IPC_PRIVATE, size, IPC_CREAT | 0600);
	char *p = id < 0 ? (void *)-1 : shmat(id, NULL, 0);
	uint64_t t0;

	if (p == (void *)-1)
		bench_die(errno, "shmget/shmat");
	memset(p, 1, size);
	shmdt(p);
	t0 = bench_now_ns();
	do_unshare();
	return us_since(t0);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	double un[ROUNDS], first[ROUNDS], second[ROUNDS];
	uint64_t t0;

	bench_init(argv[0]);
	t0 = bench_now_ns();
	for (long i = 0; i < n; i++)
		do_unshare();
	bench_out("unshare_total_ms", us_since(t0) / 1000.0);
	bench_out("unshare_us", us_since(t0) / (double)n);
	for (int r = 0; r < ROUNDS; r++) {
		t0 = bench_now_ns();
		do_unshare();
		un[r] = us_since(t0);
		t0 = bench_now_ns();
		new_sem();
		first[r] = us_since(t0);
		t0 = bench_now_ns();
		new_sem();
		second[r] = us_since(t0);
	}
	bench_out("unshare_fresh_us", bench_median(un, ROUNDS));
	bench_out("first_semget_us", bench_median(first, ROUNDS));
	bench_out("second_semget_us", bench_median(second, ROUNDS));
	t0 = bench_now_ns();
	for (long i = 0; i < n; i++) {
		do_unshare();
		leave_objects();
	}
	bench_out("objects_total_ms", us_since(t0) / 1000.0);
	bench_out("leave_64m_us", leave_with_segment());
	return 0;
}
