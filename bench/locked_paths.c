/*
 * bench/locked_paths.c - the operations that take a lock (and so write the
 * undo journal in uipc), one process, no contention; plus two lock-free ones
 * for comparison.
 *
 *   locked_paths [OP...]        (default: every OP, in the order below)
 *
 * For each OP prints "OP.ns N": ns per operation, the median of 7 calibrated
 * runs of at least 40 ms each (x BENCH_SCALE), and "OP.min_ns N", the fastest
 * of the 7 (on a loaded machine the least disturbed).  What one operation is:
 *   sem_fast     one semop +1 or -1, no SEM_UNDO (uipc: lock-free)
 *   sem_undo     one semop +1 or -1 with SEM_UNDO (uipc: the array's lock)
 *   sem_two      one semop of +1 (or -1) on two semaphores of one array
 *                (uipc: the array-wide lock)
 *   sem_setval   semctl SETVAL + semctl GETVAL (a pair)
 *   sem_create   semget(IPC_PRIVATE, 1) + semctl IPC_RMID (a pair)
 *   msg_small    msgsnd + msgrcv of a 64-byte message (uipc: lock-free ring)
 *   msg_1000     msgsnd + msgrcv of a 1,000-byte message (uipc: messages over
 *                160 bytes go through the queue's lock and list)
 *   msg_create   msgget(IPC_PRIVATE) + msgctl IPC_RMID (a pair)
 *   shm_create   shmget(IPC_PRIVATE, 4096) + shmctl IPC_RMID, no attach (a pair)
 * bench/journal-cost.sh runs it with libuipc.so and with the no-journal
 * build and compares; it runs on the kernel too (unshare --ipc).
 *
 * LOCKED_PATHS_N=N: run each OP exactly N times, once, untimed calibration
 * off (for instruction counts: valgrind --tool=callgrind
 * --toggle-collect=OP_FUNCTION, then Ir / N).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/shm.h>
#include "util.h"

#define MIN_NS 4e7
#define REPS 7

static int semid, msqid;

static void do_semop(struct sembuf *s, int n)
{
	if (semop(semid, s, (size_t)n))
		bench_die(errno, "semop");
}

static void sem_fast(void *arg, long n)
{
	struct sembuf up = { 0, 1, 0 }, down = { 0, -1, 0 };

	(void)arg;
	for (long i = 0; i < n; i += 2) {
		do_semop(&up, 1);
		do_semop(&down, 1);
	}
}

static void sem_undo(void *arg, long n)
{
	struct sembuf up = { 1, 1, SEM_UNDO }, down = { 1, -1, SEM_UNDO };

	(void)arg;
	for (long i = 0; i < n; i += 2) {
		do_semop(&up, 1);
		do_semop(&down, 1);
	}
}

static void sem_two(void *arg, long n)
{
	struct sembuf up[2] = { { 2, 1, 0 }, { 3, 1, 0 } };
	struct sembuf down[2] = { { 2, -1, 0 }, { 3, -1, 0 } };

	(void)arg;
	for (long i = 0; i < n; i += 2) {
		do_semop(up, 2);
		do_semop(down, 2);
	}
}

static void sem_setval(void *arg, long n)
{
	union bench_semun u;

	(void)arg;
	for (long i = 0; i < n; i++) {
		u.val = (int)(i & 7);
		if (semctl(semid, 4, SETVAL, u))
			bench_die(errno, "semctl SETVAL");
		if (semctl(semid, 4, GETVAL) != (int)(i & 7))
			bench_die(errno, "semctl GETVAL");
	}
}

static void sem_create(void *arg, long n)
{
	(void)arg;
	for (long i = 0; i < n; i++) {
		int id = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);

		if (id < 0)
			bench_die(errno, "semget");
		bench_rmid(id);
	}
}

struct msgbuf_ {
	long mtype;
	char mtext[1000];
};

static void msg_pairs(long n, size_t size)
{
	static struct msgbuf_ out = { 1, { 0 } }, in;

	for (long i = 0; i < n; i++) {
		out.mtext[0] = (char)i;
		if (msgsnd(msqid, &out, size, 0))
			bench_die(errno, "msgsnd %zu", size);
		if (msgrcv(msqid, &in, sizeof(in.mtext), 0, 0) != (ssize_t)size ||
		    in.mtext[0] != (char)i)
			bench_die(errno, "msgrcv %zu", size);
	}
}

static void msg_small(void *arg, long n)
{
	(void)arg;
	msg_pairs(n, 64);
}

static void msg_1000(void *arg, long n)
{
	(void)arg;
	msg_pairs(n, 1000);
}

static void msg_create(void *arg, long n)
{
	(void)arg;
	for (long i = 0; i < n; i++) {
		int id = msgget(IPC_PRIVATE, IPC_CREAT | 0600);

		if (id < 0)
			bench_die(errno, "msgget");
		if (msgctl(id, IPC_RMID, NULL))
			bench_die(errno, "msgctl IPC_RMID");
	}
}

static void shm_create(void *arg, long n)
{
	(void)arg;
	for (long i = 0; i < n; i++) {
		int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);

		if (id < 0)
			bench_die(errno, "shmget");
		if (shmctl(id, IPC_RMID, NULL))
			bench_die(errno, "shmctl IPC_RMID");
	}
}

static const struct op {
	const char *name;
	void (*fn)(void *, long);
} ops[] = {
	{ "sem_fast", sem_fast },
	{ "sem_undo", sem_undo },
	{ "sem_two", sem_two },
	{ "sem_setval", sem_setval },
	{ "sem_create", sem_create },
	{ "msg_small", msg_small },
	{ "msg_1000", msg_1000 },
	{ "msg_create", msg_create },
	{ "shm_create", shm_create },
};
#define NOPS (sizeof(ops) / sizeof(ops[0]))

/* median and min of REPS runs of N calls, N calibrated to take MIN_NS */
static void time_op(void (*fn)(void *, long), double *median, double *min)
{
	uint64_t min_ns = (uint64_t)(MIN_NS * bench_scale()), t0, dt;
	double v[REPS];
	long n = 100;

	for (;;) {		/* calibrate (this also warms up) */
		t0 = bench_now_ns();
		fn(NULL, n);
		dt = bench_now_ns() - t0;
		if (dt >= min_ns || n >= (1L << 40))
			break;
		n = dt < min_ns / 16 ? n * 16 : (long)((double)n * 1.2 * (double)min_ns / (double)dt);
	}
	n += n & 1;		/* the semop loops do two calls per turn */
	for (int i = 0; i < REPS; i++) {
		t0 = bench_now_ns();
		fn(NULL, n);
		v[i] = (double)(bench_now_ns() - t0) / (double)n;
	}
	*median = bench_median(v, REPS);	/* sorts v */
	*min = v[0];
}

