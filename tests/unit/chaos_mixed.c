/*
 * chaos_mixed.c - many processes do mixed semaphore, message-queue and
 * shared-memory work while the driver SIGKILLs random ones (and starts new
 * ones, by fork: the children inherit the driver's shm attachment) until a
 * number of kills or a time bound is reached.  Then the survivors are asked
 * to finish what they are doing and park, the invariants are checked with
 * every worker alive and idle, the workers exit (exit() or _exit()), and
 * the invariants are checked again.
 *
 * What is checked, and why it is provable:
 * - semaphores: 8 tokens move between sem 0 and sem 1 with SEM_UNDO (as in
 *   chaos_sem.c); every token is back (sem0 == 8, sem1 == 0) and nobody
 *   waits (GETNCNT/GETZCNT 0).  Sem 2 is a SEM_UNDO mutex around a counter
 *   in a uipc shm segment; two live processes are never inside it at once
 *   (a holder killed inside it gives the mutex back through its undo), and
 *   it is 1 at the end.
 * - messages: each message carries a unique id, its length and a checksum
 *   of a payload derived from the id.  The bookkeeping lives in anonymous
 *   shared memory (not uipc's) and is written in this order:
 *     sender:   intent[id] = 1; msgsnd; intent[id] = 2
 *     receiver: buf.id = 0; inflight = 1; msgrcv into buf (which is in the
 *               bookkeeping memory); taker[id] = its tag; logged = id;
 *               inflight = 0
 *   where the taker is recorded by one compare-and-swap from 0 to the
 *   receiving process's tag (unique to each worker process): one that
 *   finds another tag there is a message received twice.  The driver does
 *   the same for a dead receiver's buffer (with the dead one's tag, so a
 *   receiver killed after recording and before logging is not counted
 *   twice) and for the final drain.
 *   intent 2 means the send certainly happened; 1 means the sender died
 *   during (or right around) msgsnd: sent or not.  A receiver killed while
 *   inflight either got nothing, or got a whole message into its buffer
 *   (it took it: uipc copies a message out only once its take committed,
 *   as the kernel copies after unlinking; it is counted as delivered,
 *   unless the receiver counted it itself and died before logging it),
 *   or took a message that was handed to it (pipelined send) and died
 *   before copying it out, as a process killed inside the kernel's msgrcv
 *   loses it: so each receiver that died inflight without a whole message
 *   in its buffer may account for one missing message, no more.
 *   At the end the driver drains the queue.  Violations: a message whose
 *   bytes are not exactly what was sent, a message received twice, a
 *   message received that nobody tried to send, and more certainly-sent
 *   messages missing than receivers that died inflight with nothing.
 * - shm: with every worker parked, nattch of the shared segment equals the
 *   attachments the live workers report (plus the driver's); after they
 *   are gone, only the driver's.  A second, keyed segment is created,
 *   attached, marked for removal and detached by random workers: at the
 *   end nothing else is left.
 * - stuck waiters: after the kills stop, every worker (each blocked one
 *   included) must finish its current operation and park in bounded time;
 *   the workload cannot block forever by construction (a blocking receive
 *   follows the worker's own send; tokens and the mutex always come back).
 * - the namespace checks clean (uipc_ns_check: allocator, id tables, key
 *   hash and every object's invariants, each under the object's lock).
 *
 *   chaos_mixed [MAX_SECONDS [KILLS [WORKERS]]]   (run under uipc; TAP)
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TOKENS   8
#define MAXW     32
#define MAXID    (1u << 23)         /* message ids */
#define MAXTEXT  256
#define SEG_SIZE 65536
#define KEY_B    0x7a7a0c

struct mbuf {
	long mtype;
	uint64_t id;
	uint32_t len;              /* payload bytes */
	uint32_t sum;
	unsigned char payload[MAXTEXT];
};

#define HDR_BYTES (sizeof(uint64_t) + 2 * sizeof(uint32_t))

enum { OP_IDLE, OP_SEM, OP_MUTEX, OP_SEND, OP_RECV, OP_RECV_NOWAIT, OP_SHM, OP_SHM_B,
       OP_STAT, OP_NR };
