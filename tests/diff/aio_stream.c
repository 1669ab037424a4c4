/*
 * aio_stream.c - reads and writes on files without a position: pipes,
 * sockets, character devices.  The kernel runs them on the file as read
 * and write would (a pipe ignores aio_offset; a socket wants it 0, else
 * the event says -ESPIPE), inside io_submit: a read of an empty pipe
 * waits there for a writer, an O_NONBLOCK one or RWF_NOWAIT answers
 * -EAGAIN, a write with no reader -EPIPE (SIGPIPE ignored here).  A
 * handler that runs while io_submit waits there ends the wait: the event
 * says -EINTR, SA_RESTART or not (the kernel cannot restart one request of
 * a batch), or the bytes a write moved before; io_submit counts the
 * request, and the handler has run when io_submit returns.  A signal
 * blocked, or ignored, does not end it.
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

static volatile sig_atomic_t handled;

static void on_usr1(int sig)
{
	(void)sig;
	handled++;
}

struct shot {
	pthread_t to;
	int ms, sig;
};

static void *shooter(void *arg)
{
	struct shot *s = arg;

	dt_msleep(s->ms);
	pthread_kill(s->to, s->sig);
	return NULL;
}

/* REQ submitted while a thread sends SIG to this one after MS ms; the
 * event, the handler's count when io_submit returned */
static void interrupted(const char *what, struct iocb *cb, int sig, int ms)
{
	struct shot s = { pthread_self(), ms, sig };
	pthread_t t;
	int r, h;

	memset(buf, 0, sizeof buf);
	cb->data = (void *)1;
	handled = 0;
	pthread_create(&t, NULL, shooter, &s);
	r = io_submit(ctx, 1, &cb);
	h = (int)handled;
	pthread_join(t, NULL);
	dt_out("io_submit(%s) = %s, handled %d on return", what, aio_res(r), h);
	if (r == 1)
		aio_reap(ctx, 1, 1);
}

static void handler_flags(int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = flags;
	sigaction(SIGUSR1, &sa, NULL);
}

static void *late_reader(void *arg)
{
	char b[4096];
	ssize_t n;

	dt_msleep(300);
	while ((n = read(*(int *)arg, b, sizeof b)) > 0)
		;
	return NULL;
}

