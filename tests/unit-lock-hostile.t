#!/bin/bash
# tests/unit-lock-hostile.t - no value another member can write is ever
# followed as a pointer, by uipc, glibc or the kernel, and the arena holds
# no process address (tests/unit/lock_hostile.c: victims' robust lists,
# a scan of the arena, a hostile process planting addresses of the victims'
# memory in every lock and registry word it can reach while victims call,
# fork, end threads and are killed).
. "$(dirname "$0")/unit/unit.sh"
unit_setup lock_hostile
UIPC_DIR=$dir UIPC_NS=hostile LD_PRELOAD=$lib timeout 300 "$prog"
