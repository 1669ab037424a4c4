/*
 * shm_get.c - shmget(): size rules (0, SHMMIN, SHMMAX, larger than an
 * existing key's size, 0 opening an existing key), IPC_CREAT/IPC_EXCL,
 * keys and IPC_PRIVATE, segsz as requested, shm_tot in pages against
 * shmall, shmmni, shmmax as sysctls, IPC_INFO/SHM_INFO after each step.
 */
#include "dt.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

static void sizes(int argc, char **argv)
{
	(void)argc, (void)argv;
	dt_shmget(IPC_PRIVATE, 0, 0600);
	int a = dt_shmget(IPC_PRIVATE, 1, 0600);
	int b = dt_shmget(IPC_PRIVATE, 4095, 0600);
	int c = dt_shmget(IPC_PRIVATE, 4097, 0640);
	int d = dt_shmget(IPC_PRIVATE, 1 << 20, 0600);
	dt_shmget(IPC_PRIVATE, SIZE_MAX, 0600);
	dt_shmget(IPC_PRIVATE, SIZE_MAX - 4000, 0600);
	dt_shmget(IPC_PRIVATE, (size_t)1 << 62, IPC_CREAT | 0600);
	dt_shmget(0x1234, SIZE_MAX, 0600);
	dt_shmstat(a, IPC_STAT);
	dt_shmstat(b, IPC_STAT);
	dt_shmstat(c, IPC_STAT);
	dt_shmstat(d, IPC_STAT);
	dt_shminfo(SHM_INFO);
	dt_shminfo(IPC_INFO);
	dt_shmctl(a, IPC_RMID);
	dt_shmctl(b, IPC_RMID);
	dt_shmctl(c, IPC_RMID);
	dt_shmctl(d, IPC_RMID);
	dt_shminfo(SHM_INFO);
}

static void keys(int argc, char **argv)
{
	(void)argc, (void)argv;
	dt_shmget(0x5000, 100, 0600);
	int a = dt_shmget(0x5000, 100, IPC_CREAT | 0600);
	dt_shmget(0x5000, 100, IPC_CREAT | 0600);
	dt_shmget(0x5000, 100, IPC_CREAT | IPC_EXCL | 0600);
	dt_shmget(0x5000, 0, 0);
	dt_shmget(0x5000, 50, 0);
	dt_shmget(0x5000, 101, 0);
	dt_shmget(0x5000, 101, IPC_CREAT | 0600);
	dt_shmget(0x5000, 4096, IPC_CREAT);
	dt_shmget(0x5000, SIZE_MAX, 0);
	dt_shmget(0x5001, 0, IPC_CREAT | 0600);
	int b = dt_shmget(0x5001, 10, IPC_CREAT | 0666);
	dt_shmget(-1, 10, IPC_CREAT | 0600);
	dt_shmstat(a, IPC_STAT);
	dt_shmstat(b, IPC_STAT);
	dt_shmctl(a, IPC_RMID);
	dt_shmget(0x5000, 0, 0);
	dt_shmget(0x5000, 10, IPC_CREAT | 0600);
	dt_shmctl(b, IPC_RMID);
	dt_shminfo(SHM_INFO);
	int c = shmget(0x5000, 0, 0);
	if (c >= 0)
		dt_shmctl(c, IPC_RMID);
}

static void limits(int argc, char **argv)
{
	(void)argc, (void)argv;
	dt_sysctl_set("kernel.shmmax", "8192");
	dt_shmget(IPC_PRIVATE, 8193, 0600);
	int a = dt_shmget(IPC_PRIVATE, 8192, 0600);
	dt_sysctl_set("kernel.shmall", "5");
	dt_shmget(IPC_PRIVATE, 8192, 0600);
	int b = dt_shmget(IPC_PRIVATE, 4096 * 3, 0600);
	dt_shmget(IPC_PRIVATE, 1, 0600);
	dt_shminfo(SHM_INFO);
	dt_shminfo(IPC_INFO);
	dt_shmctl(b, IPC_RMID);
	dt_sysctl_set("kernel.shmmni", "2");
	int c = dt_shmget(IPC_PRIVATE, 1, 0600);
	dt_shmget(IPC_PRIVATE, 1, 0600);
	dt_shminfo(IPC_INFO);
	dt_shmctl(a, IPC_RMID);
	dt_shmctl(c, IPC_RMID);
}

static void flags(int argc, char **argv)
{
	(void)argc, (void)argv;
	/* SHM_NORESERVE lets a segment larger than memory through */
	int a = dt_shmget(IPC_PRIVATE, (size_t)1 << 50, SHM_NORESERVE | 0600);
	dt_shmget(IPC_PRIVATE, (size_t)1 << 50, 0600);
	dt_shmget(IPC_PRIVATE, 4096, SHM_HUGETLB | 0600);
	dt_shmget(IPC_PRIVATE, 4096, 0777 | 01000 | 02000 | 0100000);
	dt_shminfo(SHM_INFO);
	int b = shmget(IPC_PRIVATE, 4096, 0777 | 01000 | 02000);
	dt_shmstat(b, IPC_STAT);
	if (a >= 0)
		dt_shmctl(a, IPC_RMID);
	dt_shmctl(b, IPC_RMID);
	int c = shmget(IPC_PRIVATE, 4096, 0600);
	if (c >= 0)
		dt_shmctl(c, IPC_RMID);
	dt_shminfo(SHM_INFO);
}

const struct dt_case dt_cases[] = {
	{ "flags", flags, 0 },
	{ "sizes", sizes, 0 },
	{ "keys", keys, 0 },
	{ "limits", limits, 0 },
	{ NULL, NULL, 0 },
};
