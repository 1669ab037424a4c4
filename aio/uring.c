/*
 * uring.c - the io_uring backend: the I/O that io_submit could not finish
 * at once goes to one io_uring per process, so that the kernel keeps the
 * whole queue in flight (O_DIRECT at the device's depth, buffered reads
 * with the page cache's asynchronous reads), where the threads backend
 * (worker.c) has at most one blocking call per thread.
 *
 * Our own few lines over the three system calls (no liburing: no library
 * dependency, and liburing's mmap and close would be entry/'s interposed
 * ones).
 *
 * Who submits.  io_uring ties a request to the task that submitted it: its
 * completion work (task work) runs on that task, which the kernel wakes
 * or interrupts for it, so a program thread that submitted and now sleeps
 * in a call the kernel does not restart (epoll_wait, sigtimedwait, a
 * socket read with a timeout) sees EINTR that no signal caused, and the
 * completion waits while that thread sleeps uninterruptibly.  The kernel's
 * AIO disturbs no one.  UIPC_AIO_SUBMIT:
 *  - thread (the default): one thread of uipc's (the ring thread) is the
 *    only submitter: io_submit pushes its requests (each with a dup of its
 *    descriptor) on a lock-free stack together at its end and, when the
 *    ring thread sleeps, kicks it through its eventfd; the thread enters
 *    each io_submit's batch with one io_uring_enter, as the kernel's
 *    io_submit issues its batch under one plug, and their completion work
 *    runs on it.  Exact; a hand-off each way (0.8-0.9x the kernel's IOPS
 *    with O_DIRECT at depth 32 here, docs/aio.md has why not more).
 *  - direct: io_submit enters its requests itself (the SQ under sq_lock,
 *    one io_uring_enter at its end, which takes the files: no dup).
 *  - auto: direct for a thread that sleeps in io_getevents in the ring
 *    (below), which is where its completion work then finds it; thread for
 *    the others.  entry/aio.c makes the interrupted waits above again, and
 *    sends a thread that waits in them back to thread; the others (a
 *    socket's timeout, a call by instruction) still see the EINTR.
 * Not DEFER_TASKRUN: its completion work runs only when the submitting
 * task itself waits in the ring (another task's io_uring_enter is refused,
 * and closing the ring interrupts its tasks), so requests of a thread that
 * stops calling io_getevents (it waits on a RESFD eventfd, or reads the
 * ring itself) would never reach the context's ring.
 *
 * Who reaps.  The ring is plain (neither SINGLE_ISSUER nor DEFER_TASKRUN):
 * its completion queue may be waited on and read by any thread.  An
 * io_getevents that must sleep for a context with requests in the ring
 * sleeps in the ring itself (io_uring_enter GETEVENTS with the signal mask
 * and timeout of EXT_ARG, the way pselect sleeps), and reaps the
 * completions it finds into the contexts' rings: the completion reaches
 * the sleeper with no other thread in between, as the kernel's AIO wakes
 * io_getevents from the interrupt.  While such reapers exist the ring's
 * eventfd is off (IORING_CQ_EVENTFD_DISABLED); when there is none (the
 * program reads its ring itself, waits on an IOCB_FLAG_RESFD eventfd,
 * polls io_getevents with a zero timeout) the kernel signals the eventfd
 * at each completion and the ring thread reaps.  The last reaper to leave
 * turns the eventfd back on and hands what came meanwhile to the ring
 * thread: nothing is left in the completion queue unseen.
 *
 * A request io_uring answers -EAGAIN (a regular file opened O_NONBLOCK,
 * which io_uring honours and the kernel's AIO does not) is given to the
 * threads backend, which blocks as the kernel's AIO would.
 */
#include <linux/io_uring.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "aio/aio.h"

#define SQ_ENTRIES 256
#define CQ_ENTRIES 4096
#define RING_ROOM  (CQ_ENTRIES - 64)  /* completions to come or unread, at most */
#define NUDGE_TAG(n) (((uint64_t)(n) << 1) | 1) /* a nudge's user_data (requests: pointers) */
#define SLEEP_SLOTS 64                /* sleepers in the ring at once (more: the futex) */
#define SLOT_TIME(ns) ((uint64_t)(ns) >> 20)  /* ~1 ms units */
#define SLOT_FRESH    954                     /* ~1 s of them */

struct uring {
	int fd;
	unsigned *sq_head, *sq_tail, *sq_array, sq_mask;
	unsigned *cq_head, *cq_tail, cq_mask, *cq_flags;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
	void *sq_map, *cq_map;
	size_t sq_len, cq_len, sqes_len;
};

static struct uring ring = { .fd = -1 };
/* registered with the ring: the kernel signals it at each completion while
 * no reaper is in; io_submit's kicks of the ring thread use it too */
static int evfd = -1;
/* who enters a request (UIPC_AIO_SUBMIT): the ring thread always (the
 * default), the io_submit caller always, or (auto) the caller if it reaps
 * in the ring */
