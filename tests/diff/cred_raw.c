/*
 * cred_raw.c - credentials changed behind libc's back, through syscall():
 * the permission checks that follow use the new ones, as the kernel's do.
 * Root drops CAP_IPC_OWNER from its effective set with
 * syscall(SYS_capset) and then meets an array of mode 0 (its own) and one
 * of mode 0600 owned by another uid; root becomes uid 65534 with
 * syscall(SYS_setresuid); a second thread drops the capability for itself
 * only (capabilities are per thread), or becomes uid 65534 for itself only
 * (the system call changes the calling thread; libc's setresuid changes
 * every thread, which the last case checks).  Each case runs in its own
 * process.  tests/diff-trap.t builds the same cases on system call
 * instructions (trap_cred.c).
 */
#include "dt.h"

#include <errno.h>
#include <linux/capability.h>
#include <pthread.h>
#include <string.h>
#include <sys/sem.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *res(long r)
{
	return dt_res(r, errno);
}

/* drop CAP (from the effective set only) of the calling thread */
static long drop_effective(int cap)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d) < 0)
		return -1;
	d[cap / 32].effective &= ~(1u << (cap % 32));
	return syscall(SYS_capset, &h, d);
}

/* what semctl GETVAL, semop and IPC_STAT say of ID now */
static void probe(const char *who, int id)
{
	struct sembuf up = { 0, 1, IPC_NOWAIT };
	struct semid_ds ds;

	dt_out("%s: GETVAL = %s", who, res(semctl(id, 0, GETVAL)));
	dt_out("%s: semop +1 = %s", who, res(semop(id, &up, 1)));
	dt_out("%s: IPC_STAT = %s", who, res(semctl(id, 0, IPC_STAT, &ds)));
}

/* an array of MODE owned by UID (root creates it, then gives it away) */
static int array_of(int mode, uid_t uid)
{
	struct semid_ds ds;
	int id = semget(IPC_PRIVATE, 1, mode);

	if (id < 0)
		dt_fail("semget: %s", dt_errname(errno));
	memset(&ds, 0, sizeof(ds));
	ds.sem_perm.uid = uid;
	ds.sem_perm.gid = 0;
	ds.sem_perm.mode = (unsigned short)mode;
	if (semctl(id, 0, IPC_SET, &ds) < 0)
		dt_fail("IPC_SET: %s", dt_errname(errno));
	return id;
}

static void capset_drop(int argc, char **argv)
{
	int own, other;

	(void)argc, (void)argv;
	own = array_of(0, 0);
	other = array_of(0600, 12345);
	probe("root, mode 0", own);
	probe("root, another's 0600", other);
	dt_out("capset without CAP_IPC_OWNER = %s", res(drop_effective(CAP_IPC_OWNER)));
	probe("no CAP_IPC_OWNER, mode 0", own);
	probe("no CAP_IPC_OWNER, another's 0600", other);
	dt_out("IPC_RMID own = %s", res(semctl(own, 0, IPC_RMID)));
	dt_out("IPC_RMID another's = %s", res(semctl(other, 0, IPC_RMID)));
	semctl(other, 0, IPC_RMID);
}

static void setresuid_raw(int argc, char **argv)
{
	int id;

	(void)argc, (void)argv;
	id = array_of(0600, 0);
	probe("root", id);
	dt_out("setresuid(65534) by number = %s", res(syscall(SYS_setresuid, 65534, 65534, 0)));
	probe("uid 65534", id);
	dt_out("setresuid(0) by number = %s", res(syscall(SYS_setresuid, 0, 0, 0)));
	probe("root again", id);
	dt_out("IPC_RMID = %s", res(semctl(id, 0, IPC_RMID)));
}

static int g_id;

static void *thread_drops(void *arg)
{
	(void)arg;
	dt_out("thread: capset without CAP_IPC_OWNER = %s", res(drop_effective(CAP_IPC_OWNER)));
	probe("thread", g_id);
	return NULL;
}

static void thread_drop(int argc, char **argv)
{
	pthread_t t;

	(void)argc, (void)argv;
	g_id = array_of(0600, 12345);
	probe("main before", g_id);
	pthread_create(&t, NULL, thread_drops, NULL);
	pthread_join(t, NULL);
	probe("main after", g_id);
	dt_out("IPC_RMID = %s", res(semctl(g_id, 0, IPC_RMID)));
}

static void *thread_setresuid(void *arg)
{
	(void)arg;
	dt_out("thread: setresuid(65534) by number = %s",
	       res(syscall(SYS_setresuid, 65534, 65534, 0)));
	probe("thread, uid 65534", g_id);
	return NULL;
}

/* the system call changes the calling thread only */
static void thread_uid_raw(int argc, char **argv)
{
	pthread_t t;

	(void)argc, (void)argv;
	g_id = array_of(0600, 0);
	probe("main before", g_id);
	pthread_create(&t, NULL, thread_setresuid, NULL);
	pthread_join(t, NULL);
	probe("main after", g_id);
	dt_out("IPC_RMID = %s", res(semctl(g_id, 0, IPC_RMID)));
}

static volatile int step;

static void *thread_libc_setresuid(void *arg)
{
	(void)arg;
	dt_out("thread: libc setresuid(65534) = %s", res(setresuid(65534, 65534, 0)));
	probe("thread", g_id);
	__atomic_store_n(&step, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&step, __ATOMIC_ACQUIRE) != 2)
		dt_msleep(1);
	probe("thread, after main's setresuid(0)", g_id);
	return NULL;
}

/* libc's setresuid changes every thread of the process (SIGSETXID) */
static void thread_uid_libc(int argc, char **argv)
{
	pthread_t t;

	(void)argc, (void)argv;
	g_id = array_of(0600, 0);
	probe("main before", g_id);
	pthread_create(&t, NULL, thread_libc_setresuid, NULL);
	while (__atomic_load_n(&step, __ATOMIC_ACQUIRE) != 1)
		dt_msleep(1);
	probe("main, after the thread's setresuid", g_id);
	dt_out("main: libc setresuid(0) = %s", res(setresuid(0, 0, 0)));
	probe("main, after its setresuid(0)", g_id);
	__atomic_store_n(&step, 2, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	dt_out("IPC_RMID = %s", res(semctl(g_id, 0, IPC_RMID)));
}

const struct dt_case dt_cases[] = {
	{ "capset-drop", capset_drop, 0 },
	{ "setresuid-raw", setresuid_raw, 0 },
	{ "thread-capset", thread_drop, 0 },
	{ "thread-uid-raw", thread_uid_raw, 0 },
	{ "thread-uid-libc", thread_uid_libc, 0 },
	{ NULL, NULL, 0 },
};
