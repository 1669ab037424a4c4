/*
 * perm_userns.c - permission checks in a user namespace made later
 * (issue 14): user A (uid 1000) owns a semaphore array, a queue holding a
 * message and a segment, all mode 0600; user B (uid 1001) enters a user
 * namespace of its own (`unshare -r`: uid and gid 0 inside are 1001
 * outside), where it is root with every capability, and tries the checks
 * a user without permission fails: the kernel judges B by its ids outside
 * and gives it no capability over the IPC namespace, which belongs to the
 * initial user namespace.  Also: how B sees owners in IPC_STAT (A's ids
 * have no mapping: 65534; its own: 0), IPC_SET with an id it cannot map
 * (EINVAL), its own objects (the owner's rights), and writing a sysctl
 * (only root outside may).  And an IPC namespace B makes in its user
 * namespace (unshare -r --ipc, or in two steps, or a clone child), which
 * that user namespace owns: there B has the capabilities.
 */
#include "dt.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MSG_COPY
#define MSG_COPY 040000
#endif

#define KEY_SEM 0x7a00
#define KEY_MSG 0x7a01
#define KEY_SHM 0x7a02

static int sem_id, msg_id, shm_id;

/* print "WHAT = result" for a call's result R (errno taken right after) */
#define SHOW(what, call) do {                                   \
		long r_ = (call);                               \
		int e_ = errno;                                 \
		dt_out("%s = %s", what, dt_res(r_, e_));        \
	} while (0)

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		dt_fail("%s: %s", path, strerror(errno));
		exit(1);
	}
	close(fd);
}

/* the current process, as UID:GID with no groups, enters a new user
 * namespace where it is 0:0 (as `unshare -r` does) */
