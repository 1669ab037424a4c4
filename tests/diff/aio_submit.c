/*
 * aio_submit.c - io_submit and io_cancel: every opcode (pread, pwrite,
 * preadv, pwritev, fsync, fdsync) with its event and the file's contents
 * after, on tmpfs and on the disk with and without O_DIRECT; each error
 * in the kernel's order (nr < 0, bad ctx, bad iocbpp or iocb, reserved
 * field, bad fd, bad opcode, size or offset out of range, file not open
 * for the operation, fsync arguments and files without fsync, too many
 * iovecs, bad iovec array, bad ioprio, RESFD not an eventfd, an iocb whose
 * key cannot be written); errors found only when the I/O runs (bad
 * buffer, O_DIRECT misalignment) as events; partial submission; the ring
 * running full (EAGAIN); aio_rw_flags; IOCB_FLAG_RESFD's eventfd counts;
 * io_cancel's answers; IOCB_CMD_POLL, ready, pending, cancelled.
 */
#include "aiodt.h"

#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/uio.h>

#ifndef IOCB_FLAG_IOPRIO
#define IOCB_FLAG_IOPRIO (1 << 1)
#endif

static char wbuf[3][8192], rbuf[8192];

static void fill(void)
{
	for (int i = 0; i < 3; i++)
		memset(wbuf[i], 'a' + i, sizeof wbuf[i]);
}

static void print_rbuf(size_t n)
{
	unsigned long h = 5381;

	for (size_t i = 0; i < n; i++)
		h = h * 33 + (unsigned char)rbuf[i];
	dt_out("  read buffer hash %lx", h);
}

/* every opcode on FD, events and contents checked */
static void opcodes_on(int fd)
{
	io_context_t ctx = aio_setup_p(8);
	struct iocb cb[4];
	struct iovec wv[2] = { { wbuf[1], 100 }, { wbuf[2], 300 } };
	struct iovec rv[2] = { { rbuf, 50 }, { rbuf + 1000, 500 } };
	struct iocb *v[4] = { &cb[0], &cb[1], &cb[2], &cb[3] };

	io_prep_pwrite(&cb[0], fd, wbuf[0], 1000, 0);
	cb[0].data = (void *)1;
	io_prep_pwritev(&cb[1], fd, wv, 2, 1000);
	cb[1].data = (void *)2;
	aio_submit_p("pwrite+pwritev", ctx, 2, v);
	aio_reap(ctx, 2, 4);
	aio_file_print(fd);
	io_prep_pread(&cb[0], fd, rbuf, 4096, 0);
	cb[0].data = (void *)3;
	aio_submit1("pread past eof", ctx, &cb[0]);
	aio_reap(ctx, 1, 4);
	print_rbuf(1400);
	memset(rbuf, 0, sizeof rbuf);
	io_prep_preadv(&cb[0], fd, rv, 2, 990);
	cb[0].data = (void *)4;
	io_prep_pread(&cb[1], fd, rbuf + 2000, 10, 5000);
	cb[1].data = (void *)5;
	io_prep_fsync(&cb[2], fd);
	cb[2].data = (void *)6;
	io_prep_fdsync(&cb[3], fd);
	cb[3].data = (void *)7;
	aio_submit_p("preadv+pread+fsync+fdsync", ctx, 4, v);
	aio_reap(ctx, 4, 4);
	print_rbuf(2100);
	dt_out("  obj points at the iocb, key is 0: %d", cb[0].key == 0);
	aio_destroy_p(ctx);
}

static void opcodes(int argc, char **argv)
{
	int fd;

	(void)argc; (void)argv;
	fill();
	for (int disk = 0; disk < 2; disk++) {
		dt_out("-- %s", disk ? "disk" : "tmpfs");
		aio_mkdir(disk);
		fd = aio_open("f", O_RDWR | O_TRUNC);
		opcodes_on(fd);
		close(fd);
		aio_rmdir("f");
		aio_rmdir(NULL);
	}
}

