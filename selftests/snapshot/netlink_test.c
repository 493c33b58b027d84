// SPDX-License-Identifier: GPL-2.0
/*
 * The generic netlink family "snpu" (uapi/linux/snpu_netlink.h,
 * Documentation/netlink.rst) against the real driver: the family and its
 * group "events" as the controller and genl-ctrl-list report them,
 * SNPU_CMD_GET (one device, and the dump of devices and processes)
 * against sysfs and the snapshot ioctls, and one SNPU_CMD_EVENT per
 * attempted snapshot transition, refused ones included. The last tests
 * run snpu-smi's netlink subcommands.
 *
 * The test speaks netlink over a raw socket, without libnl: snpu-smi uses
 * libnl, so the two check each other. Transitions are made with the raw
 * SNPU_IOC_SNAPSHOT_* ioctls.
 *
 * Runs as root in the test VM with the module loaded with its default
 * parameters (devices=1, cores=4, mem_mb=256); every test runs in its own
 * process, which is the process the transitions are about. The tests of
 * who sees what drop a child to the user nobody (65534), or put it in a
 * new pid namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/snpu.h>
#include <linux/snpu_netlink.h>

#include "kselftest_harness.h"
#include "snpu_test.h"

#define DEV0		"/dev/snpu0"
#define SYSFS0		"/sys/class/misc/snpu0/"
#define NL_BUF		65536
/* Processes of the test of a dump that takes several reads. */
#define DUMP_CHILDREN	80
/* How long a reply or an event may take before the test fails. */
#define RECV_TIMEOUT_S	5

/* ---- raw generic netlink -------------------------------------------- */

/**
 * struct nlmsgs - the messages a request got back, in order
 * @buf: the messages, each at an NLMSG_ALIGN()ed offset
 * @len: bytes used in @buf
 * @count: number of messages
 */
struct nlmsgs {
	char buf[4 * NL_BUF];
	size_t len;
	int count;
};

/*
 * Bytes nl_transact() reads at a time. The kernel sizes a dump's buffers
 * by the largest read of the socket, so a small one splits a dump.
 */
static size_t nl_recv_len = NL_BUF;
/* The reads nl_transact() made. */
static int nl_reads;
/*
 * nl_transact() writes its request with send(), naming no destination,
 * as a program writing into a socket it was handed would: the kernel then
 * checks the socket opener's capabilities too (netlink_capable()).
 */
static int nl_send_unaddressed;

/* Return: a generic netlink socket with a receive timeout, or -1. */
static int nl_open(void)
{
	struct timeval tv = { .tv_sec = RECV_TIMEOUT_S };
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) {
		close(fd);
		return -1;
	}
	return fd;
}

static struct nlmsghdr *msg_init(void *buf, __u16 type, __u16 flags,
				 __u8 cmd, __u8 version)
{
	static __u32 seq;
	struct nlmsghdr *nlh = buf;
	struct genlmsghdr *g = NLMSG_DATA(nlh);

	memset(buf, 0, NLMSG_SPACE(GENL_HDRLEN));
	nlh->nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	nlh->nlmsg_seq = ++seq;
	g->cmd = cmd;
	g->version = version;
	return nlh;
}

static void msg_put(struct nlmsghdr *nlh, __u16 type, const void *data,
		    __u16 len)
{
	struct nlattr *a = (void *)((char *)nlh + NLMSG_ALIGN(nlh->nlmsg_len));

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	memcpy((char *)a + NLA_HDRLEN, data, len);
	nlh->nlmsg_len = NLMSG_ALIGN(nlh->nlmsg_len) + NLA_ALIGN(a->nla_len);
}

/* The attributes in @len bytes at @data, by type up to @max. */
static void parse(const void *data, int len, const struct nlattr **tb,
		  int max)
{
	const struct nlattr *a = data;

	memset(tb, 0, sizeof(*tb) * (max + 1));
	while (len >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
	       a->nla_len <= len) {
		int type = a->nla_type & NLA_TYPE_MASK;

		if (type <= max)
			tb[type] = a;
		len -= NLA_ALIGN(a->nla_len);
		a = (const void *)((const char *)a + NLA_ALIGN(a->nla_len));
	}
}

/* The attributes of a generic netlink message. */
static void parse_genl(const struct nlmsghdr *nlh, const struct nlattr **tb,
		       int max)
{
	parse((const char *)NLMSG_DATA(nlh) + GENL_HDRLEN,
	      nlh->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN), tb, max);
}

static const void *attr_data(const struct nlattr *a)
{
	return (const char *)a + NLA_HDRLEN;
}

static int attr_len(const struct nlattr *a)
{
	return a->nla_len - NLA_HDRLEN;
}

/* Integer attributes as long long: comparisons need no casts. */
static long long attr_u32(const struct nlattr *a)
{
	__u32 v = 0;

	if (a && attr_len(a) == sizeof(v))
		memcpy(&v, attr_data(a), sizeof(v));
	return v;
}

static long long attr_s32(const struct nlattr *a)
{
	__s32 v = 0;

	if (a && attr_len(a) == sizeof(v))
		memcpy(&v, attr_data(a), sizeof(v));
	return v;
}

static long long attr_u64(const struct nlattr *a)
{
	__u64 v = 0;

	if (a && attr_len(a) == sizeof(v))
		memcpy(&v, attr_data(a), sizeof(v));
	return (long long)v;
}

static __u8 genl_cmd(const struct nlmsghdr *nlh)
{
	return ((const struct genlmsghdr *)NLMSG_DATA(nlh))->cmd;
}

/*
 * Send @req, then collect its replies until NLMSG_DONE (a dump) or the
 * ack (a request with NLM_F_ACK).
 *
 * Return: 0, the -errno of the kernel's error reply, or -errno of a
 * failed send or receive (-EAGAIN when nothing came in time).
 */
static int nl_transact(int fd, struct nlmsghdr *req, struct nlmsgs *out)
{
	struct sockaddr_nl to = { .nl_family = AF_NETLINK };
	static char buf[NL_BUF];
	ssize_t n;

	out->len = 0;
	out->count = 0;
	if (nl_send_unaddressed)
		n = send(fd, req, req->nlmsg_len, 0);
	else
		n = sendto(fd, req, req->nlmsg_len, 0, (struct sockaddr *)&to,
			   sizeof(to));
	if (n != (ssize_t)req->nlmsg_len)
		return -errno;
	for (;;) {
		struct nlmsghdr *nlh;
		int len;

		n = recv(fd, buf, nl_recv_len, 0);
		if (n < 0)
			return -errno;
		nl_reads++;
		len = n;
		for (nlh = (void *)buf; NLMSG_OK(nlh, len);
		     nlh = NLMSG_NEXT(nlh, len)) {
			if (nlh->nlmsg_seq != req->nlmsg_seq)
				continue;
			if (nlh->nlmsg_type == NLMSG_DONE)
				return 0;
			if (nlh->nlmsg_type == NLMSG_ERROR)
				return ((struct nlmsgerr *)NLMSG_DATA(nlh))->error;
			if (out->len + NLMSG_ALIGN(nlh->nlmsg_len) >
			    sizeof(out->buf))
				return -E2BIG;
			memcpy(out->buf + out->len, nlh, nlh->nlmsg_len);
			out->len += NLMSG_ALIGN(nlh->nlmsg_len);
			out->count++;
		}
	}
}