enum { SUBMIT_AUTO, SUBMIT_THREAD, SUBMIT_DIRECT };
static int submit_mode;
static bool waitable;                            /* IORING_FEAT_EXT_ARG: sleepers may wait in it */
static pthread_mutex_t sq_lock = PTHREAD_MUTEX_INITIALIZER;   /* the submission queue */
static pthread_mutex_t reap_lock = PTHREAD_MUTEX_INITIALIZER; /* the completion queue */
static _Atomic unsigned in_ring;                 /* completions to come or unread */
static _Atomic int reapers;                      /* callers that reap before they return */
static struct aio_kiocb *_Atomic pending;        /* for the ring thread, LIFO */
static _Atomic int thread_sleeping;              /* the ring thread waits on evfd */
static _Atomic int setup_state;                  /* futex word: 0, 1 ok, -errno */

/* the ring thread's own: requests waiting for room, oldest first */
static struct aio_kiocb *backlog, *backlog_tail;

/* this thread's io_submit in progress (thread): its requests for the ring
 * thread, newest first, pushed together at its end (aio_uring_kick) */
static __thread struct aio_kiocb *queued, *queued_oldest;
/* this thread's io_submit in progress (direct): requests to enter at its end */
static __thread struct aio_kiocb *batch, *batch_tail;
/* the context this thread sleeps for in the ring (aio_uring_wait), and
 * its slot among the sleepers */
static __thread struct kioctx *waiting_for;
static __thread int t_slot = -1;

/* nudges sent (their count is in their user_data), and the sleepers in
 * the ring: each slot holds the count when its sleeper came (bits 1-32)
 * and when it came (bits 33-63, SLOT_TIME units), bit 0 set (0: free) */
static _Atomic uint32_t nudges_sent;
static _Atomic uint64_t sleepers[SLEEP_SLOTS];
/* this thread sleeps in the ring in io_getevents (auto: it enters its own
 * requests, their completion work finding it there), and has entered some
 * (its interrupted waits may be the kernel's noise, entry/aio.c) */
static __thread bool t_reaper, t_entered;

static long uring_enter(unsigned to_submit, unsigned min_complete, unsigned flags, void *arg,
			size_t argsz)
{
	return sys_raw6(SYS_io_uring_enter, ring.fd, to_submit, min_complete, flags, (long)arg,
			(long)argsz);
}

/* ---- setting the ring up ---- */

static void ring_unmap(struct uring *r)
{
	if (r->sqes)
		sys_munmap(r->sqes, r->sqes_len);
	if (r->cq_map && r->cq_map != r->sq_map)
		sys_munmap(r->cq_map, r->cq_len);
	if (r->sq_map)
		sys_munmap(r->sq_map, r->sq_len);
	if (r->fd >= 0)
		sys_close(r->fd);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

static void *map_ring(int fd, size_t len, off_t off)
{
	void *p = sys_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, off);

	return p == MAP_FAILED ? NULL : p;
}

/* the three mappings of the ring FD set up with P.  0 or -errno. */
static int ring_map(struct uring *r, const struct io_uring_params *p)
{
	char *sq, *cq;

	r->sq_len = p->sq_off.array + p->sq_entries * sizeof(unsigned);
	r->cq_len = p->cq_off.cqes + p->cq_entries * sizeof(struct io_uring_cqe);
	if (p->features & IORING_FEAT_SINGLE_MMAP)
		r->sq_len = r->cq_len = r->sq_len > r->cq_len ? r->sq_len : r->cq_len;
	r->sq_map = map_ring(r->fd, r->sq_len, IORING_OFF_SQ_RING);
	if (!r->sq_map)
		return -ENOMEM;
	r->cq_map = p->features & IORING_FEAT_SINGLE_MMAP ? r->sq_map :
		    map_ring(r->fd, r->cq_len, IORING_OFF_CQ_RING);
	r->sqes_len = p->sq_entries * sizeof(struct io_uring_sqe);
	r->sqes = map_ring(r->fd, r->sqes_len, IORING_OFF_SQES);
	if (!r->cq_map || !r->sqes)
		return -ENOMEM;
	sq = r->sq_map;
	cq = r->cq_map;
	r->sq_head = (unsigned *)(sq + p->sq_off.head);
	r->sq_tail = (unsigned *)(sq + p->sq_off.tail);
	r->sq_mask = *(unsigned *)(sq + p->sq_off.ring_mask);
	r->sq_array = (unsigned *)(sq + p->sq_off.array);
	r->cq_head = (unsigned *)(cq + p->cq_off.head);
	r->cq_tail = (unsigned *)(cq + p->cq_off.tail);
	r->cq_mask = *(unsigned *)(cq + p->cq_off.ring_mask);
	r->cq_flags = p->cq_off.flags ? (unsigned *)(cq + p->cq_off.flags) : NULL;
	r->cqes = (struct io_uring_cqe *)(cq + p->cq_off.cqes);
	for (unsigned i = 0; i < p->sq_entries; i++)   /* slot i is sqe i, always */
		r->sq_array[i] = i;
	return 0;
}

