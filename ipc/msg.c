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

#include "ipc/ipc.h"
#include "ipc/msgring.h"

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
	/* the fast path (msgring.c); kept for the life of the queue struct,
	 * retired or not, because fast callers read it without the lock */
	uoff_t ring;               /* the ring, once published (post-commit) */
	uoff_t ring_alloc;         /* the ring's block, journaled */
	uint32_t lspid_tn;         /* ring tail count when lspid/stime were current */
	uint32_t lrpid_hn;         /* ring head count when lrpid/rtime were current */
	uint32_t refill;           /* 1: a sleeper came since the list last went
				      back into the ring (msq_list_to_ring) */
	uint32_t pad;
	uint64_t incarnation;      /* bumped when an IPC_RMID's ids section
				      commits, only then (the queue
				      section's j_guard) */
};

_Static_assert(sizeof(struct msg_queue) == MSG_OBJ_SIZE, "update MSG_OBJ_SIZE in ipc/ipc.h");

/* ---- helpers ---- */

/* the longest lists a walk follows (with walk_loops, ipc.h): a queue's
 * sleepers are threads of the namespace; its messages, more than any queue
 * holds in practice (qbytes bounds them, and a queue that held this many
 * would take 200 MiB of arena): longer means a corrupt arena */
#define MSGW_WALK_MAX (MAX_THREADS * 2)
#define MSGM_WALK_MAX (1 << 22)


/*
 * Message block OFF, if its header and the text it says it holds are
 * inside the mapping.  Its size may be rewritten by another member after
 * this: whoever reads the text uses msg_len, never m->size again.
 */
static struct msgm *m_at(struct ns *ns, uoff_t off)
{
	struct msgm *m = off ? ns_ptr_aligned(ns, off, sizeof(struct msgm)) : NULL;
	uint32_t size, cap;

	if (!m)
		return NULL;
	size = __atomic_load_n(&m->size, __ATOMIC_RELAXED);
	cap = __atomic_load_n(&m->cap, __ATOMIC_RELAXED);
	if (size > cap || !ns_ptr(ns, off, sizeof(*m) + cap))
		return NULL;
	return m;
}

/* M's text length, read once and checked against the mapping (a size
 * rewritten since m_at); -1 if it is not inside */
static int64_t msg_len(struct ns *ns, struct msgm *m)
{
	uint32_t size = __atomic_load_n(&m->size, __ATOMIC_RELAXED);

	return ns_ptr(ns, ns_off(ns, m), sizeof(*m) + (uint64_t)size) ? (int64_t)size : -1;
}

static struct msgw *w_at(struct ns *ns, uoff_t off)
{
	return off ? ns_ptr_aligned(ns, off, sizeof(struct msgw)) : NULL;
}

static struct msg_queue *msq_of(struct uperm *p)
{
	return (struct msg_queue *)p;
}

/* the queue of ID, checked as a whole against its block: NULL with *ERR
 * -EINVAL for no such id, -EIDRM for one the arena says is not a queue */
/* (a queue is all fixed part: ipc_obj_at found it whole inside the
 * mapping, MSG_OBJ_SIZE being its size; its block is checked where it is
 * reused, newque, and by fsck) */
static inline struct msg_queue *msq_obtain_check(struct ns *ns, int id, int *err)
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

/* what a spinning caller watches */
struct spin_on {
	struct ns *ns;
	struct msg_queue *q;
	struct msgring *r;         /* the queue's ring, if any */
	uint64_t sz;               /* a sender: its message size */
	uint64_t nsent, tail;      /* a receiver: what it saw last */
	struct msgw *w;            /* a sleeper: its entry */
	unsigned hand0;            /* the program's handlers run when the call began */
	unsigned pauses;           /* pauses between looks, less one */
};

/*
 * A receiver waiting for the ring's next message looks at the tail only
 * every RECV_POLL_PAUSES pauses (about 0.5 us here): looking more often, it
 * took the tail's line from the sender between every two of its publishes,
 * and each publish (a compare-and-swap) waited for the line to come back;
 * a stream whose receiver kept up with its sender ran at half the speed of
 * one whose sender kept the queue full.  msg-stream between two CPUs,
 * medians of 7 alternating with the kernel: looking at every pause 7.5 M
 * msg/s, every 8 pauses 6.4-9.1 M (as low as 4.1 M in single runs), every
 * 32 8.8-10.7 M (no run under 7.7 M), every 64 9.5 M.  It delays the first
 * message after a wait by half that on average (msg-pingpong's round
 * trips show no loss beside its noise).
 */
#define RECV_POLL_PAUSES 32

/*
 * Spin while STILL(on) holds, for at most this thread's budget (ipc.h's
 * struct spin_budget; read with the vDSO clock: no system call): 1 if it
 * stopped holding, 0 if the budget ran out, -EINTR if a handler of the
 * program ran since the call began (the kernel's caller would not sleep
 * with a signal pending, or would be woken).
 */
static __thread struct spin_budget msg_spin = { .ns = WAIT_SPIN_NS, .max = WAIT_SPIN_NS };

static int spin_while(bool (*still)(const struct spin_on *), const struct spin_on *on)
{
	int64_t until = 0, budget;

	if (uipc_handler_gen() != on->hand0)
		return -EINTR;
	budget = spin_budget_take(&msg_spin);
	if (!budget)
		return !still(on);
	for (unsigned i = 0;; i++) {
		if (!still(on)) {
			spin_budget_paid(&msg_spin, until != 0);
			return 1;
		}
		for (unsigned k = 0; k <= on->pauses; k++)
			cpu_relax();
		if ((i & 31) == 31) {
			int64_t now = mono_ns();

			if (uipc_handler_gen() != on->hand0)
				return -EINTR;
			if (!until) {
				until = now + budget;
			} else if (now > until) {
				spin_budget_wasted(&msg_spin);
				return 0;
			}
		}
	}
}

static int msq_lock(struct ns *ns, struct msg_queue *q)
{
	/* a short wait for a holder on another CPU beats a futex sleep */
	for (int i = 0; i < LOCK_SPIN && !ulock_is_free(&q->lock); i++)
		cpu_relax();
	return ulock_acquire(ns, &q->lock);
}

/*
 * The lock back after a sleep, our waiter still queued: not bounded by the
 * call's interruption (lockwait_suspend), since leaving it queued would let
 * a sender hand a message to a receiver that has gone.
 */
static int msq_relock(struct ns *ns, struct msg_queue *q)
{
	int r;

	lockwait_suspend();
	r = msq_lock(ns, q);
	lockwait_resume();
	return r;
}

static void msq_ring_restart(struct ns *ns, struct msg_queue *q);

static void msq_unlock(struct ns *ns, struct msg_queue *q)
{
	msq_ring_restart(ns, q);
	ulock_release(ns, &q->lock);
}

static bool msg_fits(struct msg_queue *q, uint64_t sz)
{
	uint64_t qb = rd64(&q->qbytes);

	return rd64(&q->cbytes) + sz <= qb && rd64(&q->qnum) + 1 <= qb;
}

static bool q_gone(const struct msg_queue *q)
{
	return atomic_load_explicit(&q->perm.deleted, memory_order_relaxed);
}

