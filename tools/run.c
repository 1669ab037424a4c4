/*
 * tools/run.c - `uipc run [--ns NAME] [--dir DIR] [--aio-backend=B] -- CMD
 * [ARGS...]`: find
 * libuipc.so ($UIPC_LIB, else next to the uipc binary as in the build tree,
 * else in the library directory of an installed uipc, else wherever the
 * loaded library came from), check that the namespace opens, put the library
 * first in LD_PRELOAD, set UIPC_NS / UIPC_DIR, and exec CMD.
 */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "uipc.h"
#include "cmd.h"

/* An installed uipc (install.mk builds one for `make install`) has these
 * baked in: the library's file name with its soname, the library directory
 * relative to the directory of the uipc binary (so that a tree installed
 * under DESTDIR, or moved whole, finds its own library), and the library
 * directory itself.  The build tree's uipc has the defaults and no
 * UIPC_LIBDIR. */
#ifndef UIPC_SONAME
#define UIPC_SONAME "libuipc.so.0"
#endif
#ifndef UIPC_LIBDIR_FROM_BIN
#define UIPC_LIBDIR_FROM_BIN "../lib"
#endif

static int is_readable_file(const char *path)
{
	return access(path, R_OK) == 0;
}

/* The directory of the running binary. */
static int exe_dir(char *out, size_t len)
{
	ssize_t n;
	char *slash;

	n = readlink("/proc/self/exe", out, len - 1);
	if (n <= 0)
		return -1;
	out[n] = '\0';
	slash = strrchr(out, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	return 0;
}

/* The file the dynamic linker loaded libuipc from (uipc is linked with it). */
static int lib_loaded(char *out, size_t len)
{
	Dl_info info;
	void *sym = dlsym(RTLD_DEFAULT, "uipc_ns_path");

	if (!sym || !dladdr(sym, &info) || !info.dli_fname || info.dli_fname[0] != '/')
		return -1;
	if ((size_t)snprintf(out, len, "%s", info.dli_fname) >= len)
		return -1;
	return 0;
}

/* Try DIR/FILE as the library; on success its absolute path is in lib.  The
 * candidate is appended to the list of places looked at (for the message). */
static int try_candidate(const char *dir, const char *file, char lib[PATH_MAX],
			 char *looked, size_t looked_len)
{
	char cand[PATH_MAX];
	size_t used = strlen(looked);

	if ((size_t)snprintf(cand, sizeof(cand), "%s/%s", dir, file) >= sizeof(cand))
		return -1;
	if (used < looked_len)
		snprintf(looked + used, looked_len - used, "%s%s", used ? ", " : "", cand);
	return is_readable_file(cand) && realpath(cand, lib) ? 0 : -1;
}

/* Absolute path of the library to preload into lib (PATH_MAX bytes, as
 * realpath() wants), or a message and -1.  In order: $UIPC_LIB; libuipc.so
 * next to the uipc binary (the build tree); the library directory of an
 * installed uipc, relative to the binary (BINDIR/../lib by default) and then
 * as configured at build time (UIPC_LIBDIR); the library the dynamic linker
 * loaded for uipc itself. */
static int find_library(char lib[PATH_MAX])
{
	const char *env = getenv("UIPC_LIB");
	char dir[PATH_MAX], sub[PATH_MAX + sizeof(UIPC_LIBDIR_FROM_BIN) + 1];
	char looked[4 * PATH_MAX] = "", alt[PATH_MAX];

	if (env && *env) {
		if (!is_readable_file(env) || !realpath(env, lib)) {
			warnerr(errno, "library not found: UIPC_LIB=%s", env);
			return -1;
		}
		return 0;
	}
	if (exe_dir(dir, sizeof(dir)) == 0) {
		if (try_candidate(dir, "libuipc.so", lib, looked, sizeof(looked)) == 0)
			return 0;
		snprintf(sub, sizeof(sub), "%s/%s", dir, UIPC_LIBDIR_FROM_BIN);
		if (try_candidate(sub, UIPC_SONAME, lib, looked, sizeof(looked)) == 0)
			return 0;
	}
#ifdef UIPC_LIBDIR
	if (try_candidate(UIPC_LIBDIR, UIPC_SONAME, lib, looked, sizeof(looked)) == 0)
		return 0;
#endif
	if (lib_loaded(alt, sizeof(alt)) == 0 && is_readable_file(alt) &&
	    realpath(alt, lib))
		return 0;
	warnmsg("library not found: looked for %s; "
		"set UIPC_LIB to the path of libuipc.so",
		looked[0] ? looked : "libuipc.so next to the uipc binary");
	return -1;
}

/* LD_PRELOAD = lib, then what was there (without a second copy of lib). */
static int set_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	char *val, *copy, *tok, *save;
	size_t n;

	if (strpbrk(lib, " :")) {
		warnmsg("library path '%s' contains a space or ':', which LD_PRELOAD "
			"cannot hold", lib);
		return -1;
	}
	n = strlen(lib) + (old ? strlen(old) : 0) + 2;
	val = malloc(n);
	copy = strdup(old ? old : "");
	if (!val || !copy) {
		warnerr(ENOMEM, "LD_PRELOAD");
		free(val);
		free(copy);
		return -1;
	}
	strcpy(val, lib);
	for (tok = strtok_r(copy, " :", &save); tok; tok = strtok_r(NULL, " :", &save)) {
		if (!strcmp(tok, lib))
			continue;
		strcat(val, ":");
		strcat(val, tok);
	}
	free(copy);
	if (setenv("LD_PRELOAD", val, 1) != 0) {
		warnerr(errno, "cannot set LD_PRELOAD");
		free(val);
		return -1;
	}
	free(val);
	return 0;
}

