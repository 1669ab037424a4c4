#!/bin/bash
# tests/diff-ns.t - unshare(CLONE_NEWIPC) against the kernel's
# (tests/diff/ns_basic.c, driver tests/diff/lib.sh): the kernel side as root
# in a private namespace, the uipc side as root and again as an ordinary
# user, for whom the kernel would refuse the call.
. "$(dirname "$0")/diff/lib.sh"
dt_require_lib
dt_run_root_and_user ns_basic uipcns$$
