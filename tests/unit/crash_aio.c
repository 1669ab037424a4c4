/*
 * crash_aio.c - SIGKILL a process with native AIO writes in flight (run
 * under uipc).  Each round a child writes every block of a file once, in a
 * random order, many requests in flight, and logs each completion it reaps
 * in shared memory; the parent kills it at a random moment.  Then: every
 * block the child saw complete holds exactly what it wrote, every other
 * block holds either nothing or the whole of its write, and a sibling
 * doing AIO of its own at the same time, and the parent's own context, are
 * unaffected.  On tmpfs (inline completions) and on the disk with O_DIRECT
 * (the backend).  After all of it the namespace's fs.aio-nr counts only the
 * parent's own context: the killed writers' events went with them.  Seed:
 * UIPC_CRASH_AIO_SEED (printed).
 */
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BLK     4096
#define NBLK    512
#define DEPTH   32
#define ROUNDS  12

static int n, failed;

static void tap(int ok, const char *what)
{
	printf("%s %d - %s\n", ok ? "ok" : "not ok", ++n, what);
	failed += !ok;
}

/* the bytes of block B in round R */
static void pattern(unsigned char *p, int r, int b)
{
	for (int i = 0; i < BLK; i++)
		p[i] = (unsigned char)(r * 131 + b * 7 + i % 251 + 1);
}

/* the child: all blocks once in a random order, completions logged */
static void writer(int fd, int r, uint8_t *done, unsigned seed)
{
	static int order[NBLK];
	io_context_t ctx = 0;
	struct iocb cb[NBLK], *p;
	unsigned char *bufs;
	struct io_event ev[DEPTH];
	int next = 0, inflight = 0;

	srand(seed);
	for (int i = 0; i < NBLK; i++)
		order[i] = i;
	for (int i = NBLK - 1; i > 0; i--) {
		int j = rand() % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	if (io_setup(DEPTH, &ctx) || posix_memalign((void **)&bufs, BLK, (size_t)BLK * NBLK))
		_exit(2);
	for (int b = 0; b < NBLK; b++)
		pattern(bufs + (size_t)b * BLK, r, b);
	while (next < NBLK || inflight) {
		while (inflight < DEPTH && next < NBLK) {
			int b = order[next++];

			io_prep_pwrite(&cb[b], fd, bufs + (size_t)b * BLK, BLK, (long long)b * BLK);
			cb[b].data = (void *)(uintptr_t)b;
			p = &cb[b];
			if (io_submit(ctx, 1, &p) != 1)
				_exit(3);
			inflight++;
		}
		int got = io_getevents(ctx, 1, DEPTH, ev, NULL);

		for (int i = 0; i < got; i++)
			if (ev[i].res == BLK)
				__atomic_store_n(&done[(uintptr_t)ev[i].data], 1, __ATOMIC_RELEASE);
		inflight -= got > 0 ? got : 0;
	}
	_exit(0);
}

/* a sibling doing its own AIO meanwhile: exits 0 when all went right */
static void sibling(const char *path)
{
	io_context_t ctx = 0;
	struct iocb cb, *p = &cb;
	struct io_event ev;
	char buf[512] = "sibling", back[512];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || io_setup(4, &ctx))
		_exit(2);
	for (int i = 0; i < 2000; i++) {
		io_prep_pwrite(&cb, fd, buf, sizeof buf, 0);
		if (io_submit(ctx, 1, &p) != 1 || io_getevents(ctx, 1, 1, &ev, NULL) != 1 ||
		    ev.res != sizeof buf)
			_exit(4);
		io_prep_pread(&cb, fd, back, sizeof back, 0);
		if (io_submit(ctx, 1, &p) != 1 || io_getevents(ctx, 1, 1, &ev, NULL) != 1 ||
		    ev.res != sizeof back || memcmp(buf, back, sizeof buf))
			_exit(5);
	}
	io_destroy(ctx);
	_exit(0);
}

