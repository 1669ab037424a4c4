/*
 * events.c - completion into the ring (aio_complete) and its reading:
 * io_getevents and io_pgetevents.
 *
 * Writers (completions, from any thread) hold the context's completion
 * lock: the event goes to io_events[tail], then tail moves with a release
 * store, so a reader that sees the new tail sees the event.  Readers
 * (io_getevents here, or the program itself, as libaio and fio do) take
 * events from head and store head; uipc's readers hold the ring lock
 * among themselves, and always start from the head stored in the ring, so
 * a head the program advanced itself is honoured.  A sleeping reader waits
 * on the context's seq word, which every completion bumps; the wake-up
 * system call is made only when someone sleeps (waiters).
 */
#include <signal.h>

#include "aio/aio.h"

void aio_wake(struct kioctx *ctx)
{
	atomic_fetch_add(&ctx->seq, 1);
	if (atomic_load(&ctx->waiters))
		sys_futex_wake((void *)&ctx->seq, INT_MAX);
	/* a sleeper in the io_uring wakes for a completion there (uring.c),
	 * one in the kernel context for one there (kaio.c) */
	if (atomic_load(&ctx->ring_waiters) && aio_uring_waited(ctx))
		aio_uring_nudge();
	if (atomic_load(&ctx->kaio_waiters) && aio_kaio_waited(ctx))
		aio_kaio_nudge();
}

void aio_wake_free(struct aio_kiocb *done)
{
	struct aio_kiocb *next;

	for (; done; done = next) {
		next = done->next;
		if (!next || next->ctx != done->ctx)
			aio_wake(done->ctx);
		aio_req_free(done);
	}
}

uint32_t aio_ring_used(struct kioctx *ctx)
{
	uint32_t nr = ctx->nr_events;
	uint32_t head = __atomic_load_n(&ctx->ring->head, __ATOMIC_ACQUIRE) % nr;
	uint32_t tail = __atomic_load_n(&ctx->ring->tail, __ATOMIC_ACQUIRE) % nr;

	return tail >= head ? tail - head : nr - head + tail;
}

/* the eventfd of IOCB_FLAG_RESFD counts completions */
static void signal_eventfd(int fd)
{
	uint64_t one = 1;

	if (sys_write(fd, &one, sizeof(one)) < 0) {
		/* the kernel's eventfd_signal cannot fail either: nothing to report */
	}
}

void aio_complete(struct aio_kiocb *req, int64_t res, int64_t res2)
{
	struct kioctx *ctx = req->ctx;

	aio_post(req, res, res2);
	aio_wake(ctx);
	aio_req_free(req);
}

void aio_post(struct aio_kiocb *req, int64_t res, int64_t res2)
{
	struct kioctx *ctx = req->ctx;
	struct io_event *ev;
	uint32_t tail;

	crit_mutex_lock(&ctx->completion_lock);
	tail = ctx->tail;
	ev = &ctx->ring->io_events[tail];
	ev->data = req->data;
	ev->obj = req->obj;
	ev->res = res;
	ev->res2 = res2;
	if (++tail >= ctx->nr_events)
		tail = 0;
	ctx->tail = tail;
	__atomic_store_n(&ctx->ring->tail, tail, __ATOMIC_RELEASE);
	atomic_fetch_sub(&ctx->inflight, 1);
	crit_mutex_unlock(&ctx->completion_lock);
	if (req->resfd >= 0)
		signal_eventfd(req->resfd);
}

/* ---- reading ---- */

/* copy up to NR events from the ring to EVENTS and store head; the count,
 * or -EFAULT (head left where it was) */
