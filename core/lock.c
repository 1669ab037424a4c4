/*
 * lock.c - locks in the arena and the undo journal behind them.
 *
 * Every critical section on shared state is bracketed by ulock_acquire() and
 * ulock_release().  Inside it, every store to the arena goes through
 * j_store() (or J_SET), which first records the old bytes in the holder's
 * journal frame.  If the holder dies (SIGKILL at any instruction), the next
 * locker finds it dead, takes the lock over and rolls the frame back before
 * it goes on, so a half-done change is never seen.  Blocks allocated inside
 * a section are freed by the rollback; blocks freed by a section are freed
 * only after it commits, and that deferred work is redone by the next
 * locker if the holder died between commit and release.
 *
 * A lock is one word that names its holder by number: the holder's thread
 * slot and that slot's generation (layout.h).  A locker that finds it taken
 * looks at the holder's alive word, which the kernel marks when the holder
 * dies (proc.c keeps it on the kernel's robust list through private
 * memory), and sleeps on both words at once: the release or the death
 * wakes it.  Nothing read from the arena is ever used as an address.
 */
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"

#define FUTEX_WAITERS_     0x80000000u

int ulock_init(struct ulock *l)
{
	atomic_store(&l->word, 0);
	atomic_store(&l->frame, 0);
	return 0;
}

/*
 * A frame's entries past the inline ones live in a chain of chunks, which
 * are never freed (a frame keeps them for its next sections).  Walking the
 * chain from its start for each entry would cost a section of N entries
 * N^2 / J_CHUNK steps: hours for a count a hostile member may write (up to
 * 2^24, lock_recover_frame) or a section that zeroes millions of words.
 * So a walk keeps a cursor in private memory, the chunk it is at: entries
 * visited in order reach each chunk once, backwards once per chunk.
 * (Issue 14: every loop driven by an arena value stays bounded.)
 */
struct jcursor {
	const struct jframe *f;
	struct ns *ns;
	uint32_t k;                /* the cursor is at chunk K of F's chain */
	uoff_t chunk;              /* its offset; 0: none */
};

/* the chunk *LINK names (one allocated, GROW, if it names none inside
 * the mapping): its offset, 0 if none */
static uoff_t chunk_at(struct ns *ns, uoff_t *link, bool grow)
{
	uoff_t n = *link;
	struct jchunk *c;

	if ((n && ns_ptr_aligned(ns, n, sizeof(struct jchunk))) || !grow)
		return n;
	n = arena_alloc_raw(ns, sizeof(struct jchunk), POOL_GENERAL);
	c = n ? ns_ptr_aligned(ns, n, sizeof(*c)) : NULL;
	if (!c)
		return 0;
	c->next = 0;
	*link = n;
	return n;
}

static struct jentry *j_slot_walk(struct ns *ns, struct jframe *f, uint32_t i, bool grow,
				  struct jcursor *cur)
{
	uint32_t want;
	struct jchunk *c;

	if (i < J_INLINE)
		return &f->e[i];
	i -= J_INLINE;
	want = i / J_CHUNK;
	if (cur->f != f || cur->ns != ns || !cur->chunk || cur->k > want) {
		cur->f = f;
		cur->ns = ns;
		cur->k = 0;
		cur->chunk = chunk_at(ns, &f->chunks, grow);
	}
	while (cur->chunk && cur->k < want) {
		c = ns_ptr_aligned(ns, cur->chunk, sizeof(*c));
		cur->chunk = c ? chunk_at(ns, &c->next, grow) : 0;
		cur->k++;
	}
	c = cur->chunk ? ns_ptr_aligned(ns, cur->chunk, sizeof(*c)) : NULL;
	if (!c) {
		cur->f = NULL;
		return NULL;
	}
	return &c->e[i % J_CHUNK];
}

/* the cursor of this thread's appends (entry N of a frame follows N - 1;
 * the first chunk entry of a section, J_INLINE, starts from the chain's
 * start again) */
static __thread struct jcursor append_cur;

struct jentry *j_slot(struct ns *ns, struct jframe *f, uint32_t i, bool grow)
{
	struct jcursor fresh;

