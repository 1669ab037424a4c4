/*
 * ns_thread.c - IPC namespaces per thread, and attachments made before an
 * unshare (issue 15).  On Linux unshare(CLONE_NEWIPC) and setns move the
 * calling thread only: the other threads keep the old namespace, a thread
 * made afterwards starts in its creator's, a fork child in its forking
 * thread's.  The threads share one SEM_UNDO list (pthreads are made with
 * CLONE_SYSVSEM): a thread that leaves drops its hold on it, and the
 * adjustments are applied when the last holder leaves or ends.  Shared
 * memory attachments are counted per vma, not per task: an unshare leaves
 * them counted in the old namespace until their shmdt (which detaches them
 * there, from whichever namespace the detaching thread is in), or the
 * process's exit.  Observed from a process left in the old namespace:
 * nattch, shm_lpid, shm_dtime, a removed segment destroyed at its last
 * detach.
 *
 * Under the kernel the program runs as root in a private namespace; under
 * uipc as root and as an ordinary user (tests/diff-ns.t).
 */
#include "dt.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEY 0x7eed

static int semid;

static void say_unshare(const char *who)
{
	errno = 0;
	int r = unshare(CLONE_NEWIPC);
	dt_out("%s: unshare(CLONE_NEWIPC) = %s", who, dt_res(r, errno));
}

static void look(const char *who)
{
	errno = 0;
	int r = semget(KEY, 0, 0);
	dt_out("%s: semget(KEY, 0, 0) = %s", who, dt_res(r, errno));
}

static int val(int id)
{
	errno = 0;
	return semctl(id, 0, GETVAL);
}

/* ---- a thread that unshares ---- */

static pthread_barrier_t bar;

static void *inner(void *a)
{
	(void)a;
	look("thread of thread");
	return NULL;
}

static void fork_look(const char *who)
{
	pid_t p = fork();

	if (p == 0) {
		look(who);
		_exit(0);
	}
	waitpid(p, NULL, 0);
}

static void *unsharer(void *a)
{
	pthread_t t;

	(void)a;
	say_unshare("thread");
	look("thread");
	errno = 0;
	int id = semget(KEY, 1, IPC_CREAT | 0600);
	dt_out("thread: semget(KEY, IPC_CREAT) = %s", dt_res(id, errno));
	pthread_create(&t, NULL, inner, NULL);
	pthread_join(t, NULL);
	fork_look("fork child of thread");
	pthread_barrier_wait(&bar);   /* main looks */
	pthread_barrier_wait(&bar);
	return NULL;
}

static void thread_unshare(int argc, char **argv)
{
	pthread_t t;
	struct sembuf up = { 0, 1, SEM_UNDO };

	(void)argc; (void)argv;
	semid = dt_semget(KEY, 1, IPC_CREAT | 0600);
	dt_semop(semid, &up, 1);
	pthread_barrier_init(&bar, NULL, 2);
	pthread_create(&t, NULL, unsharer, NULL);
	pthread_barrier_wait(&bar);
	look("main");
	dt_out("main: semval %d (the thread's unshare applied no undo)", val(semid));
	fork_look("fork child of main");
	pthread_barrier_wait(&bar);
	pthread_join(t, NULL);
	look("main after join");
}

/* ---- a thread that joins another namespace and comes back ---- */

static int old_fd;

static void *joiner(void *a)
{
	(void)a;
	say_unshare("thread");
	errno = 0;
	int id = semget(KEY + 1, 1, IPC_CREAT | 0600);
	dt_out("thread: semget(KEY+1, IPC_CREAT) = %s", dt_res(id, errno));
	errno = 0;
	int r = setns(old_fd, CLONE_NEWIPC);
	dt_out("thread: setns(old) = %s", dt_res(r, errno));
	look("thread back");
	errno = 0;
	r = semget(KEY + 1, 0, 0);
	dt_out("thread back: semget(KEY+1, 0, 0) = %s", dt_res(r, errno));
	return NULL;
}

