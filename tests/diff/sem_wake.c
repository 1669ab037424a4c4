/*
 * sem_wake.c - sleeping in semop() and being woken, with forked children
 * that block (no IPC_NOWAIT) and report their result through the result
 * channel: FIFO order one wakeup at a time, a large waiter skipped for a
 * smaller one, several waiters completed by one op, wait-for-zero waiters
 * served before pending alter ops, multi-op (complex) waiters and the
 * GETNCNT/GETZCNT they count on, EIDRM to every waiter on IPC_RMID, SETVAL
 * and SETALL waking, a timed-out waiter leaving the queue, ERANGE handed
 * to a sleeper by its waker, sempid of a completed sleeper, a waiter
 * killed with SIGKILL leaving the queue (also when complex ops follow),
 * threads of one process sleeping (FIFO, a signal to one, EIDRM, the
 * process exiting, pthread_cancel not acting in semop), hand-offs on one
 * CPU (beside a busy process too) and EIDRM to the peer that waits after
 * them.
 *
 * Children print nothing; the parent prints everything, at points where
 * the state is settled (a child is known blocked from GETNCNT/GETZCNT; the
 * waker completes the sleeper's op before its own call returns).
 */
#include "dt.h"

#include <sys/prctl.h>

#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>

#define OP1 DT_OP1
#define OP2 DT_OP2

static void sop(int id, unsigned short n, short o, short f)
{
	struct sembuf s = { n, o, f };
	dt_semop(id, &s, 1);
}

static void counts(int id, int nsems)
{
	for (int i = 0; i < nsems; i++) {
		dt_get(id, i, GETNCNT);
		dt_get(id, i, GETZCNT);
	}
}

static void fifo(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 1, 0600);
	pid_t c[5];
	for (int i = 0; i < 5; i++)
		c[i] = dt_block(a, OP1(0, -1), 0, 0, GETNCNT, i + 1);
	for (int i = 0; i < 5; i++) {
		sop(a, 0, 1, 0);
		dt_get(a, 0, GETNCNT);          /* already one less */
		dt_get(a, 0, GETPID);           /* the sleeper did the op */
		dt_get(a, 0, GETVAL);
		dt_wakes(1);
	}
	for (int i = 0; i < 5; i++)
		dt_wait(c[i]);
	dt_stat(a, IPC_STAT);
	dt_rmid(a);
}

static void fifo_sizes(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 1, 0600);
	pid_t c1 = dt_block(a, OP1(0, -3), 0, 0, GETNCNT, 1);
	pid_t c2 = dt_block(a, OP1(0, -1), 0, 0, GETNCNT, 2);
	pid_t c3 = dt_block(a, OP1(0, -2), 0, 0, GETNCNT, 3);
	sop(a, 0, 1, 0);                        /* child2 (child1 needs 3) */
	dt_wakes(1);
	dt_get(a, 0, GETNCNT);
	sop(a, 0, 2, 0);                        /* child3 */
	dt_wakes(1);
	dt_get(a, 0, GETVAL);
	sop(a, 0, 2, 0);                        /* 2: child1 still waits */
	dt_get(a, 0, GETNCNT);
	dt_chan_none();
	sop(a, 0, 1, 0);                        /* 3: child1 */
	dt_wakes(1);
	dt_get(a, 0, GETVAL);
	dt_get(a, 0, GETPID);
	dt_wait(c1);
	dt_wait(c2);
	dt_wait(c3);
	dt_rmid(a);
}

