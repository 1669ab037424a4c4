/*
 * core/core.h - what core/ gives the layers above it.
 *
 * Owns: the namespace file and its mapping (nsfile.c), which namespace a
 * process is in (nsdoor.c), letting go of a namespace's memory off the
 * caller's path (nsfree.c), the allocator inside
 * it (arena.c), locks and the undo journal (lock.c), the process and
 * thread registry with fork/exec/exit following and liveness (proc.c), the
 * caller's credentials (cred.c), the signal layer with futex waits and
 * fault-tolerant user copies (signals.c, signals.h), and the real system
 * calls uipc makes for itself (sys.h).  The kernel gives its ipc/ all of
 * this for free; user space must build it.
 *
 * May call: libc and the kernel.  Never ipc/, aio/ or entry/: where core
 * must have the layers above act (a new namespace's tables, a process's
 * exit work, a fork child), it calls the hooks they register with
 * CORE_HOOKS() below.  tests/unit-layers.t checks this on the objects.
 *
 * Returns: 0 or -errno, unless a prototype says otherwise (ns_get and the
 * registry's lookups return a pointer, NULL when there is none).
 */
#ifndef UIPC_CORE_H
#define UIPC_CORE_H

#include "core/layout.h"
#include "core/signals.h"
#include "core/sys.h"

/* ---- process-local view of a namespace ---- */

/* where the fixed tables are: computed from the id mode, checked against the
 * header when the namespace is opened, then used from this private copy
 * (a corrupted header must not send a process outside its tables) */
struct ns_layout {
	uoff_t procs, threads, heap_start;
	uoff_t entries[IPC_NR_IDS], used[IPC_NR_IDS], populated[IPC_NR_IDS];
};

struct ns {
	struct ns_layout lay;
	char *base;                /* the mapping */
	uint64_t size;             /* mapped bytes (== hdr->arena_size) */
	struct uipc_hdr *hdr;
	int shift;                 /* IPCMNI shift of this namespace */
	int32_t ipcmni;
	/* the file's owner, group and mode as fstat() saw them when this
	 * process opened it: members cannot rewrite these (the header's
	 * creator_uid and mode they can), so trust decisions use them */
	uid_t file_uid;
	gid_t file_gid;
	unsigned file_mode;
	bool shared;               /* a shared namespace (uipc-shared-NAME) */
	bool broken;               /* its file was truncated under us: calls fail
				      with EIDRM (fault.c) */
	/* the user namespace that owns it, as the header said when this
	 * process opened it (cred.c judges credentials against it) */
	struct owner_userns owner;
	int anon_fd;               /* an anonymous namespace's memfd, else -1 */
	int cnt_fd;                /* its count of user.max_ipc_namespaces: the
				      fd holding its slot's lock, else -1 */
	bool created_here;         /* an anonymous one this process image made */
	uint64_t slots_done;       /* made anew in place: the segment numbers up
				      to this one are emptied already (nsfile.c) */
	int hold_fd;               /* a named one joined by setns: its file until
				      it is entered (the marker), else -1 */
	dev_t dev;                 /* the file: what /proc/PID/ns/ipc names */
	ino_t ino;
	void *mark;                /* this process's marker page of it, if entered */
	/* this process's registration in it (proc.c, under its registry
	 * mutex): its process slot (UINT32_MAX: none), a dead process with
	 * our pid and slots that looked gone, found when registering */
	uint32_t proc_idx, stale_idx;
	uint32_t reap[2];
	int nreap;
	/* threads of ours in it by their own unshare, setns or creator (a
	 * thread-local namespace, not the process's: uipc_tls_nsov) */
	int threads;
	/* left by every thread of ours, kept mapped for attachments made in it
	 * (counted there until their shmdt, as the kernel keeps them) */
	bool left;
	/* this process's exit work there gave up a lock wait (lockwait.c):
	 * its slot goes to the survivors' reapers (proc.c) */
	bool exit_undone;
	struct ns *held_next;      /* proc.c's list of the namespaces kept
				      besides the process's own */
	char path[4096];
};

/* bounds-checked translation of an offset into a pointer; NULL if outside
 * the mapping (offset 0 is "none", the header's magic word) */
static inline void *ns_ptr(struct ns *ns, uoff_t off, size_t len)
{
	if (unlikely(off < 8 || off > ns->size || len > ns->size - off))
		return NULL;
	return ns->base + off;
}

/* ns_ptr for a structure read through an offset from the arena: 8-byte
 * aligned too (a forged odd offset would make its words misaligned, and
 * an atomic operation across two cache lines can even be fatal with
 * split-lock detection) */
static inline void *ns_ptr_aligned(struct ns *ns, uoff_t off, size_t len)
{
	return likely(!(off & 7)) ? ns_ptr(ns, off, len) : NULL;
}

static inline uoff_t ns_off(struct ns *ns, const void *p)
{
	return p ? (uoff_t)((const char *)p - ns->base) : 0;
}

/* ---- hooks: what the layers above do when core drives a lifecycle ----
 *
 * Each layer that has work at these points registers one table with
 * CORE_HOOKS(name) = { ... }; the linker gathers the tables in one section
 * and core walks them in link order (so they exist before any constructor
 * runs).  A member may be NULL.
 */
