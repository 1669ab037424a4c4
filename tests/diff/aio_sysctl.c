/*
 * aio_sysctl.c - native AIO's sysctls through /proc and libc:
 * /proc/sys/fs/aio-max-nr read (open + read, fopen + fgets) and written
 * as root (bad values refused with the kernel's errors and nothing
 * applied; the current value written back whole, with trailing space, and
 * with a second value, whose bytes the write does not consume), a writer
 * without root refused at open; /proc/sys/fs/aio-nr read-only even for
 * root (EACCES at open), and what it counts: io_setup's nr_events per
 * context, given back by io_destroy and by the death of a process holding
 * contexts (SIGKILL).
 *
 * fs.aio-nr is system-wide on the kernel: other processes of the host may
 * change it meanwhile, so a count is taken as the difference around each
 * step and the sequence is tried again (up to 10 times) until no one else
 * disturbed it.  Only the value already there is ever written to the
 * host's aio-max-nr, so the kernel run changes nothing.
 */
#include "aiodt.h"

#include <signal.h>
#include <sys/wait.h>

#define MAXNR "/proc/sys/fs/aio-max-nr"
#define NR    "/proc/sys/fs/aio-nr"

/* the file's text (one line), or "" */
static const char *file_text(const char *path)
{
	static char b[128];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	b[0] = 0;
	if (fd < 0)
		return b;
	n = read(fd, b, sizeof(b) - 1);
	b[n > 0 ? n : 0] = 0;
	close(fd);
	return b;
}

/* the text without its newline, for printing */
static const char *line_of(const char *path)
{
	static char b[128];

	snprintf(b, sizeof b, "%s", file_text(path));
	b[strcspn(b, "\n")] = 0;
	return b;
}

static unsigned long long file_num(const char *path)
{
	return strtoull(file_text(path), NULL, 10);
}

static void show(const char *path)
{
	const char *t = file_text(path);
	size_t n = strlen(t);

	dt_out("%s: %zu bytes, digits then newline: %s", path, n,
	       n > 1 && t[n - 1] == '\n' && strspn(t, "0123456789") == n - 1 ? "yes" : "no");
}

static void read_files(int argc, char **argv)
{
	char line[64];
	FILE *f;

	(void)argc; (void)argv;
	dt_out("aio-max-nr = %s", line_of(MAXNR));
	show(MAXNR);
	show(NR);
	f = fopen(MAXNR, "r");
	dt_out("fgets aio-max-nr: %s", f && fgets(line, sizeof line, f) ? line : "failed\n");
	if (f)
		fclose(f);
	dt_sysctl_get("fs.aio-max-nr");
}

/* ---- what fs.aio-nr counts ---- */

static pid_t holder(int nr, int pipefd)
{
	pid_t pid = fork();

	if (pid == 0) {
		io_context_t c = 0;
		char ok = io_setup(nr, &c) == 0 ? 'y' : 'n';

		if (write(pipefd, &ok, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	return pid;
}

/* one pass of the steps; the deltas in D[]; true if all were as expected */
static int count_pass(long long *d)
{
	unsigned long long base = file_num(NR);
	io_context_t a = 0, b = 0;
	int p[2], st;
	char ok = 0;
	pid_t pid;

	if (io_setup(100, &a) || io_setup(5000, &b))
		dt_fail("io_setup");
	d[0] = (long long)(file_num(NR) - base);
	io_destroy(a);
	d[1] = (long long)(file_num(NR) - base);
	io_destroy(b);
	d[2] = (long long)(file_num(NR) - base);
	if (pipe(p))
		dt_fail("pipe");
	pid = holder(300, p[1]);
	if (read(p[0], &ok, 1) != 1 || ok != 'y')
		dt_fail("holder");
	d[3] = (long long)(file_num(NR) - base);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	d[4] = (long long)(file_num(NR) - base);
	close(p[0]);
	close(p[1]);
	return d[0] == 5100 && d[1] == 5000 && d[2] == 0 && d[3] == 300 && d[4] == 0;
}

static void counts(int argc, char **argv)
{
	long long d[5];

	(void)argc; (void)argv;
	for (int i = 0; i < 10 && !count_pass(d); i++)
		;
	dt_out("io_setup(100) + io_setup(5000): %+lld", d[0]);
	dt_out("io_destroy of the 100: %+lld", d[1]);
	dt_out("io_destroy of the 5000: %+lld", d[2]);
	dt_out("a child holding io_setup(300): %+lld", d[3]);
	dt_out("the child SIGKILLed and reaped: %+lld", d[4]);
}

/* ---- writing ---- */

static void write_max(const char *value)
{
	int fd = open(MAXNR, O_WRONLY);
	long r;

	if (fd < 0) {
		dt_out("open aio-max-nr O_WRONLY = %s", dt_res(-1, errno));
		return;
	}
	errno = 0;
	r = write(fd, value, strlen(value));
	dt_out("write \"%.*s\" (%zu bytes) = %s; now %s", (int)strcspn(value, "\n"), value,
	       strlen(value), dt_res(r, errno), line_of(MAXNR));
	close(fd);
}

static void writes(int argc, char **argv)
{
	static const char *const bad[] = {
		"abc", "-1", "   ", "12x", "18446744073709551616", "-0x10", "+5",
	};
	char cur[64], v[80];
	int fd;

	(void)argc; (void)argv;
	snprintf(cur, sizeof cur, "%llu", file_num(MAXNR));
	for (size_t i = 0; i < DT_NELEM(bad); i++)
		write_max(bad[i]);
	write_max("");
	write_max(cur);
	snprintf(v, sizeof v, "  %s\n", cur);
	write_max(v);
	snprintf(v, sizeof v, "%s 77", cur);
	write_max(v);
	fd = open(NR, O_WRONLY);
	dt_out("open aio-nr O_WRONLY as root = %s", dt_res(fd, errno));
	fd = open(NR, O_RDWR);
	dt_out("open aio-nr O_RDWR as root = %s", dt_res(fd, errno));
	dt_out("fopen aio-nr \"w\" as root: %s", fopen(NR, "w") ? "opened" : dt_errname(errno));
}

static void nobody(void *arg)
{
	io_context_t c[3] = { 0, 0, 0 };

	(void)arg;
	dt_drop_privs(65534, 65534, 65534);
	write_max("65536");
	dt_out("fopen aio-max-nr \"w\" as nobody: %s",
	       fopen(MAXNR, "w") ? "opened" : dt_errname(errno));
	show(MAXNR);
	/* more than the limit in all: the last one is refused */
	dt_out("io_setup(30000) = %s", aio_res(io_setup(30000, &c[0])));
	dt_out("io_setup(30000) = %s", aio_res(io_setup(30000, &c[1])));
	dt_out("io_setup(30000) = %s", aio_res(io_setup(30000, &c[2])));
}

static void writes_nobody(int argc, char **argv)
{
	(void)argc; (void)argv;
	dt_wait(dt_fork(nobody, NULL));
}

const struct dt_case dt_cases[] = {
	{ "read", read_files, 0 },
	{ "counts", counts, 0 },
	{ "writes", writes, 0 },
	{ "nobody", writes_nobody, 0 },
	{ NULL, NULL, 0 },
};
