/*
 * trap.c - trap mode: System V IPC reached by system call instructions.
 *
 * LD_PRELOAD reaches libc's names and syscall(); code that issues the
 * `syscall` (`svc`) instruction itself (inline assembly, runtimes with their
 * own stubs) goes past them to the kernel.  In trap mode (UIPC_TRAP=1,
 * `uipc run --trap`) a seccomp filter makes those system calls raise
 * SIGSYS, and the handler here serves them from uipc with the raw calls'
 * conventions (the result in the return register, -errno on error).
 *
 * The filter (build_filter) sends to SIGSYS:
 *   - the twelve System V IPC calls and the six native AIO calls, always:
 *     uipc never makes them itself;
 *   - unshare and clone with CLONE_NEWIPC in their flags (uipc's own
 *     unshare and clone of the other flags never have it; a clone served
 *     here is made fork-like by the handler, entry/unshare.c, and its
 *     child returns from the handler);
 *   - the calls uipc must see but also make itself: the credential calls
 *     (setuid ... setgroups, capset: core/cred.c then reads the
 *     credentials again), remap_file_pages (an attachment's is uipc's,
 *     ipc/shm.c) and setns (into a uipc namespace, entry/setns.c; into a
 *     kernel namespace uipc makes it), unless the sixth argument register
 *     holds the pass word
 *     UIPC_SYS_PASS (core/sys.h).  Each takes at most five arguments, so
 *     the kernel ignores the sixth, and uipc's own calls of them
 *     (sys_pass5) put the word there and wipe it again in the same asm
 *     statement: glibc's calls of fewer arguments leave that register as
 *     they found it, so a word left there would let the program's next
 *     call of the group through.  A program's call holds it only by
 *     accident (a 64-bit value uipc chose).
 *   clone3 keeps its flags in memory, out of the filter's sight, and
 *   cannot be trapped: glibc makes it (pthread_create, posix_spawn) with
 *   every signal blocked, and a trap then kills.  So a clone3 without the
 *   pass word fails with ENOSYS, as under many container filters, and
 *   glibc falls back to clone, which the filter sees; uipc's own clone3
 *   (a fork-like child with CLONE_NEWIPC asked through syscall()) carries
 *   the word.
 *   32-bit calls (int 0x80, x32) of the IPC numbers fail with ENOSYS: uipc
 *   serves only the native ABI, and a 32-bit program under trap mode would
 *   otherwise reach the kernel's IPC unseen.
 * An instruction-pointer check ("calls from libuipc's text pass") cannot
 * work: the filter is inherited over exec, where the library is mapped
 * elsewhere.  Hence the pass word.
 *
 * The handler (sigsys_handler) is installed in every process that loads
 * the library (a filter of someone else's, Android's app filter for one,
 * may trap the IPC calls too: they are served the same way), with
 * SA_NODEFER and an empty mask, so that a handler of the program that runs
 * while uipc serves a call (a semop sleeping in the SIGSYS handler ends
 * with EINTR when a signal's handler runs, as on the kernel) can itself
 * make a trapped call.  What it does not serve goes to the program's own
 * SIGSYS handler, which sigaction records and reports but never installs
 * (core/signals.c, sig_own); without one, the kernel's default (a core
 * dump) follows.
 *
 * A seccomp trap while SIGSYS is blocked kills the process (the kernel
 * forces the default action).  So in trap mode the program never blocks
 * SIGSYS: sigprocmask and pthread_sigmask (interposed here) keep it out of
 * the mask and record the program's wish per thread, which is what they
 * report (a new thread starts without it); a SIGSYS sent by
 * kill() while the program "blocks" it is held and sent again when it
 * unblocks.  The sa_mask of the program's handlers loses it too
 * (signals.c), and the masks of sigsuspend, ppoll, pselect and
 * epoll_pwait.  An exec passes the program's wish on (the new image's
 * constructor takes it back), and so does an ignored SIGSYS.
 * rt_sigprocmask by instruction is not trapped: glibc's own (pthread_create
 * and posix_spawn block every signal for a moment) run where no IPC call
 * can come, and posix_spawn's child resets SIGSYS to the default before its
 * last one, which a trap would then kill.  A program that blocks SIGSYS by
 * instruction and then makes a trapped call dies, as it would under any
 * seccomp trap.
 *
 * Split with core/signals.c: the program's view of the mask (per thread)
 * and uipc_sigmask, which every layer uses for its own masks, live there;
 * the filters, the handler and the libc names live here.
 *
 * The filter needs PR_SET_NO_NEW_PRIVS unless the caller has CAP_SYS_ADMIN:
 * set-user-ID programs then run without their privileges (docs/usage.md).
 */