struct core_hooks {
	/* a namespace file being built (NS not yet published): lay out the
	 * layer's tables and defaults.  0 or -errno. */
	int (*ns_init)(struct ns *ns);
	/* the exit work of process P: its own (exit, _exit) or, by a survivor,
	 * that of a process that died without doing it (SIGKILL).  Idempotent:
	 * a worker killed in the middle is replaced. */
	void (*proc_exit)(struct ns *ns, struct uproc *p);
	/* in the child of a fork, before it returns to the program */
	void (*fork_child)(void);
	/* the process registered again after an exec (slot PROC_IDX) */
	void (*exec_note)(uint32_t proc_idx);
	/* this process leaves NS for another (unshare), before its proc_exit
	 * there: drop what the process keeps that names NS's objects */
	void (*ns_leave)(struct ns *ns);
	/* setns into the namespace process P is already in: its SEM_UNDO
	 * adjustments applied and dropped (the kernel's exit_sem at setns),
	 * nothing else */
	void (*proc_undo)(struct ns *ns, struct uproc *p);
	/* does this process still use NS's memory beyond its arena (a
	 * segment attached)?  Then NS is not reset in place at an unshare,
	 * and stays mapped after it is left */
	bool (*ns_busy)(struct ns *ns);
	/* the last thread of this process in NS leaves it (unshare, setns,
	 * a thread's end), P its slot there: the kernel's exit_sem and
	 * exit_shm at that point (SEM_UNDO applied, segments it created
	 * orphaned); its attachments stay counted there until their shmdt */
	void (*proc_leave)(struct ns *ns, struct uproc *p);
};

#define CORE_HOOKS(name)                                                     \
	static const struct core_hooks name                                  \
		__attribute__((used, section("uipc_core_hooks"), aligned(sizeof(void *))))

/* ---- nsfile.c: the namespace file ---- */
/* this thread's namespace when it is not the process's (a thread that
 * unshared or joined on its own, or was made by one: the kernel's
 * namespaces are per thread); NULL: the process's (proc.c sets it) */
UIPC_HIDDEN extern __thread struct ns *uipc_tls_nsov;
/* ns_get's state, read inline */
UIPC_HIDDEN extern struct ns *uipc_proc_ns;     /* the process's namespace, once open */
UIPC_HIDDEN extern bool uipc_proc_ns_used;      /* an IPC call has used it */
UIPC_HIDDEN struct ns *ns_get_slow(void);

/* the current ns; NULL + errno.  Inline, without a call in the common case
 * (the process's namespace, open and used before): every call's first
 * step */
static inline struct ns *ns_get(void)
{
	struct ns *ns = __atomic_load_n(&uipc_proc_ns, __ATOMIC_ACQUIRE);

	if (likely(!uipc_tls_nsov && ns && uipc_proc_ns_used))
		return ns;
	return ns_get_slow();
}
UIPC_HIDDEN void ns_open_for_fork(void);     /* quietly, before a fork */
UIPC_HIDDEN int ns_mlockall(int flags);      /* mlockall, the arena left out */
UIPC_HIDDEN int ns_munlockall(void);
/* a corrupt arena was seen (said once per process, on stderr) */
UIPC_HIDDEN void ns_corrupt(struct ns *ns, const char *what);
/* include/uipc.h's namespace calls, returning 0 or -errno */
UIPC_HIDDEN int ns_path(const char *name, char *buf, size_t len);
UIPC_HIDDEN int ns_create(const char *name, const struct uipc_ns_opts *opts);
UIPC_HIDDEN int ns_remove(const char *name);
UIPC_HIDDEN int ns_select(const char *name);
/* An anonymous namespace's memfd holds its segments too (shm.c): segment
 * file K is the range [K << ANON_SLOT_SHIFT, +ANON_SLOT) of it, K >= 1
 * (the arena is in the first), so that the kernel frees their memory with
 * the namespace's last fd or mapping. */
#define ANON_SLOT_SHIFT 48                  /* 256 TiB: the largest segment */
#define ANON_SLOT (1ULL << ANON_SLOT_SHIFT)
#define ANON_SLOTS ((1ULL << (63 - ANON_SLOT_SHIFT)) - 1)  /* file size < 2^63 */
#define ANON_FILE_SIZE (ANON_SLOTS << ANON_SLOT_SHIFT)
/* Where a process's marker page of its namespace file lies (nsfile.c): one
 * PROT_NONE page at this offset, past any arena, tells /proc/PID/maps's
 * readers which namespace the process is in (nsdoor.c). */
#define NS_MARK_OFF (1ULL << 47)
/* anonymous namespaces (unshare): a new one, built and mapped but not
 * entered; dropping one never entered (from ns_anon_new or ns_open_fd);
 * entering it (after leaving the old one: proc_leave_ns); the current one
 * without opening it (NULL: none) */
