/*
 * syscall.c - glibc's syscall(): the door of programs that make System V
 * IPC calls by number (syscall(SYS_semget, ...)) instead of by name.
 *
 * The twelve IPC numbers go to the ipc/ layer with the raw system calls'
 * conventions, which differ from the libc names' in places: semctl's fourth
 * argument is an unsigned long (not a union semun), shmat returns the
 * address as a long, and on x86-64 a cmd with IPC_64 (0x100) OR'ed in is an
 * unknown command (EINVAL): the kernel parses the IPC version only on the
 * architectures that have the old structures, and so does ksys_*ctl.
 * Every other number goes to the kernel untouched, all six argument
 * registers forwarded: a range check and a switch are all it costs.
 *
 * The blocking numbers read the program's handler count first, as sysv.c's
 * semop() does (ipc/ipc.h): syscall() loads it before anything else, for
 * every number, since one thread-local load is cheaper than deciding
 * whether it is needed.
 *
 * Native AIO's numbers go to aio/ the same way.  The numbers that change
 * credentials (capset, setresuid, ...) go to the kernel and then make
 * core/cred.c read the credentials again.  More doors open here by
 * adding a case to entry_sys_serve(): the namespace calls have their place
 * marked below.  trap.c's SIGSYS handler serves a trapped system call
 * instruction with the same function: a number added here is served in
 * trap mode too once trap.c's filter sends it (its list, trap_numbers).
 */
#include <stdarg.h>

#include "aio/aio.h"
#include "entry/entry.h"

/*
 * The numbers uipc serves: sets *RET to the raw result (a value or -errno)
 * and returns true; false for a number that goes to the kernel.  Also the
 * SIGSYS handler's (trap.c), for a system call instruction trapped.
 */
