/*
 * proc_spawn.c - vfork and posix_spawn (issue 3's process lifecycle, the
 * cases fork and exec do not cover): a vfork child shares its parent's
 * memory and has no SEM_UNDO list of its own, so its _exit applies nothing
 * and detaches nothing; a child that execs after vfork, or that
 * posix_spawn starts, is a new process that starts with no adjustments and
 * no attachments, whose own SEM_UNDO and attachments go at its exit; the
 * parent's adjustments and attachments stay as they were throughout.
 */
#include "dt.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int g_sem, g_shm;
static char g_ids[64];
static char *g_env[512];
static char g_reg[256];

static int sop(int id, unsigned short n, short o, short f)
{
	struct sembuf s = { n, o, f };
	return dt_semop(id, &s, 1);
}

/* the parent's state: an adjustment on sem 0, one attachment */
static void setup(void)
{
	g_sem = dt_semget(IPC_PRIVATE, 2, 0600);
	sop(g_sem, 0, 3, SEM_UNDO);
	g_shm = dt_shmget(IPC_PRIVATE, 4096, 0600);
	dt_shmat(g_shm, NULL, 0);
	snprintf(g_ids, sizeof g_ids, "%d", g_sem);
	/* the environment of a spawned image: ours, plus the pid names */
	int n = 0;
	for (char **e = environ; *e && n < 500; e++)
		if (strncmp(*e, "DT_REGISTRY=", 12) != 0)
			g_env[n++] = *e;
	snprintf(g_reg, sizeof g_reg, "DT_REGISTRY=spawned,main=%d", (int)getpid());
	g_env[n++] = g_reg;
	g_env[n] = NULL;
}

static void state(const char *when)
{
	dt_out("-- %s", when);
	dt_dump(g_sem, 2);
	dt_shmstat(g_shm, IPC_STAT);
}

static void reap(pid_t p)
{
	int st;

	if (p < 0) {
		dt_fail("no child: %s", dt_errname(errno));
		return;
	}
	dt_register(p, "spawned");
	if (waitpid(p, &st, 0) != p)
		dt_fail("waitpid: %s", dt_errname(errno));
	else if (WIFEXITED(st))
		dt_out("spawned exit %d", WEXITSTATUS(st));
	else
		dt_out("spawned signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : -1);
}

static void teardown(void)
{
	dt_shmctl(g_shm, IPC_RMID);
	union semun u = { .val = 0 };
	dt_out("semctl RMID %s", dt_res(semctl(g_sem, 0, IPC_RMID, u), errno));
}

/* the spawned image: its own adjustment and attachment, then exit */
static void spawned(int argc, char **argv)
{
	if (argc < 3)
		return;
	int sem = atoi(argv[1]), shm = atoi(argv[2]);
	union semun u = { .val = 0 };
	dt_out("spawned image runs: sem0 %d sem1 %d", semctl(sem, 0, GETVAL, u),
	       semctl(sem, 1, GETVAL, u));
	sop(sem, 1, 2, SEM_UNDO);
	dt_shmat(shm, NULL, 0);
	dt_shmstat(shm, IPC_STAT);
	exit(0);
}

static void vfork_exit(int argc, char **argv)
{
	(void)argc, (void)argv;
	setup();
	state("before vfork");
	pid_t p = vfork();
	if (p == 0)
		_exit(7);
	reap(p);
	state("after the vfork child's _exit");
	teardown();
}

static void vfork_exec(int argc, char **argv)
{
	(void)argc, (void)argv;
	setup();
	char shm[32];
	snprintf(shm, sizeof shm, "%d", g_shm);
	char *args[] = { "proc_spawn", "spawned", g_ids, shm, NULL };
	pid_t p = vfork();
	if (p == 0) {
		execve("/proc/self/exe", args, g_env);
		_exit(127);
	}
	reap(p);
	state("after the vfork+exec child exited");
	/* twice: a second child gets the same treatment */
	p = vfork();
	if (p == 0) {
		execve("/proc/self/exe", args, g_env);
		_exit(127);
	}
	reap(p);
	state("after the second one");
	teardown();
}

static void spawn(int argc, char **argv)
{
	(void)argc, (void)argv;
	setup();
	char shm[32];
	snprintf(shm, sizeof shm, "%d", g_shm);
	char *args[] = { "proc_spawn", "spawned", g_ids, shm, NULL };
	pid_t p = -1;
	int r = posix_spawn(&p, "/proc/self/exe", NULL, NULL, args, g_env);
	/* (printed once the child is done: its lines come first) */
	if (r == 0)
		reap(p);
	dt_out("posix_spawn %s", r ? dt_errname(r) : "0");
	state("after the spawned child exited");
	teardown();
}

static void spawn_quiet(int argc, char **argv)
{
	(void)argc, (void)argv;
	setup();
	/* a program that never calls System V IPC; posix_spawnp finds it */
	char *args[] = { "true", NULL };
	pid_t p = -1;
	int r = posix_spawnp(&p, "true", NULL, NULL, args, g_env);
	if (r == 0)
		reap(p);
	dt_out("posix_spawnp %s", r ? dt_errname(r) : "0");
	state("after true exited");
	teardown();
}

const struct dt_case dt_cases[] = {
	{ "vfork-exit", vfork_exit, 0 },
	{ "vfork-exec", vfork_exec, 0 },
	{ "spawn", spawn, 0 },
	{ "spawn-quiet", spawn_quiet, 0 },
	{ "spawned", spawned, 1 },
	{ NULL, NULL, 0 },
};
