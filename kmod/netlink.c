// SPDX-License-Identifier: GPL-2.0
/*
 * snpu generic netlink family "snpu": queries of the devices and of the
 * processes that use them, and the multicast of every snapshot transition
 * to the group "events". The messages are described in
 * uapi/linux/snpu_netlink.h and Documentation/netlink.rst.
 *
 * Who sees what: anyone may query the devices. A dump lists the processes
 * the caller may see (snpu_nl_visible()), by their pid in the caller's pid
 * namespace. Joining "events", whose messages name any user's processes,
 * needs CAP_SYS_ADMIN (GENL_MCAST_CAP_SYS_ADMIN, checked by genetlink).
 */
#include <linux/atomic.h>
#include <linux/build_bug.h>
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/errno.h>
#include <linux/fs.h>
#include <linux/netlink.h>
#include <linux/pid_namespace.h>
#include <linux/skbuff.h>
#include <linux/uidgid.h>
#include <net/genetlink.h>
#include <net/net_namespace.h>
#include <net/sock.h>
#include <linux/snpu_netlink.h>

#include "snpu.h"

/*
 * Without the per-group flag (Linux 6.7, and the stable kernels it was
 * backported to), genetlink would let anyone join "events".
 */
#ifndef GENL_MCAST_CAP_SYS_ADMIN
#error "snpu needs GENL_MCAST_CAP_SYS_ADMIN to restrict the group \"events\""
#endif

/* Offsets in snpu_nl_mcgrps. */
enum snpu_nl_group {
	SNPU_NL_GRP_EVENTS,
};

/*
 * Where a dump is: snpu_nl_dump.phase. SNPU_CMD_GET: devices, then
 * processes; SNPU_CMD_STATS: per device, its counters then its contexts.
 */
enum snpu_nl_dump_phase {
	SNPU_NL_DUMP_DEVICES,
	SNPU_NL_DUMP_PROCESSES,
	SNPU_NL_DUMP_DONE,
	SNPU_NL_DUMP_CONTEXTS,
};

/**
 * struct snpu_nl_dump - a dump in progress, in netlink_callback.ctx
 * @phase: enum snpu_nl_dump_phase
 * @next: the next device index, or the registry cursor of the next process
 * @cursor: SNPU_CMD_STATS: id of the last context of device @next reported
 * @ns: pid namespace of the caller, referenced from start to done
 * @euid: effective uid of the caller
 * @all: the caller may see every process of @ns
 * @own: the caller may see its own processes
 *
 * Who the caller is, is decided once, at the start, in the context of the
 * process that sent the request: later parts of the dump are filled in the
 * context of whichever process reads the socket.
 */
struct snpu_nl_dump {
	unsigned long phase;
	unsigned long next;
	u64 cursor;
	struct pid_namespace *ns;
	kuid_t euid;
	bool all;
	bool own;
};

static_assert(sizeof(struct snpu_nl_dump) <=
	      sizeof_field(struct netlink_callback, ctx));

/* Attributes every message starts with: version and kind. */
#define SNPU_NL_COMMON_SIZE	(2 * nla_total_size(sizeof(u32)))

/* SNPU_KIND_DEVICE: index, cores, contexts; memory total and used. */
#define SNPU_NL_DEVICE_SIZE	(SNPU_NL_COMMON_SIZE + \
				 3 * nla_total_size(sizeof(u32)) + \
				 2 * nla_total_size_64bit(sizeof(u64)))

/* SNPU_KIND_DEV_STATS: index, ready depth and high-water, 11 counters. */
#define SNPU_NL_DEV_STATS_SIZE	(SNPU_NL_COMMON_SIZE + \
				 3 * nla_total_size(sizeof(u32)) + \
				 11 * nla_total_size_64bit(sizeof(u64)))

/* SNPU_KIND_TRANSITION: device, pid, seq, old and new state, result. */
#define SNPU_NL_TRANSITION_SIZE	(SNPU_NL_COMMON_SIZE + \
				 6 * nla_total_size(sizeof(u32)))

