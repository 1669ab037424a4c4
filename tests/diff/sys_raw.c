/*
 * sys_raw.c - the twelve System V IPC calls made by number through glibc's
 * syscall(), with the raw system calls' conventions: semctl's fourth
 * argument an unsigned long (a value for SETVAL), shmat's address as a
 * long, IPC_64 (0x100) OR'ed into the ctl commands (EINVAL on x86-64),
 * EFAULT and EINVAL paths, a blocked semop/msgrcv ended by a handler
 * (EINTR), and numbers that are not IPC passed through to the kernel.
 */
#include "dt.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#define IPC_64_FLAG 0x100

/* prints "WHAT = result" for a raw call; returns the result */
static long say(const char *what, long r)
{
	int e = errno;

	dt_out("%s = %s", what, dt_res(r, e));
	errno = e;
	return r;
}

static void sem_calls(int argc, char **argv)
{
	(void)argc, (void)argv;
	unsigned short vals[3] = { 1, 2, 3 }, got[3] = { 0 };
	struct semid_ds ds;
	struct sembuf op = { 0, -1, IPC_NOWAIT };
	struct timespec ts = { 0, 1000000 };

	say("semget(-5 nsems)", syscall(SYS_semget, IPC_PRIVATE, -5, 0600));
	long id = say("semget(private, 3)", syscall(SYS_semget, IPC_PRIVATE, 3, 0600));
	say("semctl SETVAL 2 <- 9 (unsigned long)", syscall(SYS_semctl, id, 2, SETVAL, 9UL));
	say("semctl GETVAL 2", syscall(SYS_semctl, id, 2, GETVAL, 0UL));
	/* the same object through the libc name: both doors reach one table */
	say("libc semctl GETVAL 2", semctl((int)id, 2, GETVAL));
	say("semctl SETALL", syscall(SYS_semctl, id, 0, SETALL, (unsigned long)vals));
	say("semctl GETALL", syscall(SYS_semctl, id, 0, GETALL, (unsigned long)got));
	dt_out("values %u %u %u", got[0], got[1], got[2]);
	say("semctl GETALL to a bad page", syscall(SYS_semctl, id, 0, GETALL, dt_badpage));
	say("semctl IPC_STAT", syscall(SYS_semctl, id, 0, IPC_STAT, (unsigned long)&ds));
	dt_out("sem_nsems %lu mode %o", (unsigned long)ds.sem_nsems, ds.sem_perm.mode);
	say("semctl IPC_STAT|IPC_64", syscall(SYS_semctl, id, 0, IPC_STAT | IPC_64_FLAG, &ds));
	say("semctl GETVAL|IPC_64", syscall(SYS_semctl, id, 0, GETVAL | IPC_64_FLAG, 0UL));
	say("semctl IPC_STAT to a bad page", syscall(SYS_semctl, id, 0, IPC_STAT, dt_badpage));
	say("semctl 99", syscall(SYS_semctl, id, 0, 99, 0UL));
	say("semop -1 on 0", syscall(SYS_semop, id, &op, 1));
	say("semop -1 on 0 again (NOWAIT)", syscall(SYS_semop, id, &op, 1));
	say("semop bad sops", syscall(SYS_semop, id, dt_badpage, 1));
	say("semop nsops 0", syscall(SYS_semop, id, &op, 0));
	op.sem_flg = 0;
	say("semtimedop 1 ms", syscall(SYS_semtimedop, id, &op, 1, &ts));
	say("semtimedop bad timeout", syscall(SYS_semtimedop, id, &op, 1, dt_badpage));
	say("semctl IPC_RMID", syscall(SYS_semctl, id, 0, IPC_RMID, 0UL));
	say("semop on a removed id", syscall(SYS_semop, id, &op, 1));
}

static void msg_calls(int argc, char **argv)
{
	(void)argc, (void)argv;
	struct { long type; char text[64]; } m = { 5, "hello" }, in;
	struct msqid_ds ds;

	long id = say("msgget(private)", syscall(SYS_msgget, IPC_PRIVATE, 0600));
	say("msgsnd 6 bytes", syscall(SYS_msgsnd, id, &m, 6, 0));
	say("msgsnd type 0", syscall(SYS_msgsnd, id, &(struct { long t; char c; }){ 0, 1 }, 1, 0));
	say("msgsnd from a bad page", syscall(SYS_msgsnd, id, dt_badpage, 6, 0));
	say("msgsnd size -1", syscall(SYS_msgsnd, id, &m, (size_t)-1, 0));
	say("msgctl IPC_STAT", syscall(SYS_msgctl, id, IPC_STAT, &ds));
	dt_out("qnum %lu cbytes %lu", (unsigned long)ds.msg_qnum, (unsigned long)ds.__msg_cbytes);
	memset(&ds, 0, sizeof(ds));
	say("libc msgctl IPC_STAT", msgctl((int)id, IPC_STAT, &ds));
	dt_out("qnum %lu cbytes %lu", (unsigned long)ds.msg_qnum, (unsigned long)ds.__msg_cbytes);
	say("msgctl IPC_STAT|IPC_64", syscall(SYS_msgctl, id, IPC_STAT | IPC_64_FLAG, &ds));
	say("msgctl IPC_STAT to a bad page", syscall(SYS_msgctl, id, IPC_STAT, dt_badpage));
	say("msgrcv into a bad page", syscall(SYS_msgrcv, id, dt_badpage, 64, 0L, 0));
	memset(&in, 0, sizeof(in));
	say("msgsnd 6 bytes again", syscall(SYS_msgsnd, id, &m, 6, 0));
	say("msgrcv type 5", syscall(SYS_msgrcv, id, &in, 64, 5L, IPC_NOWAIT));
	dt_out("got type %ld \"%s\"", in.type, in.text);
	say("msgrcv empty, NOWAIT", syscall(SYS_msgrcv, id, &in, 64, 0L, IPC_NOWAIT));
	say("msgctl 77", syscall(SYS_msgctl, id, 77, 0L));
	say("msgctl IPC_RMID", syscall(SYS_msgctl, id, IPC_RMID, 0L));
	say("msgsnd on a removed id", syscall(SYS_msgsnd, id, &m, 6, 0));
}

