/*
 * msg_full.c - a namespace holds msgmni (32000) message queues, each full
 * at once (msgmnb = 16384 bytes), without running out of arena: for one
 * message size (the .t runs 8192, 1000, 128 and 32 bytes), fill every queue to the byte, check
 * the counts (IPC_STAT, MSG_INFO) and a message of each queue, remove all.
 * Run under uipc (the .t sets LD_PRELOAD and a fresh UIPC_DIR).  Prints TAP.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>

#define NQ 32000

static struct {
	long mtype;
	char text[8192];
} m, r;

static int ids[NQ];

static int one_size(size_t sz, char *why, size_t len)
{
	int per = (int)(16384 / sz);
	struct msginfo mi;

	for (int i = 0; i < NQ; i++) {
		ids[i] = msgget(IPC_PRIVATE, 0600);
		if (ids[i] < 0) {
			snprintf(why, len, "msgget #%d: %s", i, strerror(errno));
			return -1;
		}
		for (int k = 0; k < per; k++) {
			m.mtype = 1 + k;
			memset(m.text, (char)(i + k), sz);
			if (msgsnd(ids[i], &m, sz, IPC_NOWAIT)) {
				snprintf(why, len, "msgsnd queue %d message %d: %s", i, k,
					 strerror(errno));
				return -1;
			}
		}
		m.mtype = 1;
		if (msgsnd(ids[i], &m, 16384 - per * sz + 1, IPC_NOWAIT) == 0 || errno != EAGAIN) {
			snprintf(why, len, "queue %d accepted more than msgmnb", i);
			return -1;
		}
	}
	if (msgctl(0, MSG_INFO, (struct msqid_ds *)(void *)&mi) < 0 || mi.msgpool != NQ ||
	    mi.msgmap != NQ * per || mi.msgtql != (int)(NQ * per * sz)) {
		snprintf(why, len, "MSG_INFO pool %d map %d tql %d", mi.msgpool, mi.msgmap,
			 mi.msgtql);
		return -1;
	}
	for (int i = 0; i < NQ; i++) {
		struct msqid_ds ds;
		long k = i % per;
		ssize_t n = msgrcv(ids[i], &r, sizeof r.text, k, IPC_NOWAIT | MSG_COPY);

		if (msgctl(ids[i], IPC_STAT, &ds) || ds.msg_qnum != (msgqnum_t)per ||
		    ds.__msg_cbytes != per * sz) {
			snprintf(why, len, "queue %d: qnum %lu cbytes %lu", i,
				 (unsigned long)ds.msg_qnum, (unsigned long)ds.__msg_cbytes);
			return -1;
		}
		if (n != (ssize_t)sz || r.mtype != 1 + k || r.text[0] != (char)(i + k) ||
		    r.text[sz - 1] != (char)(i + k)) {
			snprintf(why, len, "queue %d: message %ld damaged", i, k);
			return -1;
		}
	}
	for (int i = 0; i < NQ; i++)
		if (msgctl(ids[i], IPC_RMID, NULL)) {
			snprintf(why, len, "IPC_RMID %d: %s", i, strerror(errno));
			return -1;
		}
	return 0;
}

/* msg_full N SIZE: test number N of the .t, one size per fresh namespace
 * (the allocator keeps freed blocks in their size class) */
int main(int argc, char **argv)
{
	int fail = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: msg_full TESTNUM SIZE\n");
		return 2;
	}
	{
		size_t sz = (size_t)atol(argv[2]);
		char why[256] = "";
		int r = sz < 1 || sz > 8192 ? -1 : one_size(sz, why, sizeof why);

		printf("%s %s - %d full queues of %zu-byte messages%s%s\n", r ? "not ok" : "ok",
		       argv[1], NQ, sz, r ? ": " : "", why);
		fail |= r;
		if (r) {
			for (int k = 0; k < NQ; k++)
				msgctl(ids[k], IPC_RMID, NULL);
		}
	}
	return fail ? 1 : 0;
}