#include <dlfcn.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "entry/entry.h"
#include "uipc.h"

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#define TRAP_SUPPORTED 1
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#define TRAP_SUPPORTED 1
#else
#define TRAP_SUPPORTED 0
#endif

#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1              /* si_code of a seccomp trap */
#endif

/* SECCOMP_RET_DATA of uipc's trap: the handler finds it in si_errno */
#define TRAP_DATA 0x7531
/* the probes: numbers no kernel has, which uipc's filters answer with
 * -PROBE_ERRNO (so a filter is installed once, not once per exec) */
#define PROBE_TRAP_NR  0x757001
#define PROBE_NOIPC_NR 0x757002
#define PROBE_ERRNO    4011
#define X32_BIT        0x40000000
#define SIGSYS_BIT     (1ULL << (SIGSYS - 1))

/* the IPC calls: served by uipc, never made by it */
static const int ipc_numbers[] = {
	SYS_semget, SYS_semop, SYS_semtimedop, SYS_semctl,
	SYS_msgget, SYS_msgsnd, SYS_msgrcv, SYS_msgctl,
	SYS_shmget, SYS_shmat, SYS_shmdt, SYS_shmctl,
	SYS_io_setup, SYS_io_destroy, SYS_io_submit, SYS_io_cancel,
	SYS_io_getevents, SYS_io_pgetevents,
};

/* the calls uipc must see and also makes itself (with the pass word) */
static const int pass_numbers[] = {
	SYS_setuid, SYS_setgid, SYS_setreuid, SYS_setregid, SYS_setresuid,
	SYS_setresgid, SYS_setfsuid, SYS_setfsgid, SYS_setgroups, SYS_capset,
	SYS_remap_file_pages, SYS_setns,
};

#if defined(__x86_64__)
/* the IPC numbers of the 32-bit ABIs (asm/unistd_32.h, asm/unistd_x32.h):
 * refused with ENOSYS, uipc serves only the native one */
static const int i386_numbers[] = {
	117 /* ipc */, 245, 246, 247, 248, 249 /* io_* */, 385 /* io_pgetevents */,
	393, 394, 395, 396, 397, 398, 399, 400, 401, 402 /* sem*, shm*, msg* */,
	416 /* io_pgetevents_time64 */, 420 /* semtimedop_time64 */,
};
static const int x32_extra[] = { 543 /* io_setup */, 544 /* io_submit */ };
#endif

/* ---- the filters: classic BPF, built with forward labels ---- */

enum { L_TRAP, L_ALLOW, L_ENOSYS, L_EINVAL, L_PROBE, L_UNSHARE, L_PASS, L_CLONE3, L_X32,
       L_I386, L_NLABELS };

struct bpf_build {
	struct sock_filter f[256];
	int n;
	int at[L_NLABELS];           /* where each label is, -1: not yet */
	/* jumps to fix: instruction, which field (0 jt, 1 jf), label */
	struct { int insn, field, label; } fix[256];
	int nfix;
	bool overflow;
};

static void emit(struct bpf_build *b, uint16_t code, uint32_t k)
{
	if (b->n >= 256) {
		b->overflow = true;
		return;
	}
	b->f[b->n++] = (struct sock_filter)BPF_STMT(code, k);
}

/* a conditional jump: to label JT when true, JF when false (-1: next) */
static void emit_jmp(struct bpf_build *b, uint16_t code, uint32_t k, int jt, int jf)
{
	int i = b->n;

	emit(b, BPF_JMP | code | BPF_K, k);
	if (b->overflow)
		return;
	if (jt >= 0)
		b->fix[b->nfix++] = (typeof(b->fix[0])){ i, 0, jt };
	if (jf >= 0)
		b->fix[b->nfix++] = (typeof(b->fix[0])){ i, 1, jf };
}

