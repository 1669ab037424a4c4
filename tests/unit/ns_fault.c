/*
 * ns_fault.c - an anonymous namespace's memfd truncated under its members
 * (issue 14 on issue 15's namespaces): every member holds the memfd, so
 * any of them can truncate it, and the others must get EIDRM from their
 * calls, never SIGBUS (core/fault.c), however they came into the
 * namespace.  Run under uipc by tests/unit-ns-fault.t, prints TAP.  Each
 * check runs in a child of its own, so that a SIGBUS fails that check
 * only.  The call that meets the truncation runs to its end on zero pages
 * (any answer); the calls after it must fail with EIDRM.
 *
 *   1. unshare, a fork child truncates the memfd: the parent's calls give
 *      EIDRM, and a later unshare gives a working namespace, the one
 *      /proc/PID/ns/ipc names, its marker the only one (the broken
 *      namespace let go);
 *   2. after 20 unshares that each got a new memfd (a fork child held the
 *      old one), the same: the namespaces left are no longer watched, and
 *      the current one still is;
 *   3. a namespace made anew in place (an unshare nobody else saw), then
 *      truncated: EIDRM;
 *   4. setns back into an anonymous namespace through the descriptor of
 *      /proc/self/ns/ipc, then truncated: EIDRM;
 *   5. a clone(CLONE_NEWIPC) child in its namespace, truncated under it;
 *   6. opening /proc/PID/ns/ipc of a process whose memfd was truncated
 *      does not kill the opener, which is given its namespace;
 *   7. the memfd truncated after the arena, before a segment's slot: a
 *      new attachment of that segment fails with EIDRM;
 *   8. setns into a named namespace's file, then truncated: EIDRM;
 *   9. a thread in a namespace of its own (its unshare moves it alone),
 *      truncated by a fork child of that thread: the thread's calls give
 *      EIDRM, the main thread's namespace works on, the thread's next
 *      unshare works, and its end lets the broken namespace go.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int n, failed;

static void ok(int cond, const char *what)
{
	n++;
	if (!cond)
		failed++;
	printf("%sok %d - %s\n", cond ? "" : "not ", n, what);
	fflush(stdout);
}

/* the anonymous namespace's memfd, from the environment uipc keeps */
static int ns_fd(void)
{
	const char *v = getenv("UIPC_NS_FD");

	return v && *v ? atoi(v) : -1;
}

/* the namespace markers this process maps (nsfile.c: a PROT_NONE page
 * of the namespace's file at 2^47) */
static int markers(void)
{
	char line[512];
	int count = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f))
		count += strstr(line, " ---s 800000000000 ") != NULL;
	if (f)
		fclose(f);
	return count;
}

/* a fork child truncates FD to nothing (any member can) */
static int truncate_in_child(int fd)
{
	int st;
	pid_t pid = fork();

	if (pid == 0)
		_exit(ftruncate(fd, 0) == 0 ? 0 : 1);
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* semget and semop in the current namespace, after the call that meets
 * the truncation (it runs to its end on zero pages: any answer): both
 * fail with EIDRM? */
static int calls_give_eidrm(int semid)
{
	struct sembuf op = { 0, 1, IPC_NOWAIT };
	int e1, e2, r1, r2;

	semget(0x7e56, 1, IPC_CREAT | 0600);
	errno = 0;
	r1 = semget(0x7e57, 1, IPC_CREAT | 0600);
	e1 = errno;
	errno = 0;
	r2 = semop(semid, &op, 1);
	e2 = errno;
	if (r1 != -1 || e1 != EIDRM || r2 != -1 || e2 != EIDRM)
		printf("# semget %d (%s), semop %d (%s)\n", r1, strerror(e1), r2, strerror(e2));
	return r1 == -1 && e1 == EIDRM && r2 == -1 && e2 == EIDRM;
}

/* the current namespace's memfd truncated by a member: this process's
 * calls fail with EIDRM; exit status 0 if so */
static int truncated_gives_eidrm(void)
{
	int semid = semget(IPC_PRIVATE, 1, 0600), fd = ns_fd();

	if (semid < 0 || fd < 0) {
		printf("# semget %d (%s), UIPC_NS_FD %d\n", semid, strerror(errno), fd);
		return 1;
	}
	if (!truncate_in_child(fd)) {
		printf("# the child could not truncate fd %d\n", fd);
		return 1;
	}
	return calls_give_eidrm(semid) ? 0 : 1;
}

/* run FN in a child: it passed if it exited 0 (a SIGBUS is a failure) */
static void check(const char *what, int (*fn)(void))
{
	int st;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int r = fn();

		fflush(stdout);
		_exit(r);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid) {
		ok(0, what);
		return;
	}
	if (WIFSIGNALED(st))
		printf("# killed by signal %d (%s)\n", WTERMSIG(st), strsignal(WTERMSIG(st)));
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, what);
}

