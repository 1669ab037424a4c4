/*
 * chaos_sem.c - many processes move tokens between two semaphores (single
 * and multi-op semops, all with SEM_UNDO, some blocking) while the driver
 * SIGKILLs random ones and starts new ones, for a bounded time.  Afterwards
 * every token is back (the dead processes' SEM_UNDO applied exactly once),
 * nobody waits, the namespace checks clean (uipc_ns_check).
 *
 *   chaos_sem [SECONDS [WORKERS]]      (run under uipc; prints TAP)
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sem.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TOKENS 8

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* take a token, move it to sem 1, give it back in one two-op call */
static void worker(int id, unsigned seed)
{
	struct sembuf take = { 0, -1, SEM_UNDO };
	struct sembuf mark = { 1, 1, SEM_UNDO };
	struct sembuf back[2] = { { 1, -1, SEM_UNDO }, { 0, 1, SEM_UNDO } };
	struct sembuf peek = { 0, -1, SEM_UNDO | IPC_NOWAIT };
	struct sembuf unpeek = { 0, 1, SEM_UNDO };

	srand(seed);
	for (;;) {
		if (rand() % 4 == 0) {
			if (semop(id, &peek, 1) == 0)
				semop(id, &unpeek, 1);
			continue;
		}
		if (semop(id, &take, 1) < 0)
			_exit(errno == EIDRM ? 0 : 2);
		semop(id, &mark, 1);
		semop(id, back, 2);
	}
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	int nworkers = argc > 2 ? atoi(argv[2]) : 6;
	int (*check)(char *, size_t) = (int (*)(char *, size_t))dlsym(RTLD_DEFAULT, "uipc_ns_check");
	pid_t *w = calloc((size_t)nworkers, sizeof(pid_t));
	unsigned seed = (unsigned)time(NULL);
	long kills = 0;
	double end;
	int id, i, v0, v1, n0, z1, bad, status;
	char rep[512];

	if (!w || !check) {
		printf("1..1\nnot ok 1 - run under uipc\n");
		return 1;
	}
	printf("1..5\n# seed %u\n", seed);
	srand(seed);
	id = semget(IPC_PRIVATE, 2, 0600);
	semctl(id, 0, SETVAL, TOKENS);
	for (i = 0; i < nworkers; i++) {
		w[i] = fork();
		if (w[i] == 0)
			worker(id, seed + (unsigned)i);
	}
	end = now_s() + secs;
	while (now_s() < end) {
		i = rand() % nworkers;
		usleep((useconds_t)(rand() % 2000));
		kill(w[i], SIGKILL);
		waitpid(w[i], &status, 0);
		kills++;
		w[i] = fork();
		if (w[i] == 0)
			worker(id, seed + (unsigned)kills * 7919u);
	}
	for (i = 0; i < nworkers; i++) {
		kill(w[i], SIGKILL);
		waitpid(w[i], &status, 0);
		kills++;
	}
	/* reading the array first does the exit work of every dead holder */
	v0 = semctl(id, 0, GETVAL);
	v1 = semctl(id, 1, GETVAL);
	n0 = semctl(id, 0, GETNCNT);
	z1 = semctl(id, 1, GETNCNT);
	printf("%s 1 - %ld SIGKILLs during the load\n", kills >= 10 ? "ok" : "not ok", kills);
	printf("%s 2 - every token is back after the dead processes' SEM_UNDO: sem0 %d (want %d), sem1 %d (want 0)\n",
	       v0 == TOKENS && v1 == 0 ? "ok" : "not ok", v0, TOKENS, v1);
	printf("%s 3 - nobody is left waiting (ncnt %d, %d)\n", n0 == 0 && z1 == 0 ? "ok" : "not ok", n0, z1);
	bad = check(rep, sizeof(rep));
	printf("%s 4 - the namespace checks clean%s%s\n", bad == 0 ? "ok" : "not ok",
	       bad ? ": " : "", bad ? rep : "");
	printf("%s 5 - the array can be removed\n", semctl(id, 0, IPC_RMID) == 0 ? "ok" : "not ok");
	return v0 == TOKENS && v1 == 0 && n0 == 0 && z1 == 0 && bad == 0 && kills >= 10 ? 0 : 1;
}
