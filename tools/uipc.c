/*
 * tools/uipc.c - the `uipc` command's entry point: global options
 * (--ns, --dir), dispatch to the subcommands, `uipc --help` and `uipc help CMD`.
 * Each subcommand group lives in its own file (run.c, ipcs.c, ipcrm.c,
 * ipcmk.c, ns.c, sysctl.c, bench.c).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uipc.h"
#include "cmd.h"

static const char usage_text[] =
	"Usage:\n"
	" uipc [--ns NAME] [--dir DIR] COMMAND [ARGS...]\n"
	"\n"
	"System V IPC (semaphores, message queues, shared memory) in user space.\n"
	"\n"
	"Commands:\n"
	" run [--ns NAME] [--dir DIR] [--trap] -- CMD [ARGS...]\n"
	"                   run CMD with libuipc.so preloaded\n"
	" ipcs [-s|-q|-m|-a] [-i ID] [-l|-u|-c|-p|-t]\n"
	"                   show the IPC objects of a namespace (like ipcs)\n"
	" ipcrm [-s|-q|-m ID] [-S|-Q|-M KEY] [-a]\n"
	"                   remove IPC objects (like ipcrm)\n"
	" ipcmk -S N | -Q | -M SIZE [-p MODE]\n"
	"                   create IPC objects (like ipcmk)\n"
	" ns create|rm|ls|path\n"
	"                   manage namespaces\n"
	" sysctl NAME[=VALUE]\n"
	"                   show or set a namespace's limits (kernel.sem, ...)\n"
	" fsck\n"
	"                   check a namespace's consistency\n"
	" bench [ARGS...]\n"
	"                   run the benchmarks (kernel vs uipc)\n"
	" help [COMMAND]\n"
	"                   show help (of a command)\n"
	"\n"
	"Options:\n"
	" --ns NAME        namespace to use (default: $UIPC_NS, else \"default\");\n"
	"                  NAME is private to the user, shared:NAME a shared one\n"
	"                  (made by `uipc ns create --shared`)\n"
	" --dir DIR        directory of namespace files (default: $UIPC_DIR, else\n"
	"                  $XDG_RUNTIME_DIR if it is this user's with mode 0700\n"
	"                  (not for root), else /dev/shm)\n"
	" -h, --help       display this help\n"
	"\n"
	"Environment: UIPC_NS, UIPC_DIR, UIPC_NS_EXTENDED, UIPC_NS_SIZE, UIPC_LIB,\n"
	"UIPC_TRAP, UIPC_NO_KERNEL_IPC.\n";

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *help;
} commands[] = {
	{ "run", cmd_run,
	  "Usage:\n"
	  " uipc run [--ns NAME] [--dir DIR] [--aio-backend=uring|threads|kernel] [--trap]\n"
	  "          [--no-kernel-ipc] [--allow-static] [--] CMD [ARGS...]\n"
	  "\n"
	  "Run CMD with libuipc.so preloaded (LD_PRELOAD), so that its System V IPC\n"
	  "calls use the uipc namespace NAME instead of the kernel.\n"
	  "\n"
	  "The library is $UIPC_LIB if set, else libuipc.so next to the uipc binary\n"
	  "(the build tree), else libuipc.so.0 in the library directory of an\n"
	  "installed uipc (../lib from the binary's directory, then the LIBDIR of\n"
	  "`make install`).\n"
	  "The namespace is opened (and created if missing) before CMD starts.\n"
	  "CMD's exit status is passed through; 127 if CMD is not found.\n"
	  "A statically linked CMD (or one of another architecture), which no\n"
	  "preloaded library reaches, is refused with a message (status 126).\n"
	  "\n"
	  "Options:\n"
	  " --ns NAME        namespace (sets UIPC_NS); shared:NAME for a shared one\n"
	  " --dir DIR        directory of namespace files (sets UIPC_DIR)\n"
	  " --aio-backend=uring|threads|kernel\n"
	  "                  who performs native AIO that cannot complete at once\n"
	  "                  (sets UIPC_AIO_BACKEND); default (and kernel): O_DIRECT\n"
	  "                  reads and writes in a kernel AIO context of uipc's own\n"
	  "                  and the rest in an io_uring, where the kernel allows\n"
	  "                  them; uring: io_uring only\n"
	  " --trap           trap mode (sets UIPC_TRAP=1): a seccomp filter turns the\n"
	  "                  System V IPC and AIO system calls CMD and its children\n"
	  "                  make by instruction into SIGSYS, which libuipc serves;\n"
	  "                  sets no_new_privs without CAP_SYS_ADMIN (set-user-ID\n"
	  "                  programs then run without their privileges)\n"
	  " --no-kernel-ipc  a seccomp filter makes the kernel's System V IPC and AIO\n"
	  "                  calls fail with ENOSYS for CMD and its children (a test\n"
	  "                  mode: proves that uipc serves everything)\n"
	  " --allow-static   run a statically linked CMD anyway (its IPC calls reach\n"
	  "                  the kernel; with --trap they kill it with SIGSYS)\n" },
	{ "ipcs", cmd_ipcs,
	  "Usage:\n"
	  " uipc ipcs [--ns NAME] [resource-option...] [output-option]\n"
	  " uipc ipcs [--ns NAME] -m|-q|-s -i <id>\n"
	  "\n"
	  "Show information on the IPC objects of a uipc namespace, in the format of\n"
	  "util-linux ipcs.\n"
	  "\n"
	  "Options:\n"
	  " -i, --id <id>  print details on resource identified by <id>\n"
	  " --ns NAME      namespace to show\n"
	  " --dir DIR      directory of namespace files\n"
	  "\n"
	  "Resource options:\n"
	  " -m, --shmems      shared memory segments\n"
	  " -q, --queues      message queues\n"
	  " -s, --semaphores  semaphores\n"
	  " -a, --all         all (default)\n"
	  "\n"
	  "Output options:\n"
	  " -t, --time        show attach, detach and change times\n"
	  " -p, --pid         show PIDs of creator and last operator\n"
	  " -c, --creator     show creator and owner\n"
	  " -l, --limits      show resource limits\n"
	  " -u, --summary     show status summary\n"
	  "     --human       show sizes in human-readable format\n"
	  " -b, --bytes       show sizes in bytes\n" },
	{ "ipcrm", cmd_ipcrm,
	  "Usage:\n"
	  " uipc ipcrm [--ns NAME] [options]\n"
	  " uipc ipcrm [--ns NAME] shm|msg|sem <id>...\n"
	  "\n"
	  "Remove IPC objects of a uipc namespace (like util-linux ipcrm).\n"
	  "\n"
	  "Options:\n"
	  " -m, --shmem-id <id>        remove shared memory segment by id\n"
	  " -M, --shmem-key <key>      remove shared memory segment by key\n"
	  " -q, --queue-id <id>        remove message queue by id\n"
	  " -Q, --queue-key <key>      remove message queue by key\n"
	  " -s, --semaphore-id <id>    remove semaphore by id\n"
	  " -S, --semaphore-key <key>  remove semaphore by key\n"
	  " -a, --all[=shm|msg|sem]    remove all (in the specified category)\n"
	  " -v, --verbose              explain what is being done\n"
	  " --ns NAME                  namespace\n"
	  " --dir DIR                  directory of namespace files\n" },
	{ "ipcmk", cmd_ipcmk,
	  "Usage:\n"
	  " uipc ipcmk [--ns NAME] [options]\n"
	  "\n"
	  "Create IPC objects in a uipc namespace (like util-linux ipcmk).\n"
	  "\n"
	  "Options:\n"
	  " -M, --shmem <size>       create shared memory segment of size <size>\n"
	  " -S, --semaphore <number> create semaphore array with <number> elements\n"
	  " -Q, --queue              create message queue\n"
	  " -p, --mode <mode>        permission for the resource (default is 0644)\n"
	  " -k, --key <key>          use this key instead of a random one\n"
	  " --ns NAME                namespace\n"
	  " --dir DIR                directory of namespace files\n"
	  "\n"
	  "<size> may be followed by K, M, G, T, P, E (KiB...; KB... for powers of 1000).\n" },
	{ "ns", cmd_ns,
	  "Usage:\n"
	  " uipc ns create NAME [--mode MODE] [--extended] [--size BYTES] [--shared]\n"
	  " uipc ns rm NAME...\n"
	  " uipc ns ls\n"
	  " uipc ns path [NAME]\n"
	  "\n"
	  "Manage uipc namespaces.  A namespace is one file in $UIPC_DIR (default\n"
	  "/dev/shm); named namespaces persist until removed.  ls also lists this\n"
	  "user's anonymous namespaces (made by unshare(CLONE_NEWIPC) or clone, gone\n"
	  "with their last process or descriptor): ipc:[N] as readlink of\n"
	  "/proc/PID/ns/ipc shows it, its creator, its member processes, its\n"
	  "objects and the memory it holds.\n"
	  "\n"
	  "Options:\n"
	  " --mode MODE    file mode of a new namespace (default 0600)\n"
	  " --extended     ipcmni_extend mode: 2^24 ids per type, 7-bit sequence\n"
	  "                (default: $UIPC_NS_EXTENDED)\n"
	  " --size BYTES   arena size, K, M, G suffixes allowed (default:\n"
	  "                $UIPC_NS_SIZE, else 4G; only used pages take memory)\n"
	  " --shared       a namespace shared between users (give a group/world mode)\n"
	  " --dir DIR      directory of namespace files\n" },
	{ "sysctl", cmd_sysctl,
	  "Usage:\n"
	  " uipc sysctl [--ns NAME] [-n] NAME...\n"
	  " uipc sysctl [--ns NAME] NAME=VALUE...\n"
	  " uipc sysctl [--ns NAME] -a\n"
	  "\n"
	  "Show or set the per-namespace IPC limits, named as under /proc/sys:\n"
	  "kernel.sem (\"SEMMSL SEMMNS SEMOPM SEMMNI\"), kernel.msgmax, kernel.msgmnb,\n"
	  "kernel.msgmni, kernel.shmmax, kernel.shmall, kernel.shmmni,\n"
	  "kernel.shm_rmid_forced, kernel.sem_next_id, kernel.msg_next_id,\n"
	  "kernel.shm_next_id.\n"
	  "\n"
	  "Options:\n"
	  " -n           print values only\n"
	  " -a           show all\n"
	  " --ns NAME    namespace\n"
	  " --dir DIR    directory of namespace files\n" },
	{ "fsck", cmd_fsck,
	  "Usage:\n"
	  " uipc fsck [--ns NAME]\n"
	  "\n"
	  "Check a namespace's consistency: the allocator inside the file, the id\n"
	  "tables and the key hash.  Taking the namespace's locks on the way also\n"
	  "rolls back what a killed process left half done.  Exit status 1 if a\n"
	  "problem is found.\n"
	  "\n"
	  "Options:\n"
	  " --ns NAME    namespace\n"
	  " --dir DIR    directory of namespace files\n" },
	{ "bench", cmd_bench,
	  "Usage:\n"
	  " uipc bench [--quick] [--only NAME] [--reps N] [ARGS...]\n"
	  "\n"
	  "Run the benchmark driver built by `make bench` (build/bench/driver), each\n"
	  "benchmark against the kernel and against uipc, with the library next to\n"
	  "the uipc binary; ARGS go to the driver.  If it is not built, tell how.\n" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

const char *help_for(const char *cmd)
{
	size_t i;

	for (i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, cmd))
			return commands[i].help;
	return NULL;
}

static int cmd_help(int argc, char **argv)
{
	const char *h;

	if (argc < 2) {
		fputs(usage_text, stdout);
		return 0;
	}
	h = help_for(argv[1]);
	if (!h) {
		cmd_name = "uipc help";
		return usage_error("unknown command '%s'", argv[1]);
	}
	fputs(h, stdout);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "ns", required_argument, NULL, OPT_NS },
		{ "dir", required_argument, NULL, OPT_DIR },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static char name[64];
	size_t i;
	int c;

	argv[0] = "uipc";	/* for getopt's messages */
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_NS:
			set_ns_option(optarg);
			break;
		case OPT_DIR:
			set_dir_option(optarg);
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		default:
			return try_help(EXIT_USAGE);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1) {
		fputs(usage_text, stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[0], "help"))
		return cmd_help(argc, argv);
	for (i = 0; i < NCOMMANDS; i++) {
		if (strcmp(commands[i].name, argv[0]))
			continue;
		snprintf(name, sizeof(name), "uipc %s", argv[0]);
		cmd_name = name;
		argv[0] = name;	/* getopt's messages say "uipc CMD: ..." */
		optind = 0;	/* restart getopt for the subcommand */
		return commands[i].fn(argc, argv);
	}
	fprintf(stderr, "uipc: unknown command '%s'\n\n", argv[0]);
	fputs(usage_text, stderr);
	return EXIT_USAGE;
}
