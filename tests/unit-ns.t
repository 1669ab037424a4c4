#!/bin/bash
# tests/unit-ns.t - namespace files and library properties the kernel has no
# counterpart for: bad namespace files give a clear message and a failing
# call (never a crash), the fast path makes no system call, extended ids.
top=$(cd "$(dirname "$0")/.." && pwd)
lib=$top/build/libuipc.so
bin=$top/build/tests/unit
n=0 failed=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); failed=$((failed+1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
if [ ! -f "$lib" ] || [ ! -x "$bin/nosys" ] || [ ! -x "$bin/ext_ids" ] || [ ! -x "$bin/ids_offset" ]; then
	echo "1..1"; echo "not ok 1 - $lib or test programs missing: run make test-progs"; exit 1
fi
dir=$(mktemp -d /dev/shm/uipc-ns.XXXXXX)
trap 'rm -rf "$dir"' EXIT
uid=$(id -u)

# run ipcmk -S 1 (util-linux, a real program) in namespace $1
mk() { UIPC_DIR=$dir UIPC_NS=$1 LD_PRELOAD=$lib ipcmk -S 1 2>&1; }

# expect: fails (exit 1, not a signal), and the message matches
expect_refused() {
	local name=$1 regex=$2 what=$3 out rc
	out=$(mk "$name"); rc=$?
	if [ "$rc" -ge 128 ]; then nok "$what: crashed (status $rc)" "$out"; return; fi
	if [ "$rc" -eq 0 ]; then nok "$what: the call succeeded" "$out"; return; fi
	if [[ "$out" =~ $regex ]]; then ok "$what: clear message, failing call"; else nok "$what: message" "$out"; fi
}

# a file that is not a namespace
echo "hello, not a namespace" > "$dir/uipc-$uid-text"
expect_refused text "not a uipc namespace" "a text file"
# a good namespace, then damaged in three ways
mk good >/dev/null || nok "creating a namespace"
cp "$dir/uipc-$uid-good" "$dir/uipc-$uid-trunc" && truncate -s 100 "$dir/uipc-$uid-trunc"
expect_refused trunc "truncated" "a truncated file"
cp --sparse=always "$dir/uipc-$uid-good" "$dir/uipc-$uid-ver"
printf '\x63\x00\x00\x00' | dd of="$dir/uipc-$uid-ver" bs=1 seek=8 conv=notrunc status=none
expect_refused ver "layout version 99" "another layout version"
cp --sparse=always "$dir/uipc-$uid-good" "$dir/uipc-$uid-short"
truncate -s 200M "$dir/uipc-$uid-short"
expect_refused short "damaged" "a file shorter than its header says"
# an owner user namespace with more id map extents than a header holds
# (cred.c would walk past them)
cp --sparse=always "$dir/uipc-$uid-good" "$dir/uipc-$uid-owner"
printf '\xff\xff\xff\x7f' | dd of="$dir/uipc-$uid-owner" bs=1 seek="$("$bin/ids_offset" owner_nuid)" \
	conv=notrunc status=none
expect_refused owner "damaged uipc namespace \(its owner's id maps\)" "a header whose owner's id maps are too many"
printf 'XXXXXXXX' | dd of="$dir/uipc-$uid-good" bs=1 seek=0 conv=notrunc status=none
expect_refused good "bad magic" "a namespace whose magic was overwritten"
# a namespace file of another user is refused (a trap in a shared directory)
if [ "$uid" = 0 ]; then
	mk other >/dev/null
	chown 1000 "$dir/uipc-0-other"
	expect_refused other "belongs to uid 1000" "a file owned by another user"
fi
# mode 0600 by default
mk fresh >/dev/null
m=$(stat -c %a "$dir/uipc-$uid-fresh")
[ "$m" = 600 ] && ok "a new namespace file has mode 0600" || nok "mode is $m, not 600"

# uipc fsck: a used namespace checks clean; a damaged id table is reported
uipc=$top/build/uipc
UIPC_DIR=$dir UIPC_NS=fsck LD_PRELOAD=$lib ipcmk -S 2 >/dev/null
UIPC_DIR=$dir UIPC_NS=fsck LD_PRELOAD=$lib ipcmk -Q >/dev/null
out=$("$uipc" fsck --dir "$dir" --ns fsck 2>&1); rc=$?
if [ $rc -eq 0 ] && [[ "$out" == *": 0 problems found"* ]]; then ok "uipc fsck: a used namespace checks clean"; else nok "uipc fsck on a healthy namespace (status $rc)" "$out"; fi
# the sem ids' in_use count lives in the header: bump it behind uipc's back
IN_USE=$("$bin/ids_offset") python3 - "$dir/uipc-$uid-fsck" <<'PY'
import sys, struct, os
path = sys.argv[1]; in_use = int(os.environ['IN_USE'])
with open(path, 'r+b') as f:
    f.seek(in_use); v = struct.unpack('<i', f.read(4))[0]
    f.seek(in_use); f.write(struct.pack('<i', v + 5))
PY
out=$("$uipc" fsck --dir "$dir" --ns fsck 2>&1); rc=$?
if [ $rc -eq 1 ] && [[ "$out" == *"sem: 1 ids in use, the count says 6"* ]]; then ok "uipc fsck reports a damaged id table"; else nok "uipc fsck on a damaged namespace (status $rc)" "$out"; fi

# a damaged message queue (its cbytes no longer the sum of its messages) is
# reported; the queue is found by its key and id, the counter by its value
qid=$(UIPC_DIR=$dir UIPC_NS=fsckq LD_PRELOAD=$lib python3 - <<'PY'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
q = libc.msgget(0x51ab1e5d, 0o1600)
buf = ctypes.create_string_buffer(8 + 4000)
ctypes.memmove(buf, (1).to_bytes(8, 'little'), 8)
for n in (4000, 4000, 4000, 345):
    libc.msgsnd(q, buf, n, 0)
print(q)
PY
)
python3 - "$dir/uipc-$uid-fsckq" "$qid" <<'PY'
import struct, sys
path, qid = sys.argv[1], int(sys.argv[2])
with open(path, 'r+b') as f:
    # the objects are at the start of the heap (heap_start: header offset 48)
    heap = struct.unpack('<Q', f.read(56)[48:56])[0]
    f.seek(heap); data = f.read(4 << 20)
    pat = struct.pack('<iI', 0x51ab1e5d, qid)
    at = next(i for i in range(0, len(data) - 8, 8) if data[i:i + 8] == pat)
    cb = next(i for i in range(at, at + 512, 8) if struct.unpack_from('<Q', data, i)[0] == 12345)
    f.seek(heap + cb); f.write(struct.pack('<Q', 12346))
PY
out=$("$uipc" fsck --dir "$dir" --ns fsckq 2>&1); rc=$?
if [ $rc -eq 1 ] && [[ "$out" == *"msg $qid: 4 messages of 12345 bytes, but qnum 4 and cbytes 12346"* ]]; then ok "uipc fsck reports a message queue whose cbytes is not the sum of its messages"; else nok "uipc fsck on a damaged queue (status $rc)" "$out"; fi

# the fast path makes no system call (a seccomp filter kills it otherwise)
out=$(UIPC_DIR=$dir UIPC_NS=nosys LD_PRELOAD=$lib "$bin/nosys" 2>&1); rc=$?
if [ $rc -eq 0 ] && [[ "$out" == *"ok 1 - 300,000"* ]] && [[ "$out" == *"ok 2 - 600,000"* ]]; then ok "uncontended semop, msgsnd with room, msgrcv with a message: no system call"; else nok "no-syscall fast paths (status $rc)" "$out"; fi

# extended ids
out=$(UIPC_DIR=$dir UIPC_NS=ext UIPC_NS_EXTENDED=1 LD_PRELOAD=$lib "$bin/ext_ids" 2>&1); rc=$?
if [ $rc -eq 0 ]; then ok "extended ids: (seq << 24) + idx, cycle >= 4096, 7-bit seq, next_id"; else nok "extended ids" "$out"; fi

echo "1..$n"
[ $failed -eq 0 ]
