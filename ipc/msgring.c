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
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "ipc/ipc.h"
#include "ipc/msgring.h"

#define TRIES 64               /* contended attempts before the locked path */

/*
 * Each side keeps the other side's word as it last read it: a sender needs
 * the head only when its cached copy says the queue is full, a receiver
 * the tail only when its copy says the ring is empty, so in a stream each
 * side rarely pulls the other's cache line.  A stale copy only errs on the
 * safe side (the head and the tail only grow), as long as it is younger
 * than the 2^30 messages after which counts wrap: a copy is trusted within
 * the second it was read in and the next (the call's own time(), which it
 * reads anyway for stime and rtime; a clock set back voids every copy).
 * Two seconds hold a few tens of millions of messages at most; the TSC
 * this used to read cost 10 ns a call on a VM.
 */
#define CACHE_SECONDS 1

struct word_copy {
	uint64_t val;
	int64_t at;                /* when it was read (seconds) */
};

static __thread struct {
	const struct msgring *r;
	struct word_copy head;     /* a sender's copy of the head */
	struct word_copy tail;     /* a receiver's copy of the tail */
} cache;

/* WORD of ring R as this thread's COPY has it, read again if FRESH is
 * asked, the copy is too old, or it belongs to another ring */
static uint64_t cached(struct msgring *r, const uint64_t *word, struct word_copy *copy,
		       int64_t now, bool fresh)
{
	if (cache.r != r) {
		cache.r = r;
		cache.head.at = cache.tail.at = INT64_MIN;
		fresh = true;
	}
	if (fresh || (uint64_t)now - (uint64_t)copy->at > CACHE_SECONDS) {
		copy->val = ring_load(word);
		copy->at = now;
	}
	return copy->val;
}

void ring_forget(void)
{
	cache.r = NULL;
	cache.head.at = cache.tail.at = INT64_MIN;
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

	return keep | (n << RW_N_SHIFT) | ((rw_bytes(w) + sz) & RW_BYTES_MASK);
}

/*
 * claim word: the writer (its thread slot + 1 in bits 45-62, the low 23 bits
 * of its tid in bits 22-44, so that a slot reused by another thread does not
 * pass for it) and the position, modulo 2^22 (bits 0-21): positions a ring
 * can hold at once are far closer than that
 */
#define CLAIM_IDX_SHIFT 45
#define CLAIM_TID_SHIFT 22
#define CLAIM_TID_MASK  0x7fffffu
#define CLAIM_POS_MASK  0x3fffffu

uint64_t ring_owner_id(uint32_t thread_slot, int32_t tid)
{
	return (uint64_t)(thread_slot + 1) << CLAIM_IDX_SHIFT |
	       (uint64_t)((uint32_t)tid & CLAIM_TID_MASK) << CLAIM_TID_SHIFT;
}

static inline uint64_t claim_word(uint64_t owner, uint32_t pos)
{
	return owner | (pos & CLAIM_POS_MASK);
}

static inline uint64_t claim_owner(uint64_t c)
{
	return c & ~(uint64_t)CLAIM_POS_MASK;
}

