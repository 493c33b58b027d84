// SPDX-License-Identifier: GPL-2.0
/*
 * rt2 on the real module, through the device's command queues (the ring):
 * a model of a matmul, an add, a relu and a custom operator on an attached
 * stream of the executor's owner, with two H2D inputs fed from host memory,
 * a parameter and two D2H outputs, run in single-thread mode and with
 * three workers.
 *
 * The outputs are compared bit for bit with a plain C reference: the
 * device's GEMM accumulates each element in float from 0 in increasing k
 * order, one rounded product and one rounded add at a time, which is what
 * the reference does (built with -ffp-contract=off, so no FMA); the add,
 * the relu and the custom op's add are one rounded operation per element.
 * The modes, two executors of one model and repeated runs of one executor
 * must therefore agree exactly too. Then the errors: a device error (a
 * FAIL launch, on the executor's stream or on the attached stream) and a
 * kernel error stop the run with that error, and the next run of the same
 * executor succeeds with exact results.
 *
 * Needs the module loaded with test_hooks=1 (SNPU_KERNEL_FAIL).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "snpu.h"
#include "snpu_rt2.h"

#include "kselftest_harness.h"

#define M	6U
#define K	33U
#define N	10U

#define AUX_KEY		"rt2.selftest.aux"
#define FAIL_ERRNO	ENOTRECOVERABLE

/* How the custom op misbehaves on its @fail_call-th call (1-based). */
enum fail_how { FAIL_NONE, FAIL_DQ, FAIL_AUX, FAIL_KERNEL };

struct custom {
	unsigned int calls;
	unsigned int fail_call;
	enum fail_how how;
	uint32_t aux;		/* the attached stream it used */
	uint32_t dq;		/* the executor's stream it was given */
};

struct mlp {
	struct snpu_rt2_model *m;
	int x, w, b, y, z, r, c;
	float wv[K * N];
	struct custom cu;
};

static struct snpu_rt2_shape shape2(uint32_t a, uint32_t b)
{
	struct snpu_rt2_shape s;

	memset(&s, 0, sizeof(s));
	s.dtype = SNPU_RT2_F32;
	s.ndim = 2;
	s.dims[0] = a;
	s.dims[1] = b;
	return s;
}

static int fail_task(struct snpu_rt2_kctx *ctx, uint32_t stream)
{
	struct snpu_kernel_arg k = snpu_arg_u64(FAIL_ERRNO);
	struct snpu_task t;

	snpu_prep_launch(&t, stream, SNPU_KERNEL_FAIL, 1, &k, 1);
	return snpu_rt2_kctx_submit(ctx, &t, 1);
}

/*
 * c = r + r with ADD_F32 on the attached stream AUX_KEY: the attached
 * stream waits for the executor's stream (fork), runs the add, and is
 * joined back into the executor's stream.
 */
static int double_op(struct snpu_rt2_kctx *ctx,
		     const struct snpu_rt2_kargs *a, void *arg)
{
	struct custom *cu = arg;
	struct snpu_kernel_arg args[3];
	bool fail = ++cu->calls == cu->fail_call;
	uint64_t bytes;
	struct snpu_task t;
	uint32_t s;
	int ret;

	if (fail && cu->how == FAIL_KERNEL)
		return -EPERM;
	ret = snpu_rt2_kctx_attached_stream(ctx, AUX_KEY, &s);
	if (ret)
		return ret;
	cu->aux = s;
	cu->dq = a->stream;
	if (fail && cu->how == FAIL_DQ) {
		ret = fail_task(ctx, a->stream);
		if (ret)
			return ret;
	}
	ret = snpu_rt2_kctx_fork(ctx, s);
	if (ret)
		return ret;
	if (fail && cu->how == FAIL_AUX) {
		ret = fail_task(ctx, s);
		if (ret)
			return ret;
	}
	bytes = 4ULL * a->in_shape[0].dims[0] * a->in_shape[0].dims[1];
	args[0] = snpu_arg_buf(a->out, bytes);
	args[1] = snpu_arg_buf(a->in[0], bytes);
	args[2] = args[1];
	if (bytes) {
		snpu_prep_launch(&t, s, SNPU_KERNEL_ADD_F32, 1, args, 3);
		ret = snpu_rt2_kctx_submit(ctx, &t, 1);
		if (ret)
			return ret;
	}
	return snpu_rt2_kctx_join(ctx, s);
}

static int op2(struct snpu_rt2_model *m, uint32_t type, int a, int b)
{
	struct snpu_rt2_op_desc d;

	memset(&d, 0, sizeof(d));
	d.type = type;
	d.nin = b < 0 ? 1 : 2;
	d.in[0] = a;
	d.in[1] = b;
	return snpu_rt2_model_op(m, &d);
}

