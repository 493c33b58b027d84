// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libsnpu_mpi: the hierarchical communicator of snpu_mpi.h. Per local
 * rank l (a device of this host): a rank of the host's snpu communicator,
 * a duplicate of the MPI communicator for the shards l of every host, a
 * device scratch buffer, and a proxy thread that serves the device's host
 * callbacks (the inter-host step of each collective).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "snpu_mpi.h"

/* The proxies poll their stop flag this often. */
#define PROXY_POLL_NS	(100 * 1000 * 1000LL)

/* The inter-host step of one collective on one local rank. */
struct hop {
	uint64_t shard;		/* device address of the shard */
	uint64_t n;		/* its elements */
	uint32_t dtype, redop;
};

struct lrank {
	struct snpu_mpi_comm *hc;
	unsigned int l;
	struct snpu_device *dev;
	struct snpu_comm *comm;
	MPI_Comm mpi;
	pthread_t proxy;
	bool proxy_started;
	uint64_t pad;		/* scratch: local * shard elements */
	uint64_t pad_bytes;
	/* The proxy's own host buffer: hosts + 1 shards, grown as needed. */
	float *host;
	uint64_t host_bytes;
	uint32_t last_stream;
	bool used;
};

struct snpu_mpi_comm {
	unsigned int local, hosts;
	atomic_bool stop;
	atomic_int error;	/* the first error of a proxy */
	struct lrank lr[];
};

static int mpi_type(uint32_t dtype, uint32_t redop, MPI_Datatype *t, MPI_Op *op)
{
	if (redop != SNPU_REDOP_SUM && redop != SNPU_REDOP_MAX)
		return -EINVAL;
	*op = redop == SNPU_REDOP_SUM ? MPI_SUM : MPI_MAX;
	if (dtype == SNPU_DTYPE_F32)
		*t = MPI_FLOAT;
	else if (dtype == SNPU_DTYPE_I32)
		/* A sum wraps as the device's does: unsigned, no overflow. */
		*t = redop == SNPU_REDOP_SUM ? MPI_UINT32_T : MPI_INT32_T;
	else
		return -EINVAL;
	return 0;
}

/*
 * The proxy's buffer of at least @bytes (only the proxy of @lr uses it):
 * grown, never shrunk, so that collectives of one size allocate once.
 */
static float *host_buf(struct lrank *lr, uint64_t bytes)
{
	float *b;

	if (lr->host_bytes >= bytes)
		return lr->host;
	b = realloc(lr->host, bytes);
	if (!b)
		return NULL;
	lr->host = b;
	lr->host_bytes = bytes;
	return b;
}

/*
 * An f32 sum over the hosts in host order, whatever MPI's algorithms: the
 * shard of @n elements at @buf is cut into @hosts pieces of @p elements
 * (the last padded); MPI_Alltoall() brings host k piece k of every host,
 * which it adds in host order (acc = host 0's, acc += host 1's, ...), and
 * MPI_Allgather() brings every host every summed piece. MPI only moves
 * bytes; each host adds n / hosts elements of each host, and the bytes
 * sent are those of a ring all-reduce, 2 (hosts - 1) / hosts of the shard.
 * @buf has room for 2 * hosts + 1 pieces.
 */
static int ordered_sum(struct lrank *lr, float *buf, uint64_t n,
		       unsigned int hosts)
{
	uint64_t p = (n + hosts - 1) / hosts, j;
	float *mine = buf + hosts * p, *sum = mine + hosts * p;
	unsigned int k;

	/* The padding is never part of a result: any value will do. */
	memset(buf + n, 0, (hosts * p - n) * 4);
	if (MPI_Alltoall(buf, (int)p, MPI_FLOAT, mine, (int)p, MPI_FLOAT,
			 lr->mpi) != MPI_SUCCESS)
		return -EPROTO;
	memcpy(sum, mine, p * 4);
	for (k = 1; k < hosts; k++)
		for (j = 0; j < p; j++)
			sum[j] += mine[k * p + j];
	if (MPI_Allgather(sum, (int)p, MPI_FLOAT, buf, (int)p, MPI_FLOAT,
			  lr->mpi) != MPI_SUCCESS)
		return -EPROTO;
	return 0;
}

/*
 * The inter-host step: device shard -> host -> MPI -> device. An f32 sum
 * rounds, so its order is fixed here (ordered_sum()) rather than left to
 * MPI_Allreduce's algorithm: the same bits on every host and run after
 * run. Maxima and the wrapping i32 sums are exact in any order:
 * MPI_Allreduce.
 */
