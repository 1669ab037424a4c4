/*
 * aio.c - libaio's names of the native AIO calls: io_setup, io_destroy,
 * io_submit, io_cancel, io_getevents, io_pgetevents, and io_queue_init /
 * io_queue_release / io_queue_wait built on them.  With LD_PRELOAD they
 * stand in front of libaio.so.1's (whose calls among themselves go
 * through its PLT, so they reach these too).
 *
 * libaio's convention, not libc's: the result or -errno, errno untouched.
 * Its io_getevents answers 0 without a system call when the timeout is
 * zero and the ring is empty; so does this one (even for arguments the
 * system call would refuse), reading the ring fault-safely.
 *
 * io_getevents and io_pgetevents read the program's handler count first,
 * as sysv.c's blocking calls do (ipc/ipc.h).
 */
#include <signal.h>

#include "aio/aio.h"
#include "entry/entry.h"

typedef struct io_context *io_context_t;

int io_setup(int maxevents, io_context_t *ctxp)
{
	return (int)ksys_io_setup((unsigned)maxevents, (aio_context_t *)ctxp);
}

int io_destroy(io_context_t ctx)
{
	return (int)ksys_io_destroy((aio_context_t)(uintptr_t)ctx);
}

int io_submit(io_context_t ctx, long nr, struct iocb **ios)
{
	return (int)ksys_io_submit((aio_context_t)(uintptr_t)ctx, nr, ios);
}

int io_cancel(io_context_t ctx, struct iocb *iocb, struct io_event *evt)
{
	return (int)ksys_io_cancel((aio_context_t)(uintptr_t)ctx, iocb, evt);
}

/* libaio's user-space answer: a zero timeout and nothing in the ring */
static bool ring_empty_now(io_context_t ctx, const struct timespec *timeout)
{
	struct aio_ring hdr;
	struct timespec ts;

	if (!ctx || !timeout)
		return false;
	if (uipc_copy_from_user(&hdr, ctx, sizeof(hdr)) || hdr.magic != AIO_RING_MAGIC)
		return false;
	if (uipc_copy_from_user(&ts, timeout, sizeof(ts)) || ts.tv_sec || ts.tv_nsec)
		return false;
	return hdr.head == hdr.tail;
}

int io_getevents(io_context_t ctx, long min_nr, long nr, struct io_event *events,
		 struct timespec *timeout)
{
	unsigned hand0 = uipc_handler_gen();

	if (ring_empty_now(ctx, timeout))
		return 0;
	return (int)ksys_io_getevents(hand0, (aio_context_t)(uintptr_t)ctx, min_nr, nr,
				      events, timeout);
}

int io_pgetevents(io_context_t ctx, long min_nr, long nr, struct io_event *events,
		  struct timespec *timeout, sigset_t *sigmask)
{
	unsigned hand0 = uipc_handler_gen();
	struct { const sigset_t *ss; size_t len; } usig = { sigmask, _NSIG / 8 };

	if (ring_empty_now(ctx, timeout))
		return 0;
	return (int)ksys_io_pgetevents(hand0, (aio_context_t)(uintptr_t)ctx, min_nr, nr,
				       events, timeout, &usig);
}

int io_queue_init(int maxevents, io_context_t *ctxp)
{
	if (maxevents <= 0)
		return -EINVAL;
	*ctxp = NULL;
	return io_setup(maxevents, ctxp);
}

int io_queue_release(io_context_t ctx)
{
	return io_destroy(ctx);
}

int io_queue_wait(io_context_t ctx, struct timespec *timeout)
{
	return io_getevents(ctx, 0, 0, NULL, timeout);
}
