/*
 * signals.c - the thin layer between the program's signal handlers and uipc
 * (handler chaining, as JVMs do it).
 *
 * The kernel's IPC calls are atomic to signal handlers: a handler never runs
 * in the middle of a semop, only at its sleep points (which then return
 * EINTR).  uipc runs in the caller's thread, so it restores that guarantee:
 *
 * - Every handler the program installs (sigaction, signal) is recorded and a
 *   trampoline is installed in its place.  A signal that arrives while the
 *   thread is inside a uipc critical section, or inside a call that may
 *   sleep (uipc_call_begin), is held and its handler runs when the section
 *   or the call ends, exactly as if it had arrived just after the call; a
 *   sleep of that call ends at once (EINTR), as the kernel's does for a
 *   pending signal.  Anywhere else the program's handler runs at once.
 * - SIGSEGV and SIGBUS: a fault inside uipc_copy_*() fails the call with
 *   EFAULT; any other fault goes to what the program installed.
 * - SIGCONT: the kernel's semop returns EINTR when the sleeper is stopped
 *   and continued, but a futex wait is restarted silently unless a handler
 *   runs; from the first time a thread sleeps in uipc a SIGCONT handler is
 *   installed (it also counts continues, see uipc_cont_gen).
 *
 * - Signals uipc keeps for itself (sig_own: trap mode's SIGSYS, entry/trap.c)
 *   keep uipc's handler; the program's sigaction is recorded and reported,
 *   and its handler called from uipc's.  Those kept unblocked
 *   (sig_keep_unblocked) stay out of every mask: the sa_mask of the
 *   handlers installed here, and uipc_sigmask, the pthread_sigmask of every
 *   layer (and of entry/trap.c's sigprocmask), which records per thread
 *   that the program asked for them (its view).
 *
 * The program's sigaction() and signal() (entry/watch.c) come here, and
 * report exactly what the program installed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stddef.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <ucontext.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"

#define NSIGS 65

static struct sigaction prog_act[NSIGS];   /* what the program installed */
static bool trampolined[NSIGS];            /* our trampoline is in place */
static pthread_mutex_t act_mutex = PTHREAD_MUTEX_INITIALIZER;
static _Atomic bool cont_installed;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static _Atomic unsigned cont_gen;
/* signals uipc keeps for itself (sig_own: SIGSYS, entry/trap.c): the
 * program's sigaction is recorded, never installed; and those of them it
 * keeps out of every signal mask it installs (sa_mask of the handlers) */
static void (*owned[NSIGS])(int, siginfo_t *, void *);
static uint64_t unblockable;

/* per thread: depth of uipc critical sections and of calls that may
 * sleep, signals held meanwhile, and the context the last of them
 * interrupted (a copy: the handler that reads its third argument gets
 * one, as from the kernel) */
static __thread int crit_depth;
static __thread int call_depth;
static __thread uint64_t held_mask;
static __thread siginfo_t held_info[NSIGS];
static __thread ucontext_t held_uc;
static __thread bool held_uc_kept;
__thread uint32_t uipc_held_signals;
/* per thread: how many of the program's handlers ran on this thread (signals.h) */
__thread unsigned uipc_handler_count;

static bool is_fault_signal(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS;
}

/* signals whose default action would not kill or stop: fine to catch */
static bool catchable(int sig)
{
	return sig > 0 && sig < NSIGS && sig != SIGKILL && sig != SIGSTOP;
}

static bool installed_function(const struct sigaction *pa)
{
	if (pa->sa_flags & SA_SIGINFO)
		return pa->sa_sigaction != NULL;
	return pa->sa_handler != SIG_DFL && pa->sa_handler != SIG_IGN;
}

/* one word of a futex_waitv call (the kernel's struct futex_waitv) */
struct waitv_word {
	uint64_t val;
	uint64_t uaddr;
	uint32_t flags;
	uint32_t reserved;
};

#define WAITV_MAX     8
#define FUTEX2_U32    0x02
#define FUTEX2_PRIV   0x80

static int waitv_state;       /* 0 unknown, 1 works, -1 not available */

int uipc_waitv_state(void)
{
	return waitv_state;
}

