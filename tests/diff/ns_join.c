/*
 * ns_join.c - setns(2) into an IPC namespace and what /proc/PID/ns/ipc
 * says: a process joins the namespace of another through the descriptor
 * open("/proc/PID/ns/ipc") gives, through a pidfd, or by number
 * (syscall(SYS_setns)); it sees that namespace's objects and limits, and
 * its fork and exec children are there too; it goes back through a
 * descriptor of its own namespace; a namespace held only by a descriptor
 * keeps its objects; setns applies the caller's SEM_UNDO adjustments (also
 * into the namespace it is in, where it does nothing else); attachments
 * made before stay; the errors of a wrong type or descriptor.  readlink,
 * stat and fstat name a namespace alike in every member and tell
 * different ones apart (printed as relations, never as numbers), also
 * when the link is reached by a relative path (readlinkat, fstatat,
 * statx, openat, the working directory, "..").
 *
 * Under the kernel the program runs as root in a private namespace; under
 * uipc as root and as an ordinary user (tests/diff-ns-join.t), for whom
 * the kernel would refuse setns.
 */
#include "dt.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEY 0x5eed

/* ---- a helper child in a namespace of its own ----
 *
 * The child unshares, makes what the case asks (its lines printed while
 * the parent waits), reports through READY and stays until the parent
 * writes to GO (or dies).
 */
struct helper {
	int ready[2], go[2];
	void (*make)(void);
	pid_t pid;
};

static void helper_main(void *arg)
{
	struct helper *h = arg;
	char c;

	errno = 0;
	int r = unshare(CLONE_NEWIPC);
	dt_out("unshare(CLONE_NEWIPC) = %s", dt_res(r, errno));
	if (h->make)
		h->make();
	if (write(h->ready[1], "r", 1) != 1)
		dt_fail("ready write");
	if (read(h->go[0], &c, 1) < 0)
		dt_fail("go read");
}

static void helper_start(struct helper *h, void (*make)(void))
{
	char c;

	if (pipe(h->ready) || pipe(h->go))
		dt_fail("pipe");
	h->make = make;
	h->pid = dt_fork(helper_main, h);
	if (read(h->ready[0], &c, 1) != 1)
		dt_fail("helper did not get ready");
}

static void helper_end(struct helper *h)
{
	if (write(h->go[1], "g", 1) != 1)
		dt_fail("go write");
	dt_wait(h->pid);
}

/* ---- printing wrappers ---- */

static int open_ns(const char *what, pid_t pid)
{
	char path[64];

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/ns/ipc", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/ns/ipc");
	errno = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	dt_out("open(/proc/%s/ns/ipc) = %s", what, fd < 0 ? dt_res(fd, errno) : "fd");
	return fd;
}

static int do_setns(const char *what, int fd, int nstype)
{
	errno = 0;
	int r = setns(fd, nstype);
	dt_out("setns(%s, %#x) = %s", what, nstype, dt_res(r, errno));
	return r;
}

static int pidfd_of(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	if (fd < 0)
		dt_fail("pidfd_open: %s", dt_errname(errno));
	return fd;
}

/* one object of each kind under KEY+BASE .. +2, and their lookups */
static void make_three(int base)
{
	dt_semget(KEY + base, 1, IPC_CREAT | 0600);
	errno = 0;
	int q = msgget(KEY + base + 1, IPC_CREAT | 0600);
	dt_out("msgget(KEY+%d) = %s", base + 1, dt_res(q, errno));
	dt_shmget(KEY + base + 2, 4096, IPC_CREAT | 0600);
}

static void look_for_three(int base)
{
	dt_semget(KEY + base, 1, 0);
	errno = 0;
	int q = msgget(KEY + base + 1, 0);
	dt_out("msgget(KEY+%d, 0) = %s", base + 1, dt_res(q, errno));
	dt_shmget(KEY + base + 2, 4096, 0);
}

