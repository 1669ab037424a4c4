# bench/steal.sh - the host's steal around the repetitions of the scripts
# that run the two sides themselves (stress-ng.sh, fio-aio*.sh; the driver
# does the same in C: bench/runner.c, bench/driver.h).  On a VM the
# hypervisor takes part of the CPUs' time now and then (/proc/stat's
# steal), and whichever side it hits loses: a repetition during which it
# took over STEAL_REDO_PCT from either side is run again, both sides, at
# most STEAL_REDO_MAX times a row (set STEAL_REDONE=0 and STEAL_REDO_MAX
# before each row).  Sourced, not run.

STEAL_REDO_PCT=5
STEAL_REDONE=0 STEAL_REDO_MAX=0

# steal ticks and all ticks so far
steal_ticks() { awk '/^cpu / { print $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }

# the share of the CPUs' time the host took between two steal_ticks, %
steal_pct() { echo "$1 $2" | awk '{ printf "%.1f\n", ($4 > $2) ? 100 * ($3 - $1) / ($4 - $2) : 0 }'; }

# pair_run FN A B ARGS...: PAIR_A=$(FN A ARGS...), PAIR_B=$(FN B ARGS...),
# run again while the host took too much from either and the row's budget
# lasts (a result that is empty or ERROR is kept as it is)
pair_run() {
	local fn=$1 a=$2 b=$3 t0 t1 t2 sa sb
	shift 3
	while :; do
		t0=$(steal_ticks); PAIR_A=$("$fn" "$a" "$@")
		t1=$(steal_ticks); PAIR_B=$("$fn" "$b" "$@"); t2=$(steal_ticks)
		sa=$(steal_pct "$t0" "$t1") sb=$(steal_pct "$t1" "$t2")
		case "$PAIR_A$PAIR_B" in ''|*ERROR*) return 0 ;; esac
		if [ "$STEAL_REDONE" -lt "$STEAL_REDO_MAX" ] &&
		   awk -v x="$sa" -v y="$sb" -v m="$STEAL_REDO_PCT" 'BEGIN { exit !(x > m || y > m) }'; then
			STEAL_REDONE=$((STEAL_REDONE + 1))
			echo "$(basename "$0"): a repetition run again: the host took ${sa}% ($a) / ${sb}% ($b) of the CPUs' time" >&2
			continue
		fi
		return 0
	done
}
