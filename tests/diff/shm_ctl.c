/*
 * shm_ctl.c - shmctl(), every command: IPC_STAT, IPC_SET, IPC_RMID,
 * IPC_INFO, SHM_INFO (used_ids, shm_tot, shm_rss in pages), SHM_STAT and
 * SHM_STAT_ANY (index semantics, full id returned), SHM_LOCK/SHM_UNLOCK
 * (SHM_LOCKED in the mode, pages locked), error paths: negative id and
 * command, unknown id, wrong sequence, unknown commands, EFAULT buffers,
 * IPC_SET argument checks, maxidx returned by the INFO commands.
 */
#include "dt.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

static void stat_cmds(int argc, char **argv)
{
	(void)argc, (void)argv;
	int a = dt_shmget(0x100, 3000, IPC_CREAT | 0640);
	int b = dt_shmget(IPC_PRIVATE, 9000, 0600);
	dt_shmstat(a, IPC_STAT);
	dt_shmstat(0, SHM_STAT);
	dt_shmstat(1, SHM_STAT);
	dt_shmstat(1, SHM_STAT_ANY);
	dt_shmstat(2, SHM_STAT);
	dt_shmstat(b, SHM_STAT);
	dt_shmstat(a + 32768, IPC_STAT);
	dt_shmstat(-1, IPC_STAT);
	dt_shmstat(77, IPC_STAT);
	dt_shminfo(IPC_INFO);
	dt_shminfo(SHM_INFO);
	char *p = shmat(b, NULL, 0);
	memset(p, 1, 5000);
	dt_shminfo(SHM_INFO);
	memset(p + 8192, 1, 10);
	dt_shminfo(SHM_INFO);
	shmdt(p);
	dt_shminfo(SHM_INFO);
	errno = 0;
	int r = shmctl(a, IPC_STAT, dt_badpage);
	dt_out("IPC_STAT to a bad page = %s", dt_res(r, errno));
	r = shmctl(a, IPC_STAT, dt_ropage);
	dt_out("IPC_STAT to a read-only page = %s", dt_res(r, errno));
	r = shmctl(a, IPC_SET, dt_badpage);
	dt_out("IPC_SET from a bad page = %s", dt_res(r, errno));
	r = shmctl(0, IPC_INFO, dt_badpage);
	dt_out("IPC_INFO to a bad page = %s", dt_res(r, errno));
	r = shmctl(0, SHM_INFO, dt_badpage);
	dt_out("SHM_INFO to a bad page = %s", dt_res(r, errno));
	dt_shmctl(a, 99);
	dt_shmctl(a, -1);
	dt_shmctl(-1, IPC_RMID);
	dt_shmctl(-5, IPC_INFO);
	dt_shmctl(a + 32768, IPC_RMID);
	dt_shmctl(a, IPC_RMID);
	dt_shmctl(a, IPC_RMID);
	dt_shminfo(IPC_INFO);
	dt_shmctl(b, IPC_RMID);
	dt_shminfo(IPC_INFO);
	dt_shminfo(SHM_INFO);
}

static void set_cmd(int argc, char **argv)
{
	(void)argc, (void)argv;
	int a = dt_shmget(IPC_PRIVATE, 100, 0600);
	dt_shmset(a, 1000, 2000, 0777 | 01000 | 02000);
	dt_shmstat(a, IPC_STAT);
	dt_shmset(a, (uid_t)-1, 0, 0600);
	dt_shmset(a, 0, (gid_t)-1, 0600);
	dt_shmset(a, 0, 0, 0);
	dt_shmstat(a, IPC_STAT);
	dt_shmset(a + 32768, 0, 0, 0600);
	dt_shmctl(a, IPC_RMID);
	dt_shmset(a, 0, 0, 0600);
}

static void lock_cmds(int argc, char **argv)
{
	(void)argc, (void)argv;
	int a = dt_shmget(IPC_PRIVATE, 5 * 4096, 0600);
	char *p = dt_shmat(a, NULL, 0);
	dt_shmctl(a, SHM_LOCK);
	dt_shmstat(a, IPC_STAT);
	dt_shmctl(a, SHM_LOCK);
	p[0] = 1;
	dt_shminfo(SHM_INFO);
	char *q = dt_shmat(a, NULL, 0);
	q[4096] = 1;
	dt_shminfo(SHM_INFO);
	dt_shmctl(a, SHM_UNLOCK);
	dt_shmstat(a, IPC_STAT);
	dt_shmctl(a, SHM_UNLOCK);
	dt_shmctl(a + 32768, SHM_LOCK);
	dt_shmctl(-1, SHM_LOCK);
	dt_shmctl(a, SHM_LOCK);
	dt_shmctl(a, IPC_RMID);
	dt_shmstat(a, IPC_STAT);
	dt_shmctl(a, SHM_UNLOCK);
	dt_shmstat(a, IPC_STAT);
	dt_shmdt(p, "p");
	dt_shmdt(q, "q");
	dt_shmstat(a, IPC_STAT);
	dt_shminfo(SHM_INFO);
}

const struct dt_case dt_cases[] = {
	{ "stat", stat_cmds, 0 },
	{ "set", set_cmd, 0 },
	{ "lock", lock_cmds, 0 },
	{ NULL, NULL, 0 },
};
