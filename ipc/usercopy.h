/*
 * usercopy.h - copies between the caller's buffers and uipc that turn a bad
 * pointer into EFAULT instead of a crash, as the kernel's copy_from_user does.
 */
#ifndef UIPC_USERCOPY_H
#define UIPC_USERCOPY_H

#include <stddef.h>

/* 0 on success, -EFAULT if any byte of the source or destination faulted */
__attribute__((visibility("hidden"))) int uipc_copy_from_user(void *dst, const void *src, size_t len);
__attribute__((visibility("hidden"))) int uipc_copy_to_user(void *dst, const void *src, size_t len);

#endif
