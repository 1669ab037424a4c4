/*
 * aio_poll.c - IOCB_CMD_POLL's result mask, case by case.  Ready at
 * submission: the file's readiness among the events asked for (plus
 * POLLERR and POLLHUP).  Woken later: the kernel reports the mask its
 * wakeup carried (a pipe written to: POLLIN|POLLRDNORM; a socket's data:
 * POLLIN|POLLPRI|POLLRDNORM|POLLRDBAND; its room: POLLOUT|POLLWRNORM|
 * POLLWRBAND; an eventfd: POLLIN or POLLOUT), whatever was asked among
 * them, and for a wakeup that carries none (a pipe's last writer or reader
 * gone, a socket shut down or closed) the readiness among the events asked
 * for.  A file whose poll never waits (a regular file, /dev/null) is ready
 * for POLLIN and POLLOUT, and a poll for anything else is EINVAL at
 * submission; so is a wait on a file with two wait queues (a FIFO opened
 * for reading and writing, a terminal).  A cancelled poll says 0.
 */
#include "aiodt.h"

#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>

static io_context_t ctx;
static struct iocb cb;

static const char *mask_str(long m)
{
	static char b[8][160];
	static int k;
	static const struct { long bit; const char *name; } names[] = {
		{ POLLIN, "IN" }, { POLLPRI, "PRI" }, { POLLOUT, "OUT" }, { POLLERR, "ERR" },
		{ POLLHUP, "HUP" }, { POLLNVAL, "NVAL" }, { POLLRDNORM, "RDNORM" },
		{ POLLRDBAND, "RDBAND" }, { POLLWRNORM, "WRNORM" }, { POLLWRBAND, "WRBAND" },
		{ POLLMSG, "MSG" }, { POLLRDHUP, "RDHUP" },
	};
	char *p;

	if (m < 0)
		return aio_res(m);
	k = (k + 1) % 8;
	p = b[k];
	*p = 0;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (m & names[i].bit) {
			strcat(p, *p ? "|" : "");
			strcat(p, names[i].name);
			m &= ~names[i].bit;
		}
	if (m)
		sprintf(p + strlen(p), "%s%#lx", *p ? "|" : "", m);
	if (!*p)
		strcpy(p, "0");
	return p;
}

/* a poll for EVENTS on FD: submitted; its event now if it came at once */
static int poll_submit(const char *what, int fd, short events)
{
	struct iocb *p = &cb;
	struct io_event ev;
	struct timespec z = { 0, 0 };
	int r;

	io_prep_poll(&cb, fd, events);
	cb.data = (void *)1;
	r = io_submit(ctx, 1, &p);
	if (r != 1) {
		dt_out("%s: io_submit = %s", what, aio_res(r));
		return 0;
	}
	dt_msleep(30);
	r = io_getevents(ctx, 0, 1, &ev, &z);
	if (r == 1) {
		dt_out("%s: at once, %s", what, mask_str(ev.res));
		return 0;
	}
	dt_out("%s: pending", what);
	return 1;
}

static void cancel_pending(void);

/* the pending poll's event (1 s at most, else it is cancelled) */
static void poll_event(const char *after)
{
	struct io_event ev;
	struct timespec ts = { 1, 0 };
	int r = io_getevents(ctx, 1, 1, &ev, &ts);

	if (r == 1) {
		dt_out("  after %s: %s", after, mask_str(ev.res));
	} else {
		dt_out("  after %s: io_getevents = %s", after, aio_res(r));
		cancel_pending();
	}
}

/* a poll that must not have completed yet */
static void poll_still(void)
{
	struct io_event ev;
	struct timespec ts = { 0, 100000000 };
	int r = io_getevents(ctx, 1, 1, &ev, &ts);

	dt_out("  still pending: %s", r == 0 ? "yes" : mask_str(r == 1 ? (long)ev.res : r));
}

static void setup(void)
{
	ctx = 0;
	if (io_setup(16, &ctx))
		dt_fail("io_setup");
	signal(SIGPIPE, SIG_IGN);
}

