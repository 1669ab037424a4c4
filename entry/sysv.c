/*
 * sysv.c - the libc names of the twelve System V IPC calls.  With
 * LD_PRELOAD these stand in front of glibc's semget(), semop(), ...: each
 * passes its arguments to the ipc/ layer's ksys_* and turns the result into
 * libc's convention (-1 and errno).
 *
 * The blocking calls (semop, semtimedop, msgsnd, msgrcv) read the program's
 * handler count as their first load, here, with no call before it: from
 * that point a handler that runs ends their sleep with EINTR, as the
 * kernel's system call entry is the point from which a signal interrupts it
 * (ipc/ipc.h).
 *
 * include/uipc.h's uipc_semget, ... are aliases of these: the same code,
 * reached by programs that link libuipc directly, whoever else defines
 * semget in the process.
 */
#include <stdarg.h>

#include "entry/entry.h"

/* uipc_NAME: another name for NAME's code (with glibc's nothrow and leaf,
 * which gcc wants an alias to repeat) */
#if defined(__clang__)
#define UIPC_ALIAS(name) extern __typeof__(name) uipc_##name __attribute__((alias(#name)))
#else
#define UIPC_ALIAS(name) \
	extern __typeof__(name) uipc_##name __attribute__((alias(#name), copy(name)))
#endif

/* ---- semaphores ---- */

int semget(key_t key, int nsems, int semflg)
{
	return (int)set_errno_ret(ksys_semget(key, nsems, semflg));
}
UIPC_ALIAS(semget);

int semop(int semid, struct sembuf *sops, size_t nsops)
{
	unsigned hand0 = uipc_handler_gen();

	return (int)set_errno_ret(ksys_semtimedop(hand0, semid, sops, nsops, NULL, false));
}
UIPC_ALIAS(semop);

int semtimedop(int semid, struct sembuf *sops, size_t nsops, const struct timespec *timeout)
{
	unsigned hand0 = uipc_handler_gen();

	return (int)set_errno_ret(ksys_semtimedop(hand0, semid, sops, nsops, timeout, true));
}
UIPC_ALIAS(semtimedop);

/* semctl's fourth argument, union semun, is there only for these commands
 * (the others may be called with three arguments) */
static bool semctl_has_arg(int cmd)
{
	switch (cmd) {
	case SETVAL:
	case GETALL:
	case SETALL:
	case IPC_STAT:
	case IPC_SET:
	case IPC_INFO:
	case SEM_INFO:
	case SEM_STAT:
	case SEM_STAT_ANY:
		return true;
	}
	return false;
}

/* the caller's union semun, as the raw system call's unsigned long (an int
 * passed for SETVAL lands in its low bits, where the kernel reads it) */
union semun_any {
	int val;
	void *ptr;
};

static unsigned long semctl_arg(int cmd, va_list ap)
{
	union semun_any arg = { 0 };

	if (semctl_has_arg(cmd))
		arg = va_arg(ap, union semun_any);
	return (unsigned long)(uintptr_t)arg.ptr;
}

int semctl(int semid, int semnum, int cmd, ...)
{
	unsigned long arg;
	va_list ap;

	va_start(ap, cmd);
	arg = semctl_arg(cmd, ap);
	va_end(ap);
	return (int)set_errno_ret(ksys_semctl(semid, semnum, cmd, arg));
}
UIPC_ALIAS(semctl);

/* ---- message queues ---- */

int msgget(key_t key, int msgflg)
{
	return (int)set_errno_ret(ksys_msgget(key, msgflg));
}
UIPC_ALIAS(msgget);

int msgsnd(int msqid, const void *msgp, size_t msgsz, int msgflg)
{
	unsigned hand0 = uipc_handler_gen();

	return (int)set_errno_ret(ksys_msgsnd(hand0, msqid, msgp, msgsz, msgflg));
}
UIPC_ALIAS(msgsnd);

ssize_t msgrcv(int msqid, void *msgp, size_t msgsz, long msgtyp, int msgflg)
{
	unsigned hand0 = uipc_handler_gen();

	return set_errno_ret(ksys_msgrcv(hand0, msqid, msgp, msgsz, msgtyp, msgflg));
}
UIPC_ALIAS(msgrcv);

int msgctl(int msqid, int cmd, struct msqid_ds *buf)
{
	return (int)set_errno_ret(ksys_msgctl(msqid, cmd, buf));
}
UIPC_ALIAS(msgctl);

/* ---- shared memory ---- */

int shmget(key_t key, size_t size, int shmflg)
{
	return (int)set_errno_ret(ksys_shmget(key, size, shmflg));
}
UIPC_ALIAS(shmget);

/* the kernel's raw shmat returns an address, or -errno in the top page */
void *shmat(int shmid, const void *shmaddr, int shmflg)
{
	long r = ksys_shmat(shmid, shmaddr, shmflg);

	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return (void *)-1;
	}
	return (void *)(uintptr_t)r;
}
UIPC_ALIAS(shmat);

int shmdt(const void *shmaddr)
{
	return (int)set_errno_ret(ksys_shmdt(shmaddr));
}
UIPC_ALIAS(shmdt);

int shmctl(int shmid, int cmd, struct shmid_ds *buf)
{
	return (int)set_errno_ret(ksys_shmctl(shmid, cmd, buf));
}
UIPC_ALIAS(shmctl);
