/*
 * sem_perm.c - ipc_perm checks for semaphores.  Root creates arrays with
 * various modes, owners and groups; a forked child drops to uid 1000,
 * gid 1000, supplementary group 2000 (losing every capability) and tries
 * every operation: semget with requested modes, the read commands, the
 * write commands, semop altering / waiting for zero, IPC_STAT, SEM_STAT
 * vs SEM_STAT_ANY, the INFO commands, IPC_SET and IPC_RMID by owner /
 * creator / others (EPERM), and how permission errors order against
 * EFBIG, E2BIG, ERANGE, EINVAL.  Also root's CAP_IPC_OWNER on mode 0, and
 * cuid vs uid after IPC_SET changed the owner.
 */
#include "dt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NW IPC_NOWAIT

struct probe {
	key_t key;
	int id;
	int rmid;      /* try IPC_RMID at the end */
};
static struct probe P;

static void probe_ops(const struct probe *p)
{
	int id = p->id;
	dt_semget(p->key, 0, 0);
	dt_semget(p->key, 0, 0400);
	dt_semget(p->key, 0, 0200);
	dt_semget(p->key, 0, 0040);
	dt_semget(p->key, 0, 0004);
	dt_semget(p->key, 0, 0600);
	dt_semget(p->key, 2, IPC_CREAT | 0666);
	dt_semget(p->key, 3, 0);                     /* EINVAL before EACCES? */
	dt_get(id, 0, GETVAL);
	dt_get(id, 0, GETPID);
	dt_get(id, 0, GETNCNT);
	dt_get(id, 0, GETZCNT);
	dt_get(id, 9, GETVAL);                        /* semnum vs perm */
	dt_getall(id);
	dt_stat(id, IPC_STAT);
	dt_stat(id & 0x7fff, SEM_STAT);
	dt_stat(id & 0x7fff, SEM_STAT_ANY);
	dt_info(IPC_INFO);
	dt_info(SEM_INFO);
	struct sembuf z = { 0, 0, NW };
	dt_semop(id, &z, 1);                          /* read: EAGAIN (val 1) */
	struct sembuf up = { 0, 1, NW };
	dt_semop(id, &up, 1);                         /* write */
	struct sembuf down = { 0, -1, NW };
	dt_semop(id, &down, 1);
	struct sembuf mix[2] = { { 1, 0, NW }, { 0, 1, NW } };
	dt_semop(id, mix, 2);                         /* write covers zero */
	struct sembuf fb = { 5, 1, NW };
	dt_semop(id, &fb, 1);                         /* EFBIG before EACCES */
	struct sembuf fbz = { 5, 0, NW };
	dt_semop(id, &fbz, 1);
	struct timespec bad = { 0, -1 };
	dt_semtimedop(id, &up, 1, &bad);
	dt_setval(id, 0, 40000);                      /* ERANGE first */
	dt_setval(id, 9, 1);                          /* semnum vs perm */
	dt_setval(id, 0, 1);
	unsigned short v[2] = { 1, 0 };
	dt_setall(id, v, 2);
	unsigned short vbad[2] = { 40000, 0 };
	dt_setall(id, vbad, 2);
	struct semid_ds ds;
	union semun u;
	u.buf = &ds;
	int r = semctl(id, 0, IPC_STAT, u);
	int e = errno;
	if (r == 0) {
		/* set what is there: allowed only to owner/creator */
		dt_ipcset(id, ds.sem_perm.uid, ds.sem_perm.gid, ds.sem_perm.mode);
	} else {
		dt_out("(IPC_STAT for IPC_SET: %s)", dt_res(r, e));
		dt_ipcset(id, 0, 0, 0600);
	}
	dt_ipcset(id + 1, 0, 0, 0600);                /* EINVAL before EPERM */
	dt_semctl_raw(id, 0, IPC_SET, NULL);          /* EFAULT before EPERM */
	if (p->rmid)
		dt_rmid(id);
}

static void child_probe(void *p)
{
	dt_drop_privs(1000, 1000, 2000);
	probe_ops(p);
	exit(dt_exit_code);
}

/* key, mode, then optional IPC_SET of uid/gid/mode */
static void variant(key_t key, unsigned int mode, int set, uid_t uid, gid_t gid,
		    unsigned int setmode, int rmid)
{
	dt_out("--- variant key %s mode 0%o%s", dt_key(key), mode, set ? " + IPC_SET" : "");
	int id = dt_semget(key, 2, IPC_CREAT | IPC_EXCL | (int)mode);
	dt_setval(id, 0, 1);
	if (set)
		dt_ipcset(id, uid, gid, setmode);
	dt_stat(id, IPC_STAT);
	P.key = key;
	P.id = id;
	P.rmid = rmid;
	pid_t c = dt_fork(child_probe, &P);
	dt_wait(c);
	dt_getall(id);
	dt_stat(id, IPC_STAT);
	dt_rmid(id);
}

static void modes(int argc, char **argv)
{
	(void)argc; (void)argv;
	const unsigned int m[] = { 0600, 0660, 0606, 0640, 0604, 0620, 0602,
				   0666, 0444, 0222, 0000, 0006, 0004, 0002 };
	for (size_t i = 0; i < DT_NELEM(m); i++)
		variant(0x8000 + (key_t)i, m[i], 0, 0, 0, 0, 1);
}

