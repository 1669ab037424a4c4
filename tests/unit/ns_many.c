/*
 * ns_many.c - what anonymous namespaces cost, and many of them at once:
 * run under uipc by tests/unit-ns-many.t, prints TAP.
 *
 *   1. a new, empty namespace holds at most 64 KiB of memory (its memfd's
 *      blocks: the pages it really has);
 *   2. so does one made anew in place after its old incarnation held 75
 *      arrays and queues;
 *   3. N (10,000) namespaces live at once, each held by the descriptor of
 *      its /proc/self/ns/ipc (as kernel namespaces are held by nsfs
 *      descriptors): every unshare and open succeeds, and they are N
 *      different files;
 *   4. they hold at most 64 KiB each on average;
 *   5. each keeps its own objects: a sample is joined by setns, an array
 *      made in each, and each sees its own and none of the others';
 *   6. once the descriptors are closed, this process holds only the
 *      namespace it is in.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/stat.h>
#include <unistd.h>

#define KIB 1024LL
#define KEY 0x6e5a0000
#define SAMPLE 20

#include "tap.h"

static int ns_fd(void)
{
	const char *v = getenv("UIPC_NS_FD");

	return v && *v ? atoi(v) : -1;
}

static long long kib_of(int fd, ino_t *ino)
{
	struct stat st;

	if (fstat(fd, &st))
		return -1;
	if (ino)
		*ino = st.st_ino;
	return (long long)st.st_blocks * 512 / KIB;
}

static void empty_costs(void)
{
	long long k;
	ino_t a, b;

	unshare(CLONE_NEWIPC);
	k = kib_of(ns_fd(), &a);
	printf("# a new empty namespace: %lld KiB\n", k);
	ok(k > 0 && k <= 64, "a new, empty namespace holds at most 64 KiB");
	for (int i = 0; i < 50; i++) {
		semget(IPC_PRIVATE, 4, IPC_CREAT | 0600);
		if (i % 2)
			msgget(IPC_PRIVATE, IPC_CREAT | 0600);
	}
	printf("# with 50 arrays and 25 queues: %lld KiB\n", kib_of(ns_fd(), NULL));
	unshare(CLONE_NEWIPC);
	k = kib_of(ns_fd(), &b);
	printf("# the next one (%s): %lld KiB\n", a == b ? "made in place" : "a new memfd", k);
	ok(a == b && k > 0 && k <= 64,
	   "one made anew in place after 75 objects holds at most 64 KiB");
}

static int cmp_ino(const void *x, const void *y)
{
	ino_t a = *(const ino_t *)x, b = *(const ino_t *)y;

	return a < b ? -1 : a > b;
}

/* memfds of anonymous namespaces among this process's descriptors */
static int anon_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int c = 0;

	while (d && (e = readdir(d))) {
		char link[256];
		ssize_t l = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);

		if (l > 0 && (link[l] = 0, !strncmp(link, "/memfd:uipc-ns", 14)))
			c++;
	}
	if (d)
		closedir(d);
	return c;
}

static void many(int count)
{
	int *fds = calloc((size_t)count, sizeof(int));
	ino_t *inos = calloc((size_t)count, sizeof(ino_t));
	long long total = 0;
	int made = 0, distinct = 1, own = 0, seen_other = 0;
	char what[128];

	for (; made < count; made++) {
		struct stat st;

		if (unshare(CLONE_NEWIPC)) {
			printf("# unshare %d: %s\n", made, strerror(errno));
			break;
		}
		fds[made] = open("/proc/self/ns/ipc", O_RDONLY | O_CLOEXEC);
		if (fds[made] < 0 || fstat(fds[made], &st)) {
			printf("# open %d: %s\n", made, strerror(errno));
			break;
		}
		inos[made] = st.st_ino;
		total += (long long)st.st_blocks * 512;
	}
	qsort(inos, (size_t)made, sizeof(ino_t), cmp_ino);
	for (int i = 1; i < made; i++)
		if (inos[i] == inos[i - 1])
			distinct = 0;
	snprintf(what, sizeof(what), "%d namespaces live at once, held by descriptors, all different",
		 count);
	ok(made == count && distinct, what);
	printf("# %d made; their memory: %lld KiB, %lld KiB each\n", made, total / KIB,
	       made ? total / KIB / made : 0);
	ok(made && total / made <= 64 * KIB, "they hold at most 64 KiB each on average");
	for (int s = 0; s < SAMPLE && made; s++) {
		int k = (int)((long long)s * made / SAMPLE);

		if (setns(fds[k], CLONE_NEWIPC) || semget(KEY + k, 1, IPC_CREAT | IPC_EXCL | 0600) < 0)
			printf("# setns/semget %d: %s\n", k, strerror(errno));
	}
	for (int s = 0; s < SAMPLE && made; s++) {
		int k = (int)((long long)s * made / SAMPLE);
		int other = (int)((long long)((s + 1) % SAMPLE) * made / SAMPLE);

		if (setns(fds[k], 0))
			continue;
		own += semget(KEY + k, 1, 0) >= 0;
		seen_other += semget(KEY + other, 1, 0) >= 0;
	}
	ok(own == SAMPLE && !seen_other, "each keeps its own objects (a sample joined by setns)");
	for (int i = 0; i < made; i++)
		close(fds[i]);
	ok(anon_fds() == 1, "with the descriptors closed, only the namespace it is in is held");
	free(fds);
	free(inos);
}

int main(int argc, char **argv)
{
	int count = argc > 1 ? atoi(argv[1]) : 10000;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	printf("1..6\n");
	empty_costs();
	many(count);
	return tap_failed != 0;
}
