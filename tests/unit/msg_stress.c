/*
 * msg_stress.c - many senders and receivers on one message queue, checked
 * for what any correct System V implementation must give (the .t runs it
 * against the kernel and under uipc):
 *
 * - every message is received exactly once, with its text intact;
 * - each receiver sees each sender's messages of one type in the order they
 *   were sent (whatever the msgtyp of a receive, it takes the first message
 *   of a type it matches);
 * - IPC_STAT never shows more than qbytes in bytes or in messages (after a
 *   lowering, once the queue has drained below the new limit), and at
 *   the end shows an empty queue whose lspid is a sender and lrpid a
 *   receiver;
 * - receivers blocked when the queue is removed get EIDRM.
 *
 * Sizes mix small messages (uipc's lock-free ring) and large ones (its
 * locked list); receivers use msgtyp 0, > 0, < 0 and MSG_EXCEPT; the main
 * process polls IPC_STAT and flips msg_qbytes between two values while
 * the stream runs (each flip stops and restarts uipc's ring).
 *
 *   msg_stress [MESSAGES_PER_SENDER]        (default 20000)
 * Prints TAP.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SENDERS   3
#define RECEIVERS 4
#define MAXSZ     1200

struct hdr {
	uint32_t sender, seq, size, sum;
};

struct mb {
	long mtype;
	char text[MAXSZ];
};

struct shared {
	_Atomic long received;
	_Atomic int bad;
	char why[256];
	_Atomic int eidrm;
	pid_t senders[SENDERS], receivers[RECEIVERS];
	_Atomic unsigned char seen[];   /* [SENDERS][per] */
};

static struct shared *sh;
static long per;

static void fail(const char *fmt, long a, long b)
{
	if (atomic_fetch_add(&sh->bad, 1) == 0)
		snprintf(sh->why, sizeof sh->why, fmt, a, b);
}

static uint32_t sum_of(const char *p, size_t n)
{
	uint32_t s = 2166136261u;

	for (size_t i = 0; i < n; i++)
		s = (s ^ (unsigned char)p[i]) * 16777619u;
	return s;
}

static size_t size_for(uint32_t sender, uint32_t seq)
{
	if (seq % 53 == 7)
		return 300 + (seq * 7 + sender) % (MAXSZ - 300);   /* the list */
	return sizeof(struct hdr) + (seq * 13 + sender) % 140;  /* the ring */
}

static void sender(int q, uint32_t me)
{
	static struct mb m;

	for (uint32_t k = 0; k < per; k++) {
		struct hdr h = { me, k, (uint32_t)size_for(me, k), 0 };

		for (size_t i = sizeof h; i < h.size; i++)
			m.text[i] = (char)(k * 31 + i + me);
		h.sum = sum_of(m.text + sizeof h, h.size - sizeof h);
		memcpy(m.text, &h, sizeof h);
		m.mtype = 1 + (k + me) % 4;
		while (msgsnd(q, &m, h.size, 0)) {
			if (errno != EINTR) {
				fail("msgsnd: errno %ld (seq %ld)", errno, k);
				_exit(1);
			}
		}
	}
	_exit(0);
}

static void receiver(int q, int me)
{
	static struct mb m;
	long last[SENDERS][5];

	for (int s = 0; s < SENDERS; s++)
		for (int t = 0; t < 5; t++)
			last[s][t] = -1;
	for (unsigned i = 0;; i++) {
		long type = 0;
		int flg = 0;
		ssize_t r;
		struct hdr h;

		switch (me) {
		case 1: type = 2; break;                         /* one type */
		case 2: type = -2; break;                        /* lowest <= 2 */
		case 3: type = 4; flg = MSG_EXCEPT; break;       /* all but 4 */
		}
		if (me && i % 3 == 2)
			type = 0, flg = 0;  /* and sometimes anything */
		r = msgrcv(q, &m, sizeof m.text, type, flg);
		if (r < 0) {
			if (errno == EIDRM) {
				atomic_fetch_add(&sh->eidrm, 1);
				_exit(0);
			}
			if (errno == EINTR)
				continue;
			fail("msgrcv: errno %ld (receiver %ld)", errno, me);
			_exit(1);
		}
		if ((size_t)r < sizeof h) {
			fail("short message: %ld bytes (receiver %ld)", r, me);
			_exit(1);
		}
		memcpy(&h, m.text, sizeof h);
		if (h.sender >= SENDERS || h.seq >= per || h.size != (size_t)r ||
		    h.size != size_for(h.sender, h.seq) ||
		    m.mtype != 1 + (long)((h.seq + h.sender) % 4) ||
		    sum_of(m.text + sizeof h, h.size - sizeof h) != h.sum) {
			fail("corrupt message (receiver %ld, %ld bytes)", me, r);
			_exit(1);
		}
		if ((long)h.seq <= last[h.sender][m.mtype])
			fail("order within a sender's type: seq %ld after %ld", h.seq,
			     last[h.sender][m.mtype]);
		last[h.sender][m.mtype] = h.seq;
		if (atomic_fetch_add(&sh->seen[h.sender * per + h.seq], 1) != 0)
			fail("received twice: sender %ld seq %ld", h.sender, h.seq);
		atomic_fetch_add(&sh->received, 1);
	}
}

