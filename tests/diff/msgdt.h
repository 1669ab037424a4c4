/*
 * msgdt.h - printing wrappers for the message-queue scenarios (msg_*.c),
 * on top of dt.h: every call with its arguments, its result and errno, and
 * every field of what it returns.  Static helpers, included by each msg_*.c.
 */
#ifndef MSGDT_H
#define MSGDT_H

#include "dt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>
#include <unistd.h>

#ifndef MSG_STAT_ANY
#define MSG_STAT_ANY 13
#endif
#ifndef MSG_COPY
#define MSG_COPY 040000
#endif

#define MAXTEXT 65536

/* the result of EXPR with the errno it left, as dt_res prints it */
#define M_RES(expr) ({ errno = 0; long m_r_ = (long)(expr); int m_e_ = errno; \
		       dt_res(m_r_, m_e_); })

struct mbuf {
	long mtype;
	char mtext[MAXTEXT];
};

static struct mbuf msnd_buf, mrcv_buf;

static const char *m_flg(int f)
{
	static char b[8][128];
	static int k;
	char *s = b[k++ % 8];
	s[0] = 0;
	if (f & IPC_NOWAIT)
		strcat(s, "NOWAIT|");
	if (f & MSG_NOERROR)
		strcat(s, "NOERROR|");
	if (f & MSG_EXCEPT)
		strcat(s, "EXCEPT|");
	if (f & MSG_COPY)
		strcat(s, "COPY|");
	f &= ~(IPC_NOWAIT | MSG_NOERROR | MSG_EXCEPT | MSG_COPY);
	snprintf(s + strlen(s), 32, "0%o", f);
	return s;
}

__attribute__((unused)) static int m_get(key_t key, int flg)
{
	errno = 0;
	int r = msgget(key, flg);
	int e = errno;
	dt_out("msgget(%s,%s) = %s", dt_key(key), dt_semflg(flg), dt_res(r, e));
	errno = e;
	return r;
}

/* text: sz bytes, byte i = (seed + i) & 0xff */
__attribute__((unused)) static int m_snd(int id, long type, size_t sz, int seed, int flg)
{
	msnd_buf.mtype = type;
	for (size_t i = 0; i < sz && i < MAXTEXT; i++)
		msnd_buf.mtext[i] = (char)(seed + i);
	errno = 0;
	int r = msgsnd(id, &msnd_buf, sz, flg);
	int e = errno;
	dt_out("msgsnd(%d,type=%ld,sz=%zu,seed=%d,%s) = %s", id, type, sz, seed, m_flg(flg),
	       dt_res(r, e));
	errno = e;
	return r;
}

/* prints what arrived: type, length, the seed the text was made from (or
 * "corrupt"), and whether bytes past the returned length were touched */
static const char *m_desc(long r, size_t bufsz)
{
	static char b[256];
	int seed = (unsigned char)mrcv_buf.mtext[0];
	int ok = 1;
	for (long i = 0; i < r; i++)
		if ((unsigned char)mrcv_buf.mtext[i] != (unsigned char)(seed + i))
			ok = 0;
	size_t after = (size_t)r < MAXTEXT ? (size_t)r : MAXTEXT;
	int touched = after < bufsz + 8 && after < MAXTEXT &&
		      (unsigned char)mrcv_buf.mtext[after] != 0x5a;
	if (r == 0)
		snprintf(b, sizeof b, "type=%ld empty%s", mrcv_buf.mtype, touched ? " TOUCHED" : "");
	else
		snprintf(b, sizeof b, "type=%ld seed=%d%s%s", mrcv_buf.mtype, seed,
			 ok ? "" : " CORRUPT", touched ? " TOUCHED" : "");
	return b;
}

__attribute__((unused)) static long m_rcv_quiet(int id, size_t bufsz, long type, int flg, int *err)
{
	memset(&mrcv_buf, 0x5a, sizeof mrcv_buf);
	mrcv_buf.mtype = -77;
	errno = 0;
	long r = msgrcv(id, &mrcv_buf, bufsz, type, flg);
	*err = errno;
	return r;
}

