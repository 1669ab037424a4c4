/*
 * bench/driver.c - runs every benchmark of bench/rows.c against the kernel
 * and against uipc in the same run, then prints the table and writes JSON.
 *
 *   driver [--bindir DIR] [--lib PATH] [--json PATH] [--logs DIR]
 *          [--only SUBSTR] [--kernel-only] [--quick] [--reps N]
 *          [--big-arena BYTES] [--timeout SECONDS]
 *
 * A repetition during which the hypervisor took a share of the CPUs
 * (/proc/stat's steal) over STEAL_REDO_PCT from either side is run again,
 * both sides; the runs whose kept repetitions still had over
 * STEAL_WARN_PCT are named under the table.
 *
 * Exit status 1 if a kernel-side run failed (the benchmarks themselves are
 * broken); uipc failures are reported in the table and JSON, status 0.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include "driver.h"

struct options opt;

static void usage(void)
{
	fprintf(stderr, "usage: driver [--bindir DIR] [--lib PATH] [--json PATH] "
		"[--logs DIR] [--only SUBSTR] [--kernel-only] [--quick] [--reps N] "
		"[--big-arena BYTES] [--timeout SECONDS]\n");
	exit(2);
}

static int kernel_has_ipcmni_extend(void)
{
	char buf[4096] = "";
	FILE *f = fopen("/proc/cmdline", "r");

	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strstr(buf, "ipcmni_extend") != NULL;
}

static void read_cpu_model(char *buf, size_t len)
{
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "r");
	char *colon;

	snprintf(buf, len, "unknown CPU");
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "model name", 10) || !(colon = strchr(line, ':')))
			continue;
		colon[strcspn(colon, "\n")] = 0;
		snprintf(buf, len, "%s", colon + 1 + strspn(colon + 1, " \t"));
		break;
	}
	if (f)
		fclose(f);
}

static void parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "bindir", 1, 0, 'b' }, { "lib", 1, 0, 'l' }, { "json", 1, 0, 'j' },
		{ "logs", 1, 0, 'L' }, { "only", 1, 0, 'o' }, { "kernel-only", 0, 0, 'k' },
		{ "quick", 0, 0, 'q' }, { "reps", 1, 0, 'r' }, { "big-arena", 1, 0, 'a' },
		{ "timeout", 1, 0, 't' },
		{ 0, 0, 0, 0 }
	};
	static char bindir[PATH_MAX], lib[PATH_MAX], json[PATH_MAX], logs[PATH_MAX];
	const char *libarg = "build/libuipc.so";
	char *slash;
	int c;

	snprintf(bindir, sizeof(bindir), "%s", argv[0]);
	slash = strrchr(bindir, '/');
	strcpy(slash ? slash : bindir, slash ? "" : ".");
	opt.bindir = bindir;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'b': opt.bindir = optarg; break;
		case 'l': libarg = optarg; break;
		case 'j': opt.json = optarg; break;
		case 'L': opt.logdir = optarg; break;
		case 'o': opt.only = optarg; break;
		case 'k': opt.kernel_only = 1; break;
		case 'q': opt.scale = "0.1"; opt.reps = 1; break;
		case 'r': opt.reps = atoi(optarg); break;
		case 'a': opt.big_arena = optarg; break;
		case 't': opt.timeout = atoi(optarg); break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	if (opt.reps < 0 || opt.reps > MAX_REPS)
		opt.reps = MAX_REPS;
	/* absolute paths: LD_PRELOAD must not depend on the working directory */
	opt.have_lib = realpath(libarg, lib) != NULL && access(lib, R_OK) == 0;
	opt.lib = opt.have_lib ? lib : libarg;
	if (!opt.json) {
		snprintf(json, sizeof(json), "%s/results.json", opt.bindir);
		opt.json = json;
	}
	if (!opt.logdir) {
		snprintf(logs, sizeof(logs), "%s/logs", opt.bindir);
		opt.logdir = logs;
	}
	opt.kernel_ext = kernel_has_ipcmni_extend();
	read_cpu_model(opt.cpu_model, sizeof(opt.cpu_model));
}

static void mark_na(struct run *r, enum side s, const char *why)
{
	r->res[s].state = RES_NA;
	snprintf(r->res[s].err, sizeof(r->res[s].err), "%s", why);
}

/* where a side's results stood before a repetition */
struct rep_mark {
	int n[NSIDES][MAX_KV];
	double steal[NSIDES], ticks[NSIDES];
};

static void mark_results(const struct run *r, struct rep_mark *m)
{
	for (int s = 0; s < NSIDES; s++) {
		for (int k = 0; k < MAX_KV; k++)
			m->n[s][k] = r->res[s].kv[k].n;
		m->steal[s] = r->res[s].steal;
		m->ticks[s] = r->res[s].ticks;
	}
}

