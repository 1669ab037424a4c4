/*
 * tests/unit/crash_fork.c - SIGKILL of a process that forks with shared
 * memory attachments, and of its child, at random points around the fork.
 *
 * The kernel counts the child's inherited attachments inside fork; uipc
 * counts them before fork in a loan (a process slot the child takes over
 * when it first runs, kept by a lock it inherits: core/proc.c, ipc/shm.c).
 * Each round: a forker F attaches a segment K times (K = 1-3; the segment
 * marked for removal at random, before or after), tells us it is about to
 * fork, forks a child C that only waits, writes C's pid where we see it,
 * and detaches its own attachments; we kill F and C after random delays
 * (0-1.5 ms, in either order; C sometimes before it runs, with
 * UIPC_TEST_FORK_DELAY_MS holding its take-over back).  Checks:
 *   - while C lives with F dead and C's pid known (the fork returned in F),
 *     the segment lives, with nattch == K (C's inherited attachments, no
 *     early destruction, no count left of F's);
 *   - once both are dead, nattch is 0, and a segment marked for removal is
 *     gone (no leak); one not marked is then removed by us;
 *   - at the end: no segment left (SHM_INFO), the namespace checks clean
 *     (uipc_ns_check: nattch equals the attachers' records, every record
 *     of a slot in use).
 * Run under uipc (the .t) and, as a check of the test itself, on the
 * kernel in a private IPC namespace (argument "kernel").  Prints TAP.
 *
 *   crash_fork [kernel] [ROUNDS]
 */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"

struct shared {
	_Atomic int ready;         /* F is about to fork */
	_Atomic int child;         /* C's pid, written by F once fork returned */
	_Atomic int detached;      /* F detached its own attachments */
};

static unsigned seed;

static unsigned rnd(unsigned n)
{
	seed = seed * 1103515245u + 12345u;
	return (seed >> 8) % n;
}

static void sleep_us(unsigned us)
{
	struct timespec ts = { 0, (long)us * 1000 };

	if (us)
		nanosleep(&ts, NULL);
}

static void forker(struct shared *sh, int id, int k, int rmid_before)
{
	void *at[3];
	pid_t c;

	setpgid(0, 0);  /* C's too: killed with the group if its pid is not known */
	for (int i = 0; i < k; i++) {
		at[i] = shmat(id, NULL, i == 1 ? SHM_RDONLY : 0);
		if (at[i] == (void *)-1)
			_exit(3);
	}
	if (rmid_before)
		shmctl(id, IPC_RMID, NULL);
	atomic_store(&sh->ready, 1);
	c = fork();
	if (c == 0) {
		for (;;)
			pause();
	}
	if (c < 0)
		_exit(4);
	atomic_store(&sh->child, c);
	for (int i = 0; i < k; i++)
		shmdt(at[i]);
	atomic_store(&sh->detached, 1);
	for (;;)
		pause();
}

static bool gone(pid_t p)
{
	return kill(p, 0) < 0 && errno == ESRCH;
}

/* nattch of ID, -1 if the segment is gone */
static long nattch_of(int id)
{
	struct shmid_ds ds;

	return shmctl(id, IPC_STAT, &ds) < 0 ? -1 : (long)ds.shm_nattch;
}

