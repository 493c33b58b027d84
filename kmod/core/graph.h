/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Graph definitions: the checks of SNPU_IOC_GRAPH_CREATE that need no
 * handle or address, and the hazard lists that stitch launches. Pure C:
 * the caller provides every array.
 */
#ifndef _SNPU_CORE_GRAPH_H
#define _SNPU_CORE_GRAPH_H

#include "core.h"

/* Resources an access names: slots 0..7, the scratch, plain addresses. */
#define SNPU_GRES_SCRATCH	SNPU_GRAPH_MAX_SLOTS
#define SNPU_GRES_COUNT		(SNPU_GRAPH_MAX_SLOTS + 1)
#define SNPU_GRES_PLAIN		0xff

/* Addresses a node may name: a launch's arguments, at most. */
#define SNPU_GNODE_MAX_ACC	SNPU_KERNEL_MAX_ARGS

/**
 * struct snpu_gacc - one device range a graph node reads or writes
 * @start: offset in the slot or scratch, or device address (plain)
 * @end: @start plus the extent
 * @node: the node's index
 * @res: slot index, SNPU_GRES_SCRATCH or SNPU_GRES_PLAIN
 * @write: the node writes the range
 * @addr: which address of the task: launch argument, or 0 (destination)
 *        and 1 (source) of a copy, 0 of a memset
 * @word: the range holds 32-bit elements: its address must be 4-aligned
 */
struct snpu_gacc {
	__u64 start;
	__u64 end;
	__u32 node;
	__u8 res;
	__u8 write;
	__u8 addr;
	__u8 word;
};

int snpu_graph_check_create(const struct snpu_graph_create *c);
int snpu_graph_check_fanin(const __u32 *offsets, const __u32 *fanin,
			   __u32 nodes, __u32 edges, __u32 *mark);
int snpu_graph_node_acc(const struct snpu_graph_node *n, __u32 index,
			__u32 slots, const __u64 *slot_bytes,
			__u64 scratch_bytes, struct snpu_gacc *acc);
int snpu_graph_coll_acc(const struct snpu_graph_node *n, __u32 index,
			__u32 nranks, __u32 rank, __u32 slots,
			const __u64 *slot_bytes, __u64 scratch_bytes,
			struct snpu_gacc *acc);
bool snpu_gacc_conflict(const struct snpu_gacc *a, const struct snpu_gacc *b);
bool snpu_gnode_conflict(const struct snpu_gacc *a, __u32 na,
			 const struct snpu_gacc *b, __u32 nb);
int snpu_graph_hazards(struct snpu_gacc *acc, __u32 nacc, __u32 nodes,
		       __u64 *pairs, __u32 max, __u32 *offsets, __u32 *list,
		       __u32 *count);
__u32 snpu_graph_plain_merge(struct snpu_gacc *acc, __u32 nacc);
bool snpu_graph_plain_overlaps(const struct snpu_gacc *iv, __u32 n,
			       __u64 start, __u64 end);

#endif /* _SNPU_CORE_GRAPH_H */
