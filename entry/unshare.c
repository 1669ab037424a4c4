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
 * as everyone else's.  Per process: every thread follows (the kernel moves
 * only the calling thread); see docs/namespaces.md.
 *
 * clone(CLONE_NEWIPC) (glibc's wrapper) without CLONE_VM, CLONE_FILES or
 * CLONE_SYSVSEM: the child starts in a fresh anonymous namespace, built by
 * the parent before the clone (so that a failure is the parent's ENOMEM)
 * and entered by the child before FN runs.  With those flags the child
 * would share the parent's memory or fd table, which hold the parent's
 * namespace: the call goes to the kernel unchanged (root: a kernel
 * namespace uipc does not use; others: EPERM).
 */
#include <dlfcn.h>
#include <sched.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "entry/entry.h"

static long new_ipc_ns(int other_flags)
{
	struct ns *new, *old;
	bool keep = false;
	int saved = errno, r = ns_anon_new(&new);

	if (r)
		return r;
	if (other_flags && sys_syscall(SYS_unshare, other_flags) < 0) {
		r = -errno;
		ns_anon_drop(new);
		return r;
	}
	old = ns_get_existing();  /* the namespace being left, if there is one */
	if (old)
		proc_leave_ns(old, &keep);
	ns_switch(new, keep);
	errno = saved;            /* the leaving's own calls leave no trace */
	return 0;
}

/* unshare(FLAGS) as the raw system call answers: 0 or -errno (also for
 * syscall(SYS_unshare, ...), entry/syscall.c) */
long entry_unshare(int flags)
{
	/* a new user namespace: credentials are judged anew (core/cred.c) */
	if (flags & CLONE_NEWUSER)
		cred_invalidate();
	if (!(flags & CLONE_NEWIPC))
		return sys_raw6(SYS_unshare, flags, 0, 0, 0, 0, 0);
	return new_ipc_ns(flags & ~CLONE_NEWIPC);
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

struct clone_start {
	int (*fn)(void *);
	void *arg;
	struct ns *new;
	void *robust_head;         /* the cloning thread's, for the child */
	size_t robust_len;
};

/* the child: its copy of the parent's memory holds START */
static int clone_child(void *p)
{
	struct clone_start *st = p;

	proc_clone_child(st->new, st->robust_head, st->robust_len);
	return st->fn(st->arg);
}

int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
	struct clone_start st = { fn, arg, NULL, NULL, 0 };
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
	if (!(flags & CLONE_NEWIPC) || (flags & (CLONE_VM | CLONE_FILES | CLONE_SYSVSEM)))
		return real_clone(fn, stack, flags, arg, ptid, tls, ctid);
	r = ns_anon_new(&st.new);
	if (r)
		return (int)set_errno_ret(r);
	if (sys_syscall(SYS_get_robust_list, 0, &st.robust_head, &st.robust_len) < 0)
		st.robust_head = NULL;
	pid = real_clone(clone_child, stack, flags & ~CLONE_NEWIPC, &st, ptid, tls, ctid);
	r = errno;
	ns_anon_drop(st.new);     /* the child has its own fd and mapping */
	errno = r;
	return pid;
}
