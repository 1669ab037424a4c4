/*
 * sem_signal.c - signals and a blocked semop()/semtimedop(): EINTR when a
 * handler runs, with and without SA_RESTART (semop is never restarted);
 * an ignored signal (SIG_IGN, or default-ignore like SIGWINCH) and a
 * blocked signal do not interrupt; SIGSTOP/SIGCONT while blocked
 * return EINTR too on Linux (not restarted), and the waiter leaves the
 * queue while stopped; a timer signal in the sleeper itself; the queue and
 * the value after an interrupted wait; semop called from a signal handler
 * that interrupts semop/semctl of the same process (beyond POSIX, which
 * does not list semop as async-signal-safe, but a system call on Linux);
 * a handler that runs early in a blocking semop (uipc may still spin there
 * before it sleeps) interrupts it too; a handler that posts what its
 * sleeper waits for, or leaves the sleeping call by longjmp.
 */
#include "dt.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <sys/wait.h>

static volatile sig_atomic_t handled;

static void handler(int sig)
{
	(void)sig;
	handled++;
}

enum how { H_RESTART, H_NORESTART, H_IGN, H_DEFAULT, H_MASKED, H_ALARM };

struct sleeper {
	int id;
	struct sembuf op;
	int sig;
	enum how how;
	long timeout_ms;
};

static void sleeper(void *p)
{
	struct sleeper *s = p;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, s->sig);
	switch (s->how) {
	case H_RESTART:
	case H_NORESTART:
	case H_MASKED:
	case H_ALARM:
		sa.sa_handler = handler;
		sa.sa_flags = s->how == H_RESTART ? SA_RESTART : 0;
		sigaction(s->sig, &sa, NULL);
		break;
	case H_IGN:
		sa.sa_handler = SIG_IGN;
		sigaction(s->sig, &sa, NULL);
		break;
	case H_DEFAULT:
		sa.sa_handler = SIG_DFL;
		sigaction(s->sig, &sa, NULL);
		break;
	}
	if (s->how == H_MASKED)
		sigprocmask(SIG_BLOCK, &set, NULL);
	if (s->how == H_ALARM) {
		struct itimerval it = { { 0, 0 }, { 0, 100000 } };
		setitimer(ITIMER_REAL, &it, NULL);
	}
	int r;
	if (s->timeout_ms) {
		struct timespec ts = { s->timeout_ms / 1000, (s->timeout_ms % 1000) * 1000000L };
		r = semtimedop(s->id, &s->op, 1, &ts);
	} else {
		r = semop(s->id, &s->op, 1);
	}
	int e = errno;
	int before = handled;
	if (s->how == H_MASKED)
		sigprocmask(SIG_UNBLOCK, &set, NULL);  /* the handler runs now */
	dt_chan_send(r, r < 0 ? e : 0, before * 10 + handled);
}

static struct sleeper S;

static pid_t start(int id, short o, int sig, enum how how, long tmo)
{
	memset(&S, 0, sizeof S);
	S.id = id;
	S.op.sem_num = 0;
	S.op.sem_op = o;
	S.sig = sig;
	S.how = how;
	S.timeout_ms = tmo;
	pid_t p = dt_fork(sleeper, &S);
	dt_out("%s: %s(%d,[0:%+d:0]) blocks (signal %s, how %d)", dt_pid(p),
	       tmo ? "semtimedop" : "semop", id, o, sigabbrev_np(sig), (int)how);
	dt_wait_cnt(id, 0, o == 0 ? GETZCNT : GETNCNT, 1);
	return p;
}

/* the "extra" of a report is handler runs before*10 + after */
static void interrupted(int how, short o, long tmo)
{
	int a = dt_semget(IPC_PRIVATE, 1, 0600);
	if (o == 0)
		dt_setval(a, 0, 1);
	pid_t p = start(a, o, SIGUSR1, how, tmo);
	kill(p, SIGUSR1);
	dt_wakes(1);
	dt_get(a, 0, GETNCNT);
	dt_get(a, 0, GETZCNT);
	dt_get(a, 0, GETVAL);
	dt_get(a, 0, GETPID);
	dt_wait(p);
	dt_stat(a, IPC_STAT);
	dt_rmid(a);
}

