/*
 * bench/runner.c - runs one benchmark program on one side and collects its
 * "key value" output.
 *
 * kernel: unshare --ipc -- PROG ARGS   (a fresh kernel IPC namespace)
 * uipc:   UIPC_DIR=<fresh dir in /dev/shm> UIPC_NS=bench LD_PRELOAD=libuipc.so
 *         PROG ARGS                    (the dir is removed afterwards)
 * The program runs in its own process group with a timeout; on timeout the
 * group (only processes this run started) is killed.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include "driver.h"

static const char *side_name[NSIDES] = { "kernel", "uipc" };

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path);
}

static void rm_rf(const char *dir)
{
	if (nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) && errno != ENOENT)
		fprintf(stderr, "bench: cannot remove %s: %s\n", dir, strerror(errno));
}

static void __attribute__((format(printf, 2, 3)))
set_err(struct result *res, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(res->err, sizeof(res->err), fmt, ap);
	va_end(ap);
	res->state = RES_ERR;
}

static void copy_str(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);

	if (n >= len)
		n = len - 1;
	memcpy(dst, src, n);
	dst[n] = 0;
}

/* Last non-empty line of a file (the program's error message). */
static void last_line(const char *path, char *buf, size_t len)
{
	char line[512];
	FILE *f = fopen(path, "r");

	buf[0] = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (line[0] != '\n') {
			line[strcspn(line, "\n")] = 0;
			copy_str(buf, len, line);
		}
	fclose(f);
}

static void parse_output(struct result *res, const char *path, enum side s)
{
	char line[256], key[64], sval[64];
	FILE *f = fopen(path, "r");
	struct kv *kv;
	char *end;
	double v;
	int i;

	if (!f) {
		set_err(res, "cannot read output %s", path);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s %63s", key, sval) != 2)
			continue;
		if (!strcmp(key, "side")) {
			if (strcmp(sval, side_name[s]))
				set_err(res, "program ran on the %s side", sval);
			continue;
		}
		v = strtod(sval, &end);
		if (*end)
			continue;
		for (i = 0; i < res->nkv && strcmp(res->kv[i].key, key); i++)
			;
		if (i == res->nkv) {
			if (res->nkv == MAX_KV)
				continue;
			res->nkv++;
			copy_str(res->kv[i].key, sizeof(res->kv[i].key), key);
		}
		kv = &res->kv[i];
		if (kv->n < MAX_REPS)
			kv->val[kv->n++] = v;
	}
	fclose(f);
}

/* Child side of the fork: set up the environment and exec. */
static void exec_child(struct run *r, enum side s, const char *dir,
		       const char *out, const char *err)
{
	char prog[4096];
	const char *argv[MAX_ARGS + 4];
	int i, n = 0, fd;
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setpgid(0, 0);
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || dup2(fd, 1) < 0)
		_exit(126);
	close(fd);
	fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || dup2(fd, 2) < 0)
		_exit(126);
	close(fd);
	snprintf(prog, sizeof(prog), "%s/%s", opt.bindir, r->argv[0]);
	setenv("BENCH_SIDE", side_name[s], 1);
	if (opt.scale)
		setenv("BENCH_SCALE", opt.scale, 1);
	unsetenv("LD_PRELOAD");
	unsetenv("UIPC_NS_EXTENDED");
	unsetenv("UIPC_NS_SIZE");
	if (s == KERNEL) {
		argv[n++] = "unshare";
		argv[n++] = "--ipc";
		argv[n++] = "--";
	} else {
		setenv("UIPC_DIR", dir, 1);
		setenv("UIPC_NS", "bench", 1);
		setenv("LD_PRELOAD", opt.lib, 1);
		if (r->flags & RUN_EXTENDED)
			setenv("UIPC_NS_EXTENDED", "1", 1);
		if ((r->flags & RUN_BIG_ARENA) && opt.big_arena)
			setenv("UIPC_NS_SIZE", opt.big_arena, 1);
	}
	argv[n++] = prog;
	for (i = 1; i < MAX_ARGS && r->argv[i]; i++)
		argv[n++] = r->argv[i];
	argv[n] = NULL;
	execvp(argv[0], (char **)argv);
	fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* Waits for pid up to timeout seconds; returns its status, or -1 on timeout
 * (the process group has then been killed and reaped). */