static void groups(int argc, char **argv)
{
	(void)argc; (void)argv;
	/* supplementary group 2000 */
	variant(0x8100, 0600, 1, 0, 2000, 0060, 1);
	variant(0x8101, 0600, 1, 0, 2000, 0040, 1);
	variant(0x8102, 0600, 1, 0, 2000, 0020, 1);
	variant(0x8103, 0600, 1, 0, 2000, 0006, 1);   /* group wins over other */
	/* the primary group 1000 */
	variant(0x8104, 0600, 1, 0, 1000, 0070, 1);
	variant(0x8105, 0600, 1, 0, 1000, 0007, 1);
	/* a group the child is not in */
	variant(0x8106, 0600, 1, 0, 3000, 0064, 1);
}

static void owners(int argc, char **argv)
{
	(void)argc; (void)argv;
	/* owner by uid (creator stays root) */
	variant(0x8200, 0600, 1, 1000, 0, 0600, 0);
	variant(0x8201, 0600, 1, 1000, 0, 0066, 0);   /* owner bits win */
	variant(0x8202, 0600, 1, 1000, 0, 0000, 1);   /* owner may remove */
	variant(0x8203, 0600, 1, 1001, 1000, 0070, 1);
}

/* the child creates; root then takes the ownership away */
static int created_id;
static void child_create(void *p)
{
	(void)p;
	dt_drop_privs(1000, 1000, 2000);
	created_id = dt_semget(0x8300, 2, IPC_CREAT | 0640);
	dt_stat(created_id, IPC_STAT);
	dt_setval(created_id, 0, 1);
	exit(dt_exit_code);
}

static void creator(int argc, char **argv)
{
	(void)argc; (void)argv;
	pid_t c = dt_fork(child_create, NULL);
	dt_wait(c);
	int id = dt_semget(0x8300, 0, 0);
	dt_stat(id, IPC_STAT);
	dt_ipcset(id, 0, 0, 0000);
	dt_stat(id, IPC_STAT);
	P.key = 0x8300;
	P.id = id;
	P.rmid = 0;
	c = dt_fork(child_probe, &P);
	dt_wait(c);
	dt_stat(id, IPC_STAT);
	/* creator can change it back and remove it */
	P.rmid = 1;
	c = dt_fork(child_probe, &P);
	dt_wait(c);
	dt_stat(id, IPC_STAT);
	dt_rmid(id);
}

/* root: CAP_IPC_OWNER and CAP_SYS_ADMIN override the mode and owner */
static void root_caps(int argc, char **argv)
{
	(void)argc; (void)argv;
	int id = dt_semget(0x8400, 2, IPC_CREAT | 0000);
	dt_setval(id, 0, 1);
	dt_ipcset(id, 1000, 1000, 0000);
	P.key = 0x8400;
	P.id = id;
	P.rmid = 1;
	probe_ops(&P);
	dt_stat(id, IPC_STAT);
}

/* the order of permission errors against argument errors */
static void child_order(void *p)
{
	int id = *(int *)p;
	dt_drop_privs(1000, 1000, 2000);
	static struct sembuf big[600];
	for (int i = 0; i < 600; i++) {
		big[i].sem_num = 0;
		big[i].sem_op = 1;
		big[i].sem_flg = NW;
	}
	dt_semop(id, big, 501);                       /* E2BIG */
	dt_semop(id, big, 0);                         /* EINVAL */
	dt_semop(id, NULL, 1);                        /* EFAULT */
	dt_semop(id, big, 2);                         /* EACCES */
	struct sembuf w = { 65535, 0, NW };
	dt_semop(id, &w, 1);                          /* EFBIG */
	struct timespec ts = { 0, 1000000000L };
	dt_semtimedop(id, big, 1, &ts);               /* EINVAL */
	dt_get(id, 2, GETNCNT);
	dt_get(id, -1, GETZCNT);
	dt_setval(id, -1, 1);
	dt_setval(id, 2, -1);
	dt_semctl_raw(id, 0, GETALL, NULL);
	dt_semctl_raw(id, 0, SETALL, NULL);
	dt_semctl_raw(id, 0, IPC_STAT, NULL);
	dt_semctl_raw(id & 0x7fff, 0, SEM_STAT, NULL);
	dt_semctl_raw(id & 0x7fff, 0, SEM_STAT_ANY, NULL);
	dt_semctl_raw(id, 0, 99, NULL);
	exit(dt_exit_code);
}

static void order(int argc, char **argv)
{
	(void)argc; (void)argv;
	static int id;
	id = dt_semget(0x8500, 2, IPC_CREAT | 0600);
	pid_t c = dt_fork(child_order, &id);
	dt_wait(c);
	dt_rmid(id);
}

const struct dt_case dt_cases[] = {
	{ "modes", modes, 0 },
	{ "groups", groups, 0 },
	{ "owners", owners, 0 },
	{ "creator", creator, 0 },
	{ "root-caps", root_caps, 0 },
	{ "order", order, 0 },
	{ NULL, NULL, 0 },
};
