/*
 * shm.c - System V shared memory: shmget, shmat, shmdt, shmctl, and the
 * attach accounting of the kernel's ipc/shm.c (nattch, atime/dtime/lpid,
 * SHM_DEST, shm_rmid_forced) across fork, exec, exit and SIGKILL.
 *
 * Each segment is backed by its own file in the namespace's directory,
 * named "<namespace file>.shm-<file number>" (so that it can be globbed
 * from the namespace file name; the number is random, so that nobody can
 * take the next name first), created O_EXCL|O_NOFOLLOW with the namespace
 * file's mode and group, sized to PAGE_ALIGN(size).  When the segment is
 * destroyed its file is truncated to 0 (its memory is freed at once) and
 * kept as a spare for the next shmget (see "the pool of spare files"), or
 * unlinked when the pool is full.
 *
 * Attach accounting lives in the segment object: besides nattch it keeps a
 * small table of (process slot, count) pairs, the attachers, all under the
 * segment lock, so that one journaled section changes both and a survivor can
 * detach a dead process by scanning the segments (shm_exit_proc, called by
 * the reaper, by exit and after exec).  Each process also keeps a local table
 * of its attachments (address, length, segment) for shmdt and fork.
 *
 * Order of the steps, for crash safety: shmat maps first and counts after
 * (a process killed in between has no mapping left: nothing to count);
 * shmdt counts first and unmaps after (killed in between: the mapping dies
 * with the process).  A file created by a newseg that dies before its section
 * commits is left behind under a name nobody uses again: sweep_files (the
 * reaper of the dead creator) unlinks it, uipc_ns_remove globs it.
 *
 * Lock order: shm ids lock -> segment lock.  Destruction needs both (the
 * kernel's shm_close takes the ids rwsem too).
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/vfs.h>
#include <linux/capability.h>
#include <unistd.h>

#include "ipc/ipc.h"

#ifndef SHM_STAT_ANY
#define SHM_STAT_ANY 15
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 1
#endif

#define SHMMIN 1
#define SHM_MODE_DEST   01000
#define SHM_MODE_LOCKED 02000
#define SHMLBA_X        UIPC_PAGE
#define PAGE_ALIGN(x)   (((x) + UIPC_PAGE - 1) & ~(uint64_t)(UIPC_PAGE - 1))
#define NO_PROC         UINT32_MAX
#define SHM_LOCK_MAGIC  0x53484d4cu  /* perm.pad: the lock is initialized */

struct shm_att {
	uint32_t proc;             /* process slot */
	uint32_t count;            /* its attachments of this segment */
};

struct shmid_kernel {
	struct uperm perm;
	struct ulock lock;
	uint64_t segsz;
	int64_t atime, dtime, ctime;
	int32_t cpid, lpid;
	uint64_t nattch;
	uint64_t gen;              /* the block's generation: part of the file name */
	uint32_t creator;          /* process slot of the creator, NO_PROC once gone */
	int32_t creator_pid;
	uoff_t att;                /* struct shm_att[att_cap] */
	uint32_t att_cap, att_n;
	/* set (atomically, never cleared, not journaled) by a process other
	 * than the creator that keeps an fd of the file: the destroyer then
	 * truncates the file so that such fds keep no memory */
	_Atomic uint32_t fd_shared;
	uint32_t pad;
	/* the number of the segment's file (its name), set before the segment
	 * is published and never changed: a file taken from the pool was
	 * another segment's before, so whoever opens or keeps an fd by this
	 * number checks it again under the segment lock (seg_file_is) */
	uint64_t file;
};

_Static_assert(sizeof(struct shmid_kernel) == SHM_OBJ_SIZE, "update SHM_OBJ_SIZE in ipc/ipc.h");

/* ---- process-local state ---- */

/* one vma of an attachment: shmdt and SHM_REMAP work on these fragments as
 * the kernel works on vmas (each fragment counts as one attach) */
struct lattach {
	uintptr_t addr;            /* start of the fragment */
	size_t len;
	uint64_t pgoff;            /* offset in the segment, pages */
	uint64_t seglen;           /* PAGE_ALIGN(segsz) */
	int prot;                  /* as mprotect left it (splits depend on it) */
	uint32_t vmf;              /* VMF_*: the vma flags mlock/madvise set */
	int shmid;
	uoff_t obj;
	uint64_t gen;
	uint32_t att;              /* which shmat made it (the kernel's vm_file):
				      pieces of one keep it */
	struct ns *ns;             /* the segment's namespace: a thread may be
				      in another one when it detaches it, or
				      the process may have left it since */
	uint32_t loan;             /* at fork: the loan (process slot) it was
				      counted in for the child, FORK_SELF or
				      FORK_LOST (shm_atfork_prepare) */
};
#define FORK_SELF UINT32_MAX         /* the child counts it (no loan) */
#define FORK_LOST (UINT32_MAX - 1)   /* could not be counted: the child loses it */

/*
 * The fd cache: the fds of segment files this process created or opened
 * are kept (until the segment is destroyed, or the entry is evicted), so
 * that shmat maps without opening the file again.  They are moved high
 * (F_DUPFD_CLOEXEC above fd_base()), are close-on-exec, and are guarded:
 * the application's close/dup2/dup3/close_range/closefrom cannot close or
 * replace them (entry/watch.c asks shm_fd_guarded), so the number always
 * names the segment's file.  Memory is not kept alive by them: a segment
 * file is truncated to 0 when the segment is destroyed (always when it
 * goes to the pool, else if another process may hold it open: fd_shared).
 *
 * An entry is of segment (obj, gen) whose file is number FILE; an entry
 * with obj 0 is a spare file this process truncated when it destroyed its
 * segment, kept (at most SPARE_FDS) so that the shmget that takes that
 * spare from the pool needs no open.  A spare entry is never looked up by
 * segment, only by file number, and only for a file the pool lists as
 * clean (a file number is never given to another file: see the pool).
 */
struct fdent {
	int fd;
	struct ns *ns;             /* the namespace of the segment or spare */
	uoff_t obj;
	uint64_t gen;
	uint64_t file;
};
#define FDCACHE 64
#define SPARE_FDS 4

static pthread_mutex_t l_mutex = PTHREAD_MUTEX_INITIALIZER;
/*
 * Fork and the local table.  The kernel counts the child's vmas inside
 * fork, so nothing the parent does afterwards can come first.  Here the
 * parent counts them before fork, in a loan (core/layout.h): a process
 * slot per namespace that the child takes over as its own when it first
 * runs, kept by a lock the child inherits, so that a reaper gives the
 * counts back if the child dies before it runs (or the parent before it
 * forks).  So: (1) whatever changes this process's mappings of
 * attachments (shmat, shmdt, the munmap/mremap/mprotect/mmap hooks) holds
 * l_forklock shared from its first step to its last, and fork takes it
 * exclusively from the count to fork's return (the child inherits a table
 * that matches its mappings and what was counted); (2) where no loan could
 * be had, the child counts in its atfork handler and the parent waits
 * until it has (l_forkpipe: the child closes its end when done, or dies),
 * so that a detach or remove by the parent comes after.
 */
static pthread_rwlock_t l_forklock = PTHREAD_RWLOCK_INITIALIZER;

/*
 * The process-local locks are held with the program's signal handlers held
 * off (as inside any uipc critical section): a handler that calls munmap,
 * shmat or shmdt must not find its own thread holding them.
 */
static void hooks_enter(void)
{
	uipc_crit_enter();
	pthread_rwlock_rdlock(&l_forklock);
}

static void hooks_leave(void)
{
	pthread_rwlock_unlock(&l_forklock);
	uipc_crit_exit();
}
static int l_forkpipe[2] = { -1, -1 };
static struct lattach *l_att;
static int l_n, l_cap;
static struct fdent l_fds[FDCACHE];
static int l_nfds;
static struct fdent l_fork_fds[FDCACHE];
static int l_nfork;
/* cached fds in use outside the mutex (an mmap in progress): a destroy
 * meanwhile defers its close until they are done */
static int l_fd_busy;
static int l_deferred[FDCACHE];
static int l_ndeferred;
static bool l_used;                 /* this process used shm */
static bool l_env_marked;           /* UIPC_SHM_EXEC set for our exec'd image */
static _Atomic uint32_t exec_pending = NO_PROC;
/* the vma flags that split a vma when they change (the kernel's VM_LOCKED,
 * VM_LOCKONFAULT, VM_DONTCOPY, VM_DONTDUMP, VM_HUGEPAGE, VM_NOHUGEPAGE,
 * VM_SEQ_READ, VM_RAND_READ) */
#define VMF_LOCKED   1u
#define VMF_ONFAULT  2u
#define VMF_DONTCOPY 4u
#define VMF_DONTDUMP 8u
#define VMF_HUGE     16u
#define VMF_NOHUGE   32u
#define VMF_SEQ      64u
#define VMF_RAND     128u
/* an SHM_RDONLY attachment: the kernel's vma lacks VM_MAYWRITE (its file
 * was opened read-only), so it can never be made writable.  Never set or
 * cleared by a change, kept by splits. */
#define VMF_NOWRITE  256u
static uint32_t l_vmf_future;       /* mlockall(MCL_FUTURE): new vmas get these */
/* the namespace directory (O_PATH), guarded like the cached fds */
static int l_dirfd = -1;
/* the directory l_dirfd is of: a thread may join a named namespace of
 * another directory (setns) while others stay, so the fd is kept per
 * directory; one replaced is left open (guarded, close-on-exec): a
 * thread may still be using it */
static char l_dirpath[4096];
static pthread_mutex_t l_dirmutex = PTHREAD_MUTEX_INITIALIZER;

/* guarded fd numbers, read without a lock by the close hooks */
#define NGUARD (2 * FDCACHE + 2)
static _Atomic int g_guard[NGUARD];
static _Atomic int g_nguard;
static _Atomic int g_lo = INT_MAX;  /* no guarded fd was ever below this */

static void guard_add(int fd)
{
	int lo = atomic_load(&g_lo);

	while (fd < lo && !atomic_compare_exchange_weak(&g_lo, &lo, fd))
		;
	for (int i = 0; i < NGUARD; i++) {
		int z = 0;

		/* slots hold fd + 1, 0 = free */
		if (atomic_compare_exchange_strong(&g_guard[i], &z, fd + 1)) {
			atomic_fetch_add(&g_nguard, 1);
			return;
		}
	}
}

static void guard_del(int fd)
{
	for (int i = 0; i < NGUARD; i++) {
		int v = fd + 1;

		if (atomic_compare_exchange_strong(&g_guard[i], &v, 0)) {
			atomic_fetch_sub(&g_nguard, 1);
			return;
		}
	}
}

bool shm_fd_guarded(int fd)
{
	/* the application's own fds are below the ones we keep */
	if (likely(fd < atomic_load_explicit(&g_lo, memory_order_relaxed)) ||
	    !atomic_load_explicit(&g_nguard, memory_order_relaxed))
		return false;
	for (int i = 0; i < NGUARD; i++)
		if (atomic_load_explicit(&g_guard[i], memory_order_relaxed) == fd + 1)
			return true;
	return false;
}

/* the lowest guarded fd >= LO (or INT_MAX) */
int shm_fd_next_guarded(unsigned lo)
{
	int best = INT_MAX;

	if (likely(!atomic_load_explicit(&g_nguard, memory_order_relaxed)))
		return best;
	for (int i = 0; i < NGUARD; i++) {
		int v = atomic_load_explicit(&g_guard[i], memory_order_relaxed) - 1;

		if (v >= 0 && (unsigned)v >= lo && v < best)
			best = v;
	}
	return best;
}

static void close_guarded(int fd)
{
	guard_del(fd);
	sys_close(fd);
}

/* where guarded fds go: high, but not so high that the fd table grows */
static int fd_base(void)
{
	static int base;
	struct rlimit rl;

	if (!base) {
		rlim_t lim = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;

		if (lim > 1024)
			lim = 1024;
		base = lim >= 256 ? (int)lim - 128 : (int)lim / 2;
		if (base < 3)
			base = 3;
	}
	return base;
}

/* FD moved high and guarded (FD itself if that fails) */
static int fd_hide(int fd)
{
	int h;

	if (fd >= fd_base()) {
		/* made up there already (an anonymous namespace's slot) */
		guard_add(fd);
		return fd;
	}
	h = fcntl(fd, F_DUPFD_CLOEXEC, fd_base());

	if (h >= 0) {
		guard_add(h);
		sys_close(fd);
		return h;
	}
	guard_add(fd);
	return fd;
}

/* The application dup2s onto a guarded fd: ours moves elsewhere first. */
void shm_fd_evict(int fd)
{
	crit_mutex_lock(&l_mutex);
	/* an mmap in progress may be using the number */
	while (l_fd_busy) {
		crit_mutex_unlock(&l_mutex);
		sched_yield();
		crit_mutex_lock(&l_mutex);
	}
	if (shm_fd_guarded(fd)) {
		int h = fcntl(fd, F_DUPFD_CLOEXEC, fd_base());

		for (int i = 0; i < l_nfds; i++)
			if (l_fds[i].fd == fd) {
				if (h >= 0)
					l_fds[i].fd = h;
				else
					l_fds[i] = l_fds[--l_nfds];
			}
		if (fd == __atomic_load_n(&l_dirfd, __ATOMIC_ACQUIRE))
			__atomic_store_n(&l_dirfd, h, __ATOMIC_RELEASE);
		if (h >= 0)
			guard_add(h);
		close_guarded(fd);
	}
	crit_mutex_unlock(&l_mutex);
}

/* lock-free (callers may hold l_mutex) */
static bool anon(struct ns *ns);

static int seg_dirfd(struct ns *ns)
{
	int fd = __atomic_load_n(&l_dirfd, __ATOMIC_ACQUIRE), h;
	char dir[4096];
	const char *slash;
	size_t dl;

	/* an anonymous namespace names no file: any valid number will do
	 * (seg_openat and seg_unlinkat do not use it), not one to close */
	if (anon(ns))
		return ns->anon_fd;
	slash = strrchr(ns->path, '/');
	if (!slash)
		return -1;
	dl = (size_t)(slash - ns->path);
	if (likely(fd >= 0) && !strncmp(l_dirpath, ns->path, dl) && l_dirpath[dl] == 0)
		return fd;
	snprintf(dir, sizeof(dir), "%.*s", (int)dl, ns->path);
	crit_mutex_lock(&l_dirmutex);
	fd = __atomic_load_n(&l_dirfd, __ATOMIC_ACQUIRE);
	if (fd < 0 || strcmp(l_dirpath, dir)) {
		fd = sys_open(dir[0] ? dir : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		h = fd < 0 ? -1 : fd_hide(fd);
		if (h >= 0) {
			__atomic_store_n(&l_dirfd, -1, __ATOMIC_RELEASE);
			snprintf(l_dirpath, sizeof(l_dirpath), "%s", dir);
			__atomic_store_n(&l_dirfd, h, __ATOMIC_RELEASE);
		}
		fd = h;
	}
	crit_mutex_unlock(&l_dirmutex);
	return fd;
}

/* the name of segment file number FILE in the namespace directory */
static void file_base(struct ns *ns, uint64_t file, char *buf, size_t len)
{
	const char *slash = strrchr(ns->path, '/');

	snprintf(buf, len, "%s.shm-%llx", slash ? slash + 1 : ns->path,
		 (unsigned long long)file);
}

static bool reap_dead_attachers(struct ns *ns, struct shmid_kernel *shp);
static int collect_dead(struct ns *ns, struct shmid_kernel *shp, uint32_t *dead, int max);

static struct shmid_kernel *shp_of(struct uperm *p)
{
	return (struct shmid_kernel *)p;
}

struct rmfile {                    /* a destroyed segment's file, to release */
	bool set, trunc;
	bool pooled;               /* in the pool as SPARE_DIRTY, ours to truncate */
	uoff_t obj;
	uint64_t gen;
	uint64_t file;
};

static void file_name(struct ns *ns, uint64_t file, char *buf, size_t len)
{
	snprintf(buf, len, "%s.shm-%llx", ns->path, (unsigned long long)file);
}

/* ---- an anonymous namespace's segments: slots of its memfd ----
 *
 * An anonymous namespace (unshare) has no directory entries: the memory of
 * its segment number K is the range [K << ANON_SLOT_SHIFT, +ANON_SLOT) of
 * the arena's memfd (core/core.h), so that the kernel frees it with the
 * namespace, whatever killed its members.  The file protocol (fd cache,
 * pool of spares) stays the same; only these calls differ: an "open" is a
 * dup of the memfd, truncating to 0 punches the slot, unlinking punches it
 * and forgets the number, and numbers come from a counter (pool.next_file),
 * never reused but through the pool, like the random names of files.
 */
static bool anon(struct ns *ns)
{
	return ns->anon_fd >= 0;
}

/* where segment FILE starts in the fd that maps it; -1 (which mmap,
 * fallocate and lseek refuse) for a number no segment can have: FILE comes
 * from the arena, and slot 0 is the arena itself */
static off_t seg_map_off(struct ns *ns, uint64_t file)
{
	if (!anon(ns))
		return 0;
	if (file == 0 || file >= ANON_SLOTS)
		return -1;
	return (off_t)(file << ANON_SLOT_SHIFT);
}

/* open segment file FILE (NAME in DFD): a new fd, or -1 and errno */
static int seg_openat(struct ns *ns, int dfd, const char *name, uint64_t file, int oflag)
{
	(void)file;
	if (anon(ns) && (oflag & O_ACCMODE) == O_RDONLY) {
		/* a read-only open file of the memfd: what SHM_RDONLY maps, so
		 * that no mprotect can make it writable (see do_shmat) */
		char self[64];

		snprintf(self, sizeof(self), "/proc/self/fd/%d", ns->anon_fd);
		return sys_open(self, O_RDONLY | O_CLOEXEC);
	}
	if (anon(ns))      /* where fd_hide would move it */
		return fcntl(ns->anon_fd, F_DUPFD_CLOEXEC, fd_base());
	if (dfd < 0) {
		errno = ENOENT;
		return -1;
	}
	return sys_openat(dfd, name, oflag | O_NOFOLLOW | O_CLOEXEC);
}

/* ftruncate of segment FILE through FD: 0 empties it (the slot punched);
 * a size must fit the slot */
static int seg_truncate(struct ns *ns, int fd, uint64_t file, uint64_t size)
{
	if (!anon(ns))
		return ftruncate(fd, (off_t)size);
	if (size > ANON_SLOT) {
		errno = EFBIG;
		return -1;
	}
	if (size)
		return 0;
	return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, seg_map_off(ns, file),
			 (off_t)ANON_SLOT);
}

/* unlinkat of segment FILE (NAME in DFD): an anonymous one's slot is
 * emptied, its number never used again */
static void seg_unlinkat(struct ns *ns, int dfd, const char *name, uint64_t file)
{
	if (anon(ns)) {
		int fd = seg_openat(ns, dfd, name, file, O_RDWR);

		if (fd >= 0) {
			seg_truncate(ns, fd, file, 0);
			sys_close(fd);
		}
		return;
	}
	if (dfd >= 0)
		unlinkat(dfd, name, 0);
}

/* pages of memory segment FILE holds (LEN: its size; -1: unknown) */
static long seg_pages(struct ns *ns, uint64_t file, uint64_t len)
{
	char path[4200];
	struct stat st;
	off_t at, end, data, hole;
	long pages = 0;

	if (!anon(ns)) {
		file_name(ns, file, path, sizeof(path));
		return sys_stat(path, &st) == 0 ? (long)(st.st_blocks * 512 / UIPC_PAGE) : -1;
	}
	at = seg_map_off(ns, file);
	if (at < 0)
		return -1;
	/* within the slot (LEN comes from the arena; -1 is the whole slot) */
	end = at + (off_t)(len < ANON_SLOT ? len : ANON_SLOT);
	while (at < end) {
		data = lseek(ns->anon_fd, at, SEEK_DATA);
		if (data < 0 || data >= end)
			break;
		hole = lseek(ns->anon_fd, data, SEEK_HOLE);
		if (hole < 0 || hole > end)
			hole = end;
		pages += (long)((hole - data) / UIPC_PAGE);
		at = hole;
	}
	return pages;
}

