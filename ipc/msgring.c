/*
 * msgring.c - the lock-free fast path of a message queue.
 *
 * A queue that streams small messages keeps them in a ring of fixed slots
 * that senders fill and receivers empty without the queue lock: the two
 * sides meet only on the slots and on two words, tail (senders) and head
 * (receivers), each on its own cache line.  The queue's other state (the
 * locked message list, sleepers, IPC_SET) belongs to msg.c; whenever it
 * needs the queue whole it stops the ring (the SLOW bit in both words) and
 * moves what the ring holds to the list.  While the fast paths are on, the
 * list is empty and nobody sleeps, so the ring alone is the queue.
 *
 * Crash atomicity by construction: a message is sent by one compare-and-swap
 * of the tail word, after its text is in a slot nobody else may write, and
 * taken by one compare-and-swap of the head word, after it was read.  A
 * process killed at any other instruction leaves nothing half done.
 *
 * Senders claim a slot before they write it (claim word: the writer's
 * thread and the position), so that two senders never write the same slot.
 * A claim for the position the tail is at holds as long as its writer lives
 * (a restart of the ring since does not end it: the writer may still be
 * copying, only its publish would fail, for the epoch changed); one of a
 * dead writer, or of an older position, is taken over by the next sender.
 * A sender that waits too long for a live claim takes the locked path.
 */
#include <string.h>

#include "ipc/ipc.h"
#include "ipc/msgring.h"

#define TRIES 64               /* contended attempts before the locked path */

/*
 * Each side keeps the other side's word as it last read it: a sender needs
 * the head only when its cached copy says the queue is full, a receiver
 * the tail only when its copy says the ring is empty, so in a stream each
 * side rarely pulls the other's cache line.  A stale copy only errs on the
 * safe side (the head and the tail only grow), as long as it is younger
 * than the 2^22 messages after which counts wrap: a copy is trusted for at
 * most CACHE_TICKS (well under a millisecond on any TSC).
 */
#define CACHE_TICKS (1ull << 21)

struct word_copy {
	uint64_t val, at;          /* the word, and when it was read (ticks) */
};

static __thread struct {
	const struct msgring *r;
	struct word_copy head;     /* a sender's copy of the head */
	struct word_copy tail;     /* a receiver's copy of the tail */
} cache;

static inline uint64_t ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#else
	return (uint64_t)mono_ns();
#endif
}

/* WORD of ring R as this thread's COPY has it, read again if FRESH is
 * asked, the copy is too old, or it belongs to another ring */
static uint64_t cached(struct msgring *r, const uint64_t *word, struct word_copy *copy,
		       uint64_t now, bool fresh)
{
	if (cache.r != r) {
		cache.r = r;
		cache.head.at = cache.tail.at = 0;
		fresh = true;
	}
	if (fresh || now - copy->at > CACHE_TICKS) {
		copy->val = ring_load(word);
		copy->at = now;
	}
	return copy->val;
}

void ring_forget(void)
{
	cache.r = NULL;
	cache.head.at = cache.tail.at = 0;
}

static inline uint32_t rw_epoch(uint64_t w)
{
	return (uint32_t)((w & RW_EPOCH_MASK) >> RW_EPOCH_SHIFT);
}

/* W with one more message of SZ bytes (count and bytes wrap) */
static inline uint64_t rw_advance(uint64_t w, uint32_t sz)
{
	uint64_t keep = w & (RW_SLOW | RW_EPOCH_MASK);
	uint64_t n = (rw_n(w) + 1u) & RW_N_MASK;

	return keep | (n << RW_N_SHIFT) | (uint32_t)(rw_bytes(w) + sz);
}

/*
 * claim word: the writer (its thread slot + 1 in bits 45-62, the low 23 bits
 * of its tid in bits 22-44, so that a slot reused by another thread does not
 * pass for it) and the position (bits 0-21)
 */
#define CLAIM_IDX_SHIFT 45
#define CLAIM_TID_SHIFT 22
#define CLAIM_TID_MASK  0x7fffffu

