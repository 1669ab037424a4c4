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
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "aio/aio.h"

#define SQ_ENTRIES 256
#define CQ_ENTRIES 4096
#define RING_ROOM  (CQ_ENTRIES - 64)  /* completions to come or unread, at most */
#define TAG_NUDGE  1                  /* user_data of a NOP (requests are pointers) */
#define FILE_SLOTS 1024               /* the ring's table of files (requests not yet entered) */

struct uring {
	int fd;
	unsigned *sq_head, *sq_tail, *sq_array, *sq_flags, sq_mask;
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
/* the ring thread sleeps here, on evfd (edge-triggered: the count is
 * never read); an epoll_wait ends with EINTR when its completion work ran */
static int epfd = -1;
/* who enters a request (UIPC_AIO_SUBMIT): the ring thread always (the
 * default), the io_submit caller always, or (auto) the caller if it reaps
 * in the ring */
enum { SUBMIT_AUTO, SUBMIT_THREAD, SUBMIT_DIRECT };
static int submit_mode;
static bool waitable;                            /* IORING_FEAT_EXT_ARG: sleepers may wait in it */
static bool taskrun_flag;                        /* IORING_SQ_TASKRUN tells of completion work */
static bool fixed_files;                         /* the ring has a table of FILE_SLOTS files */
static _Atomic uint64_t slot_used[FILE_SLOTS / 64];
static pthread_mutex_t sq_lock = PTHREAD_MUTEX_INITIALIZER;   /* the submission queue */
static pthread_mutex_t reap_lock = PTHREAD_MUTEX_INITIALIZER; /* the completion queue */
static _Atomic unsigned in_ring;                 /* completions to come or unread */
static _Atomic int reapers;                      /* callers that reap before they return */
static struct aio_kiocb *_Atomic pending;        /* for the ring thread, LIFO */
static _Atomic int thread_sleeping;              /* the ring thread waits on evfd */
/* requests completed by a program thread's reap, for the ring thread to
 * free (the close of their descriptors off the program's way), LIFO */
static struct aio_kiocb *_Atomic to_free;
static __thread bool t_ring_thread;
static _Atomic int setup_state;                  /* futex word: 0, 1 ok, -errno */

/* the ring thread's own: requests waiting for room, oldest first */
static struct aio_kiocb *backlog, *backlog_tail;

/* this thread's io_submit in progress (thread): its requests for the ring
 * thread, newest first, pushed together at its end (aio_uring_kick) */
static __thread struct aio_kiocb *queued, *queued_oldest;
/* this thread's io_submit in progress (direct): requests to enter at its end */
static __thread struct aio_kiocb *batch, *batch_tail;
/* the context this thread sleeps for in the ring (aio_uring_wait) */
static __thread struct kioctx *waiting_for;
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
	r->sq_flags = (unsigned *)(sq + p->sq_off.flags);
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
 * The ring's table of files, empty (5.19 and later): a request waiting for
 * the ring thread holds its file there, the way the kernel's AIO holds a
 * reference to it, rather than by a dup in the program's descriptor table
 * (seen in /proc/self/fd, by RLIMIT_NOFILE, by a fork child).
 */
static bool files_table(int fd)
{
	struct io_uring_rsrc_register rr = { .nr = FILE_SLOTS, .flags = IORING_RSRC_REGISTER_SPARSE };

	return sys_raw6(SYS_io_uring_register, fd, IORING_REGISTER_FILES2, (long)&rr, sizeof(rr),
			0, 0) == 0;
}

/*
 * The ring.  COOP_TASKRUN: a program thread that submitted (direct) and
 * runs in user space is not interrupted for its completion work, which runs
 * at its next entry into the kernel (a sleeping one is still woken); nor
 * is the ring thread while it spins, which TASKRUN_FLAG's IORING_SQ_TASKRUN
 * tells it.  The eventfd is registered so that the kernel signals it.
 * 0 or -errno.
 */
static int ring_setup(void)
{
	struct io_uring_params p;
	int fd = setup_fd(IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG, &p), err;

	taskrun_flag = fd >= 0;
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
	fixed_files = files_table(fd);
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

/* ---- the table of files ---- */

/* a free slot of the table, taken, or -1 */
static int slot_get(void)
{
	for (unsigned w = 0; w < FILE_SLOTS / 64; w++) {
		uint64_t cur = atomic_load_explicit(&slot_used[w], memory_order_relaxed);

		while (~cur)
			if (atomic_compare_exchange_weak(&slot_used[w], &cur,
							 cur | 1ull << __builtin_ctzll(~cur)))
				return (int)(w * 64 + (unsigned)__builtin_ctzll(~cur));
	}
	return -1;
}

/* N slots from FIRST hold the files FDS (-1: none).  How many were set,
 * or -errno. */
static long slots_set(unsigned first, const int *fds, unsigned n)
{
	struct io_uring_files_update up = { .offset = first, .fds = (uint64_t)(uintptr_t)fds };

	return sys_raw6(SYS_io_uring_register, ring.fd, IORING_REGISTER_FILES_UPDATE, (long)&up, n,
			0, 0);
}

/*
 * The slots of REQS (those that have one) emptied and free again: their
 * requests are complete or will not enter the ring.  (Not as soon as they
 * entered: io_uring may look the file up only when its worker performs the
 * request, an fsync for one.)  Emptied in runs of consecutive slots, one
 * call each.
 */
static void slots_release(struct aio_kiocb *const *reqs, unsigned n)
{
	static const int none[SQ_ENTRIES] = { [0 ... SQ_ENTRIES - 1] = -1 };
	int s[SQ_ENTRIES];
	unsigned k = 0, i, j;

	for (i = 0; i < n; i++)
		if (reqs[i]->slot >= 0) {
			int v = reqs[i]->slot;

			reqs[i]->slot = -1;
			for (j = k++; j > 0 && s[j - 1] > v; j--)   /* sorted */
				s[j] = s[j - 1];
			s[j] = v;
		}
	for (i = 0; i < k; i = j) {
		for (j = i + 1; j < k && s[j] == s[j - 1] + 1; j++)
			;
		slots_set((unsigned)s[i], none, j - i);
		for (unsigned t = i; t < j; t++)
			atomic_fetch_and(&slot_used[s[t] / 64], ~(1ull << (s[t] % 64)));
	}
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
	sqe->fd = req->slot >= 0 ? req->slot : fd;
	sqe->flags = req->slot >= 0 ? IOSQE_FIXED_FILE : 0;
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

/* REQ goes into the queue with descriptor FD (sq_lock held, room taken) */
static bool sq_put(struct aio_kiocb *req, int fd)
{
	struct io_uring_sqe *sqe = sqe_get();

	if (!sqe)
		return false;
	atomic_fetch_add(&req->ctx->ring_reqs, 1);
	sqe_fill(sqe, req, fd);
	sqe_publish();
	return true;
}

/* the SQEs of the last N requests put were not taken: their accounting back */
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

/* ---- the completion queue (reap_lock held) ---- */

/* the completed requests linked by next from HEAD freed: their slots
 * (a call per run of them), their descriptors, their memory */
static void reqs_free(struct aio_kiocb *head)
{
	struct aio_kiocb *some[SQ_ENTRIES], *req = head, *next;
	unsigned n;

	while (fixed_files && req) {
		for (n = 0; req && n < SQ_ENTRIES; req = req->next)
			if (req->slot >= 0)
				some[n++] = req;
		slots_release(some, n);
	}
	for (req = head; req; req = next) {
		next = req->next;
		aio_req_free(req);
	}
}

/*
 * Requests whose events are posted, linked by next from HEAD to TAIL.
 * Their descriptors' close (and their memory) is the ring thread's when a
 * program thread reaps and the ring thread is awake (it spins for the
 * program's next requests): io_getevents would otherwise close a
 * descriptor per request before it returns (a burst of 32 at depth 32),
 * while the disk waits for the program's next requests.  A sleeping ring
 * thread is not woken for it (on one CPU that wake-up would cost the
 * program more than the closes): the reaper closes them itself.
 */
static void free_reqs(struct aio_kiocb *head, struct aio_kiocb *tail)
{
	struct aio_kiocb *top;

	if (!head)
		return;
	if (!t_ring_thread && !atomic_load(&thread_sleeping)) {
		top = atomic_load(&to_free);
		do
			tail->next = top;
		while (!atomic_compare_exchange_weak(&to_free, &top, head));
		/* it went to sleep meanwhile (it looks at to_free after it says
		 * so, we after we pushed: one of the two sees the other) */
		if (atomic_exchange(&thread_sleeping, 0))
			kick_thread();
		return;
	}
	reqs_free(head);
}

/* the ring thread's: what program threads' reaps left to free */
static void free_deferred(void)
{
	reqs_free(atomic_exchange(&to_free, NULL));
}

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
 * once after its events; how many */
static unsigned reap_locked(void)
{
	unsigned head = *ring.cq_head, tail = __atomic_load_n(ring.cq_tail, __ATOMIC_ACQUIRE);
	struct aio_kiocb *done = NULL, *req, *dead = NULL, *dead_tail = NULL;
	unsigned n = 0;

	for (; head != tail; head++, n++) {
		struct io_uring_cqe *cqe = &ring.cqes[head & ring.cq_mask];
		uint64_t tag = cqe->user_data;

		if (tag == TAG_NUDGE)
			continue;
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
	for (; done; done = req) {
		req = done->next;
		if (!req || req->ctx != done->ctx)
			aio_wake(done->ctx);
		done->next = dead;
		dead = done;
		if (!dead_tail)
			dead_tail = done;
	}
	free_reqs(dead, dead_tail);
	return n;
}

static _Atomic int backlogged;                   /* the ring thread waits for room */

/* reap (taking the lock); room made for the ring thread's backlog wakes it */
static unsigned reap(void)
{
	unsigned n;

	uipc_crit_enter();               /* a handler calling io_submit waits for the end */
	pthread_mutex_lock(&reap_lock);
	n = reap_locked();
	pthread_mutex_unlock(&reap_lock);
	uipc_crit_exit();
	if (n && atomic_load(&backlogged))
		kick_thread();
	return n;
}

/* a NOP whose completion wakes whoever sleeps in the ring (a sleeper for
 * a context whose event reached its ring some other way) */
void aio_uring_nudge(void)
{
	struct io_uring_sqe *sqe;

	if (!room_take(1))
		return;                  /* the ring is full: completions will come */
	uipc_crit_enter();
	pthread_mutex_lock(&sq_lock);
	sqe = sqe_get();
	if (sqe) {
		sqe->opcode = IORING_OP_NOP;
		sqe->user_data = TAG_NUDGE;
		sqe_publish();
	}
	if (!sqe || !sq_enter())
		atomic_fetch_sub(&in_ring, 1);
	pthread_mutex_unlock(&sq_lock);
	uipc_crit_exit();
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
 * thread performs them, blocking (one whose file was in the table, which
 * no descriptor names: -EAGAIN in its event) */
static void to_threads(struct aio_kiocb *const *reqs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (reqs[i]->fd < 0 || aio_threads_queue(reqs[i]))
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
		pthread_mutex_lock(&sq_lock);
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
		pthread_mutex_unlock(&sq_lock);
		if (took < n) {
			sq_untake(put + took, n - took);
			slots_release(put + took, n - took);
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

/* ---- the ring thread's spin ----
 *
 * Each request goes through the ring thread and each completion's work
 * runs on it; asleep, it is woken for both: two thread wake-ups the
 * kernel's AIO does not have, during which this VM's disk (it completes
 * its queue in bursts) stands idle.  So after it ran completion work (the
 * program is about to reap and submit again) and after it entered a batch
 * (more io_submit calls of the burst follow), it looks for new requests
 * for a while before it sleeps: a request found so costs a wake-up on
 * neither side (io_submit kicks only a sleeping thread).  Bounded and
 * adaptive (issue 18: a spin must not cost a loaded machine more than it
 * saves):
 * - at most spin.ns since the last work found: a spin that found nothing
 *   since the thread woke halves it (below SPIN_MIN_NS: none, but a probe
 *   every 32nd sleep), one that found work doubles it, up to SPIN_MAX_NS
 *   (the program's wake-up, reap and next io_submit);
 * - none while the thread may run on one CPU only (the program could not
 *   run while it spins);
 * - a spin that was off its CPU for SPIN_LATE_NS (another task wanted the
 *   CPU) counts as late in issue 18's rule (core/backoff.c: 3 of the last
 *   8 stop the spins for 16 ms, doubling up to 1 s).
 * While it spins, completion work waits for the thread's next system call
 * (COOP_TASKRUN sends no interrupt): IORING_SQ_TASKRUN ends the spin.
 */
#define SPIN_MAX_NS      50000LL
#define SPIN_MIN_NS       2000LL
#define SPIN_LATE_NS    200000LL
#define SPIN_CPUS_EVERY 1000000000LL   /* the affinity looked at again */

static struct {
	int64_t ns;                      /* the next spin's bound; 0: sleep at once */
	unsigned skipped;                /* sleeps without a spin, for the probe */
	int64_t cpus_at;                 /* when the affinity was looked at */
	bool one_cpu;
	struct late_policy late;
} spin = { .ns = SPIN_MAX_NS };

enum { SPIN_NOTHING, SPIN_REQUESTS, SPIN_TASKRUN };

static bool on_one_cpu(int64_t now)
{
	cpu_set_t set;

	if (now - spin.cpus_at >= SPIN_CPUS_EVERY || !spin.cpus_at) {
		spin.cpus_at = now;
		spin.one_cpu = sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) < 2;
	}
	return spin.one_cpu;
}

/* the bound of a spin now (ns), 0: none */
static int64_t spin_bound(int64_t now)
{
	if (on_one_cpu(now) || !late_policy_allows(&spin.late, now))
		return 0;
	if (spin.ns)
		return spin.ns;
	return ++spin.skipped % 32 ? 0 : SPIN_MAX_NS;
}

/* IORING_SQ_TASKRUN is set: completion work waits for some thread */
static bool taskrun_waits(void)
{
	return taskrun_flag && (__atomic_load_n(ring.sq_flags, __ATOMIC_RELAXED) & IORING_SQ_TASKRUN);
}

/* what is there to do now without sleeping; TASKRUN_OURS: a set
 * IORING_SQ_TASKRUN may be the ring thread's completion work (not once
 * running its own left the flag set: the flag is the ring's, and a program
 * thread that entered requests itself (auto, direct) runs its own work at
 * its next system call) */
static int work_ready(bool taskrun_ours)
{
	if (atomic_load_explicit(&pending, memory_order_relaxed) ||
	    atomic_load_explicit(&to_free, memory_order_relaxed))
		return SPIN_REQUESTS;
	if (taskrun_ours && taskrun_waits())
		return SPIN_TASKRUN;
	return SPIN_NOTHING;
}

/* look for work for a while (above); FOUND: work was found since the
 * thread woke (a spin that ends empty after it costs the budget nothing:
 * the burst is over) */
static int spin_for_work(bool found, bool taskrun_ours)
{
	int64_t start = mono_ns(), last = start, now, bound = spin_bound(start);
	int what = SPIN_NOTHING;

	for (unsigned i = 1; bound; i++) {
		if ((what = work_ready(taskrun_ours)) != SPIN_NOTHING) {
			spin.ns = spin.ns * 2 < SPIN_MIN_NS ? SPIN_MIN_NS :
				  spin.ns * 2 > SPIN_MAX_NS ? SPIN_MAX_NS : spin.ns * 2;
			break;
		}
		cpu_relax();
		if (i % 32)
			continue;
		now = mono_ns();
		if (now - last > SPIN_LATE_NS) {
			late_policy_note(&spin.late, now, true);
			return SPIN_NOTHING;
		}
		last = now;
		if (now - start > bound) {
			if (!found)
				spin.ns = spin.ns / 2 < SPIN_MIN_NS ? 0 : spin.ns / 2;
			break;
		}
	}
	if (bound)
		late_policy_note(&spin.late, mono_ns(), false);
	return what;
}

/* sleep until io_submit kicks, the kernel signals a completion (no reaper
 * in), or completion work of the thread's ran (EINTR) */
static void sleep_for_work(void)
{
	struct epoll_event ev;

	if (sys_raw6(SYS_epoll_pwait, epfd, (long)&ev, 1, -1, 0, 0) < 0) {
		/* EINTR: completion work ran (signals are blocked here) */
	}
}

/*
 * Submit what io_submit pushed, reap when no reaper is in, spin for more
 * (above), sleep on the eventfd: the kernel signals it at each completion
 * while no reaper is in, io_submit when it pushed requests for a sleeping
 * thread.  Its completion work (requests it submitted) wakes it too, and
 * runs inside the sleep, which it ends.
 */
static void *uring_main(void *arg)
{
	int err = ring_setup();
	bool found = false;              /* work found by spinning since the last sleep */
	bool taskrun_ours = true;        /* IORING_SQ_TASKRUN may be ours (work_ready) */

	(void)arg;
	publish_setup(err ? err : 1);
	if (err)
		return NULL;
	t_ring_thread = true;
	for (;;) {
		submit_backlog();
		free_deferred();
		if (!atomic_load(&reapers) && cq_nonempty())
			reap();
		switch (spin_for_work(found, taskrun_ours)) {
		case SPIN_TASKRUN:           /* run it: the completions are posted */
			uring_enter(0, 0, IORING_ENTER_GETEVENTS, NULL, 0);
			taskrun_ours = !taskrun_waits();
			/* fallthrough */
		case SPIN_REQUESTS:
			found = true;
			continue;
		}
		atomic_store(&thread_sleeping, 1);
		if (atomic_load(&pending) || atomic_load(&to_free) ||
		    (backlog && atomic_load(&in_ring) < RING_ROOM) ||
		    (!atomic_load(&reapers) && cq_nonempty())) {
			atomic_store(&thread_sleeping, 0);
			continue;
		}
		sleep_for_work();
		found = false;
		taskrun_ours = true;
		atomic_store(&thread_sleeping, 0);
	}
	return NULL;
}

/* ---- what backend.c and submit.c call ---- */

static void evfd_close(void)
{
	if (epfd >= 0)
		sys_close(epfd);
	if (evfd >= 0)
		sys_close(evfd);
	epfd = evfd = -1;
}

/* the eventfd and the epoll the ring thread sleeps in.  0 or -errno. */
static int evfd_setup(void)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
	long r;

	evfd = (int)sys_raw6(SYS_eventfd2, 0, EFD_CLOEXEC, 0, 0, 0, 0);
	if (evfd < 0)
		return evfd;
	epfd = (int)sys_raw6(SYS_epoll_create1, EPOLL_CLOEXEC, 0, 0, 0, 0, 0);
	r = epfd < 0 ? epfd : sys_raw6(SYS_epoll_ctl, epfd, EPOLL_CTL_ADD, evfd, (long)&ev, 0, 0);
	if (r < 0) {
		evfd_close();
		return (int)r;
	}
	return 0;
}

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
	if ((state = evfd_setup()))
		return state;
	atomic_store(&setup_state, 0);
	state = aio_start_thread(uring_main, NULL);
	if (state)
		goto fail;
	while (!(state = atomic_load(&setup_state)))
		sys_raw6(SYS_futex, (long)&setup_state, FUTEX_WAIT, 0, 0, 0, 0);
	if (state == 1)
		return 0;
fail:
	evfd_close();
	return state;
}

/* io_submit (thread): REQ for the ring thread with the file of FD in a slot
 * of the table, if one is free */
bool aio_uring_queue_held(struct aio_kiocb *req, int fd)
{
	int s = fixed_files ? slot_get() : -1;

	if (s < 0)
		return false;
	req->slot = s;
	if (slots_set((unsigned)s, &fd, 1) != 1) {
		slots_release(&req, 1);
		return false;
	}
	aio_uring_queue(req);
	return true;
}

/* the ring thread's: REQ has a descriptor of its own or a slot; it goes
 * with the rest of this io_submit's at its end (aio_uring_kick) */
void aio_uring_queue(struct aio_kiocb *req)
{
	uipc_crit_enter();               /* a handler's io_submit sees the list whole */
	req->batch_end = false;
	req->next = queued;
	queued = req;
	if (!queued_oldest)
		queued_oldest = req;
	uipc_crit_exit();
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
	req->fd = -1;
	req->borrowed_fd = fd;
	req->next = NULL;
	if (batch_tail)
		batch_tail->next = req;
	else
		batch = req;
	batch_tail = req;
}

/* a request of this io_submit that the ring could not take now: with a
 * descriptor of its own, for the ring thread (no room) or a worker (the
 * ring refused it) */
static void hand_off(struct aio_kiocb *req, bool ring_ok)
{
	req->fd = (int)sys_raw6(SYS_fcntl, req->borrowed_fd, F_DUPFD_CLOEXEC, 0, 0, 0, 0);
	if (req->fd < 0) {
		int err = req->fd;

		req->fd = -1;
		aio_complete(req, err, 0);
	} else if (ring_ok) {
		aio_uring_queue(req);
	} else {
		to_threads(&req, 1);
	}
}

/* the end of io_submit (direct): this thread enters its requests, then
 * reaps the completions that its entering posted */
void aio_uring_batch_flush(void)
{
	struct aio_kiocb *put[SQ_ENTRIES], *req;
	unsigned n, took;

	if (!batch)
		return;
	reaper_enter();
	while (batch) {
		n = 0;
		uipc_crit_enter();
		pthread_mutex_lock(&sq_lock);
		while (batch && n < SQ_ENTRIES && room_take(1)) {
			req = batch;
			batch = req->next;
			sq_put(req, req->borrowed_fd);
			put[n++] = req;
		}
		took = n ? sq_enter() : 0;
		pthread_mutex_unlock(&sq_lock);
		uipc_crit_exit();
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
	while ((req = batch)) {           /* no room in the ring */
		batch = req->next;
		hand_off(req, true);
	}
	batch_tail = NULL;
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
 * during it ends it).  0, -ETIMEDOUT or -EINTR.
 */
int aio_uring_wait(struct kioctx *ctx, uint32_t seq, int64_t deadline, unsigned hand0,
		   unsigned cont0)
{
	struct io_uring_getevents_arg arg;
	struct __kernel_timespec ts;
	sigset_t all, old;
	int64_t left = 0;
	int ret = 0;
	long r;

	reaper_enter();
	atomic_fetch_add(&ctx->ring_waiters, 1);
	waiting_for = ctx;
	if (cq_nonempty())
		reap();
	if (atomic_load(&ctx->seq) != seq)
		goto out;
	if (deadline >= 0 && (left = deadline - mono_ns()) <= 0) {
		ret = -ETIMEDOUT;
		goto out;
	}
	sigfillset(&all);
	sig_strip_unblockable(&all);
	uipc_sigmask(SIG_SETMASK, &all, &old);
	if (uipc_handler_gen() != hand0 || uipc_cont_gen() != cont0) {
		uipc_sigmask(SIG_SETMASK, &old, NULL);
		ret = -EINTR;
		goto out;
	}
	t_reaper = true;
	memset(&arg, 0, sizeof(arg));
	arg.sigmask = (uint64_t)(uintptr_t)&old;
	arg.sigmask_sz = _NSIG / 8;
	if (deadline >= 0) {
		ts.tv_sec = left / 1000000000;
		ts.tv_nsec = left % 1000000000;
		arg.ts = (uint64_t)(uintptr_t)&ts;
	}
	r = uring_enter(0, 1, IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &arg, sizeof(arg));
	uipc_sigmask(SIG_SETMASK, &old, NULL);   /* a handler held off runs here */
	if (uipc_handler_gen() != hand0 || uipc_cont_gen() != cont0)
		ret = -EINTR;
	else if (r == -ETIME)
		ret = -ETIMEDOUT;
	else if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
		waitable = false;        /* the ring refuses to be waited on: the futex from now on */
	if (cq_nonempty())
		reap();
out:
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
			   fd == __atomic_load_n(&epfd, __ATOMIC_RELAXED));
}

int aio_fd_next_guarded(unsigned lo)
{
	int fds[3] = { __atomic_load_n(&ring.fd, __ATOMIC_RELAXED),
		       __atomic_load_n(&evfd, __ATOMIC_RELAXED),
		       __atomic_load_n(&epfd, __ATOMIC_RELAXED) };
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
	evfd_close();
	memset(&spin, 0, sizeof(spin));
	spin.ns = SPIN_MAX_NS;
	pthread_mutex_init(&sq_lock, NULL);
	pthread_mutex_init(&reap_lock, NULL);
	atomic_store(&pending, NULL);
	atomic_store(&to_free, NULL);   /* the parent's: it frees them */
	atomic_store(&thread_sleeping, 0);
	atomic_store(&in_ring, 0);
	atomic_store(&reapers, 0);
	atomic_store(&backlogged, 0);
	backlog = backlog_tail = NULL;
	batch = batch_tail = NULL;
	queued = queued_oldest = NULL;
	waiting_for = NULL;
	t_reaper = t_entered = false;
	waitable = false;
	fixed_files = false;
	for (unsigned w = 0; w < FILE_SLOTS / 64; w++)
		atomic_store(&slot_used[w], 0);
}
