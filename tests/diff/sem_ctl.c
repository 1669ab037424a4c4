/*
 * sem_ctl.c - semctl(), every command: GETVAL GETALL GETPID GETNCNT GETZCNT
 * SETVAL SETALL IPC_STAT IPC_SET IPC_RMID IPC_INFO SEM_INFO SEM_STAT
 * SEM_STAT_ANY, with their error paths: negative id, unknown id, wrong seq,
 * semnum out of range, SETVAL ERANGE before the lookup, SETALL ERANGE,
 * unknown and negative commands, IPC_SET argument checks, SEM_STAT index
 * semantics, maxidx returned by the INFO commands, EFAULT for bad buffers.
 */
#include "dt.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>

static const int all_cmds[] = { GETVAL, GETALL, GETPID, GETNCNT, GETZCNT,
				SETVAL, SETALL, IPC_STAT, IPC_SET, IPC_RMID,
				IPC_INFO, SEM_INFO, SEM_STAT, SEM_STAT_ANY };

/* a valid argument for any command: a big buffer, value-like when read as
 * an int (SETVAL gets 0 from its first bytes... see below) */
static union {
	struct semid_ds ds;
	struct seminfo si;
	unsigned short arr[64];
} argbuf;

static int call_any(int id, int num, int cmd)
{
	if (cmd == SETVAL)
		return dt_setval(id, num, 1);
	if (cmd == IPC_STAT || cmd == SEM_STAT || cmd == SEM_STAT_ANY) {
		/* print only the outcome here, the fields are covered elsewhere */
		union semun a;
		memset(&argbuf, 0, sizeof argbuf);
		a.buf = &argbuf.ds;
		errno = 0;
		int r = semctl(id, num, cmd, a);
		int e = errno;
		dt_out("semctl(%d,%d,%s,buf) = %s", id, num, dt_cmdname(cmd), dt_res(r, e));
		return r;
	}
	if (cmd == IPC_SET)
		return dt_ipcset(id, 0, 0, 0600);
	if (cmd == SETALL) {
		unsigned short v[64];
		for (int i = 0; i < 64; i++)
			v[i] = 1;
		return dt_setall(id, v, 3);
	}
	if (cmd == GETALL)
		return dt_getall(id);
	if (cmd == IPC_INFO || cmd == SEM_INFO) {
		union semun a;
		memset(&argbuf, 0, sizeof argbuf);
		a.__buf = &argbuf.si;
		errno = 0;
		int r = semctl(id, num, cmd, a);
		int e = errno;
		dt_out("semctl(%d,%d,%s,buf) = %s", id, num, dt_cmdname(cmd), dt_res(r, e));
		return r;
	}
	if (cmd == IPC_RMID) {
		errno = 0;
		int r = semctl(id, num, cmd);
		dt_out("semctl(%d,%d,IPC_RMID) = %s", id, num, dt_res(r, errno));
		return r;
	}
	return dt_get(id, num, cmd);
}

/* every command with a bad id / semnum */
static void bad_ids(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 3, 0600);
	int gone = dt_semget(IPC_PRIVATE, 3, 0600);
	dt_rmid(gone);
	const int ids[] = { -1, INT_MIN, gone, a + 32768, a + 5, 40000 };
	for (size_t i = 0; i < DT_NELEM(ids); i++)
		for (size_t c = 0; c < DT_NELEM(all_cmds); c++)
			call_any(ids[i], 0, all_cmds[c]);
	/* semnum out of range / negative, for every command */
	const int nums[] = { 3, -1, 1000, INT_MIN };
	for (size_t i = 0; i < DT_NELEM(nums); i++)
		for (size_t c = 0; c < DT_NELEM(all_cmds); c++)
			if (all_cmds[c] != IPC_RMID && all_cmds[c] != SEM_STAT &&
			    all_cmds[c] != SEM_STAT_ANY)
				call_any(a, nums[i], all_cmds[c]);
	dt_dump(a, 3);
	/* SETVAL: the value's range is checked before the lookup */
	dt_setval(-1, 0, 40000);
	dt_setval(gone, 0, 40000);
	dt_setval(a, 99, 40000);
	dt_setval(a, 99, 1);
	dt_setval(a, -1, -1);
	dt_setval(a, 0, -1);
	dt_setval(a, 0, 32768);
	dt_setval(a, 0, INT_MIN);
	dt_setval(a, 0, INT_MAX);
	dt_setval(a, 0, 65536 + 5);
	dt_setval(a, 0, 32767);
	dt_setval(a, 2, 0);
	dt_getall(a);
	/* SEM_STAT takes an index: a full id is out of range */
	call_any(a, 0, SEM_STAT);
	call_any(a + 32768, 0, SEM_STAT);
	call_any(a, 0, IPC_RMID);
	call_any(a, 0, IPC_RMID);
}

