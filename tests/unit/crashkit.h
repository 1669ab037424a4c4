/*
 * crashkit.h - what the crash tests (crash_sem.c, crash_msg.c, crash_shm.c,
 * the *_cross.c) share: the two passes of failpoints, recording invariant
 * checks, checking the namespace with uipc_ns_check(), the cross tests'
 * victims and workloads, and printing the TAP report in order at the end.
 */
#ifndef UIPC_CRASHKIT_H
#define UIPC_CRASHKIT_H

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CK_MAX_FAILS 64

static int ck_ntest, ck_nfail;
static struct {
	int test, failpoint, phase;
	char what[256];
} ck_fails[CK_MAX_FAILS];

/*
 * Two passes over the workload, failpoint N = 2, 3, ... in each: first
 * SIGKILL at every journaled store (store N/2, just before it if N is even,
 * just after it if odd), then at every commit point (commit N-1: just past
 * a section's commit, and past the commit mark of one with deferred work).
 */
static int ck_phase, ck_points[2];
static const char *const ck_phase_name[] = { "store", "commit" };

/* In the child, before it re-executes itself: arm failpoint N of this pass. */
static void ck_arm(int n)
{
	char v[16];

	if (ck_phase == 0) {
		snprintf(v, sizeof v, "%d", n / 2);
		setenv("UIPC_FAILPOINT", v, 1);
		if (n % 2)
			setenv("UIPC_FAILPOINT_AFTER", "1", 1);
	} else {
		snprintf(v, sizeof v, "%d", n - 1);
		setenv("UIPC_FAILPOINT_COMMIT", v, 1);
	}
}

/* Record one check made after the kill at failpoint N. */
static void check(int cond, const char *what, int n)
{
	ck_ntest++;
	if (cond)
		return;
	if (ck_nfail < CK_MAX_FAILS) {
		ck_fails[ck_nfail].test = ck_ntest;
		ck_fails[ck_nfail].failpoint = n;
		ck_fails[ck_nfail].phase = ck_phase;
		snprintf(ck_fails[ck_nfail].what, sizeof(ck_fails[0].what), "%s", what);
	}
	ck_nfail++;
}

/*
 * The child's status ST at failpoint *N: killed there, or the workload ran
 * to its end, which ends the pass.  Returns 1 once both passes are over;
 * at the end of the first it restarts *N for the second (the loop's n++
 * makes it 2).
 */
