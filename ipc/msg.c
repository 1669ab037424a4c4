/*
 * msg.c - System V message queues: msgget, msgsnd, msgrcv, msgctl.
 *
 * The behaviour is the kernel's (ipc/msg.c): the fit rule, FIFO senders that
 * are woken to retry when space appears, FIFO receivers, the pipelined
 * hand-off of a new message to the first waiting receiver it matches (a
 * receiver whose buffer is too small gets E2BIG and the walk goes on),
 * MSG_COPY / MSG_EXCEPT / MSG_NOERROR / negative msgtyp, EIDRM at removal.
 *
 * Everything lives in the namespace arena.  A queue is one struct msg_queue
 * with its own robust lock; messages are struct msgm blocks linked in FIFO
 * order.  A send to a queue with room and a receive from a queue holding a
 * matching message take the queue lock (no system call when uncontended)
 * and copy: no futex, no allocator (each queue keeps a small journaled free
 * list of message blocks).  Sleepers wait on the futex word of their own
 * struct msgw; a waker completes them under the lock and issues FUTEX_WAKE
 * after the release, only if the sleeper said it sleeps.  Before sleeping,
 * a sender without room or a receiver without a message spins for a
 * per-thread adaptive budget (a peer on another CPU answers within
 * microseconds; a peer sharing our CPU cannot, and the budget drops to 0).
 * A receiver that is stopped (SIGSTOP) is taken off the queue by the next
 * sender, as the kernel's receiver leaves it when the stop signal wakes it.
 *
 * Removed queues are never returned to the allocator: a caller that looked a
 * queue up just before its removal may still take its lock.  They go to a
 * list of retired queues (headed by hdr->msg_retired, under the ids lock) and are
 * reused by the next msgget that creates a queue.
 */
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "signals.h"

#ifndef MSG_STAT_ANY
#define MSG_STAT_ANY 13
#endif
#ifndef MSG_COPY
#define MSG_COPY 040000
#endif
#ifndef MSG_EXCEPT
#define MSG_EXCEPT 020000
#endif

#define MSGSSZ  16
#define MSGSEG  0xffff
#define MSGPOOL (MSGMNI_DEF * MSGMNB_DEF / 1024)
#define MSGMAP  MSGMNB_DEF
#define MSGTQL  MSGMNB_DEF

/* the list of retired queues: hdr->msg_retired (ids lock) */
#define MSG_RETIRED(ns) ((ns)->hdr->msg_retired)

#define MW_WAITING 1

enum { SEARCH_ANY = 1, SEARCH_EQUAL, SEARCH_NOTEQUAL, SEARCH_LESSEQUAL, SEARCH_NUMBER };

/* message blocks kept per queue for reuse: at most FREE_MAX_BYTES of text
 * (nfree counts bytes), blocks of at most FREE_MAX_CAP */
#define FREE_MAX_BYTES 32768
#define FREE_MAX_CAP   8192

/* how long a sender without room or a receiver without a message spins
 * before it sleeps (the other side is usually busy on another CPU), and
 * how many pauses msq_lock waits for a holder before the mutex sleeps */
#define WAIT_SPIN_NS 50000
#define LOCK_SPIN    400

struct mlist {
	uoff_t first, last;
};

struct msgm {
	uoff_t next;
	int64_t mtype;
	uint32_t size;             /* the kernel's m_ts (<= msgmax <= INT_MAX) */
	uint32_t cap;              /* text bytes the block holds */
	char text[];
};

/* a sleeping sender or receiver */
struct msgw {
	uoff_t next, prev;
	uint64_t tword;            /* the sleeper's thread slot state word */
	uint32_t thread;           /* its thread slot */
	int32_t pid;
	_Atomic int32_t status;    /* futex word: MW_WAITING, then 0 or -errno */
	_Atomic int32_t sleeping;  /* set before FUTEX_WAIT: wakers skip the
				      system call while it is 0 */
	int32_t mode;              /* receiver: SEARCH_* */
	int32_t pad;
	int64_t msgtype;           /* receiver */
	int64_t maxsize;           /* receiver: INT_MAX with MSG_NOERROR */
	uint64_t msgsz;            /* sender */
	uoff_t msg;                /* receiver: the message handed to it */
	int64_t since;             /* CLOCK_MONOTONIC ns when it went to sleep */
};

struct msg_queue {
	struct uperm perm;
	struct ulock lock;
	int64_t stime, rtime, ctime;
	uint64_t cbytes, qnum, qbytes;
	int32_t lspid, lrpid;
	struct mlist messages;
	struct mlist receivers;
	struct mlist senders;
	uoff_t freelist;           /* message blocks for reuse */
	uint64_t nfree;            /* text bytes on the free list */
	uoff_t retired_next;       /* the retired list (ids lock) */
	uint64_t nsent;            /* messages sent so far: spinning receivers
				      watch it */
	uoff_t wfree;              /* one struct msgw kept for the next sleeper */
};

/* ---- helpers ---- */


static struct msgm *m_at(struct ns *ns, uoff_t off)
{
	struct msgm *m = off ? ns_ptr(ns, off, sizeof(struct msgm)) : NULL;

	if (m && (m->size > m->cap || !ns_ptr(ns, off, sizeof(*m) + m->cap)))
		m = NULL;
	return m;
}

static struct msgw *w_at(struct ns *ns, uoff_t off)
{
	return off ? ns_ptr(ns, off, sizeof(struct msgw)) : NULL;
}

static struct msg_queue *msq_of(struct uperm *p)
{
	return (struct msg_queue *)p;
}

static struct msg_queue *msq_obtain_check(struct ns *ns, int id, int *err)
{
	struct uperm *p = ipc_obtain_check(ns, IPC_MSG_IDS, id, err);

	return p ? msq_of(p) : NULL;
}

static bool msq_valid(struct msg_queue *q, int id)
{
	return !atomic_load(&q->perm.deleted) && q->perm.id == id;
}

static uint64_t rd64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/*
 * Spin while STILL(a, b) holds, for at most the current budget (read with
 * the vDSO clock: no system call); true if it stopped holding.  The budget
 * adapts per thread: a spin that ends in time doubles it (up to
 * WAIT_SPIN_NS), one that runs out halves it (down to SPIN_MIN_NS), so that
 * a peer on another CPU is waited for without sleeping while a peer that
 * shares our CPU (it cannot run while we spin) soon finds us asleep.
 */
