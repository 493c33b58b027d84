// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit tests of rt2's training additions (LIBSNPU_0.9) on the
 * host-only device interface, which runs the built-in kernels with
 * kmod/core's code: the new op types' shape rules and errors, SGD in
 * place and parameter read-back, transposed matmuls, graph-replay mode
 * (one queue entry per run after the capture, the same results as op by
 * op, a new capture when the input shapes change, refused when a custom
 * operator would sit in the span) in single-thread and three-worker
 * mode, and snpu-train's MLP (lib/tools/mlp_rt2.h) against the CPU
 * reference (lib/tools/mlp.h) after several steps. Built under
 * ASan/UBSan.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snpu_rt2.h"
#include "../rt2/rt2.h"
#include "rt2/hostdev.h"
#include "rt2/models.h"
#include "../tools/mlp_rt2.h"

#include "kselftest_harness.h"

static struct snpu_rt2_shape shape1(uint32_t dtype, uint32_t a)
{
	struct snpu_rt2_shape s = { dtype, 1, { a } };

	return s;
}

/* ---- the model API -------------------------------------------------------- */

FIXTURE(model)
{
	struct snpu_rt2_model *m;
	int x, w, bias, lab, p;
};

FIXTURE_SETUP(model)
{
	struct snpu_rt2_shape sx = shape2(SNPU_RT2_F32, 4, 3);
	struct snpu_rt2_shape sb = shape1(SNPU_RT2_F32, 3);
	struct snpu_rt2_shape sl = shape1(SNPU_RT2_I32, 4);
	static const float init[12];

	ASSERT_EQ(0, snpu_rt2_model_create(&self->m));
	self->x = snpu_rt2_model_input(self->m, &sx);
	self->w = snpu_rt2_model_param(self->m, &sx, init);
	self->bias = snpu_rt2_model_param(self->m, &sb, init);
	self->lab = snpu_rt2_model_input(self->m, &sl);
	self->p = snpu_rt2_model_param(self->m, &sx, init);
	ASSERT_EQ(4, self->p);
}

FIXTURE_TEARDOWN(model)
{
	snpu_rt2_model_destroy(self->m);
}

static const struct snpu_rt2_shape *tshape(struct snpu_rt2_model *m, int t)
{
	return &m->tensors[t].shape;
}

TEST_F(model, bias_add_shapes)
{
	struct snpu_rt2_shape wrong = shape1(SNPU_RT2_F32, 4);
	int t, wb;

	t = op2(self->m, SNPU_RT2_OP_BIAS_ADD, self->x, self->bias);
	ASSERT_GT(t, 0);
	EXPECT_EQ(0, memcmp(tshape(self->m, t), tshape(self->m, self->x),
			    sizeof(struct snpu_rt2_shape)));
	wb = snpu_rt2_model_input(self->m, &wrong);
	EXPECT_EQ(-EINVAL, op2(self->m, SNPU_RT2_OP_BIAS_ADD, self->x, wb));
	/* The bias is the second operand, a vector. */
	EXPECT_EQ(-EINVAL, op2(self->m, SNPU_RT2_OP_BIAS_ADD, self->x, self->x));
}

TEST_F(model, softmax_xent_has_two_results)
{
	int d, loss;

	d = op2(self->m, SNPU_RT2_OP_SOFTMAX_XENT, self->x, self->lab);
	ASSERT_GT(d, 0);
	loss = d + 1;
	ASSERT_EQ((unsigned int)loss + 1, self->m->ntensors);
	EXPECT_EQ(2U, tshape(self->m, d)->ndim);
	EXPECT_EQ(3U, tshape(self->m, d)->dims[1]);
	EXPECT_EQ(1U, tshape(self->m, loss)->ndim);
	EXPECT_EQ(4U, tshape(self->m, loss)->dims[0]);
	EXPECT_EQ((uint32_t)SNPU_RT2_F32, tshape(self->m, loss)->dtype);
	EXPECT_EQ(0, snpu_rt2_model_output(self->m, loss));
	/* Labels are i32, one per row. */
	EXPECT_EQ(-EINVAL, op2(self->m, SNPU_RT2_OP_SOFTMAX_XENT, self->x,
			       self->bias));
}

