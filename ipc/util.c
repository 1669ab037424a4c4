/*
 * util.c - what the kernel's ipc/util.c owns: ipc_ids (cyclic index
 * allocation with sequence numbers, next_id), the key hash (O(1) key lookup,
 * seed 000), the generic *get logic, and ipc_perm checks against the
 * caller's credentials and capabilities (core/cred.c).
 */
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ipc/ipc.h"

#define KEY_EMPTY 0ULL
#define KEY_TOMB  0xffffffffULL

bool cred_in_group(const struct ucred_cache *c, gid_t g)
{
	if (c->egid == g)
		return true;
	for (int i = 0; i < c->ngroups; i++)
		if (c->groups[i] == g)
			return true;
	return false;
}

bool ipc_owner_or_admin(struct uperm *p)
{
	const struct ucred_cache *c = cur_cred();

	return c->euid == p->cuid || c->euid == p->uid || ((c->caps >> CAP_SYS_ADMIN) & 1);
}

/* IPC_SET's new owner and mode (the ids as the caller gives them, kept as
 * the namespace's owner user namespace sees them, cred.c): 0, or -EINVAL
 * for an id that has no mapping there, as the kernel's make_kuid */
int ipc_update_perm(struct ns *ns, struct uperm *p, const struct ipc_perm *in)
{
	uint32_t uid, gid;

	if (cred_id_from_caller((uint32_t)in->uid, false, &uid) ||
	    cred_id_from_caller((uint32_t)in->gid, true, &gid))
		return -EINVAL;
	J_SET(ns, p->uid, uid);
	J_SET(ns, p->gid, gid);
	J_SET(ns, p->mode, (p->mode & ~0777u) | ((uint32_t)in->mode & 0777u));
	return 0;
}

/* the ipc_perm a *_STAT returns: ids as the caller sees them (cred.c) */
void ipc_fill_perm(struct ns *ns, const struct uperm *p, struct ipc_perm *out)
{
	memset(out, 0, sizeof(*out));
	out->__key = p->key;
	out->uid = cred_id_for_caller(p->uid, false);
	out->gid = cred_id_for_caller(p->gid, true);
	out->cuid = cred_id_for_caller(p->cuid, false);
	out->cgid = cred_id_for_caller(p->cgid, true);
	out->mode = (unsigned short)p->mode;
	out->__seq = (unsigned short)((uint32_t)p->id >> ns->shift);
}

/* ---- ids tables ---- */

static struct ipc_ids *ids_of(struct ns *ns, int type)
{
	return &ns->hdr->ids[type];
}

static int type_of(struct ns *ns, struct ipc_ids *ids)
{
	return (int)(ids - ns->hdr->ids);
}

static uint64_t *bitmap(struct ns *ns, struct ipc_ids *ids)
{
	return ns_ptr(ns, ns->lay.used[type_of(ns, ids)], (uint64_t)ns->ipcmni / 8);
}

int ipc_ids_init(struct ns *ns, int type, uoff_t entries, uoff_t used, uoff_t populated)
{
	struct ipc_ids *ids = ids_of(ns, type);

	memset(ids, 0, sizeof(*ids));
	ulock_init(&ids->lock);
	ids->max_idx = -1;
	ids->last_idx = -1;
	ids->next_id = -1;
	ids->entries = entries;
	ids->used = used;
	ids->populated = populated;
	return 0;
}

/* (ipc.h's lookups, out of line: their usual path stays short) */
struct uperm *ipc_obj_bad(struct ns *ns, const char *what)
{
	ns_corrupt(ns, what);
	return NULL;
}

struct uperm *ipc_obtain_gone(struct ns *ns, int type, int id, int *err)
{
	*err = -EINVAL;
	if (id >= 0 && type != IPC_MSG_IDS)
		ipc_seen_forget(ns, type, id);
	return NULL;
}

static int ipc_settle(struct ns *ns, struct uperm *p);

/*
 * The lookup of the *_STAT commands: by index without a sequence check for
 * SEM_STAT/MSG_STAT/SHM_STAT and their _ANY forms, by checked id for
 * IPC_STAT; then read permission, except for the _ANY forms.
 */
