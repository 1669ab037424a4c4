/*
 * msg_ring.c - message queues across uipc's fast path (ipc/msgring.c): long
 * streams of small messages with IPC_STAT in between, small and large
 * messages interleaved (ring and locked list in one FIFO), typed receives
 * that must search past the ring's head, E2BIG / MSG_NOERROR / MSG_COPY on
 * messages the ring holds, a queue full by bytes and one full by count (more
 * messages than the ring has slots), IPC_SET and IPC_RMID while the ring
 * holds messages, a sleeper woken by a message that a stream goes past, an
 * EFAULT receive, and a handler that runs early in a blocking msgrcv.
 */
#include "msgdt.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>

/* receive N with msgtyp 0 and print them */
static void drain(int q, int n, size_t bufsz)
{
	for (int i = 0; i < n; i++)
		m_rcv(q, bufsz, 0, IPC_NOWAIT);
}

static void stream_stat(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 60; i++)
			m_snd(q, 1 + i % 3, 100, i + round, 0);
		m_stat(q, IPC_STAT);
		drain(q, 25, 200);
		m_stat(q, IPC_STAT);
		m_stat(q, MSG_STAT);
		m_info(MSG_INFO);
		drain(q, 35, 200);
		m_stat(q, IPC_STAT);
	}
	m_rmid(q);
}

static void mixed_sizes(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	for (int i = 0; i < 40; i++)
		m_snd(q, 1, i % 4 == 3 ? 500 : 100 + i, i, 0);
	m_stat(q, IPC_STAT);
	drain(q, 20, 1000);
	for (int i = 0; i < 20; i++)
		m_snd(q, 1, i % 5 == 0 ? 2000 : 8, 100 + i, 0);
	drain(q, 41, 4000);
	m_stat(q, IPC_STAT);
	m_rmid(q);
}

static void typed(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 12; i++)
			m_snd(q, 1 + i % 4, 20, i, 0);
		m_rcv(q, 100, 3, IPC_NOWAIT);             /* past the head */
		m_rcv(q, 100, 9, IPC_NOWAIT);             /* none: ENOMSG */
		m_rcv(q, 100, 1, MSG_EXCEPT | IPC_NOWAIT); /* first not 1 */
		m_rcv(q, 100, -2, IPC_NOWAIT);            /* lowest <= 2 */
		m_rcv(q, 100, 1, IPC_NOWAIT);             /* the head */
		m_rcv(q, 100, 4, MSG_COPY | IPC_NOWAIT);  /* position 4 */
		m_rcv(q, 100, 40, MSG_COPY | IPC_NOWAIT); /* no such position */
		m_stat(q, IPC_STAT);
		drain(q, 8, 100);
		m_rcv(q, 100, 0, IPC_NOWAIT);
	}
	m_rmid(q);
}

static void e2big(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	m_snd(q, 2, 100, 1, 0);
	m_snd(q, 3, 10, 2, 0);
	m_rcv(q, 50, 0, IPC_NOWAIT);               /* E2BIG, stays */
	m_rcv(q, 50, 2, IPC_NOWAIT);               /* E2BIG */
	m_rcv(q, 50, 2, MSG_EXCEPT | IPC_NOWAIT);  /* type 3 fits */
	m_stat(q, IPC_STAT);
	m_rcv(q, 50, 0, MSG_NOERROR | IPC_NOWAIT); /* truncated */
	m_stat(q, IPC_STAT);
	m_rcv(q, 50, 0, IPC_NOWAIT);
	m_rmid(q);
}

static void full_bytes(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	for (int i = 0; i < 130; i++)
		if (m_snd(q, 1, 128, i, IPC_NOWAIT) < 0)
			break;
	m_stat(q, IPC_STAT);
	m_rcv(q, 200, 0, IPC_NOWAIT);
	m_snd(q, 1, 129, 7, IPC_NOWAIT);           /* does not fit */
	m_snd(q, 1, 128, 8, IPC_NOWAIT);           /* fits */
	m_stat(q, IPC_STAT);
	drain(q, 130, 200);
	m_stat(q, IPC_STAT);
	m_rmid(q);
}

