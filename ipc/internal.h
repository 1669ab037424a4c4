/*
 * internal.h - the shapes every uipc module shares: the namespace (arena)
 * header, offsets and bounds-checked access, robust locks with their journal
 * frames, the process and thread registry, and ipc_ids.
 *
 * Everything that lives in the arena is addressed by offsets (uoff_t) from
 * the start of the mapping, never by pointers, because every process maps
 * the namespace file at its own address.  Offset 0 means "none".
 */
#ifndef UIPC_INTERNAL_H
#define UIPC_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "uipc.h"

#define UIPC_HIDDEN __attribute__((visibility("hidden")))
#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

typedef uint64_t uoff_t;

/* ---- layout constants ---- */
#define UIPC_MAGIC          0x31534e4350495555ULL /* "UUIPCNS1" */
#define UIPC_LAYOUT_VERSION 6u
#define UIPC_PAGE           4096u

#define IPC_SEM_IDS 0
#define IPC_MSG_IDS 1
#define IPC_SHM_IDS 2
#define IPC_NR_IDS  3

/* kernel id layout (linux-semantics.md section 1) */
#define IPCMNI_SHIFT        15
#define IPCMNI              (1 << IPCMNI_SHIFT)
#define IPCMNI_EXT_SHIFT    24
#define IPCMNI_EXT          (1 << IPCMNI_EXT_SHIFT)
#define IPC_MIN_CYCLE       64
#define IPC_MIN_CYCLE_EXT   4096

/* kernel defaults (section 8) */
#define SEMMSL_DEF   32000
#define SEMMNS_DEF   1024000000
#define SEMOPM_DEF   500
#define SEMMNI_DEF   32000
#define SEMVMX_MAX   32767
#define SEMAEM_MAX   32767
#define SEMUME_DEF   500
#define SEMUSZ_DEF   20
#define MSGMAX_DEF   8192
#define MSGMNB_DEF   16384
#define MSGMNI_DEF   32000
#define SHMMNI_DEF   4096
#define SHMMAX_DEF   (~0UL - (1UL << 24))
#define SHMALL_DEF   (~0UL - (1UL << 24))

/* ---- robust lock, journal ---- */

/*
 * A lock in the arena: a robust, process-shared pthread mutex (the kernel
 * marks it owner-dead when its holder dies) plus the offset of the holder's
 * journal frame, so that the next locker can roll a dead holder's half-done
 * change back.
 */
struct ulock {
	pthread_mutex_t m;
	_Atomic uoff_t frame;
};

/* Is L free now (no holder, live or dead)?  A hint: it may change at once
 * (one load of the futex word; a committed state if so, see lock.c). */
static inline bool ulock_is_free(struct ulock *l)
{
	return __atomic_load_n((unsigned *)&l->m.__data.__lock, __ATOMIC_ACQUIRE) == 0;
}

/* One undo record: where (offset | size << 56 | kind << 60) and the old bytes. */
struct jentry {
	uint64_t where;
	uint64_t old;
};

#define J_KIND_STORE 0ULL  /* restore the old bytes on rollback */
#define J_KIND_ALLOC 1ULL  /* free the block (offset) on rollback */
#define J_KIND_FREE  2ULL  /* free the block after commit (redo on recovery) */
#define J_KIND_GUARD 3ULL  /* a word that changes only when a partner section
			      commits: changed at recovery, roll forward */
#define J_KIND_SETC  4ULL  /* store a value when the section commits (redone
			      on recovery of a committed frame) */
/* A GUARD entry's size field links it to its partner section's frame, a
 * frame of the same thread: J_PARTNER_NONE + (partner - this frame), or
 * J_PARTNER_NONE alone for none.  Found in its commit at recovery: roll
 * forward too. */
#define J_PARTNER_NONE 8

#define J_INLINE 16
#define J_CHUNK  4096

struct jchunk {
	uoff_t next;
	uint64_t pad;
	struct jentry e[J_CHUNK];
};

