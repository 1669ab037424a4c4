/*
 * bench/rows.c - the table of benchmark runs and reported rows.
 *
 * A run is one program invocation (done once per side and repetition); a row
 * is one figure of the report.  Add message-queue and shared-memory
 * benchmarks by appending runs and a group of rows here.
 */
#include <string.h>
#include "driver.h"

#define T 120			/* default timeout per repetition, seconds */

struct run bench_runs[] = {
	/* 1. seed 000: semget for lots of keys (fresh namespace per KEYS) */
	{ .name = "keys-1",     .argv = { "sem_keys", "1" },     .reps = 5, .timeout = T },
	{ .name = "keys-10",    .argv = { "sem_keys", "10" },    .reps = 3, .timeout = T },
	{ .name = "keys-32",    .argv = { "sem_keys", "32" },    .reps = 3, .timeout = T },
	{ .name = "keys-100",   .argv = { "sem_keys", "100" },   .reps = 3, .timeout = T },
	{ .name = "keys-1000",  .argv = { "sem_keys", "1000" },  .reps = 3, .timeout = T },
	{ .name = "keys-10000", .argv = { "sem_keys", "10000" }, .reps = 1, .timeout = T },
	{ .name = "keys-31900", .argv = { "sem_keys", "31900" }, .reps = 1, .timeout = T },
	{ .name = "ext-keys-10", .argv = { "sem_keys", "10" },
	  .flags = RUN_EXTENDED, .reps = 3, .timeout = T },
	{ .name = "ext-keys-100000", .argv = { "sem_keys", "100000", "3" },
	  .flags = RUN_EXTENDED | RUN_BIG_ARENA, .reps = 1, .timeout = 240 },
	{ .name = "ext-keys-1000000", .argv = { "sem_keys", "1000000", "3" },
	  .flags = RUN_EXTENDED | RUN_BIG_ARENA, .reps = 1, .timeout = 240 },
	/* 2. seed 002: no-op semop on two ids at an idx distance */
	{ .name = "cyclic-1",     .argv = { "sem_cyclic", "1" },     .reps = 5, .timeout = T },
	{ .name = "cyclic-40",    .argv = { "sem_cyclic", "40" },    .reps = 5, .timeout = T },
	{ .name = "cyclic-300",   .argv = { "sem_cyclic", "300" },   .reps = 5, .timeout = T },
	{ .name = "cyclic-3348",  .argv = { "sem_cyclic", "3348" },  .reps = 5, .timeout = T },
	{ .name = "cyclic-27348", .argv = { "sem_cyclic", "27348" }, .reps = 5, .timeout = T },
	/* 3. seed 004: threads on their own semaphore of one array.  The
	 * kernel's side of a 1 s run varies by a fifth between runs (its
	 * semop 195-236 ns a call), uipc's is at the CAS's cost: medians of
	 * 7, as the ping-pong rows below, so that one draw does not make
	 * the ratio */
	{ .name = "threads-1", .argv = { "sem_threads", "1" }, .reps = 7, .timeout = T },
	{ .name = "threads-2", .argv = { "sem_threads", "2" }, .reps = 7, .timeout = T },
	{ .name = "threads-4", .argv = { "sem_threads", "4" }, .reps = 5, .timeout = T },
	{ .name = "threads-8", .argv = { "sem_threads", "8" }, .reps = 7, .timeout = T },
	/* 4. one uncontended semop */
	{ .name = "single", .argv = { "sem_single" }, .reps = 5, .timeout = T },
	/* 5. cross-process ping-pong (on one CPU: the scheduler's choices,
	 * more repetitions as with a busy process below) */
	{ .name = "pingpong", .argv = { "sem_pingpong" }, .reps = 3, .timeout = T },
	{ .name = "pingpong-same", .argv = { "sem_pingpong", "1", "same" },
	  .reps = 7, .timeout = T },
	/* ... with a third process that only burns CPU beside them (issue 18):
	 * the scheduler's choices make single runs of both sides vary by a
	 * fifth to a third (the kernel's too), so more repetitions */
	{ .name = "pingpong-busy", .argv = { "sem_pingpong", "1", "any-busy" },
	  .reps = 7, .timeout = T },
	{ .name = "pingpong-same-busy", .argv = { "sem_pingpong", "1", "same-busy" },
	  .reps = 7, .timeout = T },
	/* the same loop over two bare futex semaphores (no IPC call: both
	 * sides run it alike): what any user-space semaphore that sleeps in
	 * the kernel gets in that placement, crash safety left out */
	{ .name = "futex-pingpong-same-busy", .argv = { "futex_pingpong", "1", "same-busy" },
	  .reps = 7, .timeout = T },
	/* 10. a sleeper freed by a killed holder's SEM_UNDO (issue 5) */
	{ .name = "deathwake", .argv = { "sem_deathwake", "100" }, .reps = 1, .timeout = T },
	{ .name = "pingpong-split", .argv = { "sem_pingpong", "1", "split" },
	  .reps = 3, .timeout = T },
	/* 8. message queues (issue 3): 1,000,000 x 128 B one way; 64 B ping-pong */
	{ .name = "msg-stream", .argv = { "msg_stream", "1000000", "128" },
	  .reps = 3, .timeout = T },
	{ .name = "msg-stream-same", .argv = { "msg_stream", "1000000", "128", "same" },
	  .reps = 3, .timeout = T },
	{ .name = "msg-stream-split", .argv = { "msg_stream", "1000000", "128", "split" },
	  .reps = 3, .timeout = T },
	{ .name = "msg-pingpong", .argv = { "msg_pingpong", "1", "64" },
	  .reps = 3, .timeout = T },
	/* shared memory (issue 4) */
	{ .name = "shm-cycle-4k", .argv = { "shm_cycle", "4096" }, .reps = 3, .timeout = T },
	{ .name = "shm-cycle-1m", .argv = { "shm_cycle", "1048576" }, .reps = 2, .timeout = T },
	{ .name = "shm-attach-1m", .argv = { "shm_attach", "1048576" }, .reps = 3, .timeout = T },
	{ .name = "shm-bw-64m", .argv = { "shm_bw", "64", "20" }, .reps = 3, .timeout = T },
	/* 11. the doors of issue 16, on the calls they let through */
	{ .name = "doors-getpid", .argv = { "doors", "getpid" }, .reps = 5, .timeout = T },
	{ .name = "doors-open", .argv = { "doors", "open" }, .reps = 5, .timeout = T },
	{ .name = "doors-write", .argv = { "doors", "write" }, .reps = 5, .timeout = T },
	/* trap mode (issue 16): System V calls by system call instruction */
	{ .name = "trap-semop", .argv = { "trap", "semop" }, .reps = 5, .timeout = T },
	{ .name = "trap-libc", .argv = { "trap", "libc" }, .reps = 5, .timeout = T },
	{ .name = "trap-getpid", .argv = { "trap", "getpid" }, .reps = 5, .timeout = T },
	/* 12. IPC namespaces (issue 15, seed 003) */
	{ .name = "ns-unshare", .argv = { "ns_unshare", "1000" }, .reps = 3, .timeout = T },
};
const int bench_nruns = sizeof(bench_runs) / sizeof(bench_runs[0]);

