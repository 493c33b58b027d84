// SPDX-License-Identifier: GPL-2.0
/*
 * snpu ioctl dispatch: one place copies, sizes and checks every argument
 * before its handler runs.
 */
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/nospec.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "snpu.h"

/**
 * struct snpu_ioc_desc - how one command is copied and handled
 * @cmd: the command as defined in the uapi header
 * @ver0: the first published size of its struct
 * @ksize: the size of its struct in this kernel
 * @flags: the @flags bits the command defines
 * @modifies: the command changes the process's resources: it passes the
 *            snapshot gate (blocks while the process is locked)
 * @fn: the handler; gets the copied, checked argument
 */
struct snpu_ioc_desc {
	unsigned int cmd;
	u32 ver0;
	u32 ksize;
	u32 flags;
	bool modifies;
	int (*fn)(struct snpu_context *ctx, union snpu_ioc_arg *arg);
};

/**
 * struct snpu_ioc_call - one call as the dispatcher sees it
 * @arg: the copied, checked argument: what the handler gets
 * @uarg: the caller's struct
 * @usize: its size as the caller gave it
 * @ksize: the size of the command's struct in this kernel
 * @copied: the handler wrote @arg back itself (snpu_ioc_copy_out())
 */
struct snpu_ioc_call {
	union snpu_ioc_arg arg;
	void __user *uarg;
	u32 usize;
	u32 ksize;
	bool copied;
};

/**
 * snpu_ioc_copy_out() - write a handler's output back before it commits
 * @arg: the argument the handler got from snpu_ioctl()
 *
 * For a handler whose side effect cannot be undone after the dispatcher's
 * copy-out fails: it writes the output first, then commits, and undoes or
 * never commits on -EFAULT. The dispatcher does not write it again.
 *
 * Return: 0 or -EFAULT.
 */
int snpu_ioc_copy_out(union snpu_ioc_arg *arg)
{
	struct snpu_ioc_call *call = container_of(arg, struct snpu_ioc_call,
						  arg);
	u32 n = min(call->usize, call->ksize);

	arg->hdr.size = n;
	if (copy_to_user(call->uarg, arg, n))
		return -EFAULT;
	call->copied = true;
	return 0;
}

static int snpu_ioc_get_info(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_info *info = &arg->info;
	struct snpu_device *sdev = ctx->sdev;

	if (!snpu_zero(info->reserved, sizeof(info->reserved)))
		return -EINVAL;

	info->abi_major = SNPU_ABI_MAJOR;
	info->abi_minor = SNPU_ABI_MINOR;
	info->caps = SNPU_CAPS_KNOWN;
	if (!snpu_test_hooks)
		info->caps &= ~SNPU_CAP_TEST_HOOKS;
	info->dev_index = sdev->index;
	info->cores = sdev->cores;
	info->mem_total = sdev->mem_total;
	info->mem_used = atomic64_read(&sdev->mem_used);
	info->max_block_dim = SNPU_MAX_BLOCK_DIM;
	info->mem_align = SNPU_MEM_ALIGN;
	info->max_block_work = SNPU_KERNEL_BLOCK_WORK_MAX;
	return 0;
}

/* A test hook: the syscall floor for benchmarks and tests. */
static int snpu_ioc_nop(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	return snpu_test_hooks ? 0 : -EOPNOTSUPP;
}

