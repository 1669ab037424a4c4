#!/bin/bash
# tests/unit-crash-cross.t - SIGKILL at every journaled store and commit
# point of semaphore workloads (an array lock's mode ending, single
# SEM_UNDO calls, a reaper, an array's creation), with other processes
# acting before the dead holder's lock is recovered
# (tests/unit/crash_sem_cross.c), in a fresh namespace removed afterwards.
. "$(dirname "$0")/unit/unit.sh"
unit_setup crash_sem_cross
UIPC_DIR=$dir UIPC_NS=cross LD_PRELOAD=$lib timeout 300 "$prog"