#define SPIN_MIN_NS   500
#define SPIN_PROBE_NS 4000
static __thread int64_t spin_budget = WAIT_SPIN_NS;
static __thread unsigned spin_skipped;

static bool spin_while(bool (*still)(const void *a, uint64_t b), const void *a, uint64_t b)
{
	int64_t until = 0, budget = spin_budget;

	if (!budget) {
		/* spinning has not paid lately: sleep at once, but probe again
		 * now and then (the peer may have moved to another CPU) */
		if (++spin_skipped % 32)
			return !still(a, b);
		budget = SPIN_PROBE_NS;
	}
	for (unsigned i = 0;; i++) {
		if (!still(a, b)) {
			if (until) {
				spin_budget = spin_budget ? spin_budget * 2 : SPIN_PROBE_NS;
				if (spin_budget > WAIT_SPIN_NS)
					spin_budget = WAIT_SPIN_NS;
			}
			return true;
		}
		cpu_relax();
		if ((i & 31) == 31) {
			int64_t now = mono_ns();

			if (!until) {
				until = now + budget;
			} else if (now > until) {
				spin_budget = spin_budget / 2 < SPIN_MIN_NS ? 0 : spin_budget / 2;
				return false;
			}
		}
	}
}

static int msq_lock(struct ns *ns, struct msg_queue *q)
{
	unsigned *word = (unsigned *)&q->lock.m.__data.__lock;

	/* a short wait for a holder on another CPU beats a futex sleep */
	for (int i = 0; i < LOCK_SPIN && __atomic_load_n(word, __ATOMIC_RELAXED); i++)
		cpu_relax();
	return ulock_acquire(ns, &q->lock);
}

static void msq_unlock(struct ns *ns, struct msg_queue *q)
{
	ulock_release(ns, &q->lock);
}

static bool msg_fits(struct msg_queue *q, uint64_t sz)
{
	uint64_t qb = rd64(&q->qbytes);

	return rd64(&q->cbytes) + sz <= qb && rd64(&q->qnum) + 1 <= qb;
}

static bool no_room(const void *a, uint64_t sz)
{
	struct msg_queue *q = (struct msg_queue *)a;

	return !msg_fits(q, sz) && !atomic_load_explicit(&q->perm.deleted, memory_order_relaxed);
}

/*
 * A full queue whose receiver is draining it: let it drain a little more
 * before we take the lock again (briefly, without changing the spin
 * budget), so that sender and receiver do not fight for the lock at every
 * message.  Only timing: a sender woken from the kernel's queue is not
 * immediate either.
 */
#define HYSTERESIS_NS 20000

static void room_hysteresis(struct msg_queue *q, uint64_t sz)
{
	uint64_t qb = rd64(&q->qbytes), want = qb / 2 > sz ? qb / 2 : sz;
	int64_t until = 0;

	for (unsigned i = 0;; i++) {
		uint64_t cb = rd64(&q->cbytes);

		if (cb > qb || qb - cb >= want)
			return;
		cpu_relax();
		if ((i & 31) == 31) {
			int64_t now = mono_ns();

			if (!until)
				until = now + HYSTERESIS_NS;
			else if (now > until)
				return;
		}
	}
}

static bool nsent_is(const void *a, uint64_t n)
{
	struct msg_queue *q = (struct msg_queue *)a;

	return rd64(&q->nsent) == n && !atomic_load_explicit(&q->perm.deleted, memory_order_relaxed);
}

/* ---- waiter lists ---- */

static void wl_add_tail(struct ns *ns, struct mlist *l, struct msgw *w)
{
	uoff_t wo = ns_off(ns, w);
	struct msgw *last = w_at(ns, l->last);

	J_SET(ns, w->next, (uoff_t)0);
	J_SET(ns, w->prev, l->last);
	if (last)
		J_SET(ns, last->next, wo);
	else
		J_SET(ns, l->first, wo);
	J_SET(ns, l->last, wo);
}

static void wl_del(struct ns *ns, struct mlist *l, struct msgw *w)
{
	struct msgw *prev = w_at(ns, w->prev), *next = w_at(ns, w->next);

	if (prev)
		J_SET(ns, prev->next, w->next);
	else if (l->first == ns_off(ns, w))
		J_SET(ns, l->first, w->next);
	if (next)
		J_SET(ns, next->prev, w->prev);
	else if (l->last == ns_off(ns, w))
		J_SET(ns, l->last, w->prev);
	J_SET(ns, w->next, (uoff_t)0);
	J_SET(ns, w->prev, (uoff_t)0);
}

static bool wl_contains(struct ns *ns, struct mlist *l, struct msgw *w)
{
	uoff_t wo = ns_off(ns, w), o = l->first;
	int guard = 0;

	while (o && guard++ < 1 << 24) {
		struct msgw *x;

		if (o == wo)
			return true;
		x = w_at(ns, o);
		if (!x)
			break;
		o = x->next;
	}
	return false;
}

/* a sleeper that died must not be handed anything */
static bool w_alive(struct ns *ns, struct msgw *w)
{
	struct uthread *t;

	if (w->thread >= MAX_THREADS)
		return false;
	t = ns_ptr(ns, ns->hdr->threads + (uoff_t)w->thread * sizeof(*t), sizeof(*t));
	return t && atomic_load(&t->state) == w->tword && thread_alive(ns, t);
}

static struct msgw *new_waiter(struct ns *ns, struct msg_queue *q)
{
	struct uthread *t = cur_thread(ns);
	uoff_t off;
	struct msgw *w;

	if (!t)
		return NULL;
	if (q->wfree) {
		/* the queue's spare entry: unreachable once taken off */
		off = q->wfree;
		J_SET(ns, q->wfree, (uoff_t)0);
	} else {
		off = arena_alloc(ns, sizeof(struct msgw), POOL_GENERAL);
	}
	w = w_at(ns, off);
	if (!w)
		return NULL;
	/* fresh or spare block, not linked: plain stores (a late FUTEX_WAKE
	 * from a waker of its previous sleeper is spurious and harmless) */
	w->next = w->prev = 0;
	w->msg = 0;
	w->since = mono_ns();
	w->thread = (uint32_t)(((char *)t - (ns->base + ns->hdr->threads)) / sizeof(*t));
	w->tword = atomic_load(&t->state);
	w->pid = cur_pid();
	atomic_store(&w->status, MW_WAITING);
	atomic_store(&w->sleeping, 0);
	return w;
}

