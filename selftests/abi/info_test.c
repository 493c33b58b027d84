// SPDX-License-Identifier: GPL-2.0
/*
 * SNPU_IOC_GET_INFO through the raw ioctl and through libsnpu.
 *
 * Runs as root in the test VM with the module loaded with its default
 * parameters (devices=1 cores=4 mem_mb=256).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/snpu.h>

#include "snpu.h"

#include "kselftest_harness.h"

#define SNPU_DEV0	"/dev/snpu0"
#define SNPU_SYSFS0	"/sys/class/misc/snpu0/"

/* Return: 0 or -errno; the ioctl(2) of @cmd on @fd with @arg. */
static int raw_ioctl(int fd, unsigned long cmd, void *arg)
{
	int ret = ioctl(fd, cmd, arg);

	return ret < 0 ? -errno : ret;
}

/* GET_INFO with a zeroed struct of this header's size. */
static int get_info(int fd, struct snpu_info *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	return raw_ioctl(fd, SNPU_IOC_GET_INFO, info);
}

/* Read a decimal sysfs value. Return: 0 or -errno. */
static int read_ull(const char *path, unsigned long long *val)
{
	char buf[64], *end;
	ssize_t n;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	err = errno;
	close(fd);
	if (n < 0)
		return -err;
	buf[n] = '\0';
	errno = 0;
	*val = strtoull(buf, &end, 10);
	if (errno || end == buf || (*end && strcmp(end, "\n")))
		return -EINVAL;
	return 0;
}

/* Read a sysfs value of snpu0 or fail the test. */
#define SYSFS0(name) ({							\
	unsigned long long __v = 0;					\
									\
	ASSERT_EQ(0, read_ull(SNPU_SYSFS0 name, &__v))			\
		TH_LOG("cannot read " SNPU_SYSFS0 name);		\
	__v;								\
})

