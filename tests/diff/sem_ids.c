/*
 * sem_ids.c - semaphore ids: cyclic index allocation over
 * max(in_use*3/2, 64), seq bumps when the index wraps, stale ids (old seq)
 * rejected with EINVAL after reuse, key reuse after removal, and
 * kernel.sem_next_id (one-shot, reset to -1, next free index above a used
 * one, seq taken from it, not consumed by lookups of existing keys).
 */
#include "dt.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* create + remove, printing the id only */
static int cycle_one(void)
{
	int id = semget(IPC_PRIVATE, 1, 0600);
	int e = errno;
	int r = semctl(id, 0, IPC_RMID);
	if (id < 0 || r < 0)
		dt_out("create/remove: %s / %s", dt_res(id, e), dt_res(r, errno));
	return id;
}

static void print_ids(const char *what, const int *ids, int n)
{
	char b[8192];
	size_t len = 0;
	for (int i = 0; i < n && len < sizeof b - 16; i++)
		len += (size_t)snprintf(b + len, sizeof b - len, "%s%d", i ? " " : "", ids[i]);
	b[len] = 0;
	dt_out("%s: %s", what, b);
}

static void cyclic(int argc, char **argv)
{
	(void)argc; (void)argv;
	int ids[200];
	for (int i = 0; i < 140; i++)
		ids[i] = cycle_one();
	print_ids("create/remove x140", ids, 140);
	/* hold 10, then cycle */
	int held[100];
	for (int i = 0; i < 10; i++)
		held[i] = semget(IPC_PRIVATE, 1, 0600);
	print_ids("held 10", held, 10);
	for (int i = 0; i < 70; i++)
		ids[i] = cycle_one();
	print_ids("create/remove x70", ids, 70);
	for (int i = 1; i < 10; i += 2)
		dt_rmid(held[i]);
	for (int i = 0; i < 70; i++)
		ids[i] = cycle_one();
	print_ids("create/remove x70", ids, 70);
	for (int i = 0; i < 10; i += 2)
		dt_rmid(held[i]);
	/* hold 80: the cycle grows to 120 */
	for (int i = 0; i < 80; i++)
		held[i] = semget(IPC_PRIVATE, 1, 0600);
	print_ids("held 80", held, 80);
	for (int i = 0; i < 130; i++)
		ids[i] = cycle_one();
	print_ids("create/remove x130", ids, 130);
	/* free the low half, allocate without removing */
	for (int i = 0; i < 40; i++)
		semctl(held[i], 0, IPC_RMID);
	for (int i = 0; i < 40; i++)
		held[i] = semget(IPC_PRIVATE, 1, 0600);
	print_ids("re-held 40", held, 40);
	dt_info(SEM_INFO);
	for (int i = 0; i < 80; i++)
		if (semctl(held[i], 0, IPC_RMID) < 0)
			dt_out("rmid %d: %s", held[i], dt_errname(errno));
	dt_info(SEM_INFO);
}

static void stale(int argc, char **argv)
{
	(void)argc; (void)argv;
	int first = dt_semget(0x7001, 2, IPC_CREAT | 0600);
	dt_setval(first, 1, 5);
	dt_rmid(first);
	/* the same key now gives a new id; the old one is dead */
	int second = dt_semget(0x7001, 2, IPC_CREAT | 0600);
	dt_get(first, 1, GETVAL);
	dt_get(second, 1, GETVAL);
	/* wrap the index around to the old one */
	int last = -1;
	for (int i = 0; i < 63; i++)
		last = cycle_one();
	dt_out("last cycled id %d", last);
	int third = dt_semget(IPC_PRIVATE, 1, 0600);
	dt_stat(third, IPC_STAT);
	struct sembuf op = { 0, 1, IPC_NOWAIT };
	dt_semop(third & 0x7fff, &op, 1);        /* seq 0: stale */
	dt_semop(third, &op, 1);
	dt_get(third - 32768, 0, GETVAL);
	dt_get(third + 32768, 0, GETVAL);
	dt_rmid(third - 32768);
	dt_ipcset(third - 32768, 0, 0, 0600);
	dt_stat(third - 32768, IPC_STAT);
	dt_get(third, 0, GETVAL);
	dt_rmid(second);
	dt_rmid(third);
	dt_rmid(third);
}