static void many(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 2, 0600);
	pid_t c[6];
	for (int i = 0; i < 3; i++)
		c[i] = dt_block(a, OP1(0, -1), 0, 0, GETNCNT, i + 1);
	sop(a, 0, 3, 0);                        /* all three at once */
	dt_get(a, 0, GETNCNT);
	dt_get(a, 0, GETVAL);
	dt_wakes_sorted(3);
	/* zero waiters: all of them, and the alter waiter stays */
	dt_setval(a, 1, 1);
	c[3] = dt_block(a, OP1(1, 0), 0, 1, GETZCNT, 1);
	c[4] = dt_block(a, OP1(1, 0), 0, 1, GETZCNT, 2);
	c[5] = dt_block(a, OP1(1, -2), 0, 1, GETNCNT, 1);
	sop(a, 1, -1, 0);
	counts(a, 2);
	dt_wakes_sorted(2);
	sop(a, 1, 2, 0);
	dt_wakes(1);
	dt_dump(a, 2);
	for (int i = 0; i < 6; i++)
		dt_wait(c[i]);
	dt_rmid(a);
}

/* After an altering op, waiters for zero are served before pending alter
 * ops: here the order changes the outcome. */
static void zero_first(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 2, 0600);
	dt_setval(a, 0, 1);
	pid_t c1 = dt_block(a, OP1(0, 0), 0, 0, GETZCNT, 1);
	pid_t c2 = dt_block(a, OP2(0, 1, 1, -1), 0, 1, GETNCNT, 1);
	struct sembuf w[2] = { { 0, -1, 0 }, { 1, 1, 0 } };
	dt_semop(a, w, 2);
	dt_getall(a);
	counts(a, 2);
	dt_get(a, 0, GETPID);
	dt_get(a, 1, GETPID);
	/* release whoever is left */
	dt_rmid(a);
	dt_wakes_sorted(2);
	dt_wait(c1);
	dt_wait(c2);
}

/* simple ops only: an alter waiter completes, then the zero waiter */
static void zero_chain(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 1, 0600);
	dt_setval(a, 0, 1);
	pid_t c1 = dt_block(a, OP1(0, 0), 0, 0, GETZCNT, 1);
	pid_t c2 = dt_block(a, OP1(0, -2), 0, 0, GETNCNT, 1);
	pid_t c3 = dt_block(a, OP1(0, -3), 0, 0, GETNCNT, 2);
	sop(a, 0, 1, 0);
	dt_getall(a);
	counts(a, 1);
	dt_wakes_sorted(2);
	dt_get(a, 0, GETPID);
	dt_rmid(a);
	dt_wakes(1);
	dt_wait(c1);
	dt_wait(c2);
	dt_wait(c3);
}

static void complex_ops(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 2, 0600);
	pid_t c1 = dt_block(a, OP2(0, -1, 1, -1), 0, 0, GETNCNT, 1);
	counts(a, 2);                           /* counted where it blocks */
	sop(a, 0, 1, 0);
	counts(a, 2);                           /* now blocked on 1 */
	dt_getall(a);
	dt_chan_none();
	sop(a, 1, 1, 0);
	dt_wakes(1);
	dt_getall(a);
	dt_get(a, 0, GETPID);
	dt_get(a, 1, GETPID);
	dt_wait(c1);
	/* a complex waiter ahead of a simple one on the same semaphore */
	dt_setval(a, 0, 1);
	pid_t c2 = dt_block(a, OP2(0, -1, 1, -1), 0, 1, GETNCNT, 1);
	pid_t c3 = dt_block(a, OP1(1, -1), 0, 1, GETNCNT, 2);
	sop(a, 1, 1, 0);                        /* FIFO: child2 */
	dt_wakes(1);
	counts(a, 2);
	sop(a, 1, 1, 0);                        /* child3 */
	dt_wakes(1);
	/* a simple waiter ahead of a complex one that can complete */
	pid_t c4 = dt_block(a, OP1(0, -2), 0, 0, GETNCNT, 1);
	pid_t c5 = dt_block(a, OP2(1, 1, 0, -1), 0, 0, GETNCNT, 2);
	sop(a, 0, 1, 0);                        /* child5, not child4 */
	dt_wakes(1);
	dt_getall(a);
	counts(a, 2);
	sop(a, 0, 2, 0);
	dt_wakes(1);
	dt_dump(a, 2);
	dt_wait(c2);
	dt_wait(c3);
	dt_wait(c4);
	dt_wait(c5);
	dt_rmid(a);
}

