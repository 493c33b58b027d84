/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * The MLP of snpu-train, on the CPU in plain C: the reference the device's
 * training is compared with.
 *
 * Model: in -> hidden (ReLU) -> classes, softmax cross-entropy, minibatch
 * SGD. Everything here is what the device path does, in the same order of
 * operations, in f32 (build with -ffp-contract=off: every product is
 * rounded, as the device's kernels do):
 *
 *   xn     = a * x + b               input normalisation (AFFINE)
 *   z1     = xn W1                   GEMM, sums over k from 0.0f, k = 0..
 *   h1     = relu(z1 + b1)           BIAS_ADD, RELU
 *   logits = h1 W2 + b2              GEMM, BIAS_ADD
 *   loss, dlogits = softmax_xent(logits, labels), scale 1 / batch
 *   dW2 = h1^T dlogits  db2 = colsum(dlogits)       GEMM_TN, COLSUM
 *   dh1 = dlogits W2^T                               GEMM_NT
 *   dz1 = h1 > 0 ? dh1 : 0                          RELU_BWD
 *   dW1 = xn^T dz1      db1 = colsum(dz1)
 *   W2 += -lr dW2, b2 += -lr db2, W1 += -lr dW1, b1 += -lr db1   (AXPY)
 *
 * The softmax computes with the device's own exp and log (kmod/core has
 * no libm: kmod/core/kernels_f32_math.h, included here) and the kernel's
 * formula, so the reference's weights are the device's, bit for bit.
 *
 * Initialisation and batch order come from a documented PRNG, so that a
 * seed gives the same run on the CPU and on the device: SplitMix64 (state
 * += 0x9e3779b97f4a7c15, then the usual two xor-shift-multiply rounds).
 * A weight of a layer with fan-in i and fan-out o is (2u - 1) r with u the
 * top 24 bits of the next number over 2^24 and r = sqrt(6 / (i + o))
 * (Glorot uniform), W1 first, row by row, then W2; biases start at 0.
 * Each epoch visits the training items in the order of a Fisher-Yates
 * shuffle (j = next % (i + 1), i from n - 1 down to 1) of a generator
 * seeded with seed + 1 + epoch.
 *
 * Header only; snpu-train, its unit tests and the train kselftests include
 * it.
 */
#ifndef SNPU_TOOLS_MLP_H
#define SNPU_TOOLS_MLP_H

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../kmod/core/kernels_f32_math.h"


/* The normalisation: about zero mean and unit deviation for the data. */
#define MLP_NORM_A	(1.0f / 90.0f)
#define MLP_NORM_B	(-0.8f)

struct mlp_cfg {
	uint32_t in, hid, out;	/* layer sizes */
	uint32_t batch;
	float lr;
	uint64_t seed;
};

static inline uint64_t mlp_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline void mlp_init_layer(uint64_t *s, float *w, uint32_t fin,
				  uint32_t fout)
{
	float r = (float)sqrt(6.0 / ((double)fin + fout));
	uint64_t i;

	for (i = 0; i < (uint64_t)fin * fout; i++) {
		float u = (float)(mlp_rand(s) >> 40) * (1.0f / 16777216.0f);

		w[i] = (2.0f * u - 1.0f) * r;
	}
}

/* The parameters: W1 [in x hid], b1 [hid], W2 [hid x out], b2 [out]. */
struct mlp_params {
	float *w1, *b1, *w2, *b2;
};

static inline void mlp_params_free(struct mlp_params *p)
{
	free(p->w1);
	free(p->b1);
	free(p->w2);
	free(p->b2);
	memset(p, 0, sizeof(*p));
}

static inline int mlp_params_init(const struct mlp_cfg *c,
				  struct mlp_params *p)
{
	uint64_t s = c->seed;

	p->w1 = malloc((size_t)c->in * c->hid * 4);
	p->b1 = calloc(c->hid, 4);
	p->w2 = malloc((size_t)c->hid * c->out * 4);
	p->b2 = calloc(c->out, 4);
	if (!p->w1 || !p->b1 || !p->w2 || !p->b2) {
		mlp_params_free(p);
		return -ENOMEM;
	}
	mlp_init_layer(&s, p->w1, c->in, c->hid);
	mlp_init_layer(&s, p->w2, c->hid, c->out);
	return 0;
}

