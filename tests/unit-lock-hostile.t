#!/bin/bash
# tests/unit-lock-hostile.t - no value another member can write is ever
# followed as a pointer, by uipc, glibc or the kernel, and the arena holds
# no process address (tests/unit/lock_hostile.c: victims' robust lists,
# a scan of the arena, a hostile process planting addresses of the victims'
# memory in every lock and registry word it can reach while victims call,
# fork, end threads and are killed).
#
# The scan takes a word for an address when it falls inside a victim's
# mapping.  Two 32-bit fields side by side (a semaphore's value and its
# pid, a segment's creator and last pid) made such a word when the host's
# pids were near pid_max 32768: 0x7fef00000003 is semval 3, sempid 32751,
# and also an address in the mmap area.  Where pid namespaces can be made
# (root), the program runs in a fresh one, whose pids are small numbers
# that no mapping starts with.  And the namespace's mapping counts only up
# to what its arena handed out (its brk): its 4 GiB reserve at 0x7f... was
# hit by a semaphore array's nsems 3 and tag 0x7fcf side by side
# (0x7fcf00000003), tags counting up with every array made.
. "$(dirname "$0")/unit/unit.sh"
unit_setup lock_hostile
PIDNS=()
if unshare --pid --fork --mount-proc true 2>/dev/null; then
	PIDNS=(unshare --pid --fork --kill-child --mount-proc --)
fi
UIPC_DIR=$dir UIPC_NS=hostile LD_PRELOAD=$lib timeout 300 "${PIDNS[@]}" "$prog"
