#!/bin/bash
# tests/unit-ns-free.t - the memory of a namespace left by unshare is freed
# (tests/unit/ns_free.c, which prints TAP): made anew in place, with its
# old segment slots emptied while a new segment keeps its bytes, or let go
# through a helper when it was shared; the helpers are reaped.  Under uipc,
# as root and as an ordinary user made here with useradd (removed at the
# end).  Nothing is left in UIPC_DIR.
top=$(cd "$(dirname "$0")/.." && pwd)
lib=$top/build/libuipc.so
prog=$top/build/tests/unit/ns_free
if [ ! -f "$lib" ] || [ ! -x "$prog" ]; then
	echo "1..1"; echo "not ok 1 - $lib or $prog missing: run make test-progs"; exit 1
fi
user=uipcfree$$
useradd -M -N -s /usr/sbin/nologin "$user" || { echo "1..1"; echo "not ok 1 - useradd failed"; exit 1; }
work=$(mktemp -d /tmp/uipc-free.XXXXXX)
dir=
cleanup() { [ -n "$dir" ] && rm -rf "$dir"; rm -rf "$work"; userdel "$user" 2>/dev/null; }
trap cleanup EXIT
chmod 755 "$work"
cp "$lib" "$prog" "$work/" && chmod 755 "$work/ns_free" && chmod 644 "$work/libuipc.so"
n=0 failed=0
echo "1..18"
for who in root user; do
	dir=$(mktemp -d /dev/shm/uipc-free.XXXXXX)
	if [ "$who" = root ]; then
		out=$(timeout 120 env UIPC_DIR="$dir" LD_PRELOAD="$work/libuipc.so" "$work/ns_free" 2>&1)
	else
		chown "$user" "$dir"
		out=$(timeout 120 setpriv --reuid="$user" --regid=nogroup --clear-groups --inh-caps=-all \
			env UIPC_DIR="$dir" LD_PRELOAD="$work/libuipc.so" "$work/ns_free" 2>&1)
	fi
	# the program's TAP, renumbered and labelled
	got=0
	while IFS= read -r line; do
		case $line in
		"ok "*|"not ok "*)
			got=$((got + 1)); n=$((n + 1))
			case $line in "not ok"*) failed=$((failed + 1)); echo "not ok $n - $who: ${line#* - }" ;;
			*) echo "ok $n - $who: ${line#* - }" ;; esac ;;
		*) echo "# $line" ;;
		esac
	done <<<"$out"
	while [ $got -lt 8 ]; do got=$((got + 1)); n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $who: (not run)"; done
	left=$(ls -A "$dir")
	n=$((n + 1))
	if [ -z "$left" ]; then echo "ok $n - $who: nothing left in UIPC_DIR"
	else failed=$((failed + 1)); echo "not ok $n - $who: left in UIPC_DIR: $left"; fi
	rm -rf "$dir"; dir=
done
[ $failed -eq 0 ]
