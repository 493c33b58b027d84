// SPDX-License-Identifier: GPL-2.0
/*
 * libsnpu's dma-buf calls (LIBSNPU_0.13, ABI 0.13): snpu_mem_export() and
 * snpu_mem_import() on two files of device 0, through mmap(2) as well,
 * and their argument checks.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "snpu.h"

#include "kselftest_harness.h"

#define BYTES	(4 * 4096)

FIXTURE(dmabuf) {
	struct snpu_device *a, *b;
	uint32_t sb;
	uint64_t buf;
};

FIXTURE_SETUP(dmabuf)
{
	ASSERT_EQ(0, snpu_open(0, 0, &self->a));
	ASSERT_EQ(0, snpu_open(0, 0, &self->b));
	ASSERT_EQ(0, snpu_stream_create(self->b, SNPU_PRIO_NORMAL, 0,
					&self->sb));
	ASSERT_EQ(0, snpu_mem_alloc(self->a, BYTES, 0, 0, &self->buf));
}

FIXTURE_TEARDOWN(dmabuf)
{
	snpu_close(self->a);
	snpu_close(self->b);
}

/* A exports, B imports and writes; A and a mapping see B's bytes. */
TEST_F(dmabuf, export_import_write_back)
{
	uint8_t host[BYTES], *p;
	uint64_t addr, bytes = 0;
	int fd;

	ASSERT_EQ(0, snpu_mem_export(self->a, self->buf, BYTES,
				     SNPU_EXPORT_CLOEXEC, &fd));
	EXPECT_EQ(FD_CLOEXEC, fcntl(fd, F_GETFD) & FD_CLOEXEC);
	ASSERT_EQ(0, snpu_mem_import(self->b, fd, 0, &addr, &bytes));
	EXPECT_EQ((uint64_t)BYTES, bytes);
	ASSERT_EQ(0, snpu_memset_async(self->b, self->sb, addr, 0x3c, BYTES));
	ASSERT_EQ(0, snpu_stream_synchronize(self->b, self->sb, -1));
	ASSERT_EQ(0, snpu_memcpy_d2h(self->a, host, self->buf, BYTES));
	EXPECT_EQ(0x3c, host[0]);
	EXPECT_EQ(0x3c, host[BYTES - 1]);
	p = mmap(NULL, BYTES, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0x3c, p[BYTES / 2]);
	munmap(p, BYTES);
	close(fd);
	/* Without the size out-parameter. */
	ASSERT_EQ(0, snpu_mem_export(self->a, self->buf, 4096, 0, &fd));
	ASSERT_EQ(0, snpu_mem_import(self->b, fd, 0, &addr, NULL));
	close(fd);
	ASSERT_EQ(0, snpu_mem_free(self->b, addr));
}

/* The library's own checks, then the driver's errors passed through. */
TEST_F(dmabuf, argument_checks)
{
	uint64_t addr;
	int fd, p[2];

	EXPECT_EQ(-EINVAL, snpu_mem_export(NULL, self->buf, 4096, 0, &fd));
	EXPECT_EQ(-EINVAL, snpu_mem_export(self->a, self->buf, 4096, 0, NULL));
	EXPECT_EQ(-EINVAL, snpu_mem_export(self->a, self->buf, 4096, 2, &fd));
	EXPECT_EQ(-EINVAL, snpu_mem_export(self->a, self->buf, 100, 0, &fd));
	EXPECT_EQ(-EFAULT, snpu_mem_export(self->a, self->buf, 2 * BYTES, 0,
					   &fd));
	EXPECT_EQ(-EINVAL, snpu_mem_import(NULL, 0, 0, &addr, NULL));
	EXPECT_EQ(-EINVAL, snpu_mem_import(self->b, 0, 0, NULL, NULL));
	EXPECT_EQ(-EINVAL, snpu_mem_import(self->b, 0, 1, &addr, NULL));
	EXPECT_EQ(-EBADF, snpu_mem_import(self->b, -1, 0, &addr, NULL));
	ASSERT_EQ(0, pipe(p));
	EXPECT_EQ(-EINVAL, snpu_mem_import(self->b, p[0], 0, &addr, NULL));
	close(p[0]);
	close(p[1]);
}

TEST_HARNESS_MAIN
