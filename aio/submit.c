/*
 * submit.c - io_submit and io_cancel: each iocb copied and checked in the
 * kernel's order (fs/aio.c's io_submit_one, __io_submit_one, aio_read,
 * aio_write, aio_fsync), one function per opcode, then issued.
 *
 * Issue: a read or write is first tried at once without blocking
 * (preadv2/pwritev2 with RWF_NOWAIT): data in the page cache completes
 * inside io_submit, as the kernel's would.  Files on tmpfs and ramfs
 * refuse RWF_NOWAIT but never wait for a disk, so they run inline as
 * they are.  Everything else (a cache miss, O_DIRECT, fsync) goes to the
 * backend (backend.c: io_uring or worker threads), so io_submit does not
 * wait for the disk.  Pipes and sockets run inside io_submit, as the
 * kernel runs them (issue_stream).
 */
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "aio/aio.h"

#define MAX_RW_COUNT  (INT_MAX & ~(long)(UIPC_PAGE - 1))
#ifndef UIO_MAXIOV
#define UIO_MAXIOV    1024
#endif
/* the top of the user address space (x86-64, 4-level paging): the
 * kernel's access_ok refuses a range past it with EFAULT at submission */
#define USER_TOP      0x7ffffffff000ull
#define IOPRIO_CLASS_MAX 3

/* ---- requests ---- */

void aio_req_free(struct aio_kiocb *req)
{
	aio_pool_free(req->iov_alloc, req->iov_alloc_size);
	if (req->fd >= 0)
		sys_close(req->fd);
	if (req->cancel_fd >= 0)
		sys_close(req->cancel_fd);
	aio_pool_free(req, sizeof(*req));
}

/* a place in the ring for one more event: submitted but unread requests
 * stay below the ring's size - 1, as the kernel's reqs_available */
static bool get_reqs_available(struct kioctx *ctx)
{
	uint32_t cur = atomic_load(&ctx->inflight);

	do {
		if (cur + aio_ring_used(ctx) >= ctx->reqs_limit)
			return false;
	} while (!atomic_compare_exchange_weak(&ctx->inflight, &cur, cur + 1));
	return true;
}

/* ---- the file's kind ---- */

/* RWF_* bits this kernel's preadv2/pwritev2 know besides RWF_NOWAIT:
 * HIPRI, DSYNC, SYNC, APPEND, NOAPPEND, DONTCACHE, NOSIGNAL (ATOMIC is
 * left out: refused without O_DIRECT) */
#define RWF_KNOWN 0x1b7

static bool is_dir(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
}

/* tmpfs and ramfs: RWF_NOWAIT is refused there but nothing waits */
static bool on_memfs(int fd)
{
	struct statfs sf;

	return fstatfs(fd, &sf) == 0 &&
	       (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC);
}

/*
 * Descriptors found on tmpfs, so that their requests skip the RWF_NOWAIT
 * try and the fstatfs, and the flags F_GETFL last gave for each, so that
 * a plain read or write on one skips that call too (submit_memfs_fast).
 * The number may name another file later: then a buffered request runs
 * inline, blocking, which is what the kernel itself does with buffered
 * I/O (O_DIRECT is told by the flags, read again by every request that
 * does not run on the cache, and RWF_NOWAIT requests do not use it); a
 * thread checks again at one request in MEMFS_CHECK_EVERY, which brings
 * such a descriptor back to the workers.  entry/'s close, dup2, dup3 and
 * close_range forget a number at once (aio_fd_forget).  The count is the
 * thread's: one kept per descriptor, in bytes side by side, was written
 * by every request of every thread, and the threads of fio's job with a
 * descriptor each spent a third of uipc's time passing its line around.
 */
#define FD_CACHE 4096
#define MEMFS_CHECK_EVERY 251   /* prime: a round of descriptors skips none */
static uint8_t fd_memfs[FD_CACHE];
static int fd_flags[FD_CACHE];
static __thread unsigned memfs_runs;    /* requests before the next check */

