/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The f32 loops of the built-in kernels over vectors of SNPU_VW floats:
 * included once per instruction set, by kernels_f32.c (SSE2, 4 lanes)
 * and kernels_f32_avx2.c (AVX2, 8 lanes), which define before it
 *
 *   SNPU_VW      lanes of a vector, 4 or 8
 *   SNPU_VFN(x)  the name of this build's function or table x
 *   SNPU_VATTR   attributes of every function here: the target
 *                instruction set where the object is not built for it
 *
 * and which hold the FPU while any of it runs. Every function is static:
 * the including file puts them in its struct snpu_f32_ops.
 *
 * Vectors run across independent output elements, never along a sum:
 * each element gets the operations of the scalar loop, in the same
 * order, each rounded once (no fused multiply-add: the objects are built
 * without FMA and with -ffp-contract=off), so both builds give the bits a
 * plain C loop gives. Vectors use GCC's vector extension, and only what
 * sparse also reads: arithmetic, comparisons, bit casts between vectors
 * of one size, loads and stores as copies (no subscripts, no conversions
 * between integer and float vectors).
 */

#define SNPU_V		float __attribute__((vector_size(SNPU_VW * 4)))
#define SNPU_VI		__s32 __attribute__((vector_size(SNPU_VW * 4)))

#ifndef _SNPU_CORE_KERNELS_F32_VEC_ONCE
#define _SNPU_CORE_KERNELS_F32_VEC_ONCE
/*
 * Where a GEMM's operands are: a(i, kk) = a[i * ai + kk * ak], b(kk, j) =
 * b[kk * bk + j * bj], c[i][j] = c[i * n + j]; k terms in each sum.
 */
struct snpu_gemm_args {
	float *c;
	const float *a, *b;
	__u64 n, k, ai, ak, bk, bj;
};
#endif

/* Rows and vectors of columns of the GEMM's register tiles. */
#define SNPU_GEMM_ROWS		4
#define SNPU_GEMM_VECS		2

/*
 * Unaligned loads and stores (an attribute can lower a type's alignment
 * only in a typedef): a copy of the vector's size, one instruction.
 */
static __always_inline SNPU_VATTR SNPU_V
SNPU_VFN(ld)(const float *p)
{
	SNPU_V v;

	__builtin_memcpy(&v, p, sizeof(v));
	return v;
}

static __always_inline SNPU_VATTR void
SNPU_VFN(st)(float *p, SNPU_V v)
{
	__builtin_memcpy(p, &v, sizeof(v));
}

/* @a where @m is all ones, @b where it is 0. */
static __always_inline SNPU_VATTR SNPU_V
SNPU_VFN(sel)(SNPU_VI m, SNPU_V a, SNPU_V b)
{
	return (SNPU_V)(((SNPU_VI)a & m) | ((SNPU_VI)b & ~m));
}

/* @f in every lane, bit for bit (an add to +0.0 would turn -0.0 into +0.0). */
static __always_inline SNPU_VATTR SNPU_V
SNPU_VFN(splat)(float f)
{
	union {
		float f;
		__s32 bits;
	} u = { .f = f };
	SNPU_VI v = { 0 };

	return (SNPU_V)(v + u.bits);
}

static __always_inline SNPU_VATTR float
SNPU_VFN(of)(__u32 bits)
{
	union {
		__u32 bits;
		float f;
	} u = { .bits = bits };

	return u.f;
}

static SNPU_VATTR void
SNPU_VFN(add)(void *c, const void *a, const void *b, __u64 begin, __u64 end)
{
	float *cf = c;
	const float *af = a, *bf = b;
	__u64 i = begin;

	for (; i + SNPU_VW <= end; i += SNPU_VW)
		SNPU_VFN(st)(cf + i, SNPU_VFN(ld)(af + i) + SNPU_VFN(ld)(bf + i));
	for (; i < end; i++)
		cf[i] = af[i] + bf[i];
}

