/*
 * shm_random.c - randomized shared memory sequences: `shm_random run SEED
 * [STEPS]` generates, from SEED, a sequence of calls: shmget with random
 * keys, sizes and flags, shmat with NULL or an address in a reserved
 * region (SHM_RND, SHM_REMAP, SHM_RDONLY, unaligned), shmdt of held,
 * inner, unaligned and unattached addresses, every shmctl command, writes
 * and reads through the attachments (the contents must agree), short
 * lived children (inheriting the attachments, detaching some, exiting
 * with exit or _exit, or killed), and shm_rmid_forced changes.  It prints
 * the transcript; at the end it dumps and removes every segment left.
 */
#include "dt.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

static uint64_t rng_state;

static uint64_t rnd64(void)
{
	/* splitmix64 */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int rnd(int n) { return (int)(rnd64() % (uint64_t)n); }

#define MAXIDS 16
#define MAXAT 32
#define REGION 64
static int ids[MAXIDS];
static int nids;
static const key_t keys[] = { IPC_PRIVATE, 0xa001, 0xa002, 0xa003 };
static const size_t sizes[] = { 0, 1, 100, 4096, 4097, 8192, 3 * 4096 + 7, 40000 };

struct at {
	char *p;
	size_t len;
	int id;
	int ro;
};
static struct at ats[MAXAT];
static int nats;
static char *region;

static void remember(int id)
{
	for (int i = 0; i < nids; i++)
		if (ids[i] == id)
			return;
	if (nids < MAXIDS)
		ids[nids++] = id;
	else
		ids[rnd(MAXIDS)] = id;
}

static int pick_id(void)
{
	if (!nids || rnd(10) == 0)
		return rnd(3) ? rnd(5) : -1;
	return ids[rnd(nids)];
}

/* keep every free page of the region reserved, so that no NULL attach
 * lands in it */
static void reserve(void)
{
	for (int i = 0; i < REGION; i++) {
		void *q = mmap(region + i * 4096, 4096, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (q != MAP_FAILED && q != region + i * 4096)
			munmap(q, 4096);
	}
}

static const char *where(const char *p)
{
	static char b[64];
	if (p >= region && p < region + REGION * 4096)
		snprintf(b, sizeof b, "region+%ld", (long)(p - region));
	else
		snprintf(b, sizeof b, "at%d", p != NULL);
	return b;
}

static void forget_range(char *p)
{
	for (int i = 0; i < nats; i++)
		if (ats[i].p == p) {
			ats[i] = ats[--nats];
			return;
		}
}

static void do_shmat(void)
{
	int id = pick_id();
	int flg = 0;
	char *addr = NULL;
	if (rnd(3) == 0)
		flg |= SHM_RDONLY;
	if (rnd(3) == 0) {
		addr = region + rnd(REGION - 11) * 4096; /* + 10 pages fit */
		if (rnd(4) == 0)
			addr += rnd(4096);
		if (rnd(2))
			flg |= SHM_RND;
		if (rnd(4))
			flg |= SHM_REMAP;
	} else if (rnd(20) == 0) {
		flg |= SHM_REMAP;
	}
	char *p = dt_shmat(id, addr, flg);
	if (p == (void *)-1)
		return;
	/* a remap over one of ours: the kernel may have cut it; forget any
	 * attachment that overlaps the new mapping (its rest stays attached,
	 * but its memory is no longer all there) */
	struct shmid_ds ds;
	size_t len = 0;
	if (shmctl(id, IPC_STAT, &ds) == 0)
		len = (ds.shm_segsz + 4095) & ~4095UL;
	for (int i = 0; i < nats;) {
		if (ats[i].p < p + len && ats[i].p + ats[i].len > p) {
			ats[i] = ats[--nats];
			continue;
		}
		i++;
	}
	if (nats < MAXAT)
		ats[nats++] = (struct at){ p, len, id, !!(flg & SHM_RDONLY) };
}

static void do_shmdt(void)
{
	int k = rnd(6);
	if (nats && k < 4) {
		int i = rnd(nats);
		char *p = ats[i].p;
		dt_shmdt(p, where(p));
		forget_range(p);
	} else if (nats && k == 4) {
		dt_shmdt(ats[rnd(nats)].p + 1, "unaligned");
	} else {
		char *p = region + rnd(REGION) * 4096;
		dt_shmdt(p, where(p));
		forget_range(p);
	}
	reserve();
}

static void do_mem(void)
{
	if (!nats)
		return;
	struct at *a = &ats[rnd(nats)];
	struct shmid_ds ds;
	if (shmctl(a->id, IPC_STAT, &ds) < 0)
		return;
	size_t off = (size_t)rnd((int)ds.shm_segsz);
	if (!a->ro) {
		char v = (char)('a' + rnd(26));
		a->p[off] = v;
		dt_out("write %c at %zu", v, off);
	}
	/* every attachment of the segment sees the same byte */
	for (int i = 0; i < nats; i++)
		if (ats[i].id == a->id && ats[i].p[off] != a->p[off])
			dt_out("MISMATCH at %zu", off);
	dt_out("read %d at %zu", a->p[off], off);
}

static void child_body(void *arg)
{
	int mode = (int)(intptr_t)arg;
	if (nats && rnd(2)) {
		dt_shmdt(ats[0].p, "inherited");
		forget_range(ats[0].p);
	}
	if (nids)
		dt_shmstat(ids[0], IPC_STAT);
	if (mode == 1)
		_exit(0);
	if (mode == 2) {
		dt_chan_send(0, 0, 0);
		for (;;)
			pause();
	}
}

static void do_child(void)
{
	int mode = rnd(3);
	uint64_t save = rng_state;
	pid_t c = dt_fork(child_body, (void *)(intptr_t)mode);
	rng_state = save;
	(void)rnd(2); /* the child's draw */
	if (mode == 2) {
		struct dt_msg m;
		dt_chan_recv(&m);
		kill(c, SIGKILL);
	}
	dt_wait(c);
}

static void step(void)
{
	int k = rnd(100);
	if (k < 14) {
		int id = dt_shmget(keys[rnd(4)], sizes[rnd(8)],
				   (rnd(3) ? IPC_CREAT : 0) | (rnd(4) ? 0 : IPC_EXCL) |
				   (rnd(5) ? 0600 : 0400));
		if (id >= 0)
			remember(id);
	} else if (k < 34) {
		do_shmat();
	} else if (k < 50) {
		do_shmdt();
	} else if (k < 62) {
		do_mem();
	} else if (k < 72) {
		int id = pick_id();
		dt_shmstat(rnd(4) ? id : (id & 0x7fff), rnd(4) ? IPC_STAT :
			   rnd(2) ? SHM_STAT : SHM_STAT_ANY);
	} else if (k < 78) {
		dt_shmctl(pick_id(), IPC_RMID);
	} else if (k < 81) {
		dt_shmset(pick_id(), 0, 0, rnd(2) ? 0600 : 0400);
	} else if (k < 84) {
		dt_shmctl(pick_id(), rnd(2) ? SHM_LOCK : SHM_UNLOCK);
	} else if (k < 88) {
		dt_shminfo(rnd(2) ? SHM_INFO : IPC_INFO);
	} else if (k < 96) {
		do_child();
	} else if (k < 98) {
		dt_sysctl_set("kernel.shm_rmid_forced", rnd(3) ? "0" : "1");
	} else {
		dt_shmctl(pick_id(), rnd(2) ? 77 : -3);
	}
}

static void run(int argc, char **argv)
{
	rng_state = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
	int steps = argc > 2 ? atoi(argv[2]) : 300;
	region = mmap(NULL, REGION * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (int i = 0; i < steps; i++)
		step();
	dt_sysctl_set_quiet("kernel.shm_rmid_forced", "0");
	dt_out("--- end");
	while (nats) {
		char *p = ats[0].p;
		dt_shmdt(p, where(p));
		forget_range(p);
	}
	struct shm_info si;
	int maxidx = shmctl(0, SHM_INFO, (struct shmid_ds *)(void *)&si);
	for (int i = 0; i <= maxidx; i++) {
		int id = dt_shmstat(i, SHM_STAT_ANY);
		if (id >= 0)
			dt_shmctl(id, IPC_RMID);
	}
	dt_shminfo(SHM_INFO);
}

const struct dt_case dt_cases[] = {
	{ "run", run, 0 },
	{ NULL, NULL, 0 },
};
