/*
 * api.c - include/uipc.h's namespace, sysctl and fsck calls, for programs
 * that link libuipc directly and for the uipc command.  (The System V
 * calls' uipc_* names are aliases in sysv.c.)  Each returns libc's -1 and
 * errno for the layers' -errno.
 */
#include "entry/entry.h"

int uipc_ns_create(const char *name, const struct uipc_ns_opts *opts)
{
	return (int)set_errno_ret(ns_create(name, opts));
}

int uipc_ns_remove(const char *name)
{
	return (int)set_errno_ret(ns_remove(name));
}

int uipc_ns_select(const char *name)
{
	return (int)set_errno_ret(ns_select(name));
}

int uipc_ns_path(const char *name, char *buf, size_t len)
{
	return (int)set_errno_ret(ns_path(name, buf, len));
}

int uipc_sysctl_get(const char *name, char *buf, size_t len)
{
	return (int)set_errno_ret(ipc_sysctl_get(name, buf, len));
}

int uipc_sysctl_set(const char *name, const char *value)
{
	return (int)set_errno_ret(ipc_sysctl_set(name, value));
}

int uipc_ns_stats(struct uipc_ns_stats *st)
{
	return (int)set_errno_ret(ipc_ns_stats(st));
}

int uipc_ns_info(int fd, struct uipc_ns_info *info)
{
	return (int)set_errno_ret(ipc_ns_info(fd, info));
}

/* the number of problems found (0: clean), or -1 and errno */
int uipc_ns_check(char *report, size_t len)
{
	return (int)set_errno_ret(ipc_ns_check(report, len));
}
