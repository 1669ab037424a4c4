# tests/diff/lib.sh - the differential driver, sourced by tests/diff-*.t and
# tests/diff/difftest.  One scenario run = one program + case name + args,
# run twice:
#   kernel: timeout T unshare --ipc -- PROG CASE ARGS
#           (a fresh kernel IPC namespace, destroyed with its objects)
#   uipc:   timeout T env UIPC_DIR=$D UIPC_NS=diff LD_PRELOAD=build/libuipc.so
#           PROG CASE ARGS   (D: a fresh mktemp -d /dev/shm/uipc-diff.XXXXXX,
#           removed after the run, whatever happened)
# and the transcripts (stdout + an "[exit N]" line) compared byte for byte.
#
# Environment:
#   UIPC_DIFF_SELFTEST=1  the second run is the kernel again (proves the
#                         scenarios are deterministic; needs no library)
#   UIPC_DIFF_TIMEOUT=s   per-run timeout (default 10; a correct run of any
#                         case takes well under a second)
#   UIPC_DIFF_BUDGET=s    once a .t has run this long (default 90), later
#                         runs get a 3 s timeout, so that a library that
#                         hangs cannot hold the suite for many minutes
#   UIPC_DIFF_KEEP=dir    keep every transcript in dir
#   UIPC_DIFF_VERBOSE=1   print the whole diff, not only its beginning
#   DT_UIPC_WRAP="cmd..." (set by a .t) run the uipc side as cmd... PROG ARGS
#                         (tests/diff-ns.t: `unshare --ipc --`, under uipc)
#   UIPC_TEST_LIB=path    the library to test instead of build/libuipc.so
#   UIPC_TEST_PRELOAD=lib preloaded before it (the ASan runtime for the
#                         sanitizer build: tests/unit-sanitize.t)
#   UIPC_DIFF_SKIP="prog case,..."  cases reported as skipped, with the
#                         reason UIPC_DIFF_SKIP_WHY (the sanitizer build:
#                         ASan intercepts mlock itself)
set -u

DT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DT_BIN=$DT_ROOT/build/tests/diff
DT_LIB=${UIPC_TEST_LIB:-$DT_ROOT/build/libuipc.so}
DT_TIMEOUT=${UIPC_DIFF_TIMEOUT:-10}
DT_BUDGET=${UIPC_DIFF_BUDGET:-90}
DT_OVER_BUDGET=0
DT_SELFTEST=${UIPC_DIFF_SELFTEST:-0}
DT_KEEP=${UIPC_DIFF_KEEP:-}
DT_WORK=$(mktemp -d /tmp/uipc-diff-work.XXXXXX)
chmod 755 "$DT_WORK"
DT_UDIR=
DT_N=0
DT_FAILED=0

dt_cleanup() {
	if [ -n "$DT_UDIR" ]; then rm -rf "$DT_UDIR"; DT_UDIR=; fi
	rm -rf "$DT_WORK"
}
trap dt_cleanup EXIT
trap 'dt_cleanup; exit 130' INT TERM

# second-run label
if [ "$DT_SELFTEST" = 1 ]; then DT_OTHER=kernel2; else DT_OTHER=uipc; fi

# Fails the whole .t loudly when the library is missing (no skip).  The
# runs use a snapshot of the library taken here, so that a rebuild during
# the run cannot mix two versions.
DT_LIB_RUN=$DT_LIB
dt_require_lib() {
	if [ "$DT_SELFTEST" != 1 ] && [ ! -f "$DT_LIB" ]; then
		echo "1..1"
		echo "not ok 1 - $DT_LIB is missing: run make (or UIPC_DIFF_SELFTEST=1 for kernel-vs-kernel)"
		exit 1
	fi
	if [ "$DT_SELFTEST" != 1 ]; then
		DT_LIB_RUN=$DT_WORK/libuipc.so
		cp "$DT_LIB" "$DT_LIB_RUN"
	fi
}