/* io_uring_setup with FLAGS; the fd or -errno */
static int setup_fd(unsigned flags, struct io_uring_params *p)
{
	memset(p, 0, sizeof(*p));
	p->flags = flags | IORING_SETUP_CQSIZE;
	p->cq_entries = CQ_ENTRIES;
	return (int)sys_raw6(SYS_io_uring_setup, SQ_ENTRIES, (long)p, 0, 0, 0, 0);
}

/* the opcodes we use, by the kernel's probe (a kernel too old for one of
 * them is left to the threads) */
static bool ops_supported(int fd)
{
	static const int ops[] = { IORING_OP_READV, IORING_OP_WRITEV, IORING_OP_FSYNC,
				   IORING_OP_NOP };
	/* the probe and its 256 entries (a flexible array) in one buffer */
	_Alignas(struct io_uring_probe) unsigned char
		buf[sizeof(struct io_uring_probe) + 256 * sizeof(struct io_uring_probe_op)];
	struct io_uring_probe *pr = (struct io_uring_probe *)buf;

	memset(buf, 0, sizeof(buf));
	if (sys_raw6(SYS_io_uring_register, fd, IORING_REGISTER_PROBE, (long)pr, 256, 0, 0) < 0)
		return false;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (ops[i] > pr->last_op || !(pr->ops[ops[i]].flags & IO_URING_OP_SUPPORTED))
			return false;
	return true;
}

/*
 * The ring.  COOP_TASKRUN: a program thread that submitted (direct) and
 * runs in user space is not interrupted for its completion work, which runs
 * at its next entry into the kernel (a sleeping one is still woken).  The
 * eventfd is registered so that the kernel signals it.  0 or -errno.
 */
static int ring_setup(void)
{
	struct io_uring_params p;
	int fd = setup_fd(IORING_SETUP_COOP_TASKRUN, &p), err;

	if (fd == -EINVAL)               /* before 5.19 */
		fd = setup_fd(0, &p);
	if (fd < 0)
		return fd;
	ring.fd = fd;
	if (!ops_supported(fd)) {
		ring_unmap(&ring);
		return -EOPNOTSUPP;
	}
	err = ring_map(&ring, &p);
	if (!err && sys_raw6(SYS_io_uring_register, fd, IORING_REGISTER_EVENTFD, (long)&evfd, 1,
			     0, 0) < 0)
		err = -EOPNOTSUPP;
	if (err) {
		ring_unmap(&ring);
		return err;
	}
	/* sleeping in the ring needs EXT_ARG (a timeout and a signal mask)
	 * and the flag that turns the eventfd off */
	waitable = (p.features & IORING_FEAT_EXT_ARG) && ring.cq_flags;
	return 0;
}

/* ---- may this process use io_uring at all? ---- */

/*
 * Under a seccomp filter, io_uring_setup may kill the process (Android's
 * filters trap it) rather than fail, so it is first tried by a throwaway
 * copy of the process: a clone with no shared memory and no exit signal
 * (the program's wait(-1) does not see it), which makes the call and
 * exits.  Without a filter, sysctl kernel.io_uring_disabled and the
 * rest are the setup's own failure.
 */