static void label(struct bpf_build *b, int l)
{
	b->at[l] = b->n;
}

static bool resolve(struct bpf_build *b)
{
	if (b->overflow)
		return false;
	for (int i = 0; i < b->nfix; i++) {
		int insn = b->fix[i].insn, to = b->at[b->fix[i].label], off = to - insn - 1;

		if (to < 0 || off < 0 || off > 255)
			return false;
		if (b->fix[i].field == 0)
			b->f[insn].jt = (uint8_t)off;
		else
			b->f[insn].jf = (uint8_t)off;
	}
	return true;
}

#define LD_NR     BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#define ARG_HI(i) (offsetof(struct seccomp_data, args) + 8 * (i) + 4)

/*
 * WHICH: UIPC_FILTER_TRAP or UIPC_FILTER_NO_KERNEL_IPC.  The IPC numbers go
 * to L_TRAP (trap) or L_ENOSYS (no kernel IPC); unshare and clone with
 * CLONE_NEWIPC to L_TRAP (trap) or L_EINVAL (no kernel IPC: a kernel
 * without IPC namespaces); in trap mode only, the pass group to L_TRAP and
 * clone3 to L_ENOSYS, unless the sixth argument is the pass word.
 */
static bool build_filter(struct bpf_build *b, int which)
{
	bool trap = which == UIPC_FILTER_TRAP;
	int ipc_to = trap ? L_TRAP : L_ENOSYS;

	memset(b, 0, sizeof(*b));
	for (int i = 0; i < L_NLABELS; i++)
		b->at[i] = -1;
	emit(b, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
#if defined(__x86_64__)
	emit_jmp(b, BPF_JEQ, AUDIT_ARCH_I386, L_I386, -1);
#endif
	emit_jmp(b, BPF_JEQ, NATIVE_ARCH, -1, L_ALLOW);
	b->f[b->n++] = (struct sock_filter)LD_NR;
#if defined(__x86_64__)
	emit_jmp(b, BPF_JSET, X32_BIT, L_X32, -1);
#endif
	for (size_t i = 0; i < sizeof(ipc_numbers) / sizeof(ipc_numbers[0]); i++)
		emit_jmp(b, BPF_JEQ, (uint32_t)ipc_numbers[i], ipc_to, -1);
	emit_jmp(b, BPF_JEQ, SYS_unshare, L_UNSHARE, -1);
	emit_jmp(b, BPF_JEQ, SYS_clone, L_UNSHARE, -1);
	if (trap) {
		emit_jmp(b, BPF_JEQ, SYS_clone3, L_CLONE3, -1);
		for (size_t i = 0; i < sizeof(pass_numbers) / sizeof(pass_numbers[0]); i++)
			emit_jmp(b, BPF_JEQ, (uint32_t)pass_numbers[i], L_PASS, -1);
	}
	emit_jmp(b, BPF_JEQ, trap ? PROBE_TRAP_NR : PROBE_NOIPC_NR, L_PROBE, L_ALLOW);

	/* unshare (and clone): the flags are the first argument */
	label(b, L_UNSHARE);
	emit(b, BPF_LD | BPF_W | BPF_ABS, ARG_LO(0));
	emit_jmp(b, BPF_JSET, CLONE_NEWIPC, trap ? L_TRAP : L_EINVAL, L_ALLOW);

	if (trap) {
		label(b, L_PASS);
		emit(b, BPF_LD | BPF_W | BPF_ABS, ARG_LO(5));
		emit_jmp(b, BPF_JEQ, (uint32_t)UIPC_SYS_PASS, -1, L_TRAP);
		emit(b, BPF_LD | BPF_W | BPF_ABS, ARG_HI(5));
		emit_jmp(b, BPF_JEQ, (uint32_t)((uint64_t)UIPC_SYS_PASS >> 32), L_ALLOW, L_TRAP);
		/* clone3: the same word, else ENOSYS (no trap: see above) */
		label(b, L_CLONE3);
		emit(b, BPF_LD | BPF_W | BPF_ABS, ARG_LO(5));
		emit_jmp(b, BPF_JEQ, (uint32_t)UIPC_SYS_PASS, -1, L_ENOSYS);
		emit(b, BPF_LD | BPF_W | BPF_ABS, ARG_HI(5));
		emit_jmp(b, BPF_JEQ, (uint32_t)((uint64_t)UIPC_SYS_PASS >> 32), L_ALLOW, L_ENOSYS);
	}
#if defined(__x86_64__)
	label(b, L_X32);
	for (size_t i = 0; i < sizeof(ipc_numbers) / sizeof(ipc_numbers[0]); i++)
		emit_jmp(b, BPF_JEQ, X32_BIT | (uint32_t)ipc_numbers[i], L_ENOSYS, -1);
	for (size_t i = 0; i < sizeof(x32_extra) / sizeof(x32_extra[0]); i++)
		emit_jmp(b, BPF_JEQ, X32_BIT | (uint32_t)x32_extra[i], L_ENOSYS, -1);
	emit(b, BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	label(b, L_I386);
	b->f[b->n++] = (struct sock_filter)LD_NR;
	for (size_t i = 0; i < sizeof(i386_numbers) / sizeof(i386_numbers[0]); i++)
		emit_jmp(b, BPF_JEQ, (uint32_t)i386_numbers[i], L_ENOSYS, -1);
	emit(b, BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
#endif
	label(b, L_TRAP);
	emit(b, BPF_RET | BPF_K, trap ? SECCOMP_RET_TRAP | TRAP_DATA : SECCOMP_RET_ERRNO | ENOSYS);
	label(b, L_ALLOW);
	emit(b, BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	label(b, L_ENOSYS);
	emit(b, BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS);
	label(b, L_EINVAL);
	emit(b, BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EINVAL);
	label(b, L_PROBE);
	emit(b, BPF_RET | BPF_K, SECCOMP_RET_ERRNO | PROBE_ERRNO);
	return resolve(b);
}

static bool filter_present(int which)
{
	long nr = which == UIPC_FILTER_TRAP ? PROBE_TRAP_NR : PROBE_NOIPC_NR;

	return sys_raw6(nr, 0, 0, 0, 0, 0, 0) == -PROBE_ERRNO;
}

/* ---- the state of trap mode ---- */

typedef int (*mask_fn)(int, const sigset_t *, sigset_t *);
static mask_fn real_pthread_sigmask;   /* libc's, outside trap mode */

/* our filter is installed: SIGSYS is kept out of every mask */
static bool trap_on;
static bool handler_installed;
/* per thread: a SIGSYS sent while the program blocks it (in its view,
 * core/signals.c), held until it unblocks */
static __thread bool t_sys_held;
static __thread siginfo_t t_held_info;

static long raw_sigmask(int how, const uint64_t *set, uint64_t *old)
{
	return sys_pass5(SYS_rt_sigprocmask, how, (long)set, (long)old, 8, 0);
}

static bool sys_blocked(void)
{
	return sig_view_blocked(SIGSYS);
}

/* the held SIGSYS, sent again now that the program unblocked it */
static void release_held(void)
{
	siginfo_t si;

	if (!t_sys_held || sys_blocked())
		return;
	t_sys_held = false;
	si = t_held_info;
	sys_raw6(SYS_rt_tgsigqueueinfo, getpid(), sys_raw6(SYS_gettid, 0, 0, 0, 0, 0, 0), SIGSYS,
		 (long)&si, 0, 0);
}

/* ---- the handler ---- */

#if defined(__x86_64__)
static void get_args(const ucontext_t *uc, struct sys_args *x)
{
	const greg_t *g = uc->uc_mcontext.gregs;

	*x = (struct sys_args){ g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10], g[REG_R8],
				g[REG_R9] };
}

static void set_ret(ucontext_t *uc, long r)
{
	uc->uc_mcontext.gregs[REG_RAX] = r;
}
#elif defined(__aarch64__)
static void get_args(const ucontext_t *uc, struct sys_args *x)
{
	const unsigned long long *g = uc->uc_mcontext.regs;

	*x = (struct sys_args){ (long)g[0], (long)g[1], (long)g[2], (long)g[3], (long)g[4],
				(long)g[5] };
}

static void set_ret(ucontext_t *uc, long r)
{
	uc->uc_mcontext.regs[0] = (unsigned long long)r;
}
#endif

/* SIGSYS, the default action: the kernel's for a seccomp trap too (core) */
static void die_by_sigsys(siginfo_t *si)
{
	struct { void *h; unsigned long flags; void *restorer; uint64_t mask; } dfl = { SIG_DFL,
										 0, NULL, 0 };
	uint64_t unblock = SIGSYS_BIT;

	sys_raw6(SYS_rt_sigaction, SIGSYS, (long)&dfl, 0, 8, 0, 0);
	raw_sigmask(SIG_UNBLOCK, &unblock, NULL);
	sys_raw6(SYS_rt_tgsigqueueinfo, getpid(), sys_raw6(SYS_gettid, 0, 0, 0, 0, 0, 0), SIGSYS,
		 (long)si, 0, 0);
	for (;;)
		sys_raw6(SYS_tgkill, getpid(), sys_raw6(SYS_gettid, 0, 0, 0, 0, 0, 0), SIGSYS, 0, 0,
			 0);
}

/* what the program has for SIGSYS: its handler (with its mask and, unless
 * SA_NODEFER, SIGSYS in its view), or its disposition */
static void chain(siginfo_t *si, ucontext_t *uc)
{
	struct sigaction pa;
	bool fn = sig_program_handler(SIGSYS, &pa);

	/* a trap while the program blocks SIGSYS: the kernel forces the
	 * default action, whatever the handler */
	if (si->si_code == SYS_SECCOMP && trap_on && sys_blocked())
		fn = false;
	if (fn) {
		uint64_t m, old;
		bool was = sys_blocked();

		memcpy(&m, &pa.sa_mask, 8);
		if (!(pa.sa_flags & SA_NODEFER))
			m |= SIGSYS_BIT;
		if (trap_on) {
			sig_view_set(SIGSYS, was || (m & SIGSYS_BIT));
			m &= ~SIGSYS_BIT;
		}
		raw_sigmask(SIG_BLOCK, &m, &old);
		sig_run_program(SIGSYS, si, uc);
		raw_sigmask(SIG_SETMASK, &old, NULL);
		sig_view_set(SIGSYS, was);
		return;
	}
	/* a trap kills whatever the disposition (the kernel resets an
	 * ignored SIGSYS to the default for it); kill() respects SIG_IGN */
	if (si->si_code != SYS_SECCOMP && pa.sa_handler == SIG_IGN)
		return;
	die_by_sigsys(si);
}

static bool in(long nr, const int *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (nr == list[i])
			return true;
	return false;
}

/* a trapped system call uipc answers: true with the result in *RET */
static bool serve(long nr, const struct sys_args *x, bool ours, unsigned hand0, long *ret)
{
	if (nr == PROBE_TRAP_NR || nr == PROBE_NOIPC_NR) {
		/* our probe, trapped by someone else's filter */
		*ret = -ENOSYS;
		return true;
	}
	if (in(nr, ipc_numbers, sizeof(ipc_numbers) / sizeof(ipc_numbers[0])) ||
	    ((nr == SYS_unshare || nr == SYS_clone) && (x->a & CLONE_NEWIPC)))
		return entry_sys_serve(nr, x, hand0, ret);
	/* the pass group is ours to serve only when our filter trapped it:
	 * another filter would trap the pass-through again, for ever */
	if (!ours)
		return false;
	if (in(nr, pass_numbers, sizeof(pass_numbers) / sizeof(pass_numbers[0])))
		return entry_sys_serve(nr, x, hand0, ret);
	return false;
}

static void sigsys_handler(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	int saved = errno;

	(void)sig;
#if TRAP_SUPPORTED
	if (si->si_code == SYS_SECCOMP && si->si_arch == NATIVE_ARCH) {
		unsigned hand0 = uipc_handler_gen();
		struct sys_args x;
		long ret;

		get_args(uc, &x);
		if (si->si_errno == TRAP_DATA && !trap_on) {
			/* our filter, inherited by an image whose environment
			 * lost UIPC_TRAP: trap mode all the same */
			sig_keep_unblocked(SIGSYS);
			sig_on_unblock(release_held);
			ns_recycle_never();
			trap_on = true;
		}
		if (serve(si->si_syscall, &x, si->si_errno == TRAP_DATA, hand0, &ret)) {
			set_ret(uc, ret);
			errno = saved;
			return;
		}
	}
#endif
	if (si->si_code != SYS_SECCOMP && trap_on && sys_blocked()) {
		/* sent by kill() while the program blocks it: held */
		t_held_info = *si;
		t_sys_held = true;
		errno = saved;
		return;
	}
	chain(si, uc);
	errno = saved;
}

/* ---- installing ---- */

static int install_handler(void)
{
	int r;

	if (handler_installed)
		return 0;
	r = sig_own(SIGSYS, sigsys_handler, SA_NODEFER);
	if (r == 0)
		handler_installed = true;
	return r;
}

/* trap mode from now on: SIGSYS out of this thread's mask, the wish kept */
static void trap_start(void)
{
	uint64_t m = SIGSYS_BIT, old = 0;

	if (trap_on)
		return;
	sig_keep_unblocked(SIGSYS);
	sig_on_unblock(release_held);
	/* the program may fork and exec by instruction, unseen: no
	 * namespace of its making is reset in place (core/nsfile.c) */
	ns_recycle_never();
	trap_on = true;
	if (raw_sigmask(SIG_UNBLOCK, &m, &old) == 0 && (old & SIGSYS_BIT))
		sig_view_set(SIGSYS, true);
}

static int load_filter(int which)
{
	struct bpf_build b;
	struct sock_fprog prog;
	long r;

	if (!build_filter(&b, which))
		return -EINVAL;
	prog.len = (unsigned short)b.n;
	prog.filter = b.f;
	for (int tries = 0; tries < 2; tries++) {
		r = sys_raw6(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC,
			     (long)&prog, 0, 0, 0);
		if (r == -ENOSYS || r == -EINVAL)
			r = sys_raw6(SYS_prctl, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, (long)&prog,
				     0, 0, 0);
		if (r > 0)
			return -EBUSY;     /* a thread could not take it (TSYNC) */
		if (r != -EACCES || tries)
			return (int)r;
		/* without CAP_SYS_ADMIN: the kernel wants no_new_privs */
		if (sys_raw6(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0) < 0)
			return (int)r;
	}
	return (int)r;
}

int uipc_filter_install(int which)
{
	int r;

	if (which != UIPC_FILTER_TRAP && which != UIPC_FILTER_NO_KERNEL_IPC)
		return (int)set_errno_ret(-EINVAL);
	if (!TRAP_SUPPORTED)
		return (int)set_errno_ret(-ENOSYS);
	if (filter_present(which)) {
		if (which == UIPC_FILTER_TRAP)
			trap_start();
		return 0;
	}
	if (which == UIPC_FILTER_TRAP) {
		/* the handler first: from the filter on, a trap needs it */
		r = install_handler();
		if (r)
			return (int)set_errno_ret(r);
		trap_start();
	}
	r = load_filter(which);
	return (int)set_errno_ret(r);
}

int uipc_filter_active(void)
{
	if (!TRAP_SUPPORTED)
		return 0;
	return (filter_present(UIPC_FILTER_TRAP) ? UIPC_FILTER_TRAP : 0) |
	       (filter_present(UIPC_FILTER_NO_KERNEL_IPC) ? UIPC_FILTER_NO_KERNEL_IPC : 0);
}

static bool env_on(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0") != 0;
}

static void warn_filter(const char *name, int err)
{
	char msg[256];
	int n = snprintf(msg, sizeof(msg), "libuipc: %s: cannot install the seccomp filter: %s\n",
			 name, strerror(err));

	if (n > 0)
		sys_write(2, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

/*
 * First of the library's constructors (priority 101): in an image exec'd
 * under the filter, a trapped call in another constructor must find the
 * handler.  The probes are
 * made only when asked for in the environment (UIPC_TRAP, and the test
 * mode UIPC_NO_KERNEL_IPC): a system call no kernel has could be fatal
 * under someone else's strict filter.
 */
__attribute__((constructor(101))) static void trap_init(void)
{
	bool want_trap = env_on("UIPC_TRAP"), want_noipc = env_on("UIPC_NO_KERNEL_IPC");

	real_pthread_sigmask = (mask_fn)dlsym(RTLD_NEXT, "pthread_sigmask");
	install_handler();
	if (!TRAP_SUPPORTED)
		return;
	if (want_trap && uipc_filter_install(UIPC_FILTER_TRAP) != 0)
		warn_filter("UIPC_TRAP", errno);
	if (want_noipc && uipc_filter_install(UIPC_FILTER_NO_KERNEL_IPC) != 0)
		warn_filter("UIPC_NO_KERNEL_IPC", errno);
}

/* ---- the masks the program sets: SIGSYS stays unblocked in trap mode ---- */

int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	if (!trap_on) {
		if (!real_pthread_sigmask)   /* a call before the constructor */
			real_pthread_sigmask = (mask_fn)dlsym(RTLD_NEXT, "pthread_sigmask");
		return real_pthread_sigmask ? real_pthread_sigmask(how, set, old) : ENOSYS;
	}
	return uipc_sigmask(how, set, old);
}

int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	int r = pthread_sigmask(how, set, old);

	if (r) {
		errno = r;
		return -1;
	}
	return 0;
}

/* a mask installed for the length of a call: SIGSYS out of it */
static const sigset_t *keep_sigsys(const sigset_t *mask, sigset_t *copy)
{
	if (!trap_on || !mask || !sigismember(mask, SIGSYS))
		return mask;
	*copy = *mask;
	sigdelset(copy, SIGSYS);
	return copy;
}

typedef int (*sigsuspend_fn)(sigset_t *);
typedef int (*ppoll_fn)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
typedef int (*pselect_fn)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
			  const sigset_t *);
typedef int (*epoll_pwait_fn)(int, struct epoll_event *, int, int, const sigset_t *);

int sigsuspend(const sigset_t *mask)
{
	sigset_t c;

	NEXT_FN("sigsuspend", sigsuspend_fn);
	return real_((sigset_t *)keep_sigsys(mask, &c));
}

int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask)
{
	sigset_t c;

	NEXT_FN("ppoll", ppoll_fn);
	return real_(fds, n, tmo, keep_sigsys(mask, &c));
}

int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *tmo,
	    const sigset_t *mask)
{
	sigset_t c;

	NEXT_FN("pselect", pselect_fn);
	return real_(n, r, w, e, tmo, keep_sigsys(mask, &c));
}

