#!/bin/bash
# tests/unit-shm-fds.t - the segment files' fds uipc keeps are invisible to
# the application and keep no memory after the segment is destroyed
# (tests/unit/shm_fds.c), in a fresh namespace removed afterwards.
top=$(cd "$(dirname "$0")/.." && pwd)
prog=$top/build/tests/unit/shm_fds
lib=$top/build/libuipc.so
if [ ! -x "$prog" ] || [ ! -f "$lib" ]; then
	echo "1..1"
	echo "not ok 1 - $prog or $lib missing: run make test-progs"
	exit 1
fi
dir=$(mktemp -d /dev/shm/uipc-shmfds.XXXXXX)
trap 'rm -rf "$dir"' EXIT
UIPC_DIR=$dir UIPC_NS=fds LD_PRELOAD=$lib timeout 60 "$prog"
