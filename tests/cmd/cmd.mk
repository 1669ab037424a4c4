# tests/cmd/cmd.mk - test programs of the `uipc` command tests (tests/cmd-*.t).
# ipcfix builds the same IPC objects in the kernel (under unshare --ipc) or in
# uipc (under uipc run) so that ipcs and uipc ipcs can be compared.
CMD_TEST_DIR   := $(B)/tests/cmd
CMD_TEST_PROGS := $(CMD_TEST_DIR)/ipcfix $(CMD_TEST_DIR)/ipcprobe
TEST_PROGS += $(CMD_TEST_PROGS)

$(CMD_TEST_DIR)/%: tests/cmd/%.c | $(CMD_TEST_DIR)
	$(CC) $(TESTCFLAGS) $< -o $@

# ipcprobe linked statically (glibc's libc.a, from libc6-dev) and as a
# static-pie, for `uipc run`'s refusal of static programs (tests/cmd-trap.t);
# built by that test itself (`make cmd-static-progs`), so that a system
# without libc.a still builds everything else
CMD_STATIC_PROGS := $(CMD_TEST_DIR)/ipcprobe-static $(CMD_TEST_DIR)/ipcprobe-spie

$(CMD_TEST_DIR)/ipcprobe-static: tests/cmd/ipcprobe.c tests/diff/rawinsn.h | $(CMD_TEST_DIR)
	$(CC) $(TESTCFLAGS) -static $< -o $@

$(CMD_TEST_DIR)/ipcprobe-spie: tests/cmd/ipcprobe.c tests/diff/rawinsn.h | $(CMD_TEST_DIR)
	$(CC) $(TESTCFLAGS) -static-pie $< -o $@

cmd-static-progs: $(CMD_STATIC_PROGS)

$(CMD_TEST_DIR):
	mkdir -p $@

cmd-progs: $(CMD_TEST_PROGS)
.PHONY: cmd-progs cmd-static-progs
