/*
 * tools/ns.c - `uipc ns create|rm|ls|path`: namespace management through
 * uipc_ns_create / uipc_ns_remove / uipc_ns_path.  `ls` finds the namespace
 * files of the current user in $UIPC_DIR (default /dev/shm), learning the
 * file naming from uipc_ns_path(); then the user's anonymous namespaces
 * (unshare, clone), which have no name: found as the memfds processes hold
 * (/proc/PID/fd), described by uipc_ns_info(), their members counted by
 * the namespace each process is in (stat of /proc/PID/ns/ipc, which uipc
 * answers).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "uipc.h"
#include "cmd.h"

#define PROBE "uipc-ns-probe-name"

/* Export --dir before any library call that builds a path. */
static int apply_dir(void)
{
	if (global_dir && setenv("UIPC_DIR", global_dir, 1) != 0) {
		warnerr(errno, "cannot set UIPC_DIR");
		return -1;
	}
	return 0;
}

static int ns_create(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "extended", no_argument, NULL, 'e' },
		{ "size", required_argument, NULL, 's' },
		{ "shared", no_argument, NULL, 'S' },
		{ "dir", required_argument, NULL, OPT_DIR },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct uipc_ns_opts o = { 0 };
	char path[PATH_MAX], spec[NAME_MAX + 8];
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (parse_mode(optarg, &o.mode) != 0)
				return usage_error("bad mode '%s'", optarg);
			break;
		case 'e':
			o.extended = 1;
			break;
		case 's':
			if (parse_size(optarg, &o.size) != 0)
				return usage_error("bad size '%s'", optarg);
			break;
		case 'S':
			o.shared = 1;
			break;
		case OPT_DIR:
			set_dir_option(optarg);
			break;
		case 'h':
			fputs(help_for("ns"), stdout);
			return 0;
		default:
			return try_help(EXIT_USAGE);
		}
	}
	if (optind + 1 != argc)
		return usage_error("ns create takes one NAME");
	/* as for namespaces created implicitly (the size default is the library's) */
	if (!o.extended && getenv("UIPC_NS_EXTENDED") && atoi(getenv("UIPC_NS_EXTENDED")))
		o.extended = 1;
	if (apply_dir() != 0)
		return 1;
	/* --shared NAME is the namespace shared:NAME */
	if (o.shared && strncmp(argv[optind], "shared:", 7))
		snprintf(spec, sizeof(spec), "shared:%s", argv[optind]);
	else
		snprintf(spec, sizeof(spec), "%s", argv[optind]);
	if (uipc_ns_create(spec, &o) != 0) {
		int err = errno;

		if (uipc_ns_path(spec, path, sizeof(path)) != 0)
			snprintf(path, sizeof(path), "invalid name");
		warnerr(err, "cannot create namespace '%s' (%s)", spec, path);
		return 1;
	}
	return 0;
}

/* Options common to rm / ls / path: --dir only.  0: go on, 1: help was
 * shown, -1: bad option. */
static int simple_opts(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dir", required_argument, NULL, OPT_DIR },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_DIR:
			set_dir_option(optarg);
			break;
		case 'h':
			fputs(help_for("ns"), stdout);
			return 1;
		default:
			try_help(EXIT_USAGE);
			return -1;
		}
	}
	return apply_dir() == 0 ? 0 : -1;
}

static int ns_rm(int argc, char **argv)
{
	int i, r, status = 0;

	r = simple_opts(argc, argv);
	if (r)
		return r < 0 ? EXIT_USAGE : 0;
	if (optind >= argc)
		return usage_error("ns rm needs a NAME");
	for (i = optind; i < argc; i++) {
		if (uipc_ns_remove(argv[i]) != 0) {
			warnerr(errno, "cannot remove namespace '%s'", argv[i]);
			status = 1;
		}
	}
	return status;
}

static int ns_path(int argc, char **argv)
{
	char path[PATH_MAX];
	const char *name;
	int r;

	r = simple_opts(argc, argv);
	if (r)
		return r < 0 ? EXIT_USAGE : 0;
	if (argc - optind > 1)
		return usage_error("ns path takes at most one NAME");
	name = optind < argc ? argv[optind] : global_ns;
	if (uipc_ns_path(name, path, sizeof(path)) != 0) {
		warnerr(errno, "namespace '%s'", name ? name : current_ns_name());
		return 1;
	}
	printf("%s\n", path);
	return 0;
}