/* relu(x * w + b) and its double on the attached stream; both outputs. */
static void mlp_build(struct __test_metadata *_metadata, struct mlp *p)
{
	struct snpu_rt2_shape sx = shape2(M, K), sw = shape2(K, N);
	struct snpu_rt2_shape sb = shape2(M, N);
	struct snpu_rt2_op_desc d;
	unsigned int i;

	for (i = 0; i < K * N; i++)
		p->wv[i] = (float)((int)(i * 7 % 19) - 9) / 7.0f;
	ASSERT_EQ(0, snpu_rt2_model_create(&p->m));
	p->x = snpu_rt2_model_input(p->m, &sx);
	p->w = snpu_rt2_model_param(p->m, &sw, p->wv);
	p->b = snpu_rt2_model_input(p->m, &sb);
	ASSERT_GE(p->x, 0);
	ASSERT_GE(p->w, 0);
	ASSERT_GE(p->b, 0);
	p->y = op2(p->m, SNPU_RT2_OP_MATMUL, p->x, p->w);
	p->z = op2(p->m, SNPU_RT2_OP_ADD, p->y, p->b);
	p->r = op2(p->m, SNPU_RT2_OP_RELU, p->z, -1);
	ASSERT_GE(p->y, 0);
	ASSERT_GE(p->z, 0);
	ASSERT_GE(p->r, 0);
	memset(&d, 0, sizeof(d));
	d.type = SNPU_RT2_OP_CUSTOM;
	d.nin = 1;
	d.in[0] = p->r;
	d.custom = double_op;
	d.custom_arg = &p->cu;
	d.name = "double";
	d.out_shape = sb;
	p->c = snpu_rt2_model_op(p->m, &d);
	ASSERT_GE(p->c, 0);
	ASSERT_EQ(0, snpu_rt2_model_output(p->m, p->r));
	ASSERT_EQ(1, snpu_rt2_model_output(p->m, p->c));
}

/* Inputs of run @seed (different seeds give different inputs). */
static void make_inputs(unsigned int seed, float *x, float *b)
{
	unsigned int i;

	for (i = 0; i < M * K; i++)
		x[i] = (float)((int)((i * 5 + seed * 11) % 23) - 11) / 3.0f;
	for (i = 0; i < M * N; i++)
		b[i] = (float)((int)((i * 3 + seed * 7) % 13) - 6) / 5.0f;
}

/* The reference of relu(x * w + b) and of its double. */
static void mlp_ref(const float *wv, unsigned int seed, float *r, float *c)
{
	float x[M * K], b[M * N];
	unsigned int i, j, l;

	make_inputs(seed, x, b);
	for (i = 0; i < M; i++) {
		for (j = 0; j < N; j++) {
			float s = 0.0f, z;

			for (l = 0; l < K; l++)
				s += x[i * K + l] * wv[l * N + j];
			z = s + b[i * N + j];
			r[i * N + j] = z > 0.0f ? z : 0.0f;
			c[i * N + j] = r[i * N + j] + r[i * N + j];
		}
	}
}

static void fill_inputs(struct __test_metadata *_metadata,
			struct snpu_rt2_exec *e, unsigned int seed)
{
	void *x, *b;

	ASSERT_EQ(0, snpu_rt2_exec_input(e, 0, NULL, &x));
	ASSERT_EQ(0, snpu_rt2_exec_input(e, 1, NULL, &b));
	make_inputs(seed, x, b);
}

/* Output @i of @e's last run, with its shape checked: M x N f32. */
static const float *output(struct __test_metadata *_metadata,
			   struct snpu_rt2_exec *e, unsigned int i)
{
	struct snpu_rt2_shape s;
	const void *out = NULL;

	EXPECT_EQ(0, snpu_rt2_exec_output(e, i, &out, &s));
	EXPECT_EQ((uint32_t)SNPU_RT2_F32, s.dtype);
	EXPECT_EQ(2U, s.ndim);
	EXPECT_EQ(M, s.dims[0]);
	EXPECT_EQ(N, s.dims[1]);
	return out;
}

/* Both outputs of @e's last run equal the reference of @seed, bit for bit. */
static void check_outputs(struct __test_metadata *_metadata,
			  const struct mlp *p, struct snpu_rt2_exec *e,
			  unsigned int seed)
{
	float r[M * N], c[M * N];
	const float *o;
	unsigned int i, positive = 0;

	mlp_ref(p->wv, seed, r, c);
	/* The inputs make a nontrivial relu: some zeros, some not. */
	for (i = 0; i < M * N; i++)
		positive += r[i] > 0.0f;
	ASSERT_GT(positive, 0U);
	ASSERT_LT(positive, M * N);
	o = output(_metadata, e, 0);
	ASSERT_NE(NULL, o);
	ASSERT_EQ(0, memcmp(o, r, sizeof(r)));
	o = output(_metadata, e, 1);
	ASSERT_NE(NULL, o);
	ASSERT_EQ(0, memcmp(o, c, sizeof(c)));
}

