/*
 * bench/report.c - turns run results into the rows: a table for people on
 * stdout and JSON for tools.  A ratio > 1 always means uipc is faster/better:
 * kernel/uipc for lower-is-better figures, uipc/kernel for higher-is-better.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>
#include "driver.h"

static const char *side_name[NSIDES] = { "kernel", "uipc" };

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double kv_median(const struct kv *kv)
{
	double v[MAX_REPS];

	memcpy(v, kv->val, sizeof(double) * (size_t)kv->n);
	qsort(v, (size_t)kv->n, sizeof(double), cmp_double);
	return kv->n % 2 ? v[kv->n / 2] : (v[kv->n / 2 - 1] + v[kv->n / 2]) / 2;
}

static int figure(const char *run, const char *key, enum side s, double *v,
		  const char **err)
{
	struct run *r = find_run(run);
	struct result *res;
	int i;

	if (!r) {
		*err = "no such run in rows.c";
		return -1;
	}
	res = &r->res[s];
	if (res->state != RES_OK) {
		*err = res->state == RES_NONE ? "not run" : res->err;
		return res->state == RES_ERR ? -1 : -2;
	}
	for (i = 0; i < res->nkv; i++)
		if (!strcmp(res->kv[i].key, key) && res->kv[i].n > 0) {
			*v = kv_median(&res->kv[i]);
			return 0;
		}
	*err = "figure missing from the program's output";
	return -1;
}

/* 0: *v set; -1: error (*err says why); -2: not applicable or not run. */
int row_value(const struct row *w, enum side s, double *v, const char **err)
{
	double a, b;
	int rc;

	if (w->uipc_only && s == KERNEL) {
		*err = NULL;
		return -2;
	}
	if ((rc = figure(w->run, w->key, s, &a, err)))
		return rc;
	if (w->kind != ROW_QUOTIENT) {
		*v = a;
		return 0;
	}
	if ((rc = figure(w->run2, w->key2, s, &b, err)))
		return rc;
	if (b == 0) {
		*err = "division by zero";
		return -1;
	}
	*v = a / b;
	return 0;
}

/* False when --only left out a run the row needs: the row is not shown. */
static int row_selected(const struct row *w)
{
	if (!opt.only)
		return 1;
	return strstr(w->run, opt.only) && (!w->run2 || strstr(w->run2, opt.only));
}

/* Ratio (> 1: uipc better) and target check of a row; 0 if computable. */
static int row_ratio(const struct row *w, const int ok[NSIDES],
		     const double v[NSIDES], double *ratio)
{
	if (w->better == 0 || !ok[KERNEL] || !ok[UIPC] || v[KERNEL] <= 0 || v[UIPC] <= 0)
		return -1;
	*ratio = w->better < 0 ? v[KERNEL] / v[UIPC] : v[UIPC] / v[KERNEL];
	return 0;
}

/* 1: met, 0: missed, -1: unknown or no target. */
static int row_target(const struct row *w, const int ok[NSIDES],
		      const double v[NSIDES], int have_ratio, double ratio)
{
	if (w->target == TGT_RATIO_MIN)
		return have_ratio ? ratio >= w->target_val : -1;
	if (w->target == TGT_UIPC_MAX)
		return ok[UIPC] ? v[UIPC] <= w->target_val : -1;
	if (w->target == TGT_UIPC_MIN)
		return ok[UIPC] ? v[UIPC] >= w->target_val : -1;
	return -1;
}

static void fmt_num(char *buf, size_t len, double v)
{
	double a = fabs(v);

	if (a >= 1e9)
		snprintf(buf, len, "%.3g", v);
	else if (a >= 1000 || (v == floor(v) && a > 0)) {
		char tmp[32], *p = buf;
		int n, i;

		n = snprintf(tmp, sizeof(tmp), "%.0f", v);
		for (i = 0; i < n && (size_t)(p - buf) + 2 < len; i++) {
			*p++ = tmp[i];
			if (tmp[i] != '-' && (n - i - 1) % 3 == 0 && i != n - 1)
				*p++ = ',';
		}
		*p = 0;
	} else if (a >= 100)
		snprintf(buf, len, "%.0f", v);
	else if (a >= 10)
		snprintf(buf, len, "%.1f", v);
	else
		snprintf(buf, len, "%.2f", v);
}

/* Footnotes: distinct error messages, numbered. */
static const char *notes[64];
static int nnotes;

static int note(const char *msg)
{
	int i;

	for (i = 0; i < nnotes; i++)
		if (!strcmp(notes[i], msg))
			return i + 1;
	if (nnotes == 64)
		return 0;
	notes[nnotes++] = msg;
	return nnotes;
}

