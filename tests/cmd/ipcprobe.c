/*
 * ipcprobe.c - one System V call made each way a program can make it, for
 * tests/cmd-trap.t: `ipcprobe libc` (semget through libc's name), `ipcprobe
 * raw` (semget by system call instruction).  Prints "libc semget = 0" or
 * "raw semget = -1 ENOSYS", and removes what it made the same way.
 * `ipcprobe seal` first installs a seccomp filter of its own that traps the
 * System V calls with SIGSYS (as Android's app filter does), with no SIGSYS
 * handler of its own.  Built dynamically (ipcprobe) and statically
 * (ipcprobe-static, ipcprobe-spie).
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
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

/* SIGSYS for the System V calls, as a sandbox that refuses them does */
static void seal(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_semget, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_semctl, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
	};
	struct sock_fprog p = { sizeof(f) / sizeof(f[0]), f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &p))
		perror("seal");
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		long id;

		if (!strcmp(argv[i], "seal")) {
			seal();
		} else if (!strcmp(argv[i], "libc")) {
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
