/*
 * tools/ipcs-msg.c - the message queue part of `uipc ipcs`: the list (-q
 * with the default, -c, -t, -p formats), limits (-l), summary (-u) and the
 * details of one queue (-q -i ID), through uipc_msgctl().
 */
#include <errno.h>
#include <stdio.h>

#include "uipc.h"
#include "cmd.h"
#include "ipcs.h"

static int msg_stat_cmd = MSG_STAT_ANY;

/* MSG_STAT_ANY of index idx; MSG_STAT where _ANY is not known. */
static int msg_stat(int idx, struct msqid_ds *ds)
{
	int id = uipc_msgctl(idx, msg_stat_cmd, ds);

	if (id < 0 && errno == EINVAL && msg_stat_cmd == MSG_STAT_ANY) {
		id = uipc_msgctl(idx, MSG_STAT, ds);
		if (id >= 0)
			msg_stat_cmd = MSG_STAT;
	}
	return id;
}

static int msg_info(int cmd, struct msginfo *mi)
{
	return uipc_msgctl(0, cmd, (struct msqid_ds *)(void *)mi);
}

static void msg_limits(enum ipcs_unit unit)
{
	struct msginfo mi;
	enum ipcs_unit u = unit == UNIT_DEFAULT ? UNIT_BYTES : unit;

	if (msg_info(IPC_INFO, &mi) < 0) {
		ipcs_report("message queue limits", errno);
		printf("unable to fetch message limits\n");
		return;
	}
	printf("------ Messages Limits --------\n");
	printf("max queues system wide = %d\n", mi.msgmni);
	ipcs_print_size(u, "max size of message", (uint64_t)mi.msgmax, "\n", 0);
	ipcs_print_size(u, "default max size of queue", (uint64_t)mi.msgmnb, "\n", 0);
}

static void msg_status(enum ipcs_unit unit)
{
	struct msginfo mi;

	if (msg_info(MSG_INFO, &mi) < 0) {
		ipcs_report("message queues", errno);
		printf("kernel not configured for message queues\n");
		return;
	}
	printf("------ Messages Status --------\n");
	printf("allocated queues = %d\n", mi.msgpool);
	printf("used headers = %d\n", mi.msgmap);
	ipcs_print_size(unit, "used space", (uint64_t)mi.msgtql,
			unit == UNIT_DEFAULT ? " bytes\n" : "\n", 0);
}

static void msg_header(enum ipcs_format fmt, enum ipcs_unit unit)
{
	switch (fmt) {
	case FMT_CREATOR:
		printf("------ Message Queues Creators/Owners --------\n");
		printf("%-10s %-10s %-10s %-10s %-10s %-10s\n",
		       "msqid", "perms", "cuid", "cgid", "uid", "gid");
		break;
	case FMT_TIME:
		printf("------ Message Queues Send/Recv/Change Times --------\n");
		printf("%-8s %-10s %-20s %-20s %-20s\n",
		       "msqid", "owner", "send", "recv", "change");
		break;
	case FMT_PID:
		printf("------ Message Queues PIDs --------\n");
		printf("%-10s %-10s %-10s %-10s\n", "msqid", "owner", "lspid", "lrpid");
		break;
	default:
		printf("------ Message Queues --------\n");
		printf("%-10s %-10s %-10s %-10s %-12s %-12s\n",
		       "key", "msqid", "owner", "perms",
		       unit == UNIT_HUMAN ? "size" : "used-bytes", "messages");
		break;
	}
}

