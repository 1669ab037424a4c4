/*
 * cred.c - the caller's credentials and capabilities, as the permission
 * checks of the layers above need them: effective uid and gid,
 * supplementary groups, effective capabilities.  Cached per thread (the
 * kernel's are per thread too) and read again after entry/ saw a call that
 * may change them, or the process entered another namespace
 * (cred_invalidate).
 *
 * As the kernel judges them (issue 14, item 5): the kernel keeps ids as
 * global kuids and a capability counts over the user namespace that owns
 * the IPC namespace.  A uipc namespace records its owner user namespace
 * (struct owner_userns, its creator's), and the ids kept in objects are
 * ids as seen from it.  So the caller's credentials are translated:
 * - in the owner user namespace: as they are;
 * - in the initial user namespace (an ancestor of every other) with the
 *   namespace owned further down: ids through the owner's maps (recorded at
 *   creation), capabilities as they are (an ancestor's count);
 * - anywhere else (a user namespace made later, `unshare -r`): ids through
 *   the caller's own /proc/self/uid_map and gid_map (to its parent, taken
 *   to be the owner), no capability at all.  A user namespace cannot name
 *   its parent (NS_GET_PARENT is refused for ancestors), so a caller nested
 *   deeper is judged as if it were one level down: a difference of
 *   semantics only, since whoever may open a namespace file can rewrite
 *   the objects' permissions directly anyway (docs/threat-model.md).
 * An id with no mapping is the kernel's overflow id (65534).
 */
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/core.h"

#define USERNS_INIT_INO 0xEFFFFFFDULL   /* the kernel's PROC_USER_INIT_INO */
#define OVERFLOW_ID     65534u

__thread struct ucred_cache uipc_tls_cred;
__thread unsigned uipc_tls_cred_gen;
_Atomic unsigned uipc_cred_gen = 1;	/* bumped by cred_invalidate */

void cred_invalidate(void)
{
	atomic_fetch_add(&uipc_cred_gen, 1);
}

/* ---- user namespaces ---- */

/*
 * This process's user namespace, as /proc/self/ns/user names it
 * ("user:[INO]"), cached for the process: a user namespace is the whole
 * process's (unshare and setns into one refuse a process with several
 * threads), so it changes only by the calls entry/ watches, which forget
 * it (cred_userns_changed), and a clone child made in a new one forgets
 * it too.  0: not known.  Read by readlink, which names the namespace
 * without opening it: half the cost of a stat through the link, and
 * this was most of a process's first create (issue 15's first call).
 */
static _Atomic uint64_t userns_ino_cached;

static uint64_t read_userns_ino(void)
{
	char buf[64], *end;
	ssize_t n = sys_readlinkat(AT_FDCWD, "/proc/self/ns/user", buf, sizeof(buf) - 1);
	unsigned long long ino;

	if (n <= 6 || memcmp(buf, "user:[", 6))
		return 0;
	buf[n] = 0;
	ino = strtoull(buf + 6, &end, 10);
	return *end == ']' && ino ? (uint64_t)ino : 0;
}

static uint64_t self_userns_ino(void)
{
	uint64_t ino = atomic_load_explicit(&userns_ino_cached, memory_order_relaxed);

	if (ino)
		return ino;
	ino = read_userns_ino();
	if (!ino)                   /* no /proc: taken as the initial one */
		return USERNS_INIT_INO;
	atomic_store_explicit(&userns_ino_cached, ino, memory_order_relaxed);
	return ino;
}

void cred_userns_changed(void)
{
	atomic_store_explicit(&userns_ino_cached, 0, memory_order_relaxed);
	cred_invalidate();
}

/* the extents of /proc/self/{uid,gid}_map (inside, outside, count), at
 * most MAX; their number */
static uint32_t read_map(const char *path, struct owner_extent *e, uint32_t max)
{
	char buf[1024], *p = buf;
	uint32_t n = 0;
	ssize_t len;
	int fd = sys_open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	len = read(fd, buf, sizeof(buf) - 1);
	sys_close(fd);
	if (len <= 0)
		return 0;
	buf[len] = 0;
	while (n < max && *p) {
		char *end;
		unsigned long first = strtoul(p, &end, 10), lower, count;

		if (end == p)
			break;
		lower = strtoul(end, &p, 10);
		count = strtoul(p, &end, 10);
		if (end == p)
			break;
		e[n++] = (struct owner_extent){ (uint32_t)first, (uint32_t)lower, (uint32_t)count };
		p = end;
		while (*p == '\n' || *p == ' ')
			p++;
	}
	return n;
}

