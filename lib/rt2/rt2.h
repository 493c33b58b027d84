/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * rt2 internals: the model, the device interface, the kernel registry,
 * the execution graph and its builder, the passes and the executor. Not
 * installed; the unit tests and benchmarks include it.
 */
#ifndef LIBSNPU_RT2_H
#define LIBSNPU_RT2_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "snpu_rt2.h"

/* ---- model ------------------------------------------------------------ */

#define RT2_T_INPUT	1	/* fed from host memory every run */
#define RT2_T_PARAM	2	/* device resident, set once per executor */
#define RT2_T_VALUE	3	/* an op's result */

struct rt2_tensor {
	struct snpu_rt2_shape shape;
	unsigned int kind;
	int producer;		/* op index, -1 for inputs and params */
	unsigned int input;	/* RT2_T_INPUT: index among inputs */
	void *init;		/* RT2_T_PARAM: copy of the initial data */
	bool output;
};

struct rt2_op {
	struct snpu_rt2_op_desc desc;	/* desc.name points to @name */
	int out;
	char name[32];
	int out2;			/* a second result (SOFTMAX_XENT), or -1 */
	unsigned int nscalars;
	float scalars[SNPU_RT2_MAX_OP_SCALARS];
};

struct snpu_rt2_model {
	struct rt2_tensor *tensors;
	unsigned int ntensors, cap_tensors;
	struct rt2_op *ops;
	unsigned int nops, cap_ops;
	int *outputs;
	unsigned int noutputs, cap_outputs;
	unsigned int ninputs;
};

uint64_t rt2_shape_elems(const struct snpu_rt2_shape *s);
uint64_t rt2_shape_bytes(const struct snpu_rt2_shape *s);
int rt2_shape_check(const struct snpu_rt2_shape *s);
int rt2_op_infer(const struct snpu_rt2_op_desc *op,
		 const struct snpu_rt2_shape *const *in,
		 struct snpu_rt2_shape *out);
int rt2_op_infer2(const struct snpu_rt2_op_desc *op,
		  const struct snpu_rt2_shape *const *in,
		  struct snpu_rt2_shape *out2);

/* ---- device interface --------------------------------------------------- */

/* Most queues (executors) one device interface serves at once. */
#define RT2_DEV_QUEUES	64

/*
 * An executor's queue on a device interface: its stream, and the slot
 * that accounts the tasks it submits (on its stream or on attached
 * streams) and their first error.
 */
struct rt2_dev_queue {
	uint32_t stream;
	unsigned int slot;
};

/*
 * What rt2 needs from a device, as a function table. Device addresses are
 * the device's. @queue_create makes a queue with a stream of its own.
 * @submit queues tasks (struct snpu_task) in order on the streams they
 * name, accounted to queue @q; @wait returns once every task accounted to
 * @q has completed, with the first error one of them completed with since
 * the last @wait (then forgotten), or 0. Event records and stream waits
 * are tasks. @h2d is a synchronous copy (parameters).
 *
 * A task that fails leaves its stream in an error state in which the
 * stream refuses new tasks (as the driver's streams do). @recover, called
 * after a @wait that returned an error (so nothing of @q is in flight),
 * makes every stream that a failed task of @q left in that state accept
 * tasks again: the queue's own stream and the attached streams its custom
 * operators used.
 */
