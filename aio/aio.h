/*
 * aio/aio.h - what aio/ gives entry/: Linux native AIO in user space.
 *
 * Owns: contexts and their table (ctx.c), the ring programs read (ring.h),
 * submission and cancellation (submit.c), IOCB_CMD_POLL (poll.c),
 * completion into the ring and io_getevents (events.c), and who performs
 * the I/O which cannot complete at once (backend.c: an io_uring, uring.c,
 * or threads, worker.c; O_DIRECT in a kernel AIO context, kaio.c), and
 * the memory of requests (pool.c).  State is
 * per process: contexts are not inherited by a fork child and die with
 * the process, as in the kernel;
 * fs.aio-nr and fs.aio-max-nr are the namespace's (core/aionr.c).
 * May call: core/ only.  Never ipc/ or entry/.
 * Returns: 0, a count, or -errno.  Never errno.
 */
#ifndef UIPC_AIO_H
#define UIPC_AIO_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "aio/ring.h"
#include "core/core.h"

/* a context: the private side of one ring (the ring is the program's) */
struct kioctx {
	struct aio_ring *ring;
	size_t ring_len;             /* mapped bytes */
	uint64_t user_id;            /* == ring's address */
	uint32_t id;                 /* table slot */
	uint32_t nr_events;          /* ring->nr, our copy (the ring is writable by all) */
	uint32_t max_reqs;           /* what io_setup asked: fs.aio-nr's share */
	unsigned acct_gen;           /* the accounting it was made under (ctx.c) */
	struct departed *dep;        /* made in a namespace since left (ctx.c), or NULL */
	uint32_t reqs_limit;         /* requests in flight or unread, at most */
	uint32_t tail;               /* our copy of ring->tail (completion lock) */
	_Atomic uint32_t inflight;   /* submitted, not yet in the ring */
	_Atomic uint32_t users;      /* calls inside the context right now */
	_Atomic int dead;            /* io_destroy began */
	_Atomic uint32_t seq;        /* futex word: bumped by every completion */
	_Atomic uint32_t waiters;    /* sleepers on seq */
	_Atomic uint32_t ring_reqs;  /* requests in the io_uring (uring.c) */
	_Atomic uint32_t ring_waiters; /* io_getevents sleeping in the io_uring for it */
	_Atomic uint32_t kaio_reqs;  /* requests in the kernel AIO context (kaio.c) */
	_Atomic uint32_t kaio_waiters; /* io_getevents leading in it for this one */
	pthread_mutex_t completion_lock;  /* writers of tail */
	pthread_mutex_t ring_lock;        /* readers of head (io_getevents) */
	pthread_mutex_t active_lock;      /* the list below */
	struct aio_kiocb *active;         /* pending polls: what io_cancel can reach */
	struct kioctx *next_free;
};

/* a request on its way to completion */
struct aio_kiocb {
	struct kioctx *ctx;
	uint64_t data, obj;          /* aio_data, the iocb's address */
	int opcode;
	int fd;                      /* our own dup when queued */
	int borrowed_fd;             /* the program's, while io_submit runs (uring.c, direct) */
	int resfd;                   /* eventfd, or -1 */
	int rw_flags;
	uint16_t ioprio;             /* aio_reqprio, when IOCB_FLAG_IOPRIO (has_ioprio) */
	bool has_ioprio;
	int64_t pos;
	int64_t done;                /* bytes already moved by the inline try */
	int64_t prior;               /* bytes moved before iov and pos (uring.c advanced them) */
	int cancel_fd;               /* poll: an eventfd io_cancel writes, or -1 */
	short events;                /* poll: the events asked for */
	uint8_t poll_kind;           /* poll: the file's kind (poll.c) */
	bool on_active;              /* poll: in ctx->active (active_lock) */
	bool stream;                 /* a pipe or socket: no position (submit.c) */
	bool batch_end;              /* the last of its io_submit's for the ring thread (uring.c) */
	struct aio_kiocb *next_active;
	int nr_iov;
	struct iovec *iov;
	struct iovec *iov_alloc;     /* the pool's block of iovecs (iov may move past its start) */
	size_t iov_alloc_size;
	struct iovec iov_inline[1];
	struct aio_kiocb *next;
};

/* ---- ctx.c ---- */
/* around an exec (entry/exec.c): the share of contexts counted in
 * namespaces the process left goes back there, taken again if it fails */
UIPC_HIDDEN void aio_exec_prepare(void);
UIPC_HIDDEN void aio_exec_failed(void);
/* the context at CTX with a reference taken (drop with put_ioctx), or NULL */
UIPC_HIDDEN struct kioctx *lookup_ioctx(uint64_t ctx);
UIPC_HIDDEN void put_ioctx(struct kioctx *ctx);

/* ---- events.c ---- */
/* put REQ's event (RES, RES2) in its ring, wake readers, signal its eventfd,
 * free REQ */
