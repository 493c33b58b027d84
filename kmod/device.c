// SPDX-License-Identifier: GPL-2.0
/*
 * snpu devices: the character device /dev/snpuN and its sysfs attributes.
 */
#include <linux/debugfs.h>
#include <linux/device.h>
#include <linux/err.h>
#include <linux/kstrtox.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

#include "snpu.h"
#include "trace.h"

static struct snpu_device *to_snpu_device(struct device *dev)
{
	struct miscdevice *misc = dev_get_drvdata(dev);

	return container_of(misc, struct snpu_device, misc);
}

static ssize_t cores_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%u\n", to_snpu_device(dev)->cores);
}
static DEVICE_ATTR_RO(cores);

static ssize_t mem_mb_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%llu\n", to_snpu_device(dev)->mem_total >> 20);
}
static DEVICE_ATTR_RO(mem_mb);

static ssize_t mem_used_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct snpu_device *sdev = to_snpu_device(dev);

	return sysfs_emit(buf, "%lld\n", (s64)atomic64_read(&sdev->mem_used));
}
static DEVICE_ATTR_RO(mem_used);

static ssize_t contexts_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&to_snpu_device(dev)->contexts));
}
static DEVICE_ATTR_RO(contexts);

/*
 * The time the cores spent running blocks since load, all cores: busy
 * nanoseconds over wall nanoseconds times cores is the device's use.
 */
static ssize_t busy_ns_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	struct snpu_device *sdev = to_snpu_device(dev);
	unsigned int i;
	u64 ns = 0;

	for (i = 0; i < sdev->cores; i++)
		ns += READ_ONCE(sdev->core[i].busy_ns);
	return sysfs_emit(buf, "%llu\n", ns);
}
static DEVICE_ATTR_RO(busy_ns);

static struct attribute *snpu_dev_attrs[] = {
	&dev_attr_cores.attr,
	&dev_attr_mem_mb.attr,
	&dev_attr_mem_used.attr,
	&dev_attr_contexts.attr,
	&dev_attr_busy_ns.attr,
	NULL,
};
ATTRIBUTE_GROUPS(snpu_dev);

/**
 * snpu_device_ctx_next() - the next open context of a device, referenced
 * @sdev: the device
 * @cursor: in: the id of the last context returned, 0 at first; out: the
 *          id of the context returned
 *
 * Contexts are on the device's list in the order of their ids, so a walk
 * resumes after the last id it saw, whatever opened or closed meanwhile.
 * The device's ctx_lock is held only to find the context: the caller may
 * then wait for the context's lock or work without stalling the device's
 * opens and closes.
 *
 * Return: the context, with a reference the caller drops with
 * snpu_ctx_put(), or NULL when no context with a larger id is open.
 */
struct snpu_context *snpu_device_ctx_next(struct snpu_device *sdev,
					  u64 *cursor)
{
	struct snpu_context *ctx;

	mutex_lock(&sdev->ctx_lock);
	list_for_each_entry(ctx, &sdev->ctx_list, dev_node) {
		if (ctx->id <= *cursor)
			continue;
		snpu_ctx_get(ctx);
		*cursor = ctx->id;
		mutex_unlock(&sdev->ctx_lock);
		return ctx;
	}
	mutex_unlock(&sdev->ctx_lock);
	return NULL;
}

/* Poison of device memory after a reset: not zero, not the old bytes. */
#define SNPU_RESET_POISON	0xa5

/**
 * snpu_device_reset() - fault injection: what a device reset destroys
 * @sdev: the device
 *
 * Every stream of every context of the device fails with -EIO (its queued
 * tasks are cancelled as they come up; blocks already on a core finish)
 * and every allocation's bytes are overwritten. Objects and addresses
 * stay: a snapshot restore brings the bytes back and clears the errors.
 */