static void full_count(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	/* zero-length messages: the count is the limit (qbytes), far more
	 * than the ring's slots */
	m_set(q, -1, -1, -1, 600);
	for (int i = 0; i < 601; i++) {
		msnd_buf.mtype = 1 + i % 2;
		errno = 0;
		if (msgsnd(q, &msnd_buf, 0, IPC_NOWAIT) < 0) {
			dt_out("msgsnd #%d = %s", i, dt_res(-1, errno));
			break;
		}
	}
	m_stat(q, IPC_STAT);
	m_rcv(q, 10, 2, IPC_NOWAIT);
	m_snd(q, 5, 0, 0, IPC_NOWAIT);
	m_snd(q, 5, 0, 0, IPC_NOWAIT);
	int n = 0, e = 0;
	long first = -1, last = -1;
	while (m_rcv_quiet(q, 10, 0, IPC_NOWAIT, &e) >= 0) {
		if (first < 0)
			first = mrcv_buf.mtype;
		last = mrcv_buf.mtype;
		n++;
	}
	dt_out("drained %d (first type %ld, last type %ld) then %s", n, first, last,
	       dt_errname(e));
	m_stat(q, IPC_STAT);
	m_rmid(q);
}

static void set_while_full(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	for (int i = 0; i < 50; i++)
		m_snd(q, 1, 100, i, 0);
	m_set(q, -1, -1, 0640, 3000);              /* below what it holds */
	m_stat(q, IPC_STAT);
	m_snd(q, 1, 1, 99, IPC_NOWAIT);            /* EAGAIN */
	drain(q, 25, 200);
	m_snd(q, 1, 1, 98, IPC_NOWAIT);            /* EAGAIN: 2500 + 1 */
	drain(q, 5, 200);
	m_snd(q, 1, 1, 97, IPC_NOWAIT);
	m_stat(q, IPC_STAT);
	m_set(q, -1, -1, 0600, 16384);
	for (int i = 0; i < 10; i++)
		m_snd(q, 2, 60, 50 + i, 0);
	drain(q, 31, 200);
	m_stat(q, IPC_STAT);
	m_rmid(q);
}

static void rmid_full(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(0x5150, IPC_CREAT | 0600);
	for (int i = 0; i < 30; i++)
		m_snd(q, 1, 64, i, 0);
	m_rmid(q);
	m_snd(q, 1, 64, 1, IPC_NOWAIT);
	m_rcv(q, 100, 0, IPC_NOWAIT);
	int r = m_get(0x5150, IPC_CREAT | 0600);
	m_stat(r, IPC_STAT);
	m_snd(r, 1, 64, 5, 0);
	m_rcv(r, 100, 0, IPC_NOWAIT);
	m_rcv(r, 100, 0, IPC_NOWAIT);
	m_stat(r, IPC_STAT);
	m_rmid(r);
}

/* a typed sleeper while a stream of other types goes past it */
static void sleeper_in_stream(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	for (int i = 0; i < 10; i++)
		m_snd(q, 1, 30, i, 0);
	pid_t a = m_block_rcv(q, 100, 2, 0);
	for (int i = 0; i < 40; i++) {
		m_snd(q, 1, 30, 10 + i, 0);
		m_rcv(q, 100, 1, 0);
	}
	dt_chan_none();
	m_snd(q, 2, 30, 77, 0);
	dt_wakes(1);
	dt_wait(a);
	m_stat(q, IPC_STAT);
	drain(q, 11, 100);
	m_rmid(q);
}

/* a child streams small messages into Q (the ring, under uipc) */
static void stream_child(void *arg)
{
	int q = *(int *)arg;
	for (int i = 0; i < 30; i++)
		m_snd(q, 1 + i % 3, 100, 200 + i, 0);
}

