/*
 * bench/futex_pingpong.c - the floor for a semaphore hand-off that sleeps.
 *
 *   futex_pingpong [SECONDS [any|same|split][-busy]]
 *
 * sem_pingpong's loop (A posts s0 and waits for s1, B waits for s0 and
 * posts s1) with two bare counting semaphores in a shared page: a value
 * word, a count of sleepers, FUTEX_WAIT and FUTEX_WAKE, and nothing else
 * (no queue, no lock, no journal, no signal or crash handling, no spin or
 * yield).  Every blocked wait sleeps in the kernel and every post to a
 * sleeper wakes it.  No System V IPC call is made, so it runs the same
 * with or without the library: it is what any user-space semaphore that
 * sleeps pays at least, to be compared with sem_pingpong's kernel side
 * (docs/measurements.md, issue 18's fifth round).  Prints round trips per
 * second, as sem_pingpong does.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "util.h"

struct bare_sem {
	_Atomic uint32_t val;
	_Atomic uint32_t sleepers;
	char pad[56];              /* one cache line each */
};

static void bare_post(struct bare_sem *s)
{
	atomic_fetch_add(&s->val, 1);
	if (atomic_load(&s->sleepers))
		syscall(SYS_futex, &s->val, FUTEX_WAKE, 1, NULL, NULL, 0);
}

static void bare_wait(struct bare_sem *s)
{
	for (;;) {
		uint32_t v = atomic_load(&s->val);

		if (v > 0) {
			if (atomic_compare_exchange_weak(&s->val, &v, v - 1))
				return;
			continue;
		}
		atomic_fetch_add(&s->sleepers, 1);
		if (syscall(SYS_futex, &s->val, FUTEX_WAIT, 0, NULL, NULL, 0) < 0 &&
		    errno != EAGAIN && errno != EINTR)
			bench_die(errno, "FUTEX_WAIT");
		atomic_fetch_sub(&s->sleepers, 1);
	}
}

struct shared {
	struct bare_sem s[2];
	_Atomic int stop;
};

static void side_b(struct shared *sh)
{
	for (;;) {
		bare_wait(&sh->s[0]);
		if (atomic_load(&sh->stop))
			_exit(0);
		bare_post(&sh->s[1]);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "any";
	int cpu_a = -1, cpu_b = -1, busy = 0, status;
	pid_t busy_pid = -1, pid;
	struct shared *sh;
	uint64_t t0, dt, limit;
	long n = 0, i;
	double secs;

	bench_init(argv[0]);
	secs = (argc > 1 ? atof(argv[1]) : 1.0) * bench_scale();
	if (bench_placement_busy(mode, &cpu_a, &cpu_b, &busy))
		bench_die(0, "usage: futex_pingpong [SECONDS [any|same|split][-busy]]");
	bench_out_str("placement", mode);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		bench_die(errno, "mmap");
	pid = fork();
	if (pid < 0)
		bench_die(errno, "fork");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (cpu_b >= 0)
			bench_pin(cpu_b);
		side_b(sh);
	}
	if (cpu_a >= 0)
		bench_pin(cpu_a);
	if (busy)
		busy_pid = bench_busy_start(cpu_a);
	for (i = 0; i < 2000; i++) {		/* warm up */
		bare_post(&sh->s[0]);
		bare_wait(&sh->s[1]);
	}
	limit = (uint64_t)(secs * 1e9);
	t0 = bench_now_ns();
	do {
		for (i = 0; i < 64; i++) {
			bare_post(&sh->s[0]);
			bare_wait(&sh->s[1]);
		}
		n += 64;
		dt = bench_now_ns() - t0;
	} while (dt < limit);
	if (busy_pid > 0)
		bench_busy_stop(busy_pid);
	atomic_store(&sh->stop, 1);
	bare_post(&sh->s[0]);
	if (waitpid(pid, &status, 0) != pid)
		bench_die(errno, "waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		bench_die(0, "process B failed (status %#x)", status);
	bench_out("round_trips", (double)n);
	bench_out("rtt_per_s", (double)n / ((double)dt / 1e9));
	bench_out("ns_per_rtt", (double)dt / (double)n);
	return 0;
}
