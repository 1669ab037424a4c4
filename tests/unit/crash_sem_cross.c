/*
 * crash_sem_cross.c - SIGKILL a process at every journaled store and commit
 * point of a semaphore workload, then let OTHER processes act before anyone
 * takes the dead process's lock over (and so before its section is rolled
 * back or finished).  crash_sem.c checks what the next locker finds; this
 * checks that nothing others could do meanwhile is lost by that recovery:
 * a section must not let others in (the array lock's mode ending, a SLOW
 * bit cleared) or mark undo entries spent for other locks' holders before
 * it commits.  Four workloads, each under every failpoint:
 *
 *   mode: the victim brings the array lock's mode to its end (a 2-op call,
 *         then single SEM_UNDO calls that count the hysteresis down); then a
 *         process holding nothing takes a token with SEM_UNDO (under the
 *         semaphore's own lock if the mode has ended), and a 2-op call
 *         recovers the victim.  Every token is back when all are reaped.
 *   slow: the victim makes single SEM_UNDO calls on semaphore 0; then a
 *         process takes a token without SEM_UNDO (lock-free if the SLOW bit
 *         is clear); the driver reads the values (which recovers).  Exactly
 *         that one token is missing when the victim is reaped.
 *   reap: a process holding a token (SEM_UNDO) and a shm attachment is
 *         killed; the victim reaps it (GETVAL); then SHM_INFO reaps the
 *         attacher through the process lock only, before the array lock is
 *         taken.  Every token is back; the attachment is gone.
 *   create: the victim makes an array (semget(IPC_PRIVATE)); before anyone
 *         takes the sem ids lock, in whose frame the victim may have left
 *         the creation half done, we find the array by index
 *         (SEM_STAT_ANY) and make a 2-op semop with SEM_UNDO on it (the
 *         array's lock, an undo entry of ours linked into it).  An array
 *         our semop changed must still be there, with its values, once
 *         SEM_INFO has taken the ids lock (never taken away with our
 *         semop and undo entry); no array is left over.
 *
 * Run under uipc (the .t sets LD_PRELOAD and a fresh UIPC_DIR).  Prints TAP.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crashkit.h"

#ifndef SEM_STAT_ANY
#define SEM_STAT_ANY 20
#endif
#define TOKENS 8
/* SEM_STAT_ANY looks this far for arrays (the ids of a namespace with one
 * array at a time cycle within 64, or 4096 in an extended one) */
#define SCAN 4096

enum { W_MODE, W_SLOW, W_REAP, W_CREATE, W_N };
static const char *const wname[W_N] = { "mode", "slow", "reap", "create" };

/* ---- the victims (re-executed with a failpoint armed) ---- */

static int victim_mode(int id)
{
	struct sembuf complex[2] = { { 1, 1, SEM_UNDO }, { 1, -1, SEM_UNDO } };
	struct sembuf up = { 1, 1, SEM_UNDO }, down = { 1, -1, SEM_UNDO };

	/* the array lock's mode (hysteresis 10), counted down by single
	 * calls in it, ended by one of them: net zero on semaphore 1 */
	if (semop(id, complex, 2) < 0)
		return 1;
	for (int i = 0; i < 24; i++)
		if (semop(id, i % 2 ? &down : &up, 1) < 0)
			return 2;
	return 0;
}

static int victim_slow(int id)
{
	struct sembuf take = { 0, -1, SEM_UNDO }, give = { 0, 1, SEM_UNDO };

	for (int i = 0; i < 16; i++)
		if (semop(id, i % 2 ? &give : &take, 1) < 0)
			return 1;
	return 0;
}

static int victim_reap(int id)
{
	return semctl(id, 0, GETVAL) == TOKENS ? 0 : 1;
}

static int victim_create(int unused)
{
	(void)unused;
	return semget(IPC_PRIVATE, 2, 0600) < 0 ? 1 : 0;
}

/* ---- the others ---- */

/* a forked helper: one byte on *GO runs OP once, one byte back when done */
struct helper {
	pid_t pid;
	int go, done;
};

static int helper_start(struct helper *h, int id, struct sembuf *op, int shmid)
{
	int a[2], b[2];
	char c;

	if (pipe(a) || pipe(b))
		return -1;
	h->pid = fork();
	if (h->pid == 0) {
		struct sembuf up = { 1, 1, SEM_UNDO }, down = { 1, -1, SEM_UNDO };

		/* registered, with its undo entry linked, before the victim
		 * runs: the array lock is not needed for the op itself */
		if (op->sem_flg & SEM_UNDO) {
			semop(id, &up, 1);
			semop(id, &down, 1);
		}
		if (shmid >= 0 && shmat(shmid, NULL, 0) == (void *)-1)
			_exit(3);
		if (write(b[1], "r", 1) != 1 || read(a[0], &c, 1) != 1)
			_exit(3);
		if (semop(id, op, 1) < 0)
			_exit(4);
		if (write(b[1], "t", 1) != 1)
			_exit(5);
		for (;;)
			pause();
	}
	close(a[0]);
	close(b[1]);
	h->go = a[1];
	h->done = b[0];
	return h->pid > 0 && read(h->done, &c, 1) == 1 ? 0 : -1;
}

static int helper_run(struct helper *h)
{
	char c;

	return write(h->go, "g", 1) == 1 && read(h->done, &c, 1) == 1 ? 0 : -1;
}

static void helper_end(struct helper *h)
{
	kill(h->pid, SIGKILL);
	waitpid(h->pid, NULL, 0);
	close(h->go);
	close(h->done);
}

