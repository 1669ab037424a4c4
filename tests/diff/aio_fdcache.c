/*
 * aio_fdcache.c - reads and writes on a tmpfs descriptor that has already
 * served several requests (uipc then runs a plain pread or pwrite on it
 * without asking the file's flags again), after the number was made to
 * name something else: another file open for the other direction (by
 * libc's close and open, by dup2, and by raw system calls that no library
 * sees), no file at all, a pipe, a directory; and the errors that come
 * from the file itself (a bad buffer, RLIMIT_FSIZE with its SIGXFSZ,
 * counted), O_APPEND set by fcntl meanwhile.  Every answer, the event's
 * and the iocb's key included, must be the kernel's.
 */
#include "aiodt.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#define GARBAGE_KEY 0x5a5a5a5au

static io_context_t ctx;
static char wbuf[4096], rbuf[4096];

/* one request: io_submit's answer, the key the iocb was left with, and
 * its event when it was submitted */
static void one(const char *what, struct iocb *cb)
{
	cb->key = GARBAGE_KEY;
	cb->data = (void *)7;
	if (aio_submit1(what, ctx, cb) == 1)
		aio_reap(ctx, 1, 1);
	dt_out("  key %s", cb->key == GARBAGE_KEY ? "untouched" : cb->key == 0 ? "0" : "other");
}

static void pwrite1(const char *what, int fd, long off, size_t n)
{
	struct iocb cb;

	io_prep_pwrite(&cb, fd, wbuf, n, off);
	one(what, &cb);
}

static void pread1(const char *what, int fd, long off, size_t n)
{
	struct iocb cb;

	memset(rbuf, 0, sizeof rbuf);
	io_prep_pread(&cb, fd, rbuf, n, off);
	one(what, &cb);
	dt_out("  read \"%.12s\"", rbuf);
}

/* a tmpfs file at FD that has served a few reads and writes */
static int warm(const char *name)
{
	int fd = aio_open(name, O_RDWR | O_TRUNC);

	memset(wbuf, 'w', sizeof wbuf);
	for (int i = 0; i < 4; i++)
		pwrite1("warm pwrite", fd, i * 100, 100);
	pread1("warm pread", fd, 0, 10);
	return fd;
}

static void setup(void)
{
	ctx = aio_setup_p(8);
	aio_mkdir(0);
}

static void teardown(const char *const *names)
{
	for (; *names; names++)
		aio_rmdir(*names);
	aio_rmdir(NULL);
	aio_destroy_p(ctx);
}

/* the number named another file, opened for reading only, then writing
 * only: libc's close and open (which uipc sees) */
static void reopen(int argc, char **argv)
{
	static const char *const names[] = { "a", "b", NULL };
	int fd, fd2;

	(void)argc; (void)argv;
	setup();
	fd = warm("a");
	close(fd);
	fd2 = aio_open("b", O_RDONLY);
	dt_out("same number: %d", fd2 == fd);
	pwrite1("pwrite on a read-only file", fd2, 0, 10);
	pread1("pread on it", fd2, 0, 10);
	close(fd2);
	fd2 = aio_open("b", O_WRONLY);
	pread1("pread on a write-only file", fd2, 0, 10);
	pwrite1("pwrite on it", fd2, 0, 10);
	close(fd2);
	pread1("pread on the closed number", fd2, 0, 10);
	teardown(names);
}

/* the same by raw system calls (syscall(2): no library sees them) */
static void raw_reopen(int argc, char **argv)
{
	static const char *const names[] = { "a", "b", NULL };
	char p[128];
	int fd, fd2;

	(void)argc; (void)argv;
	setup();
	fd = warm("a");
	snprintf(p, sizeof p, "%s/b", aio_dir);
	syscall(SYS_close, fd);
	fd2 = (int)syscall(SYS_openat, AT_FDCWD, p, O_WRONLY | O_CREAT, 0600);
	dt_out("same number: %d", fd2 == fd);
	pread1("pread on a write-only file", fd2, 0, 10);
	pwrite1("pwrite on it", fd2, 0, 10);
	syscall(SYS_close, fd2);
	fd2 = (int)syscall(SYS_openat, AT_FDCWD, p, O_RDONLY);
	pwrite1("pwrite on a read-only file", fd2, 0, 10);
	pread1("pread on it", fd2, 0, 10);
	syscall(SYS_close, fd2);
	pread1("pread on the closed number", fd2, 0, 10);
	pwrite1("pwrite on the closed number", fd2, 0, 10);
	fd2 = (int)syscall(SYS_openat, AT_FDCWD, p, O_PATH);
	dt_out("same number: %d", fd2 == fd);
	pread1("pread on an O_PATH descriptor", fd2, 0, 10);
	syscall(SYS_close, fd2);
	teardown(names);
}