/* FD was on tmpfs at its last check, and this request is not a check */
static bool known_memfs(int fd)
{
	if (fd >= FD_CACHE || !fd_memfs[fd])
		return false;
	if (memfs_runs) {
		memfs_runs--;
		return true;
	}
	memfs_runs = MEMFS_CHECK_EVERY - 1;
	return false;
}

static void note_memfs(int fd, bool memfs)
{
	if (fd < FD_CACHE && fd_memfs[fd] != memfs)
		fd_memfs[fd] = memfs;
}

static void note_flags(int fd, int fl)
{
	if (fd >= 0 && fd < FD_CACHE && __atomic_load_n(&fd_flags[fd], __ATOMIC_RELAXED) != fl)
		__atomic_store_n(&fd_flags[fd], fl, __ATOMIC_RELAXED);
}

/* FD's flags when it is known to be on tmpfs and no check is due (the
 * caller counts the request, memfs_runs, once it ran), else -1 */
static int memfs_flags(int fd)
{
	if (fd < 0 || fd >= FD_CACHE || !fd_memfs[fd] || !memfs_runs)
		return -1;
	return __atomic_load_n(&fd_flags[fd], __ATOMIC_RELAXED);
}

void aio_fd_forget(int fd)
{
	if (fd >= 0 && fd < FD_CACHE && fd_memfs[fd])
		fd_memfs[fd] = 0;
}

void aio_fd_forget_range(unsigned first, unsigned last)
{
	for (unsigned fd = first; fd <= last && fd < FD_CACHE; fd++)
		aio_fd_forget((int)fd);
}

/* ---- issue ---- */

/* hand REQ to the workers with a descriptor of its own (the kernel holds
 * a reference to the file: the program may close its fd meanwhile) */
static int queue_req(struct aio_kiocb *req, int fd, int fl)
{
	/* O_DIRECT reads and writes: the kernel's own AIO where it can be
	 * had (kaio.c) */
	if ((fl & O_DIRECT) && req->opcode != IOCB_CMD_FSYNC && req->opcode != IOCB_CMD_FDSYNC) {
		int r = aio_kaio_submit(req, fd);

		if (r)
			return r < 0 ? r : 0;
	}
	/* io_uring answers O_NONBLOCK's -EAGAIN: such a file needs a dup for
	 * the threads backend */
	if (!(fl & O_NONBLOCK) && aio_queue_direct(req, fd))
		return 0;
	req->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (req->fd < 0)
		return -errno;
	return aio_queue_work(req);
}

/* the RWF_NOWAIT try said EOPNOTSUPP: on tmpfs run it blocking (or refuse
 * the program's own RWF_NOWAIT, as the kernel does at submission); on a
 * disk filesystem it is the program's unknown flags (refused), its
 * RWF_NOWAIT the file cannot honour (an event), or work for a thread.
 * The result: bytes or -errno. */
static int64_t nowait_refused(struct aio_kiocb *req, int fd, bool *blocking, bool *refuse)
{
	bool user_nowait = req->rw_flags & RWF_NOWAIT;

	if (req->rw_flags & ~(RWF_KNOWN | RWF_NOWAIT)) {
		*refuse = true;
		return -EOPNOTSUPP;
	}
	if (on_memfs(fd)) {
		note_memfs(fd, true);
		if (user_nowait) {
			*refuse = true;
			return -EOPNOTSUPP;
		}
		*blocking = true;
		return aio_do_io(req, 0);
	}
	note_memfs(fd, false);
	return -EOPNOTSUPP;
}

/* the program's handler count when this thread's io_submit began */
static __thread unsigned submit_hand0;

/* sleep until FD has EV or a handler of the program runs (or a stop and
 * continue), or DEADLINE (mono_ns; -1 none) passes: 0, -EINTR or -EAGAIN.  The signal mask is the program's only inside
 * ppoll (pselect's way), so a handler that runs before the sleep is seen */
