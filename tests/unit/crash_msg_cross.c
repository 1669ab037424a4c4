/*
 * crash_msg_cross.c - SIGKILL a process at every journaled store and commit
 * point of a message queue workload, then let another process act on the
 * queue before anyone takes the msg ids lock, in whose frame the victim may
 * have left a section half done: the other process takes the queue lock
 * alone (msgsnd), so the recovery of the ids section comes after what it
 * did, and must not undo it.  crash_msg.c checks what the next locker
 * finds; this checks what a process that takes another lock of the same
 * section may do first (crash_sem_cross.c and crash_shm_cross.c do the same
 * for semaphores and shared memory).  The workloads, each under every
 * failpoint:
 *
 *   create: msgget(IPC_PRIVATE), whose queue we find by index
 *           (MSG_STAT_ANY) and send a message to (the queue lock, the
 *           message in a block of its own) before the ids section that
 *           publishes it is recovered.  A queue we sent to must still be
 *           there once it is, holding our message (never taken away with
 *           it).
 *
 * Usage: crash_msg_cross [WORKLOAD...] (all by default).  Run under uipc
 * (the .t sets LD_PRELOAD and a fresh UIPC_DIR).  Prints TAP.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crashkit.h"

#ifndef MSG_STAT_ANY
#define MSG_STAT_ANY 13
#endif
/* MSG_STAT_ANY looks this far for queues (the ids of a namespace with one
 * queue at a time cycle within 64, or 4096 in an extended one) */
#define SCAN 4096
#define TEXT "sent before the ids lock was recovered"

struct mb {
	long mtype;
	char text[64];
};

struct workload {
	const char *name;
	/* the victim's calls (ARG: what its trial passed), its exit status */
	int (*victim)(int arg);
	/* one trial at failpoint N: the victim's wait status, -1 when the
	 * set-up failed */
	int (*trial)(const struct workload *w, int n);
};

static int run_victim(const struct workload *w, int arg, int n)
{
	return ck_run_victim("crash_msg_cross", w->name, arg, n);
}

static void wcheck(const struct workload *w, int cond, const char *what, int n)
{
	ck_wcheck(w->name, cond, what, n);
}

/* anyone who takes the msg ids lock (MSG_INFO adds the queues up under
 * it), which recovers a section a dead holder left there */
static void take_ids_lock(void)
{
	struct msginfo mi;

	msgctl(0, MSG_INFO, (struct msqid_ds *)(void *)&mi);
}

/* every queue left in the namespace removed; how many there were */
static int remove_all(void)
{
	struct msqid_ds ds;
	int left = 0;

	for (int i = 0; i < SCAN; i++) {
		int id = msgctl(i, MSG_STAT_ANY, &ds);

		if (id >= 0) {
			msgctl(id, IPC_RMID, NULL);
			left++;
		}
	}
	return left;
}

/* ---- create ---- */

static int victim_create(int unused)
{
	(void)unused;
	return msgget(IPC_PRIVATE, 0600) < 0 ? 1 : 0;
}

static int trial_create(const struct workload *w, int n)
{
	int st = run_victim(w, 0, n), id = -1, sent = 0;
	struct msqid_ds ds;
	struct mb m = { 7, TEXT };
	char why[200];

	/* before anyone has taken the ids lock: the victim's queue, if the
	 * table shows it, is sent to (the queue lock alone) */
	for (int i = 0; i < SCAN && id < 0; i++)
		id = msgctl(i, MSG_STAT_ANY, &ds);
	if (id >= 0)
		sent = msgsnd(id, &m, sizeof TEXT, IPC_NOWAIT) == 0;
	take_ids_lock();
	if (sent) {
		/* sent: the queue lives, holding our message */
		if (msgctl(id, IPC_STAT, &ds) < 0) {
			snprintf(why, sizeof why, "queue %d vanished under our message (%s)", id,
				 strerror(errno));
			wcheck(w, 0, why, n);
		} else {
			ssize_t len;

			snprintf(why, sizeof why, "queue %d: qnum %lu with our message", id,
				 (unsigned long)ds.msg_qnum);
			wcheck(w, ds.msg_qnum == 1, why, n);
			memset(&m, 0, sizeof m);
			len = msgrcv(id, &m, sizeof m.text, 0, IPC_NOWAIT);
			wcheck(w, len == (ssize_t)sizeof TEXT && m.mtype == 7 && !strcmp(m.text, TEXT),
			       "our message did not come back whole", n);
		}
	}
	remove_all();   /* the queue of a victim that got that far */
	return st;
}

static const struct workload workloads[] = {
	{ "create", victim_create, trial_create },
};
#define NW ((int)(sizeof(workloads) / sizeof(workloads[0])))

/* ck_each_failpoint's trial: CTX, the workload */
static int trial_of(void *ctx, int n)
{
	const struct workload *w = ctx;

	return w->trial(w, n);
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "victim")) {
		for (int i = 0; i < NW; i++)
			if (!strcmp(argv[2], workloads[i].name))
				return workloads[i].victim(atoi(argv[3]));
		return 127;
	}
	for (int i = 0; i < NW; i++)
		if (ck_wanted(argc, argv, workloads[i].name))
			ck_each_failpoint(workloads[i].name, trial_of, (void *)&workloads[i], remove_all,
					  "a queue was");
	return report();
}
