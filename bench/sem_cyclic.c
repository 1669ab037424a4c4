/*
 * bench/sem_cyclic.c - seed 002 "do cyclic id allocation".
 *
 *   sem_cyclic DIST [OPS]
 *
 * Places two one-semaphore arrays at idx 1 and idx 1+DIST (through
 * kernel.sem_next_id), then performs OPS no-op semops (sem_op 0 on a
 * semaphore at 0, which completes at once), choosing one of the two ids at
 * random for each.  Prints ns per op (median of 5 timed blocks).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "util.h"

static int place(long idx)
{
	char buf[32];
	int id;

	snprintf(buf, sizeof(buf), "%ld", idx);
	bench_sysctl_set("kernel.sem_next_id", buf);
	id = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
	if (id < 0)
		bench_die(errno, "semget after sem_next_id=%ld", idx);
	if (id != idx)
		bench_die(0, "sem_next_id=%ld gave id %d (want %ld)", idx, id, idx);
	return id;
}

static int ids[2];
static uint64_t seed = 0x9e3779b97f4a7c15ull;

static void noop_ops(long n)
{
	struct sembuf op = { .sem_num = 0, .sem_op = 0, .sem_flg = 0 };
	uint64_t bits = 0;
	long i;

	for (i = 0; i < n; i++) {
		if ((i & 63) == 0)
			bits = bench_rand(&seed);
		if (semop(ids[bits & 1], &op, 1))
			bench_die(errno, "semop(%d, {0,0,0})", ids[bits & 1]);
		bits >>= 1;
	}
}

int main(int argc, char **argv)
{
	long dist, ops, i;
	double v[5];
	uint64_t t0;

	bench_init(argv[0]);
	if (argc < 2 || (dist = atol(argv[1])) < 1 || dist > 32766)
		bench_die(0, "usage: sem_cyclic DIST(1..32766) [OPS]");
	ops = (long)((argc > 2 ? atof(argv[2]) : 2e6) * bench_scale());
	if (ops < 5)
		ops = 5;

	ids[0] = place(1);
	ids[1] = place(1 + dist);
	noop_ops(ops / 20);			/* warm up */
	for (i = 0; i < 5; i++) {
		t0 = bench_now_ns();
		noop_ops(ops / 5);
		v[i] = (double)(bench_now_ns() - t0) / (double)(ops / 5);
	}
	bench_rmid(ids[0]);
	bench_rmid(ids[1]);

	bench_out("dist", (double)dist);
	bench_out("id0", ids[0]);
	bench_out("id1", ids[1]);
	bench_out("ops", (double)ops);
	bench_out("ns_per_op", bench_median(v, 5));
	return 0;
}
