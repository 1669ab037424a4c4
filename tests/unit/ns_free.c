/*
 * ns_free.c - the memory of a namespace left by unshare is freed, and not
 * by the process that left it when it is large (core/nsfree.c): run under
 * uipc by tests/unit-ns-free.t, prints TAP.
 *
 *   1-3. an unshare out of a namespace only this process holds makes the
 *        new one of it in place: the old one's written 64 MiB segment goes
 *        (the memfd's blocks drop, within a deadline), the objects are
 *        gone, and a segment made at once in the new one keeps its bytes
 *        while the old slots are emptied;
 *   4-7. (twice) an unshare out of one a fork child also held (so it gets
 *        a new memfd): the old memfd, with its written 64 MiB, is held by
 *        no process in the end (the helper that let go of it has gone);
 *   8.   the helpers are reaped: no more than one of them is ever left a
 *        zombie.
 *   9-11. many namespaces made anew in place in a row, each with a written
 *        segment: the memfd holds only the last one's in the end (the
 *        segments of every earlier incarnation were emptied, not only the
 *        last one's), and a new segment reads zeros;
 *   12-15. a hundred unshares made in place, each followed by a call (the
 *        thread's slot page mapped again is kept across: core/proc.c,
 *        parked_alias): the thread's robust list holds exactly one word
 *        naming it, the entries on it do not grow, nor the mappings; a
 *        fork child made after one, registered in the namespace then shared,
 *        has exactly one word of its own on its list.
 *
 *   ns_free bigleave: (tests/unit-ns-life.t) an unshare out of a namespace
 *        with a written 64 MiB segment (its slots emptied by a helper),
 *        then the process exits at once; no output.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIB (1u << 20)
#define SEG (64 * MIB)
#define KEY 0x5f3e

#include "tap.h"

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/* the anonymous namespace's memfd, from the environment uipc keeps */
static int ns_fd(void)
{
	const char *v = getenv("UIPC_NS_FD");

	return v && *v ? atoi(v) : -1;
}

static long long blocks_mib(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? -1 : (long long)st.st_blocks * 512 / MIB;
}

/* a segment of SEG bytes written with BYTE, detached; its id */
static int written_segment(key_t key, int byte)
{
	int id = shmget(key, SEG, IPC_CREAT | 0600);
	char *p = id < 0 ? (void *)-1 : shmat(id, NULL, 0);

	if (p == (void *)-1) {
		printf("# shmget/shmat: %s\n", strerror(errno));
		return -1;
	}
	memset(p, byte, SEG);
	shmdt(p);
	return id;
}

/* does any process have the file (DEV, INO) open or mapped? */
static int file_held(dev_t dev, ino_t ino)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int held = 0;

	while (d && !held && (e = readdir(d))) {
		char path[300], line[512];
		FILE *m;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/maps", e->d_name);
		m = fopen(path, "r");
		while (m && !held && fgets(line, sizeof(line), m)) {
			unsigned maj, mi;
			unsigned long long i;

			if (sscanf(line, "%*x-%*x %*s %*x %x:%x %llu", &maj, &mi, &i) == 3 &&
			    i == ino && makedev(maj, mi) == dev)
				held = 1;
		}
		if (m)
			fclose(m);
		snprintf(path, sizeof(path), "/proc/%s/fd", e->d_name);
		DIR *fds = opendir(path);
		struct dirent *f;

		while (fds && !held && (f = readdir(fds))) {
			struct stat st;

			if (f->d_name[0] != '.' && !fstatat(dirfd(fds), f->d_name, &st, 0) &&
			    st.st_dev == dev && st.st_ino == ino)
				held = 1;
		}
		if (fds)
			closedir(fds);
	}
	if (d)
		closedir(d);
	return held;
}

/* zombies among this process's children */
static int zombies(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int z = 0;

	while (d && (e = readdir(d))) {
		char path[300], buf[512], *p;
		FILE *f;
		int ppid;
		char state;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) &&
		    sscanf(p + 2, "%c %d", &state, &ppid) == 2 && ppid == getpid() && state == 'Z')
			z++;
		fclose(f);
	}
	if (d)
		closedir(d);
	return z;
}

static void recycled(void)
{
	long long deadline, mib;
	int fd, id;
	char *p;

	unshare(CLONE_NEWIPC);
	fd = ns_fd();
	if (written_segment(KEY, 'a') < 0)
		exit(1);
	printf("# memfd holds %lld MiB\n", blocks_mib(fd));
	unshare(CLONE_NEWIPC);
	id = written_segment(KEY + 1, 'b');
	deadline = now_ms() + 20000;
	while ((mib = blocks_mib(fd)) >= SEG / MIB + 4 && now_ms() < deadline)
		usleep(10000);
	ok(fd == ns_fd() && mib >= 0 && mib < SEG / MIB + 4,
	   "recycled: the old segment's memory is freed (the new one's kept)");
	printf("# memfd holds %lld MiB\n", mib);
	ok(shmget(KEY, 0, 0) < 0 && errno == ENOENT, "recycled: the old segment is gone");
	p = id < 0 ? (void *)-1 : shmat(id, NULL, SHM_RDONLY);
	ok(p != (void *)-1 && p[0] == 'b' && p[SEG - 1] == 'b' && p[SEG / 2] == 'b',
	   "recycled: the new namespace's segment keeps its bytes");
	if (p != (void *)-1)
		shmdt(p);
	shmctl(id, IPC_RMID, NULL);
}