static int stream_wait(int fd, short ev, unsigned hand0, unsigned cont0, int64_t deadline)
{
	struct pollfd p = { fd, ev, 0 };
	struct timespec ts;
	sigset_t old;
	int r = aio_sleep_begin(deadline, hand0, cont0, &ts, &old);

	if (r)
		return r == -ETIMEDOUT ? -EAGAIN : r;
	sys_raw6(SYS_ppoll, (long)&p, 1, deadline >= 0 ? (long)&ts : 0, (long)&old, _NSIG / 8, 0);
	return aio_sleep_end(&old, hand0, cont0) ? -EINTR : 0;
}

/* a socket's SO_RCVTIMEO (reads) or SO_SNDTIMEO (writes) as a deadline,
 * or -1 (none, or not a socket) */
static int64_t sock_deadline(int fd, bool wr)
{
	struct timeval tv;
	socklen_t l = sizeof(tv);

	if (getsockopt(fd, SOL_SOCKET, wr ? SO_SNDTIMEO : SO_RCVTIMEO, &tv, &l) ||
	    (!tv.tv_sec && !tv.tv_usec))
		return -1;
	return mono_ns() + tv.tv_sec * 1000000000LL + tv.tv_usec * 1000LL;
}

/*
 * A pipe's or a socket's read or write as the kernel's AIO performs it
 * (read_iter, write_iter inside io_submit): at once, else waiting for the
 * file there, all of a write moved unless the file stops taking it.  The
 * kernel's wait ends when a signal is pending, and its AIO cannot restart
 * one request of a batch: the event says -EINTR (SA_RESTART or not), or
 * the bytes moved before.  So the wait here is ppoll's, which ends when a
 * handler runs, between tries that do not block (RWF_NOWAIT); without
 * RWF_NOWAIT on the file, the blocking call as it is.
 */
static int64_t stream_io(struct aio_kiocb *req, int fl, int64_t total)
{
	bool wr = req->opcode == IOCB_CMD_PWRITE || req->opcode == IOCB_CMD_PWRITEV;
	bool nowait_ok = !(req->rw_flags & RWF_NOWAIT) && !(fl & O_NONBLOCK);
	unsigned hand0 = submit_hand0, cont0;
	int64_t n, deadline = -2;        /* -2: not asked yet */

	uipc_sleep_begin();
	cont0 = uipc_cont_gen();
	for (;;) {
		n = aio_do_io_once(req, nowait_ok ? RWF_NOWAIT : 0);
		if (n == -EOPNOTSUPP && nowait_ok) {
			nowait_ok = false;
			continue;
		}
		if (n > 0) {
			req->done += n;
			if (wr && req->done < total)
				continue;
			break;
		}
		if (n != -EAGAIN || !nowait_ok)
			break;
		if (deadline == -2)       /* a socket's own timeout ends the wait: -EAGAIN */
			deadline = sock_deadline(req->fd, wr);
		n = stream_wait(req->fd, wr ? POLLOUT : POLLIN, hand0, cont0, deadline);
		if (n < 0)
			break;
	}
	return n < 0 && !req->done ? n : req->done;
}

/*
 * A pipe or a socket (the inline try's pread said ESPIPE): the kernel runs
 * the request on the file as read(2) and write(2) do, inside io_submit,
 * waiting there when the file would (an empty pipe), the offset ignored
 * by a pipe and refused by a socket (-ESPIPE in the event).  So here.
 * Another file that said ESPIPE (a device without a position) keeps it.
 */
static int issue_stream(struct aio_kiocb *req, int fd, int fl, int64_t total)
{
	struct stat st;
	int64_t n = -ESPIPE;

	if (fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) ||
				    (S_ISSOCK(st.st_mode) && req->pos == 0))) {
		req->stream = true;
		req->fd = fd;
		n = stream_io(req, fl, total);
		req->fd = -1;
	}
	aio_complete(req, n, 0);
	return 0;
}