#if defined(__x86_64__)
/*
 * One word: FUTEX_WAIT, with the handler count compared inside a window
 * that the trampoline knows (cut_wait_short), as musl's cancellation
 * points are: a handler of the program that runs anywhere from the
 * comparison to the system call's first instruction moves the thread to
 * uipc_wait1_cut, which returns -EINTR; one that runs during the call
 * ends it with -EINTR too (a FUTEX_WAIT with a timeout is not restarted
 * after a handler, SA_RESTART or not).  futex_waitv with the count as a
 * second word does the same at about 350 ns more a sleep (its allocation,
 * the second word, its parsing: docs/measurements.md, issue 18).
 * Arguments: the word, its value, REL, the count's address, HAND0;
 * returns 0 or -errno.
 */
extern const char uipc_wait1_window[], uipc_wait1_window_end[], uipc_wait1_cut[];
long uipc_futex_wait1(uint32_t *word, uint32_t val, const struct timespec *rel,
		      const unsigned *count, unsigned hand0);
__asm__(
	".text\n"
	".globl uipc_futex_wait1\n.hidden uipc_futex_wait1\n.type uipc_futex_wait1,@function\n"
	".globl uipc_wait1_window\n.hidden uipc_wait1_window\n"
	".globl uipc_wait1_window_end\n.hidden uipc_wait1_window_end\n"
	".globl uipc_wait1_cut\n.hidden uipc_wait1_cut\n"
	"uipc_futex_wait1:\n"
	"	mov %rdx, %r10\n"          /* timeout */
	"	mov %esi, %edx\n"          /* val */
	"	xor %esi, %esi\n"          /* FUTEX_WAIT (shared) */
	"uipc_wait1_window:\n"
	"	cmp %r8d, (%rcx)\n"        /* a handler ran since HAND0? */
	"	jne uipc_wait1_cut\n"
	"	mov $202, %eax\n"          /* SYS_futex; r8, r9 unused by FUTEX_WAIT */
	"	syscall\n"
	"uipc_wait1_window_end:\n"
	"	ret\n"
	"uipc_wait1_cut:\n"
	"	mov $-4, %rax\n"           /* -EINTR */
	"	ret\n"
	".size uipc_futex_wait1, .-uipc_futex_wait1\n");

_Static_assert(SYS_futex == 202 && FUTEX_WAIT == 0 && EINTR == 4, "uipc_futex_wait1's constants");

/* a handler (of the program, or uipc's SIGCONT) about to run on a thread
 * in uipc_futex_wait1's window, before its system call: the wait ends */
static void cut_wait_short(void *ctx)
{
	ucontext_t *uc = ctx;
	greg_t pc = uc ? uc->uc_mcontext.gregs[REG_RIP] : 0;

	if (pc >= (greg_t)uipc_wait1_window && pc < (greg_t)uipc_wait1_window_end)
		uc->uc_mcontext.gregs[REG_RIP] = (greg_t)uipc_wait1_cut;
}
#else
static void cut_wait_short(void *ctx)
{
	(void)ctx;
}
#endif

int uipc_wait_words(uint32_t *const *w, const uint32_t *val, int n, const struct timespec *rel,
		    unsigned hand0)
{
	struct waitv_word v[WAITV_MAX + 1];
	struct timespec abs;
	int k = 0, r;

	if (uipc_handler_count != hand0) {
		errno = EINTR;
		return -1;
	}
#if defined(__x86_64__)
	if (n == 1) {
		long e = uipc_futex_wait1(w[0], val[0], rel, &uipc_handler_count, hand0);

		if (e < 0) {
			errno = (int)-e;
			return -1;
		}
		return 0;
	}
#endif
	if (waitv_state >= 0 && n <= WAITV_MAX) {
		for (int i = 0; i < n; i++)
			v[k++] = (struct waitv_word){ val[i], (uint64_t)(uintptr_t)w[i], FUTEX2_U32, 0 };
		/* ours alone: private */
		v[k++] = (struct waitv_word){ hand0, (uint64_t)(uintptr_t)&uipc_handler_count,
					      FUTEX2_U32 | FUTEX2_PRIV, 0 };
		if (rel) {
			clock_gettime(CLOCK_MONOTONIC, &abs);
			abs.tv_sec += rel->tv_sec;
			abs.tv_nsec += rel->tv_nsec;
			if (abs.tv_nsec >= 1000000000L) {
				abs.tv_sec++;
				abs.tv_nsec -= 1000000000L;
			}
		}
		r = (int)sys_syscall(SYS_futex_waitv, v, k, 0, rel ? &abs : NULL, CLOCK_MONOTONIC);
		if (r >= 0 || errno != ENOSYS) {
			waitv_state = 1;
			if (r < 0 && errno == EAGAIN && uipc_handler_count != hand0)
				errno = EINTR;
			return r;
		}
		waitv_state = -1;
	}
	r = (int)sys_syscall(SYS_futex, (int *)w[0], FUTEX_WAIT, val[0], rel, NULL, 0);
	return r < 0 ? -1 : 0;
}

