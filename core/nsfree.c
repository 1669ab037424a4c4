/*
 * nsfree.c - letting go of a big anonymous namespace off the caller's path
 * (seed 003: the kernel frees an IPC namespace in a work queue, not in
 * the unshare that left it).
 *
 * An anonymous namespace is a memfd; the kernel frees its pages when the
 * last descriptor and mapping of it go, in the task that lets go last, on
 * its way back to user space: 64 MiB of written segment cost the unshare
 * that left it about 10 ms.  So for a namespace whose memfd holds more
 * than NSFREE_MIN bytes, the last hold is handed to a helper: a child made
 * with clone(CLONE_VM) (no page tables copied, about 12 us), with its own
 * copy of the fd table, all signals blocked, on a small stack of its own.
 * The caller unmaps and closes its holds and tells the helper, which then
 * closes the memfd, so that the freeing happens in the helper, on another
 * CPU or later, and exits.  The helper raises no SIGCHLD (exit signal 0)
 * and is reaped when its stack is needed again.  Without a free helper
 * slot, or when clone fails, the caller lets go itself, as before.
 *
 * The same helper empties the segment slots of a namespace that an unshare
 * makes a new one of in place (ns_recycle_finish): the new incarnation's
 * segments take slot numbers past the old ones, so the two never meet.
 *
 * Crash safety: a SIGKILL of the caller or of the helper at any point
 * leaves the memfd to be freed by the kernel with whichever dies last; a
 * helper dies with its caller (PR_SET_PDEATHSIG; and its wait has a
 * timeout), so a killed caller leaves no helper behind.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <sched.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/wait.h>

#include "core/core.h"

#define NSFREE_MIN (256u << 10)   /* below this, freeing costs less than a helper */
#define HELPERS 4
#define HELPER_STACK (16u << 10)

struct helper {
	_Atomic int busy;         /* the helper's tid while it lives (CLEARTID) */
	_Atomic int go;           /* 1: the caller has let go, close now */
	_Atomic int closed;       /* 1: its copies of the caller's other fds closed */
	pid_t parent;             /* the caller's process */
	int fd;
	bool punch;               /* empty [off, +len) of fd, then close it */
	off_t off, len;
	pid_t pid;
	char stack[HELPER_STACK] __attribute__((aligned(64)));
};

static struct helper helpers[HELPERS];
static pthread_mutex_t helpers_mutex = PTHREAD_MUTEX_INITIALIZER;

typedef int (*clone_fn)(int (*)(void *), void *, int, void *, ...);

/* The helper: raw system calls only (it runs on the caller's memory, with
 * the calling thread's TLS). */
static int helper_main(void *arg)
{
	struct helper *h = arg;
	struct timespec limit = { 10, 0 };

	/* dies with the caller (which may have died already: then close now) */
	sys_raw6(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0, 0);
	if (sys_raw6(SYS_getppid, 0, 0, 0, 0, 0, 0) != h->parent)
		atomic_store(&h->go, 1);

	/* hold nothing else of the caller's: its other files close when it
	 * closes them, not when the helper is done */
	if (h->fd > 0)
		sys_raw6(SYS_close_range, 0, h->fd - 1, 0, 0, 0, 0);
	sys_raw6(SYS_close_range, h->fd + 1, ~0U, 0, 0, 0, 0);
	atomic_store(&h->closed, 1);
	sys_raw6(SYS_futex, (long)&h->closed, FUTEX_WAKE, INT_MAX, 0, 0, 0);
	if (h->punch) {
		sys_raw6(SYS_fallocate, h->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, h->off,
			 h->len, 0, 0);
		atomic_store(&h->go, 1);
	}
	while (!atomic_load(&h->go))
		if (sys_raw6(SYS_futex, (long)&h->go, FUTEX_WAIT, 0, (long)&limit, 0, 0) ==
		    -ETIMEDOUT)
			break;   /* the caller died before it let go: close anyway */
	sys_raw6(SYS_close, h->fd, 0, 0, 0, 0, 0);
	return 0;
}

