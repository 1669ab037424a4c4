/*
 * noaio.c - run a command with the kernel's native AIO calls refused, as
 * container and Android seccomp profiles refuse them:
 *
 *     noaio [--uring] CMD [ARGS...]
 *
 * A seccomp filter (inherited across fork and exec) makes io_setup,
 * io_destroy, io_submit, io_cancel, io_getevents and io_pgetevents fail
 * with ENOSYS; with --uring also io_uring_setup, io_uring_enter and
 * io_uring_register.  So a program that completes its AIO under it was
 * served by uipc, not the kernel (tests/real-*.t).
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DENY(nr)                                                     \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1),             \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS)

static int refuse(int uring)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		DENY(__NR_io_setup), DENY(__NR_io_destroy), DENY(__NR_io_submit),
		DENY(__NR_io_cancel), DENY(__NR_io_getevents), DENY(__NR_io_pgetevents),
		/* the io_uring calls last: cut off without --uring */
		DENY(__NR_io_uring_setup), DENY(__NR_io_uring_enter),
		DENY(__NR_io_uring_register),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (!uring) {      /* drop the three io_uring pairs, keep the final ALLOW */
		f[sizeof(f) / sizeof(f[0]) - 7] = f[sizeof(f) / sizeof(f[0]) - 1];
		prog.len -= 6;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

int main(int argc, char **argv)
{
	int uring = argc > 1 && !strcmp(argv[1], "--uring");

	if (argc < 2 + uring) {
		fprintf(stderr, "usage: noaio [--uring] CMD [ARGS...]\n");
		return 2;
	}
	if (refuse(uring)) {
		perror("noaio: seccomp");
		return 2;
	}
	execvp(argv[1 + uring], argv + 1 + uring);
	perror("noaio: exec");
	return 127;
}
