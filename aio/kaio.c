/*
 * kaio.c - O_DIRECT reads and writes through a kernel AIO context of
 * uipc's own, where the kernel's AIO can be had.
 *
 * Why: an O_DIRECT request given to io_uring has its completion work run
 * on the task that entered it (uring.c): uipc's ring thread, one hop away
 * from the thread that waits, which kept O_DIRECT at depth 32 at 0.85x of
 * the kernel's IOPS here.  The kernel's AIO completes from the interrupt
 * and wakes the waiter directly, with no task work; so io_submit gives
 * such a request to a kernel context (the program's descriptor: the kernel
 * takes the file, no dup), one io_submit per iocb, whose answer is then
 * the kernel's own (a flag it refuses, a descriptor that went: that
 * iocb's error, as on the kernel).  A context full (-EAGAIN) sends the
 * request to the usual backend.
 *
 * Who reaps the kernel context's events into the programs' rings.  Its
 * io_getevents consumes what it reads, and it wakes every sleeper at each
 * completion, so one thread at a time sleeps in it: the leader (lead).
 *  - an io_getevents that must sleep for a context with requests there
 *    takes the lead if no program thread has it, and sleeps in the
 *    kernel's io_pgetevents with the program's signal mask (pselect's way,
 *    as uring.c's sleep): a completion wakes it with no thread between.
 *    It posts what it reads, for every context.  A completion that reaches
 *    its context some other way (the io_uring, the threads, another
 *    reaper) wakes it with a nudge: an IOCB_CMD_POLL of an eventfd that is
 *    always readable, which completes at once into the kernel context.
 *    Other io_getevents sleep on their context's futex word and on the
 *    lead word, so that the next of them takes the lead when it is let go.
 *  - the watcher, a thread of uipc's, for programs that do not sleep in
 *    io_getevents (they read the ring themselves, wait on a RESFD eventfd,
 *    poll with zero timeouts): every WATCH_NS it looks at the kernel
 *    context's ring, and when completions sat there through a whole look
 *    (its head did not move) with no one leading, it leads for a while
 *    (watch_main), posting at once, until a program thread takes the lead.
 *    Not at once: a program that sleeps in io_getevents after each batch
 *    lets the lead go between them, and a watcher asleep in the kernel
 *    context would be woken at every completion, the hop this file exists
 *    to save.  So a program that stopped waiting in io_getevents may see a
 *    completion up to a look or two late, once.
 *
 * Not used (the io_uring or threads take O_DIRECT as before): under any
 * seccomp filter (uipc's trap mode traps these very calls; a filter of
 * someone else's may kill), when io_setup fails (fs.aio-max-nr of the
 * system reached, the calls refused), or when UIPC_AIO_BACKEND names
 * uring or threads.  A fork child starts without the context (the kernel
 * gives it none) and makes its own at its first O_DIRECT request.
 */
#include <linux/aio_abi.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>

#include "aio/aio.h"

#define KAIO_NR     256          /* io_setup's nr_events: fs.aio-nr of the system is shared */
#define KAIO_BATCH  64           /* events read per call */
#define TAG_NUDGE   1            /* aio_data of a nudge (requests are pointers) */
#define WATCH_NS    1000000      /* how often the watcher looks while it does not lead */
#define WATCH_MAX_NS 128000000   /* how long it leads at most before it looks again */
#define IDLE_LOOKS  16           /* looks with nothing in flight before it sleeps for good */

/* lead: who sleeps in the kernel context, in the low bits; a count of
 * lets-go above them (a futex word: sleepers behind a leader compare it) */
enum { LEAD_NONE, LEAD_PROGRAM, LEAD_WATCHER };
#define LEAD_WHO(l)  ((l) & 3u)
#define LEAD_NEXT(l) ((((l) >> 2) + 1) << 2)