/*
 * The attachers table of SHP (segment lock held), with its capacity and
 * count read once: entries [0, *N) of a table of *CAP, inside the mapping,
 * *N <= *CAP.  NULL (and 0, 0) if there is none or it is not sane: every
 * loop below is bounded by these copies, never by a second reading.
 */
static struct shm_att *att_at(struct ns *ns, struct shmid_kernel *shp, uint32_t *cap,
			      uint32_t *n)
{
	uoff_t off = __atomic_load_n(&shp->att, __ATOMIC_RELAXED);
	uint32_t c = __atomic_load_n(&shp->att_cap, __ATOMIC_RELAXED);
	uint32_t k = __atomic_load_n(&shp->att_n, __ATOMIC_RELAXED);
	struct shm_att *a = off && c && k <= c ?
		ns_ptr_aligned(ns, off, (size_t)c * sizeof(struct shm_att)) : NULL;

	*cap = a ? c : 0;
	*n = a ? k : 0;
	return a;
}

static struct shmid_kernel *shm_obtain_check(struct ns *ns, int id, int *err)
{
	struct uperm *p = ipc_obtain_check(ns, IPC_SHM_IDS, id, err);

	if (!p)
		return NULL;
	/* the segment as a whole, inside its block */
	if (!ipc_obj_fits(ns, p, sizeof(struct shmid_kernel))) {
		if (ipc_obj_still(ns, IPC_SHM_IDS, id, p))
			ns_corrupt(ns, "segment outside its block");
		*err = -EIDRM;
		return NULL;
	}
	return shp_of(p);
}

static bool shp_valid(struct ns *ns, struct shmid_kernel *shp, int id, uint64_t gen)
{
	(void)ns;
	return !atomic_load(&shp->perm.deleted) && shp->perm.id == id && shp->gen == gen;
}

/* Under the segment lock, with the segment valid: is FILE its file?  An fd
 * opened by a number read without the lock may be of the file that a
 * spare became for another segment (or of a spare): never used as this
 * segment's unless this holds, and then the file cannot change hands
 * while the segment lives. */
static bool seg_file_is(struct shmid_kernel *shp, uint64_t file)
{
	return shp->file == file;
}

/* ---- fd cache (l_mutex held unless said) ---- */

static struct shmid_kernel *shm_obj(struct ns *ns, uoff_t obj, uint64_t gen)
{
	struct shmid_kernel *shp = ns_ptr(ns, obj, sizeof(*shp));

	if (shp && shp->perm.type == IPC_SHM_IDS && !atomic_load(&shp->perm.deleted) &&
	    shp->gen == gen)
		return shp;
	return NULL;
}

/* the entry of segment (OBJ, GEN) with file FILE among T's N, or -1 */
static int fdent_find(const struct fdent *t, int n, struct ns *ns, uoff_t obj, uint64_t gen,
		      uint64_t file)
{
	for (int i = 0; i < n; i++)
		if (t[i].obj == obj && t[i].gen == gen && t[i].file == file && t[i].ns == ns)
			return i;
	return -1;
}

/* the entry of segment (OBJ, GEN) with file FILE, or of spare FILE (OBJ 0) */
static int fd_find(struct ns *ns, uoff_t obj, uint64_t gen, uint64_t file)
{
	return fdent_find(l_fds, l_nfds, ns, obj, gen, file);
}

static void fd_drop(int i)
{
	int fd = l_fds[i].fd;

	l_fds[i] = l_fds[--l_nfds];
	if (l_fd_busy && l_ndeferred < FDCACHE) {
		l_deferred[l_ndeferred++] = fd;
		return;
	}
	close_guarded(fd);
}

/* Is this process (its slot and pid) the segment's creator? */
static bool is_creator(struct ns *ns, struct shmid_kernel *shp)
{
	struct uproc *me = cur_proc(ns);

	return me && shp->creator != NO_PROC && proc_at(ns, shp->creator) == me &&
	       shp->creator_pid == cur_pid();
}

/* FD (already hidden) becomes the cache entry of the segment.  Anyone but
 * the creator has marked the segment fd_shared before, under the segment
 * lock with the segment alive (so that its destroyer, which holds that
 * lock, truncates the file). */
static bool fd_keep(struct ns *ns, uoff_t obj, uint64_t gen, uint64_t file, int fd)
{
	if (fd_find(ns, obj, gen, file) >= 0)
		return false;
	if (l_nfds == FDCACHE) {
		if (l_fd_busy)
			return false;
		fd_drop(0);
	}
	l_fds[l_nfds++] = (struct fdent){ fd, ns, obj, gen, file };
	return true;
}

/* FD of spare file FILE is kept (the oldest spare entry goes beyond
 * SPARE_FDS); false: the caller closes it */
static bool spare_keep(struct ns *ns, uint64_t file, int fd)
{
	int n = 0, oldest = -1;

	for (int i = 0; i < l_nfds; i++) {
		if (l_fds[i].obj || l_fds[i].ns != ns)
			continue;
		if (oldest < 0)
			oldest = i;
		n++;
	}
	if (n >= SPARE_FDS && !l_fd_busy)
		fd_drop(oldest);
	return fd_keep(ns, 0, 0, file, fd);
}

/* The kept fd of spare FILE, taken out of the cache (the caller owns it);
 * -1 if none.  Spare fds are never in use by an mmap (not busy). */
static int spare_take(struct ns *ns, uint64_t file)
{
	int i = fd_find(ns, 0, 0, file), fd;

	if (i < 0)
		return -1;
	fd = l_fds[i].fd;
	l_fds[i] = l_fds[--l_nfds];
	return fd;
}

/* Cached fds of segments that are gone (destroyed by anyone) are closed;
 * spare entries stay (bounded by SPARE_FDS). */
static void fd_prune(struct ns *ns)
{
	for (int i = 0; i < l_nfds;) {
		if (l_fds[i].ns != ns || !l_fds[i].obj || shm_obj(ns, l_fds[i].obj, l_fds[i].gen))
			i++;
		else
			fd_drop(i);
	}
}

/*
 * Read-only twins of cached fds.  An SHM_RDONLY attachment maps a
 * read-only open file (open_seg_rdonly), so that not even a raw
 * mprotect(PROT_WRITE) can make it writable, as the kernel's vma without
 * VM_MAYWRITE.  A process that changes its credentials (a child that
 * drops root after fork) may then be refused the open, and has only the
 * read-write fds of the cache it inherited.  So before a credential
 * change (entry/watch.c, entry/syscall.c) each cached fd gets a read-only
 * twin, opened while the process may still open the file; shmat maps the
 * twin when it cannot open the file itself.  Twins whose entry left the
 * cache are closed at the next change.  (l_mutex held unless said.)
 */
static struct fdent l_ro[FDCACHE];   /* as the cache's entries, fd the twin */
static int l_nro;

static int ro_find(struct ns *ns, uoff_t obj, uint64_t gen, uint64_t file)
{
	return fdent_find(l_ro, l_nro, ns, obj, gen, file);
}

static void fd_close_safe(int fd);

/* a read-only open file of the file FD names: -1 if refused */
static int reopen_rdonly(int fd)
{
	char self[64];
	int ro;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	ro = sys_open(self, O_RDONLY | O_CLOEXEC);
	return ro < 0 ? -1 : fd_hide(ro);
}

/* l_mutex not held */
void shm_cred_prepare(void)
{
	if (likely(!__atomic_load_n(&l_nfds, __ATOMIC_RELAXED)))
		return;
	crit_mutex_lock(&l_mutex);
	for (int i = 0; i < l_nro;) {
		if (fd_find(l_ro[i].ns, l_ro[i].obj, l_ro[i].gen, l_ro[i].file) >= 0) {
			i++;
			continue;
		}
		fd_close_safe(l_ro[i].fd);
		l_ro[i] = l_ro[--l_nro];
	}
	for (int i = 0; i < l_nfds && l_nro < FDCACHE; i++) {
		struct fdent *e = &l_fds[i];
		int ro;

		if (!e->obj || ro_find(e->ns, e->obj, e->gen, e->file) >= 0)
			continue;
		ro = reopen_rdonly(e->fd);
		if (ro >= 0)
			l_ro[l_nro++] = (struct fdent){ ro, e->ns, e->obj, e->gen, e->file };
	}
	crit_mutex_unlock(&l_mutex);
}

/* the read-only twin of segment (OFF, GEN, FILE) while its read-write fd
 * is cached (busy, as open_seg's cached fds), or -EACCES */
static int ro_twin(struct ns *ns, uoff_t off, uint64_t gen, uint64_t file, bool *own)
{
	int i, fd = -EACCES;

	crit_mutex_lock(&l_mutex);
	i = ro_find(ns, off, gen, file);
	if (i >= 0 && fd_find(ns, off, gen, file) >= 0) {
		fd = l_ro[i].fd;
		l_fd_busy++;
		*own = false;
	}
	crit_mutex_unlock(&l_mutex);
	return fd;
}

static void shm_enter(struct ns *ns)
{
	if (unlikely(__atomic_load_n(&l_nfds, __ATOMIC_RELAXED))) {
		crit_mutex_lock(&l_mutex);
		fd_prune(ns);
		crit_mutex_unlock(&l_mutex);
	}
}

/* l_mutex not held */
static void fd_unbusy(void)
{
	crit_mutex_lock(&l_mutex);
	if (--l_fd_busy == 0) {
		while (l_ndeferred)
			close_guarded(l_deferred[--l_ndeferred]);
	}
	crit_mutex_unlock(&l_mutex);
}

/* ---- attachers table (segment lock held) ---- */

static int att_add(struct ns *ns, struct shmid_kernel *shp, uint32_t proc, uint32_t n)
{
	uint32_t cap, cnt, i;
	struct shm_att *a = att_at(ns, shp, &cap, &cnt);

	if (!a && (shp->att || shp->att_n)) {
		ns_corrupt(ns, "segment attachers table");
		return -EIDRM;
	}
	for (i = 0; i < cnt; i++) {
		if (a[i].proc == proc) {
			J_SET(ns, a[i].count, a[i].count + n);
			return 0;
		}
	}
	if (cnt == cap) {
		uint32_t ncap = cap ? cap * 2 : 4;
		uoff_t off = ncap > cap ?
			arena_alloc(ns, (uint64_t)ncap * sizeof(struct shm_att), POOL_GENERAL) : 0;
		struct shm_att *na = off ? ns_ptr(ns, off, (size_t)ncap * sizeof(*na)) : NULL;

		if (!na)
			return -ENOMEM;
		/* fresh block, nobody sees it yet: plain stores */
		if (a)
			memcpy(na, a, (size_t)cnt * sizeof(*na));
		if (shp->att)
			arena_free(ns, shp->att);
		J_SET(ns, shp->att, off);
		J_SET(ns, shp->att_cap, ncap);
		a = na;
	}
	J_SET(ns, a[cnt], ((struct shm_att){ proc, n }));
	J_SET(ns, shp->att_n, cnt + 1);
	return 0;
}

/* Drops up to N attachments of PROC (all if N == 0); returns how many. */
static uint32_t att_del(struct ns *ns, struct shmid_kernel *shp, uint32_t proc, uint32_t n)
{
	uint32_t cap, cnt;
	struct shm_att *a = att_at(ns, shp, &cap, &cnt);

	for (uint32_t i = 0; i < cnt; i++) {
		if (a[i].proc != proc)
			continue;
		uint32_t c = a[i].count;

		if (n && n < c) {
			J_SET(ns, a[i].count, c - n);
			return n;
		}
		if (i != cnt - 1)
			J_SET(ns, a[i], a[cnt - 1]);
		J_SET(ns, shp->att_n, cnt - 1);
		return c;
	}
	return 0;
}

/* Would dropping up to N attachments of PROC (all if 0) destroy SHP?
 * (Segment lock held; the same arithmetic as att_del and shm_account.) */
static bool detach_destroys(struct ns *ns, struct shmid_kernel *shp, uint32_t proc, uint32_t n)
{
	uint32_t cap, cnt;
	struct shm_att *a = att_at(ns, shp, &cap, &cnt);

	for (uint32_t i = 0; i < cnt; i++) {
		uint32_t got;

		if (a[i].proc != proc)
			continue;
		got = n && n < a[i].count ? n : a[i].count;
		return got && shp->nattch <= got &&
		       (ns->hdr->lim.shm_rmid_forced || (shp->perm.mode & SHM_MODE_DEST));
	}
	return false;
}

static bool att_has(struct ns *ns, struct shmid_kernel *shp, uint32_t proc)
{
	struct shm_att *a;
	uint32_t cap, cnt;
	bool found = false;

	if (!__atomic_load_n(&shp->att_n, __ATOMIC_ACQUIRE) && ulock_is_free(&shp->lock))
		return false;
	if (ulock_acquire(ns, &shp->lock))
		return false;
	a = att_at(ns, shp, &cap, &cnt);
	for (uint32_t i = 0; i < cnt && !found; i++)
		found = a[i].proc == proc;
	ulock_release(ns, &shp->lock);
	return found;
}

/* ---- destruction ---- */

static bool shm_may_destroy(struct ns *ns, struct shmid_kernel *shp)
{
	return shp->nattch == 0 &&
	       (ns->hdr->lim.shm_rmid_forced || (shp->perm.mode & SHM_MODE_DEST));
}

static bool is_creator(struct ns *ns, struct shmid_kernel *shp);
static uint32_t proc_index(struct ns *ns, struct uproc *p);

/* ---- the pool of spare files ----
 *
 * Why: creating and removing a directory entry (openat O_CREAT|O_EXCL,
 * then unlinkat and the last close) costs, on tmpfs, about as much as the
 * kernel's whole shmget+shmat+shmdt+IPC_RMID cycle (README, Measurements).
 * A destroyed segment's file is therefore truncated to 0, which frees its
 * memory at once, and kept under its name as a spare; shmget takes a
 * spare and sizes it (one ftruncate) instead of creating a file.  Renaming
 * a spare to a name made of the segment's identity would cost a directory
 * operation again, so a file keeps its number (its name) for its whole
 * life, and the segment records it (shmid_kernel.file); everyone who opens
 * a file by number, or keeps an fd, checks under the segment lock that the
 * segment still has that file (seg_file_is).
 *
 * The pool (hdr->shm_pool, at most SHM_POOL_CAP files, so that a burst of
 * removals keeps few files) is under the shm ids lock.  Its entries:
 *   SPARE_CLEAN   empty (size 0, no pages): shmget may take it;
 *   SPARE_DIRTY   its segment is destroyed, HOLDER truncates it.  The entry
 *                 is added in the destroying section (so a crash after the
 *                 commit cannot lose the file), the truncation comes after
 *                 the commit, outside any lock (it takes about 1 us per page
 *                 and a destruction that the journal rolled back must leave
 *                 the data whole), then a short section marks it clean.  A
 *                 dirty entry is never taken (the late truncation would
 *                 wipe the next segment); if its holder dies, sweep_files
 *                 (the reaper, SHM_INFO) truncates and cleans it;
 *   SPARE_TAKING  a plain, unjournaled store of the taker just before its
 *                 journaled removal of the entry: seen in the pool, it says
 *                 that a shmget took the file and its section was rolled
 *                 back.  That segment was published for a moment (ids are
 *                 looked up without the lock), so someone may have mapped the
 *                 file: it is discarded (unlinked), never reused.
 * A file number is never given to two files: numbers are drawn at random
 * (60 bits, getrandom) and the file is created O_EXCL, so a name already
 * taken, by a creation that was rolled back or by another user who planted
 * it, is never reused: another number is drawn (seg_file).
 * Files are only unlinked by the pool (full, discard), by sweep_files
 * (files neither a live segment's nor pooled) and by uipc_ns_remove.
 */
#define SPARE_CLEAN  0u
#define SPARE_DIRTY  1u
#define SPARE_TAKING 2u

static uint32_t pool_len(struct shm_pool *pl)
{
	uint32_t n = __atomic_load_n(&pl->n, __ATOMIC_RELAXED);

	/* a corrupt count must not send us outside the table */
	return n > SHM_POOL_CAP ? SHM_POOL_CAP : n;
}

/* entry K goes (the last one takes its place); ids lock held */
static void pool_remove(struct ns *ns, struct shm_pool *pl, uint32_t k)
{
	uint32_t last = pool_len(pl) - 1;

	if (k != last)
		J_SET(ns, pl->e[k], pl->e[last]);
	J_SET(ns, pl->n, last);
}

/* entry K's file is not to be used again: unlinked, out of the pool */
static void pool_discard(struct ns *ns, struct shm_pool *pl, uint32_t k)
{
	char name[4200];
	int dfd = seg_dirfd(ns), fd;

	file_base(ns, pl->e[k].file, name, sizeof(name));
	seg_unlinkat(ns, dfd, name, pl->e[k].file);
	crit_mutex_lock(&l_mutex);
	fd = spare_take(ns, pl->e[k].file);
	if (fd >= 0)
		close_guarded(fd);
	crit_mutex_unlock(&l_mutex);
	pool_remove(ns, pl, k);
}

/* under the ids lock, in the destroying section: the file of SHP goes into
 * the pool as ours to truncate, if there is room */
static bool pool_put_dirty(struct ns *ns, struct shmid_kernel *shp)
{
	struct shm_pool *pl = &ns->hdr->shm_pool;
	struct uproc *me = cur_proc(ns);
	uint32_t n = pl->n;

	if (n >= SHM_POOL_CAP || !me || !shp->file)
		return false;
	J_SET(ns, pl->e[n], ((struct shm_spare){ shp->file, SPARE_DIRTY, proc_index(ns, me),
						 cur_pid(), 0 }));
	J_SET(ns, pl->n, n + 1);
	return true;
}

/* The dirty entry of FILE that we hold becomes clean (TRUNCATED) or is
 * discarded (we could not truncate it).  False: it is no longer ours. */
static bool pool_settle(struct ns *ns, uint64_t file, bool truncated)
{
	struct shm_pool *pl = &ns->hdr->shm_pool;
	struct uproc *me = cur_proc(ns);
	bool found = false;

	if (!me || ids_lock(ns, IPC_SHM_IDS))
		return false;
	for (uint32_t k = 0; k < pool_len(pl) && !found; k++) {
		struct shm_spare *e = &pl->e[k];

		if (e->file != file || e->state != SPARE_DIRTY ||
		    e->holder != proc_index(ns, me) || e->holder_pid != cur_pid())
			continue;
		found = true;
		if (truncated)
			J_SET(ns, e->state, SPARE_CLEAN);
		else
			pool_discard(ns, pl, k);
	}
	ids_unlock(ns, IPC_SHM_IDS);
	return found && truncated;
}

/* Has the holder of a dirty entry died (its slot gone, reused, or dead)? */
static bool holder_gone(struct ns *ns, const struct shm_spare *e)
{
	struct uproc *p = proc_at(ns, e->holder);
	uint64_t w;

	if (!p)
		return true;
	w = atomic_load(&p->state);
	if (SLOT_STATE(w) != SLOT_LIVE || p->pid != e->holder_pid)
		return true;
	return proc_is_dead(ns, p);
}

/* empty the segment file NAME of directory DFD through a fresh fd: done? */
static bool truncate_named(struct ns *ns, int dfd, const char *name, uint64_t file)
{
	int fd = seg_openat(ns, dfd, name, file, O_WRONLY | O_NONBLOCK);
	bool done = fd >= 0 && seg_truncate(ns, fd, file, 0) == 0;

	if (fd >= 0)
		sys_close(fd);
	return done;
}

/* Under the ids lock: rolled-back takes are discarded, dirty entries of
 * dead holders truncated and cleaned (sweep_files). */
