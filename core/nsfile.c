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
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"

#define DEFAULT_ARENA (4ULL << 30)
#define MIN_ARENA     (64ULL << 20)

static pthread_mutex_t ns_mutex = PTHREAD_MUTEX_INITIALIZER;
static bool g_quiet;      /* no messages: an eager open nobody asked for */
/*
 * The namespace file is chosen once, when the process starts (or by an
 * ancestor: UIPC_NS_FILE), not when it first calls: a process that changes
 * its uid stays in its namespace, as with kernel IPC namespaces.
 */
static char g_pinned[4096];
static int g_pinned_fd = -1; /* an anonymous namespace's inherited arena fd */
static int g_pinned_cfd = -1; /* and the fd that holds its count (UIPC_NS_CFD) */
/* the process's namespace and whether an IPC call has used it: read
 * inline by ns_get (core.h) */
struct ns *uipc_proc_ns;
bool uipc_proc_ns_used;
static int g_ns_err;
/* the namespace uipc_proc_ns was until its file was found truncated
 * (fault.c): let go of when the process enters another (ns_switch) */
static struct ns *g_broken;
__thread struct ns *uipc_tls_nsov;
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

/* ---- naming ----
 *
 * A name is NAME, a namespace private to the user (the file
 * DIR/uipc-UID-NAME), or shared:NAME, a namespace shared between users
 * (DIR/uipc-shared-NAME, made by `uipc ns create --shared`).  The two never
 * stand in for each other: a shared namespace is only reached by naming it
 * so, so that no other user can slip one in under a private name.
 */

#define SHARED_TAG "shared:"
#define SHARED_FILE "uipc-shared-"

/* Whose namespace files a name is resolved for: this process's (its
 * environment, its euid), or another's (nsdoor.c: the environment it was
 * exec'd with, its euid). */
struct naming {
	const char *dir;           /* UIPC_DIR */
	const char *xdg;           /* XDG_RUNTIME_DIR */
	uid_t euid;
};

static struct naming own_naming(void)
{
	return (struct naming){ getenv("UIPC_DIR"), getenv("XDG_RUNTIME_DIR"), geteuid() };
}

/* XDG_RUNTIME_DIR when it is a directory only that user can enter: nobody
 * else can plant or squat a name there.  NULL otherwise. */
static const char *runtime_dir(const struct naming *w)
{
	const char *x = w->xdg;
	struct stat st;

	if (!x || x[0] != '/' || sys_stat(x, &st) != 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != w->euid || (st.st_mode & 0777) != 0700)
		return NULL;
	return x;
}

/* The directory of namespace files: UIPC_DIR; else, for a private
 * namespace of a user other than root, that user's runtime directory if it
 * has one; else /dev/shm (root keeps /dev/shm; shared namespaces live where
 * every user can reach them). */
static const char *naming_dir(const struct naming *w, bool shared)
{
	const char *d = w->dir;

	if (d && *d)
		return d;
	if (!shared && w->euid != 0 && (d = runtime_dir(w)))
		return d;
	return "/dev/shm";
}

