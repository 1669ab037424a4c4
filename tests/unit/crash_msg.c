/*
 * crash_msg.c - SIGKILL at every journaled store of a message-queue
 * workload, then check that nothing half-done is visible: every message is
 * in its queue whole or not at all (sends are a prefix, receives remove a
 * prefix), qnum and cbytes agree with the messages, IPC_SET is all or
 * nothing, a queue created and removed by the victim is gone or whole, no
 * lock stays held, and the allocator is consistent (uipc_ns_check).
 *
 * Run under uipc (the .t sets LD_PRELOAD and a fresh UIPC_DIR).  The child
 * re-executes this program with UIPC_FAILPOINT=N so that the library kills
 * it at its Nth journaled store.  Prints TAP.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crashkit.h"

#define KEY_TMP 0x7a7a02
#define KEY_SLEPT 0x7a7a03   /* a queue with a sleeping receiver, made by the parent */
#define NSEND 5

struct mb {
	long mtype;
	char text[512];
};

static size_t msg_size(long type)
{
	return (size_t)(type * 37 % 300);
}

static void fill(struct mb *m, long type)
{
	m->mtype = type;
	for (size_t i = 0; i < msg_size(type); i++)
		m->text[i] = (char)(type * 11 + i);
}

static int intact(const struct mb *m, ssize_t len)
{
	if (len != (ssize_t)msg_size(m->mtype))
		return 0;
	for (ssize_t i = 0; i < len; i++)
		if (m->text[i] != (char)(m->mtype * 11 + i))
			return 0;
	return 1;
}

static int workload(int a, int b, int c)
{
	struct mb m;
	struct msqid_ds ds;
	int t;

	for (long i = 1; i <= NSEND; i++) {
		fill(&m, i);
		if (msgsnd(a, &m, msg_size(i), IPC_NOWAIT) < 0)
			return 1;
	}
	if (msgrcv(a, &m, sizeof m.text, 1, IPC_NOWAIT) < 0 || !intact(&m, (ssize_t)msg_size(1)))
		return 2;
	if (msgrcv(a, &m, sizeof m.text, -2, IPC_NOWAIT) < 0)
		return 3;
	if (msgrcv(b, &m, sizeof m.text, 0, IPC_NOWAIT) < 0)
		return 4;
	if (msgrcv(b, &m, sizeof m.text, 0, IPC_NOWAIT) < 0)
		return 5;
	if (msgctl(b, IPC_STAT, &ds) < 0)
		return 6;
	ds.msg_qbytes = 5000;
	ds.msg_perm.mode = 0640;
	if (msgctl(b, IPC_SET, &ds) < 0)
		return 7;
	t = msgget(KEY_TMP, IPC_CREAT | 0600);
	if (t < 0)
		return 8;
	fill(&m, 7);
	if (msgsnd(t, &m, msg_size(7), 0) < 0)
		return 9;
	if (msgctl(t, IPC_RMID, NULL) < 0)
		return 10;
	/* the hand-off to the receiver that sleeps on c */
	fill(&m, 99);
	if (msgsnd(c, &m, msg_size(99), 0) < 0)
		return 11;
	t = msgget(KEY_SLEPT, 0);
	if (t < 0 || msgctl(t, IPC_RMID, NULL) < 0)
		return 12;
	return 0;
}

/* the receiver asleep on KEY_SLEPT's queue (ck_sleeper) */
static int sleep_on_queue(int id)
{
	struct mb m;

	return (int)msgrcv(id, &m, sizeof m.text, 1, 0);
}

/* drain Q, checking every message; returns the types in order (count) */
static int drain(int q, long *types, int max, int n, const char *name)
{
	struct msqid_ds ds;
	struct mb m;
	unsigned long bytes = 0;
	int k = 0;
	char why[128];

	if (msgctl(q, IPC_STAT, &ds) < 0) {
		snprintf(why, sizeof why, "%s: IPC_STAT %s", name, strerror(errno));
		check(0, why, n);
		return 0;
	}
	for (;;) {
		ssize_t r = msgrcv(q, &m, sizeof m.text, 0, IPC_NOWAIT);

		if (r < 0)
			break;
		snprintf(why, sizeof why, "%s: message of type %ld damaged", name, m.mtype);
		check(intact(&m, r), why, n);
		if (k < max)
			types[k] = m.mtype;
		k++;
		bytes += (unsigned long)r;
	}
	snprintf(why, sizeof why, "%s: qnum %lu cbytes %lu but %d messages of %lu bytes", name,
		 (unsigned long)ds.msg_qnum, (unsigned long)ds.__msg_cbytes, k, bytes);
	check(ds.msg_qnum == (msgqnum_t)k && ds.__msg_cbytes == bytes, why, n);
	return k;
}

