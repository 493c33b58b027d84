// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Rules every ioctl argument follows before its handler sees it.
 */
#include "core.h"

#include <linux/ioctl.h>

/**
 * snpu_ioc_check_size() - check the size a caller gives for its struct
 * @usize: the struct's @size field as the caller set it
 * @ver0: the first published size of the struct
 *
 * Return: 0 when the kernel may copy @usize bytes, -EINVAL when @usize is
 * smaller than the first published size, -E2BIG when it is larger than
 * SNPU_IOC_MAX_SIZE. Whether bytes past the kernel's own size are zero is
 * checked by the copy itself.
 */
int snpu_ioc_check_size(__u32 usize, __u32 ver0)
{
	if (usize < ver0)
		return -EINVAL;
	if (usize > SNPU_IOC_MAX_SIZE)
		return -E2BIG;
	return 0;
}

/**
 * snpu_ioc_same() - does an ioctl command name a known snpu command
 * @cmd: the command number from ioctl(2)
 * @known: the command as defined in the uapi header
 *
 * Commands match on type, number and direction; the size bits are not
 * compared because the struct's @size field sizes the copy, so a caller
 * built against a header with a larger struct still reaches the command.
 *
 * Return: true when @cmd names @known.
 */
bool snpu_ioc_same(unsigned int cmd, unsigned int known)
{
	const unsigned int mask = ~(unsigned int)(_IOC_SIZEMASK << _IOC_SIZESHIFT);

	return (cmd & mask) == (known & mask);
}
