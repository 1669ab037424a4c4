#!/bin/bash
# tests/diff-aio-threads.t - tests/diff-aio.t's scenarios, uipc with the
# threads backend (UIPC_AIO_BACKEND=threads: the pool of worker threads
# used where io_uring is refused).
UIPC_AIO_BACKEND=threads exec bash "$(dirname "$0")/diff-aio.t"
