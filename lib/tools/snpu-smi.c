// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * snpu-smi: show the snpu devices of this machine and what uses them.
 *
 *   snpu-smi [-j] [-d N]  one block per device (device N only)
 *   snpu-smi [-j] status [-d N]
 *                     devices and processes, from the generic netlink
 *                     family "snpu" (one device with -d); without
 *                     CAP_SYS_ADMIN, only the caller's own processes
 *   snpu-smi [-j] stats
 *                     each device's counters and each visible context's
 *                     usage against its quotas (SNPU_CMD_STATS)
 *   snpu-smi [-j] top [-i SECS] [-n COUNT]
 *                     a refreshing per-process view: contexts, memory,
 *                     streams, tasks in flight, tasks/s, snapshot state,
 *                     compute share (fdinfo); each device's busy share
 *                     (sysfs busy_ns)
 *   snpu-smi [-j] events [-n COUNT] [-t SECS]
 *                     one line per snapshot transition, from the
 *                     family's multicast group "events" (needs
 *                     CAP_SYS_ADMIN)
 *   snpu-smi [-j] trace [-t SECS | -f FILE]
 *                     the task tracepoints (tracefs, SECS seconds, or a
 *                     saved trace) as one timeline per stream
 *
 * -j prints JSON: one document per command, one object per line for
 * events and per refresh for top. Documentation/snpu-smi.rst. The netlink
 * subcommands use libnl-genl (Documentation/netlink.rst).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include <linux/snpu_netlink.h>

#include "snpu.h"

/* -j: JSON output. */
static int json;

static int show(unsigned int index, bool first)
{
	struct snpu_device *dev;
	struct snpu_info info;
	int ret;

	ret = snpu_open(index, 0, &dev);
	if (ret)
		return ret;
	ret = snpu_get_info(dev, &info);
	snpu_close(dev);
	if (ret)
		return ret;

	if (json) {
		printf("%s{\"index\": %u, \"abi_major\": %u, \"abi_minor\": %u, \"caps\": %llu, \"cores\": %u, \"mem_total\": %llu, \"mem_used\": %llu, \"max_block_dim\": %u, \"max_block_work\": %llu, \"mem_align\": %u}",
		       first ? "" : ", ", info.dev_index, info.abi_major,
		       info.abi_minor, (unsigned long long)info.caps,
		       info.cores, (unsigned long long)info.mem_total,
		       (unsigned long long)info.mem_used, info.max_block_dim,
		       (unsigned long long)info.max_block_work,
		       info.mem_align);
		return 0;
	}
	printf("snpu%u: abi %u.%u caps 0x%llx\n", info.dev_index,
	       info.abi_major, info.abi_minor, (unsigned long long)info.caps);
	printf("  cores          %u\n", info.cores);
	printf("  memory         %llu MiB (%llu bytes used)\n",
	       (unsigned long long)info.mem_total >> 20,
	       (unsigned long long)info.mem_used);
	printf("  max_block_dim  %u\n", info.max_block_dim);
	printf("  max_block_work %llu\n",
	       (unsigned long long)info.max_block_work);
	printf("  mem_align      %u\n", info.mem_align);
	return 0;
}

/* ---- generic netlink ----------------------------------------------------- */

/* What snpu-smi reads of every message; other attributes are ignored. */
static const struct nla_policy smi_policy[SNPU_ATTR_MAX + 1] = {
	[SNPU_ATTR_VERSION] = { .type = NLA_U32 },
	[SNPU_ATTR_KIND] = { .type = NLA_U32 },
	[SNPU_ATTR_DEV_INDEX] = { .type = NLA_U32 },
	[SNPU_ATTR_DEV_CORES] = { .type = NLA_U32 },
	[SNPU_ATTR_DEV_MEM_TOTAL] = { .type = NLA_U64 },
	[SNPU_ATTR_DEV_MEM_USED] = { .type = NLA_U64 },
	[SNPU_ATTR_DEV_CONTEXTS] = { .type = NLA_U32 },
	[SNPU_ATTR_PID] = { .type = NLA_U32 },
	[SNPU_ATTR_STATE] = { .type = NLA_U32 },
	[SNPU_ATTR_OLD_STATE] = { .type = NLA_U32 },
	[SNPU_ATTR_NEW_STATE] = { .type = NLA_U32 },
	[SNPU_ATTR_RESULT] = { .type = NLA_S32 },
	[SNPU_ATTR_SEQ] = { .type = NLA_U32 },
	[SNPU_ATTR_BG_THREADS] = { .type = NLA_U32 },
	[SNPU_ATTR_CONTEXTS] = { .type = NLA_U32 },
	[SNPU_ATTR_IMAGE_BYTES] = { .type = NLA_U64 },
	[SNPU_ATTR_STAT_TASKS] = { .type = NLA_U64 },
	[SNPU_ATTR_STAT_TASKS_FAILED] = { .type = NLA_U64 },
	[SNPU_ATTR_STAT_CQES] = { .type = NLA_U64 },
	[SNPU_ATTR_STAT_CQ_OVERFLOWS] = { .type = NLA_U64 },
	[SNPU_ATTR_STAT_READY_DEPTH] = { .type = NLA_U32 },
	[SNPU_ATTR_STAT_READY_MAX] = { .type = NLA_U32 },
	[SNPU_ATTR_STAT_BUSY_NS] = { .type = NLA_U64 },
	[SNPU_ATTR_STAT_BLOCKS] = { .type = NLA_U64 },
	[SNPU_ATTR_STAT_SNAPSHOTS] = { .type = NLA_U64 },
	[SNPU_ATTR_STAT_SNAPSHOTS_FAILED] = { .type = NLA_U64 },
	[SNPU_ATTR_STAT_SNAPSHOT_NS] = { .type = NLA_U64 },
	[SNPU_ATTR_STAT_GRAPH_LAUNCHES] = { .type = NLA_U64 },
	[SNPU_ATTR_STAT_HAZARD_VISITS] = { .type = NLA_U64 },
	[SNPU_ATTR_CTX_ID] = { .type = NLA_U64 },
	[SNPU_ATTR_CTX_MEM_USED] = { .type = NLA_U64 },
	[SNPU_ATTR_CTX_MEM_LIMIT] = { .type = NLA_U64 },
	[SNPU_ATTR_CTX_HOST_USED] = { .type = NLA_U64 },
	[SNPU_ATTR_CTX_HOST_LIMIT] = { .type = NLA_U64 },
	[SNPU_ATTR_CTX_STREAMS] = { .type = NLA_U32 },
	[SNPU_ATTR_CTX_STREAMS_LIMIT] = { .type = NLA_U32 },
	[SNPU_ATTR_CTX_EVENTS] = { .type = NLA_U32 },
	[SNPU_ATTR_CTX_EVENTS_LIMIT] = { .type = NLA_U32 },
	[SNPU_ATTR_CTX_TASKS] = { .type = NLA_U32 },
	[SNPU_ATTR_CTX_TASKS_LIMIT] = { .type = NLA_U32 },
	[SNPU_ATTR_CTX_GRAPHS] = { .type = NLA_U32 },
	[SNPU_ATTR_CTX_GRAPHS_LIMIT] = { .type = NLA_U32 },
	[SNPU_ATTR_CTX_GRAPH_MEM] = { .type = NLA_U64 },
	[SNPU_ATTR_CTX_GRAPH_MEM_LIMIT] = { .type = NLA_U64 },
	[SNPU_ATTR_CTX_TASKS_DONE] = { .type = NLA_U64 },
};

