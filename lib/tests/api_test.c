// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit tests of the libsnpu calls of LIBSNPU_0.2 that need no snpu
 * device: the argument checks the library makes itself, and the bytes the
 * task helpers build. Built for the host under ASan/UBSan.
 *
 * A "fake" device is a struct snpu_device on /dev/null: an argument the
 * library refuses gives -EINVAL, one it passes on reaches ioctl(2) and
 * gives -ENOTTY. That tells the library's checks from the kernel's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "snpu.h"
#include "../internal.h"

#include "kselftest_harness.h"

/* ---- no device ------------------------------------------------------ */

TEST(null_device)
{
	struct snpu_kernel_arg arg = snpu_arg_u64(0);
	struct snpu_callback_info info;
	struct snpu_stream_query sq;
	struct snpu_event_query eq;
	struct snpu_ctx_query cq;
	struct snpu_host_buf buf;
	struct snpu_task t;
	uint64_t u64;
	uint32_t u32;
	int64_t s64;
	char host[16];

	snpu_prep_host_func(&t, 1, 0);
	EXPECT_EQ(-EINVAL, snpu_ctx_query(NULL, &cq));
	EXPECT_EQ(-EINVAL, snpu_nop(NULL));
	EXPECT_EQ(-EINVAL, snpu_mem_alloc(NULL, 4096, 0, 0, &u64));
	EXPECT_EQ(-EINVAL, snpu_mem_free(NULL, 1ULL << 44));
	EXPECT_EQ(-EINVAL, snpu_mem_query(NULL, 1ULL << 44, &u64, &u64));
	EXPECT_EQ(-EINVAL, snpu_memcpy_h2d(NULL, 1ULL << 44, host, 16));
	EXPECT_EQ(-EINVAL, snpu_memcpy_d2h(NULL, host, 1ULL << 44, 16));
	EXPECT_EQ(-EINVAL, snpu_memcpy_d2d(NULL, 1ULL << 44, 1ULL << 44, 16));
	EXPECT_EQ(-EINVAL, snpu_memset(NULL, 1ULL << 44, 0, 16));
	EXPECT_EQ(-EINVAL, snpu_host_alloc(NULL, 4096, &buf));
	EXPECT_EQ(-EINVAL, snpu_host_free(NULL, &buf));
	EXPECT_EQ(-EINVAL, snpu_host_register(NULL, host, 4096, &u32));
	EXPECT_EQ(-EINVAL, snpu_host_unregister(NULL, 1));
	EXPECT_EQ(-EINVAL, snpu_stream_create(NULL, 0, 0, &u32));
	EXPECT_EQ(-EINVAL, snpu_stream_destroy(NULL, 1, 0));
	EXPECT_EQ(-EINVAL, snpu_stream_synchronize(NULL, 1, -1));
	EXPECT_EQ(-EINVAL, snpu_stream_query(NULL, 1, &sq));
	EXPECT_EQ(-EINVAL, snpu_stream_abort(NULL, 1));
	EXPECT_EQ(-EINVAL, snpu_stream_reset(NULL, 1));
	EXPECT_EQ(-EINVAL, snpu_stream_wait_event(NULL, 1, 2));
	EXPECT_EQ(-EINVAL, snpu_event_create(NULL, &u32));
	EXPECT_EQ(-EINVAL, snpu_event_destroy(NULL, 1));
	EXPECT_EQ(-EINVAL, snpu_event_query(NULL, 1, &eq));
	EXPECT_EQ(-EINVAL, snpu_event_synchronize(NULL, 1, -1));
	EXPECT_EQ(-EINVAL, snpu_event_elapsed_ns(NULL, 1, 2, &s64));
	EXPECT_EQ(-EINVAL, snpu_event_record(NULL, 2, 1));
	EXPECT_EQ(-EINVAL, snpu_submit(NULL, &t, 1, &u64));
	EXPECT_EQ(-EINVAL, snpu_launch(NULL, 1, SNPU_KERNEL_SPIN, 1, &arg, 1));
	EXPECT_EQ(-EINVAL, snpu_memcpy_async(NULL, 1, SNPU_COPY_D2D,
					     1ULL << 44, 1ULL << 44, 16));
	EXPECT_EQ(-EINVAL, snpu_memset_async(NULL, 1, 1ULL << 44, 0, 16));
	EXPECT_EQ(-EINVAL, snpu_launch_host_func(NULL, 1, 0));
	EXPECT_EQ(-EINVAL, snpu_callback_wait(NULL, 0, &info));
	EXPECT_EQ(-EINVAL, snpu_callback_done(NULL, 1, 0));
}

