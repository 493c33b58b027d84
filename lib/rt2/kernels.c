// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * rt2: the kernel registry and the kernels.
 *
 * Every kernel is registered once, in a const table, with its class:
 * memory (produces results or changes memory state: allocation, sharing,
 * free), launch (output-free submission of device work) or normal (shape
 * inference and the like); a critical-section key when it changes shared
 * state; and flags. The class picks the worker in three-worker mode; the
 * BuildTensor-like kernels (RT2_KF_NORMAL_WORKER) are the only memory
 * kernels placed on the normal worker.
 *
 * Kernels run on the hot path: they neither allocate (the pool only asks
 * the device on a miss, which does not happen after the first run with
 * the same shapes) nor log.
 */
#include <errno.h>
#include <string.h>

#include "rt2.h"

/*
 * The block_dim of a launch: snpu_launch_dims() for the device's cores.
 * An interface that does not describe its device (info.cores 0) is
 * treated as one core, which gives the fewest blocks the work bound
 * allows. A launch the policy cannot size (no block_dim keeps it within
 * the work bound) goes with one block, for the device to refuse.
 */
static uint32_t rt2_blocks(const struct snpu_rt2_exec *e, uint32_t kernel,
			   const struct snpu_kernel_arg *args,
			   unsigned int nargs)
{
	struct snpu_info one = {
		.cores = 1,
		.max_block_dim = 65535,
		.max_block_work = SNPU_KERNEL_BLOCK_WORK_MAX,
	};
	const struct snpu_info *info = &e->dev->info;
	int b;

	b = snpu_launch_dims(info->cores ? info : &one, kernel, args, nargs);
	return b > 0 ? (uint32_t)b : 1;
}

static struct rt2_value *rt2_val(struct snpu_rt2_exec *e, int32_t t)
{
	return &e->vals[t];
}

static int rt2_submit(struct snpu_rt2_exec *e, const struct snpu_task *t,
		      unsigned int n)
{
	return e->dev->ops->submit(e->dev, &e->dq, t, n);
}

/* ---- normal ------------------------------------------------------------- */

static int rt2_k_infer_shape(struct snpu_rt2_exec *e, const struct rt2_node *n)
{
	const struct snpu_rt2_op_desc *op = &e->model->ops[n->op].desc;
	const struct snpu_rt2_shape *in[SNPU_RT2_MAX_OP_INPUTS] = { NULL };
	struct rt2_value *out = rt2_val(e, n->out[0]);
	struct snpu_rt2_shape s;
	unsigned int i;
	int ret;

	for (i = 0; i < op->nin; i++)
		in[i] = &rt2_val(e, op->in[i])->shape;
	ret = rt2_op_infer(op, in, &s);
	if (ret)
		return ret;
	if (rt2_shape_bytes(&s) > out->alloc_bytes)
		return -EOVERFLOW;
	out->shape = s;
	if (n->nout > 1) {	/* a second result */
		out = rt2_val(e, n->out[1]);
		rt2_op_infer2(op, in, &s);
		if (rt2_shape_bytes(&s) > out->alloc_bytes)
			return -EOVERFLOW;
		out->shape = s;
	}
	return 0;
}

/* ---- memory ------------------------------------------------------------- */

static int rt2_k_alloc_output(struct snpu_rt2_exec *e,
			      const struct rt2_node *n)
{
	const struct rt2_op *op = NULL;
	struct rt2_value *v;
	unsigned int i;
	int ret;

	/* Graphs built without a model have nodes of no op. */
	if (e->model && n->op >= 0)
		op = &e->model->ops[n->op];
	/* SGD's result is its parameter, updated in place. */
	if (op && op->desc.type == SNPU_RT2_OP_SGD) {
		v = rt2_val(e, n->out[0]);
		v->addr = rt2_val(e, op->desc.in[0])->addr;
		v->owned = false;
		return 0;
	}
	for (i = 0; i < n->nout; i++) {
		v = rt2_val(e, n->out[i]);
		if (e->replay)
			ret = rt2_replay_alloc(e, n->out[i], v->alloc_bytes,
					       &v->addr);
		else
			ret = rt2_pool_get(e, n->out[i], v->alloc_bytes,
					   &v->addr);
		if (ret)
			return ret;
		v->owned = !e->replay;
	}
	return 0;
}

