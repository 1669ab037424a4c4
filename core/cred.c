/*
 * cred.c - the caller's credentials and capabilities, as the permission
 * checks of the layers above need them: effective uid and gid,
 * supplementary groups, effective capabilities.  Cached per thread (the
 * kernel's are per thread too) and read again after entry/ saw a call that
 * may change them (cred_invalidate).
 */
#include <linux/capability.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/core.h"

__thread struct ucred_cache uipc_tls_cred;
__thread unsigned uipc_tls_cred_gen;
_Atomic unsigned uipc_cred_gen = 1;	/* bumped by cred_invalidate */

void cred_invalidate(void)
{
	atomic_fetch_add(&uipc_cred_gen, 1);
}

/* cur_cred's refill (core.h): the first call of a thread, or after an
 * invalidation */
const struct ucred_cache *cur_cred_slow(void)
{
	struct ucred_cache *c = &uipc_tls_cred;
	unsigned gen = atomic_load_explicit(&uipc_cred_gen, memory_order_acquire);

	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	int n;

	c->euid = geteuid();
	c->egid = getegid();
	n = getgroups(256, c->groups);
	c->ngroups = n < 0 ? 0 : n;
	memset(d, 0, sizeof(d));
	if (sys_syscall(SYS_capget, &h, d) == 0)
		c->caps = (uint64_t)d[0].effective | ((uint64_t)d[1].effective << 32);
	else
		c->caps = 0;
	c->valid = 1;
	uipc_tls_cred_gen = gen;
	return c;
}

bool has_cap(int cap)
{
	return (cur_cred()->caps >> cap) & 1;
}