unsigned uipc_cont_gen(void)
{
	return atomic_load_explicit(&cont_gen, memory_order_acquire);
}

void sig_strip_unblockable(sigset_t *set)
{
	for (uint64_t m = unblockable; m; m &= m - 1)
		sigdelset(set, __builtin_ctzll(m));
}

/* Run the program's handler for SIG as the kernel would have. */
static void call_program(int sig, siginfo_t *si, void *ctx)
{
	struct sigaction *pa = &prog_act[sig];

	if (!installed_function(pa))
		return;
	cut_wait_short(ctx);
	uipc_handler_count++;
	if (pa->sa_flags & SA_SIGINFO) {
		void (*h)(int, siginfo_t *, void *) = pa->sa_sigaction;

		if (pa->sa_flags & SA_RESETHAND) {
			pa->sa_handler = SIG_DFL;
			pa->sa_flags &= ~SA_SIGINFO;
		}
		h(sig, si, ctx);
	} else {
		void (*h)(int) = pa->sa_handler;

		if (pa->sa_flags & SA_RESETHAND)
			pa->sa_handler = SIG_DFL;
		h(sig);
	}
}

/* a copy of the kernel's context CTX for a held handler: its registers
 * and mask, and the floating-point state it points to (the kernel's frame
 * is gone by the time the handler runs) */
static void keep_context(const void *ctx)
{
	const ucontext_t *uc = ctx;

	memset(&held_uc, 0, sizeof(held_uc));
	if (!uc) {
		held_uc_kept = false;
		return;
	}
	/* the kernel's ucontext ends with an 8-byte mask, glibc's is longer */
	memcpy(&held_uc, uc, offsetof(ucontext_t, uc_sigmask));
	memcpy(&held_uc.uc_sigmask, &uc->uc_sigmask, _NSIG / 8);
	if (uc->uc_mcontext.fpregs) {
		memcpy(&held_uc.__fpregs_mem, uc->uc_mcontext.fpregs, sizeof(held_uc.__fpregs_mem));
		held_uc.uc_mcontext.fpregs = &held_uc.__fpregs_mem;
	}
	held_uc_kept = true;
}

/* SIG arrived inside a critical section or a call that may sleep: its
 * handler runs at the end of the outermost (uipc_crit_exit,
 * uipc_call_end) */
static void hold(int sig, siginfo_t *si, void *ctx)
{
	held_mask |= 1ULL << sig;
	if (si)
		held_info[sig] = *si;
	keep_context(ctx);
	uipc_held_signals++;   /* ends an interruptible lock wait */
	if (call_depth > 0 && installed_function(&prog_act[sig])) {
		/* the call's sleep ends as for a handler run: every wait
		 * compares the count with the call's first (hand0) */
		uipc_handler_count++;
		cut_wait_short(ctx);
	}
}

static void trampoline(int sig, siginfo_t *si, void *ctx)
{
	if (sig == SIGCONT) {
		/* a stop and continue happened: every sleeper of this process
		 * that was in semop meanwhile returns EINTR, as with the kernel */
		atomic_fetch_add(&cont_gen, 1);
		proc_note_continue();
		cut_wait_short(ctx);
	}
	if (crit_depth > 0 || call_depth > 0) {
		hold(sig, si, ctx);
		return;
	}
	call_program(sig, si, ctx);
}

