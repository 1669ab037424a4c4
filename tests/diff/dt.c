/*
 * dt.c - shared helpers of the differential scenarios: the normalized
 * transcript (errno names, pids, times, semid_ds/seminfo fields), the
 * process registry and child management, the result channel for blocked
 * children, the printing wrappers of semget/semop/semctl, the per-namespace
 * sysctl helper, and main() dispatching to the case named on the command
 * line.  See dt.h.
 */
#include "dt.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ucontext.h>
#include <sys/wait.h>
#include <unistd.h>

int dt_exit_code;
const char *dt_mode = "kernel";
void *dt_badpage;
void *dt_ropage;

/* ------------------------------------------------------------------ */
/* registry of process names, shared by every process of the scenario */

#define DT_MAXPROC 256
struct dt_registry {
	int next_child;      /* last child index handed out */
	int n;
	struct {
		pid_t pid;
		char name[24];
	} e[DT_MAXPROC];
};
static struct dt_registry *reg;
static int my_index;        /* 0 main, N childN */
static char my_role[24] = "main";
static pid_t my_children[DT_MAXPROC];
static int my_nchildren;
static int chan[2] = { -1, -1 };

void dt_register(pid_t pid, const char *name)
{
	for (int i = 0; i < reg->n; i++)
		if (strcmp(reg->e[i].name, name) == 0) {
			reg->e[i].pid = pid;
			return;
		}
	int i = __atomic_fetch_add(&reg->n, 1, __ATOMIC_SEQ_CST);
	if (i >= DT_MAXPROC) {
		dt_fail("registry full");
		exit(2);
	}
	snprintf(reg->e[i].name, sizeof reg->e[i].name, "%s", name);
	__atomic_store_n(&reg->e[i].pid, pid, __ATOMIC_SEQ_CST);
}

pid_t dt_main_pid(void)
{
	for (int i = 0; i < reg->n; i++)
		if (strcmp(reg->e[i].name, "main") == 0)
			return reg->e[i].pid;
	return -1;
}

int dt_child_index(void) { return my_index; }
const char *dt_role(void) { return my_role; }

/* ------------------------------------------------------------------ */
/* output */

static void write_all(const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(1, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			_exit(3);
		}
		p += w;
		n -= (size_t)w;
	}
}

static void vout(const char *pfx, const char *fmt, va_list ap)
{
	char buf[8192];
	int len = 0;
	int saved = errno;
	if (my_index != 0)
		len = snprintf(buf, sizeof buf, "[%s] ", my_role);
	len += snprintf(buf + len, sizeof buf - (size_t)len, "%s", pfx);
	int n = vsnprintf(buf + len, sizeof buf - (size_t)len - 1, fmt, ap);
	if (n < 0)
		n = 0;
	len += n;
	if ((size_t)len > sizeof buf - 2)
		len = (int)sizeof buf - 2;
	buf[len++] = '\n';
	write_all(buf, (size_t)len);
	errno = saved;
}

void dt_out(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vout("", fmt, ap);
	va_end(ap);
}

void dt_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vout("FAIL: ", fmt, ap);
	va_end(ap);
	dt_exit_code = 1;
}

/* rotating static buffers for the formatting helpers */
static char *sbuf(void)
{
	static char bufs[16][1024];
	static int i;
	i = (i + 1) % 16;
	return bufs[i];
}

const char *dt_errname(int e)
{
	const char *n = strerrorname_np(e);
	if (n)
		return n;
	char *b = sbuf();
	snprintf(b, 1024, "E#%d", e);
	return b;
}

const char *dt_res(long r, int e)
{
	char *b = sbuf();
	if (r == -1)
		snprintf(b, 1024, "-1 %s", dt_errname(e));
	else
		snprintf(b, 1024, "%ld", r);
	return b;
}

const char *dt_pid(pid_t p)
{
	if (p == 0)
		return "0";
	for (int i = 0; i < reg->n; i++)
		if (reg->e[i].pid == p)
			return reg->e[i].name;
	if (p == getpid())
		return "self";
	char *b = sbuf();
	snprintf(b, 1024, "other(%d)", (int)p);
	return b;
}

const char *dt_time(long long t)
{
	if (t == 0)
		return "0";
	long long now = (long long)time(NULL);
	if (t >= now - 5 && t <= now + 1)
		return "now";
	char *b = sbuf();
	snprintf(b, 1024, "BAD(%lld)", t);
	return b;
}

const char *dt_key(key_t k)
{
	if (k == IPC_PRIVATE)
		return "IPC_PRIVATE";
	char *b = sbuf();
	snprintf(b, 1024, "0x%08x", (unsigned int)k);
	return b;
}

const char *dt_semflg(int flg)
{
	char *b = sbuf();
	b[0] = 0;
	if (flg & IPC_CREAT)
		strcat(b, "CREAT|");
	if (flg & IPC_EXCL)
		strcat(b, "EXCL|");
	if (flg & IPC_NOWAIT)
		strcat(b, "NOWAIT|");
	flg &= ~(IPC_CREAT | IPC_EXCL | IPC_NOWAIT);
	snprintf(b + strlen(b), 64, "0%o", (unsigned int)flg);
	return b;
}

static struct {
	const void *p;
	const char *name;
} opaque[16];

void dt_opaque(const void *p, const char *name)
{
	for (size_t i = 0; i < DT_NELEM(opaque); i++)
		if (opaque[i].p == NULL || opaque[i].p == p) {
			opaque[i].p = p;
			opaque[i].name = name;
			return;
		}
}

