/*
 * ipc/ipc.h - the System V IPC layer: what the kernel's ipc/ holds, and its
 * util.h.
 *
 * Owns: ids and keys with the generic *get and the ipc_perm checks
 * (util.c), semaphores (sem.c), message queues (msg.c, with the lock-free
 * ring in msgring.c), shared memory (shm.c), and the IPC namespace: its
 * tables and limits at creation, the sysctls, fsck and statistics
 * (namespace.c).
 * May call: core/ (core/core.h) and libc.  Never entry/ or aio/.
 * Gives entry/: the ksys_* calls below, one per system call, and shm.c's
 * hooks for the program's memory-map and fd calls.
 * Returns: 0 or -errno (ksys_shmat: the address or -errno), never errno;
 * entry/ turns results into the libc convention.
 *
 * Lock order (docs/internals.md): an ids lock, then an object's lock, then
 * a process lock, then the allocator's.
 */
#ifndef UIPC_IPC_H
#define UIPC_IPC_H

#include <linux/capability.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <time.h>

#include "core/core.h"

/* the time stamps of *_ds (seconds) */
static inline int64_t ipc_now(void)
{
	return (int64_t)time(NULL);
}

/* ---- walking a list read from the arena ----
 *
 * Another member may link a list to itself (or in any loop).  Every walk
 * keeps a count bounded by what this process knows (a namespace's threads,
 * ids, ...), and this cycle check (Brent's: a mark moved at powers of two),
 * which ends a looping walk within about twice the loop's length for one
 * compare per step.  walk_loops(&w, o) before following O: true if the
 * walk came back to where it was.
 */
struct walk {
	uoff_t mark;
	uint32_t n, lim;
};
#define WALK_INIT { 0, 0, 1 }

static inline bool walk_loops(struct walk *w, uoff_t o)
{
	if (unlikely(o == w->mark))
		return true;
	if (unlikely(++w->n == w->lim)) {
		w->mark = o;
		w->lim *= 2;
		w->n = 0;
	}
	return false;
}

/* ---- the system calls, for entry/ ----
 *
 * The blocking calls begin where their entry point reads the program's
 * handler count (uipc_handler_gen(), one load, its first instruction):
 * from there a handler that runs interrupts a sleep, as the kernel's pending
 * signal does once the system call has begun.  So they take that count,
 * HAND0, from their caller, and no call lies before that point.
 */
UIPC_HIDDEN int ksys_semget(key_t key, int nsems, int semflg);
UIPC_HIDDEN int ksys_semtimedop(unsigned hand0, int semid, struct sembuf *sops, size_t nsops,
				const struct timespec *timeout, bool has_timeout);
/* ARG is the raw system call's fourth argument: the value for SETVAL, a
 * pointer for the others */
UIPC_HIDDEN int ksys_semctl(int semid, int semnum, int cmd, unsigned long arg);
UIPC_HIDDEN int ksys_msgget(key_t key, int msgflg);
UIPC_HIDDEN int ksys_msgsnd(unsigned hand0, int msqid, const void *msgp, size_t msgsz,
			    int msgflg);
UIPC_HIDDEN ssize_t ksys_msgrcv(unsigned hand0, int msqid, void *msgp, size_t msgsz,
				long msgtyp, int msgflg);
UIPC_HIDDEN int ksys_msgctl(int msqid, int cmd, struct msqid_ds *buf);
UIPC_HIDDEN int ksys_shmget(key_t key, size_t size, int shmflg);
UIPC_HIDDEN long ksys_shmat(int shmid, const void *shmaddr, int shmflg);
UIPC_HIDDEN int ksys_shmdt(const void *shmaddr);
UIPC_HIDDEN int ksys_shmctl(int shmid, int cmd, struct shmid_ds *buf);

/* ---- namespace.c: the IPC namespace (include/uipc.h's calls) ---- */
UIPC_HIDDEN int ipc_ns_stats(struct uipc_ns_stats *st);
UIPC_HIDDEN int ipc_ns_info(int fd, struct uipc_ns_info *info);
/* fsck: the number of problems found, or -errno */
UIPC_HIDDEN int ipc_ns_check(char *report, size_t len);
UIPC_HIDDEN int ipc_sysctl_get(const char *name, char *buf, size_t len);
UIPC_HIDDEN int ipc_sysctl_set(const char *name, const char *value);
/* a write of LEN bytes of BUF to /proc/sys/kernel/NAME, parsed as the
 * kernel's proc handlers do: the bytes consumed, or -errno (EINVAL for a
 * bad first value, ERANGE for semmni; -ENOENT: not an IPC sysctl) */
