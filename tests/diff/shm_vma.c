/*
 * shm_vma.c - the application's own munmap, mprotect, mremap and
 * mmap(MAP_FIXED) on attachments.  The kernel counts vmas in shm_nattch:
 * munmap of a whole attachment detaches it (dtime, lpid, SHM_DEST
 * destruction), of a part cuts it (each piece left counts), a vma split by
 * mprotect counts twice and is never merged back, mremap opens the vma at
 * its new place and closes the old one (a shrink cuts and closes the
 * tail, a grow in place does neither), mremap with old_size 0 adds a vma.
 * mlock and madvise advice that changes vma flags split as mprotect does
 * (MADV_DONTFORK vmas are not inherited), mlockall changes whole vmas.
 * shmdt afterwards finds the pieces that still map the segment from the
 * address given.  Addresses are fixed (ADDR, DEST) so that both runs make
 * the same vmas.
 */
#include "dt.h"

#include <errno.h>
#include <signal.h>
#include <sys/shm.h>
#include <sys/time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define P 4096UL
#define ADDR ((char *)0x500000000000UL)
#define DEST ((char *)0x600000000000UL)

static int g_id;

static const char *where(const void *p)
{
	static char bufs[4][64];
	static int k;
	char *buf = bufs[k++ & 3];

	if (p == MAP_FAILED)
		return "MAP_FAILED";
	if ((char *)p >= ADDR && (char *)p < ADDR + 64 * P)
		snprintf(buf, 64, "ADDR+%luP", (unsigned long)(((char *)p - ADDR) / P));
	else if ((char *)p >= DEST && (char *)p < DEST + 64 * P)
		snprintf(buf, 64, "DEST+%luP", (unsigned long)(((char *)p - DEST) / P));
	else
		snprintf(buf, 64, "elsewhere");
	return buf;
}

static void do_munmap(char *p, size_t len)
{
	errno = 0;
	int r = munmap(p, len);
	dt_out("munmap(%s,%luP) = %s", where(p), (unsigned long)(len / P), dt_res(r, errno));
}

static void do_mprotect(char *p, size_t len, int prot)
{
	errno = 0;
	int r = mprotect(p, len, prot);
	dt_out("mprotect(%s,%luP,%d) = %s", where(p), (unsigned long)(len / P), prot,
	       dt_res(r, errno));
}

static char *do_mremap(char *p, size_t olen, size_t nlen, int flags, char *to)
{
	errno = 0;
	char *r = mremap(p, olen, nlen, flags, to);
	int e = errno;
	dt_out("mremap(%s,%luP,%luP,%d) = %s%s", where(p), (unsigned long)(olen / P),
	       (unsigned long)(nlen / P), flags, where(r), r == MAP_FAILED ? dt_res(-1, e) : "");
	return r;
}

static char *attach(size_t pages)
{
	g_id = dt_shmget(IPC_PRIVATE, pages * P, 0600);
	char *p = dt_shmat(g_id, ADDR, 0);
	if (p != (void *)-1)
		memset(p, 'a', pages * P);
	return p;
}

static void rm(void)
{
	dt_shmctl(g_id, IPC_RMID);
	dt_shmstat(g_id, IPC_STAT);
}

/* munmap of a whole attachment is a detach; shmdt then finds nothing */
static void munmap_whole(int argc, char **argv)
{
	(void)argc, (void)argv;
	char *p = attach(3);
	dt_shmstat(g_id, IPC_STAT);
	dt_msleep(1100);
	do_munmap(p, 3 * P);
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(p, "p");
	/* SHM_DEST: the munmap of the last attachment destroys */
	p = dt_shmat(g_id, ADDR, 0);
	dt_shmctl(g_id, IPC_RMID);
	dt_shmstat(g_id, IPC_STAT);
	do_munmap(p, 3 * P);
	dt_shmstat(g_id, IPC_STAT);
	/* an unaligned length rounds up */
	p = attach(2);
	do_munmap(p, P + 1);
	dt_shmstat(g_id, IPC_STAT);
	rm();
}

