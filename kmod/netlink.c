// SPDX-License-Identifier: GPL-2.0
/*
 * snpu generic netlink family "snpu": queries of the devices and of the
 * processes that use them, and the multicast of every snapshot transition
 * to the group "events". The messages are described in
 * uapi/linux/snpu_netlink.h and Documentation/netlink.rst.
 */
#include <linux/atomic.h>
#include <linux/errno.h>
#include <linux/skbuff.h>
#include <net/genetlink.h>
#include <net/net_namespace.h>
#include <linux/snpu_netlink.h>

#include "snpu.h"

/* Offsets in snpu_nl_mcgrps. */
enum snpu_nl_group {
	SNPU_NL_GRP_EVENTS,
};

/*
 * Where a dump is: cb->args[0]; cb->args[1] is the next device index or
 * the registry cursor of the next process.
 */
enum snpu_nl_dump_phase {
	SNPU_NL_DUMP_DEVICES,
	SNPU_NL_DUMP_PROCESSES,
	SNPU_NL_DUMP_DONE,
};

/* Attributes every message starts with: version and kind. */
#define SNPU_NL_COMMON_SIZE	(2 * nla_total_size(sizeof(u32)))

/* SNPU_KIND_DEVICE: index, cores, contexts; memory total and used. */
#define SNPU_NL_DEVICE_SIZE	(SNPU_NL_COMMON_SIZE + \
				 3 * nla_total_size(sizeof(u32)) + \
				 2 * nla_total_size_64bit(sizeof(u64)))

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
};

static const struct genl_multicast_group snpu_nl_mcgrps[] = {
	[SNPU_NL_GRP_EVENTS] = { .name = SNPU_GENL_MCGRP_EVENTS },
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

static struct snpu_device *snpu_nl_device(u32 index)
{
	return index < SNPU_MAX_DEVICES ? snpu_device_get(index) : NULL;
}

/* SNPU_CMD_GET without NLM_F_DUMP: the device SNPU_ATTR_DEV_INDEX names. */
static int snpu_nl_get_doit(struct sk_buff *skb, struct genl_info *info)
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

	msg = genlmsg_new(SNPU_NL_DEVICE_SIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	ret = snpu_nl_fill_device(msg, sdev, info->snd_portid, info->snd_seq, 0);
	if (ret) {
		nlmsg_free(msg);
		return ret;
	}
	return genlmsg_reply(msg, info);
}

/* Start of a dump: it takes no attribute (no extack is available here). */
static int snpu_nl_get_start(struct netlink_callback *cb)
{
	const struct genl_dumpit_info *info = genl_dumpit_info(cb);

	if (info->attrs && info->attrs[SNPU_ATTR_DEV_INDEX])
		return -EINVAL;
	return 0;
}

/*
 * SNPU_CMD_GET with NLM_F_DUMP: every device by index, then every process
 * in registry order. Each call fills @skb until it is full; the next call resumes
 * at the object that did not fit.
 */
static int snpu_nl_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	u32 portid = NETLINK_CB(cb->skb).portid;
	u32 seq = cb->nlh->nlmsg_seq;
	struct snpu_proc_info pi;
	int ret = 0;

	if (cb->args[0] == SNPU_NL_DUMP_DEVICES) {
		for (; cb->args[1] < SNPU_MAX_DEVICES; cb->args[1]++) {
			struct snpu_device *sdev = snpu_nl_device(cb->args[1]);

			if (!sdev)
				continue;
			ret = snpu_nl_fill_device(skb, sdev, portid, seq,
						  NLM_F_MULTI);
			if (ret)
				goto full;
		}
		cb->args[0] = SNPU_NL_DUMP_PROCESSES;
		cb->args[1] = 0;
	}

	if (cb->args[0] == SNPU_NL_DUMP_PROCESSES) {
		for (;;) {
			unsigned long next = cb->args[1];

			if (snpu_proc_info_next(&next, &pi))
				break;
			ret = snpu_nl_fill_process(skb, &pi, portid, seq,
						   NLM_F_MULTI);
			if (ret)
				goto full;
			cb->args[1] = next;
		}
		cb->args[0] = SNPU_NL_DUMP_DONE;
	}
	return skb->len;

full:
	/* Nothing fits in an empty buffer: no later call would do better. */
	return skb->len ? skb->len : ret;
}

static const struct genl_ops snpu_nl_ops[] = {
	{
		.cmd = SNPU_CMD_GET,
		.doit = snpu_nl_get_doit,
		.start = snpu_nl_get_start,
		.dumpit = snpu_nl_get_dumpit,
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
 * @pid: the process, thread group id in the initial pid namespace
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
 * Called at module load once every device exists: a query may then look
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
