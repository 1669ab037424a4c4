#!/bin/bash
# tests/unit-hostile.t - the hostile-member suite (issue 14), targeted: a
# member H of a shared namespace rewrites each catalogued field of the
# arena (every structure: the header, the id and key tables, the process
# and thread slots and their journal frames, semaphore arrays, queues and
# their messages and ring, segments, block headers, lock words) with every
# kind of value, and truncates the namespace file and segment files, while
# a victim V of another uid makes every kind of call.  Each victim must
# return (an error is fine), never crash, never hang past the watchdog,
# and the canaries around its buffers and mappings stay intact
# (tests/unit/hostile.c says how).  Then H holds a lock and stops: V's
# calls stay bounded, and uipc fsck names H; V's setns and unshare, which
# apply its SEM_UNDO there, are bounded as its exit work is.  Needs root
# (the two users).
# UIPC_HOSTILE_SEED=N replays the truncation rounds of seed N.
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/tests/unit/hostile.sh"
hostile_setup

n=0 failed=0
tap() {	# reads the driver's TAP, renumbered into ours
	local line
	while IFS= read -r line; do
		case $line in
		"ok "*|"not ok "*)
			n=$((n+1))
			[[ $line == "not ok"* ]] && failed=$((failed+1))
			echo "${line%% [0-9]* - *} $n - ${line#* - }" ;;
		"1.."*) ;;
		*) echo "$line" ;;
		esac
	done
}

# ---- every field, every kind of value ----
hostile_ns t1
tap < <("$bin/hostile" drive "$D" t1 "$bin/hostile" "$lib" "$VU" "$VG" "$HU" "$HG" targeted 0 0 2>/dev/null)

# ---- the namespace file and segment files truncated under the victim ----
seed=${UIPC_HOSTILE_SEED:-$(( $(date +%s) % 100000 ))}
hostile_ns t2
tap < <("$bin/hostile" drive "$D" t2 "$bin/hostile" "$lib" "$VU" "$VG" "$HU" "$HG" truncate "$seed" 300 2>/dev/null)

# ---- a member that holds a lock and stops ----
hostile_ns t3
key=0x4858001
as "$uv" env UIPC_DIR="$D" UIPC_NS=shared:t3 LD_PRELOAD="$lib" ipcmk -Q -p 0666 >/dev/null 2>&1
qkey=$(as "$uv" env UIPC_DIR="$D" UIPC_NS=shared:t3 LD_PRELOAD="$lib" ipcs -q 2>/dev/null | awk '/^0x/ { print $1; exit }')
fifo=$D/holdstop.out
as "$uh" env UIPC_DIR="$D" UIPC_NS=shared:t3 LD_PRELOAD="$lib" "$bin/hostile" holdstop "$qkey" >"$fifo" 2>&1 &
wpid=$!
for _ in $(seq 50); do grep -q held "$fifo" 2>/dev/null && break; sleep 0.1; done
hpid=$(awk '/^held by/ { print $3 }' "$fifo")
state=$(awk '{ print $3 }' /proc/${hpid:-0}/stat 2>/dev/null)
n=$((n+1))
if [ "$state" = T ] && grep -q held "$fifo"; then
	echo "ok $n - H takes the queue's lock and stops (pid $hpid)"
else
	failed=$((failed+1)); echo "not ok $n - H did not take the lock and stop (state '$state'): $(cat "$fifo")"
fi
out=$(timeout 60 setpriv --reuid="$VU" --regid="$VG" --clear-groups -- env UIPC_DIR="$D" \
	UIPC_NS=shared:t3 LD_PRELOAD="$lib" UIPC_LOCK_WAIT_MS=1000 "$bin/hostile" bounded "$qkey" 2>&1)
rc=$?
n=$((n+1))
if [ $rc = 0 ] && [[ "$out" == *"msgrcv, blocking, a signal after 1 s: Interrupted system call in 1 s"* ]] &&
   [[ "$out" == *"msgsnd, blocking, a signal after 1 s: Interrupted system call in 1 s"* ]] &&
   [[ "$out" =~ "msgsnd, IPC_NOWAIT: Resource deadlock avoided in "[12]" s" ]] &&
   [[ "$out" =~ "msgctl IPC_STAT: Resource deadlock avoided in "[12]" s" ]]; then
	echo "ok $n - V's calls stay bounded: blocking ones interrupted by a handler (EINTR), others give up (EDEADLK)"
