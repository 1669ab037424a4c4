/*
 * core/signals.h - the layer between the program's signal handlers and uipc:
 * fault-tolerant copies (EFAULT instead of a crash, as the kernel's
 * copy_from_user) and EINTR for sleepers that a stop/continue interrupts.
 */
#ifndef UIPC_SIGNALS_H
#define UIPC_SIGNALS_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "core/layout.h"

/* 0 on success, -EFAULT if any byte of the source or destination faulted */
UIPC_HIDDEN int uipc_copy_from_user(void *dst, const void *src, size_t len);
UIPC_HIDDEN int uipc_copy_to_user(void *dst, const void *src, size_t len);

/*
 * A few bytes read from the program's memory inline, where the call of
 * uipc_copy_from_user costs more than the copy (a lock-free semop's
 * sembuf).  Each load that may fault has an entry in the section
 * uipc_extable: its address and where to go instead, both relative to the
 * entry, so the section needs no relocation.  The fault handler looks the
 * faulting address up there, as the kernel's exception tables work.
 */
struct uipc_extable {
	int32_t insn, fixup;
};

#if defined(__x86_64__)
#define UIPC_EXTABLE_ENTRY(insn, fixup)                                      \
	".pushsection uipc_extable,\"a\"\n.balign 4\n"                        \
	".long " insn " - ., " fixup " - .\n.popsection\n"

/* the 6 bytes at SRC (a struct sembuf) into DST: 0, or -EFAULT */
static inline int uipc_get_user_6(void *dst, const void *src)
{
	uint32_t lo;
	uint16_t hi;
	int err = 0;

	__asm__ volatile("1:	movl (%[src]), %[lo]\n"
			 "2:	movw 4(%[src]), %[hi]\n"
			 "3:\n"
			 ".pushsection .text.unlikely,\"ax\"\n"
			 "4:	movl $-14, %[err]\n"
			 "	jmp 3b\n"
			 ".popsection\n"
			 UIPC_EXTABLE_ENTRY("1b", "4b")
			 UIPC_EXTABLE_ENTRY("2b", "4b")
			 : [lo] "=&r"(lo), [hi] "=&r"(hi), [err] "+r"(err)
			 : [src] "r"(src), "m"(*(const struct { char b[6]; } *)src));
	if (err)
		return err;
	__builtin_memcpy(dst, &lo, 4);
	__builtin_memcpy((char *)dst + 4, &hi, 2);
	return 0;
}
#else
static inline int uipc_get_user_6(void *dst, const void *src)
{
	return uipc_copy_from_user(dst, src, 6);
}
#endif

/* around a blocking wait: a stop and continue must interrupt it (EINTR) */
UIPC_HIDDEN void uipc_sleep_begin(void);
/* around every uipc critical section: a signal arriving inside one has its
 * handler run at the end of the outermost, as after a system call */
UIPC_HIDDEN void uipc_crit_enter(void);
UIPC_HIDDEN void uipc_crit_exit(void);
/* in a fork child, for a section entered before the fork (atfork) */
UIPC_HIDDEN void uipc_crit_exit_child(void);

/*
 * A process-local mutex is held inside a critical section: a program's
 * handler that interrupts its holder and makes an IPC call of its own
 * (the kernel's calls are safe in a handler) would otherwise wait for a
 * mutex that its own thread holds, for ever.  The handler runs when the
 * holder lets go, as after a system call.  (The atfork handlers, inside
 * the fork's own critical section, use the plain calls.)
 */
static inline void crit_mutex_lock(pthread_mutex_t *m)
{
	uipc_crit_enter();
	pthread_mutex_lock(m);
}

static inline void crit_mutex_unlock(pthread_mutex_t *m)
{
	pthread_mutex_unlock(m);
	uipc_crit_exit();
}
/*
 * Around a call that may sleep (semop's slow path, msgsnd, msgrcv,
 * io_getevents, io_submit, io_destroy): a program's handler whose signal
 * arrives inside runs when the outermost call ends, after the call gave
 * back all it held (its place in a queue, its reference on an AIO
 * context, the counts of a ring's sleepers), as the kernel's handler runs
 * when the system call returns.  Its sleep ends at once, as if the
 * handler had run (EINTR), so a handler never sees the call half done and
 * one that leaves by longjmp leaves nothing behind.  Nested calls are
 * counted; the end returns R, so that a call can end with "return
 * uipc_call_end(r)".
 */
UIPC_HIDDEN void uipc_call_begin(void);
UIPC_HIDDEN long uipc_call_end(long r);

