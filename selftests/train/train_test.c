// SPDX-License-Identifier: GPL-2.0
/*
 * snpu-train's job on the module: a short training of the MLP on the
 * first images of Fashion-MNIST (the VM image's small copy, made by
 * scripts/idx-head), through rt2 in three-worker mode with graph replay,
 * the ring and the ABI 0.8 kernels:
 *
 * - the weights after the steps are the CPU reference's (lib/tools/mlp.h,
 *   which computes with the kernels' own exp and log), bit for bit, and
 *   so is every step's loss;
 * - graph replay is used: one capture, then one graph launch per step,
 *   counted in queue entries against the same step op by op;
 * - a snapshot in the middle (lock, backup, device reset through the
 *   fault knob, restore, unlock) leaves the final weights bit-identical
 *   to an uninterrupted run; the same reset without the restore does
 *   destroy them (so the check above is not empty);
 * - the loader refuses a truncated copy of the real file and a missing
 *   one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "snpu.h"
#include "snpu_rt2.h"
#include "idx.h"
#include "mlp.h"
#include "mlp_rt2.h"

#include "kselftest_harness.h"

#define DATA		"/opt/snpu/data/fashion-mnist-mini"
#define DEBUGFS		"/sys/kernel/debug"
#define STEPS		8
#define BATCH		32	/* 256 images */

FIXTURE(train)
{
	struct snpu_device *dev;
	struct snpu_rt2_dev *rd;
	struct idx_set set;
	struct mlp_cfg c;
	uint32_t order[512];
};

FIXTURE_SETUP(train)
{
	char err[256];

	ASSERT_EQ(0, idx_set_load(DATA, "train", 10, &self->set, err,
				  sizeof(err))) TH_LOG("%s", err);
	ASSERT_GE(self->set.n, (uint32_t)(STEPS * BATCH));
	self->c = (struct mlp_cfg){ 784, 32, 10, BATCH, 0.1f, 3 };
	mlp_epoch_order(self->c.seed, 0, self->order, STEPS * BATCH);
	ASSERT_EQ(0, snpu_open(0, 0, &self->dev));
	ASSERT_EQ(0, snpu_rt2_dev_open(self->dev, 0, &self->rd));
}

FIXTURE_TEARDOWN(train)
{
	snpu_rt2_dev_close(self->rd);
	snpu_close(self->dev);
	idx_set_free(&self->set);
}

struct run {
	struct mlp_rt2 net;
	struct snpu_rt2_exec *e;
	struct mlp_params init, w;
	double loss[STEPS];	/* the mean, summed in double as mlp.h does */
};

static void run_start(struct __test_metadata *_metadata,
		      FIXTURE_DATA(train) *self, struct run *r,
		      unsigned int flags)
{
	struct snpu_rt2_exec_opts o = { .flags = flags };

	memset(r, 0, sizeof(*r));
	ASSERT_EQ(0, mlp_params_init(&self->c, &r->init));
	ASSERT_EQ(0, mlp_params_init(&self->c, &r->w));
	ASSERT_EQ(0, mlp_rt2_build(&r->net, &self->c, &r->init, BATCH, true));
	ASSERT_EQ(0, snpu_rt2_exec_create(r->net.m, self->rd, &o, &r->e));
}

static int run_step(FIXTURE_DATA(train) *self, struct run *r,
		    unsigned int step)
{
	const float *l;
	float *x;
	int32_t *y;
	unsigned int i;
	int ret;

	ret = snpu_rt2_exec_input(r->e, 0, NULL, (void **)&x);
	if (!ret)
		ret = snpu_rt2_exec_input(r->e, 1, NULL, (void **)&y);
	if (ret)
		return ret;
	mlp_gather(x, y, self->set.images, self->set.labels, self->order,
		   step * BATCH, BATCH, self->c.in);
	ret = snpu_rt2_exec_run(r->e);
	if (!ret)
		ret = snpu_rt2_exec_output(r->e, 0, (const void **)&l, NULL);
	if (ret)
		return ret;
	r->loss[step] = 0;
	for (i = 0; i < BATCH; i++)
		r->loss[step] += l[i];
	r->loss[step] /= BATCH;
	return 0;
}

static void run_end(struct __test_metadata *_metadata, FIXTURE_DATA(train) *self,
		    struct run *r)
{
	EXPECT_EQ(0, mlp_rt2_read(r->e, &r->net, &self->c, &r->w));
	snpu_rt2_exec_destroy(r->e);
	mlp_rt2_free(&r->net);
	mlp_params_free(&r->init);
}

