/*
 * tests/unit/trust_shm.c - the shared memory steps of tests/unit-trust.t,
 * run on the kernel and under uipc alike (one line of output per step):
 *   rdonly               SHM_RDONLY attach, then mprotect to read-write
 *   put KEY MODE TEXT    create segment KEY with MODE, write TEXT in it
 *   get KEY [ro]         attach segment KEY (read-only with "ro"), print it
 *   rm KEY               remove segment KEY
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>

static const char *err_name(int e)
{
	switch (e) {
	case 0: return "0";
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case EINVAL: return "EINVAL";
	case ENOENT: return "ENOENT";
	case ENOMEM: return "ENOMEM";
	default: return strerror(e);
	}
}

static int rdonly(void)
{
	int id = shmget(IPC_PRIVATE, 8192, IPC_CREAT | 0600);
	char *p;
	int r;

	if (id < 0) {
		printf("shmget: %s\n", err_name(errno));
		return 1;
	}
	p = shmat(id, NULL, SHM_RDONLY);
	if (p == (void *)-1) {
		printf("shmat: %s\n", err_name(errno));
		shmctl(id, IPC_RMID, NULL);
		return 1;
	}
	r = mprotect(p, 8192, PROT_READ | PROT_WRITE);
	printf("mprotect(whole, RW) = %d %s\n", r, err_name(r ? errno : 0));
	r = mprotect(p + 4096, 4096, PROT_WRITE);
	printf("mprotect(second page, W) = %d %s\n", r, err_name(r ? errno : 0));
	r = mprotect(p, 4096, PROT_NONE);
	printf("mprotect(first page, NONE) = %d %s\n", r, err_name(r ? errno : 0));
	r = mprotect(p, 8192, PROT_READ);
	printf("mprotect(whole, R) = %d %s\n", r, err_name(r ? errno : 0));
	printf("shmdt = %d\n", shmdt(p));
	shmctl(id, IPC_RMID, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	key_t key = argc > 2 ? (key_t)strtol(argv[2], NULL, 0) : 0;
	char *p;
	int id;

	if (argc > 1 && !strcmp(argv[1], "rdonly"))
		return rdonly();
	if (argc > 4 && !strcmp(argv[1], "put")) {
		id = shmget(key, 4096, IPC_CREAT | (int)strtol(argv[3], NULL, 8));
		p = id < 0 ? (void *)-1 : shmat(id, NULL, 0);
		if (p == (void *)-1) {
			printf("put: %s\n", err_name(errno));
			return 1;
		}
		snprintf(p, 4096, "%s", argv[4]);
		printf("put: ok\n");
		return shmdt(p);
	}
	if (argc > 2 && !strcmp(argv[1], "get")) {
		int ro = argc > 3 && !strcmp(argv[3], "ro");

		id = shmget(key, 0, 0);
		p = id < 0 ? (void *)-1 : shmat(id, NULL, ro ? SHM_RDONLY : 0);
		if (p == (void *)-1) {
			printf("get: %s\n", err_name(errno));
			return 1;
		}
		printf("get: %.100s\n", p);
		return shmdt(p);
	}
	if (argc > 2 && !strcmp(argv[1], "rm")) {
		id = shmget(key, 0, 0);
		if (id < 0 || shmctl(id, IPC_RMID, NULL) < 0) {
			printf("rm: %s\n", err_name(errno));
			return 1;
		}
		printf("rm: ok\n");
		return 0;
	}
	fprintf(stderr, "usage: trust_shm rdonly | put KEY MODE TEXT | get KEY [ro] | rm KEY\n");
	return 2;
}
