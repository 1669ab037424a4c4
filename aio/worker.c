/*
 * worker.c - the threads that perform the I/O io_submit could not finish
 * at once (a cache miss, O_DIRECT, fsync), so that io_submit returns
 * without waiting for the disk.  A few threads per process (UIPC_AIO_WORKERS,
 * default 4), started on first need; one FIFO queue under a mutex, idle
 * threads sleep on a condition variable (a futex: no polling).  Requests
 * complete in any order, as the kernel's do.
 *
 * The threads block every signal: the program's handlers run on its own
 * threads, as they would with the kernel doing the I/O.  A fork child has
 * none of them (nor contexts, ctx.c), so it starts from nothing.
 *
 * This is the threads backend (UIPC_AIO_BACKEND=threads, or where io_uring
 * is refused: backend.c chooses); the io_uring backend (uring.c) also gives
 * it the requests io_uring answers -EAGAIN.
 */
#include <signal.h>

#include "aio/aio.h"

#define WORKERS_DEFAULT 4
#define WORKERS_MAX     64

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;
static struct aio_kiocb *q_head, *q_tail;      /* under q_lock */
static int n_threads, n_idle, q_len;            /* under q_lock */

static int workers_max(void)
{
	static int max;
	const char *e;

	if (!max) {
		e = getenv("UIPC_AIO_WORKERS");
		max = e && atoi(e) > 0 ? atoi(e) : WORKERS_DEFAULT;
		if (max > WORKERS_MAX)
			max = WORKERS_MAX;
	}
	return max;
}

/* the iovecs of REQ past the first SKIP bytes, in OUT (at most N) */
static int iov_skip(const struct aio_kiocb *req, int64_t skip, struct iovec *out, int n)
{
	int i, k = 0;

	for (i = 0; i < req->nr_iov && k < n; i++) {
		struct iovec v = req->iov[i];

		if (skip >= (int64_t)v.iov_len) {
			skip -= (int64_t)v.iov_len;
			continue;
		}
		v.iov_base = (char *)v.iov_base + skip;
		v.iov_len -= (size_t)skip;
		skip = 0;
		out[k++] = v;
	}
	return k;
}

int64_t aio_do_io_once(struct aio_kiocb *req, int extra_flags)
{
	struct iovec tmp[8], *iov = req->iov, *heap = NULL;
	int cnt = req->nr_iov, flags = req->rw_flags | extra_flags;
	off_t pos;
	ssize_t n;

	switch (req->opcode) {
	case IOCB_CMD_FSYNC:
		return fsync(req->fd) < 0 ? -errno : 0;
	case IOCB_CMD_FDSYNC:
		return fdatasync(req->fd) < 0 ? -errno : 0;
	}
	if (req->done) {
		iov = cnt <= 8 ? tmp : (heap = malloc(sizeof(*iov) * cnt));
		if (!iov)
			return -ENOMEM;
		cnt = iov_skip(req, req->done, iov, cnt);
	}
	/* -1: the file's own position, all a pipe or socket has */
	pos = req->stream ? -1 : req->pos + req->done;
	/* straight to the kernel: libc's wrappers are cancellation points,
	 * and io_submit is not one (the position's high half is 0 on a
	 * 64-bit system, -1 included) */
	n = sys_raw6(req->opcode == IOCB_CMD_PREAD || req->opcode == IOCB_CMD_PREADV ?
		     SYS_preadv2 : SYS_pwritev2, req->fd, (long)iov, cnt, (long)pos, 0, flags);
	if (heap)
		free(heap);
	return n;
}

int64_t aio_do_io(struct aio_kiocb *req, int extra_flags)
{
	int64_t n = aio_do_io_once(req, extra_flags);

	if (n < 0)
		return req->done + req->prior ? req->prior + req->done : n;
	return req->prior + req->done + n;
}

static struct aio_kiocb *dequeue(void)
{
	struct aio_kiocb *req;

	pthread_mutex_lock(&q_lock);
	while (!q_head) {
		n_idle++;
		pthread_cond_wait(&q_cond, &q_lock);
		n_idle--;
	}
	req = q_head;
	q_len--;
	q_head = req->next;
	if (!q_head)
		q_tail = NULL;
	pthread_mutex_unlock(&q_lock);
	return req;
}

static void *worker_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct aio_kiocb *req = dequeue();

		aio_complete(req, aio_do_io(req, 0), 0);
	}
	return NULL;
}

/* a detached thread running FN(ARG) with a small stack and every signal
 * blocked (the program's handlers never run on uipc's threads).  0 or
 * -errno. */
int aio_start_thread(void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	pthread_attr_t a;
	pthread_t t;
	int err;

	sigfillset(&all);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 64 * 1024);
	uipc_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&t, &a, fn, arg);
	uipc_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	return -err;
}

/* one more worker (q_lock held).  0 or -errno. */
static int start_worker(void)
{
	int err = aio_start_thread(worker_main, NULL);

	if (err)
		return err;
	n_threads++;
	return 0;
}

int aio_threads_queue(struct aio_kiocb *req)
{
	int err = 0;

	req->next = NULL;
	crit_mutex_lock(&q_lock);
	if (q_len >= n_idle && n_threads < workers_max())
		err = start_worker();
	if (err && n_threads == 0) {
		crit_mutex_unlock(&q_lock);
		return -EAGAIN;
	}
	if (q_tail)
		q_tail->next = req;
	else
		q_head = req;
	q_tail = req;
	q_len++;
	pthread_cond_signal(&q_cond);
	crit_mutex_unlock(&q_lock);
	return 0;
}

void aio_threads_fork_child(void)
{
	pthread_mutex_init(&q_lock, NULL);
	pthread_cond_init(&q_cond, NULL);
	q_head = q_tail = NULL;   /* the parent's requests: the parent completes them */
	n_threads = n_idle = q_len = 0;
}