static void stream_eintr(int argc, char **argv)
{
	static char big[100000];
	struct iocb cb;
	pthread_t t;
	sigset_t s;
	int p[2], so[2];

	(void)argc; (void)argv;
	setup();
	if (pipe(p) || socketpair(AF_UNIX, SOCK_STREAM, 0, so))
		dt_fail("pipe, socketpair");
	for (int k = 0; k < 2; k++) {
		const char *how = k ? "SA_RESTART" : "no SA_RESTART";
		char what[128];

		handler_flags(k ? SA_RESTART : 0);
		snprintf(what, sizeof what, "pread of an empty pipe, SIGUSR1 (%s) at 100 ms", how);
		io_prep_pread(&cb, p[0], buf, 8, 0);
		interrupted(what, &cb, SIGUSR1, 100);
		snprintf(what, sizeof what, "pread of an empty socket, SIGUSR1 (%s) at 100 ms", how);
		io_prep_pread(&cb, so[1], buf, 8, 0);
		interrupted(what, &cb, SIGUSR1, 100);
		snprintf(what, sizeof what, "preadv of an empty pipe, SIGUSR1 (%s) at 100 ms", how);
		{
			struct iovec v[2] = { { buf, 4 }, { buf + 4, 4 } };

			io_prep_preadv(&cb, p[0], v, 2, 0);
			interrupted(what, &cb, SIGUSR1, 100);
		}
	}
	/* a full pipe: a small write waits whole, a big one moves what fits */
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	while (write(p[1], big, sizeof big) > 0)
		;
	fcntl(p[1], F_SETFL, 0);
	io_prep_pwrite(&cb, p[1], "abc", 3, 0);
	interrupted("pwrite 3 to a full pipe, SIGUSR1 (SA_RESTART) at 100 ms", &cb, SIGUSR1, 100);
	{
		char drain[65536];

		fcntl(p[0], F_SETFL, O_NONBLOCK);
		while (read(p[0], drain, sizeof drain) > 0)
			;
		fcntl(p[0], F_SETFL, 0);
	}
	io_prep_pwrite(&cb, p[1], big, sizeof big, 0);
	interrupted("pwrite 100000 to an empty pipe, SIGUSR1 (SA_RESTART) at 100 ms", &cb,
		    SIGUSR1, 100);
	{
		char drain[65536];
		long total = 0;
		ssize_t n;

		fcntl(p[0], F_SETFL, O_NONBLOCK);
		while ((n = read(p[0], drain, sizeof drain)) > 0)
			total += n;
		fcntl(p[0], F_SETFL, 0);
		dt_out("  the pipe held %ld", total);
	}
	/* a write that completes when a reader comes: no signal, whole */
	pthread_create(&t, NULL, late_reader, &p[0]);
	io_prep_pwrite(&cb, p[1], big, sizeof big, 0);
	one("pwrite 100000 to an empty pipe, read later", &cb);
	close(p[1]);
	pthread_join(t, NULL);
	if (pipe(p))
		dt_fail("pipe");
	/* blocked or ignored: no interruption; the write ends the wait */
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigprocmask(SIG_BLOCK, &s, NULL);
	pthread_create(&t, NULL, later_writer, &p[1]);
	io_prep_pread(&cb, p[0], buf, 8, 0);
	interrupted("pread of an empty pipe, SIGUSR1 blocked at 100 ms, written at 200 ms", &cb,
		    SIGUSR1, 100);
	show_buf();
	pthread_join(t, NULL);
	sigprocmask(SIG_UNBLOCK, &s, NULL);
	dt_out("unblocked: handled %d", (int)handled);
	signal(SIGUSR2, SIG_IGN);
	pthread_create(&t, NULL, later_writer, &p[1]);
	io_prep_pread(&cb, p[0], buf, 8, 0);
	interrupted("pread of an empty pipe, SIGUSR2 ignored at 100 ms, written at 200 ms", &cb,
		    SIGUSR2, 100);
	show_buf();
	pthread_join(t, NULL);
	close(p[0]);
	close(p[1]);
	/* a socket's own timeout: the wait ends with it, -EAGAIN */
	{
		struct timeval tv = { 0, 200000 };
		long long t0;

		setsockopt(so[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		io_prep_pread(&cb, so[1], buf, 8, 0);
		t0 = dt_now_ms();
		one("pread of an empty socket with SO_RCVTIMEO 200 ms", &cb);
		dt_out("  waited about 200 ms: %s", dt_now_ms() - t0 >= 150 ? "yes" : "no");
	}
	close(so[0]);
	close(so[1]);
}

static int stop_pipe[2];

/* in a child: a pipe read inside io_submit; its event's res reported */
static void stop_reader(void *arg)
{
	struct io_event ev;
	struct timespec ts = { 10, 0 };
	struct iocb cb, *p = &cb;
	io_context_t c = 0;
	int r;

	(void)arg;
	if (io_setup(4, &c))
		dt_fail("io_setup in the child");
	io_prep_pread(&cb, stop_pipe[0], buf, 8, 0);
	r = io_submit(c, 1, &p);
	if (r == 1)
		r = io_getevents(c, 1, 1, &ev, &ts);
	dt_chan_send(r == 1 ? (int)ev.res : r, 0, 0);
	io_destroy(c);
}

static void wait_state(pid_t pid, char want)
{
	if (dt_wait_state(pid, want, 5000))
		dt_fail("%d never in state %c", (int)pid, want);
}

/* a stop and a continue while io_submit waits on a pipe: the kernel's
 * wait ends (a signal was pending), the event says -EINTR */
static void stream_stop(int argc, char **argv)
{
	pid_t p;

	(void)argc; (void)argv;
	signal(SIGPIPE, SIG_IGN);
	if (pipe(stop_pipe))
		dt_fail("pipe");
	p = dt_fork(stop_reader, NULL);
	wait_state(p, 'S');
	dt_msleep(50);
	kill(p, SIGSTOP);
	wait_state(p, 'T');
	dt_out("reader stopped");
	kill(p, SIGCONT);
	dt_msleep(200);
	dt_out("write = %zd", write(stop_pipe[1], "late", 4));
	dt_wakes(1);
	dt_wait(p);
}

const struct dt_case dt_cases[] = {
	{ "pipes", pipes, 0 },
	{ "pipes_empty", pipes_empty, 0 },
	{ "sockets", sockets, 0 },
	{ "devices", devices, 0 },
	{ "stream-eintr", stream_eintr, 0 },
	{ "stream-stop", stream_stop, 0 },
	{ NULL, NULL, 0 },
};