struct rt2_dev_ops {
	int (*mem_alloc)(struct snpu_rt2_dev *d, uint64_t bytes, uint64_t *addr);
	int (*mem_free)(struct snpu_rt2_dev *d, uint64_t addr);
	int (*host_alloc)(struct snpu_rt2_dev *d, size_t bytes, void **ptr,
			  uint32_t *handle);
	void (*host_free)(struct snpu_rt2_dev *d, void *ptr, size_t bytes,
			  uint32_t handle);
	int (*queue_create)(struct snpu_rt2_dev *d, struct rt2_dev_queue *q);
	void (*queue_destroy)(struct snpu_rt2_dev *d, struct rt2_dev_queue *q);
	int (*submit)(struct snpu_rt2_dev *d, const struct rt2_dev_queue *q,
		      const struct snpu_task *tasks, unsigned int count);
	int (*wait)(struct snpu_rt2_dev *d, const struct rt2_dev_queue *q);
	int (*recover)(struct snpu_rt2_dev *d, const struct rt2_dev_queue *q);
	int (*h2d)(struct snpu_rt2_dev *d, uint64_t dst, const void *src,
		   size_t n);
	int (*attached_stream)(struct snpu_rt2_dev *d, const char *key,
			       uint32_t *stream);
	int (*event_create)(struct snpu_rt2_dev *d, uint32_t *event);
	void (*event_destroy)(struct snpu_rt2_dev *d, uint32_t event);
	void (*close)(struct snpu_rt2_dev *d);
	/* LIBSNPU_0.9 (replay.c): graph capture and replay, read-back, stats */
	int (*d2h)(struct snpu_rt2_dev *d, void *dst, uint64_t src, size_t n);
	int (*capture_begin)(struct snpu_rt2_dev *d,
			     const struct rt2_dev_queue *q, uint64_t key);
	int (*capture_end)(struct snpu_rt2_dev *d,
			   const struct rt2_dev_queue *q);
	void (*capture_forget)(struct snpu_rt2_dev *d, uint64_t key);
	void (*queue_stats)(struct snpu_rt2_dev *d,
			    const struct rt2_dev_queue *q,
			    struct snpu_rt2_exec_stats *st);
	/* graph replay (replay.c): gather @q's submissions until @on is off */
	void (*defer)(struct snpu_rt2_dev *d, const struct rt2_dev_queue *q,
		      bool on);
};

/*
 * @capture_begin: record the queue's stream's tasks from now on as a graph
 * cached under @key (0), or, when @key is cached, launch that graph as one
 * task of the queue and return SNPU_GRAPH_CACHED. @capture_end: end the
 * recording and launch it as one task (0), or SNPU_GRAPH_NOT_RECORDED when
 * the tasks went one by one. @queue_stats fills @entries and the device
 * times. All optional but @d2h: a device interface without them cannot
 * run SNPU_RT2_EXEC_GRAPH executors (-EOPNOTSUPP). @defer (optional):
 * while on, @q's tasks are queued but not handed to the device until
 * another submission, a graph launch or @wait does (one system call for
 * a replay's tasks instead of one per node).
 */

/*
 * The device time of a queue's tasks by class (dev.c): each task's CQE
 * completion time against its submission time and the queue's last
 * completion. Task classes, in a task's user_data bits 16..23:
 */
#define RT2_TC_OTHER	0
#define RT2_TC_H2D	1
#define RT2_TC_D2H	2
#define RT2_TC_COMPUTE	3	/* a launch or a graph launch */
#define RT2_TC_COUNT	4

struct rt2_dev_time {
	uint64_t sub_ns[256];	/* submission time by sequence number */
	uint64_t last_done;
	uint64_t ns[RT2_TC_COUNT];
};

void rt2_dev_time_done(struct rt2_dev_time *t, uint8_t seq, unsigned int cls,
		       uint64_t done_ns);

/*
 * The common head of every device interface: its table, and the device's
 * description (SNPU_IOC_GET_INFO) that launches are sized from with
 * snpu_launch_dims(); an interface that leaves @info zero gets launches
 * of the fewest blocks the work bound allows.
 */
struct snpu_rt2_dev {
	const struct rt2_dev_ops *ops;
	struct snpu_info info;
	struct snpu_device *sdev;	/* the snpu device, NULL off one */
};

/* ---- kernel registry ---------------------------------------------------- */

/* Kernel classes (the original's kKernelUseMemory, kKernelLaunch, none). */
#define RT2_CLASS_NORMAL	0U
#define RT2_CLASS_MEMORY	1U
#define RT2_CLASS_LAUNCH	2U

