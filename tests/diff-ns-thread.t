#!/bin/bash
# tests/diff-ns-thread.t - IPC namespaces per thread and attachments made
# before an unshare, against the kernel's (tests/diff/ns_thread.c, driver
# tests/diff/lib.sh): the kernel side as root in a private namespace, the
# uipc side as root and again as an ordinary user (made here with useradd,
# removed at the end), for whom the kernel would refuse the calls.
. "$(dirname "$0")/diff/lib.sh"
dt_require_lib

NS_USER=uipcnt$$
useradd -M -N -s /usr/sbin/nologin "$NS_USER" || { echo "1..1"; echo "not ok 1 - useradd failed"; exit 1; }
ns_cleanup() { userdel "$NS_USER" 2>/dev/null; dt_cleanup; }
trap ns_cleanup EXIT
chmod 755 "$DT_WORK" && chmod 644 "$DT_LIB_RUN"

cases=$(dt_list ns_thread)
n=$(echo $cases | wc -w)
echo "1..$((2 * n))"
for c in $cases; do dt_case "ns_thread $c (root)" "$DT_BIN/ns_thread" "$c"; done

# the same, the uipc side as the ordinary user
dt_run_uipc() {
	local out=$1; shift
	local rc=0
	DT_UDIR=$(mktemp -d /dev/shm/uipc-diff.XXXXXX)
	chown "$NS_USER" "$DT_UDIR"
	env UIPC_DIFF_MODE=uipc timeout -k 5 "$DT_RUN_TIMEOUT" \
		setpriv --reuid="$NS_USER" --regid=nogroup --clear-groups --inh-caps=-all \
		env UIPC_DIR="$DT_UDIR" UIPC_NS=diff LD_PRELOAD="$DT_LIB_RUN" "$@" \
		>"$out" 2>"$out.err" </dev/null || rc=$?
	local left
	left=$(ls -A "$DT_UDIR" | grep -e '-anon-')
	rm -rf "$DT_UDIR"
	DT_UDIR=
	dt_status_line "$rc" >>"$out"
	[ -z "$left" ] || echo "left in UIPC_DIR: $left" >>"$out"
}
for c in $cases; do dt_case "ns_thread $c (user $NS_USER)" "$DT_BIN/ns_thread" "$c"; done
[ "$DT_FAILED" = 0 ]
