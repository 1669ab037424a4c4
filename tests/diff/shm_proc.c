/*
 * shm_proc.c - attach accounting across processes: fork duplicates the
 * parent's attachments (nattch grows, lpid/atime as the kernel sets them),
 * exit, _exit, exec and SIGKILL detach, a segment marked SHM_DEST goes
 * with its last attachment wherever it is, memory shared between
 * processes, and shm_rmid_forced (the creator's exit destroys its
 * unattached segments; any last detach destroys).
 */
#include "dt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_id;
static char *g_p;

static void child_exit(void *arg)
{
	(void)arg;
	dt_shmstat(g_id, IPC_STAT);
	g_p[100] = 'c';
	exit(0);
}

static void child__exit(void *arg)
{
	(void)arg;
	dt_shmstat(g_id, IPC_STAT);
	_exit(0);
}

static void child_detach(void *arg)
{
	(void)arg;
	dt_shmdt(g_p, "p");
	dt_shmstat(g_id, IPC_STAT);
	char *q = dt_shmat(g_id, NULL, 0);
	dt_out("q[100]=%c", q[100]);
	dt_shmstat(g_id, IPC_STAT);
}

static void child_wait_kill(void *arg)
{
	(void)arg;
	dt_chan_send(0, 0, 0);
	for (;;)
		pause();
}

static void fork_exit(int argc, char **argv)
{
	(void)argc, (void)argv;
	g_id = dt_shmget(IPC_PRIVATE, 4096, 0600);
	g_p = dt_shmat(g_id, NULL, 0);
	char *p2 = dt_shmat(g_id, NULL, SHM_RDONLY);
	dt_msleep(1100);
	dt_wait(dt_fork(child_exit, NULL));
	dt_out("p[100]=%c", g_p[100]);
	dt_shmstat(g_id, IPC_STAT);
	dt_wait(dt_fork(child__exit, NULL));
	dt_shmstat(g_id, IPC_STAT);
	dt_wait(dt_fork(child_detach, NULL));
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(p2, "p2");
	dt_shmstat(g_id, IPC_STAT);
	dt_shmctl(g_id, IPC_RMID);
	dt_shmdt(g_p, "p");
	dt_shmstat(g_id, IPC_STAT);
}

static void kill9(int argc, char **argv)
{
	(void)argc, (void)argv;
	g_id = dt_shmget(IPC_PRIVATE, 4096, 0600);
	g_p = dt_shmat(g_id, NULL, 0);
	struct dt_msg m;
	pid_t c = dt_fork(child_wait_kill, NULL);
	dt_chan_recv(&m);
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(g_p, "p");
	dt_shmctl(g_id, IPC_RMID);
	usleep(100000);
	dt_shmstat(g_id, IPC_STAT);
	kill(c, SIGKILL);
	dt_wait(c);
	dt_shmstat(g_id, IPC_STAT);
	dt_shminfo(SHM_INFO);
}

static void exec_child(int argc, char **argv)
{
	if (argc < 2)
		return;
	int id = atoi(argv[1]);
	dt_out("after exec");
	dt_shmstat(id, IPC_STAT);
	dt_shmdt((void *)strtoul(argv[2], NULL, 16), "old address");
}

static void execer(void *arg)
{
	(void)arg;
	char ids[32], addr[32];
	snprintf(ids, sizeof ids, "%d", g_id);
	snprintf(addr, sizeof addr, "%lx", (unsigned long)g_p);
	char *args[] = { "shm_proc", "exec-child", ids, addr, NULL };
	dt_exec_self(args);
}

static void exec_detach(int argc, char **argv)
{
	(void)argc, (void)argv;
	g_id = dt_shmget(IPC_PRIVATE, 4096, 0600);
	g_p = dt_shmat(g_id, NULL, 0);
	dt_shmat(g_id, NULL, 0);
	dt_wait(dt_fork(execer, NULL));
	dt_shmstat(g_id, IPC_STAT);
	dt_shmctl(g_id, IPC_RMID);
}

static void quiet_execer(void *arg)
{
	(void)arg;
	/* a program that never calls System V IPC */
	execl("/bin/sleep", "sleep", "1", (char *)NULL);
	_exit(127);
}

static void exec_quiet(int argc, char **argv)
{
	(void)argc, (void)argv;
	g_id = dt_shmget(IPC_PRIVATE, 4096, 0600);
	g_p = dt_shmat(g_id, NULL, 0);
	pid_t c = dt_fork(quiet_execer, NULL);
	dt_msleep(400);
	dt_shmstat(g_id, IPC_STAT);
	dt_wait(c);
	dt_shmstat(g_id, IPC_STAT);
	dt_shmctl(g_id, IPC_RMID);
}

