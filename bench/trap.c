/*
 * bench/trap.c - trap mode (entry/trap.c): what a System V call made by
 * system call instruction costs when the seccomp filter sends it to
 * libuipc's SIGSYS handler, against the same instruction on the kernel,
 * and what the filter costs the calls it lets through.
 *
 *   trap semop    semop +1 / -1 by instruction (kernel side: the kernel's;
 *                 uipc side: trapped, served by uipc)
 *   trap libc     the same through libc's semop (uipc side: the preload,
 *                 no trap), for reference
 *   trap getpid   getpid by instruction (uipc side: through the filter)
 *
 * On the uipc side the program turns trap mode on itself
 * (uipc_filter_install, found with dlsym), as UIPC_TRAP=1 would.  Prints
 * ns per call (median of 7 calibrated runs of at least 50 ms each).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include "util.h"

static long insn(long nr, long a, long b, long c)
{
#if defined(__x86_64__)
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return ret;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;

	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory", "cc");
	return x0;
#else
#error "bench/trap.c: x86_64 and aarch64 only"
#endif
}

static int semid;

static void semop_insn(void *arg, long n)
{
	struct sembuf up = { 0, 1, 0 }, down = { 0, -1, 0 };

	(void)arg;
	for (long i = 0; i < n; i += 2)
		if (insn(SYS_semop, semid, (long)&up, 1) || insn(SYS_semop, semid, (long)&down, 1))
			bench_die(EINVAL, "semop by instruction failed");
}

static void semop_libc(void *arg, long n)
{
	struct sembuf up = { 0, 1, 0 }, down = { 0, -1, 0 };

	(void)arg;
	for (long i = 0; i < n; i += 2)
		if (semop(semid, &up, 1) || semop(semid, &down, 1))
			bench_die(errno, "semop");
}

static void getpid_insn(void *arg, long n)
{
	(void)arg;
	for (long i = 0; i < n; i++)
		if (insn(SYS_getpid, 0, 0, 0) <= 0)
			bench_die(EINVAL, "getpid by instruction failed");
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	void (*fn)(void *, long);
	double ns, scale = 5e7;

	bench_init(argv[0]);
	if (!strcmp(what, "semop")) {
		fn = semop_insn;
		scale = 5e6;   /* a trap takes microseconds */
	} else if (!strcmp(what, "libc")) {
		fn = semop_libc;
	} else if (!strcmp(what, "getpid")) {
		fn = getpid_insn;
	} else {
		bench_die(EINVAL, "usage: trap semop|libc|getpid");
	}
	semid = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
	if (semid < 0)
		bench_die(errno, "semget");
	if (bench_side == SIDE_UIPC) {
		int (*install)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "uipc_filter_install");

		if (!install || install(UIPC_FILTER_TRAP) != 0)
			bench_die(errno, "uipc_filter_install(UIPC_FILTER_TRAP)");
	}
	ns = bench_ns_per_op(fn, NULL, (uint64_t)(scale * bench_scale()), 7);
	bench_rmid(semid);
	bench_out("ns_per_op", ns);
	return 0;
}