static void eintr_restart(int argc, char **argv)
{
	(void)argc; (void)argv;
	interrupted(H_RESTART, -1, 0);
}

static void eintr_norestart(int argc, char **argv)
{
	(void)argc; (void)argv;
	interrupted(H_NORESTART, -1, 0);
}

static void eintr_timed(int argc, char **argv)
{
	(void)argc; (void)argv;
	interrupted(H_RESTART, -1, 20000);
	interrupted(H_NORESTART, -1, 20000);
}

static void eintr_zero(int argc, char **argv)
{
	(void)argc; (void)argv;
	interrupted(H_RESTART, 0, 0);
	interrupted(H_NORESTART, 0, 20000);
}

/* a signal that is not delivered to a handler does not interrupt */
static void not_interrupted(int how, int sig)
{
	int a = dt_semget(IPC_PRIVATE, 1, 0600);
	pid_t p = start(a, -1, sig, how, 0);
	kill(p, sig);
	dt_msleep(50);
	dt_get(a, 0, GETNCNT);
	dt_chan_none();
	struct sembuf up = { 0, 1, 0 };
	dt_semop(a, &up, 1);
	dt_wakes(1);
	dt_get(a, 0, GETVAL);
	dt_get(a, 0, GETPID);
	dt_wait(p);
	dt_rmid(a);
}

static void ignored(int argc, char **argv)
{
	(void)argc; (void)argv;
	not_interrupted(H_IGN, SIGUSR1);
	not_interrupted(H_DEFAULT, SIGWINCH);
	not_interrupted(H_DEFAULT, SIGCHLD);
}

static void masked(int argc, char **argv)
{
	(void)argc; (void)argv;
	not_interrupted(H_MASKED, SIGUSR2);
}

static void self_alarm(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 1, 0600);
	memset(&S, 0, sizeof S);
	S.id = a;
	S.op.sem_op = -1;
	S.sig = SIGALRM;
	S.how = H_ALARM;
	pid_t p = dt_fork(sleeper, &S);
	dt_out("%s: semop(%d,[0:-1:0]) with a 100ms SIGALRM timer", dt_pid(p), a);
	dt_wakes(1);
	dt_get(a, 0, GETNCNT);
	dt_wait(p);
	dt_rmid(a);
}

static int wait_state(pid_t p, int opts, const char *what)
{
	int st;
	pid_t r = waitpid(p, &st, opts);
	if (r != p) {
		dt_fail("waitpid for %s: %s", what, dt_errname(errno));
		return -1;
	}
	dt_out("%s %s", dt_pid(p), what);
	return 0;
}

/* Polls until a report is waiting or GETNCNT(id,0) == want (5 s). */
static void report_or_requeue(int id, int want)
{
	long long deadline = dt_now_ms() + dt_deadline_ms(5000);
	for (;;) {
		if (dt_chan_ready()) {
			dt_wakes(1);
			break;
		}
		if (semctl(id, 0, GETNCNT) == want) {
			dt_out("re-queued, no report");
			break;
		}
		if (dt_now_ms() > deadline) {
			dt_fail("neither a report nor GETNCNT %d in time", want);
			break;
		}
		dt_msleep(1);
	}
}

/* SIGSTOP + SIGCONT while blocked (no handler runs): Linux returns EINTR
 * from semop here too (it does not restart it) */