static void msg_row(enum ipcs_format fmt, enum ipcs_unit unit, int id,
		    const struct msqid_ds *ds)
{
	char b[32];

	switch (fmt) {
	case FMT_CREATOR:
		ipcs_print_creator(id, &ds->msg_perm);
		break;
	case FMT_TIME:
		ipcs_print_id_owner(8, id, ds->msg_perm.uid);
		printf(" %-20.16s", ipcs_time_short(ds->msg_stime, b));
		printf(" %-20.16s", ipcs_time_short(ds->msg_rtime, b));
		printf(" %-20.16s\n", ipcs_time_short(ds->msg_ctime, b));
		break;
	case FMT_PID:
		ipcs_print_id_owner(8, id, ds->msg_perm.uid);
		printf("  %5d     %5d\n", ds->msg_lspid, ds->msg_lrpid);
		break;
	default:
		printf("0x%08x ", (unsigned)ds->msg_perm.__key);
		ipcs_print_id_owner(10, id, ds->msg_perm.uid);
		printf(" %-10o ", ds->msg_perm.mode & 0777);
		if (unit == UNIT_HUMAN)
			ipcs_print_size(unit, NULL, ds->__msg_cbytes, "      ", 6);
		else
			ipcs_print_size(unit, NULL, ds->__msg_cbytes, NULL, -12);
		printf(" %-12ju\n", (uintmax_t)ds->msg_qnum);
		break;
	}
}

void ipcs_msg_list(enum ipcs_format fmt, enum ipcs_unit unit)
{
	struct msginfo mi;
	struct msqid_ds ds;
	int idx, id, maxidx;

	if (fmt == FMT_LIMITS) {
		msg_limits(unit);
		return;
	}
	if (fmt == FMT_STATUS) {
		msg_status(unit);
		return;
	}
	msg_header(fmt, unit);
	maxidx = msg_info(MSG_INFO, &mi);
	if (maxidx < 0) {
		ipcs_report("message queues", errno);
		return;
	}
	for (idx = 0; idx <= maxidx; idx++) {
		id = msg_stat(idx, &ds);
		if (id >= 0)
			msg_row(fmt, unit, id, &ds);
	}
}

/* Find queue `id` by a scan of all indexes; 1 found, 0 not, -1 error. */
static int msg_find(int id, struct msqid_ds *ds)
{
	struct msginfo mi;
	int idx, maxidx;

	maxidx = msg_info(MSG_INFO, &mi);
	if (maxidx < 0) {
		ipcs_report("message queues", errno);
		return -1;
	}
	for (idx = 0; idx <= maxidx; idx++)
		if (msg_stat(idx, ds) == id)
			return 1;
	return 0;
}

int ipcs_msg_show(int id, enum ipcs_unit unit)
{
	struct msqid_ds ds, st;
	const struct ipc_perm *p = &ds.msg_perm;
	uint64_t qbytes = 0;
	char b[32];
	int found;

	found = msg_find(id, &ds);
	if (found < 0)
		return 1;
	if (!found) {
		warnmsg("id %d not found", id);
		return 0;
	}
	/* ipcs takes qbytes from IPC_STAT, which needs read permission */
	if (uipc_msgctl(id, IPC_STAT, &st) != -1)
		qbytes = st.msg_qbytes;

	printf("\nMessage Queue msqid=%d\n", id);
	printf("uid=%u\tgid=%u\tcuid=%u\tcgid=%u\tmode=%#o\n",
	       p->uid, p->gid, p->cuid, p->cgid, p->mode);
	ipcs_print_size(unit, unit == UNIT_HUMAN ? "csize=" : "cbytes=",
			ds.__msg_cbytes, "\t", 0);
	ipcs_print_size(unit, unit == UNIT_HUMAN ? "qsize=" : "qbytes=", qbytes, "\t", 0);
	printf("qnum=%jd\tlspid=%d\tlrpid=%d\n",
	       (intmax_t)ds.msg_qnum, ds.msg_lspid, ds.msg_lrpid);
	printf("send_time=%-26.24s\n", ipcs_time(ds.msg_stime, b));
	printf("rcv_time=%-26.24s\n", ipcs_time(ds.msg_rtime, b));
	printf("change_time=%-26.24s\n", ipcs_time(ds.msg_ctime, b));
	printf("\n");
	return 0;
}