else
	failed=$((failed+1)); echo "not ok $n - V's calls while H holds the lock (status $rc):"
	echo "$out" | sed 's/^/# /'
fi
out=$(timeout 60 setpriv --reuid="$VU" --regid="$VG" --clear-groups -- "$bin/uipc" fsck --dir "$D" \
	--ns shared:t3 2>&1)
n=$((n+1))
if [[ "$out" == *"is held by process $hpid (thread $hpid), which is stopped"* ]]; then
	echo "ok $n - uipc fsck names the stopped holder"
else
	failed=$((failed+1)); echo "not ok $n - uipc fsck does not name pid $hpid:"; echo "$out" | sed 's/^/# /'
fi
kill -KILL "$hpid" 2>/dev/null; wait "$wpid" 2>/dev/null
out=$(timeout 60 setpriv --reuid="$VU" --regid="$VG" --clear-groups -- env UIPC_DIR="$D" \
	UIPC_NS=shared:t3 LD_PRELOAD="$lib" ipcs -q 2>&1)
n=$((n+1))
if [[ "$out" == *"$qkey"* ]]; then
	echo "ok $n - once H is gone, the lock is recovered and V's calls work"
else
	failed=$((failed+1)); echo "not ok $n - after H died: $out"
fi

# ---- leaving a namespace while H holds a lock the leaving needs ----
# V has a SEM_UNDO adjustment on an array whose lock H holds, stopped:
# V's setns into its own namespace (which applies it) and its unshare
# (which leaves, its exit work done) each return within the exit work's
# bound (2 s a lock), not after UIPC_LOCK_WAIT_MS (30 s by default)
hostile_ns t4
as "$uv" env UIPC_DIR="$D" UIPC_NS=shared:t4 LD_PRELOAD="$lib" ipcmk -S 1 -p 0666 >/dev/null 2>&1
skey=$(as "$uv" env UIPC_DIR="$D" UIPC_NS=shared:t4 LD_PRELOAD="$lib" ipcs -s 2>/dev/null | awk '/^0x/ { print $1; exit }')
lout=$D/leave.out
timeout 120 setpriv --reuid="$VU" --regid="$VG" --clear-groups -- env UIPC_DIR="$D" \
	UIPC_NS=shared:t4 LD_PRELOAD="$lib" "$bin/hostile" leave "$skey" >"$lout" 2>&1 &
lwpid=$!
for _ in $(seq 50); do grep -q "undo taken" "$lout" 2>/dev/null && break; sleep 0.1; done
lpid=$(awk '/^undo taken by/ { print $4 }' "$lout")
fifo=$D/holdstop-sem.out
as "$uh" env UIPC_DIR="$D" UIPC_NS=shared:t4 LD_PRELOAD="$lib" "$bin/hostile" holdstop "$skey" sem >"$fifo" 2>&1 &
wpid=$!
for _ in $(seq 50); do grep -q held "$fifo" 2>/dev/null && break; sleep 0.1; done
hpid=$(awk '/^held by/ { print $3 }' "$fifo")
kill -CONT "${lpid:-0}" 2>/dev/null
wait "$lwpid"
out=$(cat "$lout")
n=$((n+1))
if [ -n "$hpid" ] && [[ "$out" =~ "setns into its own namespace: returned in "[0-4]" s" ]] &&
   [[ "$out" =~ "unshare: returned in "[0-4]" s" ]]; then
	echo "ok $n - V's setns and unshare while H holds the array's lock: each within the exit work's bound"
else
	failed=$((failed+1)); echo "not ok $n - V's setns and unshare while H (pid '$hpid') holds the array's lock:"
	echo "$out" | sed 's/^/# /'
fi
kill -KILL "$hpid" 2>/dev/null; wait "$wpid" 2>/dev/null
# what V's leaving could not do, a survivor's reaper does once H is gone:
# V's +1 with SEM_UNDO is taken back, as the kernel's exit_sem would have
out=$(timeout 60 setpriv --reuid="$VU" --regid="$VG" --clear-groups -- env UIPC_DIR="$D" \
	UIPC_NS=shared:t4 LD_PRELOAD="$lib" "$bin/hostile" getval "$skey" 2>&1)
n=$((n+1))
if [ "$out" = "semval 0" ]; then
	echo "ok $n - once H is gone, V's SEM_UNDO left undone at its unshare is applied by a survivor"
else
	failed=$((failed+1)); echo "not ok $n - after H died, the array V left: $out"
fi

echo "1..$n"
[ $failed -eq 0 ]
