/*
 * crash_shm_cross.c - SIGKILL a process at every journaled store and commit
 * point of a shared memory workload, then let another process act on the
 * segment before anyone takes the shm ids lock, in whose frame the victim
 * may have left a section half done: the other process takes the segment
 * lock alone (shmat, SHM_LOCK, SHM_STAT_ANY), so the recovery of the ids
 * section comes after what it did, and must neither undo it nor leave it
 * counted in nothing.  crash_shm.c checks what the next locker finds; this
 * checks what a process that takes another lock of the same section may do
 * first (crash_sem_cross.c does the same for semaphores).  The workloads,
 * each under every failpoint:
 *
 *   detach: shmat, IPC_RMID, shmdt (the detach destroys the segment and
 *           journals into the ids lock's frame: shm_account); then another
 *           attaches and detaches.  It must find the segment removed, or
 *           whole, never count itself into a half-made detach: afterwards
 *           the segment is gone and nattch equals the attachment records.
 *   rmid:   IPC_RMID of a keyed segment we keep attached (SHM_DEST and the
 *           key's removal, journaled in the ids lock's frame); then we
 *           SHM_LOCK it.  Once the ids lock is recovered, SHM_LOCKED must
 *           still be set, and SHM_DEST must agree with the key.
 *   create: shmget(IPC_PRIVATE), whose segment we find by index
 *           (SHM_STAT_ANY) and attach before the ids section that
 *           publishes it is recovered.  A segment we attached must still
 *           be there once it is, counting us (never taken away with our
 *           attachment record).
 *   orphan: with kernel.shm_rmid_forced on, shmget of a keyed segment, then
 *           exit: the exit work orphans the unattached segment, which
 *           destroys it.  Once the death is seen (shmget under
 *           shm_rmid_forced reaps the dead), the key finds nothing.
 *
 * Usage: crash_shm_cross [WORKLOAD...] (all by default).  Run under uipc
 * (the .t sets LD_PRELOAD and a fresh UIPC_DIR).  Prints TAP.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crashkit.h"

#ifndef SHM_STAT_ANY
#define SHM_STAT_ANY 15
#endif
#define MODE_DEST   01000
#define MODE_LOCKED 02000
#define KEY_BASE    0x75430000     /* + the trial's round */
/* SHM_STAT_ANY looks this far for segments (the ids of a namespace with
 * one segment at a time cycle within 64, or 4096 in an extended one) */
#define SCAN 4096

struct workload {
	const char *name;
	/* the victim's calls (ARG: what its trial passed), its exit status */
	int (*victim)(int arg);
	/* one trial at failpoint N (ROUND: its number in the run): the
	 * victim's wait status, -1 when the set-up failed */
	int (*trial)(const struct workload *w, int n, int round);
	/* a sysctl the workload runs under (NULL: none), and its default */
	const char *sysctl, *on, *off;
};

static int run_victim(const struct workload *w, int arg, int n)
{
	return ck_run_victim("crash_shm_cross", w->name, arg, n);
}

static void wcheck(const struct workload *w, int cond, const char *what, int n)
{
	ck_wcheck(w->name, cond, what, n);
}

/* the segment is gone (IPC_STAT fails with EINVAL or EIDRM) */
static void check_gone(const struct workload *w, int s, int n)
{
	struct shmid_ds ds;
	char why[200];

	if (shmctl(s, IPC_STAT, &ds) == 0) {
		snprintf(why, sizeof why, "segment %d still there: nattch %lu mode %#o", s,
			 (unsigned long)ds.shm_nattch, (unsigned)ds.shm_perm.mode);
		wcheck(w, 0, why, n);
	} else {
		wcheck(w, errno == EINVAL || errno == EIDRM, "IPC_STAT of a gone segment: not EINVAL",
		       n);
	}
}

/* anyone who takes the shm ids lock (SHM_INFO's reaping and sweep do),
 * which recovers a section a dead holder left there */