static const char *opaque_name(const void *p)
{
	for (size_t i = 0; i < DT_NELEM(opaque); i++)
		if (opaque[i].p == p && p != NULL)
			return opaque[i].name;
	return NULL;
}

static int is_bad(const void *p)
{
	return (uintptr_t)p < 4096 || p == dt_badpage || p == dt_ropage ||
	       opaque_name(p) != NULL;
}

static const char *ptrname(const void *p)
{
	if (p == NULL)
		return "NULL";
	if (opaque_name(p))
		return opaque_name(p);
	if (p == dt_badpage)
		return "BADPAGE";
	if (p == dt_ropage)
		return "ROPAGE";
	char *b = sbuf();
	snprintf(b, 1024, "PTR(%lu)", (unsigned long)(uintptr_t)p);
	return b;
}

const char *dt_ops(const struct sembuf *s, size_t n)
{
	if (is_bad(s))
		return ptrname(s);
	char *b = sbuf();
	if (n > 600) {
		/* never read: the count alone (nsops tests pass short arrays) */
		snprintf(b, 1024, "[%zu ops]", n);
		return b;
	}
	if (n > 8) {
		/* long arrays: count and a checksum of the content */
		unsigned long h = 0;
		for (size_t i = 0; i < n; i++)
			h = h * 31 + (unsigned)s[i].sem_num * 7u +
			    (unsigned)(unsigned short)s[i].sem_op * 3u +
			    (unsigned)(unsigned short)s[i].sem_flg;
		snprintf(b, 1024, "[%zu ops #%lx]", n, h);
		return b;
	}
	size_t len = 0;
	b[len++] = '[';
	for (size_t i = 0; i < n; i++) {
		char f[64] = "";
		int flg = s[i].sem_flg;
		if (flg & IPC_NOWAIT)
			strcat(f, "|NOWAIT");
		if (flg & SEM_UNDO)
			strcat(f, "|UNDO");
		flg &= ~(IPC_NOWAIT | SEM_UNDO);
		if (flg)
			snprintf(f + strlen(f), 20, "|0x%x", (unsigned)flg & 0xffff);
		len += (size_t)snprintf(b + len, 1024 - len, "%s%u:%+d:%s",
					i ? "," : "", s[i].sem_num, s[i].sem_op,
					f[0] ? f + 1 : "0");
	}
	snprintf(b + len, 1024 - len, "]");
	return b;
}

const char *dt_cmdname(int cmd)
{
	switch (cmd) {
	case IPC_RMID: return "IPC_RMID";
	case IPC_SET: return "IPC_SET";
	case IPC_STAT: return "IPC_STAT";
	case IPC_INFO: return "IPC_INFO";
	case GETPID: return "GETPID";
	case GETVAL: return "GETVAL";
	case GETALL: return "GETALL";
	case GETNCNT: return "GETNCNT";
	case GETZCNT: return "GETZCNT";
	case SETVAL: return "SETVAL";
	case SETALL: return "SETALL";
	case SEM_STAT: return "SEM_STAT";
	case SEM_INFO: return "SEM_INFO";
	case SEM_STAT_ANY: return "SEM_STAT_ANY";
	}
	char *b = sbuf();
	snprintf(b, 1024, "cmd(%d)", cmd);
	return b;
}

/* ------------------------------------------------------------------ */
/* time */

int dt_deadline_ms(int normal)
{
	/* after a first failure the transcript already differs: keep the
	 * remaining waits short so a broken run does not eat the budget */
	return dt_exit_code ? normal / 10 : normal;
}

void dt_msleep(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

char dt_proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strrchr(buf, ')');          /* the command may hold spaces and ')' */
	return p && p[1] == ' ' ? p[2] : 0;
}

int dt_wait_state(pid_t pid, char want, int ms)
{
	long long end = dt_now_ms() + ms;

	while (dt_proc_state(pid) != want) {
		if (dt_now_ms() >= end)
			return -1;
		dt_msleep(2);
	}
	return 0;
}

long long dt_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

long long dt_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* the linker's bounds of this program's text */
extern char __executable_start[], etext[];

static int in_program_text(const void *ip)
{
	return (uintptr_t)ip >= (uintptr_t)__executable_start && (uintptr_t)ip < (uintptr_t)etext;
}

