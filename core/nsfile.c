/*
 * nsfile.c - a namespace is one file, mapped MAP_SHARED by every process
 * in it.  This module names, creates (atomically), validates and maps that
 * file and lays out its header; the layers above lay out their own tables
 * in a new file through their ns_init hooks (ipc/namespace.c: the ids
 * tables and the IPC limits).  It also keeps the arena out of the program's
 * mlockall.
 *
 * Creation never exposes a half-built file: the file is built under a
 * temporary name and link()ed into place, so two processes creating the same
 * namespace at once end up using the same, complete file.
 */
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"

#define DEFAULT_ARENA (4ULL << 30)
#define MIN_ARENA     (64ULL << 20)

static pthread_mutex_t ns_mutex = PTHREAD_MUTEX_INITIALIZER;
static bool g_quiet;      /* no messages: an eager open nobody asked for */
static bool g_ns_used;    /* an IPC call has used g_ns */
/*
 * The namespace file is chosen once, when the process starts (or by an
 * ancestor: UIPC_NS_FILE), not when it first calls: a process that changes
 * its uid stays in its namespace, as with kernel IPC namespaces.
 */
static char g_pinned[4096];
static bool g_pinned_inherited;
static struct ns *g_ns;
static int g_ns_err;
static char g_sel_name[UIPC_NS_NAME_MAX + 1];

/*
 * The arena is a sparse file of gigabytes: locking it (mlockall) would
 * allocate all of it.  The kernel's IPC state is not in the process either,
 * so uipc keeps it out of the program's memory locks: g_future_locked is
 * set while the program's mlockall(MCL_FUTURE) is in force, and a mapping
 * of the arena made then is unlocked before it is made accessible.
 * (Process-local; a fork child inherits the flag but not MCL_FUTURE, which
 * only makes its next arena mapping take the careful way.)
 */
static bool g_future_locked;

static void say(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || g_quiet)
		return;
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (sys_write(2, buf, (size_t)n) < 0)
		return;
}

void ns_corrupt(struct ns *ns, const char *what)
{
	static _Atomic int said;

	if (!atomic_exchange(&said, 1))
		say("uipc: namespace %s is inconsistent (%s); calls may fail",
		    ns ? ns->path : "?", what);
}

/* ---- naming ---- */

static const char *ns_dir(void)
{
	const char *d = getenv("UIPC_DIR");

	return d && *d ? d : "/dev/shm";
}

