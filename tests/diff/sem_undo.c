/*
 * sem_undo.c - SEM_UNDO: adjustments applied when the process exits
 * (exit, _exit, SIGKILL, after exec), clamped to [0, 32767], sempid set to
 * the exiting process, waiters woken by the adjustment; not inherited by a
 * forked child; cleared by SETVAL (that semaphore only) and SETALL; shared
 * by the threads of a process; ignored for arrays removed meanwhile (also
 * when a new array takes the same index); a failed semop changes no
 * adjustment; a sleeper's op done by its waker carries the sleeper's
 * adjustment; a holder whose SEM_UNDO thread ended stays alive to a
 * reader that has no descriptor left.
 *
 * Children here print their own calls while the parent waits for them
 * (dt_wait, or a "ready" report after which they block on a gate
 * semaphore the parent opens).
 */
#include "dt.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define UN SEM_UNDO
#define NW IPC_NOWAIT

static int sop(int id, unsigned short n, short o, short f)
{
	struct sembuf s = { n, o, f };
	return dt_semop(id, &s, 1);
}

/* A child's script: single-op calls, then an ending. */
enum end { END_EXIT, END__EXIT, END_KILLED, END_EXEC, END_GATE };
struct script {
	int nops;
	int id[8];
	struct sembuf ops[8];
	enum end end;
	int gate_id, gate_num;  /* END_GATE: report ready, then wait for -1 */
};
static struct script S;

static void run_script(void *p)
{
	struct script *s = p;
	for (int i = 0; i < s->nops; i++)
		dt_semop(s->id[i], &s->ops[i], 1);
	switch (s->end) {
	case END_EXIT:
		exit(0);
	case END__EXIT:
		_exit(0);
	case END_KILLED:
		dt_chan_send(0, 0, 0);
		for (;;)
			pause();
	case END_EXEC: {
		char ids[32];
		snprintf(ids, sizeof ids, "%d", s->id[0]);
		char *args[] = { "sem_undo", "exec-child", ids, NULL };
		dt_exec_self(args);
		exit(1);
	}
	case END_GATE: {
		dt_chan_send(0, 0, 0);
		struct sembuf g = { (unsigned short)s->gate_num, -1, 0 };
		if (semop(s->gate_id, &g, 1) < 0)
			dt_fail("gate: %s", dt_errname(errno));
		exit(0);
	}
	}
}

static void script(enum end end)
{
	memset(&S, 0, sizeof S);
	S.end = end;
}

static void script_op(int id, unsigned short n, short o, short f)
{
	S.id[S.nops] = id;
	S.ops[S.nops].sem_num = n;
	S.ops[S.nops].sem_op = o;
	S.ops[S.nops].sem_flg = f;
	S.nops++;
}

static void script_gate(int id, int num)
{
	S.gate_id = id;
	S.gate_num = num;
}

/* Runs the script in a child; waits for its exit, or for its "ready". */
static pid_t run(void)
{
	pid_t p = dt_fork(run_script, &S);
	if (S.end == END_KILLED || S.end == END_GATE) {
		struct dt_msg m;
		if (dt_chan_recv(&m) < 0)
			dt_fail("no ready report from %s", dt_pid(p));
		else
			dt_out("%s ready", dt_pid(p));
		if (S.end == END_GATE)
			dt_wait_cnt(S.gate_id, S.gate_num, GETNCNT, 1);
	} else {
		dt_wait(p);
	}
	return p;
}

static void exit_apply(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 3, 0600);
	dt_setval(a, 1, 5);
	script(END_EXIT);
	script_op(a, 0, 2, UN);
	script_op(a, 1, -1, UN);
	script_op(a, 2, 3, UN);
	script_op(a, 2, -3, UN);            /* adj(2) back to 0 */
	script_op(a, 0, 1, 0);              /* no undo */
	run();
	dt_dump(a, 3);
	/* _exit */
	script(END__EXIT);
	script_op(a, 0, 4, UN);
	script_op(a, 1, -4, UN | NW);
	run();
	dt_dump(a, 3);
	/* SIGKILL */
	script(END_KILLED);
	script_op(a, 0, 7, UN);
	script_op(a, 1, 2, UN);
	pid_t p = run();
	dt_getall(a);
	kill(p, SIGKILL);
	dt_wait(p);
	dt_dump(a, 3);
	dt_rmid(a);
}

