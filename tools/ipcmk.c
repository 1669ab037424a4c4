/*
 * tools/ipcmk.c - `uipc ipcmk`: create IPC objects in a uipc namespace with
 * util-linux ipcmk's options and messages (-M SIZE, -S N, -Q, -p MODE; keys
 * are random as in ipcmk unless -k KEY is given).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "uipc.h"
#include "cmd.h"

struct ipcmk_req {
	int shm, msg, sem;
	unsigned long long size;
	int nsems;
	unsigned int mode;
	int have_key;
	key_t key;
};

static key_t random_key(void)
{
	key_t key;

	if (getrandom(&key, sizeof(key), GRND_NONBLOCK) != (ssize_t)sizeof(key))
		key = (key_t)(getpid() ^ time(NULL) ^ (rand() << 8));
	return key;
}

static key_t req_key(const struct ipcmk_req *r)
{
	return r->have_key ? r->key : random_key();
}

static int create(const struct ipcmk_req *r)
{
	int id, flags = (int)r->mode | IPC_CREAT;

	if (r->shm) {
		id = uipc_shmget(req_key(r), (size_t)r->size, flags);
		if (id == -1) {
			warnerr(errno, "create share memory failed");
			return 1;
		}
		printf("Shared memory id: %d\n", id);
	}
	if (r->msg) {
		id = uipc_msgget(req_key(r), flags);
		if (id == -1) {
			warnerr(errno, "create message queue failed");
			return 1;
		}
		printf("Message queue id: %d\n", id);
	}
	if (r->sem) {
		id = uipc_semget(req_key(r), r->nsems, flags);
		if (id == -1) {
			warnerr(errno, "create semaphore failed");
			return 1;
		}
		printf("Semaphore id: %d\n", id);
	}
	return 0;
}

int cmd_ipcmk(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "shmem", required_argument, NULL, 'M' },
		{ "semaphore", required_argument, NULL, 'S' },
		{ "queue", no_argument, NULL, 'Q' },
		{ "mode", required_argument, NULL, 'p' },
		{ "key", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ "ns", required_argument, NULL, OPT_NS },
		{ "dir", required_argument, NULL, OPT_DIR },
		{ NULL, 0, NULL, 0 },
	};
	struct ipcmk_req r = { .mode = 0644 };
	long long n;
	int c;

	while ((c = getopt_long(argc, argv, "hM:QS:p:k:", longopts, NULL)) != -1) {
		switch (c) {
		case 'M':
			if (parse_size(optarg, &r.size) != 0) {
				warnmsg("failed to parse size: '%s'", optarg);
				return 1;
			}
			r.shm = 1;
			break;
		case 'Q':
			r.msg = 1;
			break;
		case 'S':
			if (parse_int(optarg, 10, INT_MIN, INT_MAX, &n) != 0) {
				warnmsg("failed to parse elements: '%s'", optarg);
				return 1;
			}
			r.nsems = (int)n;
			r.sem = 1;
			break;
		case 'p':
			if (parse_mode(optarg, &r.mode) != 0) {
				warnmsg("failed to parse mode: '%s'", optarg);
				return 1;
			}
			break;
		case 'k':
			if (parse_key(optarg, &r.key) != 0) {
				warnmsg("failed to parse key: '%s'", optarg);
				return 1;
			}
			r.have_key = 1;
			break;
		case OPT_NS:
			set_ns_option(optarg);
			break;
		case OPT_DIR:
			set_dir_option(optarg);
			break;
		case 'h':
			fputs(help_for("ipcmk"), stdout);
			return 0;
		default:
			return try_help(1);
		}
	}
	if (optind < argc) {
		warnmsg("unknown argument: %s", argv[optind]);
		return try_help(1);
	}
	if (!r.shm && !r.msg && !r.sem) {
		warnmsg("bad usage");
		return try_help(1);
	}
	if (use_namespace() != 0)
		return 1;
	return create(&r);
}
