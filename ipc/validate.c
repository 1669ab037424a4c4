/*
 * validate.c - what this process remembers of the objects it was told
 * about, so that a value another member rewrites in the arena cannot
 * change them under it.
 *
 * The kernel never changes a semaphore array's count or a segment's size
 * while the object lives, and programs size their buffers and mappings by
 * them: GETALL writes nsems values into the caller's buffer, SETALL reads
 * nsems values from it, and shmat(SHM_REMAP) maps the segment's size over
 * whatever lies at the address.  In uipc those sizes live in the arena,
 * where any member of a shared namespace can rewrite them.  So a process
 * keeps, for each object whose size it learned (it created the object,
 * asked IPC_STAT, or used the size once), that size here, in its private
 * memory; a later call that finds another size in the arena fails with
 * EIDRM, as if the object it knew were gone, instead of trusting it.
 *
 * What is left to a member who rewrites a size before a process first
 * looks at the object (a program that sizes a buffer from a constant
 * rather than from IPC_STAT): the size is still bounded by the object's
 * block and the namespace's limits (see sem.c's sem_count, shm.c's
 * shmat), so every access stays inside the arena.
 *
 * Entries are dropped when this process removes the object or finds its id
 * gone.  The table is process-wide (objects are namespace-wide), guarded by
 * a spin lock taken with the program's signal handlers held off; a fork child
 * inherits it (it was told the same), an exec starts empty, and leaving the
 * namespace (unshare) empties it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/ipc.h"

struct seen {
	int32_t id;                /* 0 with type 0: a free slot */
	uint32_t type;             /* IPC_*_IDS + 1 */
	uint64_t size;
};

#define SEEN_MAX (1u << 20)        /* past this many objects, start again */

/*
 * The table's state, in .data rather than .bss: the library's .data page is
 * written by a process's first call already (the namespace it is in), a
 * .bss page of its own would be faulted in by the first create (2-3 us
 * here, a third of it: issue 15).
 */
#define FIRST_CALL_DATA __attribute__((section(".data")))

/* a spin lock (held for a hash probe, with the program's handlers held
 * off): cheaper than a mutex for IPC_RMID and creation, which take it */
static atomic_flag seen_busy FIRST_CALL_DATA = ATOMIC_FLAG_INIT;
static struct seen *seen_tab FIRST_CALL_DATA;
static uint32_t seen_cap FIRST_CALL_DATA, seen_n FIRST_CALL_DATA;
static const struct ns *seen_ns FIRST_CALL_DATA;   /* the namespace the ids are of */

static uint32_t seen_hash(int type, int32_t id)
{
	uint32_t x = (uint32_t)id * 0x9e3779b1u ^ (uint32_t)type * 0x85ebca6bu;

	return x ^ (x >> 15);
}

/* the slot of (TYPE, ID) or the free slot where it would go */
static struct seen *seen_slot(int type, int32_t id)
{
	uint32_t mask = seen_cap - 1, i = seen_hash(type, id) & mask;

	for (uint32_t n = 0; n < seen_cap; n++, i = (i + 1) & mask) {
		struct seen *e = &seen_tab[i];

		if (!e->type || (e->type == (uint32_t)type + 1 && e->id == id))
			return e;
	}
	return NULL;
}

static void seen_clear(void)
{
	free(seen_tab);
	seen_tab = NULL;
	seen_cap = seen_n = 0;
}

/* room for one more entry (load under 1/2); false: out of memory */
static bool seen_grow(void)
{
	struct seen *old = seen_tab;
	uint32_t old_cap = seen_cap, cap = seen_cap ? seen_cap * 2 : 64;

	if ((seen_n + 1) * 2 <= seen_cap)
		return true;
	if (seen_n >= SEEN_MAX) {
		seen_clear();
		cap = 64;
		old = NULL;
		old_cap = 0;
	}
	seen_tab = calloc(cap, sizeof(*seen_tab));
	if (!seen_tab) {
		seen_tab = old;
		return false;
	}
	seen_cap = cap;
	seen_n = 0;
	for (uint32_t i = 0; i < old_cap; i++) {
		if (old[i].type) {
			*seen_slot((int)old[i].type - 1, old[i].id) = old[i];
			seen_n++;
		}
	}
	free(old);
	return true;
}