static void thread_setns(int argc, char **argv)
{
	pthread_t t;

	(void)argc; (void)argv;
	semid = dt_semget(KEY, 1, IPC_CREAT | 0600);
	old_fd = open("/proc/self/ns/ipc", O_RDONLY);
	pthread_create(&t, NULL, joiner, NULL);
	pthread_join(t, NULL);
	look("main");
	errno = 0;
	int r = semget(KEY + 1, 0, 0);
	dt_out("main: semget(KEY+1, 0, 0) = %s", dt_res(r, errno));
}

/* ---- the SEM_UNDO list shared by the threads ---- */

/* an observer left in the old namespace: prints the value on each byte */
static int obs_in[2], obs_out[2];

static void observer(void *arg)
{
	char c;

	(void)arg;
	close(obs_in[1]);
	while (read(obs_in[0], &c, 1) == 1) {
		if (c == 'w') {
			/* wait (up to 2 s) for the value to drop to 0: the
			 * kernel applies a thread's undo just after its join */
			for (int i = 0; i < 200 && val(semid) != 0; i++)
				dt_msleep(10);
		}
		dt_out("observer: semval %d", val(semid));
		write(obs_out[1], "k", 1);
	}
}

static void observe(char how)
{
	char c;

	write(obs_in[1], &how, 1);
	read(obs_out[0], &c, 1);
}

static pid_t start_observer(void)
{
	pipe(obs_in);
	pipe(obs_out);
	return dt_fork(observer, NULL);
}

static void stop_observer(pid_t p)
{
	close(obs_in[1]);
	dt_wait(p);
}

static void *undo_holder(void *a)
{
	struct sembuf up = { 0, 1, SEM_UNDO };

	(void)a;
	dt_semop(semid, &up, 1);
	pthread_barrier_wait(&bar);   /* main unshares */
	pthread_barrier_wait(&bar);
	if (a)
		say_unshare("thread");
	return NULL;
}

/* the last thread to leave the namespace applies the shared list */
static void undo_last_leaver(int argc, char **argv)
{
	pthread_t t;
	pid_t o;

	(void)argc; (void)argv;
	semid = dt_semget(KEY, 1, IPC_CREAT | 0600);
	o = start_observer();
	pthread_barrier_init(&bar, NULL, 2);
	pthread_create(&t, NULL, undo_holder, (void *)1);
	pthread_barrier_wait(&bar);
	observe('n');
	say_unshare("main");
	observe('n');
	pthread_barrier_wait(&bar);
	pthread_join(t, NULL);
	observe('n');
	stop_observer(o);
}

/* ... or ends */
static void undo_thread_end(int argc, char **argv)
{
	pthread_t t;
	pid_t o;

	(void)argc; (void)argv;
	semid = dt_semget(KEY, 1, IPC_CREAT | 0600);
	o = start_observer();
	pthread_barrier_init(&bar, NULL, 2);
	pthread_create(&t, NULL, undo_holder, NULL);
	pthread_barrier_wait(&bar);
	say_unshare("main");
	observe('n');
	pthread_barrier_wait(&bar);
	pthread_join(t, NULL);
	observe('w');
	stop_observer(o);
}

/* ---- attachments made before the unshare ---- */

static int shmid;
static pid_t attacher_pid;

static const char *who_pid(pid_t p)
{
	return p == attacher_pid ? "attacher" : p == dt_main_pid() ? "main" : p ? "another" : "0";
}

static void stat_seg(const char *when)
{
	struct shmid_ds ds;

	errno = 0;
	int r = shmctl(shmid, IPC_STAT, &ds);
	if (r < 0) {
		dt_out("%s: IPC_STAT = %s", when, dt_res(r, errno));
		return;
	}
	dt_out("%s: nattch %lu lpid %s dtime %s dest %d", when, (unsigned long)ds.shm_nattch,
	       who_pid(ds.shm_lpid), dt_time(ds.shm_dtime), !!(ds.shm_perm.mode & SHM_DEST));
}

static int step_in[2], step_out[2];

static void step(void)
{
	char c = 's';

	write(step_in[1], &c, 1);
	read(step_out[0], &c, 1);
}

