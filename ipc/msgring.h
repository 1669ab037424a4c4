/*
 * msgring.h - the lock-free fast path of a message queue: a ring of slots
 * that senders and receivers use without the queue lock (see msgring.c).
 */
#ifndef UIPC_MSGRING_H
#define UIPC_MSGRING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RING_SLOTS      256u            /* a power of two */
#define RING_SLOT_BYTES 192u            /* three cache lines */
#define RING_TEXT_MAX   (RING_SLOT_BYTES - 32u)

/*
 * The head and tail words: bit 63 SLOW (the fast paths are off: the queue
 * lock owns the ring), bits 54-62 the epoch (bumped whenever the fast paths
 * come back on, so that an operation begun before cannot complete after),
 * bits 24-53 the message count (modulo 2^30: a side's copy of the other's
 * word stays meaningful for a second or two at any speed, msgring.c), bits
 * 0-23 the text bytes (modulo 2^24, far above what a ring holds).  tail -
 * head is what the ring holds.
 */
#define RW_SLOW        (1ULL << 63)
#define RW_EPOCH_SHIFT 54
#define RW_EPOCH_MASK  (0x1ffULL << RW_EPOCH_SHIFT)
#define RW_N_SHIFT     24
#define RW_N_MASK      0x3fffffffu
#define RW_BYTES_MASK  0xffffffu

_Static_assert(RING_SLOTS * RING_TEXT_MAX <= RW_BYTES_MASK / 2, "ring bytes fit the byte count");

struct rslot {
	uint64_t claim;            /* the sender writing it: thread | position */
	int64_t mtype;
	uint32_t size;
	int32_t pid;               /* the sender: lspid once published */
	int64_t stime;
	char text[RING_TEXT_MAX];
};

/*
 * Where a side last ran: tid << 32 | cpu, a hint for a waiter deciding
 * whether the other side shares its CPU (see msg.c's yield_to_peer).  Only
 * a hint: wrong or zero (a file made before it existed) it costs a few
 * sched_yield calls, never a wrong result.
 */
struct msgring {
	uint64_t tail;             /* senders' line */
	uint64_t sran;             /* the last fast sender: where it ran */
	char pad0[48];
	uint64_t head;             /* receivers' line */
	uint64_t rstat;            /* the last fast receiver: head count << 32 | pid */
	int64_t rtime;
	uint64_t rran;             /* the last fast receiver: where it ran */
	char pad1[32];
	struct rslot slot[RING_SLOTS];
};

/* what ring_send and ring_recv answer (besides 0: done) */
enum {
	RING_SLOW = 1,             /* take the locked path */
	RING_STOPPED,              /* the same: the fast paths are off */
	RING_FULL,                 /* no room (valid at one instant) */
	RING_EMPTY,                /* nothing (that matches) to receive, valid at one instant */
	RING_2BIG,                 /* the first message is larger than the buffer */
};

/* a message taken from the ring */
struct ring_msg {
	int64_t mtype;
	uint32_t size;
	char text[RING_TEXT_MAX];
};

static inline uint32_t rw_n(uint64_t w)
{
	return (uint32_t)(w >> RW_N_SHIFT) & RW_N_MASK;
}

static inline uint32_t rw_bytes(uint64_t w)
{
	return (uint32_t)w & RW_BYTES_MASK;
}

static inline uint32_t ring_count(uint64_t tail, uint64_t head)
{
	return (rw_n(tail) - rw_n(head)) & RW_N_MASK;
}

static inline uint32_t ring_bytes(uint64_t tail, uint64_t head)
{
	return (rw_bytes(tail) - rw_bytes(head)) & RW_BYTES_MASK;
}

/* a side's "where it ran" word for thread TID on CPU */
static inline uint64_t ring_ran(int32_t tid, int cpu)
{
	return (uint64_t)(uint32_t)tid << 32 | (uint32_t)cpu;
}

/* note where this side runs (a store only when it moved: its own line) */
static inline void ring_note_ran(uint64_t *word, uint64_t ran)
{
	if (__atomic_load_n(word, __ATOMIC_RELAXED) != ran)
		__atomic_store_n(word, ran, __ATOMIC_RELAXED);
}

static inline uint64_t ring_load(const uint64_t *w)
{
	return __atomic_load_n(w, __ATOMIC_ACQUIRE);
}

static inline struct rslot *ring_slot(struct msgring *r, uint32_t pos)
{
	return &r->slot[pos & (RING_SLOTS - 1)];
}

__attribute__((visibility("hidden"))) void ring_init(struct msgring *r);
/* forget this thread's copies of a ring's words: the namespace is left,
 * and a ring of the next one may lie at the same address */
__attribute__((visibility("hidden"))) void ring_forget(void);
struct ns;
/* who writes a claimed slot: a thread slot and its tid */
__attribute__((visibility("hidden"))) uint64_t ring_owner_id(uint32_t thread_slot, int32_t tid);
__attribute__((visibility("hidden"))) int ring_send(struct ns *ns, struct msgring *r, uint64_t me,
						    uint64_t qbytes,
						    int64_t mtype, const void *text, uint32_t sz,
						    int32_t pid, int64_t now);
/* RING_EMPTY: *TAIL_SEEN is the tail that showed the ring empty (a waiter
 * watches it: reading it for every message would pull the senders' line) */
__attribute__((visibility("hidden"))) int ring_recv(struct msgring *r, int64_t msgtyp, bool except,
						    uint64_t bufsz, struct ring_msg *out,
						    uint64_t *tail_seen, int32_t pid, int64_t now);
/* the queue lock's holder refills a stopped, empty ring whose tail is T
 * (msg.c's list back into the ring): false if a sender still writes T's
 * slot; then ring_put each message, and the tail it returns is the new
 * one once stored */
__attribute__((visibility("hidden"))) bool ring_refill_begin(struct ns *ns, struct msgring *r,
							     uint64_t me, uint64_t t);
__attribute__((visibility("hidden"))) uint64_t ring_put(struct msgring *r, uint64_t t,
							int64_t mtype, const void *text,
							uint32_t sz, int32_t pid, int64_t stime);
__attribute__((visibility("hidden"))) bool ring_has_room(struct msgring *r, uint64_t qbytes,
							 uint32_t sz);
__attribute__((visibility("hidden"))) void ring_stop(struct msgring *r, uint64_t *tail,
						     uint64_t *head);
__attribute__((visibility("hidden"))) void ring_go(struct msgring *r);
__attribute__((visibility("hidden"))) void ring_snapshot(struct msgring *r, uint64_t *tail,
							 uint64_t *head);

#endif