/* a read or write: at once when it can, else in the background.
 * 0 (submitted: completed or queued) or -errno (not submitted) */
static int issue_rw(struct aio_kiocb *req, int fd, int fl, int64_t total)
{
	bool user_nowait = req->rw_flags & RWF_NOWAIT, blocking = false, refuse = false;
	int64_t n;

	if (fl & O_DIRECT)
		return queue_req(req, fd, fl);
	req->fd = fd;
	if (!user_nowait && known_memfs(fd)) {
		blocking = true;
		n = aio_do_io(req, 0);
	} else {
		n = aio_do_io(req, RWF_NOWAIT);
		if (n == -EOPNOTSUPP)
			n = nowait_refused(req, fd, &blocking, &refuse);
	}
	req->fd = -1;
	if (n == -ESPIPE && !req->done)
		return issue_stream(req, fd, fl, total);
	/* a directory's read (generic_read_dir): the file has no read_iter,
	 * which the kernel's aio_read refuses at submission */
	if (n == -EISDIR && !req->done)
		return -EINVAL;
	if (refuse || (blocking && n == -EOPNOTSUPP))
		return -EOPNOTSUPP;
	/* final: the whole count, a blocking call's short count (end of
	 * file), an error other than "would block", any answer to the
	 * program's own RWF_NOWAIT */
	if (n == total || (blocking && n >= 0) || user_nowait ||
	    (n < 0 && n != -EAGAIN && n != -EOPNOTSUPP)) {
		aio_complete(req, n, 0);
		return 0;
	}
	if (n == -EOPNOTSUPP && !req->done && is_dir(fd))
		return -EINVAL;         /* a directory on a disk: as above */
	req->done = n > 0 ? n : 0;       /* the rest, blocking, in a worker */
	return queue_req(req, fd, fl);
}

/* ---- checks of a read or write (aio_prep_rw, aio_setup_rw) ---- */

static int check_ioprio(const struct iocb *cb)
{
	if (!(cb->aio_flags & IOCB_FLAG_IOPRIO))
		return 0;
	return ((uint16_t)cb->aio_reqprio >> 13) > IOPRIO_CLASS_MAX ? -EINVAL : 0;
}

/* rw_verify_area's check of the position and the byte count */
static bool pos_ok(int64_t pos, int64_t total)
{
	return pos >= 0 && pos + total >= pos;
}

/* a range the kernel's access_ok accepts */
static bool user_range_ok(uint64_t p, uint64_t len)
{
	return p + len >= p && p + len <= USER_TOP;
}

/* the iovecs of REQ from the iocb, their total in *TOTAL.  0 or -errno. */
static int import_iov(struct aio_kiocb *req, const struct iocb *cb, bool vectored,
		      int64_t *total)
{
	uint64_t sum = 0;
	int i;

	if (!vectored) {
		uint64_t len = cb->aio_nbytes < MAX_RW_COUNT ? cb->aio_nbytes : MAX_RW_COUNT;

		if (!user_range_ok(cb->aio_buf, len))
			return -EFAULT;
		req->iov = req->iov_inline;
		req->iov[0].iov_base = (void *)(uintptr_t)cb->aio_buf;
		req->iov[0].iov_len = len;
		req->nr_iov = 1;
		*total = (int64_t)len;
		return 0;
	}
	if (cb->aio_nbytes > UIO_MAXIOV)
		return -EINVAL;
	req->nr_iov = (int)cb->aio_nbytes;
	if (req->nr_iov <= 1) {
		req->iov = req->iov_inline;
	} else {
		req->iov_alloc_size = sizeof(struct iovec) * (size_t)req->nr_iov;
		req->iov = req->iov_alloc = aio_pool_alloc(req->iov_alloc_size);
		if (!req->iov)
			return -ENOMEM;
	}
	if (uipc_copy_from_user(req->iov, (void *)(uintptr_t)cb->aio_buf,
				sizeof(struct iovec) * req->nr_iov))
		return -EFAULT;
	for (i = 0; i < req->nr_iov; i++) {
		if ((ssize_t)req->iov[i].iov_len < 0)
			return -EINVAL;
		if (!user_range_ok((uintptr_t)req->iov[i].iov_base, req->iov[i].iov_len))
			return -EFAULT;
		if (req->iov[i].iov_len > MAX_RW_COUNT - sum)      /* truncated there */
			req->iov[i].iov_len = MAX_RW_COUNT - sum;
		sum += req->iov[i].iov_len;
	}
	*total = (int64_t)sum;
	return 0;
}

