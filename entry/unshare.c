/*
 * unshare.c - unshare(2) with CLONE_NEWIPC: the caller moves to a fresh,
 * empty anonymous uipc namespace, whoever it is (the kernel asks for
 * CAP_SYS_ADMIN; uipc's namespaces are files the caller owns).
 *
 * Order, so that a refused call changes nothing: the new namespace is
 * built first (not yet entered), then the other flags go to the kernel,
 * and only when the kernel said yes does the process leave its namespace
 * (SEM_UNDO applied, as the kernel's exit_sem at unshare) and enter the new
 * one.  CLONE_NEWIPC itself never goes to the kernel, for root neither:
 * under uipc the kernel's IPC is not used, and root's unshare must behave
 * as everyone else's.  Per thread, as the kernel's: the other threads
 * stay where they are, a thread made later starts in its creator's, a
 * fork child in its forking thread's (core/proc.c, docs/namespaces.md).
 *
 * clone(CLONE_NEWIPC), glibc's wrapper and the raw clone and clone3 that
 * programs make through syscall(): a child with memory and fd table of its
 * own starts in a fresh anonymous namespace, built by the parent before
 * the clone (so that a failure is the parent's ENOMEM) and entered by the
 * child before FN runs (or before the raw call returns 0 in it, when the
 * child goes on on a copy of the caller's stack).  A child that borrows
 * the caller's memory until it execs (CLONE_VM | CLONE_VFORK, as
 * posix_spawn) takes the new namespace with its exec.  A task that would
 * share the caller's memory or fd table for good (CLONE_VM without
 * CLONE_VFORK, CLONE_FILES, CLONE_THREAD), or run on a TLS of its own
 * making (CLONE_SETTLS), cannot be given a namespace of its own by uipc:
 * EINVAL, as for a raw child on a new stack (it cannot return through the
 * C code of syscall()).  With CLONE_SYSVSEM: EINVAL, the kernel's answer.
 * In trap mode the raw clone made by instruction comes here too, from the
 * SIGSYS handler (entry/trap.c), and its child returns from the handler
 * as a forked one would; a clone3 by instruction never does (the filter
 * cannot read its flags: ENOSYS, and libc falls back to clone).
 */
#include <dlfcn.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "entry/entry.h"

/* the kernel's part of an unshare: 0 or -errno.  Past a new user
 * namespace, what this process knew of its own is forgotten before
 * anything here records the namespace's owner (core/cred.c) */
static long kernel_unshare(int flags)
{
	long r = sys_raw6(SYS_unshare, flags, 0, 0, 0, 0, 0);

	if (r == 0 && (flags & CLONE_NEWUSER))
		cred_userns_changed();
	return r;
}

/* the old namespace, nobody else's, made the new one in place (nsfile.c);
 * false when it cannot be */
static bool recycle(int other_flags, long *r)
{
	struct ns *old = ns_current();
	int saved = errno;

	if (!old || !ns_recycle_begin(old))
		return false;
	if ((*r = ns_count_room(old)) < 0) {
		ns_recycle_abort(old);
		return true;
	}
	if (other_flags && (*r = kernel_unshare(other_flags)) < 0) {
		ns_recycle_abort(old);
		return true;
	}
	ns_recycle_finish(old);
	*r = 0;
	errno = saved;
	return true;
}

static long new_ipc_ns(int other_flags)
{
	struct ns *new;
	int saved = errno, r;
	long rr;

	if (recycle(other_flags, &rr))
		return rr;
	r = ns_anon_new(&new);
	if (r)
		return r;
	if (other_flags && (rr = kernel_unshare(other_flags)) < 0) {
		ns_anon_drop(new);
		return rr;
	}
	if (other_flags & CLONE_NEWUSER)
		ns_anon_reown(new);   /* the new user namespace owns it */
	proc_switch_ns(new);      /* this thread's, as the kernel's */
	errno = saved;            /* the leaving's own calls leave no trace */
	return 0;
}

/* unshare(FLAGS) as the raw system call answers: 0 or -errno (also for
 * syscall(SYS_unshare, ...), entry/syscall.c) */
long entry_unshare(int flags)
{
	long r;

	/* a new user namespace: credentials are judged anew (kernel_unshare) */
	if (!(flags & CLONE_NEWIPC))
		r = kernel_unshare(flags);
	else
		r = new_ipc_ns(flags & ~CLONE_NEWIPC);
	return r;
}

int unshare(int flags)
{
	return (int)set_errno_ret(entry_unshare(flags));
}

