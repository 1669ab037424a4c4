/*
 * aio_longjmp.c - a completion still reaches the AIO ring after a signal
 * handler left io_getevents by siglongjmp.
 *
 *   aio_longjmp FILE
 *
 * Each round drops FILE's pages (it must be on a disk, at least 64 MiB),
 * submits one 64 MiB buffered read of it and waits in io_getevents; a
 * timer's handler fires 2 ms later and siglongjmps out of the wait.  The
 * kernel abandons the call.  The read's completion must then be in the
 * context's ring (its head and tail, read without any call) within 5 s,
 * and io_destroy of the context must return within 5 s (nothing of the
 * call the jump left holds it).  Each round has a context of its own.  Where
 * io_getevents returns the event before the timer (the kernel reads a
 * buffered file inside io_submit), the round counts as delivered; the
 * last line says in how many rounds the jump came first (delivered or
 * not), which under uipc (its io_uring takes a read that is not cached)
 * is what the test is for.
 */
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include "tap.h"

#define READ_SIZE (64L << 20)
#define ROUNDS 3

struct user_ring {                 /* the head of the kernel's struct aio_ring */
	unsigned id, nr, head, tail;
};

static sigjmp_buf jump_out;

static void on_alarm(int sig)
{
	(void)sig;
	siglongjmp(jump_out, 1);
}

static long sys5(long n, long a, long b, long c, long d, long e)
{
	return syscall(n, a, b, c, d, e);
}

/* the event in CTX's ring within 5 s, read there without a call: the
 * tail of a context made for this one read moved.  (Not "tail != head":
 * a signal that comes as io_getevents returns the event, on its way out
 * of the kernel, jumps with the head already moved past it.) */
static int ring_gets_event(aio_context_t ctx)
{
	volatile struct user_ring *r = (volatile struct user_ring *)ctx;

	for (int i = 0; i < 500; i++) {
		if (__atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) != 0)
			return 1;
		usleep(10000);
	}
	return 0;
}

struct destroy {
	aio_context_t ctx;
	long ret;
	int done;
};

static void *destroy_ctx(void *p)
{
	struct destroy *d = p;

	d->ret = sys5(SYS_io_destroy, (long)d->ctx, 0, 0, 0, 0);
	__atomic_store_n(&d->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* io_destroy of CTX returned 0 within 5 s (in a thread: a wait for ever
 * must not hang the test; the thread is left behind then) */
static int destroyed_in_time(aio_context_t ctx)
{
	static struct destroy d[ROUNDS];
	static int n;
	struct destroy *x = &d[n++ % ROUNDS];
	pthread_t t;

	x->ctx = ctx;
	x->done = 0;
	if (pthread_create(&t, NULL, destroy_ctx, x))
		return 0;
	pthread_detach(t);
	for (int i = 0; i < 500; i++) {
		if (__atomic_load_n(&x->done, __ATOMIC_ACQUIRE))
			return x->ret == 0;
		usleep(10000);
	}
	return 0;
}

/* one round: 1 delivered after a jump, 2 delivered by io_getevents
 * before the timer, 0 lost; *DESTROYED whether io_destroy returned 0 in
 * time afterwards */
static int one_round(int fd, char *buf, int *destroyed)
{
	aio_context_t ctx = 0;
	struct iocb cb, *cbs[1] = { &cb };
	struct io_event ev[1];
	struct itimerval it = { { 0, 0 }, { 0, 2000 } }, off = { { 0, 0 }, { 0, 0 } };
	int got;

	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (sys5(SYS_io_setup, 4, (long)&ctx, 0, 0, 0))
		return 0;
	memset(&cb, 0, sizeof(cb));
	cb.aio_lio_opcode = IOCB_CMD_PREAD;
	cb.aio_fildes = (unsigned)fd;
	cb.aio_buf = (unsigned long)buf;
	cb.aio_nbytes = READ_SIZE;
	if (sys5(SYS_io_submit, (long)ctx, 1, (long)cbs, 0, 0) != 1)
		return 0;
	if (!sigsetjmp(jump_out, 1)) {
		setitimer(ITIMER_REAL, &it, NULL);
		got = sys5(SYS_io_getevents, (long)ctx, 1, 1, (long)ev, 0) == 1 ? 2 : 0;
		setitimer(ITIMER_REAL, &off, NULL);
	} else {
		got = ring_gets_event(ctx);
	}
	*destroyed = destroyed_in_time(ctx);
	return got;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	char *buf = malloc(READ_SIZE), what[160];
	int fd = argc > 1 ? open(argv[1], O_RDONLY) : -1, jumped = 0, lost = 0, stuck = 0;

	if (fd < 0 || !buf) {
		printf("1..1\nnot ok 1 - open %s\n", argc > 1 ? argv[1] : "(no FILE)");
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	for (int i = 0; i < ROUNDS; i++) {
		int destroyed, got = one_round(fd, buf, &destroyed);

		jumped += got != 2;
		lost += got == 0;
		stuck += !destroyed;
	}
	snprintf(what, sizeof(what), "every read's completion reached the ring after a handler "
		 "jumped out of io_getevents (%d of %d lost)", lost, ROUNDS);
	ok(lost == 0, what);
	snprintf(what, sizeof(what), "io_destroy of each context returned 0 within 5 s after "
		 "the jump (%d of %d did not)", stuck, ROUNDS);
	ok(stuck == 0, what);
	printf("1..%d\n# jumps before the completion: %d of %d\n", tap_n, jumped, ROUNDS);
	return tap_failed != 0;
}
