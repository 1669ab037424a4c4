#!/bin/bash
# tests/unit-crash-fork.t - SIGKILL of a forker with shared memory
# attachments and of its child at random points around fork
# (tests/unit/crash_fork.c): no early destruction while the child lives, no
# count or segment left once both are dead.  The program is run first on
# the kernel (a private IPC namespace), as a check of the test itself, then
# under uipc in a fresh namespace removed afterwards.
. "$(dirname "$0")/unit/unit.sh"
unit_setup crash_fork
rounds=${UIPC_CRASH_FORK_ROUNDS:-300}
out=$(unshare --ipc -- timeout 120 "$prog" kernel "$rounds" 2>&1)
rc=$?
echo "$out" | sed 's/^/# kernel: /'
if [ "$rc" != 0 ]; then
	echo "1..1"
	echo "not ok 1 - the test itself fails on the kernel"
	exit 1
fi
UIPC_DIR=$dir UIPC_NS=crashfork LD_PRELOAD=$lib timeout 300 "$prog" "$rounds"
