#!/bin/bash
# tests/unit-aio-longjmp.t - a signal handler that leaves io_getevents by
# siglongjmp loses no completion and leaves nothing that keeps io_destroy
# of the context waiting (tests/unit/aio_longjmp.c): on the kernel,
# then under uipc, whose io_uring takes the read (64 MiB, not cached, from
# a file beside the build, on a disk).  Under uipc the jump must have come
# before the completion in at least one round, or the case did not run.
. "$(dirname "$0")/unit/unit.sh"
unit_setup aio_longjmp
data=$(mktemp "$top/build/aio-longjmp.XXXXXX")
trap 'rm -rf "$dir" "$data"' EXIT
head -c $((64 << 20)) /dev/urandom > "$data" && sync "$data"
status=0
out=$(timeout -k 5 120 "$prog" "$data") || status=1
unit_retap kernel <<<"$out"
out=$(UIPC_DIR=$dir LD_PRELOAD=$lib timeout -k 5 120 "$prog" "$data") || status=1
unit_retap uipc <<<"$out"
jumped=$(sed -n 's/^# jumps before the completion: \([0-9]*\) of .*/\1/p' <<<"$out")
total=$((total+1))
if [ "${jumped:-0}" -ge 1 ]; then
	echo "ok $total - [uipc] the jump came before the completion in $jumped round(s)"
else
	echo "not ok $total - [uipc] the jump never came before the completion: the case did not run ($(stat -f -c %T "$data"))"
	status=1
fi
echo "1..$total"
exit $status