/* The @i-th message of @m. */
static const struct nlmsghdr *nth(const struct nlmsgs *m, int i)
{
	const struct nlmsghdr *nlh = (const void *)m->buf;

	while (i--)
		nlh = (const void *)((const char *)nlh +
				     NLMSG_ALIGN(nlh->nlmsg_len));
	return nlh;
}

/**
 * struct family - what the controller reports of "snpu"
 * @id: the family id (netlink message type)
 * @version: its version
 * @maxattr: its largest attribute
 * @get_flags: GENL_CMD_CAP_* of SNPU_CMD_GET, 0 when not listed
 * @event_listed: SNPU_CMD_EVENT is listed as an operation
 * @events: id of the group "events", 0 when not found
 */
struct family {
	__u16 id;
	long long version;
	long long maxattr;
	long long get_flags;
	int event_listed;
	int events;
};

/* Return: 0 or -errno; CTRL_CMD_GETFAMILY of "snpu". */
static int resolve(int fd, struct family *f)
{
	const struct nlattr *tb[CTRL_ATTR_MAX + 1], *sub[CTRL_ATTR_MAX + 1];
	static struct nlmsgs m;
	char buf[256];
	struct nlmsghdr *req = msg_init(buf, GENL_ID_CTRL, NLM_F_ACK,
					CTRL_CMD_GETFAMILY, 1);
	const struct nlattr *a;
	int ret, len;

	memset(f, 0, sizeof(*f));
	msg_put(req, CTRL_ATTR_FAMILY_NAME, SNPU_GENL_NAME,
		sizeof(SNPU_GENL_NAME));
	ret = nl_transact(fd, req, &m);
	if (ret)
		return ret;
	if (m.count != 1)
		return -EPROTO;
	parse_genl(nth(&m, 0), tb, CTRL_ATTR_MAX);
	if (!tb[CTRL_ATTR_FAMILY_ID])
		return -EPROTO;
	memcpy(&f->id, attr_data(tb[CTRL_ATTR_FAMILY_ID]), sizeof(f->id));
	f->version = attr_u32(tb[CTRL_ATTR_VERSION]);
	f->maxattr = attr_u32(tb[CTRL_ATTR_MAXATTR]);

	/* CTRL_ATTR_OPS: a nest of nests, one per operation. */
	if (tb[CTRL_ATTR_OPS]) {
		len = attr_len(tb[CTRL_ATTR_OPS]);
		for (a = attr_data(tb[CTRL_ATTR_OPS]);
		     len >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
		     a->nla_len <= len;
		     len -= NLA_ALIGN(a->nla_len),
		     a = (const void *)((const char *)a + NLA_ALIGN(a->nla_len))) {
			parse(attr_data(a), attr_len(a), sub, CTRL_ATTR_OP_MAX);
			if (attr_u32(sub[CTRL_ATTR_OP_ID]) == SNPU_CMD_GET)
				f->get_flags = attr_u32(sub[CTRL_ATTR_OP_FLAGS]);
			if (attr_u32(sub[CTRL_ATTR_OP_ID]) == SNPU_CMD_EVENT)
				f->event_listed = 1;
		}
	}
	/* CTRL_ATTR_MCAST_GROUPS: a nest of nests, one per group. */
	if (tb[CTRL_ATTR_MCAST_GROUPS]) {
		len = attr_len(tb[CTRL_ATTR_MCAST_GROUPS]);
		for (a = attr_data(tb[CTRL_ATTR_MCAST_GROUPS]);
		     len >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
		     a->nla_len <= len;
		     len -= NLA_ALIGN(a->nla_len),
		     a = (const void *)((const char *)a + NLA_ALIGN(a->nla_len))) {
			const struct nlattr *name;

			parse(attr_data(a), attr_len(a), sub,
			      CTRL_ATTR_MCAST_GRP_MAX);
			name = sub[CTRL_ATTR_MCAST_GRP_NAME];
			if (name && !strcmp(attr_data(name),
					    SNPU_GENL_MCGRP_EVENTS))
				f->events = attr_u32(sub[CTRL_ATTR_MCAST_GRP_ID]);
		}
	}
	return 0;
}

/* ---- the device's side ---------------------------------------------- */

/* Return: the value of sysfs attribute @name of snpu0, or -1. */
static long long sysfs_ll(const char *name)
{
	char path[128];
	long long v;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), SYSFS0 "%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fscanf(f, "%lld", &v);
	fclose(f);
	return n == 1 ? v : -1;
}

/* Return: 0 or -errno; one SNPU_IOC_SNAPSHOT_* call on @fd. */
static int snap(int fd, unsigned long cmd)
{
	struct snpu_snapshot s = {
		.size = sizeof(s),
		.timeout_ns = cmd == SNPU_IOC_SNAPSHOT_LOCK ? -1 : 0,
	};

	return ioctl(fd, cmd, &s) < 0 ? -errno : 0;
}

/**
 * struct event - an SNPU_KIND_TRANSITION event as received
 * @version: SNPU_ATTR_VERSION
 * @dev: SNPU_ATTR_DEV_INDEX
 * @pid: SNPU_ATTR_PID
 * @old_state: SNPU_ATTR_OLD_STATE
 * @new_state: SNPU_ATTR_NEW_STATE
 * @result: SNPU_ATTR_RESULT
 * @missing: an attribute every event has was not there
 */
struct event {
	long long version;
	long long dev;
	long long pid;
	long long old_state;
	long long new_state;
	long long result;
	int missing;
};

/* A socket subscribed to "events"; -1 on failure. */
static int subscribe(struct family *f)
{
	int fd = nl_open();

	if (fd < 0)
		return -1;
	if (resolve(fd, f) || !f->events ||
	    setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &f->events,
		       sizeof(f->events))) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Return: 0 and the next transition event of process @pid, or -errno
 * (-EAGAIN when none came within RECV_TIMEOUT_S).
 */
static int next_event(int fd, const struct family *f, pid_t pid,
		      struct event *ev)
{
	static char buf[NL_BUF];

	for (;;) {
		const struct nlattr *tb[SNPU_ATTR_MAX + 1];
		struct nlmsghdr *nlh;
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		int len;

		if (n < 0)
			return -errno;
		len = n;
		for (nlh = (void *)buf; NLMSG_OK(nlh, len);
		     nlh = NLMSG_NEXT(nlh, len)) {
			if (nlh->nlmsg_type != f->id ||
			    genl_cmd(nlh) != SNPU_CMD_EVENT)
				continue;
			parse_genl(nlh, tb, SNPU_ATTR_MAX);
			if (attr_u32(tb[SNPU_ATTR_KIND]) != SNPU_KIND_TRANSITION ||
			    attr_u32(tb[SNPU_ATTR_PID]) != (__u32)pid)
				continue;
			ev->version = attr_u32(tb[SNPU_ATTR_VERSION]);
			ev->dev = attr_u32(tb[SNPU_ATTR_DEV_INDEX]);
			ev->pid = attr_u32(tb[SNPU_ATTR_PID]);
			ev->old_state = attr_u32(tb[SNPU_ATTR_OLD_STATE]);
			ev->new_state = attr_u32(tb[SNPU_ATTR_NEW_STATE]);
			ev->result = attr_s32(tb[SNPU_ATTR_RESULT]);
			ev->missing = !tb[SNPU_ATTR_VERSION] ||
				      !tb[SNPU_ATTR_DEV_INDEX] ||
				      !tb[SNPU_ATTR_OLD_STATE] ||
				      !tb[SNPU_ATTR_NEW_STATE] ||
				      !tb[SNPU_ATTR_RESULT];
			return 0;
		}
	}
}

