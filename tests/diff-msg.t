#!/bin/bash
# tests/diff-msg.t - System V message queue scenarios run against the kernel
# and under uipc, transcripts compared line by line (tests/diff/msg_*.c,
# helpers tests/diff/msgdt.h, driver tests/diff/lib.sh).
# UIPC_DIFF_SELFTEST=1 compares the kernel with itself.
. "$(dirname "$0")/diff/lib.sh"
dt_require_lib

dt_run_programs "msg_basic msg_wake msg_ring"