UIPC_HIDDEN int ns_anon_new(struct ns **out);
UIPC_HIDDEN void ns_anon_drop(struct ns *ns);
/* NS (new, not entered) was made for a process that has since entered a
 * new user namespace in the same call (CLONE_NEWUSER): that one owns it,
 * as the kernel's new IPC namespace is owned by the new user namespace */
UIPC_HIDDEN void ns_anon_reown(struct ns *ns);
/* NEW becomes the process's namespace (its marker, the environment of its
 * exec'd images); the old one is returned, unmarked but still mapped: the
 * caller lets it go (ns_release) or keeps it */
UIPC_HIDDEN struct ns *ns_switch(struct ns *new);
/* let go of NS (not the process's): its fd and marker; its mapping too
 * unless KEEP_MAP (another thread may still be inside a call in it) */
UIPC_HIDDEN void ns_release(struct ns *ns, bool keep_map);
/* NS is kept only for the attachments made in it: its fd and marker go,
 * its mapping stays */
UIPC_HIDDEN void ns_unpin(struct ns *ns);
/* the process's namespace, not this thread's (NULL: none yet) */
UIPC_HIDDEN struct ns *ns_process(void);
/* the memfd FD of a namespace a thread of ours is in besides the
 * process's: the program's close must not close it (ON), or no longer */
UIPC_HIDDEN void ns_guard_fd(int fd, bool on);
/* an exec by a thread in a namespace of its own: the other namespaces'
 * fds made close-on-exec (at most N, listed in SAVED: the count), and
 * back when the exec failed */
UIPC_HIDDEN int ns_exec_prepare(int *saved, int n);
UIPC_HIDDEN void ns_exec_failed(const int *saved, int n);
/*
 * An unshare that leaves a namespace nobody else can see (an anonymous one
 * this process made, never shared by fork, exec, a door or a join; small;
 * no attachment of it mapped; one thread) makes the new namespace of the
 * old one, in place: no system call (nsfile.c).  begin: may NS be reset
 * (then it is claimed, and nobody may join it until finish or abort)?
 */
UIPC_HIDDEN bool ns_recycle_begin(struct ns *ns);
/* is there room under user.max_ipc_namespaces for a new namespace made of
 * counted namespace NS, which the kernel would count with the new one for a
 * moment: 0 or -ENOSPC */
UIPC_HIDDEN int ns_count_room(struct ns *ns);
/* let go of the user.max_ipc_namespaces count held by FD (-1: none) */
UIPC_HIDDEN void ns_count_let_go(int fd);
UIPC_HIDDEN void ns_recycle_abort(struct ns *ns);
UIPC_HIDDEN void ns_recycle_finish(struct ns *ns);
/* this process's forks and execs may go unseen from now on (trap mode:
 * programs that make them by instruction): no namespace is reset in place */
UIPC_HIDDEN void ns_recycle_never(void);
/* someone besides this process may hold the current namespace from now on
 * (a fork, an exec, a spawn, a door opened): it is never reset in place */
UIPC_HIDDEN void ns_note_shared(void);
/* the same for the namespace file FD refers to (a door opened for another
 * process's namespace) */
UIPC_HIDDEN void ns_note_shared_fd(int fd);
/* setns: the namespace file FD refers to (an anonymous namespace's memfd,
 * a named namespace's file, or an O_PATH descriptor of either, as
 * /proc/PID/ns/ipc gives), mapped but not entered.  -EINVAL: FD is no uipc
 * namespace; -EPERM: no right to open its memory (the kernel asks for
 * CAP_SYS_ADMIN; uipc for the right to open the file read-write). */
UIPC_HIDDEN int ns_open_fd(int fd, struct ns **out);
/* Is FD a uipc namespace's file (the same test as ns_open_fd's, without
 * mapping)? */
UIPC_HIDDEN bool ns_fd_is_ns(int fd);
/* The header of the namespace file FD refers to (any descriptor of it,
 * O_PATH too), read without mapping or locking, and the file's stat: 0,
 * or -EINVAL for no namespace of this layout */
UIPC_HIDDEN int ns_read_header(int fd, struct uipc_hdr *hdr, struct stat *st);
/* Are A and B the same namespace (the same file)? */
UIPC_HIDDEN bool ns_same(const struct ns *a, const struct ns *b);
/* A new O_PATH descriptor of NS's file (O_CLOEXEC from FLAGS), or -errno:
 * what opening /proc/self/ns/ipc gives.  HOLD: the caller keeps it (NS is
 * then never reset in place, ns_recycle_begin) */
UIPC_HIDDEN int ns_reopen(struct ns *ns, int flags, bool hold);
UIPC_HIDDEN struct ns *ns_current(void);
UIPC_HIDDEN struct ns *ns_get_existing(void);  /* never creates one */
/* the environment entries (UIPC_NS_FD=..., UIPC_NS_FILE=...) an exec'd
 * image needs to find the current anonymous namespace: 1, or 0 when the
 * current namespace is not anonymous.  No allocation (vfork children). */
UIPC_HIDDEN int ns_exec_env(char *fdvar, size_t fdlen, char *filevar, size_t filelen,
			    char *cntvar, size_t cntlen);