/*
 * One message of a reply: its kind and every attribute snpu-smi knows,
 * widened to 64 bits (RESULT sign-extended), with which were present.
 */
struct smi_rec {
	uint32_t kind;
	uint64_t v[SNPU_ATTR_MAX + 1];
	bool has[SNPU_ATTR_MAX + 1];
};

/* The messages of one request, in order. */
struct smi_recs {
	struct smi_rec *r;
	size_t n, cap;
};

/**
 * struct smi_nl - a session with the family
 * @sk: the socket
 * @family: the family's id
 * @want: events to print before stopping, 0 for no limit
 * @seen: events printed
 * @error: the errno of the kernel's error reply, 0 when none came
 * @recs: where replies are collected
 */
struct smi_nl {
	struct nl_sock *sk;
	int family;
	unsigned long want;
	unsigned long seen;
	int error;
	struct smi_recs *recs;
};

static const char *state_name(uint32_t state, char *buf, size_t len)
{
	switch (state) {
	case SNPU_STATE_RUNNING:
		return "RUNNING";
	case SNPU_STATE_LOCKED:
		return "LOCKED";
	case SNPU_STATE_BACKED_UP:
		return "BACKED_UP";
	}
	snprintf(buf, len, "%u", state);
	return buf;
}

static uint32_t get_u32(struct nlattr **tb, int type)
{
	return tb[type] ? nla_get_u32(tb[type]) : 0;
}

/*
 * Parse a message of the family: its attributes into @tb and its kind,
 * or 0 for a message that is not the family's or does not parse.
 */
static uint32_t smi_parse(struct smi_nl *s, struct nl_msg *msg,
			  struct nlattr **tb, uint8_t *cmd)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);

	if (nlh->nlmsg_type != s->family ||
	    genlmsg_parse(nlh, 0, tb, SNPU_ATTR_MAX, smi_policy) < 0 ||
	    !tb[SNPU_ATTR_KIND])
		return SNPU_KIND_UNSPEC;
	*cmd = genlmsg_hdr(nlh)->cmd;
	return nla_get_u32(tb[SNPU_ATTR_KIND]);
}

/* Replies: every message of the family kept as a record. */
static int on_reply(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[SNPU_ATTR_MAX + 1];
	struct smi_nl *s = arg;
	struct smi_recs *rs = s->recs;
	struct smi_rec *r;
	uint32_t kind;
	uint8_t cmd = 0;
	int a;

	kind = smi_parse(s, msg, tb, &cmd);
	if (kind == SNPU_KIND_UNSPEC)
		return NL_OK;
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? 2 * rs->cap : 16;
		struct smi_rec *n = realloc(rs->r, cap * sizeof(*n));

		if (!n) {
			s->error = ENOMEM;
			return NL_STOP;
		}
		rs->r = n;
		rs->cap = cap;
	}
	r = &rs->r[rs->n++];
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	for (a = 1; a <= SNPU_ATTR_MAX; a++) {
		if (!tb[a])
			continue;
		r->has[a] = true;
		if (smi_policy[a].type == NLA_U64)
			r->v[a] = nla_get_u64(tb[a]);
		else if (smi_policy[a].type == NLA_S32)
			r->v[a] = (uint64_t)(int64_t)nla_get_s32(tb[a]);
		else if (smi_policy[a].type == NLA_U32)
			r->v[a] = nla_get_u32(tb[a]);
	}
	return NL_OK;
}

/* SNPU_CMD_EVENT: one line per transition, flushed at once. */
static int on_event(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[SNPU_ATTR_MAX + 1];
	struct smi_nl *s = arg;
	char ob[16], nb[16];
	uint8_t cmd = 0;
	int32_t result;

	if (smi_parse(s, msg, tb, &cmd) != SNPU_KIND_TRANSITION ||
	    cmd != SNPU_CMD_EVENT)
		return NL_OK;
	result = tb[SNPU_ATTR_RESULT] ? nla_get_s32(tb[SNPU_ATTR_RESULT]) : 0;
	if (json) {
		printf("{\"pid\": %u, \"dev\": %u, \"from\": \"%s\", \"to\": \"%s\", \"result\": %d, \"seq\": %u}\n",
		       get_u32(tb, SNPU_ATTR_PID),
		       get_u32(tb, SNPU_ATTR_DEV_INDEX),
		       state_name(get_u32(tb, SNPU_ATTR_OLD_STATE), ob,
				  sizeof(ob)),
		       state_name(get_u32(tb, SNPU_ATTR_NEW_STATE), nb,
				  sizeof(nb)),
		       result, get_u32(tb, SNPU_ATTR_SEQ));
		fflush(stdout);
		s->seen++;
		return s->want && s->seen >= s->want ? NL_STOP : NL_OK;
	}
	printf("pid %u snpu%u %s -> %s result %d",
	       get_u32(tb, SNPU_ATTR_PID), get_u32(tb, SNPU_ATTR_DEV_INDEX),
	       state_name(get_u32(tb, SNPU_ATTR_OLD_STATE), ob, sizeof(ob)),
	       state_name(get_u32(tb, SNPU_ATTR_NEW_STATE), nb, sizeof(nb)),
	       result);
	if (result < 0 && strerrorname_np(-result))
		printf(" (%s)", strerrorname_np(-result));
	if (tb[SNPU_ATTR_SEQ])
		printf(" seq %u", nla_get_u32(tb[SNPU_ATTR_SEQ]));
	putchar('\n');
	fflush(stdout);
	s->seen++;
	return s->want && s->seen >= s->want ? NL_STOP : NL_OK;
}

/* The kernel's error reply: keep its errno for the message. */
static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *err, void *arg)
{
	struct smi_nl *s = arg;

	s->error = -err->error;
	return NL_STOP;
}

static int smi_connect(struct smi_nl *s)
{
	int ret;

	memset(s, 0, sizeof(*s));
	s->sk = nl_socket_alloc();
	if (!s->sk) {
		fprintf(stderr, "snpu-smi: out of memory\n");
		return -1;
	}
	ret = genl_connect(s->sk);
	if (ret < 0) {
		fprintf(stderr, "snpu-smi: generic netlink: %s\n",
			nl_geterror(ret));
		goto fail;
	}
	s->family = genl_ctrl_resolve(s->sk, SNPU_GENL_NAME);
	if (s->family < 0) {
		fprintf(stderr,
			"snpu-smi: no generic netlink family \"%s\" (is the module loaded?)\n",
			SNPU_GENL_NAME);
		goto fail;
	}
	return 0;

fail:
	nl_socket_free(s->sk);
	s->sk = NULL;
	return -1;
}

/* Report a failed step (the kernel's errno if it sent one); exit status. */
static int smi_fail(struct smi_nl *s, const char *what, int ret)
{
	if (s->error)
		fprintf(stderr, "snpu-smi: %s: %s\n", what, strerror(s->error));
	else
		fprintf(stderr, "snpu-smi: %s: %s\n", what, nl_geterror(ret));
	nl_socket_free(s->sk);
	return 1;
}

/*
 * Send @cmd (a dump, or about device @one) and collect the replies in
 * @rs. Return: 0, or 1 after reporting the failure.
 */
