/*
 * aio_depth.c - O_DIRECT on the disk at depth, the way fio runs it: a
 * thread submitting and reaping with io_getevents, 32 requests in flight,
 * many rounds (under uipc such a thread enters its own requests into the
 * process's io_uring and sleeps there, aio/uring.c); every block read
 * back as written.  Then what that must not change: the ring read by the
 * program itself with no system call (fio's userspace_reap) still fills;
 * the thread's other waits (epoll_wait, epoll_pwait, sigtimedwait) are not
 * ended by its completions (no EINTR where the kernel's AIO gives none),
 * but still by a handler, nor are waits the kernel never restarts and
 * libuipc cannot reach (a socket's SO_RCVTIMEO and SO_SNDTIMEO, epoll_pwait
 * and rt_sigtimedwait by instruction); a submitter that exits leaves its
 * requests to complete; IOCB_FLAG_RESFD counts each completion; io_destroy waits;
 * a handler's own read and io_getevents on a second context, interrupting
 * the sleep at depth, completes.
 */
#include "aiodt.h"
#include "rawinsn.h"

#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>

#define BLK     4096
#define NBLK    2048          /* an 8 MiB file */
#define DEPTH   32

static int fd;
static char *bufs;           /* DEPTH aligned blocks */
static io_context_t ctx;

/* block I holds its number in every 8 bytes */
static void fill_block(char *b, uint64_t i)
{
	for (int k = 0; k < BLK; k += 8)
		memcpy(b + k, &i, 8);
}

static bool block_ok(const char *b, uint64_t i)
{
	for (int k = 0; k < BLK; k += 8)
		if (memcmp(b + k, &i, 8))
			return false;
	return true;
}

/* the file, written through the page cache and synced, then opened O_DIRECT */
static void setup(void)
{
	char b[BLK];
	int w;

	aio_mkdir(1);
	w = aio_open("depth", O_RDWR | O_TRUNC);
	for (uint64_t i = 0; i < NBLK; i++) {
		fill_block(b, i);
		if (pwrite(w, b, BLK, (off_t)(i * BLK)) != BLK)
			dt_fail("pwrite");
	}
	if (fsync(w))
		dt_fail("fsync");
	close(w);
	fd = aio_open("depth", O_RDONLY | O_DIRECT);
	if (fd < 0)
		dt_fail("open O_DIRECT: %s", dt_errname(errno));
	if (posix_memalign((void **)&bufs, BLK, (size_t)DEPTH * BLK))
		dt_fail("posix_memalign");
	ctx = 0;
	if (io_setup(64, &ctx))
		dt_fail("io_setup");
}

static void cleanup(void)
{
	if (io_destroy(ctx))
		dt_fail("io_destroy");
	close(fd);
	free(bufs);
	aio_rmdir("depth");
	aio_rmdir(NULL);
}

static uint64_t rnd = 88172645463325252ull;

static uint64_t next_block(void)
{
	rnd ^= rnd << 13;
	rnd ^= rnd >> 7;
	rnd ^= rnd << 17;
	return rnd % NBLK;
}

static struct iocb cbs[DEPTH];

/* slot S reads a random block */
static void prep_slot(int s)
{
	uint64_t blk = next_block();

	io_prep_pread(&cbs[s], fd, bufs + (size_t)s * BLK, BLK, (long long)(blk * BLK));
	cbs[s].data = (void *)(uintptr_t)blk;
}

/* check an event of a slot read; false (and said) when wrong */
static bool event_ok(const struct io_event *e)
{
	struct iocb *cb = e->obj;
	int s = (int)(cb - cbs);

	if (s < 0 || s >= DEPTH || e->res != BLK ||
	    !block_ok(bufs + (size_t)s * BLK, (uint64_t)(uintptr_t)e->data)) {
		dt_out("  bad event: slot %d res %s", s, aio_res(e->res));
		return false;
	}
	return true;
}

/* DEPTH in flight; each completion's slot read again, until N reads in
 * all; reaping with io_getevents(min 1).  How many were good. */
static long run_depth(long n)
{
	struct io_event ev[DEPTH];
	struct iocb *v[DEPTH];
	struct timespec ts = { 10, 0 };
	long sent = 0, done = 0, good = 0;

	for (int s = 0; s < DEPTH; s++) {
		prep_slot(s);
		v[s] = &cbs[s];
	}
	if (io_submit(ctx, DEPTH, v) != DEPTH)
		dt_fail("io_submit of %d", DEPTH);
	sent = DEPTH;
	while (done < sent) {
		int r = io_getevents(ctx, 1, DEPTH, ev, &ts), k = 0;

		if (r <= 0)
			dt_fail("io_getevents = %s after %ld", aio_res(r), done);
		for (int i = 0; i < r; i++) {
			struct iocb *cb = ev[i].obj;

			done++;
			good += event_ok(&ev[i]);
			if (sent < n) {
				int s = (int)(cb - cbs);

				prep_slot(s);
				v[k++] = &cbs[s];
				sent++;
			}
		}
		if (k && io_submit(ctx, k, v) != k)
			dt_fail("io_submit of %d", k);
	}
	return good;
}