static void pool_fix(struct ns *ns)
{
	struct shm_pool *pl = &ns->hdr->shm_pool;
	int dfd = seg_dirfd(ns);

	for (uint32_t k = pool_len(pl); k-- > 0;) {
		struct shm_spare *e = &pl->e[k];
		char name[4200];

		if (e->state == SPARE_TAKING) {
			pool_discard(ns, pl, k);
			continue;
		}
		if (e->state != SPARE_DIRTY || !holder_gone(ns, e))
			continue;
		file_base(ns, e->file, name, sizeof(name));
		if (truncate_named(ns, dfd, name, e->file))
			J_SET(ns, e->state, SPARE_CLEAN);
		else
			pool_discard(ns, pl, k);
	}
}

/* Is FILE the file of a live segment or in the pool?  (ids lock held) */
static bool file_in_use(struct ns *ns, uint64_t file)
{
	struct shm_pool *pl = &ns->hdr->shm_pool;
	int maxidx = ipc_get_maxidx(ns, IPC_SHM_IDS);

	for (uint32_t k = 0; k < pool_len(pl); k++)
		if (pl->e[k].file == file)
			return true;
	for (int i = 0; i <= maxidx; i++) {
		struct uperm *p = ipc_obtain(ns, IPC_SHM_IDS, i);

		if (p && ns_ptr(ns, ns_off(ns, p), sizeof(struct shmid_kernel)) &&
		    shp_of(p)->file == file)
			return true;
	}
	return false;
}

/*
 * shm_destroy: ids lock and segment lock held, in the segment's section.
 * The table changes are journaled in the ids frame.  The file is released
 * by the caller after both sections committed (release_file).
 */
static void shm_destroy(struct ns *ns, struct shmid_kernel *shp, struct rmfile *rf)
{
	struct ipc_ids *ids = &ns->hdr->ids[IPC_SHM_IDS];
	struct jframe *prev = j_target(ns, &ids->lock);
	uint64_t pages = PAGE_ALIGN(shp->segsz) / UIPC_PAGE;

	rf->set = true;
	rf->obj = ns_off(ns, shp);
	rf->gen = shp->gen;
	rf->file = shp->file;
	J_SET(ns, ns->hdr->shm_tot, ns->hdr->shm_tot - pages);
	ipc_rmid(ns, IPC_SHM_IDS, &shp->perm);
	/* the mark is set under the segment lock, which we hold */
	rf->trunc = atomic_load(&shp->fd_shared) || !is_creator(ns, shp);
	rf->pooled = pool_put_dirty(ns, shp);
	if (shp->att)
		arena_free(ns, shp->att);
	arena_free(ns, ns_off(ns, shp));
	j_target_restore(prev);
}

/* FD, out of the cache, is closed, or later if an mmap in progress may
 * still be using its number (l_mutex held) */
static void fd_close_safe(int fd)
{
	if (l_fd_busy && l_ndeferred < FDCACHE)
		l_deferred[l_ndeferred++] = fd;
	else
		close_guarded(fd);
}

/* the pool-full path: the file goes, emptied first if another process
 * may hold an fd of it (l_mutex held: the cached fd stays ours) */
static void unlink_seg(struct ns *ns, const struct rmfile *rf, int dfd, const char *name)
{
	int i = fd_find(ns, rf->obj, rf->gen, rf->file);

	if (rf->trunc) {
		if (i >= 0) {
			if (seg_truncate(ns, l_fds[i].fd, rf->file, 0)) {
				/* nothing more to do */
			}
		} else {
			truncate_named(ns, dfd, name, rf->file);  /* failing: nothing more to do */
		}
	}
	seg_unlinkat(ns, dfd, name, rf->file);
	if (i >= 0)
		fd_drop(i);
}

/* After the destroying sections committed, no lock held: the file is
 * emptied and its pool entry made clean (the fd kept as a spare's), or
 * (pool full) it goes. */
static void release_file(struct ns *ns, const struct rmfile *rf)
{
	char name[4200];
	int dfd, i, fd = -1;
	bool ok;

	if (!rf->set)
		return;
	dfd = seg_dirfd(ns);
	file_base(ns, rf->file, name, sizeof(name));
	crit_mutex_lock(&l_mutex);
	if (!rf->pooled) {
		unlink_seg(ns, rf, dfd, name);
		crit_mutex_unlock(&l_mutex);
		return;
	}
	i = fd_find(ns, rf->obj, rf->gen, rf->file);
	if (i >= 0) {
		/* ours now (an mmap in progress with it fails its check and
		 * does not close it) */
		fd = l_fds[i].fd;
		l_fds[i] = l_fds[--l_nfds];
	}
	crit_mutex_unlock(&l_mutex);
	if (fd < 0) {
		fd = seg_openat(ns, dfd, name, rf->file, O_RDWR | O_NONBLOCK);
		if (fd >= 0)
			fd = fd_hide(fd);
	}
	ok = fd >= 0 && seg_truncate(ns, fd, rf->file, 0) == 0;
	/* clean only once empty: a taker never meets this segment's data */
	ok = pool_settle(ns, rf->file, ok);
	crit_mutex_lock(&l_mutex);
	if (fd >= 0 && !(ok && spare_keep(ns, rf->file, fd)))
		fd_close_safe(fd);
	crit_mutex_unlock(&l_mutex);
}

static int lock_err(int r)
{
	return r < 0 ? r : -r;
}

/* Lock ids + segment; the segment must still be ID with generation GEN. */
static struct shmid_kernel *lock_both(struct ns *ns, int id, uint64_t gen, int *err)
{
	struct shmid_kernel *shp;
	int r = ids_lock(ns, IPC_SHM_IDS);

	if (r) {
		*err = lock_err(r);
		return NULL;
	}
	shp = shm_obtain_check(ns, id, err);
	if (!shp || shp->gen != gen) {
		if (shp)
			*err = -EIDRM;
		ids_unlock(ns, IPC_SHM_IDS);
		return NULL;
	}
	r = ulock_acquire(ns, &shp->lock);
	if (r) {
		*err = lock_err(r);
		ids_unlock(ns, IPC_SHM_IDS);
		return NULL;
	}
	if (!shp_valid(ns, shp, id, gen)) {
		ulock_release(ns, &shp->lock);
		ids_unlock(ns, IPC_SHM_IDS);
		*err = -EIDRM;
		return NULL;
	}
	return shp;
}

static void unlock_both(struct ns *ns, struct shmid_kernel *shp)
{
	ulock_release(ns, &shp->lock);
	ids_unlock(ns, IPC_SHM_IDS);
}

/*
 * Attach accounting of process slot PROC (pid PID) on segment ID: OPENS
 * fragments appeared (the kernel's shm_open: nattch++, atime, lpid) and
 * CLOSES went (shm_close: nattch--, dtime, lpid, destruction), CLOSES ==
 * UINT32_MAX: all of PROC's.  Opens are only counted while the segment
 * lives.
 */
static int shm_account(struct ns *ns, int id, uint64_t gen, uint32_t proc, int pid,
		       uint32_t opens, uint32_t closes)
{
	struct rmfile rf = { 0 };
	struct shmid_kernel *shp;
	uint32_t got = 0;
	int err = 0;

	for (int tries = 0;; tries++) {
		uint32_t dead[16];
		int n;

		shp = lock_both(ns, id, gen, &err);
		if (!shp)
			return err;
		/* a dead attacher's detach came first (at its death) */
		n = tries < 4 ? collect_dead(ns, shp, dead, 16) : 0;
		if (!n)
			break;
		unlock_both(ns, shp);
		for (int i = 0; i < n; i++)
			proc_reap(ns, proc_at(ns, dead[i]));
	}
	if (opens) {
		err = att_add(ns, shp, proc, opens);
		if (err) {
			j_abort(ns);
			unlock_both(ns, shp);
			return err;
		}
		J_SET(ns, shp->nattch, shp->nattch + opens);
		J_SET(ns, shp->atime, ipc_now());
		J_SET(ns, shp->lpid, (int32_t)pid);
	}
	/*
	 * A detach that destroys the segment journals all its stores in the
	 * ids frame, so that the last detach and the removal commit together:
	 * with the detach in the segment's frame, a death between the two
	 * releases left a segment marked for removal, unattached, in the table
	 * for ever.  Until the ids section is recovered, callers that take the
	 * segment lock alone must see it removed and store nothing into it:
	 * so it is marked removed before anything else is stored.  (Marked
	 * last, as ipc_rmid does, a death after the attachment record's
	 * removal let a shmat take the segment lock over, count itself into
	 * the record's place and commit; the ids rollback then brought the
	 * record count back: nattch one more than the records, and a segment
	 * marked for removal never destroyed.)
	 */
	{
		struct jframe *prev = NULL;
		bool redirect = !opens && closes &&
				detach_destroys(ns, shp, proc, closes == UINT32_MAX ? 0 : closes);
		bool destroyed = false;

		if (redirect) {
			prev = j_target(ns, &ns->hdr->ids[IPC_SHM_IDS].lock);
			J_SET(ns, shp->perm.deleted, 1u);
		}
		if (closes)
			got = att_del(ns, shp, proc, closes == UINT32_MAX ? 0 : closes);
		if (!opens && !closes && shm_may_destroy(ns, shp)) {
			shm_destroy(ns, shp, &rf);
			destroyed = true;
		}
		if (got) {
			J_SET(ns, shp->lpid, (int32_t)pid);
			J_SET(ns, shp->dtime, ipc_now());
			J_SET(ns, shp->nattch, shp->nattch >= got ? shp->nattch - got : 0);
			if (shm_may_destroy(ns, shp)) {
				shm_destroy(ns, shp, &rf);
				destroyed = true;
			}
		}
		if (redirect) {
			/* (not destroyed after all: a count the arena's writers changed) */
			if (!destroyed)
				J_SET(ns, shp->perm.deleted, 0u);
			j_target_restore(prev);
		}
	}
	unlock_both(ns, shp);
	release_file(ns, &rf);
	return 0;
}

/*
 * Under the ids lock, every file beside the namespace that is neither a
 * live segment's nor in the pool is a leftover: of a newseg killed between
 * creating its file and committing, or of a destroyer killed between its
 * commit and the unlink of a file the full pool did not take.  The pool's
 * own leftovers (rolled-back takes, dirty entries of dead holders) are
 * fixed first.  Called by the reaper (the dead process may have been
 * creating or destroying) and by SHM_INFO (ipcs).
 */
static void sweep_files(struct ns *ns)
{
	char dir[4096], pre[4200];
	const char *slash = strrchr(ns->path, '/');
	size_t plen;
	DIR *d;
	struct dirent *e;

	if (!slash)
		return;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - ns->path), ns->path);
	snprintf(pre, sizeof(pre), "%s.shm-", slash + 1);
	plen = strlen(pre);
	if (ids_lock(ns, IPC_SHM_IDS))
		return;
	pool_fix(ns);
	if (anon(ns)) {
		/* no names: a slot a dead creator took is given back by the
		 * rollback of its section */
		ids_unlock(ns, IPC_SHM_IDS);
		return;
	}
	d = opendir(dir[0] ? dir : "/");
	while (d && (e = readdir(d))) {
		unsigned long long file;
		int end = 0;
		char path[8448];

		if (strncmp(e->d_name, pre, plen) ||
		    sscanf(e->d_name + plen, "%llx%n", &file, &end) != 1 || e->d_name[plen + end])
			continue;
		if (file_in_use(ns, file))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	ids_unlock(ns, IPC_SHM_IDS);
}

/* ---- shmget ---- */

/* The process's umask, read once from /proc (reading it with umask()
 * would change it for a moment under other threads) and followed through
 * the umask() hook; -1: unknown. */
static _Atomic int l_umask = -2;

void shm_note_umask(mode_t m)
{
	atomic_store(&l_umask, (int)(m & 0777));
}

