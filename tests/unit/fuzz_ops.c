/*
 * fuzz_ops.c - a random sequence of semaphore calls (seeded), for the
 * corrupted-arena test: whatever the namespace holds, the calls may fail
 * but the process must not crash or hang.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/sem.h>
int main(int argc, char **argv)
{
	srand(argc > 1 ? (unsigned)atoi(argv[1]) : 1);
	for (int i = 0; i < 200; i++) {
		int id = rand() % 8;
		struct sembuf op = { (unsigned short)(rand() % 3), (short)(rand() % 3 - 1),
				     (short)(rand() % 2 ? IPC_NOWAIT : IPC_NOWAIT | SEM_UNDO) };
		unsigned short v[8];
		struct semid_ds ds;

		switch (rand() % 7) {
		case 0: semget(0x100 + rand() % 5, 3, IPC_CREAT | 0600); break;
		case 1: semop(id, &op, 1); break;
		case 2: semctl(id, 0, GETALL, v); break;
		case 3: semctl(id, 0, IPC_RMID); break;
		case 4: semctl(id, rand() % 3, SETVAL, rand() % 5); break;
		case 5: semget(IPC_PRIVATE, 1 + rand() % 3, 0600); break;
		case 6: semctl(id, 0, IPC_STAT, &ds); break;
		}
	}
	return 0;
}
