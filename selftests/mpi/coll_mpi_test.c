// SPDX-License-Identifier: GPL-2.0
/*
 * Collectives across processes with an MPI bootstrap, the way nccl-tests
 * runs NCCL, through libsnpu: run under mpirun, MPI process r opens
 * /dev/snpu<r>, rank 0 makes the communicator's unique id
 * (snpu_comm_get_unique_id()) and MPI_Bcast shares it, each process joins
 * as rank r (snpu_comm_init_rank()), and then every
 * collective runs on every process's stream: all-reduce (sum and max, f32
 * and i32), broadcast (from the last rank and from rank 0), all-gather and
 * reduce-scatter, on 1 element, odd counts, counts the ranks do not
 * divide, one they do and a large one. Each process checks its result
 * against a loop over the ranks in rank order on the host, bit for bit
 * (every process computes every rank's input itself); MPI only carries the
 * id and the verdicts, never the data.
 *
 * The module is loaded with devices=4 (run_vm.sh), so up to 4 processes.
 */
#include <errno.h>
#include <unistd.h>

#include <snpu.h>

#include "mpi_ksft.h"
#include "coll_ref.h"

/* Hang guard of a stream sync: generous, never a pass condition. */
#define WAIT_NS	(120LL * 1000000000LL)

static const uint64_t counts[] = { 1, 7, 1001, 4096, 262147 };

struct ccase {
	const char *name;
	uint32_t coll, dtype, redop;
	int root;		/* BROADCAST: -1 for the last rank */
};

static const struct ccase cases[] = {
	{ "allreduce_sum_f32", SNPU_COLL_ALLREDUCE, SNPU_DTYPE_F32, SNPU_REDOP_SUM, 0 },
	{ "allreduce_sum_i32", SNPU_COLL_ALLREDUCE, SNPU_DTYPE_I32, SNPU_REDOP_SUM, 0 },
	{ "allreduce_max_f32", SNPU_COLL_ALLREDUCE, SNPU_DTYPE_F32, SNPU_REDOP_MAX, 0 },
	{ "allreduce_max_i32", SNPU_COLL_ALLREDUCE, SNPU_DTYPE_I32, SNPU_REDOP_MAX, 0 },
	{ "broadcast_f32_root_last", SNPU_COLL_BROADCAST, SNPU_DTYPE_F32, 0, -1 },
	{ "broadcast_i32_root_0", SNPU_COLL_BROADCAST, SNPU_DTYPE_I32, 0, 0 },
	{ "allgather_f32", SNPU_COLL_ALLGATHER, SNPU_DTYPE_F32, 0, 0 },
	{ "reduce_scatter_sum_f32", SNPU_COLL_REDUCE_SCATTER, SNPU_DTYPE_F32, SNPU_REDOP_SUM, 0 },
	{ "reduce_scatter_max_i32", SNPU_COLL_REDUCE_SCATTER, SNPU_DTYPE_I32, SNPU_REDOP_MAX, 0 },
};

#define NCASES	(sizeof(cases) / sizeof(cases[0]))
#define NCOUNTS	(sizeof(counts) / sizeof(counts[0]))
/* join, the cases, in-place all-reduce, destroy */
#define PLAN	(1 + NCASES * NCOUNTS + 1 + 1)

static int me, nr;
static struct snpu_device *dev;
static struct snpu_comm *comm;
static uint32_t stream;

/* Rank @r's send element @i of collective number @salt. */
static uint32_t input(const struct ccase *c, int r, uint64_t i, uint32_t salt)
{
	return cref_input(c->dtype, r, i, salt);
}

/* The reduction of every rank's element @i, in rank order. */
static uint32_t reduce(const struct ccase *c, uint64_t i, uint32_t salt)
{
	uint32_t acc = input(c, 0, i, salt);
	int r;

	for (r = 1; r < nr; r++)
		acc = cref_op(c->dtype, c->redop, acc, input(c, r, i, salt));
	return acc;
}

/* Element @i of this rank's expected result. */
static uint32_t expect(const struct ccase *c, uint64_t count, uint64_t i,
		       uint32_t salt)
{
	int root = c->root < 0 ? nr - 1 : c->root;

	switch (c->coll) {
	case SNPU_COLL_ALLREDUCE:
		return reduce(c, i, salt);
	case SNPU_COLL_BROADCAST:
		return input(c, root, i, salt);
	case SNPU_COLL_ALLGATHER:
		return input(c, (int)(i / count), i % count, salt);
	default: /* REDUCE_SCATTER */
		return reduce(c, (uint64_t)me * count + i, salt);
	}
}