/* munmap of a part: each piece left counts, shmdt takes the pieces that
 * still map the segment from the address */
static void munmap_part(int argc, char **argv)
{
	(void)argc, (void)argv;
	char *p = attach(3);
	dt_msleep(1100);
	do_munmap(p + P, P);
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(p + 2 * P, "p+2P");
	dt_shmstat(g_id, IPC_STAT);
	dt_out("p[0]=%c p[2P]=%c", p[0], p[2 * P]);
	dt_shmdt(p, "p");
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(p, "p");

	p = dt_shmat(g_id, ADDR, 0);
	do_munmap(p, P);
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(p + P, "p+P");
	dt_shmdt(p, "p");
	dt_shmstat(g_id, IPC_STAT);

	p = dt_shmat(g_id, ADDR, 0);
	do_munmap(p + 2 * P, P);
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(p, "p");
	dt_shmstat(g_id, IPC_STAT);

	/* one munmap over two attachments, of two segments */
	int id1 = g_id;
	p = dt_shmat(id1, ADDR, 0);
	int id2 = dt_shmget(IPC_PRIVATE, 2 * P, 0600);
	char *q = dt_shmat(id2, ADDR + 3 * P, 0);
	(void)q;
	do_munmap(p + 2 * P, 2 * P);
	dt_shmstat(id1, IPC_STAT);
	dt_shmstat(id2, IPC_STAT);
	dt_shmdt(p, "p");
	dt_shmdt(ADDR + 3 * P, "q");
	dt_shmdt(ADDR + 4 * P, "q+P");
	dt_shmstat(id2, IPC_STAT);
	dt_shmctl(id2, IPC_RMID);
	do_munmap(ADDR + 4 * P, P);
	dt_shmstat(id2, IPC_STAT);
	rm();
}

/* mprotect splits (never merged back); shmdt takes every piece */
static void mprotect_split(int argc, char **argv)
{
	(void)argc, (void)argv;
	char *p = attach(4);
	do_mprotect(p + P, P, PROT_READ);
	dt_shmstat(g_id, IPC_STAT);
	do_mprotect(p + P, P, PROT_READ | PROT_WRITE);
	dt_shmstat(g_id, IPC_STAT);
	do_mprotect(p, 4 * P, PROT_READ | PROT_WRITE);      /* no change: no split */
	dt_shmstat(g_id, IPC_STAT);
	do_mprotect(p + 2 * P, 2 * P, PROT_READ);           /* whole piece + end */
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(p, "p");
	dt_shmstat(g_id, IPC_STAT);
	rm();
}

/* the pages of [P0, P0 + N pages) still mapped (msync answers ENOMEM
 * for an unmapped one) */
static int mapped_pages(char *p0, int n)
{
	int c = 0;

	for (int k = 0; k < n; k++)
		c += msync(p0 + k * P, P, MS_ASYNC) == 0;
	return c;
}

/* more vmas than fit one batch of uipc's shmdt (64), with a foreign
 * mapping in a hole: shmdt takes every piece of the segment, in one call,
 * and leaves the foreign page */
static void many_pieces(int argc, char **argv)
{
	(void)argc, (void)argv;
	enum { N = 150, HOLE = 100 };
	char *p = attach(N), *f;
	int r;

	for (int k = 1; k < N; k += 2)
		if (mprotect(p + k * P, P, PROT_READ))
			dt_out("mprotect page %d: %s", k, dt_errname(errno));
	dt_shmstat(g_id, IPC_STAT);
	do_munmap(p + HOLE * P, P);
	f = mmap(p + HOLE * P, P, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		 -1, 0);
	dt_out("mmap(ADDR+%dP, anonymous, MAP_FIXED) = %s", HOLE,
	       f == p + HOLE * P ? "ADDR+100P" : "elsewhere");
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(p, "p");
	dt_shmstat(g_id, IPC_STAT);
	r = mapped_pages(p, N);
	dt_out("pages of the attachment still mapped: %d (the foreign one: %s)", r,
	       mapped_pages(p + HOLE * P, 1) ? "yes" : "no");
	munmap(p + HOLE * P, P);
	rm();
}