/* Workers of three-worker mode; the class picks one. */
#define RT2_W_MEMORY	0U
#define RT2_W_NORMAL	1U
#define RT2_W_LAUNCH	2U
#define RT2_WORKERS	3

/* Critical-section keys: kernels with a key change shared state. */
#define RT2_CS_NONE	0U
#define RT2_CS_POOL	1U	/* the executor's device memory pool */
#define RT2_CS_DEV	2U	/* the device's queue (mixed legacy kernels) */

/* Kernel flags. */
#define RT2_KF_COMPUTE_LAUNCH	(1U << 0)  /* IsLaunchNode: an op's launch */
#define RT2_KF_NORMAL_WORKER	(1U << 1)  /* BuildTensor-like exception */
#define RT2_KF_MIXED		(1U << 2)  /* legacy: allocates and submits */
#define RT2_KF_FREE		(1U << 3)  /* a device free */
#define RT2_KF_FREE_HOLD	(1U << 4)  /* its hold-address variant */
#define RT2_KF_BUILD_TENSOR	(1U << 5)  /* tensor building consumer */
#define RT2_KF_HOST_MEM		(1U << 6)  /* host memory path */
#define RT2_KF_RUNTIME_PLACED	(1U << 7)  /* placement decided at run time */
#define RT2_KF_GRAPHABLE	(1U << 8)  /* built-in kernel: a graph node */

/* Node types of the execution graph, from the kernel. */
#define RT2_NT_NORMAL	0U
#define RT2_NT_MEMORY	1U
#define RT2_NT_LAUNCH	2U
#define RT2_NT_FREE	3U
#define RT2_NT_FREE_HOLD 4U

enum rt2_kid {
	RT2_K_INFER_SHAPE,
	RT2_K_ALLOC_OUTPUT,
	RT2_K_BUILD_TENSOR,
	RT2_K_LAUNCH_MATMUL,
	RT2_K_LAUNCH_ADD,
	RT2_K_LAUNCH_RELU,
	RT2_K_LAUNCH_CUSTOM,
	RT2_K_LAUNCH_D2H,
	RT2_K_FREE_MEM,
	RT2_K_FREE_MEM_HOLD,
	RT2_K_H2D_COPY,			/* legacy, mixed */
	RT2_K_CALC_DEVICE_COPY_SIZES,
	RT2_K_ALLOC_MEM_HBM,
	RT2_K_SHARE_H2D_COPY_RESULT,
	RT2_K_LAUNCH_H2D_COPY,
	RT2_K_COPY_FLOW_LAUNCH,		/* legacy, mixed */
	RT2_K_CALC_COPY_FLOW_ALLOC_SIZES,
	RT2_K_ALLOC_COPY_FLOW_HBM,
	RT2_K_PREPARE_COPY_FLOW_RESULT,
	RT2_K_LAUNCH_COPY_FLOW_H2D,
	RT2_K_LAUNCH_BIAS_ADD,		/* LIBSNPU_0.9: the training ops */
	RT2_K_LAUNCH_RELU_BWD,
	RT2_K_LAUNCH_SOFTMAX_XENT,
	RT2_K_LAUNCH_COLSUM,
	RT2_K_LAUNCH_ARGMAX,
	RT2_K_LAUNCH_COUNT_EQ,
	RT2_K_LAUNCH_AFFINE,
	RT2_K_LAUNCH_SGD,
	RT2_K_LAUNCH_ALLREDUCE,		/* LIBSNPU_0.11 */
	RT2_K_EMPTY,			/* tests and benchmarks: do nothing, */
	RT2_K_EMPTY_MEMORY,		/* one per class */
	RT2_K_EMPTY_LAUNCH,
	RT2_K_FAIL,			/* tests: returns node->arg as error */
	RT2_K_FREE_TENSOR_MEM,		/* a free without hold variant */
	RT2_K_ALLOC_HOST_CPU_OUTPUT,	/* host memory path */
	RT2_K_ACCESS_MEM_CROSS_STREAM,	/* placed at run time */
	RT2_K_COUNT
};