static int cur_umask(void)
{
	int m = atomic_load(&l_umask);

	if (m == -2) {
		char buf[2048], *p;
		int fd = sys_open("/proc/self/status", O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

		if (fd >= 0)
			sys_close(fd);
		m = -1;
		if (n > 0) {
			buf[n] = 0;
			p = strstr(buf, "Umask:");
			if (p)
				m = (int)strtol(p + 6, NULL, 8) & 0777;
		}
		int exp = -2;

		if (!atomic_compare_exchange_strong(&l_umask, &exp, m))
			m = exp;
	}
	return m;
}

/* The mode of a segment file: the namespace file's own (as this process
 * saw it at open: a value members cannot rewrite, unlike the header's), so
 * that whoever the namespace admits can open the segments it holds, as the
 * kernel leaves access to ipc_perm alone; rw only.  Never the umask's: a
 * kernel segment has no file mode, and the umask of the member that
 * happened to create a file must not shut the others out of its segment. */
static mode_t seg_file_mode(struct ns *ns)
{
	return (mode_t)(ns->file_mode & 0666) | 0600;
}

/* New segment file number FILE, created in the namespace directory;
 * *FDP: its fd, hidden (see fd_hide).  -EEXIST: the name is taken (by a
 * creation that died, or by someone who planted it): try another. */
static int create_file(struct ns *ns, uint64_t file, uint64_t size, int *fdp)
{
	char name[4200];
	int fd, dfd = seg_dirfd(ns), um;
	mode_t mode = seg_file_mode(ns);

	if (dfd < 0)
		return -ENOMEM;
	file_base(ns, file, name, sizeof(name));
	if (anon(ns))
		fd = seg_openat(ns, dfd, name, file, O_RDWR);
	else
		fd = sys_openat(dfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0 && errno == EEXIST)
		return -EEXIST;
	if (fd < 0)
		return errno == ENOSPC || errno == EDQUOT ? -ENOSPC : -ENOMEM;
	/* the umask may have taken bits of that mode away; in a group
	 * namespace the members share the namespace file's group, not ours */
	um = anon(ns) ? 0 : cur_umask();
	if (((um < 0 || (mode & (mode_t)um)) && fchmod(fd, mode) < 0) ||
	    seg_truncate(ns, fd, file, size) < 0) {
		int e = errno;

		sys_close(fd);
		seg_unlinkat(ns, dfd, name, file);
		return e == EFBIG || e == EINVAL ? -EINVAL : -ENOMEM;
	}
	if (!anon(ns) && ns->shared && ns->file_gid != getegid() && fchown(fd, (uid_t)-1, ns->file_gid) < 0) {
		/* not a member of that group: the file's other bits decide */
	}
	*fdp = fd_hide(fd);
	return 0;
}

/* A clean spare, sized to SIZE, for a new segment (ids lock held, in the
 * ids section): its number and fd (hidden); -ENOENT: none we can use. */
static int pool_take(struct ns *ns, uint64_t size, uint64_t *filep, int *fdp)
{
	struct shm_pool *pl = &ns->hdr->shm_pool;
	int dfd = seg_dirfd(ns);

	for (;;) {
		uint32_t k;
		int fd, found = -1, taking = -1;
		uint64_t file;

		/* from the top: the spare freed last, whose fd we may keep */
		for (k = pool_len(pl); k-- > 0;) {
			if (pl->e[k].state == SPARE_CLEAN) {
				found = (int)k;
				break;
			}
			if (pl->e[k].state == SPARE_TAKING) {
				taking = (int)k;
				break;
			}
		}
		if (taking >= 0) {
			pool_discard(ns, pl, (uint32_t)taking);  /* a rolled-back take */
			continue;
		}
		if (found < 0)
			return -ENOENT;
		k = (uint32_t)found;
		file = pl->e[k].file;
		crit_mutex_lock(&l_mutex);
		fd = spare_take(ns, file);
		crit_mutex_unlock(&l_mutex);
		if (fd < 0) {
			char name[4200];

			file_base(ns, file, name, sizeof(name));
			fd = seg_openat(ns, dfd, name, file, O_RDWR);
			if (fd < 0 && errno == ENOENT) {
				pool_remove(ns, pl, k);  /* removed behind our back */
				continue;
			}
			if (fd < 0)
				return -ENOENT;  /* not ours to open: a new file */
			fd = fd_hide(fd);
		}
		/* unjournaled on purpose: it must survive a rollback of this
		 * section (SPARE_TAKING), and comes before the journaled removal
		 * so that the removal's undo record holds it too */
		__atomic_store_n(&pl->e[k].state, SPARE_TAKING, __ATOMIC_RELAXED);
		pool_remove(ns, pl, k);
		if (seg_truncate(ns, fd, file, size) < 0) {
			int e = errno;

			close_guarded(fd);
			return e == EFBIG || e == EINVAL ? -EINVAL : -ENOMEM;
		}
		*filep = file;
		*fdp = fd;
		return 0;
	}
}

/*
 * An anonymous namespace's next segment number: the one after the last
 * given, going round past ANON_SLOTS to numbers no live segment or spare
 * has.  Journaled in the ids section, so a creation rolled back gives its
 * number (never written to) back.  A number reused after the round may
 * hold what a destroyer that died before emptying it left: emptied first.
 */
static int anon_seg_file(struct ns *ns, uint64_t size, uint64_t *filep, int *fdp)
{
	uint64_t *next = &ns->hdr->shm_pool.next_file;
	/* bit 63: the numbers went round once, so a number may be taken */
	bool wrapped = (*next >> 63) != 0;
	uint64_t file = *next & ~(1ULL << 63);
	int r;

	for (uint64_t tries = 0;; tries++) {
		if (tries >= ANON_SLOTS)
			return -ENOSPC;
		if (++file >= ANON_SLOTS) {
			file = 1;
			wrapped = true;
		}
		if (!wrapped || !file_in_use(ns, file))
			break;
	}
	r = create_file(ns, file, size, fdp);
	if (r == 0 && wrapped && seg_truncate(ns, *fdp, file, 0) < 0) {
		close_guarded(*fdp);
		r = -ENOMEM;
	}
	if (r == 0) {
		J_SET(ns, *next, file | (wrapped ? 1ULL << 63 : 0));
		*filep = file;
	}
	return r;
}

/* The file of a new segment of SIZE bytes: a spare, or a new file (ids
 * lock held, in the ids section).  A new file's number is drawn at random
 * (getrandom): names in a shared directory are seen by everyone, and a
 * predictable next name could be created first by another user to make
 * every shmget fail.  A name found taken is left alone and another drawn;
 * a leftover of a creation that died is swept (sweep_files). */
static int seg_file(struct ns *ns, uint64_t size, uint64_t *filep, int *fdp)
{
	int r = pool_take(ns, size, filep, fdp);

	if (r != -ENOENT)
		return r;
	if (anon(ns))
		return anon_seg_file(ns, size, filep, fdp);
	for (int tries = 0; tries < 16; tries++) {
		uint64_t file = (ns_random64() & ((1ULL << 60) - 1)) | 1;

		r = create_file(ns, file, size, fdp);
		if (r == 0)
			*filep = file;
		if (r != -EEXIST)
			return r;
	}
	return -ENOMEM;
}

/* The kernel's overcommit check for a segment of PAGES pages (heuristic
 * mode: no more than RAM + swap; "never" mode: the commit limit). */
static bool enough_memory(uint64_t pages)
{
	static int mode = -1;
	static uint64_t total;

	/* read once per process: the limits are not on any fast path */
	if (mode < 0) {
		char buf[64];
		int fd = sys_open("/proc/sys/vm/overcommit_memory", O_RDONLY | O_CLOEXEC);
		int m = 0;
		ssize_t n;
		struct sysinfo si;

		if (fd >= 0) {
			n = read(fd, buf, sizeof(buf) - 1);
			sys_close(fd);
			if (n > 0) {
				buf[n] = 0;
				m = atoi(buf);
			}
		}
		if (sysinfo(&si) == 0) {
			uint64_t unit = si.mem_unit ? si.mem_unit : 1;

			total = ((uint64_t)si.totalram + (uint64_t)si.totalswap) * unit / UIPC_PAGE;
		} else {
			m = 1;
		}
		mode = m;
	}
	return mode == 1 || pages <= total;
}

static long meminfo_field(const char *name)
{
	char buf[4096], *p;
	int fd = sys_open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	sys_close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	p = strstr(buf, name);
	return p ? strtol(p + strlen(name), NULL, 10) : -1;
}

/* SHM_HUGETLB as the kernel answers it: the page size asked for
 * (SHM_HUGE_SHIFT bits) must exist, the caller must be allowed
 * (CAP_IPC_LOCK or the hugetlb_shm_group), and without SHM_NORESERVE the
 * huge pages must be free. */
static int hugetlb_check(uint64_t size, int shmflg)
{
	int log = (shmflg >> 26) & 0x3f;
	long hps = meminfo_field("Hugepagesize:");  /* kB */
	uint64_t hsize;

	if (hps <= 0)
		return -EINVAL;
	hsize = (uint64_t)hps << 10;
	if (log && (1ULL << log) != hsize && log != 30)
		return -EINVAL;
	if (log == 30)
		hsize = 1ULL << 30;
	if (!has_cap_global(CAP_IPC_LOCK)) {    /* the kernel's capable() */
		char buf[32];
		int fd = sys_open("/proc/sys/vm/hugetlb_shm_group", O_RDONLY | O_CLOEXEC);
		long g = -1;
		ssize_t n;

		if (fd >= 0) {
			n = read(fd, buf, sizeof(buf) - 1);
			sys_close(fd);
			if (n > 0) {
				buf[n] = 0;
				g = atol(buf);
			}
		}
		if (g < 0 || (gid_t)g != cur_cred()->egid)
			return -EPERM;
	}
	if (!(shmflg & SHM_NORESERVE)) {
		long free_pages = hsize == ((uint64_t)hps << 10) ?
			meminfo_field("HugePages_Free:") : 0;

		if (free_pages < 0 || (uint64_t)free_pages < (size + hsize - 1) / hsize)
			return -ENOMEM;
	}
	return 0;
}

static int newseg(struct ns *ns, key_t key, int shmflg, long arg)
{
	struct uipc_hdr *h = ns->hdr;
	uint64_t size = (uint64_t)arg;
	uint64_t numpages = (size + UIPC_PAGE - 1) / UIPC_PAGE;
	struct shmid_kernel *shp;
	uoff_t off;
	uint64_t file = 0;
	int id, r, fd = -1;

	if (size < SHMMIN || size > h->lim.shmmax)
		return -EINVAL;
	if (numpages * UIPC_PAGE < size)
		return -ENOSPC;
	if (h->shm_tot + numpages < h->shm_tot || h->shm_tot + numpages > h->lim.shmall)
		return -ENOSPC;
	if (shmflg & SHM_HUGETLB) {
		/* hugetlb_file_setup: the huge pages are reserved unless
		 * SHM_NORESERVE (the segment itself is backed by normal
		 * pages in uipc) */
		r = hugetlb_check(size, shmflg);
		if (r)
			return r;
	} else if (!(shmflg & SHM_NORESERVE) && !enough_memory(numpages)) {
		/* shmem_kernel_file_setup: the memory is accounted */
		return -ENOMEM;
	}
	if (h->ids[IPC_SHM_IDS].in_use >=
	    (int64_t)(h->lim.shmmni < (uint64_t)ns->ipcmni ? h->lim.shmmni : (uint64_t)ns->ipcmni))
		return -ENOSPC;
	/* ALLOC is journaled in the ids frame: a failure or crash frees it */
	off = arena_alloc(ns, sizeof(struct shmid_kernel), POOL_SHM);
	shp = off ? ns_ptr(ns, off, sizeof(*shp)) : NULL;
	if (!shp)
		return -ENOMEM;
	/* its file (a spare, or a new one): journaled in the ids frame too;
	 * on any error below the fd is closed and the section's rollback puts
	 * a spare back as SPARE_TAKING (discarded) or the new number back
	 * (its file replaced by the next creation, or swept) */
	r = seg_file(ns, PAGE_ALIGN(size), &file, &fd);
	if (r)
		return r;
	/*
	 * Segment-pool memory is not zeroed on reuse: a caller that looked up
	 * the segment that lived here before may still take its lock, so the
	 * lock is initialized once (perm.pad says so) and the segment is built
	 * under it, which shuts such callers out; they then see id -1 or
	 * another generation and give up.  Not visible to lookups yet: plain
	 * stores (a crash frees the block with the ids section).
	 */
	if (shp->perm.pad != SHM_LOCK_MAGIC) {
		ulock_init(&shp->lock);
		shp->perm.pad = SHM_LOCK_MAGIC;
	}
	r = ulock_acquire(ns, &shp->lock);
	if (r) {
		close_guarded(fd);
		return r;
	}
	__atomic_store_n(&shp->perm.id, -1, __ATOMIC_RELEASE);
	memset((char *)shp + offsetof(struct shmid_kernel, lock) + sizeof(shp->lock), 0,
	       sizeof(*shp) - offsetof(struct shmid_kernel, lock) - sizeof(shp->lock));
	shp->perm.uid = shp->perm.gid = shp->perm.cuid = shp->perm.cgid = 0;
	shp->perm.type = IPC_SHM_IDS;
	shp->perm.key = (int32_t)key;
	shp->perm.mode = (uint32_t)(shmflg & 0777);
	atomic_store(&shp->perm.deleted, 0u);
	shp->segsz = size;
	shp->atime = shp->dtime = 0;
	shp->ctime = ipc_now();
	shp->cpid = cur_pid();
	shp->lpid = 0;
	shp->nattch = 0;
	shp->gen = arena_block_gen(ns, off);
	{
		struct uproc *me = cur_proc(ns);

		shp->creator = me ? (uint32_t)(((char *)me - (ns->base + ns->lay.procs)) /
					       (ptrdiff_t)sizeof(struct uproc)) : NO_PROC;
	}
	shp->creator_pid = cur_pid();
	shp->att = 0;
	shp->att_cap = shp->att_n = 0;
	shp->fd_shared = 0;
	shp->file = file;
	ulock_release(ns, &shp->lock);
	/*
	 * Its id is stored when the ids section commits, not before: lookups
	 * by id take no ids lock, and shmat then takes the segment lock alone.
	 * Found with its id before the commit, an attach counted itself into
	 * a segment (an attachment record, its block) that the rollback of a
	 * creator killed before the commit took away: the attacher's shmat
	 * had succeeded on a segment gone without a removal, and the record's
	 * block was lost.  Until the commit, lookups by id fail (EINVAL), as
	 * before the kernel's ipc_addid.
	 */
	id = ipc_addid_at_commit(ns, IPC_SHM_IDS, &shp->perm,
				 (int)(h->lim.shmmni > INT_MAX ? INT_MAX : h->lim.shmmni));
	if (id < 0) {
		close_guarded(fd);
		return id;
	}
	/* its creator knows its size: a later rewrite of segsz is seen */
	ipc_seen_size(ns, IPC_SHM_IDS, id, size);
	J_SET(ns, h->shm_tot, h->shm_tot + numpages);
	/* kept for our attaches: if another process destroys the segment, it
	 * truncates the file (we are the creator: fd_shared stays clear) */
	crit_mutex_lock(&l_mutex);
	l_used = true;
	if (!fd_keep(ns, off, shp->gen, file, fd))
		close_guarded(fd);
	crit_mutex_unlock(&l_mutex);
	return id;
}

static int shm_more_checks(struct ns *ns, struct uperm *p, long size)
{
	(void)ns;
	return shp_of(p)->segsz < (uint64_t)size ? -EINVAL : 0;
}

static void run_exec_pending(struct ns *ns);
static void reap_all(struct ns *ns);

int ksys_shmget(key_t key, size_t size, int shmflg)
{
	static const struct ipc_ops ops = { newseg, shm_more_checks };
	struct ns *ns = ns_get();

	if (!ns)
		return -errno;
	run_exec_pending(ns);
	shm_enter(ns);
	int r;

	if (ns->hdr->lim.shm_rmid_forced)
		reap_all(ns);
	r = ipcget(ns, IPC_SHM_IDS, key, shmflg, (long)size, &ops);
	if (r >= 0 && key != IPC_PRIVATE) {
		/* an existing segment that a dead attacher's exit would have
		 * destroyed: reap, and ask again */
		int err;
		struct shmid_kernel *shp = shm_obtain_check(ns, r, &err);

		if (shp && reap_dead_attachers(ns, shp))
			r = ipcget(ns, IPC_SHM_IDS, key, shmflg, (long)size, &ops);
	}
	return r;
}

/* ---- dead attachers ---- */

static uint32_t proc_index(struct ns *ns, struct uproc *p)
{
	return (uint32_t)(((char *)p - (ns->base + ns->lay.procs)) / (ptrdiff_t)sizeof(struct uproc));
}

/* Processes killed without their exit work are detached before anyone
 * reads the segment's accounting (as the kernel did at their death). */
/* the segment's state is committed (its lock is free): lock-free reads of
 * the attachers are safe to act on */
static bool seg_quiet(struct shmid_kernel *shp)
{
	return ulock_is_free(&shp->lock);
}

/* Under the segment lock: the dead processes among its attachers (and its
 * creator, when shm_rmid_forced makes its death matter). */
static int collect_dead(struct ns *ns, struct shmid_kernel *shp, uint32_t *dead, int max)
{
	struct uproc *me = cur_proc(ns);
	uint32_t cap, cnt;
	struct shm_att *a = att_at(ns, shp, &cap, &cnt);
	int n = 0;

	for (uint32_t i = 0; i < cnt && n < max; i++) {
		struct uproc *p = proc_at(ns, a[i].proc);

		if (p && p != me && proc_is_dead(ns, p))
			dead[n++] = a[i].proc;
	}
	if (ns->hdr->lim.shm_rmid_forced && shp->creator != NO_PROC && n < max) {
		struct uproc *p = proc_at(ns, shp->creator);

		if (p && p != me && proc_is_dead(ns, p))
			dead[n++] = shp->creator;
	}
	return n;
}

static bool reap_dead_attachers(struct ns *ns, struct shmid_kernel *shp)
{
	uint32_t dead[16];
	int n;

	if (!__atomic_load_n(&shp->att_n, __ATOMIC_ACQUIRE) && !ns->hdr->lim.shm_rmid_forced &&
	    seg_quiet(shp))
		return false;
	/* under the lock: a dead holder's half-done change is rolled back
	 * before we read */
	if (ulock_acquire(ns, &shp->lock))
		return false;
	n = collect_dead(ns, shp, dead, 16);
	ulock_release(ns, &shp->lock);
	for (int i = 0; i < n; i++)
		proc_reap(ns, proc_at(ns, dead[i]));
	return n > 0;
}

/* The same for every segment (the INFO commands, shmget under
 * shm_rmid_forced: what a dead process's exit would have destroyed). */
static void reap_all(struct ns *ns)
{
	int maxidx;

	if (ids_lock(ns, IPC_SHM_IDS) == 0)
		ids_unlock(ns, IPC_SHM_IDS);
	maxidx = ipc_get_maxidx(ns, IPC_SHM_IDS);

	for (int i = 0; i <= maxidx; i++) {
		struct uperm *p = ipc_obtain(ns, IPC_SHM_IDS, i);

		if (p && ns_ptr(ns, ns_off(ns, p), sizeof(struct shmid_kernel)))
			reap_dead_attachers(ns, shp_of(p));
	}
}

/* ---- shmat ---- */

/* File number FILE of segment (OFF, GEN), as read without the lock (the
 * caller checks both under it: seg_file_is), from the cache (*OWN false:
 * busy until fd_unbusy) or opened (*OWN true: the caller's, to cache or
 * close_guarded). */
static int open_seg(struct ns *ns, uoff_t off, uint64_t gen, uint64_t file, int oflag, bool *own)
{
	char name[4200];
	int fd, i, dfd;

	crit_mutex_lock(&l_mutex);
	i = fd_find(ns, off, gen, file);
	if (i >= 0) {
		fd = l_fds[i].fd;
		l_fd_busy++;
		crit_mutex_unlock(&l_mutex);
		*own = false;
		return fd;
	}
	crit_mutex_unlock(&l_mutex);
	dfd = anon(ns) ? -1 : seg_dirfd(ns);
	if (dfd < 0 && !anon(ns))
		return -ENOMEM;
	file_base(ns, file, name, sizeof(name));
	fd = seg_openat(ns, dfd, name, file, oflag);
	if (fd < 0)
		return errno == ENOENT ? -EIDRM : -errno;
	/* cached by the caller once the segment is marked (fd_keep) */
	*own = true;
	return fd_hide(fd);
}

/* A new read-only fd of segment file FILE (SHM_RDONLY: the kernel's vma of
 * such an attachment lacks VM_MAYWRITE, so even a raw mprotect(PROT_WRITE)
 * fails with EACCES; a mapping of a read-write fd could be made writable).
 * The caller's (*OWN true), or -errno. */
static int open_seg_rdonly(struct ns *ns, uint64_t file, bool *own)
{
	char name[4200];
	int fd, dfd = anon(ns) ? -1 : seg_dirfd(ns);

	if (dfd < 0 && !anon(ns))
		return -ENOMEM;
	file_base(ns, file, name, sizeof(name));
	fd = seg_openat(ns, dfd, name, file, O_RDONLY);
	if (fd < 0)
		return errno == ENOENT ? -EIDRM : -errno;
	*own = true;
	return fd_hide(fd);
}

/* (segment lock held) Is SHP still segment SHMID of generation GEN, with
 * file FILE, as a caller that read GEN and FILE without the lock found it? */
static bool seg_is(struct ns *ns, struct shmid_kernel *shp, int shmid, uint64_t gen,
		   uint64_t file)
{
	return shp_valid(ns, shp, shmid, gen) && seg_file_is(shp, file);
}

/* seg_is, taking the lock.  An fd opened by a number read without the lock
 * may be of a segment destroyed since: its file is truncated after the
 * destroying section commits, so a short file is an ordinary race, not
 * corruption, unless the segment still has it. */
static bool seg_still_has(struct ns *ns, struct shmid_kernel *shp, int shmid, uint64_t gen,
			  uint64_t file)
{
	bool has;

	if (ulock_acquire(ns, &shp->lock))
		return false;
	has = seg_is(ns, shp, shmid, gen, file);
	ulock_release(ns, &shp->lock);
	return has;
}

/*
 * The length to map for segment SHP (id SHMID of generation GEN, file
 * FILE, opened as FD), or -errno.  Its size comes from the arena, where
 * another member can rewrite it: checked against what this process was
 * told of the segment (validate.c: it never changes under a process that
 * knew it), and against the real file: a file shorter than the mapping
 * would give the program SIGBUS, a size larger than the file would let
 * SHM_REMAP replace whatever the program has mapped after its address.
 */
static int64_t shmat_length(struct ns *ns, struct shmid_kernel *shp, int shmid, uint64_t gen,
			    uint64_t file, int fd)
{
	uint64_t segsz = __atomic_load_n(&shp->segsz, __ATOMIC_RELAXED);
	uint64_t len = PAGE_ALIGN(segsz);
	struct stat st;
	off_t at;

	if (segsz < SHMMIN || len < segsz || len > (uint64_t)INT64_MAX)
		return -EIDRM;
	if (ipc_seen_size(ns, IPC_SHM_IDS, shmid, segsz))
		return -EIDRM;
	if (anon(ns)) {
		/* its slot of the memfd, whose size is the whole address range
		 * unless a member truncated it (any member holds the memfd) */
		at = seg_map_off(ns, file);
		if (at < 0 || len > ANON_SLOT)
			return -EIDRM;
		if (fstat(fd, &st) < 0 || (uint64_t)st.st_size < (uint64_t)at + len) {
			if (seg_still_has(ns, shp, shmid, gen, file))
				ns_corrupt(ns, "namespace memfd shorter than a segment's slot");
			return -EIDRM;
		}
		return (int64_t)len;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < len) {
		if (seg_still_has(ns, shp, shmid, gen, file))
			ns_corrupt(ns, "segment file shorter than its segment");
		return -EIDRM;
	}
	return (int64_t)len;
}

static void seg_fd_done(int fd, bool own)
{
	if (own)
		close_guarded(fd);
	else
		fd_unbusy();
}

static uint32_t l_att_serial;

static void local_add(struct lattach f)
{
	if (!f.att)
		f.att = ++l_att_serial;
	if (l_n == l_cap) {
		int cap = l_cap ? l_cap * 2 : 16;
		struct lattach *n = realloc(l_att, (size_t)cap * sizeof(*n));

		if (!n)
			return;
		l_att = n;
		l_cap = cap;
	}
	l_att[l_n++] = f;
}

struct seg_delta {
	struct ns *ns;
	int shmid;
	uint64_t gen;
	uint32_t opens, closes;
};

static void delta_add(struct seg_delta *d, int *nd, int max, const struct lattach *f,
		      uint32_t opens, uint32_t closes)
{
	int i;

	for (i = 0; i < *nd; i++)
		if (d[i].shmid == f->shmid && d[i].gen == f->gen && d[i].ns == f->ns)
			break;
	if (i == *nd) {
		if (*nd == max)
			return;
		d[(*nd)++] = (struct seg_delta){ f->ns, f->shmid, f->gen, 0, 0 };
	}
	d[i].opens += opens;
	d[i].closes += closes;
}

/*
 * The local table follows the vmas the kernel would have (l_mutex held):
 * a vma cut in two is split and the new one opened (the kernel's
 * split_vma calls shm_open: nattch++), a vma unmapped is closed
 * (shm_close: nattch--), vmas of attachments are never merged again.
 * The accounting is collected in D and applied after (apply_deltas).
 */
struct deltas {
	struct seg_delta d[16];
	int n;
};

/* the fragment strictly containing A is split there (only if WANT says
 * so for it) */
struct vchange {
	int prot;                  /* -1: unchanged */
	uint32_t clear, set;       /* VMF_* */
};

static void frag_split(uintptr_t a, struct deltas *ds,
		       bool (*want)(const struct lattach *, const struct vchange *),
		       const struct vchange *arg)
{
	for (int i = 0; i < l_n; i++) {
		struct lattach *f = &l_att[i];

		if (f->addr < a && a < f->addr + f->len && (!want || want(f, arg))) {
			struct lattach t = *f;

			t.addr = a;
			t.len = f->addr + f->len - a;
			t.pgoff = f->pgoff + (a - f->addr) / UIPC_PAGE;
			f->len = a - f->addr;
			delta_add(ds->d, &ds->n, 16, f, 1, 0);
			local_add(t);
			return;
		}
	}
}

/* [addr, addr+len) is unmapped (munmap, or replaced by a MAP_FIXED
 * mapping): fragments are cut at both ends, those inside are closed */
static void frag_unmap(uintptr_t addr, size_t len, struct deltas *ds)
{
	uintptr_t end = addr + len;

	frag_split(addr, ds, NULL, NULL);
	frag_split(end, ds, NULL, NULL);
	for (int i = 0; i < l_n;) {
		struct lattach f = l_att[i];

		if (f.addr >= addr && f.addr + f.len <= end) {
			delta_add(ds->d, &ds->n, 16, &f, 0, 1);
			l_att[i] = l_att[--l_n];
			continue;
		}
		i++;
	}
}

static bool overlaps(uintptr_t addr, size_t len)
{
	for (int i = 0; i < l_n; i++)
		if (l_att[i].addr < addr + len && addr < l_att[i].addr + l_att[i].len)
			return true;
	return false;
}

static int shm_account(struct ns *ns, int id, uint64_t gen, uint32_t proc, int pid,
		       uint32_t opens, uint32_t closes);

/* A namespace this process left, kept only for attachments made in it:
 * with the last of them detached it is let go (core/proc.c) */
static void left_check(struct ns *ns)
{
	if (unlikely(__atomic_load_n(&ns->left, __ATOMIC_RELAXED)))
		proc_ns_idle(ns);
}

/* the attach accounting of fragments changed (a MAP_FIXED attach
 * replaced them, munmap, mremap, ...), each in its segment's namespace */
static void apply_deltas(struct ns *ns, struct uproc *me, struct seg_delta *d, int nd)
{
	for (int i = 0; i < nd; i++) {
		struct ns *sn = d[i].ns;
		struct uproc *p = sn == ns ? me : cur_proc(sn);

		if (p)
			shm_account(sn, d[i].shmid, d[i].gen, proc_index(sn, p), cur_pid(),
				    d[i].opens, d[i].closes);
	}
	for (int i = 0; i < nd; i++)
		if (d[i].closes && d[i].ns != ns && (i == 0 || d[i].ns != d[i - 1].ns))
			left_check(d[i].ns);
}

/*
 * SHM_LOCK: the kernel marks the segment's pages unevictable; it neither
 * faults them in nor counts them against the process's RLIMIT_MEMLOCK.
 * User space can only mlock the attachments (MLOCK_ONFAULT), which walks
 * their pages at every SHM_LOCK, SHM_UNLOCK and attach (stress-ng's
 * --shm-sysv spent a tenth of its time there) and does count.  Without
 * swap the kernel never evicts shared memory pages, locked or not: then
 * the mark alone is the kernel's behaviour, and the attachments are left
 * alone.  Asked at each use: swap may be turned on or off meanwhile.
 */
static bool shm_lock_by_mlock(void)
{
	struct sysinfo si;

	return sys_syscall(SYS_sysinfo, &si) != 0 || si.totalswap != 0;
}

/* SHM_REMAP: move the mapping *M (counted, segment lock held) over TO,
 * replacing what is there in one step; 0, or -errno with *M untouched */
static int shmat_remap(void **m, void *to, uint64_t len)
{
	void *r = sys_mremap(*m, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to);

	if (r == MAP_FAILED)
		return errno == ENOMEM ? -ENOMEM : -EINVAL;
	*m = r;
	return 0;
}

static long do_shmat(struct ns *ns, int shmid, const void *shmaddr, int shmflg)
{
	uintptr_t addr = (uintptr_t)shmaddr;
	void *remap_to = NULL;
	struct shmid_kernel *shp;
	int prot, acc, oflag, fd, err = 0, r;
	uint64_t gen, len, file;
	bool own = false;
	int keep = -1;
	bool rw;
	void *m;
	int flags = MAP_SHARED;

	if (shmid < 0)
		return -EINVAL;
	if (addr) {
		if (addr & (SHMLBA_X - 1)) {
			if (shmflg & SHM_RND) {
				addr &= ~(uintptr_t)(SHMLBA_X - 1);
				if (!addr && (shmflg & SHM_REMAP))
					return -EINVAL;
			} else {
				return -EINVAL;
			}
		}
		flags |= MAP_FIXED;
	} else if (shmflg & SHM_REMAP) {
		return -EINVAL;
	}
	if (shmflg & SHM_RDONLY) {
		prot = PROT_READ;
		acc = 0444;
		oflag = O_RDONLY;
	} else {
		prot = PROT_READ | PROT_WRITE;
		acc = 0666;
		oflag = O_RDWR;
	}
	if (shmflg & SHM_EXEC) {
		prot |= PROT_EXEC;
		acc |= 0111;
	}
	shp = shm_obtain_check(ns, shmid, &err);
	if (!shp)
		return err;
	if (ipcperms(&shp->perm, acc))
		return -EACCES;
	gen = __atomic_load_n(&shp->gen, __ATOMIC_ACQUIRE);
	file = __atomic_load_n(&shp->file, __ATOMIC_ACQUIRE);
	if (atomic_load(&shp->perm.deleted) || shp->perm.id != shmid)
		return -EIDRM;
	/*
	 * SHM_RDONLY maps a read-only open file (open_seg_rdonly).  A process
	 * that may not open the file itself (a child that changed its uid
	 * after fork) maps the read-only twin it opened before the change
	 * (ro_twin); without one, the read-write fd it holds: it can write
	 * through that fd anyway, and the mprotect hook still refuses
	 * PROT_WRITE (shm_mprotect_denied).
	 */
	fd = oflag == O_RDONLY ? open_seg_rdonly(ns, file, &own) : -EACCES;
	if ((fd == -EACCES || fd == -EPERM) && oflag == O_RDONLY)
		fd = ro_twin(ns, ns_off(ns, shp), gen, file, &own);
	rw = false;
	if (fd == -EACCES || fd == -EPERM) {
		fd = open_seg(ns, ns_off(ns, shp), gen, file, O_RDWR, &own);
		rw = fd >= 0;
		if (fd < 0 && oflag == O_RDONLY && fd != -EIDRM)
			fd = open_seg(ns, ns_off(ns, shp), gen, file, O_RDONLY, &own);
	}
	if (fd < 0)
		return fd == -EIDRM ? -EIDRM : -EACCES;
	{
		int64_t l = shmat_length(ns, shp, shmid, gen, file, fd);

		if (l < 0) {
			seg_fd_done(fd, own);
			return l;
		}
		len = (uint64_t)l;
	}
	if (addr && !(shmflg & SHM_REMAP)) {
		void *probe;

		if (addr + len < addr) {
			err = -EINVAL;
			goto out_fd;
		}
		probe = sys_mmap((void *)addr, len, PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (probe == MAP_FAILED || probe != (void *)addr) {
			if (probe != MAP_FAILED)
				sys_munmap(probe, len);
			err = errno == EEXIST || probe != MAP_FAILED ? -EINVAL : -ENOMEM;
			goto out_fd;
		}
		/* the probe reserved the range: replace it atomically */
	}
	/* not through the mmap hook: the accounting of what a MAP_FIXED
	 * attach replaces is done below, after the new attach is counted.
	 * SHM_REMAP maps elsewhere first and moves the mapping over ADDR
	 * only once it is counted (shmat_remap): an attach that fails must
	 * leave the caller's mapping there as it was. */
	if (addr && (shmflg & SHM_REMAP)) {
		remap_to = (void *)addr;
		m = sys_mmap(NULL, len, prot, MAP_SHARED, fd, seg_map_off(ns, file));
		if (m != MAP_FAILED && (uintptr_t)m < addr + len && addr < (uintptr_t)m + len) {
			/* placed over the target itself (it was free): another
			 * place, while this one keeps the range taken */
			void *other = sys_mmap(NULL, len, prot, MAP_SHARED, fd, seg_map_off(ns, file));

			sys_munmap(m, len);
			m = other;
		}
	} else {
		m = sys_mmap((void *)addr, len, prot, flags, fd, seg_map_off(ns, file));
	}
	if (m == MAP_FAILED) {
		err = errno == EACCES || errno == EPERM ? -EACCES : -errno;
		if (addr && !(shmflg & SHM_REMAP))
			sys_munmap((void *)addr, len);
		goto out_fd;
	}
	/* an fd we opened read-write is kept once the segment is marked */
	if (own && rw) {
		keep = fd;
	} else {
		seg_fd_done(fd, own);
	}
	fd = -1;
	/* mapped: now count it (a crash before this leaves no mapping) */
	{
		struct uproc *me = cur_proc(ns);
		struct deltas ds = { .n = 0 };

		if (!me) {
			sys_munmap(m, len);
			if (keep >= 0)
				close_guarded(keep);
			return -ENOMEM;
		}
		crit_mutex_lock(&l_mutex);
		l_used = true;
		if ((flags & MAP_FIXED) && !remap_to)
			frag_unmap((uintptr_t)m, len, &ds);
		crit_mutex_unlock(&l_mutex);
		for (int tries = 0;; tries++) {
			uint32_t dead[16];
			int n;

			r = ulock_acquire(ns, &shp->lock);
			if (r) {
				sys_munmap(m, len);
				apply_deltas(ns, me, ds.d, ds.n);
				if (keep >= 0)
					close_guarded(keep);
				return lock_err(r);
			}
			n = tries < 4 && shp_valid(ns, shp, shmid, gen) ?
				collect_dead(ns, shp, dead, 16) : 0;
			if (!n)
				break;
			ulock_release(ns, &shp->lock);
			for (int i = 0; i < n; i++)
				proc_reap(ns, proc_at(ns, dead[i]));
		}
		/* what we mapped may be a file that is no longer (or was
		 * never, for a torn read of gen and file) this segment's: it
		 * was never shown to the program, and goes */
		if (!seg_is(ns, shp, shmid, gen, file)) {
			ulock_release(ns, &shp->lock);
			sys_munmap(m, len);
			apply_deltas(ns, me, ds.d, ds.n);
			if (keep >= 0)
				close_guarded(keep);
			return -EIDRM;
		}
		r = att_add(ns, shp, proc_index(ns, me), 1);
		if (!r && remap_to)
			r = shmat_remap(&m, remap_to, len);
		if (r) {
			j_abort(ns);
			ulock_release(ns, &shp->lock);
			sys_munmap(m, len);
			apply_deltas(ns, me, ds.d, ds.n);
			if (keep >= 0)
				close_guarded(keep);
			return r;
		}
		/* the segment lives and its destroyer needs this lock: the
		 * mark is seen (see fd_shared) */
		if (keep >= 0 && !is_creator(ns, shp))
			atomic_fetch_or(&shp->fd_shared, 1u);
		J_SET(ns, shp->nattch, shp->nattch + 1);
		J_SET(ns, shp->atime, ipc_now());
		J_SET(ns, shp->lpid, (int32_t)cur_pid());
		if ((shp->perm.mode & SHM_MODE_LOCKED) && shm_lock_by_mlock())
			sys_syscall(SYS_mlock2, m, len, MLOCK_ONFAULT);
		ulock_release(ns, &shp->lock);
		crit_mutex_lock(&l_mutex);
		if (remap_to)
			frag_unmap((uintptr_t)m, len, &ds);   /* what it replaced */
		local_add((struct lattach){ (uintptr_t)m, len, 0, len, prot,
					    l_vmf_future | (shmflg & SHM_RDONLY ? VMF_NOWRITE : 0),
					    shmid, ns_off(ns, shp), gen, 0, ns, FORK_SELF });
		if (keep >= 0 && !fd_keep(ns, ns_off(ns, shp), gen, file, keep))
			close_guarded(keep);
		crit_mutex_unlock(&l_mutex);
		/* an image we exec must drop our attachments even if it
		 * never calls uipc: tell its constructor (shm_init) */
		if (!l_env_marked) {
			l_env_marked = true;
			setenv("UIPC_SHM_EXEC", "1", 1);
		}
		/* what the new mapping replaced: after the new attach is
		 * counted, as the kernel counts it before it maps */
		apply_deltas(ns, me, ds.d, ds.n);
	}
	return (long)(uintptr_t)m;
out_fd:
	/* the kernel counted the attach before it failed: its shm_close may
	 * destroy the segment (SHM_DEST or shm_rmid_forced, unattached) */
	{
		struct uproc *me = cur_proc(ns);

		if (me)
			shm_account(ns, shmid, gen, proc_index(ns, me), cur_pid(), 0, 0);
	}
	if (fd >= 0)
		seg_fd_done(fd, own);
	return err;
}

/* the address attached, or -errno (the kernel's raw shmat result) */
long ksys_shmat(int shmid, const void *shmaddr, int shmflg)
{
	struct ns *ns = ns_get();
	long r;

	if (!ns)
		return -errno;
	run_exec_pending(ns);
	shm_enter(ns);
	hooks_enter();
	r = do_shmat(ns, shmid, shmaddr, shmflg);
	hooks_leave();
	return r;
}

/* ---- shmdt ---- */

/*
 * Take out of the local table up to MAX fragments of the attachment whose
 * lowest fragment F0 starts at or above ADDR (the same segment and
 * generation, each at its own offset from ADDR, inside the segment's
 * length), into GONE.  With l_mutex held.
 */
static int take_fragments(const struct lattach *f0, uintptr_t addr, struct lattach *gone,
			  int max)
{
	int n = 0;

	for (int i = 0; i < l_n && n < max;) {
		struct lattach *f = &l_att[i];

		if (f->addr > f0->addr && f->shmid == f0->shmid && f->gen == f0->gen &&
		    f->obj == f0->obj && f->ns == f0->ns && f->addr + f->len - addr <= f0->seglen &&
		    (f->addr - addr) / UIPC_PAGE == f->pgoff) {
			gone[n++] = *f;
			l_att[i] = l_att[--l_n];
			continue;
		}
		i++;
	}
	return n;
}

/* unmap the N fragments of GONE, adjacent ones with one munmap (an
 * attachment that madvise or mprotect cut into tens of vmas is one range
 * again, as the kernel's shmdt unmaps it in one call) */
static void unmap_fragments(struct lattach *gone, int n)
{
	for (int i = 1; i < n; i++) {           /* by address (n <= 64) */
		struct lattach f = gone[i];
		int j = i;

		for (; j > 0 && gone[j - 1].addr > f.addr; j--)
			gone[j] = gone[j - 1];
		gone[j] = f;
	}
	for (int i = 0; i < n;) {
		uintptr_t start = gone[i].addr, end = start + gone[i].len;

		while (++i < n && gone[i].addr == end)
			end += gone[i].len;
		sys_munmap((void *)start, end - start);
	}
}

/*
 * The kernel's shmdt: the first fragment (in address order) ending above
 * ADDR that maps its segment from ADDR on (start - addr == pgoff pages) is
 * detached; then every later fragment of the same segment, mapped from
 * ADDR on too, that ends within the segment's size from ADDR.
 */
static int do_shmdt(struct ns *ns, const void *shmaddr)
{
	uintptr_t addr = (uintptr_t)shmaddr;
	struct lattach gone[64], f0;
	int ngone, first = -1;
	struct uproc *me;

	if (addr & (UIPC_PAGE - 1))
		return -EINVAL;
	crit_mutex_lock(&l_mutex);
	for (int i = 0; i < l_n; i++) {
		struct lattach *f = &l_att[i];

		if (f->addr + f->len <= addr || f->addr < addr)
			continue;
		if ((f->addr - addr) / UIPC_PAGE != f->pgoff || (f->addr - addr) % UIPC_PAGE)
			continue;
		/* the lowest fragment ending above addr, among candidates;
		 * an earlier non-matching one does not stop the kernel */
		if (first < 0 || f->addr < l_att[first].addr)
			first = i;
	}
	if (first < 0) {
		crit_mutex_unlock(&l_mutex);
		return -EINVAL;
	}
	f0 = l_att[first];
	l_att[first] = l_att[--l_n];
	gone[0] = f0;
	ngone = 1 + take_fragments(&f0, addr, gone + 1, 63);
	crit_mutex_unlock(&l_mutex);
	/* the segment's namespace, whichever this thread is in now: the
	 * kernel's shm_close works on the vma's file, of the namespace the
	 * segment was attached in */
	ns = f0.ns;
	me = cur_proc(ns);
	/*
	 * Unmap first, count after, as the kernel's shmdt does (and the munmap
	 * hook): the last detach may destroy the segment, and then its file
	 * goes to the pool and can be another segment's at once, so no mapping
	 * may outlive its count (another thread would see the new segment's
	 * data).  Killed in between: the reaper closes all our attachments.
	 * Each fragment is one of the kernel's vmas, one close; more than 64
	 * go in batches.
	 */
	for (;;) {
		unmap_fragments(gone, ngone);
		if (me)
			shm_account(ns, f0.shmid, f0.gen, proc_index(ns, me), cur_pid(), 0,
				    (uint32_t)ngone);
		if (ngone < 64)
			break;
		crit_mutex_lock(&l_mutex);
		ngone = take_fragments(&f0, addr, gone, 64);
		crit_mutex_unlock(&l_mutex);
		if (!ngone)
			break;
	}
	left_check(ns);
	return 0;
}

int ksys_shmdt(const void *shmaddr)
{
	struct ns *ns = ns_get();
	int r;

	if (!ns)
		return -errno;
	run_exec_pending(ns);
	shm_enter(ns);
	hooks_enter();
	r = do_shmdt(ns, shmaddr);
	hooks_leave();
	return r;
}

/* ---- the application's own munmap, mmap(MAP_FIXED), mremap, mprotect ----
 *
 * The kernel counts vmas (linux-semantics.md section 6, and what
 * tests/diff/shm_vma.c checks): munmap of a whole attachment detaches it,
 * of a part cuts it (each piece left is an attachment), a vma moved by
 * mremap is opened at its new place and closed at the old one, one split
 * by mprotect counts twice.  The hooks (entry/watch.c) make the call, then
 * bring the local table and the counts up to date; l_mutex is held across
 * the call so that a concurrent shmat does not add a fragment that the
 * update would then take for an old one.
 */

static bool any_attached(void)
{
	return __atomic_load_n(&l_n, __ATOMIC_RELAXED) != 0;
}

static void settle(struct deltas *ds)
{
	if (!ds->n)
		return;
	apply_deltas(NULL, NULL, ds->d, ds->n);
}

int shm_hook_munmap(void *addr, size_t len)
{
	struct deltas ds = { .n = 0 };
	int r;

	if (likely(!any_attached()))
		return sys_munmap(addr, len);
	hooks_enter();
	crit_mutex_lock(&l_mutex);
	r = sys_munmap(addr, len);
	if (r == 0 && len)
		frag_unmap((uintptr_t)addr, PAGE_ALIGN(len), &ds);
	crit_mutex_unlock(&l_mutex);
	settle(&ds);
	hooks_leave();
	return r;
}

void *shm_hook_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	struct deltas ds = { .n = 0 };
	long r;

	if (likely(!(flags & MAP_FIXED) || !any_attached()))
		return (void *)sys_syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	hooks_enter();
	crit_mutex_lock(&l_mutex);
	r = sys_syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	if (r != -1 && len)
		frag_unmap((uintptr_t)r, PAGE_ALIGN(len), &ds);
	crit_mutex_unlock(&l_mutex);
	settle(&ds);
	hooks_leave();
	return (void *)r;
}

static int frag_at(uintptr_t a)
{
	for (int i = 0; i < l_n; i++)
		if (l_att[i].addr <= a && a < l_att[i].addr + l_att[i].len)
			return i;
	return -1;
}

void *shm_hook_mremap(void *old, size_t olen, size_t nlen, int flags, void *naddr)
{
	struct deltas ds = { .n = 0 };
	uintptr_t o = (uintptr_t)old, n;
	long r;
	int i;

	if (likely(!any_attached()))
		return (void *)sys_syscall(SYS_mremap, old, olen, nlen, flags, naddr);
	hooks_enter();
	crit_mutex_lock(&l_mutex);
	if (!overlaps(o, olen ? olen : 1)) {
		/* not an attachment; but a fixed destination may cover one */
		r = sys_syscall(SYS_mremap, old, olen, nlen, flags, naddr);
		if (r != -1 && (uintptr_t)r != o)
			frag_unmap((uintptr_t)r, PAGE_ALIGN(nlen), &ds);
		goto out;
	}
	r = sys_syscall(SYS_mremap, old, olen, nlen, flags, naddr);
	if (r == -1)
		goto out;
	n = (uintptr_t)r;
	olen = PAGE_ALIGN(olen);
	nlen = PAGE_ALIGN(nlen);
	if (olen == 0) {
		/* a second mapping of the same shared pages: a new vma */
		i = frag_at(o);
		if (i >= 0) {
			struct lattach t = l_att[i];

			t.pgoff += (o - t.addr) / UIPC_PAGE;
			t.addr = n;
			t.len = nlen;
			delta_add(ds.d, &ds.n, 16, &t, 1, 0);
			local_add(t);
		}
		goto out;
	}
	if (n == o) {
		if (nlen < olen) {
			frag_unmap(o + nlen, olen - nlen, &ds);
		} else if (nlen > olen) {
			i = frag_at(o);
			if (i >= 0)
				l_att[i].len += nlen - olen;
		}
		goto out;
	}
	/* moved: the kernel unmaps the destination, shrinks, cuts the
	 * source out of its vma, opens the copy and closes the source */
	if (flags & MREMAP_FIXED)
		frag_unmap(n, nlen, &ds);
	if (nlen < olen) {
		frag_unmap(o + nlen, olen - nlen, &ds);
		olen = nlen;
	}
	frag_split(o, &ds, NULL, NULL);
	frag_split(o + olen, &ds, NULL, NULL);
	i = frag_at(o);
	if (i >= 0) {
		struct lattach t = l_att[i];

		delta_add(ds.d, &ds.n, 16, &t, 1, (flags & MREMAP_DONTUNMAP) ? 0 : 1);
		t.addr = n;
		t.len = nlen;
		if (flags & MREMAP_DONTUNMAP)
			local_add(t);
		else
			l_att[i] = t;
	}
out:
	crit_mutex_unlock(&l_mutex);
	settle(&ds);
	hooks_leave();
	return (void *)r;
}

static int vc_prot(const struct lattach *f, const struct vchange *c)
{
	return c->prot < 0 ? f->prot : c->prot;
}

static uint32_t vc_flags(const struct lattach *f, const struct vchange *c)
{
	return (f->vmf & ~c->clear) | c->set;
}

static bool vc_differs(const struct lattach *f, const struct vchange *c)
{
	return vc_prot(f, c) != f->prot || vc_flags(f, c) != f->vmf;
}

/* mprotect, mlock, madvise on [a, a+len): a vma whose flags change is cut
 * at the range's ends (the kernel's mprotect_fixup, mlock_fixup,
 * madvise_update_vma); one whose flags stay is left whole */
static void frag_change(uintptr_t a, size_t len, const struct vchange *c, struct deltas *ds)
{
	uintptr_t e = a + PAGE_ALIGN(len);

	frag_split(a, ds, vc_differs, c);
	frag_split(e, ds, vc_differs, c);
	for (int i = 0; i < l_n; i++) {
		struct lattach *f = &l_att[i];

		if (f->addr >= a && f->addr + f->len <= e) {
			f->prot = vc_prot(f, c);
			f->vmf = vc_flags(f, c);
		}
	}
}

/* the call (done by DO with the mutexes held), then the change */
static long vma_call(uintptr_t a, size_t len, const struct vchange *c,
		     long (*call)(void *), void *arg)
{
	struct deltas ds = { .n = 0 };
	long r;

	if (likely(!any_attached()))
		return call(arg);
	hooks_enter();
	crit_mutex_lock(&l_mutex);
	r = call(arg);
	if (r == 0 && len)
		frag_change(a, len, c, &ds);
	crit_mutex_unlock(&l_mutex);
	settle(&ds);
	hooks_leave();
	return r;
}

struct sysargs {
	long nr, a, b, c;
};

static long do_syscall3(void *arg)
{
	struct sysargs *s = arg;

	return sys_syscall(s->nr, s->a, s->b, s->c);
}

/*
 * mprotect(PROT_WRITE) of an SHM_RDONLY attachment fails with EACCES on the
 * kernel (its file is open read-only).  uipc maps every attachment from a
 * read-write fd (the fd cache serves all attaches, and a child that changed
 * its uid can only use the fds it inherited), so the hook refuses it: true
 * if [ADDR, ADDR+LEN) holds such an attachment.  Bad arguments are left to
 * the kernel (its EINVAL comes first).
 */
bool shm_mprotect_denied(void *addr, size_t len, int prot)
{
	uintptr_t a = (uintptr_t)addr, end = a + len;
	bool denied = false;

	if (!(prot & PROT_WRITE) || !any_attached() || (a & (UIPC_PAGE - 1)) || end < a ||
	    (prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC | 0x8 /* PROT_SEM */ | PROT_GROWSDOWN |
		      PROT_GROWSUP)))
		return false;
	crit_mutex_lock(&l_mutex);
	for (int i = 0; i < l_n && !denied; i++)
		denied = (l_att[i].vmf & VMF_NOWRITE) && l_att[i].addr < end &&
			 a < l_att[i].addr + l_att[i].len;
	crit_mutex_unlock(&l_mutex);
	return denied;
}