static SNPU_VATTR void
SNPU_VFN(mul)(void *c, const void *a, const void *b, __u64 begin, __u64 end)
{
	float *cf = c;
	const float *af = a, *bf = b;
	__u64 i = begin;

	for (; i + SNPU_VW <= end; i += SNPU_VW)
		SNPU_VFN(st)(cf + i, SNPU_VFN(ld)(af + i) * SNPU_VFN(ld)(bf + i));
	for (; i < end; i++)
		cf[i] = af[i] * bf[i];
}

static SNPU_VATTR void
SNPU_VFN(axpy)(void *y, const void *x, __u32 a_bits, __u64 begin, __u64 end)
{
	const float a = SNPU_VFN(of)(a_bits);
	float *yf = y;
	const float *xf = x;
	__u64 i = begin;

	for (; i + SNPU_VW <= end; i += SNPU_VW)
		SNPU_VFN(st)(yf + i, SNPU_VFN(ld)(yf + i) +
			     SNPU_VFN(ld)(xf + i) * a);
	for (; i < end; i++)
		yf[i] += a * xf[i];
}

/* x where @keep > 0 (ordered), else +0.0: the bits of x under a mask. */
static __always_inline SNPU_VATTR SNPU_V
SNPU_VFN(pos_mask)(SNPU_V keep, SNPU_V x)
{
	const SNPU_V zero = { 0 };

	return (SNPU_V)((SNPU_VI)x & (keep > zero));
}

static SNPU_VATTR void
SNPU_VFN(relu)(void *y, const void *x, __u64 begin, __u64 end)
{
	float *yf = y;
	const float *xf = x;
	__u64 i = begin;
	SNPU_V v;

	for (; i + SNPU_VW <= end; i += SNPU_VW) {
		v = SNPU_VFN(ld)(xf + i);
		SNPU_VFN(st)(yf + i, SNPU_VFN(pos_mask)(v, v));
	}
	for (; i < end; i++)
		yf[i] = xf[i] > 0.0f ? xf[i] : 0.0f;
}

static SNPU_VATTR void
SNPU_VFN(relu_bwd)(void *dx, const void *dy, const void *y, __u64 begin,
		   __u64 end)
{
	float *dxf = dx;
	const float *dyf = dy, *yf = y;
	__u64 i = begin;

	for (; i + SNPU_VW <= end; i += SNPU_VW)
		SNPU_VFN(st)(dxf + i,
			     SNPU_VFN(pos_mask)(SNPU_VFN(ld)(yf + i),
						SNPU_VFN(ld)(dyf + i)));
	for (; i < end; i++)
		dxf[i] = yf[i] > 0.0f ? dyf[i] : 0.0f;
}

/* One row's run: y[i + j] = x[i + j] + bias[j] for j in [0, len). */
static __always_inline SNPU_VATTR void
SNPU_VFN(bias_run)(float *y, const float *x, const float *bias, __u64 len)
{
	__u64 j = 0;

	for (; j + SNPU_VW <= len; j += SNPU_VW)
		SNPU_VFN(st)(y + j, SNPU_VFN(ld)(x + j) + SNPU_VFN(ld)(bias + j));
	for (; j < len; j++)
		y[j] = x[j] + bias[j];
}

static SNPU_VATTR void
SNPU_VFN(bias_add)(void *y, const void *x, const void *bias, __u32 n, __u32 col,
		   __u64 begin, __u64 end)
{
	float *yf = y;
	const float *xf = x, *bf = bias;
	__u64 i = begin, len;

	while (i < end) {
		len = n - col;
		if (len > end - i)
			len = end - i;
		SNPU_VFN(bias_run)(yf + i, xf + i, bf + col, len);
		i += len;
		col = 0;
	}
}

