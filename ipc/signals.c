/*
 * signals.c - the thin layer between the program's signal handlers and uipc.
 *
 * SIGSEGV and SIGBUS: uipc keeps its own handlers installed.  A fault inside
 * uipc_copy_*() jumps back and the call fails with EFAULT; any other fault is
 * passed to what the program installed (its handler, or the default action).
 *
 * SIGCONT: the kernel's semop returns EINTR when the sleeper is stopped and
 * continued.  A futex wait is restarted silently in that case unless a
 * handler runs, so from the first time a thread sleeps in uipc a SIGCONT
 * handler is installed (it calls the program's handler, if any).  It stays:
 * installing it around every sleep would cost two system calls per wait.
 *
 * For these three signals sigaction() and signal() record and report what
 * the program installed, so the program sees exactly its own handlers.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <ucontext.h>

#include "internal.h"
#include "signals.h"

static __thread sigjmp_buf *fault_jmp;
static struct sigaction prog_act[3];   /* what the program installed: SEGV, BUS, CONT */
static pthread_mutex_t cont_mutex = PTHREAD_MUTEX_INITIALIZER;
static _Atomic bool cont_installed;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);

static int slot_of(int sig)
{
	return sig == SIGSEGV ? 0 : sig == SIGBUS ? 1 : sig == SIGCONT ? 2 : -1;
}

static bool installed_function(const struct sigaction *pa)
{
	if (pa->sa_flags & SA_SIGINFO)
		return pa->sa_sigaction != NULL;
	return pa->sa_handler != SIG_DFL && pa->sa_handler != SIG_IGN;
}

static _Atomic unsigned cont_gen;

unsigned uipc_cont_gen(void)
{
	return atomic_load_explicit(&cont_gen, memory_order_acquire);
}

static void cont_handler(int sig, siginfo_t *si, void *ctx)
{
	struct sigaction *pa = &prog_act[2];

	/* a stop and continue happened: every sleeper of this process that
	 * was in semop meanwhile returns EINTR, as with the kernel */
	atomic_fetch_add(&cont_gen, 1);
	proc_note_continue();
	if (!installed_function(pa))
		return;
	if (pa->sa_flags & SA_SIGINFO)
		pa->sa_sigaction(sig, si, ctx);
	else
		pa->sa_handler(sig);
}

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
	"	cmp $8, %rdx\n"
	"	jb 3f\n"
	"1:	mov (%rsi), %rax\n"
	"	mov %rax, (%rdi)\n"
	"	add $8, %rsi\n"
	"	add $8, %rdi\n"
	"	sub $8, %rdx\n"
	"	cmp $8, %rdx\n"
	"	jae 1b\n"
	"3:	test %rdx, %rdx\n"
	"	jz 5f\n"
	"4:	movb (%rsi), %al\n"
	"	movb %al, (%rdi)\n"
	"	inc %rsi\n"
	"	inc %rdi\n"
	"	dec %rdx\n"
	"	jnz 4b\n"
	"5:	xor %eax, %eax\n"
	"	ret\n"
	".globl uipc_copy_fault_end\n.hidden uipc_copy_fault_end\n"
	"uipc_copy_fault_end:\n"
	".globl uipc_copy_fixup\n.hidden uipc_copy_fixup\n"
	"uipc_copy_fixup:\n"
	"	mov $-14, %eax\n"
	"	ret\n"
	".size uipc_copy_asm, .-uipc_copy_asm\n");

static bool fixup_copy_fault(void *ctx)
{
	ucontext_t *uc = ctx;
	greg_t ip = uc->uc_mcontext.gregs[REG_RIP];

	if (ip < (greg_t)uipc_copy_asm || ip >= (greg_t)uipc_copy_fault_end)
		return false;
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)uipc_copy_fixup;
	return true;
}
#else
static bool fixup_copy_fault(void *ctx)
{
	(void)ctx;
	return false;
}
#endif

static void fault_handler(int sig, siginfo_t *si, void *ctx)
{
	int k = slot_of(sig);
	struct sigaction *pa;

	if (fixup_copy_fault(ctx))
		return;
	if (fault_jmp)
		siglongjmp(*fault_jmp, 1);
	if (k < 0)
		return;
	pa = &prog_act[k];
	if (pa->sa_flags & SA_SIGINFO) {
		if (pa->sa_sigaction) {
			pa->sa_sigaction(sig, si, ctx);
			if (pa->sa_flags & SA_RESETHAND)
				pa->sa_handler = SIG_DFL, pa->sa_flags &= ~SA_SIGINFO;
			return;
		}
	} else if (pa->sa_handler != SIG_DFL && pa->sa_handler != SIG_IGN) {
		void (*h)(int) = pa->sa_handler;

		if (pa->sa_flags & SA_RESETHAND)
			pa->sa_handler = SIG_DFL;
		h(sig);
		return;
	}
	/* default action: let the fault happen again without us */
	{
		struct sigaction dfl;

		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		real_sigaction(sig, &dfl, NULL);
	}
}

static void install(void)
{
	struct sigaction sa;

	real_sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))
		dlsym(RTLD_NEXT, "sigaction");
	if (!real_sigaction)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fault_handler;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	real_sigaction(SIGSEGV, &sa, &prog_act[0]);
	real_sigaction(SIGBUS, &sa, &prog_act[1]);
	real_sigaction(SIGCONT, NULL, &prog_act[2]);
}

__attribute__((constructor)) static void usercopy_init(void)
{
	pthread_once(&install_once, install);
}

/* The program's view of SIGSEGV/SIGBUS: what it installed, not our handler. */
int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	int k = slot_of(sig);

	pthread_once(&install_once, install);
	if (!real_sigaction) {
		errno = ENOSYS;
		return -1;
	}
	if (k < 0)
		return real_sigaction(sig, act, old);
	if (k == 2) {
		int r = 0;

		pthread_mutex_lock(&cont_mutex);
		if (old)
			*old = prog_act[2];
		if (act) {
			prog_act[2] = *act;
			/* until uipc needs its own, the program's is in place */
			if (!cont_installed)
				r = real_sigaction(sig, act, NULL);
		}
		pthread_mutex_unlock(&cont_mutex);
		return r;
	}
	if (old)
		*old = prog_act[k];
	if (act)
		prog_act[k] = *act;
	return 0;
}

void uipc_sleep_begin(void)
{
	if (likely(atomic_load_explicit(&cont_installed, memory_order_acquire)))
		return;
	pthread_once(&install_once, install);
	if (!real_sigaction)
		return;
	pthread_mutex_lock(&cont_mutex);
	if (!cont_installed) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = cont_handler;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sigemptyset(&sa.sa_mask);
		real_sigaction(SIGCONT, &sa, NULL);
		atomic_store(&cont_installed, true);
	}
	pthread_mutex_unlock(&cont_mutex);
}

void uipc_sleep_end(void)
{
}

static int guarded_copy(void *dst, const void *src, size_t len)
{
#if defined(__x86_64__)
	if (!dst || !src)
		return len ? -EFAULT : 0;
	return uipc_copy_asm_fn(dst, src, len);
#endif
	sigjmp_buf jb;
	sigjmp_buf *volatile saved = fault_jmp;

	if (len == 0)
		return 0;
	if (!dst || !src)
		return -EFAULT;
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

int uipc_copy_from_user(void *dst, const void *src, size_t len)
{
	return guarded_copy(dst, src, len);
}

int uipc_copy_to_user(void *dst, const void *src, size_t len)
{
	return guarded_copy(dst, src, len);
}
