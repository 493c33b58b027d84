// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit tests of snpu_launch_dims() (LIBSNPU_0.10): the block_dim
 * libsnpu's one policy gives a launch, from the device's description and
 * the launch's arguments alone (no device; buffer addresses are never
 * dereferenced). One test per rule of Documentation/lib/snpu_launch_dims
 * and per error. Built for the host under ASan/UBSan.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "snpu.h"
#include "../../kmod/core/kernels.h"

#include "kselftest_harness.h"

#define ADDR(i)		(0x100000ULL * ((i) + 1))

static struct snpu_info info_of(uint32_t cores)
{
	struct snpu_info info;

	memset(&info, 0, sizeof(info));
	info.size = sizeof(info);
	info.cores = cores;
	info.max_block_dim = 65535;
	info.max_block_work = SNPU_KERNEL_BLOCK_WORK_MAX;
	return info;
}

/* ADD_F32 of @n elements. */
static void add_args(struct snpu_kernel_arg *a, uint64_t n)
{
	a[0] = snpu_arg_buf(ADDR(0), n * 4);
	a[1] = snpu_arg_buf(ADDR(1), n * 4);
	a[2] = snpu_arg_buf(ADDR(2), n * 4);
}

/* GEMM_F32 c[m x n] = a[m x k] b[k x n]. */
static void gemm_args(struct snpu_kernel_arg *a, uint64_t m, uint64_t n,
		      uint64_t k)
{
	a[0] = snpu_arg_buf(ADDR(0), m * n * 4);
	a[1] = snpu_arg_buf(ADDR(1), m * k * 4);
	a[2] = snpu_arg_buf(ADDR(2), k * n * 4);
	a[3] = snpu_arg_u64(m);
	a[4] = snpu_arg_u64(n);
	a[5] = snpu_arg_u64(k);
}

/* The launch as the driver checks it, all six arguments. */
static int driver_check(uint32_t kernel, int bd,
			const struct snpu_kernel_arg *args, unsigned int n)
{
	struct snpu_kernel_arg a[SNPU_KERNEL_MAX_ARGS];

	memset(a, 0, sizeof(a));
	memcpy(a, args, n * sizeof(*a));
	return snpu_kernel_check(kernel, (uint32_t)bd, a);
}

TEST(refuses_bad_arguments)
{
	struct snpu_info info = info_of(4);
	struct snpu_kernel_arg a[7];

	add_args(a, 100);
	EXPECT_EQ(-EINVAL, snpu_launch_dims(NULL, SNPU_KERNEL_ADD_F32, a, 3));
	EXPECT_EQ(-EINVAL, snpu_launch_dims(&info, SNPU_KERNEL_COUNT, a, 3));
	EXPECT_EQ(-EINVAL, snpu_launch_dims(&info, SNPU_KERNEL_ADD_F32, a, 7));
	EXPECT_EQ(-EINVAL, snpu_launch_dims(&info, SNPU_KERNEL_ADD_F32, NULL,
					    3));
	info.cores = 0;
	EXPECT_EQ(-EINVAL, snpu_launch_dims(&info, SNPU_KERNEL_ADD_F32, a, 3));
}

/* What the driver would refuse for any block_dim, the policy refuses. */
TEST(refuses_what_the_driver_refuses)
{
	struct snpu_info info = info_of(4);
	struct snpu_kernel_arg a[6];

	add_args(a, 100);
	a[1].bytes = 4;		/* a shorter than c */
	EXPECT_EQ(-EINVAL, snpu_launch_dims(&info, SNPU_KERNEL_ADD_F32, a, 3));
	gemm_args(a, 2, 3, 4);
	a[1].bytes = 8;
	EXPECT_EQ(-EINVAL, snpu_launch_dims(&info, SNPU_KERNEL_GEMM_F32, a,
					    6));
}

TEST(no_work_one_block)
{
	struct snpu_info info = info_of(4);
	struct snpu_kernel_arg a = snpu_arg_u64(1000);

	EXPECT_EQ(1, snpu_launch_dims(&info, SNPU_KERNEL_NOP, NULL, 0));
	EXPECT_EQ(1, snpu_launch_dims(&info, SNPU_KERNEL_SPIN, &a, 1));
	a = snpu_arg_u64(5);
	EXPECT_EQ(1, snpu_launch_dims(&info, SNPU_KERNEL_FAIL, &a, 1));
}

