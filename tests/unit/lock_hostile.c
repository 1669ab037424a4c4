/*
 * lock_hostile.c - nothing another member can write is ever followed as a
 * pointer, by uipc, glibc or the kernel, and the arena holds no process
 * address (issue 14, item 3).  Run under uipc (LD_PRELOAD) in a fresh
 * namespace; prints TAP.
 *
 * Victim processes make locked calls in a loop (SEM_UNDO semop on a shared
 * mutex semaphore, SETVAL and GETVAL, 1,000-byte messages, semget and shmget
 * with IPC_RMID), from their main thread and from short-lived threads (a
 * thread slot registered and given back each time), fork children that make
 * a call and exit, and are SIGKILLed at random moments (the kernel walks
 * their robust lists then, and survivors take their locks over).
 *
 *  1. robust lists: every entry of every victim thread's robust list, while
 *     the thread has a slot, lies in private memory (not in the arena, not
 *     in any shared mapping), and glibc's own robust mutexes on the same
 *     lists still work: a victim killed while it holds one (locked before
 *     or after its first uipc call) leaves it owner-dead.
 *  2. no process address in the arena: while victims are in their calls,
 *     no 8-byte word of the arena holds an address inside any mapping of
 *     any process of the test.
 *  3. planted addresses: a hostile process writes addresses of the victims'
 *     memory (a canary block at the same address in every process forked
 *     from this one) into every free lock word and frame field, every
 *     process slot's holder, and the alive words and first words of unused
 *     thread slots, all the time; the victims' canaries stay intact, no
 *     victim dies of anything but our SIGKILL, none hangs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
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

#include "../../core/layout.h"

#define NVICTIMS  4
#define CANARY    0xa5
#define CANARY_SZ (64 << 10)
#define MSGSZ     1000

/* the victims' memory the hostile aims at: the same address in every
 * process forked from this one */
static unsigned char canary[CANARY_SZ] __attribute__((aligned(4096)));

static int ntest, nfailed;