static void stop_cont(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 1, 0600);
	pid_t p1 = start(a, -1, SIGUSR1, H_NORESTART, 0);
	memset(&S, 0, sizeof S);
	S.id = a;
	S.op.sem_op = -1;
	S.sig = SIGUSR1;
	S.how = H_NORESTART;
	pid_t p2 = dt_fork(sleeper, &S);
	dt_out("%s: semop(%d,[0:-1:0]) blocks", dt_pid(p2), a);
	dt_wait_cnt(a, 0, GETNCNT, 2);
	kill(p1, SIGSTOP);
	wait_state(p1, WUNTRACED, "stopped");
	dt_get(a, 0, GETNCNT);
	/* no waitpid(WCONTINUED): the child may run on and exit at once */
	kill(p1, SIGCONT);
	report_or_requeue(a, 2);
	struct sembuf up = { 0, 1, 0 };
	dt_semop(a, &up, 1);
	dt_wakes(1);
	if (semctl(a, 0, GETNCNT) > 0) {
		dt_semop(a, &up, 1);
		dt_wakes(1);
	}
	dt_get(a, 0, GETVAL);
	dt_wait(p1);
	dt_wait(p2);
	dt_rmid(a);
}

/* the same with a timed wait */
static void stop_cont_timed(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 1, 0600);
	pid_t p1 = start(a, -1, SIGUSR1, H_NORESTART, 20000);
	kill(p1, SIGSTOP);
	wait_state(p1, WUNTRACED, "stopped");
	dt_get(a, 0, GETNCNT);
	kill(p1, SIGCONT);
	report_or_requeue(a, 1);
	struct sembuf up = { 0, 1, 0 };
	dt_semop(a, &up, 1);
	if (semctl(a, 0, GETVAL) == 0)
		dt_wakes(1);
	dt_get(a, 0, GETVAL);
	dt_wait(p1);
	dt_rmid(a);
}

/* semop from a signal handler that interrupts semop/semctl calls of the
 * same process (the system calls are async-signal-safe): nothing is lost
 * and nothing deadlocks */
static int hs_id;
static volatile sig_atomic_t hs_count;
static volatile sig_atomic_t hs_fail;

static void hs_handler(int sig)
{
	(void)sig;
	int saved = errno;
	struct sembuf s = { 1, 1, IPC_NOWAIT };
	if (semop(hs_id, &s, 1) == 0)
		hs_count++;
	else
		hs_fail++;
	errno = saved;
}

/* SIGALRM runs hs_handler every USEC microseconds (0: the timer stops) */
static void hs_timer(long usec)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = hs_handler;
	sa.sa_flags = SA_RESTART;
	if (usec)
		sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, usec }, { 0, usec } };
	setitimer(ITIMER_REAL, &it, NULL);
}

static void handler_child(void *p)
{
	(void)p;
	hs_timer(200);
	long long end = dt_now_ms() + 300;
	long loops = 0, bad = 0;
	while (dt_now_ms() < end) {
		struct sembuf up[2] = { { 0, 1, 0 }, { 2, 1, SEM_UNDO } };
		struct sembuf down[2] = { { 0, -1, IPC_NOWAIT }, { 2, -1, SEM_UNDO | IPC_NOWAIT } };
		if (semop(hs_id, up, 2) < 0 && errno != EINTR)
			bad++;
		if (semop(hs_id, down, 2) < 0 && errno != EINTR)
			bad++;
		if (semctl(hs_id, 1, GETVAL) < 0)
			bad++;
		loops++;
	}
	hs_timer(0);
	int v1 = semctl(hs_id, 1, GETVAL);
	dt_out("loops > 100: %s, handler ran > 10 times: %s, bad calls: %ld, "
	       "handler failures: %d", loops > 100 ? "yes" : "no",
	       hs_count > 10 ? "yes" : "no", bad, (int)hs_fail);
	dt_out("sem 1 == handler count: %s", v1 == hs_count ? "yes" : "no");
	exit(0);
}

static void handler_semop(int argc, char **argv)
{
	(void)argc; (void)argv;
	hs_id = dt_semget(IPC_PRIVATE, 3, 0600);
	pid_t p = dt_fork(handler_child, NULL);
	dt_wait(p);
	dt_get(hs_id, 0, GETVAL);
	dt_get(hs_id, 2, GETVAL);
	dt_rmid(hs_id);
}