bool uipc_handler_due(unsigned hand0)
{
	uint64_t held = held_mask;

	if (uipc_handler_count != hand0)
		return true;
	for (int sig = 1; held && sig < NSIGS; sig++)
		if (((held >> sig) & 1) && installed_function(&prog_act[sig]))
			return true;
	return false;
}

void uipc_crit_enter(void)
{
	crit_depth++;
	__asm__ volatile("" ::: "memory");
}

/* the handlers held, as the kernel runs them after a system call */
static void run_held(void)
{
	void *uc = held_uc_kept ? &held_uc : NULL;

	while (held_mask) {
		int sig = __builtin_ctzll(held_mask);
		sigset_t mask, old;
		siginfo_t si = held_info[sig];

		held_mask &= ~(1ULL << sig);
		/* what the kernel blocks while the handler runs */
		mask = prog_act[sig].sa_mask;
		if (!(prog_act[sig].sa_flags & SA_NODEFER))
			sigaddset(&mask, sig);
		sig_strip_unblockable(&mask);
		uipc_sigmask(SIG_BLOCK, &mask, &old);
		call_program(sig, &si, uc);
		uipc_sigmask(SIG_SETMASK, &old, NULL);
	}
	held_uc_kept = false;
}

/* Leave a critical section; at the outermost, outside any call, run the
 * handlers held. */
void uipc_crit_exit(void)
{
	__asm__ volatile("" ::: "memory");
	if (--crit_depth > 0 || likely(!held_mask) || call_depth > 0)
		return;
	run_held();
}

void uipc_call_begin(void)
{
	call_depth++;
	__asm__ volatile("" ::: "memory");
}

long uipc_call_end(long r)
{
	__asm__ volatile("" ::: "memory");
	if (--call_depth > 0 || likely(!held_mask) || crit_depth > 0)
		return r;
	run_held();
	return r;
}

bool uipc_signal_held(void)
{
	return held_mask != 0;
}

/* In a fork child, leave a critical section entered before the fork: a
 * signal held meanwhile was the parent's (a child starts with none). */
void uipc_crit_exit_child(void)
{
	held_mask = 0;
	uipc_crit_exit();
}

/* ---- faults: EFAULT from uipc_copy_*() ---- */

#if defined(__x86_64__)
/*
 * The copy routine whose loads and stores may fault: the handler moves a
 * faulting instruction in [uipc_copy_asm, uipc_copy_fault_end) to the
 * fixup, which returns -EFAULT.  No setjmp, so a good copy costs nothing
 * extra, as the kernel's exception tables.
 */
