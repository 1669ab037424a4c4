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
 * One thread of uipc's owns the ring and is its only submitter; the
 * program's threads never enter it.  Why: io_uring ties a request to the
 * task that submitted it (its completion work runs on that task, and its
 * queued work is cancelled when that task exits or execs), where the
 * kernel's AIO request outlives the thread that submitted it.  So
 * io_submit pushes requests on a lock-free stack and, only when the ring's
 * thread sleeps, kicks it through an eventfd that the ring itself reads
 * (an IORING_OP_READ always armed): the thread sleeps in io_uring_enter
 * until a completion or a kick, never polls.  It moves the requests to the
 * submission queue in their order, reaps the completion queue and puts
 * each event in its context's ring (aio_complete), which wakes a sleeping
 * io_getevents.  The ring is made with SINGLE_ISSUER | DEFER_TASKRUN where
 * the kernel has them (completion work runs when the thread asks for it),
 * else plain.
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
#define CQ_ENTRIES 1024
#define KICK_TAG   0      /* user_data of the eventfd read (requests are pointers) */

struct uring {
	int fd;
	unsigned *sq_head, *sq_tail, *sq_array, sq_mask;
	unsigned *cq_head, *cq_tail, cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
	void *sq_map, *cq_map;
	size_t sq_len, cq_len, sqes_len;
};

static struct uring ring = { .fd = -1 };
static int kick_fd = -1;
static uint64_t kick_buf;                       /* the eventfd read's target */
static struct aio_kiocb *_Atomic pending;       /* pushed by io_submit, LIFO */
static _Atomic int sleeping;                    /* the ring's thread waits in the kernel */
static _Atomic int setup_state;                 /* futex word: 0, 1 ok, -errno */

/* the ring thread's own (never touched elsewhere) */
static struct aio_kiocb *backlog, *backlog_tail; /* FIFO, waiting for room */
static unsigned inflight;                        /* requests in the ring */

static long uring_enter(unsigned to_submit, unsigned min_complete, unsigned flags)
{
	return sys_raw6(SYS_io_uring_enter, ring.fd, to_submit, min_complete, flags, 0, 0);
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
				   IORING_OP_READ };
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

