/*
 * aio_many.c - a process that needs more AIO context events than the
 * default fs.aio-max-nr (65536) allows:
 *
 *     aio_many TOTAL EACH
 *
 * io_setup(EACH) until TOTAL events are held, then a write and a read
 * (tmpfs) through the last context; prints what it got and
 * /proc/sys/fs/aio-nr as it sees it.  Exit 0 when every context was made
 * and the I/O worked, 1 otherwise (tests/unit-aio-max-nr.t).
 */
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int io_works(io_context_t ctx)
{
	char path[] = "/dev/shm/uipc-aiomany.XXXXXX", buf[8] = "aio-many", back[8];
	struct iocb cb, *p = &cb;
	struct io_event ev;
	int fd = mkstemp(path), ok;

	if (fd < 0)
		return 0;
	unlink(path);
	io_prep_pwrite(&cb, fd, buf, sizeof buf, 0);
	ok = io_submit(ctx, 1, &p) == 1 && io_getevents(ctx, 1, 1, &ev, NULL) == 1 &&
	     ev.res == sizeof buf;
	io_prep_pread(&cb, fd, back, sizeof back, 0);
	ok = ok && io_submit(ctx, 1, &p) == 1 && io_getevents(ctx, 1, 1, &ev, NULL) == 1 &&
	     ev.res == sizeof back && !memcmp(buf, back, sizeof buf);
	close(fd);
	return ok;
}

int main(int argc, char **argv)
{
	long total = argc > 2 ? atol(argv[1]) : 70000, each = argc > 2 ? atol(argv[2]) : 10000;
	io_context_t ctx = 0;
	long held = 0;
	char nr[64] = "?";
	FILE *f;

	while (held < total) {
		int r;

		ctx = 0;
		r = io_setup((int)each, &ctx);
		if (r) {
			printf("io_setup(%ld) with %ld events held: %s\n", each, held, strerror(-r));
			return 1;
		}
		held += each;
	}
	f = fopen("/proc/sys/fs/aio-nr", "r");
	if (f && fgets(nr, sizeof nr, f))
		nr[strcspn(nr, "\n")] = 0;
	if (f)
		fclose(f);
	printf("%ld events held in %ld contexts; /proc/sys/fs/aio-nr = %s\n", held, held / each, nr);
	if (!io_works(ctx)) {
		printf("I/O through the last context failed\n");
		return 1;
	}
	printf("I/O through the last context works\n");
	return 0;
}