/* Indexed by command number: finding a command costs one load. */
#define SNPU_IOC_DESC(cmd, name, type, flags, mod, fn) \
	[_IOC_NR(SNPU_IOC_##cmd)] = { SNPU_IOC_##cmd, SNPU_##name##_SIZE_VER0, \
				      sizeof(struct type), flags, mod, fn }
/* A query, a wait or a snapshot call: never blocked by the state. */
#define SNPU_IOC(cmd, name, type, flags, fn) \
	SNPU_IOC_DESC(cmd, name, type, flags, false, fn)
/* Changes resources: waits while the process is locked. */
#define SNPU_IOC_MOD(cmd, name, type, flags, fn) \
	SNPU_IOC_DESC(cmd, name, type, flags, true, fn)

static const struct snpu_ioc_desc snpu_ioc_table[] = {
	SNPU_IOC(GET_INFO, INFO, snpu_info, 0, snpu_ioc_get_info),
	SNPU_IOC(CTX_QUERY, CTX_QUERY, snpu_ctx_query, 0,
		 snpu_ioc_ctx_query),
	SNPU_IOC_MOD(MEM_ALLOC, MEM_ALLOC, snpu_mem_alloc, 0,
		     snpu_ioc_mem_alloc),
	SNPU_IOC_MOD(MEM_FREE, MEM_FREE, snpu_mem_free, 0,
		     snpu_ioc_mem_free),
	SNPU_IOC(MEM_QUERY, MEM_QUERY, snpu_mem_query, 0,
		 snpu_ioc_mem_query),
	SNPU_IOC_MOD(MEM_COPY, MEM_COPY, snpu_mem_copy, 0,
		     snpu_ioc_mem_copy),
	SNPU_IOC_MOD(MEM_SET, MEM_SET, snpu_mem_set, 0, snpu_ioc_mem_set),
	SNPU_IOC_MOD(HOST_ALLOC, HOST_ALLOC, snpu_host_alloc, 0,
		     snpu_ioc_host_alloc),
	SNPU_IOC_MOD(HOST_REGISTER, HOST_REGISTER, snpu_host_register, 0,
		     snpu_ioc_host_register),
	SNPU_IOC_MOD(HOST_FREE, HANDLE_OP, snpu_handle_op, 0,
		     snpu_ioc_host_free),
	SNPU_IOC_MOD(STREAM_CREATE, STREAM_CREATE, snpu_stream_create, 0,
		     snpu_ioc_stream_create),
	SNPU_IOC_MOD(STREAM_DESTROY, HANDLE_OP, snpu_handle_op,
		     SNPU_STREAM_DESTROY_FORCE, snpu_ioc_stream_destroy),
	SNPU_IOC(STREAM_SYNC, WAIT, snpu_wait, SNPU_WAIT_ABSOLUTE,
		 snpu_ioc_stream_sync),
	SNPU_IOC(STREAM_QUERY, STREAM_QUERY, snpu_stream_query, 0,
		 snpu_ioc_stream_query),
	SNPU_IOC_MOD(STREAM_ABORT, HANDLE_OP, snpu_handle_op, 0,
		     snpu_ioc_stream_abort),
	SNPU_IOC_MOD(STREAM_RESET, HANDLE_OP, snpu_handle_op, 0,
		     snpu_ioc_stream_reset),
	SNPU_IOC_MOD(EVENT_CREATE, STREAM_CREATE, snpu_stream_create, 0,
		     snpu_ioc_event_create),
	SNPU_IOC_MOD(EVENT_DESTROY, HANDLE_OP, snpu_handle_op, 0,
		     snpu_ioc_event_destroy),
	SNPU_IOC(EVENT_QUERY, EVENT_QUERY, snpu_event_query, 0,
		 snpu_ioc_event_query),
	SNPU_IOC(EVENT_SYNC, WAIT, snpu_wait, SNPU_WAIT_ABSOLUTE,
		 snpu_ioc_event_sync),
	SNPU_IOC(EVENT_ELAPSED, EVENT_ELAPSED, snpu_event_elapsed, 0,
		 snpu_ioc_event_elapsed),
	SNPU_IOC_MOD(SUBMIT, SUBMIT, snpu_submit, 0, snpu_ioc_submit),
	SNPU_IOC(CALLBACK_WAIT, CALLBACK, snpu_callback, SNPU_WAIT_ABSOLUTE,
		 snpu_ioc_callback_wait),
	SNPU_IOC(CALLBACK_DONE, CALLBACK, snpu_callback, 0,
		 snpu_ioc_callback_done),
	SNPU_IOC_MOD(RING_SETUP, RING_SETUP, snpu_ring_setup,
		     SNPU_RING_SQPOLL | SNPU_RING_CALLBACK_CQE,
		     snpu_ioc_ring_setup),
	SNPU_IOC(ENTER, ENTER, snpu_enter,
		 SNPU_ENTER_GETEVENTS | SNPU_ENTER_SQ_WAKEUP | SNPU_WAIT_ABSOLUTE,
		 snpu_ioc_enter),
	SNPU_IOC_MOD(OWNER_CREATE, STREAM_CREATE, snpu_stream_create, 0,
		     snpu_ioc_owner_create),
	SNPU_IOC_MOD(OWNER_DESTROY, HANDLE_OP, snpu_handle_op, 0,
		     snpu_ioc_owner_destroy),
	SNPU_IOC_MOD(ATTACHED_STREAM_GET, ATTACHED_STREAM,
		     snpu_attached_stream, 0, snpu_ioc_attached_stream_get),
	SNPU_IOC(SNAPSHOT_LOCK, SNAPSHOT, snpu_snapshot, 0,
		 snpu_ioc_snapshot_lock),
	SNPU_IOC(SNAPSHOT_BACKUP, SNAPSHOT, snpu_snapshot, 0,
		 snpu_ioc_snapshot_backup),
	SNPU_IOC(SNAPSHOT_RESTORE, SNAPSHOT, snpu_snapshot, 0,
		 snpu_ioc_snapshot_restore),
	SNPU_IOC(SNAPSHOT_UNLOCK, SNAPSHOT, snpu_snapshot, 0,
		 snpu_ioc_snapshot_unlock),
	SNPU_IOC(SNAPSHOT_STATE, SNAPSHOT, snpu_snapshot, 0,
		 snpu_ioc_snapshot_state),
	SNPU_IOC(BG_REGISTER, SNAPSHOT, snpu_snapshot, 0,
		 snpu_ioc_bg_register),
	SNPU_IOC(BG_UNREGISTER, SNAPSHOT, snpu_snapshot, 0,
		 snpu_ioc_bg_unregister),
	SNPU_IOC(BG_PARK, SNAPSHOT, snpu_snapshot, 0,
		 snpu_ioc_bg_park),
	SNPU_IOC_MOD(GRAPH_CREATE, GRAPH_CREATE, snpu_graph_create, 0,
		     snpu_ioc_graph_create),
	SNPU_IOC_MOD(GRAPH_DESTROY, HANDLE_OP, snpu_handle_op, 0,
		     snpu_ioc_graph_destroy),
	SNPU_IOC_MOD(COMM_ID, COMM_ID, snpu_comm_id, 0, snpu_ioc_comm_id),
	SNPU_IOC_MOD(COMM_JOIN, COMM_JOIN, snpu_comm_join, 0,
		     snpu_ioc_comm_join),
	SNPU_IOC_MOD(COMM_DESTROY, HANDLE_OP, snpu_handle_op,
		     SNPU_COMM_DESTROY_FORCE, snpu_ioc_comm_destroy),
	SNPU_IOC(COMM_QUERY, COMM_QUERY, snpu_comm_query, 0,
		 snpu_ioc_comm_query),
	SNPU_IOC(EVENT_EXPORT, EVENT_EXPORT, snpu_event_export,
		 SNPU_EXPORT_CLOEXEC, snpu_ioc_event_export),
	SNPU_IOC_MOD(MEM_EXPORT, MEM_EXPORT, snpu_mem_export,
		     SNPU_EXPORT_CLOEXEC, snpu_ioc_mem_export),
	SNPU_IOC_MOD(MEM_IMPORT, MEM_IMPORT, snpu_mem_import, 0,
		     snpu_ioc_mem_import),
	/* Like the snapshot calls: never blocked by the state. */
	SNPU_IOC(CKPT_PROC, CKPT_PROC, snpu_ckpt_proc, 0, snpu_ioc_ckpt_proc),
	SNPU_IOC_MOD(CKPT_RESTORE, CKPT_RESTORE, snpu_ckpt_restore, 0,
		     snpu_ioc_ckpt_restore),
	SNPU_IOC(RING_QUERY, RING_QUERY, snpu_ring_query, 0,
		 snpu_ioc_ring_query),
	/* No argument: the syscall floor for benchmarks. */
	[_IOC_NR(SNPU_IOC_NOP)] = { SNPU_IOC_NOP, 0, 0, 0, false, snpu_ioc_nop },
};

static const struct snpu_ioc_desc *snpu_ioc_find(unsigned int cmd)
{
	const struct snpu_ioc_desc *desc;
	unsigned int nr = _IOC_NR(cmd);

	if (_IOC_TYPE(cmd) != SNPU_IOC_MAGIC || nr >= ARRAY_SIZE(snpu_ioc_table))
		return NULL;
	desc = &snpu_ioc_table[array_index_nospec(nr,
						  ARRAY_SIZE(snpu_ioc_table))];
	/* A hole in the table has no handler; the direction must match. */
	return desc->fn && snpu_ioc_same(cmd, desc->cmd) ? desc : NULL;
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
 * kernel size) bytes with @size set to that count, unless the handler
 * did so itself before committing (SUBMIT, CALLBACK_WAIT).
 *
 * Return: 0 or a negative errno as documented in the uapi header.
 */
long snpu_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct snpu_context *ctx = file->private_data;
	void __user *uarg = (void __user *)arg;
	const struct snpu_ioc_desc *desc;
	struct snpu_ioc_call call;
	u32 usize;
	int ret;

	desc = snpu_ioc_find(cmd);
	if (!desc)
		return -ENOTTY;
	if (!desc->ksize)
		return desc->fn(ctx, NULL);

	if (get_user(usize, (u32 __user *)uarg))
		return -EFAULT;
	ret = snpu_ioc_check_size(usize, desc->ver0);
	if (ret)
		goto out_size;

	ret = copy_struct_from_user(&call.arg, desc->ksize, uarg, usize);
	if (ret)
		goto out_size;

	if (call.arg.hdr.flags & ~desc->flags)
		return -EINVAL;
	call.uarg = uarg;
	call.usize = usize;
	call.ksize = desc->ksize;
	call.copied = false;

	if (desc->modifies) {
		ret = snpu_proc_enter(ctx->proc);
		if (ret)
			return ret;
	}
	ret = desc->fn(ctx, &call.arg);
	if (desc->modifies)
		snpu_proc_exit(ctx->proc);
	if (ret || call.copied || !(_IOC_DIR(cmd) & _IOC_READ))
		return ret;
	return snpu_ioc_copy_out(&call.arg);

out_size:
	/* Tell a caller with a too large struct what this kernel knows. */
	if (ret == -E2BIG && put_user(desc->ksize, (u32 __user *)uarg))
		return -EFAULT;
	return ret;
}
