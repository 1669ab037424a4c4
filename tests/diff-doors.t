#!/bin/bash
# tests/diff-doors.t - the other doors to System V IPC, run against the
# kernel and under uipc, transcripts compared line by line: the twelve calls
# by number through syscall() (tests/diff/sys_raw.c), and the /proc files a
# program reads and writes (tests/diff/proc_files.c: /proc/sysvipc/*, the
# IPC sysctls under /proc/sys/kernel).  Driver: tests/diff/lib.sh.
. "$(dirname "$0")/diff/lib.sh"
dt_require_lib

dt_run_programs "sys_raw proc_files cred_raw"