TEST_F(model, reductions_and_counts)
{
	int c, a, n;

	c = op2(self->m, SNPU_RT2_OP_COLSUM, self->x, -1);
	ASSERT_GT(c, 0);
	EXPECT_EQ(1U, tshape(self->m, c)->ndim);
	EXPECT_EQ(3U, tshape(self->m, c)->dims[0]);
	a = op2(self->m, SNPU_RT2_OP_ARGMAX, self->x, -1);
	ASSERT_GT(a, 0);
	EXPECT_EQ((uint32_t)SNPU_RT2_I32, tshape(self->m, a)->dtype);
	EXPECT_EQ(4U, tshape(self->m, a)->dims[0]);
	n = op2(self->m, SNPU_RT2_OP_COUNT_EQ, a, self->lab);
	ASSERT_GT(n, 0);
	EXPECT_EQ(1U, tshape(self->m, n)->dims[0]);
	EXPECT_EQ(-EINVAL, op2(self->m, SNPU_RT2_OP_COUNT_EQ, self->x,
			       self->x));
	EXPECT_EQ(-EINVAL, op2(self->m, SNPU_RT2_OP_COLSUM, self->bias, -1));
}

TEST_F(model, scalars_are_required)
{
	struct snpu_rt2_op_desc d = { .type = SNPU_RT2_OP_AFFINE, .nin = 1 };
	float ab[2] = { 2.0f, 1.0f };

	d.in[0] = self->x;
	EXPECT_EQ(-EINVAL, snpu_rt2_model_op(self->m, &d));
	EXPECT_EQ(-EINVAL, snpu_rt2_model_op_scalars(self->m, &d, ab, 1));
	EXPECT_EQ(-EINVAL, snpu_rt2_model_op_scalars(self->m, &d, ab, 3));
	EXPECT_GT(snpu_rt2_model_op_scalars(self->m, &d, ab, 2), 0);
	/* And refused where there are none. */
	d.type = SNPU_RT2_OP_RELU;
	EXPECT_EQ(-EINVAL, snpu_rt2_model_op_scalars(self->m, &d, ab, 1));
}

TEST_F(model, sgd_updates_a_param_only)
{
	struct snpu_rt2_op_desc d = { .type = SNPU_RT2_OP_SGD, .nin = 2 };
	float lr = 0.5f;

	d.in[0] = self->x;	/* an input: refused */
	d.in[1] = self->w;
	EXPECT_EQ(-EINVAL, snpu_rt2_model_op_scalars(self->m, &d, &lr, 1));
	d.in[0] = self->p;
	d.in[1] = self->bias;	/* another shape */
	EXPECT_EQ(-EINVAL, snpu_rt2_model_op_scalars(self->m, &d, &lr, 1));
	d.in[1] = self->x;
	EXPECT_GT(snpu_rt2_model_op_scalars(self->m, &d, &lr, 1), 0);
}

/* ---- running on the host device ------------------------------------------ */

FIXTURE(run)
{
	struct hostdev *h;
	struct snpu_rt2_model *m;
	struct snpu_rt2_exec *e;
};

FIXTURE_SETUP(run)
{
	ASSERT_EQ(0, hostdev_open(&self->h));
	ASSERT_EQ(0, snpu_rt2_model_create(&self->m));
	self->e = NULL;
}

FIXTURE_TEARDOWN(run)
{
	snpu_rt2_exec_destroy(self->e);
	snpu_rt2_model_destroy(self->m);
	hostdev_close(self->h);
}