static long read_ring(struct kioctx *ctx, long nr, struct io_event *events)
{
	struct aio_ring *ring = ctx->ring;
	uint32_t n = ctx->nr_events, head, tail, avail;
	long got = 0;

	crit_mutex_lock(&ctx->ring_lock);
	head = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE) % n;
	tail = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE) % n;
	while (got < nr && head != tail) {
		avail = (tail > head ? tail : n) - head;
		if ((long)avail > nr - got)
			avail = (uint32_t)(nr - got);
		if (uipc_copy_to_user(events + got, &ring->io_events[head],
				      avail * sizeof(struct io_event))) {
			got = got ? got : -EFAULT;
			break;
		}
		got += avail;
		head = (head + avail) % n;
	}
	if (got > 0)
		__atomic_store_n(&ring->head, head, __ATOMIC_RELEASE);
	crit_mutex_unlock(&ctx->ring_lock);
	return got;
}

/* the relative time left until DEADLINE (ns, monotonic) in *REL; false
 * once it has passed */
static bool time_left(int64_t deadline, struct timespec *rel)
{
	int64_t left = deadline - mono_ns();

	if (left <= 0)
		return false;
	rel->tv_sec = left / 1000000000;
	rel->tv_nsec = left % 1000000000;
	return true;
}

int aio_sleep_begin(int64_t deadline, unsigned hand0, unsigned cont0, struct timespec *rel,
		    sigset_t *old)
{
	sigset_t all;

	if (deadline >= 0 && !time_left(deadline, rel))
		return -ETIMEDOUT;
	sigfillset(&all);
	sig_strip_unblockable(&all);
	uipc_sigmask(SIG_SETMASK, &all, old);
	if (uipc_handler_gen() != hand0 || uipc_cont_gen() != cont0) {
		uipc_sigmask(SIG_SETMASK, old, NULL);
		return -EINTR;
	}
	return 0;
}

bool aio_sleep_end(const sigset_t *old, unsigned hand0, unsigned cont0)
{
	uipc_sigmask(SIG_SETMASK, old, NULL);    /* a handler held off runs here */
	return uipc_handler_gen() != hand0 || uipc_cont_gen() != cont0;
}

int aio_wait_seq(struct kioctx *ctx, uint32_t seq, uint32_t *w2, uint32_t v2,
		 int64_t deadline, unsigned hand0, unsigned cont0)
{
	uint32_t *w[2] = { (uint32_t *)&ctx->seq, w2 }, val[2] = { seq, v2 };
	struct timespec rel = { 3600, 0 };   /* no deadline: wake hourly, loop */
	int r;

	if (deadline >= 0 && !time_left(deadline, &rel))
		return -ETIMEDOUT;
	atomic_fetch_add(&ctx->waiters, 1);
	r = uipc_wait_words(w, val, w2 ? 2 : 1, &rel, hand0);
	atomic_fetch_sub(&ctx->waiters, 1);
	if (r < 0 && errno == ETIMEDOUT && deadline >= 0)
		return -ETIMEDOUT;
	if (uipc_handler_gen() != hand0 || uipc_cont_gen() != cont0)
		return -EINTR;
	return 0;
}

/* read_events: at least MIN_NR events, up to NR, before DEADLINE (-1: none,
 * 0: do not wait).  The count, or -EINTR / -EFAULT / -EINVAL with none. */
static long read_events(struct kioctx *ctx, long min_nr, long nr, struct io_event *events,
			int64_t deadline, unsigned hand0)
{
	unsigned cont0 = uipc_cont_gen();
	long got = 0, r;
	uint32_t seq;
	int w;

	uipc_sleep_begin();
	for (;;) {
		seq = atomic_load(&ctx->seq);
		/* completions in the kernel context are the kernel's events
		 * already: a caller that does not wait finds them too */
		if (atomic_load(&ctx->kaio_reqs))
			aio_kaio_reap();
		r = read_ring(ctx, nr - got, events + got);
		if (r < 0)
			return got ? got : r;
		got += r;
		if (got >= min_nr || deadline == 0)
			return got;
		if (atomic_load(&ctx->dead))
			return got ? got : -EINVAL;
		if (aio_kaio_can_wait(ctx))
			w = aio_kaio_wait(ctx, seq, deadline, hand0, cont0);
		else if (aio_uring_can_wait(ctx))
			w = aio_uring_wait(ctx, seq, deadline, hand0, cont0);
		else
			w = aio_wait_seq(ctx, seq, NULL, 0, deadline, hand0, cont0);
		if (w == -ETIMEDOUT) {
			r = read_ring(ctx, nr - got, events + got);
			return r > 0 ? got + r : got;
		}
		if (w == -EINTR)
			return got ? got : -EINTR;
	}
}

