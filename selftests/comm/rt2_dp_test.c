// SPDX-License-Identifier: GPL-2.0
/*
 * rt2's SNPU_RT2_OP_ALLREDUCE and data-parallel training on top of it:
 *
 * - the op sums (or takes the maximum of) its input over the ranks of the
 *   executor's communicator, in rank order, in single-thread and
 *   three-worker mode and under graph replay, run after run;
 * - an executor without a communicator fails the run with -ENOTCONN, one
 *   given a rank of another device is refused with -EINVAL, and the model
 *   refuses an ALLREDUCE of bad inputs or flags;
 * - snpu-train's data-parallel model (lib/tools/mlp_rt2.h,
 *   mlp_rt2_build_dp()) on 2 and 4 devices ends with every rank's weights
 *   the same bits, and those of the data-parallel CPU reference
 *   (mlp_cpu_dp_step()), each step's loss included, with graph replay
 *   (the all-reduces captured as graph nodes); against one device
 *   on the whole batch the weights differ only by rounding.
 *
 * Runs as root in the test VM with the module loaded with devices=4.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snpu.h"
#include "snpu_rt2.h"
#include "idx.h"
#include "mlp.h"
#include "mlp_rt2.h"

#include "kselftest_harness.h"

#define MAXR		4
#define DATA		"/opt/snpu/data/fashion-mnist-mini"

struct rk {
	struct snpu_device *dev;
	struct snpu_rt2_dev *rd;
	struct snpu_comm *comm;
	struct snpu_rt2_exec *e;
	int ret;
	pthread_t th;
};

FIXTURE(dp)
{
	struct rk r[MAXR];
	unsigned int n;
};

FIXTURE_SETUP(dp)
{
	struct snpu_device *devs[MAXR];
	struct snpu_comm *comms[MAXR];
	unsigned int i;

	self->n = MAXR;
	for (i = 0; i < MAXR; i++) {
		ASSERT_EQ(0, snpu_open(i, 0, &self->r[i].dev));
		ASSERT_EQ(0, snpu_rt2_dev_open(self->r[i].dev, 0,
					       &self->r[i].rd));
		devs[i] = self->r[i].dev;
	}
	ASSERT_EQ(0, snpu_comm_init_all(devs, MAXR, comms));
	for (i = 0; i < MAXR; i++)
		self->r[i].comm = comms[i];
}

FIXTURE_TEARDOWN(dp)
{
	unsigned int i;

	for (i = 0; i < MAXR; i++) {
		if (self->r[i].e)
			snpu_rt2_exec_destroy(self->r[i].e);
		if (self->r[i].comm)
			snpu_comm_abort(self->r[i].comm);
		snpu_rt2_dev_close(self->r[i].rd);
		snpu_close(self->r[i].dev);
	}
}

static void *run_thread(void *arg)
{
	struct rk *k = arg;

	k->ret = snpu_rt2_exec_run(k->e);
	return NULL;
}

/* Run the first @n ranks' executors at once; 0 or the first error. */
static int run_all(FIXTURE_DATA(dp) *self, unsigned int n)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; i < n; i++)
		if (pthread_create(&self->r[i].th, NULL, run_thread,
				   &self->r[i]))
			return -EAGAIN;
	for (i = 0; i < n; i++) {
		pthread_join(self->r[i].th, NULL);
		if (!ret)
			ret = self->r[i].ret;
	}
	return ret;
}

/* A model: x [rows, cols] -> ALLREDUCE (@flags) -> output. */
static int ar_model(uint32_t dtype, uint32_t rows, uint32_t cols,
		    uint32_t flags, struct snpu_rt2_model **m)
{
	struct snpu_rt2_shape s = { dtype, 2, { rows, cols } };
	struct snpu_rt2_op_desc op = { .type = SNPU_RT2_OP_ALLREDUCE,
				       .flags = flags, .nin = 1 };
	int ret, t;

	ret = snpu_rt2_model_create(m);
	if (ret)
		return ret;
	op.in[0] = snpu_rt2_model_input(*m, &s);
	t = snpu_rt2_model_op(*m, &op);
	ret = t < 0 ? t : snpu_rt2_model_output(*m, t);
	if (ret < 0) {
		snpu_rt2_model_destroy(*m);
		return ret;
	}
	return 0;
}

static float in_f32(unsigned int r, unsigned int run, uint32_t i)
{
	return (float)(int)((i * 37 + r * 101 + run * 7) % 2001) / 3.0f - 300;
}

