# tests/cmd/tap.sh - sourced by tests/cmd-*.t: a small TAP writer, the paths
# of the things under test, a fresh uipc namespace directory per script
# (mktemp -d /dev/shm/uipc-cmd.XXXXXX, removed at exit whatever happens), and
# the helpers that run one fixture on both sides and compare the outputs:
#   kernel: unshare --ipc  ipcfix OPS -- ipcs ARGS      (a fresh kernel namespace)
#   uipc:   uipc run --ns N -- ipcfix OPS -- uipc ipcs ARGS   (a fresh uipc one)
# Pids (recorded by ipcfix) become P0, P1, ... and times <TIME> before comparing;
# either side can run in a fresh pid namespace, to choose its pids' widths.
set -u

T_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
T_BUILD=${UIPC_TEST_BUILD:-$T_ROOT/build}	# another build directory, if given
UIPC=$T_BUILD/uipc
LIB=$T_BUILD/libuipc.so
FIX=$T_BUILD/tests/cmd/ipcfix
T_N=0
T_FAILED=0
T_NS=0
T_WORK=$(mktemp -d /tmp/uipc-cmd-work.XXXXXX)
UDIR=$(mktemp -d /dev/shm/uipc-cmd.XXXXXX)
export UIPC_DIR=$UDIR
unset UIPC_NS UIPC_LIB UIPC_NS_EXTENDED UIPC_NS_SIZE

t_cleanup() {
	rm -rf "$UDIR"; [ -n "${UIPC_TEST_KEEP:-}" ] || rm -rf "$T_WORK"
}
trap t_cleanup EXIT
trap 't_cleanup; exit 130' INT TERM

plan() { echo "1..$1"; }

ok() {	# ok STATUS DESC: STATUS 0 is a pass
	T_N=$((T_N + 1))
	if [ "$1" = 0 ]; then
		echo "ok $T_N - $2"
	else
		echo "not ok $T_N - $2"
		T_FAILED=$((T_FAILED + 1))
	fi
}

skip() {	# skip DESC REASON
	T_N=$((T_N + 1))
	echo "ok $T_N - $1 # SKIP $2"
}

diag() { sed 's/^/# /' >&2; }

is() {	# is GOT EXPECTED DESC
	if [ "$1" = "$2" ]; then
		ok 0 "$3"
	else
		ok 1 "$3"
		printf 'got:      %s\nexpected: %s\n' "$1" "$2" | diag
	fi
}

like() {	# like TEXT REGEX DESC
	if printf '%s' "$1" | grep -Eq -- "$2"; then
		ok 0 "$3"
	else
		ok 1 "$3"
		printf 'text:  %s\nregex: %s\n' "$1" "$2" | diag
	fi
}

done_testing() {
	echo "# $((T_N - T_FAILED)) passed, $T_FAILED failed"
	[ "$T_FAILED" = 0 ]
}

# The whole script fails loudly when the build is missing.
require_build() {
	local f
	for f in "$UIPC" "$LIB" "$FIX"; do
		if [ ! -x "$f" ] && [ ! -f "$f" ]; then
			echo "1..1"
			echo "not ok 1 - $f is missing: run make all test-progs"
			exit 1
		fi
	done
}

# new_ns: a fresh namespace name for this script in $NS (not in a subshell:
# the counter must advance).
new_ns() {
	T_NS=$((T_NS + 1))
	NS=t$T_NS
}

# Kernel IPC namespaces need CAP_SYS_ADMIN (root in CI).
have_kernel_ns() {
	unshare --ipc true 2>/dev/null
}

# Does uipc implement TYPE (sem, msg, shm) yet?  (ENOSYS until it does.)
uipc_has() {
	local op
	case $1 in
	sem) op=sem:private:1:600 ;;
	msg) op=msg:private:600 ;;
	shm) op=shm:private:4096:600 ;;
	esac
	"$UIPC" run --ns "probe-$1" -- "$FIX" "$op" >/dev/null 2>&1
}

