/*
 * arena.c - the allocator inside a namespace file.
 *
 * Power-of-two size classes with one free list per class and pool, fed by a
 * bump pointer (brk).  Memory below brk is populated (MADV_POPULATE_WRITE)
 * before it is handed out, so a full tmpfs gives ENOMEM instead of SIGBUS.
 * Semaphore arrays come from a pool of their own: their memory is only ever
 * reused for semaphore arrays, which the lock-free semop fast path relies on.
 * Shared memory segments too: a caller that looked a segment up just before
 * it was destroyed may still take its lock, which must stay a lock.  Blocks
 * of those pools are not zeroed on reuse (the locks in them stay
 * initialized); fresh ones from brk are zero.
 *
 * Each block carries a generation number; journal entries that allocate or
 * free a block record it, so that rolling an allocation back or redoing a
 * deferred free acts on exactly that allocation and is idempotent.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "core/core.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define BLK_MAGIC  0x424c4b31u
#define BLK_HDR    ARENA_BLK_HDR
#define MIN_CLASS  6
#define MAX_CLASS  39
#define POPULATE_CHUNK (256u << 10)
#define POPULATE_FIRST (16u << 10)

struct blk {
	uint32_t magic;
	uint8_t cls;
	uint8_t pool;
	uint8_t allocated;
	uint8_t pad;
	uint64_t gen;
	uoff_t next_free;
	uint64_t pad2;
};
_Static_assert(sizeof(struct blk) == BLK_HDR, "a block's header is its payload's offset");

static int size_class(uint64_t size)
{
	uint64_t need = size + BLK_HDR;
	int cls = MIN_CLASS;

	while (cls <= MAX_CLASS && (1ULL << cls) < need)
		cls++;
	return cls > MAX_CLASS ? -1 : cls;
}

int arena_populate(struct ns *ns, uoff_t off, uint64_t len)
{
	uint64_t start = off & ~(uint64_t)(UIPC_PAGE - 1);
	uint64_t end = (off + len + UIPC_PAGE - 1) & ~(uint64_t)(UIPC_PAGE - 1);

	if (end > ns->size)
		return -ENOMEM;
	if (sys_madvise(ns->base + start, end - start, MADV_POPULATE_WRITE) == 0)
		return 0;
	if (errno == EINVAL) {
		/* kernel without MADV_POPULATE_WRITE: touch the pages */
		for (uint64_t p = start; p < end; p += UIPC_PAGE)
			__atomic_fetch_add((volatile char *)(ns->base + p), 0, __ATOMIC_RELAXED);
		return 0;
	}
	return -ENOMEM;
}

static uoff_t bump(struct ns *ns, struct alloc_state *a, int cls)
{
	uint64_t bsize = 1ULL << cls;
	uint64_t align = bsize < UIPC_PAGE ? bsize : UIPC_PAGE;
	uint64_t brk = a->brk;
	uint64_t start = (brk + align - 1) & ~(align - 1);
	uint64_t end = start + bsize;

	/* brk comes from the arena: a block is only ever carved from the
	 * heap, never from the header or the fixed tables below it */
	if (brk < ns->lay.heap_start || start < brk || end > ns->size || end < start) {
		if (brk < ns->lay.heap_start || brk > ns->size)
			ns_corrupt(ns, "allocator's break outside the heap");
		return 0;
	}
	if (end > a->populated) {
		/* populated ahead as much as the heap already has, from 16 KiB up
		 * to 256 KiB: a new namespace's first call (unshare, then one
		 * semget) must not pay for 256 KiB it may never use */
		uint64_t have = a->populated - ns->lay.heap_start;
		uint64_t chunk = have < POPULATE_FIRST ? POPULATE_FIRST :
				 have > POPULATE_CHUNK ? POPULATE_CHUNK :
				 1ULL << (63 - __builtin_clzll(have));
		uint64_t to = (end + chunk - 1) & ~(chunk - 1);

		if (to > ns->size)
			to = ns->size;
		if (arena_populate(ns, a->populated, to - a->populated))
			return 0;
		J_SET(ns, a->populated, to);
	}
	J_SET(ns, a->brk, end);
	return start;
}

/* Allocate; if the caller is inside a section, fill OUTER_SLOT with an ALLOC
 * entry for it before the allocation commits. */
static uoff_t alloc_block(struct ns *ns, uint64_t size, int pool,
			  struct jframe *outer, struct jentry *outer_slot)
{
	struct alloc_state *a = &ns->hdr->alloc;
	struct blk *b;
	uoff_t off;
	uint64_t gen;
	int cls = size_class(size);