/* Check that the next event of this process is @old -> @new with @result. */
#define EXPECT_TRANSITION(_metadata, fd, f, old, new, res) do {		\
	struct event _ev;						\
									\
	ASSERT_EQ(0, next_event(fd, f, getpid(), &_ev));		\
	EXPECT_EQ(0, _ev.missing);					\
	EXPECT_EQ(SNPU_GENL_VERSION, _ev.version);			\
	EXPECT_EQ(0, _ev.dev);						\
	EXPECT_EQ(old, _ev.old_state);					\
	EXPECT_EQ(new, _ev.new_state);					\
	EXPECT_EQ(res, _ev.result);					\
} while (0)

/* ---- the family ------------------------------------------------------- */

FIXTURE(nl) {
	int fd;
	struct family f;
	struct nlmsgs m;
	char req[256];
};

FIXTURE_SETUP(nl)
{
	self->fd = nl_open();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, resolve(self->fd, &self->f));
}

FIXTURE_TEARDOWN(nl)
{
	close(self->fd);
}

/* The controller knows "snpu" with its version, attributes and ops. */
TEST_F(nl, family_resolves)
{
	EXPECT_NE(0, self->f.id);
	EXPECT_EQ(SNPU_GENL_VERSION, self->f.version);
	EXPECT_EQ(SNPU_ATTR_MAX, self->f.maxattr);
	EXPECT_EQ(GENL_CMD_CAP_DO | GENL_CMD_CAP_DUMP,
		  self->f.get_flags & (GENL_CMD_CAP_DO | GENL_CMD_CAP_DUMP));
	/* Multicast only: not an operation. */
	EXPECT_EQ(0, self->f.event_listed);
}

/* The group "events" exists and can be joined. */
TEST_F(nl, events_group_resolves)
{
	int fd = nl_open();

	ASSERT_NE(0, self->f.events);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP,
				&self->f.events, sizeof(self->f.events)));
	close(fd);
}

/* genl-ctrl-list (libnl-utils) lists the family and its group. */
TEST_F(nl, genl_ctrl_list)
{
	unsigned int id, version;
	int grp;
	int in_snpu = 0, family = 0, group = 0;
	char line[512], name[64];
	FILE *p = popen("genl-ctrl-list -d 2>&1", "r");

	ASSERT_NE(NULL, p);
	while (fgets(line, sizeof(line), p)) {
		/* "0x0019 snpu version 1", then indented details. */
		if (sscanf(line, "0x%x %63s version %u", &id, name,
			   &version) == 3) {
			in_snpu = !strcmp(name, SNPU_GENL_NAME);
			if (in_snpu) {
				family++;
				EXPECT_EQ(self->f.id, id);
				EXPECT_EQ(SNPU_GENL_VERSION, (int)version);
			}
			continue;
		}
		if (in_snpu && sscanf(line, " grp %63s (0x%x)", name,
				      &grp) == 2 &&
		    !strcmp(name, SNPU_GENL_MCGRP_EVENTS)) {
			group++;
			EXPECT_EQ(self->f.events, grp);
		}
	}
	EXPECT_EQ(0, pclose(p));
	EXPECT_EQ(1, family) TH_LOG("genl-ctrl-list does not list \"snpu\"");
	EXPECT_EQ(1, group) TH_LOG("no group \"events\" under \"snpu\"");
}

/* SNPU_CMD_GET of device 0: what sysfs says. */
TEST_F(nl, get_device)
{
	const struct nlattr *tb[SNPU_ATTR_MAX + 1];
	struct nlmsghdr *req = msg_init(self->req, self->f.id, NLM_F_ACK,
					SNPU_CMD_GET, SNPU_GENL_VERSION);
	__u32 index = 0;
	int fd = open(DEV0, O_RDWR);

	ASSERT_LE(0, fd);
	msg_put(req, SNPU_ATTR_DEV_INDEX, &index, sizeof(index));
	ASSERT_EQ(0, nl_transact(self->fd, req, &self->m));
	ASSERT_EQ(1, self->m.count);
	EXPECT_EQ(SNPU_CMD_GET, genl_cmd(nth(&self->m, 0)));
	parse_genl(nth(&self->m, 0), tb, SNPU_ATTR_MAX);
	EXPECT_EQ(SNPU_GENL_VERSION, attr_u32(tb[SNPU_ATTR_VERSION]));
	EXPECT_EQ(SNPU_KIND_DEVICE, attr_u32(tb[SNPU_ATTR_KIND]));
	ASSERT_NE(NULL, tb[SNPU_ATTR_DEV_INDEX]);
	EXPECT_EQ(0, attr_u32(tb[SNPU_ATTR_DEV_INDEX]));
	EXPECT_EQ(sysfs_ll("cores"), attr_u32(tb[SNPU_ATTR_DEV_CORES]));
	EXPECT_EQ(sysfs_ll("mem_mb"),
		  (long long)(attr_u64(tb[SNPU_ATTR_DEV_MEM_TOTAL]) >> 20));
	EXPECT_EQ(sysfs_ll("mem_used"),
		  (long long)attr_u64(tb[SNPU_ATTR_DEV_MEM_USED]));
	EXPECT_EQ(sysfs_ll("contexts"),
		  attr_u32(tb[SNPU_ATTR_DEV_CONTEXTS]));
	EXPECT_LE(1, attr_u32(tb[SNPU_ATTR_DEV_CONTEXTS]));
	close(fd);
}