struct rt2_exec;
struct rt2_node;
typedef int (*rt2_kernel_fn)(struct snpu_rt2_exec *e,
			     const struct rt2_node *n);

struct rt2_kernel {
	const char *name;
	unsigned int cls;
	unsigned int cs_key;
	unsigned int flags;
	rt2_kernel_fn run;
};

extern const struct rt2_kernel rt2_kernels[RT2_K_COUNT];

static inline const struct rt2_kernel *rt2_kernel(unsigned int kid)
{
	return &rt2_kernels[kid];
}

unsigned int rt2_kernel_worker(unsigned int kid);
unsigned int rt2_kernel_node_type(unsigned int kid);
bool rt2_kernel_is_launch(unsigned int kid);	/* IsLaunchOrHasSubGraph */

/* ---- execution graph ---------------------------------------------------- */

/* Most values a node reads or writes; the largest copy flow. */
#define RT2_NODE_IO	8

/*
 * A node. @prio is the compute-node index that orders launches (an
 * internal H2D launch inherits its source's); -1 when it has none. @owner
 * is the owner graph (0, the root, in part 1). @op is the model op the
 * node was lowered from, -1 for none. @count is a copy flow's static
 * count. @in and @out are value (tensor) indices.
 */
struct rt2_node {
	uint32_t id;
	uint16_t kernel;
	uint8_t type;
	uint8_t worker;
	int32_t prio;
	uint32_t owner;
	int32_t op;
	uint32_t count;
	uint32_t nin, nout;
	/*
	 * CSR ranges into the graph's edge arrays (final graph only). With
	 * the fields above and in[0..3], in the record's first 64 bytes:
	 * what ExecutionData's checks read of a node (relation.c).
	 */
	uint32_t pred_off, npred, succ_off, nsucc;
	int32_t in[RT2_NODE_IO];
	int32_t out[RT2_NODE_IO];
	int64_t arg;
	uint32_t seq;		/* creation order, for stable ordering */
	bool dead;		/* removed by a pass (builder only) */
};

struct rt2_edge {
	uint32_t from, to;
};

/* An exact Free -> Launch relation: the free, and a launch using its memory. */
struct rt2_rel {
	uint32_t free, launch;
};

/* The builder: nodes in creation order, edges as a list; passes edit it. */
struct rt2_build {
	struct rt2_node *nodes;
	unsigned int nnodes, cap_nodes;
	struct rt2_edge *edges;
	unsigned int nedges, cap_edges;
	unsigned int seq;
	unsigned int flags;	/* SNPU_RT2_EXEC_* */
	const char *passes[8];	/* names of the passes run, in order */
	unsigned int npasses;
	/* RemoveLaunchFreeEdge: relations, builder indices, deduplicated */
	struct rt2_rel *rels;
	unsigned int nrels, cap_rels;
	unsigned int liveness_edges;	/* ordering edges it added */
	bool no_liveness;	/* tests only: leave the liveness edges out */
};

/* The final graph: IDs in execution order, CSR edges both ways. */
struct rt2_graph {
	struct rt2_node *nodes;
	unsigned int nnodes;
	uint32_t *preds, *succs;
	unsigned int nedges;
	uint32_t *launch_order;	/* launch node IDs by (prio, id) */
	unsigned int nlaunch;
	const char *passes[8];
	unsigned int npasses;
};

int rt2_build_node(struct rt2_build *b, unsigned int kernel, int32_t op,
		   int32_t prio);
int rt2_build_edge(struct rt2_build *b, unsigned int from, unsigned int to);
void rt2_build_fini(struct rt2_build *b);
int rt2_lower(struct rt2_build *b, const struct snpu_rt2_model *m);

struct rt2_pass {
	const char *name;
	int (*run)(struct rt2_build *b);
};

