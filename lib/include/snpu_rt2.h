/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * rt2 - the execution-graph executor of libsnpu.
 *
 * A model is a small graph of tensors and ops built with the
 * snpu_rt2_model_*() calls. An executor lowers a model (read only: one
 * model may back any number of executors) into an execution graph of
 * kernel nodes, optimises it with its passes, and runs it on a device
 * interface, as many times as wanted, in single-thread mode or with three
 * workers (memory, normal, launch). See Documentation/rt2.rst.
 *
 * Same manners as <snpu.h>: 0 or a count on success, -errno on failure,
 * no global state. A model may be read by any number of threads at once
 * but changed by one. An executor runs one snpu_rt2_exec_run() at a time.
 */
#ifndef LIBSNPU_SNPU_RT2_H
#define LIBSNPU_SNPU_RT2_H

#include <stddef.h>
#include <stdint.h>

#include <snpu.h>

#ifdef __cplusplus
extern "C" {
#endif

struct snpu_rt2_model;
struct snpu_rt2_exec;
struct snpu_rt2_dev;
struct snpu_rt2_kctx;

/* Element types. */
#define SNPU_RT2_F32		1
#define SNPU_RT2_I32		2

/* Most dimensions of a tensor; most inputs of one op. */
#define SNPU_RT2_MAX_DIMS	4
#define SNPU_RT2_MAX_OP_INPUTS	4

/**
 * struct snpu_rt2_shape - element type and shape of a tensor
 * @dtype: SNPU_RT2_F32 or SNPU_RT2_I32
 * @ndim: 1 to SNPU_RT2_MAX_DIMS
 * @dims: the dimensions, row major; the ones past @ndim zero
 */
struct snpu_rt2_shape {
	uint32_t dtype;
	uint32_t ndim;
	uint32_t dims[SNPU_RT2_MAX_DIMS];
};

/* Op types. New ones are added at the end. */
#define SNPU_RT2_OP_MATMUL	1	/* out = op(in0) x op(in1), f32 */
#define SNPU_RT2_OP_ADD		2	/* out = in0 + in1, same shapes */
#define SNPU_RT2_OP_RELU	3	/* out = max(in0, 0), f32 */
#define SNPU_RT2_OP_CUSTOM	4	/* a caller's operator */
/* LIBSNPU_0.9: what training needs (Documentation/rt2.rst, "Op types"). */
#define SNPU_RT2_OP_BIAS_ADD	5	/* out[r, j] = in0[r, j] + in1[j] */
#define SNPU_RT2_OP_RELU_BWD	6	/* out = in1 > 0 ? in0 : 0 (in1: y) */
#define SNPU_RT2_OP_SOFTMAX_XENT 7	/* dlogits, and loss as result + 1 */
#define SNPU_RT2_OP_COLSUM	8	/* out[j] = sum over rows of in0 */
#define SNPU_RT2_OP_ARGMAX	9	/* out[r] = first max of row r, i32 */
#define SNPU_RT2_OP_COUNT_EQ	10	/* out[0] = count of in0 == in1, i32 */
#define SNPU_RT2_OP_AFFINE	11	/* out = a in0 + b (two scalars) */
#define SNPU_RT2_OP_SGD		12	/* param in0 += -lr in1, in place */
/* LIBSNPU_0.11: out = in0 reduced over a communicator's ranks. */
#define SNPU_RT2_OP_ALLREDUCE	13

/* SNPU_RT2_OP_ALLREDUCE flags: the maximum instead of the sum. */
#define SNPU_RT2_ALLREDUCE_MAX	(1U << 0)

/* SNPU_RT2_OP_MATMUL flags: use the transpose of an operand. */
#define SNPU_RT2_MATMUL_TRANS_A	(1U << 0)
#define SNPU_RT2_MATMUL_TRANS_B	(1U << 1)

/**
 * struct snpu_rt2_kargs - what a custom operator runs on
 * @stream: the executor's stream; the operator's work must end up
 *          ordered on it (join work on attached streams back into it)
 * @nin: number of inputs
 * @in: device address of each input
 * @in_shape: shape of each input in this run
 * @out: device address of the output
 * @out_shape: shape of the output
 */
struct snpu_rt2_kargs {
	uint32_t stream;
	uint32_t nin;
	uint64_t in[SNPU_RT2_MAX_OP_INPUTS];
	struct snpu_rt2_shape in_shape[SNPU_RT2_MAX_OP_INPUTS];
	uint64_t out;
	struct snpu_rt2_shape out_shape;
};

/*
 * A custom operator: submits device work with snpu_rt2_kctx_submit(), on
 * @args->stream or on attached streams from
 * snpu_rt2_kctx_attached_stream() (made to wait for the inputs with
 * snpu_rt2_kctx_fork()), joins the attached streams it used back with
 * snpu_rt2_kctx_join(), and returns 0 or a negative errno.
 */
typedef int (*snpu_rt2_custom_fn)(struct snpu_rt2_kctx *ctx,
				  const struct snpu_rt2_kargs *args,
				  void *arg);

/**
 * struct snpu_rt2_op_desc - one op of a model
 * @type: SNPU_RT2_OP_*
 * @flags: per type (SNPU_RT2_MATMUL_*), else zero
 * @nin: number of inputs
 * @in: the input tensors (ids from the model calls)
 * @custom: SNPU_RT2_OP_CUSTOM: the operator
 * @custom_arg: its argument
 * @name: SNPU_RT2_OP_CUSTOM: a name for traces and dumps (copied)
 * @out_shape: SNPU_RT2_OP_CUSTOM: the output's shape (other ops infer it)
 */
struct snpu_rt2_op_desc {
	uint32_t type;
	uint32_t flags;
	uint32_t nin;
	int in[SNPU_RT2_MAX_OP_INPUTS];
	snpu_rt2_custom_fn custom;
	void *custom_arg;
	const char *name;
	struct snpu_rt2_shape out_shape;
};

/* ---- models (LIBSNPU_0.8) --------------------------------------------- */

int snpu_rt2_model_create(struct snpu_rt2_model **model);
void snpu_rt2_model_destroy(struct snpu_rt2_model *model);
int snpu_rt2_model_input(struct snpu_rt2_model *model,
			 const struct snpu_rt2_shape *shape);
int snpu_rt2_model_param(struct snpu_rt2_model *model,
			 const struct snpu_rt2_shape *shape, const void *init);
int snpu_rt2_model_op(struct snpu_rt2_model *model,
		      const struct snpu_rt2_op_desc *op);
int snpu_rt2_model_output(struct snpu_rt2_model *model, int tensor);
/* LIBSNPU_0.9: an op with f32 scalar arguments (AFFINE: a, b; SGD: lr). */
#define SNPU_RT2_MAX_OP_SCALARS	2
int snpu_rt2_model_op_scalars(struct snpu_rt2_model *model,
			      const struct snpu_rt2_op_desc *op,
			      const float *scalars, unsigned int nscalars);

/* ---- device interfaces ------------------------------------------------ */

int snpu_rt2_dev_open(struct snpu_device *dev, unsigned int ring_entries,
		      struct snpu_rt2_dev **rdev);
void snpu_rt2_dev_close(struct snpu_rt2_dev *rdev);

/* ---- executors -------------------------------------------------------- */

/* struct snpu_rt2_exec_opts flags. */
#define SNPU_RT2_EXEC_THREADS	(1U << 0)  /* three workers, else one */
#define SNPU_RT2_EXEC_DYN_MULTI_STREAM (1U << 1)  /* no split, no relation */
#define SNPU_RT2_EXEC_GRAPH	(1U << 2)  /* capture once, replay (0.9) */
#define SNPU_RT2_EXEC_POISON	(1U << 3)  /* debug: fill reused blocks */
#define SNPU_RT2_EXEC_PARALLEL	(1U << 4)  /* threads: helpers eagerly */

/**
 * struct snpu_rt2_trace - one kernel run, given to a trace hook
 * @node: the node's execution ID
 * @op: the index of the model op the node was lowered from, or -1
 * @kernel: the kernel's registered name
 * @name: a custom op's name, else NULL
 * @worker: 0 memory, 1 normal, 2 launch (always 0 in single-thread mode)
 * @ret: what the kernel returned
 */
struct snpu_rt2_trace {
	uint32_t node;
	int op;
	const char *kernel;
	const char *name;
	unsigned int worker;
	int ret;
};

typedef void (*snpu_rt2_trace_fn)(void *arg, const struct snpu_rt2_trace *t);

/**
 * struct snpu_rt2_exec_opts - how an executor runs
 * @flags: SNPU_RT2_EXEC_*
 * @trace: called after every kernel (from the worker that ran it), or NULL
 * @trace_arg: its argument
 */
struct snpu_rt2_exec_opts {
	unsigned int flags;
	snpu_rt2_trace_fn trace;
	void *trace_arg;
};

int snpu_rt2_exec_create(const struct snpu_rt2_model *model,
			 struct snpu_rt2_dev *rdev,
			 const struct snpu_rt2_exec_opts *opts,
			 struct snpu_rt2_exec **exec);
void snpu_rt2_exec_destroy(struct snpu_rt2_exec *exec);
int snpu_rt2_exec_input(struct snpu_rt2_exec *exec, unsigned int index,
			const uint32_t *dims, void **host);
int snpu_rt2_exec_run(struct snpu_rt2_exec *exec);
int snpu_rt2_exec_output(struct snpu_rt2_exec *exec, unsigned int index,
			 const void **host, struct snpu_rt2_shape *shape);
int snpu_rt2_exec_dump(const struct snpu_rt2_exec *exec, char *buf,
		       size_t len);
/* LIBSNPU_0.11: the communicator of the executor's ALLREDUCE ops. */
struct snpu_comm;
int snpu_rt2_exec_set_comm(struct snpu_rt2_exec *exec, struct snpu_comm *comm);

/* ---- the executor's device memory pool (LIBSNPU_0.9) ------------------ */

/**
 * struct snpu_rt2_pool_stats - an executor's device memory pool
 * @bytes: device memory the pool holds now
 * @peak_bytes: the most it held at once since the executor was created
 * @limit: the limit set with snpu_rt2_exec_set_pool_limit(), 0 for none
 * @dev_allocs: device allocations the pool made
 * @dev_frees: blocks it gave back to the device to stay under its limit
 * @recycles: times it had to recycle (wait, stream sync, recycle, retry)
 * @waits: of those, the times it waited for relation launches
 * @relations: exact Free->Launch relations of the execution graph
 * @hold_frees: frees whose Launch->Free edges they replaced
 * @reserved: zero
 */
struct snpu_rt2_pool_stats {
	uint64_t bytes;
	uint64_t peak_bytes;
	uint64_t limit;
	uint64_t dev_allocs;
	uint64_t dev_frees;
	uint64_t recycles;
	uint64_t waits;
	uint64_t relations;
	uint64_t hold_frees;
	uint64_t reserved[7];
};

int snpu_rt2_exec_set_pool_limit(struct snpu_rt2_exec *exec, uint64_t bytes);
int snpu_rt2_exec_pool_stats(const struct snpu_rt2_exec *exec,
			     struct snpu_rt2_pool_stats *stats);

/* ---- inside a custom operator ------------------------------------------ */

int snpu_rt2_kctx_attached_stream(struct snpu_rt2_kctx *ctx, const char *key,
				  uint32_t *stream);
int snpu_rt2_kctx_submit(struct snpu_rt2_kctx *ctx,
			 const struct snpu_task *tasks, unsigned int count);
int snpu_rt2_kctx_fork(struct snpu_rt2_kctx *ctx, uint32_t stream);
int snpu_rt2_kctx_join(struct snpu_rt2_kctx *ctx, uint32_t stream);

/* ---- parameters and statistics (LIBSNPU_0.9) --------------------------- */

int snpu_rt2_exec_param_read(struct snpu_rt2_exec *exec, int tensor,
			     void *host, size_t bytes);

/**
 * struct snpu_rt2_exec_stats - what an executor gave the device
 * @runs: runs made
 * @entries: queue entries (tasks) it submitted, each graph launch one
 * @graph_captures: SNPU_RT2_EXEC_GRAPH: captures that made a graph
 * @graph_launches: launches of a captured graph (one per run after it)
 * @graph_fallbacks: captures the device could not express as a graph
 *                   (their tasks went one by one)
 * @h2d_ns: device time of its host-to-device copies
 * @compute_ns: device time of its kernel launches and graph launches
 * @d2h_ns: device time of its device-to-host copies
 * @graph_replays: SNPU_RT2_EXEC_GRAPH: runs that were replays (only the
 *                 launches outside the graph and the graph's launch ran)
 * @reserved: zero
 *
 * The device times come from the completions' timestamps: a task's time
 * runs from the completion of the task before it on the executor's
 * stream (or from its submission, when that is later) to its own.
 */
struct snpu_rt2_exec_stats {
	uint64_t runs;
	uint64_t entries;
	uint64_t graph_captures;
	uint64_t graph_launches;
	uint64_t graph_fallbacks;
	uint64_t h2d_ns;
	uint64_t compute_ns;
	uint64_t d2h_ns;
	uint64_t graph_replays;
	uint64_t reserved[3];
};

int snpu_rt2_exec_stats(const struct snpu_rt2_exec *exec,
			struct snpu_rt2_exec_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* LIBSNPU_SNPU_RT2_H */