static int32_t in_i32(unsigned int r, unsigned int run, uint32_t i)
{
	return (int32_t)((i * 2654435761u + r * 977 + run) % 100000) - 50000;
}

/*
 * Build the model on the first @n ranks with @flags, run it @runs times
 * with new inputs each run, and check every rank's output against a loop
 * over the ranks.
 */
static void ar_check(struct __test_metadata *_metadata,
		     FIXTURE_DATA(dp) *self, unsigned int n, uint32_t dtype,
		     uint32_t flags, unsigned int eflags, unsigned int runs)
{
	const uint32_t rows = 7, cols = 333, elems = rows * cols;
	struct snpu_rt2_exec_opts o = { .flags = eflags };
	struct snpu_rt2_model *m;
	unsigned int r, q, run;
	uint32_t i;

	ASSERT_EQ(0, ar_model(dtype, rows, cols, flags, &m));
	for (r = 0; r < n; r++) {
		ASSERT_EQ(0, snpu_rt2_exec_create(m, self->r[r].rd, &o,
						  &self->r[r].e));
		ASSERT_EQ(0, snpu_rt2_exec_set_comm(self->r[r].e,
						    self->r[r].comm));
	}
	/* Only the first n ranks take part: a communicator of n. */
	for (run = 0; run < runs; run++) {
		for (r = 0; r < n; r++) {
			void *x;

			ASSERT_EQ(0, snpu_rt2_exec_input(self->r[r].e, 0, NULL,
							 &x));
			for (i = 0; i < elems; i++) {
				if (dtype == SNPU_RT2_F32)
					((float *)x)[i] = in_f32(r, run, i);
				else
					((int32_t *)x)[i] = in_i32(r, run, i);
			}
		}
		ASSERT_EQ(0, run_all(self, n));
		for (r = 0; r < n; r++) {
			const void *out;

			ASSERT_EQ(0, snpu_rt2_exec_output(self->r[r].e, 0, &out,
							  NULL));
			for (i = 0; i < elems; i++) {
				if (dtype == SNPU_RT2_F32) {
					float v = in_f32(0, run, i), got;

					for (q = 1; q < n; q++) {
						float b = in_f32(q, run, i);

						v = flags ? (v > b ? v : b) :
							    v + b;
					}
					got = ((const float *)out)[i];
					ASSERT_EQ(0, memcmp(&v, &got, 4))
						TH_LOG("run %u rank %u elem %u: %a, not %a",
						       run, r, i, got, v);
				} else {
					int32_t v = in_i32(0, run, i);

					for (q = 1; q < n; q++) {
						int32_t b = in_i32(q, run, i);

						v = flags ? (v > b ? v : b) :
							    (int32_t)((uint32_t)v + (uint32_t)b);
					}
					ASSERT_EQ(v, ((const int32_t *)out)[i])
						TH_LOG("run %u rank %u elem %u",
						       run, r, i);
				}
			}
		}
	}
	snpu_rt2_model_destroy(m);
}

/* A communicator over the first @n ranks, in place of the fixture's. */
static void comm_of(struct __test_metadata *_metadata,
		    FIXTURE_DATA(dp) *self, unsigned int n)
{
	struct snpu_device *devs[MAXR];
	struct snpu_comm *comms[MAXR];
	unsigned int i;

	for (i = 0; i < MAXR; i++) {
		ASSERT_EQ(0, snpu_comm_destroy(self->r[i].comm));
		self->r[i].comm = NULL;
	}
	for (i = 0; i < n; i++)
		devs[i] = self->r[i].dev;
	ASSERT_EQ(0, snpu_comm_init_all(devs, n, comms));
	for (i = 0; i < n; i++)
		self->r[i].comm = comms[i];
}

TEST_F(dp, allreduce_op_sums_f32_single_thread)
{
	comm_of(_metadata, self, 3);
	ar_check(_metadata, self, 3, SNPU_RT2_F32, 0, 0, 3);
}

TEST_F(dp, allreduce_op_max_i32_three_workers)
{
	ar_check(_metadata, self, 4, SNPU_RT2_I32, SNPU_RT2_ALLREDUCE_MAX,
		 SNPU_RT2_EXEC_THREADS, 3);
}

TEST_F(dp, allreduce_op_sums_i32_under_graph_replay)
{
	struct snpu_rt2_exec_stats st;

	comm_of(_metadata, self, 2);
	ar_check(_metadata, self, 2, SNPU_RT2_I32, 0,
		 SNPU_RT2_EXEC_THREADS | SNPU_RT2_EXEC_GRAPH, 4);
	/* Captured in the first run, then launched as the graph. */
	ASSERT_EQ(0, snpu_rt2_exec_stats(self->r[0].e, &st));
	EXPECT_EQ(1u, st.graph_captures);
	EXPECT_EQ(3u, st.graph_launches);
	EXPECT_EQ(0u, st.graph_fallbacks);
}