unsigned int rt2_passes(unsigned int flags, const struct rt2_pass **out,
			unsigned int max);
int rt2_run_passes(struct rt2_build *b);
int rt2_pass_copy_flow_launch_fuse(struct rt2_build *b);
int rt2_pass_split_mixed_launch_memory(struct rt2_build *b);
int rt2_pass_remove_launch_free_edge(struct rt2_build *b);
bool rt2_free_eligible(const struct rt2_build *b, unsigned int f);
int rt2_finalize(struct rt2_build *b, struct rt2_graph *g);
void rt2_graph_fini(struct rt2_graph *g);
int rt2_graph_dump(const struct rt2_graph *g, char *buf, size_t len);

/* ---- ExecutionData: the execution-ID CSR of relations (relation.c) ---- */

/*
 * @off (nnodes + 1) and @col (nrels): the relation launches of the free
 * with execution ID i are col[off[i]] .. col[off[i + 1] - 1], ascending.
 * @rank: per node, a relation launch's rank among the relation launches
 * in the strict launch order, else -1; @nranks of them. @req: per node, a
 * free's required generation, 1 + the highest rank of its launches, or 0.
 * @act: per rank, the epoch in which a free activated the launch.
 */
struct rt2_xdata {
	uint32_t nnodes, nrels, nranks;
	uint32_t *off;
	uint32_t *col;
	int32_t *rank;
	uint32_t *req;
	uint32_t *act;
};

int rt2_xdata_build(struct rt2_xdata *x, const struct rt2_graph *g,
		    const struct rt2_rel *rels, unsigned int nrels);
int rt2_xdata_validate(const struct rt2_xdata *x, const struct rt2_graph *g);
void rt2_xdata_fini(struct rt2_xdata *x);
size_t rt2_xdata_bytes(const struct rt2_xdata *x);
int rt2_rels_to_ids(const struct rt2_build *b, const struct rt2_graph *g,
		    struct rt2_rel **out);

/* ---- schedule state (sched.c) ------------------------------------------- */

/*
 * One run's relation state. @epoch isolates runs. @submitted: relation
 * launches submitted successfully so far (they go in launch order, so it
 * is also 1 + the rank of the last one); @freed: successful relation
 * frees; @required: the highest generation an executed free requires;
 * @unmet: activated launches not yet submitted (several frees on one
 * launch count once); @status: the run's original abort status; @eos:
 * the run ended; @wait_gen: what a waiting allocation needs, 0 none.
 */
struct rt2_sched {
	uint32_t epoch;
	uint32_t submitted, freed, required, unmet;
	int status;
	bool eos;
	uint32_t wait_gen;
	unsigned long waits, wakeups;
};

void rt2_sched_begin(struct rt2_sched *s);
bool rt2_sched_free_done(struct rt2_sched *s, const struct rt2_xdata *x,
			 uint32_t id, int ret);
bool rt2_sched_launch_done(struct rt2_sched *s, const struct rt2_xdata *x,
			   uint32_t id, int ret);
bool rt2_sched_abort(struct rt2_sched *s, int err);
bool rt2_sched_eos(struct rt2_sched *s);
int rt2_sched_check(const struct rt2_sched *s, uint32_t gen);

/* ---- size rules --------------------------------------------------------- */

void rt2_h2d_sizes(const struct snpu_rt2_shape *orig,
		   const struct snpu_rt2_shape *run, bool copy_needed,
		   uint64_t *alloc, uint64_t *copy);

int rt2_copy_flow_check(const struct rt2_node *n);

/* ---- executor ----------------------------------------------------------- */

/* Per-run state of a tensor. */
struct rt2_value {
	struct snpu_rt2_shape shape;	/* this run's */
	uint64_t addr;			/* device memory, 0 when none */
	uint64_t alloc_bytes;		/* allocation basis */
	uint64_t copy_bytes;		/* H2D copy size */
	bool owned;			/* @addr is from the pool */
	bool ready;			/* a producer materialised it */
};

