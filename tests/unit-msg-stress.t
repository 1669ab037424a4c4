#!/bin/bash
# tests/unit-msg-stress.t - many senders and receivers on one message queue
# (tests/unit/msg_stress.c): every message once, intact, in each sender's
# order, IPC_STAT within qbytes, EIDRM at removal.  Run against the kernel
# (in a private IPC namespace) and under uipc (a fresh namespace); both must
# pass.
top=$(cd "$(dirname "$0")/.." && pwd)
prog=$top/build/tests/unit/msg_stress
lib=$top/build/libuipc.so
per=${UIPC_MSG_STRESS:-100000}
if [ ! -x "$prog" ] || [ ! -f "$lib" ]; then
	echo "1..1"
	echo "not ok 1 - $prog or $lib missing: run make test-progs"
	exit 1
fi
dir=$(mktemp -d /dev/shm/uipc-msgstress.XXXXXX)
trap 'rm -rf "$dir"' EXIT
echo "1..2"
out=$(timeout 300 unshare --ipc -- "$prog" "$per" 2>&1)
if [ $? -eq 0 ] && ! grep -q '^not ok' <<<"$out"; then
	echo "ok 1 - kernel"
else
	echo "not ok 1 - kernel"
	sed 's/^/# /' <<<"$out"
fi
out=$(UIPC_DIR=$dir UIPC_NS=stress LD_PRELOAD=$lib timeout 300 "$prog" "$per" 2>&1)
if [ $? -eq 0 ] && ! grep -q '^not ok' <<<"$out"; then
	echo "ok 2 - uipc"
	grep '^#' <<<"$out"
else
	echo "not ok 2 - uipc"
	sed 's/^/# /' <<<"$out"
fi
