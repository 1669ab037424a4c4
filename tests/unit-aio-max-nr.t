#!/bin/bash
# tests/unit-aio-max-nr.t - issue 17's limit target: with fs.aio-max-nr at
# its default (65536), a process that needs more events of AIO contexts
# (tests/unit/aio_many.c: 70000 in contexts of 10000) fails on the kernel
# (EAGAIN) and, as an unprivileged user, cannot raise the kernel's limit;
# under uipc it fails too in a namespace at the default, and works once
# the namespace's owner, the same unprivileged user, raises the
# namespace's fs.aio-max-nr with `uipc sysctl`: no root anywhere.  The uipc
# run is made with the kernel's AIO calls refused (tests/real/noaio.c).
. "$(dirname "$0")/unit/unit.sh"
unit_setup aio_many
user=65534
noaio=$top/build/tests/real/noaio
echo "1..7"
n=0 failed=0
check() {   # check STATUS WHAT [LOG]
	n=$((n+1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"; else
		failed=$((failed+1)); echo "not ok $n - $2"; [ -n "${3:-}" ] && sed 's/^/# /' "$3"; fi
}
if [ ! -x "$noaio" ]; then
	for i in $(seq 1 7); do echo "not ok $i - $noaio missing"; done; exit 1
fi
# the user's own copies (it may not read the build tree's) in a directory it owns
chown "$user" "$dir"
cp "$prog" "$noaio" "$lib" "$top/build/uipc" "$dir/"
ln -s libuipc.so "$dir/libuipc.so.0"
chmod 755 "$dir"/*
as_user() { setpriv --reuid="$user" --regid=nogroup --clear-groups --inh-caps=-all "$@"; }
uipc=("$dir/uipc")
export UIPC_DIR=$dir/ns UIPC_NS=big
as_user mkdir "$UIPC_DIR"

host=$(cat /proc/sys/fs/aio-max-nr)
[ "$host" = 65536 ]
check $? "the kernel's fs.aio-max-nr is the default 65536 (it is $host)"

as_user "$dir/aio_many" 70000 10000 >"$dir/k.log" 2>&1
[ $? = 1 ] && grep -q "Resource temporarily unavailable" "$dir/k.log"
check $? "on the kernel, 70000 events: io_setup fails with EAGAIN ($(head -1 "$dir/k.log"))" "$dir/k.log"

as_user sh -c 'echo 200000 > /proc/sys/fs/aio-max-nr' >"$dir/w.log" 2>&1
[ $? != 0 ] && [ "$(cat /proc/sys/fs/aio-max-nr)" = "$host" ]
check $? "the user cannot raise the kernel's fs.aio-max-nr" "$dir/w.log"

as_user "$dir/noaio" "${uipc[@]}" run -- "$dir/aio_many" 70000 10000 >"$dir/u0.log" 2>&1
[ $? = 1 ] && grep -q "Resource temporarily unavailable" "$dir/u0.log"
check $? "under uipc, the namespace at the default: EAGAIN as on the kernel" "$dir/u0.log"

as_user "${uipc[@]}" sysctl fs.aio-max-nr=200000 >"$dir/s.log" 2>&1
[ $? = 0 ] && grep -qx "fs.aio-max-nr = 200000" "$dir/s.log"
check $? "the namespace's owner raises its fs.aio-max-nr to 200000 (uipc sysctl, no root)" "$dir/s.log"

as_user "$dir/noaio" "${uipc[@]}" run -- "$dir/aio_many" 70000 10000 >"$dir/u1.log" 2>&1
[ $? = 0 ] && grep -q "70000 events held in 7 contexts; /proc/sys/fs/aio-nr = 70000" "$dir/u1.log" &&
	grep -q "works" "$dir/u1.log"
check $? "then 70000 events in 7 contexts work under uipc, the kernel's AIO refused ($(head -1 "$dir/u1.log"))" "$dir/u1.log"

as_user "${uipc[@]}" sysctl -n fs.aio-nr fs.aio-max-nr >"$dir/s2.log" 2>&1
[ "$(tr '\n' ' ' <"$dir/s2.log")" = "0 200000 " ]
check $? "after the process, the namespace's fs.aio-nr is 0 again, its limit kept" "$dir/s2.log"
[ $failed = 0 ]
