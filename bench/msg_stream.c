/*
 * bench/msg_stream.c - one-way stream of messages between two processes.
 *
 *   msg_stream [COUNT [SIZE [any|same|split]]]   (1000000 messages of 128 bytes)
 *
 * A forked sender msgsnd()s COUNT messages of SIZE bytes (type 1) to a queue
 * with msgmnb at its default; the parent msgrcv()s them and checks each
 * one's sequence number.  Times from the first receive to the last and
 * prints messages per second.  Placement: any (the scheduler's choice), same
 * (both on the first allowed CPU) or split (two different CPUs).
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include "util.h"

struct mb {
	long mtype;
	char text[65536];
};

int main(int argc, char **argv)
{
	const char *mode = argc > 3 ? argv[3] : "any";
	int cpu_a = -1, cpu_b = -1;
	long count, i;
	size_t size;
	static struct mb m;
	uint64_t t0 = 0, dt;
	int q, status;
	pid_t pid;

	bench_init(argv[0]);
	count = (long)((argc > 1 ? atof(argv[1]) : 1e6) * bench_scale());
	size = argc > 2 ? (size_t)atol(argv[2]) : 128;
	if (count < 1000)
		count = 1000;
	if (size < sizeof(long) || size > sizeof(m.text))
		bench_die(0, "SIZE must be in [%zu, %zu]", sizeof(long), sizeof(m.text));
	if (bench_placement(mode, &cpu_a, &cpu_b))
		bench_die(0, "usage: msg_stream [COUNT [SIZE [any|same|split]]]");
	bench_out_str("placement", mode);
	q = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
	if (q < 0)
		bench_die(errno, "msgget");
	pid = fork();
	if (pid < 0)
		bench_die(errno, "fork");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		bench_pin(cpu_b);
		memset(m.text, 'x', size);
		m.mtype = 1;
		for (i = 0; i < count; i++) {
			memcpy(m.text, &i, sizeof(i));
			if (msgsnd(q, &m, size, 0))
				bench_die(errno, "msgsnd %ld", i);
		}
		_exit(0);
	}
	bench_pin(cpu_a);
	for (i = 0; i < count; i++) {
		long seq;
		ssize_t r = msgrcv(q, &m, sizeof(m.text), 0, 0);

		if (i == 0)
			t0 = bench_now_ns();
		if (r != (ssize_t)size)
			bench_die(errno, "msgrcv %ld returned %zd", i, r);
		memcpy(&seq, m.text, sizeof(seq));
		if (seq != i)
			bench_die(0, "message %ld out of order (got %ld)", i, seq);
	}
	dt = bench_now_ns() - t0;
	if (waitpid(pid, &status, 0) != pid)
		bench_die(errno, "waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		bench_die(0, "sender failed (status %#x)", status);
	if (msgctl(q, IPC_RMID, NULL))
		bench_die(errno, "msgctl(IPC_RMID)");
	bench_out("messages", (double)count);
	bench_out("msg_size", (double)size);
	bench_out("msgs_per_s", (double)(count - 1) / ((double)dt / 1e9));
	bench_out("ns_per_msg", (double)dt / (double)(count - 1));
	return 0;
}