/* O_DIRECT on the disk: aligned I/O works, misalignment is an event */
static void direct(int argc, char **argv)
{
	io_context_t ctx = aio_setup_p(8);
	struct iocb cb;
	char *al = NULL;
	int fd;

	(void)argc; (void)argv;
	aio_mkdir(1);
	fd = aio_open("d", O_RDWR | O_TRUNC | O_DIRECT);
	if (posix_memalign((void **)&al, 4096, 8192))
		dt_fail("posix_memalign");
	memset(al, 'z', 8192);
	io_prep_pwrite(&cb, fd, al, 8192, 0);
	aio_submit1("direct pwrite", ctx, &cb);
	aio_reap(ctx, 1, 1);
	memset(al, 0, 8192);
	io_prep_pread(&cb, fd, al, 4096, 4096);
	aio_submit1("direct pread", ctx, &cb);
	aio_reap(ctx, 1, 1);
	dt_out("  byte %c", al[100]);
	io_prep_pwrite(&cb, fd, al + 1, 100, 0);
	aio_submit1("direct misaligned", ctx, &cb);
	aio_reap(ctx, 1, 1);
	io_prep_pread(&cb, fd, al, 4096, 3);
	aio_submit1("direct misaligned offset", ctx, &cb);
	aio_reap(ctx, 1, 1);
	close(fd);
	fd = aio_open("d", O_RDONLY);     /* printed through the page cache */
	aio_file_print(fd);
	close(fd);
	free(al);
	aio_rmdir("d");
	aio_rmdir(NULL);
	aio_destroy_p(ctx);
}

/* io_destroy waits for the requests in flight: O_DIRECT writes (on the
 * disk, through uipc's workers) are all in the file when it returns */
static void destroy_waits(int argc, char **argv)
{
	io_context_t ctx = aio_setup_p(32);
	struct iocb cb[16], *v[16];
	char *al = NULL;
	int fd;

	(void)argc; (void)argv;
	aio_mkdir(1);
	fd = aio_open("dw", O_RDWR | O_TRUNC | O_DIRECT);
	if (posix_memalign((void **)&al, 4096, 16 << 16))
		dt_fail("posix_memalign");
	for (int i = 0; i < 16; i++) {
		memset(al + (i << 16), 'A' + i, 1 << 16);
		io_prep_pwrite(&cb[i], fd, al + (i << 16), 1 << 16, (long long)i << 16);
		v[i] = &cb[i];
	}
	aio_submit_p("16 x 64 KiB O_DIRECT", ctx, 16, v);
	aio_destroy_p(ctx);
	close(fd);
	fd = aio_open("dw", O_RDONLY);
	aio_file_print(fd);
	close(fd);
	free(al);
	aio_rmdir("dw");
	aio_rmdir(NULL);
}

/* submit CB once; when it went in, reap its event */
static void try1(const char *what, io_context_t ctx, struct iocb *cb)
{
	if (aio_submit1(what, ctx, cb) == 1)
		aio_reap(ctx, 1, 1);
}

