// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit tests of rt2's executor (lib/rt2/exec.c) on the host-only
 * device interface (lib/tests/rt2/hostdev.c), which runs the built-in
 * kernels with kmod/core's code: results against a plain C reference in
 * single-thread and three-worker mode, worker placement and launch order
 * seen through the trace hook, the first-error stop and the executor's
 * reuse after it, and no heap allocation after the first run (counted
 * with the sanitizer allocator's malloc hook, which sees every malloc,
 * calloc and realloc of the process). Built under ASan/UBSan.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snpu_rt2.h"
#include "../rt2/rt2.h"
#include "rt2/hostdev.h"
#include "rt2/models.h"

#include "alloc_count.h"

#include "kselftest_harness.h"

/* ---- the model: relu(x * w + b), with a custom op and two outputs ------ */

#define M	5U
#define K	7U
#define N	3U

struct mlp {
	struct snpu_rt2_model *m;
	int x, w, b, y, z, r, c;
	float wv[K * N];
	unsigned int custom_calls;
	uint32_t custom_stream;
};

/*
 * A custom op on an attached stream: c = r + r with ADD_F32, queued on the
 * attached stream "aux" after a fork of the executor's stream into it,
 * then joined back.
 */
static int double_op(struct snpu_rt2_kctx *ctx,
		     const struct snpu_rt2_kargs *a, void *arg)
{
	struct mlp *p = arg;
	struct snpu_kernel_arg args[3];
	struct snpu_task t;
	uint32_t s;
	int ret;

	ret = snpu_rt2_kctx_attached_stream(ctx, "aux", &s);
	if (ret)
		return ret;
	p->custom_calls++;
	p->custom_stream = s;
	ret = snpu_rt2_kctx_fork(ctx, s);
	if (ret)
		return ret;
	args[0] = snpu_arg_buf(a->out, 4ULL * a->out_shape.dims[0] *
			       a->out_shape.dims[1]);
	args[1] = snpu_arg_buf(a->in[0], args[0].bytes);
	args[2] = args[1];
	if (args[0].bytes) {
		snpu_prep_launch(&t, s, SNPU_KERNEL_ADD_F32, 1, args, 3);
		ret = snpu_rt2_kctx_submit(ctx, &t, 1);
		if (ret)
			return ret;
	}
	return snpu_rt2_kctx_join(ctx, s);
}

static void mlp_build(struct __test_metadata *_metadata, struct mlp *p)
{
	struct snpu_rt2_shape sx = shape2(SNPU_RT2_F32, M, K);
	struct snpu_rt2_shape sw = shape2(SNPU_RT2_F32, K, N);
	struct snpu_rt2_shape sb = shape2(SNPU_RT2_F32, M, N);
	struct snpu_rt2_op_desc d;
	unsigned int i;

	for (i = 0; i < K * N; i++)
		p->wv[i] = (float)((int)(i * 7 % 11) - 5) / 4.0f;
	ASSERT_EQ(0, snpu_rt2_model_create(&p->m));
	p->x = snpu_rt2_model_input(p->m, &sx);
	p->w = snpu_rt2_model_param(p->m, &sw, p->wv);
	p->b = snpu_rt2_model_input(p->m, &sb);
	ASSERT_EQ(0, p->x);
	ASSERT_EQ(1, p->w);
	ASSERT_EQ(2, p->b);
	p->y = op2(p->m, SNPU_RT2_OP_MATMUL, p->x, p->w);
	p->z = op2(p->m, SNPU_RT2_OP_ADD, p->y, p->b);
	p->r = op2(p->m, SNPU_RT2_OP_RELU, p->z, -1);
	ASSERT_GT(p->r, 0);
	memset(&d, 0, sizeof(d));
	d.type = SNPU_RT2_OP_CUSTOM;
	d.nin = 1;
	d.in[0] = p->r;
	d.custom = double_op;
	d.custom_arg = p;
	d.name = "double";
	d.out_shape = sb;
	p->c = snpu_rt2_model_op(p->m, &d);
	ASSERT_GT(p->c, 0);
	ASSERT_EQ(0, snpu_rt2_model_output(p->m, p->r));
	ASSERT_EQ(1, snpu_rt2_model_output(p->m, p->c));
}

static void fill_inputs(struct __test_metadata *_metadata,
			struct snpu_rt2_exec *e, unsigned int run)
{
	float *x, *b;
	unsigned int i;

	ASSERT_EQ(0, snpu_rt2_exec_input(e, 0, NULL, (void **)&x));
	ASSERT_EQ(0, snpu_rt2_exec_input(e, 1, NULL, (void **)&b));
	for (i = 0; i < M * K; i++)
		x[i] = (float)((int)((i + run) * 5 % 13) - 6) / 3.0f;
	for (i = 0; i < M * N; i++)
		b[i] = (float)((int)((i + 2 * run) % 5) - 2) / 2.0f;
}

