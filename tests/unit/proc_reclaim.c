/*
 * proc_reclaim.c - the process slots of killed processes come back
 * whatever pid_max is: they are not left for a new process with the same
 * pid to find (issue 14, item 7).  Run under uipc (LD_PRELOAD) in a fresh
 * namespace; prints TAP.
 *
 * KILLED children each register (half of them with a GETVAL, which leaves
 * nothing for the semaphore code to clean up, half with a SEM_UNDO semop,
 * which leaves an undo entry) and are SIGKILLed; then as many children
 * register and exit normally.  Afterwards no process slot is still taken
 * by a process that no longer exists, and the killed children's SEM_UNDO
 * adjustments were applied (the semaphore is back at its value).
 *
 * Then one more killed child's slot is made to name, as its reaper, a
 * thread id that a live process outside the namespace has (pid 1): what a
 * reaper killed in its work leaves once the pids have gone round.  Its
 * SEM_UNDO must still be applied: the slot is taken over.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sem.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../core/layout.h"

#define KILLED 300

static int semid;

/* a child that registers (a GETVAL, or with UNDO a SEM_UNDO semop) and,
 * if it is to be killed, says so and waits for the signal */
static pid_t child(bool killed, bool undo)
{
	int pfd[2];
	pid_t p;
	char c;

	if (pipe(pfd) < 0)
		return -1;
	p = fork();
	if (p == 0) {
		struct sembuf up = { 0, 1, SEM_UNDO };

		close(pfd[0]);
		if (undo ? semop(semid, &up, 1) < 0 : semctl(semid, 0, GETVAL) < 0)
			_exit(2);
		if (!killed)
			exit(0);        /* gives its own slot back (_exit leaves it to be reaped) */
		if (write(pfd[1], "r", 1) != 1)
			_exit(2);
		pause();
		_exit(3);
	}
	close(pfd[1]);
	if (p > 0 && killed && read(pfd[0], &c, 1) == 1)
		kill(p, SIGKILL);
	close(pfd[0]);
	return p;
}

/* the namespace file at PATH mapped (writable if WRITE), its size in
 * *LEN; NULL if it cannot be */
static struct uipc_hdr *map_ns(const char *path, bool write, size_t *len)
{
	struct stat st;
	void *h;
	int fd = open(path, write ? O_RDWR : O_RDONLY);

	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	*len = (size_t)st.st_size;
	h = mmap(NULL, *len, PROT_READ | (write ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
	close(fd);
	return h == MAP_FAILED ? NULL : h;
}

/* slots still LIVE whose process no longer exists */
static int leaked_slots(const char *path, int *hwm)
{
	size_t len;
	struct uipc_hdr *h = map_ns(path, false, &len);
	int n = 0;

	if (!h)
		return -1;
	*hwm = (int)atomic_load(&h->procs_hwm);
	for (uint32_t i = 0; i < atomic_load(&h->procs_hwm) && i < MAX_PROCS; i++) {
		struct uproc *p = (struct uproc *)((char *)h + h->procs + (uint64_t)i * sizeof(*p));
		uint64_t w = atomic_load(&p->state);

		if (SLOT_STATE(w) == SLOT_LIVE && kill(SLOT_ID(w), 0) < 0 && errno == ESRCH)
			n++;
	}
	munmap(h, len);
	return n;
}

/* the LIVE slot of process PID set to DEAD with reaper thread id REAPER
 * (through our own mapping of the file: no IPC call, which could reap it
 * first); 0, or -1 if no such slot */
static int name_reaper(const char *path, pid_t pid, int32_t reaper)
{
	size_t len;
	struct uipc_hdr *h = map_ns(path, true, &len);
	int r = -1;

	if (!h)
		return -1;
	for (uint32_t i = 0; i < atomic_load(&h->procs_hwm) && i < MAX_PROCS && r; i++) {
		struct uproc *p = (struct uproc *)((char *)h + h->procs + (uint64_t)i * sizeof(*p));
		uint64_t w = SLOT_WORD(pid, SLOT_LIVE);

		if (atomic_compare_exchange_strong(&p->state, &w, SLOT_WORD(reaper, SLOT_DEAD)))
			r = 0;
	}
	munmap(h, len);
	return r;
}

int main(void)
{
	const char *d = getenv("UIPC_DIR"), *name = getenv("UIPC_NS");
	char path[4096];
	int bad = 0, leaked, hwm = 0, val;

	setvbuf(stdout, NULL, _IOLBF, 0);   /* nothing buffered for children's exit() */
	semid = semget(IPC_PRIVATE, 1, 0600);
	if (!d || !name || semid < 0) {
		printf("1..1\nnot ok 1 - needs UIPC_DIR, UIPC_NS and a semaphore: %s\n", strerror(errno));
		return 1;
	}
	snprintf(path, sizeof path, "%s/uipc-%u-%s", d, (unsigned)getuid(), name);
	printf("1..5\n");
	for (int i = 0; i < KILLED; i++) {
		int st;
		pid_t p = child(true, i % 2);

		bad += p < 0 || waitpid(p, &st, 0) != p || !WIFSIGNALED(st);
	}
	for (int i = 0; i < KILLED; i++) {
		int st;
		pid_t p = child(false, false);

		bad += p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st);
	}
	printf("%s 1 - %d children killed after registering, %d more registered and exited%s\n",
	       bad ? "not ok" : "ok", KILLED, KILLED, bad ? " (some did not behave)" : "");
	leaked = leaked_slots(path, &hwm);
	printf("%s 2 - no process slot is left to a process that is gone (%d left, high-water mark %d)\n",
	       leaked == 0 ? "ok" : "not ok", leaked, hwm);
	val = semctl(semid, 0, GETVAL);
	printf("%s 3 - the killed children's SEM_UNDO adjustments were applied (value %d)\n",
	       val == 0 ? "ok" : "not ok", val);
	{
		int st, named;
		pid_t p = child(true, true);

		bad += p < 0 || waitpid(p, &st, 0) != p || !WIFSIGNALED(st);
		named = name_reaper(path, p, 1);
		printf("%s 4 - a killed child's slot names a reaper whose thread id a live process outside has\n",
		       named == 0 ? "ok" : "not ok");
		val = semctl(semid, 0, GETVAL);
		printf("%s 5 - its SEM_UNDO adjustment was applied all the same (value %d)\n",
		       val == 0 ? "ok" : "not ok", val);
		bad += named != 0;
	}
	semctl(semid, 0, IPC_RMID);
	return bad || leaked || val ? 1 : 0;
}
