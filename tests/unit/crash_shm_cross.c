/*
 * crash_shm_cross.c - SIGKILL a process at every journaled store and commit
 * point of a segment's last detach (shmat, IPC_RMID, shmdt: the detach
 * destroys the segment), then let another process attach and detach the
 * segment before anyone takes the shm ids lock, whose section the
 * destroying detach journals into (see shm_account).  The other's shmat
 * takes the segment lock alone: it must find the segment removed, or
 * whole, never count itself into a half-made detach.  Afterwards the
 * segment is gone and the namespace checks clean (nattch equals the
 * attachment records).  crash_shm.c checks what the next locker finds;
 * this checks what a process that takes another lock of the same section
 * may do first (crash_sem_cross.c does the same for semaphores).
 *
 * Run under uipc (the .t sets LD_PRELOAD and a fresh UIPC_DIR).  Prints TAP.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crashkit.h"

static int workload(int s)
{
	char *p = shmat(s, NULL, 0);

	if (p == (char *)-1)
		return 1;
	p[0] = 1;
	if (shmctl(s, IPC_RMID, NULL) < 0)
		return 2;
	return shmdt(p) < 0 ? 3 : 0;
}

/* right after the death, and before any call that takes the ids lock: an
 * attach (the segment lock alone), then the detach that is the last */
static void attach_after(int s)
{
	char *q = shmat(s, NULL, 0);

	/* marked for removal already, or now (the victim died before its
	 * IPC_RMID), so that our detach is the last either way */
	shmctl(s, IPC_RMID, NULL);
	if (q != (char *)-1)
		shmdt(q);
}

int main(int argc, char **argv)
{
	int done = 0;

	if (argc == 3 && !strcmp(argv[1], "victim"))
		return workload(atoi(argv[2]));
	for (int n = 2; n < 100000 && !done; n++) {
		char sa[16], why[200];
		struct shmid_ds ds;
		int s = shmget(IPC_PRIVATE, 4096, 0600), st = -1;
		pid_t c;

		if (s < 0) {
			check(0, "set-up: shmget failed", n);
			break;
		}
		snprintf(sa, sizeof sa, "%d", s);
		c = fork();
		if (c == 0) {
			ck_arm(n);
			execl("/proc/self/exe", "crash_shm_cross", "victim", sa, (char *)NULL);
			_exit(127);
		}
		waitpid(c, &st, 0);
		done = ck_outcome(st, &n);
		attach_after(s);
		if (shmctl(s, IPC_STAT, &ds) == 0) {
			snprintf(why, sizeof why, "segment %d still there after its last detach: nattch %lu mode %#o",
				 s, (unsigned long)ds.shm_nattch, (unsigned)ds.shm_perm.mode);
			check(0, why, n);
		} else {
			check(errno == EINVAL || errno == EIDRM, "IPC_STAT of the gone segment: not EINVAL", n);
		}
		check_namespace(n);
	}
	check(done, "the victim's workload never ran to its end", 0);
	return report();
}
