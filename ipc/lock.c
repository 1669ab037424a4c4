/*
 * lock.c - robust locks in the arena and the undo journal behind them.
 *
 * Every critical section on shared state is bracketed by ulock_acquire() and
 * ulock_release().  Inside it, every store to the arena goes through
 * j_store() (or J_SET), which first records the old bytes in the holder's
 * journal frame.  If the holder dies (SIGKILL at any instruction), the kernel
 * marks the robust mutex owner-dead and the next locker rolls the frame back
 * before it goes on, so a half-done change is never seen.  Blocks allocated
 * inside a section are freed by the rollback; blocks freed by a section are
 * freed only after it commits, and that deferred work is redone by the next
 * locker if the holder died between commit and release.
 */
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "signals.h"

#define FUTEX_TID_MASK_    0x3fffffffu
#define FUTEX_OWNER_DIED_  0x40000000u
#define FUTEX_WAITERS_     0x80000000u

int ulock_init(struct ulock *l)
{
	pthread_mutexattr_t a;
	int r;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	r = pthread_mutex_init(&l->m, &a);
	pthread_mutexattr_destroy(&a);
	atomic_store(&l->frame, 0);
	return -r;
}

struct jentry *j_slot(struct ns *ns, struct jframe *f, uint32_t i, bool grow)
{
	uoff_t *link;
	uint32_t k;

	if (i < J_INLINE)
		return &f->e[i];
	i -= J_INLINE;
	link = &f->chunks;
	for (k = 0; k <= i / J_CHUNK; k++) {
		struct jchunk *c = *link ? ns_ptr(ns, *link, sizeof(*c)) : NULL;

		if (!c) {
			uoff_t n;

			if (!grow)
				return NULL;
			n = arena_alloc_raw(ns, sizeof(struct jchunk), POOL_GENERAL);
			if (!n)
				return NULL;
			c = ns_ptr(ns, n, sizeof(*c));
			c->next = 0;
			*link = n;
		}
		if (k == i / J_CHUNK)
			return &c->e[i % J_CHUNK];
		link = &c->next;
	}
	return NULL;
}

static inline uint64_t load_bytes(const void *p, unsigned size)
{
	uint64_t v = 0;

	switch (size) {
	case 1: return __atomic_load_n((const uint8_t *)p, __ATOMIC_RELAXED);
	case 2: return __atomic_load_n((const uint16_t *)p, __ATOMIC_RELAXED);
	case 4: return __atomic_load_n((const uint32_t *)p, __ATOMIC_RELAXED);
	case 8: return __atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED);
	default: memcpy(&v, p, size); return v;
	}
}

static void store_bytes(void *p, const void *val, unsigned size)
{
	switch (size) {
	case 1: __atomic_store_n((uint8_t *)p, *(const uint8_t *)val, __ATOMIC_RELAXED); break;
	case 2: __atomic_store_n((uint16_t *)p, *(const uint16_t *)val, __ATOMIC_RELAXED); break;
	case 4: __atomic_store_n((uint32_t *)p, *(const uint32_t *)val, __ATOMIC_RELAXED); break;
	case 8: __atomic_store_n((uint64_t *)p, *(const uint64_t *)val, __ATOMIC_RELAXED); break;
	default: memcpy(p, val, size); break;
	}
}

/*
 * The frames a thread holds, most recent last (process-local: only this
 * thread uses it).  Stores go to the frame of the most recent lock unless
 * j_target() redirected them to the frame of another lock the thread holds:
 * every store is journaled in the frame of the lock that protects it.
 */
static __thread int held[JDEPTH];
static __thread int nheld;
static __thread struct jframe *target;
static __thread struct jframe *saved_target[JDEPTH];
static __thread struct jframe *cur_frame;   /* what j_top() answers, cached */

static __thread struct jframe *top_held_frame;

/*
 * The frames of this thread's open sections that recorded a deferred free
 * (process-local: a commit needs to look for frees only in these; recovery
 * after a crash scans every entry anyway).
 */
static __thread struct jframe *freeing[JDEPTH];
static __thread int nfreeing;

static void note_freeing(struct jframe *f)
{
	for (int i = 0; i < nfreeing; i++)
		if (freeing[i] == f)
			return;
	if (nfreeing < JDEPTH)
		freeing[nfreeing++] = f;
}

/* was F noted (and forget it): its commit must do its deferred frees */
static bool take_freeing(struct jframe *f)
{
	for (int i = 0; i < nfreeing; i++) {
		if (freeing[i] == f) {
			freeing[i] = freeing[--nfreeing];
			return true;
		}
	}
	return false;
}


