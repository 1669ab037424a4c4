/*
 * watch.c - the libc calls uipc must watch, besides the System V ones:
 * the fd calls that must not close the segment files' fds that shm keeps,
 * the memory-map calls that change attachments (an attachment is a vma the
 * kernel counts), sigaction and signal (handlers are chained through
 * core/signals.c), the calls that change credentials (the cached ones are
 * forgotten), and _exit (the kernel's exit work runs for it too).
 */
#include <dlfcn.h>
#include <sys/syscall.h>
#include <grp.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <linux/close_range.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "aio/aio.h"
#include "entry/entry.h"

/* ---- fds: the segment files' fds shm.c keeps are not the application's ---- */

typedef int (*fd1_fn)(int);
typedef int (*fd2_fn)(int, int);
typedef int (*fd3_fn)(int, int, int);
#define REAL(name, type)                                                  \
	static type real_;                                                \
	if (!real_)                                                       \
		real_ = (type)dlsym(RTLD_NEXT, name)

/* closing one of them is closing an fd that is not open (EBADF) */
int close(int fd)
{
	REAL("close", fd1_fn);
	if (unlikely(shm_fd_guarded(fd) || ns_fd_guarded(fd) || aio_fd_guarded(fd))) {
		errno = EBADF;
		return -1;
	}
	procfs_forget(fd);
	aio_fd_forget(fd);
	return real_ ? real_(fd) : (int)sys_syscall(SYS_close, fd);
}

/* before dup2/dup3 of OLDFD onto NEWFD: a guarded fd cannot be copied
 * (EBADF, -1); one at NEWFD moves out of the way first.  0 to go on. */
static int dup_onto_prepare(int oldfd, int newfd)
{
	if (unlikely(shm_fd_guarded(oldfd))) {
		errno = EBADF;
		return -1;
	}
	if (unlikely(shm_fd_guarded(newfd)))
		shm_fd_evict(newfd);
	procfs_forget(newfd);
	aio_fd_forget(newfd);
	return 0;
}

/* dup2/dup3 onto one: it moves out of the way first (and a copy of a
 * writable /proc file of procfs.c's writes to it too) */
int dup2(int oldfd, int newfd)
{
	REAL("dup2", fd2_fn);
	if (dup_onto_prepare(oldfd, newfd))
		return -1;
	return procfs_dup(oldfd, real_ ? real_(oldfd, newfd) : (int)sys_syscall(SYS_dup2, oldfd, newfd));
}

int dup3(int oldfd, int newfd, int flags)
{
	REAL("dup3", fd3_fn);
	if (dup_onto_prepare(oldfd, newfd))
		return -1;
	return procfs_dup(oldfd, real_ ? real_(oldfd, newfd, flags) :
				 (int)sys_syscall(SYS_dup3, oldfd, newfd, flags));
}

/* a copy of one of procfs.c's writable files writes to it too */
int dup(int oldfd)
{
	REAL("dup", fd1_fn);
	if (unlikely(shm_fd_guarded(oldfd))) {
		errno = EBADF;
		return -1;
	}
	return procfs_dup(oldfd, real_ ? real_(oldfd) : (int)sys_syscall(SYS_dup, oldfd));
}

/* a range is closed around them */
int close_range(unsigned first, unsigned last, int flags)
{
	if (flags & CLOSE_RANGE_CLOEXEC)
		return (int)sys_syscall(SYS_close_range, first, last, flags);
	aio_fd_forget_range(first, last);
	for (;;) {
		int g = shm_fd_next_guarded(first), a = aio_fd_next_guarded(first), r;

		if (a < g)
			g = a;
		if (g == INT_MAX || (unsigned)g > last)
			return (int)sys_syscall(SYS_close_range, first, last, flags);
		if ((unsigned)g > first) {
			r = (int)sys_syscall(SYS_close_range, first, (unsigned)g - 1, flags);
			if (r)
				return r;
		}
		if ((unsigned)g >= last)
			return 0;
		first = (unsigned)g + 1;
	}
}

void closefrom(int lowfd)
{
	if (lowfd < 0)
		lowfd = 0;
	close_range((unsigned)lowfd, ~0U, 0);
}

mode_t umask(mode_t mask)
{
	mode_t old = (mode_t)sys_syscall(SYS_umask, mask);

	shm_note_umask(mask);
	return old;
}

