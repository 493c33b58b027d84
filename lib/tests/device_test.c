// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit tests of libsnpu that need no snpu device: argument checks
 * and the refusal of files that are not snpu devices. Built for the host
 * under ASan/UBSan.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "snpu.h"

#include "kselftest_harness.h"

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

TEST(open_flags)
{
	struct snpu_device *dev = NULL;

	EXPECT_EQ(-EINVAL, snpu_open(0, 1U << 1, &dev));
	EXPECT_EQ(-EINVAL, snpu_open(0, 1U << 31, &dev));
	EXPECT_NULL(dev);
}

TEST(open_path_flags)
{
	struct snpu_device *dev = NULL;

	EXPECT_EQ(-EINVAL, snpu_open_path("/dev/null",
					  ~SNPU_OPEN_CHECK_JOINS, &dev));
	EXPECT_NULL(dev);
}

TEST(open_null_devp)
{
	EXPECT_EQ(-EINVAL, snpu_open(0, 0, NULL));
}

TEST(open_path_null_devp)
{
	EXPECT_EQ(-EINVAL, snpu_open_path("/dev/null", 0, NULL));
}

TEST(open_path_null_path)
{
	struct snpu_device *dev = NULL;

	EXPECT_EQ(-EINVAL, snpu_open_path(NULL, 0, &dev));
	EXPECT_NULL(dev);
}

TEST(open_path_missing)
{
	struct snpu_device *dev = NULL;

	EXPECT_EQ(-ENOENT, snpu_open_path("/nonexistent", 0, &dev));
	EXPECT_NULL(dev);
}

/* A file that opens but does not answer GET_INFO is no snpu device. */
TEST(open_path_not_snpu)
{
	struct snpu_device *dev = NULL;
	int before, after;

	before = count_fds();
	ASSERT_GT(before, 0);
	EXPECT_EQ(-ENOTTY, snpu_open_path("/dev/null", 0, &dev));
	EXPECT_NULL(dev);
	after = count_fds();
	EXPECT_EQ(before, after) TH_LOG("the failed open leaked a file");
}

TEST(close_null)
{
	snpu_close(NULL);
	/* Still alive, and the library still works. */
	EXPECT_EQ(-EINVAL, snpu_device_fd(NULL));
}

TEST(device_fd_null)
{
	EXPECT_EQ(-EINVAL, snpu_device_fd(NULL));
}

TEST(get_info_null_device)
{
	struct snpu_info info;

	EXPECT_EQ(-EINVAL, snpu_get_info(NULL, &info));
}

TEST_HARNESS_MAIN