static int smi_request(uint8_t cmd, long one, struct smi_recs *rs)
{
	struct smi_nl s;
	struct nl_msg *msg;
	int ret;

	if (smi_connect(&s))
		return 1;
	s.recs = rs;
	nl_socket_modify_cb(s.sk, NL_CB_VALID, NL_CB_CUSTOM, on_reply, &s);
	nl_socket_modify_err_cb(s.sk, NL_CB_CUSTOM, on_error, &s);

	msg = nlmsg_alloc();
	if (!msg)
		return smi_fail(&s, "request", -NLE_NOMEM);
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, s.family, 0,
			 one < 0 ? NLM_F_DUMP : 0, cmd, SNPU_GENL_VERSION) ||
	    (one >= 0 && nla_put_u32(msg, SNPU_ATTR_DEV_INDEX, one) < 0)) {
		nlmsg_free(msg);
		return smi_fail(&s, "request", -NLE_NOMEM);
	}
	ret = nl_send_auto(s.sk, msg);
	nlmsg_free(msg);
	if (ret < 0)
		return smi_fail(&s, "send", ret);

	/* A dump ends with NLMSG_DONE; a request with its ack. */
	ret = nl_recvmsgs_default(s.sk);
	if (ret >= 0 && !s.error && one >= 0)
		ret = nl_wait_for_ack(s.sk);
	if (ret < 0 || s.error)
		return smi_fail(&s, one < 0 ? "dump" : "get", ret);
	nl_socket_free(s.sk);
	return 0;
}

/* A JSON member "name": value of attribute @a of @r. */
static void json_attr(const struct smi_rec *r, const char *name, int a,
		      bool *first)
{
	if (!r->has[a])
		return;
	printf("%s\"%s\": ", *first ? "" : ", ", name);
	if (smi_policy[a].type == NLA_S32)
		printf("%lld", (long long)(int64_t)r->v[a]);
	else
		printf("%llu", (unsigned long long)r->v[a]);
	*first = false;
}

struct smi_field {
	const char *name;
	int attr;
};

static const struct smi_field device_fields[] = {
	{ "index", SNPU_ATTR_DEV_INDEX },
	{ "cores", SNPU_ATTR_DEV_CORES },
	{ "mem_total", SNPU_ATTR_DEV_MEM_TOTAL },
	{ "mem_used", SNPU_ATTR_DEV_MEM_USED },
	{ "contexts", SNPU_ATTR_DEV_CONTEXTS },
	{ NULL, 0 },
};

static const struct smi_field process_fields[] = {
	{ "pid", SNPU_ATTR_PID },
	{ "seq", SNPU_ATTR_SEQ },
	{ "contexts", SNPU_ATTR_CONTEXTS },
	{ "bg_threads", SNPU_ATTR_BG_THREADS },
	{ "image_bytes", SNPU_ATTR_IMAGE_BYTES },
	{ NULL, 0 },
};

static const struct smi_field dev_stats_fields[] = {
	{ "index", SNPU_ATTR_DEV_INDEX },
	{ "tasks", SNPU_ATTR_STAT_TASKS },
	{ "tasks_failed", SNPU_ATTR_STAT_TASKS_FAILED },
	{ "cqes", SNPU_ATTR_STAT_CQES },
	{ "cq_overflows", SNPU_ATTR_STAT_CQ_OVERFLOWS },
	{ "ready_depth", SNPU_ATTR_STAT_READY_DEPTH },
	{ "ready_max", SNPU_ATTR_STAT_READY_MAX },
	{ "busy_ns", SNPU_ATTR_STAT_BUSY_NS },
	{ "blocks", SNPU_ATTR_STAT_BLOCKS },
	{ "snapshots", SNPU_ATTR_STAT_SNAPSHOTS },
	{ "snapshots_failed", SNPU_ATTR_STAT_SNAPSHOTS_FAILED },
	{ "snapshot_ns", SNPU_ATTR_STAT_SNAPSHOT_NS },
	{ "graph_launches", SNPU_ATTR_STAT_GRAPH_LAUNCHES },
	{ "hazard_visits", SNPU_ATTR_STAT_HAZARD_VISITS },
	{ NULL, 0 },
};

static const struct smi_field context_fields[] = {
	{ "dev", SNPU_ATTR_DEV_INDEX },
	{ "id", SNPU_ATTR_CTX_ID },
	{ "pid", SNPU_ATTR_PID },
	{ "mem_used", SNPU_ATTR_CTX_MEM_USED },
	{ "mem_limit", SNPU_ATTR_CTX_MEM_LIMIT },
	{ "host_used", SNPU_ATTR_CTX_HOST_USED },
	{ "host_limit", SNPU_ATTR_CTX_HOST_LIMIT },
	{ "streams", SNPU_ATTR_CTX_STREAMS },
	{ "streams_limit", SNPU_ATTR_CTX_STREAMS_LIMIT },
	{ "events", SNPU_ATTR_CTX_EVENTS },
	{ "events_limit", SNPU_ATTR_CTX_EVENTS_LIMIT },
	{ "tasks", SNPU_ATTR_CTX_TASKS },
	{ "tasks_limit", SNPU_ATTR_CTX_TASKS_LIMIT },
	{ "graphs", SNPU_ATTR_CTX_GRAPHS },
	{ "graphs_limit", SNPU_ATTR_CTX_GRAPHS_LIMIT },
	{ "graph_mem", SNPU_ATTR_CTX_GRAPH_MEM },
	{ "graph_mem_limit", SNPU_ATTR_CTX_GRAPH_MEM_LIMIT },
	{ "tasks_done", SNPU_ATTR_CTX_TASKS_DONE },
	{ NULL, 0 },
};

#define U(a)	((unsigned long long)r->v[SNPU_ATTR_##a])

/* One record as a line of text. */
static void print_line(const struct smi_rec *r)
{
	char buf[16];

	switch (r->kind) {
	case SNPU_KIND_DEVICE:
		printf("snpu%llu cores %llu mem_total %llu mem_used %llu contexts %llu\n",
		       U(DEV_INDEX), U(DEV_CORES), U(DEV_MEM_TOTAL),
		       U(DEV_MEM_USED), U(DEV_CONTEXTS));
		break;
	case SNPU_KIND_PROCESS:
		printf("pid %llu %s seq %llu contexts %llu bg_threads %llu image_bytes %llu\n",
		       U(PID), state_name(U(STATE), buf, sizeof(buf)), U(SEQ),
		       U(CONTEXTS), U(BG_THREADS), U(IMAGE_BYTES));
		break;
	case SNPU_KIND_DEV_STATS:
		printf("snpu%llu tasks %llu failed %llu cqes %llu cq_overflows %llu ready %llu ready_max %llu blocks %llu busy_ns %llu snapshots %llu (%llu failed, %llu ns) graph_launches %llu hazard_visits %llu\n",
		       U(DEV_INDEX), U(STAT_TASKS), U(STAT_TASKS_FAILED),
		       U(STAT_CQES), U(STAT_CQ_OVERFLOWS), U(STAT_READY_DEPTH),
		       U(STAT_READY_MAX), U(STAT_BLOCKS), U(STAT_BUSY_NS),
		       U(STAT_SNAPSHOTS), U(STAT_SNAPSHOTS_FAILED),
		       U(STAT_SNAPSHOT_NS), U(STAT_GRAPH_LAUNCHES),
		       U(STAT_HAZARD_VISITS));
		break;
	case SNPU_KIND_CONTEXT:
		printf("snpu%llu ctx %llu pid %llu %s mem %llu/%llu host %llu/%llu streams %llu/%llu events %llu/%llu tasks %llu/%llu graphs %llu/%llu graph_mem %llu/%llu tasks_done %llu\n",
		       U(DEV_INDEX), U(CTX_ID), U(PID),
		       state_name(U(STATE), buf, sizeof(buf)),
		       U(CTX_MEM_USED), U(CTX_MEM_LIMIT), U(CTX_HOST_USED),
		       U(CTX_HOST_LIMIT), U(CTX_STREAMS), U(CTX_STREAMS_LIMIT),
		       U(CTX_EVENTS), U(CTX_EVENTS_LIMIT), U(CTX_TASKS),
		       U(CTX_TASKS_LIMIT), U(CTX_GRAPHS), U(CTX_GRAPHS_LIMIT),
		       U(CTX_GRAPH_MEM), U(CTX_GRAPH_MEM_LIMIT),
		       U(CTX_TASKS_DONE));
		break;
	}
}

