// SPDX-License-Identifier: GPL-2.0
/*
 * snpu contexts: one per open file of a device.
 */
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "snpu.h"

static int snpu_open(struct inode *inode, struct file *file)
{
	struct miscdevice *misc = file->private_data;
	struct snpu_device *sdev = container_of(misc, struct snpu_device, misc);
	struct snpu_context *ctx;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;

	ctx->sdev = sdev;
	atomic_inc(&sdev->contexts);
	file->private_data = ctx;
	return 0;
}

static int snpu_release(struct inode *inode, struct file *file)
{
	struct snpu_context *ctx = file->private_data;

	atomic_dec(&ctx->sdev->contexts);
	kfree(ctx);
	return 0;
}

const struct file_operations snpu_fops = {
	.owner = THIS_MODULE,
	.open = snpu_open,
	.release = snpu_release,
	.unlocked_ioctl = snpu_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};
