// SPDX-License-Identifier: GPL-2.0
/*
 * snpu - soft NPU: module load and unload.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/err.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/stringify.h>

#include "snpu.h"

static unsigned int devices = 1;
module_param(devices, uint, 0444);
MODULE_PARM_DESC(devices, "number of devices /dev/snpuN to create, 1..16 (default 1)");

static unsigned int cores = 4;
module_param(cores, uint, 0444);
MODULE_PARM_DESC(cores, "compute cores per device, 1..64 (default 4)");

static unsigned int mem_mb = 256;
module_param(mem_mb, uint, 0444);
MODULE_PARM_DESC(mem_mb, "device memory per device in MiB, 1..16384 (default 256)");

static unsigned int ctx_mem_mb;
module_param(ctx_mem_mb, uint, 0444);
MODULE_PARM_DESC(ctx_mem_mb, "device memory quota per context in MiB, 0 = none but the device size (default 0)");

static unsigned int ctx_host_mb = 256;
module_param(ctx_host_mb, uint, 0444);
MODULE_PARM_DESC(ctx_host_mb, "host memory quota per context in MiB, 1..16384 (default 256)");

static unsigned int ctx_streams = 64;
module_param(ctx_streams, uint, 0444);
MODULE_PARM_DESC(ctx_streams, "stream quota per context, 1..4096 (default 64)");

static unsigned int ctx_events = 1024;
module_param(ctx_events, uint, 0444);
MODULE_PARM_DESC(ctx_events, "event quota per context, 1..16384 (default 1024)");

static unsigned int ctx_tasks = 4096;
module_param(ctx_tasks, uint, 0444);
MODULE_PARM_DESC(ctx_tasks, "tasks in flight per context, 1..32768 (default 4096)");

static unsigned int ctx_graphs = 64;
module_param(ctx_graphs, uint, 0444);
MODULE_PARM_DESC(ctx_graphs, "graph quota per context, 1..4096 (default 64)");

static unsigned int ctx_graph_mb = 64;
module_param(ctx_graph_mb, uint, 0444);
MODULE_PARM_DESC(ctx_graph_mb, "kernel memory of a context's graph definitions and launch instances in MiB, 1..4096 (default 64)");

bool snpu_test_hooks;
module_param_named(test_hooks, snpu_test_hooks, bool, 0444);
MODULE_PARM_DESC(test_hooks, "enable the test hooks: kernels SPIN and FAIL, SNPU_IOC_NOP (default off: EOPNOTSUPP)");

struct snpu_quota snpu_quota;

/* Read by the cores at each task's start; may be changed at run time. */
unsigned int snpu_task_timeout_ms = 10000;
module_param_named(task_timeout_ms, snpu_task_timeout_ms, uint, 0644);
MODULE_PARM_DESC(task_timeout_ms, "watchdog: a task with a block running longer fails with ETIMEDOUT, in ms, 0 = none (default 10000)");

/* Set at load, cleared at unload: read without a lock in between. */
static struct snpu_device *snpu_devs[SNPU_MAX_DEVICES];
static struct dentry *snpu_debugfs;

/**
 * snpu_device_get() - the device /dev/snpu@index
 * @index: N
 *
 * Return: the device, or NULL when there is none. Devices live from load
 * to unload.
 */
struct snpu_device *snpu_device_get(unsigned int index)
{
	return index < ARRAY_SIZE(snpu_devs) ? snpu_devs[index] : NULL;
}

static void snpu_destroy_all(void)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(snpu_devs); i++) {
		if (snpu_devs[i])
			snpu_device_destroy(snpu_devs[i]);
		snpu_devs[i] = NULL;
	}
	debugfs_remove_recursive(snpu_debugfs);
	snpu_debugfs = NULL;
}

static int __init snpu_init(void)
{
	const struct snpu_params p = {
		.devices = devices,
		.cores = cores,
		.mem_mb = mem_mb,
		.ctx_mem_mb = ctx_mem_mb,
		.ctx_host_mb = ctx_host_mb,
		.ctx_streams = ctx_streams,
		.ctx_events = ctx_events,
		.ctx_tasks = ctx_tasks,
		.ctx_graphs = ctx_graphs,
		.ctx_graph_mb = ctx_graph_mb,
	};
	const char *bad = snpu_params_check(&p);
	unsigned int i;
	int ret;

	if (bad) {
		pr_err("bad module parameter: %s\n", bad);
		return -EINVAL;
	}
	ret = snpu_isa_init();
	if (ret)
		return ret;

	snpu_quota.mem = (u64)p.ctx_mem_mb << 20;
	snpu_quota.host = (u64)p.ctx_host_mb << 20;
	snpu_quota.streams = p.ctx_streams;
	snpu_quota.events = p.ctx_events;
	snpu_quota.tasks = p.ctx_tasks;
	snpu_quota.graphs = p.ctx_graphs;
	snpu_quota.graph_mem = (u64)p.ctx_graph_mb << 20;

	ret = snpu_free_wq_init();
	if (ret)
		return ret;
	ret = snpu_comm_init();
	if (ret) {
		snpu_free_wq_exit();
		return ret;
	}
	snpu_debugfs = debugfs_create_dir(KBUILD_MODNAME, NULL);
	for (i = 0; i < p.devices; i++) {
		struct snpu_device *sdev = snpu_device_create(i, &p,
							      snpu_debugfs);

		if (IS_ERR(sdev)) {
			pr_err("cannot create snpu%u: %ld\n", i, PTR_ERR(sdev));
			snpu_destroy_all();
			snpu_comm_exit();
			snpu_free_wq_exit();
			return PTR_ERR(sdev);
		}
		snpu_devs[i] = sdev;
	}

	/* Last: queries may find the devices as soon as it is registered. */
	ret = snpu_nl_init();
	if (ret) {
		pr_err("cannot register the generic netlink family: %d\n", ret);
		snpu_destroy_all();
		snpu_comm_exit();
		snpu_free_wq_exit();
		return ret;
	}

	pr_info("%u device(s), %u cores and %u MiB each, ABI %u.%u\n",
		p.devices, p.cores, p.mem_mb, SNPU_ABI_MAJOR, SNPU_ABI_MINOR);
	return 0;
}

static void __exit snpu_exit(void)
{
	snpu_nl_exit();
	snpu_destroy_all();
	snpu_comm_exit();
	snpu_free_wq_exit();
}

module_init(snpu_init);
module_exit(snpu_exit);

MODULE_DESCRIPTION("snpu: soft NPU, a virtual accelerator device and its runtime");
MODULE_AUTHOR("snpu developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(__stringify(SNPU_ABI_MAJOR) "." __stringify(SNPU_ABI_MINOR));