/* aio_read, aio_write: IOCB_CMD_PREAD(V), IOCB_CMD_PWRITE(V) */
static int aio_rw(struct aio_kiocb *req, const struct iocb *cb, int fd, int fl, bool write,
		  bool vectored)
{
	int acc = fl & O_ACCMODE;
	int64_t total;
	int err;

	err = check_ioprio(cb);
	if (err)
		return err;
	req->has_ioprio = cb->aio_flags & IOCB_FLAG_IOPRIO;
	req->ioprio = cb->aio_reqprio;
	req->rw_flags = (int)cb->aio_rw_flags;
	req->pos = cb->aio_offset;
	if (write ? acc == O_RDONLY : acc == O_WRONLY)
		return -EBADF;
	err = import_iov(req, cb, vectored, &total);
	if (err == -EFAULT && !write && is_dir(fd))
		return -EINVAL;         /* no read_iter: refused before the iovecs */
	if (err)
		return err;
	if (!pos_ok(req->pos, total))
		return -EINVAL;
	return issue_rw(req, fd, fl, total);
}

/* aio_fsync: IOCB_CMD_FSYNC, IOCB_CMD_FDSYNC, always in the background */
static int aio_fsync(struct aio_kiocb *req, const struct iocb *cb, int fd, int fl)
{
	struct stat st;

	if (cb->aio_buf || cb->aio_offset || cb->aio_nbytes || cb->aio_rw_flags)
		return -EINVAL;
	/* files with no fsync of their own (pipes, sockets, most devices) */
	if (fstat(fd, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) ||
				    S_ISBLK(st.st_mode)))
		return -EINVAL;
	return queue_req(req, fd, fl);
}

/* the eventfd of IOCB_FLAG_RESFD: -EBADF, -EINVAL (not an eventfd) or 0 */
static int check_eventfd(int fd)
{
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = sys_readlinkat(AT_FDCWD, path, link, sizeof(link) - 1);
	if (n < 0)
		return -EBADF;
	link[n] = 0;
	return strcmp(link, "anon_inode:[eventfd]") ? -EINVAL : 0;
}

/* what REQ's event names: its context, the iocb (obj), aio_data, the opcode */
static void req_fill(struct aio_kiocb *req, struct kioctx *ctx, const struct iocb *cb,
		     struct iocb *user_iocb)
{
	req->ctx = ctx;
	req->obj = (uint64_t)(uintptr_t)user_iocb;
	req->data = cb->aio_data;
	req->opcode = cb->aio_lio_opcode;
}

/* __io_submit_one: the file, the eventfd, the iocb's key, then the opcode */
static int submit_req(struct kioctx *ctx, struct aio_kiocb *req, const struct iocb *cb,
		      struct iocb *user_iocb)
{
	uint32_t key = 0;
	int fd = (int)cb->aio_fildes, fl, err;