/* the ring, made by the thread that will submit to it.  0 or -errno. */
static int ring_setup(void)
{
	struct io_uring_params p;
	int fd = setup_fd(IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, &p), err;

	if (fd == -EINVAL)               /* before 6.1 */
		fd = setup_fd(0, &p);
	if (fd < 0)
		return fd;
	ring.fd = fd;
	if (!ops_supported(fd)) {
		ring_unmap(&ring);
		return -EOPNOTSUPP;
	}
	err = ring_map(&ring, &p);
	if (err)
		ring_unmap(&ring);
	return err;
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

/* ---- the submission queue (ring thread) ---- */

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

/* the eventfd read that wakes the thread when io_submit kicks */
static bool arm_kick(void)
{
	struct io_uring_sqe *sqe = sqe_get();

	if (!sqe)
		return false;
	sqe->opcode = IORING_OP_READ;
	sqe->fd = kick_fd;
	sqe->addr = (uintptr_t)&kick_buf;
	sqe->len = sizeof(kick_buf);
	sqe->off = (uint64_t)-1;           /* no position: an eventfd */
	sqe->user_data = KICK_TAG;
	sqe_publish();
	return true;
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

/* the SQE of REQ: readv, writev, fsync or fdatasync on its own fd */
static void sqe_fill(struct io_uring_sqe *sqe, struct aio_kiocb *req)
{
	sqe->fd = req->fd;
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

/* move requests to the submission queue while the completion queue has
 * room for their events (one place kept for the kick's) */
static void fill_sq(void)
{
	struct io_uring_sqe *sqe;

	take_pending();
	while (backlog && inflight < CQ_ENTRIES - 1 && (sqe = sqe_get())) {
		struct aio_kiocb *req = backlog;

		backlog = req->next;
		if (!backlog)
			backlog_tail = NULL;
		sqe_fill(sqe, req);
		sqe_publish();
		inflight++;
	}
}

/* ---- the completion queue (ring thread) ---- */

/* REQ's result RES from the ring: its event (the context is woken by the
 * caller), or the threads backend's turn for a file that would not block
 * in io_uring's way.  Whether an event was posted. */
static bool complete_req(struct aio_kiocb *req, int res)
{
	if (res == -EAGAIN && !(req->rw_flags & RWF_NOWAIT) && aio_threads_queue(req) == 0)
		return false;
	aio_post(req, res < 0 ? (req->prior ? req->prior : res) : req->prior + res, 0);
	return true;
}

/* every completion there is, each context woken once after its events;
 * how many */
static unsigned reap_cq(void)
{
	unsigned head = *ring.cq_head, tail = __atomic_load_n(ring.cq_tail, __ATOMIC_ACQUIRE);
	struct aio_kiocb *done = NULL, *req;
	unsigned n = 0;
	bool rearm = false;

	for (; head != tail; head++, n++) {
		struct io_uring_cqe *cqe = &ring.cqes[head & ring.cq_mask];
		uint64_t tag = cqe->user_data;

		if (tag == KICK_TAG) {
			rearm = true;
			continue;
		}
		inflight--;
		req = (struct aio_kiocb *)(uintptr_t)tag;
		if (complete_req(req, cqe->res)) {
			req->next = done;
			done = req;
		}
	}
	__atomic_store_n(ring.cq_head, head, __ATOMIC_RELEASE);
	for (; done; done = req) {
		req = done->next;
		if (!req || req->ctx != done->ctx)
			aio_wake(done->ctx);
		aio_req_free(done);
	}
	if (rearm)
		while (!arm_kick())
			uring_enter(sq_unsubmitted(), 0, IORING_ENTER_GETEVENTS);
	return n;
}

/* submit what is queued, waiting for a completion or not */
static void submit(bool wait)
{
	long r = uring_enter(sq_unsubmitted(), wait ? 1 : 0, IORING_ENTER_GETEVENTS);

	/* EBUSY/EAGAIN: completions to reap first; EINTR: again, at once */
	(void)r;
}

static void publish_setup(int state)
{
	atomic_store(&setup_state, state);
	sys_futex_wake((void *)&setup_state, INT_MAX);
}

static void *uring_main(void *arg)
{
	int err = ring_setup();

	(void)arg;
	if (!err && !arm_kick())
		err = -ENOMEM;
	publish_setup(err ? err : 1);
	if (err)
		return NULL;
	for (;;) {
		fill_sq();
		if (reap_cq()) {
			submit(false);
			continue;
		}
		atomic_store(&sleeping, 1);
		if (atomic_load(&pending)) {
			atomic_store(&sleeping, 0);
			continue;
		}
		submit(true);
		atomic_store(&sleeping, 0);
	}
	return NULL;
}

/* ---- what backend.c calls ---- */

int aio_uring_start(void)
{
	int state;

	if (!seccomp_allows_uring())
		return -EPERM;
	kick_fd = (int)sys_raw6(SYS_eventfd2, 0, EFD_CLOEXEC, 0, 0, 0, 0);
	if (kick_fd < 0)
		return kick_fd;
	atomic_store(&setup_state, 0);
	state = aio_start_thread(uring_main, NULL);
	if (state)
		goto fail;
	while (!(state = atomic_load(&setup_state)))
		sys_raw6(SYS_futex, (long)&setup_state, FUTEX_WAIT, 0, 0, 0, 0);
	if (state == 1)
		return 0;
fail:
	sys_close(kick_fd);
	kick_fd = -1;
	return state;
}

void aio_uring_queue(struct aio_kiocb *req)
{
	struct aio_kiocb *head = atomic_load(&pending);

	do
		req->next = head;
	while (!atomic_compare_exchange_weak(&pending, &head, req));
}

void aio_uring_kick(void)
{
	uint64_t one = 1;

	if (atomic_load(&pending) && atomic_exchange(&sleeping, 0) &&
	    sys_write(kick_fd, &one, sizeof(one)) < 0) {
		/* an eventfd write fails only at 2^64 - 1: the thread is awake */
	}
}

/* the ring's and the kick's descriptors are uipc's, not the program's:
 * entry/'s close and close_range leave them alone (a daemon closing every
 * fd would otherwise leave the ring thread without its ring) */
bool aio_fd_guarded(int fd)
{
	return fd >= 0 && (fd == __atomic_load_n(&ring.fd, __ATOMIC_RELAXED) ||
			   fd == __atomic_load_n(&kick_fd, __ATOMIC_RELAXED));
}

int aio_fd_next_guarded(unsigned lo)
{
	int r = __atomic_load_n(&ring.fd, __ATOMIC_RELAXED);
	int k = __atomic_load_n(&kick_fd, __ATOMIC_RELAXED), best = INT_MAX;

	if (r >= 0 && (unsigned)r >= lo)
		best = r;
	if (k >= 0 && (unsigned)k >= lo && k < best)
		best = k;
	return best;
}

/* the child of a fork has no ring thread: the parent's ring goes (the
 * parent completes its own requests) and the next request starts anew */
void aio_uring_fork_child(void)
{
	if (ring.fd >= 0)
		ring_unmap(&ring);
	if (kick_fd >= 0)
		sys_close(kick_fd);
	kick_fd = -1;
	atomic_store(&pending, NULL);
	atomic_store(&sleeping, 0);
	backlog = backlog_tail = NULL;
	inflight = 0;
}
