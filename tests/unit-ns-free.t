#!/bin/bash
# tests/unit-ns-free.t - the memory of a namespace left by unshare is freed
# (tests/unit/ns_free.c): made anew in place, with its old segment slots
# emptied while a new segment keeps its bytes, or let go through a helper
# when it was shared; the helpers are reaped; many made in place in a row
# keep only the last one's memory, and a thread's slot page mapped again is
# kept across them (one word on its robust list, no mapping more).  As root
# and as a user.
. "$(dirname "$0")/unit/as_both.sh"
as_both ns_free 15
