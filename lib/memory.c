// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libsnpu: device memory - allocation, lookup and the synchronous copies
 * and memset.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"

static_assert(sizeof(struct snpu_mem_alloc) == 48, "struct snpu_mem_alloc changed");
static_assert(sizeof(struct snpu_mem_free) == 32, "struct snpu_mem_free changed");
static_assert(sizeof(struct snpu_mem_query) == 48, "struct snpu_mem_query changed");
static_assert(sizeof(struct snpu_mem_copy) == 56, "struct snpu_mem_copy changed");
static_assert(sizeof(struct snpu_mem_set) == 48, "struct snpu_mem_set changed");
static_assert(sizeof(struct snpu_mem_export) == 48,
	      "struct snpu_mem_export changed");
static_assert(sizeof(struct snpu_mem_import) == 48,
	      "struct snpu_mem_import changed");

int snpu_mem_alloc(struct snpu_device *dev, uint64_t bytes, uint64_t align,
		   unsigned int flags, uint64_t *addr)
{
	struct snpu_mem_alloc a = {
		.size = sizeof(a),
		.flags = flags,
		.bytes = bytes,
		.align = align,
	};
	int ret;

	if (!dev || !addr)
		return -EINVAL;

	ret = snpu_ioctl(dev->fd, SNPU_IOC_MEM_ALLOC, &a);
	if (!ret)
		*addr = a.addr;
	return ret;
}

int snpu_mem_free(struct snpu_device *dev, uint64_t addr)
{
	struct snpu_mem_free f = {
		.size = sizeof(f),
		.addr = addr,
	};

	if (!dev)
		return -EINVAL;
	return snpu_ioctl(dev->fd, SNPU_IOC_MEM_FREE, &f);
}

int snpu_mem_query(struct snpu_device *dev, uint64_t addr, uint64_t *base,
		   uint64_t *bytes)
{
	struct snpu_mem_query q = {
		.size = sizeof(q),
		.addr = addr,
	};
	int ret;

	if (!dev)
		return -EINVAL;

	ret = snpu_ioctl(dev->fd, SNPU_IOC_MEM_QUERY, &q);
	if (ret)
		return ret;
	if (base)
		*base = q.base;
	if (bytes)
		*bytes = q.bytes;
	return 0;
}

static int snpu_mem_copy(struct snpu_device *dev, uint32_t dir, uint64_t dst,
			 uint64_t src, size_t n)
{
	struct snpu_mem_copy c = {
		.size = sizeof(c),
		.dir = dir,
		.dst = dst,
		.src = src,
		.bytes = n,
	};

	if (!dev)
		return -EINVAL;
	return snpu_ioctl(dev->fd, SNPU_IOC_MEM_COPY, &c);
}

int snpu_memcpy_h2d(struct snpu_device *dev, uint64_t dst, const void *src,
		    size_t n)
{
	if (!src)
		return -EINVAL;
	return snpu_mem_copy(dev, SNPU_COPY_H2D, dst, (uintptr_t)src, n);
}

int snpu_memcpy_d2h(struct snpu_device *dev, void *dst, uint64_t src,
		    size_t n)
{
	if (!dst)
		return -EINVAL;
	return snpu_mem_copy(dev, SNPU_COPY_D2H, (uintptr_t)dst, src, n);
}

int snpu_memcpy_d2d(struct snpu_device *dev, uint64_t dst, uint64_t src,
		    size_t n)
{
	return snpu_mem_copy(dev, SNPU_COPY_D2D, dst, src, n);
}

int snpu_memset(struct snpu_device *dev, uint64_t addr, int value, size_t n)
{
	struct snpu_mem_set m = {
		.size = sizeof(m),
		.addr = addr,
		.bytes = n,
		.value = (uint32_t)value,
	};

	if (!dev || value < 0 || value > 255)
		return -EINVAL;
	return snpu_ioctl(dev->fd, SNPU_IOC_MEM_SET, &m);
}

int snpu_mem_export(struct snpu_device *dev, uint64_t addr, uint64_t bytes,
		    unsigned int flags, int *dmabuf_fd)
{
	struct snpu_mem_export x = {
		.size = sizeof(x),
		.flags = flags,
		.addr = addr,
		.bytes = bytes,
	};
	int ret;

	if (!dev || !dmabuf_fd || flags & ~SNPU_EXPORT_CLOEXEC)
		return -EINVAL;

	ret = snpu_ioctl(dev->fd, SNPU_IOC_MEM_EXPORT, &x);
	if (!ret)
		*dmabuf_fd = x.fd;
	return ret;
}

int snpu_mem_import(struct snpu_device *dev, int dmabuf_fd,
		    unsigned int flags, uint64_t *addr, uint64_t *bytes)
{
	struct snpu_mem_import x = {
		.size = sizeof(x),
		.flags = flags,
		.fd = dmabuf_fd,
	};
	int ret;

	if (!dev || !addr || flags)
		return -EINVAL;

	ret = snpu_ioctl(dev->fd, SNPU_IOC_MEM_IMPORT, &x);
	if (ret)
		return ret;
	*addr = x.addr;
	if (bytes)
		*bytes = x.bytes;
	return 0;
}