FIXTURE(rt2) {
	struct snpu_device *dev;
	struct snpu_rt2_dev *rd;
	struct mlp p;
};

FIXTURE_SETUP(rt2)
{
	ASSERT_EQ(0, snpu_open(0, 0, &self->dev));
	ASSERT_EQ(0, snpu_rt2_dev_open(self->dev, 0, &self->rd));
	mlp_build(_metadata, &self->p);
}

FIXTURE_TEARDOWN(rt2)
{
	snpu_rt2_model_destroy(self->p.m);
	snpu_rt2_dev_close(self->rd);
	snpu_close(self->dev);
}

static struct snpu_rt2_exec *exec_new(struct __test_metadata *_metadata,
				      FIXTURE_DATA(rt2) * self,
				      unsigned int flags)
{
	struct snpu_rt2_exec_opts o = { .flags = flags };
	struct snpu_rt2_exec *e = NULL;

	EXPECT_EQ(0, snpu_rt2_exec_create(self->p.m, self->rd, &o, &e));
	return e;
}

/* The attached stream's submitted count, from the driver. */
static uint64_t aux_submitted(struct __test_metadata *_metadata,
			      FIXTURE_DATA(rt2) * self)
{
	struct snpu_stream_query q;

	memset(&q, 0, sizeof(q));
	EXPECT_EQ(0, snpu_stream_query(self->dev, self->p.cu.aux, &q));
	EXPECT_EQ(0, q.error);
	EXPECT_EQ(q.submitted, q.completed);
	return q.submitted;
}

/*
 * Five runs with different inputs, each exact; the custom op ran once a
 * run, on an attached stream other than the executor's, and its three
 * tasks a run (the fork's wait, the add, the join's record) reached that
 * stream.
 */
static void runs_match_reference(struct __test_metadata *_metadata,
				 FIXTURE_DATA(rt2) * self, unsigned int flags)
{
	struct snpu_rt2_exec *e = exec_new(_metadata, self, flags);
	uint64_t before = 0, after;
	unsigned int run;

	ASSERT_NE(NULL, e);
	for (run = 0; run < 5; run++) {
		fill_inputs(_metadata, e, run);
		ASSERT_EQ(0, snpu_rt2_exec_run(e));
		check_outputs(_metadata, &self->p, e, run);
		if (!run)
			before = aux_submitted(_metadata, self);
	}
	ASSERT_EQ(5U, self->p.cu.calls);
	ASSERT_NE(self->p.cu.aux, self->p.cu.dq);
	after = aux_submitted(_metadata, self);
	ASSERT_EQ(before + 4 * 3, after);
	snpu_rt2_exec_destroy(e);
}

TEST_F(rt2, single_thread_matches_reference)
{
	runs_match_reference(_metadata, self, 0);
}

TEST_F(rt2, three_workers_match_reference)
{
	runs_match_reference(_metadata, self, SNPU_RT2_EXEC_THREADS);
}

TEST_F(rt2, dyn_multi_stream_matches_reference)
{
	runs_match_reference(_metadata, self, SNPU_RT2_EXEC_THREADS |
			     SNPU_RT2_EXEC_DYN_MULTI_STREAM);
}

/* Helpers take part from the start of every run. */
TEST_F(rt2, three_workers_parallel_match_reference)
{
	runs_match_reference(_metadata, self, SNPU_RT2_EXEC_THREADS |
			     SNPU_RT2_EXEC_PARALLEL);
}

/* The same inputs give the same bits in single-thread and three-worker mode. */
TEST_F(rt2, modes_agree)
{
	struct snpu_rt2_exec *st = exec_new(_metadata, self, 0);
	struct snpu_rt2_exec *mt = exec_new(_metadata, self,
					    SNPU_RT2_EXEC_THREADS);
	unsigned int run, i;

	ASSERT_NE(NULL, st);
	ASSERT_NE(NULL, mt);
	for (run = 0; run < 3; run++) {
		fill_inputs(_metadata, st, 10 + run);
		fill_inputs(_metadata, mt, 10 + run);
		ASSERT_EQ(0, snpu_rt2_exec_run(st));
		ASSERT_EQ(0, snpu_rt2_exec_run(mt));
		for (i = 0; i < 2; i++)
			ASSERT_EQ(0, memcmp(output(_metadata, st, i),
					    output(_metadata, mt, i),
					    M * N * sizeof(float)));
		check_outputs(_metadata, &self->p, st, 10 + run);
	}
	snpu_rt2_exec_destroy(st);
	snpu_rt2_exec_destroy(mt);
}

