/*
 * ns_max.c - user.max_ipc_namespaces: the kernel counts a user's IPC
 * namespaces and refuses one more past the limit with ENOSPC (unshare and
 * clone); a namespace that is gone (its last member SIGKILLed) gives its
 * count back; an unshare counts the new namespace before the old one goes.
 *
 * The driver (tests/diff-ns-max.t) sets the limit to 3: on the kernel side
 * by writing /proc/sys/user/max_ipc_namespaces of a fresh user namespace
 * (whose starting IPC namespace is not counted in it), on uipc's by
 * UIPC_MAX_IPC_NAMESPACES (the host's setting is never changed).
 */
#include "dt.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define HOLDERS 5

static int hold_pipe[2];

/* a child that unshares and stays in its namespace until killed */
static void holder(void *arg)
{
	char c;

	(void)arg;
	errno = 0;
	int r = unshare(CLONE_NEWIPC);
	c = r ? (char)errno : 0;
	write(hold_pipe[1], &c, 1);
	for (;;)
		pause();
}

static pid_t hold(int i)
{
	char c;
	pid_t p = dt_fork(holder, NULL);

	read(hold_pipe[0], &c, 1);
	dt_out("holder %d: unshare = %s", i, c ? dt_res(-1, c) : "0");
	return p;
}

static void holders(int argc, char **argv)
{
	pid_t kids[HOLDERS];

	(void)argc; (void)argv;
	pipe(hold_pipe);
	for (int i = 0; i < HOLDERS; i++)
		kids[i] = hold(i);
	/* one namespace gone: its count comes back */
	kill(kids[0], SIGKILL);
	waitpid(kids[0], NULL, 0);
	dt_msleep(100);
	errno = 0;
	int r = unshare(CLONE_NEWIPC);
	dt_out("main: unshare after one died = %s", dt_res(r, errno));
	/* at the limit: the new one is counted before the old one goes */
	errno = 0;
	r = unshare(CLONE_NEWIPC);
	dt_out("main: unshare again = %s", dt_res(r, errno));
	for (int i = 1; i < HOLDERS; i++)
		kill(kids[i], SIGKILL);
	for (int i = 1; i < HOLDERS; i++)
		waitpid(kids[i], NULL, 0);
	dt_msleep(100);
	/* all gone: room again */
	for (int i = 0; i < 3; i++) {
		errno = 0;
		r = unshare(CLONE_NEWIPC);
		dt_out("main: unshare %d after all died = %s", i, dt_res(r, errno));
	}
}

static char stack[65536];

static int clone_fn(void *arg)
{
	(void)arg;
	_exit(0);
}

static void clone_at_limit(int argc, char **argv)
{
	pid_t kids[3];

	(void)argc; (void)argv;
	pipe(hold_pipe);
	for (int i = 0; i < 3; i++)
		kids[i] = hold(i);
	errno = 0;
	pid_t p = clone(clone_fn, stack + sizeof(stack), CLONE_NEWIPC | SIGCHLD, NULL);
	dt_out("clone(CLONE_NEWIPC) at the limit = %s", p > 0 ? "a child" : dt_res(p, errno));
	if (p > 0)
		waitpid(p, NULL, 0);
	kill(kids[2], SIGKILL);
	waitpid(kids[2], NULL, 0);
	dt_msleep(100);
	errno = 0;
	p = clone(clone_fn, stack + sizeof(stack), CLONE_NEWIPC | SIGCHLD, NULL);
	dt_out("clone(CLONE_NEWIPC) below it = %s", p > 0 ? "a child" : dt_res(p, errno));
	if (p > 0)
		waitpid(p, NULL, 0);
	for (int i = 0; i < 2; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
}

const struct dt_case dt_cases[] = {
	{ "holders", holders, 0 },
	{ "clone-at-limit", clone_at_limit, 0 },
	{ NULL, NULL, 0 },
};