static void errors(int argc, char **argv)
{
	io_context_t ctx = aio_setup_p(8);
	struct iocb cb, *p = &cb, *bad = (struct iocb *)dt_badpage;
	struct iovec many[1100];
	int fd, rfd, wfd, pfd, pipefd[2], efd;

	(void)argc; (void)argv;
	fill();
	aio_mkdir(0);
	fd = aio_open("e", O_RDWR | O_TRUNC);
	rfd = aio_open("e", O_RDONLY);
	wfd = aio_open("e", O_WRONLY);
	pfd = aio_open("e", O_PATH);
	if (pipe(pipefd))
		dt_fail("pipe");
	efd = eventfd(0, 0);
	io_prep_pwrite(&cb, fd, wbuf[0], 100, 0);
	dt_out("io_submit(nr -1) = %s", aio_res(io_submit(ctx, -1, &p)));
	dt_out("io_submit(nr 0) = %s", aio_res(io_submit(ctx, 0, &p)));
	dt_out("io_submit(bad ctx) = %s", aio_res(io_submit((io_context_t)wbuf, 1, &p)));
	dt_out("io_submit(NULL ctx) = %s", aio_res(io_submit(NULL, 1, &p)));
	dt_out("io_submit(bad iocbpp) = %s", aio_res(io_submit(ctx, 1, dt_badpage)));
	dt_out("io_submit(bad iocb) = %s", aio_res(io_submit(ctx, 1, &bad)));
	*(uint64_t *)((char *)&cb + 48) = 1;   /* aio_reserved2 */
	try1("reserved2", ctx, &cb);
	*(uint64_t *)((char *)&cb + 48) = 0;
	cb.u.c.flags = 4;                                 /* not checked by the kernel */
	try1("unknown flag", ctx, &cb);
	cb.u.c.flags = 0;
	cb.aio_fildes = 999;
	try1("bad fd", ctx, &cb);
	cb.aio_lio_opcode = 77;
	try1("bad fd and opcode", ctx, &cb);
	cb.aio_fildes = pfd;
	cb.aio_lio_opcode = IO_CMD_PWRITE;
	try1("O_PATH fd", ctx, &cb);
	cb.aio_fildes = fd;
	for (int op = 4; op <= 9; op++) {
		char what[32];

		if (op == IO_CMD_POLL || op == IO_CMD_PREADV || op == IO_CMD_PWRITEV)
			continue;
		snprintf(what, sizeof what, "opcode %d", op);
		cb.aio_lio_opcode = (short)op;
		try1(what, ctx, &cb);
	}
	cb.aio_lio_opcode = IO_CMD_PWRITE;
	cb.u.c.nbytes = (unsigned long)-1;
	try1("nbytes -1", ctx, &cb);
	cb.u.c.nbytes = 100;
	cb.u.c.offset = -1;
	try1("offset -1", ctx, &cb);
	cb.u.c.offset = 0x7fffffffffffff00LL;
	try1("offset+size overflow", ctx, &cb);
	cb.u.c.offset = 0;
	cb.aio_fildes = rfd;
	try1("pwrite on O_RDONLY", ctx, &cb);
	cb.aio_fildes = wfd;
	cb.aio_lio_opcode = IO_CMD_PREAD;
	try1("pread on O_WRONLY", ctx, &cb);
	cb.aio_fildes = fd;
	cb.u.c.buf = (void *)8;
	try1("pread into a bad buffer", ctx, &cb);
	cb.aio_lio_opcode = IO_CMD_PWRITE;
	try1("pwrite from a bad buffer", ctx, &cb);
	cb.u.c.buf = (void *)0x10000;
	cb.u.c.nbytes = 0x7ffff001;
	try1("huge size, low buffer", ctx, &cb);
	cb.u.c.buf = (void *)0x7ffffffff000ULL - 10;
	cb.u.c.nbytes = 100;
	try1("buffer past the user top", ctx, &cb);
	cb.u.c.buf = wbuf[0];
	io_prep_pwritev(&cb, fd, many, 1025, 0);
	try1("1025 iovecs", ctx, &cb);
	io_prep_pwritev(&cb, fd, dt_badpage, 2, 0);
	try1("bad iovec array", ctx, &cb);
	many[0] = (struct iovec){ wbuf[0], (size_t)-5 };
	io_prep_pwritev(&cb, fd, many, 1, 0);
	try1("negative iovec length", ctx, &cb);
	io_prep_fsync(&cb, fd);
	cb.u.c.nbytes = 5;
	try1("fsync with nbytes", ctx, &cb);
	io_prep_fsync(&cb, fd);
	cb.u.c.offset = 5;
	try1("fsync with offset", ctx, &cb);
	io_prep_fsync(&cb, fd);
	cb.aio_rw_flags = RWF_SYNC;
	try1("fsync with rw_flags", ctx, &cb);
	io_prep_fdsync(&cb, pipefd[0]);
	try1("fdsync of a pipe", ctx, &cb);
	io_prep_fsync(&cb, rfd);
	try1("fsync of O_RDONLY", ctx, &cb);
	io_prep_pwrite(&cb, fd, wbuf[0], 100, 0);
	cb.u.c.flags = IOCB_FLAG_IOPRIO;
	cb.aio_reqprio = (short)((2 << 13) | 4);
	try1("ioprio best-effort 4", ctx, &cb);
	cb.aio_reqprio = (short)(7 << 13);
	try1("ioprio class 7", ctx, &cb);
	cb.u.c.flags = 0;
	cb.aio_reqprio = 0;
	io_set_eventfd(&cb, 999);
	try1("RESFD bad fd", ctx, &cb);
	io_set_eventfd(&cb, fd);
	try1("RESFD not an eventfd", ctx, &cb);
	io_set_eventfd(&cb, efd);
	cb.aio_fildes = 999;
	try1("RESFD good, bad fd", ctx, &cb);
	cb.aio_fildes = fd;
	cb.u.c.flags = 0;
	{
		struct iocb *ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		*ro = cb;
		mprotect(ro, 4096, PROT_READ);
		try1("read-only iocb", ctx, ro);
		munmap(ro, 4096);
	}
	aio_file_print(fd);
	close(fd); close(rfd); close(wfd); close(pfd); close(pipefd[0]); close(pipefd[1]);
	close(efd);
	aio_rmdir("e");
	aio_rmdir(NULL);
	aio_destroy_p(ctx);
}

