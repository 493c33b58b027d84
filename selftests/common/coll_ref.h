/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Host references of the collectives, as the uapi header's "Collectives"
 * defines them, for the comm and mpi suites: each rank's input is a
 * function of (rank, element, salt), so every process computes every
 * rank's input itself, and a reduction is a loop over the ranks in rank
 * order. Needs only the uapi header: raw-ioctl tests and libsnpu's alike.
 */
#ifndef _SNPU_COLL_REF_H
#define _SNPU_COLL_REF_H

#include <stdint.h>
#include <string.h>

#include <linux/snpu.h>

static inline uint32_t cref_f2u(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

static inline float cref_u2f(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* a op b, as the device does it: a the result so far, b the next rank's. */
static inline uint32_t cref_op(uint32_t dtype, uint32_t redop, uint32_t a,
			       uint32_t b)
{
	float fa = cref_u2f(a), fb = cref_u2f(b);

	if (dtype == SNPU_DTYPE_F32)
		return redop == SNPU_REDOP_SUM ? cref_f2u(fa + fb) :
		       cref_f2u(fa > fb ? fa : fb);
	return redop == SNPU_REDOP_SUM ? a + b :
	       ((int32_t)a > (int32_t)b ? a : b);
}

/* Element @i of rank @r's input: f32 values whose sums round. */
static inline uint32_t cref_input(uint32_t dtype, unsigned int r, uint64_t i,
				  uint32_t salt)
{
	uint32_t h = (uint32_t)(i * 2654435761u) ^ (r * 40503u + salt);

	h ^= h >> 13;
	h *= 0x5bd1e995u;
	h ^= h >> 15;
	if (dtype == SNPU_DTYPE_I32)
		return h;
	return cref_f2u(((float)(h % 200001) - 100000.0f) /
			(float)(h % 251 + 1));
}

/*
 * One element of libsnpu_mpi's all-reduce over @hosts hosts of @local
 * devices each (lib/mpi, Documentation/mpi.rst): @v holds the hosts *
 * local devices' inputs in global rank order (host h's device l at
 * h * local + l). Each host reduces its devices in rank order (its
 * reduce-scatter), then the hosts' results are reduced in host order.
 * With one device a host it is the flat loop over the ranks.
 */
static inline uint32_t cref_reduce_hier(uint32_t dtype, uint32_t redop,
					const uint32_t *v, unsigned int hosts,
					unsigned int local)
{
	uint32_t acc = 0, part;
	unsigned int h, l;

	for (h = 0; h < hosts; h++) {
		part = v[h * local];
		for (l = 1; l < local; l++)
			part = cref_op(dtype, redop, part, v[h * local + l]);
		acc = h ? cref_op(dtype, redop, acc, part) : part;
	}
	return acc;
}

#endif /* _SNPU_COLL_REF_H */
