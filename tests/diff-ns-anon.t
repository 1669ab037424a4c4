#!/bin/bash
# tests/diff-ns-anon.t - the System V scenarios of diff-sem.t, diff-msg.t
# and diff-shm.t with the uipc side inside an anonymous namespace: the
# program is started by util-linux's unshare --ipc under uipc, so the
# objects live in the namespace's memfd and its segments in slots of it
# (docs/namespaces.md).  Kernel side as always (a private namespace).
# Not here: shm_get, whose "flags" case makes a 1 PiB SHM_NORESERVE segment,
# larger than a slot (256 TiB, the documented limit of an anonymous one);
# sem_wake, sem_signal and msg_wake, which take long and exercise nothing
# that depends on where the arena lives.
. "$(dirname "$0")/diff/lib.sh"
dt_require_lib

DT_UIPC_WRAP="unshare --ipc --"
dt_run_programs "sem_get sem_op sem_ctl sem_ids sem_undo sem_perm msg_basic msg_ring shm_at shm_ctl shm_proc shm_perm shm_vma shm_remap shm_reuse proc_spawn"