/* one round; 0 when the file is as the log says */
static int round_check(const char *dir, int direct, int r, unsigned seed, int *killed_busy)
{
	char path[256], spath[256];
	uint8_t *done = mmap(NULL, NBLK, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	unsigned char want[BLK], got[BLK], zero[BLK] = { 0 };
	int fd, rfd, bad = 0, ndone = 0, st;
	pid_t w, s;

	snprintf(path, sizeof path, "%s/crash-aio", dir);
	snprintf(spath, sizeof spath, "%s/crash-aio-sibling", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | (direct ? O_DIRECT : 0), 0600);
	if (fd < 0 || ftruncate(fd, (off_t)BLK * NBLK))
		return -1;
	s = fork();
	if (s == 0)
		sibling(spath);
	w = fork();
	if (w == 0)
		writer(fd, r, done, seed);
	/* O_DIRECT writes take longer: a longer window to be killed in */
	usleep((useconds_t)(seed % (direct ? 8000 : 1500)));
	kill(w, SIGKILL);
	waitpid(w, &st, 0);
	*killed_busy += WIFSIGNALED(st);
	waitpid(s, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		printf("# sibling ended with status %#x\n", st);
		bad++;
	}
	rfd = open(path, O_RDONLY);
	for (int b = 0; b < NBLK; b++) {
		pattern(want, r, b);
		if (pread(rfd, got, BLK, (off_t)b * BLK) != BLK)
			bad++;
		else if (done[b] && memcmp(got, want, BLK))
			bad++, printf("# round %d block %d completed but not in the file\n", r, b);
		else if (!done[b] && memcmp(got, want, BLK) && memcmp(got, zero, BLK))
			bad++, printf("# round %d block %d torn\n", r, b);
		ndone += done[b];
	}
	printf("# %s round %d: %d of %d blocks completed before the kill\n",
	       direct ? "O_DIRECT" : "tmpfs", r, ndone, NBLK);
	close(rfd);
	close(fd);
	unlink(path);
	unlink(spath);
	munmap(done, NBLK);
	return bad;
}

/* /proc/sys/fs/aio-nr as the process sees it (uipc's, preloaded) */
static long aio_nr(void)
{
	FILE *f = fopen("/proc/sys/fs/aio-nr", "r");
	long v = -1;

	if (f && fscanf(f, "%ld", &v) != 1)
		v = -1;
	if (f)
		fclose(f);
	return v;
}

int main(void)
{
	const char *e = getenv("UIPC_CRASH_AIO_SEED");
	unsigned seed = e ? (unsigned)strtoul(e, NULL, 0) : (unsigned)time(NULL);
	char tdir[] = "/dev/shm/uipc-crash-aio.XXXXXX", ddir[] = "/var/tmp/uipc-crash-aio.XXXXXX";
	int bad[2] = { 0, 0 }, killed[2] = { 0, 0 };
	io_context_t ctx = 0;

	setvbuf(stdout, NULL, _IONBF, 0);
	printf("1..6\n# seed %u (UIPC_CRASH_AIO_SEED)\n", seed);
	if (!mkdtemp(tdir) || !mkdtemp(ddir))
		return 1;
	srand(seed);
	for (int r = 0; r < ROUNDS; r++) {
		int direct = r % 2;

		bad[direct] += round_check(direct ? ddir : tdir, direct, r, (unsigned)rand(),
					   &killed[direct]);
	}
	tap(bad[0] == 0, "tmpfs: completed writes are in the file, no block torn, sibling fine");
	tap(bad[1] == 0, "O_DIRECT: completed writes are in the file, no block torn, sibling fine");
	tap(killed[0] + killed[1] > 0, "some writers were killed with I/O still to do");
	tap(io_setup(8, &ctx) == 0, "the parent still sets up a context");
	tap(aio_nr() == 8, "fs.aio-nr counts its 8 events and nothing of the killed writers");
	tap(ctx && io_destroy(ctx) == 0, "and destroys it");
	rmdir(tdir);
	rmdir(ddir);
	return failed != 0;
}
