/*
 * aio_kaio_lead.c - a thread asleep in io_getevents for the last request
 * of its context is woken by that request's completion even while another
 * thread, polling another context with zero timeouts, keeps reaping the
 * kernel AIO context that uipc shares between contexts (aio/kaio.c: it
 * posts what it reaps and must not swallow the leader's wake-up).
 * tests/unit-aio-kaio-lead.t runs it on the kernel and under uipc:
 *
 *     aio_kaio_lead [uipc] [block]
 *         uipc: check too that uipc's kernel AIO context served the reads
 *         block: T sleeps in io_getevents for B instead of polling (with
 *         UIPC_AIO_BACKEND=uring: two sleepers in uipc's io_uring, where
 *         T may reap L's completion and its nudge before L is inside the
 *         ring's wait; that needs L held up there, as by a preemption)
 *
 * Each round: context A gets one O_DIRECT read and thread L sleeps in
 * io_getevents(A, 1, NULL) for it; thread T meanwhile submits one O_DIRECT
 * read on context B and polls B with zero timeouts (the system call) until
 * it is back, so that T often reaps A's completion from uipc's kernel
 * context, posts it and nudges L, and then reads that nudge too.  L must
 * return with A's event within WAIT_S seconds; if it does not, the main
 * thread submits a second read on A to let it go and the round fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BLK     (64 * 1024)
#define ROUNDS  200
#define WAIT_S  5

static char dir[64], path[128];
static int fd;
static io_context_t a, b;
static void *abuf, *abuf2, *bbuf;
static atomic_int l_done, t_stop, round_go;
static long l_got, l_res;
static int block;

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static void make_file(void)
{
	static char blk[BLK];
	int w;

	snprintf(dir, sizeof dir, "/var/tmp/uipc-kaiol.XXXXXX");
	if (!mkdtemp(dir))
		die("mkdtemp");
	snprintf(path, sizeof path, "%s/f", dir);
	w = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
	memset(blk, 'k', sizeof blk);
	for (int i = 0; i < 16; i++)
		if (pwrite(w, blk, BLK, (off_t)i * BLK) != BLK)
			die("pwrite");
	fsync(w);
	close(w);
	fd = open(path, O_RDONLY | O_DIRECT);
	if (fd < 0)
		die("open O_DIRECT");
}

static void submit_read(io_context_t ctx, void *buf, long blk)
{
	static __thread struct iocb cb;
	struct iocb *p = &cb;
	int r;

	io_prep_pread(&cb, fd, buf, BLK, blk * BLK);
	r = io_submit(ctx, 1, &p);
	if (r != 1) {
		fprintf(stderr, "io_submit: %s\n", strerror(-r));
		exit(2);
	}
}

/* L: asleep for A's one request */
static void *leader(void *arg)
{
	struct io_event ev[4];

	(void)arg;
	l_got = io_getevents(a, 1, 4, ev, NULL);
	l_res = l_got > 0 ? (long)ev[0].res : 0;
	atomic_store(&l_done, 1);
	return NULL;
}

/* T: each round, one read on B, polled with zero timeouts until it is
 * back (the system call: libaio's io_getevents answers a zero timeout and
 * an empty ring without one), or waited for (block) */
static void *poller(void *arg)
{
	struct timespec zero = { 0, 0 }, nap = { 0, 20000 };
	struct io_event ev[4];
	int seen = 0;

	(void)arg;
	while (!atomic_load(&t_stop)) {
		if (atomic_load(&round_go) == seen) {
			nanosleep(&nap, NULL);
			continue;
		}
		seen = atomic_load(&round_go);
		submit_read(b, bbuf, seen % 16);
		if (block)
			io_getevents(b, 1, 4, ev, NULL);
		else
			while (syscall(SYS_io_getevents, b, 0L, 4L, ev, &zero) < 1)
				;
	}
	return NULL;
}

/* the kernel AIO rings mapped in this process ([aio] in its maps) */
static int aio_rings(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0;

	while (f && fgets(line, sizeof line, f))
		n += strstr(line, "[aio]") != NULL;
	if (f)
		fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	int under_uipc = 0;
	struct timespec t0, now, nap = { 0, 1000000 };
	pthread_t tl, tt;
	int hung = 0, wrong = 0;

	for (int i = 1; i < argc; i++) {
		under_uipc |= !strcmp(argv[i], "uipc");
		block |= !strcmp(argv[i], "block");
	}
	make_file();
	if (posix_memalign(&abuf, 4096, BLK) || posix_memalign(&abuf2, 4096, BLK) ||
	    posix_memalign(&bbuf, 4096, BLK))
		die("posix_memalign");
	if (io_setup(64, &a) || io_setup(64, &b))
		die("io_setup");
	printf("1..%d\n", under_uipc ? 3 : 2);
	pthread_create(&tt, NULL, poller, NULL);
	for (int r = 0; r < ROUNDS; r++) {
		atomic_store(&l_done, 0);
		submit_read(a, abuf, r % 16);
		pthread_create(&tl, NULL, leader, NULL);
		atomic_fetch_add(&round_go, 1);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (;;) {
			if (atomic_load(&l_done))
				break;
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec - t0.tv_sec >= WAIT_S) {
				/* let it go: a second completion on A */
				hung++;
				submit_read(a, abuf2, 0);
				while (!atomic_load(&l_done))
					nanosleep(&nap, NULL);
				break;
			}
			nanosleep(&nap, NULL);
		}
		pthread_join(tl, NULL);
		if (l_got < 1 || l_res != BLK)
			wrong++;
		if (hung) {
			/* drain the release read, if L took the first */
			struct io_event ev[4];
			struct timespec sec = { 1, 0 };
			io_getevents(a, 0, 4, ev, &sec);
			break;
		}
	}
	atomic_store(&t_stop, 1);
	pthread_join(tt, NULL);
	printf("%s 1 - the sleeper in io_getevents woke for its context's last request (%d of %d rounds hung)\n",
	       hung ? "not ok" : "ok", hung, ROUNDS);
	printf("%s 2 - it got that request's event, in full (%d wrong)\n", wrong ? "not ok" : "ok", wrong);
	if (under_uipc) {
		int k = aio_rings();

		printf("%s 3 - uipc's kernel AIO context served them (%d [aio] mapped)\n",
		       k == 1 ? "ok" : "not ok", k);
		wrong += k != 1;
	}
	io_destroy(a);
	io_destroy(b);
	close(fd);
	unlink(path);
	rmdir(dir);
	return hung || wrong;
}
