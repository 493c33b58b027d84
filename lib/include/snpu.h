/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libsnpu - the userspace library of the snpu accelerator runtime.
 *
 * Every call that can fail returns 0 (or a count) on success and a negative
 * errno on failure; read the error from the return value, not from errno
 * (which the system calls made on the way may change). The library keeps no
 * global state: everything lives in the objects the caller holds.
 * Documentation/lib/ has a page per call.
 */
#ifndef LIBSNPU_SNPU_H
#define LIBSNPU_SNPU_H

#include <linux/snpu.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An open snpu device: one kernel context. Opaque. */
struct snpu_device;

int snpu_open(unsigned int index, unsigned int flags,
	      struct snpu_device **devp);
int snpu_open_path(const char *path, unsigned int flags,
		   struct snpu_device **devp);
void snpu_close(struct snpu_device *dev);
int snpu_device_fd(const struct snpu_device *dev);
int snpu_get_info(struct snpu_device *dev, struct snpu_info *info);

#ifdef __cplusplus
}
#endif

#endif /* LIBSNPU_SNPU_H */
