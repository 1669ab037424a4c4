/*
 * fault.c - a namespace file truncated under a process: SIGBUS becomes an
 * error, never a crash.
 *
 * Whoever can write a namespace file can truncate it, and a mapping's
 * pages past the new end raise SIGBUS when touched.  uipc touches the
 * arena in every call, so a member that truncates a shared namespace
 * would kill every other member at its next call (issue 14, item 5).
 *
 * core/signals.c's SIGBUS handler asks ns_fault_repair() first: a fault
 * inside a mapped arena means the file ends before that page, and so does
 * every page after it.  That page and a few after it (REPAIR_PAGES; the
 * next fault repairs the next ones) are replaced by private zero pages (an
 * anonymous MAP_FIXED mapping, a system call the handler may make; not the
 * whole rest of the arena, which mlockall(MCL_FUTURE) would populate),
 * the faulting instruction is restarted and sees zeros, and the namespace
 * is marked broken: the call in progress runs to its end on zeros (every
 * value it reads from them is checked like any other arena value, and
 * what it stores there is seen by nobody), and every later call of this
 * process fails with EIDRM (ns_mark_broken: ns_get finds no namespace).  A journaled section in progress
 * still ends normally: its stores below the new end are shared and
 * commit as usual; those above it went to pages that no longer exist for
 * anyone.  A fault anywhere else goes on to the copy fixups and the
 * program's own handler, as before.
 *
 * The mappings are kept in a small table the handler reads without a
 * lock (each entry's base is stored last and cleared first).
 */
#include <sys/mman.h>

#include "core/core.h"

/* a process maps its current namespace, one it joins before entering it,
 * and those it left while other threads of it may still be inside a call
 * there (nsfile.c keeps them mapped): a few, more after many unshares of
 * a threaded process */
#define FAULT_MAPS 64
#define REPAIR_PAGES 64

static struct {
	_Atomic uintptr_t base;    /* 0: free */
	uint64_t size;
	struct ns *ns;
} maps[FAULT_MAPS];

void ns_fault_register(struct ns *ns)
{
	for (int i = 0; i < FAULT_MAPS; i++) {
		uintptr_t none = 0;

		if (atomic_load(&maps[i].base))
			continue;
		maps[i].size = ns->size;
		maps[i].ns = ns;
		if (atomic_compare_exchange_strong(&maps[i].base, &none, (uintptr_t)ns->base))
			return;
	}
	/* more arenas mapped at once than entries: that one is not covered */
}

void ns_fault_unregister(struct ns *ns)
{
	for (int i = 0; i < FAULT_MAPS; i++)
		if (atomic_load(&maps[i].base) == (uintptr_t)ns->base && maps[i].ns == ns)
			atomic_store(&maps[i].base, 0);
}

/* a page of a thread slot mapped a second time (core/proc.c's alias) past
 * the file's end: the same repair, one page */
static bool repair_alias(void *addr)
{
	struct ns *ns = proc_alias_ns(addr);
	uintptr_t page = (uintptr_t)addr & ~(uintptr_t)(UIPC_PAGE - 1);

	if (!ns || sys_mmap((void *)page, UIPC_PAGE, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		return false;
	ns_mark_broken(ns);
	return true;
}

/* Called from the SIGBUS handler with the faulting address: true if it was
 * in an arena or an alias of a page of one, which is now repaired (see
 * above). */
bool ns_fault_repair(void *addr)
{
	uintptr_t a = (uintptr_t)addr;

	for (int i = 0; i < FAULT_MAPS; i++) {
		uintptr_t base = atomic_load(&maps[i].base);
		uintptr_t from, len;

		if (!base || a < base || a - base >= maps[i].size)
			continue;
		from = a & ~(uintptr_t)(UIPC_PAGE - 1);
		len = base + maps[i].size - from;
		if (len > (uintptr_t)REPAIR_PAGES * UIPC_PAGE)
			len = (uintptr_t)REPAIR_PAGES * UIPC_PAGE;
		if (sys_mmap((void *)from, len, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) ==
		    MAP_FAILED)
			return false;
		ns_mark_broken(maps[i].ns);
		return true;
	}
	return repair_alias(addr);
}