static void clamp(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 3, 0600);
	dt_setval(a, 1, 10);
	script(END_GATE);
	script_op(a, 0, 5, UN);             /* adj(0) = -5 */
	script_op(a, 1, -5, UN);            /* adj(1) = +5 */
	script_gate(a, 2);
	pid_t p = run();
	sop(a, 0, -3, 0);                   /* 2: the undo would give -3 */
	sop(a, 1, 32762, 0);                /* 32767: the undo would give 32772 */
	dt_getall(a);
	sop(a, 2, 1, 0);                    /* open the gate */
	dt_wait(p);
	dt_dump(a, 3);
	dt_rmid(a);
}

static void exec_child(int argc, char **argv)
{
	if (argc < 2)
		return;
	int a = atoi(argv[1]);
	dt_out("after exec");
	dt_get(a, 0, GETVAL);
	dt_get(a, 0, GETPID);
	/* the adjustment of 1 (-32767) is still there if ERANGE */
	sop(a, 1, 2, UN | NW);
	sop(a, 1, 1, UN | NW);
	dt_getall(a);
	exit(0);
}

static void exec_kept(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 2, 0600);
	script(END_EXEC);
	script_op(a, 0, 3, UN);
	script_op(a, 1, 32767, UN);         /* adj(1) = -32767 */
	script_op(a, 1, -32767, 0);
	run();
	dt_dump(a, 2);
	dt_rmid(a);
}

static int the_id;

static void fork_child_of_holder(void *p)
{
	(void)p;
	/* a fresh process: no adjustments, so +2 with undo is fine here */
	sop(the_id, 1, 2, UN | NW);
	sop(the_id, 0, -1, UN | NW);
	exit(0);
}

static void fork_not_inherited(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 2, 0600);
	sop(a, 0, 1, UN);                   /* main: adj(0) = -1 */
	sop(a, 1, 32767, UN);               /* main: adj(1) = -32767 */
	sop(a, 1, -32767, 0);
	sop(a, 1, 2, UN | NW);              /* main: ERANGE */
	the_id = a;
	pid_t p = dt_fork(fork_child_of_holder, NULL);
	dt_wait(p);
	dt_dump(a, 2);                      /* the child's +2/-1 undone */
	sop(a, 1, 1, UN | NW);              /* main's adj(1) -32768 */
	sop(a, 1, 1, UN | NW);              /* ERANGE */
	dt_rmid(a);
}

static void setval_clears(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 3, 0600);
	script(END_GATE);
	script_op(a, 0, 1, UN);
	script_op(a, 2, 1, UN);
	script_gate(a, 1);
	pid_t p = run();
	dt_setval(a, 2, 7);                 /* clears adj(2) only */
	sop(a, 1, 1, 0);                    /* opens the gate */
	dt_wait(p);
	dt_dump(a, 3);                      /* 0 back to 0, 2 stays 7 */
	/* SETALL clears every adjustment of the array */
	script(END_GATE);
	script_op(a, 0, 2, UN);
	script_op(a, 2, -2, UN);
	script_gate(a, 1);
	p = run();
	unsigned short v[3] = { 4, 0, 4 };
	dt_setall(a, v, 3);
	sop(a, 1, 1, 0);
	dt_wait(p);
	dt_dump(a, 3);
	/* SETVAL of another semaphore leaves the adjustment */
	script(END_GATE);
	script_op(a, 0, 1, UN);
	script_gate(a, 1);
	p = run();
	dt_setval(a, 2, 0);
	sop(a, 1, 1, 0);
	dt_wait(p);
	dt_dump(a, 3);
	dt_rmid(a);
}

/* threads of one process share the adjustments */
static void *thr_op(void *p)
{
	struct sembuf *s = p;
	dt_semop(the_id, s, 1);
	return NULL;
}

static void in_thread(unsigned short n, short o, short f)
{
	static struct sembuf s;
	s.sem_num = n;
	s.sem_op = o;
	s.sem_flg = f;
	pthread_t t;
	if (pthread_create(&t, NULL, thr_op, &s) != 0) {
		dt_fail("pthread_create");
		return;
	}
	pthread_join(t, NULL);
}

static void threads_child(void *p)
{
	(void)p;
	sop(the_id, 0, 1, UN);
	in_thread(0, 2, UN);                /* adj(0) = -3 in all */
	sop(the_id, 1, 32767, UN);
	sop(the_id, 1, -32767, 0);
	in_thread(1, 1, UN | NW);           /* adj(1) -32768 */
	in_thread(1, 1, UN | NW);           /* ERANGE: shared */
	sop(the_id, 1, 1, UN | NW);         /* ERANGE */
	dt_getall(the_id);
	exit(0);
}

