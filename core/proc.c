/*
 * proc.c - the process and thread registry of a namespace, and the process
 * lifecycle hooks (fork, exit, _exit).
 *
 * A process registers lazily on its first call that needs it, and the
 * thread that registers it with it; another thread gets a slot on its first
 * lock.  The thread slot holds the thread's journal frames and an "alive"
 * word: the thread's tid while it lives, which the kernel marks owner-dead
 * when the thread dies (exit, SIGKILL, exec), because the word is on the
 * thread's robust futex list.  That lets any survivor tell, without a
 * system call, whether a lock holder or a sleeper is still there, and sleep
 * until it dies.  The list itself lives in the thread's private memory (see
 * "alive words" below): nothing the kernel or libc follows is in the arena.
 * A process slot carries the pid and the process start time (so a recycled
 * pid is never mistaken for the old process), the thread whose alive word
 * stands for the process, and its SEM_UNDO list; it survives exec, as
 * SEM_UNDO state does in the kernel.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/core.h"

#define PF_EXITING_ 0x00000004      /* the kernel's PF_EXITING: in do_exit */

pid_t uipc_pid;         /* cached getpid(), reset in the fork child (core.h) */
static pthread_mutex_t reg_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t thread_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
/* this thread's slot; read inline by cur_thread() (core.h) */
__thread struct uthread *uipc_tls_thread;
__thread struct ns *uipc_tls_ns;
__thread uint64_t uipc_tls_lockval;
/* the namespaces this process keeps besides its own (ns_process()):
 * those threads of ours are in (uipc_tls_nsov) and those left with
 * attachments made in them (ns->left); under reg_mutex */
static struct ns *g_held;
static int g_nov;                    /* threads in a namespace of their own */

#define FUTEX_TID_MASK_    0x3fffffffu
#define FUTEX_OWNER_DIED_  0x40000000u
#define FUTEX_WAITERS_     0x80000000u

/* ---- the layers' hooks (CORE_HOOKS in core.h), in link order ---- */

extern const struct core_hooks __start_uipc_core_hooks[] UIPC_HIDDEN;
extern const struct core_hooks __stop_uipc_core_hooks[] UIPC_HIDDEN;

#define for_each_hooks(h) \
	for (const struct core_hooks *h = __start_uipc_core_hooks; h < __stop_uipc_core_hooks; h++)

static void run_exit_hooks(struct ns *ns, struct uproc *p)
{
	for_each_hooks(h)
		if (h->proc_exit)
			h->proc_exit(ns, p);
}

/* This process's own exit work (at its exit, or as it leaves NS): each
 * lock wait bounded, so that a member stopped holding a lock cannot hold
 * it up.  False: a wait gave up, and some of the work is left undone (the
 * slot is then handed to the survivors' reapers: free_own_slot). */
#define EXIT_LOCK_WAIT_NS 2000000000LL
static bool run_own_exit_hooks(struct ns *ns, struct uproc *p)
{
	unsigned failed = lockwait_tls.failed;

	lockwait_bound_max(EXIT_LOCK_WAIT_NS);
	run_exit_hooks(ns, p);
	lockwait_bound_end();
	return lockwait_tls.failed == failed;
}

static void run_fork_child_hooks(void)
{
	for_each_hooks(h)
		if (h->fork_child)
			h->fork_child();
}

static void run_exec_hooks(uint32_t proc_idx)
{
	for_each_hooks(h)
		if (h->exec_note)
			h->exec_note(proc_idx);
}

/* this thread's tid, asked once (reset in a fork or clone child) */
static __thread pid_t tls_tid;

static pid_t cur_tid(void)
{
	if (unlikely(!tls_tid))
		tls_tid = (pid_t)sys_syscall(SYS_gettid);
	return tls_tid;
}

int cur_pid_slow(void)
{
	uipc_pid = getpid();
	return uipc_pid;
}

/* what the liveness check reads in /proc/PID/stat */
struct pstat {
	char state;                /* field 3 */
	unsigned long flags;       /* field 9: the kernel's task flags */
	long threads;              /* field 20 */
};
static uint64_t read_stat(pid_t pid, struct pstat *ps);

/* this image's start time, read once (0: not yet; it changes with the
 * pid only: reset with uipc_pid in a fork or clone child) */
static uint64_t g_starttime;

static uint64_t read_starttime(pid_t pid)
{
	if (pid != uipc_pid)
		return read_stat(pid, NULL);
	if (!g_starttime)
		g_starttime = read_stat(pid, NULL);
	return g_starttime;
}

/* /proc/PID/stat read into BUF (LEN bytes): what follows the command's
 * closing parenthesis (") S ...": field 3 starts 2 bytes on), or NULL
 * with errno set (ENOENT or ESRCH: no such process) */
static char *stat_after_comm(pid_t pid, char *buf, size_t len)
{
	char path[64], *p;
	ssize_t n;
	int fd;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/stat");
	fd = sys_open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, len - 1);
	sys_close(fd);
	if (n <= 0) {
		if (n == 0)
			errno = EIO;
		return NULL;
	}
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p)
		errno = EIO;
	return p;
}

/* /proc/PID/stat: the start time (field 22) and, into PS, the state, the
 * task flags and the number of threads; 0 with errno set if it could not
 * be read (errno 0: read, and the start time is 0) */