static aio_context_t kctx;
static _Atomic int kstate;                 /* 0 not tried, 1 in use, -1 not available */
static pthread_mutex_t kstate_lock = PTHREAD_MUTEX_INITIALIZER;
static int nudge_fd = -1;                  /* an eventfd that stays readable */
static _Atomic uint32_t lead;
static _Atomic uint32_t lead_waiters;      /* io_getevents asleep behind a leader */
static _Atomic uint32_t k_inflight;        /* requests in the kernel context */
static _Atomic uint32_t watch_word;        /* the watcher's futex word: 1 asleep for good */
static bool waitable = true;               /* io_pgetevents works */

/* the context this thread leads for (a completion for it from elsewhere
 * needs no nudge when this thread posts it) */
static __thread struct kioctx *leading_for;
/* this thread holds the lead (a handler's io_getevents inside its sleep
 * must not wait behind it) */
static __thread bool t_lead_held;

/* ---- the kernel's ring, read in place to see whether events wait ---- */

static bool kring_pending(void)
{
	struct aio_ring *r = (struct aio_ring *)(uintptr_t)kctx;

	return __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
}

/* ---- posting ---- */

/*
 * The N events read from the kernel context into their contexts' rings.
 * A nudge is meant for the program thread that leads; any other reader
 * (a zero-timeout io_getevents, the watcher, a poller) that took one
 * gives another in its place while a program thread leads.  Else, when
 * another thread reaped and posted the leader's last request and then
 * read the nudge before the leader did (the leader still on its way into
 * io_pgetevents, or woken but not yet reading), the leader sleeps there
 * with nothing left to wake it (tests/unit/aio_kaio_lead.c).  A stale
 * nudge costs the leader one wake-up; the leader drops the ones it reads.
 */
static void post_events(const struct io_event *ev, long n)
{
	struct aio_kiocb *done = NULL, *req;
	bool nudged = false;

	for (long i = 0; i < n; i++) {
		if (ev[i].data == TAG_NUDGE) {
			nudged = true;
			continue;
		}
		req = (struct aio_kiocb *)(uintptr_t)ev[i].data;
		atomic_fetch_sub(&req->ctx->kaio_reqs, 1);
		atomic_fetch_sub(&k_inflight, 1);
		aio_post(req, ev[i].res, ev[i].res2);
		req->next = done;
		done = req;
	}
	aio_wake_free(done);
	if (nudged && !t_lead_held && LEAD_WHO(atomic_load(&lead)) == LEAD_PROGRAM)
		aio_kaio_nudge();
}

/* what the kernel context holds now, without sleeping */
static void reap_now(void)
{
	struct io_event ev[KAIO_BATCH];
	struct timespec zero = { 0, 0 };
	long n;

	do {
		n = sys_raw6(SYS_io_getevents, (long)kctx, 0, KAIO_BATCH, (long)ev, (long)&zero, 0);
		if (n > 0)
			post_events(ev, n);
	} while (n == KAIO_BATCH);
}

/* ---- the lead ---- */

/* the lead let go by its holder, HELD being the word it stored (a
 * watcher's may have been taken by a program thread since: then it stays) */
static void lead_release(uint32_t held)
{
	if (!atomic_compare_exchange_strong(&lead, &held, LEAD_NEXT(held) | LEAD_NONE))
		return;
	if (atomic_load(&lead_waiters))
		sys_futex_wake((void *)&lead, 1);
}

/* ---- the watcher ---- */

static uint32_t kring_head(void)
{
	return __atomic_load_n(&((struct aio_ring *)(uintptr_t)kctx)->head, __ATOMIC_ACQUIRE);
}

static void watch_sleep(uint32_t val, int64_t ns)
{
	struct timespec ts = { ns / 1000000000, ns % 1000000000 };

	sys_raw6(SYS_futex, (long)&watch_word, FUTEX_WAIT, val, ns >= 0 ? (long)&ts : 0, 0, 0);
}