dt_status_line() {
	local rc=$1
	case $rc in
	124) echo "[timeout]" ;;
	137) echo "[killed: SIGKILL (timeout -k)]" ;;
	*) if [ "$rc" -gt 128 ]; then echo "[signal $((rc - 128))]"; else echo "[exit $rc]"; fi ;;
	esac
}

# Sets DT_RUN_TIMEOUT for the next run: short once the budget is spent.
dt_timeout() {
	DT_RUN_TIMEOUT=$DT_TIMEOUT
	if [ "$SECONDS" -ge "$DT_BUDGET" ]; then
		DT_RUN_TIMEOUT=3
		if [ "$DT_OVER_BUDGET" = 0 ]; then
			DT_OVER_BUDGET=1
			echo "# time budget of ${DT_BUDGET}s spent: 3 s timeouts from here on"
		fi
	fi
}

# dt_run_kernel OUT PROG ARGS...
dt_run_kernel() {
	local out=$1; shift
	local rc=0
	env UIPC_DIFF_MODE=kernel timeout -k 5 "$DT_RUN_TIMEOUT" unshare --ipc -- "$@" \
		>"$out" 2>"$out.err" </dev/null || rc=$?
	dt_status_line "$rc" >>"$out"
}

# dt_run_uipc OUT PROG ARGS...
dt_run_uipc() {
	local out=$1; shift
	local rc=0
	DT_UDIR=$(mktemp -d /dev/shm/uipc-diff.XXXXXX)
	env UIPC_DIFF_MODE=uipc timeout -k 5 "$DT_RUN_TIMEOUT" \
		env UIPC_DIR="$DT_UDIR" UIPC_NS=diff LD_PRELOAD="${UIPC_TEST_PRELOAD:+$UIPC_TEST_PRELOAD:}$DT_LIB_RUN" \
			${DT_UIPC_WRAP:-} "$@" \
		>"$out" 2>"$out.err" </dev/null || rc=$?
	rm -rf "$DT_UDIR"
	DT_UDIR=
	dt_status_line "$rc" >>"$out"
}

# TAP diagnostics, also on stderr: prove shows stderr without -v, so a CI
# log keeps the diff of a case that failed there
dt_diag() { sed 's/^/# /' | tee /dev/stderr; }

# dt_case NAME PROG ARGS...: runs one scenario both ways, prints one TAP line.
dt_case() {
	local name=$1; shift
	DT_N=$((DT_N + 1))
	if [[ ",${UIPC_DIFF_SKIP:-}," == *",$name,"* ]]; then
		echo "ok $DT_N - $name # SKIP ${UIPC_DIFF_SKIP_WHY:-}"
		return
	fi
	local k=$DT_WORK/$DT_N.kernel o=$DT_WORK/$DT_N.$DT_OTHER
	if [ ! -x "$1" ]; then
		echo "not ok $DT_N - $name"
		echo "$1 is missing: run make test-progs" | dt_diag
		DT_FAILED=$((DT_FAILED + 1))
		return
	fi
	dt_timeout
	dt_run_kernel "$k" "$@"
	if [ "$DT_SELFTEST" = 1 ]; then dt_run_kernel "$o" "$@"; else dt_run_uipc "$o" "$@"; fi
	if [ -n "$DT_KEEP" ]; then
		mkdir -p "$DT_KEEP"
		local base
		base=$(echo "$name" | tr -c 'A-Za-z0-9_.-' '_')
		cp "$k" "$DT_KEEP/$base.kernel"
		cp "$o" "$DT_KEEP/$base.$DT_OTHER"
		cp "$o.err" "$DT_KEEP/$base.$DT_OTHER.stderr"
	fi
	local bad=
	if grep -q '^FAIL: \|^\[.*\] FAIL: ' "$k" || [ "$(tail -n 1 "$k")" != "[exit 0]" ]; then
		bad="the scenario failed under the kernel"
	elif ! cmp -s "$k" "$o"; then
		bad="transcripts differ"
	fi
	if [ -z "$bad" ]; then
		echo "ok $DT_N - $name"
		return
	fi
	DT_FAILED=$((DT_FAILED + 1))
	echo "not ok $DT_N - $name"
	{
		echo "$bad (replay: tests/diff/difftest ${*#"$DT_ROOT/"})"
		local lines=40
		[ "${UIPC_DIFF_VERBOSE:-0}" = 1 ] && lines=100000
		diff -u --label kernel --label "$DT_OTHER" "$k" "$o" | tail -n +3 | head -n "$lines"
		if [ -s "$k.err" ]; then echo "--- kernel stderr:"; head -n 10 "$k.err"; fi
		if [ -s "$o.err" ]; then echo "--- $DT_OTHER stderr:"; head -n 10 "$o.err"; fi
	} | dt_diag
}