/* the namespace a child that borrows this thread's memory until its exec
 * (clone with CLONE_VM | CLONE_VFORK) takes with it: ns_exec_env's answer
 * in it while set (NULL: the current one) */
UIPC_HIDDEN void ns_spawn_child(struct ns *ns);
/* an anonymous namespace's fd, which the program's close must not close */
UIPC_HIDDEN bool ns_fd_guarded(int fd);
/* 64 unpredictable bits (getrandom): names others must not guess */
UIPC_HIDDEN uint64_t ns_random64(void);

/* the file of namespace SPEC (NULL or "": default) of a process whose
 * UIPC_DIR, XDG_RUNTIME_DIR and euid are DIR, XDG and EUID (nsdoor.c) */
UIPC_HIDDEN int ns_path_for(const char *spec, const char *dir, const char *xdg, uid_t euid,
			    char *buf, size_t len);
/* make the namespace file PATH if it is missing and a private one of this
 * user (as that process's first call would): 0 or -errno */
UIPC_HIDDEN int ns_make_missing(const char *path);

/* ---- nsfree.c ---- */
/* let go of an anonymous namespace's fd FD and its mapping [BASE, +SIZE)
 * (either may be absent: -1, NULL); when it holds much memory, the freeing
 * happens in a helper, off the caller's path */
UIPC_HIDDEN void ns_let_go(int fd, void *base, size_t size);
/* empty [OFF, +LEN) of an anonymous namespace's memfd FD: in a helper when
 * the memfd holds much memory, else here */
UIPC_HIDDEN void ns_punch(int fd, off_t off, off_t len);
/* the live helpers have closed their copies of this process's fds (a
 * count's lock among them): before letting go of a count; bounded */
UIPC_HIDDEN void ns_helpers_settle(void);

/* ---- nsdoor.c: which namespace a process is in (/proc/PID/ns/ipc) ---- */
/* PID is not under uipc: its IPC namespace is the kernel's */
#define NS_DOOR_KERNEL (-4096)
/* a new O_PATH descriptor of PID's namespace file (O_CLOEXEC from FLAGS):
 * what opening /proc/PID/ns/ipc gives; -errno, or NS_DOOR_KERNEL */
UIPC_HIDDEN int ns_door_open(pid_t pid, int flags);
/* the identity of PID's namespace (fstat of its file): 0, -errno, or
 * NS_DOOR_KERNEL */
UIPC_HIDDEN int ns_door_stat(pid_t pid, struct stat *st);

/* ---- fault.c: a truncated namespace file gives errors, not SIGBUS ---- */
UIPC_HIDDEN void ns_fault_register(struct ns *ns);   /* once mapped */
UIPC_HIDDEN void ns_fault_unregister(struct ns *ns); /* before unmapping */
/* the SIGBUS handler: was ADDR in an arena (now repaired, ns broken)? */
UIPC_HIDDEN bool ns_fault_repair(void *addr);
/* nsfile.c: later calls fail with EIDRM (async-signal-safe) */
UIPC_HIDDEN void ns_mark_broken(struct ns *ns);
/* proc.c: the namespace whose thread slot page ADDR's page maps a second
 * time (an alias), or NULL (async-signal-safe) */
UIPC_HIDDEN struct ns *proc_alias_ns(void *addr);

/* ---- lockwait.c: how long a wait for a held lock may last ----
 * A plain ulock_acquire that finds its lock taken asks lockwait_plan for
 * a bound (the hook in core/lock.c's take_contended): the calling thread's.
 * A blocking call sets its own deadline and handler count (its wait then
 * ends with EINTR or, at the deadline, EAGAIN), fsck and the exit work a
 * maximum, anything else waits UIPC_LOCK_WAIT_MS (EDEADLK).
 * lockwait_suspend makes the waits that follow unbounded (a sleeper that
 * must take its lock back to leave its queue), lockwait_resume ends that.
 * Setting a bound is a few stores (inline): every semop that may sleep
 * does it. */
enum { BOUND_DEFAULT, BOUND_BLOCKING, BOUND_MAX };
struct lockwait_bound {
	int kind;
	int depth;                 /* bounds set, nested: only the outermost counts */
	int64_t deadline;          /* BLOCKING: CLOCK_MONOTONIC ns, 0 none */
	int64_t max_ns;            /* MAX: the longest wait */
	unsigned hand0;            /* BLOCKING: the handler count when the call began */
	int suspended;             /* waits that must not fail (lockwait_suspend) */
	unsigned failed;           /* planned waits that gave up, ever (the exit
				      work: was any of it left undone?) */
};
UIPC_HIDDEN extern __thread struct lockwait_bound lockwait_tls;
/* the deadline and ulock flags of a wait that starts now: 1, or 0 for no
 * bound (suspended), or -EINTR: the blocking call is interrupted already */
UIPC_HIDDEN int lockwait_plan(int64_t *deadline, unsigned *flags);
/* a planned wait's -ETIMEDOUT as the call reports it (EAGAIN, EDEADLK) */
UIPC_HIDDEN int lockwait_result(int r);