static void threads(int argc, char **argv)
{
	(void)argc; (void)argv;
	the_id = dt_semget(IPC_PRIVATE, 2, 0600);
	pid_t p = dt_fork(threads_child, NULL);
	dt_wait(p);
	dt_dump(the_id, 2);
	dt_rmid(the_id);
}

/* a thread that exits does not apply the process's adjustments */
static void thread_exit_child(void *p)
{
	(void)p;
	in_thread(0, 4, UN);
	dt_getall(the_id);
	dt_chan_send(0, 0, 0);
	struct sembuf g = { 1, -1, 0 };
	semop(the_id, &g, 1);
	exit(0);
}

static void thread_exit(int argc, char **argv)
{
	(void)argc; (void)argv;
	the_id = dt_semget(IPC_PRIVATE, 2, 0600);
	pid_t p = dt_fork(thread_exit_child, NULL);
	struct dt_msg m;
	if (dt_chan_recv(&m) < 0)
		dt_fail("no ready report");
	dt_wait_cnt(the_id, 1, GETNCNT, 1);
	dt_get(the_id, 0, GETVAL);          /* the thread is gone: still 4 */
	sop(the_id, 1, 1, 0);
	dt_wait(p);
	dt_dump(the_id, 2);
	dt_rmid(the_id);
}

/*
 * A process whose only SEM_UNDO thread ended lives on without calling in;
 * a process with no descriptor left reads the array: the adjustment stays
 * until the holder exits (uipc cannot read /proc/PID/stat there, which
 * must not make the holder look dead).
 */
static int hold_pipe[2];

static void quiet_holder_child(void *p)
{
	char c;

	(void)p;
	close(hold_pipe[1]);
	in_thread(0, 4, UN);
	dt_chan_send(0, 0, 0);
	while (read(hold_pipe[0], &c, 1) < 0 && errno == EINTR)
		;
	exit(0);
}

/* fill the descriptor table (at most 64 descriptors): the ones opened
 * go into FDS, their count is returned */
static int use_all_fds(struct rlimit *saved, int fds[64])
{
	struct rlimit low;
	int n = 0, fd;

	getrlimit(RLIMIT_NOFILE, saved);
	low = *saved;
	low.rlim_cur = 64;
	if (setrlimit(RLIMIT_NOFILE, &low) < 0)
		dt_fail("setrlimit");
	while (n < 64 && (fd = dup(0)) >= 0)
		fds[n++] = fd;
	if (n == 64 || errno != EMFILE)
		dt_fail("dup: errno %d, not EMFILE", errno);
	return n;
}

static void free_fds(const int *fds, int n, const struct rlimit *saved)
{
	while (n > 0)
		close(fds[--n]);
	setrlimit(RLIMIT_NOFILE, saved);
}

static void no_fd_reader(int argc, char **argv)
{
	struct rlimit saved;
	struct dt_msg m;
	int fds[64], n;

	(void)argc; (void)argv;
	the_id = dt_semget(IPC_PRIVATE, 1, 0600);
	if (pipe(hold_pipe) < 0)
		dt_fail("pipe");
	pid_t p = dt_fork(quiet_holder_child, NULL);
	close(hold_pipe[0]);
	if (dt_chan_recv(&m) < 0)
		dt_fail("no ready report");
	n = use_all_fds(&saved, fds);
	dt_get(the_id, 0, GETVAL);          /* the holder lives: still 4 */
	dt_get(the_id, 0, GETNCNT);
	free_fds(fds, n, &saved);
	dt_get(the_id, 0, GETVAL);
	close(hold_pipe[1]);                /* the holder exits: 0 */
	dt_wait(p);
	dt_dump(the_id, 1);
	dt_rmid(the_id);
}

/*
 * A process whose main thread ended with pthread_exit while another thread
 * of it runs on: /proc/PID/stat says zombie (the main thread's state), but
 * the process lives and keeps its SEM_UNDO until its last thread exits.
 */
static void *zombie_leader_waiter(void *arg)
{
	char c;

	(void)arg;
	while (read(hold_pipe[0], &c, 1) < 0 && errno == EINTR)
		;
	exit(0);
}