/*
 * A journal frame: the undo log of one critical section.  A thread has a
 * small stack of them, one per lock it holds at once (locks nest at most
 * JDEPTH deep: object lock -> process lock -> allocator lock).
 */
struct jframe {
	_Atomic uoff_t lock;       /* the lock this frame journals, 0 if idle */
	_Atomic uint32_t n;        /* entries recorded */
	_Atomic uint32_t committed;/* 1: roll forward (deferred frees) */
	uoff_t chunks;             /* overflow chunks, linked */
	struct jentry e[J_INLINE];
};

#define JDEPTH 4

/* ---- registry: processes and threads ----
 * Fixed tables of slots claimed with one compare-and-swap, so that a process
 * can register before it has any journal (which lives in its thread slot).
 * A slot's state word is (id << 8 | state), id being the pid or tid.
 */

enum { SLOT_FREE = 0, SLOT_CLAIMING = 1, SLOT_LIVE = 2, SLOT_DEAD = 3 };
#define SLOT_STATE(w) ((unsigned)((w) & 0xff))
#define SLOT_ID(w)    ((int32_t)((w) >> 8))
#define SLOT_WORD(id, st) (((uint64_t)(uint32_t)(id) << 8) | (st))

struct uthread {
	_Atomic uint64_t state;
	pthread_mutex_t alive;     /* held by the thread for its whole life */
	int32_t tid, pid;
	uint32_t proc;             /* index of the process slot */
	uint32_t depth;            /* unused (lock.c tracks its sections locally) */
	struct jframe frames[JDEPTH];
	uoff_t waitq;              /* this thread's semaphore wait entries */
	uint32_t waitq_seq;        /* waits so far: tells a late wakeup apart */
	uint32_t pad_wq;
};

struct uproc {
	_Atomic uint64_t state;
	pthread_mutex_t alive;     /* held by one live thread of the process */
	_Atomic int32_t alive_tid; /* that thread, 0 if none holds it now */
	_Atomic uint32_t cont_gen; /* SIGCONTs it went through (signals.c) */
	struct ulock lock;         /* protects the undo list */
	int32_t pid;
	uint32_t pad;
	uint64_t starttime;        /* /proc/PID/stat field 22: pid reuse guard */
	uoff_t undo;               /* struct sem_undo list (list_proc) */
};

#define MAX_PROCS   32768
#define MAX_THREADS 65536

/* ---- ids ---- */

/*
 * ipc_ids: one per IPC type.  entries[idx] holds the offset of the object at
 * idx (0 if free); used[] is a bitmap of the same; keys is an open-addressing
 * hash of (key << 32 | idx + 1) for objects whose key is not IPC_PRIVATE.
 */
struct ipc_ids {
	struct ulock lock;         /* the kernel's ids rwsem */
	int32_t in_use;
	uint32_t seq;
	int32_t max_idx;
	int32_t last_idx;
	int32_t next_id;
	uint32_t pad;
	uoff_t entries;            /* uoff_t[ipcmni], sparse */
	uoff_t used;               /* uint64_t bitmap[ipcmni/64] */
	uoff_t keys;               /* uint64_t[keys_cap] */
	uint32_t keys_cap;
	uint32_t keys_used;
	uint32_t keys_tombs;
	uint32_t pad2;
	uoff_t populated;          /* bitmap of populated pages of entries[] */
	_Atomic uint64_t wseq;     /* bumped at every release of the lock */
};

/* kern_ipc_perm, at the start of every object; every object's own lock (the
 * kernel's kern_ipc_perm.lock: sem's array lock, msg's and shm's object
 * lock) comes right after it, see ipc_obj_lock() */
struct uperm {
	int32_t key;
	int32_t id;
	uint32_t uid, gid, cuid, cgid;
	uint32_t mode;
	_Atomic uint32_t deleted;
	uint32_t type;             /* IPC_*_IDS, a guard against confusion */
	uint32_t pad;
};

static inline struct ulock *ipc_obj_lock(struct uperm *p)
{
	return (struct ulock *)(p + 1);
}