__attribute__((unused)) static long m_rcv(int id, size_t bufsz, long type, int flg)
{
	int e;
	long r = m_rcv_quiet(id, bufsz, type, flg, &e);
	if (r >= 0)
		dt_out("msgrcv(%d,bufsz=%zu,type=%ld,%s) = %ld %s", id, bufsz, type, m_flg(flg), r,
		       m_desc(r, bufsz));
	else
		dt_out("msgrcv(%d,bufsz=%zu,type=%ld,%s) = %s (mtype %s)", id, bufsz, type,
		       m_flg(flg), dt_res(r, e), mrcv_buf.mtype == -77 ? "untouched" : "WRITTEN");
	errno = e;
	return r;
}

static const char *m_cmd(int cmd)
{
	switch (cmd) {
	case IPC_STAT: return "IPC_STAT";
	case IPC_SET: return "IPC_SET";
	case IPC_RMID: return "IPC_RMID";
	case IPC_INFO: return "IPC_INFO";
	case MSG_INFO: return "MSG_INFO";
	case MSG_STAT: return "MSG_STAT";
	case MSG_STAT_ANY: return "MSG_STAT_ANY";
	}
	static char b[32];
	snprintf(b, sizeof b, "cmd%d", cmd);
	return b;
}

__attribute__((unused)) static int m_stat(int id, int cmd)
{
	struct msqid_ds ds;
	memset(&ds, 0xa5, sizeof ds);
	errno = 0;
	int r = msgctl(id, cmd, &ds);
	int e = errno;
	dt_out("msgctl(%d,%s) = %s", id, m_cmd(cmd), dt_res(r, e));
	if (r != -1) {
		const struct ipc_perm *p = &ds.msg_perm;
		dt_out("  perm key=%s uid=%u gid=%u cuid=%u cgid=%u mode=0%o seq=%u",
		       dt_key(p->__key), (unsigned)p->uid, (unsigned)p->gid, (unsigned)p->cuid,
		       (unsigned)p->cgid, (unsigned)p->mode, (unsigned)p->__seq);
		dt_out("  stime=%s rtime=%s ctime=%s cbytes=%lu qnum=%lu qbytes=%lu lspid=%s lrpid=%s",
		       dt_time((long long)ds.msg_stime), dt_time((long long)ds.msg_rtime),
		       dt_time((long long)ds.msg_ctime), (unsigned long)ds.__msg_cbytes,
		       (unsigned long)ds.msg_qnum, (unsigned long)ds.msg_qbytes,
		       dt_pid(ds.msg_lspid), dt_pid(ds.msg_lrpid));
	}
	errno = e;
	return r;
}

__attribute__((unused)) static int m_info(int cmd)
{
	struct msginfo mi;
	memset(&mi, 0xa5, sizeof mi);
	errno = 0;
	int r = msgctl(0, cmd, (struct msqid_ds *)(void *)&mi);
	int e = errno;
	dt_out("msgctl(0,%s) = %s", m_cmd(cmd), dt_res(r, e));
	if (r != -1)
		dt_out("  msgpool=%d msgmap=%d msgmax=%d msgmnb=%d msgmni=%d msgssz=%d "
		       "msgtql=%d msgseg=%u",
		       mi.msgpool, mi.msgmap, mi.msgmax, mi.msgmnb, mi.msgmni, mi.msgssz,
		       mi.msgtql, (unsigned)mi.msgseg);
	errno = e;
	return r;
}

/* IPC_SET from a fresh IPC_STAT, with the given changes (-1: keep) */
__attribute__((unused)) static int m_set(int id, long uid, long gid, long mode, long qbytes)
{
	struct msqid_ds ds;
	memset(&ds, 0, sizeof ds);
	msgctl(id, IPC_STAT, &ds);
	if (uid != -1)
		ds.msg_perm.uid = (uid_t)uid;
	if (gid != -1)
		ds.msg_perm.gid = (gid_t)gid;
	if (mode != -1)
		ds.msg_perm.mode = (unsigned short)mode;
	if (qbytes != -1)
		ds.msg_qbytes = (msglen_t)qbytes;
	errno = 0;
	int r = msgctl(id, IPC_SET, &ds);
	int e = errno;
	dt_out("msgctl(%d,IPC_SET,uid=%ld,gid=%ld,mode=0%lo,qbytes=%ld) = %s", id, uid, gid,
	       mode, qbytes, dt_res(r, e));
	errno = e;
	return r;
}