/* the runs during which the hypervisor took a noticeable share of the
 * CPUs (a VM's steal time): their figures say more about the host than
 * about either side */
static void print_steal(void)
{
	int i, n = 0, redone = 0;

	for (i = 0; i < bench_nruns; i++) {
		const struct run *r = &bench_runs[i];
		double k = res_steal_pct(&r->res[KERNEL]), u = res_steal_pct(&r->res[UIPC]);

		if (r->redone)
			redone += r->redone;
		if (k <= STEAL_WARN_PCT && u <= STEAL_WARN_PCT)
			continue;
		if (!n++)
			printf("\nhost steal over %g%% of the CPUs' time (/proc/stat) during these "
			       "runs' kept repetitions; their figures are suspect:\n", STEAL_WARN_PCT);
		printf("  %-22s kernel %5.1f%%   uipc %5.1f%%\n", r->name, k, u);
	}
	if (redone)
		printf("\n%d repetition(s) were run again, both sides, because the host took over "
		       "%g%% of the CPUs' time during them (/proc/stat's steal)\n", redone,
		       STEAL_REDO_PCT);
}

void print_table(void)
{
	const char *err[NSIDES];
	char cell[NSIDES][32], rcell[32], tcell[32];
	const char *group = NULL;
	double v[NSIDES], ratio = 0;
	int i, s, ok[NSIDES], hr, met, rc;
	struct utsname u;

	uname(&u);
	printf("\nmeasured on: %s, Linux %s, %ld CPUs (figures are this machine's; "
	       "compare ratios across machines)\n", opt.cpu_model, u.release,
	       sysconf(_SC_NPROCESSORS_ONLN));
	printf("ratio > 1: uipc is faster/better (kernel/uipc for times, "
	       "uipc/kernel for rates)\n");
	printf("\n  %-46s %-5s %13s %13s %7s  %s\n", "benchmark", "unit", "kernel",
	       "uipc", "ratio", "target");
	for (i = 0; i < bench_nrows; i++) {
		const struct row *w = &bench_rows[i];

		if (w->kind == ROW_GROUP) {
			group = w->label;
			continue;
		}
		if (!row_selected(w))
			continue;
		if (group)
			printf("\n%s\n", group);
		group = NULL;
		for (s = 0; s < NSIDES; s++) {
			rc = row_value(w, s, &v[s], &err[s]);
			ok[s] = rc == 0;
			if (ok[s])
				fmt_num(cell[s], sizeof(cell[s]), v[s]);
			else if (!err[s])
				strcpy(cell[s], "-");
			else
				snprintf(cell[s], sizeof(cell[s]), "%s[%d]",
					 rc == -1 ? "ERROR" : "n/a", note(err[s]));
		}
		hr = row_ratio(w, ok, v, &ratio) == 0;
		if (hr)
			snprintf(rcell, sizeof(rcell), ratio >= 100 ? "%.0f" :
				 ratio >= 0.1 ? "%.2f" : "%.3f", ratio);
		else
			strcpy(rcell, "");
		met = row_target(w, ok, v, hr, ratio);
		tcell[0] = 0;
		if (w->target != TGT_NONE)
			snprintf(tcell, sizeof(tcell), "%s%g%s %s",
				 w->target == TGT_RATIO_MIN ? "ratio>=" :
				 w->target == TGT_UIPC_MIN ? "uipc>=" : "uipc<=",
				 w->target_val, w->target == TGT_RATIO_MIN ? "x" :
				 w->unit[0] == 'x' ? "" : w->unit,
				 met < 0 ? "?" : met ? "ok" : "MISSED");
		printf("  %-46s %-5s %13s %13s %7s  %s\n", w->label, w->unit,
		       cell[KERNEL], cell[UIPC], rcell, tcell);
	}
	if (nnotes)
		printf("\n");
	for (i = 0; i < nnotes; i++)
		printf("[%d] %s\n", i + 1, notes[i]);
	print_steal();
}

static void json_str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_num(FILE *f, int ok, double v)
{
	if (ok && isfinite(v))
		fprintf(f, "%.6g", v);
	else
		fputs("null", f);
}