/* p += -lr * x on every run; read back with snpu_rt2_exec_param_read(). */
TEST_F(run, sgd_in_place_and_read_back)
{
	struct snpu_rt2_shape s = shape1(SNPU_RT2_F32, 6);
	struct snpu_rt2_op_desc d = { .type = SNPU_RT2_OP_SGD, .nin = 2 };
	float init[6] = { 1, 2, 3, 4, 5, 6 }, got[6], want[6], lr = 0.25f;
	float *x;
	int p, in, i, r;

	in = snpu_rt2_model_input(self->m, &s);
	p = snpu_rt2_model_param(self->m, &s, init);
	d.in[0] = p;
	d.in[1] = in;
	ASSERT_GT(snpu_rt2_model_op_scalars(self->m, &d, &lr, 1), 0);
	ASSERT_EQ(0, snpu_rt2_exec_create(self->m, &self->h->head, NULL,
					  &self->e));
	memcpy(want, init, sizeof(want));
	for (r = 0; r < 3; r++) {
		ASSERT_EQ(0, snpu_rt2_exec_input(self->e, 0, NULL, (void **)&x));
		for (i = 0; i < 6; i++) {
			x[i] = (float)(i - r);
			want[i] += -lr * x[i];
		}
		ASSERT_EQ(0, snpu_rt2_exec_run(self->e));
	}
	ASSERT_EQ(0, snpu_rt2_exec_param_read(self->e, p, got, sizeof(got)));
	EXPECT_EQ(0, memcmp(want, got, sizeof(got)));
	EXPECT_EQ(-EINVAL, snpu_rt2_exec_param_read(self->e, in, got,
						    sizeof(got)));
	EXPECT_EQ(-EINVAL, snpu_rt2_exec_param_read(self->e, p, got, 8));
}

/* y = relu(x w): a model of the kernels every device has. */
struct small {
	int x, w, y;
	float wv[6 * 4];
};

static void small_build(struct __test_metadata *_metadata,
			struct snpu_rt2_model *m, struct small *s)
{
	struct snpu_rt2_shape sx = shape2(SNPU_RT2_F32, 3, 6);
	struct snpu_rt2_shape sw = shape2(SNPU_RT2_F32, 6, 4);
	unsigned int i;
	int t;

	for (i = 0; i < 24; i++)
		s->wv[i] = (float)((int)(i * 5 % 9) - 4) / 3.0f;
	s->x = snpu_rt2_model_input(m, &sx);
	s->w = snpu_rt2_model_param(m, &sw, s->wv);
	t = op2(m, SNPU_RT2_OP_MATMUL, s->x, s->w);
	s->y = op2(m, SNPU_RT2_OP_RELU, t, -1);
	ASSERT_GT(s->y, 0);
	ASSERT_EQ(0, snpu_rt2_model_output(m, s->y));
}

static void small_run(struct __test_metadata *_metadata,
		      struct snpu_rt2_exec *e, unsigned int run,
		      const uint32_t *dims, float *out)
{
	const float *y;
	float *x;
	unsigned int i;

	ASSERT_EQ(0, snpu_rt2_exec_input(e, 0, dims, (void **)&x));
	for (i = 0; i < 18; i++)
		x[i] = (float)((int)((i + run) * 7 % 11) - 5) / 2.0f;
	ASSERT_EQ(0, snpu_rt2_exec_run(e));
	ASSERT_EQ(0, snpu_rt2_exec_output(e, 0, (const void **)&y, NULL));
	memcpy(out, y, 12 * sizeof(float));
}

