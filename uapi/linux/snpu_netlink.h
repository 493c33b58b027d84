/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note OR MIT */
/*
 * snpu - soft NPU: the generic netlink family "snpu" (see
 * Documentation/netlink.rst).
 *
 * The family reports the devices and the processes that use them, and
 * multicasts every process snapshot transition to the group "events". It
 * exists in the initial network namespace only.
 *
 * Who sees what: anyone may query the devices. A dump lists every process
 * to a caller with CAP_SYS_ADMIN, and to any other caller only the
 * processes that opened their first snpu file with real and effective uid
 * both the caller's effective uid; in both cases only the processes that
 * have a pid in the caller's pid namespace, by that pid. Joining "events"
 * needs CAP_SYS_ADMIN (EPERM otherwise); its process ids are thread group
 * ids in the initial pid namespace.
 *
 * Every message carries SNPU_ATTR_VERSION and SNPU_ATTR_KIND, and
 * describes one object, with flat attributes (no nesting):
 *
 *   kind                  command          attributes
 *   SNPU_KIND_DEVICE      SNPU_CMD_GET     DEV_INDEX, DEV_CORES,
 *                                          DEV_MEM_TOTAL, DEV_MEM_USED,
 *                                          DEV_CONTEXTS
 *   SNPU_KIND_PROCESS     SNPU_CMD_GET     PID, STATE, SEQ, BG_THREADS,
 *                                          CONTEXTS, IMAGE_BYTES
 *   SNPU_KIND_TRANSITION  SNPU_CMD_EVENT   DEV_INDEX, PID, SEQ, OLD_STATE,
 *                                          NEW_STATE, RESULT
 *   SNPU_KIND_DEV_STATS   SNPU_CMD_STATS   DEV_INDEX, STAT_* (ABI 0.9)
 *   SNPU_KIND_CONTEXT     SNPU_CMD_STATS   DEV_INDEX, CTX_*, PID, STATE
 *                                          (ABI 0.9)
 *
 * A receiver ignores attributes it does not know, and messages of a kind
 * it does not know: later versions may add both. Requests carry only the
 * attributes their command documents; the kernel refuses any other
 * (EINVAL), and refuses a non-zero genlmsghdr.reserved.
 */
#ifndef _UAPI_LINUX_SNPU_NETLINK_H
#define _UAPI_LINUX_SNPU_NETLINK_H

#define SNPU_GENL_NAME		"snpu"
#define SNPU_GENL_VERSION	1
#define SNPU_GENL_MCGRP_EVENTS	"events"

/**
 * enum snpu_genl_cmd - commands of the family
 * @SNPU_CMD_UNSPEC: not a command
 * @SNPU_CMD_GET: request. With SNPU_ATTR_DEV_INDEX and no NLM_F_DUMP: one
 *	SNPU_KIND_DEVICE reply for that device (ENODEV when it does not
 *	exist, ERANGE for an index of 16 or more, EINVAL without the
 *	attribute).
 *	With NLM_F_DUMP and no attribute (EINVAL with one): one
 *	SNPU_KIND_DEVICE message per device by index, then one
 *	SNPU_KIND_PROCESS message per process with an open snpu file that
 *	the caller may see, in registry order. Replies have this command
 *	too.
 * @SNPU_CMD_EVENT: multicast to SNPU_GENL_MCGRP_EVENTS, never a request
 *	(EOPNOTSUPP): one SNPU_KIND_TRANSITION per attempted snapshot
 *	transition, including the refused ones. Joining the group needs
 *	CAP_SYS_ADMIN (EPERM)
 * @SNPU_CMD_STATS: request (ABI 0.9). With SNPU_ATTR_DEV_INDEX and no
 *	NLM_F_DUMP: one SNPU_KIND_DEV_STATS reply, the device's counters
 *	(errors as SNPU_CMD_GET). With NLM_F_DUMP and no attribute: per
 *	device by index, its SNPU_KIND_DEV_STATS message, then one
 *	SNPU_KIND_CONTEXT message per open context of the device whose
 *	process the caller may see (the rule of SNPU_CMD_GET's processes), in
 *	the order the contexts were opened. Replies have this command too
 * @__SNPU_CMD_MAX: one past the last command
 * @SNPU_CMD_MAX: the last command
 */
enum snpu_genl_cmd {
	SNPU_CMD_UNSPEC,
	SNPU_CMD_GET,
	SNPU_CMD_EVENT,
	SNPU_CMD_STATS,

	__SNPU_CMD_MAX,
	SNPU_CMD_MAX = __SNPU_CMD_MAX - 1
};