/* the watcher leads (HELD stored): sleep in the kernel context and post,
 * for HOLD ns, or until a program thread takes the lead (whether one
 * did).  It stays while nothing is in flight: a program that reads its
 * ring itself submits its next request after each completion. */
static bool watch_lead(uint32_t held, int64_t hold)
{
	struct io_event ev[KAIO_BATCH];
	int64_t end = mono_ns() + hold, left;
	struct timespec ts;
	long n;

	for (;;) {
		left = end - mono_ns();
		if (left <= 0)
			break;
		ts.tv_sec = left / 1000000000;
		ts.tv_nsec = left % 1000000000;
		/* every signal is blocked in this thread: no EINTR */
		n = sys_raw6(SYS_io_getevents, (long)kctx, 1, KAIO_BATCH, (long)ev, (long)&ts, 0);
		if (n > 0)
			post_events(ev, n);
		else if (n < 0)
			break;               /* not expected: no spinning on it */
		if (LEAD_WHO(atomic_load(&lead)) != LEAD_WATCHER)
			return true;
	}
	lead_release(held);
	return false;
}

/*
 * Every WATCH_NS: completions that waited in the kernel context through a
 * whole look (its head did not move) with no one leading mean that no
 * program thread reaps them: the watcher leads, for HOLD, twice as long
 * each time it was needed again right after (up to WATCH_MAX_NS), back
 * to WATCH_NS when someone else reaped meanwhile.
 */
static void *watch_main(void *arg)
{
	int64_t hold = WATCH_NS;
	uint32_t last_head = kring_head(), head, l;
	unsigned quiet = 0;
	bool pending;

	(void)arg;
	for (;;) {
		watch_sleep(0, WATCH_NS);
		pending = kring_pending();
		head = kring_head();
		l = atomic_load(&lead);
		if (pending && head == last_head && LEAD_WHO(l) == LEAD_NONE &&
		    atomic_compare_exchange_strong(&lead, &l, l | LEAD_WATCHER)) {
			if (watch_lead(l | LEAD_WATCHER, hold))
				hold = WATCH_NS;     /* a program thread sleeps there now */
			else if (hold < WATCH_MAX_NS)
				hold *= 2;
			last_head = kring_head();
			continue;
		}
		if (head != last_head)
			hold = WATCH_NS;
		last_head = head;
		if (atomic_load(&k_inflight) || pending) {
			quiet = 0;
			continue;
		}
		if (++quiet < IDLE_LOOKS)
			continue;
		/* nothing in flight for a while: asleep until a request comes */
		quiet = 0;
		atomic_store(&watch_word, 1);
		if (!atomic_load(&k_inflight))
			watch_sleep(1, -1);
		atomic_store(&watch_word, 0);
	}
	return NULL;
}

/* a request went in: the watcher, asleep for good, looks again */
static void watch_wake(void)
{
	if (atomic_load_explicit(&watch_word, memory_order_relaxed) &&
	    atomic_exchange(&watch_word, 0))
		sys_futex_wake((void *)&watch_word, 1);
}

/* ---- setting up ---- */

static bool named_kernel(void)
{
	const char *e = getenv("UIPC_AIO_BACKEND");

	return e && !strcmp(e, "kernel");
}

static int kaio_setup(void)
{
	const char *e = getenv("UIPC_AIO_BACKEND");
	aio_context_t c = 0;
	long r;

	if (e && *e && !named_kernel())
		return -EPERM;           /* uring or threads by name */
	/* a filter: uipc's trap mode traps these calls; another's may kill */
	if (sys_raw6(SYS_prctl, PR_GET_SECCOMP, 0, 0, 0, 0, 0) != 0)
		return named_kernel() ? -ENOSYS : -EPERM;
	nudge_fd = (int)sys_raw6(SYS_eventfd2, 1, EFD_CLOEXEC | EFD_NONBLOCK, 0, 0, 0, 0);
	if (nudge_fd < 0)
		return nudge_fd;
	r = sys_raw6(SYS_io_setup, KAIO_NR, (long)&c, 0, 0, 0, 0);
	if (r == 0) {
		kctx = c;
		r = aio_start_thread(watch_main, NULL);
		if (r == 0)
			return 0;
		sys_raw6(SYS_io_destroy, (long)c, 0, 0, 0, 0, 0);
		kctx = 0;
	}
	sys_close(nudge_fd);
	nudge_fd = -1;
	return (int)r;
}

