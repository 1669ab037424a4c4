/*
 * tools/run.c - `uipc run [--ns NAME] [--dir DIR] [--aio-backend=B] [--trap]
 * [--no-kernel-ipc] [--allow-static] -- CMD [ARGS...]`: find libuipc.so
 * ($UIPC_LIB, else next to the uipc binary as in the build tree, else in the
 * library directory of an installed uipc, else wherever the loaded library
 * came from), check that CMD is a program the preload reaches (not
 * statically linked, the library's architecture), check that the namespace
 * opens, put the library first in LD_PRELOAD, set UIPC_NS / UIPC_DIR /
 * UIPC_AIO_BACKEND, install the seccomp filters asked for (trap mode, no
 * kernel IPC: entry/trap.c), and exec CMD.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
	if (strcmp(b, "uring") && strcmp(b, "threads") && strcmp(b, "kernel")) {
		warnmsg("--aio-backend: '%s' is not uring, threads or kernel", b);
		return -1;
	}
	if (setenv("UIPC_AIO_BACKEND", b, 1) != 0) {
		warnerr(errno, "cannot set UIPC_AIO_BACKEND");
		return -1;
	}
	return 0;
}

/* ---- is CMD a program the preload reaches? ---- */

#if defined(__x86_64__)
#define NATIVE_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define NATIVE_MACHINE EM_AARCH64
#endif

enum exe_kind {
	EXE_DYNAMIC,     /* has a dynamic linker: LD_PRELOAD works */
	EXE_STATIC,      /* statically linked (static-pie too) */
	EXE_FOREIGN,     /* another ELF class or machine than the library's */
	EXE_UNKNOWN,     /* not read: left to exec */
};

/* The file execvp would run for NAME, into OUT (PATH searched as execvp
 * does, /bin:/usr/bin without PATH).  -1 if none. */
static int resolve_command(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH"), *p, *end;

	if (strchr(name, '/'))
		return (size_t)snprintf(out, len, "%s", name) < len ? 0 : -1;
	if (!path)
		path = "/bin:/usr/bin";
	for (p = path;; p = end + 1) {
		struct stat st;
		size_t dl;

		end = strchr(p, ':');
		if (!end)
			end = p + strlen(p);
		dl = (size_t)(end - p);
		if ((size_t)snprintf(out, len, "%.*s%s%s", (int)dl, p, dl ? "/" : "", name) < len &&
		    access(out, X_OK) == 0 && stat(out, &st) == 0 && S_ISREG(st.st_mode))
			return 0;
		if (!*end)
			return -1;
	}
}

/* the dynamic linker run as a program (ld-linux-x86-64.so.2 ./prog): it
 * honours LD_PRELOAD for the program it loads */
static bool is_dynamic_linker(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return !strncmp(b, "ld-linux", 8) || !strncmp(b, "ld64.so", 7) || !strncmp(b, "ld.so", 5);
}

/* What PATH is: an ELF program read for PT_INTERP, or a script whose
 * interpreter is looked at in turn (up to 4 levels). */
static enum exe_kind classify(const char *path, char *detail, size_t dlen, int depth)
{
	unsigned char buf[256];
	Elf64_Ehdr eh;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return EXE_UNKNOWN;
	n = pread(fd, buf, sizeof(buf), 0);
	if (n >= 2 && buf[0] == '#' && buf[1] == '!') {
		char interp[PATH_MAX];
		size_t i = 2, j = 0;

		close(fd);
		while (i < (size_t)n && (buf[i] == ' ' || buf[i] == '\t'))
			i++;
		while (i < (size_t)n && buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\n' &&
		       j < sizeof(interp) - 1)
			interp[j++] = (char)buf[i++];
		interp[j] = '\0';
		if (!j || depth >= 4)
			return EXE_UNKNOWN;
		{
			enum exe_kind k = classify(interp, detail, dlen, depth + 1);

			if (k == EXE_STATIC || k == EXE_FOREIGN)
				snprintf(detail + strlen(detail), dlen - strlen(detail),
					 " (the interpreter of %s)", path);
			return k;
		}
	}
	if (n < (ssize_t)EI_NIDENT || memcmp(buf, ELFMAG, SELFMAG) != 0) {
		close(fd);
		return EXE_UNKNOWN;
	}
	if (buf[EI_CLASS] != ELFCLASS64) {
		close(fd);
		snprintf(detail, dlen, "%s is a 32-bit program; libuipc.so is 64-bit", path);
		return EXE_FOREIGN;
	}
	if (n < (ssize_t)sizeof(eh)) {
		close(fd);
		return EXE_UNKNOWN;
	}
	memcpy(&eh, buf, sizeof(eh));
#ifdef NATIVE_MACHINE
	if (eh.e_machine != NATIVE_MACHINE) {
		close(fd);
		snprintf(detail, dlen, "%s is a program for another machine (ELF e_machine %u)",
			 path, (unsigned)eh.e_machine);
		return EXE_FOREIGN;
	}
#endif
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
		close(fd);
		return EXE_UNKNOWN;
	}
	{
		bool interp = false, dynamic = false;

		for (unsigned i = 0; i < eh.e_phnum && eh.e_phentsize >= sizeof(Elf64_Phdr); i++) {
			Elf64_Phdr ph;

			if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) !=
			    (ssize_t)sizeof(ph)) {
				close(fd);
				return EXE_UNKNOWN;
			}
			interp |= ph.p_type == PT_INTERP;
			dynamic |= ph.p_type == PT_DYNAMIC;
		}
		close(fd);
		if (interp || (dynamic && eh.e_type == ET_DYN && is_dynamic_linker(path)))
			return EXE_DYNAMIC;
		snprintf(detail, dlen, "%s is statically linked%s", path,
			 dynamic ? " (static-pie)" : "");
		return EXE_STATIC;
	}
}