/* remove what make_three made (the kernel's namespace goes with the
 * test; uipc's named one would keep them) */
static void remove_three(int base)
{
	int s = semget(KEY + base, 1, 0), q = msgget(KEY + base + 1, 0);
	int m = shmget(KEY + base + 2, 4096, 0);

	if (s >= 0)
		semctl(s, 0, IPC_RMID);
	if (q >= 0)
		msgctl(q, IPC_RMID, NULL);
	if (m >= 0)
		shmctl(m, IPC_RMID, NULL);
}

static void helper_makes_three(void)
{
	make_three(10);
}

/* ---- the cases ---- */

/* the namespace of a child that unshared, joined by /proc/PID/ns/ipc, and
 * left again by a descriptor of the caller's own */
static void join_by_proc(int argc, char **argv)
{
	struct helper h;

	(void)argc; (void)argv;
	make_three(0);
	int self = open_ns("self", 0);
	helper_start(&h, helper_makes_three);
	int fd = open_ns("child", h.pid);
	do_setns("child's", fd, CLONE_NEWIPC);
	look_for_three(0);
	look_for_three(10);
	dt_semget(KEY + 20, 1, IPC_CREAT | 0600);
	do_setns("own", self, 0);
	look_for_three(0);
	look_for_three(10);
	dt_semget(KEY + 20, 1, 0);
	do_setns("child's", fd, 0);
	dt_semget(KEY + 20, 1, 0);
	do_setns("own", self, CLONE_NEWIPC);
	helper_end(&h);
	remove_three(0);
	close(fd);
	close(self);
}

/* the same through a pidfd, and by number */
static void join_by_pidfd(int argc, char **argv)
{
	struct helper h;

	(void)argc; (void)argv;
	make_three(0);
	int self = open_ns("self", 0);
	helper_start(&h, helper_makes_three);
	int pfd = pidfd_of(h.pid);
	do_setns("pidfd", pfd, CLONE_NEWIPC);
	look_for_three(0);
	look_for_three(10);
	do_setns("own", self, CLONE_NEWIPC);
	look_for_three(10);
	errno = 0;
	long r = syscall(SYS_setns, pfd, CLONE_NEWIPC);
	dt_out("syscall(SYS_setns, pidfd, CLONE_NEWIPC) = %s", dt_res(r, errno));
	look_for_three(10);
	errno = 0;
	r = syscall(SYS_setns, self, 0);
	dt_out("syscall(SYS_setns, own, 0) = %s", dt_res(r, errno));
	look_for_three(0);
	helper_end(&h);
	/* its process gone: ESRCH */
	do_setns("pidfd of an exited process", pfd, CLONE_NEWIPC);
	remove_three(0);
	close(pfd);
	close(self);
}

/* the descriptor of another kind of namespace, or of no namespace */
static void wrong_type(int argc, char **argv)
{
	struct helper h;
	int p[2];

	(void)argc; (void)argv;
	helper_start(&h, NULL);
	int fd = open_ns("child", h.pid);
	do_setns("ipc ns", fd, CLONE_NEWNET);
	do_setns("ipc ns", fd, CLONE_NEWUTS);
	do_setns("ipc ns", fd, CLONE_NEWIPC | CLONE_NEWUTS);
	do_setns("ipc ns", fd, 0x1);
	int pfd = pidfd_of(h.pid);
	do_setns("pidfd", pfd, 0);
	do_setns("pidfd", pfd, CLONE_NEWIPC | 0x1);
	if (pipe(p))
		dt_fail("pipe");
	do_setns("pipe", p[0], CLONE_NEWIPC);
	do_setns("pipe", p[0], 0);
	do_setns("-1", -1, CLONE_NEWIPC);
	int dn = open("/dev/null", O_RDONLY);
	do_setns("/dev/null", dn, CLONE_NEWIPC);
	close(p[0]);
	do_setns("a closed fd", p[0], CLONE_NEWIPC);
	dt_semget(KEY, 1, 0);
	helper_end(&h);
	close(p[1]);
	close(dn);
	close(fd);
	close(pfd);
}

