/*
 * namespace.c - the IPC namespace (the kernel's ipc/namespace.c and
 * ipc_sysctl.c): what a namespace holds besides its objects.  The tables
 * and limits of a new namespace file (core/nsfile.c builds the file and
 * calls ns_init through the hooks below), the exit and fork work that core
 * drives for every process (SEM_UNDO, shm attachments), the per-namespace
 * sysctls (kernel.sem, kernel.msgmni, kernel.sem_next_id, ...), statistics,
 * and fsck over every object.
 */
#include <limits.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/ipc.h"

/* ---- a new namespace: the kernel's defaults, empty tables ---- */

static void default_limits(struct uipc_limits *l)
{
	l->semmsl = SEMMSL_DEF;
	l->semmns = SEMMNS_DEF;
	l->semopm = SEMOPM_DEF;
	l->semmni = SEMMNI_DEF;
	l->msgmax = MSGMAX_DEF;
	l->msgmnb = MSGMNB_DEF;
	l->msgmni = MSGMNI_DEF;
	l->shmmax = SHMMAX_DEF;
	l->shmall = SHMALL_DEF;
	l->shmmni = SHMMNI_DEF;
	l->shm_rmid_forced = 0;
}

static int ipc_ns_init(struct ns *ns)
{
	default_limits(&ns->hdr->lim);
	for (int t = 0; t < IPC_NR_IDS; t++) {
		int r = ipc_ids_init(ns, t, ns->lay.entries[t], ns->lay.used[t],
				     ns->lay.populated[t]);

		if (r)
			return r;
	}
	return 0;
}

/* ---- what core drives: a process's exit, fork and exec ---- */

/* the kernel's exit_sem() and exit_shm(), in that order */
static void ipc_proc_exit(struct ns *ns, struct uproc *p)
{
	sem_exit_proc(ns, p);
	shm_exit_proc(ns, p);
}

CORE_HOOKS(ipc_hooks) = {
	.ns_init = ipc_ns_init,
	.proc_exit = ipc_proc_exit,
	.fork_child = shm_fork_child,     /* the child inherits the attachments */
	.exec_note = shm_note_exec,       /* the old image's attachments are gone */
	.ns_leave = shm_ns_leave,         /* unshare: its segments' fds go */
};

/* ---- statistics and fsck (include/uipc.h, via entry/api.c) ---- */

int ipc_ns_stats(struct uipc_ns_stats *st)
{
	struct ns *ns = ns_get();

	if (!ns)
		return -errno;
	st->arena_size = ns->size;
	st->arena_used = ns->hdr->alloc.brk;
	st->sem_array_bytes = (unsigned long long)sem_array_bytes(0);
	st->sem_bytes = (unsigned long long)(sem_array_bytes(1) - sem_array_bytes(0));
	st->extended = (ns->hdr->flags & NS_FLAG_EXTENDED) != 0;
	return 0;
}

/*
 * What `uipc fsck` reports: the allocator and the three id tables, checked
 * under their locks (taking them also recovers any a dead holder left).
 */
int ipc_ns_check(char *report, size_t len)
{
	struct ns *ns = ns_get();
	size_t used;
	int bad, t, r;

	if (!ns)
		return -errno;
	r = ulock_acquire(ns, &ns->hdr->alloc.lock);
	if (r)
		return r;
	bad = arena_check(ns, report, len);
	ulock_release(ns, &ns->hdr->alloc.lock);
	used = report ? strlen(report) : 0;
	for (t = 0; t < IPC_NR_IDS; t++) {
		static int (*const check_obj[IPC_NR_IDS])(struct ns *, struct uperm *, char *, size_t,
							  size_t *) = {
			sem_check_obj, msg_check_obj, shm_check_obj,
		};
		int max;

		if (ids_lock(ns, t))
			return bad + 1;
		bad += ipc_ids_check(ns, t, report, len, &used);
		/* every object's own invariants, under its lock (objects are
		 * not removed while the ids lock is held) */
		max = ipc_get_maxidx(ns, t);
		for (int i = 0; i <= max; i++) {
			struct uperm *p = ipc_obtain(ns, t, i);

			if (p && ns_ptr(ns, ns_off(ns, p), sizeof(*p) + sizeof(struct ulock)) &&
			    !atomic_load(&p->deleted) && (p->id & (ns->ipcmni - 1)) == i)
				bad += check_obj[t](ns, p, report, len, &used);
		}
		if (t == IPC_SHM_IDS)
			bad += shm_check_tot(ns, report, len, &used);
		ids_unlock(ns, t);
	}
	return bad;
}