/* the victim's run, re-executed with failpoint N armed: its wait status */
static int run_victim(const char *self, int w, int id, int n)
{
	char ws[8], ids[16];
	pid_t v = fork();
	int st = -1;

	if (v == 0) {
		ck_arm(n);
		snprintf(ws, sizeof ws, "%d", w);
		snprintf(ids, sizeof ids, "%d", id);
		execl(self, self, "victim", ws, ids, (char *)NULL);
		_exit(127);
	}
	waitpid(v, &st, 0);
	return st;
}

static void check_values(int id, int want0, const char *what, int n)
{
	char msg[200];
	int v0 = semctl(id, 0, GETVAL), v1 = semctl(id, 1, GETVAL);
	int n0 = semctl(id, 0, GETNCNT), n1 = semctl(id, 1, GETNCNT);

	snprintf(msg, sizeof msg, "%s: sem0 %d (want %d), sem1 %d (want 0), waiters %d %d", what, v0,
		 want0, v1, n0, n1);
	check(v0 == want0 && v1 == 0 && n0 == 0 && n1 == 0, msg, n);
}

/* every array left in the namespace removed; how many there were */
static int remove_all(void)
{
	struct semid_ds ds;
	int left = 0;

	for (int i = 0; i < SCAN; i++) {
		int id = semctl(i, 0, SEM_STAT_ANY, &ds);

		if (id >= 0) {
			semctl(id, 0, IPC_RMID);
			left++;
		}
	}
	return left;
}

/* the create workload at failpoint N: the victim's wait status */
static int trial_create(const char *self, int n)
{
	struct sembuf ops[2] = { { 0, 1, SEM_UNDO }, { 1, 2, 0 } };
	int st = run_victim(self, W_CREATE, 0, n), id = -1, done = 0;
	struct semid_ds ds;
	struct seminfo si;
	char msg[200];

	/* before anyone has taken the ids lock: the victim's array, if the
	 * table shows it, is changed under its own lock */
	for (int i = 0; i < SCAN && id < 0; i++)
		id = semctl(i, 0, SEM_STAT_ANY, &ds);
	if (id >= 0)
		done = semop(id, ops, 2) == 0;
	/* the ids lock, which recovers a section the victim left there */
	semctl(0, 0, SEM_INFO, &si);
	if (done) {
		int v0 = semctl(id, 0, GETVAL), v1 = semctl(id, 1, GETVAL);

		if (v0 < 0)
			snprintf(msg, sizeof msg, "create: array %d vanished under our semop (%s)", id,
				 strerror(errno));
		else
			snprintf(msg, sizeof msg, "create: array %d: sem0 %d sem1 %d after our semop",
				 id, v0, v1);
		check(v0 == 1 && v1 == 2, msg, n);
	}
	remove_all();   /* the array of a victim that got that far */
	check(remove_all() == 0, "create: an array was left behind", n);
	check_namespace(n);
	return st;
}

/* one trial of workload W at failpoint N: the victim's wait status */
static int trial(const char *self, int w, int n)
{
	struct sembuf take_undo = { 0, -1, SEM_UNDO }, take = { 0, -1, IPC_NOWAIT };
	struct sembuf both[2] = { { 1, 1, 0 }, { 1, -1, 0 } };
	int id, shmid = -1, st;
	struct helper h;
	const char *what = wname[w];

	if (w == W_CREATE)
		return trial_create(self, n);
	id = semget(IPC_PRIVATE, 2, 0600);
	if (id < 0 || semctl(id, 0, SETVAL, TOKENS) < 0) {
		check(0, "set-up: semget/SETVAL failed", n);
		return 0;
	}
	if (w == W_REAP) {
		struct shmid_ds ds;
		struct shm_info si;

		shmid = shmget(IPC_PRIVATE, 4096, 0600);
		if (shmid < 0 || helper_start(&h, id, &take_undo, shmid) || helper_run(&h)) {
			check(0, "set-up: the token holder did not start", n);
			return 0;
		}
		helper_end(&h);                       /* killed holding a token */
		st = run_victim(self, w, id, n);      /* reaps it, maybe killed */
		/* the attacher's reap through its process lock first */
		shmctl(0, SHM_INFO, (struct shmid_ds *)(void *)&si);
		semop(id, both, 2);
		check_values(id, TOKENS, what, n);
		check(shmctl(shmid, IPC_STAT, &ds) == 0 && ds.shm_nattch == 0,
		      "reap: the dead holder's attachment is gone", n);
		shmctl(shmid, IPC_RMID, NULL);
	} else {
		if (helper_start(&h, id, w == W_MODE ? &take_undo : &take, -1)) {
			check(0, "set-up: the helper did not start", n);
			return 0;
		}
		st = run_victim(self, w, id, n);
		check(helper_run(&h) == 0, "the helper's semop failed", n);
		if (w == W_MODE)
			semop(id, both, 2);           /* the array lock: recovers */
		/* W_SLOW: GETVAL takes semaphore 0's lock and recovers */
		helper_end(&h);
		/* mode: the helper's token comes back (SEM_UNDO); slow: it
		 * took its token without SEM_UNDO, which stays taken */
		check_values(id, w == W_MODE ? TOKENS : TOKENS - 1, what, n);
	}
	check_namespace(n);
	semctl(id, 0, IPC_RMID);
	return st;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "victim")) {
		int w = atoi(argv[2]), id = atoi(argv[3]);

		return w == W_MODE ? victim_mode(id) : w == W_SLOW ? victim_slow(id) :
		       w == W_REAP ? victim_reap(id) : victim_create(id);
	}
	for (int w = 0; w < W_N; w++) {
		ck_phase = 0;
		for (int n = 2; n < 100000; n++)
			if (ck_outcome(trial("/proc/self/exe", w, n), &n))
				break;
	}
	return report();
}