/* A helper slot whose helper has gone (reaped now), or NULL */
static struct helper *free_slot(void)
{
	for (int i = 0; i < HELPERS; i++) {
		struct helper *h = &helpers[i];

		if (atomic_load(&h->busy))
			continue;
		if (h->pid > 0)
			waitpid(h->pid, NULL, __WCLONE | WNOHANG);
		h->pid = 0;
		return h;
	}
	return NULL;
}

/* the helper started on FD (for a punch: [OFF, +LEN) of it, if PUNCH):
 * its slot, or NULL (the caller does the work) */
static struct helper *helper_start(int fd, bool punch, off_t off, off_t len)
{
	static clone_fn real_clone;
	sigset_t all, old;
	struct helper *h;
	int pid;

	if (!real_clone)
		real_clone = (clone_fn)dlsym(RTLD_NEXT, "clone");
	h = real_clone ? free_slot() : NULL;
	if (!h)
		return NULL;
	h->fd = fd;
	h->parent = (pid_t)sys_syscall(SYS_getpid);
	h->punch = punch;
	h->off = off;
	h->len = len;
	atomic_store(&h->go, 0);
	atomic_store(&h->closed, 0);
	atomic_store(&h->busy, 1);
	/* (uipc_sigmask: libc's pthread_sigmask is entry/'s, trap.c) */
	sigfillset(&all);
	uipc_sigmask(SIG_BLOCK, &all, &old);
	pid = real_clone(helper_main, h->stack + HELPER_STACK,
			 CLONE_VM | CLONE_CHILD_CLEARTID | CLONE_CHILD_SETTID, h, NULL, NULL,
			 &h->busy);
	uipc_sigmask(SIG_SETMASK, &old, NULL);
	if (pid <= 0) {
		atomic_store(&h->busy, 0);
		return NULL;
	}
	h->pid = pid;
	return h;
}

/*
 * Until a helper has closed its copies of the caller's fds, it holds what
 * they hold: the OFD lock of the count of user.max_ipc_namespaces
 * (nsfile.c), so that a caller that lets go of its count right away (its
 * exit) would find the count file still locked and leave it.  Waits for
 * the live helpers to have closed them, at most 100 ms each (a helper
 * that is not run by then is waited for no longer: the file stays, as
 * when a holder is killed).
 */
void ns_helpers_settle(void)
{
	for (int i = 0; i < HELPERS; i++) {
		struct helper *h = &helpers[i];
		struct timespec limit = { 0, 100 * 1000 * 1000 };

		for (int tries = 0; tries < 3 && atomic_load(&h->busy) && !atomic_load(&h->closed);
		     tries++)
			if (sys_raw6(SYS_futex, (long)&h->closed, FUTEX_WAIT, 0, (long)&limit, 0, 0) ==
			    -ETIMEDOUT)
				break;
	}
}

static bool is_big(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && (uint64_t)st.st_blocks * 512 > NSFREE_MIN;
}

void ns_let_go(int fd, void *base, size_t size)
{
	struct helper *h = NULL;

	if (fd >= 0 && is_big(fd)) {
		crit_mutex_lock(&helpers_mutex);
		h = helper_start(fd, false, 0, 0);
		crit_mutex_unlock(&helpers_mutex);
	}
	if (base)
		sys_munmap(base, size);
	if (fd >= 0)
		sys_close(fd);
	if (h) {
		atomic_store(&h->go, 1);
		sys_futex_wake(&h->go, 1);
	}
}

void ns_punch(int fd, off_t off, off_t len)
{
	struct helper *h = NULL;

	if (is_big(fd)) {
		crit_mutex_lock(&helpers_mutex);
		h = helper_start(fd, true, off, len);
		crit_mutex_unlock(&helpers_mutex);
	}
	if (!h)
		fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len);
}
