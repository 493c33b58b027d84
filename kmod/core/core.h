/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * snpu core: pure C shared by the kernel module and native unit tests.
 *
 * Nothing here locks, sleeps or allocates; it only computes. The same
 * sources are built by kbuild into snpu.ko and by the top-level Makefile
 * into userspace test programs under ASan/UBSan.
 */
#ifndef _SNPU_CORE_H
#define _SNPU_CORE_H

#ifdef __KERNEL__
#include <linux/build_bug.h>
#include <linux/errno.h>
#include <linux/types.h>
#else
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#endif

#include <linux/snpu.h>

/* The uapi struct sizes; scripts/abi-sizes holds the same list for pahole. */
static_assert(sizeof(struct snpu_info) == 88, "struct snpu_info changed");

/* Limits of the module parameters, checked at load. */
#define SNPU_MAX_DEVICES	16
#define SNPU_MAX_CORES		64
#define SNPU_MIN_MEM_MB		1
#define SNPU_MAX_MEM_MB		16384

/* Device limits reported by SNPU_IOC_GET_INFO. */
#define SNPU_MAX_BLOCK_DIM	65535
#define SNPU_MEM_ALIGN		4096

/**
 * struct snpu_params - module parameters of one load
 * @devices: number of /dev/snpuN to create
 * @cores: compute cores per device
 * @mem_mb: device memory per device, in MiB
 */
struct snpu_params {
	unsigned int devices;
	unsigned int cores;
	unsigned int mem_mb;
};

const char *snpu_params_check(const struct snpu_params *p);

int snpu_ioc_check_size(__u32 usize, __u32 ver0);
bool snpu_ioc_same(unsigned int cmd, unsigned int known);

#endif /* _SNPU_CORE_H */
