/*
 * aio_spin.c - the ring thread's spin for new requests (aio/uring.c) is
 * bounded (run under uipc, tests/unit-aio-spin.t):
 *
 *     aio_spin
 *
 * O_DIRECT reads at depth 32 through the default submission (uipc's ring
 * thread enters every request): the data is right; then, with nothing to
 * do, the process spends (nearly) no CPU: the spin ends and the thread
 * sleeps.  The same in a child confined to one CPU before its first
 * request (the ring thread inherits that: it must not spin, the program
 * could not run meanwhile) and in a child with a busy process beside it
 * on every CPU; each reads right and goes idle.
 */
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BLK    4096
#define NBLK   512
#define DEPTH  32
#define READS  3000
/* CPU the whole process may spend in IDLE_MS of nothing to do: a spin
 * that never ends spends all of it */
#define IDLE_MS       500
#define IDLE_CPU_MS    50

#include "tap.h"

static char dir[64], path[128];

static uint32_t word_at(long off)
{
	return (uint32_t)(off / 4 * 2654435761u);
}

/* a disk file of NBLK blocks with a known content, out of the page cache */
static void make_file(void)
{
	static uint32_t b[BLK / 4];
	int fd;

	snprintf(dir, sizeof dir, "/var/tmp/uipc-aiospin.XXXXXX");
	if (!mkdtemp(dir))
		exit(1);
	snprintf(path, sizeof path, "%s/f", dir);
	fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
	for (long k = 0; k < NBLK; k++) {
		for (int i = 0; i < BLK / 4; i++)
			b[i] = word_at(k * BLK + i * 4);
		if (pwrite(fd, b, BLK, k * BLK) != BLK)
			exit(1);
	}
	fsync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
}

static int block_right(const uint32_t *b, long k)
{
	for (int i = 0; i < BLK / 4; i++)
		if (b[i] != word_at(k * BLK + i * 4))
			return 0;
	return 1;
}

/* a read of a random block into slot I of BUF, alone in its io_submit */
static int submit_read(io_context_t ctx, struct iocb *cb, int i, int fd, char *buf, long *blk)
{
	blk[i] = random() % NBLK;
	io_prep_pread(cb, fd, buf + i * BLK, BLK, blk[i] * BLK);
	cb->data = (void *)(long)i;
	return io_submit(ctx, 1, &cb) == 1;
}

/* READS random O_DIRECT reads kept DEPTH deep, each submitted alone (as
 * fio does); 1 if every one read its block right */
static int read_at_depth(void)
{
	io_context_t ctx = 0;
	struct iocb cbs[DEPTH];
	struct io_event ev[DEPTH];
	long blk[DEPTH];
	char *buf;
	int fd = open(path, O_RDONLY | O_DIRECT), right = 1, done = 0, sent = 0;

	if (fd < 0 || posix_memalign((void **)&buf, BLK, BLK * DEPTH) || io_setup(DEPTH, &ctx))
		return 0;
	for (int i = 0; i < DEPTH; i++, sent++)
		if (!submit_read(ctx, &cbs[i], i, fd, buf, blk))
			return 0;
	while (done < READS) {
		int got = io_getevents(ctx, 1, DEPTH, ev, NULL);

		if (got <= 0)
			return 0;
		for (int e = 0; e < got; e++) {
			int i = (int)(long)ev[e].data;

			right &= ev[e].res == BLK && block_right((uint32_t *)(buf + i * BLK), blk[i]);
			done++;
			if (sent >= READS)
				continue;
			if (!submit_read(ctx, &cbs[i], i, fd, buf, blk))
				return 0;
			sent++;
		}
	}
	io_destroy(ctx);
	close(fd);
	free(buf);
	return right;
}

static long cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

/* the process's CPU over IDLE_MS of nothing to do, in ms */
static long idle_cpu_ms(void)
{
	long c0 = cpu_ms();
	struct timespec ts = { IDLE_MS / 1000, IDLE_MS % 1000 * 1000000L };

	nanosleep(&ts, NULL);
	return cpu_ms() - c0;
}

/* reads right and goes idle (in this process): 2 results */
static void check(const char *how)
{
	char what[160];
	long idle;

	snprintf(what, sizeof what, "%s: %d O_DIRECT reads at depth %d read right", how, READS,
		 DEPTH);
	ok(read_at_depth(), what);
	idle = idle_cpu_ms();
	snprintf(what, sizeof what, "%s: then %ld ms of CPU in %d ms idle (at most %d)", how, idle,
		 IDLE_MS, IDLE_CPU_MS);
	ok(idle <= IDLE_CPU_MS, what);
}

/* check() in a child (its own ring thread), confined to one CPU or with
 * a busy process beside it on every CPU */
static void in_child(const char *how, bool one_cpu)
{
	pid_t busy[64];
	int nbusy = 0, st, p[2];
	pid_t pid;

	if (!one_cpu) {
		nbusy = (int)sysconf(_SC_NPROCESSORS_ONLN);
		if (nbusy > 64)
			nbusy = 64;
		for (int i = 0; i < nbusy; i++)
			if ((busy[i] = fork()) == 0)
				for (;;)
					;
	}
	if (pipe(p))
		exit(1);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		cpu_set_t one;

		close(p[0]);
		dup2(p[1], 1);
		tap_n = tap_failed = 0;
		CPU_ZERO(&one);
		CPU_SET(sched_getcpu(), &one);
		if (one_cpu && sched_setaffinity(0, sizeof(one), &one))
			_exit(2);
		check(how);
		_exit(tap_failed ? 1 : 0);
	}
	close(p[1]);
	{
		char line[256];
		FILE *f = fdopen(p[0], "r");

		while (fgets(line, sizeof line, f)) {   /* renumbered as ours */
			char *dash = strstr(line, " - ");
			bool nok = !strncmp(line, "not ok", 6);

			line[strcspn(line, "\n")] = 0;
			ok(!nok, dash ? dash + 3 : line);
		}
		fclose(f);
	}
	waitpid(pid, &st, 0);
	for (int i = 0; i < nbusy; i++) {
		kill(busy[i], SIGKILL);
		waitpid(busy[i], NULL, 0);
	}
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child exits 0");
}

int main(void)
{
	printf("1..8\n");
	make_file();
	check("default");
	in_child("one CPU", true);
	in_child("a busy process on every CPU", false);
	unlink(path);
	rmdir(dir);
	return tap_failed != 0;
}
