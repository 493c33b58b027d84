// SPDX-License-Identifier: GPL-2.0
/*
 * snpu ioctl dispatch: one place copies, sizes and checks every argument
 * before its handler runs.
 */
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "snpu.h"

/*
 * Every argument struct fits here. Kept small: the dispatcher runs on the
 * submission path and holds it on the stack.
 */
union snpu_ioc_arg {
	struct {
		u32 size;
		u32 flags;
	} hdr;
	struct snpu_info info;
};

/**
 * struct snpu_ioc_desc - how one command is copied and handled
 * @cmd: the command as defined in the uapi header
 * @ver0: the first published size of its struct
 * @ksize: the size of its struct in this kernel
 * @flags: the @flags bits the command defines
 * @fn: the handler; gets the copied, checked argument
 */
struct snpu_ioc_desc {
	unsigned int cmd;
	u32 ver0;
	u32 ksize;
	u32 flags;
	int (*fn)(struct snpu_context *ctx, union snpu_ioc_arg *arg);
};

static bool snpu_reserved_zero(const void *p, size_t len)
{
	return !memchr_inv(p, 0, len);
}

static int snpu_ioc_get_info(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_info *info = &arg->info;
	struct snpu_device *sdev = ctx->sdev;

	if (!snpu_reserved_zero(info->reserved, sizeof(info->reserved)))
		return -EINVAL;

	info->abi_major = SNPU_ABI_MAJOR;
	info->abi_minor = SNPU_ABI_MINOR;
	info->caps = SNPU_CAPS_KNOWN;
	info->dev_index = sdev->index;
	info->cores = sdev->cores;
	info->mem_total = sdev->mem_total;
	info->mem_used = atomic64_read(&sdev->mem_used);
	info->max_block_dim = SNPU_MAX_BLOCK_DIM;
	info->mem_align = SNPU_MEM_ALIGN;
	return 0;
}

static const struct snpu_ioc_desc snpu_ioc_table[] = {
	{ SNPU_IOC_GET_INFO, SNPU_INFO_SIZE_VER0, sizeof(struct snpu_info), 0,
	  snpu_ioc_get_info },
};

static const struct snpu_ioc_desc *snpu_ioc_find(unsigned int cmd)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(snpu_ioc_table); i++)
		if (snpu_ioc_same(cmd, snpu_ioc_table[i].cmd))
			return &snpu_ioc_table[i];
	return NULL;
}

/**
 * snpu_ioctl() - entry point of every snpu ioctl
 * @file: an open snpu device
 * @cmd: SNPU_IOC_*
 * @arg: user address of the command's argument struct
 *
 * Reads the struct's @size, copies that many bytes (bytes past the
 * kernel's struct must be zero), rejects undefined @flags bits, runs the
 * handler and, for commands that return data, copies back min(@size,
 * kernel size) bytes with @size set to that count.
 *
 * Return: 0 or a negative errno as documented in the uapi header.
 */
long snpu_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct snpu_context *ctx = file->private_data;
	void __user *uarg = (void __user *)arg;
	const struct snpu_ioc_desc *desc;
	union snpu_ioc_arg karg;
	u32 usize;
	int ret;

	desc = snpu_ioc_find(cmd);
	if (!desc)
		return -ENOTTY;

	if (get_user(usize, (u32 __user *)uarg))
		return -EFAULT;
	ret = snpu_ioc_check_size(usize, desc->ver0);
	if (ret)
		goto out_size;

	ret = copy_struct_from_user(&karg, desc->ksize, uarg, usize);
	if (ret)
		goto out_size;

	if (karg.hdr.flags & ~desc->flags)
		return -EINVAL;

	ret = desc->fn(ctx, &karg);
	if (ret)
		return ret;

	if (_IOC_DIR(cmd) & _IOC_READ) {
		u32 n = min(usize, desc->ksize);

		karg.hdr.size = n;
		if (copy_to_user(uarg, &karg, n))
			return -EFAULT;
	}
	return 0;

out_size:
	/* Tell a caller with a too large struct what this kernel knows. */
	if (ret == -E2BIG && put_user(desc->ksize, (u32 __user *)uarg))
		return -EFAULT;
	return ret;
}