static SNPU_VATTR void
SNPU_VFN(affine)(void *y, const void *x, __u32 a_bits, __u32 b_bits,
		 __u64 begin, __u64 end)
{
	const float a = SNPU_VFN(of)(a_bits), b = SNPU_VFN(of)(b_bits);
	float *yf = y;
	const float *xf = x;
	__u64 i = begin;

	for (; i + SNPU_VW <= end; i += SNPU_VW)
		SNPU_VFN(st)(yf + i, SNPU_VFN(ld)(xf + i) * a + b);
	for (; i < end; i++)
		yf[i] = a * xf[i] + b;
}

/*
 * ---- GEMM -----------------------------------------------------------------
 *
 * The elements a chunk covers are consecutive in row-major order: the end
 * of a row, whole rows, the start of a row. Each run of columns is cut
 * into register tiles: @rows rows (up to SNPU_GEMM_ROWS, where whole rows
 * follow one another) by @vecs vectors of columns, whose sums stay in
 * registers for the whole of k, then the columns left over one at a time.
 * Per kk, a tile loads its vectors of b(kk, .) once and each row's
 * a(i, kk) once, and adds their products to its sums: every element is
 * 0.0 + p(0) + p(1) + ... + p(k - 1), p(kk) = a(i, kk) * b(kk, j), as the
 * scalar loop computes it.
 */

/* b(kk, j0 .. j0 + SNPU_VW - 1): a load, or for NT gathered. */
static __always_inline SNPU_VATTR SNPU_V
SNPU_VFN(gemm_b)(const struct snpu_gemm_args *g, const float *bkk, __u64 j0,
		 const bool gather)
{
	float t[SNPU_VW];
	unsigned int l;

	if (!gather)
		return SNPU_VFN(ld)(bkk + j0);
#pragma GCC unroll 8
	for (l = 0; l < SNPU_VW; l++)
		t[l] = bkk[(j0 + l) * g->bj];
	return SNPU_VFN(ld)(t);
}

/*
 * The tile of rows [i0, i0 + rows) and columns [j0, j0 + vecs * SNPU_VW);
 * @rows, @vecs and @gather are constants where this is inlined, so the
 * sums are registers.
 */
static __always_inline SNPU_VATTR void
SNPU_VFN(gemm_tile)(const struct snpu_gemm_args *g, __u64 i0, __u64 j0,
		    const unsigned int rows, const unsigned int vecs,
		    const bool gather)
{
	SNPU_V acc[SNPU_GEMM_ROWS][SNPU_GEMM_VECS], bv[SNPU_GEMM_VECS];
	const float *ap = g->a + i0 * g->ai, *bkk = g->b;
	unsigned int r, v;
	__u64 kk;

	/* Unrolled, so that each sum is a register (the counts are constants). */
#pragma GCC unroll 8
	for (r = 0; r < rows; r++)
#pragma GCC unroll 8
		for (v = 0; v < vecs; v++)
			acc[r][v] = SNPU_VFN(splat)(0.0f);
	for (kk = 0; kk < g->k; kk++, ap += g->ak, bkk += g->bk) {
#pragma GCC unroll 8
		for (v = 0; v < vecs; v++)
			bv[v] = SNPU_VFN(gemm_b)(g, bkk, j0 + v * SNPU_VW,
						 gather);
#pragma GCC unroll 8
		for (r = 0; r < rows; r++) {
			const float av = ap[r * g->ai];

#pragma GCC unroll 8
			for (v = 0; v < vecs; v++)
				acc[r][v] += bv[v] * av;
		}
	}
#pragma GCC unroll 8
	for (r = 0; r < rows; r++)
#pragma GCC unroll 8
		for (v = 0; v < vecs; v++)
			SNPU_VFN(st)(g->c + (i0 + r) * g->n + j0 + v * SNPU_VW,
				     acc[r][v]);
}

/* Element (i, j) alone: the scalar loop. */
static __always_inline SNPU_VATTR void
SNPU_VFN(gemm_one)(const struct snpu_gemm_args *g, __u64 i, __u64 j)
{
	const float *ap = g->a + i * g->ai, *bp = g->b + j * g->bj;
	float s = 0.0f;
	__u64 kk;

	for (kk = 0; kk < g->k; kk++, ap += g->ak, bp += g->bk)
		s += *ap * *bp;
	g->c[i * g->n + j] = s;
}