/**
 * enum snpu_genl_kind - what a message describes (SNPU_ATTR_KIND)
 * @SNPU_KIND_UNSPEC: never sent
 * @SNPU_KIND_DEVICE: a device /dev/snpuN
 * @SNPU_KIND_PROCESS: a process (thread group) with an open snpu file, and
 *	its snapshot state
 * @SNPU_KIND_TRANSITION: a snapshot transition a process attempted through
 *	one of its files, or the return to RUNNING when the last file of a
 *	locked process is closed
 * @SNPU_KIND_DEV_STATS: the counters of a device (ABI 0.9)
 * @SNPU_KIND_CONTEXT: an open context (file) of a device, its usage
 *	against each quota (ABI 0.9)
 */
enum snpu_genl_kind {
	SNPU_KIND_UNSPEC,
	SNPU_KIND_DEVICE,
	SNPU_KIND_PROCESS,
	SNPU_KIND_TRANSITION,
	SNPU_KIND_DEV_STATS,
	SNPU_KIND_CONTEXT,
};

/**
 * enum snpu_genl_attr - attributes; __u32 unless said otherwise
 * @SNPU_ATTR_UNSPEC: never sent
 * @SNPU_ATTR_VERSION: in every message: SNPU_GENL_VERSION of the kernel
 * @SNPU_ATTR_KIND: in every message: enum snpu_genl_kind
 * @SNPU_ATTR_PAD: padding before a __u64 attribute, to be skipped
 * @SNPU_ATTR_DEV_INDEX: N of /dev/snpuN; the only attribute a request
 *	(SNPU_CMD_GET without NLM_F_DUMP) carries, 0 to 15. A transition
 *	names the device of the file the call was made through; the snapshot
 *	state itself covers every file of the process
 * @SNPU_ATTR_DEV_CORES: compute cores of the device
 * @SNPU_ATTR_DEV_MEM_TOTAL: __u64: device memory in bytes
 * @SNPU_ATTR_DEV_MEM_USED: __u64: device memory allocated by all its
 *	contexts, in bytes (sysfs mem_used)
 * @SNPU_ATTR_DEV_CONTEXTS: open contexts of the device (sysfs contexts)
 * @SNPU_ATTR_PID: thread group id: in a dump, in the pid namespace of the
 *	caller; in an event, in the initial pid namespace
 * @SNPU_ATTR_STATE: SNPU_STATE_* (linux/snpu.h) of the process
 * @SNPU_ATTR_OLD_STATE: SNPU_STATE_* before the transition
 * @SNPU_ATTR_NEW_STATE: SNPU_STATE_* after it; equal to
 *	SNPU_ATTR_OLD_STATE when the transition failed and changed nothing
 * @SNPU_ATTR_RESULT: __s32: 0, or the negative errno the call returned
 *	(-EBADFD for a transition the state does not allow)
 * @SNPU_ATTR_SEQ: transitions of the process so far (the state page's seq)
 * @SNPU_ATTR_BG_THREADS: registered background threads of the process
 * @SNPU_ATTR_CONTEXTS: open snpu contexts of the process, on all devices
 * @SNPU_ATTR_IMAGE_BYTES: __u64: size of the process's last backup image,
 *	0 when it has none
 * @SNPU_ATTR_STAT_TASKS: __u64: tasks the device completed since load,
 *	whatever their result
 * @SNPU_ATTR_STAT_TASKS_FAILED: __u64: of them, tasks with an error
 * @SNPU_ATTR_STAT_CQES: __u64: completions written to completion queues
 * @SNPU_ATTR_STAT_CQ_OVERFLOWS: __u64: completions that waited for room
 *	in a full completion queue
 * @SNPU_ATTR_STAT_READY_DEPTH: works (tasks, graph nodes) waiting on the
 *	device's run queues now
 * @SNPU_ATTR_STAT_READY_MAX: the most works ever waiting there at once
 * @SNPU_ATTR_STAT_BUSY_NS: __u64: nanoseconds the cores spent running
 *	blocks, all cores together
 * @SNPU_ATTR_STAT_BLOCKS: __u64: blocks the cores ran
 * @SNPU_ATTR_STAT_SNAPSHOTS: __u64: snapshot transitions (LOCK, BACKUP,
 *	RESTORE, UNLOCK) made through the device's files
 * @SNPU_ATTR_STAT_SNAPSHOTS_FAILED: __u64: of them, failed ones
 * @SNPU_ATTR_STAT_SNAPSHOT_NS: __u64: nanoseconds they took in all
 * @SNPU_ATTR_STAT_GRAPH_LAUNCHES: __u64: graph launches completed
 * @SNPU_ATTR_STAT_HAZARD_VISITS: __u64: hazard-list entries the graph
 *	launches visited
 * @SNPU_ATTR_CTX_ID: __u64: the context's id, unique since the module was
 *	loaded
 * @SNPU_ATTR_CTX_MEM_USED: __u64: device memory bytes of the context
 * @SNPU_ATTR_CTX_MEM_LIMIT: __u64: its quota
 * @SNPU_ATTR_CTX_HOST_USED: __u64: host memory bytes of the context
 * @SNPU_ATTR_CTX_HOST_LIMIT: __u64: its quota
 * @SNPU_ATTR_CTX_STREAMS: streams of the context
 * @SNPU_ATTR_CTX_STREAMS_LIMIT: its quota
 * @SNPU_ATTR_CTX_EVENTS: events of the context
 * @SNPU_ATTR_CTX_EVENTS_LIMIT: its quota
 * @SNPU_ATTR_CTX_TASKS: tasks in flight in the context
 * @SNPU_ATTR_CTX_TASKS_LIMIT: its quota
 * @SNPU_ATTR_CTX_GRAPHS: graphs of the context
 * @SNPU_ATTR_CTX_GRAPHS_LIMIT: its quota
 * @SNPU_ATTR_CTX_GRAPH_MEM: __u64: kernel memory bytes of its graphs
 * @SNPU_ATTR_CTX_GRAPH_MEM_LIMIT: __u64: its quota
 * @SNPU_ATTR_CTX_TASKS_DONE: __u64: tasks the context completed since it
 *	was opened
 * @__SNPU_ATTR_MAX: one past the last attribute
 * @SNPU_ATTR_MAX: the last attribute
 */
