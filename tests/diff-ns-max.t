#!/bin/bash
# tests/diff-ns-max.t - user.max_ipc_namespaces against the kernel's
# (tests/diff/ns_max.c): the limit set to 3 on both sides.  The kernel side
# as root in a fresh IPC namespace, then in a fresh user namespace whose
# /proc/sys/user/max_ipc_namespaces the test may set (the host's is never
# changed); the uipc side with UIPC_MAX_IPC_NAMESPACES=3 and its own count
# file (UIPC_NSCOUNT_DIR), as root and as an ordinary user.
. "$(dirname "$0")/diff/lib.sh"
dt_require_lib

NS_USER=uipcnm$$
useradd -M -N -s /usr/sbin/nologin "$NS_USER" || { echo "1..1"; echo "not ok 1 - useradd failed"; exit 1; }
ns_cleanup() { userdel "$NS_USER" 2>/dev/null; dt_cleanup; }
trap ns_cleanup EXIT
chmod 755 "$DT_WORK" && chmod 644 "$DT_LIB_RUN"
LIMIT=3

dt_run_kernel() {
	local out=$1; shift
	local rc=0
	env UIPC_DIFF_MODE=kernel DT_USERNS_IPC=1 timeout -k 5 "$DT_RUN_TIMEOUT" unshare --ipc -- \
		unshare --user --map-root-user -- \
		sh -c 'echo '"$LIMIT"' >/proc/sys/user/max_ipc_namespaces && exec "$@"' sh "$@" \
		>"$out" 2>"$out.err" </dev/null || rc=$?
	dt_status_line "$rc" >>"$out"
}

AS_USER=
dt_run_uipc() {
	local out=$1; shift
	local rc=0 as=()
	DT_UDIR=$(mktemp -d /dev/shm/uipc-diff.XXXXXX)
	if [ -n "$AS_USER" ]; then
		chown "$AS_USER" "$DT_UDIR"
		as=(setpriv --reuid="$AS_USER" --regid=nogroup --clear-groups --inh-caps=-all)
	fi
	env UIPC_DIFF_MODE=uipc timeout -k 5 "$DT_RUN_TIMEOUT" "${as[@]}" \
		env UIPC_DIR="$DT_UDIR" UIPC_NS=diff UIPC_NSCOUNT_DIR="$DT_UDIR" \
		UIPC_MAX_IPC_NAMESPACES="$LIMIT" LD_PRELOAD="$DT_LIB_RUN" "$@" \
		>"$out" 2>"$out.err" </dev/null || rc=$?
	rm -rf "$DT_UDIR"
	DT_UDIR=
	dt_status_line "$rc" >>"$out"
}

cases=$(dt_list ns_max)
n=$(echo $cases | wc -w)
echo "1..$((2 * n))"
for c in $cases; do dt_case "ns_max $c (root)" "$DT_BIN/ns_max" "$c"; done
AS_USER=$NS_USER
for c in $cases; do dt_case "ns_max $c (user $NS_USER)" "$DT_BIN/ns_max" "$c"; done
[ "$DT_FAILED" = 0 ]
