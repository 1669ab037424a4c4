/*
 * bench/sem_keys.c - seed 000 "optimize semget for lots of keys".
 *
 *   sem_keys KEYS [ROUNDS]
 *
 * Each round: for (i = 0; i < KEYS; i++) semget(0x424242 + i, 1, IPC_CREAT|0600)
 * (creation), then the same loop again with the keys present (lookup-only,
 * repeated as several passes), then IPC_RMID of everything.  Rounds and
 * passes alternate between timing the whole loop (total) and timing each
 * call (max single call), so the clock never inflates the totals.  Prints the
 * medians, and apart the first round (a fresh namespace, as after the seed's
 * reboot).  Under uipc it also prints arena figures from uipc_ns_stats().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "util.h"

#define KEY0 0x424242

static long keys;
static int *ids;

/* One creating or looking-up loop; returns total ns (with per_call: the sum
 * of the calls' times), *max_ns = slowest call and *first_ns = first call
 * (when per_call), and checks that lookups find the created ids. */
static uint64_t key_loop(int lookup, int per_call, uint64_t *max_ns,
			 uint64_t *first_ns)
{
	uint64_t t0, t, d, max = 0, sum = 0;
	long i;
	int id;

	t0 = bench_now_ns();
	for (i = 0; i < keys; i++) {
		t = per_call ? bench_now_ns() : 0;
		id = semget((key_t)(KEY0 + i), 1, IPC_CREAT | 0600);
		if (per_call) {
			d = bench_now_ns() - t;
			if (d > max)
				max = d;
			if (i == 0)
				*first_ns = d;
			sum += d;
		}
		if (id < 0)
			bench_die(errno, "semget(key %#lx) %s, i=%ld",
				  (long)KEY0 + i, lookup ? "lookup" : "create", i);
		if (!lookup)
			ids[i] = id;
		else if (id != ids[i])
			bench_die(0, "semget lookup of key %#lx returned %d, "
				  "created as %d", (long)KEY0 + i, id, ids[i]);
	}
	t = bench_now_ns() - t0;
	*max_ns = max;
	return per_call ? sum : t;
}

static long clamp(long v, long lo, long hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

int main(int argc, char **argv)
{
	long rounds, passes, r, p, i;
	double *ct, *cm, *lt, *lm, fresh_total = 0, fresh_first = 0;
	int nct = 0, ncm = 0, nlt = 0, nlm = 0;
	struct uipc_ns_stats st0, st1, st2, st3;
	uint64_t total, max, first = 0;

	bench_init(argv[0]);
	if (argc < 2 || (keys = atol(argv[1])) < 1)
		bench_die(0, "usage: sem_keys KEYS [ROUNDS]");
	rounds = argc > 2 ? atol(argv[2]) : clamp(100000 / keys, 5, 201);
	rounds = clamp(rounds, 3, 10001);
	passes = clamp(20000 / keys, 2, 100);
	ids = malloc(sizeof(*ids) * (size_t)keys);
	ct = malloc(sizeof(double) * (size_t)rounds);
	cm = malloc(sizeof(double) * (size_t)rounds);
	lt = malloc(sizeof(double) * (size_t)(rounds * passes));
	lm = malloc(sizeof(double) * (size_t)(rounds * passes));
	if (!ids || !ct || !cm || !lt || !lm)
		bench_die(ENOMEM, "malloc");

	bench_need_semmni(keys);
	bench_warm_up();
	bench_ns_stats(&st0);

	/* Round 0 runs in the fresh namespace (the seed's "right after a
	 * reboot"), timed per call; it is reported apart.  The medians come
	 * from rounds 1..: odd ones timed whole, even ones per call. */
	for (r = 0; r < rounds; r++) {
		total = key_loop(0, !(r & 1), &max, &first);
		if (r == 0) {
			fresh_total = (double)total / 1e3;
			fresh_first = (double)first / 1e3;
			bench_ns_stats(&st1);
		} else if (r & 1)
			ct[nct++] = (double)total / 1e3;
		else
			cm[ncm++] = (double)max / 1e3;
		for (p = 0; p < passes; p++) {
			total = key_loop(1, (int)(p & 1), &max, &first);
			if (p & 1)
				lm[nlm++] = (double)max / 1e3;
			else
				lt[nlt++] = (double)total / 1e3;
		}
		for (i = 0; i < keys; i++)
			bench_rmid(ids[i]);
		if (r == 0)
			bench_ns_stats(&st2);
	}

	bench_ns_stats(&st3);
	bench_out("keys", (double)keys);
	bench_out("rounds", (double)rounds);
	bench_out("create_total_us", bench_median(ct, nct));
	bench_out("create_fresh_total_us", fresh_total);
	bench_out("create_fresh_first_call_us", fresh_first);
	bench_out("create_max_us", bench_median(cm, ncm));
	bench_out("create_ns_per_call", bench_median(ct, nct) * 1e3 / (double)keys);
	bench_out("lookup_total_us", bench_median(lt, nlt));
	bench_out("lookup_max_us", bench_median(lm, nlm));
	bench_out("lookup_ns_per_call", bench_median(lt, nlt) * 1e3 / (double)keys);
	if (bench_side == SIDE_UIPC) {
		bench_out("extended", st1.extended);
		bench_out("arena_size", (double)st1.arena_size);
		bench_out("arena_used_empty", (double)st0.arena_used);
		bench_out("arena_used_full", (double)st1.arena_used);
		bench_out("sem_array_bytes", (double)st1.sem_array_bytes);
		bench_out("sem_bytes", (double)st1.sem_bytes);
		bench_out("arena_bytes_per_key",
			  ((double)st1.arena_used - (double)st0.arena_used) / (double)keys);
		bench_out("arena_residue_after_rmid",
			  (double)st2.arena_used - (double)st0.arena_used);
		bench_out("arena_residue_after_all_rounds",
			  (double)st3.arena_used - (double)st0.arena_used);
	}
	free(ids);
	free(ct);
	free(cm);
	free(lt);
	free(lm);
	return 0;
}