static const char *op_names[OP_NR] = { "idle", "sem tokens", "sem mutex", "msgsnd",
				       "msgrcv", "msgrcv nowait", "shm A", "shm B", "stat" };

struct slot {
	_Atomic uint32_t tag;      /* the worker process now in the slot */
	_Atomic int inflight;
	_Atomic uint64_t logged;
	_Atomic int op;
	_Atomic int parked;
	_Atomic int natt;          /* attachments of segment A (with the inherited one) */
	_Atomic uint64_t progress;
	struct mbuf rbuf;
};

struct book {
	_Atomic uint64_t next_id;
	_Atomic int stop, release;
	_Atomic int cs_owner;
	_Atomic long cs_viol, cs_count;
	_Atomic long errs;
	char errmsg[8][160];
	_Atomic int nerrmsg;
	struct slot slot[MAXW];
	_Atomic uint8_t intent[MAXID];
	_Atomic uint32_t taker[MAXID];  /* tag of who received it, 0: nobody */
	_Atomic long twice;                /* messages received a second time */
};


static struct book *bk;

#define DRAIN_TAG 0xffffffffu

/* message ID was received by TAG: exactly once, or it counts as twice */
static void record_taken(uint64_t id, uint32_t tag)
{
	uint32_t seen = 0;

	if (!atomic_compare_exchange_strong(&bk->taker[id], &seen, tag) && seen != tag)
		atomic_fetch_add(&bk->twice, 1);
}
static int semid, msqid, shmid_a;
static char *seg_a;
static int op_mask = 0x7f;

static int op_kind(int r)
{
	return r < 22 ? 0 : r < 32 ? 1 : r < 60 ? 2 : r < 72 ? 3 : r < 88 ? 4 : r < 94 ? 5 : 6;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void err(const char *fmt, int a, int b)
{
	int i = atomic_fetch_add(&bk->nerrmsg, 1);

	atomic_fetch_add(&bk->errs, 1);
	if (i < 8)
		snprintf(bk->errmsg[i], sizeof(bk->errmsg[i]), fmt, a, b);
}

static unsigned char pbyte(uint64_t id, uint32_t k)
{
	return (unsigned char)((id * 2654435761u + k * 40503u + (id >> 7)) >> 5);
}

static uint32_t checksum(uint64_t id, uint32_t len, const unsigned char *p)
{
	uint32_t h = 2166136261u ^ (uint32_t)id ^ (len << 16);

	for (uint32_t k = 0; k < len; k++)
		h = (h ^ p[k]) * 16777619u;
	return h;
}

static void make_msg(struct mbuf *m, uint64_t id, uint32_t len)
{
	m->mtype = 1 + (long)(id % 3);
	m->id = id;
	m->len = len;
	for (uint32_t k = 0; k < len; k++)
		m->payload[k] = pbyte(id, k);
	m->sum = checksum(id, len, m->payload);
}

/* a whole, exact message of N bytes of text (as msgrcv returned it) */
static int msg_intact(const struct mbuf *m, ssize_t n)
{
	if (n < (ssize_t)HDR_BYTES || m->id == 0 || m->id >= MAXID || m->len > MAXTEXT ||
	    n != (ssize_t)(HDR_BYTES + m->len) || m->mtype != 1 + (long)(m->id % 3))
		return 0;
	for (uint32_t k = 0; k < m->len; k++)
		if (m->payload[k] != pbyte(m->id, k))
			return 0;
	return m->sum == checksum(m->id, m->len, m->payload);
}

/* gone, a zombie, or killed and in its exit (PF_EXITING, /proc/PID/stat
 * field 9): the kernel's exit_sem runs in the exit, before the zombie
 * state, so another process may take the mutex from then on */
static int pid_dead(int pid)
{
	char path[64], buf[512];
	unsigned long flags = 0;
	FILE *f;
	char *p;
	int dead = 1;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 1;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) && p[1] == ' ') {
		dead = p[2] == 'Z' || p[2] == 'X';
		if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %lu", &flags) == 1 && (flags & 0x4))
			dead = 1;
	}
	fclose(f);
	return dead;
}