static inline __attribute__((always_inline)) bool sys_serve(long nr, const struct sys_args *x, unsigned hand0, long *ret)
{
	switch (nr) {
	case SYS_semget:
		*ret = ksys_semget((key_t)x->a, (int)x->b, (int)x->c);
		return true;
	case SYS_semop:
		*ret = ksys_semtimedop(hand0, (int)x->a, (struct sembuf *)x->b, (size_t)x->c,
				       NULL, false);
		return true;
	case SYS_semtimedop:
		*ret = ksys_semtimedop(hand0, (int)x->a, (struct sembuf *)x->b, (size_t)x->c,
				       (const struct timespec *)x->d, true);
		return true;
	case SYS_semctl:
		*ret = ksys_semctl((int)x->a, (int)x->b, (int)x->c, (unsigned long)x->d);
		return true;
	case SYS_msgget:
		*ret = ksys_msgget((key_t)x->a, (int)x->b);
		return true;
	case SYS_msgsnd:
		*ret = ksys_msgsnd(hand0, (int)x->a, (const void *)x->b, (size_t)x->c, (int)x->d);
		return true;
	case SYS_msgrcv:
		*ret = ksys_msgrcv(hand0, (int)x->a, (void *)x->b, (size_t)x->c, x->d, (int)x->e);
		return true;
	case SYS_msgctl:
		*ret = ksys_msgctl((int)x->a, (int)x->b, (struct msqid_ds *)x->c);
		return true;
	case SYS_shmget:
		*ret = ksys_shmget((key_t)x->a, (size_t)x->b, (int)x->c);
		return true;
	case SYS_shmat:
		*ret = ksys_shmat((int)x->a, (const void *)x->b, (int)x->c);
		return true;
	case SYS_shmdt:
		*ret = ksys_shmdt((const void *)x->a);
		return true;
	case SYS_shmctl:
		*ret = ksys_shmctl((int)x->a, (int)x->b, (struct shmid_ds *)x->c);
		return true;
	/* native AIO (aio/): libaio and stress-ng make these calls by number */
	case SYS_io_setup:
		*ret = ksys_io_setup((unsigned)x->a, (aio_context_t *)x->b);
		return true;
	case SYS_io_destroy:
		*ret = ksys_io_destroy((aio_context_t)x->a);
		return true;
	case SYS_io_submit:
		*ret = ksys_io_submit(hand0, (aio_context_t)x->a, x->b, (struct iocb **)x->c);
		return true;
	case SYS_io_cancel:
		*ret = ksys_io_cancel((aio_context_t)x->a, (struct iocb *)x->b,
				      (struct io_event *)x->c);
		return true;
	case SYS_io_getevents:
		*ret = ksys_io_getevents(hand0, (aio_context_t)x->a, x->b, x->c,
					 (struct io_event *)x->d, (const struct timespec *)x->e);
		return true;
	case SYS_io_pgetevents:
		*ret = ksys_io_pgetevents(hand0, (aio_context_t)x->a, x->b, x->c,
					  (struct io_event *)x->d, (const struct timespec *)x->e,
					  (const void *)x->f);
		return true;
	/* an mmap of the vma's file: an attachment's is uipc's (ipc/shm.c) */
	case SYS_remap_file_pages:
		*ret = shm_remap_file_pages((void *)x->a, (size_t)x->b, (int)x->c, (size_t)x->d,
					    (int)x->e);
		return true;
	/* credentials changed by number: the kernel changes them, and the
	 * checks that follow must see it (core/cred.c caches them) */
	case SYS_capset:
	case SYS_setuid:
	case SYS_setgid:
	case SYS_setreuid:
	case SYS_setregid:
	case SYS_setresuid:
	case SYS_setresgid:
	case SYS_setfsuid:
	case SYS_setfsgid:
	case SYS_setgroups:
		/* at most three arguments: the sixth register carries the
		 * pass word of trap mode's filter (trap.c), which would
		 * otherwise send the call back to the SIGSYS handler */
		shm_cred_prepare();   /* SHM_RDONLY after the change */
		*ret = sys_pass5(nr, x->a, x->b, x->c, x->d, x->e);
		cred_invalidate();
		return true;
	/* IPC namespaces: unshare(CLONE_NEWIPC) is uipc's (unshare.c), and
	 * so is setns into a uipc namespace (setns.c) */
	case SYS_unshare:
		*ret = entry_unshare((int)x->a);
		return true;
	case SYS_setns:
		*ret = entry_setns((int)x->a, (int)x->b);
		return true;
	/* a new process or image by number: it holds the anonymous
	 * namespace too, which must then never be reset in place
	 * (core/nsfile.c); the kernel makes it */
	case SYS_fork:
	case SYS_vfork:
	case SYS_execve:
	case SYS_execveat:
		ns_note_shared();
		return false;
	/* clone with CLONE_NEWIPC is uipc's (unshare.c), the rest as above */
	case SYS_clone: {
		const long args[5] = { x->a, x->b, x->c, x->d, x->e };

		return entry_clone_raw(args, ret);
	}
	case SYS_clone3:
		return entry_clone3((const void *)x->a, (size_t)x->b, ret);
	}
	return false;
}

/* for trap.c (the same switch, inlined into syscall() below) */
bool entry_sys_serve(long nr, const struct sys_args *x, unsigned hand0, long *ret)
{
	return sys_serve(nr, x, hand0, ret);
}

/* the kernel's raw result in libc's convention: -1 and errno in the top
 * page, anything else is a value (shmat's address included) */
static long raw_ret(long r)
{
	if (unlikely((unsigned long)r > -4096UL)) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

long syscall(long nr, ...)
{
	unsigned hand0 = uipc_handler_gen();
	struct sys_args x;
	va_list ap;
	long r;

	va_start(ap, nr);
	x.a = va_arg(ap, long);
	x.b = va_arg(ap, long);
	x.c = va_arg(ap, long);
	x.d = va_arg(ap, long);
	x.e = va_arg(ap, long);
	x.f = va_arg(ap, long);
	va_end(ap);
	if (unlikely(sys_serve(nr, &x, hand0, &r)))
		return raw_ret(r);
	return raw_ret(sys_raw6(nr, x.a, x.b, x.c, x.d, x.e, x.f));
}
