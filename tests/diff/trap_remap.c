/*
 * trap_remap.c - shm_remap.c's cases with remap_file_pages made by system
 * call instruction (tests/diff-trap.t): trap mode sends it to libuipc's
 * SIGSYS handler, which acts on the attachment as the kernel does (the
 * anonymous namespaces' segments share one memfd, whose pages the kernel's
 * own remap_file_pages would take at the wrong offset).
 */
#include "dt.h"
#include "rawinsn.h"

#include <dlfcn.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define remap_file_pages(a, s, p, o, f) \
	((int)raw_syscall(SYS_remap_file_pages, (a), (s), (p), (o), (f)))
#define syscall raw_syscall
#define dt_cases shm_remap_cases
#include "shm_remap.c"
#undef dt_cases
#undef syscall

#define TRAPPED(fn) static void fn##_t(int c, char **v) { need_trap(); fn(c, v); }
TRAPPED(basic)
TRAPPED(errors)
TRAPPED(beyond)
TRAPPED(rmid)
TRAPPED(flags)

const struct dt_case dt_cases[] = {
	{ "basic", basic_t, 0 },
	{ "errors", errors_t, 0 },
	{ "beyond", beyond_t, 0 },
	{ "rmid", rmid_t, 0 },
	{ "flags", flags_t, 0 },
	{ NULL, NULL, 0 },
};
