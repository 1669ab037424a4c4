/*
 * msg_basic.c - message queues without sleeping: msgget keys, flags and the
 * msgmni limit; msgsnd/msgrcv validation order, msgtyp 0 / > 0 / < 0,
 * MSG_EXCEPT, MSG_NOERROR, E2BIG (the message stays), MSG_COPY, the fit
 * rule in bytes and in messages, IPC_NOWAIT (EAGAIN, ENOMSG); every msgctl
 * command (IPC_STAT, IPC_SET and its EPERM for qbytes > msgmnb, IPC_RMID,
 * IPC_INFO, MSG_INFO, MSG_STAT, MSG_STAT_ANY); EFAULT; msgmax / msgmnb /
 * msgmni sysctls; permissions with a child dropped to uid 1000.
 */
#include "msgdt.h"

#include <sys/mman.h>

static void get(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = m_get(IPC_PRIVATE, 0600);
	int b = m_get(IPC_PRIVATE, IPC_CREAT | IPC_EXCL | 0640);
	int k = m_get(0x1234, IPC_CREAT | 0600);
	m_get(0x1234, 0);
	m_get(0x1234, IPC_CREAT);
	m_get(0x1234, IPC_CREAT | IPC_EXCL | 0600);
	m_get(0x1235, 0);
	m_get(0x1235, 0600);
	m_stat(a, IPC_STAT);
	m_stat(b, IPC_STAT);
	m_stat(k, IPC_STAT);
	m_rmid(k);
	m_get(0x1234, 0);
	m_rmid(k);
	m_rmid(a);
	m_rmid(b);
	m_stat(a, IPC_STAT);
	m_rmid(-1);
}

static void sndrcv(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	m_snd(q, 5, 10, 1, 0);
	m_snd(q, 3, 20, 2, 0);
	m_snd(q, 7, 0, 3, 0);
	m_snd(q, 3, 30, 4, 0);
	m_snd(q, 1, 5, 5, 0);
	m_snd(q, 9, 8, 6, 0);
	m_stat(q, IPC_STAT);
	m_rcv(q, 100, 3, IPC_NOWAIT);            /* first type 3 */
	m_rcv(q, 100, -6, IPC_NOWAIT);           /* lowest <= 6: type 1 */
	m_rcv(q, 100, -6, IPC_NOWAIT);           /* type 3 */
	m_rcv(q, 100, 5, MSG_EXCEPT | IPC_NOWAIT); /* first not 5: type 7 */
	m_rcv(q, 100, 4, IPC_NOWAIT);            /* none: ENOMSG */
	m_rcv(q, 100, -4, IPC_NOWAIT);           /* none <= 4 */
	m_rcv(q, 100, 0, IPC_NOWAIT);            /* type 5 */
	m_rcv(q, 100, 9, MSG_EXCEPT | IPC_NOWAIT); /* none */
	m_rcv(q, 100, 0, IPC_NOWAIT);            /* type 9 */
	m_rcv(q, 100, 0, IPC_NOWAIT);
	m_stat(q, IPC_STAT);
	/* negative type: lowest, first of equals */
	m_snd(q, 4, 1, 10, 0);
	m_snd(q, 2, 1, 11, 0);
	m_snd(q, 2, 1, 12, 0);
	m_snd(q, 1, 1, 13, 0);
	m_snd(q, 1, 1, 14, 0);
	m_rcv(q, 10, -2, IPC_NOWAIT);
	m_rcv(q, 10, -2, IPC_NOWAIT);
	m_rcv(q, 10, -3, IPC_NOWAIT);
	m_rcv(q, 10, -0x7fffffffffffffffL - 1, IPC_NOWAIT);
	m_rcv(q, 10, -0x7fffffffffffffffL - 1, IPC_NOWAIT);
	m_rcv(q, 10, 0x7fffffffffffffffL, MSG_EXCEPT | IPC_NOWAIT);
	m_snd(q, 0x7fffffffffffffffL, 3, 20, 0);
	m_rcv(q, 10, -0x7fffffffffffffffL - 1, IPC_NOWAIT);
	m_rcv(q, 10, 0x7fffffffffffffffL, IPC_NOWAIT);
	m_stat(q, IPC_STAT);
	m_rmid(q);
}

