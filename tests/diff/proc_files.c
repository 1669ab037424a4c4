/*
 * proc_files.c - the /proc files of System V IPC read and written through
 * libc: /proc/sysvipc/{sem,msg,shm} after creating objects of every kind
 * (each line checked byte for byte against the kernel's format, then
 * printed with pids and times normalized; SHM_DEST, rss, a reader without
 * permission on the objects), opened by open, open64, openat, fopen;
 * O_CLOEXEC, O_DIRECTORY, O_CREAT|O_EXCL, writing; the IPC sysctls under
 * /proc/sys/kernel read, and written by write() and by fopen + fprintf +
 * fclose: good values, bad ones (the error of write(), nothing applied),
 * partial vectors, semmni's ERANGE, writes at a non-zero position, a
 * writer without root; each write read back through the file and through
 * dt_sysctl_get (uipc_sysctl_get under uipc: the two must agree).
 */
#include "dt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- /proc/sysvipc ---- */

/* a write(), printed (errno read after the call) */
static void say_write(const char *what, int fd, const void *buf, size_t n)
{
	long r;
	int e;

	errno = 0;
	r = write(fd, buf, n);
	e = errno;
	dt_out("%s = %s", what, dt_res(r, e));
}

/* the whole file through FD, closed; its length or -1 */
static int slurp(int fd, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len - 1 && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = 0;
	close(fd);
	return (int)got;
}

static const char *field_pid(unsigned long v)
{
	return dt_pid((pid_t)v);
}

/* a sem line: the kernel's format, then its fields normalized */
static void sem_line(const char *l)
{
	int key, id;
	unsigned mode, nsems, uid, gid, cuid, cgid;
	unsigned long long ot, ct;
	char again[256];

	if (sscanf(l, "%d %d %o %u %u %u %u %u %llu %llu", &key, &id, &mode, &nsems, &uid, &gid,
		   &cuid, &cgid, &ot, &ct) != 10) {
		dt_out("unparsed: %s", l);
		return;
	}
	snprintf(again, sizeof(again), "%10d %10d  %4o %10u %5u %5u %5u %5u %10llu %10llu", key,
		 id, mode, nsems, uid, gid, cuid, cgid, ot, ct);
	dt_out("%s key %d id %d perms %o nsems %u uid %u gid %u cuid %u cgid %u otime %s ctime %s",
	       strcmp(again, l) ? "BADFORMAT" : "line", key, id, mode, nsems, uid, gid, cuid, cgid,
	       dt_time((long long)ot), dt_time((long long)ct));
}

static void msg_line(const char *l)
{
	int key, id;
	unsigned mode, lspid, lrpid, uid, gid, cuid, cgid;
	unsigned long cbytes, qnum;
	unsigned long long st, rt, ct;
	char again[256];

	if (sscanf(l, "%d %d %o %lu %lu %u %u %u %u %u %u %llu %llu %llu", &key, &id, &mode,
		   &cbytes, &qnum, &lspid, &lrpid, &uid, &gid, &cuid, &cgid, &st, &rt, &ct) != 14) {
		dt_out("unparsed: %s", l);
		return;
	}
	snprintf(again, sizeof(again),
		 "%10d %10d  %4o  %10lu %10lu %5u %5u %5u %5u %5u %5u %10llu %10llu %10llu", key,
		 id, mode, cbytes, qnum, lspid, lrpid, uid, gid, cuid, cgid, st, rt, ct);
	dt_out("%s key %d id %d perms %o cbytes %lu qnum %lu lspid %s", strcmp(again, l) ?
	       "BADFORMAT" : "line", key, id, mode, cbytes, qnum, field_pid(lspid));
	dt_out("  lrpid %s uid %u gid %u cuid %u cgid %u stime %s rtime %s ctime %s",
	       field_pid(lrpid), uid, gid, cuid, cgid, dt_time((long long)st),
	       dt_time((long long)rt), dt_time((long long)ct));
}