int shm_hook_mprotect(void *addr, size_t len, int prot)
{
	struct sysargs sa = { SYS_mprotect, (long)addr, (long)len, prot };
	struct vchange c = { prot, 0, 0 };

	return (int)vma_call((uintptr_t)addr, len, &c, do_syscall3, &sa);
}

int shm_hook_mlock(void *addr, size_t len, int flags)
{
	struct sysargs sa = { SYS_mlock2, (long)addr, (long)len, flags };
	struct vchange c = { -1, VMF_ONFAULT, VMF_LOCKED | (flags & MLOCK_ONFAULT ? VMF_ONFAULT : 0) };

	return (int)vma_call((uintptr_t)addr, len, &c, do_syscall3, &sa);
}

int shm_hook_munlock(void *addr, size_t len)
{
	struct sysargs sa = { SYS_munlock, (long)addr, (long)len, 0 };
	struct vchange c = { -1, VMF_LOCKED | VMF_ONFAULT, 0 };

	return (int)vma_call((uintptr_t)addr, len, &c, do_syscall3, &sa);
}

/*
 * MADV_POPULATE_READ and _WRITE of a writable attachment.  The kernel's
 * SysV mapping has no fault-around; a read fault on a tmpfs file mapping
 * first looks at the 16 pages around it (filemap_map_pages), which makes a
 * populate of fresh pages about 30% dearer than the kernel's.  Write faults
 * do no fault-around, and pages allocated beforehand (in one fallocate)
 * need only clearing and mapping in the fault.  A populate allocates every
 * page of its range in either case (a read fault on a hole of a shmem file
 * allocates the page, on the kernel's segment too), so: the range's pages
 * are fallocated, then populated for writing.  The same pages, the same
 * contents; the page table entries are dirty where a read populate leaves
 * them clean (seen in smaps and pagemap only: docs/known-gaps.md).
 */
