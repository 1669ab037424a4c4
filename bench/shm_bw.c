/*
 * bench/shm_bw.c - bandwidth through a segment between two processes.
 *
 *   shm_bw MIB ROUNDS
 *
 * A segment of MIB MiB (default 64); a writer process fills it, then a
 * reader process (attached on its own, not inherited) reads all of it and
 * checks one word per page; pipes hand the turn over.  Prints the write,
 * read and overall rates in GB/s (10^9 bytes), over ROUNDS rounds (default
 * 20) after one warm-up round.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>
#include "util.h"

static void xread(int fd, void *b, size_t n)
{
	if (read(fd, b, n) != (ssize_t)n)
		bench_die(errno, "read");
}

static void xwrite(int fd, const void *b, size_t n)
{
	if (write(fd, b, n) != (ssize_t)n)
		bench_die(errno, "write");
}

int main(int argc, char **argv)
{
	size_t bytes = (size_t)(argc > 1 ? atol(argv[1]) : 64) << 20;
	int rounds = argc > 2 ? atoi(argv[2]) : 20;
	int to_r[2], to_w[2], id, st;
	uint64_t t_w = 0, t_r = 0;
	pid_t pid;

	bench_init(argv[0]);
	rounds = (int)(rounds * bench_scale());
	if (rounds < 2)
		rounds = 2;
	id = shmget(IPC_PRIVATE, bytes, IPC_CREAT | 0600);
	if (id < 0)
		bench_die(errno, "shmget");
	if (pipe(to_r) || pipe(to_w))
		bench_die(errno, "pipe");
	pid = fork();
	if (pid < 0)
		bench_die(errno, "fork");
	if (pid == 0) {
		/* the reader: its own attachment */
		uint64_t *p = shmat(id, NULL, SHM_RDONLY);
		int r;

		if (p == (void *)-1)
			bench_die(errno, "shmat (reader)");
		for (;;) {
			uint64_t sum = 0, t0;

			xread(to_r[0], &r, sizeof r);
			if (r < 0)
				break;
			t0 = bench_now_ns();
			for (size_t i = 0; i < bytes / 8; i += 4) {
				__asm__ volatile("" : "+r"(sum));
				sum += p[i] ^ p[i + 1];
				sum += p[i + 2] ^ p[i + 3];
			}
			if (p[512 * (size_t)r % (bytes / 8)] != (uint64_t)r)
				bench_die(0, "reader saw stale data");
			t0 = bench_now_ns() - t0;
			(void)sum;
			xwrite(to_w[1], &t0, sizeof t0);
		}
		shmdt(p);
		_exit(0);
	}
	{
		uint64_t *p = shmat(id, NULL, 0);

		if (p == (void *)-1)
			bench_die(errno, "shmat (writer)");
		for (int r = 0; r <= rounds; r++) {
			uint64_t t0 = bench_now_ns(), tr;

			for (size_t i = 0; i < bytes / 8; i++)
				p[i] = (uint64_t)r;
			t0 = bench_now_ns() - t0;
			xwrite(to_r[1], &r, sizeof r);
			xread(to_w[0], &tr, sizeof tr);
			if (r) {  /* round 0 warms up (first touch) */
				t_w += t0;
				t_r += tr;
			}
		}
		{
			int stop = -1;

			xwrite(to_r[1], &stop, sizeof stop);
		}
		waitpid(pid, &st, 0);
		shmdt(p);
	}
	if (shmctl(id, IPC_RMID, NULL) < 0)
		bench_die(errno, "shmctl");
	bench_out("write_gbps", (double)bytes * rounds / (double)t_w);
	bench_out("read_gbps", (double)bytes * rounds / (double)t_r);
	bench_out("gbps", (double)bytes * rounds / (double)(t_w + t_r));
	return 0;
}
