/*
 * tools/cmd.h - what the pieces of the `uipc` command share: the entry point
 * of each subcommand group, message helpers, option and number parsing, and
 * namespace selection.  Internal to tools/; the library's API is include/uipc.h.
 */
#ifndef UIPC_TOOLS_CMD_H
#define UIPC_TOOLS_CMD_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

/* Exit codes: 0 ok, 1 failure, 2 usage error; run also passes 126/127. */
#define EXIT_USAGE 2

/* Name used as prefix of messages, e.g. "uipc ipcs". */
extern const char *cmd_name;

/* The --ns / --dir options given before the subcommand (NULL if none). */
extern const char *global_ns;
extern const char *global_dir;

/* Subcommands (each returns the process exit status). */
int cmd_run(int argc, char **argv);
int cmd_ipcs(int argc, char **argv);
int cmd_ipcrm(int argc, char **argv);
int cmd_ipcmk(int argc, char **argv);
int cmd_ns(int argc, char **argv);
int cmd_sysctl(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_fsck(int argc, char **argv);

/* Help texts (in uipc.c); help_for() returns NULL for an unknown command. */
const char *help_for(const char *cmd);

/* Messages on stderr, prefixed with cmd_name. */
void warnmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, followed by ": strerror(err)", and a hint when err is ENOSYS. */
void warnerr(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print the message, then "Try 'uipc help CMD'", and return EXIT_USAGE. */
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Only the "Try 'uipc help CMD' ..." line (after getopt's own message);
 * returns status. */
int try_help(int status);

/* Long option codes shared by every subcommand. */
enum { OPT_NS = 0x100, OPT_DIR, OPT_HUMAN, OPT_FIRST_FREE };

/* Record --ns / --dir (later ones win). */
void set_ns_option(const char *name);
void set_dir_option(const char *dir);
/* Make the recorded namespace the one this process uses: exports UIPC_DIR and
 * selects the namespace in the library.  Call before the first IPC call.
 * Returns 0, or prints a message and returns -1. */
int use_namespace(void);
/* For commands that only look (ipcs, ipcrm, sysctl NAME): fail with a clear
 * message instead of creating a namespace that does not exist.
 * Returns 0, or prints a message and returns -1. */
int require_existing_namespace(void);
/* The namespace name in effect (option, $UIPC_NS, or "default"). */
const char *current_ns_name(void);

/* Number parsing; return 0 on success, -1 on a malformed or out-of-range value. */
int parse_int(const char *s, int base, long long min, long long max, long long *out);
int parse_key(const char *s, key_t *out);
int parse_size(const char *s, unsigned long long *out);
int parse_mode(const char *s, unsigned int *out);

/* union semun, which the caller of semctl must define. */
union semun {
	int val;
	struct semid_ds *buf;
	unsigned short *array;
	struct seminfo *__buf;
};

#endif
