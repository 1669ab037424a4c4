/*
 * entry/entry.h - how programs reach uipc.
 *
 * Owns: the libc-named System V calls that LD_PRELOAD puts in front of
 * glibc's (sysv.c), include/uipc.h's API (api.c), the libc calls uipc must
 * watch: credentials, fd calls, memory-map calls, sigaction, _exit
 * (watch.c), dlopen (dlopen.c), syscall() (syscall.c), the /proc files of
 * System V IPC and the open/fopen/write calls that reach them, and
 * /proc/PID/ns/ipc through open, stat and readlink (procfs.c), the
 * namespace calls unshare and clone (unshare.c), setns (setns.c), the
 * exec family and posix_spawn (exec.c), system and popen (spawn.c), and
 * the export map (exports.map), which lists every symbol libuipc.so
 * exports.
 * May call: ipc/ (ipc/ipc.h), aio/ when it exists, and core/.
 * The only layer that writes errno: the layers below return -errno, and
 * each entry point turns that into libc's -1 and errno here.
 */
#ifndef UIPC_ENTRY_H
#define UIPC_ENTRY_H

#include <errno.h>

#include "ipc/ipc.h"

/* libc's convention for a result R of the layers below (-errno on error) */
static inline long set_errno_ret(long r)
{
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* ---- procfs.c: the fds of /proc files opened for writing ---- */
UIPC_HIDDEN extern uint8_t procfs_fd_slot[];
UIPC_HIDDEN void procfs_forget_slow(int fd);

/* FD is being closed or replaced (close, dup2, dup3): one load when it is
 * not one of ours */
static inline void procfs_forget(int fd)
{
	if (unlikely((unsigned)fd < 65536 && procfs_fd_slot[fd]))
		procfs_forget_slow(fd);
}

/* NEWFD, the result of dup/dup2/dup3 of OLDFD: when OLDFD is one of ours,
 * NEWFD becomes one too (a shell's "> /proc/sys/kernel/msgmax" is a dup2
 * onto fd 1).  Returns NEWFD. */
UIPC_HIDDEN int procfs_dup_slow(int oldfd, int newfd);

static inline int procfs_dup(int oldfd, int newfd)
{
	if (unlikely((unsigned)oldfd < 65536 && procfs_fd_slot[oldfd] && newfd >= 0))
		return procfs_dup_slow(oldfd, newfd);
	return newfd;
}

/* ---- aio.c: epoll_pwait (trap.c's) made again after an EINTR that a
 * completion of the thread's own io_uring requests caused ---- */
struct epoll_event;
UIPC_HIDDEN int aio_epoll_pwait(int (*real)(int, struct epoll_event *, int, int,
					    const sigset_t *),
				int epfd, struct epoll_event *ev, int max, int tmo,
				const sigset_t *mask);

/* ---- syscall.c and trap.c: system calls by number ---- */

/* the arguments, as the kernel receives them: six registers */
struct sys_args {
	long a, b, c, d, e, f;
};

/* NR if uipc serves it: *RET is the raw result (a value or -errno), true;
 * false for a number that goes to the kernel */
UIPC_HIDDEN bool entry_sys_serve(long nr, const struct sys_args *x, unsigned hand0, long *ret);

/* trap.c: around an exec (exec.c): what the program asked for SIGSYS and
 * libuipc's handler stands in for is made real for the new image (whose
 * constructor takes it back): its blocking of SIGSYS (trap mode keeps it
 * only in its view), an ignored SIGSYS (SIG_IGN survives exec, a handler
 * does not); undone if the exec failed */
UIPC_HIDDEN int trap_exec_prepare(void);
UIPC_HIDDEN void trap_exec_failed(int prepared);

/* unshare.c: unshare(FLAGS), 0 or -errno (CLONE_NEWIPC served by uipc) */
UIPC_HIDDEN long entry_unshare(int flags);
/* setns.c: setns(FD, NSTYPE), 0 or -errno (uipc namespaces joined by uipc) */
UIPC_HIDDEN long entry_setns(int fd, int nstype);
/* unshare.c: syscall(SYS_clone, ...) and syscall(SYS_clone3, ...): true and
 * *RET (the raw result) when uipc makes the call (CLONE_NEWIPC), false when
 * it goes to the kernel untouched */
UIPC_HIDDEN bool entry_clone_raw(const long *args, long *ret);
UIPC_HIDDEN bool entry_clone3(const void *uargs, size_t size, long *ret);

/* in a wrapper of libc's NAME (of TYPE): real_, the next definition of
 * NAME after ours; -1 with ENOSYS where there is none */
#define NEXT_FN(name, type)                                  \
	static type real_;                                   \
	if (!real_)                                          \
		real_ = (type)dlsym(RTLD_NEXT, name);        \
	if (!real_) {                                        \
		errno = ENOSYS;                              \
		return -1;                                   \
	}

#endif /* UIPC_ENTRY_H */