/* handler-first-call: a handler that makes a semop of its own interrupts
 * a new process's first call (uipc registers the process then, under
 * locks of its own).  Each of 100 fork children sets a 20 us interval
 * timer and makes its first calls under it; none may hang, and no call
 * may fail.  (A handler that interrupted the registration and waited for
 * it hung the child for ever.) */
#define HF_CHILDREN 100

static void hf_child(void)
{
	hs_timer(20);
	struct sembuf up = { 0, 1, SEM_UNDO }, down = { 0, -1, SEM_UNDO };
	int bad = semop(hs_id, &up, 1) < 0 || semop(hs_id, &down, 1) < 0 ||
		  semctl(hs_id, 1, GETVAL) < 0;
	hs_timer(0);
	_exit(bad || hs_fail ? 1 : 0);
}

static void handler_first_call(int argc, char **argv)
{
	(void)argc; (void)argv;
	int finished = 0, stuck = 0, failed = 0;
	hs_id = dt_semget(IPC_PRIVATE, 2, 0600);
	for (int i = 0; i < HF_CHILDREN; i++) {
		pid_t p = fork();
		if (p == 0)
			hf_child();
		if (p < 0) {
			failed++;
			continue;
		}
		long long deadline = dt_now_ms() + dt_deadline_ms(10000);
		int st;
		pid_t r;
		while ((r = waitpid(p, &st, WNOHANG)) == 0 && dt_now_ms() < deadline)
			dt_msleep(1);
		if (r == 0) {
			/* one is enough to know: the others would cost 10 s each */
			stuck++;
			kill(p, SIGKILL);
			waitpid(p, &st, 0);
			break;
		}
		finished++;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed++;
	}
	dt_out("children finished: %d of %d, stuck: %d, with a failed call: %d", finished,
	       HF_CHILDREN, stuck, failed);
	dt_get(hs_id, 0, GETVAL);
	dt_rmid(hs_id);
}

/*
 * eintr-early: each try is a new thread (uipc's spin budget is per thread),
 * pinned to the last CPU, whose own timer fires 10-40 us after it starts a
 * blocking semop (the delay cycles through the tries), then every 100 ms.
 * A try whose first expiry came before the thread marked itself in the
 * call does not count.  A counted call still waiting 90 ms after its
 * first handler ran (late) slept through that handler, and where that handler ran says why:
 * timer_settime itself takes 6-10 us on a VM, so the expiry often lands
 * just as the call is made.  On the
 * kernel a late call's handler ran before the system call (in the
 * program, the dynamic linker or libc's wrapper: the kernel never sleeps
 * through a handler).  Under uipc it ran before the call began if it ran
 * in the program, the dynamic linker or uipc's entry point before its
 * first load (semop, uipc_semop); anywhere else uipc missed it.  The
 * transcript says whether any call missed one; stderr lists every late
 * call with where its handler ran.
 */
static __thread volatile sig_atomic_t se_in_call, se_early;
static __thread long long se_hand_us;     /* when the first handler ran */
static __thread const void *se_hand_ip;   /* and what it interrupted */

static void se_alarm(int sig, siginfo_t *si, void *ctx)
{
	(void)sig; (void)si;
	if (!se_in_call)
		se_early = 1;
	if (!se_hand_us) {
		se_hand_us = dt_now_us();
		se_hand_ip = dt_interrupted_ip(ctx);
	}
}

struct se_try {
	int id, delay_us, valid, eintr, late;
	long long hand_us, dur_us;  /* (stderr diagnostics of a late try) */
	const void *hand_ip;
};

