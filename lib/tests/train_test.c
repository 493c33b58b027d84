// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit tests of snpu-train's host parts: the IDX loader
 * (lib/tools/idx.h) on files made here - good ones, gzip or plain, and a
 * missing file, a bad magic number, truncated data and header, extra
 * data, counts that disagree, a label out of range - and the CPU
 * reference (lib/tools/mlp.h): its PRNG, initialisation and shuffle, its
 * gradients against finite differences, and that training lowers the
 * loss on separable data.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../tools/idx.h"
#include "../tools/mlp.h"

#include "kselftest_harness.h"

static void be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/*
 * Write an IDX file of @n items: images (rows x cols) when @rows, else
 * labels; @declared is the count in the header, @payload the bytes
 * written after it (n * item size, unless a test says otherwise).
 */
static int write_idx(const char *path, bool gz, uint32_t magic,
		     uint32_t declared, uint32_t rows, uint32_t cols,
		     size_t payload, uint8_t fill)
{
	uint8_t hdr[16], *data;
	size_t hl = rows ? 16 : 8;
	int ret = 0;

	be32(hdr, magic);
	be32(hdr + 4, declared);
	be32(hdr + 8, rows);
	be32(hdr + 12, cols);
	data = malloc(payload + 1);
	if (!data)
		return -1;
	memset(data, fill, payload + 1);
	if (gz) {
		gzFile f = gzopen(path, "wb");

		if (!f) {
			free(data);
			return -1;
		}
		if (gzwrite(f, hdr, hl) != (int)hl ||
		    (payload && gzwrite(f, data, payload) != (int)payload))
			ret = -1;
		gzclose(f);
	} else {
		FILE *f = fopen(path, "wb");

		if (!f) {
			free(data);
			return -1;
		}
		if (fwrite(hdr, 1, hl, f) != hl ||
		    fwrite(data, 1, payload, f) != payload)
			ret = -1;
		fclose(f);
	}
	free(data);
	return ret;
}

FIXTURE(idx)
{
	char dir[64];
	char img[128], lbl[128];
	char err[512];
};

FIXTURE_SETUP(idx)
{
	strcpy(self->dir, "/tmp/snpu-idx-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->img, sizeof(self->img), "%s/t-images-idx3-ubyte.gz",
		 self->dir);
	snprintf(self->lbl, sizeof(self->lbl), "%s/t-labels-idx1-ubyte.gz",
		 self->dir);
	self->err[0] = 0;
}

FIXTURE_TEARDOWN(idx)
{
	unlink(self->img);
	unlink(self->lbl);
	rmdir(self->dir);
}

TEST_F(idx, loads_gzip_pair)
{
	struct idx_set s;

	ASSERT_EQ(0, write_idx(self->img, true, IDX_MAGIC_IMAGES, 5, 28, 28,
			       5 * 784, 7));
	ASSERT_EQ(0, write_idx(self->lbl, true, IDX_MAGIC_LABELS, 5, 0, 0, 5,
			       3));
	ASSERT_EQ(0, idx_set_load(self->dir, "t", 10, &s, self->err,
				  sizeof(self->err)));
	EXPECT_EQ(5U, s.n);
	EXPECT_EQ(28U, s.rows);
	EXPECT_EQ(28U, s.cols);
	EXPECT_EQ(7, s.images[5 * 784 - 1]);
	EXPECT_EQ(3, s.labels[4]);
	idx_set_free(&s);
}

TEST_F(idx, loads_plain_file)
{
	struct idx_file f;

	ASSERT_EQ(0, write_idx(self->img, false, IDX_MAGIC_IMAGES, 2, 3, 4,
			       24, 9));
	ASSERT_EQ(0, idx_load(self->img, IDX_MAGIC_IMAGES, 3, 4, &f,
			      self->err, sizeof(self->err)));
	EXPECT_EQ(2U, f.dims[0]);
	EXPECT_EQ(24U, f.bytes);
	EXPECT_EQ(9, f.data[23]);
	idx_free(&f);
}

