/*
 * aio_unshare.c - fs.aio-nr across unshare(CLONE_NEWIPC) (run under uipc,
 * tests/unit-aio-nr-unshare.t).  The kernel's fs.aio-nr is the system's:
 * leaving an IPC namespace changes nothing of it.  uipc's is the
 * namespace's, and a context made before an unshare goes on counting in
 * the namespace where it was made: until its io_destroy, which gives it
 * back there; until the process's exit, its death by SIGKILL, or its
 * exec (the kernel drops the contexts then); through a return into it by
 * setns; and it counts against that namespace's fs.aio-max-nr.  The new
 * namespace counts only the contexts made in it.
 *
 * The main process stays in the first namespace and reads its fs.aio-nr
 * (/proc/sys/fs/aio-nr, served by uipc); children make contexts, unshare,
 * and do what each case says when told (a pipe each way).
 */
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int n, failed;

static void tap(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tap(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", ok ? "ok" : "not ok", ++n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	failed += !ok;
}

/* this process's namespace's fs.aio-nr */
static long aio_nr(void)
{
	char b[64] = "";
	int fd = open("/proc/sys/fs/aio-nr", O_RDONLY);
	ssize_t r = fd >= 0 ? read(fd, b, sizeof b - 1) : -1;

	if (fd >= 0)
		close(fd);
	return r > 0 ? strtol(b, NULL, 10) : -1;
}

/* ---- the child's side: commands, one byte each ---- */

static int cmd_rd, ack_wr;

static void ack(long v)
{
	if (write(ack_wr, &v, sizeof v) != sizeof v)
		_exit(3);
}

static io_context_t setup_ctx(int nr)
{
	io_context_t c = 0;
	int r = io_setup(nr, &c);

	if (r) {
		fprintf(stderr, "io_setup(%d) = %d\n", nr, r);
		_exit(4);
	}
	return c;
}

/* a child: io_setup(FIRST) here, unshare, then commands:
 *   'n' report the new namespace's fs.aio-nr   'm' io_setup(MORE) there
 *   'd' io_destroy the first context            'e' exec this program ("sleep")
 *   'b' setns back into the first namespace     'x' exit
 *   'u' report the first context still works (an io_submit of nothing) */
static void child(int first, int more, int back_fd)
{
	io_context_t c1 = setup_ctx(first), c2 = 0;
	char cmd;

	if (unshare(CLONE_NEWIPC))
		_exit(5);
	ack(0);
	while (read(cmd_rd, &cmd, 1) == 1) {
		switch (cmd) {
		case 'n': ack(aio_nr()); break;
		case 'm': c2 = setup_ctx(more); ack(0); break;
		case 'd': ack(io_destroy(c1)); break;
		case 'u': ack(io_submit(c1, 0, NULL)); break;
		case 'b': ack(setns(back_fd, CLONE_NEWIPC) ? -errno : 0); break;
		case 'e': {
			char *argv[] = { "aio_unshare", "sleep", NULL };

			ack(0);
			execv("/proc/self/exe", argv);
			_exit(6);
		}
		case 'x': (void)c2; _exit(0);
		}
	}
	_exit(0);
}

struct kid {
	pid_t pid;
	int cmd, ack;
};

static struct kid start(int first, int more, int back_fd)
{
	int c[2], a[2];
	struct kid k;
	long v;

	if (pipe(c) || pipe(a))
		exit(2);
	k.pid = fork();
	if (k.pid == 0) {
		close(c[1]);
		close(a[0]);
		cmd_rd = c[0];
		ack_wr = a[1];
		child(first, more, back_fd);
	}
	close(c[0]);
	close(a[1]);
	k.cmd = c[1];
	k.ack = a[0];
	if (read(k.ack, &v, sizeof v) != sizeof v)
		tap(0, "the child did not unshare");
	return k;
}

static long tell(struct kid *k, char cmd)
{
	long v = -999;

	if (write(k->cmd, &cmd, 1) != 1 || read(k->ack, &v, sizeof v) != sizeof v)
		return -999;
	return v;
}

static void finish(struct kid *k)
{
	char x = 'x';
	int st;

	if (write(k->cmd, &x, 1) != 1) {
		/* gone already */
	}
	close(k->cmd);
	close(k->ack);
	waitpid(k->pid, &st, 0);
}

/* fs.aio-nr here, given a moment to settle (a death is seen at once, but
 * the kernel's exit takes a moment) */
static long aio_nr_soon(long want)
{
	long v = aio_nr();

	for (int i = 0; i < 200 && v != want; i++) {
		usleep(10000);
		v = aio_nr();
	}
	return v;
}

int main(int argc, char **argv)
{
	struct kid k;
	long v;
	int me_fd;
	io_context_t c = 0;

	if (argc > 1 && !strcmp(argv[1], "sleep")) {   /* an exec'd child */
		pause();
		return 0;
	}
	signal(SIGPIPE, SIG_IGN);
	me_fd = open("/proc/self/ns/ipc", O_RDONLY);
	tap(aio_nr() == 0, "the first namespace's fs.aio-nr starts at 0 (%ld)", aio_nr());

	/* made here, then unshare: counted here, not there; io_destroy gives back */
	k = start(100, 50, me_fd);
	tap(aio_nr() == 100, "a child's io_setup(100), then its unshare: still 100 here (%ld)",
	    aio_nr());
	v = tell(&k, 'n');
	tap(v == 0, "the child's new namespace counts 0 (%ld)", v);
	v = tell(&k, 'm');
	v = tell(&k, 'n');
	tap(v == 50 && aio_nr() == 100,
	    "io_setup(50) in the new namespace: 50 there (%ld), 100 here (%ld)", v, aio_nr());
	v = tell(&k, 'u');
	tap(v == 0, "the first context still works after the unshare (io_submit = %ld)", v);
	v = tell(&k, 'd');
	tap(v == 0 && aio_nr() == 0, "its io_destroy (%ld) gives the 100 back here: %ld", v,
	    aio_nr());
	v = tell(&k, 'n');
	tap(v == 50, "the new namespace still counts its own 50 (%ld)", v);
	finish(&k);
	tap(aio_nr() == 0, "after the child's exit: 0 here (%ld)", aio_nr());

	/* exit without io_destroy */
	k = start(70, 0, me_fd);
	tap(aio_nr() == 70, "another child's 70, then its unshare: 70 here (%ld)", aio_nr());
	finish(&k);
	v = aio_nr_soon(0);
	tap(v == 0, "it exits without io_destroy: 0 here (%ld)", v);

	/* SIGKILL */
	k = start(40, 0, me_fd);
	tap(aio_nr() == 40, "a child's 40, then its unshare: 40 here (%ld)", aio_nr());
	kill(k.pid, SIGKILL);
	finish(&k);
	v = aio_nr_soon(0);
	tap(v == 0, "it is SIGKILLed: 0 here (%ld)", v);

	/* exec */
	k = start(20, 0, me_fd);
	tap(aio_nr() == 20, "a child's 20, then its unshare: 20 here (%ld)", aio_nr());
	tell(&k, 'e');
	v = aio_nr_soon(0);
	tap(v == 0, "it execs (its contexts go with the old image): 0 here (%ld)", v);
	kill(k.pid, SIGKILL);
	finish(&k);

	/* back by setns */
	k = start(25, 0, me_fd);
	v = tell(&k, 'b');
	tap(v == 0 && aio_nr() == 25, "a child's 25, unshare, setns back (%ld): 25 here (%ld)", v,
	    aio_nr());
	v = tell(&k, 'n');
	tap(v == 25, "the child, back, sees 25 too (%ld)", v);
	v = tell(&k, 'd');
	tap(v == 0 && aio_nr() == 0, "its io_destroy (%ld): 0 (%ld)", v, aio_nr());
	finish(&k);

	/* the limit: what a departed process still holds counts against it */
	k = start(150, 0, me_fd);
	{
		int r = io_setup(100, &c);

		tap(r == -EAGAIN, "fs.aio-max-nr 200 here, a departed child holds 150: io_setup(100) "
		    "here = %d (EAGAIN)", r);
		if (!r)
			io_destroy(c);
		c = 0;
		r = io_setup(50, &c);
		tap(r == 0 && aio_nr() == 200, "io_setup(50) = %d: %ld", r, aio_nr());
		if (!r)
			io_destroy(c);
	}
	tell(&k, 'd');
	finish(&k);
	tap(aio_nr() == 0, "all given back: 0 (%ld)", aio_nr());
	printf("1..%d\n", n);
	return failed != 0;
}
