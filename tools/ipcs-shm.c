/*
 * tools/ipcs-shm.c - the shared memory part of `uipc ipcs`: the list (-m
 * with the default, -c, -t, -p formats), limits (-l), summary (-u) and the
 * details of one segment (-m -i ID), through uipc_shmctl().
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "uipc.h"
#include "cmd.h"
#include "ipcs.h"

#define SHMMIN_VALUE 1	/* ipcs prints the constant, as the kernel's */

static int shm_stat_cmd = SHM_STAT_ANY;

/* SHM_STAT_ANY of index idx; SHM_STAT where _ANY is not known. */
static int shm_stat(int idx, struct shmid_ds *ds)
{
	int id = uipc_shmctl(idx, shm_stat_cmd, ds);

	if (id < 0 && errno == EINVAL && shm_stat_cmd == SHM_STAT_ANY) {
		id = uipc_shmctl(idx, SHM_STAT, ds);
		if (id >= 0)
			shm_stat_cmd = SHM_STAT;
	}
	return id;
}

static int shm_info_call(struct shm_info *si)
{
	return uipc_shmctl(0, SHM_INFO, (struct shmid_ds *)(void *)si);
}

/* shmall pages in the unit per page (bytes or KiB), saturating as ipcs does. */
static uint64_t shm_total(uint64_t shmall, uint64_t per_page)
{
	uint64_t tmp = shmall * per_page;

	if (shmall != 0 && tmp / shmall != per_page)
		tmp = UINT64_MAX - (UINT64_MAX % per_page);
	return tmp;
}

static void shm_limits(enum ipcs_unit unit)
{
	struct shminfo si;
	uint64_t pgsz = (uint64_t)getpagesize();

	if (uipc_shmctl(0, IPC_INFO, (struct shmid_ds *)(void *)&si) < 0) {
		ipcs_report("shared memory limits", errno);
		printf("unable to fetch shared memory limits\n");
		return;
	}
	printf("------ Shared Memory Limits --------\n");
	printf("max number of segments = %ju\n", (uintmax_t)si.shmmni);
	ipcs_print_size(unit == UNIT_DEFAULT ? UNIT_KB : unit, "max seg size",
			si.shmmax, "\n", 0);
	if (unit == UNIT_KB || unit == UNIT_DEFAULT)
		ipcs_print_size(UNIT_DEFAULT, "max total shared memory (kbytes)",
				shm_total(si.shmall, pgsz / 1024), "\n", 0);
	else
		ipcs_print_size(unit, "max total shared memory",
				shm_total(si.shmall, pgsz), "\n", 0);
	ipcs_print_size(unit == UNIT_DEFAULT ? UNIT_BYTES : unit, "min seg size",
			SHMMIN_VALUE, "\n", 0);
}

static void shm_status(void)
{
	struct shm_info si;

	if (shm_info_call(&si) < 0) {
		ipcs_report("shared memory", errno);
		printf("kernel not configured for shared memory\n");
		return;
	}
	printf("------ Shared Memory Status --------\n");
	printf("segments allocated %d\n"
	       "pages allocated %ld\n"
	       "pages resident  %ld\n"
	       "pages swapped   %ld\n"
	       "Swap performance: %ld attempts\t %ld successes\n",
	       si.used_ids, (long)si.shm_tot, (long)si.shm_rss, (long)si.shm_swp,
	       (long)si.swap_attempts, (long)si.swap_successes);
}

static void shm_header(enum ipcs_format fmt, enum ipcs_unit unit)
{
	switch (fmt) {
	case FMT_CREATOR:
		printf("------ Shared Memory Segment Creators/Owners --------\n");
		printf("%-10s %-10s %-10s %-10s %-10s %-10s\n",
		       "shmid", "perms", "cuid", "cgid", "uid", "gid");
		break;
	case FMT_TIME:
		printf("------ Shared Memory Attach/Detach/Change Times --------\n");
		printf("%-10s %-10s %-20s %-20s %-20s\n",
		       "shmid", "owner", "attached", "detached", "changed");
		break;
	case FMT_PID:
		printf("------ Shared Memory Creator/Last-op PIDs --------\n");
		printf("%-10s %-10s %-10s %-10s\n", "shmid", "owner", "cpid", "lpid");
		break;
	default:
		printf("------ Shared Memory Segments --------\n");
		printf("%-10s %-10s %-10s %-10s %-10s %-10s %-12s\n",
		       "key", "shmid", "owner", "perms",
		       unit == UNIT_HUMAN ? "size" : "bytes", "nattch", "status");
		break;
	}
}

