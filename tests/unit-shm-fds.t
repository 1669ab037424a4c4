#!/bin/bash
# tests/unit-shm-fds.t - the segment files' fds uipc keeps are invisible to
# the application and keep no memory after the segment is destroyed
# (tests/unit/shm_fds.c), in a fresh namespace removed afterwards.
. "$(dirname "$0")/unit/unit.sh"
unit_setup shm_fds
UIPC_DIR=$dir UIPC_NS=fds LD_PRELOAD=$lib timeout 60 "$prog"
