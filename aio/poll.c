/*
 * poll.c - IOCB_CMD_POLL: a one-shot poll of a file, completed when the
 * file is ready, and the only request io_cancel can cancel (as in the
 * kernel).
 *
 * A file already ready completes inside io_submit.  Otherwise the request
 * goes on the context's active list and a thread of its own (a pending
 * poll may wait forever: it must not hold one of the I/O workers) sleeps
 * in poll(2) on the file and on the request's cancel eventfd.  io_cancel
 * takes the request off the list and writes the eventfd; the thread then
 * completes it with the file's readiness at that moment (0 when not
 * ready), as the kernel's cancelled poll does.
 */
#include <poll.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/eventfd.h>

#include "aio/aio.h"

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

#define POLL_IN_FAMILY  (POLLIN | POLLPRI | POLLRDNORM | POLLRDBAND | POLLRDHUP)
#define POLL_OUT_FAMILY (POLLOUT | POLLWRNORM | POLLWRBAND)

/*
 * What a poll woken by its file reports.  The kernel reports the wakeup's
 * own mask, which names the kind of event that happened and its companions
 * (a pipe written to: POLLIN | POLLRDNORM, whatever was asked), not the
 * events asked for; user space sees no wakeup key, so: the file's
 * readiness now in the families asked for (reading, writing), with
 * POLLERR and POLLHUP.
 */
static short woken_mask(struct aio_kiocb *req)
{
	short fam = POLLERR | POLLHUP;
	struct pollfd p = { req->fd, POLL_IN_FAMILY | POLL_OUT_FAMILY, 0 };

	if (req->events & POLL_IN_FAMILY)
		fam |= POLL_IN_FAMILY;
	if (req->events & POLL_OUT_FAMILY)
		fam |= POLL_OUT_FAMILY;
	return poll(&p, 1, 0) == 1 ? p.revents & fam : 0;
}

static void *poll_thread(void *arg)
{
	struct aio_kiocb *req = arg;
	struct kioctx *ctx = req->ctx;
	struct pollfd p[2] = { { req->fd, req->events, 0 }, { req->cancel_fd, POLLIN, 0 } };
	bool cancelled;

	while (poll(p, 2, -1) < 0 && errno == EINTR)
		;
	pthread_mutex_lock(&ctx->active_lock);
	cancelled = !unlink_active(ctx, req);
	pthread_mutex_unlock(&ctx->active_lock);
	/* cancelled: the readiness asked for, now (the kernel's answer) */
	aio_complete(req, cancelled ? ready_now(req) : woken_mask(req), 0);
	return NULL;
}

/* a thread for REQ, every signal blocked.  0 or -errno. */
static int start_poll_thread(struct aio_kiocb *req)
{
	return aio_start_thread(poll_thread, req);
}

/* aio_poll: the kernel's checks, then at once or pending */
int aio_poll(struct aio_kiocb *req, const struct iocb *cb, int fd)
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
	req->fd = -1;
	if (ready) {
		aio_complete(req, ready, 0);
		return 0;
	}
	req->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	req->cancel_fd = eventfd(0, EFD_CLOEXEC);
	if (req->fd < 0 || req->cancel_fd < 0)
		return -EAGAIN;
	pthread_mutex_lock(&ctx->active_lock);
	req->on_active = true;
	req->next_active = ctx->active;
	ctx->active = req;
	err = start_poll_thread(req);
	if (err)
		unlink_active(ctx, req);
	pthread_mutex_unlock(&ctx->active_lock);
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

	pthread_mutex_lock(&ctx->active_lock);
	for (req = ctx->active; req; req = req->next_active)
		if (req->obj == obj)
			break;
	if (req && unlink_active(ctx, req)) {
		signal_cancel(req);   /* the thread completes it; req lives until then */
		ret = -EINPROGRESS;
	}
	pthread_mutex_unlock(&ctx->active_lock);
	return ret;
}

void aio_poll_cancel_all(struct kioctx *ctx)
{
	pthread_mutex_lock(&ctx->active_lock);
	while (ctx->active) {
		struct aio_kiocb *req = ctx->active;

		unlink_active(ctx, req);
		signal_cancel(req);
	}
	pthread_mutex_unlock(&ctx->active_lock);
}