static bool seccomp_allows_uring(void)
{
	struct io_uring_params p;
	long pid;
	int status = 0;

	if (sys_raw6(SYS_prctl, PR_GET_SECCOMP, 0, 0, 0, 0, 0) != 2)
		return true;
	pid = sys_raw6(SYS_clone, 0, 0, 0, 0, 0, 0);
	if (pid == 0) {
		long fd = setup_fd(0, &p);

		sys_raw6(SYS_exit_group, fd >= 0 ? 0 : 1, 0, 0, 0, 0, 0);
		__builtin_unreachable();
	}
	if (pid < 0)
		return false;
	while (sys_raw6(SYS_wait4, pid, (long)&status, __WCLONE, 0, 0, 0) == -EINTR)
		;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* ---- the submission queue (sq_lock held) ---- */

/* the queue is empty whenever sq_lock is free: each holder enters what it
 * put there before it lets go */
static unsigned sq_unsubmitted(void)
{
	return *ring.sq_tail - __atomic_load_n(ring.sq_head, __ATOMIC_ACQUIRE);
}

/* a free SQE, cleared, or NULL when the queue is full */
static struct io_uring_sqe *sqe_get(void)
{
	struct io_uring_sqe *sqe;

	if (sq_unsubmitted() >= SQ_ENTRIES)
		return NULL;
	sqe = &ring.sqes[*ring.sq_tail & ring.sq_mask];
	memset(sqe, 0, sizeof(*sqe));
	return sqe;
}

static void sqe_publish(void)
{
	__atomic_store_n(ring.sq_tail, *ring.sq_tail + 1, __ATOMIC_RELEASE);
}

/*
 * Enter the queue's SQEs.  How many the kernel took; the others are taken
 * back out of the queue (they are the newest), so that the queue is empty
 * again.  The kernel takes a file reference for each SQE it takes (the
 * request is issued inside the call, or prepared for its worker with the
 * file held), so the program may close its descriptor afterwards.
 */
static unsigned sq_enter(void)
{
	unsigned n = sq_unsubmitted(), done = 0;
	int tries = 0;
	long r;

	while (done < n) {
		r = uring_enter(n - done, 0, 0, NULL, 0);
		if (r > 0) {
			done += (unsigned)r;
			continue;
		}
		/* EAGAIN (no memory for a request now), EBUSY (completions
		 * overflowing, which the room kept should exclude): again */
		if ((r == -EAGAIN || r == -EBUSY || r == -EINTR) && ++tries < 64) {
			sched_yield();
			continue;
		}
		break;
	}
	if (done < n)
		__atomic_store_n(ring.sq_tail, *ring.sq_tail - (n - done), __ATOMIC_RELEASE);
	return done;
}

/* REQ's iovecs past the bytes the inline try already moved (they are
 * REQ's own copy: changed in place) */
static void iov_skip_done(struct aio_kiocb *req)
{
	int64_t skip = req->done;
	int i = 0;

	while (i < req->nr_iov && skip >= (int64_t)req->iov[i].iov_len)
		skip -= (int64_t)req->iov[i++].iov_len;
	req->iov += i;
	req->nr_iov -= i;
	if (req->nr_iov) {
		req->iov[0].iov_base = (char *)req->iov[0].iov_base + skip;
		req->iov[0].iov_len -= (size_t)skip;
	}
}

/* the SQE of REQ: readv, writev, fsync or fdatasync on FD */
static void sqe_fill(struct io_uring_sqe *sqe, struct aio_kiocb *req, int fd)
{
	sqe->fd = fd;
	sqe->user_data = (uintptr_t)req;
	switch (req->opcode) {
	case IOCB_CMD_FSYNC:
	case IOCB_CMD_FDSYNC:
		sqe->opcode = IORING_OP_FSYNC;
		sqe->fsync_flags = req->opcode == IOCB_CMD_FDSYNC ? IORING_FSYNC_DATASYNC : 0;
		return;
	case IOCB_CMD_PREAD:
	case IOCB_CMD_PREADV:
		sqe->opcode = IORING_OP_READV;
		break;
	default:
		sqe->opcode = IORING_OP_WRITEV;
	}
	if (req->done) {              /* from here on, the iovecs start past it */
		iov_skip_done(req);
		req->pos += req->done;
		req->prior += req->done;
		req->done = 0;
	}
	sqe->addr = (uintptr_t)req->iov;
	sqe->len = (unsigned)req->nr_iov;
	sqe->off = (uint64_t)req->pos;
	/* the kernel's AIO drops RWF_HIPRI (no one polls for it); io_uring
	 * would refuse it on a ring that does not poll */
	sqe->rw_flags = req->rw_flags & ~RWF_HIPRI;
}

/* room in the completion queue for N more: true and taken, or false */
static bool room_take(unsigned n)
{
	unsigned cur = atomic_load(&in_ring);

	do {
		if (cur + n > RING_ROOM)
			return false;
	} while (!atomic_compare_exchange_weak(&in_ring, &cur, cur + n));
	return true;
}

/* REQ goes into the queue with descriptor FD (sq_lock held, room taken).
 * Its context's ring_reqs counts it from the moment io_submit gave it to
 * the ring (aio_uring_queue, aio_uring_batch_add), not from here: an
 * io_getevents made before the ring thread enters it (a handler's, while
 * the thread it interrupted is the ring's reaper) must sleep in the ring,
 * where its completion comes, not on the futex that only the ring thread
 * would wake (and does not while a reaper is in). */
static bool sq_put(struct aio_kiocb *req, int fd)
{
	struct io_uring_sqe *sqe = sqe_get();

	if (!sqe)
		return false;
	sqe_fill(sqe, req, fd);
	sqe_publish();
	return true;
}

/* the SQEs of the last N requests put were not taken (they leave the
 * ring): their accounting back */
static void sq_untake(struct aio_kiocb *const *reqs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		atomic_fetch_sub(&reqs[i]->ctx->ring_reqs, 1);
	atomic_fetch_sub(&in_ring, n);
}

/* ---- reapers and the eventfd ---- */

static void kick_thread(void)
{
	uint64_t one = 1;

	if (sys_write(evfd, &one, sizeof(one)) < 0) {
		/* an eventfd write fails only at 2^64 - 1: the thread is awake */
	}
}

static bool cq_nonempty(void)
{
	return __atomic_load_n(ring.cq_tail, __ATOMIC_ACQUIRE) != *ring.cq_head;
}

/* this caller reaps before it returns: the kernel need not signal the
 * eventfd meanwhile */
static void reaper_enter(void)
{
	if (atomic_fetch_add(&reapers, 1) == 0)
		__atomic_or_fetch(ring.cq_flags, IORING_CQ_EVENTFD_DISABLED, __ATOMIC_SEQ_CST);
}

/* the last reaper out turns the eventfd back on; completions that came
 * after its last reap go to the ring thread.  (The kernel stores the
 * queue's tail, then reads the flag after a full barrier (the waitqueue
 * check of its wakeup); we clear the flag, then read the tail after one:
 * one of the two sees the other.) */
static void reaper_leave(void)
{
	if (atomic_fetch_sub(&reapers, 1) != 1)
		return;
	__atomic_and_fetch(ring.cq_flags, ~IORING_CQ_EVENTFD_DISABLED, __ATOMIC_SEQ_CST);
	if (cq_nonempty())
		kick_thread();
}

/* ---- the sleepers and the nudges ----
 *
 * A nudge is a NOP whose completion wakes the threads asleep in the ring
 * for a context whose completion reached it another way.  The kernel's
 * wait counts completions from the queue's head at its entry: a nudge that
 * another thread reaps while a sleeper is still on its way in is lost to
 * it, and that sleeper may sleep with nothing left to wake it.  So a
 * thread that reaps a nudge gives another in its place when some other
 * sleeper came before that nudge was sent (a sleeper that came after it
 * saw the completion count it was sent for).  A nudge sent again is
 * newer than every sleeper there, and a thread that sleeps after sending
 * it comes with a count past it: nudges do not bounce for ever between
 * sleepers.
 */

/* a slot for this sleeper, with the count of nudges sent so far, taken
 * before it looks at its context; -1 when all are taken */
static int sleeper_come(void)
{
	uint64_t v = SLOT_TIME(mono_ns()) << 33 | (uint64_t)atomic_load(&nudges_sent) << 1 | 1;
	uint64_t free;

	for (int i = 0; i < SLEEP_SLOTS; i++) {
		free = 0;
		if (!atomic_load_explicit(&sleepers[i], memory_order_relaxed) &&
		    atomic_compare_exchange_strong(&sleepers[i], &free, v))
			return i;
	}
	return -1;
}

static void sleeper_go(int slot)
{
	if (slot >= 0)
		atomic_store(&sleepers[slot], 0);
}

/*
 * Whether a sleeper other than this thread came before nudge number N, in
 * the last second.  One that came longer ago is inside the kernel's wait,
 * where any completion wakes it: nudges given for it would go round for
 * ever.  (No handler runs inside the sleep, so none leaves it by a jump
 * with its slot held: uipc_call_begin.)
 */
static bool nudge_owed(uint32_t n)
{
	uint64_t v, now = 0;

	for (int i = 0; i < SLEEP_SLOTS; i++) {
		v = atomic_load(&sleepers[i]);
		if (!v || i == t_slot || (int32_t)((uint32_t)(v >> 1) - n) >= 0)
			continue;
		if (!now)
			now = SLOT_TIME(mono_ns());
		if (((now - (v >> 33)) & (~0ULL >> 33)) < SLOT_FRESH)
			return true;
	}
	return false;
}

/* ---- the completion queue (reap_lock held) ---- */

/* REQ's result RES from the ring: its event (the context is woken by the
 * caller), or the threads backend's turn for a file that would not block
 * in io_uring's way.  Whether an event was posted. */
static bool complete_req(struct aio_kiocb *req, int res)
{
	if (res == -EAGAIN && !(req->rw_flags & RWF_NOWAIT) && req->fd >= 0 &&
	    aio_threads_queue(req) == 0)
		return false;
	aio_post(req, res < 0 ? (req->prior ? req->prior : res) : req->prior + res, 0);
	return true;
}

/* every completion there is into its context's ring, each context woken
 * once after its events; how many.  *NUDGED: the newest nudge's number,
 * when it read any */
static unsigned reap_locked(bool *nudged, uint32_t *newest)
{
	unsigned head = *ring.cq_head, tail = __atomic_load_n(ring.cq_tail, __ATOMIC_ACQUIRE);
	struct aio_kiocb *done = NULL, *req;
	unsigned n = 0;

	for (; head != tail; head++, n++) {
		struct io_uring_cqe *cqe = &ring.cqes[head & ring.cq_mask];
		uint64_t tag = cqe->user_data;

		if (tag & 1) {
			if (!*nudged || (int32_t)((uint32_t)(tag >> 1) - *newest) > 0)
				*newest = (uint32_t)(tag >> 1);
			*nudged = true;
			continue;
		}
		req = (struct aio_kiocb *)(uintptr_t)tag;
		atomic_fetch_sub(&req->ctx->ring_reqs, 1);
		if (complete_req(req, cqe->res)) {
			req->next = done;
			done = req;
		}
	}
	__atomic_store_n(ring.cq_head, head, __ATOMIC_RELEASE);
	if (n)
		atomic_fetch_sub(&in_ring, n);
	aio_wake_free(done);
	return n;
}

static _Atomic int backlogged;                   /* the ring thread waits for room */

/* reap (taking the lock); room made for the ring thread's backlog wakes it */
static unsigned reap(void)
{
	bool nudged = false;
	uint32_t newest = 0;
	unsigned n;

	crit_mutex_lock(&reap_lock);     /* a handler calling io_submit waits for the end */
	n = reap_locked(&nudged, &newest);
	crit_mutex_unlock(&reap_lock);
	if (n && atomic_load(&backlogged))
		kick_thread();
	if (nudged && nudge_owed(newest))
		aio_uring_nudge();
	return n;
}

/* a NOP whose completion wakes whoever sleeps in the ring (a sleeper for
 * a context whose event reached its ring some other way) */
void aio_uring_nudge(void)
{
	struct io_uring_sqe *sqe;

	if (!room_take(1))
		return;                  /* the ring is full: completions will come */
	crit_mutex_lock(&sq_lock);
	sqe = sqe_get();
	if (sqe) {
		sqe->opcode = IORING_OP_NOP;
		sqe->user_data = NUDGE_TAG(atomic_fetch_add(&nudges_sent, 1) + 1);
		sqe_publish();
	}
	if (!sqe || !sq_enter())
		atomic_fetch_sub(&in_ring, 1);
	crit_mutex_unlock(&sq_lock);
}

/* ---- the ring thread ---- */

/* the requests io_submit pushed, oldest first, after the backlog */
static void take_pending(void)
{
	struct aio_kiocb *lifo = atomic_exchange(&pending, NULL), *fifo = NULL, *next;

	for (; lifo; lifo = next) {       /* reverse: the stack is newest first */
		next = lifo->next;
		lifo->next = fifo;
		fifo = lifo;
	}
	if (!fifo)
		return;
	if (backlog_tail)
		backlog_tail->next = fifo;
	else
		backlog = fifo;
	for (backlog_tail = fifo; backlog_tail->next; backlog_tail = backlog_tail->next)
		;
}

/* requests the ring did not take (io_uring_enter failing): a worker
 * thread performs them, blocking */
static void to_threads(struct aio_kiocb *const *reqs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (aio_threads_queue(reqs[i]))
			aio_complete(reqs[i], -EAGAIN, 0);
}

/* the backlog into the ring while there is room */
static void submit_backlog(void)
{
	struct aio_kiocb *put[SQ_ENTRIES];
	unsigned n, took;

	take_pending();
	while (backlog) {
		n = 0;
		crit_mutex_lock(&sq_lock);
		while (backlog && n < SQ_ENTRIES && room_take(1)) {
			struct aio_kiocb *req = backlog;

			backlog = req->next;
			if (!backlog)
				backlog_tail = NULL;
			sq_put(req, req->fd);  /* the queue was empty: it fits */
			put[n++] = req;
			if (req->batch_end)
				break;           /* one io_submit's batch per io_uring_enter */
		}
		took = n ? sq_enter() : 0;
		crit_mutex_unlock(&sq_lock);
		if (took < n) {
			sq_untake(put + took, n - took);
			to_threads(put + took, n - took);
		}
		if (!n)
			break;                   /* no room: reaping makes some */
	}
	atomic_store(&backlogged, backlog != NULL);
}

static void publish_setup(int state)
{
	atomic_store(&setup_state, state);
	sys_futex_wake((void *)&setup_state, INT_MAX);
}

/*
 * Submit what io_submit pushed, reap when no reaper is in, sleep on the
 * eventfd: the kernel signals it at each completion while no reaper is
 * in, io_submit when it pushed requests for a sleeping thread.  Its
 * completion work (requests it submitted) wakes it too, and runs inside
 * that read (restarted by the kernel).
 */
static void *uring_main(void *arg)
{
	int err = ring_setup();
	uint64_t v;

	(void)arg;
	publish_setup(err ? err : 1);
	if (err)
		return NULL;
	for (;;) {
		submit_backlog();
		if (!atomic_load(&reapers) && cq_nonempty())
			reap();
		atomic_store(&thread_sleeping, 1);
		if (atomic_load(&pending) || (backlog && atomic_load(&in_ring) < RING_ROOM) ||
		    (!atomic_load(&reapers) && cq_nonempty())) {
			atomic_store(&thread_sleeping, 0);
			continue;
		}
		if (sys_raw6(SYS_read, evfd, (long)&v, sizeof(v), 0, 0, 0) < 0) {
			/* signals are blocked here: no EINTR; nothing else fails */
		}
		atomic_store(&thread_sleeping, 0);
	}
	return NULL;
}

/* ---- what backend.c and submit.c call ---- */

int aio_uring_start(void)
{
	const char *e = getenv("UIPC_AIO_SUBMIT");
	int state;

	if (!seccomp_allows_uring())
		return -EPERM;
	submit_mode = !e || !*e || !strcmp(e, "thread") ? SUBMIT_THREAD :
		      !strcmp(e, "auto") ? SUBMIT_AUTO :
		      !strcmp(e, "direct") ? SUBMIT_DIRECT : SUBMIT_THREAD;
	if (submit_mode == SUBMIT_THREAD && e && *e && strcmp(e, "thread"))
		fprintf(stderr, "uipc: UIPC_AIO_SUBMIT=%s is unknown (auto, thread, direct): "
			"thread\n", e);
	evfd = (int)sys_raw6(SYS_eventfd2, 0, EFD_CLOEXEC, 0, 0, 0, 0);
	if (evfd < 0)
		return evfd;
	atomic_store(&setup_state, 0);
	state = aio_start_thread(uring_main, NULL);
	if (state)
		goto fail;
	while (!(state = atomic_load(&setup_state)))
		sys_raw6(SYS_futex, (long)&setup_state, FUTEX_WAIT, 0, 0, 0, 0);
	if (state == 1)
		return 0;
fail:
	sys_close(evfd);
	evfd = -1;
	return state;
}

/* REQ (counted in ring_reqs) with the rest of this io_submit's */
static void queue_for_thread(struct aio_kiocb *req)
{
	uipc_crit_enter();               /* a handler's io_submit sees the list whole */
	req->batch_end = false;
	req->next = queued;
	queued = req;
	if (!queued_oldest)
		queued_oldest = req;
	uipc_crit_exit();
}

/* the ring thread's: REQ has a descriptor of its own; it goes with the
 * rest of this io_submit's at its end (aio_uring_kick) */
void aio_uring_queue(struct aio_kiocb *req)
{
	atomic_fetch_add(&req->ctx->ring_reqs, 1);
	queue_for_thread(req);
}

/*
 * The end of io_submit: its requests for the ring thread go on the stack
 * together, the newest marked, and the thread enters them with one
 * io_uring_enter, as the kernel's io_submit issues its batch under one
 * plug.  (Entering what several io_submit calls queued meanwhile at once
 * made this VM's disk serve each request more slowly: 0.46 ms against
 * 0.30 at depth 32, docs/aio.md.)
 */
void aio_uring_kick(void)
{
	struct aio_kiocb *newest, *oldest, *head;

	uipc_crit_enter();
	newest = queued;
	oldest = queued_oldest;
	queued = queued_oldest = NULL;
	uipc_crit_exit();
	if (newest) {
		newest->batch_end = true;
		head = atomic_load(&pending);
		do
			oldest->next = head;
		while (!atomic_compare_exchange_weak(&pending, &head, newest));
	}
	if (atomic_load(&pending) && atomic_exchange(&thread_sleeping, 0))
		kick_thread();
}

bool aio_uring_direct(void)
{
	return submit_mode == SUBMIT_DIRECT || (submit_mode == SUBMIT_AUTO && t_reaper);
}

bool aio_uring_entered(void)
{
	return t_entered;
}

void aio_uring_not_reaper(void)
{
	t_reaper = false;
}

/* io_submit (direct): REQ enters the ring with the program's FD at the end
 * of this io_submit, which still holds FD */
void aio_uring_batch_add(struct aio_kiocb *req, int fd)
{
	atomic_fetch_add(&req->ctx->ring_reqs, 1);
	req->fd = -1;
	req->borrowed_fd = fd;
	req->next = NULL;
	uipc_crit_enter();               /* a handler's io_submit sees the list whole */
	if (batch_tail)
		batch_tail->next = req;
	else
		batch = req;
	batch_tail = req;
	uipc_crit_exit();
}

/* a request of this io_submit that the ring could not take now: with a
 * descriptor of its own, for the ring thread (no room: RING_OK, still
 * counted in ring_reqs) or a worker (the ring refused it, uncounted) */
static void hand_off(struct aio_kiocb *req, bool ring_ok)
{
	req->fd = (int)sys_raw6(SYS_fcntl, req->borrowed_fd, F_DUPFD_CLOEXEC, 0, 0, 0, 0);
	if (req->fd < 0) {
		int err = req->fd;

		req->fd = -1;
		if (ring_ok)
			atomic_fetch_sub(&req->ctx->ring_reqs, 1);
		aio_complete(req, err, 0);
	} else if (ring_ok) {
		queue_for_thread(req);
	} else {
		to_threads(&req, 1);
	}
}

/* the end of io_submit (direct): this thread enters its requests, then
 * reaps the completions that its entering posted */
void aio_uring_batch_flush(void)
{
	struct aio_kiocb *put[SQ_ENTRIES], *req, *list;
	unsigned n, took;

	/* the list is taken whole first: a handler that runs while this
	 * enters it (at sq_lock's release) makes and flushes a batch of its
	 * own */
	uipc_crit_enter();
	list = batch;
	batch = batch_tail = NULL;
	uipc_crit_exit();
	if (!list)
		return;
	reaper_enter();
	while (list) {
		n = 0;
		crit_mutex_lock(&sq_lock);
		while (list && n < SQ_ENTRIES && room_take(1)) {
			req = list;
			list = req->next;
			sq_put(req, req->borrowed_fd);
			put[n++] = req;
		}
		took = n ? sq_enter() : 0;
		crit_mutex_unlock(&sq_lock);
		if (took)
			t_entered = true;
		if (took < n) {
			sq_untake(put + took, n - took);
			for (unsigned i = took; i < n; i++)
				hand_off(put[i], false);
		}
		if (!n)
			break;
	}
	while ((req = list)) {            /* no room in the ring */
		list = req->next;
		hand_off(req, true);
	}
	if (cq_nonempty())
		reap();
	reaper_leave();
}

/* may io_getevents sleep in the ring for CTX (it has requests there)? */
bool aio_uring_can_wait(struct kioctx *ctx)
{
	return waitable && atomic_load(&ctx->ring_reqs) > 0;
}

bool aio_uring_waited(struct kioctx *ctx)
{
	return atomic_load(&ctx->ring_waiters) > (waiting_for == ctx ? 1u : 0u);
}

/*
 * io_getevents's sleep for CTX in the ring, SEQ being CTX's completion
 * count when it last read the context's ring: reap, and sleep until a
 * completion (of any context) unless CTX's count moved, then reap again.
 * The signal mask is the caller's throughout its sleep only (pselect's
 * way: a handler that runs before the sleep begins is seen here, one
 * whose signal comes during it ends it, and runs when io_getevents has
 * returned: uipc_call_begin).  0, -ETIMEDOUT or -EINTR.
 */
int aio_uring_wait(struct kioctx *ctx, uint32_t seq, int64_t deadline, unsigned hand0,
		   unsigned cont0)
{
	struct io_uring_getevents_arg arg;
	struct __kernel_timespec ts;
	struct timespec rel;
	int ret = 0, outer_slot = t_slot, slot;
	sigset_t old;
	long r;

	uipc_crit_enter();               /* a handler's wait takes a slot of its own */
	slot = sleeper_come();
	t_slot = slot;
	uipc_crit_exit();
	if (slot < 0)
		return aio_wait_seq(ctx, seq, NULL, 0, deadline, hand0, cont0);
	reaper_enter();
	atomic_fetch_add(&ctx->ring_waiters, 1);
	waiting_for = ctx;
	if (cq_nonempty())
		reap();
	if (atomic_load(&ctx->seq) != seq)
		goto out;
	ret = aio_sleep_begin(deadline, hand0, cont0, &rel, &old);
	if (ret)
		goto out;
	t_reaper = true;
	memset(&arg, 0, sizeof(arg));
	arg.sigmask = (uint64_t)(uintptr_t)&old;
	arg.sigmask_sz = _NSIG / 8;
	if (deadline >= 0) {
		ts.tv_sec = rel.tv_sec;
		ts.tv_nsec = rel.tv_nsec;
		arg.ts = (uint64_t)(uintptr_t)&ts;
	}
	r = uring_enter(0, 1, IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &arg, sizeof(arg));
	if (aio_sleep_end(&old, hand0, cont0))
		ret = -EINTR;
	else if (r == -ETIME)
		ret = -ETIMEDOUT;
	else if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
		waitable = false;        /* the ring refuses to be waited on: the futex from now on */
	/* awake: the nudges it reaps now may be owed to the others */
	uipc_crit_enter();
	sleeper_go(slot);
	slot = t_slot = -1;
	uipc_crit_exit();
	if (cq_nonempty())
		reap();
out:
	uipc_crit_enter();
	sleeper_go(slot);
	t_slot = outer_slot;
	uipc_crit_exit();
	waiting_for = NULL;
	atomic_fetch_sub(&ctx->ring_waiters, 1);
	reaper_leave();
	return ret;
}

/* the ring's and the eventfd's descriptors are uipc's, not the program's:
 * entry/'s close and close_range leave them alone (a daemon closing every
 * fd would otherwise leave the ring thread without its ring) */
bool aio_fd_guarded(int fd)
{
	return fd >= 0 && (fd == __atomic_load_n(&ring.fd, __ATOMIC_RELAXED) ||
			   fd == __atomic_load_n(&evfd, __ATOMIC_RELAXED) ||
			   fd == aio_kaio_guarded_fd());
}

int aio_fd_next_guarded(unsigned lo)
{
	int r = __atomic_load_n(&ring.fd, __ATOMIC_RELAXED);
	int fds[3] = { r, __atomic_load_n(&evfd, __ATOMIC_RELAXED), aio_kaio_guarded_fd() };
	int best = INT_MAX;

	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0 && (unsigned)fds[i] >= lo && fds[i] < best)
			best = fds[i];
	return best;
}

/* the child of a fork has no ring thread: the parent's ring goes (the
 * parent completes its own requests) and the next request starts anew */
void aio_uring_fork_child(void)
{
	if (ring.fd >= 0)
		ring_unmap(&ring);
	if (evfd >= 0)
		sys_close(evfd);
	evfd = -1;
	pthread_mutex_init(&sq_lock, NULL);
	pthread_mutex_init(&reap_lock, NULL);
	atomic_store(&pending, NULL);
	atomic_store(&thread_sleeping, 0);
	atomic_store(&in_ring, 0);
	atomic_store(&reapers, 0);
	atomic_store(&backlogged, 0);
	backlog = backlog_tail = NULL;
	batch = batch_tail = NULL;
	queued = queued_oldest = NULL;
	waiting_for = NULL;
	t_slot = -1;
	for (int i = 0; i < SLEEP_SLOTS; i++)
		atomic_store(&sleepers[i], 0);
	t_reaper = t_entered = false;
	waitable = false;
}
