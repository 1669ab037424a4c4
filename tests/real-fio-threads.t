#!/bin/bash
# tests/real-fio-threads.t - tests/real-fio.t with the threads backend
# (UIPC_AIO_BACKEND=threads).
UIPC_AIO_BACKEND=threads exec bash "$(dirname "$0")/real-fio.t"
