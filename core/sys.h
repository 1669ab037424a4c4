/*
 * core/sys.h - the system calls uipc makes for itself.
 *
 * entry/ interposes libc's close, mmap, munmap, madvise, ... for the
 * program (an attachment is a vma the kernel would count; a segment's fd
 * is not the program's to close).  uipc's own mappings and descriptors must
 * never go through those hooks, so every layer below entry/ makes these
 * calls here, straight to the kernel.  libc's conventions: -1 and errno
 * (MAP_FAILED for sys_mmap), as the calls they replace.
 */
#ifndef UIPC_CORE_SYS_H
#define UIPC_CORE_SYS_H

#include <limits.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static inline int sys_close(int fd)
{
	return (int)syscall(SYS_close, fd);
}

static inline void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static inline int sys_munmap(void *addr, size_t len)
{
	return (int)syscall(SYS_munmap, addr, len);
}

static inline int sys_madvise(void *addr, size_t len, int advice)
{
	return (int)syscall(SYS_madvise, addr, len, advice);
}

/* wake up to N sleepers on the shared (not process-private) futex word W */
static inline void sys_futex_wake(void *w, int n)
{
	syscall(SYS_futex, w, FUTEX_WAKE, n, NULL, NULL, 0);
}

#endif /* UIPC_CORE_SYS_H */