/*
 * Two three-worker executors of one model, with different inputs, run in
 * turn: each gets its own results (no shared per-run state), on its own
 * stream.
 */
TEST_F(rt2, two_executors_from_one_model)
{
	struct snpu_rt2_exec *a = exec_new(_metadata, self,
					   SNPU_RT2_EXEC_THREADS);
	struct snpu_rt2_exec *b = exec_new(_metadata, self,
					   SNPU_RT2_EXEC_THREADS);
	uint32_t qa, qb;
	unsigned int run;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	for (run = 0; run < 3; run++) {
		fill_inputs(_metadata, a, 20 + run);
		fill_inputs(_metadata, b, 30 + run);
		ASSERT_EQ(0, snpu_rt2_exec_run(a));
		qa = self->p.cu.dq;
		ASSERT_EQ(0, snpu_rt2_exec_run(b));
		qb = self->p.cu.dq;
		ASSERT_NE(qa, qb);
		check_outputs(_metadata, &self->p, a, 20 + run);
		check_outputs(_metadata, &self->p, b, 30 + run);
	}
	snpu_rt2_exec_destroy(a);
	snpu_rt2_exec_destroy(b);
}

/*
 * Per-run reset: inputs A, B, A and a run with smaller inputs in between;
 * the last run's outputs are those of the first, bit for bit, in both
 * modes.
 */
static void runs_reset(struct __test_metadata *_metadata,
		       FIXTURE_DATA(rt2) * self, unsigned int flags)
{
	struct snpu_rt2_exec *e = exec_new(_metadata, self, flags);
	uint32_t xd[2] = { 2, K }, bd[2] = { 2, N };
	float first[2][M * N], r[M * N], c[M * N];
	struct snpu_rt2_shape s;
	const float *o;
	unsigned int i;

	ASSERT_NE(NULL, e);
	fill_inputs(_metadata, e, 40);
	ASSERT_EQ(0, snpu_rt2_exec_run(e));
	for (i = 0; i < 2; i++)
		memcpy(first[i], output(_metadata, e, i), sizeof(first[i]));
	fill_inputs(_metadata, e, 41);
	ASSERT_EQ(0, snpu_rt2_exec_run(e));
	check_outputs(_metadata, &self->p, e, 41);

	/* Two rows only: the relu output has this run's shape. */
	fill_inputs(_metadata, e, 42);
	ASSERT_EQ(0, snpu_rt2_exec_input(e, 0, xd, NULL));
	ASSERT_EQ(0, snpu_rt2_exec_input(e, 1, bd, NULL));
	ASSERT_EQ(0, snpu_rt2_exec_run(e));
	ASSERT_EQ(0, snpu_rt2_exec_output(e, 0, (const void **)&o, &s));
	ASSERT_EQ(2U, s.dims[0]);
	ASSERT_EQ(N, s.dims[1]);
	mlp_ref(self->p.wv, 42, r, c);
	ASSERT_EQ(0, memcmp(o, r, 2 * N * sizeof(float)));

	/* Back to the declared shapes and the first inputs. */
	ASSERT_EQ(0, snpu_rt2_exec_input(e, 0, NULL, NULL));
	ASSERT_EQ(0, snpu_rt2_exec_input(e, 1, NULL, NULL));
	fill_inputs(_metadata, e, 40);
	ASSERT_EQ(0, snpu_rt2_exec_run(e));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, memcmp(first[i], output(_metadata, e, i),
				    sizeof(first[i])));
	check_outputs(_metadata, &self->p, e, 40);
	snpu_rt2_exec_destroy(e);
}

TEST_F(rt2, runs_reset_single_thread)
{
	runs_reset(_metadata, self, 0);
}

TEST_F(rt2, runs_reset_three_workers)
{
	runs_reset(_metadata, self, SNPU_RT2_EXEC_THREADS);
}

/*
 * Run 1 succeeds; in run 2 the custom op fails as @how says, and the run
 * returns that error; runs 3 and 4 of the same executor succeed with
 * exact results.
 */
static void error_then_reuse(struct __test_metadata *_metadata,
			     FIXTURE_DATA(rt2) * self, unsigned int flags,
			     enum fail_how how, int err)
{
	struct snpu_rt2_exec *e = exec_new(_metadata, self, flags);
	unsigned int run;

