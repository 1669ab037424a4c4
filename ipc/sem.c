/*
 * sem.c - System V semaphores: semget, semop/semtimedop, semctl, SEM_UNDO.
 *
 * The algorithm is the kernel's (ipc/sem.c): per-semaphore locks and pending
 * lists for single-op calls, the array lock and array-wide lists for
 * multi-op calls ("complex" ops), a hysteresis before leaving global-lock
 * mode, and a waker that performs the sleeper's operation and hands it the
 * result.  On top of it, uipc adds a lock-free fast path: each semaphore is
 * one 64-bit word (value, SLOW bit, sempid, array tag).  While SLOW is clear
 * nobody waits on the semaphore and nobody holds a lock that reads it, so an
 * uncontended semop without SEM_UNDO is a single compare-and-swap.
 * Any lock holder sets SLOW first (so the word is stable under the lock), and
 * clears it when it leaves with no waiter and no global-lock mode.
 */
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ipc/ipc.h"

/* ---- the semaphore word ---- */
#define W_VAL_MASK   0x7fffULL
#define W_SLOW       (1ULL << 15)
#define W_PID_SHIFT  16
#define W_PID_MASK   ((1ULL << 22) - 1)
#define W_TAG_SHIFT  38
#define W_TAG_MASK   ((1ULL << 25) - 1)
/* a pre-sleeper (semop_presleep) may sleep: whoever takes the bit off
 * wakes it (presleep_wake_prepare).  A stale bit costs one look at the
 * semaphore's registration. */
#define W_SLEEPERS   (1ULL << 63)

#define W_VAL(w)  ((int)((w) & W_VAL_MASK))
#define W_PID(w)  ((int)(((w) >> W_PID_SHIFT) & W_PID_MASK))
#define W_TAG(w)  ((uint32_t)(((w) >> W_TAG_SHIFT) & W_TAG_MASK))

_Static_assert(W_TAG_SHIFT + 25 == 63, "the tag ends below W_SLEEPERS");
_Static_assert(W_SLEEPERS == 1ULL << 63, "W_SLEEPERS is the sign bit (sem_word_apply)");

static inline uint64_t w_make(uint64_t old, int val, int pid)
{
	return (old & ~(W_VAL_MASK | (W_PID_MASK << W_PID_SHIFT))) | (uint64_t)(unsigned)val |
	       ((uint64_t)((unsigned)pid & W_PID_MASK) << W_PID_SHIFT);
}

#define USE_GLOBAL_LOCK_HYSTERESIS 10
#define SEM_GLOBAL_LOCK (-1)
#define LOCKS_MAGIC 0x4c4f434bu
#define QS_WAITING 1

struct qlist {
	uoff_t first, last;
};

struct sem {
	_Atomic uint64_t word;
	struct ulock lock;
	struct qlist pend_alter;
	struct qlist pend_const;
	_Atomic int16_t poster_cpu;  /* hint: CPU of the last slow-path post */
	_Atomic uint16_t presleeper; /* thread slot + 1 of the one pre-sleeper
					registered here (semop_presleep), 0 */
	_Atomic int32_t poster_tid;  /* hint: its thread */
};

_Static_assert(sizeof(struct sem) == 64, "a semaphore is one cache line");
_Static_assert(MAX_THREADS <= UINT16_MAX, "presleeper holds a thread slot + 1");

/*
 * The pre-sleeper (semop_presleep): one thread at a time sleeps on a
 * semaphore without queueing.  It registers in the semaphore's presleeper,
 * arms its own futex word (struct uthread's presleep) with a token of its
 * own, sets W_SLEEPERS with a CAS that changes the word, and sleeps on its
 * word with no timeout.  Whoever takes W_SLEEPERS off (an operation that
 * completes, a locker setting SLOW) wakes it in three steps:
 *   1. after the load its CAS is based on: its robust list's pending entry
 *      aimed at that word (proc_pending_begin), and PS_WOKEN (no owner
 *      bits) stored there;
 *   2. the CAS;
 *   3. FUTEX_WAKE, and the pending entry given back.
 * No wakeup is lost: the sleeper compares its own token, which nobody
 * else writes, so a store before its sleep makes the sleep return at once
 * and one after it comes before the wake; a sleeper that armed again after
 * the store also changed the word, so the CAS fails and the steps are
 * redone.  A death anywhere between 1 and 3 is a death with the pending
 * entry on a word without owner bits: the kernel wakes the sleeper.  So
 * the sleep needs no timeout, which cost an hrtimer set and cancelled on
 * every sleep (issue 18: 12% of a hand-off beside a busy process).
 * The program's handlers are held off from 1 to 3 (uipc_crit_enter): a
 * handler that leaves by longjmp would skip the wake.
 */
#define PS_WOKEN      0u           /* no owner bits: see above */
#define PS_OWNER_BITS 0x3fffffffu  /* the kernel's FUTEX_TID_MASK */

/* tests (tests/unit/presleep_crash.c): UIPC_TEST_KILL_IN_PRESLEEP_WAKE
 * =before-cas kills the waker after step 1, =before-wake after step 2 */
enum ps_kill { PS_KILL_NOWHERE, PS_KILL_BEFORE_CAS, PS_KILL_BEFORE_WAKE };
static enum ps_kill ps_kill_at;

__attribute__((constructor)) static void ps_kill_init(void)
{
	const char *k = getenv("UIPC_TEST_KILL_IN_PRESLEEP_WAKE");

	if (k)
		ps_kill_at = !strcmp(k, "before-cas") ? PS_KILL_BEFORE_CAS : PS_KILL_BEFORE_WAKE;
}

static void ps_kill_if(enum ps_kill where)
{
	if (unlikely(ps_kill_at == where))
		kill(getpid(), SIGKILL);
}

struct ps_wake {
	_Atomic uint32_t *word;    /* the pre-sleeper's word, once stored to */
	void *pending;             /* the pending entry as we found it */
	bool held;                 /* handlers held, pending entry aimed */
};

/* the thread slot S's presleeper names (a number from the arena, checked
 * by thread_at), NULL if none */
static inline struct uthread *presleeper_of(struct ns *ns, struct sem *s)
{
	uint32_t idx = atomic_load_explicit(&s->presleeper, memory_order_acquire);

	return idx ? thread_at(ns, idx - 1) : NULL;
}

/* step 1, before each CAS that takes W_SLEEPERS off S's word (inline in
 * the two cold callers: no frame of its own) */
static __attribute__((always_inline)) inline void
presleep_wake_prepare(struct ns *ns, struct sem *s, struct ps_wake *pw)
{
	struct uthread *t = presleeper_of(ns, s);

	/* (a registrant that left and pre-sleeps elsewhere is not woken) */
	if (!t || __atomic_load_n(&t->presleep_on, __ATOMIC_ACQUIRE) != ns_off(ns, s))
		return;
	if (!pw->held) {
		uipc_crit_enter();
		pw->held = true;
		pw->pending = proc_pending_begin(&t->presleep);
	} else if (pw->word != &t->presleep) {
		(void)proc_pending_begin(&t->presleep);   /* aimed again */
	}
	atomic_store_explicit(&t->presleep, PS_WOKEN, memory_order_release);
	pw->word = &t->presleep;
	ps_kill_if(PS_KILL_BEFORE_CAS);
}

/* step 3: the wake, noting our CPU as the poster's (a pre-sleeper decides
 * by it, wait_how, whether its poster runs on its CPU; lock-free posts
 * note it nowhere else, so that on two CPUs a stale hint would keep the
 * waiter sleeping where it should spin) */
static __attribute__((always_inline)) inline void presleep_wake_finish(struct sem *s, struct ps_wake *pw)
{
	if (pw->word) {
		ps_kill_if(PS_KILL_BEFORE_WAKE);
		atomic_store_explicit(&s->poster_cpu, (int16_t)sched_getcpu(), memory_order_relaxed);
		sys_futex_wake((uint32_t *)pw->word, 1);
	}
	if (pw->held) {
		proc_pending_end(pw->pending);
		uipc_crit_exit();
	}
}

/* Does thread slot T pre-sleep on S now (registered, and not since gone)? */
static bool presleeper_current(struct ns *ns, struct sem *s, struct uthread *t)
{
	return __atomic_load_n(&t->presleep_on, __ATOMIC_ACQUIRE) == ns_off(ns, s) &&
	       atomic_load(&t->state) == __atomic_load_n(&t->presleep_tword, __ATOMIC_RELAXED) &&
	       thread_alive(ns, t);
}

/* T is nobody's pre-sleeper any more (see presleep_register) */
static void presleep_leave_thread(struct uthread *t)
{
	if (t && __atomic_load_n(&t->presleep_on, __ATOMIC_RELAXED))
		__atomic_store_n(&t->presleep_on, (uoff_t)0, __ATOMIC_RELEASE);
}

/* ... this thread */
static void presleep_leave(struct ns *ns)
{
	presleep_leave_thread(cur_thread(ns));
}

/* An array's block starts 32 bytes before a cache line (ARENA_BLK_HDR):
 * nsems and tag come right after glock, in the line of perm's type and the
 * lock, so that a lock-free semop or semget reads two lines of the header,
 * not three. */
struct sem_array {
	struct uperm perm;
	struct ulock glock;
	int32_t nsems;
	uint32_t tag;
	uint32_t locks_magic;      /* LOCKS_MAGIC once glock is initialized */
	int32_t locks_ready;       /* semaphores whose locks are initialized */
	int64_t ctime;
	_Atomic int64_t otime;     /* max of the kernel's per-semaphore otimes */
	_Atomic int32_t use_global_lock;
	int32_t complex_count;
	struct qlist pend_alter;
	struct qlist pend_const;
	uoff_t undo_list;          /* sem_undo, linked by id_next/id_prev */
	struct sem sems[];
};

_Static_assert(offsetof(struct sem_array, tag) + sizeof(uint32_t) <= 2 * 64 - ARENA_BLK_HDR,
	       "nsems and tag in the header's first two cache lines");

struct semq {
	uoff_t next, prev;
	uoff_t undo;
	uint64_t tword;            /* the sleeper's thread slot state word: a
				      reused slot (another thread) differs */
	int64_t since;             /* CLOCK_MONOTONIC ns when it went to sleep */
	uint32_t proc;             /* process slot of the sleeper */
	uint32_t cont_gen;         /* its process's continue count then */
	uint32_t thread;           /* thread slot index of the sleeper */
	int32_t pid;
	_Atomic int32_t status;    /* QS_WAITING, then 0 or -errno (journaled) */
	_Atomic uint32_t wake;     /* futex word: set to seq by the waker after
				      its section committed */
	_Atomic uint32_t sleeping; /* the sleeper is (about to be) in FUTEX_WAIT */
	uint32_t seq;              /* which wait of its thread this is */
	uoff_t tnext;              /* the thread's other wait entries */
	uint32_t cap;              /* sops it can hold */
	uint32_t linked;           /* in a pending list (journaled) */
	uint32_t busy;             /* a call of owner_tid is using it */
	int32_t owner_tid;
	int32_t nsops;
	int32_t blocking;          /* index of the op it sleeps on */
	uint8_t alter, dupsop;
	uint16_t pad;
	struct sembuf sops[];
};

struct sem_undo {
	uoff_t proc_next;          /* the process's list (list_proc) */
	uoff_t id_next, id_prev;   /* the array's list (list_id) */
	uint32_t proc;             /* process slot */
	int32_t semid;             /* -1 once the array is gone or applied */
	int32_t nsems;
	uint32_t in_array;         /* linked in the array's list (glock) */
	int16_t semadj[];
};

_Static_assert(sizeof(struct sem_array) == SEM_OBJ_SIZE, "update SEM_OBJ_SIZE in ipc/ipc.h");

int sem_array_bytes(int nsems)
{
	return (int)(sizeof(struct sem_array) + (size_t)nsems * sizeof(struct sem));
}

/* ---- what the arena says, checked before use ----
 *
 * Any member of a shared namespace may rewrite any of these fields at any
 * moment (principle 4: a hostile arena can make calls fail, never make a
 * process read or write outside it).  So each is read once, checked, and
 * that checked copy bounds the loops and indexes that follow: never a
 * second reading.
 */

/* the bytes of an array of N semaphores */
static inline uint64_t sem_bytes(int32_t n)
{
	return sizeof(struct sem_array) + (uint64_t)n * sizeof(struct sem);
}

static __attribute__((noinline, cold)) int sem_bad_count(struct ns *ns)
{
	ns_corrupt(ns, "semaphore array of a bad size");
	return 0;
}

/*
 * How many semaphores SMA holds, as far as this process may trust it: its
 * nsems read once, at least 1, the whole array inside the mapping.  0 if
 * not: the caller treats the array as gone (EIDRM).  The lookup
 * (sem_obtain_count) checks the array against its block too, once a call;
 * the helpers that read the count again afterwards (another member may
 * have rewritten it meanwhile) check it against the mapping, which is
 * what keeps their reads and writes inside the arena, at a few
 * instructions each.
 */
static inline int sem_count(struct ns *ns, struct sem_array *sma)
{
	int32_t n = __atomic_load_n(&sma->nsems, __ATOMIC_RELAXED);

	if (likely(n >= 1 && (uint64_t)((const char *)sma - ns->base) + sem_bytes(n) <= ns->size))
		return n;
	return sem_bad_count(ns);
}

/* semaphore NUM of an array of N (sem_count), or NULL */
static struct sem *sem_at(struct sem_array *sma, int n, unsigned num)
{
	return num < (unsigned)n ? &sma->sems[num] : NULL;
}

/* the sops of wait entry Q, their count read once into *NSOPS and checked
 * against its block (1..65536); NULL if they are not sane */
static struct sembuf *q_ops(struct ns *ns, struct semq *q, int *nsops)
{
	int32_t n = __atomic_load_n(&q->nsops, __ATOMIC_RELAXED);

	if (n < 1 || n > 65536 ||
	    !ns_ptr(ns, ns_off(ns, q), sizeof(*q) + (size_t)n * sizeof(struct sembuf)))
		return NULL;
	*nsops = n;
	return q->sops;
}

/* the op Q sleeps on (its blocking index, checked), or NULL */
static struct sembuf *q_blocking_op(struct ns *ns, struct semq *q)
{
	int nsops, b = __atomic_load_n(&q->blocking, __ATOMIC_RELAXED);
	struct sembuf *sops = q_ops(ns, q, &nsops);

	return sops && b >= 0 && b < nsops ? &sops[b] : NULL;
}

/* ---- small helpers ---- */

static struct sem_array *sma_of(struct uperm *p)
{
	return (struct sem_array *)p;
}

static struct semq *q_at(struct ns *ns, uoff_t off)
{
	struct semq *q = off ? ns_ptr_aligned(ns, off, sizeof(struct semq)) : NULL;
	int nsops;

	return q && q_ops(ns, q, &nsops) ? q : NULL;
}

/* undo entry OFF with its adjustment count read once into *N and checked
 * against the mapping; NULL (and *N 0) if it is not sane */
static inline struct sem_undo *un_at_n(struct ns *ns, uoff_t off, int *n)
{
	struct sem_undo *u = off ? ns_ptr_aligned(ns, off, sizeof(struct sem_undo)) : NULL;
	int32_t k = u ? __atomic_load_n(&u->nsems, __ATOMIC_RELAXED) : 0;

	if (u && (k < 0 || !ns_ptr(ns, off, sizeof(*u) + (size_t)k * 2)))
		u = NULL;
	*n = u ? k : 0;
	return u;
}

static inline struct sem_undo *un_at(struct ns *ns, uoff_t off)
{
	int n;

	return un_at_n(ns, off, &n);
}

/*
 * Mark undo entry U spent (semid -1) when the array lock's current section
 * commits, not before: the mark is read under the entry's process lock
 * (prune_undo frees spent entries), which does not wait for the array
 * lock's recovery.  Seen before the commit of a section whose holder was
 * then killed, it let a reaper free an entry that the rollback put back
 * on the array's list, its adjustment never applied.  (semid shares an
 * aligned 8-byte word with proc, which does not change.)
 */
_Static_assert(offsetof(struct sem_undo, proc) % 8 == 0 &&
	       offsetof(struct sem_undo, semid) == offsetof(struct sem_undo, proc) + 4,
	       "sem_undo: proc and semid must share an 8-byte word");

static void un_mark_spent_at_commit(struct ns *ns, struct sem_undo *u)
{
	uint64_t w = (uint64_t)__atomic_load_n(&u->proc, __ATOMIC_RELAXED) |
		     ((uint64_t)(uint32_t)-1 << 32);

	j_store_at_commit(ns, (uint64_t *)(void *)&u->proc, w);
}

/* an undo entry's adjustment count, read once and checked against the
 * arena (0 if it does not fit) */
static int un_count(struct ns *ns, struct sem_undo *u)
{
	int32_t n = __atomic_load_n(&u->nsems, __ATOMIC_RELAXED);

	return n > 0 && ns_ptr(ns, ns_off(ns, u), sizeof(*u) + (size_t)n * 2) ? n : 0;
}

static void list_add_tail(struct ns *ns, struct qlist *l, struct semq *q)
{
	uoff_t qo = ns_off(ns, q);
	struct semq *last = q_at(ns, l->last);

	J_SET(ns, q->next, (uoff_t)0);
	J_SET(ns, q->prev, l->last);
	J_SET(ns, q->linked, 1u);
	if (last)
		J_SET(ns, last->next, qo);
	else
		J_SET(ns, l->first, qo);
	J_SET(ns, l->last, qo);
}

