#!/bin/bash
# tests/diff-aio-auto.t - tests/diff-aio.t's scenarios, uipc with the uring
# backend and UIPC_AIO_SUBMIT=auto (a thread that reaps in io_getevents
# enters its own requests into the io_uring: the path the default, thread,
# leaves untried).  aio_depth raw-quiet-waits is the difference auto is
# documented to have (docs/aio.md, "Not yet, and what differs": a socket's
# timeout and waits made by instruction end in EINTR while the thread's
# requests complete); the default runs it in tests/diff-aio.t.
UIPC_DIFF_SKIP="aio_depth raw-quiet-waits" \
UIPC_DIFF_SKIP_WHY="auto lets completion work end these waits (docs/aio.md); the default passes it" \
UIPC_AIO_BACKEND=uring UIPC_AIO_SUBMIT=auto exec bash "$(dirname "$0")/diff-aio.t"
