/*
 * msg_wake.c - sleeping in msgsnd/msgrcv and being woken, with forked
 * children that block (no IPC_NOWAIT) and report their result through the
 * result channel: FIFO receivers, the hand-off of a new message to the
 * first waiting receiver whose type matches (msgtyp > 0, < 0, MSG_EXCEPT),
 * an E2BIG receiver skipped while the message goes on to the next, senders
 * woken when space appears (bytes and message count), IPC_RMID failing
 * every sleeper with EIDRM, IPC_SET raising or lowering qbytes, EINTR from a
 * signal handler, and killed sleepers that must not take a message; a
 * handler that sends what its sleeper waits for, or leaves the sleeping
 * call by longjmp.
 *
 * A child is known blocked when it sleeps in the kernel's msg code (kernel
 * run) or on a futex (uipc run); the parent prints everything.
 */
#include "msgdt.h"

#include <setjmp.h>
#include <signal.h>

static void rcv_fifo(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	pid_t c[3];
	for (int i = 0; i < 3; i++)
		c[i] = m_block_rcv(q, 100, 0, 0);
	for (int i = 0; i < 3; i++) {
		m_snd(q, 1 + i, 10 + i, 20 + i, 0);
		dt_wakes(1);
		m_stat(q, IPC_STAT);
	}
	for (int i = 0; i < 3; i++)
		dt_wait(c[i]);
	m_rmid(q);
}

static void handoff_types(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	pid_t c[5];
	c[0] = m_block_rcv(q, 100, 5, 0);
	c[1] = m_block_rcv(q, 100, -3, 0);
	c[2] = m_block_rcv(q, 100, 2, MSG_EXCEPT);
	c[3] = m_block_rcv(q, 100, 7, 0);
	c[4] = m_block_rcv(q, 100, 0, 0);
	m_snd(q, 8, 5, 1, 0);                   /* EXCEPT 2 (child3) */
	dt_wakes(1);
	m_snd(q, 2, 5, 2, 0);                   /* <= 3 (child2) */
	dt_wakes(1);
	m_snd(q, 2, 5, 3, 0);                   /* type 0 (child5) */
	dt_wakes(1);
	m_snd(q, 6, 5, 4, 0);                   /* nobody: queued */
	m_stat(q, IPC_STAT);
	dt_chan_none();
	m_snd(q, 7, 5, 5, 0);                   /* child4 */
	dt_wakes(1);
	m_snd(q, 5, 5, 6, 0);                   /* child1 */
	dt_wakes(1);
	for (int i = 0; i < 5; i++)
		dt_wait(c[i]);
	m_rcv(q, 100, 0, IPC_NOWAIT);
	m_stat(q, IPC_STAT);
	m_rmid(q);
}

static void e2big_skip(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	pid_t a = m_block_rcv(q, 10, 0, 0);
	pid_t b = m_block_rcv(q, 20, 0, MSG_NOERROR);
	pid_t c = m_block_rcv(q, 100, 0, 0);
	m_snd(q, 3, 50, 7, 0);                  /* a: E2BIG, b: truncated */
	dt_wakes_sorted(2);
	m_stat(q, IPC_STAT);
	m_snd(q, 4, 5, 8, 0);                   /* c */
	dt_wakes(1);
	pid_t d = m_block_rcv(q, 10, 0, 0);
	m_snd(q, 5, 11, 9, 0);                  /* d: E2BIG, the message is queued */
	dt_wakes(1);
	m_stat(q, IPC_STAT);
	dt_wait(a);
	dt_wait(b);
	dt_wait(c);
	dt_wait(d);
	m_rcv(q, 100, 0, IPC_NOWAIT);
	m_rmid(q);
}

static void fill(int q, int n, size_t sz)
{
	for (int i = 0; i < n; i++)
		m_snd(q, 1, sz, i, IPC_NOWAIT);
}

