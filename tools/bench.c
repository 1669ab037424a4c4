/*
 * tools/bench.c - `uipc bench [ARGS...]`: run the benchmark driver that `make bench`
 * builds (build/bench/driver, kernel vs uipc) with the library next to the uipc
 * binary, passing ARGS (--quick, --only NAME, ...); otherwise say
 * how to run the benchmarks.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "uipc.h"
#include "cmd.h"

static int exe_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *slash;

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	return 0;
}

static int is_executable(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* exec DIR/bench/driver --bindir DIR/bench --lib DIR/libuipc.so ARGS... */
static int run_driver(const char *dir, int argc, char **argv)
{
	char driver[PATH_MAX + 32], bindir[PATH_MAX + 32], lib[PATH_MAX + 32];
	char **args = calloc((size_t)argc + 6, sizeof(*args));
	int i, n = 0;

	if (!args) {
		warnerr(ENOMEM, "bench");
		return 1;
	}
	snprintf(driver, sizeof(driver), "%s/bench/driver", dir);
	snprintf(bindir, sizeof(bindir), "%s/bench", dir);
	snprintf(lib, sizeof(lib), "%s/libuipc.so", dir);
	args[n++] = driver;
	args[n++] = "--bindir";
	args[n++] = bindir;
	args[n++] = "--lib";
	args[n++] = lib;
	for (i = 1; i < argc; i++)
		args[n++] = argv[i];
	args[n] = NULL;
	fflush(NULL);
	execv(driver, args);
	warnerr(errno, "cannot execute %s", driver);
	free(args);
	return 126;
}

int cmd_bench(int argc, char **argv)
{
	char dir[PATH_MAX], driver[PATH_MAX + 32];

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(help_for("bench"), stdout);
		return 0;
	}
	if (exe_dir(dir, sizeof(dir)) == 0) {
		snprintf(driver, sizeof(driver), "%s/bench/driver", dir);
		if (is_executable(driver))
			return run_driver(dir, argc, argv);
	}
	printf("The benchmark driver is not built (looked for %s).\n"
	       "Run the benchmarks from the top of the source tree with:\n"
	       "    make bench                      (builds them, runs kernel vs uipc)\n"
	       "    make bench BENCH_ARGS=--quick   (short runs)\n"
	       "then `uipc bench [--quick] [--only NAME] ...` runs the driver again.\n",
	       driver);
	return 0;
}
