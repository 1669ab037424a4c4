#!/bin/bash
# tests/unit-crash-msg.t - SIGKILL at every journaled store of a message
# queue workload (tests/unit/crash_msg.c), in a fresh namespace removed
# afterwards.
. "$(dirname "$0")/unit/unit.sh"
unit_setup crash_msg
UIPC_DIR=$dir UIPC_NS=crash LD_PRELOAD=$lib timeout 300 "$prog"
