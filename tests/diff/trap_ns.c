/*
 * trap_ns.c - the IPC namespace calls made by system call instruction
 * (tests/diff-trap.t): on the kernel the instructions reach the kernel;
 * under `uipc run --trap` the seccomp filter sends setns and clone with
 * CLONE_NEWIPC to libuipc's SIGSYS handler, and uipc's own setns into a
 * kernel namespace passes the filter with its pass word.
 *
 * ns_join.c's cases, its setns by number on instructions (its other setns
 * calls go through libc, and uipc makes the kernel's ones itself), and
 * cases of their own: a fork-like clone(CLONE_NEWIPC) by instruction and
 * the kernel's refusal of CLONE_SYSVSEM with it; clone3 as glibc makes it
 * (ENOSYS under trap mode's filter, which cannot read clone3's flags, and
 * then clone: the child must start in a fresh namespace either way); and
 * a namespace held by a child forked and exec'd by instruction, which its
 * creator's next unshare must leave alone (uipc cannot see such a child,
 * so it must not make the old namespace anew in place).
 *
 * Under uipc each case first checks that trap mode is on.
 */
#include "dt.h"
#include "rawinsn.h"

#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* ns_join.c with its setns by number on instructions, its table renamed */
#define syscall raw_syscall
#define dt_cases ns_join_cases
#include "ns_join.c"
#undef dt_cases
#undef syscall

#define TRAPPED(fn) static void fn##_t(int c, char **v) { need_trap(); fn(c, v); }
TRAPPED(join_by_proc)
TRAPPED(join_by_pidfd)
TRAPPED(wrong_type)
TRAPPED(held_by_fd)
TRAPPED(self_held)
TRAPPED(undo_at_setns)
TRAPPED(attachment_stays)
TRAPPED(children_follow)
TRAPPED(limits_follow)
TRAPPED(identity)
TRAPPED(relative_paths)

struct clone3_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

/* the child of a fork-like clone (PID 0) looks around and exits; the
 * parent waits for it */