/* The reference of relu(x * w + b) and its double, from the same inputs. */
static void mlp_ref(const struct mlp *p, struct snpu_rt2_exec *e,
		    float *r, float *c)
{
	float *x, *b, y[M * N];
	unsigned int i;

	snpu_rt2_exec_input(e, 0, NULL, (void **)&x);
	snpu_rt2_exec_input(e, 1, NULL, (void **)&b);
	ref_matmul(y, x, p->wv, M, N, K);
	for (i = 0; i < M * N; i++) {
		float z = y[i] + b[i];

		r[i] = z > 0.0f ? z : 0.0f;
		c[i] = r[i] + r[i];
	}
}

static void check_outputs(struct __test_metadata *_metadata,
			  const struct mlp *p, struct snpu_rt2_exec *e)
{
	float r[M * N], c[M * N];
	struct snpu_rt2_shape s;
	const void *out;

	mlp_ref(p, e, r, c);
	ASSERT_EQ(0, snpu_rt2_exec_output(e, 0, &out, &s));
	ASSERT_EQ(2U, s.ndim);
	ASSERT_EQ(M, s.dims[0]);
	ASSERT_EQ(N, s.dims[1]);
	ASSERT_EQ(0, memcmp(out, r, sizeof(r)));
	ASSERT_EQ(0, snpu_rt2_exec_output(e, 1, &out, &s));
	ASSERT_EQ(0, memcmp(out, c, sizeof(c)));
}

FIXTURE(exec) {
	struct hostdev *h;
	struct mlp p;
};

FIXTURE_SETUP(exec)
{
	ASSERT_EQ(0, hostdev_open(&self->h));
	mlp_build(_metadata, &self->p);
}

FIXTURE_TEARDOWN(exec)
{
	snpu_rt2_model_destroy(self->p.m);
	hostdev_close(self->h);
}

static void run_mode(struct __test_metadata *_metadata,
		     FIXTURE_DATA(exec) * self, unsigned int flags)
{
	struct snpu_rt2_exec_opts o = { .flags = flags };
	struct snpu_rt2_exec *e;
	unsigned int run;

	ASSERT_EQ(0, snpu_rt2_exec_create(self->p.m, &self->h->head, &o, &e));
	for (run = 0; run < 4; run++) {
		fill_inputs(_metadata, e, run);
		ASSERT_EQ(0, snpu_rt2_exec_run(e));
		check_outputs(_metadata, &self->p, e);
	}
	EXPECT_EQ(4U, self->p.custom_calls);
	EXPECT_EQ(100U, self->p.custom_stream);
	snpu_rt2_exec_destroy(e);
	EXPECT_EQ(self->h->mem_allocs, self->h->mem_frees);
	EXPECT_EQ(self->h->host_allocs, self->h->host_frees);
}

TEST_F(exec, single_thread_matches_reference)
{
	run_mode(_metadata, self, 0);
}

TEST_F(exec, three_workers_match_reference)
{
	run_mode(_metadata, self, SNPU_RT2_EXEC_THREADS);
}

TEST_F(exec, dyn_multi_stream_matches_reference)
{
	run_mode(_metadata, self, SNPU_RT2_EXEC_THREADS |
		 SNPU_RT2_EXEC_DYN_MULTI_STREAM);
}

/* Helpers from the start of every run (SNPU_RT2_EXEC_PARALLEL). */
TEST_F(exec, three_workers_parallel_match_reference)
{
	run_mode(_metadata, self, SNPU_RT2_EXEC_THREADS |
		 SNPU_RT2_EXEC_PARALLEL);
}

/* An unknown flag, and eager helpers without workers, are refused. */
TEST_F(exec, create_refuses_bad_flags)
{
	struct snpu_rt2_exec_opts o = { .flags = 1U << 31 };
	struct snpu_rt2_exec *e = NULL;

	EXPECT_EQ(-EINVAL, snpu_rt2_exec_create(self->p.m, &self->h->head,
						&o, &e));
	o.flags = SNPU_RT2_EXEC_PARALLEL;
	EXPECT_EQ(-EINVAL, snpu_rt2_exec_create(self->p.m, &self->h->head,
						&o, &e));
	EXPECT_EQ(NULL, e);
	o.flags = SNPU_RT2_EXEC_PARALLEL | SNPU_RT2_EXEC_THREADS;
	ASSERT_EQ(0, snpu_rt2_exec_create(self->p.m, &self->h->head, &o, &e));
	EXPECT_EQ(RT2_HAND_EAGER, e->hand.policy);
	snpu_rt2_exec_destroy(e);
}