#define POPULATE_MIN_PAGES 16     /* below, the fault-around costs little */
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ  22
#define MADV_POPULATE_WRITE 23
#endif
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

/* The cached fd of the writable fragment that holds [A, A+LEN), with the
 * file offset of A in *OFF, or -1 (l_mutex held) */
static int populate_fd(uintptr_t a, size_t len, off_t *off)
{
	int i = frag_at(a);
	const struct lattach *f;
	struct statfs sfs;
	uint64_t pos;

	if (i < 0)
		return -1;
	f = &l_att[i];
	pos = f->pgoff * UIPC_PAGE + (a - f->addr);
	if ((f->prot & (PROT_READ | PROT_WRITE)) != (PROT_READ | PROT_WRITE) ||
	    (f->vmf & VMF_NOWRITE) || a + len > f->addr + f->len || pos + len > f->seglen)
		return -1;
	for (int k = 0; k < l_nfds; k++) {
		if (l_fds[k].obj != f->obj || l_fds[k].gen != f->gen)
			continue;
		/* on a disk file system a read fault allocates nothing */
		if (fstatfs(l_fds[k].fd, &sfs) || sfs.f_type != TMPFS_MAGIC)
			return -1;
		*off = (off_t)pos;
		return l_fds[k].fd;
	}
	return -1;
}

static int populate_attached(void *addr, size_t len, int advice)
{
	uintptr_t a = (uintptr_t)addr;
	int r = -1, fd;
	off_t off;

	if (likely(!any_attached()) || (a & (UIPC_PAGE - 1)) || len < POPULATE_MIN_PAGES * UIPC_PAGE ||
	    a + len < a)
		return sys_madvise(addr, len, advice);
	len = PAGE_ALIGN(len);
	/* l_mutex across the calls: no other thread of ours detaches the
	 * range meanwhile (the segment stays alive, its file its own) */
	hooks_enter();
	crit_mutex_lock(&l_mutex);
	fd = populate_fd(a, len, &off);
	if (fd >= 0 && sys_syscall(SYS_fallocate, fd, FALLOC_FL_KEEP_SIZE, off, len) == 0)
		r = sys_madvise(addr, len, MADV_POPULATE_WRITE);
	/* anything else, as asked */
	if (r)
		r = sys_madvise(addr, len, advice);
	crit_mutex_unlock(&l_mutex);
	hooks_leave();
	return r;
}

int shm_hook_madvise(void *addr, size_t len, int advice)
{
	struct sysargs sa = { SYS_madvise, (long)addr, (long)len, advice };
	struct vchange c = { -1, 0, 0 };

	switch (advice) {
	case MADV_POPULATE_READ:
	case MADV_POPULATE_WRITE:
		return populate_attached(addr, len, advice);
	case MADV_DONTFORK:   c.set = VMF_DONTCOPY; break;
	case MADV_DOFORK:     c.clear = VMF_DONTCOPY; break;
	case MADV_DONTDUMP:   c.set = VMF_DONTDUMP; break;
	case MADV_DODUMP:     c.clear = VMF_DONTDUMP; break;
	case MADV_HUGEPAGE:   c.set = VMF_HUGE; c.clear = VMF_NOHUGE; break;
	case MADV_NOHUGEPAGE: c.set = VMF_NOHUGE; c.clear = VMF_HUGE; break;
	case MADV_SEQUENTIAL: c.set = VMF_SEQ; c.clear = VMF_RAND; break;
	case MADV_RANDOM:     c.set = VMF_RAND; c.clear = VMF_SEQ; break;
	case MADV_NORMAL:     c.clear = VMF_SEQ | VMF_RAND; break;
	default:
		/* the others leave the vma flags of a shared mapping alone */
		return (int)sys_syscall(SYS_madvise, addr, len, advice);
	}
	return (int)vma_call((uintptr_t)addr, len, &c, do_syscall3, &sa);
}

/* mlockall/munlockall change whole vmas: no split */
int shm_hook_mlockall(int flags)
{
	int r;

	crit_mutex_lock(&l_mutex);
	r = ns_mlockall(flags);
	if (r == 0) {
		uint32_t f = VMF_LOCKED | (flags & MCL_ONFAULT ? VMF_ONFAULT : 0);

		if (flags & MCL_CURRENT)
			for (int i = 0; i < l_n; i++)
				l_att[i].vmf = (l_att[i].vmf & ~VMF_ONFAULT) | f;
		l_vmf_future = flags & MCL_FUTURE ? f : 0;
	}
	crit_mutex_unlock(&l_mutex);
	return r;
}

int shm_hook_munlockall(void)
{
	int r;

	crit_mutex_lock(&l_mutex);
	r = ns_munlockall();
	if (r == 0) {
		for (int i = 0; i < l_n; i++)
			l_att[i].vmf &= ~(VMF_LOCKED | VMF_ONFAULT);
		l_vmf_future = 0;
	}
	crit_mutex_unlock(&l_mutex);
	return r;
}

/* ---- remap_file_pages ----
 *
 * The kernel emulates it with an mmap(MAP_FIXED) of the vma's file
 * (mm/mmap.c): the range must start in a shared vma and lie in vmas of the
 * same file and flags, without holes; the vma's protection is kept, and
 * MAP_POPULATE (MAP_LOCKED for an mlocked vma) added.  A System V
 * attachment's file is the one its shmat made, so: within the fragments of
 * one attachment.  The old vmas are closed first (nattch--), then
 * shm_mmap opens the new one (nattch++), but only while the segment is
 * still there: if closing them destroyed it (IPC_RMID'd, and these were its
 * last attachments), the call fails with EINVAL and the range stays
 * unmapped (ipc/shm.c's __shm_open).  uipc maps the attachment's segment
 * file the same way, at the page the segment's PGOFF is in that file (an
 * anonymous namespace's segments are slots of one memfd: pages past the
 * segment's end come from an empty file, SIGBUS as on the kernel, never
 * from the next slot).  A range with no attachment in it goes to the
 * kernel (with trap mode's pass word: the call is trapped by instruction
 * too, entry/trap.c).  0 or -errno, as the system call.
 */
static int sigbus_fd = -1;

/*
 * The new vma NF (l_mutex held): the kernel's mmap first tries to merge it
 * into the vma before it (same file, flags and protection, the file's
 * pages following on), then into the one after (expanded down); shm_mmap,
 * which counts an attach, runs only for a vma of its own.  A merge into
 * both would remove the next vma, which its close hook forbids.
 */
static void remap_place(const struct lattach *nf, struct deltas *ds)
{
	size_t pages = nf->len / UIPC_PAGE;

	for (int i = 0; i < l_n; i++) {
		struct lattach *p = &l_att[i];

		if (p->addr + p->len == nf->addr && p->att == nf->att && p->prot == nf->prot &&
		    p->vmf == nf->vmf && p->pgoff + p->len / UIPC_PAGE == nf->pgoff) {
			p->len += nf->len;
			return;
		}
	}
	for (int i = 0; i < l_n; i++) {
		struct lattach *q = &l_att[i];

		if (q->addr == nf->addr + nf->len && q->att == nf->att && q->prot == nf->prot &&
		    q->vmf == nf->vmf && q->pgoff == nf->pgoff + pages) {
			q->addr = nf->addr;
			q->len += nf->len;
			q->pgoff = nf->pgoff;
			return;
		}
	}
	local_add(*nf);
	delta_add(ds->d, &ds->n, 16, nf, 1, 0);
}

long shm_remap_file_pages(void *addr, size_t size, int prot, size_t pgoff, int flags)
{
	uintptr_t start = (uintptr_t)addr & ~(uintptr_t)(UIPC_PAGE - 1), end, at;
	struct deltas ds = { .n = 0 };
	struct lattach f0, nf;
	struct shmid_kernel *shp;
	struct uproc *me;
	struct ns *ns;
	uint32_t n_in = 0;
	bool inside = true, own = false, destroys = false;
	uint64_t segpages, file;
	int i, fd, mflags;
	long r;

	if (likely(!any_attached()))
		return sys_pass5(SYS_remap_file_pages, (long)addr, (long)size, prot, (long)pgoff, flags);
	size &= ~(size_t)(UIPC_PAGE - 1);
	end = start + size;
	if (prot || end <= start || pgoff + size / UIPC_PAGE < pgoff)
		return -EINVAL;
	hooks_enter();
	crit_mutex_lock(&l_mutex);
	i = frag_at(start);
	if (i < 0) {
		bool ours = overlaps(start, size);

		crit_mutex_unlock(&l_mutex);
		hooks_leave();
		/* a vma of another file, or none, before the attachment */
		if (ours)
			return -EINVAL;
		return sys_pass5(SYS_remap_file_pages, (long)addr, (long)size, prot, (long)pgoff,
				 flags);
	}
	f0 = l_att[i];
	/* the vmas that follow, up to END: contiguous, of the same attach
	 * (file) and flags */
	for (at = f0.addr + f0.len; at < end;) {
		int j = frag_at(at);

		if (j < 0 || l_att[j].addr != at || l_att[j].att != f0.att ||
		    l_att[j].prot != f0.prot || l_att[j].vmf != f0.vmf) {
			crit_mutex_unlock(&l_mutex);
			hooks_leave();
			return -EINVAL;
		}
		at = l_att[j].addr + l_att[j].len;
	}
	for (int k = 0; k < l_n; k++) {
		if (l_att[k].addr < end && start < l_att[k].addr + l_att[k].len) {
			n_in++;
			inside = inside && l_att[k].addr >= start && l_att[k].addr + l_att[k].len <= end;
		}
	}
	crit_mutex_unlock(&l_mutex);

	ns = f0.ns;       /* the segment's, whichever this thread is in */
	me = ns ? cur_proc(ns) : NULL;
	shp = ns ? shm_obj(ns, f0.obj, f0.gen) : NULL;
	if (!shp || !me) {
		hooks_leave();
		return -EINVAL;
	}
	file = __atomic_load_n(&shp->file, __ATOMIC_ACQUIRE);
	/* closing the old vmas first: would that destroy the segment? */
	if (inside && ulock_acquire(ns, &shp->lock) == 0) {
		destroys = shp_valid(ns, shp, f0.shmid, f0.gen) &&
			   detach_destroys(ns, shp, proc_index(ns, me), n_in);
		ulock_release(ns, &shp->lock);
	}
	if (destroys) {
		crit_mutex_lock(&l_mutex);
		if (sys_munmap((void *)start, size) == 0)
			frag_unmap(start, size, &ds);
		crit_mutex_unlock(&l_mutex);
		settle(&ds);
		hooks_leave();
		return -EINVAL;
	}
	fd = open_seg(ns, f0.obj, f0.gen, file, O_RDWR, &own);
	if (fd < 0) {
		hooks_leave();
		return -EINVAL;
	}
	segpages = f0.seglen / UIPC_PAGE;
	mflags = MAP_SHARED | MAP_FIXED | MAP_POPULATE | (flags & MAP_NONBLOCK) |
		 (f0.vmf & VMF_LOCKED ? MAP_LOCKED : 0);
	crit_mutex_lock(&l_mutex);
	if (anon(ns) && pgoff + size / UIPC_PAGE > segpages) {
		/* past the segment's end: not the next slot */
		size_t in_seg = pgoff < segpages ? (segpages - pgoff) * UIPC_PAGE : 0;

		r = 0;
		if (in_seg)
			r = sys_syscall(SYS_mmap, start, in_seg, f0.prot, mflags, fd,
					seg_map_off(ns, file) + (off_t)(pgoff * UIPC_PAGE));
		if (r != -1 && sigbus_fd < 0)
			sigbus_fd = fd_hide((int)sys_syscall(SYS_memfd_create, "uipc-sigbus",
							     MFD_CLOEXEC));
		if (r != -1)
			r = sigbus_fd < 0 ? -1 :
			    sys_syscall(SYS_mmap, start + in_seg, size - in_seg, f0.prot, mflags,
					sigbus_fd, 0);
	} else if (pgoff > (uint64_t)INT64_MAX / UIPC_PAGE - (uint64_t)seg_map_off(ns, file)) {
		errno = EOVERFLOW;
		r = -1;
	} else {
		r = sys_syscall(SYS_mmap, start, size, f0.prot, mflags, fd,
				seg_map_off(ns, file) + (off_t)(pgoff * UIPC_PAGE));
	}
	r = r == -1 ? -errno : 0;
	if (r == 0) {
		frag_unmap(start, size, &ds);
		nf = f0;
		nf.addr = start;
		nf.len = size;
		nf.pgoff = pgoff;
		/* the new vma's flags: the mmap's (MAP_LOCKED, mlockall's
		 * MCL_FUTURE), not what madvise set on the old ones */
		nf.vmf = (f0.vmf & VMF_NOWRITE) | (f0.vmf & VMF_LOCKED ? VMF_LOCKED : 0) |
			 l_vmf_future;
		remap_place(&nf, &ds);
	}
	crit_mutex_unlock(&l_mutex);
	seg_fd_done(fd, own);
	settle(&ds);
	if (r == 0 && (shp->perm.mode & SHM_MODE_LOCKED))
		sys_syscall(SYS_mlock2, start, size, MLOCK_ONFAULT);
	hooks_leave();
	return r;
}

/* ---- shmctl ---- */

static int shmctl_ipc_info(struct ns *ns, struct shminfo *si)
{
	struct uipc_hdr *h = ns->hdr;
	int r, maxidx;

	reap_all(ns);
	memset(si, 0, sizeof(*si));
	si->shmmni = si->shmseg = h->lim.shmmni;
	si->shmmax = h->lim.shmmax;
	si->shmall = h->lim.shmall;
	si->shmmin = SHMMIN;
	r = ids_lock(ns, IPC_SHM_IDS);
	if (r)
		return lock_err(r);
	maxidx = ipc_get_maxidx(ns, IPC_SHM_IDS);
	ids_unlock(ns, IPC_SHM_IDS);
	return maxidx < 0 ? 0 : maxidx;
}

static int shmctl_shm_info(struct ns *ns, struct shm_info *si)
{
	int r, maxidx;

	reap_all(ns);
	sweep_files(ns);
	memset(si, 0, sizeof(*si));
	r = ids_lock(ns, IPC_SHM_IDS);
	if (r)
		return lock_err(r);
	si->used_ids = ns->hdr->ids[IPC_SHM_IDS].in_use;
	maxidx = ipc_get_maxidx(ns, IPC_SHM_IDS);
	for (int i = 0; i <= maxidx; i++) {
		struct uperm *p = ipc_obtain(ns, IPC_SHM_IDS, i);
		long pages;

		if (!p || !ns_ptr(ns, ns_off(ns, p), sizeof(struct shmid_kernel)))
			continue;
		pages = seg_pages(ns, shp_of(p)->file, PAGE_ALIGN(shp_of(p)->segsz));
		if (pages > 0)
			si->shm_rss += (unsigned long)pages;
	}
	si->shm_tot = ns->hdr->shm_tot;
	ids_unlock(ns, IPC_SHM_IDS);
	return maxidx < 0 ? 0 : maxidx;
}