static bool kaio_ready(void)
{
	int s = atomic_load_explicit(&kstate, memory_order_acquire);
	int err;

	if (likely(s))
		return s > 0;
	crit_mutex_lock(&kstate_lock);
	s = atomic_load(&kstate);
	if (!s) {
		err = kaio_setup();
		if (err && err != -EPERM && named_kernel())
			fprintf(stderr, "uipc: UIPC_AIO_BACKEND=kernel: the kernel's AIO is not "
				"available (%s); using io_uring\n", strerror(-err));
		s = err ? -1 : 1;
		atomic_store_explicit(&kstate, s, memory_order_release);
	}
	crit_mutex_unlock(&kstate_lock);
	return s > 0;
}

/* ---- what submit.c, events.c and backend.c call ---- */

int aio_kaio_submit(struct aio_kiocb *req, int fd)
{
	struct iocb cb, *p = &cb;
	bool vectored = req->opcode == IOCB_CMD_PREADV || req->opcode == IOCB_CMD_PWRITEV;
	struct kioctx *ctx = req->ctx;
	long r;

	if (!kaio_ready())
		return 0;
	memset(&cb, 0, sizeof(cb));
	cb.aio_data = (uintptr_t)req;
	cb.aio_lio_opcode = (uint16_t)req->opcode;
	cb.aio_fildes = (uint32_t)fd;
	cb.aio_buf = vectored ? (uintptr_t)req->iov : (uintptr_t)req->iov[0].iov_base;
	cb.aio_nbytes = vectored ? (uint64_t)req->nr_iov : req->iov[0].iov_len;
	cb.aio_offset = req->pos;
	cb.aio_rw_flags = req->rw_flags;
	if (req->has_ioprio) {
		cb.aio_flags = IOCB_FLAG_IOPRIO;
		cb.aio_reqprio = (int16_t)req->ioprio;
	}
	req->fd = -1;
	atomic_fetch_add(&ctx->kaio_reqs, 1);
	atomic_fetch_add(&k_inflight, 1);
	r = sys_raw6(SYS_io_submit, (long)kctx, 1, (long)&p, 0, 0, 0);
	if (r == 1) {
		watch_wake();            /* REQ may be complete and freed already */
		return 1;
	}
	atomic_fetch_sub(&k_inflight, 1);
	atomic_fetch_sub(&ctx->kaio_reqs, 1);
	return r == -EAGAIN || r == -ENOMEM ? 0 : (int)r;
}

bool aio_kaio_can_wait(struct kioctx *ctx)
{
	return waitable && atomic_load(&ctx->kaio_reqs) > 0;
}

bool aio_kaio_waited(struct kioctx *ctx)
{
	return atomic_load(&ctx->kaio_waiters) > (leading_for == ctx ? 1u : 0u);
}

void aio_kaio_reap(void)
{
	if (kring_pending())
		reap_now();
}

void aio_kaio_nudge(void)
{
	struct iocb cb, *p = &cb;

	memset(&cb, 0, sizeof(cb));
	cb.aio_data = TAG_NUDGE;
	cb.aio_lio_opcode = IOCB_CMD_POLL;
	cb.aio_fildes = (uint32_t)nudge_fd;
	cb.aio_buf = POLLIN;
	/* a full context (-EAGAIN) has completions coming: they wake it */
	sys_raw6(SYS_io_submit, (long)kctx, 1, (long)&p, 0, 0, 0);
}

