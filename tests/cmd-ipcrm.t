#!/bin/bash
# tests/cmd-ipcrm.t - `uipc ipcmk` and `uipc ipcrm`: round trips in a uipc
# namespace, and the same argument lists given to util-linux ipcmk / ipcrm in
# a fresh kernel namespace and to uipc's in a fresh uipc namespace, holding
# the same objects: output, exit status, messages and what is left must match.
. "$(dirname "$0")/cmd/tap.sh"
require_build

uipc_has msg && has_msg=1 || has_msg=0
uipc_has shm && has_shm=1 || has_shm=0
have_kernel_ns && kernel=1 || kernel=0

# after each command: its exit status and what ipcs shows (keys hidden for
# ipcmk, whose keys are random)
cat >"$T_WORK/k-rm.sh" <<'EOF'
ipcrm "$@"; echo "[ipcrm exit $?]"; ipcs
EOF
cat >"$T_WORK/u-rm.sh" <<EOF
"$UIPC" ipcrm "\$@"; echo "[ipcrm exit \$?]"; "$UIPC" ipcs 2>/dev/null
EOF
cat >"$T_WORK/k-mk.sh" <<'EOF'
ipcmk "$@"; echo "[ipcmk exit $?]"; ipcs | sed 's/^0x[0-9a-f]*/KEY/'
EOF
cat >"$T_WORK/u-mk.sh" <<EOF
"$UIPC" ipcmk "\$@"; echo "[ipcmk exit \$?]"; "$UIPC" ipcs 2>/dev/null | sed 's/^0x[0-9a-f]*/KEY/'
EOF

FIXSEM="sem:0x3333:2:644 sem:0x2222:1:600 sem:private:3:600"
FIXALL="$FIXSEM msg:0x44:600 msg:private:600 shm:0x11:100:600 shm:private:4096:644"
rm_sem_cases=("" "-s 5" "-s 1" "-S 0x1234" "-S 0" "-S 0x3333" "-s abc" "sem" "sem 0"
	"sem 0 7 x" "-v -a=sem" "-a=foo" "-S 0x2222 -s 0" "-s 0 extra" "-s -5"
	"-v -s 0 -S 0x2222" "-s 0 -s 0" "-Z" "--semaphore-id 2 --verbose")
rm_all_cases=("-v -a" "-a" "-q 0" "-M 0x11" "-m 0 -m 0" "-Q 0x44 -v" "msg 0" "shm 0 1"
	"-v -a=shm" "-a=msg")
mk_sem_cases=("-S 2" "-S 2 -p 600" "-S 1 -p 0" "-S 0" "-S -1" "-S 40000" "" "-S x"
	"--semaphore 5 --mode 640")
mk_all_cases=("-Q" "-Q -p 600" "-M 100" "-M 0" "-M 1K" "-M 4096 -Q -S 2 -p 640")

plan $((12 + ${#rm_sem_cases[@]} + ${#rm_all_cases[@]} + ${#mk_sem_cases[@]} + ${#mk_all_cases[@]}))

# ---- round trips in one uipc namespace ----
new_ns
out=$("$UIPC" ipcmk --ns "$NS" -S 3)
is "$?" 0 "ipcmk -S 3 succeeds"
id=${out#Semaphore id: }
like "$out" '^Semaphore id: [0-9]+$' "... and prints the id"
row=$("$UIPC" ipcs --ns "$NS" -s | awk -v id="$id" '$2 == id { print $4, $5 }')
is "$row" "644 3" "ipcs shows it with mode 644 and 3 semaphores"
"$UIPC" ipcrm --ns "$NS" -s "$id"
is "$?" 0 "ipcrm -s ID removes it"
n=$("$UIPC" ipcs --ns "$NS" -s | grep -c '^0x')
is "$n" 0 "... and ipcs no longer shows it"
err=$("$UIPC" ipcrm --ns "$NS" -s "$id" 2>&1)
is "$?:$err" "1:uipc ipcrm: invalid id ($id)" "removing it again: invalid id, exit 1"
"$UIPC" ipcmk --ns "$NS" -S 2 -p 600 -k 0x4242 >/dev/null
row=$("$UIPC" ipcs --ns "$NS" -s | awk '$1 == "0x00004242" { print $4, $5 }')
is "$row" "600 2" "ipcmk -k KEY -p MODE: that key and mode"
"$UIPC" ipcrm --ns "$NS" -S 0x4242
n=$("$UIPC" ipcs --ns "$NS" -s | grep -c '^0x')
is "$?:$n" "1:0" "ipcrm -S KEY removes it"
for i in 1 2 3; do "$UIPC" ipcmk --ns "$NS" -S $i >/dev/null; done
"$UIPC" ipcrm --ns "$NS" -a 2>/dev/null
rc=$?
n=$("$UIPC" ipcs --ns "$NS" -s | grep -c '^0x')
is "$rc:$n" "0:0" "ipcrm -a removes everything"
"$UIPC" ipcmk --ns "$NS" -S 1 >/dev/null
out=$("$UIPC" ipcrm --ns "$NS" sem "$(("$UIPC" ipcs --ns "$NS" -s) | awk '/^0x/ { print $2 }')")
is "$out" "resource(s) deleted" "the old form: ipcrm sem ID"
if [ "$has_msg" = 0 ]; then
	err=$("$UIPC" ipcmk --ns "$NS" -Q 2>&1)
	like "$?:$err" "^1:.*not implemented" "ipcmk -Q while queues are missing: a clear message"
else
	out=$("$UIPC" ipcmk --ns "$NS" -Q) && "$UIPC" ipcrm --ns "$NS" -q "${out#Message queue id: }"
	is "$?" 0 "ipcmk -Q / ipcrm -q round trip"
fi
if [ "$has_shm" = 0 ]; then
	err=$("$UIPC" ipcmk --ns "$NS" -M 4096 2>&1)
	like "$?:$err" "^1:.*not implemented" "ipcmk -M while shared memory is missing: a clear message"
else
	out=$("$UIPC" ipcmk --ns "$NS" -M 4096) && "$UIPC" ipcrm --ns "$NS" -m "${out#Shared memory id: }"
	is "$?" 0 "ipcmk -M / ipcrm -m round trip"
fi

# ---- the same commands against the kernel ----
run_cases() {	# run_cases ENABLED REASON KIND FIXTURE CASE...
	local enabled=$1 reason=$2 kind=$3 fix=$4 a
	shift 4
	for a in "$@"; do
		if [ "$kernel" = 0 ]; then
			skip "ipc$kind $a" "no kernel IPC namespace (unshare --ipc needs root)"
		elif [ "$enabled" = 0 ]; then
			skip "ipc$kind $a" "$reason"
		else
			compare "ipc$kind $a" "$fix" "sh $T_WORK/k-$kind.sh $a" "sh $T_WORK/u-$kind.sh $a"
		fi
	done
}
run_cases 1 "" rm "$FIXSEM" "${rm_sem_cases[@]}"
run_cases $((has_msg * has_shm)) "message queues or shared memory not implemented yet" \
	rm "$FIXALL" "${rm_all_cases[@]}"
run_cases 1 "" mk "" "${mk_sem_cases[@]}"
run_cases $((has_msg * has_shm)) "message queues or shared memory not implemented yet" \
	mk "" "${mk_all_cases[@]}"
done_testing
