/*
 * ns_basic.c - unshare(CLONE_NEWIPC): the caller gets a fresh, empty IPC
 * namespace (old keys, ids, *_INFO counts and *_STAT indexes invisible,
 * ids counted from the start again, default limits); its SEM_UNDO
 * adjustments in the old one are applied at the unshare; attachments made
 * before stay mapped; fork and exec children are in the new one; a second
 * unshare does it all again; a sysctl set in one namespace leaves the
 * other's alone.
 *
 * Under the kernel the program runs as root in a private namespace; under
 * uipc as root and as an ordinary user (tests/diff-ns.t), for whom the
 * kernel would refuse the call.
 */
#include "dt.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEY 0x5eed

static void do_unshare(void)
{
	errno = 0;
	int r = unshare(CLONE_NEWIPC);
	dt_out("unshare(CLONE_NEWIPC) = %s", dt_res(r, errno));
}

/* one object of each kind under KEY, KEY+1, KEY+2 */
static void make_three(void)
{
	dt_semget(KEY, 1, IPC_CREAT | 0600);
	errno = 0;
	int q = msgget(KEY + 1, IPC_CREAT | 0600);
	dt_out("msgget(KEY+1) = %s", dt_res(q, errno));
	dt_shmget(KEY + 2, 4096, IPC_CREAT | 0600);
}

static void look_for_three(void)
{
	dt_semget(KEY, 1, 0);
	errno = 0;
	int q = msgget(KEY + 1, 0);
	dt_out("msgget(KEY+1, 0) = %s", dt_res(q, errno));
	dt_shmget(KEY + 2, 4096, 0);
}

static void counts(void)
{
	struct msginfo mi;
	struct shm_info si;
	errno = 0;
	int r = msgctl(0, MSG_INFO, (struct msqid_ds *)&mi);
	dt_out("MSG_INFO = %s msgpool(queues)=%d", dt_res(r, errno), mi.msgpool);
	errno = 0;
	r = shmctl(0, SHM_INFO, (struct shmid_ds *)&si);
	dt_out("SHM_INFO = %s used_ids=%d", dt_res(r, errno), si.used_ids);
	struct seminfo s;
	union semun a = { .__buf = &s };
	errno = 0;
	r = semctl(0, 0, SEM_INFO, a);
	dt_out("SEM_INFO = %s semusz(arrays)=%d", dt_res(r, errno), s.semusz);
	struct semid_ds ds;
	union semun b = { .buf = &ds };
	errno = 0;
	r = semctl(0, 0, SEM_STAT, b);
	dt_out("SEM_STAT(index 0) = %s", dt_res(r, errno));
}

/* old objects are gone from view, ids start again at 0 */
static void invisible(int argc, char **argv)
{
	(void)argc; (void)argv;
	make_three();
	dt_semget(KEY + 10, 1, IPC_CREAT | 0600);
	do_unshare();
	look_for_three();
	counts();
	make_three();
	counts();
}

/* the same through syscall(SYS_unshare, ...), the door of programs
 * that make the call by number */
static void invisible_by_number(int argc, char **argv)
{
	(void)argc; (void)argv;
	make_three();
	errno = 0;
	long r = syscall(SYS_unshare, CLONE_NEWIPC);
	dt_out("syscall(SYS_unshare, CLONE_NEWIPC) = %s", dt_res(r, errno));
	look_for_three();
	counts();
	make_three();
	counts();
}

static int gate[2], done[2];

/* a child left in the old namespace reads what the unshare did there */
static void old_ns_watcher(void *arg)
{
	int id = *(int *)arg;
	char c;
	if (read(gate[0], &c, 1) != 1)
		dt_fail("gate read");
	dt_get(id, 0, GETVAL);
	dt_get(id, 1, GETVAL);
	dt_get(id, 0, GETPID);
}

