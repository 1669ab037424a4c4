#!/bin/bash
# bench/plots.sh - the seeds' curves as SVG, kernel and uipc on the same axes,
# from the figures `make bench` just wrote (build/bench/results.json and, when
# seed 001's fio job ran, build/bench/fio-aio.json).  Run by `make bench`
# after the driver and the fio rows; alone: `make bench-plots`.
#   bench/plots.sh [--results FILE] [--fio FILE] [--out DIR]
# Needs gnuplot (Debian: gnuplot-nox) and python3 (to read the JSON).  Writes
#   seed000-keys.svg     semget lookup and create ns per call vs keys (log-log)
#   seed002-cyclic.svg   no-op semop ns vs idx distance of the two ids
#   seed004-threads.svg  semop ops/s vs threads
#   seed003-unshare.svg  unshare(CLONE_NEWIPC) namespaces per second
#   seed001-aio.svg      us per I/O vs AIO contexts (fio numjobs), when
#                        fio-aio.json exists
# A figure a side could not make (e.g. the kernel past 32k ids without
# ipcmni_extend) is left out of that side's curve, and the title says so.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
results=$top/build/bench/results.json
fio=$top/build/bench/fio-aio.json
out=$top/docs/plots
while [ $# -gt 0 ]; do
	case $1 in
	--results) results=$2; shift ;;
	--fio) fio=$2; shift ;;
	--out) out=$2; shift ;;
	*) echo "usage: $0 [--results FILE] [--fio FILE] [--out DIR]" >&2; exit 2 ;;
	esac
	shift
done
command -v gnuplot >/dev/null || { echo "plots: gnuplot is not installed (apt-get install gnuplot-nox): no plots" >&2; exit 1; }
[ -r "$results" ] || { echo "plots: no $results (run make bench first)" >&2; exit 1; }
mkdir -p "$out"
dat=$(mktemp -d)
trap 'rm -rf "$dat"' EXIT

# One data file per curve: "x kernel uipc" lines ("NaN" where a side has no
# figure), plus meta.txt with the machine line for the plots' footers.
python3 - "$results" "$fio" "$dat" <<'EOF'
import json, os, re, sys
res = json.load(open(sys.argv[1]))
fio, dat = sys.argv[2], sys.argv[3]
runs = res["runs"]

def val(run, side, key):
    r = runs.get(run, {}).get(side, {})
    v = r.get("values", {}).get(key) if r.get("state") == "ok" else None
    return "NaN" if v is None else repr(float(v))

def series(path, prefix, key, xform=lambda s: s):
    pts = []
    for name in runs:
        m = re.fullmatch(prefix + r"(\d+)", name)
        if m:
            pts.append((int(m.group(1)), name))
    with open(os.path.join(dat, path), "w") as f:
        for x, name in sorted(pts):
            f.write("%d %s %s\n" % (x, val(name, "kernel", key), val(name, "uipc", key)))

# seed 000: standard ids (keys-N) and extended ids (ext-keys-N) are one
# curve per side: uipc's extended runs continue past 32k where the kernel
# without ipcmni_extend stops.
for key, path in (("lookup_ns_per_call", "keys-lookup.dat"),
                  ("create_ns_per_call", "keys-create.dat")):
    pts = {}
    for name in runs:
        m = re.fullmatch(r"(ext-)?keys-(\d+)", name)
        if m:
            x = int(m.group(2))
            k, u = val(name, "kernel", key), val(name, "uipc", key)
            old = pts.get(x, ("NaN", "NaN"))
            # a standard-id figure wins over the extended one at the same x
            pts[x] = (old[0] if old[0] != "NaN" else k,
                      old[1] if old[1] != "NaN" and not m.group(1) else
                      (u if u != "NaN" else old[1]))
    with open(os.path.join(dat, path), "w") as f:
        for x in sorted(pts):
            f.write("%d %s %s\n" % (x, pts[x][0], pts[x][1]))
series("cyclic.dat", "cyclic-", "ns_per_op")
series("threads.dat", "threads-", "ops_per_s")
with open(os.path.join(dat, "unshare.dat"), "w") as f:
    k, u = val("ns-unshare", "kernel", "unshare_us"), val("ns-unshare", "uipc", "unshare_us")
    rate = lambda s: "NaN" if s == "NaN" else repr(1e6 / float(s))
    # third column: the bar's colour, the other plots' kernel grey, uipc blue
    f.write('"kernel" %s 0x777777\n"uipc" %s 0x1f5fbf\n' % (rate(k), rate(u)))