UIPC_HIDDEN ssize_t ipc_sysctl_write(const char *name, const char *buf, size_t len);
/* is NAME ("kernel.msgmax" or "/proc/sys/kernel/msgmax") an IPC sysctl? */
UIPC_HIDDEN bool ipc_sysctl_known(const char *name);
/* a sysctl no one may write (fs.aio-nr: 0444 on the kernel) */
UIPC_HIDDEN bool ipc_sysctl_read_only(const char *name);
/*
 * /proc/sysvipc/{sem,msg,shm} (TYPE: IPC_SEM_IDS, ...): the kernel's text,
 * header and one line per object of the caller's namespace, handed to EMIT
 * a line at a time.  0, or the first non-zero EMIT result, or -errno.
 */
typedef int (*ipc_emit_fn)(void *arg, const char *text, size_t len);
UIPC_HIDDEN int ipc_proc_show(int type, ipc_emit_fn emit, void *arg);

/* ---- util.c: ids, keys, permissions ---- */
struct ipc_ops {
	int (*getnew)(struct ns *ns, key_t key, int flg, long arg);
	int (*more_checks)(struct ns *ns, struct uperm *p, long arg);
};
UIPC_HIDDEN int ipcget(struct ns *ns, int type, key_t key, int flg, long arg,
		       const struct ipc_ops *ops);
UIPC_HIDDEN int ids_lock(struct ns *ns, int type);
UIPC_HIDDEN void ids_unlock(struct ns *ns, int type);
/* P's id, stored only at the commit of the caller's section (-1 until
 * then: lookups by id and *_STAT by index pass it by), see util.c */
UIPC_HIDDEN int ipc_addid_at_commit(struct ns *ns, int type, struct uperm *p, int limit);
UIPC_HIDDEN void ipc_rmid(struct ns *ns, int type, struct uperm *p);
/* P, found in its table under the ids lock, removed?  (a dead holder of
 * its lock is rolled back first: ipc_settle in util.c) */
UIPC_HIDDEN bool ipc_removed(struct ns *ns, struct uperm *p);
/* the kernel's ipc_set_key_private: P's key no longer finds it (ids lock
 * held, journaled) */
UIPC_HIDDEN void ipc_set_key_private(struct ns *ns, int type, struct uperm *p);
UIPC_HIDDEN int ipc_get_maxidx(struct ns *ns, int type);
UIPC_HIDDEN int ipc_ids_check(struct ns *ns, int type, char *report, size_t len, size_t *used);
UIPC_HIDDEN struct uperm *ipc_obtain_for_stat(struct ns *ns, int type, int id, bool by_index,
					      bool any, int *err);
UIPC_HIDDEN bool cred_in_group(const struct ucred_cache *c, gid_t g);
UIPC_HIDDEN bool ipc_owner_or_admin(struct uperm *p);
UIPC_HIDDEN int ipc_update_perm(struct ns *ns, struct uperm *p, const struct ipc_perm *in);
UIPC_HIDDEN void ipc_fill_perm(struct ns *ns, const struct uperm *p, struct ipc_perm *out);
UIPC_HIDDEN int ipc_ids_init(struct ns *ns, int type, uoff_t entries, uoff_t used,
			     uoff_t populated);

/* ---- validate.c: objects checked as a whole (see there) ---- */
struct fits_memo {
	const void *p;
	uint64_t len;
};
UIPC_HIDDEN extern __thread struct fits_memo ipc_fits_memo[4];
UIPC_HIDDEN bool ipc_obj_fits_slow(struct ns *ns, const void *p, uint64_t len,
				   struct fits_memo *m);

/*
 * Is [P, P+LEN) an object inside its block (arena_obj_fits)?  The answer
 * for the last objects this thread checked is remembered: a semop or a
 * msgsnd checks its object at each call, and the block header is another
 * load and a call.  A remembered answer still has to lie inside the
 * current mapping (a namespace mapped anew is checked again).
 */