/* The naming of namespace files: directory, and file name prefix/suffix
 * around the namespace name, learnt from uipc_ns_path(), for private names
 * (PROBE) and shared ones (shared:PROBE: their directory may differ). */

struct ns_naming {
	char dir[PATH_MAX];
	char prefix[NAME_MAX + 1];
	char suffix[NAME_MAX + 1];
};

struct ns_entry {
	const char *dir;
	char *file;
	char *name;
	const char *kind;
};

static int ns_naming(struct ns_naming *n, const char *spec)
{
	char path[PATH_MAX];
	char *slash, *probe;

	if (uipc_ns_path(spec, path, sizeof(path)) != 0) {
		warnerr(errno, "cannot learn the namespace file naming");
		return -1;
	}
	slash = strrchr(path, '/');
	probe = slash ? strstr(slash + 1, PROBE) : NULL;
	if (!probe) {
		warnmsg("unexpected namespace path '%s'", path);
		return -1;
	}
	*slash = '\0';
	snprintf(n->dir, sizeof(n->dir), "%s", path[0] ? path : "/");
	snprintf(n->suffix, sizeof(n->suffix), "%s", probe + strlen(PROBE));
	*probe = '\0';
	snprintf(n->prefix, sizeof(n->prefix), "%s", slash + 1);
	return 0;
}

/* The part of f between prefix and suffix, or NULL. */
static char *strip(const char *f, const char *prefix, const char *suffix)
{
	size_t lf = strlen(f), lp = strlen(prefix), ls = strlen(suffix);

	if (lf <= lp + ls || strncmp(f, prefix, lp) || strcmp(f + lf - ls, suffix))
		return NULL;
	if (strstr(f, ".tmp."))		/* a namespace being created */
		return NULL;
	return strndup(f + lp, lf - lp - ls);
}

static int entry_cmp(const void *a, const void *b)
{
	const struct ns_entry *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->kind, y->kind);
}

static void ns_print_entry(const struct ns_entry *e)
{
	char path[PATH_MAX + NAME_MAX + 2];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", e->dir, e->file);
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return;
	if (strcmp(e->kind, "shared") && st.st_uid != geteuid())
		return;
	printf("%-24s %-6s %04o %14lld %12lld  %s\n", e->name, e->kind,
	       (unsigned)(st.st_mode & 07777), (long long)st.st_size,
	       (long long)st.st_blocks * 512, path);
}

/* Add the namespace files of KIND named as N says to *V (*COUNT long). */
static int ns_collect(const struct ns_naming *n, const char *kind, struct ns_entry **v,
		      size_t *count)
{
	struct ns_entry *more;
	struct dirent *de;
	DIR *d = opendir(n->dir);

	if (!d) {
		warnerr(errno, "%s", n->dir);
		return -1;
	}
	while ((de = readdir(d))) {
		char *name = strip(de->d_name, n->prefix, n->suffix);

		if (!name)
			continue;
		more = realloc(*v, (*count + 1) * sizeof(**v));
		if (!more) {
			free(name);
			break;
		}
		*v = more;
		more[*count].name = name;
		more[*count].kind = kind;
		more[*count].dir = n->dir;
		more[*count].file = strdup(de->d_name);
		if (!more[*count].file) {
			free(name);
			break;
		}
		(*count)++;
	}
	closedir(d);
	return 0;
}

/* ---- anonymous namespaces ---- */

struct anon_ns {
	dev_t dev;
	ino_t ino;
	pid_t pid;                 /* a process holding it ... */
	int fd;                    /* ... as this fd */
	int members;
};

