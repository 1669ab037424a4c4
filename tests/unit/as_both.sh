# tests/unit/as_both.sh - sourced by tests/unit-ns-*.t: run a TAP-printing
# test program under uipc as root and again as an ordinary user made with
# useradd (removed at the end), each in a fresh UIPC_DIR that must be empty
# afterwards.  Usage:
#   . tests/unit/as_both.sh; as_both PROG NTESTS [ARGS...]
# prints one plan for both runs: the program's lines, labelled "root:" or
# "user:", renumbered, plus one "nothing left in UIPC_DIR" line per run;
# a run that prints fewer than NTESTS lines fails the missing ones.
AB_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
AB_LIB=${UIPC_TEST_LIB:-$AB_TOP/build/libuipc.so}
# UIPC_TEST_LIB, and UIPC_TEST_PRELOAD before it: another library to test
# (the sanitizer build and its runtime, tests/unit-sanitize.t)
AB_PRE=${UIPC_TEST_PRELOAD:+$UIPC_TEST_PRELOAD:}
AB_N=0
AB_FAILED=0

ab_line() {	# ab_line OK|"not ok" TEXT
	AB_N=$((AB_N + 1))
	[ "$1" = ok ] || AB_FAILED=$((AB_FAILED + 1))
	echo "$1 $AB_N - $2"
}

as_both() {
	local prog=$AB_TOP/build/tests/unit/$1 ntests=$2 who dir out got line left
	shift 2
	echo "1..$((2 * (ntests + 1)))"
	if [ ! -f "$AB_LIB" ] || [ ! -x "$prog" ]; then
		echo "not ok 1 - $AB_LIB or $prog missing: run make test-progs"; exit 1
	fi
	AB_USER=uipcab$$
	useradd -M -N -s /usr/sbin/nologin "$AB_USER" || { echo "not ok 1 - useradd failed"; exit 1; }
	AB_WORK=$(mktemp -d /tmp/uipc-ab.XXXXXX)
	AB_DIR=
	trap '[ -n "$AB_DIR" ] && rm -rf "$AB_DIR"; rm -rf "$AB_WORK"; userdel "$AB_USER" 2>/dev/null' EXIT
	chmod 755 "$AB_WORK"
	cp "$AB_LIB" "$prog" "$AB_WORK/" && chmod 755 "$AB_WORK/$(basename "$prog")" &&
		chmod 644 "$AB_WORK/libuipc.so"
	for who in root user; do
		AB_DIR=$(mktemp -d /dev/shm/uipc-ab.XXXXXX)
		# timeout outside the preload: a preloaded parent that forks makes
		# its namespace file
		if [ "$who" = root ]; then
			out=$(timeout 300 env UIPC_DIR="$AB_DIR" LD_PRELOAD="$AB_PRE$AB_WORK/libuipc.so" \
				"$AB_WORK/$(basename "$prog")" "$@" 2>&1)
		else
			chown "$AB_USER" "$AB_DIR"
			out=$(timeout 300 setpriv --reuid="$AB_USER" --regid=nogroup --clear-groups \
				--inh-caps=-all env UIPC_DIR="$AB_DIR" LD_PRELOAD="$AB_PRE$AB_WORK/libuipc.so" \
				"$AB_WORK/$(basename "$prog")" "$@" 2>&1)
		fi
		got=0
		while IFS= read -r line; do
			case $line in
			"ok "*) got=$((got + 1)); ab_line ok "$who: ${line#* - }" ;;
			"not ok "*) got=$((got + 1)); ab_line "not ok" "$who: ${line#* - }" ;;
			*) echo "# $line" ;;
			esac
		done <<<"$out"
		while [ "$got" -lt "$ntests" ]; do got=$((got + 1)); ab_line "not ok" "$who: (not run)"; done
		left=$(ls -A "$AB_DIR")
		if [ -z "$left" ]; then ab_line ok "$who: nothing left in UIPC_DIR"
		else ab_line "not ok" "$who: left in UIPC_DIR: $left"; fi
		rm -rf "$AB_DIR"; AB_DIR=
	done
	[ "$AB_FAILED" = 0 ]
}