#define GROUP(title) { .kind = ROW_GROUP, .label = title }
#define VAL(i, l, u, r, k, b) { .kind = ROW_VALUE, .id = i, .label = l, \
	.unit = u, .run = r, .key = k, .better = b }
#define VALT(i, l, u, r, k, b, t, tv) { .kind = ROW_VALUE, .id = i, .label = l, \
	.unit = u, .run = r, .key = k, .better = b, .target = t, .target_val = tv }
#define UIPC(i, l, u, r, k) { .kind = ROW_VALUE, .id = i, .label = l, \
	.unit = u, .run = r, .key = k, .uipc_only = 1 }
#define QUOT(i, l, r, k, r2, k2, t, tv) { .kind = ROW_QUOTIENT, .id = i, \
	.label = l, .unit = "x", .run = r, .key = k, .run2 = r2, .key2 = k2, \
	.better = -1, .target = t, .target_val = tv }

/* The four seed-000 figures for one KEYS value. */
#define KEYS_ROWS(n) \
	VAL("keys." #n ".create_total", "create KEYS=" #n " total", "us", \
	    "keys-" #n, "create_total_us", -1), \
	VAL("keys." #n ".create_max", "create KEYS=" #n " max single call", "us", \
	    "keys-" #n, "create_max_us", -1), \
	VAL("keys." #n ".lookup_total", "lookup KEYS=" #n " total", "us", \
	    "keys-" #n, "lookup_total_us", -1), \
	VAL("keys." #n ".lookup_max", "lookup KEYS=" #n " max single call", "us", \
	    "keys-" #n, "lookup_max_us", -1)

#define CYCLIC_ROW(d) VALT("cyclic." #d, "no-op semop, idx distance " #d, \
	"ns/op", "cyclic-" #d, "ns_per_op", -1, TGT_RATIO_MIN, 10)

#define THREADS_ROW(n) VALT("threads." #n, #n " thread(s), semop +1/-1 own sem", \
	"ops/s", "threads-" #n, "ops_per_s", +1, TGT_RATIO_MIN, 10)

const struct row bench_rows[] = {
	GROUP("1. semget for lots of keys (seed 000)"),
	KEYS_ROWS(1), KEYS_ROWS(10), KEYS_ROWS(32), KEYS_ROWS(100),
	KEYS_ROWS(1000), KEYS_ROWS(10000), KEYS_ROWS(31900),
	VAL("lookup.10.per_call", "lookup per call, 10 keys", "ns",
	    "keys-10", "lookup_ns_per_call", -1),
	VALT("lookup.31900.per_call", "lookup per call, 31900 keys", "ns",
	     "keys-31900", "lookup_ns_per_call", -1, TGT_RATIO_MIN, 8),
	QUOT("lookup.scaling_31900_10", "lookup per call 31900 / 10 keys",
	     "keys-31900", "lookup_ns_per_call", "keys-10", "lookup_ns_per_call",
	     TGT_UIPC_MAX, 2),
	VAL("ext.lookup.10.per_call", "extended ids: lookup per call, 10 keys", "ns",
	    "ext-keys-10", "lookup_ns_per_call", -1),
	VAL("ext.lookup.100000.per_call", "extended ids: lookup per call, 100k keys", "ns",
	    "ext-keys-100000", "lookup_ns_per_call", -1),
	VAL("ext.create.1000000.per_call", "extended ids: create per call, 1M keys", "ns",
	    "ext-keys-1000000", "create_ns_per_call", -1),
	VALT("ext.lookup.1000000.per_call", "extended ids: lookup per call, 1M keys", "ns",
	     "ext-keys-1000000", "lookup_ns_per_call", -1, TGT_UIPC_MAX, 100),
	QUOT("ext.lookup.scaling_1M_10", "extended ids: lookup 1M / 10 keys",
	     "ext-keys-1000000", "lookup_ns_per_call", "ext-keys-10",
	     "lookup_ns_per_call", TGT_NONE, 0),

	GROUP("2. cyclic ids: no-op semop alternating between 2 ids (seed 002)"),
	CYCLIC_ROW(1), CYCLIC_ROW(40), CYCLIC_ROW(300), CYCLIC_ROW(3348), CYCLIC_ROW(27348),
	QUOT("cyclic.slowdown_27348_1", "no-op semop, distance 27348 / 1",
	     "cyclic-27348", "ns_per_op", "cyclic-1", "ns_per_op", TGT_NONE, 0),

	GROUP("3. threads of one process, own semaphore of one array (seed 004)"),
	THREADS_ROW(1), THREADS_ROW(2), THREADS_ROW(4), THREADS_ROW(8),
	/* 2 threads on 2 CPUs should do nearly twice one thread's work: no
	 * line written by one is read by the other (issue 18) */
	{ .kind = ROW_QUOTIENT, .id = "threads.scaling_2_1", .label = "2 threads / 1 thread",
	  .unit = "x", .run = "threads-2", .key = "ops_per_s", .run2 = "threads-1",
	  .key2 = "ops_per_s", .better = 0, .target = TGT_UIPC_MIN, .target_val = 1.8 },
	/* what the machine gave them: ops/s cannot scale on CPUs that other
	 * processes hold; CPU time per call shows a shared line whatever the load */
	VAL("threads.2.cpus", "... CPUs the 2 threads got (CPU time / wall)", "CPUs",
	    "threads-2", "cpus_used", 0),
	VAL("threads.1.cpu_per_op", "... CPU time per semop, 1 thread", "ns",
	    "threads-1", "cpu_ns_per_op", -1),
	VAL("threads.2.cpu_per_op", "... CPU time per semop, 2 threads", "ns",
	    "threads-2", "cpu_ns_per_op", -1),

	GROUP("4. single semop, no contention, no SEM_UNDO"),
	VALT("single.ns_per_op", "semop +1 / -1, one thread", "ns/op",
	     "single", "ns_per_op", -1, TGT_RATIO_MIN, 10),

	GROUP("5. cross-process ping-pong (2 processes, 2 semaphores)"),
	VALT("pingpong.rtt_per_s", "round trips, placed by the scheduler", "rtt/s",
	     "pingpong", "rtt_per_s", +1, TGT_RATIO_MIN, 1),
	VALT("pingpong.same.rtt_per_s", "round trips, both on one CPU", "rtt/s",
	     "pingpong-same", "rtt_per_s", +1, TGT_RATIO_MIN, 1),
	VALT("pingpong.split.rtt_per_s", "round trips, on two CPUs", "rtt/s",
	     "pingpong-split", "rtt_per_s", +1, TGT_RATIO_MIN, 1),
	VALT("pingpong.busy.rtt_per_s", "round trips, scheduler, a busy process beside", "rtt/s",
	     "pingpong-busy", "rtt_per_s", +1, TGT_RATIO_MIN, 1),
	VALT("pingpong.same_busy.rtt_per_s", "round trips, one CPU, a busy process on it", "rtt/s",
	     "pingpong-same-busy", "rtt_per_s", +1, TGT_RATIO_MIN, 1),
	/* that row's floor for a design in user space (issue 18): the bare
	 * futex pair's rate, and each side's semaphores against it */
	VAL("pingpong.same_busy.bare_futex", "... a bare futex pair there (no IPC call)", "rtt/s",
	    "futex-pingpong-same-busy", "rtt_per_s", 0),
	{ .kind = ROW_QUOTIENT, .id = "pingpong.same_busy.of_bare",
	  .label = "... semaphores' round trips / the bare pair's", .unit = "x",
	  .run = "pingpong-same-busy", .key = "rtt_per_s", .run2 = "futex-pingpong-same-busy",
	  .key2 = "rtt_per_s", .better = 0, .target = TGT_NONE },

	GROUP("10. sleeper freed by a SIGKILLed holder's SEM_UNDO (100 trials)"),
	VAL("deathwake.median", "kill to wakeup, median", "ms", "deathwake", "median_ms", -1),
	VALT("deathwake.max", "kill to wakeup, max", "ms", "deathwake", "max_ms", -1,
	     TGT_UIPC_MAX, 100),

	GROUP("6. semget create cost (from 1.; \"fresh\": 1st round in a new namespace)"),
	VALT("create.10.per_call", "create per call, 10 keys", "ns",
	     "keys-10", "create_ns_per_call", -1, TGT_RATIO_MIN, 1),
	VALT("create.1000.per_call", "create per call, 1000 keys", "ns",
	     "keys-1000", "create_ns_per_call", -1, TGT_RATIO_MIN, 1),
	VALT("create.31900.per_call", "create per call, 31900 keys", "ns",
	     "keys-31900", "create_ns_per_call", -1, TGT_RATIO_MIN, 1),
	VALT("create.fresh.first_call", "first semget create in a fresh namespace", "us",
	     "keys-1", "create_fresh_first_call_us", -1, TGT_RATIO_MIN, 1),
	VALT("create.fresh.10", "create KEYS=10 total, fresh namespace", "us",
	     "keys-10", "create_fresh_total_us", -1, TGT_RATIO_MIN, 1),
	VALT("create.fresh.1000", "create KEYS=1000 total, fresh namespace", "us",
	     "keys-1000", "create_fresh_total_us", -1, TGT_RATIO_MIN, 1),
	VALT("create.fresh.31900", "create KEYS=31900 total, fresh namespace", "us",
	     "keys-31900", "create_fresh_total_us", -1, TGT_RATIO_MIN, 1),

	GROUP("8. message queues, 2 processes, msgmnb default"),
	VALT("msg.stream.msgs_per_s", "stream 1,000,000 x 128 B one way", "msg/s",
	     "msg-stream", "msgs_per_s", +1, TGT_RATIO_MIN, 5),
	VAL("msg.stream.same.msgs_per_s", "stream 1,000,000 x 128 B, both on one CPU",
	    "msg/s", "msg-stream-same", "msgs_per_s", +1),
	VALT("msg.stream.split.msgs_per_s", "stream 1,000,000 x 128 B, on two CPUs",
	     "msg/s", "msg-stream-split", "msgs_per_s", +1, TGT_RATIO_MIN, 2),
	VALT("msg.pingpong.rtt_per_s", "request/response 64 B round trips", "rtt/s",
	     "msg-pingpong", "rtt_per_s", +1, TGT_RATIO_MIN, 1),

	GROUP("9. shared memory"),
	VALT("shm.cycle.4k", "shmget+shmat+touch+shmdt+RMID, 4 KiB", "ns",
	     "shm-cycle-4k", "ns_per_cycle", -1, TGT_RATIO_MIN, 1),
	VALT("shm.cycle.1m", "shmget+shmat+touch+shmdt+RMID, 1 MiB", "ns",
	     "shm-cycle-1m", "ns_per_cycle", -1, TGT_RATIO_MIN, 1),
	VAL("shm.attach.1m", "shmat+shmdt of an existing 1 MiB segment", "ns",
	    "shm-attach-1m", "ns_per_op", -1),
	VALT("shm.bw.64m", "64 MiB written by one process, read by another", "GB/s",
	     "shm-bw-64m", "gbps", +1, TGT_RATIO_MIN, 1),
	VAL("shm.bw.64m.write", "... writer alone", "GB/s", "shm-bw-64m", "write_gbps", +1),
	VAL("shm.bw.64m.read", "... reader alone", "GB/s", "shm-bw-64m", "read_gbps", +1),

	GROUP("11. calls uipc lets through (kernel side: no library loaded)"),
	VAL("doors.getpid", "syscall(SYS_getpid)", "ns/op", "doors-getpid", "ns_per_op", -1),
	VAL("doors.open", "open + close of a regular file", "ns/op", "doors-open",
	    "ns_per_op", -1),
	VAL("doors.write", "write of 1 byte to /dev/null", "ns/op", "doors-write",
	    "ns_per_op", -1),
	GROUP("11b. trap mode: by system call instruction (uipc side: --trap's filter)"),
	VAL("trap.semop", "semop +1/-1 by instruction (uipc: SIGSYS, served)", "ns/op",
	    "trap-semop", "ns_per_op", -1),
	VAL("trap.libc", "... through libc's semop (uipc: the preload)", "ns/op", "trap-libc",
	    "ns_per_op", -1),
	VAL("trap.getpid", "getpid by instruction (uipc: let through by the filter)", "ns/op",
	    "trap-getpid", "ns_per_op", -1),
	GROUP("12. IPC namespaces: unshare(CLONE_NEWIPC) (seed 003)"),
	VALT("ns.unshare_1000_ms", "1000 x unshare in one process, total", "ms",
	     "ns-unshare", "unshare_total_ms", -1, TGT_RATIO_MIN, 3),
	VALT("ns.objects_1000_ms", "1000 x (unshare, sem array, 4 KiB segment written), left",
	     "ms", "ns-unshare", "objects_total_ms", -1, TGT_RATIO_MIN, 1.5),
	VAL("ns.unshare_fresh_us", "unshare, median of 50", "us",
	    "ns-unshare", "unshare_fresh_us", -1),
	VALT("ns.first_semget_us", "first semget in a new namespace", "us",
	     "ns-unshare", "first_semget_us", -1, TGT_UIPC_MAX, 10),
	VAL("ns.second_semget_us", "second semget in it", "us",
	    "ns-unshare", "second_semget_us", -1),
	VAL("ns.leave_64m_us", "unshare leaving a written 64 MiB segment", "us",
	    "ns-unshare", "leave_64m_us", -1),

	GROUP("7. arena usage (uipc_ns_stats)"),
	UIPC("arena.sem_array_bytes", "bytes per semaphore array (header)", "B",
	    "keys-1000", "sem_array_bytes"),
	UIPC("arena.sem_bytes", "bytes per semaphore", "B",
	    "keys-1000", "sem_bytes"),
	UIPC("arena.per_key_measured", "arena growth per 1-sem array (1000 keys)", "B",
	    "keys-1000", "arena_bytes_per_key"),
	UIPC("arena.residue_1000", "arena bytes kept after RMID of 1000", "B",
	    "keys-1000", "arena_residue_after_rmid"),
	UIPC("arena.residue_1000_x100", "... after 100 rounds of create/RMID 1000", "B",
	    "keys-1000", "arena_residue_after_all_rounds"),
	UIPC("arena.per_key_measured_1M", "arena growth per array (1M keys, extended)", "B",
	    "ext-keys-1000000", "arena_bytes_per_key"),
};
const int bench_nrows = sizeof(bench_rows) / sizeof(bench_rows[0]);

struct run *find_run(const char *name)
{
	int i;

	for (i = 0; i < bench_nruns; i++)
		if (!strcmp(bench_runs[i].name, name))
			return &bench_runs[i];
	return NULL;
}
