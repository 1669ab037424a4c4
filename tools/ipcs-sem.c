/*
 * tools/ipcs-sem.c - the semaphore part of `uipc ipcs`: the list (-s with
 * the default, -c, -t, -p formats), limits (-l), summary (-u) and the details
 * of one array (-s -i ID), through uipc_semctl().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "uipc.h"
#include "cmd.h"
#include "ipcs.h"

#define SEMVMX_VALUE 32767	/* ipcs prints the constant, as the kernel's */

struct sem_elem {
	int val, ncnt, zcnt, pid;
};

static int sem_stat_cmd = SEM_STAT_ANY;

/* SEM_STAT_ANY of index idx; SEM_STAT where _ANY is not known. */
static int sem_stat(int idx, struct semid_ds *ds)
{
	union semun arg = { .buf = ds };
	int id = uipc_semctl(idx, 0, sem_stat_cmd, arg);

	if (id < 0 && errno == EINVAL && sem_stat_cmd == SEM_STAT_ANY) {
		id = uipc_semctl(idx, 0, SEM_STAT, arg);
		if (id >= 0)
			sem_stat_cmd = SEM_STAT;
	}
	return id;
}

static int sem_info(int cmd, struct seminfo *si)
{
	union semun arg = { .__buf = si };

	return uipc_semctl(0, 0, cmd, arg);
}

static void sem_limits(void)
{
	struct seminfo si;

	if (sem_info(IPC_INFO, &si) < 0) {
		ipcs_report("semaphore limits", errno);
		printf("unable to fetch semaphore limits\n");
		return;
	}
	printf("------ Semaphore Limits --------\n");
	printf("max number of arrays = %d\n", si.semmni);
	printf("max semaphores per array = %d\n", si.semmsl);
	printf("max semaphores system wide = %d\n", si.semmns);
	printf("max ops per semop call = %d\n", si.semopm);
	printf("semaphore max value = %u\n", SEMVMX_VALUE);
}

static void sem_status(void)
{
	struct seminfo si;

	if (sem_info(SEM_INFO, &si) < 0) {
		ipcs_report("semaphores", errno);
		printf("kernel not configured for semaphores\n");
		return;
	}
	printf("------ Semaphore Status --------\n");
	printf("used arrays = %d\n", si.semusz);
	printf("allocated semaphores = %d\n", si.semaem);
}

static void sem_header(enum ipcs_format fmt)
{
	switch (fmt) {
	case FMT_CREATOR:
		printf("------ Semaphore Arrays Creators/Owners --------\n");
		printf("%-10s %-10s %-10s %-10s %-10s %-10s\n",
		       "semid", "perms", "cuid", "cgid", "uid", "gid");
		break;
	case FMT_TIME:
		printf("------ Semaphore Operation/Change Times --------\n");
		printf("%-8s %-10s %-26.24s %-26.24s\n",
		       "semid", "owner", "last-op", "last-changed");
		break;
	default:
		printf("------ Semaphore Arrays --------\n");
		printf("%-10s %-10s %-10s %-10s %-10s\n",
		       "key", "semid", "owner", "perms", "nsems");
		break;
	}
}

static void sem_row(enum ipcs_format fmt, int id, const struct semid_ds *ds)
{
	char b1[32], b2[32];

	switch (fmt) {
	case FMT_CREATOR:
		ipcs_print_creator(id, &ds->sem_perm);
		break;
	case FMT_TIME:
		ipcs_print_id_owner(8, id, ds->sem_perm.uid);
		printf("  %-26.24s", ipcs_time(ds->sem_otime, b1));
		printf(" %-26.24s\n", ipcs_time(ds->sem_ctime, b2));
		break;
	default:
		printf("0x%08x ", (unsigned)ds->sem_perm.__key);
		ipcs_print_id_owner(10, id, ds->sem_perm.uid);
		printf(" %-10o %-10ju\n", ds->sem_perm.mode & 0777,
		       (uintmax_t)ds->sem_nsems);
		break;
	}
}