/* a namespace whose last process has gone lives on while a descriptor
 * holds it: its objects are still there */
static void held_by_fd(int argc, char **argv)
{
	struct helper h;

	(void)argc; (void)argv;
	int self = open_ns("self", 0);
	helper_start(&h, helper_makes_three);
	int fd = open_ns("child", h.pid);
	helper_end(&h);
	do_setns("the exited child's", fd, CLONE_NEWIPC);
	look_for_three(10);
	dt_semget(KEY + 20, 1, IPC_CREAT | 0600);
	/* a second unshare: the joined namespace is held by FD alone again */
	errno = 0;
	int r = unshare(CLONE_NEWIPC);
	dt_out("unshare(CLONE_NEWIPC) = %s", dt_res(r, errno));
	look_for_three(10);
	do_setns("the exited child's", fd, 0);
	look_for_three(10);
	dt_semget(KEY + 20, 1, 0);
	do_setns("own", self, 0);
	look_for_three(10);
	close(fd);
	close(self);
}

/* a namespace made by unshare, held by a descriptor of its own link when
 * its only process unshares again: it stays, objects and all */
static void self_held(int argc, char **argv)
{
	(void)argc; (void)argv;
	errno = 0;
	int r = unshare(CLONE_NEWIPC);
	dt_out("unshare(CLONE_NEWIPC) = %s", dt_res(r, errno));
	make_three(10);
	int fd = open_ns("self", 0);
	errno = 0;
	r = unshare(CLONE_NEWIPC);
	dt_out("unshare(CLONE_NEWIPC) = %s", dt_res(r, errno));
	look_for_three(10);
	dt_semget(KEY + 20, 1, IPC_CREAT | 0600);
	int second = open_ns("self", 0);
	do_setns("the first", fd, CLONE_NEWIPC);
	look_for_three(10);
	dt_semget(KEY + 20, 1, 0);
	do_setns("the second", second, CLONE_NEWIPC);
	dt_semget(KEY + 20, 1, 0);
	close(fd);
	close(second);
}

static int undo_id;

static void old_ns_reader(void *arg)
{
	char c;

	(void)arg;
	if (read(*(int *)arg, &c, 1) != 1)
		dt_fail("gate read");
	dt_get(undo_id, 0, GETVAL);
	dt_get(undo_id, 1, GETVAL);
}

/* setns applies the caller's SEM_UNDO adjustments where it leaves them
 * (seen by a child left there); into its own namespace, it does only
 * that: later SEM_UNDO operations are recorded afresh */
static void undo_at_setns(int argc, char **argv)
{
	struct helper h;
	int gate[2];

	(void)argc; (void)argv;
	undo_id = dt_semget(KEY, 2, IPC_CREAT | 0600);
	dt_setval(undo_id, 1, 3);
	struct sembuf ops[2] = { { 0, 5, SEM_UNDO }, { 1, -2, SEM_UNDO } };
	dt_semop(undo_id, ops, 2);
	int self = open_ns("self", 0);
	do_setns("own", self, CLONE_NEWIPC);
	dt_get(undo_id, 0, GETVAL);
	dt_get(undo_id, 1, GETVAL);
	dt_semop(undo_id, ops, 2);
	dt_get(undo_id, 0, GETVAL);
	if (pipe(gate))
		dt_fail("pipe");
	pid_t w = dt_fork(old_ns_reader, &gate[0]);
	helper_start(&h, NULL);
	int fd = open_ns("child", h.pid);
	do_setns("child's", fd, CLONE_NEWIPC);
	dt_semget(KEY, 2, 0);
	if (write(gate[1], "g", 1) != 1)
		dt_fail("gate write");
	dt_wait(w);
	do_setns("own", self, CLONE_NEWIPC);
	dt_get(undo_id, 0, GETVAL);
	dt_get(undo_id, 1, GETVAL);
	helper_end(&h);
	dt_rmid(undo_id);
	close(fd);
	close(self);
}

