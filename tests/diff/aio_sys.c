/*
 * aio_sys.c - native AIO reached through glibc's syscall(SYS_io_*), as
 * stress-ng and programs without libaio make the calls: the raw
 * convention (-1 and errno), the argument errors, a write and a read
 * completed and reaped, the ring's header, io_destroy twice; and the two
 * doors mixed on one context (syscall() and libaio's functions), which
 * works only if both reach the same implementation.
 */
#include <sys/syscall.h>

#include "aiodt.h"	/* libaio.h: struct iocb and io_event as the kernel has them */

/* a raw call's result: the value, or -1 and errno as its name */
static const char *sys_res(long r)
{
	return r < 0 ? aio_res(-errno) : aio_res(r);
}

static void setup_errors(int argc, char **argv)
{
	unsigned long ctx = 0;

	(void)argc; (void)argv;
	dt_out("io_setup(0) = %s", sys_res(syscall(SYS_io_setup, 0, &ctx)));
	ctx = 1;
	dt_out("io_setup(8), *ctxp != 0 = %s", sys_res(syscall(SYS_io_setup, 8, &ctx)));
	dt_out("io_setup(8, bad pointer) = %s", sys_res(syscall(SYS_io_setup, 8, (void *)8)));
	dt_out("io_destroy(0) = %s", sys_res(syscall(SYS_io_destroy, 0)));
	dt_out("io_submit(bad ctx) = %s", sys_res(syscall(SYS_io_submit, 12345, 1, NULL)));
	dt_out("io_getevents(bad ctx) = %s",
	       sys_res(syscall(SYS_io_getevents, 12345, 0, 1, NULL, NULL)));
}

static void write_read(int argc, char **argv)
{
	unsigned long ctx = 0;
	struct iocb w, r, *v[1];
	struct io_event ev[2];
	struct timespec ts = { 5, 0 };
	struct aio_ring_hdr *h;
	static char out[4096], in[4096];
	int fd;

	(void)argc; (void)argv;
	dt_out("io_setup(1) = %s", sys_res(syscall(SYS_io_setup, 1, &ctx)));
	h = (struct aio_ring_hdr *)(uintptr_t)ctx;
	dt_out("ring: nr %u head %u tail %u magic %#x compat %u incompat %u header %u", h->nr,
	       h->head, h->tail, h->magic, h->compat_features, h->incompat_features,
	       h->header_length);
	aio_mkdir(0);
	fd = aio_open("f", O_RDWR | O_TRUNC);
	memset(out, 'u', sizeof out);
	io_prep_pwrite(&w, fd, out, sizeof out, 0);
	w.data = (void *)1;
	v[0] = &w;
	dt_out("io_submit(write) = %s", sys_res(syscall(SYS_io_submit, ctx, 1, v)));
	dt_out("io_getevents(1, 2) = %s", sys_res(syscall(SYS_io_getevents, ctx, 1, 2, ev, &ts)));
	dt_out("event: data %lu res %ld res2 %ld", (unsigned long)(uintptr_t)ev[0].data,
	       (long)ev[0].res, (long)ev[0].res2);
	io_prep_pread(&r, fd, in, sizeof in, 0);
	r.data = (void *)2;
	v[0] = &r;
	dt_out("io_submit(read) = %s", sys_res(syscall(SYS_io_submit, ctx, 1, v)));
	dt_out("io_getevents(1, 2) = %s", sys_res(syscall(SYS_io_getevents, ctx, 1, 2, ev, &ts)));
	dt_out("event: data %lu res %ld, read back %s", (unsigned long)(uintptr_t)ev[0].data,
	       (long)ev[0].res, memcmp(in, out, sizeof in) ? "differs" : "equal");
	dt_out("ring: head %u tail %u", h->head, h->tail);
	close(fd);
	aio_rmdir("f");
	aio_rmdir(NULL);
	dt_out("io_destroy = %s", sys_res(syscall(SYS_io_destroy, ctx)));
	dt_out("io_destroy again = %s", sys_res(syscall(SYS_io_destroy, ctx)));
}

/* a context made by syscall() used through libaio, and back */
static void mixed(int argc, char **argv)
{
	unsigned long ctx = 0;
	struct iocb w, *v[1];
	struct io_event ev[1];
	struct timespec ts = { 5, 0 };
	static char out[512];
	int fd;

	(void)argc; (void)argv;
	dt_out("syscall io_setup(4) = %s", sys_res(syscall(SYS_io_setup, 4, &ctx)));
	aio_mkdir(0);
	fd = aio_open("m", O_RDWR | O_TRUNC);
	memset(out, 'm', sizeof out);
	io_prep_pwrite(&w, fd, out, sizeof out, 0);
	v[0] = &w;
	dt_out("libaio io_submit = %s", aio_res(io_submit((io_context_t)ctx, 1, v)));
	dt_out("syscall io_getevents = %s",
	       sys_res(syscall(SYS_io_getevents, ctx, 1, 1, ev, &ts)));
	dt_out("event res %ld", (long)ev[0].res);
	aio_file_print(fd);
	close(fd);
	aio_rmdir("m");
	aio_rmdir(NULL);
	dt_out("libaio io_destroy = %s", aio_res(io_destroy((io_context_t)ctx)));
	dt_out("syscall io_destroy again = %s", sys_res(syscall(SYS_io_destroy, ctx)));
}

const struct dt_case dt_cases[] = {
	{ "sys-setup-errors", setup_errors, 0 },
	{ "sys-write-read", write_read, 0 },
	{ "sys-mixed", mixed, 0 },
	{ NULL, NULL, 0 },
};