/* complex waiters naming a semaphore twice: counted once, on the op that
 * blocks */
static void complex_dup(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 3, 0600);
	dt_setval(a, 1, 1);
	dt_setval(a, 0, 1);
	pid_t c1 = dt_block(a, OP2(1, -3, 1, -2), 0, 1, GETNCNT, 1);
	counts(a, 3);
	pid_t c2 = dt_block(a, OP2(0, 0, 0, 1), 0, 0, GETZCNT, 1);
	counts(a, 3);
	pid_t c3 = dt_block(a, OP2(2, -1, 2, 0), 0, 2, GETNCNT, 1);
	counts(a, 3);
	pid_t c4 = dt_block(a, OP2(0, 1, 0, -3), 0, 0, GETNCNT, 1);
	counts(a, 3);
	sop(a, 1, 3, 0);                        /* 4: child1 needs 5 */
	counts(a, 3);
	sop(a, 1, 1, 0);                        /* 5: child1 */
	dt_wakes(1);
	counts(a, 3);
	sop(a, 0, -1, 0);                       /* 0: child2 (0 then +1) */
	dt_wakes(1);
	counts(a, 3);
	dt_getall(a);
	sop(a, 2, 1, 0);                        /* child3: -1 then needs 0 */
	dt_wakes(1);
	counts(a, 3);
	sop(a, 0, 1, 0);                        /* 2+1-3 = 0: child4 */
	dt_wakes(1);
	dt_dump(a, 3);
	dt_wait(c1);
	dt_wait(c2);
	dt_wait(c3);
	dt_wait(c4);
	dt_rmid(a);
}

/* a waiter killed by SIGKILL is gone for good, also once a complex op
 * waits (found by sem_random wake 1) */
static void killed_then_complex(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 3, 0600);
	pid_t c1 = dt_block(a, OP1(0, -2), 0, 0, GETNCNT, 1);
	kill(c1, SIGKILL);
	dt_wait(c1);
	counts(a, 3);
	pid_t c2 = dt_block(a, OP2(1, -3, 1, -2), 0, 1, GETNCNT, 1);
	counts(a, 3);
	sop(a, 0, 2, 0);                        /* nobody takes it */
	counts(a, 3);
	dt_getall(a);
	dt_get(a, 0, GETPID);
	sop(a, 1, 5, 0);
	dt_wakes(1);
	counts(a, 3);
	dt_dump(a, 3);
	dt_wait(c2);
	dt_rmid(a);
}

/* threads of one process sleeping on the same semaphore: FIFO among
 * them, a signal to one thread interrupts only that one */
static int thr_sem;

static void *thr_wait(void *p)
{
	int n = (int)(long)p;
	struct sembuf s = { 0, -1, 0 };
	int r = semop(thr_sem, &s, 1);
	dt_chan_send(r, r < 0 ? errno : 0, n);
	return NULL;
}

static void thr_usr1(int sig) { (void)sig; }

static void thread_child(void *p)
{
	(void)p;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = thr_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	pthread_t t[3];
	for (int i = 0; i < 3; i++) {
		pthread_create(&t[i], NULL, thr_wait, (void *)(long)(i + 1));
		long long deadline = dt_now_ms() + 5000;
		while (semctl(thr_sem, 0, GETNCNT) != i + 1 && dt_now_ms() < deadline)
			dt_msleep(1);
	}
	pthread_kill(t[1], SIGUSR1);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	exit(0);
}

