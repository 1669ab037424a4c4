#!/bin/bash
# tests/unit-presleep-crash.t - SIGKILL of a waker while it wakes a
# semaphore's pre-sleeper, whose sleep has no timeout
# (tests/unit/presleep_crash.c), in a fresh namespace removed afterwards.
. "$(dirname "$0")/unit/unit.sh"
unit_setup presleep_crash
UIPC_DIR=$dir UIPC_NS=presleep LD_PRELOAD=$lib timeout 300 "$prog"
