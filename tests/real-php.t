#!/bin/bash
# tests/real-php.t - a real program: PHP CLI (Debian's php-cli; sysvsem,
# sysvshm and sysvmsg come with php8.2-common, pcntl with php8.2-cli) running
# tests/real/php-sysv.php: 4 forked workers increment a counter in a sysvshm
# variable under a sysvsem mutex and stream sysvmsg messages to the parent;
# a child blocks on the held semaphore and on a message type not yet sent;
# error codes (ENOMSG, E2BIG, EAGAIN), msg_stat_queue/msg_set_queue, shm
# variables across fork, a counting semaphore, removal.  Run on the kernel (a
# fresh IPC namespace) and under `uipc run` (a fresh namespace of this run):
# every check must pass on both and the two transcripts must be identical;
# and again under `uipc run --no-kernel-ipc` (a seccomp filter makes the
# kernel's System V IPC calls fail with ENOSYS: PHP's IPC is all uipc's),
# and under `uipc run --trap` (trap mode).
top=$(cd "$(dirname "$0")/.." && pwd)
uipc=$top/build/uipc
script=$top/tests/real/php-sysv.php
echo "1..8"
n=0 failed=0
ok() { echo "ok $((++n)) - $*"; }
nok() { failed=$((failed+1)); echo "not ok $((++n)) - $*"; }
mods=$(php -m 2>/dev/null)
for m in sysvsem sysvshm sysvmsg pcntl; do
	if ! echo "$mods" | grep -qx "$m"; then
		echo "not ok 1 - php with $m missing (apt-get install php-cli)"; exit 1
	fi
done
if [ ! -x "$uipc" ]; then
	echo "not ok 1 - $uipc missing: run make"; exit 1
fi
ok "php $(php -r 'echo PHP_VERSION;') with sysvsem, sysvshm, sysvmsg and pcntl"
dir=$(mktemp -d /dev/shm/uipc-php.XXXXXX)
trap 'rm -rf "$dir"' EXIT
trap 'exit 130' INT TERM
ns=php-$$-$RANDOM
key=$(( (($$ & 0xffff) << 12) | 0x10000000 ))

timeout 60 unshare --ipc -- php "$script" "$key" >"$dir/kernel.out" 2>&1
krc=$?
timeout 60 "$uipc" run --dir "$dir" --ns "$ns" -- php "$script" "$key" >"$dir/uipc.out" 2>&1
urc=$?
for side in kernel uipc; do
	rc=$krc; [ $side = uipc ] && rc=$urc
	last=$(tail -1 "$dir/$side.out")
	if [ "$rc" = 0 ] && [[ "$last" =~ ^checks\ [0-9]+\ failed\ 0$ ]] &&
	   ! grep -q '^FAIL' "$dir/$side.out"; then
		ok "$side: $last"
	else
		nok "$side: status $rc, $last"
		grep -v '^ok ' "$dir/$side.out" | head -10 | sed 's/^/# /'
	fi
done
if cmp -s "$dir/kernel.out" "$dir/uipc.out"; then
	ok "the transcripts are identical"
else
	nok "the transcripts differ"
	diff "$dir/kernel.out" "$dir/uipc.out" | head -20 | sed 's/^/# /'
fi
timeout 60 "$uipc" run --no-kernel-ipc --dir "$dir" --ns "$ns-nokipc" -- php "$script" "$key" \
	>"$dir/nokipc.out" 2>&1
nrc=$?
if [ "$nrc" = 0 ] && cmp -s "$dir/kernel.out" "$dir/nokipc.out"; then
	ok "with the kernel's IPC refused (--no-kernel-ipc): $(tail -1 "$dir/nokipc.out"), the same transcript"
else
	nok "with the kernel's IPC refused (--no-kernel-ipc): status $nrc"
	diff "$dir/kernel.out" "$dir/nokipc.out" | head -20 | sed 's/^/# /'
fi
timeout 60 "$uipc" run --trap --dir "$dir" --ns "$ns-trap" -- php "$script" "$key" \
	>"$dir/trap.out" 2>&1
trc=$?
if [ "$trc" = 0 ] && cmp -s "$dir/kernel.out" "$dir/trap.out"; then
	ok "in trap mode (--trap): $(tail -1 "$dir/trap.out"), the same transcript"
else
	nok "in trap mode (--trap): status $trc"
	diff "$dir/kernel.out" "$dir/trap.out" | head -20 | sed 's/^/# /'
fi
# the objects were uipc's, not the kernel's: a queue PHP leaves behind is
# listed by uipc ipcs, not in the kernel's /proc/sysvipc/msg, and goes with
# uipc ipcrm
k2=$((key + 100))
"$uipc" run --dir "$dir" --ns "$ns" -- php -r "msg_send(msg_get_queue($k2, 0600), 1, 'left');"
inu=$("$uipc" ipcs --dir "$dir" --ns "$ns" -q | awk -v k="$(printf '0x%08x' $k2)" '$1 == k && $6 == 1' | wc -l)
ink=$(awk -v k=$k2 'NR > 1 && $1 == k' /proc/sysvipc/msg | wc -l)
"$uipc" ipcrm --dir "$dir" --ns "$ns" -Q "$k2"
if [ "$inu" = 1 ] && [ "$ink" = 0 ]; then
	ok "a queue made by php under uipc is uipc's (uipc ipcs: 1 message), not the kernel's"
else
	nok "php's queue: in uipc $inu, in the kernel $ink"
fi
left=$(for n in "$ns" "$ns-nokipc" "$ns-trap"; do "$uipc" ipcs --dir "$dir" --ns "$n" -a; done |
	grep -c '^0x')
# segment files: none with memory; removed segments' files may stay as
# empty spares of the pool (ipc/shm.c), at most 16 (SHM_POOL_CAP)
files=$(find "$dir" -maxdepth 1 -name '*.shm-*' ! -empty | wc -l)
spares=$(find "$dir" -maxdepth 1 -name '*.shm-*' -empty | wc -l)
if [ "$left" = 0 ] && [ "$files" = 0 ] && [ "$spares" -le 16 ]; then
	ok "nothing left in the uipc namespace"
else
	nok "$left objects left in the uipc namespace"
fi
[ $failed -eq 0 ]
