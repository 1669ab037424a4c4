#!/bin/bash
# tests/unit-aio-kaio-lead.t - the sleeper in uipc's kernel AIO context
# (aio/kaio.c) is not left asleep when another thread reaps its last
# completion and then its wake-up (tests/unit/aio_kaio_lead.c): the same
# rounds on the kernel, then under uipc with the default backend.  Only
# where uipc may make a kernel AIO context of 256 events (fs.aio-max-nr).
. "$(dirname "$0")/unit/unit.sh"
unit_setup aio_kaio_lead
total=0 status=0
tap() { # SIDE OUTPUT: renumbered, named
	while read -r line; do
		case $line in
		"ok "*|"not ok "*)
			total=$((total+1))
			echo "$line" | sed -E "s/^(not ok|ok) [0-9]+ - /\1 $total - [$1] /" ;;
		esac
	done <<<"$2"
}
out=$(timeout -k 5 300 "$prog") || status=1
tap kernel "$out"
if [ $(( $(cat /proc/sys/fs/aio-max-nr) - $(cat /proc/sys/fs/aio-nr) )) -ge 512 ]; then
	out=$(UIPC_DIR=$dir LD_PRELOAD=$lib timeout -k 5 300 "$prog" uipc) || status=1
	tap uipc "$out"
else
	total=$((total+1))
	echo "ok $total - [uipc] # SKIP fs.aio-max-nr leaves no room for uipc's kernel context"
fi
echo "1..$total"
exit $status
