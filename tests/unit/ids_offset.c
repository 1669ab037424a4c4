/*
 * ids_offset.c - prints where the semaphore id table's in_use count (in its
 * header, struct ipc_ids) sits in a namespace file, for tests that damage
 * it on purpose.
 */
#include <stddef.h>
#include <stdio.h>

#include "../../core/layout.h"

int main(void)
{
	printf("%zu\n", offsetof(struct uipc_hdr, ids) + offsetof(struct ipc_ids, in_use));
	return 0;
}