/* ---- memory maps: an attachment is a vma, the kernel counts them ---- */

int munmap(void *addr, size_t len)
{
	return shm_hook_munmap(addr, len);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return shm_hook_mmap(addr, len, prot, flags, fd, off);
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return shm_hook_mmap(addr, len, prot, flags, fd, off);
}

void *mremap(void *old, size_t olen, size_t nlen, int flags, ...)
{
	void *naddr = NULL;

	if (flags & (MREMAP_FIXED | MREMAP_DONTUNMAP)) {
		va_list ap;

		va_start(ap, flags);
		naddr = va_arg(ap, void *);
		va_end(ap);
	}
	return shm_hook_mremap(old, olen, nlen, flags, naddr);
}

int mprotect(void *addr, size_t len, int prot)
{
	/* an SHM_RDONLY attachment stays read-only, as on the kernel */
	if (shm_mprotect_denied(addr, len, prot)) {
		errno = EACCES;
		return -1;
	}
	return shm_hook_mprotect(addr, len, prot);
}

int mlock(const void *addr, size_t len)
{
	return shm_hook_mlock((void *)addr, len, 0);
}

int mlock2(const void *addr, size_t len, unsigned int flags)
{
	return shm_hook_mlock((void *)addr, len, (int)flags);
}

int munlock(const void *addr, size_t len)
{
	return shm_hook_munlock((void *)addr, len);
}

int mlockall(int flags)
{
	return shm_hook_mlockall(flags);
}

int munlockall(void)
{
	return shm_hook_munlockall();
}

/* the kernel emulates it with an mmap of the vma's file: an attachment's
 * is its segment's (ipc/shm.c) */
int remap_file_pages(void *addr, size_t size, int prot, size_t pgoff, int flags)
{
	return (int)set_errno_ret(shm_remap_file_pages(addr, size, prot, pgoff, flags));
}

int madvise(void *addr, size_t len, int advice)
{
	return shm_hook_madvise(addr, len, advice);
}

int posix_madvise(void *addr, size_t len, int advice)
{
	int e = errno, r;

	/* glibc: POSIX_MADV_DONTNEED is not MADV_DONTNEED, it does nothing */
	if (advice == POSIX_MADV_DONTNEED)
		return 0;
	r = shm_hook_madvise(addr, len, advice) ? errno : 0;
	errno = e;
	return r;
}

/* ---- signal handlers: chained, so none runs inside a uipc critical section ---- */

int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return sig_program_action(sig, act, old);
}

sighandler_t signal(int sig, sighandler_t h)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}


/* ---- credentials: forget the cached ones whenever they may change ---- */

#define CRED_WRAPPER(name, proto, args)                                    \
	int name proto                                                     \
	{                                                                  \
		static int (*real) proto;                                  \
		int ret_;                                                  \
		if (!real)                                                 \
			real = (int (*) proto)dlsym(RTLD_NEXT, #name);     \
		if (!real) {                                               \
			errno = ENOSYS;                                    \
			return -1;                                         \
		}                                                          \
		shm_cred_prepare();                                        \
		ret_ = real args;                                          \
		cred_invalidate();                                         \
		return ret_;                                               \
	}

CRED_WRAPPER(setuid, (uid_t u), (u))
CRED_WRAPPER(setgid, (gid_t g), (g))
CRED_WRAPPER(seteuid, (uid_t u), (u))
CRED_WRAPPER(setegid, (gid_t g), (g))
CRED_WRAPPER(setreuid, (uid_t r, uid_t e), (r, e))
CRED_WRAPPER(setregid, (gid_t r, gid_t e), (r, e))
CRED_WRAPPER(setresuid, (uid_t r, uid_t e, uid_t s), (r, e, s))
CRED_WRAPPER(setresgid, (gid_t r, gid_t e, gid_t s), (r, e, s))
CRED_WRAPPER(setgroups, (size_t n, const gid_t *l), (n, l))
CRED_WRAPPER(capset, (void *h, void *d), (h, d))

/* ---- _exit: the kernel's exit work runs for it too ---- */

void _exit(int status)
{
	static void (*real)(int);

	proc_exit_work();
	if (!real)
		real = (void (*)(int))dlsym(RTLD_NEXT, "_exit");
	if (real)
		real(status);
	for (;;)
		sys_syscall(SYS_exit_group, status);
}

void _Exit(int status)
{
	_exit(status);
}