static void json_rows(FILE *f)
{
	const char *group = "", *err[NSIDES];
	double v[NSIDES], ratio = 0;
	int i, s, ok[NSIDES], hr, met, first = 1;

	fputs("  \"rows\": [\n", f);
	for (i = 0; i < bench_nrows; i++) {
		const struct row *w = &bench_rows[i];

		if (w->kind == ROW_GROUP) {
			group = w->label;
			continue;
		}
		if (!row_selected(w))
			continue;
		for (s = 0; s < NSIDES; s++)
			ok[s] = row_value(w, s, &v[s], &err[s]) == 0;
		hr = row_ratio(w, ok, v, &ratio) == 0;
		met = row_target(w, ok, v, hr, ratio);
		fprintf(f, "%s    {\"id\": ", first ? "" : ",\n");
		first = 0;
		json_str(f, w->id);
		fputs(", \"group\": ", f);
		json_str(f, group);
		fputs(", \"label\": ", f);
		json_str(f, w->label);
		fputs(", \"unit\": ", f);
		json_str(f, w->unit);
		fprintf(f, ", \"better\": \"%s\"", w->better < 0 ? "lower" :
			w->better > 0 ? "higher" : "none");
		if (w->uipc_only)
			fputs(", \"uipc_only\": true", f);
		for (s = 0; s < NSIDES; s++) {
			fprintf(f, ", \"%s\": ", side_name[s]);
			json_num(f, ok[s], v[s]);
			fprintf(f, ", \"%s_error\": ", side_name[s]);
			json_str(f, ok[s] ? NULL : err[s]);
		}
		fputs(", \"ratio\": ", f);
		json_num(f, hr, ratio);
		if (w->target != TGT_NONE)
			fprintf(f, ", \"target\": {\"kind\": \"%s\", \"value\": %g, \"met\": %s}",
				w->target == TGT_RATIO_MIN ? "ratio_min" :
				w->target == TGT_UIPC_MIN ? "uipc_min" : "uipc_max",
				w->target_val, met < 0 ? "null" : met ? "true" : "false");
		fputc('}', f);
	}
	fputs("\n  ],\n", f);
}

static void json_result(FILE *f, const struct result *res)
{
	static const char *state[] = { "not_run", "ok", "error", "n/a" };
	int i, j;

	fprintf(f, "{\"state\": \"%s\", \"error\": ", state[res->state]);
	json_str(f, res->state == RES_OK || res->state == RES_NONE ? NULL : res->err);
	fprintf(f, ", \"seconds\": %.3f, \"host_steal_pct\": %.2f, \"values\": {", res->secs,
		res_steal_pct(res));
	for (i = 0; i < res->nkv; i++) {
		fprintf(f, "%s\"%s\": ", i ? ", " : "", res->kv[i].key);
		json_num(f, res->kv[i].n > 0, res->kv[i].n ? kv_median(&res->kv[i]) : 0);
	}
	fputs("}, \"samples\": {", f);
	for (i = 0; i < res->nkv; i++) {
		fprintf(f, "%s\"%s\": [", i ? ", " : "", res->kv[i].key);
		for (j = 0; j < res->kv[i].n; j++) {
			fputs(j ? ", " : "", f);
			json_num(f, 1, res->kv[i].val[j]);
		}
		fputc(']', f);
	}
	fputs("}}", f);
}

int write_json(const char *path)
{
	FILE *f = fopen(path, "w");
	struct utsname u;
	char when[64];
	time_t now = time(NULL);
	int i, j, s;

	if (!f)
		return -1;
	uname(&u);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	fputs("{\n  \"meta\": {\"time\": ", f);
	json_str(f, when);
	fputs(", \"cpu_model\": ", f);
	json_str(f, opt.cpu_model);
	fputs(", \"kernel_release\": ", f);
	json_str(f, u.release);
	fprintf(f, ", \"cpus\": %ld, \"lib\": ", sysconf(_SC_NPROCESSORS_ONLN));
	json_str(f, opt.lib);
	fprintf(f, ", \"lib_present\": %s, \"kernel_ipcmni_extend\": %s, \"scale\": ",
		opt.have_lib ? "true" : "false", opt.kernel_ext ? "true" : "false");
	json_str(f, opt.scale ? opt.scale : "1");
	fputs(", \"ratio\": \"> 1 means uipc is faster/better\"},\n", f);
	json_rows(f);
	fputs("  \"runs\": {\n", f);
	for (i = 0; i < bench_nruns; i++) {
		const struct run *r = &bench_runs[i];

		fprintf(f, "    \"%s\": {\"argv\": [", r->name);
		for (j = 0; j < MAX_ARGS && r->argv[j]; j++) {
			fputs(j ? ", " : "", f);
			json_str(f, r->argv[j]);
		}
		fprintf(f, "], \"extended\": %s, \"redone_for_steal\": %d",
			r->flags & RUN_EXTENDED ? "true" : "false", r->redone);
		for (s = 0; s < NSIDES; s++) {
			fprintf(f, ", \"%s\": ", side_name[s]);
			json_result(f, &r->res[s]);
		}
		fprintf(f, "}%s\n", i + 1 < bench_nruns ? "," : "");
	}
	fputs("  }\n}\n", f);
	return fclose(f);
}
