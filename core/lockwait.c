/*
 * lockwait.c - how long a thread waits for a lock another thread holds.
 *
 * The kernel's IPC locks are held for microseconds by running tasks; uipc's
 * are in the arena, where a member can hold one and stop (SIGSTOP), or
 * write a lock word that names a live thread which does not hold it.  So
 * a wait is bounded the way the caller's own call is (issue 14):
 *
 * - A blocking call (semop, semtimedop, msgsnd, msgrcv) keeps its own
 *   timeout and stays interruptible while it waits for a lock: a handler
 *   of the program that is due (held off by the signal layer, or already
 *   run since the call began) gives EINTR, semtimedop's deadline EAGAIN.
 * - Any other call gives up after UIPC_LOCK_WAIT_MS (default 30 s) with
 *   EDEADLK: a lock held that long is held by a stopped process or one
 *   that does not let go; the call fails, it does not hang.
 * - fsck and the exit work set a shorter bound (lockwait_bound_max).
 *
 * core/lock.c asks lockwait_plan only for a plain ulock_acquire that found
 * its lock taken (an uncontended lock pays nothing), and gives the wait's
 * end to lockwait_result.  A holder that died is taken over at once
 * whatever the bound (lock.c looks at its alive word).
 */
#include <stdlib.h>

#include "core/core.h"

#define DEFAULT_MAX_MS 30000

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

int lockwait_plan(int64_t *deadline, unsigned *flags)
{
	const struct lockwait_bound *b = &lockwait_tls;

	if (b->suspended)
		return 0;
	*flags = 0;
	switch (b->kind) {
	case BOUND_BLOCKING:
		/* a handler ran since the call began: the kernel's call would
		 * have returned EINTR from its sleep */
		if (uipc_handler_due(b->hand0))
			return -EINTR;
		*flags = ULOCK_INTR;
		*deadline = b->deadline ? b->deadline : ULOCK_FOREVER;
		return 1;
	case BOUND_MAX:
		*deadline = mono_ns() + b->max_ns;
		return 1;
	default:
		*deadline = mono_ns() + default_max_ns();
		return 1;
	}
}

int lockwait_result(int r)
{
	if (r != -ETIMEDOUT)
		return r;
	return lockwait_tls.kind == BOUND_BLOCKING ? -EAGAIN : -EDEADLK;
}