static void threads(int argc, char **argv)
{
	(void)argc; (void)argv;
	thr_sem = dt_semget(IPC_PRIVATE, 1, 0600);
	pid_t c = dt_fork(thread_child, NULL);
	dt_out("child1: three threads block on [0:-1], thread 2 gets SIGUSR1");
	dt_wakes(1);                            /* thread 2: EINTR */
	dt_wait_cnt(thr_sem, 0, GETNCNT, 2);
	sop(thr_sem, 0, 1, 0);
	dt_wakes(1);
	dt_get(thr_sem, 0, GETPID);
	sop(thr_sem, 0, 1, 0);
	dt_wakes(1);
	dt_wait(c);
	dt_dump(thr_sem, 1);
	/* EIDRM to every thread */
	c = dt_fork(thread_child, NULL);
	dt_out("child2: the same, then IPC_RMID");
	dt_wakes(1);
	dt_wait_cnt(thr_sem, 0, GETNCNT, 2);
	dt_rmid(thr_sem);
	dt_wakes_sorted(2);
	dt_wait(c);
}

/* a process exits (exit from main) while another of its threads sleeps
 * in semop: the sleeper is gone with it */
static void *thr_block(void *p)
{
	(void)p;
	struct sembuf s = { 0, -1, 0 };
	semop(thr_sem, &s, 1);
	dt_chan_send(0, 0, 99);             /* never: the process exits first */
	return NULL;
}

static void exiting_child(void *p)
{
	(void)p;
	pthread_t t;
	pthread_create(&t, NULL, thr_block, NULL);
	long long deadline = dt_now_ms() + 5000;
	while (semctl(thr_sem, 0, GETNCNT) != 1 && dt_now_ms() < deadline)
		dt_msleep(1);
	exit(0);
}

static void thread_waiter_exit(int argc, char **argv)
{
	(void)argc; (void)argv;
	thr_sem = dt_semget(IPC_PRIVATE, 1, 0600);
	pid_t c = dt_fork(exiting_child, NULL);
	dt_out("child1: a thread blocks on [0:-1], then the process exits");
	dt_wait(c);
	dt_get(thr_sem, 0, GETNCNT);
	sop(thr_sem, 0, 1, 0);
	dt_getall(thr_sem);
	dt_get(thr_sem, 0, GETPID);
	dt_chan_none();
	dt_rmid(thr_sem);
}

/* pthread_cancel of a thread sleeping in semop: glibc's semop is not a
 * cancellation point, the thread sleeps on (given 300 ms to be cancelled)
 * and completes its op when woken */
static void *thr_cancel(void *p)
{
	(void)p;
	struct sembuf s = { 0, -1, 0 };
	int r = semop(thr_sem, &s, 1);
	return (void *)(long)(r == 0 ? 1 : 2);
}

static void thread_cancel(int argc, char **argv)
{
	(void)argc; (void)argv;
	thr_sem = dt_semget(IPC_PRIVATE, 1, 0600);
	pthread_t t;
	pthread_create(&t, NULL, thr_cancel, NULL);
	dt_wait_cnt(thr_sem, 0, GETNCNT, 1);
	pthread_cancel(t);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 300000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	void *ret = NULL;
	int r = pthread_timedjoin_np(t, &ret, &ts);
	if (r != 0) {
		dt_out("thread not cancelled within 300 ms (%s)", dt_errname(r));
		sop(thr_sem, 0, 1, 0);          /* let it finish */
		pthread_join(t, &ret);
	}
	dt_out("thread result: %s", ret == PTHREAD_CANCELED ? "cancelled" :
	       ret == (void *)1L ? "semop ok" : "semop failed");
	dt_get(thr_sem, 0, GETNCNT);
	sop(thr_sem, 0, 1, IPC_NOWAIT);
	dt_getall(thr_sem);
	dt_get(thr_sem, 0, GETPID);
	dt_rmid(thr_sem);
}