uint64_t ring_owner_id(uint32_t thread_slot, int32_t tid)
{
	return (uint64_t)(thread_slot + 1) << CLAIM_IDX_SHIFT |
	       (uint64_t)((uint32_t)tid & CLAIM_TID_MASK) << CLAIM_TID_SHIFT;
}

static inline uint64_t claim_word(uint64_t owner, uint32_t pos)
{
	return owner | (pos & RW_N_MASK);
}

static inline uint64_t claim_owner(uint64_t c)
{
	return c & ~(uint64_t)RW_N_MASK;
}

static inline uint32_t claim_pos(uint64_t c)
{
	return (uint32_t)c & RW_N_MASK;
}

/* is the writer of a claim alive (then it may still be writing)? */
static bool owner_alive(struct ns *ns, uint64_t owner)
{
	uint32_t idx = (uint32_t)(owner >> CLAIM_IDX_SHIFT);
	uint32_t tid = (uint32_t)(owner >> CLAIM_TID_SHIFT) & CLAIM_TID_MASK;
	struct uthread *t;
	uint64_t w;

	if (!idx || idx > MAX_THREADS)
		return false;
	t = ns_ptr(ns, ns->lay.threads + (uoff_t)(idx - 1) * sizeof(*t), sizeof(*t));
	if (!t)
		return false;
	w = atomic_load(&t->state);
	return SLOT_STATE(w) == SLOT_LIVE && ((uint32_t)SLOT_ID(w) & CLAIM_TID_MASK) == tid &&
	       thread_alive(ns, t);
}

static bool cas(uint64_t *w, uint64_t *expect, uint64_t want)
{
	return __atomic_compare_exchange_n(w, expect, want, false, __ATOMIC_ACQ_REL,
					   __ATOMIC_ACQUIRE);
}

void ring_init(struct msgring *r)
{
	/* fresh, zeroed memory nobody can reach yet: the fast paths start off */
	r->tail = RW_SLOW;
	r->head = RW_SLOW;
}

/* the kernel's fit rule, for what the ring holds */
static bool ring_fits(uint64_t t, uint64_t h, uint64_t qbytes, uint32_t sz)
{
	uint32_t n = ring_count(t, h);

	return (uint64_t)ring_bytes(t, h) + sz <= qbytes && (uint64_t)n + 1 <= qbytes;
}

bool ring_has_room(struct msgring *r, uint64_t qbytes, uint32_t sz)
{
	uint64_t t = ring_load(&r->tail), h = ring_load(&r->head);

	/* a stopped ring: the caller looks again on the locked path */
	return (t & RW_SLOW) || ring_fits(t, h, qbytes, sz);
}

/*
 * Claim the slot of position T for ME.  0: claimed; 1: look at the words
 * again (we are behind, or lost a race); 2: another sender is writing it.
 */
static int claim_slot(struct ns *ns, struct rslot *s, uint64_t t, uint64_t me)
{
	uint32_t pos = rw_n(t);
	uint64_t c = __atomic_load_n(&s->claim, __ATOMIC_ACQUIRE);
	uint32_t ahead = (claim_pos(c) - pos) & RW_N_MASK;

	if (ahead && ahead < RW_N_MASK / 2)
		return 1;          /* the slot already serves a later position */
	if (!ahead && claim_owner(c) && claim_owner(c) != me && owner_alive(ns, claim_owner(c)))
		return 2;
	return cas(&s->claim, &c, claim_word(me, pos)) ? 0 : 1;
}