static int after_unshare(void)
{
	struct stat mine, named;
	char path[64];
	int r;

	if (unshare(CLONE_NEWIPC) < 0)
		return 1;
	r = truncated_gives_eidrm();
	/* and a new namespace works again, the one /proc/self/ns/ipc names */
	if (unshare(CLONE_NEWIPC) < 0 || semget(IPC_PRIVATE, 1, 0600) < 0) {
		printf("# after the broken namespace: %s\n", strerror(errno));
		return 1;
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/ipc", (int)getpid());
	if (fstat(ns_fd(), &mine) < 0 || stat(path, &named) < 0 || named.st_ino != mine.st_ino) {
		printf("# %s: inode %lu, the namespace's memfd %lu\n", path,
		       (unsigned long)named.st_ino, (unsigned long)mine.st_ino);
		return 1;
	}
	/* one marker (nsdoor.c reads them from /proc/PID/maps): the broken
	 * namespace's went with it */
	if (markers() != 1) {
		printf("# %d namespace markers in /proc/self/maps\n", markers());
		return 1;
	}
	return r;
}

static int after_many_unshares(void)
{
	for (int i = 0; i < 20; i++) {
		int st;
		pid_t pid;

		if (unshare(CLONE_NEWIPC) < 0 || semget(IPC_PRIVATE, 1, 0600) < 0)
			return 1;
		/* a child held it: the next unshare makes a new memfd */
		pid = fork();
		if (pid == 0)
			_exit(0);
		waitpid(pid, &st, 0);
	}
	if (unshare(CLONE_NEWIPC) < 0)
		return 1;
	return truncated_gives_eidrm();
}

static int after_remake(void)
{
	struct stat a, b;

	if (unshare(CLONE_NEWIPC) < 0 || semget(IPC_PRIVATE, 1, 0600) < 0 ||
	    stat("/proc/self/ns/ipc", &a) < 0 || unshare(CLONE_NEWIPC) < 0 ||
	    stat("/proc/self/ns/ipc", &b) < 0)
		return 1;
	if (a.st_ino != b.st_ino)
		printf("# (not made in place: ipc:[%lu] then ipc:[%lu])\n", (unsigned long)a.st_ino,
		       (unsigned long)b.st_ino);
	return truncated_gives_eidrm();
}

static int after_setns_anon(void)
{
	int door;

	if (unshare(CLONE_NEWIPC) < 0 || semget(IPC_PRIVATE, 1, 0600) < 0)
		return 1;
	door = open("/proc/self/ns/ipc", O_RDONLY | O_CLOEXEC);
	if (door < 0 || unshare(CLONE_NEWIPC) < 0 || setns(door, CLONE_NEWIPC) < 0) {
		printf("# door %d: %s\n", door, strerror(errno));
		return 1;
	}
	close(door);
	return truncated_gives_eidrm();
}

static int after_setns_named(void)
{
	char link[64], path[4096];
	ssize_t len;
	int semid, door, r;

	/* the named namespace this test started in (made by its first call) */
	if (semget(IPC_PRIVATE, 1, 0600) < 0)
		return 1;
	door = open("/proc/self/ns/ipc", O_RDONLY | O_CLOEXEC);
	if (door < 0 || unshare(CLONE_NEWIPC) < 0 || setns(door, CLONE_NEWIPC) < 0) {
		printf("# door %d: %s\n", door, strerror(errno));
		return 1;
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%d", door);
	len = readlink(link, path, sizeof(path) - 1);
	if (len <= 0)
		return 1;
	path[len] = 0;
	semid = semget(IPC_PRIVATE, 1, 0600);
	/* this one is the file's own: truncate it by name */
	if (semid < 0 || truncate(path, 0) < 0) {
		printf("# %s: %s\n", path, strerror(errno));
		return 1;
	}
	r = calls_give_eidrm(semid) ? 0 : 1;
	unlink(path);              /* (the file is no namespace any more) */
	return r;
}

static char clone_stack[256 << 10] __attribute__((aligned(16)));

static int clone_child(void *arg)
{
	int r;

	(void)arg;
	r = truncated_gives_eidrm();
	fflush(stdout);            /* (glibc's clone child ends without exit()) */
	return r;
}

static int in_clone_child(void)
{
	int st;
	pid_t pid = clone(clone_child, clone_stack + sizeof(clone_stack), CLONE_NEWIPC | SIGCHLD,
			  NULL);

	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 1;
	if (WIFSIGNALED(st))
		printf("# the clone child was killed by signal %d\n", WTERMSIG(st));
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

static int door_of_truncated(void)
{
	int pipefd[2], st, fd;
	char c, path[64];
	pid_t pid;

	if (pipe(pipefd) < 0)
		return 1;
	pid = fork();
	if (pid == 0) {
		/* a member of a namespace truncated under it, waiting */
		if (unshare(CLONE_NEWIPC) < 0 || semget(IPC_PRIVATE, 1, 0600) < 0 ||
		    ftruncate(ns_fd(), 0) < 0)
			_exit(1);
		if (write(pipefd[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	if (read(pipefd[0], &c, 1) != 1) {
		waitpid(pid, &st, 0);
		return 1;
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/ipc", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		printf("# open(%s): %s\n", path, strerror(errno));
	else
		close(fd);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return fd < 0;             /* alive, and given the namespace */
}

/* the memfd truncated after the arena, before a segment's slot: a new
 * attachment fails with EIDRM (its pages would be gone: SIGBUS), and the
 * namespace itself still works */
static int slot_truncated(void)
{
	int id, fd;
	void *p;

	if (unshare(CLONE_NEWIPC) < 0 || (id = shmget(IPC_PRIVATE, 65536, 0600)) < 0)
		return 1;
	fd = ns_fd();
	/* slot 0 is the arena; the segments' slots follow (2^48 bytes each) */
	if (fork() == 0)
		_exit(ftruncate(fd, (off_t)1 << 48) == 0 ? 0 : 1);
	wait(NULL);
	errno = 0;
	p = shmat(id, NULL, 0);
	if (p != (void *)-1 || errno != EIDRM) {
		printf("# shmat: %p (%s)\n", p, strerror(errno));
		if (p != (void *)-1)
			*(volatile char *)p = 1;   /* SIGBUS: the check fails loudly */
		return 1;
	}
	return semget(IPC_PRIVATE, 1, 0600) < 0;
}

/* 9: the thread's part (its result through ARG) */
static void *thread_own_truncated(void *arg)
{
	int *res = arg, semid;
	struct sembuf op = { 0, 1, IPC_NOWAIT };

	*res = 1;
	if (unshare(CLONE_NEWIPC) < 0 || (semid = semget(IPC_PRIVATE, 1, 0600)) < 0)
		return NULL;
	/* a fork child of this thread is in the thread's namespace, and its
	 * own process's: the memfd is the one its environment names */
	{
		int st;
		pid_t pid = fork();

		if (pid == 0) {
			int fd = ns_fd();

			_exit(fd >= 0 && ftruncate(fd, 0) == 0 ? 0 : 1);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
			printf("# the thread's child could not truncate its memfd\n");
			return NULL;
		}
	}
	if (!calls_give_eidrm(semid))
		return NULL;
	/* a semop on an id of the broken namespace, again: still EIDRM */
	errno = 0;
	if (semop(semid, &op, 1) != -1 || errno != EIDRM)
		return NULL;
	/* and a new namespace of the thread's works */
	if (unshare(CLONE_NEWIPC) < 0 || semget(IPC_PRIVATE, 1, 0600) < 0) {
		printf("# the thread's unshare after the broken namespace: %s\n", strerror(errno));
		return NULL;
	}
	*res = 0;
	return NULL;
}

static int thread_own(void)
{
	pthread_t t;
	int res = 1, semid = semget(IPC_PRIVATE, 1, 0600), r;
	struct sembuf op = { 0, 1, IPC_NOWAIT };

	if (semid < 0 || pthread_create(&t, NULL, thread_own_truncated, &res) ||
	    pthread_join(t, NULL))
		return 1;
	/* the main thread never left its namespace: it works on */
	r = semop(semid, &op, 1);
	if (r < 0)
		printf("# the main thread's semop: %s\n", strerror(errno));
	return res || r < 0 || semctl(semid, 0, IPC_RMID) < 0;
}

int main(void)
{
	printf("1..9\n");
	check("unshare, memfd truncated by a member: EIDRM, and a new unshare works",
	      after_unshare);
	check("after 20 unshares that each made a new memfd: EIDRM", after_many_unshares);
	check("a namespace made anew in place, truncated: EIDRM", after_remake);
	check("setns back into an anonymous namespace, truncated: EIDRM", after_setns_anon);
	check("a clone(CLONE_NEWIPC) child, its memfd truncated: EIDRM", in_clone_child);
	check("opening /proc/PID/ns/ipc of a member of a truncated memfd: the opener lives",
	      door_of_truncated);
	check("the memfd truncated before a segment's slot: shmat gives EIDRM", slot_truncated);
	check("a thread's own namespace truncated: its calls give EIDRM, the others' work",
	      thread_own);
	/* last: it truncates and removes the named namespace the others start in */
	check("setns into a named namespace's file, truncated: EIDRM", after_setns_named);
	return failed != 0;
}
