#!/bin/bash
# tests/diff-sem.t - System V semaphore scenarios run against the kernel and
# under uipc, transcripts compared line by line (tests/diff/sem_*.c, driver
# tests/diff/lib.sh).  UIPC_DIFF_SELFTEST=1 compares the kernel with itself.
. "$(dirname "$0")/diff/lib.sh"
dt_require_lib

dt_run_programs "sem_get sem_op sem_ctl sem_ids sem_wake sem_signal sem_undo sem_perm"