static int rt2_k_build_tensor(struct snpu_rt2_exec *e,
			      const struct rt2_node *n)
{
	unsigned int i;

	for (i = 0; i < n->nout; i++) {
		struct rt2_value *v = rt2_val(e, n->out[i]);

		if (!v->addr)
			return -EFAULT;
		v->ready = true;
	}
	return 0;
}

static int rt2_k_free_mem(struct snpu_rt2_exec *e, const struct rt2_node *n)
{
	struct rt2_value *v = rt2_val(e, n->in[0]);

	if (v->owned)
		rt2_pool_put(e, v->addr, 0);
	v->owned = false;
	v->addr = 0;
	return 0;
}

/*
 * The hold-address variant: the block goes back held until the free's
 * relation launches were submitted, and the value keeps its address and
 * its allocation for them (they may run after the free: an H2D launch
 * submits only an independently allocated copy). One free per value, so
 * the block is given back once.
 */
static int rt2_k_free_mem_hold(struct snpu_rt2_exec *e,
			       const struct rt2_node *n)
{
	struct rt2_value *v = rt2_val(e, n->in[0]);

	if (v->owned)
		rt2_pool_put(e, v->addr, e->xd.nrels ? e->xd.req[n->id] : 0);
	return 0;
}

/* ---- launch ------------------------------------------------------------- */

static struct snpu_kernel_arg rt2_buf(const struct rt2_value *v)
{
	return snpu_arg_buf(v->addr, rt2_shape_bytes(&v->shape));
}

static int rt2_k_launch_matmul(struct snpu_rt2_exec *e,
			       const struct rt2_node *n)
{
	const struct rt2_value *a = rt2_val(e, n->in[0]);
	const struct rt2_value *b = rt2_val(e, n->in[1]);
	const struct rt2_value *c = rt2_val(e, n->out[0]);
	uint32_t m = c->shape.dims[0], nn = c->shape.dims[1];
	uint32_t k = a->shape.dims[1];
	uint32_t flags = e->model->ops[n->op].desc.flags;
	uint32_t kernel = SNPU_KERNEL_GEMM_F32;
	struct snpu_kernel_arg args[6];
	struct snpu_task t;

	/* a^T b: a is [k x m]; a b^T: b is [n x k]. */
	if (flags & SNPU_RT2_MATMUL_TRANS_A) {
		kernel = SNPU_KERNEL_GEMM_TN_F32;
		k = a->shape.dims[0];
	} else if (flags & SNPU_RT2_MATMUL_TRANS_B) {
		kernel = SNPU_KERNEL_GEMM_NT_F32;
	}
	if (!m || !nn)
		return 0;
	if (!k)
		return -EINVAL;
	args[0] = rt2_buf(c);
	args[1] = rt2_buf(a);
	args[2] = rt2_buf(b);
	args[3] = snpu_arg_u64(m);
	args[4] = snpu_arg_u64(nn);
	args[5] = snpu_arg_u64(k);
	snpu_prep_launch(&t, e->dq.stream, kernel,
			 rt2_blocks(e, kernel, args, 6), args, 6);
	return rt2_submit(e, &t, 1);
}

static int rt2_k_launch_add(struct snpu_rt2_exec *e, const struct rt2_node *n)
{
	const struct rt2_value *c = rt2_val(e, n->out[0]);
	struct snpu_kernel_arg args[3];
	uint64_t elems = rt2_shape_elems(&c->shape);
	uint32_t kernel = c->shape.dtype == SNPU_RT2_F32 ?
			  SNPU_KERNEL_ADD_F32 : SNPU_KERNEL_ADD_I32;
	struct snpu_task t;

	if (!elems)
		return 0;
	args[0] = rt2_buf(c);
	args[1] = rt2_buf(rt2_val(e, n->in[0]));
	args[2] = rt2_buf(rt2_val(e, n->in[1]));
	snpu_prep_launch(&t, e->dq.stream, kernel,
			 rt2_blocks(e, kernel, args, 3), args, 3);
	return rt2_submit(e, &t, 1);
}

static int rt2_k_launch_relu(struct snpu_rt2_exec *e,
			     const struct rt2_node *n)
{
	const struct rt2_value *y = rt2_val(e, n->out[0]);
	struct snpu_kernel_arg args[2];
	uint64_t elems = rt2_shape_elems(&y->shape);
	struct snpu_task t;

	if (!elems)
		return 0;
	args[0] = rt2_buf(y);
	args[1] = rt2_buf(rt2_val(e, n->in[0]));
	snpu_prep_launch(&t, e->dq.stream, SNPU_KERNEL_RELU_F32,
			 rt2_blocks(e, SNPU_KERNEL_RELU_F32, args, 2), args, 2);
	return rt2_submit(e, &t, 1);
}