static void rmid(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 2, 0600);
	int other = dt_semget(IPC_PRIVATE, 1, 0600);
	dt_setval(a, 0, 1);
	pid_t c[6];
	c[0] = dt_block(a, OP1(0, -2), 0, 0, GETNCNT, 1);
	c[1] = dt_block(a, OP1(0, 0), 0, 0, GETZCNT, 1);
	c[2] = dt_block(a, OP1(1, -1), 0, 1, GETNCNT, 1);
	c[3] = dt_block(a, OP2(1, -1, 0, -5), 0, 1, GETNCNT, 2);
	c[4] = dt_block(a, OP1(0, -1 - 1), 60000, 0, GETNCNT, 2);
	c[5] = dt_block(other, OP1(0, -1), 0, 0, GETNCNT, 1);
	counts(a, 2);
	dt_rmid(a);
	dt_wakes_sorted(5);
	dt_get(a, 0, GETNCNT);
	dt_get(other, 0, GETNCNT);             /* the other array's waiter stays */
	dt_chan_none();
	sop(other, 0, 1, 0);
	dt_wakes(1);
	for (int i = 0; i < 6; i++)
		dt_wait(c[i]);
	dt_rmid(other);
}

static void setval_wake(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 3, 0600);
	pid_t c1 = dt_block(a, OP1(0, -2), 0, 0, GETNCNT, 1);
	dt_setval(a, 0, 5);
	dt_wakes(1);
	dt_get(a, 0, GETVAL);
	dt_get(a, 0, GETPID);
	pid_t c2 = dt_block(a, OP1(0, 0), 0, 0, GETZCNT, 1);
	dt_setval(a, 0, 0);
	dt_wakes(1);
	dt_get(a, 0, GETPID);
	/* SETALL wakes waiters of several semaphores */
	pid_t c3 = dt_block(a, OP1(1, -1), 0, 1, GETNCNT, 1);
	pid_t c4 = dt_block(a, OP1(2, -4), 0, 2, GETNCNT, 1);
	pid_t c5 = dt_block(a, OP2(1, -1, 2, -1), 0, 1, GETNCNT, 2);
	unsigned short v[3] = { 0, 1, 5 };
	dt_setall(a, v, 3);
	counts(a, 3);
	dt_getall(a);
	dt_wakes_sorted(2);
	unsigned short v2[3] = { 0, 1, 1 };
	dt_setall(a, v2, 3);
	dt_wakes(1);
	dt_dump(a, 3);
	dt_wait(c1);
	dt_wait(c2);
	dt_wait(c3);
	dt_wait(c4);
	dt_wait(c5);
	dt_rmid(a);
}

static void timed(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 1, 0600);
	pid_t c1 = dt_block(a, OP1(0, -1), 0, 0, GETNCNT, 1);
	long long t0 = dt_now_ms();
	pid_t c2 = dt_block(a, OP1(0, -1), 200, 0, GETNCNT, 2);
	dt_wakes(1);                                        /* child2 times out */
	long long el = dt_now_ms() - t0;
	dt_out("timeout after >= 190ms: %s", el >= 190 ? "yes" : "no");
	dt_get(a, 0, GETNCNT);
	sop(a, 0, 1, 0);
	dt_wakes(1);                                        /* child1 */
	dt_get(a, 0, GETVAL);
	dt_wait(c1);
	dt_wait(c2);
	dt_rmid(a);
}

static void erange_wake(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 2, 0600);
	dt_setval(a, 1, 1);
	pid_t c1 = dt_block(a, OP2(0, -1, 1, 32767), 0, 0, GETNCNT, 1);
	pid_t c2 = dt_block(a, OP1(0, -1), 0, 0, GETNCNT, 2);
	sop(a, 0, 1, 0);        /* child1 gets ERANGE, child2 gets the unit */
	dt_wakes_sorted(2);
	dt_dump(a, 2);
	dt_wait(c1);
	dt_wait(c2);
	dt_rmid(a);
}

