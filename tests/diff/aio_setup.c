/*
 * aio_setup.c - io_setup and io_destroy: the ring header the kernel
 * writes for each size (nr as the kernel rounds it, magic, features,
 * header length, the table slot in id), every error (ctxp not 0, 0
 * events, sizes past the overflow check, over fs.aio-max-nr, bad ctxp),
 * the fs.aio-nr accounting of several contexts against the 65536 limit,
 * slot reuse and table growth, io_destroy twice or of a non-context, and
 * a fork child, to which the parent's contexts are unknown (EINVAL).
 */
#include "aiodt.h"

#include <sys/mman.h>
#include <sys/wait.h>

static void sizes(int argc, char **argv)
{
	static const int n[] = { 1, 2, 7, 8, 9, 16, 100, 127, 128, 200, 500, 1000, 4096, 65536 };

	(void)argc; (void)argv;
	for (size_t i = 0; i < DT_NELEM(n); i++) {
		io_context_t ctx = aio_setup_p(n[i]);

		if (!ctx)
			continue;
		aio_ring_print(ctx);
		aio_destroy_p(ctx);
	}
}

static void errors(int argc, char **argv)
{
	static const unsigned big[] = { 65537, 0x400000, 0x400001, 0x80000000u, 0xffffffffu };
	io_context_t ctx = (io_context_t)(uintptr_t)5;

	(void)argc; (void)argv;
	dt_out("io_setup(1, ctxp=5) = %s", aio_res(io_setup(1, &ctx)));
	ctx = 0;
	dt_out("io_setup(0) = %s", aio_res(io_setup(0, &ctx)));
	dt_out("io_setup(-1) = %s", aio_res(io_setup(-1, &ctx)));
	for (size_t i = 0; i < DT_NELEM(big); i++)
		dt_out("io_setup(%#x) = %s", big[i], aio_res(io_setup((int)big[i], &ctx)));
	dt_out("ctx still %s", ctx ? "set" : "0");
	dt_out("io_setup(1, BADPAGE) = %s", aio_res(io_setup(1, dt_badpage)));
	dt_out("io_setup(1, NULL) = %s", aio_res(io_setup(1, NULL)));
	/* read-only and 0: read fine, the id cannot be stored */
	dt_out("io_setup(1, ROPAGE) = %s", aio_res(io_setup(1, dt_ropage)));
}

/* fs.aio-nr counts what io_setup asked for, against fs.aio-max-nr */
static void limit(int argc, char **argv)
{
	io_context_t a, b, c;

	(void)argc; (void)argv;
	a = aio_setup_p(40000);
	b = aio_setup_p(30000);
	b = aio_setup_p(25536);
	c = aio_setup_p(1);
	if (a)
		aio_destroy_p(a);
	c = aio_setup_p(40000);
	if (b)
		aio_destroy_p(b);
	if (c)
		aio_destroy_p(c);
	a = aio_setup_p(65536);
	if (a)
		aio_destroy_p(a);
}

/* slots: the first free one; the table grows past 4, 16, 64 */
static void ids(int argc, char **argv)
{
	io_context_t c[70];
	const struct aio_ring_hdr *h;

	(void)argc; (void)argv;
	for (int i = 0; i < 70; i++) {
		c[i] = 0;
		if (io_setup(1, &c[i]))
			dt_fail("io_setup %d", i);
	}
	for (int i = 0; i < 70; i += 9) {
		h = (const void *)c[i];
		dt_out("context %d: id %u", i, h->id);
	}
	aio_destroy_p(c[1]);
	aio_destroy_p(c[5]);
	c[1] = aio_setup_p(3);
	dt_out("reused id %u", ((const struct aio_ring_hdr *)c[1])->id);
	c[5] = aio_setup_p(3);
	dt_out("reused id %u", ((const struct aio_ring_hdr *)c[5])->id);
	for (int i = 0; i < 70; i++)
		if (io_destroy(c[i]))
			dt_fail("io_destroy %d", i);
	dt_out("all destroyed");
}

static void destroy(int argc, char **argv)
{
	io_context_t ctx = aio_setup_p(4), real;
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	(void)argc; (void)argv;
	aio_destroy_p(ctx);
	aio_destroy_p(ctx);
	aio_destroy_p(NULL);
	aio_destroy_p((io_context_t)dt_badpage);
	aio_destroy_p((io_context_t)page);            /* id 0 there, but not a ring */
	real = aio_setup_p(1);
	memcpy(page, (void *)real, 32);               /* a copy of a real header */
	aio_destroy_p((io_context_t)page);
	dt_out("io_submit(destroyed, 0) = %s", aio_res(io_submit(ctx, 0, NULL)));
	aio_destroy_p(real);
	munmap(page, 4096);
}

static io_context_t parent_ctx;

static void child(void *arg)
{
	struct io_event ev;
	struct timespec ts = { 0, 1000000 };
	const struct aio_ring_hdr *h = (const void *)parent_ctx;

	(void)arg;
	dt_out("ring magic seen by the child %#x", h->magic);
	dt_out("io_submit = %s", aio_res(io_submit(parent_ctx, 0, NULL)));
	dt_out("io_getevents = %s", aio_res(io_getevents(parent_ctx, 1, 1, &ev, &ts)));
	dt_out("io_destroy = %s", aio_res(io_destroy(parent_ctx)));
	io_context_t own = aio_setup_p(2);
	aio_ring_print(own);
	aio_destroy_p(own);
}

static void fork_child(int argc, char **argv)
{
	(void)argc; (void)argv;
	parent_ctx = aio_setup_p(4);
	dt_wait(dt_fork(child, NULL));
	dt_out("parent io_submit(0) = %s", aio_res(io_submit(parent_ctx, 0, NULL)));
	aio_destroy_p(parent_ctx);
}

const struct dt_case dt_cases[] = {
	{ "sizes", sizes, 0 },
	{ "errors", errors, 0 },
	{ "limit", limit, 0 },
	{ "ids", ids, 0 },
	{ "destroy", destroy, 0 },
	{ "fork", fork_child, 0 },
	{ NULL, NULL, 0 },
};
