/*
 * ctx.c - AIO contexts: io_setup, io_destroy, the per-process context
 * table, fs.aio-nr accounting, fork.
 *
 * fs.aio-nr and fs.aio-max-nr are the namespace's (core/aionr.c): each
 * context's events are reserved there at io_setup and given back at
 * io_destroy; the process's exit (or death) and exec give back the rest.
 * A context made before the process left its namespace (unshare, setns)
 * goes on counting where it was made: the process keeps its slot there
 * and a mapping of that namespace (struct departed) until its contexts'
 * io_destroy gives their events back there.  UIPC_AIO_MAX_NR, when set,
 * is a further limit of the process's own.
 *
 * The table (seed 001, "convert the ioctx list to table lookup"): each
 * context takes a slot, and the slot's index is written in its ring's id
 * word.  A lookup reads the id at the context address (fault-safe: the id
 * is whatever the program passes), checks it is below the table's size and
 * that the slot holds a context whose ring is at that address: O(1)
 * whatever the number of contexts.  The table grows x4 and is replaced
 * whole (readers load the pointer once); an old table is kept, never
 * freed, so a reader still holding it reads valid memory, and so are
 * struct kioctx (reused through a free list, never freed): a lookup that
 * races with io_destroy takes a reference and then checks the slot again.
 */
#include <sys/mman.h>
#include <sys/sysinfo.h>

#include "aio/aio.h"

struct ctx_table {
	uint32_t nr;
	struct kioctx *_Atomic table[];
};

static struct ctx_table *_Atomic ioctx_table;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kioctx *free_ctxs;         /* under table_lock */
static unsigned long aio_nr;             /* the process's events, under table_lock */
/* bumped when the process leaves its namespace (unshare, setns): the
 * contexts made before are accounted in a struct departed since */
static unsigned acct_gen;

/* a namespace the process left with contexts made there (table_lock) */
struct departed {
	struct ns *held;             /* our own mapping of it */
	uint32_t idx;                /* our slot there */
	uint64_t starttime;          /* ours, as the slot says */
	uint64_t left;               /* events of our contexts still counted there */
	struct departed *next;
};
static struct departed *departures;

/* UIPC_AIO_MAX_NR: the process's own limit (none when unset) */
static unsigned long proc_max_nr(void)
{
	static unsigned long max;
	static int read;
	const char *e;

	if (!read) {
		e = getenv("UIPC_AIO_MAX_NR");
		max = e && *e ? strtoul(e, NULL, 0) : ULONG_MAX;
		read = 1;
	}
	return max;
}

/* the namespace's fs.aio-max-nr, and the process's own limit */
static unsigned long aio_max_nr(struct ns *ns)
{
	unsigned long ns_max = ns_aio_max_nr(ns);

	return ns_max < proc_max_nr() ? ns_max : proc_max_nr();
}

/* ---- the table (table_lock held for changes) ---- */

/* a free slot for CTX, growing the table x4 when full.  0 or -ENOMEM. */
static int table_insert(struct kioctx *ctx)
{
	struct ctx_table *t = atomic_load(&ioctx_table), *n;
	uint32_t i, nr = t ? t->nr : 0;

	for (i = 0; i < nr; i++)
		if (!atomic_load(&t->table[i]))
			goto found;
	n = calloc(1, sizeof(*n) + sizeof(n->table[0]) * (nr ? nr * 4 : 4));
	if (!n)
		return -ENOMEM;
	n->nr = nr ? nr * 4 : 4;
	for (i = 0; i < nr; i++)
		atomic_store(&n->table[i], atomic_load(&t->table[i]));
	atomic_store(&ioctx_table, n);   /* the old one stays for readers */
	t = n;
	i = nr;
found:
	ctx->id = i;
	atomic_store(&t->table[i], ctx);
	return 0;
}

struct kioctx *lookup_ioctx(uint64_t user_id)
{
	struct ctx_table *t = atomic_load_explicit(&ioctx_table, memory_order_acquire);
	struct aio_ring *ring = (struct aio_ring *)(uintptr_t)user_id;
	struct kioctx *ctx;
	uint32_t id;

	if (!t || uipc_copy_from_user(&id, &ring->id, sizeof(id)))
		return NULL;
	if (id >= t->nr)
		return NULL;
	ctx = atomic_load_explicit(&t->table[id], memory_order_acquire);
	if (!ctx || ctx->user_id != user_id)
		return NULL;
	atomic_fetch_add(&ctx->users, 1);
	/* io_destroy may have cleared the slot since: look again */
	if (atomic_load(&ctx->dead) || atomic_load(&t->table[id]) != ctx ||
	    ctx->user_id != user_id) {
		put_ioctx(ctx);
		return NULL;
	}
	return ctx;
}