/* Every attribute the kernel sends and no request may carry. */
#define SNPU_NL_OUTPUT_ONLY { .type = NLA_REJECT, \
			      .reject_message = "attribute sent by the kernel only" }

/*
 * Requests carry SNPU_ATTR_DEV_INDEX only, below the most devices the
 * module creates (ERANGE above it). Every other attribute is rejected
 * (EINVAL), as are types above SNPU_ATTR_MAX: the family is validated
 * strictly from its first command on (resv_start_op).
 */
static const struct nla_policy snpu_nl_policy[SNPU_ATTR_MAX + 1] = {
	[SNPU_ATTR_VERSION] = SNPU_NL_OUTPUT_ONLY,
	[SNPU_ATTR_KIND] = SNPU_NL_OUTPUT_ONLY,
	[SNPU_ATTR_PAD] = SNPU_NL_OUTPUT_ONLY,
	[SNPU_ATTR_DEV_INDEX] = NLA_POLICY_MAX(NLA_U32, SNPU_MAX_DEVICES - 1),
	[SNPU_ATTR_DEV_CORES] = SNPU_NL_OUTPUT_ONLY,
	[SNPU_ATTR_DEV_MEM_TOTAL] = SNPU_NL_OUTPUT_ONLY,
	[SNPU_ATTR_DEV_MEM_USED] = SNPU_NL_OUTPUT_ONLY,
	[SNPU_ATTR_DEV_CONTEXTS] = SNPU_NL_OUTPUT_ONLY,
	[SNPU_ATTR_PID] = SNPU_NL_OUTPUT_ONLY,
	[SNPU_ATTR_STATE] = SNPU_NL_OUTPUT_ONLY,
	[SNPU_ATTR_OLD_STATE] = SNPU_NL_OUTPUT_ONLY,
	[SNPU_ATTR_NEW_STATE] = SNPU_NL_OUTPUT_ONLY,
	[SNPU_ATTR_RESULT] = SNPU_NL_OUTPUT_ONLY,
	[SNPU_ATTR_SEQ] = SNPU_NL_OUTPUT_ONLY,
	[SNPU_ATTR_BG_THREADS] = SNPU_NL_OUTPUT_ONLY,
	[SNPU_ATTR_CONTEXTS] = SNPU_NL_OUTPUT_ONLY,
	[SNPU_ATTR_IMAGE_BYTES] = SNPU_NL_OUTPUT_ONLY,
	[SNPU_ATTR_STAT_TASKS ... SNPU_ATTR_CTX_TASKS_DONE] = SNPU_NL_OUTPUT_ONLY,
};

/*
 * An event names a process of any user, by its pid in the initial pid
 * namespace: only CAP_SYS_ADMIN may join. genetlink checks it in the user
 * namespace of the joining socket's network namespace; events go to the
 * sockets of the initial one only (the family is not netnsok), whose user
 * namespace is the initial one, or to a NETLINK_LISTEN_ALL_NSID socket
 * whose opener has CAP_NET_BROADCAST there.
 */
static const struct genl_multicast_group snpu_nl_mcgrps[] = {
	[SNPU_NL_GRP_EVENTS] = {
		.name = SNPU_GENL_MCGRP_EVENTS,
		.flags = GENL_MCAST_CAP_SYS_ADMIN,
	},
};

static struct genl_family snpu_nl_family;

/*
 * Set once the family is registered. A transition before that has no
 * listener to miss it: nobody can have joined a group of a family that
 * does not exist yet.
 */
static bool snpu_nl_registered;

/* Start a message of @cmd describing one object of @kind. */
static void *snpu_nl_start(struct sk_buff *skb, u32 portid, u32 seq,
			   int flags, u8 cmd, u32 kind)
{
	void *hdr = genlmsg_put(skb, portid, seq, &snpu_nl_family, flags, cmd);

	if (!hdr)
		return NULL;
	if (nla_put_u32(skb, SNPU_ATTR_VERSION, SNPU_GENL_VERSION) ||
	    nla_put_u32(skb, SNPU_ATTR_KIND, kind)) {
		genlmsg_cancel(skb, hdr);
		return NULL;
	}
	return hdr;
}

