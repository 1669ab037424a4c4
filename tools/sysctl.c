/*
 * tools/sysctl.c - `uipc sysctl`: show or set a namespace's IPC sysctls
 * (kernel.sem, kernel.msgmax, ...) and native AIO's (fs.aio-max-nr, the
 * read-only fs.aio-nr) through uipc_sysctl_get/set, printed as
 * sysctl(8) prints them ("name = value", or the value alone with -n).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "uipc.h"
#include "cmd.h"

static const char *const known[] = {
	"kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.msg_next_id",
	"kernel.sem", "kernel.sem_next_id",
	"kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.shm_next_id",
	"kernel.shm_rmid_forced",
	"fs.aio-max-nr", "fs.aio-nr",
};

/* "kernel/sem" -> "kernel.sem", as sysctl(8) accepts both. */
static void normalize(const char *in, char *out, size_t len)
{
	size_t i;

	for (i = 0; in[i] && i + 1 < len; i++)
		out[i] = in[i] == '/' ? '.' : in[i];
	out[i] = '\0';
}

static int show(const char *name, int value_only)
{
	char buf[256];

	if (uipc_sysctl_get(name, buf, sizeof(buf)) != 0) {
		if (errno == ENOENT || errno == EINVAL)
			warnmsg("cannot read '%s': unknown name", name);
		else
			warnerr(errno, "cannot read '%s'", name);
		return 1;
	}
	if (value_only)
		printf("%s\n", buf);
	else
		printf("%s = %s\n", name, buf);
	return 0;
}

static int set(char *arg, int value_only)
{
	char name[128];
	char *eq = strchr(arg, '=');
	const char *value = eq + 1;

	*eq = '\0';
	normalize(arg, name, sizeof(name));
	/* sysctl(8) trims spaces around '=' */
	while (strlen(name) && name[strlen(name) - 1] == ' ')
		name[strlen(name) - 1] = '\0';
	while (*value == ' ')
		value++;
	if (uipc_sysctl_set(name, value) != 0) {
		warnerr(errno, "cannot set '%s' to '%s'", name, value);
		return 1;
	}
	return show(name, value_only);
}

int cmd_sysctl(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "values", no_argument, NULL, 'n' },
		{ "all", no_argument, NULL, 'a' },
		{ "write", no_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ "ns", required_argument, NULL, OPT_NS },
		{ "dir", required_argument, NULL, OPT_DIR },
		{ NULL, 0, NULL, 0 },
	};
	char name[128];
	int c, i, value_only = 0, all = 0, status = 0;

	while ((c = getopt_long(argc, argv, "nawh", longopts, NULL)) != -1) {
		switch (c) {
		case 'n': value_only = 1; break;
		case 'a': all = 1; break;
		case 'w': break;
		case OPT_NS: set_ns_option(optarg); break;
		case OPT_DIR: set_dir_option(optarg); break;
		case 'h':
			fputs(help_for("sysctl"), stdout);
			return 0;
		default:
			return try_help(EXIT_USAGE);
		}
	}
	if (!all && optind >= argc)
		return usage_error("no NAME given");
	if (use_namespace() != 0)
		return 1;
	for (i = optind; i < argc && !strchr(argv[i], '='); i++)
		;
	if (i == argc && require_existing_namespace() != 0)	/* only reading */
		return 1;
	if (all)
		for (i = 0; i < (int)(sizeof(known) / sizeof(known[0])); i++)
			status |= show(known[i], value_only);
	for (i = optind; i < argc; i++) {
		if (strchr(argv[i], '=')) {
			status |= set(argv[i], value_only);
		} else {
			normalize(argv[i], name, sizeof(name));
			status |= show(name, value_only);
		}
	}
	return status;
}
