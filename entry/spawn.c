/*
 * spawn.c - system() and popen(): glibc starts their children with its own
 * posix_spawn, inside libc, where entry/exec.c does not see it.  The child
 * inherits the anonymous namespace's fd and environment as any child does;
 * uipc only has to know that someone else may now hold the namespace, so
 * that the caller's next unshare does not make its new namespace of this
 * one in place (core/nsfile.c, ns_recycle_begin).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "entry/entry.h"

typedef int (*system_fn)(const char *);
typedef FILE *(*popen_fn)(const char *, const char *);

static system_fn real_system;
static popen_fn real_popen;

__attribute__((constructor)) static void spawn_init(void)
{
	real_system = (system_fn)dlsym(RTLD_NEXT, "system");
	real_popen = (popen_fn)dlsym(RTLD_NEXT, "popen");
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
