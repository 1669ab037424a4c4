#!/bin/bash
# tests/unit-crash.t - SIGKILL at every journaled store of a semaphore
# workload (tests/unit/crash_sem.c), in a fresh namespace removed afterwards.
. "$(dirname "$0")/unit/unit.sh"
unit_setup crash_sem
UIPC_DIR=$dir UIPC_NS=crash LD_PRELOAD=$lib timeout 300 "$prog"