TEST_F(dp, run_without_communicator_is_enotconn)
{
	struct snpu_rt2_exec_opts o = { 0 };
	struct snpu_rt2_model *m;
	void *x;

	ASSERT_EQ(0, ar_model(SNPU_RT2_F32, 2, 8, 0, &m));
	ASSERT_EQ(0, snpu_rt2_exec_create(m, self->r[0].rd, &o,
					  &self->r[0].e));
	ASSERT_EQ(0, snpu_rt2_exec_input(self->r[0].e, 0, NULL, &x));
	memset(x, 0, 2 * 8 * 4);
	EXPECT_EQ(-ENOTCONN, snpu_rt2_exec_run(self->r[0].e));
	/* Set, then unset: the same. */
	ASSERT_EQ(0, snpu_rt2_exec_set_comm(self->r[0].e, self->r[0].comm));
	ASSERT_EQ(0, snpu_rt2_exec_set_comm(self->r[0].e, NULL));
	EXPECT_EQ(-ENOTCONN, snpu_rt2_exec_run(self->r[0].e));
	snpu_rt2_model_destroy(m);
}

TEST_F(dp, set_comm_of_another_device_is_einval)
{
	struct snpu_rt2_exec_opts o = { 0 };
	struct snpu_rt2_model *m;

	ASSERT_EQ(0, ar_model(SNPU_RT2_F32, 2, 8, 0, &m));
	ASSERT_EQ(0, snpu_rt2_exec_create(m, self->r[0].rd, &o,
					  &self->r[0].e));
	EXPECT_EQ(-EINVAL, snpu_rt2_exec_set_comm(self->r[0].e,
						  self->r[1].comm));
	EXPECT_EQ(-EINVAL, snpu_rt2_exec_set_comm(NULL, self->r[0].comm));
	snpu_rt2_model_destroy(m);
}

TEST_F(dp, model_refuses_bad_allreduce)
{
	struct snpu_rt2_shape s = { SNPU_RT2_F32, 1, { 16 } };
	struct snpu_rt2_op_desc op = { .type = SNPU_RT2_OP_ALLREDUCE,
				       .nin = 1 };
	struct snpu_rt2_model *m;
	int x;

	ASSERT_EQ(0, snpu_rt2_model_create(&m));
	x = snpu_rt2_model_input(m, &s);
	ASSERT_GE(x, 0);
	op.in[0] = x;
	op.flags = 2;
	EXPECT_EQ(-EINVAL, snpu_rt2_model_op(m, &op));
	op.flags = 0;
	op.nin = 2;
	op.in[1] = x;
	EXPECT_EQ(-EINVAL, snpu_rt2_model_op(m, &op));
	op.nin = 1;
	EXPECT_GE(snpu_rt2_model_op(m, &op), 0);
	snpu_rt2_model_destroy(m);
}

/* ---- data-parallel training --------------------------------------------- */

#define STEPS	6
#define BATCH	32

struct dprun {
	struct mlp_rt2 net[MAXR];
	struct idx_set set;
	uint32_t order[512];
	struct mlp_cfg c;	/* the whole batch */
};