/* ---- the training ops (LIBSNPU_0.9) --------------------------------------- */

/* A launch of @kernel with the block_dim rt2_blocks() gives it. */
static int rt2_launch(struct snpu_rt2_exec *e, uint32_t kernel,
		      const struct snpu_kernel_arg *args, unsigned int nargs)
{
	struct snpu_task t;

	snpu_prep_launch(&t, e->dq.stream, kernel,
			 rt2_blocks(e, kernel, args, nargs), args, nargs);
	return rt2_submit(e, &t, 1);
}

/* The last dimension of a shape (a row's length). */
static uint32_t rt2_inner(const struct snpu_rt2_shape *s)
{
	return s->dims[s->ndim - 1];
}

static int rt2_k_launch_bias_add(struct snpu_rt2_exec *e,
				 const struct rt2_node *n)
{
	const struct rt2_value *y = rt2_val(e, n->out[0]);
	uint64_t elems = rt2_shape_elems(&y->shape);
	struct snpu_kernel_arg args[4];

	if (!elems)
		return 0;
	args[0] = rt2_buf(y);
	args[1] = rt2_buf(rt2_val(e, n->in[0]));
	args[2] = rt2_buf(rt2_val(e, n->in[1]));
	args[3] = snpu_arg_u64(rt2_inner(&y->shape));
	return rt2_launch(e, SNPU_KERNEL_BIAS_ADD_F32, args, 4);
}

static int rt2_k_launch_relu_bwd(struct snpu_rt2_exec *e,
				 const struct rt2_node *n)
{
	const struct rt2_value *dx = rt2_val(e, n->out[0]);
	uint64_t elems = rt2_shape_elems(&dx->shape);
	struct snpu_kernel_arg args[3];

	if (!elems)
		return 0;
	args[0] = rt2_buf(dx);
	args[1] = rt2_buf(rt2_val(e, n->in[0]));
	args[2] = rt2_buf(rt2_val(e, n->in[1]));
	return rt2_launch(e, SNPU_KERNEL_RELU_BWD_F32, args, 3);
}

/* dlogits (result 0) and the loss (result 1); the mean's scale 1 / rows. */
static int rt2_k_launch_softmax_xent(struct snpu_rt2_exec *e,
				     const struct rt2_node *n)
{
	const struct rt2_value *d = rt2_val(e, n->out[0]);
	uint32_t rows = d->shape.dims[0], ncls = d->shape.dims[1];
	struct snpu_kernel_arg args[6];

	if (!rows || !ncls)
		return 0;
	args[0] = rt2_buf(rt2_val(e, n->out[1]));
	args[1] = rt2_buf(d);
	args[2] = rt2_buf(rt2_val(e, n->in[0]));
	args[3] = rt2_buf(rt2_val(e, n->in[1]));
	args[4] = snpu_arg_u64(ncls);
	args[5] = snpu_arg_f32(1.0f / (float)rows);
	return rt2_launch(e, SNPU_KERNEL_SOFTMAX_XENT_F32, args, 6);
}

/*
 * (out, in [rows x cols], cols): COLSUM_F32 sliced by column, each of
 * rows units; ARGMAX_F32 sliced by row, each of cols units.
 */
static int rt2_launch_rowwise(struct snpu_rt2_exec *e, const struct rt2_node *n,
			      uint32_t kernel)
{
	const struct rt2_value *in = rt2_val(e, n->in[0]);
	uint32_t rows = in->shape.dims[0], cols = in->shape.dims[1];
	struct snpu_kernel_arg args[3];

	if (!rows || !cols)
		return 0;
	args[0] = rt2_buf(rt2_val(e, n->out[0]));
	args[1] = rt2_buf(in);
	args[2] = snpu_arg_u64(cols);
	return rt2_launch(e, kernel, args, 3);
}

static int rt2_k_launch_colsum(struct snpu_rt2_exec *e,
			       const struct rt2_node *n)
{
	return rt2_launch_rowwise(e, n, SNPU_KERNEL_COLSUM_F32);
}

