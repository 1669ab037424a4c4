/*
 * entry/entry.h - how programs reach uipc.
 *
 * Owns: the libc-named System V calls that LD_PRELOAD puts in front of
 * glibc's (sysv.c), include/uipc.h's API (api.c), the libc calls uipc must
 * watch: credentials, fd calls, memory-map calls, sigaction, _exit
 * (watch.c), dlopen (dlopen.c), and the export map (exports.map), which
 * lists every symbol libuipc.so exports.
 * May call: ipc/ (ipc/ipc.h), aio/ when it exists, and core/.
 * The only layer that writes errno: the layers below return -errno, and
 * each entry point turns that into libc's -1 and errno here.
 */
#ifndef UIPC_ENTRY_H
#define UIPC_ENTRY_H

#include <errno.h>

#include "ipc/ipc.h"

/* libc's convention for a result R of the layers below (-errno on error) */
static inline long set_errno_ret(long r)
{
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

#endif /* UIPC_ENTRY_H */
