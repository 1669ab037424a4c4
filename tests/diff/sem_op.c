/*
 * sem_op.c - semop()/semtimedop() without sleeping: the validation order
 * (E2BIG over semopm, EINVAL for nsops 0 / negative id / bad timeout /
 * unknown id / wrong seq, EFBIG, EFAULT) and its combinations; the
 * operation semantics: all or nothing, the same semaphore several times in
 * one call, IPC_NOWAIT taken from the blocking op, ERANGE over 32767 and
 * for a semadj out of range with SEM_UNDO, sempid and sem_otime updates
 * (also for wait-for-zero ops), relative timeouts that expire.
 */
#include "dt.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

static struct sembuf op(unsigned short num, short o, short flg)
{
	struct sembuf s = { num, o, flg };
	return s;
}

#define NW IPC_NOWAIT
#define UN SEM_UNDO

static struct sembuf big[600];

static void validate(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 3, 0600);
	int b = dt_semget(IPC_PRIVATE, 1, 0600);
	dt_rmid(b);                              /* b: a removed id */
	struct sembuf one[1] = { op(0, 1, NW) };
	for (int i = 0; i < 600; i++)
		big[i] = op(0, 0, NW);

	dt_semop(a, big, 501);                   /* E2BIG */
	dt_semop(-1, big, 501);
	dt_semop(b, big, 501);
	dt_semop(a, one, 0);                     /* EINVAL */
	dt_semop(-1, one, 0);
	dt_semop(b, one, 0);
	dt_semop(-1, one, 1);
	dt_semop(INT_MIN, one, 1);
	dt_semop(b, one, 1);                     /* removed */
	dt_semop(a + 1, one, 1);                 /* idx never used */
	dt_semop(a + 2, one, 1);
	dt_semop(a + 32768, one, 1);             /* wrong seq */
	dt_semop(a + 65536, one, 1);
	dt_semop(a | (1 << 30), one, 1);
	dt_semop(a + 1000, one, 1);
	dt_semop(INT_MAX, one, 1);
	/* EFBIG: sem_num >= nsems, checked before blocking or ERANGE */
	struct sembuf fb1[1] = { op(3, 1, NW) };
	struct sembuf fb2[1] = { op(65535, 1, NW) };
	struct sembuf fb3[2] = { op(0, -1, NW), op(3, 1, NW) };
	struct sembuf fb4[2] = { op(3, 1, NW), op(0, -1, NW) };
	dt_semop(a, fb1, 1);
	dt_semop(a, fb2, 1);
	dt_semop(a, fb3, 2);
	dt_semop(a, fb4, 2);
	dt_semop(b, fb1, 1);                     /* lookup first */
	dt_semop(a, big, 500);                   /* exactly semopm: fine */
	for (int i = 0; i < 500; i++)
		big[i] = op((unsigned short)(i % 3), 1, 0);
	dt_semop(a, big, 500);
	dt_getall(a);
	big[499] = op(7, 1, 0);
	dt_semop(a, big, 500);                   /* EFBIG, nothing applied */
	big[499] = op(2, 1, 0);
	dt_semop(a, big, 501);                   /* E2BIG */
	/* a lower semopm */
	dt_sysctl_set("kernel.sem", "32000 1024000000 3 32000");
	dt_info(IPC_INFO);
	struct sembuf four[4] = { op(0, -1, NW), op(1, -1, NW), op(2, -1, NW), op(0, 1, NW) };
	dt_semop(a, four, 4);
	dt_semop(a, four, 3);
	dt_semop(-1, four, 4);
	dt_getall(a);
	/* unknown flag bits are ignored */
	struct sembuf odd[2] = { op(0, 1, 0x0400), op(1, 1, (short)(0x8000 | NW)) };
	dt_semop(a, odd, 2);
	dt_getall(a);
	dt_rmid(a);
	dt_semop(a, one, 1);
}

/* nsops is unsigned int in the system call: the upper bits of a size_t
 * are not seen by the kernel */