static bool same_weights(const struct mlp_cfg *c, const struct mlp_params *a,
			 const struct mlp_params *b)
{
	return !memcmp(a->w1, b->w1, 4ULL * c->in * c->hid) &&
	       !memcmp(a->b1, b->b1, 4ULL * c->hid) &&
	       !memcmp(a->w2, b->w2, 4ULL * c->hid * c->out) &&
	       !memcmp(a->b2, b->b2, 4ULL * c->out);
}

TEST_F(train, weights_match_cpu_reference)
{
	struct mlp_cpu cpu;
	float x[BATCH * 784];
	int32_t y[BATCH];
	struct run r;
	unsigned int s;
	double cl;

	ASSERT_EQ(0, mlp_cpu_init(&cpu, &self->c));
	run_start(_metadata, self, &r, SNPU_RT2_EXEC_THREADS |
		  SNPU_RT2_EXEC_GRAPH);
	for (s = 0; s < STEPS; s++) {
		ASSERT_EQ(0, run_step(self, &r, s));
		mlp_gather(x, y, self->set.images, self->set.labels,
			   self->order, s * BATCH, BATCH, self->c.in);
		cl = mlp_cpu_step(&cpu, x, y);
		EXPECT_EQ(0, memcmp(&r.loss[s], &cl, sizeof(cl)))
			TH_LOG("step %u: device %a, cpu %a", s, r.loss[s], cl);
	}
	run_end(_metadata, self, &r);
	EXPECT_TRUE(same_weights(&self->c, &r.w, &cpu.p))
		TH_LOG("the weights differ from the CPU reference's by up to %g",
		       (double)fmaxf(fmaxf(mlp_max_rel_diff(r.w.w1, cpu.p.w1,
							    784 * 32),
					   mlp_max_rel_diff(r.w.b1, cpu.p.b1,
							    32)),
				     fmaxf(mlp_max_rel_diff(r.w.w2, cpu.p.w2,
							    32 * 10),
					   mlp_max_rel_diff(r.w.b2, cpu.p.b2,
							    10))));
	/* The loss went down, and the normalisation ran every step. */
	EXPECT_LT(r.loss[STEPS - 1], r.loss[0]);
	EXPECT_EQ((unsigned long)STEPS, r.net.norm_calls);
	mlp_params_free(&r.w);
	mlp_cpu_free(&cpu);
}

/*
 * Per step op by op: 2 H2D copies, the normalisation (fork: a record and
 * a wait; the AFFINE launch; join: a record and a wait), the 18 launches
 * of ops 1..18, 2 D2H copies. With graph replay the 18 launches are one
 * graph launch, on the first step (the capture) too.
 */
#define ENTRIES_OP_BY_OP	(2 + 5 + 18 + 2)
#define ENTRIES_GRAPH		(2 + 5 + 1 + 2)

TEST_F(train, graph_replay_one_entry_per_step)
{
	struct snpu_rt2_exec_stats g, o;
	struct run a, b;
	unsigned int s;

	run_start(_metadata, self, &a, SNPU_RT2_EXEC_THREADS |
		  SNPU_RT2_EXEC_GRAPH);
	run_start(_metadata, self, &b, SNPU_RT2_EXEC_THREADS);
	for (s = 0; s < STEPS; s++) {
		ASSERT_EQ(0, run_step(self, &a, s));
		ASSERT_EQ(0, run_step(self, &b, s));
	}
	ASSERT_EQ(0, snpu_rt2_exec_stats(a.e, &g));
	ASSERT_EQ(0, snpu_rt2_exec_stats(b.e, &o));
	run_end(_metadata, self, &a);
	run_end(_metadata, self, &b);
	EXPECT_EQ(1U, g.graph_captures);
	EXPECT_EQ((uint64_t)STEPS - 1, g.graph_launches);
	EXPECT_EQ(0U, g.graph_fallbacks);
	EXPECT_EQ((uint64_t)STEPS * ENTRIES_GRAPH, g.entries);
	EXPECT_EQ((uint64_t)STEPS * ENTRIES_OP_BY_OP, o.entries);
	EXPECT_EQ(0U, o.graph_launches);
	/* Both ways compute the same, bit for bit. */
	EXPECT_TRUE(same_weights(&self->c, &a.w, &b.w));
	EXPECT_EQ(0, memcmp(a.loss, b.loss, sizeof(a.loss)));
	EXPECT_GT(g.compute_ns, 0U);
	mlp_params_free(&a.w);
	mlp_params_free(&b.w);
}

