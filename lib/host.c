// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libsnpu: host memory that queued copies may use - driver-allocated and
 * mapped, or user memory registered (pinned) with the driver.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

static_assert(sizeof(struct snpu_host_alloc) == 48, "struct snpu_host_alloc changed");
static_assert(sizeof(struct snpu_host_register) == 48,
	      "struct snpu_host_register changed");
static_assert(sizeof(struct snpu_handle_op) == 32, "struct snpu_handle_op changed");

int snpu_host_alloc(struct snpu_device *dev, size_t bytes,
		    struct snpu_host_buf *buf)
{
	struct snpu_host_alloc a = {
		.size = sizeof(a),
		.bytes = bytes,
	};
	long page = sysconf(_SC_PAGESIZE);
	size_t len;
	void *ptr;
	int ret;

	if (!dev || !buf || !bytes || page <= 0)
		return -EINVAL;
	/* The driver rounds up to pages; the mapping must cover it all. */
	if (bytes > SIZE_MAX - (size_t)page + 1)
		return -EINVAL;
	len = (bytes + (size_t)page - 1) & ~((size_t)page - 1);

	ret = snpu_ioctl(dev->fd, SNPU_IOC_HOST_ALLOC, &a);
	if (ret)
		return ret;

	ptr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, dev->fd,
		   (off_t)a.mmap_offset);
	if (ptr == MAP_FAILED) {
		ret = -errno;
		snpu_ioctl_handle(dev, SNPU_IOC_HOST_FREE, a.handle, 0, 0);
		return ret;
	}

	buf->ptr = ptr;
	buf->bytes = len;
	buf->handle = a.handle;
	return 0;
}

int snpu_host_free(struct snpu_device *dev, struct snpu_host_buf *buf)
{
	int ret;

	if (!dev || !buf)
		return -EINVAL;

	/*
	 * Unmapped first: the handle then holds the last reference. Each
	 * step clears its part of @buf, so a call that failed half way can
	 * be repeated.
	 */
	if (buf->ptr) {
		if (munmap(buf->ptr, buf->bytes))
			return -errno;
		buf->ptr = NULL;
		buf->bytes = 0;
	}
	ret = snpu_ioctl_handle(dev, SNPU_IOC_HOST_FREE, buf->handle, 0, 0);
	if (!ret)
		buf->handle = 0;
	return ret;
}

int snpu_host_register(struct snpu_device *dev, void *ptr, size_t bytes,
		       uint32_t *handle)
{
	struct snpu_host_register r = {
		.size = sizeof(r),
		.addr = (uintptr_t)ptr,
		.bytes = bytes,
	};
	int ret;

	if (!dev || !ptr || !handle)
		return -EINVAL;

	ret = snpu_ioctl(dev->fd, SNPU_IOC_HOST_REGISTER, &r);
	if (!ret)
		*handle = r.handle;
	return ret;
}

int snpu_host_unregister(struct snpu_device *dev, uint32_t handle)
{
	return snpu_ioctl_handle(dev, SNPU_IOC_HOST_FREE, handle, 0, 0);
}