static void list_del(struct ns *ns, struct qlist *l, struct semq *q)
{
	struct semq *prev = q_at(ns, q->prev), *next = q_at(ns, q->next);

	if (prev)
		J_SET(ns, prev->next, q->next);
	else
		J_SET(ns, l->first, q->next);
	if (next)
		J_SET(ns, next->prev, q->prev);
	else
		J_SET(ns, l->last, q->prev);
	J_SET(ns, q->next, (uoff_t)0);
	J_SET(ns, q->prev, (uoff_t)0);
	J_SET(ns, q->linked, 0u);
}

static bool list_empty(const struct qlist *l)
{
	return l->first == 0;
}

/* the semaphore a single-op entry Q waits on (checked), or NULL */
static struct sem *q_sem(struct ns *ns, struct sem_array *sma, struct semq *q)
{
	int nsops;
	struct sembuf *sops = q_ops(ns, q, &nsops);

	return sops ? sem_at(sma, sem_count(ns, sma), __atomic_load_n(&sops[0].sem_num,
								     __ATOMIC_RELAXED)) : NULL;
}

/* which list holds Q (S: its semaphore, q_sem): the kernel knows by
 * q->list; we keep it derivable (NULL: a single alter op, on its
 * semaphore's list or the array's) */
static struct qlist *q_list(struct sem_array *sma, struct semq *q, struct sem *s)
{
	if (q->nsops > 1)
		return q->alter ? &sma->pend_alter : &sma->pend_const;
	if (!s)
		return &sma->pend_alter;   /* a corrupt entry: unlinked from there */
	if (!q->alter)
		return &s->pend_const;
	/* a single alter op sleeps on its semaphore unless complex ops were
	 * pending when it went to sleep (then on the array, see merge) */
	return NULL;
}

/* the longest wait list a walk follows: more entries than a namespace's
 * threads can have queued means a list that loops (a corrupt arena) */
#define SEMQ_WALK_MAX (MAX_THREADS * 4)

static bool q_on_list(struct ns *ns, struct qlist *l, struct semq *q)
{
	uoff_t qo = ns_off(ns, q);
	uoff_t o = l->first;
	int guard = 0;

	struct walk w = WALK_INIT;

	while (o && guard++ < SEMQ_WALK_MAX && !walk_loops(&w, o)) {
		if (o == qo)
			return true;
		struct semq *x = q_at(ns, o);

		if (!x)
			break;
		o = x->next;
	}
	return false;
}

static struct qlist *q_find_list(struct ns *ns, struct sem_array *sma, struct semq *q)
{
	struct sem *s = q_sem(ns, sma, q);
	struct qlist *l = q_list(sma, q, s);

	if (l)
		return l;
	l = &s->pend_alter;
	return q_on_list(ns, l, q) ? l : &sma->pend_alter;
}

static void unlink_queue(struct ns *ns, struct sem_array *sma, struct semq *q)
{
	list_del(ns, q_find_list(ns, sma, q), q);
	if (q->nsops > 1)
		J_SET(ns, sma->complex_count, sma->complex_count - 1);
}

static void set_word(struct ns *ns, struct sem *s, uint64_t w)
{
	j_store_8(ns, (void *)&s->word, w);
}

/* (S's lock held) set S's SLOW bit, sending its pre-sleeper to queue
 * behind us: false if it was set already, else *OLD is the word it
 * replaced */
static bool word_take_slow(struct ns *ns, struct sem *s, uint64_t *old)
{
	struct ps_wake pw = { 0 };
	uint64_t w = atomic_load(&s->word);
	bool took = false;

	/* under the lock only lock-free CASes race with us: a CAS loop, so
	 * that none of theirs is lost */
	while (!(w & W_SLOW)) {
		if (w & W_SLEEPERS)
			presleep_wake_prepare(ns, s, &pw);
		if (atomic_compare_exchange_weak(&s->word, &w, (w | W_SLOW) & ~W_SLEEPERS)) {
			took = true;
			break;
		}
	}
	if (pw.held)
		presleep_wake_finish(s, &pw);
	*old = w;
	return took;
}

static void word_or_slow(struct ns *ns, struct sem *s)
{
	struct jframe *f;
	struct jentry *e;
	uint64_t w;

	if (!word_take_slow(ns, s, &w))
		return;
	/* journaling the word we saw */
	f = j_top(ns);
	e = f ? j_slot(ns, f, atomic_load(&f->n), true) : NULL;
	if (e)
		j_push(f, e, ns_off(ns, (void *)&s->word) | (8ULL << 56), w);
}

static bool sem_has_waiters(struct sem *s)
{
	return !list_empty(&s->pend_alter) || !list_empty(&s->pend_const);
}

/* ---- locking (the kernel's sem_lock/sem_unlock, plus SLOW bits) ---- */

/* (array lock held) 0, or -errno: a semaphore's lock could not be had
 * (its wait bounded, see core/lockwait), so the fast path may still run
 * on it; the caller gives the array lock back (its section rolled back) */
static int complexmode_enter(struct ns *ns, struct sem_array *sma)
{
	uint64_t w;
	int i, n, r;

	if (atomic_load(&sma->use_global_lock) > 0) {
		J_SET(ns, *(int32_t *)&sma->use_global_lock, USE_GLOBAL_LOCK_HYSTERESIS);
		return 0;
	}
	n = sem_count(ns, sma);
	if (!n)
		return -EIDRM;
	J_SET(ns, *(int32_t *)&sma->use_global_lock, USE_GLOBAL_LOCK_HYSTERESIS);
	atomic_thread_fence(memory_order_seq_cst);
	for (i = 0; i < n; i++) {
		struct sem *s = &sma->sems[i];

		/* wait out a per-semaphore holder, then stop the fast path */
		r = ulock_acquire(ns, &s->lock);
		if (r)
			return r == SEM_GLOBAL_LOCK ? -EIDRM : r;
		(void)word_take_slow(ns, s, &w);
		ulock_release(ns, &s->lock);
	}
	return 0;
}

/*
 * (array lock held) Count the array lock's mode down; true: this section
 * ends it, and its caller gives the semaphores back to their own locks
 * once the section has committed (sem_unlock).
 */
static bool complexmode_tryleave(struct ns *ns, struct sem_array *sma)
{
	int g = atomic_load(&sma->use_global_lock);

	if (sma->complex_count)
		return false;
	if (g == 1)
		return true;
	if (g > 1)
		J_SET(ns, *(int32_t *)&sma->use_global_lock, g - 1);
	return false;
}

/* (S's lock held, its section committed) let lock-free operations at S's
 * word again: nobody else changes a word whose SLOW bit is set */
static void word_clear_slow(struct sem *s)
{
	uint64_t w = atomic_load(&s->word);

	while ((w & W_SLOW) && !atomic_compare_exchange_weak(&s->word, &w, w & ~W_SLOW))
		;
}

/* Move sleeping single alter ops back to their semaphores (kernel order). */
static void unmerge_queues(struct ns *ns, struct sem_array *sma)
{
	int guard = 0;

	if (sma->complex_count)
		return;
	while (!list_empty(&sma->pend_alter)) {
		struct semq *q = q_at(ns, sma->pend_alter.first);
		struct sem *s = q ? q_sem(ns, sma, q) : NULL;

		if (!s || guard++ >= SEMQ_WALK_MAX) {
			ns_corrupt(ns, "semaphore queue");
			J_SET(ns, sma->pend_alter.first, (uoff_t)0);
			J_SET(ns, sma->pend_alter.last, (uoff_t)0);
			break;
		}
		list_del(ns, &sma->pend_alter, q);
		list_add_tail(ns, &s->pend_alter, q);
	}
}

/* Move every per-semaphore alter sleeper to the array list (kernel order:
 * each semaphore's list is spliced in front, semaphore 0 first). */
static void merge_queues(struct ns *ns, struct sem_array *sma)
{
	int n = sem_count(ns, sma);

	for (int i = 0; i < n; i++) {
		struct qlist *l = &sma->sems[i].pend_alter;
		struct semq *first = q_at(ns, l->first), *last = q_at(ns, l->last);
		struct semq *gfirst = q_at(ns, sma->pend_alter.first);

		if (!first || !last)
			continue;
		J_SET(ns, last->next, sma->pend_alter.first);
		if (gfirst)
			J_SET(ns, gfirst->prev, l->last);
		else
			J_SET(ns, sma->pend_alter.last, l->last);
		J_SET(ns, sma->pend_alter.first, l->first);
		J_SET(ns, l->first, (uoff_t)0);
		J_SET(ns, l->last, (uoff_t)0);
	}
}

static int lock_err(int r)
{
	/* SEM_GLOBAL_LOCK is -1: keep errors distinct from it */
	return r == SEM_GLOBAL_LOCK ? -EIDRM : r;
}

/*
 * The kernel's sem_lock for one semaphore: its own lock, unless complex
 * operations are around (use_global_lock), then the array lock.  A writer
 * (SET_SLOW) also turns the semaphore's lock-free path off while it holds
 * the lock; a reader (GETVAL, GETPID) leaves it on.
 */
static int lock_one_sem(struct ns *ns, struct sem_array *sma, int semnum, bool set_slow)
{
	struct sem *s = &sma->sems[semnum];
	int r;

	for (;;) {
		if (!atomic_load_explicit(&sma->use_global_lock, memory_order_relaxed)) {
			r = ulock_acquire(ns, &s->lock);
			if (r)
				return lock_err(r);
			if (!atomic_load_explicit(&sma->use_global_lock, memory_order_acquire)) {
				if (set_slow)
					word_or_slow(ns, s);
				return semnum;
			}
			ulock_release(ns, &s->lock);
		}
		r = ulock_acquire(ns, &sma->glock);
		if (r)
			return lock_err(r);
		if (atomic_load(&sma->use_global_lock))
			return SEM_GLOBAL_LOCK;
		ulock_release(ns, &sma->glock);
	}
}

static int sem_lock(struct ns *ns, struct sem_array *sma, struct sembuf *sops, int nsops)
{
	int r;

	if (nsops != 1) {
		r = ulock_acquire(ns, &sma->glock);
		if (r)
			return lock_err(r);
		r = complexmode_enter(ns, sma);
		if (r) {
			j_abort(ns);
			ulock_release(ns, &sma->glock);
			return lock_err(r);
		}
		return SEM_GLOBAL_LOCK;
	}
	return lock_one_sem(ns, sma, sops->sem_num, true);
}

/*
 * What lets others in without our lock (use_global_lock 0: the semaphores'
 * own locks; a clear SLOW bit: lock-free operations) is stored only after
 * the section has committed.  Stored before, it let them commit changes to
 * words that the section's rollback then overwrote with the words it had
 * journaled, if we were killed before our commit: a semop taken under a
 * semaphore's lock, or made lock-free, was lost while its SEM_UNDO
 * adjustment stayed (the chaos tests' extra token).  Killed between the
 * commit and these stores, we leave the array lock's mode or a SLOW bit
 * on, which is safe: the next section on the array lock ends the mode, the
 * semaphore's next locked operation clears its bit.  The mode's end leaves
 * every SLOW bit set for the same reason (clearing one while a semaphore's
 * own locker may already be in would let lock-free operations race it):
 * each semaphore's next operation clears its own, under its lock.
 */
static void sem_unlock(struct ns *ns, struct sem_array *sma, int locknum)
{
	if (locknum == SEM_GLOBAL_LOCK) {
		unmerge_queues(ns, sma);
		if (complexmode_tryleave(ns, sma)) {
			ulock_commit(ns, &sma->glock);
			atomic_store_explicit(&sma->use_global_lock, 0, memory_order_release);
		}
		ulock_release(ns, &sma->glock);
	} else {
		struct sem *s = &sma->sems[locknum];

		if (!sem_has_waiters(s) && !atomic_load(&sma->use_global_lock)) {
			ulock_commit(ns, &s->lock);
			word_clear_slow(s);
		}
		ulock_release(ns, &s->lock);
	}
}

static int sem_lock_all(struct ns *ns, struct sem_array *sma)
{
	return sem_lock(ns, sma, NULL, -1);
}

/*
 * Lock semaphore SEMNUM only to read its word (GETVAL, GETPID): the lock a
 * simple semop takes, which shuts out every locked writer of it (a complex
 * operation makes it fall back to the array lock), without the SLOW bit:
 * a lock-free semop's change is committed the moment it is made, so it
 * need not be held off.  The kernel takes the array lock here, which
 * gives the same answer; this section makes no change at all, so it needs
 * no journal frame (see attach_frame in lock.c).
 */
static int sem_lock_read(struct ns *ns, struct sem_array *sma, int semnum)
{
	return lock_one_sem(ns, sma, semnum, false);
}

/* after sem_lock_read: nothing changed, nothing to hand back (queues,
 * hysteresis, SLOW bits are a writer's business) */
static void sem_unlock_read(struct ns *ns, struct sem_array *sma, int locknum)
{
	ulock_release(ns, locknum == SEM_GLOBAL_LOCK ? &sma->glock : &sma->sems[locknum].lock);
}

/* ---- wake queue: futex wakes issued after the locks are dropped ---- */

/*
 * Sleepers completed during a section are told after it committed: their
 * wake word gets the sequence number of the wait we completed (a wait entry
 * belongs to a thread and is reused, so a late store for an older wait is
 * ignored), and FUTEX_WAKE is only needed when the sleeper sleeps.
 */
struct wake_q {
	int n;
	struct {
		uoff_t q;
		uint32_t seq;
	} e[64];
	bool overflow;
};

/* an empty wake_q: N and OVERFLOW only (zeroing its 64 entries, 1 KiB with
 * rep stos, cost more than a hand-off's other work on its post path) */
static inline void wake_q_init(struct wake_q *wq)
{
	wq->n = 0;
	wq->overflow = false;
}

static void wake_q_add(struct wake_q *wq, struct ns *ns, struct semq *q)
{
	if (wq->n < 64) {
		wq->e[wq->n].q = ns_off(ns, q);
		wq->e[wq->n].seq = q->seq;
		wq->n++;
	} else {
		wq->overflow = true;
	}
}

static void wake_up_q(struct ns *ns, struct wake_q *wq, struct sem_array *sma)
{
	for (int i = 0; i < wq->n; i++) {
		struct semq *q = ns_ptr(ns, wq->e[i].q, sizeof(*q));

		if (!q)
			continue;
		atomic_store(&q->wake, wq->e[i].seq);
		if (atomic_load(&q->sleeping))
			sys_futex_wake(&q->wake, 1);
	}
	(void)sma;
	/* overflowed wakes: those sleepers notice at their next time slice */
}

static void wake_up_sem_queue_prepare(struct ns *ns, struct semq *q, int error,
				      struct wake_q *wq)
{
	J_SET(ns, *(int32_t *)&q->status, error);
	wake_q_add(wq, ns, q);
}

/* ---- perform_atomic_semop ---- */

static inline int16_t *undo_adj(struct ns *ns, uoff_t undo, int semnum)
{
	int n;
	struct sem_undo *u = un_at_n(ns, undo, &n);

	return u && semnum < n ? &u->semadj[semnum] : NULL;
}

/*
 * Try Q's operations on SMA: 0 done, 1 must sleep, <0 error.  Values are
 * read and written through the semaphore words, which are stable because
 * the caller holds the lock that covers them (and SLOW is set).
 */
static int perform_atomic_semop(struct ns *ns, struct sem_array *sma, struct sembuf *sops,
				int nsops, uoff_t undo, int pid, int *blocking, bool dupsop)
{
	int i;

	if (!dupsop) {
		for (i = 0; i < nsops; i++) {
			struct sembuf *sop = &sops[i];
			int val = W_VAL(atomic_load(&sma->sems[sop->sem_num].word));
			int r;

			if (!sop->sem_op && val)
				goto would_block;
			r = val + sop->sem_op;
			if (r < 0)
				goto would_block;
			if (r > SEMVMX_MAX)
				return -ERANGE;
			if (sop->sem_flg & SEM_UNDO) {
				int16_t *adj = undo_adj(ns, undo, sop->sem_num);
				int u = (adj ? *adj : 0) - sop->sem_op;

				if (u < -SEMAEM_MAX - 1 || u > SEMAEM_MAX)
					return -ERANGE;
			}
			continue;
would_block:
			*blocking = i;
			return (sop->sem_flg & IPC_NOWAIT) ? -EAGAIN : 1;
		}
		for (i = 0; i < nsops; i++) {
			struct sembuf *sop = &sops[i];
			struct sem *s = &sma->sems[sop->sem_num];
			uint64_t w = atomic_load(&s->word);

			if (sop->sem_flg & SEM_UNDO) {
				int16_t *adj = undo_adj(ns, undo, sop->sem_num);

				if (adj)
					J_SET(ns, *adj, (int16_t)(*adj - sop->sem_op));
			}
			set_word(ns, s, w_make(w, W_VAL(w) + sop->sem_op, pid));
		}
		return 0;
	}
	/* the same semaphore more than once: apply in order, roll back on failure */
	{
		int result = 0;

		for (i = 0; i < nsops; i++) {
			struct sembuf *sop = &sops[i];
			struct sem *s = &sma->sems[sop->sem_num];
			uint64_t w = atomic_load(&s->word);
			int r = W_VAL(w);

			if (!sop->sem_op && r)
				goto dup_block;
			r += sop->sem_op;
			if (r < 0)
				goto dup_block;
			if (r > SEMVMX_MAX) {
				result = -ERANGE;
				goto dup_undo;
			}
			if (sop->sem_flg & SEM_UNDO) {
				int16_t *adj = undo_adj(ns, undo, sop->sem_num);
				int u = (adj ? *adj : 0) - sop->sem_op;

				if (u < -SEMAEM_MAX - 1 || u > SEMAEM_MAX) {
					result = -ERANGE;
					goto dup_undo;
				}
				if (adj)
					J_SET(ns, *adj, (int16_t)u);
			}
			set_word(ns, s, w_make(w, r, W_PID(w)));
		}
		for (i = nsops - 1; i >= 0; i--) {
			struct sem *s = &sma->sems[sops[i].sem_num];
			uint64_t w = atomic_load(&s->word);

			set_word(ns, s, w_make(w, W_VAL(w), pid));
		}
		return 0;
dup_block:
		*blocking = i;
		result = (sops[i].sem_flg & IPC_NOWAIT) ? -EAGAIN : 1;
dup_undo:
		for (i = i - 1; i >= 0; i--) {
			struct sembuf *sop = &sops[i];
			struct sem *s = &sma->sems[sop->sem_num];
			uint64_t w = atomic_load(&s->word);

			set_word(ns, s, w_make(w, W_VAL(w) - sop->sem_op, W_PID(w)));
			if (sop->sem_flg & SEM_UNDO) {
				int16_t *adj = undo_adj(ns, undo, sop->sem_num);

				if (adj)
					J_SET(ns, *adj, (int16_t)(*adj + sop->sem_op));
			}
		}
		return result;
	}
}

