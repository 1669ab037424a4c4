/*
 * procfs.c - the /proc files of System V IPC, opened through libc:
 * /proc/sysvipc/{sem,msg,shm}, the IPC sysctls under /proc/sys/kernel
 * (sem, msgmax, msgmnb, msgmni, shmmax, shmall, shmmni, shm_rmid_forced,
 * sem_next_id, msg_next_id, shm_next_id) and native AIO's under
 * /proc/sys/fs (aio-max-nr, aio-nr) show the caller's uipc namespace.
 *
 * open() and its relatives (open64, openat, openat64, the fortified
 * __open_2 family, fopen, fopen64) look at the path first: anything that
 * neither begins "/proc/sys" nor ends in the name of one of our files (or
 * "ipc", below) goes on to libc at the cost of a strrchr and a byte
 * compare.  A path that
 * does end so (relative to a directory fd or the working directory, with
 * "..", "." or symlinks on the way) is resolved as the kernel would
 * resolve its directory (realpath) before it is judged.  A file of ours is generated when it is opened (ipc/ writes the
 * kernel's text: ipc_proc_show, ipc_sysctl_get) into a memfd, reopened
 * with the access mode asked for, so that read, lseek, fstat and close
 * behave as on a file; O_CLOEXEC is honoured.
 *
 * Writes: a sysctl is set by write(), parsed by ipc_sysctl_write as the
 * kernel's proc handlers parse (an error is the write's error, as the
 * kernel reports it); a write at a non-zero position is ignored, as the
 * kernel's strict mode does.  write() is interposed for that, and pays one
 * load for an fd that is not ours: FD_SLOT below.  Opening for writing
 * needs euid 0, as the files' mode (0644, root's) asks; /proc/sysvipc
 * opened for writing by root fails each write with EIO, as the kernel's
 * seq_file does.  stdio writes bypass write() (glibc calls itself inside),
 * so fopen for writing returns a stream whose writes come here
 * (fopencookie).
 *
 * /proc/PID/ns/ipc (self, thread-self, task/TID too) names the uipc
 * namespace PID is in (core/nsdoor.c): opening it gives an O_PATH
 * descriptor of that namespace's file, which setns takes (setns.c); stat
 * (stat, fstatat, statx and glibc's older __xstat names) gives that file's
 * identity, which fstat of the descriptor gives too; readlink gives
 * "ipc:[N]", N its inode number.  So the same namespace gives the same
 * answer in every member and different ones differ, as with the kernel's
 * namespaces.  lstat, O_NOFOLLOW and AT_SYMLINK_NOFOLLOW see the link
 * itself, the kernel's.  A process not under uipc gets the kernel's answer.
 * The link reached by a relative path (openat of "ns/ipc" in /proc/self,
 * readlinkat, fstatat, statx), "..", "//" or a symlink on the way is
 * resolved as above, once its last component is "ipc".
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "entry/entry.h"

/* ---- which file ---- */

enum { PROC_SYSCTL = IPC_NR_IDS };  /* 0..2: /proc/sysvipc/{sem,msg,shm} */

/* the last component of every file of ours: a path that ends otherwise
 * is never ours, whatever directory it names */