/* Two executors from one model, both modes, interleaved runs. */
TEST_F(exec, two_executors_from_one_model)
{
	struct snpu_rt2_exec_opts mt = { .flags = SNPU_RT2_EXEC_THREADS };
	struct snpu_rt2_exec *a, *b;
	const void *oa, *ob;
	unsigned int run;

	ASSERT_EQ(0, snpu_rt2_exec_create(self->p.m, &self->h->head, NULL,
					  &a));
	ASSERT_EQ(0, snpu_rt2_exec_create(self->p.m, &self->h->head, &mt,
					  &b));
	for (run = 0; run < 3; run++) {
		fill_inputs(_metadata, a, run);
		fill_inputs(_metadata, b, run);
		ASSERT_EQ(0, snpu_rt2_exec_run(a));
		ASSERT_EQ(0, snpu_rt2_exec_run(b));
		check_outputs(_metadata, &self->p, a);
		check_outputs(_metadata, &self->p, b);
		ASSERT_EQ(0, snpu_rt2_exec_output(a, 1, &oa, NULL));
		ASSERT_EQ(0, snpu_rt2_exec_output(b, 1, &ob, NULL));
		ASSERT_EQ(0, memcmp(oa, ob, M * N * sizeof(float)));
	}
	snpu_rt2_exec_destroy(a);
	snpu_rt2_exec_destroy(b);
}

/*
 * A custom op whose device work fails on every third run: a FAIL launch
 * on the executor's stream.
 */
static int device_fail_op(struct snpu_rt2_kctx *ctx,
			  const struct snpu_rt2_kargs *a, void *arg)
{
	unsigned int *calls = arg;
	struct snpu_kernel_arg k = snpu_arg_u64(EIO);
	struct snpu_task t;

	if (++*calls % 3)
		return 0;
	snpu_prep_launch(&t, a->stream, SNPU_KERNEL_FAIL, 1, &k, 1);
	return snpu_rt2_kctx_submit(ctx, &t, 1);
}

struct runner {
	struct snpu_rt2_exec *e;
	unsigned int runs, errors, other;
};

static void *run_many(void *arg)
{
	struct runner *r = arg;
	unsigned int i;
	int ret;

	for (i = 0; i < r->runs; i++) {
		ret = snpu_rt2_exec_run(r->e);
		if (ret == -EIO)
			r->errors++;
		else if (ret)
			r->other++;
	}
	return NULL;
}

/*
 * Two executors on one device interface, run at the same time from two
 * threads: each gets its own stream and only its own device errors.
 */
TEST_F(exec, executors_share_a_device_interface)
{
	struct snpu_rt2_exec_opts mt = { .flags = SNPU_RT2_EXEC_THREADS };
	struct snpu_rt2_shape s = shape2(SNPU_RT2_F32, 4, 4);
	struct runner ra = { .runs = 60 }, rb = { .runs = 60 };
	struct snpu_rt2_model *m;
	struct snpu_rt2_op_desc d;
	unsigned int calls = 0;
	pthread_t ta, tb;

	ASSERT_EQ(0, snpu_rt2_model_create(&m));
	memset(&d, 0, sizeof(d));
	d.type = SNPU_RT2_OP_CUSTOM;
	d.nin = 1;
	d.in[0] = snpu_rt2_model_input(m, &s);
	d.custom = device_fail_op;
	d.custom_arg = &calls;
	d.out_shape = s;
	ASSERT_EQ(0, snpu_rt2_model_output(m, snpu_rt2_model_op(m, &d)));
	ASSERT_EQ(0, snpu_rt2_exec_create(self->p.m, &self->h->head, &mt,
					  &ra.e));
	ASSERT_EQ(0, snpu_rt2_exec_create(m, &self->h->head, NULL, &rb.e));
	ASSERT_NE(ra.e->dq.stream, rb.e->dq.stream);
	fill_inputs(_metadata, ra.e, 3);
	ASSERT_EQ(0, pthread_create(&ta, NULL, run_many, &ra));
	ASSERT_EQ(0, pthread_create(&tb, NULL, run_many, &rb));
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	EXPECT_EQ(0U, ra.errors);
	EXPECT_EQ(0U, ra.other);
	EXPECT_EQ(20U, rb.errors);
	EXPECT_EQ(0U, rb.other);
	check_outputs(_metadata, &self->p, ra.e);
	snpu_rt2_exec_destroy(ra.e);
	snpu_rt2_exec_destroy(rb.e);
	EXPECT_EQ(0U, self->h->queues);
	snpu_rt2_model_destroy(m);
}

/* ---- trace: placement and order ---------------------------------------- */

#define TRACE_MAX	256

struct trace {
	pthread_mutex_t lock;
	unsigned int n;
	struct snpu_rt2_trace t[TRACE_MAX];
};

static void trace_fn(void *arg, const struct snpu_rt2_trace *t)
{
	struct trace *tr = arg;

	pthread_mutex_lock(&tr->lock);
	if (tr->n < TRACE_MAX)
		tr->t[tr->n++] = *t;
	pthread_mutex_unlock(&tr->lock);
}

static unsigned int kid_of(const char *name)
{
	unsigned int k;

	for (k = 0; k < RT2_K_COUNT; k++)
		if (!strcmp(rt2_kernels[k].name, name))
			return k;
	return RT2_K_COUNT;
}