static void update_cur_frame(struct uthread *t)
{
	top_held_frame = nheld && t ? &t->frames[held[nheld - 1]] : NULL;
	cur_frame = target ? target : top_held_frame;
}


/*
 * UIPC_BENCH_NO_JOURNAL: a measurement-only build (bench/bench.mk builds it
 * into build/nojournal/libuipc.so for bench/journal-cost.sh; never the
 * default, never used by tests).  It is uipc without the undo journal: no
 * section has a frame, so every J_SET is a plain store, arena_alloc records
 * nothing, arena_free frees at once and j_abort undoes nothing (error paths
 * that rely on it are wrong there: only for benchmarks that make no errors).
 * The robust mutexes and the signal hold-off stay.  SIGKILL inside a section
 * is not recovered.
 */
struct jframe *j_top(struct ns *ns)
{
	(void)ns;
#ifdef UIPC_BENCH_NO_JOURNAL
	return NULL;
#endif
	return cur_frame;
}

struct jframe *j_target(struct ns *ns, struct ulock *l)
{
	struct jframe *prev = target;

	target = l ? ns_ptr(ns, atomic_load(&l->frame), sizeof(struct jframe)) : NULL;
	update_cur_frame(cur_thread(ns));
	return prev;
}

void j_target_restore(struct jframe *prev)
{
	target = prev;
	cur_frame = prev ? prev : top_held_frame;
}

void j_forget_held(void)
{
	nfreeing = 0;
	nheld = 0;
	target = NULL;
	cur_frame = NULL;
	top_held_frame = NULL;
}

/* Fill entry E (the frame's next slot) and count it: complete before it counts. */
void j_push(struct jframe *f, struct jentry *e, uint64_t where, uint64_t old)
{
	if ((where >> 60) == J_KIND_FREE)
		note_freeing(f);
	e->where = where;
	e->old = old;
	atomic_store_explicit(&f->n, atomic_load_explicit(&f->n, memory_order_relaxed) + 1,
			      memory_order_release);
}

static bool frame_append(struct ns *ns, struct jframe *f, uint64_t where, uint64_t old)
{
	struct jentry *e = j_slot(ns, f, atomic_load_explicit(&f->n, memory_order_relaxed), true);

	if (!e)
		return false;
	j_push(f, e, where, old);
	return true;
}

/*
 * Failpoints for crash tests: UIPC_FAILPOINT=N kills this process with
 * SIGKILL at its Nth journaled store, just before the store is made
 * (UIPC_FAILPOINT_AFTER=1: just after).  Off unless the variable is set.
 */
static long failpoint_left = -1;
static bool failpoint_after;

__attribute__((constructor)) static void failpoint_init(void)
{
	const char *v = getenv("UIPC_FAILPOINT");

	if (v && *v) {
		failpoint_left = strtol(v, NULL, 10);
		failpoint_after = getenv("UIPC_FAILPOINT_AFTER") != NULL;
	}
}

static inline void failpoint(bool after)
{
	if (unlikely(failpoint_left > 0) && after == failpoint_after &&
	    __atomic_sub_fetch(&failpoint_left, 1, __ATOMIC_RELAXED) == 0) {
		if (getenv("UIPC_FAILPOINT_TRACE")) {
			void *bt[16];

			backtrace_symbols_fd(bt, backtrace(bt, 16), 2);
		}
		kill(getpid(), SIGKILL);
	}
}

void j_store(struct ns *ns, void *p, const void *val, unsigned size)
{
	struct jframe *f = j_top(ns);
	uint64_t old = 0;

	if (size > 8) {
		/* wide stores are split so that each piece is journaled */
		unsigned done;

		for (done = 0; done < size; done += 8)
			j_store(ns, (char *)p + done, (const char *)val + done,
				size - done < 8 ? size - done : 8);
		return;
	}
	if (f) {
		old = load_bytes(p, size);
		/* storing what is there changes nothing: nothing to undo */
		if (old == load_bytes(val, size))
			return;
		if (!frame_append(ns, f, ns_off(ns, p) | ((uint64_t)size << 56) |
				  (J_KIND_STORE << 60), old)) {
			/* no room for the journal: the arena is exhausted.  The
			 * store still happens; a crash here could not be undone. */
			ns_corrupt(ns, "journal cannot grow (arena full)");
		}
	}
	failpoint(false);
	store_bytes(p, val, size);
	failpoint(true);
}


