/*
 * tools/fsck.c - `uipc fsck`: check a namespace's consistency (allocator,
 * id tables, key hash, each object's invariants under its lock) through
 * uipc_ns_check() and report what it found.
 * Opening the namespace's locks on the way also recovers any lock a killed
 * process left held (its half-done change is rolled back).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>

#include "uipc.h"
#include "cmd.h"

int cmd_fsck(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "ns", required_argument, NULL, OPT_NS },
		{ "dir", required_argument, NULL, OPT_DIR },
		{ NULL, 0, NULL, 0 },
	};
	char report[16384];
	char path[4096];
	int c, bad;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_NS: set_ns_option(optarg); break;
		case OPT_DIR: set_dir_option(optarg); break;
		case 'h':
			fputs(help_for("fsck"), stdout);
			return 0;
		default:
			return try_help(EXIT_USAGE);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (use_namespace() != 0 || require_existing_namespace() != 0)
		return 1;
	report[0] = '\0';
	bad = uipc_ns_check(report, sizeof(report));
	if (uipc_ns_path(NULL, path, sizeof(path)) != 0)
		snprintf(path, sizeof(path), "?");
	if (bad < 0) {
		warnerr(errno, "cannot check %s", path);
		return 1;
	}
	printf("%s: %d problem%s found\n%s", path, bad, bad == 1 ? "" : "s", report);
	return bad ? 1 : 0;
}