static void nsops_wide(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 1, 0600);
	struct sembuf one[2] = { op(0, 1, NW), op(0, 1, NW) };
	dt_semop(a, one, (size_t)1 << 32);
	dt_semop(a, one, ((size_t)1 << 32) + 1);
	dt_semop(a, one, ((size_t)1 << 32) + 2);
	dt_semop(a, one, SIZE_MAX);
	struct timespec ts = { 0, 0 };
	dt_semtimedop(a, one, ((size_t)1 << 32) + 1, &ts);
	dt_getall(a);
	dt_rmid(a);
}

static void atomic(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 3, 0600);
	dt_dump(a, 3);
	struct sembuf s1[2] = { op(0, 1, 0), op(1, -1, NW) };
	dt_semop(a, s1, 2);                      /* EAGAIN, 0 not incremented */
	dt_dump(a, 3);
	struct sembuf s2[3] = { op(0, 2, 0), op(1, 1, 0), op(0, -1, 0) };
	dt_semop(a, s2, 3);
	dt_dump(a, 3);
	struct sembuf s3[1] = { op(2, 0, 0) };   /* wait-for-zero: sempid too */
	dt_semop(a, s3, 1);
	dt_get(a, 2, GETPID);
	struct sembuf s4[2] = { op(0, -1, 0), op(0, -1, NW) };
	dt_semop(a, s4, 2);                      /* needs 2, has 1 */
	dt_getall(a);
	struct sembuf s5[2] = { op(0, 1, 0), op(0, -2, 0) };
	dt_semop(a, s5, 2);                      /* 1+1-2 = 0 */
	dt_getall(a);
	struct sembuf s6[3] = { op(1, -1, 0), op(1, 1, 0), op(1, -1, 0) };
	dt_semop(a, s6, 3);
	dt_getall(a);
	struct sembuf s7[3] = { op(2, 5, 0), op(2, 0, NW), op(2, -5, 0) };
	dt_semop(a, s7, 3);                      /* wait-for-zero after +5 */
	dt_getall(a);
	struct sembuf s8[3] = { op(2, 5, 0), op(2, -5, 0), op(2, 0, NW) };
	dt_semop(a, s8, 3);
	dt_getall(a);
	struct sembuf s9[2] = { op(0, 0, NW), op(1, 0, NW) };
	dt_semop(a, s9, 2);
	struct sembuf s10[1] = { op(1, 0, NW) };
	dt_semop(a, s10, 1);                     /* 1 is 0 now? */
	dt_dump(a, 3);
	dt_setval(a, 0, 3);
	struct sembuf s11[4] = { op(0, -1, 0), op(0, -1, 0), op(0, -1, 0), op(0, -1, NW) };
	dt_semop(a, s11, 4);
	dt_semop(a, s11, 3);
	dt_dump(a, 3);
	dt_rmid(a);
}