/* an attachment made before setns stays mapped and detachable */
static void attachment_stays(int argc, char **argv)
{
	struct helper h;

	(void)argc; (void)argv;
	int id = dt_shmget(KEY, 4096, IPC_CREAT | 0600);
	char *p = dt_shmat(id, NULL, 0);
	if (p == (void *)-1)
		return;
	p[0] = 'a';
	int self = open_ns("self", 0);
	helper_start(&h, NULL);
	int fd = open_ns("child", h.pid);
	do_setns("child's", fd, CLONE_NEWIPC);
	dt_out("old attachment reads '%c'", p[0]);
	p[1] = 'b';
	dt_out("old attachment written: '%c%c'", p[0], p[1]);
	dt_shmget(KEY, 4096, 0);
	dt_shmdt(p, "old");
	dt_shm_access(p, "old, detached");
	do_setns("own", self, CLONE_NEWIPC);
	dt_shmctl(id, IPC_RMID);
	helper_end(&h);
	close(fd);
	close(self);
}

static void child_looks(void *arg)
{
	(void)arg;
	look_for_three(10);
	dt_semget(KEY + 30, 1, IPC_CREAT | 0600);
}

static void exec_child(int argc, char **argv)
{
	(void)argc; (void)argv;
	look_for_three(10);
	dt_semget(KEY + 30, 1, 0);
}

static void exec_runner(void *arg)
{
	char *args[] = { "ns_join", "exec-child", NULL };

	if (arg) {
		/* an environment without uipc's entries, as a program that
		 * builds its children's environment from scratch passes */
		unsetenv("UIPC_NS_FD");
		unsetenv("UIPC_NS_FILE");
	}
	dt_exec_self(args);
}

/* fork and exec children of a process that joined are in the joined
 * namespace, whatever their environment */
static void children_follow(int argc, char **argv)
{
	struct helper h;

	(void)argc; (void)argv;
	int self = open_ns("self", 0);
	helper_start(&h, helper_makes_three);
	int fd = open_ns("child", h.pid);
	do_setns("child's", fd, CLONE_NEWIPC);
	dt_wait(dt_fork(child_looks, NULL));
	dt_semget(KEY + 30, 1, 0);
	dt_wait(dt_fork(exec_runner, NULL));
	dt_wait(dt_fork(exec_runner, "bare"));
	do_setns("own", self, CLONE_NEWIPC);
	dt_semget(KEY + 30, 1, 0);
	helper_end(&h);
	close(fd);
	close(self);
}

static void helper_sets_msgmni(void)
{
	dt_sysctl_set("kernel.msgmni", "7");
}

/* the limits are the joined namespace's */
static void limits_follow(int argc, char **argv)
{
	struct helper h;

	(void)argc; (void)argv;
	int self = open_ns("self", 0);
	helper_start(&h, helper_sets_msgmni);
	dt_sysctl_get("kernel.msgmni");
	int fd = open_ns("child", h.pid);
	do_setns("child's", fd, CLONE_NEWIPC);
	dt_sysctl_get("kernel.msgmni");
	dt_sysctl_set("kernel.msgmni", "9");
	do_setns("own", self, CLONE_NEWIPC);
	dt_sysctl_get("kernel.msgmni");
	do_setns("child's", fd, CLONE_NEWIPC);
	dt_sysctl_get("kernel.msgmni");
	do_setns("own", self, CLONE_NEWIPC);
	helper_end(&h);
	close(fd);
	close(self);
}

/* ---- identity: readlink, stat, fstat ---- */

struct ident {
	unsigned long long link;   /* N of "ipc:[N]" */
	dev_t dev;
	ino_t ino;
};

static struct ident ident_of(const char *path)
{
	struct ident id = { 0, 0, 0 };
	char buf[64];
	struct stat st;
	ssize_t n = readlink(path, buf, sizeof(buf) - 1);