static void invalid(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	m_snd(q, 0, 1, 1, 0);
	m_snd(q, -5, 1, 1, 0);
	m_snd(q, 1, 8193, 1, 0);
	m_snd(q, 1, 8192, 1, IPC_NOWAIT);
	m_snd(q, 1, (size_t)-1, 1, 0);
	m_snd(-1, 1, 1, 1, 0);
	m_snd(-1, 0, 1, 1, 0);
	m_snd(q + 1, 1, 1, 1, 0);
	m_snd(q + 32768, 1, 1, 1, 0);
	m_rcv(-1, 10, 0, IPC_NOWAIT);
	m_rcv(q, (size_t)-1, 0, IPC_NOWAIT);
	m_rcv(q + 1, 10, 0, IPC_NOWAIT);
	m_rcv(q, 10, 0, IPC_NOWAIT | 0777);
	m_rcv(q, 8192, 0, IPC_NOWAIT);
	msgctl(q, IPC_STAT, NULL);
		dt_out("msgctl(q,99) = %s", M_RES(msgctl(q, 99, NULL)));
		dt_out("msgctl(-1,IPC_STAT) = %s", M_RES(msgctl(-1, IPC_STAT, NULL)));
		dt_out("msgctl(q,-1) = %s", M_RES(msgctl(q, -1, NULL)));
		dt_out("msgctl(q,IPC_STAT|0x100) = %s", M_RES(msgctl(q, IPC_STAT | 0x100, NULL)));
	m_rmid(q);
}

static void sizes(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	m_snd(q, 1, 100, 1, 0);
	m_rcv(q, 50, 0, IPC_NOWAIT);             /* E2BIG, stays */
	m_stat(q, IPC_STAT);
	m_rcv(q, 50, 0, IPC_NOWAIT | MSG_NOERROR);  /* truncated to 50 */
	m_stat(q, IPC_STAT);
	m_snd(q, 2, 0, 2, 0);
	m_rcv(q, 0, 0, IPC_NOWAIT);
	m_snd(q, 3, 10, 3, 0);
	m_rcv(q, 0, 0, IPC_NOWAIT);
	m_rcv(q, 0, 0, IPC_NOWAIT | MSG_NOERROR);
	m_snd(q, 4, 8192, 4, 0);
	m_rcv(q, 8192, 0, IPC_NOWAIT);
	m_stat(q, IPC_STAT);
	m_rmid(q);
}

static void copy(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	m_snd(q, 5, 10, 1, 0);
	m_snd(q, 6, 20, 2, 0);
	m_snd(q, 7, 30, 3, 0);
	m_rcv(q, 100, 0, MSG_COPY);
	m_rcv(q, 100, 0, MSG_COPY | IPC_NOWAIT | MSG_EXCEPT);
	m_rcv(q, 100, 0, MSG_COPY | IPC_NOWAIT);
	m_rcv(q, 100, 1, MSG_COPY | IPC_NOWAIT);
	m_rcv(q, 100, 2, MSG_COPY | IPC_NOWAIT);
	m_rcv(q, 100, 3, MSG_COPY | IPC_NOWAIT);
	m_rcv(q, 100, -1, MSG_COPY | IPC_NOWAIT);
	m_rcv(q, 15, 1, MSG_COPY | IPC_NOWAIT);
	m_rcv(q, 15, 1, MSG_COPY | IPC_NOWAIT | MSG_NOERROR);
	m_rcv(q, 20, 1, MSG_COPY | IPC_NOWAIT | MSG_NOERROR);
	m_stat(q, IPC_STAT);
	m_rcv(q, 100, 0, IPC_NOWAIT);
	m_rcv(q, 100, 0, MSG_COPY | IPC_NOWAIT);
	m_rcv(-1, 100, 0, MSG_COPY);
	m_rcv(q + 1, 100, 0, MSG_COPY | IPC_NOWAIT);
	m_rmid(q);
}