/* ---- a device on /dev/null ------------------------------------------ */

FIXTURE(fake)
{
	struct snpu_device dev;
};

FIXTURE_SETUP(fake)
{
	self->dev.fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	ASSERT_GE(self->dev.fd, 0);
}

FIXTURE_TEARDOWN(fake)
{
	close(self->dev.fd);
}

TEST_F(fake, null_outputs)
{
	struct snpu_device *dev = &self->dev;
	char host[16];

	EXPECT_EQ(-EINVAL, snpu_ctx_query(dev, NULL));
	EXPECT_EQ(-EINVAL, snpu_mem_alloc(dev, 4096, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, snpu_host_alloc(dev, 4096, NULL));
	EXPECT_EQ(-EINVAL, snpu_host_free(dev, NULL));
	EXPECT_EQ(-EINVAL, snpu_host_register(dev, host, 4096, NULL));
	EXPECT_EQ(-EINVAL, snpu_stream_create(dev, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, snpu_stream_query(dev, 1, NULL));
	EXPECT_EQ(-EINVAL, snpu_event_create(dev, NULL));
	EXPECT_EQ(-EINVAL, snpu_event_query(dev, 1, NULL));
	EXPECT_EQ(-EINVAL, snpu_event_elapsed_ns(dev, 1, 2, NULL));
	EXPECT_EQ(-EINVAL, snpu_callback_wait(dev, 0, NULL));
}

TEST_F(fake, null_inputs)
{
	struct snpu_device *dev = &self->dev;
	uint32_t handle = 7;

	EXPECT_EQ(-EINVAL, snpu_memcpy_h2d(dev, 1ULL << 44, NULL, 16));
	EXPECT_EQ(-EINVAL, snpu_memcpy_d2h(dev, NULL, 1ULL << 44, 16));
	EXPECT_EQ(-EINVAL, snpu_host_register(dev, NULL, 4096, &handle));
	EXPECT_EQ(7U, handle);
	EXPECT_EQ(-EINVAL, snpu_submit(dev, NULL, 1, NULL));
	EXPECT_EQ(-EINVAL, snpu_launch(dev, 1, SNPU_KERNEL_COPY, 1, NULL, 2));
}

/* Valid calls reach the kernel: /dev/null answers ENOTTY. */
TEST_F(fake, passed_to_kernel)
{
	struct snpu_device *dev = &self->dev;
	struct snpu_kernel_arg arg = snpu_arg_u64(0);
	struct snpu_callback_info info;
	struct snpu_stream_query sq;
	struct snpu_event_query eq;
	struct snpu_ctx_query cq;
	uint64_t u64 = 5;
	uint32_t u32 = 5;
	int64_t s64 = 5;
	char host[16];

	EXPECT_EQ(-ENOTTY, snpu_ctx_query(dev, &cq));
	EXPECT_EQ(-ENOTTY, snpu_nop(dev));
	EXPECT_EQ(-ENOTTY, snpu_mem_alloc(dev, 4096, 0, 0, &u64));
	EXPECT_EQ(5U, u64);
	EXPECT_EQ(-ENOTTY, snpu_mem_free(dev, 1ULL << 44));
	/* base and bytes are optional. */
	EXPECT_EQ(-ENOTTY, snpu_mem_query(dev, 1ULL << 44, NULL, NULL));
	/* Sizes are the kernel's to check, 0 included. */
	EXPECT_EQ(-ENOTTY, snpu_memcpy_h2d(dev, 1ULL << 44, host, 0));
	EXPECT_EQ(-ENOTTY, snpu_memcpy_d2h(dev, host, 1ULL << 44, 16));
	EXPECT_EQ(-ENOTTY, snpu_memcpy_d2d(dev, 1ULL << 44, 1ULL << 44, 16));
	EXPECT_EQ(-ENOTTY, snpu_host_register(dev, host, 16, &u32));
	EXPECT_EQ(5U, u32);
	EXPECT_EQ(-ENOTTY, snpu_host_unregister(dev, 1));
	EXPECT_EQ(-ENOTTY, snpu_stream_create(dev, 5, 0, &u32));
	EXPECT_EQ(5U, u32);
	EXPECT_EQ(-ENOTTY, snpu_stream_destroy(dev, 1, SNPU_STREAM_DESTROY_FORCE));
	EXPECT_EQ(-ENOTTY, snpu_stream_synchronize(dev, 1, 0));
	EXPECT_EQ(-ENOTTY, snpu_stream_query(dev, 1, &sq));
	EXPECT_EQ(-ENOTTY, snpu_stream_abort(dev, 1));
	EXPECT_EQ(-ENOTTY, snpu_stream_reset(dev, 1));
	EXPECT_EQ(-ENOTTY, snpu_stream_wait_event(dev, 1, 2));
	EXPECT_EQ(-ENOTTY, snpu_event_create(dev, &u32));
	EXPECT_EQ(-ENOTTY, snpu_event_destroy(dev, 1));
	EXPECT_EQ(-ENOTTY, snpu_event_query(dev, 1, &eq));
	EXPECT_EQ(-ENOTTY, snpu_event_synchronize(dev, 1, 0));
	EXPECT_EQ(-ENOTTY, snpu_event_elapsed_ns(dev, 1, 2, &s64));
	EXPECT_EQ(5, s64);
	EXPECT_EQ(-ENOTTY, snpu_event_record(dev, 2, 1));
	EXPECT_EQ(-ENOTTY, snpu_launch(dev, 1, SNPU_KERNEL_SPIN, 1, &arg, 1));
	EXPECT_EQ(-ENOTTY, snpu_launch(dev, 1, SNPU_KERNEL_NOP, 1, NULL, 0));
	EXPECT_EQ(-ENOTTY, snpu_memcpy_async(dev, 1, SNPU_COPY_D2D,
					     1ULL << 44, 1ULL << 44, 16));
	EXPECT_EQ(-ENOTTY, snpu_memset_async(dev, 1, 1ULL << 44, 255, 16));
	EXPECT_EQ(-ENOTTY, snpu_launch_host_func(dev, 1, 0));
	EXPECT_EQ(-ENOTTY, snpu_callback_wait(dev, -1, &info));
	/* The status range is the kernel's to check. */
	EXPECT_EQ(-ENOTTY, snpu_callback_done(dev, 1, -4095));
	EXPECT_EQ(-ENOTTY, snpu_callback_done(dev, 1, 1));
}

TEST_F(fake, memset_value)
{
	struct snpu_device *dev = &self->dev;

	EXPECT_EQ(-EINVAL, snpu_memset(dev, 1ULL << 44, 300, 16));
	EXPECT_EQ(-EINVAL, snpu_memset(dev, 1ULL << 44, 256, 16));
	EXPECT_EQ(-EINVAL, snpu_memset(dev, 1ULL << 44, -1, 16));
	EXPECT_EQ(-ENOTTY, snpu_memset(dev, 1ULL << 44, 0, 16));
	EXPECT_EQ(-ENOTTY, snpu_memset(dev, 1ULL << 44, 255, 16));

	EXPECT_EQ(-EINVAL, snpu_memset_async(dev, 1, 1ULL << 44, 300, 16));
	EXPECT_EQ(-EINVAL, snpu_memset_async(dev, 1, 1ULL << 44, -1, 16));
	EXPECT_EQ(-ENOTTY, snpu_memset_async(dev, 1, 1ULL << 44, 0, 16));
}

TEST_F(fake, submit_count)
{
	static struct snpu_task tasks[SNPU_SUBMIT_MAX + 1];
	struct snpu_device *dev = &self->dev;
	uint64_t seq = 9;
	unsigned int i;

	for (i = 0; i < SNPU_SUBMIT_MAX + 1; i++)
		snpu_prep_host_func(&tasks[i], 1, i);
	EXPECT_EQ(-EINVAL, snpu_submit(dev, tasks, 0, &seq));
	EXPECT_EQ(-EINVAL, snpu_submit(dev, tasks, SNPU_SUBMIT_MAX + 1, &seq));
	EXPECT_EQ(-EINVAL, snpu_submit(dev, tasks, ~0U, &seq));
	EXPECT_EQ(9U, seq);
	EXPECT_EQ(-ENOTTY, snpu_submit(dev, tasks, SNPU_SUBMIT_MAX, &seq));
	EXPECT_EQ(-ENOTTY, snpu_submit(dev, tasks, 1, NULL));
	EXPECT_EQ(9U, seq);
}

TEST_F(fake, launch_nargs)
{
	struct snpu_kernel_arg args[SNPU_KERNEL_MAX_ARGS + 1] = { 0 };
	struct snpu_device *dev = &self->dev;

	EXPECT_EQ(-EINVAL, snpu_launch(dev, 1, SNPU_KERNEL_GEMM_F32, 1, args,
				       SNPU_KERNEL_MAX_ARGS + 1));
	EXPECT_EQ(-EINVAL, snpu_launch(dev, 1, SNPU_KERNEL_GEMM_F32, 1, args,
				       ~0U));
	EXPECT_EQ(-ENOTTY, snpu_launch(dev, 1, SNPU_KERNEL_GEMM_F32, 1, args,
				       SNPU_KERNEL_MAX_ARGS));
}

TEST_F(fake, host_alloc_size)
{
	struct snpu_device *dev = &self->dev;
	char mark;
	struct snpu_host_buf buf = { .ptr = &mark, .bytes = 3, .handle = 4 };

	EXPECT_EQ(-EINVAL, snpu_host_alloc(dev, 0, &buf));
	EXPECT_EQ(-EINVAL, snpu_host_alloc(dev, SIZE_MAX, &buf));
	EXPECT_EQ(-ENOTTY, snpu_host_alloc(dev, 1, &buf));
	/* Left alone on failure. */
	EXPECT_EQ((void *)&mark, buf.ptr);
	EXPECT_EQ(3U, buf.bytes);
	EXPECT_EQ(4U, buf.handle);
}

/* A free that fails in HOST_FREE keeps the handle, to be retried. */
TEST_F(fake, host_free_unmapped)
{
	struct snpu_device *dev = &self->dev;
	struct snpu_host_buf buf = { .ptr = NULL, .bytes = 0, .handle = 4 };

	EXPECT_EQ(-ENOTTY, snpu_host_free(dev, &buf));
	EXPECT_EQ(4U, buf.handle);
}

/* The mapping goes first, and only once, even when HOST_FREE fails. */
TEST_F(fake, host_free_unmaps)
{
	struct snpu_device *dev = &self->dev;
	long page = sysconf(_SC_PAGESIZE);
	struct snpu_host_buf buf;
	unsigned char vec;
	void *p;

	p = mmap(NULL, page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	buf.ptr = p;
	buf.bytes = page;
	buf.handle = 4;
	EXPECT_EQ(-ENOTTY, snpu_host_free(dev, &buf));
	EXPECT_NULL(buf.ptr);
	EXPECT_EQ(0U, buf.bytes);
	EXPECT_EQ(4U, buf.handle);
	/* The page is gone: mincore() refuses an unmapped range. */
	EXPECT_EQ(-1, mincore(p, page, &vec));
	EXPECT_EQ(ENOMEM, errno);
}

/* ---- task helpers --------------------------------------------------- */

/* A task full of garbage, so that the helpers must zero it. */
static void garbage(struct snpu_task *t)
{
	memset(t, 0xa5, sizeof(*t));
}

TEST(arg_helpers)
{
	struct snpu_kernel_arg a;

	a = snpu_arg_buf(0x100000001000ULL, 4096);
	EXPECT_EQ(0x100000001000ULL, a.value);
	EXPECT_EQ(4096U, a.bytes);

	a = snpu_arg_u64(~0ULL);
	EXPECT_EQ(~0ULL, a.value);
	EXPECT_EQ(0U, a.bytes);

	a = snpu_arg_f32(1.0f);
	EXPECT_EQ(0x3f800000ULL, a.value);
	EXPECT_EQ(0U, a.bytes);

	/* Zero-extended: the kernel refuses f32 scalars with high bits. */
	a = snpu_arg_f32(-2.0f);
	EXPECT_EQ(0xc0000000ULL, a.value);
	EXPECT_EQ(0U, a.bytes);

	a = snpu_arg_f32(-0.0f);
	EXPECT_EQ(0x80000000ULL, a.value);
}

TEST(prep_launch_bytes)
{
	struct snpu_kernel_arg args[2] = {
		snpu_arg_buf(0x100000000000ULL, 64),
		snpu_arg_u64(42),
	};
	struct snpu_task t, want;
	unsigned int i;

	memset(&want, 0, sizeof(want));
	want.op = SNPU_OP_LAUNCH;
	want.stream = 3;
	want.launch.kernel = SNPU_KERNEL_FILL;
	want.launch.block_dim = 8;
	want.launch.args[0].value = 0x100000000000ULL;
	want.launch.args[0].bytes = 64;
	want.launch.args[1].value = 42;

	garbage(&t);
	ASSERT_EQ(0, snpu_prep_launch(&t, 3, SNPU_KERNEL_FILL, 8, args, 2));
	EXPECT_EQ(0, memcmp(&t, &want, sizeof(t)));
	EXPECT_EQ((__u32)SNPU_OP_LAUNCH, t.op);
	EXPECT_EQ(0U, t.flags);
	EXPECT_EQ(0U, t.reserved0);
	EXPECT_EQ(0U, t.user_data);
	for (i = 2; i < SNPU_KERNEL_MAX_ARGS; i++) {
		EXPECT_EQ(0U, t.launch.args[i].value);
		EXPECT_EQ(0U, t.launch.args[i].bytes);
	}
	/* args[1] ends at word 5 of the union; words 6..12 are args[2..5]. */
	for (i = 5; i < 13; i++)
		EXPECT_EQ(0U, t.raw[i]) TH_LOG("raw[%u]", i);
}

TEST(prep_launch_all_args)
{
	struct snpu_kernel_arg args[SNPU_KERNEL_MAX_ARGS];
	struct snpu_task t;
	unsigned int i;

	for (i = 0; i < SNPU_KERNEL_MAX_ARGS; i++)
		args[i] = snpu_arg_buf(1000 + i, 10 + i);
	garbage(&t);
	ASSERT_EQ(0, snpu_prep_launch(&t, 1, SNPU_KERNEL_GEMM_F32, 2, args,
				      SNPU_KERNEL_MAX_ARGS));
	for (i = 0; i < SNPU_KERNEL_MAX_ARGS; i++) {
		EXPECT_EQ(1000 + i, t.launch.args[i].value);
		EXPECT_EQ(10 + i, t.launch.args[i].bytes);
	}
	EXPECT_EQ(0U, t.flags);
	EXPECT_EQ(0U, t.reserved0);
	EXPECT_EQ(0U, t.user_data);
}

TEST(prep_launch_no_args)
{
	struct snpu_task t, want;

	memset(&want, 0, sizeof(want));
	want.op = SNPU_OP_LAUNCH;
	want.stream = 9;
	want.launch.kernel = SNPU_KERNEL_NOP;
	want.launch.block_dim = 1;

	garbage(&t);
	ASSERT_EQ(0, snpu_prep_launch(&t, 9, SNPU_KERNEL_NOP, 1, NULL, 0));
	EXPECT_EQ(0, memcmp(&t, &want, sizeof(t)));
}

/* A refused launch leaves the task as it was. */
TEST(prep_launch_refused)
{
	struct snpu_kernel_arg args[SNPU_KERNEL_MAX_ARGS + 1] = { 0 };
	struct snpu_task t, before;

	garbage(&t);
	before = t;
	EXPECT_EQ(-EINVAL, snpu_prep_launch(&t, 1, SNPU_KERNEL_NOP, 1, args,
					    SNPU_KERNEL_MAX_ARGS + 1));
	EXPECT_EQ(-EINVAL, snpu_prep_launch(&t, 1, SNPU_KERNEL_NOP, 1, NULL, 1));
	EXPECT_EQ(-EINVAL, snpu_prep_launch(NULL, 1, SNPU_KERNEL_NOP, 1, NULL, 0));
	EXPECT_EQ(0, memcmp(&t, &before, sizeof(t)));
}

TEST(prep_copy_bytes)
{
	struct snpu_task t, want;

	memset(&want, 0, sizeof(want));
	want.op = SNPU_OP_COPY;
	want.stream = 2;
	want.copy.dir = SNPU_COPY_D2H;
	want.copy.dst = 0x7f0000001000ULL;
	want.copy.src = 0x100000002000ULL;
	want.copy.bytes = 12345;

	garbage(&t);
	snpu_prep_copy(&t, 2, SNPU_COPY_D2H, 0x7f0000001000ULL,
		       0x100000002000ULL, 12345);
	EXPECT_EQ(0, memcmp(&t, &want, sizeof(t)));
	EXPECT_EQ(0U, t.copy.pad);
}

TEST(prep_memset_bytes)
{
	struct snpu_task t, want;

	memset(&want, 0, sizeof(want));
	want.op = SNPU_OP_MEMSET;
	want.stream = 4;
	want.memset.addr = 0x100000003000ULL;
	want.memset.bytes = 77;
	want.memset.value = 0xab;

	garbage(&t);
	snpu_prep_memset(&t, 4, 0x100000003000ULL, 0xab, 77);
	EXPECT_EQ(0, memcmp(&t, &want, sizeof(t)));

	/* Stored as is, for the kernel to refuse. */
	snpu_prep_memset(&t, 4, 0x100000003000ULL, 300, 77);
	EXPECT_EQ(300U, t.memset.value);
	EXPECT_EQ(0U, t.memset.pad);
}

TEST(prep_event_bytes)
{
	struct snpu_task t, want;

	memset(&want, 0, sizeof(want));
	want.op = SNPU_OP_EVENT_RECORD;
	want.stream = 5;
	want.event.event = 6;
	garbage(&t);
	snpu_prep_event_record(&t, 5, 6);
	EXPECT_EQ(0, memcmp(&t, &want, sizeof(t)));

	want.op = SNPU_OP_STREAM_WAIT;
	garbage(&t);
	snpu_prep_stream_wait(&t, 5, 6);
	EXPECT_EQ(0, memcmp(&t, &want, sizeof(t)));
}

TEST(prep_host_func_bytes)
{
	struct snpu_task t, want;

	memset(&want, 0, sizeof(want));
	want.op = SNPU_OP_HOST_FUNC;
	want.stream = 7;
	want.user_data = 0xdeadbeefcafef00dULL;
	garbage(&t);
	snpu_prep_host_func(&t, 7, 0xdeadbeefcafef00dULL);
	EXPECT_EQ(0, memcmp(&t, &want, sizeof(t)));
}

TEST(prep_coll_bytes)
{
	struct snpu_task t, want;

	memset(&want, 0, sizeof(want));
	want.op = SNPU_OP_COLL;
	want.stream = 7;
	want.coll.comm = 9;
	want.coll.coll = SNPU_COLL_BROADCAST;
	want.coll.dtype = SNPU_DTYPE_F32;
	want.coll.redop = 0;
	want.coll.count = 0x123456789ULL;
	want.coll.send = 0x1000;
	want.coll.recv = 0x2000;
	want.coll.root = 3;
	garbage(&t);
	snpu_prep_coll(&t, 7, 9, SNPU_COLL_BROADCAST, SNPU_DTYPE_F32, 0,
		       0x123456789ULL, 0x1000, 0x2000, 3);
	EXPECT_EQ(0, memcmp(&t, &want, sizeof(t)));
}

TEST_HARNESS_MAIN