extern char uipc_copy_asm[], uipc_copy_fault_end[], uipc_copy_fixup[];
int uipc_copy_asm_fn(void *dst, const void *src, size_t len) __asm__("uipc_copy_asm");
__asm__(
	".text\n"
	".globl uipc_copy_asm\n.hidden uipc_copy_asm\n.type uipc_copy_asm,@function\n"
	"uipc_copy_asm:\n"
	/* 32 bytes a round while they last (a 64-byte message is two
	 * rounds, not eight), then 8, then the tail */
	"	cmp $32, %rdx\n"
	"	jb 2f\n"
	"0:	mov (%rsi), %rax\n"
	"	mov 8(%rsi), %rcx\n"
	"	mov 16(%rsi), %r8\n"
	"	mov 24(%rsi), %r9\n"
	"	mov %rax, (%rdi)\n"
	"	mov %rcx, 8(%rdi)\n"
	"	mov %r8, 16(%rdi)\n"
	"	mov %r9, 24(%rdi)\n"
	"	add $32, %rsi\n"
	"	add $32, %rdi\n"
	"	sub $32, %rdx\n"
	"	cmp $32, %rdx\n"
	"	jae 0b\n"
	"2:	cmp $8, %rdx\n"
	"	jb 3f\n"
	"1:	mov (%rsi), %rax\n"
	"	mov %rax, (%rdi)\n"
	"	add $8, %rsi\n"
	"	add $8, %rdi\n"
	"	sub $8, %rdx\n"
	"	cmp $8, %rdx\n"
	"	jae 1b\n"
	/* the tail (< 8 bytes) in at most three moves of 4, 2 and 1 bytes:
	 * a sembuf's 6 bytes cost 2 moves, not 6 rounds of a byte loop */
	"3:	test $4, %dl\n"
	"	jz 6f\n"
	"	mov (%rsi), %eax\n"
	"	mov %eax, (%rdi)\n"
	"	add $4, %rsi\n"
	"	add $4, %rdi\n"
	"6:	test $2, %dl\n"
	"	jz 7f\n"
	"	movw (%rsi), %ax\n"
	"	movw %ax, (%rdi)\n"
	"	add $2, %rsi\n"
	"	add $2, %rdi\n"
	"7:	test $1, %dl\n"
	"	jz 5f\n"
	"	movb (%rsi), %al\n"
	"	movb %al, (%rdi)\n"
	"5:	xor %eax, %eax\n"
	"	ret\n"
	".globl uipc_copy_fault_end\n.hidden uipc_copy_fault_end\n"
	"uipc_copy_fault_end:\n"
	".globl uipc_copy_fixup\n.hidden uipc_copy_fixup\n"
	"uipc_copy_fixup:\n"
	"	mov $-14, %eax\n"
	"	ret\n"
	".size uipc_copy_asm, .-uipc_copy_asm\n");

/* the inline loads' entries (core/signals.h), gathered by the linker */
extern const struct uipc_extable __start_uipc_extable[] __attribute__((weak, visibility("hidden")));
extern const struct uipc_extable __stop_uipc_extable[] __attribute__((weak, visibility("hidden")));

/* where a fault at IP goes instead: 0 if IP is none of ours */
static greg_t fixup_of(greg_t ip)
{
	if (ip >= (greg_t)uipc_copy_asm && ip < (greg_t)uipc_copy_fault_end)
		return (greg_t)uipc_copy_fixup;
	for (const struct uipc_extable *e = __start_uipc_extable; e < __stop_uipc_extable; e++)
		if ((greg_t)((const char *)&e->insn + e->insn) == ip)
			return (greg_t)((const char *)&e->fixup + e->fixup);
	return 0;
}

static bool fixup_copy_fault(void *ctx)
{
	ucontext_t *uc = ctx;
	greg_t fixup = fixup_of(uc->uc_mcontext.gregs[REG_RIP]);

	if (!fixup)
		return false;
	uc->uc_mcontext.gregs[REG_RIP] = fixup;
	return true;
}
#else
static __thread sigjmp_buf *fault_jmp;

static bool fixup_copy_fault(void *ctx)
{
	(void)ctx;
	if (fault_jmp)
		siglongjmp(*fault_jmp, 1);
	return false;
}
#endif

static void fault_handler(int sig, siginfo_t *si, void *ctx)
{
	/* a namespace file truncated under us (fault.c): first, so that a
	 * copy out of the arena is not taken for the caller's EFAULT */
	if (sig == SIGBUS && si && ns_fault_repair(si->si_addr))
		return;
	if (fixup_copy_fault(ctx))
		return;
	if (installed_function(&prog_act[sig])) {
		/* a fault is not held: the program's handler runs now, outside
		 * any call as far as other signals are concerned, and if it
		 * leaves by longjmp the calls it leaves are over */
		int depth = call_depth;

		call_depth = 0;
		call_program(sig, si, ctx);
		call_depth = depth;
		return;
	}
	/* the default action: let the fault happen again without us */
	{
		struct sigaction dfl;

		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		real_sigaction(sig, &dfl, NULL);
	}
}

/* ---- installing ---- */

static void install_ours(int sig, const struct sigaction *prog, void (*h)(int, siginfo_t *, void *),
			 int extra_flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = h;
	sa.sa_flags = SA_SIGINFO | extra_flags;
	if (prog) {
		sa.sa_mask = prog->sa_mask;
		sig_strip_unblockable(&sa.sa_mask);
		sa.sa_flags |= prog->sa_flags & (SA_RESTART | SA_NODEFER | SA_ONSTACK | SA_RESETHAND);
	} else {
		sigemptyset(&sa.sa_mask);
	}
	real_sigaction(sig, &sa, NULL);
}