/* Return: the number of open file descriptors of this process, or -1. */
static int count_fds(void)
{
	struct dirent *de;
	DIR *dir;
	int n = 0;

	dir = opendir("/proc/self/fd");
	if (!dir)
		return -1;
	while ((de = readdir(dir)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(dir);
	return n;
}

FIXTURE(info) {
	int fd;
};

FIXTURE_SETUP(info)
{
	self->fd = open(SNPU_DEV0, O_RDWR | O_CLOEXEC);
	ASSERT_GE(self->fd, 0) TH_LOG("open " SNPU_DEV0 ": %s",
				      strerror(errno));
}

FIXTURE_TEARDOWN(info)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(info, abi_version)
{
	struct snpu_info info;

	ASSERT_EQ(0, get_info(self->fd, &info));
	EXPECT_EQ((__u32)SNPU_ABI_MAJOR, info.abi_major);
	EXPECT_EQ((__u32)SNPU_ABI_MINOR, info.abi_minor);
}

TEST_F(info, size_written_back)
{
	struct snpu_info info;

	ASSERT_EQ(0, get_info(self->fd, &info));
	EXPECT_EQ((__u32)sizeof(struct snpu_info), info.size);
	EXPECT_EQ(0U, info.flags);
}

TEST_F(info, cores_match_sysfs)
{
	struct snpu_info info;
	unsigned long long cores = SYSFS0("cores");

	ASSERT_EQ(0, get_info(self->fd, &info));
	EXPECT_EQ(cores, (unsigned long long)info.cores);
	EXPECT_EQ(4U, info.cores);
}

TEST_F(info, mem_total_matches_sysfs)
{
	struct snpu_info info;
	unsigned long long mem_mb = SYSFS0("mem_mb");

	ASSERT_EQ(0, get_info(self->fd, &info));
	EXPECT_EQ(mem_mb << 20, (unsigned long long)info.mem_total);
	EXPECT_EQ(256ULL << 20, (unsigned long long)info.mem_total);
}

TEST_F(info, mem_used_matches_sysfs)
{
	struct snpu_info info;
	unsigned long long used = SYSFS0("mem_used");

	ASSERT_EQ(0, get_info(self->fd, &info));
	EXPECT_EQ(used, (unsigned long long)info.mem_used);
	EXPECT_EQ(0ULL, (unsigned long long)info.mem_used);
}

TEST_F(info, max_block_dim)
{
	struct snpu_info info;

	ASSERT_EQ(0, get_info(self->fd, &info));
	EXPECT_GT(info.max_block_dim, 0U);
}

/* The bound on the work of one block (built-in kernels): 2^24. */
TEST_F(info, max_block_work)
{
	struct snpu_info info;

	ASSERT_EQ(0, get_info(self->fd, &info));
	EXPECT_EQ(SNPU_KERNEL_BLOCK_WORK_MAX,
		  (unsigned long long)info.max_block_work);
	EXPECT_EQ(1ULL << 24, (unsigned long long)info.max_block_work);
}

TEST_F(info, mem_align_power_of_two)
{
	struct snpu_info info;

	ASSERT_EQ(0, get_info(self->fd, &info));
	ASSERT_NE(0U, info.mem_align);
	EXPECT_EQ(0U, info.mem_align & (info.mem_align - 1))
		TH_LOG("mem_align %u", info.mem_align);
}

TEST_F(info, caps_known)
{
	struct snpu_info info;

	ASSERT_EQ(0, get_info(self->fd, &info));
	EXPECT_EQ(0ULL, (unsigned long long)(info.caps & ~SNPU_CAPS_KNOWN))
		TH_LOG("caps 0x%llx", (unsigned long long)info.caps);
}

TEST_F(info, dev_index)
{
	struct snpu_info info;

	ASSERT_EQ(0, get_info(self->fd, &info));
	EXPECT_EQ(0U, info.dev_index);
}

TEST_F(info, reserved_zero_on_output)
{
	struct snpu_info info;
	unsigned int i;

	/* Output fields start as garbage; reserved must be zero on input. */
	memset(&info, 0xa5, sizeof(info));
	info.size = sizeof(info);
	info.flags = 0;
	memset(info.reserved, 0, sizeof(info.reserved));
	ASSERT_EQ(0, raw_ioctl(self->fd, SNPU_IOC_GET_INFO, &info));
	for (i = 0; i < sizeof(info.reserved) / sizeof(info.reserved[0]); i++)
		EXPECT_EQ(0ULL, (unsigned long long)info.reserved[i])
			TH_LOG("reserved[%u]", i);
	/* And the garbage was replaced. */
	EXPECT_EQ(0U, info.dev_index);
	EXPECT_EQ((__u32)SNPU_ABI_MAJOR, info.abi_major);
}

/* A caller built against the first published struct. */
TEST_F(info, ver0_size)
{
	union {
		struct snpu_info info;
		unsigned char b[sizeof(struct snpu_info) + 64];
	} u;
	struct snpu_info *info = &u.info;
	size_t i;

	memset(&u, 0, sizeof(u));
	/* Past the caller's struct: must stay untouched. */
	memset(u.b + SNPU_INFO_SIZE_VER0, 0x5a,
	       sizeof(u) - SNPU_INFO_SIZE_VER0);
	info->size = SNPU_INFO_SIZE_VER0;

	ASSERT_EQ(0, raw_ioctl(self->fd, SNPU_IOC_GET_INFO, info));
	EXPECT_EQ((__u32)SNPU_INFO_SIZE_VER0, info->size);
	EXPECT_EQ((__u32)SNPU_ABI_MAJOR, info->abi_major);
	EXPECT_EQ(4U, info->cores);
	EXPECT_EQ(256ULL << 20, (unsigned long long)info->mem_total);
	for (i = SNPU_INFO_SIZE_VER0; i < sizeof(u); i++)
		ASSERT_EQ(0x5a, u.b[i]) TH_LOG("byte %zu written", i);
}

/* A caller built against a newer header with a larger struct. */
TEST_F(info, larger_caller)
{
	union {
		struct snpu_info info;
		unsigned char b[sizeof(struct snpu_info) + 16];
	} u;
	size_t i;

	memset(&u, 0, sizeof(u));
	u.info.size = sizeof(u);

	ASSERT_EQ(0, raw_ioctl(self->fd, SNPU_IOC_GET_INFO, &u));
	EXPECT_EQ((__u32)sizeof(struct snpu_info), u.info.size);
	EXPECT_EQ(4U, u.info.cores);
	for (i = sizeof(struct snpu_info); i < sizeof(u); i++)
		ASSERT_EQ(0, u.b[i]) TH_LOG("byte %zu written", i);
}

/* The size bits of the command do not matter; the size field does. */
TEST_F(info, cmd_size_bits_ignored)
{
	const unsigned long cmd = _IOC(_IOC_READ | _IOC_WRITE,
				       SNPU_IOC_MAGIC, 0, 200);
	struct snpu_info info;

	ASSERT_NE((unsigned long)SNPU_IOC_GET_INFO, cmd);
	memset(&info, 0, sizeof(info));
	info.size = sizeof(info);
	ASSERT_EQ(0, raw_ioctl(self->fd, cmd, &info));
	EXPECT_EQ((__u32)sizeof(info), info.size);
	EXPECT_EQ(4U, info.cores);
	EXPECT_EQ((__u32)SNPU_ABI_MAJOR, info.abi_major);
}

TEST_F(info, lib_get_info_matches_raw)
{
	struct snpu_info raw, lib;
	struct snpu_device *dev = NULL;

	ASSERT_EQ(0, get_info(self->fd, &raw));
	ASSERT_EQ(0, snpu_open(0, 0, &dev));
	ASSERT_NE(NULL, dev);
	memset(&lib, 0xa5, sizeof(lib));
	EXPECT_EQ(0, snpu_get_info(dev, &lib));
	snpu_close(dev);

	EXPECT_EQ(raw.size, lib.size);
	EXPECT_EQ(raw.abi_major, lib.abi_major);
	EXPECT_EQ(raw.abi_minor, lib.abi_minor);
	EXPECT_EQ(raw.cores, lib.cores);
	EXPECT_EQ(raw.dev_index, lib.dev_index);
	EXPECT_EQ(0, memcmp(&raw, &lib, sizeof(raw)));
}

TEST_F(info, lib_open_missing_device)
{
	struct snpu_device *dev = NULL;

	EXPECT_EQ(-ENOENT, snpu_open(99, 0, &dev));
}

TEST_F(info, lib_open_bad_flags)
{
	struct snpu_device *dev = NULL;

	EXPECT_EQ(-EINVAL, snpu_open(0, ~SNPU_OPEN_CHECK_JOINS, &dev));
}

TEST_F(info, lib_open_not_snpu)
{
	struct snpu_device *dev = NULL;
	int before, after;

	before = count_fds();
	ASSERT_GT(before, 0);
	EXPECT_EQ(-ENOTTY, snpu_open_path("/dev/null", 0, &dev));
	after = count_fds();
	EXPECT_EQ(before, after);
}

TEST_F(info, lib_get_info_null_device)
{
	struct snpu_info info;

	EXPECT_EQ(-EINVAL, snpu_get_info(NULL, &info));
}

TEST_F(info, lib_device_fd)
{
	struct snpu_device *dev = NULL;
	struct snpu_info info;
	int fd;

	ASSERT_EQ(0, snpu_open(0, 0, &dev));
	fd = snpu_device_fd(dev);
	EXPECT_GE(fd, 0);
	EXPECT_NE(self->fd, fd);
	EXPECT_EQ(0, get_info(fd, &info));
	EXPECT_EQ(0U, info.dev_index);
	snpu_close(dev);
}

TEST_F(info, lib_contexts)
{
	struct snpu_device *a = NULL, *b = NULL;
	unsigned long long before = SYSFS0("contexts");

	/* The fixture's own open file is one. */
	ASSERT_GE(before, 1ULL);
	ASSERT_EQ(0, snpu_open(0, 0, &a));
	ASSERT_EQ(0, snpu_open(0, 0, &b));
	EXPECT_NE(snpu_device_fd(a), snpu_device_fd(b));
	EXPECT_EQ(before + 2, SYSFS0("contexts"));
	snpu_close(a);
	EXPECT_EQ(before + 1, SYSFS0("contexts"));
	snpu_close(b);
	EXPECT_EQ(before, SYSFS0("contexts"));
}

TEST_HARNESS_MAIN