static void report(bool ok, const char *what, const char *detail)
{
	ntest++;
	if (!ok)
		nfailed++;
	printf("%s %d - %s\n", ok ? "ok" : "not ok", ntest, what);
	/* on stderr too: prove shows it without -v */
	if (!ok && detail && *detail) {
		printf("# %s\n", detail);
		fprintf(stderr, "# %s\n", detail);
	}
	fflush(stdout);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- the namespace file, as a hostile member sees it ---- */

static char ns_path[4096];
static char *arena;
static uint64_t arena_size;

static int map_arena(void)
{
	struct stat st;
	int fd = open(ns_path, O_RDWR);

	if (fd < 0 || fstat(fd, &st) < 0)
		return -1;
	arena_size = (uint64_t)st.st_size;
	arena = mmap(NULL, arena_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
	close(fd);
	return arena == MAP_FAILED ? -1 : 0;
}

static struct uipc_hdr *hdr(void)
{
	return (struct uipc_hdr *)arena;
}

static void *at(uint64_t off, uint64_t len)
{
	return off >= 8 && off < arena_size && len <= arena_size - off ? arena + off : NULL;
}

/* ---- shared state of the test (an anonymous shared mapping) ---- */

struct shared {
	atomic_int stop;                 /* victims: finish the loop and exit */
	atomic_int in_calls;             /* victims inside a locked call now */
	atomic_long calls;
	atomic_int bad_list;             /* robust-list entries in shared memory */
	char bad_list_what[256];
	atomic_int ready[NVICTIMS];      /* victim K holds its mutex, made calls */
	pthread_mutex_t robust[NVICTIMS]; /* glibc's own, robust, pshared */
};

static struct shared *sh;
static int semid, msqid;

/* ---- 1: robust lists in private memory ---- */

struct range {
	uintptr_t lo, hi;
	bool shared;
	bool arena;                /* the namespace file's mapping from its start */
};

/* how much of a mapping of LEN bytes at the arena's start holds what
 * the arena handed out (its brk, page-rounded) */
static unsigned long arena_used(unsigned long len)
{
	uint64_t brk = atomic_load_explicit((_Atomic uint64_t *)&hdr()->alloc.brk,
					    memory_order_relaxed);

	brk = (brk + 4095) & ~4095ULL;
	return brk && brk < len ? (unsigned long)brk : len;
}

/* the mappings of process PID (0: ourselves), at most MAX */
static int read_maps(pid_t pid, struct range *r, int max)
{
	char path[64], line[512];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof path, pid ? "/proc/%d/maps" : "/proc/self/maps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof line, f)) {
		unsigned long lo, hi, off;
		char perms[8], *path;

		if (strstr(line, "[vsyscall]"))
			continue;
		if (sscanf(line, "%lx-%lx %7s %lx", &lo, &hi, perms, &off) != 4)
			continue;
		path = strchr(line, '/');
		r[n].lo = lo;
		r[n].hi = hi;
		r[n].shared = perms[3] == 's';
		r[n].arena = path && off == 0 && !strncmp(path, ns_path, strlen(ns_path)) &&
			     path[strlen(ns_path)] == '\n';
		n++;
	}
	fclose(f);
	return n;
}

/* Is [P, P + LEN) inside a shared mapping? */
static bool in_shared(const struct range *r, int n, uintptr_t p, size_t len)
{
	for (int i = 0; i < n; i++)
		if (r[i].shared && p + len > r[i].lo && p < r[i].hi)
			return true;
	return false;
}

/* Walk this thread's robust list: every entry (its "prev" and "next"
 * words) must be in private memory, but for the test's own mutexes (which
 * are in shared memory on purpose). */
static void check_robust_list(void)
{
	static struct range r[4096];
	void **head = NULL, **e;
	size_t len;
	int n = read_maps(0, r, 4096), steps = 0;

	if (syscall(SYS_get_robust_list, 0, &head, &len) || !head)
		return;
	for (e = (void **)((uintptr_t)head[0] & ~(uintptr_t)1); e != head && steps < 4096; steps++) {
		bool ours = (char *)e >= (char *)sh->robust && (char *)e < (char *)(sh->robust + NVICTIMS);

		if (!ours && in_shared(r, n, (uintptr_t)(e - 1), 16)) {
			if (!atomic_exchange(&sh->bad_list, 1))
				snprintf(sh->bad_list_what, sizeof sh->bad_list_what,
					 "pid %d: robust list entry %p is in a shared mapping",
					 (int)getpid(), (void *)e);
			return;
		}
		e = (void **)((uintptr_t)e[0] & ~(uintptr_t)1);
	}
}

/* ---- the victims ---- */

static bool canary_intact(void)
{
	for (size_t i = 0; i < sizeof canary; i++)
		if (canary[i] != CANARY)
			return false;
	return true;
}

static void locked_calls(unsigned *seed, int i)
{
	struct sembuf down = { 0, -1, SEM_UNDO }, up = { 0, 1, SEM_UNDO };
	struct { long mtype; char text[MSGSZ]; } m;

	atomic_fetch_add(&sh->in_calls, 1);
	semop(semid, &down, 1);
	semop(semid, &up, 1);
	semctl(semid, 1, SETVAL, i & 0xff);
	semctl(semid, 1, GETVAL);
	m.mtype = 1 + (rand_r(seed) & 7);
	memset(m.text, 'm', sizeof m.text);
	if (msgsnd(msqid, &m, sizeof m.text, IPC_NOWAIT) < 0)
		msgrcv(msqid, &m, sizeof m.text, 0, IPC_NOWAIT | MSG_NOERROR);
	msgrcv(msqid, &m, sizeof m.text, 0, IPC_NOWAIT | MSG_NOERROR);
	if ((i & 15) == 0) {
		int s = semget(IPC_PRIVATE, 3, 0600);
		int g = shmget(IPC_PRIVATE, 4096, 0600);

		if (s >= 0)
			semctl(s, 0, IPC_RMID);
		if (g >= 0)
			shmctl(g, IPC_RMID, NULL);
	}
	atomic_fetch_sub(&sh->in_calls, 1);
	atomic_fetch_add(&sh->calls, 1);
}

/* a short-lived thread: a slot registered, used and given back */
static void *short_thread(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;

	for (int i = 0; i < 4; i++)
		locked_calls(&seed, i);
	check_robust_list();
	return canary_intact() ? NULL : (void *)1;
}

/* lock a robust mutex whose last holder may have died */
static void lock_robust(pthread_mutex_t *m)
{
	if (pthread_mutex_lock(m) == EOWNERDEAD)
		pthread_mutex_consistent(m);
}

/*
 * Victim in slot K: its robust mutex locked around uipc's first call
 * (before it for even K, after it for odd K) and held, then calls until
 * told to stop.  Exit status: 0, or 3 if the canary block changed.
 */
static int victim(int k)
{
	pthread_mutex_t *mine = &sh->robust[k];
	unsigned seed = (unsigned)getpid();
	bool bad = false;

	if (k % 2 == 0)
		lock_robust(mine);
	locked_calls(&seed, 0);
	if (k % 2 == 1) {
		/* glibc adds and removes next to uipc's entry, then holds it */
		lock_robust(mine);
		pthread_mutex_unlock(mine);
		lock_robust(mine);
	}
	check_robust_list();
	atomic_store(&sh->ready[k], 1);
	for (int i = 1; !atomic_load(&sh->stop); i++) {
		locked_calls(&seed, i);
		if (i % 64 == 0) {
			pthread_t t;
			void *r = NULL;

			if (pthread_create(&t, NULL, short_thread, (void *)(uintptr_t)(seed + i)) == 0) {
				pthread_join(t, &r);
				bad |= r != NULL;
			}
		}
		if (i % 256 == 0) {
			pid_t c = fork();

			if (c == 0) {
				locked_calls(&seed, i);
				check_robust_list();
				_exit(canary_intact() ? 0 : 3);
			}
			if (c > 0) {
				int st;

				waitpid(c, &st, 0);
				bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
			}
		}
	}
	return bad || !canary_intact() ? 3 : 0;
}

static pid_t start_victim(int k)
{
	pid_t p;

	atomic_store(&sh->ready[k], 0);
	p = fork();
	if (p == 0)
		_exit(victim(k));
	return p;
}

/* ---- 2: no process address in the arena ---- */

static struct range addr_ranges[65536];
static int n_addr_ranges;

static void add_ranges_of(pid_t pid)
{
	int from = n_addr_ranges;

	n_addr_ranges += read_maps(pid, addr_ranges + n_addr_ranges,
				   (int)(sizeof addr_ranges / sizeof addr_ranges[0]) - n_addr_ranges);
	/* the namespace's mapping reserves 4 GiB: only what the arena handed
	 * out can be pointed at, and its 4 GiB are a target that counters
	 * kept in two 32-bit fields side by side hit by chance (a semaphore
	 * array's nsems 3 and tag 0x7fcf made 0x7fcf00000003 while the arena
	 * was mapped at 0x7fce...).  (Only here: the robust-list check keeps
	 * the whole mapping as shared memory.) */
	for (int i = from; i < n_addr_ranges; i++)
		if (addr_ranges[i].arena)
			addr_ranges[i].hi = addr_ranges[i].lo +
					    arena_used(addr_ranges[i].hi - addr_ranges[i].lo);
}

static bool is_process_address(uint64_t v)
{
	for (int i = 0; i < n_addr_ranges; i++)
		if (v >= addr_ranges[i].lo && v < addr_ranges[i].hi)
			return true;
	return false;
}

/* Scan the arena's data (not its holes) for such words: the first one
 * found, its offset in *WHERE; 0 if none. */
static uint64_t scan_for_addresses(uint64_t *where)
{
	int fd = open(ns_path, O_RDONLY);
	off_t pos = 0;

	if (fd < 0)
		return 0;
	for (;;) {
		off_t data = lseek(fd, pos, SEEK_DATA), hole;

		if (data < 0)
			break;
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole <= data)
			break;
		for (uint64_t o = (uint64_t)data & ~7ULL; o + 8 <= (uint64_t)hole; o += 8) {
			uint64_t v;

			memcpy(&v, arena + o, 8);
			if (v >= 0x10000 && is_process_address(v)) {
				*where = o;
				close(fd);
				return v;
			}
		}
		pos = hole;
	}
	close(fd);
	return 0;
}