static void shm_calls(int argc, char **argv)
{
	(void)argc, (void)argv;
	struct shmid_ds ds;

	say("shmget(size 0)", syscall(SYS_shmget, IPC_PRIVATE, 0, 0600));
	long id = say("shmget(private, 8192)", syscall(SYS_shmget, IPC_PRIVATE, 8192, 0600));
	long a = syscall(SYS_shmat, id, 0L, 0);
	dt_out("shmat = %s", a == -1 ? dt_res(a, errno) : (a & 4095) ? "unaligned" : "addr");
	if (a != -1) {
		strcpy((char *)a, "through the address");
		dt_out("wrote: %s", (char *)a);
	}
	say("shmat misaligned", syscall(SYS_shmat, id, 12345L, 0));
	say("shmctl IPC_STAT", syscall(SYS_shmctl, id, IPC_STAT, &ds));
	dt_out("segsz %zu nattch %lu", ds.shm_segsz, (unsigned long)ds.shm_nattch);
	memset(&ds, 0, sizeof(ds));
	say("libc shmctl IPC_STAT", shmctl((int)id, IPC_STAT, &ds));
	dt_out("segsz %zu nattch %lu", ds.shm_segsz, (unsigned long)ds.shm_nattch);
	say("shmctl IPC_STAT|IPC_64", syscall(SYS_shmctl, id, IPC_STAT | IPC_64_FLAG, &ds));
	say("shmctl IPC_RMID|IPC_64", syscall(SYS_shmctl, id, IPC_RMID | IPC_64_FLAG, 0L));
	say("shmctl IPC_STAT to a bad page", syscall(SYS_shmctl, id, IPC_STAT, dt_badpage));
	say("shmdt misaligned", syscall(SYS_shmdt, a + 1));
	say("shmdt", syscall(SYS_shmdt, a));
	say("shmdt again", syscall(SYS_shmdt, a));
	say("shmctl IPC_RMID", syscall(SYS_shmctl, id, IPC_RMID, 0L));
	say("shmat on a removed id", syscall(SYS_shmat, id, 0L, 0));
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void arm(void)
{
	struct itimerval it = { { 0, 0 }, { 0, 50000 } };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
}

/* a handler ends a blocked raw call with EINTR, SA_RESTART or not */
static void interrupted(int argc, char **argv)
{
	(void)argc, (void)argv;
	struct sembuf op = { 0, -1, 0 };
	struct { long type; char text[8]; } m;

	long s = say("semget(private, 1)", syscall(SYS_semget, IPC_PRIVATE, 1, 0600));
	long q = say("msgget(private)", syscall(SYS_msgget, IPC_PRIVATE, 0600));
	arm();
	say("semop blocked, alarm", syscall(SYS_semop, s, &op, 1));
	arm();
	say("msgrcv blocked, alarm", syscall(SYS_msgrcv, q, &m, 8, 0L, 0));
	say("semctl IPC_RMID", syscall(SYS_semctl, s, 0, IPC_RMID, 0UL));
	say("msgctl IPC_RMID", syscall(SYS_msgctl, q, IPC_RMID, 0L));
}

/* numbers that are not IPC go to the kernel, all arguments intact */
static void passthrough(int argc, char **argv)
{
	(void)argc, (void)argv;
	char buf[8] = { 0 };
	int p[2];

	dt_out("getpid matches: %d", syscall(SYS_getpid) == getpid());
	say("write to fd -1", syscall(SYS_write, -1, "x", 1));
	say("unknown number 99999", syscall(99999L));
	if (pipe(p) == 0) {
		say("write 3 bytes to a pipe", syscall(SYS_write, p[1], "abc", 3));
		say("read", syscall(SYS_read, p[0], buf, sizeof(buf)));
		dt_out("read \"%s\"", buf);
		close(p[0]);
		close(p[1]);
	}
	/* six arguments: mmap's offset is the sixth */
	long a = syscall(SYS_mmap, 0L, 4096L, 3L, 0x22L /* PRIVATE|ANON */, -1L, 0L);
	dt_out("mmap 6 args = %s", a == -1 ? dt_res(a, errno) : "addr");
	say("mmap with an unaligned offset", syscall(SYS_mmap, 0L, 4096L, 3L, 0x22L, -1L, 5L));
	if (a != -1)
		say("munmap", syscall(SYS_munmap, a, 4096L));
}

const struct dt_case dt_cases[] = {
	{ "sem", sem_calls, 0 },
	{ "msg", msg_calls, 0 },
	{ "shm", shm_calls, 0 },
	{ "interrupted", interrupted, 0 },
	{ "passthrough", passthrough, 0 },
	{ NULL, NULL, 0 },
};
