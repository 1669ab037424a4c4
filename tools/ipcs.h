/*
 * tools/ipcs.h - what the parts of `uipc ipcs` share: output formats and
 * units, and the printing helpers that reproduce util-linux ipcs's layout.
 * ipcs.c holds the options and helpers; ipcs-sem.c, ipcs-msg.c and
 * ipcs-shm.c one resource each.
 */
#ifndef UIPC_TOOLS_IPCS_H
#define UIPC_TOOLS_IPCS_H

#include <stdint.h>
#include <sys/ipc.h>
#include <time.h>

enum ipcs_format { FMT_DEFAULT, FMT_LIMITS, FMT_STATUS, FMT_CREATOR, FMT_TIME, FMT_PID };
enum ipcs_unit { UNIT_DEFAULT, UNIT_BYTES, UNIT_KB, UNIT_HUMAN };

/* List one resource in the given format (ipcs without -i). */
void ipcs_sem_list(enum ipcs_format fmt);
void ipcs_msg_list(enum ipcs_format fmt, enum ipcs_unit unit);
void ipcs_shm_list(enum ipcs_format fmt, enum ipcs_unit unit);
/* Details of one object (ipcs -i ID); return the exit status. */
int ipcs_sem_show(int id);
int ipcs_msg_show(int id, enum ipcs_unit unit);
int ipcs_shm_show(int id, enum ipcs_unit unit);

/* "%-Wd %-10.10s": id and owner name (or uid), W = idwidth. */
void ipcs_print_id_owner(int idwidth, int id, uid_t uid);
/* The -c line: id, perms, cuid, cgid, uid, gid. */
void ipcs_print_creator(int id, const struct ipc_perm *p);
/* ctime() text (24 characters, no newline) or "Not set" for 0. */
const char *ipcs_time(time_t t, char *buf);
/* The same without the weekday ("Nov 22 03:56:48 2026"), as the -t lists of
 * queues and segments print it (cut to 16 characters there). */
const char *ipcs_time_short(time_t t, char *buf);
/* util-linux's ipc_print_size(): optional label, value in the unit, end. */
void ipcs_print_size(enum ipcs_unit unit, const char *label, uint64_t size,
		     const char *end, int width);
/* Report that a resource could not be read (ENOSYS gets a clear note). */
void ipcs_report(const char *what, int err);

#endif
