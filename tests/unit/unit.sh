# tests/unit/unit.sh - what the unit-*.t scripts share.  Source it, then
# call unit_setup PROG: it sets top, prog (build/tests/unit/PROG), lib and
# dir (a fresh directory under /dev/shm for the test's namespace, removed
# at exit), or prints a failing TAP plan and exits when something is not
# built.
unit_setup() {
	top=$(cd "$(dirname "$0")/.." && pwd)
	prog=$top/build/tests/unit/$1
	lib=$top/build/libuipc.so
	if [ ! -x "$prog" ] || [ ! -f "$lib" ]; then
		echo "1..1"
		echo "not ok 1 - $prog or $lib missing: run make test-progs"
		exit 1
	fi
	dir=$(mktemp -d "/dev/shm/uipc-$1.XXXXXX")
	trap 'rm -rf "$dir"' EXIT
}

# unit_retap [LABEL] < TAP: the test lines of one run of a program,
# renumbered after those already printed (the count is in total, which
# starts at 0) and, with LABEL, named "[LABEL] "; for scripts that run a
# program several ways and print one plan at the end ("1..$total")
total=0
unit_retap() {
	local line
	while read -r line; do
		case $line in
		"ok "*|"not ok "*)
			total=$((total+1))
			echo "$line" | sed -E "s/^(not ok|ok) [0-9]+ (- )?/\1 $total \2${1:+[$1] }/" ;;
		esac
	done
}
