/*
 * tools/ipcrm.c - `uipc ipcrm`: remove IPC objects of a uipc namespace with
 * util-linux ipcrm's options, messages and exit status (-s/-q/-m ID,
 * -S/-Q/-M KEY, -a[=shm|msg|sem], -v, and the old `shm|msg|sem ID...` form).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uipc.h"
#include "cmd.h"

enum kind { SHM, SEM, MSG, ALL };

static int verbose;

static const char *const kind_word[] = { "shared memory", "semaphores", "message queues" };

/* Open the namespace on first use (not before the options are known to be
 * good); a namespace that does not exist ends the program. */
static void need_namespace(void)
{
	static int done;

	if (!done && (use_namespace() != 0 || require_existing_namespace() != 0))
		exit(1);
	done = 1;
}

static int rmid(enum kind kind, int id)
{
	union semun arg = { .val = 0 };

	need_namespace();
	switch (kind) {
	case SHM:
		if (verbose)
			printf("removing shared memory segment id `%d'\n", id);
		return uipc_shmctl(id, IPC_RMID, NULL);
	case MSG:
		if (verbose)
			printf("removing message queue id `%d'\n", id);
		return uipc_msgctl(id, IPC_RMID, NULL);
	default:
		if (verbose)
			printf("removing semaphore id `%d'\n", id);
		return uipc_semctl(id, 0, IPC_RMID, arg);
	}
}

/* Remove one object; 0 on success, 1 (after a message) on failure.  Errors
 * other than the expected ones end the program, as in ipcrm. */
static int remove_id(enum kind kind, int iskey, int id)
{
	const char *msg;

	if (rmid(kind, id) == 0)
		return 0;
	switch (errno) {
	case EACCES:
	case EPERM:
		msg = iskey ? "permission denied for key" : "permission denied for id";
		break;
	case EINVAL:
		msg = iskey ? "invalid key" : "invalid id";
		break;
	case EIDRM:
		msg = iskey ? "already removed key" : "already removed id";
		break;
	default:
		warnerr(errno, "%s", iskey ? "key failed" : "id failed");
		exit(1);
	}
	warnmsg("%s (%d)", msg, id);
	return 1;
}

/* The id of the object with key s, or -1 after a message. */
static int key_to_id(enum kind kind, const char *s)
{
	key_t key;
	int id;

	if (parse_key(s, &key) != 0) {
		warnmsg("failed to parse argument: '%s'", s);
		exit(1);
	}
	if (key == IPC_PRIVATE) {
		warnmsg("illegal key (%s)", s);
		return -1;
	}
	need_namespace();
	if (kind == SHM)
		id = uipc_shmget(key, 0, 0);
	else if (kind == MSG)
		id = uipc_msgget(key, 0);
	else
		id = uipc_semget(key, 0, 0);
	if (id >= 0)
		return id;
	switch (errno) {
	case EACCES:
		warnmsg("permission denied for key (%s)", s);
		break;
	case EIDRM:
		warnmsg("already removed key (%s)", s);
		break;
	case ENOENT:
		warnmsg("invalid key (%s)", s);
		break;
	default:
		warnerr(errno, "key failed");
		exit(1);
	}
	return -1;
}

/* Highest index in use, or -1 with errno set. */
static int max_index(enum kind kind)
{
	union semun arg;
	struct seminfo si;
	struct shm_info shi;
	struct msginfo mi;

	if (kind == SHM)
		return uipc_shmctl(0, SHM_INFO, (struct shmid_ds *)(void *)&shi);
	if (kind == MSG)
		return uipc_msgctl(0, MSG_INFO, (struct msqid_ds *)(void *)&mi);
	arg.__buf = &si;
	return uipc_semctl(0, 0, SEM_INFO, arg);
}

/* *_STAT (as ipcrm uses: objects the caller can read) of index idx. */
static int stat_index(enum kind kind, int idx)
{
	struct semid_ds sds;
	struct shmid_ds shds;
	struct msqid_ds mds;
	union semun arg = { .buf = &sds };

	if (kind == SHM)
		return uipc_shmctl(idx, SHM_STAT, &shds);
	if (kind == MSG)
		return uipc_msgctl(idx, MSG_STAT, &mds);
	return uipc_semctl(idx, 0, SEM_STAT, arg);
}

static int remove_all_of(enum kind kind, int explicit)
{
	int idx, id, maxidx, ret = 0;

	need_namespace();
	maxidx = max_index(kind);
	if (maxidx < 0) {
		if (errno == ENOSYS && !explicit) {
			warnmsg("%s: not implemented by libuipc yet (ENOSYS), skipped",
				kind_word[kind]);
			return 0;
		}
		warnerr(errno, "cannot list %s", kind_word[kind]);
		exit(1);
	}
	for (idx = 0; idx <= maxidx; idx++) {
		id = stat_index(kind, idx);
		if (id >= 0)
			ret |= remove_id(kind, 0, id);
	}
	return ret;
}

