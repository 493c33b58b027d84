// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libsnpu: checkpoint a process's device state to a file and restore it
 * into a new process (Documentation/checkpoint.rst).
 *
 * The calls act on a process by pid (0: the caller's own), through any
 * open device of the caller: SNPU_IOC_CKPT_PROC. A restore recreates one
 * context of an image in a fresh device file of the caller:
 * SNPU_IOC_CKPT_RESTORE. snpu_ckpt_image_devices() reads an image's list
 * of contexts so that a caller knows which device each one needs (and
 * can map it to another one).
 */
#include <assert.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static_assert(sizeof(struct snpu_ckpt_proc) == SNPU_CKPT_PROC_SIZE_VER0,
	      "struct snpu_ckpt_proc changed");
static_assert(sizeof(struct snpu_ckpt_restore) == SNPU_CKPT_RESTORE_SIZE_VER0,
	      "struct snpu_ckpt_restore changed");

/* One step; LOCK and CHECKPOINT wait, so a signal ends them (-EINTR). */
static int snpu_ckpt_proc_call(struct snpu_device *dev, uint32_t op,
			       pid_t pid, int64_t timeout_ns, int fd,
			       struct snpu_ckpt_proc *a)
{
	if (!dev || pid < 0)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->op = op;
	a->pid = (uint32_t)pid;
	a->timeout_ns = timeout_ns;
	a->fd = fd;
	return snpu_ioctl_wait(dev->fd, SNPU_IOC_CKPT_PROC, a);
}

int snpu_ckpt_get_state(struct snpu_device *dev, pid_t pid, uint32_t *state)
{
	struct snpu_ckpt_proc a;
	int ret;

	if (!state)
		return -EINVAL;
	ret = snpu_ckpt_proc_call(dev, SNPU_CKPT_OP_STATE, pid, 0, 0, &a);
	if (!ret)
		*state = a.state;
	return ret;
}

int snpu_ckpt_lock(struct snpu_device *dev, pid_t pid, int64_t timeout_ns)
{
	struct snpu_ckpt_proc a;

	if (timeout_ns < -1)
		return -EINVAL;
	return snpu_ckpt_proc_call(dev, SNPU_CKPT_OP_LOCK, pid, timeout_ns, 0,
				   &a);
}

int snpu_ckpt_checkpoint(struct snpu_device *dev, pid_t pid, int fd,
			 uint64_t *bytes)
{
	struct snpu_ckpt_proc a;
	int ret;

	if (fd < 0)
		return -EBADF;
	ret = snpu_ckpt_proc_call(dev, SNPU_CKPT_OP_CHECKPOINT, pid, 0, fd,
				  &a);
	if (!ret && bytes)
		*bytes = a.bytes;
	return ret;
}

int snpu_ckpt_unlock(struct snpu_device *dev, pid_t pid)
{
	struct snpu_ckpt_proc a;

	return snpu_ckpt_proc_call(dev, SNPU_CKPT_OP_UNLOCK, pid, 0, 0, &a);
}

int snpu_ckpt_restore(struct snpu_device *dev, int fd, uint32_t index,
		      uint32_t *dev_index)
{
	struct snpu_ckpt_restore a;
	int ret;

	if (!dev)
		return -EINVAL;
	if (fd < 0)
		return -EBADF;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.fd = fd;
	a.index = index;
	ret = snpu_ioctl_wait(dev->fd, SNPU_IOC_CKPT_RESTORE, &a);
	if (!ret && dev_index)
		*dev_index = a.dev_index;
	return ret;
}

/* pread(2) of exactly @len bytes: -ENODATA when the file ends first. */
static int snpu_ckpt_pread(int fd, void *buf, size_t len, off_t off)
{
	ssize_t n;

	while (len) {
		n = pread(fd, buf, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return -ENODATA;
		buf = (char *)buf + n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

int snpu_ckpt_image_devices(int fd, uint32_t *devs, unsigned int max)
{
	struct snpu_ckpt_header h;
	struct snpu_ckpt_chunk c;
	struct snpu_ckpt_ctx ctx;
	unsigned int n = 0;
	off_t off;
	int ret;

	if (fd < 0)
		return -EBADF;
	if (max && !devs)
		return -EINVAL;
	ret = snpu_ckpt_pread(fd, &h, sizeof(h), 0);
	if (ret)
		return ret;
	/* The kernel checks everything; this walk only needs the layout. */
	if (h.magic != SNPU_CKPT_MAGIC || h.version < SNPU_CKPT_VERSION_MIN ||
	    h.version > SNPU_CKPT_VERSION ||
	    h.header_size != sizeof(h))
		return -ENOEXEC;
	if (h.contexts > max)
		return -ENOSPC;
	for (off = sizeof(h); n < h.contexts; off += (off_t)c.len) {
		ret = snpu_ckpt_pread(fd, &c, sizeof(c), off);
		if (ret)
			return ret;
		off += (off_t)sizeof(c);
		if (c.type == SNPU_CKPT_END)
			return -EPROTO;
		if (c.type != SNPU_CKPT_CTX)
			continue;
		if (c.len != sizeof(ctx))
			return -EPROTO;
		ret = snpu_ckpt_pread(fd, &ctx, sizeof(ctx), off);
		if (ret)
			return ret;
		devs[n++] = ctx.dev_index;
	}
	return (int)n;
}