#undef U

/* One record as a JSON object, or as a line of text. */
static void print_rec(const struct smi_rec *r, const struct smi_field *f)
{
	bool first = true;
	char buf[16];

	if (json) {
		putchar('{');
		for (; f->name; f++)
			json_attr(r, f->name, f->attr, &first);
		if (r->has[SNPU_ATTR_STATE])
			printf(", \"state\": \"%s\"",
			       state_name(r->v[SNPU_ATTR_STATE], buf,
					  sizeof(buf)));
		putchar('}');
		return;
	}
	print_line(r);
}

/*
 * The records of @rs of each kind in @kinds, as JSON arrays named by
 * @names in one object, or as lines.
 */
static void print_recs(const struct smi_recs *rs, const uint32_t *kinds,
		       const char *const *names,
		       const struct smi_field *const *fields, unsigned int nk)
{
	unsigned int k;
	size_t i;

	if (json)
		putchar('{');
	for (k = 0; k < nk; k++) {
		bool first = true;

		if (json)
			printf("%s\"%s\": [", k ? ", " : "", names[k]);
		for (i = 0; i < rs->n; i++) {
			if (rs->r[i].kind != kinds[k])
				continue;
			if (json && !first)
				fputs(", ", stdout);
			print_rec(&rs->r[i], fields[k]);
			first = false;
		}
		if (json)
			putchar(']');
	}
	if (json)
		puts("}");
}

/* -d N of the netlink subcommands. Return: 0 or 2. */
static int parse_dev(const char *arg, long *one)
{
	char *end;

	errno = 0;
	*one = strtol(arg, &end, 10);
	if (*arg == '\0' || *end || *one < 0 || *one > UINT32_MAX || errno) {
		fprintf(stderr, "snpu-smi: bad device '%s'\n", arg);
		return 2;
	}
	return 0;
}

/*
 * snpu-smi status|stats [-j] [-d N]: one netlink request, its records of
 * two kinds printed under @names.
 */
static int cmd_records(int argc, char **argv, const char *verb, uint8_t cmd,
		       const uint32_t kinds[2], const char *const names[2],
		       const struct smi_field *const fields[2])
{
	struct smi_recs rs = { 0 };
	long one = -1;
	int opt, ret;

	while ((opt = getopt(argc, argv, "d:jh")) != -1) {
		switch (opt) {
		case 'd':
			if (parse_dev(optarg, &one))
				return 2;
			break;
		case 'j':
			json = 1;
			break;
		default:
			fprintf(stderr, "usage: snpu-smi %s [-j] [-d N]\n", verb);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "usage: snpu-smi %s [-j] [-d N]\n", verb);
		return 2;
	}
	ret = smi_request(cmd, one, &rs);
	if (!ret)
		print_recs(&rs, kinds, names, fields, 2);
	free(rs.r);
	return ret;
}

/* snpu-smi status [-d N]: a dump of the family, or one device. */
static int cmd_status(int argc, char **argv)
{
	static const uint32_t kinds[] = { SNPU_KIND_DEVICE, SNPU_KIND_PROCESS };
	static const char *const names[] = { "devices", "processes" };
	static const struct smi_field *const fields[] = { device_fields,
							  process_fields };

	return cmd_records(argc, argv, "status", SNPU_CMD_GET, kinds, names,
			   fields);
}

/* snpu-smi stats [-d N]: device counters and context usage. */
static int cmd_stats(int argc, char **argv)
{
	static const uint32_t kinds[] = { SNPU_KIND_DEV_STATS,
					  SNPU_KIND_CONTEXT };
	static const char *const names[] = { "devices", "contexts" };
	static const struct smi_field *const fields[] = { dev_stats_fields,
							  context_fields };

	return cmd_records(argc, argv, "stats", SNPU_CMD_STATS, kinds, names,
			   fields);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* snpu-smi events [-n COUNT] [-t SECS]: print transitions as they come. */
static int cmd_events(int argc, char **argv)
{
	const char *usage = "usage: snpu-smi events [-j] [-n COUNT] [-t SECS]\n";
	double deadline = 0;
	unsigned long want = 0;
	struct smi_nl s;
	int opt, grp, ret;

	while ((opt = getopt(argc, argv, "n:t:jh")) != -1) {
		char *end;
		double secs;

		switch (opt) {
		case 'j':
			json = 1;
			break;
		case 'n':
			errno = 0;
			want = strtoul(optarg, &end, 10);
			if (*optarg == '\0' || *optarg == '-' || *end || errno) {
				fprintf(stderr, "snpu-smi: bad count '%s'\n", optarg);
				return 2;
			}
			break;
		case 't':
			secs = strtod(optarg, &end);
			if (*optarg == '\0' || *end || !(secs > 0) || secs > 1e9) {
				fprintf(stderr, "snpu-smi: bad time '%s'\n", optarg);
				return 2;
			}
			deadline = now_s() + secs;
			break;
		default:
			fputs(usage, stderr);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind != argc) {
		fputs(usage, stderr);
		return 2;
	}

	if (smi_connect(&s))
		return 1;
	s.want = want;
	grp = genl_ctrl_resolve_grp(s.sk, SNPU_GENL_NAME, SNPU_GENL_MCGRP_EVENTS);
	if (grp < 0)
		return smi_fail(&s, "group \"" SNPU_GENL_MCGRP_EVENTS "\"", grp);
	/* Multicasts carry no sequence number of ours. */
	nl_socket_disable_seq_check(s.sk);
	nl_socket_modify_cb(s.sk, NL_CB_VALID, NL_CB_CUSTOM, on_event, &s);
	ret = nl_socket_add_membership(s.sk, grp);
	if (ret == -NLE_PERM) {
		/* Events name every user's processes: privileged only. */
		fprintf(stderr,
			"snpu-smi: listening for snpu events needs CAP_SYS_ADMIN (run it as root)\n");
		nl_socket_free(s.sk);
		return 1;
	}
	if (ret < 0)
		return smi_fail(&s, "join group", ret);
	ret = nl_socket_set_nonblocking(s.sk);
	if (ret < 0)
		return smi_fail(&s, "socket", ret);
	/* Subscribed: from here on no transition is missed. */
	fprintf(stderr, "snpu-smi: listening for snpu events\n");

	while (!want || s.seen < want) {
		struct pollfd pfd = { .fd = nl_socket_get_fd(s.sk),
				      .events = POLLIN };
		int timeout = -1;

		if (deadline) {
			double left = deadline - now_s();

			if (left <= 0)
				break;
			timeout = left * 1000 + 1 > INT_MAX ? INT_MAX :
				  (int)(left * 1000) + 1;
		}
		ret = poll(&pfd, 1, timeout);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0) {
			perror("snpu-smi: poll");
			nl_socket_free(s.sk);
			return 1;
		}
		if (!ret)
			continue;
		ret = nl_recvmsgs_default(s.sk);
		if (ret == -NLE_AGAIN)
			continue;
		if (ret == -NLE_NOMEM) {
			/* ENOBUFS: the kernel dropped events for us. */
			fprintf(stderr, "snpu-smi: events lost (receive buffer overrun)\n");
			continue;
		}
		if (ret < 0)
			return smi_fail(&s, "receive", ret);
	}
	nl_socket_free(s.sk);
	if (want && s.seen < want) {
		fprintf(stderr, "snpu-smi: timed out after %lu of %lu events\n",
			s.seen, want);
		return 1;
	}
	return 0;
}

/* A process in top: its contexts summed. */
struct top_proc {
	uint32_t pid;
	uint32_t state;
	uint32_t contexts;
	uint64_t mem, host, streams, tasks;
	double rate;
	/* From fdinfo: -1 when none of its files could be read. */
	int64_t compute_ns;
	double compute_pct;
};

/*
 * What top reads besides netlink: each device's busy time (sysfs) and
 * each context's compute time (fdinfo, by its drm-client-id, which is the
 * context's id), with the engine's capacity (cores).
 */
struct top_busy {
	uint64_t id;
	uint64_t ns;
	uint32_t cores;
};

struct top_sample {
	struct top_busy *dev, *ctx;
	size_t ndev, nctx, capctx;
};

static const struct top_busy *top_busy_find(const struct top_busy *b,
					    size_t n, uint64_t id)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i].id == id)
			return &b[i];
	return NULL;
}

