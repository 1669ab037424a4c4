/*
 * tests/cmd/ipcfix.c - builds a fixed set of System V IPC objects through the
 * ordinary libc calls, then optionally execs a command (keeping its pid).
 * Run natively inside `unshare --ipc` it makes kernel objects; run under
 * `uipc run` (LD_PRELOAD) it makes the same objects in a uipc namespace, so
 * that `ipcs` and `uipc ipcs` can be compared on identical contents.
 *
 * usage: ipcfix [-p PIDFILE] OP... [-- CMD ARGS...]
 * Objects of each type are numbered in creation order (0, 1, ...); OBJ below
 * is such a number (the n-th array, queue or segment made by this run; a
 * TYPE is sem, msg or shm).  KEY is a number (0x.. allowed) or "private".
 *   sem:KEY:NSEMS:MODE        semget(KEY, NSEMS, IPC_CREAT|IPC_EXCL|MODE)
 *   msg:KEY:MODE              msgget
 *   shm:KEY:SIZE:MODE         shmget
 *   setall:OBJ:V1,V2,...      semctl SETALL
 *   setval:OBJ:NUM:VAL        semctl SETVAL
 *   semop:OBJ:NUM:OP[:FLAGS]  one semop; FLAGS letters u (SEM_UNDO), n (IPC_NOWAIT)
 *   wait:OBJ:NUM:OP           a child blocks in semop(NUM, OP) (OP <= 0) until
 *                             this process and its exec'd command end;
 *                             returns once GETNCNT/GETZCNT shows it
 *   msgsnd:OBJ:TYPE:SIZE      send SIZE bytes of type TYPE
 *   msgrcv:OBJ:TYPE           receive one message of TYPE (IPC_NOWAIT)
 *   shmat:OBJ                 a child attaches OBJ and stays attached as above
 *   chmod:TYPE:OBJ:MODE       IPC_SET with the new mode
 *   rmid:TYPE:OBJ             IPC_RMID
 *   rmkey:sem|msg|shm:KEY     IPC_RMID of the object with that key
 * PIDFILE gets the pids of this process and of its children, one a line, in
 * order, so that tests can replace them by names.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <time.h>
#include <unistd.h>

enum type { SEM, MSG, SHM };


union semun {
	int val;
	struct semid_ds *buf;
	unsigned short *array;
};

#define MAX_OBJS 256
static int objs[3][MAX_OBJS];	/* ids, per type, in creation order */
static int nobjs[3];
static FILE *pidfile;

static __attribute__((noreturn)) void die(const char *op, const char *what)
{
	fprintf(stderr, "ipcfix: %s: %s: %s\n", op, what, strerror(errno));
	exit(1);
}

static __attribute__((noreturn)) void bad(const char *op)
{
	fprintf(stderr, "ipcfix: bad operation '%s'\n", op);
	exit(2);
}

static long num(const char *s, const char *op)
{
	char *end;
	long v;

	if (!s)
		bad(op);
	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end)
		bad(op);
	return v;
}

static key_t key_of(const char *s, const char *op)
{
	if (s && !strcmp(s, "private"))
		return IPC_PRIVATE;
	return (key_t)(unsigned int)num(s, op);
}

static int obj_id(const char *s, enum type t, const char *op)
{
	long i = num(s, op);

	if (i < 0 || i >= nobjs[t])
		bad(op);
	return objs[t][i];
}

static enum type type_of(const char *s, const char *op)
{
	if (s && !strcmp(s, "sem"))
		return SEM;
	if (s && !strcmp(s, "msg"))
		return MSG;
	if (s && !strcmp(s, "shm"))
		return SHM;
	bad(op);
}

static void add(enum type t, int id, const char *op)
{
	if (id < 0)
		die(op, "create");
	if (nobjs[t] == MAX_OBJS)
		bad(op);
	objs[t][nobjs[t]++] = id;
}

static void note_pid(pid_t pid)
{
	if (pidfile) {
		fprintf(pidfile, "%d\n", (int)pid);
		fflush(pidfile);
	}
}

