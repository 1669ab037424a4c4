/*
 * tools/ipcs.c - `uipc ipcs`: options and dispatch, and the printing helpers
 * shared by the three resources.  The output reproduces util-linux ipcs
 * (2.38) byte for byte; the data comes from the uipc_* calls the way ipcs
 * gets it from the kernel: *_INFO for the highest index, then *_STAT_ANY (or
 * *_STAT) for every index, and IPC_INFO for the limits.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>

#include "uipc.h"
#include "cmd.h"
#include "ipcs.h"

void ipcs_print_id_owner(int idwidth, int id, uid_t uid)
{
	struct passwd *pw = getpwuid(uid);

	if (pw)
		printf("%-*d %-10.10s", idwidth, id, pw->pw_name);
	else
		printf("%-*d %-10u", idwidth, id, (unsigned)uid);
}

static void print_user(uid_t uid, const char *end)
{
	struct passwd *pw = getpwuid(uid);

	if (pw)
		printf(" %-10s%s", pw->pw_name, end);
	else
		printf(" %-10u%s", (unsigned)uid, end);
}

static void print_group(gid_t gid, const char *end)
{
	struct group *gr = getgrgid(gid);

	if (gr)
		printf(" %-10s%s", gr->gr_name, end);
	else
		printf(" %-10u%s", (unsigned)gid, end);
}

void ipcs_print_creator(int id, const struct ipc_perm *p)
{
	printf("%-10d %-10o", id, p->mode & 0777);
	print_user(p->cuid, "");
	print_group(p->cgid, "");
	print_user(p->uid, "");
	print_group(p->gid, "\n");
}

const char *ipcs_time(time_t t, char *buf)
{
	if (!t || !ctime_r(&t, buf))
		return "Not set";
	return buf;
}

const char *ipcs_time_short(time_t t, char *buf)
{
	if (!t || !ctime_r(&t, buf))
		return "Not set";
	return buf + 4;
}

/* util-linux size_to_human_string(SIZE_SUFFIX_1LETTER): "4.9K", "16E", "0B". */
static void human_size(uint64_t bytes, char *buf, size_t len)
{
	static const char letters[] = "BKMGTPE";
	uint64_t whole, frac = 0;
	int exp = 0;

	while (exp < 60 && bytes >= (UINT64_C(1) << (exp + 10)))
		exp += 10;
	whole = exp ? bytes >> exp : bytes;
	if (exp)
		frac = bytes & ((UINT64_C(1) << exp) - 1);
	if (frac) {
		if (frac >= UINT64_MAX / 1000)
			frac = ((frac / 1024) * 1000) >> (exp - 10);
		else
			frac = (frac * 1000) >> exp;
		frac = (frac + 50) / 100;	/* one decimal, rounded */
		if (frac >= 10) {
			frac = 0;
			whole++;
		}
	}
	if (frac)
		snprintf(buf, len, "%" PRIu64 ".%" PRIu64 "%c", whole, frac,
			 letters[exp / 10]);
	else
		snprintf(buf, len, "%" PRIu64 "%c", whole, letters[exp / 10]);
}

void ipcs_print_size(enum ipcs_unit unit, const char *label, uint64_t size,
		     const char *end, int width)
{
	char human[32];

	if (!label)
		;
	else if (*label && label[strlen(label) - 1] == '=')
		fputs(label, stdout);
	else if (unit == UNIT_BYTES)
		printf("%s (bytes) = ", label);
	else if (unit == UNIT_KB)
		printf("%s (kbytes) = ", label);
	else
		printf("%s = ", label);

	switch (unit) {
	case UNIT_KB:
		printf("%*" PRIu64, width, size / 1024);
		break;
	case UNIT_HUMAN:
		human_size(size, human, sizeof(human));
		printf("%*s", width, human);
		break;
	default:
		printf("%*" PRIu64, width, size);
		break;
	}
	if (end)
		fputs(end, stdout);
}

void ipcs_report(const char *what, int err)
{
	if (err == ENOSYS)
		warnmsg("%s: not implemented by libuipc yet (ENOSYS)", what);
	else
		warnerr(err, "%s", what);
}

int cmd_ipcs(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "id", required_argument, NULL, 'i' },
		{ "queues", no_argument, NULL, 'q' },
		{ "shmems", no_argument, NULL, 'm' },
		{ "semaphores", no_argument, NULL, 's' },
		{ "all", no_argument, NULL, 'a' },
		{ "time", no_argument, NULL, 't' },
		{ "pid", no_argument, NULL, 'p' },
		{ "creator", no_argument, NULL, 'c' },
		{ "limits", no_argument, NULL, 'l' },
		{ "summary", no_argument, NULL, 'u' },
		{ "human", no_argument, NULL, OPT_HUMAN },
		{ "bytes", no_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ "ns", required_argument, NULL, OPT_NS },
		{ "dir", required_argument, NULL, OPT_DIR },
		{ NULL, 0, NULL, 0 },
	};
	enum ipcs_format fmt = FMT_DEFAULT;
	enum ipcs_unit unit = UNIT_DEFAULT;
	int c, msg = 0, shm = 0, sem = 0, specific = 0, status = 0;
	long long id = 0;

	while ((c = getopt_long(argc, argv, "i:qmsatpclubh", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			if (parse_int(optarg, 10, INT32_MIN, INT32_MAX, &id) != 0) {
				warnmsg("failed to parse id argument: '%s'", optarg);
				return 1;
			}
			specific = 1;
			break;
		case 'a': msg = shm = sem = 1; break;
		case 'q': msg = 1; break;
		case 'm': shm = 1; break;
		case 's': sem = 1; break;
		case 't': fmt = FMT_TIME; break;
		case 'c': fmt = FMT_CREATOR; break;
		case 'p': fmt = FMT_PID; break;
		case 'l': fmt = FMT_LIMITS; break;
		case 'u': fmt = FMT_STATUS; break;
		case OPT_HUMAN: unit = UNIT_HUMAN; break;
		case 'b': unit = UNIT_BYTES; break;
		case OPT_NS: set_ns_option(optarg); break;
		case OPT_DIR: set_dir_option(optarg); break;
		case 'h':
			fputs(help_for("ipcs"), stdout);
			return 0;
		default:
			return try_help(1);
		}
	}
	if (optind < argc) {
		warnmsg("unknown argument: %s", argv[optind]);
		return try_help(1);
	}
	if (specific && msg + shm + sem != 1) {
		warnmsg("when using an ID, a single resource must be specified");
		return 1;
	}
	if (use_namespace() != 0 || require_existing_namespace() != 0)
		return 1;

	if (specific) {
		if (msg)
			status = ipcs_msg_show((int)id, unit);
		if (shm)
			status = ipcs_shm_show((int)id, unit);
		if (sem)
			status = ipcs_sem_show((int)id);
		return status;
	}
	if (!msg && !shm && !sem)
		msg = shm = sem = 1;
	printf("\n");
	if (msg) {
		ipcs_msg_list(fmt, unit);
		printf("\n");
	}
	if (shm) {
		ipcs_shm_list(fmt, unit);
		printf("\n");
	}
	if (sem) {
		ipcs_sem_list(fmt);
		printf("\n");
	}
	return 0;
}