static void take_ids_lock(void)
{
	struct shm_info si;

	shmctl(0, SHM_INFO, (struct shmid_ds *)(void *)&si);
}

/* every segment left in the namespace removed; how many there were */
static int remove_all(void)
{
	struct shmid_ds ds;
	int left = 0;

	for (int i = 0; i < SCAN; i++) {
		int id = shmctl(i, SHM_STAT_ANY, &ds);

		if (id >= 0) {
			shmctl(id, IPC_RMID, NULL);
			left++;
		}
	}
	return left;
}

/* ---- detach ---- */

static int victim_detach(int s)
{
	char *p = shmat(s, NULL, 0);

	if (p == (char *)-1)
		return 1;
	p[0] = 1;
	if (shmctl(s, IPC_RMID, NULL) < 0)
		return 2;
	return shmdt(p) < 0 ? 3 : 0;
}

/* right after the death, before any call that takes the ids lock: an
 * attach (the segment lock alone), then the detach that is the last */
static int trial_detach(const struct workload *w, int n, int round)
{
	int s = shmget(IPC_PRIVATE, 4096, 0600), st;
	char *q;

	(void)round;
	if (s < 0) {
		wcheck(w, 0, "set-up: shmget failed", n);
		return -1;
	}
	st = run_victim(w, s, n);
	q = shmat(s, NULL, 0);
	/* marked for removal already, or now (the victim died before its
	 * IPC_RMID), so that our detach is the last either way */
	shmctl(s, IPC_RMID, NULL);
	if (q != (char *)-1)
		shmdt(q);
	check_gone(w, s, n);
	return st;
}

/* ---- rmid ---- */

static int victim_rmid(int s)
{
	return shmctl(s, IPC_RMID, NULL) < 0 ? 1 : 0;
}

static int trial_rmid(const struct workload *w, int n, int round)
{
	key_t key = KEY_BASE + round;
	int s = shmget(key, 4096, IPC_CREAT | IPC_EXCL | 0600), st, k;
	char *p = s < 0 ? (char *)-1 : shmat(s, NULL, 0);
	struct shmid_ds ds;
	char why[200];

	/* our attachment keeps it alive through the victim's IPC_RMID */
	if (p == (char *)-1) {
		wcheck(w, 0, "set-up: shmget or shmat failed", n);
		return -1;
	}
	st = run_victim(w, s, n);
	/* before anyone has taken the ids lock */
	wcheck(w, shmctl(s, SHM_LOCK, NULL) == 0, "SHM_LOCK of the attached segment failed", n);
	take_ids_lock();
	if (shmctl(s, IPC_STAT, &ds) < 0) {
		wcheck(w, 0, "IPC_STAT of the attached segment failed", n);
	} else {
		snprintf(why, sizeof why, "the SHM_LOCK made after the kill is undone: mode %#o",
			 (unsigned)ds.shm_perm.mode);
		wcheck(w, (ds.shm_perm.mode & MODE_LOCKED) != 0, why, n);
		k = shmget(key, 0, 0);
		snprintf(why, sizeof why, "SHM_DEST (mode %#o) and the key (shmget: %d) disagree",
			 (unsigned)ds.shm_perm.mode, k);
		wcheck(w, ds.shm_perm.mode & MODE_DEST ? k < 0 && errno == ENOENT : k == s, why, n);
	}
	shmctl(s, SHM_UNLOCK, NULL);
	shmctl(s, IPC_RMID, NULL);
	wcheck(w, shmdt(p) == 0, "shmdt of our attachment failed", n);
	check_gone(w, s, n);
	return st;
}

/* ---- create ---- */

static int victim_create(int unused)
{
	(void)unused;
	return shmget(IPC_PRIVATE, 4096, 0600) < 0 ? 1 : 0;
}