/* The refused requests, each with its errno. */
TEST_F(nl, get_errors)
{
	struct nlmsghdr *req;
	__u32 v;
	int type;

	/* No device 15 (devices=1): in the policy's range, but absent. */
	req = msg_init(self->req, self->f.id, NLM_F_ACK, SNPU_CMD_GET, 1);
	v = 15;
	msg_put(req, SNPU_ATTR_DEV_INDEX, &v, sizeof(v));
	EXPECT_EQ(-ENODEV, nl_transact(self->fd, req, &self->m));

	/* No index. */
	req = msg_init(self->req, self->f.id, NLM_F_ACK, SNPU_CMD_GET, 1);
	EXPECT_EQ(-EINVAL, nl_transact(self->fd, req, &self->m));

	/* An attribute a request does not carry: any but the index. */
	for (type = SNPU_ATTR_UNSPEC; type <= SNPU_ATTR_MAX + 1; type++) {
		if (type == SNPU_ATTR_DEV_INDEX)
			continue;
		req = msg_init(self->req, self->f.id, NLM_F_ACK, SNPU_CMD_GET,
			       1);
		v = 0;
		msg_put(req, SNPU_ATTR_DEV_INDEX, &v, sizeof(v));
		msg_put(req, type, &v, sizeof(v));
		EXPECT_EQ(-EINVAL, nl_transact(self->fd, req, &self->m))
			TH_LOG("attribute %d in a request", type);
	}

	/* The index with the wrong size. */
	req = msg_init(self->req, self->f.id, NLM_F_ACK, SNPU_CMD_GET, 1);
	msg_put(req, SNPU_ATTR_DEV_INDEX, &v, sizeof(__u16));
	EXPECT_EQ(-EINVAL, nl_transact(self->fd, req, &self->m));

	/* The reserved header field. */
	req = msg_init(self->req, self->f.id, NLM_F_ACK, SNPU_CMD_GET, 1);
	((struct genlmsghdr *)NLMSG_DATA(req))->reserved = 1;
	msg_put(req, SNPU_ATTR_DEV_INDEX, &v, sizeof(v));
	EXPECT_EQ(-EINVAL, nl_transact(self->fd, req, &self->m));

	/* SNPU_CMD_EVENT is no request; nor is an unknown command. */
	req = msg_init(self->req, self->f.id, NLM_F_ACK, SNPU_CMD_EVENT, 1);
	EXPECT_EQ(-EOPNOTSUPP, nl_transact(self->fd, req, &self->m));
	req = msg_init(self->req, self->f.id, NLM_F_ACK, SNPU_CMD_MAX + 1, 1);
	EXPECT_EQ(-EOPNOTSUPP, nl_transact(self->fd, req, &self->m));
}

/* Return: 0 or -errno; the dump of SNPU_CMD_GET into @m. */
static int dump(int fd, const struct family *f, char *req,
		struct nlmsgs *m)
{
	return nl_transact(fd, msg_init(req, f->id, NLM_F_DUMP, SNPU_CMD_GET,
					SNPU_GENL_VERSION), m);
}

/*
 * The most devices the module creates (its "devices" parameter's limit):
 * SNPU_ATTR_DEV_INDEX of a request is below it.
 */
#define MAX_DEVICES	16

/* An index no device can have is outside the policy's range: ERANGE. */
TEST_F(nl, get_out_of_range)
{
	static const __u32 bad[] = { MAX_DEVICES, 1000, UINT32_MAX };
	struct nlmsghdr *req;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		req = msg_init(self->req, self->f.id, NLM_F_ACK, SNPU_CMD_GET,
			       SNPU_GENL_VERSION);
		msg_put(req, SNPU_ATTR_DEV_INDEX, &bad[i], sizeof(bad[i]));
		EXPECT_EQ(-ERANGE, nl_transact(self->fd, req, &self->m))
			TH_LOG("index %u", bad[i]);
	}
}

/* A dump takes no attribute, not even the index: EINVAL. */
TEST_F(nl, dump_takes_no_attribute)
{
	struct nlmsghdr *req = msg_init(self->req, self->f.id, NLM_F_DUMP,
					SNPU_CMD_GET, SNPU_GENL_VERSION);
	__u32 index = 0;

	msg_put(req, SNPU_ATTR_DEV_INDEX, &index, sizeof(index));
	EXPECT_EQ(-EINVAL, nl_transact(self->fd, req, &self->m));
}

/*
 * The dump: device 0 as sysfs has it, devices before processes, this
 * process with one context and its state, seq counting transitions.
 */
TEST_F(nl, dump)
{
	const struct nlattr *tb[SNPU_ATTR_MAX + 1];
	int fd = open(DEV0, O_RDWR);
	int pass, i;

	ASSERT_LE(0, fd);
	for (pass = 0; pass < 3; pass++) {
		int devices = 0, procs = 0, me = 0, in_procs = 0;
		long long want_state = pass == 1 ? SNPU_STATE_LOCKED :
				   SNPU_STATE_RUNNING;

		ASSERT_EQ(0, dump(self->fd, &self->f, self->req, &self->m));
		for (i = 0; i < self->m.count; i++) {
			const struct nlmsghdr *nlh = nth(&self->m, i);
			long long kind;

			ASSERT_EQ(self->f.id, nlh->nlmsg_type);
			EXPECT_NE(0, nlh->nlmsg_flags & NLM_F_MULTI);
			EXPECT_EQ(SNPU_CMD_GET, genl_cmd(nlh));
			parse_genl(nlh, tb, SNPU_ATTR_MAX);
			EXPECT_EQ(SNPU_GENL_VERSION,
				  attr_u32(tb[SNPU_ATTR_VERSION]));
			kind = attr_u32(tb[SNPU_ATTR_KIND]);
			if (kind == SNPU_KIND_DEVICE) {
				EXPECT_EQ(0, in_procs)
					TH_LOG("a device after a process");
				ASSERT_NE(NULL, tb[SNPU_ATTR_DEV_INDEX]);
				EXPECT_EQ(devices,
					  attr_u32(tb[SNPU_ATTR_DEV_INDEX]));
				devices++;
				if (attr_u32(tb[SNPU_ATTR_DEV_INDEX]))
					continue;
				EXPECT_EQ(sysfs_ll("cores"),
					  attr_u32(tb[SNPU_ATTR_DEV_CORES]));
				EXPECT_EQ(sysfs_ll("mem_mb"),
					  (long long)(attr_u64(tb[SNPU_ATTR_DEV_MEM_TOTAL]) >> 20));
				EXPECT_EQ(sysfs_ll("mem_used"),
					  (long long)attr_u64(tb[SNPU_ATTR_DEV_MEM_USED]));
				EXPECT_EQ(sysfs_ll("contexts"),
					  attr_u32(tb[SNPU_ATTR_DEV_CONTEXTS]));
				continue;
			}
			ASSERT_EQ(SNPU_KIND_PROCESS, kind);
			in_procs = 1;
			procs++;
			ASSERT_NE(NULL, tb[SNPU_ATTR_PID]);
			if (attr_u32(tb[SNPU_ATTR_PID]) != (__u32)getpid())
				continue;
			me++;
			EXPECT_EQ(want_state, attr_u32(tb[SNPU_ATTR_STATE]));
			EXPECT_EQ(pass, attr_u32(tb[SNPU_ATTR_SEQ]));
			EXPECT_EQ(1, attr_u32(tb[SNPU_ATTR_CONTEXTS]));
			EXPECT_EQ(0, attr_u32(tb[SNPU_ATTR_BG_THREADS]));
			EXPECT_NE(NULL, tb[SNPU_ATTR_IMAGE_BYTES]);
			EXPECT_EQ(0, attr_u64(tb[SNPU_ATTR_IMAGE_BYTES]));
		}
		EXPECT_EQ(1, devices) TH_LOG("devices=1: one device");
		EXPECT_LE(1, procs);
		EXPECT_EQ(1, me) TH_LOG("pass %d: this process listed %d times",
					pass, me);
		if (pass == 0)
			ASSERT_EQ(0, snap(fd, SNPU_IOC_SNAPSHOT_LOCK));
		if (pass == 1)
			ASSERT_EQ(0, snap(fd, SNPU_IOC_SNAPSHOT_UNLOCK));
	}
	close(fd);
}

