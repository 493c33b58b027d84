/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * The MLP of snpu-train as rt2 models: the training step (forward,
 * loss, backward, SGD update, in the order of lib/tools/mlp.h) and the
 * evaluation (forward, accuracy count).
 *
 * Inputs: x, raw pixels as f32 [batch x in]; y, labels as i32 [batch].
 * Op 0 is the input normalisation, a custom operator: it runs AFFINE
 * (MLP_NORM_A x + MLP_NORM_B) on an attached stream of the executor's
 * owner, forked from the executor's stream and joined back into it. The
 * other ops are built-in, so that a graph-mode executor captures all of
 * them (from op 1 to the last SGD update) as one graph.
 *
 * Outputs of the training model: 0, the per-row loss [batch]; 1, the
 * number of rows whose argmax is the label [1]. Of the evaluation model:
 * 0, that count.
 *
 * Header only; snpu-train, the rt2 unit tests and the train kselftests
 * include it.
 */
#ifndef SNPU_TOOLS_MLP_RT2_H
#define SNPU_TOOLS_MLP_RT2_H

#include <stdbool.h>
#include <string.h>

#include <snpu_rt2.h>

#include "mlp.h"

/* The attached stream of the normalisation operator. */
#define MLP_NORM_STREAM	"snpu-train-normalize"

/*
 * @info: the device the normalisation's launch is sized for with
 * snpu_launch_dims(), as rt2 sizes its own; set by the caller after
 * mlp_rt2_build() (left zero: as for one core, the fewest blocks).
 */
struct mlp_rt2 {
	struct snpu_rt2_model *m;
	int x, y;			/* inputs */
	int w1, b1, w2, b2;		/* parameters */
	int loss, correct;		/* tensors of the outputs */
	unsigned long norm_calls;	/* the custom operator ran */
	struct snpu_info info;
};

/* The custom operator: xn = a x + b on an attached stream, joined back. */
static int mlp_rt2_normalize(struct snpu_rt2_kctx *ctx,
			     const struct snpu_rt2_kargs *a, void *arg)
{
	struct mlp_rt2 *net = arg;
	struct snpu_info one = {
		.cores = 1, .max_block_dim = 65535,
		.max_block_work = SNPU_KERNEL_BLOCK_WORK_MAX,
	};
	struct snpu_kernel_arg args[4];
	struct snpu_task t;
	uint64_t elems = 1;
	uint32_t stream;
	unsigned int i;
	int ret, blocks;

	net->norm_calls++;
	for (i = 0; i < a->in_shape[0].ndim; i++)
		elems *= a->in_shape[0].dims[i];
	if (!elems)
		return 0;
	ret = snpu_rt2_kctx_attached_stream(ctx, MLP_NORM_STREAM, &stream);
	if (!ret)
		ret = snpu_rt2_kctx_fork(ctx, stream);
	if (ret)
		return ret;
	args[0] = snpu_arg_buf(a->out, elems * 4);
	args[1] = snpu_arg_buf(a->in[0], elems * 4);
	args[2] = snpu_arg_f32(MLP_NORM_A);
	args[3] = snpu_arg_f32(MLP_NORM_B);
	blocks = snpu_launch_dims(net->info.cores ? &net->info : &one,
				  SNPU_KERNEL_AFFINE_F32, args, 4);
	if (blocks > 0) {
		snpu_prep_launch(&t, stream, SNPU_KERNEL_AFFINE_F32,
				 (uint32_t)blocks, args, 4);
		ret = snpu_rt2_kctx_submit(ctx, &t, 1);
	} else {
		ret = blocks;
	}
	/* Joined back in any case: later work is ordered after it. */
	i = snpu_rt2_kctx_join(ctx, stream);
	return ret ? ret : (int)i;
}