static void undo_at_unshare(int argc, char **argv)
{
	(void)argc; (void)argv;
	int id = dt_semget(KEY, 2, IPC_CREAT | 0600);
	dt_setval(id, 1, 3);
	struct sembuf ops[2] = { { 0, 5, SEM_UNDO }, { 1, -2, SEM_UNDO } };
	dt_semop(id, ops, 2);
	if (pipe(gate))
		dt_fail("pipe");
	pid_t w = dt_fork(old_ns_watcher, &id);
	do_unshare();
	dt_semget(KEY, 2, 0);
	if (write(gate[1], "g", 1) != 1)
		dt_fail("gate write");
	dt_wait(w);
	(void)done;
}

/* an attachment made before stays mapped: the memory is still there */
static void old_attachment(int argc, char **argv)
{
	(void)argc; (void)argv;
	int id = dt_shmget(KEY, 4096, IPC_CREAT | 0600);
	char *p = dt_shmat(id, NULL, 0);
	if (p == (void *)-1)
		return;
	p[0] = 'a';
	do_unshare();
	dt_out("old attachment reads '%c'", p[0]);
	p[1] = 'b';
	dt_out("old attachment written: '%c%c'", p[0], p[1]);
	dt_shmget(KEY, 4096, 0);
	/* and detached as any attachment (the kernel counts it in the old
	 * namespace until then) */
	char *q = dt_shmat(dt_shmget(KEY, 4096, IPC_CREAT | 0600), NULL, 0);
	dt_shmdt(p, "old");
	dt_shm_access(p, "old, detached");
	dt_shmdt(p, "old");
	dt_shmdt(q, "new");
}