/* Rows [i0, i0 + rows), columns [j, j1), @rows and @gather constants. */
static __always_inline SNPU_VATTR void
SNPU_VFN(gemm_run)(const struct snpu_gemm_args *g, __u64 i0, __u64 j, __u64 j1,
		   const unsigned int rows, const bool gather)
{
	unsigned int r;

	for (; j + SNPU_GEMM_VECS * SNPU_VW <= j1; j += SNPU_GEMM_VECS * SNPU_VW)
		SNPU_VFN(gemm_tile)(g, i0, j, rows, SNPU_GEMM_VECS, gather);
	for (; j + SNPU_VW <= j1; j += SNPU_VW)
		SNPU_VFN(gemm_tile)(g, i0, j, rows, 1, gather);
	for (; j < j1; j++)
		for (r = 0; r < rows; r++)
			SNPU_VFN(gemm_one)(g, i0 + r, j);
}

/* @rows whole or partial rows from @i0, columns [j, j1). */
static __always_inline SNPU_VATTR void
SNPU_VFN(gemm_rows)(const struct snpu_gemm_args *g, __u64 i0, __u64 j, __u64 j1,
		    __u64 rows, const bool gather)
{
	for (; rows >= SNPU_GEMM_ROWS; rows -= SNPU_GEMM_ROWS, i0 += SNPU_GEMM_ROWS)
		SNPU_VFN(gemm_run)(g, i0, j, j1, SNPU_GEMM_ROWS, gather);
	for (; rows >= 2; rows -= 2, i0 += 2)
		SNPU_VFN(gemm_run)(g, i0, j, j1, 2, gather);
	if (rows)
		SNPU_VFN(gemm_run)(g, i0, j, j1, 1, gather);
}

/* b's rows are contiguous along j (NN, TN): vector loads. */
static SNPU_VATTR void
SNPU_VFN(gemm_rows_ld)(const struct snpu_gemm_args *g, __u64 i0, __u64 j,
		       __u64 j1, __u64 rows)
{
	SNPU_VFN(gemm_rows)(g, i0, j, j1, rows, false);
}

/* b is stored n x k (NT): b(kk, j) gathered along j. */
static SNPU_VATTR void
SNPU_VFN(gemm_rows_nt)(const struct snpu_gemm_args *g, __u64 i0, __u64 j,
		       __u64 j1, __u64 rows)
{
	SNPU_VFN(gemm_rows)(g, i0, j, j1, rows, true);
}

static SNPU_VATTR void
SNPU_VFN(gemm)(void *c, const void *a, const void *b, __u32 m, __u32 n, __u32 k,
	       __u32 trans, __u64 row, __u32 col, __u64 count)
{
	struct snpu_gemm_args g = {
		.c = c, .a = a, .b = b, .n = n, .k = k,
		.ai = k, .ak = 1, .bk = n, .bj = 1,
	};
	__u64 len;

	if (!n || col >= n)
		return;
	if (trans == SNPU_GEMM_TN) {
		g.ai = 1;
		g.ak = m;
	} else if (trans == SNPU_GEMM_NT) {
		g.bk = 1;
		g.bj = k;
	}
	while (count) {
		if (col || count < n) {
			/* A part of one row. */
			len = n - col;
			if (len > count)
				len = count;
			if (trans == SNPU_GEMM_NT)
				SNPU_VFN(gemm_rows_nt)(&g, row, col, col + len, 1);
			else
				SNPU_VFN(gemm_rows_ld)(&g, row, col, col + len, 1);
			count -= len;
			row++;
			col = 0;
			continue;
		}
		/* Whole rows. */
		len = count / n;
		if (trans == SNPU_GEMM_NT)
			SNPU_VFN(gemm_rows_nt)(&g, row, 0, n, len);
		else
			SNPU_VFN(gemm_rows_ld)(&g, row, 0, n, len);
		row += len;
		count -= len * n;
	}
}

