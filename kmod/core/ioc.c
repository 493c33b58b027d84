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

/**
 * snpu_key_check() - check a NUL-terminated key in a fixed-size field
 * @key: the field as copied from the caller
 * @size: bytes in @key
 *
 * A key is 1 to @size - 1 bytes followed by a NUL; every byte after the
 * NUL is zero, so that two keys are equal exactly when their fields are.
 *
 * Return: the key's length, or -EINVAL when it is empty, not terminated
 * within @size, or followed by non-zero bytes.
 */
int snpu_key_check(const char *key, size_t size)
{
	size_t len, i;

	for (len = 0; len < size && key[len]; len++)
		;
	if (!len || len == size)
		return -EINVAL;
	for (i = len + 1; i < size; i++)
		if (key[i])
			return -EINVAL;
	return len;
}