/* Every kernel runs on its class's worker, BuildTensor on the normal one. */
TEST_F(exec, workers_by_class)
{
	struct snpu_rt2_exec_opts o = { .flags = SNPU_RT2_EXEC_THREADS };
	static struct trace tr = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct snpu_rt2_exec *e;
	unsigned int i, k, want, seen[RT2_WORKERS] = { 0 };

	o.trace = trace_fn;
	o.trace_arg = &tr;
	tr.n = 0;
	ASSERT_EQ(0, snpu_rt2_exec_create(self->p.m, &self->h->head, &o, &e));
	fill_inputs(_metadata, e, 0);
	ASSERT_EQ(0, snpu_rt2_exec_run(e));
	ASSERT_EQ(e->g.nnodes, tr.n);
	for (i = 0; i < tr.n; i++) {
		k = kid_of(tr.t[i].kernel);
		ASSERT_LT(k, (unsigned int)RT2_K_COUNT);
		ASSERT_EQ(0, tr.t[i].ret);
		seen[tr.t[i].worker]++;
		if (k == RT2_K_BUILD_TENSOR)
			want = RT2_W_NORMAL;
		else if (rt2_kernels[k].cls == RT2_CLASS_MEMORY)
			want = RT2_W_MEMORY;
		else if (rt2_kernels[k].cls == RT2_CLASS_LAUNCH)
			want = RT2_W_LAUNCH;
		else
			want = RT2_W_NORMAL;
		ASSERT_EQ(want, tr.t[i].worker);
	}
	for (i = 0; i < RT2_WORKERS; i++)
		EXPECT_GT(seen[i], 0U);
	snpu_rt2_exec_destroy(e);
}

/* Single-thread mode: worker 0, node IDs in order, launches by priority. */
TEST_F(exec, single_thread_runs_in_id_order)
{
	struct snpu_rt2_exec_opts o = { .trace = trace_fn };
	static struct trace tr = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct snpu_rt2_exec *e;
	unsigned int i;
	int32_t last = -1;

	o.trace_arg = &tr;
	tr.n = 0;
	ASSERT_EQ(0, snpu_rt2_exec_create(self->p.m, &self->h->head, &o, &e));
	fill_inputs(_metadata, e, 0);
	ASSERT_EQ(0, snpu_rt2_exec_run(e));
	ASSERT_EQ(e->g.nnodes, tr.n);
	for (i = 0; i < tr.n; i++) {
		ASSERT_EQ(i, tr.t[i].node);
		ASSERT_EQ(0U, tr.t[i].worker);
		ASSERT_EQ(e->g.nodes[i].op, tr.t[i].op);
		/* The custom op (op 3) is named; the others are not. */
		if (tr.t[i].op == 3)
			ASSERT_STREQ("double", tr.t[i].name);
		if (tr.t[i].op != 3)
			ASSERT_EQ(NULL, tr.t[i].name);
		/* Launches by priority here too. */
		if (rt2_kernel_is_launch(e->g.nodes[i].kernel)) {
			ASSERT_GE(e->g.nodes[i].prio, last);
			last = e->g.nodes[i].prio;
		}
	}
	snpu_rt2_exec_destroy(e);
}

/*
 * Launches run in priority order: by compute-node index, the internal H2D
 * launches with their consumer's index before it, whatever order the
 * other workers make them ready in. Over many runs.
 */
TEST_F(exec, launches_in_priority_order)
{
	struct snpu_rt2_exec_opts o = { .flags = SNPU_RT2_EXEC_THREADS };
	static struct trace tr = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct snpu_rt2_exec *e;
	unsigned int i, run, nl;
	int32_t last;

	o.trace = trace_fn;
	o.trace_arg = &tr;
	ASSERT_EQ(0, snpu_rt2_exec_create(self->p.m, &self->h->head, &o, &e));
	for (run = 0; run < 50; run++) {
		tr.n = 0;
		fill_inputs(_metadata, e, run);
		ASSERT_EQ(0, snpu_rt2_exec_run(e));
		last = -1;
		nl = 0;
		for (i = 0; i < tr.n; i++) {
			const struct rt2_node *n = &e->g.nodes[tr.t[i].node];

			if (tr.t[i].worker != RT2_W_LAUNCH)
				continue;
			ASSERT_EQ(e->g.launch_order[nl], n->id);
			ASSERT_GE(n->prio, last);
			last = n->prio;
			nl++;
		}
		ASSERT_EQ(e->g.nlaunch, nl);
	}
	snpu_rt2_exec_destroy(e);
}

/* ---- errors ---------------------------------------------------------- */

static void error_and_reuse(struct __test_metadata *_metadata,
			    FIXTURE_DATA(exec) * self, unsigned int flags)
{
	struct snpu_rt2_exec_opts o = { .flags = flags };
	struct snpu_rt2_exec *e;
	unsigned long before;

	ASSERT_EQ(0, snpu_rt2_exec_create(self->p.m, &self->h->head, &o, &e));
	fill_inputs(_metadata, e, 0);
	ASSERT_EQ(0, snpu_rt2_exec_run(e));
	/* A device error: the third task of the next run fails. */
	self->h->fail_at = self->h->tasks + 3;
	self->h->fail_err = -EIO;
	ASSERT_EQ(-EIO, snpu_rt2_exec_run(e));
	self->h->fail_at = 0;
	/* The executor is usable again, and the pool did not grow. */
	before = self->h->mem_allocs;
	fill_inputs(_metadata, e, 1);
	ASSERT_EQ(0, snpu_rt2_exec_run(e));
	check_outputs(_metadata, &self->p, e);
	EXPECT_EQ(before, self->h->mem_allocs);
	snpu_rt2_exec_destroy(e);
	EXPECT_EQ(self->h->mem_allocs, self->h->mem_frees);
}

