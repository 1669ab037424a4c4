#!/bin/bash
# tests/diff-ns-thread.t - IPC namespaces per thread and attachments made
# before an unshare, against the kernel's (tests/diff/ns_thread.c, driver
# tests/diff/lib.sh): the kernel side as root in a private namespace, the
# uipc side as root and again as an ordinary user, for whom the kernel
# would refuse the calls.
. "$(dirname "$0")/diff/lib.sh"
dt_require_lib
dt_run_root_and_user ns_thread uipcnt$$
