#!/bin/bash
# tests/cmd-ns-count-file.t - the per-user count file of anonymous
# namespaces (user.max_ipc_namespaces: an empty file whose bytes the
# members' fds lock) goes with the user's last count, also when that count
# was taken in a user namespace made with it (unshare(CLONE_NEWUSER |
# CLONE_NEWIPC), where the user is uid 0 inside) and when its last holder
# is a clone(CLONE_NEWUSER | CLONE_NEWIPC) child whose function returned
# (glibc ends it with the exit system call, no atexit).  The scenarios are
# tests/diff/perm_userns.c's, run under uipc as uid 1001 with the count
# files in a directory of the test's own (UIPC_NSCOUNT_DIR).
. "$(dirname "$0")/cmd/tap.sh"
require_build
plan 3

PROG=$T_BUILD/tests/diff/perm_userns
cdir=$(mktemp -d /dev/shm/uipc-count.XXXXXX)
chmod 1777 "$cdir"
trap 't_cleanup; rm -rf "$cdir"' EXIT

out=$(UIPC_DIFF_MODE=uipc UIPC_NS=diff UIPC_NSCOUNT_DIR=$cdir LD_PRELOAD=$LIB \
	timeout 60 "$PROG" ipc-owned-by-userns 2>&1)
is "$?" 0 "the user namespace scenarios run under uipc"
like "$out" "the clone child: exited" "... the clone child among them"
is "$(ls -A "$cdir" | tr '\n' ' ')" "" "no count file is left once every count is let go of"