static void *se_thread(void *p)
{
	struct se_try *t = p;
	struct sembuf down = { 0, -1, 0 };
	struct itimerspec it = { { 0, 100000000 }, { 0, t->delay_us * 1000L } };
	struct sigevent sev;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	long long t0;
	timer_t tm;
	int r, e;

	if (ncpu > 1) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET((int)ncpu - 1, &set);
		pthread_setaffinity_np(pthread_self(), sizeof set, &set);
	}
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGALRM;
	sev._sigev_un._tid = gettid();
	if (timer_create(CLOCK_MONOTONIC, &sev, &tm)) {
		dt_fail("timer_create: %s", strerror(errno));
		return NULL;
	}
	errno = 0;
	t0 = dt_now_us();
	timer_settime(tm, 0, &it, NULL);
	/* from here only this program's code until the call */
	se_in_call = 1;
	/* fired before we got here: this try does not count, skip the call */
	r = se_early ? -1 : semop(t->id, &down, 1);
	e = errno;
	se_in_call = 0;
	timer_delete(tm);
	t->valid = !se_early;
	t->eintr = r == -1 && e == EINTR;
	t->dur_us = dt_now_us() - t0;
	/* slept through the handler: still in the call 90 ms after it ran
	 * (not after the start: on a loaded machine the thread may wait
	 * that long for a CPU before its handler runs at all) */
	t->late = se_hand_us && t0 + t->dur_us - se_hand_us >= 90000;
	t->hand_us = se_hand_us ? se_hand_us - t0 : -1;
	t->hand_ip = se_hand_ip;
	return NULL;
}

static void eintr_early(int argc, char **argv)
{
	(void)argc; (void)argv;
	struct sigaction sa;
	static const char *const wrappers[] = { "semop", "uipc_semop", NULL };
	int id = dt_semget(IPC_PRIVATE, 1, 0600), tries = 0, eintr = 0, valid = 0, missed = 0;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = se_alarm;
	sa.sa_flags = SA_RESTART | SA_SIGINFO;
	sigaction(SIGALRM, &sa, NULL);
	{
		/* bind semop now (lazily bound at its first call) */
		struct sembuf up = { 0, 1, 0 }, down = { 0, -1, 0 };

		if (semop(id, &up, 1) || semop(id, &down, 1))
			dt_fail("warm-up semop: %s", strerror(errno));
	}
	for (int i = 0; i < 600 && valid < 60; i++) {
		struct se_try t = { .id = id, .delay_us = 10 + i % 16 * 2 };
		pthread_t th;

		pthread_create(&th, NULL, se_thread, &t);
		pthread_join(th, NULL);
		tries++;
		if (t.valid) {
			int before = dt_ip_before_call(t.hand_ip, wrappers);

			valid++;
			eintr += t.eintr;
			missed += t.late && !before;
			if (t.late)
				fprintf(stderr, "late try %d: handler at %lld us in %s (%s), "
					"returned after %lld us\n", i, t.hand_us,
					dt_ip_where(t.hand_ip),
					before ? "before the call" : "MISSED", t.dur_us);
		}
	}
	dt_out("EINTR %s, counted tries %s, handlers slept through %s",
	       eintr == valid ? "every time" : "NOT ALWAYS", valid == 60 ? "60" : "TOO FEW",
	       missed ? "SOME" : "none");
	dt_get(id, 0, GETNCNT);
	dt_rmid(id);
}

/*
 * handler-posts: the handler of a signal that interrupts a sleeping semop
 * makes the operation that sleeper waits for (+1 on its semaphore).  The
 * kernel's semop has returned EINTR when the handler runs, so the +1
 * stays.  handler-longjmp: the handler leaves the sleeping semop by
 * siglongjmp; the sleeper is out of the queue (GETNCNT 0 from then on)
 * and a later +1 stays, nobody takes it.  One of two operations (a plain
 * -1, or -1 with SEM_UNDO and a second semaphore), the second goes to the
 * kernel's queue path in uipc.
 */
static int hp_id;
static int hp_nops;
static sigjmp_buf hp_jmp;

static void hp_post(int sig)
{
	int saved = errno;
	struct sembuf up = { 0, 1, IPC_NOWAIT };

	(void)sig;
	if (semop(hp_id, &up, 1) < 0)
		hs_fail++;
	errno = saved;
}

static void hp_leave(int sig)
{
	(void)sig;
	siglongjmp(hp_jmp, 1);
}