/*
 * Perform sleeper Q's operations (array lock or its semaphore's held).
 * Its sops are in the arena, where another member may rewrite them while
 * we look: they are copied out first, each semaphore number checked
 * against the array's checked count, and the copy is what runs.  A
 * corrupt entry fails with EIDRM (its sleeper is told so).
 */
static int perform_q(struct ns *ns, struct sem_array *sma, struct semq *q)
{
	struct sembuf local[16], *sops = local;
	int nsops, n = sem_count(ns, sma), r, blocking = q->blocking;
	struct sembuf *qops = q_ops(ns, q, &nsops);

	if (!qops || !n)
		return -EIDRM;
	if (nsops > 16) {
		sops = malloc((size_t)nsops * sizeof(*sops));
		if (!sops)
			return -ENOMEM;
	}
	memcpy(sops, qops, (size_t)nsops * sizeof(*sops));
	r = 0;
	for (int i = 0; i < nsops && !r; i++)
		if (sops[i].sem_num >= (unsigned)n)
			r = -EIDRM;
	if (!r)
		r = perform_atomic_semop(ns, sma, sops, nsops, q->undo, q->pid, &blocking,
					 q->dupsop);
	if (r > 0 && blocking != q->blocking)
		J_SET(ns, q->blocking, blocking);
	if (sops != local)
		free(sops);
	return r;
}

/* ---- waking (update_queue and friends) ---- */

/*
 * A sleeper that died (SIGKILL while blocked) must not consume a value: the
 * kernel would have taken it off the queue.  Drop it.
 */
static bool q_sleeper_alive(struct ns *ns, struct semq *q)
{
	struct uthread *t;

	if (q->thread >= MAX_THREADS)
		return false;
	t = ns_ptr(ns, ns->lay.threads + (uoff_t)q->thread * sizeof(*t), sizeof(*t));
	return t && atomic_load(&t->state) == q->tword && thread_alive(ns, t);
}