static int snpu_nl_fill_device(struct sk_buff *skb, struct snpu_device *sdev,
			       u32 portid, u32 seq, int flags)
{
	void *hdr = snpu_nl_start(skb, portid, seq, flags, SNPU_CMD_GET,
				  SNPU_KIND_DEVICE);

	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, SNPU_ATTR_DEV_INDEX, sdev->index) ||
	    nla_put_u32(skb, SNPU_ATTR_DEV_CORES, sdev->cores) ||
	    nla_put_u64_64bit(skb, SNPU_ATTR_DEV_MEM_TOTAL, sdev->mem_total,
			      SNPU_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, SNPU_ATTR_DEV_MEM_USED,
			      (u64)atomic64_read(&sdev->mem_used),
			      SNPU_ATTR_PAD) ||
	    nla_put_u32(skb, SNPU_ATTR_DEV_CONTEXTS,
			(u32)atomic_read(&sdev->contexts))) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

static int snpu_nl_fill_process(struct sk_buff *skb,
				const struct snpu_proc_info *pi, u32 portid,
				u32 seq, int flags)
{
	void *hdr = snpu_nl_start(skb, portid, seq, flags, SNPU_CMD_GET,
				  SNPU_KIND_PROCESS);

	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, SNPU_ATTR_PID, (u32)pi->nr) ||
	    nla_put_u32(skb, SNPU_ATTR_STATE, pi->state) ||
	    nla_put_u32(skb, SNPU_ATTR_SEQ, pi->seq) ||
	    nla_put_u32(skb, SNPU_ATTR_BG_THREADS, pi->bg_threads) ||
	    nla_put_u32(skb, SNPU_ATTR_CONTEXTS, pi->contexts) ||
	    nla_put_u64_64bit(skb, SNPU_ATTR_IMAGE_BYTES, pi->image_bytes,
			      SNPU_ATTR_PAD)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

static int snpu_nl_put_u64(struct sk_buff *skb, int type, u64 value)
{
	return nla_put_u64_64bit(skb, type, value, SNPU_ATTR_PAD);
}