TEST_F(exec, device_error_single_thread)
{
	error_and_reuse(_metadata, self, 0);
}

TEST_F(exec, device_error_three_workers)
{
	error_and_reuse(_metadata, self, SNPU_RT2_EXEC_THREADS);
}

/*
 * x + x on the attached stream "aux"; on its second call a FAIL launch
 * first, after the fork: the attached stream fails, like the driver's,
 * and refuses the tasks after it until recovered.
 */
static int aux_fail_op(struct snpu_rt2_kctx *ctx,
		       const struct snpu_rt2_kargs *a, void *arg)
{
	unsigned int *calls = arg;
	struct snpu_kernel_arg k[3];
	struct snpu_task t;
	uint32_t s;
	int ret;

	ret = snpu_rt2_kctx_attached_stream(ctx, "aux", &s);
	if (!ret)
		ret = snpu_rt2_kctx_fork(ctx, s);
	if (ret)
		return ret;
	if (++*calls == 2) {
		k[0] = snpu_arg_u64(EL3HLT);
		snpu_prep_launch(&t, s, SNPU_KERNEL_FAIL, 1, k, 1);
		ret = snpu_rt2_kctx_submit(ctx, &t, 1);
		if (ret)
			return ret;
	}
	k[0] = snpu_arg_buf(a->out, 64);
	k[1] = snpu_arg_buf(a->in[0], 64);
	k[2] = k[1];
	snpu_prep_launch(&t, s, SNPU_KERNEL_ADD_F32, 1, k, 3);
	ret = snpu_rt2_kctx_submit(ctx, &t, 1);
	return ret ? ret : snpu_rt2_kctx_join(ctx, s);
}

/*
 * A device error on an attached stream stops the run with that error; the
 * streams it left failed are recovered, so the next runs succeed with
 * exact results and no stream stays in its error state.
 */
static void attached_error(struct __test_metadata *_metadata,
			   unsigned int flags)
{
	struct snpu_rt2_shape s = shape2(SNPU_RT2_F32, 4, 4);
	struct snpu_rt2_exec_opts o = { .flags = flags };
	struct snpu_rt2_model *m;
	struct snpu_rt2_op_desc d;
	struct snpu_rt2_exec *e;
	struct hostdev *h;
	unsigned int calls = 0, run, i;
	const float *out;
	float *x;
	int y;

	ASSERT_EQ(0, hostdev_open(&h));
	ASSERT_EQ(0, snpu_rt2_model_create(&m));
	memset(&d, 0, sizeof(d));
	d.type = SNPU_RT2_OP_CUSTOM;
	d.nin = 1;
	d.in[0] = snpu_rt2_model_input(m, &s);
	d.custom = aux_fail_op;
	d.custom_arg = &calls;
	d.out_shape = s;
	y = snpu_rt2_model_op(m, &d);
	ASSERT_EQ(0, snpu_rt2_model_output(m, op2(m, SNPU_RT2_OP_RELU, y, -1)));
	ASSERT_EQ(0, snpu_rt2_exec_create(m, &h->head, &o, &e));
	for (run = 0; run < 4; run++) {
		ASSERT_EQ(0, snpu_rt2_exec_input(e, 0, NULL, (void **)&x));
		for (i = 0; i < 16; i++)
			x[i] = (float)((int)(i + run) % 7 - 3) / 4.0f;
		if (run == 1) {
			ASSERT_EQ(-EL3HLT, snpu_rt2_exec_run(e));
			continue;
		}
		ASSERT_EQ(0, snpu_rt2_exec_run(e));
		ASSERT_EQ(0, snpu_rt2_exec_output(e, 0, (const void **)&out,
						  NULL));
		for (i = 0; i < 16; i++)
			ASSERT_EQ(x[i] > 0 ? x[i] + x[i] : 0.0f, out[i]);
	}
	ASSERT_EQ(4U, calls);
	for (i = 0; i < HDEV_STREAMS; i++)
		ASSERT_EQ(0, h->serr[i]);
	snpu_rt2_exec_destroy(e);
	snpu_rt2_model_destroy(m);
	hostdev_close(h);
}

TEST(attached_stream_error_single_thread)
{
	attached_error(_metadata, 0);
}

TEST(attached_stream_error_three_workers)
{
	attached_error(_metadata, SNPU_RT2_EXEC_THREADS);
}

static int fail_op(struct snpu_rt2_kctx *ctx,
		   const struct snpu_rt2_kargs *a, void *arg)
{
	int *calls = arg;

	return ++*calls == 2 ? -ENOTRECOVERABLE : 0;
}