/* an old attachment the program unmapped and replaced: no longer one */
static void old_attachment_replaced(int argc, char **argv)
{
	(void)argc; (void)argv;
	int id = dt_shmget(KEY, 8192, IPC_CREAT | 0600);
	char *p = dt_shmat(id, NULL, 0);
	char *p2 = dt_shmat(id, NULL, 0);
	if (p == (void *)-1 || p2 == (void *)-1)
		return;
	do_unshare();
	munmap(p, 8192);
	void *m = mmap(p, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	dt_out("mmap over it: %s", m == p ? "same address" : "elsewhere");
	dt_shmdt(p, "replaced");
	dt_shm_access(p, "replaced");
	/* a part of the other cut away: shmdt of its start still detaches the rest */
	munmap(p2, 4096);
	dt_shmdt(p2, "cut");
	dt_shmdt(p2 + 4096, "cut+4096");
	dt_shm_access(p2 + 4096, "cut+4096");
}

static void child_looks(void *arg)
{
	(void)arg;
	look_for_three();
	dt_semget(KEY + 20, 1, IPC_CREAT | 0600);
}

/* a fork child is in the new namespace, and what it makes is the parent's */
static void fork_inherits(int argc, char **argv)
{
	(void)argc; (void)argv;
	dt_semget(KEY + 30, 1, IPC_CREAT | 0600);
	do_unshare();
	make_three();
	dt_wait(dt_fork(child_looks, NULL));
	dt_semget(KEY + 20, 1, 0);
	dt_semget(KEY + 30, 1, 0);
}

static void exec_child(int argc, char **argv)
{
	(void)argc; (void)argv;
	look_for_three();
	dt_semget(KEY + 30, 1, 0);
	counts();
}

static void exec_runner(void *arg)
{
	(void)arg;
	char *args[] = { "ns_basic", "exec-child", NULL };
	dt_exec_self(args);
}

/* an exec'd child is in the new namespace too */
static void exec_inherits(int argc, char **argv)
{
	(void)argc; (void)argv;
	dt_semget(KEY + 30, 1, IPC_CREAT | 0600);
	do_unshare();
	make_three();
	dt_wait(dt_fork(exec_runner, NULL));
}

static void exec_runner_bare_env(void *arg)
{
	(void)arg;
	/* an environment without uipc's namespace entries, as a program that
	 * builds its children's environment from scratch passes */
	unsetenv("UIPC_NS_FD");
	unsetenv("UIPC_NS_FILE");
	char *args[] = { "ns_basic", "exec-child", NULL };
	dt_exec_self(args);
}

/* ... also when the exec'd image's environment lacks the namespace */
static void exec_bare_env(int argc, char **argv)
{
	(void)argc; (void)argv;
	dt_semget(KEY + 30, 1, IPC_CREAT | 0600);
	do_unshare();
	make_three();
	dt_wait(dt_fork(exec_runner_bare_env, NULL));
}

static int clone_child_fn(void *arg)
{
	(void)arg;
	dt_out("clone child:");
	look_for_three();
	dt_semget(KEY + 50, 1, IPC_CREAT | 0600);
	counts();
	return 0;
}

/* clone(CLONE_NEWIPC): the child starts in a fresh namespace, the parent
 * stays in its own */
static void clone_newipc(int argc, char **argv)
{
	(void)argc; (void)argv;
	static char stack[256 << 10] __attribute__((aligned(16)));
	make_three();
	errno = 0;
	int pid = clone(clone_child_fn, stack + sizeof(stack), CLONE_NEWIPC | SIGCHLD, NULL);
	int st = -1;
	if (pid > 0 && waitpid(pid, &st, 0) != pid)
		dt_fail("waitpid");
	dt_out("clone(CLONE_NEWIPC) = %s, exit %d", pid > 0 ? "child" : dt_res(pid, errno),
	       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	look_for_three();
	dt_semget(KEY + 50, 1, 0);
}

/* clone3 and the raw clone by number (a fork-like child, no stack of its
 * own): the child starts in a fresh namespace */
struct clone3_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

static void raw_child_then_wait(long pid, int e, const char *what)
{
	int st = -1;

	if (pid == 0) {
		dt_out("%s child:", what);
		look_for_three();
		dt_semget(KEY + 50, 1, IPC_CREAT | 0600);
		counts();
		_exit(0);
	}
	if (pid > 0 && waitpid((pid_t)pid, &st, 0) != pid)
		dt_fail("waitpid");
	dt_out("%s = %s, exit %d", what, pid > 0 ? "child" : dt_res(pid, e),
	       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static void clone_by_number(int argc, char **argv)
{
	(void)argc; (void)argv;
	make_three();
	struct clone3_args a = { .flags = CLONE_NEWIPC, .exit_signal = SIGCHLD };
	errno = 0;
	long pid = syscall(SYS_clone3, &a, sizeof(a));
	raw_child_then_wait(pid, errno, "clone3(CLONE_NEWIPC)");
	look_for_three();
	dt_semget(KEY + 50, 1, 0);
	errno = 0;
	pid = syscall(SYS_clone, CLONE_NEWIPC | SIGCHLD, 0, 0, 0, 0);
	raw_child_then_wait(pid, errno, "syscall(SYS_clone, CLONE_NEWIPC)");
	dt_semget(KEY + 50, 1, 0);
	/* the kernel's refusals stay: CLONE_NEWIPC with CLONE_SYSVSEM */
	a.flags = CLONE_NEWIPC | CLONE_SYSVSEM;
	errno = 0;
	pid = syscall(SYS_clone3, &a, sizeof(a));
	dt_out("clone3(CLONE_NEWIPC|CLONE_SYSVSEM) = %s", dt_res(pid, errno));
}

static int spawn_child_fn(void *arg)
{
	char *args[] = { "ns_basic", "exec-child", NULL };

	(void)arg;
	dt_exec_self(args);
	return 1;
}

/* clone(CLONE_VM | CLONE_VFORK | CLONE_NEWIPC), as posix_spawn would: the
 * child's exec is in a fresh namespace */
static void clone_spawn(int argc, char **argv)
{
	(void)argc; (void)argv;
	static char stack[256 << 10] __attribute__((aligned(16)));
	dt_semget(KEY + 30, 1, IPC_CREAT | 0600);
	make_three();
	errno = 0;
	int pid = clone(spawn_child_fn, stack + sizeof(stack),
			CLONE_VM | CLONE_VFORK | CLONE_NEWIPC | SIGCHLD, NULL);
	int st = -1;
	if (pid > 0 && waitpid(pid, &st, 0) != pid)
		dt_fail("waitpid");
	dt_out("clone(CLONE_VM|CLONE_VFORK|CLONE_NEWIPC) = %s, exit %d",
	       pid > 0 ? "child" : dt_res(pid, errno), WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	look_for_three();
	dt_semget(KEY + 30, 1, 0);
}

static int death_pipe[2], done_pipe[2];

/* the grandchild: reads until its parent, the clone child, has died */
static void grandchild_waits(void)
{
	char c;

	close(death_pipe[1]);
	close(done_pipe[0]);
	while (read(death_pipe[0], &c, 1) > 0)
		;
	int id = semget(KEY + 70, 1, 0);
	dt_out("after the clone child died: GETVAL %d", semctl(id, 0, GETVAL));
	_exit(0);   /* done_pipe's last writer: the main process goes on */
}

static int dying_clone_child(void *arg)
{
	(void)arg;
	int id = semget(KEY + 70, 1, IPC_CREAT | 0600);
	struct sembuf up = { 0, 1, SEM_UNDO };
	if (id < 0 || semop(id, &up, 1))
		_exit(3);
	pid_t g = fork();
	if (g == 0)
		grandchild_waits();
	close(death_pipe[0]);
	close(done_pipe[1]);
	kill(getpid(), SIGKILL);
	return 2;
}

/* a clone child killed holding SEM_UNDO adjustments: its adjustments are
 * applied at its death, seen by its own child in its namespace */
static void clone_child_killed(int argc, char **argv)
{
	(void)argc; (void)argv;
	static char stack[256 << 10] __attribute__((aligned(16)));
	if (pipe(death_pipe) || pipe(done_pipe))
		dt_fail("pipe");
	int pid = clone(dying_clone_child, stack + sizeof(stack), CLONE_NEWIPC | SIGCHLD, NULL);
	close(death_pipe[1]);
	close(death_pipe[0]);
	close(done_pipe[1]);
	int st = -1;
	if (pid > 0 && waitpid(pid, &st, 0) != pid)
		dt_fail("waitpid");
	/* its child (reparented) reports first: wait for its end */
	char c;
	while (read(done_pipe[0], &c, 1) > 0)
		;
	dt_out("clone child: %s", WIFSIGNALED(st) ? "killed" : "not killed");
	dt_semget(KEY + 70, 1, 0);
}

/* a second and a third unshare: each time a fresh namespace */
static void again(int argc, char **argv)
{
	(void)argc; (void)argv;
	make_three();
	do_unshare();
	look_for_three();
	dt_semget(KEY + 40, 1, IPC_CREAT | 0600);
	dt_semget(KEY + 41, 1, IPC_CREAT | 0600);
	do_unshare();
	look_for_three();
	dt_semget(KEY + 40, 1, 0);
	counts();
	dt_semget(KEY + 42, 1, IPC_CREAT | 0600);
	do_unshare();
	dt_semget(KEY + 42, 1, 0);
	dt_semget(KEY + 43, 1, IPC_CREAT | 0600);
}

/* an unshare out of a namespace made by unshare, whose segment is still
 * attached: the attachment keeps its memory (uipc must not make the new
 * namespace of that one in place) */
static void again_attached(int argc, char **argv)
{
	(void)argc; (void)argv;
	do_unshare();
	int id = dt_shmget(KEY, 8192, IPC_CREAT | 0600);
	char *p = dt_shmat(id, NULL, 0);
	if (p == (void *)-1)
		return;
	p[0] = 'a';
	p[4096] = 'b';
	dt_semget(KEY + 1, 1, IPC_CREAT | 0600);
	do_unshare();
	dt_out("old attachment reads '%c%c'", p[0], p[4096]);
	dt_shmget(KEY, 8192, 0);
	dt_semget(KEY + 1, 1, 0);
	counts();
	dt_shmdt(p, "old");
	dt_shm_access(p, "old, detached");
	do_unshare();
	counts();
}

static int hold_gate[2];

static void holder_looks_later(void *arg)
{
	char c;

	(void)arg;
	if (read(hold_gate[0], &c, 1) != 1)
		dt_fail("gate read");
	look_for_three();
	counts();
}

/* a fork child still in a namespace made by unshare when its parent
 * unshares again: the namespace and its objects stay the child's */
static void fork_holds(int argc, char **argv)
{
	(void)argc; (void)argv;
	if (pipe(hold_gate))
		dt_fail("pipe");
	do_unshare();
	make_three();
	pid_t c = dt_fork(holder_looks_later, NULL);
	do_unshare();
	look_for_three();
	dt_semget(KEY + 60, 1, IPC_CREAT | 0600);
	if (write(hold_gate[1], "g", 1) != 1)
		dt_fail("gate write");
	dt_wait(c);
	do_unshare();
	counts();
}

/* the popen'd child: looks once its parent writes a line */
static void popen_child(int argc, char **argv)
{
	char c;

	(void)argc; (void)argv;
	if (read(0, &c, 1) != 1)
		dt_fail("stdin read");
	look_for_three();
	counts();
}

/* the same with a child that popen (glibc's own spawn) started */
static void popen_holds(int argc, char **argv)
{
	char cmd[64];

	(void)argc; (void)argv;
	do_unshare();
	make_three();
	snprintf(cmd, sizeof(cmd), "exec /proc/%d/exe popen-child", (int)getpid());
	setenv("DT_REGISTRY", "popen1", 1);
	FILE *f = popen(cmd, "w");
	unsetenv("DT_REGISTRY");
	if (!f)
		dt_fail("popen: %s", dt_errname(errno));
	do_unshare();
	look_for_three();
	fputc('g', f);
	int st = pclose(f);
	dt_out("pclose: exit %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	counts();
}

/* limits belong to a namespace: the new one has the defaults */
static void limits(int argc, char **argv)
{
	(void)argc; (void)argv;
	dt_sysctl_set("kernel.sem", "10 100 5 4");
	dt_sysctl_set("kernel.msgmni", "3");
	dt_semget(KEY, 20, IPC_CREAT | 0600);
	do_unshare();
	dt_sysctl_get("kernel.sem");
	dt_sysctl_get("kernel.msgmni");
	dt_semget(KEY, 20, IPC_CREAT | 0600);
	dt_sysctl_set("kernel.msgmni", "7");
	do_unshare();
	dt_sysctl_get("kernel.msgmni");
}

/* flags the kernel refuses: the call fails as a whole, nothing changes */
static void refused(int argc, char **argv)
{
	(void)argc; (void)argv;
	make_three();
	errno = 0;
	int r = unshare(CLONE_NEWIPC | 0x1);
	dt_out("unshare(CLONE_NEWIPC|0x1) = %s", dt_res(r, errno));
	look_for_three();
	counts();
}

const struct dt_case dt_cases[] = {
	{ "invisible", invisible, 0 },
	{ "invisible-by-number", invisible_by_number, 0 },
	{ "undo-at-unshare", undo_at_unshare, 0 },
	{ "old-attachment", old_attachment, 0 },
	{ "old-attachment-replaced", old_attachment_replaced, 0 },
	{ "fork-inherits", fork_inherits, 0 },
	{ "exec-inherits", exec_inherits, 0 },
	{ "exec-child", exec_child, 1 },
	{ "exec-bare-env", exec_bare_env, 0 },
	{ "clone-newipc", clone_newipc, 0 },
	{ "clone-by-number", clone_by_number, 0 },
	{ "clone-spawn", clone_spawn, 0 },
	{ "clone-child-killed", clone_child_killed, 0 },
	{ "again", again, 0 },
	{ "again-attached", again_attached, 0 },
	{ "fork-holds", fork_holds, 0 },
	{ "popen-holds", popen_holds, 0 },
	{ "popen-child", popen_child, 1 },
	{ "limits", limits, 0 },
	{ "refused", refused, 0 },
	{ NULL, NULL, 0 },
};