static int wait_child(pid_t pid, int timeout)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 200000000 };
	sigset_t chld;
	siginfo_t si;
	int status, waited = 0;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	for (;;) {
		memset(&si, 0, sizeof(si));
		/* WNOWAIT: the leader stays a zombie, so its pgid cannot be reused
		 * while stray members of its group are killed below. */
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == pid)
			break;
		if (waited >= timeout * 5) {
			kill(-pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		sigtimedwait(&chld, NULL, &ts);
		waited++;
	}
	kill(-pid, SIGKILL);	/* stragglers of this run only, if any */
	if (waitpid(pid, &status, 0) != pid)
		return 0x7f00;
	return status;
}

/* /proc/stat's first line: the steal ticks and the sum of all ticks */
static void cpu_ticks(double *steal, double *total)
{
	unsigned long long v[10] = { 0 };
	FILE *f = fopen("/proc/stat", "r");
	int n = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8],
			   &v[9]) : 0;

	if (f)
		fclose(f);
	*steal = n >= 8 ? (double)v[7] : 0;
	*total = 0;
	/* user nice system idle iowait irq softirq steal (guest time is
	 * inside user already) */
	for (int i = 0; i < 8 && i < n; i++)
		*total += (double)v[i];
}

double res_steal_pct(const struct result *res)
{
	return res->ticks > 0 ? 100.0 * res->steal / res->ticks : 0;
}

void run_once(struct run *r, enum side s, int rep)
{
	struct result *res = &r->res[s];
	char dir[64] = "", out[4096], err[4096], msg[200];
	struct timespec t0, t1;
	double steal0, ticks0, steal1, ticks1;
	int status;
	pid_t pid;

	(void)rep;
	if (res->state == RES_ERR || res->state == RES_NA)
		return;		/* failed before: do not repeat */
	snprintf(out, sizeof(out), "%s/%s.%s.out", opt.logdir, r->name, side_name[s]);
	snprintf(err, sizeof(err), "%s/%s.%s.err", opt.logdir, r->name, side_name[s]);
	if (s == UIPC) {
		strcpy(dir, "/dev/shm/uipc-bench.XXXXXX");
		if (!mkdtemp(dir)) {
			set_err(res, "mkdtemp: %s", strerror(errno));
			return;
		}
	}
	cpu_ticks(&steal0, &ticks0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		exec_child(r, s, dir, out, err);
	if (pid < 0) {
		set_err(res, "fork: %s", strerror(errno));
	} else {
		setpgid(pid, pid);
		status = wait_child(pid, r->timeout);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		cpu_ticks(&steal1, &ticks1);
		res->steal += steal1 - steal0;
		res->ticks += ticks1 - ticks0;
		res->last_steal_pct = ticks1 > ticks0 ? 100.0 * (steal1 - steal0) / (ticks1 - ticks0) : 0;
		res->secs += (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		last_line(err, msg, sizeof(msg));
		if (status == -1)
			set_err(res, "timeout after %d s (killed)%s%s", r->timeout,
				msg[0] ? ": " : "", msg);
		else if (WIFSIGNALED(status))
			set_err(res, "killed by signal %d (%s)%s%s", WTERMSIG(status),
				strsignal(WTERMSIG(status)), msg[0] ? ": " : "", msg);
		else if (WEXITSTATUS(status))
			set_err(res, "%s (exit %d)", msg[0] ? msg : "failed",
				WEXITSTATUS(status));
		else {
			parse_output(res, out, s);
			if (res->state != RES_ERR)
				res->state = RES_OK;
		}
	}
	if (dir[0])
		rm_rf(dir);
}
