// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The reductions of the collectives, in 16-byte vectors (GCC's vector
 * extensions: SSE2 on x86-64). Like kernels_f32.c, this object is built
 * with SSE in the module (see Kbuild) and its functions run only between
 * kernel_fpu_begin() and kernel_fpu_end().
 *
 * Every lane does what the scalar expression does, in the same order:
 * ((s0 op s1) op s2) op s3, an f32 sum rounding each addition (nothing is
 * fused or reassociated), an i32 sum wrapping, a max "a > b ? a : b".
 * So a result never depends on how the elements were cut into vectors,
 * passes or blocks.
 */
#include "coll.h"

#ifndef __KERNEL__
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
#endif

/* Four lanes, as the three element types they are read as. */
union snpu_v4 {
	__attribute__((vector_size(16))) __u32 vu;
	__attribute__((vector_size(16))) __s32 vi;
	__attribute__((vector_size(16))) float vf;
};

/* The operators, by type: a constant argument of the loops below. */
enum snpu_coll_kind {
	SNPU_SUM_F32,
	SNPU_MAX_F32,
	SNPU_SUM_I32,
	SNPU_MAX_I32,
};

/* Four elements from @p + 4 * @i (4-byte aligned only). */
static __always_inline union snpu_v4
snpu_vload(const void *p, __u64 i)
{
	union snpu_v4 v;

	__builtin_memcpy(&v, (const char *)p + i * 4, sizeof(v));
	return v;
}

static __always_inline void
snpu_vstore(void *p, __u64 i, union snpu_v4 v)
{
	__builtin_memcpy((char *)p + i * 4, &v, sizeof(v));
}

/* a op b in every lane; a compare gives all-ones lanes where it holds. */
static __always_inline union snpu_v4
snpu_vop(union snpu_v4 a, union snpu_v4 b, const int kind)
{
	union snpu_v4 r, m;

	switch (kind) {
	case SNPU_SUM_F32:
		r.vf = a.vf + b.vf;
		break;
	case SNPU_MAX_F32:
		m.vi = a.vf > b.vf;
		r.vi = (a.vi & m.vi) | (b.vi & ~m.vi);
		break;
	case SNPU_SUM_I32:
		r.vu = a.vu + b.vu;
		break;
	default:
		m.vi = a.vi > b.vi;
		r.vi = (a.vi & m.vi) | (b.vi & ~m.vi);
		break;
	}
	return r;
}

/* The same on one element, for the tail of a pass. */
static __always_inline __u32
snpu_sop(__u32 a, __u32 b, const int kind)
{
	union {
		__u32 u;
		float f;
	} x = { .u = a }, y = { .u = b }, r;

	switch (kind) {
	case SNPU_SUM_F32:
		r.f = x.f + y.f;
		return r.u;
	case SNPU_MAX_F32:
		return x.f > y.f ? a : b;
	case SNPU_SUM_I32:
		return a + b;
	default:
		return (__s32)a > (__s32)b ? a : b;
	}
}

/*
 * One pass over @n elements with @nsrc sources, both constants: dst[i] =
 * ((first op s0[i]) op s1[i]) ..., first being acc[i], or s0[i] itself
 * (then starting from s1) when there is no @acc. Every source of an
 * element is read before the element is stored, so @dst may be @acc or
 * any source.
 */
static __always_inline void
snpu_pass(void *dst, const void *acc, const void *const *src, const int nsrc,
	  __u64 n, const int kind)
{
	const __u32 *a = acc, *s0 = src[0];
	const __u32 *s1 = nsrc > 1 ? src[1] : s0;
	const __u32 *s2 = nsrc > 2 ? src[2] : s0;
	const __u32 *s3 = nsrc > 3 ? src[3] : s0;
	__u32 *d = dst, v;
	union snpu_v4 w;
	__u64 i = 0;

	for (; i + 4 <= n; i += 4) {
		w = a ? snpu_vop(snpu_vload(a, i), snpu_vload(s0, i), kind) :
			snpu_vload(s0, i);
		if (nsrc > 1)
			w = snpu_vop(w, snpu_vload(s1, i), kind);
		if (nsrc > 2)
			w = snpu_vop(w, snpu_vload(s2, i), kind);
		if (nsrc > 3)
			w = snpu_vop(w, snpu_vload(s3, i), kind);
		snpu_vstore(d, i, w);
	}
	for (; i < n; i++) {
		v = a ? snpu_sop(a[i], s0[i], kind) : s0[i];
		if (nsrc > 1)
			v = snpu_sop(v, s1[i], kind);
		if (nsrc > 2)
			v = snpu_sop(v, s2[i], kind);
		if (nsrc > 3)
			v = snpu_sop(v, s3[i], kind);
		d[i] = v;
	}
}