/* A process appears in the dump while it has a file open, and only then. */
TEST_F(nl, dump_process_lifetime)
{
	const struct nlattr *tb[SNPU_ATTR_MAX + 1];
	int pass, i;
	int fd = -1;

	for (pass = 0; pass < 3; pass++) {
		int me = 0;

		if (pass == 1) {
			fd = open(DEV0, O_RDWR);
			ASSERT_LE(0, fd);
		}
		if (pass == 2)
			close(fd);
		ASSERT_EQ(0, dump(self->fd, &self->f, self->req, &self->m));
		for (i = 0; i < self->m.count; i++) {
			parse_genl(nth(&self->m, i), tb, SNPU_ATTR_MAX);
			if (attr_u32(tb[SNPU_ATTR_KIND]) == SNPU_KIND_PROCESS &&
			    attr_u32(tb[SNPU_ATTR_PID]) == (__u32)getpid())
				me++;
		}
		EXPECT_EQ(pass == 1, me) TH_LOG("pass %d", pass);
	}
}

/*
 * A dump read 4 KiB at a time takes several reads: every process is in it
 * once (kids counted exactly), after the device.
 */
TEST_F(nl, dump_resumes)
{
	const struct nlattr *tb[SNPU_ATTR_MAX + 1];
	int ready[2], go[2], i, j, n, fd, found = 0;
	pid_t kids[DUMP_CHILDREN];
	long long last = -1, pid;
	char c;

	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	for (n = 0; n < DUMP_CHILDREN; n++) {
		kids[n] = fork();
		ASSERT_LE(0, kids[n]);
		if (!kids[n]) {
			/* Hold a file until the parent closes "go". */
			close(go[1]);
			fd = open(DEV0, O_RDWR);
			c = fd < 0 ? 'E' : 'R';
			if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1))
				_exit(1);
			_exit(0);
		}
	}
	close(go[0]);
	for (i = 0; i < n; i++) {
		ASSERT_EQ(1, read(ready[0], &c, 1));
		ASSERT_EQ('R', c);
	}

	/* A socket that never read more than 4 KiB. */
	fd = nl_open();
	ASSERT_LE(0, fd);
	nl_recv_len = 4096;
	nl_reads = 0;
	ASSERT_EQ(0, dump(fd, &self->f, self->req, &self->m));
	close(fd);
	for (i = 0; i < self->m.count; i++) {
		parse_genl(nth(&self->m, i), tb, SNPU_ATTR_MAX);
		if (i == 0) {
			EXPECT_EQ(SNPU_KIND_DEVICE, attr_u32(tb[SNPU_ATTR_KIND]));
			continue;
		}
		ASSERT_EQ(SNPU_KIND_PROCESS, attr_u32(tb[SNPU_ATTR_KIND]));
		pid = attr_u32(tb[SNPU_ATTR_PID]);
		/* In registry order: a process is listed once. */
		EXPECT_NE(last, pid) TH_LOG("pid %lld twice", pid);
		last = pid;
		for (j = 0; j < n; j++)
			found += kids[j] == pid;
	}
	EXPECT_EQ(n, found);
	/* About 100 bytes a process: 80 of them do not fit in 4 KiB. */
	EXPECT_LE(2, nl_reads) TH_LOG("the dump fit in one read");

	close(go[1]);
	for (i = 0; i < n; i++) {
		int status;

		ASSERT_EQ(kids[i], waitpid(kids[i], &status, 0));
		EXPECT_EQ(0, status);
	}
}

/* ---- who sees what ------------------------------------------------------ */

/* The unprivileged user the permission tests run as. */
#define NOBODY		SNPU_TEST_NOBODY

/* In a forked child: unless @cond, say why and exit with status @step. */
#define CHILD_REQUIRE(cond, step, ...) do {				\
	int _step = (step);						\
									\
	if (!(cond)) {							\
		fprintf(stderr, "# child step %d: ", _step);		\
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
		_exit(_step);						\
	}								\
} while (0)

/*
 * The pids of the processes a dump lists, in @pids (at most @max).
 * Return: the number of processes listed, or -errno.
 */
static int dump_pids(int fd, const struct family *f, long long *pids,
		     int max)
{
	const struct nlattr *tb[SNPU_ATTR_MAX + 1];
	static struct nlmsgs m;
	char req[256];
	int i, n = 0, ret;

	ret = dump(fd, f, req, &m);
	if (ret)
		return ret;
	for (i = 0; i < m.count; i++) {
		parse_genl(nth(&m, i), tb, SNPU_ATTR_MAX);
		if (attr_u32(tb[SNPU_ATTR_KIND]) != SNPU_KIND_PROCESS)
			continue;
		if (n < max)
			pids[n] = attr_u32(tb[SNPU_ATTR_PID]);
		n++;
	}
	return n;
}

/* Return: how many of the first @n of @pids (at most @max) are @pid. */
static int count_pid(const long long *pids, int n, int max, pid_t pid)
{
	int i, found = 0;

	for (i = 0; i < n && i < max; i++)
		found += pids[i] == pid;
	return found;
}

/*
 * Without CAP_SYS_ADMIN a dump lists the caller's own processes only:
 * nobody's lists nobody's process and not the test's (root's), which
 * holds a file meanwhile; root's lists both.
 */
TEST_F(nl, dump_unprivileged_own_only)
{
	int ready[2], go[2], status, n;
	int fd = open(DEV0, O_RDWR);
	long long pids[DUMP_CHILDREN];
	pid_t kid;
	char c;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid) {
		struct family f;
		int nl, dev;

		close(go[1]);
		close(ready[0]);
		close(fd);
		CHILD_REQUIRE(!snpu_drop_to_nobody(), 10, "drop to nobody: %m");
		/* The VM's "/" must be searchable by everyone (mode 0755). */
		dev = open(DEV0, O_RDWR);
		CHILD_REQUIRE(dev >= 0, 11, "nobody opens " DEV0 ": %m");
		nl = nl_open();
		CHILD_REQUIRE(nl >= 0, 12, "netlink socket: %m");
		CHILD_REQUIRE(!resolve(nl, &f), 13, "resolve \"snpu\"");
		n = dump_pids(nl, &f, pids, DUMP_CHILDREN);
		CHILD_REQUIRE(n >= 0, 14, "dump: %s", strerror(-n));
		CHILD_REQUIRE(!count_pid(pids, n, DUMP_CHILDREN, getppid()),
			      15, "nobody sees root's process %d", getppid());
		CHILD_REQUIRE(count_pid(pids, n, DUMP_CHILDREN, getpid()) == 1,
			      16, "nobody does not see its own process");
		CHILD_REQUIRE(n == 1, 17, "nobody sees %d processes, not 1", n);
		/* Hold the file until root has looked. */
		c = 'R';
		if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1))
			_exit(18);
		_exit(0);
	}
	close(go[0]);
	close(ready[1]);
	/* Nothing to read: the child failed, its status says where. */
	if (read(ready[0], &c, 1) == 1) {
		n = dump_pids(self->fd, &self->f, pids, DUMP_CHILDREN);
		ASSERT_LE(0, n);
		EXPECT_EQ(1, count_pid(pids, n, DUMP_CHILDREN, getpid()));
		EXPECT_EQ(1, count_pid(pids, n, DUMP_CHILDREN, kid))
			TH_LOG("root does not see nobody's process");
	}
	close(go[1]);
	ASSERT_EQ(kid, waitpid(kid, &status, 0));
	EXPECT_EQ(0, status) TH_LOG("nobody's side failed at step %d",
				    WEXITSTATUS(status));
	close(ready[0]);
	close(fd);
}

