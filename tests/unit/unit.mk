# tests/unit/unit.mk - unit and crash tests of the library (tests/unit-*.t)
UNIT_DIR   := $(B)/tests/unit
UNIT_PROGS := \
	$(UNIT_DIR)/crash_sem \
	$(UNIT_DIR)/crash_sem_cross $(UNIT_DIR)/crash_shm_cross \
	$(UNIT_DIR)/nosys \
	$(UNIT_DIR)/ext_ids \
	$(UNIT_DIR)/fuzz_ops \
	$(UNIT_DIR)/chaos_sem \
	$(UNIT_DIR)/ids_offset \
	$(UNIT_DIR)/crash_msg $(UNIT_DIR)/crash_msg_cross \
	$(UNIT_DIR)/msg_full \
	$(UNIT_DIR)/crash_shm \
	$(UNIT_DIR)/msg_stress \
	$(UNIT_DIR)/shm_fds \
	$(UNIT_DIR)/mlock_arena \
	$(UNIT_DIR)/rmid_crash $(UNIT_DIR)/presleep_crash \
	$(UNIT_DIR)/chaos_mixed \
	$(UNIT_DIR)/trust_shm $(UNIT_DIR)/crash_aio $(UNIT_DIR)/aio_backend $(UNIT_DIR)/aio_many \
	$(UNIT_DIR)/aio_unshare $(UNIT_DIR)/aio_kaio_lead $(UNIT_DIR)/aio_longjmp \
	$(UNIT_DIR)/ns_life $(UNIT_DIR)/ns_free $(UNIT_DIR)/ns_many $(UNIT_DIR)/ns_crash \
	$(UNIT_DIR)/ns_fault \
	$(UNIT_DIR)/lock_hostile $(UNIT_DIR)/hostile \
	$(UNIT_DIR)/proc_reclaim $(UNIT_DIR)/crash_fork \
	$(UNIT_DIR)/key_table $(UNIT_DIR)/thread_slot_reuse
TEST_PROGS += $(UNIT_PROGS)

$(UNIT_DIR)/%: tests/unit/%.c | $(UNIT_DIR)
	$(CC) $(TESTCFLAGS) $< -o $@ -ldl -lpthread

$(UNIT_DIR):
	mkdir -p $@

# native AIO through libaio (the library's names under LD_PRELOAD)
$(UNIT_DIR)/crash_aio $(UNIT_DIR)/aio_backend $(UNIT_DIR)/aio_many $(UNIT_DIR)/aio_unshare \
$(UNIT_DIR)/aio_kaio_lead: $(UNIT_DIR)/%: tests/unit/%.c | $(UNIT_DIR)
	$(CC) $(TESTCFLAGS) $< -o $@ -ldl -laio

# know the namespace layout: rebuilt when it changes
$(UNIT_DIR)/ids_offset $(UNIT_DIR)/lock_hostile $(UNIT_DIR)/proc_reclaim: core/layout.h

# the crash tests share crashkit.h
$(UNIT_DIR)/crash_sem $(UNIT_DIR)/crash_sem_cross $(UNIT_DIR)/crash_shm_cross $(UNIT_DIR)/crash_msg $(UNIT_DIR)/crash_msg_cross $(UNIT_DIR)/crash_shm: tests/unit/crashkit.h

# the hostile-member suite reads the namespace layout (core/layout.h,
# ipc/msgring.h) and mirrors ipc/'s private structures
$(UNIT_DIR)/hostile: tests/unit/hostile.c tests/unit/hostile_mirror.h core/layout.h ipc/msgring.h | $(UNIT_DIR)
	$(CC) $(TESTCFLAGS) -I. $< -o $@ -ldl

# ok() from tap.h
$(UNIT_DIR)/ns_free $(UNIT_DIR)/ns_many $(UNIT_DIR)/thread_slot_reuse: tests/unit/tap.h
