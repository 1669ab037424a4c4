#!/bin/bash
# tests/diff-aio.t - native AIO scenarios (libaio's calls, and syscall()) run against the
# kernel and under uipc, transcripts compared (tests/diff/aio_*.c).  uipc
# runs them with the backend UIPC_AIO_BACKEND names (default here: the
# default, O_DIRECT reads and writes in a kernel AIO context of uipc's own
# and the rest in an io_uring); tests/diff-aio-uring.t runs them with the
# io_uring alone, tests/diff-aio-threads.t with threads,
# tests/diff-aio-auto.t with UIPC_AIO_SUBMIT=auto.
. "$(dirname "$0")/diff/lib.sh"
dt_require_lib
DT_UIPC_WRAP="UIPC_AIO_BACKEND=${UIPC_AIO_BACKEND:-}${UIPC_AIO_SUBMIT:+ UIPC_AIO_SUBMIT=$UIPC_AIO_SUBMIT}"

# The kernel's fs.aio-nr is the machine's, not the IPC namespace's: the
# contexts of any other program on the machine change what io_setup near
# the limit and /proc/sys/fs/aio-nr say on the kernel side (uipc's count is
# its namespace's).  So the kernel side of a case runs when the machine
# holds no context, and again when one appeared by the time it ended, up
# to 120 times half a second apart; a machine that never gets there fails
# the case with that reason in its transcript.
aio_quiet() { [ "$(cat /proc/sys/fs/aio-nr)" = 0 ]; }
eval "dt_run_kernel_once() $(declare -f dt_run_kernel | tail -n +2)"
dt_run_kernel() {
	local out=$1 i
	for i in $(seq 120); do
		if aio_quiet; then
			dt_run_kernel_once "$@"
			aio_quiet && return 0
		fi
		sleep 0.5
	done
	echo "the machine's fs.aio-nr never read 0 around the run: other programs hold AIO contexts" >>"$out"
}

dt_run_programs "aio_setup aio_submit aio_events aio_sys aio_sysctl aio_stream aio_depth aio_poll aio_fdcache"