static int rt2_k_launch_argmax(struct snpu_rt2_exec *e,
			       const struct rt2_node *n)
{
	return rt2_launch_rowwise(e, n, SNPU_KERNEL_ARGMAX_F32);
}

/*
 * One block, so that its one count is the whole count: the caller's own
 * block_dim (more elements than one block may count is -EOVERFLOW).
 */
static int rt2_k_launch_count_eq(struct snpu_rt2_exec *e,
				 const struct rt2_node *n)
{
	const struct rt2_value *a = rt2_val(e, n->in[0]);
	uint64_t elems = rt2_shape_elems(&a->shape);
	struct snpu_kernel_arg args[3];
	struct snpu_task t;

	if (!elems)
		return 0;
	if (elems > SNPU_KERNEL_BLOCK_WORK_MAX)
		return -EOVERFLOW;
	args[0] = rt2_buf(rt2_val(e, n->out[0]));
	args[1] = rt2_buf(a);
	args[2] = rt2_buf(rt2_val(e, n->in[1]));
	snpu_prep_launch(&t, e->dq.stream, SNPU_KERNEL_COUNT_EQ_I32, 1, args, 3);
	return rt2_submit(e, &t, 1);
}

static int rt2_k_launch_affine(struct snpu_rt2_exec *e,
			       const struct rt2_node *n)
{
	const struct rt2_op *op = &e->model->ops[n->op];
	const struct rt2_value *y = rt2_val(e, n->out[0]);
	uint64_t elems = rt2_shape_elems(&y->shape);
	struct snpu_kernel_arg args[4];

	if (!elems)
		return 0;
	args[0] = rt2_buf(y);
	args[1] = rt2_buf(rt2_val(e, n->in[0]));
	args[2] = snpu_arg_f32(op->scalars[0]);
	args[3] = snpu_arg_f32(op->scalars[1]);
	return rt2_launch(e, SNPU_KERNEL_AFFINE_F32, args, 4);
}

/* param += (-lr) grad, in place: AXPY on the parameter's memory. */
static int rt2_k_launch_sgd(struct snpu_rt2_exec *e, const struct rt2_node *n)
{
	const struct rt2_op *op = &e->model->ops[n->op];
	const struct rt2_value *w = rt2_val(e, n->out[0]);
	uint64_t elems = rt2_shape_elems(&w->shape);
	struct snpu_kernel_arg args[3];

	if (!elems)
		return 0;
	args[0] = rt2_buf(w);
	args[1] = rt2_buf(rt2_val(e, n->in[1]));
	args[2] = snpu_arg_f32(-op->scalars[0]);
	return rt2_launch(e, SNPU_KERNEL_AXPY_F32, args, 3);
}

/*
 * out = in0 reduced over the executor's communicator: a collective task
 * on the executor's stream, which completes when every rank's has run.
 */
static int rt2_k_launch_allreduce(struct snpu_rt2_exec *e,
				  const struct rt2_node *n)
{
	const struct snpu_rt2_op_desc *op = &e->model->ops[n->op].desc;
	const struct rt2_value *in = rt2_val(e, n->in[0]);
	const struct rt2_value *out = rt2_val(e, n->out[0]);
	uint64_t elems = rt2_shape_elems(&out->shape);
	struct snpu_task t;

	if (!e->comm)
		return -ENOTCONN;
	if (!elems)
		return 0;
	snpu_prep_coll(&t, e->dq.stream, snpu_comm_handle(e->comm),
		       SNPU_COLL_ALLREDUCE,
		       out->shape.dtype == SNPU_RT2_I32 ? SNPU_DTYPE_I32 :
							  SNPU_DTYPE_F32,
		       op->flags & SNPU_RT2_ALLREDUCE_MAX ? SNPU_REDOP_MAX :
							    SNPU_REDOP_SUM,
		       elems, in->addr, out->addr, 0);
	return rt2_submit(e, &t, 1);
}

static int rt2_k_launch_custom(struct snpu_rt2_exec *e,
			       const struct rt2_node *n)
{
	const struct snpu_rt2_op_desc *op = &e->model->ops[n->op].desc;
	struct snpu_rt2_kctx ctx = { .exec = e, .node = n };
	struct snpu_rt2_kargs a;
	const struct rt2_value *v;
	unsigned int i;

	memset(&a, 0, sizeof(a));
	a.stream = e->dq.stream;
	a.nin = op->nin;
	for (i = 0; i < op->nin; i++) {
		v = rt2_val(e, op->in[i]);
		a.in[i] = v->addr;
		a.in_shape[i] = v->shape;
	}
	v = rt2_val(e, n->out[0]);
	a.out = v->addr;
	a.out_shape = v->shape;
	return op->custom(&ctx, &a, op->custom_arg);
}

