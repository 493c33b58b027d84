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
#include <linux/err.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/types.h>
#else
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif
#endif

#include <linux/snpu.h>

/* The uapi struct sizes; scripts/abi-sizes holds the same list for pahole. */
static_assert(sizeof(struct snpu_info) == 88, "struct snpu_info changed");
static_assert(sizeof(struct snpu_task) == SNPU_TASK_SIZE, "struct snpu_task changed");
static_assert(SNPU_CKPT_GRAPH_SLOTS == SNPU_GRAPH_MAX_SLOTS,
	      "checkpoint images hold SNPU_GRAPH_MAX_SLOTS slots");
static_assert(sizeof(struct snpu_graph_node) == SNPU_GRAPH_NODE_SIZE,
	      "struct snpu_graph_node changed");
static_assert(sizeof(struct snpu_graph_create) == SNPU_GRAPH_CREATE_SIZE_VER0,
	      "struct snpu_graph_create changed");
static_assert(sizeof(struct snpu_attached_stream) == SNPU_ATTACHED_STREAM_SIZE_VER0,
	      "struct snpu_attached_stream changed");

/* Limits of the module parameters, checked at load. */
#define SNPU_MAX_DEVICES	16
#define SNPU_MAX_CORES		64
#define SNPU_MIN_MEM_MB		1
#define SNPU_MAX_MEM_MB		16384
#define SNPU_MAX_CTX_HOST_MB	16384
#define SNPU_MAX_CTX_STREAMS	4096
#define SNPU_MAX_CTX_EVENTS	16384
#define SNPU_MAX_CTX_TASKS	32768
#define SNPU_MAX_CTX_GRAPHS	4096
#define SNPU_MAX_CTX_GRAPH_MB	4096

/* The largest errno a status may carry, as the kernel's MAX_ERRNO. */
#define SNPU_MAX_ERRNO		4095
#ifdef __KERNEL__
static_assert(SNPU_MAX_ERRNO == MAX_ERRNO, "SNPU_MAX_ERRNO changed");
#endif

/* Device limits reported by SNPU_IOC_GET_INFO. */
#define SNPU_MAX_BLOCK_DIM	65535
#define SNPU_MEM_ALIGN		4096

/**
 * struct snpu_params - module parameters of one load
 * @devices: number of /dev/snpuN to create
 * @cores: compute cores per device
 * @mem_mb: device memory per device, in MiB
 * @ctx_mem_mb: device memory quota per context in MiB, 0 for @mem_mb
 * @ctx_host_mb: host memory quota per context in MiB
 * @ctx_streams: stream quota per context
 * @ctx_events: event quota per context
 * @ctx_tasks: tasks in flight per context
 * @ctx_graphs: graph quota per context
 * @ctx_graph_mb: kernel memory of a context's graphs in MiB
 */
struct snpu_params {
	unsigned int devices;
	unsigned int cores;
	unsigned int mem_mb;
	unsigned int ctx_mem_mb;
	unsigned int ctx_host_mb;
	unsigned int ctx_streams;
	unsigned int ctx_events;
	unsigned int ctx_tasks;
	unsigned int ctx_graphs;
	unsigned int ctx_graph_mb;
};

const char *snpu_params_check(const struct snpu_params *p);

int snpu_ioc_check_size(__u32 usize, __u32 ver0);
bool snpu_ioc_same(unsigned int cmd, unsigned int known);
int snpu_key_check(const char *key, size_t size);
int snpu_task_check(const struct snpu_task *t);
int snpu_task_check_callback_done(const struct snpu_task *t);

#endif /* _SNPU_CORE_H */
