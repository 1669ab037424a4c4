# bench/bench.mk - benchmarks and `make bench`.
#
# `make bench` builds the library (all), the benchmark programs and the driver
# into build/bench/, then runs every benchmark against the kernel and against
# uipc and prints the table (JSON: build/bench/results.json), then the stress-ng
# rows (bench/stress-ng.sh).
#   make bench BENCH_ARGS=--quick           short runs, one repetition
#   make bench-progs                        build only
#   make bench-stress-ng                    only the stress-ng rows (bench/stress-ng.sh,
#                                           JSON: build/bench/stress-ng.json)
#   build/bench/driver --kernel-only        kernel column only (no library needed)
#   make bench-fio                          only seed 001's fio row: native AIO, kernel
#                                           vs uipc (bench/fio-aio.sh, JSON:
#                                           build/bench/fio-aio.json)
#   make bench-fio-disk                     issue 17's disk rows: fio libaio randread
#                                           4k iodepth=32 buffered and direct=1
#                                           (bench/fio-aio-disk.sh, JSON:
#                                           build/bench/fio-aio-disk.json)
#   make bench-fio-contexts                 seed 001's curve: CPU time per AIO
#                                           request against 1..512 contexts
#                                           (bench/fio-aio-contexts.sh, JSON:
#                                           build/bench/fio-aio-contexts.json, plot:
#                                           docs/plots/aio-contexts.svg, gnuplot)
#   make bench-journal                      what the undo journal costs the locked
#                                           paths (bench/journal-cost.sh)
#   make bench-plots                        only the SVG plots of the seeds' curves
#                                           from the last run's JSON (bench/plots.sh,
#                                           into PLOTS_DIR, default docs/plots; needs
#                                           gnuplot: apt-get install gnuplot-nox)
BENCH_PROGS := $(B)/bench/sem_keys $(B)/bench/sem_cyclic $(B)/bench/sem_threads \
	       $(B)/bench/sem_single $(B)/bench/sem_pingpong $(B)/bench/sem_deathwake \
	       $(B)/bench/msg_stream $(B)/bench/msg_pingpong \
	       $(B)/bench/shm_cycle $(B)/bench/shm_attach $(B)/bench/shm_bw \
	       $(B)/bench/locked_paths $(B)/bench/doors $(B)/bench/ns_unshare \
	       $(B)/bench/trap \
	       $(B)/bench/shm_steps $(B)/bench/futex_pingpong
BENCH_DRIVER_SRCS := bench/driver.c bench/rows.c bench/runner.c bench/report.c
BENCHCFLAGS = $(CFLAGS) $(BASECFLAGS)
BENCH_ARGS ?=
PLOTS_DIR ?= docs/plots

$(B)/bench:
	mkdir -p $@

$(B)/bench/%: bench/%.c bench/util.c bench/util.h include/uipc.h | $(B)/bench
	$(CC) $(BENCHCFLAGS) -o $@ $< bench/util.c -ldl

$(B)/bench/driver: $(BENCH_DRIVER_SRCS) bench/driver.h | $(B)/bench
	$(CC) $(BENCHCFLAGS) -o $@ $(BENCH_DRIVER_SRCS) -lm

bench-progs: $(BENCH_PROGS) $(B)/bench/driver

bench: all bench-progs
	$(B)/bench/driver --bindir $(B)/bench --lib $(B)/libuipc.so $(BENCH_ARGS)
	bench/stress-ng.sh --lib $(B)/libuipc.so --json $(B)/bench/stress-ng.json $(filter --quick,$(BENCH_ARGS))
	rm -f $(B)/bench/fio-aio.json
	-bench/fio-aio.sh --uipc $(B)/uipc --json $(B)/bench/fio-aio.json $(filter --quick,$(BENCH_ARGS))
	bench/fio-aio-disk.sh --uipc $(B)/uipc --json $(B)/bench/fio-aio-disk.json $(filter --quick,$(BENCH_ARGS))
	bench/fio-aio-contexts.sh --uipc $(B)/uipc --json $(B)/bench/fio-aio-contexts.json $(filter --quick,$(BENCH_ARGS))
	bench/plots.sh --results $(B)/bench/results.json --fio $(B)/bench/fio-aio.json --out $(PLOTS_DIR)

# the SVG plots of the seeds' curves from the last run (bench/plots.sh)
bench-plots:
	bench/plots.sh --results $(B)/bench/results.json --fio $(B)/bench/fio-aio.json --out $(PLOTS_DIR)

# issue 17's disk rows alone (bench/fio-aio-disk.sh)
bench-fio-disk: all | $(B)/bench
	bench/fio-aio-disk.sh --uipc $(B)/uipc --json $(B)/bench/fio-aio-disk.json $(filter --quick,$(BENCH_ARGS))

# seed 001's curve alone, with its plot (bench/fio-aio-contexts.sh)
bench-fio-contexts: all | $(B)/bench
	bench/fio-aio-contexts.sh --uipc $(B)/uipc --json $(B)/bench/fio-aio-contexts.json $(filter --quick,$(BENCH_ARGS))

# seed 001's fio job alone (bench/fio-aio.sh)
bench-fio: all | $(B)/bench
	bench/fio-aio.sh --uipc $(B)/uipc --json $(B)/bench/fio-aio.json $(filter --quick,$(BENCH_ARGS))

# the stress-ng rows alone (bench/stress-ng.sh)
bench-stress-ng: all
	bench/stress-ng.sh --lib $(B)/libuipc.so --json $(B)/bench/stress-ng.json $(filter --quick,$(BENCH_ARGS))

# The library without the undo journal (-DUIPC_BENCH_NO_JOURNAL, see j_top() in
# core/lock.c): FOR MEASUREMENT ONLY.  It does not survive a SIGKILL inside a
# critical section and its error paths that need j_abort are wrong.  Never the
# default library, never used by the tests: only bench/journal-cost.sh loads
# it.  Only lock.o differs; every other object is the normal build's, linked
# in the same order.
NOJ_OBJS := $(patsubst $(B)/core/lock.o,$(B)/nojournal/core/lock.o,$(LIB_OBJS))

$(B)/nojournal/core/lock.o: core/lock.c $(LIB_HDRS) bench/bench.mk
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LIBCFLAGS) -DUIPC_BENCH_NO_JOURNAL -c $< -o $@

$(B)/nojournal/libuipc.so: $(NOJ_OBJS) $(LIB_MAP)
	$(CC) $(CFLAGS) $(LIB_LDFLAGS) -o $@ $(NOJ_OBJS) -ldl

# what crash safety (the journal) costs the locked paths: locked_paths with
# the normal library and the no-journal one, alternating, medians; the
# kernel's figures for context (bench/journal-cost.sh, about 1 minute)
JOURNAL_ARGS ?=
bench-journal: all $(B)/nojournal/libuipc.so $(B)/bench/locked_paths
	bench/journal-cost.sh --bindir $(B)/bench --lib $(B)/libuipc.so \
		--nojournal $(B)/nojournal/libuipc.so --json $(B)/bench/journal-cost.json $(JOURNAL_ARGS)

.PHONY: bench-progs bench-stress-ng bench-fio bench-fio-disk bench-fio-contexts bench-journal bench-plots
