# uipc - System V IPC in user space.  `make` builds build/libuipc.so and build/uipc.
CC      ?= gcc
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
WARN     = -Wall -Wextra -Werror
BASECFLAGS = -std=gnu11 $(WARN) -D_GNU_SOURCE -Iinclude -pthread
LIBCFLAGS  = $(BASECFLAGS) -I. -fPIC -ftls-model=initial-exec
B        = build

# The library, by layer (each folder's header says what it owns and what it
# may call): entry -> ipc (and aio) -> core -> libc.  tests/unit-layers.t
# checks the objects keep to that.  Link order is core, ipc, aio, entry:
# constructors and the CORE_HOOKS tables run in that order.
LIB_LAYERS := core ipc aio entry
LIB_SRCS := $(foreach d,$(LIB_LAYERS),$(sort $(wildcard $(d)/*.c)))
LIB_OBJS := $(LIB_SRCS:%.c=$(B)/%.o)
LIB_HDRS := $(foreach d,$(LIB_LAYERS),$(wildcard $(d)/*.h)) include/uipc.h Makefile
LIB_MAP  := entry/exports.map
# Bound at load (-z now, with full RELRO): ld.so binds the library's ~130
# libc symbols in one batch for about 0.1 us each (10 us an exec here),
# where lazy binding costs 1-2 us for each at its first call, inside the
# first call of every IPC path (9 of a new process's first semget create's
# 29 us, issue 15).
LIB_LDFLAGS := -shared -pthread -Wl,-z,defs -Wl,-z,relro -Wl,-z,now -Wl,--version-script=$(LIB_MAP)

all: $(B)/libuipc.so $(B)/uipc

define lib_layer_rule
$(B)/$(1)/%.o: $(1)/%.c $$(LIB_HDRS) | $(B)/$(1)
	$$(CC) $$(CFLAGS) $$(LIBCFLAGS) -c $$< -o $$@

$(B)/$(1):
	mkdir -p $$@
endef
$(foreach d,$(LIB_LAYERS),$(eval $(call lib_layer_rule,$(d))))

$(B)/libuipc.so: $(LIB_OBJS) $(LIB_MAP)
	$(CC) $(CFLAGS) $(LIB_LDFLAGS) -Wl,-soname,libuipc.so.0 -o $@ $(LIB_OBJS) -ldl

# The command, the tests and the benchmarks each keep their rules in a fragment.
include tools/tools.mk
include tests/tests.mk
include bench/bench.mk
include install.mk

# The library built with AddressSanitizer and UndefinedBehaviorSanitizer
# (every undefined behaviour aborts) into build-asan/: tests/unit-sanitize.t
# runs the differential suites and the hostile-member suite with it,
# preloaded after the ASan runtime.
SANFLAGS = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
sanitize:
	$(MAKE) B=build-asan CFLAGS="$(SANFLAGS)" build-asan/libuipc.so

clean:
	rm -rf $(B) build-asan

.PHONY: all clean test bench sanitize
