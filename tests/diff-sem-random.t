#!/bin/bash
# tests/diff-sem-random.t - randomized semaphore sequences (tests/diff/
# sem_random.c), kernel vs uipc: for each seed, `run` (non-blocking calls)
# and `wake` (children sleeping in semop, woken/interrupted/killed at
# random).  Runs the fixed seeds 1 2 3 and three seeds drawn at random;
# each seed's test lines are preceded by "# seed N".
# Replay: UIPC_DIFF_SEED="N [M...]" prove -v tests/diff-sem-random.t
# Length: UIPC_DIFF_STEPS (default 400) and UIPC_DIFF_WAKE_STEPS (60).  UIPC_DIFF_SELFTEST=1: kernel twice.
. "$(dirname "$0")/diff/lib.sh"
dt_require_lib

steps=${UIPC_DIFF_STEPS:-400}
wsteps=${UIPC_DIFF_WAKE_STEPS:-60}
if [ -n "${UIPC_DIFF_SEED:-}" ]; then
	seeds=$UIPC_DIFF_SEED
else
	seeds="1 2 3"
	for _ in 1 2 3; do
		seeds="$seeds $(( (RANDOM << 15 | RANDOM) + 4 ))"
	done
fi
set -- $seeds
echo "1..$(($# * 2))"
for s in $seeds; do
	echo "# seed $s"
	dt_case "sem_random run seed $s" "$DT_BIN/sem_random" run "$s" "$steps"
	dt_case "sem_random wake seed $s" "$DT_BIN/sem_random" wake "$s" "$wsteps"
done
[ "$DT_FAILED" = 0 ]
