/*
 * proc.c - the process and thread registry of a namespace, and the process
 * lifecycle hooks (fork, exit, _exit).
 *
 * A process registers lazily on its first call that needs it; a thread gets a
 * slot on its first lock.  The thread slot holds the thread's journal frames
 * and an "alive" robust mutex that the thread holds for its whole life: when
 * the thread dies (exit, SIGKILL, exec), the kernel marks it owner-dead, which
 * lets any survivor tell, without a system call, whether a waiter is still
 * there.  A process slot carries the pid and the process start time (so a
 * recycled pid is never mistaken for the old process) and its SEM_UNDO list;
 * it survives exec, as SEM_UNDO state does in the kernel.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/core.h"

static pid_t g_pid;                  /* cached getpid(), reset in the fork child */
static uint32_t g_proc_idx = UINT32_MAX;
static uint32_t g_stale_idx = UINT32_MAX; /* a dead process with our pid */
static pthread_mutex_t reg_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t thread_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
/* this thread's slot; read inline by cur_thread() (core.h) */
__thread struct uthread *uipc_tls_thread;
__thread struct ns *uipc_tls_ns;
static struct ns *g_ns_for_hooks;

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

int cur_pid(void)
{
	if (unlikely(!g_pid))
		g_pid = getpid();
	return g_pid;
}

static bool frames_idle(struct uthread *t);

static uint64_t read_stat(pid_t pid, char *state);

static uint64_t read_starttime(pid_t pid)
{
	return read_stat(pid, NULL);
}

/* /proc/PID/stat: the start time (field 22) and the state (field 3) */
static uint64_t read_stat(pid_t pid, char *state)
{
	char path[64], buf[1024];
	ssize_t n;
	int fd;
	char *p;
	int field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = sys_open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	sys_close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	if (state && p[1] == ' ')
		*state = p[2];
	/* field 3 starts after ") "; starttime is field 22 */
	for (field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

struct uproc *proc_at(struct ns *ns, uint32_t idx)
{
	if (idx >= MAX_PROCS)
		return NULL;
	return ns_ptr(ns, ns->lay.procs + (uoff_t)idx * sizeof(struct uproc),
		      sizeof(struct uproc));
}

static struct uthread *thread_at(struct ns *ns, uint32_t idx)
{
	if (idx >= MAX_THREADS)
		return NULL;
	return ns_ptr(ns, ns->lay.threads + (uoff_t)idx * sizeof(struct uthread),
		      sizeof(struct uthread));
}

static bool frames_idle(struct uthread *t)
{
	for (int i = 0; i < JDEPTH; i++)
		if (atomic_load(&t->frames[i].lock))
			return false;
	return true;
}

/* A slot claimed by an id that no longer exists can be taken over. */
static bool claimer_gone(uint64_t w)
{
	pid_t id = SLOT_ID(w);

	return id <= 0 || (kill(id, 0) < 0 && errno == ESRCH);
}

/*
 * Claim a slot of a table: first one whose state is FREE (or whose claimer
 * died mid-claim), else the next above the high-water mark.
 */
static int claim_slot(struct ns *ns, bool threads, int32_t id)
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
		uint64_t w;

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
		if (threads && (SLOT_STATE(w) == SLOT_LIVE || SLOT_STATE(w) == SLOT_DEAD)) {
			struct uthread *t = (struct uthread *)st;

			/* a dead thread's slot is reusable once its frames are idle */
			if (SLOT_STATE(w) == SLOT_LIVE && thread_alive(ns, t))
				continue;
			w = atomic_load(st);
			if (SLOT_STATE(w) != SLOT_DEAD || !frames_idle(t))
				continue;
		} else if (SLOT_STATE(w) == SLOT_CLAIMING && !claimer_gone(w))
			continue;
		/* a DEAD process slot is being reaped: not free until FREE */
		if (SLOT_STATE(w) != SLOT_FREE && SLOT_STATE(w) != SLOT_CLAIMING &&
		    !(threads && SLOT_STATE(w) == SLOT_DEAD))
			continue;
		if (atomic_compare_exchange_strong(st, &w, SLOT_WORD(id, SLOT_CLAIMING)))
			return (int)i;
	}
	return -1;
}