static void shm_line(const char *l)
{
	int key, id;
	unsigned mode, cpid, lpid, uid, gid, cuid, cgid;
	unsigned long size, nattch, rss, swap;
	unsigned long long at, dtm, ct;
	char again[320];

	if (sscanf(l, "%d %d %o %lu %u %u %lu %u %u %u %u %llu %llu %llu %lu %lu", &key, &id,
		   &mode, &size, &cpid, &lpid, &nattch, &uid, &gid, &cuid, &cgid, &at, &dtm, &ct,
		   &rss, &swap) != 16) {
		dt_out("unparsed: %s", l);
		return;
	}
	snprintf(again, sizeof(again),
		 "%10d %10d  %4o %21lu %5u %5u  %5lu %5u %5u %5u %5u %10llu %10llu %10llu %21lu "
		 "%21lu", key, id, mode, size, cpid, lpid, nattch, uid, gid, cuid, cgid, at, dtm,
		 ct, rss, swap);
	dt_out("%s key %d id %d perms %o size %lu cpid %s", strcmp(again, l) ? "BADFORMAT" :
	       "line", key, id, mode, size, field_pid(cpid));
	dt_out("  lpid %s nattch %lu uid %u gid %u cuid %u cgid %u atime %s dtime %s ctime %s",
	       field_pid(lpid), nattch, uid, gid, cuid, cgid, dt_time((long long)at),
	       dt_time((long long)dtm), dt_time((long long)ct));
	dt_out("  rss %lu swap %lu", rss, swap);
}

/* prints a /proc/sysvipc file's text: the header as it is, each line
 * checked and normalized */
static void show_text(const char *what, char *text)
{
	char *save = NULL, *l;
	int first = 1;

	dt_out("%s:", what);
	if (!*text || text[strlen(text) - 1] != '\n')
		dt_out("  no trailing newline");
	for (l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save), first = 0) {
		if (first)
			dt_out("header \"%s\"", l);
		else if (strstr(what, "sem"))
			sem_line(l);
		else if (strstr(what, "msg"))
			msg_line(l);
		else
			shm_line(l);
	}
}

static void show_file(const char *path)
{
	static char text[1 << 16];
	int fd = open(path, O_RDONLY);

	if (fd < 0) {
		dt_out("open %s = %s", path, dt_res(-1, errno));
		return;
	}
	slurp(fd, text, sizeof(text));
	show_text(path, text);
}

static void show_all(void)
{
	show_file("/proc/sysvipc/sem");
	show_file("/proc/sysvipc/msg");
	show_file("/proc/sysvipc/shm");
}

struct objs {
	int sem, sem2, msg, shm, shm2;
	char *at, *at2;
};

static void make_objects(struct objs *o)
{
	struct sembuf op = { 1, 3, 0 };
	struct { long type; char text[32]; } m = { 7, "twelve bytes" };

	o->sem = semget(0x5e11, 4, IPC_CREAT | 0640);
	o->sem2 = semget(IPC_PRIVATE, 1, 0600);
	semop(o->sem, &op, 1);
	o->msg = msgget(0x3e55, IPC_CREAT | 0620);
	msgsnd(o->msg, &m, 12, 0);
	msgsnd(o->msg, &m, 5, 0);
	o->shm = shmget(0x5a4d, 20000, IPC_CREAT | 0604);
	o->shm2 = shmget(IPC_PRIVATE, 3 << 20, 0600);
	o->at = shmat(o->shm, NULL, 0);
	o->at2 = shmat(o->shm2, NULL, 0);
	/* two pages in memory: rss 8192 */
	o->at[0] = 1;
	o->at[4096 * 3] = 1;
	/* removed while attached: SHM_DEST, key 0 */
	shmctl(o->shm2, IPC_RMID, NULL);
	dt_out("created sem %d %d msg %d shm %d %d", o->sem, o->sem2, o->msg, o->shm, o->shm2);
}

static void remove_objects(struct objs *o)
{
	shmdt(o->at);
	shmdt(o->at2);
	shmctl(o->shm, IPC_RMID, NULL);
	semctl(o->sem, 0, IPC_RMID);
	semctl(o->sem2, 0, IPC_RMID);
	msgctl(o->msg, IPC_RMID, NULL);
}

static void as_nobody(void *arg)
{
	(void)arg;
	dt_drop_privs(65534, 65534, 65534);
	show_all();
}