/* ---- namespace header ---- */

struct uipc_limits {
	int32_t semmsl, semmns, semopm, semmni;
	int64_t msgmax, msgmnb, msgmni;
	uint64_t shmmax, shmall, shmmni;
	int32_t shm_rmid_forced;
	int32_t pad;
};

struct alloc_state {
	struct ulock lock;
	uoff_t brk;                /* next never-used byte */
	uoff_t populated;          /* bytes below this are backed by memory */
	uoff_t free[3][40];        /* per pool, per size class (2^class bytes) */
	uint64_t used;             /* bytes handed out */
	uint64_t gen;              /* allocation generation counter */
};

#define NS_FLAG_EXTENDED 1u

/*
 * The spare segment files of a namespace (shm.c): files of destroyed
 * segments, truncated to 0 and kept under their name for the next shmget,
 * which then creates no directory entry.  Under the shm ids lock.
 */
#define SHM_POOL_CAP 16
struct shm_spare {
	uint64_t file;             /* the file's number: NSFILE.shm-<file> */
	uint32_t state;            /* SPARE_* (shm.c) */
	uint32_t holder;           /* DIRTY: the process slot truncating it */
	int32_t holder_pid;
	uint32_t pad;
};

struct shm_pool {
	uint64_t next_file;        /* the next new file's number (0: not seeded) */
	uint32_t n;                /* entries in use */
	uint32_t pad;
	struct shm_spare e[SHM_POOL_CAP];
};

struct uipc_hdr {
	_Atomic uint64_t magic;    /* written last at creation */
	uint32_t version;
	uint32_t hdr_size;
	uint64_t arena_size;
	uint32_t flags;
	uint32_t ipcmni_shift;
	int32_t ipcmni;
	int32_t min_cycle;
	uint32_t creator_uid;
	uint32_t mode;
	uint64_t heap_start;
	uoff_t msg_retired;        /* removed message queues, kept for reuse (msg.c) */

	struct ulock ns_lock;      /* limits, used_sems and other ns-wide counters */
	struct uipc_limits lim;
	int64_t used_sems;
	uint64_t shm_tot;
	struct shm_pool shm_pool;  /* under the shm ids lock */

	uoff_t procs;              /* struct uproc[MAX_PROCS], sparse */
	uoff_t threads;            /* struct uthread[MAX_THREADS], sparse */
	_Atomic uint32_t procs_hwm;
	_Atomic uint32_t threads_hwm;

	struct alloc_state alloc;
	struct ipc_ids ids[IPC_NR_IDS];
};

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

static inline uoff_t ns_off(struct ns *ns, const void *p)
{
	return p ? (uoff_t)((const char *)p - ns->base) : 0;
}

/*
 * The blocking calls begin where their entry point reads the program's
 * handler count (uipc_handler_gen, one load, its first instruction): from
 * there a handler that runs interrupts a sleep, as the kernel's pending
 * signal does once the system call has begun.  The libc names
 * (syscalls.c) and the uipc_ ones both read it and call these, so that no
 * PLT jump lies before that point.
 */
UIPC_HIDDEN int sem_semtimedop_from(unsigned hand0, int semid, struct sembuf *sops, size_t nsops,
				    const struct timespec *timeout, bool has_timeout);
UIPC_HIDDEN int msg_msgsnd_from(unsigned hand0, int msqid, const void *msgp, size_t msgsz,
				int msgflg);
UIPC_HIDDEN ssize_t msg_msgrcv_from(unsigned hand0, int msqid, void *msgp, size_t msgsz,
				    long msgtyp, int msgflg);

/* ---- namespace.c ---- */
UIPC_HIDDEN struct ns *ns_get(void);          /* the current ns; NULL + errno */
UIPC_HIDDEN int ns_mlockall(int flags);      /* mlockall, the arena left out */
UIPC_HIDDEN int ns_munlockall(void);
UIPC_HIDDEN void ns_corrupt(struct ns *ns, const char *what);
UIPC_HIDDEN int64_t ipc_now(void);