static void values(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 4, 0600);
	dt_dump(a, 4);
	dt_setval(a, 1, 7);
	dt_setval(a, 3, 32767);
	dt_dump(a, 4);                      /* sempid of 1 and 3 set, otime 0 */
	unsigned short v1[4] = { 1, 2, 3, 4 };
	dt_setall(a, v1, 4);
	dt_dump(a, 4);                      /* every sempid set */
	unsigned short v2[4] = { 5, 32768, 6, 7 };
	dt_setall(a, v2, 4);                /* ERANGE, nothing changed */
	unsigned short v3[4] = { 9, 9, 9, 65535 };
	dt_setall(a, v3, 4);
	unsigned short v4[4] = { 32767, 0, 32767, 0 };
	dt_setall(a, v4, 4);
	dt_getall(a);
	/* SETALL reads exactly nsems values */
	unsigned short v5[8] = { 1, 1, 1, 1, 40000, 40000, 40000, 40000 };
	dt_setall(a, v5, 4);
	dt_getall(a);
	dt_rmid(a);
	/* a large array */
	int b = dt_semget(IPC_PRIVATE, 250, 0600);
	static unsigned short many[250];
	for (int i = 0; i < 250; i++)
		many[i] = (unsigned short)(i * 100);
	dt_setall(b, many, 250);
	dt_getall(b);
	dt_get(b, 249, GETVAL);
	dt_get(b, 250, GETVAL);
	dt_get(b, 249, GETPID);
	dt_rmid(b);
}

/* the largest array: SETALL/GETALL of 32000 values, ops on the last */
static void big_array(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 32000, 0600);
	static unsigned short v[32000];
	for (int i = 0; i < 32000; i++)
		v[i] = (unsigned short)((i * 7) % 32768);
	dt_setall(a, v, 32000);
	dt_getall(a);
	dt_get(a, 31999, GETVAL);
	dt_get(a, 32000, GETVAL);
	struct sembuf ops[3] = { { 31999, 1, IPC_NOWAIT }, { 0, 5, IPC_NOWAIT },
				 { 16000, -1, IPC_NOWAIT } };
	dt_semop(a, ops, 3);
	dt_getall(a);
	dt_get(a, 31999, GETPID);
	dt_get(a, 1, GETPID);
	dt_setval(a, 31999, 32767);
	dt_getall(a);
	dt_stat(a, IPC_STAT);
	dt_info(SEM_INFO);
	dt_semget(IPC_PRIVATE, 32000, 0600);    /* a second one still fits */
	dt_info(SEM_INFO);
	dt_rmid(a);
	dt_rmid(a + 1);
	dt_info(SEM_INFO);
}

static void stat_info(int argc, char **argv)
{
	(void)argc; (void)argv;
	/* empty namespace */
	dt_info(IPC_INFO);
	dt_info(SEM_INFO);
	dt_stat(0, SEM_STAT);
	dt_stat(0, SEM_STAT_ANY);
	dt_stat(0, IPC_STAT);
	int ids[5];
	ids[0] = dt_semget(IPC_PRIVATE, 1, 0600);
	ids[1] = dt_semget(0x5001, 2, IPC_CREAT | 0640);
	ids[2] = dt_semget(IPC_PRIVATE, 3, 0444);
	ids[3] = dt_semget(IPC_PRIVATE, 4, 0);
	dt_info(IPC_INFO);
	dt_info(SEM_INFO);
	dt_rmid(ids[1]);
	for (int i = -1; i < 6; i++) {
		dt_stat(i, SEM_STAT);
		dt_stat(i, SEM_STAT_ANY);
	}
	dt_info(IPC_INFO);
	dt_rmid(ids[3]);
	dt_info(IPC_INFO);                 /* maxidx goes down */
	dt_info(SEM_INFO);
	dt_rmid(ids[2]);
	dt_info(IPC_INFO);
	/* wrap the index so that seq grows; SEM_STAT returns the full id */
	for (int i = 0; i < 70; i++) {
		int t = semget(IPC_PRIVATE, 1, 0600);
		semctl(t, 0, IPC_RMID);
	}
	ids[4] = dt_semget(0x5002, 1, IPC_CREAT | 0600);
	dt_stat(ids[4], IPC_STAT);
	dt_stat(ids[4] & 0x7fff, SEM_STAT);
	dt_stat(ids[4] & 0x7fff, SEM_STAT_ANY);
	dt_stat(ids[4] & 0x7fff, IPC_STAT);
	dt_info(IPC_INFO);
	dt_info(SEM_INFO);
	/* semnum and junk ids are ignored by the INFO commands */
	union semun u;
	struct seminfo si;
	u.__buf = &si;
	errno = 0;
	int r = semctl(12345, 99, SEM_INFO, u);
	dt_out("semctl(12345,99,SEM_INFO) = %s", dt_res(r, errno));
	errno = 0;
	r = semctl(0, -5, IPC_INFO, u);
	dt_out("semctl(0,-5,IPC_INFO) = %s", dt_res(r, errno));
	dt_rmid(ids[0]);
	dt_rmid(ids[4]);
	dt_info(IPC_INFO);
	dt_info(SEM_INFO);
}

