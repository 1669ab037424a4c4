/*
 * bench/doors.c - what the doors of issue 16 cost the calls uipc does not
 * serve: libuipc interposes syscall(), open() and write(), and each lets
 * every other number, path and fd through after a check.  Run with and
 * without the library (the driver's two sides) the figures must agree.
 *
 *   doors getpid     syscall(SYS_getpid)
 *   doors open       open + close of a regular file (O_RDONLY)
 *   doors write      write of one byte to /dev/null
 *
 * Prints ns per call (median of 7 calibrated runs of at least 50 ms each).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "util.h"

static char path[64];
static int devnull;

static void getpid_loop(void *arg, long n)
{
	(void)arg;
	for (long i = 0; i < n; i++)
		if (syscall(SYS_getpid) <= 0)
			bench_die(errno, "syscall(SYS_getpid)");
}

static void open_loop(void *arg, long n)
{
	(void)arg;
	for (long i = 0; i < n; i++) {
		int fd = open(path, O_RDONLY);

		if (fd < 0 || close(fd))
			bench_die(errno, "open/close %s", path);
	}
}

static void write_loop(void *arg, long n)
{
	(void)arg;
	for (long i = 0; i < n; i++)
		if (write(devnull, "x", 1) != 1)
			bench_die(errno, "write /dev/null");
}

int main(int argc, char **argv)
{
	void (*fn)(void *, long);
	const char *what = argc > 1 ? argv[1] : "";
	double ns;
	int fd;

	bench_init(argv[0]);
	snprintf(path, sizeof(path), "/tmp/uipc-bench-doors.%d", (int)getpid());
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
	devnull = open("/dev/null", O_WRONLY);
	if (fd < 0 || devnull < 0)
		bench_die(errno, "set-up");
	close(fd);
	if (!strcmp(what, "getpid"))
		fn = getpid_loop;
	else if (!strcmp(what, "open"))
		fn = open_loop;
	else if (!strcmp(what, "write"))
		fn = write_loop;
	else
		bench_die(EINVAL, "usage: doors getpid|open|write");
	ns = bench_ns_per_op(fn, NULL, (uint64_t)(5e7 * bench_scale()), 7);
	unlink(path);
	bench_out("ns_per_op", ns);
	return 0;
}
