#!/bin/bash
# tests/cmd-ipcs.t - `uipc ipcs` prints exactly what util-linux ipcs prints for
# the same objects: each fixture (tests/cmd/ipcfix) is built once in a fresh
# kernel IPC namespace and shown with the real ipcs, and once in a fresh uipc
# namespace and shown with `uipc ipcs`; the transcripts (stdout, exit status,
# stderr) must be equal once pids and times are normalized.
. "$(dirname "$0")/cmd/tap.sh"
require_build

# fixtures
SEMS="sem:0x1234:3:640 sem:private:1:600 sem:0x7fffffff:10:666 sem:0xffffffff:2:604"
VALS="$SEMS setall:0:1,2,3 semop:0:1:1:u semop:2:9:5 semop:2:9:-1:n setval:3:1:7"
WAIT="$VALS wait:0:0:-5 wait:0:2:-4 wait:0:1:0 wait:0:1:0"
IDS="sem:1:1:600 sem:2:1:600 sem:3:1:600 rmid:sem:0 rmid:sem:1 sem:4:2:600 sem:private:3:640 chmod:sem:3:644"
MSGS="msg:0x55:600 msg:private:640 msgsnd:0:1:100 msgsnd:0:2:10 msgsnd:1:3:8000 msgrcv:0:2"
SHMS="shm:0x77:10000:660 shm:private:1:600 shm:0x79:5000000:644 shmat:0 shmat:2 shmat:2 shm:0x78:100:600 shmat:3 rmid:shm:3"

sem_cases=(
	"empty namespace, -s|sem:1:1:600 rmid:sem:0|-s"
	"arrays: keys, modes, nsems|$SEMS|-s"
	"-s -c (creators)|$SEMS|-s -c"
	"-s -t (times)|$VALS|-s -t"
	"-s -p (no pid view for semaphores)|$SEMS|-s -p"
	"-s -u (summary)|$SEMS|-s -u"
	"-s -l (limits)||-s -l"
	"-s -i: values and pids|$VALS|-s -i 0"
	"-s -i: ncount and zcount of sleepers|$WAIT|-s -i 0"
	"-s -i of a never-operated array|$VALS|-s -i 1"
	"-s -i of a 10-semaphore array|$VALS|-s -i 2"
	"-s -i of an absent id|$SEMS|-s -i 99"
	"-s -i of an id with a wrong sequence|$SEMS|-s -i 32768"
	"-i without a resource|$SEMS|-i 0"
	"-s -i with two resources|$SEMS|-s -q -i 0"
	"ids after removals (cyclic allocation), chmod|$IDS|-s"
	"-s --human / -b (no effect on semaphores)|$SEMS|-s -b --human"
)
# seen by another user than the owner (SEM_STAT_ANY lists all; -i needs read)
other_cases=(
	"another user: -s lists every array|$VALS|-s"
	"another user: -s -i of an array it cannot read|$VALS|-s -i 0"
	"another user: -s -i of an array it can read|$VALS|-s -i 3"
	"another user: -s -c|$VALS|-s -c"
)
msg_cases=(
	"queues: -q|$MSGS|-q"
	"-q --human|$MSGS|-q --human"
	"-q -c|$MSGS|-q -c"
	"-q -t|$MSGS|-q -t"
	"-q -p|$MSGS|-q -p"
	"-q -u|$MSGS|-q -u"
	"-q -u -b|$MSGS|-q -u -b"
	"-q -l|$MSGS|-q -l"
	"-q -i|$MSGS|-q -i 0"
	"-q -i --human|$MSGS|-q -i 1 --human"
)
shm_cases=(
	"segments: -m (nattch, dest)|$SHMS|-m"
	"-m --human|$SHMS|-m --human"
	"-m -c|$SHMS|-m -c"
	"-m -t|$SHMS|-m -t"
	"-m -p|$SHMS|-m -p"
	"-m -u|$SHMS|-m -u"
	"-m -l|$SHMS|-m -l"
	"-m -l -b|$SHMS|-m -l -b"
	"-m -l --human|$SHMS|-m -l --human"
	"-m -i|$SHMS|-m -i 0"
	"-m -i of a destroyed-on-detach segment|$SHMS|-m -i 3"
)
all_cases=(
	"everything: ipcs|$SEMS $MSGS $SHMS|"
	"everything: -a -c|$SEMS $MSGS $SHMS|-a -c"
	"everything: -l|$SEMS|-l"
	"everything: -u|$SEMS $MSGS $SHMS|-u"
	"everything: -t|$SEMS $MSGS $SHMS|-t"
	"everything: -p|$SEMS $MSGS $SHMS|-p"
)
# the views that print pids, with pids of other widths on the two sides
# (each side in a fresh pid namespace whose pids start where it is told)
pid_cases=(
	"-s -i: ncount and zcount of sleepers|$WAIT|-s -i 0"
	"-q -p|$MSGS|-q -p"
	"-m -p|$SHMS|-m -p"
	"-q -i|$MSGS|-q -i 0"
	"-m -i|$SHMS|-m -i 0"
)
pid_widths=("999 9999" "9999 999")	# last pids before kernel's, uipc's