static inline bool ipc_obj_fits(struct ns *ns, const void *p, uint64_t len)
{
	struct fits_memo *m = &ipc_fits_memo[((uintptr_t)p >> 6) & 3];

	if (likely(m->p == p && m->len >= len &&
		   (uint64_t)((const char *)p - ns->base) + len <= ns->size))
		return true;
	return ipc_obj_fits_slow(ns, p, len, m);
}

/* ---- validate.c: sizes this process was told (see there) ---- */
/* 0, remembering SIZE if none was known; -EIDRM: another size was known */
UIPC_HIDDEN int ipc_seen_size(struct ns *ns, int type, int id, uint64_t size);
UIPC_HIDDEN void ipc_seen_forget(struct ns *ns, int type, int id);
UIPC_HIDDEN void ipc_seen_forget_all(void);
/* a fork child: the table's lock, taken for the fork, is free again */
UIPC_HIDDEN void ipc_seen_fork_prepare(void);
UIPC_HIDDEN void ipc_seen_fork_parent(void);
UIPC_HIDDEN void ipc_seen_fork_child(void);

/* the fixed part of each type's object (sem: without its semaphores),
 * for util.c's lookups: an object found in an id table is inside the
 * mapping as a whole before anyone reads a field of it.  Constants, so
 * that a lookup costs no load; sem.c, msg.c and shm.c assert them. */
#define SEM_OBJ_SIZE 136u          /* sizeof(struct sem_array) */
#define MSG_OBJ_SIZE 240u          /* sizeof(struct msg_queue) */
#define SHM_OBJ_SIZE 152u          /* sizeof(struct shmid_kernel) */

/*
 * The lookups and the permission check of every call, inline: the lock-free
 * paths (semop, a ring message) are a few dozen instructions of real work,
 * and the calls, frames and repeated loads of these helpers as functions
 * of util.c cost as much again (callgrind, issue 18).
 */

/* a lock-free reader of TYPE's table: begin reads the table's write count
 * (false while a writer holds the ids lock: an object may be half made);
 * end says whether nothing changed in between */
static inline bool ids_read_begin(struct ns *ns, int type, uint64_t *seq)
{
	struct ipc_ids *ids = &ns->hdr->ids[type];

	*seq = atomic_load_explicit(&ids->wseq, memory_order_acquire);
	return ulock_is_free(&ids->lock);
}

static inline bool ids_read_end(struct ns *ns, int type, uint64_t seq)
{
	struct ipc_ids *ids = &ns->hdr->ids[type];

	atomic_thread_fence(memory_order_acquire);
	return ulock_is_free(&ids->lock) &&
	       atomic_load_explicit(&ids->wseq, memory_order_relaxed) == seq;
}

/* the table slot of index IDX (bounds checked), NULL if out of range.  The
 * tables are where this process computed them, inside the mapping
 * (nsfile.c's check_header), so an index below ipcmni is all to check. */
static inline _Atomic uoff_t *ipc_entry_slot(struct ns *ns, int type, int idx)
{
	if (idx < 0 || idx >= ns->ipcmni)
		return NULL;
	return (_Atomic uoff_t *)(ns->base + ns->lay.entries[type]) + idx;
}

/* a corrupt id table entry (said once, util.c); NULL */
UIPC_HIDDEN struct uperm *ipc_obj_bad(struct ns *ns, const char *what) __attribute__((cold));

/* the object at offset OFF of a table of TYPE: its fixed part inside the
 * heap, aligned, and of that type; NULL for none or a corrupt entry */
static inline struct uperm *ipc_obj_at(struct ns *ns, uoff_t off, int type)
{
	static const uint32_t size[IPC_NR_IDS] = { SEM_OBJ_SIZE, MSG_OBJ_SIZE, SHM_OBJ_SIZE };
	struct uperm *p;

	/* objects live in the heap, 8-aligned, whole inside the mapping: an
	 * entry into the header or the tables, or past the end (a corrupt
	 * arena), is no object.  (The mapping is larger than any object's
	 * fixed part: its header alone is.) */
	if (unlikely(off < ns->lay.heap_start || (off & 7) || off > ns->size - size[type]))
		return off ? ipc_obj_bad(ns, "id table entry outside the heap") : NULL;
	p = (struct uperm *)(ns->base + off);
	if (unlikely(p->type != (uint32_t)type))
		return ipc_obj_bad(ns, "object of the wrong type in an id table");
	return p;
}