/* ---- lock.c ---- */
UIPC_HIDDEN int ulock_init(struct ulock *l);
UIPC_HIDDEN int ulock_acquire(struct ns *ns, struct ulock *l);
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
UIPC_HIDDEN uoff_t arena_alloc(struct ns *ns, uint64_t size, int pool);
UIPC_HIDDEN uoff_t arena_alloc_raw(struct ns *ns, uint64_t size, int pool);
UIPC_HIDDEN uint64_t arena_block_gen(struct ns *ns, uoff_t off);
/* the word that holds it: it changes only when the block is freed or
 * allocated again (a guard for j_guard); NULL for a bad offset */
UIPC_HIDDEN const uint64_t *arena_gen_word(struct ns *ns, uoff_t off);
UIPC_HIDDEN int arena_check(struct ns *ns, char *report, size_t len);
UIPC_HIDDEN void arena_free(struct ns *ns, uoff_t off);
UIPC_HIDDEN void arena_free_now(struct ns *ns, uoff_t off, struct jentry *mark);
UIPC_HIDDEN int arena_populate(struct ns *ns, uoff_t off, uint64_t len);
UIPC_HIDDEN void arena_init(struct uipc_hdr *h, uoff_t heap_start);

/* ---- proc.c ---- */
UIPC_HIDDEN struct uthread *cur_thread_slow(struct ns *ns);
UIPC_HIDDEN extern __thread struct uthread *uipc_tls_thread;

/* this thread's slot, registered on first use: inline, since every lock
 * acquire asks (a call into proc.c cost more than the answer) */
static inline struct uthread *cur_thread(struct ns *ns)
{
	struct uthread *t = uipc_tls_thread;

	return likely(t) ? t : cur_thread_slow(ns);
}
UIPC_HIDDEN struct uproc *cur_proc(struct ns *ns);
UIPC_HIDDEN int cur_pid(void);
UIPC_HIDDEN bool thread_alive(struct ns *ns, struct uthread *t);
UIPC_HIDDEN struct uproc *proc_at(struct ns *ns, uint32_t idx);
UIPC_HIDDEN void proc_exit_work(void);
UIPC_HIDDEN bool proc_is_dead(struct ns *ns, struct uproc *p);
UIPC_HIDDEN void proc_note_continue(void);
UIPC_HIDDEN bool tid_is_registered(struct ns *ns, pid_t tid);
UIPC_HIDDEN void proc_reap(struct ns *ns, struct uproc *p);
UIPC_HIDDEN void ns_open_for_fork(void);

/* ---- util.c: ids, keys, permissions ---- */
struct ipc_ops {
	int (*getnew)(struct ns *ns, key_t key, int flg, long arg);
	int (*more_checks)(struct ns *ns, struct uperm *p, long arg);
};
UIPC_HIDDEN int ipcget(struct ns *ns, int type, key_t key, int flg, long arg,
		       const struct ipc_ops *ops);
UIPC_HIDDEN int ids_lock(struct ns *ns, int type);
UIPC_HIDDEN void ids_unlock(struct ns *ns, int type);
UIPC_HIDDEN bool ids_read_begin(struct ns *ns, int type, uint64_t *seq);
UIPC_HIDDEN bool ids_read_end(struct ns *ns, int type, uint64_t seq);
UIPC_HIDDEN int ipc_addid(struct ns *ns, int type, struct uperm *p, int limit);
UIPC_HIDDEN void ipc_rmid(struct ns *ns, int type, struct uperm *p);
UIPC_HIDDEN struct uperm *ipc_obtain(struct ns *ns, int type, int id);
UIPC_HIDDEN struct uperm *ipc_obtain_check(struct ns *ns, int type, int id, int *err);
/* P, found in its table under the ids lock, removed?  (a dead holder of
 * its lock is rolled back first: ipc_settle in util.c) */
