/*
 * backoff.c - when a thread that spends its CPU waiting for a peer (a
 * yield to it, a spin) should stop doing so for a while (core.h: struct
 * late_policy).
 *
 * Such a wait pays while the peer runs meanwhile; with a task that keeps
 * a CPU busy beside them it costs more than it saves (a yield gives the
 * busy task a whole time slice, a spin holds a CPU the peer or the busy
 * task wanted).  Both show it the same way: the wait comes back late,
 * the thread having been off its CPU.  Issue 18's rule: when 3 of the
 * last 8 came back late, stop for a while, twice as long each time (16 ms
 * up to 1 s: the first waits after a stop cost as much again while the
 * busy task is still there); 8 in time in a row make the next stop short
 * again.
 */
#include "core/core.h"

#define LATE_OF_8        3
#define LATE_OFF_MIN_NS  16000000LL
#define LATE_OFF_MAX_NS  1000000000LL

void late_policy_note(struct late_policy *y, int64_t now, bool late)
{
	y->late = (uint8_t)(y->late << 1 | late);
	if (late && __builtin_popcount(y->late) >= LATE_OF_8) {
		if (y->off_ns < LATE_OFF_MIN_NS)
			y->off_ns = LATE_OFF_MIN_NS;
		y->off_until = now + y->off_ns;
		y->off_ns = y->off_ns * 2 > LATE_OFF_MAX_NS ? LATE_OFF_MAX_NS : y->off_ns * 2;
	} else if (!y->late) {
		y->off_ns = 0;
	}
}