static void fit(int argc, char **argv)
{
	(void)argc; (void)argv;
	int q = m_get(IPC_PRIVATE, 0600);
	m_snd(q, 1, 8192, 1, IPC_NOWAIT);
	m_snd(q, 1, 8000, 2, IPC_NOWAIT);
	m_snd(q, 1, 192, 3, IPC_NOWAIT);
	m_snd(q, 1, 1, 4, IPC_NOWAIT);
	m_snd(q, 1, 0, 4, IPC_NOWAIT);
	m_stat(q, IPC_STAT);
	m_rcv(q, 8192, 0, IPC_NOWAIT);
	m_snd(q, 1, 1, 5, IPC_NOWAIT);
	m_stat(q, IPC_STAT);
	m_rmid(q);
	/* the count rule: qnum + 1 <= qbytes */
	q = m_get(IPC_PRIVATE, 0600);
	m_set(q, -1, -1, -1, 3);
	m_snd(q, 1, 0, 1, IPC_NOWAIT);
	m_snd(q, 1, 0, 2, IPC_NOWAIT);
	m_snd(q, 1, 0, 3, IPC_NOWAIT);
	m_snd(q, 1, 0, 4, IPC_NOWAIT);
	m_stat(q, IPC_STAT);
	m_set(q, -1, -1, -1, 2);
	m_snd(q, 1, 0, 4, IPC_NOWAIT);
	m_rcv(q, 10, 0, IPC_NOWAIT);
	m_snd(q, 1, 0, 4, IPC_NOWAIT);
	m_rcv(q, 10, 0, IPC_NOWAIT);
	m_snd(q, 1, 0, 4, IPC_NOWAIT);
	m_set(q, -1, -1, -1, 0);
	m_rcv(q, 10, 0, IPC_NOWAIT);
	m_rcv(q, 10, 0, IPC_NOWAIT);
	m_snd(q, 1, 0, 4, IPC_NOWAIT);
	m_stat(q, IPC_STAT);
	m_set(q, -1, -1, -1, 16384);
	m_set(q, -1, -1, -1, 16385);
	m_set(q, -1, -1, -1, -2);
	m_stat(q, IPC_STAT);
	m_rmid(q);
}

static void ctl(int argc, char **argv)
{
	(void)argc; (void)argv;
	m_info(IPC_INFO);
	m_info(MSG_INFO);
	int a = m_get(0x77, IPC_CREAT | 0640);
	int b = m_get(IPC_PRIVATE, 0600);
	m_snd(a, 1, 100, 1, 0);
	m_snd(a, 2, 50, 1, 0);
	m_snd(b, 1, 7, 1, 0);
	m_info(IPC_INFO);
	m_info(MSG_INFO);
	m_stat(a, IPC_STAT);
	m_stat(a & 0x7fff, MSG_STAT);
	m_stat(b & 0x7fff, MSG_STAT_ANY);
	m_stat(a, MSG_STAT);
	m_stat(5, MSG_STAT);
	m_stat(5, MSG_STAT_ANY);
	m_set(a, 1000, 2000, 0604, -1);
	m_stat(a, IPC_STAT);
	m_set(a, -1, -1, 01777, -1);
	m_stat(a, IPC_STAT);
	m_set(a, (uid_t)-1 & 0xffffffffL, -1, -1, -1);
	{
		struct msqid_ds ds;
		memset(&ds, 0, sizeof ds);
		msgctl(a, IPC_STAT, &ds);
		ds.msg_perm.uid = (uid_t)-1;
				dt_out("IPC_SET uid -1 = %s", M_RES(msgctl(a, IPC_SET, &ds)));
		ds.msg_perm.uid = 0;
		ds.msg_perm.gid = (gid_t)-1;
				dt_out("IPC_SET gid -1 = %s", M_RES(msgctl(a, IPC_SET, &ds)));
		ds.msg_qbytes = 100000;
				dt_out("IPC_SET gid -1 qbytes 100000 = %s", M_RES(msgctl(a, IPC_SET, &ds)));
	}
	m_rcv(a, 100, 0, IPC_NOWAIT);
	m_info(MSG_INFO);
	m_rmid(a);
	m_info(MSG_INFO);
	m_stat(b, IPC_STAT);
	m_rmid(b);
	m_info(MSG_INFO);
	m_info(IPC_INFO);
}