static int snpu_nl_fill_dev_stats(struct sk_buff *skb,
				  struct snpu_device *sdev, u32 portid,
				  u32 seq, int flags)
{
	void *hdr = snpu_nl_start(skb, portid, seq, flags, SNPU_CMD_STATS,
				  SNPU_KIND_DEV_STATS);
	struct snpu_dev_stats st;

	if (!hdr)
		return -EMSGSIZE;
	snpu_stats_read(sdev, &st);
	if (nla_put_u32(skb, SNPU_ATTR_DEV_INDEX, sdev->index) ||
	    nla_put_u32(skb, SNPU_ATTR_STAT_READY_DEPTH, (u32)st.ready_depth) ||
	    nla_put_u32(skb, SNPU_ATTR_STAT_READY_MAX, (u32)st.ready_max) ||
	    snpu_nl_put_u64(skb, SNPU_ATTR_STAT_TASKS, st.tasks) ||
	    snpu_nl_put_u64(skb, SNPU_ATTR_STAT_TASKS_FAILED, st.failed) ||
	    snpu_nl_put_u64(skb, SNPU_ATTR_STAT_CQES, st.cqes) ||
	    snpu_nl_put_u64(skb, SNPU_ATTR_STAT_CQ_OVERFLOWS, st.overflows) ||
	    snpu_nl_put_u64(skb, SNPU_ATTR_STAT_BUSY_NS, st.busy_ns) ||
	    snpu_nl_put_u64(skb, SNPU_ATTR_STAT_BLOCKS, st.blocks) ||
	    snpu_nl_put_u64(skb, SNPU_ATTR_STAT_SNAPSHOTS, st.snap_count) ||
	    snpu_nl_put_u64(skb, SNPU_ATTR_STAT_SNAPSHOTS_FAILED,
			    st.snap_failed) ||
	    snpu_nl_put_u64(skb, SNPU_ATTR_STAT_SNAPSHOT_NS, st.snap_ns) ||
	    snpu_nl_put_u64(skb, SNPU_ATTR_STAT_GRAPH_LAUNCHES,
			    st.graph_launches) ||
	    snpu_nl_put_u64(skb, SNPU_ATTR_STAT_HAZARD_VISITS,
			    st.graph_visits)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

static int snpu_nl_fill_context(struct sk_buff *skb, unsigned int dev,
				const struct snpu_ctx_stats *cs, u32 portid,
				u32 seq, int flags)
{
	void *hdr = snpu_nl_start(skb, portid, seq, flags, SNPU_CMD_STATS,
				  SNPU_KIND_CONTEXT);
	const struct snpu_ctx_query *q = &cs->q;

	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, SNPU_ATTR_DEV_INDEX, dev) ||
	    nla_put_u32(skb, SNPU_ATTR_PID, (u32)cs->pid) ||
	    nla_put_u32(skb, SNPU_ATTR_STATE, cs->state) ||
	    snpu_nl_put_u64(skb, SNPU_ATTR_CTX_ID, cs->id) ||
	    snpu_nl_put_u64(skb, SNPU_ATTR_CTX_MEM_USED, q->mem_used) ||
	    snpu_nl_put_u64(skb, SNPU_ATTR_CTX_MEM_LIMIT, q->mem_limit) ||
	    snpu_nl_put_u64(skb, SNPU_ATTR_CTX_HOST_USED, q->host_used) ||
	    snpu_nl_put_u64(skb, SNPU_ATTR_CTX_HOST_LIMIT, q->host_limit) ||
	    nla_put_u32(skb, SNPU_ATTR_CTX_STREAMS, q->streams) ||
	    nla_put_u32(skb, SNPU_ATTR_CTX_STREAMS_LIMIT, q->streams_limit) ||
	    nla_put_u32(skb, SNPU_ATTR_CTX_EVENTS, q->events) ||
	    nla_put_u32(skb, SNPU_ATTR_CTX_EVENTS_LIMIT, q->events_limit) ||
	    nla_put_u32(skb, SNPU_ATTR_CTX_TASKS, q->tasks) ||
	    nla_put_u32(skb, SNPU_ATTR_CTX_TASKS_LIMIT, q->tasks_limit) ||
	    nla_put_u32(skb, SNPU_ATTR_CTX_GRAPHS, q->graphs) ||
	    nla_put_u32(skb, SNPU_ATTR_CTX_GRAPHS_LIMIT, q->graphs_limit) ||
	    snpu_nl_put_u64(skb, SNPU_ATTR_CTX_GRAPH_MEM, q->graph_mem) ||
	    snpu_nl_put_u64(skb, SNPU_ATTR_CTX_GRAPH_MEM_LIMIT,
			    q->graph_mem_limit) ||
	    snpu_nl_put_u64(skb, SNPU_ATTR_CTX_TASKS_DONE, cs->tasks_done)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

static struct snpu_device *snpu_nl_device(u32 index)
{
	return index < SNPU_MAX_DEVICES ? snpu_device_get(index) : NULL;
}

/*
 * The reply to a request without NLM_F_DUMP: one message of at most
 * @size bytes, filled by @fill for the device SNPU_ATTR_DEV_INDEX names.
 */
static int snpu_nl_reply_device(struct genl_info *info, size_t size,
				int (*fill)(struct sk_buff *skb,
					    struct snpu_device *sdev,
					    u32 portid, u32 seq, int flags))
{
	struct snpu_device *sdev;
	struct sk_buff *msg;
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, SNPU_ATTR_DEV_INDEX))
		return -EINVAL;
	sdev = snpu_nl_device(nla_get_u32(info->attrs[SNPU_ATTR_DEV_INDEX]));
	if (!sdev) {
		NL_SET_ERR_MSG_ATTR(info->extack,
				    info->attrs[SNPU_ATTR_DEV_INDEX],
				    "no such snpu device");
		return -ENODEV;
	}

	msg = genlmsg_new(size, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	ret = fill(msg, sdev, info->snd_portid, info->snd_seq, 0);
	if (ret) {
		nlmsg_free(msg);
		return ret;
	}
	return genlmsg_reply(msg, info);
}

/* SNPU_CMD_GET without NLM_F_DUMP: the device SNPU_ATTR_DEV_INDEX names. */
static int snpu_nl_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	return snpu_nl_reply_device(info, SNPU_NL_DEVICE_SIZE,
				    snpu_nl_fill_device);
}

