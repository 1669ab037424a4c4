#!/bin/bash
# tests/unit-rmid-crash.t - SIGKILL between the two commits of a semaphore
# array's IPC_RMID (tests/unit/rmid_crash.c), in a fresh namespace removed
# afterwards.
. "$(dirname "$0")/unit/unit.sh"
unit_setup rmid_crash
UIPC_DIR=$dir UIPC_NS=rmid LD_PRELOAD=$lib timeout 60 "$prog"
