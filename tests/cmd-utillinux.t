#!/bin/bash
# tests/cmd-utillinux.t - util-linux's own ipcs, lsipc, ipcrm and ipcmk run
# under `uipc run` print what they print on the kernel for the same objects:
# each fixture (tests/cmd/ipcfix) is built once in a fresh kernel IPC
# namespace (unshare --ipc) and once in a fresh uipc namespace, then the
# same command runs in it (under uipc it reads /proc/sysvipc/*, the
# sysctls under /proc/sys/kernel and the *_STAT_ANY calls through libuipc).
# Pids become P0, P1, ... whatever their digit count (the padding around
# them is folded), times become <TIME>; lsipc's column spacing, which it
# computes from the widest value, is folded too.  Every case runs its uipc
# side twice: the second time under `uipc run --no-kernel-ipc` (a seccomp
# filter makes the kernel's System V IPC calls fail with ENOSYS), which
# proves the tools' IPC is all uipc's.
. "$(dirname "$0")/cmd/tap.sh"
require_build

SEMS="sem:0x1234:3:640 sem:private:1:600 sem:0x7fffffff:10:666 setall:0:1,2,3 semop:0:1:1:u"
MSGS="msg:0x55:600 msg:private:640 msgsnd:0:1:100 msgsnd:0:2:10 msgsnd:1:3:8000 msgrcv:0:2"
SHMS="shm:0x77:10000:660 shm:private:1:600 shm:0x79:5000000:644 shmat:0 shmat:2 shmat:2 shm:0x78:100:600 shmat:3 rmid:shm:3"
ALL="$SEMS $MSGS $SHMS"

cases=(
	"ipcs|$ALL|ipcs"
	"ipcs -a|$ALL|ipcs -a"
	"ipcs -s|$ALL|ipcs -s"
	"ipcs -q|$ALL|ipcs -q"
	"ipcs -m|$ALL|ipcs -m"
	"ipcs -c|$ALL|ipcs -c"
	"ipcs -t|$ALL|ipcs -t"
	"ipcs -p|$ALL|ipcs -p"
	"ipcs -l|$ALL|ipcs -l"
	"ipcs -u|$ALL|ipcs -u"
	"ipcs -s -i 0|$ALL|ipcs -s -i 0"
	"ipcs -q -i 0|$ALL|ipcs -q -i 0"
	"ipcs -m -i 0|$ALL|ipcs -m -i 0"
	"ipcs -m -i of a destroyed-on-detach segment|$ALL|ipcs -m -i 3"
	"ipcs --human|$ALL|ipcs --human"
	"ipcs -b -l|$ALL|ipcs -b -l"
	"ipcs -m --human -u|$ALL|ipcs -m --human -u"
	"lsipc|$ALL|lsipc"
	"lsipc -s|$ALL|lsipc -s"
	"lsipc -q|$ALL|lsipc -q"
	"lsipc -m|$ALL|lsipc -m"
	"lsipc -g|$ALL|lsipc -g"
	"lsipc -g --json|$ALL|lsipc -g --json"
	"lsipc -s -i 0|$ALL|lsipc -s -i 0"
	"lsipc -q -i 1|$ALL|lsipc -q -i 1"
	"lsipc -m -i 2|$ALL|lsipc -m -i 2"
	"lsipc -s --json|$ALL|lsipc -s --json"
	"lsipc -q --json|$ALL|lsipc -q --json"
	"lsipc -m --json|$ALL|lsipc -m --json"
	"lsipc -m -b -o ID,SIZE,RSS,NATTCH,STATUS|$ALL|lsipc -m -b -o ID,SIZE,RSS,NATTCH,STATUS"
	"ipcrm -s 0 -q 1 -m 1, then ipcs|$ALL|sh -c 'ipcrm -s 0 -q 1 -m 1; echo rc=\$?; ipcs'"
	"ipcrm -M 0x77 -Q 0x55 -S 0x1234, then lsipc|$ALL|sh -c 'ipcrm -M 0x77 -Q 0x55 -S 0x1234; echo rc=\$?; lsipc'"
	"ipcrm of absent ids and keys|$ALL|sh -c 'ipcrm -s 99 -q 98 -m 97 -M 0x4242; echo rc=\$?'"
	"ipcrm -a, then ipcs|$ALL|sh -c 'ipcrm -a; echo rc=\$?; ipcs'"
	"ipcrm --all=shm|$ALL|sh -c 'ipcrm --all=shm; echo rc=\$?; ipcs -m'"
	"another user: ipcs|$ALL|$AS_OTHER ipcs"
	"another user: ipcs -m -i of a segment it cannot read|$ALL|$AS_OTHER ipcs -m -i 1"
	"another user: lsipc -m|$ALL|$AS_OTHER lsipc -m"
	"another user: lsipc -s --json|$ALL|$AS_OTHER lsipc -s --json"
	"another user: ipcrm -q 0 (not the owner)|$ALL|$AS_OTHER ipcrm -q 0; echo rc=\$?"
	"procps sysctl: read, -w good and bad values|$ALL|sysctl kernel.sem kernel.msgmax kernel.shm_next_id; sysctl -w kernel.msgmax=0x20 kernel.sem='5 6 7 8'; sysctl -w kernel.msgmni=99999; sysctl -w kernel.shmmax=-1; echo rc=\$?; sysctl kernel.msgmax kernel.sem kernel.msgmni kernel.shmmax"
	"shell redirections into /proc/sys/kernel|$ALL|echo 3000 > /proc/sys/kernel/msgmnb; echo bad > /proc/sys/kernel/msgmax; echo rc=\$?; cat /proc/sys/kernel/msgmnb /proc/sys/kernel/msgmax"
	"ipcmk -Q -S -M, then lsipc|$ALL|sh -c 'ipcmk -Q -p 0640; ipcmk -S 4; ipcmk -M 8192 -p 0600; lsipc -q -o ID,PERMS,USEDBYTES,MSGS; lsipc -s -o ID,PERMS,NSEMS; lsipc -m -o ID,PERMS,SIZE,NATTCH'"
)