static int shmctl_stat(struct ns *ns, int shmid, int cmd, struct shmid_ds *out)
{
	struct shmid_kernel *shp;
	uint64_t segsz;
	int err = 0, r, id;

	bool again = true;

retry:
	memset(out, 0, sizeof(*out));
	{
		struct uperm *p = ipc_obtain_for_stat(ns, IPC_SHM_IDS, shmid, cmd != IPC_STAT,
						      cmd == SHM_STAT_ANY, &err);

		if (!p)
			return err;
		if (!ipc_obj_fits(ns, p, sizeof(*shp)))
			return -EIDRM;
		shp = shp_of(p);
	}
	/* a reaped process may have destroyed it: look again */
	if (reap_dead_attachers(ns, shp) && again) {
		again = false;
		goto retry;
	}
	r = ulock_acquire(ns, &shp->lock);
	if (r)
		return lock_err(r);
	segsz = shp->segsz;
	id = shp->perm.id;
	/* (by index: a segment whose creation has not committed has no id yet,
	 * newseg; nothing lives at that index so far) */
	if (id < 0) {
		ulock_release(ns, &shp->lock);
		return cmd == IPC_STAT ? -EIDRM : -EINVAL;
	}
	/* the caller may map it by this size: remembered (validate.c) */
	if (atomic_load(&shp->perm.deleted) || ipc_seen_size(ns, IPC_SHM_IDS, id, segsz)) {
		ulock_release(ns, &shp->lock);
		return -EIDRM;
	}
	ipc_fill_perm(ns, &shp->perm, &out->shm_perm);
	out->shm_segsz = segsz;
	out->shm_atime = shp->atime;
	out->shm_dtime = shp->dtime;
	out->shm_ctime = shp->ctime;
	out->shm_cpid = shp->cpid;
	out->shm_lpid = shp->lpid;
	out->shm_nattch = shp->nattch;
	err = cmd == IPC_STAT ? 0 : id;
	ulock_release(ns, &shp->lock);
	return err;
}

static int shmctl_down(struct ns *ns, int shmid, int cmd, struct shmid_ds *in)
{
	struct shmid_kernel *shp;
	struct rmfile rf = { 0 };
	int err = 0, r;

	/* a dead attacher must not keep an RMID'd segment alive */
	if (cmd == IPC_RMID) {
		shp = shm_obtain_check(ns, shmid, &err);
		if (shp)
			reap_dead_attachers(ns, shp);
		err = 0;
	}
	r = ids_lock(ns, IPC_SHM_IDS);
	if (r)
		return lock_err(r);
	shp = shm_obtain_check(ns, shmid, &err);
	if (!shp)
		goto out;
	if (!ipc_owner_or_admin(&shp->perm)) {
		err = -EPERM;
		goto out;
	}
	r = ulock_acquire(ns, &shp->lock);
	if (r) {
		err = lock_err(r);
		goto out;
	}
	if (cmd == IPC_RMID) {
		if (shp->nattch) {
			struct jframe *prev;

			/* the key goes (table change: the ids frame), and the
			 * mark with it: both commit together, or neither.  The
			 * mode is stored in the ids frame, so its other writer
			 * waits for that frame's commit (shmctl_do_lock) */
			prev = j_target(ns, &ns->hdr->ids[IPC_SHM_IDS].lock);
			J_SET(ns, shp->perm.mode, shp->perm.mode | SHM_MODE_DEST);
			if (shp->perm.key != IPC_PRIVATE)
				ipc_set_key_private(ns, IPC_SHM_IDS, &shp->perm);
			j_target_restore(prev);
		} else {
			shm_destroy(ns, shp, &rf);
			ipc_seen_forget(ns, IPC_SHM_IDS, shmid);
		}
	} else {
		if (in->shm_perm.uid == (uid_t)-1 || in->shm_perm.gid == (gid_t)-1)
			err = -EINVAL;
		else
			err = ipc_update_perm(ns, &shp->perm, &in->shm_perm);
		if (!err)   /* (a failed update stored nothing) */
			J_SET(ns, shp->ctime, ipc_now());
	}
	ulock_release(ns, &shp->lock);
out:
	ids_unlock(ns, IPC_SHM_IDS);
	release_file(ns, &rf);
	return err;
}

/*
 * SHM_LOCK and SHM_UNLOCK store perm.mode, which IPC_RMID of an attached
 * segment changes (SHM_DEST) in the ids lock's frame (shmctl_down): the
 * segment lock alone is not enough.  A remover killed before its ids
 * section commits leaves that frame to the ids lock's next holder, who
 * writes the old mode back; a SHM_LOCKED stored meanwhile under the
 * segment lock alone (which the remover may have released, or held and
 * been taken over from) was undone with it.  Such a frame exists only
 * while the ids lock is held (by its live or dead holder), and no new one
 * can touch the mode while we hold the segment lock: so with the segment
 * lock held, a free ids lock is enough; a held one is taken first (which
 * recovers a dead holder's frame, or waits for a live one's commit), then
 * the segment lock again, and let go.  Every store of perm.mode is thus
 * made with no uncommitted one in the ids lock's frame.
 */
static int shmctl_do_lock(struct ns *ns, int shmid, int cmd)
{
	struct ulock *ids = &ns->hdr->ids[IPC_SHM_IDS].lock;
	struct shmid_kernel *shp;
	int err = 0, r;
	uint64_t gen;

	shp = shm_obtain_check(ns, shmid, &err);
	if (!shp)
		return err;
	r = ulock_acquire(ns, &shp->lock);
	if (r)
		return lock_err(r);
	if (unlikely(!ulock_is_free(ids))) {
		ulock_release(ns, &shp->lock);
		r = ids_lock(ns, IPC_SHM_IDS);
		if (r)
			return lock_err(r);
		r = ulock_acquire(ns, &shp->lock);
		ids_unlock(ns, IPC_SHM_IDS);
		if (r)
			return lock_err(r);
	}
	/* (a removal meanwhile: the block may be another segment's now) */
	if (atomic_load(&shp->perm.deleted) || shp->perm.id != shmid) {
		err = -EIDRM;
		goto out;
	}
	gen = shp->gen;
	if (!has_cap(CAP_IPC_LOCK)) {
		const struct ucred_cache *c = cur_cred();
		struct rlimit rl;

		if (c->euid != shp->perm.uid && c->euid != shp->perm.cuid) {
			err = -EPERM;
			goto out;
		}
		if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
			if (cmd == SHM_LOCK && rl.rlim_cur == 0) {
				err = -EPERM;
				goto out;
			}
			if (cmd == SHM_LOCK && rl.rlim_cur != RLIM_INFINITY &&
			    PAGE_ALIGN(shp->segsz) > rl.rlim_cur) {
				err = -ENOMEM;
				goto out;
			}
		}
	}
	if (cmd == SHM_LOCK) {
		if (!(shp->perm.mode & SHM_MODE_LOCKED))
			J_SET(ns, shp->perm.mode, shp->perm.mode | SHM_MODE_LOCKED);
	} else if (shp->perm.mode & SHM_MODE_LOCKED) {
		J_SET(ns, shp->perm.mode, shp->perm.mode & ~SHM_MODE_LOCKED);
	}
	/* the pages this process maps are locked (on fault, as shmem_lock
	 * does not populate) or unlocked, where eviction is possible */
	if (!shm_lock_by_mlock())
		goto out;
	crit_mutex_lock(&l_mutex);
	for (int i = 0; i < l_n; i++) {
		if (l_att[i].obj != ns_off(ns, shp) || l_att[i].gen != gen)
			continue;
		if (cmd == SHM_LOCK)
			sys_syscall(SYS_mlock2, (void *)l_att[i].addr, l_att[i].len, MLOCK_ONFAULT);
		else
			sys_syscall(SYS_munlock, (void *)l_att[i].addr, l_att[i].len);
	}
	crit_mutex_unlock(&l_mutex);
out:
	ulock_release(ns, &shp->lock);
	return err;
}

int ksys_shmctl(int shmid, int cmd, struct shmid_ds *buf)
{
	struct ns *ns = ns_get();
	struct shmid_ds ds;
	int err;

	if (!ns)
		return -errno;
	run_exec_pending(ns);
	shm_enter(ns);
	if (cmd < 0 || shmid < 0)
		return -EINVAL;
	switch (cmd) {
	case IPC_INFO: {
		struct shminfo si;

		err = shmctl_ipc_info(ns, &si);
		if (err < 0)
			return err;
		if (uipc_copy_to_user(buf, &si, sizeof(si)))
			return -EFAULT;
		return err;
	}
	case SHM_INFO: {
		struct shm_info si;

		err = shmctl_shm_info(ns, &si);
		if (err < 0)
			return err;
		if (uipc_copy_to_user(buf, &si, sizeof(si)))
			return -EFAULT;
		return err;
	}
	case IPC_STAT:
	case SHM_STAT:
	case SHM_STAT_ANY:
		err = shmctl_stat(ns, shmid, cmd, &ds);
		if (err < 0)
			return err;
		if (uipc_copy_to_user(buf, &ds, sizeof(ds)))
			return -EFAULT;
		return err;
	case IPC_SET:
		if (uipc_copy_from_user(&ds, buf, sizeof(ds)))
			return -EFAULT;
		/* fall through */
	case IPC_RMID:
		return shmctl_down(ns, shmid, cmd, &ds);
	case SHM_LOCK:
	case SHM_UNLOCK:
		return shmctl_do_lock(ns, shmid, cmd);
	default:
		return -EINVAL;
	}
}

/* ---- process lifecycle ---- */

/*
 * The kernel's exit_shm plus the shm_close of every mapping left: detach
 * every attachment of process slot P (its exit, its exec, or a reaper after
 * SIGKILL) and, if it created segments, orphan them (shm_rmid_forced
 * destroys the unattached ones).  EXEC: only the attachments go.
 */
enum { DETACH_EXIT, DETACH_EXEC, DETACH_LEAVE };

static void shm_detach_proc(struct ns *ns, struct uproc *p, int how)
{
	uint32_t pidx = proc_index(ns, p);
	int maxidx;

	/* a dead holder's half-done table change is rolled back first */
	if (ids_lock(ns, IPC_SHM_IDS) == 0)
		ids_unlock(ns, IPC_SHM_IDS);
	maxidx = ipc_get_maxidx(ns, IPC_SHM_IDS);

	for (int i = 0; i <= maxidx; i++) {
		struct uperm *perm = ipc_obtain(ns, IPC_SHM_IDS, i);
		struct shmid_kernel *shp;
		struct rmfile rf = { 0 };
		int err = 0;

		if (!perm || !ns_ptr(ns, ns_off(ns, perm), sizeof(*shp)))
			continue;
		shp = shp_of(perm);
		if (how != DETACH_LEAVE && att_has(ns, shp, pidx))
			shm_account(ns, shp->perm.id, shp->gen, pidx, p->pid, 0, UINT32_MAX);
		if (how == DETACH_EXEC || __atomic_load_n(&shp->creator, __ATOMIC_ACQUIRE) != pidx)
			continue;
		shp = lock_both(ns, perm->id, shp->gen, &err);
		if (!shp)
			continue;
		/*
		 * Orphaned or destroyed, never both.  The destruction is
		 * journaled in the ids lock's frame, which commits after the
		 * segment's (unlock_both): with the creator's mark in the
		 * segment's frame as well, a death between the two commits
		 * left a segment without a creator, unattached, that the ids
		 * rollback brought back and that no reaper looks at again
		 * (with shm_rmid_forced: alive until shm_destroy_orphaned).
		 * Unmarked, it still names its dead creator, whose reaper
		 * destroys it.
		 */
		if (shp->creator == pidx) {
			if (ns->hdr->lim.shm_rmid_forced && shm_may_destroy(ns, shp))
				shm_destroy(ns, shp, &rf);
			else
				J_SET(ns, shp->creator, NO_PROC);
		}
		unlock_both(ns, shp);
		release_file(ns, &rf);
	}
}

/*
 * The kernel's shm_destroy_orphaned: when kernel.shm_rmid_forced is set to
 * 1, unattached segments whose creator is gone are destroyed.  To be called
 * by the sysctl code (namespace.c) after the new value is committed.
 */
void shm_destroy_orphaned(struct ns *ns)
{
	int maxidx;

	reap_all(ns);  /* creators killed without their exit work */
	if (ids_lock(ns, IPC_SHM_IDS))
		return;
	maxidx = ipc_get_maxidx(ns, IPC_SHM_IDS);
	ids_unlock(ns, IPC_SHM_IDS);
	for (int i = 0; i <= maxidx; i++) {
		struct uperm *perm = ipc_obtain(ns, IPC_SHM_IDS, i);
		struct shmid_kernel *shp;
		struct rmfile rf = { 0 };
		uint64_t gen;
		int err = 0;

		if (!perm || !ns_ptr(ns, ns_off(ns, perm), sizeof(*shp)))
			continue;
		gen = shp_of(perm)->gen;
		shp = lock_both(ns, perm->id, gen, &err);
		if (!shp)
			continue;
		if (shp->creator == NO_PROC && shm_may_destroy(ns, shp))
			shm_destroy(ns, shp, &rf);
		unlock_both(ns, shp);
		release_file(ns, &rf);
	}
}

void shm_exit_proc(struct ns *ns, struct uproc *p)
{
	if (p == cur_proc(ns)) {
		/* our own exit (or exec, for a namespace the exec'd image is
		 * not in): the local table's attachments of NS go with us */
		crit_mutex_lock(&l_mutex);
		for (int i = 0; i < l_n;) {
			if (l_att[i].ns == ns)
				l_att[i] = l_att[--l_n];
			else
				i++;
		}
		crit_mutex_unlock(&l_mutex);
		shm_detach_proc(ns, p, DETACH_EXIT);
		return;
	}
	shm_detach_proc(ns, p, DETACH_EXIT);
	sweep_files(ns);        /* it may have died creating a segment */
}

/* The last thread of this process leaves NS (unshare, setns): the
 * kernel's exit_shm at that point orphans the segments it created (and
 * with shm_rmid_forced destroys the unattached ones); its attachments
 * stay counted in NS until their shmdt (the kernel counts vmas). */
void shm_leave_proc(struct ns *ns, struct uproc *p)
{
	shm_detach_proc(ns, p, DETACH_LEAVE);
}

/* register_proc found this process's slot again after an exec: the old
 * image's attachments are gone.  Called under the registry mutex, so only
 * noted here; done at the next shm call (or at exit). */
void shm_note_exec(uint32_t proc_idx)
{
	atomic_store(&exec_pending, proc_idx);
}

static void run_exec_pending(struct ns *ns)
{
	uint32_t idx;
	struct uproc *p;

	/* registering is what finds out about an exec */
	if (unlikely(!cur_proc(ns)))
		return;
	idx = atomic_load(&exec_pending);
	if (likely(idx == NO_PROC))
		return;
	if (!atomic_compare_exchange_strong(&exec_pending, &idx, NO_PROC))
		return;
	p = proc_at(ns, idx);
	if (p)
		shm_detach_proc(ns, p, DETACH_EXEC);
}

/* fork: the child inherits every attachment (the kernel's shm_open for each
 * vma: nattch++, atime, lpid = the parent, which runs dup_mmap) */
static void fork_child_count(void);

void shm_fork_child(void)
{
	pthread_mutex_init(&l_mutex, NULL);
	pthread_rwlock_init(&l_forklock, NULL);
	atomic_store(&exec_pending, NO_PROC);
	if (l_forkpipe[0] >= 0) {
		sys_close(l_forkpipe[0]);
		l_forkpipe[0] = -1;
	}
	fork_child_count();
	/* counted (or nothing to count): the parent may go on */
	if (l_forkpipe[1] >= 0) {
		sys_close(l_forkpipe[1]);
		l_forkpipe[1] = -1;
	}
}

/*
 * An inherited attachment that cannot be counted: its segment was
 * destroyed between the fork and now (the parent killed while it waited,
 * the segment marked for removal).  The kernel would have kept it alive;
 * here its file may already be a spare or another segment's, so the
 * mapping must not stay: it becomes inaccessible (PROT_NONE, the range
 * kept) before the program runs.
 */
static void lose_inherited(int i)
{
	struct lattach *a = &l_att[i];

	sys_mmap((void *)a->addr, a->len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		 -1, 0);
	l_att[i] = l_att[--l_n];
}

/* The loans the parent counted our attachments in become our registration
 * in their namespaces; one that cannot be (a member rewrote it) leaves its
 * attachments uncounted: they are lost, as a destroyed segment's. */
static void take_loans(void)
{
	for (int i = 0; i < l_n; i++) {
		struct lattach *a = &l_att[i];
		uint32_t loan = a->loan;
		bool seen = false;

		if (loan == FORK_SELF || loan == FORK_LOST)
			continue;
		/* the first attachment of each loan takes it, for all of them */
		for (int k = 0; k < i && !seen; k++)
			seen = l_att[k].ns == a->ns && l_att[k].loan == loan;
		if (seen || proc_loan_take(a->ns, loan))
			continue;
		for (int k = i; k < l_n; k++)
			if (l_att[k].ns == a->ns && l_att[k].loan == loan)
				l_att[k].loan = FORK_LOST;
	}
	/* ours now (or lost): the locks that kept them go */
	proc_loans_child_done();
}

static void fork_child_count(void)
{
	struct ns *ns;
	struct uproc *me;
	int ppid;

	if (l_n) {
		/* tests: widen the window between fork and the child's first
		 * step (its take-over of the loans, or its own count) */
		const char *d = getenv("UIPC_TEST_FORK_DELAY_MS");

		if (d)
			usleep((useconds_t)atoi(d) * 1000);
	}
	take_loans();
	/* only this thread survived the fork: no mmap is in progress */
	l_fd_busy = 0;
	while (l_ndeferred)
		close_guarded(l_deferred[--l_ndeferred]);
	/* the fds opened for us in the prepare handler */
	for (int i = 0; i < l_nfork; i++) {
		if (l_nfds < FDCACHE)
			l_fds[l_nfds++] = l_fork_fds[i];
		else
			close_guarded(l_fork_fds[i].fd);
	}
	l_nfork = 0;
	/* inherited fds: we are not their segments' creator; mark them (a
	 * destroyer that did not see the mark is seen here) */
	for (int i = 0; i < l_nfds;) {
		struct shmid_kernel *shp;

		ns = l_fds[i].ns;
		shp = shm_obj(ns, l_fds[i].obj, l_fds[i].gen);
		bool alive = false;

		/* under the segment lock, alive: its destroyer sees the mark */
		if (shp && ulock_acquire(ns, &shp->lock) == 0) {
			alive = shm_obj(ns, l_fds[i].obj, l_fds[i].gen) != NULL &&
				seg_file_is(shp, l_fds[i].file);
			if (alive)
				atomic_fetch_or(&shp->fd_shared, 1u);
			ulock_release(ns, &shp->lock);
		}
		if (alive)
			i++;
		else
			fd_drop(i);
	}
	if (!l_n)
		return;
	ppid = (int)getppid();
	for (int i = 0; i < l_n;) {
		struct lattach *a = &l_att[i];
		struct shmid_kernel *shp;
		int err = 0;

		/* MADV_DONTFORK: the kernel does not copy the vma */
		if (a->vmf & VMF_DONTCOPY) {
			l_att[i] = l_att[--l_n];
			continue;
		}
		if (a->loan != FORK_SELF) {
			/* counted by the parent, in the loan we took over */
			if (a->loan == FORK_LOST)
				lose_inherited(i);
			else
				i++;
			continue;
		}
		/* counted in its segment's namespace, as the kernel's shm_open
		 * of the copied vma */
		ns = a->ns;
		me = cur_proc(ns);
		if (!me) {
			lose_inherited(i);
			continue;
		}

		shp = shm_obtain_check(ns, a->shmid, &err);
		if (shp && ns_off(ns, shp) == a->obj) {
			reap_dead_attachers(ns, shp);
			shp = shm_obtain_check(ns, a->shmid, &err);
		}
		if (!shp || ns_off(ns, shp) != a->obj || ulock_acquire(ns, &shp->lock)) {
			lose_inherited(i);
			continue;
		}
		if (!shp_valid(ns, shp, a->shmid, a->gen) ||
		    att_add(ns, shp, proc_index(ns, me), 1)) {
			j_abort(ns);
			ulock_release(ns, &shp->lock);
			lose_inherited(i);
			continue;
		}
		J_SET(ns, shp->nattch, shp->nattch + 1);
		J_SET(ns, shp->atime, ipc_now());
		J_SET(ns, shp->lpid, (int32_t)ppid);
		ulock_release(ns, &shp->lock);
		i++;
	}
}