static int ck_outcome(int st, int *n)
{
	char why[64];

	ck_points[ck_phase]++;
	if (!WIFEXITED(st)) {
		check(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child died oddly", *n);
		return 0;
	}
	snprintf(why, sizeof why, "workload failed without a kill (%d)", WEXITSTATUS(st));
	check(WEXITSTATUS(st) == 0, why, *n);
	if (ck_phase == 0) {
		ck_phase = 1;
		*n = 1;
		return 0;
	}
	return 1;
}

/* until PID sleeps on a futex (in semop, msgrcv), at most 5 s */
static void ck_wait_asleep(pid_t pid)
{
	char path[64], buf[128];

	for (int i = 0; i < 5000; i++) {
		FILE *f;

		snprintf(path, sizeof path, "/proc/%d/wchan", (int)pid);
		f = fopen(path, "r");
		buf[0] = 0;
		if (f) {
			if (!fgets(buf, sizeof buf, f))
				buf[0] = 0;
			fclose(f);
		}
		if (strstr(buf, "futex"))
			return;
		usleep(1000);
	}
}

/*
 * A process asleep in SLEEP(ID) (a blocking semop or msgrcv on object ID,
 * which the workload removes), started before the workload: its pid, once
 * it sleeps.  It exits 0 if the call failed with EIDRM.
 */
static inline pid_t ck_sleeper(int (*sleep)(int), int id)
{
	pid_t p = id < 0 ? -1 : fork();

	if (p == 0)
		_exit(sleep(id) == -1 && errno == EIDRM ? 0 : 1);
	if (p > 0)
		ck_wait_asleep(p);
	return p;
}

/*
 * After the workload at failpoint N, and our own removal of the object if
 * the workload did not get that far: the sleeper was told EIDRM within 5 s
 * (the removal wakes it; a remover killed between its commit and its wakeup
 * leaves it to the end of its 1 s time slice).
 */
static inline void ck_sleeper_check(pid_t sleeper, int n)
{
	int st = -1;

	for (int i = 0; sleeper > 0 && i < 2500; i++, usleep(2000))
		if (waitpid(sleeper, &st, WNOHANG) == sleeper)
			break;
	if (sleeper > 0 && st == -1) {
		kill(sleeper, SIGKILL);
		waitpid(sleeper, &st, 0);
		check(0, "the sleeper of the removed object is still asleep after 5 s", n);
		return;
	}
	check(sleeper > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the sleeper of the removed object did not get EIDRM", n);
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

/* ---- the cross tests' workloads (crash_shm_cross.c, crash_msg_cross.c) ---- */

/* The victim's run of workload NAME: PROG re-executed as "PROG victim NAME
 * ARG" with failpoint N armed.  Its wait status. */
static inline int ck_run_victim(const char *prog, const char *name, int arg, int n)
{
	char as[16];
	pid_t v = fork();
	int st = -1;

	if (v == 0) {
		ck_arm(n);
		snprintf(as, sizeof as, "%d", arg);
		execl("/proc/self/exe", prog, "victim", name, as, (char *)NULL);
		_exit(127);
	}
	waitpid(v, &st, 0);
	return st;
}

/* A check of workload NAME, named after it. */
static inline void ck_wcheck(const char *name, int cond, const char *what, int n)
{
	char why[256];

	snprintf(why, sizeof why, "%s: %s", name, what);
	check(cond, why, n);
}

/* Is workload NAME asked for (all are, when the command line names none)? */
static inline int ck_wanted(int argc, char **argv, const char *name)
{
	int want = argc == 1;

	for (int a = 1; a < argc; a++)
		want |= !strcmp(argv[a], name);
	return want;
}

/*
 * Workload NAME at every failpoint of both passes: TRIAL(CTX, N) runs one
 * (the victim's wait status, -1 when its set-up failed); then REMOVE_ALL
 * must find none of the objects (OBJS) left behind, and the namespace must
 * check clean; until the victim runs to its end unkilled.
 */
static inline void ck_each_failpoint(const char *name, int (*trial)(void *ctx, int n), void *ctx,
				     int (*remove_all)(void), const char *objs)
{
	char why[128];
	int done = 0;

	snprintf(why, sizeof why, "%s left behind", objs);
	ck_phase = 0;
	for (int n = 2; n < 100000 && !done; n++) {
		int st = trial(ctx, n);

		if (st == -1)
			break;
		ck_wcheck(name, remove_all() == 0, why, n);
		check_namespace(n);
		done = ck_outcome(st, &n);
	}
	ck_wcheck(name, done, "the victim's workload never ran to its end", 0);
}

/* Print the TAP report (plan, then every check in order); exit status. */
static int report(void)
{
	int i, f = 0;

	printf("1..%d\n", ck_ntest);
	for (i = 1; i <= ck_ntest; i++) {
		if (f < ck_nfail && f < CK_MAX_FAILS && ck_fails[f].test == i) {
			printf("not ok %d - %s failpoint %d: %s\n", i,
			       ck_phase_name[ck_fails[f].phase], ck_fails[f].failpoint,
			       ck_fails[f].what);
			f++;
		} else {
			printf("ok %d - invariant %d holds after SIGKILL at a journaled store or a "
			       "commit point\n", i, i);
		}
	}
	printf("# failpoints exercised: %d at stores (before and after), %d at commit points\n",
	       ck_points[0], ck_points[1]);
	return ck_nfail ? 1 : 0;
}

#endif
