/*
 * key_table.c - the key hash under the patterns that stress it: runs of
 * neighbouring keys (they share a bucket, and a run whose bucket is taken
 * spills into the next), scattered keys, keys that differ only in their high
 * bits, negative keys; removals (tombstones), re-creation, growth and the
 * rebuilds that drop tombstones, and the key a removed attached segment
 * gives up (IPC_RMID with attachments: the kernel's ipc_set_key_private).
 * Every key must find its object and no other, a removed key none, and the
 * namespace check (uipc_ns_check) must find nothing wrong after each phase.
 * Run under uipc in a fresh namespace.  Prints TAP.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sem.h>
#include <sys/shm.h>

#define NKEYS 9000

static int n, failed;
static key_t keys[NKEYS];
static int ids[NKEYS];         /* -1: removed */
static int (*ns_check)(char *report, size_t len);

static void ok(int cond, const char *what, const char *detail)
{
	n++;
	if (cond) {
		printf("ok %d - %s\n", n, what);
	} else {
		failed++;
		printf("not ok %d - %s%s%s\n", n, what, detail ? ": " : "", detail ? detail : "");
	}
}

/* 3,000 neighbours, 3,000 scattered, 1,500 that differ in the high byte
 * only, 1,500 negative ones; all distinct and none IPC_PRIVATE */
static void make_keys(void)
{
	uint32_t x = 12345;
	int i, k = 0;

	for (i = 0; i < 3000; i++)
		keys[k++] = 0x424242 + i;
	for (i = 0; i < 3000; i++) {
		x = x * 1103515245u + 12345u;
		keys[k++] = (key_t)((x & 0x7ffffff0u) | 0x10000000u | (uint32_t)(i & 15));
	}
	for (i = 0; i < 1500; i++)
		keys[k++] = (key_t)(((uint32_t)(i % 120 + 1) << 24) | (uint32_t)(0x5151 + i / 120));
	for (i = 0; i < 1500; i++)
		keys[k++] = (key_t)(0x80000000u | (uint32_t)(7 * i + 3));
}

static int create_all(void)
{
	for (int i = 0; i < NKEYS; i++) {
		if (ids[i] >= 0)
			continue;
		ids[i] = semget(keys[i], 1, IPC_CREAT | IPC_EXCL | 0600);
		if (ids[i] < 0)
			return i;
	}
	return -1;
}

/* every key finds its id, a removed one ENOENT; the first wrong index or -1 */
static int lookup_all(char *detail, size_t len)
{
	for (int i = 0; i < NKEYS; i++) {
		int id = semget(keys[i], 1, 0600);

		if (ids[i] >= 0 ? id != ids[i] : !(id < 0 && errno == ENOENT)) {
			snprintf(detail, len, "key %#x: got %d (%s), want %d", (unsigned)keys[i],
				 id, id < 0 ? strerror(errno) : "", ids[i]);
			return i;
		}
	}
	return -1;
}

static void check_ns(const char *what)
{
	char report[4096] = "";
	int r = ns_check(report, sizeof(report));
	char msg[160];

	snprintf(msg, sizeof(msg), "the namespace check finds nothing wrong %s", what);
	ok(r == 0, msg, r ? report : NULL);
}

static void rmid(int i)
{
	semctl(ids[i], 0, IPC_RMID);
	ids[i] = -1;
}

int main(void)
{
	char detail[256];
	int i, r, eexist = 1;

	ns_check = (int (*)(char *, size_t))dlsym(RTLD_DEFAULT, "uipc_ns_check");
	if (!ns_check) {
		printf("1..1\nnot ok 1 - not run under uipc (no uipc_ns_check)\n");
		return 1;
	}
	printf("1..13\n");
	make_keys();
	memset(ids, 0xff, sizeof(ids));

	r = create_all();
	ok(r < 0, "9,000 keys created (neighbours, scattered, high bits, negative)", NULL);
	ok(lookup_all(detail, sizeof(detail)) < 0, "each key finds its own id", detail);
	for (i = 0; i < NKEYS && eexist; i += 7)
		eexist = semget(keys[i], 1, IPC_CREAT | IPC_EXCL | 0600) < 0 && errno == EEXIST;
	ok(eexist, "IPC_CREAT|IPC_EXCL on a present key: EEXIST", NULL);
	check_ns("after creation");

	/* every third removed: tombstones inside runs of neighbours */
	for (i = 0; i < NKEYS; i += 3)
		rmid(i);
	ok(lookup_all(detail, sizeof(detail)) < 0,
	   "after removing every third key: removed keys ENOENT, the others their ids", detail);
	check_ns("after removals");

	r = create_all();
	ok(r < 0 && lookup_all(detail, sizeof(detail)) < 0,
	   "the removed keys created again: each key finds its new id", detail);

	/* rounds of removing and re-creating half: tombstones pile up until a
	 * rebuild drops them */
	for (int round = 0; round < 12; round++) {
		for (i = round & 1; i < NKEYS; i += 2)
			rmid(i);
		if (create_all() >= 0)
			break;
	}
	ok(lookup_all(detail, sizeof(detail)) < 0,
	   "after 12 rounds of removing and re-creating half the keys", detail);
	check_ns("after the rounds");

	for (i = 0; i < NKEYS; i++)
		rmid(i);
	ok(lookup_all(detail, sizeof(detail)) < 0, "all removed: every key ENOENT", detail);

	/* a keyed segment removed while attached gives up its key */
	{
		int shmid = shmget(0x5e6e7e, 4096, IPC_CREAT | IPC_EXCL | 0600), again;
		void *at = shmid >= 0 ? shmat(shmid, NULL, 0) : (void *)-1;

		if (at != (void *)-1)
			shmctl(shmid, IPC_RMID, NULL);
		again = shmget(0x5e6e7e, 4096, 0600);
		ok(at != (void *)-1 && again < 0 && errno == ENOENT,
		   "a segment removed while attached: its key finds nothing", NULL);
		again = shmget(0x5e6e7e, 4096, IPC_CREAT | IPC_EXCL | 0600);
		ok(again >= 0 && again != shmid, "the key makes a new segment", NULL);
		if (at != (void *)-1)
			shmdt(at);
		if (again >= 0)
			shmctl(again, IPC_RMID, NULL);
	}
	check_ns("at the end");
	return failed != 0;
}