static int remove_all(enum kind what)
{
	int ret = 0;

	if (what == SHM || what == ALL)
		ret |= remove_all_of(SHM, what == SHM);
	if (what == SEM || what == ALL)
		ret |= remove_all_of(SEM, what == SEM);
	if (what == MSG || what == ALL)
		ret |= remove_all_of(MSG, what == MSG);
	return ret;
}

/* The old form: ipcrm shm|msg|sem ID... */
static int old_form(enum kind kind, int argc, char **argv)
{
	int i, errors = 0;
	long long id;

	if (argc < 3) {
		warnmsg("not enough arguments");
		return try_help(1);
	}
	for (i = 2; i < argc; i++) {
		if (parse_int(argv[i], 10, 0, UINT_MAX, &id) != 0) {
			warnmsg("invalid id: %s", argv[i]);
			errors++;
		} else if (remove_id(kind, 0, (int)(unsigned int)id)) {
			errors++;
		}
	}
	if (errors)
		return 1;
	printf("resource(s) deleted\n");
	return 0;
}

/* Take --ns/--dir out of argv wherever they are (the old form has no options). */
static int strip_ns_options(int *argc, char **argv)
{
	int i, j = 1;

	for (i = 1; i < *argc; i++) {
		const char *a = argv[i];

		if ((!strcmp(a, "--ns") || !strcmp(a, "--dir")) && i + 1 < *argc) {
			(a[2] == 'n' ? set_ns_option : set_dir_option)(argv[i + 1]);
			i++;
		} else if (!strncmp(a, "--ns=", 5)) {
			set_ns_option(a + 5);
		} else if (!strncmp(a, "--dir=", 6)) {
			set_dir_option(a + 6);
		} else if (!strcmp(a, "--ns") || !strcmp(a, "--dir")) {
			return usage_error("option '%s' requires an argument", a);
		} else {
			argv[j++] = argv[i];
		}
	}
	*argc = j;
	argv[j] = NULL;
	return 0;
}

static int parse_id(const char *s)
{
	long long v;

	if (parse_int(s, 10, INT_MIN, INT_MAX, &v) != 0) {
		warnmsg("failed to parse argument: '%s'", s);
		exit(1);
	}
	return (int)v;
}

static int parse_all(const char *arg, enum kind *what)
{
	if (!arg)
		*what = ALL;
	else if (!strcmp(arg, "shm"))
		*what = SHM;
	else if (!strcmp(arg, "msg"))
		*what = MSG;
	else if (!strcmp(arg, "sem"))
		*what = SEM;
	else
		return -1;
	return 0;
}

int cmd_ipcrm(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "shmem-id", required_argument, NULL, 'm' },
		{ "shmem-key", required_argument, NULL, 'M' },
		{ "queue-id", required_argument, NULL, 'q' },
		{ "queue-key", required_argument, NULL, 'Q' },
		{ "semaphore-id", required_argument, NULL, 's' },
		{ "semaphore-key", required_argument, NULL, 'S' },
		{ "all", optional_argument, NULL, 'a' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum kind what = ALL, kind;
	int c, ret = 0, rm_all = 0, id;

	if (strip_ns_options(&argc, argv) != 0)
		return EXIT_USAGE;
	if (argc == 1)		/* ipcrm without arguments does nothing */
		return 0;
	if (!strcmp(argv[1], "shm"))
		return old_form(SHM, argc, argv);
	if (!strcmp(argv[1], "msg"))
		return old_form(MSG, argc, argv);
	if (!strcmp(argv[1], "sem"))
		return old_form(SEM, argc, argv);

	while ((c = getopt_long(argc, argv, "q:m:s:Q:M:S:a::vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'M': case 'Q': case 'S':
			kind = c == 'M' ? SHM : c == 'Q' ? MSG : SEM;
			id = key_to_id(kind, optarg);
			if (id < 0 || remove_id(kind, 1, id))
				ret++;
			break;
		case 'm': case 'q': case 's':
			kind = c == 'm' ? SHM : c == 'q' ? MSG : SEM;
			if (remove_id(kind, 0, parse_id(optarg)))
				ret++;
			break;
		case 'a':
			rm_all = 1;
			if (parse_all(optarg, &what) != 0) {
				warnmsg("unknown argument: %s", optarg);
				return 1;
			}
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			fputs(help_for("ipcrm"), stdout);
			return 0;
		default:
			return try_help(1);
		}
	}
	if (rm_all && remove_all(what))
		ret++;
	if (optind < argc) {
		warnmsg("unknown argument: %s", argv[optind]);
		return try_help(1);
	}
	return ret == 0 ? 0 : 1;
}
