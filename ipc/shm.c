/*
 * shm.c - System V shared memory: shmget, shmat, shmdt, shmctl, and the
 * attach accounting of the kernel's ipc/shm.c (nattch, atime/dtime/lpid,
 * SHM_DEST, shm_rmid_forced) across fork, exec, exit and SIGKILL.
 *
 * Each segment is backed by its own file in the namespace's directory,
 * named "<namespace file>.shm-<object offset>-<generation>" (so that it can
 * be globbed from the namespace file name), created O_EXCL|O_NOFOLLOW with
 * the namespace file's mode, sized to PAGE_ALIGN(size).  The file is
 * unlinked when the segment is destroyed.
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
 * commits is left behind under a name that is only reused by the same block:
 * the next newseg at that offset replaces it, uipc_ns_remove globs it.
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
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <linux/capability.h>
#include <unistd.h>

#include "internal.h"
#include "signals.h"

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
};

/* ---- process-local state ---- */

/* one vma of an attachment: shmdt and SHM_REMAP work on these fragments as
 * the kernel works on vmas (each fragment counts as one attach) */
struct lattach {
	uintptr_t addr;            /* start of the fragment */
	size_t len;
	uint64_t pgoff;            /* offset in the segment, pages */
	uint64_t seglen;           /* PAGE_ALIGN(segsz) */
	int shmid;
	uoff_t obj;
	uint64_t gen;
};

/* fds of segment files kept across fork (a child that drops privileges can
 * still attach the segments that existed at fork time) and from creation */
struct fdent {
	int fd;
	uoff_t obj;
	uint64_t gen;
	dev_t dev;
	ino_t ino;
};
#define FDCACHE 64

static pthread_mutex_t l_mutex = PTHREAD_MUTEX_INITIALIZER;
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

static bool reap_dead_attachers(struct ns *ns, struct shmid_kernel *shp);
static int collect_dead(struct ns *ns, struct shmid_kernel *shp, uint32_t *dead, int max);

static struct shmid_kernel *shp_of(struct uperm *p)
{
	return (struct shmid_kernel *)p;
}

static void file_name(struct ns *ns, uoff_t off, uint64_t gen, char *buf, size_t len)
{
	snprintf(buf, len, "%s.shm-%llx-%llx", ns->path, (unsigned long long)off,
		 (unsigned long long)gen);
}

static struct shm_att *att_at(struct ns *ns, struct shmid_kernel *shp)
{
	if (!shp->att || !shp->att_cap)
		return NULL;
	return ns_ptr(ns, shp->att, (size_t)shp->att_cap * sizeof(struct shm_att));
}

static struct shmid_kernel *shm_obtain_check(struct ns *ns, int id, int *err)
{
	struct uperm *p = ipc_obtain_check(ns, IPC_SHM_IDS, id, err);

	if (!p)
		return NULL;
	if (!ns_ptr(ns, ns_off(ns, p), sizeof(struct shmid_kernel))) {
		*err = -EINVAL;
		return NULL;
	}
	return shp_of(p);
}

static bool shp_valid(struct ns *ns, struct shmid_kernel *shp, int id, uint64_t gen)
{
	(void)ns;
	return !atomic_load(&shp->perm.deleted) && shp->perm.id == id && shp->gen == gen;
}

/* ---- fd cache ---- */

static int fd_take(struct fdent *tab, int *n, uoff_t obj, uint64_t gen)
{
	for (int i = 0; i < *n; i++) {
		if (tab[i].obj == obj && tab[i].gen == gen) {
			struct stat st;
			int fd = tab[i].fd;

			/* the application may have closed and reused the number */
			if (fstat(fd, &st) == 0 && st.st_dev == tab[i].dev && st.st_ino == tab[i].ino)
				return fd;
			tab[i] = tab[--*n];
			return -1;
		}
	}
	return -1;
}


static void fd_forget(uoff_t obj, uint64_t gen)
{
	for (int i = 0; i < l_nfds; i++) {
		if (l_fds[i].obj == obj && l_fds[i].gen == gen) {
			struct stat st;

			if (fstat(l_fds[i].fd, &st) == 0 && st.st_dev == l_fds[i].dev &&
			    st.st_ino == l_fds[i].ino) {
				if (l_fd_busy && l_ndeferred < FDCACHE)
					l_deferred[l_ndeferred++] = l_fds[i].fd;
				else
					close(l_fds[i].fd);
			}
			l_fds[i] = l_fds[--l_nfds];
			return;
		}
	}
}

/* Cached fds of segments that are gone (destroyed by anyone) are closed,
 * so that they do not keep the memory alive.  l_mutex held. */
static void fd_prune(struct ns *ns)
{
	for (int i = 0; i < l_nfds;) {
		struct shmid_kernel *shp = ns_ptr(ns, l_fds[i].obj, sizeof(*shp));

		if (shp && shp->perm.type == IPC_SHM_IDS && !atomic_load(&shp->perm.deleted) &&
		    shp->gen == l_fds[i].gen) {
			i++;
			continue;
		}
		fd_forget(l_fds[i].obj, l_fds[i].gen);
	}
}

