/*
 * sem_random.c - randomized semaphore sequences: `sem_random run SEED
 * [STEPS]` generates, from SEED, a sequence of non-blocking calls (semget
 * with random keys/nsems/flags, semop/semtimedop with IPC_NOWAIT and
 * SEM_UNDO mixes, every semctl command, invalid ids and arguments, short
 * lived children whose SEM_UNDO adjustments apply at exit, sysctl changes
 * of kernel.sem and kernel.sem_next_id) and prints the transcript; at the
 * end it dumps and removes every array left.  Every op carries IPC_NOWAIT
 * so nothing ever sleeps.
 *
 * `sem_random wake SEED [STEPS]`: randomized sleeping and waking.  Forked
 * children each perform one random blocking semop (no IPC_NOWAIT) and
 * report its result; the parent performs random non-blocking ops, SETVAL,
 * SETALL, SIGUSR1 (EINTR) and SIGKILL to waiters, and after each step
 * waits until the state settles (every child is either counted by
 * GETNCNT/GETZCNT or has reported), then prints the reports of that step
 * sorted by child, and the values.  IPC_RMID at the end: EIDRM for all.
 */
#include "dt.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#define MAXIDS 32
static int ids[MAXIDS];
static int nids;
static const key_t keys[] = { IPC_PRIVATE, 0x9001, 0x9002, 0x9003, 0x9004 };

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

/* live: created and not (successfully) removed, as the calls told */
static int live[MAXIDS];
static int nlive;

static void set_live(int id, int alive)
{
	for (int i = 0; i < nlive; i++)
		if (live[i] == id) {
			if (!alive)
				live[i] = live[--nlive];
			return;
		}
	if (alive && nlive < MAXIDS)
		live[nlive++] = id;
}

static int pick_id(void)
{
	int r = rnd(100);
	if (nlive > 0 && r < 75)
		return live[rnd(nlive)];
	if (nids > 0 && r < 80)
		return ids[rnd(nids)];
	if (r < 85)
		return -1;
	if (r < 90)
		return rnd(100);
	if (r < 95 && nids > 0)
		return ids[rnd(nids)] + 32768;
	return rnd(1 << 30);
}

static short pick_semop(void)
{
	static const short v[] = { -3, -2, -1, -1, 0, 0, 1, 1, 1, 2, 3, 5,
				   32767, -32767, -32768, 100 };
	return v[rnd((int)DT_NELEM(v))];
}

static void random_ops(struct sembuf *s, int n)
{
	for (int i = 0; i < n; i++) {
		s[i].sem_num = (unsigned short)(rnd(10) < 9 ? rnd(2) : rnd(6));
		s[i].sem_op = pick_semop();
		s[i].sem_flg = IPC_NOWAIT;
		if (rnd(2))
			s[i].sem_flg |= SEM_UNDO;
		if (rnd(20) == 0)
			s[i].sem_flg |= 0x800;
	}
}

static void do_semget(void)
{
	static const int nsems[] = { -1, 0, 1, 1, 2, 2, 3, 4, 5, 32001 };
	static const int modes[] = { 0600, 0666, 0400, 0, 0644 };
	int flg = modes[rnd((int)DT_NELEM(modes))];
	if (rnd(3))
		flg |= IPC_CREAT;
	if (rnd(4) == 0)
		flg |= IPC_EXCL;
	int id = dt_semget(keys[rnd((int)DT_NELEM(keys))],
			   nsems[rnd((int)DT_NELEM(nsems))], flg);
	if (id >= 0) {
		remember(id);
		set_live(id, 1);
	}
}

static void do_semop(int timed)
{
	struct sembuf s[8];
	int n = 1 + rnd(4);
	int r = rnd(40);
	if (r == 0)
		n = 0;
	random_ops(s, 8);
	int id = pick_id();
	if (timed) {
		struct timespec ts = { 0, 0 };
		if (rnd(10) == 0)
			ts.tv_nsec = 1000000000L;
		dt_semtimedop(id, s, (size_t)n, &ts);
	} else {
		dt_semop(id, s, (size_t)n);
	}
}

static void child_ops(void *p)
{
	(void)p;
	int n = 1 + rnd(3);
	for (int i = 0; i < n; i++) {
		struct sembuf s[2];
		random_ops(s, 2);
		s[0].sem_flg |= SEM_UNDO;
		dt_semop(pick_id(), s, (size_t)(1 + rnd(2)));
	}
	exit(0);
}