/* a bad iocb in the middle stops the submission there */
static void partial(int argc, char **argv)
{
	io_context_t ctx = aio_setup_p(8);
	struct iocb good[3], bad;
	struct iocb *v1[4] = { &good[0], &bad, &good[1], &good[2] };
	struct iocb *v2[2] = { &bad, &good[2] };
	struct iocb *v3[3] = { &good[0], &good[1], (struct iocb *)dt_badpage };
	int fd;

	(void)argc; (void)argv;
	fill();
	aio_mkdir(0);
	fd = aio_open("p", O_RDWR | O_TRUNC);
	for (int i = 0; i < 3; i++) {
		io_prep_pwrite(&good[i], fd, wbuf[i], 10, i * 10);
		good[i].data = (void *)(uintptr_t)(i + 1);
	}
	io_prep_pwrite(&bad, 999, wbuf[0], 10, 0);
	aio_submit_p("good bad good good", ctx, 4, v1);
	aio_submit_p("bad good", ctx, 2, v2);
	aio_submit_p("good good badpointer", ctx, 3, v3);
	aio_reap(ctx, 3, 8);
	aio_file_print(fd);
	close(fd);
	aio_rmdir("p");
	aio_rmdir(NULL);
	aio_destroy_p(ctx);
}

/* io_setup(1) gives a ring of 127 events: how many requests fit.  The
 * kernel hands a ring's free slots to each CPU in batches, so a submitter
 * that moved between CPUs could get fewer: the case stays on one CPU. */
static void full(int argc, char **argv)
{
	io_context_t ctx;
	struct iocb cb[300], *v[300];
	cpu_set_t one;
	int fd, r;

	(void)argc; (void)argv;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
	sched_setaffinity(0, sizeof(one), &one);
	ctx = aio_setup_p(1);
	aio_mkdir(0);
	fd = aio_open("full", O_RDWR | O_TRUNC);
	for (int i = 0; i < 300; i++) {
		io_prep_pwrite(&cb[i], fd, wbuf[0], 1, i);
		cb[i].data = (void *)(uintptr_t)i;
		v[i] = &cb[i];
	}
	aio_submit_p("200", ctx, 200, v);
	aio_submit_p("200 more", ctx, 200, v);
	for (int k = 0; k < 3; k++) {
		struct io_event ev[300];
		struct timespec ts = { 5, 0 };

		r = io_getevents(ctx, 1, 50, ev, &ts);
		dt_out("io_getevents(1, 50) = %s", aio_res(r));
	}
	aio_submit_p("100 after reaping 150", ctx, 100, v);
	{
		struct io_event ev[300];
		struct timespec ts = { 0, 0 };

		r = io_getevents(ctx, 0, 300, ev, &ts);
		dt_out("io_getevents(0, 300, zero timeout) = %s", aio_res(r));
	}
	aio_file_print(fd);
	close(fd);
	aio_rmdir("full");
	aio_rmdir(NULL);
	aio_destroy_p(ctx);
}

