/*
 * signals.h - the layer between the program's signal handlers and uipc:
 * fault-tolerant copies (EFAULT instead of a crash, as the kernel's
 * copy_from_user) and EINTR for sleepers that a stop/continue interrupts.
 */
#ifndef UIPC_SIGNALS_H
#define UIPC_SIGNALS_H

#include <stddef.h>

/* 0 on success, -EFAULT if any byte of the source or destination faulted */
__attribute__((visibility("hidden"))) int uipc_copy_from_user(void *dst, const void *src, size_t len);
__attribute__((visibility("hidden"))) int uipc_copy_to_user(void *dst, const void *src, size_t len);

/* around a blocking wait: a stop and continue must interrupt it (EINTR) */
__attribute__((visibility("hidden"))) void uipc_sleep_begin(void);
/* around every uipc critical section: a signal arriving inside one has its
 * handler run at the end of the outermost, as after a system call */
__attribute__((visibility("hidden"))) void uipc_crit_enter(void);
__attribute__((visibility("hidden"))) void uipc_crit_exit(void);
/* in a fork child, for a section entered before the fork (atfork) */
__attribute__((visibility("hidden"))) void uipc_crit_exit_child(void);
/* counts the program's handlers run on this thread: a caller that spins
 * where the kernel would sleep returns EINTR when it changes */
__attribute__((visibility("hidden"))) unsigned uipc_handler_gen(void);
/* counts the continues (SIGCONT) this process went through */
__attribute__((visibility("hidden"))) unsigned uipc_cont_gen(void);

#endif