int epoll_pwait(int epfd, struct epoll_event *ev, int max, int tmo, const sigset_t *mask)
{
	sigset_t c;

	NEXT_FN("epoll_pwait", epoll_pwait_fn);
	return aio_epoll_pwait(real_, epfd, ev, max, tmo, keep_sigsys(mask, &c));
}

/* a SIGSYS held while the program blocks it is pending, for it */
int sigpending(sigset_t *set)
{
	int r;

	NEXT_FN("sigpending", sigsuspend_fn);
	r = real_(set);
	if (r == 0 && t_sys_held)
		sigaddset(set, SIGSYS);
	return r;
}

/* ---- exec: the program's wish goes to the new image ---- */

int trap_exec_prepare(void)
{
	uint64_t m = SIGSYS_BIT;
	struct sigaction pa;
	int done = 0;

	/* SIG_IGN survives exec (a handler does not): the program's, which
	 * ours stands in for, must reach the new image */
	if (handler_installed && !sig_program_handler(SIGSYS, &pa) && pa.sa_handler == SIG_IGN) {
		struct { void *h; unsigned long flags; void *restorer; uint64_t mask; } ign = {
			SIG_IGN, 0, NULL, 0 };

		if (sys_raw6(SYS_rt_sigaction, SIGSYS, (long)&ign, 0, 8, 0, 0) == 0)
			done |= 2;
	}
	if (trap_on && sys_blocked() && raw_sigmask(SIG_BLOCK, &m, NULL) == 0)
		done |= 1;
	return done;
}

void trap_exec_failed(int prepared)
{
	uint64_t m = SIGSYS_BIT;
	int e = errno;

	if (prepared & 1)
		raw_sigmask(SIG_UNBLOCK, &m, NULL);
	if (prepared & 2) {
		handler_installed = false;
		install_handler();
	}
	errno = e;
}
