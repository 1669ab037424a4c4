#!/bin/bash
# tests/diff-trap.t - trap mode: System V IPC and the credential calls made
# by system call instruction (tests/diff/rawinsn.h), run against the kernel
# and under `uipc run --trap` (a seccomp filter turns them into SIGSYS,
# libuipc's handler serves them; entry/trap.c), transcripts compared line by
# line.  trap_raw.c: sys_raw.c's cases on instructions, the program's own
# SIGSYS handler and filter, fork and exec, SIGSYS blocked every way, EINTR
# with nested traps, threads.  trap_cred.c: cred_raw.c's cases on
# instructions.  trap_remap.c: shm_remap.c's cases with remap_file_pages by
# instruction.  Then a few cases again with the library's own way in,
# UIPC_TRAP=1 in the environment of a preloaded program (no `uipc run`).
# Driver: tests/diff/lib.sh.
. "$(dirname "$0")/diff/lib.sh"
dt_require_lib

export UIPC_LIB=$DT_LIB_RUN
todo=()
for p in trap_raw trap_cred trap_remap; do
	if [ -x "$DT_BIN/$p" ]; then
		for c in $(dt_list "$p"); do todo+=("run $p $c"); done
	else
		todo+=("run $p")
	fi
done
for c in sem shm fork-exec sigmask threads; do todo+=("env trap_raw $c"); done
# and in an anonymous namespace (util-linux's unshare under uipc): the
# segments are slots of one memfd
for c in basic beyond; do todo+=("anon trap_remap $c"); done
echo "1..${#todo[@]}"
for t in "${todo[@]}"; do
	set -- $t
	how=$1; shift
	if [ "$how" = run ]; then
		DT_UIPC_WRAP="$DT_ROOT/build/uipc run --trap --"
		dt_case "$*" "$DT_BIN/$1" ${2:+"$2"}
	elif [ "$how" = env ]; then
		DT_UIPC_WRAP="env UIPC_TRAP=1"
		dt_case "$* (UIPC_TRAP=1)" "$DT_BIN/$1" ${2:+"$2"}
	else
		DT_UIPC_WRAP="$DT_ROOT/build/uipc run --trap -- unshare --ipc --"
		dt_case "$* (anonymous namespace)" "$DT_BIN/$1" ${2:+"$2"}
	fi
done
[ "$DT_FAILED" = 0 ]
