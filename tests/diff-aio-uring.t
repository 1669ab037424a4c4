#!/bin/bash
# tests/diff-aio-uring.t - tests/diff-aio.t's scenarios, uipc with the
# io_uring backend alone (UIPC_AIO_BACKEND=uring: O_DIRECT too goes to the
# io_uring, entered by uipc's ring thread, where the default gives it to a
# kernel AIO context of uipc's own).
UIPC_AIO_BACKEND=uring exec bash "$(dirname "$0")/diff-aio.t"
