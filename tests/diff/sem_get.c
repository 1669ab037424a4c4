/*
 * sem_get.c - semget(): IPC_PRIVATE always creates; key lookup (ENOENT,
 * EEXIST, reopening an existing key with smaller/zero/larger nsems);
 * the nsems checks (< 0, > semmsl even for an existing key, 0 on create);
 * the stored mode (flg & 0777); unusual keys; ENOSPC from semmni and
 * semmns (limits lowered through kernel.sem of the private namespace).
 */
#include "dt.h"

#include <errno.h>
#include <stdio.h>

static void private_keys(int argc, char **argv)
{
	(void)argc; (void)argv;
	int ids[6];
	/* IPC_CREAT / IPC_EXCL do not matter for IPC_PRIVATE */
	ids[0] = dt_semget(IPC_PRIVATE, 1, 0600);
	ids[1] = dt_semget(IPC_PRIVATE, 2, IPC_CREAT | 0640);
	ids[2] = dt_semget(IPC_PRIVATE, 3, IPC_CREAT | IPC_EXCL | 0666);
	ids[3] = dt_semget(IPC_PRIVATE, 1, 0);
	ids[4] = dt_semget(IPC_PRIVATE, 1, IPC_EXCL);
	ids[5] = dt_semget(IPC_PRIVATE, 250, 07777);
	/* IPC_PRIVATE with bad nsems */
	dt_semget(IPC_PRIVATE, 0, 0600);
	dt_semget(IPC_PRIVATE, -1, 0600);
	dt_semget(IPC_PRIVATE, 32001, 0600);
	dt_semget(IPC_PRIVATE, 32000, 0600 | IPC_CREAT);
	for (int i = 0; i < 6; i++)
		dt_stat(ids[i], IPC_STAT);
	dt_info(SEM_INFO);
	for (int i = 0; i < 6; i++)
		dt_rmid(ids[i]);
	int big = dt_semget(IPC_PRIVATE, 32000, 0600);
	dt_info(SEM_INFO);
	dt_rmid(big);
	dt_info(SEM_INFO);
}

static void key_lookup(int argc, char **argv)
{
	(void)argc; (void)argv;
	const key_t k = 0x1234;
	dt_semget(k, 3, 0600);                  /* ENOENT */
	dt_semget(k, 0, 0);                     /* ENOENT: nsems 0 is fine */
	dt_semget(k, -1, 0);                    /* EINVAL before ENOENT */
	dt_semget(k, 32001, 0);                 /* EINVAL before ENOENT */
	dt_semget(k, 0, IPC_CREAT | 0600);      /* EINVAL: create with 0 */
	int id = dt_semget(k, 3, IPC_CREAT | 0640);
	dt_stat(id, IPC_STAT);
	dt_semget(k, 3, IPC_CREAT | IPC_EXCL | 0600);   /* EEXIST */
	dt_semget(k, 0, IPC_EXCL | 0600);               /* no CREAT: opens */
	dt_semget(k, 4, IPC_CREAT | IPC_EXCL | 0600);   /* EEXIST before nsems */
	dt_semget(k, -1, IPC_CREAT | IPC_EXCL | 0600);  /* EINVAL first */
	dt_semget(k, 3, IPC_CREAT | 0600);
	dt_semget(k, 2, 0);
	dt_semget(k, 1, 0);
	dt_semget(k, 0, 0);
	dt_semget(k, 0, 0777);                  /* root: CAP_IPC_OWNER */
	dt_semget(k, 4, 0);                     /* larger than existing */
	dt_semget(k, 4, IPC_CREAT);
	dt_semget(k, -1, 0);
	dt_semget(k, 32001, IPC_CREAT);
	/* a second key, a third with odd flag bits */
	int id2 = dt_semget(0x1235, 1, IPC_CREAT | 0400);
	int id3 = dt_semget(0x1236, 2, IPC_CREAT | IPC_NOWAIT | 01777);
	dt_stat(id2, IPC_STAT);
	dt_stat(id3, IPC_STAT);
	/* removal frees the key */
	dt_rmid(id);
	dt_semget(k, 0, 0);
	int id4 = dt_semget(k, 1, IPC_CREAT | IPC_EXCL | 0600);
	dt_stat(id4, IPC_STAT);
	dt_semget(k, 2, 0);
	dt_rmid(id2);
	dt_rmid(id3);
	dt_rmid(id4);
	dt_semget(k, 0, 0);
}