/* ---- the worker's operations ---- */

static void op_sem(int id)
{
	struct sembuf take = { 0, -1, SEM_UNDO };
	struct sembuf mark = { 1, 1, SEM_UNDO };
	struct sembuf back[2] = { { 1, -1, SEM_UNDO }, { 0, 1, SEM_UNDO } };
	struct sembuf peek = { 0, -1, SEM_UNDO | IPC_NOWAIT };
	struct sembuf unpeek = { 0, 1, SEM_UNDO };

	if (rand() % 4 == 0) {
		if (semop(id, &peek, 1) == 0 && semop(id, &unpeek, 1) < 0)
			err("semop unpeek: errno %d%.0d", errno, 0);
		return;
	}
	if (semop(id, &take, 1) < 0 || semop(id, &mark, 1) < 0 || semop(id, back, 2) < 0)
		err("semop tokens: errno %d%.0d", errno, 0);
}

static void op_mutex(int me)
{
	struct sembuf lock = { 2, -1, SEM_UNDO }, unlock = { 2, 1, SEM_UNDO };
	int prev;

	if (semop(semid, &lock, 1) < 0) {
		err("semop mutex: errno %d%.0d", errno, 0);
		return;
	}
	prev = atomic_exchange(&bk->cs_owner, me);
	if (prev != 0 && !pid_dead(prev)) {
		atomic_fetch_add(&bk->cs_viol, 1);
		err("mutex: %d entered while %d (alive) was inside", me, prev);
	}
	/* the counter lives in the uipc shm segment */
	(*(volatile long *)seg_a)++;
	atomic_fetch_add(&bk->cs_count, 1);
	prev = me;
	atomic_compare_exchange_strong(&bk->cs_owner, &prev, 0);
	if (semop(semid, &unlock, 1) < 0)
		err("semop mutex unlock: errno %d%.0d", errno, 0);
}

static int op_send(void)
{
	struct mbuf m;
	uint64_t id = atomic_fetch_add(&bk->next_id, 1) + 1;

	if (id >= MAXID)
		return -1;
	make_msg(&m, id, (uint32_t)(rand() % (MAXTEXT + 1)));
	atomic_store(&bk->intent[id], 1);
	if (msgsnd(msqid, &m, HDR_BYTES + m.len, 0) < 0) {
		err("msgsnd: errno %d%.0d", errno, 0);
		return -1;
	}
	atomic_store(&bk->intent[id], 2);
	return 0;
}

static void op_recv(struct slot *s, long type, int flags)
{
	ssize_t n;

	s->rbuf.id = 0;
	atomic_store(&s->inflight, 1);
	n = msgrcv(msqid, &s->rbuf, HDR_BYTES + MAXTEXT, type, flags);
	if (n >= 0) {
		if (!msg_intact(&s->rbuf, n))
			err("msgrcv: a damaged message (%d bytes, id %d)", (int)n, (int)s->rbuf.id);
		else
			record_taken(s->rbuf.id, atomic_load(&s->tag));
		atomic_store(&s->logged, s->rbuf.id);
	} else if (errno != ENOMSG) {
		err("msgrcv: errno %d%.0d", errno, 0);
	}
	atomic_store(&s->inflight, 0);
}

static void op_shm_a(struct slot *s, char **att, int *nat)
{
	if (*nat < 3 && (*nat == 0 || rand() % 2)) {
		char *p = shmat(shmid_a, NULL, rand() % 3 ? 0 : SHM_RDONLY);

		if (p == (char *)-1) {
			err("shmat A: errno %d%.0d", errno, 0);
			return;
		}
		att[(*nat)++] = p;
		atomic_store(&s->natt, 1 + *nat);
		/* the driver's counter is visible through every attachment */
		if (*(volatile long *)p < 0)
			err("shm A: counter %d%.0d", (int)*(volatile long *)p, 0);
	} else if (*nat > 0) {
		int k = rand() % *nat;
		char *p = att[k];

		att[k] = att[--(*nat)];
		atomic_store(&s->natt, 1 + *nat);
		if (shmdt(p) < 0)
			err("shmdt A: errno %d%.0d", errno, 0);
	}
}

