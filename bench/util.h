/*
 * bench/util.h - helpers shared by the benchmark programs (not by the driver).
 *
 * A benchmark program calls the ordinary libc System V IPC functions, so the
 * same binary measures the kernel (run under `unshare --ipc`) or uipc (run
 * with LD_PRELOAD=libuipc.so).  It prints its results as "key value" lines on
 * stdout; the driver (bench/driver.c) reads them.  Errors go to stderr and the
 * program exits non-zero.
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include "uipc.h"

/* semctl's fourth argument; the caller defines it (glibc does not). */
union bench_semun {
	int val;
	struct semid_ds *buf;
	unsigned short *array;
	struct seminfo *__buf;
};

/* Which implementation this process talks to: decided by bench_init(). */
enum bench_side { SIDE_KERNEL, SIDE_UIPC };
extern enum bench_side bench_side;

/* Must be called first: decides the side, refuses to run in the host's IPC
 * namespace (kernel side) and checks BENCH_SIDE if the driver set it. */
void bench_init(const char *prog);

/* Fatal error: message (with errno text if errnum != 0) to stderr, exit 1. */
void bench_die(int errnum, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);

/* Multiplier for run lengths from $BENCH_SCALE (default 1; `--quick` 0.1). */
double bench_scale(void);

/* Print one result line "key value". */
void bench_out(const char *key, double value);
void bench_out_str(const char *key, const char *value);

/* Set a per-namespace sysctl ("kernel.sem_next_id", "kernel.sem"): uipc via
 * uipc_sysctl_set, kernel via /proc/sys (only in a private namespace). */
void bench_sysctl_set(const char *name, const char *value);
void bench_sysctl_get(const char *name, char *buf, size_t len);

/* uipc_ns_stats() (uipc side only); returns -1 on the kernel side. */
int bench_ns_stats(struct uipc_ns_stats *st);

/* Make sure kernel.sem allows at least n arrays (raises SEMMNI if needed). */
void bench_need_semmni(long n);

/* Touch the namespace once (uipc opens/creates its file on the first call)
 * so that no timed call pays for it. */
void bench_warm_up(void);

/* Two processes' CPUs for MODE: "any" (the scheduler's choice: -1, -1),
 * "same" (both on the first allowed CPU), "split" (first and second);
 * returns -1 for another MODE.  bench_pin(cpu) pins the caller (-1: no).
 * A MODE ending in "-busy" (any-busy, same-busy, split-busy) also sets
 * *busy: a third process that only burns CPU runs beside the two
 * (bench_busy_start, on the first CPU when the mode pins, else where the
 * scheduler puts it). */
int bench_placement_busy(const char *mode, int *cpu_a, int *cpu_b, int *busy);
int bench_placement(const char *mode, int *cpu_a, int *cpu_b);
void bench_pin(int cpu);
/* A process that spins until it is killed (or its parent dies), on CPU
 * (-1: any); its pid, for bench_busy_stop. */
pid_t bench_busy_start(int cpu);
void bench_busy_stop(pid_t pid);

/* semctl(id, 0, IPC_RMID), fatal on error. */
void bench_rmid(int id);

/* Median of n values (sorts v in place). */
double bench_median(double *v, int n);

/* Small fast PRNG (xorshift64). */
static inline uint64_t bench_rand(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* Runs fn(arg, n) for n operations; calibrates n so that one run takes at
 * least min_ns, then returns the median ns per operation over reps runs. */
double bench_ns_per_op(void (*fn)(void *arg, long n), void *arg,
		       uint64_t min_ns, int reps);

#endif /* BENCH_UTIL_H */