/*
 * A process belongs to the user it was when it opened its first file: one
 * that opened it as root and then became nobody is not listed to nobody,
 * not even to itself.
 */
TEST_F(nl, dump_credentials_at_open)
{
	pid_t kid = fork();
	int status;

	ASSERT_LE(0, kid);
	if (!kid) {
		long long pids[DUMP_CHILDREN];
		struct family f;
		int dev, nl, n;

		dev = open(DEV0, O_RDWR);
		CHILD_REQUIRE(dev >= 0, 70, "open " DEV0 ": %m");
		CHILD_REQUIRE(!snpu_drop_to_nobody(), 71, "drop to nobody: %m");
		nl = nl_open();
		CHILD_REQUIRE(nl >= 0, 72, "netlink socket: %m");
		CHILD_REQUIRE(!resolve(nl, &f), 73, "resolve \"snpu\"");
		n = dump_pids(nl, &f, pids, DUMP_CHILDREN);
		CHILD_REQUIRE(n >= 0, 74, "dump: %s", strerror(-n));
		CHILD_REQUIRE(n == 0, 75, "nobody sees %d processes (pid %lld)",
			      n, pids[0]);
		_exit(0);
	}
	ASSERT_EQ(kid, waitpid(kid, &status, 0));
	EXPECT_EQ(0, status) TH_LOG("the child failed at step %d",
				    WEXITSTATUS(status));
}

/*
 * The socket's opener counts as well as the sender: root writing a dump
 * request into a socket that nobody opened (as a privileged program that
 * was handed the socket would) lists no process, neither root's nor
 * nobody's; through its own socket root lists both.
 */
TEST_F(nl, dump_socket_of_another_user)
{
	long long pids[DUMP_CHILDREN];
	int sp[2], nl, n, status;
	int fd = open(DEV0, O_RDWR);
	pid_t kid;
	char c;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sp));
	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid) {
		int dev, ret;

		close(sp[0]);
		close(fd);
		CHILD_REQUIRE(!snpu_drop_to_nobody(), 80, "drop to nobody: %m");
		dev = open(DEV0, O_RDWR);
		CHILD_REQUIRE(dev >= 0, 81, "nobody opens " DEV0 ": %m");
		nl = nl_open();
		CHILD_REQUIRE(nl >= 0, 82, "netlink socket: %m");
		ret = snpu_send_fd(sp[1], nl);
		CHILD_REQUIRE(!ret, 83, "send the socket: %s", strerror(-ret));
		/* Hold the file until the test closes its end. */
		CHILD_REQUIRE(read(sp[1], &c, 1) == 0, 84, "read");
		_exit(0);
	}
	close(sp[1]);
	nl = snpu_recv_fd(sp[0]);
	if (nl >= 0) {
		nl_send_unaddressed = 1;
		n = dump_pids(nl, &self->f, pids, DUMP_CHILDREN);
		nl_send_unaddressed = 0;
		EXPECT_EQ(0, n) TH_LOG("root lists %d processes through nobody's socket",
				       n);
		n = dump_pids(self->fd, &self->f, pids, DUMP_CHILDREN);
		ASSERT_LE(0, n);
		EXPECT_EQ(1, count_pid(pids, n, DUMP_CHILDREN, getpid()));
		EXPECT_EQ(1, count_pid(pids, n, DUMP_CHILDREN, kid));
		close(nl);
	}
	close(sp[0]);
	ASSERT_EQ(kid, waitpid(kid, &status, 0));
	EXPECT_EQ(0, status) TH_LOG("nobody's side failed at step %d",
				    WEXITSTATUS(status));
	EXPECT_LE(0, nl) TH_LOG("no socket came from nobody");
	close(fd);
}

/*
 * Pids are those of the caller's pid namespace. The init of a new pid
 * namespace (root: it could see every process) lists itself as pid 1,
 * and nothing from outside its namespace, not the test that holds a file
 * meanwhile; the test lists it by its pid in the initial namespace.
 */
TEST_F(nl, dump_pid_namespace)
{
	int ready[2], go[2], pidp[2], status, n;
	int fd = open(DEV0, O_RDWR);
	long long pids[DUMP_CHILDREN];
	pid_t kid, inner = 0;
	char c;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(pidp));
	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid) {
		pid_t init;

		close(go[1]);
		close(ready[0]);
		close(pidp[0]);
		close(fd);
		CHILD_REQUIRE(!unshare(CLONE_NEWPID), 20,
			      "unshare(CLONE_NEWPID): %m");
		init = fork();
		CHILD_REQUIRE(init >= 0, 21, "fork: %m");
		if (!init) {
			struct family f;
			int nl, dev;

			CHILD_REQUIRE(getpid() == 1, 22,
				      "pid %d in the new namespace", getpid());
			dev = open(DEV0, O_RDWR);
			CHILD_REQUIRE(dev >= 0, 23, "open " DEV0 ": %m");
			nl = nl_open();
			CHILD_REQUIRE(nl >= 0, 24, "netlink socket: %m");
			CHILD_REQUIRE(!resolve(nl, &f), 25,
				      "resolve \"snpu\"");
			n = dump_pids(nl, &f, pids, DUMP_CHILDREN);
			CHILD_REQUIRE(n >= 0, 26, "dump: %s", strerror(-n));
			CHILD_REQUIRE(count_pid(pids, n, DUMP_CHILDREN, 1) == 1,
				      27, "pid 1 not listed (as %lld?)",
				      n ? pids[0] : -1LL);
			CHILD_REQUIRE(n == 1, 28,
				      "the namespace's init sees %d processes, not 1",
				      n);
			c = 'R';
			if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1))
				_exit(29);
			_exit(0);
		}
		/* The init's pid in the initial namespace, for the test. */
		CHILD_REQUIRE(write(pidp[1], &init, sizeof(init)) ==
			      sizeof(init), 30, "write: %m");
		close(pidp[1]);
		close(ready[1]);
		close(go[0]);
		CHILD_REQUIRE(waitpid(init, &status, 0) == init, 31,
			      "waitpid: %m");
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 32);
	}
	close(go[0]);
	close(ready[1]);
	close(pidp[1]);
	ASSERT_EQ((ssize_t)sizeof(inner), read(pidp[0], &inner, sizeof(inner)));
	if (read(ready[0], &c, 1) == 1) {
		n = dump_pids(self->fd, &self->f, pids, DUMP_CHILDREN);
		ASSERT_LE(0, n);
		EXPECT_EQ(1, count_pid(pids, n, DUMP_CHILDREN, inner))
			TH_LOG("pid %d (1 in its namespace) not listed", inner);
		EXPECT_EQ(1, count_pid(pids, n, DUMP_CHILDREN, getpid()));
	}
	close(go[1]);
	ASSERT_EQ(kid, waitpid(kid, &status, 0));
	EXPECT_EQ(0, status) TH_LOG("the namespace's side failed at step %d",
				    WEXITSTATUS(status));
	close(pidp[0]);
	close(ready[0]);
	close(fd);
}