/* A child that dies with its parent (the exec'd command keeps the pid). */
static pid_t child(void)
{
	pid_t parent = getpid(), pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork", "child");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		return 0;
	}
	note_pid(pid);
	return pid;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void op_setall(char **f, const char *op)
{
	int id = obj_id(f[1], SEM, op);
	unsigned short vals[512];
	union semun arg = { .array = vals };
	char *save, *tok;
	int n = 0;

	if (!f[2])
		bad(op);
	for (tok = strtok_r(f[2], ",", &save); tok && n < 512; tok = strtok_r(NULL, ",", &save))
		vals[n++] = (unsigned short)num(tok, op);
	if (semctl(id, 0, SETALL, arg) < 0)
		die(op, "SETALL");
}

static void op_semop(char **f, const char *op)
{
	struct sembuf sb = { 0 };
	const char *fl = f[4] ? f[4] : "";
	int id = obj_id(f[1], SEM, op);

	sb.sem_num = (unsigned short)num(f[2], op);
	sb.sem_op = (short)num(f[3], op);
	sb.sem_flg = (short)((strchr(fl, 'u') ? SEM_UNDO : 0) |
			     (strchr(fl, 'n') ? IPC_NOWAIT : 0));
	if (semop(id, &sb, 1) < 0)
		die(op, "semop");
}

static void op_wait(char **f, const char *op)
{
	int id = obj_id(f[1], SEM, op);
	int snum = (int)num(f[2], op), sop = (int)num(f[3], op);
	int cmd = sop < 0 ? GETNCNT : GETZCNT, before, i;
	struct sembuf sb = { .sem_num = (unsigned short)snum, .sem_op = (short)sop };

	before = semctl(id, snum, cmd);
	if (before < 0)
		die(op, "GETNCNT/GETZCNT");
	if (child() == 0) {
		semop(id, &sb, 1);
		_exit(0);
	}
	for (i = 0; i < 5000; i++) {
		if (semctl(id, snum, cmd) > before)
			return;
		sleep_ms(1);
	}
	errno = ETIMEDOUT;
	die(op, "waiter never blocked");
}

static void op_msgsnd(char **f, const char *op)
{
	struct {
		long type;
		char text[8192];
	} m;
	int id = obj_id(f[1], MSG, op);
	long size = num(f[3], op);

	if (size < 0 || size > (long)sizeof(m.text))
		bad(op);
	m.type = num(f[2], op);
	memset(m.text, 'x', sizeof(m.text));
	if (msgsnd(id, &m, (size_t)size, IPC_NOWAIT) < 0)
		die(op, "msgsnd");
}

static void op_msgrcv(char **f, const char *op)
{
	struct {
		long type;
		char text[8192];
	} m;
	int id = obj_id(f[1], MSG, op);

	if (msgrcv(id, &m, sizeof(m.text), num(f[2], op), IPC_NOWAIT) < 0)
		die(op, "msgrcv");
}

static void op_shmat(char **f, const char *op)
{
	int id = obj_id(f[1], SHM, op), i;
	struct shmid_ds ds;

	if (shmctl(id, IPC_STAT, &ds) < 0)
		die(op, "IPC_STAT");
	if (child() == 0) {
		if (shmat(id, NULL, 0) == (void *)-1)
			_exit(1);
		for (;;)
			pause();
	}
	for (i = 0; i < 5000; i++) {
		struct shmid_ds now;

		if (shmctl(id, IPC_STAT, &now) == 0 && now.shm_nattch > ds.shm_nattch)
			return;
		sleep_ms(1);
	}
	errno = ETIMEDOUT;
	die(op, "child never attached");
}

static int ctl_set_rm(enum type t, int id, int cmd, unsigned int mode)
{
	union semun arg;
	struct semid_ds sds;
	struct msqid_ds mds;
	struct shmid_ds shds;

	if (t == SEM) {
		arg.buf = &sds;
		if (cmd == IPC_SET && semctl(id, 0, IPC_STAT, arg) < 0)
			return -1;
		sds.sem_perm.mode = mode;
		return semctl(id, 0, cmd, arg);
	}
	if (t == MSG) {
		if (cmd == IPC_SET && msgctl(id, IPC_STAT, &mds) < 0)
			return -1;
		mds.msg_perm.mode = mode;
		return msgctl(id, cmd, &mds);
	}
	if (cmd == IPC_SET && shmctl(id, IPC_STAT, &shds) < 0)
		return -1;
	shds.shm_perm.mode = mode;
	return shmctl(id, cmd, &shds);
}