/* ---- wakeups, issued after the release ---- */

struct wake_q {
	int n;
	uoff_t w[64];
};

static void wake_q_add(struct wake_q *wq, struct ns *ns, struct msgw *w)
{
	if (wq->n < 64)
		wq->w[wq->n++] = ns_off(ns, w);
	/* overflow: those sleepers notice at the end of their time slice */
}

static void wake_up_q(struct ns *ns, struct wake_q *wq)
{
	if (!wq->n)
		return;
	atomic_thread_fence(memory_order_seq_cst);
	for (int i = 0; i < wq->n; i++) {
		struct msgw *w = w_at(ns, wq->w[i]);

		/* w may be gone already: a spurious wake is harmless */
		if (w && atomic_load(&w->sleeping))
			syscall(SYS_futex, (int *)&w->status, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	}
}

/* done with W (queue lock held): keep it as the queue's spare or free it */
static void put_waiter(struct ns *ns, struct msg_queue *q, struct msgw *w, bool valid)
{
	if (valid && !q->wfree)
		J_SET(ns, q->wfree, ns_off(ns, w));
	else
		arena_free(ns, ns_off(ns, w));
}

static void w_complete(struct ns *ns, struct msgw *w, int status, struct wake_q *wq)
{
	J_SET(ns, *(int32_t *)&w->status, status);
	wake_q_add(wq, ns, w);
}

static bool w_waiting(const void *a, uint64_t b)
{
	const struct msgw *w = a;

	(void)b;
	return atomic_load_explicit(&w->status, memory_order_acquire) == MW_WAITING;
}

/*
 * Wait until W's status changes (0), a signal handler ran (-EINTR), or a
 * time slice ends (0 too: the caller rechecks under the lock anyway).
 */
static int msg_wait(struct msgw *w)
{
	struct timespec rel = { 1, 0 };
	unsigned g = uipc_cont_gen();
	int r;

	if (spin_while(w_waiting, w, 0))
		return 0;
	atomic_store(&w->sleeping, 1);
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load(&w->status) != MW_WAITING)
		return 0;
	r = (int)syscall(SYS_futex, (int *)&w->status, FUTEX_WAIT, MW_WAITING, &rel, NULL, 0);
	/* a stop and continue restarts msgsnd/msgrcv in the kernel
	 * (ERESTARTNOHAND): only a handler of the program interrupts */
	if (r < 0 && errno == EINTR && uipc_cont_gen() == g)
		return -EINTR;
	return 0;
}

/* ---- message blocks ---- */

static struct msgm *msg_get_block(struct ns *ns, struct msg_queue *q, uint64_t sz)
{
	struct msgm *m = m_at(ns, q->freelist);
	uoff_t off;

	if (m && m->cap >= sz) {
		J_SET(ns, q->freelist, m->next);
		J_SET(ns, q->nfree, q->nfree - m->cap);
		J_SET(ns, m->next, (uoff_t)0);
		return m;
	}
	off = arena_alloc(ns, sizeof(struct msgm) + sz, POOL_GENERAL);
	if (!off)
		return NULL;
	m = ns_ptr(ns, off, sizeof(*m));
	/* fresh (its allocation rolls back with the section): plain stores */
	m->cap = (uint32_t)sz;
	m->size = 0;
	m->next = 0;
	return m;
}

static void msg_put_block(struct ns *ns, struct msg_queue *q, struct msgm *m)
{
	if (q->nfree + m->cap <= FREE_MAX_BYTES && m->cap <= FREE_MAX_CAP) {
		J_SET(ns, m->next, q->freelist);
		J_SET(ns, q->freelist, ns_off(ns, m));
		J_SET(ns, q->nfree, q->nfree + m->cap);
	} else {
		arena_free(ns, ns_off(ns, m));
	}
}

/* fill a block taken by msg_get_block: the text is not journaled (the block
 * is unreachable until linked, or free again after a rollback) */
static void msg_fill(struct msgm *m, long mtype, const void *text, uint64_t sz)
{
	m->mtype = mtype;
	m->size = (uint32_t)sz;
	memcpy(m->text, text, sz);
}

/* free every message, cached block and spare waiter of Q (its section) */
static void free_messages(struct ns *ns, struct msg_queue *q)
{
	int guard = 0;

	for (int k = 0; k < 2; k++) {
		uoff_t o = k ? q->freelist : q->messages.first;

		while (o && guard++ < 1 << 24) {
			struct msgm *m = m_at(ns, o);

			if (!m)
				break;
			arena_free(ns, o);
			o = m->next;
		}
	}
	if (q->wfree && w_at(ns, q->wfree))
		arena_free(ns, q->wfree);
	J_SET(ns, q->wfree, (uoff_t)0);
	J_SET(ns, q->messages, ((struct mlist){ 0, 0 }));
	J_SET(ns, q->freelist, (uoff_t)0);
	J_SET(ns, q->nfree, (uint64_t)0);
}

/* ---- matching ---- */

static int convert_mode(long *msgtyp, int msgflg)
{
	if (msgflg & MSG_COPY)
		return SEARCH_NUMBER;
	if (*msgtyp == 0)
		return SEARCH_ANY;
	if (*msgtyp < 0) {
		*msgtyp = *msgtyp == LONG_MIN ? LONG_MAX : -*msgtyp;
		return SEARCH_LESSEQUAL;
	}
	if (msgflg & MSG_EXCEPT)
		return SEARCH_NOTEQUAL;
	return SEARCH_EQUAL;
}

static bool testmsg(long mtype, long type, int mode)
{
	switch (mode) {
	case SEARCH_ANY:
	case SEARCH_NUMBER:
		return true;
	case SEARCH_LESSEQUAL:
		return mtype <= type;
	case SEARCH_EQUAL:
		return mtype == type;
	case SEARCH_NOTEQUAL:
		return mtype != type;
	}
	return false;
}