static int rt2_k_launch_d2h(struct snpu_rt2_exec *e, const struct rt2_node *n)
{
	const struct rt2_value *v = rt2_val(e, n->in[0]);
	struct rt2_host *h = &e->out[n->arg];
	uint64_t bytes = rt2_shape_bytes(&v->shape);
	struct snpu_task t;

	h->shape = v->shape;
	if (!bytes)
		return 0;
	snpu_prep_copy(&t, e->dq.stream, SNPU_COPY_D2H, (uintptr_t)h->ptr,
		       v->addr, bytes);
	return rt2_submit(e, &t, 1);
}

/* ---- H2D: the legacy mixed kernel and its four-node split --------------- */

/**
 * rt2_h2d_sizes() - CalcDeviceCopySizes' rule
 * @orig: the tensor as declared in the model
 * @run: the tensor in this run
 * @copy_needed: whether the tensor has to be copied at all
 * @alloc: the allocation size: the original tensor's size
 * @copy: the copy size: from this run's shape and type
 *
 * Both are zero when no copy is needed or the tensor is empty. (There is
 * no string type here, whose size would be computed only once a copy is
 * known to be needed.)
 */
void rt2_h2d_sizes(const struct snpu_rt2_shape *orig,
		   const struct snpu_rt2_shape *run, bool copy_needed,
		   uint64_t *alloc, uint64_t *copy)
{
	uint64_t elems = rt2_shape_elems(run);

	if (!copy_needed || !elems) {
		*alloc = 0;
		*copy = 0;
		return;
	}
	*alloc = rt2_shape_bytes(orig);
	*copy = elems * 4;
}

static int rt2_calc_sizes(struct snpu_rt2_exec *e, int32_t t)
{
	const struct rt2_tensor *mt = &e->model->tensors[t];
	struct rt2_value *v = rt2_val(e, t);
	const struct rt2_host *h = &e->in[mt->input];

	/* v->shape is this run's, set when the run started. */
	rt2_h2d_sizes(&mt->shape, &h->shape, true, &v->alloc_bytes,
		      &v->copy_bytes);
	if (v->copy_bytes > v->alloc_bytes)
		return -EOVERFLOW;
	return 0;
}

static int rt2_alloc_hbm(struct snpu_rt2_exec *e, int32_t t)
{
	struct rt2_value *v = rt2_val(e, t);
	int ret;

	if (!v->alloc_bytes)
		return 0;
	if (e->replay)
		ret = rt2_replay_alloc(e, t, v->alloc_bytes, &v->addr);
	else
		ret = rt2_pool_get(e, t, v->alloc_bytes, &v->addr);
	if (!ret)
		v->owned = true;
	return ret;
}

static int rt2_launch_h2d(struct snpu_rt2_exec *e, int32_t t,
			  struct snpu_task *task)
{
	const struct rt2_value *v = rt2_val(e, t);
	const struct rt2_host *h;

	/* Only independently allocated, nonzero copies. */
	if (!v->copy_bytes || !v->owned || !v->addr)
		return 0;
	h = &e->in[e->model->tensors[t].input];
	/* From pinned memory the executor keeps until the copy completed. */
	snpu_prep_copy(task, e->dq.stream, SNPU_COPY_H2D, v->addr,
		       (uintptr_t)h->ptr, v->copy_bytes);
	return 1;
}

static int rt2_k_h2d_copy(struct snpu_rt2_exec *e, const struct rt2_node *n)
{
	struct snpu_task t;
	int ret;

	ret = rt2_calc_sizes(e, n->out[0]);
	if (!ret)
		ret = rt2_alloc_hbm(e, n->out[0]);
	if (ret)
		return ret;
	rt2_val(e, n->out[0])->ready = true;
	ret = rt2_launch_h2d(e, n->out[0], &t);
	return ret > 0 ? rt2_submit(e, &t, 1) : ret;
}

static int rt2_k_calc_device_copy_sizes(struct snpu_rt2_exec *e,
					const struct rt2_node *n)
{
	return rt2_calc_sizes(e, n->out[0]);
}