/* ---- sysctls ---- */

struct sysctl_ent {
	const char *name;
	int kind;          /* 0: int64 limit field, 1: next_id, 2: kernel.sem */
	size_t off;        /* offset in uipc_limits, or ids index */
	int64_t min, max;
};

#define LIM(f) offsetof(struct uipc_limits, f)

static const struct sysctl_ent sysctls[] = {
	{ "kernel.sem", 2, 0, 0, 0 },
	{ "kernel.msgmax", 0, LIM(msgmax), 0, INT_MAX },
	{ "kernel.msgmnb", 0, LIM(msgmnb), 0, INT_MAX },
	{ "kernel.msgmni", 0, LIM(msgmni), 0, -1 /* ipcmni */ },
	{ "kernel.shmmax", 0, LIM(shmmax), 0, -2 /* unsigned long */ },
	{ "kernel.shmall", 0, LIM(shmall), 0, -2 },
	{ "kernel.shmmni", 0, LIM(shmmni), 0, -1 },
	{ "kernel.shm_rmid_forced", 0, LIM(shm_rmid_forced), 0, 1 },
	{ "kernel.sem_next_id", 1, IPC_SEM_IDS, 0, INT_MAX },
	{ "kernel.msg_next_id", 1, IPC_MSG_IDS, 0, INT_MAX },
	{ "kernel.shm_next_id", 1, IPC_SHM_IDS, 0, INT_MAX },
};

static const struct sysctl_ent *find_sysctl(const char *name)
{
	size_t i;

	if (!strncmp(name, "/proc/sys/", 10)) {
		static __thread char dotted[128];
		size_t j;

		snprintf(dotted, sizeof(dotted), "%s", name + 10);
		for (j = 0; dotted[j]; j++)
			if (dotted[j] == '/')
				dotted[j] = '.';
		name = dotted;
	}
	for (i = 0; i < sizeof(sysctls) / sizeof(sysctls[0]); i++)
		if (!strcmp(sysctls[i].name, name))
			return &sysctls[i];
	return NULL;
}

static bool limit_is_int32(size_t off)
{
	return off == LIM(shm_rmid_forced);
}

static bool limit_is_u64(size_t off)
{
	return off == LIM(shmmax) || off == LIM(shmall) || off == LIM(shmmni);
}

int ipc_sysctl_get(const char *name, char *buf, size_t len)
{
	const struct sysctl_ent *e = name ? find_sysctl(name) : NULL;
	struct ns *ns;
	struct uipc_limits *l;
	int n;

	if (!e)
		return -ENOENT;
	ns = ns_get();
	if (!ns)
		return -errno;
	l = &ns->hdr->lim;
	if (e->kind == 2)
		n = snprintf(buf, len, "%d\t%d\t%d\t%d", l->semmsl, l->semmns, l->semopm,
			     l->semmni);
	else if (e->kind == 1)
		n = snprintf(buf, len, "%d", ns->hdr->ids[e->off].next_id);
	else if (limit_is_int32(e->off))
		n = snprintf(buf, len, "%d", *(int32_t *)((char *)l + e->off));
	else if (limit_is_u64(e->off))
		n = snprintf(buf, len, "%llu",
			     (unsigned long long)*(uint64_t *)((char *)l + e->off));
	else
		n = snprintf(buf, len, "%lld", (long long)*(int64_t *)((char *)l + e->off));
	return n < 0 || (size_t)n >= len ? -ERANGE : 0;
}