static uint32_t register_proc(struct ns *ns)
{
	pid_t pid = cur_pid();
	uint64_t start = read_starttime(pid);
	uint32_t i, top = atomic_load(&ns->hdr->procs_hwm);
	struct uproc *p;
	int idx;

	/* after exec: the slot of this very process is still there */
	for (i = 0; i < top && i < MAX_PROCS; i++) {
		p = proc_at(ns, i);
		if (p && atomic_load(&p->state) == SLOT_WORD(pid, SLOT_LIVE)) {
			if (p->starttime == start) {
				/* the old image's attachments are gone */
				run_exec_hooks(i);
				return i;
			}
			/* a dead process whose pid we got: its exit work is done
			 * once we are registered (see cur_proc_idx) */
			g_stale_idx = i;
		}
	}
	idx = claim_slot(ns, false, pid);
	if (idx < 0)
		return UINT32_MAX;
	p = proc_at(ns, (uint32_t)idx);
	if (!p)
		return UINT32_MAX;
	{
		pthread_mutexattr_t a;

		pthread_mutexattr_init(&a);
		pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
		pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
		pthread_mutex_init(&p->alive, &a);
		pthread_mutexattr_destroy(&a);
		atomic_store(&p->alive_tid, 0);
	}
	ulock_init(&p->lock);
	p->pid = pid;
	p->starttime = start;
	p->undo = 0;
	atomic_store(&p->state, SLOT_WORD(pid, SLOT_LIVE));
	return (uint32_t)idx;
}

/*
 * The process's alive lock is held by one of its live threads, so that the
 * kernel marks it owner-dead when the process dies.  A thread that ends
 * while the process lives on lets it go (thread_exit_hook) and the next
 * thread that registers takes it again.
 */
static void hold_proc_alive(struct uproc *p)
{
	pid_t tid = (pid_t)sys_syscall(SYS_gettid);
	int r;

	if (!p || atomic_load(&p->alive_tid) != 0)
		return;
	r = pthread_mutex_trylock(&p->alive);
	if (r == EOWNERDEAD) {
		/* our own previous image (before exec) held it */
		pthread_mutex_consistent(&p->alive);
		r = 0;
	}
	if (r == 0)
		atomic_store(&p->alive_tid, tid);
}

/*
 * The slots of dead processes (issue 14, item 7).  A process killed
 * without its exit work leaves its slot LIVE; register_proc reclaims it
 * only when a new process gets the same pid, which with a large pid_max
 * may never happen: the table filled and new processes got ENOMEM.  So
 * whenever a registration makes the table reach a power of two (64, 128,
 * ...), the new process reaps the dead processes among the slots below: a
 * scan of N slots every N registrations, and the table never holds more
 * than about twice the processes that live.
 */
static bool reclaim_due(uint32_t idx)
{
	uint32_t n = idx + 1;

	return n >= 64 && (n & (n - 1)) == 0;
}

static void reclaim_dead_slots(struct ns *ns, uint32_t me)
{
	uint32_t top = atomic_load(&ns->hdr->procs_hwm);

	if (top > MAX_PROCS)
		top = MAX_PROCS;
	for (uint32_t i = 0; i < top; i++) {
		struct uproc *p = proc_at(ns, i);

		if (p && i != me && SLOT_STATE(atomic_load(&p->state)) == SLOT_LIVE &&
		    proc_is_dead(ns, p))
			proc_reap(ns, p);
	}
}

static uint32_t cur_proc_idx(struct ns *ns)
{
	uint32_t idx = __atomic_load_n(&g_proc_idx, __ATOMIC_ACQUIRE);

	if (likely(idx != UINT32_MAX))
		return idx;
	uint32_t stale;
	bool registered = false;

	pthread_mutex_lock(&reg_mutex);
	if (g_proc_idx == UINT32_MAX) {
		idx = register_proc(ns);
		if (idx != UINT32_MAX)
			hold_proc_alive(proc_at(ns, idx));
		__atomic_store_n(&g_proc_idx, idx, __ATOMIC_RELEASE);
		registered = idx != UINT32_MAX;
	}
	idx = g_proc_idx;
	stale = g_stale_idx;
	g_stale_idx = UINT32_MAX;
	pthread_mutex_unlock(&reg_mutex);
	/* a dead process had our pid and nobody did its exit work yet */
	if (stale != UINT32_MAX && idx != UINT32_MAX)
		proc_reap(ns, proc_at(ns, stale));
	/* the table grew to a power of two: the dead among it go */
	if (registered && reclaim_due(idx))
		reclaim_dead_slots(ns, idx);
	return idx;
}

struct uproc *cur_proc(struct ns *ns)
{
	uint32_t idx = cur_proc_idx(ns);

	return idx == UINT32_MAX ? NULL : proc_at(ns, idx);
}