/* ---- 3: the hostile member ---- */

/* an address inside the victims' canary block, a little different each time */
static uint64_t planted(unsigned *seed)
{
	return (uint64_t)(uintptr_t)canary + 4096 + (uint64_t)(rand_r(seed) % (CANARY_SZ - 8192)) / 8 * 8;
}

/* a free lock: its word and its frame field get planted addresses (a
 * locker finds a holder that is no thread and takes the lock over) */
static void plant_in_lock(struct ulock *l, unsigned *seed)
{
	uint64_t zero = 0;

	/* the word first, then the frame only if no locker has put its own
	 * there since (a dead holder's frame must stay findable) */
	if (!l || !atomic_compare_exchange_strong(&l->word, &zero, planted(seed)))
		return;
	atomic_compare_exchange_strong(&l->frame, &zero, planted(seed));
}

static void plant_round(unsigned *seed)
{
	struct uipc_hdr *h = hdr();
	uint32_t np = atomic_load(&h->procs_hwm), nt = atomic_load(&h->threads_hwm);

	plant_in_lock(&h->ns_lock, seed);
	plant_in_lock(&h->alloc.lock, seed);
	for (int t = 0; t < IPC_NR_IDS; t++) {
		struct ipc_ids *ids = &h->ids[t];
		uoff_t *ent = at(ids->entries, (uint64_t)IPCMNI * sizeof(uoff_t));
		int32_t max = ids->max_idx;

		plant_in_lock(&ids->lock, seed);
		for (int32_t i = 0; ent && i <= max && i < 256; i++) {
			struct uperm *p = ent[i] ? at(ent[i], sizeof(*p) + sizeof(struct ulock)) : NULL;

			if (p)
				plant_in_lock(ipc_obj_lock(p), seed);
		}
	}
	for (uint32_t i = 0; i < np && i < MAX_PROCS; i++) {
		struct uproc *p = at(h->procs + (uint64_t)i * sizeof(*p), sizeof(*p));

		if (!p)
			break;
		atomic_store(&p->holder, (uint32_t)planted(seed));
		plant_in_lock(&p->lock, seed);
	}
	for (uint32_t i = 0; i < nt + 2 && i < MAX_THREADS; i++) {
		struct uthread *t = at(h->threads + (uint64_t)i * sizeof(*t), sizeof(*t));
		uint64_t w = t ? atomic_load(&t->state) : 1;

		if (SLOT_STATE(w) != SLOT_FREE)
			continue;
		/* where a robust-list entry would be if it were in the arena:
		 * the words after the slot's state, and its alive word (only
		 * while 0: a claimer clears it, then writes its tid) */
		uint64_t v = planted(seed);
		uint32_t zero = 0;

		memcpy((char *)t + 8, &v, 8);
		atomic_compare_exchange_strong(uthread_alive(t), &zero, (uint32_t)planted(seed));
	}
}

