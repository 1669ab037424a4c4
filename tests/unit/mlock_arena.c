/*
 * tests/unit/mlock_arena.c - the program's mlockall locks its own memory and
 * its shared memory attachments, as on the kernel, but never the namespace
 * arena (a sparse file of gigabytes that locking would allocate whole).
 *
 *   mlock_arena current    IPC first, then mlockall(MCL_CURRENT | MCL_FUTURE)
 *   mlock_arena future     mlockall(MCL_FUTURE) before the first IPC call
 *
 * Runs on the kernel too (unshare --ipc): the same checks hold there.  Under
 * uipc (UIPC_DIR and UIPC_NS set) it also checks that the namespace file
 * did not grow.  Prints TAP lines without numbers or plan (the .t counts).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#define MIB (1L << 20)

static int n_test, n_fail;

static void ok(int cond, const char *what)
{
	n_test++;
	if (!cond)
		n_fail++;
	printf("%sok - %s\n", cond ? "" : "not ", what);
}

/* VmLck of this process, in bytes */
static long vm_locked(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb * 1024;
}

/* bytes the namespace file holds on disk, -1 on the kernel */
static long ns_file_bytes(void)
{
	const char *dir = getenv("UIPC_DIR"), *name = getenv("UIPC_NS");
	char path[4200];
	struct stat st;

	if (!dir || !name)
		return -1;
	snprintf(path, sizeof(path), "%s/uipc-%d-%s", dir, (int)getuid(), name);
	return stat(path, &st) ? -1 : (long)st.st_blocks * 512;
}

static int new_segment(char **at)
{
	int id = shmget(IPC_PRIVATE, MIB, IPC_CREAT | 0600);

	*at = id < 0 ? (char *)-1 : shmat(id, NULL, 0);
	return id;
}

int main(int argc, char **argv)
{
	int future_first = argc > 1 && !strcmp(argv[1], "future");
	long before, lck, file0, file1;
	char *a, *b;
	int sem, s1, s2;

	if (future_first)
		ok(mlockall(MCL_FUTURE) == 0, "mlockall(MCL_FUTURE) before any IPC call");
	sem = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
	ok(sem >= 0, "semget (the namespace is mapped now)");
	file0 = ns_file_bytes();
	s1 = new_segment(&a);
	ok(s1 >= 0 && a != (char *)-1, "a 1 MiB segment, attached");
	if (!future_first) {
		before = vm_locked();
		ok(mlockall(MCL_CURRENT | MCL_FUTURE) == 0, "mlockall(MCL_CURRENT | MCL_FUTURE)");
		lck = vm_locked();
		printf("# VmLck %ld kB -> %ld kB\n", before / 1024, lck / 1024);
		ok(lck >= MIB, "the attached segment is locked with the rest");
	}
	lck = vm_locked();
	ok(lck < 512 * MIB, "what is locked is the program's memory, not gigabytes");
	s2 = new_segment(&b);
	ok(s2 >= 0 && b != (char *)-1, "a second segment attached under MCL_FUTURE");
	ok(vm_locked() >= lck + MIB, "it is locked as it is attached (MCL_FUTURE)");
	if (s2 >= 0 && b != (char *)-1)
		memset(b, 1, MIB);
	file1 = ns_file_bytes();
	if (file0 >= 0) {
		printf("# namespace file on disk: %ld kB -> %ld kB\n", file0 / 1024, file1 / 1024);
		ok(file1 - file0 < 16 * MIB, "the namespace file did not fill up");
	}
	ok(munlockall() == 0 && vm_locked() == 0, "munlockall unlocks everything");
	if (a != (char *)-1)
		shmdt(a);
	if (b != (char *)-1)
		shmdt(b);
	if (s1 >= 0)
		shmctl(s1, IPC_RMID, NULL);
	if (s2 >= 0)
		shmctl(s2, IPC_RMID, NULL);
	if (sem >= 0)
		semctl(sem, 0, IPC_RMID);
	printf("# %d checks, %d failed\n", n_test, n_fail);
	return n_fail != 0;
}