static void thread_exit_hook(void *arg)
{
	struct uthread *t = arg;
	struct ns *ns = __atomic_load_n(&g_ns_for_hooks, __ATOMIC_ACQUIRE);
	struct uproc *p;

	if (!t || t != uipc_tls_thread)
		return;
	/* hand the process's alive lock back if this thread holds it */
	p = ns && g_proc_idx != UINT32_MAX ? proc_at(ns, g_proc_idx) : NULL;
	if (p && atomic_load(&p->alive_tid) == t->tid) {
		atomic_store(&p->alive_tid, 0);
		pthread_mutex_unlock(&p->alive);
	}
	/* a thread that ends normally holds no uipc lock: give the slot back */
	uipc_tls_thread = NULL;
	atomic_store(&t->state, SLOT_WORD(t->tid, SLOT_DEAD));
	pthread_mutex_unlock(&t->alive);
	atomic_store(&t->state, SLOT_WORD(0, SLOT_FREE));
}

static void make_key(void)
{
	pthread_key_create(&thread_key, thread_exit_hook);
}

static struct uthread *register_thread(struct ns *ns)
{
	pid_t tid = (pid_t)sys_syscall(SYS_gettid);
	uint32_t pidx = cur_proc_idx(ns);
	pthread_mutexattr_t a;
	struct uthread *t;
	int idx;

	if (pidx == UINT32_MAX)
		return NULL;
	idx = claim_slot(ns, true, tid);
	if (idx < 0)
		return NULL;
	t = thread_at(ns, (uint32_t)idx);
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&t->alive, &a);
	pthread_mutexattr_destroy(&a);
	pthread_mutex_lock(&t->alive);
	t->tid = tid;
	t->pid = cur_pid();
	t->proc = pidx;
	t->depth = 0;
	memset(t->frames, 0, sizeof(t->frames));
	atomic_store(&t->state, SLOT_WORD(tid, SLOT_LIVE));
	__atomic_store_n(&g_ns_for_hooks, ns, __ATOMIC_RELEASE);
	hold_proc_alive(proc_at(ns, pidx));
	pthread_once(&key_once, make_key);
	pthread_setspecific(thread_key, t);
	return t;
}

struct uthread *cur_thread_slow(struct ns *ns)
{
	/* no handler may register this thread again in the middle */
	uipc_crit_enter();
	if (!uipc_tls_thread || uipc_tls_ns != ns) {
		uipc_tls_thread = register_thread(ns);
		uipc_tls_ns = ns;
	}
	uipc_crit_exit();
	return uipc_tls_thread;
}

/*
 * Is the thread of slot T alive?  No system call: a live thread holds its
 * alive mutex, and the kernel marks it owner-dead when the thread dies.
 */
bool thread_alive(struct ns *ns, struct uthread *t)
{
	uint64_t w = atomic_load(&t->state);
	int r;

	(void)ns;
	if (SLOT_STATE(w) != SLOT_LIVE)
		return false;
	{
		/* the usual answer without a write to another process's line:
		 * the lock word still holds the thread's tid, not marked dead */
		unsigned v = __atomic_load_n((unsigned *)&t->alive.__data.__lock, __ATOMIC_ACQUIRE);

		if ((v & 0x3fffffffu) == (unsigned)t->tid && !(v & 0x40000000u))
			return true;
	}
	r = pthread_mutex_trylock(&t->alive);
	if (r == EBUSY)
		return true;
	if (r == EOWNERDEAD) {
		pthread_mutex_consistent(&t->alive);
		/* keep the slot until its journal frames are recovered */
		if (frames_idle(t))
			atomic_compare_exchange_strong(&t->state, &w,
						       SLOT_WORD(SLOT_ID(w), SLOT_DEAD));
	}
	if (r == 0 || r == EOWNERDEAD)
		pthread_mutex_unlock(&t->alive);
	return false;
}

/*
 * Is the process of slot P gone?  Without a system call while one of its
 * threads holds the alive lock; otherwise (the process died, exec'd, or the
 * holding thread ended) the pid and its start time decide.
 */
bool proc_is_dead(struct ns *ns, struct uproc *p)
{
	uint64_t w = atomic_load(&p->state);
	int r;

	(void)ns;
	if (SLOT_STATE(w) != SLOT_LIVE)
		return SLOT_STATE(w) == SLOT_DEAD;
	r = pthread_mutex_trylock(&p->alive);
	if (r == EBUSY)
		return false;
	if (r == EOWNERDEAD)
		pthread_mutex_consistent(&p->alive);
	if (r == 0 || r == EOWNERDEAD)
		pthread_mutex_unlock(&p->alive);
	if (kill(p->pid, 0) < 0 && errno == ESRCH)
		return true;
	{
		/* a zombie has done its exit (the kernel's exit_sem ran then):
		 * dead, whether or not its parent has reaped it yet */
		char state = 0;
		uint64_t st = read_stat(p->pid, &state);

		return st != p->starttime || state == 'Z' || state == 'X';
	}
}