enum snpu_genl_attr {
	SNPU_ATTR_UNSPEC,
	SNPU_ATTR_VERSION,
	SNPU_ATTR_KIND,
	SNPU_ATTR_PAD,
	SNPU_ATTR_DEV_INDEX,
	SNPU_ATTR_DEV_CORES,
	SNPU_ATTR_DEV_MEM_TOTAL,
	SNPU_ATTR_DEV_MEM_USED,
	SNPU_ATTR_DEV_CONTEXTS,
	SNPU_ATTR_PID,
	SNPU_ATTR_STATE,
	SNPU_ATTR_OLD_STATE,
	SNPU_ATTR_NEW_STATE,
	SNPU_ATTR_RESULT,
	SNPU_ATTR_SEQ,
	SNPU_ATTR_BG_THREADS,
	SNPU_ATTR_CONTEXTS,
	SNPU_ATTR_IMAGE_BYTES,
	SNPU_ATTR_STAT_TASKS,
	SNPU_ATTR_STAT_TASKS_FAILED,
	SNPU_ATTR_STAT_CQES,
	SNPU_ATTR_STAT_CQ_OVERFLOWS,
	SNPU_ATTR_STAT_READY_DEPTH,
	SNPU_ATTR_STAT_READY_MAX,
	SNPU_ATTR_STAT_BUSY_NS,
	SNPU_ATTR_STAT_BLOCKS,
	SNPU_ATTR_STAT_SNAPSHOTS,
	SNPU_ATTR_STAT_SNAPSHOTS_FAILED,
	SNPU_ATTR_STAT_SNAPSHOT_NS,
	SNPU_ATTR_STAT_GRAPH_LAUNCHES,
	SNPU_ATTR_STAT_HAZARD_VISITS,
	SNPU_ATTR_CTX_ID,
	SNPU_ATTR_CTX_MEM_USED,
	SNPU_ATTR_CTX_MEM_LIMIT,
	SNPU_ATTR_CTX_HOST_USED,
	SNPU_ATTR_CTX_HOST_LIMIT,
	SNPU_ATTR_CTX_STREAMS,
	SNPU_ATTR_CTX_STREAMS_LIMIT,
	SNPU_ATTR_CTX_EVENTS,
	SNPU_ATTR_CTX_EVENTS_LIMIT,
	SNPU_ATTR_CTX_TASKS,
	SNPU_ATTR_CTX_TASKS_LIMIT,
	SNPU_ATTR_CTX_GRAPHS,
	SNPU_ATTR_CTX_GRAPHS_LIMIT,
	SNPU_ATTR_CTX_GRAPH_MEM,
	SNPU_ATTR_CTX_GRAPH_MEM_LIMIT,
	SNPU_ATTR_CTX_TASKS_DONE,

	__SNPU_ATTR_MAX,
	SNPU_ATTR_MAX = __SNPU_ATTR_MAX - 1
};

#endif /* _UAPI_LINUX_SNPU_NETLINK_H */
