/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libsnpu internals shared by the files of the library. Not installed.
 */
#ifndef LIBSNPU_INTERNAL_H
#define LIBSNPU_INTERNAL_H

#include <errno.h>
#include <stdint.h>
#include <sys/ioctl.h>

#include "snpu.h"

/* An open device: the file descriptor of one kernel context. */
struct snpu_device {
	int fd;
};

/*
 * Issue a command that does not block in the kernel; an EINTR (which such
 * a command does not return today) is retried.
 *
 * Return: the ioctl's non-negative result, or -errno.
 */
static inline int snpu_ioctl(int fd, unsigned long cmd, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, cmd, arg);
	} while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : ret;
}

/*
 * Issue a command that may block (synchronize, callback wait, stream
 * destroy, ENTER). A wait without timeout interrupted by a signal whose
 * handler has SA_RESTART is restarted by the kernel; a timed wait, or any
 * wait without SA_RESTART, gives the caller -EINTR, so that a signal can
 * end a wait, as with read(2).
 *
 * Return: 0, or -errno.
 */
static inline int snpu_ioctl_wait(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

/*
 * A command on one handle (struct snpu_handle_op): host free, stream
 * destroy, abort and reset, event destroy. @wait picks snpu_ioctl_wait().
 */
static inline int snpu_ioctl_handle(const struct snpu_device *dev,
				    unsigned long cmd, uint32_t handle,
				    uint32_t flags, int wait)
{
	struct snpu_handle_op op = {
		.size = sizeof(op),
		.flags = flags,
		.handle = handle,
	};

	if (!dev)
		return -EINVAL;
	return wait ? snpu_ioctl_wait(dev->fd, cmd, &op) :
		      snpu_ioctl(dev->fd, cmd, &op);
}

#endif /* LIBSNPU_INTERNAL_H */
