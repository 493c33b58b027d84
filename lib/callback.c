// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libsnpu: host callbacks - host-function tasks delivered to the process,
 * which runs them and tells the driver when they are done.
 */
#include <assert.h>

#include "internal.h"

static_assert(sizeof(struct snpu_callback) == 56, "struct snpu_callback changed");

int snpu_launch_host_func(struct snpu_device *dev, uint32_t stream,
			  uint64_t user_data)
{
	struct snpu_task t;

	snpu_prep_host_func(&t, stream, user_data);
	return snpu_submit(dev, &t, 1, NULL);
}

int snpu_callback_wait(struct snpu_device *dev, int64_t timeout_ns,
		       struct snpu_callback_info *out)
{
	struct snpu_callback cb = {
		.size = sizeof(cb),
		.timeout_ns = timeout_ns,
	};
	int ret;

	if (!dev || !out)
		return -EINVAL;

	ret = snpu_ioctl_wait(dev->fd, SNPU_IOC_CALLBACK_WAIT, &cb);
	if (ret)
		return ret;
	out->user_data = cb.user_data;
	out->cookie = cb.cookie;
	out->stream = cb.stream;
	return 0;
}

int snpu_callback_done(struct snpu_device *dev, uint32_t cookie, int status)
{
	struct snpu_callback cb = {
		.size = sizeof(cb),
		.cookie = cookie,
		.status = status,
	};

	if (!dev)
		return -EINVAL;
	return snpu_ioctl(dev->fd, SNPU_IOC_CALLBACK_DONE, &cb);
}