/*
 * A kernel error stops the run with that error: the nodes after it do not
 * run (every worker was woken and left), nothing leaks, and the next run
 * succeeds.
 */
static void kernel_error(struct __test_metadata *_metadata, unsigned int flags)
{
	struct snpu_rt2_shape s = shape2(SNPU_RT2_F32, 4, 4);
	struct snpu_rt2_exec_opts o = { .flags = flags };
	static struct trace tr = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct snpu_rt2_model *m;
	struct snpu_rt2_op_desc d;
	struct snpu_rt2_exec *e;
	struct hostdev *h;
	int x, y, calls = 0;
	unsigned int i, failed = 0;

	o.trace = trace_fn;
	o.trace_arg = &tr;
	ASSERT_EQ(0, hostdev_open(&h));
	ASSERT_EQ(0, snpu_rt2_model_create(&m));
	x = snpu_rt2_model_input(m, &s);
	memset(&d, 0, sizeof(d));
	d.type = SNPU_RT2_OP_CUSTOM;
	d.nin = 1;
	d.in[0] = x;
	d.custom = fail_op;
	d.custom_arg = &calls;
	d.out_shape = s;
	y = snpu_rt2_model_op(m, &d);
	y = op2(m, SNPU_RT2_OP_RELU, y, -1);
	ASSERT_EQ(0, snpu_rt2_model_output(m, y));
	ASSERT_EQ(0, snpu_rt2_exec_create(m, &h->head, &o, &e));
	ASSERT_EQ(0, snpu_rt2_exec_run(e));
	tr.n = 0;
	ASSERT_EQ(-ENOTRECOVERABLE, snpu_rt2_exec_run(e));
	for (i = 0; i < tr.n; i++) {
		/* An allocation waiting for a relation launch is cancelled. */
		if (tr.t[i].ret && tr.t[i].ret != -ECANCELED)
			failed++;
		/* Nothing runs after the failing launch on its worker. */
		if (failed && tr.t[i].worker == RT2_W_LAUNCH)
			ASSERT_EQ(kid_of("LaunchCustomOp"),
				  kid_of(tr.t[i].kernel));
	}
	ASSERT_EQ(1U, failed);
	ASSERT_LT(tr.n, e->g.nnodes);
	ASSERT_EQ(0, snpu_rt2_exec_run(e));
	ASSERT_EQ(3, calls);
	snpu_rt2_exec_destroy(e);
	EXPECT_EQ(h->mem_allocs, h->mem_frees);
	snpu_rt2_model_destroy(m);
	hostdev_close(h);
}

TEST(kernel_error_single_thread)
{
	kernel_error(_metadata, 0);
}

TEST(kernel_error_three_workers)
{
	kernel_error(_metadata, SNPU_RT2_EXEC_THREADS);
}

/* ---- allocation --------------------------------------------------------- */

/*
 * Wait until every helper thread sleeps on its word: only then has it
 * started (ASan allocates in a new thread's start, after pthread_create()
 * returned), so nothing it allocates falls in a counted window.
 */
static void helpers_parked(struct snpu_rt2_exec *e)
{
	unsigned int i;

	for (i = 0; i < e->nthr; i++)
		while (__atomic_load_n(&e->thr[i].word, __ATOMIC_ACQUIRE) !=
		       RT2_T_PARKED)
			usleep(1000);
}

static void no_alloc(struct __test_metadata *_metadata,
		     FIXTURE_DATA(exec) * self, unsigned int flags)
{
	struct snpu_rt2_exec_opts o = { .flags = flags };
	struct snpu_rt2_exec *e;
	unsigned long before, dev_before;
	unsigned int run;

	if (!alloc_counter_on())
		SKIP(return, "no sanitizer allocator to count with");
	ASSERT_EQ(0, snpu_rt2_exec_create(self->p.m, &self->h->head, &o, &e));
	fill_inputs(_metadata, e, 0);
	ASSERT_EQ(0, snpu_rt2_exec_run(e));
	helpers_parked(e);
	before = atomic_load(&allocs);
	dev_before = self->h->mem_allocs;
	for (run = 1; run < 20; run++) {
		fill_inputs(_metadata, e, run);
		ASSERT_EQ(0, snpu_rt2_exec_run(e));
	}
	EXPECT_EQ(before, atomic_load(&allocs));
	EXPECT_EQ(dev_before, self->h->mem_allocs);
	EXPECT_LE(e->pool.nblk, e->nvals);
	check_outputs(_metadata, &self->p, e);
	snpu_rt2_exec_destroy(e);
}

TEST_F(exec, no_alloc_after_first_run_single_thread)
{
	no_alloc(_metadata, self, 0);
}

TEST_F(exec, no_alloc_after_first_run_three_workers)
{
	no_alloc(_metadata, self, SNPU_RT2_EXEC_THREADS);
}