/* A decimal file of /sys/class/misc/snpuN. Return: 0 or -1. */
static int sysfs_u64(uint64_t index, const char *attr, uint64_t *val)
{
	char path[96];
	unsigned long long v;
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/sys/class/misc/snpu%llu/%s",
		 (unsigned long long)index, attr);
	f = fopen(path, "re");
	if (!f)
		return -1;
	ok = fscanf(f, "%llu", &v) == 1;
	fclose(f);
	if (!ok)
		return -1;
	*val = v;
	return 0;
}

/*
 * The snpu files among /proc/@pid/fdinfo/ into @smp (each context once,
 * however many fds name it). A process of another user is not readable
 * without privilege: it adds nothing.
 */
static void top_scan_fdinfo(uint32_t pid, struct top_sample *smp)
{
	char path[64], line[256];
	struct dirent *de;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%u/fdinfo", pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((de = readdir(dir))) {
		struct top_busy b = { 0 };
		bool snpu = false, id = false;
		FILE *f;
		int fd;

		if (de->d_name[0] == '.')
			continue;
		fd = openat(dirfd(dir), de->d_name, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		f = fdopen(fd, "re");
		if (!f) {
			close(fd);
			continue;
		}
		while (fgets(line, sizeof(line), f)) {
			unsigned long long v;

			if (!strcmp(line, "drm-driver:\tsnpu\n"))
				snpu = true;
			else if (sscanf(line, "drm-client-id:\t%llu", &v) == 1)
				b.id = v, id = true;
			else if (sscanf(line, "drm-engine-compute:\t%llu", &v) == 1)
				b.ns = v;
			else if (sscanf(line, "drm-engine-capacity-compute:\t%llu",
					&v) == 1)
				b.cores = v;
		}
		fclose(f);
		if (!snpu || !id || top_busy_find(smp->ctx, smp->nctx, b.id))
			continue;
		if (smp->nctx == smp->capctx) {
			size_t cap = smp->capctx ? 2 * smp->capctx : 16;
			struct top_busy *nb = realloc(smp->ctx, cap * sizeof(*nb));

			if (!nb)
				break;
			smp->ctx = nb;
			smp->capctx = cap;
		}
		smp->ctx[smp->nctx++] = b;
	}
	closedir(dir);
}

/* Fill @smp for the devices and processes of @cur. Return: 0 or -ENOMEM. */
static int top_sample(const struct smi_recs *cur, struct top_sample *smp)
{
	size_t i, j;

	smp->ndev = 0;
	smp->nctx = 0;
	free(smp->dev);
	smp->dev = calloc(cur->n + 1, sizeof(*smp->dev));
	if (!smp->dev)
		return -ENOMEM;
	for (i = 0; i < cur->n; i++) {
		const struct smi_rec *r = &cur->r[i];
		struct top_busy *d = &smp->dev[smp->ndev];
		uint64_t cores;

		if (r->kind == SNPU_KIND_DEV_STATS) {
			d->id = r->v[SNPU_ATTR_DEV_INDEX];
			if (sysfs_u64(d->id, "busy_ns", &d->ns) ||
			    sysfs_u64(d->id, "cores", &cores))
				continue;
			d->cores = cores;
			smp->ndev++;
			continue;
		}
		if (r->kind != SNPU_KIND_CONTEXT)
			continue;
		/* Each process once. */
		for (j = 0; j < i; j++)
			if (cur->r[j].kind == SNPU_KIND_CONTEXT &&
			    cur->r[j].v[SNPU_ATTR_PID] == r->v[SNPU_ATTR_PID])
				break;
		if (j == i)
			top_scan_fdinfo(r->v[SNPU_ATTR_PID], smp);
	}
	return 0;
}

/* Percent of @b's engine busy since @prev (a sample @dt seconds before). */
static double top_busy_pct(const struct top_busy *b,
			   const struct top_busy *prev, size_t nprev, double dt)
{
	const struct top_busy *p = top_busy_find(prev, nprev, b->id);
	uint64_t ns = p ? b->ns - p->ns : b->ns;

	if (!(dt > 0) || !b->cores)
		return 0;
	return ns / (dt * 1e9 * b->cores) * 100;
}

/* Tasks a context completed since @prev was taken (all, if it is new). */
static uint64_t top_delta(const struct smi_rec *c, const struct smi_recs *prev)
{
	uint64_t done = c->v[SNPU_ATTR_CTX_TASKS_DONE];
	size_t i;

	for (i = 0; i < prev->n; i++) {
		const struct smi_rec *p = &prev->r[i];

		if (p->kind == SNPU_KIND_CONTEXT &&
		    p->v[SNPU_ATTR_CTX_ID] == c->v[SNPU_ATTR_CTX_ID] &&
		    p->v[SNPU_ATTR_DEV_INDEX] == c->v[SNPU_ATTR_DEV_INDEX])
			return done - p->v[SNPU_ATTR_CTX_TASKS_DONE];
	}
	return done;
}