if os.path.exists(fio):
    rows = json.load(open(fio))
    with open(os.path.join(dat, "aio.dat"), "w") as f:
        for r in sorted(rows, key=lambda r: int(re.search(r"numjobs=(\d+)", r["name"]).group(1))):
            n = int(re.search(r"numjobs=(\d+)", r["name"]).group(1))
            us = lambda iops: "NaN" if not iops else repr(1e6 / float(iops))
            f.write("%d %s %s\n" % (n, us(r["kernel_iops"]), us(r["uipc_iops"])))
m = res["meta"]
with open(os.path.join(dat, "meta.txt"), "w") as f:
    f.write("%s, Linux %s, %d CPUs, %s" % (m.get("cpu_model", "CPU ?"), m["kernel_release"],
                                          m["cpus"], m["time"]))
EOF
[ -s "$dat/meta.txt" ] || { echo "plots: cannot read $results" >&2; exit 1; }
meta=$(cat "$dat/meta.txt")

# common look: SVG, kernel in grey squares, uipc in blue circles
plot() {	# plot NAME.svg GNUPLOT-COMMANDS
	local data=${2#*plot \'} svg=$dat/$1
	data=${data%%\'*}
	# the first data file of the plot command: any figure on either side?
	if ! awk '{ for (i = 2; i <= 3 && i <= NF; i++) if ($i != "NaN") f = 1 } END { exit !f }' "$data"; then
		echo "plots: no figures for $1 (its runs did not run): kept the old one" >&2
		return
	fi
	gnuplot <<EOF && mv "$svg" "$out/$1"
set terminal svg size 800,440 dynamic enhanced font 'sans,12' background '#ffffff'
set output '$svg'
set grid
set key outside right top
set label 100 "$meta" noenhanced at screen 0.99, 0.02 right font 'sans,9' tc rgb '#666666'
set bmargin 5
set style line 1 lc rgb '#777777' lw 2 pt 5 ps 0.9
set style line 2 lc rgb '#1f5fbf' lw 2 pt 7 ps 0.9
$2
EOF
}

plot seed000-keys.svg "
set title \"seed 000: semget per call vs keys in the namespace\\n(kernel: up to 31,900 keys, booted without ipcmni\\\\_extend; uipc: extended ids past 32k)\"
set format x '10^{%L}'
set format y '10^{%L}'
set logscale xy
set xlabel 'keys (semaphore arrays) in the namespace'
set ylabel 'ns per semget call'
set xrange [0.7:2e6]
plot '$dat/keys-lookup.dat' u 1:2 w lp ls 1 t 'kernel, lookup', \
     '' u 1:3 w lp ls 2 t 'uipc, lookup', \
     '$dat/keys-create.dat' u 1:2 w lp ls 1 dt 2 pt 4 t 'kernel, create', \
     '' u 1:3 w lp ls 2 dt 2 pt 6 t 'uipc, create'"

plot seed002-cyclic.svg "
set title 'seed 002: no-op semop alternating between two ids, vs their idx distance'
set logscale x
set xlabel 'idx distance between the two ids'
set ylabel 'ns per semop'
set yrange [0:*]
set xrange [0.7:50000]
plot '$dat/cyclic.dat' u 1:2 w lp ls 1 t 'kernel', '' u 1:3 w lp ls 2 t 'uipc'"

plot seed004-threads.svg "
set title 'seed 004: threads of one process, semop +1/-1 on their own semaphore of one array'
set xlabel 'threads (2 CPUs)'
set ylabel 'million semops per second, all threads'
set yrange [0:*]
set xrange [0.5:*]
plot '$dat/threads.dat' u 1:(\$2/1e6) w lp ls 1 t 'kernel', '' u 1:(\$3/1e6) w lp ls 2 t 'uipc'"

plot seed003-unshare.svg "
set title 'seed 003: unshare(CLONE\\_NEWIPC) 1000 times in one process'
set ylabel 'namespaces per second'
set style fill solid 0.8
set boxwidth 0.5
set yrange [0:*]
set xrange [-0.7:1.7]
unset key
plot '$dat/unshare.dat' u 0:2:3:xtic(1) w boxes lc rgb variable"

if [ -s "$dat/aio.dat" ]; then
	plot seed001-aio.svg "
set title 'seed 001: fio libaio randrw 1 KiB, iodepth 1: time per I/O vs AIO contexts'
set xlabel 'AIO contexts (fio threads, numjobs)'
set ylabel 'us per I/O (all threads)'
set yrange [0:*]
set xrange [0:*]
plot '$dat/aio.dat' u 1:2 w lp ls 1 t 'kernel', '' u 1:3 w lp ls 2 t 'uipc'"
else
	echo "plots: no $fio (seed 001's fio job did not run): no seed001-aio.svg" >&2
fi
echo "plots: $(ls "$out"/*.svg | tr '\n' ' ')"
