/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Small models shared by rt2's unit tests, and their plain C references.
 */
#ifndef RT2_MODELS_H
#define RT2_MODELS_H

#include <stdint.h>
#include <string.h>

#include "snpu_rt2.h"

static inline struct snpu_rt2_shape shape2(uint32_t dtype, uint32_t a,
					   uint32_t b)
{
	struct snpu_rt2_shape s;

	memset(&s, 0, sizeof(s));
	s.dtype = dtype;
	s.ndim = 2;
	s.dims[0] = a;
	s.dims[1] = b;
	return s;
}

static inline int op2(struct snpu_rt2_model *m, uint32_t type, int a, int b)
{
	struct snpu_rt2_op_desc d;

	memset(&d, 0, sizeof(d));
	d.type = type;
	d.nin = b < 0 ? 1 : 2;
	d.in[0] = a;
	d.in[1] = b;
	return snpu_rt2_model_op(m, &d);
}

/* c = a (m x k) * b (k x n), rounding every product as the device does. */
static inline void ref_matmul(float *c, const float *a, const float *b,
			      unsigned int m, unsigned int n, unsigned int k)
{
	unsigned int i, j, l;

	for (i = 0; i < m; i++) {
		for (j = 0; j < n; j++) {
			float s = 0.0f;

			for (l = 0; l < k; l++)
				s += a[i * k + l] * b[l * n + j];
			c[i * n + j] = s;
		}
	}
}

#endif /* RT2_MODELS_H */
