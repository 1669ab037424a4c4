#!/bin/bash
# tests/unit-crash-aio.t - SIGKILL a process with native AIO writes in
# flight under uipc (tests/unit/crash_aio.c): completed writes are in the
# file, nothing is torn, a sibling and the parent are unaffected.  With the
# backend UIPC_AIO_BACKEND names (default here: uring);
# tests/unit-crash-aio-threads.t runs it with threads.
. "$(dirname "$0")/unit/unit.sh"
unit_setup crash_aio
UIPC_AIO_BACKEND=${UIPC_AIO_BACKEND:-uring} UIPC_DIR=$dir UIPC_NS=crash LD_PRELOAD=$lib \
	timeout 300 "$prog"
