#!/bin/bash
# tests/unit-proc-reclaim.t - the slots of processes killed without their
# exit work are reclaimed whatever pid_max is (issue 14): 300 children
# register and are SIGKILLed with pids that do not come back; the process
# table stays small and their SEM_UNDO adjustments are undone.
. "$(dirname "$0")/unit/unit.sh"
unit_setup proc_reclaim
UIPC_DIR=$dir UIPC_NS=reclaim LD_PRELOAD=$lib timeout 120 "$prog" "$dir/uipc-$(id -u)-reclaim" 300