/* Is the sleeper's thread stopped (SIGSTOP, SIGTSTP, ...)?  Reads /proc. */
static bool task_stopped(int pid, int tid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
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

static bool q_sleeper_stopped(struct semq *q)
{
	return task_stopped(q->pid, SLOT_ID(q->tword));
}

/*
 * The kernel takes a sleeper off the queue when it is stopped: its semop
 * returns EINTR once it continues.  uipc cannot run code in a stopped
 * process, so whoever looks at the queue does it for it: GETNCNT/GETZCNT
 * always, a waker for sleepers that have slept longer than 10 ms (a stop
 * lasts longer than that; checking every sleeper would cost a /proc read
 * per wakeup).
 */
#define STOP_CHECK_AFTER_NS 10000000LL

static bool q_was_continued(struct ns *ns, struct semq *q)
{
	struct uproc *p = proc_at(ns, q->proc);

	return p && atomic_load(&p->cont_gen) != q->cont_gen;
}

static int64_t mono_coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static bool q_take_stopped(struct ns *ns, struct sem_array *sma, struct semq *q, bool always,
			   struct wake_q *wq)
{
	if (!q_was_continued(ns, q)) {
		if (!always && mono_coarse_ns() - q->since < STOP_CHECK_AFTER_NS)
			return false;
		if (!q_sleeper_stopped(q))
			return false;
	}
	unlink_queue(ns, sma, q);
	J_SET(ns, *(int32_t *)&q->status, -EINTR);
	if (wq)
		wake_q_add(wq, ns, q);
	return true;
}

/*
 * Has the sleeper's process been reaped already?  Its SEM_UNDO entry is then
 * spent (sem_exit_proc, under the array lock, which excludes us).  The
 * kernel marks a dying process's alive words one thread after the other, so
 * a reaper can see the process dead (the word of the thread that stands for
 * it) while the sleeper still looks alive (its own word, marked a moment
 * later): completing the
 * sleeper's operation then would add to an adjustment nobody applies, and
 * the value it took would be lost.
 */
static bool q_undo_spent(struct ns *ns, struct sem_array *sma, struct semq *q)
{
	struct sem_undo *u;

	if (!q->undo)
		return false;
	u = un_at(ns, q->undo);
	/* (an entry freed since may be another process's now, even for the
	 * same array: it must still be the sleeper's process's) */
	return !u || u->semid != sma->perm.id || !u->in_array || u->proc != q->proc;
}

static bool q_sleeper_gone(struct ns *ns, struct sem_array *sma, struct semq *q,
			   struct wake_q *wq)
{
	if (q_sleeper_alive(ns, q) && !q_undo_spent(ns, sma, q))
		return q_take_stopped(ns, sma, q, false, wq);
	/* the entry belongs to the dead thread's slot: unlink it only */
	unlink_queue(ns, sma, q);
	return true;
}

/* the pending list of semaphore SEMNUM (-1: the array's), ALTER 0 const,
 * 1 alter, of an array of N (sem_count); NULL for a semaphore it does not
 * hold.  The walkers below take N from their caller: sem_count once per
 * wakeup pass, not once per semaphore. */
static struct qlist *pend_list(struct sem_array *sma, int n, int semnum, int alter)
{
	struct sem *s;

	if (semnum == -1)
		return alter ? &sma->pend_alter : &sma->pend_const;
	s = sem_at(sma, n, (unsigned)semnum);
	return !s ? NULL : alter ? &s->pend_alter : &s->pend_const;
}

static int wake_const_ops(struct ns *ns, struct sem_array *sma, int n, int semnum,
			  struct wake_q *wq)
{
	struct qlist *l = pend_list(sma, n, semnum, 0);
	uoff_t o = l ? l->first : 0;
	int completed = 0, guard = 0;
	struct walk w = WALK_INIT;

	while (o && guard++ < SEMQ_WALK_MAX && !walk_loops(&w, o)) {
		struct semq *q = q_at(ns, o);
		int err;

		if (!q)
			break;
		o = q->next;
		if (q_sleeper_gone(ns, sma, q, wq))
			continue;
		err = perform_q(ns, sma, q);
		if (err > 0)
			continue;
		unlink_queue(ns, sma, q);
		wake_up_sem_queue_prepare(ns, q, err, wq);
		if (err == 0)
			completed = 1;
	}
	return completed;
}

/* SOPS: checked against the array (the caller's own, or a copy) */
static int do_smart_wakeup_zero(struct ns *ns, struct sem_array *sma, int n, struct sembuf *sops,
				int nsops, struct wake_q *wq)
{
	int completed = 0, got_zero = 0, i;

	if (sops) {
		for (i = 0; i < nsops; i++) {
			struct sem *s = sem_at(sma, n, sops[i].sem_num);

			if (s && W_VAL(atomic_load(&s->word)) == 0) {
				got_zero = 1;
				completed |= wake_const_ops(ns, sma, n, sops[i].sem_num, wq);
			}
		}
	} else {
		for (i = 0; i < n; i++) {
			if (W_VAL(atomic_load(&sma->sems[i].word)) == 0) {
				got_zero = 1;
				completed |= wake_const_ops(ns, sma, n, i, wq);
			}
		}
	}
	if (got_zero)
		completed |= wake_const_ops(ns, sma, n, -1, wq);
	return completed;
}

static int check_restart(struct sem_array *sma, int nsops)
{
	if (!list_empty(&sma->pend_alter))
		return 1;
	if (nsops > 1)
		return 1;
	return 0;
}

/* a completed sleeper Q's operations, copied out of the arena for the zero
 * waits they may have completed (do_smart_wakeup_zero checks each) */
static void wakeup_zero_after(struct ns *ns, struct sem_array *sma, int n, struct semq *q,
			      struct wake_q *wq)
{
	struct sembuf local[16];
	int nsops;
	struct sembuf *qops = q_ops(ns, q, &nsops);

	if (!qops)
		return;
	if (nsops > 16) {
		/* the array-wide walk covers every semaphore */
		do_smart_wakeup_zero(ns, sma, n, NULL, 0, wq);
		return;
	}
	memcpy(local, qops, (size_t)nsops * sizeof(*local));
	do_smart_wakeup_zero(ns, sma, n, local, nsops, wq);
}

static int update_queue(struct ns *ns, struct sem_array *sma, int n, int semnum,
			struct wake_q *wq)
{
	struct qlist *l = pend_list(sma, n, semnum, 1);
	struct sem *s = semnum == -1 ? NULL : sem_at(sma, n, (unsigned)semnum);
	int completed = 0, steps = 0;
	uoff_t o;

	if (!l)
		return 0;
again:
	o = l->first;
	/* every restart follows a sleeper taken off: one budget for all */
	struct walk w = WALK_INIT;

	while (o && steps++ < SEMQ_WALK_MAX && !walk_loops(&w, o)) {
		struct semq *q = q_at(ns, o);
		int err, restart, nsops = q ? q->nsops : 0;

		if (!q)
			break;
		o = q->next;
		if (s && W_VAL(atomic_load(&s->word)) == 0)
			break;
		if (q_sleeper_gone(ns, sma, q, wq))
			continue;
		err = perform_q(ns, sma, q);
		if (err > 0)
			continue;
		unlink_queue(ns, sma, q);
		if (err) {
			restart = 0;
		} else {
			completed = 1;
			wakeup_zero_after(ns, sma, n, q, wq);
			restart = check_restart(sma, nsops);
		}
		wake_up_sem_queue_prepare(ns, q, err, wq);
		if (restart)
			goto again;
	}
	return completed;
}

static void set_semotime(struct ns *ns, struct sem_array *sma)
{
	int64_t now = ipc_now();

	(void)ns;
	/* not journaled: the kernel's otime is advisory and monotonic */
	if (atomic_load_explicit(&sma->otime, memory_order_relaxed) != now)
		atomic_store_explicit(&sma->otime, now, memory_order_relaxed);
}

static void do_smart_update(struct ns *ns, struct sem_array *sma, struct sembuf *sops,
			    int nsops, int otime, struct wake_q *wq)
{
	int i, n = sem_count(ns, sma);

	otime |= do_smart_wakeup_zero(ns, sma, n, sops, nsops, wq);
	if (!list_empty(&sma->pend_alter)) {
		otime |= update_queue(ns, sma, n, -1, wq);
	} else if (!sops) {
		for (i = 0; i < n; i++)
			otime |= update_queue(ns, sma, n, i, wq);
	} else {
		for (i = 0; i < nsops; i++)
			if (sops[i].sem_op > 0)
				otime |= update_queue(ns, sma, n, sops[i].sem_num, wq);
	}
	if (otime)
		set_semotime(ns, sma);
}

/* ---- GETNCNT / GETZCNT ---- */

static int check_qop(struct ns *ns, struct semq *q, int semnum, bool count_zero)
{
	struct sembuf *sop = q_blocking_op(ns, q);
	struct sembuf op;

	if (!sop)
		return 0;
	op = *sop;
	if (op.sem_num != semnum)
		return 0;
	if (count_zero && op.sem_op == 0)
		return 1;
	if (!count_zero && op.sem_op < 0)
		return 1;
	return 0;
}

static int count_list(struct ns *ns, struct sem_array *sma, struct qlist *l, int semnum,
		      bool count_zero, bool all)
{
	int n = 0, guard = 0;
	uoff_t o = l->first;

	struct walk w = WALK_INIT;

	while (o && guard++ < SEMQ_WALK_MAX && !walk_loops(&w, o)) {
		struct semq *q = q_at(ns, o);

		if (!q)
			break;
		o = q->next;
		/* a sleeper that died or was stopped is no longer waiting */
		if (q_sleeper_alive(ns, q) && !q_undo_spent(ns, sma, q) &&
		    !q_take_stopped(ns, sma, q, true, NULL))
			n += all ? 1 : check_qop(ns, q, semnum, count_zero);
	}
	return n;
}

/* GETNCNT's count of S's pre-sleeper: one whose operation the value
 * forbids, as the kernel counts its queued sleeper (an operation that
 * completes and allows it took the kernel's off the queue), unless it is
 * stopped (the kernel's is then off the queue too, see below) */
static int presleeper_waits(struct ns *ns, struct sem *s)
{
	struct uthread *t = presleeper_of(ns, s);
	/* (the op is read from the arena: summed in 64 bits) */
	int64_t after = t ? (int64_t)W_VAL(atomic_load(&s->word)) +
				__atomic_load_n(&t->presleep_op, __ATOMIC_RELAXED) : 0;

	return t && presleeper_current(ns, s, t) && after < 0 && !task_stopped(t->pid, t->tid);
}

/* SEMNUM: checked against the array by the caller */
static int count_semcnt(struct ns *ns, struct sem_array *sma, int semnum, bool count_zero)
{
	struct qlist *l = pend_list(sma, sem_count(ns, sma), semnum, !count_zero);
	int n;

	if (!l)
		return -EIDRM;
	n = count_list(ns, sma, l, semnum, count_zero, true);
	n += count_list(ns, sma, &sma->pend_alter, semnum, count_zero, false);
	if (!count_zero)
		n += presleeper_waits(ns, &sma->sems[semnum]);
	if (count_zero)
		n += count_list(ns, sma, &sma->pend_const, semnum, count_zero, false);
	return n;
}

/* ---- lookup ---- */

/* the array of SEMID, checked as a whole: NULL with *ERR -EINVAL for no
 * such id, -EIDRM for an array the arena says is not one; *N its checked
 * count (sem_count) */
/* (inline: every semop and semctl looks its array up) */
static inline __attribute__((always_inline)) struct sem_array *
sem_obtain_count(struct ns *ns, int semid, int *err, int *n)
{
	struct uperm *p = ipc_obtain_check(ns, IPC_SEM_IDS, semid, err);

	if (!p)
		return NULL;
	/* the array whole inside its block (ipc_obj_fits remembers it) */
	*n = sem_count(ns, sma_of(p));
	if (!*n || !ipc_obj_fits(ns, p, sem_bytes(*n))) {
		if (*n && ipc_obj_still(ns, IPC_SEM_IDS, semid, p))
			sem_bad_count(ns);
		*err = -EIDRM;
		return NULL;
	}
	return sma_of(p);
}

static struct sem_array *sem_obtain_check(struct ns *ns, int semid, int *err)
{
	int n;

	return sem_obtain_count(ns, semid, err, &n);
}

static bool sma_valid(struct sem_array *sma, int semid)
{
	return !atomic_load(&sma->perm.deleted) && sma->perm.id == semid;
}

/* ---- semget ---- */

static void init_locks(struct sem_array *sma, int nsems)
{
	int ready;

	if (sma->locks_magic != LOCKS_MAGIC) {
		ulock_init(&sma->glock);
		sma->locks_ready = 0;
		sma->locks_magic = LOCKS_MAGIC;
	}
	/* the block's own count, but never outside this array */
	ready = sma->locks_ready;
	if (ready < 0 || ready > nsems)
		ready = 0;
	for (int i = ready; i < nsems; i++)
		ulock_init(&sma->sems[i].lock);
	if (nsems > ready)
		sma->locks_ready = nsems;
}

static int newary(struct ns *ns, key_t key, int semflg, long nsems)
{
	struct uipc_hdr *h = ns->hdr;
	uint64_t bytes = sizeof(struct sem_array) + (uint64_t)nsems * sizeof(struct sem);
	int64_t used = h->used_sems;
	struct sem_array *sma;
	uoff_t off;
	uint32_t tag;
	int id, i, r;

	if (!nsems)
		return -EINVAL;
	/* written so that no arena value can make it overflow */
	if (used < 0 || used > h->lim.semmns || nsems > h->lim.semmns - used)
		return -ENOSPC;
	if (h->ids[IPC_SEM_IDS].in_use >= (h->lim.semmni < ns->ipcmni ? h->lim.semmni : ns->ipcmni))
		return -ENOSPC;
	/* ALLOC is journaled in the ids frame: a failure or crash frees it */
	off = arena_alloc(ns, bytes, POOL_SEM);
	sma = off ? ns_ptr(ns, off, bytes) : NULL;
	if (!sma)
		return -ENOMEM;
	/*
	 * Semaphore-pool memory is never zeroed on reuse: a stale semop of a
	 * removed array may still take its locks, so locks stay initialized
	 * for ever and each semaphore word carries the array's tag.  The array
	 * is built under its own lock, which shuts such stale callers out; they
	 * see id -1 and give up.
	 */
	init_locks(sma, (int)nsems);
	r = ulock_acquire(ns, &sma->glock);
	if (r)
		return r;
	/*
	 * Not visible to lookups yet, and stale callers are shut out by the
	 * lock and by id -1: plain stores.  If we die here the allocation is
	 * rolled back by the ids section and nothing refers to this memory.
	 */
	__atomic_store_n(&sma->perm.id, -1, __ATOMIC_RELEASE);
	/* the block's allocation generation differs for every incarnation */
	tag = (uint32_t)(arena_block_gen(ns, off) & W_TAG_MASK);
	sma->perm.key = (int32_t)key;
	sma->perm.mode = (uint32_t)(semflg & 0777);
	atomic_store(&sma->perm.deleted, 0u);
	sma->nsems = (int32_t)nsems;
	sma->tag = tag;
	sma->ctime = ipc_now();
	atomic_store(&sma->otime, 0);
	atomic_store(&sma->use_global_lock, USE_GLOBAL_LOCK_HYSTERESIS);
	sma->complex_count = 0;
	sma->pend_alter = (struct qlist){ 0, 0 };
	sma->pend_const = (struct qlist){ 0, 0 };
	sma->undo_list = 0;
	for (i = 0; i < nsems; i++) {
		struct sem *s = &sma->sems[i];

		atomic_store(&s->word, W_SLOW | ((uint64_t)tag << W_TAG_SHIFT));
		atomic_store(&s->poster_cpu, -1);       /* no poster seen yet */
		atomic_store(&s->presleeper, 0);
		atomic_store(&s->poster_tid, 0);
		s->pend_alter = (struct qlist){ 0, 0 };
		s->pend_const = (struct qlist){ 0, 0 };
	}
	ulock_release(ns, &sma->glock);
	/*
	 * Back in the ids section: publish it, its id stored when the section
	 * commits.  Lookups by id take no ids lock, and a semop then takes the
	 * array's lock (or a semaphore's) alone: found with its id before the
	 * commit, a semop (its undo entry, linked into the array, in a block
	 * of its own) was lost with the array when a creator killed before
	 * the commit was rolled back.  Until then lookups by id and SEM_STAT
	 * by index pass it by (EINVAL, as before the kernel's ipc_addid).
	 */
	id = ipc_addid_at_commit(ns, IPC_SEM_IDS, &sma->perm, h->lim.semmni);
	if (id < 0)
		return id;
	J_SET(ns, h->used_sems, h->used_sems + nsems);
	/* its creator knows its size: a later rewrite of nsems is seen */
	ipc_seen_size(ns, IPC_SEM_IDS, id, (uint64_t)nsems);
	return id;
}

static int sem_more_checks(struct ns *ns, struct uperm *p, long nsems)
{
	(void)ns;
	return nsems > sma_of(p)->nsems ? -EINVAL : 0;
}

int ksys_semget(key_t key, int nsems, int semflg)
{
	static const struct ipc_ops ops = { newary, sem_more_checks };
	struct ns *ns = ns_get();

	if (!ns)
		return -errno;
	if (nsems < 0 || nsems > ns->hdr->lim.semmsl)
		return -EINVAL;
	return ipcget(ns, IPC_SEM_IDS, key, semflg, nsems, &ops);
}

/* ---- SEM_UNDO bookkeeping ----
 * An undo entry sits in two lists guarded by two locks: the process's list
 * (its process lock) and the array's list (the array lock).  No section
 * changes both atomically; instead each list's membership is explicit
 * (in_array, semid) and every reader tolerates an entry that a crash left
 * in one list only: entries with semid -1 are dropped from the process list
 * lazily, and an entry found without in_array is linked to its array again.
 */

/* a process has at most one undo entry per array, and an array at most one
 * per process: longer lists are lists that loop (a corrupt arena) */
#define UNDO_PROC_WALK_MAX(ns) ((ns)->ipcmni + 1)
#define UNDO_ARRAY_WALK_MAX (MAX_PROCS + 1)

static struct sem_undo *lookup_undo(struct ns *ns, struct uproc *p, int semid)
{
	uoff_t o = p->undo;
	int guard = 0;

	struct walk w = WALK_INIT;

	while (o && guard++ < UNDO_PROC_WALK_MAX(ns) && !walk_loops(&w, o)) {
		struct sem_undo *u = un_at(ns, o);

		if (!u)
			break;
		if (u->semid == semid)
			return u;
		o = u->proc_next;
	}
	return NULL;
}

/* unlink and free dead entries (semid -1) of P's list; P's lock held */
static void prune_undo(struct ns *ns, struct uproc *p)
{
	uoff_t *link = &p->undo;
	int guard = 0;

	struct walk w = WALK_INIT;

	while (*link && guard++ < UNDO_PROC_WALK_MAX(ns) && !walk_loops(&w, *link)) {
		struct sem_undo *u = un_at(ns, *link);

		/* outside the arena, or linked to itself: cut there */
		if (!u || u->proc_next == *link) {
			J_SET(ns, *link, (uoff_t)0);
			return;
		}
		if (u->semid == -1) {
			uoff_t dead = *link;

			J_SET(ns, *link, u->proc_next);
			arena_free(ns, dead);
			continue;
		}
		link = &u->proc_next;
	}
}

static void link_undo_id(struct ns *ns, struct sem_array *sma, struct sem_undo *un)
{
	struct sem_undo *head = un_at(ns, sma->undo_list);
	uoff_t off = ns_off(ns, un);

	J_SET(ns, un->id_prev, (uoff_t)0);
	J_SET(ns, un->id_next, sma->undo_list);
	if (head)
		J_SET(ns, head->id_prev, off);
	J_SET(ns, sma->undo_list, off);
	J_SET(ns, un->in_array, 1u);
}

static void unlink_undo_id(struct ns *ns, struct sem_array *sma, struct sem_undo *un)
{
	struct sem_undo *prev, *next;

	if (!un->in_array)
		return;
	prev = un_at(ns, un->id_prev);
	next = un_at(ns, un->id_next);
	if (prev)
		J_SET(ns, prev->id_next, un->id_next);
	else if (sma->undo_list == ns_off(ns, un))
		J_SET(ns, sma->undo_list, un->id_next);
	if (next)
		J_SET(ns, next->id_prev, un->id_prev);
	J_SET(ns, un->in_array, 0u);
}

/* find_alloc_undo: the process's undo entry for SEMID, created if missing. */
static int find_alloc_undo(struct ns *ns, int semid, uoff_t *out)
{
	struct uproc *p = cur_proc(ns);
	struct sem_array *sma;
	struct sem_undo *un;
	uoff_t off = 0;
	int err = 0, r, locknum;

	if (!p)
		return -ENOMEM;
	r = ulock_acquire(ns, &p->lock);
	if (r)
		return r;
	prune_undo(ns, p);
	un = lookup_undo(ns, p, semid);
	ulock_release(ns, &p->lock);
	if (un && un->in_array) {
		*out = ns_off(ns, un);
		return 0;
	}
	sma = sem_obtain_check(ns, semid, &err);
	if (!sma)
		return err;
	locknum = sem_lock_all(ns, sma);
	if (locknum != SEM_GLOBAL_LOCK)
		return locknum;
	if (!sma_valid(sma, semid)) {
		sem_unlock(ns, sma, locknum);
		return -EIDRM;
	}
	r = ulock_acquire(ns, &p->lock);
	if (r) {
		sem_unlock(ns, sma, locknum);
		return r;
	}
	un = lookup_undo(ns, p, semid);
	if (!un) {
		int n = sem_count(ns, sma);

		off = n ? arena_alloc(ns, sizeof(*un) + (size_t)n * 2, POOL_GENERAL) : 0;
		un = off ? un_at(ns, off) : NULL;
		if (!un) {
			ulock_release(ns, &p->lock);
			sem_unlock(ns, sma, locknum);
			return n ? -ENOMEM : -EIDRM;
		}
		/* fresh zeroed block, unreachable until linked below */
		un->nsems = n;
		un->semid = semid;
		un->proc = (uint32_t)(p - proc_at(ns, 0));
		un->proc_next = p->undo;
		J_SET(ns, p->undo, off);
	}
	ulock_release(ns, &p->lock);
	if (!un->in_array)
		link_undo_id(ns, sma, un);
	*out = ns_off(ns, un);
	sem_unlock(ns, sma, locknum);
	return 0;
}

/*
 * Processes killed without running their exit work still have undo entries
 * on the array: do that work for them before anyone reads the array or
 * decides to wait on it, as the kernel would have done it at their death.
 * Called without locks; returns true if some process was reaped.
 */
/* Could a dead holder's undo be pending on SMA?  (A cheap look, no lock.) */
static bool reap_may_help(struct sem_array *sma)
{
	/* undo entries exist, or a section that may have changed them is in
	 * progress or was cut short by a death */
	return __atomic_load_n(&sma->undo_list, __ATOMIC_ACQUIRE) || !ulock_is_free(&sma->glock);
}

static int reap_some_holders(struct ns *ns, struct sem_array *sma, int semid, int *reaped);

/* Did this call reap a dead holder?  One another process is reaping does
 * not count: a semop that retried at once for it would spin through its
 * tries while that reaper works (EIDRM when they ran out); it sleeps
 * instead, and that reaper's SEM_UNDO wakes it. */
static bool reap_dead_holders(struct ns *ns, struct sem_array *sma, int semid)
{
	int n, reaped = 0, rounds = 0;

	/* a batch at a time, until a batch finds nobody more */
	do {
		n = reap_some_holders(ns, sma, semid, &reaped);
	} while (n == 16 && ++rounds < 4096);
	return reaped > 0;
}

/* the dead holders of a batch found (up to 16); *REAPED: those reaped here */
static int reap_some_holders(struct ns *ns, struct sem_array *sma, int semid, int *reaped)
{
	uint32_t dead[16];
	int n = 0, locknum;
	uoff_t o;

	if (!reap_may_help(sma))
		return 0;
	locknum = sem_lock_all(ns, sma);
	if (locknum != SEM_GLOBAL_LOCK)
		return 0;
	if (sma_valid(sma, semid)) {
		struct walk w = WALK_INIT;
		int guard = 0;

		for (o = sma->undo_list; o && n < 16 && guard++ < UNDO_ARRAY_WALK_MAX &&
		     !walk_loops(&w, o);) {
			struct sem_undo *u = un_at(ns, o);
			struct uproc *p;

			if (!u)
				break;
			p = proc_at(ns, u->proc);
			if (p && proc_is_dead(ns, p)) {
				int k;

				for (k = 0; k < n && dead[k] != u->proc; k++)
					;
				if (k == n)
					dead[n++] = u->proc;
			}
			o = u->id_next;
		}
	}
	sem_unlock(ns, sma, locknum);
	for (int i = 0; i < n; i++)
		*reaped += proc_reap(ns, proc_at(ns, dead[i]));
	return n;
}

/* ---- semop ---- */

/* A sleeper looks around (lost wakeups, dead holders) after every slice:
 * often when a dead holder's SEM_UNDO could free it, rarely otherwise. */
#define WAIT_SLICE_NS      1000000000LL
#define WAIT_SLICE_UNDO_NS   50000000LL
#define WAIT_SLICE_DEATH_NS   1000000LL
#define SPIN_NS      100000LL

/*
 * Waking at a holder's death.  A process's alive word (proc_alive_word: the
 * alive word of one of its live threads, on the kernel's robust list) is
 * marked by the kernel when the process dies: owner-dead and, if the word
 * says it has waiters, one of them woken.  A sleeper that a dead process's
 * SEM_UNDO could free (one with an adjustment of the semaphore it waits
 * on) marks that process's alive word as having waiters and waits with
 * futex_waitv on its own wake word and on those words at once: the death
 * itself wakes it, and it reaps right away instead of at the end of its
 * slice.  The marks cost the holder nothing until it ends (then its
 * thread's end makes one FUTEX_WAKE).
 */
#define DEATH_WORDS 8
#define FUTEX_WAITERS_BIT 0x80000000u
#define FUTEX_OWNER_DIED_BIT 0x40000000u

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

struct death_words {
	int n;
	unsigned *word[DEATH_WORDS];
	unsigned val[DEATH_WORDS];
};


/* With the lock held after enqueueing Q: the alive words of the processes
 * whose death could complete it.  A hint only: the undo list is read with
 * bounds-checked offsets, and the slice still bounds the wait. */
static void collect_death_words(struct ns *ns, struct sem_array *sma, struct semq *q,
				struct death_words *dw)
{
	struct uproc *me = cur_proc(ns);
	struct sembuf *op = q_blocking_op(ns, q);
	int semnum = op ? op->sem_num : 0;
	int guard = 0;
	uoff_t o;

	dw->n = 0;
	if (uipc_waitv_state() < 0 || !op)
		return;
	for (o = __atomic_load_n(&sma->undo_list, __ATOMIC_ACQUIRE);
	     o && dw->n < DEATH_WORDS && guard++ < 256;) {
		struct sem_undo *u = un_at(ns, o);
		struct uproc *p;
		unsigned *w, v;

		if (!u)
			break;
		o = u->id_next;
		if (semnum >= un_count(ns, u) || u->semadj[semnum] == 0)
			continue;
		p = proc_at(ns, u->proc);
		if (!p || p == me || SLOT_STATE(atomic_load(&p->state)) != SLOT_LIVE)
			continue;
		w = proc_alive_word(ns, p);
		if (!w)
			continue;       /* none known: the slice's look finds it */
		v = __atomic_load_n(w, __ATOMIC_ACQUIRE);
		if (!(v & 0x3fffffffu) || (v & FUTEX_OWNER_DIED_BIT))
			continue;       /* not held now: the slice's look finds it */
		if (!(v & FUTEX_WAITERS_BIT) &&
		    !__atomic_compare_exchange_n(w, &v, v | FUTEX_WAITERS_BIT, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			continue;
		dw->word[dw->n] = w;
		dw->val[dw->n] = v | FUTEX_WAITERS_BIT;
		dw->n++;
	}
}

/* sleep on WORD (== CUR) and DW's words for REL; a handler of the program
 * that runs (HAND0) ends it, even one that ran just before (signals.h):
 * 1 if a death word changed or woke us, else 0 or -1 with errno */
static int wait_word_or_death(_Atomic uint32_t *word, uint32_t cur, const struct timespec *rel,
			      const struct death_words *dw, unsigned hand0)
{
	uint32_t *w[1 + DEATH_WORDS];
	uint32_t val[1 + DEATH_WORDS];
	int n = 0, r;

	w[n] = (uint32_t *)word;
	val[n++] = cur;
	for (int i = 0; dw && i < dw->n; i++) {
		w[n] = dw->word[i];
		val[n++] = dw->val[i];
	}
	r = uipc_wait_words(w, val, n, rel, hand0);
	if (r > 0)
		return 1;                        /* a death word woke us */
	if (r < 0 && errno == EAGAIN && n > 1 && atomic_load(word) == cur)
		return 1;                        /* a death word differed: a death */
	return r < 0 ? -1 : 0;
}

/*
 * Wait until Q's wake word says SEQ (0), the deadline passes (-EAGAIN), a
 * signal handler runs (ran since the call began: HAND0) or the process is
 * stopped and continued (CONT0) (-EINTR), or a slice ends or a process in
 * DW died (1: the caller looks around and calls again).  HOW: WAIT_SPIN
 * spins a little first, for a waker that is likely on another CPU (a
 * wakeup then costs no system call on either side); WAIT_YIELD gives the
 * CPU to a waker that last ran on ours (it cannot post while we spin, and
 * finding us not asleep it makes no system call to wake us).
 */
enum { WAIT_SLEEP, WAIT_SPIN, WAIT_YIELD };
/* this thread's spin before a sleep, adapted to how often it paid: a
 * waker on another CPU that is busy with a third process cannot post while
 * we spin (issue 18: ping-pong under load) */
static __thread struct spin_budget sem_spin = { .ns = SPIN_NS, .max = SPIN_NS };
#define WAKER_YIELDS 2

/*
 * A yield to a waker on our CPU pays when the scheduler runs the waker
 * next: it posts, and we are back within microseconds, with no system call
 * on either side.  With a task that keeps its CPU busy beside us, every
 * yield gives it a whole time slice (milliseconds: the scheduler pushes
 * the yielder's deadline back a slice at each yield; ping-pong on one CPU
 * beside a busy loop ran at 0.01x the kernel), where a sleep is woken by
 * the post with the precedence the scheduler gives a woken sleeper, as the
 * kernel's sleeper is.  Other work on the machine makes a yield late now
 * and then (here every 0.1-1 s with nothing else running), and sleeping
 * instead would cost more than it saves (a futex wait and wake per
 * hand-off: alone on one CPU 0.72x the kernel, with the yields 1.28x).  So
 * late yields stop this thread's yields only when they come close
 * together, counted in yields (yield_result).  Meanwhile semop_presleep
 * stands in for the yields, and a pre-sleep as late as a late yield counts
 * as one (the busy task is still there, found without handing it a
 * slice).  Measured (issue 18, seventh round), ping-pong on one CPU beside
 * a busy process, medians of 9-11 alternating with the kernel: 0.72x with
 * the old rule (3 of the last 8 late, 8 in time in a row to forget) and
 * pre-sleeps, 0.97-1.03x with stops that lasted and late pre-sleeps
 * counted.  Rules in time (a late yield within 100 ms of the one before,
 * forgotten after 200 ms without one) kept the yields stopped alone on one
 * CPU when the machine's other work came every 125 ms: 0.85x there.
 */
#define YIELD_SLOW_NS       500000LL
#define YIELD_LATE_NEAR       5000u
#define YIELD_OFF_MIN_NS  64000000LL
#define YIELD_OFF_MAX_NS 1000000000LL
struct yield_policy {
	int64_t off_until;         /* no yields before (mono_ns) */
	int64_t off_ns;            /* how long the next stop lasts */
	uint32_t in_time;          /* yields in time since the last late one */
	bool seen_late;
};
static __thread struct yield_policy sem_yield;

static bool yield_allowed(const struct yield_policy *y, int64_t now)
{
	return now >= y->off_until;
}

/*
 * A yield took NS (until NOW).  Beside a busy task a late yield comes
 * within a few hundred to a few thousand yields of the one before (the
 * busy task's next eligible moment, a few milliseconds); alone, the
 * machine's other work makes one late every 0.1-1 s, tens of thousands of
 * yields apart.  So a late one within YIELD_LATE_NEAR yields of the last
 * stops them (64 ms, then twice as long each time, up to 1 s: yields that
 * come back in time between two late ones cost as well, each pushes the
 * yielder's deadline back), and one farther off forgets the stops.
 */
static void yield_result(struct yield_policy *y, int64_t now, int64_t ns)
{
	bool near;

	if (ns <= YIELD_SLOW_NS) {
		if (y->in_time < UINT32_MAX)
			y->in_time++;
		return;
	}
	near = y->seen_late && y->in_time < YIELD_LATE_NEAR;
	y->seen_late = true;
	y->in_time = 0;
	if (!near) {
		y->off_ns = 0;
		return;
	}
	if (y->off_ns < YIELD_OFF_MIN_NS)
		y->off_ns = YIELD_OFF_MIN_NS;
	y->off_until = now + y->off_ns;
	y->off_ns = y->off_ns * 2 > YIELD_OFF_MAX_NS ? YIELD_OFF_MAX_NS : y->off_ns * 2;
}

/* one yield of a waiting thread, timed from SINCE into its yield policy:
 * the time it came back */
static int64_t timed_yield(int64_t since)
{
	int64_t now;

	sched_yield();
	now = mono_ns();
	yield_result(&sem_yield, now, now - since);
	return now;
}

/* Yield to the waker up to WAKER_YIELDS times while that pays: 0 woken,
 * -EINTR (a handler ran), 1 not woken (sleep) */
static int yield_to_waker(struct semq *q, uint32_t seq, unsigned hand0, int64_t start)
{
	int64_t t = start;

	if (!yield_allowed(&sem_yield, start))
		return 1;
	for (int i = 0; i < WAKER_YIELDS; i++) {
		t = timed_yield(t);
		if (atomic_load_explicit(&q->wake, memory_order_acquire) == seq)
			return 0;
		if (uipc_handler_gen() != hand0)
			return -EINTR;
		if (!yield_allowed(&sem_yield, t))
			return 1;
	}
	return 1;
}

static int wait_for_wake(struct semq *q, uint32_t seq, const struct timespec *deadline,
			 unsigned cont0, unsigned hand0, int how, int64_t slice,
			 const struct death_words *dw)
{
	int64_t start = mono_ns(), now, left;

	if (how == WAIT_YIELD) {
		int r = yield_to_waker(q, seq, hand0, start);

		if (r <= 0)
			return r;
	}
	if (how == WAIT_SPIN) {
		int64_t budget = spin_budget_take(&sem_spin);

		for (int i = 0; budget; i++) {
			if (atomic_load_explicit(&q->wake, memory_order_acquire) == seq) {
				spin_budget_paid(&sem_spin, i >= 64);
				return 0;
			}
			if ((i & 63) == 63) {
				/* where the kernel's caller sleeps, a handler
				 * that runs interrupts it */
				if (uipc_handler_gen() != hand0)
					return -EINTR;
				if (mono_ns() - start > budget) {
					spin_budget_wasted(&sem_spin);
					break;
				}
			}
			cpu_relax();
		}
	}
	for (;;) {
		struct timespec rel;
		uint32_t cur;
		int r;

		atomic_store(&q->sleeping, 1);
		cur = atomic_load(&q->wake);
		if (cur == seq) {
			atomic_store_explicit(&q->sleeping, 0, memory_order_relaxed);
			return 0;
		}
		/* a handler that ran since the call began: the kernel's
		 * caller would not go to sleep with the signal pending */
		if (uipc_cont_gen() != cont0 || uipc_handler_gen() != hand0) {
			atomic_store_explicit(&q->sleeping, 0, memory_order_relaxed);
			return -EINTR;
		}
		now = mono_ns();
		left = slice - (now - start);
		if (deadline) {
			int64_t d = (int64_t)deadline->tv_sec * 1000000000LL + deadline->tv_nsec - now;

			if (d <= 0) {
				atomic_store_explicit(&q->sleeping, 0, memory_order_relaxed);
				return -EAGAIN;
			}
			if (d < left)
				left = d;
		}
		if (left <= 0) {
			atomic_store_explicit(&q->sleeping, 0, memory_order_relaxed);
			return 1;
		}
		rel.tv_sec = left / 1000000000LL;
		rel.tv_nsec = left % 1000000000LL;
		r = wait_word_or_death(&q->wake, cur, &rel, dw, hand0);
		atomic_store_explicit(&q->sleeping, 0, memory_order_relaxed);
		if (atomic_load(&q->wake) == seq) {
			if (how == WAIT_SPIN)
				spin_budget_slept(&sem_spin, mono_ns() - start);
			return 0;
		}
		if (uipc_cont_gen() != cont0 || (r < 0 && errno == EINTR))
			return -EINTR;
		if (r == 1 && dw && dw->n)
			return 2;       /* a holder died: look around now */
	}
}

#define LOCKFREE_WOULD_SLEEP 2

#define WORD_SLEEPERS 3

/*
 * The word SOP makes of W (*NW, W_SLEEPERS off): 0, or what stops it: 1
 * (a locker is in, or the array was replaced), -EAGAIN, -ERANGE,
 * LOCKFREE_WOULD_SLEEP, or with SLEEPERS, WORD_SLEEPERS (a pre-sleeper to
 * wake: sem_word_apply_waking; tested with SLOW, at no cost of its own).
 */
static __attribute__((always_inline)) inline int
word_after(uint64_t w, const struct sembuf *sop, uint32_t tag, int pid, uint64_t *nw,
	   bool sleepers)
{
	int val;

	if ((w & (W_SLOW | (sleepers ? W_SLEEPERS : 0))) || W_TAG(w) != tag)
		return (w & W_SLOW) || W_TAG(w) != tag ? 1 : WORD_SLEEPERS;
	val = W_VAL(w) + sop->sem_op;
	if ((!sop->sem_op && W_VAL(w)) || val < 0)
		return (sop->sem_flg & IPC_NOWAIT) ? -EAGAIN : LOCKFREE_WOULD_SLEEP;
	if (val > SEMVMX_MAX)
		return -ERANGE;
	/* every operation that completes wakes the pre-sleeper (a post is
	 * what it waits for, anything else at worst sends it back to sleep) */
	*nw = w_make(w, val, pid) & ~W_SLEEPERS;
	return 0;
}

/* sem_word_apply on a word whose W_SLEEPERS is set: the CAS between the
 * steps that wake the pre-sleeper (presleep_wake_prepare) */
static __attribute__((noinline, cold)) int
sem_word_apply_waking(struct ns *ns, struct sem *s, const struct sembuf *sop, uint32_t tag,
		      uint64_t w)
{
	struct ps_wake pw = { 0 };
	int pid = cur_pid(), r;
	uint64_t nw;

	for (;;) {
		r = word_after(w, sop, tag, pid, &nw, false);
		if (r || nw == w)
			break;
		if (w & W_SLEEPERS)
			presleep_wake_prepare(ns, s, &pw);
		if (atomic_compare_exchange_weak_explicit(&s->word, &w, nw, memory_order_acq_rel,
							  memory_order_acquire))
			break;
	}
	if (pw.held)
		presleep_wake_finish(s, &pw);
	return r;
}

/*
 * SOP applied to S, of the array whose tag is TAG, by one CAS of its word:
 * semop_lockfree's end, and semop_presleep's retry, which found S before
 * it slept (the kernel checks the caller's rights once, before a sleep,
 * too).  0 done, -EAGAIN or -ERANGE, LOCKFREE_WOULD_SLEEP, 1 (the general
 * path: a locker is in, or the array was replaced).
 */
static __attribute__((always_inline)) inline int
sem_word_apply(struct ns *ns, struct sem *s, const struct sembuf *sop, uint32_t tag)
{
	int pid = cur_pid(), r;
	uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire), nw;

	for (;;) {
		r = word_after(w, sop, tag, pid, &nw, true);
		if (r)
			return r == WORD_SLEEPERS ? sem_word_apply_waking(ns, s, sop, tag, w) : r;
		if (nw == w)
			return 0;
		if (atomic_compare_exchange_weak_explicit(&s->word, &w, nw, memory_order_acq_rel,
							  memory_order_acquire))
			break;
	}
	return 0;
}

/*
 * One operation applied without the lock, if nothing stands in its way:
 * 0 (done: *SMAP is its array, whose otime the caller sets), -EAGAIN or
 * -ERANGE (decided, as the kernel would), 1 (the general path decides,
 * from the start), LOCKFREE_WOULD_SLEEP (the same: the value does not
 * allow the operation now).  C: the caller's credentials.  Inline and
 * without a call of its own but for a group search: what would need one
 * (an id this lookup does not find, say) answers 1, so that the common
 * semop is one small frame.
 */
static __attribute__((always_inline)) inline int
semop_lockfree(struct ns *ns, int semid, const struct sembuf *sop, const struct ucred_cache *c,
	       struct sem_array **smap)
{
	struct sem_array *sma;
	struct uperm *p;
	struct sem *s;
	uint64_t seq;
	uint32_t tag;

	/* only committed arrays: none half-made by a creator that may die */
	if (!ids_read_begin(ns, IPC_SEM_IDS, &seq))
		return 1;
	p = semid < 0 ? NULL : ipc_obtain(ns, IPC_SEM_IDS, semid);
	if (unlikely(!p || p->id != semid))
		return 1;
	sma = sma_of(p);
	s = &sma->sems[sop->sem_num];
	/* the semaphore's end inside the mapping (its start is past the
	 * array's, which ipc_obtain found inside); the locked path checks
	 * the array as a whole (sem_count) */
	if ((uint64_t)((const char *)(s + 1) - ns->base) > ns->size ||
	    sop->sem_num >= (unsigned)__atomic_load_n(&sma->nsems, __ATOMIC_RELAXED))
		return 1;
	tag = sma->tag;
	if (atomic_load(&sma->perm.deleted) || sma->perm.id != semid ||
	    !ids_read_end(ns, IPC_SEM_IDS, seq))
		return 1;
	/* (two calls, so that each flag is a constant) */
	if (sop->sem_op ? ipcperms_as(c, &sma->perm, 0222) : ipcperms_as(c, &sma->perm, 0444))
		return 1;
	*smap = sma;    /* (for semop_presleep, when it would sleep) */
	return sem_word_apply(ns, s, sop, tag);
}

/* semop_lockfree for the general path: otime set when it is done */
static int semop_fast(struct ns *ns, int semid, struct sembuf *sop)
{
	struct sem_array *sma;
	int r = semop_lockfree(ns, semid, sop, cur_cred(), &sma);

	if (r == 0)
		set_semotime(ns, sma);
	return r;
}

struct semop_args {
	int semid;
	struct sembuf *sops;
	int nsops;
	bool undos, alter, dupsop;
	int max;
	unsigned hand0;            /* the program's handlers run when the call began */
};

static void scan_sops(struct semop_args *a)
{
	unsigned long dup = 0;

	a->max = 0;
	for (int i = 0; i < a->nsops; i++) {
		struct sembuf *sop = &a->sops[i];
		unsigned long mask = 1UL << (sop->sem_num % 64);

		if (sop->sem_num >= a->max)
			a->max = sop->sem_num;
		if (sop->sem_flg & SEM_UNDO)
			a->undos = true;
		if (dup & mask)
			a->dupsop = true;
		if (sop->sem_op != 0) {
			a->alter = true;
			dup |= mask;
		}
	}
}

/*
 * Wait entries belong to thread slots and are never freed (a late waker may
 * still store into one, harmlessly: see wake_up_q).  A thread keeps a list
 * of them: normally one is enough, a signal handler that calls semop while
 * its thread sleeps needs another, and an entry left queued by a thread
 * that died stays out of use until a waker unlinks it.
 */
static struct semq *thread_waitq(struct ns *ns, struct uthread *t, int nsops)
{
	uint32_t cap = nsops < 16 ? 16 : (uint32_t)nsops;
	struct semq *q;
	uoff_t off;
	int guard = 0;

	/* (the chain is in the thread's slot, which any member can write:
	 * an odd offset would make the entry's words misaligned) */
	for (off = t->waitq; off && guard++ < 1024; off = q->tnext) {
		q = ns_ptr_aligned(ns, off, sizeof(*q));
		if (!q)
			break;
		if (q->cap >= (uint32_t)nsops && !q->linked &&
		    (!q->busy || q->owner_tid != t->tid) &&
		    ns_ptr(ns, off, sizeof(*q) + q->cap * sizeof(struct sembuf)))
			goto take;
	}
	off = arena_alloc_raw(ns, sizeof(struct semq) + cap * sizeof(struct sembuf), POOL_GENERAL);
	q = off ? ns_ptr_aligned(ns, off, sizeof(*q) + cap * sizeof(struct sembuf)) : NULL;
	if (!q)
		return NULL;
	q->cap = cap;
	q->tnext = t->waitq;
	t->waitq = off;
take:
	q->busy = 1;
	q->owner_tid = t->tid;
	return q;
}

static void thread_waitq_done(struct semq *q)
{
	q->busy = 0;
}

/* a hint for sleepers deciding whether to spin or yield (not journaled) */
static void note_posters(struct ns *ns, struct sem_array *sma, struct semop_args *a)
{
	struct uthread *t = cur_thread(ns);
	int cpu = sched_getcpu();

	for (int i = 0; i < a->nsops; i++) {
		if (a->sops[i].sem_op > 0) {
			struct sem *s = &sma->sems[a->sops[i].sem_num];

			atomic_store_explicit(&s->poster_cpu, cpu, memory_order_relaxed);
			if (t && atomic_load_explicit(&s->poster_tid, memory_order_relaxed) != t->tid)
				atomic_store_explicit(&s->poster_tid, t->tid, memory_order_relaxed);
		}
	}
}

static struct semq *enqueue(struct ns *ns, struct sem_array *sma, struct semop_args *a,
			    uoff_t undo, int blocking)
{
	struct uthread *t = cur_thread(ns);
	struct semq *q = t ? thread_waitq(ns, t, a->nsops) : NULL;

	if (!q)
		return NULL;
	/* (thread_waitq_done when the call ends, see do_semtimedop) */
	/* not linked anywhere now: filled before it is linked, under the
	 * lock that publishes it (so plain stores: a sequentially consistent
	 * one is a locked instruction, three of them cost a hand-off 25 ns) */
	q->seq = ++t->waitq_seq;
	atomic_store_explicit(&q->wake, 0, memory_order_relaxed);
	atomic_store_explicit(&q->sleeping, 0, memory_order_relaxed);
	memcpy(q->sops, a->sops, (size_t)a->nsops * sizeof(struct sembuf));
	q->nsops = a->nsops;
	q->undo = undo;
	q->pid = cur_pid();
	q->alter = a->alter;
	q->dupsop = a->dupsop;
	q->blocking = blocking;
	q->thread = (uint32_t)(((char *)t - (ns->base + ns->lay.threads)) / sizeof(*t));
	q->tword = atomic_load(&t->state);
	q->since = mono_coarse_ns();
	{
		/* our own slots, but in the arena: a forged proc index must
		 * not become a NULL pointer */
		uint32_t pidx = t->proc;
		struct uproc *p = proc_at(ns, pidx);

		if (!p)
			return NULL;
		q->proc = pidx;
		q->cont_gen = atomic_load(&p->cont_gen);
	}
	atomic_store_explicit(&q->status, QS_WAITING, memory_order_relaxed);
	if (a->nsops == 1) {
		struct sem *s = &sma->sems[a->sops[0].sem_num];

		if (a->alter)
			list_add_tail(ns, sma->complex_count ? &sma->pend_alter : &s->pend_alter, q);
		else
			list_add_tail(ns, &s->pend_const, q);
	} else {
		if (!sma->complex_count)
			merge_queues(ns, sma);
		list_add_tail(ns, a->alter ? &sma->pend_alter : &sma->pend_const, q);
		J_SET(ns, sma->complex_count, sma->complex_count + 1);
	}
	return q;
}

#define SEMOP_RETRY 1

/*
 * Try the operations with the lock held.  On success the updates and
 * wakeups are done and the lock released (0); otherwise the lock is still
 * held and the result is 1 (must sleep, *blocking set) or -errno.
 */
static int try_semop_locked(struct ns *ns, struct sem_array *sma, struct semop_args *a,
			    uoff_t undo, int locknum, int *blocking)
{
	struct wake_q wq;
	int err = perform_atomic_semop(ns, sma, a->sops, a->nsops, undo, cur_pid(), blocking,
				       a->dupsop);

	if (err)
		return err;
	wake_q_init(&wq);
	if (a->alter)
		do_smart_update(ns, sma, a->sops, a->nsops, 1, &wq);
	else
		set_semotime(ns, sma);
	sem_unlock(ns, sma, locknum);
	note_posters(ns, sma, a);
	wake_up_q(ns, &wq, sma);
	return 0;
}

static int ncpus(void)
{
	static int n;

	if (!n)
		n = (int)sysconf(_SC_NPROCESSORS_ONLN);
	return n;
}

/* did who posts S last run on another CPU, so that a waiter spins
 * (wait_how's WAIT_SPIN)? */
static bool poster_elsewhere(const struct sem *s)
{
	return atomic_load_explicit(&s->poster_cpu, memory_order_relaxed) != sched_getcpu() &&
	       ncpus() > 1;
}

/*
 * How to wait for S: spin if who posts it last ran on another CPU, yield
 * if another thread posted it last on ours, else sleep at once.
 */
static int wait_how(struct ns *ns, struct sem *s)
{
	struct uthread *t = cur_thread(ns);
	int cpu = atomic_load_explicit(&s->poster_cpu, memory_order_relaxed);
	int32_t tid = atomic_load_explicit(&s->poster_tid, memory_order_relaxed);

	if (cpu != sched_getcpu())
		return ncpus() > 1 ? WAIT_SPIN : WAIT_SLEEP;
	return t && tid && tid != t->tid ? WAIT_YIELD : WAIT_SLEEP;
}

/*
 * Take the lock back after a sleep, Q still queued: the wait is not
 * bounded by the call's timeout or interrupted (lockwait_suspend), since
 * leaving with Q on the list would let a waker complete an operation for a
 * caller that has gone.  (The holder of a semaphore lock is mid-section:
 * only a stopped or hostile one keeps us here.)
 */
static int sem_relock(struct ns *ns, struct sem_array *sma, struct semop_args *a)
{
	int r;

	lockwait_suspend();
	r = sem_lock(ns, sma, a->sops, a->nsops);
	lockwait_resume();
	return r;
}

static int do_semtimedop(struct ns *ns, struct semop_args *a, const struct timespec *deadline)
{
	struct sem_undo *un;
	struct sem_array *sma;
	struct semq *q;
	uoff_t undo = 0;
	int err = 0, locknum, blocking = 0, r, n;
	unsigned cont0, hand0 = a->hand0;
	uint32_t seq;
	int how;
	int recheck = 0;

	/* a stop and continue, or a handler that runs, during this call
	 * interrupts it (EINTR) if it has to sleep */
	uipc_sleep_begin();
	cont0 = uipc_cont_gen();
	if (a->undos) {
		err = find_alloc_undo(ns, a->semid, &undo);
		if (err)
			return err;
	}
	sma = sem_obtain_count(ns, a->semid, &err, &n);
	if (!sma)
		return err;
	/* every index into the array below is one of our sops: checked here
	 * against the array's checked size, once */
	if (a->max >= n)
		return -EFBIG;
	if (ipcperms(&sma->perm, a->alter ? 0222 : 0444))
		return -EACCES;
	locknum = sem_lock(ns, sma, a->sops, a->nsops);
	if (locknum < SEM_GLOBAL_LOCK)
		return locknum;
	/* a pre-sleeper that came to queue stops being one under the lock:
	 * GETNCNT counts it as the one or the other */
	presleep_leave(ns);
	if (!sma_valid(sma, a->semid) || (undo && (!(un = un_at(ns, undo)) ||
						     un->semid != a->semid))) {
		sem_unlock(ns, sma, locknum);
		return -EIDRM;
	}
	err = try_semop_locked(ns, sma, a, undo, locknum, &blocking);
	if (err == 0)
		return 0;
	if ((err == -EAGAIN || err > 0) && reap_may_help(sma)) {
		/* a dead process's undo may be what we wait for */
		sem_unlock(ns, sma, locknum);
		if (reap_dead_holders(ns, sma, a->semid))
			return SEMOP_RETRY;
		locknum = sem_lock(ns, sma, a->sops, a->nsops);
		if (locknum < SEM_GLOBAL_LOCK)
			return locknum;
		if (!sma_valid(sma, a->semid)) {
			sem_unlock(ns, sma, locknum);
			return -EIDRM;
		}
		err = try_semop_locked(ns, sma, a, undo, locknum, &blocking);
		if (err == 0)
			return 0;
	}
	if (err < 0) {
		sem_unlock(ns, sma, locknum);
		return err;
	}
	q = enqueue(ns, sma, a, undo, blocking);
	if (!q) {
		j_abort(ns);
		sem_unlock(ns, sma, locknum);
		return -ENOMEM;
	}
	seq = q->seq;
	how = wait_how(ns, &sma->sems[a->sops[blocking].sem_num]);
	for (;;) {
		struct death_words dw;
		bool undo_slice = sma->undo_list != 0;

		dw.n = 0;           /* (the rest is filled up to n) */
		if (undo_slice)
			collect_death_words(ns, sma, q, &dw);
		sem_unlock(ns, sma, locknum);
		/* after a holder's death woke us: it may take a moment to become
		 * a zombie (exit tears its mappings down first); look often */
		r = wait_for_wake(q, seq, deadline, cont0, hand0, how,
				  !undo_slice ? WAIT_SLICE_NS :
				  recheck > 0 ? WAIT_SLICE_DEATH_NS : WAIT_SLICE_UNDO_NS, &dw);
		if (recheck > 0)
			recheck--;
		if (r == 2) {
			recheck = 50;
			r = 1;
		}
		how = WAIT_SLEEP;
		if (r == 0) {
			err = atomic_load(&q->status); /* committed before the wake */
			thread_waitq_done(q);
			return err;
		}
		locknum = sem_relock(ns, sma, a);
		if (locknum < SEM_GLOBAL_LOCK) {
			thread_waitq_done(q);
			return locknum; /* cannot happen short of a corrupt arena */
		}
		err = atomic_load(&q->status);
		if (err != QS_WAITING) {
			/* completed (committed: we hold its lock now) */
			sem_unlock(ns, sma, locknum);
			thread_waitq_done(q);
			return err;
		}
		if (!sma_valid(sma, a->semid)) {
			/* cannot happen: removal completes every sleeper */
			sem_unlock(ns, sma, locknum);
			thread_waitq_done(q);
			return -EIDRM;
		}
		if (r < 0)
			break;
		if (sma->undo_list) {
			/* a slice ended: maybe a holder died; its undo may free us */
			sem_unlock(ns, sma, locknum);
			reap_dead_holders(ns, sma, a->semid);
			locknum = sem_relock(ns, sma, a);
			if (locknum < SEM_GLOBAL_LOCK) {
				thread_waitq_done(q);
				return locknum;
			}
			err = atomic_load(&q->status);
			if (err != QS_WAITING) {
				sem_unlock(ns, sma, locknum);
				thread_waitq_done(q);
				return err;
			}
		}
	}
	unlink_queue(ns, sma, q);
	sem_unlock(ns, sma, locknum);
	thread_waitq_done(q);
	return r;
}

#define SEM_TIMEOUT_MAX_S (1LL << 32)   /* 136 years */

/* may the operations sleep (one lacks IPC_NOWAIT)? */
static bool may_sleep(const struct semop_args *a)
{
	for (int i = 0; i < a->nsops; i++)
		if (!(a->sops[i].sem_flg & IPC_NOWAIT))
			return true;
	return false;
}

/*
 * The kernel's order of checks: the timeout pointer (copied first), nsops
 * against semopm, nsops < 1, the sops pointer, then the id and the timeout
 * value.  nsops is an unsigned int in the system call: wider values wrap.
 * HOW: SEMOP_TIMED (semtimedop, whose TIMEOUT may be given) and
 * SEMOP_FAST_TRIED (semop_one found that the operation cannot complete at
 * once, or could not tell: the lock-free path is not tried again).
 */
#define SEMOP_TIMED      1u
#define SEMOP_FAST_TRIED 2u

static int semtimedop_general(unsigned hand0, int semid, struct sembuf *tsops, size_t nsops_arg,
			      const struct timespec *timeout, unsigned how);

/*
 * A lock-free operation the value does not allow now, before the caller
 * goes to sleep through the general path: give the CPU away once or twice
 * and try again.  With the other side of a hand-off on our CPU (ping-pong
 * on one CPU) it runs, posts without the lock (nobody is queued: no SLOW
 * bit), and we take the value without the lock either: no queue entry,
 * no locked post, no wakeup to make.  On two CPUs the yield returns at
 * once and the peer, spinning or about to post, is often there already.
 * The caller is not queued meanwhile, as a caller that has not reached
 * the kernel's sleep yet is not (GETNCNT does not count it; a waiter that
 * queues meanwhile comes first).  A handler that runs during a yield ends
 * the call with EINTR, as it would end the kernel's sleep.  Yields that
 * keep failing (the poster is busy elsewhere, or away) stop for the next
 * PREYIELD_SKIP calls of this thread; late yields (a busy task beside us)
 * stop them as they stop the waiter's (sem_yield).  Measured, ping-pong
 * medians of 3 alternating with the kernel: one CPU 326 -> 414 k round
 * trips a second (the kernel 299 k), two CPUs 483 k -> 1.50 M, a busy
 * process beside 289 -> 353 k.
 */
#define PREYIELDS     2
#define PREYIELD_SKIP 64

/* a way of waiting before the queue that stops for SKIP calls after two
 * calls in a row in which it did not pay */
struct wait_budget {
	unsigned fails;            /* calls in a row in which it did not pay */
	unsigned skip;             /* calls left without it */
};

/* is it stopped?  (counts the call) */
static bool budget_skips(struct wait_budget *b)
{
	if (!b->skip)
		return false;
	b->skip--;
	return true;
}

static void budget_result(struct wait_budget *b, bool paid, unsigned skip)
{
	if (paid) {
		b->fails = 0;
	} else if (++b->fails == 2) {
		b->fails = 0;
		b->skip = skip;
	}
}

static __thread struct wait_budget preyield;

/*
 * The same wait when yields do not pay (a task beside us keeps the CPU
 * busy: sem_yield stopped them, or they keep failing) and the poster last
 * ran on our CPU: sleep without queueing, registered as the semaphore's
 * pre-sleeper (see presleep_wake_prepare), until an operation on it
 * completes or a locker sets SLOW, then try again.  As during the yields
 * the caller is not queued (a waiter that queues meanwhile comes first),
 * but GETNCNT counts it, and a handler that runs, or a stop and continue,
 * ends the call with EINTR.  A hand-off then costs a FUTEX_WAKE and a
 * FUTEX_WAIT with no lock, queue entry or journal on either side, where
 * the kernel's wakeup beside a busy task was cheaper than uipc's queued
 * sleep (issue 18).  One pre-sleeper a semaphore: another waiter queues
 * (the general path).  Two sleeps in a row that end without the value stop
 * them for the next PRESLEEP_SKIP calls.
 */
#define PRESLEEP_SKIP 64

static __thread struct wait_budget presleep;
static __thread uint32_t presleep_tokens;

/* this thread's slot + 1, as S->presleeper holds it */
static uint16_t thread_slot1(struct ns *ns, struct uthread *t)
{
	return (uint16_t)((ns_off(ns, t) - ns->lay.threads) / sizeof(*t) + 1);
}

/*
 * T (slot + 1: ME) registered as S's pre-sleeper, for operation OP: false
 * if another one that is still there is.  A registration holds while T's
 * presleep_on names S (presleeper_current): T leaves by clearing it
 * (presleep_leave), and the next one to register takes the slot over; the
 * slot itself is written only here.  A pre-sleeper that goes on to queue
 * leaves under the semaphore's lock (do_semtimedop), so that GETNCNT,
 * which takes every lock, counts it all along, as the kernel counts its
 * sleeper.
 */
static bool presleep_register(struct ns *ns, struct sem *s, struct uthread *t, uint16_t me,
			      int op)
{
	uint16_t cur = atomic_load(&s->presleeper);
	struct uthread *o = cur && cur != me ? thread_at(ns, cur - 1) : NULL;

	if (o && presleeper_current(ns, s, o))
		return false;
	__atomic_store_n(&t->presleep_op, op, __ATOMIC_RELAXED);
	__atomic_store_n(&t->presleep_tword, atomic_load(&t->state), __ATOMIC_RELAXED);
	__atomic_store_n(&t->presleep_on, ns_off(ns, s), __ATOMIC_RELEASE);
	return cur == me || atomic_compare_exchange_strong(&s->presleeper, &cur, me);
}

/* a token for T's word: its own, with owner bits (never PS_WOKEN) */
static uint32_t presleep_arm(struct uthread *t)
{
	uint32_t tok = ++presleep_tokens & PS_OWNER_BITS;

	if (!tok)
		tok = presleep_tokens = 1;
	atomic_store_explicit(&t->presleep, tok, memory_order_relaxed);
	return tok;
}

/*
 * Set W_SLEEPERS on S's word with a CAS that changes it (a stale bit is
 * taken off first), unless the value allows SOP now or a locker is in:
 * 1 set, 0 the value allows it, -1 SLOW (queue).  The CAS is what makes a
 * waker that stored to our word before we armed it try again.
 */
static int presleep_mark(struct sem *s, const struct sembuf *sop)
{
	uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);

	for (;;) {
		if (w & W_SLOW)
			return -1;
		if (W_VAL(w) + sop->sem_op >= 0)
			return 0;                       /* a post came meanwhile */
		if (w & W_SLEEPERS)
			(void)atomic_compare_exchange_weak(&s->word, &w, w & ~W_SLEEPERS);
		else if (atomic_compare_exchange_weak(&s->word, &w, w | W_SLEEPERS))
			return 1;
	}
}

static int semop_presleep(struct ns *ns, int semid, const struct sembuf *sop,
			  struct sem_array **smap, unsigned hand0, int64_t t0)
{
	struct sem_array *sma = *smap;
	struct sem *s = &sma->sems[sop->sem_num];
	struct uthread *t = cur_thread(ns);
	uint32_t *fw, tok, tag = sma->tag;
	bool sleep = false;
	uint16_t me;
	int r;

	if (budget_skips(&presleep) || sop->sem_op >= 0 || poster_elsewhere(s) || !t)
		return LOCKFREE_WOULD_SLEEP;
	/* the tag read before the id is checked again: the array's own */
	if (atomic_load(&sma->perm.deleted) || sma->perm.id != semid)
		return 1;
	me = thread_slot1(ns, t);
	if (!presleep_register(ns, s, t, me, sop->sem_op))
		return LOCKFREE_WOULD_SLEEP;    /* another pre-sleeps: queue */
	tok = presleep_arm(t);
	r = presleep_mark(s, sop);
	if (r < 0)
		return LOCKFREE_WOULD_SLEEP;    /* queue (registered till then) */
	if (r > 0) {
		int64_t t1;

		sleep = true;
		if (t0 < 0)
			t0 = mono_ns();
		uipc_sleep_begin();     /* a stop and continue: EINTR */
		fw = (uint32_t *)&t->presleep;
		if (uipc_wait_words(&fw, &tok, 1, NULL, hand0) < 0 && errno == EINTR) {
			presleep_leave_thread(t);
			return -EINTR;
		}
		/* a sleep as late as a late yield: the busy task is still
		 * there, and the yields stay stopped without giving it a
		 * slice to find that out (yield_result) */
		t1 = mono_ns();
		if (t1 - t0 > YIELD_SLOW_NS)
			yield_result(&sem_yield, t1, t1 - t0);
	}
	/* removed while we slept: what the kernel tells a sleeper (the id's
	 * lookup in the general path says EINVAL to one that did not) */
	if (atomic_load(&sma->perm.deleted) || sma->perm.id != semid) {
		presleep_leave_thread(t);
		return sleep ? -EIDRM : 1;
	}
	r = sem_word_apply(ns, s, sop, tag);
	budget_result(&presleep, r != LOCKFREE_WOULD_SLEEP, PRESLEEP_SKIP);
	if (r != LOCKFREE_WOULD_SLEEP && r != 1)
		presleep_leave_thread(t);       /* else: queue, registered till then */
	return r;
}

static __attribute__((noinline)) int
semop_after_yield(struct ns *ns, int semid, const struct sembuf *sop,
		  const struct ucred_cache *c, struct sem_array **smap, unsigned hand0)
{
	int r = LOCKFREE_WOULD_SLEEP;
	int64_t t;

	if (budget_skips(&preyield))
		return semop_presleep(ns, semid, sop, smap, hand0, -1);
	t = mono_ns();
	if (!yield_allowed(&sem_yield, t))
		return semop_presleep(ns, semid, sop, smap, hand0, t);
	for (int i = 0; i < PREYIELDS && r == LOCKFREE_WOULD_SLEEP; i++) {
		t = timed_yield(t);
		if (uipc_handler_gen() != hand0)
			return -EINTR;
		r = semop_lockfree(ns, semid, sop, c, smap);
	}
	budget_result(&preyield, r != LOCKFREE_WOULD_SLEEP, PREYIELD_SKIP);
	return r;
}

/*
 * semop_one's operation SOP (read from USOP) on SMA that could not be
 * done at once: after a yield, a short sleep, or in the general path.  A call
 * that may sleep (uipc_call_begin): a handler whose signal comes
 * meanwhile runs when it is over.
 */
static __attribute__((noinline)) int
semop_one_waits(struct ns *ns, int semid, const struct sembuf *sop, struct sembuf *usop,
		const struct ucred_cache *c, struct sem_array *sma, unsigned hand0, unsigned how)
{
	int r;

	uipc_call_begin();
	r = semop_after_yield(ns, semid, sop, c, &sma, hand0);
	if (r == 0)
		set_semotime(ns, sma);
	if (r != 0 && r != -ERANGE && r != -EINTR && r != -EIDRM) {
		r = semtimedop_general(hand0, semid, usop, 1, NULL, how | SEMOP_FAST_TRIED);
		presleep_leave(ns);     /* (if the general path did not lock) */
	}
	return (int)uipc_call_end(r);
}

/*
 * The common call, one operation without SEM_UNDO or timeout, that
 * completes at once (or after a yield: semop_after_yield): inline in
 * ksys_semtimedop, without a call of its own (the namespace, the
 * credentials and the sembuf are read inline), so that it does not pay
 * for the general path's frame (600 bytes, six saved registers, the
 * arguments' structure).  Anything else goes to the general path, which
 * decides everything again from the start (errors included, in the
 * kernel's order): nothing has been changed here then.
 */
static __attribute__((always_inline)) inline int
semop_one(unsigned hand0, int semid, struct sembuf *usop, unsigned how)
{
	struct ns *ns = ns_get();
	const struct ucred_cache *c = cur_cred_cached();
	struct sem_array *sma;
	struct sembuf sop;
	int r;

	if (likely(ns && c && semid >= 0) && ns->hdr->lim.semopm >= 1 &&
	    !uipc_get_user_6(&sop, usop) && !(sop.sem_flg & SEM_UNDO)) {
		r = semop_lockfree(ns, semid, &sop, c, &sma);
		if (unlikely(r == LOCKFREE_WOULD_SLEEP))
			return semop_one_waits(ns, semid, &sop, usop, c, sma, hand0, how);
		if (likely(r == 0))
			set_semotime(ns, sma);
		if (r == 0 || r == -ERANGE || r == -EIDRM)
			return r;
	}
	return semtimedop_general(hand0, semid, usop, 1, NULL, how | SEMOP_FAST_TRIED);
}

int ksys_semtimedop(unsigned hand0, int semid, struct sembuf *tsops, size_t nsops_arg,
		    const struct timespec *timeout, bool has_timeout)
{
	unsigned how = has_timeout ? SEMOP_TIMED : 0;

	if (nsops_arg == 1 && !timeout)
		return semop_one(hand0, semid, tsops, how);
	return semtimedop_general(hand0, semid, tsops, nsops_arg, timeout, how);
}

static __attribute__((noinline)) int
semtimedop_general(unsigned hand0, int semid, struct sembuf *tsops, size_t nsops_arg,
		   const struct timespec *timeout, unsigned how)
{
	bool has_timeout = how & SEMOP_TIMED, fast_tried = how & SEMOP_FAST_TRIED;
	unsigned int nsops = (unsigned int)nsops_arg;
	struct ns *ns;
	struct timespec ts, deadline;
	struct sembuf fast[16], *sops = fast;
	struct semop_args a = { .hand0 = hand0 };
	bool bounded;
	int r;

	if (has_timeout && timeout && uipc_copy_from_user(&ts, timeout, sizeof(ts)))
		return -EFAULT;
	ns = ns_get();
	if (!ns)
		return -errno;
	if (nsops > (unsigned int)ns->hdr->lim.semopm)
		return -E2BIG;
	if (nsops < 1)
		return -EINVAL;
	if (nsops > 16) {
		sops = malloc(nsops * sizeof(*sops));
		if (!sops)
			return -ENOMEM;
	}
	if (uipc_copy_from_user(sops, tsops, nsops * sizeof(*sops))) {
		r = -EFAULT;
		goto out;
	}
	if (semid < 0) {
		r = -EINVAL;
		goto out;
	}
	if (has_timeout && timeout) {
		if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000L) {
			r = -EINVAL;
			goto out;
		}
	}
	/* the fast path: one op, no SEM_UNDO, nobody waiting */
	if (nsops == 1 && !(sops[0].sem_flg & SEM_UNDO) && !fast_tried) {
		r = semop_fast(ns, semid, sops);
		if (r == 0 || r == -ERANGE)
			goto out;
		/* EAGAIN or must sleep: the slow path first reaps dead holders */
	}
	if (has_timeout && timeout) {
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		/* a timeout of centuries is for ever: the deadline stays a
		 * number of nanoseconds an int64_t holds */
		deadline.tv_sec += ts.tv_sec < SEM_TIMEOUT_MAX_S ? ts.tv_sec : SEM_TIMEOUT_MAX_S;
		deadline.tv_nsec += ts.tv_nsec;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
	}
	a.semid = semid;
	a.sops = sops;
	a.nsops = (int)nsops;
	scan_sops(&a);
	/* a handler whose signal comes from here on runs once the call has
	 * left every queue (uipc_call_begin) */
	uipc_call_begin();
	/* a call that may sleep keeps its timeout and stays interruptible
	 * while it waits for a lock too (core/lockwait.c) */
	bounded = may_sleep(&a);
	if (bounded)
		lockwait_bound_blocking(has_timeout && timeout ? &deadline : NULL, hand0);
	/* each retry follows a dead holder reaped: bounded all the same,
	 * since what says "dead" is in the arena */
	for (int tries = 0; tries < 4096; tries++) {
		r = do_semtimedop(ns, &a, has_timeout && timeout ? &deadline : NULL);
		if (r != SEMOP_RETRY)
			break;
	}
	if (r == SEMOP_RETRY)
		r = -EIDRM;
	if (bounded)
		lockwait_bound_end();
	r = (int)uipc_call_end(r);
out:
	if (sops != fast)
		free(sops);
	return r;
}