/*
 * Joining "events" needs CAP_SYS_ADMIN: nobody's join fails with EPERM,
 * with setsockopt() and with bind().
 */
TEST_F(nl, events_join_unprivileged)
{
	pid_t kid;
	int status;

	ASSERT_NE(0, self->f.events);
	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid) {
		struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
		int nl, ret;

		CHILD_REQUIRE(!snpu_drop_to_nobody(), 40, "drop to nobody: %m");
		nl = nl_open();
		CHILD_REQUIRE(nl >= 0, 41, "netlink socket: %m");
		ret = setsockopt(nl, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP,
				 &self->f.events, sizeof(self->f.events));
		CHILD_REQUIRE(ret == -1 && errno == EPERM, 42,
			      "nobody joins \"events\": %s",
			      ret ? strerror(errno) : "joined");
		close(nl);
		/* bind() names the groups below 33 in a mask. */
		if (self->f.events <= 32) {
			nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC,
				    NETLINK_GENERIC);
			CHILD_REQUIRE(nl >= 0, 43, "netlink socket: %m");
			sa.nl_groups = 1U << (self->f.events - 1);
			ret = bind(nl, (struct sockaddr *)&sa, sizeof(sa));
			CHILD_REQUIRE(ret == -1 && errno == EPERM, 44,
				      "nobody binds to \"events\": %s",
				      ret ? strerror(errno) : "bound");
		}
		_exit(0);
	}
	ASSERT_EQ(kid, waitpid(kid, &status, 0));
	EXPECT_EQ(0, status) TH_LOG("nobody's side failed at step %d",
				    WEXITSTATUS(status));
}

/* ---- events ------------------------------------------------------------ */

/* LOCK and UNLOCK each multicast their transition. */
TEST(events_lock_unlock)
{
	struct family f;
	int nl = subscribe(&f);
	int fd = open(DEV0, O_RDWR);

	ASSERT_LE(0, nl);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, snap(fd, SNPU_IOC_SNAPSHOT_LOCK));
	EXPECT_TRANSITION(_metadata, nl, &f, SNPU_STATE_RUNNING,
			  SNPU_STATE_LOCKED, 0);
	ASSERT_EQ(0, snap(fd, SNPU_IOC_SNAPSHOT_UNLOCK));
	EXPECT_TRANSITION(_metadata, nl, &f, SNPU_STATE_LOCKED,
			  SNPU_STATE_RUNNING, 0);
	close(fd);
	close(nl);
}

/* A refused transition is an event too, with its errno and no change. */
TEST(events_refused)
{
	struct family f;
	int nl = subscribe(&f);
	int fd = open(DEV0, O_RDWR);

	ASSERT_LE(0, nl);
	ASSERT_LE(0, fd);
	ASSERT_EQ(-EBADFD, snap(fd, SNPU_IOC_SNAPSHOT_UNLOCK));
	EXPECT_TRANSITION(_metadata, nl, &f, SNPU_STATE_RUNNING,
			  SNPU_STATE_RUNNING, -EBADFD);
	ASSERT_EQ(-EBADFD, snap(fd, SNPU_IOC_SNAPSHOT_RESTORE));
	EXPECT_TRANSITION(_metadata, nl, &f, SNPU_STATE_RUNNING,
			  SNPU_STATE_RUNNING, -EBADFD);
	ASSERT_EQ(0, snap(fd, SNPU_IOC_SNAPSHOT_LOCK));
	EXPECT_TRANSITION(_metadata, nl, &f, SNPU_STATE_RUNNING,
			  SNPU_STATE_LOCKED, 0);
	ASSERT_EQ(-EBADFD, snap(fd, SNPU_IOC_SNAPSHOT_LOCK));
	EXPECT_TRANSITION(_metadata, nl, &f, SNPU_STATE_LOCKED,
			  SNPU_STATE_LOCKED, -EBADFD);
	ASSERT_EQ(0, snap(fd, SNPU_IOC_SNAPSHOT_UNLOCK));
	EXPECT_TRANSITION(_metadata, nl, &f, SNPU_STATE_LOCKED,
			  SNPU_STATE_RUNNING, 0);
	close(fd);
	close(nl);
}

/* The whole cycle: one event per call, in order. */
TEST(events_backup_restore)
{
	struct family f;
	int nl = subscribe(&f);
	int fd = open(DEV0, O_RDWR);

	ASSERT_LE(0, nl);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, snap(fd, SNPU_IOC_SNAPSHOT_LOCK));
	ASSERT_EQ(0, snap(fd, SNPU_IOC_SNAPSHOT_BACKUP));
	ASSERT_EQ(0, snap(fd, SNPU_IOC_SNAPSHOT_RESTORE));
	ASSERT_EQ(0, snap(fd, SNPU_IOC_SNAPSHOT_BACKUP));
	ASSERT_EQ(0, snap(fd, SNPU_IOC_SNAPSHOT_UNLOCK));
	EXPECT_TRANSITION(_metadata, nl, &f, SNPU_STATE_RUNNING,
			  SNPU_STATE_LOCKED, 0);
	EXPECT_TRANSITION(_metadata, nl, &f, SNPU_STATE_LOCKED,
			  SNPU_STATE_BACKED_UP, 0);
	EXPECT_TRANSITION(_metadata, nl, &f, SNPU_STATE_BACKED_UP,
			  SNPU_STATE_LOCKED, 0);
	EXPECT_TRANSITION(_metadata, nl, &f, SNPU_STATE_LOCKED,
			  SNPU_STATE_BACKED_UP, 0);
	EXPECT_TRANSITION(_metadata, nl, &f, SNPU_STATE_BACKED_UP,
			  SNPU_STATE_RUNNING, 0);
	close(fd);
	close(nl);
}

/* Closing the last file of a locked process unlocks it: an event too. */
TEST(events_close_locked)
{
	struct family f;
	int nl = subscribe(&f);
	int fd = open(DEV0, O_RDWR);

	ASSERT_LE(0, nl);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, snap(fd, SNPU_IOC_SNAPSHOT_LOCK));
	EXPECT_TRANSITION(_metadata, nl, &f, SNPU_STATE_RUNNING,
			  SNPU_STATE_LOCKED, 0);
	close(fd);
	EXPECT_TRANSITION(_metadata, nl, &f, SNPU_STATE_LOCKED,
			  SNPU_STATE_RUNNING, 0);
	close(nl);
}

/* ---- snpu-smi ---------------------------------------------------------- */