static inline uint32_t claim_pos(uint64_t c)
{
	return (uint32_t)c & CLAIM_POS_MASK;
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

/*
 * A line brought toward this CPU before it is needed.  The sender asks for
 * its next slots and the tail for writing (PREFETCHW, where the CPU has
 * it: a read prefetch would fetch them shared, and each store or
 * compare-and-swap still waits for the receiver's copies to go), so that
 * its claim, copy and publish do not each wait for a line the receiver
 * read last; the receiver asks for its next slots for reading.  Measured
 * on the 2-CPU VM: a stream of 128-byte messages between CPUs 4.3 M/s
 * without, 5.9 M/s with.
 */
#if defined(__x86_64__) || defined(__i386__)
static bool have_prefetchw;

__attribute__((constructor)) static void ring_cpu_init(void)
{
	unsigned a, b, c, d;

	/* CPUID 0x80000001 ECX bit 8: PREFETCHW (3DNowPrefetch) */
	have_prefetchw = __get_cpuid(0x80000001, &a, &b, &c, &d) && (c & (1u << 8));
}
#endif

static inline void prefetch_for_write(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
	if (likely(have_prefetchw)) {
		__asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
		return;
	}
#endif
	__builtin_prefetch(p, 1, 3);
}

/* the slot of position POS, for writing or for reading */
static inline void slot_prefetch(struct msgring *r, uint32_t pos, bool write)
{
	const char *p = (const char *)ring_slot(r, pos);

	for (unsigned off = 0; off < RING_SLOT_BYTES; off += 64) {
		if (write)
			prefetch_for_write(p + off);
		else
			__builtin_prefetch(p + off, 0, 3);
	}
}

/* how far ahead each side prefetches its slots */
#define PREFETCH_AHEAD 2

/*
 * A message text's copy into or out of a slot (at most RING_TEXT_MAX
 * bytes): blocks of 16 bytes, the last one overlapping the one before, so
 * that every byte read and written is inside the N of both sides.  memcpy
 * of a length the compiler cannot see became rep movsq here, whose start
 * cost more than the copy: a third of ring_recv's time.
 */
static inline void copy_text(void *dst, const void *src, uint32_t n)
{
	char *d = dst;
	const char *s = src;

	if (n >= 16) {
		for (uint32_t i = 0; i + 16 < n; i += 16)
			__builtin_memcpy(d + i, s + i, 16);
		__builtin_memcpy(d + n - 16, s + n - 16, 16);
	} else if (n >= 8) {
		__builtin_memcpy(d, s, 8);
		__builtin_memcpy(d + n - 8, s + n - 8, 8);
	} else if (n >= 4) {
		__builtin_memcpy(d, s, 4);
		__builtin_memcpy(d + n - 4, s + n - 4, 4);
	} else {
		for (uint32_t i = 0; i < n; i++)
			d[i] = s[i];
	}
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

/* a message into slot S, claimed or past the tail of a stopped ring:
 * plain stores, which nobody reads until the tail takes the slot in */
static void slot_fill(struct rslot *s, int64_t mtype, const void *text, uint32_t sz, int32_t pid,
		      int64_t stime)
{
	s->mtype = mtype;
	s->size = sz;
	s->pid = pid;
	s->stime = stime;
	copy_text(s->text, text, sz);
}

/*
 * Claim the slot of position T for ME.  0: claimed; 1: look at the words
 * again (we are behind, or lost a race); 2: another sender is writing it.
 */
static int claim_slot(struct ns *ns, struct rslot *s, uint64_t t, uint64_t me)
{
	uint32_t pos = rw_n(t) & CLAIM_POS_MASK;
	uint64_t c = __atomic_load_n(&s->claim, __ATOMIC_ACQUIRE);
	uint32_t ahead = (claim_pos(c) - pos) & CLAIM_POS_MASK;

	if (ahead && ahead < CLAIM_POS_MASK / 2)
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
	bool fresh = false;

	/* the tail's line is wanted for writing at the end: ask for it now */
	prefetch_for_write(&r->tail);
	for (int tries = 0; tries < TRIES; tries++) {
		/* head first: then tail - head never undercounts */
		uint64_t h = cached(r, &r->head, &cache.head, now, fresh), t = ring_load(&r->tail), mine;
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
		slot_fill(s, mtype, text, sz, pid, now);
		if (cas(&r->tail, &t, rw_advance(t, sz))) {
			slot_prefetch(r, rw_n(t) + PREFETCH_AHEAD, true);
			return 0;
		}
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
	return claim_slot(ns, ring_slot(r, rw_n(t)), t, me) == 0;
}

/* the message at the end of a stopped ring whose tail is T, written with
 * plain stores (past the tail nobody reads it); the tail that takes it in */
uint64_t ring_put(struct msgring *r, uint64_t t, int64_t mtype, const void *text, uint32_t sz,
		  int32_t pid, int64_t stime)
{
	slot_fill(ring_slot(r, rw_n(t)), mtype, text, sz, pid, stime);
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
	bool fresh = false;

	for (int tries = 0; tries < TRIES; tries++) {
		uint64_t h = ring_load(&r->head), t, h2;
		struct rslot *s;
		uint32_t n, size;
		int64_t mtype;

		if (h & RW_SLOW)
			return RING_STOPPED;
		t = cached(r, &r->tail, &cache.tail, now, fresh);
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
		slot_prefetch(r, rw_n(h) + PREFETCH_AHEAD, false);
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
		copy_text(out->text, s->text, size);
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
