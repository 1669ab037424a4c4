/*
 * bench/util.c - helpers shared by the benchmark programs: which side we run
 * on (kernel or uipc), timing, result output, per-namespace sysctls.
 */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "util.h"

enum bench_side bench_side;
static const char *bench_prog = "bench";

typedef int (*sysctl_set_fn)(const char *, const char *);
typedef int (*sysctl_get_fn)(const char *, char *, size_t);
typedef int (*ns_stats_fn)(struct uipc_ns_stats *);

static sysctl_set_fn u_sysctl_set;
static sysctl_get_fn u_sysctl_get;
static ns_stats_fn u_ns_stats;

void bench_die(int errnum, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", bench_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (errnum)
		fprintf(stderr, ": %s", strerror(errnum));
	fputc('\n', stderr);
	exit(1);
}

/* True when namespace link PATH names another IPC namespace than ours. */
static int other_ns(const char *path, const struct stat *self)
{
	struct stat st;

	if (stat(path, &st))
		return 0;
	return st.st_ino != self->st_ino || st.st_dev != self->st_dev;
}

/* True when this process's IPC namespace is not its parent's (as after
 * `unshare --ipc -- prog`) or not pid 1's: never the host's namespace. */
static int private_ipc_ns(void)
{
	struct stat self;
	char path[64];

	if (stat("/proc/self/ns/ipc", &self))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/ns/ipc", (int)getppid());
	return other_ns(path, &self) || other_ns("/proc/1/ns/ipc", &self);
}

void bench_init(const char *prog)
{
	const char *want = getenv("BENCH_SIDE");
	const char *slash = strrchr(prog, '/');

	bench_prog = slash ? slash + 1 : prog;
	setvbuf(stdout, NULL, _IOLBF, 0);
	u_ns_stats = (ns_stats_fn)dlsym(RTLD_DEFAULT, "uipc_ns_stats");
	u_sysctl_set = (sysctl_set_fn)dlsym(RTLD_DEFAULT, "uipc_sysctl_set");
	u_sysctl_get = (sysctl_get_fn)dlsym(RTLD_DEFAULT, "uipc_sysctl_get");
	bench_side = u_ns_stats ? SIDE_UIPC : SIDE_KERNEL;

	if (want && strcmp(want, bench_side == SIDE_UIPC ? "uipc" : "kernel"))
		bench_die(0, "BENCH_SIDE=%s but running on the %s side "
			  "(LD_PRELOAD not in effect?)", want,
			  bench_side == SIDE_UIPC ? "uipc" : "kernel");
	if (bench_side == SIDE_UIPC && (!u_sysctl_set || !u_sysctl_get))
		bench_die(0, "libuipc lacks uipc_sysctl_set/uipc_sysctl_get");
	/* Never create kernel objects or write sysctls in the host's namespace. */
	if (bench_side == SIDE_KERNEL && !private_ipc_ns())
		bench_die(0, "kernel side must run in a private IPC namespace "
			  "(unshare --ipc -- %s ...)", prog);
	bench_out_str("side", bench_side == SIDE_UIPC ? "uipc" : "kernel");
}

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double bench_scale(void)
{
	const char *s = getenv("BENCH_SCALE");
	double v = s ? atof(s) : 1.0;

	return v > 0 ? v : 1.0;
}

void bench_out(const char *key, double value)
{
	printf("%s %.6g\n", key, value);
}

void bench_out_str(const char *key, const char *value)
{
	printf("%s %s\n", key, value);
}

static void proc_path(const char *name, char *path, size_t len)
{
	size_t i, n = (size_t)snprintf(path, len, "/proc/sys/%s", name);

	if (n >= len)
		bench_die(0, "sysctl name too long: %s", name);
	for (i = strlen("/proc/sys/"); i < n; i++)
		if (path[i] == '.')
			path[i] = '/';
}

void bench_sysctl_set(const char *name, const char *value)
{
	char path[256];
	int fd;
	ssize_t len = (ssize_t)strlen(value);

	if (bench_side == SIDE_UIPC) {
		if (u_sysctl_set(name, value))
			bench_die(errno, "uipc_sysctl_set(%s, %s)", name, value);
		return;
	}
	proc_path(name, path, sizeof(path));
	fd = open(path, O_WRONLY);
	if (fd < 0)
		bench_die(errno, "open %s", path);
	if (write(fd, value, (size_t)len) != len)
		bench_die(errno, "write %s to %s", value, path);
	close(fd);
}