static void snd_wake(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	m_set(q, -1, -1, -1, 100);
	fill(q, 10, 10);
	m_snd(q, 1, 1, 1, IPC_NOWAIT);
	pid_t a = m_block_snd(q, 2, 30, 50, 0);
	pid_t b = m_block_snd(q, 3, 10, 60, 0);
	m_rcv(q, 100, 1, 0);                    /* 10 free: b fits, a does not */
	dt_wakes(1);
	m_stat(q, IPC_STAT);
	dt_chan_none();
	m_rcv(q, 100, 1, 0);
	m_rcv(q, 100, 1, 0);
	dt_chan_none();                         /* 20 free: a still waits */
	m_rcv(q, 100, 1, 0);                    /* 30 */
	dt_wakes(1);
	m_stat(q, IPC_STAT);
	dt_wait(a);
	dt_wait(b);
	/* message count: qbytes 3 holds 3 empty messages */
	m_set(q, -1, -1, -1, 16384);
	while (msgrcv(q, &mrcv_buf, 100, 0, IPC_NOWAIT) >= 0)
		;
	m_set(q, -1, -1, -1, 3);
	fill(q, 3, 0);
	pid_t c = m_block_snd(q, 4, 0, 70, 0);
	m_rcv(q, 100, 0, 0);
	dt_wakes(1);
	m_stat(q, IPC_STAT);
	dt_wait(c);
	m_rmid(q);
}

static void rmid(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	pid_t c[4];
	c[0] = m_block_rcv(q, 100, 3, 0);
	c[1] = m_block_rcv(q, 100, 5, 0);
	m_set(q, -1, -1, -1, 10);
	m_snd(q, 9, 10, 1, 0);
	c[2] = m_block_snd(q, 1, 1, 1, 0);
	c[3] = m_block_snd(q, 1, 5, 1, 0);
	m_rmid(q);
	dt_wakes_sorted(4);
	for (int i = 0; i < 4; i++)
		dt_wait(c[i]);
	m_snd(q, 1, 1, 1, 0);
	m_rcv(q, 10, 0, 0);
}

static void set_qbytes(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	m_set(q, -1, -1, -1, 50);
	m_snd(q, 1, 40, 1, 0);
	pid_t a = m_block_snd(q, 2, 20, 2, 0);
	m_set(q, -1, -1, -1, 55);               /* still no room */
	dt_chan_none();
	m_set(q, -1, -1, -1, 45);               /* lowered */
	dt_chan_none();
	m_set(q, -1, -1, -1, 60);               /* room */
	dt_wakes(1);
	m_stat(q, IPC_STAT);
	dt_wait(a);
	m_rcv(q, 100, 0, 0);
	m_rcv(q, 100, 0, 0);
	/* a receiver expunged by IPC_SET looks again and sleeps on */
	pid_t b = m_block_rcv(q, 100, 3, 0);
	m_set(q, -1, -1, 0644, -1);
	m_wait_blocked(b);
	dt_chan_none();
	m_snd(q, 3, 5, 3, 0);
	dt_wakes(1);
	dt_wait(b);
	m_stat(q, IPC_STAT);
	m_rmid(q);
}

static void on_usr1(int s)
{
	(void)s;
}

static void eintr(int argc, char **argv)
{
	(void)argc; (void)argv;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	int q = m_get(IPC_PRIVATE, 0600);
	pid_t a = m_block_rcv(q, 100, 0, 0);
	kill(a, SIGUSR1);
	dt_wakes(1);
	dt_wait(a);
	m_set(q, -1, -1, -1, 5);
	m_snd(q, 1, 5, 1, 0);
	pid_t b = m_block_snd(q, 1, 1, 2, 0);
	kill(b, SIGUSR1);
	dt_wakes(1);
	dt_wait(b);
	m_stat(q, IPC_STAT);
	/* a signal that is ignored does not interrupt */
	sa.sa_handler = SIG_IGN;
	sigaction(SIGUSR2, &sa, NULL);
	pid_t c = m_block_rcv(q, 100, 7, 0);
	kill(c, SIGUSR2);
	m_wait_blocked(c);
	dt_chan_none();
	m_snd(q, 7, 0, 3, IPC_NOWAIT);           /* no room: EAGAIN */
	m_rcv(q, 100, 1, 0);
	m_snd(q, 7, 0, 3, IPC_NOWAIT);
	dt_wakes(1);
	dt_wait(c);
	m_rmid(q);
}