/* a sender waits for room: in the ring while the fast paths are on */
static bool no_room(const struct spin_on *on)
{
	if (q_gone(on->q))
		return false;
	if (on->r && !(ring_load(&on->r->tail) & RW_SLOW))
		return !ring_has_room(on->r, rd64(&on->q->qbytes), (uint32_t)on->sz);
	return !msg_fits(on->q, on->sz);
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

/*
 * The same for a sender of the ring's fast path that found the queue full:
 * once the receiver makes room, let it make room for half the queue before
 * sending again, looking at the head only every few hundred nanoseconds.
 * A sender that looked at the head all the time and sent into each slot as
 * it came free took the head's line from the receiver at each of the
 * receiver's compare-and-swaps: a line transfer per message on both sides
 * (a stream between two CPUs of the 2-CPU VM: 5.6 M msg/s, 7.0 M/s with
 * this).  Only timing, and bounded: HYSTERESIS_NS in all, and no longer
 * than RING_STALL_NS once the receiver stops taking (it may be asleep).
 */
#define RING_STALL_NS 2000
#define RING_POLL_PAUSES 8

static void ring_room_hysteresis(const struct spin_on *on)
{
	uint64_t qb = rd64(&on->q->qbytes), want = qb / 2 > on->sz ? qb / 2 : on->sz;
	uint64_t h0 = ring_load(&on->r->head);
	int64_t start = mono_ns(), moved = start;

	for (unsigned i = 0; !ring_has_room(on->r, qb, (uint32_t)want) && !q_gone(on->q); i++) {
		uint64_t h;

		for (int k = 0; k < RING_POLL_PAUSES; k++)
			cpu_relax();
		h = ring_load(&on->r->head);
		if (h != h0 || (i & 3) == 3) {
			int64_t now = mono_ns();

			if (h != h0) {
				h0 = h;
				moved = now;
			}
			if (now - moved > RING_STALL_NS || now - start > HYSTERESIS_NS)
				return;
		}
	}
}

/* a receiver waits for a new message, locked or in the ring */
static bool nothing_new(const struct spin_on *on)
{
	return rd64(&on->q->nsent) == on->nsent && !q_gone(on->q) &&
	       (!on->r || ring_load(&on->r->tail) == on->tail);
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
	struct walk wk = WALK_INIT;
	int guard = 0;

	while (o && guard++ < MSGW_WALK_MAX && !walk_loops(&wk, o)) {
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
	t = ns_ptr(ns, ns->lay.threads + (uoff_t)w->thread * sizeof(*t), sizeof(*t));
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
	w->thread = (uint32_t)(((char *)t - (ns->base + ns->lay.threads)) / sizeof(*t));
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
			sys_futex_wake(&w->status, INT_MAX);
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

static bool w_waiting(const struct spin_on *on)
{
	return atomic_load_explicit(&on->w->status, memory_order_acquire) == MW_WAITING;
}

/*
 * Wait until W's status changes (0), a signal handler ran (-EINTR), or a
 * time slice ends (0 too: the caller rechecks under the lock anyway).
 */
static int msg_wait(struct msgw *w, unsigned hand0)
{
	struct timespec rel = { 1, 0 };
	struct spin_on on = { .w = w, .hand0 = hand0 };
	unsigned g = uipc_cont_gen();
	int r;

	r = spin_while(w_waiting, &on);
	if (r)
		return r < 0 ? r : 0;
	atomic_store(&w->sleeping, 1);
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load(&w->status) != MW_WAITING)
		return 0;
	{
		uint32_t *word = (uint32_t *)&w->status, val = MW_WAITING;

		/* a handler that ran since the call began, or runs now, ends
		 * the wait at once (EINTR): the kernel would not sleep */
		r = uipc_wait_words(&word, &val, 1, &rel, hand0);
	}
	/* a stop and continue restarts msgsnd/msgrcv in the kernel
	 * (ERESTARTNOHAND): only a handler of the program interrupts */
	if (r < 0 && errno == EINTR && uipc_cont_gen() == g)
		return -EINTR;
	return 0;
}

/* ---- message blocks ---- */

static struct msgm *msg_get_block(struct ns *ns, struct msg_queue *q, uint64_t sz)
{
	uoff_t off = __atomic_load_n(&q->freelist, __ATOMIC_RELAXED);
	struct msgm *m = m_at(ns, off);
	uint32_t cap = m ? __atomic_load_n(&m->cap, __ATOMIC_RELAXED) : 0;

	/* the text we write must fit inside the mapping, whatever cap says now */
	if (m && cap >= sz && ns_ptr(ns, off, sizeof(*m) + sz)) {
		J_SET(ns, q->freelist, m->next);
		J_SET(ns, q->nfree, q->nfree - cap);
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

/* a new message at the tail of Q's list (lock held) */
static int queue_append(struct ns *ns, struct msg_queue *q, long mtype, const void *text,
			uint64_t sz)
{
	struct msgm *m = msg_get_block(ns, q, sz), *last;

	if (!m)
		return -ENOMEM;
	msg_fill(m, mtype, text, sz);
	last = m_at(ns, q->messages.last);
	if (last)
		J_SET(ns, last->next, ns_off(ns, m));
	else
		J_SET(ns, q->messages.first, ns_off(ns, m));
	J_SET(ns, q->messages.last, ns_off(ns, m));
	J_SET(ns, q->cbytes, q->cbytes + sz);
	J_SET(ns, q->qnum, q->qnum + 1);
	return 0;
}

/* free every message, cached block and spare waiter of Q (its section) */
static void free_messages(struct ns *ns, struct msg_queue *q)
{
	int guard = 0;

	for (int k = 0; k < 2; k++) {
		uoff_t o = k ? q->freelist : q->messages.first;
		struct walk wk = WALK_INIT;

		while (o && guard++ < MSGM_WALK_MAX && !walk_loops(&wk, o)) {
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

/* ---- the fast path's ring (msgring.c) ---- */

/*
 * A queue gets a ring once it has carried RING_AFTER messages, if the arena
 * has room to spare: msgmni full queues must still fit, so rings take at
 * most 1/RING_SHARE of the arena (4,096 rings in the default 4 GiB).
 */
#define RING_ALLOC (sizeof(struct msgring) + 64)
#define RING_AFTER 16
#define RING_SHARE 16

static struct msgring *ring_at(struct ns *ns, uoff_t off)
{
	/* cache-line aligned inside its block */
	return off ? ns_ptr(ns, (off + 63) & ~(uoff_t)63, sizeof(struct msgring)) : NULL;
}

static struct msgring *ring_of(struct ns *ns, struct msg_queue *q)
{
	return ring_at(ns, __atomic_load_n(&q->ring, __ATOMIC_ACQUIRE));
}

/* the thread's identity in ring claims (0: none) */
static uint64_t ring_me(struct ns *ns)
{
	struct uthread *t = cur_thread(ns);

	if (!t)
		return 0;
	return ring_owner_id((uint32_t)(((char *)t - (ns->base + ns->lay.threads)) / sizeof(*t)),
			     SLOT_ID(atomic_load(&t->state)));
}

/* queue lock held: allocate the ring (published by msq_ring_restart) */
static void msq_add_ring(struct ns *ns, struct msg_queue *q)
{
	struct alloc_state *a = &ns->hdr->alloc;
	struct msgring *r;
	uoff_t off;

	if (q->ring_alloc || q->nsent < RING_AFTER ||
	    rd64(&a->used) + RING_ALLOC > ns->size / RING_SHARE)
		return;
	off = arena_alloc(ns, RING_ALLOC, POOL_GENERAL);
	r = ring_at(ns, off);
	if (!r)
		return;
	ring_init(r);          /* fresh: rolled back (freed) with the section */
	J_SET(ns, q->ring_alloc, off);
	J_SET(ns, q->lspid_tn, 0u);
	J_SET(ns, q->lrpid_hn, 0u);
}

/* the fast paths may run when the ring alone can be the queue */
static bool msq_may_go_fast(struct msg_queue *q)
{
	return !q->messages.first && !q->receivers.first && !q->senders.first &&
	       !atomic_load(&q->perm.deleted) && q->qbytes <= INT32_MAX;
}

/*
 * At the end of a locked section with nobody asleep: the list's messages
 * back into the ring (journaled, in the section), so that the fast paths
 * come back on at once.  A locked section stops the ring and moves what it
 * holds to the list (msq_slow); while the list holds messages the fast
 * paths stay off, and a stream whose two sides then take the lock for
 * every message never empties it: one sleep of a side that waited too
 * long (a stall of the other, a vCPU preempted) cost thousands of messages
 * at a quarter of the speed.
 *
 * Once a sleeper has come (q->refill, armed by msgsnd_sleep and
 * msgrcv_sleep) and at the end of a section that leaves nobody asleep:
 * not after every section, for a program that searches the queue (typed
 * receives) stops the ring at every receive, and would pay both moves
 * each time.  Only a list the ring can hold easily (RING_REFILL_MAX small
 * messages), into a stopped ring that is empty.
 */
#define RING_REFILL_MAX (RING_SLOTS / 2)

static __attribute__((noinline)) void list_into_ring(struct ns *ns, struct msg_queue *q,
						     struct msgring *r, uint64_t t)
{
	/* the list as checked once: offsets and sizes read from the arena
	 * are used as read here, whatever another member writes meanwhile */
	struct { uoff_t off; uint32_t size; } list[RING_REFILL_MAX];
	uint64_t me = ring_me(ns), bytes = 0;
	uint32_t n = 0;

	for (uoff_t o = q->messages.first; o; n++) {
		struct msgm *m = m_at(ns, o);
		int64_t size = m ? msg_len(ns, m) : -1;

		if (size < 0 || size > RING_TEXT_MAX || n == RING_REFILL_MAX) {
			J_SET(ns, q->refill, 0u);   /* not this time: until a sleeper */
			return;
		}
		list[n].off = o;
		list[n].size = (uint32_t)size;
		o = m->next;
	}
	/* (a sender still writing the first slot: at a later unlock) */
	if (!me || !ring_refill_begin(ns, r, me, t))
		return;
	for (uint32_t i = 0; i < n; i++) {
		struct msgm *m = (struct msgm *)(ns->base + list[i].off);

		t = ring_put(r, t, m->mtype, m->text, list[i].size, q->lspid, q->stime);
		bytes += list[i].size;
		msg_put_block(ns, q, m);
	}
	J_SET(ns, q->messages.first, (uoff_t)0);
	J_SET(ns, q->messages.last, (uoff_t)0);
	J_SET(ns, q->qnum, q->qnum - n);
	J_SET(ns, q->cbytes, q->cbytes - bytes);
	/* the list's senders are q->lspid's: the ring's last slot is not */
	J_SET(ns, q->lspid_tn, rw_n(t));
	J_SET(ns, r->tail, t);
	J_SET(ns, q->refill, 0u);
}

static void msq_list_to_ring(struct ns *ns, struct msg_queue *q, struct msgring *r)
{
	uint64_t t, h;

	if (!q->refill || !q->messages.first || q->receivers.first || q->senders.first ||
	    q->qnum > RING_REFILL_MAX || q->cbytes > q->qnum * RING_TEXT_MAX ||
	    atomic_load(&q->perm.deleted) || q->qbytes > INT32_MAX)
		return;
	t = ring_load(&r->tail);
	h = ring_load(&r->head);
	if ((t & RW_SLOW) && (h & RW_SLOW) && !ring_count(t, h))
		list_into_ring(ns, q, r, t);
}

/*
 * At the end of a locked section: publish a new ring, and turn the fast
 * paths back on if the queue allows.  Both after the section committed:
 * what fast callers see must never be rolled back.  Dying between the
 * commit and these stores leaves the fast paths off, which is safe; the
 * next holder publishes and restarts.
 */
static void msq_ring_restart(struct ns *ns, struct msg_queue *q)
{
	struct msgring *r = ring_at(ns, q->ring_alloc);
	bool publish, go;

	if (!r)
		return;
	msq_list_to_ring(ns, q, r);
	publish = q->ring != q->ring_alloc;
	go = (ring_load(&r->tail) & RW_SLOW) && msq_may_go_fast(q);
	if (!publish && !go)
		return;
	ulock_commit(ns, &q->lock);
	if (publish)
		__atomic_store_n(&q->ring, q->ring_alloc, __ATOMIC_RELEASE);
	if (go)
		ring_go(r);
}

/* the last fast receiver's pid, once its note is written (briefly waited for) */
static int32_t ring_last_receiver(struct msgring *r, uint64_t h)
{
	for (int i = 0; i < 1000; i++) {
		uint64_t st = __atomic_load_n(&r->rstat, __ATOMIC_ACQUIRE);

		if ((uint32_t)(st >> 32) == rw_n(h) || i == 999)
			return (int32_t)(uint32_t)st;
		if (i > 100)
			sched_yield();
		else
			cpu_relax();
	}
	return 0;
}

/* the last sender and receiver, wherever they went (lock held) */
static void msq_last_pids(struct ns *ns, struct msg_queue *q, int32_t *lspid, int64_t *stime,
			  int32_t *lrpid, int64_t *rtime)
{
	struct msgring *r = ring_at(ns, q->ring_alloc);
	uint64_t t, h;

	*lspid = q->lspid;
	*stime = q->stime;
	*lrpid = q->lrpid;
	*rtime = q->rtime;
	if (!r)
		return;
	/* a few tries: senders keep the tail moving (or a member rewrites it) */
	for (int tries = 0; tries < 1000; tries++) {
		struct rslot *s;

		ring_snapshot(r, &t, &h);
		if (rw_n(t) == q->lspid_tn)
			break;
		s = ring_slot(r, rw_n(t) - 1);
		*lspid = __atomic_load_n(&s->pid, __ATOMIC_RELAXED);
		*stime = __atomic_load_n(&s->stime, __ATOMIC_RELAXED);
		/* the slot is rewritten only after the tail moves on */
		if (ring_load(&r->tail) == t)
			break;
	}
	if (rw_n(h) != q->lrpid_hn) {
		*lrpid = ring_last_receiver(r, h);
		*rtime = __atomic_load_n(&r->rtime, __ATOMIC_RELAXED);
	}
}

/* qnum and cbytes: the list's plus the ring's */
static void msq_counts(struct ns *ns, struct msg_queue *q, uint64_t *qnum, uint64_t *cbytes)
{
	struct msgring *r = ring_at(ns, q->ring_alloc);
	uint64_t t, h;

	*qnum = rd64(&q->qnum);
	*cbytes = rd64(&q->cbytes);
	if (!r)
		return;
	ring_snapshot(r, &t, &h);
	if (ring_count(t, h) <= RING_SLOTS) {
		*qnum += ring_count(t, h);
		*cbytes += ring_bytes(t, h);
	}
}

/*
 * Queue lock held: stop the fast paths and move what the ring holds to the
 * tail of the (then empty) list, so that the locked code sees the whole
 * queue (DROP: the queue goes away, its messages with it).  Journaled in the queue's frame: if we die, the ring keeps its
 * messages, stopped, and the next holder moves them.
 */
static int msq_slow(struct ns *ns, struct msg_queue *q, bool drop)
{
	struct msgring *r = ring_at(ns, q->ring_alloc);
	uint64_t t, h;
	uint32_t n;

	if (!r)
		return 0;
	ring_stop(r, &t, &h);
	n = ring_count(t, h);
	if (rw_n(t) != q->lspid_tn) {
		struct rslot *s = ring_slot(r, rw_n(t) - 1);

		J_SET(ns, q->lspid, s->pid);
		J_SET(ns, q->stime, s->stime);
		J_SET(ns, q->lspid_tn, rw_n(t));
	}
	if (rw_n(h) != q->lrpid_hn) {
		J_SET(ns, q->lrpid, ring_last_receiver(r, h));
		J_SET(ns, q->rtime, rd64((uint64_t *)&r->rtime));
	}
	if (n > RING_SLOTS) {
		ns_corrupt(ns, "message queue ring counts");
		n = 0;
	}
	for (uint32_t i = 0; i < n && !drop; i++) {
		struct rslot *s = ring_slot(r, rw_n(h) + i);

		if (queue_append(ns, q, (long)s->mtype, s->text,
				 s->size <= RING_TEXT_MAX ? s->size : 0))
			return -ENOMEM;
	}
	if (n)
		J_SET(ns, r->head, (h & (RW_SLOW | RW_EPOCH_MASK)) | (t & ~(RW_SLOW | RW_EPOCH_MASK)));
	if (rw_n(t) != q->lrpid_hn)
		J_SET(ns, q->lrpid_hn, rw_n(t));
	return 0;
}

/*
 * Queue lock held, taken because the fast path found the ring stopped
 * (FAST_STOPPED, RCV_STOPPED): has a locked section of the other side
 * turned the fast paths back on meanwhile (the ring runs, and alone is the
 * queue)?  Then the ring is the way again.  Stopping it anew would put a
 * sender's message on the list, which the receiver can take only under
 * the lock, stopping the ring for the next send in turn: a convoy of the
 * two sides through the lock that a stream never leaves (1.2 us a message
 * instead of 0.3).
 */
#define RING_BACK_TRIES 4

static bool msq_ring_back(struct ns *ns, struct msg_queue *q, int *tries)
{
	struct msgring *r = ring_of(ns, q);

	if (*tries >= RING_BACK_TRIES || !r || (ring_load(&r->tail) & RW_SLOW) ||
	    !msq_may_go_fast(q))
		return false;
	++*tries;
	return true;
}

/* lock held, fast paths stopped: the ring counts the locked code's sends
 * and receives as the latest */
static void msq_note_sender(struct ns *ns, struct msg_queue *q, struct msgring *r)
{
	uint32_t tn = r ? rw_n(ring_load(&r->tail)) : 0;

	if (q->lspid_tn != tn)
		J_SET(ns, q->lspid_tn, tn);
}

static void msq_note_receiver(struct ns *ns, struct msg_queue *q, struct msgring *r)
{
	uint32_t hn = r ? rw_n(ring_load(&r->head)) : 0;

	if (q->lrpid_hn != hn)
		J_SET(ns, q->lrpid_hn, hn);
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
	struct walk wk = WALK_INIT;
	int guard = 0;

	while (o && guard++ < MSGM_WALK_MAX && !walk_loops(&wk, o)) {
		struct msgm *m = m_at(ns, o);

		if (!m)
			break;
		long mtype = __atomic_load_n(&m->mtype, __ATOMIC_RELAXED);

		if (testmsg(mtype, msgtyp, mode)) {
			/* a type below 1 is a forged one (msgsnd refuses it):
			 * taken as the lowest, like 1, and never decremented */
			if (mode == SEARCH_LESSEQUAL && mtype > 1) {
				msgtyp = mtype - 1;
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

	/* no cycle check: senders that do not fit move to the tail, so the
	 * walk meets one again (STOP); the count bounds a corrupt list */
	while (o && guard++ < MSGW_WALK_MAX) {
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
	struct walk wk = WALK_INIT;
	int guard = 0;

	while (q->receivers.first && guard++ < MSGW_WALK_MAX) {
		struct msgw *w = w_at(ns, q->receivers.first);

		/* taking the first off must make the list shorter: a first
		 * seen again is a list that loops */
		if (!w || walk_loops(&wk, q->receivers.first)) {
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
	/* journaled: only what changes (a retired queue is mostly zero) */
#define MSQ_FIELD(f) do {						\
		if (!journal)						\
			q->f = n.f;					\
		else if (memcmp(&q->f, &n.f, sizeof(n.f)))		\
			J_SET(ns, q->f, n.f);				\
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
	MSQ_FIELD(refill);
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
	q = off ? ns_ptr_aligned(ns, off, sizeof(*q)) : NULL;
	/* a retired queue is a queue struct in its block, removed: anything
	 * else on the list (a corrupt arena) ends the list for good */
	if (off && (!q || !ipc_obj_fits(ns, q, sizeof(*q)) || q->perm.type != IPC_MSG_IDS ||
		    !atomic_load(&q->perm.deleted) || q->retired_next == off)) {
		ns_corrupt(ns, "list of retired message queues");
		J_SET(ns, MSG_RETIRED(ns), (uoff_t)0);
		q = NULL;
	}
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
		/* messages a crash left on it (see msgctl_down), in the ring too */
		r = msq_slow(ns, q, true);
		free_messages(ns, q);
		msq_init_fields(ns, q, key, msgflg, true);
		j_target_restore(prev);
		/* not msq_unlock: its fast paths wait until it is published */
		ulock_release(ns, &q->lock);
		if (r)
			return r;
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
	/*
	 * Its id is stored when the ids section commits (until then it keeps
	 * the id -1 set above): lookups by id take no ids lock, and a msgsnd
	 * then takes the queue's lock alone.  Found with its id before the
	 * commit, a message sent (in a block of its own) was lost with the
	 * queue when a creator killed before the commit was rolled back.
	 * Until then lookups by id and MSG_STAT by index pass it by (EINVAL,
	 * as before the kernel's ipc_addid).
	 */
	id = ipc_addid_at_commit(ns, IPC_MSG_IDS, &q->perm, limit);
	return id;
}

int ksys_msgget(key_t key, int msgflg)
{
	static const struct ipc_ops ops = { newque, NULL };
	struct ns *ns = ns_get();

	if (!ns)
		return -errno;
	return ipcget(ns, IPC_MSG_IDS, key, msgflg, 0, &ops);
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
	fd = sys_open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	sys_close(fd);
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
	struct walk wk = WALK_INIT;
	int guard = 0;

	while (o && guard++ < MSGW_WALK_MAX && !walk_loops(&wk, o)) {
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
		msq_note_receiver(ns, q, ring_at(ns, q->ring_alloc));
		w_complete(ns, w, 0, wq);
		return 1;
	}
	return 0;
}

/*
 * The other side shares our CPU (or the spin ran out and it may): it cannot
 * run while we spin, and sleeping through the locked path stops the ring
 * for both.  Give it the CPU a few times first: a sender that shares a CPU
 * with its receiver then fills the ring before the receiver runs again
 * (and the reverse), a whole ring per pair of switches.  When the two run
 * on different CPUs sched_yield returns at once (the scheduler's load
 * balancer soon moves one of two runnable tasks to an idle CPU).
 * 1: the condition ended; 0: it still holds; -EINTR as spin_while.
 */
#define PEER_YIELDS 4

/* where this thread runs now, as the ring notes it (0: not registered) */
static uint64_t ran_here(struct ns *ns)
{
	struct uthread *t = cur_thread(ns);

	return t ? ring_ran(t->tid, sched_getcpu()) : 0;
}

/*
 * Note where this side runs in WORD (R's sran or rran) after a fast send
 * or receive: at the first and then every RAN_EVERY-th, not at each (the
 * CPU number costs a call, 30 instructions; a thread moves between CPUs
 * far less often than it sends 64 messages, and the word is only a hint).
 */
#define RAN_EVERY 64

static void note_ran(struct ns *ns, uint64_t *word)
{
	static __thread unsigned left;

	if (likely(left--))
		return;
	left = RAN_EVERY - 1;
	ring_note_ran(word, ran_here(ns));
}

/* did another thread last use R's fast paths on the CPU of ME? */
static bool peer_shares_cpu(struct msgring *r, uint64_t me)
{
	const uint64_t *side[2] = { &r->sran, &r->rran };

	for (int i = 0; i < 2; i++) {
		uint64_t v = __atomic_load_n(side[i], __ATOMIC_RELAXED);

		if (v >> 32 != me >> 32 && (uint32_t)v == (uint32_t)me)
			return true;
	}
	return false;
}

/* does the other side share our CPU (as the ring's hints have it)? */
static bool peer_here(const struct spin_on *on)
{
	uint64_t me = on->r ? ran_here(on->ns) : 0;

	return me && peer_shares_cpu(on->r, me);
}

static int yield_to_peer(bool (*still)(const struct spin_on *), const struct spin_on *on)
{
	for (int i = 0; i < PEER_YIELDS; i++) {
		sched_yield();
		if (uipc_handler_gen() != on->hand0)
			return -EINTR;
		if (!still(on))
			return 1;
	}
	return 0;
}

/*
 * A fast path found the queue full (empty): NOWAIT_ERR with IPC_NOWAIT,
 * else wait for the other side.  0: look again; 1: take the locked path
 * (spun before, or the spin ran out: *SPUN); -EINTR.
 */
static int fast_wait(bool (*still)(const struct spin_on *), const struct spin_on *on,
		     int msgflg, int nowait_err, bool *spun)
{
	bool here;
	int r;

	if (msgflg & IPC_NOWAIT)
		return nowait_err;
	if (*spun)
		return 1;
	/* a side that shares our CPU cannot run while we spin: yield at
	 * once (spinning first wasted the whole budget each time the
	 * scheduler put the two sides together) */
	here = peer_here(on);
	r = here ? 0 : spin_while(still, on);
	if (r == 0 && (here || peer_here(on)))
		r = yield_to_peer(still, on);
	if (r < 0)
		return r;
	if (r == 0) {
		*spun = true;
		return 1;
	}
	return 0;
}

/*
 * The fast path: a send into the ring, without the queue lock.  FAST_NO:
 * take the locked path (no ring, a big message, or a full queue we already
 * spun on); FAST_STOPPED: the same, for the fast paths were off.
 */
#define FAST_NO      1
#define FAST_STOPPED 2

static int msgsnd_fast(struct ns *ns, struct msg_queue *q, int msqid, long mtype,
		       const void *text, size_t msgsz, int msgflg, unsigned hand0, bool *spun)
{
	struct msgring *r = ring_of(ns, q);
	uint64_t me = r ? ring_me(ns) : 0;

	if (!r || !me || msgsz > RING_TEXT_MAX)
		return FAST_NO;
	for (;;) {
		struct spin_on on = { .ns = ns, .q = q, .r = r, .sz = msgsz, .hand0 = hand0 };
		int res;

		if (!msq_valid(q, msqid))
			return FAST_NO;
		/* atomic to the program's handlers, as the kernel's call */
		uipc_crit_enter();
		res = ring_send(ns, r, me, rd64(&q->qbytes), mtype, text, (uint32_t)msgsz,
				cur_pid(), ipc_now());
		uipc_crit_exit();
		if (res == 0) {
			note_ran(ns, &r->sran);
			return 0;
		}
		if (res == RING_STOPPED)
			return FAST_STOPPED;
		if (res != RING_FULL)
			return FAST_NO;
		/* a receiver on another CPU makes room in a moment */
		res = fast_wait(no_room, &on, msgflg, -EAGAIN, spun);
		if (res)
			return res > 0 ? FAST_NO : res;
		ring_room_hysteresis(&on);
	}
}

/* queue lock held, room checked: the message goes to a receiver or the list */
static int msgsnd_locked(struct ns *ns, struct msg_queue *q, long mtype, const void *text,
			 size_t msgsz, struct wake_q *wq)
{
	int64_t now = ipc_now();
	int r;

	if (q->lspid != cur_pid())
		J_SET(ns, q->lspid, cur_pid());
	if (q->stime != now)
		J_SET(ns, q->stime, now);
	msq_note_sender(ns, q, ring_at(ns, q->ring_alloc));
	J_SET(ns, q->nsent, q->nsent + 1);
	r = q->receivers.first ? pipelined_send(ns, q, mtype, text, msgsz, wq) : 0;
	if (r == 0 && queue_append(ns, q, mtype, text, msgsz))
		return -ENOMEM;
	/* a queue that carries messages gets the fast path */
	if (r >= 0 && !q->ring_alloc)
		msq_add_ring(ns, q);
	return r < 0 ? r : 0;
}

/*
 * queue lock held, no room: sleep as a FIFO sender until woken to retry
 * (0, lock released), removed (-EIDRM) or interrupted (-EINTR)
 */
static int msgsnd_sleep(struct ns *ns, struct msg_queue *q, int msqid, size_t msgsz,
			unsigned hand0)
{
	struct msgw *w = new_waiter(ns, q);
	int err, r;

	if (!w) {
		j_abort(ns);
		msq_unlock(ns, q);
		return -ENOMEM;
	}
	w->msgsz = msgsz;
	wl_add_tail(ns, &q->senders, w);
	J_SET(ns, q->refill, 1u);
	for (;;) {
		int st;

		msq_unlock(ns, q);
		r = msg_wait(w, hand0);
		err = msq_relock(ns, q);
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
	msq_unlock(ns, q);
	return r == -EINTR ? -EINTR : 0;
}

/*
 * A send or receive that may sleep stays interruptible while it waits for
 * a lock too (core/lockwait.c).  The bound is set at the call's first lock
 * (*BOUNDED then true: the caller ends it), so that the lock-free ring path
 * pays nothing for it.
 */
static inline void bound_lock_waits(int msgflg, unsigned hand0, bool *bounded)
{
	if (!*bounded && !(msgflg & IPC_NOWAIT)) {
		lockwait_bound_blocking(NULL, hand0);
		*bounded = true;
	}
}

static int do_msgsnd(struct ns *ns, int msqid, long mtype, const void *text, size_t msgsz,
		     int msgflg, unsigned hand0, bool *bounded)
{
	struct msg_queue *q;
	struct wake_q wq;          /* only n: zeroing 64 entries costs more than a fast send */
	bool spun = false, stopped;
	int err = 0, r, bounces = 0, ring_tries = 0;

	wq.n = 0;
	q = msq_obtain_check(ns, msqid, &err);
	if (!q)
		return err;
	for (;;) {
		if (ipcperms(&q->perm, 0222))
			return -EACCES;
		r = msgsnd_fast(ns, q, msqid, mtype, text, msgsz, msgflg, hand0, &spun);
		if (r != FAST_NO && r != FAST_STOPPED)
			return r;
		stopped = r == FAST_STOPPED;
		bound_lock_waits(msgflg, hand0, bounded);
		r = msq_lock(ns, q);
		if (r)
			return r;
		if (!msq_valid(q, msqid)) {
			msq_unlock(ns, q);
			return -EIDRM;
		}
		if (stopped && msq_ring_back(ns, q, &ring_tries)) {
			msq_unlock(ns, q);
			continue;
		}
		r = msq_slow(ns, q, false);
		if (r) {
			j_abort(ns);
			msq_unlock(ns, q);
			return r;
		}
		if (msg_fits(q, msgsz))
			break;
		if (msgflg & IPC_NOWAIT) {
			msq_unlock(ns, q);
			return -EAGAIN;
		}
		if (!spun) {
			/* a receiver on another CPU may make room in a moment */
			struct spin_on on = { .q = q, .r = ring_of(ns, q), .sz = msgsz,
					      .hand0 = hand0 };

			msq_unlock(ns, q);
			r = spin_while(no_room, &on);
			if (r < 0)
				return r;
			if (r == 0 || ++bounces > 8)
				spun = true;
			else
				room_hysteresis(q, msgsz);
			continue;
		}
		r = msgsnd_sleep(ns, q, msqid, msgsz, hand0);
		if (r)
			return r;
	}
	r = msgsnd_locked(ns, q, mtype, text, msgsz, &wq);
	if (r < 0) {
		j_abort(ns);
		msq_unlock(ns, q);
		return r;
	}
	msq_unlock(ns, q);
	wake_up_q(ns, &wq);
	return 0;
}

/* msgsnd begun when the program's handler count was HAND0 */
int ksys_msgsnd(unsigned hand0, int msqid, const void *msgp, size_t msgsz, int msgflg)
{
	struct ns *ns;
	char small[512], *text = small;
	bool bounded = false;
	long mtype;
	int r;

	if (uipc_copy_from_user(&mtype, msgp, sizeof(mtype)))
		return -EFAULT;
	ns = ns_get();
	if (!ns)
		return -errno;
	if (msgsz > (size_t)ns->hdr->lim.msgmax || (long)msgsz < 0 || msqid < 0)
		return -EINVAL;
	if (mtype < 1)
		return -EINVAL;
	if (msgsz > sizeof(small)) {
		text = malloc(msgsz);
		if (!text)
			return -ENOMEM;
	}
	if (uipc_copy_from_user(text, (const char *)msgp + sizeof(long), msgsz)) {
		r = -EFAULT;
	} else {
		/* a handler whose signal comes meanwhile runs after it */
		uipc_call_begin();
		r = do_msgsnd(ns, msqid, mtype, text, msgsz, msgflg, hand0, &bounded);
		if (bounded)
			lockwait_bound_end();
		r = (int)uipc_call_end(r);
	}
	if (text != small)
		free(text);
	return r;
}

/* ---- msgrcv ---- */

/* copy a message out to the caller's buffer: mtype first, then
 * min(bufsz, size) bytes */
static long copy_msg_out(void *buf, long mtype, const char *text, size_t size, size_t bufsz)
{
	size_t n = size < bufsz ? size : bufsz;

	if (uipc_copy_to_user(buf, &mtype, sizeof(mtype)))
		return -EFAULT;
	if (n && uipc_copy_to_user((char *)buf + sizeof(long), text, n))
		return -EFAULT;
	return (long)n;
}

/* M's text (SIZE bytes, msg_len) to the caller's buffer */
static long msg_fill_user(void *buf, struct msgm *m, uint32_t size, size_t bufsz)
{
	return copy_msg_out(buf, m->mtype, m->text, size, bufsz);
}

/*
 * A message taken under the queue lock reaches the caller's buffer only
 * after the section commits, as the kernel copies it out after unlinking
 * it: a receiver killed before the commit leaves the message in the queue
 * and must leave the buffer untouched too (a buffer in shared memory would
 * otherwise show survivors a message that someone else receives again).
 * Under the lock the text goes to this thread's bounce buffer; the
 * program's handlers stay held off until it is copied out (a handler's own
 * msgrcv would reuse the buffer).
 */
struct taken {
	long mtype;
	uint32_t size;
	bool direct;               /* no bounce memory: copied out under the lock */
	long ret;                  /* then: what that copy returned */
};

static __thread char *bounce;
static __thread size_t bounce_cap;

static bool bounce_reserve(size_t n)
{
	char *p;

	if (n <= bounce_cap)
		return true;
	p = realloc(bounce, n);
	if (!p)
		return false;
	bounce = p;
	bounce_cap = n;
	return true;
}

/* queue lock held, M (of SIZE bytes, msg_len) taken by this section:
 * keep what the caller gets, never more than BUFSZ */
static void take_text(struct taken *t, struct msgm *m, uint32_t size, void *buf, size_t bufsz)
{
	size_t n = size < bufsz ? size : bufsz;

	t->mtype = m->mtype;
	t->size = size;
	t->direct = !bounce_reserve(n);
	if (t->direct)
		t->ret = msg_fill_user(buf, m, size, bufsz);   /* out of memory: as before */
	else if (n)
		memcpy(bounce, m->text, n);
}

/* release the queue lock (the take commits), then copy the message out */
static long unlock_and_copy_out(struct ns *ns, struct msg_queue *q, const struct taken *t,
				void *buf, size_t bufsz)
{
	long ret;

	uipc_crit_enter();
	msq_unlock(ns, q);
	ret = t->direct ? t->ret : copy_msg_out(buf, t->mtype, bounce, t->size, bufsz);
	uipc_crit_exit();
	return ret;
}

/* what a receive asks for */
struct rcv_req {
	void *buf;
	size_t bufsz;
	long msgtyp;
	int mode;
	int msgflg;
	uint64_t copy_max;         /* MSG_COPY */
	unsigned hand0;            /* the program's handlers run when the call began */
};

/*
 * The fast path: take the first message from the ring, without the queue
 * lock.  RCV_SLOW: take the locked path (no ring, a search the ring cannot
 * do, or an empty queue we already spun on); RCV_STOPPED: the same, for
 * the fast paths were off.
 */
#define RCV_SLOW    LONG_MIN
#define RCV_STOPPED (LONG_MIN + 1)

static long msgrcv_fast(struct ns *ns, struct msg_queue *q, int msqid, const struct rcv_req *rq,
			bool *spun)
{
	struct msgring *r = ring_of(ns, q);
	bool except = rq->mode == SEARCH_NOTEQUAL;
	uint64_t maxsize = (rq->msgflg & MSG_NOERROR) ? UINT64_MAX : rq->bufsz;
	struct ring_msg m;

	if (!r || (rq->mode != SEARCH_ANY && rq->mode != SEARCH_EQUAL && !except))
		return RCV_SLOW;
	for (;;) {
		struct spin_on on = { .ns = ns, .q = q, .r = r, .hand0 = rq->hand0,
				      .pauses = RECV_POLL_PAUSES - 1 };
		int res;

		if (!msq_valid(q, msqid))
			return RCV_SLOW;
		on.nsent = rd64(&q->nsent);
		/* atomic to the program's handlers, as the kernel's call */
		uipc_crit_enter();
		res = ring_recv(r, rq->mode == SEARCH_ANY ? 0 : rq->msgtyp, except, maxsize, &m,
				&on.tail, cur_pid(), ipc_now());
		uipc_crit_exit();
		if (res == 0) { /* taken: gone from the queue even if the copy faults */
			note_ran(ns, &r->rran);
			return copy_msg_out(rq->buf, (long)m.mtype, m.text, m.size, rq->bufsz);
		}
		if (res == RING_2BIG)
			return -E2BIG;
		if (res == RING_STOPPED)
			return RCV_STOPPED;
		if (res != RING_EMPTY)
			return RCV_SLOW;
		/* a sender on another CPU brings one in a moment */
		res = fast_wait(nothing_new, &on, rq->msgflg, -ENOMSG, spun);
		if (res)
			return res > 0 ? RCV_SLOW : res;
	}
}

/* queue lock held: take M (found by find_msg after PREV), or copy it */
static long msgrcv_take(struct ns *ns, struct msg_queue *q, struct msgm *m, uoff_t prev,
			const struct rcv_req *rq)
{
	struct wake_q wq;          /* only n, as in do_msgsnd */
	int64_t now = ipc_now(), size = msg_len(ns, m);
	struct taken t;
	long ret;

	wq.n = 0;
	if (size < 0) {
		msq_unlock(ns, q);
		return -EIDRM;     /* a message the arena cannot hold: corrupt */
	}
	if (rq->bufsz < (uint64_t)size && !(rq->msgflg & MSG_NOERROR)) {
		msq_unlock(ns, q);
		return -E2BIG;
	}
	if (rq->msgflg & MSG_COPY) {
		ret = (uint64_t)size > rq->copy_max ? -EINVAL :
			msg_fill_user(rq->buf, m, (uint32_t)size, rq->bufsz);
		msq_unlock(ns, q);
		return ret;
	}
	unlink_msg(ns, q, m, prev);
	J_SET(ns, q->qnum, q->qnum - 1);
	if (q->rtime != now)
		J_SET(ns, q->rtime, now);
	if (q->lrpid != cur_pid())
		J_SET(ns, q->lrpid, cur_pid());
	msq_note_receiver(ns, q, ring_at(ns, q->ring_alloc));
	J_SET(ns, q->cbytes, q->cbytes - (uint64_t)size);
	if (q->senders.first)
		ss_wakeup(ns, q, &wq, false);
	/* the message is gone from the queue even if the copy faults */
	take_text(&t, m, (uint32_t)size, rq->buf, rq->bufsz);
	msg_put_block(ns, q, m);
	ret = unlock_and_copy_out(ns, q, &t, rq->buf, rq->bufsz);
	wake_up_q(ns, &wq);
	return ret;
}

/*
 * queue lock held, nothing to take: sleep as a FIFO receiver.  Returns what
 * msgrcv returns, or RCV_SLOW to look again (expunged by IPC_SET); the lock
 * is released either way.
 */
static long msgrcv_sleep(struct ns *ns, struct msg_queue *q, int msqid, const struct rcv_req *rq)
{
	struct msgw *w = new_waiter(ns, q);
	int err, r, st;

	if (!w) {
		j_abort(ns);
		msq_unlock(ns, q);
		return -ENOMEM;
	}
	w->msgtype = rq->msgtyp;
	w->mode = rq->mode;
	w->maxsize = (rq->msgflg & MSG_NOERROR) ? INT_MAX : (int64_t)rq->bufsz;
	wl_add_tail(ns, &q->receivers, w);
	J_SET(ns, q->refill, 1u);
	for (;;) {
		msq_unlock(ns, q);
		r = msg_wait(w, rq->hand0);
		err = msq_relock(ns, q);
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
		struct msgm *m = m_at(ns, w->msg);
		int64_t size = m ? msg_len(ns, m) : -1;
		struct taken t;

		/* a sender hands over only what fits our buffer (w->maxsize);
		 * the arena may say otherwise, and we never return more than
		 * the buffer holds: E2BIG, as the sender would have said */
		if (size < 0 || ((uint64_t)size > rq->bufsz && !(rq->msgflg & MSG_NOERROR))) {
			if (m)
				arena_free(ns, ns_off(ns, m));
			put_waiter(ns, q, w, msq_valid(q, msqid));
			msq_unlock(ns, q);
			return size < 0 ? -EIDRM : -E2BIG;
		}
		take_text(&t, m, (uint32_t)size, rq->buf, rq->bufsz);
		if (msq_valid(q, msqid))
			msg_put_block(ns, q, m);
		else
			arena_free(ns, ns_off(ns, m));
		put_waiter(ns, q, w, msq_valid(q, msqid));
		return unlock_and_copy_out(ns, q, &t, rq->buf, rq->bufsz);
	}
	put_waiter(ns, q, w, msq_valid(q, msqid));
	msq_unlock(ns, q);
	/* expunged by IPC_SET (-EAGAIN): look again, from the tail */
	return st == -EAGAIN ? RCV_SLOW : st;
}

/* MSG_COPY: the kernel reads the caller's buffer first (it loads a message
 * from it) */
static int msg_copy_probe(struct ns *ns, struct rcv_req *rq)
{
	uint64_t lim = (uint64_t)ns->hdr->lim.msgmax;
	char probe[256];

	if ((rq->msgflg & MSG_EXCEPT) || !(rq->msgflg & IPC_NOWAIT))
		return -EINVAL;
	rq->copy_max = rq->bufsz < lim ? rq->bufsz : lim;
	for (uint64_t done = 0; done < rq->copy_max; done += sizeof(probe)) {
		uint64_t n = rq->copy_max - done < sizeof(probe) ? rq->copy_max - done : sizeof(probe);

		if (uipc_copy_from_user(probe, (char *)rq->buf + done, n))
			return -EFAULT;
	}
	return 0;
}

static long do_msgrcv(struct ns *ns, int msqid, void *buf, size_t bufsz, long msgtyp,
		      int msgflg, unsigned hand0, bool *bounded)
{
	struct rcv_req rq = { .buf = buf, .bufsz = bufsz, .msgflg = msgflg, .hand0 = hand0 };
	struct msg_queue *q;
	bool spun = false, stopped;
	int err = 0, r, bounces = 0, ring_tries = 0;
	long ret;

	if (msqid < 0 || (long)bufsz < 0)
		return -EINVAL;
	if (msgflg & MSG_COPY) {
		r = msg_copy_probe(ns, &rq);
		if (r)
			return r;
	}
	rq.mode = convert_mode(&msgtyp, msgflg);
	rq.msgtyp = msgtyp;
	q = msq_obtain_check(ns, msqid, &err);
	if (!q)
		return err;
	for (;;) {
		struct msgm *m;
		uoff_t prev;

		if (ipcperms(&q->perm, 0444))
			return -EACCES;
		ret = msgrcv_fast(ns, q, msqid, &rq, &spun);
		if (ret != RCV_SLOW && ret != RCV_STOPPED)
			return ret;
		stopped = ret == RCV_STOPPED;
		bound_lock_waits(msgflg, rq.hand0, bounded);
		r = msq_lock(ns, q);
		if (r)
			return r;
		if (!msq_valid(q, msqid)) {
			msq_unlock(ns, q);
			return -EIDRM;
		}
		if (stopped && msq_ring_back(ns, q, &ring_tries)) {
			msq_unlock(ns, q);
			continue;
		}
		r = msq_slow(ns, q, false);
		if (r) {
			j_abort(ns);
			msq_unlock(ns, q);
			return r;
		}
		m = q->messages.first ? find_msg(ns, q, rq.msgtyp, rq.mode, &prev) : NULL;
		if (m)
			return msgrcv_take(ns, q, m, prev, &rq);
		if (msgflg & IPC_NOWAIT) {
			msq_unlock(ns, q);
			return -ENOMSG;
		}
		if (!spun) {
			/* a sender on another CPU may bring one in a moment
			 * (to the list, or to the ring once it restarts) */
			struct spin_on on = { .q = q, .r = ring_of(ns, q), .nsent = q->nsent,
					      .hand0 = rq.hand0, .pauses = RECV_POLL_PAUSES - 1 };

			if (on.r)
				on.tail = ring_load(&on.r->tail);
			msq_unlock(ns, q);
			r = spin_while(nothing_new, &on);
			if (r < 0)
				return r;
			if (r == 0 || ++bounces > 8)
				spun = true;
			continue;
		}
		ret = msgrcv_sleep(ns, q, msqid, &rq);
		if (ret != RCV_SLOW)
			return ret;
	}
}

/* msgrcv begun when the program's handler count was HAND0 */
ssize_t ksys_msgrcv(unsigned hand0, int msqid, void *msgp, size_t msgsz, long msgtyp,
		    int msgflg)
{
	struct ns *ns = ns_get();
	bool bounded = false;
	ssize_t r;

	if (!ns)
		return -errno;
	uipc_call_begin();          /* a handler whose signal comes meanwhile runs after it */
	r = do_msgrcv(ns, msqid, msgp, msgsz, msgtyp, msgflg, hand0, &bounded);
	if (bounded)
		lockwait_bound_end();
	return uipc_call_end(r);
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

			uint64_t qnum, cbytes;

			if (!p || ipc_removed(ns, p))
				continue;
			msq_counts(ns, msq_of(p), &qnum, &cbytes);
			hdrs += qnum;
			bytes += cbytes;
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
	int err = 0, r, id;

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
	/* removed and retired since we found it, then made into a queue not
	 * yet committed (newque: id -1), or into another queue: left as it
	 * is (not msq_unlock, which may start its ring) */
	id = q->perm.id;
	if (id < 0 || (cmd == IPC_STAT && id != msqid)) {
		ulock_release(ns, &q->lock);
		return cmd == IPC_STAT ? -EIDRM : -EINVAL;
	}
	ipc_fill_perm(ns, &q->perm, &out->msg_perm);
	{
		/* the ring keeps running: counts and pids as of one instant */
		uint64_t qnum, cbytes;
		int32_t lspid, lrpid;
		int64_t stime, rtime;

		msq_counts(ns, q, &qnum, &cbytes);
		msq_last_pids(ns, q, &lspid, &stime, &lrpid, &rtime);
		out->msg_stime = stime;
		out->msg_rtime = rtime;
		out->__msg_cbytes = cbytes;
		out->msg_qnum = qnum;
		out->msg_lspid = lspid;
		out->msg_lrpid = lrpid;
	}
	out->msg_ctime = q->ctime;
	out->msg_qbytes = q->qbytes;
	err = cmd == IPC_STAT ? 0 : id;
	msq_unlock(ns, q);
	return err;
}

/* freeque: IPC_RMID (ids lock and queue lock held) */
static void freeque(struct ns *ns, struct msg_queue *q, struct wake_q *wq)
{
	struct ipc_ids *ids = &ns->hdr->ids[IPC_MSG_IDS];
	struct jframe *prev;

	/*
	 * This section commits after the ids section, whose commit bumps
	 * the queue's incarnation: a holder killed between the two commits
	 * leaves this section to be rolled forward (the queue stays removed,
	 * its sleepers told EIDRM), never back into a retired queue, maybe
	 * reused by msgget meanwhile.
	 */
	j_guard(ns, &q->incarnation, &ids->lock);
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
	j_store_at_commit(ns, &q->incarnation, q->incarnation + 1);
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
	/* the kernel's capable(CAP_SYS_RESOURCE): not over the owner user
	 * namespace, in the initial one */
	if (cmd == IPC_SET && in->msg_qbytes > (msglen_t)ns->hdr->lim.msgmnb &&
	    !has_cap_global(CAP_SYS_RESOURCE)) {
		err = -EPERM;
		goto out;
	}
	r = msq_lock(ns, q);
	if (r) {
		err = r;
		goto out;
	}
	/* the locked code takes the whole queue: stop the fast paths */
	r = msq_slow(ns, q, cmd == IPC_RMID);
	if (r) {
		j_abort(ns);
		msq_unlock(ns, q);
		err = r;
		goto out;
	}
	if (cmd == IPC_RMID) {
		freeque(ns, q, &wq);
		/* the ids section commits first (see freeque), then the
		 * locks are released in order (the kernel's order, and no
		 * out-of-order release for the journal to sort out) */
		ulock_commit_partner(ns, &ns->hdr->ids[IPC_MSG_IDS].lock);
		msq_unlock(ns, q);
		ids_unlock(ns, IPC_MSG_IDS);
		wake_up_q(ns, &wq);
		return 0;
	}
	if (in->msg_perm.uid == (uid_t)-1 || in->msg_perm.gid == (gid_t)-1 ||
	    ipc_update_perm(ns, &q->perm, &in->msg_perm)) {
		err = -EINVAL;     /* (a failed update stored nothing) */
	} else {
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

int ksys_msgctl(int msqid, int cmd, struct msqid_ds *buf)
{
	struct ns *ns = ns_get();
	struct msqid_ds ds;
	struct msginfo mi;
	int r;

	if (!ns)
		return -errno;
	if (msqid < 0 || cmd < 0)
		return -EINVAL;
	switch (cmd) {
	case IPC_INFO:
	case MSG_INFO:
		r = msgctl_info(ns, cmd, &mi);
		if (r >= 0 && uipc_copy_to_user(buf, &mi, sizeof(mi)))
			r = -EFAULT;
		return r;
	case IPC_STAT:
	case MSG_STAT:
	case MSG_STAT_ANY:
		r = msgctl_stat(ns, msqid, cmd, &ds);
		if (r >= 0 && uipc_copy_to_user(buf, &ds, sizeof(ds)))
			r = -EFAULT;
		return r;
	case IPC_SET:
		if (uipc_copy_from_user(&ds, buf, sizeof(ds)))
			return -EFAULT;
		return msgctl_down(ns, msqid, cmd, &ds);
	case IPC_RMID:
		return msgctl_down(ns, msqid, cmd, NULL);
	default:
		return -EINVAL;
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
	struct walk wk = WALK_INIT;
	int bad = 0, guard = 0;

	while (o) {
		struct msgw *w = w_at(ns, o);

		if (!w) {
			MSG_PROBLEM("msg %d: %s list leads outside the arena (%llu)\n", q->perm.id, what,
				    (unsigned long long)o);
			return bad;
		}
		if (++guard > MSGW_WALK_MAX || walk_loops(&wk, o)) {
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
/*
 * The fast path's ring (lock held): published as allocated, its counts
 * within its slots, receivers stopped only with senders stopped, and
 * running only when the ring alone can be the queue (no list, no sleeper).
 */
static int msg_check_ring(struct ns *ns, struct msg_queue *q, char *report, size_t len,
			  size_t *used)
{
	struct msgring *r = ring_at(ns, q->ring_alloc);
	int bad = 0, id = q->perm.id;
	uint64_t t, h;

	if (!q->ring_alloc)
		return 0;
	if (!r) {
		MSG_PROBLEM("msg %d: the ring %llu is not inside the arena\n", id,
			    (unsigned long long)q->ring_alloc);
		return bad;
	}
	if (q->ring && q->ring != q->ring_alloc)
		MSG_PROBLEM("msg %d: the published ring %llu is not the allocated %llu\n", id,
			    (unsigned long long)q->ring, (unsigned long long)q->ring_alloc);
	ring_snapshot(r, &t, &h);
	if (ring_count(t, h) > RING_SLOTS)
		MSG_PROBLEM("msg %d: the ring holds %u messages in %u slots\n", id,
			    ring_count(t, h), RING_SLOTS);
	if ((h & RW_SLOW) && !(t & RW_SLOW))
		MSG_PROBLEM("msg %d: the ring's receivers are stopped, its senders not\n", id);
	if (!(t & RW_SLOW) && (q->messages.first || q->receivers.first || q->senders.first))
		MSG_PROBLEM("msg %d: the ring runs while the queue has a list or sleepers\n", id);
	return bad;
}

int msg_check_obj(struct ns *ns, struct uperm *perm, char *report, size_t len, size_t *used)
{
	struct msg_queue *q = msq_of(perm);
	uint64_t n = 0, bytes = 0, freebytes = 0;
	struct walk wk = WALK_INIT, fk = WALK_INIT;
	uoff_t o, prev = 0;
	int bad = 0, guard = 0, id = perm->id;

	if (!ipc_obj_fits(ns, q, sizeof(*q))) {
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
		if (++guard > MSGM_WALK_MAX || walk_loops(&wk, o)) {
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

		if (!m || ++guard > MSGM_WALK_MAX || walk_loops(&fk, o)) {
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
	bad += msg_check_ring(ns, q, report, len, used);
	msq_unlock(ns, q);
	return bad;
}

/* ---- /proc/sysvipc/msg ---- */

/* the line of the queue at index IDX, as the kernel's /proc/sysvipc/msg
 * prints it (every queue, whatever the reader's permissions); its length,
 * or 0 when nothing lives at IDX */
int msg_proc_show(int idx, char *buf, size_t len)
{
	struct msqid_ds ds;
	int id = ksys_msgctl(idx, MSG_STAT_ANY, &ds);
	int n;

	if (id < 0)
		return 0;
	n = snprintf(buf, len,
		     "%10d %10d  %4o  %10lu %10lu %5u %5u %5u %5u %5u %5u %10llu %10llu %10llu\n",
		     ds.msg_perm.__key, id, ds.msg_perm.mode, (unsigned long)ds.__msg_cbytes,
		     (unsigned long)ds.msg_qnum, ds.msg_lspid, ds.msg_lrpid, ds.msg_perm.uid,
		     ds.msg_perm.gid, ds.msg_perm.cuid, ds.msg_perm.cgid,
		     (unsigned long long)ds.msg_stime, (unsigned long long)ds.msg_rtime,
		     (unsigned long long)ds.msg_ctime);
	return n < 0 || (size_t)n >= len ? 0 : n;
}
