/*
 * aio_events.c - io_getevents and io_pgetevents: argument errors (bad
 * ctx, min_nr < 0, nr < min_nr, bad events or timeout), libaio's zero
 * timeout answer, min_nr/nr/timeout (what comes back when), the ring read
 * directly as libaio and fio do (head stored by the program is honoured),
 * the ring's wrap-around, EINTR when a handler runs in a sleeping
 * io_getevents (with and without SA_RESTART), io_pgetevents's mask in
 * force only while it waits, and a sleeper woken by a completion from
 * another thread.
 */
#include "aiodt.h"

#include <pthread.h>
#include <signal.h>

struct aio_ring_full {
	struct aio_ring_hdr h;
	struct io_event ev[];
};

static char buf[4096];

/* N writes of 10 bytes, data 1..N */
static void submit_n(io_context_t ctx, int fd, int n)
{
	struct iocb cb[64], *v[64];

	for (int i = 0; i < n; i++) {
		io_prep_pwrite(&cb[i], fd, buf, 10, i * 10);
		cb[i].data = (void *)(uintptr_t)(i + 1);
		v[i] = &cb[i];
	}
	if (io_submit(ctx, n, v) != n)
		dt_fail("io_submit of %d", n);
	dt_out("submitted %d", n);
}

static int setup_file(void)
{
	aio_mkdir(0);
	return aio_open("ev", O_RDWR | O_TRUNC);
}

static void cleanup(int fd, io_context_t ctx)
{
	close(fd);
	aio_rmdir("ev");
	aio_rmdir(NULL);
	aio_destroy_p(ctx);
}

static void ge(io_context_t ctx, long min, long nr, struct io_event *ev, struct timespec *ts,
	       const char *what)
{
	int r = io_getevents(ctx, min, nr, ev, ts);

	dt_out("io_getevents(%s, %ld, %ld) = %s", what, min, nr, aio_res(r));
}

static void errors(int argc, char **argv)
{
	io_context_t ctx = aio_setup_p(8);
	struct io_event ev[8];
	struct timespec zero = { 0, 0 }, ms = { 0, 1000000 };
	int fd = setup_file();

	(void)argc; (void)argv;
	ge((io_context_t)buf, 0, 1, ev, &ms, "bad ctx");
	ge(NULL, 0, 1, ev, &ms, "NULL ctx");
	ge(ctx, -1, 1, ev, &ms, "ctx");
	ge(ctx, 2, 1, ev, &ms, "ctx");
	ge(ctx, 2, 1, ev, &zero, "ctx, zero timeout, empty ring");
	/* (a bad timeout: libaio's own io_getevents reads it first, and dies) */
	ge(ctx, 0, 0, ev, NULL, "ctx");
	submit_n(ctx, fd, 2);
	ge(ctx, 2, 1, ev, &zero, "ctx, zero timeout, 2 in the ring");
	ge(ctx, 1, 2, dt_badpage, &ms, "ctx, bad events");
	ge(ctx, 1, 2, dt_ropage, &ms, "ctx, read-only events");
	ge(ctx, 0, 0, ev, &ms, "ctx");
	aio_reap(ctx, 2, 8);
	cleanup(fd, ctx);
}

/* what comes back for each min_nr, nr and timeout */
static void counts(int argc, char **argv)
{
	io_context_t ctx = aio_setup_p(8);
	struct io_event ev[8];
	struct timespec zero = { 0, 0 }, t50 = { 0, 50000000 };
	int fd = setup_file();
	long long t0;

	(void)argc; (void)argv;
	submit_n(ctx, fd, 5);
	aio_reap(ctx, 1, 2);
	aio_reap(ctx, 0, 1);
	t0 = dt_now_ms();
	ge(ctx, 3, 8, ev, &t50, "2 left, min 3, 50 ms");
	dt_out("  waited the timeout: %d", dt_now_ms() - t0 >= 45);
	ge(ctx, 0, 8, ev, &zero, "empty, zero timeout");
	t0 = dt_now_ms();
	ge(ctx, 1, 8, ev, &t50, "empty, 50 ms");
	dt_out("  waited the timeout: %d", dt_now_ms() - t0 >= 45);
	ge(ctx, 0, 8, ev, &t50, "empty, min 0, 50 ms");
	cleanup(fd, ctx);
}

/* the ring as libaio and fio read it: events at head, head stored by the
 * program; io_getevents starts where the program left head */