void put_ioctx(struct kioctx *ctx)
{
	if (atomic_fetch_sub(&ctx->users, 1) == 1 && atomic_load(&ctx->dead))
		aio_wake(ctx);
}

/* ---- io_setup ---- */

/* the kernel's ring size for NR_EVENTS (ioctx_alloc, aio_setup_ring):
 * twice max(nr, 4 per possible cpu), two more, rounded up to whole pages.
 * 0 with *err for the kernel's EINVAL (overflow) and EAGAIN (0 after it) */
static uint32_t ring_events(unsigned nr_events, size_t *len, int *err)
{
	unsigned cpus4 = (unsigned)get_nprocs_conf() * 4;
	unsigned n = nr_events > cpus4 ? nr_events : cpus4;
	size_t bytes;

	n *= 2;                                 /* wraps for 2^31.., as the kernel's */
	if (n > 0x10000000u / sizeof(struct io_event)) {
		*err = -EINVAL;
		return 0;
	}
	if (!n) {
		*err = -EAGAIN;
		return 0;
	}
	bytes = sizeof(struct aio_ring) + sizeof(struct io_event) * ((size_t)n + 2);
	*len = (bytes + UIPC_PAGE - 1) / UIPC_PAGE * UIPC_PAGE;
	return (uint32_t)((*len - sizeof(struct aio_ring)) / sizeof(struct io_event));
}

/* how many requests a ring of NR events takes: the kernel hands its
 * nr - 1 free slots to the CPUs in batches of (nr - 1) / (4 per CPU), and
 * a submitter runs dry when less than a batch is left, so a thread that
 * stays on one CPU gets whole batches only */
static uint32_t reqs_limit(uint32_t nr)
{
	uint32_t avail = nr - 1, batch = avail / ((unsigned)get_nprocs_conf() * 4);

	return batch ? avail / batch * batch : avail;
}

static struct kioctx *ctx_get_free(void)
{
	struct kioctx *ctx = free_ctxs;