static void depth(int argc, char **argv)
{
	(void)argc; (void)argv;
	setup();
	dt_out("4096 random O_DIRECT reads at depth %d: %ld good", DEPTH, run_depth(4096));
	dt_out("again, 1024: %ld good", run_depth(1024));
	cleanup();
}

/* submit DEPTH reads of blocks 0.. (in order) */
static void submit_all(void)
{
	struct iocb *v[DEPTH];

	for (int s = 0; s < DEPTH; s++) {
		io_prep_pread(&cbs[s], fd, bufs + (size_t)s * BLK, BLK, (long long)s * BLK);
		cbs[s].data = (void *)(uintptr_t)s;
		v[s] = &cbs[s];
	}
	if (io_submit(ctx, DEPTH, v) != DEPTH)
		dt_fail("io_submit");
}

/* reap DEPTH events with io_getevents; how many were good */
static int reap_all(void)
{
	struct io_event ev[DEPTH];
	struct timespec ts = { 10, 0 };
	int got = 0, good = 0;

	while (got < DEPTH) {
		int r = io_getevents(ctx, 1, DEPTH - got, ev, &ts);

		if (r <= 0)
			dt_fail("io_getevents = %s", aio_res(r));
		for (int i = 0; i < r; i++)
			good += event_ok(&ev[i]);
		got += r;
	}
	return good;
}

/* the ring read with no system call, as fio's userspace_reap: head and
 * tail, the events, head stored back */
static int user_reap(int want)
{
	struct aio_ring_hdr *h = (struct aio_ring_hdr *)ctx;
	struct io_event *evs = (struct io_event *)(h + 1);
	long long end = dt_now_ms() + 10000;
	int got = 0, good = 0;

	while (got < want && dt_now_ms() < end) {
		unsigned head = h->head, tail = __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE);

		while (head != tail && got < want) {
			good += event_ok(&evs[head]);
			head = (head + 1) % h->nr;
			got++;
		}
		__atomic_store_n(&h->head, head, __ATOMIC_RELEASE);
	}
	if (got < want)
		dt_out("  the ring had %d of %d after 10 s", got, want);
	return good;
}

static void userspace_reap(int argc, char **argv)
{
	(void)argc; (void)argv;
	setup();
	dt_out("warm-up at depth: %ld good", run_depth(512));
	for (int round = 0; round < 3; round++) {
		submit_all();
		dt_out("round %d: %d read from the ring by the program, good", round,
		       user_reap(DEPTH));
	}
	cleanup();
}

static volatile sig_atomic_t handled;

static void on_usr1(int sig)
{
	(void)sig;
	handled++;
}

static const char *wait_res(int r, int e)
{
	return dt_res(r, r < 0 ? e : 0);
}

/* the thread's other waits while its requests complete: they end by
 * their timeout, as on the kernel */
static void quiet_waits(int argc, char **argv)
{
	struct epoll_event ee;
	struct timespec t = { 0, 150000000 };
	sigset_t s;
	int ep = epoll_create1(0), r, e;

	(void)argc; (void)argv;
	setup();
	dt_out("warm-up at depth: %ld good", run_depth(512));
	submit_all();
	r = epoll_wait(ep, &ee, 1, 150);
	e = errno;
	dt_out("epoll_wait(150 ms) while %d complete = %s", DEPTH, wait_res(r, e));
	dt_out("  then %d good", reap_all());
	submit_all();
	r = epoll_pwait(ep, &ee, 1, 150, NULL);
	e = errno;
	dt_out("epoll_pwait(150 ms) = %s", wait_res(r, e));
	dt_out("  then %d good", reap_all());
	dt_out("warm-up again: %ld good", run_depth(256));
	submit_all();
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	sigprocmask(SIG_BLOCK, &s, NULL);
	r = sigtimedwait(&s, NULL, &t);
	e = errno;
	dt_out("sigtimedwait(150 ms) = %s", wait_res(r, e));
	dt_out("  then %d good", reap_all());
	close(ep);
	cleanup();
}

/* a wait that completions must not end: its result while DEPTH complete
 * (MORE, when set, the same wait again), then the reads reaped */
static void wait_during(const char *what, int (*wait)(void *), void *arg)
{
	int r, e;

	submit_all();
	r = wait(arg);
	e = errno;
	dt_out("%s while %d complete = %s", what, DEPTH, wait_res(r, e));
	dt_out("  then %d good", reap_all());
}

static int sv[2], ep_raw;