static void odd_keys(int argc, char **argv)
{
	(void)argc; (void)argv;
	key_t keys[] = { 1, -1, 0x7fffffff, (key_t)0x80000000, -2, 0x00010000 };
	int ids[DT_NELEM(keys)];
	for (size_t i = 0; i < DT_NELEM(keys); i++)
		ids[i] = dt_semget(keys[i], (int)i + 1, IPC_CREAT | 0600);
	for (size_t i = 0; i < DT_NELEM(keys); i++) {
		dt_semget(keys[i], 0, 0);
		dt_stat(ids[i], IPC_STAT);
	}
	for (size_t i = 0; i < DT_NELEM(keys); i++)
		dt_rmid(ids[i]);
	for (size_t i = 0; i < DT_NELEM(keys); i++)
		dt_semget(keys[i], 0, 0);
}

static void semmsl(int argc, char **argv)
{
	(void)argc; (void)argv;
	int id = dt_semget(0x2000, 8, IPC_CREAT | 0600);
	dt_sysctl_set("kernel.sem", "5 1024000000 500 32000");
	dt_sysctl_get("kernel.sem");
	dt_info(IPC_INFO);
	int p = dt_semget(IPC_PRIVATE, 5, 0600);
	dt_semget(IPC_PRIVATE, 6, 0600);
	/* nsems > semmsl is EINVAL even when the key exists */
	dt_semget(0x2000, 6, 0);
	dt_semget(0x2000, 5, 0);
	dt_semget(0x2000, 0, 0);
	dt_semget(0x2000, 8, 0);
	dt_semget(0x2001, 6, IPC_CREAT | 0600);
	int q = dt_semget(0x2001, 5, IPC_CREAT | 0600);
	dt_stat(id, IPC_STAT);
	dt_rmid(id);
	dt_rmid(p);
	dt_rmid(q);
	dt_info(SEM_INFO);
}

static void semmni(int argc, char **argv)
{
	(void)argc; (void)argv;
	dt_sysctl_set("kernel.sem", "32000 1024000000 500 4");
	dt_sysctl_get("kernel.sem");
	int ids[6];
	for (int i = 0; i < 4; i++)
		ids[i] = dt_semget(0x3000 + i, 1, IPC_CREAT | 0600);
	dt_semget(IPC_PRIVATE, 1, 0600);                /* ENOSPC */
	dt_semget(0x3010, 1, IPC_CREAT | 0600);         /* ENOSPC */
	dt_semget(0x3010, 0, IPC_CREAT | 0600);         /* EINVAL first */
	dt_semget(0x3001, 1, IPC_CREAT | 0600);         /* existing: fine */
	dt_semget(0x3001, 1, IPC_CREAT | IPC_EXCL | 0600); /* EEXIST */
	dt_info(IPC_INFO);
	dt_info(SEM_INFO);
	dt_rmid(ids[1]);
	ids[4] = dt_semget(IPC_PRIVATE, 1, 0600);
	dt_semget(IPC_PRIVATE, 1, 0600);
	/* lowering below the count in use: nothing removed, no creation */
	dt_sysctl_set("kernel.sem", "32000 1024000000 500 2");
	dt_semget(IPC_PRIVATE, 1, 0600);
	dt_sysctl_set("kernel.sem", "32000 1024000000 500 0");
	dt_semget(IPC_PRIVATE, 1, 0600);
	dt_semget(0x3000, 1, 0);
	/* semmni above IPCMNI is refused; the other values of that write? */
	dt_sysctl_set("kernel.sem", "250 32000 32 40000");
	dt_sysctl_get("kernel.sem");
	dt_sysctl_set("kernel.sem", "32000 1024000000 500 5");
	dt_sysctl_get("kernel.sem");
	ids[5] = dt_semget(IPC_PRIVATE, 1, 0600);
	dt_semget(IPC_PRIVATE, 1, 0600);
	dt_info(SEM_INFO);
	dt_rmid(ids[0]);
	dt_rmid(ids[2]);
	dt_rmid(ids[3]);
	dt_rmid(ids[4]);
	dt_rmid(ids[5]);
	dt_info(SEM_INFO);
}