static void op_ctl(char **f, const char *op, int cmd)
{
	enum type t = type_of(f[1], op);
	int id = obj_id(f[2], t, op);
	unsigned int mode = 0;

	if (cmd == IPC_SET)
		mode = (unsigned int)strtoul(f[3] ? f[3] : "", NULL, 8) & 0777;
	if (ctl_set_rm(t, id, cmd, mode) < 0)
		die(op, cmd == IPC_SET ? "IPC_SET" : "IPC_RMID");
}

static void op_rmkey(char **f, const char *op)
{
	key_t key = key_of(f[2], op);
	enum type t = type_of(f[1], op);
	int id;

	if (t == SEM)
		id = semget(key, 0, 0);
	else if (t == MSG)
		id = msgget(key, 0);
	else
		id = shmget(key, 0, 0);
	if (id < 0 || ctl_set_rm(t, id, IPC_RMID, 0) < 0)
		die(op, "remove by key");
}

static void do_op(char *op)
{
	char copy[512], *f[8] = { 0 }, *save;
	int n = 0;

	snprintf(copy, sizeof(copy), "%s", op);
	for (f[0] = strtok_r(copy, ":", &save); f[n] && n < 7; f[++n] = strtok_r(NULL, ":", &save))
		;
	if (!f[0])
		bad(op);
	if (!strcmp(f[0], "sem"))
		add(SEM, semget(key_of(f[1], op), (int)num(f[2], op),
				IPC_CREAT | IPC_EXCL | (int)strtoul(f[3] ? f[3] : "600", NULL, 8)), op);
	else if (!strcmp(f[0], "msg"))
		add(MSG, msgget(key_of(f[1], op),
				IPC_CREAT | IPC_EXCL | (int)strtoul(f[2] ? f[2] : "600", NULL, 8)), op);
	else if (!strcmp(f[0], "shm"))
		add(SHM, shmget(key_of(f[1], op), (size_t)num(f[2], op),
				IPC_CREAT | IPC_EXCL | (int)strtoul(f[3] ? f[3] : "600", NULL, 8)), op);
	else if (!strcmp(f[0], "setall"))
		op_setall(f, op);
	else if (!strcmp(f[0], "setval")) {
		union semun arg = { .val = (int)num(f[3], op) };

		if (semctl(obj_id(f[1], SEM, op), (int)num(f[2], op), SETVAL, arg) < 0)
			die(op, "SETVAL");
	} else if (!strcmp(f[0], "semop"))
		op_semop(f, op);
	else if (!strcmp(f[0], "wait"))
		op_wait(f, op);
	else if (!strcmp(f[0], "msgsnd"))
		op_msgsnd(f, op);
	else if (!strcmp(f[0], "msgrcv"))
		op_msgrcv(f, op);
	else if (!strcmp(f[0], "shmat"))
		op_shmat(f, op);
	else if (!strcmp(f[0], "chmod"))
		op_ctl(f, op, IPC_SET);
	else if (!strcmp(f[0], "rmid"))
		op_ctl(f, op, IPC_RMID);
	else if (!strcmp(f[0], "rmkey"))
		op_rmkey(f, op);
	else
		bad(op);
}

int main(int argc, char **argv)
{
	int i = 1;

	if (argc > 2 && !strcmp(argv[1], "-p")) {
		pidfile = fopen(argv[2], "w");
		if (!pidfile)
			die("-p", argv[2]);
		note_pid(getpid());
		i = 3;
	}
	for (; i < argc && strcmp(argv[i], "--"); i++)
		do_op(argv[i]);
	if (pidfile)
		fclose(pidfile);
	if (i + 1 < argc) {
		fflush(NULL);
		execvp(argv[i + 1], argv + i + 1);
		die("exec", argv[i + 1]);
	}
	return 0;
}
