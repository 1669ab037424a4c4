# tests/real/real.mk - helpers of the real-program tests (tests/real-*.t)
REAL_DIR := $(B)/tests/real
TEST_PROGS += $(REAL_DIR)/noaio

$(REAL_DIR)/noaio: tests/real/noaio.c | $(REAL_DIR)
	$(CC) $(TESTCFLAGS) $< -o $@

$(REAL_DIR):
	mkdir -p $@
