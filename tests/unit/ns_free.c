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
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
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

int main(void)
{
	printf("1..8\n");
	recycled();
	let_go();
	let_go();
	ok(zombies() <= 1, "the helpers are reaped (at most one zombie)");
	return tap_failed != 0;
}