static bool is_pid(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* add the anonymous namespaces of this user that process PID holds */
static void collect_anon_of(const char *pid, struct anon_ns **v, size_t *count)
{
	char path[300];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%s/fd", pid);
	d = opendir(path);
	while (d && (e = readdir(d))) {
		char link[64];
		struct stat st;
		struct anon_ns *more;
		ssize_t l = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
		size_t i;

		if (l <= 0 || (link[l] = 0, strncmp(link, "/memfd:uipc-ns", 14)) ||
		    fstatat(dirfd(d), e->d_name, &st, 0) || st.st_uid != geteuid())
			continue;
		for (i = 0; i < *count && !((*v)[i].dev == st.st_dev && (*v)[i].ino == st.st_ino); i++)
			;
		if (i < *count)
			continue;
		more = realloc(*v, (*count + 1) * sizeof(**v));
		if (!more)
			break;
		*v = more;
		more[*count] = (struct anon_ns){ st.st_dev, st.st_ino, atoi(pid),
						 atoi(e->d_name), 0 };
		(*count)++;
	}
	if (d)
		closedir(d);
}

/* count PID as a member of the namespace it is in, if one of V */
static void count_member(const char *pid, struct anon_ns *v, size_t count)
{
	char path[300];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%s/ns/ipc", pid);
	if (stat(path, &st))
		return;
	for (size_t i = 0; i < count; i++)
		if (v[i].dev == st.st_dev && v[i].ino == st.st_ino)
			v[i].members++;
}

static void print_anon(const struct anon_ns *a)
{
	struct uipc_ns_info info;
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)a->pid, a->fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;   /* gone meanwhile */
	if (uipc_ns_info(fd, &info) == 0 && info.anonymous) {
		char id[32];

		snprintf(id, sizeof(id), "ipc:[%llu]", info.id);
		printf("%-20s %8d %8d %6d %6d %6d %12llu\n", id, info.creator_pid, a->members,
		       info.sems, info.msgs, info.shms, info.bytes);
	}
	close(fd);
}

static void ns_ls_anon(void)
{
	struct anon_ns *v = NULL;
	struct dirent *e;
	size_t count = 0;
	DIR *d = opendir("/proc");

	while (d && (e = readdir(d)))
		if (is_pid(e->d_name))
			collect_anon_of(e->d_name, &v, &count);
	if (d)
		rewinddir(d);
	while (count && d && (e = readdir(d)))
		if (is_pid(e->d_name))
			count_member(e->d_name, v, count);
	if (d)
		closedir(d);
	if (count) {
		printf("\n%-20s %8s %8s %6s %6s %6s %12s\n", "ANONYMOUS", "CREATOR", "MEMBERS",
		       "SEMS", "MSGS", "SHMS", "BYTES");
		for (size_t i = 0; i < count; i++)
			print_anon(&v[i]);
	}
	free(v);
}

static int ns_ls(int argc, char **argv)
{
	struct ns_naming n, sn;
	struct ns_entry *v = NULL;
	size_t count = 0, i;
	int r;

	r = simple_opts(argc, argv);
	if (r)
		return r < 0 ? EXIT_USAGE : 0;
	if (optind < argc)
		return usage_error("ns ls takes no NAME");
	if (ns_naming(&n, PROBE) != 0 || ns_naming(&sn, "shared:" PROBE) != 0)
		return 1;
	if (ns_collect(&n, "user", &v, &count) != 0 ||
	    ns_collect(&sn, "shared", &v, &count) != 0)
		return 1;
	if (count)
		qsort(v, count, sizeof(*v), entry_cmp);
	printf("%-24s %-6s %4s %14s %12s  %s\n", "NAME", "KIND", "MODE", "SIZE", "USED",
	       "PATH");
	for (i = 0; i < count; i++) {
		ns_print_entry(&v[i]);
		free(v[i].file);
		free(v[i].name);
	}
	free(v);
	ns_ls_anon();
	return 0;
}

int cmd_ns(int argc, char **argv)
{
	static char name[64];
	const char *sub;

	if (argc < 2)
		return usage_error("ns needs a subcommand: create, rm, ls or path");
	sub = argv[1];
	argc--;
	argv++;
	snprintf(name, sizeof(name), "uipc ns %s", sub);
	cmd_name = name;
	argv[0] = name;	/* getopt's messages say "uipc ns SUB: ..." */
	optind = 0;
	if (!strcmp(sub, "create"))
		return ns_create(argc, argv);
	if (!strcmp(sub, "rm") || !strcmp(sub, "remove"))
		return ns_rm(argc, argv);
	if (!strcmp(sub, "ls") || !strcmp(sub, "list"))
		return ns_ls(argc, argv);
	if (!strcmp(sub, "path"))
		return ns_path(argc, argv);
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
		fputs(help_for("ns"), stdout);
		return 0;
	}
	return usage_error("unknown ns subcommand '%s'", sub);
}
