/*
 * proc_reclaim.c - the process slots of processes killed without their
 * exit work are reclaimed whatever pid_max is (issue 14, item 7): N
 * children each register (a semop with SEM_UNDO) and are SIGKILLed, with
 * pids that do not come back; the namespace's process table must not grow
 * with them, and every adjustment they left is undone.
 *
 *   proc_reclaim NSFILE N      (preloaded; NSFILE: the namespace's file)
 *
 * Prints TAP.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sem.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/layout.h"

static uint32_t table_high_water(const char *path)
{
	struct uipc_hdr h;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		perror(path);
		exit(1);
	}
	close(fd);
	return h.procs_hwm;
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 300, id, ok = 1, val;
	uint32_t hwm;

	if (argc < 2)
		return 2;
	id = semget(IPC_PRIVATE, 1, 0600);
	if (id < 0) {
		perror("semget");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		int p[2];
		char c;
		pid_t pid;

		if (pipe(p) < 0)
			return 1;
		pid = fork();
		if (pid == 0) {
			struct sembuf up = { 0, 1, SEM_UNDO };

			close(p[0]);
			if (semop(id, &up, 1) < 0)
				_exit(1);
			if (write(p[1], "r", 1) != 1)
				_exit(1);
			pause();
			_exit(0);
		}
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			ok = 0;
		close(p[0]);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	hwm = table_high_water(argv[1]);
	printf("1..2\n");
	/* without reclaiming, the table would hold a slot per child */
	printf("%s 1 - %d children killed after registering: the process table's "
	       "high-water mark is %u (< 130)\n", ok && hwm < 130 ? "ok" : "not ok", n, hwm);
	val = semctl(id, 0, GETVAL);
	printf("%s 2 - the semaphore they raised with SEM_UNDO is back to %d (0)\n",
	       val == 0 ? "ok" : "not ok", val);
	semctl(id, 0, IPC_RMID);
	return ok && hwm < 130 && val == 0 ? 0 : 1;
}