static void grandchild(void *arg)
{
	(void)arg;
	dt_shmstat(g_id, IPC_STAT);
}

static void child_forks(void *arg)
{
	(void)arg;
	char *q = dt_shmat(g_id, NULL, 0);
	dt_shmstat(g_id, IPC_STAT);
	dt_wait(dt_fork(grandchild, NULL));
	dt_shmstat(g_id, IPC_STAT);
	(void)q;
}

static void nested(int argc, char **argv)
{
	(void)argc, (void)argv;
	g_id = dt_shmget(IPC_PRIVATE, 4096, 0600);
	g_p = dt_shmat(g_id, NULL, 0);
	dt_shmctl(g_id, IPC_RMID);
	dt_wait(dt_fork(child_forks, NULL));
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(g_p, "p");
	dt_shmstat(g_id, IPC_STAT);
}

static void creator(void *arg)
{
	(void)arg;
	int a = dt_shmget(0x300, 4096, IPC_CREAT | 0600);
	int b = dt_shmget(0x301, 4096, IPC_CREAT | 0600);
	char *p = dt_shmat(b, NULL, 0);
	(void)a, (void)p;
	dt_chan_send(0, 0, 0);
	for (;;)
		pause();
}

static void attacher(void *arg)
{
	(void)arg;
	int b = shmget(0x301, 0, 0);
	char *p = shmat(b, NULL, 0);
	(void)p;
	dt_chan_send(0, 0, 0);
	for (;;)
		pause();
}

static void rmid_forced(int argc, char **argv)
{
	(void)argc, (void)argv;
	dt_sysctl_set("kernel.shm_rmid_forced", "1");
	pid_t c = dt_fork(creator, NULL);
	struct dt_msg m;
	dt_chan_recv(&m);
	pid_t d = dt_fork(attacher, NULL);
	dt_chan_recv(&m);
	dt_shmget(0x300, 0, 0);
	int b = dt_shmget(0x301, 0, 0);
	dt_shmstat(b, IPC_STAT);
	/* let the creator go */
	kill(c, SIGKILL);
	dt_wait(c);
	dt_shmget(0x300, 0, 0);
	dt_shmstat(b, IPC_STAT);
	kill(d, SIGKILL);
	dt_wait(d);
	dt_shmget(0x301, 0, 0);
	dt_shminfo(SHM_INFO);
	/* any last detach destroys */
	int e = dt_shmget(0x302, 4096, IPC_CREAT | 0600);
	char *p = dt_shmat(e, NULL, 0);
	dt_shmdt(p, "p");
	dt_shmget(0x302, 0, 0);
	int f = dt_shmget(0x303, 4096, IPC_CREAT | 0600);
	dt_sysctl_set("kernel.shm_rmid_forced", "0");
	p = dt_shmat(f, NULL, 0);
	dt_shmdt(p, "p");
	dt_shmget(0x303, 0, 0);
	dt_shmctl(f, IPC_RMID);
	/* a failed attach counts and uncounts: the last "detach" destroys */
	dt_sysctl_set("kernel.shm_rmid_forced", "1");
	int g = dt_shmget(0x304, 4096, IPC_CREAT | 0600);
	dt_shmstat(g, IPC_STAT);
	dt_shmat(g, (void *)((unsigned long)&g_id & ~4095UL), 0);
	dt_shmget(0x304, 0, 0);
	dt_sysctl_set("kernel.shm_rmid_forced", "0");
}

/* the parent's word to the fork-race child that it may detach */
static int g_gate[2] = { -1, -1 };

static void child_race(void *arg)
{
	struct shmid_ds ds;
	long long end = dt_now_ms() + 5000;
	char go;

	(void)arg;
	close(g_gate[1]);       /* the parent's death ends the read below */
	/* quietly until the parent has detached and removed */
	while (dt_now_ms() < end) {
		if (shmctl(g_id, IPC_STAT, &ds) < 0 || (ds.shm_perm.mode & 01000))
			break;
		dt_msleep(5);
	}
	if (shmctl(g_id, IPC_STAT, &ds) < 0)
		dt_chan_send(-1, errno, 0);
	else
		dt_chan_send((int)ds.shm_nattch, 0, (int)ds.shm_perm.mode);
	/* not before the parent's IPC_STAT: a detach here destroys it */
	if (read(g_gate[0], &go, 1) != 1)
		dt_chan_send(-1, EPIPE, 1);
	if (shmdt(g_p) < 0)
		dt_chan_send(-1, errno, 1);
	else
		dt_chan_send(0, 0, 1);
}