static void cancel_pending(void)
{
	struct io_event ev;
	struct timespec ts = { 1, 0 };
	int r;

	dt_out("  io_cancel = %s", aio_res(io_cancel(ctx, &cb, &ev)));
	r = io_getevents(ctx, 1, 1, &ev, &ts);
	dt_out("  after the cancel: %s", r == 1 ? mask_str(ev.res) : aio_res(r));
}

static const short asks[] = { POLLIN, POLLRDNORM, POLLIN | POLLPRI, POLLIN | POLLRDHUP,
			      POLLIN | POLLOUT, POLLRDHUP, POLLHUP, POLLPRI };

static const char *ask_str(short a)
{
	return mask_str(a);
}

/* pipes: the reader woken by a write and by the last writer's close; the
 * writer woken by a read and by the reader's close */
static void pipes(int argc, char **argv)
{
	char what[128], big[65536];
	int p[2];

	(void)argc; (void)argv;
	setup();
	memset(big, 'x', sizeof big);
	for (size_t i = 0; i < sizeof asks / sizeof asks[0]; i++) {
		bool woken_by_write = asks[i] & (POLLIN | POLLRDNORM);

		if (pipe(p))
			dt_fail("pipe");
		snprintf(what, sizeof what, "pipe reader, asks %s", ask_str(asks[i]));
		if (poll_submit(what, p[0], asks[i])) {
			dt_out("  write = %zd", write(p[1], "abc", 3));
			if (woken_by_write) {
				poll_event("a write");
			} else {
				poll_still();
				close(p[1]);
				p[1] = -1;
				poll_event("the writer's close");
			}
		}
		if (p[1] >= 0)
			close(p[1]);
		close(p[0]);
		if (pipe(p))
			dt_fail("pipe");
		snprintf(what, sizeof what, "empty pipe reader, asks %s", ask_str(asks[i]));
		if (poll_submit(what, p[0], asks[i])) {
			close(p[1]);
			p[1] = -1;
			poll_event("the writer's close");
		}
		if (p[1] >= 0)
			close(p[1]);
		close(p[0]);
	}
	/* the writer of a full pipe */
	for (int k = 0; k < 3; k++) {
		short a = k == 0 ? POLLOUT : k == 1 ? POLLWRNORM : POLLOUT | POLLIN;

		if (pipe(p))
			dt_fail("pipe");
		fcntl(p[1], F_SETFL, O_NONBLOCK);
		while (write(p[1], big, sizeof big) > 0)
			;
		snprintf(what, sizeof what, "full pipe writer, asks %s", ask_str(a));
		if (poll_submit(what, p[1], a)) {
			dt_out("  read = %zd", read(p[0], big, sizeof big));
			poll_event("a read");
		}
		snprintf(what, sizeof what, "pipe writer, reader closes, asks %s", ask_str(a));
		while (write(p[1], big, sizeof big) > 0)
			;
		if (poll_submit(what, p[1], a)) {
			close(p[0]);
			p[0] = -1;
			poll_event("the reader's close");
		}
		if (p[0] >= 0)
			close(p[0]);
		close(p[1]);
	}
	aio_destroy_p(ctx);
}

