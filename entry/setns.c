/*
 * setns.c - setns(2) into an IPC namespace: the caller joins a uipc
 * namespace, whoever it is (the kernel asks for CAP_SYS_ADMIN; uipc for the
 * right to open the namespace's file read-write, core/nsfile.c).
 *
 * The descriptor may be:
 *   - what open("/proc/PID/ns/ipc") gives under uipc (procfs.c: an O_PATH
 *     descriptor of PID's namespace file), or a named namespace's file
 *     (`uipc ns path NAME`): NSTYPE 0 or CLONE_NEWIPC, anything else is
 *     EINVAL, as for a kernel IPC namespace's descriptor;
 *   - a pidfd with CLONE_NEWIPC among the flags: the namespace of that
 *     process (core/nsdoor.c); the other flags go to the kernel first,
 *     and when it refuses them nothing changes;
 *   - anything else (a kernel namespace's descriptor, a pidfd without
 *     CLONE_NEWIPC, a process not under uipc): the kernel's, untouched.
 *
 * Joining is leaving as unshare leaves (SEM_UNDO applied by the last
 * thread of the process to leave, attachments left counted where they
 * were made until their shmdt, entry/unshare.c) and entering the joined
 * namespace.  setns into the namespace the caller is already in only
 * applies its SEM_UNDO adjustments (when no other thread of the process
 * shares them), as the kernel's exit_sem at setns.  Per thread, like
 * unshare (docs/namespaces.md).
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "entry/entry.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* the flags setns(pidfd, FLAGS) accepts (kernel/nsproxy.c) */
#define NS_FLAGS (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWUSER | \
		  CLONE_NEWPID | CLONE_NEWCGROUP | CLONE_NEWTIME)

/* the kernel's setns, with trap mode's pass word (entry/trap.c's filter
 * would send it back to the SIGSYS handler) */
static long kernel_setns(int fd, int flags)
{
	return sys_pass5(SYS_setns, fd, flags, 0, 0, 0);
}

/* The process of pidfd FD (the "Pid:" line of its fdinfo): 0 when FD is
 * no pidfd, -1 when its process has gone. */
static pid_t pidfd_pid(int fd)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int ifd;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = sys_readlinkat(AT_FDCWD, path, buf, sizeof(buf) - 1);
	if (n < 0)
		return 0;
	buf[n] = 0;
	if (strcmp(buf, "anon_inode:[pidfd]") && strncmp(buf, "pidfd:", 6))
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	ifd = sys_open(path, O_RDONLY | O_CLOEXEC);
	if (ifd < 0)
		return 0;
	n = read(ifd, buf, sizeof(buf) - 1);
	sys_close(ifd);
	buf[n > 0 ? n : 0] = 0;
	p = strstr(buf, "\nPid:");
	return p ? (pid_t)strtol(p + 5, NULL, 10) : 0;
}

/*
 * Enter NEW (mapped, not entered).  OTHER: flags for the kernel, through
 * its descriptor KFD, asked first: when the kernel refuses them nothing
 * changes.  0 or -errno.
 */
static long join(struct ns *new, int kfd, int other)
{
	struct ns *old;
	int saved = errno;
	long r;

	if (other && (r = kernel_setns(kfd, other)) < 0) {
		ns_anon_drop(new);
		return r;
	}
	old = ns_get_existing();  /* the namespace being left, if there is one */
	if (old && ns_same(old, new)) {
		proc_undo_ns(old);
		ns_anon_drop(new);
	} else {
		proc_switch_ns(new);  /* this thread's, as the kernel's */
	}
	errno = saved;            /* the leaving's own calls leave no trace */
	return 0;
}

/* FD is a uipc namespace's file */
static long setns_file(int fd, int nstype)
{
	struct ns *new;
	int r;

	if (nstype && nstype != CLONE_NEWIPC)
		return -EINVAL;   /* the descriptor is of another kind of namespace */
	r = ns_open_fd(fd, &new);
	return r ? r : join(new, -1, 0);
}

/* FD is the pidfd of PID */
static long setns_pidfd(int fd, pid_t pid, int flags)
{
	struct ns *new;
	int door, r;

	if (pid < 0 || !(flags & CLONE_NEWIPC) || (flags & ~NS_FLAGS))
		return kernel_setns(fd, flags);   /* its error, or no IPC at all */
	door = ns_door_open(pid, O_CLOEXEC);
	if (door == NS_DOOR_KERNEL)
		return kernel_setns(fd, flags);
	if (door < 0)
		return door == -ENOENT ? -ESRCH : door;
	r = ns_open_fd(door, &new);
	sys_close(door);
	return r ? r : join(new, fd, flags & ~CLONE_NEWIPC);
}

/* setns(FD, NSTYPE) as the raw system call answers: 0 or -errno (also for
 * syscall(SYS_setns, ...), entry/syscall.c) */
static long any_setns(int fd, int nstype)
{
	pid_t pid;

	if (fd < 0)
		return kernel_setns(fd, nstype);
	pid = pidfd_pid(fd);
	if (pid)
		return setns_pidfd(fd, pid, nstype);
	if (ns_fd_is_ns(fd))
		return setns_file(fd, nstype);
	return kernel_setns(fd, nstype);
}

long entry_setns(int fd, int nstype)
{
	long r = any_setns(fd, nstype);

	/* into a user namespace (NSTYPE 0: whatever FD is): credentials are
	 * judged anew (core/cred.c) */
	if (r == 0 && (!nstype || (nstype & CLONE_NEWUSER)))
		cred_userns_changed();
	return r;
}

int setns(int fd, int nstype)
{
	return (int)set_errno_ret(entry_setns(fd, nstype));
}