/* a signal for one of the program's handlers arrived inside a critical
 * section and waits for its end (an interruptible wait ends then) */
UIPC_HIDDEN bool uipc_signal_held(void);
/* counts those signals on this thread: a futex word that a held signal
 * changes, so that a sleeper inside a section wakes for it */
UIPC_HIDDEN extern __thread uint32_t uipc_held_signals;
/* counts the program's handlers run on this thread: a caller that spins
 * where the kernel would sleep returns EINTR when it changes.  Read inline
 * (one load): a blocking call takes it as its first instruction, so that
 * "the call began" is as sharp as the kernel's system call entry. */
UIPC_HIDDEN extern __thread unsigned uipc_handler_count;

static inline unsigned uipc_handler_gen(void)
{
	return __atomic_load_n(&uipc_handler_count, __ATOMIC_RELAXED);
}
/*
 * Sleep on the shared futex words W[0..N) (while each == VAL[i]) for REL
 * (NULL: no timeout), and on this thread's count of the program's
 * handlers (while == HAND0): a handler that runs after the caller's last check but before the system
 * call still ends the wait (futex_waitv compares every word on entry).
 * Returns the index of the word that woke us, or -1 with errno: EINTR (a
 * handler ran), EAGAIN (a word differed), ETIMEDOUT.  One word (N 1) on
 * x86-64 is a FUTEX_WAIT in a window the signal trampoline cuts short
 * (signals.c: uipc_futex_wait1), which also ends with EINTR when uipc's
 * SIGCONT handler runs; else futex_waitv, and without it (kernels before
 * 5.16) FUTEX_WAIT on W[0] alone.
 */
UIPC_HIDDEN int uipc_wait_words(uint32_t *const *w, const uint32_t *val,
							  int n, const struct timespec *rel,
							  unsigned hand0);
/* would the kernel's caller be interrupted now?  A handler of the program
 * ran since HAND0 or is held off by a uipc critical section (lockwait.c) */
UIPC_HIDDEN bool uipc_handler_due(unsigned hand0);
/* -1 when futex_waitv is known to be missing */
UIPC_HIDDEN int uipc_waitv_state(void);
/* the program's sigaction (entry/watch.c): what it installs is recorded and
 * chained; -1 and errno, as libc's */
UIPC_HIDDEN int sig_program_action(int sig, const struct sigaction *act,
							    struct sigaction *old);
/*
 * Signals uipc keeps for itself (entry/trap.c's SIGSYS): H is installed
 * (SA_SIGINFO | FLAGS, nothing masked) and stays; the program's sigaction
 * of SIG is recorded and reported, not installed.  0 or -errno.
 */
UIPC_HIDDEN int sig_own(int sig, void (*h)(int, siginfo_t *, void *), int flags);
/* from now on SIG is taken out of the sa_mask of every handler uipc
 * installs for the program (trap mode's SIGSYS) */
UIPC_HIDDEN void sig_keep_unblocked(int sig);
/* what the program installed for SIG (into OUT); true if a function */
UIPC_HIDDEN bool sig_program_handler(int sig, struct sigaction *out);
/* run the program's handler of SIG (nothing if it has none) */
UIPC_HIDDEN void sig_run_program(int sig, siginfo_t *si, void *ctx);
/*
 * Signal masks with the signals kept unblocked (sig_keep_unblocked) out of
 * them, and the program's wish for those kept per thread (its view).
 * sig_mask_apply: the raw rt_sigprocmask (the kernel's checks, order and
 * -errno; SET and OSET the caller's, copied with fault checks) on the
 * 64-bit mask *MASK.  uipc_sigmask: pthread_sigmask (glibc's: SIGCANCEL
 * and SIGSETXID never blocked), for every layer (libc's pthread_sigmask
 * is entry/'s); 0 or an errno value.  sig_on_unblock: FN runs after each
 * uipc_sigmask (a held signal to send again).
 */
UIPC_HIDDEN long sig_mask_apply(int how, const void *set, void *oset, size_t size,
				uint64_t *mask);
UIPC_HIDDEN int uipc_sigmask(int how, const sigset_t *set, sigset_t *old);
UIPC_HIDDEN bool sig_view_blocked(int sig);
UIPC_HIDDEN void sig_view_set(int sig, bool blocked);
UIPC_HIDDEN void sig_on_unblock(void (*fn)(void));
/* take the signals kept unblocked (sig_own) out of SET */
UIPC_HIDDEN void sig_strip_unblockable(sigset_t *set);
/* counts the continues (SIGCONT) this process went through */
UIPC_HIDDEN unsigned uipc_cont_gen(void);

#endif