	if (cls < 0 || pool < 0 || pool >= POOL_NR)
		return 0;
	if (ulock_acquire(ns, &a->lock))
		return 0;
	off = a->free[pool][cls];
	if (off) {
		b = off >= ns->lay.heap_start ? ns_ptr_aligned(ns, off, 1ULL << cls) : NULL;
		if (!b || b->magic != BLK_MAGIC || b->cls != cls || b->allocated) {
			ns_corrupt(ns, "allocator free list");
			J_SET(ns, a->free[pool][cls], (uoff_t)0);
			off = 0;
		} else {
			J_SET(ns, a->free[pool][cls], b->next_free);
		}
	}
	if (!off) {
		off = bump(ns, a, cls);
		if (!off) {
			ulock_release(ns, &a->lock);
			return 0;
		}
		b = ns_ptr(ns, off, sizeof(*b));
		/* fresh memory: unreachable until brk commits, no journal needed */
		b->magic = BLK_MAGIC;
		b->cls = (uint8_t)cls;
		b->pool = (uint8_t)pool;
		b->allocated = 0;
		b->gen = 0;
	}
	gen = a->gen + 1;
	J_SET(ns, a->gen, gen);
	J_SET(ns, b->allocated, (uint8_t)1);
	J_SET(ns, b->gen, gen);
	/* b->next_free is left as it is: only a free block's is read (the
	 * free lists, arena_check), and free_block sets it */
	J_SET(ns, a->used, a->used + (1ULL << cls));
	if (outer_slot)
		j_push(outer, outer_slot, (off + BLK_HDR) | (J_KIND_ALLOC << 60), gen);
	ulock_release(ns, &a->lock);
	if (pool == POOL_GENERAL)
		memset(ns->base + off + BLK_HDR, 0, (1ULL << cls) - BLK_HDR);
	return off + BLK_HDR;
}

/* Allocate memory (zeroed in POOL_GENERAL); rolled back with the caller's
 * section, if any. */
uoff_t arena_alloc(struct ns *ns, uint64_t size, int pool)
{
	struct jframe *outer = j_top(ns);
	struct jentry *slot = NULL;

	if (outer) {
		uint32_t n = atomic_load_explicit(&outer->n, memory_order_relaxed);

		slot = n < J_INLINE ? &outer->e[n] : j_slot(ns, outer, n, true);
		if (!slot)
			return 0;
	}
	return alloc_block(ns, size, pool, outer, slot);
}

/* Allocate without telling the caller's section (journal chunks). */
uoff_t arena_alloc_raw(struct ns *ns, uint64_t size, int pool)
{
	return alloc_block(ns, size, pool, NULL, NULL);
}

/*
 * Free the block whose payload is at OFF, if it is still the allocation of
 * generation GEN (any generation unless check_gen).  Takes the allocator lock.
 */
static void free_block(struct ns *ns, uoff_t off, bool check_gen, uint64_t gen)
{
	struct alloc_state *a = &ns->hdr->alloc;
	/* only heap blocks: an offset into the header or the tables (a
	 * forged one) must never reach a free list */
	struct blk *b = off >= ns->lay.heap_start + BLK_HDR ?
		ns_ptr_aligned(ns, off - BLK_HDR, sizeof(*b)) : NULL;

	if (!b || b->magic != BLK_MAGIC || b->cls < MIN_CLASS || b->cls > MAX_CLASS ||
	    b->pool >= POOL_NR) {
		ns_corrupt(ns, "free of a bad block");
		return;
	}
	if (ulock_acquire(ns, &a->lock))
		return;
	if (b->allocated && (!check_gen || b->gen == gen)) {
		J_SET(ns, b->allocated, (uint8_t)0);
		J_SET(ns, b->gen, b->gen + 1);
		J_SET(ns, b->next_free, a->free[b->pool][b->cls]);
		J_SET(ns, a->free[b->pool][b->cls], off - BLK_HDR);
		J_SET(ns, a->used, a->used - (1ULL << b->cls));
	}
	ulock_release(ns, &a->lock);
}

/*
 * Does the allocated block that begins LEN bytes of object at OFF hold all
 * of them?  The block header is read once (another member may rewrite it
 * meanwhile: the answer is only ever used together with ns_ptr's, which
 * keeps every access inside the mapping).
 */