static void do_semctl(void)
{
	int id = pick_id();
	int num = rnd(10) == 0 ? -1 : rnd(5);
	switch (rnd(14)) {
	case 0: dt_get(id, num, GETVAL); break;
	case 1: dt_get(id, num, GETPID); break;
	case 2: dt_get(id, num, GETNCNT); break;
	case 3: dt_get(id, num, GETZCNT); break;
	case 4:
	case 5: {
		static const int v[] = { -1, 0, 1, 2, 3, 7, 32767, 32768 };
		dt_setval(id, num, v[rnd((int)DT_NELEM(v))]);
		break;
	}
	case 6: dt_getall(id); break;
	case 7: {
		unsigned short v[64];
		for (int i = 0; i < 64; i++)
			v[i] = (unsigned short)(rnd(12) == 0 ? 32768 : rnd(6));
		dt_setall(id, v, 5);
		break;
	}
	case 8: dt_stat(id, IPC_STAT); break;
	case 9: dt_stat(rnd(10), rnd(2) ? SEM_STAT : SEM_STAT_ANY); break;
	case 10: dt_info(rnd(2) ? IPC_INFO : SEM_INFO); break;
	case 11: {
		static const unsigned int m[] = { 0600, 0666, 0, 0400, 07777 };
		dt_ipcset(id, rnd(4) ? 0 : 1000, rnd(4) ? 0 : 1000,
			  m[rnd((int)DT_NELEM(m))]);
		break;
	}
	case 12:
		if (rnd(3) == 0 && dt_rmid(id) == 0)
			set_live(id, 0);
		else
			dt_get(id, num, GETVAL);
		break;
	case 13: dt_get(id, 0, GETNCNT); break;
	}
}

static void do_sysctl(void)
{
	if (rnd(2)) {
		char v[32];
		snprintf(v, sizeof v, "%d", rnd(4) == 0 ? 32768 + rnd(40) : rnd(40));
		dt_sysctl_set("kernel.sem_next_id", v);
	} else {
		static const char *const s[] = { "32000 1024000000 500 32000",
						  "4 12 3 6", "5 20 2 10",
						  "32000 1024000000 500 32000" };
		dt_sysctl_set("kernel.sem", s[rnd((int)DT_NELEM(s))]);
	}
}

static void run(int argc, char **argv)
{
	if (argc < 2) {
		dt_fail("usage: run SEED [STEPS]");
		return;
	}
	unsigned long long seed = strtoull(argv[1], NULL, 0);
	int steps = argc > 2 ? atoi(argv[2]) : 400;
	rng_state = seed;
	dt_out("seed %llu steps %d", seed, steps);
	for (int step = 0; step < steps; step++) {
		int r = rnd(100);
		if (r < 15)
			do_semget();
		else if (r < 50)
			do_semop(0);
		else if (r < 55)
			do_semop(1);
		else if (r < 93)
			do_semctl();
		else if (r < 97) {
			pid_t p = dt_fork(child_ops, NULL);
			dt_wait(p);
		} else {
			do_sysctl();
		}
	}
	/* dump and remove what is left */
	dt_sysctl_set_quiet("kernel.sem", "32000 1024000000 500 32000");
	struct seminfo si;
	union semun u;
	u.__buf = &si;
	int maxidx = semctl(0, 0, SEM_INFO, u);
	dt_out("final: maxidx %d", maxidx);
	for (int idx = 0; idx <= maxidx; idx++) {
		struct semid_ds ds;
		u.buf = &ds;
		int id = semctl(idx, 0, SEM_STAT_ANY, u);
		if (id < 0)
			continue;
		dt_dump(id, (int)ds.sem_nsems);
		dt_rmid(id);
	}
	dt_info(SEM_INFO);
}


/* ---- randomized sleeping and waking ---- */

#define WNSEMS 3
#define WMAXCH 64
static int wid;
static pid_t wpid[WMAXCH + 1];       /* by child index */
static int wstate[WMAXCH + 1];       /* 0 none, 1 waiting, 2 reported, 3 killed */
static int wspawned, wreported, wkilled;
static struct sembuf wops[2];
static int wnops;

static void on_usr1(int sig) { (void)sig; }

static void wake_child(void *p)
{
	(void)p;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	int r = semop(wid, wops, (size_t)wnops);
	dt_chan_send(r, r < 0 ? errno : 0, 0);
	exit(0);
}

static int waiters(void)
{
	int n = 0;
	for (int i = 0; i < WNSEMS; i++) {
		int a = semctl(wid, i, GETNCNT), b = semctl(wid, i, GETZCNT);
		if (a < 0 || b < 0)
			return -1;
		n += a + b;
	}
	return n;
}

/* Waits until every live child is counted as a waiter or has reported
 * (and child `must` has reported: a signalled one is still counted until
 * it runs); prints the new reports sorted by child. */