static int hostile(void)
{
	unsigned seed = (unsigned)getpid();

	while (!atomic_load(&sh->stop))
		plant_round(&seed);
	return 0;
}

/* ---- the rounds ---- */

/* Run victims for SECONDS, SIGKILLing one now and then (KILLS: or not);
 * SCAN: look for process addresses in the arena meanwhile.  Returns the
 * number of victims that ended otherwise than by our SIGKILL or with a
 * bad canary; *HUNG: victims that did not end when told to stop. */
static int run_round(double seconds, bool kills, bool scan, bool with_hostile, int *hung,
		     char *why, size_t whylen)
{
	pid_t vic[NVICTIMS], hos = -1;
	unsigned seed = (unsigned)time(NULL);
	double end = now_s() + seconds;
	int bad = 0;

	atomic_store(&sh->stop, 0);
	for (int k = 0; k < NVICTIMS; k++)
		vic[k] = start_victim(k);
	if (with_hostile) {
		hos = fork();
		if (hos == 0)
			_exit(hostile());
	}
	while (now_s() < end) {
		usleep(20000 + rand_r(&seed) % 60000);
		if (scan && atomic_load(&sh->in_calls) > 0) {
			uint64_t where = 0, v;

			n_addr_ranges = 0;
			add_ranges_of(0);
			for (int i = 0; i < NVICTIMS; i++)
				add_ranges_of(vic[i]);
			v = scan_for_addresses(&where);
			if (v && !*why)
				snprintf(why, whylen, "arena offset %#llx holds %#llx, an address of a process",
					 (unsigned long long)where, (unsigned long long)v);
		}
		if (kills && rand_r(&seed) % 3 == 0) {
			int k = rand_r(&seed) % NVICTIMS;
			int st;

			kill(vic[k], SIGKILL);
			waitpid(vic[k], &st, 0);
			if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL) {
				bad++;
				if (!*why)
					snprintf(why, whylen, "victim %d ended with status %#x", (int)vic[k], st);
			}
			vic[k] = start_victim(k);
		}
	}
	atomic_store(&sh->stop, 1);
	*hung = 0;
	for (int v = 0; v < NVICTIMS; v++) {
		int st = 0;
		double limit = now_s() + 30;
		pid_t r;

		while ((r = waitpid(vic[v], &st, WNOHANG)) == 0 && now_s() < limit)
			usleep(10000);
		if (r == 0) {
			(*hung)++;
			kill(vic[v], SIGKILL);
			waitpid(vic[v], &st, 0);
			continue;
		}
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			bad++;
			if (!*why)
				snprintf(why, whylen, "victim %d ended with status %#x%s", (int)vic[v], st,
					 WIFEXITED(st) && WEXITSTATUS(st) == 3 ? " (its canary changed)" : "");
		}
	}
	if (hos > 0) {
		int st;

		waitpid(hos, &st, 0);
	}
	return bad;
}

