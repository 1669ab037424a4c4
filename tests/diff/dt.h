/*
 * dt.h - shared helpers of the differential scenarios (tests/diff).
 *
 * A scenario program calls the ordinary libc System V IPC functions and
 * prints a normalized transcript on stdout: every call with its arguments,
 * its return value and errno name, and every field of what it returns.
 * Times are printed as 0 / now / BAD(v), pids as main / childN / self /
 * 0 / other(n), so that two runs that behave the same print the same bytes.
 * The driver (tests/diff/lib.sh) runs each case once in a fresh kernel IPC
 * namespace and once under uipc, and compares the transcripts.
 *
 * Each program defines dt_cases[] (name, function); dt.c provides main():
 *   prog --list        names of the cases the .t files run
 *   prog CASE [args]   runs one case
 * Output goes through dt_out(), one write(2) per line (no stdio buffers, so
 * fork never duplicates output).  A forked child prefixes its lines with
 * "[childN] "; children only print while the parent waits for them.
 */
#ifndef DT_H
#define DT_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <time.h>

union semun {
	int val;
	struct semid_ds *buf;
	unsigned short *array;
	struct seminfo *__buf;
};

struct dt_case {
	const char *name;
	void (*fn)(int argc, char **argv); /* argv[0] is the case name */
	int hidden;                        /* 1: not listed (exec helpers) */
};
extern const struct dt_case dt_cases[]; /* ends with { NULL, NULL, 0 } */

/* ---- transcript ---- */
void dt_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A scenario-level failure (deadline, unexpected state): "FAIL: ..." and
 * the program exits 1 at the end. */
void dt_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *dt_errname(int e);
const char *dt_res(long r, int e);      /* "5" or "-1 EINVAL" */
const char *dt_pid(pid_t p);            /* main, childN, self, 0, other(n) */
const char *dt_time(long long t);       /* 0, now, BAD(v) */
const char *dt_key(key_t k);
const char *dt_semflg(int flg);         /* IPC_CREAT|IPC_EXCL|0600 */
const char *dt_ops(const struct sembuf *s, size_t n);
const char *dt_cmdname(int cmd);
extern int dt_exit_code;
extern const char *dt_mode;             /* "kernel" or "uipc" (UIPC_DIFF_MODE) */

/* ---- processes ---- */
/* Fork a child named childN (N = 1, 2, ... in fork order), which runs
 * fn(arg) then exit(0).  It dies with the main process (PDEATHSIG). */
pid_t dt_fork(void (*fn)(void *), void *arg);
int dt_child_index(void);               /* 0 in main, N in childN */
const char *dt_role(void);
/* Wait (bounded) for a child; prints "childN exit S" or "childN signal S". */
int dt_wait(pid_t pid);
/* Kill (SIGKILL) and reap every child still alive; called at exit. */
void dt_reap_all(void);
pid_t dt_main_pid(void);
/* Register a pid under a name. */
void dt_register(pid_t pid, const char *name);
/* Re-exec this program (/proc/self/exe) with argv; the pid names and the
 * role of the caller are passed on in the environment (DT_REGISTRY). */
void dt_exec_self(char *const argv[]);
void dt_msleep(int ms);
/* PID's state letter in /proc (R, S, D, T, Z, ...), or 0 if unreadable */
char dt_proc_state(pid_t pid);
/* wait, polling every 2 ms, until PID is in state WANT: 0, or -1 after MS
 * milliseconds (the caller says what failed) */
int dt_wait_state(pid_t pid, char want, int ms);
/* normal, or normal/10 once the scenario has failed */
int dt_deadline_ms(int normal);
long long dt_now_ms(void);
long long dt_now_us(void);
/* In an SA_SIGINFO handler: the instruction pointer CTX interrupted (NULL
 * without a context), and for diagnostics the object it lies in
 * ("program", "libuipc.so+0x13e01", ...) */
const void *dt_interrupted_ip(const void *ctx);
const char *dt_ip_where(const void *ip);
/*
 * For a blocking call that slept through a handler which interrupted IP:
 * did that handler run before the call began, rather than being missed?
 * On the kernel always (a handler that runs during the system call ends
 * it, so it ran in libc's wrapper or before).  Under uipc if IP is in this
 * program's text, in the dynamic linker (lazy binding), or inside one of
 * the functions named in WRAPPERS (NULL-terminated: uipc's entry points,
 * before their first load, see ipc/ipc.h).
 */
int dt_ip_before_call(const void *ip, const char *const *wrappers);

/* ---- result channel: children report the outcome of a blocking call ---- */
struct dt_msg {
	int who;   /* child index */
	int ret;
	int err;
	int extra;
};
void dt_chan_send(int ret, int err, int extra);
/* Reads one message (deadline 5 s, see dt_deadline_ms); 0 on success,
 * -1 on timeout. */
int dt_chan_recv(struct dt_msg *m);
/* Reads n messages and prints them "woken childN: ret" in arrival order
 * (use only when the wakeups happen one at a time) or sorted by child. */
