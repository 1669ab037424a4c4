/*
 * tools/common.c - helpers shared by the subcommands of `uipc`: messages on
 * stderr (with a clear note for calls the library does not implement yet),
 * number / key / size / mode parsing, and the --ns / --dir namespace choice.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "uipc.h"
#include "cmd.h"

const char *cmd_name = "uipc";
const char *global_ns;
const char *global_dir;

static void vmsg(int err, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", cmd_name);
	vfprintf(stderr, fmt, ap);
	if (err)
		fprintf(stderr, ": %s", strerror(err));
	fputc('\n', stderr);
	if (err == ENOSYS)
		fprintf(stderr, "%s: (this call is not implemented by libuipc yet)\n",
			cmd_name);
}

void warnmsg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(0, fmt, ap);
	va_end(ap);
}

void warnerr(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(err, fmt, ap);
	va_end(ap);
}

int usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(0, fmt, ap);
	va_end(ap);
	return try_help(EXIT_USAGE);
}

int try_help(int status)
{
	const char *sub = strchr(cmd_name, ' ');
	size_t n = sub ? strcspn(sub + 1, " ") : 0;

	fprintf(stderr, "Try 'uipc help%s%.*s' for more information.\n",
		sub ? " " : "", (int)n, sub ? sub + 1 : "");
	return status;
}

/* ---- namespace selection ---- */

void set_ns_option(const char *name)
{
	global_ns = name;
}

void set_dir_option(const char *dir)
{
	global_dir = dir;
}

const char *current_ns_name(void)
{
	const char *ns = global_ns;

	if (!ns)
		ns = getenv("UIPC_NS");
	return ns && *ns ? ns : "default";
}

int use_namespace(void)
{
	char path[PATH_MAX];

	if (global_dir && setenv("UIPC_DIR", global_dir, 1) != 0) {
		warnerr(errno, "cannot set UIPC_DIR");
		return -1;
	}
	if (!global_ns) {
		/* the library chose its file from the environment at start: with
		 * --dir alone, choose again in the new directory */
		if (global_dir && uipc_ns_select(current_ns_name()) != 0) {
			warnerr(errno, "cannot select namespace '%s'", current_ns_name());
			return -1;
		}
		return 0;
	}
	if (uipc_ns_path(global_ns, path, sizeof(path)) != 0) {
		warnerr(errno, "invalid namespace name '%s'", global_ns);
		return -1;
	}
	if (setenv("UIPC_NS", global_ns, 1) != 0 || uipc_ns_select(global_ns) != 0) {
		warnerr(errno, "cannot select namespace '%s'", global_ns);
		return -1;
	}
	return 0;
}

int require_existing_namespace(void)
{
	char path[PATH_MAX];
	const char *name = current_ns_name();
	const char *anon = getenv("UIPC_NS_FD");

	/* run inside an anonymous namespace (after unshare): it exists, by
	 * the fd this process inherited */
	if (!global_ns && !global_dir && anon && *anon)
		return 0;
	if (uipc_ns_path(NULL, path, sizeof(path)) != 0) {
		warnerr(errno, "namespace '%s'", name);
		return -1;
	}
	if (access(path, F_OK) == 0)
		return 0;
	if (errno == ENOENT)
		warnmsg("namespace '%s' does not exist (no %s); it is created by "
			"`uipc ns create %s` or by the first program run in it",
			name, path, name);
	else
		warnerr(errno, "namespace '%s' (%s)", name, path);
	return -1;
}

/* ---- parsing ---- */

int parse_int(const char *s, int base, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtoll(s, &end, base);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Keys are decimal or 0x-hex, and may be given as the unsigned 32-bit value
 * ipcs prints (0xffffffff is key -1). */
int parse_key(const char *s, key_t *out)
{
	long long v;

	if (parse_int(s, 0, INT_MIN, UINT_MAX, &v) != 0)
		return -1;
	*out = (key_t)(int)(unsigned int)(v & 0xffffffffLL);
	return 0;
}

/* Sizes: a number with an optional K, M, G, T, P, E suffix (powers of 1024,
 * "iB" optional, as util-linux accepts) or KB, MB, ... (powers of 1000). */
int parse_size(const char *s, unsigned long long *out)
{
	static const char units[] = "KMGTPE";
	char *end;
	unsigned long long v, mul = 1, base = 1024;
	const char *u;
	int i, exp;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	if (!*end) {
		*out = v;
		return 0;
	}
	u = strchr(units, *end == 'k' ? 'K' : *end);
	if (!u || !*u)
		return -1;
	exp = (int)(u - units) + 1;
	end++;
	if (!strcmp(end, "B"))
		base = 1000;
	else if (*end && strcmp(end, "iB"))
		return -1;
	for (i = 0; i < exp; i++) {
		if (mul > ULLONG_MAX / base)
			return -1;
		mul *= base;
	}
	if (v > ULLONG_MAX / mul)
		return -1;
	*out = v * mul;
	return 0;
}

int parse_mode(const char *s, unsigned int *out)
{
	long long v;

	if (parse_int(s, 8, 0, 07777, &v) != 0)
		return -1;
	*out = (unsigned int)v;
	return 0;
}