# normalize_pids FILE PIDFILE: the pids of PIDFILE (line n: P<n-1>) replaced
# where ipcs prints a pid, and only there: a pid that happens to equal a
# size, a mode or a limit printed elsewhere stays as it is.  util-linux ipcs
# (whose layout uipc ipcs copies) prints pids
#   in the -i views, as NAME=PID (cpid, lpid, lspid, lrpid), unpadded;
#   in the "semnum value ncount zcount pid" table of -s -i: column 5, %-10d;
#   under "Shared Memory Creator/Last-op PIDs" (-m -p): columns 3, 4, %-10u;
#   under "Message Queues PIDs" (-q -p): columns 3, 4, %5d (right-aligned).
# A padded pid is replaced together with its padding, so that the result
# does not depend on how many digits the pid has (the two sides' pids
# differ): the name is written in the field's width, and what follows a
# left-aligned field (precedes a right-aligned one) beyond the padding that
# the pid's digits needed is kept as printed.  A different field width,
# alignment or separator therefore still shows; a pid printed without the
# padding its field needs is left as it is, and differs.
normalize_pids() {
	awk -v pidfile="$2" '
	function sp(n,   s) { s = ""; while (n-- > 0) s = s " "; return s }
	# field k, left-aligned in width fw, then gap[k + 1]
	function left(k, fw,   v, sep) {
		v = fld[k]
		if (k > nf || !(v in name))
			return
		sep = length(gap[k + 1]) - (fw > length(v) ? fw - length(v) : 0)
		if (sep < 0)
			return
		fld[k] = name[v] sp(fw - length(name[v]))
		gap[k + 1] = sp(sep)
	}
	# gap[k], then field k, right-aligned in width fw
	function right(k, fw,   v, sep) {
		v = fld[k]
		if (k > nf || !(v in name))
			return
		sep = length(gap[k]) - (fw > length(v) ? fw - length(v) : 0)
		if (sep < 0)
			return
		gap[k] = sp(sep)
		fld[k] = sp(fw - length(name[v])) name[v]
	}
	# NAME=PID
	function named(s,   out, m, eq, v) {
		out = ""
		while (match(s, /(^|[^a-z])(cpid|lpid|lspid|lrpid)=[0-9]+/)) {
			m = substr(s, RSTART, RLENGTH)
			eq = index(m, "=")
			v = substr(m, eq + 1)
			out = out substr(s, 1, RSTART - 1) substr(m, 1, eq) ((v in name) ? name[v] : v)
			s = substr(s, RSTART + RLENGTH)
		}
		return out s
	}
	BEGIN {
		n = 0
		while ((getline p <pidfile) > 0)
			name[p] = "P" n++
	}
	/^$/ || /^------ / { table = "" }
	/^------ Shared Memory Creator\/Last-op PIDs / { table = "shm-p" }
	/^------ Message Queues PIDs / { table = "msg-p" }
	table != "" && /^[0-9]+ / {
		# the row as gap[1] fld[1] ... gap[nf] fld[nf] gap[nf + 1]
		s = $0
		nf = 0
		while (match(s, /[^ ]+/)) {
			nf++
			gap[nf] = substr(s, 1, RSTART - 1)
			fld[nf] = substr(s, RSTART, RLENGTH)
			s = substr(s, RSTART + RLENGTH)
		}
		gap[nf + 1] = s
		if (table == "sem-i") {
			left(5, 10)
		} else if (table == "shm-p") {
			left(3, 10); left(4, 10)
		} else {
			right(3, 5); right(4, 5)
		}
		s = ""
		for (i = 1; i <= nf; i++)
			s = s gap[i] fld[i]
		print s gap[nf + 1]
		next
	}
	/^semnum +value +ncount +zcount +pid *$/ { table = "sem-i" }
	{ print named($0) }
	' "$1" >"$1.tmp" && mv "$1.tmp" "$1"
}

