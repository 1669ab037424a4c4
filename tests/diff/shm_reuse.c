/*
 * shm_reuse.c - segments made and removed in a row, as programs do: a new
 * segment is all zeros whatever was removed before it (uipc makes new
 * segments from the emptied files of removed ones), has its own size,
 * mode and id, and stale ids of removed segments stay dead; across
 * processes (the remover and the creator in different processes, a last
 * detach in a child destroying), with sizes from 1 byte to 1 MiB.
 */
#include "dt.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const size_t sizes[] = { 1, 100, 4096, 4097, 8192, 65536, 300000, 1 << 20 };

/* bytes of [p, p+len) that are not zero */
static size_t nonzero(const char *p, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += p[i] != 0;
	return n;
}

/* a new segment of SIZE: its stat, then the non-zero bytes of its whole
 * last page; then filled with FILL (left for whoever comes next) */
static int fresh(key_t key, size_t size, int mode, char fill)
{
	int id = dt_shmget(key, size, IPC_CREAT | IPC_EXCL | mode);
	size_t len = (size + 4095) & ~(size_t)4095;
	char *p;

	if (id < 0)
		return id;
	dt_shmstat(id, IPC_STAT);
	p = dt_shmat(id, NULL, 0);
	if (p == (void *)-1)
		return id;
	dt_out("size %zu: %zu non-zero bytes of %zu", size, nonzero(p, len), len);
	memset(p, fill, len);
	dt_shmdt(p, "p");
	return id;
}

/* Many segments with data removed, then as many made again: zeros. */
static void burst(int argc, char **argv)
{
	int ids[DT_NELEM(sizes) * 3];
	size_t n = 0;

	(void)argc, (void)argv;
	for (int round = 0; round < 3; round++)
		for (size_t i = 0; i < DT_NELEM(sizes); i++)
			ids[n++] = fresh(round == 1 ? (key_t)(0x5100 + i) : IPC_PRIVATE,
					 sizes[i], 0600, (char)('a' + round));
	for (size_t i = 0; i < n; i++)
		dt_shmctl(ids[i], IPC_RMID);
	n = 0;
	for (int round = 0; round < 3; round++)
		for (size_t i = 0; i < DT_NELEM(sizes); i++)
			ids[n++] = fresh(IPC_PRIVATE, sizes[DT_NELEM(sizes) - 1 - i],
					 round ? 0640 : 0666, 'z');
	for (size_t i = 0; i < n; i++)
		dt_shmctl(ids[i], IPC_RMID);
	dt_shminfo(SHM_INFO);
}

/* Create, fill, remove, many times in a row: each new one is zeros; the
 * removed one's id stays dead (as attach, stat and remove tell). */
static void cycle(int argc, char **argv)
{
	int bad = 0, stale = 0, prev = -1;

	(void)argc, (void)argv;
	for (int i = 0; i < 300; i++) {
		size_t size = sizes[i % DT_NELEM(sizes)];
		int id = shmget(IPC_PRIVATE, size, IPC_CREAT | 0600);
		char *p = id >= 0 ? shmat(id, NULL, 0) : (void *)-1;
		struct shmid_ds ds;

		if (p == (void *)-1) {
			dt_out("cycle %d: %s", i, dt_res(-1, errno));
			break;
		}
		bad += nonzero(p, (size + 4095) & ~(size_t)4095) != 0;
		memset(p, 0x5a, size);
		shmdt(p);
		shmctl(id, IPC_RMID, NULL);
		if (prev >= 0) {
			stale += shmat(prev, NULL, 0) != (void *)-1 || errno != EINVAL;
			stale += shmctl(prev, IPC_STAT, &ds) == 0 || errno != EINVAL;
		}
		prev = id;
	}
	dt_out("300 cycles: %d segments not all zeros, %d stale ids answered", bad, stale);
	/* with an attachment left when removed (SHM_DEST), the last detach
	 * destroys */
	int id = dt_shmget(IPC_PRIVATE, 8192, 0600);
	char *p = dt_shmat(id, NULL, 0);
	memset(p, 'q', 8192);
	dt_shmctl(id, IPC_RMID);
	dt_shmstat(id, IPC_STAT);
	dt_shmdt(p, "p");
	dt_shmat(id, NULL, 0);
	dt_shmctl(fresh(IPC_PRIVATE, 8192, 0600, 'r'), IPC_RMID);
}

static int g_id;

/* a child fills the parent's segment, then makes its own from what the
 * parent removed */
static void child_make(void *arg)
{
	char *p = dt_shmat(g_id, NULL, 0);

	(void)arg;
	memset(p, 'c', 65536);
	dt_shmdt(p, "p");
	dt_shmctl(g_id, IPC_RMID);
	/* keyed, another size and mode: left for the parent */
	fresh(0x5200, 4096 * 3, 0604, 'k');
	fresh(0x5201, 1, 0660, 'l');
}

/* a child attached to a removed segment: its last detach (at its exit)
 * destroys it */
static void child_hold(void *arg)
{
	char *p = dt_shmat(g_id, NULL, 0);

	(void)arg;
	memset(p, 'h', 4096);
	dt_chan_send(0, 0, 0);
	pause();
}

static void cross(int argc, char **argv)
{
	struct dt_msg m;
	pid_t c;
	int k, l;

	(void)argc, (void)argv;
	g_id = dt_shmget(IPC_PRIVATE, 65536, 0600);
	dt_wait(dt_fork(child_make, NULL));
	dt_shmstat(g_id, IPC_STAT);
	k = dt_shmget(0x5200, 0, 0);
	l = dt_shmget(0x5201, 0, 0);
	dt_shmstat(k, IPC_STAT);
	dt_shmstat(l, IPC_STAT);
	{
		char *p = dt_shmat(k, NULL, SHM_RDONLY);

		size_t nk = 0;

		for (int i = 0; i < 12288; i++)
			nk += p[i] == 'k';
		dt_out("k: %zu bytes 'k' of 12288", nk);
		dt_shmdt(p, "k");
	}
	dt_shmctl(k, IPC_RMID);
	dt_shmctl(l, IPC_RMID);
	/* the parent's new segments come from the child's removed ones */
	dt_shmctl(fresh(IPC_PRIVATE, 12288, 0600, 'x'), IPC_RMID);
	dt_shmctl(fresh(IPC_PRIVATE, 1 << 20, 0600, 'y'), IPC_RMID);

	g_id = dt_shmget(IPC_PRIVATE, 4096, 0600);
	c = dt_fork(child_hold, NULL);
	if (dt_chan_recv(&m) == 0)
		dt_out("child attached");
	dt_shmctl(g_id, IPC_RMID);
	dt_shmstat(g_id, IPC_STAT);
	kill(c, SIGKILL);
	dt_wait(c);
	dt_shmstat(g_id, IPC_STAT);
	dt_shmctl(fresh(IPC_PRIVATE, 4096, 0600, 'w'), IPC_RMID);
	dt_shminfo(SHM_INFO);
}

const struct dt_case dt_cases[] = {
	{ "burst", burst, 0 },
	{ "cycle", cycle, 0 },
	{ "cross", cross, 0 },
	{ NULL, NULL, 0 },
};
