// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libsnpu: the kernel's checks of a task descriptor, built into the
 * library so that graph capture refuses a task during recording with the
 * errno SNPU_IOC_SUBMIT would give (see graph.c). kmod/core is pure C
 * (GPL-2.0 OR MIT) that the module and the native unit tests build; the
 * library uses it under MIT. Only snpu_task_check() (with
 * snpu_coll_check()), snpu_kernel_buffers(), snpu_kernel_writes() and,
 * through snpu_coll_ranges() below, snpu_coll_extents() and
 * snpu_coll_check_buffers() are called; the exported symbol list
 * (libsnpu.map) keeps all of it local to libsnpu.so.
 */
#include <stdint.h>

#include "../kmod/core/task.c"
#include "../kmod/core/coll.c"
#include "../kmod/core/kernels.c"
#include "../kmod/core/kernels_f32.c"
#include "../kmod/core/kernels_f32_avx2.c"

/**
 * snpu_coll_ranges() - the buffers of a collective task of one rank
 * @t: an SNPU_OP_COLL task that snpu_task_check() accepts
 * @nranks: the ranks of the communicator its handle names
 * @rank: that handle's rank
 * @send_bytes: out: the extent of @t->coll.send
 * @recv_bytes: out: the extent of @t->coll.recv
 *
 * The checks SNPU_IOC_SUBMIT makes once it knows the rank: the root
 * below @nranks, the two buffers apart or placed as the in-place form
 * has them.
 *
 * Return: 0, or -EINVAL.
 */
int snpu_coll_ranges(const struct snpu_task *t, uint32_t nranks,
		     uint32_t rank, uint64_t *send_bytes, uint64_t *recv_bytes)
{
	struct snpu_coll_desc d = {
		.coll = t->coll.coll, .dtype = t->coll.dtype,
		.redop = t->coll.redop, .root = t->coll.root,
		.nranks = nranks, .count = t->coll.count,
	};
	__u64 sb, rb;

	if (rank >= nranks || t->coll.root >= nranks ||
	    snpu_coll_extents(&d, &sb, &rb) ||
	    snpu_coll_check_buffers(&d, rank, t->coll.send, t->coll.recv))
		return -EINVAL;
	*send_bytes = sb;
	*recv_bytes = rb;
	return 0;
}