	ASSERT_NE(NULL, e);
	self->p.cu.how = how;
	self->p.cu.fail_call = 2;
	fill_inputs(_metadata, e, 50);
	ASSERT_EQ(0, snpu_rt2_exec_run(e));
	check_outputs(_metadata, &self->p, e, 50);
	fill_inputs(_metadata, e, 51);
	ASSERT_EQ(err, snpu_rt2_exec_run(e));
	ASSERT_EQ(2U, self->p.cu.calls);
	for (run = 52; run < 54; run++) {
		fill_inputs(_metadata, e, run);
		ASSERT_EQ(0, snpu_rt2_exec_run(e));
		check_outputs(_metadata, &self->p, e, run);
	}
	ASSERT_EQ(4U, self->p.cu.calls);
	snpu_rt2_exec_destroy(e);
}

TEST_F(rt2, device_error_single_thread)
{
	error_then_reuse(_metadata, self, 0, FAIL_DQ, -FAIL_ERRNO);
}

TEST_F(rt2, device_error_three_workers)
{
	error_then_reuse(_metadata, self, SNPU_RT2_EXEC_THREADS, FAIL_DQ,
			 -FAIL_ERRNO);
}

TEST_F(rt2, attached_stream_error_single_thread)
{
	error_then_reuse(_metadata, self, 0, FAIL_AUX, -FAIL_ERRNO);
}

TEST_F(rt2, attached_stream_error_three_workers)
{
	error_then_reuse(_metadata, self, SNPU_RT2_EXEC_THREADS, FAIL_AUX,
			 -FAIL_ERRNO);
}

TEST_F(rt2, kernel_error_single_thread)
{
	error_then_reuse(_metadata, self, 0, FAIL_KERNEL, -EPERM);
}

TEST_F(rt2, kernel_error_three_workers)
{
	error_then_reuse(_metadata, self, SNPU_RT2_EXEC_THREADS, FAIL_KERNEL,
			 -EPERM);
}

/*
 * From the dump: the frees of each type, and the edges from a launch to a
 * hold-address free (none may be left).
 */
static void count_frees(struct __test_metadata *_metadata,
			struct snpu_rt2_exec *e, unsigned int *plain,
			unsigned int *hold, unsigned int *launch_to_hold)
{
	static char buf[16384];
	char type[256] = { 0 }, *line, *arrow, *save = NULL;
	unsigned int id, succ;
	char kernel[64], t;

	*plain = *hold = *launch_to_hold = 0;
	ASSERT_GT(snpu_rt2_exec_dump(e, buf, sizeof(buf)), 0);
	ASSERT_LT((size_t)snpu_rt2_exec_dump(e, buf, sizeof(buf)), sizeof(buf));
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%u %63s %c", &id, kernel, &t) != 3)
			continue;
		ASSERT_LT(id, 256U);
		type[id] = t;
		*plain += t == 'F';
		*hold += t == 'H';
	}
	/* Again for the edges, now that every type is known. */
	ASSERT_GT(snpu_rt2_exec_dump(e, buf, sizeof(buf)), 0);
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%u %63s %c", &id, kernel, &t) != 3 ||
		    t != 'L')
			continue;
		arrow = strstr(line, " -> ");
		while (arrow && sscanf(arrow + 1 + (arrow[0] == ' ' ? 3 : 0),
				       "%u", &succ) == 1) {
			ASSERT_LT(succ, 256U);
			*launch_to_hold += type[succ] == 'H';
			arrow = strchr(arrow + 1, ',');
		}
	}
}

/*
 * A pool too small for every block at once (x, 792 B, and the y they
 * make, 240 B): three workers recycle (wait for relation launches, sync
 * the stream, recycle, retry) and give the single thread's results bit
 * for bit, with no Launch->Free edge left for the eligible frees and in
 * less device memory than one thread.
 */