/* Below twice SNPU_LAUNCH_MIN_WORK a second block would be too small. */
TEST(small_work_one_block)
{
	struct snpu_info info = info_of(4);
	struct snpu_kernel_arg a[6];

	add_args(a, 1);
	EXPECT_EQ(1, snpu_launch_dims(&info, SNPU_KERNEL_ADD_F32, a, 3));
	add_args(a, 2 * SNPU_LAUNCH_MIN_WORK - 1);
	EXPECT_EQ(1, snpu_launch_dims(&info, SNPU_KERNEL_ADD_F32, a, 3));
	/* 8 x 10 x 16: 1280 multiply-adds. */
	gemm_args(a, 8, 10, 16);
	EXPECT_EQ(1, snpu_launch_dims(&info, SNPU_KERNEL_GEMM_F32, a, 6));
}

/* Every block at least SNPU_LAUNCH_MIN_WORK, up to the cores. */
TEST(blocks_of_at_least_min_work)
{
	struct snpu_info info = info_of(4);
	struct snpu_kernel_arg a[3];

	add_args(a, 2 * SNPU_LAUNCH_MIN_WORK);
	EXPECT_EQ(2, snpu_launch_dims(&info, SNPU_KERNEL_ADD_F32, a, 3));
	add_args(a, 3 * SNPU_LAUNCH_MIN_WORK + 5);
	EXPECT_EQ(3, snpu_launch_dims(&info, SNPU_KERNEL_ADD_F32, a, 3));
}

/*
 * Enough work keeps every core busy: snpu-train's shapes, on 1 to 8
 * cores, as many blocks as there are SNPU_LAUNCH_MIN_WORK in the work
 * up to the cores (64 x 10 x 128, 81920 multiply-adds, is one block).
 */
TEST(every_core_busy)
{
	static const uint64_t shapes[][3] = {
		{ 64, 128, 784 }, { 64, 10, 128 }, { 784, 128, 64 },
		{ 64, 128, 10 }, { 256, 256, 256 },
	};
	struct snpu_kernel_arg a[6];
	unsigned int i, cores;

	for (cores = 1; cores <= 8; cores++) {
		struct snpu_info info = info_of(cores);

		for (i = 0; i < ARRAY_SIZE(shapes); i++) {
			uint64_t work = shapes[i][0] * shapes[i][1] *
					shapes[i][2];
			int want = work / SNPU_LAUNCH_MIN_WORK < cores ?
				   (int)(work / SNPU_LAUNCH_MIN_WORK) :
				   (int)cores;

			gemm_args(a, shapes[i][0], shapes[i][1], shapes[i][2]);
			EXPECT_EQ(want, snpu_launch_dims(&info,
							 SNPU_KERNEL_GEMM_F32,
							 a, 6))
				TH_LOG("%u cores, shape %u", cores, i);
		}
	}
}

/*
 * Past the work bound, the fewest blocks within it, rounded up to a
 * multiple of the cores so that they share the blocks evenly.
 */
TEST(past_the_work_bound_a_multiple_of_the_cores)
{
	struct snpu_info info = info_of(4);
	struct snpu_kernel_arg a[6];
	int bd;

	gemm_args(a, 512, 512, 512);	/* 2^27: 8 blocks at least */
	EXPECT_EQ(8, snpu_launch_dims(&info, SNPU_KERNEL_GEMM_F32, a, 6));
	info.cores = 3;
	EXPECT_EQ(9, snpu_launch_dims(&info, SNPU_KERNEL_GEMM_F32, a, 6));
	add_args(a, SNPU_KERNEL_BLOCK_WORK_MAX * 5 + 1);	/* 6 at least */
	EXPECT_EQ(6, snpu_launch_dims(&info, SNPU_KERNEL_ADD_F32, a, 3));
	gemm_args(a, 4096, 4096, 4096);
	bd = snpu_launch_dims(&info, SNPU_KERNEL_GEMM_F32, a, 6);
	EXPECT_EQ(4098, bd);
	EXPECT_EQ(0, driver_check(SNPU_KERNEL_GEMM_F32, bd, a, 6));
	EXPECT_EQ(-EINVAL, driver_check(SNPU_KERNEL_GEMM_F32, 4095, a, 6));
}

