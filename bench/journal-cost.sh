#!/bin/bash
# bench/journal-cost.sh - what crash safety (the undo journal) costs uipc's
# locked paths: build/bench/locked_paths run with the normal library and
# with the no-journal build (build/nojournal/libuipc.so, -DUIPC_BENCH_NO_JOURNAL:
# for measurement only), alternating (the order flips every repetition), REPS
# times each; the kernel's figures (unshare --ipc) for context.  Prints per
# operation the median ns with and without the journal, min-max over the
# repetitions, the slowdown of the medians and the min-max of the paired
# slowdowns (each repetition's two adjacent runs), against issue 5's target:
# under 25% on the locked paths, none on the lock-free ones.
#   make bench-journal [JOURNAL_ARGS="--reps 7"]
# Options: --bindir DIR (build/bench), --lib PATH (build/libuipc.so),
# --nojournal PATH (build/nojournal/libuipc.so), --json PATH
# (build/bench/journal-cost.json), --logs DIR (build/bench/logs), --reps N
# (5), --kernel-reps N (3; 0: no kernel column), --quick (BENCH_SCALE=0.2,
# 3 repetitions, 1 kernel run), --ops "OP ..." (locked_paths's names).
top=$(cd "$(dirname "$0")/.." && pwd)
bindir=$top/build/bench
lib=$top/build/libuipc.so
nojournal=$top/build/nojournal/libuipc.so
json=$top/build/bench/journal-cost.json
logs=$top/build/bench/logs
reps=5 kreps=3 ops=
while [ $# -gt 0 ]; do
	case $1 in
	--bindir) bindir=$2; shift ;;
	--lib) lib=$2; shift ;;
	--nojournal) nojournal=$2; shift ;;
	--json) json=$2; shift ;;
	--logs) logs=$2; shift ;;
	--reps) reps=$2; shift ;;
	--kernel-reps) kreps=$2; shift ;;
	--quick) export BENCH_SCALE=0.2; reps=3 kreps=1 ;;
	--ops) ops=$2; shift ;;
	*) echo "usage: $0 [--bindir DIR] [--lib PATH] [--nojournal PATH] [--json PATH] [--logs DIR] [--reps N] [--kernel-reps N] [--quick] [--ops \"OP ...\"]" >&2
	   exit 2 ;;
	esac
	shift
done
prog=$bindir/locked_paths
for f in "$prog" "$lib" "$nojournal"; do
	if [ ! -e "$f" ]; then
		echo "journal-cost: $f is missing (make bench-journal builds it)" >&2
		exit 1
	fi
done
lib=$(realpath "$lib") nojournal=$(realpath "$nojournal")
mkdir -p "$logs" "$(dirname "$json")"
raw=$(mktemp /tmp/journal-cost.XXXXXX)
trap 'rm -f "$raw"' EXIT

# one VARIANT REP: appends "VARIANT REP OP NS" lines to $raw
one() {
	local v=$1 r=$2 log=$logs/journal-cost-$1-$2.log dir rc
	case $v in
	kernel)
		timeout 300 unshare --ipc -- "$prog" $ops >"$log" 2>&1
		rc=$? ;;
	*)
		dir=$(mktemp -d /dev/shm/uipc-bench-jcost.XXXXXX)
		timeout 300 env UIPC_DIR="$dir" UIPC_NS=bench BENCH_SIDE=uipc \
			LD_PRELOAD="$([ "$v" = journal ] && echo "$lib" || echo "$nojournal")" \
			"$prog" $ops >"$log" 2>&1
		rc=$?
		rm -rf "$dir" ;;
	esac
	if [ "$rc" != 0 ]; then
		echo "journal-cost: $v run $r failed (exit $rc), see $log" >&2
		return
	fi
	awk -v v="$v" -v r="$r" '$1 ~ /\.ns$/ { sub(/\.ns$/, "", $1); print v, r, $1, $2 }' \
		"$log" >>"$raw"
}

for r in $(seq "$reps"); do
	if [ $((r % 2)) = 1 ]; then one journal "$r"; one nojournal "$r"
	else one nojournal "$r"; one journal "$r"; fi
	[ "$r" -le "$kreps" ] && one kernel "$r"
done

awk -v reps="$reps" -v json="$json" '
function median(a, n,   i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function nz(x) { return x == "" ? "null" : x }
# statistics of the values of KEY: median, min, max into m[], lo[], hi[]
function stats(key, vals,   n, a, i, k) {
	n = split(vals, a, " ")
	if (n == 0) { m[key] = lo[key] = hi[key] = ""; return }
	for (i = 1; i <= n; i++) a[i] += 0
	m[key] = median(a, n); lo[key] = a[1]; hi[key] = a[n]
}
{
	if (!($3 in seen)) { seen[$3] = 1; order[++nops] = $3 }
	v[$1, $3] = v[$1, $3] " " $4
	val[$1, $2, $3] = $4
}
END {
	lockfree["sem_fast"] = 1; lockfree["msg_small"] = 1
	printf "\nwhat the undo journal costs, ns per operation: median of %d runs per variant (min-max), alternating\n", reps
	printf "%-11s %-9s %20s %20s %9s %15s %10s  %s\n", "operation", "path", "with journal", "without", "slowdown", "paired min-max", "kernel", "issue 5 target"
	printf "[" >json
	for (i = 1; i <= nops; i++) {
		o = order[i]
		stats("j", v["journal", o]); stats("n", v["nojournal", o]); stats("k", v["kernel", o])
		ps = ""
		for (r = 1; r <= reps; r++)
			if (((("journal", r, o) in val)) && ((("nojournal", r, o) in val)))
				ps = ps " " (val["journal", r, o] / val["nojournal", r, o] - 1) * 100
		stats("p", ps)
		path = (o in lockfree) ? "lock-free" : "locked"
		slow = (m["j"] != "" && m["n"] != "" && m["n"] > 0) ? (m["j"] / m["n"] - 1) * 100 : ""
		if (slow == "") verdict = "no figure"
		else if (path == "locked") verdict = slow < 25 ? "< 25%: met" : "< 25%: MISSED"
		else verdict = (slow < 5 && slow > -5) ? "none: met (within noise)" : "none: check"
		printf "%-11s %-9s %8.0f (%4.0f-%4.0f) %8.0f (%4.0f-%4.0f) %8s %15s %10s  %s\n", o, path,
			m["j"], lo["j"], hi["j"], m["n"], lo["n"], hi["n"],
			slow == "" ? "-" : sprintf("%+.0f%%", slow),
			m["p"] == "" ? "-" : sprintf("%+.0f..%+.0f%%", lo["p"], hi["p"]),
			m["k"] == "" ? "-" : sprintf("%.0f", m["k"]), verdict
		printf("%s\n  {\"op\": \"%s\", \"path\": \"%s\", \"journal_ns\": %s, \"journal_min\": %s, \"journal_max\": %s, ",
		       i > 1 ? "," : "", o, path, nz(m["j"]), nz(lo["j"]), nz(hi["j"])) >json
		printf("\"nojournal_ns\": %s, \"nojournal_min\": %s, \"nojournal_max\": %s, ",
		       nz(m["n"]), nz(lo["n"]), nz(hi["n"])) >json
		printf("\"slowdown_pct\": %s, \"paired_min_pct\": %s, \"paired_max_pct\": %s, \"kernel_ns\": %s}",
		       nz(slow), nz(lo["p"]), nz(hi["p"]), nz(m["k"])) >json
	}
	printf "\n]\n" >json
}' "$raw"
echo "(JSON: $json; the output of every run: $logs/journal-cost-*.log)"