/* each on a fresh segment, so that atime/dtime show what was counted */
static void mremap_cases(int argc, char **argv)
{
	(void)argc, (void)argv;
	char *p, *q;

	/* moved to a fixed place: opened there, closed here */
	p = attach(3);
	q = do_mremap(p, 3 * P, 3 * P, MREMAP_MAYMOVE | MREMAP_FIXED, DEST);
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(p, "old");
	dt_out("q[P]=%c", q[P]);
	dt_shmdt(q, "new");
	rm();

	/* shrunk in place: the tail is cut and closed */
	p = attach(3);
	do_mremap(p, 3 * P, P, 0, NULL);
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(p, "p");
	rm();

	/* grown in place: nothing counted (beyond the segment: SIGBUS land) */
	p = attach(3);
	do_mremap(p, 3 * P, 5 * P, 0, NULL);
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(p, "p");
	rm();

	/* grown, moved by the kernel (a mapping right after it) */
	p = attach(3);
	void *g = mmap(p + 3 * P, P, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	q = do_mremap(p, 3 * P, 5 * P, MREMAP_MAYMOVE, NULL);
	dt_out("moved=%d", q != p && q != MAP_FAILED);
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(q, "q");
	dt_shmdt(p, "p");
	munmap(g, P);
	rm();

	/* a second mapping of the same pages (old_size 0) */
	p = attach(3);
	q = do_mremap(p, 0, 3 * P, MREMAP_MAYMOVE | MREMAP_FIXED, DEST);
	dt_shmstat(g_id, IPC_STAT);
	q[0] = 'z';
	dt_out("p[0]=%c", p[0]);
	dt_shmdt(q, "q");
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(p, "p");
	rm();

	/* the middle page moved away: three vmas, shmdt(p) takes two */
	p = attach(3);
	q = do_mremap(p + P, P, P, MREMAP_MAYMOVE | MREMAP_FIXED, DEST);
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(p, "p");
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(q, "q");
	do_munmap(q, P);
	rm();

	/* moved and shrunk, onto another attachment */
	p = attach(3);
	q = dt_shmat(g_id, DEST, 0);
	do_mremap(p, 3 * P, 2 * P, MREMAP_MAYMOVE | MREMAP_FIXED, DEST + P);
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(DEST, "dest");
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(DEST + P, "dest+P");
	dt_shmstat(g_id, IPC_STAT);
	do_munmap(DEST, 4 * P);
	dt_shmstat(g_id, IPC_STAT);
	rm();

	/* not an attachment: nothing counted */
	p = attach(1);
	q = mmap(DEST, 2 * P, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	q = do_mremap(q, 2 * P, P, 0, NULL);
	do_munmap(q, P);
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(p, "p");
	rm();
}

/* a MAP_FIXED mapping over part of an attachment */
static void mmap_fixed(int argc, char **argv)
{
	(void)argc, (void)argv;
	char *p = attach(3);
	void *m = mmap(p + P, P, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	dt_out("mmap(ADDR+1P, FIXED) = %s", where(m));
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(p, "p");
	dt_shmstat(g_id, IPC_STAT);
	do_munmap(p + P, P);
	rm();
}

static char *g_p;

static void child_pieces(void *arg)
{
	(void)arg;
	dt_shmstat(g_id, IPC_STAT);
	do_munmap(g_p + 2 * P, P);
	dt_shmstat(g_id, IPC_STAT);
	/* exit closes whatever is left */
}

/* fork inherits every piece; exit closes them */
static void fork_pieces(int argc, char **argv)
{
	(void)argc, (void)argv;
	g_p = attach(4);
	do_munmap(g_p + P, P);
	dt_shmstat(g_id, IPC_STAT);
	dt_wait(dt_fork(child_pieces, NULL));
	dt_shmstat(g_id, IPC_STAT);
	dt_shmctl(g_id, IPC_RMID);
	do_munmap(g_p, 4 * P);
	dt_shmstat(g_id, IPC_STAT);
}

static void do_madvise(char *p, size_t len, int adv, const char *name)
{
	errno = 0;
	int r = madvise(p, len, adv);
	dt_out("madvise(%s,%luP,%s) = %s", where(p), (unsigned long)(len / P), name,
	       dt_res(r, errno));
}

/* madvise advice that changes the vma's flags splits it, the rest not */
static void madvise_split(int argc, char **argv)
{
	(void)argc, (void)argv;
	static const struct { int adv; const char *name; } a[] = {
		{ MADV_DONTFORK, "DONTFORK" }, { MADV_DOFORK, "DOFORK" },
		{ MADV_DONTDUMP, "DONTDUMP" }, { MADV_DODUMP, "DODUMP" },
		{ MADV_HUGEPAGE, "HUGEPAGE" }, { MADV_NOHUGEPAGE, "NOHUGEPAGE" },
		{ MADV_SEQUENTIAL, "SEQUENTIAL" }, { MADV_RANDOM, "RANDOM" },
		{ MADV_NORMAL, "NORMAL" }, { MADV_WILLNEED, "WILLNEED" },
		{ MADV_DONTNEED, "DONTNEED" }, { MADV_REMOVE, "REMOVE" },
		{ MADV_MERGEABLE, "MERGEABLE" }, { MADV_KEEPONFORK, "KEEPONFORK" },
		{ MADV_WIPEONFORK, "WIPEONFORK" }, { MADV_COLD, "COLD" },
	};
	for (size_t i = 0; i < DT_NELEM(a); i++) {
		char *p = attach(3);
		do_madvise(p + P, P, a[i].adv, a[i].name);
		dt_shmstat(g_id, IPC_STAT);
		/* the same again on the piece: no further split */
		do_madvise(p + P, P, a[i].adv, a[i].name);
		dt_shmstat(g_id, IPC_STAT);
		dt_shmdt(p, "p");
		rm();
	}
	/* posix_madvise: POSIX_MADV_RANDOM is MADV_RANDOM, DONTNEED nothing */
	char *p = attach(3);
	dt_out("posix_madvise(RANDOM) = %d", posix_madvise(p + P, P, POSIX_MADV_RANDOM));
	dt_out("posix_madvise(DONTNEED) = %d", posix_madvise(p, P, POSIX_MADV_DONTNEED));
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(p, "p");
	rm();
}

static void mlock_split(int argc, char **argv)
{
	(void)argc, (void)argv;
	char *p = attach(3);
	dt_out("mlock(ADDR+1P,1P) = %s", dt_res(mlock(p + P, P), errno));
	dt_shmstat(g_id, IPC_STAT);
	dt_out("mlock(ADDR,3P) = %s", dt_res(mlock(p, 3 * P), errno));
	dt_out("munlock(ADDR,3P) = %s", dt_res(munlock(p, 3 * P), errno));
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(p, "p");
	rm();

	p = attach(3);
	dt_out("mlock2(ADDR+1P,1P,ONFAULT) = %s", dt_res(mlock2(p + P, P, MLOCK_ONFAULT), errno));
	dt_out("mlock(ADDR+1P,1P) = %s", dt_res(mlock(p + P, P), errno));
	dt_out("mlock(ADDR+2P,1P) = %s", dt_res(mlock(p + 2 * P, P), errno));
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(p, "p");
	rm();

	/* MCL_FUTURE: the next attachment is locked, munlock of a part
	 * splits it (not mlockall(MCL_CURRENT): under uipc it would also lock,
	 * and so fill, the namespace's sparse arena mapping) */
	p = attach(3);
	dt_out("mlockall(FUTURE) = %s", dt_res(mlockall(MCL_FUTURE), errno));
	p = dt_shmat(g_id, ADDR, 0);
	dt_out("munlockall = %s", dt_res(munlockall(), errno));
	dt_out("mlock(ADDR+1P,1P) = %s", dt_res(mlock(p + P, P), errno));
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(p, "p");
	/* SHM_LOCK locks the segment, not the vmas: mlock still splits */
	p = dt_shmat(g_id, ADDR, 0);
	dt_shmctl(g_id, SHM_LOCK);
	dt_out("mlock(ADDR+1P,1P) = %s", dt_res(mlock(p + P, P), errno));
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(p, "p");
	rm();
}

static void child_dontfork(void *arg)
{
	(void)arg;
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(ADDR, "p");
	dt_shmdt(ADDR + P, "p+P");
	dt_shmstat(g_id, IPC_STAT);
}

/* MADV_DONTFORK: the child does not get (nor count) that vma */
static void fork_dontfork(int argc, char **argv)
{
	(void)argc, (void)argv;
	char *p = attach(3);
	do_madvise(p, P, MADV_DONTFORK, "DONTFORK");
	dt_shmstat(g_id, IPC_STAT);
	dt_wait(dt_fork(child_dontfork, NULL));
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(p, "p");
	rm();
}

/* SHM_REMAP over the only attachment of a removed segment: the new
 * attach is counted before the old vma goes, so the segment lives */
static void remap_dest(int argc, char **argv)
{
	(void)argc, (void)argv;
	char *p = attach(2);
	dt_shmctl(g_id, IPC_RMID);
	p = dt_shmat(g_id, ADDR, SHM_REMAP);
	dt_shmstat(g_id, IPC_STAT);
	if (p != (void *)-1)
		dt_out("p[0]=%c", p[0]);
	do_munmap(ADDR, 2 * P);
	dt_shmstat(g_id, IPC_STAT);
}

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ  22
#define MADV_POPULATE_WRITE 23
#endif

/* which of the first N pages at P read back as written (page i holds i+1
 * in its byte 5 where it was written, else 0) */
static void show_pages(const char *what, const char *p, int n, const char *written)
{
	char buf[128];
	int k = 0;

	for (int i = 0; i < n && k < (int)sizeof(buf) - 1; i++)
		buf[k++] = p[i * P + 5] == (written[i] ? (char)(i + 1) : 0) ? '.' : 'X';
	buf[k] = 0;
	dt_out("%s contents: %s", what, buf);
}

static void do_populate(char *p, size_t len, int adv)
{
	errno = 0;
	int r = madvise(p, len, adv);
	dt_out("madvise(%s,%luP,POPULATE_%s) = %s", where(p), (unsigned long)(len / P),
	       adv == MADV_POPULATE_READ ? "READ" : "WRITE", dt_res(r, errno));
	dt_shminfo(SHM_INFO);
}

/*
 * MADV_POPULATE_READ/WRITE on attachments: every page of the range is
 * allocated (shm_rss), what was written stays, holes read as zeros; the
 * errors for a range past the attachment, a read-only attachment, a
 * PROT_READ piece, an unaligned address.
 */
static void madvise_populate(int argc, char **argv)
{
	(void)argc, (void)argv;
	char written[40] = { 0 };
	char *p, *r;

	/* not attach(): its memset would allocate every page */
	g_id = dt_shmget(IPC_PRIVATE, 40 * P, 0600);
	p = dt_shmat(g_id, ADDR, 0);
	if (p == (void *)-1)
		return;

	for (int i = 0; i < 40; i += 7) {
		p[i * P + 5] = (char)(i + 1);
		written[i] = 1;
	}
	dt_shminfo(SHM_INFO);
	do_populate(p, 20 * P, MADV_POPULATE_READ);
	do_populate(p + 20 * P, 20 * P, MADV_POPULATE_WRITE);
	show_pages("populated", p, 40, written);
	/* holes again, then the whole attachment at once */
	dt_out("madvise(REMOVE) = %s", dt_res(madvise(p, 40 * P, MADV_REMOVE), errno));
	memset(written, 0, sizeof(written));
	dt_shminfo(SHM_INFO);
	do_populate(p, 40 * P, MADV_POPULATE_READ);
	show_pages("after REMOVE", p, 40, written);
	/* the range goes past the attachment: ENOMEM */
	do_populate(p + 30 * P, 20 * P, MADV_POPULATE_READ);
	do_populate(p + P + 1, 16 * P, MADV_POPULATE_READ);
	dt_shmdt(p, "p");
	rm();

	/* a PROT_READ piece, fresh pages: the range over both pieces */
	g_id = dt_shmget(IPC_PRIVATE, 40 * P, 0600);
	p = dt_shmat(g_id, ADDR, 0);
	if (p == (void *)-1)
		return;
	do_mprotect(p, 20 * P, PROT_READ);
	do_populate(p, 20 * P, MADV_POPULATE_WRITE);
	do_populate(p + 20 * P, 20 * P, MADV_POPULATE_READ);
	do_populate(p, 40 * P, MADV_POPULATE_READ);
	dt_shmdt(p, "p");
	rm();

	/* a read-only attachment (at ADDR, free again: DEST is where the ASan
	 * runtime of tests/unit-sanitize.t keeps its allocator) */
	g_id = dt_shmget(IPC_PRIVATE, 40 * P, 0600);
	r = dt_shmat(g_id, ADDR, SHM_RDONLY);
	if (r == (void *)-1)
		return;
	do_populate(r, 40 * P, MADV_POPULATE_WRITE);
	do_populate(r, 40 * P, MADV_POPULATE_READ);
	dt_shmstat(g_id, IPC_STAT);
	dt_shmdt(r, "r");
	rm();
}

/*
 * handler-munmap: a timer's handler attaches, writes and detaches a segment
 * (shmat, shmdt, munmap of an anonymous page) while the main thread keeps
 * mapping and unmapping pages next to an attachment of its own: whatever
 * the main thread is in the middle of, the handler's calls must work.
 */
static int hm_id;
static volatile sig_atomic_t hm_runs, hm_bad;

static void hm_handler(int sig)
{
	char *p = shmat(hm_id, NULL, 0), *q;

	(void)sig;
	if (p == (char *)-1) {
		hm_bad++;
		return;
	}
	p[1]++;
	if (shmdt(p))
		hm_bad++;
	q = mmap(NULL, P, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (q == MAP_FAILED || munmap(q, P))
		hm_bad++;
	hm_runs++;
}

static void handler_munmap(int argc, char **argv)
{
	(void)argc; (void)argv;
	struct sigaction sa;
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	char *mine;
	long long end;
	long loops = 0;

	hm_id = dt_shmget(IPC_PRIVATE, 4 * P, 0600);
	mine = dt_shmat(hm_id, NULL, 0);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = hm_handler;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	end = dt_now_ms() + 1500;
	while (dt_now_ms() < end || hm_runs < 50) {
		char *q = mmap(NULL, 2 * P, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);

		if (q == MAP_FAILED || mprotect(q, P, PROT_READ) || munmap(q, 2 * P))
			hm_bad++;
		loops++;
	}
	memset(&it, 0, sizeof it);
	setitimer(ITIMER_REAL, &it, NULL);
	dt_out("handler ran %s, failures %d, main loops %s", hm_runs >= 50 ? ">= 50 times" : "too few",
	       (int)hm_bad, loops > 0 ? "> 0" : "0");
	dt_out("segment byte 1 counted every handler: %s",
	       mine != (char *)-1 && (unsigned char)mine[1] == (unsigned char)hm_runs ? "yes" : "no");
	dt_shmdt(mine, "mine");
	dt_shmstat(hm_id, IPC_STAT);
	dt_shmctl(hm_id, IPC_RMID);
}

/* SHM_RDONLY: the vma can never become writable, through libc's mprotect
 * or the raw system call that no hook sees (EACCES; a raw call that
 * succeeds and splits the vma is not counted: docs/known-gaps.md) */
static void rdonly_raw(int argc, char **argv)
{
	(void)argc, (void)argv;
	g_id = dt_shmget(IPC_PRIVATE, 2 * P, 0600);
	char *p = dt_shmat(g_id, ADDR, SHM_RDONLY);
	long r;

	if (p == (void *)-1)
		return;
	errno = 0;
	r = syscall(SYS_mprotect, p, 2 * P, PROT_READ | PROT_WRITE);
	dt_out("syscall(SYS_mprotect,%s,2P,RW) = %s", where(p), dt_res((int)r, errno));
	errno = 0;
	r = syscall(SYS_mprotect, p + P, P, PROT_WRITE);
	dt_out("syscall(SYS_mprotect,%s,1P,W) = %s", where(p + P), dt_res((int)r, errno));
	do_mprotect(p, 2 * P, PROT_READ | PROT_WRITE);
	dt_shmstat(g_id, IPC_STAT);
	do_mprotect(p, 2 * P, PROT_READ);
	dt_shmdt(p, "p");
	rm();
}

/* rdonly-raw-dropped: the same in a child that dropped root after fork
 * (it may not open the segment's file: uipc maps the read-only fd it
 * opened before the change) */
static void rdonly_dropped_child(void *arg)
{
	char *p;
	long r;

	(void)arg;
	dt_drop_privs(65534, 65534, 65534);
	p = dt_shmat(g_id, ADDR, SHM_RDONLY);
	if (p == (void *)-1)
		return;
	errno = 0;
	r = syscall(SYS_mprotect, p, 2 * P, PROT_READ | PROT_WRITE);
	dt_out("child syscall(SYS_mprotect,%s,2P,RW) = %s", where(p), dt_res((int)r, errno));
	do_mprotect(p, 2 * P, PROT_READ | PROT_WRITE);
	dt_out("child reads %d", p[5]);
	dt_shmdt(p, "p");
}

static void rdonly_raw_dropped(int argc, char **argv)
{
	(void)argc, (void)argv;
	g_id = dt_shmget(IPC_PRIVATE, 2 * P, 0644);
	char *w = dt_shmat(g_id, NULL, 0);

	if (w == (void *)-1)
		return;
	w[5] = 7;
	dt_wait(dt_fork(rdonly_dropped_child, NULL));
	dt_shmdt(w, "w");
	dt_shmstat(g_id, IPC_STAT);
	rm();
}

const struct dt_case dt_cases[] = {
	{ "rdonly-raw", rdonly_raw, 0 },
	{ "rdonly-raw-dropped", rdonly_raw_dropped, 0 },
	{ "munmap-whole", munmap_whole, 0 },
	{ "munmap-part", munmap_part, 0 },
	{ "mprotect", mprotect_split, 0 },
	{ "mremap", mremap_cases, 0 },
	{ "mmap-fixed", mmap_fixed, 0 },
	{ "fork-pieces", fork_pieces, 0 },
	{ "madvise", madvise_split, 0 },
	{ "mlock", mlock_split, 0 },
	{ "fork-dontfork", fork_dontfork, 0 },
	{ "remap-dest", remap_dest, 0 },
	{ "madvise-populate", madvise_populate, 0 },
	{ "handler-munmap", handler_munmap, 0 },
	{ "many-pieces", many_pieces, 0 },
	{ NULL, NULL, 0 },
};