/* dup2 and a raw dup2 of a read-only file onto the number */
static void dup_onto(int argc, char **argv)
{
	static const char *const names[] = { "a", "b", NULL };
	int fd, ro;

	(void)argc; (void)argv;
	setup();
	fd = warm("a");
	ro = aio_open("b", O_RDONLY);
	dup2(ro, fd);
	pwrite1("pwrite after dup2 of a read-only file", fd, 0, 10);
	pread1("pread", fd, 0, 10);
	close(fd);
	fd = warm("a");
	syscall(SYS_dup2, ro, fd);
	pwrite1("pwrite after a raw dup2 of a read-only file", fd, 0, 10);
	pread1("pread", fd, 0, 10);
	close(fd);
	close(ro);
	teardown(names);
}

/* a pipe and a directory put at the number by raw dup2 */
static void not_a_file(int argc, char **argv)
{
	static const char *const names[] = { "a", NULL };
	struct iocb cb;
	int fd, p[2], dir;

	(void)argc; (void)argv;
	setup();
	signal(SIGPIPE, SIG_IGN);
	fd = warm("a");
	if (pipe(p))
		dt_fail("pipe");
	dt_out("write = %zd", write(p[1], "through the pipe", 16));
	syscall(SYS_dup2, p[0], fd);
	pread1("pread on a pipe", fd, 0, 7);
	pread1("pread at 4096 on a pipe", fd, 4096, 20);
	syscall(SYS_dup2, p[1], fd);
	pwrite1("pwrite on a pipe", fd, 0, 5);
	dt_out("pipe holds %zd", read(p[0], rbuf, sizeof rbuf));
	dir = open(aio_dir, O_RDONLY | O_DIRECTORY);
	syscall(SYS_dup2, dir, fd);
	pread1("pread on a directory", fd, 0, 10);
	close(dir);
	dir = open("/var/tmp", O_RDONLY | O_DIRECTORY);
	syscall(SYS_dup2, dir, fd);
	pread1("pread on a directory on the disk", fd, 0, 10);
	close(dir);
	dir = open(aio_dir, O_RDONLY | O_DIRECTORY);
	pread1("pread on a directory, fresh", dir, 0, 10);
	io_prep_pread(&cb, dir, (void *)0xffff800000000000ul, 10, 0);
	one("pread on it into the kernel's half", &cb);
	close(dir);
	dir = open("/var/tmp", O_RDONLY | O_DIRECTORY);
	pread1("pread on a directory on the disk, fresh", dir, 0, 10);
	close(dir);
	close(fd);
	close(p[0]);
	close(p[1]);
	teardown(names);
}

static volatile sig_atomic_t xfsz;

static void on_xfsz(int sig)
{
	(void)sig;
	xfsz++;
}

/* errors from the file itself: each an event, once */
static void file_errors(int argc, char **argv)
{
	static const char *const names[] = { "a", NULL };
	struct rlimit rl = { 8192, RLIM_INFINITY }, old;
	struct iocb cb;
	int fd;

	(void)argc; (void)argv;
	setup();
	fd = warm("a");
	io_prep_pread(&cb, fd, dt_badpage, 10, 0);
	one("pread into an unmapped page", &cb);
	io_prep_pwrite(&cb, fd, dt_badpage, 10, 0);
	one("pwrite from an unmapped page", &cb);
	signal(SIGXFSZ, on_xfsz);
	getrlimit(RLIMIT_FSIZE, &old);
	setrlimit(RLIMIT_FSIZE, &rl);
	pwrite1("pwrite past RLIMIT_FSIZE", fd, 8192, 10);
	pwrite1("pwrite across it", fd, 8190, 10);
	setrlimit(RLIMIT_FSIZE, &old);
	dt_out("SIGXFSZ handled %d times", (int)xfsz);
	pread1("pread past the end", fd, 100000, 10);
	pread1("pread of nothing", fd, 0, 0);
	aio_file_print(fd);
	close(fd);
	teardown(names);
}

/* O_APPEND set by fcntl after the descriptor was known: writes append */
static void append(int argc, char **argv)
{
	static const char *const names[] = { "a", NULL };
	int fd;

	(void)argc; (void)argv;
	setup();
	fd = warm("a");
	dt_out("F_SETFL O_APPEND = %d", fcntl(fd, F_SETFL, O_APPEND));
	memset(wbuf, 'A', 20);
	pwrite1("pwrite at 0, O_APPEND", fd, 0, 20);
	aio_file_print(fd);
	pread1("pread at 400", fd, 400, 12);
	close(fd);
	teardown(names);
}

const struct dt_case dt_cases[] = {
	{ "reopen", reopen, 0 },
	{ "raw-reopen", raw_reopen, 0 },
	{ "dup-onto", dup_onto, 0 },
	{ "not-a-file", not_a_file, 0 },
	{ "file-errors", file_errors, 0 },
	{ "append", append, 0 },
	{ NULL, NULL, 0 },
};
