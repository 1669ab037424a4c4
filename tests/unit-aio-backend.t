#!/bin/bash
# tests/unit-aio-backend.t - the AIO backends (tests/unit/aio_backend.c):
# by default O_DIRECT reads and writes in a kernel AIO context of uipc's
# own and the rest in an io_uring, where the kernel allows them; io_uring
# alone when asked (UIPC_AIO_BACKEND=uring) or when the kernel's AIO is
# refused (a seccomp filter, tests/real/noaio.c); threads when asked
# (UIPC_AIO_BACKEND=threads) or when io_uring is refused too (noaio
# --uring): said on stderr only when uring or kernel was asked for by name.
# Each way the same checks of the I/O itself.
. "$(dirname "$0")/unit/unit.sh"
unit_setup aio_backend
noaio=$top/build/tests/real/noaio
if [ ! -x "$noaio" ]; then echo "1..1"; echo "not ok 1 - $noaio missing"; exit 1; fi
# what the default must be here: io_uring unless kernel.io_uring_disabled
# forbids it to us
dis=$(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo 0)
def=uring
if [ "$dis" = 2 ] || { [ "$dis" = 1 ] && [ "$(id -u)" != 0 ]; }; then def=threads; fi

# and for O_DIRECT: a kernel AIO context where a context of 256 events
# fits under the machine's fs.aio-max-nr
kdef=kernel
[ $(( $(cat /proc/sys/fs/aio-max-nr) - $(cat /proc/sys/fs/aio-nr) )) -ge 256 ] || kdef=$def

# name|O_DIRECT's backend|the others'|UIPC_AIO_BACKEND|said on stderr|noaio's arguments
runs=("default|$kdef|$def|||" "threads|threads|threads|threads||" "uring|$def|$def|uring||"
      "kernel|$kdef|$def|kernel||"
      "default, kernel AIO refused|$def|$def|||noaio"
      "kernel, kernel AIO refused|$def|$def|kernel|kernel|noaio"
      "default, io_uring refused|threads|threads|||noaio --uring"
      "uring, io_uring refused|threads|threads|uring|uring|noaio --uring")
echo "1..$(( ${#runs[@]} * 10 ))"
n=0 failed=0
for r in "${runs[@]}"; do
	IFS='|' read -r name direct other env said deny <<<"$r"
	err=$dir/stderr
	out=$(env ${env:+UIPC_AIO_BACKEND=$env} UIPC_DIR="$dir" UIPC_NS=aiob LD_PRELOAD="$lib" \
		timeout 120 ${deny:+$top/build/tests/real/$deny} "$prog" "$direct" "$other" 2>"$err")
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
	if [ "$said" = uring ]; then
		grep -q "UIPC_AIO_BACKEND=uring: io_uring is not available" "$err" && [ "$rc" = 0 ]
	elif [ "$said" = kernel ]; then
		grep -q "UIPC_AIO_BACKEND=kernel: the kernel's AIO is not available" "$err" &&
			[ "$rc" = 0 ]
	else
		[ ! -s "$err" ] && [ "$rc" = 0 ]
	fi
	if [ $? = 0 ]; then
		echo "ok $n - [$name] exit 0, stderr $([ -n "$said" ] && echo "says $said is refused" || echo empty)"
	else
		failed=$((failed+1))
		echo "not ok $n - [$name] exit $rc (a run that died early has fewer than 9 lines above), stderr:"
		sed 's/^/# /' "$err"
	fi
done
[ $failed = 0 ]
