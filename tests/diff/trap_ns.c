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
 * then clone: the child must start in a fresh namespace either way).
 *
 * Under uipc each case first checks that trap mode is on.
 */
#include "dt.h"
#include "rawinsn.h"

#include <sched.h>
#include <signal.h>
#include <stdint.h>
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
	{ "exec-child", exec_child, 1 },
	{ "clone-insn", clone_insn, 0 },
	{ "clone3-fallback", clone3_fallback, 0 },
	{ NULL, NULL, 0 },
};