static int recv_timed(void *arg)
{
	char c;

	(void)arg;
	return (int)recv(sv[0], &c, 1, 0);   /* nothing was sent to sv[0] */
}

/* sv[0] is full: a send of one more byte waits for room */
static int send_timed(void *arg)
{
	char c = 0;

	(void)arg;
	return (int)send(sv[0], &c, 1, 0);
}

static int raw_epoll(void *arg)
{
	struct epoll_event ee;

	(void)arg;
	return (int)raw_syscall(SYS_epoll_pwait, ep_raw, &ee, 1, 150, NULL, 8);
}

static int raw_sigwait(void *arg)
{
	struct timespec t = { 0, 150000000 };

	return (int)raw_syscall(SYS_rt_sigtimedwait, arg, NULL, &t, 8);
}

static void timeo(int s, int opt)
{
	struct timeval tv = { 0, 150000 };

	if (setsockopt(s, SOL_SOCKET, opt, &tv, sizeof tv))
		dt_fail("setsockopt: %s", dt_errname(errno));
}

/* the waits that neither the kernel restarts after completion work nor
 * libuipc can make again: each ends by its timeout, as on the kernel */
static void raw_quiet_waits(int argc, char **argv)
{
	char fill[4096];
	sigset_t s;
	int r;

	(void)argc; (void)argv;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		dt_fail("socketpair");
	timeo(sv[0], SO_RCVTIMEO);
	timeo(sv[0], SO_SNDTIMEO);
	memset(fill, 0, sizeof fill);
	do
		r = (int)send(sv[0], fill, sizeof fill, MSG_DONTWAIT);
	while (r > 0);
	ep_raw = epoll_create1(0);
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	sigprocmask(SIG_BLOCK, &s, NULL);
	setup();
	for (int round = 0; round < 2; round++) {
		dt_out("round %d, warm-up at depth: %ld good", round, run_depth(512));
		wait_during("recv, SO_RCVTIMEO 150 ms", recv_timed, NULL);
		wait_during("send, full, SO_SNDTIMEO 150 ms", send_timed, NULL);
		wait_during("epoll_pwait(150 ms) by instruction", raw_epoll, NULL);
		wait_during("rt_sigtimedwait(150 ms) by instruction", raw_sigwait, &s);
	}
	close(ep_raw);
	close(sv[0]);
	close(sv[1]);
	cleanup();
}

static void *kicker(void *arg)
{
	dt_msleep(100);
	pthread_kill(*(pthread_t *)arg, SIGUSR1);
	return NULL;
}

/* a handler still ends them (epoll_wait is never restarted, SA_RESTART
 * or not) */
static void signalled_waits(int argc, char **argv)
{
	struct sigaction sa;
	struct epoll_event ee;
	pthread_t me = pthread_self(), t;
	int ep = epoll_create1(0), r, e;

	(void)argc; (void)argv;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	setup();
	dt_out("warm-up at depth: %ld good", run_depth(512));
	submit_all();
	pthread_create(&t, NULL, kicker, &me);
	r = epoll_wait(ep, &ee, 1, 5000);
	e = errno;
	pthread_join(t, NULL);
	dt_out("epoll_wait(5 s), SIGUSR1 (SA_RESTART) after 100 ms = %s, handled %d",
	       wait_res(r, e), (int)handled);
	dt_out("  then %d good", reap_all());
	close(ep);
	cleanup();
}

/* a thread that reaps at depth, then submits and exits: its requests
 * complete all the same, for the main thread to reap */
static void *submit_and_exit(void *arg)
{
	(void)arg;
	dt_out("thread: warm-up at depth: %ld good", run_depth(512));
	submit_all();
	return NULL;
}

static void submitter_exits(int argc, char **argv)
{
	pthread_t t;

	(void)argc; (void)argv;
	setup();
	pthread_create(&t, NULL, submit_and_exit, NULL);
	pthread_join(t, NULL);
	dt_out("thread gone; main reaps %d good", reap_all());
	cleanup();
}

/* IOCB_FLAG_RESFD: the eventfd counts every completion, none reaped;
 * then io_destroy with requests in flight waits for them */
