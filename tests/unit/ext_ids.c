/*
 * ext_ids.c - the id layout of an extended (ipcmni_extend) namespace, which
 * the kernel here cannot show (it is not booted with ipcmni_extend): ids are
 * (seq << 24) + idx, the cyclic allocation runs over at least 4096 indices,
 * seq is below INT_MAX >> 24 = 127 (the kernel resets it to 0 when it
 * reaches that: values 0..126), sem_next_id places ids.  Run under uipc
 * with UIPC_NS_EXTENDED=1 in a fresh namespace.  Prints TAP.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/sem.h>

static int n, failed;

static void is(long got, long want, const char *what)
{
	n++;
	if (got == want) {
		printf("ok %d - %s\n", n, what);
	} else {
		failed++;
		printf("not ok %d - %s: got %ld, want %ld\n", n, what, got, want);
	}
}

static int make_and_remove(void)
{
	int id = semget(IPC_PRIVATE, 1, 0600);

	if (id >= 0)
		semctl(id, 0, IPC_RMID);
	return id;
}

int main(void)
{
	int (*set)(const char *, const char *) =
		(int (*)(const char *, const char *))dlsym(RTLD_DEFAULT, "uipc_sysctl_set");
	int keep, id = -1, i, seq_wraps_ok = 1;
	struct seminfo si;

	printf("1..8\n");
	keep = semget(IPC_PRIVATE, 1, 0600);
	is(keep, 0, "the first id is 0");
	/* create and remove: indices cycle over 4096 before the seq moves */
	for (i = 1; i < 4096; i++)
		id = make_and_remove();
	is(id, 4095, "cyclic allocation reaches index 4095 (ipc_min_cycle 4096)");
	id = make_and_remove();
	is(id, (1 << 24) + 1, "then wraps to index 1 (0 is in use) with seq 1");
	/* seq counts up to 126; reaching 127 (INT_MAX >> 24) resets it to 0 */
	for (i = 2; i < 127 && seq_wraps_ok; i++) {
		int k;

		for (k = 0; k < 4095; k++)
			id = make_and_remove();
		if (id >> 24 != i)
			seq_wraps_ok = 0;
	}
	is(seq_wraps_ok, 1, "seq grows by one per cycle up to 126");
	for (i = 0; i < 4095; i++)
		id = make_and_remove();
	is(id >> 24, 0, "seq wraps from 126 to 0 (seq max INT_MAX >> 24)");
	is(set != NULL && set("kernel.sem_next_id", "50331653") == 0, 1,
	   "kernel.sem_next_id accepts (3 << 24) + 5");
	id = semget(IPC_PRIVATE, 1, 0600);
	is(id, (3 << 24) + 5, "sem_next_id places the id at seq 3, index 5");
	semctl(id, 0, IPC_RMID);
	semctl(keep, 0, IPC_RMID);
	is(semctl(0, 0, SEM_INFO, (struct seminfo *)&si) >= 0 && si.semusz == 0, 1,
	   "nothing left");
	return failed ? 1 : 0;
}