/* DEADLINE: CLOCK_MONOTONIC, NULL for none; HAND0: the call's handler count */
static inline void lockwait_bound_blocking(const struct timespec *deadline, unsigned hand0)
{
	struct lockwait_bound *b = &lockwait_tls;

	if (b->depth++)
		return;
	b->kind = BOUND_BLOCKING;
	b->deadline = deadline ? (int64_t)deadline->tv_sec * 1000000000LL + deadline->tv_nsec : 0;
	b->hand0 = hand0;
}

static inline void lockwait_bound_max(int64_t max_ns)
{
	struct lockwait_bound *b = &lockwait_tls;

	if (b->depth++)
		return;
	b->kind = BOUND_MAX;
	b->max_ns = max_ns;
}

static inline void lockwait_bound_end(void)
{
	struct lockwait_bound *b = &lockwait_tls;

	if (b->depth > 0 && --b->depth == 0)
		b->kind = BOUND_DEFAULT;
}

static inline void lockwait_suspend(void)
{
	lockwait_tls.suspended++;
}

static inline void lockwait_resume(void)
{
	if (lockwait_tls.suspended > 0)
		lockwait_tls.suspended--;
}

/* ---- lock.c ---- */
UIPC_HIDDEN int ulock_init(struct ulock *l);
UIPC_HIDDEN int ulock_acquire(struct ns *ns, struct ulock *l);
/*
 * ulock_acquire with a bound on the wait for a live holder (a holder that
 * died is taken over at once): -ETIMEDOUT once DEADLINE (CLOCK_MONOTONIC
 * ns, as mono_ns(); ULOCK_FOREVER: none) has passed, and with ULOCK_INTR
 * -EINTR when a signal for one of the program's handlers arrived during the
 * call (held until the call's sections end, see signals.c).  For calls
 * with a timeout or IPC_NOWAIT, and for interruptible ones: a holder that
 * is stopped, or a forged lock word naming a live thread, then cannot keep
 * them waiting past their bound.
 */
#define ULOCK_FOREVER INT64_MAX
#define ULOCK_INTR    1u
UIPC_HIDDEN int ulock_acquire_until(struct ns *ns, struct ulock *l, int64_t deadline, unsigned flags);
/* the thread slot a held lock names (a tool names a stopped holder this
 * way), -1 if L is free; a number read from the arena: check it */
static inline int32_t ulock_holder(struct ulock *l)
{
	uint32_t w = (uint32_t)atomic_load_explicit(&l->word, memory_order_acquire) & ULOCK_SLOT_MASK;

	return (int32_t)w - 1;
}
UIPC_HIDDEN void ulock_release(struct ns *ns, struct ulock *l);
UIPC_HIDDEN void ulock_commit(struct ns *ns, struct ulock *l);
/* ulock_commit of a guarded section's partner (see j_guard); tests:
 * UIPC_TEST_KILL_BETWEEN_COMMITS=1 kills the process after it (no journaled
 * store lies there to fail at), =in-commit inside it, past its commit point */
UIPC_HIDDEN void ulock_commit_partner(struct ns *ns, struct ulock *l);
UIPC_HIDDEN void j_store(struct ns *ns, void *p, const void *val, unsigned size);
UIPC_HIDDEN void j_abort(struct ns *ns);
UIPC_HIDDEN void lock_recover_frame(struct ns *ns, struct jframe *f);
UIPC_HIDDEN void j_guard(struct ns *ns, const uint64_t *word, struct ulock *partner);
UIPC_HIDDEN void j_store_at_commit(struct ns *ns, uint64_t *word, uint64_t v);
UIPC_HIDDEN struct jentry *j_slot(struct ns *ns, struct jframe *f, uint32_t i, bool grow);
UIPC_HIDDEN void j_push(struct jframe *f, struct jentry *e, uint64_t where, uint64_t old);
UIPC_HIDDEN struct jframe *j_top(struct ns *ns);
UIPC_HIDDEN struct jframe *j_target(struct ns *ns, struct ulock *l);
UIPC_HIDDEN void j_target_restore(struct jframe *prev);
UIPC_HIDDEN void j_forget_held(void);

UIPC_HIDDEN void j_store_1(struct ns *ns, void *p, uint8_t v);
UIPC_HIDDEN void j_store_2(struct ns *ns, void *p, uint16_t v);
UIPC_HIDDEN void j_store_4(struct ns *ns, void *p, uint32_t v);
UIPC_HIDDEN void j_store_8(struct ns *ns, void *p, uint64_t v);

/* J_SET's dispatch: SIZE is a constant, so only one call is left, with the
 * value in a register */
static inline __attribute__((always_inline)) void j_set(struct ns *ns, void *p, const void *val,
							 unsigned size)
{
	union { uint8_t b; uint16_t h; uint32_t w; uint64_t q; } u;

	switch (size) {
	case 1: memcpy(&u.b, val, 1); j_store_1(ns, p, u.b); break;
	case 2: memcpy(&u.h, val, 2); j_store_2(ns, p, u.h); break;
	case 4: memcpy(&u.w, val, 4); j_store_4(ns, p, u.w); break;
	case 8: memcpy(&u.q, val, 8); j_store_8(ns, p, u.q); break;
	default:
		if (size % 8 == 0) {
			/* a wide store is journaled in 8-byte pieces */
			for (unsigned i = 0; i < size; i += 8) {
				memcpy(&u.q, (const char *)val + i, 8);
				j_store_8(ns, (char *)p + i, u.q);
			}
		} else {
			j_store(ns, p, val, size);
		}
		break;
	}
}