typedef int (*clone_fn)(int (*)(void *), void *, int, void *, ...);
static clone_fn real_clone;

__attribute__((constructor)) static void clone_init(void)
{
	real_clone = (clone_fn)dlsym(RTLD_NEXT, "clone");
}


/* what a fork-like child of clone(CLONE_NEWIPC) needs from its parent */
struct clone_start {
	int (*fn)(void *);
	void *arg;
	struct ns *new;            /* built by the parent, entered by the child */
	bool newuser;              /* the child is in a new user namespace */
	void *robust_head;         /* the cloning thread's, for the child */
	size_t robust_len;
	pid_t *tid_addr;           /* where glibc keeps the thread's tid */
};

/* the parent's part before the clone: 0 or -errno */
static int clone_prepare(struct clone_start *st)
{
	int r = ns_anon_new(&st->new);

	if (r)
		return r;
	if (sys_syscall(SYS_get_robust_list, 0, &st->robust_head, &st->robust_len) < 0)
		st->robust_head = NULL;
	/* glibc's clone leaves its tid, which robust mutexes record as their
	 * owner, the parent's in the child: the child writes its own there */
	if (sys_syscall(SYS_prctl, PR_GET_TID_ADDRESS, &st->tid_addr, 0, 0, 0) < 0)
		st->tid_addr = NULL;
	return 0;
}

/* the child: its copy of the parent's memory holds START */
static int clone_child(void *p)
{
	struct clone_start *st = p;
	int r;

	if (st->newuser) {
		cred_userns_changed();    /* not the parent's user namespace */
		ns_anon_reown(st->new);   /* the child's new user namespace owns it */
	}
	proc_clone_child(st->new, st->robust_head, st->robust_len, st->tid_addr);
	r = st->fn(st->arg);
	/* glibc ends the child with the exit system call, no atexit: the
	 * kernel's exit work is done here, as an exit would (and the user's
	 * count file goes with its last count) */
	proc_exit_now();
	return r;
}

/*
 * A child that shares the caller's memory but stops it until it execs or
 * exits (CLONE_VM | CLONE_VFORK, as posix_spawn): the new namespace is the
 * one its exec carries (ns_exec_env), its fd in the child's table.  Calls
 * the child makes before its exec are in the caller's namespace.
 */
static int clone_spawn(int (*fn)(void *), void *stack, int flags, void *arg, pid_t *ptid,
		       void *tls, pid_t *ctid)
{
	struct ns *new;
	int pid, r = ns_anon_new(&new);

	if (r)
		return (int)set_errno_ret(r);
	ns_spawn_child(new);
	pid = real_clone(fn, stack, flags & ~CLONE_NEWIPC, arg, ptid, tls, ctid);
	r = errno;
	ns_spawn_child(NULL);
	ns_anon_drop(new);        /* the child exec'd or exited: it has its own */
	errno = r;
	return pid;
}

/* the uses of CLONE_NEWIPC uipc serves: a child with memory and fd table
 * of its own (fork-like), or one that borrows them until its exec
 * (spawn-like); a task sharing the caller's memory or fd table for good
 * cannot have a namespace of its own (EINVAL), nor one that changes its
 * TLS (it would run uipc's code on a TLS of its own making) */
enum clone_kind { CLONE_PLAIN, CLONE_FORKLIKE, CLONE_SPAWNLIKE, CLONE_REFUSED };

static enum clone_kind clone_kind(unsigned long flags, bool has_stack)
{
	if (!(flags & CLONE_NEWIPC))
		return CLONE_PLAIN;
	/* CLONE_SYSVSEM: the kernel's own EINVAL (as it answers root: under
	 * uipc nobody lacks the privilege) */
	if (flags & (CLONE_THREAD | CLONE_SETTLS | CLONE_SYSVSEM))
		return CLONE_REFUSED;
	if ((flags & CLONE_VM) && (flags & CLONE_VFORK) && has_stack)
		return CLONE_SPAWNLIKE;
	if (flags & (CLONE_VM | CLONE_FILES))
		return CLONE_REFUSED;
	return CLONE_FORKLIKE;
}

