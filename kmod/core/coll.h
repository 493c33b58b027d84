/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Collectives: the checks of an SNPU_OP_COLL task that need no handle or
 * address, the plan of each rank's steps, and the reductions. Pure C,
 * shared by the module and the native tests.
 *
 * A collective of n ranks runs as steps per rank (see the uapi header,
 * "Collectives"): a rank's step k is either a reduction of its own chunk
 * over every rank's send buffer in rank order, or a copy of a range of
 * one rank's buffer (its own or its predecessor's in the ring) into its
 * own recv buffer. A step may start once every rank has reached the
 * collective, the rank's step k - 1 is done, and the rank it copies from
 * has done the steps that produced what it reads (@wait_rank,
 * @wait_done). Those rules are all the ordering there is: the plan is
 * built so that no step writes a range that a step of another rank may
 * still read (see coll.c).
 */
#ifndef _SNPU_CORE_COLL_H
#define _SNPU_CORE_COLL_H

#include "core.h"

/* Elements of every SNPU_DTYPE_*: 4 bytes. */
#define SNPU_COLL_ESIZE		4

/**
 * struct snpu_coll_desc - what every rank of a collective agrees on
 * @coll: SNPU_COLL_*
 * @dtype: SNPU_DTYPE_*
 * @redop: SNPU_REDOP_*, or 0 for a collective that does not reduce
 * @root: BROADCAST's root rank, else 0
 * @nranks: ranks of the communicator
 * @count: the task's @count
 */
struct snpu_coll_desc {
	__u32 coll;
	__u32 dtype;
	__u32 redop;
	__u32 root;
	__u32 nranks;
	__u64 count;
};

/* Kinds of a step. */
#define SNPU_CSTEP_REDUCE	1	/* own chunk, reduced over every send */
#define SNPU_CSTEP_COPY		2	/* a range of one rank's buffer */

/* Buffers of a rank. */
#define SNPU_CBUF_SEND		0
#define SNPU_CBUF_RECV		1

/* @wait_rank of a step that waits for no other rank. */
#define SNPU_CSTEP_NO_WAIT	0xffffffffU

/**
 * struct snpu_coll_step - one step of one rank
 * @kind: SNPU_CSTEP_*
 * @peer: COPY: the rank read from (the rank itself or its predecessor)
 * @peer_buf: COPY: SNPU_CBUF_* of @peer read from
 * @wait_rank: the rank whose progress the step waits for, or
 *             SNPU_CSTEP_NO_WAIT
 * @wait_done: how many steps @wait_rank must have done
 * @src_off: element offset read: in @peer's buffer (COPY), in every
 *           rank's send buffer (REDUCE)
 * @dst_off: element offset written in the rank's recv buffer
 * @elems: elements, possibly 0
 */
struct snpu_coll_step {
	__u32 kind;
	__u32 peer;
	__u32 peer_buf;
	__u32 wait_rank;
	__u32 wait_done;
	__u64 src_off;
	__u64 dst_off;
	__u64 elems;
};

int snpu_coll_check(const struct snpu_task *t);
bool snpu_coll_reduces(__u32 coll);
int snpu_coll_extents(const struct snpu_coll_desc *d, __u64 *send_bytes,
		      __u64 *recv_bytes);
int snpu_coll_check_buffers(const struct snpu_coll_desc *d, __u32 rank,
			    __u64 send, __u64 recv);
void snpu_coll_chunk(const struct snpu_coll_desc *d, __u32 c, __u64 *begin,
		     __u64 *elems);
__u32 snpu_coll_nsteps(const struct snpu_coll_desc *d, __u32 rank);
void snpu_coll_step(const struct snpu_coll_desc *d, __u32 rank, __u32 k,
		    struct snpu_coll_step *st);

/*
 * Sources one reduction pass takes (snpu_coll_reduce_pass()), and the
 * elements of the scratch a reduction of more ranks than that needs.
 */
#define SNPU_COLL_PASS		4
#define SNPU_COLL_TILE		2048

void snpu_coll_reduce_pass(__u32 dtype, __u32 redop, void *dst,
			   const void *acc, const void *const *src,
			   __u32 nsrc, __u64 n);
void snpu_coll_reduce(__u32 dtype, __u32 redop, void *dst,
		      const void *const *base, __u64 off, __u32 nsrc,
		      void *scratch, __u64 n);

#endif /* _SNPU_CORE_COLL_H */