const void *dt_interrupted_ip(const void *ctx)
{
	const ucontext_t *uc = ctx;

	if (!uc)
		return NULL;
#if defined(__x86_64__)
	return (const void *)(uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	return (const void *)(uintptr_t)uc->uc_mcontext.pc;
#else
	return NULL;
#endif
}

int dt_ip_before_call(const void *ip, const char *const *wrappers)
{
	const ElfW(Sym) *sym = NULL;
	Dl_info di;

	if (!strcmp(dt_mode, "kernel"))
		return 1;
	if (!ip)
		return 0;
	if (in_program_text(ip))
		return 1;
	if (!dladdr1(ip, &di, (void **)&sym, RTLD_DL_SYMENT) || !di.dli_fname)
		return 0;
	if (strstr(di.dli_fname, "/ld-linux") || strstr(di.dli_fname, "/ld-musl"))
		return 1;
	/* the sanitizer runtime preloaded before uipc (tests/unit-sanitize.t)
	 * intercepts msgrcv and the like in front of uipc's: a handler that
	 * ran there ran before the call began */
	if (strstr(di.dli_fname, "/libasan") || strstr(di.dli_fname, "/libubsan"))
		return 1;
	/* inside the named symbol itself, not past its end (dladdr names the
	 * nearest exported symbol below IP, which may be another function) */
	if (!di.dli_sname || !sym || (uintptr_t)ip >= (uintptr_t)di.dli_saddr + sym->st_size)
		return 0;
	for (int i = 0; wrappers[i]; i++)
		if (!strcmp(di.dli_sname, wrappers[i]))
			return 1;
	return 0;
}

const char *dt_ip_where(const void *ip)
{
	static __thread char where[160];
	Dl_info di;
	const char *slash;

	if (!ip)
		return "no context (held by the library)";
	if (in_program_text(ip))
		return "program";
	if (!dladdr(ip, &di) || !di.dli_fname)
		return "unknown";
	slash = strrchr(di.dli_fname, '/');
	snprintf(where, sizeof(where), "%s+0x%lx", slash ? slash + 1 : di.dli_fname,
		 (unsigned long)((uintptr_t)ip - (uintptr_t)di.dli_fbase));
	return where;
}

/* ------------------------------------------------------------------ */
/* processes */

pid_t dt_fork(void (*fn)(void *), void *arg)
{
	int idx = __atomic_add_fetch(&reg->next_child, 1, __ATOMIC_SEQ_CST);
	char name[24];
	snprintf(name, sizeof name, "child%d", idx);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		dt_fail("fork: %s", dt_errname(errno));
		return -1;
	}
	if (pid == 0) {
		my_index = idx;
		snprintf(my_role, sizeof my_role, "%s", name);
		my_nchildren = 0;
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(9);
		dt_register(getpid(), name);
		fn(arg);
		exit(dt_exit_code);
	}
	dt_register(pid, name);
	if (my_nchildren < DT_MAXPROC)
		my_children[my_nchildren++] = pid;
	return pid;
}

static void forget_child(pid_t pid)
{
	for (int i = 0; i < my_nchildren; i++)
		if (my_children[i] == pid)
			my_children[i] = 0;
}

int dt_wait(pid_t pid)
{
	long long deadline = dt_now_ms() + dt_deadline_ms(5000);
	int st;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			break;
		if (r < 0) {
			dt_fail("waitpid(%s): %s", dt_pid(pid), dt_errname(errno));
			return -1;
		}
		if (dt_now_ms() > deadline) {
			dt_fail("%s did not exit in time; killed", dt_pid(pid));
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			forget_child(pid);
			return -1;
		}
		dt_msleep(1);
	}
	forget_child(pid);
	if (WIFEXITED(st))
		dt_out("%s exit %d", dt_pid(pid), WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		dt_out("%s signal %s", dt_pid(pid), sigabbrev_np(WTERMSIG(st)));
	return st;
}

void dt_reap_all(void)
{
	for (int i = 0; i < my_nchildren; i++) {
		pid_t p = my_children[i];
		if (p <= 0)
			continue;
		int st;
		if (waitpid(p, &st, WNOHANG) == 0) {
			dt_fail("%s still running at the end; killed", dt_pid(p));
			kill(p, SIGKILL);
			waitpid(p, &st, 0);
		}
		my_children[i] = 0;
	}
}

void dt_drop_privs(uid_t uid, gid_t gid, gid_t supp)
{
	gid_t groups[1] = { supp };
	if (setgroups(1, groups) < 0 || setresgid(gid, gid, gid) < 0 ||
	    setresuid(uid, uid, uid) < 0) {
		dt_fail("dropping privileges: %s", dt_errname(errno));
		exit(1);
	}
	/* a credential change clears the parent-death signal */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	dt_out("now uid=%u gid=%u groups=[%u]", (unsigned)getuid(),
	       (unsigned)getgid(), (unsigned)supp);
}

void dt_exec_self(char *const argv[])
{
	char env[8192];
	size_t len = (size_t)snprintf(env, sizeof env, "%s", my_role);
	for (int i = 0; i < reg->n && len < sizeof env - 64; i++)
		len += (size_t)snprintf(env + len, sizeof env - len, ",%s=%d",
					reg->e[i].name, (int)reg->e[i].pid);
	setenv("DT_REGISTRY", env, 1);
	execv("/proc/self/exe", argv);
	dt_fail("execv: %s", dt_errname(errno));
	exit(1);
}

/* ------------------------------------------------------------------ */
/* result channel */

void dt_chan_send(int ret, int err, int extra)
{
	struct dt_msg m = { my_index, ret, err, extra };
	if (write(chan[1], &m, sizeof m) != (ssize_t)sizeof m)
		dt_fail("chan write: %s", dt_errname(errno));
}

int dt_chan_recv(struct dt_msg *m)
{
	struct pollfd p = { chan[0], POLLIN, 0 };
	int r;
	do
		r = poll(&p, 1, dt_deadline_ms(5000));
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return -1;
	if (read(chan[0], m, sizeof *m) != (ssize_t)sizeof *m)
		return -1;
	return 0;
}

static const char *msgstr(const struct dt_msg *m)
{
	char *b = sbuf();
	snprintf(b, 1024, "woken child%d: %s", m->who, dt_res(m->ret, m->err));
	if (m->extra)
		snprintf(b + strlen(b), 64, " (extra %d)", m->extra);
	return b;
}