static void op_shm_b(void)
{
	int id = shmget(KEY_B, 4096, IPC_CREAT | 0600);
	char *p;

	if (id < 0) {
		err("shmget B: errno %d%.0d", errno, 0);
		return;
	}
	p = shmat(id, NULL, 0);
	if (p == (char *)-1) {
		/* removed by another worker in between */
		if (errno != EINVAL && errno != EIDRM)
			err("shmat B: errno %d%.0d", errno, 0);
		return;
	}
	p[rand() % 4096] = 1;
	if (shmctl(id, IPC_RMID, NULL) < 0 && errno != EINVAL && errno != EIDRM)
		err("shmctl B RMID: errno %d%.0d", errno, 0);
	if (shmdt(p) < 0)
		err("shmdt B: errno %d%.0d", errno, 0);
}

static void op_stat(void)
{
	struct semid_ds sd;
	struct msqid_ds md;
	struct shmid_ds hd;
	union { int val; struct semid_ds *buf; } arg = { .buf = &sd };

	if (semctl(semid, 0, IPC_STAT, arg) < 0 || msgctl(msqid, IPC_STAT, &md) < 0 ||
	    shmctl(shmid_a, IPC_STAT, &hd) < 0)
		err("IPC_STAT: errno %d%.0d", errno, 0);
	if (semctl(semid, 0, GETVAL) > TOKENS)
		err("sem0 above the tokens: %d%.0d", semctl(semid, 0, GETVAL), 0);
}

static void worker(int idx, unsigned seed)
{
	struct slot *s = &bk->slot[idx];
	char *att[3];
	int nat = 0, me = getpid();
	long types[] = { 0, -3 };

	srand(seed);
	atomic_store(&s->natt, 1);
	while (!atomic_load(&bk->stop)) {
		int r = rand() % 100;

		/* CHAOS_OPS=MASK narrows a failure down: bit k allows the k-th
		 * kind of operation below (sem, mutex, send+recv, recv nowait,
		 * shm A, shm B, stat) */
		while (!(op_mask >> op_kind(r) & 1))
			r = rand() % 100;

		atomic_fetch_add(&s->progress, 1);
		if (r < 22) {
			atomic_store(&s->op, OP_SEM);
			op_sem(semid);
		} else if (r < 32) {
			atomic_store(&s->op, OP_MUTEX);
			op_mutex(me);
		} else if (r < 60) {
			/* send, then receive one (blocking): this worker's own
			 * message keeps the queue from being empty for it */
			atomic_store(&s->op, OP_SEND);
			if (op_send() == 0) {
				atomic_store(&s->op, OP_RECV);
				op_recv(s, types[rand() % 2], 0);
			}
		} else if (r < 72) {
			static const int fl[] = { 0, MSG_EXCEPT, 0, MSG_NOERROR };
			long t = rand() % 5 - 1;   /* -1..3 */
			int f = fl[rand() % 4];

			if (t <= 0)
				f &= ~MSG_EXCEPT;
			atomic_store(&s->op, OP_RECV_NOWAIT);
			/* MSG_NOERROR with a full buffer cannot truncate */
			op_recv(s, t, f | IPC_NOWAIT);
		} else if (r < 88) {
			atomic_store(&s->op, OP_SHM);
			op_shm_a(s, att, &nat);
		} else if (r < 94) {
			atomic_store(&s->op, OP_SHM_B);
			op_shm_b();
		} else {
			atomic_store(&s->op, OP_STAT);
			op_stat();
		}
	}
	atomic_store(&s->op, OP_IDLE);
	atomic_store(&s->parked, 1);
	while (!atomic_load(&bk->release))
		usleep(1000);
	if (seed & 1)
		exit(0);
	_exit(0);
}

/* ---- the driver ---- */

