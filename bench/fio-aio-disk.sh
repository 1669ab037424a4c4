#!/bin/bash
# bench/fio-aio-disk.sh - issue 17's disk targets: fio ioengine=libaio
# iodepth=32 rw=randread bs=4k on a file on this machine's disk (not
# tmpfs), buffered (target: uipc >= 2x the kernel's IOPS, whose io_submit
# blocks on every buffered read) and direct=1 (target: >= 0.9x), on the
# kernel and under `uipc run` (its default AIO backend, or --backend),
# alternating, REPS times; medians and the ratio uipc/kernel.  The file is
# dropped from the page cache (posix_fadvise DONTNEED) before every run,
# and fio's random map reads each block at most once, so every read goes
# to the disk.  Not a timed test.
#   bench/fio-aio-disk.sh [--uipc build/uipc] [--reps N] [--secs S] [--backend B]
#                         [--submit M] [--json FILE] [--quick]
# --submit sets UIPC_AIO_SUBMIT (thread, the default; auto; direct).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
uipc=$top/build/uipc reps=3 secs=10 json= backend= submit=
while [ $# -gt 0 ]; do
	case $1 in
	--uipc) uipc=$2; shift ;;
	--reps) reps=$2; shift ;;
	--secs) secs=$2; shift ;;
	--backend) backend=$2; shift ;;
	--submit) submit=$2; shift ;;
	--json) json=$2; shift ;;
	--quick) reps=1 secs=3 ;;
	*) echo "usage: $0 [--uipc PATH] [--reps N] [--secs S] [--backend B] [--submit M] [--json FILE] [--quick]" >&2
	   exit 2 ;;
	esac
	shift
done
command -v fio >/dev/null || { echo "fio is not installed" >&2; exit 1; }
dir=$(mktemp -d /var/tmp/uipc-fiodisk.XXXXXX)
ns=$(mktemp -d /dev/shm/uipc-fiodisk-ns.XXXXXX)
trap 'rm -rf "$dir" "$ns"' EXIT
file=$dir/data size=2g

# the file, written for real (reads of unwritten extents never reach the disk)
fio --name=layout --rw=write --bs=1m --size=$size --filename="$file" --end_fsync=1 \
	>/dev/null 2>&1 || { echo "cannot write $file" >&2; exit 1; }

drop_cache() {
	python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
os.close(fd)' "$file"
}

# iops SIDE DIRECT: read IOPS of one run
iops() {
	local cmd=(fio --output-format=json --name=randread --ioengine=libaio --iodepth=32
		   --rw=randread --bs=4k --direct="$2" --filename="$file" --size=$size
		   --runtime="$secs" --time_based)
	if [ "$1" = uipc ]; then
		cmd=(env UIPC_DIR="$ns" ${submit:+UIPC_AIO_SUBMIT=$submit} "$uipc" run ${backend:+--aio-backend=$backend} -- "${cmd[@]}")
	fi
	drop_cache
	"${cmd[@]}" 2>/dev/null | python3 -c '
import json, sys
print(int(json.load(sys.stdin)["jobs"][0]["read"]["iops"]))'
}

. "$top/bench/steal.sh"

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

rows=()
printf '%-40s %12s %12s %8s %8s\n' "fio libaio randread 4k iodepth=32, disk" "kernel IOPS" \
	"uipc IOPS" "ratio" "target"
for direct in 0 1; do
	k=() u=()
	STEAL_REDONE=0 STEAL_REDO_MAX=$reps
	for i in $(seq 1 "$reps"); do
		if [ $((i % 2)) = 1 ]; then         # sides alternate which goes first
			pair_run iops kernel uipc "$direct"; k+=("$PAIR_A") u+=("$PAIR_B")
		else
			pair_run iops uipc kernel "$direct"; u+=("$PAIR_A") k+=("$PAIR_B")
		fi
	done
	km=$(printf '%s\n' "${k[@]}" | median)
	um=$(printf '%s\n' "${u[@]}" | median)
	ratio=$(awk -v a="$um" -v b="$km" 'BEGIN { printf "%.2f", b ? a / b : 0 }')
	target=2.0; name="buffered"
	[ "$direct" = 1 ] && target=0.9 name="direct=1"
	printf '%-40s %12s %12s %8s %8s\n' "$name (runs: kernel ${k[*]}; uipc ${u[*]})" "$km" "$um" \
		"$ratio" ">= $target"
	rows+=("{\"name\": \"randread 4k iodepth=32 $name\", \"kernel_iops\": $km, \"uipc_iops\": $um, \"ratio\": $ratio, \"target\": $target, \"reps\": $reps, \"secs\": $secs, \"backend\": \"${backend:-default}\", \"submit\": \"${submit:-default}\"}")
done
if [ -n "$json" ]; then
	(IFS=,; echo "[${rows[*]}]") >"$json"
fi
