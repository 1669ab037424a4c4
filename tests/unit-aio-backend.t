#!/bin/bash
# tests/unit-aio-backend.t - the AIO backends (tests/unit/aio_backend.c):
# by default io_uring where the kernel allows it, threads when asked
# (UIPC_AIO_BACKEND=threads) or when io_uring is refused (a seccomp filter
# making io_uring_setup fail, tests/real/noaio.c --uring): said on stderr
# only when uring was asked for by name.  Each way the same checks of the
# I/O itself.
. "$(dirname "$0")/unit/unit.sh"
unit_setup aio_backend
noaio=$top/build/tests/real/noaio
if [ ! -x "$noaio" ]; then echo "1..1"; echo "not ok 1 - $noaio missing"; exit 1; fi
# what the default must be here: io_uring unless kernel.io_uring_disabled
# forbids it to us
dis=$(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo 0)
def=uring
if [ "$dis" = 2 ] || { [ "$dis" = 1 ] && [ "$(id -u)" != 0 ]; }; then def=threads; fi

# name|expected backend|UIPC_AIO_BACKEND|said on stderr|noaio's arguments
runs=("default|$def|||" "threads|threads|threads||" "uring|uring|uring||"
      "default, kernel AIO refused|$def|||noaio"
      "default, io_uring refused|threads|||noaio --uring"
      "uring, io_uring refused|threads|uring|said|noaio --uring")
echo "1..$(( ${#runs[@]} * 8 ))"
n=0 failed=0
for r in "${runs[@]}"; do
	IFS='|' read -r name expect env said deny <<<"$r"
	err=$dir/stderr
	out=$(env ${env:+UIPC_AIO_BACKEND=$env} UIPC_DIR="$dir" UIPC_NS=aiob LD_PRELOAD="$lib" \
		timeout 120 ${deny:+$top/build/tests/real/$deny} "$prog" "$expect" 2>"$err")
	rc=$?
	while read -r line; do
		case $line in
		"ok "*|"not ok "*)
			n=$((n+1))
			[ "${line#not ok}" != "$line" ] && failed=$((failed+1))
			echo "$line" | sed -E "s/^(not ok|ok) [0-9]+ - /\1 $n - [$name] /" ;;
		esac
	done <<<"$out"
	n=$((n+1))
	if [ -n "$said" ]; then
		grep -q "io_uring is not available" "$err" && [ "$rc" = 0 ]
	else
		[ ! -s "$err" ] && [ "$rc" = 0 ]
	fi
	if [ $? = 0 ]; then
		echo "ok $n - [$name] exit 0, stderr $([ -n "$said" ] && echo "says uring is refused" || echo empty)"
	else
		failed=$((failed+1))
		echo "not ok $n - [$name] exit $rc (a run that died early has fewer than 7 lines above), stderr:"
		sed 's/^/# /' "$err"
	fi
done
[ $failed = 0 ]
