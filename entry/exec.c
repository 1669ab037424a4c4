/*
 * exec.c - the exec family and posix_spawn: an exec'd image finds its
 * anonymous namespace (unshare) through UIPC_NS_FD in its environment, so
 * an environment built from scratch (execve with a fresh envp, env -i with
 * the library still preloaded or linked) gets the namespace's entries put
 * back, as a kernel namespace follows exec whatever the environment.
 *
 * No allocation: the new environment is built on the caller's stack, so a
 * vfork child can exec safely.  glibc's execv, execl, ... reach execve
 * inside libc, not through this one: each is wrapped here.
 */
#include <dlfcn.h>
#include <spawn.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "aio/aio.h"
#include "entry/entry.h"

extern char **environ;

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			const posix_spawnattr_t *, char *const[], char *const[]);

/* libc's own, looked up once at load: a vfork child must not enter the
 * dynamic linker (its locks may be held by a thread of the parent) */
static execve_fn real_execve, real_execvpe;
static fexecve_fn real_fexecve;
static spawn_fn real_spawn, real_spawnp;

__attribute__((constructor)) static void exec_init(void)
{
	real_execve = (execve_fn)dlsym(RTLD_NEXT, "execve");
	real_execvpe = (execve_fn)dlsym(RTLD_NEXT, "execvpe");
	real_fexecve = (fexecve_fn)dlsym(RTLD_NEXT, "fexecve");
	real_spawn = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawn");
	real_spawnp = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawnp");
}

static size_t env_count(char *const envp[])
{
	size_t n = 0;

	while (envp && envp[n])
		n++;
	return n;
}

static bool is_var(const char *e, const char *name)
{
	size_t l = strlen(name);

	return !strncmp(e, name, l) && e[l] == '=';
}

/*
 * ENVP with the namespace's entries (in FDV, FILEV) in place of any it
 * had: written into OUT (room for env_count(envp) + 4), or ENVP itself
 * when the process is not in an anonymous namespace.
 */
static char *const *fix_env(char *const envp[], char **out, char *fdv, size_t fdl,
			    char *filev, size_t filel, char *cntv, size_t cntl)
{
	size_t i, n = 0;

	if (!ns_exec_env(fdv, fdl, filev, filel, cntv, cntl))
		return envp;
	for (i = 0; envp && envp[i]; i++)
		if (!is_var(envp[i], "UIPC_NS_FD") && !is_var(envp[i], "UIPC_NS_FILE") &&
		    !is_var(envp[i], "UIPC_NS_CFD"))
			out[n++] = envp[i];
	out[n++] = fdv;
	out[n++] = filev;
	out[n++] = cntv;
	out[n] = NULL;
	return out;
}

/* declares FIXED, ENVP fixed, on the caller's stack */
#define FIX_ENV(fixed, envp)                                                  \
	char fdv_[32], filev_[4200], cntv_[32], *arr_[env_count(envp) + 4];   \
	char *const *fixed = fix_env((envp), arr_, fdv_, sizeof(fdv_), filev_, \
				     sizeof(filev_), cntv_, sizeof(cntv_))

/* the exec itself, with trap mode's SIGSYS wish passed on (trap.c) */
#define EXEC_CALL(call)                                  \
	do {                                             \
		int prep_ = trap_exec_prepare();         \
		int nsfd_[16], nns_, r_;                 \
		proc_exec_prepare();                     \
		nns_ = ns_exec_prepare(nsfd_, 16);       \
		aio_exec_prepare();                      \
		r_ = (call);                             \
		aio_exec_failed();                       \
		ns_exec_failed(nsfd_, nns_);             \
		trap_exec_failed(prep_);                 \
		return r_;                               \
	} while (0)

int execve(const char *path, char *const argv[], char *const envp[])
{
	FIX_ENV(env, envp);
	EXEC_CALL(real_execve(path, argv, env));
}

int execvpe(const char *file, char *const argv[], char *const envp[])
{
	FIX_ENV(env, envp);
	EXEC_CALL(real_execvpe(file, argv, env));
}

int fexecve(int fd, char *const argv[], char *const envp[])
{
	FIX_ENV(env, envp);
	EXEC_CALL(real_fexecve(fd, argv, env));
}

int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

/* the variadic ones: their arguments gathered on the stack */
#define GATHER(argv, arg0, ap)                                           \
	size_t n_ = 1;                                                   \
	va_start(ap, arg0);                                              \
	while (va_arg(ap, char *))                                       \
		n_++;                                                    \
	va_end(ap);                                                      \
	char *argv[n_ + 1];                                              \
	argv[0] = (char *)(arg0);                                        \
	va_start(ap, arg0);                                              \
	for (size_t i_ = 1; i_ <= n_; i_++)                              \
		argv[i_] = va_arg(ap, char *)

int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	GATHER(argv, arg, ap);
	va_end(ap);
	return execve(path, argv, environ);
}

int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	GATHER(argv, arg, ap);
	va_end(ap);
	return execvpe(file, argv, environ);
}

int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	GATHER(argv, arg, ap);
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	return execve(path, argv, envp);
}

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	FIX_ENV(env, envp);
	return real_spawn(pid, path, fa, attr, argv, env);
}

int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
		 const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	FIX_ENV(env, envp);
	return real_spawnp(pid, file, fa, attr, argv, env);
}
