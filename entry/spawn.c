/*
 * spawn.c - fork(), system() and popen().
 *
 * fork: the prepare handler (ipc/shm.c) counts the attachments the child
 * inherits in a loan per namespace before fork, as the kernel counts them
 * inside fork; fork's return tells the loans the child's pid (what a
 * reaper names the child by if it dies before it runs), or, fork failed,
 * gives them back at once (core/proc.c, proc_loans_result).  A fork not
 * made through this one (glibc's own callers) leaves the loans unnamed:
 * they are given back when their lock goes, all the same.
 *
 * system() and popen(): glibc starts their children with its own
 * posix_spawn, inside libc, where entry/exec.c does not see it.  The child
 * inherits the anonymous namespace's fd and environment as any child does;
 * uipc only has to know that someone else may now hold the namespace, so
 * that the caller's next unshare does not make its new namespace of this
 * one in place (core/nsfile.c, ns_recycle_begin).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "entry/entry.h"

typedef pid_t (*fork_fn)(void);
typedef int (*system_fn)(const char *);
typedef FILE *(*popen_fn)(const char *, const char *);

static fork_fn real_fork;
static system_fn real_system;
static popen_fn real_popen;

__attribute__((constructor)) static void spawn_init(void)
{
	real_fork = (fork_fn)dlsym(RTLD_NEXT, "fork");
	real_system = (system_fn)dlsym(RTLD_NEXT, "system");
	real_popen = (popen_fn)dlsym(RTLD_NEXT, "popen");
}

pid_t fork(void)
{
	pid_t r;

	if (unlikely(!real_fork))  /* a constructor's fork, before ours ran */
		real_fork = (fork_fn)dlsym(RTLD_NEXT, "fork");
	r = real_fork();
	if (r != 0) {
		int saved = errno;

		proc_loans_result(r);
		errno = saved;
	}
	return r;
}

int system(const char *command)
{
	if (command)
		ns_note_shared();
	return real_system(command);
}

FILE *popen(const char *command, const char *type)
{
	ns_note_shared();
	return real_popen(command, type);
}
