// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * rt2: models - tensors (inputs fed from host memory, device-resident
 * parameters, op results) and ops, built one call at a time. Every call
 * checks its arguments against what is already there, so a model is
 * always well formed: ops only name existing tensors, hence the op order
 * is a topological order, and each op's index is its compute-node index.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rt2.h"

uint64_t rt2_shape_elems(const struct snpu_rt2_shape *s)
{
	uint64_t n = 1;
	unsigned int i;

	for (i = 0; i < s->ndim; i++)
		n *= s->dims[i];
	return n;
}

uint64_t rt2_shape_bytes(const struct snpu_rt2_shape *s)
{
	return rt2_shape_elems(s) * 4;
}

/* A declared shape: a known type, 1..4 dimensions, each 1..65536. */
int rt2_shape_check(const struct snpu_rt2_shape *s)
{
	unsigned int i;

	if (!s || (s->dtype != SNPU_RT2_F32 && s->dtype != SNPU_RT2_I32))
		return -EINVAL;
	if (s->ndim < 1 || s->ndim > SNPU_RT2_MAX_DIMS)
		return -EINVAL;
	for (i = 0; i < SNPU_RT2_MAX_DIMS; i++) {
		if (i < s->ndim && (!s->dims[i] || s->dims[i] > 65536))
			return -EINVAL;
		if (i >= s->ndim && s->dims[i])
			return -EINVAL;
	}
	return 0;
}