/* ---- COLSUM ---------------------------------------------------------------- */

/*
 * Columns [j, j + vecs * SNPU_VW) over rows [r0, r1): the sums in
 * registers, each column's rows added in increasing order.
 */
static __always_inline SNPU_VATTR void
SNPU_VFN(colsum_tile)(float *out, const float *in, __u64 n, __u64 r0, __u64 r1,
		      __u64 j, bool first, const unsigned int vecs)
{
	SNPU_V acc[4];
	const float *p = in + r0 * n + j;
	unsigned int v;
	__u64 r;

#pragma GCC unroll 4
	for (v = 0; v < vecs; v++)
		acc[v] = first ? SNPU_VFN(splat)(0.0f) :
				 SNPU_VFN(ld)(out + j + v * SNPU_VW);
	for (r = r0; r < r1; r++, p += n)
#pragma GCC unroll 4
		for (v = 0; v < vecs; v++)
			acc[v] += SNPU_VFN(ld)(p + v * SNPU_VW);
#pragma GCC unroll 4
	for (v = 0; v < vecs; v++)
		SNPU_VFN(st)(out + j + v * SNPU_VW, acc[v]);
}

static SNPU_VATTR void
SNPU_VFN(colsum)(void *out, const void *in, __u32 n, __u64 row0, __u64 row1,
		 __u64 col0, __u64 col1, bool first)
{
	float *of = out;
	const float *inf = in;
	__u64 j = col0, r;
	float s;

	for (; j + 4 * SNPU_VW <= col1; j += 4 * SNPU_VW)
		SNPU_VFN(colsum_tile)(of, inf, n, row0, row1, j, first, 4);
	for (; j + SNPU_VW <= col1; j += SNPU_VW)
		SNPU_VFN(colsum_tile)(of, inf, n, row0, row1, j, first, 1);
	for (; j < col1; j++) {
		s = first ? 0.0f : of[j];
		for (r = row0; r < row1; r++)
			s += inf[r * n + j];
		of[j] = s;
	}
}

/* ---- SOFTMAX_XENT, ARGMAX --------------------------------------------------- */

/*
 * e^x in every lane, the same bits as snpu_f32_exp() (kernels_f32.c),
 * whose steps it follows: n = x / ln2 rounded half away from zero, r = (x
 * - n ln2_hi) - n ln2_lo, the same degree 7 polynomial, then p 2^n
 * rounded once; NaN gives x, x above 88.8 +inf, x below -104 +0. n is
 * kept in floats (an integer, |n| <= 151) and truncated by adding and
 * taking away 1.5 * 2^23; 2^n is made of two normal powers of two,
 * 2^(n / 2) 2^(n - n / 2), whose first product with p is exact, so the
 * second rounds p 2^n once, as the scalar code's three cases do.
 */