struct uperm *ipc_obtain_for_stat(struct ns *ns, int type, int id, bool by_index, bool any,
				  int *err)
{
	struct uperm *p;

	if (by_index) {
		p = ipc_obtain(ns, type, id);
		/* an object whose creation has not committed has no id yet
		 * (ipc_addid_at_commit): nothing lives at that index so far */
		if (!p || __atomic_load_n(&p->id, __ATOMIC_ACQUIRE) < 0) {
			*err = -EINVAL;
			return NULL;
		}
	} else {
		p = ipc_obtain_check(ns, type, id, err);
		if (!p)
			return NULL;
	}
	if (!any) {
		/* a lock that cannot be had (held by a stopped member, see
		 * core/lockwait.c): the call fails, it does not wait twice */
		int r = ipc_settle(ns, p);

		if (r) {
			*err = r;
			return NULL;
		}
		if (ipcperms(p, 0444)) {
			*err = -EACCES;
			return NULL;
		}
	}
	return p;
}

/* The highest index in use, or -1.  Callers loop up to it, so a value
 * read from the arena is clamped to the table this process knows
 * (ns->ipcmni): a forged max_idx makes a walk no longer than the table. */
int ipc_get_maxidx(struct ns *ns, int type)
{
	struct ipc_ids *ids = ids_of(ns, type);
	int32_t in_use = ids->in_use, max = ids->max_idx;

	if (in_use <= 0)
		return -1;
	if (in_use >= ns->ipcmni || max >= ns->ipcmni)
		return ns->ipcmni - 1;
	return max < -1 ? -1 : max;
}

/* lowest clear bit of the used bitmap in [from, to), or -1 */
static int find_free(struct ns *ns, struct ipc_ids *ids, int from, int to)
{
	uint64_t *bm = bitmap(ns, ids);
	int i;

	/* the bounds come from the arena: never trust them past the table */
	if (!bm || to > ns->ipcmni)
		to = bm ? ns->ipcmni : 0;
	if (from < 0 || from > to)
		from = from < 0 ? 0 : to;
	i = from;
	if (!bm)
		return -1;
	while (i < to) {
		uint64_t w = ~atomic_load_explicit((_Atomic uint64_t *)&bm[i / 64],
						   memory_order_relaxed);

		w &= ~0ULL << (i % 64);
		if (w) {
			int idx = (i & ~63) + __builtin_ctzll(w);

			return idx < to ? idx : -1;
		}
		i = (i & ~63) + 64;
	}
	return -1;
}

static int populate_entry(struct ns *ns, struct ipc_ids *ids, int idx)
{
	uint64_t page = (uint64_t)idx * sizeof(uoff_t) / UIPC_PAGE;
	uint64_t *pop = ns_ptr(ns, ns->lay.populated[type_of(ns, ids)], page / 8 + 8);

	if (!pop)
		return -ENOMEM;
	if (pop[page / 64] & (1ULL << (page % 64)))
		return 0;
	if (arena_populate(ns, ns->lay.entries[type_of(ns, ids)] + page * UIPC_PAGE, UIPC_PAGE))
		return -ENOMEM;
	/* not journaled: a populated page stays populated */
	__atomic_fetch_or(&pop[page / 64], 1ULL << (page % 64), __ATOMIC_RELAXED);
	return 0;
}

/* ---- adaptive spinning (ipc.h) ---- */

int64_t spin_budget_take(struct spin_budget *b)
{
	if (b->ns)
		return b->ns;
	return ++b->skipped % 32 ? 0 : SPIN_PROBE_NS;
}

void spin_budget_paid(struct spin_budget *b, bool waited)
{
	/* a probe that ends at once counts too (the peer is back on another
	 * CPU), else a stream that once shared a CPU would sleep for good */
	if (b->ns < SPIN_PROBE_NS)
		b->ns = SPIN_PROBE_NS;
	else if (waited)
		b->ns = b->ns * 2 > b->max ? b->max : b->ns * 2;
}

void spin_budget_slept(struct spin_budget *b, int64_t waited)
{
	int64_t want = waited * 2;

	if (waited >= b->max)
		return;
	if (want < SPIN_PROBE_NS)
		want = SPIN_PROBE_NS;
	if (want > b->max)
		want = b->max;
	if (b->ns < want)
		b->ns = want;
}