	fl = fd < 0 ? -1 : fcntl(fd, F_GETFL);
	note_flags(fd, fl);
	if (fl < 0 || (fl & O_PATH))
		return -EBADF;
	if (cb->aio_flags & IOCB_FLAG_RESFD) {
		err = check_eventfd((int)cb->aio_resfd);
		if (err)
			return err;
		req->resfd = (int)cb->aio_resfd;
	}
	if (uipc_copy_to_user(&user_iocb->aio_key, &key, sizeof(key)))
		return -EFAULT;
	req_fill(req, ctx, cb, user_iocb);
	switch (cb->aio_lio_opcode) {
	case IOCB_CMD_PREAD:   return aio_rw(req, cb, fd, fl, false, false);
	case IOCB_CMD_PWRITE:  return aio_rw(req, cb, fd, fl, true, false);
	case IOCB_CMD_PREADV:  return aio_rw(req, cb, fd, fl, false, true);
	case IOCB_CMD_PWRITEV: return aio_rw(req, cb, fd, fl, true, true);
	case IOCB_CMD_FSYNC:
	case IOCB_CMD_FDSYNC:  return aio_fsync(req, cb, fd, fl);
	case IOCB_CMD_POLL:    return aio_poll(req, cb, fd, fl);
	default:               return -EINVAL;
	}
}

/* an error of submit_memfs_fast's call that the general path must decide:
 * a descriptor not open for the operation, a file without the operation
 * or without a position, and the errors issue_rw treats apart.  Others
 * (ENOSPC, EFBIG, EFAULT, EIO, ...) came from the file: the event's, as
 * the general path would post them, and not met twice (EFBIG's SIGXFSZ). */
static bool fast_error_undecided(int64_t n)
{
	return n == -EBADF || n == -EINVAL || n == -ESPIPE || n == -EOPNOTSUPP ||
	       n == -EISDIR || n == -EAGAIN || n == -ENXIO;
}

/*
 * The common request, a plain pread or pwrite (no flags, no eventfd, no
 * priority) on a descriptor known to be on tmpfs, whose cached flags let
 * the operation through: run inline as issue_rw would, but without the
 * F_GETFL, since the read or write itself tells what the kernel's io_submit
 * would: a descriptor that is not open, or not for this operation, says
 * EBADF there.  Anything else, and an error of the call that may say the
 * file was not reached (fast_error_undecided; such a call moved no byte),
 * goes back to the general path, which decides everything again in the
 * kernel's order, the iocb's key as it was.  0 (completed) or 1.
 */
static int submit_memfs_fast(struct kioctx *ctx, const struct iocb *cb, struct iocb *user_iocb)
{
	/* on the stack: the request ends here, before the call returns */
	struct aio_kiocb r = { .fd = -1, .borrowed_fd = -1, .resfd = -1, .cancel_fd = -1 };
	struct aio_kiocb *req = &r;
	bool wr = cb->aio_lio_opcode == IOCB_CMD_PWRITE;
	int fd = (int)cb->aio_fildes, fl, acc;
	uint32_t key = 0, old_key;
	int64_t n, total;

	if ((!wr && cb->aio_lio_opcode != IOCB_CMD_PREAD) || cb->aio_flags || cb->aio_rw_flags)
		return 1;
	fl = memfs_flags(fd);
	acc = fl & O_ACCMODE;
	if (fl < 0 || (fl & (O_PATH | O_DIRECT)) || (wr ? acc == O_RDONLY : acc == O_WRONLY))
		return 1;
	req->pos = cb->aio_offset;
	if (import_iov(req, cb, false, &total) || !pos_ok(req->pos, total))
		return 1;
	if (uipc_copy_from_user(&old_key, &user_iocb->aio_key, sizeof(key)) ||
	    uipc_copy_to_user(&user_iocb->aio_key, &key, sizeof(key)))
		return 1;
	req_fill(req, ctx, cb, user_iocb);
	req->fd = fd;
	n = aio_do_io(req, 0);
	req->fd = -1;
	if (n < 0 && fast_error_undecided(n)) {
		(void)uipc_copy_to_user(&user_iocb->aio_key, &old_key, sizeof(key));
		return 1;
	}
	memfs_runs--;
	aio_post(req, n, 0);
	aio_wake(ctx);
	return 0;
}

