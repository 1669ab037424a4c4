/*
 * crashkit.h - what the crash tests (crash_sem.c, crash_msg.c, crash_shm.c)
 * share: recording invariant checks, checking the namespace with
 * uipc_ns_check(), and printing the TAP report in order at the end.
 */
#ifndef UIPC_CRASHKIT_H
#define UIPC_CRASHKIT_H

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define CK_MAX_FAILS 64

static int ck_ntest, ck_nfail;
static struct {
	int test, failpoint;
	char what[256];
} ck_fails[CK_MAX_FAILS];

/* Record one check made after the kill at failpoint N. */
static void check(int cond, const char *what, int n)
{
	ck_ntest++;
	if (cond)
		return;
	if (ck_nfail < CK_MAX_FAILS) {
		ck_fails[ck_nfail].test = ck_ntest;
		ck_fails[ck_nfail].failpoint = n;
		snprintf(ck_fails[ck_nfail].what, sizeof(ck_fails[0].what), "%s", what);
	}
	ck_nfail++;
}

/* The namespace checks clean (allocator, id tables, key hash, every object). */
static void check_namespace(int n)
{
	int (*check_ns)(char *, size_t) =
		(int (*)(char *, size_t))dlsym(RTLD_DEFAULT, "uipc_ns_check");
	char rep[512] = "";
	int bad;

	if (!check_ns) {
		check(0, "uipc_ns_check not found: not running under uipc", n);
		return;
	}
	bad = check_ns(rep, sizeof(rep));
	check(bad == 0, rep, n);
}

/* Print the TAP report (plan, then every check in order); exit status. */
static int report(int failpoints)
{
	int i, f = 0;

	printf("1..%d\n", ck_ntest);
	for (i = 1; i <= ck_ntest; i++) {
		if (f < ck_nfail && f < CK_MAX_FAILS && ck_fails[f].test == i) {
			printf("not ok %d - failpoint %d: %s\n", i, ck_fails[f].failpoint,
			       ck_fails[f].what);
			f++;
		} else {
			printf("ok %d - invariant %d holds after SIGKILL at a journaled store\n", i, i);
		}
	}
	printf("# %d failpoints exercised (stores before and after)\n", failpoints);
	return ck_nfail ? 1 : 0;
}

#endif
