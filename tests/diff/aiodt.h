/*
 * aiodt.h - helpers of the native AIO scenarios (tests/diff/aio_*.c).
 *
 * The programs call libaio's functions (linked with -laio): run plainly
 * they reach the kernel through libaio, under LD_PRELOAD uipc's
 * io_setup, io_submit, ...  libaio returns -errno (errno untouched), so
 * results print as "0", "3" or "-EINVAL".  A context prints by its ring:
 * what the kernel puts there must be there under uipc too.  Files live in
 * a private directory on tmpfs (/dev/shm) or on the disk (/var/tmp, for
 * O_DIRECT), removed at the end of each case.
 */
#ifndef AIODT_H
#define AIODT_H

#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dt.h"

struct aio_ring_hdr {
	unsigned id, nr, head, tail, magic, compat_features, incompat_features, header_length;
};

static char aio_dir[64];

static inline const char *aio_res(long r)
{
	static char b[8][64];
	static int i;

	i = (i + 1) % 8;
	if (r < 0)
		snprintf(b[i], sizeof b[i], "-%s", dt_errname((int)-r));
	else
		snprintf(b[i], sizeof b[i], "%ld", r);
	return b[i];
}

/* a fresh directory on tmpfs (disk = 0) or on the disk (1) */
static inline void aio_mkdir(int disk)
{
	snprintf(aio_dir, sizeof aio_dir, "%s/uipc-aio.XXXXXX", disk ? "/var/tmp" : "/dev/shm");
	if (!mkdtemp(aio_dir))
		dt_fail("mkdtemp: %s", dt_errname(errno));
}

static inline int aio_open(const char *name, int flags)
{
	char p[128];

	snprintf(p, sizeof p, "%s/%s", aio_dir, name);
	return open(p, flags | O_CREAT, 0600);
}

static inline void aio_rmdir(const char *name)
{
	char p[128];

	if (name) {
		snprintf(p, sizeof p, "%s/%s", aio_dir, name);
		unlink(p);
	} else {
		rmdir(aio_dir);
	}
}

static inline io_context_t aio_setup_p(int n)
{
	io_context_t ctx = 0;
	int r = io_setup(n, &ctx);

	dt_out("io_setup(%d) = %s", n, aio_res(r));
	return r == 0 ? ctx : 0;
}

static inline void aio_ring_print(io_context_t ctx)
{
	const struct aio_ring_hdr *h = (const void *)ctx;

	dt_out("  ring id=%u nr=%u head=%u tail=%u magic=%#x compat=%u incompat=%u hdr=%u",
	       h->id, h->nr, h->head, h->tail, h->magic, h->compat_features,
	       h->incompat_features, h->header_length);
}

static inline int aio_destroy_p(io_context_t ctx)
{
	int r = io_destroy(ctx);

	dt_out("io_destroy = %s", aio_res(r));
	return r;
}

static inline int aio_submit_p(const char *what, io_context_t ctx, long nr, struct iocb **v)
{
	int r = io_submit(ctx, nr, v);

	dt_out("io_submit(%s, %ld) = %s", what, nr, aio_res(r));
	return r;
}

static inline int aio_submit1(const char *what, io_context_t ctx, struct iocb *cb)
{
	return aio_submit_p(what, ctx, 1, &cb);
}

/* reap up to N events (at least MIN, 5 s at most), print them sorted by
 * data (completions may come in any order) */
static inline int aio_reap(io_context_t ctx, int min, int n)
{
	struct io_event ev[256];
	struct timespec ts = { 5, 0 };
	int r, i, j;

	r = io_getevents(ctx, min, n, ev, &ts);
	dt_out("io_getevents(%d, %d) = %s", min, n, aio_res(r));
	for (i = 1; i < r; i++)
		for (j = i; j > 0 && ev[j - 1].data > ev[j].data; j--) {
			struct io_event t = ev[j];

			ev[j] = ev[j - 1];
			ev[j - 1] = t;
		}
	for (i = 0; i < r; i++)
		dt_out("  event data=%lu res=%s res2=%ld", (unsigned long)(uintptr_t)ev[i].data,
		       aio_res(ev[i].res), (long)ev[i].res2);
	return r;
}

/* the file's size and a checksum of its first 1 MiB */
static inline void aio_file_print(int fd)
{
	unsigned char b[4096];
	unsigned long h = 5381;
	off_t off = 0;
	ssize_t n;
	struct stat st;

	if (fstat(fd, &st) == 0)
		dt_out("  file st_size=%lld", (long long)st.st_size);
	while (off < (1 << 20) && (n = pread(fd, b, sizeof b, off)) > 0) {
		for (ssize_t i = 0; i < n; i++)
			h = h * 33 + b[i];
		off += n;
	}
	dt_out("  file size=%ld hash=%lx", (long)off, h);
}

#endif