int ring_send(struct ns *ns, struct msgring *r, uint64_t me, uint64_t qbytes, int64_t mtype, const void *text,
	      uint32_t sz, int32_t pid, int64_t now)
{
	if (sz > RING_TEXT_MAX || qbytes > INT32_MAX)
		return RING_SLOW;
	uint64_t tk = ticks();
	bool fresh = false;

	for (int tries = 0; tries < TRIES; tries++) {
		/* head first: then tail - head never undercounts */
		uint64_t h = cached(r, &r->head, &cache.head, tk, fresh), t = ring_load(&r->tail), mine;
		struct rslot *s;
		int c;

		if (t & RW_SLOW)
			return RING_STOPPED;
		/* a copy from before the last restart (or another ring) is void */
		if (!fresh && (rw_epoch(h) != rw_epoch(t) || !ring_fits(t, h, qbytes, sz) ||
			       ring_count(t, h) >= RING_SLOTS)) {
			fresh = true;      /* the copy says full: read the head */
			continue;
		}
		if (!ring_fits(t, h, qbytes, sz)) {
			/*
			 * Full at the head's second read if the head did not
			 * move (the ring held at least tail - head then, and
			 * the fast paths were on, or being stopped with the
			 * ring still the whole queue): what the kernel's
			 * msgsnd sees under the lock.
			 */
			if (ring_load(&r->head) == h)
				return RING_FULL;
			continue;
		}
		if (ring_count(t, h) >= RING_SLOTS)
			return RING_SLOW;  /* the queue has room, the ring none */
		s = ring_slot(r, rw_n(t));
		c = claim_slot(ns, s, t, me);
		if (c) {
			cpu_relax();
			continue;
		}
		mine = claim_word(me, rw_n(t));
		/* the slot is ours: plain stores, published by the tail */
		s->mtype = mtype;
		s->size = sz;
		s->pid = pid;
		s->stime = now;
		memcpy(s->text, text, sz);
		if (cas(&r->tail, &t, rw_advance(t, sz)))
			return 0;
		/* stopped or overtaken: give the claim back */
		cas(&s->claim, &mine, claim_word(0, claim_pos(mine)));
	}
	return RING_SLOW;
}

/*
 * The queue lock's holder moves the queue's list into the ring, which is
 * stopped and empty (head = tail = T): may the first message go to T's
 * slot?  A sender that read the tail before the ring stopped may still be
 * writing that slot under a live claim (its publish fails, but its copy
 * would land on ours); otherwise the claim becomes ME's, so that such a
 * sender, late, finds the slot taken instead of writing into it.
 */
bool ring_refill_begin(struct ns *ns, struct msgring *r, uint64_t me, uint64_t t)
{
	struct rslot *s = ring_slot(r, rw_n(t));
	uint64_t c = __atomic_load_n(&s->claim, __ATOMIC_ACQUIRE);

	if (claim_pos(c) == rw_n(t) && claim_owner(c) && claim_owner(c) != me &&
	    owner_alive(ns, claim_owner(c)))
		return false;
	return cas(&s->claim, &c, claim_word(me, rw_n(t)));
}

/* the message at the end of a stopped ring whose tail is T, written with
 * plain stores (past the tail nobody reads it); the tail that takes it in */
uint64_t ring_put(struct msgring *r, uint64_t t, int64_t mtype, const void *text, uint32_t sz,
		  int32_t pid, int64_t stime)
{
	struct rslot *s = ring_slot(r, rw_n(t));

	s->mtype = mtype;
	s->size = sz;
	s->pid = pid;
	s->stime = stime;
	memcpy(s->text, text, sz);
	return rw_advance(t, sz);
}

/* the last fast receiver, once its head update is done */
static void note_receiver(struct msgring *r, uint64_t h_after, int32_t pid, int64_t now)
{
	uint64_t want = (uint64_t)rw_n(h_after) << 32 | (uint32_t)pid;
	uint64_t cur = __atomic_load_n(&r->rstat, __ATOMIC_RELAXED);

	if (__atomic_load_n(&r->rtime, __ATOMIC_RELAXED) != now)
		__atomic_store_n(&r->rtime, now, __ATOMIC_RELAXED);
	/* a receiver of a later message may have noted itself already (a
	 * few tries: the word is a hint, and others may keep changing it) */
	for (int tries = 0; tries < TRIES &&
	     ((rw_n(h_after) - (uint32_t)(cur >> 32)) & RW_N_MASK) < RW_N_MASK / 2 && cur != want;
	     tries++) {
		if (cas(&r->rstat, &cur, want))
			break;
	}
}

int ring_recv(struct msgring *r, int64_t msgtyp, bool except, uint64_t maxsize,
	      struct ring_msg *out, uint64_t *tail_seen, int32_t pid, int64_t now)
{
	uint64_t tk = ticks();
	bool fresh = false;

