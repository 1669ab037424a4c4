/*
 * tests/unit/presleep_crash.c - a waker SIGKILLed while it wakes a
 * semaphore's pre-sleeper (ipc/sem.c: semop_presleep, a sleep without a
 * queue entry and without a timeout, which the waker's robust-list pending
 * entry covers instead: presleep_wake_prepare).
 *
 * Each round: a sleeper S and this process hand a semaphore back and forth
 * on one CPU beside a busy process (there S's waits become pre-sleeps),
 * then S waits once more and a victim V (this program run again with
 * UIPC_TEST_KILL_IN_PRESLEEP_WAKE) posts the semaphore:
 *   before-wake  V dies after its post's CAS, before its FUTEX_WAKE: the
 *                post happened, so S must get the semaphore at once (the
 *                kernel wakes it when it handles V's robust list);
 *   before-cas   V dies after it stored to S's word, before its CAS: the
 *                post never happened, so S must go on waiting, counted by
 *                GETNCNT, and get our post instead.
 * Checks: S is never stuck, the value and GETNCNT are the kernel's after
 * each round, and V died there in at least one round of each mode (else
 * nothing was tested; the count is printed).  Prints TAP.
 *
 *   presleep_crash              (under uipc)
 *   presleep_crash post SEMID   (the victim)
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/sem.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"

#define ROUNDS 12
#define WARM   300

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int op(int id, int num, int val)
{
	struct sembuf b = { (unsigned short)num, (short)val, 0 };
	int r;

	while ((r = semop(id, &b, 1)) < 0 && errno == EINTR)
		;
	return r;
}

/* PID's state letter in /proc, 0 if it is gone */
static char state_of(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* PID's exit status within SECS, or -1 (it goes on) */
static int wait_for_exit(pid_t pid, double secs)
{
	int st;

	for (double end = now_s() + secs; now_s() < end; usleep(1000))
		if (waitpid(pid, &st, WNOHANG) == pid)
			return st;
	return -1;
}

/* the same, and killed if it did not end */
static int wait_for(pid_t pid, double secs)
{
	int st = wait_for_exit(pid, secs);

	if (st == -1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return st;
}

static pid_t start_burner(void)
{
	pid_t parent = getpid(), p = fork();

	if (p == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		for (volatile unsigned long x = 0;; x++)
			;
	}
	return p;
}

static pid_t start_sleeper(int id)
{
	pid_t p = fork();

	if (p == 0) {
		int bad = 0;

		for (int i = 0; i < WARM; i++)
			bad += op(id, 0, -1) < 0 || op(id, 1, 1) < 0;
		_exit(bad || op(id, 0, -1) < 0 ? 1 : 0);
	}
	return p;
}

/* the victim's post, with the kill point MODE: true if it died by SIGKILL */
static bool victim_post(const char *self, int id, const char *mode)
{
	char ids[16];
	pid_t p;
	int st;

	snprintf(ids, sizeof(ids), "%d", id);
	p = fork();
	if (p == 0) {
		setenv("UIPC_TEST_KILL_IN_PRESLEEP_WAKE", mode, 1);
		execl(self, self, "post", ids, (char *)NULL);
		_exit(127);
	}
	st = wait_for(p, 10);
	return st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
}

/* until GETNCNT of semaphore 0 is N, for up to SECS */
static bool ncnt_becomes(int id, int n, double secs)
{
	for (double end = now_s() + secs; now_s() < end; usleep(1000))
		if (semctl(id, 0, GETNCNT) == n)
			return true;
	return semctl(id, 0, GETNCNT) == n;
}

struct tally {
	int died;          /* the victim died at the kill point */
	int posted;        /* ... and its post happened: S got it alone */
	int good;          /* rounds whose every check held */
};

/*
 * One round of MODE.  A semop killed midway is one that happened or one
 * that did not, as the kernel's is either done or not begun: S either
 * gets the semaphore without us (the victim's post happened), or goes on
 * waiting, counted by GETNCNT, until our post.  Never stuck, never the
 * value twice.
 */
static void one_round(const char *self, const char *mode, struct tally *t)
{
	int id = semget(IPC_PRIVATE, 2, 0600), bad = 0, st;
	bool died, posted;
	pid_t s;

	if (id < 0)
		return;
	s = start_sleeper(id);
	for (int i = 0; i < WARM; i++)
		bad += op(id, 0, 1) < 0 || op(id, 1, -1) < 0;
	for (double end = now_s() + 5; state_of(s) != 'S' && now_s() < end;)
		usleep(500);
	died = victim_post(self, id, mode);
	st = wait_for_exit(s, 2);
	posted = st != -1;
	if (!posted) {
		/* the post did not happen: S waits, and is counted */
		bad += !ncnt_becomes(id, 1, 2) || semctl(id, 0, GETVAL) != 0;
		bad += op(id, 0, 1) < 0;
		st = wait_for(s, 3);
	}
	bad += st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	bad += semctl(id, 0, GETVAL) != 0 || semctl(id, 0, GETNCNT) != 0;
	semctl(id, 0, IPC_RMID);
	t->died += died;
	t->posted += died && posted;
	t->good += !bad;
}

int main(int argc, char **argv)
{
	static const char *const modes[] = { "before-wake", "before-cas" };
	char self[4096];
	cpu_set_t one;
	pid_t burner;
	ssize_t n;

	if (argc > 2 && !strcmp(argv[1], "post")) {
		/* a first call of its own (a zero-wait on semaphore 1, 0 now):
		 * the post is then the common lock-free one */
		struct sembuf z = { 1, 0, IPC_NOWAIT };

		if (semop(atoi(argv[2]), &z, 1) < 0)
			return 2;
		return op(atoi(argv[2]), 0, 1) == 0 ? 0 : 1;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = 0;
	setvbuf(stdout, NULL, _IONBF, 0);
	printf("1..4\n");
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	sched_setaffinity(0, sizeof(one), &one);   /* the children inherit it */
	burner = start_burner();
	for (unsigned m = 0; m < 2; m++) {
		struct tally t = { 0, 0, 0 };
		bool before_wake = m == 0;
		char what[200];

		for (int r = 0; r < ROUNDS; r++)
			one_round(self, modes[m], &t);
		snprintf(what, sizeof(what), "%s: %d of %d rounds right (never stuck, counted while waiting)",
			 modes[m], t.good, ROUNDS);
		ok(t.good == ROUNDS, what);
		/* before the CAS the post never happened; after it, it did in
		 * the lock-free path (the locked path's kill points are in its
		 * SLOW bit, a section that is rolled back) */
		snprintf(what, sizeof(what),
			 "%s: the victim died at the kill point in %d of %d rounds, its post done in %d",
			 modes[m], t.died, ROUNDS, t.posted);
		ok(t.died > 0 && (before_wake ? t.posted > 0 : t.posted == 0), what);
	}
	kill(burner, SIGKILL);
	waitpid(burner, NULL, 0);
	return tap_failed != 0;
}
