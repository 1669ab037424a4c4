/*
 * core/layout.h - every structure that lives in a namespace file, and the
 * constants that fix their shape (UIPC_LAYOUT_VERSION).  A change here is a
 * change of the on-file format: bump the version.
 *
 * Everything that lives in the arena is addressed by offsets (uoff_t) from
 * the start of the mapping, never by pointers, because every process maps
 * the namespace file at its own address.  Offset 0 means "none".
 *
 * The file holds core/'s structures (the allocator, locks and journal
 * frames, the process and thread registry) and those of the layers above
 * (ipc_ids, kern_ipc_perm, the IPC limits, the shm spare-file pool): one
 * format, declared in one place.
 */
#ifndef UIPC_CORE_LAYOUT_H
#define UIPC_CORE_LAYOUT_H

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
#define UIPC_LAYOUT_VERSION 15u
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
#define AIO_MAX_NR_DEF 65536  /* fs.aio-max-nr */

/* ---- locks, journal ---- */

/*
 * A lock in the arena: one 64-bit word and the offset of the holder's
 * journal frame, so that the next locker can roll a dead holder's half-done
 * change back.  The word is 0 when the lock is free; held, it names the
 * holder: its thread slot's generation in the high half and, in the low
 * half (the futex word waiters sleep on), the slot's index + 1 and
 * ULOCK_WAITERS when someone sleeps on it.  Only numbers: nothing in a lock
 * is ever followed as a pointer, by uipc, libc or the kernel.  A holder's
 * death is learnt from its thread slot's alive word (struct uthread), which
 * the kernel marks; see lock.c.
 */
struct ulock {
	_Atomic uint64_t word;
	_Atomic uoff_t frame;
};

#define ULOCK_WAITERS   0x80000000u
#define ULOCK_SLOT_MASK 0x7fffffffu