/* snpu_pass() with the sources' count made a constant. */
static __always_inline void
snpu_pass_n(void *dst, const void *acc, const void *const *src, __u32 nsrc,
	    __u64 n, const int kind)
{
	switch (nsrc) {
	case 1:
		snpu_pass(dst, acc, src, 1, n, kind);
		break;
	case 2:
		snpu_pass(dst, acc, src, 2, n, kind);
		break;
	case 3:
		snpu_pass(dst, acc, src, 3, n, kind);
		break;
	default:
		snpu_pass(dst, acc, src, 4, n, kind);
		break;
	}
}

/**
 * snpu_coll_reduce_pass() - one pass of a reduction
 * @dtype: SNPU_DTYPE_*
 * @redop: SNPU_REDOP_*
 * @dst: the @n result elements
 * @acc: the result so far (may be @dst), or NULL to start from @src[0]
 * @src: the sources, in rank order
 * @nsrc: their number, 1..SNPU_COLL_PASS
 * @n: elements
 *
 * dst[i] = ((acc[i] op src[0][i]) op src[1][i]) ..., or without @acc
 * (src[0][i] op src[1][i]) .... @dst may be @acc or any of @src.
 */
void snpu_coll_reduce_pass(__u32 dtype, __u32 redop, void *dst,
			   const void *acc, const void *const *src,
			   __u32 nsrc, __u64 n)
{
	if (dtype == SNPU_DTYPE_F32 && redop == SNPU_REDOP_MAX)
		snpu_pass_n(dst, acc, src, nsrc, n, SNPU_MAX_F32);
	else if (dtype == SNPU_DTYPE_F32)
		snpu_pass_n(dst, acc, src, nsrc, n, SNPU_SUM_F32);
	else if (redop == SNPU_REDOP_MAX)
		snpu_pass_n(dst, acc, src, nsrc, n, SNPU_MAX_I32);
	else
		snpu_pass_n(dst, acc, src, nsrc, n, SNPU_SUM_I32);
}

/**
 * snpu_coll_reduce() - reduce elements over every rank, in rank order
 * @dtype: SNPU_DTYPE_*
 * @redop: SNPU_REDOP_*
 * @dst: the @n result elements
 * @base: each rank's send buffer, @nsrc of them, in rank order
 * @off: the first element reduced, in every @base
 * @nsrc: ranks, 1..SNPU_COMM_MAX_RANKS
 * @scratch: room for SNPU_COLL_TILE elements when @nsrc is above
 *           SNPU_COLL_PASS (else unused, may be NULL)
 * @n: elements
 *
 * dst[i] = (...(base[0][off + i] op base[1][off + i]) ...) op
 * base[nsrc - 1][off + i]. Up to SNPU_COLL_PASS ranks take one pass over
 * the elements; more take tiles of SNPU_COLL_TILE elements, each reduced
 * in passes that keep the partial result in @scratch and write @dst only
 * in the last one: @dst may be where one of the sources is.
 */
void snpu_coll_reduce(__u32 dtype, __u32 redop, void *dst,
		      const void *const *base, __u64 off, __u32 nsrc,
		      void *scratch, __u64 n)
{
	const void *src[SNPU_COLL_PASS];
	__u64 t, m;
	__u32 j, g, i;

	for (t = 0; t < n; t += m) {
		m = n - t;
		if (nsrc > SNPU_COLL_PASS && m > SNPU_COLL_TILE)
			m = SNPU_COLL_TILE;
		for (j = 0; j < nsrc; j += g) {
			bool last;

			g = nsrc - j;
			if (g > SNPU_COLL_PASS - !!j)
				g = SNPU_COLL_PASS - !!j;
			last = j + g == nsrc;
			for (i = 0; i < g; i++)
				src[i] = (const char *)base[j + i] +
					 (off + t) * SNPU_COLL_ESIZE;
			snpu_coll_reduce_pass(dtype, redop,
					      last ? (char *)dst +
						     t * SNPU_COLL_ESIZE :
						     scratch,
					      j ? scratch : NULL, src, g, m);
		}
	}
}
