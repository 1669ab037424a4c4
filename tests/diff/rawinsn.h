/*
 * rawinsn.h - system calls made by instruction (`syscall`, `svc`), past
 * libc and past anything LD_PRELOAD can interpose: what trap mode
 * (tests/diff-trap.t) must catch.  raw_syscall() has syscall()'s
 * convention (-1 and errno), so that a scenario written for syscall() can
 * be built a second time on instructions (#define syscall raw_syscall).
 */
#ifndef DT_RAWINSN_H
#define DT_RAWINSN_H

#include <errno.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <string.h>

#include "dt.h"

static inline long raw_insn6(long nr, long a, long b, long c, long d, long e, long f)
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;

	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory", "cc");
	return x0;
#else
#error "rawinsn.h: x86_64 and aarch64 only"
#endif
}

/* syscall(NR, ...) by instruction, libc's convention */
static inline long raw_syscall(long nr, ...)
{
	long a, b, c, d, e, f, r;
	va_list ap;

	va_start(ap, nr);
	a = va_arg(ap, long);
	b = va_arg(ap, long);
	c = va_arg(ap, long);
	d = va_arg(ap, long);
	e = va_arg(ap, long);
	f = va_arg(ap, long);
	va_end(ap);
	r = raw_insn6(nr, a, b, c, d, e, f);
	if ((unsigned long)r > -4096UL) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* a case of the trap-mode tests: under uipc, trap mode must be on (else
 * the calls by instruction would reach the kernel and pass unseen) */
static inline void need_trap(void)
{
	int (*active)(void);

	if (strcmp(dt_mode, "uipc") != 0)
		return;
	active = (int (*)(void))dlsym(RTLD_DEFAULT, "uipc_filter_active");
	if (!active || !(active() & 1))
		dt_fail("trap mode is not on (uipc_filter_active)");
}

#endif