static void install(void)
{
	real_sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))
		dlsym(RTLD_NEXT, "sigaction");
	if (!real_sigaction)
		return;
	for (int sig = 1; sig < NSIGS; sig++) {
		if (!catchable(sig))
			continue;
		real_sigaction(sig, NULL, &prog_act[sig]);
		/* handlers installed before uipc was loaded get the trampoline */
		if (installed_function(&prog_act[sig]) && !is_fault_signal(sig)) {
			install_ours(sig, &prog_act[sig], trampoline, 0);
			trampolined[sig] = true;
		}
	}
	install_ours(SIGSEGV, NULL, fault_handler, SA_NODEFER | SA_ONSTACK);
	install_ours(SIGBUS, NULL, fault_handler, SA_NODEFER | SA_ONSTACK);
}

__attribute__((constructor)) static void signals_init(void)
{
	pthread_once(&install_once, install);
}

/* The program's sigaction: its view of every signal is what it installed,
 * not our handlers.  libc's conventions (-1 and errno), as the call it
 * stands for. */
int sig_program_action(int sig, const struct sigaction *act, struct sigaction *old)
{
	int r = 0;

	pthread_once(&install_once, install);
	if (!real_sigaction) {
		errno = ENOSYS;
		return -1;
	}
	if (!catchable(sig))
		return real_sigaction(sig, act, old);
	crit_mutex_lock(&act_mutex);
	if (old)
		*old = prog_act[sig];
	if (act) {
		bool fn = installed_function(act);

		prog_act[sig] = *act;
		if (is_fault_signal(sig) || owned[sig]) {
			/* our handler stays; it calls the program's */
		} else if (fn) {
			install_ours(sig, act, trampoline, 0);
			trampolined[sig] = true;
		} else if (sig == SIGCONT && atomic_load(&cont_installed)) {
			/* uipc needs its SIGCONT handler; it does nothing more */
			install_ours(sig, NULL, trampoline, SA_RESTART);
			trampolined[sig] = true;
		} else {
			r = real_sigaction(sig, act, NULL);
			trampolined[sig] = false;
		}
	}
	crit_mutex_unlock(&act_mutex);
	return r;
}

/* ---- signal masks: the signals kept unblocked stay out of them ----
 *
 * Per thread, the program's view: which of the unblockable signals it asked
 * to have blocked (what sigprocmask reports back).  The kernel's mask never
 * has them.
 */
static __thread uint64_t t_view;
static void (*unblock_hook)(void);

#define SIGKILL_STOP ((1ULL << (SIGKILL - 1)) | (1ULL << (SIGSTOP - 1)))

bool sig_view_blocked(int sig)
{
	return (t_view >> (sig - 1)) & 1;
}

void sig_view_set(int sig, bool blocked)
{
	if (blocked)
		t_view |= 1ULL << (sig - 1);
	else
		t_view &= ~(1ULL << (sig - 1));
}

void sig_on_unblock(void (*fn)(void))
{
	unblock_hook = fn;
}

long sig_mask_apply(int how, const void *set, void *oset, size_t size, uint64_t *mask)
{
	uint64_t keep = __atomic_load_n(&unblockable, __ATOMIC_RELAXED), kbits = 0, view, old, nset;

	for (uint64_t m = keep; m; m &= m - 1)
		kbits |= 1ULL << (__builtin_ctzll(m) - 1);
	view = *mask | (t_view & kbits);
	old = view;
	if (size != 8)
		return -EINVAL;
	if (set) {
		if (uipc_copy_from_user(&nset, set, 8))
			return -EFAULT;
		nset &= ~SIGKILL_STOP;
		switch (how) {
		case SIG_BLOCK:   view |= nset; break;
		case SIG_UNBLOCK: view &= ~nset; break;
		case SIG_SETMASK: view = nset; break;
		default:          return -EINVAL;
		}
		t_view = view & kbits;
		*mask = view & ~kbits;
	}
	if (oset && uipc_copy_to_user(oset, &old, 8))
		return -EFAULT;
	return 0;
}