__attribute__((unused)) static int m_rmid(int id)
{
	errno = 0;
	int r = msgctl(id, IPC_RMID, NULL);
	int e = errno;
	dt_out("msgctl(%d,IPC_RMID) = %s", id, dt_res(r, e));
	errno = e;
	return r;
}

/*
 * Wait until PID sleeps in a message-queue call: state S, and sleeping in
 * the kernel's msg code (kernel) or on a futex (uipc).  Prints nothing on
 * success; FAIL after 5 s.
 */
__attribute__((unused)) static int m_wait_blocked(pid_t pid)
{
	long long deadline = dt_now_ms() + dt_deadline_ms(5000);
	char path[64], buf[512];
	int stable = 0;
	for (;;) {
		int isS = dt_proc_state(pid) == 'S', inwait = 0;
		snprintf(path, sizeof path, "/proc/%d/wchan", (int)pid);
		int fd = open(path, O_RDONLY);
		if (fd >= 0) {
			ssize_t n = read(fd, buf, sizeof buf - 1);
			close(fd);
			if (n > 0) {
				buf[n] = 0;
				inwait = strstr(buf, strcmp(dt_mode, "kernel") ? "futex" : "msg") != NULL;
			}
		}
		if (isS && inwait) {
			if (++stable >= 3)
				return 0;
		} else {
			stable = 0;
		}
		if (dt_now_ms() > deadline) {
			dt_fail("%s not blocked in time", dt_pid(pid));
			return -1;
		}
		dt_msleep(2);
	}
}

/* a child that blocks in msgsnd / msgrcv and reports through the channel */
struct m_blk {
	int id, flg, seed;
	long type;
	size_t sz;
	int snd;
};

__attribute__((unused)) static void m_blocker(void *p)
{
	struct m_blk *b = p;
	int e;
	long r;
	if (b->snd) {
		msnd_buf.mtype = b->type;
		for (size_t i = 0; i < b->sz; i++)
			msnd_buf.mtext[i] = (char)(b->seed + i);
		errno = 0;
		r = msgsnd(b->id, &msnd_buf, b->sz, b->flg);
		e = errno;
		dt_chan_send((int)r, e, 0);
	} else {
		r = m_rcv_quiet(b->id, b->sz, b->type, b->flg, &e);
		/* extra: type * 1000 + seed of what arrived, -1 if corrupt */
		int extra = 0;
		if (r >= 0) {
			int seed = r ? (unsigned char)mrcv_buf.mtext[0] : 0;
			extra = (int)mrcv_buf.mtype * 1000 + seed;
			for (long i = 0; i < r; i++)
				if ((unsigned char)mrcv_buf.mtext[i] != (unsigned char)(seed + i))
					extra = -1;
		}
		dt_chan_send((int)r, e, extra);
	}
}

__attribute__((unused)) static pid_t m_block_rcv(int id, size_t bufsz, long type, int flg)
{
	static struct m_blk b;
	b = (struct m_blk){ id, flg, 0, type, bufsz, 0 };
	pid_t c = dt_fork(m_blocker, &b);
	m_wait_blocked(c);
	dt_out("%s: msgrcv(%d,bufsz=%zu,type=%ld,%s) blocks", dt_pid(c), id, bufsz, type,
	       m_flg(flg));
	return c;
}

__attribute__((unused)) static pid_t m_block_snd(int id, long type, size_t sz, int seed, int flg)
{
	static struct m_blk b;
	b = (struct m_blk){ id, flg, seed, type, sz, 1 };
	pid_t c = dt_fork(m_blocker, &b);
	m_wait_blocked(c);
	dt_out("%s: msgsnd(%d,type=%ld,sz=%zu,seed=%d,%s) blocks", dt_pid(c), id, type, sz,
	       seed, m_flg(flg));
	return c;
}

#endif /* MSGDT_H */