static void round_once(struct shared *sh, int r, int *early_bad, int *leak_bad, int *mid_checks,
		       char *why, size_t wl)
{
	int id = shmget(IPC_PRIVATE, 8192, 0600);
	int k = 1 + (int)rnd(3), rmid_before = rnd(3) == 0, rmid_after = !rmid_before && rnd(2);
	unsigned kf = rnd(1500), kc = rnd(1500);
	bool delay = rnd(2);
	pid_t f, c;
	int st;

	if (id < 0) {
		(*leak_bad)++;
		snprintf(why, wl, "round %d: shmget: %s", r, strerror(errno));
		return;
	}
	memset(sh, 0, sizeof(*sh));
	if (delay)
		setenv("UIPC_TEST_FORK_DELAY_MS", "2", 1);
	f = fork();
	if (f == 0)
		forker(sh, id, k, rmid_before);
	unsetenv("UIPC_TEST_FORK_DELAY_MS");
	while (!atomic_load(&sh->ready) && !gone(f))
		sched_yield();
	if (rmid_after)
		shmctl(id, IPC_RMID, NULL);
	/* kill F and C after their delays, in the order of the delays */
	if (kf <= kc) {
		sleep_us(kf);
		kill(f, SIGKILL);
		waitpid(f, &st, 0);
		c = atomic_load(&sh->child);
		/* F dead, C alive (not yet killed), fork returned in F: C's
		 * attachments keep the segment, and they alone count */
		if (c > 0) {
			long n = nattch_of(id);

			(*mid_checks)++;
			if (n != k) {
				(*early_bad)++;
				snprintf(why, wl, "round %d: F dead, child alive: nattch %ld, want %d "
					 "(K=%d rmid %d/%d delay %d)", r, n, k, k, rmid_before,
					 rmid_after, delay);
			}
		}
		sleep_us(kc - kf);
		c = atomic_load(&sh->child);
		if (c > 0)
			kill(c, SIGKILL);
	} else {
		sleep_us(kc);
		c = atomic_load(&sh->child);
		if (c > 0)
			kill(c, SIGKILL);
		sleep_us(kf - kc);
		kill(f, SIGKILL);
		waitpid(f, &st, 0);
		c = atomic_load(&sh->child);
		if (c > 0)
			kill(c, SIGKILL);
	}
	/* C is ours (subreaper) once F is dead: reap it, and any child F
	 * forked whose pid it had no time to write (F's process group) */
	kill(-f, SIGKILL);
	while (waitpid(-1, &st, 0) > 0)
		;
	{
		long n = nattch_of(id);

		if (rmid_before || rmid_after ? n != -1 : n != 0) {
			(*leak_bad)++;
			snprintf(why, wl, "round %d: both dead: nattch %ld (K=%d rmid %d/%d delay %d "
				 "kill F %u us C %u us, child %d)", r, n, k, rmid_before, rmid_after,
				 delay, kf, kc, atomic_load(&sh->child));
		}
	}
	if (!rmid_before && !rmid_after)
		shmctl(id, IPC_RMID, NULL);
}

int main(int argc, char **argv)
{
	bool kernel = argc > 1 && !strcmp(argv[1], "kernel");
	int rounds = argc > 1 + kernel ? atoi(argv[1 + kernel]) : 300;
	int (*check)(char *, size_t) = (int (*)(char *, size_t))dlsym(RTLD_DEFAULT, "uipc_ns_check");
	struct shared *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int early_bad = 0, leak_bad = 0, mid = 0;
	char why[512] = "", rep[4096] = "";
	struct shm_info info;
	int used;

	if (!kernel && !check) {
		printf("1..1\nnot ok 1 - not running under uipc (no uipc_ns_check)\n");
		return 1;
	}
	seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	printf("1..4\n# seed %u, %d rounds\n", seed, rounds);
	fflush(stdout);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	for (int r = 0; r < rounds; r++)
		round_once(sh, r, &early_bad, &leak_bad, &mid, why, sizeof(why));
	printf("# %d rounds checked with the forker dead and its child alive\n", mid);
	ok(mid > 0, "some rounds killed the forker after fork returned, its child alive");
	if (early_bad)
		printf("# %s\n", why);
	ok(!early_bad, "a dead forker's child keeps its inherited attachments counted (no early destruction)");
	if (leak_bad)
		printf("# %s\n", why);
	ok(!leak_bad, "once forker and child are dead, nattch is 0 and removed segments are gone");
	used = shmctl(0, SHM_INFO, (struct shmid_ds *)&info);
	if (kernel) {
		ok(used >= 0 && info.used_ids == 0, "no segment left");
	} else {
		int bad = check(rep, sizeof(rep));

		if (bad || info.used_ids)
			printf("# used_ids %d; check: %s\n", used >= 0 ? (int)info.used_ids : -1, rep);
		ok(used >= 0 && info.used_ids == 0 && bad == 0,
		   "no segment left, the namespace checks clean");
	}
	return tap_failed != 0;
}