	if (i < J_INLINE)
		return &f->e[i];
	fresh.f = NULL;
	if (grow && i == J_INLINE)
		append_cur.f = NULL;
	return j_slot_walk(ns, f, i, grow, grow ? &append_cur : &fresh);
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

static inline void store_bytes(void *p, const void *val, unsigned size)
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
 * The sections this thread is in, innermost last (process-local: only this
 * thread uses it).  A section gets a journal frame (one of the JDEPTH
 * frames of its thread slot) only at its first journaled change: a store,
 * an allocation or a deferred free.  A section that only reads, or only
 * makes plain stores into memory nobody can reach, costs its lock word
 * and no shared store.  Until a frame is attached the lock's frame is 0, so a
 * locker that finds the holder dead undoes nothing, which is right: the
 * holder journaled nothing, so it changed nothing that needs undoing.
 * Stores go to the frame of the innermost section unless j_target()
 * redirected them to the frame of another section of this thread: every
 * store is journaled in the frame of the lock that protects it.
 */
struct section {
	struct ulock *l;
	struct jframe *f;            /* NULL until the first journaled change */
	struct jframe *saved_target; /* the redirection when the section began */
	uint8_t fmask;               /* f's bit in frames_busy */
	bool frees;                  /* f recorded a deferred free, */
	uint32_t free_from;          /* the first at this entry */
};

/* ns_off of a pointer known not to be NULL (no test) */
static inline uoff_t off_of(struct ns *ns, const void *p)
{
	return (uoff_t)((const char *)p - ns->base);
}

/* one thread-local block: one address computation reaches all of it */
static __thread struct jstate {
	struct section *top;       /* the innermost section, NULL outside any */
	unsigned frames_busy;      /* bit i: this thread's frames[i] is attached */
	struct jframe *target;
	struct jframe *cur_frame;  /* target, else the innermost section's frame */
	struct section sec[JDEPTH];
} js;

static void set_cur_frame(void)
{
	js.cur_frame = js.target ? js.target : js.top ? js.top->f : NULL;
}

/* this thread's section on L, or NULL (innermost first: the usual case) */
static struct section *find_section(struct ulock *l)
{
	for (struct section *s = js.top; s; s = s == js.sec ? NULL : s - 1)
		if (s->l == l)
			return s;
	return NULL;
}

/* Give section S a frame of this thread's slot, at its first journaled change. */
static inline __attribute__((always_inline)) struct jframe *attach_frame(struct ns *ns, struct section *s)
{
	/* registered: ulock_acquire made sure of it */
	struct uthread *t = uipc_tls_thread;
	struct jframe *f;
	int fi;

	/* never a second frame for one section: its lock names only one */
	if (unlikely(s->f))
		return s->f;
	/* a section has at most one frame and there are at most JDEPTH: never full;
	 * no call here (the callers report it), so that callers stay leaves */
	if (unlikely(!t || js.frames_busy == (1u << JDEPTH) - 1))
		return NULL;
	fi = __builtin_ctz(~js.frames_busy);
	f = &t->frames[fi];
	/*
	 * Release stores, here and in commit_section/ulock_release: the frame
	 * is read only by this thread and by a locker that recovers it after
	 * this thread died, so only their order matters (release keeps each
	 * after the stores before it); a seq_cst store is an xchg on x86, a
	 * full barrier (on arm64 both are stlr).  n and committed are already
	 * 0 in an idle frame (a commit or a recovery clears them before the
	 * frame's lock): cleared again so that a corrupt arena cannot make a
	 * frame start with entries.
	 */
	atomic_store_explicit(&f->n, 0, memory_order_release);
	atomic_store_explicit(&f->committed, 0, memory_order_release);
	atomic_store_explicit(&f->lock, off_of(ns, s->l), memory_order_release);
	atomic_store_explicit(&s->l->frame, off_of(ns, f), memory_order_release);
	js.frames_busy |= 1u << fi;
	s->fmask = (uint8_t)(1u << fi);
	s->f = f;
	return f;
}

/*
 * UIPC_BENCH_NO_JOURNAL: a measurement-only build (bench/bench.mk builds it
 * into build/nojournal/libuipc.so for bench/journal-cost.sh; never the
 * default, never used by tests).  It is uipc without the undo journal: no
 * section has a frame, so every J_SET is a plain store, arena_alloc records
 * nothing, arena_free frees at once and j_abort undoes nothing (error paths
 * that rely on it are wrong there: only for benchmarks that make no errors).
 * The lock words (a dead holder's lock is still taken over) and the signal
 * hold-off stay.  SIGKILL inside a section is not recovered.
 */
static inline struct jframe *frame_now(struct ns *ns)
{
#ifdef UIPC_BENCH_NO_JOURNAL
	(void)ns;
	return NULL;
#endif
	if (likely(js.cur_frame) || !js.top)
		return js.cur_frame;
	/* no redirection and the innermost section has no frame yet */
	js.cur_frame = attach_frame(ns, js.top);
	if (unlikely(!js.cur_frame))
		ns_corrupt(ns, "no journal frame free");
	return js.cur_frame;
}

struct jframe *j_top(struct ns *ns)
{
	return frame_now(ns);
}

/* section S's frame, attached now if it has none yet */
static inline __attribute__((always_inline)) struct jframe *section_frame(struct ns *ns,
								       struct section *s)
{
	struct jframe *f = s->f ? s->f : attach_frame(ns, s);

