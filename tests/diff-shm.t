#!/bin/bash
# tests/diff-shm.t - System V shared memory scenarios run against the kernel
# and under uipc, transcripts compared line by line (tests/diff/shm_*.c and
# proc_spawn.c: vfork and posix_spawn with SEM_UNDO and attachments,
# driver tests/diff/lib.sh).  UIPC_DIFF_SELFTEST=1 compares the kernel with
# itself.
. "$(dirname "$0")/diff/lib.sh"
dt_require_lib

dt_run_programs "shm_get shm_at shm_ctl shm_proc shm_perm shm_vma shm_remap shm_reuse proc_spawn"
