/*
 * ids_offset.c - prints where a field of a namespace file's header sits,
 * for tests that damage the file on purpose: without an argument the
 * semaphore id table's in_use count (in its header, struct ipc_ids); with
 * heap_start, procs or threads, that field of struct uipc_hdr (the offset
 * of the heap, of the process table, of the thread table); with owner_nuid,
 * the number of uid map extents of the owner user namespace.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../../core/layout.h"

int main(int argc, char **argv)
{
	const char *f = argc > 1 ? argv[1] : "";

	if (!strcmp(f, "heap_start"))
		printf("%zu\n", offsetof(struct uipc_hdr, heap_start));
	else if (!strcmp(f, "procs"))
		printf("%zu\n", offsetof(struct uipc_hdr, procs));
	else if (!strcmp(f, "threads"))
		printf("%zu\n", offsetof(struct uipc_hdr, threads));
	else if (!strcmp(f, "owner_nuid"))
		printf("%zu\n", offsetof(struct uipc_hdr, owner) + offsetof(struct owner_userns, nuid));
	else if (!*f)
		printf("%zu\n", offsetof(struct uipc_hdr, ids) + offsetof(struct ipc_ids, in_use));
	else
		return 2;
	return 0;
}
