#!/bin/bash
# tests/unit-aio-kaio-lead.t - a sleeper in io_getevents is not left
# asleep when another thread reaps its last completion and then its
# wake-up (tests/unit/aio_kaio_lead.c): the same rounds on the kernel,
# then under uipc in its kernel AIO context (aio/kaio.c: the other thread
# polls) and in its io_uring (aio/uring.c: the other thread sleeps too).
# uipc's kernel AIO context only where fs.aio-max-nr leaves room for it.
. "$(dirname "$0")/unit/unit.sh"
unit_setup aio_kaio_lead
status=0
for mode in "" block; do
	out=$(timeout -k 5 300 "$prog" $mode) || status=1
	unit_retap "kernel${mode:+, $mode}" <<<"$out"
done
if [ $(( $(cat /proc/sys/fs/aio-max-nr) - $(cat /proc/sys/fs/aio-nr) )) -ge 512 ]; then
	out=$(UIPC_DIR=$dir LD_PRELOAD=$lib timeout -k 5 300 "$prog" uipc) || status=1
	unit_retap "uipc, kernel context" <<<"$out"
else
	total=$((total+1))
	echo "ok $total - [uipc, kernel context] # SKIP fs.aio-max-nr leaves no room for it"
fi
out=$(UIPC_AIO_BACKEND=uring UIPC_DIR=$dir LD_PRELOAD=$lib timeout -k 5 300 "$prog" block) ||
	status=1
unit_retap "uipc, io_uring, block" <<<"$out"
echo "1..$total"
exit $status