/* the message a receiver takes, and the link that points at it */
static struct msgm *find_msg(struct ns *ns, struct msg_queue *q, long msgtyp, int mode,
			     uoff_t *prev_out)
{
	struct msgm *found = NULL;
	uoff_t o = q->messages.first, prev = 0, fprev = 0;
	long count = 0;
	int guard = 0;

	while (o && guard++ < 1 << 24) {
		struct msgm *m = m_at(ns, o);

		if (!m)
			break;
		if (testmsg(m->mtype, msgtyp, mode)) {
			if (mode == SEARCH_LESSEQUAL && m->mtype != 1) {
				msgtyp = m->mtype - 1;
				found = m;
				fprev = prev;
			} else if (mode == SEARCH_NUMBER) {
				if (msgtyp == count) {
					*prev_out = prev;
					return m;
				}
			} else {
				*prev_out = prev;
				return m;
			}
			count++;
		}
		prev = o;
		o = m->next;
	}
	*prev_out = fprev;
	return found;
}

static void unlink_msg(struct ns *ns, struct msg_queue *q, struct msgm *m, uoff_t prev)
{
	struct msgm *p = m_at(ns, prev);

	if (p)
		J_SET(ns, p->next, m->next);
	else
		J_SET(ns, q->messages.first, m->next);
	if (q->messages.last == ns_off(ns, m))
		J_SET(ns, q->messages.last, prev);
}

/* ---- waking senders and receivers ---- */

/* the kernel's ss_wakeup: senders whose message now fits retry; the others
 * move to the tail in order; KILL: all fail with EIDRM */
static void ss_wakeup(struct ns *ns, struct msg_queue *q, struct wake_q *wq, bool kill)
{
	uoff_t o = q->senders.first, stop = 0;
	int guard = 0;

	while (o && guard++ < 1 << 20) {
		struct msgw *w = w_at(ns, o);

		if (!w) {
			ns_corrupt(ns, "message queue senders");
			J_SET(ns, q->senders, ((struct mlist){ 0, 0 }));
			return;
		}
		o = w->next;
		if (kill) {
			wl_del(ns, &q->senders, w);
			if (w_alive(ns, w))
				w_complete(ns, w, -EIDRM, wq);
			else
				arena_free(ns, ns_off(ns, w));
			continue;
		}
		if (ns_off(ns, w) == stop)
			break;
		if (!w_alive(ns, w)) {
			wl_del(ns, &q->senders, w);
			arena_free(ns, ns_off(ns, w));
			continue;
		}
		if (!msg_fits(q, w->msgsz)) {
			if (!stop)
				stop = ns_off(ns, w);
			if (q->senders.last != ns_off(ns, w)) {
				wl_del(ns, &q->senders, w);
				wl_add_tail(ns, &q->senders, w);
			}
			continue;
		}
		if (atomic_load(&w->status) == MW_WAITING)
			w_complete(ns, w, 0, wq);
	}
}

/* every waiting receiver gets RES (EIDRM at removal, EAGAIN: retry) */
static void expunge_all(struct ns *ns, struct msg_queue *q, int res, struct wake_q *wq)
{
	int guard = 0;

	while (q->receivers.first && guard++ < 1 << 20) {
		struct msgw *w = w_at(ns, q->receivers.first);

		if (!w) {
			ns_corrupt(ns, "message queue receivers");
			J_SET(ns, q->receivers, ((struct mlist){ 0, 0 }));
			return;
		}
		wl_del(ns, &q->receivers, w);
		if (w_alive(ns, w))
			w_complete(ns, w, res, wq);
		else
			arena_free(ns, ns_off(ns, w));
	}
}

/* ---- msgget ---- */

static void msq_init_fields(struct ns *ns, struct msg_queue *q, key_t key, int msgflg,
			    bool journal)
{
	struct msg_queue n;

	memset(&n, 0, sizeof(n));
	n.perm.key = (int32_t)key;
	n.perm.mode = (uint32_t)(msgflg & 0777);
	n.perm.id = -1;
	n.perm.type = IPC_MSG_IDS;
	n.ctime = ipc_now();
	n.qbytes = (uint64_t)ns->hdr->lim.msgmnb;
#define MSQ_FIELD(f) do {						\
		if (journal)						\
			J_SET(ns, q->f, n.f);				\
		else							\
			q->f = n.f;					\
	} while (0)
	MSQ_FIELD(perm.key);
	MSQ_FIELD(perm.mode);
	MSQ_FIELD(perm.type);
	MSQ_FIELD(perm.id);
	MSQ_FIELD(stime);
	MSQ_FIELD(rtime);
	MSQ_FIELD(ctime);
	MSQ_FIELD(cbytes);
	MSQ_FIELD(qnum);
	MSQ_FIELD(qbytes);
	MSQ_FIELD(lspid);
	MSQ_FIELD(lrpid);
	MSQ_FIELD(messages);
	MSQ_FIELD(receivers);
	MSQ_FIELD(senders);
	MSQ_FIELD(freelist);
	MSQ_FIELD(nfree);
	MSQ_FIELD(retired_next);
	MSQ_FIELD(nsent);
	MSQ_FIELD(wfree);
#undef MSQ_FIELD
	if (journal)
		J_SET(ns, *(uint32_t *)&q->perm.deleted, 0u);
	else
		atomic_store(&q->perm.deleted, 0u);
}

static int newque(struct ns *ns, key_t key, int msgflg, long arg)
{
	struct uipc_hdr *h = ns->hdr;
	int limit = h->lim.msgmni < ns->ipcmni ? (int)h->lim.msgmni : ns->ipcmni;
	struct msg_queue *q;
	uoff_t off;
	int id, r;

	(void)arg;
	if (h->ids[IPC_MSG_IDS].in_use >= limit)
		return -ENOSPC;
	off = MSG_RETIRED(ns);
	q = off ? ns_ptr(ns, off, sizeof(*q)) : NULL;
	if (q) {
		/*
		 * A retired queue: stale callers may still take its lock, so
		 * it is rebuilt under it.  Every store is journaled in the ids
		 * frame: if we die, the whole creation is rolled back and the
		 * queue is retired again, as it was.
		 */
		struct jframe *prev;

		r = msq_lock(ns, q);
		if (r)
			return r;
		prev = j_target(ns, &h->ids[IPC_MSG_IDS].lock);
		J_SET(ns, MSG_RETIRED(ns), q->retired_next);
		/* messages a crash left on it (see msgctl_down) */
		free_messages(ns, q);
		msq_init_fields(ns, q, key, msgflg, true);
		j_target_restore(prev);
		msq_unlock(ns, q);
	} else {
		/* ALLOC is journaled in the ids frame: a failure or crash frees it */
		off = arena_alloc(ns, sizeof(*q), POOL_GENERAL);
		q = off ? ns_ptr(ns, off, sizeof(*q)) : NULL;
		if (!q)
			return -ENOMEM;
		/* fresh and invisible: plain stores */
		ulock_init(&q->lock);
		msq_init_fields(ns, q, key, msgflg, false);
	}
	id = ipc_addid(ns, IPC_MSG_IDS, &q->perm, limit);
	return id;
}

