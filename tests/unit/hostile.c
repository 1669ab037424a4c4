/*
 * hostile.c - the hostile-member suite (issue 14): a member of a shared
 * namespace rewrites the arena or truncates files while a victim of another
 * user makes every kind of call.  Each victim must return (an error is
 * fine), never crash, never hang past the watchdog, and the canaries
 * around its buffers and mappings must stay intact.
 *
 *   hostile drive DIR NS BIN LIB VUID VGID HUID HGID MODE SEED ROUNDS
 *
 * run as root, prints TAP.  DIR holds the shared namespace NS (mode 0666,
 * `uipc ns create --shared`), BIN is this program and LIB libuipc.so where
 * both users can read them.  Three processes take part:
 *   - the master, as the victim user (VUID, preloaded): it creates the
 *     objects (semaphore arrays, queues with messages, segments), learns
 *     their sizes, then forks one child per round that makes the round's
 *     calls and exits (its exit work runs in the damaged arena too); a
 *     watchdog kills a child that runs too long;
 *   - the corrupter, as the hostile user (HUID, not preloaded): it maps the
 *     namespace file and, before each round, puts back what the last round
 *     changed (a snapshot of the arena's live parts and its own undo log)
 *     and then damages it: MODE targeted tries every catalogued field with
 *     every kind of value, one per round; random picks a few fields and
 *     values and raw words per round (SEED and the round number decide:
 *     a failure names both, and `... random SEED ROUNDS` replays it);
 *     truncate shortens the namespace file or a segment file;
 *   - the driver (root) relays, restores the segment files between rounds,
 *     and reports.
 * Every byte is fair game, lock words and alive words included: nothing
 * in a lock is followed as a pointer (core/layout.h).
 *
 *   hostile holdstop KEY [sem] (preloaded, as the hostile user)
 * takes the message queue KEY's lock word (or the semaphore array's) for
 * itself (its own thread slot) and stops (SIGSTOP): unit-hostile.t checks
 * that the victim's calls stay bounded (hostile bounded KEY; hostile leave
 * KEY: its setns and unshare) and that uipc fsck names it.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hostile_mirror.h"

#ifndef MSG_COPY
#define MSG_COPY 040000
#endif
#ifndef MSG_EXCEPT
#define MSG_EXCEPT 020000
#endif

#define WATCHDOG_S  20           /* a round child that runs longer hangs */
#define NSEM 4
#define NMSG 3
#define NSHM 3
#define PAGE 4096

static const int sem_sizes[NSEM] = { 1, 3, 7, 40 };
static const size_t shm_sizes[NSHM] = { 4096, 3 * 4096, 10000 };
#define KEY_BASE 0x4857000

/* the objects the master made (ids), passed around as one line */
struct base {
	int semid[NSEM], msqid[NMSG], shmid[NSHM];
};