/*
 * Start of a dump, in the context of the process that sent the request:
 * who it is, and in which pid namespace. netlink_capable() wants the
 * privilege of the sender and, unless the request named its destination,
 * of the socket's opener; the own-process rule wants the opener's euid to
 * be the sender's. So a socket passed to a more privileged process that
 * writes a request into it learns nothing more than its opener may.
 */
static int snpu_nl_get_start(struct netlink_callback *cb)
{
	struct nlattr **attrs = snpu_genl_dump_attrs(cb);
	struct snpu_nl_dump *d = (struct snpu_nl_dump *)cb->ctx;
	struct socket *sock = NETLINK_CB(cb->skb).sk->sk_socket;

	/* A dump takes no attribute (extack is not available here). */
	if (attrs && attrs[SNPU_ATTR_DEV_INDEX])
		return -EINVAL;

	d->euid = current_euid();
	d->all = netlink_capable(cb->skb, CAP_SYS_ADMIN);
	/* A socket without a file (a kernel one) is no user's. */
	d->own = sock && sock->file &&
		 uid_eq(d->euid, sock->file->f_cred->euid);
	d->ns = get_pid_ns(task_active_pid_ns(current));
	return 0;
}

/* End of a dump, complete or not (the socket closed): drop the start's. */
static int snpu_nl_get_done(struct netlink_callback *cb)
{
	struct snpu_nl_dump *d = (struct snpu_nl_dump *)cb->ctx;

	put_pid_ns(d->ns);
	return 0;
}

/*
 * Whether the caller of dump @d may see process @pi: the process has a pid
 * in the caller's namespace, and the caller has CAP_SYS_ADMIN or is the
 * user the process was when it opened its first snpu file (real and
 * effective uid both the caller's effective uid).
 */
static bool snpu_nl_visible(const struct snpu_nl_dump *d,
			    const struct snpu_proc_info *pi)
{
	if (!pi->nr)
		return false;
	if (d->all)
		return true;
	return d->own && uid_eq(pi->uid, d->euid) && uid_eq(pi->euid, d->euid);
}

/*
 * SNPU_CMD_GET with NLM_F_DUMP: every device by index, then every process
 * the caller may see, in registry order. Each call fills @skb until it is
 * full; the next call resumes at the object that did not fit.
 */
static int snpu_nl_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct snpu_nl_dump *d = (struct snpu_nl_dump *)cb->ctx;
	u32 portid = NETLINK_CB(cb->skb).portid;
	u32 seq = cb->nlh->nlmsg_seq;
	struct snpu_proc_info pi;
	int ret = 0;

	if (d->phase == SNPU_NL_DUMP_DEVICES) {
		for (; d->next < SNPU_MAX_DEVICES; d->next++) {
			struct snpu_device *sdev = snpu_nl_device(d->next);

			if (!sdev)
				continue;
			ret = snpu_nl_fill_device(skb, sdev, portid, seq,
						  NLM_F_MULTI);
			if (ret)
				goto full;
		}
		d->phase = SNPU_NL_DUMP_PROCESSES;
		d->next = 0;
	}

	if (d->phase == SNPU_NL_DUMP_PROCESSES) {
		for (;;) {
			unsigned long next = d->next;

			if (snpu_proc_info_next(&next, d->ns, &pi))
				break;
			if (snpu_nl_visible(d, &pi)) {
				ret = snpu_nl_fill_process(skb, &pi, portid,
							   seq, NLM_F_MULTI);
				if (ret)
					goto full;
			}
			d->next = next;
		}
		d->phase = SNPU_NL_DUMP_DONE;
	}
	return skb->len;