plan $((${#sem_cases[@]} + ${#other_cases[@]} + ${#msg_cases[@]} + ${#shm_cases[@]} + ${#all_cases[@]} +
	${#pid_widths[@]} * ${#pid_cases[@]}))

have_kernel_ns && kernel=1 || kernel=0
uipc_has msg && has_msg=1 || has_msg=0
uipc_has shm && has_shm=1 || has_shm=0

run_cases() {	# run_cases ENABLED REASON AS CASE...: AS runs ipcs (as another user)
	local enabled=$1 reason=$2 as=$3 c desc ops args
	shift 3
	for c in "$@"; do
		IFS='|' read -r desc ops args <<<"$c"
		if [ "$kernel" = 0 ]; then
			skip "$desc" "no kernel IPC namespace (unshare --ipc needs root)"
		elif [ "$enabled" = 0 ]; then
			skip "$desc" "$reason"
		else
			compare "$desc" "$ops" "$as ipcs $args" "$as $UIPC ipcs $args"
		fi
	done
}

run_cases 1 "" "" "${sem_cases[@]}"
command -v setpriv >/dev/null && has_setpriv=1 || has_setpriv=0
T_SHARED=1 run_cases "$has_setpriv" "no setpriv" "$AS_OTHER" "${other_cases[@]}"
run_cases "$has_msg" "message queues not implemented by libuipc yet" "" "${msg_cases[@]}"
run_cases "$has_shm" "shared memory not implemented by libuipc yet" "" "${shm_cases[@]}"
run_cases $((has_msg * has_shm)) "message queues or shared memory not implemented yet" "" \
	"${all_cases[@]}"

have_pid_ns && has_pid_ns=1 || has_pid_ns=0
pid_max=$(cat /proc/sys/kernel/pid_max)
for w in "${pid_widths[@]}"; do
	read -r klast ulast <<<"$w"
	if [ "$has_pid_ns" = 0 ]; then
		enabled=0 reason="no pid namespaces (unshare --pid needs root)"
	elif [ "$pid_max" -le $((klast + 100)) ] || [ "$pid_max" -le $((ulast + 100)) ]; then
		# (a case takes a few pids after the last one given)
		enabled=0 reason="pid_max $pid_max: no pids after $klast and $ulast"
	else
		enabled=$((has_msg * has_shm)) reason="message queues or shared memory not implemented yet"
	fi
	cases=()
	for c in "${pid_cases[@]}"; do
		cases+=("${c%%|*} (pids from $((klast + 1)) on the kernel, $((ulast + 1)) in uipc)|${c#*|}")
	done
	T_KERNEL_LAST_PID=$klast T_UIPC_LAST_PID=$ulast run_cases "$enabled" "$reason" "" "${cases[@]}"
done
done_testing