static void zombie_leader_child(void *p)
{
	pthread_t t;

	(void)p;
	close(hold_pipe[1]);
	sop(the_id, 0, 4, UN);
	if (pthread_create(&t, NULL, zombie_leader_waiter, NULL))
		dt_fail("pthread_create");
	pthread_exit(NULL);
}

/* wait until PID's main thread is a zombie beside THREADS threads in all */
static void wait_zombie_leader(pid_t pid, long threads)
{
	char path[64], buf[1024];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 10000; i++) {
		FILE *f = fopen(path, "r");
		char *p = NULL, state = 0;
		long n = 0;

		if (f) {
			if (fgets(buf, sizeof(buf), f))
				p = strrchr(buf, ')');
			fclose(f);
		}
		/* ") S ppid pgrp session tty tpgid flags minflt cminflt majflt
		 * cmajflt utime stime cutime cstime priority nice num_threads" */
		if (p && sscanf(p, ") %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d "
				"%*d %*d %*d %ld", &state, &n) == 2 && state == 'Z' && n == threads)
			return;
		usleep(1000);
	}
	dt_fail("process %d: main thread not a zombie beside a live thread", (int)pid);
}

static void zombie_leader(int argc, char **argv)
{
	(void)argc; (void)argv;
	the_id = dt_semget(IPC_PRIVATE, 1, 0600);
	if (pipe(hold_pipe) < 0)
		dt_fail("pipe");
	pid_t p = dt_fork(zombie_leader_child, NULL);
	close(hold_pipe[0]);
	wait_zombie_leader(p, 2);
	dt_get(the_id, 0, GETVAL);          /* the process lives: still 4 */
	dt_get(the_id, 0, GETNCNT);
	dt_get(the_id, 0, GETVAL);
	close(hold_pipe[1]);                /* its last thread exits: 0 */
	dt_wait(p);
	dt_dump(the_id, 1);
	dt_rmid(the_id);
}

static void removed_array(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 1, 0600);
	int b = dt_semget(IPC_PRIVATE, 2, 0600);
	script(END_GATE);
	script_op(b, 0, 1, UN);
	script_op(a, 0, 3, UN);
	script_gate(b, 1);
	pid_t p = run();
	dt_rmid(a);
	int c = dt_semget(IPC_PRIVATE, 1, 0600);
	dt_setval(c, 0, 5);
	sop(b, 1, 1, 0);
	dt_wait(p);
	dt_dump(b, 2);
	dt_dump(c, 1);
	dt_rmid(b);
	dt_rmid(c);
}

/* the same index reused (through sem_next_id) with another seq: the old
 * array's adjustments must not land on the new one */
static void same_index(int argc, char **argv)
{
	(void)argc; (void)argv;
	int gate = dt_semget(IPC_PRIVATE, 1, 0600);
	int a = dt_semget(IPC_PRIVATE, 2, 0600);
	script(END_GATE);
	script_op(a, 0, 3, UN);
	script_op(a, 1, 2, UN);
	script_gate(gate, 0);
	pid_t p = run();
	dt_rmid(a);
	char next[32];
	snprintf(next, sizeof next, "%d", (a & 0x7fff) + 5 * 32768);
	dt_sysctl_set("kernel.sem_next_id", next);
	int b = dt_semget(IPC_PRIVATE, 2, 0600);
	dt_out("same index: %s", (b & 0x7fff) == (a & 0x7fff) ? "yes" : "no");
	unsigned short v[2] = { 10, 10 };
	dt_setall(b, v, 2);
	sop(gate, 0, 1, 0);
	dt_wait(p);
	dt_dump(b, 2);
	dt_rmid(b);
	dt_rmid(gate);
}

static void overflow_sleeper(void *p)
{
	(void)p;
	sop(the_id, 1, 32767, UN);          /* adj(1) = -32767 */
	sop(the_id, 1, -32767, 0);
	struct sembuf s[2] = { { 0, -1, 0 }, { 1, 2, UN } };
	int r = semop(the_id, s, 2);        /* blocks on 0; ERANGE when woken */
	dt_chan_send(r, r < 0 ? errno : 0, 0);
	struct sembuf g = { 1, -1, 0 };     /* then waits to be let go */
	semop(the_id, &g, 1);
	exit(0);
}