full:
	/* Nothing fits in an empty buffer: no later call would do better. */
	return skb->len ? skb->len : ret;
}

/* SNPU_CMD_STATS without NLM_F_DUMP: the counters of one device. */
static int snpu_nl_stats_doit(struct sk_buff *skb, struct genl_info *info)
{
	return snpu_nl_reply_device(info, SNPU_NL_DEV_STATS_SIZE,
				    snpu_nl_fill_dev_stats);
}

/*
 * Whether the caller of dump @d may see a context: the rule of
 * snpu_nl_visible() for its process.
 */
static bool snpu_nl_ctx_visible(const struct snpu_nl_dump *d,
				const struct snpu_ctx_stats *cs)
{
	const struct snpu_proc_info pi = {
		.nr = cs->pid,
		.uid = cs->uid,
		.euid = cs->euid,
	};

	return snpu_nl_visible(d, &pi);
}

/*
 * SNPU_CMD_STATS with NLM_F_DUMP: per device, its counters, then its
 * contexts the caller may see, in the order of their ids. A call resumes
 * at the device's counters (phase DEVICES) or after the context @cursor.
 */
static int snpu_nl_stats_dumpit(struct sk_buff *skb,
				struct netlink_callback *cb)
{
	struct snpu_nl_dump *d = (struct snpu_nl_dump *)cb->ctx;
	u32 portid = NETLINK_CB(cb->skb).portid;
	u32 seq = cb->nlh->nlmsg_seq;
	struct snpu_ctx_stats cs;
	int ret = 0;

	for (; d->next < SNPU_MAX_DEVICES; d->next++) {
		struct snpu_device *sdev = snpu_nl_device(d->next);

		if (!sdev)
			continue;
		if (d->phase == SNPU_NL_DUMP_DEVICES) {
			ret = snpu_nl_fill_dev_stats(skb, sdev, portid, seq,
						     NLM_F_MULTI);
			if (ret)
				goto full;
			d->phase = SNPU_NL_DUMP_CONTEXTS;
			d->cursor = 0;
		}
		for (;;) {
			u64 cursor = d->cursor;

			if (!snpu_stats_ctx_next(sdev, &cursor, d->ns, &cs))
				break;
			if (snpu_nl_ctx_visible(d, &cs)) {
				ret = snpu_nl_fill_context(skb, sdev->index,
							   &cs, portid, seq,
							   NLM_F_MULTI);
				if (ret)
					goto full;
			}
			d->cursor = cursor;
		}
		d->phase = SNPU_NL_DUMP_DEVICES;
	}
	return skb->len;

full:
	return skb->len ? skb->len : ret;
}

static const struct genl_ops snpu_nl_ops[] = {
	{
		.cmd = SNPU_CMD_GET,
		.doit = snpu_nl_get_doit,
		.start = snpu_nl_get_start,
		.dumpit = snpu_nl_get_dumpit,
		.done = snpu_nl_get_done,
	},
	{
		.cmd = SNPU_CMD_STATS,
		.doit = snpu_nl_stats_doit,
		.start = snpu_nl_get_start,
		.dumpit = snpu_nl_stats_dumpit,
		.done = snpu_nl_get_done,
	},
};

/*
 * parallel_ops: the handlers need no serialization, and need not hold
 * the genetlink mutex every family shares.
 * resv_start_op: every command is validated strictly (header reserved
 * field, message flags, attributes against snpu_nl_policy).
 */