static void rwflags(int argc, char **argv)
{
	static const int flags[] = { RWF_HIPRI, RWF_DSYNC, RWF_SYNC, RWF_NOWAIT, RWF_APPEND,
				     0x20, 0x40, 0x80, 0x100, 0x200, 0x400, 0x40000000 };
	io_context_t ctx = aio_setup_p(8);
	struct iocb cb;
	int fd;

	(void)argc; (void)argv;
	fill();
	for (int disk = 0; disk < 2; disk++) {
		aio_mkdir(disk);
		dt_out("-- %s", disk ? "disk" : "tmpfs");
		fd = aio_open("rw", O_RDWR | O_TRUNC);
		for (size_t i = 0; i < DT_NELEM(flags); i++) {
			char what[64];

			snprintf(what, sizeof what, "pwrite rw_flags %#x", flags[i]);
			io_prep_pwrite(&cb, fd, wbuf[i % 3], 10, 0);
			cb.aio_rw_flags = flags[i];
			try1(what, ctx, &cb);
		}
		aio_file_print(fd);
		close(fd);
		aio_rmdir("rw");
		aio_rmdir(NULL);
	}
	aio_destroy_p(ctx);
}

/* IOCB_FLAG_RESFD: the eventfd counts the completions */
static void resfd(int argc, char **argv)
{
	io_context_t ctx = aio_setup_p(8);
	struct iocb cb[3], *v[3] = { &cb[0], &cb[1], &cb[2] };
	uint64_t cnt = 0;
	int fd, efd = eventfd(0, EFD_NONBLOCK);

	(void)argc; (void)argv;
	fill();
	aio_mkdir(0);
	fd = aio_open("r", O_RDWR | O_TRUNC);
	for (int i = 0; i < 3; i++) {
		io_prep_pwrite(&cb[i], fd, wbuf[i], 10, i * 10);
		io_set_eventfd(&cb[i], efd);
		cb[i].data = (void *)(uintptr_t)i;
	}
	io_prep_fsync(&cb[2], fd);
	io_set_eventfd(&cb[2], efd);
	aio_submit_p("3 with RESFD", ctx, 3, v);
	aio_reap(ctx, 3, 3);
	dt_out("eventfd read = %zd count %lu", read(efd, &cnt, 8), (unsigned long)cnt);
	dt_out("eventfd read again = %s", read(efd, &cnt, 8) < 0 ? dt_errname(errno) : "data");
	close(fd);
	close(efd);
	aio_rmdir("r");
	aio_rmdir(NULL);
	aio_destroy_p(ctx);
}

static void cancel(int argc, char **argv)
{
	io_context_t ctx = aio_setup_p(8);
	struct iocb cb, other;
	struct io_event ev;
	int fd;

	(void)argc; (void)argv;
	fill();
	aio_mkdir(0);
	fd = aio_open("c", O_RDWR | O_TRUNC);
	io_prep_pwrite(&cb, fd, wbuf[0], 10, 0);
	aio_submit1("pwrite", ctx, &cb);
	dt_out("io_cancel(done) = %s", aio_res(io_cancel(ctx, &cb, &ev)));
	aio_reap(ctx, 1, 1);
	io_prep_fsync(&cb, fd);
	aio_submit1("fsync", ctx, &cb);
	dt_out("io_cancel(fsync) = %s", aio_res(io_cancel(ctx, &cb, &ev)));
	aio_reap(ctx, 1, 1);
	io_prep_pwrite(&other, fd, wbuf[0], 10, 0);
	dt_out("io_cancel(never submitted) = %s", aio_res(io_cancel(ctx, &other, &ev)));
	other.key = 5;
	dt_out("io_cancel(key 5) = %s", aio_res(io_cancel(ctx, &other, &ev)));
	dt_out("io_cancel(bad ctx) = %s", aio_res(io_cancel((io_context_t)wbuf, &cb, &ev)));
	dt_out("io_cancel(bad iocb) = %s", aio_res(io_cancel(ctx, dt_badpage, &ev)));
	close(fd);
	aio_rmdir("c");
	aio_rmdir(NULL);
	aio_destroy_p(ctx);
}