/* Host staging of an input or output: pinned memory. */
struct rt2_host {
	void *ptr;
	size_t bytes;
	uint32_t handle;
	int tensor;
	struct snpu_rt2_shape shape;	/* inputs: this run's shape */
};

#define RT2_BLK_FREE	0U	/* reusable at once (stream order) */
#define RT2_BLK_USED	1U
#define RT2_BLK_HELD	2U	/* freed, waits for relation launches */

struct rt2_block {
	uint64_t addr, bytes;
	uint32_t state;
	uint32_t req;		/* RT2_BLK_HELD: generation to wait for */
};

/*
 * The executor's caching device allocator (alloc.c): blocks reused by
 * exact size, a block a hold-address free gave back held until its
 * relation launches were submitted, and an optional limit on the device
 * memory it holds, past which it recycles: wait, stream sync, recycle,
 * retry (without a limit it grows instead, and never recycles). Memory
 * worker only (or the one thread): no lock.
 */
struct rt2_pool {
	struct rt2_block *blk;
	unsigned int nblk, cap;
	unsigned int nheld;
	uint64_t limit;			/* 0: none */
	uint64_t bytes, peak;		/* device memory held */
	unsigned long dev_allocs;	/* device allocations made */
	unsigned long dev_frees;	/* blocks given back to the device */
	unsigned long recycles, waits;
	bool sync_err;			/* a sync saw (and ate) a device error */
	const uint32_t *submitted;	/* the published generation, or NULL */
};

#define RT2_ALLOC_RECYCLE	1	/* rt2_alloc_get(): must recycle */

int rt2_alloc_get(struct rt2_pool *p, struct snpu_rt2_dev *d, uint64_t bytes,
		  uint64_t *addr, uint32_t *gen);
int rt2_alloc_put(struct rt2_pool *p, uint64_t addr, uint32_t req);
unsigned int rt2_alloc_recycle(struct rt2_pool *p, struct snpu_rt2_dev *d,
			       uint32_t submitted, uint64_t need);
void rt2_alloc_release(struct rt2_pool *p);
void rt2_alloc_fini(struct rt2_pool *p, struct snpu_rt2_dev *d);

/*
 * Three-worker mode (exec.c): each worker is a *strand*, a serial
 * executor of the nodes of its class in its order - the memory worker's
 * in execution-ID order and the launch worker's in the strict launch
 * order (their orders are their queues: the next node runs once its
 * pending count is 0), the normal worker's from a queue of ready nodes
 * that many threads fill and its one holder empties. A thread runs a
 * strand's nodes only while it holds the strand's claim, so each strand
 * runs one node at a time, in its order, whichever thread runs it. The
 * threads: the caller, and up to three helpers, woken only when they
 * pay (see the hand-over section of exec.c).
 */
struct rt2_strand {
	uint32_t claim;			/* 1 while a thread runs its nodes */
	uint32_t next;			/* nodes completed this run */
	uint32_t n;			/* its nodes */
	const uint32_t *order;		/* memory, launch: IDs in order */
	uint32_t *slot;			/* normal: the queue, RT2_NO_NODE */
	uint32_t tail;			/* normal: producers' next slot */
} __attribute__((aligned(64)));

#define RT2_NO_NODE	UINT32_MAX

/* A helper thread and the word it parks on. */
#define RT2_T_RUN	0U	/* in a run */
#define RT2_T_IDLE	1U	/* idle (spinning, or about to sleep) */
#define RT2_T_PARKED	2U	/* idle, asleep on its word */
#define RT2_T_WAKE	3U	/* woken into the run: @inside counts it */
#define RT2_T_QUIT	4U

struct rt2_thread {
	struct snpu_rt2_exec *e;
	uint32_t word;			/* RT2_T_*, a futex */
	uint64_t woken_ns;		/* when it was woken, for the latency */
	pthread_t tid;
} __attribute__((aligned(64)));