static void let_go(void)
{
	long long deadline;
	struct stat st;
	pid_t c;
	int fd;

	unshare(CLONE_NEWIPC);
	fd = ns_fd();
	if (written_segment(KEY, 'c') < 0 || fstat(fd, &st))
		exit(1);
	c = fork();      /* someone else held it: it cannot be made anew in place */
	if (c == 0)
		_exit(0);
	waitpid(c, NULL, 0);
	unshare(CLONE_NEWIPC);
	struct stat now;
	ok(fstat(ns_fd(), &now) == 0 && now.st_ino != st.st_ino, "let go: a new memfd");
	deadline = now_ms() + 20000;
	while (file_held(st.st_dev, st.st_ino) && now_ms() < deadline)
		usleep(10000);
	ok(!file_held(st.st_dev, st.st_ino), "let go: no process holds the old memfd in the end");
}

/* N namespaces made in place one after another, each left with a written
 * segment of 4 MiB: only the last incarnation's may still take memory */
static void recycled_many(int n)
{
	long long deadline, mib;
	int fd, id, zeros = 1;
	char *p;

	unshare(CLONE_NEWIPC);
	fd = ns_fd();
	for (int i = 0; i < n; i++) {
		id = shmget(IPC_PRIVATE, 4 * MIB, IPC_CREAT | 0600);
		p = id < 0 ? (void *)-1 : shmat(id, NULL, 0);
		if (p == (void *)-1)
			exit(1);
		for (size_t k = 0; k < 4 * MIB; k += 4096)
			zeros &= p[k] == 0;
		memset(p, 'd', 4 * MIB);
		shmdt(p);
		unshare(CLONE_NEWIPC);
	}
	deadline = now_ms() + 20000;
	while ((mib = blocks_mib(fd)) >= 4 && now_ms() < deadline)
		usleep(10000);
	ok(fd == ns_fd(), "made in place many times: the same memfd");
	ok(mib >= 0 && mib < 4, "made in place many times: no earlier incarnation's segment left");
	printf("# memfd holds %lld MiB after %d incarnations of 4 MiB each\n", mib, n);
	ok(zeros, "made in place many times: every new segment read zeros");
}

struct rhead {              /* the kernel's struct robust_list_head */
	void *list;
	long off;
	void *pending;
};

/* entries on this thread's robust list, and how many of their words
 * name this thread (-1: no list or a broken one) */
static int robust_words(int *mine)
{
	struct rhead *h = NULL;
	size_t len = 0;
	int n = 0;
	pid_t tid = (pid_t)syscall(SYS_gettid);

	*mine = 0;
	if (syscall(SYS_get_robust_list, 0, &h, &len) || !h)
		return -1;
	for (void *e = h->list; e != (void *)&h->list; e = *(void **)e) {
		uint32_t w = *(uint32_t *)((char *)e + h->off);

		if (++n > 1000)
			return -1;
		if ((w & 0x3fffffff) == (uint32_t)tid)
			++*mine;
	}
	return n;
}

static int mappings(void)
{
	FILE *m = fopen("/proc/self/maps", "r");
	int n = 0, c;

	while (m && (c = getc(m)) != EOF)
		n += c == '\n';
	if (m)
		fclose(m);
	return n;
}

static int new_sem(void)
{
	int id = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);

	if (id < 0)
		exit(1);
	return id;
}

/* a call after each of N unshares made in place: the slot's second
 * mapping is kept, its word stays on the list once */
static void kept_alias(int n)
{
	int mine = 0, entries, maps, bad = 0, grew = 0, st = 0;
	pid_t c;

	unshare(CLONE_NEWIPC);
	new_sem();
	unshare(CLONE_NEWIPC);
	new_sem();
	entries = robust_words(&mine);
	maps = mappings();
	for (int i = 0; i < n; i++) {
		int m2, e2;

		unshare(CLONE_NEWIPC);
		new_sem();
		e2 = robust_words(&m2);
		bad |= m2 != 1;
		grew |= e2 != entries;
	}
	ok(entries > 0 && mine == 1 && !bad,
	   "made in place, then a call: one word on the robust list names this thread");
	ok(!grew, "made in place, then a call: the robust list does not grow");
	ok(mappings() == maps, "made in place, then a call: the mappings do not grow");
	printf("# %d entries, %d mappings before; %d after\n", entries, maps, mappings());
	c = fork();
	if (c == 0) {
		new_sem();
		_exit(robust_words(&mine) > 0 && mine == 1 ? 0 : 1);
	}
	waitpid(c, &st, 0);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	   "a fork child's call there: one word of its own on its robust list");
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "bigleave")) {
		unshare(CLONE_NEWIPC);
		if (written_segment(KEY, 'e') < 0)
			return 1;
		return unshare(CLONE_NEWIPC) != 0;
	}
	printf("1..15\n");
	recycled();
	let_go();
	let_go();
	ok(zombies() <= 1, "the helpers are reaped (at most one zombie)");
	recycled_many(20);
	kept_alias(100);
	return tap_failed != 0;
}