static void erange(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 2, 0600);
	dt_setval(a, 0, 32767);
	struct sembuf p1[1] = { op(0, 1, NW) };
	dt_semop(a, p1, 1);
	struct sembuf p2[2] = { op(0, -1, 0), op(0, 2, 0) };
	dt_semop(a, p2, 2);
	struct sembuf p3[2] = { op(0, -32767, 0), op(0, 32767, 0) };
	dt_semop(a, p3, 2);
	dt_getall(a);
	struct sembuf p4[2] = { op(1, 32767, 0), op(1, 1, 0) };
	dt_semop(a, p4, 2);
	dt_getall(a);
	/* ERANGE and EAGAIN in one call: the first failing op decides */
	struct sembuf p5[2] = { op(1, -1, NW), op(0, 1, NW) };
	dt_semop(a, p5, 2);
	struct sembuf p6[2] = { op(0, 1, NW), op(1, -1, NW) };
	dt_semop(a, p6, 2);
	struct sembuf p7[1] = { op(0, -32768, NW) };
	dt_semop(a, p7, 1);
	struct sembuf p8[1] = { op(0, SHRT_MIN, NW | UN) };
	dt_semop(a, p8, 1);
	dt_getall(a);
	/* semadj range with SEM_UNDO */
	dt_setval(a, 1, 0);
	struct sembuf u1[1] = { op(1, 32767, UN) };     /* adj -32767 */
	dt_semop(a, u1, 1);
	struct sembuf u2[1] = { op(1, -32767, 0) };
	dt_semop(a, u2, 1);
	struct sembuf u3[1] = { op(1, 2, UN | NW) };    /* adj would be -32769 */
	dt_semop(a, u3, 1);
	struct sembuf u4[1] = { op(1, 1, UN | NW) };    /* adj -32768: fine */
	dt_semop(a, u4, 1);
	struct sembuf u5[1] = { op(1, 1, UN | NW) };
	dt_semop(a, u5, 1);
	struct sembuf u6[1] = { op(1, 1, NW) };         /* no undo: fine */
	dt_semop(a, u6, 1);
	dt_getall(a);
	struct sembuf u7[2] = { op(1, -2, UN | NW), op(1, 1, UN | NW) };
	dt_semop(a, u7, 2);                             /* adj -32768+2-1 */
	dt_getall(a);
	struct sembuf u8[1] = { op(1, 0, UN | NW) };
	dt_semop(a, u8, 1);
	/* the positive side: adj up to 32767 */
	dt_setval(a, 0, 32767);                          /* clears adj of 0 */
	struct sembuf d1[1] = { op(0, -32767, UN) };     /* adj +32767 */
	dt_semop(a, d1, 1);
	dt_setval(a, 1, 0);
	dt_setval(a, 1, 5);
	struct sembuf d2[1] = { op(0, 1, 0) };
	dt_semop(a, d2, 1);
	struct sembuf d3[1] = { op(0, -1, UN | NW) };    /* adj 32768 */
	dt_semop(a, d3, 1);
	dt_getall(a);
	dt_rmid(a);
}

static void timeouts(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 2, 0600);
	struct sembuf inc[1] = { op(0, 1, 0) };
	struct sembuf dec[1] = { op(1, -1, 0) };
	struct timespec bad1 = { 0, 1000000000L };
	struct timespec bad2 = { -1, 0 };
	struct timespec bad3 = { 0, -1 };
	struct timespec ok1 = { 0, 999999999L };
	struct timespec zero = { 0, 0 };
	struct timespec huge = { LONG_MAX, 0 };
	/* a bad timeout is EINVAL even when the op would not sleep */
	dt_semtimedop(a, inc, 1, &bad1);
	dt_semtimedop(a, inc, 1, &bad2);
	dt_semtimedop(a, inc, 1, &bad3);
	dt_semtimedop(-1, inc, 1, &bad1);
	dt_semtimedop(a + 1, inc, 1, &bad1);
	dt_semtimedop(a, inc, 0, &bad1);
	dt_semtimedop(a, big, 501, &bad1);
	struct sembuf fb[1] = { op(9, 1, 0) };
	dt_semtimedop(a, fb, 1, &bad1);
	dt_semtimedop(a, fb, 1, &zero);
	dt_getall(a);
	dt_semtimedop(a, inc, 1, &ok1);
	dt_semtimedop(a, inc, 1, &huge);
	dt_semtimedop(a, inc, 1, NULL);
	dt_semtimedop(a, inc, 1, &zero);
	dt_getall(a);
	/* zero timeout and a blocking op: EAGAIN at once */
	dt_semtimedop(a, dec, 1, &zero);
	/* relative timeouts */
	long long t0 = dt_now_ms();
	struct timespec t50 = { 0, 50000000L };
	dt_semtimedop(a, dec, 1, &t50);
	long long el = dt_now_ms() - t0;
	dt_out("elapsed >= 45ms: %s, < 2s: %s", el >= 45 ? "yes" : "no",
	       el < 2000 ? "yes" : "no");
	/* IPC_NOWAIT of a non-blocking op does not apply to the blocking one */
	struct sembuf mix[2] = { op(0, -1, NW), op(1, -1, 0) };
	t0 = dt_now_ms();
	dt_semtimedop(a, mix, 2, &t50);
	el = dt_now_ms() - t0;
	dt_out("elapsed >= 45ms: %s", el >= 45 ? "yes" : "no");
	struct sembuf mix2[2] = { op(0, -1, 0), op(1, -1, NW) };
	t0 = dt_now_ms();
	dt_semtimedop(a, mix2, 2, &t50);
	el = dt_now_ms() - t0;
	dt_out("elapsed < 45ms: %s", el < 45 ? "yes" : "no");
	/* wait-for-zero with a timeout */
	struct sembuf z[1] = { op(0, 0, 0) };
	t0 = dt_now_ms();
	dt_semtimedop(a, z, 1, &t50);
	el = dt_now_ms() - t0;
	dt_out("elapsed >= 45ms: %s", el >= 45 ? "yes" : "no");
	dt_dump(a, 2);
	dt_rmid(a);
}