/* the leader's sleep in the kernel context for CTX (see aio_kaio_wait) */
static int lead_wait(struct kioctx *ctx, uint32_t seq, int64_t deadline, unsigned hand0,
		     unsigned cont0)
{
	struct io_event ev[KAIO_BATCH];
	struct { const sigset_t *mask; size_t size; } sig;
	struct kioctx *outer = leading_for;
	struct timespec ts;
	bool interrupted;
	sigset_t old;
	int ret = 0;
	long n;

	atomic_fetch_add(&ctx->kaio_waiters, 1);
	leading_for = ctx;
	if (kring_pending())
		reap_now();
	if (atomic_load(&ctx->seq) != seq)
		goto out;
	ret = aio_sleep_begin(deadline, hand0, cont0, &ts, &old);
	if (ret)
		goto out;
	sig.mask = &old;
	sig.size = _NSIG / 8;
	n = sys_raw6(SYS_io_pgetevents, (long)kctx, 1, KAIO_BATCH, (long)ev,
		     deadline >= 0 ? (long)&ts : 0, (long)&sig);
	interrupted = aio_sleep_end(&old, hand0, cont0);
	if (n > 0)
		post_events(ev, n);
	if (interrupted)
		ret = -EINTR;
	else if (n == 0 && deadline >= 0)
		ret = -ETIMEDOUT;
	else if (n < 0 && n != -EINTR)
		waitable = false;        /* refused: the futex and the watcher from now on */
out:
	leading_for = outer;
	atomic_fetch_sub(&ctx->kaio_waiters, 1);
	return ret;
}

/*
 * io_getevents's sleep for CTX, which has requests in the kernel context,
 * SEQ being CTX's completion count when it last read its ring: lead (sleep
 * in the kernel context and post what comes), or, behind a program thread
 * that leads, sleep on CTX's futex word and the lead word.  0, -ETIMEDOUT
 * or -EINTR.
 */
int aio_kaio_wait(struct kioctx *ctx, uint32_t seq, int64_t deadline, unsigned hand0,
		  unsigned cont0)
{
	uint32_t l, held;
	bool took;
	int ret;

	/* a handler that interrupted this thread's own lead sleeps there too */
	if (t_lead_held)
		return lead_wait(ctx, seq, deadline, hand0, cont0);
	l = atomic_load(&lead);
	while (LEAD_WHO(l) != LEAD_PROGRAM) {
		/* a watcher that leads wakes at its next completion and sees it
		 * lost the lead; handlers are held off from taking it to the
		 * flag that says this thread holds it */
		uipc_crit_enter();
		held = (l & ~3u) | LEAD_PROGRAM;
		took = atomic_compare_exchange_weak(&lead, &l, held);
		t_lead_held = took;
		uipc_crit_exit();
		if (took) {
			ret = lead_wait(ctx, seq, deadline, hand0, cont0);
			uipc_crit_enter();
			t_lead_held = false;
			lead_release(held);
			uipc_crit_exit();
			return ret;
		}
	}
	atomic_fetch_add(&lead_waiters, 1);
	ret = aio_wait_seq(ctx, seq, (uint32_t *)&lead, l, deadline, hand0, cont0);
	atomic_fetch_sub(&lead_waiters, 1);
	return ret;
}

int aio_kaio_guarded_fd(void)
{
	return __atomic_load_n(&nudge_fd, __ATOMIC_RELAXED);
}

void aio_kaio_fork_child(void)
{
	/* the parent's context is not the child's (the kernel gives it an
	 * empty table); its requests complete in the parent */
	if (nudge_fd >= 0)
		sys_close(nudge_fd);
	nudge_fd = -1;
	kctx = 0;
	pthread_mutex_init(&kstate_lock, NULL);
	atomic_store(&kstate, 0);
	atomic_store(&lead, 0);
	atomic_store(&lead_waiters, 0);
	atomic_store(&k_inflight, 0);
	atomic_store(&watch_word, 0);
	leading_for = NULL;
	t_lead_held = false;
	waitable = true;
}