static void undo_entry(struct ns *ns, struct jentry *e)
{
	uint64_t kind = e->where >> 60;
	uoff_t off = e->where & ((1ULL << 56) - 1);
	unsigned size = (e->where >> 56) & 0xf;
	void *p;

	if (kind == J_KIND_STORE) {
		p = ns_ptr(ns, off, size);
		if (p && size <= 8)
			store_bytes(p, &e->old, size);
	} else if (kind == J_KIND_ALLOC) {
		arena_free_now(ns, off, e);
	}
}

static void redo_frees(struct ns *ns, struct jframe *f, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct jentry *e = j_slot(ns, f, i, false);

		if (e && (e->where >> 60) == J_KIND_FREE)
			arena_free_now(ns, e->where & ((1ULL << 56) - 1), e);
	}
}

/* Roll a frame back (not committed) or forward (committed); idempotent. */
void lock_recover_frame(struct ns *ns, struct jframe *f)
{
	uint32_t n = atomic_load(&f->n);

	if (n > (uint32_t)J_INLINE + (1u << 24))
		n = 0; /* corrupt count: nothing trustworthy to undo */

	if (atomic_load(&f->committed)) {
		redo_frees(ns, f, n);
	} else {
		while (n > 0) {
			struct jentry *e = j_slot(ns, f, n - 1, false);

			if (e)
				undo_entry(ns, e);

			n--;
			atomic_store(&f->n, n);
		}
	}
	atomic_store(&f->n, 0);
	atomic_store(&f->committed, 0);
}

static void recover_lock(struct ns *ns, struct ulock *l)
{
	uoff_t fo = atomic_load(&l->frame);
	struct jframe *f = fo ? ns_ptr(ns, fo, sizeof(*f)) : NULL;

	if (f && atomic_load(&f->lock) == ns_off(ns, l)) {
		lock_recover_frame(ns, f);
		atomic_store(&f->lock, 0);
	}
	atomic_store(&l->frame, 0);
}

/*
 * A lock word whose owner is no thread of this namespace (a corrupt arena, or
 * a holder in another pid namespace that vanished) would block forever: mark
 * it owner-dead the way the kernel does, so that the next attempt recovers it.
 */
