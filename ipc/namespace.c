/*
 * namespace.c - the IPC namespace (the kernel's ipc/namespace.c and
 * ipc_sysctl.c): what a namespace holds besides its objects.  The tables
 * and limits of a new namespace file (core/nsfile.c builds the file and
 * calls ns_init through the hooks below), the exit and fork work that core
 * drives for every process (SEM_UNDO, shm attachments), the per-namespace
 * sysctls (kernel.sem, kernel.msgmni, kernel.sem_next_id, ...), statistics,
 * and fsck over every object.
 */
#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc/ipc.h"
#include "ipc/msgring.h"

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
	l->aio_max_nr = AIO_MAX_NR_DEF;
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

/* a fork child: the sizes' table usable again first (validate.c: shm's
 * work may reap a dead process), then the attachments it inherits */
static void ipc_fork_child(void)
{
	ipc_seen_fork_child();
	shm_fork_child();
}

/* the last thread of this process leaves NS (unshare, setns, a thread's
 * end): the kernel's exit_sem and exit_shm at that point, the attachments
 * left counted */
static void ipc_proc_leave(struct ns *ns, struct uproc *p)
{
	sem_exit_proc(ns, p);
	shm_leave_proc(ns, p);
}

/* this process leaves NS: what it keeps that names NS's objects goes */
static void ipc_ns_leave(struct ns *ns)
{
	shm_ns_leave(ns);                 /* its segments' fds */
	ring_forget();                    /* this thread's copies of ring words */
	ipc_seen_forget_all();            /* its ids mean nothing elsewhere */
}

CORE_HOOKS(ipc_hooks) = {
	.ns_init = ipc_ns_init,
	.proc_exit = ipc_proc_exit,
	.fork_child = ipc_fork_child,     /* the child inherits the attachments */
	.exec_note = shm_note_exec,       /* the old image's attachments are gone */
	.ns_leave = ipc_ns_leave,         /* unshare, setns: NS is left */
	.proc_undo = sem_exit_proc,       /* setns into its own namespace */
	.ns_busy = shm_ns_busy,           /* an attachment of NS is mapped */
	.proc_leave = ipc_proc_leave,     /* NS's last thread of ours left it */
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

int ipc_ns_info(int fd, struct uipc_ns_info *info)
{
	struct uipc_hdr h;
	struct stat st;
	int r = ns_read_header(fd, &h, &st);

	if (r)
		return r;
	memset(info, 0, sizeof(*info));
	info->id = (unsigned long long)st.st_ino;
	info->bytes = (unsigned long long)st.st_blocks * 512;
	info->anonymous = (uint64_t)st.st_size == ANON_FILE_SIZE;
	info->creator_pid = info->anonymous ? h.creator_pid : 0;
	info->creator_uid = h.creator_uid;
	info->sems = h.ids[IPC_SEM_IDS].in_use;
	info->msgs = h.ids[IPC_MSG_IDS].in_use;
	info->shms = h.ids[IPC_SHM_IDS].in_use;
	return 0;
}

/* ---- locks held by stopped processes (fsck) ----
 *
 * A kernel lock is never held by a stopped task; a uipc lock is held by
 * whoever took it in the arena, and a member stopped (SIGSTOP, a debugger)
 * inside a section makes every other member's calls that need the lock
 * wait (blocking calls stay interruptible, others give up, see
 * core/lockwait.c).  fsck names such a holder, so that someone can
 * continue or kill it.
 */

/* is thread TID stopped?  *PID: its process */
static bool tid_stopped(pid_t tid, pid_t *pid)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	fd = sys_open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	sys_close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	p = strstr(buf, "\nTgid:");
	*pid = p ? (pid_t)strtol(p + 6, NULL, 10) : tid;
	p = strstr(buf, "\nState:");
	if (!p)
		return false;
	p += 7;
	p += strspn(p, " \t");
	return *p == 'T' || *p == 't';
}

/* one lock: a problem if a stopped thread holds it */
/* the thread the lock word of L names (its thread slot's tid), 0 if none:
 * numbers from the arena, so the slot is looked up within its table and
 * the tid is only shown, after /proc says that thread is stopped */
static pid_t lock_holder_tid(struct ns *ns, struct ulock *l)
{
	int32_t slot = ulock_holder(l);
	struct uthread *t = slot >= 0 ? thread_at(ns, (uint32_t)slot) : NULL;
	int32_t tid = t ? __atomic_load_n(&t->tid, __ATOMIC_RELAXED) : 0;

	return tid > 0 ? tid : 0;
}