static void shm_enter(struct ns *ns)
{
	if (unlikely(__atomic_load_n(&l_nfds, __ATOMIC_RELAXED))) {
		pthread_mutex_lock(&l_mutex);
		fd_prune(ns);
		pthread_mutex_unlock(&l_mutex);
	}
}

static void fd_unbusy(void)
{
	pthread_mutex_lock(&l_mutex);
	if (--l_fd_busy == 0) {
		while (l_ndeferred)
			close(l_deferred[--l_ndeferred]);
	}
	pthread_mutex_unlock(&l_mutex);
}

/* ---- attachers table (segment lock held) ---- */

static int att_add(struct ns *ns, struct shmid_kernel *shp, uint32_t proc, uint32_t n)
{
	struct shm_att *a = att_at(ns, shp);
	uint32_t i;

	for (i = 0; a && i < shp->att_n; i++) {
		if (a[i].proc == proc) {
			J_SET(ns, a[i].count, a[i].count + n);
			return 0;
		}
	}
	if (shp->att_n == shp->att_cap) {
		uint32_t cap = shp->att_cap ? shp->att_cap * 2 : 4;
		uoff_t off = arena_alloc(ns, (uint64_t)cap * sizeof(struct shm_att), POOL_GENERAL);
		struct shm_att *na = off ? ns_ptr(ns, off, (size_t)cap * sizeof(*na)) : NULL;

		if (!na)
			return -ENOMEM;
		/* fresh block, nobody sees it yet: plain stores */
		if (a)
			memcpy(na, a, (size_t)shp->att_n * sizeof(*na));
		if (shp->att)
			arena_free(ns, shp->att);
		J_SET(ns, shp->att, off);
		J_SET(ns, shp->att_cap, cap);
		a = na;
	}
	J_SET(ns, a[shp->att_n], ((struct shm_att){ proc, n }));
	J_SET(ns, shp->att_n, shp->att_n + 1);
	return 0;
}

/* Drops up to N attachments of PROC (all if N == 0); returns how many. */
static uint32_t att_del(struct ns *ns, struct shmid_kernel *shp, uint32_t proc, uint32_t n)
{
	struct shm_att *a = att_at(ns, shp);

	for (uint32_t i = 0; a && i < shp->att_n && i < shp->att_cap; i++) {
		if (a[i].proc != proc)
			continue;
		uint32_t c = a[i].count;

		if (n && n < c) {
			J_SET(ns, a[i].count, c - n);
			return n;
		}
		if (i != shp->att_n - 1)
			J_SET(ns, a[i], a[shp->att_n - 1]);
		J_SET(ns, shp->att_n, shp->att_n - 1);
		return c;
	}
	return 0;
}

/* Would dropping up to N attachments of PROC (all if 0) destroy SHP?
 * (Segment lock held; the same arithmetic as att_del and shm_account.) */