static void ipcset(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(0x6001, 2, IPC_CREAT | 0600);
	dt_stat(a, IPC_STAT);
	dt_ipcset(a, 1000, 2000, 0640);
	dt_stat(a, IPC_STAT);
	dt_ipcset(a, 0, 0, 07777);          /* only 0777 is kept */
	dt_stat(a, IPC_STAT);
	dt_ipcset(a, 0, 0, 0170000 | 0421);
	dt_stat(a, IPC_STAT);
	dt_ipcset(a, (uid_t)-1, 0, 0600);   /* invalid uid */
	dt_ipcset(a, 0, (gid_t)-1, 0600);   /* invalid gid */
	dt_stat(a, IPC_STAT);
	dt_ipcset(a, 65534, 65534, 0);
	dt_ipcset(a, 4294967294u, 12345, 0666);
	dt_stat(a, IPC_STAT);
	dt_ipcset(-1, 0, 0, 0600);
	dt_ipcset(a + 1, 0, 0, 0600);
	dt_ipcset(a + 32768, 0, 0, 0600);
	/* IPC_SET does not touch values, otime, nsems */
	dt_setval(a, 1, 4);
	dt_ipcset(a, 0, 0, 0600);
	dt_dump(a, 2);
	dt_rmid(a);
	dt_ipcset(a, 0, 0, 0600);
}

static void odd_cmds(int argc, char **argv)
{
	(void)argc; (void)argv;
	const int cmds[] = { -1, -2, -100, INT_MIN, 4, 5, 6, 7, 8, 9, 10, 21, 22,
			     99, 255, 1000, INT_MAX, 0x100 | IPC_STAT,
			     0x100 | GETVAL, 0x100 | SEM_INFO, 0x100 | IPC_RMID };
	int a = dt_semget(IPC_PRIVATE, 2, 0600);
	dt_setval(a, 0, 3);
	for (size_t i = 0; i < DT_NELEM(cmds); i++) {
		memset(&argbuf, 0, sizeof argbuf);
		dt_semctl_raw(a, 0, cmds[i], NULL);
		dt_get(a, 0, GETVAL);
		if (semctl(a, 0, GETVAL) == -1) {
			/* the command removed it: a new one for the next */
			a = dt_semget(IPC_PRIVATE, 2, 0600);
			dt_setval(a, 0, 3);
		}
	}
	/* the same commands on a negative id */
	for (size_t i = 0; i < DT_NELEM(cmds); i++)
		dt_semctl_raw(-1, 0, cmds[i], NULL);
	dt_rmid(a);
}

static void efault(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 3, 0600);
	int gone = dt_semget(IPC_PRIVATE, 3, 0600);
	dt_rmid(gone);
	void *bad[] = { NULL, dt_badpage, dt_ropage, (void *)24 };
	const int cmds[] = { IPC_STAT, SEM_STAT, SEM_STAT_ANY, IPC_SET, GETALL,
			     SETALL, IPC_INFO, SEM_INFO };
	for (size_t c = 0; c < DT_NELEM(cmds); c++)
		for (size_t b = 0; b < DT_NELEM(bad); b++) {
			int id = cmds[c] == SEM_STAT || cmds[c] == SEM_STAT_ANY ? 0 : a;
			dt_semctl_raw(id, 0, cmds[c], bad[b]);
		}
	/* with a removed or negative id: which error first? */
	for (size_t c = 0; c < DT_NELEM(cmds); c++) {
		dt_semctl_raw(gone, 0, cmds[c], dt_badpage);
		dt_semctl_raw(-1, 0, cmds[c], dt_badpage);
	}
	dt_semctl_raw(5, 0, SEM_STAT, dt_badpage);
	/* buffers that run into a PROT_NONE page */
	char *two = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mprotect(two + 4096, 4096, PROT_NONE);
	unsigned short *edge = (unsigned short *)(two + 4096 - 2 * sizeof(unsigned short));
	edge[0] = 7;
	edge[1] = 8;
	dt_opaque(edge, "EDGE(2 values)");
	dt_semctl_raw(a, 0, SETALL, edge);  /* needs 3 values: EFAULT */
	dt_getall(a);
	dt_semctl_raw(a, 0, GETALL, edge);  /* EFAULT */
	struct semid_ds *dsedge = (struct semid_ds *)(two + 4096 - 16);
	dt_opaque(dsedge, "EDGE(16 bytes)");
	dt_semctl_raw(a, 0, IPC_STAT, dsedge);
	dt_semctl_raw(a, 0, IPC_SET, dsedge);
	dt_semctl_raw(a, 0, IPC_INFO, dsedge);
	dt_dump(a, 3);
	dt_rmid(a);
}

const struct dt_case dt_cases[] = {
	{ "bad-ids", bad_ids, 0 },
	{ "values", values, 0 },
	{ "big-array", big_array, 0 },
	{ "stat-info", stat_info, 0 },
	{ "ipcset", ipcset, 0 },
	{ "odd-cmds", odd_cmds, 0 },
	{ "efault", efault, 0 },
	{ NULL, NULL, 0 },
};