static int report_stopped_holder(struct ns *ns, struct ulock *l, const char *what, int id,
				 char *report, size_t len, size_t *used)
{
	pid_t tid = lock_holder_tid(ns, l), pid;
	char name[48];

	if (!tid || !tid_stopped(tid, &pid))
		return 0;
	if (id >= 0)
		snprintf(name, sizeof(name), "%s %d", what, id);
	else
		snprintf(name, sizeof(name), "%s", what);
	if (report && *used < len)
		*used += (size_t)snprintf(report + *used, len - *used,
			"the lock of %s is held by process %d (thread %d), which is stopped: "
			"calls that need it wait until it continues (kill -CONT %d) or dies\n",
			name, (int)pid, (int)tid, (int)pid);
	return 1;
}

/* every lock of the namespace whose holder is stopped: the header's, the
 * id tables', each object's (read without taking any) */
static int report_stopped_holders(struct ns *ns, char *report, size_t len, size_t *used)
{
	static const char *const names[IPC_NR_IDS] = { "semaphore array", "message queue",
						       "shared memory segment" };
	static const char *const ids_names[IPC_NR_IDS] = { "the semaphore ids", "the message queue ids",
							   "the shared memory ids" };
	struct uipc_hdr *h = ns->hdr;
	int bad = 0;

	uint32_t procs = atomic_load(&h->procs_hwm);

	bad += report_stopped_holder(ns, &h->ns_lock, "the namespace's limits", -1, report, len, used);
	bad += report_stopped_holder(ns, &h->alloc.lock, "the allocator", -1, report, len, used);
	for (uint32_t i = 0; i < procs && i < MAX_PROCS; i++) {
		struct uproc *p = proc_at(ns, i);

		if (p)
			bad += report_stopped_holder(ns, &p->lock, "the SEM_UNDO list of process slot",
						     (int)i, report, len, used);
	}
	for (int t = 0; t < IPC_NR_IDS; t++) {
		int max = ipc_get_maxidx(ns, t);

		bad += report_stopped_holder(ns, &h->ids[t].lock, ids_names[t], -1, report, len, used);
		for (int i = 0; i <= max; i++) {
			struct uperm *p = ipc_obtain(ns, t, i);

			if (p && ns_ptr(ns, ns_off(ns, p), sizeof(*p) + sizeof(struct ulock)))
				bad += report_stopped_holder(ns, ipc_obj_lock(p), names[t], p->id, report,
							     len, used);
			if (p && t == IPC_SEM_IDS)
				bad += sem_report_stopped(ns, p, report_stopped_holder, report, len,
							  used);
		}
	}
	return bad;
}

/* the longest fsck waits for any lock: a held one is reported, not waited for */
#define FSCK_LOCK_WAIT_NS 2000000000LL

/*
 * What `uipc fsck` reports: locks held by stopped processes, then the
 * allocator and the three id tables, checked under their locks (taking
 * them also recovers any a dead holder left).  A lock fsck cannot have
 * within FSCK_LOCK_WAIT_NS is reported as a problem.
 */