#define J_SET(ns, lv, v) do {                                    \
		__typeof__(lv) _jv = (v);                         \
		j_set((ns), &(lv), &_jv, sizeof(lv));             \
	} while (0)

/* ---- arena.c ---- */
/* POOL_SEM and POOL_SHM blocks are only ever reused for objects of the same
 * kind and are not zeroed on reuse: a caller that looked an object up just
 * before its removal may still take its lock (see newary, newseg) */
enum { POOL_GENERAL = 0, POOL_SEM = 1, POOL_SHM = 2, POOL_NR = 3 };
/* A block of 2^k bytes (k >= 6) starts at a multiple of min(2^k, page), and
 * its payload ARENA_BLK_HDR bytes later: who wants whole cache lines asks
 * for the bytes up to the next line more and starts there. */
#define ARENA_BLK_HDR 32u
UIPC_HIDDEN uoff_t arena_alloc(struct ns *ns, uint64_t size, int pool);
UIPC_HIDDEN uoff_t arena_alloc_raw(struct ns *ns, uint64_t size, int pool);
UIPC_HIDDEN uint64_t arena_block_gen(struct ns *ns, uoff_t off);
/* is [OFF, OFF+LEN) inside one allocated block (and the mapping)?  For
 * objects read from the arena: checked as a whole before use */
UIPC_HIDDEN bool arena_obj_fits(struct ns *ns, uoff_t off, uint64_t len);
/* the word that holds it: it changes only when the block is freed or
 * allocated again (a guard for j_guard); NULL for a bad offset */
UIPC_HIDDEN const uint64_t *arena_gen_word(struct ns *ns, uoff_t off);
UIPC_HIDDEN int arena_check(struct ns *ns, char *report, size_t len);
UIPC_HIDDEN void arena_free(struct ns *ns, uoff_t off);
UIPC_HIDDEN void arena_free_now(struct ns *ns, uoff_t off, struct jentry *mark);
UIPC_HIDDEN int arena_populate(struct ns *ns, uoff_t off, uint64_t len);
UIPC_HIDDEN void arena_init(struct uipc_hdr *h, uoff_t heap_start);
UIPC_HIDDEN int arena_populate_first(struct ns *ns);

/* ---- proc.c ---- */
UIPC_HIDDEN struct uthread *cur_thread_slow(struct ns *ns);
UIPC_HIDDEN extern __thread struct uthread *uipc_tls_thread;
UIPC_HIDDEN extern __thread struct ns *uipc_tls_ns;  /* the namespace of that slot */
/* what this thread writes into the locks it takes: that slot's generation
 * << 32 | its index + 1 (kept here, not read back from the arena) */
UIPC_HIDDEN extern __thread uint64_t uipc_tls_lockval;

/* this thread's slot, registered on first use: inline, since every lock
 * acquire asks (a call into proc.c cost more than the answer).  A slot of
 * a namespace the process has left (unshare) is not this one's. */
static inline struct uthread *cur_thread(struct ns *ns)
{
	struct uthread *t = uipc_tls_thread;

	return likely(t && uipc_tls_ns == ns) ? t : cur_thread_slow(ns);
}
UIPC_HIDDEN struct uproc *cur_proc(struct ns *ns);   /* NULL: no slot (ENOMEM) */
UIPC_HIDDEN int cur_pid_slow(void);
UIPC_HIDDEN extern pid_t uipc_pid;         /* cached getpid(), 0 in a new child */

static inline int cur_pid(void)
{
	pid_t pid = uipc_pid;

	return likely(pid) ? pid : cur_pid_slow();
}
UIPC_HIDDEN bool thread_alive(struct ns *ns, struct uthread *t);
/* is the holder a lock word names (thread slot SLOT in its incarnation GEN)
 * alive?  *WORD (NULL for a slot that does not exist) and *VAL: its alive
 * word and value, to sleep on until it dies */
UIPC_HIDDEN bool lock_holder_alive(struct ns *ns, uint32_t slot, uint32_t gen, uint32_t **word,
				   uint32_t *val);
/* thread slot IDX (a number read from the arena: checked), NULL: none */
static inline struct uthread *thread_at(struct ns *ns, uint32_t idx)
{
	if (idx >= MAX_THREADS)
		return NULL;
	return ns_ptr(ns, ns->lay.threads + (uoff_t)idx * sizeof(struct uthread),
		      sizeof(struct uthread));
}
UIPC_HIDDEN struct uproc *proc_at(struct ns *ns, uint32_t idx);
/* the exit work of this process (exit, _exit): every layer's proc_exit */
UIPC_HIDDEN void proc_exit_work(void);
/* the process ends now without libc's exit (a clone child whose function
 * returned: glibc ends it with the exit system call): its exit work, its
 * counts let go and its slots freed, as at exit */