static int rt2_k_alloc_mem_hbm(struct snpu_rt2_exec *e,
			       const struct rt2_node *n)
{
	return rt2_alloc_hbm(e, n->out[0]);
}

/* The owning result consumers and frees read, made on the memory worker. */
static int rt2_k_share_h2d_copy_result(struct snpu_rt2_exec *e,
				       const struct rt2_node *n)
{
	rt2_val(e, n->out[0])->ready = true;
	return 0;
}

static int rt2_k_launch_h2d_copy(struct snpu_rt2_exec *e,
				 const struct rt2_node *n)
{
	struct snpu_task t;
	int ret = rt2_launch_h2d(e, n->out[0], &t);

	return ret > 0 ? rt2_submit(e, &t, 1) : ret;
}

/* ---- copy flow ---------------------------------------------------------- */

/*
 * The cardinality rule: a nonzero static count, and as many inputs,
 * outputs and entries of the index mapping (input i is output i) as the
 * count says.
 */
int rt2_copy_flow_check(const struct rt2_node *n)
{
	unsigned int i;

	if (!n->count || n->count > RT2_NODE_IO || n->nin != n->count ||
	    n->nout != n->count)
		return -EPROTO;
	for (i = 0; i < n->count; i++)
		if (n->in[i] != n->out[i] || n->in[i] < 0)
			return -EPROTO;
	return 0;
}

static int rt2_k_calc_copy_flow_alloc_sizes(struct snpu_rt2_exec *e,
					    const struct rt2_node *n)
{
	unsigned int i;
	int ret = rt2_copy_flow_check(n);

	for (i = 0; !ret && i < n->count; i++)
		ret = rt2_calc_sizes(e, n->out[i]);
	return ret;
}

static int rt2_k_alloc_copy_flow_hbm(struct snpu_rt2_exec *e,
				     const struct rt2_node *n)
{
	unsigned int i;
	int ret = rt2_copy_flow_check(n);

	for (i = 0; !ret && i < n->count; i++)
		ret = rt2_alloc_hbm(e, n->out[i]);
	return ret;
}

/*
 * The allocated-address count agrees too: every entry that has an
 * allocation size got its own address, and no other entry has one.
 */
static int rt2_copy_flow_allocated(struct snpu_rt2_exec *e,
				   const struct rt2_node *n)
{
	unsigned int i, sized = 0, addressed = 0;

	for (i = 0; i < n->count; i++) {
		const struct rt2_value *v = rt2_val(e, n->out[i]);

		sized += !!v->alloc_bytes;
		addressed += v->owned && v->addr;
		if (!!v->alloc_bytes != (v->owned && v->addr))
			return -EPROTO;
	}
	return sized == addressed ? 0 : -EPROTO;
}

static int rt2_k_prepare_copy_flow_result(struct snpu_rt2_exec *e,
					  const struct rt2_node *n)
{
	unsigned int i;
	int ret = rt2_copy_flow_check(n);

	if (!ret)
		ret = rt2_copy_flow_allocated(e, n);
	for (i = 0; !ret && i < n->count; i++)
		rt2_val(e, n->out[i])->ready = true;
	return ret;
}

static int rt2_k_launch_copy_flow_h2d(struct snpu_rt2_exec *e,
				      const struct rt2_node *n)
{
	struct snpu_task t[RT2_NODE_IO];
	unsigned int i, nt = 0;
	int ret = rt2_copy_flow_check(n);

	if (!ret)
		ret = rt2_copy_flow_allocated(e, n);
	for (i = 0; !ret && i < n->count; i++) {
		ret = rt2_launch_h2d(e, n->out[i], &t[nt]);
		if (ret > 0)
			nt++, ret = 0;
	}
	if (ret || !nt)
		return ret;
	return rt2_submit(e, t, nt);
}

static int rt2_k_copy_flow_launch(struct snpu_rt2_exec *e,
				  const struct rt2_node *n)
{
	int ret;

	ret = rt2_k_calc_copy_flow_alloc_sizes(e, n);
	if (!ret)
		ret = rt2_k_alloc_copy_flow_hbm(e, n);
	if (!ret)
		ret = rt2_k_prepare_copy_flow_result(e, n);
	if (!ret)
		ret = rt2_k_launch_copy_flow_h2d(e, n);
	return ret;
}

/* ---- test kernels -------------------------------------------------------- */