static bool detach_destroys(struct ns *ns, struct shmid_kernel *shp, uint32_t proc, uint32_t n)
{
	struct shm_att *a = att_at(ns, shp);

	for (uint32_t i = 0; a && i < shp->att_n && i < shp->att_cap; i++) {
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
	bool found = false;

	if (!__atomic_load_n(&shp->att_n, __ATOMIC_ACQUIRE) &&
	    !__atomic_load_n((unsigned *)&shp->lock.m.__data.__lock, __ATOMIC_ACQUIRE))
		return false;
	if (ulock_acquire(ns, &shp->lock))
		return false;
	a = att_at(ns, shp);
	for (uint32_t i = 0; a && i < shp->att_n && i < shp->att_cap && !found; i++)
		found = a[i].proc == proc;
	ulock_release(ns, &shp->lock);
	return found;
}

/*
 * The kernel's ipc_set_key_private: the key no longer finds the object.
 * util.c keeps its key hash private, so the entry (key << 32 | idx + 1) is
 * found by a scan of the table (only IPC_RMID of an attached keyed segment
 * comes here) and turned into a tombstone, as key_remove does.  Ids lock
 * held, journaled in its frame.  To move into util.c as
 * ipc_set_key_private().
 */
static void set_key_private(struct ns *ns, struct uperm *p)
{
	struct ipc_ids *ids = &ns->hdr->ids[IPC_SHM_IDS];
	int idx = p->id & (ns->ipcmni - 1);
	uint64_t want = ((uint64_t)(uint32_t)p->key << 32) | (uint32_t)(idx + 1);
	uint64_t *t = NULL;

	if (ids->keys && ids->keys_cap && !(ids->keys_cap & (ids->keys_cap - 1)))
		t = ns_ptr(ns, ids->keys, (uint64_t)ids->keys_cap * 8);
	for (uint32_t i = 0; t && i < ids->keys_cap; i++) {
		if (t[i] == want) {
			J_SET(ns, t[i], 0xffffffffULL); /* KEY_TOMB */
			J_SET(ns, ids->keys_used, ids->keys_used - 1);
			J_SET(ns, ids->keys_tombs, ids->keys_tombs + 1);
			break;
		}
	}
	J_SET(ns, p->key, (int32_t)IPC_PRIVATE);
}

/* ---- destruction ---- */

static bool shm_may_destroy(struct ns *ns, struct shmid_kernel *shp)
{
	return shp->nattch == 0 &&
	       (ns->hdr->lim.shm_rmid_forced || (shp->perm.mode & SHM_MODE_DEST));
}

/*
 * shm_destroy: ids lock and segment lock held, in the segment's section.
 * The table changes are journaled in the ids frame.  The file is unlinked
 * by the caller after both sections committed (unlink_path).
 */
static void shm_destroy(struct ns *ns, struct shmid_kernel *shp, char *unlink_path, size_t len)
{
	struct ipc_ids *ids = &ns->hdr->ids[IPC_SHM_IDS];
	struct jframe *prev = j_target(ns, &ids->lock);
	uint64_t pages = PAGE_ALIGN(shp->segsz) / UIPC_PAGE;

	file_name(ns, ns_off(ns, shp), shp->gen, unlink_path, len);
	J_SET(ns, ns->hdr->shm_tot, ns->hdr->shm_tot - pages);
	ipc_rmid(ns, IPC_SHM_IDS, &shp->perm);
	if (shp->att)
		arena_free(ns, shp->att);
	arena_free(ns, ns_off(ns, shp));
	j_target_restore(prev);
}

/* after the destroying sections committed: the file goes */
static void unlink_seg(const char *path, uoff_t obj, uint64_t gen)
{
	unlink(path);
	pthread_mutex_lock(&l_mutex);
	fd_forget(obj, gen);
	pthread_mutex_unlock(&l_mutex);
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
	char path[4200];
	struct shmid_kernel *shp;
	uint32_t got = 0;
	int err = 0;

	path[0] = 0;
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
	 * segment lock alone see it removed and store nothing into it.
	 */
	{
		struct jframe *prev = NULL;
		bool redirect = !opens && closes &&
				detach_destroys(ns, shp, proc, closes == UINT32_MAX ? 0 : closes);

		if (redirect)
			prev = j_target(ns, &ns->hdr->ids[IPC_SHM_IDS].lock);
		if (closes)
			got = att_del(ns, shp, proc, closes == UINT32_MAX ? 0 : closes);
		if (!opens && !closes && shm_may_destroy(ns, shp))
			shm_destroy(ns, shp, path, sizeof(path));
		if (got) {
			J_SET(ns, shp->lpid, (int32_t)pid);
			J_SET(ns, shp->dtime, ipc_now());
			J_SET(ns, shp->nattch, shp->nattch >= got ? shp->nattch - got : 0);
			if (shm_may_destroy(ns, shp))
				shm_destroy(ns, shp, path, sizeof(path));
		}
		if (redirect)
			j_target_restore(prev);
	}
	unlock_both(ns, shp);
	if (path[0])
		unlink_seg(path, ns_off(ns, shp), gen);
	return 0;
}

/*
 * Files of segments that were never published: a newseg killed between
 * creating its file and committing.  Creations happen under the ids lock,
 * so under it every file without a live segment is such a leftover.
 * Called by the reaper (the dead process may have been creating) and by
 * SHM_INFO (ipcs).
 */
static void sweep_files(struct ns *ns)
{
	char dir[4096], pre[4200];
	const char *slash = strrchr(ns->path, '/');
	size_t plen;
	DIR *d;
	struct dirent *e;
	int maxidx;

	if (!slash)
		return;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - ns->path), ns->path);
	snprintf(pre, sizeof(pre), "%s.shm-", slash + 1);
	plen = strlen(pre);
	if (ids_lock(ns, IPC_SHM_IDS))
		return;
	d = opendir(dir[0] ? dir : "/");
	maxidx = ipc_get_maxidx(ns, IPC_SHM_IDS);
	while (d && (e = readdir(d))) {
		unsigned long long off, gen;
		bool live = false;
		char path[8448];

		if (strncmp(e->d_name, pre, plen) ||
		    sscanf(e->d_name + plen, "%llx-%llx", &off, &gen) != 2)
			continue;
		for (int i = 0; i <= maxidx && !live; i++) {
			struct uperm *p = ipc_obtain(ns, IPC_SHM_IDS, i);

			live = p && ns_off(ns, p) == off && shp_of(p)->gen == gen;
		}
		if (live)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	ids_unlock(ns, IPC_SHM_IDS);
}

/* ---- shmget ---- */

static int create_file(struct ns *ns, uoff_t off, uint64_t gen, uint64_t size, int *fdp,
		       struct stat *st)
{
	char path[4200];
	int fd, tries = 0;
	mode_t mode = ns->hdr->mode & 0666;

