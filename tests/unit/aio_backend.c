/*
 * aio_backend.c - which backend serves the AIO that cannot complete at
 * once, and that it serves it right (run under uipc, tests/unit-aio-backend.t):
 *
 *     aio_backend DIRECT OTHER    DIRECT: kernel, uring or threads; OTHER:
 *                                 uring or threads
 *
 * Disk files (/var/tmp), O_DIRECT and buffered reads out of the page
 * cache: the data is right; O_DIRECT reads leave a kernel AIO ring mapped
 * ([aio] in /proc/self/maps) exactly when DIRECT is kernel, and an
 * io_uring descriptor exactly when DIRECT is uring; after an fsync (which
 * always needs a backend) the process holds an io_uring descriptor
 * exactly when OTHER is uring; a sleeping io_getevents is woken by the
 * completion; a request survives the exit of the thread that submitted it
 * (io_uring would cancel a request of an exiting submitter); a regular
 * file opened O_NONBLOCK reads in full (io_uring alone would answer
 * -EAGAIN); a fork child has its own working AIO; a program that closes
 * every descriptor it does not know (closefrom) still has working AIO.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BLK   4096
#define NBLK  64

static int n, failed;
static char dir[64], path[128];

static void tap(int ok, const char *what)
{
	printf("%s %d - %s\n", ok ? "ok" : "not ok", ++n, what);
	fflush(stdout);
	failed += !ok;
}

static unsigned char byte_at(long off)
{
	return (unsigned char)(off * 7 / 4096 + off % 253);
}

/* a disk file of NBLK blocks with a known content, out of the page cache */
static void make_file(void)
{
	static unsigned char b[BLK];
	int fd;

	snprintf(dir, sizeof dir, "/var/tmp/uipc-aiob.XXXXXX");
	if (!mkdtemp(dir))
		exit(1);
	snprintf(path, sizeof path, "%s/f", dir);
	fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
	for (long k = 0; k < NBLK; k++) {
		for (int i = 0; i < BLK; i++)
			b[i] = byte_at(k * BLK + i);
		if (pwrite(fd, b, BLK, k * BLK) != BLK)
			exit(1);
	}
	fsync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
}

static int block_right(const unsigned char *b, long k)
{
	for (int i = 0; i < BLK; i++)
		if (b[i] != byte_at(k * BLK + i))
			return 0;
	return 1;
}

/* the descriptors of this process that are io_urings */
static int uring_fds(void)
{
	char p[300], l[64];
	struct dirent *e;
	DIR *d = opendir("/proc/self/fd");
	int c = 0;

	while (d && (e = readdir(d))) {
		ssize_t m;

		snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
		m = readlink(p, l, sizeof l - 1);
		if (m > 0) {
			l[m] = 0;
			c += !strcmp(l, "anon_inode:[io_uring]");
		}
	}
	if (d)
		closedir(d);
	return c;
}

/* the kernel AIO rings mapped in this process */
static int kernel_rings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char l[512];
	int c = 0;

	while (f && fgets(l, sizeof l, f))
		c += strstr(l, "/[aio]") != NULL;
	if (f)
		fclose(f);
	return c;
}

/* read every block of the file through CTX (FLAGS for open), all in
 * flight at once, reaped with a sleeping io_getevents: blocks right */
static int read_all(io_context_t ctx, int flags)
{
	static struct iocb cb[NBLK];
	struct iocb *p[NBLK];
	struct io_event ev[NBLK];
	unsigned char *buf;
	int fd = open(path, O_RDONLY | flags), got = 0, good = 0;

	if (fd < 0 || posix_memalign((void **)&buf, BLK, (size_t)BLK * NBLK))
		return 0;
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	for (int k = 0; k < NBLK; k++) {
		io_prep_pread(&cb[k], fd, buf + (size_t)k * BLK, BLK, (long long)k * BLK);
		cb[k].data = (void *)(long)k;
		p[k] = &cb[k];
	}
	if (io_submit(ctx, NBLK, p) != NBLK)
		return 0;
	while (got < NBLK) {
		int r = io_getevents(ctx, 1, NBLK, ev, NULL);

		if (r <= 0)
			break;
		for (int i = 0; i < r; i++) {
			long k = (long)ev[i].data;

			good += ev[i].res == BLK && block_right(buf + k * BLK, k);
		}
		got += r;
	}
	close(fd);
	free(buf);
	return good == NBLK;
}