static int rt2_k_empty(struct snpu_rt2_exec *e, const struct rt2_node *n)
{
	return 0;
}

static int rt2_k_fail(struct snpu_rt2_exec *e, const struct rt2_node *n)
{
	return (int)n->arg;
}

#define RT2_KF_TRAIN	(RT2_KF_COMPUTE_LAUNCH | RT2_KF_GRAPHABLE)
#define M	RT2_CLASS_MEMORY
#define L	RT2_CLASS_LAUNCH
#define N	RT2_CLASS_NORMAL

const struct rt2_kernel rt2_kernels[RT2_K_COUNT] = {
	[RT2_K_INFER_SHAPE] = { "InferShape", N, 0, 0, rt2_k_infer_shape },
	[RT2_K_ALLOC_OUTPUT] = { "AllocOutputMemory", M, RT2_CS_POOL, 0,
				 rt2_k_alloc_output },
	[RT2_K_BUILD_TENSOR] = { "BuildTensor", M, 0,
				 RT2_KF_NORMAL_WORKER | RT2_KF_BUILD_TENSOR,
				 rt2_k_build_tensor },
	[RT2_K_LAUNCH_MATMUL] = { "LaunchMatMul", L, 0, RT2_KF_COMPUTE_LAUNCH |
				  RT2_KF_GRAPHABLE, rt2_k_launch_matmul },
	[RT2_K_LAUNCH_ADD] = { "LaunchAdd", L, 0, RT2_KF_COMPUTE_LAUNCH |
			       RT2_KF_GRAPHABLE, rt2_k_launch_add },
	[RT2_K_LAUNCH_RELU] = { "LaunchRelu", L, 0, RT2_KF_COMPUTE_LAUNCH |
				RT2_KF_GRAPHABLE, rt2_k_launch_relu },
	[RT2_K_LAUNCH_CUSTOM] = { "LaunchCustomOp", L, 0,
				  RT2_KF_COMPUTE_LAUNCH, rt2_k_launch_custom },
	[RT2_K_LAUNCH_D2H] = { "LaunchD2HCopy", L, 0, 0, rt2_k_launch_d2h },
	[RT2_K_FREE_MEM] = { "FreeMemory", M, RT2_CS_POOL, RT2_KF_FREE,
			     rt2_k_free_mem },
	[RT2_K_FREE_MEM_HOLD] = { "FreeMemoryHoldAddr", M, RT2_CS_POOL,
				  RT2_KF_FREE | RT2_KF_FREE_HOLD,
				  rt2_k_free_mem_hold },
	[RT2_K_H2D_COPY] = { "H2DCopy", M, RT2_CS_POOL, RT2_KF_MIXED,
			     rt2_k_h2d_copy },
	[RT2_K_CALC_DEVICE_COPY_SIZES] = { "CalcDeviceCopySizes", N, 0, 0,
					   rt2_k_calc_device_copy_sizes },
	[RT2_K_ALLOC_MEM_HBM] = { "AllocMemHbm", M, RT2_CS_POOL, 0,
				  rt2_k_alloc_mem_hbm },
	[RT2_K_SHARE_H2D_COPY_RESULT] = { "ShareH2DCopyResult", M, 0, 0,
					  rt2_k_share_h2d_copy_result },
	[RT2_K_LAUNCH_H2D_COPY] = { "LaunchH2DCopy", L, 0, 0,
				    rt2_k_launch_h2d_copy },
	[RT2_K_COPY_FLOW_LAUNCH] = { "CopyFlowLaunch", M, RT2_CS_POOL,
				     RT2_KF_MIXED, rt2_k_copy_flow_launch },
	[RT2_K_CALC_COPY_FLOW_ALLOC_SIZES] = {
		"CalcCopyFlowAllocSizes", N, 0, 0,
		rt2_k_calc_copy_flow_alloc_sizes },
	[RT2_K_ALLOC_COPY_FLOW_HBM] = { "AllocCopyFlowHbm", M, RT2_CS_POOL, 0,
					rt2_k_alloc_copy_flow_hbm },
	[RT2_K_PREPARE_COPY_FLOW_RESULT] = {
		"PrepareCopyFlowResult", M, 0, 0,
		rt2_k_prepare_copy_flow_result },
	[RT2_K_LAUNCH_COPY_FLOW_H2D] = { "LaunchCopyFlowH2D", L, 0, 0,
					 rt2_k_launch_copy_flow_h2d },
	[RT2_K_LAUNCH_BIAS_ADD] = { "LaunchBiasAdd", L, 0, RT2_KF_TRAIN,
				    rt2_k_launch_bias_add },
	[RT2_K_LAUNCH_RELU_BWD] = { "LaunchReluBwd", L, 0, RT2_KF_TRAIN,
				    rt2_k_launch_relu_bwd },
	[RT2_K_LAUNCH_SOFTMAX_XENT] = { "LaunchSoftmaxXent", L, 0,
					RT2_KF_TRAIN,
					rt2_k_launch_softmax_xent },
	[RT2_K_LAUNCH_COLSUM] = { "LaunchColSum", L, 0, RT2_KF_TRAIN,
				  rt2_k_launch_colsum },
	[RT2_K_LAUNCH_ARGMAX] = { "LaunchArgMax", L, 0, RT2_KF_TRAIN,
				  rt2_k_launch_argmax },
	[RT2_K_LAUNCH_COUNT_EQ] = { "LaunchCountEq", L, 0, RT2_KF_TRAIN,
				    rt2_k_launch_count_eq },
	[RT2_K_LAUNCH_AFFINE] = { "LaunchAffine", L, 0, RT2_KF_TRAIN,
				  rt2_k_launch_affine },
	[RT2_K_LAUNCH_SGD] = { "LaunchSgd", L, 0, RT2_KF_TRAIN,
			       rt2_k_launch_sgd },
	[RT2_K_LAUNCH_ALLREDUCE] = { "LaunchAllReduce", L, 0, RT2_KF_TRAIN,
				     rt2_k_launch_allreduce },
	[RT2_K_EMPTY] = { "Empty", N, 0, 0, rt2_k_empty },
	[RT2_K_EMPTY_MEMORY] = { "EmptyMemory", M, 0, 0, rt2_k_empty },
	[RT2_K_EMPTY_LAUNCH] = { "EmptyLaunch", L, 0, 0, rt2_k_empty },
	[RT2_K_FAIL] = { "Fail", N, 0, 0, rt2_k_fail },
	/* Kernels of the relation pass's eligibility rules. */
	[RT2_K_FREE_TENSOR_MEM] = { "FreeTensorMemory", M, RT2_CS_POOL,
				    RT2_KF_FREE, rt2_k_free_mem },
	[RT2_K_ALLOC_HOST_CPU_OUTPUT] = { "AllocHostCpuOutputMemory", M, 0,
					  RT2_KF_HOST_MEM, rt2_k_empty },
	[RT2_K_ACCESS_MEM_CROSS_STREAM] = { "AccessMemCrossStream", M, 0,
					    RT2_KF_RUNTIME_PLACED,
					    rt2_k_empty },
};