static void enter_userns(uid_t uid, gid_t gid)
{
	char map[64];

	dt_drop_privs(uid, gid, gid);
	/* dropping root made the process non-dumpable: its /proc files
	 * (uid_map) would stay root's */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	if (unshare(CLONE_NEWUSER) < 0) {
		dt_fail("unshare(CLONE_NEWUSER): %s", strerror(errno));
		exit(1);
	}
	write_file("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "0 %d 1", (int)uid);
	write_file("/proc/self/uid_map", map);
	snprintf(map, sizeof(map), "0 %d 1", (int)gid);
	write_file("/proc/self/gid_map", map);
	dt_out("in a new user namespace: uid %d gid %d", (int)getuid(), (int)getgid());
}

/* A makes its objects, mode 0600 */
static void a_creates(void *arg)
{
	struct { long mtype; char text[16]; } m = { 3, "for A only" };

	(void)arg;
	dt_drop_privs(1000, 1000, 1000);
	sem_id = dt_semget(KEY_SEM, 2, IPC_CREAT | 0600);
	dt_setval(sem_id, 0, 1);
	msg_id = msgget(KEY_MSG, IPC_CREAT | 0600);
	dt_out("msgget(A's queue) = %s", dt_res(msg_id, errno));
	SHOW("msgsnd", msgsnd(msg_id, &m, sizeof(m.text), IPC_NOWAIT));
	exit(dt_exit_code);
}

/* every check a user with no permission on a mode 0600 object fails */
static void probe_others(void)
{
	struct { long mtype; char text[64]; } m = { 1, "from B" };
	struct sembuf up = { 0, 1, IPC_NOWAIT }, zero = { 0, 0, IPC_NOWAIT };
	struct msqid_ds mds;
	unsigned short v[2] = { 5, 5 };
	long r;

	dt_semget(KEY_SEM, 0, 0);
	dt_semget(KEY_SEM, 0, 0400);
	dt_get(sem_id, 0, GETVAL);
	dt_get(sem_id, 0, GETPID);
	dt_get(sem_id, 0, GETNCNT);
	dt_getall(sem_id);
	dt_setval(sem_id, 0, 7);
	dt_setall(sem_id, v, 2);
	dt_semop(sem_id, &up, 1);
	dt_semop(sem_id, &zero, 1);
	dt_stat(sem_id, IPC_STAT);
	dt_stat(sem_id & 0x7fff, SEM_STAT);
	dt_stat(sem_id & 0x7fff, SEM_STAT_ANY);      /* owners as B sees them */
	dt_ipcset(sem_id, 0, 0, 0666);
	dt_rmid(sem_id);
	SHOW("msgget(0400)", msgget(KEY_MSG, 0400));
	SHOW("msgsnd", msgsnd(msg_id, &m, 8, IPC_NOWAIT));
	SHOW("msgrcv", msgrcv(msg_id, &m, sizeof(m.text), 0, IPC_NOWAIT));
	SHOW("msgrcv(MSG_COPY)", msgrcv(msg_id, &m, sizeof(m.text), 0, IPC_NOWAIT | MSG_COPY));
	SHOW("msgctl(IPC_STAT)", msgctl(msg_id, IPC_STAT, &mds));
	errno = 0;
	r = msgctl(msg_id & 0x7fff, MSG_STAT_ANY, &mds);
	dt_out("msgctl(MSG_STAT_ANY) = %s uid=%d gid=%d cuid=%d cgid=%d", r < 0 ? dt_res(r, errno) : "id",
	       (int)mds.msg_perm.uid, (int)mds.msg_perm.gid, (int)mds.msg_perm.cuid,
	       (int)mds.msg_perm.cgid);
	mds.msg_perm.uid = 0;
	mds.msg_perm.gid = 0;
	SHOW("msgctl(IPC_SET)", msgctl(msg_id, IPC_SET, &mds));
	SHOW("msgctl(IPC_RMID)", msgctl(msg_id, IPC_RMID, NULL));
	dt_shmget(KEY_SHM, 0, 0);
	dt_shmget(KEY_SHM, 0, 0400);
	{
		void *a = dt_shmat(shm_id, NULL, SHM_RDONLY);
		void *b = dt_shmat(shm_id, NULL, 0);

		if (a != (void *)-1)
			dt_shmdt(a, "a");
		if (b != (void *)-1)
			dt_shmdt(b, "b");
	}
	dt_shmstat(shm_id, IPC_STAT);
	dt_shmstat(shm_id & 0x7fff, SHM_STAT_ANY);
	dt_shmctl(shm_id, SHM_LOCK);
	dt_shmset(shm_id, 0, 0, 0666);
	dt_shmctl(shm_id, IPC_RMID);
}

/* what B may do with objects of its own, from inside */
static void probe_own(void)
{
	int s = dt_semget(IPC_PRIVATE, 1, 0600);
	int q;
	struct msqid_ds mds;

	dt_stat(s, IPC_STAT);                        /* B's own ids: 0 inside */
	dt_setval(s, 0, 3);
	dt_ipcset(s, 0, 0, 0640);                    /* itself: fine */
	dt_ipcset(s, 5, 0, 0640);                    /* uid 5 has no mapping: EINVAL */
	dt_stat(s, IPC_STAT);
	dt_rmid(s);
	q = msgget(IPC_PRIVATE, 0600);
	SHOW("msgctl(own, IPC_STAT)", msgctl(q, IPC_STAT, &mds));
	dt_out("  uid=%d gid=%d cuid=%d cgid=%d", (int)mds.msg_perm.uid, (int)mds.msg_perm.gid,
	       (int)mds.msg_perm.cuid, (int)mds.msg_perm.cgid);
	mds.msg_qbytes = 1 << 20;                     /* over msgmnb: CAP_SYS_RESOURCE */
	SHOW("msgctl(own, IPC_SET, qbytes 1 MiB)", msgctl(q, IPC_SET, &mds));
	msgctl(q, IPC_RMID, NULL);
}

/* root inside only: the sysctls are not its to write */
static void probe_sysctl(void)
{
	int fd = open("/proc/sys/kernel/msgmni", O_WRONLY);

	dt_out("open(/proc/sys/kernel/msgmni, O_WRONLY) = %s", dt_res(fd < 0 ? -1 : 0, errno));
	if (fd >= 0)
		close(fd);
}

static void b_probes(void *arg)
{
	(void)arg;
	enter_userns(1001, 1001);
	probe_others();
	probe_own();
	probe_sysctl();
	exit(dt_exit_code);
}

static void unshare_r(int argc, char **argv)
{
	(void)argc, (void)argv;
	dt_wait(dt_fork(a_creates, NULL));
	sem_id = semget(KEY_SEM, 0, 0);
	msg_id = msgget(KEY_MSG, 0);
	/* the segment is made by root and given to A (a child that dropped
	 * root cannot create files in the test's private namespace) */
	shm_id = dt_shmget(KEY_SHM, 4096, IPC_CREAT | 0600);
	dt_shmset(shm_id, 1000, 1000, 0600);
	dt_wait(dt_fork(b_probes, NULL));
	/* what is left of A's objects, as root sees it */
	dt_get(sem_id, 0, GETVAL);
	dt_stat(sem_id, IPC_STAT);
	dt_shmstat(shm_id, IPC_STAT);
	dt_rmid(sem_id);
	msgctl(msg_id, IPC_RMID, NULL);
	shmctl(shm_id, IPC_RMID, NULL);
}

/* B's own objects made outside, used from inside: B is their owner */
static void b_makes(void *arg)
{
	(void)arg;
	dt_drop_privs(1001, 1001, 1001);
	sem_id = dt_semget(KEY_SEM + 0x10, 1, IPC_CREAT | 0600);
	exit(dt_exit_code);
}

static void b_inside_own(void *arg)
{
	(void)arg;
	enter_userns(1001, 1001);
	dt_get(sem_id, 0, GETVAL);
	dt_setval(sem_id, 0, 4);
	dt_stat(sem_id, IPC_STAT);
	dt_ipcset(sem_id, 0, 0, 0660);
	dt_rmid(sem_id);
	exit(dt_exit_code);
}

static void own_inside(int argc, char **argv)
{
	(void)argc, (void)argv;
	dt_wait(dt_fork(b_makes, NULL));
	sem_id = semget(KEY_SEM + 0x10, 0, 0);
	dt_wait(dt_fork(b_inside_own, NULL));
	dt_stat(sem_id, IPC_STAT);
}

/* ---- an IPC namespace owned by a user namespace made later ----
 *
 * unshare(CLONE_NEWUSER | CLONE_NEWIPC) in one call (as `unshare -r
 * --ipc`), unshare(CLONE_NEWIPC) once in a new user namespace, or a
 * clone(CLONE_NEWUSER | CLONE_NEWIPC) child: the new IPC namespace belongs
 * to the new user namespace, where B is root with every capability, so B
 * passes the checks that take a capability over it, may write its sysctls,
 * and sees its own ids as 0.  A second unshare(CLONE_NEWIPC) there makes
 * another such namespace (under uipc: made anew in place). */

/* write the maps of a user namespace entered just now: uid and gid 0
 * inside are UID and GID outside */
static void write_maps(uid_t uid, gid_t gid)
{
	char map[64];

	write_file("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "0 %d 1", (int)uid);
	write_file("/proc/self/uid_map", map);
	snprintf(map, sizeof(map), "0 %d 1", (int)gid);
	write_file("/proc/self/gid_map", map);
}

/* what root of the user namespace that owns the IPC namespace may do */
static void probe_owned(void)
{
	int q = msgget(IPC_PRIVATE, 0600), s = dt_semget(IPC_PRIVATE, 1, 0600);
	struct msqid_ds mds;
	int fd;

	dt_out("uid %d gid %d", (int)getuid(), (int)getgid());
	SHOW("msgctl(IPC_STAT)", msgctl(q, IPC_STAT, &mds));
	dt_out("  uid=%d gid=%d cuid=%d cgid=%d", (int)mds.msg_perm.uid, (int)mds.msg_perm.gid,
	       (int)mds.msg_perm.cuid, (int)mds.msg_perm.cgid);
	/* over msgmnb: capable(CAP_SYS_RESOURCE), in the initial user
	 * namespace only (not over the IPC namespace's owner) */
	mds.msg_qbytes = 1 << 20;
	SHOW("msgctl(IPC_SET, qbytes 1 MiB)", msgctl(q, IPC_SET, &mds));
	msgctl(q, IPC_STAT, &mds);
	mds.msg_perm.uid = 5;                          /* no mapping: EINVAL */
	SHOW("msgctl(IPC_SET, uid 5)", msgctl(q, IPC_SET, &mds));
	dt_ipcset(s, 0, 0, 0);                         /* mode 0: CAP_IPC_OWNER still reads */
	dt_get(s, 0, GETVAL);
	dt_stat(s, IPC_STAT);
	fd = open("/proc/sys/kernel/msgmni", O_WRONLY);
	dt_out("open(/proc/sys/kernel/msgmni, O_WRONLY) = %s", dt_res(fd < 0 ? -1 : 0, errno));
	if (fd >= 0) {
		SHOW("write(msgmni, 100)", write(fd, "100", 3));
		close(fd);
	}
	msgctl(q, IPC_RMID, NULL);
	dt_rmid(s);
}

static void userns_ipc_once(void *arg)
{
	(void)arg;
	dt_drop_privs(1001, 1001, 1001);
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	if (unshare(CLONE_NEWUSER | CLONE_NEWIPC) < 0) {
		dt_fail("unshare(CLONE_NEWUSER | CLONE_NEWIPC): %s", strerror(errno));
		exit(1);
	}
	write_maps(1001, 1001);
	probe_owned();
	SHOW("unshare(CLONE_NEWIPC)", unshare(CLONE_NEWIPC));
	probe_owned();
	exit(dt_exit_code);
}

static void userns_ipc_later(void *arg)
{
	(void)arg;
	enter_userns(1001, 1001);
	SHOW("unshare(CLONE_NEWIPC)", unshare(CLONE_NEWIPC));
	probe_owned();
	SHOW("unshare(CLONE_NEWIPC)", unshare(CLONE_NEWIPC));
	probe_owned();
	exit(dt_exit_code);
}

static char clone_stack[256 << 10] __attribute__((aligned(16)));

static int cloned(void *arg)
{
	(void)arg;
	write_maps(1001, 1001);
	probe_owned();
	fflush(stdout);
	return dt_exit_code;
}

static void userns_ipc_clone(void *arg)
{
	pid_t pid;
	int st;

	(void)arg;
	dt_drop_privs(1001, 1001, 1001);
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	pid = clone(cloned, clone_stack + sizeof(clone_stack),
		    CLONE_NEWUSER | CLONE_NEWIPC | SIGCHLD, NULL);
	if (pid < 0 || waitpid(pid, &st, 0) != pid) {
		dt_fail("clone(CLONE_NEWUSER | CLONE_NEWIPC): %s", strerror(errno));
		exit(1);
	}
	dt_out("the clone child: %s", WIFEXITED(st) ? "exited" : "killed");
	exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
}

static void ipc_owned_by_userns(int argc, char **argv)
{
	(void)argc, (void)argv;
	dt_wait(dt_fork(userns_ipc_once, NULL));
	dt_wait(dt_fork(userns_ipc_later, NULL));
	dt_wait(dt_fork(userns_ipc_clone, NULL));
}

const struct dt_case dt_cases[] = {
	{ "unshare-r", unshare_r, 0 },
	{ "own-inside", own_inside, 0 },
	{ "ipc-owned-by-userns", ipc_owned_by_userns, 0 },
	{ NULL, NULL, 0 },
};
