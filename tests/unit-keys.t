#!/bin/bash
# tests/unit-keys.t - the key hash (ipc/util.c) under runs of neighbouring
# keys, scattered and negative keys, removals, re-creation and rebuilds, in a
# normal and an extended-id namespace: every key finds its own object, a
# removed key none, and the namespace check stays clean (tests/unit/key_table.c).
top=$(cd "$(dirname "$0")/.." && pwd)
lib=$top/build/libuipc.so
bin=$top/build/tests/unit
if [ ! -f "$lib" ] || [ ! -x "$bin/key_table" ]; then
	echo "1..1"; echo "not ok 1 - $lib or test programs missing: run make test-progs"; exit 1
fi
dir=$(mktemp -d /dev/shm/uipc-keys.XXXXXX)
trap 'rm -rf "$dir"' EXIT
{
	UIPC_DIR=$dir UIPC_NS=keys LD_PRELOAD=$lib "$bin/key_table" 2>&1 | sed 's/^/normal ids\t/'
	UIPC_DIR=$dir UIPC_NS=extkeys UIPC_NS_EXTENDED=1 LD_PRELOAD=$lib "$bin/key_table" 2>&1 |
		sed 's/^/extended ids\t/'
} | awk -F'\t' '
	$2 ~ /^1\.\./ { next }
	$2 ~ /^(not )?ok [0-9]+ - / {
		n++; not = ($2 ~ /^not /); sub(/^(not )?ok [0-9]+ - /, "", $2)
		printf "%sok %d - %s: %s\n", not ? "not " : "", n, $1, $2; bad += not; next
	}
	{ print "# " $1 ": " $2 }
	END { if (n != 26) { n++; bad++; printf "not ok %d - 26 results expected, %d seen\n", n, n - 1 }
	      printf "1..%d\n", n; exit bad > 0 }'
