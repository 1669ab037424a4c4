/*
 * poll.c - IOCB_CMD_POLL: a one-shot poll of a file, completed when the
 * file is ready, and the only request io_cancel can cancel (as in the
 * kernel).
 *
 * A file already ready completes inside io_submit with its readiness
 * among the events asked for (and POLLERR, POLLHUP), as the kernel's
 * vfs_poll & events.  Otherwise the request goes on the context's active
 * list and a thread of its own (a pending poll may wait forever: it must
 * not hold one of the I/O workers) sleeps in poll(2) on the file and on
 * the request's cancel eventfd.  io_cancel takes the request off the list
 * and writes the eventfd; the thread then completes it with 0, as the
 * kernel's cancelled poll.
 *
 * What a woken poll says (woken_mask): the kernel's aio_poll_wake reports
 * the mask that the file's wakeup carried, whole, when it names one of the
 * events asked for, and the readiness among the events asked for when the
 * wakeup carries none.  User space sees no wakeup, so the file's kind says
 * which wakeup it was: a pipe's reader finding data was woken by a write
 * (POLLIN|POLLRDNORM), its writer finding room by a read
 * (POLLOUT|POLLWRNORM); a socket with data queued by its data
 * (POLLIN|POLLPRI|POLLRDNORM|POLLRDBAND), one with room and no hangup by
 * its room (POLLOUT|POLLWRNORM|POLLWRBAND), an error of a datagram socket
 * by POLLERR (a stream's error comes with its state change, which carries
 * none); an
 * epoll descriptor by POLLIN; the rest (a pipe's last writer or reader
 * gone, a socket shut down or closed, an eventfd, whose wakeups name what
 * poll says) by its readiness.  Files whose poll never waits (regular
 * files, directories, block devices, /dev/null, /dev/zero, /dev/full)
 * complete at once or fail with EINVAL, and so does a wait on a file that
 * waits on two queues (a FIFO opened for reading and writing, a terminal),
 * which the kernel's AIO does not support.
 */
#include <poll.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <termios.h>

#include "aio/aio.h"

/* what kind of wakeups the file makes (woken_mask) */
enum {
	PK_OTHER,          /* its wakeups name what its poll says */
	PK_NOWAIT,         /* no poll method: ready for IN and OUT, never waits */
	PK_TWO_QUEUES,     /* its poll waits on two queues */
	PK_PIPE_RD,
	PK_PIPE_WR,
	PK_SOCK,
	PK_SOCK_ERRKEY,    /* a socket whose errors wake with POLLERR */
	PK_EPOLL,
};

#define SOCK_IN_KEY  (POLLIN | POLLPRI | POLLRDNORM | POLLRDBAND)
#define SOCK_OUT_KEY (POLLOUT | POLLWRNORM | POLLWRBAND)
#define ALL_EVENTS   (POLLIN | POLLPRI | POLLOUT | POLLRDNORM | POLLRDBAND | POLLWRNORM | \
		      POLLWRBAND | POLLRDHUP)

/* filesystems whose regular files may have a poll method of their own */
static bool fs_polls(int fd)
{
	struct statfs sf;

	if (fstatfs(fd, &sf))
		return true;
	switch ((unsigned long)sf.f_type) {
	case PROC_SUPER_MAGIC: case SYSFS_MAGIC: case CGROUP_SUPER_MAGIC:
	case CGROUP2_SUPER_MAGIC: case DEBUGFS_MAGIC: case TRACEFS_MAGIC:
	case 0x65735546 /* FUSE */: case SECURITYFS_MAGIC: case BPF_FS_MAGIC:
		return true;
	}
	return false;
}

static int socket_kind(int fd)
{
	int dom = 0, type = 0;
	socklen_t l = sizeof(int);

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l))
		return PK_SOCK;
	l = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l))
		return PK_SOCK;
	(void)dom;
	return type == SOCK_DGRAM ? PK_SOCK_ERRKEY : PK_SOCK;
}