/* forget the repetition since M (its samples and its steal) */
static void drop_results(struct run *r, const struct rep_mark *m)
{
	for (int s = 0; s < NSIDES; s++) {
		for (int k = 0; k < MAX_KV; k++)
			r->res[s].kv[k].n = m->n[s][k];
		r->res[s].steal = m->steal[s];
		r->res[s].ticks = m->ticks[s];
	}
}

static bool stolen(const struct run *r)
{
	return r->res[KERNEL].last_steal_pct > STEAL_REDO_PCT ||
	       r->res[UIPC].last_steal_pct > STEAL_REDO_PCT;
}

/* repetition REP of R, both sides, the first alternating against drift;
 * again while the host took too much of the CPUs, REPS times a run at most */
static void run_pair(struct run *r, int rep, int reps)
{
	struct rep_mark m;

	for (;;) {
		mark_results(r, &m);
		run_once(r, rep & 1 ? UIPC : KERNEL, rep);
		run_once(r, rep & 1 ? KERNEL : UIPC, rep);
		if (!stolen(r) || r->redone >= reps || r->res[KERNEL].state == RES_ERR ||
		    r->res[UIPC].state == RES_ERR)
			return;
		drop_results(r, &m);
		r->redone++;
	}
}

int main(int argc, char **argv)
{
	struct utsname u;
	sigset_t chld;
	int i, rep, reps, done = 0, todo = 0, kernel_failed = 0;

	parse_args(argc, argv);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);	/* waited for with sigtimedwait */
	if (mkdir(opt.logdir, 0755) && errno != EEXIST) {
		fprintf(stderr, "driver: mkdir %s: %s\n", opt.logdir, strerror(errno));
		return 2;
	}
	uname(&u);
	printf("uipc benchmarks: %s, kernel %s, %ld CPUs; libuipc: %s%s\n",
	       opt.cpu_model, u.release, sysconf(_SC_NPROCESSORS_ONLN), opt.lib,
	       opt.have_lib ? "" : " (MISSING: no uipc figures)");
	printf("kernel side: unshare --ipc (fresh namespace per run); uipc side: "
	       "LD_PRELOAD, fresh UIPC_DIR per run%s\n",
	       opt.kernel_ext ? "" : "; kernel not booted with ipcmni_extend, "
	       "so extended-id rows are uipc-only");
	fflush(stdout);

	for (i = 0; i < bench_nruns; i++) {
		struct run *r = &bench_runs[i];

		if (opt.only && !strstr(r->name, opt.only))
			continue;
		todo++;
		if ((r->flags & RUN_EXTENDED) && !opt.kernel_ext)
			mark_na(r, KERNEL, "n/a: this kernel is not booted with "
				"ipcmni_extend (extended ids are uipc-only here)");
		if (!opt.have_lib)
			mark_na(r, UIPC, "libuipc.so not built: no uipc figures");
		else if (opt.kernel_only)
			mark_na(r, UIPC, "skipped (--kernel-only)");
	}
	for (i = 0; i < bench_nruns; i++) {
		struct run *r = &bench_runs[i];

		if (opt.only && !strstr(r->name, opt.only))
			continue;
		reps = opt.reps ? opt.reps : r->reps;
		if (opt.timeout > 0)
			r->timeout = opt.timeout;
		fprintf(stderr, "[%2d/%d] %-18s", ++done, todo, r->name);
		for (rep = 0; rep < reps; rep++)
			run_pair(r, rep, reps);
		fprintf(stderr, " kernel %-5s %6.2fs   uipc %-5s %6.2fs\n",
			r->res[KERNEL].state == RES_OK ? "ok" :
			r->res[KERNEL].state == RES_NA ? "n/a" : "ERROR",
			r->res[KERNEL].secs,
			r->res[UIPC].state == RES_OK ? "ok" :
			r->res[UIPC].state == RES_NA ? "n/a" : "ERROR",
			r->res[UIPC].secs);
		if (r->redone)
			fprintf(stderr, "        %d repetition(s) run again: the host took over %g%% "
				"of the CPUs' time\n", r->redone, STEAL_REDO_PCT);
		if (res_steal_pct(&r->res[KERNEL]) > STEAL_WARN_PCT ||
		    res_steal_pct(&r->res[UIPC]) > STEAL_WARN_PCT)
			fprintf(stderr, "        host steal: kernel %.1f%%, uipc %.1f%% of the CPUs' time\n",
				res_steal_pct(&r->res[KERNEL]), res_steal_pct(&r->res[UIPC]));
		if (r->res[KERNEL].state == RES_ERR) {
			kernel_failed = 1;
			fprintf(stderr, "        kernel: %s\n", r->res[KERNEL].err);
		}
		if (r->res[UIPC].state == RES_ERR)
			fprintf(stderr, "        uipc: %s\n", r->res[UIPC].err);
	}
	print_table();
	if (write_json(opt.json))
		fprintf(stderr, "driver: cannot write %s: %s\n", opt.json, strerror(errno));
	else
		printf("\nJSON: %s   logs: %s\n", opt.json, opt.logdir);
	return kernel_failed;
}
