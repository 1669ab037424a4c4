#!/bin/bash
# tests/unit-crash-aio-threads.t - tests/unit-crash-aio.t with the threads
# backend (UIPC_AIO_BACKEND=threads).
UIPC_AIO_BACKEND=threads exec bash "$(dirname "$0")/unit-crash-aio.t"
