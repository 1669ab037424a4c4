/*
 * dlopen.c - keep libraries loaded with RTLD_DEEPBIND on uipc.
 *
 * A library dlopen()ed with RTLD_DEEPBIND looks up its symbols in itself and
 * its own dependencies before the global scope, so its msgget, semop, ...
 * bind to libc's and go to the kernel, past the preloaded uipc.  PHP loads
 * every extension that way (sysvsem.so, sysvshm.so, sysvmsg.so), so without
 * this PHP under `uipc run` silently used kernel IPC.  uipc's dlopen clears
 * RTLD_DEEPBIND and hands the call to the next dlopen (libc's).
 *
 * libc's dlopen takes the address it returns to as "the caller": its RPATH
 * and RUNPATH are searched for a bare file name, and $ORIGIN expands to its
 * directory.  So the hand-off must be a jump, not a call, leaving the
 * caller's return address in place: on x86-64 it is written in assembly;
 * elsewhere it is a C tail call, which the compiler usually makes a jump.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "entry/entry.h"

typedef void *(*dlopen_fn)(const char *, int);

/* libc's dlopen, found once (constructor, or the first call) */
UIPC_HIDDEN dlopen_fn uipc_next_dlopen;
/* what dlopen's mode is ANDed with: ~RTLD_DEEPBIND, or all ones when
 * UIPC_KEEP_DEEPBIND=1 (for a program whose plugins need RTLD_DEEPBIND and
 * make no System V IPC calls of their own) */
UIPC_HIDDEN int uipc_dlopen_mask = ~RTLD_DEEPBIND;

static dlopen_fn next_dlopen(void)
{
	dlopen_fn f = __atomic_load_n(&uipc_next_dlopen, __ATOMIC_ACQUIRE);

	if (!f) {
		f = (dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
		__atomic_store_n(&uipc_next_dlopen, f, __ATOMIC_RELEASE);
	}
	return f;
}

__attribute__((constructor)) static void dlopen_init(void)
{
	const char *keep = getenv("UIPC_KEEP_DEEPBIND");

	if (keep && strcmp(keep, "1") == 0)
		uipc_dlopen_mask = ~0;
	next_dlopen();
}

/* A call before the constructor ran (another library's constructor): the
 * caller seen by libc is then this library, which has no RPATH/RUNPATH. */
UIPC_HIDDEN void *uipc_dlopen_slow(const char *file, int mode)
{
	dlopen_fn f = next_dlopen();

	return f ? f(file, mode & uipc_dlopen_mask) : NULL;
}

#if defined(__x86_64__)
__asm__(
	"	.text\n"
	"	.globl	dlopen\n"
	"	.type	dlopen, @function\n"
	"dlopen:\n"
	"	.cfi_startproc\n"
	"	endbr64\n"
	"	movq	uipc_next_dlopen(%rip), %rax\n"
	"	testq	%rax, %rax\n"
	"	jz	uipc_dlopen_slow\n"
	"	andl	uipc_dlopen_mask(%rip), %esi\n"	/* mode &= ~RTLD_DEEPBIND */
	"	jmp	*%rax\n"
	"	.cfi_endproc\n"
	"	.size	dlopen, .-dlopen\n");
#else
void *dlopen(const char *file, int mode)
{
	return uipc_dlopen_slow(file, mode);
}
#endif
