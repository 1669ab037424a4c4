/*
 * uipc.h - the public interface of uipc, Linux System V IPC in user space.
 *
 * Programs normally get uipc through LD_PRELOAD (`uipc run -- prog`), which
 * replaces the libc entry points semget(), semop(), ... with uipc's.  Programs
 * that link libuipc directly can call the uipc_* names below instead; they
 * behave exactly like the libc calls (return -1 and set errno on failure).
 */
#ifndef UIPC_H
#define UIPC_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <sys/msg.h>
#include <sys/shm.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- System V semaphores ---- */
int uipc_semget(key_t key, int nsems, int semflg);
int uipc_semop(int semid, struct sembuf *sops, size_t nsops);
int uipc_semtimedop(int semid, struct sembuf *sops, size_t nsops,
		    const struct timespec *timeout);
int uipc_semctl(int semid, int semnum, int cmd, ...);

/* ---- System V message queues ---- */
int uipc_msgget(key_t key, int msgflg);
int uipc_msgsnd(int msqid, const void *msgp, size_t msgsz, int msgflg);
ssize_t uipc_msgrcv(int msqid, void *msgp, size_t msgsz, long msgtyp, int msgflg);
int uipc_msgctl(int msqid, int cmd, struct msqid_ds *buf);

/* ---- System V shared memory ---- */
int uipc_shmget(key_t key, size_t size, int shmflg);
void *uipc_shmat(int shmid, const void *shmaddr, int shmflg);
int uipc_shmdt(const void *shmaddr);
int uipc_shmctl(int shmid, int cmd, struct shmid_ds *buf);

/* ---- Namespaces ----
 * A namespace is one file in $UIPC_DIR (default /dev/shm).  The process uses
 * the namespace named by $UIPC_NS (default "default"), opened (and created if
 * missing) on its first IPC call.
 */
#define UIPC_NS_NAME_MAX 64

struct uipc_ns_opts {
	unsigned int mode;        /* file mode; 0 means 0600 (private to the user) */
	int extended;             /* 1: ipcmni_extend mode (2^24 ids, 7-bit seq) */
	unsigned long long size;  /* arena bytes; 0 means the default */
	int shared;               /* 1: a namespace shared between users (needs a
				     group or world mode); 0: per user */
};

/* Create namespace NAME; fails with EEXIST if it exists. */
int uipc_ns_create(const char *name, const struct uipc_ns_opts *opts);
/* Remove namespace NAME's file (objects vanish with it; shm segment files too). */
int uipc_ns_remove(const char *name);
/* Select the namespace this process uses from now on.  Only allowed before the
 * process's first IPC call (EBUSY otherwise). */
int uipc_ns_select(const char *name);
/* Path of the file of namespace NAME (NULL: the current one) into buf. */
int uipc_ns_path(const char *name, char *buf, size_t len);

/* ---- Per-namespace sysctls, named as under /proc/sys ----
 * kernel.sem ("SEMMSL SEMMNS SEMOPM SEMMNI"), kernel.msgmax, kernel.msgmnb,
 * kernel.msgmni, kernel.shmmax, kernel.shmall, kernel.shmmni,
 * kernel.shm_rmid_forced, kernel.sem_next_id, kernel.msg_next_id,
 * kernel.shm_next_id.  Values are text, as /proc/sys shows them.
 */
int uipc_sysctl_get(const char *name, char *buf, size_t len);
int uipc_sysctl_set(const char *name, const char *value);

/* Statistics for reports: arena bytes in use and the arena's size. */
struct uipc_ns_stats {
	unsigned long long arena_size;
	unsigned long long arena_used;
	unsigned long long sem_array_bytes;   /* bytes of an array header */
	unsigned long long sem_bytes;         /* bytes per semaphore */
	int extended;
};
int uipc_ns_stats(struct uipc_ns_stats *st);

/* Check the current namespace's consistency (what `uipc fsck` reports):
 * returns the number of problems found, described in REPORT; -1 on error. */
int uipc_ns_check(char *report, size_t len);

/* ---- seccomp filters (trap mode; docs/usage.md) ----
 * UIPC_FILTER_TRAP: the System V IPC and native AIO system calls made by
 * instruction, unshare(CLONE_NEWIPC), the credential calls and
 * remap_file_pages raise SIGSYS, which libuipc's handler serves (what
 * `uipc run --trap` and UIPC_TRAP=1 install).  UIPC_FILTER_NO_KERNEL_IPC:
 * the kernel's System V IPC and native AIO calls fail with ENOSYS, as on a
 * kernel without them (`uipc run --no-kernel-ipc`, a test mode).  A filter
 * holds for the calling process, all its threads and every process it
 * starts (seccomp filters are inherited over fork and exec, and cannot be
 * removed).  Without CAP_SYS_ADMIN the call sets PR_SET_NO_NEW_PRIVS first:
 * set-user-ID programs run later do not gain privileges.  0 (also when the
 * filter is already there), or -1 and errno (ENOSYS: not on this
 * architecture). */
#define UIPC_FILTER_TRAP          1
#define UIPC_FILTER_NO_KERNEL_IPC 2
int uipc_filter_install(int which);
/* The filters of uipc's in force for the calling process (a mask). */
int uipc_filter_active(void);

#ifdef __cplusplus
}
#endif
#endif /* UIPC_H */