static void clone_child_then_wait(long pid, int e, const char *what)
{
	int st = -1;

	if (pid == 0) {
		dt_out("%s child:", what);
		look_for_three(0);
		dt_semget(KEY + 50, 1, IPC_CREAT | 0600);
		_exit(0);
	}
	if (pid > 0 && waitpid((pid_t)pid, &st, 0) != pid)
		dt_fail("waitpid");
	dt_out("%s = %s, exit %d", what, pid > 0 ? "child" : dt_res(pid, e),
	       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* clone(CLONE_NEWIPC) by instruction: the child starts in a fresh
 * namespace, the caller stays; with CLONE_SYSVSEM the kernel's EINVAL */
static void clone_insn(int argc, char **argv)
{
	(void)argc; (void)argv;
	need_trap();
	make_three(0);
	errno = 0;
	long pid = raw_syscall(SYS_clone, CLONE_NEWIPC | SIGCHLD, 0, 0, 0, 0);
	clone_child_then_wait(pid, errno, "clone(CLONE_NEWIPC) by instruction");
	look_for_three(0);
	dt_semget(KEY + 50, 1, 0);
	errno = 0;
	pid = raw_syscall(SYS_clone, CLONE_NEWIPC | CLONE_SYSVSEM | SIGCHLD, 0, 0, 0, 0);
	if (pid == 0)
		_exit(0);
	dt_out("clone(CLONE_NEWIPC|CLONE_SYSVSEM) by instruction = %s", dt_res(pid, errno));
	remove_three(0);
}

/* clone3(CLONE_NEWIPC) by instruction, falling back to clone on ENOSYS as
 * glibc does: a child in a fresh namespace either way */
static void clone3_fallback(int argc, char **argv)
{
	(void)argc; (void)argv;
	need_trap();
	make_three(0);
	struct clone3_args a = { .flags = CLONE_NEWIPC, .exit_signal = SIGCHLD };
	errno = 0;
	long pid = raw_syscall(SYS_clone3, &a, sizeof(a));
	if (pid < 0 && errno == ENOSYS) {
		errno = 0;
		pid = raw_syscall(SYS_clone, CLONE_NEWIPC | SIGCHLD, 0, 0, 0, 0);
	}
	clone_child_then_wait(pid, errno, "clone3(CLONE_NEWIPC), else clone, by instruction");
	look_for_three(0);
	dt_semget(KEY + 50, 1, 0);
	remove_three(0);
}

/* the exec'd child of insn_fork_holds: its namespace is the one it was
 * forked in, whatever its parent did since (ARGV[1]: the pipe to wait on) */
static void held_child(int argc, char **argv)
{
	char c;

	if (argc < 2)
		dt_fail("held-child: no fd");
	if (read(atoi(argv[1]), &c, 1) != 1)
		dt_fail("held-child: go read");
	dt_out("exec'd child, after its parent's second unshare:");
	dt_semget(KEY + 60, 1, 0);
}

/* A process that unshared forks and execs by instruction (uipc does not
 * see it), then unshares again: the child keeps the first namespace and
 * its objects */
static void insn_fork_holds(int argc, char **argv)
{
	char fdarg[16], reg[64], *args[] = { "trap_ns", "held-child", fdarg, NULL };
	extern char **environ;
	int p[2], st = -1;

	(void)argc; (void)argv;
	need_trap();
	errno = 0;
	int r = unshare(CLONE_NEWIPC);
	dt_out("unshare(CLONE_NEWIPC) = %s", dt_res(r, errno));
	dt_semget(KEY + 60, 1, IPC_CREAT | 0600);
	if (pipe(p))
		dt_fail("pipe");
	snprintf(fdarg, sizeof(fdarg), "%d", p[0]);
	/* the exec'd image is this run's, as dt_exec_self would say (else,
	 * on the kernel, it checks that its namespace is not its parent's,
	 * which holds only once the parent has unshared again) */
	snprintf(reg, sizeof(reg), "main,main=%d", (int)getpid());
	setenv("DT_REGISTRY", reg, 1);
	long pid = raw_syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (pid == 0) {
		raw_syscall(SYS_execve, "/proc/self/exe", args, environ);
		_exit(127);
	}
	unsetenv("DT_REGISTRY");
	if (pid < 0)
		dt_fail("fork by instruction: %s", dt_errname(errno));
	close(p[0]);
	errno = 0;
	r = unshare(CLONE_NEWIPC);
	dt_out("unshare(CLONE_NEWIPC) again = %s", dt_res(r, errno));
	dt_semget(KEY + 60, 1, 0);
	if (write(p[1], "g", 1) != 1)
		dt_fail("go write");
	if (waitpid((pid_t)pid, &st, 0) != pid)
		dt_fail("waitpid");
	dt_out("child exit %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	close(p[1]);
}

const struct dt_case dt_cases[] = {
	{ "join-by-proc", join_by_proc_t, 0 },
	{ "join-by-pidfd", join_by_pidfd_t, 0 },
	{ "wrong-type", wrong_type_t, 0 },
	{ "held-by-fd", held_by_fd_t, 0 },
	{ "self-held", self_held_t, 0 },
	{ "undo-at-setns", undo_at_setns_t, 0 },
	{ "attachment-stays", attachment_stays_t, 0 },
	{ "children-follow", children_follow_t, 0 },
	{ "limits-follow", limits_follow_t, 0 },
	{ "identity", identity_t, 0 },
	{ "relative-paths", relative_paths_t, 0 },
	{ "exec-child", exec_child, 1 },
	{ "clone-insn", clone_insn, 0 },
	{ "clone3-fallback", clone3_fallback, 0 },
	{ "insn-fork-holds", insn_fork_holds, 0 },
	{ "held-child", held_child, 1 },
	{ NULL, NULL, 0 },
};
