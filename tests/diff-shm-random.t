#!/bin/bash
# tests/diff-shm-random.t - randomized shared memory sequences (tests/diff/
# shm_random.c), kernel vs uipc.  Runs the fixed seeds 1 2 3 and three
# seeds drawn at random; each seed's test line is preceded by "# seed N".
# Replay: UIPC_DIFF_SEED="N [M...]" prove -v tests/diff-shm-random.t
# Length: UIPC_DIFF_STEPS (default 300).  UIPC_DIFF_SELFTEST=1: kernel twice.
. "$(dirname "$0")/diff/lib.sh"
dt_require_lib

steps=${UIPC_DIFF_STEPS:-300}
if [ -n "${UIPC_DIFF_SEED:-}" ]; then
	seeds=$UIPC_DIFF_SEED
else
	seeds="1 2 3"
	for _ in 1 2 3; do
		seeds="$seeds $(( (RANDOM << 15 | RANDOM) + 4 ))"
	done
fi
set -- $seeds
echo "1..$#"
for s in $seeds; do
	echo "# seed $s"
	dt_case "shm_random run seed $s" "$DT_BIN/shm_random" run "$s" "$steps"
done
[ "$DT_FAILED" = 0 ]