/* ---- semctl ---- */

union semun {
	int val;
	struct semid_ds *buf;
	unsigned short *array;
	struct seminfo *__buf;
};

static int semctl_info(struct ns *ns, int cmd, void *p)
{
	struct uipc_hdr *h = ns->hdr;
	struct seminfo si;
	int r, maxidx;

	memset(&si, 0, sizeof(si));
	si.semmni = h->lim.semmni;
	si.semmns = h->lim.semmns;
	si.semmsl = h->lim.semmsl;
	si.semopm = h->lim.semopm;
	si.semvmx = SEMVMX_MAX;
	si.semmnu = SEMMNS_DEF;    /* the kernel's constants SEMMNU, SEMMAP */
	si.semmap = SEMMNS_DEF;
	si.semume = SEMUME_DEF;
	r = ids_lock(ns, IPC_SEM_IDS);
	if (r)
		return r;
	if (cmd == SEM_INFO) {
		si.semusz = h->ids[IPC_SEM_IDS].in_use;
		si.semaem = (int)h->used_sems;
	} else {
		si.semusz = SEMUSZ_DEF;
		si.semaem = SEMAEM_MAX;
	}
	maxidx = ipc_get_maxidx(ns, IPC_SEM_IDS);
	ids_unlock(ns, IPC_SEM_IDS);
	if (uipc_copy_to_user(p, &si, sizeof(si)))
		return -EFAULT;
	return maxidx < 0 ? 0 : maxidx;
}