int uipc_msgget(key_t key, int msgflg)
{
	static const struct ipc_ops ops = { newque, NULL };
	struct ns *ns = ns_get();

	if (!ns)
		return -1;
	return (int)set_errno_ret(ipcget(ns, IPC_MSG_IDS, key, msgflg, 0, &ops));
}

/* ---- msgsnd ---- */

/*
 * Is the sleeper stopped (SIGSTOP, SIGTSTP, ...)?  The kernel's receiver
 * leaves the queue when a stop signal wakes it, and msgrcv restarts after
 * the continue; a stopped process cannot do that here, so a sender does it
 * for it (-EAGAIN: it looks again when it runs).  Read from /proc, only for
 * sleepers older than STOP_CHECK_AFTER_NS (a stop lasts longer than that).
 */
#define STOP_CHECK_AFTER_NS 10000000LL

static bool w_stopped(struct msgw *w)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	if (mono_ns() - w->since < STOP_CHECK_AFTER_NS)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", w->pid, SLOT_ID(w->tword));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
}

/*
 * The kernel's pipelined_send: hand MSG's content to the first waiting
 * receiver it matches.  Returns 1 if handed, 0 if not, -ENOMEM.
 */
static int pipelined_send(struct ns *ns, struct msg_queue *q, long mtype, const void *text,
			  uint64_t sz, struct wake_q *wq)
{
	uoff_t o = q->receivers.first;
	int guard = 0;

	while (o && guard++ < 1 << 20) {
		struct msgw *w = w_at(ns, o);
		struct msgm *m;

		if (!w)
			break;
		o = w->next;
		if (!testmsg(mtype, w->msgtype, w->mode))
			continue;
		if (!w_alive(ns, w)) {
			wl_del(ns, &q->receivers, w);
			arena_free(ns, ns_off(ns, w));
			continue;
		}
		wl_del(ns, &q->receivers, w);
		if (w_stopped(w)) {
			w_complete(ns, w, -EAGAIN, wq);
			continue;
		}
		if (w->maxsize < 0 || (uint64_t)w->maxsize < sz) {
			w_complete(ns, w, -E2BIG, wq);
			continue;
		}
		m = msg_get_block(ns, q, sz);
		if (!m)
			return -ENOMEM;
		msg_fill(m, mtype, text, sz);
		J_SET(ns, w->msg, ns_off(ns, m));
		J_SET(ns, q->lrpid, w->pid);
		J_SET(ns, q->rtime, ipc_now());
		w_complete(ns, w, 0, wq);
		return 1;
	}
	return 0;
}

static int do_msgsnd(struct ns *ns, int msqid, long mtype, const void *text, size_t msgsz,
		     int msgflg)
{
	struct msg_queue *q;
	struct wake_q wq = { 0 };
	struct msgw *w = NULL;
	bool spun = false;
	int err = 0, r;

	q = msq_obtain_check(ns, msqid, &err);
	if (!q)
		return err;
	for (;;) {
		if (ipcperms(&q->perm, 0222))
			return -EACCES;
		r = msq_lock(ns, q);
		if (r)
			return r;
		if (!msq_valid(q, msqid)) {
			msq_unlock(ns, q);
			return -EIDRM;
		}
		if (msg_fits(q, msgsz))
			break;
		if (msgflg & IPC_NOWAIT) {
			msq_unlock(ns, q);
			return -EAGAIN;
		}
		if (!spun) {
			/* a receiver on another CPU may make room in a moment */
			spun = true;
			msq_unlock(ns, q);
			if (spin_while(no_room, q, msgsz))
				room_hysteresis(q, msgsz);
			continue;
		}
		w = new_waiter(ns, q);
		if (!w) {
			j_abort(ns);
			msq_unlock(ns, q);
			return -ENOMEM;
		}
		w->msgsz = msgsz;
		wl_add_tail(ns, &q->senders, w);
		for (;;) {
			int st;

			msq_unlock(ns, q);
			r = msg_wait(w);
			err = msq_lock(ns, q);
			if (err)
				return err; /* only with a corrupt arena */
			st = atomic_load(&w->status);
			if (st == -EIDRM || !msq_valid(q, msqid)) {
				if (wl_contains(ns, &q->senders, w))
					wl_del(ns, &q->senders, w);
				arena_free(ns, ns_off(ns, w));
				msq_unlock(ns, q);
				return -EIDRM;
			}
			if (st != MW_WAITING || r == -EINTR)
				break;
		}
		/* the kernel's ss_del: woken or interrupted, off the list */
		if (wl_contains(ns, &q->senders, w))
			wl_del(ns, &q->senders, w);
		put_waiter(ns, q, w, true);
		w = NULL;
		if (r == -EINTR) {
			msq_unlock(ns, q);
			return -EINTR;
		}
		msq_unlock(ns, q);
	}
	if (q->lspid != cur_pid())
		J_SET(ns, q->lspid, cur_pid());
	J_SET(ns, q->nsent, q->nsent + 1);
	{
		int64_t now = ipc_now();

		if (q->stime != now)
			J_SET(ns, q->stime, now);
	}
	r = q->receivers.first ? pipelined_send(ns, q, mtype, text, msgsz, &wq) : 0;
	if (r == 0) {
		struct msgm *m = msg_get_block(ns, q, msgsz);
		struct msgm *last;

		if (!m) {
			r = -ENOMEM;
		} else {
			msg_fill(m, mtype, text, msgsz);
			last = m_at(ns, q->messages.last);
			if (last)
				J_SET(ns, last->next, ns_off(ns, m));
			else
				J_SET(ns, q->messages.first, ns_off(ns, m));
			J_SET(ns, q->messages.last, ns_off(ns, m));
			J_SET(ns, q->cbytes, q->cbytes + msgsz);
			J_SET(ns, q->qnum, q->qnum + 1);
		}
	}
	if (r < 0) {
		j_abort(ns);
		msq_unlock(ns, q);
		return r;
	}
	msq_unlock(ns, q);
	wake_up_q(ns, &wq);
	return 0;
}