void spin_budget_wasted(struct spin_budget *b)
{
	b->ns = b->ns / 2 < SPIN_MIN_NS ? 0 : b->ns / 2;
}

/* ---- key hash ----
 *
 * Open addressing over buckets of KEY_SLOTS entries (key << 32 | idx + 1),
 * each bucket one cache line.  A key's home bucket is a hash of the key
 * without its low 3 bits, and its first slot there is those bits: keys that
 * differ only in them (k, k+1, ..., as a program numbering its keys makes
 * them) share a line, so a loop over them misses the cache once per 8 keys
 * instead of at every key (seed 000 at 1,000,000 keys).  A probe goes on
 * through the rest of the bucket, then the next buckets, and stops at an
 * empty slot: any fixed order of the slots per key keeps linear probing's
 * rules (removal leaves a tombstone; growing rebuilds without them).
 *
 * The table is NB = 2^m - 1 buckets starting at the first cache line of its
 * block's payload: with that gap the block is exactly 2^(m+6) bytes, where
 * 2^m buckets would take a block twice as large.  ids->keys is the payload
 * (what arena_free takes), ids->keys_cap the number of slots, NB * 8.
 */
#define KEY_SLOTS_SHIFT 3
#define KEY_SLOTS (1u << KEY_SLOTS_SHIFT)
#define KEY_LINE  64u
#define KEYS_GAP  ((KEY_LINE - ARENA_BLK_HDR % KEY_LINE) % KEY_LINE)
/* keys_table's check of whole buckets and 8-aligned slots is one mask */
_Static_assert(KEY_SLOTS == 8 && KEYS_GAP % 8 == 0, "key table: buckets of 8, slots aligned");