/* No block without a unit: one GEMM element of k 65536 is one block. */
TEST(no_more_blocks_than_units)
{
	struct snpu_info info = info_of(4);
	struct snpu_kernel_arg a[6];

	gemm_args(a, 1, 1, 65536);
	EXPECT_EQ(1, snpu_launch_dims(&info, SNPU_KERNEL_GEMM_F32, a, 6));
	gemm_args(a, 1, 3, 65536);
	EXPECT_EQ(3, snpu_launch_dims(&info, SNPU_KERNEL_GEMM_F32, a, 6));
}

/* A result per block: never more blocks than out holds results. */
TEST(per_block_results_fit_out)
{
	struct snpu_info info = info_of(4);
	struct snpu_kernel_arg a[3];

	a[0] = snpu_arg_buf(ADDR(0), 8);
	a[1] = snpu_arg_buf(ADDR(1), 4 * 1000000);
	EXPECT_EQ(2, snpu_launch_dims(&info, SNPU_KERNEL_REDUCE_SUM_F32, a,
				      2));
	a[0].bytes = 64;
	EXPECT_EQ(4, snpu_launch_dims(&info, SNPU_KERNEL_REDUCE_SUM_I32, a,
				      2));
	a[2] = snpu_arg_buf(ADDR(2), 4 * 1000000);
	a[0].bytes = 4;
	EXPECT_EQ(1, snpu_launch_dims(&info, SNPU_KERNEL_COUNT_EQ_I32, a, 3));
	/* The bound needs 2 results' room; out has 1. */
	a[1].bytes = a[2].bytes = 4 * (SNPU_KERNEL_BLOCK_WORK_MAX + 1);
	EXPECT_EQ(-E2BIG, snpu_launch_dims(&info, SNPU_KERNEL_COUNT_EQ_I32, a,
					   3));
}

TEST(beyond_max_block_dim_e2big)
{
	struct snpu_info info = info_of(4);
	struct snpu_kernel_arg a[3];

	info.max_block_dim = 2;
	add_args(a, 4 * SNPU_KERNEL_BLOCK_WORK_MAX);
	EXPECT_EQ(-E2BIG, snpu_launch_dims(&info, SNPU_KERNEL_ADD_F32, a, 3));
	add_args(a, 2 * SNPU_KERNEL_BLOCK_WORK_MAX);
	EXPECT_EQ(2, snpu_launch_dims(&info, SNPU_KERNEL_ADD_F32, a, 3));
}

/* A unit that costs more than a block may do cannot be split. */
TEST(unit_above_the_work_bound_e2big)
{
	struct snpu_info info = info_of(4);
	struct snpu_kernel_arg a[6];

	info.max_block_work = 1000;
	gemm_args(a, 2, 2, 2000);
	EXPECT_EQ(-E2BIG, snpu_launch_dims(&info, SNPU_KERNEL_GEMM_F32, a, 6));
	gemm_args(a, 2, 2, 1000);
	EXPECT_EQ(4, snpu_launch_dims(&info, SNPU_KERNEL_GEMM_F32, a, 6));
}

/*
 * Whatever it returns the driver accepts, and the same arguments give the
 * same answer: random shapes of every kernel that computes.
 */
