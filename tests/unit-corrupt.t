#!/bin/bash
# tests/unit-corrupt.t - flip random bits of a namespace file (its header,
# its process and thread tables, its heap), then run random semaphore calls
# in it, and uipc fsck: calls may fail, no process may crash or hang.  Seeds are printed;
# replay one with UIPC_CORRUPT_SEEDS="N ...".
top=$(cd "$(dirname "$0")/.." && pwd)
lib=$top/build/libuipc.so
prog=$top/build/tests/unit/fuzz_ops
offsets=$top/build/tests/unit/ids_offset
if [ ! -f "$lib" ] || [ ! -x "$prog" ] || [ ! -x "$offsets" ]; then
	echo "1..1"; echo "not ok 1 - $lib, $prog or $offsets missing: run make test-progs"; exit 1
fi
# where the header keeps the heap's, the process table's and the thread
# table's offsets (from the layout, not constants that drift with it)
export HEAP_AT=$("$offsets" heap_start) PROCS_AT=$("$offsets" procs) THREADS_AT=$("$offsets" threads)
base=$(( $(date +%s) % 100000 ))
seeds=${UIPC_CORRUPT_SEEDS:-$(seq $base $((base + 39)))}
set -- $seeds
echo "1..$#"
n=0 failed=0
for seed in $seeds; do
	n=$((n+1))
	dir=$(mktemp -d /dev/shm/uipc-corrupt.XXXXXX)
	UIPC_DIR=$dir UIPC_NS=c LD_PRELOAD=$lib "$prog" "$seed" 2>/dev/null
	python3 - "$dir/uipc-$(id -u)-c" "$seed" <<'PY'
import os, random, struct, sys
path, seed = sys.argv[1], int(sys.argv[2])
random.seed(seed)
fd = os.open(path, os.O_RDWR)
hdr = os.pread(fd, 4096, 0)
heap = struct.unpack_from('<Q', hdr, int(os.environ['HEAP_AT']))[0]
procs = struct.unpack_from('<Q', hdr, int(os.environ['PROCS_AT']))[0]
threads = struct.unpack_from('<Q', hdr, int(os.environ['THREADS_AT']))[0]
# the header, the first process and thread slots, the start of the heap
regions = [(8, 4096), (procs, procs + 4096), (threads, threads + 16384),
           (heap, heap + (256 << 10))]
for _ in range(30):
    a, b = random.choice(regions)
    off = random.randrange(a, b)
    x = os.pread(fd, 1, off)
    os.pwrite(fd, bytes([(x[0] if x else 0) ^ (1 << random.randrange(8))]), off)
os.close(fd)
PY
	timeout 30 env UIPC_DIR=$dir UIPC_NS=c LD_PRELOAD=$lib "$prog" $((seed + 1000000)) 2>/dev/null
	rc=$?
	# uipc fsck walks every object of the damaged namespace: it may find
	# problems (status 1), never crash or hang
	timeout 30 "$top/build/uipc" fsck --dir "$dir" --ns c >/dev/null 2>&1
	frc=$?
	rm -rf "$dir"
	if [ $rc -ge 124 ] || [ $frc -ge 124 ]; then
		failed=$((failed+1))
		echo "not ok $n - seed $seed: status $rc, uipc fsck $frc (crash or hang) after bit flips"
	else
		echo "ok $n - seed $seed: calls and uipc fsck after bit flips end normally (status $rc, $frc)"
	fi
done
[ $failed -eq 0 ]
