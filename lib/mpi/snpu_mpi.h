/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libsnpu_mpi: a communicator over hosts, for MPI programs (optional:
 * built when pkg-config finds Open MPI, ompi-c). Each MPI process is one
 * host with one or more snpu devices; one collective of the hierarchical
 * communicator runs on every host's devices as
 *
 *   1. a reduce-scatter over the host's devices (an snpu communicator of
 *      the host's files, snpu_comm_init_all()): local rank l holds shard l
 *      of the host's reduction;
 *   2. on local rank l's stream, a host function served by the proxy
 *      thread of local rank l: it copies the shard to the host, reduces
 *      it with shard l of every other host (over an MPI communicator of
 *      its own per local rank), and copies it back. An f32 sum moves the
 *      hosts' pieces with MPI_Alltoall and MPI_Allgather and adds them in
 *      host order itself, so its bits are those of the hierarchical order
 *      (each host's devices in rank order, then the hosts in rank order)
 *      whatever MPI's algorithms; maxima and i32 sums, exact in any
 *      order, use MPI_Allreduce;
 *   3. an all-gather over the host's devices: every local rank holds the
 *      whole result.
 *
 * All of it is queued on the streams in order, and the call returns at
 * once, as snpu_comm_allreduce() does: the result is there when the
 * stream is. See Documentation/mpi.rst.
 */
#ifndef SNPU_MPI_H
#define SNPU_MPI_H

#include <stdint.h>

#include <mpi.h>
#include <snpu.h>

struct snpu_mpi_comm;

/*
 * Collective over @world (every process calls it; MPI initialised with
 * MPI_THREAD_MULTIPLE): make this process one host with the @ndev devices
 * @devs (the same number on every host). Their files' host callbacks
 * belong to the communicator's proxy threads until snpu_mpi_comm_destroy().
 * Return: 0 or -errno (-EINVAL for bad arguments or another thread level,
 * -EPROTO for an MPI failure).
 */
int snpu_mpi_comm_init(MPI_Comm world, struct snpu_device *const *devs,
		       unsigned int ndev, struct snpu_mpi_comm **hc);

/*
 * Queue an all-reduce of @count elements of @dtype with @redop on every
 * local device l: @send[l] and @recv[l] on @streams[l]. Every host must
 * queue the same collectives in the same order. Return: 0 or -errno
 * (nothing queued on a device whose call failed).
 */
int snpu_mpi_allreduce(struct snpu_mpi_comm *hc, const uint32_t *streams,
		       const uint64_t *send, const uint64_t *recv,
		       uint64_t count, uint32_t dtype, uint32_t redop);

/* Local devices and hosts of @hc. */
unsigned int snpu_mpi_comm_local(const struct snpu_mpi_comm *hc);
unsigned int snpu_mpi_comm_hosts(const struct snpu_mpi_comm *hc);

/*
 * Wait for every queued collective (the streams used), stop the proxies,
 * leave the communicators and free @hc. Collective over the hosts.
 * Return: 0 or the first error.
 */
int snpu_mpi_comm_destroy(struct snpu_mpi_comm *hc);

#endif /* SNPU_MPI_H */
