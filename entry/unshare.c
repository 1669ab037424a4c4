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
 */
#include <sched.h>
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
	if (other_flags && syscall(SYS_unshare, other_flags) < 0) {
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

int unshare(int flags)
{
	if (!(flags & CLONE_NEWIPC))
		return (int)syscall(SYS_unshare, flags);
	return (int)set_errno_ret(new_ipc_ns(flags & ~CLONE_NEWIPC));
}
