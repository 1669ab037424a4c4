/*
 * thread_slot_reuse.c - threads that come and go, each making a section
 * too big for its journal frame's inline entries (SETALL of many
 * semaphores: the frame takes overflow chunks from the arena), must not
 * cost the arena a chunk each: a new thread in a slot keeps the slot's
 * chunks.  Run under uipc (the .t sets LD_PRELOAD and a fresh UIPC_DIR).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sem.h>

#include "tap.h"
#include "uipc.h"

#define NSEMS   600
#define ROUNDS  40

static int semid;
static unsigned short vals[NSEMS];

static void *setall(void *arg)
{
	(void)arg;
	return (void *)(long)semctl(semid, 0, SETALL, vals);
}

static long one_thread(void)
{
	pthread_t t;
	void *r;

	if (pthread_create(&t, NULL, setall, NULL) || pthread_join(t, &r))
		return -1;
	return (long)r;
}

int main(void)
{
	int (*stats)(struct uipc_ns_stats *) =
		(int (*)(struct uipc_ns_stats *))dlsym(RTLD_DEFAULT, "uipc_ns_stats");
	struct uipc_ns_stats a, b;
	char what[200];
	int bad = 0;

	printf("1..2\n");
	if (!stats) {
		printf("not ok 1 - run under uipc\nnot ok 2 - run under uipc\n");
		return 1;
	}
	semid = semget(IPC_PRIVATE, NSEMS, 0600);
	for (int i = 0; i < NSEMS; i++)
		vals[i] = (unsigned short)(i % 7);
	/* the first thread's chunks are the slot's from then on */
	bad += one_thread() != 0;
	stats(&a);
	for (int i = 0; i < ROUNDS; i++) {
		for (int k = 0; k < NSEMS; k++)
			vals[k] = (unsigned short)((k + i) % 7);
		bad += one_thread() != 0;
	}
	stats(&b);
	snprintf(what, sizeof what, "%d threads, one after another, each a SETALL of %d semaphores", ROUNDS,
		 NSEMS);
	ok(semid >= 0 && bad == 0, what);
	snprintf(what, sizeof what, "the arena's use grew by %llu bytes over them (at most 16 KiB)",
		 b.arena_used - a.arena_used);
	ok(b.arena_used <= a.arena_used + 16384, what);
	semctl(semid, 0, IPC_RMID);
	return tap_failed != 0;
}
