/*
 * msg_random.c - seeded random sequences of non-blocking message-queue
 * calls on a few queues: msgsnd (random type, size, sometimes invalid),
 * msgrcv (random msgtyp > 0 / 0 / < 0, MSG_EXCEPT, MSG_NOERROR, MSG_COPY,
 * buffer sizes around the message sizes), IPC_SET of qbytes (down to 0 and
 * above msgmnb), IPC_STAT, MSG_INFO, removal and re-creation.
 * `msg_random run SEED [STEPS]`; the transcript starts with the seed.
 */
#include "msgdt.h"

static unsigned long long rng_state;

static unsigned rnd(unsigned n)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return n ? (unsigned)((rng_state >> 33) % n) : 0;
}

#define NQ 3

static void run(int argc, char **argv)
{
	if (argc < 2) {
		dt_fail("usage: run SEED [STEPS]");
		return;
	}
	unsigned long long seed = strtoull(argv[1], NULL, 0);
	int steps = argc > 2 ? atoi(argv[2]) : 400;
	int q[NQ];
	rng_state = seed;
	dt_out("seed %llu steps %d", seed, steps);
	for (int i = 0; i < NQ; i++)
		q[i] = m_get(IPC_PRIVATE, 0600);
	for (int s = 0; s < steps; s++) {
		int k = (int)rnd(NQ), op = (int)rnd(100);
		if (op < 40) {
			long type = (long)rnd(6) + (rnd(20) ? 1 : -1);
			size_t sz = rnd(4) ? rnd(300) : rnd(9000);
			m_snd(q[k], type, sz, (int)rnd(256), IPC_NOWAIT);
		} else if (op < 80) {
			long type = (long)rnd(13) - 6;
			int flg = IPC_NOWAIT;
			if (!rnd(4))
				flg |= MSG_NOERROR;
			if (!rnd(5))
				flg |= MSG_EXCEPT;
			if (!rnd(6)) {
				flg |= MSG_COPY;
				type = (long)rnd(8) - 1;
				if (!rnd(8))
					flg &= ~IPC_NOWAIT;
			}
			size_t bufsz = rnd(3) ? 8192 : rnd(300);
			m_rcv(q[k], bufsz, type, flg);
		} else if (op < 88) {
			long qb = rnd(10) ? (long)rnd(2000) : (long)(rnd(2) ? 0 : 16385 + rnd(10));
			m_set(q[k], -1, -1, -1, qb);
		} else if (op < 94) {
			m_stat(q[k], IPC_STAT);
		} else if (op < 97) {
			m_info(MSG_INFO);
		} else {
			m_rmid(q[k]);
			q[k] = m_get(IPC_PRIVATE, 0600);
		}
	}
	for (int i = 0; i < NQ; i++) {
		m_stat(q[i], IPC_STAT);
		m_rmid(q[i]);
	}
	m_info(MSG_INFO);
}

const struct dt_case dt_cases[] = {
	{ "run", run, 1 },
	{ NULL, NULL, 0 },
};