static void settle(int removed, int must)
{
	struct dt_msg got[WMAXCH];
	int ngot = 0;
	long long deadline = dt_now_ms() + dt_deadline_ms(5000);
	for (;;) {
		while (dt_chan_ready() && ngot < WMAXCH) {
			if (dt_chan_recv(&got[ngot]) == 0) {
				wstate[got[ngot].who] = 2;
				ngot++;
				wreported++;
			}
		}
		/* GETNCNT/GETZCNT of one semaphore after another is no snapshot:
		 * an op completing between two of them moves another sleeper's
		 * blocking op to a semaphore not read yet, which then counts
		 * twice; so the count is taken when two readings agree */
		int w = removed ? 0 : waiters();
		if (!removed && w != waiters())
			w = -1;
		if (w == wspawned - wreported - wkilled && (!must || wstate[must] == 2))
			break;
		if (dt_now_ms() > deadline) {
			char cnt[128];
			size_t l = 0;
			for (int i = 0; i < WNSEMS; i++)
				l += (size_t)snprintf(cnt + l, sizeof cnt - l, " %d/%d",
						      semctl(wid, i, GETNCNT),
						      semctl(wid, i, GETZCNT));
			dt_fail("not settled: %d waiters (ncnt/zcnt%s), %d spawned, "
				"%d reported, %d killed", w, cnt, wspawned, wreported,
				wkilled);
			break;
		}
		dt_msleep(1);
	}
	for (int i = 1; i < ngot; i++)
		for (int j = i; j > 0 && got[j].who < got[j - 1].who; j--) {
			struct dt_msg t = got[j];
			got[j] = got[j - 1];
			got[j - 1] = t;
		}
	for (int i = 0; i < ngot; i++)
		dt_out("woken child%d: %s", got[i].who, dt_res(got[i].ret, got[i].err));
}

static int pick_waiting(void)
{
	int cand[WMAXCH], n = 0;
	for (int i = 1; i <= wspawned; i++)
		if (wstate[i] == 1)
			cand[n++] = i;
	return n ? cand[rnd(n)] : 0;
}

static void spawn_waiter(void)
{
	wnops = 1 + (rnd(3) == 0);
	for (int i = 0; i < wnops; i++) {
		static const short v[] = { -1, -1, -2, 0, 0, 1, -3 };
		wops[i].sem_num = (unsigned short)rnd(WNSEMS);
		wops[i].sem_op = v[rnd((int)DT_NELEM(v))];
		wops[i].sem_flg = 0;
	}
	pid_t p = dt_fork(wake_child, NULL);
	wspawned++;
	wpid[wspawned] = p;
	wstate[wspawned] = 1;
	dt_out("%s: semop(%d,%s,%d)", dt_pid(p), wid, dt_ops(wops, (size_t)wnops), wnops);
}

static void wake(int argc, char **argv)
{
	if (argc < 2) {
		dt_fail("usage: wake SEED [STEPS]");
		return;
	}
	unsigned long long seed = strtoull(argv[1], NULL, 0);
	int steps = argc > 2 ? atoi(argv[2]) : 60;
	rng_state = seed;
	dt_out("seed %llu steps %d", seed, steps);
	wid = dt_semget(IPC_PRIVATE, WNSEMS, 0600);
	for (int step = 0; step < steps && wspawned < WMAXCH; step++) {
		int r = rnd(100);
		int must = 0;
		int waiting = wspawned - wreported - wkilled;
		if (r < 40 && waiting < 8) {
			spawn_waiter();
		} else if (r < 75) {
			struct sembuf s[2];
			int n = 1 + (rnd(4) == 0);
			for (int i = 0; i < n; i++) {
				s[i].sem_num = (unsigned short)rnd(WNSEMS);
				s[i].sem_op = (short)(rnd(5) == 0 ? -1 : 1 + rnd(3));
				s[i].sem_flg = IPC_NOWAIT;
			}
			dt_semop(wid, s, (size_t)n);
		} else if (r < 83) {
			dt_setval(wid, rnd(WNSEMS), rnd(4));
		} else if (r < 88) {
			unsigned short v[WNSEMS];
			for (int i = 0; i < WNSEMS; i++)
				v[i] = (unsigned short)rnd(3);
			dt_setall(wid, v, WNSEMS);
		} else if (r < 94) {
			int c = pick_waiting();
			if (c) {
				dt_out("SIGUSR1 to child%d", c);
				kill(wpid[c], SIGUSR1);
				must = c;
			}
		} else {
			int c = pick_waiting();
			if (c) {
				dt_out("SIGKILL to child%d", c);
				kill(wpid[c], SIGKILL);
				dt_wait(wpid[c]);
				wstate[c] = 3;
				wkilled++;
			}
		}
		settle(0, must);
		dt_getall(wid);
		if (dt_exit_code) {
			/* diverged already: stop here rather than time out at
			 * every further step */
			dt_out("stopping after the first failure");
			break;
		}
	}
	dt_rmid(wid);
	settle(1, 0);
	for (int i = 1; i <= wspawned; i++)
		if (wstate[i] != 3)
			dt_wait(wpid[i]);
}

const struct dt_case dt_cases[] = {
	{ "run", run, 0 },
	{ "wake", wake, 0 },
	{ NULL, NULL, 0 },
};
