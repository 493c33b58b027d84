// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libsnpu: opening, closing and describing a device and its context.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* The library is built for this ABI; see scripts/abi-sizes. */
static_assert(sizeof(struct snpu_info) == 88, "struct snpu_info changed");
static_assert(sizeof(struct snpu_ctx_query) == 96,
	      "struct snpu_ctx_query changed");

int snpu_open_path(const char *path, unsigned int flags,
		   struct snpu_device **devp)
{
	struct snpu_device *dev;
	struct snpu_info info;
	int ret;

	if (!path || !devp || (flags & ~SNPU_OPEN_CHECK_JOINS))
		return -EINVAL;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;

	dev->fd = open(path, O_RDWR | O_CLOEXEC);
	if (dev->fd < 0) {
		ret = -errno;
		free(dev);
		return ret;
	}
	snpu_snapshot_init(dev);
	snpu_graph_init(dev);

	/* An snpu device answers GET_INFO with an ABI we understand. */
	ret = snpu_get_info(dev, &info);
	if (!ret && info.abi_major != SNPU_ABI_MAJOR)
		ret = -EPROTO;
	if (!ret)
		ret = snpu_joins_init(dev, flags);
	if (ret) {
		snpu_close(dev);
		return ret;
	}

	*devp = dev;
	return 0;
}

int snpu_open(unsigned int index, unsigned int flags,
	      struct snpu_device **devp)
{
	char path[32];

	snprintf(path, sizeof(path), "/dev/snpu%u", index);
	return snpu_open_path(path, flags, devp);
}

void snpu_close(struct snpu_device *dev)
{
	if (!dev)
		return;
	snpu_joins_fini(dev);
	snpu_graph_fini(dev);
	snpu_snapshot_fini(dev);
	close(dev->fd);
	free(dev);
}

int snpu_device_fd(const struct snpu_device *dev)
{
	return dev ? dev->fd : -EINVAL;
}

int snpu_get_info(struct snpu_device *dev, struct snpu_info *info)
{
	if (!dev || !info)
		return -EINVAL;

	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	return snpu_ioctl(dev->fd, SNPU_IOC_GET_INFO, info);
}

int snpu_ctx_query(struct snpu_device *dev, struct snpu_ctx_query *q)
{
	if (!dev || !q)
		return -EINVAL;

	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	return snpu_ioctl(dev->fd, SNPU_IOC_CTX_QUERY, q);
}

int snpu_nop(struct snpu_device *dev)
{
	if (!dev)
		return -EINVAL;
	return snpu_ioctl(dev->fd, SNPU_IOC_NOP, NULL);
}
