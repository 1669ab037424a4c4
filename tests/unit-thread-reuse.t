#!/bin/bash
# tests/unit-thread-reuse.t - threads that come and go keep their slot's
# journal chunks (tests/unit/thread_slot_reuse.c), in a fresh namespace
# removed afterwards.
. "$(dirname "$0")/unit/unit.sh"
unit_setup thread_slot_reuse
UIPC_DIR=$dir UIPC_NS=reuse LD_PRELOAD=$lib timeout 120 "$prog"
