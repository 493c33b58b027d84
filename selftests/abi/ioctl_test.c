// SPDX-License-Identifier: GPL-2.0
/*
 * Bad ioctls on /dev/snpu0: every way the argument rules of the uapi header
 * can be broken, each with the errno the header documents. A refused call
 * leaves the caller's struct as it was (except @size on E2BIG, which the
 * kernel sets to the size it knows).
 *
 * Runs as root in the test VM with the module loaded with its default
 * parameters.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/snpu.h>

#include "kselftest_harness.h"

#define SNPU_DEV0	"/dev/snpu0"
#define SENTINEL	0xa5

/* Return: 0 or -errno; the ioctl(2) of @cmd on @fd with @arg. */
static int raw_ioctl(int fd, unsigned long cmd, void *arg)
{
	int ret = ioctl(fd, cmd, arg);

	return ret < 0 ? -errno : ret;
}

/*
 * Fill @info with the sentinel, except the input fields: @size as given,
 * @flags and @reserved zero. Valid input for GET_INFO when @size is.
 */
static void info_fill(struct snpu_info *info, __u32 size)
{
	memset(info, SENTINEL, sizeof(*info));
	info->size = size;
	info->flags = 0;
	memset(info->reserved, 0, sizeof(info->reserved));
}

/* Call @cmd with @info and check it fails with @err leaving @info as is. */
#define ASSERT_REFUSED(fd, cmd, info, err) do {				\
	struct snpu_info __before = *(info);				\
									\
	ASSERT_EQ(-(err), raw_ioctl(fd, cmd, info));			\
	ASSERT_EQ(0, memcmp(&__before, info, sizeof(__before)))	\
		TH_LOG("the refused call modified its argument");	\
} while (0)

FIXTURE(ioctl) {
	int fd;
	long page;
};

FIXTURE_SETUP(ioctl)
{
	self->page = sysconf(_SC_PAGESIZE);
	ASSERT_GT(self->page, 0);
	self->fd = open(SNPU_DEV0, O_RDWR | O_CLOEXEC);
	ASSERT_GE(self->fd, 0) TH_LOG("open " SNPU_DEV0 ": %s",
				      strerror(errno));
}

FIXTURE_TEARDOWN(ioctl)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* Sanity: the well-formed call these tests break one rule of works. */
TEST_F(ioctl, valid_call)
{
	struct snpu_info info;

	info_fill(&info, sizeof(info));
	ASSERT_EQ(0, raw_ioctl(self->fd, SNPU_IOC_GET_INFO, &info));
	EXPECT_EQ((__u32)sizeof(info), info.size);
	EXPECT_EQ(0U, info.dev_index);
}

TEST_F(ioctl, unknown_nr)
{
	struct snpu_info info;

	info_fill(&info, sizeof(info));
	ASSERT_REFUSED(self->fd, _IOWR(SNPU_IOC_MAGIC, 0x7f, struct snpu_info),
		       &info, ENOTTY);
}

TEST_F(ioctl, wrong_type)
{
	struct snpu_info info;

	info_fill(&info, sizeof(info));
	ASSERT_REFUSED(self->fd, _IOWR('T', 0, struct snpu_info), &info,
		       ENOTTY);
}

TEST_F(ioctl, write_only_dir)
{
	struct snpu_info info;

	info_fill(&info, sizeof(info));
	ASSERT_REFUSED(self->fd, _IOW(SNPU_IOC_MAGIC, 0, struct snpu_info),
		       &info, ENOTTY);
}

TEST_F(ioctl, read_only_dir)
{
	struct snpu_info info;

	info_fill(&info, sizeof(info));
	ASSERT_REFUSED(self->fd, _IOR(SNPU_IOC_MAGIC, 0, struct snpu_info),
		       &info, ENOTTY);
}

TEST_F(ioctl, no_dir)
{
	struct snpu_info info;

	info_fill(&info, sizeof(info));
	ASSERT_REFUSED(self->fd, _IO(SNPU_IOC_MAGIC, 0), &info, ENOTTY);
}

TEST_F(ioctl, size_zero)
{
	struct snpu_info info;

	info_fill(&info, 0);
	ASSERT_REFUSED(self->fd, SNPU_IOC_GET_INFO, &info, EINVAL);
}

TEST_F(ioctl, size_below_ver0)
{
	struct snpu_info info;

	info_fill(&info, SNPU_INFO_SIZE_VER0 - 8);
	ASSERT_REFUSED(self->fd, SNPU_IOC_GET_INFO, &info, EINVAL);
}

TEST_F(ioctl, size_header_only)
{
	struct snpu_info info;

	info_fill(&info, 4);
	ASSERT_REFUSED(self->fd, SNPU_IOC_GET_INFO, &info, EINVAL);
}

/* A larger struct whose unknown bytes are not zero: E2BIG, size told. */
TEST_F(ioctl, size_too_long_nonzero_tail)
{
	union {
		struct snpu_info info;
		unsigned char b[sizeof(struct snpu_info) + 8];
	} u, want;

	memset(&u, 0, sizeof(u));
	info_fill(&u.info, sizeof(u));
	u.b[sizeof(u) - 1] = 1;
	want = u;
	want.info.size = sizeof(struct snpu_info);

	ASSERT_EQ(-E2BIG, raw_ioctl(self->fd, SNPU_IOC_GET_INFO, &u));
	EXPECT_EQ((__u32)sizeof(struct snpu_info), u.info.size);
	EXPECT_EQ(0, memcmp(&want, &u, sizeof(u)))
		TH_LOG("E2BIG modified more than @size");
}

