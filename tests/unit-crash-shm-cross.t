#!/bin/bash
# tests/unit-crash-shm-cross.t - SIGKILL at every failpoint of shared memory
# workloads (a segment's last detach, IPC_RMID of an attached segment, a
# segment's creation, its creator's exit under shm_rmid_forced), with
# another process acting on the segment before the shm ids lock is
# recovered (tests/unit/crash_shm_cross.c), in a fresh namespace removed
# afterwards.
. "$(dirname "$0")/unit/unit.sh"
unit_setup crash_shm_cross
UIPC_DIR=$dir UIPC_NS=shmcross LD_PRELOAD=$lib timeout 300 "$prog"
