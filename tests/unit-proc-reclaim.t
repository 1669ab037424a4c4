#!/bin/bash
# tests/unit-proc-reclaim.t - the process slots of killed processes come
# back whatever pid_max is (tests/unit/proc_reclaim.c).
. "$(dirname "$0")/unit/unit.sh"
unit_setup proc_reclaim
UIPC_DIR=$dir UIPC_NS=reclaim LD_PRELOAD=$lib timeout 300 "$prog"
