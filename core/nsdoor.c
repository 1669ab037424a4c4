/*
 * nsdoor.c - which namespace a process is in, as /proc/PID/ns/ipc tells
 * for the kernel's: the door that open, stat and readlink of that link go
 * through (entry/procfs.c), and that setns(pidfd, CLONE_NEWIPC) uses.
 *
 * Another process's namespace is read from what the kernel shows of it,
 * with the permission the kernel's link asks for (reading /proc/PID/maps
 * and /proc/PID/fd takes the same ptrace read access):
 *
 *   1. its marker (nsfile.c): one PROT_NONE page of its namespace's file
 *      at NS_MARK_OFF in /proc/PID/maps, mapped when it entered the
 *      namespace (first call, unshare, setns) and inherited by fork;
 *   2. else, if libuipc is mapped at all, its environment as it was
 *      exec'd (/proc/PID/environ): UIPC_NS_FD (an inherited anonymous
 *      namespace: that fd, if it still is one), UIPC_NS_FILE, or the name
 *      UIPC_NS, UIPC_DIR and its euid make (what its first call will open);
 *   3. else the process is not under uipc: its IPC namespace is the
 *      kernel's (NS_DOOR_KERNEL), and the caller asks the kernel.
 *
 * The answer is a new O_PATH descriptor of the namespace's file: for an
 * anonymous namespace its memfd, reopened through /proc/PID/fd/N (the
 * kernel's nsfs gives an fd too, that can only be passed to setns and
 * stat).  It keeps the namespace alive as long as it is open, as an nsfs
 * descriptor keeps a kernel namespace.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "core/core.h"

#define ANON_LINK "/memfd:uipc-ns"

/* what /proc/PID/maps says of PID's namespace */
struct seen {
	bool marked;               /* a marker was found: the rest is valid */
	bool uipc;                 /* libuipc is mapped */
	dev_t dev;
	ino_t ino;
	char path[4096];           /* the file's path as maps shows it */
};

/* Read the whole file PATH into a new NUL-terminated buffer (*LEN bytes
 * read): NULL and errno on failure. */
static char *slurp(const char *path, size_t *len)
{
	size_t cap = 16384, have = 0;
	char *buf = malloc(cap), *more;
	int fd = sys_open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0 || !buf) {
		int e = fd < 0 ? errno : ENOMEM;

		if (fd >= 0)
			sys_close(fd);
		free(buf);
		errno = e;
		return NULL;
	}
	while ((n = read(fd, buf + have, cap - have - 1)) > 0) {
		have += (size_t)n;
		if (cap - have > 1)
			continue;
		more = realloc(buf, cap * 2);
		if (!more)
			break;
		buf = more;
		cap *= 2;
	}
	sys_close(fd);
	buf[have] = 0;
	*len = have;
	return buf;
}

/* One line of /proc/PID/maps: a marker (one page, ---s, at NS_MARK_OFF)
 * fills *S; a mapping of libuipc notes that the process is under uipc. */
static void maps_line(const char *line, struct seen *s)
{
	unsigned long long a, b, off, ino;
	unsigned maj, min;
	char perms[8];
	int at = 0;
	const char *path, *base;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &a, &b, perms, &off, &maj, &min,
		   &ino, &at) < 7 || !at)
		return;
	path = line + at;
	base = strrchr(path, '/');
	if (base && !strncmp(base + 1, "libuipc", 7))
		s->uipc = true;
	if (b - a != UIPC_PAGE || strcmp(perms, "---s") || off != NS_MARK_OFF || !ino)
		return;
	s->marked = true;
	s->uipc = true;
	s->dev = makedev(maj, min);
	s->ino = (ino_t)ino;
	snprintf(s->path, sizeof(s->path), "%s", path);
}

static int read_maps(pid_t pid, struct seen *s)
{
	char path[64], *buf, *line, *nl;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	buf = slurp(path, &len);
	if (!buf)
		return -errno;
	for (line = buf; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (!nl)
			nl = line + strlen(line) - 1;
		else
			*nl = 0;
		maps_line(line, s);
		if (!nl[1])
			break;
	}
	free(buf);
	return 0;
}

/* Is /proc/PID/fd/NAME (in DFD) an anonymous namespace's memfd, and the
 * one (DEV, INO) if WANT_ID? */
static bool is_anon_fd(int dfd, const char *name, bool want_id, dev_t dev, ino_t ino)
{
	char link[256];
	struct stat st;
	ssize_t n = sys_readlinkat(dfd, name, link, sizeof(link) - 1);

	if (n < 0)
		return false;
	link[n] = 0;
	if (strncmp(link, ANON_LINK, strlen(ANON_LINK)))
		return false;
	if (!want_id)
		return true;
	return sys_fstatat(dfd, name, &st, 0) == 0 && st.st_dev == dev && st.st_ino == ino;
}

/* PID's fd of the anonymous namespace (DEV, INO), opened O_PATH: the
 * namespace itself, as its member holds it */
static int open_member_fd(pid_t pid, dev_t dev, ino_t ino, int flags, bool hold)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int r = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || !is_anon_fd(dirfd(d), e->d_name, true, dev, ino))
			continue;
		r = sys_openat(dirfd(d), e->d_name, O_PATH | (flags & O_CLOEXEC));
		r = r < 0 ? -errno : r;
		if (r >= 0 && hold)
			ns_note_shared_fd(r);  /* the descriptor holds it: never reset */
		break;
	}
	closedir(d);
	return r;
}

