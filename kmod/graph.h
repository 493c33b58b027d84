/* SPDX-License-Identifier: GPL-2.0 */
/*
 * snpu graphs: definitions checked and compacted once, launched as one
 * task. Shared by graph.c (definitions, launches) and the scheduler.
 */
#ifndef _SNPU_GRAPH_H
#define _SNPU_GRAPH_H

#include "snpu.h"
#include "core/coll.h"
#include "core/graph.h"

/**
 * struct snpu_gdef - one node of a definition
 * @tmpl: the node's work with its plain addresses resolved; the others
 *        are filled in per instance
 * @res: per address of the task, its resource (a slot, SNPU_GRES_SCRATCH)
 *       or SNPU_GRES_PLAIN
 * @off: per address bound to a resource, the offset into it
 */
struct snpu_gdef {
	struct snpu_work tmpl;
	u8 res[SNPU_GNODE_MAX_ACC];
	u64 off[SNPU_GNODE_MAX_ACC];
};

/**
 * struct snpu_gcoll - a collective node of a definition
 * @node: its index
 * @handle: the rank handle its task names
 * @rank: that rank, at create
 * @desc: its collective, for the communicator's ranks at create
 * @kaddr: kernel addresses of its recv (0) and send (1) buffers where they
 *         are plain addresses, else NULL
 *
 * A launch looks the handle up again and refuses a rank that is not the
 * same rank of a communicator of as many ranks: the accesses and their
 * extents were checked for those.
 */
struct snpu_gcoll {
	u32 node;
	u32 handle;
	u32 rank;
	struct snpu_coll_desc desc;
	void *kaddr[2];
};

/* snpu_gnode.state: the node has completed; a launch is stitched to it. */
#define SNPU_GNODE_DONE		BIT(0)
#define SNPU_GNODE_STITCHED	BIT(1)

/**
 * struct snpu_gnode - a node of one launch
 * @work: what the cores run
 * @inst: the launch's instance
 * @index: the node's index in the definition
 * @pending: predecessors not complete, hazards of the launch before not
 *           complete, and for a root the launch's start; whoever brings
 *           it to 0 owns the node's run
 * @state: SNPU_GNODE_DONE, set by the node's completion, and
 *         SNPU_GNODE_STITCHED, set by the commit that stitches the next
 *         launch to this one: whichever of the two comes second tells the
 *         next launch's nodes (see snpu_graph_stitch_locked())
 *
 * A node's completion takes no lock: @pending of its successors, @state
 * and the instance's hold are atomics.
 */
struct snpu_gnode {
	struct snpu_work work;
	struct snpu_ginst *inst;
	u32 index;
	atomic_t pending;
	atomic_t state;
};

/**
 * struct snpu_ginst - the state of one launch of a graph
 * @node: in the graph's free instances (under sched_lock)
 * @graph: the graph
 * @job: the launch, while in use
 * @next: the launch stitched to this one, which it tells of its nodes'
 *        completions (set under sched_lock before any node is marked
 *        SNPU_GNODE_STITCHED; read by completions that find the mark)
 * @ready: nodes ready before the launch was dispatched (under sched_lock)
 * @hold: what the launch's completion waits for: its nodes, the launch
 *        before it when stitched, its own first dispatch; the one who
 *        brings it to 0 completes the launch
 * @error: the first node's failure, or -ECANCELED
 * @dispatched: the launch was dispatched once (under sched_lock)
 * @aliased: two of the bound ranges, or one and a plain address of the
 *           graph, overlap: the launch after this one is not stitched
 * @bound: @addr and @base are what the node works were filled with
 * @visits: hazard-list entries visited for this launch
 * @invalid: of those, entries whose nodes do not conflict
 * @addr: device address of each slot and of the scratch, as bound
 * @base: kernel address of each
 * @mem: the allocations bound, referenced while the launch is in flight
 * @nodes: one per node of the graph
 */
struct snpu_ginst {
	struct list_head node;
	struct snpu_graph *graph;
	struct snpu_job *job;
	struct snpu_ginst *next;
	struct list_head ready;
	atomic_t hold;
	atomic_t error;
	bool dispatched;
	bool aliased;
	bool bound;
	atomic_t visits;
	atomic_t invalid;
	u64 addr[SNPU_GRES_COUNT];
	void *base[SNPU_GRES_COUNT];
	struct snpu_mem *mem[SNPU_GRES_COUNT];
	struct snpu_gnode nodes[];
};

/**
 * struct snpu_graph - a graph definition, SNPU_OBJ_GRAPH
 * @obj: handle
 * @ref: the handle holds one, each launch in flight one
 * @ctx: owner
 * @nodes: number of nodes
 * @slots: number of boundary slots
 * @bytes: the extent of each slot, and at SNPU_GRES_SCRATCH the scratch's
 * @align: per slot and scratch, 3 when a node reads it as 32-bit elements
 *         (its address must be 4-aligned), else 0
 * @def: the nodes
 * @fanout_off: CSR offsets of @fanout, @nodes + 1
 * @fanout: the successors of each node
 * @fanin: the number of predecessors of each node
 * @roots: the nodes without predecessors
 * @nroots: their number
 * @acc_off: CSR offsets of @acc, @nodes + 1
 * @acc: the accesses of each node
 * @haz_off: CSR offsets of @haz, @nodes + 1; NULL when never stitched
 * @haz: the hazard list of each node (see snpu_graph_hazards())
 * @plain: the plain ranges, merged into disjoint intervals
 * @nplain: their number
 * @mems: the allocations of the plain addresses, referenced
 * @nmems: their number
 * @free: instances not in use (under the context's sched_lock)
 * @inst_bytes: the size of an instance
 * @charged: bytes counted against the context's graph memory
 * @free_work: frees the graph when a core dropped the last reference
 * @colls: its collective nodes, in index order
 * @ncolls: their number; a graph with any is never stitched
 * @src: the definition as the create ioctl took it, kept for checkpoint
 *       images: the nodes, then the fanin offsets and the fanin when
 *       there are edges (charged with the rest)
 * @src_bytes: the bytes of @src an image holds
 * @edges: number of edges
 */
struct snpu_graph {
	struct snpu_object obj;
	struct kref ref;
	struct snpu_context *ctx;
	u32 nodes;
	u32 slots;
	u64 bytes[SNPU_GRES_COUNT];
	u8 align[SNPU_GRES_COUNT];
	struct snpu_gdef *def;
	u32 *fanout_off;
	u32 *fanout;
	u32 *fanin;
	u32 *roots;
	u32 nroots;
	u32 *acc_off;
	struct snpu_gacc *acc;
	u32 *haz_off;
	u32 *haz;
	struct snpu_gacc *plain;
	u32 nplain;
	struct snpu_mem **mems;
	u32 nmems;
	struct list_head free;
	size_t inst_bytes;
	u64 charged;
	struct work_struct free_work;
	struct snpu_gcoll *colls;
	u32 ncolls;
	void *src;
	u64 src_bytes;
	u32 edges;
};

#endif /* _SNPU_GRAPH_H */
