#!/bin/bash
# tests/unit-aio-nr-unshare.t - fs.aio-nr across unshare(CLONE_NEWIPC)
# (tests/unit/aio_unshare.c): a context made before an unshare goes on
# counting in the namespace where it was made, until its io_destroy, the
# process's exit, SIGKILL or exec, also through a setns back, and against
# that namespace's fs.aio-max-nr (200 here, set by its owner); the new
# namespace counts only its own.  Each backend.
. "$(dirname "$0")/unit/unit.sh"
unit_setup aio_unshare
uipc=$top/build/uipc
status=0
for backend in uring threads; do
	ns=un-$backend
	UIPC_DIR=$dir UIPC_NS=$ns "$uipc" sysctl fs.aio-max-nr=200 >/dev/null || status=1
	UIPC_AIO_BACKEND=$backend UIPC_DIR=$dir UIPC_NS=$ns LD_PRELOAD=$lib timeout 60 "$prog" |
		sed "s/^\(\(not \)\{0,1\}ok [0-9]*\) - /\1 - [$backend] /" >"$dir/out.$backend"
	[ "${PIPESTATUS[0]}" = 0 ] || status=1
done
# one plan for both runs
for backend in uring threads; do
	unit_retap <"$dir/out.$backend"
done
echo "1..$total"
exit $status