int uipc_msgsnd(int msqid, const void *msgp, size_t msgsz, int msgflg)
{
	struct ns *ns;
	char small[512], *text = small;
	long mtype;
	int r;

	if (uipc_copy_from_user(&mtype, msgp, sizeof(mtype)))
		return (int)set_errno_ret(-EFAULT);
	ns = ns_get();
	if (!ns)
		return -1;
	if (msgsz > (size_t)ns->hdr->lim.msgmax || (long)msgsz < 0 || msqid < 0)
		return (int)set_errno_ret(-EINVAL);
	if (mtype < 1)
		return (int)set_errno_ret(-EINVAL);
	if (msgsz > sizeof(small)) {
		text = malloc(msgsz);
		if (!text)
			return (int)set_errno_ret(-ENOMEM);
	}
	if (uipc_copy_from_user(text, (const char *)msgp + sizeof(long), msgsz))
		r = -EFAULT;
	else
		r = do_msgsnd(ns, msqid, mtype, text, msgsz, msgflg);
	if (text != small)
		free(text);
	return (int)set_errno_ret(r);
}

/* ---- msgrcv ---- */

/* copy M out to the caller's buffer: mtype first, then min(bufsz, size) */
static long msg_fill_user(void *buf, struct msgm *m, size_t bufsz)
{
	size_t n = m->size < bufsz ? m->size : bufsz;
	long mtype = m->mtype;

	if (uipc_copy_to_user(buf, &mtype, sizeof(mtype)))
		return -EFAULT;
	if (n && uipc_copy_to_user((char *)buf + sizeof(long), m->text, n))
		return -EFAULT;
	return (long)n;
}

static long do_msgrcv(struct ns *ns, int msqid, void *buf, size_t bufsz, long msgtyp,
		      int msgflg)
{
	struct msg_queue *q;
	struct wake_q wq = { 0 };
	uint64_t copy_max = 0;
	bool spun = false;
	int err = 0, mode, r;
	long ret;

	if (msqid < 0 || (long)bufsz < 0)
		return -EINVAL;
	if (msgflg & MSG_COPY) {
		uint64_t lim = (uint64_t)ns->hdr->lim.msgmax;
		char probe[256];

		if ((msgflg & MSG_EXCEPT) || !(msgflg & IPC_NOWAIT))
			return -EINVAL;
		copy_max = bufsz < lim ? bufsz : lim;
		/* the kernel reads the buffer first (it loads a message from it) */
		for (uint64_t done = 0; done < copy_max; done += sizeof(probe)) {
			uint64_t n = copy_max - done < sizeof(probe) ? copy_max - done : sizeof(probe);

			if (uipc_copy_from_user(probe, (char *)buf + done, n))
				return -EFAULT;
		}
	}
	mode = convert_mode(&msgtyp, msgflg);
	q = msq_obtain_check(ns, msqid, &err);
	if (!q)
		return err;
	for (;;) {
		struct msgm *m;
		struct msgw *w;
		uoff_t prev;
		int st;

		if (ipcperms(&q->perm, 0444))
			return -EACCES;
		r = msq_lock(ns, q);
		if (r)
			return r;
		if (!msq_valid(q, msqid)) {
			msq_unlock(ns, q);
			return -EIDRM;
		}
		m = q->messages.first ? find_msg(ns, q, msgtyp, mode, &prev) : NULL;
		if (m) {
			if (bufsz < m->size && !(msgflg & MSG_NOERROR)) {
				msq_unlock(ns, q);
				return -E2BIG;
			}
			if (msgflg & MSG_COPY) {
				ret = m->size > copy_max ? -EINVAL : msg_fill_user(buf, m, bufsz);
				msq_unlock(ns, q);
				return ret;
			}
			unlink_msg(ns, q, m, prev);
			J_SET(ns, q->qnum, q->qnum - 1);
			{
				int64_t now = ipc_now();

				if (q->rtime != now)
					J_SET(ns, q->rtime, now);
			}
			if (q->lrpid != cur_pid())
				J_SET(ns, q->lrpid, cur_pid());
			J_SET(ns, q->cbytes, q->cbytes - m->size);
			if (q->senders.first)
				ss_wakeup(ns, q, &wq, false);
			/* the message is gone from the queue even if the copy faults */
			ret = msg_fill_user(buf, m, bufsz);
			msg_put_block(ns, q, m);
			msq_unlock(ns, q);
			wake_up_q(ns, &wq);
			return ret;
		}
		if (msgflg & IPC_NOWAIT) {
			msq_unlock(ns, q);
			return -ENOMSG;
		}
		if (!spun) {
			/* a sender on another CPU may bring one in a moment */
			uint64_t n0 = q->nsent;

			spun = true;
			msq_unlock(ns, q);
			spin_while(nsent_is, q, n0);
			continue;
		}
		w = new_waiter(ns, q);
		if (!w) {
			j_abort(ns);
			msq_unlock(ns, q);
			return -ENOMEM;
		}
		w->msgtype = msgtyp;
		w->mode = mode;
		w->maxsize = (msgflg & MSG_NOERROR) ? INT_MAX : (int64_t)bufsz;
		wl_add_tail(ns, &q->receivers, w);
		for (;;) {
			msq_unlock(ns, q);
			r = msg_wait(w);
			err = msq_lock(ns, q);
			if (err)
				return err; /* only with a corrupt arena */
			st = atomic_load(&w->status);
			if (st != MW_WAITING)
				break;
			if (!msq_valid(q, msqid)) {
				/* removal completes every sleeper, unless it
				 * was rolled back after the table change */
				if (wl_contains(ns, &q->receivers, w))
					wl_del(ns, &q->receivers, w);
				st = -EIDRM;
				break;
			}
			if (r == -EINTR) {
				wl_del(ns, &q->receivers, w);
				st = -EINTR;
				break;
			}
		}
		if (st == 0) {
			/* handed over by a sender: ours, whatever happened since */
			m = m_at(ns, w->msg);
			ret = m ? msg_fill_user(buf, m, bufsz) : -EIDRM;
			if (m && msq_valid(q, msqid))
				msg_put_block(ns, q, m);
			else if (m)
				arena_free(ns, ns_off(ns, m));
			put_waiter(ns, q, w, msq_valid(q, msqid));
			msq_unlock(ns, q);
			return ret;
		}
		put_waiter(ns, q, w, msq_valid(q, msqid));
		msq_unlock(ns, q);
		if (st != -EAGAIN)
			return st;
		/* expunged by IPC_SET: look again, from the tail */
	}
}