	for (int tries = 0; tries < TRIES; tries++) {
		uint64_t h = ring_load(&r->head), t, h2;
		struct rslot *s;
		uint32_t n, size;
		int64_t mtype;

		if (h & RW_SLOW)
			return RING_STOPPED;
		t = cached(r, &r->tail, &cache.tail, tk, fresh);
		n = ring_count(t, h);
		if (!fresh && ((t & RW_SLOW) || rw_epoch(t) != rw_epoch(h) || n == 0 ||
			       n > RING_SLOTS)) {
			fresh = true;      /* the copy says empty: read the tail */
			continue;
		}
		if (t & RW_SLOW)
			return RING_STOPPED;
		if (n == 0) {
			*tail_seen = t;
			return RING_EMPTY; /* empty when the tail was read */
		}
		if (n > RING_SLOTS)
			return RING_SLOW;  /* we read the two words far apart */
		s = ring_slot(r, rw_n(h));
		mtype = __atomic_load_n(&s->mtype, __ATOMIC_RELAXED);
		size = __atomic_load_n(&s->size, __ATOMIC_RELAXED);
		if (size > RING_TEXT_MAX)
			continue;          /* torn by a later sender: look again */
		if (msgtyp > 0 && (mtype == msgtyp) == except) {
			/* a match further on needs the locked search */
			for (uint32_t i = 1; i < n; i++) {
				int64_t mt = __atomic_load_n(&ring_slot(r, rw_n(h) + i)->mtype,
							     __ATOMIC_RELAXED);

				if ((mt == msgtyp) != except)
					return RING_SLOW;
			}
			/* none matches, if no message came meanwhile */
			if (fresh && ring_load(&r->tail) == t) {
				*tail_seen = t;
				return RING_EMPTY;
			}
			fresh = true;
			continue;
		}
		if (size > maxsize) {
			/* the first message is too big if it still is the first */
			if (ring_load(&r->head) == h)
				return RING_2BIG;
			continue;
		}
		out->mtype = mtype;
		out->size = size;
		memcpy(out->text, s->text, size);
		h2 = rw_advance(h, size);
		if (cas(&r->head, &h, h2)) {
			note_receiver(r, h2, pid, now);
			return 0;
		}
	}
	return RING_SLOW;
}

void ring_stop(struct msgring *r, uint64_t *tail, uint64_t *head)
{
	/* senders first: after this no message can arrive; then receivers */
	*tail = __atomic_or_fetch(&r->tail, RW_SLOW, __ATOMIC_ACQ_REL);
	*head = __atomic_or_fetch(&r->head, RW_SLOW, __ATOMIC_ACQ_REL);
}

void ring_go(struct msgring *r)
{
	uint64_t t, h, ep;

	/*
	 * Both words stopped first: a holder killed between the two stores of
	 * ring_stop (or of a ring_go) left receivers running, and a head read
	 * here while one of them takes a message would be written back stale
	 * (that message would be taken twice).
	 */
	ring_stop(r, &t, &h);
	ep = ((uint64_t)((rw_epoch(t) + 1u) & 0x1ffu)) << RW_EPOCH_SHIFT;

	/* receivers first, senders last: the tail's bit is what says "on" */
	__atomic_store_n(&r->head, (h & ~(RW_SLOW | RW_EPOCH_MASK)) | ep, __ATOMIC_RELEASE);
	__atomic_store_n(&r->tail, (t & ~(RW_SLOW | RW_EPOCH_MASK)) | ep, __ATOMIC_RELEASE);
}

void ring_snapshot(struct msgring *r, uint64_t *tail, uint64_t *head)
{
	uint64_t h, t;

	/* head, tail, head again: the count is exact at the tail's read
	 * (receivers rarely move the head twice meanwhile; a member that
	 * keeps rewriting it gets a count that callers check anyway) */
	for (int tries = 0;; tries++) {
		h = ring_load(&r->head);
		t = ring_load(&r->tail);
		if (ring_load(&r->head) == h || tries == TRIES)
			break;
	}
	*tail = t;
	*head = h;
}