static __always_inline SNPU_VATTR SNPU_V
SNPU_VFN(vexp)(SNPU_V x)
{
	const SNPU_V zero = { 0 };
	const float magic = 12582912.0f;	/* 1.5 * 2^23 */
	SNPU_V k, t, rn, nf, r, p, xc, res;
	SNPU_VI n, n1, neg;

	/* In range for the arithmetic: the lanes outside are replaced. */
	xc = SNPU_VFN(sel)(x > zero + 88.8f, zero + 88.8f, x);
	xc = SNPU_VFN(sel)(xc < zero - 104.0f, zero - 104.0f, xc);
	xc = SNPU_VFN(sel)(x != x, zero, xc);
	k = xc * 1.44269502f;
	neg = k < zero;
	t = SNPU_VFN(sel)(neg, k - 0.5f, k + 0.5f);
	/* rn = t rounded to nearest, then toward zero: (int)t. */
	rn = (t + magic) - magic;
	rn = SNPU_VFN(sel)(neg, SNPU_VFN(sel)(rn < t, rn + 1.0f, rn),
			   SNPU_VFN(sel)(rn > t, rn - 1.0f, rn));
	nf = rn;
	r = (xc - nf * 0.693145751953125f) - nf * 0.00000142860677f;
	p = zero + 0.000198412701f;
	p = p * r + 0.00138888892f;
	p = p * r + 0.00833333377f;
	p = p * r + 0.0416666679f;
	p = p * r + 0.166666672f;
	p = p * r + 0.5f;
	p = 1.0f + (r + r * r * p);
	/* The integer n, then 2^n1 2^n2 with n1 = n >> 1, n2 = n - n1. */
	n = (SNPU_VI)(nf + magic) - (SNPU_VI)(zero + magic);
	n1 = n >> 1;
	res = p * (SNPU_V)((n1 + 127) << 23);
	res = res * (SNPU_V)((n - n1 + 127) << 23);
	res = SNPU_VFN(sel)(x > zero + 88.8f, zero + SNPU_VFN(of)(0x7f800000),
			    res);
	res = SNPU_VFN(sel)(x < zero - 104.0f, zero, res);
	return SNPU_VFN(sel)(x != x, x, res);
}

/* y[i] = e^x[i] for the @n floats, the last vector padded. */
static SNPU_VATTR void
SNPU_VFN(exp)(void *y, const void *x, __u64 n)
{
	float *yf = y, t[SNPU_VW];
	const float *xf = x;
	__u64 i = 0, j;

	for (; i + SNPU_VW <= n; i += SNPU_VW)
		SNPU_VFN(st)(yf + i, SNPU_VFN(vexp)(SNPU_VFN(ld)(xf + i)));
	if (i == n)
		return;
	for (j = 0; j < SNPU_VW; j++)
		t[j] = i + j < n ? xf[i + j] : 0.0f;
	SNPU_VFN(st)(t, SNPU_VFN(vexp)(SNPU_VFN(ld)(t)));
	for (j = 0; i + j < n; j++)
		yf[i + j] = t[j];
}

/*
 * The maximum of x[0 .. ncls), as "x[0], then each greater one": lanes
 * start from x[0] and keep a greater element (a NaN never is one), then
 * the lanes' maxima are taken in order the same way. Only two zeros of
 * opposite signs could come out differently; x - mx and x[t] - mx, all
 * the maximum is used for, are then the same.
 */
static __always_inline SNPU_VATTR float
SNPU_VFN(row_max)(const float *x, __u32 ncls)
{
	SNPU_V m = SNPU_VFN(splat)(x[0]), v;
	float l[SNPU_VW], mx;
	__u32 j = 1;
	unsigned int i;

	for (; j + SNPU_VW <= ncls; j += SNPU_VW) {
		v = SNPU_VFN(ld)(x + j);
		m = SNPU_VFN(sel)(v > m, v, m);
	}
	SNPU_VFN(st)(l, m);
	mx = l[0];
	for (i = 1; i < SNPU_VW; i++)
		if (l[i] > mx)
			mx = l[i];
	for (; j < ncls; j++)
		if (x[j] > mx)
			mx = x[j];
	return mx;
}