static void shm_row(enum ipcs_format fmt, enum ipcs_unit unit, int id,
		    const struct shmid_ds *ds)
{
	char b[32];

	switch (fmt) {
	case FMT_CREATOR:
		ipcs_print_creator(id, &ds->shm_perm);
		break;
	case FMT_TIME:
		ipcs_print_id_owner(10, id, ds->shm_perm.uid);
		printf(" %-20.16s", ipcs_time_short(ds->shm_atime, b));
		printf(" %-20.16s", ipcs_time_short(ds->shm_dtime, b));
		printf(" %-20.16s\n", ipcs_time_short(ds->shm_ctime, b));
		break;
	case FMT_PID:
		ipcs_print_id_owner(10, id, ds->shm_perm.uid);
		printf(" %-10u %-10u\n", (unsigned)ds->shm_cpid, (unsigned)ds->shm_lpid);
		break;
	default:
		printf("0x%08x ", (unsigned)ds->shm_perm.__key);
		ipcs_print_id_owner(10, id, ds->shm_perm.uid);
		printf(" %-10o ", ds->shm_perm.mode & 0777);
		if (unit == UNIT_HUMAN)
			ipcs_print_size(unit, NULL, ds->shm_segsz, "    ", 6);
		else
			ipcs_print_size(unit, NULL, ds->shm_segsz, NULL, -10);
		printf(" %-10ju %-6s %-6s\n", (uintmax_t)ds->shm_nattch,
		       ds->shm_perm.mode & SHM_DEST ? "dest" : " ",
		       ds->shm_perm.mode & SHM_LOCKED ? "locked" : " ");
		break;
	}
}

void ipcs_shm_list(enum ipcs_format fmt, enum ipcs_unit unit)
{
	struct shm_info si;
	struct shmid_ds ds;
	int idx, id, maxidx;

	if (fmt == FMT_LIMITS) {
		shm_limits(unit);
		return;
	}
	if (fmt == FMT_STATUS) {
		shm_status();
		return;
	}
	shm_header(fmt, unit);
	maxidx = shm_info_call(&si);
	if (maxidx < 0) {
		ipcs_report("shared memory", errno);
		return;
	}
	for (idx = 0; idx <= maxidx; idx++) {
		id = shm_stat(idx, &ds);
		if (id >= 0)
			shm_row(fmt, unit, id, &ds);
	}
}

/* Find segment `id` by a scan of all indexes; 1 found, 0 not, -1 error. */
static int shm_find(int id, struct shmid_ds *ds)
{
	struct shm_info si;
	int idx, maxidx;

	maxidx = shm_info_call(&si);
	if (maxidx < 0) {
		ipcs_report("shared memory", errno);
		return -1;
	}
	for (idx = 0; idx <= maxidx; idx++)
		if (shm_stat(idx, ds) == id)
			return 1;
	return 0;
}

int ipcs_shm_show(int id, enum ipcs_unit unit)
{
	struct shmid_ds ds;
	const struct ipc_perm *p = &ds.shm_perm;
	char b[32];
	int found;

	found = shm_find(id, &ds);
	if (found < 0)
		return 1;
	if (!found) {
		warnmsg("id %d not found", id);
		return 0;
	}
	printf("\nShared memory Segment shmid=%d\n", id);
	printf("uid=%u\tgid=%u\tcuid=%u\tcgid=%u\n", p->uid, p->gid, p->cuid, p->cgid);
	printf("mode=%#o\taccess_perms=%#o\n", p->mode, p->mode & 0777);
	ipcs_print_size(unit, unit == UNIT_HUMAN ? "size=" : "bytes=",
			ds.shm_segsz, "\t", 0);
	printf("lpid=%u\tcpid=%u\tnattch=%jd\n", (unsigned)ds.shm_lpid,
	       (unsigned)ds.shm_cpid, (intmax_t)ds.shm_nattch);
	printf("att_time=%-26.24s\n", ipcs_time(ds.shm_atime, b));
	printf("det_time=%-26.24s\n", ipcs_time(ds.shm_dtime, b));
	printf("change_time=%-26.24s\n", ctime_r(&ds.shm_ctime, b) ? b : "");
	printf("\n");
	return 0;
}
