/*
 * tests/unit/rmid_crash.c - a process SIGKILLed inside semctl(IPC_RMID) or
 * msgctl(IPC_RMID), between the commit of the ids section (table entry
 * gone, the array's block freed or the queue retired) and the commit of
 * the object's own section (sleepers told EIDRM, fast paths off), or inside
 * the ids section's commit, just past its commit point and before its
 * deferred work (the free of the array's block, the queue's new
 * incarnation): no journaled store lies at either point, so the crash
 * tests' failpoints never stop there; UIPC_TEST_KILL_BETWEEN_COMMITS (=1,
 * =in-commit) does.
 *
 * Checks: the process dies there; a sleeper of the object gets EIDRM (not
 * stuck: the object's section must be rolled forward, not back into a
 * freed block or a retired queue); the id is gone; new objects that reuse
 * the memory work; the namespace checks clean.  Prints TAP.
 *
 *   rmid_crash            (under uipc; re-executes itself as the victim)
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int n_test, n_fail;

static void ok(int cond, const char *fmt, const char *detail)
{
	n_test++;
	if (!cond)
		n_fail++;
	printf("%sok %d - %s%s\n", cond ? "" : "not ", n_test, fmt, detail ? detail : "");
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* wait for PID up to SECS: its status, or -1 (then it is killed) */
static int wait_for(pid_t pid, double secs)
{
	int st;

	for (double end = now_s() + secs; now_s() < end; usleep(2000))
		if (waitpid(pid, &st, WNOHANG) == pid)
			return st;
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

/*
 * Remove object ID (VERB: "rmid" a semaphore array, "msgrmid" a queue) in a
 * re-executed copy of SELF whose library kills it at kill point WHERE (the
 * value of UIPC_TEST_KILL_BETWEEN_COMMITS); then wait for that copy and for
 * SLEEPER: 1 if the copy died by SIGKILL (*SLEEPER_OK: the sleeper exited 0,
 * that is with EIDRM).
 */
static const char *where = "1";

static int remove_killed(const char *self, const char *verb, int id, pid_t sleeper,
			 int *sleeper_ok)
{
	char arg[32];
	pid_t victim = fork();
	int st, killed;

	if (victim == 0) {
		snprintf(arg, sizeof(arg), "%d", id);
		setenv("UIPC_TEST_KILL_BETWEEN_COMMITS", where, 1);
		execl("/proc/self/exe", self, verb, arg, (char *)NULL);
		_exit(5);
	}
	st = wait_for(victim, 10);
	killed = st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
	st = wait_for(sleeper, 5);
	*sleeper_ok = st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	return killed;
}

/* the same for a message queue with a sleeping receiver and messages of
 * another type in it */
static void msg_case(const char *self)
{
	struct { long mtype; char text[64]; } m = { 5, "left behind" };
	int q = msgget(IPC_PRIVATE, IPC_CREAT | 0600), good = 1, woke;
	struct msqid_ds ds;
	pid_t sleeper;

	for (int i = 0; q >= 0 && i < 3; i++)
		msgsnd(q, &m, 12, 0);
	sleeper = q < 0 ? -1 : fork();
	if (sleeper == 0)
		_exit(msgrcv(q, &m, sizeof(m.text), 1, 0) == -1 && errno == EIDRM ? 0 : 1);
	/* the receiver is asleep once the kernel-style hand-off would reach it */
	usleep(200000);
	ok(remove_killed(self, "msgrmid", q, sleeper, &woke),
	   "msg: the remover was killed at kill point ", where);
	ok(woke, "msg: the sleeping receiver got EIDRM (not stuck)", NULL);
	errno = 0;
	ok(msgctl(q, IPC_STAT, &ds) == -1 && errno == EINVAL, "msg: the id is gone (EINVAL)", NULL);
	/* new queues reuse the retired one: empty, and they work */
	for (int round = 0; round < 3; round++) {
		int id = msgget(IPC_PRIVATE, IPC_CREAT | 0600);

		m.mtype = 2;
		if (id < 0 || msgctl(id, IPC_STAT, &ds) || ds.msg_qnum != 0 ||
		    msgsnd(id, &m, 12, 0) || msgrcv(id, &m, sizeof(m.text), 0, IPC_NOWAIT) != 12 ||
		    m.mtype != 2 || msgrcv(id, &m, sizeof(m.text), 0, IPC_NOWAIT) != -1 ||
		    errno != ENOMSG || msgctl(id, IPC_RMID, NULL))
			good = 0;
	}
	ok(good, "msg: new queues in the retired one start empty and work", NULL);
}

/* a semaphore array with a sleeper, removed by a victim killed at WHERE */
static void sem_case(const char *self)
{
	struct sembuf down = { 0, -1, 0 };
	int semid, good = 1, woke;
	pid_t sleeper;

	semid = semget(IPC_PRIVATE, 3, IPC_CREAT | 0600);
	sleeper = semid < 0 ? -1 : fork();
	if (sleeper == 0)
		_exit(semop(semid, &down, 1) == -1 && errno == EIDRM ? 0 : 1);
	for (double end = now_s() + 5; semctl(semid, 0, GETNCNT) != 1 && now_s() < end;)
		usleep(1000);
	ok(semid >= 0 && semctl(semid, 0, GETNCNT) == 1, "an array with a sleeper", NULL);

	ok(remove_killed(self, "rmid", semid, sleeper, &woke),
	   "sem: the remover was killed at kill point ", where);
	ok(woke, "the sleeper got EIDRM (not stuck, not woken with a value)", NULL);
	errno = 0;
	ok(semctl(semid, 0, GETVAL) == -1 && errno == EINVAL, "the id is gone (EINVAL)", NULL);

	/* arrays of the same size reuse the block: they must work */
	for (int round = 0; round < 4; round++) {
		int id = semget(IPC_PRIVATE, 3, IPC_CREAT | 0600);
		struct sembuf one[2] = { { 1, 1, 0 }, { 2, 2, 0 } };
		struct sembuf up = { 0, 3, 0 }, dn = { 0, -1, IPC_NOWAIT };
		int v0, v1, v2;

		if (id < 0 || semop(id, &up, 1) || semop(id, &dn, 1) || semop(id, one, 2))
			good = 0;
		v0 = semctl(id, 0, GETVAL);
		v1 = semctl(id, 1, GETVAL);
		v2 = semctl(id, 2, GETVAL);
		if (v0 != 2 || v1 != 1 || v2 != 2 || semctl(id, 0, GETNCNT) != 0)
			good = 0;
		if (semctl(id, 0, IPC_RMID))
			good = 0;
	}
	ok(good, "new arrays in the freed block: values 2 1 2 after simple and complex semops", NULL);
}

int main(int argc, char **argv)
{
	int (*check)(char *, size_t) = (int (*)(char *, size_t))dlsym(RTLD_DEFAULT, "uipc_ns_check");
	static const char *const points[] = { "1", "in-commit" };
	char rep[2048];
	int st;

	if (argc > 2 && !strcmp(argv[1], "rmid"))
		return semctl(atoi(argv[2]), 0, IPC_RMID) == 0 ? 3 : 4; /* must not return */
	if (argc > 2 && !strcmp(argv[1], "msgrmid"))
		return msgctl(atoi(argv[2]), IPC_RMID, NULL) == 0 ? 3 : 4;
	if (!check) {
		printf("1..1\nnot ok 1 - not running under uipc (no uipc_ns_check)\n");
		return 1;
	}
	for (unsigned i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
		where = points[i];
		printf("# kill point: UIPC_TEST_KILL_BETWEEN_COMMITS=%s\n", where);
		sem_case(argv[0]);
		msg_case(argv[0]);
	}
	rep[0] = 0;
	st = check(rep, sizeof(rep));
	ok(st == 0, "the namespace checks clean", st ? rep : NULL);
	printf("1..%d\n", n_test);
	return n_fail != 0;
}