/* Tasks device @dev completed since @prev. */
static uint64_t top_dev_delta(const struct smi_rec *d,
			      const struct smi_recs *prev)
{
	size_t i;

	for (i = 0; i < prev->n; i++)
		if (prev->r[i].kind == SNPU_KIND_DEV_STATS &&
		    prev->r[i].v[SNPU_ATTR_DEV_INDEX] ==
		    d->v[SNPU_ATTR_DEV_INDEX])
			return d->v[SNPU_ATTR_STAT_TASKS] -
			       prev->r[i].v[SNPU_ATTR_STAT_TASKS];
	return 0;
}

/* One refresh of top: @cur against @prev, @dt seconds apart (0: first). */
static int top_print(const struct smi_recs *cur, const struct smi_recs *prev,
		     const struct top_sample *sc, const struct top_sample *sp,
		     double dt)
{
	struct top_proc *tp = calloc(cur->n + 1, sizeof(*tp));
	const struct top_busy *b;
	size_t i, j, np = 0;
	bool first = true;
	char buf[16];

	if (!tp)
		return -ENOMEM;
	for (i = 0; i < cur->n; i++) {
		const struct smi_rec *c = &cur->r[i];
		uint32_t pid = c->v[SNPU_ATTR_PID];

		if (c->kind != SNPU_KIND_CONTEXT)
			continue;
		for (j = 0; j < np && tp[j].pid != pid; j++)
			;
		if (j == np) {
			np++;
			tp[j].pid = pid;
			tp[j].state = c->v[SNPU_ATTR_STATE];
			tp[j].compute_ns = -1;
		}
		tp[j].contexts++;
		b = top_busy_find(sc->ctx, sc->nctx, c->v[SNPU_ATTR_CTX_ID]);
		if (b) {
			if (tp[j].compute_ns < 0)
				tp[j].compute_ns = 0;
			tp[j].compute_ns += b->ns;
			tp[j].compute_pct += top_busy_pct(b, sp->ctx, sp->nctx,
							  dt);
		}
		tp[j].mem += c->v[SNPU_ATTR_CTX_MEM_USED];
		tp[j].host += c->v[SNPU_ATTR_CTX_HOST_USED];
		tp[j].streams += c->v[SNPU_ATTR_CTX_STREAMS];
		tp[j].tasks += c->v[SNPU_ATTR_CTX_TASKS];
		if (dt > 0)
			tp[j].rate += top_delta(c, prev) / dt;
	}

	if (json) {
		printf("{\"interval\": %.3f, \"devices\": [", dt);
		for (i = 0; i < cur->n; i++) {
			const struct smi_rec *d = &cur->r[i];

			if (d->kind != SNPU_KIND_DEV_STATS)
				continue;
			b = top_busy_find(sc->dev, sc->ndev,
					  d->v[SNPU_ATTR_DEV_INDEX]);
			printf("%s{\"index\": %llu, \"tasks_per_s\": %.1f, \"ready_depth\": %llu, \"busy_ns\": %llu, \"busy_pct\": %.1f}",
			       first ? "" : ", ",
			       (unsigned long long)d->v[SNPU_ATTR_DEV_INDEX],
			       dt > 0 ? top_dev_delta(d, prev) / dt : 0.0,
			       (unsigned long long)d->v[SNPU_ATTR_STAT_READY_DEPTH],
			       b ? (unsigned long long)b->ns : 0ULL,
			       b ? top_busy_pct(b, sp->dev, sp->ndev, dt) : 0.0);
			first = false;
		}
		fputs("], \"processes\": [", stdout);
		for (j = 0; j < np; j++) {
			printf("%s{\"pid\": %u, \"state\": \"%s\", \"contexts\": %u, \"mem_used\": %llu, \"host_used\": %llu, \"streams\": %llu, \"tasks\": %llu, \"tasks_per_s\": %.1f, ",
			       j ? ", " : "", tp[j].pid,
			       state_name(tp[j].state, buf, sizeof(buf)),
			       tp[j].contexts, (unsigned long long)tp[j].mem,
			       (unsigned long long)tp[j].host,
			       (unsigned long long)tp[j].streams,
			       (unsigned long long)tp[j].tasks, tp[j].rate);
			if (tp[j].compute_ns < 0)
				fputs("\"compute_ns\": null, \"compute_pct\": null}",
				      stdout);
			else
				printf("\"compute_ns\": %lld, \"compute_pct\": %.1f}",
				       (long long)tp[j].compute_ns,
				       tp[j].compute_pct);
		}
		puts("]}");
		fflush(stdout);
		free(tp);
		return 0;
	}

	/* A terminal is redrawn; a pipe gets one block per refresh. */
	if (isatty(STDOUT_FILENO))
		fputs("\033[H\033[2J", stdout);
	for (i = 0; i < cur->n; i++) {
		const struct smi_rec *d = &cur->r[i];

		if (d->kind != SNPU_KIND_DEV_STATS)
			continue;
		b = top_busy_find(sc->dev, sc->ndev, d->v[SNPU_ATTR_DEV_INDEX]);
		printf("snpu%llu  busy %5.1f%%  tasks/s %10.1f  ready %llu (max %llu)  tasks %llu  failed %llu\n",
		       (unsigned long long)d->v[SNPU_ATTR_DEV_INDEX],
		       b ? top_busy_pct(b, sp->dev, sp->ndev, dt) : 0.0,
		       dt > 0 ? top_dev_delta(d, prev) / dt : 0.0,
		       (unsigned long long)d->v[SNPU_ATTR_STAT_READY_DEPTH],
		       (unsigned long long)d->v[SNPU_ATTR_STAT_READY_MAX],
		       (unsigned long long)d->v[SNPU_ATTR_STAT_TASKS],
		       (unsigned long long)d->v[SNPU_ATTR_STAT_TASKS_FAILED]);
	}
	printf("\n%8s %-10s %4s %10s %10s %7s %8s %10s %8s\n", "PID", "STATE",
	       "CTX", "MEM_MiB", "HOST_MiB", "STREAMS", "INFLIGHT", "TASKS/S",
	       "COMPUTE");
	for (j = 0; j < np; j++) {
		printf("%8u %-10s %4u %10.1f %10.1f %7llu %8llu %10.1f ",
		       tp[j].pid, state_name(tp[j].state, buf, sizeof(buf)),
		       tp[j].contexts, tp[j].mem / 1048576.0,
		       tp[j].host / 1048576.0,
		       (unsigned long long)tp[j].streams,
		       (unsigned long long)tp[j].tasks, tp[j].rate);
		if (tp[j].compute_ns < 0)
			printf("%8s\n", "-");
		else
			printf("%7.1f%%\n", tp[j].compute_pct);
	}
	fflush(stdout);
	free(tp);
	return 0;
}