TEST_F(rt2, small_pool_three_workers_equal_single_thread)
{
	struct snpu_rt2_exec *e1 = exec_new(_metadata, self, 0);
	struct snpu_rt2_exec *e3 = exec_new(_metadata, self,
					    SNPU_RT2_EXEC_THREADS);
	const uint64_t limit = 4ULL * (M * K + M * N);
	unsigned int plain, hold, lh, run;
	struct snpu_rt2_pool_stats s1, s3;
	const void *o1, *o3;

	ASSERT_NE(NULL, e1);
	ASSERT_NE(NULL, e3);
	count_frees(_metadata, e1, &plain, &hold, &lh);
	EXPECT_EQ(6U, plain);
	EXPECT_EQ(0U, hold);
	count_frees(_metadata, e3, &plain, &hold, &lh);
	EXPECT_EQ(0U, plain);
	EXPECT_EQ(6U, hold);
	EXPECT_EQ(0U, lh);
	ASSERT_EQ(0, snpu_rt2_exec_set_pool_limit(e3, limit));
	for (run = 0; run < 10; run++) {
		fill_inputs(_metadata, e1, run);
		fill_inputs(_metadata, e3, run);
		ASSERT_EQ(0, snpu_rt2_exec_run(e1));
		ASSERT_EQ(0, snpu_rt2_exec_run(e3));
		check_outputs(_metadata, &self->p, e1, run);
		check_outputs(_metadata, &self->p, e3, run);
		ASSERT_EQ(0, snpu_rt2_exec_output(e1, 1, &o1, NULL));
		ASSERT_EQ(0, snpu_rt2_exec_output(e3, 1, &o3, NULL));
		ASSERT_EQ(0, memcmp(o1, o3, 4 * M * N));
	}
	ASSERT_EQ(0, snpu_rt2_exec_pool_stats(e1, &s1));
	ASSERT_EQ(0, snpu_rt2_exec_pool_stats(e3, &s3));
	EXPECT_EQ(6U, s3.hold_frees);
	EXPECT_GT(s3.relations, 6U);
	EXPECT_EQ(0U, s1.relations);
	EXPECT_GT(s3.recycles, 0U);
	EXPECT_LE(s3.peak_bytes, limit);
	EXPECT_LT(s3.peak_bytes, s1.peak_bytes);
	TH_LOG("device memory: one thread %llu B, three workers %llu B (limit %llu); %llu recycles, %llu waits, %llu blocks given back",
	       (unsigned long long)s1.peak_bytes,
	       (unsigned long long)s3.peak_bytes, (unsigned long long)limit,
	       (unsigned long long)s3.recycles, (unsigned long long)s3.waits,
	       (unsigned long long)s3.dev_frees);
	snpu_rt2_exec_destroy(e1);
	snpu_rt2_exec_destroy(e3);
}

/* ---- reuse of pool blocks, poisoned ------------------------------------- */

/*
 * A custom operator that takes its time on the host (200 us) before it
 * queues its work (c = a + a on the executor's stream): the launch worker
 * lags, so that the memory worker runs ahead of it as far as the
 * relations let it, and a wrong reuse has time to show. No result
 * depends on how long it takes.
 */
static int slow_double(struct snpu_rt2_kctx *ctx,
		       const struct snpu_rt2_kargs *a, void *arg)
{
	struct timespec ts = { 0, 200000 };
	struct snpu_kernel_arg args[3];
	uint64_t bytes = 4ULL * a->out_shape.dims[0] * a->out_shape.dims[1];
	struct snpu_task t;

	nanosleep(&ts, NULL);
	args[0] = snpu_arg_buf(a->out, bytes);
	args[1] = snpu_arg_buf(a->in[0], bytes);
	args[2] = args[1];
	snpu_prep_launch(&t, a->stream, SNPU_KERNEL_ADD_F32, 1, args, 3);
	return snpu_rt2_kctx_submit(ctx, &t, 1);
}

static int slow_op(struct snpu_rt2_model *m, int in)
{
	struct snpu_rt2_op_desc d;

	memset(&d, 0, sizeof(d));
	d.type = SNPU_RT2_OP_CUSTOM;
	d.nin = 1;
	d.in[0] = in;
	d.custom = slow_double;
	d.name = "slow_double";
	d.out_shape = shape2(4, 4);
	return snpu_rt2_model_op(m, &d);
}

/*
 * Ten ops over 4 x 4 values, all of one size, so that any pool block may
 * go to any value: t1 = relu(x), t2 = t1 + b, s1 = slow(t2), t3 = relu(s1),
 * t4 = t3 + x, t5 = t4 + t2, s2 = slow(t5), t6 = relu(s2), t7 = t6 + t3,
 * t8 = t7 + b.
 */
static struct snpu_rt2_model *same_size_model(void)
{
	struct snpu_rt2_shape s = shape2(4, 4);
	struct snpu_rt2_model *m;
	int x, b, t1, t2, t3, t4, t5, t6, t7, t8, s1, s2;

	if (snpu_rt2_model_create(&m))
		return NULL;
	x = snpu_rt2_model_input(m, &s);
	b = snpu_rt2_model_input(m, &s);
	t1 = op2(m, SNPU_RT2_OP_RELU, x, -1);
	t2 = op2(m, SNPU_RT2_OP_ADD, t1, b);
	s1 = slow_op(m, t2);
	t3 = op2(m, SNPU_RT2_OP_RELU, s1, -1);
	t4 = op2(m, SNPU_RT2_OP_ADD, t3, x);
	t5 = op2(m, SNPU_RT2_OP_ADD, t4, t2);
	s2 = slow_op(m, t5);
	t6 = op2(m, SNPU_RT2_OP_RELU, s2, -1);
	t7 = op2(m, SNPU_RT2_OP_ADD, t6, t3);
	t8 = op2(m, SNPU_RT2_OP_ADD, t7, b);
	if (t8 < 0 || snpu_rt2_model_output(m, t8) < 0) {
		snpu_rt2_model_destroy(m);
		return NULL;
	}
	return m;
}