bool arena_obj_fits(struct ns *ns, uoff_t off, uint64_t len)
{
	/* objects live in the heap, never in the header or the tables */
	struct blk *b = off >= ns->lay.heap_start + BLK_HDR ?
		ns_ptr_aligned(ns, off - BLK_HDR, sizeof(*b)) : NULL;
	uint8_t cls;

	if (!b || __atomic_load_n(&b->magic, __ATOMIC_RELAXED) != BLK_MAGIC ||
	    !__atomic_load_n(&b->allocated, __ATOMIC_RELAXED))
		return false;
	cls = __atomic_load_n(&b->cls, __ATOMIC_RELAXED);
	if (cls < MIN_CLASS || cls > MAX_CLASS || len > (1ULL << cls) - BLK_HDR)
		return false;
	return ns_ptr(ns, off, len) != NULL;
}

uint64_t arena_block_gen(struct ns *ns, uoff_t off)
{
	struct blk *b = off > BLK_HDR ? ns_ptr_aligned(ns, off - BLK_HDR, sizeof(*b)) : NULL;

	return b ? b->gen : 0;
}

const uint64_t *arena_gen_word(struct ns *ns, uoff_t off)
{
	struct blk *b = off > BLK_HDR ? ns_ptr_aligned(ns, off - BLK_HDR, sizeof(*b)) : NULL;

	return b ? &b->gen : NULL;
}

/* Free now (used by journal replay: ALLOC rollback and deferred FREE redo). */
void arena_free_now(struct ns *ns, uoff_t off, struct jentry *e)
{
	free_block(ns, off, e != NULL, e ? e->old : 0);
}

/* Free at the commit of the current section (or now, outside any section). */
void arena_free(struct ns *ns, uoff_t off)
{
	struct jframe *f = j_top(ns);
	struct jentry *slot;

	if (!off)
		return;
	if (f) {
		uint32_t n = atomic_load_explicit(&f->n, memory_order_relaxed);

		slot = n < J_INLINE ? &f->e[n] : j_slot(ns, f, n, true);
	} else {
		slot = NULL;
	}
	if (!slot) {
		free_block(ns, off, false, 0);
		return;
	}
	j_push(f, slot, off | (J_KIND_FREE << 60), arena_block_gen(ns, off));
}

void arena_init(struct uipc_hdr *h, uoff_t heap_start)
{
	memset(&h->alloc, 0, sizeof(h->alloc));
	ulock_init(&h->alloc.lock);
	h->alloc.brk = heap_start;
	h->alloc.populated = heap_start;
}

/*
 * The heap's first chunk, populated with a new namespace NS (not yet
 * published, so not journaled): the blocks of its first objects (a key
 * table and an array) come from there, and a page first touched costs 2-4
 * us here, one at a time, against 2 in a batch: so a new namespace's first
 * create touches no new page (issue 15's first call).
 */
int arena_populate_first(struct ns *ns)
{
	struct alloc_state *a = &ns->hdr->alloc;
	uoff_t to = (a->brk + POPULATE_FIRST) & ~(uoff_t)(POPULATE_FIRST - 1);

	if (arena_populate(ns, a->populated, to - a->populated))
		return -ENOMEM;
	a->populated = to;
	return 0;
}

/*
 * Check the allocator: every free-list block is a free block of its list's
 * class and pool, no list loops.  Returns the number of problems found and
 * describes the first ones in REPORT.
 */
int arena_check(struct ns *ns, char *report, size_t len)
{
	struct alloc_state *a = &ns->hdr->alloc;
	int bad = 0;
	size_t used = 0;

	if (report && len)
		report[0] = 0;
	for (int pool = 0; pool < POOL_NR; pool++) {
		for (int cls = MIN_CLASS; cls <= MAX_CLASS; cls++) {
			uoff_t off = a->free[pool][cls];
			uint64_t brk = a->brk;
			/* no more blocks than the mapping holds, whatever brk says */
			uint64_t guard = 0, most = ((brk < ns->size ? brk : ns->size) >> cls) + 1;

			while (off && guard++ <= most) {
				struct blk *b = ns_ptr_aligned(ns, off, sizeof(*b));

				if (!b || b->magic != BLK_MAGIC || b->cls != cls || b->pool != pool ||
				    b->allocated || off >= brk) {
					bad++;
					if (report && used < len)
						used += (size_t)snprintf(report + used, len - used,
							"free list %d/%d: bad block at %llu (allocated %d, class %d)\n",
							pool, cls, (unsigned long long)off,
							b ? b->allocated : -1, b ? b->cls : -1);
					break;
				}
				off = b->next_free;
			}
			if (guard > most) {
				bad++;
				if (report && used < len)
					used += (size_t)snprintf(report + used, len - used,
						"free list %d/%d: loops (a block freed twice)\n", pool, cls);
			}
		}
	}
	return bad;
}
