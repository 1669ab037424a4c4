#!/bin/bash
# tests/unit-aio-spin.t - the ring thread's spin for new requests ends
# (tests/unit/aio_spin.c): O_DIRECT reads at depth 32 read right, then the
# process goes idle, by default, confined to one CPU, and beside busy
# processes.
. "$(dirname "$0")/unit/unit.sh"
unit_setup aio_spin
UIPC_DIR="$dir" UIPC_NS=aiospin LD_PRELOAD="$lib" timeout 300 "$prog"