plan $((2 * ${#cases[@]} + 1))

# fold PID and the spaces around it into " Pn " (width-independent)
norm_pids() {	# norm_pids FILE PIDFILE
	local i=0 p
	[ -f "$2" ] || return 0
	while read -r p; do
		perl -pi -e "s/ *(?<![0-9])$p(?![0-9]) */ P$i /g" "$1"
		i=$((i + 1))
	done <"$2"
}

norm_times() {
	sed -i -E \
		-e 's/[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2} [0-9]{4}/<TIME>/g' \
		-e 's/[A-Z][a-z]{2} [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2}/<TIME>/g' \
		-e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]+[+-][0-9:]+/<TIME>/g' \
		-e 's/(^|[^0-9:])[0-9]{2}:[0-9]{2}(:[0-9]{2})?($|[^0-9:])/\1<TIME>\3/g' \
		-e 's/[A-Z][a-z]{2}[0-9]{2}/<DAY>/g' "$1"
}

# Both sides run in a fresh pid namespace whose pids start at 21001: a pid
# the host hands out may equal a number the tools print (32767, SEMVMX and
# the last pid where pid_max is 32768; 32000, ...), and folding it as a pid
# on one side only made the transcripts differ now and then.  No limit,
# size or key of the fixtures is near 21001.
have_pid_ns && pidns 21000

# side kernel|uipc|nokipc OUT OPS CMD: the fixture, then CMD (sh -c), in a
# fresh namespace (nokipc: uipc with the kernel's IPC refused)
side() {
	local which=$1 out=$2 ops=$3 cmd=$4 rc ns opt=
	if [ "$which" = kernel ]; then
		# shellcheck disable=SC2086
		timeout 30 "${PIDNS[@]}" unshare --ipc -- "$FIX" -p "$out.pids" $ops -- sh -c "$cmd" \
			>"$out" 2>"$out.err"
	else
		new_ns
		ns=$NS
		# a command run as another user needs a namespace open to it (a
		# shared one, reached by that name only)
		case $cmd in *setpriv*)
			chmod 0711 "$UDIR"
			"$UIPC" ns create "$NS" --shared --mode 0666
			ns=shared:$NS ;;
		esac
		[ "$which" = nokipc ] && opt=--no-kernel-ipc
		# shellcheck disable=SC2086
		timeout 30 "${PIDNS[@]}" "$UIPC" run $opt --ns "$ns" -- "$FIX" -p "$out.pids" $ops -- \
			sh -c "$cmd" \
			>"$out" 2>"$out.err"
	fi
	rc=$?
	echo "[exit $rc]" >>"$out"
	cat "$out.err" >>"$out"
	norm_pids "$out" "$out.pids"
	norm_times "$out"
	# lsipc sizes its table's columns to the widest value, a pid's digit
	# count included: its spacing is lsipc's, not uipc's, so it is folded
	# (the values are still compared; ipcs's fixed widths are not folded)
	case $cmd in *lsipc*) sed -i -E 's/ {2,}/ /g' "$out" ;; esac
}

if ! have_kernel_ns; then
	for c in "${cases[@]}"; do
		ok 1 "${c%%|*}: no kernel IPC namespace (unshare --ipc needs root)"
		ok 1 "${c%%|*} (no kernel IPC): no kernel IPC namespace (unshare --ipc needs root)"
	done
	done_testing
	exit
fi

for c in "${cases[@]}"; do
	IFS='|' read -r desc ops cmd <<<"$c"
	k=$T_WORK/k.$T_N
	u=$T_WORK/u.$T_N
	side kernel "$k" "$ops" "$cmd"
	side uipc "$u" "$ops" "$cmd"
	if cmp -s "$k" "$u"; then
		ok 0 "$desc"
	else
		ok 1 "$desc"
		diff -u "$k" "$u" | tail -n +3 | head -40 | diag
	fi
	side nokipc "$u.n" "$ops" "$cmd"
	if cmp -s "$k" "$u.n"; then
		ok 0 "$desc (uipc run --no-kernel-ipc)"
	else
		ok 1 "$desc (uipc run --no-kernel-ipc)"
		diff -u "$k" "$u.n" | tail -n +3 | head -40 | diag
	fi
done

# `uipc sysctl` and the files agree, whichever wrote last
new_ns
"$UIPC" run --ns "$NS" -- sh -c 'echo "9 8 7 6" > /proc/sys/kernel/sem; echo 4444 > /proc/sys/kernel/msgmax'
a=$("$UIPC" sysctl --ns "$NS" -n kernel.sem kernel.msgmax | tr '\t\n' '  ')
"$UIPC" sysctl --ns "$NS" kernel.msgmnb=777 >/dev/null
b=$("$UIPC" run --ns "$NS" -- cat /proc/sys/kernel/sem /proc/sys/kernel/msgmax /proc/sys/kernel/msgmnb | tr '\t\n' '  ')
is "$a / $b" "9 8 7 6 4444  / 9 8 7 6 4444 777 " "uipc sysctl reads what the files wrote, the files read what uipc sysctl wrote"
done_testing