static uint64_t read_stat(pid_t pid, struct pstat *ps)
{
	char buf[1024];
	char *p = stat_after_comm(pid, buf, sizeof(buf));
	int field;

	if (!p)
		return 0;
	if (ps && p[1] == ' ')
		ps->state = p[2];
	/* field 3 starts after ") "; p is at the space before field N+1 */
	for (field = 2; field < 22 && p; field++) {
		p = strchr(p + 1, ' ');
		if (ps && p && field == 8)
			ps->flags = strtoul(p + 1, NULL, 10);
		if (ps && p && field == 19)
			ps->threads = strtol(p + 1, NULL, 10);
	}
	/* a line without field 22 is one we cannot read: not the ENOENT
	 * or ESRCH of an earlier call that errno may still hold */
	errno = p ? 0 : EIO;
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

struct uproc *proc_at(struct ns *ns, uint32_t idx)
{
	if (idx >= MAX_PROCS)
		return NULL;
	return ns_ptr(ns, ns->lay.procs + (uoff_t)idx * sizeof(struct uproc),
		      sizeof(struct uproc));
}

static uint32_t proc_index(struct ns *ns, struct uproc *p)
{
	return (uint32_t)((ns_off(ns, p) - ns->lay.procs) / sizeof(struct uproc));
}

static bool frames_idle(struct uthread *t)
{
	for (int i = 0; i < JDEPTH; i++)
		if (atomic_load(&t->frames[i].lock))
			return false;
	return true;
}

/* Does the alive word of slot T (state word W) say its thread lives: its
 * tid, not marked dead by the kernel, not cleared by a normal end? */
static bool alive_word_says_alive(struct uthread *t, uint64_t w)
{
	uint32_t v = atomic_load_explicit(uthread_alive(t), memory_order_acquire);

	return (v & FUTEX_TID_MASK_) == ((uint32_t)SLOT_ID(w) & FUTEX_TID_MASK_) &&
	       !(v & FUTEX_OWNER_DIED_);
}

/* ---- alive words on the kernel's robust list ----
 *
 * When a thread dies or execs, the kernel walks the list whose head the
 * thread registered (set_robust_list): from the head each entry points to
 * the next, and for each the kernel marks the futex word at the entry plus
 * the head's futex_offset owner-dead if it holds the thread's tid (waking
 * one sleeper if its FUTEX_WAITERS bit is set).  glibc registers one head
 * per thread (in its struct pthread) and links its robust mutexes there,
 * with an offset of -32 on 64-bit (an entry is a mutex's list links, 32
 * bytes after its lock word).  A thread has one head only, so our alive
 * words go on glibc's list, with glibc's offset, in entries shaped as
 * glibc's ("prev" just before "next", the head's "prev" in front of the
 * head), so that glibc's own adds and removes next to ours keep working.
 *
 * An entry must be in private memory: the kernel (at the death) and glibc
 * (when it removes a neighbour) write through its links, so another member
 * could aim them anywhere if they were in the arena.  Each process
 * therefore maps the arena page of each of its threads' slots a second
 * time, with a private page right after it ("alias"): the alive words end
 * the page (layout.h), so the entry, 32 bytes on, falls in the private
 * page.  The kernel marks the word through the alias, which is the same
 * memory (a shared futex is keyed by file and offset): every member sees
 * it, and sleeps on it through its own mapping.
 *
 * Our entry goes at the tail (glibc adds at the head), so that a fault on
 * our word (a truncated arena) stops the kernel's walk only after every
 * mutex of the program's.  Only the thread itself changes its list, with
 * signal handlers held off (a uipc call from a handler that interrupted
 * glibc inside a robust mutex operation on the same thread, which glibc
 * does not allow either, could lose an entry).
 */

struct rlist_head {                  /* the kernel's struct robust_list_head */
	void *list;
	long futex_offset;
	void *pending;
};

static inline void **entry_next(void *e)
{
	return (void **)e;
}

static inline void **entry_prev(void *e)
{
	return (void **)e - 1;
}

/* the offsets our pages allow: the entry and its "prev" within the first
 * ALIAS_RECORD_AT bytes of the private page, for either word of a page */
#define OFFSET_MIN (-64)
#define OFFSET_MAX (-32)
#define ALIAS_RECORD_AT 64

/* one alias: a thread's slot page mapped again, then a private page that
 * holds the robust-list entry and this record */
struct alias {
	struct alias *next, *prev;   /* the process's aliases (alias_mutex) */
	struct alias *tnext;         /* the same thread's (my_aliases) */
	char *map;
	struct uthread *t;           /* the slot, through MAP */
	struct ns *ns;
	uint64_t state;              /* the slot's state word while ours */
	uint32_t slot;
	pid_t tid;
	void *entry;                 /* on the thread's robust list */
	uint64_t cookie;             /* alias_cookie: proc_alias_ns knows it */
	dev_t dev;                   /* NS's file, while parked (parked_alias) */
	ino_t ino;
};

static struct alias g_aliases = { .next = &g_aliases, .prev = &g_aliases };
static pthread_mutex_t alias_mutex = PTHREAD_MUTEX_INITIALIZER;
static __thread struct alias *my_aliases;

/*
 * A namespace made anew in place (ns_recycle_*, one thread only) is the
 * same memfd, laid out the same: this thread's slot page there is the same
 * memory.  So the alias of its slot is parked instead of unmapped
 * (proc_forget_ns), its entry left on the robust list (the alive word is
 * zeroed with the slots: nothing for the kernel to mark meanwhile), and
 * the next registration there takes it back when it gets the same slot:
 * no get_robust_list, mmap, mremap, munmap, nor the fault of a new private
 * page.  Any other leave, the thread's end, a registration elsewhere or in
 * another slot drops it (parked_drop); a fork child unmaps its copy.  Only
 * the thread itself touches it (its robust list).  The file's identity is
 * kept with it: the parked mapping holds the memfd, so no live file can
 * have its inode number, whatever becomes of the struct ns.
 */
static __thread struct alias *parked_alias;

/* the list head of a thread that libc gave none (not one of glibc's) */
static __thread struct {
	void *prev;
	struct rlist_head h;
} own_head;

/* this thread's robust list head: glibc's, or one of ours */
static struct rlist_head *robust_head(void)
{
	void *head = NULL;
	size_t len = 0;

	if (sys_syscall(SYS_get_robust_list, 0, &head, &len) < 0)
		return NULL;
	if (head)
		return head;
	own_head.h.list = &own_head.h;
	own_head.h.futex_offset = OFFSET_MAX;
	own_head.h.pending = NULL;
	own_head.prev = &own_head.h;
	if (sys_syscall(SYS_set_robust_list, &own_head.h, sizeof(own_head.h)) < 0)
		return NULL;
	return &own_head.h;
}

/*
 * The pending entry (the head's third field, list_op_pending): the entry a
 * thread is about to add or remove, which the kernel handles at its death
 * like a listed one, and also when the futex word it names has no owner
 * (its low 30 bits 0): then it wakes one sleeper there.  glibc's robust
 * unlock relies on that (it frees the word, then wakes); uipc aims it at a
 * word it has just set to 0 for a sleeper before a change that the
 * sleeper waits for, until the wake that follows the change: a death in
 * between wakes the sleeper all the same.  The kernel only reads the word
 * at the entry plus the offset (never the entry's links), so the entry may
 * point into the arena.  Only this thread uses the slot (glibc inside its
 * robust mutex calls, which a uipc call from a handler may interrupt: the
 * slot is given back as found); callers hold the program's handlers off
 * meanwhile (uipc_crit_enter), so that none runs, or leaves by longjmp,
 * between the change and the wake.
 */
static __thread struct rlist_head *pending_head;   /* robust_head(), cached */

static struct rlist_head *pending_head_get(void)
{
	struct rlist_head *h = pending_head;

	if (likely(h))
		return h;
	h = robust_head();
	if (h && h->futex_offset >= OFFSET_MIN && h->futex_offset <= OFFSET_MAX)
		pending_head = h;
	else
		h = NULL;
	return h;
}

void *proc_pending_begin(_Atomic uint32_t *w)
{
	struct rlist_head *h = pending_head_get();
	void *prev;

	if (!h)
		return PENDING_NOT_AIMED;
	prev = h->pending;
	h->pending = (char *)w - h->futex_offset;
	/* the kernel reads it when this thread dies: program order is all */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return prev;
}

void proc_pending_end(void *prev)
{
	struct rlist_head *h = pending_head;

	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (h && prev != PENDING_NOT_AIMED)
		h->pending = prev;
}

/* Append entry E at the tail of the list at HEAD: E complete first, then
 * the last entry's link makes the kernel's walk reach it. */
static bool robust_append(struct rlist_head *head, void *e)
{
	void *last = *entry_prev(head);

	/* the head's "prev" is the last entry, whose "next" is the head */
	if (!last || ((uintptr_t)*entry_next(last) & ~(uintptr_t)1) != (uintptr_t)head)
		return false;
	*entry_next(e) = head;
	*entry_prev(e) = last;
	/* the kernel reads the list only when this thread dies or execs: the
	 * order of this thread's stores is all that matters */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	*entry_next(last) = e;
	*entry_prev(head) = e;
	return true;
}

/* Take entry E off this thread's list: one store takes it out of the
 * kernel's walk (which follows "next" only), the second mends "prev".
 * (The low bit of a "next" marks a PI mutex, for the entry it points to.) */
static void robust_remove(void *e)
{
	void *prev = *entry_prev(e), *next = *entry_next(e);

	*entry_next(prev) = next;
	*entry_prev((void *)((uintptr_t)next & ~(uintptr_t)1)) = prev;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/*
 * Map the arena page at offset PAGE again at MAP: a second mapping of our
 * own (mremap of size 0 makes one of a shared mapping, no file needed);
 * where that is not done (valgrind), a mapping of the namespace's file, the
 * memfd or the file opened again by its path, which must then prove to be
 * the same memory: a word of slot T changed through it is changed in the
 * arena (T_ALIAS: T through MAP).
 */
static bool map_page_again(struct ns *ns, uoff_t page, char *map, struct uthread *t,
			   struct uthread *t_alias)
{
	uint32_t probe;
	int fd;
	char *r;

	if ((char *)sys_syscall(SYS_mremap, ns->base + page, 0, UIPC_PAGE,
				MREMAP_MAYMOVE | MREMAP_FIXED, map) == map)
		return true;
	fd = ns->anon_fd >= 0 ? ns->anon_fd : sys_open(ns->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	r = sys_mmap(map, UIPC_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, (off_t)page);
	if (fd != ns->anon_fd)
		sys_close(fd);
	if (r != map)
		return false;
	probe = __atomic_load_n(&t->depth, __ATOMIC_ACQUIRE) + 1;
	__atomic_store_n(&t_alias->depth, probe, __ATOMIC_RELEASE);
	return __atomic_load_n(&t->depth, __ATOMIC_ACQUIRE) == probe;
}

/*
 * A truncated namespace file (issue 14): the alias maps a page of it, and
 * touching a page past the file's end raises SIGBUS.  core/fault.c's
 * handler asks proc_alias_ns() whether the faulting page is an alias: its
 * record, in the private page after it, names the page and the namespace
 * and carries this process's random cookie.  The record is read with
 * process_vm_readv (a page that is not an alias may have no readable page
 * after it: EFAULT, not a fault).  It is written before the page is mapped.
 */
static uint64_t alias_cookie_value;

static uint64_t alias_cookie(void)
{
	uint64_t c = __atomic_load_n(&alias_cookie_value, __ATOMIC_ACQUIRE);

	if (!c) {
		c = ns_random64() | 1;
		__atomic_store_n(&alias_cookie_value, c, __ATOMIC_RELEASE);
	}
	return c;
}

struct ns *proc_alias_ns(void *addr)
{
	uintptr_t page = (uintptr_t)addr & ~(uintptr_t)(UIPC_PAGE - 1);
	uint64_t cookie = __atomic_load_n(&alias_cookie_value, __ATOMIC_ACQUIRE);
	struct alias rec;
	struct iovec local = { &rec, sizeof(rec) };
	struct iovec remote = { (void *)(page + UIPC_PAGE + ALIAS_RECORD_AT), sizeof(rec) };

	if (!cookie || sys_syscall(SYS_process_vm_readv, sys_syscall(SYS_getpid), &local, 1L,
				   &remote, 1L, 0L) != (long)sizeof(rec))
		return NULL;
	return rec.cookie == cookie && (uintptr_t)rec.map == page ? rec.ns : NULL;
}

static void parked_drop(struct ns *only);

/* the parked alias, if it is slot SLOT's of NS (its entry on our list, its
 * page the slot's: the same file, the same layout); dropped otherwise */
static struct alias *take_parked(struct ns *ns, uint32_t slot)
{
	struct alias *a = parked_alias;

	if (!a)
		return NULL;
	if (a->ns == ns && a->slot == slot && a->dev == ns->dev && a->ino == ns->ino &&
	    ns->anon_fd >= 0 && !__atomic_load_n(&ns->broken, __ATOMIC_ACQUIRE)) {
		parked_alias = NULL;
		return a;
	}
	parked_drop(NULL);
	return NULL;
}

/* Map slot T's page again, with a private page after it, and put T's alive
 * word on this thread's (TID's) robust list.  NULL if that cannot be done. */
static struct alias *alias_attach(struct ns *ns, struct uthread *t, uint32_t slot, pid_t tid)
{
	struct rlist_head *head;
	uoff_t off = ns_off(ns, t), page = off & ~(uoff_t)(UIPC_PAGE - 1);
	struct alias *a = take_parked(ns, slot);
	char *map;

	if (a) {
		a->tid = tid;
		return a;
	}
	head = robust_head();
	if (!head || head->futex_offset < OFFSET_MIN || head->futex_offset > OFFSET_MAX)
		return NULL;
	map = sys_mmap(NULL, 2 * UIPC_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (map == MAP_FAILED)
		return NULL;
	/* the record first: a SIGBUS in the page is then known as ours */
	a = (struct alias *)(map + UIPC_PAGE + ALIAS_RECORD_AT);
	a->map = map;
	a->ns = ns;
	a->cookie = alias_cookie();
	if (!map_page_again(ns, page, map, t, (struct uthread *)(map + (off - page)))) {
		sys_munmap(map, 2 * UIPC_PAGE);
		return NULL;
	}
	a->t = (struct uthread *)(map + (off - page));
	a->slot = slot;
	a->tid = tid;
	a->entry = (char *)uthread_alive(a->t) - head->futex_offset;
	if (!robust_append(head, a->entry)) {
		sys_munmap(map, 2 * UIPC_PAGE);
		return NULL;
	}
	return a;
}

static void alias_unlink(struct alias *a)
{
	a->prev->next = a->next;
	a->next->prev = a->prev;
}

/* Is P's holder (the thread whose alive word stands for the process's)
 * alive?  *WORD: that word, when the slot is one of P's threads'. */
static bool proc_holder_alive(struct ns *ns, struct uproc *p, uint32_t **word)
{
	uint32_t h = atomic_load(&p->holder);
	struct uthread *t = h ? thread_at(ns, h - 1) : NULL;
	uint64_t w;

	if (!t)
		return false;
	w = atomic_load(&t->state);
	if (SLOT_STATE(w) != SLOT_LIVE || t->pid != p->pid || t->proc != proc_index(ns, p))
		return false;
	if (word)
		*word = (uint32_t *)uthread_alive(t);
	return alive_word_says_alive(t, w);
}

/* The process slot of A's namespace, if we have one there. */
static struct uproc *own_proc_of(struct alias *a)
{
	uint32_t idx = __atomic_load_n(&a->ns->proc_idx, __ATOMIC_ACQUIRE);

	return idx == UINT32_MAX ? NULL : proc_at(a->ns, idx);
}

/* Record A (alias_mutex held): the process's and the thread's; its thread
 * stands for the process unless a live one does already. */
static void alias_add(struct alias *a)
{
	struct uproc *p = own_proc_of(a);

	a->next = &g_aliases;
	a->prev = g_aliases.prev;
	g_aliases.prev->next = a;
	g_aliases.prev = a;
	a->tnext = my_aliases;
	my_aliases = a;
	if (p && !proc_holder_alive(a->ns, p, NULL))
		atomic_store(&p->holder, a->slot + 1);
}

/* A's thread no longer stands for the process (alias_mutex held, A off the
 * list): another registered thread of ours in that namespace does, if any. */
static void hand_holder_over(struct alias *a)
{
	struct uproc *p = own_proc_of(a);
	uint32_t next = 0;

	if (!p || atomic_load(&p->holder) != a->slot + 1)
		return;
	for (struct alias *b = g_aliases.next; b != &g_aliases; b = b->next) {
		if (b->ns == a->ns && atomic_load(&b->t->state) == b->state) {
			next = b->slot + 1;
			break;
		}
	}
	atomic_store(&p->holder, next);
}

/* This thread is done with A's slot (A off the lists): clear its alive
 * word (its sleepers wake: the thread is gone) and free the slot if both
 * are still ours. */
static void alias_give_slot_back(struct alias *a)
{
	struct uthread *t = a->t;
	_Atomic uint32_t *aw = uthread_alive(t);
	uint64_t w = a->state;

	if (atomic_load(&t->state) == w && (atomic_load(aw) & FUTEX_TID_MASK_) == (uint32_t)a->tid) {
		if (atomic_exchange(aw, 0) & FUTEX_WAITERS_)
			sys_futex_wake(aw, INT_MAX);
		atomic_compare_exchange_strong(&t->state, &w,
					       SLOT_WORD_GEN(SLOT_GEN(w), 0, SLOT_FREE));
	}
}

/* A's word off the robust list, its pages unmapped */
static void alias_unmap(struct alias *a)
{
	robust_remove(a->entry);
	sys_munmap(a->map, 2 * UIPC_PAGE);
}

static void alias_release(struct alias *a)
{
	alias_give_slot_back(a);
	alias_unmap(a);
}

/* the parked alias (of ONLY, or any: NULL) let go of */
static void parked_drop(struct ns *only)
{
	struct alias *a = parked_alias;

	if (!a || (only && a->ns != only))
		return;
	parked_alias = NULL;
	alias_unmap(a);
}

/* A kept for NS made anew in place (its slot given back all the same) */
static void alias_park(struct alias *a)
{
	alias_give_slot_back(a);
	a->dev = a->ns->dev;
	a->ino = a->ns->ino;
	parked_alias = a;
}

/* Give back this thread's slots: in ONLY, or everywhere (NULL).  No
 * handler may use them meanwhile (held off; this thread's slot is gone
 * first).  PARK: ONLY is being made anew in place, the alias of our slot
 * there is parked (parked_alias). */
static void release_thread_slots_park(struct ns *only, bool park)
{
	struct alias *done = NULL, **link = &my_aliases, *a;

	uipc_crit_enter();
	if (!park)
		parked_drop(only);   /* a parked one stays parked for the next */
	if (!only || uipc_tls_ns == only)
		uipc_tls_thread = NULL;
	crit_mutex_lock(&alias_mutex);
	while ((a = *link)) {
		if (only && a->ns != only) {
			link = &a->tnext;
			continue;
		}
		*link = a->tnext;
		alias_unlink(a);
		hand_holder_over(a);
		a->tnext = done;
		done = a;
	}
	crit_mutex_unlock(&alias_mutex);
	while ((a = done)) {
		done = a->tnext;
		if (park && !parked_alias)
			alias_park(a);
		else
			alias_release(a);
	}
	uipc_crit_exit();
}

static void release_thread_slots(struct ns *only)
{
	release_thread_slots_park(only, false);
}

/*
 * Aliases of threads of ours that ended without the thread-exit hook (a
 * raw exit system call): their entries died with their lists; unmap them.
 * Only those whose slot no longer says they live cost a system call; the
 * walk is made at every 64th registration (a process with many threads
 * registers many), so at most 64 such aliases wait for it.
 */
static void sweep_dead_aliases(pid_t me)
{
	static unsigned registrations;
	pid_t pid = cur_pid();

	crit_mutex_lock(&alias_mutex);
	if (registrations++ % 64) {
		crit_mutex_unlock(&alias_mutex);
		return;
	}
	for (struct alias *a = g_aliases.next, *next; a != &g_aliases; a = next) {
		uint64_t w = atomic_load(&a->t->state);

		next = a->next;
		if (a->tid == me || (w == a->state && alive_word_says_alive(a->t, w)))
			continue;
		if (sys_syscall(SYS_tgkill, pid, a->tid, 0) == 0 || errno != ESRCH)
			continue;
		alias_unlink(a);
		sys_munmap(a->map, 2 * UIPC_PAGE);
	}
	crit_mutex_unlock(&alias_mutex);
}

/* In a new process (fork, clone): the aliases are the parent's threads'
 * (our robust list was emptied for us); unmap our copies.  (A clone child
 * may have copied the list while another thread changed it: bounded.) */
static void drop_inherited_aliases(void)
{
	struct alias *a = g_aliases.next, *next;

	for (int n = 0; a != &g_aliases && n < MAX_THREADS; n++, a = next) {
		next = a->next;
		sys_munmap(a->map, 2 * UIPC_PAGE);
	}
	g_aliases.next = g_aliases.prev = &g_aliases;
	my_aliases = NULL;
	if (parked_alias)
		sys_munmap(parked_alias->map, 2 * UIPC_PAGE);
	parked_alias = NULL;
	pthread_mutex_init(&alias_mutex, NULL);
}

/* ---- slots ---- */

/* A slot claimed by an id that no longer exists can be taken over. */
static bool claimer_gone(uint64_t w)
{
	pid_t id = SLOT_ID(w);

	return id <= 0 || (kill(id, 0) < 0 && errno == ESRCH);
}

/* Can thread slot T, in state W, be claimed?  Free, or claimed by a thread
 * that is gone, or its thread is dead and its frames hold nothing left to
 * recover (a lock that still names the dead incarnation is taken over by
 * its next locker: the generation tells them apart). */
static bool thread_slot_claimable(struct uthread *t, uint64_t w)
{
	switch (SLOT_STATE(w)) {
	case SLOT_FREE:
		return true;
	case SLOT_CLAIMING:
		return claimer_gone(w);
	case SLOT_LIVE:
	case SLOT_DEAD:
		return !alive_word_says_alive(t, w) && frames_idle(t);
	}
	return false;
}

/* a process slot: free, or claimed by a process that is gone (a DEAD one
 * is being reaped: not free until FREE) */
static bool proc_slot_claimable(uint64_t w)
{
	return SLOT_STATE(w) == SLOT_FREE || (SLOT_STATE(w) == SLOT_CLAIMING && claimer_gone(w));
}

/*
 * Claim a slot of a table: the first one free (or whose claimer died
 * mid-claim, or, for threads, whose thread died), else the next above the
 * high-water mark.  *CLAIMED: the state word it now has (a thread slot's
 * generation counted up).
 */
static int claim_slot(struct ns *ns, bool threads, int32_t id, uint64_t *claimed)
{
	_Atomic uint32_t *hwm = threads ? &ns->hdr->threads_hwm : &ns->hdr->procs_hwm;
	uint32_t max = threads ? MAX_THREADS : MAX_PROCS;
	size_t sz = threads ? sizeof(struct uthread) : sizeof(struct uproc);
	uoff_t base = threads ? ns->lay.threads : ns->lay.procs;
	uint32_t i, top = atomic_load(hwm);

	if (top > max)
		top = max;
	for (i = 0; i <= top && i < max; i++) {
		_Atomic uint64_t *st = ns_ptr(ns, base + (uoff_t)i * sz, sz);
		uint64_t w, want;

		if (!st)
			return -1;
		if (i == top) {
			/* extend the table: populate the slot's pages first */
			if (arena_populate(ns, base + (uoff_t)i * sz, sz))
				return -1;
			atomic_compare_exchange_strong(hwm, &top, top + 1);
			top = atomic_load(hwm);
		}
		w = atomic_load(st);
		if (threads ? !thread_slot_claimable((struct uthread *)st, w) : !proc_slot_claimable(w))
			continue;
		want = threads ? SLOT_WORD_GEN(SLOT_GEN(w) + 1, id, SLOT_CLAIMING)
			       : SLOT_WORD(id, SLOT_CLAIMING);
		if (atomic_compare_exchange_strong(st, &w, want)) {
			if (claimed)
				*claimed = want;
			return (int)i;
		}
	}
	return -1;
}

/* ---- loans (layout.h): a slot counted for a fork child before fork ---- */

/*
 * The loans this process has open: claimed and locked before a fork, their
 * fds not yet closed (the parent closes them once fork returned, the child
 * once it took its slot over).  Only fork's prepare and parent handlers
 * (which shm.c's fork lock serializes) and the child's handler change the
 * table; proc_is_dead reads it without a lock: an entry whose word still
 * matches the slot's is a loan whose lock we hold, so no system call is
 * needed to see that it lives.
 */
#define LOANS_MAX 8
struct loan {
	struct ns *ns;
	uint32_t idx;
	int fd;
	_Atomic uint64_t word;     /* the slot's state word as we left it; 0: unused */
};
static struct loan g_loans[LOANS_MAX];
/* the forking thread's loans after fork, for its fork wrapper to name (or
 * give back, fork failed): copied from g_loans by the parent handler */
static __thread struct loan tls_forked[LOANS_MAX];
static __thread int tls_nforked;

/* a generation for loan words, so that a reaper's compare-and-swap acts
 * only on the incarnation of the loan it looked at */
static uint32_t next_loan_gen(void)
{
	static _Atomic uint32_t gen;
	uint32_t g = atomic_fetch_add(&gen, 1);

	return (g + (uint32_t)cur_pid() * 2654435761u) & SLOT_GEN_MASK;
}

/* A new file description of NS's file, read-only, whose locks are its
 * own (an anonymous namespace's memfd reopened through /proc), checked to
 * be that file; or -1. */
static int ns_file_reopen(struct ns *ns)
{
	char buf[64];
	const char *path = ns->path;
	int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY, fd;
	struct stat st;

	if (ns->anon_fd >= 0) {
		snprintf(buf, sizeof(buf), "/proc/self/fd/%d", ns->anon_fd);
		path = buf;
	} else {
		flags |= O_NOFOLLOW;
	}
	fd = sys_open(path, flags);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || st.st_dev != ns->dev || st.st_ino != ns->ino) {
		sys_close(fd);
		return -1;
	}
	return fd;
}

static struct flock loan_lock(uint32_t idx, short type)
{
	return (struct flock){ .l_type = type, .l_whence = SEEK_SET,
			       .l_start = (off_t)(LOAN_LOCK_BASE + (long long)idx), .l_len = 1 };
}

/* one of our own open loans, in state W? */
static bool loan_is_ours(struct ns *ns, uint32_t idx, uint64_t w)
{
	for (int i = 0; i < LOANS_MAX; i++)
		if (atomic_load(&g_loans[i].word) == w && g_loans[i].ns == ns && g_loans[i].idx == idx)
			return true;
	return false;
}

/* Does someone (a parent before fork, a child before its take-over) hold
 * the lock of loan IDX, in state W?  When it cannot be told, yes: a loan
 * kept too long is a leak, one given back too early would let a segment
 * go while a child still maps it. */
static bool loan_held(struct ns *ns, uint32_t idx, uint64_t w)
{
	struct flock fl = loan_lock(idx, F_WRLCK);
	int fd;
	bool held = true;

	if (loan_is_ours(ns, idx, w))
		return true;
	fd = ns->anon_fd >= 0 ? ns->anon_fd : ns_file_reopen(ns);
	if (fd < 0)
		return true;
	if (fcntl(fd, F_OFD_GETLK, &fl) == 0)
		held = fl.l_type != F_UNLCK;
	if (fd != ns->anon_fd)
		sys_close(fd);
	return held;
}

uint32_t proc_loan_open(struct ns *ns)
{
	struct loan *l = NULL;
	struct flock fl;
	struct uproc *p;
	uint64_t w;
	int fd, idx;

	for (int i = 0; i < LOANS_MAX && !l; i++)
		if (!atomic_load(&g_loans[i].word))
			l = &g_loans[i];
	if (!l || (fd = ns_file_reopen(ns)) < 0)
		return UINT32_MAX;
	/* claimed under our pid: if we die now, the slot is free again */
	idx = claim_slot(ns, false, cur_pid(), NULL);
	p = idx >= 0 ? proc_at(ns, (uint32_t)idx) : NULL;
	fl = loan_lock((uint32_t)idx, F_RDLCK);
	if (!p || fcntl(fd, F_OFD_SETLK, &fl) < 0) {
		if (p)
			atomic_store(&p->state, SLOT_WORD(0, SLOT_FREE));
		sys_close(fd);
		return UINT32_MAX;
	}
	atomic_store(&p->holder, 0);
	ulock_init(&p->lock);
	p->pid = 0;
	p->starttime = 0;
	p->undo = 0;
	p->aio_nr = 0;
	w = SLOT_WORD_GEN(next_loan_gen(), 0, SLOT_LOAN);
	l->ns = ns;
	l->idx = (uint32_t)idx;
	l->fd = fd;
	atomic_store(&l->word, w);
	/* locked first, then a loan: a reaper that sees the loan sees the lock */
	atomic_store(&p->state, w);
	return (uint32_t)idx;
}

static struct loan *loan_find(struct ns *ns, uint32_t idx)
{
	for (int i = 0; i < LOANS_MAX; i++)
		if (atomic_load(&g_loans[i].word) && g_loans[i].ns == ns && g_loans[i].idx == idx)
			return &g_loans[i];
	return NULL;
}

static void loan_forget(struct loan *l)
{
	atomic_store(&l->word, 0);
	sys_close(l->fd);
	l->fd = -1;
}

void proc_loan_cancel(struct ns *ns, uint32_t idx)
{
	struct loan *l = loan_find(ns, idx);
	struct uproc *p = proc_at(ns, idx);

	if (!l)
		return;
	/* the lock gone, the loan is dead: its counts go back now */
	loan_forget(l);
	if (p)
		proc_reap(ns, p);
}

void proc_loans_forked(void)
{
	tls_nforked = 0;
	for (int i = 0; i < LOANS_MAX; i++) {
		struct loan *l = &g_loans[i];

		if (!atomic_load(&l->word))
			continue;
		tls_forked[tls_nforked++] = (struct loan){ l->ns, l->idx, -1, atomic_load(&l->word) };
		/* the child holds the lock now (it shares this description) */
		loan_forget(l);
	}
}

void proc_loans_result(pid_t child)
{
	int n = tls_nforked;

	tls_nforked = 0;
	for (int i = 0; i < n; i++) {
		struct loan *l = &tls_forked[i];
		struct uproc *p = proc_at(l->ns, l->idx);
		uint64_t w = atomic_load(&l->word);

		if (!p)
			continue;
		if (child > 0) {
			/* only the state word: the slot may be reaped (and taken
			 * again) at any time once the child died, so nothing else
			 * of it is ours to write; a reaper takes the pid from it */
			atomic_compare_exchange_strong(&p->state, &w,
				SLOT_WORD_GEN(SLOT_GEN(w), child, SLOT_LOAN));
		} else if (child < 0) {
			proc_reap(l->ns, p);   /* no child: the counts go back */
		}
	}
}

bool proc_loan_take(struct ns *ns, uint32_t idx)
{
	struct loan *l = loan_find(ns, idx);
	struct uproc *p = proc_at(ns, idx);
	pid_t pid = cur_pid();
	uint64_t w, named;
	bool ok = false;

	if (!l || !p)
		return false;
	w = atomic_load(&l->word);
	named = SLOT_WORD_GEN(SLOT_GEN(w), pid, SLOT_LOAN);
	/* while we hold the lock nobody reaps the loan: the slot is ours to
	 * fill (unless a member rewrote it: then the compare-and-swap fails) */
	p->pid = pid;
	p->starttime = read_starttime(pid);
	for (int tries = 0; tries < 2 && !ok; tries++) {
		uint64_t cur = atomic_load(&p->state);

		if (cur != w && cur != named)
			break;
		ok = atomic_compare_exchange_strong(&p->state, &cur, SLOT_WORD(pid, SLOT_LIVE));
	}
	if (ok)
		__atomic_store_n(&ns->proc_idx, idx, __ATOMIC_RELEASE);
	return ok;
}

void proc_loans_child_done(void)
{
	tls_nforked = 0;
	for (int i = 0; i < LOANS_MAX; i++)
		if (atomic_load(&g_loans[i].word))
			loan_forget(&g_loans[i]);
}

/* ---- processes ---- */

/* slots of processes that look gone, checked after we registered: a few
 * per registration, so that dead processes' slots come back whatever
 * pid_max is (a slot is also reaped when its pid is ours) */
#define REAP_CHECKS 2

static uint32_t register_proc(struct ns *ns)
{
	pid_t pid = cur_pid();
	uint64_t start = read_starttime(pid);
	uint32_t i, k, top = atomic_load(&ns->hdr->procs_hwm);
	struct uproc *p;
	int idx;

	if (top > MAX_PROCS)
		top = MAX_PROCS;
	/* after exec: the slot of this very process is still there.  The
	 * scan starts at a place of our own, so that the slots of live
	 * processes without a live holder are not always the ones checked. */
	for (k = 0; k < top; k++) {
		uint64_t w;

		i = (k + (uint32_t)pid) % top;
		p = proc_at(ns, i);
		w = p ? atomic_load(&p->state) : 0;
		if (w == SLOT_WORD(pid, SLOT_LIVE)) {
			if (p->starttime == start) {
				/* the old image's attachments are gone */
				run_exec_hooks(i);
				return i;
			}
			/* a dead process whose pid we got: its exit work is done
			 * once we are registered (see reap_noted) */
			ns->stale_idx = i;
		} else if (SLOT_STATE(w) == SLOT_LIVE && ns->nreap < REAP_CHECKS &&
			   !proc_holder_alive(ns, p, NULL)) {
			ns->reap[ns->nreap++] = i;
		} else if (SLOT_STATE(w) == SLOT_LOAN && ns->nreap < REAP_CHECKS &&
			   !loan_held(ns, i, w)) {
			/* a loan with no counts yet that nobody holds (its
			 * parent died before fork) is no one's attacher */
			ns->reap[ns->nreap++] = i;
		}
	}
	idx = claim_slot(ns, false, pid, NULL);
	if (idx < 0)
		return UINT32_MAX;
	p = proc_at(ns, (uint32_t)idx);
	if (!p)
		return UINT32_MAX;
	atomic_store(&p->holder, 0);
	ulock_init(&p->lock);
	p->pid = pid;
	p->starttime = start;
	p->undo = 0;
	atomic_store(&p->state, SLOT_WORD(pid, SLOT_LIVE));
	return (uint32_t)idx;
}

static uint32_t cur_proc_idx(struct ns *ns)
{
	uint32_t idx = __atomic_load_n(&ns->proc_idx, __ATOMIC_ACQUIRE);

	if (likely(idx != UINT32_MAX))
		return idx;
	crit_mutex_lock(&reg_mutex);
	if (ns->proc_idx == UINT32_MAX)
		__atomic_store_n(&ns->proc_idx, register_proc(ns), __ATOMIC_RELEASE);
	idx = ns->proc_idx;
	crit_mutex_unlock(&reg_mutex);
	return idx;
}

/* The exit work that registering found to do (a dead process with our pid,
 * slots whose processes look gone): once this thread has a slot, since it
 * takes locks. */
static void reap_noted(struct ns *ns)
{
	uint32_t todo[REAP_CHECKS + 1];
	int n = 0;

	if (likely(!ns->nreap && ns->stale_idx == UINT32_MAX))
		return;
	crit_mutex_lock(&reg_mutex);
	if (ns->stale_idx != UINT32_MAX)
		todo[n++] = ns->stale_idx;
	for (int i = 0; i < ns->nreap; i++)
		todo[n++] = ns->reap[i];
	ns->stale_idx = UINT32_MAX;
	ns->nreap = 0;
	crit_mutex_unlock(&reg_mutex);
	if (ns->proc_idx == UINT32_MAX)
		return;
	for (int i = 0; i < n; i++) {
		struct uproc *p = proc_at(ns, todo[i]);

		if (p)
			proc_reap(ns, p);
	}
}

struct uproc *cur_proc(struct ns *ns)
{
	uint32_t idx = cur_proc_idx(ns);

	if (idx == UINT32_MAX)
		return NULL;
	/* the registering thread's alive word stands for the process */
	cur_thread(ns);
	return proc_at(ns, idx);
}

static void make_key(void);

static struct uthread *register_thread(struct ns *ns)
{
	pid_t tid = cur_tid();
	uint32_t pidx = cur_proc_idx(ns);
	uint64_t claimed, live;
	struct uthread *t;
	struct alias *a;
	int idx;

	if (pidx == UINT32_MAX)
		return NULL;
	sweep_dead_aliases(tid);
	idx = claim_slot(ns, true, tid, &claimed);
	if (idx < 0)
		return NULL;
	t = thread_at(ns, (uint32_t)idx);
	if (!t)
		return NULL;
	atomic_store(uthread_alive(t), 0);
	t->tid = tid;
	t->pid = cur_pid();
	t->proc = pidx;
	t->depth = 0;
	/* idle frames (claim_slot takes no slot whose frames are busy); each
	 * keeps its overflow chunks, which are never freed: zeroed, they were
	 * lost to the arena at every new thread in the slot */
	for (int i = 0; i < JDEPTH; i++) {
		atomic_store(&t->frames[i].lock, 0);
		atomic_store(&t->frames[i].n, 0);
		atomic_store(&t->frames[i].committed, 0);
	}
	a = alias_attach(ns, t, (uint32_t)idx, tid);
	if (!a) {
		atomic_store(&t->state, SLOT_WORD_GEN(SLOT_GEN(claimed), 0, SLOT_FREE));
		return NULL;
	}
	/* on the list first, then the word names us: from here a death marks it */
	live = SLOT_WORD_GEN(SLOT_GEN(claimed), tid, SLOT_LIVE);
	a->state = live;
	atomic_store_explicit(uthread_alive(t), (uint32_t)tid, memory_order_release);
	atomic_store(&t->state, live);
	uipc_tls_lockval = (uint64_t)SLOT_GEN(claimed) << 32 | (uint32_t)(idx + 1);
	crit_mutex_lock(&alias_mutex);
	alias_add(a);
	crit_mutex_unlock(&alias_mutex);
	pthread_once(&key_once, make_key);
	pthread_setspecific(thread_key, t);
	return t;
}

/* this thread's slot in NS, registered before (a thread that works in
 * more than one namespace: its own and an attachment's), or NULL */
static struct uthread *own_slot_in(struct ns *ns)
{
	for (struct alias *a = my_aliases; a; a = a->tnext) {
		if (a->ns != ns || atomic_load(&a->t->state) != a->state ||
		    !alive_word_says_alive(a->t, a->state))
			continue;
		uipc_tls_lockval = (uint64_t)SLOT_GEN(a->state) << 32 | (a->slot + 1);
		return thread_at(ns, a->slot);
	}
	return NULL;
}

struct uthread *cur_thread_slow(struct ns *ns)
{
	/* no handler may register this thread again in the middle */
	uipc_crit_enter();
	if (!uipc_tls_thread || uipc_tls_ns != ns) {
		struct uthread *t = own_slot_in(ns);

		uipc_tls_thread = t ? t : register_thread(ns);
		uipc_tls_ns = ns;
	}
	uipc_crit_exit();
	if (uipc_tls_thread)
		reap_noted(ns);
	return uipc_tls_thread;
}

/* Is the thread of slot T alive?  No system call: its alive word says. */
bool thread_alive(struct ns *ns, struct uthread *t)
{
	uint64_t w = atomic_load(&t->state);

	(void)ns;
	return SLOT_STATE(w) == SLOT_LIVE && alive_word_says_alive(t, w);
}

bool lock_holder_alive(struct ns *ns, uint32_t slot, uint32_t gen, uint32_t **word, uint32_t *val)
{
	struct uthread *t = thread_at(ns, slot);
	uint64_t w;

	*word = NULL;
	if (!t)
		return false;
	w = atomic_load(&t->state);
	*word = (uint32_t *)uthread_alive(t);
	*val = __atomic_load_n(*word, __ATOMIC_ACQUIRE);
	if (SLOT_STATE(w) != SLOT_LIVE || SLOT_GEN(w) != (gen & SLOT_GEN_MASK))
		return false;
	return (*val & FUTEX_TID_MASK_) == ((uint32_t)SLOT_ID(w) & FUTEX_TID_MASK_) &&
	       !(*val & FUTEX_OWNER_DIED_);
}

void alive_word_wake_all(uint32_t *w, uint32_t v)
{
	if (w && (v & FUTEX_OWNER_DIED_) && (v & FUTEX_WAITERS_) &&
	    __atomic_compare_exchange_n(w, &v, v & ~FUTEX_WAITERS_, false, __ATOMIC_ACQ_REL,
					__ATOMIC_RELAXED))
		sys_futex_wake(w, INT_MAX);
}

/* the alive word of P's holder, whatever it says (NULL: none) */
static uint32_t *proc_holder_word(struct ns *ns, struct uproc *p)
{
	uint32_t h = atomic_load(&p->holder);
	struct uthread *t = h ? thread_at(ns, h - 1) : NULL;

	return t ? (uint32_t *)uthread_alive(t) : NULL;
}

uint32_t *proc_alive_word(struct ns *ns, struct uproc *p)
{
	uint32_t *w = NULL;

	return proc_holder_alive(ns, p, &w) ? w : NULL;
}

/*
 * Is the process of slot P gone?  Without a system call while the thread
 * that stands for it lives; otherwise (the process died, exec'd, or that
 * thread ended) the pid and its start time decide.
 */
bool proc_is_dead(struct ns *ns, struct uproc *p)
{
	uint64_t w = atomic_load(&p->state);
	bool abrupt;

	if (SLOT_STATE(w) == SLOT_LOAN)
		return !loan_held(ns, proc_index(ns, p), w);
	if (SLOT_STATE(w) != SLOT_LIVE)
		return SLOT_STATE(w) == SLOT_DEAD;
	if (proc_holder_alive(ns, p, NULL))
		return false;
	/* a holder still named but not alive died without handing the
	 * process over (a thread's normal end does that, or clears it when
	 * no other thread of ours is registered): the kernel marked its word */
	abrupt = atomic_load(&p->holder) != 0;
	if (kill(p->pid, 0) < 0 && errno == ESRCH)
		return true;
	{
		/* a zombie has done its exit (the kernel's exit_sem ran then):
		 * dead, whether or not its parent has reaped it yet.  So has a
		 * process killed and in its exit (PF_EXITING, its holder gone
		 * abruptly): the kernel marks the alive words in exit_mm, runs
		 * exit_sem next and then closes its files, which others can see
		 * (a pipe's end), all before the zombie state */
		struct pstat ps = { 0 };
		uint64_t st = read_stat(p->pid, &ps);

		/* unreadable: gone since kill() looked, or it cannot be told
		 * (no fd left here, no memory), which is not a death: a slot
		 * reaped late is a leak for a while, one reaped while its
		 * process lives gives its SEM_UNDO back twice */
		if (!st && errno)
			return errno == ENOENT || errno == ESRCH;
		/* a start time it could not read when it registered (0): the
		 * pid alone names it.  The state is the main thread's: one
		 * that ended with pthread_exit is a zombie while the other
		 * threads run on, and the process keeps its SEM_UNDO until
		 * the last of them exits; a zombie alone is a dead process */
		return (p->starttime && st != p->starttime) ||
		       (ps.state == 'Z' && ps.threads <= 1) || ps.state == 'X' ||
		       (abrupt && (ps.flags & PF_EXITING_));
	}
}

/*
 * Is the reaper a dead process's slot names (thread id R) still at work?
 * A reaper is a thread registered here, so a live one has a live thread
 * slot with its id.  kill() alone is not enough: once the pids have gone
 * round, a killed reaper's id may belong to a thread of any other
 * process, and the dead process would then never be reaped.  (A rare
 * look, at a slot another reaper holds: a walk of the thread slots.)
 */
static bool reaper_alive(struct ns *ns, int32_t r)
{
	uint32_t top = atomic_load(&ns->hdr->threads_hwm);

	if (kill(r, 0) < 0 && errno == ESRCH)
		return false;
	if (top > MAX_THREADS)
		top = MAX_THREADS;
	for (uint32_t i = 0; i < top; i++) {
		struct uthread *t = thread_at(ns, i);
		uint64_t w = t ? atomic_load(&t->state) : 0;

		if (SLOT_STATE(w) == SLOT_LIVE && SLOT_ID(w) == r && alive_word_says_alive(t, w))
			return true;
	}
	return false;
}

/* The exit work of a process that died without doing it (SIGKILL): true
 * if this call did it (false: not dead, or another reaper is at it). */
bool proc_reap(struct ns *ns, struct uproc *p)
{
	uint64_t w = atomic_load(&p->state);
	int32_t me = (int32_t)cur_tid(), r;

	/* a reaper has a live thread slot here all along (reaper_alive) */
	if (p == cur_proc(ns) || !cur_thread(ns))
		return false;
	/*
	 * One reaper per dead process: the state word becomes (reaper tid,
	 * DEAD) in one CAS.  A reaper killed in the middle is replaced (the
	 * exit work is idempotent, entry by entry).
	 */
	if (SLOT_STATE(w) == SLOT_LIVE || SLOT_STATE(w) == SLOT_LOAN) {
		/* the caller saw a dead process in this slot, but the slot may
		 * have been reaped and taken by a new process since: look again
		 * at this incarnation (the CAS fails if the slot changes) */
		if (!proc_is_dead(ns, p))
			return false;
	} else if (SLOT_STATE(w) == SLOT_DEAD) {
		r = SLOT_ID(w);
		if (r == me || (r != 0 && reaper_alive(ns, r)))
			return false;
	} else {
		return false;
	}
	if (!atomic_compare_exchange_strong(&p->state, &w, SLOT_WORD(me, SLOT_DEAD)))
		return false;
	if (SLOT_STATE(w) == SLOT_LOAN) {
		/* a fork child that died before it ran (or no child: the
		 * parent died before fork, id 0): its detaches name it, as
		 * the kernel's at its exit */
		p->pid = SLOT_ID(w);
		p->starttime = 0;
	}
	{
		/* the kernel woke one sleeper of the death (maybe us): the others */
		uint32_t *aw = proc_holder_word(ns, p);

		if (aw)
			alive_word_wake_all(aw, __atomic_load_n(aw, __ATOMIC_ACQUIRE));
	}
	run_exit_hooks(ns, p);
	{
		/* free only if the slot is still ours: a reaper that took our
		 * place (it judged us gone) may hold it, or have freed it for
		 * a new process already */
		uint64_t ours = SLOT_WORD(me, SLOT_DEAD);

		atomic_compare_exchange_strong(&p->state, &ours, SLOT_WORD(0, SLOT_FREE));
	}
	return true;
}

/* Called from the SIGCONT handler: let others see that this process was
 * stopped and continued (its sleepers are no longer waiting).  Only an
 * atomic increment: async-signal-safe. */
void proc_note_continue(void)
{
	struct ns *ns = ns_current();
	uint32_t idx = ns ? __atomic_load_n(&ns->proc_idx, __ATOMIC_ACQUIRE) : UINT32_MAX;
	struct uproc *p = idx != UINT32_MAX ? proc_at(ns, idx) : NULL;

	if (p)
		atomic_fetch_add(&p->cont_gen, 1);
}

/* ---- the namespaces of the process's threads ----
 *
 * The kernel keeps the IPC namespace per task: unshare and setns move the
 * calling thread only, a new thread starts in its creator's, a fork child
 * in its forking thread's.  uipc keeps the process's namespace (nsfile.c's
 * g_ns, which a thread follows) and, for a thread that left it on its own,
 * that thread's (uipc_tls_nsov, read first by ns_get).  The process has a
 * slot in each namespace its threads use (ns->proc_idx): its SEM_UNDO
 * list there, and the attachments made there, which stay counted there
 * until their shmdt (the kernel counts vmas, not tasks: an unshare leaves
 * them alone).  When the last thread of ours leaves a namespace, the
 * kernel's exit_sem and exit_shm of the last task sharing the undo list
 * run there (proc_leave hooks); the namespace stays mapped while
 * attachments made in it are (ns->left, on g_held), and is let go with the
 * last of them (proc_ns_idle).  Counting a namespace's threads: those in a
 * namespace of their own are counted (ns->threads, g_nov); the others
 * follow the process's, so they are the rest of /proc/self/stat's count.
 */

/* reg_mutex held */
static void held_add(struct ns *ns)
{
	for (struct ns *h = g_held; h; h = h->held_next)
		if (h == ns)
			return;
	ns->held_next = g_held;
	g_held = ns;
}

static void held_del(struct ns *ns)
{
	for (struct ns **l = &g_held; *l; l = &(*l)->held_next) {
		if (*l == ns) {
			*l = ns->held_next;
			ns->held_next = NULL;
			return;
		}
	}
}

/* the namespaces this process keeps (its own first), at most MAX */
static int kept(struct ns **out, int max)
{
	struct ns *pr = ns_process();
	int n = 0;

	if (pr && n < max)
		out[n++] = pr;
	for (struct ns *h = g_held; h && n < max; h = h->held_next)
		if (h != pr)
			out[n++] = h;
	return n;
}
#define KEPT_MAX 256

/* threads of ours in NS (reg_mutex held), ALL: the process's threads */
static long threads_in(struct ns *ns, long all)
{
	long n = ns->threads;

	if (ns == ns_process())
		n += all - g_nov;
	return n < 0 ? 0 : n;
}

/* the one of ours that is NS (the same file), if kept: NULL */
static struct ns *kept_same(struct ns *ns)
{
	struct ns *pr = ns_process();

	if (pr && ns_same(pr, ns))
		return pr;
	for (struct ns *h = g_held; h; h = h->held_next)
		if (ns_same(h, ns))
			return h;
	return NULL;
}

/* this process is a new one: none of the registry's state is its own */
static void forget_registration(void)
{
	struct ns *all[KEPT_MAX];
	int n = kept(all, KEPT_MAX);

	uipc_pid = 0;
	g_starttime = 0;
	tls_tid = 0;
	for (int i = 0; i < n; i++) {
		all[i]->proc_idx = UINT32_MAX;
		all[i]->stale_idx = UINT32_MAX;
		all[i]->nreap = 0;
		all[i]->threads = 0;
	}
	g_nov = 0;
	uipc_tls_thread = NULL;
	uipc_tls_ns = NULL;
	uipc_tls_lockval = 0;
	pending_head = NULL;       /* a new task: the kernel knows no head yet */
	j_forget_held();
	drop_inherited_aliases();
	pthread_mutex_init(&reg_mutex, NULL);
}

static void run_leave_hooks(struct ns *ns)
{
	for_each_hooks(h)
		if (h->ns_leave)
			h->ns_leave(ns);
}

static void run_proc_leave_hooks(struct ns *ns, struct uproc *p)
{
	for_each_hooks(h)
		if (h->proc_leave)
			h->proc_leave(ns, p);
}

/* Give back this process's slot in NS, and this thread's slots there.
 * (Other threads' slots there go when they end.)  DONE: its exit work was
 * done whole; else the slot is handed over as a dead process's, with no
 * reaper yet, so that a survivor's reaper finishes it (its SEM_UNDO
 * adjustments, its attachments) once the lock it could not have is free
 * again (lockwait.c).  PARK: NS is being made anew in place (the alias of
 * this thread's slot is kept for its next registration there). */
static void give_own_slot_back(struct ns *ns, bool done, bool park)
{
	uint32_t idx = __atomic_load_n(&ns->proc_idx, __ATOMIC_ACQUIRE);
	struct uproc *p = idx == UINT32_MAX ? NULL : proc_at(ns, idx);

	release_thread_slots_park(ns, park);
	crit_mutex_lock(&reg_mutex);
	__atomic_store_n(&ns->proc_idx, UINT32_MAX, __ATOMIC_RELEASE);
	ns->stale_idx = UINT32_MAX;
	ns->nreap = 0;
	ns->exit_undone = false;
	crit_mutex_unlock(&reg_mutex);
	if (!p)
		return;
	atomic_store(&p->holder, 0);
	/* AIO contexts made in NS go on counting there after we left it
	 * (core/aionr.c): the slot stays, holderless, while the process lives
	 * (what the exit work left undone is then done at its end) */
	if (ns_aio_keeps_slot(ns, p))
		return;
	atomic_store(&p->state, SLOT_WORD(0, done ? SLOT_FREE : SLOT_DEAD));
}

static void free_own_slot(struct ns *ns, bool done)
{
	give_own_slot_back(ns, done, false);
}

/* threads of this process (field 20 of /proc/self/stat); 0: unknown */
static long nr_threads(void)
{
	char buf[1024];
	char *p = stat_after_comm(0, buf, sizeof(buf));

	for (int field = 2; field < 20 && p; field++)
		p = strchr(p + 1, ' ');
	return p ? strtol(p + 1, NULL, 10) : 0;
}

/* more than one thread (a process that never made one need not read /proc) */
static long process_threads(void)
{
	long n;

	if (__libc_single_threaded)
		return 1;
	n = nr_threads();
	return n > 0 ? n : 2;
}

/* run_proc_leave_hooks bounded as run_own_exit_hooks: false if a lock
 * wait gave up */
static bool run_own_leave_hooks(struct ns *ns, struct uproc *p)
{
	unsigned failed = lockwait_tls.failed;

	lockwait_bound_max(EXIT_LOCK_WAIT_NS);
	run_proc_leave_hooks(ns, p);
	lockwait_bound_end();
	return lockwait_tls.failed == failed;
}

/* NS, left by this process's last thread there, stays held (mapped,
 * without its fd) while attachments made in it are: true if so; their
 * last shmdt lets it go (proc_ns_idle) */
static bool keep_while_attached(struct ns *ns)
{
	if (!proc_ns_busy(ns))
		return false;
	ns_unpin(ns);
	crit_mutex_lock(&reg_mutex);
	ns->left = true;
	held_add(ns);
	crit_mutex_unlock(&reg_mutex);
	return true;
}

/* NS's file was found truncated (fault.c): what this process knew of it
 * goes without a look at its arena (its slots there are zero pages now,
 * or another's memory); the survivors, if any, see a dead process.  The
 * leave hooks touch only this process's memory (cached fds, ids seen).
 * Attachments made there stay mapped until their shmdt, and NS with them
 * (their records name it). */
static void leave_broken(struct ns *ns, bool mt)
{
	run_leave_hooks(ns);
	uipc_crit_enter();      /* no handler's registration takes it meanwhile */
	parked_drop(ns);
	uipc_crit_exit();
	crit_mutex_lock(&reg_mutex);
	__atomic_store_n(&ns->proc_idx, UINT32_MAX, __ATOMIC_RELEASE);
	ns->stale_idx = UINT32_MAX;
	ns->nreap = 0;
	crit_mutex_unlock(&reg_mutex);
	if (uipc_tls_ns == ns) {
		uipc_tls_thread = NULL;
		uipc_tls_ns = NULL;
	}
	if (keep_while_attached(ns))
		return;
	crit_mutex_lock(&reg_mutex);
	held_del(ns);
	crit_mutex_unlock(&reg_mutex);
	ns_release(ns, mt);
}

/*
 * No thread of ours is in NS any more (it is not the process's, or
 * RELEASE is false): the kernel's exit_sem and exit_shm for the last task
 * there.  What we keep that names NS's objects goes; NS itself goes too
 * unless attachments made in it are still mapped (then it stays, mapped,
 * without its fd or marker, until their shmdt: proc_ns_idle), or RELEASE
 * is false (the process's own, whose threads all went elsewhere or ended).
 */
static void leave_last(struct ns *ns, bool release, bool mt)
{
	/* registering finds our slot again after an exec: its SEM_UNDO list */
	struct uproc *p;
	bool done = true;

	if (__atomic_load_n(&ns->broken, __ATOMIC_ACQUIRE)) {
		leave_broken(ns, mt);   /* its arena is not to be touched */
		return;
	}
	p = cur_proc(ns);
	run_leave_hooks(ns);
	/* exit_sem, exit_shm: bounded as the exit work is (a member stopped
	 * holding a lock must not hold up the unshare or setns: what is left
	 * undone, our exit work or the survivors' reaper does) */
	if (p)
		done = run_own_leave_hooks(ns, p);
	if (!release)
		return;
	if (keep_while_attached(ns))
		return;
	if (p && done)
		done = run_own_exit_hooks(ns, p);
	free_own_slot(ns, done);
	crit_mutex_lock(&reg_mutex);
	held_del(ns);
	crit_mutex_unlock(&reg_mutex);
	uipc_tls_thread = uipc_tls_ns == ns ? NULL : uipc_tls_thread;
	uipc_tls_ns = uipc_tls_ns == ns ? NULL : uipc_tls_ns;
	/* another thread may still be inside a call in it, or end with a
	 * slot in it: its mapping stays while we have other threads */
	ns_release(ns, mt);
}

static void mark_thread_key(void);

/* this thread goes to NS, not the process's (reg_mutex held) */
static void thread_enter_own(struct ns *ns)
{
	uipc_tls_nsov = ns;
	ns->threads++;
	g_nov++;
	ns->left = false;
	held_add(ns);
	ns_guard_fd(ns->anon_fd, true);
	ns_guard_fd(ns->cnt_fd, true);
}

void proc_switch_ns(struct ns *new)
{
	struct ns *old = ns_get_existing(), *pr, *same, *prev;
	long all = process_threads();
	bool last;

	crit_mutex_lock(&reg_mutex);
	/* a namespace we keep already (a thread of ours is in it, or
	 * attachments made in it): that one, with NEW's hold on the file */
	same = kept_same(new);
	if (same && same != new) {
		if (same->anon_fd < 0 && new->anon_fd >= 0) {
			same->anon_fd = new->anon_fd;
			new->anon_fd = -1;
		}
		if (same->hold_fd < 0 && new->hold_fd >= 0) {
			same->hold_fd = new->hold_fd;
			new->hold_fd = -1;
		}
		crit_mutex_unlock(&reg_mutex);
		ns_anon_drop(new);
		new = same;
		crit_mutex_lock(&reg_mutex);
	}
	pr = ns_process();
	/* credentials are judged against the owner user namespace (cred.c):
	 * anew when this thread's changes */
	if (!old || memcmp(&old->owner, &new->owner, sizeof(new->owner)))
		cred_invalidate();
	if (all == 1) {
		/* one thread: the process moves, as before */
		for (struct ns *h = g_held; h; h = h->held_next)
			h->threads = 0;
		g_nov = 0;
		uipc_tls_nsov = NULL;
		held_del(new);
		new->left = false;
		crit_mutex_unlock(&reg_mutex);
		prev = ns_switch(new);
		if (prev && prev != new)
			leave_last(prev, true, false);
		return;
	}
	/* several: this thread moves, the others stay */
	if (uipc_tls_nsov) {
		uipc_tls_nsov->threads--;
		g_nov--;
		uipc_tls_nsov = NULL;
	}
	if (new != pr) {
		thread_enter_own(new);
		mark_thread_key();
	}
	last = old && old != new && threads_in(old, all) == 0;
	if (last && old == pr && uipc_tls_nsov) {
		/* the process's namespace has no thread left: this thread's
		 * becomes the process's */
		new->threads--;
		g_nov--;
		uipc_tls_nsov = NULL;
		held_del(new);
		crit_mutex_unlock(&reg_mutex);
		prev = ns_switch(new);
		(void)prev;
		leave_last(old, true, true);
		return;
	}
	crit_mutex_unlock(&reg_mutex);
	if (last)
		leave_last(old, old != pr, true);
}

struct ns *proc_thread_ns_hold(void)
{
	struct ns *ns = uipc_tls_nsov;

	if (likely(!ns))
		return NULL;
	crit_mutex_lock(&reg_mutex);
	ns->threads++;
	g_nov++;
	crit_mutex_unlock(&reg_mutex);
	return ns;
}

void proc_thread_ns_unhold(struct ns *ns)
{
	crit_mutex_lock(&reg_mutex);
	ns->threads--;
	g_nov--;
	crit_mutex_unlock(&reg_mutex);
}

void proc_thread_ns_start(struct ns *ns)
{
	uipc_tls_nsov = ns;
	mark_thread_key();
}

void proc_ns_idle(struct ns *ns)
{
	bool gone;

	crit_mutex_lock(&reg_mutex);
	gone = ns->left && ns->threads == 0 && ns != ns_process() && !proc_ns_busy(ns);
	if (gone)
		held_del(ns);
	crit_mutex_unlock(&reg_mutex);
	if (!gone)
		return;
	if (!__atomic_load_n(&ns->broken, __ATOMIC_ACQUIRE)) {
		struct uproc *p = ns->proc_idx == UINT32_MAX ? NULL : proc_at(ns, ns->proc_idx);

		free_own_slot(ns, !p || run_own_exit_hooks(ns, p));
	}
	if (uipc_tls_ns == ns) {
		uipc_tls_thread = NULL;
		uipc_tls_ns = NULL;
	}
	ns_release(ns, process_threads() != 1);
}

static void thread_exit_hook(void *arg)
{
	struct ns *mine = uipc_tls_nsov, *pr;

	(void)arg;
	if (mine || __atomic_load_n(&g_nov, __ATOMIC_RELAXED)) {
		/* this thread's end: the last of ours in its namespace runs the
		 * kernel's exit_sem there (the undo list's last holder) */
		long all = nr_threads() - 1;
		struct ns *empty = NULL;

		crit_mutex_lock(&reg_mutex);
		pr = ns_process();
		if (mine) {
			mine->threads--;
			g_nov--;
			uipc_tls_nsov = NULL;
			all++;    /* counted as a follower now: not one */
			if (threads_in(mine, all) - (mine == pr) <= 0)
				empty = mine;
		} else if (all > 0 && pr && threads_in(pr, all) == 0) {
			empty = pr;
		}
		crit_mutex_unlock(&reg_mutex);
		if (empty)
			leave_last(empty, empty != pr, true);
	}
	/* a thread that ends normally holds no uipc lock: give its slots back */
	release_thread_slots(NULL);
}

static void make_key(void)
{
	pthread_key_create(&thread_key, thread_exit_hook);
}

/* this thread's end must be seen (thread_exit_hook) */
static void mark_thread_key(void)
{
	pthread_once(&key_once, make_key);
	if (!pthread_getspecific(thread_key))
		pthread_setspecific(thread_key, &g_nov);
}

/* ---- pthread_create: a new thread starts in its creator's namespace ----
 *
 * (Here, not in entry/, though it is a libc name: aio/ makes threads with
 * it, and the layers above core may call only down.)  The kernel's
 * namespaces are per thread, and a thread starts in its creator's.  A thread that unshared or joined on its own (core/proc.c)
 * is in a namespace that is not the process's: the threads it makes start
 * there.  Costs nothing to a thread in the process's namespace. */
struct thread_start {
	void *(*fn)(void *);
	void *arg;
	struct ns *ns;
};

static void *thread_start(void *p)
{
	struct thread_start st = *(struct thread_start *)p;

	free(p);
	proc_thread_ns_start(st.ns);
	return st.fn(st.arg);
}

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static pthread_create_fn real_pthread_create;

__attribute__((visibility("default"))) int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	struct thread_start *st;
	struct ns *ns;
	int r;

	if (unlikely(!real_pthread_create))
		real_pthread_create = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
	if (likely(!uipc_tls_nsov))
		return real_pthread_create(t, attr, fn, arg);
	st = malloc(sizeof(*st));
	if (!st)
		return EAGAIN;
	ns = proc_thread_ns_hold();
	*st = (struct thread_start){ fn, arg, ns };
	r = real_pthread_create(t, attr, thread_start, st);
	if (r) {
		if (ns)
			proc_thread_ns_unhold(ns);
		free(st);
	}
	return r;
}

/* ---- lifecycle ---- */

static void atfork_prepare(void)
{
	/* a child that changes its uid before its first IPC call must still be
	 * in this namespace, as with kernel IPC: open it now */
	ns_open_for_fork();
	/* the child gets the list of aliases whole */
	pthread_mutex_lock(&alias_mutex);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&alias_mutex);
}

/* In a new process (fork, clone): the namespaces kept for other threads
 * of the parent go (their fds and our copies of their mappings), but for
 * those the child's inherited attachments were counted in. */
static void release_unused(void)
{
	struct ns *all[KEPT_MAX];
	int n = kept(all, KEPT_MAX);

	for (int i = 1; i < n; i++) {
		struct ns *ns = all[i];

		if (ns == ns_process())
			continue;
		if (proc_ns_busy(ns)) {
			ns_unpin(ns);
			ns->left = true;
			continue;
		}
		held_del(ns);
		ns_release(ns, false);
	}
}

/* a new process's namespace: the namespace of the thread that made it */
static void adopt_thread_ns(void)
{
	struct ns *mine = uipc_tls_nsov, *prev;

	if (!mine)
		return;
	uipc_tls_nsov = NULL;
	held_del(mine);
	mine->left = false;
	prev = ns_switch(mine);
	if (prev && prev != mine)
		held_add(prev);
}

static void atfork_child(void)
{
	/* the child is a new process: new pid, no undo list, no thread slot,
	 * in the namespace of the thread that forked */
	forget_registration();
	adopt_thread_ns();
	run_fork_child_hooks(); /* e.g. shm: the child inherits the attachments */
	release_unused();
}

/* The child of clone(CLONE_NEWIPC) without CLONE_VM: a new process (no
 * atfork handler ran) that starts in NEW.  It was never registered in the
 * parent's namespace and has no SEM_UNDO list (the kernel does not give a
 * clone child one either); the attachments it inherited are counted in
 * their namespaces, as a fork child's. */
void proc_clone_child(struct ns *new, void *robust_head, size_t robust_len, pid_t *tid_addr)
{
	struct ns *prev;

	/* glibc's word for this thread's tid, which robust mutexes record as
	 * their owner (the kernel marks them owner-dead at our death only if
	 * it is ours): the parent's after a clone that is not its fork */
	if (tid_addr)
		*tid_addr = (pid_t)sys_syscall(SYS_gettid);

	/*
	 * The parent's list of robust mutexes held (glibc's, at the same
	 * address in our copy of its memory) names locks and alive words of
	 * the parent's; the kernel gave this new task no list at all.  Start
	 * an empty one, as glibc's fork does: else our death would mark the
	 * parent's words.  (struct robust_list_head: the list first, the
	 * pending entry third; glibc's "prev" of the head just before it.)
	 */
	if (robust_head) {
		void **h = robust_head;

		h[0] = h;
		h[-1] = h;
		h[2] = NULL;
		sys_syscall(SYS_set_robust_list, robust_head, robust_len);
	}
	forget_registration();
	uipc_tls_nsov = NULL;
	{
		struct ns *all[KEPT_MAX];
		int n = kept(all, KEPT_MAX);

		for (int i = 0; i < n; i++)
			run_leave_hooks(all[i]);   /* the parent's fds of its segments */
	}
	prev = ns_switch(new);
	if (prev)
		held_add(prev);
	run_fork_child_hooks();
	release_unused();
}

/* The kernel's exit work (exit_sem, exit_shm, ...): every layer's
 * proc_exit for this process, in every namespace it is registered in. */
void proc_exit_work(void)
{
	struct ns *all[KEPT_MAX];
	int n;

	if (!uipc_pid || (pid_t)sys_syscall(SYS_getpid) != uipc_pid)
		return; /* never registered, or a vfork child sharing our memory */
	if (!ns_process())
		ns_get();
	crit_mutex_lock(&reg_mutex);
	n = kept(all, KEPT_MAX);
	crit_mutex_unlock(&reg_mutex);
	for (int i = 0; i < n; i++) {
		uint32_t idx = __atomic_load_n(&all[i]->proc_idx, __ATOMIC_ACQUIRE);
		struct uproc *p = idx == UINT32_MAX ? NULL : proc_at(all[i], idx);

		/* a lock held by a stopped or hostile member must not keep
		 * this process from exiting: each wait is bounded (what is
		 * left undone, a survivor's reaper does: free_own_slot) */
		if (p && !run_own_exit_hooks(all[i], p))
			all[i]->exit_undone = true;
	}
	/* the namespaces' counts go now, not at the kernel's close of the
	 * fds: the last one out removes the user's count file */
	for (int i = 0; i < n; i++) {
		ns_count_let_go(all[i]->cnt_fd);
		all[i]->cnt_fd = -1;
	}
}

void proc_exit_now(void)
{
	struct ns *all[KEPT_MAX];
	int n;

	proc_exit_work();
	if (!uipc_pid || (pid_t)sys_syscall(SYS_getpid) != uipc_pid)
		return;
	crit_mutex_lock(&reg_mutex);
	n = kept(all, KEPT_MAX);
	crit_mutex_unlock(&reg_mutex);
	for (int i = 0; i < n; i++)
		if (all[i]->proc_idx != UINT32_MAX)
			free_own_slot(all[i], !all[i]->exit_undone);
}

/* An exec: the new image is in this thread's namespace only, and none of
 * the old image's attachments stay: the namespaces kept besides this
 * thread's (left ones with attachments, the process's or others' when
 * this thread is in one of its own) get this process's exit work, as the
 * kernel's exec ends the other threads and closes every vma. */
void proc_exec_prepare(void)
{
	struct ns *all[KEPT_MAX], *me = ns_current();
	int n;

	if (likely(!__atomic_load_n(&g_held, __ATOMIC_RELAXED)))
		return;
	if (!uipc_pid || (pid_t)sys_syscall(SYS_getpid) != uipc_pid)
		return;  /* a vfork child: its exec is not ours */
	crit_mutex_lock(&reg_mutex);
	n = kept(all, KEPT_MAX);
	crit_mutex_unlock(&reg_mutex);
	for (int i = 0; i < n; i++) {
		uint32_t idx = __atomic_load_n(&all[i]->proc_idx, __ATOMIC_ACQUIRE);
		struct uproc *p = idx == UINT32_MAX ? NULL : proc_at(all[i], idx);

		if (all[i] == me || !p)
			continue;
		free_own_slot(all[i], run_own_exit_hooks(all[i], p));
	}
}

/* NS is made anew in place for this process's unshare (one thread, no
 * attachment of it): what the process keeps of it goes, and its slots
 * there, with no exit work (nobody else can see NS) */
void proc_forget_ns(struct ns *ns)
{
	run_leave_hooks(ns);
	give_own_slot_back(ns, true, true);
	uipc_tls_thread = NULL;
	uipc_tls_ns = NULL;
}

bool proc_ns_busy(struct ns *ns)
{
	for_each_hooks(h)
		if (h->ns_busy && h->ns_busy(ns))
			return true;
	return false;
}

void proc_undo_ns(struct ns *ns)
{
	/* registering finds our slot again after an exec: its SEM_UNDO list */
	struct uproc *p;
	long all = process_threads();
	bool alone;

	/* the kernel's exit_sem at setns drops this thread's hold on the
	 * undo list: applied only by its last holder */
	crit_mutex_lock(&reg_mutex);
	alone = all == 1 || threads_in(ns, all) <= 1;
	crit_mutex_unlock(&reg_mutex);
	if (!alone)
		return;
	p = cur_proc(ns);
	if (!p)
		return;
	/* bounded as leaving (above); what is left undone stays its own, done
	 * when it leaves or exits */
	lockwait_bound_max(EXIT_LOCK_WAIT_NS);
	for_each_hooks(h)
		if (h->proc_undo)
			h->proc_undo(ns, p);
	lockwait_bound_end();
}

__attribute__((constructor)) static void proc_init(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	atexit(proc_exit_now);
}