static int file_kind(int fd, int fl)
{
	struct termios t;
	struct stat st;
	char path[64], link[64];
	ssize_t n;

	if (fstat(fd, &st))
		return PK_OTHER;
	switch (st.st_mode & S_IFMT) {
	case S_IFIFO:
		switch (fl & O_ACCMODE) {
		case O_RDWR:   return PK_TWO_QUEUES;
		case O_WRONLY: return PK_PIPE_WR;
		default:       return PK_PIPE_RD;
		}
	case S_IFSOCK:
		return socket_kind(fd);
	case S_IFREG:
	case S_IFDIR:
	case S_IFBLK:
		return fs_polls(fd) ? PK_OTHER : PK_NOWAIT;
	case S_IFCHR:
		/* mem's null, zero and full have no poll; terminals two queues */
		if (major(st.st_rdev) == 1 && (minor(st.st_rdev) == 3 || minor(st.st_rdev) == 5 ||
					       minor(st.st_rdev) == 7))
			return PK_NOWAIT;
		return ioctl(fd, TCGETS, &t) == 0 ? PK_TWO_QUEUES : PK_OTHER;
	case 0:                              /* an anonymous inode */
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = sys_readlinkat(AT_FDCWD, path, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = 0;
			if (!strcmp(link, "anon_inode:[eventpoll]"))
				return PK_EPOLL;
		}
		return PK_OTHER;
	}
	return PK_OTHER;
}

/* the events the file has now, of those REQ waits for */
static short ready_now(struct aio_kiocb *req)
{
	struct pollfd p = { req->fd, req->events, 0 };

	return poll(&p, 1, 0) == 1 ? p.revents : 0;
}

/* off the active list, if still there (active_lock held) */
static bool unlink_active(struct kioctx *ctx, struct aio_kiocb *req)
{
	struct aio_kiocb **pp;

	if (!req->on_active)
		return false;
	for (pp = &ctx->active; *pp; pp = &(*pp)->next_active)
		if (*pp == req) {
			*pp = req->next_active;
			break;
		}
	req->on_active = false;
	return true;
}

/* a socket with data queued (a listening one: a connection) */
static bool sock_has_data(int fd, short r)
{
	int n = 0;

	if (ioctl(fd, FIONREAD, &n) < 0)
		return r & POLLIN;
	return n > 0;
}

/* what the kernel's woken poll would report: the mask of the wakeup that
 * woke it when that names an event asked for, else the readiness among
 * the events asked for (see the top of the file) */
static short woken_mask(struct aio_kiocb *req, short *ready)
{
	struct pollfd p = { req->fd, ALL_EVENTS, 0 };
	short e = req->events, r = poll(&p, 1, 0) == 1 ? p.revents : 0;

	*ready = r;
	switch (req->poll_kind) {
	case PK_PIPE_RD:
		if ((r & POLLIN) && (e & (POLLIN | POLLRDNORM)))
			return POLLIN | POLLRDNORM;
		break;
	case PK_PIPE_WR:
		if ((r & POLLOUT) && (e & (POLLOUT | POLLWRNORM)))
			return POLLOUT | POLLWRNORM;
		break;
	case PK_SOCK:
	case PK_SOCK_ERRKEY:
		if ((e & SOCK_IN_KEY) && sock_has_data(req->fd, r))
			return SOCK_IN_KEY;
		if ((e & SOCK_OUT_KEY) && (r & POLLOUT) && !(r & (POLLHUP | POLLRDHUP | POLLERR)))
			return SOCK_OUT_KEY;
		if (req->poll_kind == PK_SOCK_ERRKEY && (r & POLLERR))
			return POLLERR;
		break;
	case PK_EPOLL:
		/* its only wakeup says POLLIN */
		return (r & POLLIN) && (e & POLLIN) ? POLLIN : r & e & (POLLERR | POLLHUP);
	}
	return r & e;
}

/* what the thread's poll(2) watches: the events asked for, and those a
 * wakeup that would complete the kernel's poll makes ready (a socket's
 * data completes a poll for POLLPRI or POLLRDBAND alone, its poll saying
 * POLLIN; an epoll descriptor's wakeup completes only a poll for POLLIN),
 * given READY, the file's last readiness (a socket shut down for reading
 * is readable for good, and its shutdown completes no poll for those) */
