#!/bin/bash
# tests/diff-userns.t - permission checks as the kernel judges them in a
# user namespace made later (issue 14): a process that is root only in a
# user namespace of its own (unshare -r) gets no capability over the IPC
# namespace and is judged by its ids outside; owners show as it sees them;
# sysctl writes stay root's.  Kernel vs uipc (tests/diff/perm_userns.c).
. "$(dirname "$0")/diff/lib.sh"
dt_require_lib
dt_run_programs "perm_userns"
