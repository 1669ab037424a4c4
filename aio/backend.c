/*
 * backend.c - who performs the I/O that io_submit could not finish at
 * once: an io_uring of the process's own (uring.c) where the kernel
 * allows it, else a pool of threads (worker.c).
 *
 * UIPC_AIO_BACKEND chooses: "uring" or "threads"; unset, empty or
 * "kernel", uring where it can be had, and O_DIRECT reads and writes in a
 * kernel AIO context (kaio.c) where the kernel's AIO can be had.  io_uring cannot be had when io_uring_setup fails
 * (sysctl kernel.io_uring_disabled, a kernel without it or without the
 * opcodes used) or a seccomp filter refuses it; then threads, said once on
 * stderr if uring was asked for by name.  The choice is made at the first
 * request that needs a backend, once per process (again in a fork child).
 */
#include <stdio.h>

#include "aio/aio.h"

enum { BACKEND_UNSET, BACKEND_THREADS, BACKEND_URING };

static _Atomic int backend;
static pthread_mutex_t choose_lock = PTHREAD_MUTEX_INITIALIZER;

static int choose(void)
{
	const char *e = getenv("UIPC_AIO_BACKEND");
	bool want_threads = e && !strcmp(e, "threads");
	bool named_uring = e && !strcmp(e, "uring");
	int err;

	if (e && *e && !want_threads && !named_uring && strcmp(e, "kernel"))
		fprintf(stderr, "uipc: UIPC_AIO_BACKEND=%s is unknown (uring, threads, kernel): "
			"the default\n", e);
	if (want_threads)
		return BACKEND_THREADS;
	err = aio_uring_start();
	if (!err)
		return BACKEND_URING;
	if (named_uring)
		fprintf(stderr, "uipc: UIPC_AIO_BACKEND=uring: io_uring is not available (%s); "
			"using threads\n", strerror(-err));
	return BACKEND_THREADS;
}

static int chosen(void)
{
	int b = atomic_load_explicit(&backend, memory_order_acquire);

	if (likely(b != BACKEND_UNSET))
		return b;
	crit_mutex_lock(&choose_lock);
	b = atomic_load(&backend);
	if (b == BACKEND_UNSET) {
		b = choose();
		atomic_store_explicit(&backend, b, memory_order_release);
	}
	crit_mutex_unlock(&choose_lock);
	return b;
}

int aio_queue_work(struct aio_kiocb *req)
{
	if (chosen() == BACKEND_URING) {
		aio_uring_queue(req);
		return 0;
	}
	return aio_threads_queue(req);
}

bool aio_queue_direct(struct aio_kiocb *req, int fd)
{
	if (chosen() != BACKEND_URING || !aio_uring_direct())
		return false;
	aio_uring_batch_add(req, fd);
	return true;
}

void aio_queue_flush(void)
{
	if (atomic_load_explicit(&backend, memory_order_relaxed) == BACKEND_URING) {
		aio_uring_batch_flush();
		aio_uring_kick();
	}
}

void aio_backend_fork_child(void)
{
	pthread_mutex_init(&choose_lock, NULL);
	atomic_store(&backend, BACKEND_UNSET);
	aio_threads_fork_child();
	aio_uring_fork_child();
	aio_kaio_fork_child();
	aio_pool_fork_child();
}