static void dp_train(struct __test_metadata *_metadata,
		     FIXTURE_DATA(dp) *self, unsigned int n)
{
	struct snpu_rt2_exec_opts o = {
		.flags = SNPU_RT2_EXEC_THREADS | SNPU_RT2_EXEC_GRAPH,
	};
	struct mlp_cpu cpu[MAXR], one;
	struct mlp_params init, w, u;
	static struct dprun d;
	static float x[BATCH * 784];
	static int32_t y[BATCH];
	struct mlp_cfg c;
	char err[256];
	unsigned int r, s, i;
	uint32_t rows;

	comm_of(_metadata, self, n);
	ASSERT_EQ(0, idx_set_load(DATA, "train", 10, &d.set, err,
				  sizeof(err))) TH_LOG("%s", err);
	d.c = (struct mlp_cfg){ 784, 32, 10, BATCH, 0.1f, 5 };
	mlp_epoch_order(d.c.seed, 0, d.order, STEPS * BATCH);
	c = d.c;
	rows = c.batch = BATCH / n;
	ASSERT_EQ(0, mlp_params_init(&d.c, &init));
	ASSERT_EQ(0, mlp_params_init(&d.c, &w));
	ASSERT_EQ(0, mlp_params_init(&d.c, &u));
	for (r = 0; r < n; r++) {
		ASSERT_EQ(0, mlp_cpu_init(&cpu[r], &c));
		ASSERT_EQ(0, mlp_rt2_build_dp(&d.net[r], &c, &init, rows, true,
					      n));
		ASSERT_EQ(0, snpu_rt2_exec_create(d.net[r].m, self->r[r].rd,
						  &o, &self->r[r].e));
		ASSERT_EQ(0, snpu_rt2_exec_set_comm(self->r[r].e,
						    self->r[r].comm));
	}
	ASSERT_EQ(0, mlp_cpu_init(&one, &d.c));
	for (s = 0; s < STEPS; s++) {
		double loss = 0, cl;

		mlp_gather(x, y, d.set.images, d.set.labels, d.order,
			   s * BATCH, BATCH, d.c.in);
		for (r = 0; r < n; r++) {
			float *xr;
			int32_t *yr;

			ASSERT_EQ(0, snpu_rt2_exec_input(self->r[r].e, 0, NULL,
							 (void **)&xr));
			ASSERT_EQ(0, snpu_rt2_exec_input(self->r[r].e, 1, NULL,
							 (void **)&yr));
			memcpy(xr, x + (size_t)r * rows * 784, rows * 784 * 4);
			memcpy(yr, y + (size_t)r * rows, rows * 4);
		}
		ASSERT_EQ(0, run_all(self, n));
		for (r = 0; r < n; r++) {
			const float *l;
			double lr = 0;

			ASSERT_EQ(0, snpu_rt2_exec_output(self->r[r].e, 0,
							  (const void **)&l,
							  NULL));
			for (i = 0; i < rows; i++)
				lr += l[i];
			loss += lr / rows;
		}
		loss /= n;
		cl = mlp_cpu_dp_step(cpu, n, x, y);
		EXPECT_EQ(0, memcmp(&loss, &cl, sizeof(cl)))
			TH_LOG("step %u: device %a, cpu %a", s, loss, cl);
		mlp_cpu_step(&one, x, y);
	}
	for (r = 0; r < n; r++) {
		struct snpu_rt2_exec_stats st;

		/* Every step after the first was one launch of the graph. */
		ASSERT_EQ(0, snpu_rt2_exec_stats(self->r[r].e, &st));
		EXPECT_EQ(1u, st.graph_captures);
		EXPECT_EQ(STEPS - 1u, st.graph_launches);
		ASSERT_EQ(0, mlp_rt2_read(self->r[r].e, &d.net[r], &d.c,
					  r ? &u : &w));
		if (r)
			EXPECT_EQ(0, memcmp(w.w1, u.w1, 4ULL * 784 * 32))
				TH_LOG("rank %u's W1 differs from rank 0's", r);
	}
	EXPECT_EQ(0, memcmp(w.w1, cpu[0].p.w1, 4ULL * 784 * 32));
	EXPECT_EQ(0, memcmp(w.b1, cpu[0].p.b1, 4ULL * 32));
	EXPECT_EQ(0, memcmp(w.w2, cpu[0].p.w2, 4ULL * 32 * 10));
	EXPECT_EQ(0, memcmp(w.b2, cpu[0].p.b2, 4ULL * 10));
	/* One device on the whole batch: the same up to rounding. */
	EXPECT_LT(mlp_max_rel_diff(w.w1, one.p.w1, 784 * 32), 1e-5f);
	EXPECT_LT(mlp_max_rel_diff(w.w2, one.p.w2, 32 * 10), 1e-5f);
	TH_LOG("%u ranks: max relative difference to one device %g", n,
	       (double)fmaxf(mlp_max_rel_diff(w.w1, one.p.w1, 784 * 32),
			     mlp_max_rel_diff(w.w2, one.p.w2, 32 * 10)));
	for (r = 0; r < n; r++) {
		snpu_rt2_exec_destroy(self->r[r].e);
		self->r[r].e = NULL;
		mlp_rt2_free(&d.net[r]);
		mlp_cpu_free(&cpu[r]);
	}
	mlp_cpu_free(&one);
	mlp_params_free(&init);
	mlp_params_free(&w);
	mlp_params_free(&u);
	idx_set_free(&d.set);
}

TEST_F(dp, training_on_two_devices_matches_reference)
{
	dp_train(_metadata, self, 2);
}

TEST_F(dp, training_on_four_devices_matches_reference)
{
	dp_train(_metadata, self, 4);
}

TEST_HARNESS_MAIN