	if (ctx) {
		free_ctxs = ctx->next_free;
		return ctx;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (ctx) {
		pthread_mutex_init(&ctx->completion_lock, NULL);
		pthread_mutex_init(&ctx->ring_lock, NULL);
		pthread_mutex_init(&ctx->active_lock, NULL);
	}
	return ctx;
}

/* map and fill the ring of CTX (NR events, LEN bytes).  0 or -errno. */
static int ring_setup(struct kioctx *ctx, uint32_t nr, size_t len)
{
	struct aio_ring *r = sys_mmap(NULL, len, PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (r == MAP_FAILED)
		return -EAGAIN;
	r->nr = nr;
	r->magic = AIO_RING_MAGIC;
	r->compat_features = AIO_RING_COMPAT_FEATURES;
	r->incompat_features = AIO_RING_INCOMPAT_FEATURES;
	r->header_length = sizeof(struct aio_ring);
	ctx->ring = r;
	ctx->ring_len = len;
	ctx->user_id = (uint64_t)(uintptr_t)r;
	ctx->nr_events = nr;
	ctx->tail = 0;
	ctx->reqs_limit = reqs_limit(nr);
	return 0;
}

/* the context, accounted and in the table (table_lock held) */
static int ioctx_alloc(struct ns *ns, unsigned nr_events, uint32_t nr, size_t len,
		       struct kioctx **out)
{
	struct kioctx *ctx;
	int err;

	if (aio_nr + nr_events > proc_max_nr() || aio_nr + nr_events < aio_nr)
		return -EAGAIN;
	err = ns_aio_reserve(ns, nr_events);
	if (err)
		return err;
	ctx = ctx_get_free();
	if (!ctx) {
		ns_aio_release(ns, nr_events);
		return -ENOMEM;
	}
	err = ring_setup(ctx, nr, len);
	if (err)
		goto out_free;
	ctx->max_reqs = nr_events;
	ctx->dep = NULL;
	atomic_store(&ctx->inflight, 0);
	atomic_store(&ctx->users, 0);
	atomic_store(&ctx->dead, 0);
	err = table_insert(ctx);
	if (err)
		goto out_unmap;
	ctx->ring->id = ctx->id;
	ctx->acct_gen = acct_gen;
	aio_nr += nr_events;
	*out = ctx;
	return 0;
out_unmap:
	sys_munmap(ctx->ring, ctx->ring_len);
out_free:
	ctx->next_free = free_ctxs;
	free_ctxs = ctx;
	ns_aio_release(ns, nr_events);
	return err;
}

/*
 * sys_io_setup: create a context able to receive at least NR_EVENTS
 * events and store its id in *CTXP.
 * May fail with -EINVAL if *ctxp is not 0 or nr_events is 0 or too large,
 * -EAGAIN if nr_events is over fs.aio-max-nr or the namespace's fs.aio-nr
 * would be, -EFAULT if ctxp is bad, -ENOMEM (also when the namespace
 * cannot be opened).
 */
long ksys_io_setup(unsigned nr_events, aio_context_t *ctxp)
{
	aio_context_t cur;
	struct kioctx *ctx;
	struct ns *ns;
	uint32_t nr;
	size_t len = 0;
	int err = 0;

	if (uipc_copy_from_user(&cur, ctxp, sizeof(cur)))
		return -EFAULT;
	if (cur || nr_events == 0)
		return -EINVAL;
	nr = ring_events(nr_events, &len, &err);
	if (!nr)
		return err;
	ns = ns_get();
	if (!ns)
		return -ENOMEM;
	if (nr_events > aio_max_nr(ns))
		return -EAGAIN;
	crit_mutex_lock(&table_lock);
	err = ioctx_alloc(ns, nr_events, nr, len, &ctx);
	crit_mutex_unlock(&table_lock);
	if (err)
		return err;
	cur = ctx->user_id;
	if (uipc_copy_to_user(ctxp, &cur, sizeof(cur))) {
		ksys_io_destroy(cur);
		return -EFAULT;
	}
	return 0;
}

/* ---- contexts made in a namespace the process left ---- */

static void departed_drop(struct departed *d)
{
	struct departed **pp;

	for (pp = &departures; *pp; pp = &(*pp)->next)
		if (*pp == d) {
			*pp = d->next;
			break;
		}
	ns_anon_drop(d->held);          /* its descriptor and mapping (both kinds) */
	free(d);
}

/* N events of a context made in D's namespace given back there (table_lock) */
static void departed_release(struct departed *d, uint64_t n)
{
	ns_aio_release_departed(d->held, d->idx, d->starttime, n, d->left <= n);
	d->left = d->left > n ? d->left - n : 0;
	if (!d->left)
		departed_drop(d);
}

/* NS is being left with AIO_NR events of contexts made there: a mapping
 * of it of our own (a dup of an anonymous one's memfd, the file of a
 * named one), and our slot there kept for them; NULL when it cannot be
 * had (then they count nowhere, as before) */
static struct departed *depart(struct ns *ns)
{
	struct departed *d = calloc(1, sizeof(*d));
	int fd = -1;

	if (!d)
		return NULL;
	if (ns->anon_fd >= 0)
		fd = (int)sys_raw6(SYS_fcntl, ns->anon_fd, F_DUPFD_CLOEXEC, 0, 0, 0, 0);
	else if (ns->path[0])
		fd = sys_open(ns->path, O_RDWR | O_CLOEXEC);
	if (fd < 0 || ns_open_fd(fd, &d->held)) {
		if (fd >= 0)
			sys_close(fd);
		free(d);
		return NULL;
	}
	sys_close(fd);                  /* ns_open_fd holds its own */
	d->idx = ns_aio_depart(ns, &d->starttime);
	if (d->idx == UINT32_MAX) {
		ns_anon_drop(d->held);
		free(d);
		return NULL;
	}
	d->left = aio_nr;
	d->next = departures;
	departures = d;
	return d;
}

/* around an exec: the kernel drops the contexts with the old image, so
 * the namespaces left give their share back first (taken again if the
 * exec fails) */
void aio_exec_prepare(void)
{
	/* a vfork child (our memory, another pid): the contexts are its parent's */
	if (!departures || sys_raw6(SYS_getpid, 0, 0, 0, 0, 0, 0) != cur_pid())
		return;
	crit_mutex_lock(&table_lock);
	for (struct departed *d = departures; d; d = d->next)
		ns_aio_release_departed(d->held, d->idx, d->starttime, d->left, false);
	crit_mutex_unlock(&table_lock);
}

void aio_exec_failed(void)
{
	if (!departures || sys_raw6(SYS_getpid, 0, 0, 0, 0, 0, 0) != cur_pid())
		return;
	crit_mutex_lock(&table_lock);
	for (struct departed *d = departures; d; d = d->next)
		ns_aio_readd_departed(d->held, d->idx, d->starttime, d->left);
	crit_mutex_unlock(&table_lock);
}

/* ---- io_destroy ---- */

/* sleep until nothing is in flight in CTX and no other call is inside it */
static void wait_quiet(struct kioctx *ctx)
{
	for (;;) {
		uint32_t seq = atomic_load(&ctx->seq);
		uint32_t *w = (uint32_t *)&ctx->seq;

		if (!atomic_load(&ctx->inflight) && !atomic_load(&ctx->users))
			return;
		/* requests in the kernel context: someone must read it */
		if (aio_kaio_can_wait(ctx)) {
			aio_kaio_wait(ctx, seq, -1, uipc_handler_gen(), uipc_cont_gen());
			continue;
		}
		atomic_fetch_add(&ctx->waiters, 1);
		if (atomic_load(&ctx->inflight) || atomic_load(&ctx->users))
			sys_syscall(SYS_futex, w, FUTEX_WAIT, seq, NULL, NULL, 0);
		atomic_fetch_sub(&ctx->waiters, 1);
	}
}

/* io_destroy, its wait included */
static long io_destroy_ctx(aio_context_t user_id)
{
	struct kioctx *ctx = lookup_ioctx(user_id);
	struct ctx_table *t;
	int was_dead;

	if (!ctx)
		return -EINVAL;
	crit_mutex_lock(&table_lock);
	was_dead = atomic_exchange(&ctx->dead, 1);
	t = atomic_load(&ioctx_table);
	if (!was_dead)
		atomic_store(&t->table[ctx->id], NULL);
	crit_mutex_unlock(&table_lock);
	if (was_dead) {                 /* a concurrent io_destroy won */
		put_ioctx(ctx);
		return -EINVAL;
	}
	aio_wake(ctx);                  /* sleeping io_getevents return */
	aio_poll_cancel_all(ctx);       /* as the kernel cancels what it can */
	atomic_fetch_sub(&ctx->users, 1);
	wait_quiet(ctx);
	sys_munmap(ctx->ring, ctx->ring_len);
	crit_mutex_lock(&table_lock);
	if (ctx->dep) {
		departed_release(ctx->dep, ctx->max_reqs);
		ctx->dep = NULL;
	} else if (ctx->acct_gen == acct_gen) {
		struct ns *ns = ns_get_existing();

		aio_nr -= ctx->max_reqs;
		if (ns)
			ns_aio_release(ns, ctx->max_reqs);
	}
	ctx->user_id = 0;
	ctx->next_free = free_ctxs;
	free_ctxs = ctx;
	crit_mutex_unlock(&table_lock);
	return 0;
}

/*
 * sys_io_destroy: destroy the context CTX, waiting for the requests in
 * flight, and unmap its ring.
 * May fail with -EINVAL if ctx is not a context of this process
 * (destroyed already, or created by the parent of a fork).
 *
 * Its wait for the requests in flight is the kernel's uninterruptible one:
 * a handler whose signal comes meanwhile runs once the context is gone.
 */
long ksys_io_destroy(aio_context_t user_id)
{
	uipc_call_begin();
	return uipc_call_end(io_destroy_ctx(user_id));
}

/* ---- fork ---- */

/* the child has no context (the kernel gives it an empty table): its
 * lookups fail with EINVAL; the rings stay mapped, as the kernel's do */
static void aio_fork_child(void)
{
	pthread_mutex_init(&table_lock, NULL);
	atomic_store(&ioctx_table, NULL);
	free_ctxs = NULL;
	aio_nr = 0;
	acct_gen++;
	while (departures)               /* the parent's, not ours */
		departed_drop(departures);
	aio_backend_fork_child();
}

/* unshare, setns: the contexts stay and go on counting in the namespace
 * left (depart), not in the new one */
static void aio_ns_leave(struct ns *ns)
{
	struct ctx_table *t;
	struct departed *d = NULL;

	crit_mutex_lock(&table_lock);
	if (aio_nr)
		d = depart(ns);
	t = atomic_load(&ioctx_table);
	for (uint32_t i = 0; d && t && i < t->nr; i++) {
		struct kioctx *ctx = atomic_load(&t->table[i]);

		if (ctx && !ctx->dep && ctx->acct_gen == acct_gen)
			ctx->dep = d;
	}
	acct_gen++;
	aio_nr = 0;
	crit_mutex_unlock(&table_lock);
}

/* a namespace is made anew in place at an unshare only when nothing of
 * the old one is kept: our contexts' share there is */
static bool aio_ns_busy(struct ns *ns)
{
	(void)ns;
	return __atomic_load_n(&aio_nr, __ATOMIC_RELAXED) != 0;
}

CORE_HOOKS(aio_hooks) = {
	.fork_child = aio_fork_child,
	.ns_leave = aio_ns_leave,
	.ns_busy = aio_ns_busy,
};