static int run_hop(struct lrank *lr, const struct hop *h)
{
	bool ordered = h->dtype == SNPU_DTYPE_F32 && h->redop == SNPU_REDOP_SUM;
	unsigned int hosts = lr->hc->hosts;
	uint64_t bytes = h->n * 4;
	uint64_t p = (h->n + hosts - 1) / hosts;
	MPI_Datatype t;
	float *buf;
	MPI_Op op;
	int ret;

	ret = mpi_type(h->dtype, h->redop, &t, &op);
	if (ret)
		return ret;
	buf = host_buf(lr, ordered ? (2 * hosts + 1) * p * 4 : bytes);
	if (!buf)
		return -ENOMEM;
	ret = snpu_memcpy_d2h(lr->dev, buf, h->shard, bytes);
	if (ret)
		return ret;
	if (ordered)
		ret = ordered_sum(lr, buf, h->n, hosts);
	else if (MPI_Allreduce(MPI_IN_PLACE, buf, (int)h->n, t, op,
			       lr->mpi) != MPI_SUCCESS)
		ret = -EPROTO;
	if (ret)
		return ret;
	return snpu_memcpy_h2d(lr->dev, h->shard, buf, bytes);
}

static void *proxy(void *arg)
{
	struct lrank *lr = arg;
	struct snpu_mpi_comm *hc = lr->hc;

	while (!atomic_load(&hc->stop)) {
		struct snpu_callback_info ci;
		struct hop *h;
		int ret, zero = 0;

		ret = snpu_callback_wait(lr->dev, PROXY_POLL_NS, &ci);
		if (ret == -ETIMEDOUT || ret == -EINTR)
			continue;
		if (ret) {
			atomic_compare_exchange_strong(&hc->error, &zero, ret);
			break;
		}
		h = (struct hop *)(uintptr_t)ci.user_data;
		ret = run_hop(lr, h);
		free(h);
		if (ret)
			atomic_compare_exchange_strong(&hc->error, &zero, ret);
		snpu_callback_done(lr->dev, ci.cookie, ret);
	}
	return NULL;
}

static void teardown(struct snpu_mpi_comm *hc)
{
	unsigned int l;

	atomic_store(&hc->stop, true);
	for (l = 0; l < hc->local; l++) {
		struct lrank *lr = &hc->lr[l];

		if (lr->proxy_started)
			pthread_join(lr->proxy, NULL);
		if (lr->pad)
			snpu_mem_free(lr->dev, lr->pad);
		if (lr->comm)
			snpu_comm_destroy(lr->comm);
		if (lr->mpi != MPI_COMM_NULL)
			MPI_Comm_free(&lr->mpi);
		free(lr->host);
	}
	free(hc);
}

int snpu_mpi_comm_init(MPI_Comm world, struct snpu_device *const *devs,
		       unsigned int ndev, struct snpu_mpi_comm **out)
{
	struct snpu_comm **comms = NULL;
	struct snpu_mpi_comm *hc;
	int level, hosts, ret = 0, all;
	unsigned int l;

	int v[3];

	/*
	 * Every host takes part in every MPI call, even with bad arguments:
	 * all agree on failing instead of leaving the others waiting. The
	 * same number of devices on every host (max of ndev and of -ndev).
	 */
	if (MPI_Query_thread(&level) != MPI_SUCCESS)
		return -EPROTO;
	v[0] = ndev > SNPU_COMM_MAX_RANKS ? SNPU_COMM_MAX_RANKS + 1 : (int)ndev;
	v[1] = -v[0];
	v[2] = !devs || !ndev || !out || level != MPI_THREAD_MULTIPLE;
	if (MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_INT, MPI_MAX, world) !=
	    MPI_SUCCESS)
		return -EPROTO;
	if (v[2] || v[0] != -v[1] || v[0] > SNPU_COMM_MAX_RANKS)
		return -EINVAL;
	MPI_Comm_size(world, &hosts);

	hc = calloc(1, sizeof(*hc) + ndev * sizeof(hc->lr[0]));
	comms = calloc(ndev, sizeof(*comms));
	if (!hc || !comms)
		ret = ret ?: -ENOMEM;
	if (hc) {
		hc->local = ndev;
		hc->hosts = hosts;
		for (l = 0; l < ndev; l++)
			hc->lr[l].mpi = MPI_COMM_NULL;
	}
	/* Every host duplicates @world once per local rank, in order. */
	for (l = 0; l < ndev; l++) {
		MPI_Comm c;

		if (MPI_Comm_dup(world, &c) != MPI_SUCCESS) {
			ret = ret ?: -EPROTO;
			continue;
		}
		if (hc)
			hc->lr[l].mpi = c;
		else
			MPI_Comm_free(&c);
	}
	if (!ret)
		ret = snpu_comm_init_all(devs, ndev, comms);
	for (l = 0; !ret && l < ndev; l++) {
		struct lrank *lr = &hc->lr[l];

		lr->hc = hc;
		lr->l = l;
		lr->dev = devs[l];
		lr->comm = comms[l];
	}
	for (l = 0; !ret && l < ndev; l++) {
		ret = -pthread_create(&hc->lr[l].proxy, NULL, proxy, &hc->lr[l]);
		if (!ret)
			hc->lr[l].proxy_started = true;
	}
	free(comms);
	/* Every host succeeded, or every host fails. */
	all = ret;
	if (MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, world) !=
	    MPI_SUCCESS)
		all = -EPROTO;
	if (all && !ret)
		ret = -EPROTO;
	if (ret) {
		if (hc)
			teardown(hc);
		return ret;
	}
	*out = hc;
	return 0;
}