/* The training items of @epoch in order: a permutation of 0..n-1. */
static inline void mlp_epoch_order(uint64_t seed, uint32_t epoch,
				   uint32_t *idx, uint32_t n)
{
	uint64_t s = seed + 1 + epoch;
	uint32_t i, j, t;

	for (i = 0; i < n; i++)
		idx[i] = i;
	for (i = n - 1; n && i > 0; i--) {
		j = (uint32_t)(mlp_rand(&s) % (i + 1));
		t = idx[i];
		idx[i] = idx[j];
		idx[j] = t;
	}
}

/* ---- the kernels, as the device computes them -------------------------- */

/*
 * c[m x n] = sum over l of a(i, l) b(l, j), where a(i, l) is
 * a[i * ai + l * al] and b(l, j) is b[l * bl + j * bj]: the three GEMMs
 * below, each summing over l in order from +0.0f as the kernels do.
 */
static inline void mlp_gemm_strided(float *c, const float *a, const float *b,
				    uint32_t m, uint32_t n, uint32_t k,
				    size_t ai, size_t al, size_t bl, size_t bj)
{
	uint32_t i, j, l;

	for (i = 0; i < m; i++)
		for (j = 0; j < n; j++) {
			float s = 0.0f;

			for (l = 0; l < k; l++)
				s += a[i * ai + l * al] * b[l * bl + j * bj];
			c[(size_t)i * n + j] = s;
		}
}

/* c[m x n] = a[m x k] b[k x n] */
static inline void mlp_gemm(float *c, const float *a, const float *b,
			    uint32_t m, uint32_t n, uint32_t k)
{
	mlp_gemm_strided(c, a, b, m, n, k, k, 1, n, 1);
}

/* c[m x n] = a^T b, a [k x m], b [k x n] */
static inline void mlp_gemm_tn(float *c, const float *a, const float *b,
			       uint32_t m, uint32_t n, uint32_t k)
{
	mlp_gemm_strided(c, a, b, m, n, k, 1, m, n, 1);
}

/* c[m x n] = a b^T, a [m x k], b [n x k] */
static inline void mlp_gemm_nt(float *c, const float *a, const float *b,
			       uint32_t m, uint32_t n, uint32_t k)
{
	mlp_gemm_strided(c, a, b, m, n, k, k, 1, 1, k);
}

static inline void mlp_bias_relu(float *y, const float *bias, uint32_t rows,
				 uint32_t n, int relu)
{
	uint64_t i;

	for (i = 0; i < (uint64_t)rows * n; i++) {
		float v = y[i] + bias[i % n];

		y[i] = relu ? (v > 0.0f ? v : 0.0f) : v;
	}
}

static inline void mlp_colsum(float *out, const float *in, uint32_t rows,
			      uint32_t n)
{
	uint32_t i, j;

	for (j = 0; j < n; j++) {
		float s = 0.0f;

		for (i = 0; i < rows; i++)
			s += in[(size_t)i * n + j];
		out[j] = s;
	}
}

/*
 * Per row, as SOFTMAX_XENT_F32 (uapi header): m the row's maximum, e[j] =
 * exp(x[j] - m), s their sum from j = 0 up, loss = log(s) - (x[t] - m),
 * d[j] = (e[j] / s - (j == t)) * scale, with the kernel's exp and log.
 */
static inline void mlp_softmax_xent(float *loss, float *d, const float *l,
				    const int32_t *labels, uint32_t rows,
				    uint32_t n, float scale)
{
	uint32_t r, j, t;

	for (r = 0; r < rows; r++) {
		const float *x = l + (size_t)r * n;
		float *dr = d + (size_t)r * n;
		float m = x[0], s = 0.0f;

		t = (uint32_t)labels[r];
		for (j = 1; j < n; j++)
			if (x[j] > m)
				m = x[j];
		for (j = 0; j < n; j++) {
			dr[j] = snpu_f32_exp(x[j] - m);
			s += dr[j];
		}
		loss[r] = snpu_f32_log(s) - (x[t] - m);
		for (j = 0; j < n; j++)
			dr[j] = (dr[j] / s - (j == t ? 1.0f : 0.0f)) * scale;
	}
}

static inline void mlp_axpy(float *y, const float *x, float a, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		y[i] += a * x[i];
}

static inline uint32_t mlp_argmax(const float *x, uint32_t n)
{
	uint32_t j, best = 0;

	for (j = 1; j < n; j++)
		if (x[j] > x[best])
			best = j;
	return best;
}