/* io_submit_one: copy the iocb, the checks before a request exists */
static int io_submit_one(struct kioctx *ctx, struct iocb *user_iocb)
{
	struct aio_kiocb *req;
	struct iocb cb;
	int err;

	if (uipc_copy_from_user(&cb, user_iocb, sizeof(cb)))
		return -EFAULT;
	if (cb.aio_reserved2)
		return -EINVAL;
	if ((int64_t)cb.aio_nbytes < 0)
		return -EINVAL;
	if (!get_reqs_available(ctx))
		return -EAGAIN;
	if (!submit_memfs_fast(ctx, &cb, user_iocb))
		return 0;
	req = aio_pool_alloc(sizeof(*req));
	if (!req) {
		atomic_fetch_sub(&ctx->inflight, 1);
		return -EAGAIN;
	}
	req->fd = -1;
	req->borrowed_fd = -1;
	req->resfd = -1;
	req->cancel_fd = -1;
	err = submit_req(ctx, req, &cb, user_iocb);
	if (err) {
		atomic_fetch_sub(&ctx->inflight, 1);
		aio_req_free(req);
	}
	return err;
}

/* io_submit, under the reference on its context */
static long io_submit_all(unsigned hand0, aio_context_t ctx_id, long nr, struct iocb **iocbpp)
{
	struct kioctx *ctx;
	struct iocb *user_iocb;
	long i, ret = 0;

	if (nr < 0)
		return -EINVAL;
	ctx = lookup_ioctx(ctx_id);
	if (!ctx)
		return -EINVAL;
	submit_hand0 = hand0;
	if (nr > ctx->nr_events)
		nr = ctx->nr_events;
	for (i = 0; i < nr; i++) {
		if (uipc_copy_from_user(&user_iocb, iocbpp + i, sizeof(user_iocb))) {
			ret = -EFAULT;
			break;
		}
		ret = io_submit_one(ctx, user_iocb);
		if (ret)
			break;
	}
	aio_queue_flush();              /* one kick for the whole batch */
	put_ioctx(ctx);
	return i ? i : ret;
}

/*
 * sys_io_submit: queue the NR iocbs at IOCBPP for processing in the
 * context CTX.  The number submitted, or the error of the first when
 * none was.
 * May fail with -EINVAL if ctx is bad, nr < 0, an iocb's reserved field
 * is set, its opcode is unknown or its size or offset is invalid; -EFAULT
 * if iocbpp, an iocb or a buffer range is bad; -EBADF if an fd is bad or
 * not open for the operation; -EAGAIN if the ring has no room.
 *
 * A pipe's or a socket's request may wait inside (stream_io): a handler
 * whose signal comes meanwhile runs once the call is over.
 */
long ksys_io_submit(unsigned hand0, aio_context_t ctx_id, long nr, struct iocb **iocbpp)
{
	uipc_call_begin();
	return uipc_call_end(io_submit_all(hand0, ctx_id, nr, iocbpp));
}

/*
 * sys_io_cancel: cancel the request IOCB of the context CTX.
 * Only a pending poll can be cancelled (as in the kernel: reads, writes
 * and fsyncs cannot): -EINPROGRESS, its event (res 0 unless it became
 * ready) follows in the ring.
 * May fail with -EFAULT if iocb is bad, -EINVAL if its key is not 0, ctx
 * is bad, or no cancellable request matches.
 */
long ksys_io_cancel(aio_context_t ctx_id, struct iocb *iocb, struct io_event *result)
{
	struct kioctx *ctx;
	uint32_t key;
	long ret;

	(void)result;
	if (uipc_copy_from_user(&key, &iocb->aio_key, sizeof(key)))
		return -EFAULT;
	if (key != 0)
		return -EINVAL;
	ctx = lookup_ioctx(ctx_id);
	if (!ctx)
		return -EINVAL;
	ret = aio_poll_cancel(ctx, (uint64_t)(uintptr_t)iocb);
	put_ioctx(ctx);
	return ret;
}