static void graph_mode(struct __test_metadata *_metadata,
		       FIXTURE_DATA(run) *self, unsigned int flags)
{
	struct snpu_rt2_exec_opts plain = { .flags = flags };
	struct snpu_rt2_exec_opts graph = {
		.flags = flags | SNPU_RT2_EXEC_GRAPH };
	struct snpu_rt2_exec_stats st, st2;
	struct snpu_rt2_exec *ref;
	float a[12], b[12];
	uint32_t two[2] = { 2, 6 };
	struct small s;
	unsigned int r;

	small_build(_metadata, self->m, &s);
	ASSERT_EQ(0, snpu_rt2_exec_create(self->m, &self->h->head, &plain,
					  &ref));
	ASSERT_EQ(0, snpu_rt2_exec_create(self->m, &self->h->head, &graph,
					  &self->e));
	for (r = 0; r < 6; r++) {
		small_run(_metadata, ref, r, NULL, a);
		small_run(_metadata, self->e, r, NULL, b);
		ASSERT_EQ(0, memcmp(a, b, sizeof(a))) TH_LOG("run %u", r);
	}
	ASSERT_EQ(0, snpu_rt2_exec_stats(self->e, &st));
	ASSERT_EQ(0, snpu_rt2_exec_stats(ref, &st2));
	EXPECT_EQ(6U, st.runs);
	EXPECT_EQ(1U, st.graph_captures);
	EXPECT_EQ(5U, st.graph_launches);
	EXPECT_EQ(0U, st.graph_fallbacks);
	/* Every run after the capture was a replay. */
	EXPECT_EQ(5U, st.graph_replays);
	EXPECT_EQ(0U, st2.graph_replays);
	/* Per run: the H2D copy, one graph launch, the D2H copy. */
	EXPECT_EQ(6U * 3, st.entries);
	/* Op by op: the copies and two launches. */
	EXPECT_EQ(6U * 4, st2.entries);
	EXPECT_EQ(6U, self->h->graph_launches);

	/* Another input shape: captured again, and still right. */
	small_run(_metadata, ref, 9, two, a);
	small_run(_metadata, self->e, 9, two, b);
	EXPECT_EQ(0, memcmp(a, b, 8 * sizeof(float)));
	small_run(_metadata, ref, 10, two, a);
	small_run(_metadata, self->e, 10, two, b);
	EXPECT_EQ(0, memcmp(a, b, 8 * sizeof(float)));
	ASSERT_EQ(0, snpu_rt2_exec_stats(self->e, &st));
	EXPECT_EQ(2U, st.graph_captures);
	EXPECT_EQ(6U, st.graph_launches);
	/* The new shape's first run was whole; its second, a replay. */
	EXPECT_EQ(6U, st.graph_replays);
	snpu_rt2_exec_destroy(ref);
}

TEST_F(run, graph_replay_single_thread)
{
	graph_mode(_metadata, self, 0);
}

TEST_F(run, graph_replay_three_workers)
{
	graph_mode(_metadata, self, SNPU_RT2_EXEC_THREADS);
}

/* The kernels a run ran, through the trace hook. */
struct ktrace {
	unsigned int n;
	const char *kernel[64];
};

static void ktrace_fn(void *arg, const struct snpu_rt2_trace *t)
{
	struct ktrace *k = arg;

	if (k->n < 64)
		k->kernel[k->n] = t->kernel;
	k->n++;
}

/*
 * A replay runs only what changes from run to run: the H2D copy of the
 * input, the span's first launch (the graph's launch: the span's
 * launches do nothing else) and its last, and the D2H copy; no shape
 * inference, allocation, tensor building or free. A whole run runs every
 * node. Both modes.
 */
static void replay_runs_what_changes(struct __test_metadata *_metadata,
				     FIXTURE_DATA(run) *self,
				     unsigned int flags)
{
	struct snpu_rt2_exec_opts o = {
		.flags = flags | SNPU_RT2_EXEC_GRAPH };
	struct ktrace k = { 0 };
	uint32_t two[2] = { 2, 6 };
	struct small s;
	unsigned int r, i;
	float b[12];

	small_build(_metadata, self->m, &s);
	o.trace = ktrace_fn;
	o.trace_arg = &k;
	ASSERT_EQ(0, snpu_rt2_exec_create(self->m, &self->h->head, &o,
					  &self->e));
	for (r = 0; r < 4; r++) {
		k.n = 0;
		small_run(_metadata, self->e, r, r < 3 ? NULL : two, b);
		if (r == 0 || r == 3) {
			/* The capture, and a new shape: whole runs. */
			EXPECT_EQ(self->e->g.nnodes, k.n);
			continue;
		}
		ASSERT_EQ(4U, k.n);
		for (i = 0; i < k.n; i++) {
			EXPECT_EQ(NULL, strstr(k.kernel[i], "Infer"));
			EXPECT_EQ(NULL, strstr(k.kernel[i], "Alloc"));
			EXPECT_EQ(NULL, strstr(k.kernel[i], "Free"));
			EXPECT_EQ(NULL, strstr(k.kernel[i], "BuildTensor"));
		}
		EXPECT_STREQ("LaunchMatMul", k.kernel[1]);
		EXPECT_STREQ("LaunchRelu", k.kernel[2]);
		EXPECT_STREQ("LaunchD2HCopy", k.kernel[3]);
	}
}

TEST_F(run, graph_replay_runs_only_what_changes_single_thread)
{
	replay_runs_what_changes(_metadata, self, 0);
}