/* a sleeper with SEM_UNDO: the waker does its op, and its adjustment */
static void sleeper(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 2, 0600);
	struct sembuf s1[1] = { { 0, -1, UN } };
	pid_t c1 = dt_block(a, s1, 1, 0, 0, GETNCNT, 1);
	sop(a, 0, 3, 0);
	dt_wakes(1);
	dt_wait(c1);                        /* exit: +1 back */
	dt_getall(a);
	dt_get(a, 0, GETPID);
	/* a sleeper whose adjustment would overflow when it is woken */
	dt_setval(a, 0, 0);
	the_id = a;
	pid_t c2 = dt_fork(overflow_sleeper, NULL);
	dt_wait_cnt(a, 0, GETNCNT, 1);
	sop(a, 0, 1, 0);
	dt_wakes(1);
	dt_wait_cnt(a, 1, GETNCNT, 1);      /* it waits to be let go */
	dt_dump(a, 2);
	sop(a, 1, 1, 0);                    /* lets it leave */
	dt_wait(c2);
	dt_getall(a);
	/* a sleeper killed before being woken: no adjustment */
	dt_setval(a, 0, 0);
	struct sembuf s4[1] = { { 0, -2, UN } };
	pid_t c3 = dt_block(a, s4, 1, 0, 0, GETNCNT, 1);
	kill(c3, SIGKILL);
	dt_wait(c3);
	dt_get(a, 0, GETNCNT);
	dt_getall(a);
	/* a sleeper removed with EIDRM: nothing to undo */
	struct sembuf s5[1] = { { 0, -1, UN } };
	pid_t c4 = dt_block(a, s5, 1, 0, 0, GETNCNT, 1);
	dt_rmid(a);
	dt_wakes(1);
	dt_wait(c4);
}

static void exit_wakes(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 3, 0600);
	dt_setval(a, 1, 2);
	script(END_GATE);
	script_op(a, 0, 3, UN);             /* 0: 3, adj -3 */
	script_op(a, 1, -2, UN);            /* 1: 0, adj +2 */
	script_gate(a, 2);
	pid_t p1 = run();
	pid_t p2 = dt_block(a, DT_OP1(0, 0), 0, 0, GETZCNT, 1);
	pid_t p3 = dt_block(a, DT_OP1(1, -1), 0, 1, GETNCNT, 1);
	sop(a, 2, 1, 0);                    /* child1 leaves */
	dt_wait(p1);
	dt_wakes_sorted(2);
	dt_dump(a, 3);
	dt_wait(p2);
	dt_wait(p3);
	dt_rmid(a);
}

static void failed_child(void *p)
{
	(void)p;
	struct sembuf f1[2] = { { 0, 5, UN }, { 1, -1, UN | NW } };
	dt_semop(the_id, f1, 2);            /* EAGAIN: no adjustment */
	dt_setval(the_id, 1, 32767);
	struct sembuf f2[2] = { { 0, 1, UN }, { 1, 1, UN | NW } };
	dt_semop(the_id, f2, 2);            /* ERANGE: no adjustment */
	struct sembuf f3[1] = { { 0, 2, UN | NW } };
	dt_semop(the_id, f3, 1);
	struct sembuf f4[2] = { { 0, 1, UN }, { 0, 1, UN } };
	dt_semop(the_id, f4, 2);            /* adj(0) -4 */
	struct sembuf f5[2] = { { 0, -1, UN }, { 2, -1, UN | NW } };
	dt_semop(the_id, f5, 2);            /* EAGAIN */
	dt_getall(the_id);
	exit(0);
}

static void failed_op(int argc, char **argv)
{
	(void)argc; (void)argv;
	the_id = dt_semget(IPC_PRIVATE, 3, 0600);
	pid_t p = dt_fork(failed_child, NULL);
	dt_wait(p);
	dt_dump(the_id, 3);
	dt_rmid(the_id);
}

const struct dt_case dt_cases[] = {
	{ "exit-apply", exit_apply, 0 },
	{ "clamp", clamp, 0 },
	{ "exec-kept", exec_kept, 0 },
	{ "exec-child", exec_child, 1 },
	{ "fork-not-inherited", fork_not_inherited, 0 },
	{ "setval-clears", setval_clears, 0 },
	{ "threads", threads, 0 },
	{ "thread-exit", thread_exit, 0 },
	{ "no-fd-reader", no_fd_reader, 0 },
	{ "zombie-leader", zombie_leader, 0 },
	{ "removed-array", removed_array, 0 },
	{ "same-index", same_index, 0 },
	{ "sleeper", sleeper, 0 },
	{ "exit-wakes", exit_wakes, 0 },
	{ "failed-op", failed_op, 0 },
	{ NULL, NULL, 0 },
};