/*
 * The worker of a kernel: its class's, except the BuildTensor-like
 * exceptions (normal worker), and a kernel with a critical-section key,
 * which runs on the memory worker with every other keyed kernel so that
 * no two of them ever run at once.
 */
unsigned int rt2_kernel_worker(unsigned int kid)
{
	const struct rt2_kernel *k = rt2_kernel(kid);

	if (k->cs_key)
		return RT2_W_MEMORY;
	if (k->flags & RT2_KF_NORMAL_WORKER)
		return RT2_W_NORMAL;
	switch (k->cls) {
	case RT2_CLASS_MEMORY:
		return RT2_W_MEMORY;
	case RT2_CLASS_LAUNCH:
		return RT2_W_LAUNCH;
	default:
		return RT2_W_NORMAL;
	}
}

unsigned int rt2_kernel_node_type(unsigned int kid)
{
	const struct rt2_kernel *k = rt2_kernel(kid);

	if (k->flags & RT2_KF_FREE_HOLD)
		return RT2_NT_FREE_HOLD;
	if (k->flags & RT2_KF_FREE)
		return RT2_NT_FREE;
	if (k->cls == RT2_CLASS_LAUNCH)
		return RT2_NT_LAUNCH;
	return k->cls == RT2_CLASS_MEMORY ? RT2_NT_MEMORY : RT2_NT_NORMAL;
}

/* In priority calculation and strict launch ordering: every launch class. */
bool rt2_kernel_is_launch(unsigned int kid)
{
	return rt2_kernel(kid)->cls == RT2_CLASS_LAUNCH;
}