static void killed_waiter(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 1, 0600);
	pid_t c1 = dt_block(a, OP1(0, -1), 0, 0, GETNCNT, 1);
	pid_t c2 = dt_block(a, OP1(0, -1), 0, 0, GETNCNT, 2);
	pid_t c3 = dt_block(a, OP1(0, 0), 0, 0, GETZCNT, 0);
	dt_wakes(1);
	kill(c1, SIGKILL);
	dt_wait(c1);
	dt_get(a, 0, GETNCNT);
	sop(a, 0, 1, 0);                /* goes to child2, not the dead one */
	dt_wakes(1);
	dt_get(a, 0, GETVAL);
	dt_get(a, 0, GETPID);
	sop(a, 0, 1, 0);
	dt_get(a, 0, GETVAL);
	dt_wait(c2);
	dt_wait(c3);
	dt_rmid(a);
}

/*
 * Two processes on one CPU hand a token back and forth through two
 * semaphores, ROUNDS times, while the parent's interval timer interrupts
 * their waits (a handler: semop ends with EINTR and is called again).
 * uipc gives the CPU away before it queues a waiter whose peer may post
 * (ipc/sem.c: semop_after_yield), and a handler may run during those
 * yields: no hand-off may be lost or doubled, and nobody may be left
 * queued.  Only the end state is printed (the number of EINTRs depends on
 * timing on both sides).
 */
#define PP_ROUNDS 3000

static volatile sig_atomic_t pp_ticks;

static void pp_tick(int sig)
{
	(void)sig;
	pp_ticks++;
}

/* one semop that may be interrupted: called again until done */
static int pp_op(int id, unsigned short n, short o)
{
	struct sembuf b = { n, o, 0 };
	int r;

	while ((r = semop(id, &b, 1)) < 0 && errno == EINTR)
		;
	return r;
}

static void pp_child(void *p)
{
	int id = *(int *)p, bad = 0;
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = pp_tick;
	sigaction(SIGALRM, &sa, NULL);
	for (int i = 0; i < PP_ROUNDS; i++)
		bad += pp_op(id, 0, -1) < 0 || pp_op(id, 1, 1) < 0;
	dt_chan_send(bad, 0, 0);
}

/* PP_ROUNDS hand-offs with the child on our CPU under a timer of
 * INTERVAL_US, a process that only burns CPU beside them if BUSY */
/* a process that keeps this CPU busy until it is killed, or its parent
 * dies (a scenario that crashes must not leave it spinning) */
static pid_t start_burner(void)
{
	pid_t parent = getpid(), p = fork();

	if (p == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		for (volatile unsigned long x = 0;; x++)
			;
	}
	return p;
}