/* one IOCB_CMD_FSYNC of the file through CTX, reaped: it succeeded.
 * The buffered reads cannot say which backend serves the rest: on a
 * fast disk the readahead that the first RWF_NOWAIT try starts can finish
 * before the tries of all 64 are over, and then every read completes
 * inside io_submit (as the kernel's own would) and no backend starts.  An
 * fsync always goes to the backend. */
static int fsync_through(io_context_t ctx)
{
	struct iocb cb, *p = &cb;
	struct io_event ev;
	int fd = open(path, O_RDWR), ok;

	if (fd < 0)
		return 0;
	io_prep_fsync(&cb, fd);
	ok = io_submit(ctx, 1, &p) == 1 && io_getevents(ctx, 1, 1, &ev, NULL) == 1 &&
	     ev.obj == &cb && ev.res == 0;
	close(fd);
	return ok;
}

struct sub {
	io_context_t ctx;
	struct iocb cb;
	unsigned char *buf;
	int fd;
};

/* a thread that submits one O_DIRECT read and exits at once */
static void *submit_and_exit(void *arg)
{
	struct sub *s = arg;
	struct iocb *p = &s->cb;

	io_prep_pread(&s->cb, s->fd, s->buf, BLK * 16, 0);
	return (void *)(long)io_submit(s->ctx, 1, &p);
}

static int survives_thread_exit(io_context_t ctx)
{
	struct sub s = { .ctx = ctx };
	struct io_event ev;
	pthread_t t;
	void *r;
	int ok;

	s.fd = open(path, O_RDONLY | O_DIRECT);
	if (s.fd < 0 || posix_memalign((void **)&s.buf, BLK, BLK * 16))
		return 0;
	pthread_create(&t, NULL, submit_and_exit, &s);
	pthread_join(t, &r);
	ok = (long)r == 1 && io_getevents(ctx, 1, 1, &ev, NULL) == 1 && ev.res == BLK * 16;
	for (int k = 0; ok && k < 16; k++)
		ok = block_right(s.buf + k * BLK, k);
	close(s.fd);
	free(s.buf);
	return ok;
}

static int child_has_aio(void)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		io_context_t c = 0;

		_exit(io_setup(64, &c) == 0 && read_all(c, O_DIRECT) ? 0 : 1);
	}
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(int argc, char **argv)
{
	const char *direct = argc > 2 ? argv[1] : "?", *other = argc > 2 ? argv[2] : "?";
	int want_kernel = !strcmp(direct, "kernel"), want_uring = !strcmp(other, "uring");
	io_context_t ctx = 0;
	char what[160];

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("1..9\n");
	make_file();
	if (io_setup(128, &ctx)) {
		printf("Bail out! io_setup failed\n");
		return 1;
	}
	tap(read_all(ctx, O_DIRECT), "64 O_DIRECT reads in flight, reaped by a sleeping io_getevents");
	snprintf(what, sizeof what, "O_DIRECT went to %s: %s kernel AIO ring, %s io_uring descriptor",
		 direct, want_kernel ? "a" : "no", !strcmp(direct, "uring") ? "an" : "no");
	tap((kernel_rings() == 1) == want_kernel &&
	    (uring_fds() == 1) == !strcmp(direct, "uring"), what);
	tap(read_all(ctx, 0), "64 buffered reads, the page cache dropped first");
	tap(fsync_through(ctx), "an fsync through the context");
	{
		/* the count found goes in the line: "none" and "two" have
		 * different causes */
		int u = uring_fds();

		snprintf(what, sizeof what, "the rest went to %s: %s io_uring descriptor (%d found)",
			 other, want_uring ? "an" : "no", u);
		tap((u == 1) == want_uring, what);
	}
	tap(read_all(ctx, O_NONBLOCK), "64 buffered reads of a regular file opened O_NONBLOCK read in full");
	tap(survives_thread_exit(ctx), "a read outlives the thread that submitted it");
	tap(child_has_aio(), "a fork child's own contexts work");
	closefrom(3);           /* a daemon's habit: uipc's own fds stay */
	tap(read_all(ctx, O_DIRECT), "after closefrom(3), O_DIRECT reads still complete");
	io_destroy(ctx);
	unlink(path);
	rmdir(dir);
	return failed != 0;
}