static void ring(int argc, char **argv)
{
	io_context_t ctx = aio_setup_p(8);
	struct aio_ring_full *r = (void *)ctx;
	int fd = setup_file();
	unsigned head, tail;

	(void)argc; (void)argv;
	submit_n(ctx, fd, 4);
	for (int k = 0; k < 200 && __atomic_load_n(&r->h.tail, __ATOMIC_ACQUIRE) != 4; k++)
		dt_msleep(5);
	head = r->h.head;
	tail = __atomic_load_n(&r->h.tail, __ATOMIC_ACQUIRE);
	dt_out("head=%u tail=%u", head, tail);
	for (int i = 0; i < 2; i++, head = (head + 1) % r->h.nr)
		dt_out("  ring event data=%lu res=%ld", (unsigned long)(uintptr_t)r->ev[head].data,
		       (long)r->ev[head].res);
	__atomic_store_n(&r->h.head, head, __ATOMIC_RELEASE);
	aio_reap(ctx, 1, 8);
	dt_out("head=%u tail=%u", r->h.head, r->h.tail);
	/* around the end of the ring: 127 events, 120 at a time at most */
	for (int round = 0; round < 5; round++) {
		struct io_event ev[64];
		struct timespec ts = { 5, 0 };
		int got = 0;

		submit_n(ctx, fd, 60);
		while (got < 60) {
			int n = io_getevents(ctx, 1, 64, ev, &ts);

			if (n <= 0)
				break;
			for (int i = 0; i < n; i++)
				if (ev[i].res != 10)
					dt_fail("event res %ld", (long)ev[i].res);
			got += n;
		}
		dt_out("round %d: %d events, head=%u tail=%u", round, got, r->h.head, r->h.tail);
	}
	cleanup(fd, ctx);
}

static volatile sig_atomic_t handled;

static void handler(int sig)
{
	(void)sig;
	handled++;
}

static int sleeper_flags;

/* in a child: sleep in io_getevents until a signal */
static void sleeper(void *arg)
{
	struct sigaction sa;
	struct io_event ev;
	struct timespec ts = { 10, 0 };
	io_context_t ctx = 0;
	int r;

	(void)arg;
	if (io_setup(4, &ctx))
		dt_fail("io_setup in the child");
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sa.sa_flags = sleeper_flags;
	sigaction(SIGUSR1, &sa, NULL);
	r = io_getevents(ctx, 1, 1, &ev, &ts);
	dt_chan_send(r, 0, handled);
	io_destroy(ctx);
}

/* a process is asleep when /proc says S */
static void wait_sleeping(pid_t pid)
{
	if (dt_wait_state(pid, 'S', 5000))
		dt_fail("%d never slept", (int)pid);
}

static void eintr(int argc, char **argv)
{
	(void)argc; (void)argv;
	for (int k = 0; k < 2; k++) {
		pid_t p;

		sleeper_flags = k ? SA_RESTART : 0;
		p = dt_fork(sleeper, NULL);
		dt_out("child asleep in io_getevents (%s)", k ? "SA_RESTART" : "no SA_RESTART");
		wait_sleeping(p);
		dt_msleep(20);
		kill(p, SIGUSR1);
		dt_wakes(1);
		dt_wait(p);
	}
}

/* io_pgetevents: SIGUSR1 blocked by the mask does not interrupt; the
 * signal, pending, runs its handler once the call is over */
static void pmask(int argc, char **argv)
{
	io_context_t ctx = aio_setup_p(4);
	struct sigaction sa;
	struct io_event ev;
	struct timespec t50 = { 0, 50000000 };
	sigset_t mask, old;

	(void)argc; (void)argv;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sigaction(SIGUSR1, &sa, NULL);
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	raise(SIGUSR1);
	dt_out("handled before: %d", (int)handled);
	sigprocmask(SIG_BLOCK, &mask, &old);
	raise(SIGUSR1);
	dt_out("pending, blocked; handled %d", (int)handled);
	dt_out("io_pgetevents(mask blocks it) = %s, handled %d",
	       aio_res(io_pgetevents(ctx, 1, 1, &ev, &t50, &mask)), (int)handled);
	sigemptyset(&mask);
	dt_out("io_pgetevents(empty mask) = %s, handled %d",
	       aio_res(io_pgetevents(ctx, 1, 1, &ev, &t50, &mask)), (int)handled);
	sigprocmask(SIG_SETMASK, &old, NULL);
	dt_out("io_pgetevents(NULL mask) = %s, handled %d",
	       aio_res(io_pgetevents(ctx, 1, 1, &ev, &t50, NULL)), (int)handled);
	aio_destroy_p(ctx);
}

struct waker {
	io_context_t ctx;
	int fd;
};

static void *waker(void *arg)
{
	struct waker *w = arg;
	struct iocb cb, *p = &cb;

	dt_msleep(50);
	io_prep_pwrite(&cb, w->fd, buf, 10, 0);
	cb.data = (void *)42;
	if (io_submit(w->ctx, 1, &p) != 1)
		dt_fail("io_submit in the thread");
	return NULL;
}

/* a sleeper woken by a completion submitted from another thread */
static void wake(int argc, char **argv)
{
	struct waker w = { aio_setup_p(4), setup_file() };
	pthread_t t;

	(void)argc; (void)argv;
	pthread_create(&t, NULL, waker, &w);
	aio_reap(w.ctx, 1, 4);
	pthread_join(t, NULL);
	cleanup(w.fd, w.ctx);
}

const struct dt_case dt_cases[] = {
	{ "errors", errors, 0 },
	{ "counts", counts, 0 },
	{ "ring", ring, 0 },
	{ "eintr", eintr, 0 },
	{ "pmask", pmask, 0 },
	{ "wake", wake, 0 },
	{ NULL, NULL, 0 },
};