UIPC_HIDDEN void proc_exit_now(void);
UIPC_HIDDEN bool proc_is_dead(struct ns *ns, struct uproc *p);
/* the futex word the kernel marks (FUTEX_OWNER_DIED, waking one sleeper
 * if FUTEX_WAITERS is set) when the process of slot P dies: the alive word
 * of one of its live threads; NULL when none is known (then only
 * proc_is_dead tells) */
UIPC_HIDDEN uint32_t *proc_alive_word(struct ns *ns, struct uproc *p);
/* a death seen on alive word W (value V: FUTEX_OWNER_DIED, with sleepers):
 * wake them all, once (the kernel woke one, which may be gone or busy
 * with something else) */
UIPC_HIDDEN void alive_word_wake_all(uint32_t *w, uint32_t v);
/*
 * The kernel's robust-list pending entry aimed at W (proc.c): should this
 * thread die before proc_pending_end, the kernel wakes one sleeper on W if
 * W's low 30 bits are 0 then.  Returns what the slot held, for
 * proc_pending_end, or PENDING_NOT_AIMED: no robust list (nothing aimed).
 */
#define PENDING_NOT_AIMED ((void *)1)   /* (an entry is never odd: see proc.c) */
UIPC_HIDDEN void *proc_pending_begin(_Atomic uint32_t *w);
UIPC_HIDDEN void proc_pending_end(void *prev);
UIPC_HIDDEN void proc_note_continue(void);
/* the exit work of the dead process P, unless someone else does it: true
 * if this call did it */
UIPC_HIDDEN bool proc_reap(struct ns *ns, struct uproc *p);
/*
 * Loans (layout.h): process slots a forking process claims and counts in
 * for its child-to-be.  proc_loan_open (prepare handler): a loan in NS, its
 * lock taken, or UINT32_MAX; proc_loan_cancel: given back before fork (its
 * counts undone by the exit hooks); proc_loans_forked (parent handler):
 * the parent's fds closed, the child holds the locks; proc_loans_result
 * (the fork wrapper, after it): CHILD's pid written into each loan, or, fork
 * failed (CHILD < 0), the loans given back; proc_loan_take (the child,
 * first thing): loan IDX of NS becomes its registration there (false: a
 * member rewrote it); proc_loans_child_done: the child's fds closed.
 */
UIPC_HIDDEN uint32_t proc_loan_open(struct ns *ns);
UIPC_HIDDEN void proc_loan_cancel(struct ns *ns, uint32_t idx);
UIPC_HIDDEN void proc_loans_forked(void);
UIPC_HIDDEN void proc_loans_result(pid_t child);
UIPC_HIDDEN bool proc_loan_take(struct ns *ns, uint32_t idx);
UIPC_HIDDEN void proc_loans_child_done(void);
/* unshare, setns: this thread leaves its namespace for NEW (mapped, not
 * entered), as the kernel moves the calling thread only.  Where it was the
 * last thread of the process in the old one, the kernel's exit_sem and
 * exit_shm run there (proc_leave hooks); attachments made there stay
 * counted there until their shmdt (the namespace stays mapped for them). */
UIPC_HIDDEN void proc_switch_ns(struct ns *new);
/* pthread_create: the namespace the new thread starts in when it is not
 * the process's (held for it), else NULL; in the new thread, start in it;
 * the creation failed: give it back */
UIPC_HIDDEN struct ns *proc_thread_ns_hold(void);
UIPC_HIDDEN void proc_thread_ns_start(struct ns *ns);
UIPC_HIDDEN void proc_thread_ns_unhold(struct ns *ns);
/* the last attachment of NS in this process is gone (shm.c): NS, if no
 * thread of ours is in it, is let go */
UIPC_HIDDEN void proc_ns_idle(struct ns *ns);
/* NS is reset in place for this process's unshare (nsfile.c): what the
 * process keeps of it is dropped, and its slots there given back, with no
 * exit work (nobody else can see NS) */
UIPC_HIDDEN void proc_forget_ns(struct ns *ns);
/* does the process still use NS's memory beyond its arena (ns_busy)? */
UIPC_HIDDEN bool proc_ns_busy(struct ns *ns);
/* setns into NS, the namespace this process is in: the SEM_UNDO
 * adjustments applied (every layer's proc_undo), the rest kept */
UIPC_HIDDEN void proc_undo_ns(struct ns *ns);
/* before an exec (entry/exec.c): the exit work of this process in every
 * namespace but the exec'ing thread's (attachments, other threads) */
UIPC_HIDDEN void proc_exec_prepare(void);
/* in the child of clone(CLONE_NEWIPC) (no CLONE_VM): start it in NEW;
 * ROBUST_HEAD, ROBUST_LEN: the cloning thread's get_robust_list; TID_ADDR:
 * where glibc keeps its tid (PR_GET_TID_ADDRESS), or NULL */
UIPC_HIDDEN void proc_clone_child(struct ns *new, void *robust_head, size_t robust_len,
				  pid_t *tid_addr);

