// SPDX-License-Identifier: GPL-2.0
/*
 * Data-parallel training across MPI processes: under mpirun, process r
 * opens /dev/snpu<r>, joins the communicator whose id rank 0 made and
 * MPI_Bcast shared, and trains snpu-train's model (lib/tools/mlp_rt2.h,
 * mlp_rt2_build_dp()) through rt2 with graph replay on rows r * rows.. of
 * every batch of 24 images, its gradients summed over the processes by
 * SNPU_RT2_OP_ALLREDUCE. Each process computes the whole data-parallel
 * step on the CPU too (mlp_cpu_dp_step(), which the single-process run of
 * snpu-train --devices N matches bit for bit: comm/rt2_dp_test), and checks
 * every step's loss and its final weights against it, bit for bit; the
 * weights of every process must be rank 0's (MPI_Bcast of rank 0's,
 * compared here). MPI carries the id and the verdicts only.
 *
 * The batch, 24, is divided by 2, 3 and 4 processes. The module is loaded
 * with devices=4 (run_vm.sh).
 */
#include <errno.h>
#include <string.h>

#include <snpu.h>
#include <snpu_rt2.h>

#include "idx.h"
#include "mlp.h"
#include "mlp_rt2.h"

#include "mpi_ksft.h"

#define DATA	"/opt/snpu/data/fashion-mnist-mini"
#define STEPS	6
#define BATCH	24
#define MAXR	4
/* join, build, the steps' losses, weights vs CPU, weights vs rank 0, graph */
#define PLAN	6

static float x[BATCH * 784];
static int32_t y[BATCH];