TEST(answers_are_launches_the_driver_takes)
{
	static const uint32_t ks[] = {
		SNPU_KERNEL_COPY, SNPU_KERNEL_FILL, SNPU_KERNEL_ADD_F32,
		SNPU_KERNEL_AXPY_F32, SNPU_KERNEL_GEMM_F32,
		SNPU_KERNEL_GEMM_TN_F32, SNPU_KERNEL_GEMM_NT_F32,
		SNPU_KERNEL_REDUCE_SUM_F32, SNPU_KERNEL_CRC32C,
		SNPU_KERNEL_SOFTMAX_XENT_F32, SNPU_KERNEL_COLSUM_F32,
		SNPU_KERNEL_ARGMAX_F32, SNPU_KERNEL_BIAS_ADD_F32,
	};
	uint64_t st = 12345;
	unsigned int i, r, checked = 0;

	for (r = 0; r < 2000; r++) {
		struct snpu_info info = info_of(1 + (uint32_t)(r % 7));
		struct snpu_kernel_arg a[6];
		uint64_t m, n, k;
		int bd, bd2;

		st = st * 6364136223846793005ULL + 1442695040888963407ULL;
		m = 1 + (st >> 20) % 700;
		n = 1 + (st >> 40) % 300;
		k = 1 + (st >> 50) % 900;
		i = r % ARRAY_SIZE(ks);
		memset(a, 0, sizeof(a));
		switch (ks[i]) {
		case SNPU_KERNEL_GEMM_F32:
		case SNPU_KERNEL_GEMM_TN_F32:
		case SNPU_KERNEL_GEMM_NT_F32:
			gemm_args(a, m, n, k);
			break;
		case SNPU_KERNEL_SOFTMAX_XENT_F32:
			a[0] = snpu_arg_buf(ADDR(0), m * 4);
			a[1] = snpu_arg_buf(ADDR(1), m * n * 4);
			a[2] = snpu_arg_buf(ADDR(2), m * n * 4);
			a[3] = snpu_arg_buf(ADDR(3), m * 4);
			a[4] = snpu_arg_u64(n);
			a[5] = snpu_arg_u64(0x3f800000);
			break;
		case SNPU_KERNEL_COLSUM_F32:
		case SNPU_KERNEL_ARGMAX_F32:
			/* in [m k x n]; out n (COLSUM) or m k (ARGMAX) */
			a[0] = snpu_arg_buf(ADDR(0), (m * k + n) * 4);
			a[1] = snpu_arg_buf(ADDR(1), m * n * k * 4);
			a[2] = snpu_arg_u64(n);
			break;
		case SNPU_KERNEL_BIAS_ADD_F32:
			a[0] = snpu_arg_buf(ADDR(0), m * n * k * 4);
			a[1] = a[0];
			a[2] = snpu_arg_buf(ADDR(2), n * 4);
			a[3] = snpu_arg_u64(n);
			break;
		case SNPU_KERNEL_REDUCE_SUM_F32:
		case SNPU_KERNEL_CRC32C:
			a[0] = snpu_arg_buf(ADDR(0), 4 * (1 + n % 9));
			a[1] = snpu_arg_buf(ADDR(1), m * n * k * 4);
			break;
		case SNPU_KERNEL_FILL:
			a[0] = snpu_arg_buf(ADDR(0), m * n * k * 4);
			a[1] = snpu_arg_u64(7);
			break;
		case SNPU_KERNEL_COPY:
			a[0] = snpu_arg_buf(ADDR(0), m * n * k * 4);
			a[1] = a[0];
			break;
		case SNPU_KERNEL_AXPY_F32:
			a[0] = snpu_arg_buf(ADDR(0), m * n * k * 4);
			a[1] = a[0];
			a[2] = snpu_arg_u64(0x3f800000);
			break;
		default:
			add_args(a, m * n * k);
			break;
		}
		bd = snpu_launch_dims(&info, ks[i], a, 6);
		bd2 = snpu_launch_dims(&info, ks[i], a, 6);
		ASSERT_EQ(bd, bd2);
		/* One result per block, and fewer results than blocks needed. */
		if (a[0].bytes / 4 * SNPU_KERNEL_BLOCK_WORK_MAX <
		    (ks[i] == SNPU_KERNEL_CRC32C ? a[1].bytes : a[1].bytes / 4) &&
		    (ks[i] == SNPU_KERNEL_CRC32C ||
		     ks[i] == SNPU_KERNEL_REDUCE_SUM_F32)) {
			ASSERT_EQ(-E2BIG, bd);
			continue;
		}
		ASSERT_GE(bd, 1) TH_LOG("kernel %u: %d", ks[i], bd);
		ASSERT_EQ(0, driver_check(ks[i], bd, a, 6))
			TH_LOG("kernel %u, %d blocks", ks[i], bd);
		checked++;
	}
	ASSERT_GT(checked, 1500U);
}

TEST_HARNESS_MAIN
