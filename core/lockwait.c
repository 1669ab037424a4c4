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

/* this thread's bound (core.h: set inline by the callers) */
__thread struct lockwait_bound lockwait_tls;

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

/* the end of the next slice of wait W (absolute, CLOCK_MONOTONIC) */
void lockwait_deadline(struct lockwait *w, struct timespec *ts)
{
	int64_t now = mono_ns(), len, end;

	if (!w->start)
		w->start = now;
	if (w->slices == 0)
		len = FIRST_SLICE_NS;
	else if (lockwait_tls.kind == BOUND_BLOCKING && !lockwait_tls.suspended)
		len = BLOCKING_SLICE_NS;
	else
		len = LONG_SLICE_NS;
	end = now + len;
	if (lockwait_tls.kind == BOUND_BLOCKING && lockwait_tls.deadline && !lockwait_tls.suspended &&
	    lockwait_tls.deadline < end)
		end = lockwait_tls.deadline;
	if (lockwait_tls.kind == BOUND_MAX && !lockwait_tls.suspended && w->start + lockwait_tls.max_ns < end)
		end = w->start + lockwait_tls.max_ns;
	if (lockwait_tls.kind == BOUND_DEFAULT && !lockwait_tls.suspended && w->start + default_max_ns() < end)
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
	if (lockwait_tls.suspended)
		return 0;
	switch (lockwait_tls.kind) {
	case BOUND_BLOCKING:
		if (uipc_handler_due(lockwait_tls.hand0))
			return -EINTR;
		if (lockwait_tls.deadline && mono_ns() >= lockwait_tls.deadline)
			return -EAGAIN;
		return 0;
	case BOUND_MAX:
		return waited >= lockwait_tls.max_ns ? -EDEADLK : 0;
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