/* An empty input (a zero dimension): no copy, empty results, no error. */
TEST_F(exec, empty_input_copies_nothing)
{
	struct snpu_rt2_exec_opts o = { .flags = SNPU_RT2_EXEC_THREADS };
	uint32_t dims[2] = { 0, K }, bdims[2] = { 0, N };
	struct snpu_rt2_shape s;
	struct snpu_rt2_exec *e;
	unsigned long tasks;
	unsigned int i, first;

	ASSERT_EQ(0, snpu_rt2_exec_create(self->p.m, &self->h->head, &o, &e));
	ASSERT_EQ(0, snpu_rt2_exec_input(e, 0, dims, NULL));
	ASSERT_EQ(0, snpu_rt2_exec_input(e, 1, bdims, NULL));
	tasks = self->h->tasks;
	first = self->h->nlog;
	ASSERT_EQ(0, snpu_rt2_exec_run(e));
	ASSERT_EQ(0, snpu_rt2_exec_output(e, 0, NULL, &s));
	ASSERT_EQ(0U, s.dims[0]);
	ASSERT_EQ(N, s.dims[1]);
	/*
	 * No H2D copy, no built-in launch on the empty tensors: only the
	 * custom op's work (its output has its declared shape): its fork
	 * (record, wait), its add, its join, and the copy of its output.
	 */
	ASSERT_EQ(tasks + 6, self->h->tasks);
	for (i = first; i < self->h->nlog; i++)
		ASSERT_FALSE(self->h->log[i].op == SNPU_OP_COPY &&
			     self->h->log[i].kernel == SNPU_COPY_H2D);
	EXPECT_EQ((uint32_t)SNPU_OP_EVENT_RECORD, self->h->log[first].op);
	EXPECT_EQ(1U, self->h->log[first].stream);
	EXPECT_EQ((uint32_t)SNPU_OP_STREAM_WAIT, self->h->log[first + 1].op);
	EXPECT_EQ(100U, self->h->log[first + 1].stream);
	EXPECT_EQ((uint32_t)SNPU_OP_LAUNCH, self->h->log[first + 2].op);
	EXPECT_EQ(100U, self->h->log[first + 2].stream);
	EXPECT_EQ((uint32_t)SNPU_OP_EVENT_RECORD, self->h->log[first + 3].op);
	EXPECT_EQ(100U, self->h->log[first + 3].stream);
	EXPECT_EQ((uint32_t)SNPU_OP_STREAM_WAIT, self->h->log[first + 4].op);
	EXPECT_EQ(1U, self->h->log[first + 4].stream);
	EXPECT_EQ((uint32_t)SNPU_OP_COPY, self->h->log[first + 5].op);
	EXPECT_EQ((uint32_t)SNPU_COPY_D2H, self->h->log[first + 5].kernel);
	/* Larger than declared: refused. */
	dims[0] = M + 1;
	ASSERT_EQ(-EINVAL, snpu_rt2_exec_input(e, 0, dims, NULL));
	snpu_rt2_exec_destroy(e);
}

/* ---- the scheduler on random graphs of empty kernels ------------------- */

#define RND_NODES	120U

static unsigned int rnd(unsigned int *st)
{
	*st = *st * 1103515245U + 12345U;
	return (*st >> 16) & 0x7fff;
}

/*
 * A random DAG over all three workers (edges only from lower to higher
 * creation index; launches prioritised by creation index, so the strict
 * launch order is feasible), with a FAIL node when @fail_at >= 0.
 */
static int random_exec(struct hostdev *h, unsigned int seed, int fail_at,
		       const struct snpu_rt2_exec_opts *o,
		       struct snpu_rt2_exec **ep)
{
	static const unsigned int kinds[3] = {
		RT2_K_EMPTY, RT2_K_EMPTY_MEMORY, RT2_K_EMPTY_LAUNCH };
	struct rt2_build b = { .flags = o->flags };
	unsigned int i, j, st = seed;
	int ret = 0, id;

	for (i = 0; i < RND_NODES && !ret; i++) {
		unsigned int k = (int)i == fail_at ? RT2_K_FAIL :
				 kinds[rnd(&st) % 3];

		id = rt2_build_node(&b, k, -1, (int32_t)i);
		if (id < 0)
			return id;
		b.nodes[id].arg = -EL2HLT;
		for (j = 0; j < 3 && i; j++)
			if (rnd(&st) % 2)
				ret = rt2_build_edge(&b, rnd(&st) % i, i);
	}
	if (!ret)
		ret = rt2_exec_create_graph(NULL, &h->head, o, &b, ep);
	rt2_build_fini(&b);
	return ret;
}

static void check_trace_order(struct __test_metadata *_metadata,
			      struct snpu_rt2_exec *e, const struct trace *tr)
{
	unsigned int pos[RND_NODES], i, j;

	for (i = 0; i < RND_NODES; i++)
		pos[i] = ~0U;
	for (i = 0; i < tr->n; i++)
		pos[tr->t[i].node] = i;
	for (i = 0; i < e->g.nnodes; i++) {
		const struct rt2_node *n = &e->g.nodes[i];

		if (pos[i] == ~0U)
			continue;
		ASSERT_EQ(rt2_kernel_worker(n->kernel),
			  tr->t[pos[i]].worker);
		for (j = 0; j < n->npred; j++)
			ASSERT_LT(pos[e->g.preds[n->pred_off + j]], pos[i]);
	}
}