/* The exit work of a process that died without doing it (SIGKILL). */
void proc_reap(struct ns *ns, struct uproc *p)
{
	uint64_t w = atomic_load(&p->state);
	int32_t me = (int32_t)sys_syscall(SYS_gettid), r;

	if (p == cur_proc(ns))
		return;
	/*
	 * One reaper per dead process: the state word becomes (reaper tid,
	 * DEAD) in one CAS.  A reaper killed in the middle is replaced (the
	 * exit work is idempotent, entry by entry).
	 */
	if (SLOT_STATE(w) == SLOT_LIVE) {
		/* the caller saw a dead process in this slot, but the slot may
		 * have been reaped and taken by a new process since: look again
		 * at this incarnation (the CAS fails if the slot changes) */
		if (!proc_is_dead(ns, p))
			return;
	} else if (SLOT_STATE(w) == SLOT_DEAD) {
		r = SLOT_ID(w);
		if (r == me || (r != 0 && !(kill(r, 0) < 0 && errno == ESRCH)))
			return;
	} else {
		return;
	}
	if (!atomic_compare_exchange_strong(&p->state, &w, SLOT_WORD(me, SLOT_DEAD)))
		return;
	run_exit_hooks(ns, p);
	atomic_store(&p->state, SLOT_WORD(0, SLOT_FREE));
}

/* Called from the SIGCONT handler: let others see that this process was
 * stopped and continued (its sleepers are no longer waiting).  Only an
 * atomic increment: async-signal-safe. */
void proc_note_continue(void)
{
	struct ns *ns = __atomic_load_n(&g_ns_for_hooks, __ATOMIC_ACQUIRE);
	uint32_t idx = __atomic_load_n(&g_proc_idx, __ATOMIC_ACQUIRE);
	struct uproc *p = ns && idx != UINT32_MAX ? proc_at(ns, idx) : NULL;

	if (p)
		atomic_fetch_add(&p->cont_gen, 1);
}

/* ---- lifecycle ---- */

static void atfork_prepare(void)
{
	/* a child that changes its uid before its first IPC call must still be
	 * in this namespace, as with kernel IPC: open it now */
	ns_open_for_fork();
}

static void atfork_child(void)
{
	/* the child is a new process: new pid, no undo list, no thread slot */
	g_pid = 0;
	g_proc_idx = UINT32_MAX;
	uipc_tls_thread = NULL;
	j_forget_held();
	pthread_mutex_init(&reg_mutex, NULL);
	run_fork_child_hooks(); /* e.g. shm: the child inherits the attachments */
}

static void run_leave_hooks(struct ns *ns);

/* The child of clone(CLONE_NEWIPC) without CLONE_VM: a new process (no
 * atfork handler ran) that starts in NEW.  It was never registered in the
 * parent's namespace and has no SEM_UNDO list (the kernel does not give a
 * clone child one either): it only drops what it inherited of it. */
void proc_clone_child(struct ns *new, void *robust_head, size_t robust_len)
{
	struct ns *old = ns_current();

	/*
	 * The parent's list of robust mutexes held (glibc's, at the same
	 * address in our copy of its memory) names locks the parent holds,
	 * in an arena we are about to unmap; the kernel gave this new task no
	 * list at all.  Start an empty one, as glibc's fork does: else the
	 * next lock would link itself to the parent's, and our death would
	 * not mark our locks owner-dead.  (The head's first word is the list,
	 * the third the pending lock: struct robust_list_head.)
	 */
	if (robust_head) {
		void **h = robust_head;

		h[0] = h;
		h[2] = NULL;
		sys_syscall(SYS_set_robust_list, robust_head, robust_len);
	}

	g_pid = 0;
	g_proc_idx = UINT32_MAX;
	g_stale_idx = UINT32_MAX;
	uipc_tls_thread = NULL;
	uipc_tls_ns = NULL;
	g_ns_for_hooks = NULL;
	j_forget_held();
	pthread_mutex_init(&reg_mutex, NULL);
	if (old)
		run_leave_hooks(old);
	ns_switch(new, false);
}

/* The kernel's exit work (exit_sem, exit_shm, ...): every layer's
 * proc_exit for this process. */