/* ID through extents E (N of them): inside to outside (OUT), or back */
static uint32_t map_id(const struct owner_extent *e, uint32_t n, uint32_t id, bool out)
{
	if (n > OWNER_MAP_MAX)     /* (checked at open: nsfile.c's check_header) */
		n = OWNER_MAP_MAX;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t from = out ? e[i].first : e[i].lower, to = out ? e[i].lower : e[i].first;

		if (id >= from && id - from < e[i].count)
			return to + (id - from);
	}
	return OVERFLOW_ID;
}

void cred_note_owner(struct owner_userns *o)
{
	memset(o, 0, sizeof(*o));
	o->ino = self_userns_ino();
	if (o->ino == USERNS_INIT_INO)
		return;
	o->nuid = read_map("/proc/self/uid_map", o->uid_map, OWNER_MAP_MAX);
	o->ngid = read_map("/proc/self/gid_map", o->gid_map, OWNER_MAP_MAX);
}

/* how this process stands to the owner user namespace of the current
 * namespace; *SELF: its own maps when it is below */
enum { REL_SAME, REL_ANCESTOR, REL_BELOW };

struct caller_maps {
	uint32_t nuid, ngid;
	struct owner_extent uid[OWNER_MAP_MAX], gid[OWNER_MAP_MAX];
};

static __thread struct caller_maps tls_maps;

static int relation(const struct owner_userns *o, struct caller_maps *self, uint64_t *ino)
{
	uint64_t me = self_userns_ino();

	*ino = me;
	if (!o || me == o->ino)
		return REL_SAME;
	if (me == USERNS_INIT_INO)
		return REL_ANCESTOR;
	self->nuid = read_map("/proc/self/uid_map", self->uid, OWNER_MAP_MAX);
	self->ngid = read_map("/proc/self/gid_map", self->gid, OWNER_MAP_MAX);
	return REL_BELOW;
}

/* an id of the caller's view as the owner namespace sees it */
static uint32_t to_owner(const struct ucred_cache *c, const struct owner_userns *o, uint32_t id,
			 bool gid)
{
	switch (c->rel) {
	case REL_ANCESTOR:
		return gid ? map_id(o->gid_map, o->ngid, id, false) : map_id(o->uid_map, o->nuid, id, false);
	case REL_BELOW:
		return gid ? map_id(tls_maps.gid, tls_maps.ngid, id, true)
			   : map_id(tls_maps.uid, tls_maps.nuid, id, true);
	default:
		return id;
	}
}

static const struct owner_userns *cur_owner(void)
{
	struct ns *ns = ns_current();

	return ns ? &ns->owner : NULL;
}

/*
 * A namespace made now (a new file or memfd, or one made anew in place):
 * its owner user namespace and its creator's euid as that one sees it.
 * When the cached credentials say this process is in the user namespace
 * that owns its current namespace, the new one's owner is that one: copied,
 * no system call (reading /proc/self/ns/user costs an unshare made in
 * place ten times all its other work, seed 003).  Else read from
 * /proc/self.  (The owner's maps are copied only once they were written:
 * a user namespace whose maps were empty at the owner's creation is read
 * again.)
 */
void cred_note_creator(struct owner_userns *o, uint32_t *euid)
{
	const struct ucred_cache *c = cur_cred();
	const struct owner_userns *cur = cur_owner();

	if (cur && c->rel == REL_SAME &&
	    (cur->ino == USERNS_INIT_INO || (cur->nuid && cur->ngid))) {
		*o = *cur;
		*euid = c->euid;
		return;
	}
	cred_note_owner(o);
	*euid = (uint32_t)geteuid();
}

/*
 * The current namespace is owned by this process's user namespace, whose
 * maps were not written yet when it was made (unshare(CLONE_NEWUSER |
 * CLONE_NEWIPC): the maps are written after the call): once they are,
 * they are recorded, in this process's copy and in the header, for
 * members in the initial user namespace (REL_ANCESTOR) that open it later.
 */
static void owner_maps_written(void)
{
	struct ns *ns = ns_current();
	struct owner_userns o;

	if (!ns)
		return;
	cred_note_owner(&o);
	if (o.ino != ns->owner.ino || !o.nuid || !o.ngid)
		return;
	ns->owner = o;
	ns->hdr->owner = o;
}