static void resfd_destroy(int argc, char **argv)
{
	struct iocb *v[DEPTH];
	uint64_t cnt = 0, c;
	long long end;
	int efd = eventfd(0, EFD_NONBLOCK);

	(void)argc; (void)argv;
	setup();
	dt_out("warm-up at depth: %ld good", run_depth(512));
	for (int s = 0; s < DEPTH; s++) {
		io_prep_pread(&cbs[s], fd, bufs + (size_t)s * BLK, BLK, (long long)s * BLK);
		io_set_eventfd(&cbs[s], efd);
		cbs[s].data = (void *)(uintptr_t)s;
		v[s] = &cbs[s];
	}
	if (io_submit(ctx, DEPTH, v) != DEPTH)
		dt_fail("io_submit");
	end = dt_now_ms() + 10000;
	while (cnt < DEPTH && dt_now_ms() < end) {
		if (read(efd, &c, sizeof c) == sizeof c)
			cnt += c;
		else
			dt_msleep(1);
	}
	dt_out("eventfd counted %llu", (unsigned long long)cnt);
	dt_out("  then %d good", reap_all());
	memset(bufs, 0xff, (size_t)DEPTH * BLK);
	for (int s = 0; s < DEPTH; s++)
		io_prep_pread(&cbs[s], fd, bufs + (size_t)s * BLK, BLK, (long long)s * BLK);
	if (io_submit(ctx, DEPTH, v) != DEPTH)
		dt_fail("io_submit");
	dt_out("io_destroy with %d in flight = %s", DEPTH, aio_res(io_destroy(ctx)));
	for (int s = 0; s < DEPTH; s++)
		if (!block_ok(bufs + (size_t)s * BLK, (uint64_t)s))
			dt_out("  slot %d not read when io_destroy returned", s);
	dt_out("  every block read");
	ctx = 0;
	if (io_setup(64, &ctx))
		dt_fail("io_setup");
	close(efd);
	cleanup();
}

/* a handler that interrupts io_getevents (the thread asleep for its
 * context, at depth) makes a read of its own on a second context and
 * waits for it there: it completes (under uipc the interrupted sleep may
 * hold the kernel AIO context's lead, aio/kaio.c) */
static io_context_t ctx2;
static char *buf2;
static volatile int h_runs, h_good;

static void on_alrm(int sig)
{
	struct iocb cb, *p = &cb;
	struct io_event ev;
	struct timespec ts = { 5, 0 };
	uint64_t blk = (uint64_t)h_runs % NBLK;

	(void)sig;
	io_prep_pread(&cb, fd, buf2, BLK, (long long)(blk * BLK));
	if (io_submit(ctx2, 1, &p) == 1 && io_getevents(ctx2, 1, 1, &ev, &ts) == 1 &&
	    ev.res == BLK && block_ok(buf2, blk))
		h_good++;
	h_runs++;
}

static void handler_reaps(int argc, char **argv)
{
	struct itimerval it = { { 0, 5000 }, { 0, 5000 } }, off = { { 0, 0 }, { 0, 0 } };
	struct io_event ev[DEPTH];
	struct iocb *v[DEPTH];
	struct timespec ts = { 10, 0 };
	struct sigaction sa;
	long long end;
	int inflight = DEPTH, bad = 0, eintr = 0;

	(void)argc; (void)argv;
	setup();
	if (io_setup(8, &ctx2) || posix_memalign((void **)&buf2, BLK, BLK))
		dt_fail("io_setup of the second context");
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alrm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	for (int s = 0; s < DEPTH; s++) {
		prep_slot(s);
		v[s] = &cbs[s];
	}
	if (io_submit(ctx, DEPTH, v) != DEPTH)
		dt_fail("io_submit of %d", DEPTH);
	setitimer(ITIMER_REAL, &it, NULL);
	end = dt_now_ms() + 20000;
	while (inflight > 0) {
		int r = io_getevents(ctx, 1, DEPTH, ev, &ts);

		if (r == -EINTR) {
			eintr++;
			continue;
		}
		if (r <= 0)
			dt_fail("io_getevents = %s", aio_res(r));
		for (int k = 0; k < r; k++) {
			struct iocb *cb = ev[k].obj;

			inflight--;
			if (!event_ok(&ev[k]))
				bad++;
			if (h_runs < 20 && dt_now_ms() < end) {
				prep_slot((int)(cb - cbs));
				if (io_submit(ctx, 1, &cb) != 1)
					dt_fail("io_submit");
				inflight++;
			}
		}
	}
	setitimer(ITIMER_REAL, &off, NULL);
	dt_out("reads at depth while a handler reads: %d bad", bad);
	dt_out("handler ran 20 times or more: %s", h_runs >= 20 ? "yes" : "no");
	dt_out("every read of the handler's completed right: %s", h_good == h_runs ? "yes" : "no");
	io_destroy(ctx2);
	free(buf2);
	cleanup();
}

const struct dt_case dt_cases[] = {
	{ "depth", depth, 0 },
	{ "userspace-reap", userspace_reap, 0 },
	{ "quiet-waits", quiet_waits, 0 },
	{ "raw-quiet-waits", raw_quiet_waits, 0 },
	{ "signalled-waits", signalled_waits, 0 },
	{ "submitter-exits", submitter_exits, 0 },
	{ "resfd-destroy", resfd_destroy, 0 },
	{ "handler-reaps", handler_reaps, 0 },
	{ NULL, NULL, 0 },
};
