/*
 * ns_crash.c - processes SIGKILLed at random while they create, join and
 * leave namespaces (tests/unit-ns-crash.t runs it under uipc, as a user
 * of its own, then checks that nothing leaked).
 *
 *   ns_crash SECONDS NAMED_FILE SEED
 *
 * WORKERS workers, each in a process group of the run's, loop on random
 * steps: unshare(CLONE_NEWIPC); setns into the named namespace (the file
 * NAMED_FILE) or into a namespace it kept a descriptor of; open
 * /proc/self/ns/ipc and keep the descriptor; a semaphore array with
 * SEM_UNDO; a message; a segment of up to 4 MiB written (kept attached
 * sometimes); a fork child that does a few steps too.  The parent kills a
 * random worker every few milliseconds and starts another, for SECONDS,
 * then kills them all, waits for them, and exits 0.  It prints its seed.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WORKERS 4
#define KEPT 8

static const char *named;

static void step(unsigned *seed, int *kept, int *nkept)
{
	int r = (int)(rand_r(seed) % 9), id, fd;
	struct sembuf up = { 0, 1, SEM_UNDO };
	struct { long type; char text[64]; } m = { 1, "crash" };
	size_t size;
	char *p;

	switch (r) {
	case 0:
		unshare(CLONE_NEWIPC);
		break;
	case 1:
		fd = open(named, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			setns(fd, CLONE_NEWIPC);
			close(fd);
		}
		break;
	case 2:
		if (*nkept)
			setns(kept[rand_r(seed) % (unsigned)*nkept], 0);
		break;
	case 3:
		fd = open("/proc/self/ns/ipc", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			break;
		if (*nkept == KEPT) {
			close(kept[0]);
			memmove(kept, kept + 1, (KEPT - 1) * sizeof(int));
			(*nkept)--;
		}
		kept[(*nkept)++] = fd;
		break;
	case 4:
		id = semget(IPC_PRIVATE, 2, IPC_CREAT | 0600);
		if (id >= 0)
			semop(id, &up, 1);
		break;
	case 5:
		id = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
		if (id >= 0)
			msgsnd(id, &m, sizeof(m.text), IPC_NOWAIT);
		break;
	case 6:
	case 7:
		size = (rand_r(seed) % 64 + 1) * 65536;
		id = shmget(IPC_PRIVATE, size, IPC_CREAT | 0600);
		p = id < 0 ? (void *)-1 : shmat(id, NULL, 0);
		if (p == (void *)-1)
			break;
		memset(p, r, size);
		if (rand_r(seed) % 4)
			shmdt(p);
		if (rand_r(seed) % 2)
			shmctl(id, IPC_RMID, NULL);
		break;
	case 8:
		if (fork() == 0) {
			for (int i = 0; i < 5; i++)
				step(seed, kept, nkept);
			_exit(0);
		}
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		break;
	}
}

static void worker(unsigned seed)
{
	int kept[KEPT], nkept = 0;

	for (;;)
		step(&seed, kept, &nkept);
}

static pid_t start(pid_t group, unsigned seed)
{
	pid_t pid = fork();

	if (pid == 0) {
		setpgid(0, group);
		worker(seed);
	}
	if (pid > 0)
		setpgid(pid, group ? group : pid);
	return pid;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3;
	unsigned seed = argc > 3 ? (unsigned)atoi(argv[3]) : (unsigned)time(NULL);
	pid_t w[WORKERS], group = 0;
	struct timespec t0, now;
	int kills = 0;

	named = argc > 2 ? argv[2] : "/nonexistent";
	printf("seed %u\n", seed);
	fflush(stdout);
	srand(seed);
	for (int i = 0; i < WORKERS; i++) {
		w[i] = start(group, seed + (unsigned)i * 7919);
		if (!group)
			group = w[i];
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		struct timespec pause = { 0, (rand() % 20 + 1) * 1000000L };
		int i = rand() % WORKERS;

		nanosleep(&pause, NULL);
		kill(w[i], SIGKILL);
		waitpid(w[i], NULL, 0);
		kills++;
		w[i] = start(group, (unsigned)rand());
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - t0.tv_sec + (now.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	kill(-group, SIGKILL);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
	printf("killed %d workers\n", kills);
	return 0;
}