# normalize FILE PIDFILE: pids -> P0.. (normalize_pids), times -> <TIME>,
# "uipc ipcs:" -> "ipcs:"
normalize() {
	local f=$1 pids=$2
	[ -f "$pids" ] || pids=/dev/null
	normalize_pids "$f" "$pids"
	sed -i -E \
		-e 's/[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2} [0-9]{4}/<TIME>/g' \
		-e 's/[A-Z][a-z]{2} [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2}/<TIME>/g' \
		-e 's/^uipc (ipcs|ipcrm|ipcmk): /\1: /' \
		-e "s/Try 'uipc help (ipcs|ipcrm|ipcmk)'/Try '\\1 --help'/" "$f"
}

# Pid namespaces (root only, as kernel IPC namespaces).
have_pid_ns() {
	unshare --pid --fork --mount-proc true 2>/dev/null
}

# pidns LAST: in the array PIDNS, the words that run a command in a fresh
# pid namespace whose next pid is LAST+1 (nothing when LAST is empty), so
# that a test chooses how many digits the pids of each side have: set
# T_KERNEL_LAST_PID and T_UIPC_LAST_PID.  ns_last_pid is the namespace's
# own: nothing outside it changes.
pidns() {
	PIDNS=()
	[ -n "$1" ] || return 0
	# shellcheck disable=SC2016
	PIDNS=(unshare --pid --fork --kill-child --mount-proc -- sh -c \
		'echo "$0" >/proc/sys/kernel/ns_last_pid || exit 125; "$@"; exit $?' "$1")
}

# run_kernel OUT "OPS" CMD...: fixture + CMD in a fresh kernel namespace
run_kernel() {
	local out=$1 ops=$2 rc
	shift 2
	pidns "${T_KERNEL_LAST_PID:-}"
	# shellcheck disable=SC2086
	timeout 30 "${PIDNS[@]}" unshare --ipc -- "$FIX" -p "$out.pids" $ops -- "$@" >"$out" 2>"$out.err"
	rc=$?
	echo "[exit $rc]" >>"$out"
	cat "$out.err" >>"$out"
	normalize "$out" "$out.pids"
}

# run_uipc OUT "OPS" CMD...: fixture + CMD in a fresh uipc namespace (a
# shared one, open to every user, when T_SHARED=1)
run_uipc() {
	local out=$1 ops=$2 rc ns
	shift 2
	new_ns
	ns=$NS
	if [ "${T_SHARED:-0}" = 1 ]; then
		chmod 0711 "$UDIR"
		"$UIPC" ns create "$NS" --shared --mode 0666
		ns=shared:$NS	# a shared namespace is reached by that name only
	fi
	pidns "${T_UIPC_LAST_PID:-}"
	# shellcheck disable=SC2086
	timeout 30 "${PIDNS[@]}" "$UIPC" run --ns "$ns" -- "$FIX" -p "$out.pids" $ops -- "$@" >"$out" 2>"$out.err"
	rc=$?
	echo "[exit $rc]" >>"$out"
	cat "$out.err" >>"$out"
	normalize "$out" "$out.pids"
}

# As another user (nobody), for the permission checks.
AS_OTHER="setpriv --reuid=65534 --regid=65534 --clear-groups"

# compare DESC "OPS" "KERNEL CMD" "UIPC CMD": both transcripts must be equal
compare() {
	local desc=$1 ops=$2 kcmd=$3 ucmd=$4 k u
	k=$T_WORK/k.$T_N
	u=$T_WORK/u.$T_N
	# shellcheck disable=SC2086
	run_kernel "$k" "$ops" $kcmd
	# shellcheck disable=SC2086
	run_uipc "$u" "$ops" $ucmd
	if cmp -s "$k" "$u"; then
		ok 0 "$desc"
	else
		ok 1 "$desc"
		{
			echo "fixture: $ops"
			echo "--- kernel: $kcmd"
			echo "+++ uipc:   $ucmd"
			diff -u "$k" "$u" | tail -n +3 | head -60
		} | diag
	fi
}