int uipc_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	uint64_t m, nset = 0;
	long r;

	/* glibc's: its own SIGCANCEL and SIGSETXID (32, 33) are never blocked
	 * (cleared by hand: libc's sigdelset refuses them, with errno) */
	if (set) {
		memcpy(&nset, set, 8);
		nset &= ~((1ULL << (32 - 1)) | (1ULL << (33 - 1)));
	}
	if (old)
		sigemptyset(old);
	if (!__atomic_load_n(&unblockable, __ATOMIC_RELAXED))
		return (int)-sys_pass5(SYS_rt_sigprocmask, how, set ? (long)&nset : 0, (long)old, 8, 0);
	r = sys_pass5(SYS_rt_sigprocmask, SIG_BLOCK, 0, (long)&m, 8, 0);
	if (r == 0)
		r = sig_mask_apply(how, set ? &nset : NULL, old, 8, &m);
	if (r == 0 && set)
		r = sys_pass5(SYS_rt_sigprocmask, SIG_SETMASK, (long)&m, 0, 8, 0);
	if (r == 0 && unblock_hook)
		unblock_hook();
	return (int)-r;
}

/* ---- signals uipc keeps (entry/trap.c) ---- */

void sig_keep_unblocked(int sig)
{
	if (catchable(sig))
		__atomic_or_fetch(&unblockable, 1ULL << sig, __ATOMIC_RELAXED);
}

int sig_own(int sig, void (*h)(int, siginfo_t *, void *), int flags)
{
	struct sigaction sa;
	int r;

	if (!catchable(sig) || is_fault_signal(sig))
		return -EINVAL;
	/* what the program had before is recorded first (install) */
	pthread_once(&install_once, install);
	if (!real_sigaction)
		return -ENOSYS;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = h;
	sa.sa_flags = SA_SIGINFO | flags;
	sigemptyset(&sa.sa_mask);
	crit_mutex_lock(&act_mutex);
	owned[sig] = h;
	trampolined[sig] = false;
	r = real_sigaction(sig, &sa, NULL) ? -errno : 0;
	crit_mutex_unlock(&act_mutex);
	return r;
}

bool sig_program_handler(int sig, struct sigaction *out)
{
	if (sig <= 0 || sig >= NSIGS)
		return false;
	*out = prog_act[sig];
	return installed_function(out);
}

void sig_run_program(int sig, siginfo_t *si, void *ctx)
{
	if (sig > 0 && sig < NSIGS)
		call_program(sig, si, ctx);
}

void uipc_sleep_begin(void)
{
	if (likely(atomic_load_explicit(&cont_installed, memory_order_acquire)))
		return;
	pthread_once(&install_once, install);
	if (!real_sigaction)
		return;
	crit_mutex_lock(&act_mutex);
	if (!cont_installed) {
		if (!trampolined[SIGCONT]) {
			install_ours(SIGCONT, NULL, trampoline, SA_RESTART);
			trampolined[SIGCONT] = true;
		}
		atomic_store(&cont_installed, true);
	}
	crit_mutex_unlock(&act_mutex);
}

/* ---- copies ---- */

static int guarded_copy(void *dst, const void *src, size_t len)
{
	if (len == 0)
		return 0;
	if (!dst || !src)
		return -EFAULT;
#if defined(__x86_64__)
	return uipc_copy_asm_fn(dst, src, len);
#else
	{
		sigjmp_buf jb;
		sigjmp_buf *volatile saved = fault_jmp;

		if (sigsetjmp(jb, 0)) {
			fault_jmp = saved;
			return -EFAULT;
		}
		fault_jmp = &jb;
		memcpy(dst, src, len);
		__asm__ volatile("" ::: "memory");
		fault_jmp = saved;
		return 0;
	}
#endif
}

int uipc_copy_from_user(void *dst, const void *src, size_t len)
{
	return guarded_copy(dst, src, len);
}

int uipc_copy_to_user(void *dst, const void *src, size_t len)
{
	return guarded_copy(dst, src, len);
}