TEST_F(idx, missing_file)
{
	struct idx_file f;

	EXPECT_EQ(-ENOENT, idx_load(self->img, IDX_MAGIC_IMAGES, 0, 0, &f,
				    self->err, sizeof(self->err)));
	EXPECT_NE(NULL, strstr(self->err, "cannot open"));
	EXPECT_EQ(NULL, f.data);
}

TEST_F(idx, bad_magic)
{
	struct idx_file f;

	/* A label file where images are expected. */
	ASSERT_EQ(0, write_idx(self->img, true, IDX_MAGIC_LABELS, 5, 0, 0, 5,
			       1));
	EXPECT_EQ(-EBADMSG, idx_load(self->img, IDX_MAGIC_IMAGES, 0, 0, &f,
				     self->err, sizeof(self->err)));
	EXPECT_NE(NULL, strstr(self->err, "bad magic number 0x00000801"));
	/* Not an IDX file at all. */
	ASSERT_EQ(0, write_idx(self->img, false, 0x89504e47, 5, 0, 0, 5, 1));
	EXPECT_EQ(-EBADMSG, idx_load(self->img, IDX_MAGIC_IMAGES, 0, 0, &f,
				     self->err, sizeof(self->err)));
}

TEST_F(idx, truncated_data)
{
	struct idx_file f;

	/* Declares 5 images, holds 4 and a half. */
	ASSERT_EQ(0, write_idx(self->img, true, IDX_MAGIC_IMAGES, 5, 28, 28,
			       4 * 784 + 392, 1));
	EXPECT_EQ(-EIO, idx_load(self->img, IDX_MAGIC_IMAGES, 28, 28, &f,
				 self->err, sizeof(self->err)));
	EXPECT_NE(NULL, strstr(self->err, "truncated"));
	EXPECT_EQ(NULL, f.data);
}

TEST_F(idx, truncated_header)
{
	struct idx_file f;
	FILE *fp = fopen(self->img, "wb");

	ASSERT_NE(NULL, fp);
	fwrite("\0\0\x08\x03\0\0", 1, 6, fp);
	fclose(fp);
	EXPECT_EQ(-EIO, idx_load(self->img, IDX_MAGIC_IMAGES, 0, 0, &f,
				 self->err, sizeof(self->err)));
	EXPECT_NE(NULL, strstr(self->err, "truncated"));
}

TEST_F(idx, truncated_gzip_stream)
{
	struct idx_file f;
	int fd;

	ASSERT_EQ(0, write_idx(self->img, true, IDX_MAGIC_IMAGES, 50, 28, 28,
			       50 * 784, 0x5a));
	fd = open(self->img, O_WRONLY);
	ASSERT_GE(fd, 0);
	/* Cut the compressed stream in its middle. */
	ASSERT_EQ(0, ftruncate(fd, lseek(fd, 0, SEEK_END) / 2));
	close(fd);
	EXPECT_EQ(-EIO, idx_load(self->img, IDX_MAGIC_IMAGES, 28, 28, &f,
				 self->err, sizeof(self->err)));
}

TEST_F(idx, extra_data)
{
	struct idx_file f;

	ASSERT_EQ(0, write_idx(self->lbl, true, IDX_MAGIC_LABELS, 5, 0, 0, 6,
			       1));
	EXPECT_EQ(-EIO, idx_load(self->lbl, IDX_MAGIC_LABELS, 0, 0, &f,
				 self->err, sizeof(self->err)));
	EXPECT_NE(NULL, strstr(self->err, "more data"));
}

TEST_F(idx, wrong_dimensions)
{
	struct idx_file f;

	ASSERT_EQ(0, write_idx(self->img, true, IDX_MAGIC_IMAGES, 2, 32, 32,
			       2 * 1024, 1));
	EXPECT_EQ(-EBADMSG, idx_load(self->img, IDX_MAGIC_IMAGES, 28, 28, &f,
				     self->err, sizeof(self->err)));
	ASSERT_EQ(0, write_idx(self->img, true, IDX_MAGIC_IMAGES, 0, 28, 28,
			       0, 1));
	EXPECT_EQ(-EBADMSG, idx_load(self->img, IDX_MAGIC_IMAGES, 28, 28, &f,
				     self->err, sizeof(self->err)));
}