void dt_wakes(int n)
{
	for (int i = 0; i < n; i++) {
		struct dt_msg m;
		if (dt_chan_recv(&m) < 0) {
			dt_fail("no wakeup report in time (%d of %d)", i, n);
			return;
		}
		dt_out("%s", msgstr(&m));
	}
}

static int cmpmsg(const void *a, const void *b)
{
	const struct dt_msg *x = a, *y = b;
	if (x->who != y->who)
		return x->who - y->who;
	return x->extra - y->extra;
}

void dt_wakes_sorted(int n)
{
	struct dt_msg m[64];
	int got = 0;
	for (; got < n && got < 64; got++)
		if (dt_chan_recv(&m[got]) < 0) {
			dt_fail("no wakeup report in time (%d of %d)", got, n);
			break;
		}
	qsort(m, (size_t)got, sizeof m[0], cmpmsg);
	for (int i = 0; i < got; i++)
		dt_out("%s", msgstr(&m[i]));
}

int dt_chan_ready(void)
{
	struct pollfd p = { chan[0], POLLIN, 0 };
	return poll(&p, 1, 0) > 0;
}

void dt_chan_none(void)
{
	struct pollfd p = { chan[0], POLLIN, 0 };
	if (poll(&p, 1, 0) > 0) {
		struct dt_msg m;
		if (read(chan[0], &m, sizeof m) == (ssize_t)sizeof m)
			dt_out("unexpected report: %s", msgstr(&m));
		else
			dt_fail("chan read");
	} else {
		dt_out("no pending report");
	}
}

/* ------------------------------------------------------------------ */
/* waiting for blocked children */

int dt_wait_cnt(int id, int num, int cmd, int want)
{
	long long deadline = dt_now_ms() + dt_deadline_ms(5000);
	int v;
	for (;;) {
		v = semctl(id, num, cmd);
		if (v == want) {
			dt_out("%s(%d,%d) reached %d", dt_cmdname(cmd), id, num, want);
			return 0;
		}
		if (dt_now_ms() > deadline) {
			dt_fail("%s(%d,%d) is %s, want %d (timed out)", dt_cmdname(cmd),
				id, num, dt_res(v, errno), want);
			return -1;
		}
		dt_msleep(1);
	}
}

/* ------------------------------------------------------------------ */
/* blocked children */

struct blk {
	int id;
	int nops;
	struct sembuf ops[8];
	long timeout_ms;
};

static void blocker(void *p)
{
	struct blk *b = p;
	int r;
	if (b->timeout_ms) {
		struct timespec ts = { b->timeout_ms / 1000,
				       (b->timeout_ms % 1000) * 1000000L };
		r = semtimedop(b->id, b->ops, (size_t)b->nops, &ts);
	} else {
		r = semop(b->id, b->ops, (size_t)b->nops);
	}
	dt_chan_send(r, r < 0 ? errno : 0, 0);
}

pid_t dt_block(int id, const struct sembuf *ops, int nops, long tmo_ms,
	       int wnum, int wcmd, int want)
{
	static struct blk b;
	memset(&b, 0, sizeof b);
	b.id = id;
	b.nops = nops > 8 ? 8 : nops;
	memcpy(b.ops, ops, sizeof(struct sembuf) * (size_t)b.nops);
	b.timeout_ms = tmo_ms;
	pid_t pid = dt_fork(blocker, &b);
	if (tmo_ms)
		dt_out("%s: semtimedop(%d,%s,%d,%ldms) blocks", dt_pid(pid), id,
		       dt_ops(ops, (size_t)b.nops), b.nops, tmo_ms);
	else
		dt_out("%s: semop(%d,%s,%d) blocks", dt_pid(pid), id,
		       dt_ops(ops, (size_t)b.nops), b.nops);
	dt_wait_cnt(id, wnum, wcmd, want);
	return pid;
}

/* ------------------------------------------------------------------ */
/* call wrappers */

int dt_semget(key_t key, int nsems, int flg)
{
	errno = 0;
	int r = semget(key, nsems, flg);
	int e = errno;
	dt_out("semget(%s,%d,%s) = %s", dt_key(key), nsems, dt_semflg(flg),
	       dt_res(r, e));
	errno = e;
	return r;
}

int dt_semop(int id, struct sembuf *sops, size_t n)
{
	const char *o = dt_ops(sops, n); /* before the call: a woken op is
					    printed as it was asked */
	errno = 0;
	int r = semop(id, sops, n);
	int e = errno;
	dt_out("semop(%d,%s,%zu) = %s", id, o, n, dt_res(r, e));
	errno = e;
	return r;
}

static const char *tsstr(const struct timespec *ts)
{
	if (ts == NULL || is_bad(ts))
		return ptrname(ts);
	char *b = sbuf();
	snprintf(b, 1024, "{%lld,%ld}", (long long)ts->tv_sec, ts->tv_nsec);
	return b;
}

int dt_semtimedop(int id, struct sembuf *sops, size_t n, const struct timespec *ts)
{
	const char *o = dt_ops(sops, n);
	const char *t = tsstr(ts);
	errno = 0;
	int r = semtimedop(id, sops, n, ts);
	int e = errno;
	dt_out("semtimedop(%d,%s,%zu,%s) = %s", id, o, n, t, dt_res(r, e));
	errno = e;
	return r;
}