/* PATH opened O_PATH, if it still is the file (DEV, INO) */
static int open_named(const char *path, dev_t dev, ino_t ino, int flags)
{
	struct stat st;
	int fd = sys_open(path, O_PATH | O_NOFOLLOW | (flags & O_CLOEXEC));

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_dev != dev || st.st_ino != ino) {
		/* removed or replaced since PID mapped it: no name reaches it */
		sys_close(fd);
		return -ENOENT;
	}
	return fd;
}

static int open_marked(pid_t pid, const struct seen *s, int flags, bool hold)
{
	if (!strncmp(s->path, ANON_LINK, strlen(ANON_LINK)))
		return open_member_fd(pid, s->dev, s->ino, flags, hold);
	return open_named(s->path, s->dev, s->ino, flags);
}

/* ---- the environment PID was exec'd with ---- */

struct env_view {
	const char *fd, *file, *ns, *dir, *xdg;
};

static const char *env_value(const char *e, const char *name)
{
	size_t l = strlen(name);

	return !strncmp(e, name, l) && e[l] == '=' ? e + l + 1 : NULL;
}

static void env_parse(const char *buf, size_t len, struct env_view *v)
{
	const char *e, *x;

	memset(v, 0, sizeof(*v));
	for (e = buf; e < buf + len; e += strlen(e) + 1) {
		if ((x = env_value(e, "UIPC_NS_FD")))
			v->fd = x;
		else if ((x = env_value(e, "UIPC_NS_FILE")))
			v->file = x;
		else if ((x = env_value(e, "UIPC_NS")))
			v->ns = x;
		else if ((x = env_value(e, "UIPC_DIR")))
			v->dir = x;
		else if ((x = env_value(e, "XDG_RUNTIME_DIR")))
			v->xdg = x;
	}
}

/* PID's effective uid (/proc/PID/status), or (uid_t)-1 */
static uid_t proc_euid(pid_t pid)
{
	char path[64], *buf, *u;
	unsigned r, e;
	size_t len;
	uid_t euid = (uid_t)-1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	buf = slurp(path, &len);
	u = buf ? strstr(buf, "\nUid:") : NULL;
	if (u && sscanf(u + 5, "%u %u", &r, &e) == 2)
		euid = e;
	free(buf);
	return euid;
}

/* PID's inherited anonymous namespace: its fd FDSTR, if that still is one */
static int open_env_fd(pid_t pid, const char *fdstr, int flags, bool hold)
{
	char path[64], *end;
	long n = strtol(fdstr, &end, 10);
	int dfd, r = -ENOENT;

	if (*end || n < 0 || n > INT_MAX)
		return -ENOENT;
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	dfd = sys_open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	snprintf(path, sizeof(path), "%ld", n);
	if (is_anon_fd(dfd, path, false, 0, 0)) {
		r = sys_openat(dfd, path, O_PATH | (flags & O_CLOEXEC));
		r = r < 0 ? -errno : r;
		if (r >= 0 && hold)
			ns_note_shared_fd(r);
	}
	sys_close(dfd);
	return r;
}

/* The namespace of PID (no marker, libuipc mapped) from its environment */
static int open_from_env(pid_t pid, int flags, bool hold)
{
	char path[64], file[4096], *buf;
	struct env_view v;
	size_t len;
	struct stat st;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	buf = slurp(path, &len);
	if (!buf)
		return -errno;
	env_parse(buf, len, &v);
	if (v.fd && *v.fd && (r = open_env_fd(pid, v.fd, flags, hold)) >= 0) {
		free(buf);
		return r;
	}
	if (v.file && *v.file)
		r = snprintf(file, sizeof(file), "%s", v.file) < (int)sizeof(file) ? 0 : -ENAMETOOLONG;
	else
		r = ns_path_for(v.ns, v.dir, v.xdg, proc_euid(pid), file, sizeof(file));
	free(buf);
	if (r)
		return r;
	/* not made yet (it is on the process's first call): made now, as its
	 * first call would, when it is ours to make and to be held (a stat
	 * makes nothing) */
	if (hold && sys_stat(file, &st) < 0 && errno == ENOENT && (r = ns_make_missing(file)))
		return r;
	if (sys_stat(file, &st) < 0)
		return -errno;
	return open_named(file, st.st_dev, st.st_ino, flags);
}

/* PID's namespace file, opened O_PATH; HOLD: for the caller to keep (the
 * namespace is marked as held by someone besides its members), else only
 * to be looked at and closed */
static int door_open(pid_t pid, int flags, bool hold)
{
	struct seen s = { 0 };
	struct ns *ns;
	int r;

	if (pid == cur_pid()) {
		ns = ns_get();
		if (!ns)
			return -errno;
		return ns_reopen(ns, flags, hold);
	}
	r = read_maps(pid, &s);
	if (r)
		return r;
	if (s.marked)
		return open_marked(pid, &s, flags, hold);
	if (!s.uipc)
		return NS_DOOR_KERNEL;
	return open_from_env(pid, flags, hold);
}

int ns_door_open(pid_t pid, int flags)
{
	return door_open(pid, flags, true);
}

int ns_door_stat(pid_t pid, struct stat *st)
{
	int fd = door_open(pid, O_CLOEXEC, false), r = 0;

	if (fd < 0)
		return fd;
	if (fstat(fd, st) < 0)
		r = -errno;
	sys_close(fd);
	return r;
}