static void semmns(int argc, char **argv)
{
	(void)argc; (void)argv;
	dt_sysctl_set("kernel.sem", "32000 10 500 32000");
	dt_sysctl_get("kernel.sem");
	int a = dt_semget(IPC_PRIVATE, 6, 0600);
	dt_semget(IPC_PRIVATE, 5, 0600);                /* ENOSPC */
	dt_semget(0x4000, 5, IPC_CREAT | 0600);         /* ENOSPC */
	int b = dt_semget(0x4000, 4, IPC_CREAT | 0600);
	dt_semget(IPC_PRIVATE, 1, 0600);                /* ENOSPC */
	dt_semget(0x4000, 4, IPC_CREAT | 0600);         /* existing: fine */
	dt_info(SEM_INFO);
	dt_info(IPC_INFO);
	dt_rmid(a);
	int c = dt_semget(IPC_PRIVATE, 6, 0600);
	dt_semget(IPC_PRIVATE, 1, 0600);
	dt_info(SEM_INFO);
	/* semmns below what is in use */
	dt_sysctl_set("kernel.sem", "32000 3 500 32000");
	dt_semget(IPC_PRIVATE, 1, 0600);
	dt_rmid(b);
	dt_semget(IPC_PRIVATE, 1, 0600);
	dt_rmid(c);
	int d = dt_semget(IPC_PRIVATE, 3, 0600);
	dt_semget(IPC_PRIVATE, 1, 0600);
	dt_info(SEM_INFO);
	dt_rmid(d);
	dt_info(SEM_INFO);
}

/* kernel.sem as text: partial, extra, odd values; and their effect */
static void sysctl_text(int argc, char **argv)
{
	(void)argc; (void)argv;
	static const char *const w[] = {
		"10 20", "1 2 3 4 5", " 250  32000 32 128 ", "-1 32000 32 128",
		"250 -5 32 128", "250 32000 -1 128", "250 32000 32 -1", "abc", " ",
		"250 32000 32 128 junk", "2147483647 2147483647 2147483647 32000",
		"0 0 0 0", "250\t32000\t32\t128\n", "32001 1 1 1", "5 5 5 2",
	};
	for (size_t i = 0; i < DT_NELEM(w); i++) {
		dt_sysctl_set("kernel.sem", "32000 1024000000 500 32000");
		dt_sysctl_set("kernel.sem", w[i]);
		dt_sysctl_get("kernel.sem");
		int a = dt_semget(IPC_PRIVATE, 1, 0600);
		int b = dt_semget(IPC_PRIVATE, 3, 0600);
		struct sembuf ops[2] = { { 0, 1, IPC_NOWAIT }, { 0, -1, IPC_NOWAIT } };
		if (a >= 0) {
			dt_semop(a, ops, 2);
			dt_rmid(a);
		}
		if (b >= 0)
			dt_rmid(b);
	}
	dt_sysctl_set("kernel.sem", "32000 1024000000 500 32000");
	dt_info(IPC_INFO);
}

const struct dt_case dt_cases[] = {
	{ "private", private_keys, 0 },
	{ "keys", key_lookup, 0 },
	{ "odd-keys", odd_keys, 0 },
	{ "semmsl", semmsl, 0 },
	{ "semmni", semmni, 0 },
	{ "semmns", semmns, 0 },
	{ "sysctl-text", sysctl_text, 0 },
	{ NULL, NULL, 0 },
};