static int semctl_stat(struct ns *ns, int semid, int cmd, struct semid_ds *out)
{
	struct sem_array *sma;
	struct uperm *p;
	int err = 0, locknum, n, id;

	memset(out, 0, sizeof(*out));
	p = ipc_obtain_for_stat(ns, IPC_SEM_IDS, semid, cmd != IPC_STAT, cmd == SEM_STAT_ANY, &err);
	if (!p)
		return err;
	sma = sma_of(p);
	if (!sem_count(ns, sma))
		return -EIDRM;
	/* (its id as found: by index, one whose creation has committed;
	 * -1 now: its block is being made into another array, newary) */
	id = __atomic_load_n(&sma->perm.id, __ATOMIC_ACQUIRE);
	if (id < 0)
		return cmd == IPC_STAT ? -EIDRM : -EINVAL;
	reap_dead_holders(ns, sma, id);
	locknum = sem_lock_all(ns, sma);
	if (locknum < SEM_GLOBAL_LOCK)
		return locknum;
	n = sem_count(ns, sma);
	id = sma->perm.id;
	/* removed and its block made into an array not yet committed since
	 * we found it (newary: id -1), or into another array */
	if (id < 0 || (cmd == IPC_STAT && id != semid)) {
		sem_unlock(ns, sma, locknum);
		return cmd == IPC_STAT ? -EIDRM : -EINVAL;
	}
	/* the caller sizes its GETALL buffer by this: remembered (validate.c) */
	if (atomic_load(&sma->perm.deleted) || !n || ipc_seen_size(ns, IPC_SEM_IDS, id, (uint64_t)n)) {
		sem_unlock(ns, sma, locknum);
		return -EIDRM;
	}
	ipc_fill_perm(ns, &sma->perm, &out->sem_perm);
	out->sem_otime = atomic_load(&sma->otime);
	out->sem_ctime = sma->ctime;
	out->sem_nsems = (unsigned long)n;
	err = cmd == IPC_STAT ? 0 : id;
	sem_unlock(ns, sma, locknum);
	return err;
}