static void done(void)
{
	write(step_out[1], "k", 1);
}

static void wait_step(void)
{
	char c;

	read(step_in[0], &c, 1);
}

static void attacher(void *arg)
{
	char *p, *q;
	int forked = arg != NULL;

	wait_step();
	p = shmat(shmid, NULL, 0);
	q = shmat(shmid, NULL, 0);
	p[0] = 'x';
	say_unshare("attacher");
	done();
	wait_step();
	dt_out("attacher: old attachment reads '%c'", q[0]);
	errno = 0;
	int r = shmdt(p);
	dt_out("attacher: shmdt(old) = %s", dt_res(r, errno));
	done();
	wait_step();
	if (forked) {
		/* a fork child inherits the second, counted in the old one */
		int kid[2];
		char c;

		pipe(kid);
		pid_t k = fork();

		if (k == 0) {
			close(kid[1]);
			read(kid[0], &c, 1);
			_exit(0);   /* exit detaches it there */
		}
		close(kid[0]);
		done();
		wait_step();
		close(kid[1]);
		waitpid(k, NULL, 0);
		done();
		wait_step();
	}
	_exit(0);           /* exit detaches the second there */
}

static void old_attach_counted(int argc, char **argv)
{
	pid_t a;

	(void)argc; (void)argv;
	shmid = dt_shmget(KEY, 4096, IPC_CREAT | 0600);
	pipe(step_in);
	pipe(step_out);
	a = attacher_pid = dt_fork(attacher, (void *)1);
	step();
	stat_seg("after the unshare");
	step();
	stat_seg("after shmdt from the new namespace");
	step();                 /* the attacher forks */
	stat_seg("after the fork");
	step();                 /* the fork child exits */
	stat_seg("after the fork child's exit");
	write(step_in[1], "s", 1);
	dt_wait(a);
	stat_seg("after the attacher's exit");
}

/* a segment removed while attached goes with its last detach, made after
 * the unshare */
static void old_attach_rmid(int argc, char **argv)
{
	pid_t a;

	(void)argc; (void)argv;
	shmid = dt_shmget(KEY, 4096, IPC_CREAT | 0600);
	pipe(step_in);
	pipe(step_out);
	a = attacher_pid = dt_fork(attacher, NULL);
	step();
	errno = 0;
	int r = shmctl(shmid, IPC_RMID, NULL);
	dt_out("IPC_RMID = %s", dt_res(r, errno));
	stat_seg("removed, attached twice");
	step();
	stat_seg("after one shmdt");
	write(step_in[1], "s", 1);
	dt_wait(a);
	stat_seg("after the attacher's exit");
}

/* a thread detaches what another thread attached before the first one
 * unshared: detached in the segment's namespace */
static char *main_att;

static void *detacher(void *a)
{
	(void)a;
	say_unshare("thread");
	errno = 0;
	int r = shmdt(main_att);
	dt_out("thread: shmdt(main's attachment) = %s", dt_res(r, errno));
	errno = 0;
	r = shmdt(main_att);
	dt_out("thread: shmdt again = %s", dt_res(r, errno));
	return NULL;
}

static void thread_shmdt(int argc, char **argv)
{
	pthread_t t;

	(void)argc; (void)argv;
	shmid = dt_shmget(KEY, 4096, IPC_CREAT | 0600);
	main_att = shmat(shmid, NULL, 0);
	stat_seg("attached");
	pthread_create(&t, NULL, detacher, NULL);
	pthread_join(t, NULL);
	stat_seg("main, after the thread's shmdt");
}

const struct dt_case dt_cases[] = {
	{ "thread-unshare", thread_unshare, 0 },
	{ "thread-setns", thread_setns, 0 },
	{ "undo-last-leaver", undo_last_leaver, 0 },
	{ "undo-thread-end", undo_thread_end, 0 },
	{ "old-attach-counted", old_attach_counted, 0 },
	{ "old-attach-rmid", old_attach_rmid, 0 },
	{ "thread-shmdt", thread_shmdt, 0 },
	{ NULL, NULL, 0 },
};
