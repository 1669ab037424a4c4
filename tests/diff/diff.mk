# tests/diff/diff.mk - the differential scenarios (kernel vs uipc).
# Every tests/diff/*.c except the shared dt.c is one scenario program,
# linked with dt.o into build/tests/diff/; tests/diff-*.t run them.
DIFF_DIR   := $(B)/tests/diff
DIFF_SRCS  := $(filter-out tests/diff/dt.c,$(sort $(wildcard tests/diff/*.c)))
DIFF_PROGS := $(DIFF_SRCS:tests/diff/%.c=$(DIFF_DIR)/%)
TEST_PROGS += $(DIFF_PROGS)

$(DIFF_DIR)/dt.o: tests/diff/dt.c tests/diff/dt.h | $(DIFF_DIR)
	$(CC) $(TESTCFLAGS) -c $< -o $@

# the native AIO scenarios call libaio (plain: the kernel; preloaded: uipc)
$(DIFF_PROGS): $(DIFF_DIR)/%: tests/diff/%.c tests/diff/dt.h tests/diff/aiodt.h $(DIFF_DIR)/dt.o | $(DIFF_DIR)
	$(CC) $(TESTCFLAGS) $< $(DIFF_DIR)/dt.o -o $@ -ldl $(if $(filter aio_%,$*),-laio)

$(DIFF_DIR):
	mkdir -p $@

diff-progs: $(DIFF_PROGS)
.PHONY: diff-progs