static void run(const struct op *o)
{
	const char *fixed = getenv("LOCKED_PATHS_N");
	char key[64];
	double ns, min;

	o->fn(NULL, 16);	/* first-call work (undo list, ring) out of the timing */
	if (fixed && atol(fixed) > 0) {
		long n = atol(fixed);
		uint64_t t0 = bench_now_ns();

		o->fn(NULL, n);
		ns = min = (double)(bench_now_ns() - t0) / (double)n;
	} else {
		time_op(o->fn, &ns, &min);
	}
	snprintf(key, sizeof(key), "%s.ns", o->name);
	bench_out(key, ns);
	snprintf(key, sizeof(key), "%s.min_ns", o->name);
	bench_out(key, min);
}

int main(int argc, char **argv)
{
	size_t i;
	int a;

	bench_init(argv[0]);
	for (a = 1; a < argc; a++) {
		for (i = 0; i < NOPS && strcmp(argv[a], ops[i].name); i++)
			;
		if (i == NOPS)
			bench_die(0, "unknown operation %s", argv[a]);
	}
	bench_warm_up();
	semid = semget(IPC_PRIVATE, 5, IPC_CREAT | 0600);
	if (semid < 0)
		bench_die(errno, "semget");
	msqid = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
	if (msqid < 0) {
		bench_rmid(semid);
		bench_die(errno, "msgget");
	}
	for (i = 0; i < NOPS; i++) {
		if (argc > 1) {
			for (a = 1; a < argc && strcmp(argv[a], ops[i].name); a++)
				;
			if (a == argc)
				continue;
		}
		run(&ops[i]);
	}
	if (msgctl(msqid, IPC_RMID, NULL))
		bench_die(errno, "msgctl IPC_RMID");
	bench_rmid(semid);
	return 0;
}