/*
 * The parent detaches and removes right after fork: the child's inherited
 * attachment was counted inside fork (the kernel's dup_mmap), so the
 * segment lives on, SHM_DEST, until the child detaches.  Under uipc the
 * child's count is made by its atfork handler, which
 * UIPC_TEST_FORK_DELAY_MS delays (the kernel run ignores it).
 */
static void fork_race(int argc, char **argv)
{
	struct dt_msg m;

	(void)argc, (void)argv;
	g_id = dt_shmget(IPC_PRIVATE, 4096, 0600);
	g_p = dt_shmat(g_id, NULL, 0);
	if (pipe(g_gate) < 0)
		dt_out("pipe: %s", strerror(errno));
	setenv("UIPC_TEST_FORK_DELAY_MS", "300", 1);
	pid_t c = dt_fork(child_race, NULL);
	unsetenv("UIPC_TEST_FORK_DELAY_MS");
	dt_shmdt(g_p, "p");
	dt_shmctl(g_id, IPC_RMID);
	usleep(100000);
	dt_shmstat(g_id, IPC_STAT);
	if (write(g_gate[1], "g", 1) != 1)
		dt_out("gate: %s", strerror(errno));
	if (dt_chan_recv(&m) == 0)
		dt_out("child saw: %s nattch=%d mode=%o", dt_res(m.ret < 0 ? -1 : 0, m.err),
		       m.ret, (unsigned)m.extra);
	if (dt_chan_recv(&m) == 0)
		dt_out("child shmdt = %s", dt_res(m.ret, m.err));
	dt_wait(c);
	close(g_gate[0]);
	close(g_gate[1]);
	dt_shmstat(g_id, IPC_STAT);
}

static void child_pause(void *arg)
{
	(void)arg;
	for (;;)
		pause();
}

/*
 * A fork child killed before it runs: its inherited attachments were
 * counted inside fork (nattch, atime, lpid = the parent, seen by the parent
 * at once) and go at its death (lpid = the child, dtime).  Under uipc the
 * parent counts them before fork in a loan the child takes over when it
 * first runs, which UIPC_TEST_FORK_DELAY_MS delays past the SIGKILL: the
 * loan's counts are given back by whoever looks next.
 */
static void fork_kill_early(int argc, char **argv)
{
	(void)argc, (void)argv;
	g_id = dt_shmget(IPC_PRIVATE, 4096, 0600);
	g_p = dt_shmat(g_id, NULL, 0);
	char *p2 = dt_shmat(g_id, NULL, SHM_RDONLY);
	setenv("UIPC_TEST_FORK_DELAY_MS", "300", 1);
	pid_t c = dt_fork(child_pause, NULL);
	unsetenv("UIPC_TEST_FORK_DELAY_MS");
	dt_shmstat(g_id, IPC_STAT);
	kill(c, SIGKILL);
	dt_wait(c);
	dt_shmstat(g_id, IPC_STAT);
	dt_shminfo(SHM_INFO);
	dt_shmdt(p2, "p2");
	dt_shmctl(g_id, IPC_RMID);
	dt_shmdt(g_p, "p");
	dt_shmstat(g_id, IPC_STAT);
}

/*
 * A segment marked for removal, attached by the parent only, lives on
 * through a fork child killed before it runs while the parent detaches:
 * it goes with the child's death, not before.
 */
static void fork_rmid_early(int argc, char **argv)
{
	(void)argc, (void)argv;
	g_id = dt_shmget(IPC_PRIVATE, 8192, 0600);
	g_p = dt_shmat(g_id, NULL, 0);
	g_p[1] = 'r';
	dt_shmctl(g_id, IPC_RMID);
	setenv("UIPC_TEST_FORK_DELAY_MS", "300", 1);
	pid_t c = dt_fork(child_pause, NULL);
	unsetenv("UIPC_TEST_FORK_DELAY_MS");
	dt_shmdt(g_p, "p");
	dt_shmstat(g_id, IPC_STAT);
	dt_shminfo(SHM_INFO);
	kill(c, SIGKILL);
	dt_wait(c);
	dt_shmstat(g_id, IPC_STAT);
	dt_shminfo(SHM_INFO);
}

static void *fork_from_thread(void *arg)
{
	(void)arg;
	dt_wait(dt_fork(child_exit, NULL));
	return NULL;
}