	file_name(ns, off, gen, path, sizeof(path));
again:
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0 && errno == EEXIST && tries++ == 0) {
		/* left by a creation at this very block that died before it
		 * committed: no live segment can have this name */
		unlink(path);
		goto again;
	}
	if (fd < 0)
		return errno == ENOSPC || errno == EDQUOT ? -ENOSPC : -ENOMEM;
	/* the umask may have taken bits of the namespace's mode away */
	if (fstat(fd, st) < 0 || ((st->st_mode & 0777) != mode && fchmod(fd, mode) < 0) ||
	    ftruncate(fd, (off_t)size) < 0) {
		int e = errno;

		close(fd);
		unlink(path);
		return e == EFBIG || e == EINVAL ? -EINVAL : -ENOMEM;
	}
	*fdp = fd;
	return 0;
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
		int fd = open("/proc/sys/vm/overcommit_memory", O_RDONLY | O_CLOEXEC);
		int m = 0;
		ssize_t n;
		struct sysinfo si;

		if (fd >= 0) {
			n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
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
	int fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
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
	if (!has_cap(CAP_IPC_LOCK)) {
		char buf[32];
		int fd = open("/proc/sys/vm/hugetlb_shm_group", O_RDONLY | O_CLOEXEC);
		long g = -1;
		ssize_t n;

		if (fd >= 0) {
			n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
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
	int id, r, fd = -1;
	struct stat st;

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
	if (r)
		return r;
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

		shp->creator = me ? (uint32_t)(((char *)me - (ns->base + h->procs)) /
					       (ptrdiff_t)sizeof(struct uproc)) : NO_PROC;
	}
	shp->creator_pid = cur_pid();
	shp->att = 0;
	shp->att_cap = shp->att_n = 0;
	ulock_release(ns, &shp->lock);
	r = create_file(ns, off, shp->gen, PAGE_ALIGN(size), &fd, &st);
	if (r)
		return r;
	id = ipc_addid(ns, IPC_SHM_IDS, &shp->perm, (int)(h->lim.shmmni > INT_MAX ? INT_MAX : h->lim.shmmni));
	if (id < 0) {
		char path[4200];

		close(fd);
		file_name(ns, off, shp->gen, path, sizeof(path));
		unlink(path);
		return id;
	}
	J_SET(ns, h->shm_tot, h->shm_tot + numpages);
	/* not kept: a cached fd would keep the memory of a segment that
	 * another process destroys until we exit */
	close(fd);
	pthread_mutex_lock(&l_mutex);
	l_used = true;
	pthread_mutex_unlock(&l_mutex);
	return id;
}

static int shm_more_checks(struct ns *ns, struct uperm *p, long size)
{
	(void)ns;
	return shp_of(p)->segsz < (uint64_t)size ? -EINVAL : 0;
}

static void run_exec_pending(struct ns *ns);
static void reap_all(struct ns *ns);

int uipc_shmget(key_t key, size_t size, int shmflg)
{
	static const struct ipc_ops ops = { newseg, shm_more_checks };
	struct ns *ns = ns_get();

	if (!ns)
		return -1;
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
	return (int)set_errno_ret(r);
}

/* ---- dead attachers ---- */

static uint32_t proc_index(struct ns *ns, struct uproc *p)
{
	return (uint32_t)(((char *)p - (ns->base + ns->hdr->procs)) / (ptrdiff_t)sizeof(struct uproc));
}

/* Processes killed without their exit work are detached before anyone
 * reads the segment's accounting (as the kernel did at their death). */
/* the segment's state is committed (its lock is free): lock-free reads of
 * the attachers are safe to act on */
static bool seg_quiet(struct shmid_kernel *shp)
{
	return !__atomic_load_n((unsigned *)&shp->lock.m.__data.__lock, __ATOMIC_ACQUIRE);
}

/* Under the segment lock: the dead processes among its attachers (and its
 * creator, when shm_rmid_forced makes its death matter). */
static int collect_dead(struct ns *ns, struct shmid_kernel *shp, uint32_t *dead, int max)
{
	struct uproc *me = cur_proc(ns);
	struct shm_att *a = att_at(ns, shp);
	int n = 0;

	for (uint32_t i = 0; a && i < shp->att_n && i < shp->att_cap && n < max; i++) {
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

static int open_seg(struct ns *ns, struct shmid_kernel *shp, int oflag, bool *cached)
{
	char path[4200];
	uoff_t off = ns_off(ns, shp);
	int fd;

	pthread_mutex_lock(&l_mutex);
	fd = fd_take(l_fds, &l_nfds, off, shp->gen);
	if (fd >= 0)
		l_fd_busy++;
	pthread_mutex_unlock(&l_mutex);
	if (fd >= 0) {
		*cached = true;
		return fd;
	}
	*cached = false;
	file_name(ns, off, shp->gen, path, sizeof(path));
	fd = open(path, oflag | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -EIDRM : -errno;
	return fd;
}

static void local_add(struct lattach f)
{
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
	int shmid;
	uint64_t gen;
	uint32_t opens, closes;
};

static void delta_add(struct seg_delta *d, int *nd, int max, const struct lattach *f,
		      uint32_t opens, uint32_t closes)
{
	int i;

	for (i = 0; i < *nd; i++)
		if (d[i].shmid == f->shmid && d[i].gen == f->gen)
			break;
	if (i == *nd) {
		if (*nd == max)
			return;
		d[(*nd)++] = (struct seg_delta){ f->shmid, f->gen, 0, 0 };
	}
	d[i].opens += opens;
	d[i].closes += closes;
}

/*
 * A MAP_FIXED mapping replaced [addr, addr+len): fragments fully inside
 * are closed, fragments cut get split as the kernel splits vmas (every
 * split opens the new vma, the cut piece is closed).
 */
static int local_cover(uintptr_t addr, size_t len, struct seg_delta *d, int max)
{
	uintptr_t end = addr + len;
	int nd = 0, n0 = l_n;

	/* fragments appended below (at >= n0) are never cut again */
	for (int i = 0; i < n0;) {
		struct lattach f = l_att[i];
		uintptr_t fe = f.addr + f.len;

		if (fe <= addr || f.addr >= end) {
			i++;
			continue;
		}
		/* remove entry i keeping [0, n0) the unvisited old ones */
		l_att[i] = l_att[n0 - 1];
		l_att[n0 - 1] = l_att[l_n - 1];
		l_n--;
		n0--;
		if (f.addr >= addr && fe <= end) {
			delta_add(d, &nd, max, &f, 0, 1);
			continue;
		}
		uint32_t splits = 0;

		if (f.addr < addr) {
			struct lattach h = f;

			h.len = addr - f.addr;
			local_add(h);
			splits++;
		}
		if (fe > end) {
			struct lattach t = f;

			t.addr = end;
			t.len = fe - end;
			t.pgoff = f.pgoff + (end - f.addr) / UIPC_PAGE;
			local_add(t);
			splits++;
		}
		/* one vma became SPLITS pieces plus the closed middle */
		delta_add(d, &nd, max, &f, splits, 1);
	}
	return nd;
}

static int shm_account(struct ns *ns, int id, uint64_t gen, uint32_t proc, int pid,
		       uint32_t opens, uint32_t closes);

/* the attach accounting of fragments a MAP_FIXED attach replaced */
static void apply_deltas(struct ns *ns, struct uproc *me, struct seg_delta *d, int nd)
{
	for (int i = 0; i < nd; i++)
		shm_account(ns, d[i].shmid, d[i].gen, proc_index(ns, me), cur_pid(),
			    d[i].opens, d[i].closes);
}

static long do_shmat(struct ns *ns, int shmid, const void *shmaddr, int shmflg)
{
	uintptr_t addr = (uintptr_t)shmaddr;
	struct shmid_kernel *shp;
	int prot, acc, oflag, fd, err = 0, r;
	uint64_t gen, len;
	bool cached;
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
	gen = shp->gen;
	len = PAGE_ALIGN(shp->segsz);
	if (atomic_load(&shp->perm.deleted) || shp->perm.id != shmid)
		return -EIDRM;
	fd = open_seg(ns, shp, O_RDWR, &cached);
	if (fd < 0 && oflag == O_RDONLY && fd != -EIDRM)
		fd = open_seg(ns, shp, O_RDONLY, &cached);
	if (fd < 0)
		return fd == -EIDRM ? -EIDRM : -EACCES;
	if (addr && !(shmflg & SHM_REMAP)) {
		void *probe;

		if (addr + len < addr) {
			err = -EINVAL;
			goto out_fd;
		}
		probe = mmap((void *)addr, len, PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (probe == MAP_FAILED || probe != (void *)addr) {
			if (probe != MAP_FAILED)
				munmap(probe, len);
			err = errno == EEXIST || probe != MAP_FAILED ? -EINVAL : -ENOMEM;
			goto out_fd;
		}
		/* the probe reserved the range: replace it atomically */
	}
	m = mmap((void *)addr, len, prot, flags, fd, 0);
	if (m == MAP_FAILED) {
		err = errno == EACCES || errno == EPERM ? -EACCES : -errno;
		if (addr && !(shmflg & SHM_REMAP))
			munmap((void *)addr, len);
		goto out_fd;
	}
	if (!cached)
		close(fd);
	else
		fd_unbusy();
	fd = -1;
	/* mapped: now count it (a crash before this leaves no mapping) */
	{
		struct uproc *me = cur_proc(ns);
		struct seg_delta d[16];
		int nd = 0;

		if (!me) {
			munmap(m, len);
			return -ENOMEM;
		}
		pthread_mutex_lock(&l_mutex);
		l_used = true;
		if (flags & MAP_FIXED)
			nd = local_cover((uintptr_t)m, len, d, 16);
		pthread_mutex_unlock(&l_mutex);
		for (int tries = 0;; tries++) {
			uint32_t dead[16];
			int n;

			r = ulock_acquire(ns, &shp->lock);
			if (r) {
				munmap(m, len);
				apply_deltas(ns, me, d, nd);
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
		if (!shp_valid(ns, shp, shmid, gen)) {
			ulock_release(ns, &shp->lock);
			munmap(m, len);
			apply_deltas(ns, me, d, nd);
			return -EIDRM;
		}
		r = att_add(ns, shp, proc_index(ns, me), 1);
		if (r) {
			j_abort(ns);
			ulock_release(ns, &shp->lock);
			munmap(m, len);
			apply_deltas(ns, me, d, nd);
			return r;
		}
		J_SET(ns, shp->nattch, shp->nattch + 1);
		J_SET(ns, shp->atime, ipc_now());
		J_SET(ns, shp->lpid, (int32_t)cur_pid());
		if (shp->perm.mode & SHM_MODE_LOCKED)
			syscall(SYS_mlock2, m, len, MLOCK_ONFAULT);
		ulock_release(ns, &shp->lock);
		pthread_mutex_lock(&l_mutex);
		local_add((struct lattach){ (uintptr_t)m, len, 0, len, shmid,
					    ns_off(ns, shp), gen });
		pthread_mutex_unlock(&l_mutex);
		/* an image we exec must drop our attachments even if it
		 * never calls uipc: tell its constructor (shm_init) */
		if (!l_env_marked) {
			l_env_marked = true;
			setenv("UIPC_SHM_EXEC", "1", 1);
		}
		/* what the new mapping replaced: after the new attach is
		 * counted, as the kernel counts it before it maps */
		apply_deltas(ns, me, d, nd);
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
	if (fd >= 0 && !cached)
		close(fd);
	else if (fd >= 0)
		fd_unbusy();
	return err;
}

void *uipc_shmat(int shmid, const void *shmaddr, int shmflg)
{
	struct ns *ns = ns_get();
	long r;

	if (!ns)
		return (void *)-1;
	run_exec_pending(ns);
	shm_enter(ns);
	r = do_shmat(ns, shmid, shmaddr, shmflg);
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return (void *)-1;
	}
	return (void *)(uintptr_t)r;
}

/* ---- shmdt ---- */

/*
 * The kernel's shmdt: the first fragment (in address order) ending above
 * ADDR that maps its segment from ADDR on (start - addr == pgoff pages) is
 * detached; then every later fragment of the same segment, mapped from
 * ADDR on too, that ends within the segment's size from ADDR.
 */
static int ksys_shmdt(struct ns *ns, const void *shmaddr)
{
	uintptr_t addr = (uintptr_t)shmaddr;
	struct lattach gone[64];
	int ngone = 0, first = -1;
	struct uproc *me;

	if (addr & (UIPC_PAGE - 1))
		return -EINVAL;
	pthread_mutex_lock(&l_mutex);
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
		pthread_mutex_unlock(&l_mutex);
		return -EINVAL;
	}
	{
		struct lattach f0 = l_att[first];
		uint64_t size = f0.seglen;

		gone[ngone++] = f0;
		l_att[first] = l_att[--l_n];
		for (int i = 0; i < l_n && ngone < 64;) {
			struct lattach *f = &l_att[i];

			if (f->addr > f0.addr && f->shmid == f0.shmid && f->gen == f0.gen &&
			    f->obj == f0.obj && f->addr + f->len - addr <= size &&
			    (f->addr - addr) / UIPC_PAGE == f->pgoff) {
				gone[ngone++] = *f;
				l_att[i] = l_att[--l_n];
				continue;
			}
			i++;
		}
	}
	pthread_mutex_unlock(&l_mutex);
	me = cur_proc(ns);
	/* count first, unmap after: a crash in between leaves no mapping */
	for (int i = 0; i < ngone; i++) {
		if (me)
			shm_account(ns, gone[i].shmid, gone[i].gen, proc_index(ns, me),
				    cur_pid(), 0, 1);
		munmap((void *)gone[i].addr, gone[i].len);
	}
	return 0;
}

int uipc_shmdt(const void *shmaddr)
{
	struct ns *ns = ns_get();

	if (!ns)
		return -1;
	run_exec_pending(ns);
	shm_enter(ns);
	return (int)set_errno_ret(ksys_shmdt(ns, shmaddr));
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
		char path[4200];
		struct stat st;

		if (!p || !ns_ptr(ns, ns_off(ns, p), sizeof(struct shmid_kernel)))
			continue;
		file_name(ns, ns_off(ns, p), shp_of(p)->gen, path, sizeof(path));
		if (stat(path, &st) == 0)
			si->shm_rss += (unsigned long)st.st_blocks * 512 / UIPC_PAGE;
	}
	si->shm_tot = ns->hdr->shm_tot;
	ids_unlock(ns, IPC_SHM_IDS);
	return maxidx < 0 ? 0 : maxidx;
}

static int shmctl_stat(struct ns *ns, int shmid, int cmd, struct shmid_ds *out)
{
	struct shmid_kernel *shp;
	int err = 0, r;

	bool again = true;

retry:
	memset(out, 0, sizeof(*out));
	{
		struct uperm *p = ipc_obtain_for_stat(ns, IPC_SHM_IDS, shmid, cmd != IPC_STAT,
						      cmd == SHM_STAT_ANY, &err);

		if (!p)
			return err;
		if (!ns_ptr(ns, ns_off(ns, p), sizeof(*shp)))
			return -EINVAL;
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
	if (atomic_load(&shp->perm.deleted)) {
		ulock_release(ns, &shp->lock);
		return -EIDRM;
	}
	ipc_fill_perm(ns, &shp->perm, &out->shm_perm);
	out->shm_segsz = shp->segsz;
	out->shm_atime = shp->atime;
	out->shm_dtime = shp->dtime;
	out->shm_ctime = shp->ctime;
	out->shm_cpid = shp->cpid;
	out->shm_lpid = shp->lpid;
	out->shm_nattch = shp->nattch;
	err = cmd == IPC_STAT ? 0 : shp->perm.id;
	ulock_release(ns, &shp->lock);
	return err;
}

static int shmctl_down(struct ns *ns, int shmid, int cmd, struct shmid_ds *in)
{
	struct shmid_kernel *shp;
	uint64_t gen = 0;
	char path[4200];
	int err = 0, r;

	path[0] = 0;
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
	gen = shp->gen;
	if (cmd == IPC_RMID) {
		if (shp->nattch) {
			struct jframe *prev;

			/* the key goes (table change: the ids frame), and the
			 * mark with it: both commit together, or neither */
			prev = j_target(ns, &ns->hdr->ids[IPC_SHM_IDS].lock);
			J_SET(ns, shp->perm.mode, shp->perm.mode | SHM_MODE_DEST);
			if (shp->perm.key != IPC_PRIVATE)
				set_key_private(ns, &shp->perm);
			j_target_restore(prev);
		} else {
			shm_destroy(ns, shp, path, sizeof(path));
		}
	} else {
		if (in->shm_perm.uid == (uid_t)-1 || in->shm_perm.gid == (gid_t)-1) {
			err = -EINVAL;
		} else {
			ipc_update_perm(ns, &shp->perm, &in->shm_perm);
			J_SET(ns, shp->ctime, ipc_now());
		}
	}
	ulock_release(ns, &shp->lock);
out:
	ids_unlock(ns, IPC_SHM_IDS);
	if (path[0])
		unlink_seg(path, ns_off(ns, shp), gen);
	return err;
}

static int shmctl_do_lock(struct ns *ns, int shmid, int cmd)
{
	struct shmid_kernel *shp;
	int err = 0, r;
	uint64_t gen;

	shp = shm_obtain_check(ns, shmid, &err);
	if (!shp)
		return err;
	r = ulock_acquire(ns, &shp->lock);
	if (r)
		return lock_err(r);
	if (atomic_load(&shp->perm.deleted)) {
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
	 * does not populate) or unlocked */
	pthread_mutex_lock(&l_mutex);
	for (int i = 0; i < l_n; i++) {
		if (l_att[i].obj != ns_off(ns, shp) || l_att[i].gen != gen)
			continue;
		if (cmd == SHM_LOCK)
			syscall(SYS_mlock2, (void *)l_att[i].addr, l_att[i].len, MLOCK_ONFAULT);
		else
			munlock((void *)l_att[i].addr, l_att[i].len);
	}
	pthread_mutex_unlock(&l_mutex);
out:
	ulock_release(ns, &shp->lock);
	return err;
}

static int ksys_shmctl(int shmid, int cmd, struct shmid_ds *buf)
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

int uipc_shmctl(int shmid, int cmd, struct shmid_ds *buf)
{
	return (int)set_errno_ret(ksys_shmctl(shmid, cmd, buf));
}

/* ---- process lifecycle ---- */

/*
 * The kernel's exit_shm plus the shm_close of every mapping left: detach
 * every attachment of process slot P (its exit, its exec, or a reaper after
 * SIGKILL) and, if it created segments, orphan them (shm_rmid_forced
 * destroys the unattached ones).  EXEC: only the attachments go.
 */
static void shm_detach_proc(struct ns *ns, struct uproc *p, bool exec)
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
		char path[4200];
		int err = 0;

		if (!perm || !ns_ptr(ns, ns_off(ns, perm), sizeof(*shp)))
			continue;
		shp = shp_of(perm);
		uint64_t perm_gen = shp->gen;
		if (att_has(ns, shp, pidx))
			shm_account(ns, shp->perm.id, shp->gen, pidx, p->pid, 0, UINT32_MAX);
		if (exec || __atomic_load_n(&shp->creator, __ATOMIC_ACQUIRE) != pidx)
			continue;
		shp = lock_both(ns, perm->id, shp->gen, &err);
		if (!shp)
			continue;
		path[0] = 0;
		if (shp->creator == pidx) {
			J_SET(ns, shp->creator, NO_PROC);
			if (ns->hdr->lim.shm_rmid_forced && shm_may_destroy(ns, shp))
				shm_destroy(ns, shp, path, sizeof(path));
		}
		unlock_both(ns, shp);
		if (path[0])
			unlink_seg(path, ns_off(ns, shp), perm_gen);
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
		char path[4200];
		uint64_t gen;
		int err = 0;

		if (!perm || !ns_ptr(ns, ns_off(ns, perm), sizeof(*shp)))
			continue;
		gen = shp_of(perm)->gen;
		shp = lock_both(ns, perm->id, gen, &err);
		if (!shp)
			continue;
		path[0] = 0;
		if (shp->creator == NO_PROC && shm_may_destroy(ns, shp))
			shm_destroy(ns, shp, path, sizeof(path));
		unlock_both(ns, shp);
		if (path[0])
			unlink_seg(path, ns_off(ns, shp), gen);
	}
}

void shm_exit_proc(struct ns *ns, struct uproc *p)
{
	if (p == cur_proc(ns)) {
		/* our own exit: the local table goes with us */
		pthread_mutex_lock(&l_mutex);
		l_n = 0;
		pthread_mutex_unlock(&l_mutex);
		shm_detach_proc(ns, p, false);
		return;
	}
	shm_detach_proc(ns, p, false);
	sweep_files(ns);        /* it may have died creating a segment */
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
		shm_detach_proc(ns, p, true);
}

/* fork: the child inherits every attachment (the kernel's shm_open for each
 * vma: nattch++, atime, lpid = the parent, which runs dup_mmap) */
void shm_fork_child(void)
{
	struct ns *ns;
	struct uproc *me;
	int ppid;

	pthread_mutex_init(&l_mutex, NULL);
	atomic_store(&exec_pending, NO_PROC);
	/* only this thread survived the fork: no mmap is in progress */
	l_fd_busy = 0;
	while (l_ndeferred)
		close(l_deferred[--l_ndeferred]);
	/* the fds opened for us in the prepare handler */
	for (int i = 0; i < l_nfork; i++) {
		if (l_nfds < FDCACHE)
			l_fds[l_nfds++] = l_fork_fds[i];
		else
			close(l_fork_fds[i].fd);
	}
	l_nfork = 0;
	if (!l_n)
		return;
	ns = ns_get();
	me = ns ? cur_proc(ns) : NULL;
	if (!me)
		return;
	ppid = (int)getppid();
	for (int i = 0; i < l_n;) {
		struct lattach *a = &l_att[i];
		struct shmid_kernel *shp;
		int err = 0;

		shp = shm_obtain_check(ns, a->shmid, &err);
		if (shp && ns_off(ns, shp) == a->obj) {
			reap_dead_attachers(ns, shp);
			shp = shm_obtain_check(ns, a->shmid, &err);
		}
		if (!shp || ns_off(ns, shp) != a->obj || ulock_acquire(ns, &shp->lock)) {
			l_att[i] = l_att[--l_n];
			continue;
		}
		if (!shp_valid(ns, shp, a->shmid, a->gen) ||
		    att_add(ns, shp, proc_index(ns, me), 1)) {
			j_abort(ns);
			ulock_release(ns, &shp->lock);
			l_att[i] = l_att[--l_n];
			continue;
		}
		J_SET(ns, shp->nattch, shp->nattch + 1);
		J_SET(ns, shp->atime, ipc_now());
		J_SET(ns, shp->lpid, (int32_t)ppid);
		ulock_release(ns, &shp->lock);
		i++;
	}
}

static void shm_atfork_prepare(void)
{
	struct ns *ns;
	int maxidx;

	pthread_mutex_lock(&l_mutex);
	l_nfork = 0;
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
		char path[4200];
		struct stat st;
		int fd;

		if (!p || !ns_ptr(ns, ns_off(ns, p), sizeof(*shp)))
			continue;
		shp = shp_of(p);
		fd = fd_take(l_fds, &l_nfds, ns_off(ns, shp), shp->gen);
		if (fd >= 0)
			continue; /* inherited anyway */
		file_name(ns, ns_off(ns, shp), shp->gen, path, sizeof(path));
		fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) < 0) {
			close(fd);
			continue;
		}
		l_fork_fds[l_nfork++] = (struct fdent){ fd, ns_off(ns, shp), shp->gen,
							 st.st_dev, st.st_ino };
	}
}

static void shm_atfork_parent(void)
{
	for (int i = 0; i < l_nfork; i++)
		close(l_fork_fds[i].fd);
	l_nfork = 0;
	pthread_mutex_unlock(&l_mutex);
}

static void shm_atfork_child_unlock(void)
{
	/* shm_fork_child (called by proc.c's child handler) re-inits it */
}

/*
 * After an exec, the old image's attachments are gone (the kernel's
 * exec_mmap closes every vma).  The process finds its slot again when it
 * registers; an image exec'd by a process that had attachments registers
 * right away (UIPC_SHM_EXEC, set at the first attach), so that nattch drops
 * even if the new program never calls uipc.  This constructor runs after
 * namespace.c's and proc.c's (link order).
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
	uint64_t sum = 0;
	int bad = 0, id = perm->id;

	if (!ns_ptr(ns, ns_off(ns, shp), sizeof(*shp))) {
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
	a = att_at(ns, shp);
	if (shp->att_n > shp->att_cap || (shp->att_cap && !a)) {
		SHM_PROBLEM("shm %d: %u attachment records of %u, table at %llu\n", id, shp->att_n,
			    shp->att_cap, (unsigned long long)shp->att);
	} else {
		for (uint32_t i = 0; i < shp->att_n; i++) {
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
	return bad;
}
