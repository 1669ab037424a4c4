/*
 * shm_fds.c - the segment files' fds uipc keeps (the fd cache) are
 * invisible to the application and keep no memory:
 *   1. a process that attached and detached keeps an fd of the file; when
 *      another process destroys the segment, the file is emptied (its
 *      pages freed at once, as the kernel frees them)
 *   2. close() of a kept fd is EBADF and leaves it working; dup2 onto it
 *      moves it out of the way
 *   3. a fork child's inherited fds do the same (1)
 * Run under uipc (the .t sets LD_PRELOAD and a fresh UIPC_DIR).  TAP.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SZ (1 << 20)
static int t;

static void ok(int c, const char *what)
{
	printf("%sok %d - %s\n", c ? "" : "not ", ++t, what);
}

/* blocks held by PID's fds of segment files; -1 if it has none */
static long seg_blocks(pid_t pid, int *nfds, int *first)
{
	char d[64], l[600], tg[600];
	DIR *dd;
	struct dirent *e;
	long b = -1;

	*nfds = 0;
	snprintf(d, sizeof d, "/proc/%d/fd", (int)pid);
	dd = opendir(d);
	while (dd && (e = readdir(dd))) {
		struct stat st;
		ssize_t n;

		snprintf(l, sizeof l, "%s/%s", d, e->d_name);
		n = readlink(l, tg, sizeof tg - 1);
		if (n < 0)
			continue;
		tg[n] = 0;
		if (!strstr(tg, ".shm-") || stat(l, &st) < 0)
			continue;
		if (!*nfds)
			*first = atoi(e->d_name);
		(*nfds)++;
		b = (b < 0 ? 0 : b) + (long)st.st_blocks;
	}
	if (dd)
		closedir(dd);
	return b;
}

/* a child attaches, fills, detaches (keeping its fd), waits; we destroy */
static void held_by_child(int fork_only)
{
	int id = shmget(IPC_PRIVATE, SZ, IPC_CREAT | 0600), go[2], rdy[2], nfds, first;
	char *p, b, why[128];
	pid_t c;
	long blocks;

	if (pipe(go) || pipe(rdy))
		exit(1);
	if (fork_only) {
		/* the parent created and filled it; the child only inherits */
		p = shmat(id, NULL, 0);
		memset(p, 1, SZ);
		shmdt(p);
	}
	c = fork();
	if (c == 0) {
		if (!fork_only) {
			p = shmat(id, NULL, 0);
			memset(p, 1, SZ);
			shmdt(p);
		}
		if (write(rdy[1], "x", 1) != 1 || read(go[0], &b, 1) != 1)
			_exit(1);
		_exit(0);
	}
	if (read(rdy[0], &b, 1) != 1)
		exit(1);
	blocks = seg_blocks(c, &nfds, &first);
	snprintf(why, sizeof why, "%s: the child keeps an fd of the file (%d fds, %ld blocks)",
		 fork_only ? "inherited" : "attached", nfds, blocks);
	ok(nfds == 1 && blocks >= SZ / 512, why);
	ok(shmctl(id, IPC_RMID, NULL) == 0, "IPC_RMID by another process");
	blocks = seg_blocks(c, &nfds, &first);
	snprintf(why, sizeof why, "its file is emptied at once (%ld blocks left)", blocks);
	ok(nfds == 1 && blocks == 0, why);
	if (write(go[1], "x", 1) != 1)
		exit(1);
	waitpid(c, NULL, 0);
	close(go[0]), close(go[1]), close(rdy[0]), close(rdy[1]);
}

int main(void)
{
	int id, nfds, first = -1;
	char *p;

	printf("1..11\n");
	held_by_child(0);
	held_by_child(1);

	id = shmget(IPC_PRIVATE, 8192, IPC_CREAT | 0600);
	p = shmat(id, NULL, 0);
	p[1] = 'k';
	shmdt(p);
	seg_blocks(getpid(), &nfds, &first);
	ok(nfds == 1 && first > 2, "the creator keeps one fd, not a low number");
	errno = 0;
	ok(close(first) == -1 && errno == EBADF, "close() of it: EBADF");
	ok(dup2(0, first) == first, "dup2 onto its number works");
	p = shmat(id, NULL, 0);
	ok(p != (void *)-1 && p[1] == 'k', "attach afterwards: the same memory");
	close(first);
	shmdt(p);
	shmctl(id, IPC_RMID, NULL);
	/* its file is an empty spare now, whose fd we may keep for the next
	 * shmget: nothing of the segment's memory */
	{
		long b = seg_blocks(getpid(), &nfds, &first);

		ok(nfds == 0 || (nfds == 1 && b == 0),
		   "no fd of the segment's memory left once it is gone (at most an empty spare's)");
	}
	return 0;
}
