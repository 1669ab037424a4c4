#!/bin/bash
# tests/diff-aio.t - native AIO scenarios (libaio's calls, and syscall()) run against the
# kernel and under uipc, transcripts compared (tests/diff/aio_*.c).
. "$(dirname "$0")/diff/lib.sh"
dt_require_lib

dt_run_programs "aio_setup aio_submit aio_events aio_sys"