	if (n < 0 || sscanf((buf[n] = 0, buf), "ipc:[%llu]", &id.link) != 1)
		dt_fail("readlink %s: %s", path, n < 0 ? dt_errname(errno) : buf);
	if (stat(path, &st))
		dt_fail("stat %s: %s", path, dt_errname(errno));
	id.dev = st.st_dev;
	id.ino = st.st_ino;
	if (id.link != (unsigned long long)id.ino)
		dt_out("%s: readlink's N and stat's st_ino differ", path);
	return id;
}

static const char *same(struct ident a, struct ident b)
{
	bool s = a.link == b.link && a.dev == b.dev && a.ino == b.ino;
	bool d = a.link != b.link && !(a.dev == b.dev && a.ino == b.ino);

	return s ? "same" : d ? "different" : "MIXED";
}

static void child_reports(void *arg)
{
	int fd = *(int *)arg;
	struct ident me = ident_of("/proc/self/ns/ipc");

	if (write(fd, &me, sizeof(me)) != sizeof(me))
		dt_fail("report write");
}

static struct ident ask_child(void)
{
	int p[2];
	struct ident got;

	if (pipe(p))
		dt_fail("pipe");
	dt_wait(dt_fork(child_reports, &p[1]));
	if (read(p[0], &got, sizeof(got)) != sizeof(got))
		dt_fail("report read");
	close(p[0]);
	close(p[1]);
	return got;
}

/* the same namespace gives the same name in every member, a different
 * one a different name; /proc/PID/ns/ipc of another process names its
 * namespace; fstat of the opened link agrees with stat */
static void identity(int argc, char **argv)
{
	struct helper h;
	struct stat st;

	(void)argc; (void)argv;
	struct ident me = ident_of("/proc/self/ns/ipc");
	dt_out("a fork child's namespace: %s", same(me, ask_child()));
	dt_out("/proc/thread-self/ns/ipc: %s", same(me, ident_of("/proc/thread-self/ns/ipc")));
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/ipc", (int)getpid());
	dt_out("/proc/PID/ns/ipc of itself: %s", same(me, ident_of(path)));
	int self = open_ns("self", 0);
	if (fstat(self, &st))
		dt_fail("fstat: %s", dt_errname(errno));
	dt_out("fstat of the opened link: %s",
	       st.st_dev == me.dev && st.st_ino == me.ino ? "same" : "different");
	/* a helper's namespace after its unshare: its own name, as others see it */
	helper_start(&h, NULL);
	snprintf(path, sizeof(path), "/proc/%d/ns/ipc", (int)h.pid);
	struct ident other = ident_of(path);
	dt_out("the unshared child's namespace: %s", same(me, other));
	int fd = open_ns("child", h.pid);
	if (fstat(fd, &st))
		dt_fail("fstat: %s", dt_errname(errno));
	dt_out("fstat of its opened link: %s",
	       st.st_dev == other.dev && st.st_ino == other.ino ? "same" : "different");
	do_setns("child's", fd, CLONE_NEWIPC);
	struct ident joined = ident_of("/proc/self/ns/ipc");
	dt_out("after joining it: %s as the child's, %s as before", same(joined, other),
	       same(joined, me));
	dt_out("a fork child's namespace: %s as the joined one", same(joined, ask_child()));
	do_setns("own", self, CLONE_NEWIPC);
	dt_out("back: %s as at the start", same(me, ident_of("/proc/self/ns/ipc")));
	helper_end(&h);
	close(fd);
	close(self);
}

/* the link through directory descriptor DFD: readlinkat, fstatat and
 * statx of NAME there */
static struct ident ident_at(int dfd, const char *name)
{
	struct ident id = { 0, 0, 0 };
	char buf[64];
	struct stat st;
	struct statx sx;
	ssize_t n = readlinkat(dfd, name, buf, sizeof(buf) - 1);