static short watch_events(const struct aio_kiocb *req, short ready)
{
	short w = req->events;

	if ((req->poll_kind == PK_SOCK || req->poll_kind == PK_SOCK_ERRKEY) &&
	    (w & (POLLPRI | POLLRDBAND)) && !(ready & POLLRDHUP))
		w |= POLLIN;
	if (req->poll_kind == PK_EPOLL && !(w & POLLIN))
		w &= (short)~POLLRDNORM;
	return w;
}

static void *poll_thread(void *arg)
{
	struct aio_kiocb *req = arg;
	struct kioctx *ctx = req->ctx;
	struct pollfd p[2] = { { req->fd, 0, 0 }, { req->cancel_fd, POLLIN, 0 } };
	short mask = 0, ready = 0;
	bool cancelled;

	for (;;) {
		p[0].events = watch_events(req, ready);
		while (poll(p, 2, -1) < 0 && errno == EINTR)
			;
		if (p[1].revents)
			break;                 /* cancelled */
		mask = woken_mask(req, &ready);
		if (mask)
			break;
		/* what woke it is gone again (another reader took the data):
		 * the kernel's keyless wakeup keeps waiting then too */
	}
	crit_mutex_lock(&ctx->active_lock);
	cancelled = !unlink_active(ctx, req);
	crit_mutex_unlock(&ctx->active_lock);
	/* cancelled: 0, as the kernel's (its completion skips the poll) */
	aio_complete(req, cancelled ? 0 : mask, 0);
	return NULL;
}

/* a thread for REQ, every signal blocked.  0 or -errno. */
static int start_poll_thread(struct aio_kiocb *req)
{
	return aio_start_thread(poll_thread, req);
}

/* aio_poll: the kernel's checks, then at once or pending */
int aio_poll(struct aio_kiocb *req, const struct iocb *cb, int fd, int fl)
{
	struct kioctx *ctx = req->ctx;
	short ready;
	int err;

	if ((uint16_t)cb->aio_buf != cb->aio_buf)
		return -EINVAL;                 /* events outside the poll mask */
	if (cb->aio_offset || cb->aio_nbytes || cb->aio_rw_flags)
		return -EINVAL;
	req->events = (short)(cb->aio_buf | POLLERR | POLLHUP);
	req->fd = fd;
	ready = ready_now(req);
	req->poll_kind = (uint8_t)file_kind(fd, fl);
	req->fd = -1;
	if (ready) {
		aio_complete(req, ready, 0);
		return 0;
	}
	/* a file that never waits, or waits on two queues: the kernel's AIO
	 * has nothing to wait on, EINVAL */
	if (req->poll_kind == PK_NOWAIT || req->poll_kind == PK_TWO_QUEUES)
		return -EINVAL;
	req->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	req->cancel_fd = eventfd(0, EFD_CLOEXEC);
	if (req->fd < 0 || req->cancel_fd < 0)
		return -EAGAIN;
	crit_mutex_lock(&ctx->active_lock);
	req->on_active = true;
	req->next_active = ctx->active;
	ctx->active = req;
	err = start_poll_thread(req);
	if (err)
		unlink_active(ctx, req);
	crit_mutex_unlock(&ctx->active_lock);
	return err ? -EAGAIN : 0;
}

static void signal_cancel(struct aio_kiocb *req)
{
	uint64_t one = 1;

	if (sys_write(req->cancel_fd, &one, sizeof(one)) < 0) {
		/* an eventfd far from overflow: cannot fail */
	}
}

int aio_poll_cancel(struct kioctx *ctx, uint64_t obj)
{
	struct aio_kiocb *req;
	int ret = -EINVAL;

	crit_mutex_lock(&ctx->active_lock);
	for (req = ctx->active; req; req = req->next_active)
		if (req->obj == obj)
			break;
	if (req && unlink_active(ctx, req)) {
		signal_cancel(req);   /* the thread completes it; req lives until then */
		ret = -EINPROGRESS;
	}
	crit_mutex_unlock(&ctx->active_lock);
	return ret;
}

void aio_poll_cancel_all(struct kioctx *ctx)
{
	crit_mutex_lock(&ctx->active_lock);
	while (ctx->active) {
		struct aio_kiocb *req = ctx->active;

		unlink_active(ctx, req);
		signal_cancel(req);
	}
	crit_mutex_unlock(&ctx->active_lock);
}