/* which calls set sem_otime */
static void otime(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 2, 0600);
	struct sembuf z[1] = { { 0, 0, NW } };
	dt_semop(a, z, 1);                       /* wait-for-zero succeeds */
	dt_stat(a, IPC_STAT);
	int b = dt_semget(IPC_PRIVATE, 2, 0600);
	struct sembuf f[1] = { { 0, -1, NW } };
	dt_semop(b, f, 1);                       /* fails */
	dt_setval(b, 0, 1);
	unsigned short v[2] = { 1, 1 };
	dt_setall(b, v, 2);
	dt_ipcset(b, 0, 0, 0600);
	dt_stat(b, IPC_STAT);                    /* otime still 0 */
	struct sembuf u[1] = { { 1, 1, UN | NW } };
	dt_semop(b, u, 1);
	dt_stat(b, IPC_STAT);
	dt_rmid(a);
	dt_rmid(b);
}

static void efault(int argc, char **argv)
{
	(void)argc; (void)argv;
	int a = dt_semget(IPC_PRIVATE, 3, 0600);
	struct sembuf one[1] = { op(0, 1, 0) };
	dt_semop(a, NULL, 1);
	dt_semop(a, (struct sembuf *)8, 1);
	dt_semop(a, dt_badpage, 1);
	dt_semop(a, dt_badpage, 0);              /* EINVAL: nsops first */
	dt_semop(a, dt_badpage, 501);            /* E2BIG first */
	dt_semop(-1, dt_badpage, 1);             /* EFAULT before the id */
	dt_semop(a + 1, dt_badpage, 1);
	/* an array that runs into a PROT_NONE page */
	char *two = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mprotect(two + 4096, 4096, PROT_NONE);
	struct sembuf *edge = (struct sembuf *)(two + 4096 - sizeof(struct sembuf));
	*edge = op(0, 1, 0);
	dt_opaque(edge, "EDGE");
	dt_semop(a, edge, 1);                    /* fine: all inside */
	dt_semop(a, edge, 2);                    /* EFAULT, nothing applied */
	/* a read-only array is fine: semop only reads it */
	struct sembuf *ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro[0] = op(1, 1, 0);
	mprotect(ro, 4096, PROT_READ);
	dt_opaque(ro, "RO[1:+1:0]");
	dt_semop(a, ro, 1);
	dt_getall(a);
	/* semtimedop: bad timeout pointers */
	dt_semtimedop(a, one, 1, dt_badpage);
	dt_semtimedop(a, one, 1, (struct timespec *)16);
	dt_semtimedop(-1, one, 1, dt_badpage);
	dt_semtimedop(a, one, 0, dt_badpage);
	dt_semtimedop(a, dt_badpage, 1, dt_badpage);
	dt_semtimedop(a, big, 501, dt_badpage);
	dt_getall(a);
	dt_dump(a, 3);
	dt_rmid(a);
}

const struct dt_case dt_cases[] = {
	{ "validate", validate, 0 },
	{ "nsops-wide", nsops_wide, 0 },
	{ "atomic", atomic, 0 },
	{ "erange", erange, 0 },
	{ "timeouts", timeouts, 0 },
	{ "otime", otime, 0 },
	{ "efault", efault, 0 },
	{ NULL, NULL, 0 },
};