static void pingpong_on_one_cpu(long interval_us, bool busy)
{
	cpu_set_t one;
	struct sigaction sa;
	struct itimerval it = { { 0, interval_us }, { 0, interval_us } };
	int id = dt_semget(IPC_PRIVATE, 2, 0600), bad = 0;
	pid_t burner = -1;

	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	sched_setaffinity(0, sizeof(one), &one);   /* the children inherit it */
	if (busy) {
		burner = start_burner();
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = pp_tick;
	sigaction(SIGALRM, &sa, NULL);
	pid_t c = dt_fork(pp_child, &id);
	setitimer(ITIMER_REAL, &it, NULL);
	for (int i = 0; i < PP_ROUNDS; i++)
		bad += pp_op(id, 0, 1) < 0 || pp_op(id, 1, -1) < 0;
	it.it_value.tv_usec = it.it_interval.tv_usec = 0;
	setitimer(ITIMER_REAL, &it, NULL);
	if (burner > 0) {
		kill(burner, SIGKILL);
		waitpid(burner, NULL, 0);
	}
	dt_out("parent: %d failed hand-offs", bad);
	dt_wakes(1);
	dt_wait(c);
	dt_get(id, 0, GETVAL);
	dt_get(id, 1, GETVAL);
	dt_get(id, 0, GETNCNT);
	dt_get(id, 1, GETNCNT);
	if (busy) {
		dt_get(id, 0, GETPID);
		dt_get(id, 1, GETPID);
	}
	dt_rmid(id);
}

static void pingpong_one_cpu(int argc, char **argv)
{
	(void)argc; (void)argv;
	pingpong_on_one_cpu(200, false);
}

/*
 * The same beside a process that keeps the CPU busy: there uipc's yields
 * give the busy process a slice each and stop, and a waiter whose peer
 * runs on its CPU sleeps on the semaphore's word without queueing
 * (ipc/sem.c: semop_presleep), woken by the lock-free post.  The timer
 * interrupts those sleeps too.  No hand-off may be lost or doubled,
 * nobody may be left queued, and the last operation of each semaphore is
 * the one the kernel records (GETPID).
 */
static void pingpong_one_cpu_busy(int argc, char **argv)
{
	(void)argc; (void)argv;
	pingpong_on_one_cpu(500, true);
}

#define RP_ARRAYS 6
#define RP_ROUNDS 400

/* the child: RP_ROUNDS hand-offs on each array, then a wait on s0 that
 * only the array's removal ends: its result to the parent */
static void rp_child(void *p)
{
	const int *ids = p;

	for (int k = 0; k < RP_ARRAYS; k++) {
		struct sembuf b = { 0, -1, 0 };
		int r, bad = 0;

		for (int i = 0; i < RP_ROUNDS; i++)
			bad += pp_op(ids[k], 0, -1) < 0 || pp_op(ids[k], 1, 1) < 0;
		r = semop(ids[k], &b, 1);
		dt_chan_send(r, r < 0 ? errno : 0, bad);
	}
}

/*
 * IPC_RMID while the peer waits, after hand-offs on one CPU beside a busy
 * process: there uipc's waiter sleeps on the semaphore's word without
 * queueing (ipc/sem.c: semop_presleep), so the removal finds it there
 * rather than queued, or queued after its pre-sleep ended: both must end
 * in EIDRM, as the kernel's sleeper does.  The parent removes the array
 * once the child sleeps (state S in /proc: after its last post, the only
 * sleep left to it is the final wait).
 */
static void rmid_presleep(int argc, char **argv)
{
	(void)argc; (void)argv;
	cpu_set_t one;
	int ids[RP_ARRAYS], bad = 0;
	pid_t burner, c;

	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	sched_setaffinity(0, sizeof(one), &one);   /* the children inherit it */
	burner = start_burner();
	for (int k = 0; k < RP_ARRAYS; k++)
		ids[k] = dt_semget(IPC_PRIVATE, 2, 0600);
	c = dt_fork(rp_child, ids);
	for (int k = 0; k < RP_ARRAYS; k++) {
		for (int i = 0; i < RP_ROUNDS; i++)
			bad += pp_op(ids[k], 0, 1) < 0 || pp_op(ids[k], 1, -1) < 0;
		if (dt_wait_state(c, 'S', dt_deadline_ms(5000)))
			dt_fail("array %d: the child did not go to sleep", k);
		dt_rmid(ids[k]);
		dt_wakes(1);
	}
	kill(burner, SIGKILL);
	waitpid(burner, NULL, 0);
	dt_out("parent: %d failed hand-offs", bad);
	dt_wait(c);
}

/* the child: RP_ROUNDS hand-offs, then one wait on s0, not made again
 * after EINTR: its result to the parent */
static void last_wait_child(void *p)
{
	int id = *(int *)p, bad = 0, r;
	struct sembuf b = { 0, -1, 0 };

	for (int i = 0; i < RP_ROUNDS; i++)
		bad += pp_op(id, 0, -1) < 0 || pp_op(id, 1, 1) < 0;
	r = semop(id, &b, 1);
	dt_chan_send(r, r < 0 ? errno : 0, bad);
}

/*
 * ROUNDS rounds on one CPU beside a busy process, where uipc's waiter
 * sleeps without queueing (ipc/sem.c: semop_presleep) for as long as
 * nothing wakes it: a child and we hand array ID's semaphores back and
 * forth, then the child waits on s0 once more; once it sleeps, LOOK(ID,
 * CHILD, ROUND) does what the scenario checks and ends the child's wait;
 * its result is printed.  Several rounds: the waiter's last sleep is not
 * always a pre-sleep.
 */
static void beside_presleeper(int rounds, void (*look)(int, pid_t, int, int))
{
	cpu_set_t one;
	pid_t burner, c;

	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	sched_setaffinity(0, sizeof(one), &one);   /* the children inherit it */
	burner = start_burner();
	for (int k = 0; k < rounds; k++) {
		int id = dt_semget(IPC_PRIVATE, 2, 0600), bad = 0;

		c = dt_fork(last_wait_child, &id);
		for (int i = 0; i < RP_ROUNDS; i++)
			bad += pp_op(id, 0, 1) < 0 || pp_op(id, 1, -1) < 0;
		if (dt_wait_state(c, 'S', dt_deadline_ms(5000)))
			dt_fail("round %d: the child did not go to sleep", k);
		look(id, c, k, bad);
		dt_wakes(1);
		dt_wait(c);
		dt_rmid(id);
	}
	kill(burner, SIGKILL);
	waitpid(burner, NULL, 0);
}

/* GETNCNT once, no polling, while the child sleeps: the kernel counts its
 * queued sleeper; and right after the post that wakes it, before it has
 * run: it is no longer counted, as the kernel's waker took it off */
static void look_ncnt(int id, pid_t c, int k, int bad)
{
	int before, after;

	(void)c;
	before = semctl(id, 0, GETNCNT);
	bad += pp_op(id, 0, 1) < 0;
	after = semctl(id, 0, GETNCNT);
	dt_out("round %d: GETNCNT %d while it sleeps, %d after the post; %d failed hand-offs",
	       k, before, after, bad);
}

static void ncnt_presleep(int argc, char **argv)
{
	(void)argc; (void)argv;
	beside_presleeper(4, look_ncnt);
}

/* stopped, it is not counted by GETNCNT (the kernel's left the queue when
 * the stop interrupted its sleep); continued, its semop fails with EINTR */
static void look_stopped(int id, pid_t c, int k, int bad)
{
	int stopped;

	kill(c, SIGSTOP);
	if (dt_wait_state(c, 'T', dt_deadline_ms(5000)))
		dt_fail("round %d: the child did not stop", k);
	stopped = semctl(id, 0, GETNCNT);
	kill(c, SIGCONT);
	dt_out("round %d: GETNCNT %d while it is stopped; %d failed hand-offs", k, stopped, bad);
}

static void stop_presleep(int argc, char **argv)
{
	(void)argc; (void)argv;
	beside_presleeper(3, look_stopped);
}

const struct dt_case dt_cases[] = {
	{ "fifo", fifo, 0 },
	{ "fifo-sizes", fifo_sizes, 0 },
	{ "many", many, 0 },
	{ "zero-first", zero_first, 0 },
	{ "zero-chain", zero_chain, 0 },
	{ "complex", complex_ops, 0 },
	{ "complex-dup", complex_dup, 0 },
	{ "rmid", rmid, 0 },
	{ "threads", threads, 0 },
	{ "thread-waiter-exit", thread_waiter_exit, 0 },
	{ "thread-cancel", thread_cancel, 0 },
	{ "setval-wake", setval_wake, 0 },
	{ "timed", timed, 0 },
	{ "erange-wake", erange_wake, 0 },
	{ "killed-waiter", killed_waiter, 0 },
	{ "killed-then-complex", killed_then_complex, 0 },
	{ "pingpong-one-cpu", pingpong_one_cpu, 0 },
	{ "pingpong-one-cpu-busy", pingpong_one_cpu_busy, 0 },
	{ "rmid-presleep", rmid_presleep, 0 },
	{ "ncnt-presleep", ncnt_presleep, 0 },
	{ "stop-presleep", stop_presleep, 0 },
	{ NULL, NULL, 0 },
};