# dt_cases PROG: the case names of a scenario program.
dt_list() {
	"$DT_BIN/$1" --list
}

# dt_run_programs "PROG..." - the body of a tests/diff-*.t: every case of
# every scenario program, kernel vs uipc, as TAP; returns non-zero if any
# case failed.  (A program that is not built is reported as a failure.)
dt_run_programs() {
	local p c t todo=()
	for p in $1; do
		if [ -x "$DT_BIN/$p" ]; then
			for c in $(dt_list "$p"); do todo+=("$p $c"); done
		else
			todo+=("$p")
		fi
	done
	echo "1..${#todo[@]}"
	for t in "${todo[@]}"; do
		set -- $t
		dt_case "$t" "$DT_BIN/$1" ${2:+"$2"}
	done
	[ "$DT_FAILED" = 0 ]
}

# dt_run_root_and_user PROG USER - the body of a tests/diff-*.t whose
# scenarios the kernel allows root only (unshare, setns): every case of
# PROG with the uipc side as root, then again as the ordinary user USER
# (made here with useradd, removed at the end), who must get the kernel
# root's transcript.  The user's run also fails a case that leaves an
# anonymous namespace's file in its UIPC_DIR.
dt_run_root_and_user() {
	local prog=$1 c cases n
	DT_NS_USER=$2
	useradd -M -N -s /usr/sbin/nologin "$DT_NS_USER" ||
		{ echo "1..1"; echo "not ok 1 - useradd failed"; exit 1; }
	trap 'userdel "$DT_NS_USER" 2>/dev/null; dt_cleanup' EXIT
	chmod 755 "$DT_WORK" && chmod 644 "$DT_LIB_RUN"
	cases=$(dt_list "$prog")
	n=$(echo $cases | wc -w)
	echo "1..$((2 * n))"
	for c in $cases; do dt_case "$prog $c (root)" "$DT_BIN/$prog" "$c"; done
	dt_run_uipc() { dt_run_uipc_as_user "$@"; }
	for c in $cases; do dt_case "$prog $c (user $DT_NS_USER)" "$DT_BIN/$prog" "$c"; done
	[ "$DT_FAILED" = 0 ]
}

# dt_run_uipc_as_user OUT CMD...: dt_run_uipc as $DT_NS_USER
dt_run_uipc_as_user() {
	local out=$1; shift
	local rc=0 left
	DT_UDIR=$(mktemp -d /dev/shm/uipc-diff.XXXXXX)
	chown "$DT_NS_USER" "$DT_UDIR"
	env UIPC_DIFF_MODE=uipc timeout -k 5 "$DT_RUN_TIMEOUT" \
		setpriv --reuid="$DT_NS_USER" --regid=nogroup --clear-groups --inh-caps=-all \
		env UIPC_DIR="$DT_UDIR" UIPC_NS=diff LD_PRELOAD="${UIPC_TEST_PRELOAD:+$UIPC_TEST_PRELOAD:}$DT_LIB_RUN" "$@" \
		>"$out" 2>"$out.err" </dev/null || rc=$?
	left=$(ls -A "$DT_UDIR" | grep -e '-anon-')
	rm -rf "$DT_UDIR"
	DT_UDIR=
	dt_status_line "$rc" >>"$out"
	[ -z "$left" ] || echo "left in UIPC_DIR: $left" >>"$out"
}