/*
 * Every node runs once per run, after its predecessors, on its worker:
 * with the caller alone in ID order (the default for such cheap nodes),
 * and with helpers woken whenever another strand has work.
 */
TEST(random_graphs_three_workers)
{
	struct snpu_rt2_exec_opts o = { .flags = SNPU_RT2_EXEC_THREADS };
	static struct trace tr = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct snpu_rt2_exec *e;
	struct hostdev *h;
	unsigned int seed, run;

	o.trace = trace_fn;
	o.trace_arg = &tr;
	ASSERT_EQ(0, hostdev_open(&h));
	for (seed = 1; seed <= 20; seed++) {
		ASSERT_EQ(0, random_exec(h, seed, -1, &o, &e));
		ASSERT_EQ(RND_NODES, e->g.nnodes);
		if (seed > 10)
			e->hand.policy = RT2_HAND_EAGER;
		for (run = 0; run < 20; run++) {
			tr.n = 0;
			ASSERT_EQ(0, snpu_rt2_exec_run(e));
			ASSERT_EQ(RND_NODES, tr.n);
			check_trace_order(_metadata, e, &tr);
		}
		snpu_rt2_exec_destroy(e);
	}
	hostdev_close(h);
}

/*
 * A failing node stops the run with its error whatever the other workers
 * are doing: nothing that depends on it runs, the executor is reused (in
 * both ways of running, as above).
 */
TEST(random_graphs_error_stop)
{
	struct snpu_rt2_exec_opts o = { .flags = SNPU_RT2_EXEC_THREADS };
	static struct trace tr = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct snpu_rt2_exec *e;
	struct hostdev *h;
	unsigned int seed, run, i;

	o.trace = trace_fn;
	o.trace_arg = &tr;
	ASSERT_EQ(0, hostdev_open(&h));
	for (seed = 1; seed <= 20; seed++) {
		ASSERT_EQ(0, random_exec(h, seed, RND_NODES / 2, &o, &e));
		if (seed > 10)
			e->hand.policy = RT2_HAND_EAGER;
		for (run = 0; run < 10; run++) {
			tr.n = 0;
			ASSERT_EQ(-EL2HLT, snpu_rt2_exec_run(e));
			ASSERT_LT(tr.n, RND_NODES);
			check_trace_order(_metadata, e, &tr);
			for (i = 0; i < tr.n; i++)
				if (tr.t[i].ret)
					ASSERT_STREQ("Fail", tr.t[i].kernel);
		}
		snpu_rt2_exec_destroy(e);
	}
	hostdev_close(h);
}

/* ---- device time by class (dev.c) --------------------------------------- */

/*
 * A run's tasks as the ring device accounts them: submitted at once, and
 * a core running them back to back as one chain (an H2D copy, two
 * launches, a D2H copy). With each CQE carrying its own task's completion
 * time, each class gets exactly its tasks' times, the D2H copy's
 * included, and they add up to the chain's span.
 */
TEST(device_time_per_task_in_a_chain)
{
	static const unsigned int cls[4] = {
		RT2_TC_H2D, RT2_TC_COMPUTE, RT2_TC_COMPUTE, RT2_TC_D2H };
	static const uint64_t done[4] = { 1300, 1900, 2200, 2750 };
	struct rt2_dev_time t;
	uint8_t seq;

	memset(&t, 0, sizeof(t));
	for (seq = 0; seq < 4; seq++)
		t.sub_ns[seq] = 1000;
	for (seq = 0; seq < 4; seq++)
		rt2_dev_time_done(&t, seq, cls[seq], done[seq]);
	EXPECT_EQ(300U, t.ns[RT2_TC_H2D]);
	EXPECT_EQ(600U + 300U, t.ns[RT2_TC_COMPUTE]);
	EXPECT_EQ(550U, t.ns[RT2_TC_D2H]);
	EXPECT_EQ(done[3] - 1000, t.ns[RT2_TC_H2D] + t.ns[RT2_TC_COMPUTE] +
				   t.ns[RT2_TC_D2H]);
}

/*
 * A task submitted after the last completion starts at its submission:
 * idle device time is no one's. Sequence numbers wrap (one byte).
 */
TEST(device_time_from_submission_when_idle)
{
	struct rt2_dev_time t;

	memset(&t, 0, sizeof(t));
	t.sub_ns[255] = 100;
	rt2_dev_time_done(&t, 255, RT2_TC_COMPUTE, 400);
	t.sub_ns[0] = 1000;	/* seq 256 */
	rt2_dev_time_done(&t, 0, RT2_TC_D2H, 1250);
	EXPECT_EQ(300U, t.ns[RT2_TC_COMPUTE]);
	EXPECT_EQ(250U, t.ns[RT2_TC_D2H]);
	EXPECT_EQ(1250U, t.last_done);
}

TEST_HARNESS_MAIN
