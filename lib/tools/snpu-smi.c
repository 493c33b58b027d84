// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * snpu-smi: show the snpu devices of this machine.
 *
 *   snpu-smi          one block per device
 *   snpu-smi -d N     device N only
 *   snpu-smi status [-d N]
 *                     devices and processes, from the generic netlink
 *                     family "snpu" (one device with -d); without
 *                     CAP_SYS_ADMIN, only the caller's own processes
 *   snpu-smi events [-n COUNT] [-t SECS]
 *                     one line per snapshot transition, from the
 *                     family's multicast group "events" (needs
 *                     CAP_SYS_ADMIN)
 *
 * The netlink subcommands use libnl-genl (Documentation/netlink.rst).
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
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

static int show(unsigned int index)
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
};

/**
 * struct smi_nl - a session with the family
 * @sk: the socket
 * @family: the family's id
 * @want: events to print before stopping, 0 for no limit
 * @seen: events printed
 * @error: the errno of the kernel's error reply, 0 when none came
 */
struct smi_nl {
	struct nl_sock *sk;
	int family;
	unsigned long want;
	unsigned long seen;
	int error;
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

static uint64_t get_u64(struct nlattr **tb, int type)
{
	return tb[type] ? nla_get_u64(tb[type]) : 0;
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

static void print_device(struct nlattr **tb)
{
	printf("snpu%u cores %u mem_total %llu mem_used %llu contexts %u\n",
	       get_u32(tb, SNPU_ATTR_DEV_INDEX),
	       get_u32(tb, SNPU_ATTR_DEV_CORES),
	       (unsigned long long)get_u64(tb, SNPU_ATTR_DEV_MEM_TOTAL),
	       (unsigned long long)get_u64(tb, SNPU_ATTR_DEV_MEM_USED),
	       get_u32(tb, SNPU_ATTR_DEV_CONTEXTS));
}

static void print_process(struct nlattr **tb)
{
	char buf[16];

	printf("pid %u %s seq %u contexts %u bg_threads %u image_bytes %llu\n",
	       get_u32(tb, SNPU_ATTR_PID),
	       state_name(get_u32(tb, SNPU_ATTR_STATE), buf, sizeof(buf)),
	       get_u32(tb, SNPU_ATTR_SEQ),
	       get_u32(tb, SNPU_ATTR_CONTEXTS),
	       get_u32(tb, SNPU_ATTR_BG_THREADS),
	       (unsigned long long)get_u64(tb, SNPU_ATTR_IMAGE_BYTES));
}

/* Replies to SNPU_CMD_GET: one line per device or process. */
static int on_reply(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[SNPU_ATTR_MAX + 1];
	uint8_t cmd = 0;

	switch (smi_parse(arg, msg, tb, &cmd)) {
	case SNPU_KIND_DEVICE:
		print_device(tb);
		break;
	case SNPU_KIND_PROCESS:
		print_process(tb);
		break;
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

/* snpu-smi status [-d N]: a dump of the family, or one device. */
static int cmd_status(int argc, char **argv)
{
	struct smi_nl s;
	struct nl_msg *msg;
	long one = -1;
	int opt, ret;

	while ((opt = getopt(argc, argv, "d:h")) != -1) {
		switch (opt) {
		case 'd': {
			char *end;

			errno = 0;
			one = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end || one < 0 ||
			    one > UINT32_MAX || errno) {
				fprintf(stderr, "snpu-smi: bad device '%s'\n",
					optarg);
				return 2;
			}
			break;
		}
		default:
			fprintf(stderr, "usage: snpu-smi status [-d N]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "usage: snpu-smi status [-d N]\n");
		return 2;
	}

	if (smi_connect(&s))
		return 1;
	nl_socket_modify_cb(s.sk, NL_CB_VALID, NL_CB_CUSTOM, on_reply, &s);
	nl_socket_modify_err_cb(s.sk, NL_CB_CUSTOM, on_error, &s);

	msg = nlmsg_alloc();
	if (!msg)
		return smi_fail(&s, "request", -NLE_NOMEM);
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, s.family, 0,
			 one < 0 ? NLM_F_DUMP : 0, SNPU_CMD_GET,
			 SNPU_GENL_VERSION) ||
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

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* snpu-smi events [-n COUNT] [-t SECS]: print transitions as they come. */
static int cmd_events(int argc, char **argv)
{
	const char *usage = "usage: snpu-smi events [-n COUNT] [-t SECS]\n";
	double deadline = 0;
	unsigned long want = 0;
	struct smi_nl s;
	int opt, grp, ret;

	while ((opt = getopt(argc, argv, "n:t:h")) != -1) {
		char *end;
		double secs;

		switch (opt) {
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

static int usage(const char *prog, int status)
{
	fprintf(status ? stderr : stdout,
		"usage: %s [-d N]\n"
		"       %s status [-d N]\n"
		"       %s events [-n COUNT] [-t SECS]\n", prog, prog, prog);
	return status;
}

int main(int argc, char **argv)
{
	unsigned int i;
	int opt, ret;
	long one = -1;

	if (argc > 1 && !strcmp(argv[1], "status"))
		return cmd_status(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "events"))
		return cmd_events(argc - 1, argv + 1);

	while ((opt = getopt(argc, argv, "d:h")) != -1) {
		switch (opt) {
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
			return usage(argv[0], opt == 'h' ? 0 : 2);
		}
	}
	if (optind != argc)
		return usage(argv[0], 2);

	if (one >= 0) {
		ret = show(one);
		if (ret)
			fprintf(stderr, "snpu%ld: %s\n", one, strerror(-ret));
		return ret ? 1 : 0;
	}

	for (i = 0;; i++) {
		ret = show(i);
		if (ret == -ENOENT)
			break;
		if (ret) {
			fprintf(stderr, "snpu%u: %s\n", i, strerror(-ret));
			return 1;
		}
	}
	if (i == 0) {
		fprintf(stderr, "no snpu device (is the module loaded?)\n");
		return 1;
	}
	return 0;
}