UIPC_HIDDEN void aio_complete(struct aio_kiocb *req, int64_t res, int64_t res2);
/* aio_complete's first part: the event in the ring and the eventfd; the
 * caller wakes the context (aio_wake) and frees REQ (a batch of completions
 * wakes each context once) */
UIPC_HIDDEN void aio_post(struct aio_kiocb *req, int64_t res, int64_t res2);
/* events in the ring not yet read (head as the program may have stored it) */
UIPC_HIDDEN uint32_t aio_ring_used(struct kioctx *ctx);
/* wake whoever sleeps on CTX (io_getevents, io_destroy) */
UIPC_HIDDEN void aio_wake(struct kioctx *ctx);
/* the posted requests DONE (linked by next, grouped by context): each
 * context woken once, each request freed */
UIPC_HIDDEN void aio_wake_free(struct aio_kiocb *done);
/* the start of a sleep made pselect's way: the time left until DEADLINE
 * (mono_ns, -1: none) in *REL, every signal blocked, the caller's mask in
 * *OLD (for the sleeping call alone).  0, or -ETIMEDOUT, or -EINTR when a
 * handler of the program ran since HAND0 (or a stop came since CONT0),
 * the mask then as it was */
UIPC_HIDDEN int aio_sleep_begin(int64_t deadline, unsigned hand0, unsigned cont0,
				struct timespec *rel, sigset_t *old);
/* its end: the mask *OLD again (a handler held off runs now); whether a
 * handler ran or a stop came since HAND0, CONT0 */
UIPC_HIDDEN bool aio_sleep_end(const sigset_t *old, unsigned hand0, unsigned cont0);
/* sleep on CTX's completion count (while == SEQ) and, if W2, on *W2 (while
 * == V2), until DEADLINE (mono_ns, -1: none); 0, -ETIMEDOUT or -EINTR */
UIPC_HIDDEN int aio_wait_seq(struct kioctx *ctx, uint32_t seq, uint32_t *w2, uint32_t v2,
			     int64_t deadline, unsigned hand0, unsigned cont0);

/* ---- poll.c ---- */
/* IOCB_CMD_POLL for REQ on FD.  0 (completed or pending) or -errno. */
UIPC_HIDDEN int aio_poll(struct aio_kiocb *req, const struct iocb *cb, int fd, int fl);
/* io_cancel of the pending poll whose iocb is at OBJ: -EINPROGRESS (its
 * event follows), or -EINVAL when there is none */
UIPC_HIDDEN int aio_poll_cancel(struct kioctx *ctx, uint64_t obj);
/* cancel every pending poll of CTX (io_destroy) */
UIPC_HIDDEN void aio_poll_cancel_all(struct kioctx *ctx);

/* ---- backend.c: who performs what cannot complete at once ---- */
/* run REQ in the background (the chosen backend).  0 or -errno (not
 * queued).  The uring backend starts it at the next aio_queue_flush. */
UIPC_HIDDEN int aio_queue_work(struct aio_kiocb *req);
/* or, before that: REQ goes to the io_uring at the end of this io_submit
 * with the program's FD, which needs no dup (the submission takes the
 * file).  Whether it was taken. */
UIPC_HIDDEN bool aio_queue_direct(struct aio_kiocb *req, int fd);
/* start what aio_queue_work queued (once per io_submit) */
UIPC_HIDDEN void aio_queue_flush(void);
UIPC_HIDDEN void aio_backend_fork_child(void);

/* ---- kaio.c: O_DIRECT reads and writes in a kernel AIO context ---- */
/* REQ (a read or write of the O_DIRECT file FD) into the kernel context:
 * 1 taken, 0 not (none to be had, or full: the backend's), -errno the
 * kernel's refusal of the iocb */
UIPC_HIDDEN int aio_kaio_submit(struct aio_kiocb *req, int fd);
/* what the kernel context holds, into the rings now (a system call only
 * when it holds something) */
UIPC_HIDDEN void aio_kaio_reap(void);
/* io_getevents sleeping in the kernel context (kaio.c has why) */
UIPC_HIDDEN bool aio_kaio_can_wait(struct kioctx *ctx);
UIPC_HIDDEN int aio_kaio_wait(struct kioctx *ctx, uint32_t seq, int64_t deadline,
			      unsigned hand0, unsigned cont0);
/* someone other than this thread sleeps in the kernel context for CTX */
UIPC_HIDDEN bool aio_kaio_waited(struct kioctx *ctx);
UIPC_HIDDEN void aio_kaio_nudge(void);
/* its descriptor (-1: none), guarded like the ring's */
UIPC_HIDDEN int aio_kaio_guarded_fd(void);
UIPC_HIDDEN void aio_kaio_fork_child(void);