/* a child takes N from Q */
static void drain_child(void *arg)
{
	int *a = arg;
	drain(a[0], a[1], 200);
}

/*
 * Messages that go to the locked list and back into the ring (uipc: a
 * sender that sleeps on a full queue stops the ring and moves what it
 * holds to the list; once it has sent and nobody sleeps, the unlock moves
 * a list of small messages back): order, counts and the last sender and
 * receiver, other processes, come through both moves.
 */
static void list_and_back(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	for (int i = 0; i < 20; i++)               /* the ring comes */
		m_snd(q, 1, 50, i, 0);
	drain(q, 20, 100);
	m_set(q, -1, -1, 0600, 3000);
	dt_wait(dt_fork(stream_child, &q));        /* 30 x 100 B: full */
	m_stat(q, IPC_STAT);                       /* lspid: the child's */
	pid_t s = m_block_snd(q, 5, 100, 400, 0);  /* a sender sleeps */
	m_stat(q, IPC_STAT);
	m_rcv(q, 200, 0, 0);                       /* makes room: it sends */
	dt_wakes(1);
	dt_wait(s);
	m_stat(q, IPC_STAT);                       /* lspid: the sleeper's */
	drain(q, 5, 200);
	int a[2] = { q, 5 };
	dt_wait(dt_fork(drain_child, a));
	m_stat(q, IPC_STAT);                       /* lrpid: the other child's */
	m_snd(q, 4, 500, 77, 0);                   /* a large one: locked */
	m_rcv(q, 200, 3, 0);                       /* a search: locked */
	m_stat(q, IPC_STAT);
	m_rcv(q, 1000, -4, 0);                     /* types <= 4: locked */
	for (int i = 0; i < 8; i++)
		m_snd(q, 2, 40, 300 + i, 0);
	m_stat(q, IPC_STAT);
	drain(q, 40, 1000);                        /* then ENOMSG */
	m_stat(q, IPC_STAT);
	m_rmid(q);
}

static void efault(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	void *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	m_snd(q, 1, 40, 1, 0);
	m_snd(q, 1, 40, 2, 0);
	errno = 0;
	long r = msgrcv(q, ro, 100, 0, IPC_NOWAIT);
	dt_out("msgrcv(read-only buffer) = %s", dt_res(r, errno));
	m_stat(q, IPC_STAT);                       /* the message is gone */
	errno = 0;
	r = msgsnd(q, ro, 8000, IPC_NOWAIT);       /* mtype 0 from the zero page */
	dt_out("msgsnd(mtype 0) = %s", dt_res(r, errno));
	m_rcv(q, 100, 0, IPC_NOWAIT);
	munmap(ro, 4096);
	m_rmid(q);
}

/*
 * A handler that runs early in a blocking msgrcv, before the kernel's
 * caller could have done anything but sleep, interrupts it (EINTR).  Each
 * try is a new thread (uipc's spin-before-sleep budget is per thread and
 * starts full) whose own timer fires 10-40 us after it starts the call, then
 * every 100 ms.  A try whose first expiry came before the thread reached
 * the call (a loaded machine) does not count; a counted call that still
 * waits 90 ms after the first handler ran slept through it, which it missed
 * unless that handler ran before the call began (in the program, the
 * dynamic linker or the call's entry point: see sem_signal's
 * eintr-early).
 */
static __thread volatile sig_atomic_t in_call, early;
static __thread const void *hand_ip;     /* what the first handler interrupted */
static __thread int handled;
static __thread long long hand_ms;       /* when it ran */

static void on_alarm(int s, siginfo_t *si, void *ctx)
{
	(void)s; (void)si;
	if (!in_call)
		early = 1;
	if (!handled) {
		handled = 1;
		hand_ms = dt_now_ms();
		hand_ip = dt_interrupted_ip(ctx);
	}
}