int ipc_ns_check(char *report, size_t len)
{
	struct ns *ns = ns_get();
	size_t used = 0;
	int bad, t, r;

	if (!ns)
		return -errno;
	if (report && len)
		report[0] = 0;
	bad = report_stopped_holders(ns, report, len, &used);
	lockwait_bound_max(FSCK_LOCK_WAIT_NS);
	r = ulock_acquire(ns, &ns->hdr->alloc.lock);
	if (r) {
		lockwait_bound_end();
		return r == -EDEADLK ? bad + 1 : r;
	}
	bad += arena_check(ns, report ? report + used : NULL, report ? len - used : 0);
	ulock_release(ns, &ns->hdr->alloc.lock);
	used = report ? strlen(report) : 0;
	for (t = 0; t < IPC_NR_IDS; t++) {
		static int (*const check_obj[IPC_NR_IDS])(struct ns *, struct uperm *, char *, size_t,
							  size_t *) = {
			sem_check_obj, msg_check_obj, shm_check_obj,
		};
		int max;

		if (ids_lock(ns, t)) {
			bad++;
			continue;
		}
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
	lockwait_bound_end();
	return bad;
}

/* ---- sysctls ---- */

struct sysctl_ent {
	const char *name;
	int kind;          /* 0: limit field, 1: next_id, 2: kernel.sem, 3: fs.aio-nr */
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
	/* native AIO's (core/aionr.c): the limit is an unsigned long as
	 * shmmax, the count is read-only (0444 on the kernel) */
	{ "fs.aio-max-nr", 0, LIM(aio_max_nr), 0, -2 },
	{ "fs.aio-nr", 3, 0, 0, 0 },
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
	return off == LIM(shmmax) || off == LIM(shmall) || off == LIM(shmmni) ||
	       off == LIM(aio_max_nr);
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
	if (e->kind == 3) {
		uint64_t nr;
		int r = ns_aio_nr(ns, &nr);

		if (r)
			return r;
		n = snprintf(buf, len, "%llu", (unsigned long long)nr);
	} else if (e->kind == 2)
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

bool ipc_sysctl_known(const char *name)
{
	return find_sysctl(name) != NULL;
}

bool ipc_sysctl_read_only(const char *name)
{
	const struct sysctl_ent *e = find_sysctl(name);

	return e && e->kind == 3;
}

/* ---- writing a sysctl: the kernel's proc_dointvec parsing ----
 *
 * As /proc/sys does: spaces skipped, each number in C notation (0x hex, 0
 * octal), a '-' allowed only where the value is signed, each followed by a
 * space, tab or newline or the end; the values parsed before a bad one are
 * kept (the write succeeds with them), a bad first one fails it (EINVAL),
 * and the result is the number of bytes consumed.
 */

struct sysctl_text {
	const char *p;
	size_t left;
};

static void skip_spaces(struct sysctl_text *t)
{
	while (t->left && isspace((unsigned char)*t->p)) {
		t->p++;
		t->left--;
	}
}

/* one number: its magnitude in *V, its sign in *NEG; 0 or -EINVAL */
static int get_number(struct sysctl_text *t, unsigned long long *v, bool *neg)
{
	char tmp[22], *end;
	size_t n = t->left < sizeof(tmp) - 1 ? t->left : sizeof(tmp) - 1, used;
	const char *q = tmp;

	memcpy(tmp, t->p, n);
	tmp[n] = 0;
	*neg = tmp[0] == '-' && t->left > 1;
	if (*neg)
		q++;
	if (!isdigit((unsigned char)*q))
		return -EINVAL;
	errno = 0;
	*v = strtoull(q, &end, 0);
	if (errno)
		return -EINVAL;
	used = (size_t)(end - tmp);
	if (used == sizeof(tmp) - 1)
		return -EINVAL;
	if (used < t->left && !memchr(" \t\n", *end, 3))
		return -EINVAL;
	t->p += used;
	t->left -= used;
	return 0;
}

/* the value of one number for entry E (one of the int or unsigned long
 * kinds), checked against its range; 0 or -EINVAL */
static int convert(struct ns *ns, const struct sysctl_ent *e, unsigned long long mag, bool neg,
		   int64_t *out)
{
	long long v;

	if (e->max == -2) {     /* unsigned long: no sign, no bounds */
		if (neg)
			return -EINVAL;
		*out = (int64_t)mag;
		return 0;
	}
	if (mag > (unsigned long long)INT_MAX + neg)
		return -EINVAL;
	v = neg ? -(long long)mag : (long long)mag;
	if (e->kind != 2 && (v < e->min || v > (e->max == -1 ? ns->ipcmni : e->max)))
		return -EINVAL;
	*out = v;
	return 0;
}

/* parse up to N values of E from BUF into V; the count parsed (*COUNT)
 * and the bytes consumed, or -errno: a bad value after good ones is the
 * write's error too, the good ones applied all the same (*COUNT) */
static ssize_t parse_values(struct ns *ns, const struct sysctl_ent *e, const char *buf,
			    size_t len, int64_t *v, int n, int *count)
{
	struct sysctl_text t = { buf, len < 4095 ? len : 4095 };
	unsigned long long mag;
	int err = 0, i;
	bool neg;

	for (i = 0; i < n && t.left; i++) {
		skip_spaces(&t);
		if (!t.left)
			break;
		err = get_number(&t, &mag, &neg);
		if (!err)
			err = convert(ns, e, mag, neg, &v[i]);
		if (err)
			break;
	}
	*count = i;
	if (!err && t.left)
		skip_spaces(&t);
	if (i == 0 && !err)
		err = -EINVAL;
	return err ? err : (ssize_t)(len - t.left);
}

/* kernel.sem: the first COUNT of semmsl, semmns, semopm, semmni */
static int set_sem_limits(struct ns *ns, const int64_t *v, int count)
{
	struct uipc_limits *l = &ns->hdr->lim;
	int r = ulock_acquire(ns, &ns->hdr->ns_lock);

	if (r)
		return r;
	/* as the kernel: the values are written, then a semmni outside
	 * [0, ipc_mni] is put back and the write fails with ERANGE */
	if (count > 0)
		J_SET(ns, l->semmsl, (int32_t)v[0]);
	if (count > 1)
		J_SET(ns, l->semmns, (int32_t)v[1]);
	if (count > 2)
		J_SET(ns, l->semopm, (int32_t)v[2]);
	if (count > 3) {
		if (v[3] >= 0 && v[3] <= ns->ipcmni)
			J_SET(ns, l->semmni, (int32_t)v[3]);
		else
			r = -ERANGE;
	}
	ulock_release(ns, &ns->hdr->ns_lock);
	return r;
}

static int set_next_id(struct ns *ns, int type, int64_t v)
{
	struct ipc_ids *ids = &ns->hdr->ids[type];
	int r = ids_lock(ns, type);

	if (r)
		return r;
	J_SET(ns, ids->next_id, (int32_t)v);
	ids_unlock(ns, type);
	return 0;
}

static int set_limit(struct ns *ns, const struct sysctl_ent *e, int64_t v)
{
	struct uipc_limits *l = &ns->hdr->lim;
	uint64_t u = (uint64_t)v;
	int r;

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
 * change them, or CAP_SYS_ADMIN over its owner user namespace (cred.c: a
 * process in a user namespace made later has none).  The owner is the file's (fstat at open),
 * which members cannot rewrite, not the header's creator_uid, which they can.
 */
static bool may_set_limits(struct ns *ns)
{
	uint32_t owner;

	/* both as the namespace's owner user namespace sees them (cred.c):
	 * the file's owner as this process saw it at open, its own euid */
	if (cred_id_from_caller((uint32_t)ns->file_uid, false, &owner))
		owner = UINT32_MAX;
	return cur_cred()->euid == owner || has_cap(CAP_SYS_ADMIN);
}

ssize_t ipc_sysctl_write(const char *name, const char *buf, size_t len)
{
	const struct sysctl_ent *e = name ? find_sysctl(name) : NULL;
	int64_t v[4];
	struct ns *ns;
	ssize_t used;
	int count, r;

	if (!e || !buf)
		return -ENOENT;
	if (e->kind == 3)               /* 0444: not even root opens it to write */
		return -EACCES;
	if (!len)
		return 0;
	ns = ns_get();
	if (!ns)
		return -errno;
	if (!may_set_limits(ns))
		return -EPERM;
	used = parse_values(ns, e, buf, len, v, e->kind == 2 ? 4 : 1, &count);
	if (count == 0)
		return used;
	r = e->kind == 2 ? set_sem_limits(ns, v, count) : set_limit(ns, e, v[0]);
	return r ? r : used;
}

int ipc_sysctl_set(const char *name, const char *value)
{
	ssize_t r = value ? ipc_sysctl_write(name, value, strlen(value)) : -ENOENT;

	return r < 0 ? (int)r : 0;
}

/* ---- /proc/sysvipc: the objects, as the kernel lists them ---- */

static const char *const proc_header[IPC_NR_IDS] = {
	[IPC_SEM_IDS] = "       key      semid perms      nsems   uid   gid  cuid  cgid"
			"      otime      ctime\n",
	[IPC_MSG_IDS] = "       key      msqid perms      cbytes       qnum lspid lrpid"
			"   uid   gid  cuid  cgid      stime      rtime      ctime\n",
	[IPC_SHM_IDS] = "       key      shmid perms                  size  cpid  lpid"
			" nattch   uid   gid  cuid  cgid      atime      dtime      ctime"
			"                   rss                  swap\n",
};

int ipc_proc_show(int type, ipc_emit_fn emit, void *arg)
{
	static int (*const show[IPC_NR_IDS])(int, char *, size_t) = {
		[IPC_SEM_IDS] = sem_proc_show,
		[IPC_MSG_IDS] = msg_proc_show,
		[IPC_SHM_IDS] = shm_proc_show,
	};
	struct ns *ns = ns_get();
	char line[512];
	int r, max;

	if (!ns)
		return -errno;
	if (type < 0 || type >= IPC_NR_IDS)
		return -EINVAL;
	r = emit(arg, proc_header[type], strlen(proc_header[type]));
	if (r || (r = ids_lock(ns, type)))
		return r;
	max = ipc_get_maxidx(ns, type);
	ids_unlock(ns, type);
	/* index order, as the kernel walks its idr; an object created
	 * meanwhile past MAX is not listed, as with a reader that started
	 * before it */
	for (int i = 0; i <= max && !r; i++) {
		int n = show[type](i, line, sizeof(line));

		if (n > 0)
			r = emit(arg, line, (size_t)n);
	}
	return r;
}