/* ---- worker.c: the threads backend ---- */
/* 0, or -EAGAIN when no thread could be started */
UIPC_HIDDEN int aio_threads_queue(struct aio_kiocb *req);
/* perform REQ now, blocking; its result (bytes or -errno) */
UIPC_HIDDEN int64_t aio_do_io(struct aio_kiocb *req, int extra_flags);
/* one call for REQ past req->done: the bytes it moved, or -errno */
UIPC_HIDDEN int64_t aio_do_io_once(struct aio_kiocb *req, int extra_flags);
UIPC_HIDDEN void aio_threads_fork_child(void);

/* ---- uring.c: the io_uring backend ---- */
/* the ring and its thread: 0, or -errno when io_uring cannot be used */
UIPC_HIDDEN int aio_uring_start(void);
UIPC_HIDDEN void aio_uring_queue(struct aio_kiocb *req);
UIPC_HIDDEN void aio_uring_kick(void);
/* io_submit enters the ring itself (UIPC_AIO_SUBMIT, uring.c) */
UIPC_HIDDEN bool aio_uring_direct(void);
/* this thread entered requests itself: their completion work may end its
 * waits that the kernel does not restart (entry/aio.c) */
UIPC_HIDDEN bool aio_uring_entered(void);
/* this thread waits elsewhere than in io_getevents: the ring thread
 * enters its requests again (auto) */
UIPC_HIDDEN void aio_uring_not_reaper(void);
UIPC_HIDDEN void aio_uring_batch_add(struct aio_kiocb *req, int fd);
UIPC_HIDDEN void aio_uring_batch_flush(void);
/* io_getevents sleeping in the ring (uring.c has why) */
UIPC_HIDDEN bool aio_uring_can_wait(struct kioctx *ctx);
UIPC_HIDDEN int aio_uring_wait(struct kioctx *ctx, uint32_t seq, int64_t deadline,
			       unsigned hand0, unsigned cont0);
/* someone other than this thread sleeps in the ring for CTX */
UIPC_HIDDEN bool aio_uring_waited(struct kioctx *ctx);
UIPC_HIDDEN void aio_uring_nudge(void);
UIPC_HIDDEN void aio_uring_fork_child(void);
/* the ring's own descriptors, which the program's close must not close;
 * the lowest of them >= LO, or INT_MAX */
UIPC_HIDDEN bool aio_fd_guarded(int fd);
UIPC_HIDDEN int aio_fd_next_guarded(unsigned lo);
/* FD (or FIRST..LAST) is being closed or replaced: what submit.c knows of
 * the file it named is forgotten (entry/'s close, dup2, dup3, close_range) */
UIPC_HIDDEN void aio_fd_forget(int fd);
UIPC_HIDDEN void aio_fd_forget_range(unsigned first, unsigned last);
/* a detached thread running FN(ARG), every signal blocked.  0 or -errno. */
UIPC_HIDDEN int aio_start_thread(void *(*fn)(void *), void *arg);
UIPC_HIDDEN void aio_req_free(struct aio_kiocb *req);

/* ---- pool.c: requests' memory, async-signal-safe (not malloc's) ---- */
/* SIZE bytes (at most 16 KiB), zeroed, or NULL */
UIPC_HIDDEN void *aio_pool_alloc(size_t size);
/* back to the pool: P as aio_pool_alloc(SIZE) gave it */
UIPC_HIDDEN void aio_pool_free(void *p, size_t size);
UIPC_HIDDEN void aio_pool_fork_child(void);

/* ---- the system calls (fs/aio.c's), for entry/ ---- */
UIPC_HIDDEN long ksys_io_setup(unsigned nr_events, aio_context_t *ctxp);
UIPC_HIDDEN long ksys_io_destroy(aio_context_t ctx);
/* HAND0: the program's handler count when the call began (a pipe's or
 * socket's wait inside it ends with -EINTR when a handler runs) */
UIPC_HIDDEN long ksys_io_submit(unsigned hand0, aio_context_t ctx, long nr,
				struct iocb **iocbpp);
UIPC_HIDDEN long ksys_io_cancel(aio_context_t ctx, struct iocb *iocb, struct io_event *result);
/* HAND0: the program's handler count when the call began (uipc_handler_gen) */
UIPC_HIDDEN long ksys_io_getevents(unsigned hand0, aio_context_t ctx, long min_nr, long nr,
				   struct io_event *events, const struct timespec *timeout);
/* SIGMASK: the mask while waiting (NULL: unchanged), already copied in */
UIPC_HIDDEN long aio_getevents_masked(unsigned hand0, aio_context_t ctx, long min_nr, long nr,
				      struct io_event *events, const struct timespec *timeout,
				      const sigset_t *sigmask);
/* the system call's form: USIG points to { const sigset_t *, size_t } */
UIPC_HIDDEN long ksys_io_pgetevents(unsigned hand0, aio_context_t ctx, long min_nr, long nr,
				    struct io_event *events, const struct timespec *timeout,
				    const void *usig);

#endif /* UIPC_AIO_H */
