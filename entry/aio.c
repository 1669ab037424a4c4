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
 *
 * And the waits that a thread's own io_uring requests disturb, with
 * UIPC_AIO_SUBMIT=auto or direct (by default only uipc's ring thread
 * enters requests, and nothing is disturbed): a thread that entered
 * requests into uipc's io_uring itself (aio/uring.c: under auto, one that
 * reaps them in io_getevents) takes their completion work, which the
 * kernel runs by interrupting what the thread sleeps in; the kernel
 * restarts most calls then, but epoll_wait, epoll_pwait, epoll_pwait2,
 * sigtimedwait and sigwaitinfo return EINTR, which the kernel's AIO never
 * causes.  Those are made again here for the time left when no handler
 * of the program ran (nor a stop), and the thread's next requests go
 * through the ring thread (it waits elsewhere than in io_getevents).
 */
#include <dlfcn.h>
#include <signal.h>
#include <sys/epoll.h>

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
	unsigned hand0 = uipc_handler_gen();

	return (int)ksys_io_submit(hand0, (aio_context_t)(uintptr_t)ctx, nr, ios);
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

/* ---- waits that completion work must not end ---- */

struct again {
	unsigned hand0, cont0;
	int64_t deadline;            /* mono_ns(), or -1 */
};

/* a wait with TIMEOUT_NS (< 0: none) begins: whether it is to be watched */
static bool again_begin(struct again *a, int64_t timeout_ns)
{
	if (!timeout_ns || !aio_uring_entered())
		return false;
	a->hand0 = uipc_handler_gen();
	a->cont0 = uipc_cont_gen();
	a->deadline = timeout_ns < 0 ? -1 : mono_ns() + timeout_ns;
	aio_uring_not_reaper();
	return true;
}

/* the wait returned -1: true to make it again, with *LEFT_NS left (-1:
 * no timeout); false with errno as it was */
static bool again_check(const struct again *a, int64_t *left_ns)
{
	int e = errno;

	if (e != EINTR || uipc_handler_gen() != a->hand0 || uipc_cont_gen() != a->cont0)
		return false;
	*left_ns = -1;
	if (a->deadline >= 0) {
		*left_ns = a->deadline - mono_ns();
		if (*left_ns < 0)
			*left_ns = 0;
	}
	errno = e;
	return true;
}

static int ms_left(int64_t ns)
{
	return ns < 0 ? -1 : (int)((ns + 999999) / 1000000);
}

int epoll_wait(int epfd, struct epoll_event *ev, int max, int tmo)
{
	typedef int (*fn)(int, struct epoll_event *, int, int);
	struct again a;
	int64_t left;
	int r;

	NEXT_FN("epoll_wait", fn);
	if (!again_begin(&a, tmo < 0 ? -1 : tmo * 1000000LL))
		return real_(epfd, ev, max, tmo);
	while ((r = real_(epfd, ev, max, tmo)) < 0 && again_check(&a, &left)) {
		tmo = ms_left(left);
		if (!tmo)
			return 0;
	}
	return r;
}

/* epoll_pwait is trap.c's (SIGSYS kept out of its mask), through this */
int aio_epoll_pwait(int (*real)(int, struct epoll_event *, int, int, const sigset_t *),
		    int epfd, struct epoll_event *ev, int max, int tmo, const sigset_t *mask)
{
	struct again a;
	int64_t left;
	int r;

	if (!again_begin(&a, tmo < 0 ? -1 : tmo * 1000000LL))
		return real(epfd, ev, max, tmo, mask);
	while ((r = real(epfd, ev, max, tmo, mask)) < 0 && again_check(&a, &left)) {
		tmo = ms_left(left);
		if (!tmo)
			return 0;
	}
	return r;
}

static int64_t ts_ns(const struct timespec *t)
{
	struct timespec v;

	if (!t)
		return -1;
	if (uipc_copy_from_user(&v, t, sizeof(v)) || v.tv_sec < 0 || v.tv_nsec < 0)
		return 0;   /* the call itself answers EFAULT or EINVAL */
	return v.tv_sec * 1000000000LL + v.tv_nsec;
}

int epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *tmo,
		 const sigset_t *mask)
{
	typedef int (*fn)(int, struct epoll_event *, int, const struct timespec *,
			  const sigset_t *);
	struct timespec t;
	struct again a;
	int64_t left;
	int r;

	NEXT_FN("epoll_pwait2", fn);
	if (!again_begin(&a, ts_ns(tmo)))
		return real_(epfd, ev, max, tmo, mask);
	while ((r = real_(epfd, ev, max, tmo, mask)) < 0 && again_check(&a, &left)) {
		if (left >= 0) {
			t.tv_sec = left / 1000000000;
			t.tv_nsec = left % 1000000000;
			tmo = &t;
			if (!left)
				return 0;
		}
	}
	return r;
}

int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *tmo)
{
	typedef int (*fn)(const sigset_t *, siginfo_t *, const struct timespec *);
	struct timespec t;
	struct again a;
	int64_t left;
	int r;

	NEXT_FN("sigtimedwait", fn);
	if (!again_begin(&a, ts_ns(tmo)))
		return real_(set, info, tmo);
	while ((r = real_(set, info, tmo)) < 0 && again_check(&a, &left)) {
		if (left >= 0) {
			t.tv_sec = left / 1000000000;
			t.tv_nsec = left % 1000000000;
			tmo = &t;
			if (!left) {
				errno = EAGAIN;
				return -1;
			}
		}
	}
	return r;
}

int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	return sigtimedwait(set, info, NULL);
}
