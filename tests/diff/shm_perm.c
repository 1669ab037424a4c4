/*
 * shm_perm.c - ipc_perm checks for shared memory.  Root creates segments
 * with various modes, owners and groups; a forked child drops to uid 1000,
 * gid 1000, supplementary group 2000 (losing every capability) and tries
 * shmget with requested modes, shmat read-only / read-write / exec,
 * IPC_STAT, SHM_STAT vs SHM_STAT_ANY, the INFO commands, IPC_SET and
 * IPC_RMID (owner, creator, others: EPERM), SHM_LOCK/SHM_UNLOCK (owner
 * without CAP_IPC_LOCK, others EPERM).  Also root's capabilities on mode 0.
 */
#include "dt.h"

#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct probe {
	key_t key;
	int id;
};
static struct probe P;

static void probe_ops(const struct probe *p)
{
	int id = p->id;
	dt_shmget(p->key, 0, 0);
	dt_shmget(p->key, 0, 0400);
	dt_shmget(p->key, 0, 0200);
	dt_shmget(p->key, 0, 0040);
	dt_shmget(p->key, 0, 0004);
	dt_shmget(p->key, 0, 0600);
	dt_shmget(p->key, 9999, 0600);               /* EINVAL before EACCES? */
	dt_shmstat(id, IPC_STAT);
	dt_shmstat(id & 0x7fff, SHM_STAT);
	dt_shmstat(id & 0x7fff, SHM_STAT_ANY);
	dt_shminfo(IPC_INFO);
	dt_shminfo(SHM_INFO);
	char *a = dt_shmat(id, NULL, SHM_RDONLY);
	char *b = dt_shmat(id, NULL, 0);
	char *c = dt_shmat(id, NULL, SHM_EXEC | SHM_RDONLY);
	char *d = dt_shmat(id, NULL, SHM_EXEC);
	dt_shmat(id, (void *)1, 0);                  /* EINVAL before EACCES */
	if (a != (void *)-1)
		dt_shmdt(a, "a");
	if (b != (void *)-1)
		dt_shmdt(b, "b");
	if (c != (void *)-1)
		dt_shmdt(c, "c");
	if (d != (void *)-1)
		dt_shmdt(d, "d");
	dt_shmctl(id, SHM_LOCK);
	dt_shmctl(id, SHM_UNLOCK);
	dt_shmset(id, 1000, 1000, 0666);
	dt_shmctl(id, IPC_RMID);
}

static void as_user(void *arg)
{
	(void)arg;
	dt_drop_privs(1000, 1000, 2000);
	probe_ops(&P);
}

static void run_probe(key_t key, int mode, uid_t uid, gid_t gid)
{
	dt_out("--- key %s mode 0%o owner %d:%d", dt_key(key), (unsigned)mode, (int)uid, (int)gid);
	P.key = key;
	P.id = dt_shmget(key, 4096, IPC_CREAT | IPC_EXCL | mode);
	if (uid || gid)
		dt_shmset(P.id, uid, gid, (unsigned)mode);
	dt_wait(dt_fork(as_user, NULL));
	dt_shmstat(P.id, IPC_STAT);
	if (shmctl(P.id, IPC_RMID, NULL) == 0)
		dt_out("removed by root");
}

static void others(int argc, char **argv)
{
	(void)argc, (void)argv;
	run_probe(0x900, 0600, 0, 0);
	run_probe(0x901, 0644, 0, 0);
	run_probe(0x902, 0666, 0, 0);
	run_probe(0x903, 0604, 0, 0);
	run_probe(0x904, 0777, 0, 0);
	run_probe(0x905, 0606, 0, 0);
}

static void groups(int argc, char **argv)
{
	(void)argc, (void)argv;
	run_probe(0x910, 0640, 0, 1000);
	run_probe(0x911, 0660, 0, 2000);
	run_probe(0x912, 0670, 0, 2000);
	run_probe(0x913, 0606, 0, 1000);
}

static void owner(int argc, char **argv)
{
	(void)argc, (void)argv;
	run_probe(0x920, 0600, 1000, 0);
	run_probe(0x921, 0400, 1000, 0);
	run_probe(0x922, 0000, 1000, 5);
	run_probe(0x923, 0700, 1000, 0);
}

static void nolock(void *arg)
{
	(void)arg;
	struct rlimit rl = { 0, 0 };
	setrlimit(RLIMIT_MEMLOCK, &rl);
	dt_drop_privs(1000, 1000, 2000);
	dt_shmctl(P.id, SHM_LOCK);
	dt_shmctl(P.id, SHM_UNLOCK);
	rl.rlim_cur = rl.rlim_max = 0;
	dt_shmstat(P.id, IPC_STAT);
}

static void rootcaps(int argc, char **argv)
{
	(void)argc, (void)argv;
	int id = dt_shmget(0x930, 4096, IPC_CREAT | 0000);
	dt_shmget(0x930, 0, 0600);
	char *p = dt_shmat(id, NULL, SHM_EXEC);
	dt_shmdt(p, "p");
	dt_shmstat(id, IPC_STAT);
	dt_shmctl(id, SHM_LOCK);
	dt_shmset(id, 1000, 1000, 0600);
	P.id = id;
	dt_wait(dt_fork(nolock, NULL));
	dt_shmctl(id, SHM_UNLOCK);
	dt_shmctl(id, IPC_RMID);
}

const struct dt_case dt_cases[] = {
	{ "others", others, 0 },
	{ "groups", groups, 0 },
	{ "owner", owner, 0 },
	{ "rootcaps", rootcaps, 0 },
	{ NULL, NULL, 0 },
};