/* The object at ID's index (no sequence check), as *_STAT commands look it up. */
static inline struct uperm *ipc_obtain(struct ns *ns, int type, int id)
{
	_Atomic uoff_t *e = ipc_entry_slot(ns, type, id & (ns->ipcmni - 1));

	return e ? ipc_obj_at(ns, atomic_load_explicit(e, memory_order_acquire), type) : NULL;
}

/* no object of ID: NULL with *err = -EINVAL, and what this process knew
 * of it no longer holds (validate.c; util.c) */
UIPC_HIDDEN struct uperm *ipc_obtain_gone(struct ns *ns, int type, int id, int *err)
	__attribute__((cold));

/* The object of ID, sequence checked: NULL with *err = -EINVAL if none. */
static inline struct uperm *ipc_obtain_check(struct ns *ns, int type, int id, int *err)
{
	struct uperm *p = id < 0 ? NULL : ipc_obtain(ns, type, id);

	if (unlikely(!p || p->id != id))
		return ipc_obtain_gone(ns, type, id, err);
	return p;
}

/*
 * After a lookup without the lock found P for ID and P then failed a check
 * of its block: does the id table still name P under ID?  If not, P was
 * removed meanwhile (its block freed, perhaps reused): an ordinary race,
 * EIDRM as the kernel's, not a corrupt namespace to report.
 */
static inline bool ipc_obj_still(struct ns *ns, int type, int id, const struct uperm *p)
{
	return ipc_obtain(ns, type, id) == p && __atomic_load_n(&p->id, __ATOMIC_ACQUIRE) == id;
}

/* The kernel's ipcperms() for credentials C: 0 if granted, -1 if not.  The
 * group lists are searched only when the caller owns neither the object
 * nor its creation. */
static inline __attribute__((always_inline)) int ipcperms_as(const struct ucred_cache *c, struct uperm *p,
						      int flag)
{
	int req, granted = (int)p->mode;
	short f = (short)flag;

	req = (f >> 6) | (f >> 3) | f;
	if (c->euid == p->cuid || c->euid == p->uid)
		granted >>= 6;
	else if (cred_in_group(c, p->cgid) || cred_in_group(c, p->gid))
		granted >>= 3;
	if ((req & ~granted & 0007) && !((c->caps >> CAP_IPC_OWNER) & 1))
		return -1;
	return 0;
}

/* the same for the caller */
static inline int ipcperms(struct uperm *p, int flag)
{
	return ipcperms_as(cur_cred(), p, flag);
}

/*
 * An adaptive spin before a sleep (util.c), one per thread and kind of
 * wait: a spin that ends in time doubles the budget (up to MAX), one that
 * runs out halves it (to 0 below SPIN_MIN_NS), so that a peer on another
 * CPU is waited for without a system call on either side while a peer that
 * cannot run meanwhile (it shares our CPU, or a third process holds its
 * CPU) soon finds us asleep.  At 0 every 32nd wait probes again with
 * SPIN_PROBE_NS (the peer may have moved).
 */
#define SPIN_MIN_NS   500
#define SPIN_PROBE_NS 4000
struct spin_budget {
	int64_t ns, max;
	unsigned skipped;
};
/* the ns to spin now; 0: sleep at once */
UIPC_HIDDEN int64_t spin_budget_take(struct spin_budget *b);
/* the condition ended while spinning; WAITED: not at the first look */
UIPC_HIDDEN void spin_budget_paid(struct spin_budget *b, bool waited);
UIPC_HIDDEN void spin_budget_wasted(struct spin_budget *b);
/*
 * A wait that spun out and slept ended when what it waited for came,
 * WAITED ns after the wait began: a spin that long would have caught it.
 * The budget grows to twice that (at most the maximum, from the probe's
 * length).  Without it two sides whose budgets had run out woke each other
 * from sleep for good: a sleeper's wakeup takes the other side longer than
 * a probe waits (40 us and more on an idle vCPU), so every probe failed,
 * and ping-pong between two CPUs ran at the kernel's 11 k round trips a
 * second instead of a spinning pair's hundreds of thousands.
 */
UIPC_HIDDEN void spin_budget_slept(struct spin_budget *b, int64_t waited);