TEST_F(ioctl, size_above_max)
{
	const size_t len = SNPU_IOC_MAX_SIZE + 8;
	unsigned char *buf, *want;
	struct snpu_info *info;

	buf = calloc(1, len);
	want = calloc(1, len);
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, want);
	info = (struct snpu_info *)buf;
	info_fill(info, len);
	memcpy(want, buf, len);
	((struct snpu_info *)want)->size = sizeof(struct snpu_info);

	EXPECT_EQ(-E2BIG, raw_ioctl(self->fd, SNPU_IOC_GET_INFO, buf));
	EXPECT_EQ((__u32)sizeof(struct snpu_info), info->size);
	EXPECT_EQ(0, memcmp(want, buf, len))
		TH_LOG("E2BIG modified more than @size");
	free(want);
	free(buf);
}

TEST_F(ioctl, size_max_zero_tail)
{
	const size_t len = SNPU_IOC_MAX_SIZE;
	struct snpu_info *info;
	unsigned char *buf;
	size_t i;

	buf = calloc(1, len);
	ASSERT_NE(NULL, buf);
	info = (struct snpu_info *)buf;
	info->size = len;

	EXPECT_EQ(0, raw_ioctl(self->fd, SNPU_IOC_GET_INFO, buf));
	EXPECT_EQ((__u32)sizeof(struct snpu_info), info->size);
	EXPECT_EQ((__u32)SNPU_ABI_MAJOR, info->abi_major);
	EXPECT_GT(info->cores, 0U);
	for (i = sizeof(struct snpu_info); i < len; i++)
		if (buf[i])
			break;
	EXPECT_EQ(len, i) TH_LOG("byte %zu past the struct written", i);
	free(buf);
}

TEST_F(ioctl, flags_bit0)
{
	struct snpu_info info;

	info_fill(&info, sizeof(info));
	info.flags = 1U << 0;
	ASSERT_REFUSED(self->fd, SNPU_IOC_GET_INFO, &info, EINVAL);
}

TEST_F(ioctl, flags_bit31)
{
	struct snpu_info info;

	info_fill(&info, sizeof(info));
	info.flags = 1U << 31;
	ASSERT_REFUSED(self->fd, SNPU_IOC_GET_INFO, &info, EINVAL);
}

TEST_F(ioctl, reserved_nonzero)
{
	const unsigned int n = sizeof(((struct snpu_info *)0)->reserved) /
			       sizeof(((struct snpu_info *)0)->reserved[0]);
	struct snpu_info info;
	unsigned int i;

	for (i = 0; i < n; i++) {
		info_fill(&info, sizeof(info));
		info.reserved[i] = 1ULL << (i * 16);
		ASSERT_REFUSED(self->fd, SNPU_IOC_GET_INFO, &info, EINVAL);
	}
	/* The highest bit of the last one counts too. */
	info_fill(&info, sizeof(info));
	info.reserved[n - 1] = 1ULL << 63;
	ASSERT_REFUSED(self->fd, SNPU_IOC_GET_INFO, &info, EINVAL);
}

TEST_F(ioctl, null_argument)
{
	EXPECT_EQ(-EFAULT, raw_ioctl(self->fd, SNPU_IOC_GET_INFO, NULL));
}

TEST_F(ioctl, unmapped_argument)
{
	void *p;

	p = mmap(NULL, self->page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-EFAULT, raw_ioctl(self->fd, SNPU_IOC_GET_INFO, p));
	munmap(p, self->page);
}

/* @size is readable, the rest of the struct runs into a PROT_NONE page. */
TEST_F(ioctl, argument_crosses_into_unmapped)
{
	struct snpu_info *info;
	unsigned char before[16];
	char *p;

	p = mmap(NULL, 2 * self->page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, mprotect(p + self->page, self->page, PROT_NONE));

	info = (struct snpu_info *)(p + self->page - sizeof(before));
	memset(info, SENTINEL, sizeof(before));
	info->size = sizeof(*info);
	info->flags = 0;
	memcpy(before, info, sizeof(before));

	EXPECT_EQ(-EFAULT, raw_ioctl(self->fd, SNPU_IOC_GET_INFO, info));
	EXPECT_EQ(0, memcmp(before, info, sizeof(before)));
	munmap(p, 2 * self->page);
}

/* Valid input that cannot be written back. */
TEST_F(ioctl, read_only_argument)
{
	struct snpu_info *info, before;
	void *p;

	p = mmap(NULL, self->page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	info = p;
	info_fill(info, sizeof(*info));
	before = *info;
	ASSERT_EQ(0, mprotect(p, self->page, PROT_READ));

	EXPECT_EQ(-EFAULT, raw_ioctl(self->fd, SNPU_IOC_GET_INFO, info));
	EXPECT_EQ(0, memcmp(&before, info, sizeof(before)));

	/* The same struct, writable again, is accepted. */
	ASSERT_EQ(0, mprotect(p, self->page, PROT_READ | PROT_WRITE));
	EXPECT_EQ(0, raw_ioctl(self->fd, SNPU_IOC_GET_INFO, info));
	munmap(p, self->page);
}

TEST_HARNESS_MAIN