static uint32_t key_hash(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

/* the table shape key_table_grow makes: NB + 1 a power of two, the first
 * slot at a cache line (fsck checks it; lookups need only the bounds) */
static bool keys_shape_ok(uoff_t off, uint32_t cap)
{
	uint32_t nb = cap / KEY_SLOTS;

	return cap && cap % KEY_SLOTS == 0 && !(nb & (nb + 1)) && (off + KEYS_GAP) % KEY_LINE == 0;
}

/*
 * The slots of the key table, its offset and capacity read once: every
 * probe below uses the capacity checked here against the arena, never a
 * second reading (another member may change the header's at any time).
 * Whole buckets of 8-aligned slots, so every probe stays within that
 * capacity, whatever the arena says.  NULL, *CAP 0: none, or not inside
 * the arena.
 */
static inline uint64_t *keys_table(struct ns *ns, struct ipc_ids *ids, uint32_t *cap)
{
	uoff_t off = __atomic_load_n(&ids->keys, __ATOMIC_RELAXED);
	uint32_t c = __atomic_load_n(&ids->keys_cap, __ATOMIC_RELAXED);
	/* (ns_ptr refuses offset 0; a capacity of 0 is a table of no bucket) */
	char *t = !((off | c) & 7) ? ns_ptr(ns, off, KEYS_GAP + (uint64_t)c * 8) : NULL;

	*cap = t ? c : 0;
	return t ? (uint64_t *)(t + KEYS_GAP) : NULL;
}

/* KEY's home bucket among NB */
static uint32_t key_home(int32_t key, uint32_t nb)
{
	return (uint32_t)(((uint64_t)key_hash((uint32_t)key >> KEY_SLOTS_SHIFT) * nb) >> 32);
}

/* the slot KEY's probe visits I-th (I < NB * KEY_SLOTS), from bucket HOME */
static uint32_t key_probe(int32_t key, uint32_t home, uint32_t nb, uint32_t i)
{
	uint32_t b = home + i / KEY_SLOTS;

	if (b >= nb)
		b -= nb;
	return b * KEY_SLOTS + (((uint32_t)key + i) & (KEY_SLOTS - 1));
}

/* index of the object with KEY, or -1: key_probe's order, as two loops
 * (the lookup of every *get: a bucket's slots cost a few instructions each).
 * At most one round of the buckets the checked capacity holds; each slot
 * read once.  The index is the arena's: the callers check it against the
 * id table (key_obj) before they use it. */
static int key_find(struct ns *ns, struct ipc_ids *ids, int32_t key)
{
	uint32_t cap, nb, b, n, j;
	uint64_t *t = keys_table(ns, ids, &cap);

	/* empty slots and tombstones hold key 0, IPC_PRIVATE, never looked up */
	if (!t || key == IPC_PRIVATE)
		return -1;
	nb = cap / KEY_SLOTS;
	for (b = key_home(key, nb), n = 0; n < nb; n++, b = b + 1 < nb ? b + 1 : 0) {
		const uint64_t *line = t + (size_t)b * KEY_SLOTS;

		for (j = 0; j < KEY_SLOTS; j++) {
			uint64_t e = ((const volatile uint64_t *)line)[((uint32_t)key + j) % KEY_SLOTS];

			if ((int32_t)(e >> 32) == key)
				return (int)(uint32_t)e - 1;
			if (e == KEY_EMPTY)
				return -1;
		}
	}
	return -1;
}

/* Put VAL in a free slot of T (CAP slots); -ENOMEM when there is none:
 * the table and its counts come from the arena, and a forged one may be
 * full, so the probe stops after one round. */
static int key_put(uint64_t *t, uint32_t cap, int32_t key, uint64_t val,
		   struct ns *ns, bool journal)
{
	uint32_t nb = cap / KEY_SLOTS, home = key_home(key, nb), i, s;

	for (i = 0; i < cap; i++) {
		s = key_probe(key, home, nb, i);
		if (t[s] == KEY_EMPTY || t[s] == KEY_TOMB) {
			if (journal)
				J_SET(ns, t[s], val);
			else
				t[s] = val;
			return 0;
		}
	}
	ns_corrupt(ns, "key table full");
	return -ENOMEM;
}

/* Rebuild the table, without tombstones, with room for the keys in use plus
 * one at a load of at most 1/3; key_insert grows it past 2/5.  Neighbouring
 * keys fill whole buckets, and a group whose home bucket is taken is pushed
 * to the next: at loads up to 2/5 a loop over neighbours misses the cache
 * about 0.2 times a key (1/8 is the least), past 1/2 up to once a key
 * (simulated, 10,000 to 1,500,000 keys).  At least KEYS_MIN_BUCKETS (1 KiB):
 * a namespace whose few keys come and go (create, IPC_RMID) then rebuilds
 * only every few dozen creations, not every other one. */
#define KEYS_MIN_BUCKETS 15u
static int key_table_grow(struct ns *ns, struct ipc_ids *ids)
{
	uint32_t old_cap, nb = KEYS_MIN_BUCKETS, cap, i;
	uint64_t *old = keys_table(ns, ids, &old_cap);
	/* at most one key per id: a larger count is a forged one */
	uint64_t used = ids->keys_used < (uint32_t)ns->ipcmni ? ids->keys_used : (uint64_t)ns->ipcmni;
	uoff_t noff;
	uint64_t *nt;

	while ((uint64_t)nb * KEY_SLOTS < (used + 1) * 3)
		nb = nb * 2 + 1;
	cap = nb * KEY_SLOTS;
	noff = arena_alloc(ns, KEYS_GAP + (uint64_t)cap * 8, POOL_GENERAL);
	if (!noff)
		return -ENOMEM;
	if (!keys_shape_ok(noff, cap)) {
		ns_corrupt(ns, "key table block not where a cache line starts");
		return -ENOMEM;
	}
	nt = ns_ptr(ns, noff + KEYS_GAP, (uint64_t)cap * 8);
	if (!nt)
		return -ENOMEM;
	/* the new table is unreachable until the switch below commits */
	for (i = 0; old && i < old_cap; i++) {
		uint64_t e = old[i];

		if (e != KEY_EMPTY && e != KEY_TOMB &&
		    key_put(nt, cap, (int32_t)(e >> 32), e, ns, false))
			return -ENOMEM;  /* more keys than keys_used said */
	}
	arena_free(ns, ids->keys);
	J_SET(ns, ids->keys, noff);
	J_SET(ns, ids->keys_cap, cap);
	J_SET(ns, ids->keys_tombs, 0u);
	return 0;
}

static int key_insert(struct ns *ns, struct ipc_ids *ids, int32_t key, int idx)
{
	uint32_t cap;
	uint64_t *t;
	int r;

	if (((uint64_t)ids->keys_used + ids->keys_tombs + 1) * 5 > (uint64_t)ids->keys_cap * 2) {
		r = key_table_grow(ns, ids);
		if (r)
			return r;
	}
	t = keys_table(ns, ids, &cap);
	if (!t)
		return -ENOMEM;
	r = key_put(t, cap, key, ((uint64_t)(uint32_t)key << 32) | (uint32_t)(idx + 1), ns, true);
	if (r)
		return r;
	J_SET(ns, ids->keys_used, ids->keys_used + 1);
	return 0;
}

static void key_remove(struct ns *ns, struct ipc_ids *ids, int32_t key, int idx)
{
	uint32_t cap, nb, home, i, s;
	uint64_t *t = keys_table(ns, ids, &cap);
	uint64_t want = ((uint64_t)(uint32_t)key << 32) | (uint32_t)(idx + 1);

	if (!t)
		return;
	nb = cap / KEY_SLOTS;
	home = key_home(key, nb);
	for (i = 0; i < cap; i++) {
		s = key_probe(key, home, nb, i);
		if (t[s] == KEY_EMPTY)
			return;
		if (t[s] == want) {
			J_SET(ns, t[s], (uint64_t)KEY_TOMB);
			J_SET(ns, ids->keys_used, ids->keys_used - 1);
			J_SET(ns, ids->keys_tombs, ids->keys_tombs + 1);
			return;
		}
	}
}

/* The kernel's ipc_set_key_private: the key no longer finds P (ids lock
 * held, inside a journaled section). */
void ipc_set_key_private(struct ns *ns, int type, struct uperm *p)
{
	if (p->key != IPC_PRIVATE)
		key_remove(ns, ids_of(ns, type), p->key, p->id & (ns->ipcmni - 1));
	J_SET(ns, p->key, (int32_t)IPC_PRIVATE);
}

/* ---- the ids lock, and lock-free readers of what it protects ----
 *
 * Lock-free readers (key lookups, the semop fast path) must never act on
 * an uncommitted change: one whose writer may still die and be rolled
 * back.  So they read like a seqlock: the lock must be free, and its
 * release count unchanged, from before their reads until after them.
 */

int ids_lock(struct ns *ns, int type)
{
	return ulock_acquire(ns, &ids_of(ns, type)->lock);
}

void ids_unlock(struct ns *ns, int type)
{
	struct ipc_ids *ids = ids_of(ns, type);

	atomic_fetch_add_explicit(&ids->wseq, 1, memory_order_release);
	ulock_release(ns, &ids->lock);
}

/* ---- adding and removing ids (ids lock held) ---- */

static int seq_max(struct ns *ns)
{
	return INT32_MAX >> ns->shift;
}

/* set when an allocation attempt used next_id: the kernel resets it to -1
 * even if the attempt then fails, so the reset survives a rollback */
static __thread bool next_id_consumed;

static int alloc_idx(struct ns *ns, struct ipc_ids *ids, uint32_t *seq)
{
	int next_id = ids->next_id;
	int64_t max, last = ids->last_idx, min_cycle;
	int idx;

	if (next_id >= 0) {
		J_SET(ns, ids->next_id, -1);
		next_id_consumed = true;
		*seq = (uint32_t)next_id >> ns->shift;
		return find_free(ns, ids, next_id & (ns->ipcmni - 1), ns->ipcmni);
	}
	/* 64-bit: in_use and last_idx come from the arena, any value */
	min_cycle = ns->shift == IPCMNI_EXT_SHIFT ? IPC_MIN_CYCLE_EXT : IPC_MIN_CYCLE;
	max = (int64_t)ids->in_use * 3 / 2;
	if (max < min_cycle)
		max = min_cycle;
	if (max > ns->ipcmni)
		max = ns->ipcmni;
	if (last < -1 || last >= ns->ipcmni)
		last = -1;
	idx = find_free(ns, ids, (int)last + 1, (int)max);
	if (idx < 0 && last + 1 > 0)
		idx = find_free(ns, ids, 0, (int)max);
	if (idx < 0)
		return -1;
	if (idx <= last) {
		uint32_t s = ids->seq + 1;

		if (s >= (uint32_t)seq_max(ns))
			s = 0;
		J_SET(ns, ids->seq, s);
	}
	J_SET(ns, ids->last_idx, idx);
	*seq = ids->seq;
	if (*seq >= (uint32_t)seq_max(ns))
		*seq = 0;         /* a forged seq: ids stay positive */
	return idx;
}

/*
 * ipc_addid_at_commit: give P (fully built, not yet visible, its id -1) an
 * id and make it visible.  The caller holds the ids lock inside a journaled
 * section.  P's id is stored (with its key, the same 8-byte word) only when
 * that section commits, and P keeps id -1 until then; the caller uses the
 * id returned.  Lookups by id take no ids lock, so they can find P in its
 * table slot before the commit; with its id not there yet they pass it by
 * (EINVAL, as before the kernel's ipc_addid), and so does a *_STAT by index
 * (ipc_obtain_for_stat).  Nobody can then act on an object whose creation a
 * crash may still roll back: an attach takes the segment lock alone, a
 * semop the array's (or one semaphore's) lock, a msgsnd the queue's, and
 * what they did there would be lost with the object (and the blocks they
 * allocated with it).
 */
int ipc_addid_at_commit(struct ns *ns, int type, struct uperm *p, int limit)
{
	struct ipc_ids *ids = ids_of(ns, type);
	const struct ucred_cache *c = cur_cred();
	uint64_t *bm = bitmap(ns, ids);
	_Atomic uoff_t *slot;
	uint32_t seq;
	int32_t id;
	int idx, r;

	if (limit > ns->ipcmni)
		limit = ns->ipcmni;
	if (ids->in_use >= limit)
		return -ENOSPC;
	idx = alloc_idx(ns, ids, &seq);
	if (idx < 0)
		return -ENOSPC;
	r = populate_entry(ns, ids, idx);
	if (r)
		return r;
	slot = ipc_entry_slot(ns, type_of(ns, ids), idx);
	if (!slot || !bm)
		return -ENOMEM;
	if (p->key != IPC_PRIVATE) {
		r = key_insert(ns, ids, p->key, idx);
		if (r)
			return r;
	}
	/* the object is not visible yet: plain stores, no journal */
	p->uid = p->cuid = (uint32_t)c->euid;
	p->gid = p->cgid = (uint32_t)c->egid;
	p->type = (uint32_t)type;
	id = (int32_t)((seq << ns->shift) + (uint32_t)idx);
	J_SET(ns, bm[idx / 64], bm[idx / 64] | (1ULL << (idx % 64)));
	J_SET(ns, ids->in_use, ids->in_use + 1);
	if (idx > ids->max_idx)
		J_SET(ns, ids->max_idx, idx);
	/* publish last: lock-free readers may find it from here on */
	J_SET(ns, *(uoff_t *)slot, ns_off(ns, p));
	{
		union {
			struct { int32_t key, id; } f;
			uint64_t w;
		} kid = { .f = { p->key, id } };

		_Static_assert(offsetof(struct uperm, key) == 0 && offsetof(struct uperm, id) == 4,
			       "uperm's key and id must be its first 8-byte word");
		/* (objects are 8-aligned: ipc_obj_at) */
		j_store_at_commit(ns, (uint64_t *)(void *)p, kid.w);
	}
	return id;
}

/* ipc_rmid: make P invisible (ids lock held, inside a journaled section). */
void ipc_rmid(struct ns *ns, int type, struct uperm *p)
{
	struct ipc_ids *ids = ids_of(ns, type);
	int idx = p->id & (ns->ipcmni - 1);
	_Atomic uoff_t *slot = ipc_entry_slot(ns, type_of(ns, ids), idx);
	uint64_t *bm = bitmap(ns, ids);

	if (!slot || !bm || atomic_load(slot) != ns_off(ns, p))
		return;
	J_SET(ns, *(uoff_t *)slot, (uoff_t)0);
	J_SET(ns, bm[idx / 64], bm[idx / 64] & ~(1ULL << (idx % 64)));
	if (p->key != IPC_PRIVATE)
		key_remove(ns, ids, p->key, idx);
	J_SET(ns, ids->in_use, ids->in_use - 1);
	if (idx == ids->max_idx) {
		int i = idx - 1;

		while (i >= 0 && !(bm[i / 64] & (1ULL << (i % 64))))
			i--;
		J_SET(ns, ids->max_idx, i);
	}
	J_SET(ns, p->deleted, 1u);
}

/*
 * Opening an existing key without the lock: the table may be resized or an
 * object removed meanwhile, but whatever is found is checked (type, key, not
 * deleted) before it is used, so the answer is one the locked path could
 * have given.  Returns LOCKED_PATH when the locked path must decide.
 */
#define LOCKED_PATH INT32_MIN

/* the object at index IDX that key_find gave (an arena value): one of the
 * id table's, else none (ipc_obtain alone would take it modulo the table) */
static inline struct uperm *key_obj(struct ns *ns, int type, int idx)
{
	return (uint32_t)idx < (uint32_t)ns->ipcmni ? ipc_obtain(ns, type, idx) : NULL;
}

static int ipcget_lockless(struct ns *ns, int type, key_t key, int flg, long arg,
			   const struct ipc_ops *ops)
{
	struct ipc_ids *ids = ids_of(ns, type);
	uint64_t seq;
	int idx, r;
	struct uperm *p;

	if (!ids_read_begin(ns, type, &seq))
		return LOCKED_PATH;
	idx = key_find(ns, ids, key);
	p = key_obj(ns, type, idx);
	/* a held lock may be a dead holder's, whose half-done IPC_SET or
	 * IPC_RMID only the locked path rolls back (ipc_settle) */
	if (!p || p->key != key || atomic_load_explicit(&p->deleted, memory_order_acquire) ||
	    ((flg & IPC_CREAT) && (flg & IPC_EXCL)) || !ulock_is_free(ipc_obj_lock(p)))
		return LOCKED_PATH;
	r = ops->more_checks ? ops->more_checks(ns, p, arg) : 0;
	if (!r)
		r = ipcperms(p, flg) ? -EACCES : p->id;
	/* still the same live, committed object? then the answer stands */
	if (atomic_load_explicit(&p->deleted, memory_order_acquire) || p->key != key ||
	    !ids_read_end(ns, type, seq))
		return LOCKED_PATH;
	return r;
}

/*
 * Make what the ids lock's readers read of P (its removal mark, key and
 * permissions) committed state before they trust it.  IPC_RMID and IPC_SET
 * change it under the ids lock and P's own lock, journaled in P's section,
 * which commits after the ids section: a holder killed in between leaves
 * its changes to be rolled back by P's next locker, and holding the ids
 * lock alone does not make us that locker.  So if P's lock is not free,
 * take and release it (the usual order, ids lock then object lock): a dead
 * holder's half-done section is rolled back, a live holder (which cannot be
 * changing these fields: that takes the ids lock) is waited for.
 */
static int ipc_settle(struct ns *ns, struct uperm *p)
{
	int r;

	if (likely(ulock_is_free(ipc_obj_lock(p))))
		return 0;
	r = ulock_acquire(ns, ipc_obj_lock(p));
	if (r == 0)
		ulock_release(ns, ipc_obj_lock(p));
	return r;
}

bool ipc_removed(struct ns *ns, struct uperm *p)
{
	ipc_settle(ns, p);
	return atomic_load(&p->deleted) != 0;
}

/* The generic *get: the kernel's ipcget() with ipcget_new/ipcget_public. */
int ipcget(struct ns *ns, int type, key_t key, int flg, long arg, const struct ipc_ops *ops)
{
	struct ipc_ids *ids = ids_of(ns, type);
	struct uperm *p;
	int r, idx;

	if (key != IPC_PRIVATE) {
		r = ipcget_lockless(ns, type, key, flg, arg, ops);
		if (r != LOCKED_PATH)
			return r;
	}
	r = ids_lock(ns, type);
	if (r)
		return r;
	next_id_consumed = false;
	if (key == IPC_PRIVATE) {
		r = ops->getnew(ns, key, flg, arg);
		goto out;
	}
	idx = key_find(ns, ids, key);
	p = key_obj(ns, type, idx);
	if (p && (p->key != key || ipc_removed(ns, p)))
		p = NULL;
	if (!p) {
		r = (flg & IPC_CREAT) ? ops->getnew(ns, key, flg, arg) : -ENOENT;
	} else if ((flg & IPC_CREAT) && (flg & IPC_EXCL)) {
		r = -EEXIST;
	} else {
		r = ops->more_checks ? ops->more_checks(ns, p, arg) : 0;
		if (!r)
			r = ipcperms(p, flg) ? -EACCES : p->id;
	}
out:
	if (r < 0) {
		j_abort(ns);
		if (next_id_consumed)
			J_SET(ns, ids->next_id, -1);
	}
	ids_unlock(ns, type);
	return r;
}

/*
 * Check the id tables: the bitmap and the entries agree, every entry is an
 * object of its type with the id of its index, in_use and max_idx are
 * right, every key in the key table leads to a live object with that key.
 * Returns the number of problems, described in REPORT (appended at *used).
 */
int ipc_ids_check(struct ns *ns, int type, char *report, size_t len, size_t *used)
{
	static const char *const names[] = { "sem", "msg", "shm" };
	struct ipc_ids *ids = ids_of(ns, type);
	uint64_t *bm = bitmap(ns, ids);
	uint32_t keys_cap;
	uint64_t *keys = keys_table(ns, ids, &keys_cap);
	int bad = 0, count = 0, max = -1, idx;
	uint32_t i, nkeys = 0;

#define PROBLEM(...) do {                                                           \
		bad++;                                                              \
		if (report && *used < len)                                          \
			*used += (size_t)snprintf(report + *used, len - *used, __VA_ARGS__); \
	} while (0)

	if (!bm)
		return 1;
	for (idx = 0; idx < ns->ipcmni; idx++) {
		bool set = (bm[idx / 64] >> (idx % 64)) & 1;
		_Atomic uoff_t *slot = set ? ipc_entry_slot(ns, type_of(ns, ids), idx) : NULL;
		uoff_t off = slot ? atomic_load(slot) : 0;
		struct uperm *p;

		if (!set)
			continue;
		count++;
		max = idx;
		p = off ? ipc_obj_at(ns, off, type) : NULL;
		/* check committed state only (what a killed holder left half
		 * done is rolled back) */
		if (p && ns_ptr(ns, off, sizeof(*p) + sizeof(struct ulock)))
			ipc_settle(ns, p);
		if (!p)
			PROBLEM("%s id index %d is marked used but holds no object\n", names[type], idx);
		else if ((p->id & (ns->ipcmni - 1)) != idx || atomic_load(&p->deleted))
			PROBLEM("%s id index %d holds object %d%s\n", names[type], idx, p->id,
				atomic_load(&p->deleted) ? " (removed)" : "");
	}
	if (count != ids->in_use)
		PROBLEM("%s: %d ids in use, the count says %d\n", names[type], count, ids->in_use);
	if (count && max != ids->max_idx)
		PROBLEM("%s: highest index %d, max_idx says %d\n", names[type], max, ids->max_idx);
	if (ids->keys && !keys_shape_ok(ids->keys, ids->keys_cap))
		PROBLEM("%s: key table of %u slots at %llu, not a shape it is made in\n", names[type],
			ids->keys_cap, (unsigned long long)ids->keys);
	for (i = 0; keys && i < keys_cap; i++) {
		struct uperm *p;
		int32_t key;

		if (keys[i] == KEY_EMPTY || keys[i] == KEY_TOMB)
			continue;
		nkeys++;
		key = (int32_t)(keys[i] >> 32);
		idx = (int)(uint32_t)keys[i] - 1;
		p = idx >= 0 && idx < ns->ipcmni ? ipc_obtain(ns, type, idx) : NULL;
		if (!p || p->key != key || atomic_load(&p->deleted))
			PROBLEM("%s key 0x%08x points to index %d, which has no such object\n",
				names[type], (unsigned)key, idx);
		else if (key_find(ns, ids, key) != idx)
			PROBLEM("%s key 0x%08x (index %d) is not where its lookup looks\n",
				names[type], (unsigned)key, idx);
	}
	if (nkeys != ids->keys_used)
		PROBLEM("%s: %u keys in the table, the count says %u\n", names[type], nkeys,
			ids->keys_used);
#undef PROBLEM
	return bad;
}
