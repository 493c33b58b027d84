/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note OR MIT */
/*
 * snpu - soft NPU: the ioctl ABI shared by the kernel driver and libsnpu.
 *
 * Conventions (see Documentation/userspace-api.rst):
 *
 * - Every argument struct starts with __u32 size and __u32 flags. @size is
 *   the number of bytes the caller passes (its sizeof); the kernel accepts
 *   any size from the struct's first published size (SNPU_*_SIZE_VER0) up
 *   to SNPU_IOC_MAX_SIZE. Bytes the kernel does not know about must be zero.
 *   Output is written back for min(caller size, kernel size) bytes and
 *   @size is set to the number of bytes written.
 * - The size bits of the command number are not used to size the copy:
 *   @size is. A command is matched on its type, number and direction.
 * - @flags bits that the command does not define, and every reserved
 *   field, must be zero.
 * - All fields are fixed width; user pointers are __u64; every struct is a
 *   multiple of 8 bytes with no implicit padding.
 * - Objects are named by per-file handles, never by kernel pointers.
 *   Timeouts are __s64 relative nanoseconds, -1 meaning forever; times are
 *   CLOCK_MONOTONIC nanoseconds. Blocking calls are interruptible.
 *
 * Errors (negative errno from ioctl(2) via errno):
 *
 *   ENOTTY   the command is not an snpu command, or not this direction.
 *   EINVAL   @size below the first published size; undefined @flags bits;
 *            a non-zero reserved field; a value out of its documented range.
 *   E2BIG    @size above what the kernel knows and the extra bytes are not
 *            zero, or @size above SNPU_IOC_MAX_SIZE. The kernel writes the
 *            size it knows into @size.
 *   EFAULT   the argument (or a user pointer in it) is not accessible.
 *   ENOMEM   the kernel could not allocate what the call needs; nothing
 *            changed.
 *   EINTR    a blocking call was interrupted by a signal; it is restarted
 *            when the signal handler allows it.
 *
 * ABI changelog (SNPU_ABI_MAJOR.SNPU_ABI_MINOR):
 *
 *   0.1  SNPU_IOC_GET_INFO.
 */
#ifndef _UAPI_LINUX_SNPU_H
#define _UAPI_LINUX_SNPU_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define SNPU_ABI_MAJOR		0
#define SNPU_ABI_MINOR		1

/* Largest argument struct the kernel ever copies. */
#define SNPU_IOC_MAX_SIZE	4096

#define SNPU_IOC_MAGIC		'S'

/*
 * Capability bits reported in snpu_info.caps. A bit is set when the driver
 * implements the feature it names; unknown bits are reserved.
 */
#define SNPU_CAPS_KNOWN		0ULL

/**
 * struct snpu_info - device description, returned by SNPU_IOC_GET_INFO
 * @size: in: the caller's sizeof(struct snpu_info); out: bytes written
 * @flags: in: must be zero
 * @abi_major: out: SNPU_ABI_MAJOR of the driver
 * @abi_minor: out: SNPU_ABI_MINOR of the driver
 * @caps: out: SNPU_CAP_* bits (none defined yet)
 * @dev_index: out: N of /dev/snpuN
 * @cores: out: number of compute cores (module parameter "cores")
 * @mem_total: out: device memory in bytes (module parameter "mem_mb")
 * @mem_used: out: device memory in use by all contexts, in bytes
 * @max_block_dim: out: largest block_dim a kernel launch accepts
 * @mem_align: out: granule of device allocations in bytes (a power of two)
 * @reserved: must be zero
 */
struct snpu_info {
	__u32 size;
	__u32 flags;
	__u32 abi_major;
	__u32 abi_minor;
	__u64 caps;
	__u32 dev_index;
	__u32 cores;
	__u64 mem_total;
	__u64 mem_used;
	__u32 max_block_dim;
	__u32 mem_align;
	__u64 reserved[4];
};

#define SNPU_INFO_SIZE_VER0	88

#define SNPU_IOC_GET_INFO	_IOWR(SNPU_IOC_MAGIC, 0x00, struct snpu_info)

#endif /* _UAPI_LINUX_SNPU_H */
