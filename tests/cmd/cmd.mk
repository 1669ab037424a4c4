# tests/cmd/cmd.mk - test programs of the `uipc` command tests (tests/cmd-*.t).
# ipcfix builds the same IPC objects in the kernel (under unshare --ipc) or in
# uipc (under uipc run) so that ipcs and uipc ipcs can be compared.
CMD_TEST_DIR   := $(B)/tests/cmd
CMD_TEST_PROGS := $(CMD_TEST_DIR)/ipcfix
TEST_PROGS += $(CMD_TEST_PROGS)

$(CMD_TEST_DIR)/%: tests/cmd/%.c | $(CMD_TEST_DIR)
	$(CC) $(TESTCFLAGS) $< -o $@

$(CMD_TEST_DIR):
	mkdir -p $@

cmd-progs: $(CMD_TEST_PROGS)
.PHONY: cmd-progs