/* snpu-smi events, in the background, prints both transitions. */
TEST(smi_events)
{
	char line[256], want[256];
	int fd = open(DEV0, O_RDWR);
	FILE *p;

	ASSERT_LE(0, fd);
	p = popen("snpu-smi events -n 3 -t 20 2>&1", "r");
	ASSERT_NE(NULL, p);
	/* It says so once it has joined the group. */
	ASSERT_NE(NULL, fgets(line, sizeof(line), p));
	ASSERT_EQ(0, strcmp(line, "snpu-smi: listening for snpu events\n"))
		TH_LOG("snpu-smi: %s", line);

	ASSERT_EQ(0, snap(fd, SNPU_IOC_SNAPSHOT_LOCK));
	ASSERT_EQ(-EBADFD, snap(fd, SNPU_IOC_SNAPSHOT_LOCK));
	ASSERT_EQ(0, snap(fd, SNPU_IOC_SNAPSHOT_UNLOCK));

	ASSERT_NE(NULL, fgets(line, sizeof(line), p));
	snprintf(want, sizeof(want),
		 "pid %d snpu0 RUNNING -> LOCKED result 0 seq 1\n", getpid());
	EXPECT_STREQ(want, line);
	ASSERT_NE(NULL, fgets(line, sizeof(line), p));
	snprintf(want, sizeof(want),
		 "pid %d snpu0 LOCKED -> LOCKED result %d (EBADFD) seq 1\n",
		 getpid(), -EBADFD);
	EXPECT_STREQ(want, line);
	ASSERT_NE(NULL, fgets(line, sizeof(line), p));
	snprintf(want, sizeof(want),
		 "pid %d snpu0 LOCKED -> RUNNING result 0 seq 2\n", getpid());
	EXPECT_STREQ(want, line);
	/* -n 3: it exits by itself, successfully. */
	EXPECT_EQ(NULL, fgets(line, sizeof(line), p));
	EXPECT_EQ(0, pclose(p));
	close(fd);
}

/* snpu-smi events -t with too few events says so and fails. */
TEST(smi_events_timeout)
{
	char line[256];
	FILE *p = popen("snpu-smi events -n 1 -t 0.5 2>&1", "r");

	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, fgets(line, sizeof(line), p));
	ASSERT_NE(NULL, fgets(line, sizeof(line), p));
	EXPECT_EQ(0, strcmp(line, "snpu-smi: timed out after 0 of 1 events\n"))
		TH_LOG("snpu-smi: %s", line);
	EXPECT_EQ(1, WEXITSTATUS(pclose(p)));
}

/* snpu-smi status: the device and this process. */
TEST(smi_status)
{
	char line[256], dev[256], me[256];
	int fd = open(DEV0, O_RDWR), got_dev = 0, got_me = 0;
	FILE *p;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, snap(fd, SNPU_IOC_SNAPSHOT_LOCK));
	snprintf(dev, sizeof(dev), "snpu0 cores %lld mem_total %lld ",
		 sysfs_ll("cores"), sysfs_ll("mem_mb") << 20);
	snprintf(me, sizeof(me),
		 "pid %d LOCKED seq 1 contexts 1 bg_threads 0 image_bytes 0\n",
		 getpid());
	p = popen("snpu-smi status 2>&1", "r");
	ASSERT_NE(NULL, p);
	while (fgets(line, sizeof(line), p)) {
		if (!strncmp(line, dev, strlen(dev)))
			got_dev++;
		if (!strcmp(line, me))
			got_me++;
	}
	EXPECT_EQ(0, pclose(p));
	EXPECT_EQ(1, got_dev) TH_LOG("no line starting '%s'", dev);
	EXPECT_EQ(1, got_me) TH_LOG("no line '%s'", me);

	p = popen("snpu-smi status -d 0 2>&1", "r");
	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, fgets(line, sizeof(line), p));
	EXPECT_EQ(0, strncmp(line, dev, strlen(dev))) TH_LOG("%s", line);
	EXPECT_EQ(NULL, fgets(line, sizeof(line), p));
	EXPECT_EQ(0, pclose(p));

	p = popen("snpu-smi status -d 7 2>&1", "r");
	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, fgets(line, sizeof(line), p));
	EXPECT_EQ(0, strcmp(line, "snpu-smi: get: No such device\n"))
		TH_LOG("%s", line);
	EXPECT_EQ(1, WEXITSTATUS(pclose(p)));
	close(fd);
}

/* What snpu-smi events says to a user who may not join "events". */
#define SMI_EVENTS_EPERM \
	"snpu-smi: listening for snpu events needs CAP_SYS_ADMIN (run it as root)\n"

/*
 * snpu-smi events as nobody: one clear line that it needs the privilege
 * (not a silent wait), and status 1 at once.
 */
TEST(smi_events_unprivileged)
{
	pid_t kid = fork();
	int status;

	ASSERT_LE(0, kid);
	if (!kid) {
		char line[256];
		FILE *p;

		CHILD_REQUIRE(!snpu_drop_to_nobody(), 50, "drop to nobody: %m");
		p = popen("snpu-smi events -n 1 -t 20 2>&1", "r");
		CHILD_REQUIRE(p, 51, "popen: %m");
		CHILD_REQUIRE(fgets(line, sizeof(line), p), 52,
			      "snpu-smi said nothing");
		CHILD_REQUIRE(!strcmp(line, SMI_EVENTS_EPERM), 53,
			      "snpu-smi: %s", line);
		CHILD_REQUIRE(!fgets(line, sizeof(line), p), 54,
			      "snpu-smi went on: %s", line);
		status = pclose(p);
		CHILD_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 1, 55,
			      "snpu-smi exit status 0x%x", status);
		_exit(0);
	}
	ASSERT_EQ(kid, waitpid(kid, &status, 0));
	EXPECT_EQ(0, status) TH_LOG("nobody's side failed at step %d",
				    WEXITSTATUS(status));
}

/*
 * snpu-smi status as nobody: the device, and of the processes only
 * nobody's own, not the test's (root's), which holds a file meanwhile.
 */
TEST(smi_status_unprivileged)
{
	int fd = open(DEV0, O_RDWR), status;
	pid_t kid;

	ASSERT_LE(0, fd);
	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid) {
		char line[256], me[64];
		int dev, devs = 0, procs = 0, mine = 0;
		FILE *p;

		close(fd);
		CHILD_REQUIRE(!snpu_drop_to_nobody(), 60, "drop to nobody: %m");
		dev = open(DEV0, O_RDWR);
		CHILD_REQUIRE(dev >= 0, 61, "nobody opens " DEV0 ": %m");
		snprintf(me, sizeof(me), "pid %d RUNNING ", getpid());
		p = popen("snpu-smi status 2>&1", "r");
		CHILD_REQUIRE(p, 62, "popen: %m");
		while (fgets(line, sizeof(line), p)) {
			devs += !strncmp(line, "snpu0 ", 6);
			procs += !strncmp(line, "pid ", 4);
			mine += !strncmp(line, me, strlen(me));
		}
		CHILD_REQUIRE(!pclose(p), 63, "snpu-smi status failed");
		CHILD_REQUIRE(devs == 1, 64, "%d lines of snpu0", devs);
		CHILD_REQUIRE(mine == 1, 65, "no line '%s...'", me);
		CHILD_REQUIRE(procs == 1, 66, "%d processes listed, not 1",
			      procs);
		_exit(0);
	}
	ASSERT_EQ(kid, waitpid(kid, &status, 0));
	EXPECT_EQ(0, status) TH_LOG("nobody's side failed at step %d",
				    WEXITSTATUS(status));
	close(fd);
}

TEST_HARNESS_MAIN