static struct genl_family snpu_nl_family __ro_after_init = {
	.name = SNPU_GENL_NAME,
	.version = SNPU_GENL_VERSION,
	.maxattr = SNPU_ATTR_MAX,
	.policy = snpu_nl_policy,
	.netnsok = false,
	.parallel_ops = true,
	.module = THIS_MODULE,
	.ops = snpu_nl_ops,
	.n_ops = ARRAY_SIZE(snpu_nl_ops),
	.resv_start_op = SNPU_CMD_GET,
	.mcgrps = snpu_nl_mcgrps,
	.n_mcgrps = ARRAY_SIZE(snpu_nl_mcgrps),
};

/**
 * snpu_nl_transition() - multicast a snapshot transition to "events"
 * @dev: index of the device the call was made through
 * @pid: the process, thread group id in the initial pid namespace (every
 *	listener has CAP_SYS_ADMIN: multicast cannot translate per receiver)
 * @seq: the process's transitions so far, after this one
 * @old_state: SNPU_STATE_* before the call
 * @new_state: SNPU_STATE_* after it (@old_state when it failed)
 * @result: 0, or the negative errno the call returns
 *
 * Sends one SNPU_CMD_EVENT message of kind SNPU_KIND_TRANSITION. Nothing
 * is built when the group has no listener. Errors are ignored: an event
 * that cannot be allocated or delivered is lost, as on any netlink
 * multicast. Process context, no spinlock held.
 */
void snpu_nl_transition(unsigned int dev, pid_t pid, u32 seq, u32 old_state,
			u32 new_state, int result)
{
	struct sk_buff *msg;
	void *hdr;

	/* Pairs with the release store of snpu_nl_init(). */
	if (!smp_load_acquire(&snpu_nl_registered))
		return;
	if (genl_has_listeners(&snpu_nl_family, &init_net,
			       SNPU_NL_GRP_EVENTS) <= 0)
		return;

	msg = genlmsg_new(SNPU_NL_TRANSITION_SIZE, GFP_KERNEL);
	if (!msg)
		return;
	hdr = snpu_nl_start(msg, 0, 0, 0, SNPU_CMD_EVENT, SNPU_KIND_TRANSITION);
	if (!hdr)
		goto free;
	if (nla_put_u32(msg, SNPU_ATTR_DEV_INDEX, dev) ||
	    nla_put_u32(msg, SNPU_ATTR_PID, (u32)pid) ||
	    nla_put_u32(msg, SNPU_ATTR_SEQ, seq) ||
	    nla_put_u32(msg, SNPU_ATTR_OLD_STATE, old_state) ||
	    nla_put_u32(msg, SNPU_ATTR_NEW_STATE, new_state) ||
	    nla_put_s32(msg, SNPU_ATTR_RESULT, result))
		goto free;
	genlmsg_end(msg, hdr);
	/* Consumes @msg; -ESRCH when the last listener just left. */
	genlmsg_multicast(&snpu_nl_family, msg, 0, SNPU_NL_GRP_EVENTS,
			  GFP_KERNEL);
	return;

free:
	nlmsg_free(msg);
}

/**
 * snpu_nl_init() - register the generic netlink family "snpu"
 *
 * Context: module load, once every device exists: a query may then look
 * at any of them.
 *
 * Return: 0, or the negative errno of genl_register_family().
 */
int __init snpu_nl_init(void)
{
	int ret = genl_register_family(&snpu_nl_family);

	if (ret)
		return ret;
	/* Pairs with the acquire load of snpu_nl_transition(). */
	smp_store_release(&snpu_nl_registered, true);
	return 0;
}

/**
 * snpu_nl_exit() - unregister the family
 *
 * Called at module unload before the devices go: no snpu file is open
 * then, so no transition runs, and no dump is in progress (a dump holds a
 * module reference). genl_unregister_family() waits for the requests
 * being handled.
 */
void snpu_nl_exit(void)
{
	WRITE_ONCE(snpu_nl_registered, false);
	genl_unregister_family(&snpu_nl_family);
}