TEST_F(run, graph_replay_runs_only_what_changes_three_workers)
{
	replay_runs_what_changes(_metadata, self, SNPU_RT2_EXEC_THREADS);
}

/*
 * Device errors: in the capturing run (its H2D copy fails, which the
 * capture does not hold) the run returns it and the graph stands; in a
 * replay (its D2H copy fails) the run returns it. Either way the runs
 * after it replay, with exact results: a replay changes no value.
 */
TEST_F(run, graph_replay_after_errors)
{
	struct snpu_rt2_exec_opts plain = { 0 };
	struct snpu_rt2_exec_opts graph = { .flags = SNPU_RT2_EXEC_GRAPH };
	struct snpu_rt2_exec_stats st;
	struct snpu_rt2_exec *ref;
	float a[12], b[12];
	struct small s;
	unsigned int r;
	float *x;

	small_build(_metadata, self->m, &s);
	ASSERT_EQ(0, snpu_rt2_exec_create(self->m, &self->h->head, &plain,
					  &ref));
	ASSERT_EQ(0, snpu_rt2_exec_create(self->m, &self->h->head, &graph,
					  &self->e));
	self->h->fail_at = self->h->tasks + 1;
	self->h->fail_err = -EIO;
	ASSERT_EQ(0, snpu_rt2_exec_input(self->e, 0, NULL, (void **)&x));
	ASSERT_EQ(-EIO, snpu_rt2_exec_run(self->e));
	ASSERT_EQ(0, snpu_rt2_exec_stats(self->e, &st));
	EXPECT_EQ(1U, st.graph_captures);
	for (r = 1; r < 3; r++) {
		small_run(_metadata, ref, r, NULL, a);
		small_run(_metadata, self->e, r, NULL, b);
		ASSERT_EQ(0, memcmp(a, b, sizeof(a))) TH_LOG("run %u", r);
	}
	ASSERT_EQ(0, snpu_rt2_exec_stats(self->e, &st));
	EXPECT_EQ(2U, st.graph_replays);
	/* A replay's third task (after the H2D copy and the graph). */
	self->h->fail_at = self->h->tasks + 3;
	ASSERT_EQ(-EIO, snpu_rt2_exec_run(self->e));
	ASSERT_EQ(0, snpu_rt2_exec_stats(self->e, &st));
	EXPECT_EQ(3U, st.graph_replays);
	for (r = 4; r < 6; r++) {
		small_run(_metadata, ref, r, NULL, a);
		small_run(_metadata, self->e, r, NULL, b);
		ASSERT_EQ(0, memcmp(a, b, sizeof(a))) TH_LOG("run %u", r);
	}
	ASSERT_EQ(0, snpu_rt2_exec_stats(self->e, &st));
	EXPECT_EQ(5U, st.graph_replays);
	EXPECT_EQ(1U, st.graph_captures);
	snpu_rt2_exec_destroy(ref);
}

static int nop_op(struct snpu_rt2_kctx *ctx, const struct snpu_rt2_kargs *a,
		  void *arg)
{
	return 0;
}

/* A custom operator between two built-in launches cannot be captured. */
TEST_F(run, graph_refuses_custom_op_in_span)
{
	struct snpu_rt2_shape s = shape2(SNPU_RT2_F32, 2, 2);
	struct snpu_rt2_op_desc d = {
		.type = SNPU_RT2_OP_CUSTOM, .nin = 1, .custom = nop_op,
		.name = "nop",
	};
	struct snpu_rt2_exec_opts o = { .flags = SNPU_RT2_EXEC_GRAPH };
	int x, t;

	x = snpu_rt2_model_input(self->m, &s);
	t = op2(self->m, SNPU_RT2_OP_RELU, x, -1);
	d.in[0] = t;
	d.out_shape = s;
	t = snpu_rt2_model_op(self->m, &d);
	t = op2(self->m, SNPU_RT2_OP_RELU, t, -1);
	ASSERT_EQ(0, snpu_rt2_model_output(self->m, t));
	EXPECT_EQ(-EOPNOTSUPP, snpu_rt2_exec_create(self->m, &self->h->head,
						    &o, &self->e));
	o.flags = 0;
	EXPECT_EQ(0, snpu_rt2_exec_create(self->m, &self->h->head, &o,
					  &self->e));
}