/* The loan of namespace NS for this fork, opened at its first attachment
 * (LOANS: the namespaces seen, NL of them), or FORK_SELF: none to be had */
struct fork_loan {
	struct ns *ns;
	uint32_t idx;
	uint32_t counted;
};

static uint32_t loan_of(struct ns *ns, struct fork_loan *loans, int *nl, int max)
{
	uint32_t idx;

	for (int k = 0; k < *nl; k++)
		if (loans[k].ns == ns)
			return loans[k].idx;
	if (*nl == max)
		return FORK_SELF;
	idx = proc_loan_open(ns);
	loans[(*nl)++] = (struct fork_loan){ ns, idx == UINT32_MAX ? FORK_SELF : idx, 0 };
	return idx == UINT32_MAX ? FORK_SELF : idx;
}

/* what count_for_child needs of an attachment, copied under l_mutex */
struct fork_count {
	struct ns *ns;
	uintptr_t addr;
	uint64_t gen;
	int shmid;
	uint32_t loan;
};

/* Count the attachments C[0..N) in loans; true if some have none */
static bool count_in_loans(struct fork_count *c, int n)
{
	struct fork_loan loans[8];
	int nl = 0;
	bool self = false;

	for (int i = 0; i < n; i++) {
		uint32_t idx;

		if (c[i].loan != FORK_SELF)
			continue;  /* MADV_DONTFORK: not inherited */
		idx = loan_of(c[i].ns, loans, &nl, 8);
		if (idx == FORK_SELF) {
			self = true;
			continue;
		}
		if (shm_account(c[i].ns, c[i].shmid, c[i].gen, idx, cur_pid(), 1, 0) == 0) {
			c[i].loan = idx;
			for (int k = 0; k < nl; k++)
				loans[k].counted += loans[k].ns == c[i].ns;
		} else {
			c[i].loan = FORK_LOST;
		}
	}
	/* a loan with nothing counted in it is not needed */
	for (int k = 0; k < nl; k++) {
		if (loans[k].idx == FORK_SELF || loans[k].counted)
			continue;
		proc_loan_cancel(loans[k].ns, loans[k].idx);
		for (int i = 0; i < n; i++)
			if (c[i].ns == loans[k].ns && c[i].loan == loans[k].idx)
				c[i].loan = FORK_LOST;
	}
	return self;
}

/*
 * Before fork (l_forklock held exclusively, l_mutex not held): count the
 * attachments the child inherits, as the kernel's dup_mmap does (nattch,
 * atime, lpid = us), in a loan per namespace that the child takes over.
 * Each attachment notes its loan for the child; one whose segment is gone
 * is lost (FORK_LOST), one without a loan is counted by the child itself
 * (FORK_SELF).  True: some are, and the parent must wait for the child.
 * The counting runs without l_mutex: it may reap dead attachers, whose
 * exit work may destroy segments (release_file takes l_mutex).  The table
 * cannot change meanwhile (its changers hold l_forklock shared); an entry
 * found changed all the same is left to the child (FORK_SELF).
 */
static bool count_for_child(void)
{
	struct fork_count *c;
	bool self;
	int n;

	crit_mutex_lock(&l_mutex);
	n = l_n;
	c = n ? malloc((size_t)n * sizeof(*c)) : NULL;
	for (int i = 0; i < l_n; i++) {
		struct lattach *a = &l_att[i];

		a->loan = FORK_SELF;
		if (c)
			c[i] = (struct fork_count){ a->ns, a->addr, a->gen, a->shmid,
						    a->vmf & VMF_DONTCOPY ? FORK_LOST : FORK_SELF };
	}
	crit_mutex_unlock(&l_mutex);
	if (!c)
		return n > 0;
	self = count_in_loans(c, n);
	crit_mutex_lock(&l_mutex);
	for (int i = 0; i < l_n; i++) {
		struct lattach *a = &l_att[i];

		if (a->vmf & VMF_DONTCOPY)
			continue;  /* not inherited: the child drops it */
		if (i < n && a->addr == c[i].addr && a->ns == c[i].ns && a->gen == c[i].gen)
			a->loan = c[i].loan;
		else
			self = true;
	}
	crit_mutex_unlock(&l_mutex);
	free(c);
	return self;
}

/* l_mutex held: the segments' files opened for a child that may lose
 * access to them */
static void open_for_child(void)
{
	struct ns *ns;
	int maxidx;

	/* only a child that can change its credentials may lose access */
	if (!l_used || (cur_cred()->euid != 0 && !has_cap(CAP_SETUID) && !has_cap(CAP_SETGID)))
		return;
	ns = ns_get();
	if (!ns)
		return;
	/* open the segments' files for the child: it may drop privileges and
	 * no longer be able to open them, while the kernel lets it attach */
	maxidx = ipc_get_maxidx(ns, IPC_SHM_IDS);
	for (int i = 0; i <= maxidx && l_nfork < FDCACHE; i++) {
		struct uperm *p = ipc_obtain(ns, IPC_SHM_IDS, i);
		struct shmid_kernel *shp;
		char name[4200];
		int fd, dfd;
		uint64_t gen, file;

		if (!p || !ns_ptr(ns, ns_off(ns, p), sizeof(*shp)))
			continue;
		shp = shp_of(p);
		gen = __atomic_load_n(&shp->gen, __ATOMIC_ACQUIRE);
		file = __atomic_load_n(&shp->file, __ATOMIC_ACQUIRE);
		if (fd_find(ns, ns_off(ns, shp), gen, file) >= 0)
			continue; /* inherited anyway */
		dfd = anon(ns) ? -1 : seg_dirfd(ns);
		/* read without the lock: the child checks (seg_file_is) */
		file_base(ns, file, name, sizeof(name));
		fd = seg_openat(ns, dfd, name, file, O_RDWR);
		if (fd < 0)
			continue;
		l_fork_fds[l_nfork++] = (struct fdent){ fd_hide(fd), ns, ns_off(ns, shp), gen, file };
	}
}

static void shm_atfork_prepare(void)
{
	bool self;

	uipc_crit_enter();         /* until the parent or child handler */
	pthread_rwlock_wrlock(&l_forklock);
	self = count_for_child();
	pthread_mutex_lock(&l_mutex);
	l_nfork = 0;
	if (self && pipe2(l_forkpipe, O_CLOEXEC) < 0)
		l_forkpipe[0] = l_forkpipe[1] = -1;
	open_for_child();
	/* last: the count and the opens may forget sizes (validate.c) */
	ipc_seen_fork_prepare();
}

static void shm_atfork_parent(void)
{
	ipc_seen_fork_parent();
	/* the child holds the loans' locks now: ours go (the fork wrapper
	 * then writes the child's pid into them, proc_loans_result) */
	proc_loans_forked();
	if (l_forkpipe[1] >= 0) {
		struct pollfd pfd = { .fd = l_forkpipe[0], .events = POLLIN };
		char c;

		sys_close(l_forkpipe[1]);
		/* until the child has counted its attachments (its end closed),
		 * or died; a child stopped before that gets 10 s */
		for (int ms = 0; ms < 10000; ms += 100) {
			int r = poll(&pfd, 1, 100);

			if (r > 0 && read(l_forkpipe[0], &c, 1) <= 0)
				break;
			if (r < 0 && errno != EINTR)
				break;
		}
		sys_close(l_forkpipe[0]);
		l_forkpipe[0] = l_forkpipe[1] = -1;
	}
	for (int i = 0; i < l_nfork; i++)
		close_guarded(l_fork_fds[i].fd);
	l_nfork = 0;
	pthread_mutex_unlock(&l_mutex);
	pthread_rwlock_unlock(&l_forklock);
	/* handlers held off since the prepare handler run now */
	uipc_crit_exit();
}

static void shm_atfork_child_unlock(void)
{
	/* shm_fork_child (called by proc.c's child handler) re-inits the
	 * locks; the prepare handler held the program's handlers off */
	uipc_crit_exit_child();
}

/*
 * After an exec, the old image's attachments are gone (the kernel's
 * exec_mmap closes every vma).  The process finds its slot again when it
 * registers; an image exec'd by a process that had attachments registers
 * right away (UIPC_SHM_EXEC, set at the first attach), so that nattch drops
 * even if the new program never calls uipc.  This constructor runs after
 * core/nsfile.c's and core/proc.c's (link order: core/ first).
 */
__attribute__((constructor)) static void shm_init(void)
{
	pthread_atfork(shm_atfork_prepare, shm_atfork_parent, shm_atfork_child_unlock);
	if (getenv("UIPC_SHM_EXEC")) {
		struct ns *ns;

		unsetenv("UIPC_SHM_EXEC");
		ns_open_for_fork();     /* quietly */
		ns = ns_get();
		if (ns)
			run_exec_pending(ns);
	}
}

/* ---- fsck: the invariants of one segment (uipc_ns_check) ---- */

#define SHM_PROBLEM(...) do {                                                       \
		bad++;                                                              \
		if (report && *used < len)                                          \
			*used += (size_t)snprintf(report + *used, len - *used, __VA_ARGS__); \
	} while (0)

/*
 * With the segment locked (the caller holds the shm ids lock): the size is
 * within the limits, nattch equals the sum of the attachment records, each
 * record is of a process slot in use (a dead process's records stay until
 * a survivor reaps it, as its exit work), none twice, none empty.
 * Relies on: shmid_kernel.{perm, lock, segsz, nattch, att, att_cap, att_n},
 * shm_att.{proc, count}.
 */
int shm_check_obj(struct ns *ns, struct uperm *perm, char *report, size_t len, size_t *used)
{
	struct shmid_kernel *shp = shp_of(perm);
	struct shm_att *a;
	uint32_t cap, cnt;
	uint64_t sum = 0;
	int bad = 0, id = perm->id;

	if (!ipc_obj_fits(ns, shp, sizeof(*shp))) {
		SHM_PROBLEM("shm %d: the segment is not inside the arena\n", id);
		return bad;
	}
	if (ulock_acquire(ns, &shp->lock)) {
		SHM_PROBLEM("shm %d: cannot lock the segment\n", id);
		return bad;
	}
	if (atomic_load(&shp->perm.deleted) || shp->perm.id != id) {
		ulock_release(ns, &shp->lock);
		return 0;
	}
	if (shp->segsz < SHMMIN || PAGE_ALIGN(shp->segsz) < shp->segsz)
		SHM_PROBLEM("shm %d: size %llu\n", id, (unsigned long long)shp->segsz);
	a = att_at(ns, shp, &cap, &cnt);
	/* one record per process slot at most */
	if ((!a && (shp->att_n || shp->att)) || cnt > MAX_PROCS) {
		SHM_PROBLEM("shm %d: %u attachment records of %u, table at %llu\n", id, shp->att_n,
			    shp->att_cap, (unsigned long long)shp->att);
	} else {
		for (uint32_t i = 0; i < cnt; i++) {
			struct uproc *p = proc_at(ns, a[i].proc);

			sum += a[i].count;
			if (!a[i].count)
				SHM_PROBLEM("shm %d: an empty attachment record (process slot %u)\n", id,
					    a[i].proc);
			if (!p || SLOT_STATE(atomic_load(&p->state)) == SLOT_FREE)
				SHM_PROBLEM("shm %d: %u attachments of process slot %u, which is free\n", id,
					    a[i].count, a[i].proc);
			for (uint32_t k = 0; k < i; k++)
				if (a[k].proc == a[i].proc)
					SHM_PROBLEM("shm %d: process slot %u has two records\n", id,
						    a[i].proc);
		}
		if (sum != shp->nattch)
			SHM_PROBLEM("shm %d: nattch %llu, but the attachment records add up to %llu\n", id,
				    (unsigned long long)shp->nattch, (unsigned long long)sum);
	}
	ulock_release(ns, &shp->lock);
	return bad;
}

/* With the shm ids lock held: the pool holds at most SHM_POOL_CAP files,
 * all distinct and none a live segment's (a spare handed to two segments,
 * or still a segment's, would share memory); a clean spare is empty (no
 * segment's data or memory outlives it); live segments' files are
 * distinct. */
static int shm_check_pool(struct ns *ns, char *report, size_t len, size_t *used)
{
	struct shm_pool *pl = &ns->hdr->shm_pool;
	int bad = 0, max = ipc_get_maxidx(ns, IPC_SHM_IDS);

	if (pl->n > SHM_POOL_CAP)
		SHM_PROBLEM("shm: %u spare files, at most %u\n", pl->n, SHM_POOL_CAP);
	for (uint32_t k = 0; k < pool_len(pl); k++) {
		struct shm_spare *e = &pl->e[k];
		char path[4200];
		struct stat st;

		if (e->state > SPARE_TAKING)
			SHM_PROBLEM("shm: spare %u in state %u\n", k, e->state);
		for (uint32_t j = 0; j < k; j++)
			if (pl->e[j].file == e->file)
				SHM_PROBLEM("shm: spare file %llx is in the pool twice\n",
					    (unsigned long long)e->file);
		file_name(ns, e->file, path, sizeof(path));
		if (e->state == SPARE_CLEAN &&
		    (anon(ns) ? seg_pages(ns, e->file, ANON_SLOT) != 0 :
		     (sys_stat(path, &st) < 0 || st.st_size != 0 || st.st_blocks != 0)))
			SHM_PROBLEM("shm: clean spare file %llx is missing or not empty\n",
				    (unsigned long long)e->file);
	}
	for (int i = 0; i <= max; i++) {
		struct uperm *p = ipc_obtain(ns, IPC_SHM_IDS, i);
		uint64_t f;

		if (!p || !ns_ptr(ns, ns_off(ns, p), sizeof(struct shmid_kernel)) ||
		    atomic_load(&p->deleted))
			continue;
		f = shp_of(p)->file;
		if (!f)
			SHM_PROBLEM("shm %d: no file\n", p->id);
		for (uint32_t k = 0; k < pool_len(pl); k++)
			if (pl->e[k].file == f)
				SHM_PROBLEM("shm %d: its file %llx is also a spare\n", p->id,
					    (unsigned long long)f);
		for (int j = 0; j < i; j++) {
			struct uperm *q = ipc_obtain(ns, IPC_SHM_IDS, j);

			if (q && ns_ptr(ns, ns_off(ns, q), sizeof(struct shmid_kernel)) &&
			    !atomic_load(&q->deleted) && shp_of(q)->file == f)
				SHM_PROBLEM("shm %d and %d: the same file %llx\n", q->id, p->id,
					    (unsigned long long)f);
		}
	}
	return bad;
}

/* With the shm ids lock held: shm_tot is the pages of the segments in the table. */
int shm_check_tot(struct ns *ns, char *report, size_t len, size_t *used)
{
	uint64_t pages = 0;
	int bad = 0, max = ipc_get_maxidx(ns, IPC_SHM_IDS);

	for (int i = 0; i <= max; i++) {
		struct uperm *p = ipc_obtain(ns, IPC_SHM_IDS, i);

		if (p && ns_ptr(ns, ns_off(ns, p), sizeof(struct shmid_kernel)) &&
		    !atomic_load(&p->deleted))
			pages += PAGE_ALIGN(shp_of(p)->segsz) / UIPC_PAGE;
	}
	if (pages != ns->hdr->shm_tot)
		SHM_PROBLEM("shm: the segments have %llu pages, shm_tot says %llu\n",
			    (unsigned long long)pages, (unsigned long long)ns->hdr->shm_tot);
	return bad + shm_check_pool(ns, report, len, used);
}

/* ---- /proc/sysvipc/shm ---- */

/* the bytes of segment ID's file in memory: the kernel's rss column (its
 * page-cache pages; a tmpfs file's blocks are those pages) */
static unsigned long shm_rss_bytes(int id)
{
	struct ns *ns = ns_get();
	struct shmid_kernel *shp = NULL;
	char path[4200];
	struct uperm *p;
	struct stat st;
	int err = 0, i = -1, r;

	if (!ns || ids_lock(ns, IPC_SHM_IDS))
		return 0;
	p = ipc_obtain_check(ns, IPC_SHM_IDS, id, &err);
	path[0] = 0;
	if (p && ns_ptr(ns, ns_off(ns, p), sizeof(struct shmid_kernel))) {
		shp = shp_of(p);
		file_name(ns, shp->file, path, sizeof(path));
		/* this process's own fd on the file, when it has one: a reader
		 * that may not search the namespace's directory still sees it */
		i = fd_find(ns, ns_off(ns, p), shp->gen, shp->file);
	}
	r = i >= 0 ? fstat(l_fds[i].fd, &st) : path[0] ? sys_stat(path, &st) : -1;
	ids_unlock(ns, IPC_SHM_IDS);
	return r ? 0 : (unsigned long)st.st_blocks * 512;
}

/* the line of the segment at index IDX, as the kernel's /proc/sysvipc/shm
 * prints it (every segment, whatever the reader's permissions; rss in
 * bytes, swap 0: tmpfs pages of uipc's files are the host's to swap); its
 * length, or 0 when nothing lives at IDX */
int shm_proc_show(int idx, char *buf, size_t len)
{
	struct shmid_ds ds;
	int id = ksys_shmctl(idx, SHM_STAT_ANY, &ds);
	int n;

	if (id < 0)
		return 0;
	n = snprintf(buf, len,
		     "%10d %10d  %4o %21lu %5u %5u  %5lu %5u %5u %5u %5u %10llu %10llu %10llu "
		     "%21lu %21lu\n",
		     ds.shm_perm.__key, id, ds.shm_perm.mode, (unsigned long)ds.shm_segsz,
		     ds.shm_cpid, ds.shm_lpid, (unsigned long)ds.shm_nattch, ds.shm_perm.uid,
		     ds.shm_perm.gid, ds.shm_perm.cuid, ds.shm_perm.cgid,
		     (unsigned long long)ds.shm_atime, (unsigned long long)ds.shm_dtime,
		     (unsigned long long)ds.shm_ctime, shm_rss_bytes(id), 0UL);
	return n < 0 || (size_t)n >= len ? 0 : n;
}

/* Does this process still map attachments made in NS (or is a mapping of
 * a segment file in progress)?  Then NS stays mapped when it is left,
 * and is not made anew in place. */
bool shm_ns_busy(struct ns *ns)
{
	bool busy;

	crit_mutex_lock(&l_mutex);
	busy = l_fd_busy > 0;
	for (int i = 0; i < l_n && !busy; i++)
		busy = l_att[i].ns == ns;
	crit_mutex_unlock(&l_mutex);
	return busy;
}

/* the entries of NS in table T (*N of them) closed and dropped */
static void fdents_close_ns(struct fdent *t, int *n, struct ns *ns)
{
	for (int i = 0; i < *n;) {
		if (t[i].ns == ns) {
			fd_close_safe(t[i].fd);
			t[i] = t[--*n];
		} else {
			i++;
		}
	}
}

/* The last thread of this process leaves NS (unshare, setns), before its
 * exit_shm there: the fds it keeps of NS's segment files go (they are
 * looked up by NS's offsets); the attachments stay mapped and counted in
 * NS until their shmdt, as on the kernel. */
void shm_ns_leave(struct ns *ns)
{
	crit_mutex_lock(&l_mutex);
	fdents_close_ns(l_fds, &l_nfds, ns);
	fdents_close_ns(l_ro, &l_nro, ns);
	atomic_store(&exec_pending, NO_PROC);
	crit_mutex_unlock(&l_mutex);
}
