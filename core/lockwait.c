/*
 * lockwait.c - how long a thread waits for a lock another thread holds.
 *
 * core/lock.c sleeps on a held lock in slices and calls lockwait_expired()
 * after each (the hook, marked there).  The kernel's IPC locks are held
 * for microseconds by running tasks; uipc's are in the arena, where a
 * member can hold one and stop (SIGSTOP), or write a lock word that names
 * a live thread which does not hold it.  So a wait is bounded the way the
 * caller's own call is (issue 14, item 6):
 *
 * - A blocking call (semop, semtimedop, msgsnd, msgrcv) keeps its own
 *   timeout and stays interruptible while it waits for a lock: a handler
 *   of the program that is due (held off by the signal layer, or already
 *   run) gives EINTR, semtimedop's deadline gives EAGAIN.  Its slices are
 *   short (BLOCKING_SLICE_NS), so a signal is noticed soon.
 * - Any other call gives up after UIPC_LOCK_WAIT_MS (default 30 s) with
 *   EDEADLK: a lock held that long is held by a stopped process or one
 *   that does not let go; the call fails, it does not hang.
 * - fsck and the exit work set a shorter bound (lockwait_bound_max).
 *
 * The first slice is short (FIRST_SLICE_NS) in every case: a lock word
 * that names no live thread of the namespace (a corrupt arena) is found
 * and broken after it, not after seconds.
 */
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/core.h"

#define FIRST_SLICE_NS    20000000LL     /* 20 ms */
#define BLOCKING_SLICE_NS 20000000LL
#define LONG_SLICE_NS     2000000000LL   /* 2 s, the wait before this hook */
#define DEFAULT_MAX_MS    30000

/* this thread's bound; kind 0: the default (none set) */
enum { BOUND_DEFAULT, BOUND_BLOCKING, BOUND_MAX };

static __thread struct {
	int kind;
	int depth;                 /* bounds set, nested: only the outermost counts */
	int64_t deadline;          /* BLOCKING: CLOCK_MONOTONIC ns, 0 none; MAX: its end */
	int64_t max_ns;            /* MAX: the longest wait */
	unsigned hand0;            /* BLOCKING: the handler count when the call began */
	int suspended;             /* waits that must not fail (lockwait_suspend) */
} bound;

static int64_t default_max_ns(void)
{
	static int64_t v = -1;

	if (v < 0) {
		const char *e = getenv("UIPC_LOCK_WAIT_MS");
		long ms = e && *e ? strtol(e, NULL, 10) : DEFAULT_MAX_MS;

		v = (ms > 0 ? ms : DEFAULT_MAX_MS) * 1000000LL;
	}
	return v;
}

void lockwait_bound_blocking(const struct timespec *deadline, unsigned hand0)
{
	if (bound.depth++)
		return;
	bound.kind = BOUND_BLOCKING;
	bound.deadline = deadline ? (int64_t)deadline->tv_sec * 1000000000LL + deadline->tv_nsec : 0;
	bound.hand0 = hand0;
}

void lockwait_bound_max(int64_t max_ns)
{
	if (bound.depth++)
		return;
	bound.kind = BOUND_MAX;
	bound.max_ns = max_ns;
}

void lockwait_bound_end(void)
{
	if (bound.depth > 0 && --bound.depth == 0)
		bound.kind = BOUND_DEFAULT;
}

void lockwait_suspend(void)
{
	bound.suspended++;
}

void lockwait_resume(void)
{
	if (bound.suspended > 0)
		bound.suspended--;
}

void lockwait_begin(struct lockwait *w)
{
	w->start = 0;
	w->slices = 0;
}

/* the end of the next slice of wait W (absolute, CLOCK_MONOTONIC) */
void lockwait_deadline(struct lockwait *w, struct timespec *ts)
{
	int64_t now = mono_ns(), len, end;

	if (!w->start)
		w->start = now;
	if (w->slices == 0)
		len = FIRST_SLICE_NS;
	else if (bound.kind == BOUND_BLOCKING && !bound.suspended)
		len = BLOCKING_SLICE_NS;
	else
		len = LONG_SLICE_NS;
	end = now + len;
	if (bound.kind == BOUND_BLOCKING && bound.deadline && !bound.suspended &&
	    bound.deadline < end)
		end = bound.deadline;
	if (bound.kind == BOUND_MAX && !bound.suspended && w->start + bound.max_ns < end)
		end = w->start + bound.max_ns;
	if (bound.kind == BOUND_DEFAULT && !bound.suspended && w->start + default_max_ns() < end)
		end = w->start + default_max_ns();
	if (end <= now)
		end = now + 1000000;    /* a short look at least */
	ts->tv_sec = end / 1000000000LL;
	ts->tv_nsec = end % 1000000000LL;
}

int lockwait_expired(struct lockwait *w)
{
	int64_t waited = mono_ns() - w->start;

	w->slices++;
	if (bound.suspended)
		return 0;
	switch (bound.kind) {
	case BOUND_BLOCKING:
		if (uipc_handler_due(bound.hand0))
			return -EINTR;
		if (bound.deadline && mono_ns() >= bound.deadline)
			return -EAGAIN;
		return 0;
	case BOUND_MAX:
		return waited >= bound.max_ns ? -EDEADLK : 0;
	default:
		return waited >= default_max_ns() ? -EDEADLK : 0;
	}
}

/* Is TID this very thread?  A lock word that names it names a lock it
 * does not hold (it would not wait for one it holds): a corrupt arena. */
bool lockwait_owner_is_me(pid_t tid)
{
	/* not cached: a fork child's thread has another tid (and this runs
	 * only after a slice timed out) */
	return tid == (pid_t)sys_syscall(SYS_gettid);
}