void ipcs_sem_list(enum ipcs_format fmt)
{
	struct seminfo si;
	struct semid_ds ds;
	int idx, id, maxidx;

	if (fmt == FMT_LIMITS) {
		sem_limits();
		return;
	}
	if (fmt == FMT_STATUS) {
		sem_status();
		return;
	}
	if (fmt == FMT_PID)	/* ipcs has no PID view of semaphores */
		return;
	sem_header(fmt);
	maxidx = sem_info(SEM_INFO, &si);
	if (maxidx < 0) {
		ipcs_report("semaphores", errno);
		return;
	}
	for (idx = 0; idx <= maxidx; idx++) {
		id = sem_stat(idx, &ds);
		if (id >= 0)
			sem_row(fmt, id, &ds);
	}
}

/* Find array `id` as ipcs does (scan of all indexes); 1 found, 0 not, -1 error. */
static int sem_find(int id, struct semid_ds *ds)
{
	struct seminfo si;
	int idx, maxidx;

	maxidx = sem_info(SEM_INFO, &si);
	if (maxidx < 0) {
		ipcs_report("semaphores", errno);
		return -1;
	}
	for (idx = 0; idx <= maxidx; idx++)
		if (sem_stat(idx, ds) == id)
			return 1;
	return 0;
}

static int sem_get(int id, int num, int cmd, const char *name, int *out)
{
	union semun arg = { .val = 0 };

	*out = uipc_semctl(id, num, cmd, arg);
	if (*out < 0) {
		warnerr(errno, "semctl(%s) failed", name);
		return -1;
	}
	return 0;
}

static int sem_elements(int id, size_t nsems, struct sem_elem *e)
{
	size_t i;

	for (i = 0; i < nsems; i++) {
		if (sem_get(id, (int)i, GETVAL, "GETVAL", &e[i].val) ||
		    sem_get(id, (int)i, GETNCNT, "GETNCNT", &e[i].ncnt) ||
		    sem_get(id, (int)i, GETZCNT, "GETZCNT", &e[i].zcnt) ||
		    sem_get(id, (int)i, GETPID, "GETPID", &e[i].pid))
			return -1;
	}
	return 0;
}

static void sem_details(int id, const struct semid_ds *ds, const struct sem_elem *e)
{
	const struct ipc_perm *p = &ds->sem_perm;
	char b1[32], b2[32];
	size_t i;

	printf("\nSemaphore Array semid=%d\n", id);
	printf("uid=%u\t gid=%u\t cuid=%u\t cgid=%u\n", p->uid, p->gid, p->cuid, p->cgid);
	printf("mode=%#o, access_perms=%#o\n", p->mode, p->mode & 0777);
	printf("nsems = %ju\n", (uintmax_t)ds->sem_nsems);
	printf("otime = %-26.24s\n", ipcs_time(ds->sem_otime, b1));
	printf("ctime = %-26.24s\n", ctime_r(&ds->sem_ctime, b2) ? b2 : "");
	printf("%-10s %-10s %-10s %-10s %-10s\n",
	       "semnum", "value", "ncount", "zcount", "pid");
	for (i = 0; i < ds->sem_nsems; i++)
		printf("%-10zu %-10d %-10d %-10d %-10d\n",
		       i, e[i].val, e[i].ncnt, e[i].zcnt, e[i].pid);
	printf("\n");
}

int ipcs_sem_show(int id)
{
	struct semid_ds ds;
	struct sem_elem *e;
	int found;

	found = sem_find(id, &ds);
	if (found < 0)
		return 1;
	if (!found) {
		warnmsg("id %d not found", id);
		return 0;
	}
	e = calloc(ds.sem_nsems ? ds.sem_nsems : 1, sizeof(*e));
	if (!e) {
		warnerr(errno, "semaphore array %d: %lu semaphores", id,
			(unsigned long)ds.sem_nsems);
		return 1;
	}
	if (sem_elements(id, ds.sem_nsems, e) != 0) {
		free(e);
		return 1;
	}
	sem_details(id, &ds, e);
	free(e);
	return 0;
}