void dt_wakes(int n);
void dt_wakes_sorted(int n);
/* 1 when a message is waiting (nothing printed). */
int dt_chan_ready(void);
/* Prints "no pending report", or the unexpected message that is waiting. */
void dt_chan_none(void);

/* ---- waiting for a blocked state ---- */
/* Polls semctl(id, num, GETNCNT/GETZCNT) until it equals want (deadline
 * 5 s); prints "GETNCNT(id,num) reached want" or FAIL. */
int dt_wait_cnt(int id, int num, int cmd, int want);

/* Forks a child that performs ops on id and blocks (semtimedop when
 * tmo_ms is not 0), reporting its result through the channel; prints
 * "childN: semop(...) blocks" and waits until the count wcmd
 * (GETNCNT/GETZCNT) of semaphore wnum reaches want. */
pid_t dt_block(int id, const struct sembuf *ops, int nops, long tmo_ms,
	       int wnum, int wcmd, int want);
#define DT_OP1(n, o) (struct sembuf[]){ { n, o, 0 } }, 1
#define DT_OP2(n1, o1, n2, o2) (struct sembuf[]){ { n1, o1, 0 }, { n2, o2, 0 } }, 2

/* ---- printing wrappers of the calls ---- */
int dt_semget(key_t key, int nsems, int flg);
int dt_semop(int id, struct sembuf *sops, size_t n);
int dt_semtimedop(int id, struct sembuf *sops, size_t n, const struct timespec *ts);
/* GETVAL GETPID GETNCNT GETZCNT (GETPID's value printed as a pid) */
int dt_get(int id, int num, int cmd);
int dt_setval(int id, int num, int val);
/* GETALL: prints the values written (the buffer is pre-filled with 0xffff,
 * a value no semaphore can hold) */
int dt_getall(int id);
int dt_setall(int id, const unsigned short *vals, int n);
/* IPC_STAT / SEM_STAT / SEM_STAT_ANY: every field of struct semid_ds */
int dt_stat(int id, int cmd);
/* IPC_INFO / SEM_INFO: every field of struct seminfo */
int dt_info(int cmd);
int dt_ipcset(int id, uid_t uid, gid_t gid, unsigned int mode);
int dt_rmid(int id);
/* Any command with a raw argument (unknown commands, bad pointers). */
int dt_semctl_raw(int id, int num, int cmd, void *arg);
/* Prints the whole state of an array: stat, values, pids, counts. */
void dt_dump(int id, int nsems);

/* ---- per-namespace sysctls (kernel: /proc/sys in the private
 * namespace; uipc: uipc_sysctl_set/get found with dlsym) ---- */
int dt_sysctl_set(const char *name, const char *value);
int dt_sysctl_get(const char *name);     /* prints the text */
/* The same without printing (for set-up); returns 0 or -1 with errno. */
int dt_sysctl_set_quiet(const char *name, const char *value);

/* ---- misc ---- */
/* Addresses that make the kernel return EFAULT: a PROT_NONE page and a
 * read-only page (for calls that write into the buffer). */
extern void *dt_badpage;
extern void *dt_ropage;
/* Name a pointer that must be printed by name and never dereferenced by
 * the printing wrappers (e.g. a buffer straddling a PROT_NONE page). */
void dt_opaque(const void *p, const char *name);
/* Drop to uid/gid 1000 with supplementary group 2000 (children only). */
void dt_drop_privs(uid_t uid, gid_t gid, gid_t supp);

#define DT_NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* ---- shared memory (appended) ---- */
#include <sys/shm.h>
#ifndef SHM_STAT_ANY
#define SHM_STAT_ANY 15
#endif
const char *dt_shmflg(int flg);          /* CREAT|EXCL|RDONLY|RND|REMAP|EXEC|0600 */
const char *dt_shmcmd(int cmd);
int dt_shmget(key_t key, size_t size, int flg);
/* Prints "= addr" (no address given: a fresh address), "= given" (the
 * address asked for, rounded down with SHM_RND), "= OTHER" or "-1 ERR". */
void *dt_shmat(int id, const void *addr, int flg);
int dt_shmdt(const void *addr, const char *name);
/* IPC_STAT / SHM_STAT / SHM_STAT_ANY: every field of struct shmid_ds */
int dt_shmstat(int id, int cmd);
/* IPC_INFO / SHM_INFO: every field */
int dt_shminfo(int cmd);
int dt_shmset(int id, uid_t uid, gid_t gid, unsigned int mode);
int dt_shmctl(int id, int cmd);          /* IPC_RMID, SHM_LOCK, SHM_UNLOCK, raw */
/* nattch of id, no printing (-1 on error) */
long dt_nattch(int id);
/* "probe": reads (and writes unless ro) a byte: prints "read ok",
 * "write SIGSEGV"... in a child so that a fault does not end the scenario */
void dt_shm_access(void *p, const char *what);

#endif /* DT_H */