/* fork from a thread other than the main one: the same accounting */
static void fork_thread(int argc, char **argv)
{
	pthread_t t;

	(void)argc, (void)argv;
	g_id = dt_shmget(IPC_PRIVATE, 4096, 0600);
	g_p = dt_shmat(g_id, NULL, 0);
	dt_msleep(1100);
	if (pthread_create(&t, NULL, fork_from_thread, NULL) == 0)
		pthread_join(t, NULL);
	dt_out("p[100]=%c", g_p[100]);
	dt_shmstat(g_id, IPC_STAT);
	dt_shmctl(g_id, IPC_RMID);
	dt_shmdt(g_p, "p");
	dt_shmstat(g_id, IPC_STAT);
}

static int g_id2;

static void attach_both(void *arg)
{
	(void)arg;
	dt_shmat(g_id, NULL, 0);
	dt_shmat(g_id2, NULL, 0);
	dt_chan_send(0, 0, 0);
	for (;;)
		pause();
}

/*
 * A fork whose accounting meets a SIGKILLed attacher of the inherited
 * segment, whose death also destroys another segment (marked for removal,
 * its last attachment): the fork goes on, the other segment is gone.
 * (Under uipc the parent counts the child's attachments before fork, and
 * the dead attacher's exit work is done then.)
 */
static void fork_reaps(int argc, char **argv)
{
	struct dt_msg m;

	(void)argc, (void)argv;
	g_id = dt_shmget(IPC_PRIVATE, 4096, 0600);
	g_id2 = dt_shmget(IPC_PRIVATE, 4096, 0600);
	g_p = dt_shmat(g_id, NULL, 0);
	pid_t x = dt_fork(attach_both, NULL);
	dt_chan_recv(&m);
	dt_shmctl(g_id2, IPC_RMID);
	kill(x, SIGKILL);
	dt_wait(x);
	dt_wait(dt_fork(child_exit, NULL));
	dt_shmstat(g_id, IPC_STAT);
	dt_shmstat(g_id2, IPC_STAT);
	dt_shmctl(g_id, IPC_RMID);
	dt_shmdt(g_p, "p");
}

/* the fds this image has open above 2 (the listing's own excepted) */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.' && atoi(e->d_name) > 2 && atoi(e->d_name) != dirfd(d))
			n++;
	if (d)
		closedir(d);
	return n;
}

static void fds_exec_child(int argc, char **argv)
{
	(void)argc, (void)argv;
	dt_out("after exec: %d fds above 2", count_fds());
}

static void fds_execer(void *arg)
{
	(void)arg;
	char *args[] = { "shm_proc", "fds-exec-child", NULL };
	dt_exec_self(args);
}

/*
 * The application's fds are its own: closing every fd, dup2 onto any
 * number, opening many files, exec, do not disturb attachments (uipc keeps
 * fds of segment files, which the application must not see or lose).
 */
static void fds(int argc, char **argv)
{
	(void)argc, (void)argv;
	int id = dt_shmget(IPC_PRIVATE, 8192, 0600);
	char *p = dt_shmat(id, NULL, 0), *q;
	int bad = 0, n, fd[1200];

	p[5] = 'x';
	dt_shmdt(p, "p");
	/* a daemon closing everything */
	for (int i = 3; i < 1024; i++)
		close(i);
	closefrom(3);
	n = open("/dev/null", O_RDONLY);
	dt_out("first open after closing all = %d", n);
	close(n);
	/* every number up to 1100 used by the application */
	for (n = 0; n < 1100; n++) {
		fd[n] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd[n] < 0)
			break;
	}
	dt_out("opened %d", n);
	for (int i = 0; i < n; i++)
		close(fd[i]);
	for (int i = 3; i < 1100; i++)
		if (dup2(0, i) != i)
			bad++;
	dt_out("dup2 onto 3..1099: %d failed", bad);
	close_range(3, ~0U, 0);
	q = dt_shmat(id, NULL, 0);
	dt_out("q[5]=%c", q == (void *)-1 ? '?' : q[5]);
	dt_wait(dt_fork(fds_execer, NULL));
	dt_shmdt(q, "q");
	dt_shmctl(id, IPC_RMID);
}

const struct dt_case dt_cases[] = {
	{ "fork-exit", fork_exit, 0 },
	{ "kill9", kill9, 0 },
	{ "exec", exec_detach, 0 },
	{ "exec-child", exec_child, 1 },
	{ "exec-quiet", exec_quiet, 0 },
	{ "nested", nested, 0 },
	{ "rmid-forced", rmid_forced, 0 },
	{ "fork-race", fork_race, 0 },
	{ "fork-kill-early", fork_kill_early, 0 },
	{ "fork-rmid-early", fork_rmid_early, 0 },
	{ "fork-thread", fork_thread, 0 },
	{ "fork-reaps", fork_reaps, 0 },
	{ "fds", fds, 0 },
	{ "fds-exec-child", fds_exec_child, 1 },
	{ NULL, NULL, 0 },
};
