// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libsnpu: communicators and collectives - the wrappers of
 * SNPU_IOC_COMM_ID, _JOIN, _DESTROY and _QUERY, NCCL's way: a unique id
 * shared out of band, a rank joined with it on each device, collectives
 * queued as SNPU_OP_COLL tasks on the ranks' streams.
 *
 * A struct snpu_comm is one rank: its device and its handle in that
 * device's file, with the rank and the size the join fixed (neither
 * changes while the rank exists, so no call asks the driver for them).
 * A collective is one task through snpu_submit(), so that a graph
 * capture in progress records it like any task (graph.c).
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static_assert(sizeof(struct snpu_comm_id) == 40,
	      "struct snpu_comm_id changed");
static_assert(sizeof(struct snpu_comm_join) == 56,
	      "struct snpu_comm_join changed");
static_assert(sizeof(struct snpu_comm_query) == 56,
	      "struct snpu_comm_query changed");
static_assert(sizeof(struct snpu_comm_unique_id) == SNPU_COMM_ID_BYTES,
	      "struct snpu_comm_unique_id is the kernel's id");

struct snpu_comm {
	struct snpu_device *dev;
	uint32_t handle;
	uint32_t nranks;
	uint32_t rank;
};

int snpu_comm_get_unique_id(struct snpu_device *dev,
			    struct snpu_comm_unique_id *id)
{
	struct snpu_comm_id c = { .size = sizeof(c) };
	int ret;

	if (!dev || !id)
		return -EINVAL;
	ret = snpu_ioctl(dev->fd, SNPU_IOC_COMM_ID, &c);
	if (!ret)
		memcpy(id->id, c.id, sizeof(id->id));
	return ret;
}

int snpu_comm_init_rank(struct snpu_device *dev,
			const struct snpu_comm_unique_id *id,
			unsigned int nranks, unsigned int rank,
			struct snpu_comm **comm)
{
	struct snpu_comm_join j = {
		.size = sizeof(j),
		.nranks = nranks,
		.rank = rank,
	};
	struct snpu_comm *c;
	int ret;

	if (!dev || !id || !comm || !nranks ||
	    nranks > SNPU_COMM_MAX_RANKS || rank >= nranks)
		return -EINVAL;
	/* Allocated first: a joined rank is never left behind. */
	c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	memcpy(j.id, id->id, sizeof(j.id));
	ret = snpu_ioctl(dev->fd, SNPU_IOC_COMM_JOIN, &j);
	if (ret) {
		free(c);
		return ret;
	}
	c->dev = dev;
	c->handle = j.handle;
	c->nranks = nranks;
	c->rank = rank;
	*comm = c;
	return 0;
}

/* Leave at once and free: the error path of init_all, and abort. */
static int snpu_comm_leave(struct snpu_comm *comm)
{
	int ret;

	ret = snpu_ioctl_handle(comm->dev, SNPU_IOC_COMM_DESTROY, comm->handle,
				SNPU_COMM_DESTROY_FORCE, 0);
	free(comm);
	return ret;
}

int snpu_comm_init_all(struct snpu_device *const *devs, unsigned int ndev,
		       struct snpu_comm **comms)
{
	struct snpu_comm_unique_id id;
	unsigned int i, j;
	int ret;

	if (!devs || !comms || !ndev || ndev > SNPU_COMM_MAX_RANKS)
		return -EINVAL;
	/* A file is one rank at most: refused before anything is made. */
	for (i = 0; i < ndev; i++) {
		if (!devs[i])
			return -EINVAL;
		for (j = 0; j < i; j++)
			if (devs[j] == devs[i])
				return -EINVAL;
	}
	ret = snpu_comm_get_unique_id(devs[0], &id);
	if (ret)
		return ret;
	for (i = 0; i < ndev; i++) {
		ret = snpu_comm_init_rank(devs[i], &id, ndev, i, &comms[i]);
		if (ret)
			break;
	}
	if (!ret)
		return 0;
	/* Nothing queued on them yet: the ranks joined leave at once. */
	while (i--) {
		snpu_comm_leave(comms[i]);
		comms[i] = NULL;
	}
	return ret;
}

int snpu_comm_destroy(struct snpu_comm *comm)
{
	int ret;

	if (!comm)
		return -EINVAL;
	/* Waits for the rank's queued collectives: a signal may end it. */
	ret = snpu_ioctl_handle(comm->dev, SNPU_IOC_COMM_DESTROY, comm->handle,
				0, 1);
	/* Interrupted, or another destroy waits: the rank stays. */
	if (ret == -EINTR || ret == -EBUSY)
		return ret;
	free(comm);
	return ret;
}

int snpu_comm_abort(struct snpu_comm *comm)
{
	if (!comm)
		return -EINVAL;
	return snpu_comm_leave(comm);
}

int snpu_comm_count(const struct snpu_comm *comm)
{
	return comm ? (int)comm->nranks : -EINVAL;
}

int snpu_comm_user_rank(const struct snpu_comm *comm)
{
	return comm ? (int)comm->rank : -EINVAL;
}

uint32_t snpu_comm_handle(const struct snpu_comm *comm)
{
	return comm ? comm->handle : 0;
}

struct snpu_device *snpu_comm_device(const struct snpu_comm *comm)
{
	return comm ? comm->dev : NULL;
}

int snpu_comm_query_handle(struct snpu_device *dev, uint32_t handle,
			   struct snpu_comm_query *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->handle = handle;
	return snpu_ioctl(dev->fd, SNPU_IOC_COMM_QUERY, q);
}

int snpu_comm_query(struct snpu_comm *comm, struct snpu_comm_query *q)
{
	if (!comm || !q)
		return -EINVAL;
	return snpu_comm_query_handle(comm->dev, comm->handle, q);
}

/* One collective of @comm on @stream, as one task. */
static int snpu_comm_coll(struct snpu_comm *comm, uint32_t stream,
			  uint32_t coll, uint32_t dtype, uint32_t redop,
			  uint64_t count, uint64_t send, uint64_t recv,
			  uint32_t root)
{
	struct snpu_task t;

	if (!comm)
		return -EINVAL;
	snpu_prep_coll(&t, stream, comm->handle, coll, dtype, redop, count,
		       send, recv, root);
	return snpu_submit(comm->dev, &t, 1, NULL);
}

int snpu_comm_allreduce(struct snpu_comm *comm, uint32_t stream,
			uint64_t send, uint64_t recv, uint64_t count,
			uint32_t dtype, uint32_t redop)
{
	return snpu_comm_coll(comm, stream, SNPU_COLL_ALLREDUCE, dtype, redop,
			      count, send, recv, 0);
}

int snpu_comm_broadcast(struct snpu_comm *comm, uint32_t stream,
			uint64_t send, uint64_t recv, uint64_t count,
			uint32_t dtype, unsigned int root)
{
	return snpu_comm_coll(comm, stream, SNPU_COLL_BROADCAST, dtype, 0,
			      count, send, recv, root);
}

int snpu_comm_allgather(struct snpu_comm *comm, uint32_t stream,
			uint64_t send, uint64_t recv, uint64_t count,
			uint32_t dtype)
{
	return snpu_comm_coll(comm, stream, SNPU_COLL_ALLGATHER, dtype, 0,
			      count, send, recv, 0);
}

int snpu_comm_reduce_scatter(struct snpu_comm *comm, uint32_t stream,
			     uint64_t send, uint64_t recv, uint64_t count,
			     uint32_t dtype, uint32_t redop)
{
	return snpu_comm_coll(comm, stream, SNPU_COLL_REDUCE_SCATTER, dtype,
			      redop, count, send, recv, 0);
}