int dt_get(int id, int num, int cmd)
{
	errno = 0;
	int r = semctl(id, num, cmd);
	int e = errno;
	if (cmd == GETPID && r >= 0)
		dt_out("semctl(%d,%d,GETPID) = %s", id, num, dt_pid(r));
	else
		dt_out("semctl(%d,%d,%s) = %s", id, num, dt_cmdname(cmd), dt_res(r, e));
	errno = e;
	return r;
}

int dt_setval(int id, int num, int val)
{
	union semun a;
	a.val = val;
	errno = 0;
	int r = semctl(id, num, SETVAL, a);
	int e = errno;
	dt_out("semctl(%d,%d,SETVAL,%d) = %s", id, num, val, dt_res(r, e));
	errno = e;
	return r;
}

#define GETALL_MAX 40000
static unsigned short getall_buf[GETALL_MAX + 1];

int dt_getall(int id)
{
	union semun a;
	for (int i = 0; i <= GETALL_MAX; i++)
		getall_buf[i] = 0xffff;
	a.array = getall_buf;
	errno = 0;
	int r = semctl(id, 0, GETALL, a);
	int e = errno;
	char b[2048];
	size_t len = 0;
	int n = 0;
	while (n <= GETALL_MAX && getall_buf[n] != 0xffff)
		n++;
	for (int i = 0; i < n && i < 64; i++)
		len += (size_t)snprintf(b + len, sizeof b - len, "%s%u", i ? "," : "",
					getall_buf[i]);
	if (n > 64) {
		unsigned long h = 0;
		for (int i = 0; i < n; i++)
			h = h * 131 + getall_buf[i];
		snprintf(b + len, sizeof b - len, ",...(%d values #%lx)", n, h);
	}
	else
		b[len] = 0;
	dt_out("semctl(%d,0,GETALL) = %s [%s]", id, dt_res(r, e), b);
	errno = e;
	return r;
}

int dt_setall(int id, const unsigned short *vals, int n)
{
	union semun a;
	a.array = (unsigned short *)vals;
	char b[2048];
	if (is_bad(vals)) {
		snprintf(b, sizeof b, "%s", ptrname(vals));
	} else {
		size_t len = 0;
		b[len++] = '[';
		for (int i = 0; i < n && i < 64; i++)
			len += (size_t)snprintf(b + len, sizeof b - len, "%s%u",
						i ? "," : "", vals[i]);
		snprintf(b + len, sizeof b - len, "%s]", n > 64 ? ",..." : "");
	}
	errno = 0;
	int r = semctl(id, 0, SETALL, a);
	int e = errno;
	dt_out("semctl(%d,0,SETALL,%s) = %s", id, b, dt_res(r, e));
	errno = e;
	return r;
}

static int untouched(const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		if (c[i] != 0xa5)
			return 0;
	return 1;
}

static void print_semid_ds(const struct semid_ds *s)
{
	const struct ipc_perm *p = &s->sem_perm;
	dt_out("  perm key=%s uid=%u gid=%u cuid=%u cgid=%u mode=0%o seq=%u "
	       "pad2=%u res1=%lu res2=%lu",
	       dt_key(p->__key), (unsigned)p->uid, (unsigned)p->gid,
	       (unsigned)p->cuid, (unsigned)p->cgid, (unsigned)p->mode,
	       (unsigned)p->__seq, (unsigned)p->__pad2,
	       (unsigned long)p->__glibc_reserved1,
	       (unsigned long)p->__glibc_reserved2);
	dt_out("  otime=%s otime_high=%lu ctime=%s ctime_high=%lu nsems=%lu "
	       "res3=%lu res4=%lu",
	       dt_time((long long)s->sem_otime), (unsigned long)s->__sem_otime_high,
	       dt_time((long long)s->sem_ctime), (unsigned long)s->__sem_ctime_high,
	       (unsigned long)s->sem_nsems, (unsigned long)s->__glibc_reserved3,
	       (unsigned long)s->__glibc_reserved4);
}

int dt_stat(int id, int cmd)
{
	struct semid_ds ds;
	union semun a;
	memset(&ds, 0xa5, sizeof ds);
	a.buf = &ds;
	errno = 0;
	int r = semctl(id, 0, cmd, a);
	int e = errno;
	if (r == -1) {
		dt_out("semctl(%d,0,%s) = %s (buffer %s)", id, dt_cmdname(cmd),
		       dt_res(r, e), untouched(&ds, sizeof ds) ? "untouched" : "WRITTEN");
	} else {
		dt_out("semctl(%d,0,%s) = %s", id, dt_cmdname(cmd), dt_res(r, e));
		print_semid_ds(&ds);
	}
	errno = e;
	return r;
}

int dt_info(int cmd)
{
	struct seminfo si;
	union semun a;
	memset(&si, 0xa5, sizeof si);
	a.__buf = &si;
	errno = 0;
	int r = semctl(0, 0, cmd, a);
	int e = errno;
	dt_out("semctl(0,0,%s) = %s", dt_cmdname(cmd), dt_res(r, e));
	if (r != -1)
		dt_out("  semmap=%d semmni=%d semmns=%d semmnu=%d semmsl=%d semopm=%d "
		       "semume=%d semusz=%d semvmx=%d semaem=%d",
		       si.semmap, si.semmni, si.semmns, si.semmnu, si.semmsl,
		       si.semopm, si.semume, si.semusz, si.semvmx, si.semaem);
	errno = e;
	return r;
}