static int rt2_grow(void **arr, unsigned int *cap, unsigned int n,
		    size_t size)
{
	unsigned int c = *cap ? 2 * *cap : 8;
	void *p;

	if (n < *cap)
		return 0;
	p = realloc(*arr, (size_t)c * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = c;
	return 0;
}

int snpu_rt2_model_create(struct snpu_rt2_model **model)
{
	if (!model)
		return -EINVAL;
	*model = calloc(1, sizeof(**model));
	return *model ? 0 : -ENOMEM;
}

void snpu_rt2_model_destroy(struct snpu_rt2_model *m)
{
	unsigned int i;

	if (!m)
		return;
	for (i = 0; i < m->ntensors; i++)
		free(m->tensors[i].init);
	free(m->tensors);
	free(m->ops);
	free(m->outputs);
	free(m);
}

static int rt2_model_tensor(struct snpu_rt2_model *m,
			    const struct snpu_rt2_shape *shape,
			    unsigned int kind, int producer)
{
	struct rt2_tensor *t;
	int ret;

	ret = rt2_grow((void **)&m->tensors, &m->cap_tensors, m->ntensors,
		       sizeof(*m->tensors));
	if (ret)
		return ret;
	t = &m->tensors[m->ntensors];
	memset(t, 0, sizeof(*t));
	t->shape = *shape;
	t->kind = kind;
	t->producer = producer;
	return (int)m->ntensors++;
}

int snpu_rt2_model_input(struct snpu_rt2_model *m,
			 const struct snpu_rt2_shape *shape)
{
	int ret;

	if (!m || rt2_shape_check(shape))
		return -EINVAL;
	ret = rt2_model_tensor(m, shape, RT2_T_INPUT, -1);
	if (ret >= 0)
		m->tensors[ret].input = m->ninputs++;
	return ret;
}

int snpu_rt2_model_param(struct snpu_rt2_model *m,
			 const struct snpu_rt2_shape *shape, const void *init)
{
	void *copy;
	int ret;

	if (!m || !init || rt2_shape_check(shape))
		return -EINVAL;
	copy = malloc(rt2_shape_bytes(shape));
	if (!copy)
		return -ENOMEM;
	memcpy(copy, init, rt2_shape_bytes(shape));
	ret = rt2_model_tensor(m, shape, RT2_T_PARAM, -1);
	if (ret < 0) {
		free(copy);
		return ret;
	}
	m->tensors[ret].init = copy;
	return ret;
}

static bool rt2_is_f32(const struct snpu_rt2_shape *s)
{
	return s->dtype == SNPU_RT2_F32;
}

/* The training ops (LIBSNPU_0.9); see rt2_op_infer(). */
static int rt2_op_infer_train(const struct snpu_rt2_op_desc *op,
			      const struct snpu_rt2_shape *const *in,
			      struct snpu_rt2_shape *out)
{
	const struct snpu_rt2_shape *a = in[0], *b = in[1];

	if (op->flags)
		return -EINVAL;
	switch (op->type) {
	case SNPU_RT2_OP_BIAS_ADD:	/* x [..., n], bias [n] */
		if (op->nin != 2 || !rt2_is_f32(a) || !rt2_is_f32(b) ||
		    b->ndim != 1 || b->dims[0] != a->dims[a->ndim - 1])
			return -EINVAL;
		*out = *a;
		return 0;
	case SNPU_RT2_OP_RELU_BWD:	/* dy, y: the same shapes */
	case SNPU_RT2_OP_SGD:		/* param, gradient */
		if (op->nin != 2 || !rt2_is_f32(a) || memcmp(a, b, sizeof(*a)))
			return -EINVAL;
		*out = *a;
		return 0;
	case SNPU_RT2_OP_SOFTMAX_XENT:	/* logits [r, c], labels i32 [r] */
		if (op->nin != 2 || !rt2_is_f32(a) || a->ndim != 2 ||
		    b->dtype != SNPU_RT2_I32 || b->ndim != 1 ||
		    b->dims[0] != a->dims[0])
			return -EINVAL;
		*out = *a;
		return 0;
	case SNPU_RT2_OP_COLSUM:	/* [r, c] -> [c] */
	case SNPU_RT2_OP_ARGMAX:	/* [r, c] -> i32 [r] */
		if (op->nin != 1 || !rt2_is_f32(a) || a->ndim != 2)
			return -EINVAL;
		memset(out, 0, sizeof(*out));
		out->ndim = 1;
		if (op->type == SNPU_RT2_OP_COLSUM) {
			out->dtype = SNPU_RT2_F32;
			out->dims[0] = a->dims[1];
		} else {
			out->dtype = SNPU_RT2_I32;
			out->dims[0] = a->dims[0];
		}
		return 0;
	case SNPU_RT2_OP_COUNT_EQ:	/* i32, i32 -> i32 [1] */
		if (op->nin != 2 || a->dtype != SNPU_RT2_I32 ||
		    memcmp(a, b, sizeof(*a)))
			return -EINVAL;
		memset(out, 0, sizeof(*out));
		out->dtype = SNPU_RT2_I32;
		out->ndim = 1;
		out->dims[0] = 1;
		return 0;
	case SNPU_RT2_OP_AFFINE:
		if (op->nin != 1 || !rt2_is_f32(a))
			return -EINVAL;
		*out = *a;
		return 0;
	}
	return -EINVAL;
}

/* How many f32 scalars an op type takes. */
static unsigned int rt2_op_nscalars(uint32_t type)
{
	switch (type) {
	case SNPU_RT2_OP_AFFINE:
		return 2;
	case SNPU_RT2_OP_SGD:
		return 1;
	}
	return 0;
}

/*
 * The output shape of an op from its inputs' shapes, or -EINVAL when they
 * do not fit. Used when an op is added (declared shapes) and by the
 * InferShape kernel at run time (this run's shapes, where a dimension may
 * be zero).
 */
int rt2_op_infer(const struct snpu_rt2_op_desc *op,
		 const struct snpu_rt2_shape *const *in,
		 struct snpu_rt2_shape *out)
{
	const struct snpu_rt2_shape *a = in[0], *b = in[1];
	uint32_t am, ak, bk, bn;

	memset(out, 0, sizeof(*out));
	switch (op->type) {
	case SNPU_RT2_OP_MATMUL:
		if (op->nin != 2 || op->flags & ~3U || a->ndim != 2 ||
		    b->ndim != 2 || a->dtype != SNPU_RT2_F32 ||
		    b->dtype != SNPU_RT2_F32)
			return -EINVAL;
		am = a->dims[op->flags & SNPU_RT2_MATMUL_TRANS_A ? 1 : 0];
		ak = a->dims[op->flags & SNPU_RT2_MATMUL_TRANS_A ? 0 : 1];
		bk = b->dims[op->flags & SNPU_RT2_MATMUL_TRANS_B ? 1 : 0];
		bn = b->dims[op->flags & SNPU_RT2_MATMUL_TRANS_B ? 0 : 1];
		if (ak != bk)
			return -EINVAL;
		out->dtype = SNPU_RT2_F32;
		out->ndim = 2;
		out->dims[0] = am;
		out->dims[1] = bn;
		return 0;
	case SNPU_RT2_OP_ADD:
		if (op->nin != 2 || op->flags || memcmp(a, b, sizeof(*a)))
			return -EINVAL;
		*out = *a;
		return 0;
	case SNPU_RT2_OP_RELU:
		if (op->nin != 1 || op->flags || a->dtype != SNPU_RT2_F32)
			return -EINVAL;
		*out = *a;
		return 0;
	case SNPU_RT2_OP_CUSTOM:
		if (!op->custom || op->flags || rt2_shape_check(&op->out_shape))
			return -EINVAL;
		*out = op->out_shape;
		return 0;
	case SNPU_RT2_OP_ALLREDUCE:	/* f32 or i32, any shape */
		if (op->nin != 1 || op->flags & ~SNPU_RT2_ALLREDUCE_MAX ||
		    (a->dtype != SNPU_RT2_F32 && a->dtype != SNPU_RT2_I32))
			return -EINVAL;
		*out = *a;
		return 0;
	}
	return rt2_op_infer_train(op, in, out);
}

/* The second result of an op: SOFTMAX_XENT's loss, one f32 per row. */
int rt2_op_infer2(const struct snpu_rt2_op_desc *op,
		  const struct snpu_rt2_shape *const *in,
		  struct snpu_rt2_shape *out2)
{
	memset(out2, 0, sizeof(*out2));
	if (op->type != SNPU_RT2_OP_SOFTMAX_XENT)
		return -EINVAL;
	out2->dtype = SNPU_RT2_F32;
	out2->ndim = 1;
	out2->dims[0] = in[0]->dims[0];
	return 0;
}

static int rt2_model_op(struct snpu_rt2_model *m,
			const struct snpu_rt2_op_desc *desc,
			const float *scalars, unsigned int nscalars)
{
	const struct snpu_rt2_shape *in[SNPU_RT2_MAX_OP_INPUTS] = { NULL };
	struct snpu_rt2_shape shape, shape2;
	struct rt2_op *op;
	unsigned int i;
	int ret, t;

	if (!m || !desc || desc->nin < 1 || desc->nin > SNPU_RT2_MAX_OP_INPUTS)
		return -EINVAL;
	for (i = 0; i < desc->nin; i++)
		if (desc->in[i] < 0 || (unsigned int)desc->in[i] >= m->ntensors)
			return -EINVAL;
	for (i = 0; i < desc->nin; i++)
		in[i] = &m->tensors[desc->in[i]].shape;
	ret = rt2_op_infer(desc, in, &shape);
	if (ret)
		return ret;
	/* Before a new tensor moves the ones @in points into. */
	rt2_op_infer2(desc, in, &shape2);
	if (nscalars != rt2_op_nscalars(desc->type) || (nscalars && !scalars))
		return -EINVAL;
	/* SGD updates a parameter in place. */
	if (desc->type == SNPU_RT2_OP_SGD &&
	    m->tensors[desc->in[0]].kind != RT2_T_PARAM)
		return -EINVAL;
	ret = rt2_grow((void **)&m->ops, &m->cap_ops, m->nops,
		       sizeof(*m->ops));
	if (ret)
		return ret;
	t = rt2_model_tensor(m, &shape, RT2_T_VALUE, (int)m->nops);
	if (t < 0)
		return t;
	op = &m->ops[m->nops];
	memset(op, 0, sizeof(*op));
	op->out2 = -1;
	if (desc->type == SNPU_RT2_OP_SOFTMAX_XENT) {
		int t2 = rt2_model_tensor(m, &shape2, RT2_T_VALUE,
					  (int)m->nops);

		if (t2 < 0) {
			m->ntensors--;
			return t2;
		}
		op->out2 = t2;
	}
	op->nscalars = nscalars;
	for (i = 0; i < nscalars; i++)
		op->scalars[i] = scalars[i];
	op->desc = *desc;
	for (i = desc->nin; i < SNPU_RT2_MAX_OP_INPUTS; i++)
		op->desc.in[i] = -1;
	if (desc->name)
		strncpy(op->name, desc->name, sizeof(op->name) - 1);
	op->desc.name = NULL;
	op->out = t;
	m->nops++;
	return t;
}

int snpu_rt2_model_op(struct snpu_rt2_model *m,
		      const struct snpu_rt2_op_desc *desc)
{
	return rt2_model_op(m, desc, NULL, 0);
}

int snpu_rt2_model_op_scalars(struct snpu_rt2_model *m,
			      const struct snpu_rt2_op_desc *desc,
			      const float *scalars, unsigned int nscalars)
{
	if (nscalars > SNPU_RT2_MAX_OP_SCALARS)
		return -EINVAL;
	return rt2_model_op(m, desc, scalars, nscalars);
}

int snpu_rt2_model_output(struct snpu_rt2_model *m, int tensor)
{
	int ret;

	if (!m || tensor < 0 || (unsigned int)tensor >= m->ntensors ||
	    m->tensors[tensor].kind == RT2_T_PARAM ||
	    m->tensors[tensor].output)
		return -EINVAL;
	ret = rt2_grow((void **)&m->outputs, &m->cap_outputs, m->noutputs,
		       sizeof(*m->outputs));
	if (ret)
		return ret;
	m->tensors[tensor].output = true;
	m->outputs[m->noutputs] = tensor;
	return (int)m->noutputs++;
}