static long getevents_masked(unsigned hand0, aio_context_t ctx_id, long min_nr, long nr,
			     struct io_event *events, const struct timespec *timeout,
			     const sigset_t *sigmask)
{
	struct timespec ts;
	struct kioctx *ctx;
	int64_t deadline = -1;
	sigset_t old;
	long ret;

	if (timeout) {
		if (uipc_copy_from_user(&ts, timeout, sizeof(ts)))
			return -EFAULT;
		deadline = ts.tv_sec == 0 && ts.tv_nsec == 0 ? 0 :
			   mono_ns() + ts.tv_sec * 1000000000LL + ts.tv_nsec;
	}
	ctx = lookup_ioctx(ctx_id);
	if (!ctx)
		return -EINVAL;
	ret = -EINVAL;
	if (min_nr >= 0 && min_nr <= nr) {
		if (sigmask)
			uipc_sigmask(SIG_SETMASK, sigmask, &old);
		ret = read_events(ctx, min_nr, nr, events, deadline, hand0);
		if (sigmask)
			uipc_sigmask(SIG_SETMASK, &old, NULL);
	}
	put_ioctx(ctx);
	return ret;
}

/* a handler whose signal comes meanwhile runs once the reference on the
 * context is given back (uipc_call_begin) */
long aio_getevents_masked(unsigned hand0, aio_context_t ctx_id, long min_nr, long nr,
			  struct io_event *events, const struct timespec *timeout,
			  const sigset_t *sigmask)
{
	uipc_call_begin();
	return uipc_call_end(getevents_masked(hand0, ctx_id, min_nr, nr, events, timeout,
					      sigmask));
}

/*
 * sys_io_getevents: read at least MIN_NR and up to NR events of the
 * context CTX into EVENTS, waiting at most *TIMEOUT (NULL: as long as
 * it takes; zero: not at all).
 * May fail with -EINVAL if ctx is bad, min_nr < 0 or nr < min_nr,
 * -EFAULT if events or timeout is bad, -EINTR if a handler ran before
 * any event came.
 */
long ksys_io_getevents(unsigned hand0, aio_context_t ctx, long min_nr, long nr,
		       struct io_event *events, const struct timespec *timeout)
{
	return aio_getevents_masked(hand0, ctx, min_nr, nr, events, timeout, NULL);
}

struct aio_sigset_user {
	const sigset_t *sigmask;
	size_t sigsetsize;
};

/*
 * sys_io_pgetevents: io_getevents with the signal mask *USIG->sigmask in
 * force while waiting.
 * May fail as io_getevents, and with -EFAULT if usig or its mask is bad,
 * -EINVAL if its size is not the kernel's sigset (8 bytes).
 */
long ksys_io_pgetevents(unsigned hand0, aio_context_t ctx, long min_nr, long nr,
			struct io_event *events, const struct timespec *timeout,
			const void *usig)
{
	struct aio_sigset_user ks;
	sigset_t set;

	if (usig) {
		if (uipc_copy_from_user(&ks, usig, sizeof(ks)))
			return -EFAULT;
		if (ks.sigmask) {
			if (ks.sigsetsize != _NSIG / 8)
				return -EINVAL;
			sigemptyset(&set);
			if (uipc_copy_from_user(&set, ks.sigmask, _NSIG / 8))
				return -EFAULT;
			return aio_getevents_masked(hand0, ctx, min_nr, nr, events, timeout, &set);
		}
	}
	return aio_getevents_masked(hand0, ctx, min_nr, nr, events, timeout, NULL);
}
