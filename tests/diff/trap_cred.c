/*
 * trap_cred.c - cred_raw.c's cases with every credential call made by
 * system call instruction (tests/diff-trap.t): in trap mode the filter
 * sends capset, setresuid, ... to libuipc's SIGSYS handler, which makes
 * them and has core/cred.c read the credentials again, so that the
 * permission checks after them use the new ones, as the kernel's do.
 */
#include "dt.h"
#include "rawinsn.h"

#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

#define syscall raw_syscall
#define dt_cases cred_raw_cases
#include "cred_raw.c"
#undef dt_cases
#undef syscall

#define TRAPPED(fn) static void fn##_t(int c, char **v) { need_trap(); fn(c, v); }
TRAPPED(capset_drop)
TRAPPED(setresuid_raw)
TRAPPED(thread_drop)
TRAPPED(thread_uid_raw)
TRAPPED(thread_uid_libc)

const struct dt_case dt_cases[] = {
	{ "capset-drop", capset_drop_t, 0 },
	{ "setresuid-raw", setresuid_raw_t, 0 },
	{ "thread-capset", thread_drop_t, 0 },
	{ "thread-uid-raw", thread_uid_raw_t, 0 },
	{ "thread-uid-libc", thread_uid_libc_t, 0 },
	{ NULL, NULL, 0 },
};