int dt_ipcset(int id, uid_t uid, gid_t gid, unsigned int mode)
{
	struct semid_ds ds;
	union semun a;
	/* every other field is junk: IPC_SET must take only uid, gid, mode */
	memset(&ds, 0x5a, sizeof ds);
	ds.sem_perm.uid = uid;
	ds.sem_perm.gid = gid;
	ds.sem_perm.mode = mode;
	a.buf = &ds;
	errno = 0;
	int r = semctl(id, 0, IPC_SET, a);
	int e = errno;
	dt_out("semctl(%d,0,IPC_SET,{uid=%u,gid=%u,mode=0%o}) = %s", id,
	       (unsigned)uid, (unsigned)gid, mode, dt_res(r, e));
	errno = e;
	return r;
}

int dt_rmid(int id)
{
	errno = 0;
	int r = semctl(id, 0, IPC_RMID);
	int e = errno;
	dt_out("semctl(%d,0,IPC_RMID) = %s", id, dt_res(r, e));
	errno = e;
	return r;
}

int dt_semctl_raw(int id, int num, int cmd, void *arg)
{
	union semun a;
	a.buf = arg;
	errno = 0;
	int r = semctl(id, num, cmd, a);
	int e = errno;
	dt_out("semctl(%d,%d,%s,%s) = %s", id, num, dt_cmdname(cmd), ptrname(arg),
	       dt_res(r, e));
	errno = e;
	return r;
}

void dt_dump(int id, int nsems)
{
	dt_stat(id, IPC_STAT);
	dt_getall(id);
	for (int i = 0; i < nsems; i++) {
		dt_get(id, i, GETPID);
		dt_get(id, i, GETNCNT);
		dt_get(id, i, GETZCNT);
	}
}

/* ------------------------------------------------------------------ */
/* sysctls */

typedef int (*sysctl_set_fn)(const char *, const char *);
typedef int (*sysctl_get_fn)(const char *, char *, size_t);

/* True when this process's IPC namespace is not its parent's (the driver
 * runs `unshare --ipc -- prog`) nor, when readable, pid 1's. */
static int in_private_ipc_ns(void)
{
	char self[128] = "", other[128] = "", path[64];
	if (readlink("/proc/self/ns/ipc", self, sizeof self - 1) < 0)
		return 0;
	snprintf(path, sizeof path, "/proc/%d/ns/ipc", (int)getppid());
	if (readlink(path, other, sizeof other - 1) < 0 || strcmp(self, other) == 0)
		return 0;
	memset(other, 0, sizeof other);
	if (readlink("/proc/1/ns/ipc", other, sizeof other - 1) >= 0 &&
	    strcmp(self, other) == 0)
		return 0;
	return 1;
}

static void proc_path(const char *name, char *path, size_t len)
{
	snprintf(path, len, "/proc/sys/%s", name);
	for (char *p = path + strlen("/proc/sys/"); *p; p++)
		if (*p == '.')
			*p = '/';
}

int dt_sysctl_set_quiet(const char *name, const char *value)
{
	sysctl_set_fn fn = (sysctl_set_fn)dlsym(RTLD_DEFAULT, "uipc_sysctl_set");
	if (fn)
		return fn(name, value);
	if (strcmp(dt_mode, "kernel") != 0) {
		dt_fail("uipc_sysctl_set not found in mode %s", dt_mode);
		errno = ENOSYS;
		return -1;
	}
	if (!in_private_ipc_ns()) {
		/* never change the host's limits */
		dt_fail("refusing to write /proc/sys outside a private IPC namespace");
		exit(2);
	}
	char path[256];
	proc_path(name, path, sizeof path);
	int fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, value, strlen(value));
	int e = errno;
	close(fd);
	if (w < 0) {
		errno = e;
		return -1;
	}
	return 0;
}

int dt_sysctl_set(const char *name, const char *value)
{
	errno = 0;
	int r = dt_sysctl_set_quiet(name, value);
	int e = errno;
	dt_out("sysctl %s <- \"%s\" = %s", name, value, dt_res(r, e));
	errno = e;
	return r;
}

int dt_sysctl_get(const char *name)
{
	char buf[512];
	int r;
	memset(buf, 0, sizeof buf);
	sysctl_get_fn fn = (sysctl_get_fn)dlsym(RTLD_DEFAULT, "uipc_sysctl_get");
	errno = 0;
	if (fn) {
		r = fn(name, buf, sizeof buf);
		if (r > 0)
			r = 0;
	} else {
		char path[256];
		proc_path(name, path, sizeof path);
		int fd = open(path, O_RDONLY);
		r = -1;
		if (fd >= 0) {
			ssize_t n = read(fd, buf, sizeof buf - 1);
			if (n >= 0) {
				buf[n] = 0;
				r = 0;
			}
			close(fd);
		}
	}
	int e = errno;
	/* the trailing newline of /proc is transport, not value */
	size_t l = strlen(buf);
	if (l > 0 && buf[l - 1] == '\n')
		buf[--l] = 0;
	char esc[1024];
	size_t j = 0;
	for (size_t i = 0; i < l && j < sizeof esc - 4; i++) {
		if (buf[i] == '\t') {
			esc[j++] = '\\';
			esc[j++] = 't';
		} else if (buf[i] == '\n') {
			esc[j++] = '\\';
			esc[j++] = 'n';
		} else {
			esc[j++] = buf[i];
		}
	}
	esc[j] = 0;
	if (r == 0)
		dt_out("sysctl %s = \"%s\"", name, esc);
	else
		dt_out("sysctl %s -> %s", name, dt_res(r, e));
	errno = e;
	return r;
}

