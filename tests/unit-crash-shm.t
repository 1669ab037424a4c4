#!/bin/bash
# tests/unit-crash-shm.t - SIGKILL at every journaled store of a shared
# memory workload (tests/unit/crash_shm.c), in a fresh namespace removed
# afterwards.
. "$(dirname "$0")/unit/unit.sh"
unit_setup crash_shm
UIPC_DIR=$dir UIPC_NS=crash LD_PRELOAD=$lib timeout 300 "$prog"