static inline int mlp_rt2_op(struct snpu_rt2_model *m, uint32_t type,
			     uint32_t flags, int a, int b)
{
	struct snpu_rt2_op_desc op = { .type = type, .flags = flags,
				       .nin = b < 0 ? 1 : 2 };

	op.in[0] = a;
	op.in[1] = b;
	return snpu_rt2_model_op(m, &op);
}

static inline int mlp_rt2_sgd(struct snpu_rt2_model *m, int param, int grad,
			      float lr)
{
	struct snpu_rt2_op_desc op = { .type = SNPU_RT2_OP_SGD, .nin = 2 };

	op.in[0] = param;
	op.in[1] = grad;
	return snpu_rt2_model_op_scalars(m, &op, &lr, 1);
}

static inline void mlp_rt2_free(struct mlp_rt2 *net)
{
	snpu_rt2_model_destroy(net->m);
	net->m = NULL;
}

/*
 * A gradient as SGD takes it: with @nranks > 1, its sum over the ranks
 * (SNPU_RT2_OP_ALLREDUCE on the executor's communicator).
 */
static inline int mlp_rt2_grad(struct snpu_rt2_model *m, int grad,
			       unsigned int nranks)
{
	if (nranks < 2 || grad < 0)
		return grad;
	return mlp_rt2_op(m, SNPU_RT2_OP_ALLREDUCE, 0, grad, -1);
}

/*
 * The model of a net of @c with parameters @p and batch @rows; @train: the
 * training step, else the evaluation; @nranks > 1: one rank of
 * data-parallel training, whose gradients are summed over the ranks and
 * applied at rate lr / @nranks (as mlp_cpu_dp_step()). Return: 0 or
 * -errno.
 */