/* ---- the ABI 0.8 kernels ---------------------------------------------------- */

/* c = a^T b and c = a b^T against the CPU reference, bit for bit. */
TEST_F(run, transposed_matmuls)
{
	struct snpu_rt2_shape sa = shape2(SNPU_RT2_F32, 5, 3);	/* k x m */
	struct snpu_rt2_shape sb = shape2(SNPU_RT2_F32, 5, 4);	/* k x n */
	float av[15], bv[20], want[12], want2[25];
	const float *c, *c2;
	int a, b, t, t2;
	unsigned int i;

	for (i = 0; i < 15; i++)
		av[i] = (float)((int)(i * 3 % 7) - 3) / 5.0f;
	for (i = 0; i < 20; i++)
		bv[i] = (float)((int)(i * 5 % 9) - 4) / 7.0f;
	a = snpu_rt2_model_param(self->m, &sa, av);
	b = snpu_rt2_model_param(self->m, &sb, bv);
	t = mlp_rt2_op(self->m, SNPU_RT2_OP_MATMUL, SNPU_RT2_MATMUL_TRANS_A,
		       a, b);
	t2 = mlp_rt2_op(self->m, SNPU_RT2_OP_MATMUL, SNPU_RT2_MATMUL_TRANS_B,
			a, a);
	ASSERT_GT(t2, 0);
	EXPECT_EQ(3U, self->m->tensors[t].shape.dims[0]);
	EXPECT_EQ(4U, self->m->tensors[t].shape.dims[1]);
	EXPECT_EQ(5U, self->m->tensors[t2].shape.dims[1]);
	ASSERT_EQ(0, snpu_rt2_model_output(self->m, t));
	ASSERT_EQ(1, snpu_rt2_model_output(self->m, t2));
	/* Both transposed: no kernel. */
	sa = shape2(SNPU_RT2_F32, 4, 5);
	ASSERT_GT(mlp_rt2_op(self->m, SNPU_RT2_OP_MATMUL,
			     SNPU_RT2_MATMUL_TRANS_A | SNPU_RT2_MATMUL_TRANS_B,
			     a, snpu_rt2_model_param(self->m, &sa, bv)), 0);
	sa = shape2(SNPU_RT2_F32, 5, 3);
	ASSERT_EQ(-EOPNOTSUPP, snpu_rt2_exec_create(self->m, &self->h->head,
						    NULL, &self->e));
	snpu_rt2_model_destroy(self->m);
	ASSERT_EQ(0, snpu_rt2_model_create(&self->m));
	a = snpu_rt2_model_param(self->m, &sa, av);
	b = snpu_rt2_model_param(self->m, &sb, bv);
	t = mlp_rt2_op(self->m, SNPU_RT2_OP_MATMUL, SNPU_RT2_MATMUL_TRANS_A,
		       a, b);
	t2 = mlp_rt2_op(self->m, SNPU_RT2_OP_MATMUL, SNPU_RT2_MATMUL_TRANS_B,
			a, a);
	ASSERT_EQ(0, snpu_rt2_model_output(self->m, t));
	ASSERT_EQ(1, snpu_rt2_model_output(self->m, t2));
	ASSERT_EQ(0, snpu_rt2_exec_create(self->m, &self->h->head, NULL,
					  &self->e));
	ASSERT_EQ(0, snpu_rt2_exec_run(self->e));
	ASSERT_EQ(0, snpu_rt2_exec_output(self->e, 0, (const void **)&c, NULL));
	ASSERT_EQ(0, snpu_rt2_exec_output(self->e, 1, (const void **)&c2,
					  NULL));
	mlp_gemm_tn(want, av, bv, 3, 4, 5);
	mlp_gemm_nt(want2, av, av, 5, 5, 3);
	EXPECT_EQ(0, memcmp(want, c, sizeof(want)));
	EXPECT_EQ(0, memcmp(want2, c2, sizeof(want2)));
}

