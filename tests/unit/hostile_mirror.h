/*
 * hostile_mirror.h - the hostile-member suite's picture of the structures
 * ipc/ keeps private (sem.c, msg.c, shm.c, arena.c), so that it can rewrite
 * chosen fields of them in a namespace file.  core/layout.h and
 * ipc/msgring.h are included as they are; these are copies, checked at run
 * time against the objects the suite creates (hostile.c's check_mirror):
 * a change of the real structures makes the suite fail, saying which.
 */
#ifndef HOSTILE_MIRROR_H
#define HOSTILE_MIRROR_H

#include <sys/sem.h>

#include "core/layout.h"
#include "ipc/msgring.h"

struct m_qlist {
	uoff_t first, last;
};

struct m_sem {
	uint64_t word;
	struct ulock lock;
	struct m_qlist pend_alter;
	struct m_qlist pend_const;
	int16_t poster_cpu;
	uint16_t presleeper;
	int32_t poster_tid;
};

struct m_sem_array {
	struct uperm perm;
	struct ulock glock;
	int32_t nsems;
	uint32_t tag;
	uint32_t locks_magic;
	int32_t locks_ready;
	int64_t ctime;
	int64_t otime;
	int32_t use_global_lock;
	int32_t complex_count;
	struct m_qlist pend_alter;
	struct m_qlist pend_const;
	uoff_t undo_list;
	struct m_sem sems[];
};

struct m_semq {
	uoff_t next, prev;
	uoff_t undo;
	uint64_t tword;
	int64_t since;
	uint32_t proc;
	uint32_t cont_gen;
	uint32_t thread;
	int32_t pid;
	int32_t status;
	uint32_t wake;
	uint32_t sleeping;
	uint32_t seq;
	uoff_t tnext;
	uint32_t cap;
	uint32_t linked;
	uint32_t busy;
	int32_t owner_tid;
	int32_t nsops;
	int32_t blocking;
	uint8_t alter, dupsop;
	uint16_t pad;
	struct sembuf sops[];
};

struct m_sem_undo {
	uoff_t proc_next;
	uoff_t id_next, id_prev;
	uint32_t proc;
	int32_t semid;
	int32_t nsems;
	uint32_t in_array;
	int16_t semadj[];
};

struct m_mlist {
	uoff_t first, last;
};

struct m_msgm {
	uoff_t next;
	int64_t mtype;
	uint32_t size;
	uint32_t cap;
	char text[];
};

struct m_msg_queue {
	struct uperm perm;
	struct ulock lock;
	int64_t stime, rtime, ctime;
	uint64_t cbytes, qnum, qbytes;
	int32_t lspid, lrpid;
	struct m_mlist messages;
	struct m_mlist receivers;
	struct m_mlist senders;
	uoff_t freelist;
	uint64_t nfree;
	uoff_t retired_next;
	uint64_t nsent;
	uoff_t wfree;
	uoff_t ring;
	uoff_t ring_alloc;
	uint32_t lspid_tn;
	uint32_t lrpid_hn;
	uint64_t incarnation;
};

struct m_shmid_kernel {
	struct uperm perm;
	struct ulock lock;
	uint64_t segsz;
	int64_t atime, dtime, ctime;
	int32_t cpid, lpid;
	uint64_t nattch;
	uint64_t gen;
	uint32_t creator;
	int32_t creator_pid;
	uoff_t att;
	uint32_t att_cap, att_n;
	uint32_t fd_shared;
	uint32_t pad;
	uint64_t file;
};

/* util.c's key table: ids->keys is its block's payload, the slots (key
 * << 32 | index + 1) start at the next cache line, KEYS_GAP bytes on, in
 * buckets of 8 */
#define M_KEYS_GAP 32u

/* arena.c's block header, 32 bytes before every object */
struct m_blk {
	uint32_t magic;
	uint8_t cls;
	uint8_t pool;
	uint8_t allocated;
	uint8_t pad;
	uint64_t gen;
	uoff_t next_free;
	uint64_t pad2;
};
#define M_BLK_MAGIC 0x424c4b31u

#endif