static inline int mlp_rt2_build_dp(struct mlp_rt2 *net,
				   const struct mlp_cfg *c,
				   const struct mlp_params *p, uint32_t rows,
				   bool train, unsigned int nranks)
{
	float lr = nranks > 1 ? c->lr / (float)nranks : c->lr;
	struct snpu_rt2_shape sx = { SNPU_RT2_F32, 2, { rows, c->in } };
	struct snpu_rt2_shape sy = { SNPU_RT2_I32, 1, { rows } };
	struct snpu_rt2_shape sw1 = { SNPU_RT2_F32, 2, { c->in, c->hid } };
	struct snpu_rt2_shape sb1 = { SNPU_RT2_F32, 1, { c->hid } };
	struct snpu_rt2_shape sw2 = { SNPU_RT2_F32, 2, { c->hid, c->out } };
	struct snpu_rt2_shape sb2 = { SNPU_RT2_F32, 1, { c->out } };
	struct snpu_rt2_op_desc norm = {
		.type = SNPU_RT2_OP_CUSTOM, .nin = 1,
		.custom = mlp_rt2_normalize, .custom_arg = net,
		.name = "normalize",
	};
	struct snpu_rt2_model *m;
	int xn, z1, h1, logits, d2, pred, t;
	int dw2, db2, dh1, dz1, dw1, db1, ret;

	memset(net, 0, sizeof(*net));
	ret = snpu_rt2_model_create(&m);
	if (ret)
		return ret;
	net->m = m;
	net->x = snpu_rt2_model_input(m, &sx);
	net->y = snpu_rt2_model_input(m, &sy);
	net->w1 = snpu_rt2_model_param(m, &sw1, p->w1);
	net->b1 = snpu_rt2_model_param(m, &sb1, p->b1);
	net->w2 = snpu_rt2_model_param(m, &sw2, p->w2);
	net->b2 = snpu_rt2_model_param(m, &sb2, p->b2);
	norm.in[0] = net->x;
	norm.out_shape = sx;
	xn = snpu_rt2_model_op(m, &norm);
	z1 = mlp_rt2_op(m, SNPU_RT2_OP_MATMUL, 0, xn, net->w1);
	t = mlp_rt2_op(m, SNPU_RT2_OP_BIAS_ADD, 0, z1, net->b1);
	h1 = mlp_rt2_op(m, SNPU_RT2_OP_RELU, 0, t, -1);
	t = mlp_rt2_op(m, SNPU_RT2_OP_MATMUL, 0, h1, net->w2);
	logits = mlp_rt2_op(m, SNPU_RT2_OP_BIAS_ADD, 0, t, net->b2);
	if (train) {
		d2 = mlp_rt2_op(m, SNPU_RT2_OP_SOFTMAX_XENT, 0, logits, net->y);
		net->loss = d2 < 0 ? d2 : d2 + 1;	/* the second result */
	}
	pred = mlp_rt2_op(m, SNPU_RT2_OP_ARGMAX, 0, logits, -1);
	net->correct = mlp_rt2_op(m, SNPU_RT2_OP_COUNT_EQ, 0, pred, net->y);
	if (train) {
		dw2 = mlp_rt2_op(m, SNPU_RT2_OP_MATMUL, SNPU_RT2_MATMUL_TRANS_A,
				 h1, d2);
		db2 = mlp_rt2_op(m, SNPU_RT2_OP_COLSUM, 0, d2, -1);
		dh1 = mlp_rt2_op(m, SNPU_RT2_OP_MATMUL, SNPU_RT2_MATMUL_TRANS_B,
				 d2, net->w2);
		dz1 = mlp_rt2_op(m, SNPU_RT2_OP_RELU_BWD, 0, dh1, h1);
		dw1 = mlp_rt2_op(m, SNPU_RT2_OP_MATMUL, SNPU_RT2_MATMUL_TRANS_A,
				 xn, dz1);
		db1 = mlp_rt2_op(m, SNPU_RT2_OP_COLSUM, 0, dz1, -1);
		dw2 = mlp_rt2_grad(m, dw2, nranks);
		db2 = mlp_rt2_grad(m, db2, nranks);
		dw1 = mlp_rt2_grad(m, dw1, nranks);
		db1 = mlp_rt2_grad(m, db1, nranks);
		/* Every read of W2 is before its update. */
		ret = mlp_rt2_sgd(m, net->w2, dw2, lr);
		if (ret >= 0)
			ret = mlp_rt2_sgd(m, net->b2, db2, lr);
		if (ret >= 0)
			ret = mlp_rt2_sgd(m, net->w1, dw1, lr);
		if (ret >= 0)
			ret = mlp_rt2_sgd(m, net->b1, db1, lr);
		if (ret >= 0)
			ret = snpu_rt2_model_output(m, net->loss);
		if (ret < 0)
			goto fail;
	}
	ret = snpu_rt2_model_output(m, net->correct);
	if (ret >= 0)
		return 0;
fail:
	mlp_rt2_free(net);
	return ret;
}

static inline int mlp_rt2_build(struct mlp_rt2 *net, const struct mlp_cfg *c,
				const struct mlp_params *p, uint32_t rows,
				bool train)
{
	return mlp_rt2_build_dp(net, c, p, rows, train, 1);
}

/* The parameters of executor @e of @net, into @p (allocated as in @c). */
static inline int mlp_rt2_read(struct snpu_rt2_exec *e,
			       const struct mlp_rt2 *net,
			       const struct mlp_cfg *c, struct mlp_params *p)
{
	int ret;

	ret = snpu_rt2_exec_param_read(e, net->w1, p->w1,
				       (size_t)c->in * c->hid * 4);
	if (!ret)
		ret = snpu_rt2_exec_param_read(e, net->b1, p->b1,
					       (size_t)c->hid * 4);
	if (!ret)
		ret = snpu_rt2_exec_param_read(e, net->w2, p->w2,
					       (size_t)c->hid * c->out * 4);
	if (!ret)
		ret = snpu_rt2_exec_param_read(e, net->b2, p->b2,
					       (size_t)c->out * 4);
	return ret;
}

#endif /* SNPU_TOOLS_MLP_RT2_H */
