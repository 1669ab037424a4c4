#!/bin/bash
# tests/diff-aio.t - native AIO scenarios (libaio's calls, and syscall()) run against the
# kernel and under uipc, transcripts compared (tests/diff/aio_*.c).  uipc
# runs them with the backend UIPC_AIO_BACKEND names (default here: uring,
# the io_uring backend); tests/diff-aio-threads.t runs them with threads.
. "$(dirname "$0")/diff/lib.sh"
dt_require_lib
DT_UIPC_WRAP="UIPC_AIO_BACKEND=${UIPC_AIO_BACKEND:-uring}"

dt_run_programs "aio_setup aio_submit aio_events aio_sys aio_sysctl aio_stream aio_depth aio_poll"
