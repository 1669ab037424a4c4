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
 *
 * A process that leaves a namespace (unshare, setns) with contexts made
 * there: the kernel's fs.aio-nr is the system's, and leaving an IPC
 * namespace changes nothing of it; here the namespace where the contexts
 * were made goes on counting them.  The process's slot there stays
 * (free_own_slot asks ns_aio_keeps_slot), holderless and live while the
 * process lives, with the share of those contexts; each io_destroy gives
 * its events back there (ns_aio_release_departed, through a mapping of
 * the namespace that aio/ctx.c keeps), the slot going free with the last;
 * the process's death ends the count (the slot is a dead process's, reaped
 * as any).  An exec gives the whole share back first (the kernel drops
 * the contexts with the old image).
 */
#include <sys/stat.h>

#include "core/core.h"

static uint64_t share(struct uproc *p)
{
	return __atomic_load_n(&p->aio_nr, __ATOMIC_RELAXED);
}

static void set_share(struct uproc *p, uint64_t v)
{
	__atomic_store_n(&p->aio_nr, v, __ATOMIC_RELAXED);
}

static void add_share(struct uproc *p, uint64_t n)
{
	__atomic_add_fetch(&p->aio_nr, n, __ATOMIC_RELAXED);
}

/* N less, saturating at 0 (a departed slot's share is given back without
 * the lock, by its own process only: RMW, never load and store).  The
 * share left. */
static uint64_t sub_share(struct uproc *p, uint64_t n)
{
	uint64_t cur = share(p), next;

	do
		next = cur > n ? cur - n : 0;
	while (!__atomic_compare_exchange_n(&p->aio_nr, &cur, next, false, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED));
	return next;
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
		add_share(me, n);
	ulock_release(ns, &ns->hdr->ns_lock);
	return r;
}

void ns_aio_release(struct ns *ns, uint64_t n)
{
	struct uproc *me = cur_proc(ns);

	if (!me || ulock_acquire(ns, &ns->hdr->ns_lock))
		return;
	sub_share(me, n);
	ulock_release(ns, &ns->hdr->ns_lock);
}

/* ---- contexts made before the process left the namespace ---- */

/* the namespace being left with a share, and the slot it keeps (between
 * ns_aio_depart and the end of proc_leave_ns: one thread unshares) */
static struct ns *departing;
static uint32_t departing_idx = UINT32_MAX;

/* slots this process image left with a share, to tell a return (setns
 * back: the slot found again keeps its share) from an exec */
#define DEPARTED_MAX 16
static struct { dev_t dev; ino_t ino; uint32_t idx; } departed[DEPARTED_MAX];
static int n_departed;
static pthread_mutex_t departed_lock = PTHREAD_MUTEX_INITIALIZER;

static uint32_t proc_index(struct ns *ns, struct uproc *p)
{
	return (uint32_t)(((char *)p - (ns->base + ns->lay.procs)) / sizeof(struct uproc));
}

uint32_t ns_aio_depart(struct ns *ns, uint64_t *starttime)
{
	struct uproc *me = cur_proc(ns);
	uint32_t idx;

	if (!me || !share(me))
		return UINT32_MAX;
	idx = proc_index(ns, me);
	*starttime = me->starttime;
	departing = ns;
	departing_idx = idx;
	crit_mutex_lock(&departed_lock);
	if (n_departed < DEPARTED_MAX) {
		departed[n_departed].dev = ns->dev;
		departed[n_departed].ino = ns->ino;
		departed[n_departed++].idx = idx;
	}
	crit_mutex_unlock(&departed_lock);
	return idx;
}

bool ns_aio_keeps_slot(struct ns *ns, struct uproc *p)
{
	bool keep = departing == ns && proc_index(ns, p) == departing_idx && share(p) > 0;

	if (departing == ns) {
		departing = NULL;
		departing_idx = UINT32_MAX;
	}
	return keep;
}

void ns_aio_release_departed(struct ns *held, uint32_t idx, uint64_t starttime, uint64_t n,
			     bool may_free)
{
	struct uproc *p = proc_at(held, idx);
	pid_t pid = cur_pid();
	uint64_t w;

	/* reaped (we died? then we are not here) or taken since: not ours */
	if (!p || p->pid != pid || p->starttime != starttime)
		return;
	w = atomic_load(&p->state);
	if (w != SLOT_WORD(pid, SLOT_LIVE))
		return;
	if (sub_share(p, n) || !may_free || atomic_load(&p->holder))
		return;
	/* the last of them: the slot goes (unless we came back meanwhile:
	 * a holder of ours, checked above) */
	atomic_compare_exchange_strong(&p->state, &w, SLOT_WORD(0, SLOT_FREE));
}

void ns_aio_readd_departed(struct ns *held, uint32_t idx, uint64_t starttime, uint64_t n)
{
	struct uproc *p = proc_at(held, idx);

	if (p && p->pid == cur_pid() && p->starttime == starttime &&
	    atomic_load(&p->state) == SLOT_WORD(cur_pid(), SLOT_LIVE))
		add_share(p, n);
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

/* a process's exit (or a survivor's reap of it): its contexts are gone,
 * as the kernel's exit_aio; at its unshare, the slot it keeps for the
 * contexts it made there keeps their share */
static void aionr_proc_exit(struct ns *ns, struct uproc *p)
{
	if (departing == ns && proc_index(ns, p) == departing_idx)
		return;
	clear_share(ns, p);
}

/* our slot, found again at registration: after an exec (the kernel drops
 * the old image's contexts with its memory), or after a return into a
 * namespace this image left with a share (setns back: those contexts
 * still count there) */
static void aionr_exec(uint32_t proc_idx)
{
	struct ns *ns = ns_get_existing();
	bool back = false;

	if (!ns)
		return;
	crit_mutex_lock(&departed_lock);
	for (int i = 0; i < n_departed; i++)
		if (departed[i].dev == ns->dev && departed[i].ino == ns->ino &&
		    departed[i].idx == proc_idx) {
			departed[i] = departed[--n_departed];
			back = true;
			break;
		}
	crit_mutex_unlock(&departed_lock);
	if (!back)
		clear_share(ns, proc_at(ns, proc_idx));
}

/* a fork child has no context: nothing of the parent's departures */
static void aionr_fork_child(void)
{
	pthread_mutex_init(&departed_lock, NULL);
	n_departed = 0;
	departing = NULL;
	departing_idx = UINT32_MAX;
}

CORE_HOOKS(aionr_hooks) = {
	.proc_exit = aionr_proc_exit,
	.exec_note = aionr_exec,
	.fork_child = aionr_fork_child,
};