static pid_t spawn(void (*fn)(int, uint32_t), int q, uint32_t arg)
{
	pid_t p = fork();

	if (p == 0)
		fn(q, arg);
	return p;
}

static void receiver_thunk(int q, uint32_t me)
{
	receiver(q, (int)me);
}

static int tap_n;

static void ok(int cond, const char *what)
{
	printf("%sok %d - %s\n", cond ? "" : "not ", ++tap_n, what);
	if (!cond && sh->why[0])
		printf("# %s\n", sh->why);
}

static bool in(pid_t p, const pid_t *set, int n)
{
	for (int i = 0; i < n; i++)
		if (set[i] == p)
			return true;
	return false;
}

int main(int argc, char **argv)
{
	struct msqid_ds ds;
	long total, over = 0, polls = 0, flips = 0;
	int q, status, sender_fail = 0;
	bool armed = true;
	struct timespec pause = { 0, 200000 };

	per = argc > 1 ? atol(argv[1]) : 20000;
	total = (long)SENDERS * per;
	sh = mmap(NULL, sizeof *sh + (size_t)total, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	q = msgget(IPC_PRIVATE, 0600);
	if (q < 0) {
		perror("msgget");
		return 1;
	}
	printf("1..6\n");
	for (int i = 0; i < RECEIVERS; i++)
		sh->receivers[i] = spawn(receiver_thunk, q, (uint32_t)i);
	for (int i = 0; i < SENDERS; i++)
		sh->senders[i] = spawn(sender, q, (uint32_t)i);
	/* watch the queue while it streams, and resize it now and then */
	time_t deadline = time(NULL) + 240;

	while (atomic_load(&sh->received) < total && !atomic_load(&sh->bad)) {
		if (time(NULL) > deadline) {
			fail("stuck: %ld of %ld received after 240 s", atomic_load(&sh->received),
			     total);
			break;
		}
		if (msgctl(q, IPC_STAT, &ds) == 0) {
			polls++;
			/*
			 * Lowering qbytes keeps what the queue holds: the
			 * new limit binds once the queue has drained below
			 * it (armed), and from then on nothing may pass it.
			 */
			if (ds.__msg_cbytes <= ds.msg_qbytes && ds.msg_qnum <= ds.msg_qbytes)
				armed = true;
			else if (armed || ds.__msg_cbytes > 16384)
				over++;
			if (polls % 50 == 0) {
				ds.msg_qbytes = ds.msg_qbytes == 16384 ? 6000 : 16384;
				if (msgctl(q, IPC_SET, &ds) == 0)
					flips++;
				armed = ds.msg_qbytes == 16384;
			}
		}
		nanosleep(&pause, NULL);
	}
	for (int i = 0; i < SENDERS; i++) {
		if (waitpid(sh->senders[i], &status, 0) != sh->senders[i] ||
		    !WIFEXITED(status) || WEXITSTATUS(status))
			sender_fail++;
	}
	ok(!sender_fail, "senders sent everything");
	ok(atomic_load(&sh->received) == total && !atomic_load(&sh->bad),
	   "every message received once, intact, in order within each sender's type");
	{
		long missing = 0;

		for (long i = 0; i < total; i++)
			if (atomic_load(&sh->seen[i]) != 1)
				missing++;
		ok(missing == 0, "the receipt table has each message exactly once");
	}
	printf("# %ld IPC_STAT polls, %ld qbytes flips\n", polls, flips);
	ok(over == 0, "IPC_STAT never above qbytes once the queue fits it");
	ok(msgctl(q, IPC_STAT, &ds) == 0 && ds.msg_qnum == 0 && ds.__msg_cbytes == 0 &&
	   in(ds.msg_lspid, sh->senders, SENDERS) && in(ds.msg_lrpid, sh->receivers, RECEIVERS),
	   "the queue ends empty; lspid a sender, lrpid a receiver");
	/* the receivers wait for more: removal wakes them with EIDRM */
	msgctl(q, IPC_RMID, NULL);
	for (int i = 0; i < RECEIVERS; i++)
		waitpid(sh->receivers[i], &status, 0);
	ok(atomic_load(&sh->eidrm) == RECEIVERS, "blocked receivers get EIDRM at removal");
	return 0;
}