/* snpu-smi top [-i SECS] [-n COUNT]: refresh every SECS, COUNT times. */
static int cmd_top(int argc, char **argv)
{
	const char *usage = "usage: snpu-smi top [-j] [-i SECS] [-n COUNT]\n";
	struct smi_recs cur = { 0 }, prev = { 0 }, tmp;
	struct top_sample sc = { 0 }, sp = { 0 }, stmp;
	unsigned long count = 0, n;
	double interval = 1, t0 = 0, t;
	int opt, ret = 0;

	while ((opt = getopt(argc, argv, "i:n:jh")) != -1) {
		char *end;

		switch (opt) {
		case 'i':
			interval = strtod(optarg, &end);
			if (*optarg == '\0' || *end || !(interval >= 0.01) ||
			    interval > 86400) {
				fprintf(stderr, "snpu-smi: bad interval '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'n':
			errno = 0;
			count = strtoul(optarg, &end, 10);
			if (*optarg == '\0' || *optarg == '-' || *end || errno) {
				fprintf(stderr, "snpu-smi: bad count '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'j':
			json = 1;
			break;
		default:
			fputs(usage, stderr);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind != argc) {
		fputs(usage, stderr);
		return 2;
	}

	for (n = 0; !count || n < count; n++) {
		if (n) {
			struct timespec ts = {
				.tv_sec = (time_t)interval,
				.tv_nsec = (long)((interval - (time_t)interval) * 1e9),
			};

			nanosleep(&ts, NULL);
		}
		cur.n = 0;
		ret = smi_request(SNPU_CMD_STATS, -1, &cur);
		if (ret)
			break;
		t = now_s();
		ret = top_sample(&cur, &sc);
		if (!ret)
			ret = top_print(&cur, &prev, &sc, &sp, n ? t - t0 : 0);
		if (ret) {
			fprintf(stderr, "snpu-smi: %s\n", strerror(-ret));
			ret = 1;
			break;
		}
		t0 = t;
		tmp = prev;
		prev = cur;
		cur = tmp;
		stmp = sp;
		sp = sc;
		sc = stmp;
	}
	free(cur.r);
	free(prev.r);
	free(sc.dev);
	free(sc.ctx);
	free(sp.dev);
	free(sp.ctx);
	return ret;
}

/* ---- trace: the tracepoints as a per-stream timeline ---------------------- */

#define TRACEFS "/sys/kernel/tracing"

/* One task of the trace, from its submit, start and completion events. */
struct tr_task {
	unsigned long long ctx, seq, queue_ns, run_ns;
	unsigned int dev, stream, op, kernel, block_dim;
	int core, result;
	bool ring, started, done;
	double submit_s, start_s, end_s;
};

struct tr_tasks {
	struct tr_task *t;
	size_t n, cap;
};

static const char *op_name(unsigned int op)
{
	static const char *const names[] = {
		[SNPU_OP_LAUNCH] = "launch", [SNPU_OP_COPY] = "copy",
		[SNPU_OP_MEMSET] = "memset", [SNPU_OP_EVENT_RECORD] = "record",
		[SNPU_OP_STREAM_WAIT] = "wait", [SNPU_OP_HOST_FUNC] = "host_func",
		[SNPU_OP_GRAPH] = "graph",
	};

	return op < sizeof(names) / sizeof(names[0]) && names[op] ?
	       names[op] : "?";
}

static unsigned long long tr_field(const char *ev, const char *key)
{
	const char *p = strstr(ev, key);

	return p ? strtoull(p + strlen(key), NULL, 0) : 0;
}

static int tr_ifield(const char *ev, const char *key)
{
	const char *p = strstr(ev, key);

	return p ? (int)strtol(p + strlen(key), NULL, 0) : 0;
}

/* The task (@dev, @ctx, @stream, @seq), added when @add. */
static struct tr_task *tr_find(struct tr_tasks *ts, unsigned int dev,
			       unsigned long long ctx, unsigned int stream,
			       unsigned long long seq, bool add)
{
	size_t i = ts->n;

	/* Events of one task are close together: look from the end. */
	while (i--) {
		struct tr_task *t = &ts->t[i];

		if (t->seq == seq && t->stream == stream && t->ctx == ctx &&
		    t->dev == dev)
			return t;
	}
	if (!add)
		return NULL;
	if (ts->n == ts->cap) {
		size_t cap = ts->cap ? 2 * ts->cap : 256;
		struct tr_task *n = realloc(ts->t, cap * sizeof(*n));

		if (!n)
			return NULL;
		ts->t = n;
		ts->cap = cap;
	}
	memset(&ts->t[ts->n], 0, sizeof(ts->t[0]));
	ts->t[ts->n].dev = dev;
	ts->t[ts->n].ctx = ctx;
	ts->t[ts->n].stream = stream;
	ts->t[ts->n].seq = seq;
	return &ts->t[ts->n++];
}

/*
 * Parse the text of tracefs's "trace" file: the task events of system
 * snpu, each line "... TIMESTAMP: snpu_task_EVENT: key=value ...".
 */
static int tr_parse(FILE *f, struct tr_tasks *ts)
{
	char line[512];

	while (fgets(line, sizeof(line), f)) {
		const char *ev = strstr(line, ": snpu_task_");
		const char *ts_end;
		struct tr_task *t;
		unsigned int dev, stream;
		unsigned long long ctx, seq;
		double when;

		if (line[0] == '#' || !ev)
			continue;
		/* The timestamp ends where the event name's ": " starts. */
		ts_end = ev;
		while (ts_end > line && ts_end[-1] != ' ')
			ts_end--;
		when = strtod(ts_end, NULL);
		ev += 2;
		dev = tr_field(ev, " dev=");
		ctx = tr_field(ev, " ctx=");
		stream = tr_field(ev, " stream=");
		seq = tr_field(ev, " seq=");
		t = tr_find(ts, dev, ctx, stream, seq,
			    !strncmp(ev, "snpu_task_submit:", 17));
		if (!t && !strncmp(ev, "snpu_task_submit:", 17))
			return -ENOMEM;
		if (!t)
			continue;	/* submitted before the trace began */
		if (!strncmp(ev, "snpu_task_submit:", 17)) {
			t->submit_s = when;
			t->op = tr_field(ev, " op=");
			t->kernel = tr_field(ev, " kernel=");
			t->block_dim = tr_field(ev, " block_dim=");
			t->ring = strstr(ev, "transport=ring");
		} else if (!strncmp(ev, "snpu_task_start:", 16)) {
			t->started = true;
			t->start_s = when;
			t->core = tr_ifield(ev, " core=");
		} else if (!strncmp(ev, "snpu_task_complete:", 19)) {
			t->done = true;
			t->end_s = when;
			t->result = tr_ifield(ev, " result=");
			t->queue_ns = tr_field(ev, " queue_ns=");
			t->run_ns = tr_field(ev, " run_ns=");
		}
	}
	return 0;
}

static int tr_cmp(const void *a, const void *b)
{
	const struct tr_task *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ctx != y->ctx)
		return x->ctx < y->ctx ? -1 : 1;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The timeline: per stream, its tasks in order, times from the first. */
static void tr_print(struct tr_tasks *ts)
{
	double t0 = 0;
	size_t i;

	qsort(ts->t, ts->n, sizeof(ts->t[0]), tr_cmp);
	for (i = 0; i < ts->n; i++)
		if (!t0 || ts->t[i].submit_s < t0)
			t0 = ts->t[i].submit_s;
	if (json)
		fputs("{\"streams\": [", stdout);
	for (i = 0; i < ts->n; i++) {
		const struct tr_task *t = &ts->t[i];
		bool first = !i || ts->t[i - 1].stream != t->stream ||
			     ts->t[i - 1].ctx != t->ctx ||
			     ts->t[i - 1].dev != t->dev;

		if (json) {
			if (first)
				printf("%s{\"dev\": %u, \"ctx\": %llu, \"stream\": %u, \"tasks\": [",
				       i ? "]}, " : "", t->dev, t->ctx,
				       t->stream);
			printf("%s{\"seq\": %llu, \"op\": \"%s\", \"kernel\": %u, \"block_dim\": %u, \"transport\": \"%s\", \"submit_s\": %.9f, \"started\": %s, \"core\": %d, \"completed\": %s, \"result\": %d, \"queue_ns\": %llu, \"run_ns\": %llu}",
			       first ? "" : ", ", t->seq, op_name(t->op),
			       t->kernel, t->block_dim,
			       t->ring ? "ring" : "ioctl", t->submit_s - t0,
			       t->started ? "true" : "false",
			       t->started ? t->core : -1,
			       t->done ? "true" : "false", t->result,
			       t->queue_ns, t->run_ns);
			continue;
		}
		if (first)
			printf("snpu%u ctx %llu stream %u\n", t->dev, t->ctx,
			       t->stream);
		printf("  seq %-6llu %-9s %-5s +%.6f s", t->seq,
		       op_name(t->op), t->ring ? "ring" : "ioctl",
		       t->submit_s - t0);
		if (t->started && t->core >= 0)
			printf("  core %d", t->core);
		else if (t->started)
			printf("  no core");
		if (t->done)
			printf("  queue %llu us  run %llu us  result %d",
			       t->queue_ns / 1000, t->run_ns / 1000, t->result);
		else
			printf("  (not complete)");
		putchar('\n');
	}
	if (json)
		puts(ts->n ? "]}]}" : "]}");
}

/* Write @s to tracefs file @name. Return: 0 or -errno. */
static int tr_write(const char *name, const char *s)
{
	char path[128];
	FILE *f;
	int ret = 0;

	snprintf(path, sizeof(path), TRACEFS "/%s", name);
	f = fopen(path, "we");
	if (!f)
		return -errno;
	if (fputs(s, f) < 0)
		ret = -EIO;
	if (fclose(f))
		ret = -errno;
	return ret;
}

/*
 * snpu-smi trace [-t SECS | -f FILE]: record the task events for SECS
 * seconds (root: it owns tracefs meanwhile), or read a trace saved from
 * tracefs, and print each stream's timeline.
 */
static int cmd_trace(int argc, char **argv)
{
	const char *usage = "usage: snpu-smi trace [-j] [-t SECS | -f FILE]\n";
	struct tr_tasks ts = { 0 };
	const char *file = NULL;
	double secs = 1;
	FILE *f;
	int opt, ret;

	while ((opt = getopt(argc, argv, "t:f:jh")) != -1) {
		char *end;

		switch (opt) {
		case 't':
			secs = strtod(optarg, &end);
			if (*optarg == '\0' || *end || !(secs > 0) || secs > 86400) {
				fprintf(stderr, "snpu-smi: bad time '%s'\n", optarg);
				return 2;
			}
			break;
		case 'f':
			file = optarg;
			break;
		case 'j':
			json = 1;
			break;
		default:
			fputs(usage, stderr);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind != argc) {
		fputs(usage, stderr);
		return 2;
	}

	if (!file) {
		struct timespec d = {
			.tv_sec = (time_t)secs,
			.tv_nsec = (long)((secs - (time_t)secs) * 1e9),
		};

		/* Comms are not needed; the task events carry their names. */
		ret = tr_write("tracing_on", "0");
		if (!ret)
			ret = tr_write("trace_clock", "mono");
		if (!ret)
			ret = tr_write("trace", "");
		if (!ret)
			ret = tr_write("events/snpu/enable", "1");
		if (!ret)
			ret = tr_write("tracing_on", "1");
		if (ret) {
			fprintf(stderr, "snpu-smi: %s: %s (root, tracefs mounted, module loaded?)\n",
				TRACEFS, strerror(-ret));
			return 1;
		}
		fprintf(stderr, "snpu-smi: tracing for %g s\n", secs);
		nanosleep(&d, NULL);
		tr_write("tracing_on", "0");
		tr_write("events/snpu/enable", "0");
		file = TRACEFS "/trace";
	}
	f = fopen(file, "re");
	if (!f) {
		fprintf(stderr, "snpu-smi: %s: %s\n", file, strerror(errno));
		return 1;
	}
	ret = tr_parse(f, &ts);
	fclose(f);
	if (ret) {
		fprintf(stderr, "snpu-smi: %s\n", strerror(-ret));
		free(ts.t);
		return 1;
	}
	tr_print(&ts);
	free(ts.t);
	return 0;
}

static int usage(const char *prog, int status)
{
	fprintf(status ? stderr : stdout,
		"usage: %s [-j] [-d N]           devices\n"
		"       %s [-j] status [-d N]    devices and processes\n"
		"       %s [-j] stats [-d N]     device counters, context usage\n"
		"       %s [-j] top [-i SECS] [-n COUNT]\n"
		"                                 per-process view, refreshed\n"
		"       %s [-j] events [-n COUNT] [-t SECS]\n"
		"                                 snapshot transitions as they come\n"
		"       %s [-j] trace [-t SECS | -f FILE]\n"
		"                                 per-stream timeline from the tracepoints\n"
		"  -j      JSON output (events, top: one object per line)\n"
		"  --help  this text; Documentation/snpu-smi.rst\n",
		prog, prog, prog, prog, prog, prog);
	return status;
}

int main(int argc, char **argv)
{
	unsigned int i;
	int opt, ret;
	long one = -1;

	const char *prog = argv[0];

	/* Options before the subcommand: -j, --help. */
	while (argc > 1 && (!strcmp(argv[1], "-j") ||
			    !strcmp(argv[1], "--json") ||
			    !strcmp(argv[1], "--help"))) {
		if (!strcmp(argv[1], "--help"))
			return usage(prog, 0);
		json = 1;
		argv[1] = argv[0];
		argc--;
		argv++;
	}
	if (argc > 1 && !strcmp(argv[1], "status"))
		return cmd_status(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "stats"))
		return cmd_stats(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "top"))
		return cmd_top(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "events"))
		return cmd_events(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "trace"))
		return cmd_trace(argc - 1, argv + 1);

	while ((opt = getopt(argc, argv, "d:jh")) != -1) {
		switch (opt) {
		case 'j':
			json = 1;
			break;
		case 'd': {
			char *end;

			one = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end || one < 0) {
				fprintf(stderr, "snpu-smi: bad device '%s'\n", optarg);
				return 2;
			}
			break;
		}
		default:
			return usage(prog, opt == 'h' ? 0 : 2);
		}
	}
	if (optind != argc)
		return usage(prog, 2);

	if (json)
		fputs("{\"devices\": [", stdout);
	if (one >= 0) {
		ret = show(one, true);
		if (json)
			puts("]}");
		if (ret)
			fprintf(stderr, "snpu%ld: %s\n", one, strerror(-ret));
		return ret ? 1 : 0;
	}

	for (i = 0;; i++) {
		ret = show(i, i == 0);
		if (ret == -ENOENT)
			break;
		if (ret) {
			if (json)
				puts("]}");
			fprintf(stderr, "snpu%u: %s\n", i, strerror(-ret));
			return 1;
		}
	}
	if (json)
		puts("]}");
	if (i == 0) {
		fprintf(stderr, "no snpu device (is the module loaded?)\n");
		return 1;
	}
	return 0;
}
