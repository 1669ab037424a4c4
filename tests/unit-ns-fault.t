#!/bin/bash
# tests/unit-ns-fault.t - a namespace's memfd or file truncated under its
# members gives EIDRM, not SIGBUS, however they came into it: unshare,
# many unshares, a namespace made anew in place, setns into an anonymous
# and a named one, a clone child; and opening /proc/PID/ns/ipc of such a
# member does not kill the opener (tests/unit/ns_fault.c).  As root and as
# a user.
. "$(dirname "$0")/unit/as_both.sh"
as_both ns_fault 9