UIPC_HIDDEN bool ipc_removed(struct ns *ns, struct uperm *p);
UIPC_HIDDEN int ipc_get_maxidx(struct ns *ns, int type);
UIPC_HIDDEN int ipc_ids_check(struct ns *ns, int type, char *report, size_t len, size_t *used);
UIPC_HIDDEN struct uperm *ipc_obtain_for_stat(struct ns *ns, int type, int id, bool by_index,
					      bool any, int *err);
UIPC_HIDDEN int ipcperms(struct uperm *p, int flag);
UIPC_HIDDEN bool ipc_owner_or_admin(struct uperm *p);
UIPC_HIDDEN void ipc_update_perm(struct ns *ns, struct uperm *p, const struct ipc_perm *in);
UIPC_HIDDEN void ipc_fill_perm(struct ns *ns, const struct uperm *p, struct ipc_perm *out);
UIPC_HIDDEN int ipc_ids_init(struct ns *ns, int type, uoff_t entries, uoff_t used,
			     uoff_t populated);

/* credentials of the caller, cached (syscalls.c invalidates on set*id) */
struct ucred_cache {
	uid_t euid;
	gid_t egid;
	int ngroups;
	gid_t groups[256];
	uint64_t caps;             /* effective capabilities, low 64 bits */
	int valid;
};
UIPC_HIDDEN const struct ucred_cache *cur_cred(void);
UIPC_HIDDEN void cred_invalidate(void);
UIPC_HIDDEN bool has_cap(int cap);

/* ---- sem.c ---- */
UIPC_HIDDEN void sem_exit_proc(struct ns *ns, struct uproc *p);
UIPC_HIDDEN int sem_array_bytes(int nsems);
/* fsck (uipc_ns_check): one object's invariants, checked under its lock;
 * the number of problems, appended to REPORT at *USED */
UIPC_HIDDEN int sem_check_obj(struct ns *ns, struct uperm *p, char *report, size_t len, size_t *used);
UIPC_HIDDEN int msg_check_obj(struct ns *ns, struct uperm *p, char *report, size_t len, size_t *used);
UIPC_HIDDEN int shm_check_obj(struct ns *ns, struct uperm *p, char *report, size_t len, size_t *used);
UIPC_HIDDEN int shm_check_tot(struct ns *ns, char *report, size_t len, size_t *used);

/* ---- shm.c ---- */
UIPC_HIDDEN void shm_exit_proc(struct ns *ns, struct uproc *p); /* exit, reaper */
UIPC_HIDDEN void shm_note_exec(uint32_t proc_idx);  /* register_proc after exec */
/* the segment files' fds shm.c keeps (syscalls.c's close/dup2/... hooks) */
UIPC_HIDDEN bool shm_fd_guarded(int fd);
UIPC_HIDDEN int shm_fd_next_guarded(unsigned lo);
UIPC_HIDDEN void shm_fd_evict(int fd);
UIPC_HIDDEN void shm_note_umask(mode_t m);
/* the application's own munmap/mmap/mremap/mprotect (attachments are vmas) */
UIPC_HIDDEN int shm_hook_munmap(void *addr, size_t len);
UIPC_HIDDEN void *shm_hook_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
UIPC_HIDDEN void *shm_hook_mremap(void *old, size_t olen, size_t nlen, int flags, void *naddr);
UIPC_HIDDEN int shm_hook_mprotect(void *addr, size_t len, int prot);
UIPC_HIDDEN int shm_hook_mlock(void *addr, size_t len, int flags);
UIPC_HIDDEN int shm_hook_munlock(void *addr, size_t len);
UIPC_HIDDEN int shm_hook_madvise(void *addr, size_t len, int advice);
UIPC_HIDDEN int shm_hook_mlockall(int flags);
UIPC_HIDDEN int shm_hook_munlockall(void);
UIPC_HIDDEN void shm_fork_child(void);              /* atfork child */
UIPC_HIDDEN void shm_destroy_orphaned(struct ns *ns); /* shm_rmid_forced set to 1 */

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

/* errno helpers: internal functions return -errno */
static inline long set_errno_ret(long r)
{
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

#endif /* UIPC_INTERNAL_H */