static const char *ns_dir(bool shared)
{
	struct naming w = own_naming();

	return naming_dir(&w, shared);
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

/* Split SPEC (NAME or shared:NAME) into the bare name and its kind. */
static bool parse_name(const char *spec, const char **name, bool *shared)
{
	*shared = !strncmp(spec, SHARED_TAG, strlen(SHARED_TAG));
	*name = *shared ? spec + strlen(SHARED_TAG) : spec;
	return valid_name(*name);
}

static const char *current_name(void)
{
	const char *n;

	if (g_sel_name[0])
		return g_sel_name;
	n = getenv("UIPC_NS");
	return n && *n ? n : "default";
}

/* The file of namespace SPEC named for W; -EINVAL for a bad name. */
static int naming_path(const struct naming *w, const char *spec, char *buf, size_t len)
{
	const char *name;
	bool shared;
	int n;

	if (!parse_name(spec, &name, &shared))
		return -EINVAL;
	if (shared)
		n = snprintf(buf, len, "%s/" SHARED_FILE "%s", naming_dir(w, true), name);
	else
		n = snprintf(buf, len, "%s/uipc-%u-%s", naming_dir(w, false), (unsigned)w->euid,
			     name);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The file of namespace SPEC for this process; -EINVAL for a bad name. */
static int spec_path(const char *spec, char *buf, size_t len)
{
	struct naming w = own_naming();

	return naming_path(&w, spec, buf, len);
}

int ns_path_for(const char *spec, const char *dir, const char *xdg, uid_t euid, char *buf,
		size_t len)
{
	struct naming w = { dir, xdg, euid };

	return naming_path(&w, spec && *spec ? spec : "default", buf, len);
}

/* Is PATH (an inherited UIPC_NS_FILE too) a shared namespace's file?  By
 * its name: everything else is held to the rules of a private one. */
static bool path_is_shared(const char *path)
{
	const char *slash = strrchr(path, '/');

	return !strncmp(slash ? slash + 1 : path, SHARED_FILE, strlen(SHARED_FILE));
}

uint64_t ns_random64(void)
{
	uint64_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
		return v;
	/* no entropy yet (early boot): still nothing another user can read */
	return ((uint64_t)mono_ns() * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)getpid() << 32) ^
	       (uint64_t)(uintptr_t)&v;
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

	/* bitmaps first (small, populated at creation), then the sparse
	 * tables; the three populated-page bitmaps (8 bytes each unless the
	 * ids are extended) share a page */
	for (t = 0; t < IPC_NR_IDS; t++) {
		l->used[t] = off;
		off = page_up(off + used_bytes);
	}
	for (t = 0; t < IPC_NR_IDS; t++) {
		l->populated[t] = off;
		off += (pop_bytes + 63) & ~(uint64_t)63;
	}
	off = page_up(off);
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

/* The header and the tables of namespace NS (its base, size and layout
 * set), on memory that reads as zeros: a new file, or one reset_arena
 * cleared.  Everything but populating memory. */
static int init_tables(struct ns *ns, int extended, unsigned mode)
{
	struct uipc_hdr *h = ns->hdr;
	uint32_t euid;
	int r;

	h->version = UIPC_LAYOUT_VERSION;
	h->hdr_size = sizeof(*h);
	h->arena_size = ns->size;
	h->flags = extended ? NS_FLAG_EXTENDED : 0;
	h->ipcmni_shift = (uint32_t)ns->shift;
	h->ipcmni = ns->ipcmni;
	h->min_cycle = extended ? IPC_MIN_CYCLE_EXT : IPC_MIN_CYCLE;
	/* owned by the creator's user namespace (cred.c); the process's own
	 * copy too, for one made anew in place (reset_arena) */
	cred_note_creator(&ns->owner, &euid);
	h->owner = ns->owner;
	h->creator_uid = euid;
	h->mode = mode;
	ulock_init(&h->ns_lock);
	h->procs = ns->lay.procs;
	h->threads = ns->lay.threads;
	r = run_ns_init_hooks(ns);
	if (r)
		return r;
	h->heap_start = ns->lay.heap_start;
	arena_init(h, ns->lay.heap_start);
	return 0;
}

/*
 * What a new namespace's first objects need, populated with it: the first
 * page of each id table (its bit set, as ipc/util.c's populate_entry sets
 * it) and the heap's first chunk (arena.c).  A page first touched costs
 * 2-4 us here, one at a time, and a first create touched four: made with
 * the namespace, which pays 2 us a page, its first create touches none
 * (issue 15's first call).  28 KiB more (a file namespace holds 52 KiB
 * with its first process, within issue 15's 64).  Only for a namespace
 * file, which a first call makes because it is about to use it: an
 * unshare's memfd may never be used (the seed's loop), and would pay 23
 * us for it (four calls).
 */
static int populate_first_use(struct ns *ns)
{
	for (int t = 0; t < IPC_NR_IDS; t++) {
		if (arena_populate(ns, ns->lay.entries[t], UIPC_PAGE))
			return -ENOMEM;
		*(uint64_t *)(ns->base + ns->lay.populated[t]) |= 1;
	}
	return arena_populate_first(ns);
}

/* Build a complete namespace in the mapping at BASE (SIZE bytes);
 * FIRST_USE: with what its first objects need (populate_first_use). */
static int init_arena(char *base, uint64_t size, int extended, unsigned mode, bool first_use)
{
	struct ns tmp = { .base = base, .size = size, .hdr = (struct uipc_hdr *)base };
	int shift = extended ? IPCMNI_EXT_SHIFT : IPCMNI_SHIFT;
	uint64_t eager_end, end;
	int r;

	end = compute_layout(shift, &tmp.lay, &eager_end);
	if (end + MIN_ARENA / 2 > size)
		return -EINVAL;
	tmp.shift = shift;
	tmp.ipcmni = 1 << shift;
	if (arena_populate(&tmp, UIPC_PAGE, eager_end - UIPC_PAGE))
		return -ENOMEM;
	r = init_tables(&tmp, extended, mode);
	if (!r && first_use)
		r = populate_first_use(&tmp);
	if (r)
		return r;
	atomic_store_explicit(&tmp.hdr->magic, UIPC_MAGIC, memory_order_release);
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
	struct ns *ns = __atomic_load_n(&uipc_proc_ns, __ATOMIC_ACQUIRE);
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

/*
 * The directory of PATH, opened (O_PATH) for the *at() calls that follow,
 * so that the file name is resolved in the directory that was checked.  A
 * directory others can write without the sticky bit lets them rename our
 * files away and put theirs in place: refused.  *BASE: the file's name.
 */
static int open_dir_of(const char *path, const char **base)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	struct stat st;
	int dfd;

	if (!slash) {
		snprintf(dir, sizeof(dir), ".");
		*base = path;
	} else {
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
		if (!dir[0])
			snprintf(dir, sizeof(dir), "/");
		*base = slash + 1;
	}
	dfd = sys_open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (fstat(dfd, &st) < 0) {
		int e = errno;

		sys_close(dfd);
		return -e;
	}
	if ((st.st_mode & 0022) && !(st.st_mode & S_ISVTX)) {
		say("uipc: %s can be written by other users and is not sticky: they could "
		    "replace namespace files there; refusing it (chmod +t, or use another "
		    "UIPC_DIR)", dir);
		sys_close(dfd);
		return -EACCES;
	}
	return dfd;
}

/* Who may have planted the file at PATH: a private namespace is the user's
 * own regular file, with one link (and no group or other bits:
 * check_private_mode); a shared one a regular file with one link (its mode says who may open it, and the open
 * itself checked that).  Message and -EACCES otherwise. */
static int check_file(const struct stat *st, const char *path, bool shared)
{
	if (!S_ISREG(st->st_mode)) {
		say("uipc: %s is not a regular file; refusing it", path);
		return -EINVAL;
	}
	if (st->st_nlink != 1) {
		say("uipc: %s has %lu links (uid %u); a namespace file has one; refusing it",
		    path, (unsigned long)st->st_nlink, (unsigned)st->st_uid);
		return -EACCES;
	}
	if (shared)
		return 0;
	if (st->st_uid != geteuid()) {
		say("uipc: %s belongs to uid %u, not to this user (%u); refusing it.  Its "
		    "owner or root can remove it; or choose another namespace name or UIPC_DIR",
		    path, (unsigned)st->st_uid, (unsigned)geteuid());
		return -EACCES;
	}
	return 0;
}

/* A private namespace's mode keeps other users out.  (Checked after the
 * header, so that a file that is no namespace at all is called so.) */
static int check_private_mode(const struct stat *st, const char *path)
{
	if (st->st_mode & 0077) {
		say("uipc: %s is a private namespace but its mode %04o lets other users in; "
		    "refusing it (a namespace for several users is made with `uipc ns create "
		    "--shared` and named shared:NAME)", path, (unsigned)(st->st_mode & 07777));
		return -EACCES;
	}
	return 0;
}

/* Is the header of the file (ST, FD) one this uipc can map safely? */
static int check_header(int fd, const struct stat *st, const char *path, struct uipc_hdr *hdr)
{
	struct ns_layout l;
	uint64_t eager_end;

	if ((uint64_t)st->st_size < sizeof(*hdr) ||
	    pread(fd, hdr, sizeof(*hdr), 0) != (ssize_t)sizeof(*hdr)) {
		say("uipc: %s is not a uipc namespace (truncated: %lld bytes)", path,
		    (long long)st->st_size);
		return -EINVAL;
	}
	if (hdr->magic != UIPC_MAGIC) {
		say("uipc: %s is not a uipc namespace (bad magic)", path);
		return -EINVAL;
	}
	if (hdr->version != UIPC_LAYOUT_VERSION || hdr->hdr_size != sizeof(*hdr)) {
		/* a uipc of another version made it (an upgrade with the file
		 * kept): its objects are that version's to read; say how to
		 * start afresh */
		say("uipc: %s has namespace layout version %u; this uipc reads version %u "
		    "(made by another uipc version: its objects are readable only by that "
		    "version; `uipc ns rm` of its name removes it)",
		    path, hdr->version, UIPC_LAYOUT_VERSION);
		return -EINVAL;
	}
	if (hdr->arena_size != (uint64_t)st->st_size || hdr->arena_size < MIN_ARENA ||
	    (hdr->ipcmni_shift != IPCMNI_SHIFT && hdr->ipcmni_shift != IPCMNI_EXT_SHIFT) ||
	    hdr->heap_start >= hdr->arena_size) {
		say("uipc: %s is a damaged uipc namespace (size %lld, header says %llu)",
		    path, (long long)st->st_size, (unsigned long long)hdr->arena_size);
		return -EINVAL;
	}
	if (compute_layout((int)hdr->ipcmni_shift, &l, &eager_end) + MIN_ARENA / 2 >
		    hdr->arena_size || !layout_matches(hdr, &l)) {
		say("uipc: %s is a damaged uipc namespace (its tables are not where they "
		    "belong)", path);
		return -EINVAL;
	}
	/* the owner's id maps bound cred.c's walks of them (this checked copy
	 * is the one the process keeps: ns_view) */
	if (hdr->owner.nuid > OWNER_MAP_MAX || hdr->owner.ngid > OWNER_MAP_MAX) {
		say("uipc: %s is a damaged uipc namespace (its owner's id maps)", path);
		return -EINVAL;
	}
	return 0;
}

/* an -errno in a pointer (map_ns) */
#define IS_NS_ERR(p) ((uintptr_t)(p) >= (uintptr_t)-4095)

/* The process-local view, named PATH, of the checked arena mapped at M
 * (header HDR, file ST): the ns, or -errno as a pointer (IS_NS_ERR); M is
 * unmapped on failure. */
static struct ns *ns_view(void *m, const struct uipc_hdr *hdr, const struct stat *st,
			  const char *path)
{
	uint64_t eager_end;
	struct ns *ns = calloc(1, sizeof(*ns));

	if (!ns) {
		sys_munmap(m, hdr->arena_size);
		return (struct ns *)(intptr_t)-ENOMEM;
	}
	ns->base = m;
	ns->size = hdr->arena_size;
	ns->hdr = m;
	ns->shift = (int)hdr->ipcmni_shift;
	ns->ipcmni = 1 << ns->shift;
	ns->file_uid = st->st_uid;
	ns->file_gid = st->st_gid;
	ns->dev = st->st_dev;
	ns->ino = st->st_ino;
	ns->hold_fd = -1;
	ns->owner = hdr->owner;
	ns->cnt_fd = -1;
	ns->proc_idx = ns->stale_idx = UINT32_MAX;
	compute_layout(ns->shift, &ns->lay, &eager_end);
	snprintf(ns->path, sizeof(ns->path), "%s", path);
	ns_fault_register(ns);    /* truncation: errors, not SIGBUS (fault.c) */
	return ns;
}

/* Map the checked arena of FD (header HDR, file ST) and make its process-
 * local view, named PATH: the ns, or -errno as a pointer (IS_NS_ERR). */
static struct ns *map_ns(int fd, const struct uipc_hdr *hdr, const struct stat *st,
			 const char *path)
{
	void *m = map_arena(fd, hdr->arena_size);

	if (m == MAP_FAILED)
		return (struct ns *)(intptr_t)-errno;
	return ns_view(m, hdr, st, path);
}

/* ---- the marker: which namespace a process is in, for others ----
 *
 * The kernel says which IPC namespace a process is in through
 * /proc/PID/ns/ipc.  uipc says it in /proc/PID/maps: a process maps one
 * page of its namespace's file, PROT_NONE, at NS_MARK_OFF (past any arena:
 * never touched, no memory), from the moment it enters the namespace (its
 * first call, unshare, setns).  A fork child inherits it with the memory;
 * an exec'd image has none until its first call and is found through its
 * environment (nsdoor.c reads both).
 */
static void ns_mark(struct ns *ns, int fd)
{
	void *m;

	if (ns->mark || ns->size > NS_MARK_OFF)
		return;
	m = sys_mmap(NULL, UIPC_PAGE, PROT_NONE, MAP_SHARED | MAP_NORESERVE, fd,
		     (off_t)NS_MARK_OFF);
	ns->mark = m == MAP_FAILED ? NULL : m;
}

static void ns_unmark(struct ns *ns)
{
	if (ns->mark)
		sys_munmap(ns->mark, UIPC_PAGE);
	ns->mark = NULL;
}

/* A namespace file this process built, still open and mapped: the process
 * that makes its namespace's file goes on in that mapping, whose pages its
 * building touched, rather than map it again and fault each page in anew
 * (1-3 us a page here, six or more in a first create: issue 15). */
struct built_file {
	int fd;
	void *map;
	uint64_t size;
};

/* Map the namespace file FD (named PATH) after checking it.  ANY_OWNER:
 * the file was handed over explicitly (setns), and opening it read-write
 * was the permission check: another user's private file is accepted.
 * BUILT: the file's mapping already, by this process, which built it
 * (unmapped if the file is refused). */
static int map_checked_built(int fd, const char *path, struct ns **out, bool shared,
			     bool any_owner, const struct built_file *built)
{
	struct stat st;
	struct uipc_hdr hdr;
	struct ns *ns;
	int r = fstat(fd, &st) < 0 ? -errno : 0;

	if (!r)
		r = check_file(&st, path, shared || any_owner);
	if (!r)
		r = check_header(fd, &st, path, &hdr);
	if (!r && !shared)
		r = check_private_mode(&st, path);
	if (!r && built && hdr.arena_size != built->size)
		r = -EINVAL;
	if (r && built)
		sys_munmap(built->map, built->size);
	if (r)
		return r;
	ns = built ? ns_view(built->map, &hdr, &st, path) : map_ns(fd, &hdr, &st, path);
	if (IS_NS_ERR(ns))
		return (int)(intptr_t)ns;
	ns->file_mode = st.st_mode & 0777;
	ns->shared = shared;
	ns->anon_fd = -1;
	*out = ns;
	return 0;
}

static int map_checked(int fd, const char *path, struct ns **out, bool shared, bool any_owner)
{
	return map_checked_built(fd, path, out, shared, any_owner, NULL);
}

/* Put the finished file TMP in place as NAME (in DFD), never replacing a
 * file there: renameat2(RENAME_NOREPLACE) keeps the link count at 1 all
 * along; where the file system lacks it, link + unlink. */
static int publish(int dfd, const char *tmp, const char *name)
{
	if (renameat2(dfd, tmp, dfd, name, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	if (linkat(dfd, tmp, dfd, name, 0) < 0)
		return -errno;
	unlinkat(dfd, tmp, 0);
	return 0;
}

/* A new file under a name nobody can guess (so nobody can take it first),
 * O_EXCL: another try on the rare clash.  Its fd; *TMP: the name. */
static int create_tmp(int dfd, const char *name, char *tmp, size_t len)
{
	for (int tries = 0; tries < 8; tries++) {
		int fd;

		snprintf(tmp, len, "%s.tmp.%016llx", name, (unsigned long long)ns_random64());
		fd = sys_openat(dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			return fd < 0 ? -errno : fd;
	}
	return -EEXIST;
}

/* Fill the new file FD: its mode, size and a complete namespace; left
 * mapped at *MAP when MAP is not NULL. */
static int build_file(int fd, unsigned mode, uint64_t size, int extended, void **map)
{
	void *m;
	int r;

	if (fchmod(fd, mode) < 0 || ftruncate(fd, (off_t)size) < 0)
		return -errno;
	m = map_arena(fd, size);
	if (m == MAP_FAILED)
		return -errno;
	r = init_arena(m, size, extended, mode, true);
	if (r || !map)
		sys_munmap(m, size);
	else
		*map = m;
	return r;
}

/* Create the namespace file PATH: built whole under a temporary name, then
 * put in place atomically, so that nobody ever sees half a namespace.  With
 * KEEP, the published file stays open and mapped there (else KEEP->fd < 0). */
static int create_file(const char *path, const struct uipc_ns_opts *o, struct built_file *keep)
{
	char tmp[4200];
	const char *base;
	unsigned mode = o && o->mode ? (o->mode & 0777) : 0600;
	uint64_t size = o && o->size ? o->size : (uint64_t)env_num("UIPC_NS_SIZE", (int64_t)DEFAULT_ARENA);
	int extended = o ? o->extended : (env_num("UIPC_NS_EXTENDED", 0) != 0);
	int dfd, fd, r;

	size = page_up(size);
	if (size < MIN_ARENA * 2) {
		say("uipc: a namespace needs at least %llu MiB of arena (asked for %llu bytes)",
		    (unsigned long long)(MIN_ARENA * 2 >> 20), (unsigned long long)size);
		return -EINVAL;
	}
	dfd = open_dir_of(path, &base);
	if (dfd < 0)
		return dfd;
	fd = create_tmp(dfd, base, tmp, sizeof(tmp));
	if (fd < 0) {
		sys_close(dfd);
		return fd;
	}
	if (keep)
		keep->size = size;
	r = build_file(fd, mode, size, extended, keep ? &keep->map : NULL);
	if (!r)
		r = publish(dfd, tmp, base);
	unlinkat(dfd, tmp, 0);
	sys_close(dfd);
	if (keep && !r) {
		keep->fd = fd;
		return 0;
	}
	if (keep && keep->map)
		sys_munmap(keep->map, size);
	sys_close(fd);
	return r;
}

/* Why the open of PATH (BASE in DFD) failed with R (-ELOOP: a symbolic
 * link; -EACCES: the mode), saying who owns what is there: a name taken
 * by another user must be recognisable as such. */
static void explain_refusal(int dfd, const char *base, const char *path, int r, bool shared)
{
	struct stat st;

	if (sys_fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		st.st_uid = (uid_t)-1;
	if (r == -ELOOP)
		say("uipc: %s is a symbolic link (uid %u); refusing it", path, (unsigned)st.st_uid);
	else if (!shared && st.st_uid != geteuid())
		check_file(&st, path, false);  /* "belongs to uid ..." */
	else
		say("uipc: %s (uid %u, mode %04o): no permission to open it", path,
		    (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
}

/* Open and check the namespace file PATH (never through a symbolic link). */
static int open_path(const char *path, struct ns **out, bool shared)
{
	const char *base;
	int dfd = open_dir_of(path, &base);
	int fd, r;

	if (dfd < 0)
		return dfd;
	fd = sys_openat(dfd, base, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	r = fd < 0 ? -errno : 0;
	if (r == -ELOOP || r == -EACCES)
		explain_refusal(dfd, base, path, r, shared);
	sys_close(dfd);
	if (r)
		return r;
	r = map_checked(fd, path, out, shared, false);
	if (!r)
		ns_mark(*out, fd);       /* the process's namespace from now on */
	sys_close(fd);
	return r;
}

/* Open the namespace file PATH, creating it first if it is a private one
 * that does not exist yet (a shared one is made by `uipc ns create
 * --shared`: with its group and mode). */
static int open_or_create(const char *path, struct ns **out)
{
	bool shared = path_is_shared(path);
	int r;

	for (int tries = 0; tries < 3; tries++) {
		r = open_path(path, out, shared);
		if (r != -ENOENT)
			return r;
		if (shared) {
			say("uipc: shared namespace %s does not exist (create it with `uipc ns "
			    "create --shared --mode 0660 NAME`)", path);
			return r;
		}
		struct built_file b = { -1, NULL, 0 };

		r = create_file(path, NULL, &b);
		if (r && r != -EEXIST) {
			say("uipc: cannot create namespace file %s: %s", path, strerror(-r));
			return r;
		}
		if (!r) {
			r = map_checked_built(b.fd, path, out, shared, false, &b);
			if (!r)
				ns_mark(*out, b.fd);
			sys_close(b.fd);
			return r;
		}
	}
	return -ENOENT;
}

static int map_anon(int fd, const char *path, struct ns **out);
static int reopen_fd(int fd, int flags);
static void note_shared(struct ns *ns);

static int open_pinned(struct ns **out)
{
	if (g_pinned_fd >= 0) {
		int r = map_anon(g_pinned_fd, g_pinned, out);

		if (!r)
			(*out)->cnt_fd = g_pinned_cfd;
		if (!r)
			ns_mark(*out, g_pinned_fd);
		return r;
	}
	if (!g_pinned[0]) {
		say("uipc: invalid namespace name '%s' (NAME or shared:NAME; NAME: letters, "
		    "digits, . _ -; at most %d)", current_name(), UIPC_NS_NAME_MAX);
		return -EINVAL;
	}
	return open_or_create(g_pinned, out);
}

static void ns_unmap(struct ns *ns)
{
	ns_unmark(ns);
	if (ns->hold_fd >= 0)
		sys_close(ns->hold_fd);
	ns_fault_unregister(ns);
	sys_munmap(ns->base, ns->size);
	free(ns);
}

/* Choose the file for this process and its children (UIPC_NS_FILE).  An
 * inherited one is checked like any other each time it is opened (by its
 * name's kind), so a file planted before the first process chose it is
 * refused by the children too. */
static void pin_anon(void);

static void pin_path(void)
{
	const char *f = getenv("UIPC_NS_FILE");

	if (!g_sel_name[0])
		pin_anon();

	if (!g_sel_name[0] && f && *f && strlen(f) < sizeof(g_pinned)) {
		snprintf(g_pinned, sizeof(g_pinned), "%s", f);
		return;
	}
	if (spec_path(current_name(), g_pinned, sizeof(g_pinned)) != 0) {
		g_pinned[0] = 0;
		return;
	}
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

	crit_mutex_lock(&ns_mutex);
	if (!uipc_proc_ns && !g_ns_err) {
		g_quiet = true;
		if (open_pinned(&ns) == 0) {
			__atomic_store_n(&uipc_proc_ns, ns, __ATOMIC_RELEASE);
			cred_invalidate();   /* judged against its owner (cred.c) */
		}
		g_quiet = false;
	}
	note_shared(uipc_proc_ns);    /* the child holds it too */
	note_shared(uipc_tls_nsov);   /* (this thread's, if its own) */
	crit_mutex_unlock(&ns_mutex);
	errno = saved;
}

struct ns *ns_get_slow(void)
{
	struct ns *ns = uipc_tls_nsov;
	int r, saved_errno;

	if (unlikely(ns)) {
		/* this thread's own (proc.c); truncated under us: EIDRM */
		if (unlikely(__atomic_load_n(&ns->broken, __ATOMIC_ACQUIRE))) {
			errno = EIDRM;
			return NULL;
		}
		return ns;
	}
	ns = __atomic_load_n(&uipc_proc_ns, __ATOMIC_ACQUIRE);
	if (likely(ns)) {
		if (unlikely(!uipc_proc_ns_used))
			uipc_proc_ns_used = true;
		return ns;
	}
	saved_errno = errno;	/* not before: errno's address is a call */
	crit_mutex_lock(&ns_mutex);
	uipc_proc_ns_used = true;
	if (!uipc_proc_ns && !g_ns_err) {
		r = open_pinned(&ns);
		if (r) {
			g_ns_err = -r;
		} else {
			__atomic_store_n(&uipc_proc_ns, ns, __ATOMIC_RELEASE);
			cred_invalidate();   /* judged against its owner (cred.c) */
		}
	}
	ns = uipc_proc_ns;
	errno = ns ? saved_errno : g_ns_err;
	crit_mutex_unlock(&ns_mutex);
	return ns;
}

/*
 * NS's file was truncated under us (fault.c, from the SIGBUS handler: only
 * stores): every later call fails with EIDRM, as ns_get then finds no
 * namespace and the error.  The mapping stays, for the call in progress.
 */
void ns_mark_broken(struct ns *ns)
{
	__atomic_store_n(&ns->broken, true, __ATOMIC_RELEASE);
	if (__atomic_load_n(&uipc_proc_ns, __ATOMIC_ACQUIRE) == ns) {
		g_ns_err = EIDRM;
		__atomic_store_n(&g_broken, ns, __ATOMIC_RELEASE);
		__atomic_store_n(&uipc_proc_ns, NULL, __ATOMIC_RELEASE);
	}
}

/* ---- include/uipc.h's namespace calls (entry/api.c): 0 or -errno ---- */

int ns_path(const char *name, char *buf, size_t len)
{
	return spec_path(name ? name : current_name(), buf, len);
}

int ns_create(const char *spec, const struct uipc_ns_opts *opts)
{
	char path[4096], full[UIPC_NS_NAME_MAX + sizeof(SHARED_TAG)];
	struct uipc_ns_opts o = { 0 };
	const char *name;
	bool shared;

	if (!spec || !parse_name(spec, &name, &shared))
		return -EINVAL;
	if (opts)
		o = *opts;
	o.shared = o.shared || shared;
	if (o.shared && !(o.mode & 0077)) {
		say("uipc: a shared namespace needs a group or world mode (e.g. 0660)");
		return -EINVAL;
	}
	if (!o.shared && (o.mode & 0077)) {
		say("uipc: a private namespace has no group or other bits (mode %04o asked); "
		    "for several users, create a shared one (--shared)", o.mode);
		return -EINVAL;
	}
	snprintf(full, sizeof(full), "%s%s", o.shared ? SHARED_TAG : "", name);
	if (spec_path(full, path, sizeof(path)))
		return -ENAMETOOLONG;
	return create_file(path, &o, NULL);
}

int ns_make_missing(const char *path)
{
	char own[64];
	const char *slash = strrchr(path, '/');
	int r;

	/* only a private namespace of this user, as its first call makes it */
	snprintf(own, sizeof(own), "uipc-%u-", (unsigned)geteuid());
	if (!slash || strncmp(slash + 1, own, strlen(own)))
		return -ENOENT;
	r = create_file(path, NULL, NULL);
	return r == -EEXIST ? 0 : r;
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

	if (!name)
		return -EINVAL;
	r = spec_path(name, path, sizeof(path));
	if (r)
		return r;
	if (unlink(path) < 0)
		return -errno;
	remove_segment_files(path);
	return 0;
}

int ns_select(const char *name)
{
	const char *bare;
	bool shared;
	int r = 0;

	if (!name || !parse_name(name, &bare, &shared))
		return -EINVAL;
	crit_mutex_lock(&ns_mutex);
	if (uipc_proc_ns && !uipc_proc_ns_used) {
		/* opened only in passing (before a fork): not in use yet */
		ns_unmap(uipc_proc_ns);
		uipc_proc_ns = NULL;
	}
	if (uipc_proc_ns)
		r = -EBUSY;
	else {
		snprintf(g_sel_name, sizeof(g_sel_name), "%s", name);
		g_ns_err = 0;
		g_pinned_fd = -1;
		g_pinned_cfd = -1;
		unsetenv("UIPC_NS_FD");
		unsetenv("UIPC_NS_CFD");
		unsetenv("UIPC_NS_FILE");
		pin_path();
	}
	crit_mutex_unlock(&ns_mutex);
	return r;
}


/* ---- anonymous namespaces: unshare(CLONE_NEWIPC) ----
 *
 * An anonymous namespace's arena is a memfd: no name in any directory, so
 * the kernel frees it when the last member's fd and mapping go, whatever
 * killed them (see docs/namespaces.md).  Members find it through an fd
 * they inherit (not close-on-exec), named by UIPC_NS_FD in the
 * environment.  Its segments are slots of the same memfd (shm.c), so
 * nothing of it is ever in a directory.  UIPC_NS_FILE names it in messages.
 */
#define NS_FD_ENV "UIPC_NS_FD"
#define NS_CFD_ENV "UIPC_NS_CFD"
#define ANON_FD_BASE 900     /* out of the way of the program's low fds */

/* Map the arena of the anonymous namespace FD (its segments named after
 * PATH).  Joined by possession of the fd, as a kernel namespace is joined
 * through an inherited reference: no name checks, the header's are made. */
static int map_anon(int fd, const char *path, struct ns **out)
{
	struct stat st;
	struct uipc_hdr hdr;
	struct ns *ns;
	int r;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != ANON_FILE_SIZE ||
	    pread(fd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) || hdr.arena_size > ANON_SLOT)
		return -EINVAL;
	/* the file is the arena, then the segments' slots (shm.c) */
	st.st_size = (off_t)hdr.arena_size;
	r = check_header(fd, &st, path, &hdr);
	if (r)
		return r;
	ns = map_ns(fd, &hdr, &st, path);
	if (IS_NS_ERR(ns))
		return (int)(intptr_t)ns;
	ns->file_mode = 0600;
	ns->anon_fd = fd;
	*out = ns;
	return 0;
}

/* The inherited anonymous namespace, if the environment names one whose
 * fd is open (an fd closed by the program is no namespace). */
static void pin_anon(void)
{
	const char *v = getenv(NS_FD_ENV);
	char *end;
	long fd;

	if (!v || !*v)
		return;
	fd = strtol(v, &end, 10);
	if (*end || fd < 0 || fd > INT_MAX || fcntl((int)fd, F_GETFD) < 0)
		return;
	g_pinned_fd = (int)fd;
	v = getenv(NS_CFD_ENV);
	if (v && *v) {
		fd = strtol(v, &end, 10);
		if (!*end && fd >= 0 && fd <= INT_MAX && fcntl((int)fd, F_GETFD) >= 0)
			g_pinned_cfd = (int)fd;
	}
}

/* The name a new anonymous namespace goes by in messages (UIPC_NS_FILE):
 * no file ever has it.  This process's pid and a count: no system call. */
static int anon_path(char *buf, size_t len)
{
	static _Atomic unsigned long made;
	int n = snprintf(buf, len, "%s/uipc-%u-anon-%d-%lu", ns_dir(false),
			 (unsigned)cur_cred()->euid, cur_pid(), atomic_fetch_add(&made, 1));

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* A new memfd, sized for the arena and the segments' slots after it
 * (sparse: no memory), mode 0600: its fd, or -errno */
static int anon_memfd(void)
{
	int fd = (int)sys_syscall(SYS_memfd_create, "uipc-ns", MFD_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0600) == 0 && ftruncate(fd, (off_t)ANON_FILE_SIZE) == 0)
		return fd;
	r = -errno;
	sys_close(fd);
	return r;
}

/* The arena built whole in the mapping M of the new memfd FD, before
 * anyone can see it; FD moved above ANON_FD_BASE (not close-on-exec: exec
 * keeps it): the namespace's view, or -errno as a pointer */
static struct ns *anon_build(int fd, void *m, uint64_t size, const char *path)
{
	int extended = env_num("UIPC_NS_EXTENDED", 0) != 0;
	struct stat st;
	struct ns *ns;
	int hi, r = init_arena(m, size, extended, 0600, false);

	if (!r && fstat(fd, &st) < 0)
		r = -errno;
	hi = r ? -1 : fcntl(fd, F_DUPFD, ANON_FD_BASE);
	if (!r && hi < 0)
		r = -errno;
	if (r) {
		sys_munmap(m, size);
		return (struct ns *)(intptr_t)r;
	}
	ns = ns_view(m, m, &st, path);
	if (IS_NS_ERR(ns)) {
		sys_close(hi);
		return ns;
	}
	ns->file_mode = 0600;
	ns->anon_fd = hi;
	return ns;
}

/* ---- user.max_ipc_namespaces ----
 *
 * The kernel counts a user's IPC namespaces (ucounts) and refuses a new one
 * past /proc/sys/user/max_ipc_namespaces with ENOSPC.  uipc counts the
 * user's anonymous namespaces the same way, with the kernel keeping the
 * count so that no death can leave it wrong: a per-user file (empty, in
 * /dev/shm or UIPC_NSCOUNT_DIR, never in UIPC_DIR) whose byte K is locked
 * (an OFD lock) by the open file description that namespace's members hold
 * (fd 900 and up, inherited by fork and exec like the memfd, named by
 * UIPC_NS_CFD).  The lock goes when the last member's fd goes, however it
 * goes, as the namespace does.  A live namespace is a locked byte.  A new
 * one locks the first free byte below the limit, from where this process
 * last found one; live bytes at or past the limit (a limit lowered since)
 * are counted one by one.  The limit: UIPC_MAX_IPC_NAMESPACES (tests), or
 * the host's sysctl (read once), which uipc never changes.
 */
static long g_max_ipcns = -2;   /* -2: not read yet; -1: none */

static long max_ipc_namespaces(void)
{
	const char *e = getenv("UIPC_MAX_IPC_NAMESPACES");
	char buf[32], *end;
	long v;

	if (e && *e) {
		v = strtol(e, &end, 10);
		if (!*end && v >= 0)
			return v;
	}
	if (g_max_ipcns == -2) {
		int fd = sys_open("/proc/sys/user/max_ipc_namespaces", O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

		if (fd >= 0)
			sys_close(fd);
		g_max_ipcns = -1;
		if (n > 0) {
			buf[n] = 0;
			v = strtol(buf, &end, 10);
			if (end != buf && v >= 0)
				g_max_ipcns = v;
		}
	}
	return g_max_ipcns;
}

/* the path of the user's count file */
static void count_path(char *path, size_t len)
{
	const char *d = getenv("UIPC_NSCOUNT_DIR");

	/* named by the uid outside any user namespace: a process that made
	 * one (unshare -r --ipc) lets go of the count in the file it took
	 * it in, and counts there again */
	snprintf(path, len, "%s/.uipc-%u-ipcns", d && *d ? d : "/dev/shm",
		 (unsigned)cred_global_euid());
}

/* the user's count file, opened anew (a new open file description: its
 * locks are its own; O_CREAT in FLAGS makes a missing one), or -1: none,
 * or not counted (a file not the user's own) */
static int count_open(const char *path, int flags)
{
	struct stat st;
	/* the owner as fstat shows it: in this process's own view; an
	 * unmapped euid (a user namespace whose maps are not written yet)
	 * would match any unmapped owner, so it counts nowhere */
	uid_t me = geteuid();
	int fd = sys_open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | flags, 0600);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != me ||
	    me == 65534 || (st.st_mode & 022)) {
		sys_close(fd);
		return -1;
	}
	return fd;
}

static bool byte_lock(int fd, long k, short type, int cmd, struct flock *out)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = k,
			    .l_len = cmd == F_OFD_GETLK ? 0 : 1 };

	if (fcntl(fd, cmd, &fl) < 0)
		return false;
	if (out)
		*out = fl;
	return true;
}

/* live namespaces other than the caller's (locks at K and past), counted
 * up to CAP: enough to compare with a limit, one system call a namespace */
static long count_live(int fd, long k, long cap)
{
	struct flock fl;
	long n = 0;

	while (n < cap && byte_lock(fd, k, F_WRLCK, F_OFD_GETLK, &fl) && fl.l_type != F_UNLCK) {
		n++;
		k = fl.l_start + 1;
	}
	return n;
}

/* Lock the first free byte of the count file FD below MAX, from the
 * process's hint: 0 (*K the byte), -ENOSPC, -EAGAIN (the file is being
 * removed: count_file_tidy holds all of it), -1 (not counted) */
static int claim_byte(int fd, long max, long *k)
{
	static _Atomic long hint;
	long start = atomic_load(&hint), i;
	struct flock fl;

	if (start >= max)
		start = 0;
	for (i = start;;) {
		if (byte_lock(fd, i, F_WRLCK, F_OFD_SETLK, NULL))
			break;
		if (errno != EAGAIN && errno != EACCES)
			return -1;
		/* one-byte locks are namespaces; one over the whole file is a
		 * remover's */
		if (byte_lock(fd, i, F_WRLCK, F_OFD_GETLK, &fl) && fl.l_type != F_UNLCK &&
		    fl.l_start == 0 && fl.l_len == 0)
			return -EAGAIN;
		if (++i >= max)
			i = 0;
		if (i == start)
			return -ENOSPC;
	}
	atomic_store(&hint, i + 1);
	*k = i;
	return 0;
}

/* A count for a new anonymous namespace: the fd holding it (at or above
 * ANON_FD_BASE, not close-on-exec), -1 when it cannot be counted, or
 * -ENOSPC past the limit */
static int ns_count_claim(void)
{
	long max = max_ipc_namespaces(), k;
	char path[4096];
	struct stat st;
	int fd = -1, hi, r = -1, tries;

	if (max < 0)
		return -1;
	if (max == 0)
		return -ENOSPC;
	count_path(path, sizeof(path));
	/* a file removed under us (its last count gone, count_file_tidy) is
	 * no count: open the new one */
	for (tries = 0; tries < 64; tries++) {
		fd = count_open(path, O_CREAT);
		if (fd < 0)
			return -1;
		r = claim_byte(fd, max, &k);
		if (r == 0 && fstat(fd, &st) == 0 && st.st_nlink > 0)
			break;
		sys_close(fd);
		fd = -1;
		if (r == -ENOSPC)
			return r;
		if (r == -1)
			return -1;
		sched_yield();
	}
	if (fd < 0)
		return -1;
	/* live ones at or past the limit (it was higher when they were made) */
	if (count_live(fd, max, 1) && count_live(fd, 0, max) + 1 > max) {
		sys_close(fd);
		return -ENOSPC;
	}
	hi = fcntl(fd, F_DUPFD, ANON_FD_BASE);
	sys_close(fd);
	return hi < 0 ? -1 : hi;
}

/* The count file goes with the user's last counted namespace, so that
 * /dev/shm is left as the user found it: whoever lets go of a count and
 * then finds no byte locked (a lock over the whole file succeeds) removes
 * the file while holding that lock; a claimer that meets the lock, or
 * locked a byte of a removed file, opens the file anew.  A count whose
 * last holder was killed leaves the file until the user's next count is
 * let go of. */
static void count_file_tidy(void)
{
	struct flock all = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct stat a, b;
	char path[4096];
	int fd;

	ns_helpers_settle();     /* their copies of our count's fd closed */
	count_path(path, sizeof(path));
	fd = count_open(path, 0);
	if (fd < 0)
		return;
	if (fcntl(fd, F_OFD_SETLK, &all) == 0 && fstat(fd, &a) == 0 &&
	    lstat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		unlink(path);
	sys_close(fd);
}

/* let go of the count held by FD (a namespace this process leaves) */
void ns_count_let_go(int fd)
{
	if (fd < 0)
		return;
	sys_close(fd);
	count_file_tidy();
}

int ns_count_room(struct ns *ns)
{
	long max;

	if (ns->cnt_fd < 0 || (max = max_ipc_namespaces()) < 0)
		return 0;
	/* the kernel builds the new one before it frees the old one: both
	 * are counted for a moment */
	return count_live(ns->cnt_fd, 0, max) + 2 > max ? -ENOSPC : 0;
}

int ns_anon_new(struct ns **out)
{
	uint64_t size = page_up((uint64_t)env_num("UIPC_NS_SIZE", (int64_t)DEFAULT_ARENA));
	char path[4096];
	struct ns *ns;
	void *m;
	int fd, cfd, r;

	if (size < MIN_ARENA * 2 || size > ANON_SLOT)
		return -EINVAL;
	r = anon_path(path, sizeof(path));
	if (r)
		return r;
	cfd = ns_count_claim();
	if (cfd == -ENOSPC)
		return cfd;
	fd = anon_memfd();
	if (fd < 0) {
		if (cfd >= 0)
			sys_close(cfd);
		return fd;
	}
	/* mapped once: built in place, then used (nobody else sees it yet) */
	m = map_arena(fd, size);
	ns = m == MAP_FAILED ? (struct ns *)(intptr_t)-errno : anon_build(fd, m, size, path);
	sys_close(fd);
	if (IS_NS_ERR(ns)) {
		if (cfd >= 0)
			sys_close(cfd);
		return (int)(intptr_t)ns;
	}
	ns->cnt_fd = cfd;
	ns->created_here = true;
	ns->hdr->creator_pid = cur_pid();
	*out = ns;
	return 0;
}

void ns_anon_reown(struct ns *ns)
{
	/* nobody else has seen it yet: the header is ours to write */
	cred_note_owner(&ns->owner);
	ns->hdr->owner = ns->owner;
	ns->hdr->creator_uid = (uint32_t)geteuid();
}

/* ---- an unshare's new namespace made of the old one (seed 003) ----
 *
 * The kernel builds a namespace in about 20 us and frees the old one in a
 * work queue.  A new memfd costs uipc about as much in system calls alone
 * (memfd_create, ftruncate, mmap, the first page faults, then munmap and
 * the final close of the old one).  But when nobody else can ever see the
 * namespace being left, that namespace is dead the moment the caller
 * leaves it, and its memfd, mapping, populated pages, fd number, marker
 * and environment entries can simply become the new namespace's: what its
 * old incarnation wrote is zeroed (a few pages: the slots, the id tables'
 * populated pages, the heap up to its break), the header is built again,
 * and segments' slots are punched.  No system call unless segments had
 * memory.  It keeps the old namespace's inode number, which the kernel
 * also gives again to a new namespace once the old one is freed.
 *
 * "Nobody else": an anonymous namespace this process image made
 * (created_here), whose ANON_PRIVATE state no fork, exec, spawn, clone,
 * door or join has changed (ns_note_shared, and door openers in other
 * processes through the header: a claim by compare-and-swap, so that a
 * door opened meanwhile keeps the new incarnation shared); no attachment
 * of it mapped here; one thread (__libc_single_threaded: another thread
 * could be inside a call in it).  Small: a namespace whose memory is large
 * is left to the kernel to free, as before.  Never in trap mode
 * (ns_recycle_never): it is for programs that fork and exec by instruction,
 * unseen, and a child so made would find its namespace made anew.
 */
#define RECYCLE_MAX_BYTES (256ULL << 10)  /* of heap: cleared on the caller's time */
#define RECYCLE_KEEP_HEAP (16ULL << 10)   /* heap kept populated for the new one */
_Static_assert(sizeof(struct uipc_hdr) <= UIPC_PAGE, "the header is one page");

/* the new namespace would be made with this size and id mode */
static bool same_kind(const struct ns *ns)
{
	uint64_t size = page_up((uint64_t)env_num("UIPC_NS_SIZE", (int64_t)DEFAULT_ARENA));
	bool extended = env_num("UIPC_NS_EXTENDED", 0) != 0;

	return size == ns->size && extended == ((ns->hdr->flags & NS_FLAG_EXTENDED) != 0);
}

/* its arena little enough to clear on the caller's time (the memory of
 * its segments is freed by a helper when it is large: reset_arena) */
static bool small_enough(const struct ns *ns)
{
	uint64_t heap = ns->hdr->alloc.brk - ns->lay.heap_start;

	return ns->hdr->alloc.brk >= ns->lay.heap_start && heap <= RECYCLE_MAX_BYTES;
}

/* set once, in any thread or a signal handler (entry/trap.c) */
static volatile sig_atomic_t g_recycle_never;

void ns_recycle_never(void)
{
	g_recycle_never = 1;
}

bool ns_recycle_begin(struct ns *ns)
{
	uint32_t expect = ANON_PRIVATE;

	if (g_recycle_never || ns->anon_fd < 0 || !ns->created_here || !__libc_single_threaded ||
	    atomic_load(&ns->hdr->anon_share) != ANON_PRIVATE || !same_kind(ns) ||
	    !small_enough(ns) || proc_ns_busy(ns))
		return false;
	return atomic_compare_exchange_strong(&ns->hdr->anon_share, &expect, ANON_RECYCLING);
}

void ns_recycle_abort(struct ns *ns)
{
	uint32_t expect = ANON_RECYCLING;

	atomic_compare_exchange_strong(&ns->hdr->anon_share, &expect, ANON_PRIVATE);
}

/* clear entries page K of id table T and the used bits it covers */
static void zero_entries_page(struct ns *ns, int t, uint64_t k)
{
	uint64_t ids = UIPC_PAGE / sizeof(uoff_t);

	memset(ns->base + ns->lay.entries[t] + k * UIPC_PAGE, 0, UIPC_PAGE);
	memset(ns->base + ns->lay.used[t] + k * ids / 8, 0, ids / 8);
}

/* what the old incarnation wrote outside its header (read from the header
 * before it is cleared); the populated bitmaps stay: those pages still are */
static void zero_tables(struct ns *ns)
{
	struct uipc_hdr *h = ns->hdr;
	uint64_t np = atomic_load(&h->procs_hwm), nt = atomic_load(&h->threads_hwm);
	uint64_t pages = (uint64_t)ns->ipcmni * sizeof(uoff_t) / UIPC_PAGE;
	uoff_t brk;

	memset(ns->base + ns->lay.procs, 0, (np < MAX_PROCS ? np : MAX_PROCS) * sizeof(struct uproc));
	memset(ns->base + ns->lay.threads, 0,
	       (nt < MAX_THREADS ? nt : MAX_THREADS) * sizeof(struct uthread));
	for (int t = 0; t < IPC_NR_IDS; t++) {
		const uint64_t *pop = (const uint64_t *)(ns->base + ns->lay.populated[t]);

		for (uint64_t w = 0; w < (pages + 63) / 64; w++)
			for (uint64_t bits = pop[w]; bits; bits &= bits - 1)
				zero_entries_page(ns, t, w * 64 + (uint64_t)__builtin_ctzll(bits));
	}
	/* the heap past what is kept is punched (keep_heap) */
	brk = h->alloc.brk < ns->lay.heap_start + RECYCLE_KEEP_HEAP ? h->alloc.brk :
	      ns->lay.heap_start + RECYCLE_KEEP_HEAP;
	memset(ns->base + ns->lay.heap_start, 0, brk - ns->lay.heap_start);
}

/* The segment slots the old incarnation used, emptied: the new one takes
 * numbers past them (shm.c's counter, kept), so a helper can do it off
 * this path when they hold much memory.  Those of the incarnations before
 * were emptied by their own remaking (ns->slots_done, in our memory): only
 * the numbers given since are, so the kernel's walk of the file's pages is
 * short.  Numbers that went round may be anywhere: all slots, here. */
static void empty_old_slots(struct ns *ns, uint64_t next_file)
{
	uint64_t last = next_file & ~(1ULL << 63), from = ns->slots_done + 1;

	if (!next_file)
		return;
	if ((next_file >> 63) || last >= ANON_SLOTS || last < ns->slots_done) {
		fallocate(ns->anon_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)ANON_SLOT,
			  (off_t)(ANON_FILE_SIZE - ANON_SLOT));
		return;
	}
	if (last == ns->slots_done)
		return;   /* no segment made since */
	ns_punch(ns->anon_fd, (off_t)(from << ANON_SLOT_SHIFT),
		 (off_t)((last - from + 1) << ANON_SLOT_SHIFT));
}

/* The heap's populated end for the new incarnation: as much as a new
 * namespace's first calls populate, the rest given back (an empty
 * namespace costs little memory, whatever the old one used).  Cleared
 * already: zero_tables. */
static uoff_t keep_heap(struct ns *ns, uoff_t populated)
{
	uoff_t keep = ns->lay.heap_start + RECYCLE_KEEP_HEAP;

	if (populated <= keep)
		return populated;
	fallocate(ns->anon_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)keep,
		  (off_t)(populated - keep));
	return keep;
}

/* NS as a new namespace makes it, keeping what is populated */
static void reset_arena(struct ns *ns)
{
	struct uipc_hdr *h = ns->hdr;
	uint32_t np = atomic_load(&h->procs_hwm), nt = atomic_load(&h->threads_hwm);
	uoff_t populated = h->alloc.populated;
	uint64_t next_file = h->shm_pool.next_file;
	int extended = (h->flags & NS_FLAG_EXTENDED) != 0;

	empty_old_slots(ns, next_file);
	zero_tables(ns);
	memset(h, 0, offsetof(struct uipc_hdr, anon_share));
	init_tables(ns, extended, 0600);
	/* the slots and the heap below these are populated already */
	atomic_store(&h->procs_hwm, np);
	atomic_store(&h->threads_hwm, nt);
	populated = keep_heap(ns, populated);
	if (populated > h->alloc.populated)
		h->alloc.populated = populated;
	if (!(next_file >> 63))
		h->shm_pool.next_file = next_file;  /* past the slots being emptied */
	ns->slots_done = next_file >> 63 ? 0 : next_file;
	h->creator_pid = cur_pid();
	atomic_store_explicit(&h->magic, UIPC_MAGIC, memory_order_release);
}

void ns_recycle_finish(struct ns *ns)
{
	uint32_t expect = ANON_RECYCLING;

	proc_forget_ns(ns);
	reset_arena(ns);
	/* a door opened meanwhile made it ANON_SHARED: it stays so */
	atomic_compare_exchange_strong(&ns->hdr->anon_share, &expect, ANON_PRIVATE);
}

static void note_shared(struct ns *ns)
{
	if (ns && ns->anon_fd >= 0 && atomic_load(&ns->hdr->anon_share) != ANON_SHARED)
		atomic_store(&ns->hdr->anon_share, ANON_SHARED);
}

void ns_note_shared(void)
{
	note_shared(ns_current());
}

void ns_note_shared_fd(int fd)
{
	struct ns *view;           /* for fault.c: its base, size and broken */
	struct uipc_hdr *h;
	int rw = reopen_fd(fd, O_RDWR | O_CLOEXEC);

	if (rw < 0)
		return;  /* no right to its memory: no right to join it either */
	h = sys_mmap(NULL, UIPC_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0);
	sys_close(rw);
	view = h == MAP_FAILED ? NULL : calloc(1, sizeof(*view));
	if (!view) {
		if (h != MAP_FAILED)
			sys_munmap(h, UIPC_PAGE);
		return;
	}
	/* a member may have truncated the memfd: the page is then repaired
	 * to zeros (fault.c) rather than SIGBUS this door opener */
	view->base = (char *)h;
	view->size = UIPC_PAGE;
	ns_fault_register(view);
	/* (magic 0: its creator is building it again) */
	if (h->magic == UIPC_MAGIC || h->magic == 0)
		atomic_store(&h->anon_share, ANON_SHARED);
	ns_fault_unregister(view);
	sys_munmap(h, UIPC_PAGE);
	free(view);
}

void ns_anon_drop(struct ns *ns)
{
	ns_count_let_go(ns->cnt_fd);
	ns->cnt_fd = -1;
	if (ns->anon_fd >= 0)
		sys_close(ns->anon_fd);
	ns_unmap(ns);
}

/* the memfds of the anonymous namespaces threads of ours are in besides
 * the process's (ns_guard_fd) */
#define GUARD_MAX 64
static _Atomic int g_guard[GUARD_MAX];
static _Atomic int g_nguard;

void ns_guard_fd(int fd, bool on)
{
	if (fd < 0)
		return;
	/* a namespace not the process's: not in images its other threads
	 * exec or spawn (the thread in it clears this at its own exec) */
	fcntl(fd, F_SETFD, on ? FD_CLOEXEC : 0);
	for (int i = 0; i < GUARD_MAX; i++) {
		int want = on ? 0 : fd + 1, cur = want;

		if (atomic_compare_exchange_strong(&g_guard[i], &cur, on ? fd + 1 : 0)) {
			atomic_fetch_add(&g_nguard, on ? 1 : -1);
			return;
		}
	}
}

bool ns_fd_guarded(int fd)
{
	struct ns *ns = __atomic_load_n(&uipc_proc_ns, __ATOMIC_ACQUIRE);

	if (fd < 0)
		return false;
	if ((ns && (ns->anon_fd == fd || ns->cnt_fd == fd)) ||
	    (!ns && (fd == __atomic_load_n(&g_pinned_fd, __ATOMIC_RELAXED) ||
		     fd == __atomic_load_n(&g_pinned_cfd, __ATOMIC_RELAXED))))
		return true;
	if (likely(!atomic_load_explicit(&g_nguard, memory_order_relaxed)))
		return false;
	for (int i = 0; i < GUARD_MAX; i++)
		if (atomic_load(&g_guard[i]) == fd + 1)
			return true;
	return false;
}

/* an exec by a thread whose namespace is not the process's: the exec'd
 * image is in the thread's namespace only, so the fds of the others are
 * closed by the exec (set close-on-exec here; ns_exec_failed undoes it).
 * Returns the fds changed in SAVED (at most N). */
int ns_exec_prepare(int *saved, int n)
{
	struct ns *me = uipc_tls_nsov, *pr = __atomic_load_n(&uipc_proc_ns, __ATOMIC_ACQUIRE);
	int k = 0;

	if (!me)
		return 0;
	if (pr && pr->anon_fd >= 0 && k < n && fcntl(pr->anon_fd, F_SETFD, FD_CLOEXEC) == 0)
		saved[k++] = pr->anon_fd;
	if (pr && pr->cnt_fd >= 0 && k < n && fcntl(pr->cnt_fd, F_SETFD, FD_CLOEXEC) == 0)
		saved[k++] = pr->cnt_fd;
	for (int i = 0; i < GUARD_MAX && k < n; i++) {
		int fd = atomic_load(&g_guard[i]) - 1;

		if (fd >= 0 && fd != me->anon_fd && fd != me->cnt_fd &&
		    fcntl(fd, F_SETFD, FD_CLOEXEC) == 0)
			saved[k++] = fd;
	}
	/* this thread's own go with the exec */
	if (me->anon_fd >= 0)
		fcntl(me->anon_fd, F_SETFD, 0);
	if (me->cnt_fd >= 0)
		fcntl(me->cnt_fd, F_SETFD, 0);
	return k;
}

void ns_exec_failed(const int *saved, int n)
{
	for (int i = 0; i < n; i++)
		fcntl(saved[i], F_SETFD, 0);
}

/* Leaving OLD (the caller's registration is gone): its arena goes from
 * this process; an anonymous one is freed by the kernel when its last
 * member lets go of it.  The mapping is kept while another thread may
 * still hold a slot in it (thread_exit_hook).  Deliberately no teardown
 * work here: the leaver does not pay for the namespace (seed 003). */
void ns_release(struct ns *old, bool keep_map)
{
	int fd = old->anon_fd;

	ns_guard_fd(fd, false);
	ns_guard_fd(old->cnt_fd, false);
	ns_count_let_go(old->cnt_fd);
	old->cnt_fd = -1;
	ns_unmark(old);
	old->anon_fd = -1;
	if (keep_map) {
		if (fd >= 0)
			sys_close(fd);
		return;
	}
	if (old->hold_fd >= 0)
		sys_close(old->hold_fd);
	/* no longer an arena of ours for a SIGBUS to be repaired in (fault.c):
	 * whatever is mapped there next is not */
	ns_fault_unregister(old);
	/* its memory freed off this path when it is big (nsfree.c) */
	ns_let_go(fd, old->base, old->size);
	free(old);
}

void ns_unpin(struct ns *ns)
{
	/* its count stays while it lives (attachments hold it, as the
	 * kernel's), but not in images this process execs */
	if (ns->cnt_fd >= 0)
		fcntl(ns->cnt_fd, F_SETFD, FD_CLOEXEC);
	ns_guard_fd(ns->anon_fd, false);
	ns_unmark(ns);
	if (ns->anon_fd >= 0)
		sys_close(ns->anon_fd);
	ns->anon_fd = -1;
	if (ns->hold_fd >= 0)
		sys_close(ns->hold_fd);
	ns->hold_fd = -1;
}

struct ns *ns_process(void)
{
	return __atomic_load_n(&uipc_proc_ns, __ATOMIC_ACQUIRE);
}

/* the process entered a named namespace by setns: its exec'd images must
 * be told, whatever their environment says (ns_exec_env) */
static bool g_joined;

/* Make NEW (from ns_anon_new or ns_open_fd, or a namespace a thread of
 * ours is in) the process's: the kernel's unshare or setns of the IPC
 * namespace for the last thread in the old one.  The old one is
 * returned, unmarked (proc.c decides what to keep of it). */
struct ns *ns_switch(struct ns *new)
{
	char fdbuf[16] = "";
	struct ns *old;

	ns_guard_fd(new->anon_fd, false);
	ns_guard_fd(new->cnt_fd, false);
	ns_mark(new, new->anon_fd >= 0 ? new->anon_fd : new->hold_fd);
	if (new->hold_fd >= 0)
		sys_close(new->hold_fd);
	new->hold_fd = -1;
	crit_mutex_lock(&ns_mutex);
	old = uipc_proc_ns;
	if (!old)
		/* truncated under us: nobody left it (ns_get_existing finds
		 * none), but its marker must not name it as ours any more
		 * (proc.c lets it go without touching its arena: ns->broken) */
		old = __atomic_exchange_n(&g_broken, NULL, __ATOMIC_ACQ_REL);
	__atomic_store_n(&uipc_proc_ns, new, __ATOMIC_RELEASE);
	/* credentials are judged against the owner user namespace (cred.c):
	 * anew only when that changed (a new namespace usually has the old
	 * one's: the first call in it then makes no system call for them) */
	if (!old || memcmp(&old->owner, &new->owner, sizeof(new->owner)))
		cred_invalidate();
	uipc_proc_ns_used = true;
	g_ns_err = 0;
	g_pinned_fd = new->anon_fd;
	g_joined = new->anon_fd < 0;
	snprintf(g_pinned, sizeof(g_pinned), "%s", new->path);
	if (new->anon_fd >= 0)
		snprintf(fdbuf, sizeof(fdbuf), "%d", new->anon_fd);
	setenv(NS_FD_ENV, fdbuf, 1);   /* empty: a named namespace, by UIPC_NS_FILE */
	g_pinned_cfd = new->cnt_fd;
	fdbuf[0] = 0;
	if (new->cnt_fd >= 0)
		snprintf(fdbuf, sizeof(fdbuf), "%d", new->cnt_fd);
	setenv(NS_CFD_ENV, fdbuf, 1);
	setenv("UIPC_NS_FILE", new->path, 1);
	crit_mutex_unlock(&ns_mutex);
	if (old)
		ns_unmark(old);
	return old;
}

/* a spawn-like child's namespace (ns_spawn_child): the child runs on this
 * thread's TLS until its exec */
static __thread struct ns *tls_spawn_ns;

void ns_spawn_child(struct ns *ns)
{
	tls_spawn_ns = ns;
}

int ns_exec_env(char *fdvar, size_t fdlen, char *filevar, size_t filelen, char *cntvar,
		size_t cntlen)
{
	struct ns *ns = tls_spawn_ns ? tls_spawn_ns : ns_current();

	if (!ns || (ns->anon_fd < 0 && !g_joined && !tls_spawn_ns))
		return 0;
	note_shared(ns);       /* the exec'd image or the spawned child holds it */
	if (ns->anon_fd >= 0)
		snprintf(fdvar, fdlen, NS_FD_ENV "=%d", ns->anon_fd);
	else
		snprintf(fdvar, fdlen, NS_FD_ENV "=");
	snprintf(filevar, filelen, "UIPC_NS_FILE=%s", ns->path);
	if (ns->cnt_fd >= 0)
		snprintf(cntvar, cntlen, NS_CFD_ENV "=%d", ns->cnt_fd);
	else
		snprintf(cntvar, cntlen, NS_CFD_ENV "=");
	return 1;
}

/* ---- joining a namespace (setns) ----
 *
 * setns(fd, CLONE_NEWIPC) takes the file a namespace lives in: an
 * anonymous namespace's memfd (what opening /proc/PID/ns/ipc gives, as an
 * O_PATH descriptor: nsdoor.c) or a named namespace's file (`uipc ns path
 * NAME`).  The kernel asks for CAP_SYS_ADMIN; uipc for the right to open
 * that file read-write, which is the right to use the namespace's memory.
 */
#define ANON_LINK "/memfd:uipc-ns"

/* the link /proc/self/fd/FD: the file's path ("/memfd:uipc-ns (deleted)"
 * for an anonymous namespace's memfd) */
static int fd_link(int fd, char *buf, size_t len)
{
	char self[64];
	ssize_t n;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	n = sys_readlinkat(AT_FDCWD, self, buf, len - 1);
	if (n < 0)
		return errno == ENOENT ? -EBADF : -errno;
	buf[n] = 0;
	return 0;
}

static bool link_is_anon(const char *link)
{
	size_t l = strlen(ANON_LINK);

	return !strncmp(link, ANON_LINK, l) && (link[l] == 0 || link[l] == ' ');
}

/* FD's file opened again with FLAGS: a new open file, checked against the
 * file's mode as any open is (-EPERM when refused, as setns says it) */
static int reopen_fd(int fd, int flags)
{
	char self[64];
	int nfd;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	nfd = sys_open(self, flags);
	if (nfd >= 0)
		return nfd;
	return errno == EACCES ? -EPERM : -errno;
}

bool ns_fd_is_ns(int fd)
{
	char link[4096];
	uint64_t magic = 0;
	int rfd;
	bool is;

	if (fd_link(fd, link, sizeof(link)))
		return false;
	if (link_is_anon(link))
		return true;
	if (link[0] != '/')
		return false;            /* a pipe, socket, anon inode, ... */
	rfd = reopen_fd(fd, O_RDONLY | O_CLOEXEC);
	is = rfd >= 0 && pread(rfd, &magic, sizeof(magic), 0) == (ssize_t)sizeof(magic) &&
	     magic == UIPC_MAGIC;
	if (rfd >= 0)
		sys_close(rfd);
	return is;
}

int ns_open_fd(int fd, struct ns **out)
{
	char link[4096], path[4096];
	int rw, hi, r = fd_link(fd, link, sizeof(link));

	if (r)
		return r;
	rw = reopen_fd(fd, O_RDWR | O_CLOEXEC);
	if (rw < 0)
		return rw;
	if (!link_is_anon(link)) {
		r = map_checked(rw, link, out, path_is_shared(link), true);
		if (r) {
			sys_close(rw);
			return r;
		}
		(*out)->hold_fd = rw;   /* for its marker, when entered */
		return 0;
	}
	/* an anonymous one: held as its members hold it (ns_anon_new) */
	hi = fcntl(rw, F_DUPFD, ANON_FD_BASE);
	r = hi < 0 ? -errno : anon_path(path, sizeof(path));
	sys_close(rw);
	if (!r)
		r = map_anon(hi, path, out);
	if (r && hi >= 0)
		sys_close(hi);
	if (!r)
		note_shared(*out);  /* two hold it now */
	return r;
}

int ns_read_header(int fd, struct uipc_hdr *hdr, struct stat *st)
{
	int rfd = reopen_fd(fd, O_RDONLY | O_CLOEXEC), r = 0;

	if (rfd < 0)
		return rfd;
	if (fstat(rfd, st) < 0)
		r = -errno;
	else if (pread(rfd, hdr, sizeof(*hdr), 0) != (ssize_t)sizeof(*hdr) ||
		 hdr->magic != UIPC_MAGIC || hdr->version != UIPC_LAYOUT_VERSION ||
		 hdr->hdr_size != sizeof(*hdr))
		r = -EINVAL;
	sys_close(rfd);
	return r;
}

bool ns_same(const struct ns *a, const struct ns *b)
{
	return a && b && a->dev == b->dev && a->ino == b->ino;
}

int ns_reopen(struct ns *ns, int flags, bool hold)
{
	struct stat st;
	int fd;

	if (ns->anon_fd >= 0) {
		if (hold)
			note_shared(ns);  /* the descriptor holds it */
		return reopen_fd(ns->anon_fd, O_PATH | (flags & O_CLOEXEC));
	}
	fd = sys_open(ns->path, O_PATH | (flags & O_CLOEXEC));
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_dev != ns->dev || st.st_ino != ns->ino) {
		/* removed (uipc ns rm) or replaced since: no name reaches it */
		sys_close(fd);
		return -ENOENT;
	}
	return fd;
}

struct ns *ns_current(void)
{
	struct ns *ns = uipc_tls_nsov;

	return ns ? ns : __atomic_load_n(&uipc_proc_ns, __ATOMIC_ACQUIRE);
}

/* The namespace to leave at an unshare: the current one, opened if it
 * exists (after an exec, SEM_UNDO state may wait there), but never created
 * only to be left.  NULL: none. */
struct ns *ns_get_existing(void)
{
	struct ns *ns = ns_current();
	struct stat st;

	if (ns)
		return ns;
	if (g_pinned_fd < 0 && (!g_pinned[0] || sys_stat(g_pinned, &st) < 0))
		return NULL;
	return ns_get();
}