static void efault(int argc, char **argv)
{
	(void)argc; (void)argv;
	char *bad = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mprotect(bad + 4096, 4096, PROT_NONE);
	int q = m_get(IPC_PRIVATE, 0600);
		dt_out("msgsnd(NULL) = %s", M_RES(msgsnd(q, NULL, 1, 0)));
		dt_out("msgsnd(NULL, mtype 0 bad id) = %s", M_RES(msgsnd(-1, NULL, 1, 0)));
	*(long *)(bad + 4096 - 8) = 1;
		dt_out("msgsnd(text unreadable) = %s", M_RES(msgsnd(q, bad + 4096 - 8, 10, 0)));
		dt_out("msgsnd(text unreadable, bad id) = %s",
	       M_RES(msgsnd(q + 1, bad + 4096 - 8, 10, 0)));
		dt_out("msgsnd(text unreadable, too big) = %s",
	       M_RES(msgsnd(q, bad + 4096 - 8, 9000, 0)));
		dt_out("msgsnd(sz 0 at edge) = %s", M_RES(msgsnd(q, bad + 4096 - 8, 0, 0)));
	m_stat(q, IPC_STAT);
		dt_out("msgrcv(NULL, empty) = %s", M_RES(msgrcv(q, NULL, 10, 5, IPC_NOWAIT)));
	m_snd(q, 5, 10, 1, 0);
		dt_out("msgrcv(NULL) = %s", M_RES(msgrcv(q, NULL, 10, 5, IPC_NOWAIT)));
	m_stat(q, IPC_STAT);
	m_snd(q, 5, 10, 1, 0);
		dt_out("msgrcv(text unwritable) = %s",
	       M_RES(msgrcv(q, bad + 4096 - 8, 10, 5, IPC_NOWAIT)));
	m_stat(q, IPC_STAT);
	m_snd(q, 5, 10, 1, 0);
		dt_out("msgrcv(COPY unreadable) = %s",
	       M_RES(msgrcv(q, bad + 4096 - 8, 100, 0, IPC_NOWAIT | MSG_COPY)));
		dt_out("msgctl(IPC_STAT, NULL) = %s", M_RES(msgctl(q, IPC_STAT, NULL)));
		dt_out("msgctl(IPC_SET, NULL) = %s", M_RES(msgctl(q, IPC_SET, NULL)));
		dt_out("msgctl(IPC_INFO, NULL) = %s", M_RES(msgctl(q, IPC_INFO, NULL)));
		dt_out("msgctl(MSG_STAT, NULL) = %s", M_RES(msgctl(q & 0x7fff, MSG_STAT, NULL)));
	m_stat(q, IPC_STAT);
	m_rmid(q);
	munmap(bad, 8192);
}

static void sysctls(int argc, char **argv)
{
	(void)argc; (void)argv;
	dt_sysctl_get("kernel.msgmax");
	dt_sysctl_get("kernel.msgmnb");
	dt_sysctl_get("kernel.msgmni");
	int q = m_get(IPC_PRIVATE, 0600);
	m_snd(q, 1, 300, 1, 0);
	dt_sysctl_set("kernel.msgmax", "200");
	m_snd(q, 1, 201, 1, 0);
	m_snd(q, 1, 200, 2, 0);
	m_rcv(q, 8192, 0, MSG_COPY | IPC_NOWAIT);
	m_rcv(q, 150, 1, MSG_COPY | IPC_NOWAIT | MSG_NOERROR);
	m_rcv(q, 8192, 0, IPC_NOWAIT);
	dt_sysctl_set("kernel.msgmax", "20000");
	m_snd(q, 1, 16385, 1, IPC_NOWAIT);
	m_snd(q, 1, 16184, 1, IPC_NOWAIT);
	m_stat(q, IPC_STAT);
	dt_sysctl_set("kernel.msgmnb", "100");
	m_set(q, -1, -1, -1, 101);
	m_set(q, -1, -1, -1, 100);
	int r = m_get(IPC_PRIVATE, 0600);
	m_stat(r, IPC_STAT);
	m_info(IPC_INFO);
	m_rmid(r);
	m_rmid(q);
	dt_sysctl_set("kernel.msgmni", "3");
	int ids[4];
	for (int i = 0; i < 4; i++)
		ids[i] = m_get(IPC_PRIVATE, 0600);
	m_get(0x99, IPC_CREAT | 0600);
	m_info(MSG_INFO);
	for (int i = 0; i < 4; i++)
		if (ids[i] >= 0)
			m_rmid(ids[i]);
	dt_sysctl_set("kernel.msgmni", "32000");
	dt_sysctl_set("kernel.msgmnb", "16384");
	dt_sysctl_set("kernel.msgmax", "8192");
}