/*
 * SETVAL of SEMNUM, or SETALL (-1): every undo entry's adjustment of the
 * array (N semaphores, sem_count) for it is void.  An entry's own count
 * is trusted only up to N: each zeroed adjustment is a journaled store,
 * and a forged count would make millions of them.
 */
static void zero_semadj(struct ns *ns, struct sem_array *sma, int n, int semnum)
{
	uoff_t o = sma->undo_list;
	int guard = 0;

	struct walk w = WALK_INIT;

	while (o && guard++ < UNDO_ARRAY_WALK_MAX && !walk_loops(&w, o)) {
		struct sem_undo *u = un_at(ns, o);
		int un_n, lim;

		if (!u)
			break;
		un_n = un_count(ns, u);
		lim = un_n < n ? un_n : n;
		if (semnum >= 0) {
			if (semnum < lim && u->semadj[semnum])
				J_SET(ns, u->semadj[semnum], (int16_t)0);
		} else {
			for (int i = 0; i < lim; i++)
				if (u->semadj[i])
					J_SET(ns, u->semadj[i], (int16_t)0);
		}
		o = u->id_next;
	}
}

static int semctl_setval(struct ns *ns, int semid, int semnum, int val)
{
	struct sem_array *sma;
	struct wake_q wq;
	struct sem *s;
	int err = 0, locknum, n;

	wake_q_init(&wq);
	if (val > SEMVMX_MAX || val < 0)
		return -ERANGE;
	sma = sem_obtain_count(ns, semid, &err, &n);
	if (!sma)
		return err;
	if (semnum < 0 || semnum >= n)
		return -EINVAL;
	if (ipcperms(&sma->perm, 0222))
		return -EACCES;
	locknum = sem_lock_all(ns, sma);
	if (locknum < SEM_GLOBAL_LOCK)
		return locknum;
	if (!sma_valid(sma, semid)) {
		sem_unlock(ns, sma, locknum);
		return -EIDRM;
	}
	s = &sma->sems[semnum];
	zero_semadj(ns, sma, n, semnum);
	set_word(ns, s, w_make(atomic_load(&s->word), val, cur_pid()));
	J_SET(ns, sma->ctime, ipc_now());
	do_smart_update(ns, sma, NULL, 0, 0, &wq);
	sem_unlock(ns, sma, locknum);
	wake_up_q(ns, &wq, sma);
	return 0;
}

static int semctl_main(struct ns *ns, int semid, int semnum, int cmd, void *p)
{
	struct sem_array *sma;
	struct wake_q wq;
	unsigned short *io = NULL;
	int err = 0, locknum, nsems, i;
	bool reading;

	wake_q_init(&wq);
	/* checked against the array's block; for GETALL and SETALL also
	 * against what this process knows of it: the caller's buffer holds
	 * the count the array had when the caller learnt it (validate.c) */
	sma = sem_obtain_count(ns, semid, &err, &nsems);
	if (!sma)
		return err;
	if ((cmd == GETALL || cmd == SETALL) &&
	    ipc_seen_size(ns, IPC_SEM_IDS, semid, (uint64_t)nsems))
		return -EIDRM;
	if (ipcperms(&sma->perm, cmd == SETALL ? 0222 : 0444))
		return -EACCES;
	reap_dead_holders(ns, sma, semid);
	if (cmd == GETALL || cmd == SETALL) {
		io = malloc((size_t)(nsems > 0 ? nsems : 1) * sizeof(*io));
		if (!io)
			return -ENOMEM;
	}
	if (cmd == SETALL) {
		if (uipc_copy_from_user(io, p, (size_t)nsems * sizeof(*io))) {
			err = -EFAULT;
			goto out;
		}
		for (i = 0; i < nsems; i++) {
			if (io[i] > SEMVMX_MAX) {
				err = -ERANGE;
				goto out;
			}
		}
	} else if (cmd != GETALL && (semnum < 0 || semnum >= nsems)) {
		err = -EINVAL;
		goto out;
	}
	reading = cmd == GETVAL || cmd == GETPID;
	locknum = reading ? sem_lock_read(ns, sma, semnum) : sem_lock_all(ns, sma);
	if (locknum < SEM_GLOBAL_LOCK) {
		err = locknum;
		goto out;
	}
	if (!sma_valid(sma, semid)) {
		if (reading)
			sem_unlock_read(ns, sma, locknum);
		else
			sem_unlock(ns, sma, locknum);
		err = -EIDRM;
		goto out;
	}
	switch (cmd) {
	case GETALL:
		for (i = 0; i < nsems; i++)
			io[i] = (unsigned short)W_VAL(atomic_load(&sma->sems[i].word));
		break;
	case SETALL:
		for (i = 0; i < nsems; i++) {
			struct sem *s = &sma->sems[i];

			set_word(ns, s, w_make(atomic_load(&s->word), io[i], cur_pid()));
		}
		zero_semadj(ns, sma, nsems, -1);
		J_SET(ns, sma->ctime, ipc_now());
		do_smart_update(ns, sma, NULL, 0, 0, &wq);
		err = 0;
		break;
	case GETVAL:
		err = W_VAL(atomic_load(&sma->sems[semnum].word));
		break;
	case GETPID:
		err = W_PID(atomic_load(&sma->sems[semnum].word));
		break;
	case GETNCNT:
		err = count_semcnt(ns, sma, semnum, false);
		break;
	case GETZCNT:
		err = count_semcnt(ns, sma, semnum, true);
		break;
	}
	if (reading) {
		sem_unlock_read(ns, sma, locknum);
		return err;
	}
	sem_unlock(ns, sma, locknum);
	wake_up_q(ns, &wq, sma);
	if (cmd == GETALL && uipc_copy_to_user(p, io, (size_t)nsems * sizeof(*io)))
		err = -EFAULT;
out:
	free(io);
	return err;
}

/* every sleeper of list L fails with EIDRM (freeary) */
static void fail_list(struct ns *ns, struct sem_array *sma, struct qlist *l, struct wake_q *wq)
{
	struct walk w = WALK_INIT;
	int guard = 0;

	while (!list_empty(l)) {
		struct semq *q = q_at(ns, l->first);

		if (!q || guard++ >= SEMQ_WALK_MAX || walk_loops(&w, l->first)) {
			J_SET(ns, *l, ((struct qlist){ 0, 0 }));
			break;
		}
		unlink_queue(ns, sma, q);
		wake_up_sem_queue_prepare(ns, q, -EIDRM, wq);
	}
}

/* freeary: IPC_RMID (ids lock and array lock held) */
static void freeary(struct ns *ns, struct sem_array *sma, struct wake_q *wq)
{
	int i, n = sem_count(ns, sma), guard = 0;
	uoff_t o;

	/* the undo entries of every process die with the array; each process
	 * drops its dead entries from its own list (prune_undo, exit) */
	o = sma->undo_list;
	struct walk w = WALK_INIT;

	while (o && guard++ < UNDO_ARRAY_WALK_MAX && !walk_loops(&w, o)) {
		struct sem_undo *u = un_at(ns, o);

		if (!u)
			break;
		o = u->id_next;
		un_mark_spent_at_commit(ns, u);
		J_SET(ns, u->in_array, 0u);
	}
	J_SET(ns, sma->undo_list, (uoff_t)0);
	/* every sleeper fails with EIDRM */
	fail_list(ns, sma, &sma->pend_const, wq);
	fail_list(ns, sma, &sma->pend_alter, wq);
	for (i = 0; i < n; i++) {
		struct sem *s = &sma->sems[i];

		if (sem_has_waiters(s)) {
			fail_list(ns, sma, &s->pend_const, wq);
			fail_list(ns, sma, &s->pend_alter, wq);
		}
		/* stop the fast path for good: the tag goes too */
		set_word(ns, s, W_SLOW);
	}
	J_SET(ns, *(uint32_t *)&sma->perm.deleted, 1u);
}