static bool valid_name(const char *n)
{
	size_t i, len = strlen(n);

	if (len == 0 || len > UIPC_NS_NAME_MAX || n[0] == '.')
		return false;
	for (i = 0; i < len; i++) {
		char c = n[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

static const char *current_name(void)
{
	const char *n;

	if (g_sel_name[0])
		return g_sel_name;
	n = getenv("UIPC_NS");
	return n && *n ? n : "default";
}

static int user_path(const char *name, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/uipc-%u-%s", ns_dir(), (unsigned)geteuid(), name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int shared_path(const char *name, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/uipc-shared-%s", ns_dir(), name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* ---- layout ---- */

static uint64_t page_up(uint64_t x)
{
	return (x + UIPC_PAGE - 1) & ~(uint64_t)(UIPC_PAGE - 1);
}

static int64_t env_num(const char *name, int64_t def)
{
	const char *v = getenv(name);
	char *end;
	long long x;

	if (!v || !*v)
		return def;
	x = strtoll(v, &end, 0);
	return *end ? def : x;
}

/* Where the fixed tables of a namespace with ids of SHIFT bits go. */
static uint64_t compute_layout(int shift, struct ns_layout *l, uint64_t *eager_end)
{
	int32_t mni = 1 << shift;
	uint64_t off = page_up(sizeof(struct uipc_hdr));
	uint64_t used_bytes = (uint64_t)mni / 8;
	uint64_t pop_bytes = ((uint64_t)mni * 8 / UIPC_PAGE + 7) / 8;
	int t;

	/* bitmaps first (small, populated at creation), then the sparse tables */
	for (t = 0; t < IPC_NR_IDS; t++) {
		l->used[t] = off;
		off = page_up(off + used_bytes);
		l->populated[t] = off;
		off = page_up(off + pop_bytes);
	}
	*eager_end = off;
	l->procs = off;
	off = page_up(off + (uint64_t)MAX_PROCS * sizeof(struct uproc));
	l->threads = off;
	off = page_up(off + (uint64_t)MAX_THREADS * sizeof(struct uthread));
	for (t = 0; t < IPC_NR_IDS; t++) {
		l->entries[t] = off;
		off = page_up(off + (uint64_t)mni * sizeof(uoff_t));
	}
	l->heap_start = off;
	return off;
}

/* Does the header describe exactly the layout uipc computes for it? */
static bool layout_matches(const struct uipc_hdr *h, const struct ns_layout *l)
{
	if (h->procs != l->procs || h->threads != l->threads || h->heap_start != l->heap_start)
		return false;
	for (int t = 0; t < IPC_NR_IDS; t++)
		if (h->ids[t].entries != l->entries[t] || h->ids[t].used != l->used[t] ||
		    h->ids[t].populated != l->populated[t])
			return false;
	return true;
}

/* The hook tables of the layers above (CORE_HOOKS in core.h), gathered by
 * the linker. */
extern const struct core_hooks __start_uipc_core_hooks[] UIPC_HIDDEN;
extern const struct core_hooks __stop_uipc_core_hooks[] UIPC_HIDDEN;

static int run_ns_init_hooks(struct ns *ns)
{
	for (const struct core_hooks *h = __start_uipc_core_hooks; h < __stop_uipc_core_hooks; h++) {
		int r = h->ns_init ? h->ns_init(ns) : 0;

		if (r)
			return r;
	}
	return 0;
}

/* Build a complete namespace in the mapping at BASE (SIZE bytes). */
static int init_arena(char *base, uint64_t size, int extended, unsigned mode)
{
	struct uipc_hdr *h = (struct uipc_hdr *)base;
	struct ns tmp = { .base = base, .size = size, .hdr = h };
	int shift = extended ? IPCMNI_EXT_SHIFT : IPCMNI_SHIFT;
	uint64_t eager_end, end;
	int r;

	end = compute_layout(shift, &tmp.lay, &eager_end);
	if (end + MIN_ARENA / 2 > size)
		return -EINVAL;
	tmp.shift = shift;
	tmp.ipcmni = 1 << shift;
	h->version = UIPC_LAYOUT_VERSION;
	h->hdr_size = sizeof(*h);
	h->arena_size = size;
	h->flags = extended ? NS_FLAG_EXTENDED : 0;
	h->ipcmni_shift = (uint32_t)shift;
	h->ipcmni = 1 << shift;
	h->min_cycle = extended ? IPC_MIN_CYCLE_EXT : IPC_MIN_CYCLE;
	h->creator_uid = (uint32_t)geteuid();
	h->mode = mode;
	ulock_init(&h->ns_lock);
	h->procs = tmp.lay.procs;
	h->threads = tmp.lay.threads;
	if (arena_populate(&tmp, UIPC_PAGE, eager_end - UIPC_PAGE))
		return -ENOMEM;
	r = run_ns_init_hooks(&tmp);
	if (r)
		return r;
	h->heap_start = tmp.lay.heap_start;
	arena_init(h, tmp.lay.heap_start);
	atomic_store_explicit(&h->magic, UIPC_MAGIC, memory_order_release);
	return 0;
}

/*
 * mmap the arena of FD read-write, never locked: under MCL_FUTURE the
 * mapping is made PROT_NONE (which locking does not populate), unlocked,
 * then opened up.  uipc's own calls bypass the memory-map hooks.
 */
static void *map_arena(int fd, uint64_t size)
{
	void *m;
	int e;

	if (!__atomic_load_n(&g_future_locked, __ATOMIC_RELAXED))
		return sys_mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
	m = sys_mmap(NULL, size, PROT_NONE, MAP_SHARED | MAP_NORESERVE, fd, 0);
	if (m == MAP_FAILED)
		return m;
	if (sys_syscall(SYS_munlock, m, size) == 0 &&
	    sys_syscall(SYS_mprotect, m, size, PROT_READ | PROT_WRITE) == 0)
		return m;
	e = errno;
	sys_syscall(SYS_munmap, m, size);
	errno = e;
	return MAP_FAILED;
}

/* lock (mlock) every mapping of the process but [SKIP, SKIP + LEN), as
 * MCL_CURRENT would have (errors ignored, as mlockall ignores them) */
static void lock_mappings_but(const char *skip, uint64_t len)
{
	char buf[8192], *line;
	size_t have = 0;
	int fd = sys_open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		char *nl;

		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = 0;
		line = buf;
		while ((nl = strchr(line, '\n'))) {
			unsigned long a, b;

			*nl = 0;
			if (sscanf(line, "%lx-%lx", &a, &b) == 2 &&
			    (b <= (uintptr_t)skip || a >= (uintptr_t)skip + len))
				sys_syscall(SYS_mlock, a, b - a);
			line = nl + 1;
		}
		have = (size_t)(buf + have - line);
		memmove(buf, line, have);
	}
	sys_syscall(SYS_close, fd);
}

/*
 * The program's mlockall: the kernel's, except that the arena stays
 * unlocked and unpopulated.  With MCL_CURRENT and an arena mapped, every
 * mapping is locked on fault first (nothing populated), the arena is
 * unlocked, and the others are locked (populated) one by one unless the
 * program asked for MCL_ONFAULT; then MCL_FUTURE is set as asked.
 */
int ns_mlockall(int flags)
{
	struct ns *ns = __atomic_load_n(&g_ns, __ATOMIC_ACQUIRE);
	int r;

	if (!(flags & MCL_CURRENT) || !ns) {
		r = (int)sys_syscall(SYS_mlockall, flags);
	} else {
		r = (int)sys_syscall(SYS_mlockall, flags | MCL_ONFAULT);
		if (r == 0) {
			sys_syscall(SYS_munlock, ns->base, ns->size);
			if (!(flags & MCL_ONFAULT)) {
				lock_mappings_but(ns->base, ns->size);
				if (flags & MCL_FUTURE)
					sys_syscall(SYS_mlockall, MCL_FUTURE);
			}
		}
	}
	if (r == 0)
		__atomic_store_n(&g_future_locked, (flags & MCL_FUTURE) != 0, __ATOMIC_RELAXED);
	return r;
}

int ns_munlockall(void)
{
	int r = (int)sys_syscall(SYS_munlockall);

	if (r == 0)
		__atomic_store_n(&g_future_locked, false, __ATOMIC_RELAXED);
	return r;
}

/* ---- opening ---- */

static int map_checked(int fd, const char *path, struct ns **out, bool owner_check)
{
	struct stat st;
	struct uipc_hdr hdr;
	struct ns *ns;
	void *m;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode)) {
		say("uipc: %s is not a regular file", path);
		return -EINVAL;
	}
	if (owner_check && st.st_uid != geteuid()) {
		say("uipc: %s belongs to uid %u, not to this user (%u); refusing it",
		    path, (unsigned)st.st_uid, (unsigned)geteuid());
		return -EACCES;
	}
	if ((uint64_t)st.st_size < sizeof(hdr) ||
	    pread(fd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr)) {
		say("uipc: %s is not a uipc namespace (truncated: %lld bytes)", path,
		    (long long)st.st_size);
		return -EINVAL;
	}
	if (hdr.magic != UIPC_MAGIC) {
		say("uipc: %s is not a uipc namespace (bad magic)", path);
		return -EINVAL;
	}
	if (hdr.version != UIPC_LAYOUT_VERSION || hdr.hdr_size != sizeof(hdr)) {
		say("uipc: %s has namespace layout version %u; this uipc reads version %u",
		    path, hdr.version, UIPC_LAYOUT_VERSION);
		return -EINVAL;
	}
	if (hdr.arena_size != (uint64_t)st.st_size || hdr.arena_size < MIN_ARENA ||
	    (hdr.ipcmni_shift != IPCMNI_SHIFT && hdr.ipcmni_shift != IPCMNI_EXT_SHIFT) ||
	    hdr.heap_start >= hdr.arena_size) {
		say("uipc: %s is a damaged uipc namespace (size %lld, header says %llu)",
		    path, (long long)st.st_size, (unsigned long long)hdr.arena_size);
		return -EINVAL;
	}
	{
		struct ns_layout l;
		uint64_t eager_end;

		if (compute_layout((int)hdr.ipcmni_shift, &l, &eager_end) + MIN_ARENA / 2 >
			    hdr.arena_size || !layout_matches(&hdr, &l)) {
			say("uipc: %s is a damaged uipc namespace (its tables are not where they "
			    "belong)", path);
			return -EINVAL;
		}
	}
	m = map_arena(fd, hdr.arena_size);
	if (m == MAP_FAILED)
		return -errno;
	ns = calloc(1, sizeof(*ns));
	if (!ns) {
		sys_munmap(m, hdr.arena_size);
		return -ENOMEM;
	}
	ns->base = m;
	ns->size = hdr.arena_size;
	ns->hdr = m;
	ns->shift = (int)hdr.ipcmni_shift;
	ns->ipcmni = 1 << ns->shift;
	{
		uint64_t eager_end;

		compute_layout(ns->shift, &ns->lay, &eager_end);
	}
	snprintf(ns->path, sizeof(ns->path), "%s", path);
	*out = ns;
	return 0;
}

static int create_file(const char *path, const struct uipc_ns_opts *o)
{
	char tmp[4200];
	unsigned mode = o && o->mode ? (o->mode & 0777) : 0600;
	uint64_t size = o && o->size ? o->size : (uint64_t)env_num("UIPC_NS_SIZE", (int64_t)DEFAULT_ARENA);
	int extended = o ? o->extended : (env_num("UIPC_NS_EXTENDED", 0) != 0);
	void *m;
	int fd, r;

	size = page_up(size);
	if (size < MIN_ARENA * 2) {
		say("uipc: a namespace needs at least %llu MiB of arena (asked for %llu bytes)",
		    (unsigned long long)(MIN_ARENA * 2 >> 20), (unsigned long long)size);
		return -EINVAL;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d.%lx", path, (int)getpid(),
		 (unsigned long)random());
	fd = sys_open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	r = 0;
	if (fchmod(fd, mode) < 0 || ftruncate(fd, (off_t)size) < 0)
		r = -errno;
	if (!r) {
		m = map_arena(fd, size);
		if (m == MAP_FAILED) {
			r = -errno;
		} else {
			r = init_arena(m, size, extended, mode);
			sys_munmap(m, size);
		}
	}
	sys_close(fd);
	if (!r && link(tmp, path) < 0)
		r = -errno;
	unlink(tmp);
	return r;
}

static int open_path(const char *path, struct ns **out, bool owner_check)
{
	int fd = sys_open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	int r;

	if (fd < 0)
		return -errno;
	r = map_checked(fd, path, out, owner_check);
	sys_close(fd);
	return r;
}

/* Open namespace NAME, creating the per-user file if neither it nor a shared
 * namespace of that name exists. */
static int open_ns(const char *name, struct ns **out)
{
	char up[4096], sp[4096];
	int r, tries;

	if (!valid_name(name)) {
		say("uipc: invalid namespace name '%s' (letters, digits, . _ -; at most %d)",
		    name, UIPC_NS_NAME_MAX);
		return -EINVAL;
	}
	if (user_path(name, up, sizeof(up)) || shared_path(name, sp, sizeof(sp)))
		return -ENAMETOOLONG;
	for (tries = 0; tries < 5; tries++) {
		r = open_path(up, out, true);
		if (r != -ENOENT)
			return r;
		r = open_path(sp, out, false);
		if (r != -ENOENT)
			return r;
		r = create_file(up, NULL);
		if (r && r != -EEXIST) {
			say("uipc: cannot create namespace file %s: %s", up, strerror(-r));
			return r;
		}
	}
	return -ENOENT;
}


static int open_pinned(struct ns **out)
{
	int r;

	if (!g_pinned[0])
		return open_ns(current_name(), out);
	r = open_path(g_pinned, out, !g_pinned_inherited);
	if (r != -ENOENT)
		return r;
	/* not there yet: create it (it is this user's or a shared one) */
	r = create_file(g_pinned, NULL);
	if (r && r != -EEXIST) {
		say("uipc: cannot create namespace file %s: %s", g_pinned, strerror(-r));
		return r;
	}
	return open_path(g_pinned, out, !g_pinned_inherited);
}

static void ns_unmap(struct ns *ns)
{
	sys_munmap(ns->base, ns->size);
	free(ns);
}

static void pin_path(void)
{
	const char *f = getenv("UIPC_NS_FILE");
	char up[4096], sp[4096];
	const char *name = current_name();

	if (!g_sel_name[0] && f && *f && strlen(f) < sizeof(g_pinned)) {
		snprintf(g_pinned, sizeof(g_pinned), "%s", f);
		g_pinned_inherited = true;
		return;
	}
	if (!valid_name(name) || user_path(name, up, sizeof(up)) ||
	    shared_path(name, sp, sizeof(sp)))
		return;
	/* this user's namespace of that name, else a shared one, else ours */
	snprintf(g_pinned, sizeof(g_pinned), "%s",
		 access(up, F_OK) != 0 && access(sp, F_OK) == 0 ? sp : up);
	g_pinned_inherited = false;
	setenv("UIPC_NS_FILE", g_pinned, 1);
}

__attribute__((constructor)) static void ns_init(void)
{
	pin_path();
}

/*
 * Before fork: open the namespace so that a child that changes its uid
 * before its first call still shares it (as kernel IPC namespaces are
 * shared).  Quietly: a program that never uses IPC must not see messages,
 * and a failure here is left for a real call to report.
 */
void ns_open_for_fork(void)
{
	int saved = errno;
	struct ns *ns;

	pthread_mutex_lock(&ns_mutex);
	if (!g_ns && !g_ns_err) {
		g_quiet = true;
		if (open_pinned(&ns) == 0)
			__atomic_store_n(&g_ns, ns, __ATOMIC_RELEASE);
		g_quiet = false;
	}
	pthread_mutex_unlock(&ns_mutex);
	errno = saved;
}

struct ns *ns_get(void)
{
	struct ns *ns = __atomic_load_n(&g_ns, __ATOMIC_ACQUIRE);
	int r, saved_errno = errno;

	if (likely(ns)) {
		if (unlikely(!g_ns_used))
			g_ns_used = true;
		return ns;
	}
	pthread_mutex_lock(&ns_mutex);
	g_ns_used = true;
	if (!g_ns && !g_ns_err) {
		r = open_pinned(&ns);
		if (r)
			g_ns_err = -r;
		else
			__atomic_store_n(&g_ns, ns, __ATOMIC_RELEASE);
	}
	ns = g_ns;
	errno = ns ? saved_errno : g_ns_err;
	pthread_mutex_unlock(&ns_mutex);
	return ns;
}

/* ---- include/uipc.h's namespace calls (entry/api.c): 0 or -errno ---- */

int ns_path(const char *name, char *buf, size_t len)
{
	char sp[4096];

	if (!name)
		name = current_name();
	if (!valid_name(name))
		return -EINVAL;
	if (shared_path(name, sp, sizeof(sp)) == 0 && access(sp, F_OK) == 0) {
		char up[4096];

		if (user_path(name, up, sizeof(up)) == 0 && access(up, F_OK) != 0) {
			if (strlen(sp) >= len)
				return -ENAMETOOLONG;
			strcpy(buf, sp);
			return 0;
		}
	}
	return user_path(name, buf, len);
}

int ns_create(const char *name, const struct uipc_ns_opts *opts)
{
	char path[4096];
	struct uipc_ns_opts o = { 0 };
	int r;

	if (!name || !valid_name(name))
		return -EINVAL;
	if (opts)
		o = *opts;
	if (o.shared && !(o.mode & 0077)) {
		say("uipc: a shared namespace needs a group or world mode (e.g. 0660)");
		return -EINVAL;
	}
	r = o.shared ? shared_path(name, path, sizeof(path)) : user_path(name, path, sizeof(path));
	if (!r)
		r = create_file(path, &o);
	return r;
}

/* The shared memory segments of the namespace at PATH are files beside it
 * (PATH.shm-*, see shm.c): they go with it. */
static void remove_segment_files(const char *path)
{
	char pat[4200];
	glob_t g;

	snprintf(pat, sizeof(pat), "%s.shm-*", path);
	if (glob(pat, GLOB_NOSORT, NULL, &g) != 0)
		return;
	for (size_t i = 0; i < g.gl_pathc; i++)
		unlink(g.gl_pathv[i]);
	globfree(&g);
}

int ns_remove(const char *name)
{
	char path[4096];
	int r;

	if (!name || !valid_name(name))
		return -EINVAL;
	r = ns_path(name, path, sizeof(path));
	if (r)
		return r;
	if (unlink(path) < 0)
		return -errno;
	remove_segment_files(path);
	return 0;
}

int ns_select(const char *name)
{
	int r = 0;

	if (!name || !valid_name(name))
		return -EINVAL;
	pthread_mutex_lock(&ns_mutex);
	if (g_ns && !g_ns_used) {
		/* opened only in passing (before a fork): not in use yet */
		ns_unmap(g_ns);
		g_ns = NULL;
	}
	if (g_ns)
		r = -EBUSY;
	else {
		snprintf(g_sel_name, sizeof(g_sel_name), "%s", name);
		g_ns_err = 0;
		unsetenv("UIPC_NS_FILE");
		pin_path();
	}
	pthread_mutex_unlock(&ns_mutex);
	return r;
}