	if (unlikely(!f))
		ns_corrupt(ns, "no journal frame free");
	return f;
}

struct jframe *j_target(struct ns *ns, struct ulock *l)
{
	struct jframe *prev = js.target;
	struct section *s;

#ifdef UIPC_BENCH_NO_JOURNAL
	return prev;
#endif
	s = l ? find_section(l) : NULL;
	js.target = s ? section_frame(ns, s) : NULL;
	set_cur_frame();
	return prev;
}

void j_target_restore(struct jframe *prev)
{
	js.target = prev;
	set_cur_frame();
}

void j_forget_held(void)
{
	for (int i = 0; i < JDEPTH; i++)
		js.sec[i].frees = false;
	js.top = NULL;
	js.frames_busy = 0;
	js.target = NULL;
	js.cur_frame = NULL;
}

/* entry IDX of F is a deferred free: its commit must do it */
static void note_freeing(struct jframe *f, uint32_t idx)
{
	for (struct section *s = js.sec; js.top && s <= js.top; s++) {
		if (s->f == f && !s->frees) {
			s->frees = true;
			s->free_from = idx;
		}
	}
}

/* Fill entry E (the frame's next slot) and count it: complete before it counts. */
void j_push(struct jframe *f, struct jentry *e, uint64_t where, uint64_t old)
{
	if ((where >> 60) == J_KIND_FREE || (where >> 60) == J_KIND_SETC)
		note_freeing(f, atomic_load_explicit(&f->n, memory_order_relaxed));
	e->where = where;
	e->old = old;
	atomic_store_explicit(&f->n, atomic_load_explicit(&f->n, memory_order_relaxed) + 1,
			      memory_order_release);
}

/*
 * Failpoints for crash tests: UIPC_FAILPOINT=N kills this process with
 * SIGKILL at its Nth journaled store, just before the store is made
 * (UIPC_FAILPOINT_AFTER=1: just after).  UIPC_FAILPOINT_COMMIT=N kills it
 * at its Nth commit point instead: just past a section's commit, its lock
 * still held (what the section stored is final, the sections around it
 * may not be), and for a section with deferred work also just past its
 * commit mark, before that work.  Off unless the variable is set.
 */
static long failpoint_left = -1;
static bool failpoint_after;
static long commit_failpoint_left = -1;
/* UIPC_TEST_KILL_BETWEEN_COMMITS: 1 kills after a guarded section's partner
 * commits (ulock_commit_partner), "in-commit" inside that commit, just past
 * its commit point (before its deferred work) */
static enum { KILL_NOWHERE, KILL_AFTER_PARTNER, KILL_IN_PARTNER } kill_partner_at;

__attribute__((constructor)) static void failpoint_init(void)
{
	const char *v = getenv("UIPC_FAILPOINT");
	const char *k = getenv("UIPC_TEST_KILL_BETWEEN_COMMITS");
	const char *c = getenv("UIPC_FAILPOINT_COMMIT");

	if (c && *c)
		commit_failpoint_left = strtol(c, NULL, 10);
	if (k)
		kill_partner_at = !strcmp(k, "in-commit") ? KILL_IN_PARTNER : KILL_AFTER_PARTNER;
	if (v && *v) {
		failpoint_left = strtol(v, NULL, 10);
		failpoint_after = getenv("UIPC_FAILPOINT_AFTER") != NULL;
	}
}

static void die_at_failpoint(void)
{
	if (getenv("UIPC_FAILPOINT_TRACE")) {
		void *bt[16];

		backtrace_symbols_fd(bt, backtrace(bt, 16), 2);
	}
	kill(getpid(), SIGKILL);
}

static inline void failpoint(bool after)
{
	if (unlikely(failpoint_left > 0) && after == failpoint_after &&
	    __atomic_sub_fetch(&failpoint_left, 1, __ATOMIC_RELAXED) == 0)
		die_at_failpoint();
}

static __attribute__((noinline, cold)) void commit_failpoint_count(void)
{
	if (__atomic_sub_fetch(&commit_failpoint_left, 1, __ATOMIC_RELAXED) == 0)
		die_at_failpoint();
}

/* a commit point: UIPC_FAILPOINT_COMMIT's count */
static inline void commit_failpoint(void)
{
	if (unlikely(commit_failpoint_left > 0))
		commit_failpoint_count();
}


/* F's next entry, beyond the inline ones (a chunk): out of line */
static __attribute__((noinline)) struct jentry *j_slot_far(struct ns *ns, struct jframe *f,
							  uint32_t n)
{
	struct jentry *e = j_slot(ns, f, n, true);

	/* no room for the journal: the arena is exhausted.  The store still
	 * happens; a crash here could not be undone. */
	if (!e)
		ns_corrupt(ns, "journal cannot grow (arena full)");
	return e;
}

/* Journal a store of SIZE (1..8) bytes at P, old value OLD, into F. */
static inline void j_record(struct ns *ns, struct jframe *f, void *p, unsigned size, uint64_t old)
{
	uint32_t n = atomic_load_explicit(&f->n, memory_order_relaxed);
	struct jentry *e = likely(n < J_INLINE) ? &f->e[n] : j_slot_far(ns, f, n);

	if (unlikely(!e))
		return;
	/* a STORE entry: j_push's check for deferred frees is not needed */
	e->where = ns_off(ns, p) | ((uint64_t)size << 56) | (J_KIND_STORE << 60);
	e->old = old;
	atomic_store_explicit(&f->n, n + 1, memory_order_release);
}

/*
 * Any store: wide ones, odd sizes, the first change of a section (a frame
 * to attach), armed failpoints.  J_SET's usual case is j_store_N below.
 */
void j_store(struct ns *ns, void *p, const void *val, unsigned size)
{
	struct jframe *f;

	if (size > 8) {
		/* wide stores are split so that each piece is journaled */
		unsigned done;

		for (done = 0; done + 8 <= size; done += 8) {
			uint64_t v;

			memcpy(&v, (const char *)val + done, 8);
			j_store_8(ns, (char *)p + done, v);
		}
		if (done < size)
			j_store(ns, (char *)p + done, (const char *)val + done, size - done);
		return;
	}
	f = frame_now(ns);
	if (f) {
		uint64_t old = load_bytes(p, size);

		/* storing what is there changes nothing: nothing to undo */
		if (old == load_bytes(val, size))
			return;
		j_record(ns, f, p, size, old);
	}
	failpoint(false);
	store_bytes(p, val, size);
	failpoint(true);
}

/* j_store_N's general case: a chunk to journal into, failpoints armed, no
 * frame to be had (SIZE is 1, 2, 4 or 8) */
static __attribute__((noinline)) void j_store_any(struct ns *ns, void *p, uint64_t v,
						  unsigned size)
{
	struct jframe *f = frame_now(ns);

	if (f) {
		uint64_t old = load_bytes(p, size);

		/* storing what is there changes nothing: nothing to undo */
		if (old == v)
			return;
		j_record(ns, f, p, size, old);
	}
	failpoint(false);
	switch (size) {
	case 1: __atomic_store_n((uint8_t *)p, (uint8_t)v, __ATOMIC_RELAXED); break;
	case 2: __atomic_store_n((uint16_t *)p, (uint16_t)v, __ATOMIC_RELAXED); break;
	case 4: __atomic_store_n((uint32_t *)p, (uint32_t)v, __ATOMIC_RELAXED); break;
	default: __atomic_store_n((uint64_t *)p, v, __ATOMIC_RELAXED); break;
	}
	failpoint(true);
}

#ifdef UIPC_BENCH_NO_JOURNAL
#define JOURNAL_OFF 1
#else
#define JOURNAL_OFF 0
#endif

/*
 * J_SET of 1, 2, 4 or 8 bytes, the value in a register.  It runs for every
 * journaled store, so its usual case (a frame attached, an inline entry
 * free, no failpoint armed) makes no call and needs no stack frame.  The
 * first change of a section goes to j_store_first_N (attach the frame,
 * then the same), once per section, also without a stack frame; every
 * other case is a tail call to j_store_any.  Outside any section (and in
 * the no-journal build) it is a plain store.
 */
#define J_STORE_N(bytes, type)							\
static inline __attribute__((always_inline)) void				\
j_record_store_##bytes(struct ns *ns, struct jframe *f, void *p, type v)	\
{										\
	type old = __atomic_load_n((type *)p, __ATOMIC_RELAXED);		\
	uint32_t n;								\
										\
	/* storing what is there changes nothing: nothing to undo */		\
	if (old == v)								\
		return;								\
	n = atomic_load_explicit(&f->n, memory_order_relaxed);			\
	if (unlikely(n >= J_INLINE))						\
		return j_store_any(ns, p, v, bytes);				\
	f->e[n].where = off_of(ns, p) | ((uint64_t)(bytes) << 56) | (J_KIND_STORE << 60); \
	f->e[n].old = old;							\
	atomic_store_explicit(&f->n, n + 1, memory_order_release);		\
	__atomic_store_n((type *)p, v, __ATOMIC_RELAXED);			\
}										\
										\
static __attribute__((noinline)) void						\
j_store_first_##bytes(struct ns *ns, void *p, type v)				\
{										\
	struct jframe *f = attach_frame(ns, js.top);				\
										\
	if (unlikely(!f))							\
		return j_store_any(ns, p, v, bytes);				\
	js.cur_frame = f;							\
	j_record_store_##bytes(ns, f, p, v);					\
}										\
										\
void j_store_##bytes(struct ns *ns, void *p, type v)				\
{										\
	struct jframe *f = JOURNAL_OFF ? NULL : js.cur_frame;			\
										\
	if (unlikely(failpoint_left > 0))					\
		return j_store_any(ns, p, v, bytes);				\
	if (likely(f))								\
		return j_record_store_##bytes(ns, f, p, v);			\
	if (js.top)								\
		return j_store_first_##bytes(ns, p, v);				\
	__atomic_store_n((type *)p, v, __ATOMIC_RELAXED);			\
}

J_STORE_N(1, uint8_t)
J_STORE_N(2, uint16_t)
J_STORE_N(4, uint32_t)
J_STORE_N(8, uint64_t)

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

/* do the deferred frees among entries FROM..N-1 of F (FROM: 0 after a crash) */
static void redo_frees(struct ns *ns, struct jframe *f, uint32_t from, uint32_t n)
{
	struct jcursor cur = { 0 };
	uint32_t i;

	for (i = from; i < n; i++) {
		struct jentry *e = j_slot_walk(ns, f, i, false, &cur);

		if (!e)
			continue;
		if ((e->where >> 60) == J_KIND_FREE) {
			arena_free_now(ns, e->where & ((1ULL << 56) - 1), e);
		} else if ((e->where >> 60) == J_KIND_SETC) {
			/* (a word of 8 bytes: j_store_at_commit's; the entry is in
			 * the thread's slot, which any member can write) */
			uint64_t *w = ns_ptr_aligned(ns, e->where & ((1ULL << 56) - 1), 8);

			if (w)
				__atomic_store_n(w, e->old, __ATOMIC_RELEASE);
		}
	}
}

/* append to F an entry of KIND on the 8-byte word at offset OFF, with value
 * V; SIZE: the entry's size field (8, or a guard's partner link) */
static void append_word_entry(struct ns *ns, struct jframe *f, uoff_t off, uint64_t size,
			      uint64_t kind, uint64_t v)
{
	uint32_t n = atomic_load_explicit(&f->n, memory_order_relaxed);
	struct jentry *e = n < J_INLINE ? &f->e[n] : j_slot_far(ns, f, n);

	if (e)
		j_push(f, e, off | (size << 56) | (kind << 60), v);
}

/*
 * Guard the current section with WORD (its value now) and PARTNER, a lock
 * this thread holds: WORD must change only when PARTNER's section commits
 * (an IPC_RMID's ids section, whose deferred work frees the array's block,
 * which bumps its generation, or bumps the queue's incarnation), and that
 * section must commit before this one.  A holder killed after the partner's
 * commit point leaves this section to be rolled FORWARD, not back: undoing
 * it would write into an object that is already gone (and maybe reused).
 * The partner's commit point comes before its deferred work changes WORD,
 * so the partner's frame is recorded too: a recovery that finds it in its
 * commit (committed set, the deferred work not yet redone) rolls forward as
 * well, and the two together leave no window.
 */
void j_guard(struct ns *ns, const uint64_t *word, struct ulock *partner)
{
	struct jframe *f = frame_now(ns);
	struct section *s = find_section(partner);
	struct jframe *pf = s ? section_frame(ns, s) : NULL;
	uint64_t link = pf && f ? (uint64_t)(J_PARTNER_NONE + (pf - f)) : J_PARTNER_NONE;

	if (f)
		append_word_entry(ns, f, ns_off(ns, word), link, J_KIND_GUARD,
				  __atomic_load_n(word, __ATOMIC_ACQUIRE));
}

/*
 * Store V into WORD when the current section commits (with its deferred
 * frees; a locker that finds us dead after the commit point redoes it): a
 * word that changes only at that commit, for another section's j_guard.
 */
void j_store_at_commit(struct ns *ns, uint64_t *word, uint64_t v)
{
	struct jframe *f = frame_now(ns);

	if (f)
		append_word_entry(ns, f, ns_off(ns, word), 8, J_KIND_SETC, v);
	else
		__atomic_store_n(word, v, __ATOMIC_RELEASE);
}

/*
 * Has the partner of a guard among F's first N entries committed?  The
 * partner's frame is read first: its recovery redoes its deferred work
 * (which changes the guard word) before it clears its committed mark, so
 * this order sees one or the other even while that recovery runs.
 */
static bool guard_tripped(struct ns *ns, struct jframe *f, uint32_t n)
{
	struct jcursor cur = { 0 };

	for (uint32_t i = 0; i < n; i++) {
		struct jentry *e = j_slot_walk(ns, f, i, false, &cur);
		unsigned link = e ? (e->where >> 56) & 0xf : 0;
		struct jframe *pf = NULL;
		const uint64_t *w;

		if (!e || (e->where >> 60) != J_KIND_GUARD)
			continue;
		if (link != J_PARTNER_NONE)
			pf = ns_ptr(ns, off_of(ns, f) + ((int)link - J_PARTNER_NONE) *
					(int64_t)sizeof(*f), sizeof(*f));
		if (pf && atomic_load_explicit(&pf->committed, memory_order_acquire))
			return true;
		w = ns_ptr_aligned(ns, e->where & ((1ULL << 56) - 1), 8);
		if (w && __atomic_load_n(w, __ATOMIC_ACQUIRE) != e->old)
			return true;
	}
	return false;
}

/* Roll a frame back (not committed) or forward (committed, or guarded by a
 * partner that committed); idempotent. */
void lock_recover_frame(struct ns *ns, struct jframe *f)
{
	uint32_t n = atomic_load(&f->n);

	if (n > (uint32_t)J_INLINE + (1u << 24))
		n = 0; /* corrupt count: nothing trustworthy to undo */

	if (atomic_load(&f->committed) || guard_tripped(ns, f, n)) {
		redo_frees(ns, f, 0, n);
	} else {
		struct jcursor cur = { 0 };

		while (n > 0) {
			struct jentry *e = j_slot_walk(ns, f, n - 1, false, &cur);

			if (e)
				undo_entry(ns, e);

			n--;
			atomic_store(&f->n, n);
		}
	}
	atomic_store(&f->n, 0);
	atomic_store(&f->committed, 0);
}

/*
 * The frame a dead holder left in L's frame field, if it is one: a frame
 * of a thread slot (not of ours: we are alive, and our frames name only
 * locks we hold) that says it journals L.  Anything else is a corrupt
 * word and names nothing to undo.
 */
static struct jframe *dead_holder_frame(struct ns *ns, struct ulock *l)
{
	uoff_t fo = atomic_load(&l->frame), rel, in;
	const uoff_t first = offsetof(struct uthread, frames);
	struct jframe *f;

