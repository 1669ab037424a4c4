# tests/tests.mk - `make test`: build everything, then run every tests/*.t under prove.
# Each test area keeps its own fragment and adds the programs it needs to TEST_PROGS.
TEST_PROGS :=
TESTCFLAGS = $(CFLAGS) $(BASECFLAGS)

-include tests/unit/unit.mk
-include tests/diff/diff.mk
-include tests/cmd/cmd.mk
-include tests/diff/msg.mk
-include tests/diff/shm.mk
-include tests/real/real.mk

test-progs: $(TEST_PROGS)

# sanitize: the library built with ASan/UBSan, for tests/unit-sanitize.t
test: all test-progs sanitize
	prove -f tests/*.t

.PHONY: test-progs