static int set_sem_limits(struct ns *ns, const char *value)
{
	struct uipc_limits *l = &ns->hdr->lim;
	long long v[4] = { l->semmsl, l->semmns, l->semopm, l->semmni };
	int r, n;

	/* like proc_dointvec: one to four numbers, the rest stay as they are */
	n = sscanf(value, "%lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3]);
	if (n < 1)
		return -EINVAL;
	for (int i = 0; i < 4; i++)
		if (v[i] < INT_MIN || v[i] > INT_MAX)
			return -EINVAL;
	/* as the kernel: the values are written, then a semmni outside
	 * [0, ipc_mni] is put back and the write fails with ERANGE */
	r = ulock_acquire(ns, &ns->hdr->ns_lock);
	if (r)
		return r;
	J_SET(ns, l->semmsl, (int32_t)v[0]);
	J_SET(ns, l->semmns, (int32_t)v[1]);
	J_SET(ns, l->semopm, (int32_t)v[2]);
	if (v[3] >= 0 && v[3] <= ns->ipcmni)
		J_SET(ns, l->semmni, (int32_t)v[3]);
	else
		r = -ERANGE;
	ulock_release(ns, &ns->hdr->ns_lock);
	return r;
}

static int set_next_id(struct ns *ns, int type, long long v)
{
	struct ipc_ids *ids = &ns->hdr->ids[type];
	int r = ids_lock(ns, type);

	if (r)
		return r;
	J_SET(ns, ids->next_id, (int32_t)v);
	ids_unlock(ns, type);
	return 0;
}

static int set_limit(struct ns *ns, const struct sysctl_ent *e, const char *value)
{
	struct uipc_limits *l = &ns->hdr->lim;
	char *end;
	unsigned long long u;
	long long v;
	int r;

	errno = 0;
	if (e->max == -2) {
		u = strtoull(value, &end, 10);
		if (errno || end == value || (*end && *end != '\n'))
			return -EINVAL;
		v = 0;
	} else {
		v = strtoll(value, &end, 10);
		if (errno || end == value || (*end && *end != '\n'))
			return -EINVAL;
		if (v < e->min || v > (e->max == -1 ? ns->ipcmni : e->max))
			return -EINVAL;
		u = (unsigned long long)v;
	}
	if (e->kind == 1)
		return set_next_id(ns, (int)e->off, v);
	r = ulock_acquire(ns, &ns->hdr->ns_lock);
	if (r)
		return r;
	if (limit_is_int32(e->off))
		j_store(ns, (char *)l + e->off, &(int32_t){ (int32_t)v }, 4);
	else
		j_store(ns, (char *)l + e->off, &u, 8);
	ulock_release(ns, &ns->hdr->ns_lock);
	/* as the kernel: turning shm_rmid_forced on destroys the unattached
	 * segments whose creator is gone */
	if (e->off == LIM(shm_rmid_forced) && v == 1)
		shm_destroy_orphaned(ns);
	return 0;
}

/*
 * The limits are the namespace's, for all its members: as only a privileged
 * user may write /proc/sys/kernel/msgmni, only the namespace's owner may
 * change them, or CAP_SYS_ADMIN.  The owner is the file's (fstat at open),
 * which members cannot rewrite, not the header's creator_uid, which they can.
 */
static bool may_set_limits(struct ns *ns)
{
	return cur_cred()->euid == ns->file_uid || has_cap(CAP_SYS_ADMIN);
}

int ipc_sysctl_set(const char *name, const char *value)
{
	const struct sysctl_ent *e = name ? find_sysctl(name) : NULL;
	struct ns *ns;

	if (!e || !value)
		return -ENOENT;
	ns = ns_get();
	if (!ns)
		return -errno;
	if (!may_set_limits(ns))
		return -EPERM;
	if (e->kind == 2)
		return set_sem_limits(ns, value);
	return set_limit(ns, e, value);
}