	if (fo < ns->lay.threads)
		return NULL;
	rel = fo - ns->lay.threads;
	in = rel % sizeof(struct uthread);
	if (rel >= (uoff_t)MAX_THREADS * sizeof(struct uthread) || in < first ||
	    (in - first) % sizeof(struct jframe) || (in - first) / sizeof(struct jframe) >= JDEPTH)
		return NULL;
	if (uipc_tls_thread && ns_off(ns, uipc_tls_thread) == fo - in)
		return NULL;
	f = ns_ptr(ns, fo, sizeof(*f));
	return f && atomic_load(&f->lock) == ns_off(ns, l) ? f : NULL;
}

/* L was taken over from a dead holder: undo (or finish) what it left */
static void recover_lock(struct ns *ns, struct ulock *l)
{
	struct jframe *f = dead_holder_frame(ns, l);

	if (f) {
		lock_recover_frame(ns, f);
		atomic_store(&f->lock, 0);
	}
	atomic_store(&l->frame, 0);
}

/*
 * Taking a lock.  The fast path is one compare-and-swap of the free word
 * (0) to ours.  When the lock is taken, lock_slow looks at the holder:
 * alive, it spins a little (critical sections are short: two processes on
 * two CPUs trading a lock should not pay a futex sleep and wakeup each
 * time), then marks both words as having sleepers and sleeps on the lock
 * word and on the holder's alive word at once (futex_waitv).  The release
 * wakes one sleeper; the holder's death wakes one through its alive word
 * (the kernel), and the first locker to see the death wakes the rest.
 * Sleeps end after LOCK_SLICE_NS in any case, so that a wakeup lost with a
 * sleeper killed between its wakeup and its taking the lock costs a
 * slice, never a hang.
 */
#define LOCK_SPINS     200
#define LOCK_SLICE_NS  100000000LL

/* the word names our own slot and generation (we are alive) */
static inline bool word_is_ours(uint64_t w, uint64_t me)
{
	return (w & ~(uint64_t)ULOCK_WAITERS) == me;
}

/* Set BIT in *W (which held *V): false if *W changed meanwhile. */
static bool mark_sleeper32(uint32_t *w, uint32_t *v, uint32_t bit)
{
	if (*v & bit)
		return true;
	if (!__atomic_compare_exchange_n(w, v, *v | bit, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return false;
	*v |= bit;
	return true;
}

/* Sleep until L's futex word differs from FV or the holder's alive word AW
 * from AV, a slice or DEADLINE passes, or (INTR) a signal is held for the
 * program. */
static void lock_sleep(struct ulock *l, uint32_t fv, uint32_t *aw, uint32_t av, int64_t deadline,
		       unsigned flags)
{
	uint32_t *w[3] = { ulock_futex(l), aw, &uipc_held_signals };
	uint32_t val[3] = { fv, av, uipc_held_signals };
	int64_t now = mono_ns(), until = now + LOCK_SLICE_NS;
	struct timespec rel;

	if (deadline < until)
		until = deadline;
	rel.tv_sec = (until - now) / 1000000000LL;
	rel.tv_nsec = (until - now) % 1000000000LL;
	if (!(flags & ULOCK_INTR))
		w[2] = NULL;
	uipc_wait_words(w, val, w[2] ? 3 : 2, &rel, uipc_handler_gen());
}

/*
 * Take L, which was not free when we tried (word W).  0: taken; 1: taken
 * over from a dead holder (the caller recovers it); -ETIMEDOUT: DEADLINE
 * passed with a live holder; -EINTR: (ULOCK_INTR) a signal is held for the
 * program; -EDEADLK: we hold it already (a bug).
 */
static __attribute__((noinline)) int lock_slow(struct ns *ns, struct ulock *l, uint64_t me,
					       int64_t deadline, unsigned flags)
{
	bool slept = false, spun = false;

	for (;;) {
		uint64_t w = atomic_load_explicit(&l->word, memory_order_relaxed);
		uint32_t fv = (uint32_t)w, *aw = NULL, av = 0;
		bool dead;

		if (!(fv & ULOCK_SLOT_MASK)) {
			/* free (a stray waiters bit is kept): after a sleep,
			 * others may sleep too, so the release must wake */
			uint64_t want = me | (slept || (fv & ULOCK_WAITERS) ? ULOCK_WAITERS : 0);

			if (atomic_compare_exchange_weak_explicit(&l->word, &w, want,
								  memory_order_acquire,
								  memory_order_relaxed))
				return 0;
			continue;
		}
		if (word_is_ours(w, me)) {
			/* our own slot and generation, but not a lock we hold:
			 * only a corrupt word; held, it is a bug */
			if (find_section(l))
				return -EDEADLK;
			dead = true;
		} else {
			dead = !lock_holder_alive(ns, (fv & ULOCK_SLOT_MASK) - 1,
						  (uint32_t)(w >> 32), &aw, &av);
		}
		if (dead) {
			alive_word_wake_all(aw, av);
			if (!atomic_compare_exchange_strong_explicit(&l->word, &w,
								    me | (fv & ULOCK_WAITERS),
								    memory_order_acquire,
								    memory_order_relaxed))
				continue;
			return 1;
		}
		if (!spun) {
			spun = true;
			for (int i = 0; i < LOCK_SPINS; i++) {
				cpu_relax();
				if (atomic_load_explicit(&l->word, memory_order_relaxed) != w)
					break;
			}
			continue;
		}
		if ((flags & ULOCK_INTR) && uipc_signal_held())
			return -EINTR;
		if (deadline != ULOCK_FOREVER && mono_ns() >= deadline)
			return -ETIMEDOUT;
		/* mark both words (the release and the death then wake), sleep */
		if (!(fv & ULOCK_WAITERS)) {
			if (!atomic_compare_exchange_strong(&l->word, &w, w | ULOCK_WAITERS))
				continue;
			fv |= ULOCK_WAITERS;
		}
		if (!mark_sleeper32(aw, &av, FUTEX_WAITERS_))
			continue;
		lock_sleep(l, fv, aw, av, deadline, flags);
		slept = true;
		spun = false;
	}
}

/* give_word's case with sleepers (W: the word, naming us): wake one.  A
 * word that no longer names us was taken over by someone who found us dead
 * (a corrupt arena): it is not ours to free. */
static __attribute__((noinline)) void give_word_contended(struct ulock *l, uint64_t w)
{
	if (word_is_ours(w, uipc_tls_lockval) &&
	    atomic_compare_exchange_strong_explicit(&l->word, &w, 0, memory_order_release,
						    memory_order_relaxed))
		sys_futex_wake(ulock_futex(l), 1);
}

/* Give L's word back (it names us, maybe with the waiters bit). */
static inline void give_word(struct ulock *l)
{
	uint64_t w = uipc_tls_lockval;

	if (unlikely(!atomic_compare_exchange_strong_explicit(&l->word, &w, 0, memory_order_release,
							      memory_order_relaxed)))
		give_word_contended(l, w);
}

/*
 * L was not free: wait for it (lock_slow), and recover what a dead holder
 * left.  Out of line, so that the usual case keeps few registers.
 */
static __attribute__((noinline)) int take_contended(struct ns *ns, struct ulock *l, int64_t deadline,
						    unsigned flags)
{
	/* HOOK (core/lockwait.c, issue 14): a plain ulock_acquire waits as
	 * long as the call that asks may (its timeout, EINTR, or at most
	 * UIPC_LOCK_WAIT_MS), never without bound for a live holder */
	int plan = deadline == ULOCK_FOREVER && !flags ? lockwait_plan(&deadline, &flags) : 0;
	int r = plan < 0 ? plan : lock_slow(ns, l, uipc_tls_lockval, deadline, flags);

	if (plan > 0)
		r = lockwait_result(r);
	if (r < 0 && plan)
		lockwait_tls.failed++;
	if (r == -EDEADLK && plan <= 0)
		ns_corrupt(ns, "a lock taken twice");
	if (r <= 0)
		return r;
	if (!JOURNAL_OFF)
		recover_lock(ns, l);
	return 0;
}

/* Take L for a new section of this thread (signals already held off). */
static inline __attribute__((always_inline)) int acquire_crit(struct ns *ns, struct ulock *l,
							      int64_t deadline, unsigned flags)
{
	struct section *s;
	uint64_t free_word = 0;
	int r;

	/* the thread slot (its frames) must exist before any change is made */
	if (!cur_thread(ns))
		return -ENOMEM;
#ifdef UIPC_BENCH_NO_JOURNAL
	/* no section, no frame: take the word (from a dead holder too), go */
	(void)s;
	if (!atomic_compare_exchange_strong_explicit(&l->word, &free_word, uipc_tls_lockval,
						     memory_order_acquire, memory_order_relaxed))
		return take_contended(ns, l, deadline, flags);
	return 0;
#endif
	s = js.top ? js.top + 1 : js.sec;
	if (unlikely(s == &js.sec[JDEPTH])) {
		ns_corrupt(ns, "lock nesting too deep");
		return -EDEADLK;
	}
	if (unlikely(!atomic_compare_exchange_strong_explicit(&l->word, &free_word, uipc_tls_lockval,
							      memory_order_acquire,
							      memory_order_relaxed))) {
		r = take_contended(ns, l, deadline, flags);
		if (r)
			return r;
	}
	/* no frame yet (attach_frame, at the first change); a new section
	 * journals into its own frame until told otherwise */
	s->l = l;
	s->f = NULL;
	s->saved_target = js.target;
	s->frees = false;
	js.top = s;
	js.target = NULL;
	js.cur_frame = NULL;
	return 0;
}

/* Signal handlers are held off while the lock is held (see signals.c). */
int ulock_acquire(struct ns *ns, struct ulock *l)
{
	int r;

	uipc_crit_enter();
	r = acquire_crit(ns, l, ULOCK_FOREVER, 0);
	if (r)
		uipc_crit_exit();
	return r;
}

int ulock_acquire_until(struct ns *ns, struct ulock *l, int64_t deadline, unsigned flags)
{
	int r;

	uipc_crit_enter();
	r = acquire_crit(ns, l, deadline, flags);
	if (r)
		uipc_crit_exit();
	return r;
}

/* Commit section S's changes (if it made any): the frame counts nothing. */
static inline void commit_section(struct ns *ns, struct section *s)
{
	struct jframe *f = s->f;
	uint32_t n;

	if (!f)
		return;
	n = atomic_load_explicit(&f->n, memory_order_relaxed);
	if (unlikely(s->frees)) {
		/* roll forward from here: a locker that finds us dead redoes
		 * the frees; each is done once (the block's generation) */
		s->frees = false;
		if (n) {
			/* a release store, and no compiler reordering of the frees
			 * before it: after a SIGKILL every store made before the
			 * killed instruction is seen, so only program order counts
			 * (a seq_cst store is an xchg on x86) */
			atomic_store_explicit(&f->committed, 1, memory_order_release);
			atomic_signal_fence(memory_order_seq_cst);
			commit_failpoint();
			redo_frees(ns, f, s->free_from, n);
		}
		atomic_store_explicit(&f->n, 0, memory_order_release);	/* commit point */
		atomic_store_explicit(&f->committed, 0, memory_order_release);
		commit_failpoint();
		return;
	}
	if (n) {
		atomic_store_explicit(&f->n, 0, memory_order_release);	/* commit point */
		commit_failpoint();
	}
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
	struct section *s = find_section(l);

	if (s)
		commit_section(ns, s);
}

/*
 * Commit L's section now, before the section it guards (j_guard: an
 * IPC_RMID's ids section, then the object's).  The same as ulock_commit,
 * with the crash tests' two kill points around it.
 */
static __attribute__((noinline)) void commit_partner_and_kill(struct ns *ns, struct ulock *l)
{
	/* in-commit: this commit's first commit point, its commit mark (the
	 * partner has deferred work: the free of the array, the incarnation) */
	if (kill_partner_at == KILL_IN_PARTNER)
		__atomic_store_n(&commit_failpoint_left, 1, __ATOMIC_RELAXED);
	ulock_commit(ns, l);
	kill(getpid(), SIGKILL);
}

void ulock_commit_partner(struct ns *ns, struct ulock *l)
{
	if (unlikely(kill_partner_at != KILL_NOWHERE))
		return commit_partner_and_kill(ns, l);
	ulock_commit(ns, l);
}

/* Section S ends: commit it, give its frame back, drop it from the stack. */
static void end_section(struct ns *ns, struct section *s)
{
	struct jframe *f = s->f;
	struct section *last = js.top;

	if (f) {
		commit_section(ns, s);
		atomic_store_explicit(&s->l->frame, 0, memory_order_release);
		atomic_store_explicit(&f->lock, 0, memory_order_release);
		js.frames_busy &= ~(unsigned)s->fmask;
	}
	if (s == last) {
		js.target = s->saved_target;
	} else {
		/* out of order (semctl_down, msgctl_down drop the ids lock
		 * first): no later section may return to the frame given back */
		for (struct section *k = s; k < last; k++) {
			*k = k[1];
			if (f && k->saved_target == f)
				k->saved_target = NULL;
		}
	}
	js.top = last == js.sec ? NULL : last - 1;
	if (f && js.target == f)
		js.target = NULL;
	set_cur_frame();
}

/* ulock_release's general case: out of order, deferred frees, a frame not ours */
static __attribute__((noinline)) void release_any(struct ns *ns, struct ulock *l)
{
	struct section *s = find_section(l);

	if (unlikely(!s || (s->f && atomic_load_explicit(&s->f->lock, memory_order_relaxed) !=
					ns_off(ns, l))))
		ns_corrupt(ns, "release of a lock whose frame is not ours");
	if (s)
		end_section(ns, s);
	give_word(l);
	uipc_crit_exit();
}

void ulock_release(struct ns *ns, struct ulock *l)
{
	struct jstate *J = &js;
	struct section *s;
	struct jframe *f, *t;

#ifdef UIPC_BENCH_NO_JOURNAL
	give_word(l);
	uipc_crit_exit();
	return;
#endif
	/* the usual case, kept short: the innermost section, no deferred free */
	s = J->top;
	if (unlikely(!s) || unlikely(s->l != l)) {
		release_any(ns, l);
		return;
	}
	f = s->f;
	if (f) {
		if (unlikely(s->frees)) {
			release_any(ns, l);
			return;
		}
		if (atomic_load_explicit(&f->n, memory_order_relaxed)) {
			atomic_store_explicit(&f->n, 0, memory_order_release);	/* commit point */
			commit_failpoint();
		}
		atomic_store_explicit(&l->frame, 0, memory_order_release);
		atomic_store_explicit(&f->lock, 0, memory_order_release);
		J->frames_busy &= ~(unsigned)s->fmask;
	}
	/* (the frame of an outer section, still attached: never F) */
	t = s->saved_target;
	J->target = t;
	s = s == J->sec ? NULL : s - 1;
	J->top = s;
	J->cur_frame = t ? t : s ? s->f : NULL;
	give_word(l);
	uipc_crit_exit();
}

/* Roll back everything the current section stored, keeping the lock. */
void j_abort(struct ns *ns)
{
	struct jframe *f = js.cur_frame;   /* no frame attached: nothing stored */

	if (f) {
		lock_recover_frame(ns, f);
		for (struct section *s = js.sec; js.top && s <= js.top; s++)
			if (s->f == f)
				s->frees = false;
	}
}
