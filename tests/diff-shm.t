#!/bin/bash
# tests/diff-shm.t - System V shared memory scenarios run against the kernel
# and under uipc, transcripts compared line by line (tests/diff/shm_*.c,
# driver tests/diff/lib.sh).  UIPC_DIFF_SELFTEST=1 compares the kernel with
# itself.
. "$(dirname "$0")/diff/lib.sh"
dt_require_lib

progs="shm_get shm_at shm_ctl shm_proc shm_perm"
todo=()
for p in $progs; do
	if [ -x "$DT_BIN/$p" ]; then
		for c in $(dt_list "$p"); do todo+=("$p $c"); done
	else
		todo+=("$p")
	fi
done
echo "1..${#todo[@]}"
for t in "${todo[@]}"; do
	set -- $t
	dt_case "$t" "$DT_BIN/$1" ${2:+"$2"}
done
[ "$DT_FAILED" = 0 ]