#define EXIT_LOCK_WAIT_NS 2000000000LL
void proc_exit_work(void)
{
	struct ns *ns;
	struct uproc *p;
	uint32_t idx = __atomic_load_n(&g_proc_idx, __ATOMIC_ACQUIRE);

	if (idx == UINT32_MAX || (pid_t)sys_syscall(SYS_getpid) != g_pid)
		return; /* never registered, or a vfork child sharing our memory */
	ns = ns_get();
	if (!ns)
		return;
	p = proc_at(ns, idx);
	if (!p)
		return;
	/* a lock held by a stopped or hostile member must not keep this
	 * process from exiting: each wait is bounded (what is left undone,
	 * a survivor's reaper does) */
	lockwait_bound_max(EXIT_LOCK_WAIT_NS);
	run_exit_hooks(ns, p);
	lockwait_bound_end();
}

/* Give back this process's slot in NS (its exit work done); only the
 * thread that holds the alive lock may let it go. */
static void free_own_slot(struct ns *ns, bool exiting)
{
	struct uproc *p = proc_at(ns, g_proc_idx);
	pid_t tid = (pid_t)sys_syscall(SYS_gettid);

	if (uipc_tls_ns == ns)
		thread_exit_hook(uipc_tls_thread);
	if (p) {
		if (atomic_load(&p->alive_tid) == tid) {
			atomic_store(&p->alive_tid, 0);
			pthread_mutex_unlock(&p->alive);
		} else if (atomic_load(&p->alive_tid) != 0) {
			if (!exiting)
				return;  /* another thread holds it: reaped after our death */
			atomic_store(&p->alive_tid, 0);
			pthread_mutex_unlock(&p->alive);
		}
		atomic_store(&p->state, SLOT_WORD(0, SLOT_FREE));
	}
}

static void exit_hook(void)
{
	struct ns *ns;

	proc_exit_work();
	if ((pid_t)sys_syscall(SYS_getpid) != g_pid || g_proc_idx == UINT32_MAX)
		return;
	ns = ns_get();
	if (!ns)
		return;
	free_own_slot(ns, true);
}

/* threads of this process (field 20 of /proc/self/stat); 0: unknown */
static long nr_threads(void)
{
	char buf[1024], *p;
	ssize_t n;
	int fd = sys_open("/proc/self/stat", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	sys_close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strrchr(buf, ')');
	for (int field = 2; field < 20 && p; field++)
		p = strchr(p + 1, ' ');
	return p ? strtol(p + 1, NULL, 10) : 0;
}

static void run_leave_hooks(struct ns *ns)
{
	for_each_hooks(h)
		if (h->ns_leave)
			h->ns_leave(ns);
}

void proc_leave_ns(struct ns *ns, bool *keep_map)
{
	/* registering finds our slot again after an exec: its SEM_UNDO list */
	struct uproc *p = cur_proc(ns);

	*keep_map = nr_threads() != 1;
	run_leave_hooks(ns);          /* what the process keeps of NS */
	if (p) {
		run_exit_hooks(ns, p);    /* exit_sem, exit_shm: as unshare does */
		pthread_mutex_lock(&reg_mutex);
		free_own_slot(ns, false);
		pthread_mutex_unlock(&reg_mutex);
	}
	pthread_mutex_lock(&reg_mutex);
	__atomic_store_n(&g_proc_idx, UINT32_MAX, __ATOMIC_RELEASE);
	g_stale_idx = UINT32_MAX;
	pthread_mutex_unlock(&reg_mutex);
	uipc_tls_thread = NULL;
	uipc_tls_ns = NULL;
	__atomic_store_n(&g_ns_for_hooks, NULL, __ATOMIC_RELEASE);
}

__attribute__((constructor)) static void proc_init(void)
{
	pthread_atfork(atfork_prepare, NULL, atfork_child);
	atexit(exit_hook);
}

/* Is TID a live thread registered in this namespace?  (A lock held by
 * anything else can only come from a corrupted arena.) */
bool tid_is_registered(struct ns *ns, pid_t tid)
{
	uint32_t i, top = atomic_load(&ns->hdr->threads_hwm);

	if (top > MAX_THREADS)
		top = MAX_THREADS;
	for (i = 0; i < top; i++) {
		struct uthread *t = thread_at(ns, i);
		uint64_t w = t ? atomic_load(&t->state) : 0;

		if (SLOT_STATE(w) == SLOT_LIVE && SLOT_ID(w) == tid)
			return true;
	}
	return false;
}