/* ---- sem.c ---- */
UIPC_HIDDEN void sem_exit_proc(struct ns *ns, struct uproc *p);
UIPC_HIDDEN int sem_array_bytes(int nsems);
/* fsck (ipc_ns_check): one object's invariants, checked under its lock;
 * the number of problems, appended to REPORT at *USED */
UIPC_HIDDEN int sem_check_obj(struct ns *ns, struct uperm *p, char *report, size_t len, size_t *used);
UIPC_HIDDEN int msg_check_obj(struct ns *ns, struct uperm *p, char *report, size_t len, size_t *used);
UIPC_HIDDEN int shm_check_obj(struct ns *ns, struct uperm *p, char *report, size_t len, size_t *used);
/* one line of /proc/sysvipc/{sem,msg,shm}: the object at index IDX; its
 * length, 0 when there is none */
UIPC_HIDDEN int sem_proc_show(int idx, char *buf, size_t len);
UIPC_HIDDEN int msg_proc_show(int idx, char *buf, size_t len);
UIPC_HIDDEN int shm_proc_show(int idx, char *buf, size_t len);
UIPC_HIDDEN int shm_check_tot(struct ns *ns, char *report, size_t len, size_t *used);
/* fsck: REPORT_ONE for each lock of array P besides its own (the
 * semaphores'): the number it reported */
typedef int (*lock_report_fn)(struct ns *ns, struct ulock *l, const char *what, int id, char *report,
			      size_t len, size_t *used);
UIPC_HIDDEN int sem_report_stopped(struct ns *ns, struct uperm *p, lock_report_fn report_one,
				   char *report, size_t len, size_t *used);

/* ---- shm.c ---- */
UIPC_HIDDEN void shm_exit_proc(struct ns *ns, struct uproc *p); /* exit, reaper */
/* the last thread of this process leaves NS: its segments orphaned */
UIPC_HIDDEN void shm_leave_proc(struct ns *ns, struct uproc *p);
UIPC_HIDDEN void shm_note_exec(uint32_t proc_idx);  /* register_proc after exec */
UIPC_HIDDEN void shm_fork_child(void);              /* atfork child */
UIPC_HIDDEN void shm_ns_leave(struct ns *ns);       /* unshare: NS left */
/* does this process still map a segment of NS (an attachment made there)? */
UIPC_HIDDEN bool shm_ns_busy(struct ns *ns);
UIPC_HIDDEN void shm_destroy_orphaned(struct ns *ns); /* shm_rmid_forced set to 1 */
/* the segment files' fds shm.c keeps (entry/watch.c's close/dup2/... hooks) */
UIPC_HIDDEN bool shm_fd_guarded(int fd);
UIPC_HIDDEN int shm_fd_next_guarded(unsigned lo);
UIPC_HIDDEN void shm_fd_evict(int fd);
UIPC_HIDDEN void shm_note_umask(mode_t m);
/* the application's own munmap/mmap/mremap/mprotect (attachments are vmas):
 * libc's conventions, -1 and errno, as the calls they stand in for */
UIPC_HIDDEN int shm_hook_munmap(void *addr, size_t len);
UIPC_HIDDEN void *shm_hook_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
UIPC_HIDDEN void *shm_hook_mremap(void *old, size_t olen, size_t nlen, int flags, void *naddr);
UIPC_HIDDEN int shm_hook_mprotect(void *addr, size_t len, int prot);
UIPC_HIDDEN bool shm_mprotect_denied(void *addr, size_t len, int prot);
/* credentials are about to change (entry/): read-only twins of the cached
 * segment fds, for SHM_RDONLY attachments the process may then not open */
UIPC_HIDDEN void shm_cred_prepare(void);
UIPC_HIDDEN int shm_hook_mlock(void *addr, size_t len, int flags);
UIPC_HIDDEN int shm_hook_munlock(void *addr, size_t len);
UIPC_HIDDEN int shm_hook_madvise(void *addr, size_t len, int advice);
UIPC_HIDDEN int shm_hook_mlockall(int flags);
UIPC_HIDDEN int shm_hook_munlockall(void);
/* remap_file_pages on an attachment as the kernel's; 0 or -errno */
UIPC_HIDDEN long shm_remap_file_pages(void *addr, size_t size, int prot, size_t pgoff, int flags);

#endif /* UIPC_IPC_H */
