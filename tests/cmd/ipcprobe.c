/*
 * ipcprobe.c - one System V call made each way a program can make it, for
 * tests/cmd-trap.t: `ipcprobe libc` (semget through libc's name), `ipcprobe
 * raw` (semget by system call instruction).  Prints "libc semget = 0" or
 * "raw semget = -1 ENOSYS", and removes what it made the same way.  Built
 * dynamically (ipcprobe) and statically (ipcprobe-static, ipcprobe-spie).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../diff/rawinsn.h"

static void show(const char *what, long r, int e)
{
	if (r < 0)
		printf("%s = -1 %s\n", what, e == ENOSYS ? "ENOSYS" : strerror(e));
	else
		printf("%s = %ld\n", what, r);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		long id;

		if (!strcmp(argv[i], "libc")) {
			id = semget(IPC_PRIVATE, 1, 0600);
			show("libc semget", id, errno);
			if (id >= 0)
				semctl((int)id, 0, IPC_RMID);
		} else if (!strcmp(argv[i], "raw")) {
			id = raw_syscall(SYS_semget, IPC_PRIVATE, 1, 0600);
			show("raw semget", id, errno);
			if (id >= 0)
				raw_syscall(SYS_semctl, id, 0, IPC_RMID, 0);
		}
	}
	return 0;
}
