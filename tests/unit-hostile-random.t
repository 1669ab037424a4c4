#!/bin/bash
# tests/unit-hostile-random.t - the hostile-member suite (issue 14), random:
# 10,000 rounds in which a member H of a shared namespace damages a few
# fields and raw words of the arena (seeded: tests/unit/hostile.c picks
# them from its catalogue) while a victim V of another uid makes every kind
# of call; each victim must return, never crash or hang, canaries intact.
# Two halves run side by side (seeds S and S+1, a namespace each).  The
# seed is printed; UIPC_HOSTILE_SEED=S replays the run, and
# UIPC_HOSTILE_ROUNDS=N changes its length (per half: N/2).
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/tests/unit/hostile.sh"
hostile_setup

seed=${UIPC_HOSTILE_SEED:-$(( $(date +%s) % 100000 ))}
rounds=${UIPC_HOSTILE_ROUNDS:-10000}
echo "# seed $seed: replay with UIPC_HOSTILE_SEED=$seed"
hostile_ns r1
hostile_ns r2
"$bin/hostile" drive "$D" r1 "$bin/hostile" "$lib" "$VU" "$VG" "$HU" "$HG" random "$seed" \
	$((rounds / 2)) >"$D/r1.tap" 2>/dev/null &
p1=$!
"$bin/hostile" drive "$D" r2 "$bin/hostile" "$lib" "$VU" "$VG" "$HU" "$HG" random $((seed + 1)) \
	$((rounds - rounds / 2)) >"$D/r2.tap" 2>/dev/null &
p2=$!
wait $p1 $p2
n=0 failed=0
for f in "$D/r1.tap" "$D/r2.tap"; do
	while IFS= read -r line; do
		case $line in
		"ok "*|"not ok "*)
			n=$((n+1))
			[[ $line == "not ok"* ]] && failed=$((failed+1))
			echo "${line%% [0-9]* - *} $n - ${line#* - }" ;;
		"1.."*) ;;
		*) echo "$line" ;;
		esac
	done <"$f"
done
if [ $n -lt 2 ]; then
	n=$((n+1)); failed=$((failed+1)); echo "not ok $n - the drivers printed nothing"
fi
echo "1..$n"
[ $failed -eq 0 ]
