/*
 * bench/driver.h - the benchmark driver's data: runs (one program invocation,
 * done on the kernel side and on the uipc side) and rows (one reported
 * figure, read from a run's output or computed from two of them).
 *
 * To add benchmarks (message queues, shared memory): write the program,
 * add it to BENCH_PROGS in bench.mk, and add runs and rows in bench/rows.c.
 */
#ifndef BENCH_DRIVER_H
#define BENCH_DRIVER_H

#define MAX_ARGS 6	/* program + arguments */
#define MAX_KV   32	/* result keys per run */
#define MAX_REPS 16

enum side { KERNEL, UIPC, NSIDES };

enum res_state { RES_NONE, RES_OK, RES_ERR, RES_NA };

struct kv {
	char key[40];
	double val[MAX_REPS];
	int n;
};

struct result {			/* one side of one run, over its repetitions */
	enum res_state state;
	char err[240];
	struct kv kv[MAX_KV];
	int nkv;
	double secs;		/* wall time of all repetitions */
	double steal, ticks;	/* /proc/stat: CPU time the hypervisor took
				   (steal) and all CPU time, in ticks, over
				   the repetitions kept */
	double last_steal_pct;	/* the same share for the last repetition */
};

/* run flags */
#define RUN_EXTENDED    1u	/* uipc: UIPC_NS_EXTENDED=1; kernel: only when
				   booted with ipcmni_extend */
#define RUN_BIG_ARENA   2u	/* uipc: UIPC_NS_SIZE=opt.big_arena when given
				   (else the library's default arena size) */

struct run {
	const char *name;		/* unique, used by rows and in JSON */
	const char *argv[MAX_ARGS];	/* argv[0]: program in the bench dir */
	unsigned flags;
	int reps;			/* repetitions, kernel and uipc alternate */
	int timeout;			/* seconds per repetition */
	int redone;			/* repetitions run again (host steal) */
	struct result res[NSIDES];
};

enum row_kind { ROW_GROUP, ROW_VALUE, ROW_QUOTIENT };
enum target { TGT_NONE, TGT_RATIO_MIN, TGT_UIPC_MAX, TGT_UIPC_MIN };

struct row {
	enum row_kind kind;
	const char *id;		/* JSON id; for ROW_GROUP unused */
	const char *label;	/* for ROW_GROUP: the group title */
	const char *unit;
	const char *run, *key;	/* the figure (numerator for ROW_QUOTIENT) */
	const char *run2, *key2;	/* ROW_QUOTIENT: denominator */
	int better;		/* -1 lower is better, +1 higher, 0 no ratio */
	int uipc_only;		/* no kernel counterpart: kernel column "-" */
	enum target target;
	double target_val;
};

/* rows.c */
extern struct run bench_runs[];
extern const struct row bench_rows[];
extern const int bench_nruns, bench_nrows;
struct run *find_run(const char *name);

/* options and facts, driver.c */
struct options {
	const char *bindir;
	const char *lib;	/* absolute path of libuipc.so */
	const char *json;
	const char *logdir;
	const char *only;	/* run only runs whose name contains this */
	const char *big_arena;	/* UIPC_NS_SIZE for RUN_BIG_ARENA runs, or NULL */
	const char *scale;	/* BENCH_SCALE for the programs */
	char cpu_model[128];	/* /proc/cpuinfo's model name, printed beside
				   every figure (figures differ by machine) */
	int have_lib;
	int kernel_ext;		/* kernel booted with ipcmni_extend */
	int kernel_only;
	int reps;		/* 0: each run's own count */
	int timeout;		/* 0: each run's own timeout */
};
extern struct options opt;

/* runner.c: performs one repetition of run r on side s into r->res[s]. */
void run_once(struct run *r, enum side s, int rep);
/* the share of the CPUs' time the hypervisor took during RES's runs, in
 * per cent (0 where the kernel counts no steal: bare metal) */
double res_steal_pct(const struct result *res);
/* runs with more host steal than this (per cent, either side) are named
 * under the table: a VM's host took part of their CPU time */
#define STEAL_WARN_PCT 3.0
/* a repetition (both sides) during which the host took more than this
 * share of the CPUs from either side is run again, both sides, up to the
 * run's repetition count more times: the host's share varies from 0 to
 * over 10% within minutes on a shared VM, and whichever side it hits
 * loses */
#define STEAL_REDO_PCT 5.0

/* report.c */
/* 0: *v set; -1: error (*err says why); -2: not applicable or not run. */
int row_value(const struct row *w, enum side s, double *v, const char **err);
void print_table(void);
int write_json(const char *path);

#endif /* BENCH_DRIVER_H */