struct deaths {
	int nbuf;                    /* whole messages found in dead receivers' buffers */
	long empty;                  /* dead blocking receivers without a whole message */
	long empty_nowait;           /* the same, in an IPC_NOWAIT msgrcv */
};
static struct deaths dd;

/* worker IDX is dead and reaped: what was it holding in its receive buffer? */
static void note_death(int idx)
{
	struct slot *s = &bk->slot[idx];

	if (atomic_load(&s->inflight)) {
		uint64_t id = s->rbuf.id;
		ssize_t n = (ssize_t)(HDR_BYTES + (s->rbuf.len <= MAXTEXT ? s->rbuf.len : 0));

		if (id && msg_intact(&s->rbuf, n) && id != atomic_load(&s->logged)) {
			/* it took it (a take copies out only once committed) */
			record_taken(id, atomic_load(&s->tag));
			dd.nbuf++;
		} else if (!(id && id == atomic_load(&s->logged))) {
			/* only a sleeping receiver can be handed a message
			 * (pipelined send) and die before copying it out */
			if (atomic_load(&s->op) == OP_RECV)
				dd.empty++;
			else
				dd.empty_nowait++;
		}
	}
}

static pid_t start(int idx, unsigned seed)
{
	struct slot *s = &bk->slot[idx];
	pid_t p;

	static uint32_t incarnations;

	atomic_store(&s->tag, ++incarnations);
	atomic_store(&s->inflight, 0);
	atomic_store(&s->logged, 0);
	atomic_store(&s->parked, 0);
	atomic_store(&s->op, OP_IDLE);
	atomic_store(&s->natt, 1);
	p = fork();
	if (p == 0)
		worker(idx, seed);
	return p;
}

static int semval(int n, int cmd)
{
	return semctl(semid, n, cmd);
}

static int sems_home(char *why, size_t len)
{
	int v0 = semval(0, GETVAL), v1 = semval(1, GETVAL), v2 = semval(2, GETVAL);
	int wait = 0;

	for (int n = 0; n < 3; n++)
		wait += semval(n, GETNCNT) + semval(n, GETZCNT);
	snprintf(why, len, "sem0 %d (want %d), sem1 %d (want 0), mutex %d (want 1), waiters %d",
		 v0, TOKENS, v1, v2, wait);
	return v0 == TOKENS && v1 == 0 && v2 == 1 && wait == 0;
}