static SNPU_VATTR int
SNPU_VFN(softmax_xent)(void *loss, void *dlogits, const void *logits,
		       const void *labels, __u32 ncls, __u32 scale_bits,
		       __u64 begin, __u64 end)
{
	const float scale = SNPU_VFN(of)(scale_bits);
	const __s32 *lab = labels;
	float *lossf = loss, t[SNPU_VW];
	__u64 r;

	for (r = begin; r < end; r++) {
		const float *x = (const float *)logits + r * ncls;
		float *d = (float *)dlogits + r * ncls;
		__s32 lt = lab[r];
		float mx, xt, s, et;
		__u32 j, l;
		SNPU_V sv;
		union {
			float f;
			__u32 bits;
		} u;

		if (lt < 0 || (__u32)lt >= ncls)
			return -EDOM;
		mx = SNPU_VFN(row_max)(x, ncls);
		xt = x[lt];
		/* e[j] = exp(x[j] - mx) into d (which may be x itself). */
		for (j = 0; j + SNPU_VW <= ncls; j += SNPU_VW)
			SNPU_VFN(st)(d + j, SNPU_VFN(vexp)(SNPU_VFN(ld)(x + j) - mx));
		if (j < ncls) {
			for (l = 0; l < SNPU_VW; l++)
				t[l] = j + l < ncls ? x[j + l] - mx : 0.0f;
			SNPU_VFN(st)(t, SNPU_VFN(vexp)(SNPU_VFN(ld)(t)));
			for (l = 0; j + l < ncls; l++)
				d[j + l] = t[l];
		}
		/* Their sum from j = 0 up: one add after the other. */
		s = 0.0f;
		for (j = 0; j < ncls; j++)
			s += d[j];
		et = d[lt];
		u.f = s;
		u.bits = snpu_f32_log_bits(u.bits);
		lossf[r] = u.f - (xt - mx);
		/* (e / s - (j == t)) * scale; for j != t, e / s - 0 is e / s. */
		sv = SNPU_VFN(splat)(s);
		for (j = 0; j + SNPU_VW <= ncls; j += SNPU_VW)
			SNPU_VFN(st)(d + j, SNPU_VFN(ld)(d + j) / sv * scale);
		for (; j < ncls; j++)
			d[j] = d[j] / s * scale;
		d[lt] = (et / s - 1.0f) * scale;
	}
	return 0;
}

static __always_inline SNPU_VATTR SNPU_VI
SNPU_VFN(ldi)(const __s32 *p)
{
	return (SNPU_VI)SNPU_VFN(ld)((const float *)p);
}

/*
 * The first maximum of each row: lanes start from x[0] at index 0 and
 * take an element that compares greater (a NaN never does), so each
 * keeps its first maximum; then among the lanes the greatest value, and
 * of equal values the lowest index: the first index whose element equals
 * the maximum, as the scalar loop finds it.
 */
static SNPU_VATTR void
SNPU_VFN(argmax)(void *out, const void *in, __u32 ncls, __u64 begin, __u64 end)
{
	__s32 *o = out, il[SNPU_VW];
	float bl[SNPU_VW], best;
	SNPU_VI at, idx, gt, step;
	SNPU_V b, v;
	unsigned int l;
	__u64 r;
	__u32 j;

	for (l = 0; l < SNPU_VW; l++)
		il[l] = (__s32)l + 1;
	step = SNPU_VFN(ldi)(il) - SNPU_VFN(ldi)(il) + SNPU_VW;
	for (r = begin; r < end; r++) {
		const float *x = (const float *)in + r * ncls;
		__s32 a = 0;

		best = x[0];
		j = 1;
		if (ncls > SNPU_VW) {
			b = SNPU_VFN(splat)(x[0]);
			at = step - step;
			for (l = 0; l < SNPU_VW; l++)
				il[l] = (__s32)l + 1;
			idx = SNPU_VFN(ldi)(il);
			for (; j + SNPU_VW <= ncls; j += SNPU_VW, idx += step) {
				v = SNPU_VFN(ld)(x + j);
				gt = v > b;
				b = SNPU_VFN(sel)(gt, v, b);
				at = (idx & gt) | (at & ~gt);
			}
			SNPU_VFN(st)(bl, b);
			SNPU_VFN(st)((float *)il, (SNPU_V)at);
			for (l = 0; l < SNPU_VW; l++) {
				if (bl[l] > best ||
				    (bl[l] == best && il[l] < a)) {
					best = bl[l];
					a = il[l];
				}
			}
		}
		for (; j < ncls; j++) {
			if (x[j] > best) {
				best = x[j];
				a = (__s32)j;
			}
		}
		o[r] = a;
	}
}

#undef SNPU_V
#undef SNPU_VI
#undef SNPU_GEMM_ROWS
#undef SNPU_GEMM_VECS
