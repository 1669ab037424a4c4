/*
 * aionr.c - fs.aio-nr and fs.aio-max-nr of a namespace: the events of the
 * native AIO contexts its processes hold (what io_setup asked for, as the
 * kernel counts them), against the namespace's limit.
 *
 * The kernel keeps one counter for the whole system.  Here each process
 * keeps its share in its own slot (uproc.aio_nr) and fs.aio-nr is the sum
 * of the shares of the processes that are alive: a process SIGKILLed with
 * contexts stops counting the moment it is dead (proc_is_dead), as the
 * kernel frees its contexts then, with no one having to undo anything; its
 * exit work (its own exit, exec, or a survivor's reap) clears the share
 * before the slot is reused.  Shares change under the namespace's ns_lock,
 * each by one 8-byte store: a holder killed between the store and the
 * release leaves the old or the new share of a process that is dead.
 * The limit is a field of the namespace's limits (set by ipc/namespace.c's
 * sysctl code, default AIO_MAX_NR_DEF).
 */
#include "core/core.h"

static uint64_t share(struct uproc *p)
{
	return __atomic_load_n(&p->aio_nr, __ATOMIC_RELAXED);
}

static void set_share(struct uproc *p, uint64_t v)
{
	__atomic_store_n(&p->aio_nr, v, __ATOMIC_RELAXED);
}

/* the shares of the live processes of NS (ns_lock held), saturated */
static uint64_t live_sum(struct ns *ns)
{
	uint32_t top = atomic_load(&ns->hdr->procs_hwm);
	uint64_t sum = 0, n;

	for (uint32_t i = 0; i < top && i < MAX_PROCS; i++) {
		struct uproc *p = proc_at(ns, i);

		if (!p || SLOT_STATE(atomic_load(&p->state)) != SLOT_LIVE)
			continue;
		n = share(p);
		if (n && !proc_is_dead(ns, p))
			sum = sum + n < sum ? UINT64_MAX : sum + n;
	}
	return sum;
}

uint64_t ns_aio_max_nr(struct ns *ns)
{
	return __atomic_load_n(&ns->hdr->lim.aio_max_nr, __ATOMIC_RELAXED);
}

int ns_aio_nr(struct ns *ns, uint64_t *out)
{
	int r = ulock_acquire(ns, &ns->hdr->ns_lock);

	if (r)
		return r;
	*out = live_sum(ns);
	ulock_release(ns, &ns->hdr->ns_lock);
	return 0;
}

int ns_aio_reserve(struct ns *ns, uint64_t n)
{
	struct uproc *me = cur_proc(ns);
	uint64_t sum;
	int r;

	if (!me)
		return -ENOMEM;
	r = ulock_acquire(ns, &ns->hdr->ns_lock);
	if (r)
		return r;
	sum = live_sum(ns);
	/* the kernel's test: over the limit, or wrapping */
	if (sum + n > ns_aio_max_nr(ns) || sum + n < sum)
		r = -EAGAIN;
	else
		set_share(me, share(me) + n);
	ulock_release(ns, &ns->hdr->ns_lock);
	return r;
}

void ns_aio_release(struct ns *ns, uint64_t n)
{
	struct uproc *me = cur_proc(ns);

	if (!me || ulock_acquire(ns, &ns->hdr->ns_lock))
		return;
	set_share(me, share(me) > n ? share(me) - n : 0);
	ulock_release(ns, &ns->hdr->ns_lock);
}

/* ---- the share goes with the contexts: exit, exec ---- */

static void clear_share(struct ns *ns, struct uproc *p)
{
	if (!p || !share(p))
		return;
	if (ulock_acquire(ns, &ns->hdr->ns_lock)) {
		set_share(p, 0);     /* the lock is broken: the share goes all the same */
		return;
	}
	set_share(p, 0);
	ulock_release(ns, &ns->hdr->ns_lock);
}

/* a process's exit (or a survivor's reap of it, or its unshare): its
 * contexts are gone, as the kernel's exit_aio */
static void aionr_proc_exit(struct ns *ns, struct uproc *p)
{
	clear_share(ns, p);
}

/* exec: the kernel drops the old image's contexts with its memory */
static void aionr_exec(uint32_t proc_idx)
{
	struct ns *ns = ns_get_existing();

	if (ns)
		clear_share(ns, proc_at(ns, proc_idx));
}

CORE_HOOKS(aionr_hooks) = {
	.proc_exit = aionr_proc_exit,
	.exec_note = aionr_exec,
};