void snpu_device_reset(struct snpu_device *sdev)
{
	struct snpu_context *ctx;
	struct snpu_object *obj;
	struct snpu_stream *s;
	struct snpu_mem *mem;
	unsigned long index;
	u64 cursor = 0;
	LIST_HEAD(todo);

	trace_snpu_device_reset(sdev->index, atomic_read(&sdev->contexts));
	while ((ctx = snpu_device_ctx_next(sdev, &cursor))) {
		mutex_lock(&ctx->lock);
		if (ctx->closed)
			goto next;
		spin_lock(&ctx->sched_lock);
		xa_for_each(&ctx->handles, index, obj) {
			s = snpu_stream_get_locked(ctx, index);
			if (s)
				snpu_stream_fail_locked(ctx, s, -EIO, &todo);
		}
		spin_unlock(&ctx->sched_lock);
		snpu_jobs_run(&todo);
		index = 0;
		mt_for_each(&ctx->va, mem, index, ULONG_MAX) {
			memset(mem->vaddr, SNPU_RESET_POISON, mem->charged);
			cond_resched();
		}
next:
		mutex_unlock(&ctx->lock);
		snpu_ctx_put(ctx);
	}
	dev_warn(sdev->misc.this_device, "reset by fault injection\n");
}

static ssize_t snpu_reset_write(struct file *file, const char __user *buf,
				size_t count, loff_t *ppos)
{
	struct snpu_device *sdev = file->private_data;
	bool reset;
	int ret;

	ret = kstrtobool_from_user(buf, count, &reset);
	if (ret)
		return ret;
	if (reset)
		snpu_device_reset(sdev);
	return count;
}

static const struct file_operations snpu_reset_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = snpu_reset_write,
	.llseek = noop_llseek,
};

/**
 * snpu_device_create() - create and register /dev/snpu@index
 * @index: N of /dev/snpuN
 * @p: validated module parameters
 * @debugfs: the module's debugfs directory; the device's goes in it
 *
 * Starts the device's core threads, then makes the device visible.
 *
 * Return: the device, or an ERR_PTR() when allocation or registration fails.
 */
struct snpu_device *snpu_device_create(unsigned int index,
				       const struct snpu_params *p,
				       struct dentry *debugfs)
{
	struct snpu_device *sdev;
	int ret;

	sdev = kzalloc(sizeof(*sdev), GFP_KERNEL);
	if (!sdev)
		return ERR_PTR(-ENOMEM);

	sdev->index = index;
	sdev->cores = p->cores;
	sdev->mem_total = (u64)p->mem_mb << 20;
	atomic64_set(&sdev->mem_used, 0);
	atomic_set(&sdev->contexts, 0);
	snprintf(sdev->name, sizeof(sdev->name), "snpu%u", index);

	ida_init(&sdev->va_windows);
	mutex_init(&sdev->ctx_lock);
	INIT_LIST_HEAD(&sdev->ctx_list);
	sdev->pcpu = alloc_percpu(struct snpu_dev_pcpu);
	if (!sdev->pcpu) {
		kfree(sdev);
		return ERR_PTR(-ENOMEM);
	}
	ret = snpu_cores_start(sdev);
	if (ret) {
		free_percpu(sdev->pcpu);
		kfree(sdev);
		return ERR_PTR(ret);
	}

	sdev->misc.minor = MISC_DYNAMIC_MINOR;
	sdev->misc.name = sdev->name;
	sdev->misc.fops = &snpu_fops;
	sdev->misc.groups = snpu_dev_groups;
	sdev->misc.mode = 0666;

	ret = misc_register(&sdev->misc);
	if (ret) {
		snpu_cores_stop(sdev);
		free_percpu(sdev->pcpu);
		kfree(sdev);
		return ERR_PTR(ret);
	}
	/* Fault injection: <debugfs>/snpu/snpuN/reset. */
	sdev->debugfs = debugfs_create_dir(sdev->name, debugfs);
	debugfs_create_file("reset", 0200, sdev->debugfs, sdev,
			    &snpu_reset_fops);
	snpu_graph_debugfs(sdev);
	snpu_stats_debugfs(sdev);
	return sdev;
}

/**
 * snpu_device_destroy() - unregister and free a device
 * @sdev: a device from snpu_device_create()
 *
 * Called at module unload, when no file of the device is open.
 */
void snpu_device_destroy(struct snpu_device *sdev)
{
	debugfs_remove_recursive(sdev->debugfs);
	misc_deregister(&sdev->misc);
	WARN_ON(atomic_read(&sdev->contexts));
	WARN_ON(atomic64_read(&sdev->mem_used));
	snpu_cores_stop(sdev);
	free_percpu(sdev->pcpu);
	ida_destroy(&sdev->va_windows);
	mutex_destroy(&sdev->ctx_lock);
	kfree(sdev);
}
