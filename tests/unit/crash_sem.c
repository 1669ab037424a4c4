/*
 * crash_sem.c - SIGKILL at every journaled store of a semaphore workload,
 * then check that nothing half-done is visible: a multi-op semop is all or
 * nothing, SETALL is all or nothing, SEM_UNDO of the killed process is
 * applied exactly once, no lock stays held, removed keys are gone or usable,
 * the sleeper of a removed array is told EIDRM (not left asleep).
 *
 * Run under uipc (the .t sets LD_PRELOAD and a fresh UIPC_DIR).  The child
 * re-executes this program with UIPC_FAILPOINT=N so that the library kills
 * it at its Nth journaled store.  Prints TAP.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sem.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crashkit.h"

#define KEY_TMP 0x7a7a01
#define KEY_SLEPT 0x7a7a02   /* an array with a sleeper, made by the parent */

static int workload(int a, int b, int c)
{
	struct sembuf up_undo = { 0, 1, SEM_UNDO };
	struct sembuf move[2] = { { 0, -1, 0 }, { 1, 1, 0 } };
	unsigned short all[4] = { 9, 9, 9, 9 };
	int t;

	if (semop(a, &up_undo, 1) < 0)
		return 1;
	if (semop(b, move, 2) < 0)
		return 2;
	if (semctl(c, 0, SETALL, all) < 0)
		return 3;
	t = semget(KEY_TMP, 3, IPC_CREAT | 0600);
	if (t < 0)
		return 4;
	if (semctl(t, 0, IPC_RMID) < 0)
		return 5;
	if (semctl(c, 2, SETVAL, 7) < 0)
		return 6;
	t = semget(KEY_SLEPT, 0, 0);
	if (t < 0 || semctl(t, 0, IPC_RMID) < 0)
		return 7;
	return 0; /* exit: the SEM_UNDO on a is applied by the exit work */
}

/* the sleeper on KEY_SLEPT's array (ck_sleeper) */
static int sleep_on_array(int id)
{
	struct sembuf down = { 0, -1, 0 };

	return semop(id, &down, 1);
}

int main(int argc, char **argv)
{
	int a, b, c, n, done = 0;
	unsigned short v[4];

	if (argc == 5 && !strcmp(argv[1], "work"))
		return workload(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
	a = semget(IPC_PRIVATE, 1, 0600);
	b = semget(IPC_PRIVATE, 2, 0600);
	c = semget(IPC_PRIVATE, 4, 0600);
	if (a < 0 || b < 0 || c < 0) {
		printf("1..1\nnot ok 1 - setup: %s\n", strerror(errno));
		return 1;
	}
	semctl(b, 0, SETVAL, 100);
	alarm(getenv("CRASH_ALARM") ? atoi(getenv("CRASH_ALARM")) : 120);
	/* every store twice (killed just before it, and just after it), then
	 * every commit point: crashkit.h */
	for (n = 2; n < 800 && !done; n++) {
		char sa[16], sb[16], sc[16];
		unsigned short base[4] = { 1, 2, 3, 4 };
		int st, t, ok_c;
		pid_t p, sleeper;

		semctl(c, 0, SETALL, base);
		{
			unsigned short b0[2] = { 100, 0 };

			semctl(b, 0, SETALL, b0);
		}
		snprintf(sa, sizeof sa, "%d", a);
		snprintf(sb, sizeof sb, "%d", b);
		snprintf(sc, sizeof sc, "%d", c);
		sleeper = ck_sleeper(sleep_on_array, semget(KEY_SLEPT, 3, IPC_CREAT | IPC_EXCL | 0600));
		p = fork();
		if (p == 0) {
			ck_arm(n);
			if (getenv("CRASH_TRACE_AT") && atoi(getenv("CRASH_TRACE_AT")) == n)
				setenv("UIPC_FAILPOINT_TRACE", "1", 1);
			execl("/proc/self/exe", argv[0], "work", sa, sb, sc, (char *)NULL);
			_exit(127);
		}
		waitpid(p, &st, 0);
		done = ck_outcome(st, &n);
		/* a: the killed process's +1 with SEM_UNDO is undone (reaped) */
		{
			int va = semctl(a, 0, GETVAL);
			char why[96];

			snprintf(why, sizeof why, "SEM_UNDO of the dead process not applied once (%d)", va);
			check(va == 0, why, n);
		}
		/* b: the two-op move is all or nothing */
		semctl(b, 0, GETALL, v);
		check(v[0] + v[1] == 100, "multi-op semop half applied", n);
		/* c: SETALL is all or nothing (sem 2 may be 7 after SETVAL) */
		semctl(c, 0, GETALL, v);
		ok_c = (v[0] == 1 && v[1] == 2 && v[2] == 3 && v[3] == 4) ||
		       (v[0] == 9 && v[1] == 9 && (v[2] == 9 || v[2] == 7) && v[3] == 9);
		check(ok_c, "SETALL half applied", n);
		/* the temporary key: gone, or a whole usable array */
		t = semget(KEY_TMP, 0, 0);
		if (t >= 0) {
			struct semid_ds ds;

			check(semctl(t, 0, IPC_STAT, &ds) == 0 && ds.sem_nsems == 3,
			      "half-created array", n);
			if (semctl(t, 0, IPC_RMID) != 0) {
				char why[128];

				snprintf(why, sizeof why, "cannot remove the leftover array %d: %s", t,
					 strerror(errno));
				check(0, why, n);
			}
		} else {
			check(errno == ENOENT, "key lookup broken", n);
		}
		/* KEY_SLEPT: removed (by us if the workload did not get that far),
		 * its sleeper told EIDRM */
		t = semget(KEY_SLEPT, 0, 0);
		if (t >= 0)
			semctl(t, 0, IPC_RMID);
		ck_sleeper_check(sleeper, n);
		check_namespace(n);
		if (ck_nfail)
			break;
	}
	check(done, "workload never completed", n);
	semctl(a, 0, IPC_RMID);
	semctl(b, 0, IPC_RMID);
	semctl(c, 0, IPC_RMID);
	return report();
}