/* A victim holds its robust mutex when killed: glibc's list, with uipc's
 * entry on it, still lets the kernel mark it owner-dead. */
static bool robust_mutexes_marked(char *why, size_t whylen)
{
	bool ok = true;

	for (int k = 0; k < 2; k++) {
		pthread_mutex_t *m = &sh->robust[k];
		pid_t p;
		int st, r;

		atomic_store(&sh->stop, 0);
		p = start_victim(k);
		/* until it holds the mutex and has made calls (10 s at most) */
		for (int i = 0; i < 1000 && !atomic_load(&sh->ready[k]); i++)
			usleep(10000);
		usleep(100000);
		kill(p, SIGKILL);
		waitpid(p, &st, 0);
		r = pthread_mutex_trylock(m);
		if (r == EOWNERDEAD) {
			pthread_mutex_consistent(m);
			pthread_mutex_unlock(m);
		} else {
			if (r == 0)
				pthread_mutex_unlock(m);
			ok = false;
			snprintf(why, whylen, "victim %d (mutex locked %s its first uipc call): trylock %d, not EOWNERDEAD",
				 k, k % 2 ? "after" : "before", r);
		}
	}
	return ok;
}

static void init_robust_mutexes(void)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	for (int i = 0; i < NVICTIMS; i++)
		pthread_mutex_init(&sh->robust[i], &a);
	pthread_mutexattr_destroy(&a);
}

int main(void)
{
	const char *d = getenv("UIPC_DIR"), *name = getenv("UIPC_NS");
	unsigned short one[2] = { 1, 0 };
	char why[512];
	int bad, hung;

	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(canary, CANARY, sizeof canary);
	sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!d || !name || sh == MAP_FAILED) {
		printf("1..1\nnot ok 1 - needs UIPC_DIR and UIPC_NS, and memory\n");
		return 1;
	}
	init_robust_mutexes();
	semid = semget(IPC_PRIVATE, 2, 0600);
	msqid = msgget(IPC_PRIVATE, 0600);
	snprintf(ns_path, sizeof ns_path, "%s/uipc-%u-%s", d, (unsigned)getuid(), name);
	if (semid < 0 || msqid < 0 || semctl(semid, 0, SETALL, one) < 0 || map_arena() < 0) {
		printf("1..1\nnot ok 1 - setting up (sem %d, msg %d, %s): %s\n", semid, msqid, ns_path,
		       strerror(errno));
		return 1;
	}
	printf("1..6\n");

	why[0] = 0;
	bad = run_round(4, false, true, false, &hung, why, sizeof why);
	report(!why[0] || strncmp(why, "arena", 5), "no 8-byte word of the arena holds an address of a process, victims in their calls",
	       why);
	report(!atomic_load(&sh->bad_list), "every robust-list entry of every victim thread is in private memory",
	       sh->bad_list_what);
	report(bad == 0 && hung == 0, "victims without kills end normally", why);

	why[0] = 0;
	report(robust_mutexes_marked(why, sizeof why),
	       "a victim killed holding a glibc robust mutex (locked before or after uipc's entry joined its list) leaves it owner-dead",
	       why);

	why[0] = 0;
	bad = run_round(6, true, false, true, &hung, why, sizeof why);
	report(bad == 0, "planted addresses in lock words, frames, holders and free thread slots: no victim's canary changes, none crashes",
	       why);
	report(hung == 0, "planted addresses: every victim ends when told to", why);

	semctl(semid, 0, IPC_RMID);
	msgctl(msqid, IPC_RMID, NULL);
	return nfailed ? 1 : 0;
}