/*
 * snpu-train's step: after several steps the device's weights are the
 * CPU reference's bit for bit (it computes the softmax with the kernels'
 * own exp and log), and so is every step's loss, in every mode.
 */
static void train_vs_cpu(struct __test_metadata *_metadata,
			 FIXTURE_DATA(run) *self, unsigned int flags)
{
	struct mlp_cfg c = { 20, 8, 4, 6, 0.2f, 5 };
	struct snpu_rt2_exec_opts o = { .flags = flags };
	struct snpu_rt2_exec_stats st;
	struct mlp_params dev;
	struct mlp_cpu cpu;
	struct mlp_rt2 net;
	const float *loss;
	const int32_t *ok;
	float *x;
	int32_t *y;
	double cl, dl;
	uint64_t s = 77;
	unsigned int step, i;

	ASSERT_EQ(0, mlp_cpu_init(&cpu, &c));
	ASSERT_EQ(0, mlp_params_init(&c, &dev));
	ASSERT_EQ(0, mlp_rt2_build(&net, &c, &cpu.p, c.batch, true));
	ASSERT_EQ(0, snpu_rt2_exec_create(net.m, &self->h->head, &o,
					  &self->e));
	for (step = 0; step < 8; step++) {
		ASSERT_EQ(0, snpu_rt2_exec_input(self->e, 0, NULL,
						 (void **)&x));
		ASSERT_EQ(0, snpu_rt2_exec_input(self->e, 1, NULL,
						 (void **)&y));
		for (i = 0; i < c.batch * c.in; i++)
			x[i] = (float)(mlp_rand(&s) % 256);
		for (i = 0; i < c.batch; i++)
			y[i] = (int32_t)(mlp_rand(&s) % c.out);
		cl = mlp_cpu_step(&cpu, x, y);
		ASSERT_EQ(0, snpu_rt2_exec_run(self->e));
		ASSERT_EQ(0, snpu_rt2_exec_output(self->e, 0,
						  (const void **)&loss, NULL));
		ASSERT_EQ(0, snpu_rt2_exec_output(self->e, 1,
						  (const void **)&ok, NULL));
		for (dl = 0, i = 0; i < c.batch; i++)
			dl += loss[i];
		dl /= c.batch;
		EXPECT_EQ(0, memcmp(&dl, &cl, sizeof(cl)))
			TH_LOG("step %u: loss %a, cpu %a", step, dl, cl);
		EXPECT_LE((uint32_t)ok[0], c.batch);
	}
	ASSERT_EQ(0, mlp_rt2_read(self->e, &net, &c, &dev));
	EXPECT_EQ(0, memcmp(dev.w1, cpu.p.w1, 4 * c.in * c.hid));
	EXPECT_EQ(0, memcmp(dev.b1, cpu.p.b1, 4 * c.hid));
	EXPECT_EQ(0, memcmp(dev.w2, cpu.p.w2, 4 * c.hid * c.out));
	EXPECT_EQ(0, memcmp(dev.b2, cpu.p.b2, 4 * c.out));
	/* The weights moved. */
	mlp_params_free(&dev);
	ASSERT_EQ(0, mlp_params_init(&c, &dev));
	EXPECT_GT(mlp_max_rel_diff(dev.w2, cpu.p.w2, c.hid * c.out), 1e-3f);
	EXPECT_EQ(8U, net.norm_calls);
	ASSERT_EQ(0, snpu_rt2_exec_stats(self->e, &st));
	if (flags & SNPU_RT2_EXEC_GRAPH) {
		EXPECT_EQ(1U, st.graph_captures);
		EXPECT_EQ(7U, st.graph_launches);
	}
	mlp_params_free(&dev);
	mlp_cpu_free(&cpu);
	snpu_rt2_exec_destroy(self->e);
	self->e = NULL;
	mlp_rt2_free(&net);
}

TEST_F(run, mlp_matches_cpu_single_thread)
{
	train_vs_cpu(_metadata, self, 0);
}

TEST_F(run, mlp_matches_cpu_three_workers_graph)
{
	train_vs_cpu(_metadata, self, SNPU_RT2_EXEC_THREADS |
		     SNPU_RT2_EXEC_GRAPH);
}

TEST_HARNESS_MAIN