/* cur_cred's refill (core.h): the first call of a thread, after an
 * invalidation, or while the euid has no mapping in the owner namespace */
const struct ucred_cache *cur_cred_slow(void)
{
	struct ucred_cache *c = &uipc_tls_cred;
	unsigned gen = atomic_load_explicit(&uipc_cred_gen, memory_order_acquire);
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	const struct owner_userns *o = cur_owner();
	uint64_t me;
	int n, k = 0;

	c->rel = relation(o, &tls_maps, &me);
	if (c->rel == REL_SAME && o && me != USERNS_INIT_INO && (!o->nuid || !o->ngid))
		owner_maps_written();
	c->euid = to_owner(c, o, geteuid(), false);
	c->egid = to_owner(c, o, getegid(), true);
	n = getgroups(256, c->groups);
	for (int i = 0; i < n; i++) {
		uint32_t g = to_owner(c, o, c->groups[i], true);

		/* groups with no mapping are not ones to be judged by */
		if (g != OVERFLOW_ID)
			c->groups[k++] = g;
	}
	c->ngroups = k;
	memset(d, 0, sizeof(d));
	/* a capability counts over the owner namespace and its descendants
	 * only: none from a namespace made below it */
	if (c->rel != REL_BELOW && sys_syscall(SYS_capget, &h, d) == 0)
		c->caps = (uint64_t)d[0].effective | ((uint64_t)d[1].effective << 32);
	else
		c->caps = 0;
	/* a euid with no mapping yet (outside the initial user namespace):
	 * its user namespace's maps may still be written, read them again
	 * next time */
	c->valid = me == USERNS_INIT_INO || c->euid != OVERFLOW_ID;
	c->caps_global = me == USERNS_INIT_INO ? c->caps : 0;
	uipc_tls_cred_gen = gen;
	return c;
}

bool has_cap(int cap)
{
	return (cur_cred()->caps >> cap) & 1;
}

bool has_cap_global(int cap)
{
	return (cur_cred()->caps_global >> cap) & 1;
}

/* The caller's euid as the initial user namespace sees it, through the
 * owner's maps when the current namespace is owned below it (one level of
 * user namespaces, as above): what names the user's files that live
 * outside any namespace (nsfile.c's count file), the same for a process
 * before and after it made or entered a user namespace. */
uint32_t cred_global_euid(void)
{
	const struct ucred_cache *c = cur_cred();
	const struct owner_userns *o = cur_owner();

	if (!o || o->ino == USERNS_INIT_INO || !o->nuid || c->rel == REL_ANCESTOR)
		return c->euid;
	return map_id(o->uid_map, o->nuid, c->euid, true);
}

/*
 * An id kept in an object (as the owner namespace sees it) as the caller
 * sees it (IPC_STAT), the kernel's from_kuid_munged: the overflow id when
 * the caller's namespace has no mapping for it.
 */
uint32_t cred_id_for_caller(uint32_t id, bool gid)
{
	const struct ucred_cache *c = cur_cred();
	const struct owner_userns *o;

	if (likely(c->rel == REL_SAME))
		return id;
	o = cur_owner();
	if (!o)
		return id;
	if (c->rel == REL_ANCESTOR)
		return gid ? map_id(o->gid_map, o->ngid, id, true) : map_id(o->uid_map, o->nuid, id, true);
	return gid ? map_id(tls_maps.gid, tls_maps.ngid, id, false)
		   : map_id(tls_maps.uid, tls_maps.nuid, id, false);
}

/*
 * An id the caller gives (IPC_SET) as the owner namespace sees it: 0, or
 * -EINVAL when it has no mapping there (the kernel's make_kuid failing).
 */
int cred_id_from_caller(uint32_t id, bool gid, uint32_t *out)
{
	const struct ucred_cache *c = cur_cred();
	const struct owner_userns *o = cur_owner();

	if (likely(c->rel == REL_SAME) || !o) {
		*out = id;
		/* in the owner user namespace, not the initial one: an id its
		 * maps (the caller's own) do not map is the kernel's make_kuid
		 * failing too */
		if (unlikely(o && o->ino != USERNS_INIT_INO) &&
		    map_id(gid ? o->gid_map : o->uid_map, gid ? o->ngid : o->nuid, id, true) ==
			    OVERFLOW_ID)
			return -EINVAL;
		return 0;
	}
	*out = to_owner(c, o, id, gid);
	return *out == OVERFLOW_ID && id != OVERFLOW_ID ? -EINVAL : 0;
}