static void same_size_inputs(struct snpu_rt2_exec *e, unsigned int run)
{
	float *x, *b;
	unsigned int i;

	snpu_rt2_exec_input(e, 0, NULL, (void **)&x);
	snpu_rt2_exec_input(e, 1, NULL, (void **)&b);
	for (i = 0; i < 16; i++) {
		x[i] = (float)((int)((i + run) * 5 % 13) - 6) / 3.0f;
		b[i] = (float)((int)((i + 2 * run) % 7) - 3) / 2.0f;
	}
}

/*
 * On the module: three workers with SNPU_RT2_EXEC_POISON (every block the
 * pool hands out again filled with a NaN pattern on the stream first)
 * under every pool limit from one block to none, alone in ID order and
 * with helpers from the start (SNPU_RT2_EXEC_PARALLEL), give one thread's
 * results bit for bit in every run that does not fail with -ENOMEM: no
 * block is reused before every launch of its last owner was submitted (a
 * held block recycled a generation early would show as a NaN).
 */
TEST(poisoned_reuse_under_limits_equals_single_thread)
{
	struct snpu_rt2_exec_opts o1 = { 0 };
	struct snpu_rt2_exec_opts o3 = {
		.flags = SNPU_RT2_EXEC_THREADS | SNPU_RT2_EXEC_POISON };
	struct snpu_rt2_pool_stats st;
	struct snpu_rt2_exec *e1, *e3;
	struct snpu_rt2_model *m;
	struct snpu_device *dev;
	struct snpu_rt2_dev *rd;
	const void *out1, *out3;
	unsigned int run, ok = 0, k;
	uint64_t limit, recycles = 0;
	int ret;

	ASSERT_EQ(0, snpu_open(0, 0, &dev));
	ASSERT_EQ(0, snpu_rt2_dev_open(dev, 0, &rd));
	m = same_size_model();
	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, snpu_rt2_exec_create(m, rd, &o1, &e1));
	for (k = 0; k < 2 * 12; k++) {
		limit = 64 * (k % 12 + 1);
		o3.flags = SNPU_RT2_EXEC_THREADS | SNPU_RT2_EXEC_POISON |
			   (k < 12 ? 0 : SNPU_RT2_EXEC_PARALLEL);
		ASSERT_EQ(0, snpu_rt2_exec_create(m, rd, &o3, &e3));
		ASSERT_EQ(0, snpu_rt2_exec_set_pool_limit(e3,
				limit < 12 * 64 ? limit : 0));
		for (run = 0; run < (k < 12 ? 4U : 16U); run++) {
			same_size_inputs(e1, run);
			same_size_inputs(e3, run);
			ASSERT_EQ(0, snpu_rt2_exec_run(e1));
			ret = snpu_rt2_exec_run(e3);
			ASSERT_TRUE(ret == 0 || ret == -ENOMEM);
			if (ret)
				continue;
			ok++;
			ASSERT_EQ(0, snpu_rt2_exec_output(e1, 0, &out1, NULL));
			ASSERT_EQ(0, snpu_rt2_exec_output(e3, 0, &out3, NULL));
			ASSERT_EQ(0, memcmp(out1, out3, 16 * sizeof(float))) {
				TH_LOG("limit %llu, run %u",
				       (unsigned long long)limit, run);
			}
		}
		ASSERT_EQ(0, snpu_rt2_exec_pool_stats(e3, &st));
		recycles += st.recycles;
		snpu_rt2_exec_destroy(e3);
	}
	TH_LOG("%u exact runs, %llu recycles", ok,
	       (unsigned long long)recycles);
	EXPECT_GT(ok, 0U);
	EXPECT_GT(recycles, 0U);
	snpu_rt2_exec_destroy(e1);
	snpu_rt2_model_destroy(m);
	snpu_rt2_dev_close(rd);
	snpu_close(dev);
}

/* ---- the device time of each task -------------------------------------- */

/*
 * Tasks a core runs back to back (short copies on one stream, submitted
 * at once: the driver chains them) complete each with its own time: the
 * CQEs' times strictly increase. (With one time for the whole chain, an
 * executor's statistics gave a chain's time to its first task, and its
 * D2H copies none.)
 */
