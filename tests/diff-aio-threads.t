#!/bin/bash
# tests/diff-aio-threads.t - tests/diff-aio.t's scenarios, uipc with the
# threads backend (UIPC_AIO_BACKEND=threads: the pool of worker threads
# used where io_uring is refused).  aio_depth no-descriptors is the
# difference the threads backend is documented to have (docs/aio.md, "Not
# yet, and what differs": a worker needs a descriptor of the file, a dup
# in the program's table, where io_uring's table of files holds it).
UIPC_DIFF_SKIP="aio_depth no-descriptors" \
UIPC_DIFF_SKIP_WHY="the threads backend holds a request's file by a dup (docs/aio.md); uring passes it" \
UIPC_AIO_BACKEND=threads exec bash "$(dirname "$0")/diff-aio.t"