/* AF_UNIX stream sockets: data, shutdown, close, room */
static void sockets(int argc, char **argv)
{
	static char big[1 << 20];
	char what[128];
	int s[2];

	(void)argc; (void)argv;
	setup();
	for (size_t i = 0; i < sizeof asks / sizeof asks[0]; i++) {
		short a = asks[i];

		for (int how = 0; how < 3; how++) {
			static const char *hows[] = { "a send", "the peer's shutdown(SHUT_WR)",
						      "the peer's close" };

			if (socketpair(AF_UNIX, SOCK_STREAM, 0, s))
				dt_fail("socketpair");
			snprintf(what, sizeof what, "socket, asks %s, then %s", ask_str(a), hows[how]);
			if (poll_submit(what, s[0], a)) {
				if (how == 0)
					dt_out("  send = %zd", send(s[1], "abc", 3, 0));
				else if (how == 1)
					shutdown(s[1], SHUT_WR);
				else {
					close(s[1]);
					s[1] = -1;
				}
				if (how == 0 && !(a & (POLLIN | POLLRDNORM | POLLPRI)))
					poll_still(), cancel_pending();
				else
					poll_event(hows[how]);
			}
			close(s[0]);
			if (s[1] >= 0)
				close(s[1]);
		}
	}
	/* room: a full socket, its peer reads */
	for (int k = 0; k < 2; k++) {
		short a = k ? POLLWRBAND : POLLOUT;
		int sz = 4096;
		ssize_t n;

		if (socketpair(AF_UNIX, SOCK_STREAM, 0, s))
			dt_fail("socketpair");
		setsockopt(s[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
		fcntl(s[0], F_SETFL, O_NONBLOCK);
		while (send(s[0], big, sizeof big, 0) > 0)
			;
		snprintf(what, sizeof what, "full socket, asks %s", ask_str(a));
		if (poll_submit(what, s[0], a)) {
			while ((n = recv(s[1], big, sizeof big, MSG_DONTWAIT)) > 0)
				;
			poll_event("the peer's reads");
		}
		close(s[0]);
		close(s[1]);
	}
	aio_destroy_p(ctx);
}

/* eventfd: a write wakes a reader, a read a writer stopped at the top */
static void eventfds(int argc, char **argv)
{
	uint64_t v;
	int e;

	(void)argc; (void)argv;
	setup();
	for (int k = 0; k < 3; k++) {
		short a = k == 0 ? POLLIN : k == 1 ? POLLRDNORM | POLLIN : POLLIN | POLLPRI;

		e = eventfd(0, 0);
		if (poll_submit(k == 0 ? "eventfd at 0, asks IN" : k == 1 ? "eventfd at 0, asks IN|RDNORM"
				       : "eventfd at 0, asks IN|PRI", e, a)) {
			v = 5;
			dt_out("  write = %zd", write(e, &v, 8));
			poll_event("a write");
		}
		close(e);
	}
	e = eventfd(0, EFD_NONBLOCK);
	v = 0xfffffffffffffffeull;
	dt_out("write near the top = %zd", write(e, &v, 8));
	if (poll_submit("eventfd at the top, asks OUT", e, POLLOUT)) {
		dt_out("  read = %zd", read(e, &v, 8));
		poll_event("a read");
	}
	close(e);
	aio_destroy_p(ctx);
}

/* files whose poll never waits, files with two wait queues, cancel */
static void others(int argc, char **argv)
{
	int f, n, fifo_rw, p[2];
	char path[128];

	(void)argc; (void)argv;
	setup();
	aio_mkdir(0);
	f = aio_open("reg", O_RDWR | O_TRUNC);
	poll_submit("regular file, asks IN|OUT", f, POLLIN | POLLOUT);
	poll_submit("regular file, asks IN|PRI|RDHUP", f, POLLIN | POLLPRI | POLLRDHUP);
	poll_submit("regular file, asks PRI", f, POLLPRI);
	poll_submit("regular file, asks RDHUP", f, POLLRDHUP);
	poll_submit("regular file, asks HUP", f, POLLHUP);
	close(f);
	n = open("/dev/null", O_RDWR);
	poll_submit("/dev/null, asks RDNORM|WRNORM", n, POLLRDNORM | POLLWRNORM);
	poll_submit("/dev/null, asks PRI", n, POLLPRI);
	close(n);
	snprintf(path, sizeof path, "%s/fifo", aio_dir);
	if (mkfifo(path, 0600))
		dt_fail("mkfifo");
	fifo_rw = open(path, O_RDWR);
	poll_submit("FIFO opened O_RDWR, asks OUT", fifo_rw, POLLOUT);
	poll_submit("FIFO opened O_RDWR, asks IN (empty)", fifo_rw, POLLIN);
	dt_out("write = %zd", write(fifo_rw, "x", 1));
	poll_submit("FIFO opened O_RDWR, asks IN (data)", fifo_rw, POLLIN);
	close(fifo_rw);
	unlink(path);
	if (pipe(p))
		dt_fail("pipe");
	if (poll_submit("pipe reader, to be cancelled", p[0], POLLIN))
		cancel_pending();
	dt_out("io_cancel again = %s", aio_res(io_cancel(ctx, &cb, NULL)));
	close(p[0]);
	close(p[1]);
	aio_rmdir("reg");
	aio_rmdir(NULL);
	aio_destroy_p(ctx);
}

/* a TCP connection on the loopback: a listener's connection, data, room,
 * a reset, a close; an epoll descriptor; a datagram socket */
static void more(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	struct linger lg = { 1, 0 };
	struct epoll_event ee = { .events = EPOLLIN };
	int l, c, s, ep, e, u[2];
	uint64_t v = 1;

	(void)argc; (void)argv;
	setup();
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 4) ||
	    getsockname(l, (struct sockaddr *)&a, &al))
		dt_fail("listen");
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (poll_submit("TCP listener, asks IN", l, POLLIN)) {
		if (connect(c, (struct sockaddr *)&a, sizeof a))
			dt_fail("connect");
		poll_event("a connection");
	}
	s = accept(l, NULL, NULL);
	if (poll_submit("TCP, asks IN", s, POLLIN)) {
		dt_out("  send = %zd", send(c, "abc", 3, 0));
		poll_event("a send");
	}
	if (poll_submit("TCP with data, asks IN|RDHUP", s, POLLIN | POLLRDHUP)) {
		dt_out("  never");
	}
	dt_out("recv = %zd", recv(s, (char[8]){0}, 8, 0));
	if (poll_submit("TCP, asks RDHUP", s, POLLRDHUP)) {
		shutdown(c, SHUT_WR);
		poll_event("the peer's shutdown(SHUT_WR)");
	}
	close(s);
	close(c);
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(c, (struct sockaddr *)&a, sizeof a))
		dt_fail("connect");
	s = accept(l, NULL, NULL);
	if (poll_submit("TCP, asks IN, the peer resets", s, POLLIN)) {
		setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
		close(c);
		poll_event("the peer's reset");
	}
	close(s);
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(c, (struct sockaddr *)&a, sizeof a))
		dt_fail("connect");
	s = accept(l, NULL, NULL);
	if (poll_submit("TCP, asks IN, the peer closes", s, POLLIN)) {
		close(c);
		poll_event("the peer's close");
	}
	close(s);
	close(l);
	ep = epoll_create1(0);
	e = eventfd(0, 0);
	epoll_ctl(ep, EPOLL_CTL_ADD, e, &ee);
	if (poll_submit("epoll, asks IN", ep, POLLIN)) {
		dt_out("  write = %zd", write(e, &v, 8));
		poll_event("its eventfd's write");
	}
	if (poll_submit("epoll ready, asks IN|RDNORM", ep, POLLIN | POLLRDNORM))
		cancel_pending();
	dt_out("read = %zd", read(e, &v, 8));
	if (poll_submit("epoll, asks RDNORM", ep, POLLRDNORM)) {
		dt_out("  write = %zd", write(e, &v, 8));
		poll_event("its eventfd's write");
	}
	close(e);
	close(ep);
	/* a connected UDP socket whose peer's port is closed: the ICMP error */
	l = socket(AF_INET, SOCK_DGRAM, 0);
	a.sin_port = 0;
	if (bind(l, (struct sockaddr *)&a, sizeof a) || getsockname(l, (struct sockaddr *)&a, &al))
		dt_fail("bind");
	close(l);                             /* a port nobody has now */
	c = socket(AF_INET, SOCK_DGRAM, 0);
	if (connect(c, (struct sockaddr *)&a, sizeof a))
		dt_fail("connect udp");
	if (poll_submit("UDP connected to a closed port, asks IN", c, POLLIN)) {
		dt_out("  send = %zd", send(c, "abc", 3, 0));
		poll_event("the port unreachable");
	}
	close(c);
	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, u))
		dt_fail("socketpair");
	if (poll_submit("AF_UNIX datagram, asks IN", u[0], POLLIN)) {
		dt_out("  send = %zd", send(u[1], "abc", 3, 0));
		poll_event("a send");
	}
	close(u[0]);
	close(u[1]);
	aio_destroy_p(ctx);
}

const struct dt_case dt_cases[] = {
	{ "pipes", pipes, 0 },
	{ "sockets", sockets, 0 },
	{ "eventfds", eventfds, 0 },
	{ "others", others, 0 },
	{ "more", more, 0 },
	{ NULL, NULL, 0 },
};