static bool ours_by_name(const char *name)
{
	static const char *const names[] = {
		"sem", "msg", "shm", "msgmax", "msgmnb", "msgmni", "msg_next_id",
		"sem_next_id", "shm_next_id", "shmmax", "shmall", "shmmni",
		"shm_rmid_forced", "aio-max-nr", "aio-nr",
	};

	if (name[0] != 's' && name[0] != 'm' && name[0] != 'a')
		return false;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

/* does PATH's last component name the link /proc/PID/ns/ipc? */
static inline bool is_ns_name(const char *path)
{
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;

	return name[0] == 'i' && !strcmp(name, "ipc");
}

/* the cheap test every open pays: the usual absolute spelling, or a last
 * component that one of our files has (a relative path, "..", "//" or a
 * symlink on the way are resolved later, by canonical_path) */
static inline bool maybe_ours(const char *path)
{
	const char *slash;

	if (!path)
		return false;
	if (path[0] == '/' && path[1] == 'p' && !strncmp(path, "/proc/sys", 9))
		return true;
	slash = strrchr(path, '/');
	return ours_by_name(slash ? slash + 1 : path) || is_ns_name(path);
}

/* the directory DFD refers to (AT_FDCWD: the working directory) in BUF;
 * false if it has no path */
static bool dir_of_fd(int dfd, char *buf, size_t len)
{
	char self[64];
	ssize_t n;

	if (dfd == AT_FDCWD)
		return getcwd(buf, len) != NULL;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", dfd);
	n = readlink(self, buf, len - 1);
	if (n <= 0 || buf[0] != '/')
		return false;
	buf[n] = 0;
	return true;
}

/* "." and ".." and repeated slashes taken out of the absolute PATH, in
 * place; for a directory the kernel would not resolve (no /proc/sysvipc
 * on a kernel built without System V IPC), where realpath cannot help */
static void squeeze_path(char *path)
{
	char *out = path, *p = path;

	while (*p) {
		char *end;
		size_t n;

		while (*p == '/')
			p++;
		end = strchrnul(p, '/');
		n = (size_t)(end - p);
		if (n == 1 && p[0] == '.') {
			/* nothing */
		} else if (n == 2 && p[0] == '.' && p[1] == '.') {
			while (out > path && *--out != '/')
				;
		} else if (n) {
			*out++ = '/';
			memmove(out, p, n);
			out += n;
		}
		p = end;
	}
	if (out == path)
		*out++ = '/';
	*out = 0;
}

/*
 * PATH as opened relative to DFD, in the absolute form proc_kind knows:
 * the directory part resolved as the kernel resolves it (realpath follows
 * /proc/self and any symlink), the last component kept.  False when PATH
 * has no such form (a trailing slash, no directory path for DFD, too long).
 */
static bool canonical_path(int dfd, const char *path, char *out, size_t len)
{
	char dir[PATH_MAX], real[PATH_MAX];
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	size_t dlen = slash ? (size_t)(slash - path) : 0;
	int n;

	if (!*name)
		return false;
	if (path[0] == '/') {
		if (dlen >= sizeof(dir))
			return false;
		memcpy(dir, path, dlen);
		dir[dlen] = 0;
		if (!dlen)
			strcpy(dir, "/");
	} else {
		size_t base;

		if (!dir_of_fd(dfd, dir, sizeof(dir)))
			return false;
		base = strlen(dir);
		if (base + 1 + dlen >= sizeof(dir))
			return false;
		dir[base] = '/';
		memcpy(dir + base + 1, path, dlen);
		dir[base + 1 + dlen] = 0;
	}
	if (realpath(dir, real)) {
		n = snprintf(out, len, "%s/%s", strcmp(real, "/") ? real : "", name);
	} else {
		squeeze_path(dir);
		n = snprintf(out, len, "%s/%s", strcmp(dir, "/") ? dir : "", name);
	}
	return n > 0 && (size_t)n < len;
}

/* the kind of file PATH names, or -1 */
static int proc_kind(const char *path)
{
	static const char *const sysvipc[IPC_NR_IDS] = {
		[IPC_SEM_IDS] = "/proc/sysvipc/sem",
		[IPC_MSG_IDS] = "/proc/sysvipc/msg",
		[IPC_SHM_IDS] = "/proc/sysvipc/shm",
	};

	for (int t = 0; t < IPC_NR_IDS; t++)
		if (!strcmp(path, sysvipc[t]))
			return t;
	if ((!strncmp(path, "/proc/sys/kernel/", 17) || !strncmp(path, "/proc/sys/fs/", 13)) &&
	    ipc_sysctl_known(path))
		return PROC_SYSCTL;
	return -1;
}

/* ---- the fds opened for writing: one load to tell them from others ---- */

#define PROC_MAX_FDS 65536
#define PROC_SLOTS 64

/* a writable fd of ours: its file (an fd closed behind our back, by
 * fclose or the kernel at exec, may be reused for another file) */
struct proc_slot {
	dev_t dev;
	ino_t ino;
	struct timespec mtime;  /* the memfd's, when opened: changed by a write
				 * that bypassed write() (stdio) */
	int kind;
	char name[64];
};

UIPC_HIDDEN uint8_t procfs_fd_slot[PROC_MAX_FDS];  /* slot + 1, or 0 */
static struct proc_slot slots[PROC_SLOTS];
static uint64_t slots_used;                          /* bitmap */

static int slot_take(int fd, int kind, const char *path)
{
	struct stat st;
	int s;

	if ((unsigned)fd >= PROC_MAX_FDS || fstat(fd, &st))
		return -EMFILE;
	for (;;) {
		uint64_t used = __atomic_load_n(&slots_used, __ATOMIC_ACQUIRE);

		if (!~used)
			return -EMFILE;
		s = __builtin_ctzll(~used);
		if (__atomic_compare_exchange_n(&slots_used, &used, used | 1ULL << s, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			break;
	}
	slots[s].dev = st.st_dev;
	slots[s].ino = st.st_ino;
	slots[s].mtime = st.st_mtim;
	slots[s].kind = kind;
	snprintf(slots[s].name, sizeof(slots[s].name), "%s", path);
	__atomic_store_n(&procfs_fd_slot[fd], (uint8_t)(s + 1), __ATOMIC_RELEASE);
	return 0;
}

static void slot_release(int fd)
{
	int s = __atomic_exchange_n(&procfs_fd_slot[fd], 0, __ATOMIC_ACQ_REL);

	if (s)
		__atomic_fetch_and(&slots_used, ~(1ULL << (s - 1)), __ATOMIC_RELEASE);
}

static struct proc_slot *slot_of(int fd);

/*
 * What reached the file without passing write(): stdio's own writes to an
 * fd open()ed here (a shell's builtin echo after "> file" writes through
 * stdout's buffer), applied when the fd goes, once (the text is removed).
 * The kernel would have applied them at the write and reported an error
 * there; here an error is lost.
 */
static void apply_bypassed(int fd, const struct proc_slot *s)
{
	char self[64], text[4096];
	struct stat st;
	ssize_t n;
	int rfd;

	if (s->kind != PROC_SYSCTL || fstat(fd, &st) || st.st_size == 0 ||
	    (st.st_mtim.tv_sec == s->mtime.tv_sec && st.st_mtim.tv_nsec == s->mtime.tv_nsec))
		return;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	rfd = sys_open(self, O_RDWR | O_CLOEXEC);
	if (rfd < 0)
		return;
	n = pread(rfd, text, sizeof(text) - 1, 0);
	if (n > 0) {
		text[n] = 0;
		ipc_sysctl_write(s->name, text, (size_t)n);
	}
	if (ftruncate(rfd, 0)) {
		/* nothing to undo: the next close applies the same text */
	}
	sys_close(rfd);
}

void procfs_forget_slow(int fd)
{
	struct proc_slot *sl = slot_of(fd);

	if (sl)
		apply_bypassed(fd, sl);
	slot_release(fd);
}

/* FD's slot, if FD is still the file we opened; NULL otherwise */
static struct proc_slot *slot_of(int fd)
{
	int s = procfs_fd_slot[fd];
	struct stat st;

	if (!s)
		return NULL;
	if (fstat(fd, &st) == 0 && st.st_dev == slots[s - 1].dev &&
	    st.st_ino == slots[s - 1].ino)
		return &slots[s - 1];
	slot_release(fd);
	return NULL;
}

int procfs_dup_slow(int oldfd, int newfd)
{
	struct proc_slot *s = slot_of(oldfd);

	/* past PROC_SLOTS copies, the copy writes without effect */
	if (s)
		slot_take(newfd, s->kind, s->name);
	return newfd;
}

/* ---- generating a file ---- */

static int emit_fd(void *arg, const char *text, size_t len)
{
	int fd = *(int *)arg;

	while (len) {
		ssize_t w = sys_write(fd, text, len);

		if (w < 0)
			return -errno;
		text += w;
		len -= (size_t)w;
	}
	return 0;
}

/* the file's text in a new memfd; the fd, or -errno */
static int generate(int kind, const char *path)
{
	int fd = memfd_create("uipc-proc", MFD_CLOEXEC), r;
	char buf[256];

	if (fd < 0)
		return -errno;
	if (kind == PROC_SYSCTL) {
		r = ipc_sysctl_get(path, buf, sizeof(buf) - 1);
		if (!r) {
			strcat(buf, "\n");
			r = emit_fd(&fd, buf, strlen(buf));
		}
	} else {
		r = ipc_proc_show(kind, emit_fd, &fd);
	}
	if (r) {
		sys_close(fd);
		return r;
	}
	return fd;
}

/* FD (the memfd) opened again with the caller's access mode and O_CLOEXEC
 * (a new open file, at offset 0); the new fd, or -errno */
static int reopen(int fd, int flags)
{
	char self[64];
	int nfd;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	nfd = sys_open(self, (flags & O_ACCMODE) | (flags & O_CLOEXEC));
	nfd = nfd < 0 ? -errno : nfd;
	sys_close(fd);
	return nfd;
}

static int check_open(int kind, const char *path, int flags)
{
	bool writing = (flags & O_ACCMODE) != O_RDONLY;

	if (flags & O_DIRECTORY)
		return -ENOTDIR;
	if ((flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
		return -EEXIST;
	/* sysctls are 0644 and /proc/sysvipc 0444, both root's: root as the
	 * namespace's owner user namespace sees it (core/cred.c), so a
	 * process that is root only in a user namespace of its own (unshare
	 * -r) cannot write them, as with the kernel; a 0444 sysctl
	 * (fs.aio-nr) is refused to root too, as /proc/sys does */
	if (writing && (!ns_get() || cur_cred()->euid != 0 ||
			(kind == PROC_SYSCTL && ipc_sysctl_read_only(path))))
		return -EACCES;
	return 0;
}

/* open one of our files; the fd or -errno */
static int proc_open(int kind, const char *path, int flags)
{
	int r = check_open(kind, path, flags), fd;

	if (r)
		return r;
	fd = generate(kind, path);
	if (fd < 0)
		return fd;
	/* a writer starts from an empty file: what stdio puts there without
	 * passing write() is the value (apply_bypassed) */
	if ((flags & O_ACCMODE) == O_WRONLY && ftruncate(fd, 0)) {
		sys_close(fd);
		return -errno;
	}
	fd = reopen(fd, flags);
	if (fd < 0 || (flags & O_ACCMODE) == O_RDONLY)
		return fd;
	r = slot_take(fd, kind, path);
	if (r) {
		sys_close(fd);
		return r;
	}
	return fd;
}

/* ---- writing ---- */

/* a write to FD, one of ours: the count, or -errno */
static ssize_t proc_write(int fd, const struct proc_slot *s, const void *buf, size_t n)
{
	char text[4096];
	size_t len = n < sizeof(text) - 1 ? n : sizeof(text) - 1;
	ssize_t r;

	if (s->kind != PROC_SYSCTL)
		return -EIO;
	if (!n)
		return 0;
	/* the kernel's strict mode: only a write at position 0 is parsed */
	if (lseek(fd, 0, SEEK_CUR) != 0)
		return (ssize_t)n;
	if (uipc_copy_from_user(text, buf, len))
		return -EFAULT;
	text[len] = 0;
	r = ipc_sysctl_write(s->name, text, len);
	if (r > 0)
		lseek(fd, r, SEEK_CUR);
	return r;
}

#define REAL(name, type)                                                  \
	static type real_;                                                \
	if (unlikely(!real_))                                             \
		real_ = (type)dlsym(RTLD_NEXT, name)

typedef ssize_t (*write_fn)(int, const void *, size_t);

ssize_t write(int fd, const void *buf, size_t n)
{
	REAL("write", write_fn);
	if (unlikely((unsigned)fd < PROC_MAX_FDS && procfs_fd_slot[fd])) {
		struct proc_slot *s = slot_of(fd);

		if (s)
			return set_errno_ret(proc_write(fd, s, buf, n));
	}
	return real_ ? real_(fd, buf, n) : sys_write(fd, buf, n);
}

/* ---- the open family ---- */

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef int (*open2_fn)(const char *, int);
typedef int (*openat2_fn)(int, const char *, int);

/* the mode argument, present with O_CREAT or O_TMPFILE */
#define OPEN_MODE(flags, last)                                               \
	mode_t mode = 0;                                                     \
	if ((flags) & (O_CREAT | __O_TMPFILE)) {                             \
		va_list ap;                                                  \
		va_start(ap, last);                                          \
		mode = (mode_t)va_arg(ap, int);                              \
		va_end(ap);                                                  \
	}

/* the kind of file PATH (relative to DFD) names, its absolute name in
 * CANON; -1 if not ours */
static int proc_kind_at(int dfd, const char *path, char *canon, size_t len)
{
	int kind = path[0] == '/' ? proc_kind(path) : -1;

	if (kind >= 0) {
		snprintf(canon, len, "%s", path);
		return kind;
	}
	if (!canonical_path(dfd, path, canon, len))
		return -1;
	return proc_kind(canon);
}

/* ---- /proc/PID/ns/ipc ---- */

/* the number at *P (moved past it), or -1 */
static long parse_num(const char **p)
{
	long n = 0;
	const char *q = *p;

	if (*q < '0' || *q > '9')
		return -1;
	while (*q >= '0' && *q <= '9' && n < INT_MAX)
		n = n * 10 + (*q++ - '0');
	*p = q;
	return n;
}

/* Is PATH /proc/{self,thread-self,PID}[/task/TID]/ns/ipc?  *PID: whose
 * (uipc's namespaces are per process, docs/namespaces.md) */
static bool ns_link(const char *path, pid_t *pid)
{
	const char *p = path + 6;
	long n;

	if (path[0] != '/' || path[1] != 'p' || strncmp(path, "/proc/", 6))
		return false;
	if (!strncmp(p, "self/", 5) || !strncmp(p, "thread-self/", 12)) {
		*pid = getpid();
		p = strchr(p, '/') + 1;
	} else {
		n = parse_num(&p);
		if (n <= 0 || *p++ != '/')
			return false;
		*pid = (pid_t)n;
	}
	if (!strncmp(p, "task/", 5)) {
		p += 5;
		if (parse_num(&p) <= 0 || *p++ != '/')
			return false;
	}
	return !strcmp(p, "ns/ipc");
}

/* Is PATH, relative to DFD, /proc/PID/ns/ipc (a name ns_link knows once its
 * directory is resolved as the kernel resolves it, canonical_path)?  *PID:
 * whose.  Only a path whose last component is "ipc" pays more than a
 * strrchr. */
static bool ns_link_at(int dfd, const char *path, pid_t *pid)
{
	char canon[PATH_MAX];
	int saved = errno;
	bool r;

	if (!path || !is_ns_name(path))
		return false;
	if (ns_link(path, pid))
		return true;
	r = canonical_path(dfd, path, canon, sizeof(canon)) && ns_link(canon, pid);
	errno = saved;            /* the resolution leaves no trace */
	return r;
}

/* open of the link: an O_PATH descriptor of the namespace's file, in
 * libc's convention; -2 for the kernel's (the link itself asked for, or a
 * process not under uipc) */
static int ns_open(pid_t pid, int flags)
{
	int saved = errno, fd;

	if (flags & (O_NOFOLLOW | O_DIRECTORY | O_CREAT | __O_TMPFILE))
		return -2;        /* the kernel answers these alike for any namespace */
	fd = ns_door_open(pid, flags);
	if (fd == NS_DOOR_KERNEL)
		return -2;
	if (fd >= 0)
		errno = saved;    /* the door's own calls leave no trace */
	return (int)set_errno_ret(fd);
}

/* stat of the link: the namespace file's; 0, -1 and errno, or -2 */
static int ns_stat(pid_t pid, struct stat *st)
{
	struct stat s;
	int saved = errno, r = ns_door_stat(pid, &s);

	if (r == NS_DOOR_KERNEL)
		return -2;
	if (!r && uipc_copy_to_user(st, &s, sizeof(s)))
		r = -EFAULT;
	errno = saved;
	return (int)set_errno_ret(r);
}

/* readlink of the link: "ipc:[N]", cut to LEN as readlink cuts; -2 */
static ssize_t ns_readlink(pid_t pid, char *buf, size_t len)
{
	char text[64];
	struct stat s;
	int saved = errno, r = len ? ns_door_stat(pid, &s) : NS_DOOR_KERNEL;
	size_t n;

	if (r == NS_DOOR_KERNEL)
		return -2;        /* len 0: the kernel's EINVAL */
	errno = saved;
	if (r)
		return set_errno_ret(r);
	n = (size_t)snprintf(text, sizeof(text), "ipc:[%llu]", (unsigned long long)s.st_ino);
	if (n > len)
		n = len;
	if (uipc_copy_to_user(buf, text, n))
		return set_errno_ret(-EFAULT);
	return (ssize_t)n;
}

/* PATH (relative to DFD) may be ours: the result of opening it, in libc's
 * convention; -2 when it is not ours after all */
static int try_ours(int dfd, const char *path, int flags)
{
	char canon[PATH_MAX];
	int kind;
	pid_t pid;

	if (is_ns_name(path))
		return ns_link_at(dfd, path, &pid) ? ns_open(pid, flags) : -2;
	kind = proc_kind_at(dfd, path, canon, sizeof(canon));
	if (kind < 0)
		return -2;
	return (int)set_errno_ret(proc_open(kind, canon, flags));
}

/* the body of an open-family entry point SYM (libc's of type TYPE): our
 * file when PATH is one, else libc's call with the arguments given */
#define OPEN_BODY(sym, dfd, type, ...)                                       \
	REAL(sym, type);                                                     \
	if (unlikely(maybe_ours(path))) {                                    \
		int fd_ = try_ours(dfd, path, flags);                        \
		if (fd_ != -2)                                               \
			return fd_;                                          \
	}                                                                    \
	return real_ ? real_(__VA_ARGS__) : -1

int open(const char *path, int flags, ...)
{
	OPEN_MODE(flags, flags);
	OPEN_BODY("open", AT_FDCWD, open_fn, path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
	OPEN_MODE(flags, flags);
	OPEN_BODY("open64", AT_FDCWD, open_fn, path, flags, mode);
}

int openat(int dfd, const char *path, int flags, ...)
{
	OPEN_MODE(flags, flags);
	OPEN_BODY("openat", dfd, openat_fn, dfd, path, flags, mode);
}

int openat64(int dfd, const char *path, int flags, ...)
{
	OPEN_MODE(flags, flags);
	OPEN_BODY("openat64", dfd, openat_fn, dfd, path, flags, mode);
}

int __open_2(const char *path, int flags)
{
	OPEN_BODY("__open_2", AT_FDCWD, open2_fn, path, flags);
}

int __open64_2(const char *path, int flags)
{
	OPEN_BODY("__open64_2", AT_FDCWD, open2_fn, path, flags);
}

int __openat_2(int dfd, const char *path, int flags)
{
	OPEN_BODY("__openat_2", dfd, openat2_fn, dfd, path, flags);
}

int __openat64_2(int dfd, const char *path, int flags)
{
	OPEN_BODY("__openat64_2", dfd, openat2_fn, dfd, path, flags);
}

/* ---- fopen ---- */

/* fopen's MODE as open flags (glibc's letters: r w a, +, e, x) */
static int fopen_flags(const char *mode)
{
	int flags;

	switch (mode[0]) {
	case 'r': flags = O_RDONLY; break;
	case 'w': flags = O_WRONLY | O_CREAT | O_TRUNC; break;
	case 'a': flags = O_WRONLY | O_CREAT | O_APPEND; break;
	default: return -1;
	}
	for (const char *m = mode + 1; *m && *m != ','; m++) {
		if (*m == '+')
			flags = (flags & ~O_ACCMODE) | O_RDWR;
		else if (*m == 'e')
			flags |= O_CLOEXEC;
		else if (*m == 'x')
			flags |= O_EXCL;
	}
	return flags;
}

static ssize_t cookie_read(void *c, char *buf, size_t n)
{
	return read(*(int *)c, buf, n);
}

static ssize_t cookie_write(void *c, const char *buf, size_t n)
{
	ssize_t r = write(*(int *)c, buf, n);

	/* stdio takes 0 for an error and keeps errno */
	return r < 0 ? 0 : r;
}

static int cookie_seek(void *c, off64_t *off, int whence)
{
	off_t r = lseek(*(int *)c, *off, whence);

	if (r < 0)
		return -1;
	*off = r;
	return 0;
}

static int cookie_close(void *c)
{
	int fd = *(int *)c;

	free(c);
	return close(fd);
}

/* a stream on FD, one of ours: fdopen for reading, a cookie stream when
 * it writes (stdio's own writes would not reach write() above) */
static FILE *proc_stream(int fd, int flags, const char *mode)
{
	static const cookie_io_functions_t io = {
		cookie_read, cookie_write, cookie_seek, cookie_close,
	};
	int *c;
	FILE *f;

	if ((flags & O_ACCMODE) == O_RDONLY) {
		f = fdopen(fd, mode);
	} else {
		c = malloc(sizeof(*c));
		f = c ? (*c = fd, fopencookie(c, mode, io)) : NULL;
		if (!f)
			free(c);
	}
	if (!f)
		close(fd);
	return f;
}

typedef FILE *(*fopen_fn)(const char *, const char *);

static FILE *fopen_ours(const char *path, const char *mode, bool *ours)
{
	char canon[PATH_MAX];
	int kind, flags, fd;

	/* fopen of /proc/PID/ns/ipc is the kernel's (a stream on an O_PATH
	 * descriptor could not read anyway) */
	kind = is_ns_name(path) ? -1 : proc_kind_at(AT_FDCWD, path, canon, sizeof(canon));
	*ours = kind >= 0;
	if (!*ours)
		return NULL;
	flags = fopen_flags(mode);
	if (flags < 0) {
		errno = EINVAL;
		return NULL;
	}
	fd = (int)set_errno_ret(proc_open(kind, canon, flags));
	return fd < 0 ? NULL : proc_stream(fd, flags, mode);
}

/* our file for PATH, else what the next fopen (libc's: REAL) opens */
static FILE *fopen_or_next(fopen_fn real, const char *path, const char *mode)
{
	if (unlikely(maybe_ours(path))) {
		bool ours;
		FILE *f = fopen_ours(path, mode, &ours);

		if (ours)
			return f;
	}
	return real ? real(path, mode) : NULL;
}

FILE *fopen(const char *path, const char *mode)
{
	REAL("fopen", fopen_fn);
	return fopen_or_next(real_, path, mode);
}

FILE *fopen64(const char *path, const char *mode)
{
	REAL("fopen64", fopen_fn);
	return fopen_or_next(real_, path, mode);
}

/* ---- readlink and the stat family, for /proc/PID/ns/ipc ---- */

typedef ssize_t (*readlink_fn)(const char *, char *, size_t);
typedef ssize_t (*readlinkat_fn)(int, const char *, char *, size_t);
typedef int (*stat_fn)(const char *, struct stat *);
typedef int (*fstatat_fn)(int, const char *, struct stat *, int);
typedef int (*xstat_fn)(int, const char *, struct stat *);
typedef int (*fxstatat_fn)(int, int, const char *, struct stat *, int);
typedef int (*statx_fn)(int, const char *, int, unsigned, struct statx *);

ssize_t readlink(const char *path, char *buf, size_t len)
{
	pid_t pid;
	ssize_t r;

	REAL("readlink", readlink_fn);
	if (unlikely(ns_link_at(AT_FDCWD, path, &pid)) && (r = ns_readlink(pid, buf, len)) != -2)
		return r;
	return real_ ? real_(path, buf, len) : -1;
}

ssize_t readlinkat(int dfd, const char *path, char *buf, size_t len)
{
	pid_t pid;
	ssize_t r;

	REAL("readlinkat", readlinkat_fn);
	if (unlikely(ns_link_at(dfd, path, &pid)) && (r = ns_readlink(pid, buf, len)) != -2)
		return r;
	return real_ ? real_(dfd, path, buf, len) : -1;
}

/* the body of a stat-family entry point SYM (libc's of type TYPE) for a
 * call that follows links when FOLLOW: the namespace file's stat for the
 * link, else libc's call with the arguments given */
#define STAT_BODY(sym, type, dfd, path, st, follow, ...)                     \
	pid_t pid_;                                                          \
	int r_;                                                              \
	REAL(sym, type);                                                     \
	if (unlikely((follow) && ns_link_at(dfd, path, &pid_)) &&            \
	    (r_ = ns_stat(pid_, (struct stat *)(st))) != -2)                 \
		return r_;                                                   \
	return real_ ? real_(__VA_ARGS__) : -1

_Static_assert(sizeof(struct stat) == sizeof(struct stat64), "one stat layout");

int stat(const char *path, struct stat *st)
{
	STAT_BODY("stat", stat_fn, AT_FDCWD, path, st, true, path, st);
}

int stat64(const char *path, struct stat64 *st)
{
	STAT_BODY("stat64", stat_fn, AT_FDCWD, path, st, true, path, (struct stat *)st);
}

int fstatat(int dfd, const char *path, struct stat *st, int flags)
{
	STAT_BODY("fstatat", fstatat_fn, dfd, path, st, !(flags & AT_SYMLINK_NOFOLLOW), dfd, path, st,
		  flags);
}

int fstatat64(int dfd, const char *path, struct stat64 *st, int flags)
{
	STAT_BODY("fstatat64", fstatat_fn, dfd, path, st, !(flags & AT_SYMLINK_NOFOLLOW), dfd, path,
		  (struct stat *)st, flags);
}

/* glibc before 2.33 compiled stat() into these */
int __xstat(int ver, const char *path, struct stat *st)
{
	STAT_BODY("__xstat", xstat_fn, AT_FDCWD, path, st, true, ver, path, st);
}

int __xstat64(int ver, const char *path, struct stat64 *st)
{
	STAT_BODY("__xstat64", xstat_fn, AT_FDCWD, path, st, true, ver, path, (struct stat *)st);
}

int __fxstatat(int ver, int dfd, const char *path, struct stat *st, int flags)
{
	STAT_BODY("__fxstatat", fxstatat_fn, dfd, path, st, !(flags & AT_SYMLINK_NOFOLLOW), ver, dfd,
		  path, st, flags);
}

int __fxstatat64(int ver, int dfd, const char *path, struct stat64 *st, int flags)
{
	STAT_BODY("__fxstatat64", fxstatat_fn, dfd, path, st, !(flags & AT_SYMLINK_NOFOLLOW), ver, dfd,
		  path, (struct stat *)st, flags);
}

/* struct statx of the namespace file's stat S */
static void statx_of(const struct stat *s, struct statx *x)
{
	memset(x, 0, sizeof(*x));
	x->stx_mask = STATX_BASIC_STATS;
	x->stx_blksize = (uint32_t)s->st_blksize;
	x->stx_nlink = (uint32_t)s->st_nlink;
	x->stx_uid = s->st_uid;
	x->stx_gid = s->st_gid;
	x->stx_mode = (uint16_t)s->st_mode;
	x->stx_ino = s->st_ino;
	x->stx_size = (uint64_t)s->st_size;
	x->stx_blocks = (uint64_t)s->st_blocks;
	x->stx_atime = (struct statx_timestamp){ s->st_atim.tv_sec, (uint32_t)s->st_atim.tv_nsec, 0 };
	x->stx_mtime = (struct statx_timestamp){ s->st_mtim.tv_sec, (uint32_t)s->st_mtim.tv_nsec, 0 };
	x->stx_ctime = (struct statx_timestamp){ s->st_ctim.tv_sec, (uint32_t)s->st_ctim.tv_nsec, 0 };
	x->stx_rdev_major = major(s->st_rdev);
	x->stx_rdev_minor = minor(s->st_rdev);
	x->stx_dev_major = major(s->st_dev);
	x->stx_dev_minor = minor(s->st_dev);
}

int statx(int dfd, const char *path, int flags, unsigned mask, struct statx *x)
{
	struct statx sx;
	struct stat s;
	pid_t pid;
	int r;

	REAL("statx", statx_fn);
	if (unlikely(!(flags & AT_SYMLINK_NOFOLLOW) && ns_link_at(dfd, path, &pid)) &&
	    (r = ns_stat(pid, &s)) != -2) {
		if (r)
			return r;
		statx_of(&s, &sx);
		return (int)set_errno_ret(uipc_copy_to_user(x, &sx, sizeof(sx)) ? -EFAULT : 0);
	}
	return real_ ? real_(dfd, path, flags, mask, x) : -1;
}