static void seen_spin_lock(void)
{
	while (atomic_flag_test_and_set_explicit(&seen_busy, memory_order_acquire))
		cpu_relax();
}

static void seen_spin_unlock(void)
{
	atomic_flag_clear_explicit(&seen_busy, memory_order_release);
}

static void seen_lock(const struct ns *ns)
{
	uipc_crit_enter();
	seen_spin_lock();
	if (seen_ns != ns) {
		/* ids of another namespace mean other objects */
		seen_clear();
		seen_ns = ns;
	}
}

static void seen_unlock(void)
{
	seen_spin_unlock();
	uipc_crit_exit();
}

/*
 * The size of object ID (of TYPE) as this process knows it: SIZE, read
 * from the arena now, is remembered if the process knew none.  0, or
 * -EIDRM if the process was told another size (the arena was rewritten).
 */
int ipc_seen_size(struct ns *ns, int type, int id, uint64_t size)
{
	struct seen *e;
	int r = 0;

	seen_lock(ns);
	e = seen_cap ? seen_slot(type, id) : NULL;
	if (e && e->type) {
		if (e->size != size)
			r = -EIDRM;
	} else if (seen_grow()) {
		e = seen_slot(type, id);
		if (e) {
			*e = (struct seen){ id, (uint32_t)type + 1, size };
			seen_n++;
		}
	}
	seen_unlock();
	if (r)
		ns_corrupt(ns, "an object's size changed under a process that knew it");
	return r;
}

/* Object ID of TYPE is gone (removed, or its id no longer resolves). */
void ipc_seen_forget(struct ns *ns, int type, int id)
{
	struct seen *e;

	seen_lock(ns);
	e = seen_cap ? seen_slot(type, id) : NULL;
	if (e && e->type) {
		/* backward-shift deletion keeps every probe chain whole */
		uint32_t mask = seen_cap - 1, i = (uint32_t)(e - seen_tab), j = i;

		for (;;) {
			j = (j + 1) & mask;
			if (!seen_tab[j].type)
				break;
			uint32_t h = seen_hash((int)seen_tab[j].type - 1, seen_tab[j].id) & mask;

			/* can entry j move to the hole at i? only if its home
			 * slot h is not in the cyclic range (i, j] */
			if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
				seen_tab[i] = seen_tab[j];
				i = j;
			}
		}
		seen_tab[i] = (struct seen){ 0, 0, 0 };
		seen_n--;
	}
	seen_unlock();
}

/* this process left the namespace (unshare): its ids mean nothing now */
void ipc_seen_forget_all(void)
{
	uipc_crit_enter();
	seen_spin_lock();
	seen_clear();
	seen_ns = NULL;
	seen_spin_unlock();
	uipc_crit_exit();
}

/* ---- objects as a whole (ipc_obj_fits in ipc.h) ---- */

__thread struct fits_memo ipc_fits_memo[4];

bool ipc_obj_fits_slow(struct ns *ns, const void *p, uint64_t len, struct fits_memo *m)
{
	if (!arena_obj_fits(ns, ns_off(ns, p), len))
		return false;
	m->p = p;
	m->len = len;
	return true;
}

/*
 * A fork child must not inherit the lock held by another thread: fork
 * takes it and gives it back.  It is taken last in shm.c's prepare handler
 * (ipc_seen_fork_prepare), after the count of the child's attachments,
 * which may reap a dead process and so forget sizes (taken before it, as
 * by a prepare handler of this file's, the forking thread spun on it for
 * ever: tests/unit-chaos-mixed.t); core/proc.c's prepare handler, which
 * runs after shm.c's, makes no use of it.  In the parent it is given back
 * by shm.c's parent handler (ipc_seen_fork_parent); in the child by the
 * ipc layer's fork_child hook (ipc_seen_fork_child, namespace.c), before
 * shm_fork_child: glibc runs the child handlers in registration order,
 * core/proc.c's (which runs the hooks, and whose work may reap a dead
 * process) before shm.c's, which would be too late (the child spun on the
 * lock forever, holding the shm ids lock: tests/unit-chaos-mixed.t).
 */
void ipc_seen_fork_prepare(void)
{
	seen_spin_lock();
}

void ipc_seen_fork_parent(void)
{
	seen_spin_unlock();
}

void ipc_seen_fork_child(void)
{
	seen_spin_unlock();
}