/* Export UIPC_DIR (absolute) and UIPC_NS for the command. */
static int set_ns_env(const char *ns, const char *dir)
{
	char abs[PATH_MAX];

	if (dir) {
		if (realpath(dir, abs))
			dir = abs;
		if (setenv("UIPC_DIR", dir, 1) != 0) {
			warnerr(errno, "cannot set UIPC_DIR");
			return -1;
		}
	}
	if (ns && setenv("UIPC_NS", ns, 1) != 0) {
		warnerr(errno, "cannot set UIPC_NS");
		return -1;
	}
	/* the file this process was started with no longer applies */
	if ((ns || dir) && unsetenv("UIPC_NS_FILE") != 0) {
		warnerr(errno, "cannot unset UIPC_NS_FILE");
		return -1;
	}
	return 0;
}

/* In a child process (so that CMD starts with a process untouched by the
 * library), open the namespace the command will use; report why if it fails. */
static int check_namespace(const char *ns)
{
	char path[PATH_MAX], buf[256];
	int status;
	pid_t pid;

	if (uipc_ns_path(current_ns_name(), path, sizeof(path)) != 0) {
		warnerr(errno, "invalid namespace name '%s'", current_ns_name());
		return -1;
	}
	/* Choose the file now, in this process too: the library pinned one from
	 * the environment at start, before --ns/--dir, and fork() opens (and
	 * creates) the pinned namespace so that a child changing uid shares it:
	 * without this, every `uipc run --ns/--dir` created the default
	 * namespace in the default directory. */
	if (uipc_ns_select(ns ? ns : current_ns_name()) != 0) {
		warnerr(errno, "cannot select namespace '%s'", current_ns_name());
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		warnerr(errno, "fork");
		return -1;
	}
	if (pid == 0) {
		int err = 0;

		if (uipc_ns_select(ns ? ns : current_ns_name()) != 0)
			err = errno;
		if (uipc_ns_path(NULL, path, sizeof(path)) != 0)
			snprintf(path, sizeof(path), "?");
		if (!err && uipc_sysctl_get("kernel.sem", buf, sizeof(buf)) != 0 &&
		    errno != ENOSYS)
			err = errno;
		if (err)
			warnerr(err, "cannot open namespace '%s' (%s)",
				current_ns_name(), path);
		fflush(NULL);
		_exit(err ? 1 : 0);
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			warnerr(errno, "waitpid");
			return -1;
		}
	}
	if (WIFSIGNALED(status))
		warnmsg("opening namespace '%s' killed the checking process (signal %d)",
			current_ns_name(), WTERMSIG(status));
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* --aio-backend: UIPC_AIO_BACKEND for the command (aio/backend.c) */
static int set_aio_backend(const char *b)
{
	if (strcmp(b, "uring") && strcmp(b, "threads")) {
		warnmsg("--aio-backend: '%s' is not uring or threads", b);
		return -1;
	}
	if (setenv("UIPC_AIO_BACKEND", b, 1) != 0) {
		warnerr(errno, "cannot set UIPC_AIO_BACKEND");
		return -1;
	}
	return 0;
}

enum { OPT_AIO_BACKEND = OPT_FIRST_FREE };

int cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "ns", required_argument, NULL, OPT_NS },
		{ "dir", required_argument, NULL, OPT_DIR },
		{ "aio-backend", required_argument, NULL, OPT_AIO_BACKEND },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char lib[PATH_MAX];
	int c, err;

	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_NS:
			set_ns_option(optarg);
			break;
		case OPT_DIR:
			set_dir_option(optarg);
			break;
		case OPT_AIO_BACKEND:
			if (set_aio_backend(optarg) != 0)
				return EXIT_USAGE;
			break;
		case 'h':
			fputs(help_for("run"), stdout);
			return 0;
		default:
			return try_help(EXIT_USAGE);
		}
	}
	if (optind >= argc)
		return usage_error("no command given");
	if (find_library(lib) != 0)
		return 1;
	if (set_ns_env(global_ns, global_dir) != 0)
		return 1;
	if (check_namespace(global_ns) != 0)
		return 1;
	if (set_preload(lib) != 0)
		return 1;
	execvp(argv[optind], argv + optind);
	err = errno;
	if (err == ENOENT) {
		warnmsg("%s: command not found", argv[optind]);
		return 127;
	}
	warnerr(err, "cannot execute %s", argv[optind]);
	return 126;
}
