/* SPDX-License-Identifier: GPL-2.0 */
/*
 * snpu driver internals shared between the files of the module.
 */
#ifndef _SNPU_H
#define _SNPU_H

#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/types.h>

#include "core/core.h"

/**
 * struct snpu_device - one virtual accelerator, /dev/snpuN
 * @misc: the character device; its name is @name
 * @name: "snpuN"
 * @index: N
 * @cores: number of compute cores
 * @mem_total: device memory in bytes
 * @mem_used: bytes allocated by all contexts of this device
 * @contexts: number of open contexts (open file descriptions)
 *
 * A device lives from module load to module unload; every open file holds
 * a module reference, so no context outlives its device.
 */
struct snpu_device {
	struct miscdevice misc;
	char name[16];
	unsigned int index;
	unsigned int cores;
	u64 mem_total;
	atomic64_t mem_used;
	atomic_t contexts;
};

/**
 * struct snpu_context - the state of one open file of a device
 * @sdev: the device this file was opened on
 *
 * Created by open(2), freed by the last close of the file description.
 */
struct snpu_context {
	struct snpu_device *sdev;
};

struct snpu_device *snpu_device_create(unsigned int index,
				       const struct snpu_params *p);
void snpu_device_destroy(struct snpu_device *sdev);

long snpu_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

extern const struct file_operations snpu_fops;

#endif /* _SNPU_H */
