/*
 * aio/ring.h - the completion ring as programs see it: an ABI.
 *
 * io_setup's context id is the address of this ring.  libaio's
 * io_getevents and fio's userspace_reap check magic, compare head with
 * tail and read io_events[head] without a system call, then store head
 * themselves; so the layout below is fixed to the byte (the kernel's
 * struct aio_ring, uapi struct io_event).  uipc writes events at tail and
 * publishes tail with a release store; readers, uipc's io_getevents or
 * the program, consume from head.
 */
#ifndef UIPC_AIO_RING_H
#define UIPC_AIO_RING_H

#include <stddef.h>
#include <stdint.h>
#include <linux/aio_abi.h>

#define AIO_RING_MAGIC           0xa10a10a1u
#define AIO_RING_COMPAT_FEATURES 1u
#define AIO_RING_INCOMPAT_FEATURES 0u

struct aio_ring {
	uint32_t id;                 /* slot in the process's context table */
	uint32_t nr;                 /* number of io_events */
	uint32_t head;               /* next event to read (readers store it) */
	uint32_t tail;               /* next event to write (uipc stores it) */
	uint32_t magic;
	uint32_t compat_features;
	uint32_t incompat_features;
	uint32_t header_length;      /* sizeof(struct aio_ring) */
	struct io_event io_events[];
};

_Static_assert(sizeof(struct io_event) == 32, "io_event is 32 bytes");
_Static_assert(offsetof(struct io_event, data) == 0, "io_event.data");
_Static_assert(offsetof(struct io_event, obj) == 8, "io_event.obj");
_Static_assert(offsetof(struct io_event, res) == 16, "io_event.res");
_Static_assert(offsetof(struct io_event, res2) == 24, "io_event.res2");
_Static_assert(sizeof(struct aio_ring) == 32, "aio_ring header is 32 bytes");
_Static_assert(offsetof(struct aio_ring, id) == 0, "aio_ring.id");
_Static_assert(offsetof(struct aio_ring, nr) == 4, "aio_ring.nr");
_Static_assert(offsetof(struct aio_ring, head) == 8, "aio_ring.head");
_Static_assert(offsetof(struct aio_ring, tail) == 12, "aio_ring.tail");
_Static_assert(offsetof(struct aio_ring, magic) == 16, "aio_ring.magic");
_Static_assert(offsetof(struct aio_ring, header_length) == 28, "aio_ring.header_length");
_Static_assert(offsetof(struct aio_ring, io_events) == 32, "events follow the header");
_Static_assert(sizeof(struct iocb) == 64, "iocb is 64 bytes");

#endif /* UIPC_AIO_RING_H */