static void sysvipc(int argc, char **argv)
{
	(void)argc, (void)argv;
	struct objs o;

	show_all();
	make_objects(&o);
	show_all();
	dt_out("as another user, without permission on the objects:");
	dt_wait(dt_fork(as_nobody, NULL));
	remove_objects(&o);
	show_all();
}

/* the same file by every door, and the open flags that matter */
static void sysvipc_doors(int argc, char **argv)
{
	(void)argc, (void)argv;
	static char a[8192], b[8192];
	int s = semget(IPC_PRIVATE, 2, 0600), fd;
	FILE *f;

	slurp(open("/proc/sysvipc/sem", O_RDONLY), a, sizeof(a));
	slurp(open64("/proc/sysvipc/sem", O_RDONLY), b, sizeof(b));
	dt_out("open64 reads the same: %d", !strcmp(a, b));
	slurp(openat(AT_FDCWD, "/proc/sysvipc/sem", O_RDONLY), b, sizeof(b));
	dt_out("openat reads the same: %d", !strcmp(a, b));
	slurp(openat(-1, "/proc/sysvipc/sem", O_RDONLY), b, sizeof(b));
	dt_out("openat (bad dirfd, absolute path) reads the same: %d", !strcmp(a, b));
	f = fopen("/proc/sysvipc/sem", "r");
	memset(b, 0, sizeof(b));
	if (f) {
		size_t n = fread(b, 1, sizeof(b) - 1, f);

		b[n] = 0;
		fclose(f);
	}
	dt_out("fopen reads the same: %d", !strcmp(a, b));
	fd = open("/proc/sysvipc/sem", O_RDONLY | O_CLOEXEC);
	dt_out("O_CLOEXEC: FD_CLOEXEC %d", (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
	dt_out("access mode read-only: %d", (fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDONLY);
	say_write("write to it", fd, "x", 1);
	{
		char c1[64] = { 0 }, c2[64] = { 0 };

		dt_out("read 20 = %ld", (long)read(fd, c1, 20));
		dt_out("lseek 0 = %ld", (long)lseek(fd, 0, SEEK_SET));
		dt_out("read 20 = %ld", (long)read(fd, c2, 20));
		dt_out("same bytes again: %d", !strcmp(c1, c2));
	}
	close(fd);
	fd = open("/proc/sysvipc/sem", O_RDONLY);
	dt_out("without O_CLOEXEC: FD_CLOEXEC %d", (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
	close(fd);
	fd = open("/proc/sysvipc/msg", O_RDONLY | O_DIRECTORY);
	dt_out("O_DIRECTORY = %s", dt_res(fd, errno));
	fd = open("/proc/sysvipc/shm", O_RDONLY | O_CREAT | O_EXCL, 0600);
	dt_out("O_CREAT|O_EXCL = %s", dt_res(fd, errno));
	fd = open("/proc/sysvipc/shm", O_WRONLY);
	dt_out("O_WRONLY (root) opens: %d", fd >= 0);
	say_write("write", fd, "x", 1);
	close(fd);
	dt_out("other /proc/sys paths still open: %d", (fd = open("/proc/sys/kernel/ostype",
								  O_RDONLY)) >= 0);
	close(fd);
	semctl(s, 0, IPC_RMID);
}

/* ---- sysctls ---- */

static const char *const sysctls[] = {
	"sem", "msgmax", "msgmnb", "msgmni", "msg_next_id", "sem_next_id", "shm_next_id",
	"shmmax", "shmall", "shmmni", "shm_rmid_forced",
};

static const char *esc(const char *s)
{
	static char b[512];
	size_t j = 0;

	for (; *s && j < sizeof(b) - 3; s++) {
		if (*s == '\t' || *s == '\n') {
			b[j++] = '\\';
			b[j++] = *s == '\t' ? 't' : 'n';
		} else {
			b[j++] = *s;
		}
	}
	b[j] = 0;
	return b;
}

/* the file's text, exactly (trailing newline included) */
static void read_sysctl(const char *name)
{
	char path[128], text[256];
	int fd;

	snprintf(path, sizeof(path), "/proc/sys/kernel/%s", name);
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		dt_out("open %s = %s", path, dt_res(-1, errno));
		return;
	}
	slurp(fd, text, sizeof(text));
	dt_out("%s = \"%s\"", path, esc(text));
}

static void sysctl_read(int argc, char **argv)
{
	(void)argc, (void)argv;
	char line[256], path[128];

	for (size_t i = 0; i < DT_NELEM(sysctls); i++)
		read_sysctl(sysctls[i]);
	for (size_t i = 0; i < DT_NELEM(sysctls); i++) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/sys/kernel/%s", sysctls[i]);
		f = fopen(path, "r");
		if (!f || !fgets(line, sizeof(line), f))
			dt_out("fopen/fgets %s failed", path);
		else
			dt_out("fgets %s = \"%s\"", path, esc(line));
		if (f)
			fclose(f);
	}
}

/* open O_WRONLY, one write(), close; the file read back, and the API's view */
static void write_one(const char *name, const char *value)
{
	char path[128], dotted[64];
	int fd;
	long r;

	snprintf(path, sizeof(path), "/proc/sys/kernel/%s", name);
	snprintf(dotted, sizeof(dotted), "kernel.%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0) {
		dt_out("open %s O_WRONLY = %s", path, dt_res(-1, errno));
		return;
	}
	errno = 0;
	r = write(fd, value, strlen(value));
	dt_out("write %s \"%s\" = %s", name, esc(value), dt_res(r, errno));
	r = close(fd);
	dt_out("close = %s", dt_res(r, errno));
	read_sysctl(name);
	dt_sysctl_get(dotted);
}

static void sysctl_write(int argc, char **argv)
{
	(void)argc, (void)argv;
	static const char *const cases[][2] = {
		{ "msgmax", "abc" }, { "msgmax", "100 200" }, { "msgmax", " 300\n" },
		{ "msgmax", "-5" }, { "msgmax", "99999999999" }, { "msgmax", "" },
		{ "msgmax", "400x" }, { "msgmax", "0x20" }, { "msgmax", "010" },
		{ "msgmax", "   " }, { "msgmni", "40000" }, { "msgmni", "-1" },
		{ "msgmni", "123" }, { "shmmax", "-1" }, { "shmmax", "+5" },
		{ "shmmax", "4096" }, { "shmall", "18446744073709551615" },
		{ "shmall", "18446744073709551616" }, { "shmmni", "32769" },
		{ "shmmni", "77" }, { "sem", "1 2" }, { "sem", "250 32000 32 99999" },
		{ "sem", "250 32000 32 128 5" }, { "sem", "7 abc" }, { "sem", "-3\t4\n" },
		{ "shm_rmid_forced", "2" }, { "shm_rmid_forced", "1" },
		{ "shm_rmid_forced", "0" }, { "msg_next_id", "-2" }, { "msg_next_id", "-1" },
		{ "msg_next_id", "7" }, { "sem_next_id", "2147483647" },
		{ "shm_next_id", "2147483648" }, { "msgmnb", "2147483647\n\n" },
	};
	struct msginfo mi;

	for (size_t i = 0; i < DT_NELEM(cases); i++)
		write_one(cases[i][0], cases[i][1]);
	/* the values are the namespace's: the calls see them */
	msgctl(0, IPC_INFO, (struct msqid_ds *)&mi);
	dt_out("IPC_INFO msgmax %d msgmnb %d msgmni %d", mi.msgmax, mi.msgmnb, mi.msgmni);
	dt_out("msgget gets id %d (msg_next_id 7)", msgget(IPC_PRIVATE, 0600));
	msgctl(7, IPC_RMID, NULL);
}

/* writes after the first one, a bad buffer, stdio, a writer without root */
static void sysctl_write_more(int argc, char **argv)
{
	(void)argc, (void)argv;
	int fd = open("/proc/sys/kernel/msgmnb", O_WRONLY);
	FILE *f;

	say_write("write \"1000\"", fd, "1000", 4);
	say_write("write \"2000\" (position 4)", fd, "2000", 4);
	close(fd);
	read_sysctl("msgmnb");
	fd = open("/proc/sys/kernel/msgmnb", O_RDWR);
	say_write("write from a bad page", fd, dt_badpage, 4);
	close(fd);
	read_sysctl("msgmnb");
	f = fopen("/proc/sys/kernel/msgmax", "w");
	dt_out("fopen w: %d", f != NULL);
	if (f) {
		fprintf(f, "%d\n", 4321);
		dt_out("fclose = %d", fclose(f));
	}
	read_sysctl("msgmax");
	f = fopen("/proc/sys/kernel/msgmax", "w");
	if (f) {
		fprintf(f, "zzz\n");
		errno = 0;
		int r = fclose(f);
		dt_out("fclose after a bad value = %d %s", r, r ? dt_errname(errno) : "");
	}
	read_sysctl("msgmax");
	f = fopen("/proc/sys/kernel/sem", "we");
	if (f) {
		fputs("11 22 33 44", f);
		fflush(f);
		dt_out("fflush then fclose = %d", fclose(f));
	}
	read_sysctl("sem");
	dt_sysctl_get("kernel.sem");
}

static void nobody_writes(void *arg)
{
	(void)arg;
	dt_drop_privs(65534, 65534, 65534);
	write_one("msgmax", "77");
	dt_out("fopen w as nobody: %s", fopen("/proc/sys/kernel/msgmax", "w") ? "opened" :
	       dt_errname(errno));
	read_sysctl("msgmax");
}

static void sysctl_nobody(int argc, char **argv)
{
	(void)argc, (void)argv;
	dt_wait(dt_fork(nobody_writes, NULL));
	read_sysctl("msgmax");
}

/* the ways shells and fd juggling reach a sysctl: write() through a dup,
 * sh's and bash's "> file" (bash's echo writes through stdio) */
static void sysctl_shell(int argc, char **argv)
{
	(void)argc, (void)argv;
	int fd = open("/proc/sys/kernel/msgmax", O_WRONLY), fd2 = dup(fd), r;

	close(fd);
	say_write("write \"2222\" through a dup", fd2, "2222", 4);
	close(fd2);
	read_sysctl("msgmax");
	fd = open("/proc/sys/kernel/msgmnb", O_WRONLY);
	dup2(fd, 10);
	close(fd);
	say_write("write \"3333\" through dup2", 10, "3333", 4);
	close(10);
	read_sysctl("msgmnb");
	r = system("echo 4444 > /proc/sys/kernel/msgmax");
	dt_out("sh: echo 4444 > msgmax: status %d", r);
	read_sysctl("msgmax");
	r = system("bash -c 'echo 5555 > /proc/sys/kernel/msgmnb'");
	dt_out("bash: echo 5555 > msgmnb: status %d", r);
	read_sysctl("msgmnb");
	r = system("bash -c 'echo 9 8 7 6 | tee /proc/sys/kernel/sem > /dev/null'");
	dt_out("tee sem: status %d", r);
	read_sysctl("sem");
	r = system("bash -c 'cat /proc/sys/kernel/sem /proc/sysvipc/sem | wc -c'");
	dt_out("cat: status %d", r);
}

/* ---- other spellings of the same paths ---- */

/* the text read through FD (closed), compared with REF; whether it shows
 * the array with key 24087 */
static void same_file(const char *how, int fd, const char *ref)
{
	static char t[8192];

	if (fd < 0) {
		dt_out("%s: open = %s", how, dt_res(-1, errno));
		return;
	}
	slurp(fd, t, sizeof(t));
	dt_out("%s: same text %d, shows the array %d", how, !strcmp(t, ref),
	       strstr(t, " 24087 ") != NULL);
}

static void paths_sysvipc(const char *tmp)
{
	static char ref[8192], link[512], other[512];
	char cwd[4096];
	int dfd;
	FILE *f;

	slurp(open("/proc/sysvipc/sem", O_RDONLY), ref, sizeof(ref));
	dt_out("absolute shows the array %d", strstr(ref, " 24087 ") != NULL);
	if (!getcwd(cwd, sizeof(cwd)))
		cwd[0] = 0;
	if (!chdir("/proc/sysvipc"))
		same_file("cwd /proc/sysvipc, \"sem\"", open("sem", O_RDONLY), ref);
	if (!chdir("/proc")) {
		same_file("cwd /proc, \"sysvipc/sem\"", open("sysvipc/sem", O_RDONLY), ref);
		same_file("cwd /proc, \"./sysvipc//sem\"", open("./sysvipc//sem", O_RDONLY), ref);
		f = fopen("sysvipc/sem", "r");
		same_file("cwd /proc, fopen \"sysvipc/sem\"", f ? dup(fileno(f)) : -1, ref);
		if (f)
			fclose(f);
	}
	if (cwd[0] && chdir(cwd))
		dt_fail("chdir back");
	dfd = open("/proc", O_RDONLY | O_DIRECTORY);
	same_file("openat(/proc fd, \"sysvipc/sem\")", openat(dfd, "sysvipc/sem", O_RDONLY), ref);
	close(dfd);
	dfd = open("/proc/sysvipc", O_RDONLY | O_DIRECTORY);
	same_file("openat(/proc/sysvipc fd, \"sem\")", openat(dfd, "sem", O_RDONLY), ref);
	same_file("openat(/proc/sysvipc fd, \"../sysvipc/sem\")",
		  openat(dfd, "../sysvipc/sem", O_RDONLY), ref);
	close(dfd);
	same_file("\"/proc/self/../sysvipc/sem\"", open("/proc/self/../sysvipc/sem", O_RDONLY), ref);
	same_file("\"//proc/sysvipc/sem\"", open("//proc/sysvipc/sem", O_RDONLY), ref);
	same_file("\"/proc/./sysvipc/sem\"", open("/proc/./sysvipc/sem", O_RDONLY), ref);
	same_file("\"/proc/sys/../sysvipc/sem\"", open("/proc/sys/../sysvipc/sem", O_RDONLY), ref);
	snprintf(link, sizeof(link), "%s/link", tmp);
	if (symlink("/proc/sysvipc", link))
		dt_fail("symlink: %d", errno);
	snprintf(other, sizeof(other), "%s/link/sem", tmp);
	same_file("through a symlink to /proc/sysvipc", open(other, O_RDONLY), ref);
	unlink(link);
}

static void paths_sysctl(void)
{
	char text[64];
	int dfd = open("/proc/sys/kernel", O_RDONLY | O_DIRECTORY), fd;

	fd = openat(dfd, "msgmni", O_WRONLY);
	say_write("openat(/proc/sys/kernel fd, \"msgmni\") write \"123\"", fd, "123\n", 4);
	close(fd);
	close(dfd);
	read_sysctl("msgmni");
	slurp(open("/proc/sys/kernel/../kernel/msgmni", O_RDONLY), text, sizeof(text));
	dt_out("\"/proc/sys/kernel/../kernel/msgmni\" = \"%s\"", esc(text));
	slurp(open("/proc/sys/fs/../kernel/msgmnb", O_RDONLY), text, sizeof(text));
	dt_out("\"/proc/sys/fs/../kernel/msgmnb\" = \"%s\"", esc(text));
}

/* a file of the program's own that is named like one of ours */
static void paths_not_ours(const char *tmp)
{
	char path[512], text[64];
	int fd;

	snprintf(path, sizeof(path), "%s/sem", tmp);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	say_write("a file of its own named sem", fd, "mine\n", 5);
	close(fd);
	slurp(open(path, O_RDONLY), text, sizeof(text));
	dt_out("read back \"%s\"", esc(text));
	unlink(path);
}

static void proc_paths(int argc, char **argv)
{
	(void)argc, (void)argv;
	char tmp[] = "/tmp/dt-procpath-XXXXXX";
	int s = semget(24087, 3, IPC_CREAT | 0600);

	if (!mkdtemp(tmp)) {
		dt_fail("mkdtemp");
		return;
	}
	paths_sysvipc(tmp);
	paths_sysctl();
	paths_not_ours(tmp);
	rmdir(tmp);
	semctl(s, 0, IPC_RMID);
}

const struct dt_case dt_cases[] = {
	{ "sysctl-shell", sysctl_shell, 0 },
	{ "sysvipc", sysvipc, 0 },
	{ "sysvipc-doors", sysvipc_doors, 0 },
	{ "sysctl-read", sysctl_read, 0 },
	{ "sysctl-write", sysctl_write, 0 },
	{ "sysctl-write-more", sysctl_write_more, 0 },
	{ "sysctl-nobody", sysctl_nobody, 0 },
	{ "proc-paths", proc_paths, 0 },
	{ NULL, NULL, 0 },
};
