/*
 * ns_life.c - a workload for tests/unit-ns-life.t: an anonymous namespace
 * (unshare(CLONE_NEWIPC)) with one object of each kind and a segment of
 * SIZE MiB whose memory is written and then left without an attachment,
 * members made by fork and by exec.  The test then checks that nothing of
 * it is left after its members went, normally or all killed at once.
 *
 *   ns_life exit SIZE   every member exits normally; exit 0 when all went
 *                       well, printing "done" and the memfd's inode
 *   ns_life kill SIZE   prints "ready" when every member is up, then all wait
 *                       to be killed
 *   ns_life member      (exec'd) checks the namespace it inherited
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEY 0x11fe

static void die(const char *what)
{
	fprintf(stderr, "ns_life %d: %s: %s\n", (int)getpid(), what, strerror(errno));
	exit(1);
}

/* the segment's bytes are as the creator wrote them: 0 on success */
static int check_segment(size_t size)
{
	int id = shmget(KEY, 0, 0);
	unsigned char *p;
	int bad = 0;

	if (id < 0)
		die("shmget (member)");
	p = shmat(id, NULL, SHM_RDONLY);
	if (p == (void *)-1)
		die("shmat (member)");
	for (size_t i = 0; i < size; i += 4096)
		bad |= p[i] != (unsigned char)(i >> 12);
	shmdt(p);
	return bad;
}

static int member(void)
{
	struct sembuf op = { 0, 1, 0 };
	int sem = semget(KEY, 1, 0);

	if (sem < 0 || semop(sem, &op, 1) < 0)
		die("semop (member)");
	return check_segment((size_t)semctl(semget(KEY + 2, 1, 0), 0, GETVAL) << 20);
}

int main(int argc, char **argv)
{
	size_t mib, size;
	int sem, q, shm, kill_mode;
	unsigned char *p;
	pid_t kids[3];

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 2 && !strcmp(argv[1], "member"))
		return member();
	if (argc != 3)
		return 2;
	kill_mode = !strcmp(argv[1], "kill");
	mib = strtoul(argv[2], NULL, 0);
	size = mib << 20;
	if (unshare(CLONE_NEWIPC) < 0)
		die("unshare");
	sem = semget(KEY, 1, IPC_CREAT | 0600);
	q = msgget(KEY + 1, IPC_CREAT | 0600);
	shm = shmget(KEY, size, IPC_CREAT | 0600);
	if (sem < 0 || q < 0 || shm < 0)
		die("get");
	{
		/* the size, for exec'd members */
		int s2 = semget(KEY + 2, 1, IPC_CREAT | 0600);

		if (s2 < 0 || semctl(s2, 0, SETVAL, (int)mib) < 0)
			die("SETVAL");
	}
	struct { long type; char text[16]; } m = { 1, "hello" };
	if (msgsnd(q, &m, sizeof(m.text), 0) < 0)
		die("msgsnd");
	p = shmat(shm, NULL, 0);
	if (p == (void *)-1)
		die("shmat");
	for (size_t i = 0; i < size; i += 4096)
		p[i] = (unsigned char)(i >> 12);
	if (shmdt(p) < 0)  /* no attachment left: the namespace keeps the memory */
		die("shmdt");
	for (int i = 0; i < 3; i++) {
		kids[i] = fork();
		if (kids[i] < 0)
			die("fork");
		if (kids[i] == 0) {
			if (i == 2) {
				execl("/proc/self/exe", argv[0], "member", (char *)NULL);
				die("exec");
			}
			if (member())
				_exit(3);
			if (kill_mode)
				for (;;)
					pause();
			_exit(0);
		}
	}
	int bad = 0;
	for (int i = 0; i < 3; i++) {
		int st;

		if (kill_mode && i < 2)
			continue;
		if (waitpid(kids[i], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			bad = 1;
	}
	/* every member that checked counted itself */
	int want = kill_mode ? 1 : 3;
	if (kill_mode) {
		for (int tries = 0; tries < 500 && semctl(sem, 0, GETVAL) < 3; tries++)
			usleep(10000);
		want = 3;
	}
	if (semctl(sem, 0, GETVAL) != want || bad || check_segment(size)) {
		fprintf(stderr, "ns_life: members saw a wrong namespace (semval %d)\n",
			semctl(sem, 0, GETVAL));
		return 1;
	}
	if (kill_mode) {
		printf("ready\n");
		for (;;)
			pause();
	}
	{
		/* the namespace's memfd, which the test watches go */
		const char *fd = getenv("UIPC_NS_FD");
		struct stat st;

		if (!fd || fstat(atoi(fd), &st))
			die("fstat UIPC_NS_FD");
		printf("done %lu\n", (unsigned long)st.st_ino);
	}
	return 0;
}