/*
 * handler-sends: the handler of a signal that interrupts a sleeping
 * msgrcv sends the message it waits for.  The kernel's msgrcv has returned
 * EINTR when the handler runs, so the message stays queued.
 * handler-longjmp: handlers leave a sleeping msgrcv, then a sleeping
 * msgsnd, by siglongjmp.  The message sent afterwards stays queued (no
 * receiver is left to take it), and the room made afterwards wakes the
 * sender that sleeps then.  The children stay alive meanwhile, asleep on
 * a second queue.
 */
static int hj_q, hj_hold;
static sigjmp_buf hj_jmp;

static void hj_send(int sig)
{
	int saved = errno;

	(void)sig;
	msnd_buf.mtype = 3;
	msnd_buf.mtext[0] = 9;
	if (msgsnd(hj_q, &msnd_buf, 1, IPC_NOWAIT) < 0)
		msnd_buf.mtype = -1;
	errno = saved;
}

static void hj_leave(int sig)
{
	(void)sig;
	siglongjmp(hj_jmp, 1);
}

static void hj_sender_child(void *p)
{
	struct sigaction sa;
	int e;
	long r;

	(void)p;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = hj_send;
	sigaction(SIGUSR1, &sa, NULL);
	r = m_rcv_quiet(hj_q, 100, 0, 0, &e);
	dt_chan_send((int)r, r < 0 ? e : 0, msnd_buf.mtype < 0 ? -1 : 0);
}

static void hj_leaver_child(void *p)
{
	struct sigaction sa;
	volatile long r = -2;
	int e;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = hj_leave;
	sigaction(SIGUSR1, &sa, NULL);
	if (sigsetjmp(hj_jmp, 1) == 0) {
		if (p) {
			msnd_buf.mtype = 1;
			r = msgsnd(hj_q, &msnd_buf, 5, 0);
		} else {
			r = m_rcv_quiet(hj_q, 100, 0, 0, &e);
		}
	}
	dt_chan_send((int)r, 0, 0);                  /* -2: left by the jump */
	m_rcv_quiet(hj_hold, 100, 0, 0, &e);          /* alive until released */
}

/* hj_leaver_child asleep in msgsnd (ARG not NULL) or msgrcv, SIGUSR1
 * makes it jump out; its report printed, it asleep again on the second
 * queue */
static pid_t hj_leaver(void *arg)
{
	pid_t c = dt_fork(hj_leaver_child, arg);

	m_wait_blocked(c);
	dt_out("%s: %s(%d%s) blocks, its SIGUSR1 handler longjmps out", dt_pid(c),
	       arg ? "msgsnd" : "msgrcv", hj_q, arg ? ",sz=5" : "");
	kill(c, SIGUSR1);
	dt_wakes(1);
	m_wait_blocked(c);
	return c;
}

static void handler_sends(int argc, char **argv)
{
	(void)argc; (void)argv;
	hj_q = m_get(IPC_PRIVATE, 0600);
	pid_t a = dt_fork(hj_sender_child, NULL);
	m_wait_blocked(a);
	dt_out("%s: msgrcv(%d) blocks, its SIGUSR1 handler sends type 3", dt_pid(a), hj_q);
	kill(a, SIGUSR1);
	dt_wakes(1);
	dt_wait(a);
	m_stat(hj_q, IPC_STAT);
	m_rcv(hj_q, 100, 0, IPC_NOWAIT);
	m_rmid(hj_q);
}

static void handler_longjmp(int argc, char **argv)
{
	(void)argc; (void)argv;
	hj_q = m_get(IPC_PRIVATE, 0600);
	hj_hold = m_get(IPC_PRIVATE, 0600);
	pid_t a = hj_leaver(NULL);
	m_snd(hj_q, 1, 5, 1, 0);
	dt_msleep(20);
	m_stat(hj_q, IPC_STAT);
	/* a full queue, a sender that leaves by the jump, one that stays */
	m_set(hj_q, -1, -1, -1, 5);
	pid_t b = hj_leaver((void *)1);
	pid_t c = m_block_snd(hj_q, 2, 5, 2, 0);
	m_rcv(hj_q, 100, 0, 0);                   /* room: c's message goes in */
	dt_wakes(1);
	dt_wait(c);
	m_stat(hj_q, IPC_STAT);
	m_snd(hj_hold, 1, 1, 1, 0);
	m_snd(hj_hold, 1, 1, 1, 0);
	dt_wait(a);
	dt_wait(b);
	m_rcv(hj_q, 100, 0, IPC_NOWAIT);
	m_rmid(hj_q);
	m_rmid(hj_hold);
}