static long nattch(int id)
{
	struct shmid_ds ds;

	return shmctl(id, IPC_STAT, &ds) < 0 ? -1 : (long)ds.shm_nattch;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 60;
	long want_kills = argc > 2 ? atol(argv[2]) : 10000;
	int nw = argc > 3 ? atoi(argv[3]) : 6;
	int (*check)(char *, size_t) = (int (*)(char *, size_t))dlsym(RTLD_DEFAULT, "uipc_ns_check");
	unsigned seed = argc > 4 ? (unsigned)atol(argv[4]) : (unsigned)time(NULL);
	pid_t w[MAXW];
	long kills = 0, sigkilled = 0, n_att, want_att, drained = 0;
	long dup = 0, phantom = 0, missing = 0, maybe = 0, sent = 0, delivered = 0, bad_drain = 0;
	double t0, t1, end;
	int i, status, stuck = 0, ok, okall = 1, tn = 0, idb;
	char why[512], rep[16384];
	struct mbuf m;
	ssize_t n;

#define TEST(cond, ...) do { ok = (cond); okall &= ok; printf("%s %d - ", ok ? "ok" : "not ok", ++tn); \
		printf(__VA_ARGS__); printf("\n"); fflush(stdout); } while (0)

	if (!check || nw < 2 || nw > MAXW) {
		printf("1..1\nnot ok 1 - run under uipc, with 2..%d workers\n", MAXW);
		return 1;
	}
	bk = mmap(NULL, sizeof(*bk), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (bk == MAP_FAILED) {
		printf("1..1\nnot ok 1 - mmap: %s\n", strerror(errno));
		return 1;
	}
	printf("1..11\n# seed %u, %d workers, up to %.0f s or %ld kills\n", seed, nw, secs, want_kills);
	fflush(stdout);
	srand(seed);
	if (getenv("CHAOS_OPS") && strtol(getenv("CHAOS_OPS"), NULL, 0) & 0x7f)
		op_mask = (int)strtol(getenv("CHAOS_OPS"), NULL, 0) & 0x7f;
	semid = semget(IPC_PRIVATE, 3, 0600);
	msqid = msgget(IPC_PRIVATE, 0600);
	shmid_a = shmget(IPC_PRIVATE, SEG_SIZE, 0600);
	seg_a = shmid_a < 0 ? (char *)-1 : shmat(shmid_a, NULL, 0);
	if (semid < 0 || msqid < 0 || seg_a == (char *)-1 || semctl(semid, 0, SETVAL, TOKENS) < 0 ||
	    semctl(semid, 2, SETVAL, 1) < 0) {
		printf("not ok 1 - setup: %s\n", strerror(errno));
		return 1;
	}
	for (i = 0; i < nw; i++)
		w[i] = start(i, seed + (unsigned)i);
	t0 = now_s();
	end = t0 + secs;
	while (now_s() < end && kills < want_kills) {
		i = rand() % nw;
		usleep((useconds_t)(rand() % 1200));
		kill(w[i], SIGKILL);
		waitpid(w[i], &status, 0);
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			sigkilled++;
		else
			err("a worker ended by itself: status %#x%.0d", status, 0);
		kills++;
		note_death(i);
		w[i] = start(i, seed + (unsigned)kills * 7919u);
	}
	t1 = now_s();

	/* the kills stop: every worker finishes its operation and parks */
	atomic_store(&bk->stop, 1);
	for (double until = now_s() + 30, feed = now_s() + 0.1; now_s() < until;) {
		int parked = 0, recv = 0;

		for (i = 0; i < nw; i++) {
			parked += atomic_load(&bk->slot[i].parked);
			recv += atomic_load(&bk->slot[i].op) == OP_RECV;
		}
		if (parked == nw)
			break;
		/* a receiver may legitimately wait on an empty queue (another
		 * worker's IPC_NOWAIT receive took the message its own send
		 * put there): feed it; one that sleeps on a non-empty queue
		 * for 30 s is stuck */
		if (recv && now_s() > feed) {
			struct msqid_ds ds;

			feed = now_s() + 0.1;
			if (msgctl(msqid, IPC_STAT, &ds) == 0 && ds.msg_qnum == 0)
				for (i = 0; i < recv; i++)
					op_send();
		}
		usleep(2000);
	}
	why[0] = 0;
	for (i = 0; i < nw; i++)
		if (!atomic_load(&bk->slot[i].parked)) {
			int op = atomic_load(&bk->slot[i].op);

			stuck++;
			snprintf(why + strlen(why), sizeof(why) - strlen(why), " [worker %d in %s]",
				 (int)w[i], op >= 0 && op < OP_NR ? op_names[op] : "?");
		}
	TEST(kills >= 100 && sigkilled == kills,
	     "%ld SIGKILLs in %.1f s during the mixed load (%.0f/s)", sigkilled, t1 - t0,
	     (double)sigkilled / (t1 - t0));
	TEST(stuck == 0, "every worker finishes its operation once the kills stop (%d stuck)%s",
	     stuck, why);
	TEST(sems_home(why, sizeof(why)), "with the workers parked: %s", why);
	want_att = 1;
	for (i = 0; i < nw; i++)
		want_att += atomic_load(&bk->slot[i].natt);
	n_att = nattch(shmid_a);
	TEST(stuck || n_att == want_att, "with the workers parked: nattch %ld == %ld live attachments",
	     n_att, want_att);

	/* the workers go, by exit() or _exit() */
	atomic_store(&bk->release, 1);
	for (i = 0; i < nw; i++) {
		if (stuck)
			kill(w[i], SIGKILL);
		waitpid(w[i], &status, 0);
	}
	TEST(sems_home(why, sizeof(why)), "after the workers exited: %s", why);
	n_att = nattch(shmid_a);
	TEST(n_att == 1, "after the workers exited: nattch %ld == 1 (the driver's)", n_att);
	TEST(atomic_load(&bk->cs_viol) == 0 && *(volatile long *)seg_a >= atomic_load(&bk->cs_count),
	     "the SEM_UNDO mutex excluded (%ld violations, %ld entries, counter %ld)",
	     (long)atomic_load(&bk->cs_viol), (long)atomic_load(&bk->cs_count), *(volatile long *)seg_a);

	/* drain the queue, then account for every message */
	while ((n = msgrcv(msqid, &m, HDR_BYTES + MAXTEXT, 0, IPC_NOWAIT)) >= 0) {
		drained++;
		if (msg_intact(&m, n))
			record_taken(m.id, DRAIN_TAG);
		else
			bad_drain++;
	}
	{
		uint64_t top = atomic_load(&bk->next_id) + 1;

		if (top > MAXID)
			top = MAXID;
		dup = atomic_load(&bk->twice);
		for (uint64_t id = 1; id < top; id++) {
			unsigned in = atomic_load(&bk->intent[id]);
			unsigned got = atomic_load(&bk->taker[id]) != 0;

			if (got && !in)
				phantom++;
			if (in == 2) {
				sent++;
				if (!got)
					missing++;
			}
			if (in == 1)
				maybe++;
			delivered += got;
		}
	}
	TEST(bad_drain == 0 && dup == 0 && phantom == 0 && missing <= dd.empty,
	     "every message delivered whole and once, or not sent: %ld sent (+%ld by killed senders), "
	     "%ld delivered (%ld drained at the end, %d in killed receivers' buffers), %ld damaged, "
	     "%ld twice, %ld never sent, %ld missing (allowed %ld: receivers killed asleep in msgrcv "
	     "with nothing in their buffer; %ld more killed in IPC_NOWAIT msgrcv)", sent, maybe,
	     delivered, drained, dd.nbuf, bad_drain, dup, phantom, missing, dd.empty, dd.empty_nowait);
	TEST(atomic_load(&bk->errs) == 0, "no operation failed unexpectedly (%ld)%s%s",
	     (long)atomic_load(&bk->errs), bk->errs ? ": " : "", bk->errs ? bk->errmsg[0] : "");
	for (i = 1; i < 8 && i < bk->nerrmsg; i++)
		printf("#   %s\n", bk->errmsg[i]);

	rep[0] = 0;
	i = check(rep, sizeof(rep));
	TEST(i == 0, "the namespace checks clean%s%.400s", i ? ": " : "", i ? rep : "");

	/* leftovers of the keyed segment B (a worker killed before IPC_RMID) */
	idb = shmget(KEY_B, 0, 0);
	if (idb >= 0)
		shmctl(idb, IPC_RMID, NULL);
	{
		struct shm_info si;
		int r;

		shmdt(seg_a);
		r = shmctl(shmid_a, IPC_RMID, NULL) | semctl(semid, 0, IPC_RMID) |
		    msgctl(msqid, IPC_RMID, NULL);
		memset(&si, 0, sizeof(si));
		shmctl(0, SHM_INFO, (struct shmid_ds *)&si);
		TEST(r == 0 && si.used_ids == 0, "everything removed (%d shm segments left)", si.used_ids);
		for (int k = 0; si.used_ids && k <= 64; k++) {
			struct shmid_ds ds;
			int sid = shmctl(k, SHM_STAT_ANY, &ds);

			if (sid >= 0)
				printf("#   left: shm %d key %#x mode %#o nattch %lu cpid %d lpid %d%s\n", sid,
				       (unsigned)ds.shm_perm.__key, (unsigned)ds.shm_perm.mode,
				       (unsigned long)ds.shm_nattch, (int)ds.shm_cpid, (int)ds.shm_lpid,
				       pid_dead(ds.shm_lpid) ? " (dead)" : "");
		}
	}
	return okall ? 0 : 1;
}
