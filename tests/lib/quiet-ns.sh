# tests/lib/quiet-ns.sh - sourced by .t files: run_quiet_ns CMD... runs a
# TAP program and adds one test to its plan: no process said on stderr that
# the namespace is inconsistent (ns_corrupt).  A race that a workload makes
# on purpose (a segment removed while another process attaches it) is not
# corruption; the program's own checks may tolerate the errno it gives, so
# the message is the only trace of a wrong diagnosis.  Stderr is passed on.
# Returns the program's status, or 1 if the added test failed.
run_quiet_ns() {
	local out err st n said
	out=$(mktemp) err=$(mktemp)
	"$@" >"$out" 2>"$err"
	st=$?
	cat "$err" >&2
	n=$(sed -n 's/^1\.\.\([0-9][0-9]*\).*/\1/p' "$out" | head -n 1)
	said=$(grep -c "is inconsistent" "$err")
	if [ -z "$n" ]; then
		cat "$out"
		rm -f "$out" "$err"
		return 1
	fi
	sed "s/^1\.\.$n\$/1..$((n + 1))/" "$out"
	if [ "$said" -eq 0 ]; then
		echo "ok $((n + 1)) - no process said the namespace is inconsistent"
	else
		echo "not ok $((n + 1)) - $said processes said the namespace is inconsistent: $(grep -m1 "is inconsistent" "$err")"
		st=1
	fi
	rm -f "$out" "$err"
	return $st
}
