/*
 * core/sys.h - the system calls uipc makes for itself.
 *
 * entry/ interposes libc's close, mmap, munmap, madvise, ... for the
 * program (an attachment is a vma the kernel would count; a segment's fd
 * is not the program's to close), and stat and readlink (/proc/PID/ns/ipc).  uipc's own mappings and descriptors must
 * never go through those hooks, so every layer below entry/ makes these
 * calls here, straight to the kernel.  libc's conventions: -1 and errno
 * (MAP_FAILED for sys_mmap), as the calls they replace.
 */
#ifndef UIPC_CORE_SYS_H
#define UIPC_CORE_SYS_H

#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

/*
 * The kernel's own convention: the result, or -errno.  entry/ interposes
 * libc's syscall() too (raw callers of the System V numbers reach uipc), so
 * uipc's own system calls are made here, by instruction, and never through
 * that name.
 */
static inline long sys_raw6(long nr, long a, long b, long c, long d, long e, long f)
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
	/* elsewhere libc's, which entry/ passes through unchanged */
	long r = syscall(nr, a, b, c, d, e, f);

	return r == -1 ? -errno : r;
#endif
}

/*
 * Trap mode's pass word (entry/trap.c): the seccomp filter sends the calls uipc
 * must also make itself (credentials, remap_file_pages) to
 * the SIGSYS handler unless their sixth argument register holds this value.
 * Those calls take at most five arguments, so the kernel ignores the sixth.
 */
#define UIPC_SYS_PASS 0x7569706354524150L  /* "uipcTRAP" */
#define UIPC_SYS_PASS_STR "0x7569706354524150"

/*
 * A system call of at most five arguments with the pass word in the sixth
 * register.  The word is put there and wiped again inside one asm
 * statement: left in the register, it would let the program's next call of
 * the pass group through the filter unseen (glibc's four-argument calls do
 * not set the sixth register).
 */
static inline long sys_pass5(long nr, long a, long b, long c, long d, long e)
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	long ret;

	__asm__ volatile("movabs $" UIPC_SYS_PASS_STR ", %%r9\n\t"
			 "syscall\n\t"
			 "xor %%r9d, %%r9d"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
			 : "rcx", "r11", "r9", "memory");
	return ret;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;

	__asm__ volatile("movz x5, #0x4150\n\t"            /* UIPC_SYS_PASS */
			 "movk x5, #0x5452, lsl #16\n\t"
			 "movk x5, #0x7063, lsl #32\n\t"
			 "movk x5, #0x7569, lsl #48\n\t"
			 "svc 0\n\t"
			 "mov x5, xzr"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4)
			 : "x5", "memory", "cc");
	return x0;
#else
	return sys_raw6(nr, a, b, c, d, e, UIPC_SYS_PASS);
#endif
}

/* libc's convention for a raw result: -1 and errno */
static inline long sys_ret(long r)
{
	if ((unsigned long)r > -4096UL) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* syscall(NR, ...) with libc's convention, up to six arguments */
#define sys_syscall(...) sys_syscall_(__VA_ARGS__, 0, 0, 0, 0, 0, 0, 0)
#define sys_syscall_(nr, a, b, c, d, e, f, ...)                                     \
	sys_ret(sys_raw6((long)(nr), (long)(a), (long)(b), (long)(c), (long)(d),       \
			 (long)(e), (long)(f)))

/* open and openat (entry/ interposes them for /proc's IPC files) */
#define sys_open(...) sys_open_(__VA_ARGS__, 0, 0)
#define sys_open_(path, flags, mode, ...) \
	((int)sys_syscall(SYS_openat, AT_FDCWD, (path), (flags), (mode)))
#define sys_openat(...) sys_openat_(__VA_ARGS__, 0, 0)
#define sys_openat_(dfd, path, flags, mode, ...) \
	((int)sys_syscall(SYS_openat, (dfd), (path), (flags), (mode)))

static inline ssize_t sys_write(int fd, const void *buf, size_t len)
{
	return (ssize_t)sys_syscall(SYS_write, fd, buf, len);
}

/* stat, lstat and readlink (entry/ interposes them for /proc/PID/ns/ipc) */
static inline int sys_fstatat(int dfd, const char *path, struct stat *st, int flags)
{
#if defined(SYS_newfstatat)
	return (int)sys_syscall(SYS_newfstatat, dfd, path, st, flags);
#else
	return (int)sys_syscall(SYS_fstatat64, dfd, path, st, flags);
#endif
}

static inline int sys_stat(const char *path, struct stat *st)
{
	return sys_fstatat(AT_FDCWD, path, st, 0);
}

static inline ssize_t sys_readlinkat(int dfd, const char *path, char *buf, size_t len)
{
	return (ssize_t)sys_syscall(SYS_readlinkat, dfd, path, buf, len);
}

static inline int sys_close(int fd)
{
	return (int)sys_syscall(SYS_close, fd);
}

static inline void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return (void *)sys_syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static inline int sys_munmap(void *addr, size_t len)
{
	return (int)sys_syscall(SYS_munmap, addr, len);
}

/* mremap, as libc's (-1 and errno): NEW_ADDR only with MREMAP_FIXED */
static inline void *sys_mremap(void *old, size_t old_len, size_t new_len, int flags,
			       void *new_addr)
{
	return (void *)sys_ret(sys_raw6(SYS_mremap, (long)old, (long)old_len, (long)new_len,
					(long)flags, (long)new_addr, 0));
}

static inline int sys_madvise(void *addr, size_t len, int advice)
{
	return (int)sys_syscall(SYS_madvise, addr, len, advice);
}

/* wake up to N sleepers on the shared (not process-private) futex word W */
static inline void sys_futex_wake(void *w, int n)
{
	sys_syscall(SYS_futex, w, FUTEX_WAKE, n, NULL, NULL, 0);
}

#endif /* UIPC_CORE_SYS_H */