	if (n < 0 || sscanf((buf[n] = 0, buf), "ipc:[%llu]", &id.link) != 1)
		dt_fail("readlinkat %s: %s", name, n < 0 ? dt_errname(errno) : buf);
	if (fstatat(dfd, name, &st, 0))
		dt_fail("fstatat %s: %s", name, dt_errname(errno));
	if (statx(dfd, name, 0, STATX_BASIC_STATS, &sx))
		dt_fail("statx %s: %s", name, dt_errname(errno));
	id.dev = st.st_dev;
	id.ino = st.st_ino;
	if (id.link != (unsigned long long)id.ino || sx.stx_ino != (unsigned long long)st.st_ino)
		dt_out("%s: readlinkat's N, fstatat's and statx's inode differ", name);
	return id;
}

/* the link reached by a path relative to a directory descriptor or to the
 * working directory, or through "..", "//" and /proc/self: the same
 * namespace, and a descriptor of another's that setns takes */
static void relative_paths(int argc, char **argv)
{
	struct helper h;
	char path[64], cwd[PATH_MAX];

	(void)argc; (void)argv;
	struct ident me = ident_of("/proc/self/ns/ipc");
	int proc = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int nsdir = open("/proc/self/ns", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (proc < 0 || nsdir < 0)
		dt_fail("open /proc/self: %s", dt_errname(errno));
	dt_out("ns/ipc in /proc/self: %s", same(me, ident_at(proc, "ns/ipc")));
	dt_out("ipc in /proc/self/ns: %s", same(me, ident_at(nsdir, "ipc")));
	dt_out("/proc/self/../self/ns/ipc: %s", same(me, ident_of("/proc/self/../self/ns/ipc")));
	dt_out("//proc//self/ns//ipc: %s", same(me, ident_of("//proc//self/ns//ipc")));
	if (!getcwd(cwd, sizeof(cwd)) || chdir("/proc/self/ns"))
		dt_fail("chdir: %s", dt_errname(errno));
	dt_out("ipc in the working directory: %s", same(me, ident_of("ipc")));
	if (chdir("/proc"))
		dt_fail("chdir: %s", dt_errname(errno));
	snprintf(path, sizeof(path), "%d/ns/ipc", (int)getpid());
	dt_out("PID/ns/ipc from /proc: %s", same(me, ident_of(path)));
	if (chdir(cwd))
		dt_fail("chdir back: %s", dt_errname(errno));
	int self = open_ns("self", 0);
	helper_start(&h, helper_makes_three);
	snprintf(path, sizeof(path), "/proc/%d", (int)h.pid);
	int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	errno = 0;
	int fd = openat(dir, "ns/ipc", O_RDONLY | O_CLOEXEC);
	dt_out("openat(/proc/child, ns/ipc) = %s", fd < 0 ? dt_res(fd, errno) : "fd");
	do_setns("child's, opened relative", fd, CLONE_NEWIPC);
	look_for_three(10);
	do_setns("own", self, CLONE_NEWIPC);
	look_for_three(10);
	helper_end(&h);
	close(fd);
	close(dir);
	close(self);
	close(nsdir);
	close(proc);
}

const struct dt_case dt_cases[] = {
	{ "join-by-proc", join_by_proc, 0 },
	{ "join-by-pidfd", join_by_pidfd, 0 },
	{ "wrong-type", wrong_type, 0 },
	{ "held-by-fd", held_by_fd, 0 },
	{ "self-held", self_held, 0 },
	{ "undo-at-setns", undo_at_setns, 0 },
	{ "attachment-stays", attachment_stays, 0 },
	{ "children-follow", children_follow, 0 },
	{ "exec-child", exec_child, 1 },
	{ "limits-follow", limits_follow, 0 },
	{ "identity", identity, 0 },
	{ "relative-paths", relative_paths, 0 },
	{ NULL, NULL, 0 },
};