/* 0 if CMD can be run under uipc; else a message and the exit status */
static int check_program(const char *cmd, bool trap, bool nokipc, bool allow)
{
	char path[PATH_MAX], detail[2 * PATH_MAX + 64] = "";
	enum exe_kind k;

	if (resolve_command(cmd, path, sizeof(path)) != 0)
		return 0;          /* not found: exec says so */
	k = classify(path, detail, sizeof(detail), 0);
	if (k != EXE_STATIC && k != EXE_FOREIGN)
		return 0;
	if (allow) {
		warnmsg("warning: %s: %s", detail,
			trap ? "with --trap its first System V IPC call kills it (SIGSYS)" :
			nokipc ? "with --no-kernel-ipc its System V IPC calls fail (ENOSYS)" :
				 "its System V IPC calls go to the kernel");
		return 0;
	}
	warnmsg("%s: no preloaded library reaches it, so its System V IPC calls would "
		"go to the kernel's IPC, not to uipc", detail);
	if (trap)
		warnmsg("--trap cannot serve it either: libuipc's SIGSYS handler is not "
			"loaded into it, so its first trapped call would kill it");
	warnmsg("run a dynamically linked %s, or use --allow-static to run it anyway",
		k == EXE_STATIC ? "build" : "64-bit build for this machine");
	return 126;
}

/* a filter of entry/trap.c's, with its environment variable for the
 * images CMD execs; 0 or a message and -1 */
static int install_filter(int which, const char *env, const char *option)
{
	if (setenv(env, "1", 1) != 0) {
		warnerr(errno, "cannot set %s", env);
		return -1;
	}
	if (uipc_filter_install(which) != 0) {
		warnerr(errno, "%s: cannot install the seccomp filter", option);
		return -1;
	}
	return 0;
}

enum { OPT_AIO_BACKEND = OPT_FIRST_FREE, OPT_TRAP, OPT_NO_KERNEL_IPC, OPT_ALLOW_STATIC };

int cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "ns", required_argument, NULL, OPT_NS },
		{ "dir", required_argument, NULL, OPT_DIR },
		{ "aio-backend", required_argument, NULL, OPT_AIO_BACKEND },
		{ "trap", no_argument, NULL, OPT_TRAP },
		{ "no-kernel-ipc", no_argument, NULL, OPT_NO_KERNEL_IPC },
		{ "allow-static", no_argument, NULL, OPT_ALLOW_STATIC },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool trap = false, no_kernel_ipc = false, allow_static = false;
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
		case OPT_TRAP:
			trap = true;
			break;
		case OPT_NO_KERNEL_IPC:
			no_kernel_ipc = true;
			break;
		case OPT_ALLOW_STATIC:
			allow_static = true;
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
	err = check_program(argv[optind], trap, no_kernel_ipc, allow_static);
	if (err)
		return err;
	if (find_library(lib) != 0)
		return 1;
	if (set_ns_env(global_ns, global_dir) != 0)
		return 1;
	if (check_namespace(global_ns) != 0)
		return 1;
	if (set_preload(lib) != 0)
		return 1;
	/* last: from here on this process runs under the filters too */
	if (no_kernel_ipc &&
	    install_filter(UIPC_FILTER_NO_KERNEL_IPC, "UIPC_NO_KERNEL_IPC", "--no-kernel-ipc") != 0)
		return 1;
	if (trap && install_filter(UIPC_FILTER_TRAP, "UIPC_TRAP", "--trap") != 0)
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