int main(int argc, char **argv)
{
	struct snpu_rt2_exec_opts o = {
		.flags = SNPU_RT2_EXEC_THREADS | SNPU_RT2_EXEC_GRAPH,
	};
	struct snpu_comm_unique_id id;
	struct snpu_rt2_exec_stats st;
	struct snpu_device *dev = NULL;
	struct snpu_rt2_dev *rd = NULL;
	struct snpu_comm *comm = NULL;
	struct snpu_rt2_exec *e = NULL;
	struct mlp_cpu cpu[MAXR];
	struct mlp_params init, w, w0;
	struct mlp_cfg c, whole;
	struct idx_set set;
	struct mlp_rt2 net;
	uint32_t order[512], rows;
	bool losses_ok = true, built;
	char err[256];
	int me, n, ret, s, r, ok;
	uint64_t pb;

	mpit_init(&argc, &argv, PLAN, &me, &n);
	if (n > MAXR || BATCH % n) {
		mpit_diag("%d processes: 1 to %d that divide %d", n, MAXR, BATCH);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	whole = (struct mlp_cfg){ 784, 32, 10, BATCH, 0.1f, 7 };
	c = whole;
	rows = c.batch = BATCH / n;

	/* Every process reads the data and makes the same batches. */
	ret = idx_set_load(DATA, "train", 10, &set, err, sizeof(err));
	if (ret)
		mpit_diag("%s", err);
	ok = !ret && set.n >= STEPS * BATCH;
	if (ok) {
		mlp_epoch_order(whole.seed, 0, order, STEPS * BATCH);
		ret = snpu_open(me, 0, &dev);
		if (!ret)
			ret = snpu_rt2_dev_open(dev, 0, &rd);
		if (!ret && me == 0)
			ret = snpu_comm_get_unique_id(dev, &id);
		if (ret)
			mpit_diag("open /dev/snpu%d: %s", me, strerror(-ret));
	}
	MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
	if (ok && !ret) {
		ret = snpu_comm_init_rank(dev, &id, n, me, &comm);
		if (ret)
			mpit_diag("snpu_comm_init_rank: %s", strerror(-ret));
	}
	if (!mpit_result(ok && !ret, "train.join_rank_of_%d", n))
		return mpit_finish();

	ret = mlp_params_init(&whole, &init);
	if (!ret)
		ret = mlp_params_init(&whole, &w);
	if (!ret)
		ret = mlp_params_init(&whole, &w0);
	for (r = 0; !ret && r < n; r++)
		ret = mlp_cpu_init(&cpu[r], &c);
	if (!ret)
		ret = mlp_rt2_build_dp(&net, &c, &init, rows, true, n);
	if (!ret)
		ret = snpu_rt2_exec_create(net.m, rd, &o, &e);
	if (!ret)
		ret = snpu_rt2_exec_set_comm(e, comm);
	if (ret)
		mpit_diag("model and executor: %s", strerror(-ret));
	built = mpit_result(!ret, "train.executor_with_allreduce");

	for (s = 0; built && s < STEPS; s++) {
		const float *l;
		double mine = 0, loss = 0, cl;
		float *xr;
		int32_t *yr;
		uint32_t i;

		mlp_gather(x, y, set.images, set.labels, order, s * BATCH,
			   BATCH, whole.in);
		ret = snpu_rt2_exec_input(e, 0, NULL, (void **)&xr);
		if (!ret)
			ret = snpu_rt2_exec_input(e, 1, NULL, (void **)&yr);
		if (!ret) {
			memcpy(xr, x + (size_t)me * rows * 784, rows * 784 * 4);
			memcpy(yr, y + (size_t)me * rows, rows * 4);
			ret = snpu_rt2_exec_run(e);
		}
		if (!ret)
			ret = snpu_rt2_exec_output(e, 0, (const void **)&l,
						   NULL);
		if (ret) {
			mpit_diag("step %d: %s", s, strerror(-ret));
			losses_ok = false;
			break;
		}
		for (i = 0; i < rows; i++)
			mine += l[i];
		mine /= rows;
		/* The mean over the processes, summed in rank order. */
		{
			double all[MAXR];

			MPI_Allgather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE,
				      MPI_COMM_WORLD);
			for (r = 0; r < n; r++)
				loss += all[r];
			loss /= n;
		}
		cl = mlp_cpu_dp_step(cpu, n, x, y);
		if (memcmp(&loss, &cl, sizeof(cl))) {
			mpit_diag("step %d: loss %a, the CPU's %a", s, loss, cl);
			losses_ok = false;
		}
	}
	mpit_result(built && losses_ok, "train.every_step_loss_is_the_cpu_reference");

	ret = built ? mlp_rt2_read(e, &net, &whole, &w) : -EIO;
	pb = 4ULL * (784 * 32 + 32 + 32 * 10 + 10);
	ok = !ret && !memcmp(w.w1, cpu[0].p.w1, 4ULL * 784 * 32) &&
	     !memcmp(w.b1, cpu[0].p.b1, 4ULL * 32) &&
	     !memcmp(w.w2, cpu[0].p.w2, 4ULL * 32 * 10) &&
	     !memcmp(w.b2, cpu[0].p.b2, 4ULL * 10);
	if (!ok)
		mpit_diag("weights differ from mlp_cpu_dp_step()'s (%llu bytes)",
			  (unsigned long long)pb);
	mpit_result(ok, "train.weights_are_the_cpu_reference");

	/* Rank 0's weights, to every process. */
	if (!ret) {
		memcpy(w0.w1, w.w1, 4ULL * 784 * 32);
		memcpy(w0.b1, w.b1, 4ULL * 32);
		memcpy(w0.w2, w.w2, 4ULL * 32 * 10);
		memcpy(w0.b2, w.b2, 4ULL * 10);
	}
	MPI_Bcast(w0.w1, 784 * 32, MPI_FLOAT, 0, MPI_COMM_WORLD);
	MPI_Bcast(w0.b1, 32, MPI_FLOAT, 0, MPI_COMM_WORLD);
	MPI_Bcast(w0.w2, 32 * 10, MPI_FLOAT, 0, MPI_COMM_WORLD);
	MPI_Bcast(w0.b2, 10, MPI_FLOAT, 0, MPI_COMM_WORLD);
	ok = !ret && !memcmp(w.w1, w0.w1, 4ULL * 784 * 32) &&
	     !memcmp(w.b1, w0.b1, 4ULL * 32) &&
	     !memcmp(w.w2, w0.w2, 4ULL * 32 * 10) &&
	     !memcmp(w.b2, w0.b2, 4ULL * 10);
	mpit_result(ok, "train.every_process_has_rank_0s_weights");

	/* Graph replay carried the steps, the all-reduces with them. */
	ok = built && !snpu_rt2_exec_stats(e, &st) &&
	     st.graph_captures == 1 && st.graph_launches == STEPS - 1;
	if (!ok && built)
		mpit_diag("graph captures %llu, launches %llu",
			  (unsigned long long)st.graph_captures,
			  (unsigned long long)st.graph_launches);
	mpit_result(ok, "train.graph_replay_every_step_after_the_first");

	if (e)
		snpu_rt2_exec_destroy(e);
	if (built)
		mlp_rt2_free(&net);
	if (comm)
		snpu_comm_destroy(comm);
	snpu_rt2_dev_close(rd);
	if (dev)
		snpu_close(dev);
	return mpit_finish();
}
