#!/bin/bash
# tests/unit-ns-many.t - what anonymous namespaces cost (tests/unit/ns_many.c):
# an empty one holds at most 64 KiB, also when made anew in place; 10,000 of
# them live at once, held by descriptors of /proc/self/ns/ipc, at most
# 64 KiB each, each with its own objects, all let go when the descriptors
# close.  As root and as a user.
. "$(dirname "$0")/unit/as_both.sh"
as_both ns_many 6 10000