void bench_sysctl_get(const char *name, char *buf, size_t len)
{
	char path[256];
	ssize_t n;
	int fd;

	if (bench_side == SIDE_UIPC) {
		if (u_sysctl_get(name, buf, len))
			bench_die(errno, "uipc_sysctl_get(%s)", name);
		return;
	}
	proc_path(name, path, sizeof(path));
	fd = open(path, O_RDONLY);
	if (fd < 0)
		bench_die(errno, "open %s", path);
	n = read(fd, buf, len - 1);
	if (n < 0)
		bench_die(errno, "read %s", path);
	buf[n] = 0;
	close(fd);
}

int bench_ns_stats(struct uipc_ns_stats *st)
{
	if (!u_ns_stats)
		return -1;
	if (u_ns_stats(st))
		bench_die(errno, "uipc_ns_stats");
	return 0;
}

void bench_need_semmni(long n)
{
	char buf[128];
	long msl, mns, opm, mni;

	bench_sysctl_get("kernel.sem", buf, sizeof(buf));
	if (sscanf(buf, "%ld %ld %ld %ld", &msl, &mns, &opm, &mni) != 4)
		bench_die(0, "cannot parse kernel.sem \"%s\"", buf);
	if (mni >= n && mns >= n)
		return;
	snprintf(buf, sizeof(buf), "%ld %ld %ld %ld", msl,
		 mns > n ? mns : n, opm, mni > n ? mni : n);
	bench_sysctl_set("kernel.sem", buf);
}

void bench_warm_up(void)
{
	struct seminfo si;
	union bench_semun arg = { .__buf = &si };

	/* Not fatal: only moves the namespace set-up out of the timed loop. */
	if (semctl(0, 0, SEM_INFO, arg) < 0)
		bench_out("warm_up_errno", errno);
}

void bench_rmid(int id)
{
	if (semctl(id, 0, IPC_RMID) < 0)
		bench_die(errno, "semctl(%d, IPC_RMID)", id);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double bench_ns_per_op(void (*fn)(void *arg, long n), void *arg,
		       uint64_t min_ns, int reps)
{
	double v[64];
	long n = 1000;
	uint64_t t0, dt;
	int i;

	if (reps > 64)
		reps = 64;
	for (;;) {		/* calibrate (this also warms up) */
		t0 = bench_now_ns();
		fn(arg, n);
		dt = bench_now_ns() - t0;
		if (dt >= min_ns || n >= (1L << 40))
			break;
		n = dt < min_ns / 16 ? n * 16 : (long)((double)n * 1.2 * (double)min_ns / (double)dt);
	}
	for (i = 0; i < reps; i++) {
		t0 = bench_now_ns();
		fn(arg, n);
		v[i] = (double)(bench_now_ns() - t0) / (double)n;
	}
	return bench_median(v, reps);
}

/* The N-th CPU (0-based) this process may run on; fatal if there is none. */
static int nth_cpu(int n)
{
	cpu_set_t set;
	int c;

	if (sched_getaffinity(0, sizeof(set), &set))
		bench_die(errno, "sched_getaffinity");
	for (c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set) && n-- == 0)
			return c;
	bench_die(0, "placement needs more allowed CPUs");
}

int bench_placement_busy(const char *mode, int *cpu_a, int *cpu_b, int *busy)
{
	size_t n = strlen(mode);
	char base[16];

	*busy = n > 5 && !strcmp(mode + n - 5, "-busy");
	if (*busy && n - 5 < sizeof(base)) {
		snprintf(base, sizeof(base), "%.*s", (int)(n - 5), mode);
		mode = base;
	}
	return bench_placement(mode, cpu_a, cpu_b);
}

pid_t bench_busy_start(int cpu)
{
	pid_t pid = fork();

	if (pid < 0)
		bench_die(errno, "fork (busy process)");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		bench_pin(cpu);
		for (volatile unsigned long x = 0;; x++)
			;
	}
	return pid;
}

void bench_busy_stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

int bench_placement(const char *mode, int *cpu_a, int *cpu_b)
{
	*cpu_a = *cpu_b = -1;
	if (!strcmp(mode, "same"))
		*cpu_a = *cpu_b = nth_cpu(0);
	else if (!strcmp(mode, "split"))
		*cpu_a = nth_cpu(0), *cpu_b = nth_cpu(1);
	else if (strcmp(mode, "any"))
		return -1;
	return 0;
}

void bench_pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		bench_die(errno, "sched_setaffinity(%d)", cpu);
}