int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
	struct clone_start st = { .fn = fn, .arg = arg, .newuser = (flags & CLONE_NEWUSER) != 0 };
	pid_t *ptid, *ctid;
	void *tls;
	va_list ap;
	int pid, r;

	/* glibc's clone reads these whether the flags use them or not */
	va_start(ap, arg);
	ptid = va_arg(ap, pid_t *);
	tls = va_arg(ap, void *);
	ctid = va_arg(ap, pid_t *);
	va_end(ap);
	switch (clone_kind((unsigned)flags, stack != NULL)) {
	case CLONE_PLAIN:
		ns_note_shared();   /* the child holds the namespace too */
		return real_clone(fn, stack, flags, arg, ptid, tls, ctid);
	case CLONE_REFUSED:
		return (int)set_errno_ret(-EINVAL);
	case CLONE_SPAWNLIKE:
		return clone_spawn(fn, stack, flags, arg, ptid, tls, ctid);
	case CLONE_FORKLIKE:
		break;
	}
	r = clone_prepare(&st);
	if (r)
		return (int)set_errno_ret(r);
	pid = real_clone(clone_child, stack, flags & ~CLONE_NEWIPC, &st, ptid, tls, ctid);
	r = errno;
	ns_anon_drop(st.new);     /* the child has its own fd and mapping */
	errno = r;
	return pid;
}

/* ---- the raw clone and clone3, through syscall() ---- */

/* clone3's argument (linux/sched.h), as far as uipc reads it */
struct clone3_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	uint64_t rest[3];          /* set_tid, set_tid_size, cgroup */
};

/* a raw fork-like clone or clone3 with CLONE_NEWIPC (and NEWUSER: with
 * CLONE_NEWUSER): the call DO makes with the flags less CLONE_NEWIPC; in
 * the child (0) it enters its namespace before returning, as glibc's clone
 * does for FN */
static long raw_forklike(long (*do_clone)(const void *ctx), const void *ctx, bool newuser)
{
	struct clone_start st = { .newuser = newuser };
	long pid;
	int r = clone_prepare(&st);

	if (r)
		return r;
	pid = do_clone(ctx);
	if (pid == 0) {
		if (st.newuser) {
			cred_userns_changed();
			ns_anon_reown(st.new);
		}
		proc_clone_child(st.new, st.robust_head, st.robust_len, st.tid_addr);
		return 0;
	}
	ns_anon_drop(st.new);
	return pid;
}

static long do_raw_clone(const void *ctx)
{
	const long *a = ctx;

	return sys_raw6(SYS_clone, a[0] & ~CLONE_NEWIPC, a[1], a[2], a[3], a[4], 0);
}

/* syscall(SYS_clone, flags, stack, parent_tid, child_tid, tls) (x86-64's
 * order): true and *RET when it is uipc's to make; false: the kernel's,
 * untouched (syscall.c) */
bool entry_clone_raw(const long *args, long *ret)
{
	switch (clone_kind((unsigned long)args[0], args[1] != 0)) {
	case CLONE_PLAIN:
		ns_note_shared();   /* the child holds the namespace too */
		return false;
	case CLONE_FORKLIKE:
		if (!args[1]) {
			*ret = raw_forklike(do_raw_clone, args, (args[0] & CLONE_NEWUSER) != 0);
			return true;
		}
		/* fall through: a child on a new stack cannot return through C */
	case CLONE_REFUSED:
	case CLONE_SPAWNLIKE:
		break;
	}
	*ret = -EINVAL;
	return true;
}

struct clone3_call {
	struct clone3_args a;
	size_t size;
};

static long do_raw_clone3(const void *ctx)
{
	const struct clone3_call *c = ctx;
	struct clone3_args a = c->a;

	a.flags &= ~(uint64_t)CLONE_NEWIPC;
	/* with trap mode's pass word: its filter refuses other clone3s */
	return sys_pass5(SYS_clone3, (long)&a, (long)c->size, 0, 0, 0);
}

/* syscall(SYS_clone3, args, size), as entry_clone_raw */
bool entry_clone3(const void *uargs, size_t size, long *ret)
{
	struct clone3_call c = { { 0 }, size };

	/* a size the kernel refuses, or an unreadable struct: its answer */
	if (size < 64 || size > sizeof(c.a) || uipc_copy_from_user(&c.a, uargs, size))
		return false;
	switch (clone_kind(c.a.flags, c.a.stack != 0)) {
	case CLONE_PLAIN:
		ns_note_shared();
		return false;
	case CLONE_FORKLIKE:
		if (!c.a.stack) {
			*ret = raw_forklike(do_raw_clone3, &c, (c.a.flags & CLONE_NEWUSER) != 0);
			return true;
		}
		/* fall through: a child on a new stack cannot return through C */
	case CLONE_REFUSED:
	case CLONE_SPAWNLIKE:
		break;
	}
	*ret = -EINVAL;
	return true;
}