ssize_t uipc_msgrcv(int msqid, void *msgp, size_t msgsz, long msgtyp, int msgflg)
{
	struct ns *ns = ns_get();

	if (!ns)
		return -1;
	return set_errno_ret(do_msgrcv(ns, msqid, msgp, msgsz, msgtyp, msgflg));
}

/* ---- msgctl ---- */

static int msgctl_info(struct ns *ns, int cmd, struct msginfo *mi)
{
	struct uipc_hdr *h = ns->hdr;
	int maxidx, r;

	memset(mi, 0, sizeof(*mi));
	mi->msgmni = (int)h->lim.msgmni;
	mi->msgmax = (int)h->lim.msgmax;
	mi->msgmnb = (int)h->lim.msgmnb;
	mi->msgssz = MSGSSZ;
	mi->msgseg = MSGSEG;
	r = ids_lock(ns, IPC_MSG_IDS);
	if (r)
		return r;
	maxidx = ipc_get_maxidx(ns, IPC_MSG_IDS);
	if (cmd == MSG_INFO) {
		uint64_t hdrs = 0, bytes = 0;

		mi->msgpool = h->ids[IPC_MSG_IDS].in_use;
		/* the kernel keeps namespace counters; we add the queues up */
		for (int i = 0; i <= maxidx; i++) {
			struct uperm *p = ipc_obtain(ns, IPC_MSG_IDS, i);

			if (!p || atomic_load(&p->deleted))
				continue;
			hdrs += rd64(&msq_of(p)->qnum);
			bytes += rd64(&msq_of(p)->cbytes);
		}
		mi->msgmap = hdrs > INT_MAX ? INT_MAX : (int)hdrs;
		mi->msgtql = bytes > INT_MAX ? INT_MAX : (int)bytes;
	} else {
		mi->msgmap = MSGMAP;
		mi->msgpool = MSGPOOL;
		mi->msgtql = MSGTQL;
	}
	ids_unlock(ns, IPC_MSG_IDS);
	return maxidx < 0 ? 0 : maxidx;
}

static int msgctl_stat(struct ns *ns, int msqid, int cmd, struct msqid_ds *out)
{
	struct msg_queue *q;
	struct uperm *p;
	int err = 0, r;

	memset(out, 0, sizeof(*out));
	p = ipc_obtain_for_stat(ns, IPC_MSG_IDS, msqid, cmd != IPC_STAT, cmd == MSG_STAT_ANY, &err);
	if (!p)
		return err;
	q = msq_of(p);
	r = msq_lock(ns, q);
	if (r)
		return r;
	if (atomic_load(&q->perm.deleted)) {
		msq_unlock(ns, q);
		return -EIDRM;
	}
	ipc_fill_perm(ns, &q->perm, &out->msg_perm);
	out->msg_stime = q->stime;
	out->msg_rtime = q->rtime;
	out->msg_ctime = q->ctime;
	out->__msg_cbytes = q->cbytes;
	out->msg_qnum = q->qnum;
	out->msg_qbytes = q->qbytes;
	out->msg_lspid = q->lspid;
	out->msg_lrpid = q->lrpid;
	err = cmd == IPC_STAT ? 0 : q->perm.id;
	msq_unlock(ns, q);
	return err;
}

/* freeque: IPC_RMID (ids lock and queue lock held) */
static void freeque(struct ns *ns, struct msg_queue *q, struct wake_q *wq)
{
	struct ipc_ids *ids = &ns->hdr->ids[IPC_MSG_IDS];
	struct jframe *prev;

	expunge_all(ns, q, -EIDRM, wq);
	ss_wakeup(ns, q, wq, true);
	free_messages(ns, q);
	J_SET(ns, q->cbytes, (uint64_t)0);
	J_SET(ns, q->qnum, (uint64_t)0);
	J_SET(ns, *(uint32_t *)&q->perm.deleted, 1u);
	/*
	 * The table changes are the ids lock's: journaled there, committed
	 * first.  If we die before the queue section commits, its rollback
	 * leaves a retired queue that still holds messages and sleepers: the
	 * sleepers find it removed at their next time slice, and newque frees
	 * the messages when it reuses the queue.
	 */
	prev = j_target(ns, &ids->lock);
	ipc_rmid(ns, IPC_MSG_IDS, &q->perm);
	J_SET(ns, q->retired_next, MSG_RETIRED(ns));
	J_SET(ns, MSG_RETIRED(ns), ns_off(ns, q));
	j_target_restore(prev);
}

static int msgctl_down(struct ns *ns, int msqid, int cmd, struct msqid_ds *in)
{
	struct wake_q wq = { 0 };
	struct msg_queue *q;
	int err = 0, r;

	r = ids_lock(ns, IPC_MSG_IDS);
	if (r)
		return r;
	q = msq_obtain_check(ns, msqid, &err);
	if (!q)
		goto out;
	if (!ipc_owner_or_admin(&q->perm)) {
		err = -EPERM;
		goto out;
	}
	if (cmd == IPC_SET && in->msg_qbytes > (msglen_t)ns->hdr->lim.msgmnb &&
	    !has_cap(CAP_SYS_RESOURCE)) {
		err = -EPERM;
		goto out;
	}
	r = msq_lock(ns, q);
	if (r) {
		err = r;
		goto out;
	}
	if (cmd == IPC_RMID) {
		freeque(ns, q, &wq);
		ids_unlock(ns, IPC_MSG_IDS);
		msq_unlock(ns, q);
		wake_up_q(ns, &wq);
		return 0;
	}
	if (in->msg_perm.uid == (uid_t)-1 || in->msg_perm.gid == (gid_t)-1) {
		err = -EINVAL;
	} else {
		ipc_update_perm(ns, &q->perm, &in->msg_perm);
		J_SET(ns, q->qbytes, (uint64_t)in->msg_qbytes);
		J_SET(ns, q->ctime, ipc_now());
		/* receivers may be shut out by the new mode: they look again */
		expunge_all(ns, q, -EAGAIN, &wq);
		/* senders may fit in a larger queue */
		ss_wakeup(ns, q, &wq, false);
	}
	msq_unlock(ns, q);
out:
	ids_unlock(ns, IPC_MSG_IDS);
	wake_up_q(ns, &wq);
	return err;
}