static int semctl_down(struct ns *ns, int semid, int cmd, struct semid_ds *in)
{
	struct ipc_ids *ids = &ns->hdr->ids[IPC_SEM_IDS];
	struct wake_q wq;
	struct sem_array *sma;
	int err = 0, locknum, r;

	wake_q_init(&wq);
	r = ids_lock(ns, IPC_SEM_IDS);
	if (r)
		return r;
	sma = sem_obtain_check(ns, semid, &err);
	if (!sma)
		goto out;
	if (!ipc_owner_or_admin(&sma->perm)) {
		err = -EPERM;
		goto out;
	}
	locknum = sem_lock_all(ns, sma);
	if (locknum < SEM_GLOBAL_LOCK) {
		err = locknum;
		goto out;
	}
	if (cmd == IPC_RMID) {
		const uint64_t *gen = arena_gen_word(ns, ns_off(ns, sma));
		struct jframe *prev;

		/*
		 * The array's section commits after the ids section, which
		 * frees the array's block (its generation changes then): a
		 * holder killed between the two commits leaves this section
		 * to be rolled forward (the array stays removed), never back
		 * into a block that is free or already another array.
		 */
		if (gen)
			j_guard(ns, gen, &ids->lock);
		freeary(ns, sma, &wq);
		/*
		 * The table changes are the ids lock's: journal them there and
		 * commit them first.  If we die before the array section
		 * commits, its rollback leaves an invisible array whose
		 * sleepers find it removed at their next time slice.
		 */
		prev = j_target(ns, &ids->lock);
		ipc_rmid(ns, IPC_SEM_IDS, &sma->perm);
		/* unsigned: a forged count must not make this overflow */
		J_SET(ns, ns->hdr->used_sems, (int64_t)((uint64_t)ns->hdr->used_sems -
							  (uint64_t)sem_count(ns, sma)));
		arena_free(ns, ns_off(ns, sma));
		j_target_restore(prev);
		ipc_seen_forget(ns, IPC_SEM_IDS, semid);
		/* commit the ids section first (and free the array), then
		 * release in order: the kernel's order, and no out-of-order
		 * release for the journal to sort out */
		ulock_commit_partner(ns, &ids->lock);
		sem_unlock(ns, sma, locknum);
		ids_unlock(ns, IPC_SEM_IDS);
		wake_up_q(ns, &wq, NULL);
		return 0;
	} else {
		if (in->sem_perm.uid == (uid_t)-1 || in->sem_perm.gid == (gid_t)-1)
			err = -EINVAL;
		else
			err = ipc_update_perm(ns, &sma->perm, &in->sem_perm);
		if (!err)   /* (a failed update stored nothing) */
			J_SET(ns, sma->ctime, ipc_now());
		sem_unlock(ns, sma, locknum);
	}
out:
	ids_unlock(ns, IPC_SEM_IDS);
	wake_up_q(ns, &wq, NULL);
	return err;
}

static int semctl_common(int semid, int semnum, int cmd, union semun arg)
{
	struct ns *ns = ns_get();
	struct semid_ds ds;
	int err;

	if (!ns)
		return -errno;
	if (semid < 0)
		return -EINVAL;
	switch (cmd) {
	case IPC_INFO:
	case SEM_INFO:
		return semctl_info(ns, cmd, arg.__buf);
	case IPC_STAT:
	case SEM_STAT:
	case SEM_STAT_ANY:
		err = semctl_stat(ns, semid, cmd, &ds);
		if (err < 0)
			return err;
		if (uipc_copy_to_user(arg.buf, &ds, sizeof(ds)))
			return -EFAULT;
		return err;
	case GETALL:
	case GETVAL:
	case GETPID:
	case GETNCNT:
	case GETZCNT:
	case SETALL:
		return semctl_main(ns, semid, semnum, cmd, arg.array);
	case SETVAL:
		return semctl_setval(ns, semid, semnum, arg.val);
	case IPC_SET:
		if (uipc_copy_from_user(&ds, arg.buf, sizeof(ds)))
			return -EFAULT;
		/* fall through */
	case IPC_RMID:
		return semctl_down(ns, semid, cmd, &ds);
	default:
		return -EINVAL;
	}
}

/* the raw system call: ARG is the value for SETVAL (an int, as the kernel
 * reads it), a pointer for the others */
int ksys_semctl(int semid, int semnum, int cmd, unsigned long arg)
{
	union semun u = { 0 };

	if (cmd == SETVAL)
		u.val = (int)arg;
	else
		u.buf = (struct semid_ds *)(uintptr_t)arg;
	return semctl_common(semid, semnum, cmd, u);
}

/* ---- exit_sem ---- */

/*
 * Apply and drop every undo entry of process P (its own exit, or a reaper).
 * Per entry: under the array lock the adjustment is applied and the entry
 * marked spent (semid -1) in one section; then, under the process lock, the
 * spent entry leaves the process list.  A crash between the two leaves a
 * spent entry that the next pass drops without applying it twice.
 */
void sem_exit_proc(struct ns *ns, struct uproc *p)
{
	int guard = 0;

	/* one entry per array at most: a longer list is a corrupt one */
	while (guard++ < UNDO_PROC_WALK_MAX(ns)) {
		struct sem_array *sma;
		struct sem_undo *un;
		struct wake_q wq;
		int semid, err = 0, locknum, i;

		wake_q_init(&wq);
		if (ulock_acquire(ns, &p->lock))
			return;
		prune_undo(ns, p);
		un = un_at(ns, p->undo);
		semid = un ? un->semid : 0;
		ulock_release(ns, &p->lock);
		if (!un)
			return;
		sma = sem_obtain_check(ns, semid, &err);
		if (sma) {
			locknum = sem_lock_all(ns, sma);
			if (locknum != SEM_GLOBAL_LOCK)
				return;
			if (sma_valid(sma, semid) && un->semid == semid) {
				int n = sem_count(ns, sma), un_n = un_count(ns, un);

				unlink_undo_id(ns, sma, un);
				for (i = 0; i < n && i < un_n; i++) {
					struct sem *s = &sma->sems[i];
					uint64_t w = atomic_load(&s->word);
					int v;

					if (!un->semadj[i])
						continue;
					v = W_VAL(w) + un->semadj[i];
					if (v < 0)
						v = 0;
					if (v > SEMVMX_MAX)
						v = SEMVMX_MAX;
					set_word(ns, s, w_make(w, v, p->pid));
				}
				do_smart_update(ns, sma, NULL, 0, 1, &wq);
			}
			un_mark_spent_at_commit(ns, un);
			sem_unlock(ns, sma, locknum);
			wake_up_q(ns, &wq, sma);
		} else {
			/* the array is gone: the entry is spent */
			if (ulock_acquire(ns, &p->lock))
				return;
			if (un->semid == semid)
				J_SET(ns, un->semid, -1);
			ulock_release(ns, &p->lock);
		}
	}
}

/* ---- fsck: the invariants of one array (uipc_ns_check) ---- */

#define SEM_PROBLEM(...) do {                                                       \
		bad++;                                                              \
		if (report && *used < len)                                          \
			*used += (size_t)snprintf(report + *used, len - *used, __VA_ARGS__); \
	} while (0)

/* one pending list: links both ways, entries waiting, ops in range (N:
 * the array's checked count) */
static int sem_check_list(struct ns *ns, struct sem_array *sma, int n, struct qlist *l,
			  const char *what, int semnum, int *count, char *report, size_t len,
			  size_t *used)
{
	uoff_t o = l->first, prev = 0;
	int bad = 0, guard = 0, id = sma->perm.id;
	struct walk w = WALK_INIT;

	while (o) {
		struct semq *q = q_at(ns, o);
		struct sembuf *sops;
		int nsops;

		if (!q || !(sops = q_ops(ns, q, &nsops))) {
			SEM_PROBLEM("sem %d: %s list (sem %d) leads outside the arena (%llu)\n", id, what,
				    semnum, (unsigned long long)o);
			return bad;
		}
		if (++guard > SEMQ_WALK_MAX || walk_loops(&w, o)) {
			SEM_PROBLEM("sem %d: %s list (sem %d) loops\n", id, what, semnum);
			return bad;
		}
		if (q->prev != prev)
			SEM_PROBLEM("sem %d: %s list (sem %d): back link of %llu is %llu, not %llu\n", id,
				    what, semnum, (unsigned long long)o, (unsigned long long)q->prev,
				    (unsigned long long)prev);
		if (!q->linked || atomic_load(&q->status) != QS_WAITING)
			SEM_PROBLEM("sem %d: %s list (sem %d): entry %llu is not a waiting one (linked %u, status %d)\n",
				    id, what, semnum, (unsigned long long)o, q->linked,
				    (int)atomic_load(&q->status));
		for (int i = 0; i < nsops; i++)
			if (sops[i].sem_num >= n) {
				SEM_PROBLEM("sem %d: %s list (sem %d): entry %llu names semaphore %u of %d\n",
					    id, what, semnum, (unsigned long long)o, sops[i].sem_num, n);
				break;
			}
		if (semnum >= 0 && nsops == 1 && sops[0].sem_num != semnum)
			SEM_PROBLEM("sem %d: entry %llu for semaphore %u is on semaphore %d's list\n", id,
				    (unsigned long long)o, sops[0].sem_num, semnum);
		(*count)++;
		prev = o;
		o = q->next;
	}
	if (l->last != prev)
		SEM_PROBLEM("sem %d: %s list (sem %d) ends at %llu, its tail says %llu\n", id, what, semnum,
			    (unsigned long long)prev, (unsigned long long)l->last);
	return bad;
}

/* the multi-op sleepers on the array lists, against complex_count */
static int sem_check_complex(struct ns *ns, struct sem_array *sma, char *report, size_t len,
			     size_t *used)
{
	struct qlist *ls[2] = { &sma->pend_alter, &sma->pend_const };
	int bad = 0, multi = 0, id = sma->perm.id;

	for (int k = 0; k < 2; k++) {
		struct walk w = WALK_INIT;
		int guard = 0;

		for (uoff_t o = ls[k]->first; o && guard++ < SEMQ_WALK_MAX &&
		     !walk_loops(&w, o);) {
			struct semq *q = q_at(ns, o);

			if (!q)
				break;
			multi += q->nsops > 1;
			o = q->next;
		}
	}
	if (multi != sma->complex_count)
		SEM_PROBLEM("sem %d: %d multi-op sleepers, complex_count says %d\n", id, multi,
			    sma->complex_count);
	return bad;
}

/* is undo entry O on the list of its process P?  (array lock held; takes
 * P's lock: lock order array, then process, as find_alloc_undo) */
static bool undo_on_proc_list(struct ns *ns, struct uproc *p, uoff_t o)
{
	uoff_t x;
	int g = 0;

	if (ulock_acquire(ns, &p->lock))
		return true;    /* cannot tell: not a problem we saw */
	x = p->undo;
	while (x && x != o && g++ < UNDO_PROC_WALK_MAX(ns)) {
		struct sem_undo *pu = un_at(ns, x);

		x = pu ? pu->proc_next : 0;
	}
	ulock_release(ns, &p->lock);
	return x == o;
}

/* the array's SEM_UNDO list: both links, entries of this array and of a
 * process slot in use, on that process's list, adjustments in range */
static int sem_check_undo(struct ns *ns, struct sem_array *sma, int n, char *report, size_t len,
			  size_t *used)
{
	int bad = 0, guard = 0, id = sma->perm.id;
	struct walk w = WALK_INIT;
	uoff_t o, prev = 0;

	for (o = sma->undo_list; o;) {
		struct sem_undo *u = un_at(ns, o);
		struct uproc *p;
		int un_n;

		if (!u) {
			SEM_PROBLEM("sem %d: undo list leads outside the arena (%llu)\n", id,
				    (unsigned long long)o);
			break;
		}
		if (++guard > UNDO_ARRAY_WALK_MAX || walk_loops(&w, o)) {
			SEM_PROBLEM("sem %d: undo list loops\n", id);
			break;
		}
		un_n = un_count(ns, u);
		if (u->id_prev != prev)
			SEM_PROBLEM("sem %d: undo entry %llu: back link %llu, not %llu\n", id,
				    (unsigned long long)o, (unsigned long long)u->id_prev,
				    (unsigned long long)prev);
		if (u->semid != id || !u->in_array || un_n != n)
			SEM_PROBLEM("sem %d: undo entry %llu is for id %d (in array %u, %d semaphores)\n",
				    id, (unsigned long long)o, u->semid, u->in_array, un_n);
		p = proc_at(ns, u->proc);
		if (!p || SLOT_STATE(atomic_load(&p->state)) == SLOT_FREE)
			SEM_PROBLEM("sem %d: undo entry %llu belongs to process slot %u, which is free "
				    "(its adjustments were never applied)\n", id, (unsigned long long)o,
				    u->proc);
		else if (!undo_on_proc_list(ns, p, o))
			SEM_PROBLEM("sem %d: undo entry %llu is not on the list of its process (slot %u)\n",
				    id, (unsigned long long)o, u->proc);
		for (int i = 0; i < un_n && i < n; i++)
			if (u->semadj[i] < -SEMAEM_MAX)
				SEM_PROBLEM("sem %d: undo entry %llu: adjustment %d of semaphore %d\n", id,
					    (unsigned long long)o, u->semadj[i], i);
		prev = o;
		o = u->id_next;
	}
	return bad;
}

/*
 * With the whole array locked: values in 0..SEMVMX and tagged with the
 * array, pending lists well formed (both links, waiting entries, ops in
 * range, the complex count), SEM_UNDO entries linked both ways, of this
 * array and of a process slot that is in use, adjustments in range.
 * Returns the number of problems, described in REPORT.
 */
int sem_check_obj(struct ns *ns, struct uperm *perm, char *report, size_t len, size_t *used)
{
	struct sem_array *sma = sma_of(perm);
	int bad = 0, locknum, id = perm->id, complex = 0, waiting = 0, n = sem_count(ns, sma);

	if (!n) {
		SEM_PROBLEM("sem %d: %d semaphores, not inside its block\n", id, sma->nsems);
		return bad;
	}
	locknum = sem_lock_all(ns, sma);
	if (locknum != SEM_GLOBAL_LOCK) {
		SEM_PROBLEM("sem %d: cannot lock the array (%d)\n", id, locknum);
		return bad;
	}
	if (!sma_valid(sma, id)) {
		sem_unlock(ns, sma, locknum);
		return 0;       /* removed meanwhile */
	}
	n = sem_count(ns, sma);
	for (int i = 0; i < n; i++) {
		struct sem *s = &sma->sems[i];
		uint64_t w = atomic_load(&s->word);

		if (W_VAL(w) > SEMVMX_MAX)
			SEM_PROBLEM("sem %d: semaphore %d is %d\n", id, i, W_VAL(w));
		if ((W_TAG(w) & W_TAG_MASK) != (sma->tag & W_TAG_MASK))
			SEM_PROBLEM("sem %d: semaphore %d carries another array's tag\n", id, i);
		bad += sem_check_list(ns, sma, n, &s->pend_alter, "alter", i, &waiting, report, len, used);
		bad += sem_check_list(ns, sma, n, &s->pend_const, "const", i, &waiting, report, len, used);
	}
	bad += sem_check_list(ns, sma, n, &sma->pend_alter, "array alter", -1, &complex, report, len,
			      used);
	bad += sem_check_list(ns, sma, n, &sma->pend_const, "array const", -1, &complex, report, len,
			      used);
	bad += sem_check_complex(ns, sma, report, len, used);
	bad += sem_check_undo(ns, sma, n, report, len, used);
	sem_unlock(ns, sma, locknum);
	return bad;
}

/* fsck, before any lock is taken: the semaphores' own locks of array P
 * whose holder is stopped (namespace.c reports the array's lock) */
int sem_report_stopped(struct ns *ns, struct uperm *p, lock_report_fn report_one, char *report,
		       size_t len, size_t *used)
{
	struct sem_array *sma = sma_of(p);
	int bad = 0, n = sem_count(ns, sma), id = p->id;

	for (int i = 0; i < n; i++)
		bad += report_one(ns, &sma->sems[i].lock, "a semaphore of array", id, report, len, used);
	return bad;
}

/* ---- /proc/sysvipc/sem ---- */

/* the line of the array at index IDX, as the kernel's /proc/sysvipc/sem
 * prints it (every array, whatever the reader's permissions); its length,
 * or 0 when nothing lives at IDX */
int sem_proc_show(int idx, char *buf, size_t len)
{
	struct semid_ds ds;
	int id = ksys_semctl(idx, 0, SEM_STAT_ANY, (unsigned long)&ds);
	int n;

	if (id < 0)
		return 0;
	n = snprintf(buf, len, "%10d %10d  %4o %10u %5u %5u %5u %5u %10llu %10llu\n",
		     ds.sem_perm.__key, id, ds.sem_perm.mode, (unsigned)ds.sem_nsems,
		     ds.sem_perm.uid, ds.sem_perm.gid, ds.sem_perm.cuid, ds.sem_perm.cgid,
		     (unsigned long long)ds.sem_otime, (unsigned long long)ds.sem_ctime);
	return n < 0 || (size_t)n >= len ? 0 : n;
}