/* ------------------------------------------------------------------ */
/* main */

static void load_registry_env(void)
{
	/* DT_REGISTRY=role,name=pid,name=pid... left by dt_exec_self */
	const char *env = getenv("DT_REGISTRY");
	if (!env)
		return;
	char tmp[8192];
	snprintf(tmp, sizeof tmp, "%s", env);
	unsetenv("DT_REGISTRY");
	char *save = NULL;
	char *tok = strtok_r(tmp, ",", &save);
	if (!tok)
		return;
	snprintf(my_role, sizeof my_role, "%s", tok);
	if (strncmp(my_role, "child", 5) == 0)
		my_index = atoi(my_role + 5);
	reg->n = 0;
	while ((tok = strtok_r(NULL, ",", &save)) != NULL) {
		char *eq = strchr(tok, '=');
		if (!eq)
			continue;
		*eq = 0;
		dt_register((pid_t)atoi(eq + 1), tok);
		if (strncmp(tok, "child", 5) == 0 && atoi(tok + 5) > reg->next_child)
			reg->next_child = atoi(tok + 5);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s --list | CASE [args]\n", argv[0]);
		return 2;
	}
	if (strcmp(argv[1], "--list") == 0) {
		for (const struct dt_case *c = dt_cases; c->name; c++)
			if (!c->hidden)
				printf("%s\n", c->name);
		return 0;
	}
	const struct dt_case *c = dt_cases;
	while (c->name && strcmp(c->name, argv[1]) != 0)
		c++;
	if (!c->name) {
		fprintf(stderr, "%s: no case %s\n", argv[0], argv[1]);
		return 2;
	}
	const char *m = getenv("UIPC_DIFF_MODE");
	if (m)
		dt_mode = m;
	else if (dlsym(RTLD_DEFAULT, "uipc_semget") != NULL)
		dt_mode = "uipc";
	reg = mmap(NULL, sizeof *reg, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	dt_badpage = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	dt_ropage = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (reg == MAP_FAILED || dt_badpage == MAP_FAILED || dt_ropage == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	memset(reg, 0, sizeof *reg);
	int reexec = getenv("DT_REGISTRY") != NULL;
	if (reexec)
		load_registry_env();
	else
		dt_register(getpid(), "main");
	/* Never run against the wrong thing: a uipc run must have the library
	 * loaded, a kernel run must be alone in a fresh IPC namespace. */
	int loaded = dlsym(RTLD_DEFAULT, "uipc_semget") != NULL;
	if (strcmp(dt_mode, "uipc") == 0 && !loaded) {
		dt_fail("mode uipc but libuipc is not loaded");
		return 2;
	}
	if (strcmp(dt_mode, "kernel") == 0 && loaded) {
		dt_fail("mode kernel but libuipc is loaded");
		return 2;
	}
	/* DT_USERNS_IPC=1: the driver made a fresh IPC namespace, then a user
	 * namespace in it (tests/diff-ns-max.t), where the links of processes
	 * outside cannot be read */
	if (strcmp(dt_mode, "kernel") == 0 && !reexec && !getenv("DT_USERNS_IPC") &&
	    !in_private_ipc_ns()) {
		dt_fail("mode kernel outside a private IPC namespace "
			"(run through tests/diff/difftest)");
		return 2;
	}
	if (pipe2(chan, O_CLOEXEC) < 0) {
		perror("pipe");
		return 2;
	}
	c->fn(argc - 1, argv + 1);
	dt_reap_all();
	return dt_exit_code;
}

/* ------------------------------------------------------------------ */
/* shared memory (appended) */

const char *dt_shmflg(int flg)
{
	char *b = sbuf();
	b[0] = 0;
	if (flg & IPC_CREAT)
		strcat(b, "CREAT|");
	if (flg & IPC_EXCL)
		strcat(b, "EXCL|");
	if (flg & SHM_RDONLY)
		strcat(b, "RDONLY|");
	if (flg & SHM_RND)
		strcat(b, "RND|");
	if (flg & SHM_REMAP)
		strcat(b, "REMAP|");
	if (flg & SHM_EXEC)
		strcat(b, "EXEC|");
	flg &= ~(IPC_CREAT | IPC_EXCL | SHM_RDONLY | SHM_RND | SHM_REMAP | SHM_EXEC);
	snprintf(b + strlen(b), 64, "0%o", (unsigned int)flg);
	return b;
}

const char *dt_shmcmd(int cmd)
{
	switch (cmd) {
	case IPC_RMID: return "IPC_RMID";
	case IPC_SET: return "IPC_SET";
	case IPC_STAT: return "IPC_STAT";
	case IPC_INFO: return "IPC_INFO";
	case SHM_STAT: return "SHM_STAT";
	case SHM_INFO: return "SHM_INFO";
	case SHM_STAT_ANY: return "SHM_STAT_ANY";
	case SHM_LOCK: return "SHM_LOCK";
	case SHM_UNLOCK: return "SHM_UNLOCK";
	}
	char *b = sbuf();
	snprintf(b, 1024, "cmd(%d)", cmd);
	return b;
}

int dt_shmget(key_t key, size_t size, int flg)
{
	errno = 0;
	int r = shmget(key, size, flg);
	int e = errno;
	dt_out("shmget(%s,%zu,%s) = %s", dt_key(key), size, dt_shmflg(flg), dt_res(r, e));
	errno = e;
	return r;
}

void *dt_shmat(int id, const void *addr, int flg)
{
	errno = 0;
	void *r = shmat(id, addr, flg);
	int e = errno;
	const char *what;
	uintptr_t want = (uintptr_t)addr;
	if (flg & SHM_RND)
		want &= ~(uintptr_t)(SHMLBA - 1);
	if (r == (void *)-1)
		what = dt_res(-1, e);
	else if (!addr)
		what = "addr";
	else if ((uintptr_t)r == want)
		what = "given";
	else
		what = "OTHER";
	dt_out("shmat(%d,%s,%s) = %s", id, addr ? "ADDR" : "NULL", dt_shmflg(flg), what);
	errno = e;
	return r;
}

int dt_shmdt(const void *addr, const char *name)
{
	errno = 0;
	int r = shmdt(addr);
	int e = errno;
	dt_out("shmdt(%s) = %s", name, dt_res(r, e));
	errno = e;
	return r;
}

int dt_shmstat(int id, int cmd)
{
	struct shmid_ds ds;
	memset(&ds, 0xa5, sizeof ds);
	errno = 0;
	int r = shmctl(id, cmd, &ds);
	int e = errno;
	if (r == -1) {
		dt_out("shmctl(%d,%s) = %s (buffer %s)", id, dt_shmcmd(cmd), dt_res(r, e),
		       untouched(&ds, sizeof ds) ? "untouched" : "WRITTEN");
	} else {
		dt_out("shmctl(%d,%s) = %s", id, dt_shmcmd(cmd), dt_res(r, e));
		dt_out("  key=%s uid=%u gid=%u cuid=%u cgid=%u mode=0%o seq=%u",
		       dt_key(ds.shm_perm.__key), (unsigned)ds.shm_perm.uid,
		       (unsigned)ds.shm_perm.gid, (unsigned)ds.shm_perm.cuid,
		       (unsigned)ds.shm_perm.cgid, (unsigned)ds.shm_perm.mode,
		       (unsigned)ds.shm_perm.__seq);
		dt_out("  segsz=%zu atime=%s dtime=%s ctime=%s cpid=%s lpid=%s nattch=%lu",
		       (size_t)ds.shm_segsz, dt_time(ds.shm_atime), dt_time(ds.shm_dtime),
		       dt_time(ds.shm_ctime), dt_pid(ds.shm_cpid), dt_pid(ds.shm_lpid),
		       (unsigned long)ds.shm_nattch);
	}
	errno = e;
	return r;
}

int dt_shminfo(int cmd)
{
	union {
		struct shminfo i;
		struct shm_info s;
	} u;
	memset(&u, 0xa5, sizeof u);
	errno = 0;
	int r = shmctl(0, cmd, (struct shmid_ds *)(void *)&u);
	int e = errno;
	dt_out("shmctl(0,%s) = %s", dt_shmcmd(cmd), dt_res(r, e));
	if (r != -1 && cmd == IPC_INFO)
		dt_out("  shmmax=%lu shmmin=%lu shmmni=%lu shmseg=%lu shmall=%lu",
		       u.i.shmmax, u.i.shmmin, u.i.shmmni, u.i.shmseg, u.i.shmall);
	else if (r != -1)
		dt_out("  used_ids=%d shm_tot=%lu shm_rss=%lu shm_swp=%lu "
		       "swap_attempts=%lu swap_successes=%lu",
		       u.s.used_ids, u.s.shm_tot, u.s.shm_rss, u.s.shm_swp,
		       u.s.swap_attempts, u.s.swap_successes);
	errno = e;
	return r;
}

int dt_shmset(int id, uid_t uid, gid_t gid, unsigned int mode)
{
	struct shmid_ds ds;
	memset(&ds, 0, sizeof ds);
	ds.shm_perm.uid = uid;
	ds.shm_perm.gid = gid;
	ds.shm_perm.mode = (unsigned short)mode;
	errno = 0;
	int r = shmctl(id, IPC_SET, &ds);
	int e = errno;
	dt_out("shmctl(%d,IPC_SET,uid=%d gid=%d mode=0%o) = %s", id, (int)uid, (int)gid,
	       mode, dt_res(r, e));
	errno = e;
	return r;
}

int dt_shmctl(int id, int cmd)
{
	errno = 0;
	int r = shmctl(id, cmd, NULL);
	int e = errno;
	dt_out("shmctl(%d,%s) = %s", id, dt_shmcmd(cmd), dt_res(r, e));
	errno = e;
	return r;
}

long dt_nattch(int id)
{
	struct shmid_ds ds;
	if (shmctl(id, IPC_STAT, &ds) < 0)
		return -1;
	return (long)ds.shm_nattch;
}

static char *access_args[2];

static void access_child(void *p)
{
	(void)p;
	volatile char *c = (volatile char *)access_args[0];
	if (access_args[1][0] == 'w')
		*c = 1;
	else if (access_args[1][0] == 'r')
		(void)*c;
	else
		((void (*)(void))(void *)c)();
}

void dt_shm_access(void *p, const char *what)
{
	access_args[0] = p;
	access_args[1] = (char *)what;
	dt_out("%s:", what);
	dt_wait(dt_fork(access_child, NULL));
}