TEST_F(idx, counts_disagree)
{
	struct idx_set s;

	ASSERT_EQ(0, write_idx(self->img, true, IDX_MAGIC_IMAGES, 5, 28, 28,
			       5 * 784, 1));
	ASSERT_EQ(0, write_idx(self->lbl, true, IDX_MAGIC_LABELS, 4, 0, 0, 4,
			       1));
	EXPECT_EQ(-EBADMSG, idx_set_load(self->dir, "t", 10, &s, self->err,
					 sizeof(self->err)));
	EXPECT_NE(NULL, strstr(self->err, "4 labels for 5 images"));
	EXPECT_EQ(NULL, s.images);
}

TEST_F(idx, label_out_of_range)
{
	struct idx_set s;

	ASSERT_EQ(0, write_idx(self->img, true, IDX_MAGIC_IMAGES, 5, 28, 28,
			       5 * 784, 1));
	ASSERT_EQ(0, write_idx(self->lbl, true, IDX_MAGIC_LABELS, 5, 0, 0, 5,
			       10));
	EXPECT_EQ(-EBADMSG, idx_set_load(self->dir, "t", 10, &s, self->err,
					 sizeof(self->err)));
	EXPECT_NE(NULL, strstr(self->err, "not below 10"));
}

/* ---- the CPU reference --------------------------------------------------- */

TEST(splitmix64_reference_values)
{
	uint64_t s = 0;

	/* SplitMix64's published first outputs for seed 0. */
	EXPECT_EQ(0xe220a8397b1dcdafULL, mlp_rand(&s));
	EXPECT_EQ(0x6e789e6aa1b965f4ULL, mlp_rand(&s));
}

TEST(init_is_seeded_and_bounded)
{
	struct mlp_cfg c = { 784, 128, 10, 4, 0.1f, 42 };
	struct mlp_params a, b;
	float r1 = sqrtf(6.0f / 912.0f);
	uint64_t i;

	ASSERT_EQ(0, mlp_params_init(&c, &a));
	ASSERT_EQ(0, mlp_params_init(&c, &b));
	EXPECT_EQ(0, memcmp(a.w1, b.w1, 784 * 128 * 4));
	for (i = 0; i < 784 * 128; i++)
		ASSERT_LE(fabsf(a.w1[i]), r1);
	EXPECT_EQ(0.0f, a.b1[127]);
	mlp_params_free(&b);
	c.seed = 43;
	ASSERT_EQ(0, mlp_params_init(&c, &b));
	EXPECT_NE(0, memcmp(a.w1, b.w1, 784 * 128 * 4));
	mlp_params_free(&a);
	mlp_params_free(&b);
}

TEST(epoch_order_is_a_permutation)
{
	uint32_t idx[1000], seen[1000] = { 0 }, again[1000], i;

	mlp_epoch_order(7, 0, idx, 1000);
	for (i = 0; i < 1000; i++) {
		ASSERT_LT(idx[i], 1000U);
		seen[idx[i]]++;
	}
	for (i = 0; i < 1000; i++)
		ASSERT_EQ(1U, seen[i]);
	mlp_epoch_order(7, 0, again, 1000);
	EXPECT_EQ(0, memcmp(idx, again, sizeof(idx)));
	mlp_epoch_order(7, 1, again, 1000);
	EXPECT_NE(0, memcmp(idx, again, sizeof(idx)));
}