int main(int argc, char **argv)
{
	int a, b, c, n, done = 0;

	if (argc == 5 && !strcmp(argv[1], "work"))
		return workload(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
	a = msgget(IPC_PRIVATE, 0600);
	b = msgget(IPC_PRIVATE, 0600);
	c = msgget(IPC_PRIVATE, 0600);
	if (a < 0 || b < 0 || c < 0) {
		printf("1..1\nnot ok 1 - setup: %s\n", strerror(errno));
		return 1;
	}
	alarm(getenv("CRASH_ALARM") ? atoi(getenv("CRASH_ALARM")) : 240);
	/* every store twice: killed just before it, and just after it */
	for (n = 2; n < 2000 && !done; n++) {
		char sa[16], sb[16], sc[16], why[160];
		int pfd[2];
		pid_t rp;
		struct msqid_ds ds;
		struct mb m;
		long types[16];
		int st, k, t;
		pid_t p, sleeper;

		memset(&ds, 0, sizeof ds);
		msgctl(b, IPC_STAT, &ds);
		ds.msg_qbytes = 16384;
		ds.msg_perm.mode = 0600;
		msgctl(b, IPC_SET, &ds);
		for (long i = 10; i < 13; i++) {
			fill(&m, i);
			msgsnd(b, &m, msg_size(i), 0);
		}
		/* a receiver asleep on c, for the hand-off */
		if (pipe(pfd) < 0)
			return 1;
		rp = fork();
		if (rp == 0) {
			ssize_t r = msgrcv(c, &m, sizeof m.text, -99, 0);
			long res[2] = { r, r >= 0 && intact(&m, r) };

			if (write(pfd[1], res, sizeof res) < 0)
				_exit(1);
			_exit(0);
		}
		close(pfd[1]);
		ck_wait_asleep(rp);
		snprintf(sc, sizeof sc, "%d", c);
		snprintf(sa, sizeof sa, "%d", a);
		snprintf(sb, sizeof sb, "%d", b);
		sleeper = ck_sleeper(sleep_on_queue, msgget(KEY_SLEPT, IPC_CREAT | IPC_EXCL | 0600));
		p = fork();
		if (p == 0) {
			ck_arm(n);
			execl("/proc/self/exe", argv[0], "work", sa, sb, sc, (char *)NULL);
			_exit(127);
		}
		waitpid(p, &st, 0);
		done = ck_outcome(st, &n);
		/* a: sends 1..k, then receives of 1 and 2 */
		k = drain(a, types, 16, n, "queue a");
		{
			int ok = k <= NSEND;
			int first = k ? (int)types[0] : 0;

			for (int i = 0; ok && i < k && i < 16; i++)
				ok = types[i] == first + i;
			if (ok && k)
				ok = (first == 1) || (first == 2 && types[k - 1] == NSEND) ||
				     (first == 3 && types[k - 1] == NSEND);
			snprintf(why, sizeof why, "queue a: %d messages from type %d: not a "
				 "prefix of the sends less a prefix of the receives", k, first);
			check(ok, why, n);
		}
		/* b: three messages, minus a prefix of them */
		k = drain(b, types, 16, n, "queue b");
		{
			int ok = k >= 1 && k <= 3;

			for (int i = 0; ok && i < k; i++)
				ok = types[i] == 13 - k + i;
			snprintf(why, sizeof why, "queue b: %d messages left, not a suffix", k);
			check(ok, why, n);
		}
		/* IPC_SET of b: all or nothing */
		memset(&ds, 0, sizeof ds);
		msgctl(b, IPC_STAT, &ds);
		snprintf(why, sizeof why, "IPC_SET half applied (qbytes %lu mode %o)",
			 (unsigned long)ds.msg_qbytes, (unsigned)ds.msg_perm.mode);
		check((ds.msg_qbytes == 16384 && (ds.msg_perm.mode & 0777) == 0600) ||
		      (ds.msg_qbytes == 5000 && (ds.msg_perm.mode & 0777) == 0640), why, n);
		/* c: the sleeping receiver got the message once, or it was not
		 * sent; then it takes the release message (type 98) instead */
		{
			long res[2] = { -2, 0 };
			int rst;

			check(msgrcv(c, &m, sizeof m.text, 0, IPC_NOWAIT) < 0 && errno == ENOMSG,
			      "queue c: a message for the sleeping receiver was queued", n);
			fill(&m, 98);
			msgsnd(c, &m, msg_size(98), 0);
			if (read(pfd[0], res, sizeof res) != (ssize_t)sizeof res)
				res[0] = -3;
			close(pfd[0]);
			waitpid(rp, &rst, 0);
			snprintf(why, sizeof why, "receiver got %ld bytes (intact %ld)", res[0], res[1]);
			check(res[1] && (res[0] == (long)msg_size(98) || res[0] == (long)msg_size(99)),
			      why, n);
			k = drain(c, types, 16, n, "queue c");
			check(k == (res[0] == (long)msg_size(98) ? 0 : 1) && (!k || types[0] == 98),
			      "queue c: message delivered twice or lost", n);
		}
		/* the temporary key: gone, or a whole queue */
		t = msgget(KEY_TMP, 0);
		if (t >= 0) {
			long tt[4];
			int kt = drain(t, tt, 4, n, "temporary queue");

			check(kt == 0 || (kt == 1 && tt[0] == 7), "temporary queue content", n);
			if (msgctl(t, IPC_RMID, NULL) != 0) {
				snprintf(why, sizeof why, "cannot remove the leftover queue: %s",
					 strerror(errno));
				check(0, why, n);
			}
		} else {
			check(errno == ENOENT, "key lookup broken", n);
		}
		/* KEY_SLEPT: removed (by us if the workload did not get that far),
		 * its receiver told EIDRM */
		t = msgget(KEY_SLEPT, 0);
		if (t >= 0)
			msgctl(t, IPC_RMID, NULL);
		ck_sleeper_check(sleeper, n);
		check_namespace(n);
		if (ck_nfail)
			break;
	}
	check(done, "workload never completed", n);
	msgctl(a, IPC_RMID, NULL);
	msgctl(b, IPC_RMID, NULL);
	msgctl(c, IPC_RMID, NULL);
	return report();
}
