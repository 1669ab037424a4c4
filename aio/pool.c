/*
 * pool.c - memory for requests and their iovecs: uipc's own, not malloc's.
 *
 * io_submit is a system call on the kernel, so async-signal-safe: a
 * program's handler may make it while the code it interrupted is inside
 * malloc (the program's own call, or this thread's io_submit allocating a
 * request), and malloc's lock would then be taken twice by one thread
 * (tests/diff/aio_depth.c handler-reaps hung so).  So blocks come from
 * anonymous mappings in power-of-two classes, 64 B to 16 KiB (1024
 * iovecs), one free list per class under one mutex held with the
 * program's handlers held off.  Freed blocks are kept for reuse, never
 * unmapped: the pool is as large as the most requests ever in flight.
 */
#include <sys/mman.h>

#include "aio/aio.h"

#define POOL_MIN   6                    /* 64 B */
#define POOL_MAX   14                   /* 16 KiB */
#define POOL_CHUNK (64 * 1024)

struct pool_blk {
	struct pool_blk *next;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pool_blk *pool_free[POOL_MAX + 1];   /* under pool_lock */

/* the class of a block of SIZE bytes, or -1 past the largest */
static int pool_class(size_t size)
{
	int cls = POOL_MIN;

	while (cls <= POOL_MAX && ((size_t)1 << cls) < size)
		cls++;
	return cls <= POOL_MAX ? cls : -1;
}

/* a new chunk cut into blocks of class CLS on its free list (pool_lock
 * held).  Whether there is one. */
static bool pool_refill(int cls)
{
	char *c = sys_mmap(NULL, POOL_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0);
	size_t sz = (size_t)1 << cls;

	if (c == MAP_FAILED)
		return false;
	for (size_t off = 0; off + sz <= POOL_CHUNK; off += sz) {
		struct pool_blk *b = (struct pool_blk *)(c + off);

		b->next = pool_free[cls];
		pool_free[cls] = b;
	}
	return true;
}

void *aio_pool_alloc(size_t size)
{
	int cls = pool_class(size);
	struct pool_blk *b = NULL;

	if (cls < 0)
		return NULL;
	crit_mutex_lock(&pool_lock);
	if (pool_free[cls] || pool_refill(cls)) {
		b = pool_free[cls];
		pool_free[cls] = b->next;
	}
	crit_mutex_unlock(&pool_lock);
	if (b)
		memset(b, 0, size);
	return b;
}

void aio_pool_free(void *p, size_t size)
{
	int cls = pool_class(size);
	struct pool_blk *b = p;

	if (!p)
		return;
	crit_mutex_lock(&pool_lock);
	b->next = pool_free[cls];
	pool_free[cls] = b;
	crit_mutex_unlock(&pool_lock);
}

/* the child has the parent's lists (a copy of its memory), but perhaps
 * not the lock free: another thread of the parent may have held it */
void aio_pool_fork_child(void)
{
	pthread_mutex_init(&pool_lock, NULL);
}