/* the futex word of L: the low half of its word */
static inline uint32_t *ulock_futex(struct ulock *l)
{
	return (uint32_t *)&l->word + (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
}

/* Is L free now (no holder, live or dead)?  A hint: it may change at once
 * (one load of the word; a committed state if so, see lock.c). */
static inline bool ulock_is_free(struct ulock *l)
{
	return (atomic_load_explicit(&l->word, memory_order_acquire) & ULOCK_SLOT_MASK) == 0;
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
 * A slot's state word is (id << 8 | state), id being the pid or tid; a
 * thread slot's also carries its generation (bits 40-63), counted up at
 * every claim, so that a lock word names one incarnation of a slot.
 */

enum { SLOT_FREE = 0, SLOT_CLAIMING = 1, SLOT_LIVE = 2, SLOT_DEAD = 3, SLOT_LOAN = 4 };

/*
 * A loan (process slots only): a slot a forking process claimed for its
 * child-to-be, in which it counted the attachments the child inherits
 * before fork, as the kernel counts them inside fork (ipc/shm.c).  Its id
 * is the child's pid once the parent knows it, 0 before.  What keeps it is
 * an OFD read lock on byte LOAN_LOCK_BASE + slot of the namespace file,
 * taken by the parent before fork through a file description of its own,
 * which the child inherits: the lock is there while the parent (before
 * fork) or the child (until it takes the slot over, LOAN -> LIVE) lives,
 * and goes with the last of them, however they go.  A loan whose byte is
 * not locked is dead: a reaper gives its counts back (core/proc.c).
 */
#define LOAN_LOCK_BASE (1LL << 40)
#define SLOT_STATE(w) ((unsigned)((w) & 0xff))
#define SLOT_ID(w)    ((int32_t)((w) >> 8))
#define SLOT_WORD(id, st) (((uint64_t)(uint32_t)(id) << 8) | (st))
#define SLOT_GEN_SHIFT 40
#define SLOT_GEN_MASK  0xffffffu
#define SLOT_GEN(w)    ((uint32_t)((w) >> SLOT_GEN_SHIFT) & SLOT_GEN_MASK)
#define SLOT_WORD_GEN(gen, id, st) \
	(((uint64_t)((gen) & SLOT_GEN_MASK) << SLOT_GEN_SHIFT) | SLOT_WORD(id, st))

/*
 * A thread slot.  Two share a page, and the page's last 24 bytes (the tail
 * of the second slot) hold their two alive words: a robust futex word per
 * thread, its tid while it lives, which the kernel marks owner-dead
 * (FUTEX_OWNER_DIED) when the thread dies.  The kernel finds a thread's
 * words through a list in that thread's memory, at a fixed distance past
 * each word (glibc's robust mutex list, 32 bytes on 64-bit): each process
 * maps the page of each of its threads' slots a second time, followed by a
 * private page, so that for a word at the end of a page that distance
 * lands in private memory (proc.c).  Other processes sleep on the same word
 * through their ordinary mapping.
 */
#define UTHREAD_SIZE 2048u

struct uthread {
	_Atomic uint64_t state;    /* SLOT_WORD_GEN(gen, tid, SLOT_*) */
	int32_t tid, pid;
	uint32_t proc;             /* index of the process slot */
	uint32_t depth;            /* a scratch word: proc.c proves a second
				      mapping of the slot with it */
	struct jframe frames[JDEPTH];
	uoff_t waitq;              /* this thread's semaphore wait entries */
	uint32_t waitq_seq;        /* waits so far: tells a late wakeup apart */
	/* a sleep on a semaphore without queueing (ipc/sem.c: semop_presleep):
	 * the futex word it sleeps on, armed with a token of its own and set
	 * to a value without owner bits by the one who wakes it; the
	 * semaphore (arena offset) and this slot's state word then, which
	 * tell a registration of a thread that has gone from a live one; the
	 * operation's sem_op (GETNCNT counts it while the value forbids it) */
	_Atomic uint32_t presleep;
	uoff_t presleep_on;
	uint64_t presleep_tword;
	int32_t presleep_op;
	uint32_t pad_ps;
	char pad[UTHREAD_SIZE - 24 - 24 - JDEPTH * sizeof(struct jframe) - 40];
	/* in the second slot of a page: the alive words of the first ([0],
	 * page offset 4072) and of the second ([4], 4088); see uthread_alive */
	_Atomic uint32_t page_alive[6];
};

_Static_assert(sizeof(struct uthread) == UTHREAD_SIZE, "two thread slots a page");
_Static_assert(offsetof(struct uthread, page_alive) == UTHREAD_SIZE - 24, "alive words end the page");

/* the alive word of thread slot T: in the page's last 24 bytes (the table
 * is page-aligned, a slot UTHREAD_SIZE-aligned) */
static inline _Atomic uint32_t *uthread_alive(struct uthread *t)
{
	uintptr_t a = (uintptr_t)t;
	uintptr_t page_end = (a | (UIPC_PAGE - 1)) + 1;

	return (_Atomic uint32_t *)(page_end - ((a & UTHREAD_SIZE) ? 8 : 24));
}

struct uproc {
	_Atomic uint64_t state;
	/* thread slot + 1 of a live thread of the process whose alive word
	 * stands for the process's (the kernel marks it when the process
	 * dies); 0 if none */
	_Atomic uint32_t holder;
	_Atomic uint32_t cont_gen; /* SIGCONTs it went through (signals.c) */
	struct ulock lock;         /* protects the undo list */
	int32_t pid;
	uint32_t pad;
	uint64_t starttime;        /* /proc/PID/stat field 22: pid reuse guard */
	uoff_t undo;               /* struct sem_undo list (list_proc) */
	uint64_t aio_nr;           /* events of its AIO contexts: its share of
				    * fs.aio-nr (core/aionr.c, ns_lock) */
};

#define MAX_PROCS   32768
#define MAX_THREADS 32768

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
	uoff_t keys;               /* the key table's block (util.c: keys_table) */
	uint32_t keys_cap;
	uint32_t keys_used;
	uint32_t keys_tombs;
	uint32_t pad2;
	uoff_t populated;          /* bitmap of populated pages of entries[] */
	_Atomic uint64_t wseq;     /* bumped at every release of the lock */
	uint64_t spare[4];         /* to 128 bytes: ids[t] is a shift away */
};

_Static_assert(sizeof(struct ipc_ids) == 128, "the lock-free paths index ids[] by a shift");

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
	uint64_t aio_max_nr;       /* fs.aio-max-nr (core/aionr.c) */
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
	uint64_t next_file;        /* anonymous namespaces only: the last segment number (shm.c) */
	uint32_t n;                /* entries in use */
	uint32_t pad;
	struct shm_spare e[SHM_POOL_CAP];
};

/*
 * The user namespace that owns a namespace: its creator's, as the kernel's
 * IPC namespace is owned by the user namespace of the task that made it.
 * Credentials are judged as seen from it (core/cred.c): a process in a
 * user namespace made later has no capability over it and is judged by
 * the ids its own maps give outside.  The creator's maps are kept for
 * callers in the initial user namespace, an ancestor of every other.
 */
#define OWNER_MAP_MAX 5
struct owner_extent {
	uint32_t first;            /* ids inside the owner namespace */
	uint32_t lower;            /* ... are these in its parent */
	uint32_t count;
};

struct owner_userns {
	uint64_t ino;              /* inode of its /proc/PID/ns/user */
	uint32_t nuid, ngid;       /* extents below (0: the initial namespace) */
	struct owner_extent uid_map[OWNER_MAP_MAX], gid_map[OWNER_MAP_MAX];
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
	struct owner_userns owner; /* set at creation (core/cred.c) */

	/* an anonymous namespace (nsfile.c): may anyone but the process that
	 * made it hold its memfd (ANON_SHARED), and who made it (uipc ns ls) */
	_Atomic uint32_t anon_share;
	int32_t creator_pid;
};

/* anon_share: only the creator holds it (it may be reset in place for the
 * creator's next unshare), someone else may, or it is being reset */
enum { ANON_PRIVATE = 0, ANON_SHARED = 1, ANON_RECYCLING = 2 };

#endif /* UIPC_CORE_LAYOUT_H */