static void killed(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	pid_t a = m_block_rcv(q, 100, 0, 0);
	kill(a, SIGKILL);
	dt_wait(a);
	pid_t b = m_block_rcv(q, 100, 2, 0);
	m_snd(q, 1, 5, 1, 0);                    /* nobody alive wants it */
	m_stat(q, IPC_STAT);
	m_snd(q, 2, 5, 2, 0);                    /* b */
	dt_wakes(1);
	dt_wait(b);
	m_set(q, -1, -1, -1, 10);
	m_snd(q, 1, 5, 3, 0);
	pid_t c = m_block_snd(q, 1, 10, 4, 0);
	pid_t d = m_block_snd(q, 1, 5, 5, 0);
	kill(c, SIGKILL);
	dt_wait(c);
	m_rcv(q, 100, 0, 0);                     /* type 1 seed 1 */
	m_rcv(q, 100, 0, 0);                     /* seed 3: d fits now */
	dt_wakes(1);
	dt_wait(d);
	m_stat(q, IPC_STAT);
	m_rcv(q, 100, 0, IPC_NOWAIT);
	m_rcv(q, 100, 0, IPC_NOWAIT);
	m_rmid(q);
}

static void wait_state(pid_t pid, char want)
{
	if (dt_wait_state(pid, want, dt_deadline_ms(5000)))
		dt_fail("%s not in state %c in time", dt_pid(pid), want);
}

/* a stopped receiver leaves the queue (its msgrcv restarts after the
 * continue): a message sent meanwhile is queued, or goes to the next */
static void stopped(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	pid_t a = m_block_rcv(q, 100, 0, 0);
	kill(a, SIGSTOP);
	wait_state(a, 'T');
	dt_msleep(20);
	m_snd(q, 1, 5, 1, 0);
	m_stat(q, IPC_STAT);
	dt_chan_none();
	kill(a, SIGCONT);
	dt_wakes(1);
	dt_wait(a);
	m_stat(q, IPC_STAT);
	pid_t b = m_block_rcv(q, 100, 0, 0);
	pid_t c = m_block_rcv(q, 100, 0, 0);
	kill(b, SIGSTOP);
	wait_state(b, 'T');
	dt_msleep(20);
	m_snd(q, 2, 5, 2, 0);                    /* to c */
	dt_wakes(1);
	dt_wait(c);
	kill(b, SIGCONT);
	m_wait_blocked(b);
	m_snd(q, 3, 5, 3, 0);
	dt_wakes(1);
	dt_wait(b);
	m_rmid(q);
}

static void nowait_mix(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	pid_t a = m_block_rcv(q, 100, 4, 0);
	m_rcv(q, 100, 0, IPC_NOWAIT);
	m_snd(q, 3, 1, 1, IPC_NOWAIT);
	m_rcv(q, 100, 4, IPC_NOWAIT);
	m_rcv(q, 100, 0, MSG_COPY | IPC_NOWAIT);
	m_snd(q, 4, 1, 2, IPC_NOWAIT);
	dt_wakes(1);
	dt_wait(a);
	m_stat(q, IPC_STAT);
	m_rcv(q, 100, 0, IPC_NOWAIT);
	m_rmid(q);
}

const struct dt_case dt_cases[] = {
	{ "rcv_fifo", rcv_fifo, 0 },
	{ "handoff_types", handoff_types, 0 },
	{ "e2big_skip", e2big_skip, 0 },
	{ "snd_wake", snd_wake, 0 },
	{ "rmid", rmid, 0 },
	{ "set_qbytes", set_qbytes, 0 },
	{ "eintr", eintr, 0 },
	{ "killed", killed, 0 },
	{ "nowait_mix", nowait_mix, 0 },
	{ "stopped", stopped, 0 },
	{ "handler-sends", handler_sends, 0 },
	{ "handler-longjmp", handler_longjmp, 0 },
	{ NULL, NULL, 0 },
};