/* ---- the CPU trainer ----------------------------------------------------- */

/*
 * The GEMMs of a CPU trainer: c[m x n] = op(a) op(b), @ta and @tb for a
 * transposed operand (a [k x m], b [n x k]), as mlp_gemm(), _tn(), _nt().
 * NULL in struct mlp_cpu: those loops, the reference; snpu-train's bench
 * gives one that calls OpenBLAS (not the same bits: a speed baseline).
 */
typedef void mlp_gemm_fn(float *c, const float *a, const float *b,
			 uint32_t m, uint32_t n, uint32_t k, int ta, int tb);

struct mlp_cpu {
	struct mlp_cfg c;
	struct mlp_params p;
	float *xn, *z1, *z2, *loss, *d2, *dw2, *db2, *dh1, *dw1, *db1;
	mlp_gemm_fn *gemm;
};

static inline void mlp_cpu_gemm(const struct mlp_cpu *m, float *c,
				const float *a, const float *b, uint32_t rows,
				uint32_t n, uint32_t k, int ta, int tb)
{
	if (m->gemm)
		m->gemm(c, a, b, rows, n, k, ta, tb);
	else if (ta)
		mlp_gemm_tn(c, a, b, rows, n, k);
	else if (tb)
		mlp_gemm_nt(c, a, b, rows, n, k);
	else
		mlp_gemm(c, a, b, rows, n, k);
}

static inline void mlp_cpu_free(struct mlp_cpu *m)
{
	mlp_params_free(&m->p);
	free(m->xn);
	free(m->z1);
	free(m->z2);
	free(m->loss);
	free(m->d2);
	free(m->dw2);
	free(m->db2);
	free(m->dh1);
	free(m->dw1);
	free(m->db1);
	memset(m, 0, sizeof(*m));
}