TEST(chained_tasks_complete_with_their_own_times)
{
	struct snpu_host_buf hb;
	struct snpu_device *dev;
	struct snpu_ring ring;
	struct snpu_cqe *cqe;
	uint64_t mem, last = 0, times[8];
	unsigned int i, n = 0, increases = 0;
	uint32_t s;

	ASSERT_EQ(0, snpu_open(0, 0, &dev));
	ASSERT_EQ(0, snpu_mem_alloc(dev, 4096, 64, 0, &mem));
	ASSERT_EQ(0, snpu_host_alloc(dev, 8 * 4096, &hb));
	ASSERT_EQ(0, snpu_stream_create(dev, SNPU_PRIO_NORMAL, 0, &s));
	ASSERT_EQ(0, snpu_ring_init(dev, 64, 0, &ring));
	for (i = 0; i < 8; i++) {
		struct snpu_task *t = snpu_ring_get_sqe(&ring);

		ASSERT_NE(NULL, t);
		snpu_prep_copy(t, s, SNPU_COPY_D2H,
			       (uintptr_t)hb.ptr + 4096ULL * i, mem, 4096);
		t->user_data = i;
	}
	ASSERT_LE(0, snpu_ring_submit(&ring));
	while (n < 8) {
		ASSERT_EQ(0, snpu_ring_wait_cqe(&ring, &cqe));
		ASSERT_EQ(0, cqe->result);
		ASSERT_EQ(n, cqe->user_data);
		times[n++] = cqe->time_ns;
		snpu_ring_cqe_seen(&ring, cqe);
	}
	for (i = 0; i < 8; i++) {
		EXPECT_GE(times[i], last);
		increases += times[i] > last;
		last = times[i];
	}
	/* Each copy of 4 KiB takes time: every completion is later. */
	EXPECT_EQ(8U, increases);
	snpu_ring_exit(&ring);
	snpu_stream_destroy(dev, s, 0);
	snpu_host_free(dev, &hb);
	snpu_mem_free(dev, mem);
	snpu_close(dev);
}

/*
 * An executor's time split: relu(x) with x fed and the result read back,
 * through the ring, each run three short tasks in order. Copies and
 * compute each get device time of their own, the D2H copy's included,
 * and the three together fit in the runs' wall time.
 */
TEST(time_split_gives_each_class_its_time)
{
	struct snpu_rt2_shape sx = shape2(4, 4);
	struct snpu_rt2_exec_opts o = { .flags = SNPU_RT2_EXEC_THREADS };
	struct snpu_rt2_exec_stats st;
	struct snpu_rt2_model *m;
	struct snpu_rt2_exec *e;
	struct snpu_device *dev;
	struct snpu_rt2_dev *rd;
	struct timespec t0, t1;
	unsigned int run, i;
	uint64_t wall;
	float *x;
	int y;

	ASSERT_EQ(0, snpu_open(0, 0, &dev));
	ASSERT_EQ(0, snpu_rt2_dev_open(dev, 0, &rd));
	ASSERT_EQ(0, snpu_rt2_model_create(&m));
	ASSERT_EQ(0, snpu_rt2_model_input(m, &sx));
	y = op2(m, SNPU_RT2_OP_RELU, 0, -1);
	ASSERT_GT(y, 0);
	ASSERT_EQ(0, snpu_rt2_model_output(m, y));
	ASSERT_EQ(0, snpu_rt2_exec_create(m, rd, &o, &e));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (run = 0; run < 20; run++) {
		ASSERT_EQ(0, snpu_rt2_exec_input(e, 0, NULL, (void **)&x));
		for (i = 0; i < 16; i++)
			x[i] = (float)i - 8.0f;
		ASSERT_EQ(0, snpu_rt2_exec_run(e));
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	wall = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ULL +
	       (uint64_t)t1.tv_nsec - (uint64_t)t0.tv_nsec;
	ASSERT_EQ(0, snpu_rt2_exec_stats(e, &st));
	TH_LOG("20 runs: h2d %llu ns, compute %llu ns, d2h %llu ns, wall %llu ns",
	       (unsigned long long)st.h2d_ns,
	       (unsigned long long)st.compute_ns,
	       (unsigned long long)st.d2h_ns, (unsigned long long)wall);
	EXPECT_GT(st.h2d_ns, 0U);
	EXPECT_GT(st.compute_ns, 0U);
	EXPECT_GT(st.d2h_ns, 0U);
	EXPECT_LE(st.h2d_ns + st.compute_ns + st.d2h_ns, wall);
	snpu_rt2_exec_destroy(e);
	snpu_rt2_model_destroy(m);
	snpu_rt2_dev_close(rd);
	snpu_close(dev);
}

TEST_HARNESS_MAIN
