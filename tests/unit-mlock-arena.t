#!/bin/bash
# tests/unit-mlock-arena.t - mlockall locks the program's memory and its
# attachments but not the namespace arena (tests/unit/mlock_arena.c): on
# the kernel (a fresh IPC namespace) and under uipc (a fresh namespace),
# with mlockall after the first IPC call and before it.
. "$(dirname "$0")/unit/unit.sh"
unit_setup mlock_arena
out=$(for mode in current future; do
	echo "# kernel, $mode"
	timeout 60 unshare --ipc -- "$prog" $mode || echo "not ok - kernel $mode: exit $?"
	echo "# uipc, $mode"
	UIPC_DIR=$dir UIPC_NS=ml-$mode LD_PRELOAD=$lib timeout 60 "$prog" $mode ||
		echo "not ok - uipc $mode: exit $?"
done)
echo "$out"
echo "1..$(echo "$out" | grep -cE '^(not )?ok')"