struct early_try {
	int q;
	int delay_us;
	int valid;
	int got_eintr;
	int late;
	const void *hand_ip;
};

static void *early_thread(void *p)
{
	struct early_try *t = p;
	struct sigevent sev;
	struct itimerspec it = { { 0, 100000000 }, { 0, t->delay_us * 1000L } };
	struct mbuf *b = malloc(sizeof *b);
	timer_t tm;
	long r;
	int e;

	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGALRM;
	sev._sigev_un._tid = gettid();
	if (!b || timer_create(CLOCK_MONOTONIC, &sev, &tm)) {
		dt_fail("timer_create: %s", strerror(errno));
		return NULL;
	}
	/* no errno call between the mark and the call */
	errno = 0;
	timer_settime(tm, 0, &it, NULL);
	in_call = 1;
	/* fired before we got here: this try does not count, skip the call */
	r = early ? -1 : msgrcv(t->q, b, 100, 0, 0);
	e = errno;
	in_call = 0;
	timer_delete(tm);
	t->valid = !early;
	t->got_eintr = r == -1 && e == EINTR;
	/* still in the call 90 ms after the handler ran (a loaded machine
	 * may make the thread wait that long for a CPU before it runs) */
	t->late = handled && dt_now_ms() - hand_ms >= 90;
	t->hand_ip = hand_ip;
	free(b);
	return NULL;
}

static void eintr_early(int argc, char **argv)
{
	(void)argc; (void)argv;
	struct sigaction sa;
	static const char *const wrappers[] = { "msgrcv", "uipc_msgrcv", NULL };
	int q = m_get(IPC_PRIVATE, 0600), missed = 0, got = 0, valid = 0, tries = 0;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_alarm;
	sa.sa_flags = SA_RESTART | SA_SIGINFO;
	sigaction(SIGALRM, &sa, NULL);
	{
		/* bind msgrcv now (lazily bound at its first call) */
		struct mbuf w;

		if (msgrcv(q, &w, 100, 0, IPC_NOWAIT) != -1 || errno != ENOMSG)
			dt_fail("warm-up msgrcv: %s", strerror(errno));
	}
	/* once with the fast path's ring in place, once without */
	for (int i = 0; i < 600 && valid < 60; i++) {
		struct early_try t = { .q = q, .delay_us = 10 + i % 16 * 2 };
		pthread_t th;

		if (i == 40) {
			m_snd(q, 1, 10, 1, 0);
			m_rcv(q, 100, 0, 0);
		}
		pthread_create(&th, NULL, early_thread, &t);
		pthread_join(th, NULL);
		tries++;
		if (t.valid) {
			int before = dt_ip_before_call(t.hand_ip, wrappers);

			valid++;
			got += t.got_eintr;
			missed += t.late && !before;
			if (t.late)
				fprintf(stderr, "late try %d: handler in %s (%s)\n", i,
					dt_ip_where(t.hand_ip), before ? "before the call" : "MISSED");
		}
	}
	dt_out("EINTR %s, counted tries %s, handlers slept through %s",
	       got == valid ? "every time" : "NOT ALWAYS", valid == 60 ? "60" : "TOO FEW",
	       missed ? "SOME" : "none");
	m_rmid(q);
}

const struct dt_case dt_cases[] = {
	{ "stream_stat", stream_stat, 0 },
	{ "mixed_sizes", mixed_sizes, 0 },
	{ "typed", typed, 0 },
	{ "e2big", e2big, 0 },
	{ "full_bytes", full_bytes, 0 },
	{ "full_count", full_count, 0 },
	{ "set_while_full", set_while_full, 0 },
	{ "rmid_full", rmid_full, 0 },
	{ "sleeper_in_stream", sleeper_in_stream, 0 },
	{ "list_and_back", list_and_back, 0 },
	{ "efault", efault, 0 },
	{ "eintr_early", eintr_early, 0 },
	{ NULL, NULL, 0 },
};