static void next_id(int argc, char **argv)
{
	(void)argc; (void)argv;
	dt_sysctl_get("kernel.sem_next_id");
	int a = dt_semget(IPC_PRIVATE, 1, 0600);
	dt_sysctl_set("kernel.sem_next_id", "10");
	dt_sysctl_get("kernel.sem_next_id");
	int b = dt_semget(IPC_PRIVATE, 1, 0600);
	dt_sysctl_get("kernel.sem_next_id");
	int c = dt_semget(IPC_PRIVATE, 1, 0600);  /* back to the cycle */
	dt_sysctl_set("kernel.sem_next_id", "10");
	int d = dt_semget(IPC_PRIVATE, 1, 0600);  /* 10 in use: next above */
	dt_sysctl_set("kernel.sem_next_id", "0");
	int e = dt_semget(IPC_PRIVATE, 1, 0600);
	dt_sysctl_set("kernel.sem_next_id", "98324"); /* seq 3, idx 20 */
	int f = dt_semget(0x7100, 1, IPC_CREAT | 0600);
	dt_stat(f, IPC_STAT);
	dt_stat(20, SEM_STAT);
	int g = dt_semget(IPC_PRIVATE, 1, 0600);  /* the cycle's seq is still 0 */
	/* lookups of an existing key and failed creations */
	dt_sysctl_set("kernel.sem_next_id", "50");
	dt_semget(0x7100, 1, IPC_CREAT | 0600);
	dt_sysctl_get("kernel.sem_next_id");
	dt_semget(0x7100, 1, IPC_CREAT | IPC_EXCL | 0600);
	dt_sysctl_get("kernel.sem_next_id");
	dt_semget(IPC_PRIVATE, 0, 0600);
	dt_sysctl_get("kernel.sem_next_id");
	dt_semget(0x7101, 1, 0600);               /* ENOENT */
	dt_sysctl_get("kernel.sem_next_id");
	dt_sysctl_set("kernel.sem", "32000 1024000000 500 7");
	dt_semget(IPC_PRIVATE, 1, 0600);          /* ENOSPC */
	dt_sysctl_get("kernel.sem_next_id");
	dt_sysctl_set("kernel.sem", "32000 1024000000 500 32000");
	int h = dt_semget(IPC_PRIVATE, 1, 0600);
	/* the edges */
	dt_sysctl_set("kernel.sem_next_id", "32767");
	int i = dt_semget(IPC_PRIVATE, 1, 0600);
	dt_sysctl_set("kernel.sem_next_id", "2147483647");
	int j = dt_semget(IPC_PRIVATE, 1, 0600);
	dt_stat(j, IPC_STAT);
	dt_sysctl_set("kernel.sem_next_id", "-1");
	dt_sysctl_get("kernel.sem_next_id");
	dt_sysctl_set("kernel.sem_next_id", "-2");
	dt_sysctl_get("kernel.sem_next_id");
	dt_sysctl_set("kernel.sem_next_id", "junk");
	dt_sysctl_get("kernel.sem_next_id");
	dt_sysctl_set("kernel.sem_next_id", "40000");  /* seq 1, idx 7232 */
	int k = dt_semget(IPC_PRIVATE, 1, 0600);
	int l = dt_semget(IPC_PRIVATE, 1, 0600);
	dt_info(IPC_INFO);
	dt_info(SEM_INFO);
	int all[] = { a, b, c, d, e, f, g, h, i, j, k, l };
	for (size_t n = 0; n < DT_NELEM(all); n++)
		dt_rmid(all[n]);
	dt_info(IPC_INFO);
}

/* the index in use when next_id points at it, many times in a row */
static void next_id_busy(int argc, char **argv)
{
	(void)argc; (void)argv;
	int ids[12];
	for (int n = 0; n < 12; n++) {
		dt_sysctl_set_quiet("kernel.sem_next_id", "3");
		ids[n] = semget(IPC_PRIVATE, 1, 0600);
	}
	print_ids("next_id=3 x12", ids, 12);
	dt_rmid(ids[4]);
	dt_rmid(ids[0]);
	dt_sysctl_set("kernel.sem_next_id", "3");
	dt_semget(IPC_PRIVATE, 1, 0600);
	dt_sysctl_set("kernel.sem_next_id", "1");
	dt_semget(IPC_PRIVATE, 1, 0600);
	dt_semget(IPC_PRIVATE, 1, 0600);
	for (int idx = 0; idx < 20; idx++) {
		struct semid_ds ds;
		union semun u;
		u.buf = &ds;
		int id = semctl(idx, 0, SEM_STAT_ANY, u);
		if (id >= 0)
			semctl(id, 0, IPC_RMID);
	}
	dt_info(SEM_INFO);
}

/* many keys: every lookup finds its own array, removal and re-creation
 * (printed as counts and checksums) */
static void many_keys(int argc, char **argv)
{
	(void)argc; (void)argv;
	enum { N = 3000 };
	static int id[N];
	unsigned long h = 0;
	int bad = 0;
	for (int i = 0; i < N; i++) {
		id[i] = semget((key_t)(i * 7919 + 1), 1 + i % 3, IPC_CREAT | IPC_EXCL | 0600);
		if (id[i] < 0)
			bad++;
		h = h * 31 + (unsigned)id[i];
	}
	dt_out("created %d, failures %d, ids #%lx", N, bad, h);
	dt_info(SEM_INFO);
	bad = 0;
	for (int k = 0; k < N; k++) {
		int i = (k * 1237) % N;
		if (semget((key_t)(i * 7919 + 1), 0, 0) != id[i])
			bad++;
	}
	dt_out("lookups that missed: %d", bad);
	for (int i = 0; i < N; i += 2)
		if (semctl(id[i], 0, IPC_RMID) < 0)
			bad++;
	int enoent = 0, found = 0;
	for (int i = 0; i < N; i++) {
		int r = semget((key_t)(i * 7919 + 1), 0, 0);
		if (r < 0 && errno == ENOENT)
			enoent++;
		else if (r == id[i])
			found++;
	}
	dt_out("after removing half: %d ENOENT, %d found, rmid failures %d",
	       enoent, found, bad);
	h = 0;
	for (int i = 0; i < N; i += 2) {
		id[i] = semget((key_t)(i * 7919 + 1), 2, IPC_CREAT | 0600);
		h = h * 31 + (unsigned)id[i];
	}
	dt_out("re-created, ids #%lx", h);
	dt_info(SEM_INFO);
	bad = 0;
	for (int i = 0; i < N; i++)
		if (semctl(id[i], 0, IPC_RMID) < 0)
			bad++;
	dt_out("removed all, failures %d", bad);
	dt_info(SEM_INFO);
}

const struct dt_case dt_cases[] = {
	{ "cyclic", cyclic, 0 },
	{ "stale", stale, 0 },
	{ "next-id", next_id, 0 },
	{ "next-id-busy", next_id_busy, 0 },
	{ "many-keys", many_keys, 0 },
	{ NULL, NULL, 0 },
};