static void perm_child(void *arg)
{
	int *ids = arg;
	dt_drop_privs(1000, 1000, 2000);
	m_get(0x501, 0);
	m_get(0x501, 0400);
	m_get(0x502, 0600);
	m_snd(ids[0], 1, 1, 1, IPC_NOWAIT);
	m_rcv(ids[0], 10, 0, IPC_NOWAIT);
	m_stat(ids[0], IPC_STAT);
	m_stat(ids[0] & 0x7fff, MSG_STAT);
	m_stat(ids[0] & 0x7fff, MSG_STAT_ANY);
	m_set(ids[0], -1, -1, 0666, -1);
	m_rmid(ids[0]);
	m_snd(ids[1], 1, 1, 9, IPC_NOWAIT);      /* group write */
	m_rcv(ids[1], 10, 0, IPC_NOWAIT);        /* no group read */
	m_rcv(ids[1], 10, 0, IPC_NOWAIT | MSG_COPY);
	m_snd(ids[2], 1, 1, 9, IPC_NOWAIT);      /* owned by uid 1000 */
	m_rcv(ids[2], 10, 0, IPC_NOWAIT);
	m_set(ids[2], -1, -1, 0600, 16384);
	m_set(ids[2], -1, -1, 0600, 20000);
	m_set(ids[2], 0, -1, 0600, -1);
	m_stat(ids[2], IPC_STAT);
	m_rmid(ids[2]);
}

static void perm(int argc, char **argv)
{
	(void)argc; (void)argv;
	int ids[3];
	ids[0] = m_get(0x501, IPC_CREAT | 0600);
	ids[1] = m_get(0x502, IPC_CREAT | 0620);
	ids[2] = m_get(IPC_PRIVATE, 0600);
	m_set(ids[1], -1, 2000, -1, -1);
	m_set(ids[2], 1000, -1, -1, -1);
	m_snd(ids[0], 1, 1, 1, 0);
	m_snd(ids[2], 1, 1, 1, 0);
	dt_wait(dt_fork(perm_child, ids));
	m_stat(ids[1], IPC_STAT);
	m_stat(ids[2], IPC_STAT);
	m_rmid(ids[0]);
	m_rmid(ids[1]);
	m_rmid(ids[2]);
}

static void ids(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = m_get(IPC_PRIVATE, 0600);
	m_rmid(a);
	int b = m_get(IPC_PRIVATE, 0600);
	dt_out("same idx %d, next seq %d", (a & 0x7fff) == (b & 0x7fff), b - a == 32768);
	m_snd(a, 1, 1, 1, IPC_NOWAIT);
	m_snd(b, 1, 1, 1, IPC_NOWAIT);
	m_rmid(b);
	dt_sysctl_set("kernel.msg_next_id", "4242");
	int c = m_get(IPC_PRIVATE, 0600);
	m_stat(c, IPC_STAT);
	m_rmid(c);
	for (int i = 0; i < 70; i++) {
		int x = msgget(IPC_PRIVATE, 0600);
		msgsnd(x, &(struct { long t; char c[4]; }){ 1, "abc" }, 4, 0);
		msgctl(x, IPC_RMID, NULL);
	}
	m_info(MSG_INFO);
}

const struct dt_case dt_cases[] = {
	{ "get", get, 0 },
	{ "sndrcv", sndrcv, 0 },
	{ "invalid", invalid, 0 },
	{ "sizes", sizes, 0 },
	{ "copy", copy, 0 },
	{ "fit", fit, 0 },
	{ "ctl", ctl, 0 },
	{ "efault", efault, 0 },
	{ "sysctls", sysctls, 0 },
	{ "perm", perm, 0 },
	{ "ids", ids, 0 },
	{ NULL, NULL, 0 },
};