/* IOCB_CMD_POLL: at once when ready, later when the file becomes ready,
 * cancelled (the only request io_cancel takes), cancelled by io_destroy */
static void poll_cmd(int argc, char **argv)
{
	io_context_t ctx = aio_setup_p(8);
	struct iocb cb, cb2;
	struct io_event ev;
	struct timespec zero = { 0, 0 };
	int pfd[2], fd;

	(void)argc; (void)argv;
	aio_mkdir(0);
	fd = aio_open("poll", O_RDWR | O_TRUNC);
	if (pipe(pfd))
		dt_fail("pipe");
	io_prep_poll(&cb, fd, POLLIN | POLLOUT);
	try1("poll of a regular file", ctx, &cb);
	io_prep_poll(&cb, pfd[1], POLLOUT);
	try1("poll of a pipe's empty write end", ctx, &cb);
	io_prep_poll(&cb, pfd[0], POLLIN);
	cb.u.c.buf = (void *)0x10001;
	try1("poll events past 16 bits", ctx, &cb);
	io_prep_poll(&cb, pfd[0], POLLIN);
	cb.u.c.nbytes = 1;
	try1("poll with nbytes", ctx, &cb);
	io_prep_poll(&cb, pfd[0], POLLIN);
	cb.data = (void *)1;
	aio_submit1("poll of an empty pipe", ctx, &cb);
	dt_out("io_getevents(zero timeout) = %s", aio_res(io_getevents(ctx, 1, 1, &ev, &zero)));
	if (write(pfd[1], "x", 1) != 1)
		dt_fail("write");
	aio_reap(ctx, 1, 1);
	if (read(pfd[0], wbuf[0], 1) != 1)
		dt_fail("read");
	aio_submit1("poll of the empty pipe again", ctx, &cb);
	dt_out("io_cancel(pending poll) = %s", aio_res(io_cancel(ctx, &cb, &ev)));
	dt_out("io_cancel(again) = %s", aio_res(io_cancel(ctx, &cb, &ev)));
	aio_reap(ctx, 1, 1);
	io_prep_poll(&cb2, pfd[0], POLLIN);
	aio_submit1("a poll left pending", ctx, &cb2);
	close(pfd[1]);
	aio_reap(ctx, 1, 1);                   /* the writer gone: POLLHUP */
	close(pfd[0]);
	if (pipe(pfd))
		dt_fail("pipe");
	io_prep_poll(&cb2, pfd[0], POLLIN);
	aio_submit1("a poll pending at io_destroy", ctx, &cb2);
	aio_destroy_p(ctx);
	close(pfd[0]);
	close(pfd[1]);
	close(fd);
	aio_rmdir("poll");
	aio_rmdir(NULL);
}

const struct dt_case dt_cases[] = {
	{ "opcodes", opcodes, 0 },
	{ "direct", direct, 0 },
	{ "errors", errors, 0 },
	{ "partial", partial, 0 },
	{ "full", full, 0 },
	{ "rwflags", rwflags, 0 },
	{ "resfd", resfd, 0 },
	{ "cancel", cancel, 0 },
	{ "poll", poll_cmd, 0 },
	{ "destroy-waits", destroy_waits, 0 },
	{ NULL, NULL, 0 },
};
