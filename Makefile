# uipc - System V IPC in user space.  `make` builds build/libuipc.so and build/uipc.
CC      ?= gcc
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
WARN     = -Wall -Wextra -Werror
BASECFLAGS = -std=gnu11 $(WARN) -D_GNU_SOURCE -Iinclude -pthread
LIBCFLAGS  = $(BASECFLAGS) -Iipc -fPIC -ftls-model=initial-exec
B        = build

LIB_SRCS := $(sort $(wildcard ipc/*.c))
LIB_OBJS := $(LIB_SRCS:ipc/%.c=$(B)/ipc/%.o)
LIB_HDRS := $(wildcard ipc/*.h) include/uipc.h Makefile

all: $(B)/libuipc.so $(B)/uipc

$(B)/ipc/%.o: ipc/%.c $(LIB_HDRS) | $(B)/ipc
	$(CC) $(CFLAGS) $(LIBCFLAGS) -c $< -o $@

$(B)/libuipc.so: $(LIB_OBJS) ipc/exports.map
	$(CC) $(CFLAGS) -shared -pthread -Wl,-z,defs -Wl,--version-script=ipc/exports.map -Wl,-soname,libuipc.so.0 -o $@ $(LIB_OBJS) -ldl

$(B)/ipc:
	mkdir -p $@

# The command, the tests and the benchmarks each keep their rules in a fragment.
include tools/tools.mk
include tests/tests.mk
include bench/bench.mk
include install.mk

clean:
	rm -rf $(B)

.PHONY: all clean test bench