/* ---- aionr.c: fs.aio-nr and fs.aio-max-nr of a namespace ---- */
/* fs.aio-max-nr of NS */
UIPC_HIDDEN uint64_t ns_aio_max_nr(struct ns *ns);
/* fs.aio-nr of NS (the events of its live processes' contexts) in *OUT.
 * 0 or -errno (its lock). */
UIPC_HIDDEN int ns_aio_nr(struct ns *ns, uint64_t *out);
/* N more events for a context of this process: 0, -EAGAIN past
 * fs.aio-max-nr, -ENOMEM (no process slot), or the lock's -errno */
UIPC_HIDDEN int ns_aio_reserve(struct ns *ns, uint64_t n);
/* give back N events of this process's (io_destroy) */
UIPC_HIDDEN void ns_aio_release(struct ns *ns, uint64_t n);
/* this process leaves NS (unshare, setns) with contexts made there, which
 * go on counting there: its slot there is kept for them (free_own_slot
 * asks ns_aio_keeps_slot).  The slot's index (its start time in
 * *STARTTIME), or UINT32_MAX when the process has no share there. */
UIPC_HIDDEN uint32_t ns_aio_depart(struct ns *ns, uint64_t *starttime);
UIPC_HIDDEN bool ns_aio_keeps_slot(struct ns *ns, struct uproc *p);
/* give back N events of contexts made in the namespace HELD maps, which
 * the process left (slot IDX, STARTTIME); the slot goes free with the
 * last if MAY_FREE.  ns_aio_readd_departed takes them again (an exec that
 * failed). */
UIPC_HIDDEN void ns_aio_release_departed(struct ns *held, uint32_t idx, uint64_t starttime,
					 uint64_t n, bool may_free);
UIPC_HIDDEN void ns_aio_readd_departed(struct ns *held, uint32_t idx, uint64_t starttime,
				       uint64_t n);

/* ---- cred.c: the caller's credentials, cached ---- */
struct ucred_cache {
	uid_t euid;
	gid_t egid;
	int ngroups;
	gid_t groups[256];
	uint64_t caps;             /* effective capabilities, low 64 bits */
	uint64_t caps_global;      /* the same, in the initial user namespace
				      only (the kernel's capable()) */
	int valid;
	int rel;                   /* to the owner user namespace (cred.c) */
};
UIPC_HIDDEN extern __thread struct ucred_cache uipc_tls_cred;
UIPC_HIDDEN extern __thread unsigned uipc_tls_cred_gen;
UIPC_HIDDEN extern _Atomic unsigned uipc_cred_gen;
UIPC_HIDDEN const struct ucred_cache *cur_cred_slow(void);

/* the caller's credentials as cached, without a call: NULL when they must
 * be asked again (a caller that cannot afford the call then takes the
 * path that can) */
static inline const struct ucred_cache *cur_cred_cached(void)
{
	unsigned gen = atomic_load_explicit(&uipc_cred_gen, memory_order_acquire);

	return likely(uipc_tls_cred.valid && uipc_tls_cred_gen == gen) ? &uipc_tls_cred : NULL;
}

/* the caller's credentials: inline, since every permission check of the
 * lock-free paths asks (the call cost as much as the two loads) */
static inline const struct ucred_cache *cur_cred(void)
{
	const struct ucred_cache *c = cur_cred_cached();

	return likely(c) ? c : cur_cred_slow();
}
/* the credentials may have changed (entry/'s set*id and capset wrappers) */
UIPC_HIDDEN void cred_invalidate(void);
/* the process may be in another user namespace now (unshare, setns, a
 * clone child's CLONE_NEWUSER): the cached one is forgotten as well */
UIPC_HIDDEN void cred_userns_changed(void);
UIPC_HIDDEN bool has_cap(int cap);
/* the kernel's capable(): the capability in the initial user namespace,
 * whoever owns the namespace (msgctl's CAP_SYS_RESOURCE, SHM_HUGETLB's
 * CAP_IPC_LOCK); has_cap is its ns_capable over the owner */
UIPC_HIDDEN bool has_cap_global(int cap);
/* a new namespace's owner user namespace: this process's (the header's) */
UIPC_HIDDEN void cred_note_owner(struct owner_userns *o);
/* the same, and the creator's euid as it sees it, without a system call
 * when that is the current namespace's owner (nsfile.c's init_tables) */
UIPC_HIDDEN void cred_note_creator(struct owner_userns *o, uint32_t *euid);
/* ids between the owner namespace's view (kept in objects) and the
 * caller's: for IPC_STAT; for IPC_SET (-EINVAL: no mapping) */
UIPC_HIDDEN uint32_t cred_id_for_caller(uint32_t id, bool gid);
/* the caller's euid as the initial user namespace sees it */
UIPC_HIDDEN uint32_t cred_global_euid(void);
UIPC_HIDDEN int cred_id_from_caller(uint32_t id, bool gid, uint32_t *out);

/* ---- small helpers ---- */

/* a pause in a spin loop */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__asm__ volatile("" ::: "memory");
#endif
}

/* CLOCK_MONOTONIC in nanoseconds (vDSO: no system call) */
static inline int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#endif /* UIPC_CORE_H */
