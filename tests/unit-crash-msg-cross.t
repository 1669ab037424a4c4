#!/bin/bash
# tests/unit-crash-msg-cross.t - SIGKILL at every failpoint of a message
# queue workload (a queue's creation), with another process sending to the
# queue before the msg ids lock is recovered (tests/unit/crash_msg_cross.c),
# in a fresh namespace removed afterwards.
. "$(dirname "$0")/unit/unit.sh"
unit_setup crash_msg_cross
UIPC_DIR=$dir UIPC_NS=msgcross LD_PRELOAD=$lib timeout 300 "$prog"