/* How the threads share a run. */
#define RT2_HAND_AUTO	0U	/* wake helpers when they pay */
#define RT2_HAND_EAGER	1U	/* tests: whenever another strand has work */

struct rt2_hand {
	uint32_t inside;		/* threads in the run's work loop */
	uint32_t spinning;		/* idle helpers spinning */
	uint32_t caller;		/* the caller's futex: 1 while it waits */
	uint32_t stop;			/* the run stops: an error */
	unsigned int ncpu;		/* CPUs this process may run on */
	unsigned int policy;		/* RT2_HAND_* */
	bool eager;			/* this run wakes helpers for parallel work */
	bool ordered;			/* the caller runs alone, in ID order */
	uint32_t cur;			/* ... the node it runs */
	uint64_t node_ns;		/* a node's host time, averaged over runs */
	uint64_t wake_ns;		/* a helper's wake-up latency, averaged */
	unsigned long wakes;		/* helpers woken */
	unsigned long switches;		/* ordered runs the strands took over */
};

struct snpu_rt2_exec {
	const struct snpu_rt2_model *model;
	struct snpu_rt2_dev *dev;
	struct rt2_dev_queue dq;	/* the executor's stream */
	bool has_dq;
	struct snpu_rt2_exec_opts opts;
	struct rt2_graph g;
	struct rt2_pool pool;
	struct rt2_value *vals;
	struct rt2_value *vals0;	/* template: params and static shapes */
	uint64_t *hint;			/* per value: its address in the last run */
	unsigned int nvals;
	struct rt2_xdata xd;		/* relations (three workers) */
	struct rt2_sched sched;
	struct rt2_host *in, *out;
	unsigned int nin, nout;
	uint32_t *events;		/* per op: fork and join events, or 0 */
	/* scheduling */
	uint32_t *indeg;		/* static in-degrees */
	uint32_t *pending;		/* per run */
	uint32_t *mem_order;		/* memory-worker node IDs, ascending */
	unsigned int nmem;
	int err;			/* first error of this run */
	struct rt2_strand strand[RT2_WORKERS];
	struct rt2_hand hand;
	struct rt2_thread thr[RT2_WORKERS];
	unsigned int nthr;
	unsigned long runs;
	struct rt2_replay *replay;	/* SNPU_RT2_EXEC_GRAPH (replay.c) */
	struct snpu_comm *comm;		/* of the ALLREDUCE ops, or NULL */
};

int rt2_exec_create_graph(const struct snpu_rt2_model *m,
			  struct snpu_rt2_dev *dev,
			  const struct snpu_rt2_exec_opts *opts,
			  struct rt2_build *b, struct snpu_rt2_exec **ep);

int rt2_pool_get(struct snpu_rt2_exec *e, int32_t t, uint64_t bytes,
		 uint64_t *addr);
void rt2_pool_put(struct snpu_rt2_exec *e, uint64_t addr, uint32_t req);

/* ---- graph replay (replay.c) -------------------------------------------- */

int rt2_replay_init(struct snpu_rt2_exec *e);
void rt2_replay_fini(struct snpu_rt2_exec *e);
int rt2_replay_node(struct snpu_rt2_exec *e, const struct rt2_node *n);
int rt2_replay_alloc(struct snpu_rt2_exec *e, int32_t t, uint64_t bytes,
		     uint64_t *addr);
void rt2_replay_run_end(struct snpu_rt2_exec *e, int err);
bool rt2_replay_ready(struct snpu_rt2_exec *e);
int rt2_replay_run(struct snpu_rt2_exec *e,
		   int (*run)(struct snpu_rt2_exec *, const struct rt2_node *,
			      unsigned int));

/* The context of a custom operator. */
struct snpu_rt2_kctx {
	struct snpu_rt2_exec *exec;
	const struct rt2_node *node;
};

#endif /* LIBSNPU_RT2_H */