int uipc_msgctl(int msqid, int cmd, struct msqid_ds *buf)
{
	struct ns *ns = ns_get();
	struct msqid_ds ds;
	struct msginfo mi;
	int r;

	if (!ns)
		return -1;
	if (msqid < 0 || cmd < 0)
		return (int)set_errno_ret(-EINVAL);
	switch (cmd) {
	case IPC_INFO:
	case MSG_INFO:
		r = msgctl_info(ns, cmd, &mi);
		if (r >= 0 && uipc_copy_to_user(buf, &mi, sizeof(mi)))
			r = -EFAULT;
		return (int)set_errno_ret(r);
	case IPC_STAT:
	case MSG_STAT:
	case MSG_STAT_ANY:
		r = msgctl_stat(ns, msqid, cmd, &ds);
		if (r >= 0 && uipc_copy_to_user(buf, &ds, sizeof(ds)))
			r = -EFAULT;
		return (int)set_errno_ret(r);
	case IPC_SET:
		if (uipc_copy_from_user(&ds, buf, sizeof(ds)))
			return (int)set_errno_ret(-EFAULT);
		return (int)set_errno_ret(msgctl_down(ns, msqid, cmd, &ds));
	case IPC_RMID:
		return (int)set_errno_ret(msgctl_down(ns, msqid, cmd, NULL));
	default:
		return (int)set_errno_ret(-EINVAL);
	}
}

/* ---- fsck: the invariants of one queue (uipc_ns_check) ---- */

#define MSG_PROBLEM(...) do {                                                       \
		bad++;                                                              \
		if (report && *used < len)                                          \
			*used += (size_t)snprintf(report + *used, len - *used, __VA_ARGS__); \
	} while (0)

/* a sender or receiver list: links both ways, entries inside the arena */
static int msg_check_waiters(struct ns *ns, struct msg_queue *q, struct mlist *l, const char *what,
			     char *report, size_t len, size_t *used)
{
	uoff_t o = l->first, prev = 0;
	int bad = 0, guard = 0;

	while (o) {
		struct msgw *w = w_at(ns, o);

		if (!w) {
			MSG_PROBLEM("msg %d: %s list leads outside the arena (%llu)\n", q->perm.id, what,
				    (unsigned long long)o);
			return bad;
		}
		if (++guard > 1 << 20) {
			MSG_PROBLEM("msg %d: %s list loops\n", q->perm.id, what);
			return bad;
		}
		if (w->prev != prev)
			MSG_PROBLEM("msg %d: %s list: back link of %llu is %llu, not %llu\n", q->perm.id,
				    what, (unsigned long long)o, (unsigned long long)w->prev,
				    (unsigned long long)prev);
		prev = o;
		o = w->next;
	}
	if (l->last != prev)
		MSG_PROBLEM("msg %d: %s list ends at %llu, its tail says %llu\n", q->perm.id, what,
			    (unsigned long long)prev, (unsigned long long)l->last);
	return bad;
}

/*
 * With the queue locked: qnum and cbytes equal the count and the sum of the
 * sizes over the message list, every message block (and every block of the
 * free list) lies inside the arena and holds its size, the list's tail is
 * its last message, the sender and receiver lists are well formed.
 * Relies on: msg_queue.{perm, lock, qnum, cbytes, messages, receivers,
 * senders, freelist, nfree}, msgm.{next, size, cap}, msgw.{next, prev}.
 */
int msg_check_obj(struct ns *ns, struct uperm *perm, char *report, size_t len, size_t *used)
{
	struct msg_queue *q = msq_of(perm);
	uint64_t n = 0, bytes = 0, freebytes = 0;
	uoff_t o, prev = 0;
	int bad = 0, guard = 0, id = perm->id;

	if (!ns_ptr(ns, ns_off(ns, q), sizeof(*q))) {
		MSG_PROBLEM("msg %d: the queue is not inside the arena\n", id);
		return bad;
	}
	if (msq_lock(ns, q)) {
		MSG_PROBLEM("msg %d: cannot lock the queue\n", id);
		return bad;
	}
	if (!msq_valid(q, id)) {
		msq_unlock(ns, q);
		return 0;       /* removed meanwhile */
	}
	for (o = q->messages.first; o;) {
		struct msgm *m = m_at(ns, o);

		if (!m) {
			MSG_PROBLEM("msg %d: message %llu is not inside the arena (or larger than its block)\n",
				    id, (unsigned long long)o);
			break;
		}
		if (++guard > 1 << 24) {
			MSG_PROBLEM("msg %d: the message list loops\n", id);
			break;
		}
		n++;
		bytes += m->size;
		prev = o;
		o = m->next;
	}
	if (!o && q->messages.last != prev)
		MSG_PROBLEM("msg %d: the message list ends at %llu, its tail says %llu\n", id,
			    (unsigned long long)prev, (unsigned long long)q->messages.last);
	if (!o && (n != q->qnum || bytes != q->cbytes))
		MSG_PROBLEM("msg %d: %llu messages of %llu bytes, but qnum %llu and cbytes %llu\n", id,
			    (unsigned long long)n, (unsigned long long)bytes,
			    (unsigned long long)q->qnum, (unsigned long long)q->cbytes);
	for (o = q->freelist, guard = 0; o;) {
		struct msgm *m = m_at(ns, o);

		if (!m || ++guard > 1 << 20) {
			MSG_PROBLEM("msg %d: the free list of message blocks is broken at %llu\n", id,
				    (unsigned long long)o);
			break;
		}
		freebytes += m->cap;
		o = m->next;
	}
	if (!o && freebytes != q->nfree)
		MSG_PROBLEM("msg %d: %llu bytes of free blocks, nfree says %llu\n", id,
			    (unsigned long long)freebytes, (unsigned long long)q->nfree);
	bad += msg_check_waiters(ns, q, &q->receivers, "receiver", report, len, used);
	bad += msg_check_waiters(ns, q, &q->senders, "sender", report, len, used);
	msq_unlock(ns, q);
	return bad;
}
