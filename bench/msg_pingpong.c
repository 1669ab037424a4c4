/*
 * bench/msg_pingpong.c - request/response over one message queue.
 *
 *   msg_pingpong [SECONDS [SIZE]]     (defaults 1 s, 64-byte messages)
 *
 * Process A sends a request (type 1) and waits for the response (type 2);
 * process B (forked) receives requests and answers each.  msgmnb at its
 * default.  A counts round trips for SECONDS after a warm-up, then sends a
 * request of type 3 that tells B to exit.  Prints round trips per second.
 */
#include <errno.h>
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
	char text[4096];
};

static int q;
static size_t size;

static void snd(struct mb *m, long type)
{
	m->mtype = type;
	if (msgsnd(q, m, size, 0))
		bench_die(errno, "msgsnd type %ld", type);
}

static long rcv(struct mb *m, long type)
{
	if (msgrcv(q, m, sizeof(m->text), type, 0) != (ssize_t)size)
		bench_die(errno, "msgrcv type %ld", type);
	return m->mtype;
}

int main(int argc, char **argv)
{
	static struct mb m;
	double secs;
	uint64_t t0, dt, limit;
	long n = 0, i;
	int status;
	pid_t pid;

	bench_init(argv[0]);
	secs = (argc > 1 ? atof(argv[1]) : 1.0) * bench_scale();
	size = argc > 2 ? (size_t)atol(argv[2]) : 64;
	if (size > sizeof(m.text))
		bench_die(0, "SIZE too large");
	memset(m.text, 'p', size);
	q = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
	if (q < 0)
		bench_die(errno, "msgget");
	pid = fork();
	if (pid < 0)
		bench_die(errno, "fork");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;) {
			if (rcv(&m, -3) == 3)
				_exit(0);
			snd(&m, 2);
		}
	}
	for (i = 0; i < 2000; i++) {		/* warm up */
		snd(&m, 1);
		rcv(&m, 2);
	}
	limit = (uint64_t)(secs * 1e9);
	t0 = bench_now_ns();
	do {
		for (i = 0; i < 64; i++) {
			snd(&m, 1);
			rcv(&m, 2);
		}
		n += 64;
		dt = bench_now_ns() - t0;
	} while (dt < limit);
	snd(&m, 3);
	if (waitpid(pid, &status, 0) != pid)
		bench_die(errno, "waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		bench_die(0, "process B failed (status %#x)", status);
	if (msgctl(q, IPC_RMID, NULL))
		bench_die(errno, "msgctl(IPC_RMID)");
	bench_out("round_trips", (double)n);
	bench_out("rtt_per_s", (double)n / ((double)dt / 1e9));
	bench_out("ns_per_rtt", (double)dt / (double)n);
	return 0;
}