/* Run case @c on @count elements on this rank: 1 when its result is right. */
static int run_case(const struct ccase *c, uint64_t count, uint32_t salt,
		    bool in_place)
{
	int root = c->root < 0 ? nr - 1 : c->root;
	uint64_t nsend = c->coll == SNPU_COLL_REDUCE_SCATTER ? nr * count : count;
	uint64_t nrecv = c->coll == SNPU_COLL_ALLGATHER ? nr * count : count;
	uint64_t send = 0, recv = 0, i, bad = 0;
	uint32_t *hs = NULL, *hr = NULL;
	int ret, ok = 0;

	hs = malloc(nsend * 4);
	hr = malloc(nrecv * 4);
	if (!hs || !hr) {
		mpit_diag("out of host memory");
		goto out;
	}
	for (i = 0; i < nsend; i++)
		hs[i] = input(c, me, i, salt);
	memset(hr, 0xa5, nrecv * 4);

	ret = snpu_mem_alloc(dev, nrecv * 4, 0, 0, &recv);
	if (!ret && !in_place)
		ret = snpu_mem_alloc(dev, nsend * 4, 0, 0, &send);
	if (ret) {
		mpit_diag("alloc: %s", strerror(-ret));
		goto out;
	}
	if (in_place)
		send = recv;
	ret = snpu_memcpy_h2d(dev, recv, hr, nrecv * 4);
	if (!ret)
		ret = snpu_memcpy_h2d(dev, send, hs, nsend * 4);
	if (ret) {
		mpit_diag("h2d: %s", strerror(-ret));
		goto out;
	}

	switch (c->coll) {
	case SNPU_COLL_ALLREDUCE:
		ret = snpu_comm_allreduce(comm, stream, send, recv, count,
					  c->dtype, c->redop);
		break;
	case SNPU_COLL_BROADCAST:
		ret = snpu_comm_broadcast(comm, stream, me == root ? send : 0,
					  recv, count, c->dtype, root);
		break;
	case SNPU_COLL_ALLGATHER:
		ret = snpu_comm_allgather(comm, stream, send, recv, count,
					  c->dtype);
		break;
	default:
		ret = snpu_comm_reduce_scatter(comm, stream, send, recv, count,
					       c->dtype, c->redop);
		break;
	}
	if (ret) {
		mpit_diag("queue %s: %s", c->name, strerror(-ret));
		goto out;
	}
	ret = snpu_stream_synchronize(dev, stream, WAIT_NS);
	if (ret) {
		mpit_diag("sync: %s", strerror(-ret));
		snpu_stream_reset(dev, stream);
		goto out;
	}
	ret = snpu_memcpy_d2h(dev, hr, recv, nrecv * 4);
	if (ret) {
		mpit_diag("d2h: %s", strerror(-ret));
		goto out;
	}
	for (i = 0; i < nrecv; i++) {
		uint32_t want = expect(c, count, i, salt);

		if (hr[i] != want && bad++ < 3)
			mpit_diag("%s count %llu: element %llu is 0x%08x, want 0x%08x",
				  c->name, (unsigned long long)count,
				  (unsigned long long)i, hr[i], want);
	}
	ok = !bad;
	if (bad > 3)
		mpit_diag("%s count %llu: %llu elements wrong", c->name,
			  (unsigned long long)count, (unsigned long long)bad);
out:
	if (send && send != recv)
		snpu_mem_free(dev, send);
	if (recv)
		snpu_mem_free(dev, recv);
	free(hs);
	free(hr);
	return ok;
}

int main(int argc, char **argv)
{
	struct snpu_comm_unique_id id = { { 0 } };
	unsigned int ndev = 0;
	char path[32];
	int ok, ret = 0;
	uint32_t salt = 1;
	size_t c, k;

	mpit_init(&argc, &argv, PLAN, &me, &nr);

	/* Join: rank 0 makes the id, MPI carries it to every process. */
	for (;;) {
		snprintf(path, sizeof(path), "/dev/snpu%u", ndev);
		if (access(path, F_OK))
			break;
		ndev++;
	}
	ok = nr <= (int)ndev;
	if (!ok)
		mpit_diag("%d processes, %u devices", nr, ndev);
	if (ok) {
		ret = snpu_open(me, 0, &dev);
		ok = !ret;
		if (!ok)
			mpit_diag("open /dev/snpu%d: %s", me, strerror(-ret));
	}
	if (ok) {
		ret = snpu_stream_create(dev, SNPU_PRIO_NORMAL, 0, &stream);
		if (!ret && me == 0)
			ret = snpu_comm_get_unique_id(dev, &id);
		ok = !ret;
		if (!ok)
			mpit_diag("stream or id: %s", strerror(-ret));
	}
	MPI_Bcast(id.id, SNPU_COMM_ID_BYTES, MPI_BYTE, 0, MPI_COMM_WORLD);
	if (ok) {
		ret = snpu_comm_init_rank(dev, &id, nr, me, &comm);
		ok = !ret;
		if (!ok)
			mpit_diag("join as rank %d of %d: %s", me, nr,
				  strerror(-ret));
	}
	if (!mpit_result(ok, "coll_mpi.join_%d_ranks_by_mpi_bcast", nr)) {
		if (me == 0)
			printf("Bail out! no communicator\n");
		return mpit_finish();
	}

	for (c = 0; c < NCASES; c++)
		for (k = 0; k < NCOUNTS; k++) {
			ok = run_case(&cases[c], counts[k], salt++, false);
			mpit_result(ok, "coll_mpi.%s.count_%llu", cases[c].name,
				    (unsigned long long)counts[k]);
		}

	ok = run_case(&cases[0], 1001, salt++, true);
	mpit_result(ok, "coll_mpi.allreduce_sum_f32_in_place.count_1001");

	/* Every rank leaves after its collectives are done. */
	ret = snpu_comm_destroy(comm);
	if (ret)
		mpit_diag("destroy: %s", strerror(-ret));
	MPI_Barrier(MPI_COMM_WORLD);
	snpu_close(dev);
	mpit_result(!ret, "coll_mpi.destroy");
	return mpit_finish();
}