static void break_if_orphaned(struct ns *ns, struct ulock *l)
{
	unsigned *word = (unsigned *)&l->m.__data.__lock;
	unsigned v = __atomic_load_n(word, __ATOMIC_ACQUIRE);
	pid_t tid = (pid_t)(v & FUTEX_TID_MASK_);

	if (tid == 0 || (v & FUTEX_OWNER_DIED_))
		return;
	if ((kill(tid, 0) == 0 || errno != ESRCH) && tid_is_registered(ns, tid))
		return;
	__atomic_compare_exchange_n(word, &v, (v & FUTEX_WAITERS_) | FUTEX_OWNER_DIED_,
				    false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/*
 * Critical sections are short: when the lock is taken, spin a little (only
 * reading the word) before sleeping in the kernel, so that two processes
 * on two CPUs trading a lock do not pay a futex sleep and wakeup each time.
 */
#define LOCK_SPINS 200

static int lock_mutex(struct ns *ns, struct ulock *l)
{
	unsigned *word = (unsigned *)&l->m.__data.__lock;

	for (;;) {
		struct timespec ts;
		int r = pthread_mutex_trylock(&l->m);

		if (r != EBUSY)
			return r;
		for (int i = 0; i < LOCK_SPINS; i++) {
			cpu_relax();
			if (__atomic_load_n(word, __ATOMIC_RELAXED) == 0) {
				r = pthread_mutex_trylock(&l->m);
				if (r != EBUSY)
					return r;
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += 2;
		r = pthread_mutex_clocklock(&l->m, CLOCK_MONOTONIC, &ts);
		if (r != ETIMEDOUT)
			return r;
		break_if_orphaned(ns, l);
	}
}

static int ulock_acquire_crit(struct ns *ns, struct ulock *l);

/* Signal handlers are held off while the lock is held (see signals.c). */
int ulock_acquire(struct ns *ns, struct ulock *l)
{
	int r;

	uipc_crit_enter();
	r = ulock_acquire_crit(ns, l);
	if (r)
		uipc_crit_exit();
	return r;
}

static int ulock_acquire_crit(struct ns *ns, struct ulock *l)
{
	struct uthread *t = cur_thread(ns);
	struct jframe *f;
	int r, fi;

	if (!t)
		return -ENOMEM;
#ifdef UIPC_BENCH_NO_JOURNAL
	/* no frame: lock (robust), make an owner-dead lock consistent, go */
	(void)f;
	(void)fi;
	r = lock_mutex(ns, l);
	if (r == EOWNERDEAD)
		r = pthread_mutex_consistent(&l->m);
	return -r;
#endif
	for (fi = 0; fi < JDEPTH; fi++)
		if (!atomic_load(&t->frames[fi].lock))
			break;
	if (fi == JDEPTH || nheld == JDEPTH) {
		ns_corrupt(ns, "lock nesting too deep");
		return -EDEADLK;
	}
	r = lock_mutex(ns, l);
	if (r == EOWNERDEAD) {
		recover_lock(ns, l);
		pthread_mutex_consistent(&l->m);
	} else if (r == ENOTRECOVERABLE) {
		/* only reachable through a corrupt arena */
		ns_corrupt(ns, "lock not recoverable");
		return -EIDRM;
	} else if (r) {
		return -r;
	}
	f = &t->frames[fi];
	/*
	 * Release stores, here and in commit_frame/ulock_release: the frame is
	 * read only by this thread and by a locker that recovers it after this
	 * thread died, so only their order matters (release keeps each after
	 * the stores before it); a seq_cst store is an xchg on x86, a full
	 * barrier, 8 per section for nothing (on arm64 both are stlr).
	 */
	atomic_store_explicit(&f->n, 0, memory_order_release);
	atomic_store_explicit(&f->committed, 0, memory_order_release);
	atomic_store_explicit(&f->lock, ns_off(ns, l), memory_order_release);
	atomic_store_explicit(&l->frame, ns_off(ns, f), memory_order_release);
	/* a new section journals into its own frame until told otherwise */
	saved_target[nheld] = target;
	target = NULL;
	held[nheld++] = fi;
	t->depth = (uint32_t)nheld;
	update_cur_frame(t);
	return 0;
}

/* the frame of L if the caller holds L, else NULL */
static struct jframe *held_frame(struct ns *ns, struct ulock *l)
{
	struct jframe *f = ns_ptr(ns, atomic_load(&l->frame), sizeof(*f));

	return f && atomic_load(&f->lock) == ns_off(ns, l) ? f : NULL;
}

static void commit_frame(struct ns *ns, struct jframe *f)
{
	uint32_t n = atomic_load(&f->n);

	if (take_freeing(f) && n) {
		atomic_store(&f->committed, 1);
		redo_frees(ns, f, n);
	}
	atomic_store_explicit(&f->n, 0, memory_order_release);	/* commit point */
	atomic_store_explicit(&f->committed, 0, memory_order_release);
}

/*
 * Commit L's section now and keep the lock: what the holder stores after
 * this is not rolled back if it dies, so each such store must leave a state
 * that is consistent on its own (msg.c restarts its ring this way).
 */
void ulock_commit(struct ns *ns, struct ulock *l)
{
#ifdef UIPC_BENCH_NO_JOURNAL
	return;
#endif
	struct jframe *f = held_frame(ns, l);

	if (f)
		commit_frame(ns, f);
}

void ulock_release(struct ns *ns, struct ulock *l)
{
#ifdef UIPC_BENCH_NO_JOURNAL
	pthread_mutex_unlock(&l->m);
	uipc_crit_exit();
	return;
#endif
	struct uthread *t = cur_thread(ns);
	struct jframe *f = held_frame(ns, l);
	int i;

	if (!f) {
		ns_corrupt(ns, "release of a lock whose frame is not ours");
		pthread_mutex_unlock(&l->m);
		uipc_crit_exit();
		return;
	}
	commit_frame(ns, f);
	atomic_store_explicit(&l->frame, 0, memory_order_release);
	atomic_store_explicit(&f->lock, 0, memory_order_release);
	for (i = nheld - 1; i >= 0; i--) {
		if (&t->frames[held[i]] == f) {
			struct jframe *st = saved_target[i];

			if (i == nheld - 1)
				target = st;
			for (; i < nheld - 1; i++) {
				held[i] = held[i + 1];
				saved_target[i] = saved_target[i + 1];
			}
			nheld--;
			break;
		}
	}
	t->depth = (uint32_t)nheld;
	if (target == f)
		target = NULL;
	update_cur_frame(t);
	pthread_mutex_unlock(&l->m);
	uipc_crit_exit();
}

/* Roll back everything the current section stored, keeping the lock. */
void j_abort(struct ns *ns)
{
	struct jframe *f = j_top(ns);

	if (f)
		lock_recover_frame(ns, f);
}
