/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the comm suite: raw ioctls of the communicators, collective
 * tasks, and a group of ranks, each a file of its own device (device r
 * modulo the devices there are), with a stream and its rank handle.
 *
 * The suite runs with the module loaded with devices=4 (run_vm.sh).
 */
#ifndef _COMM_UTIL_H
#define _COMM_UTIL_H

#include <math.h>
#include <signal.h>
#include <sys/wait.h>

#include "snpu_test.h"
#include "coll_ref.h"

#define COMM_MAX	8

/* Hang guard of a wait in these tests: generous, never a pass condition. */
#define COMM_WAIT_NS	(120 * NS_PER_SEC)

static inline int comm_open(unsigned int dev)
{
	char path[32];
	int fd;

	snprintf(path, sizeof(path), "/dev/snpu%u", dev);
	fd = open(path, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Devices there are: /dev/snpu0 .. */
static inline unsigned int comm_devices(void)
{
	unsigned int n = 0;
	char path[32];

	for (;;) {
		snprintf(path, sizeof(path), "/dev/snpu%u", n);
		if (access(path, F_OK))
			return n;
		n++;
	}
}

static inline int comm_id(int fd, uint8_t id[SNPU_COMM_ID_BYTES])
{
	struct snpu_comm_id c = { .size = sizeof(c) };
	int ret = snpu_ioc(fd, SNPU_IOC_COMM_ID, &c);

	if (!ret)
		memcpy(id, c.id, SNPU_COMM_ID_BYTES);
	return ret;
}

static inline int comm_join(int fd, const uint8_t id[SNPU_COMM_ID_BYTES],
			    uint32_t nranks, uint32_t rank, uint32_t *handle)
{
	struct snpu_comm_join j = {
		.size = sizeof(j), .nranks = nranks, .rank = rank,
	};
	int ret;

	memcpy(j.id, id, SNPU_COMM_ID_BYTES);
	ret = snpu_ioc(fd, SNPU_IOC_COMM_JOIN, &j);
	if (!ret && handle)
		*handle = j.handle;
	return ret;
}

static inline int comm_destroy(int fd, uint32_t handle, uint32_t flags)
{
	return snpu_handle_op(fd, SNPU_IOC_COMM_DESTROY, handle, flags);
}

static inline int comm_query(int fd, uint32_t handle,
			     struct snpu_comm_query *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->handle = handle;
	return snpu_ioc(fd, SNPU_IOC_COMM_QUERY, q);
}

static inline struct snpu_task t_coll(uint32_t stream, uint32_t comm,
				      uint32_t coll, uint32_t dtype,
				      uint32_t redop, uint64_t count,
				      uint64_t send, uint64_t recv,
				      uint32_t root)
{
	struct snpu_task t;

	memset(&t, 0, sizeof(t));
	t.op = SNPU_OP_COLL;
	t.stream = stream;
	t.coll.comm = comm;
	t.coll.coll = coll;
	t.coll.dtype = dtype;
	t.coll.redop = redop;
	t.coll.count = count;
	t.coll.send = send;
	t.coll.recv = recv;
	t.coll.root = root;
	return t;
}

/* One rank: its file, stream, handle and buffers. */
struct rank {
	int fd;
	uint32_t stream;
	uint32_t comm;
	uint64_t send;
	uint64_t recv;
	uint64_t bytes;
};

/* @n ranks of one communicator, rank r on device r % @ndev. */
struct rgroup {
	unsigned int n;
	struct rank r[COMM_MAX];
	uint8_t id[SNPU_COMM_ID_BYTES];
};

/* Open, create streams and join: 0 or -errno. */
static inline int group_init(struct rgroup *g, unsigned int n,
			     unsigned int ndev)
{
	unsigned int i;
	int ret;

	memset(g, 0, sizeof(*g));
	g->n = n;
	for (i = 0; i < n; i++)
		g->r[i].fd = -1;
	for (i = 0; i < n; i++) {
		ret = comm_open(i % ndev);
		if (ret < 0)
			return ret;
		g->r[i].fd = ret;
		ret = snpu_stream_create(g->r[i].fd, SNPU_PRIO_NORMAL,
					 &g->r[i].stream);
		if (ret)
			return ret;
	}
	ret = comm_id(g->r[0].fd, g->id);
	for (i = 0; !ret && i < n; i++)
		ret = comm_join(g->r[i].fd, g->id, n, i, &g->r[i].comm);
	return ret;
}

static inline void group_fini(struct rgroup *g)
{
	unsigned int i;

	for (i = 0; i < g->n; i++)
		if (g->r[i].fd >= 0)
			close(g->r[i].fd);
	g->n = 0;
}

/* Give every rank a send and a recv buffer of @send and @recv bytes. */
static inline int group_alloc(struct rgroup *g, uint64_t send, uint64_t recv)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; !ret && i < g->n; i++) {
		g->r[i].bytes = recv;
		ret = snpu_alloc(g->r[i].fd, send, 0, &g->r[i].send);
		if (!ret)
			ret = snpu_alloc(g->r[i].fd, recv, 0, &g->r[i].recv);
	}
	return ret;
}

/* Queue one collective on every rank, rank 0 first: 0 or the first error. */
static inline int group_coll(struct rgroup *g, uint32_t coll, uint32_t dtype,
			     uint32_t redop, uint64_t count, uint32_t root)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; !ret && i < g->n; i++) {
		struct snpu_task t = t_coll(g->r[i].stream, g->r[i].comm,
					    coll, dtype, redop, count,
					    g->r[i].send, g->r[i].recv, root);

		ret = snpu_submit1(g->r[i].fd, t);
	}
	return ret;
}

/* Wait for every rank's stream; the first failure's errno, or 0. */
static inline int group_sync(struct rgroup *g, int *errors)
{
	unsigned int i;
	int ret, first = 0;

	for (i = 0; i < g->n; i++) {
		int err = 0;

		ret = snpu_stream_sync(g->r[i].fd, g->r[i].stream,
				       COMM_WAIT_NS, &err);
		if (ret)
			return ret;
		if (errors)
			errors[i] = err;
		if (err && !first)
			first = err;
	}
	return first;
}

/* ---- host references ------------------------------------------------ */

static inline bool snpu_coll_reduces_t(uint32_t coll)
{
	return coll == SNPU_COLL_ALLREDUCE || coll == SNPU_COLL_REDUCE_SCATTER;
}

#endif /* _COMM_UTIL_H */