static int reset_knob(void)
{
	const char *path = DEBUGFS "/snpu/snpu0/reset";
	int fd, ret = 0;

	if (access(path, W_OK) &&
	    mount("debugfs", DEBUGFS, "debugfs", 0, NULL) && errno != EBUSY)
		return -errno;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, "1\n", 2) != 2)
		ret = -errno;
	close(fd);
	return ret;
}

TEST_F(train, checkpoint_restore_bit_identical)
{
	struct snpu_device *devs[1] = { self->dev };
	uint64_t image;
	struct run a, b;
	unsigned int s;

	run_start(_metadata, self, &a, SNPU_RT2_EXEC_THREADS |
		  SNPU_RT2_EXEC_GRAPH);
	run_start(_metadata, self, &b, SNPU_RT2_EXEC_THREADS |
		  SNPU_RT2_EXEC_GRAPH);
	for (s = 0; s < STEPS; s++) {
		ASSERT_EQ(0, run_step(self, &a, s));
		if (s == STEPS / 2) {
			ASSERT_EQ(0, snpu_snapshot_lock(devs, 1, 1000000000LL));
			ASSERT_EQ(0, snpu_snapshot_backup(devs, 1, &image));
			EXPECT_GT(image, 4ULL * 784 * 32);
			ASSERT_EQ(0, reset_knob());
			ASSERT_EQ(0, snpu_snapshot_restore(devs, 1));
			ASSERT_EQ(0, snpu_snapshot_unlock(devs, 1));
		}
	}
	for (s = 0; s < STEPS; s++)
		ASSERT_EQ(0, run_step(self, &b, s));
	run_end(_metadata, self, &a);
	run_end(_metadata, self, &b);
	EXPECT_TRUE(same_weights(&self->c, &a.w, &b.w));
	EXPECT_EQ(0, memcmp(a.loss, b.loss, sizeof(a.loss)));
	mlp_params_free(&a.w);
	mlp_params_free(&b.w);
}

/* The reset destroys what the restore brings back. */
TEST_F(train, reset_without_restore_destroys_weights)
{
	struct snpu_device *devs[1] = { self->dev };
	uint32_t bits;
	uint64_t image;
	struct run a;

	run_start(_metadata, self, &a, SNPU_RT2_EXEC_THREADS |
		  SNPU_RT2_EXEC_GRAPH);
	ASSERT_EQ(0, run_step(self, &a, 0));
	ASSERT_EQ(0, snpu_snapshot_lock(devs, 1, 1000000000LL));
	ASSERT_EQ(0, snpu_snapshot_backup(devs, 1, &image));
	ASSERT_EQ(0, reset_knob());
	ASSERT_EQ(0, snpu_snapshot_unlock(devs, 1));
	/* The executor's stream failed with the reset. */
	EXPECT_EQ(-EIO, run_step(self, &a, 1));
	run_end(_metadata, self, &a);
	memcpy(&bits, &a.w.w1[0], 4);
	EXPECT_EQ(0xa5a5a5a5U, bits);
	memcpy(&bits, &a.w.b2[9], 4);
	EXPECT_EQ(0xa5a5a5a5U, bits);
	mlp_params_free(&a.w);
}

TEST_F(train, loader_refuses_truncated_and_missing)
{
	const char *cut = "/tmp/train-cut-images-idx3-ubyte.gz";
	struct idx_file f;
	char err[256], buf[4096];
	int in, out;
	ssize_t n;

	in = open(DATA "/train-images-idx3-ubyte.gz", O_RDONLY);
	ASSERT_GE(in, 0);
	out = open(cut, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ASSERT_GE(out, 0);
	n = read(in, buf, sizeof(buf));
	ASSERT_EQ((ssize_t)sizeof(buf), n);
	ASSERT_EQ(n, write(out, buf, n));
	close(in);
	close(out);
	EXPECT_EQ(-EIO, idx_load(cut, IDX_MAGIC_IMAGES, 28, 28, &f, err,
				 sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "truncated")) TH_LOG("%s", err);
	unlink(cut);
	EXPECT_EQ(-ENOENT, idx_load(cut, IDX_MAGIC_IMAGES, 28, 28, &f, err,
				    sizeof(err)));
	/* Labels are not images. */
	EXPECT_EQ(-EBADMSG, idx_load(DATA "/train-labels-idx1-ubyte.gz",
				     IDX_MAGIC_IMAGES, 28, 28, &f, err,
				     sizeof(err)));
}

TEST_HARNESS_MAIN