/* A scratch of @bytes for @lr, used on @stream. */
static int scratch(struct lrank *lr, uint32_t stream, uint64_t bytes)
{
	int ret;

	/* The last collective's steps on another stream may still use it. */
	if (lr->used && (lr->last_stream != stream || lr->pad_bytes < bytes)) {
		ret = snpu_stream_synchronize(lr->dev, lr->last_stream, -1);
		if (ret)
			return ret;
	}
	if (lr->pad_bytes < bytes) {
		if (lr->pad)
			snpu_mem_free(lr->dev, lr->pad);
		lr->pad = 0;
		lr->pad_bytes = 0;
		ret = snpu_mem_alloc(lr->dev, bytes, 0, 0, &lr->pad);
		if (ret)
			return ret;
		lr->pad_bytes = bytes;
	}
	lr->last_stream = stream;
	lr->used = true;
	return 0;
}

static int queue_one(struct snpu_mpi_comm *hc, unsigned int l,
		     uint32_t stream, uint64_t send, uint64_t recv,
		     uint64_t count, uint32_t dtype, uint32_t redop)
{
	struct lrank *lr = &hc->lr[l];
	uint64_t s = (count + hc->local - 1) / hc->local;
	uint64_t shard;
	struct hop *h;
	int ret;

	ret = scratch(lr, stream, hc->local * s * 4);
	if (ret)
		return ret;
	shard = lr->pad + (uint64_t)l * s * 4;
	/* The padding is never part of a result: any value will do. */
	ret = snpu_memcpy_async(lr->dev, stream, SNPU_COPY_D2D, lr->pad, send,
				count * 4);
	if (!ret && hc->local * s > count)
		ret = snpu_memset_async(lr->dev, stream, lr->pad + count * 4, 0,
					(hc->local * s - count) * 4);
	/* In place: shard l of the pad. */
	if (!ret)
		ret = snpu_comm_reduce_scatter(lr->comm, stream, lr->pad, shard,
					       s, dtype, redop);
	if (ret)
		return ret;
	h = malloc(sizeof(*h));
	if (!h)
		return -ENOMEM;
	*h = (struct hop){ .shard = shard, .n = s, .dtype = dtype,
			   .redop = redop };
	ret = snpu_launch_host_func(lr->dev, stream, (uint64_t)(uintptr_t)h);
	if (ret) {
		free(h);
		return ret;
	}
	/* In place: shard l is already at l * s of the pad. */
	ret = snpu_comm_allgather(lr->comm, stream, shard, lr->pad, s, dtype);
	if (!ret)
		ret = snpu_memcpy_async(lr->dev, stream, SNPU_COPY_D2D, recv,
					lr->pad, count * 4);
	return ret;
}

int snpu_mpi_allreduce(struct snpu_mpi_comm *hc, const uint32_t *streams,
		       const uint64_t *send, const uint64_t *recv,
		       uint64_t count, uint32_t dtype, uint32_t redop)
{
	MPI_Datatype t;
	MPI_Op op;
	unsigned int l;
	int ret;

	if (!hc || !streams || !send || !recv || !count || count > INT32_MAX)
		return -EINVAL;
	ret = mpi_type(dtype, redop, &t, &op);
	if (ret)
		return ret;
	for (l = 0; l < hc->local; l++) {
		ret = queue_one(hc, l, streams[l], send[l], recv[l], count,
				dtype, redop);
		if (ret)
			return ret;
	}
	return 0;
}

unsigned int snpu_mpi_comm_local(const struct snpu_mpi_comm *hc)
{
	return hc->local;
}

unsigned int snpu_mpi_comm_hosts(const struct snpu_mpi_comm *hc)
{
	return hc->hosts;
}

int snpu_mpi_comm_destroy(struct snpu_mpi_comm *hc)
{
	unsigned int l;
	int ret = 0, err;

	if (!hc)
		return -EINVAL;
	for (l = 0; l < hc->local; l++) {
		struct lrank *lr = &hc->lr[l];

		if (lr->used) {
			err = snpu_stream_synchronize(lr->dev, lr->last_stream,
						      -1);
			ret = ret ?: err;
		}
	}
	err = atomic_load(&hc->error);
	ret = ret ?: err;
	teardown(hc);
	return ret;
}