static int trial_create(const struct workload *w, int n, int round)
{
	int st = run_victim(w, 0, n), id = -1;
	char *q = (char *)-1;
	struct shmid_ds ds;
	char why[200];

	(void)round;
	/* before anyone has taken the ids lock: the victim's segment, if the
	 * table shows it, is attached (the segment lock alone) */
	for (int i = 0; i < SCAN && id < 0; i++)
		id = shmctl(i, SHM_STAT_ANY, &ds);
	if (id >= 0)
		q = shmat(id, NULL, 0);
	take_ids_lock();
	if (q != (char *)-1) {
		/* attached: it lives while we do, counting us */
		if (shmctl(id, IPC_STAT, &ds) < 0) {
			snprintf(why, sizeof why, "segment %d vanished under our attachment (%s)", id,
				 strerror(errno));
			wcheck(w, 0, why, n);
		} else {
			snprintf(why, sizeof why, "segment %d: nattch %lu with our attachment", id,
				 (unsigned long)ds.shm_nattch);
			wcheck(w, ds.shm_nattch == 1, why, n);
		}
		wcheck(w, shmdt(q) == 0, "shmdt of our attachment failed", n);
	}
	remove_all();   /* the segment of a victim that got that far */
	return st;
}

/* ---- orphan ---- */

static int victim_orphan(int key)
{
	/* its exit work orphans it, and shm_rmid_forced destroys it */
	return shmget(key, 4096, IPC_CREAT | IPC_EXCL | 0600) < 0 ? 1 : 0;
}

static int trial_orphan(const struct workload *w, int n, int round)
{
	key_t key = KEY_BASE + round;
	int st = run_victim(w, key, n), k;
	char why[200];

	/* its creator is dead and nobody attached it: gone once the death is
	 * seen (shmget under shm_rmid_forced reaps the dead) */
	k = shmget(key, 0, 0);
	snprintf(why, sizeof why, "its dead creator's unattached segment is still there (%d)", k);
	wcheck(w, k < 0 && errno == ENOENT, why, n);
	if (k >= 0)
		shmctl(k, IPC_RMID, NULL);
	return st;
}

static const struct workload workloads[] = {
	{ "detach", victim_detach, trial_detach, NULL, NULL, NULL },
	{ "rmid", victim_rmid, trial_rmid, NULL, NULL, NULL },
	{ "create", victim_create, trial_create, NULL, NULL, NULL },
	{ "orphan", victim_orphan, trial_orphan, "kernel.shm_rmid_forced", "1", "0" },
};
#define NW ((int)(sizeof(workloads) / sizeof(workloads[0])))

/* ck_each_failpoint's trial: the workload, and the count of trials so far */
struct trial_ctx {
	const struct workload *w;
	int round;
};

static int trial_of(void *ctx, int n)
{
	struct trial_ctx *t = ctx;

	return t->w->trial(t->w, n, ++t->round);
}

int main(int argc, char **argv)
{
	int (*sysctl_set)(const char *, const char *) =
		(int (*)(const char *, const char *))dlsym(RTLD_DEFAULT, "uipc_sysctl_set");
	struct trial_ctx t = { NULL, 0 };

	if (argc == 4 && !strcmp(argv[1], "victim")) {
		for (int i = 0; i < NW; i++)
			if (!strcmp(argv[2], workloads[i].name))
				return workloads[i].victim(atoi(argv[3]));
		return 127;
	}
	for (int i = 0; i < NW; i++) {
		const struct workload *w = &workloads[i];

		if (!ck_wanted(argc, argv, w->name))
			continue;
		if (w->sysctl && (!sysctl_set || sysctl_set(w->sysctl, w->on))) {
			wcheck(w, 0, "set-up: its sysctl could not be set", 0);
			continue;
		}
		t.w = w;
		ck_each_failpoint(w->name, trial_of, &t, remove_all, "a segment was");
		if (w->sysctl)
			sysctl_set(w->sysctl, w->off);
	}
	return report();
}