static inline int mlp_cpu_init(struct mlp_cpu *m, const struct mlp_cfg *c)
{
	size_t b = c->batch;

	memset(m, 0, sizeof(*m));
	m->c = *c;
	if (mlp_params_init(c, &m->p))
		return -ENOMEM;
	m->xn = malloc(b * c->in * 4);
	m->z1 = malloc(b * c->hid * 4);
	m->z2 = malloc(b * c->out * 4);
	m->loss = malloc(b * 4);
	m->d2 = malloc(b * c->out * 4);
	m->dw2 = malloc((size_t)c->hid * c->out * 4);
	m->db2 = malloc((size_t)c->out * 4);
	m->dh1 = malloc(b * c->hid * 4);
	m->dw1 = malloc((size_t)c->in * c->hid * 4);
	m->db1 = malloc((size_t)c->hid * 4);
	if (!m->xn || !m->z1 || !m->z2 || !m->loss || !m->d2 || !m->dw2 ||
	    !m->db2 || !m->dh1 || !m->dw1 || !m->db1) {
		mlp_cpu_free(m);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Forward only: logits into m->z2 for @rows rows of raw pixels @x (f32,
 * 0..255).
 */
static inline void mlp_cpu_forward(struct mlp_cpu *m, const float *x,
				   uint32_t rows)
{
	const struct mlp_cfg *c = &m->c;
	uint64_t i;

	for (i = 0; i < (uint64_t)rows * c->in; i++)
		m->xn[i] = MLP_NORM_A * x[i] + MLP_NORM_B;
	mlp_cpu_gemm(m, m->z1, m->xn, m->p.w1, rows, c->hid, c->in, 0, 0);
	mlp_bias_relu(m->z1, m->p.b1, rows, c->hid, 1);
	mlp_cpu_gemm(m, m->z2, m->z1, m->p.w2, rows, c->out, c->hid, 0, 0);
	mlp_bias_relu(m->z2, m->p.b2, rows, c->out, 0);
}

/* One SGD step on a batch of c.batch rows; returns the mean loss. */
/*
 * The gradients of a step on a batch of @c.batch rows into m->dw2, db2,
 * dw1 and db1; returns the batch's mean loss.
 */
static inline double mlp_cpu_grads(struct mlp_cpu *m, const float *x,
				   const int32_t *labels)
{
	const struct mlp_cfg *c = &m->c;
	uint32_t b = c->batch, i;
	uint64_t k;
	double sum = 0;

	mlp_cpu_forward(m, x, b);
	mlp_softmax_xent(m->loss, m->d2, m->z2, labels, b, c->out,
			 1.0f / (float)b);
	mlp_cpu_gemm(m, m->dw2, m->z1, m->d2, c->hid, c->out, b, 1, 0);
	mlp_colsum(m->db2, m->d2, b, c->out);
	mlp_cpu_gemm(m, m->dh1, m->d2, m->p.w2, b, c->hid, c->out, 0, 1);
	for (k = 0; k < (uint64_t)b * c->hid; k++)
		m->dh1[k] = m->z1[k] > 0.0f ? m->dh1[k] : 0.0f;
	mlp_cpu_gemm(m, m->dw1, m->xn, m->dh1, c->in, c->hid, b, 1, 0);
	mlp_colsum(m->db1, m->dh1, b, c->hid);
	for (i = 0; i < b; i++)
		sum += m->loss[i];
	return sum / b;
}

/* The SGD update of @p with the gradients of @g and rate @lr. */
static inline void mlp_cpu_update(struct mlp_params *p,
				  const struct mlp_cpu *g, float lr)
{
	const struct mlp_cfg *c = &g->c;

	mlp_axpy(p->w2, g->dw2, -lr, (uint64_t)c->hid * c->out);
	mlp_axpy(p->b2, g->db2, -lr, c->out);
	mlp_axpy(p->w1, g->dw1, -lr, (uint64_t)c->in * c->hid);
	mlp_axpy(p->b1, g->db1, -lr, c->hid);
}

static inline double mlp_cpu_step(struct mlp_cpu *m, const float *x,
				  const int32_t *labels)
{
	double loss = mlp_cpu_grads(m, x, labels);

	mlp_cpu_update(&m->p, m, m->c.lr);
	return loss;
}

/* dst = dst + src, element by element (one rank more of a sum). */
static inline void mlp_add(float *dst, const float *src, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		dst[i] = dst[i] + src[i];
}

/*
 * A data-parallel step, as @n ranks of a batch of @m[0].c.batch rows each
 * run it with SNPU_RT2_OP_ALLREDUCE (mlp_rt2_build_dp()): rank r's
 * gradients on rows r * batch.. of @x and @labels, their sum in rank
 * order, and the same update of every rank's parameters at rate lr / n.
 * Returns the mean loss over the @n shards.
 */
static inline double mlp_cpu_dp_step(struct mlp_cpu *m, unsigned int n,
				     const float *x, const int32_t *labels)
{
	const struct mlp_cfg *c = &m[0].c;
	float lr = c->lr / (float)n;
	double loss = 0;
	unsigned int r;

	for (r = 0; r < n; r++)
		loss += mlp_cpu_grads(&m[r], x + (size_t)r * c->batch * c->in,
				      labels + (size_t)r * c->batch);
	for (r = 1; r < n; r++) {
		mlp_add(m[0].dw2, m[r].dw2, (uint64_t)c->hid * c->out);
		mlp_add(m[0].db2, m[r].db2, c->out);
		mlp_add(m[0].dw1, m[r].dw1, (uint64_t)c->in * c->hid);
		mlp_add(m[0].db1, m[r].db1, c->hid);
	}
	for (r = 0; r < n; r++)
		mlp_cpu_update(&m[r].p, &m[0], lr);
	return loss / n;
}

/*
 * Copy batch @step's items (raw pixels as f32, labels as i32) out of
 * @images/@labels in the order @order (an epoch's permutation).
 */
static inline void mlp_gather(float *x, int32_t *y, const uint8_t *images,
			      const uint8_t *labels, const uint32_t *order,
			      uint32_t first, uint32_t rows, uint32_t in)
{
	uint32_t r, j;

	for (r = 0; r < rows; r++) {
		const uint8_t *img = images + (size_t)order[first + r] * in;

		for (j = 0; j < in; j++)
			x[(size_t)r * in + j] = (float)img[j];
		y[r] = labels[order[first + r]];
	}
}

/* Largest |a - b| / (1 + |b|) over @n elements. */
static inline float mlp_max_rel_diff(const float *a, const float *b,
				     uint64_t n)
{
	float worst = 0.0f;
	uint64_t i;

	for (i = 0; i < n; i++) {
		float d = fabsf(a[i] - b[i]) / (1.0f + fabsf(b[i]));

		if (isnan(d))
			return INFINITY;
		if (d > worst)
			worst = d;
	}
	return worst;
}

#endif /* SNPU_TOOLS_MLP_H */