static void die(const char *what)
{
	fprintf(stderr, "hostile: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* ---- a small deterministic generator (replays from SEED and round) ---- */

static uint64_t rng_state;

static void rng_seed(uint64_t seed, uint64_t round)
{
	rng_state = seed * 0x9e3779b97f4a7c15ULL ^ (round + 1) * 0xbf58476d1ce4e5b9ULL;
	if (!rng_state)
		rng_state = 1;
}

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static uint64_t rnd_below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

/* ---- line protocol between the three processes ---- */

static int read_line(int fd, char *buf, size_t len, int timeout_s)
{
	size_t n = 0;
	time_t until = time(NULL) + timeout_s;

	while (n + 1 < len) {
		struct timespec ts = { 0, 1000000 };
		ssize_t r = read(fd, buf + n, 1);

		if (r == 1) {
			if (buf[n] == '\n')
				break;
			n++;
			continue;
		}
		if (r == 0)
			return -1;
		if (errno != EAGAIN && errno != EINTR)
			return -1;
		if (timeout_s && time(NULL) > until)
			return -2;
		nanosleep(&ts, NULL);
	}
	buf[n] = 0;
	return (int)n;
}

/* a line to FD; false if nobody reads it any more */
static bool say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool say(int fd, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 1)
		n = (int)sizeof(buf) - 1;
	return write(fd, buf, (size_t)n) == n;
}

/* what became of process PID that stopped answering */
static const char *fate(pid_t pid)
{
	static char buf[64];
	int st;

	if (waitpid(pid, &st, WNOHANG) != pid)
		return "it does not answer";
	if (WIFSIGNALED(st))
		snprintf(buf, sizeof(buf), "it died of signal %d", WTERMSIG(st));
	else
		snprintf(buf, sizeof(buf), "it exited with status %d", WEXITSTATUS(st));
	return buf;
}

/* ===================================================================== */
/* the victim: its round of calls, with canaries                          */
/* ===================================================================== */

#define CANARY 0xA5
#define GUARD  64

/* a buffer of LEN bytes with GUARD canary bytes on each side */
struct canbuf {
	unsigned char *raw;
	size_t len;
};

static void *cb_get(struct canbuf *b, size_t len)
{
	b->len = len;
	b->raw = malloc(len + 2 * GUARD);
	if (!b->raw)
		exit(2);
	memset(b->raw, CANARY, len + 2 * GUARD);
	return b->raw + GUARD;
}

/* the canaries intact?  (then the buffer is freed) */
static bool cb_done(struct canbuf *b)
{
	bool ok = true;

	for (size_t i = 0; i < GUARD; i++)
		if (b->raw[i] != CANARY || b->raw[GUARD + b->len + i] != CANARY)
			ok = false;
	free(b->raw);
	return ok;
}

/* where the master shows which call a child is in (for hangs and crashes) */
static char *last_op;

static struct base victim_base;
static bool victim_failed;

static void fail(const char *op, const char *what)
{
	printf("FAIL %s: %s\n", op, what);
	fflush(stdout);
	victim_failed = true;
}

static void op_name(const char *name)
{
	if (last_op)
		snprintf(last_op, 64, "%s", name);
}

static int victim_sem(int *n)
{
	int i = (int)rnd_below(NSEM);

	*n = sem_sizes[i];
	return victim_base.semid[i];
}

static void v_semget(void)
{
	op_name("semget");
	semget(KEY_BASE + (int)rnd_below(NSEM), 0, 0);
	int id = semget(IPC_PRIVATE, 1 + (int)rnd_below(5), 0600);
	if (id >= 0)
		semctl(id, 0, IPC_RMID);
}

static void v_semop(void)
{
	int n, id = victim_sem(&n);
	struct sembuf up = { (unsigned short)rnd_below(n), 1, IPC_NOWAIT };
	struct sembuf down = { up.sem_num, -1, IPC_NOWAIT };
	struct sembuf two[2] = { { 0, 1, IPC_NOWAIT }, { (unsigned short)(n - 1), 1, IPC_NOWAIT } };
	struct timespec ts = { 0, 1000000 };
	struct sembuf wait_zero = { 0, 0, 0 };

	op_name("semop");
	semop(id, &up, 1);
	semop(id, &down, 1);
	op_name("semop undo");
	up.sem_flg |= SEM_UNDO;
	down.sem_flg |= SEM_UNDO;
	semop(id, &up, 1);
	semop(id, &down, 1);
	op_name("semop two");
	semop(id, two, 2);
	/* calls that sleep, in some rounds (each waits for its timeout) */
	if (rnd_below(4))
		return;
	op_name("semtimedop");
	two[0].sem_op = two[1].sem_op = -1;
	semtimedop(id, two, 2, &ts);
	semop(id, &up, 1);
	semtimedop(id, &wait_zero, 1, &ts);     /* usually sleeps until the timeout */
}

static void v_semctl(void)
{
	int n, id = victim_sem(&n);
	struct canbuf b;
	unsigned short *v = cb_get(&b, (size_t)n * sizeof(*v));
	struct semid_ds ds;
	struct seminfo si;
	union { int val; struct semid_ds *buf; unsigned short *array; struct seminfo *__buf; } arg;
	long page = sysconf(_SC_PAGESIZE);
	char *m;

	op_name("GETALL");
	arg.array = v;
	semctl(id, 0, GETALL, arg);
	if (!cb_done(&b))
		fail("GETALL", "wrote past the caller's buffer (nsems values)");
	/* SETALL's buffer ends where an unreadable page begins: a read past
	 * it faults (EFAULT) */
	op_name("SETALL");
	m = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		exit(2);
	mprotect(m + page, (size_t)page, PROT_NONE);
	arg.array = (unsigned short *)(m + page) - n;
	memset(arg.array, 0, (size_t)n * sizeof(unsigned short));
	if (semctl(id, 0, SETALL, arg) < 0 && errno == EFAULT)
		fail("SETALL", "read past the caller's buffer");
	munmap(m, (size_t)page * 2);
	op_name("GETVAL etc");
	semctl(id, (int)rnd_below(n), GETVAL);
	semctl(id, (int)rnd_below(n), GETPID);
	semctl(id, (int)rnd_below(n), GETNCNT);
	semctl(id, (int)rnd_below(n), GETZCNT);
	arg.val = (int)rnd_below(3);
	semctl(id, (int)rnd_below(n), SETVAL, arg);
	op_name("IPC_STAT");
	{
		struct canbuf sb;
		struct semid_ds *p = cb_get(&sb, sizeof(*p));

		arg.buf = p;
		if (semctl(id, 0, IPC_STAT, arg) == 0) {
			/* the count IPC_STAT tells sizes a GETALL buffer */
			struct canbuf g;
			unsigned short *gv = cb_get(&g, p->sem_nsems * sizeof(*gv) + 1);

			arg.array = gv;
			semctl(id, 0, GETALL, arg);
			if (!cb_done(&g))
				fail("GETALL", "wrote past a buffer sized by IPC_STAT");
		}
		if (!cb_done(&sb))
			fail("IPC_STAT", "wrote past the caller's semid_ds");
	}
	op_name("SEM_STAT");
	arg.buf = &ds;
	semctl((int)rnd_below(8), 0, SEM_STAT, arg);
	semctl((int)rnd_below(8), 0, SEM_STAT_ANY, arg);
	op_name("SEM_INFO");
	arg.__buf = &si;
	semctl(0, 0, SEM_INFO, arg);
	semctl(0, 0, IPC_INFO, arg);
	op_name("IPC_SET");
	arg.buf = &ds;
	if (semctl(id, 0, IPC_STAT, arg) == 0)
		semctl(id, 0, IPC_SET, arg);
}

static void v_msg(void)
{
	int id = victim_base.msqid[rnd_below(NMSG)];
	struct { long mtype; char text[600]; } out;
	size_t msgsz = 100;
	struct canbuf b;
	struct msqid_ds ds;
	struct msginfo mi;
	ssize_t r;
	static const long types[] = { 0, 1, 2, -2, 7 };
	static const int flags[] = { 0, MSG_NOERROR, MSG_EXCEPT, MSG_NOERROR | MSG_EXCEPT };

	op_name("msgget");
	msgget(KEY_BASE + 0x100 + (int)rnd_below(NMSG), 0);
	op_name("msgsnd");
	out.mtype = 1 + (long)rnd_below(3);
	memset(out.text, 'm', sizeof(out.text));
	msgsnd(id, &out, 64, IPC_NOWAIT);
	msgsnd(id, &out, 500, IPC_NOWAIT);
	for (int k = 0; k < 3; k++) {
		char *p;

		op_name("msgrcv");
		p = cb_get(&b, sizeof(long) + msgsz);
		r = msgrcv(id, p, msgsz, types[rnd_below(5)],
			   IPC_NOWAIT | flags[rnd_below(4)]);
		if (r > (ssize_t)msgsz)
			fail("msgrcv", "returned more than msgsz");
		if (!cb_done(&b))
			fail("msgrcv", "wrote past the caller's buffer");
	}
	op_name("MSG_COPY");
	{
		char *p = cb_get(&b, sizeof(long) + msgsz);

		r = msgrcv(id, p, msgsz, (long)rnd_below(3), IPC_NOWAIT | MSG_COPY);
		if (r > (ssize_t)msgsz)
			fail("MSG_COPY", "returned more than msgsz");
		if (!cb_done(&b))
			fail("MSG_COPY", "wrote past the caller's buffer");
	}
	op_name("msgctl");
	{
		struct canbuf sb;
		struct msqid_ds *p = cb_get(&sb, sizeof(*p));

		msgctl(id, IPC_STAT, p);
		if (!cb_done(&sb))
			fail("msgctl IPC_STAT", "wrote past the caller's msqid_ds");
	}
	msgctl((int)rnd_below(8), MSG_STAT, &ds);
	msgctl(0, MSG_INFO, (struct msqid_ds *)&mi);
	msgctl(0, IPC_INFO, (struct msqid_ds *)&mi);
	if (msgctl(id, IPC_STAT, &ds) == 0)
		msgctl(id, IPC_SET, &ds);
	op_name("msgget private");
	r = msgget(IPC_PRIVATE, 0600);
	if (r >= 0) {
		msgsnd((int)r, &out, 10, IPC_NOWAIT);
		msgctl((int)r, IPC_RMID, NULL);
	}
}

/* a region of 64 pages of a known pattern: shmat(SHM_REMAP) in its middle
 * must replace exactly the segment's pages, no more */
#define REGION_PAGES 64
#define REMAP_AT     16
#define PATTERN      0x5A

static bool region_intact(const unsigned char *r, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (r[i] != PATTERN)
			return false;
	return true;
}

static void v_shm(void)
{
	int i = (int)rnd_below(NSHM), id = victim_base.shmid[i];
	size_t seg_pages = (shm_sizes[i] + PAGE - 1) / PAGE;
	struct shmid_ds ds;
	struct shm_info si;
	unsigned char *region;
	void *a;

	op_name("shmget");
	shmget(KEY_BASE + 0x200 + (int)rnd_below(NSHM), 0, 0);
	op_name("shmat");
	a = shmat(id, NULL, 0);
	if (a != (void *)-1)
		shmdt(a);
	op_name("shmat rdonly");
	a = shmat(id, NULL, SHM_RDONLY);
	if (a != (void *)-1) {
		/* read-only, even through a raw mprotect */
		if (syscall(SYS_mprotect, a, (size_t)PAGE, PROT_READ | PROT_WRITE) == 0)
			fail("shmat rdonly", "a raw mprotect(PROT_WRITE) succeeded");
		shmdt(a);
	}
	op_name("shmat remap");
	region = mmap(NULL, REGION_PAGES * PAGE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (region == MAP_FAILED)
		exit(2);
	memset(region, PATTERN, REGION_PAGES * PAGE);
	a = shmat(id, region + REMAP_AT * PAGE, SHM_REMAP);
	if (a != (void *)-1) {
		if (!region_intact(region, 0, REMAP_AT * PAGE) ||
		    !region_intact(region, (REMAP_AT + seg_pages) * PAGE, REGION_PAGES * PAGE))
			fail("shmat remap", "replaced more than the segment's pages");
		shmdt(a);
	} else if (!region_intact(region, 0, REGION_PAGES * PAGE)) {
		fail("shmat remap", "failed, but changed the region");
	}
	munmap(region, REGION_PAGES * PAGE);
	op_name("shmctl");
	{
		struct canbuf sb;
		struct shmid_ds *p = cb_get(&sb, sizeof(*p));

		shmctl(id, IPC_STAT, p);
		if (!cb_done(&sb))
			fail("shmctl IPC_STAT", "wrote past the caller's shmid_ds");
	}
	shmctl((int)rnd_below(8), SHM_STAT, &ds);
	shmctl(0, SHM_INFO, (struct shmid_ds *)&si);
	shmctl(0, IPC_INFO, (struct shmid_ds *)&si);
	if (shmctl(id, IPC_STAT, &ds) == 0)
		shmctl(id, IPC_SET, &ds);
	op_name("shmget private");
	{
		int n = shmget(IPC_PRIVATE, 8192, 0600);

		if (n >= 0) {
			a = shmat(n, NULL, 0);
			if (a != (void *)-1)
				shmdt(a);
			shmctl(n, IPC_RMID, NULL);
		}
	}
}

/* a child that dies with SEM_UNDO adjustments and attachments: its exit
 * work, and the reaping of a SIGKILLed one, run in the damaged arena */
static void v_children(void)
{
	int n, id = victim_sem(&n);
	pid_t pid;
	bool kill_it = rnd_below(2);

	/* in some rounds: a fork and an exit cost more than the other calls */
	if (rnd_below(3))
		return;
	op_name("child");
	pid = fork();
	if (pid == 0) {
		struct sembuf up = { 0, 1, SEM_UNDO | IPC_NOWAIT };
		void *a;

		semop(id, &up, 1);
		a = shmat(victim_base.shmid[0], NULL, 0);
		(void)a;
		if (kill_it)
			pause();
		exit(0);
	}
	if (pid > 0) {
		int st;

		if (kill_it) {
			struct timespec ts = { 0, 500000 };

			nanosleep(&ts, NULL);
			kill(pid, SIGKILL);
		}
		/* its exit is bounded too: the watchdog of this round covers it */
		waitpid(pid, &st, 0);
	}
	op_name("reap");
	{
		struct sembuf zero = { 0, 0, IPC_NOWAIT };

		semop(id, &zero, 1);
	}
}

static void v_proc(void)
{
	char buf[4096];
	int fd;

	op_name("/proc/sysvipc");
	for (int t = 0; t < 3; t++) {
		static const char *const f[] = { "/proc/sysvipc/sem", "/proc/sysvipc/msg",
						 "/proc/sysvipc/shm" };

		fd = open(f[t], O_RDONLY);
		if (fd >= 0) {
			while (read(fd, buf, sizeof(buf)) > 0)
				;
			close(fd);
		}
	}
}

/* a crash says where it was, on stderr (seen with UIPC_HOSTILE_VERBOSE=1) */
static void crash_report(int sig)
{
	void *bt[32];
	int n = backtrace(bt, 32);

	dprintf(2, "hostile: signal %d in %s\n", sig, last_op ? last_op : "?");
	backtrace_symbols_fd(bt, n, 2);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* uipc fsck's check (the library's uipc_ns_check), in some rounds: it
 * walks every object of the damaged namespace */
static void v_fsck(void)
{
	int (*check)(char *, size_t) = (int (*)(char *, size_t))dlsym(RTLD_DEFAULT, "uipc_ns_check");
	struct canbuf b;
	char *report;

	if (!check || rnd_below(6))
		return;
	op_name("uipc_ns_check");
	report = cb_get(&b, 4096);
	check(report, 4096);
	if (!cb_done(&b))
		fail("uipc_ns_check", "wrote past its report buffer");
}

static void victim_round(uint64_t seed, uint64_t round)
{
	signal(SIGSEGV, crash_report);
	signal(SIGBUS, crash_report);
	signal(SIGABRT, crash_report);
	static void (*const ops[])(void) = { v_semget, v_semop, v_semctl, v_msg, v_shm,
					     v_proc, v_children, v_fsck };
	const int nops = (int)(sizeof(ops) / sizeof(ops[0]));
	int order[16];

	rng_seed(seed ^ 0x5555, round);
	for (int i = 0; i < nops; i++)
		order[i] = i;
	for (int i = nops - 1; i > 0; i--) {
		int j = (int)rnd_below((uint64_t)i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (int i = 0; i < nops; i++)
		ops[order[i]]();
	op_name("exit");
}

/* ---- the master (victim user, preloaded) ---- */

static int setup(void)
{
	struct base b;

	for (int i = 0; i < NSEM; i++) {
		b.semid[i] = semget(KEY_BASE + i, sem_sizes[i], IPC_CREAT | 0666);
		if (b.semid[i] < 0)
			die("semget");
	}
	for (int i = 0; i < NMSG; i++) {
		struct { long mtype; char text[300]; } m;

		b.msqid[i] = msgget(KEY_BASE + 0x100 + i, IPC_CREAT | 0666);
		if (b.msqid[i] < 0)
			die("msgget");
		/* a few messages on the list, and (queue 0) enough traffic
		 * for it to get the lock-free ring */
		for (int k = 0; k < (i == 0 ? 24 : 5); k++) {
			m.mtype = 1 + k % 3;
			memset(m.text, 'a' + k, sizeof(m.text));
			if (msgsnd(b.msqid[i], &m, k % 2 ? 200 : 40, IPC_NOWAIT))
				die("msgsnd");
			if (i == 0 && k < 20 && msgrcv(b.msqid[i], &m, sizeof(m.text), 0, IPC_NOWAIT) < 0)
				die("msgrcv");
		}
	}
	for (int i = 0; i < NSHM; i++) {
		b.shmid[i] = shmget(KEY_BASE + 0x200 + i, shm_sizes[i], IPC_CREAT | 0666);
		if (b.shmid[i] < 0)
			die("shmget");
	}
	printf("BASE");
	for (int i = 0; i < NSEM; i++)
		printf(" %d", b.semid[i]);
	for (int i = 0; i < NMSG; i++)
		printf(" %d", b.msqid[i]);
	for (int i = 0; i < NSHM; i++)
		printf(" %d", b.shmid[i]);
	printf("\n");
	return 0;
}

static bool parse_base(char **argv, struct base *b)
{
	for (int i = 0; i < NSEM; i++)
		b->semid[i] = atoi(argv[i]);
	for (int i = 0; i < NMSG; i++)
		b->msqid[i] = atoi(argv[NSEM + i]);
	for (int i = 0; i < NSHM; i++)
		b->shmid[i] = atoi(argv[NSEM + NMSG + i]);
	return true;
}

/* one round: a child makes the calls; the watchdog bounds it */
static void master_round(uint64_t seed, uint64_t round)
{
	sigset_t chld, old;
	struct timespec ts = { WATCHDOG_S, 0 };
	pid_t pid;
	int st;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old);
	snprintf(last_op, 64, "start");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		victim_round(seed, round);
		fflush(stdout);
		exit(victim_failed ? 3 : 0);
	}
	if (pid < 0) {
		printf("DONE fork failed\n");
		fflush(stdout);
		return;
	}
	for (;;) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
		if (sigtimedwait(&chld, NULL, &ts) < 0 && errno == EAGAIN) {
			if (waitpid(pid, &st, WNOHANG) == pid)
				break;
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			printf("DONE hang in %s (killed after %d s)\n", last_op, WATCHDOG_S);
			fflush(stdout);
			sigprocmask(SIG_SETMASK, &old, NULL);
			return;
		}
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (WIFSIGNALED(st))
		printf("DONE crash: signal %d in %s\n", WTERMSIG(st), last_op);
	else if (WEXITSTATUS(st) == 3)
		printf("DONE canary\n");
	else if (WEXITSTATUS(st) != 0)
		printf("DONE exit %d in %s\n", WEXITSTATUS(st), last_op);
	else
		printf("DONE ok\n");
	fflush(stdout);
}

static int master(int argc, char **argv)
{
	char line[256];

	if (argc < NSEM + NMSG + NSHM)
		return 2;
	parse_base(argv, &victim_base);
	last_op = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (last_op == MAP_FAILED)
		die("mmap");
	/* what the victim is told of each object's size, before any damage:
	 * its round children inherit it (ipc/validate.c) */
	for (int i = 0; i < NSEM; i++) {
		struct semid_ds ds;
		union { struct semid_ds *buf; } arg = { &ds };

		if (semctl(victim_base.semid[i], 0, IPC_STAT, arg) < 0 ||
		    ds.sem_nsems != (unsigned long)sem_sizes[i])
			die("semctl IPC_STAT");
	}
	for (int i = 0; i < NSHM; i++) {
		struct shmid_ds ds;

		if (shmctl(victim_base.shmid[i], IPC_STAT, &ds) < 0 || ds.shm_segsz != shm_sizes[i])
			die("shmctl IPC_STAT");
	}
	printf("READY\n");
	fflush(stdout);
	setvbuf(stdin, NULL, _IONBF, 0);
	while (read_line(0, line, sizeof(line), 0) >= 0) {
		unsigned long long seed, round;

		if (sscanf(line, "R %llu %llu", &seed, &round) == 2)
			master_round(seed, round);
		else if (!strcmp(line, "Q"))
			break;
	}
	return 0;
}

/* ===================================================================== */
/* the corrupter (hostile user, not preloaded)                           */
/* ===================================================================== */

struct region {
	uoff_t off;
	uint64_t len;
	unsigned char *copy;
};

struct undo {
	uoff_t off;
	uint64_t old;
	int width;
};

static struct {
	int fd;
	char *base;
	uint64_t size;
	struct uipc_hdr *h;
	struct region reg[16];
	int nreg;
	struct undo *log;
	int nlog, caplog;
	/* the objects, as offsets */
	uoff_t sem[NSEM], msg[NMSG], shm[NSHM];
	/* where the tables are, as the snapshot found them (the header's
	 * copies may be damaged meanwhile) */
	uoff_t entries[IPC_NR_IDS], used[IPC_NR_IDS], procs, threads;
	char desc[2048];
	size_t dlen;
} C;

static void *at(uoff_t off)
{
	return C.base + off;
}

/* is [OFF, OFF+LEN) inside the file?  (the corrupter follows links an
 * earlier damage of the same round may have changed) */
static bool inside(uoff_t off, uint64_t len)
{
	return off >= 8 && off < C.size && len <= C.size - off;
}

static uoff_t off_of(const void *p)
{
	return (uoff_t)((const char *)p - C.base);
}

static void add_region(uoff_t off, uint64_t len)
{
	struct region *r = &C.reg[C.nreg++];

	if (off + len > C.size)
		len = C.size - off;
	r->off = off;
	r->len = len;
	r->copy = malloc(len);
	if (!r->copy)
		exit(2);
	memcpy(r->copy, C.base + off, len);
}

static uoff_t entry_of(int type, int idx)
{
	uoff_t *e = at(C.entries[type] + (uoff_t)idx * 8);

	return *e;
}

/* the arena as the master made it: where the objects are, what to put
 * back before each round */
static void snapshot(const char *path)
{
	struct stat st;
	uoff_t heap;

	C.fd = open(path, O_RDWR);
	if (C.fd < 0 || fstat(C.fd, &st) < 0)
		die(path);
	C.size = (uint64_t)st.st_size;
	C.base = mmap(NULL, C.size, PROT_READ | PROT_WRITE, MAP_SHARED, C.fd, 0);
	if (C.base == MAP_FAILED)
		die("mmap");
	C.h = (struct uipc_hdr *)C.base;
	heap = C.h->heap_start;
	for (int t = 0; t < IPC_NR_IDS; t++) {
		C.entries[t] = C.h->ids[t].entries;
		C.used[t] = C.h->ids[t].used;
	}
	C.procs = C.h->procs;
	C.threads = C.h->threads;
	add_region(0, 8192);
	for (int t = 0; t < IPC_NR_IDS; t++) {
		add_region(C.h->ids[t].used, (uint64_t)C.h->ipcmni / 8);
		add_region(C.h->ids[t].populated, 4096);
		add_region(C.h->ids[t].entries, 8192 * 8);
	}
	add_region(C.h->procs, 64 * sizeof(struct uproc));
	add_region(C.h->threads, 64 * sizeof(struct uthread));
	/* the heap as far as a round may grow it */
	add_region(heap, C.h->alloc.brk - heap + (2 << 20));
	/* the objects, by their (small) indexes */
	for (int t = 0, n; t < IPC_NR_IDS; t++) {
		uoff_t *dst = t == 0 ? C.sem : t == 1 ? C.msg : C.shm;
		int want = t == 0 ? NSEM : t == 1 ? NMSG : NSHM;

		n = 0;
		for (int i = 0; i < 64 && n < want; i++) {
			uoff_t o = entry_of(t, i);

			if (o)
				dst[n++] = o;
		}
		if (n != want) {
			fprintf(stderr, "hostile: %d objects of type %d, not %d\n", n, t, want);
			exit(2);
		}
	}
}

/* the mirror of the private structures still matches the real ones? */
static const char *check_mirror(void)
{
	for (int i = 0; i < NSEM; i++) {
		struct m_sem_array *s = at(C.sem[i]);

		if (s->perm.type != IPC_SEM_IDS || s->nsems != sem_sizes[i] ||
		    (s->sems[0].word >> 38) != s->tag)
			return "struct sem_array (ipc/sem.c)";
	}
	for (int i = 0; i < NMSG; i++) {
		struct m_msg_queue *q = at(C.msg[i]);
		struct m_msgm *m = q->messages.first ? at(q->messages.first) : NULL;

		if (q->perm.type != IPC_MSG_IDS || q->qbytes != (uint64_t)C.h->lim.msgmnb ||
		    !m || m->size > m->cap || (m->size != 40 && m->size != 200))
			return "struct msg_queue or struct msgm (ipc/msg.c)";
	}
	for (int i = 0; i < NSHM; i++) {
		struct m_shmid_kernel *s = at(C.shm[i]);
		struct m_blk *b = at(C.shm[i] - sizeof(*b));

		if (s->perm.type != IPC_SHM_IDS || s->segsz != shm_sizes[i] || !s->file ||
		    b->magic != M_BLK_MAGIC)
			return "struct shmid_kernel (ipc/shm.c) or struct blk (core/arena.c)";
	}
	for (int t = 0; t < 3; t++) {
		struct ipc_ids *ids = &C.h->ids[t];
		int32_t key = KEY_BASE + 0x100 * t;   /* each type's first object */
		bool found = false;

		if (!ids->keys || !ids->keys_cap || ids->keys_cap % 8 ||
		    (ids->keys + M_KEYS_GAP) % 64 ||
		    !inside(ids->keys, M_KEYS_GAP + (uint64_t)ids->keys_cap * 8))
			return "the key table (ipc/util.c)";
		for (uint32_t i = 0; i < ids->keys_cap && !found; i++)
			found = *(uint64_t *)at(ids->keys + M_KEYS_GAP + (uoff_t)i * 8) >> 32 ==
				(uint32_t)key;
		if (!found)
			return "the key table's slots (ipc/util.c)";
	}
	return NULL;
}

static void restore(void)
{
	struct stat st;

	if (fstat(C.fd, &st) == 0 && (uint64_t)st.st_size != C.size &&
	    ftruncate(C.fd, (off_t)C.size) < 0)
		die("ftruncate");
	for (int i = C.nlog - 1; i >= 0; i--) {
		struct undo *u = &C.log[i];

		memcpy(at(u->off), &u->old, (size_t)u->width);
	}
	C.nlog = 0;
	for (int i = 0; i < C.nreg; i++)
		memcpy(at(C.reg[i].off), C.reg[i].copy, C.reg[i].len);
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	va_list ap;

	if (C.dlen >= sizeof(C.desc) - 64)
		return;
	va_start(ap, fmt);
	C.dlen += (size_t)vsnprintf(C.desc + C.dlen, sizeof(C.desc) - C.dlen, fmt, ap);
	va_end(ap);
}

/* write V (W bytes) at OFF, logged for restore() */
static void poke(uoff_t off, int w, uint64_t v)
{
	if (off + (uoff_t)w > C.size)
		return;
	if (C.nlog == C.caplog) {
		C.caplog = C.caplog ? C.caplog * 2 : 256;
		C.log = realloc(C.log, (size_t)C.caplog * sizeof(*C.log));
		if (!C.log)
			exit(2);
	}
	C.log[C.nlog].off = off;
	C.log[C.nlog].width = w;
	C.log[C.nlog].old = 0;
	memcpy(&C.log[C.nlog].old, at(off), (size_t)w);
	C.nlog++;
	memcpy(at(off), &v, (size_t)w);
}

/* ---- the catalogue: fields of every structure, and kinds of values ---- */

enum {
	V_ZERO, V_ONE, V_ALLONES, V_SMAX, V_SMIN, V_RAND, V_SMALL, V_OFF_RAND, V_OFF_END,
	V_OFF_SELF, V_OFF_OBJ, V_OFF_LOW, V_BIG, V_PLUS1, V_OFF_ODD, V_NKINDS
};
static const char *const kind_name[V_NKINDS] = {
	"0", "1", "all ones", "signed max", "signed min", "random", "small", "a random offset",
	"the arena's end", "itself", "another object", "offset 8", "past the arena", "+1",
	"a misaligned offset",
};

/* the value of kind K for a field of W bytes at OFF inside object OBJ */
static uint64_t value(int k, int w, uoff_t off, uoff_t obj)
{
	uint64_t mask = w == 8 ? ~0ULL : (1ULL << (8 * w)) - 1, cur = 0;
	static const uoff_t *const objs[] = { C.sem, C.msg, C.shm };

	memcpy(&cur, at(off), (size_t)w);
	switch (k) {
	case V_ZERO: return 0;
	case V_ONE: return 1;
	case V_ALLONES: return mask;
	case V_SMAX: return mask >> 1;
	case V_SMIN: return (mask >> 1) + 1;
	case V_RAND: return rnd() & mask;
	case V_SMALL: return rnd_below(16);
	case V_OFF_RAND: return (rnd_below(C.size) & ~7ULL) & mask;
	case V_OFF_END: return (C.size - 8 * (1 + rnd_below(8))) & mask;
	case V_OFF_SELF: return obj & mask;
	case V_OFF_OBJ: return objs[rnd_below(3)][rnd_below(3)] & mask;
	case V_OFF_LOW: return 8;
	case V_BIG: return (C.size * 2 + rnd_below(1 << 20)) & mask;
	case V_PLUS1: return (cur + 1) & mask;
	/* what the field points at, or an object, 4 bytes on: its words
	 * misaligned (the sanitizer build traps on such an access) */
	case V_OFF_ODD: return ((cur >= 8 && cur < C.size ? cur : objs[rnd_below(3)][0]) + 4) & mask;
	}
	return 0;
}

/* a field: where it is (OFF, W) and the object it belongs to (for self
 * links), for pick I (objects and slots chosen by it) */
struct field {
	uoff_t off, obj;
	int w;
};

typedef bool (*locate_fn)(uint64_t i, struct field *f);

#define FIELD(o, fld) ((struct field){ off_of(&(fld)), (o), (int)sizeof(fld) })

static uoff_t pick_sem(uint64_t i, struct m_sem_array **s)
{
	uoff_t o = C.sem[i % NSEM];

	*s = at(o);
	return o;
}

static uoff_t pick_msg(uint64_t i, struct m_msg_queue **q)
{
	uoff_t o = C.msg[i % NMSG];

	*q = at(o);
	return o;
}

static uoff_t pick_shm(uint64_t i, struct m_shmid_kernel **s)
{
	uoff_t o = C.shm[i % NSHM];

	*s = at(o);
	return o;
}

#define HDR_FIELD(name, expr) \
	static bool name(uint64_t i, struct field *f) { (void)i; *f = FIELD(0, expr); return true; }
#define IDS_FIELD(name, fld) \
	static bool name(uint64_t i, struct field *f) { *f = FIELD(0, C.h->ids[i % 3].fld); return true; }
#define SEM_FIELD(name, fld) \
	static bool name(uint64_t i, struct field *f) \
	{ struct m_sem_array *s; uoff_t o = pick_sem(i, &s); *f = FIELD(o, s->fld); return true; }
#define MSG_FIELD(name, fld) \
	static bool name(uint64_t i, struct field *f) \
	{ struct m_msg_queue *q; uoff_t o = pick_msg(i, &q); *f = FIELD(o, q->fld); return true; }
#define SHM_FIELD(name, fld) \
	static bool name(uint64_t i, struct field *f) \
	{ struct m_shmid_kernel *s; uoff_t o = pick_shm(i, &s); *f = FIELD(o, s->fld); return true; }

IDS_FIELD(f_in_use, in_use)
IDS_FIELD(f_max_idx, max_idx)
IDS_FIELD(f_last_idx, last_idx)
IDS_FIELD(f_next_id, next_id)
IDS_FIELD(f_seq, seq)
IDS_FIELD(f_keys, keys)
IDS_FIELD(f_keys_cap, keys_cap)
IDS_FIELD(f_keys_used, keys_used)
IDS_FIELD(f_keys_tombs, keys_tombs)
IDS_FIELD(f_ids_lock, lock.word)
HDR_FIELD(f_semmsl, C.h->lim.semmsl)
HDR_FIELD(f_semopm, C.h->lim.semopm)
HDR_FIELD(f_semmns, C.h->lim.semmns)
HDR_FIELD(f_msgmax, C.h->lim.msgmax)
HDR_FIELD(f_msgmnb, C.h->lim.msgmnb)
HDR_FIELD(f_msgmni, C.h->lim.msgmni)
HDR_FIELD(f_shmmax, C.h->lim.shmmax)
HDR_FIELD(f_shmall, C.h->lim.shmall)
HDR_FIELD(f_shm_rmid_forced, C.h->lim.shm_rmid_forced)
HDR_FIELD(f_used_sems, C.h->used_sems)
HDR_FIELD(f_shm_tot, C.h->shm_tot)
HDR_FIELD(f_msg_retired, C.h->msg_retired)
HDR_FIELD(f_procs_hwm, C.h->procs_hwm)
HDR_FIELD(f_threads_hwm, C.h->threads_hwm)
HDR_FIELD(f_pool_n, C.h->shm_pool.n)
HDR_FIELD(f_pool_file, C.h->shm_pool.e[0].file)
HDR_FIELD(f_pool_state, C.h->shm_pool.e[0].state)
HDR_FIELD(f_brk, C.h->alloc.brk)
HDR_FIELD(f_populated, C.h->alloc.populated)
HDR_FIELD(f_alloc_used, C.h->alloc.used)
HDR_FIELD(f_ns_lock, C.h->ns_lock.word)
HDR_FIELD(f_alloc_lock, C.h->alloc.lock.word)
HDR_FIELD(f_alloc_frame, C.h->alloc.lock.frame)
HDR_FIELD(f_arena_size, C.h->arena_size)

static bool f_free_list(uint64_t i, struct field *f)
{
	*f = FIELD(0, C.h->alloc.free[i % 3][6 + (i / 3) % 12]);
	return true;
}

static bool f_entry(uint64_t i, struct field *f)
{
	int t = (int)(i % 3), idx = (int)((i / 3) % 8);

	*f = (struct field){ C.entries[t] + (uoff_t)idx * 8, 0, 8 };
	return true;
}

static bool f_bitmap(uint64_t i, struct field *f)
{
	*f = (struct field){ C.used[i % 3], 0, 8 };
	return true;
}

static bool f_key_slot(uint64_t i, struct field *f)
{
	struct ipc_ids *ids = &C.h->ids[i % 3];

	if (!ids->keys || !ids->keys_cap ||
	    !inside(ids->keys, M_KEYS_GAP + (uint64_t)ids->keys_cap * 8))
		return false;
	*f = (struct field){ ids->keys + M_KEYS_GAP + (uoff_t)((i / 3) % ids->keys_cap) * 8,
			     ids->keys, 8 };
	return true;
}

static bool proc_field(uint64_t i, int which, struct field *f)
{
	uint32_t n = C.h->procs_hwm && C.h->procs_hwm <= 64 ? C.h->procs_hwm : 1;
	struct uproc *p = at(C.procs + (uoff_t)(i % n) * sizeof(*p));
	uoff_t o = off_of(p);

	switch (which) {
	case 0: *f = FIELD(o, p->state); break;
	case 1: *f = FIELD(o, p->pid); break;
	case 2: *f = FIELD(o, p->starttime); break;
	case 3: *f = FIELD(o, p->undo); break;
	case 4: *f = FIELD(o, p->lock.word); break;
	default: *f = FIELD(o, p->holder); break;
	}
	return true;
}

static bool f_proc_state(uint64_t i, struct field *f) { return proc_field(i, 0, f); }
static bool f_proc_pid(uint64_t i, struct field *f) { return proc_field(i, 1, f); }
static bool f_proc_start(uint64_t i, struct field *f) { return proc_field(i, 2, f); }
static bool f_proc_undo(uint64_t i, struct field *f) { return proc_field(i, 3, f); }
static bool f_proc_lock(uint64_t i, struct field *f) { return proc_field(i, 4, f); }
static bool f_proc_holder(uint64_t i, struct field *f) { return proc_field(i, 5, f); }

static bool thread_field(uint64_t i, int which, struct field *f)
{
	uint32_t n = C.h->threads_hwm && C.h->threads_hwm <= 64 ? C.h->threads_hwm : 1;
	struct uthread *t = at(C.threads + (uoff_t)(i % n) * sizeof(*t));
	struct jframe *fr = &t->frames[(i / 7) % JDEPTH];
	uoff_t o = off_of(t);

	switch (which) {
	case 0: *f = FIELD(o, t->state); break;
	case 1: *f = FIELD(o, t->tid); break;
	case 2: *f = FIELD(o, t->proc); break;
	case 3: *f = FIELD(o, fr->lock); break;
	case 4: *f = FIELD(o, fr->n); break;
	case 5: *f = FIELD(o, fr->committed); break;
	case 6: *f = FIELD(o, fr->chunks); break;
	case 7: *f = FIELD(o, fr->e[(i / 3) % J_INLINE].where); break;
	case 8: *f = FIELD(o, t->waitq); break;
	case 10: *f = FIELD(o, t->presleep); break;
	case 11: *f = FIELD(o, t->presleep_on); break;
	case 12: *f = FIELD(o, t->presleep_op); break;
	default: *f = (struct field){ off_of(uthread_alive(t)), o, 4 }; break;
	}
	return true;
}

static bool f_th_state(uint64_t i, struct field *f) { return thread_field(i, 0, f); }
static bool f_th_tid(uint64_t i, struct field *f) { return thread_field(i, 1, f); }
static bool f_th_proc(uint64_t i, struct field *f) { return thread_field(i, 2, f); }
static bool f_fr_lock(uint64_t i, struct field *f) { return thread_field(i, 3, f); }
static bool f_fr_n(uint64_t i, struct field *f) { return thread_field(i, 4, f); }
static bool f_fr_committed(uint64_t i, struct field *f) { return thread_field(i, 5, f); }
static bool f_fr_chunks(uint64_t i, struct field *f) { return thread_field(i, 6, f); }
static bool f_fr_entry(uint64_t i, struct field *f) { return thread_field(i, 7, f); }
static bool f_th_waitq(uint64_t i, struct field *f) { return thread_field(i, 8, f); }
static bool f_th_alive(uint64_t i, struct field *f) { return thread_field(i, 9, f); }
static bool f_th_presleep(uint64_t i, struct field *f) { return thread_field(i, 10, f); }
static bool f_th_presleep_on(uint64_t i, struct field *f) { return thread_field(i, 11, f); }
static bool f_th_presleep_op(uint64_t i, struct field *f) { return thread_field(i, 12, f); }

SEM_FIELD(f_sem_type, perm.type)
SEM_FIELD(f_sem_id, perm.id)
SEM_FIELD(f_sem_key, perm.key)
SEM_FIELD(f_sem_mode, perm.mode)
SEM_FIELD(f_sem_deleted, perm.deleted)
SEM_FIELD(f_sem_nsems, nsems)
SEM_FIELD(f_sem_tag, tag)
SEM_FIELD(f_sem_locks_ready, locks_ready)
SEM_FIELD(f_sem_locks_magic, locks_magic)
SEM_FIELD(f_sem_global, use_global_lock)
SEM_FIELD(f_sem_complex, complex_count)
SEM_FIELD(f_sem_alter_first, pend_alter.first)
SEM_FIELD(f_sem_alter_last, pend_alter.last)
SEM_FIELD(f_sem_const_first, pend_const.first)
SEM_FIELD(f_sem_undo_list, undo_list)
SEM_FIELD(f_sem_glock, glock.word)

static bool one_sem_field(uint64_t i, int which, struct field *f)
{
	struct m_sem_array *s;
	uoff_t o = pick_sem(i, &s);
	struct m_sem *x = &s->sems[(i / 5) % (uint64_t)sem_sizes[i % NSEM]];

	switch (which) {
	case 0: *f = FIELD(o, x->word); break;
	case 1: *f = FIELD(o, x->pend_alter.first); break;
	case 2: *f = FIELD(o, x->pend_const.first); break;
	case 4: *f = FIELD(o, x->presleeper); break;
	default: *f = FIELD(o, x->lock.word); break;
	}
	return true;
}

static bool f_sem_word(uint64_t i, struct field *f) { return one_sem_field(i, 0, f); }
static bool f_sem_palter(uint64_t i, struct field *f) { return one_sem_field(i, 1, f); }
static bool f_sem_pconst(uint64_t i, struct field *f) { return one_sem_field(i, 2, f); }
static bool f_sem_lock(uint64_t i, struct field *f) { return one_sem_field(i, 3, f); }
static bool f_sem_presleeper(uint64_t i, struct field *f) { return one_sem_field(i, 4, f); }

MSG_FIELD(f_msg_qbytes, qbytes)
MSG_FIELD(f_msg_cbytes, cbytes)
MSG_FIELD(f_msg_qnum, qnum)
MSG_FIELD(f_msg_first, messages.first)
MSG_FIELD(f_msg_last, messages.last)
MSG_FIELD(f_msg_receivers, receivers.first)
MSG_FIELD(f_msg_senders, senders.first)
MSG_FIELD(f_msg_freelist, freelist)
MSG_FIELD(f_msg_nfree, nfree)
MSG_FIELD(f_msg_wfree, wfree)
MSG_FIELD(f_msg_ring, ring)
MSG_FIELD(f_msg_ring_alloc, ring_alloc)
MSG_FIELD(f_msg_retired_next, retired_next)
MSG_FIELD(f_msg_lock, lock.word)
MSG_FIELD(f_msg_deleted, perm.deleted)
MSG_FIELD(f_msg_mode, perm.mode)

static bool one_msg_field(uint64_t i, int which, struct field *f)
{
	struct m_msg_queue *q;
	uoff_t o = pick_msg(i, &q), m = q->messages.first;
	struct m_msgm *x;

	for (uint64_t k = (i / 3) % 4; m && inside(m, sizeof(*x)) && k > 0; k--)
		m = ((struct m_msgm *)at(m))->next;
	if (!m || !inside(m, sizeof(*x)))
		return false;
	x = at(m);
	switch (which) {
	case 0: *f = FIELD(m, x->next); break;
	case 1: *f = FIELD(m, x->size); break;
	case 2: *f = FIELD(m, x->cap); break;
	default: *f = FIELD(m, x->mtype); break;
	}
	(void)o;
	return true;
}

static bool f_msgm_next(uint64_t i, struct field *f) { return one_msg_field(i, 0, f); }
static bool f_msgm_size(uint64_t i, struct field *f) { return one_msg_field(i, 1, f); }
static bool f_msgm_cap(uint64_t i, struct field *f) { return one_msg_field(i, 2, f); }
static bool f_msgm_mtype(uint64_t i, struct field *f) { return one_msg_field(i, 3, f); }

static bool ring_field(uint64_t i, int which, struct field *f)
{
	struct m_msg_queue *q = at(C.msg[0]);
	struct msgring *r;
	uoff_t ro = (q->ring_alloc + 63) & ~(uoff_t)63;

	(void)i;
	if (!q->ring_alloc || !inside(ro, sizeof(*r)))
		return false;
	r = at(ro);
	switch (which) {
	case 0: *f = FIELD(ro, r->tail); break;
	case 1: *f = FIELD(ro, r->head); break;
	case 2: *f = FIELD(ro, r->slot[(i / 3) % RING_SLOTS].size); break;
	default: *f = FIELD(ro, r->slot[(i / 3) % RING_SLOTS].claim); break;
	}
	return true;
}

static bool f_ring_tail(uint64_t i, struct field *f) { return ring_field(i, 0, f); }
static bool f_ring_head(uint64_t i, struct field *f) { return ring_field(i, 1, f); }
static bool f_ring_size(uint64_t i, struct field *f) { return ring_field(i, 2, f); }
static bool f_ring_claim(uint64_t i, struct field *f) { return ring_field(i, 3, f); }

SHM_FIELD(f_shm_segsz, segsz)
SHM_FIELD(f_shm_file, file)
SHM_FIELD(f_shm_att, att)
SHM_FIELD(f_shm_att_cap, att_cap)
SHM_FIELD(f_shm_att_n, att_n)
SHM_FIELD(f_shm_nattch, nattch)
SHM_FIELD(f_shm_creator, creator)
SHM_FIELD(f_shm_gen, gen)
SHM_FIELD(f_shm_mode, perm.mode)
SHM_FIELD(f_shm_lock, lock.word)
SHM_FIELD(f_shm_type, perm.type)

static bool blk_field(uint64_t i, int which, struct field *f)
{
	static const uoff_t *const objs[] = { C.sem, C.msg, C.shm };
	uoff_t o = objs[i % 3][(i / 3) % 3];
	struct m_blk *b = at(o - sizeof(*b));

	switch (which) {
	case 0: *f = FIELD(o, b->magic); break;
	case 1: *f = FIELD(o, b->cls); break;
	default: *f = FIELD(o, b->allocated); break;
	}
	return true;
}

static bool f_blk_magic(uint64_t i, struct field *f) { return blk_field(i, 0, f); }
static bool f_blk_cls(uint64_t i, struct field *f) { return blk_field(i, 1, f); }
static bool f_blk_alloc(uint64_t i, struct field *f) { return blk_field(i, 2, f); }

static const struct target {
	const char *name;
	locate_fn locate;
} targets[] = {
	{ "ids.in_use", f_in_use }, { "ids.max_idx", f_max_idx }, { "ids.last_idx", f_last_idx },
	{ "ids.next_id", f_next_id }, { "ids.seq", f_seq }, { "ids.keys", f_keys },
	{ "ids.keys_cap", f_keys_cap }, { "ids.keys_used", f_keys_used },
	{ "ids.keys_tombs", f_keys_tombs }, { "ids lock word", f_ids_lock },
	{ "lim.semmsl", f_semmsl }, { "lim.semopm", f_semopm }, { "lim.semmns", f_semmns },
	{ "lim.msgmax", f_msgmax }, { "lim.msgmnb", f_msgmnb }, { "lim.msgmni", f_msgmni },
	{ "lim.shmmax", f_shmmax }, { "lim.shmall", f_shmall },
	{ "lim.shm_rmid_forced", f_shm_rmid_forced }, { "used_sems", f_used_sems },
	{ "shm_tot", f_shm_tot }, { "msg_retired", f_msg_retired }, { "procs_hwm", f_procs_hwm },
	{ "threads_hwm", f_threads_hwm }, { "shm_pool.n", f_pool_n },
	{ "shm_pool.e[0].file", f_pool_file }, { "shm_pool.e[0].state", f_pool_state },
	{ "alloc.brk", f_brk }, { "alloc.populated", f_populated }, { "alloc.used", f_alloc_used },
	{ "alloc free list", f_free_list }, { "ns_lock word", f_ns_lock },
	{ "allocator lock word", f_alloc_lock }, { "allocator lock frame", f_alloc_frame },
	{ "arena_size", f_arena_size }, { "id table entry", f_entry }, { "id bitmap", f_bitmap },
	{ "key table slot", f_key_slot },
	{ "proc.state", f_proc_state }, { "proc.pid", f_proc_pid },
	{ "proc.starttime", f_proc_start }, { "proc.undo", f_proc_undo },
	{ "proc lock word", f_proc_lock }, { "proc holder", f_proc_holder },
	{ "thread.state", f_th_state }, { "thread.tid", f_th_tid }, { "thread.proc", f_th_proc },
	{ "frame.lock", f_fr_lock }, { "frame.n", f_fr_n }, { "frame.committed", f_fr_committed },
	{ "frame.chunks", f_fr_chunks }, { "frame entry", f_fr_entry },
	{ "thread.waitq", f_th_waitq }, { "thread alive word", f_th_alive },
	{ "thread.presleep", f_th_presleep }, { "thread.presleep_on", f_th_presleep_on },
	{ "thread.presleep_op", f_th_presleep_op },
	{ "sem perm.type", f_sem_type }, { "sem perm.id", f_sem_id }, { "sem perm.key", f_sem_key },
	{ "sem perm.mode", f_sem_mode }, { "sem perm.deleted", f_sem_deleted },
	{ "sem nsems", f_sem_nsems }, { "sem tag", f_sem_tag },
	{ "sem locks_ready", f_sem_locks_ready }, { "sem locks_magic", f_sem_locks_magic },
	{ "sem use_global_lock", f_sem_global }, { "sem complex_count", f_sem_complex },
	{ "sem pend_alter.first", f_sem_alter_first }, { "sem pend_alter.last", f_sem_alter_last },
	{ "sem pend_const.first", f_sem_const_first }, { "sem undo_list", f_sem_undo_list },
	{ "sem array lock word", f_sem_glock }, { "semaphore word", f_sem_word },
	{ "semaphore pend_alter", f_sem_palter }, { "semaphore pend_const", f_sem_pconst },
	{ "semaphore lock word", f_sem_lock }, { "semaphore presleeper", f_sem_presleeper },
	{ "msg qbytes", f_msg_qbytes }, { "msg cbytes", f_msg_cbytes }, { "msg qnum", f_msg_qnum },
	{ "msg messages.first", f_msg_first }, { "msg messages.last", f_msg_last },
	{ "msg receivers", f_msg_receivers }, { "msg senders", f_msg_senders },
	{ "msg freelist", f_msg_freelist }, { "msg nfree", f_msg_nfree },
	{ "msg wfree", f_msg_wfree }, { "msg ring", f_msg_ring },
	{ "msg ring_alloc", f_msg_ring_alloc }, { "msg retired_next", f_msg_retired_next },
	{ "msg lock word", f_msg_lock }, { "msg perm.deleted", f_msg_deleted },
	{ "msg perm.mode", f_msg_mode },
	{ "message next", f_msgm_next }, { "message size", f_msgm_size },
	{ "message cap", f_msgm_cap }, { "message mtype", f_msgm_mtype },
	{ "ring tail", f_ring_tail }, { "ring head", f_ring_head },
	{ "ring slot size", f_ring_size }, { "ring slot claim", f_ring_claim },
	{ "shm segsz", f_shm_segsz }, { "shm file", f_shm_file }, { "shm att", f_shm_att },
	{ "shm att_cap", f_shm_att_cap }, { "shm att_n", f_shm_att_n },
	{ "shm nattch", f_shm_nattch }, { "shm creator", f_shm_creator }, { "shm gen", f_shm_gen },
	{ "shm perm.mode", f_shm_mode }, { "shm lock word", f_shm_lock },
	{ "shm perm.type", f_shm_type },
	{ "block magic", f_blk_magic }, { "block class", f_blk_cls },
	{ "block allocated", f_blk_alloc },
};
#define NTARGETS ((int)(sizeof(targets) / sizeof(targets[0])))

/* damage target T with a value of kind K (pick I chooses object, slot...) */
static void damage(int t, int k, uint64_t i)
{
	struct field f;
	uint64_t v;

	if (!targets[t].locate(i, &f)) {
		note("[%s: none]", targets[t].name);
		return;
	}
	v = value(k, f.w, f.off, f.obj);
	note("[%s = %s (0x%llx)]", targets[t].name, kind_name[k], (unsigned long long)v);
	poke(f.off, f.w, v);
}

/* a key table full of keys that match nothing: probes find no empty slot */
static void fill_keys(int t)
{
	struct ipc_ids *ids = &C.h->ids[t];

	if (!ids->keys || !ids->keys_cap || ids->keys_cap > 65536 ||
	    !inside(ids->keys, M_KEYS_GAP + (uint64_t)ids->keys_cap * 8))
		return;
	for (uint32_t i = 0; i < ids->keys_cap; i++)
		poke(ids->keys + M_KEYS_GAP + (uoff_t)i * 8, 8, (0x7777ULL + i) << 32 | 5000);
	note("[key table %d full of stray keys]", t);
}

/* a raw word at a random place of the live arena */
static void raw_word(void)
{
	struct region *r = &C.reg[rnd_below((uint64_t)C.nreg)];
	uoff_t off = r->off + (rnd_below(r->len) & ~7ULL);

	if (off + 8 > C.size)
		return;
	note("[raw word at %llu]", (unsigned long long)off);
	poke(off, 8, rnd_below(4) ? rnd() : rnd_below(C.size));
}

static void corrupt_random(void)
{
	int n = 1 + (int)rnd_below(4);

	for (int j = 0; j < n; j++)
		damage((int)rnd_below(NTARGETS), (int)rnd_below(V_NKINDS), rnd());
	if (rnd_below(4) == 0)
		for (int j = 0, m = 1 + (int)rnd_below(6); j < m; j++)
			raw_word();
	if (rnd_below(40) == 0)
		fill_keys((int)rnd_below(3));
}

/* shorten the namespace file: at a random place of the live arena, or
 * nearly all of it */
static void truncate_ns(void)
{
	static const uint64_t fixed[] = { 0, 4096, 8192 };
	uint64_t to;

	if (rnd_below(4) == 0) {
		to = fixed[rnd_below(3)];
	} else {
		struct region *r = &C.reg[rnd_below((uint64_t)C.nreg)];

		to = (r->off + rnd_below(r->len)) & ~4095ULL;
	}
	note("[namespace file truncated to %llu bytes]", (unsigned long long)to);
	if (ftruncate(C.fd, (off_t)to) < 0)
		die("ftruncate");
}

/* shorten segment I's file (the driver puts it back after the round) */
static void truncate_seg(const char *nsfile, int i)
{
	struct m_shmid_kernel *s = at(C.shm[i]);
	char path[4300];
	int fd;
	uint64_t to = rnd_below(2) ? 0 : 4096;

	snprintf(path, sizeof(path), "%.4000s.shm-%llx", nsfile, (unsigned long long)s->file);
	fd = open(path, O_RDWR);
	if (fd < 0 || ftruncate(fd, (off_t)to) < 0) {
		note("[segment file %s: %s]", path, strerror(errno));
	} else {
		note("[segment %d's file truncated to %llu bytes]", i, (unsigned long long)to);
	}
	if (fd >= 0)
		close(fd);
}

static int corrupter(const char *nsfile, int in, int out)
{
	char line[256];
	const char *bad;

	snapshot(nsfile);
	bad = check_mirror();
	if (bad) {
		say(out, "MIRROR %s\n", bad);
		return 1;
	}
	say(out, "OK %d targets\n", NTARGETS);
	while (read_line(in, line, sizeof(line), 0) >= 0) {
		unsigned long long seed, round;
		int t, k;

		C.dlen = 0;
		C.desc[0] = 0;
		if (sscanf(line, "T %d %d %llu", &t, &k, &round) == 3) {
			restore();
			rng_seed(0, round);
			damage(t, k, round);
		} else if (sscanf(line, "X %llu %llu", &seed, &round) == 2) {
			restore();
			rng_seed(seed, round);
			corrupt_random();
		} else if (sscanf(line, "F %llu %llu", &seed, &round) == 2) {
			restore();
			rng_seed(seed, round);
			if (rnd_below(3))
				truncate_ns();
			else
				truncate_seg(nsfile, (int)rnd_below(NSHM));
		} else if (!strcmp(line, "K")) {
			restore();
			fill_keys((int)rnd_below(3));
		} else if (!strcmp(line, "Z")) {
			restore();
		} else if (!strcmp(line, "Q")) {
			restore();
			break;
		}
		say(out, "D %s\n", C.desc[0] ? C.desc : "-");
	}
	return 0;
}

/* ===================================================================== */
/* the driver (root)                                                      */
/* ===================================================================== */

struct seg_copy {
	char path[4200];
	unsigned char *data;
	off_t size;
	uid_t uid;
	gid_t gid;
	mode_t mode;
};

static struct {
	const char *dir, *ns, *bin, *lib;
	char nsfile[4200];
	uid_t vuid, huid;
	gid_t vgid, hgid;
	int m_in, m_out;          /* the master's stdin, stdout */
	int c_in, c_out;          /* the corrupter's */
	pid_t master, corrupter;
	struct seg_copy segs[16];
	int nsegs;
	int tap;
	int failed;
	bool dead;                /* the master or the corrupter is gone */
} D;

static void become(uid_t uid, gid_t gid)
{
	if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
		die("setuid");
}

/* start BIN ARGS as UID with the library preloaded; *IN, *OUT: its stdin
 * and stdout (nonblocking for us) */
static pid_t spawn_victim(char *const args[], int *in, int *out)
{
	int pin[2], pout[2];
	pid_t pid;

	if (pipe(pin) < 0 || pipe(pout) < 0)
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		char env_pre[4300], env_dir[4300], env_ns[300], env_asan[600], env_ubsan[600];
		char *envp[] = { env_pre, env_dir, env_ns, "UIPC_LOCK_WAIT_MS=3000", env_asan,
				 env_ubsan, NULL };

		dup2(pin[0], 0);
		dup2(pout[1], 1);
		if (!getenv("UIPC_HOSTILE_VERBOSE")) {
			int nul = open("/dev/null", O_WRONLY);

			if (nul >= 0)
				dup2(nul, 2);
		}
		close(pin[1]);
		close(pout[0]);
		become(D.vuid, D.vgid);
		snprintf(env_pre, sizeof(env_pre), "LD_PRELOAD=%s", D.lib);
		snprintf(env_dir, sizeof(env_dir), "UIPC_DIR=%s", D.dir);
		snprintf(env_ns, sizeof(env_ns), "UIPC_NS=shared:%s", D.ns);
		/* the sanitizer build's settings (tests/unit-sanitize.t) */
		snprintf(env_asan, sizeof(env_asan), "ASAN_OPTIONS=%.500s",
			 getenv("ASAN_OPTIONS") ? getenv("ASAN_OPTIONS") : "");
		snprintf(env_ubsan, sizeof(env_ubsan), "UBSAN_OPTIONS=%.500s",
			 getenv("UBSAN_OPTIONS") ? getenv("UBSAN_OPTIONS") : "");
		execve(D.bin, args, envp);
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	fcntl(pout[0], F_SETFL, O_NONBLOCK);
	*in = pin[1];
	*out = pout[0];
	return pid;
}

static void save_segments(void)
{
	DIR *d = opendir(D.dir);
	struct dirent *e;
	const char *base = strrchr(D.nsfile, '/') + 1;
	char prefix[300];

	snprintf(prefix, sizeof(prefix), "%s.shm-", base);
	if (!d)
		die("opendir");
	while ((e = readdir(d)) && D.nsegs < 16) {
		struct seg_copy *s = &D.segs[D.nsegs];
		struct stat st;
		int fd;

		if (strncmp(e->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(s->path, sizeof(s->path), "%s/%s", D.dir, e->d_name);
		fd = open(s->path, O_RDONLY);
		if (fd < 0 || fstat(fd, &st) < 0)
			die(s->path);
		s->size = st.st_size;
		s->uid = st.st_uid;
		s->gid = st.st_gid;
		s->mode = st.st_mode & 07777;
		s->data = malloc((size_t)st.st_size + 1);
		if (!s->data || pread(fd, s->data, (size_t)st.st_size, 0) != st.st_size)
			die("read segment");
		close(fd);
		D.nsegs++;
	}
	closedir(d);
}

/* after a round: the master's segment files as they were, no others */
static void restore_segments(void)
{
	DIR *d = opendir(D.dir);
	struct dirent *e;
	const char *base = strrchr(D.nsfile, '/') + 1;
	char prefix[300], path[4400];

	snprintf(prefix, sizeof(prefix), "%s.", base);
	while (d && (e = readdir(d))) {
		bool keep = false;

		if (strncmp(e->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", D.dir, e->d_name);
		for (int i = 0; i < D.nsegs; i++)
			keep |= !strcmp(D.segs[i].path, path);
		if (!keep)
			unlink(path);
	}
	if (d)
		closedir(d);
	for (int i = 0; i < D.nsegs; i++) {
		struct seg_copy *s = &D.segs[i];
		int fd = open(s->path, O_RDWR | O_CREAT, s->mode);

		if (fd < 0 || ftruncate(fd, s->size) < 0 ||
		    pwrite(fd, s->data, (size_t)s->size, 0) != s->size ||
		    fchown(fd, s->uid, s->gid) < 0 || fchmod(fd, s->mode) < 0)
			die("restore segment");
		close(fd);
	}
}

static void tap(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tap(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", ok ? "ok" : "not ok", ++D.tap);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		D.failed++;
}

/* one round: CMD to the corrupter (its description in DESC), then the
 * master's round; true if the victim came through (else WHY says how) */
static bool round_trip(const char *cmd, uint64_t seed, uint64_t round, char *desc, size_t dlen,
		       char *why, size_t wlen)
{
	char line[2200];

	if (!say(D.c_in, "%s\n", cmd) || read_line(D.c_out, line, sizeof(line), 60) < 0 ||
	    strncmp(line, "D ", 2)) {
		snprintf(why, wlen, "the corrupter did not answer: %s", fate(D.corrupter));
		D.dead = true;
		return false;
	}
	snprintf(desc, dlen, "%s", line + 2);
	why[0] = 0;
	if (!say(D.m_in, "R %llu %llu\n", (unsigned long long)seed, (unsigned long long)round)) {
		snprintf(why, wlen, "the master did not answer: %s", fate(D.master));
		D.dead = true;
		return false;
	}
	for (;;) {
		int r = read_line(D.m_out, line, sizeof(line), WATCHDOG_S * 3);

		if (r < 0) {
			snprintf(why, wlen, "the master did not answer: %s", fate(D.master));
			D.dead = true;
			return false;
		}
		if (!strncmp(line, "FAIL ", 5)) {
			if (!why[0])
				snprintf(why, wlen, "%.400s", line + 5);
			continue;
		}
		if (!strncmp(line, "DONE ", 5)) {
			restore_segments();
			if (!strcmp(line + 5, "ok"))
				return true;
			if (!why[0] || strcmp(line + 5, "canary"))
				snprintf(why + strlen(why), wlen - strlen(why), "%s%.200s",
					 why[0] ? "; " : "", line + 5);
			return false;
		}
	}
}

static void run_targeted(void)
{
	char cmd[64], desc[2200], why[512];

	for (int t = 0; t < NTARGETS; t++) {
		int bad = 0;
		char first[3000] = "";

		for (int k = 0; k < V_NKINDS; k++) {
			for (uint64_t pick = 0; pick < 2; pick++) {
				uint64_t round = (uint64_t)t * 1000 + (uint64_t)k * 10 + pick;

				snprintf(cmd, sizeof(cmd), "T %d %d %llu", t, k, (unsigned long long)round);
				if (!D.dead &&
				    !round_trip(cmd, 0, round, desc, sizeof(desc), why, sizeof(why)) &&
				    !bad++)
					snprintf(first, sizeof(first), "%s: %s (round %llu)", desc, why,
						 (unsigned long long)round);
			}
		}
		tap(!bad, "%s: %d values, every victim came through%s%s", targets[t].name,
		    V_NKINDS * 2, bad ? "; first failure: " : "", first);
	}
	{
		int bad = 0;

		for (int r = 0; r < 6; r++)
			if (!round_trip("K", 0, 90000 + (uint64_t)r, desc, sizeof(desc), why, sizeof(why)))
				bad++;
		tap(!bad, "key tables full of stray keys: every victim came through%s%s",
		    bad ? "; " : "", bad ? why : "");
	}
}

static void run_random(uint64_t seed, uint64_t rounds, const char *mode)
{
	char cmd[64], desc[2200], why[512];
	uint64_t batch = rounds >= 10000 ? 1000 : rounds >= 1000 ? 250 : 50;

	printf("# %s rounds with seed %llu (replay: UIPC_HOSTILE_SEED=%llu)\n", mode,
	       (unsigned long long)seed, (unsigned long long)seed);
	/* UIPC_HOSTILE_FROM=N: begin at round N (to replay one) */
	for (uint64_t from = getenv("UIPC_HOSTILE_FROM") ? strtoull(getenv("UIPC_HOSTILE_FROM"), NULL, 0) : 0;
	     from < rounds; from += batch) {
		uint64_t to = from + batch < rounds ? from + batch : rounds;
		int bad = 0;
		char first[3000] = "";

		for (uint64_t r = from; r < to; r++) {
			snprintf(cmd, sizeof(cmd), "%s %llu %llu", mode, (unsigned long long)seed,
				 (unsigned long long)r);
			if (!round_trip(cmd, seed, r, desc, sizeof(desc), why, sizeof(why)) && !bad++)
				snprintf(first, sizeof(first), "round %llu: %s: %s",
					 (unsigned long long)r, desc, why);
			if (D.dead)
				break;
		}
		tap(!bad, "seed %llu, %s rounds %llu-%llu: every victim came through%s%s",
		    (unsigned long long)seed, !strcmp(mode, "F") ? "truncation" : "corruption",
		    (unsigned long long)from, (unsigned long long)to - 1, bad ? "; first failure: " : "",
		    first);
		if (D.dead)
			break;
	}
}

static int drive(int argc, char **argv)
{
	char line[512], *args[NSEM + NMSG + NSHM + 3];
	char idbuf[NSEM + NMSG + NSHM][16];
	int in, out, cpipe_in[2], cpipe_out[2];
	const char *mode;
	uint64_t seed, rounds;

	if (argc < 12) {
		fprintf(stderr, "usage: hostile drive DIR NS BIN LIB VUID VGID HUID HGID MODE SEED ROUNDS\n");
		return 2;
	}
	D.dir = argv[1];
	D.ns = argv[2];
	D.bin = argv[3];
	D.lib = argv[4];
	D.vuid = (uid_t)atoi(argv[5]);
	D.vgid = (gid_t)atoi(argv[6]);
	D.huid = (uid_t)atoi(argv[7]);
	D.hgid = (gid_t)atoi(argv[8]);
	mode = argv[9];
	seed = strtoull(argv[10], NULL, 0);
	rounds = strtoull(argv[11], NULL, 0);
	snprintf(D.nsfile, sizeof(D.nsfile), "%s/uipc-shared-%s", D.dir, D.ns);
	signal(SIGPIPE, SIG_IGN);

	/* the objects, made by the victim user */
	args[0] = (char *)D.bin;
	args[1] = "setup";
	args[2] = NULL;
	{
		pid_t pid = spawn_victim(args, &in, &out);
		int st;

		if (read_line(out, line, sizeof(line), 60) < 0 || strncmp(line, "BASE ", 5)) {
			printf("1..1\nnot ok 1 - the victim could not make its objects\n");
			return 1;
		}
		waitpid(pid, &st, 0);
		close(in);
		close(out);
	}
	/* the master, which learns their sizes first */
	args[1] = "master";
	{
		char *p = line + 5;

		for (int i = 0; i < NSEM + NMSG + NSHM; i++) {
			snprintf(idbuf[i], sizeof(idbuf[i]), "%ld", strtol(p, &p, 10));
			args[2 + i] = idbuf[i];
		}
		args[2 + NSEM + NMSG + NSHM] = NULL;
	}
	D.master = spawn_victim(args, &D.m_in, &D.m_out);
	if (read_line(D.m_out, line, sizeof(line), 60) < 0 || strcmp(line, "READY")) {
		printf("1..1\nnot ok 1 - the victim's master did not start\n");
		return 1;
	}
	save_segments();
	/* the corrupter, as the hostile user */
	if (pipe(cpipe_in) < 0 || pipe(cpipe_out) < 0)
		die("pipe");
	D.corrupter = fork();
	if (D.corrupter == 0) {
		close(cpipe_in[1]);
		close(cpipe_out[0]);
		become(D.huid, D.hgid);
		exit(corrupter(D.nsfile, cpipe_in[0], cpipe_out[1]));
	}
	close(cpipe_in[0]);
	close(cpipe_out[1]);
	D.c_in = cpipe_in[1];
	D.c_out = cpipe_out[0];
	fcntl(D.c_out, F_SETFL, O_NONBLOCK);
	if (read_line(D.c_out, line, sizeof(line), 60) < 0 || strncmp(line, "OK ", 3)) {
		printf("1..1\nnot ok 1 - the hostile user's view of the arena: %s (update "
		       "tests/unit/hostile_mirror.h)\n", line);
		return 1;
	}
	if (!strcmp(mode, "targeted"))
		run_targeted();
	else if (!strcmp(mode, "random"))
		run_random(seed, rounds, "X");
	else
		run_random(seed, rounds, "F");
	/* the arena back as it was, then everyone out */
	if (D.dead)
		tap(false, "the master and the corrupter lived to the end");
	say(D.c_in, "Q\n");
	read_line(D.c_out, line, sizeof(line), 60);
	say(D.m_in, "Q\n");
	waitpid(D.master, NULL, 0);
	waitpid(D.corrupter, NULL, 0);
	printf("1..%d\n", D.tap);
	return D.failed ? 1 : 0;
}

/* ===================================================================== */
/* holdstop: a member that takes a queue's lock word and stops            */
/* ===================================================================== */

/* the lock word that names this thread as holder (core/layout.h): its
 * live thread slot's generation and index + 1 */
static uint64_t own_lock_word(void *m, struct uipc_hdr *h)
{
	int32_t tid = (int32_t)syscall(SYS_gettid);

	for (uint32_t i = 0; i < h->threads_hwm && i < MAX_THREADS; i++) {
		struct uthread *t = (struct uthread *)((char *)m + h->threads +
						       (uoff_t)i * sizeof(*t));
		uint64_t w = atomic_load_explicit(&t->state, memory_order_acquire);

		if (SLOT_STATE(w) == SLOT_LIVE && SLOT_ID(w) == tid)
			return (uint64_t)SLOT_GEN(w) << 32 | (i + 1);
	}
	die("holdstop: no thread slot of ours");
	return 0;
}

static int holdstop(int argc, char **argv)
{
	bool sem = argc > 2 && !strcmp(argv[2], "sem");
	key_t key = (key_t)strtol(argv[1], NULL, 0);
	int id = sem ? semget(key, 0, 0) : msgget(key, 0);
	struct msqid_ds ds;
	struct semid_ds sds;
	char path[4200];
	const char *dir = getenv("UIPC_DIR"), *ns = getenv("UIPC_NS");
	struct uipc_hdr *h;
	struct stat st;
	void *m;
	int fd;

	/* a call first: this thread is a registered, live member */
	if (id < 0 || (sem ? semctl(id, 0, IPC_STAT, &sds) : msgctl(id, IPC_STAT, &ds)) < 0 ||
	    !dir || !ns || strncmp(ns, "shared:", 7))
		die("holdstop: msgget");
	snprintf(path, sizeof(path), "%s/uipc-shared-%s", dir, ns + 7);
	fd = open(path, O_RDWR);
	if (fd < 0 || fstat(fd, &st) < 0)
		die(path);
	m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		die("mmap");
	h = m;
	{
		int idx = id & (h->ipcmni - 1), t = sem ? IPC_SEM_IDS : IPC_MSG_IDS;
		uoff_t off = *(uoff_t *)((char *)m + h->ids[t].entries + (uoff_t)idx * 8);
		struct ulock *l = sem ? &((struct m_sem_array *)((char *)m + off))->glock :
					&((struct m_msg_queue *)((char *)m + off))->lock;

		atomic_store_explicit(&l->word, own_lock_word(m, h), memory_order_release);
	}
	printf("held by %d\n", (int)getpid());
	fflush(stdout);
	raise(SIGSTOP);
	return 0;
}

/*
 * bounded KEY (preloaded, as the victim, while holdstop holds queue KEY's
 * lock): every call returns within a bound, as the kernel's would: a
 * blocking msgrcv is interrupted by a handler (EINTR), a semtimedop keeps
 * its timeout, a non-blocking call gives up (UIPC_LOCK_WAIT_MS).  Prints
 * one line per call: what it returned and how long it took.
 */
static void on_alarm(int sig)
{
	(void)sig;
}

static double secs_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* one call's result: "NAME: ERRNO in N s" (or "returned R") */
static void report_call(const char *name, long r, const struct timespec *t0)
{
	printf("%s: %s in %.0f s\n", name, r < 0 ? strerror(errno) : "returned", secs_since(t0));
	fflush(stdout);
}

static int bounded(char **argv)
{
	int id = msgget((key_t)strtol(argv[1], NULL, 0), 0);
	struct { long mtype; char text[64]; } m = { 1, "x" };
	struct sigaction sa;
	struct timespec t0;
	struct msqid_ds ds;

	if (id < 0)
		die("msgget");
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	alarm(1);
	report_call("msgrcv, blocking, a signal after 1 s", (long)msgrcv(id, &m, sizeof(m.text), 0, 0),
		    &t0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	alarm(1);
	report_call("msgsnd, blocking, a signal after 1 s", msgsnd(id, &m, 8, 0), &t0);
	alarm(0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	report_call("msgsnd, IPC_NOWAIT", msgsnd(id, &m, 8, IPC_NOWAIT), &t0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	report_call("msgctl IPC_STAT", msgctl(id, IPC_STAT, &ds), &t0);
	return 0;
}

/*
 * leave KEY (preloaded, as the victim): with a SEM_UNDO adjustment on the
 * semaphore array KEY, stop until continued (meanwhile holdstop takes the
 * array's lock), then setns into its own namespace (its SEM_UNDO applied,
 * as the kernel's exit_sem at setns) and unshare (the namespace left, its
 * exit work done): each must return within the exit work's bound (2 s a
 * lock), as the kernel's would at once, not wait UIPC_LOCK_WAIT_MS.
 */
static int leave(char **argv)
{
	int id = semget((key_t)strtol(argv[1], NULL, 0), 0, 0), door;
	struct sembuf up = { 0, 1, SEM_UNDO };
	struct timespec t0;

	if (id < 0 || semop(id, &up, 1) < 0)
		die("leave: semop");
	printf("undo taken by %d\n", (int)getpid());
	fflush(stdout);
	raise(SIGSTOP);
	door = open("/proc/self/ns/ipc", O_RDONLY | O_CLOEXEC);
	if (door < 0)
		die("leave: /proc/self/ns/ipc");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	report_call("setns into its own namespace", setns(door, CLONE_NEWIPC), &t0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	report_call("unshare", unshare(CLONE_NEWIPC), &t0);
	return 0;
}

/* getval KEY: semaphore 0 of array KEY (a call that reaps dead holders
 * first, as any semctl of the array does) */
static int getval(char **argv)
{
	int id = semget((key_t)strtol(argv[1], NULL, 0), 0, 0);
	int v = id < 0 ? -1 : semctl(id, 0, GETVAL);

	printf("semval %d%s%s\n", v, v < 0 ? " " : "", v < 0 ? strerror(errno) : "");
	return v < 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "drive"))
		return drive(argc - 1, argv + 1);
	if (!strcmp(argv[1], "setup"))
		return setup();
	if (!strcmp(argv[1], "master"))
		return master(argc - 2, argv + 2);
	if (!strcmp(argv[1], "holdstop") && argc > 2)
		return holdstop(argc - 1, argv + 1);
	if (!strcmp(argv[1], "bounded") && argc > 2)
		return bounded(argv + 1);
	if (!strcmp(argv[1], "leave") && argc > 2)
		return leave(argv + 1);
	if (!strcmp(argv[1], "getval") && argc > 2)
		return getval(argv + 1);
	return 2;
}
