/*
 * aio_stream.c - reads and writes on files without a position: pipes,
 * sockets, character devices.  The kernel runs them on the file as read
 * and write would (a pipe ignores aio_offset; a socket wants it 0, else
 * the event says -ESPIPE), inside io_submit: a read of an empty pipe
 * waits there for a writer, an O_NONBLOCK one or RWF_NOWAIT answers
 * -EAGAIN, a write with no reader -EPIPE (SIGPIPE ignored here).
 */
#include "aiodt.h"

#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/uio.h>

static io_context_t ctx;
static char buf[64];

/* one request, submitted and reaped; the data read printed */
static void one(const char *what, struct iocb *cb)
{
	memset(buf, 0, sizeof buf);
	cb->data = (void *)1;
	aio_submit1(what, ctx, cb);
	aio_reap(ctx, 1, 1);
}

static void show_buf(void)
{
	dt_out("  buf \"%s\"", buf);
}

static void setup(void)
{
	ctx = aio_setup_p(16);
	signal(SIGPIPE, SIG_IGN);
}

static void pipes(int argc, char **argv)
{
	struct iocb cb;
	struct iovec v[2] = { { buf, 3 }, { buf + 3, 10 } };
	int p[2];
	char back[16] = "";

	(void)argc; (void)argv;
	setup();
	if (pipe(p))
		dt_fail("pipe");
	dt_out("write = %zd", write(p[1], "hello world", 11));
	io_prep_pread(&cb, p[0], buf, 5, 0);
	one("pread 5 at 0", &cb);
	show_buf();
	io_prep_pread(&cb, p[0], buf, 40, 12345);
	one("pread 40 at 12345 (the offset is ignored)", &cb);
	show_buf();
	dt_out("write = %zd", write(p[1], "abcdefghij", 10));
	io_prep_preadv(&cb, p[0], v, 2, 0);
	one("preadv 3+10", &cb);
	show_buf();
	io_prep_pwrite(&cb, p[1], "xyz", 3, 99);
	one("pwrite 3 at 99", &cb);
	dt_out("read back %zd", read(p[0], back, sizeof back));
	io_prep_pread(&cb, p[0], buf, 8, -1);
	one("pread at offset -1", &cb);
	close(p[0]);
	io_prep_pwrite(&cb, p[1], "xyz", 3, 0);
	one("pwrite with no reader", &cb);
	close(p[1]);
}

static void *later_writer(void *arg)
{
	usleep(200 * 1000);
	if (write(*(int *)arg, "late", 4) != 4)
		dt_fail("write");
	return NULL;
}

static void pipes_empty(int argc, char **argv)
{
	struct iocb cb;
	pthread_t t;
	int p[2];

	(void)argc; (void)argv;
	setup();
	if (pipe(p))
		dt_fail("pipe");
	io_prep_pread(&cb, p[0], buf, 8, 0);
	cb.aio_rw_flags = RWF_NOWAIT;
	one("pread RWF_NOWAIT of an empty pipe", &cb);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	io_prep_pread(&cb, p[0], buf, 8, 0);
	one("pread of an empty O_NONBLOCK pipe", &cb);
	fcntl(p[0], F_SETFL, 0);
	pthread_create(&t, NULL, later_writer, &p[1]);
	io_prep_pread(&cb, p[0], buf, 8, 0);
	one("pread of an empty pipe, written to later", &cb);
	show_buf();
	pthread_join(t, NULL);
	close(p[1]);
	io_prep_pread(&cb, p[0], buf, 8, 0);
	one("pread of a pipe with no writer", &cb);
	close(p[0]);
}

static void sockets(int argc, char **argv)
{
	struct iocb cb;
	int s[2];

	(void)argc; (void)argv;
	setup();
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, s))
		dt_fail("socketpair");
	io_prep_pwrite(&cb, s[0], "ping", 4, 0);
	one("pwrite 4 at 0", &cb);
	io_prep_pread(&cb, s[1], buf, 16, 0);
	one("pread 16 at 0", &cb);
	show_buf();
	io_prep_pwrite(&cb, s[0], "pong", 4, 8);
	one("pwrite at 8", &cb);
	io_prep_pread(&cb, s[1], buf, 16, 8);
	one("pread at 8", &cb);
	io_prep_pread(&cb, s[1], buf, 16, 0);
	cb.aio_rw_flags = RWF_NOWAIT;
	one("pread RWF_NOWAIT, nothing there", &cb);
	shutdown(s[0], SHUT_WR);
	io_prep_pread(&cb, s[1], buf, 16, 0);
	one("pread after the peer's shutdown", &cb);
	close(s[0]);
	close(s[1]);
}

static void devices(int argc, char **argv)
{
	struct iocb cb;
	int z = open("/dev/zero", O_RDONLY), n = open("/dev/null", O_WRONLY);

	(void)argc; (void)argv;
	setup();
	memset(buf, 'x', sizeof buf);
	cb.data = (void *)1;
	io_prep_pread(&cb, z, buf, 16, 4096);
	aio_submit1("pread /dev/zero 16 at 4096", ctx, &cb);
	aio_reap(ctx, 1, 1);
	dt_out("  buf[0..15] zero: %d, buf[16] '%c'", !memcmp(buf, "\0\0\0\0\0\0\0\0", 8), buf[16]);
	io_prep_pwrite(&cb, n, "abc", 3, 1 << 20);
	one("pwrite /dev/null 3 at 1 MiB", &cb);
	close(z);
	close(n);
}

const struct dt_case dt_cases[] = {
	{ "pipes", pipes, 0 },
	{ "pipes_empty", pipes_empty, 0 },
	{ "sockets", sockets, 0 },
	{ "devices", devices, 0 },
	{ NULL, NULL, 0 },
};