/* The mean loss of a batch, forward only (for finite differences). */
static double batch_loss(struct mlp_cpu *m, const float *x, const int32_t *y)
{
	double s = 0;
	uint32_t i;

	mlp_cpu_forward(m, x, m->c.batch);
	mlp_softmax_xent(m->loss, m->d2, m->z2, y, m->c.batch, m->c.out, 1.0f);
	for (i = 0; i < m->c.batch; i++)
		s += m->loss[i];
	return s / m->c.batch;
}

/*
 * A step with learning rate 1 moves every weight by minus its gradient:
 * compare that with central differences of the loss for a few weights of
 * each parameter.
 */
TEST(gradients_match_finite_differences)
{
	struct mlp_cfg c = { 12, 6, 4, 5, 1.0f, 3 };
	struct mlp_cpu m, g;
	float x[5 * 12];
	int32_t y[5] = { 0, 1, 2, 3, 1 };
	float *pm[4], *pg[4];
	uint32_t sizes[4] = { 12 * 6, 6, 6 * 4, 4 }, i, p;
	uint64_t s = 99;

	for (i = 0; i < 60; i++)
		x[i] = (float)(mlp_rand(&s) % 256);
	ASSERT_EQ(0, mlp_cpu_init(&m, &c));
	ASSERT_EQ(0, mlp_cpu_init(&g, &c));
	/* Nonzero biases, so that their gradients are exercised too. */
	for (i = 0; i < 6; i++)
		m.p.b1[i] = g.p.b1[i] = 0.05f * (float)i - 0.1f;
	mlp_cpu_step(&g, x, y);
	pm[0] = m.p.w1, pm[1] = m.p.b1, pm[2] = m.p.w2, pm[3] = m.p.b2;
	pg[0] = g.p.w1, pg[1] = g.p.b1, pg[2] = g.p.w2, pg[3] = g.p.b2;
	for (p = 0; p < 4; p++) {
		for (i = 0; i < sizes[p]; i += 1 + sizes[p] / 7) {
			float w = pm[p][i], h = 1e-2f;
			double lp, ln, num, ana = w - pg[p][i];

			pm[p][i] = w + h;
			lp = batch_loss(&m, x, y);
			pm[p][i] = w - h;
			ln = batch_loss(&m, x, y);
			pm[p][i] = w;
			num = (lp - ln) / (2.0 * h);
			EXPECT_LE(fabs(num - ana), 2e-3 + 2e-2 * fabs(num))
				TH_LOG("param %u index %u: numeric %g analytic %g",
				       p, i, num, ana);
		}
	}
	mlp_cpu_free(&m);
	mlp_cpu_free(&g);
}

/* Two classes told apart by which half of the image is bright. */
TEST(training_lowers_the_loss)
{
	struct mlp_cfg c = { 16, 8, 2, 8, 0.05f, 11 };
	float x[8 * 16];
	int32_t y[8];
	struct mlp_cpu m;
	double first = 0, last = 0;
	uint32_t r, j, step;

	for (r = 0; r < 8; r++) {
		y[r] = r & 1;
		for (j = 0; j < 16; j++)
			x[r * 16 + j] = ((j < 8) == (y[r] == 0)) ? 200.0f : 20.0f;
	}
	ASSERT_EQ(0, mlp_cpu_init(&m, &c));
	for (step = 0; step < 50; step++) {
		last = mlp_cpu_step(&m, x, y);
		if (!step)
			first = last;
	}
	EXPECT_LT(last, first / 4) TH_LOG("loss %g -> %g", first, last);
	mlp_cpu_forward(&m, x, 8);
	for (r = 0; r < 8; r++)
		EXPECT_EQ((uint32_t)y[r], mlp_argmax(m.z2 + r * 2, 2));
	mlp_cpu_free(&m);
}

TEST(max_rel_diff_sees_nan)
{
	float a[3] = { 1, 2, NAN }, b[3] = { 1, 2, 3 };

	EXPECT_EQ(0.0f, mlp_max_rel_diff(a, b, 2));
	EXPECT_TRUE(isinf(mlp_max_rel_diff(a, b, 3)));
}

TEST_HARNESS_MAIN