static struct sembuf hp_ops[2] = { { 0, -1, 0 }, { 1, 1, SEM_UNDO } };

static void hp_poster(void *p)
{
	struct sigaction sa;
	int r, e;

	(void)p;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = hp_post;
	sigaction(SIGUSR1, &sa, NULL);
	r = semop(hp_id, hp_ops, hp_nops);
	e = errno;
	dt_chan_send(r, r < 0 ? e : 0, hs_fail);
}

static void hp_leaver(void *p)
{
	struct sigaction sa;
	struct sembuf hold = { 2, -1, 0 };
	volatile int r = -2;

	(void)p;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = hp_leave;
	sigaction(SIGUSR1, &sa, NULL);
	if (sigsetjmp(hp_jmp, 1) == 0)
		r = semop(hp_id, hp_ops, hp_nops);
	/* -2: left by the jump; then the waiting count as this process sees it */
	dt_chan_send(r, 0, semctl(hp_id, 0, GETNCNT));
	semop(hp_id, &hold, 1);           /* alive until the parent is done */
}

/* a new array, and CHILD asleep in semop with the first NOPS of hp_ops,
 * interrupted by SIGUSR1 (whose handler does WHAT); its report printed */
static pid_t hp_interrupt(int nops, void (*child)(void *), const char *what)
{
	hp_id = dt_semget(IPC_PRIVATE, 3, 0600);
	hp_nops = nops;
	pid_t p = dt_fork(child, NULL);
	dt_out("%s: semop(%d,%s) blocks, its SIGUSR1 handler %s", dt_pid(p), hp_id,
	       dt_ops(hp_ops, (size_t)nops), what);
	dt_wait_cnt(hp_id, 0, GETNCNT, 1);
	kill(p, SIGUSR1);
	dt_wakes(1);
	return p;
}

static void handler_posts_one(int nops)
{
	dt_wait(hp_interrupt(nops, hp_poster, "posts +1"));
	dt_get(hp_id, 0, GETVAL);
	dt_get(hp_id, 0, GETNCNT);
	dt_get(hp_id, 1, GETVAL);
	dt_rmid(hp_id);
}

static void handler_posts(int argc, char **argv)
{
	(void)argc; (void)argv;
	handler_posts_one(1);
	handler_posts_one(2);
}

static void handler_longjmp_one(int nops)
{
	struct sembuf up = { 0, 1, 0 }, release = { 2, 1, 0 };
	pid_t p = hp_interrupt(nops, hp_leaver, "longjmps out");

	dt_get(hp_id, 0, GETNCNT);
	dt_semop(hp_id, &up, 1);
	dt_msleep(20);
	dt_get(hp_id, 0, GETVAL);
	dt_get(hp_id, 1, GETVAL);
	dt_wait_cnt(hp_id, 2, GETNCNT, 1);
	dt_semop(hp_id, &release, 1);
	dt_wait(p);
	dt_get(hp_id, 0, GETVAL);
	dt_rmid(hp_id);
}

static void handler_longjmp(int argc, char **argv)
{
	(void)argc; (void)argv;
	handler_longjmp_one(1);
	handler_longjmp_one(2);
}

const struct dt_case dt_cases[] = {
	{ "eintr-restart", eintr_restart, 0 },
	{ "eintr-norestart", eintr_norestart, 0 },
	{ "eintr-timed", eintr_timed, 0 },
	{ "eintr-zero", eintr_zero, 0 },
	{ "ignored", ignored, 0 },
	{ "masked", masked, 0 },
	{ "self-alarm", self_alarm, 0 },
	{ "stop-cont", stop_cont, 0 },
	{ "stop-cont-timed", stop_cont_timed, 0 },
	{ "handler-semop", handler_semop, 0 },
	{ "handler-first-call", handler_first_call, 0 },
	{ "eintr-early", eintr_early, 0 },
	{ "handler-posts", handler_posts, 0 },
	{ "handler-longjmp", handler_longjmp, 0 },
	{ NULL, NULL, 0 },
};
