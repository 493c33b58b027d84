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
 * - Fields documented "out:" only are output: any value is accepted on
 *   input and overwritten on success, so a struct may be passed again as
 *   it came back.
 * - All fields are fixed width; user pointers are __u64; every struct is a
 *   multiple of 8 bytes with no implicit padding.
 * - Objects are named by per-file handles, never by kernel pointers.
 *   Handles are handed out cyclically from 1: a destroyed object's handle
 *   is not given to a new object until the values have wrapped (after
 *   2^31 - 1 further objects of the file).
 *   Timeouts are __s64 relative nanoseconds, -1 meaning forever; with
 *   SNPU_WAIT_ABSOLUTE in @flags (the waits that take it say so) a
 *   timeout is a CLOCK_MONOTONIC deadline instead, and the wait restarts
 *   after a signal. Times are CLOCK_MONOTONIC nanoseconds. Blocking calls
 *   are interruptible.
 *
 * Errors (negative errno from ioctl(2) via errno):
 *
 *   ENOTTY   the command is not an snpu command, or not this direction.
 *   EINVAL   @size below the first published size; undefined @flags bits;
 *            a non-zero reserved field; a value out of its documented range.
 *   E2BIG    @size above what the kernel knows and the extra bytes are not
 *            zero, or @size above SNPU_IOC_MAX_SIZE. The kernel writes the
 *            size it knows into @size.
 *   EFAULT   the argument (or a user pointer in it) is not accessible, or
 *            a device range is not inside one allocation of the context.
 *   ENOENT   a handle names no object of the expected type in this file
 *            (or a stream being destroyed); a callback cookie names no
 *            delivered callback; COMM_JOIN of an id that names no
 *            communicator open to joins.
 *   ENOSPC   a per-context quota (or SNPU_BG_MAX) would be exceeded, or
 *            the task pool is exhausted by completions waiting for room
 *            in a full CQ; nothing changed.
 *   ENOMEM   the kernel (or the device's memory) could not provide what
 *            the call needs: also the caller's memory cgroup at its limit
 *            (what a call allocates for the process is charged there), or
 *            host memory beyond RLIMIT_MEMLOCK; nothing changed.
 *   EEXIST   a registered host range overlaps host memory of the context
 *            (registered or mapped); also mmap(2) of driver host memory
 *            over such a range; COMM_JOIN of a rank that has joined, or
 *            by a file that holds a rank of the communicator already.
 *   EIO      the stream is in its error state: reset it first.
 *   EBUSY    the object is in use (a stream with work for RESET, a
 *            stream or owner another DESTROY is waiting for, a pending
 *            event for
 *            ELAPSED, a second mmap of host memory, a second RING_SETUP,
 *            an ENTER that could consume nothing while completions wait).
 *   ENXIO    ENTER, RING_QUERY or mmap of the rings before RING_SETUP.
 *   EPERM    STREAM_DESTROY of an attached stream: its owner destroys it;
 *            a writable mapping of the state page; a snapshot or
 *            background-thread call (all but SNAPSHOT_STATE) from a
 *            process other than the one that opened the file.
 *   EACCES   SNPU_PRIO_HIGH without CAP_SYS_NICE (STREAM_CREATE,
 *            OWNER_CREATE); COMM_JOIN of a communicator another user
 *            created.
 *   EOPNOTSUPP  a test hook (a launch of SNPU_KERNEL_SPIN or
 *            SNPU_KERNEL_FAIL, SNPU_IOC_NOP) while the module parameter
 *            test_hooks is off (SNPU_CAP_TEST_HOOKS clear); nothing is
 *            queued. MEM_IMPORT of a dma-buf whose exporter gives no
 *            kernel mapping in system memory (ABI 0.13).
 *   EBADF    a FENCE_WAIT task's fd is not an open file (ABI 0.12);
 *            MEM_IMPORT's fd is not an open file (ABI 0.13).
 *   EBADFD   a snapshot transition the process's state does not allow.
 *   ESTALE   RESTORE: an allocation or object of the image is gone.
 *   EDEADLK  a resource-modifying call from the thread that locked the
 *            process (it would wait for itself).
 *   ETIMEDOUT  a wait's timeout expired first; (as a task's result) the
 *            a block of the task ran longer than the watchdog allows
 *            (module parameter task_timeout_ms, counted from when a core
 *            took the block).
 *   EDOM     (as a task's result) a SOFTMAX_XENT_F32 launch met a label
 *            outside [0, ncls) (ABI 0.8).
 *   ECANCELED  (as a task's result) the task was cancelled: its stream
 *            was aborted or had failed, or its file was closed.
 *   ECONNRESET  a rank left the communicator (its file was closed, its
 *            process died, or it destroyed its rank): as a collective's
 *            result on the other ranks, and from SUBMIT (nothing queued)
 *            and COMM_JOIN from then on (ABI 0.11).
 *   ECONNABORTED  (as a collective's result) the collective failed or was
 *            cancelled on another rank (its stream failed or was
 *            aborted, a block of it failed); the communicator stays
 *            usable (ABI 0.11).
 *   EAGAIN   RING_SETUP with SNPU_RING_SQPOLL: the caller's user already
 *            runs 4 pollers on this device and lacks CAP_SYS_NICE.
 *   EINTR    a blocking call was interrupted by a signal; a wait without
 *            timeout, or with an absolute one (SNPU_WAIT_ABSOLUTE), is
 *            restarted when the handler allows it, a wait with a relative
 *            timeout is not.
 *
 * ABI changelog (SNPU_ABI_MAJOR.SNPU_ABI_MINOR):
 *
 *   0.1  SNPU_IOC_GET_INFO.
 *   0.2  Contexts with quotas, device and host memory, streams, events,
 *        tasks (kernel launch, copies, memset, event record, stream wait,
 *        host callback) submitted by SNPU_IOC_SUBMIT; SNPU_IOC_NOP.
 *   0.3  Command queues: SNPU_IOC_RING_SETUP, SNPU_IOC_ENTER, the kernel
 *        poller (SNPU_RING_SQPOLL).
 *   0.4  Owners and their attached streams: SNPU_IOC_OWNER_CREATE,
 *        SNPU_IOC_OWNER_DESTROY, SNPU_IOC_ATTACHED_STREAM_GET.
 *   0.5  Process snapshot: SNPU_IOC_SNAPSHOT_LOCK, _BACKUP, _RESTORE,
 *        _UNLOCK, _STATE; background threads: SNPU_IOC_BG_REGISTER,
 *        _UNREGISTER, _PARK; the state page (SNPU_STATE_MMAP_OFFSET).
 *   0.6  A shared device: mmap(2) offsets below 2^32 pages for 32-bit
 *        processes (SNPU_RING_MMAP_OFFSET, SNPU_STATE_MMAP_OFFSET,
 *        SNPU_HOST_MMAP_OFFSET; the rings and the state page moved);
 *        absolute, restartable deadlines (SNPU_WAIT_ABSOLUTE) for
 *        STREAM_SYNC, EVENT_SYNC, CALLBACK_WAIT and ENTER;
 *        snapshot and background-thread calls only from the process
 *        that opened the file (EPERM); SNPU_PRIO_HIGH needs CAP_SYS_NICE
 *        (EACCES); output-only fields accept any value on input (they
 *        had to be zero in some structs); the test hooks (SPIN, FAIL,
 *        SNPU_IOC_NOP) need the module parameter test_hooks
 *        (SNPU_CAP_TEST_HOOKS, else EOPNOTSUPP); handles are allocated
 *        cyclically, not lowest free first; SNPU_IOC_SUBMIT writes @seq
 *        before queueing (EFAULT means nothing was queued); a
 *        SNPU_IOC_CALLBACK_WAIT that fails with EFAULT leaves the
 *        callback queued for the next wait;
 *        SPIN at most 1 s (EINVAL above); a task
 *        past the watchdog fails with ETIMEDOUT; without CAP_SYS_NICE at
 *        most 4 SQ pollers per user and device (EAGAIN) and idle_ms
 *        clamped to 100;
 *        HOST_ALLOC memory is charged to RLIMIT_MEMLOCK and
 *        the memory cgroup (ENOMEM); SNPU_BG_MAX (BG_REGISTER: ENOSPC);
 *        the work of one block of a launch is at most
 *        SNPU_KERNEL_BLOCK_WORK_MAX (EINVAL above), reported in the new
 *        out field snpu_info.max_block_work (was reserved[0]).
 *   0.7  Graphs: SNPU_IOC_GRAPH_CREATE, SNPU_IOC_GRAPH_DESTROY and the
 *        graph launch task SNPU_OP_GRAPH (SNPU_CAP_GRAPHS); their usage
 *        and quotas in snpu_ctx_query (out fields, were reserved).
 *   0.8  Built-in kernels for training, ids 15 to 23: GEMM_TN_F32,
 *        GEMM_NT_F32, BIAS_ADD_F32, RELU_BWD_F32, SOFTMAX_XENT_F32
 *        (a task's result EDOM for a label out of range), COLSUM_F32,
 *        ARGMAX_F32, COUNT_EQ_I32, AFFINE_F32; SNPU_KERNEL_COUNT 24.
 *   0.9  Statistics through the generic netlink family: SNPU_CMD_STATS,
 *        messages SNPU_KIND_DEV_STATS and SNPU_KIND_CONTEXT
 *        (linux/snpu_netlink.h); tracepoints (system snpu, not ABI).
 *   0.10 Host callbacks through the rings (SNPU_CAP_RING_CALLBACKS): a
 *        ring set up with SNPU_RING_CALLBACK_CQE delivers ready callbacks
 *        as completions flagged SNPU_CQE_F_CALLBACK (cookie and stream
 *        in the new @callback member of struct snpu_cqe), and an SQE of
 *        the new op SNPU_OP_CALLBACK_DONE completes one; event records,
 *        stream waits and NOP launches complete where they become ready
 *        (no behaviour changes).
 *   0.11 Collectives (SNPU_CAP_COLLECTIVES): communicators of ranks in
 *        any files, devices and processes, joined by a 128-bit id
 *        (SNPU_IOC_COMM_ID, SNPU_IOC_COMM_JOIN, SNPU_IOC_COMM_DESTROY,
 *        SNPU_IOC_COMM_QUERY), and the task op SNPU_OP_COLL (all-reduce,
 *        broadcast, all-gather, reduce-scatter) through SUBMIT and the
 *        rings; task results ECONNRESET and ECONNABORTED.
 *   0.12 Fences (SNPU_CAP_FENCES): SNPU_IOC_EVENT_EXPORT makes a sync_file
 *        fd whose dma_fence signals when an event's capture completes,
 *        with the work's error; the task op SNPU_OP_FENCE_WAIT makes a
 *        stream wait for any sync_file fd (SUBMIT only); per-file usage
 *        in fdinfo (drm-usage-stats keys) and the sysfs attribute
 *        busy_ns (not ABI-numbered, listed here for reference).
 *   0.13 dma-buf (SNPU_CAP_DMABUF): SNPU_IOC_MEM_EXPORT makes a dma-buf
 *        of a range of a device allocation (mmap, DMA_BUF_IOCTL_SYNC,
 *        other drivers, other contexts); SNPU_IOC_MEM_IMPORT makes any
 *        dma-buf device memory of the context; EBADF and EOPNOTSUPP
 *        from MEM_IMPORT.
 *   0.14 Checkpoint to a file and restore into a new process
 *        (SNPU_CAP_CHECKPOINT, linux/snpu_ckpt.h): SNPU_IOC_CKPT_PROC
 *        (state, lock, checkpoint into an fd and unlock of the caller's
 *        process or of one it may ptrace) and SNPU_IOC_CKPT_RESTORE (a
 *        context of an image into a fresh file, same handles, device
 *        addresses and mmap offsets); errors ENOEXEC, EBADMSG, EPROTO,
 *        EADDRINUSE, ENOTEMPTY, ESPIPE as Documentation/checkpoint.rst.
 *   0.15 Graphs, rings and communicators in checkpoint images (format
 *        SNPU_CKPT_VERSION 2; version 1 images still restore):
 *        SNPU_IOC_RING_QUERY (the layout of a file's rings, for a process
 *        that restored them); CKPT_PROC's EBUSY (a collective queued on
 *        some ranks only), CKPT_RESTORE's EAGAIN (a poller past the
 *        user's limit) and EEXIST (a rank restored twice).
 */
#ifndef _UAPI_LINUX_SNPU_H
#define _UAPI_LINUX_SNPU_H

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

#define SNPU_ABI_MAJOR		0
#define SNPU_ABI_MINOR		15

/*
 * In @flags of STREAM_SYNC, EVENT_SYNC, CALLBACK_WAIT and ENTER: @timeout_ns
 * is a CLOCK_MONOTONIC deadline, not a relative timeout (-1 still waits
 * forever; a deadline already past polls). A signal restarts the call
 * with the same deadline, where a relative timeout would start over.
 */
#define SNPU_WAIT_ABSOLUTE	_BITUL(16)

/* Largest argument struct the kernel ever copies. */
#define SNPU_IOC_MAX_SIZE	4096

#define SNPU_IOC_MAGIC		'S'

/*
 * Capability bits reported in snpu_info.caps. A bit is set when the driver
 * implements the feature it names; unknown bits are reserved.
 */
#define SNPU_CAP_MEMORY		_BITULL(0)	/* device and host memory */
#define SNPU_CAP_STREAMS	_BITULL(1)	/* streams, events, SUBMIT */
#define SNPU_CAP_CALLBACKS	_BITULL(2)	/* host callback tasks */
#define SNPU_CAP_RING		_BITULL(3)	/* command queues */
#define SNPU_CAP_ATTACHED	_BITULL(4)	/* owners, attached streams */
#define SNPU_CAP_SNAPSHOT	_BITULL(5)	/* process snapshot */
#define SNPU_CAP_GRAPHS		_BITULL(7)	/* graphs (ABI 0.7) */
#define SNPU_CAP_RING_CALLBACKS	_BITULL(8)	/* callbacks as CQEs (0.10) */
#define SNPU_CAP_COLLECTIVES	_BITULL(9)	/* communicators (0.11) */
#define SNPU_CAP_FENCES		_BITULL(10)	/* sync_file fences (0.12) */
#define SNPU_CAP_DMABUF		_BITULL(11)	/* dma-buf export/import (0.13) */
#define SNPU_CAP_CHECKPOINT	_BITULL(12)	/* images in files (0.14) */
/*
 * Not a feature but how the module was loaded: the test hooks (kernels
 * SNPU_KERNEL_SPIN and SNPU_KERNEL_FAIL, SNPU_IOC_NOP) are enabled, by the
 * module parameter test_hooks. Without it they fail with EOPNOTSUPP.
 */
#define SNPU_CAP_TEST_HOOKS	_BITULL(6)
#define SNPU_CAPS_KNOWN		(SNPU_CAP_MEMORY | SNPU_CAP_STREAMS | \
				 SNPU_CAP_CALLBACKS | SNPU_CAP_RING | \
				 SNPU_CAP_ATTACHED | SNPU_CAP_SNAPSHOT | \
				 SNPU_CAP_TEST_HOOKS | SNPU_CAP_GRAPHS | \
				 SNPU_CAP_RING_CALLBACKS | \
				 SNPU_CAP_COLLECTIVES | SNPU_CAP_FENCES | \
				 SNPU_CAP_DMABUF | SNPU_CAP_CHECKPOINT)

/**
 * struct snpu_info - device description, returned by SNPU_IOC_GET_INFO
 * @size: in: the caller's sizeof(struct snpu_info); out: bytes written
 * @flags: in: must be zero
 * @abi_major: out: SNPU_ABI_MAJOR of the driver
 * @abi_minor: out: SNPU_ABI_MINOR of the driver
 * @caps: out: SNPU_CAP_* bits
 * @dev_index: out: N of /dev/snpuN
 * @cores: out: number of compute cores (module parameter "cores")
 * @mem_total: out: device memory in bytes (module parameter "mem_mb")
 * @mem_used: out: device memory in use by all contexts, in bytes
 * @max_block_dim: out: largest block_dim a kernel launch accepts
 * @mem_align: out: granule of device allocations in bytes (a power of two)
 * @max_block_work: out: most work one block of a launch may do
 *                  (SNPU_KERNEL_BLOCK_WORK_MAX; see the built-in kernels)
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
	__u64 max_block_work;
	__u64 reserved[3];
};

#define SNPU_INFO_SIZE_VER0	88

/**
 * struct snpu_ctx_query - usage and quotas of the calling context
 * @size: in: sizeof; out: bytes written
 * @flags: must be zero
 * @mem_used: out: device memory bytes allocated by this context
 * @mem_limit: out: quota of device memory bytes
 * @host_used: out: host memory bytes allocated or registered
 * @host_limit: out: quota of host memory bytes
 * @streams: out: streams that exist
 * @streams_limit: out: quota of streams
 * @events: out: events that exist
 * @events_limit: out: quota of events
 * @tasks: out: tasks submitted and not yet complete
 * @tasks_limit: out: quota of tasks in flight (the task pool's size)
 * @graphs: out: graphs that exist (ABI 0.7, was reserved)
 * @graphs_limit: out: quota of graphs
 * @graph_mem: out: kernel memory bytes of the graphs and their instances
 * @graph_mem_limit: out: quota of @graph_mem
 * @reserved: must be zero
 *
 * Exceeding a quota fails with ENOSPC and changes nothing; running out of
 * device memory fails with ENOMEM.
 */
struct snpu_ctx_query {
	__u32 size;
	__u32 flags;
	__u64 mem_used;
	__u64 mem_limit;
	__u64 host_used;
	__u64 host_limit;
	__u32 streams;
	__u32 streams_limit;
	__u32 events;
	__u32 events_limit;
	__u32 tasks;
	__u32 tasks_limit;
	__u32 graphs;
	__u32 graphs_limit;
	__u64 graph_mem;
	__u64 graph_mem_limit;
	__u64 reserved;
};

#define SNPU_CTX_QUERY_SIZE_VER0	96

/*
 * Device memory. Device addresses are per context: an address of another
 * context never resolves. Allocations are zero-filled.
 */

/**
 * struct snpu_mem_alloc - SNPU_IOC_MEM_ALLOC
 * @size: in: sizeof; out: bytes written
 * @flags: must be zero
 * @bytes: in: size of the allocation, > 0
 * @align: in: alignment, 0 or a power of two; at least the device's
 *         mem_align is always used
 * @addr: out: device address of the allocation
 * @reserved: must be zero
 */
struct snpu_mem_alloc {
	__u32 size;
	__u32 flags;
	__u64 bytes;
	__u64 align;
	__u64 addr;
	__u64 reserved[2];
};

#define SNPU_MEM_ALLOC_SIZE_VER0	48

/**
 * struct snpu_mem_free - SNPU_IOC_MEM_FREE
 * @size: sizeof
 * @flags: must be zero
 * @addr: the address SNPU_IOC_MEM_ALLOC returned (not one inside it)
 * @reserved: must be zero
 *
 * The address stops resolving at once; the memory itself goes away when
 * the last queued task that names it completes.
 */
struct snpu_mem_free {
	__u32 size;
	__u32 flags;
	__u64 addr;
	__u64 reserved[2];
};

#define SNPU_MEM_FREE_SIZE_VER0		32

/**
 * struct snpu_mem_query - SNPU_IOC_MEM_QUERY
 * @size: in: sizeof; out: bytes written
 * @flags: must be zero
 * @addr: in: any address inside an allocation
 * @base: out: the allocation's address
 * @bytes: out: the allocation's size as requested
 * @reserved: must be zero
 */
struct snpu_mem_query {
	__u32 size;
	__u32 flags;
	__u64 addr;
	__u64 base;
	__u64 bytes;
	__u64 reserved[2];
};

#define SNPU_MEM_QUERY_SIZE_VER0	48

/* Directions of a copy. */
#define SNPU_COPY_H2D		1	/* host @src to device @dst */
#define SNPU_COPY_D2H		2	/* device @src to host @dst */
#define SNPU_COPY_D2D		3	/* device @src to device @dst */

/**
 * struct snpu_mem_copy - SNPU_IOC_MEM_COPY: a synchronous copy
 * @size: sizeof
 * @flags: must be zero
 * @dir: SNPU_COPY_*
 * @pad: must be zero
 * @dst: destination: device address, or user pointer for D2H
 * @src: source: device address, or user pointer for H2D
 * @bytes: bytes to copy; a device range must lie in one allocation
 * @reserved: must be zero
 *
 * Done when the call returns. Any user memory may be named here; queued
 * (asynchronous) copies only accept host memory of the context, see
 * SNPU_IOC_HOST_ALLOC and SNPU_IOC_HOST_REGISTER.
 */
struct snpu_mem_copy {
	__u32 size;
	__u32 flags;
	__u32 dir;
	__u32 pad;
	__u64 dst;
	__u64 src;
	__u64 bytes;
	__u64 reserved[2];
};

#define SNPU_MEM_COPY_SIZE_VER0		56

/**
 * struct snpu_mem_set - SNPU_IOC_MEM_SET: a synchronous memset
 * @size: sizeof
 * @flags: must be zero
 * @addr: device address
 * @bytes: bytes to set; the range must lie in one allocation
 * @value: the byte value, 0..255
 * @pad: must be zero
 * @reserved: must be zero
 */
struct snpu_mem_set {
	__u32 size;
	__u32 flags;
	__u64 addr;
	__u64 bytes;
	__u32 value;
	__u32 pad;
	__u64 reserved[2];
};

#define SNPU_MEM_SET_SIZE_VER0		48

/*
 * dma-buf sharing (ABI 0.13, SNPU_CAP_DMABUF); see the kernel's
 * Documentation/driver-api/dma-buf.rst for the object itself.
 *
 * SNPU_IOC_MEM_EXPORT makes a dma-buf of a page-aligned range of ONE
 * device allocation; snpu is its exporter. The dma-buf holds the
 * allocation: MEM_FREE and closing the exporter's file only drop the
 * address; the memory, and its charge to the device, stay until the last
 * reference to the dma-buf (an fd, a mapping, an importer's attachment)
 * goes. It can be mmap(2)ed (MAP_SHARED) by whoever holds the fd,
 * bracketed by DMA_BUF_IOCTL_SYNC; attached and mapped by other drivers;
 * and imported by snpu contexts of any device and process. snpu attaches
 * no fences to its reservation object: order against device work
 * explicitly (SNPU_IOC_EVENT_EXPORT, SNPU_OP_FENCE_WAIT).
 *
 * SNPU_IOC_MEM_IMPORT makes any dma-buf (of snpu or of another driver)
 * device memory of the calling context, at a new address: an allocation
 * like any other for copies, memsets, launches, graphs, collectives,
 * MEM_QUERY and MEM_FREE (which detaches it), but neither saved nor
 * restored by a snapshot (its owner is the exporter) and not exported
 * again except as a whole (EXPORT of the whole import hands out the
 * same dma-buf). Its bytes count against the context's memory quota
 * (ENOSPC), not against the device's memory (snpu did not allocate
 * them). snpu's cores reach memory through kernel addresses: the import
 * attaches to the dma-buf and keeps a kernel mapping (dma_buf_vmap) of it
 * until the allocation is freed or the file closed.
 */

/**
 * struct snpu_mem_export - SNPU_IOC_MEM_EXPORT (ABI 0.13)
 * @size: in: sizeof; out: bytes written
 * @flags: in: 0 or SNPU_EXPORT_CLOEXEC
 * @addr: in: device address of the range, inside one allocation, at a
 *        page-aligned offset from its start (EINVAL otherwise)
 * @bytes: in: length of the range, a non-zero multiple of the page size
 *         (EINVAL otherwise); the range may reach the end of the
 *         allocation's last page (EFAULT past it)
 * @fd: out: the dma-buf, opened read-write
 * @pad: must be zero
 * @reserved: must be zero
 */
struct snpu_mem_export {
	__u32 size;
	__u32 flags;
	__u64 addr;
	__u64 bytes;
	__s32 fd;
	__u32 pad;
	__u64 reserved[2];
};

#define SNPU_MEM_EXPORT_SIZE_VER0	48

/**
 * struct snpu_mem_import - SNPU_IOC_MEM_IMPORT (ABI 0.13)
 * @size: in: sizeof; out: bytes written
 * @flags: must be zero
 * @fd: in: a dma-buf fd (EBADF: not an open file; EINVAL: not a
 *      dma-buf, or its size is zero or not a multiple of the page size;
 *      EOPNOTSUPP: its exporter gives no kernel mapping of system memory)
 * @pad: must be zero
 * @addr: out: device address of the import in the calling context
 * @bytes: out: the dma-buf's size, the import's size
 * @reserved: must be zero
 */
struct snpu_mem_import {
	__u32 size;
	__u32 flags;
	__s32 fd;
	__u32 pad;
	__u64 addr;
	__u64 bytes;
	__u64 reserved[2];
};

#define SNPU_MEM_IMPORT_SIZE_VER0	48

/*
 * Mappings of the device file, by mmap(2) offset. All of them are shared
 * mappings of memory the driver owns; each stays valid, whatever the
 * process does to it, until it is unmapped.
 *
 * SNPU_RING_MMAP_OFFSET   the command queues (also returned by RING_SETUP)
 * SNPU_STATE_MMAP_OFFSET  the process's snapshot state page
 * SNPU_HOST_MMAP_OFFSET   and above: driver-allocated host memory, at the
 *                         offset SNPU_IOC_HOST_ALLOC returns
 *
 * Every offset is below 2^32 pages, so that a 32-bit process reaches them
 * with mmap2(). An offset below SNPU_HOST_MMAP_OFFSET that names none of
 * these is EINVAL.
 */
#define SNPU_RING_MMAP_OFFSET	0x0ULL
#define SNPU_STATE_MMAP_OFFSET	0x10000000ULL
#define SNPU_HOST_MMAP_OFFSET	0x20000000ULL

/*
 * Host memory that queued copies may use: allocated by the driver and
 * mapped with mmap(2) of the device file at @mmap_offset, or user memory
 * registered (pinned) with the driver. Queued copies name it by user
 * address; a range that is neither is EINVAL at submit.
 */

/**
 * struct snpu_host_alloc - SNPU_IOC_HOST_ALLOC
 * @size: in: sizeof; out: bytes written
 * @flags: must be zero
 * @bytes: in: size, > 0; rounded up to pages
 * @handle: out: handle for SNPU_IOC_HOST_FREE
 * @pad: must be zero
 * @mmap_offset: out: pass to mmap(2) with the whole size, once
 * @reserved: must be zero
 *
 * The memory is charged to the caller's memory cgroup and, unless the
 * caller has CAP_IPC_LOCK, to RLIMIT_MEMLOCK (as pinned memory, VmPin in
 * /proc/PID/status; the limit counts it together with locked memory such
 * as SNPU_IOC_HOST_REGISTER's), until HOST_FREE and munmap(2) release it
 * and no queued copy uses it. Either limit exceeded: ENOMEM, as io_uring
 * and RDMA return for RLIMIT_MEMLOCK.
 */
struct snpu_host_alloc {
	__u32 size;
	__u32 flags;
	__u64 bytes;
	__u32 handle;
	__u32 pad;
	__u64 mmap_offset;
	__u64 reserved[2];
};

#define SNPU_HOST_ALLOC_SIZE_VER0	48

/**
 * struct snpu_host_register - SNPU_IOC_HOST_REGISTER
 * @size: in: sizeof; out: bytes written
 * @flags: must be zero
 * @addr: in: user address, page aligned
 * @bytes: in: size, > 0, a multiple of the page size
 * @handle: out: handle for SNPU_IOC_HOST_FREE
 * @pad: must be zero
 * @reserved: must be zero
 *
 * Pins the pages and charges them to RLIMIT_MEMLOCK unless the caller has
 * CAP_IPC_LOCK. Ranges of one context do not overlap (EEXIST).
 */
struct snpu_host_register {
	__u32 size;
	__u32 flags;
	__u64 addr;
	__u64 bytes;
	__u32 handle;
	__u32 pad;
	__u64 reserved[2];
};

#define SNPU_HOST_REGISTER_SIZE_VER0	48

/**
 * struct snpu_handle_op - an operation on one handle
 * @size: sizeof
 * @flags: the command's flags, else zero
 * @handle: the handle
 * @pad: must be zero
 * @reserved: must be zero
 *
 * Used by SNPU_IOC_HOST_FREE (unregister or free; the unpin or free is
 * deferred while queued tasks use the memory), SNPU_IOC_STREAM_DESTROY
 * (waits for the stream's tasks, or with SNPU_STREAM_DESTROY_FORCE aborts
 * them), SNPU_IOC_STREAM_ABORT, SNPU_IOC_STREAM_RESET and
 * SNPU_IOC_EVENT_DESTROY.
 */
struct snpu_handle_op {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__u32 pad;
	__u64 reserved[2];
};

#define SNPU_HANDLE_OP_SIZE_VER0	32

#define SNPU_STREAM_DESTROY_FORCE	_BITUL(0)

/*
 * Stream priorities: a higher one is served first by the cores.
 * SNPU_PRIO_HIGH takes CAP_SYS_NICE (EACCES without it), checked when the
 * stream or owner is created.
 */
#define SNPU_PRIO_LOW		-1
#define SNPU_PRIO_NORMAL	0
#define SNPU_PRIO_HIGH		1

/**
 * struct snpu_stream_create - SNPU_IOC_STREAM_CREATE, SNPU_IOC_EVENT_CREATE
 * @size: in: sizeof; out: bytes written
 * @flags: must be zero
 * @priority: in: SNPU_PRIO_* (streams); must be zero for events
 * @handle: out: the new handle
 * @reserved: must be zero
 *
 * EACCES for SNPU_PRIO_HIGH without CAP_SYS_NICE; nothing is created.
 */
struct snpu_stream_create {
	__u32 size;
	__u32 flags;
	__s32 priority;
	__u32 handle;
	__u64 reserved[2];
};

#define SNPU_STREAM_CREATE_SIZE_VER0	32

/**
 * struct snpu_wait - SNPU_IOC_STREAM_SYNC, SNPU_IOC_EVENT_SYNC
 * @size: in: sizeof; out: bytes written
 * @flags: in: SNPU_WAIT_ABSOLUTE or 0
 * @handle: in: stream or event
 * @error: out: 0, or the -errno that put the stream in its error state
 *         (stream), or that the captured work ended with (event)
 * @timeout_ns: in: relative timeout (0 polls) or, with SNPU_WAIT_ABSOLUTE,
 *              a CLOCK_MONOTONIC deadline; -1 waits forever
 * @reserved: must be zero
 *
 * Waits until every task submitted to the stream before the call (or the
 * event's captured work) is complete: ETIMEDOUT when the timeout expires
 * first, EINTR on a signal. A stream in its error state is complete when
 * nothing of it runs any more; @error tells why.
 */
struct snpu_wait {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__s32 error;
	__s64 timeout_ns;
	__u64 reserved[2];
};

#define SNPU_WAIT_SIZE_VER0		40

/**
 * struct snpu_stream_query - SNPU_IOC_STREAM_QUERY
 * @size: in: sizeof; out: bytes written
 * @flags: must be zero
 * @handle: in: the stream
 * @error: out: 0, or the -errno of the task that failed the stream
 * @submitted: out: sequence number of the last task submitted
 * @completed: out: sequence number of the last task completed; tasks
 *             complete in sequence order, the first task is 1
 * @priority: out: SNPU_PRIO_*
 * @pad: zero
 * @reserved: must be zero
 */
struct snpu_stream_query {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__s32 error;
	__u64 submitted;
	__u64 completed;
	__s32 priority;
	__u32 pad;
	__u64 reserved[2];
};

#define SNPU_STREAM_QUERY_SIZE_VER0	56

/* States of an event. */
#define SNPU_EVENT_NEVER_RECORDED	0
#define SNPU_EVENT_PENDING		1	/* captured work not done */
#define SNPU_EVENT_COMPLETE		2

/**
 * struct snpu_event_query - SNPU_IOC_EVENT_QUERY
 * @size: in: sizeof; out: bytes written
 * @flags: must be zero
 * @handle: in: the event
 * @state: out: SNPU_EVENT_*
 * @stream: out: the stream of the last record (0 if never recorded)
 * @error: out: -errno the captured work ended with, or 0
 * @seq: out: sequence number in @stream the capture waits for
 * @time_ns: out: completion time (CLOCK_MONOTONIC) when complete
 * @reserved: must be zero
 */
struct snpu_event_query {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__u32 state;
	__u32 stream;
	__s32 error;
	__u64 seq;
	__u64 time_ns;
	__u64 reserved[2];
};

#define SNPU_EVENT_QUERY_SIZE_VER0	56

/**
 * struct snpu_event_elapsed - SNPU_IOC_EVENT_ELAPSED
 * @size: in: sizeof; out: bytes written
 * @flags: must be zero
 * @start: in: event recorded first
 * @end: in: event recorded later
 * @ns: out: end's completion time minus start's
 * @reserved: must be zero
 *
 * Both events must be complete: EINVAL when one was never recorded, EBUSY
 * when one is still pending.
 */
struct snpu_event_elapsed {
	__u32 size;
	__u32 flags;
	__u32 start;
	__u32 end;
	__s64 ns;
	__u64 reserved[2];
};

#define SNPU_EVENT_ELAPSED_SIZE_VER0	40

/* In @flags of SNPU_IOC_EVENT_EXPORT: the fd is close-on-exec. */
#define SNPU_EXPORT_CLOEXEC	_BITUL(0)

/**
 * struct snpu_event_export - SNPU_IOC_EVENT_EXPORT (ABI 0.12)
 * @size: in: sizeof; out: bytes written
 * @flags: in: 0 or SNPU_EXPORT_CLOEXEC
 * @handle: in: the event, recorded (EINVAL when never recorded)
 * @fd: out: a sync_file fd (see the kernel's sync_file.rst) of one
 *      dma_fence that signals when the event's capture completes; its
 *      error is the capture's: 0, or the -errno of the task that failed
 *      the stream (-ECANCELED when the stream was aborted or the file
 *      closed, -EIO after a device reset). A capture already complete
 *      gives a signalled fence. Re-recording the event later does not
 *      change the fd's fence.
 * @reserved: must be zero
 *
 * The fd polls readable once the fence signalled, merges with other
 * sync_files (SYNC_IOC_MERGE) and answers SYNC_IOC_FILE_INFO (driver
 * "snpu", timeline the device's name). It holds the module (not the
 * file): rmmod waits until every such fd is closed.
 */
struct snpu_event_export {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__s32 fd;
	__u64 reserved[2];
};

#define SNPU_EVENT_EXPORT_SIZE_VER0	32

/*
 * Tasks. One descriptor, struct snpu_task, for every kind of work; the
 * same descriptor goes through SNPU_IOC_SUBMIT (and later the command
 * queues). Every device address is checked against the context's address
 * space with its extent at submit (EFAULT), never at run time.
 */
#define SNPU_OP_LAUNCH		1	/* run a built-in kernel */
#define SNPU_OP_COPY		2	/* asynchronous copy */
#define SNPU_OP_MEMSET		3	/* asynchronous memset */
#define SNPU_OP_EVENT_RECORD	4	/* capture the stream's work so far */
#define SNPU_OP_STREAM_WAIT	5	/* wait for an event's capture */
#define SNPU_OP_HOST_FUNC	6	/* deliver a callback to the process */
#define SNPU_OP_GRAPH		7	/* launch a graph (ABI 0.7) */
#define SNPU_OP_CALLBACK_DONE	8	/* SQ only: complete a callback (0.10) */
#define SNPU_OP_COLL		9	/* a collective (0.11), see below */
#define SNPU_OP_FENCE_WAIT	10	/* wait for a sync_file (0.12) */

/*
 * Built-in kernels. A launch runs block_dim blocks in parallel; a block
 * works on its slice of the elements: with n elements and B blocks, block
 * b takes [b * c, min(n, (b + 1) * c)) where c = ceil(n / B). Buffers are
 * device ranges (address, bytes); scalars are passed in @value with
 * @bytes zero. Element counts are taken from the buffers as noted.
 * Buffers of 32-bit elements must be 4-byte aligned; COPY's buffers and
 * CRC32C's input are bytes. A 32-bit scalar's upper 32 bits must be zero.
 *
 *   NOP          no arguments; completes when its stream reaches it,
 *                without a core: on an idle stream, as it is submitted
 *   COPY         (dst, src): bytes of src, dst at least as large
 *   FILL         (dst, scalar u32 pattern): dst filled with the 32-bit
 *                pattern, bytes a multiple of 4
 *   ADD_I32 ...  (c, a, b): c[i] = a[i] op b[i]; n = c.bytes / 4, a and b
 *                at least as large
 *   AXPY_F32     (y, x, scalar f32 bits a): y[i] += a * x[i]
 *   RELU_F32     (y, x): y[i] = max(x[i], 0)
 *   GEMM_F32     (c, a, b, scalar m, scalar n, scalar k): row-major
 *                c[m x n] = a[m x k] * b[k x n], m, n, k in 1..65536;
 *                elements of c are sliced
 *   REDUCE_SUM_* (out, in): out[b] = sum of block b's slice of in;
 *                out holds at least block_dim elements
 *   CRC32C       (out, in): out[b] = crc32c (Castagnoli, initial and final
 *                xor ~0) of block b's slice of in's bytes
 *   SPIN         (scalar ns): every block busy-waits ns, at most 1 s
 *                (1000000000; EINVAL above)
 *   FAIL         (scalar errno): the task fails with -errno, 1..4095
 *
 * Kernels for training (ABI 0.8). f32 unless said; m, n, k and ncls are
 * 32-bit scalars in 1..65536; "rows" of a matrix of ncls (or n) columns
 * is its element count divided by ncls, which must divide it exactly:
 *
 *   GEMM_TN_F32  (c, a, b, scalar m, scalar n, scalar k): c[m x n] =
 *                a^T * b with a [k x m] and b [k x n]; elements of c
 *                are sliced, each costs k
 *   GEMM_NT_F32  (c, a, b, scalar m, scalar n, scalar k): c[m x n] =
 *                a * b^T with a [m x k] and b [n x k]; as GEMM_TN
 *   BIAS_ADD_F32 (y, x, bias, scalar n): y[i] = x[i] + bias[i % n];
 *                y.bytes / 4 elements, a multiple of n; x at least as
 *                large, bias at least n elements
 *   RELU_BWD_F32 (dx, dy, y): dx[i] = y[i] > 0 ? dy[i] : 0; dx.bytes / 4
 *                elements, dy and y at least as large
 *   SOFTMAX_XENT_F32 (loss, dlogits, logits, labels i32, scalar ncls,
 *                scalar f32 bits scale): per row r of logits, with
 *                mx = max of the row, e[j] = exp(logits[r][j] - mx),
 *                s = e[0] + ... + e[ncls - 1] in that order and
 *                t = labels[r]: loss[r] = log(s) - (logits[r][t] - mx)
 *                (= -log(softmax[t])) and dlogits[r][j] =
 *                (e[j] / s - (j == t)) * scale; loss at least rows
 *                elements, dlogits at least rows * ncls, labels at least
 *                rows; dlogits may be logits itself but no other overlap.
 *                exp and log are the driver's own (relative error below
 *                2^-23 against the exact values, the same bits
 *                everywhere). A label outside
 *                [0, ncls) fails the task with EDOM when its row is
 *                reached, leaving that row unwritten. Rows are sliced,
 *                each costs ncls
 *   COLSUM_F32   (out, in, scalar n): out[j] = in[0][j] + in[1][j] + ...
 *                over the rows of in [rows x n] in order; out at least n
 *                elements; columns are sliced, each costs rows
 *   ARGMAX_F32   (out i32, in, scalar ncls): out[r] = index of the first
 *                maximum of row r of in [rows x ncls] (a NaN never
 *                compares greater); out at least rows elements; rows are
 *                sliced, each costs ncls
 *   COUNT_EQ_I32 (out, a, b): out[b] = number of i in block b's slice with
 *                a[i] == b[i]; a.bytes / 4 elements, b at least as large,
 *                out at least block_dim elements
 *   AFFINE_F32   (y, x, scalar f32 bits a, scalar f32 bits b):
 *                y[i] = a * x[i] + b (the product rounded first);
 *                y.bytes / 4 elements, x at least as large
 *
 * Every output element is computed by one block, in the order given
 * (GEMM sums over k from 0 up, COLSUM over rows from 0 up), so results do
 * not depend on block_dim: a launch gives the same bits every time.
 *
 * SPIN and FAIL are test hooks: a launch of either is EOPNOTSUPP unless
 * the module was loaded with test_hooks=1 (SNPU_CAP_TEST_HOOKS).
 *
 * A block keeps its core until it ends, so the work of one block is
 * bounded: ceil(n / block_dim) units (the slice above; for COPY and
 * CRC32C n counts bytes, for the GEMMs elements of c, m * n, for
 * SOFTMAX_XENT and ARGMAX rows, for COLSUM columns) times the cost of a
 * unit, k multiply-adds for the GEMMs, ncls for SOFTMAX_XENT and ARGMAX,
 * rows for COLSUM and 1 for the other kernels, must not exceed
 * SNPU_KERNEL_BLOCK_WORK_MAX (also reported in snpu_info.max_block_work);
 * a launch above it is refused with EINVAL.
 * Raise block_dim to split the work: e.g. GEMM_F32 of m = n = k = 4096
 * needs block_dim >= 4096. Under TCG emulation a block at the bound
 * takes well under a second, but SOFTMAX_XENT's (an exp and a division
 * per class) about ten times an ADD_F32 block's.
 */
#define SNPU_KERNEL_BLOCK_WORK_MAX	_BITULL(24)

#define SNPU_KERNEL_NOP			0
#define SNPU_KERNEL_COPY		1
#define SNPU_KERNEL_FILL		2
#define SNPU_KERNEL_ADD_I32		3
#define SNPU_KERNEL_ADD_F32		4
#define SNPU_KERNEL_MUL_I32		5
#define SNPU_KERNEL_MUL_F32		6
#define SNPU_KERNEL_AXPY_F32		7
#define SNPU_KERNEL_RELU_F32		8
#define SNPU_KERNEL_GEMM_F32		9
#define SNPU_KERNEL_REDUCE_SUM_I32	10
#define SNPU_KERNEL_REDUCE_SUM_F32	11
#define SNPU_KERNEL_CRC32C		12
#define SNPU_KERNEL_SPIN		13
#define SNPU_KERNEL_FAIL		14
#define SNPU_KERNEL_GEMM_TN_F32		15	/* ABI 0.8 */
#define SNPU_KERNEL_GEMM_NT_F32		16	/* ABI 0.8 */
#define SNPU_KERNEL_BIAS_ADD_F32	17	/* ABI 0.8 */
#define SNPU_KERNEL_RELU_BWD_F32	18	/* ABI 0.8 */
#define SNPU_KERNEL_SOFTMAX_XENT_F32	19	/* ABI 0.8 */
#define SNPU_KERNEL_COLSUM_F32		20	/* ABI 0.8 */
#define SNPU_KERNEL_ARGMAX_F32		21	/* ABI 0.8 */
#define SNPU_KERNEL_COUNT_EQ_I32	22	/* ABI 0.8 */
#define SNPU_KERNEL_AFFINE_F32		23	/* ABI 0.8 */
#define SNPU_KERNEL_COUNT		24

#define SNPU_KERNEL_MAX_ARGS		6

/**
 * struct snpu_kernel_arg - one argument of a launch
 * @value: device address of a buffer, or a scalar
 * @bytes: extent of the buffer; zero for a scalar
 */
struct snpu_kernel_arg {
	__u64 value;
	__u64 bytes;
};

/**
 * struct snpu_task - one unit of work, 128 bytes
 * @op: SNPU_OP_*
 * @flags: must be zero
 * @stream: the stream the task runs on
 * @reserved0: must be zero
 * @user_data: returned with the task's completion (callbacks, rings)
 * @launch: SNPU_OP_LAUNCH: @kernel (SNPU_KERNEL_*), @block_dim (1 to the
 *          device's max_block_dim), @args (unused ones zero)
 * @copy: SNPU_OP_COPY: like struct snpu_mem_copy; a host side must be host
 *        memory of the context
 * @memset: SNPU_OP_MEMSET: like struct snpu_mem_set
 * @event: SNPU_OP_EVENT_RECORD, SNPU_OP_STREAM_WAIT: the event handle
 * @graph: SNPU_OP_GRAPH: the graph handle, the device address of each of
 *         its boundary slots (the ones past the graph's slot count zero)
 *         and of its scratch (zero when it has none); see "Graphs"
 * @callback: SNPU_OP_CALLBACK_DONE, an SQE only (SUBMIT and graphs refuse
 *            it with EINVAL): the @cookie of a callback the ring delivered
 *            (SNPU_CQE_F_CALLBACK) and its @status, 0 or a -errno that
 *            fails the callback's task and its stream, as
 *            SNPU_IOC_CALLBACK_DONE does; @stream must be zero. It is not
 *            a task: no job, no sequence number, and a completion only
 *            when it fails (ENOENT for a cookie that names no delivered
 *            callback of the file, EINVAL for a bad field), with its
 *            @user_data
 * @coll: SNPU_OP_COLL (ABI 0.11): the communicator rank handle @comm of
 *        this file, the collective @coll (SNPU_COLL_*), the element type
 *        @dtype (SNPU_DTYPE_*), the reduction @redop (SNPU_REDOP_* for
 *        ALLREDUCE and REDUCE_SCATTER, else 0), the elements @count
 *        (> 0), the device addresses @send and @recv and, for
 *        BROADCAST, the @root rank (else 0); see "Collectives"
 * @fence: SNPU_OP_FENCE_WAIT (ABI 0.12), through SNPU_IOC_SUBMIT only
 *         (the rings and graphs refuse it with EINVAL): @fd, a sync_file
 *         fd of the caller (of any driver; EINVAL for an fd that is not
 *         one, EBADF for no fd), whose fences the submit takes; the
 *         stream's later tasks wait until they signal. A fence that
 *         signals with an error fails the task (and so the stream) with
 *         that error; a stream aborted or a file closed meanwhile stops
 *         waiting (ECANCELED)
 * @raw: the union as words; unused words must be zero
 */
struct snpu_task {
	__u32 op;
	__u32 flags;
	__u32 stream;
	__u32 reserved0;
	__u64 user_data;
	union {
		struct {
			__u32 kernel;
			__u32 block_dim;
			struct snpu_kernel_arg args[SNPU_KERNEL_MAX_ARGS];
		} launch;
		struct {
			__u32 dir;
			__u32 pad;
			__u64 dst;
			__u64 src;
			__u64 bytes;
		} copy;
		struct {
			__u64 addr;
			__u64 bytes;
			__u32 value;
			__u32 pad;
		} memset;
		struct {
			__u32 event;
			__u32 pad;
		} event;
		struct {
			__u32 graph;
			__u32 pad;
			__u64 scratch;
			__u64 slots[8];
		} graph;
		struct {
			__u32 cookie;
			__s32 status;
		} callback;
		struct {
			__u32 comm;
			__u32 coll;
			__u32 dtype;
			__u32 redop;
			__u64 count;
			__u64 send;
			__u64 recv;
			__u32 root;
			__u32 pad;
		} coll;
		struct {
			__s32 fd;
			__u32 pad;
		} fence;
		__u64 raw[13];
	};
};

#define SNPU_TASK_SIZE			128

/**
 * struct snpu_submit - SNPU_IOC_SUBMIT
 * @size: in: sizeof; out: bytes written
 * @flags: must be zero
 * @count: in: number of tasks, 1..SNPU_SUBMIT_MAX
 * @task_size: in: sizeof(struct snpu_task) as the caller knows it
 * @tasks: in: user pointer to @count tasks, @task_size bytes apart
 * @seq: out: sequence number of the last task in its stream
 * @reserved: must be zero
 *
 * All or nothing: every task is checked first; on any error nothing is
 * queued and the error names the first bad task's problem (EINVAL for a
 * launch that breaks its kernel's rules, the bound on the work of one
 * block included: see the built-in kernels). @seq is
 * written back before the tasks are queued: EFAULT when it cannot be
 * written, with nothing queued. A stream in
 * its error state refuses new tasks with EIO until SNPU_IOC_STREAM_RESET.
 */
struct snpu_submit {
	__u32 size;
	__u32 flags;
	__u32 count;
	__u32 task_size;
	__u64 tasks;
	__u64 seq;
	__u64 reserved[2];
};

#define SNPU_SUBMIT_SIZE_VER0		48
#define SNPU_SUBMIT_MAX			1024

/**
 * struct snpu_callback - SNPU_IOC_CALLBACK_WAIT, SNPU_IOC_CALLBACK_DONE
 * @size: in: sizeof; out: bytes written
 * @flags: in (WAIT): SNPU_WAIT_ABSOLUTE or 0; (DONE): must be zero
 * @timeout_ns: in (WAIT): relative timeout (0 polls) or, with
 *              SNPU_WAIT_ABSOLUTE, a CLOCK_MONOTONIC deadline; -1 forever
 * @user_data: out (WAIT): the SNPU_OP_HOST_FUNC task's @user_data
 * @cookie: out (WAIT), in (DONE): names the delivered callback
 * @status: in (DONE): 0, or a -errno that fails the task and its stream
 * @stream: out (WAIT): the task's stream
 * @pad: must be zero
 * @reserved: must be zero
 *
 * A host-function task that becomes ready is delivered to one WAIT (the
 * device file also polls readable while one is pending); the stream does
 * not go past it until DONE names its cookie. Each command ignores the
 * fields only the other uses (DONE: @timeout_ns, @user_data, @stream;
 * WAIT: @status), so one struct serves a WAIT/DONE loop. A WAIT that
 * cannot write its result fails with EFAULT and the callback stays first
 * in the queue.
 */
struct snpu_callback {
	__u32 size;
	__u32 flags;
	__s64 timeout_ns;
	__u64 user_data;
	__u32 cookie;
	__s32 status;
	__u32 stream;
	__u32 pad;
	__u64 reserved[2];
};

#define SNPU_CALLBACK_SIZE_VER0		56

/*
 * Graphs (ABI 0.7). A graph is a DAG of tasks uploaded once with
 * SNPU_IOC_GRAPH_CREATE, checked once, and then launched any number of
 * times as ONE task (SNPU_OP_GRAPH) through SNPU_IOC_SUBMIT or the SQ.
 *
 * Nodes are struct snpu_graph_node: a struct snpu_task (LAUNCH, COPY
 * device to device, MEMSET or COLL; @stream, @flags and @user_data zero) and,
 * for each device address of the task, how it is bound (@ref):
 *
 *   SNPU_GRAPH_REF_ADDR       the value is a device address of the context,
 *                             resolved (and its allocation held) at create
 *   SNPU_GRAPH_REF_SLOT(i)    the value is an offset into boundary slot i,
 *                             whose address each launch passes; offset plus
 *                             extent within the slot's declared bytes
 *   SNPU_GRAPH_REF_SCRATCH    the value is an offset into the launch's
 *                             scratch, within the graph's scratch bytes
 *
 * @ref[i] binds launch argument i (zero for scalars), or for a COPY
 * @ref[0] the destination and @ref[1] the source, for a MEMSET @ref[0] the
 * address, for a collective (SNPU_OP_COLL, ABI 0.11) @ref[0] its recv and
 * @ref[1] its send (0 off a broadcast's root); each launch binds its
 * collective nodes, in index order, as the rank's next collectives, and a
 * graph with one is never stitched; the other entries are zero. Internal
 * edges are a fanin CSR:
 * the predecessors of node n are fanin[fanin_offsets[n] ..
 * fanin_offsets[n + 1]), each an index below n (so the graph is acyclic),
 * without duplicates. A node starts when its predecessors are complete;
 * nodes without predecessors start when the launch does.
 *
 * A launch is a task on a stream like any other: it starts when the
 * stream reaches it, completes (one completion: CQE, event capture,
 * @completed) when its last node does, and fails with the first failing
 * node's error, the nodes not yet started cancelled and the stream in its
 * error state. Each slot address must lie, with the slot's bytes, inside
 * one allocation (EFAULT at submit), as must the scratch; a slot or the
 * scratch that a node reads or writes as 32-bit elements must be 4-byte
 * aligned (EINVAL).
 *
 * Stitching: a launch that directly follows a launch of the same graph on
 * its stream, with the same slot and scratch addresses, does not wait for
 * the whole previous launch: each of its nodes waits only for the nodes
 * of the previous launch it conflicts with (read after write, write after
 * read or write after write on overlapping bytes of a slot, the scratch
 * or a plain address; argument 0 of a kernel (and argument 1 of
 * SOFTMAX_XENT_F32) and the destination of a copy or memset are written,
 * the rest read). Those hazard lists are
 * computed at create. The launch still completes in stream order, but its
 * nodes may run before the launch in front of it has failed: it then
 * ends with -ECANCELED (or its own node's error) with those nodes' work
 * done. A graph with more than SNPU_GRAPH_MAX_HAZARDS hazard pairs is
 * never stitched.
 *
 * Limits: SNPU_GRAPH_MAX_NODES nodes, SNPU_GRAPH_MAX_EDGES edges,
 * SNPU_GRAPH_MAX_SLOTS slots; graphs per context and the kernel memory of
 * their definitions and launch instances (one per launch in flight, kept
 * for reuse) are limited by module parameters: ENOSPC from GRAPH_CREATE,
 * or from a launch that needs a new instance past the limit.
 */
#define SNPU_GRAPH_MAX_NODES		4096
#define SNPU_GRAPH_MAX_EDGES		65536
#define SNPU_GRAPH_MAX_SLOTS		8
#define SNPU_GRAPH_MAX_HAZARDS		65536

#define SNPU_GRAPH_REF_ADDR		0
#define SNPU_GRAPH_REF_SLOT(i)		(0x100 + (i))
#define SNPU_GRAPH_REF_SCRATCH		0x200

/**
 * struct snpu_graph_node - one node of a graph, 160 bytes
 * @task: the work, as a task; @task.stream, @task.flags and
 *        @task.user_data must be zero
 * @ref: SNPU_GRAPH_REF_* for each device address of @task
 * @reserved: must be zero
 */
struct snpu_graph_node {
	struct snpu_task task;
	__u32 ref[6];
	__u64 reserved;
};

#define SNPU_GRAPH_NODE_SIZE		160

/**
 * struct snpu_graph_create - SNPU_IOC_GRAPH_CREATE
 * @size: in: sizeof; out: bytes written
 * @flags: must be zero
 * @nodes_count: in: number of nodes, 1..SNPU_GRAPH_MAX_NODES
 * @edges_count: in: number of edges, 0..SNPU_GRAPH_MAX_EDGES
 * @slots_count: in: number of boundary slots, 0..SNPU_GRAPH_MAX_SLOTS
 * @node_size: in: sizeof(struct snpu_graph_node) as the caller knows it;
 *             bytes past what the kernel knows must be zero
 * @nodes: in: user pointer to @nodes_count nodes, @node_size bytes apart
 * @fanin_offsets: in: user pointer to @nodes_count + 1 __u32: 0 first,
 *                 non-decreasing, @edges_count last
 * @fanin: in: user pointer to @edges_count __u32 node indices (0 when
 *         there are no edges)
 * @slot_bytes: in: user pointer to @slots_count __u64 extents, each > 0
 *              (0 when there are no slots)
 * @scratch_bytes: in: bytes of scratch a launch passes, 0 for none
 * @graph: out: the handle
 * @pad: must be zero
 * @reserved: must be zero
 *
 * Every node is checked as SNPU_IOC_SUBMIT checks a task (EINVAL,
 * EOPNOTSUPP for a test hook without test_hooks, EFAULT for a plain
 * address outside the context's allocations); an edge, count or offset
 * out of range is EINVAL; ENOSPC past the graph quotas. Nothing is
 * created on error.
 */
struct snpu_graph_create {
	__u32 size;
	__u32 flags;
	__u32 nodes_count;
	__u32 edges_count;
	__u32 slots_count;
	__u32 node_size;
	__u64 nodes;
	__u64 fanin_offsets;
	__u64 fanin;
	__u64 slot_bytes;
	__u64 scratch_bytes;
	__u32 graph;
	__u32 pad;
	__u64 reserved[2];
};

#define SNPU_GRAPH_CREATE_SIZE_VER0	88

/*
 * SNPU_IOC_GRAPH_DESTROY takes a struct snpu_handle_op (no flags): the
 * handle goes at once, the definition when the launches in flight are
 * complete.
 */

/*
 * Collectives (ABI 0.11, SNPU_CAP_COLLECTIVES). A communicator is a set of
 * @nranks ranks; each rank is one file (context) of any device, in any
 * process of one user. The communicator is named by a 128-bit id:
 *
 * SNPU_IOC_COMM_ID makes a new id, 128 random bits, for a communicator
 * that the caller's effective user may join until all its ranks have
 * joined. The id is a secret shared out of band: who has it and runs as
 * that user may join. The file that asked for it keeps the communicator
 * open to joins; when that file is closed before any rank joined, the id
 * is gone. A file keeps at most SNPU_COMM_MAX_PER_FILE ids that nobody
 * joined (ENOSPC).
 *
 * SNPU_IOC_COMM_JOIN makes the file rank @rank of the communicator @id
 * and returns a handle of the file for it. The first join fixes @nranks
 * (EINVAL when a later one differs); the communicator is complete, and
 * takes no more joins (ENOENT), once every rank joined. ENOENT for an id
 * that names no communicator open to joins, EACCES for one of another
 * effective user, EEXIST for a rank taken or a file that holds a rank of
 * the communicator already, ECONNRESET for a broken one (see below),
 * ENOSPC past SNPU_COMM_MAX_PER_FILE ranks in the file. A join does not
 * wait for the other ranks: a collective waits for the same collective of
 * every rank.
 *
 * A collective is a task, SNPU_OP_COLL, on one of the rank's streams:
 * ordered by its stream like any task,
 * captured by events, waited for by stream waits. The k-th collective
 * that a rank queues matches the k-th of every other rank, and they must
 * agree on @coll, @dtype, @redop, @count and @root: the first rank to
 * queue the k-th fixes them, and a rank whose k-th differs gets EINVAL and
 * queues nothing. The collective starts once every rank's stream has
 * reached it and completes on every rank at once, when every rank's
 * result is in place and no rank reads another's buffers any more. A rank
 * may be at most SNPU_COMM_MAX_PENDING collectives ahead of the slowest
 * (ENOSPC).
 *
 *   ALLREDUCE       @send and @recv: @count elements; recv = the
 *                   reduction of every rank's send
 *   BROADCAST       @recv: @count elements, set to the @root's send;
 *                   @send is read on the root only, and on the other
 *                   ranks must be 0 or equal to @recv
 *   ALLGATHER       @send: @count elements; @recv: @nranks * @count, rank
 *                   r's send at element r * @count
 *   REDUCE_SCATTER  @send: @nranks * @count elements; @recv: @count, the
 *                   reduction of every rank's send elements from
 *                   rank * @count on
 *
 * In place: @send == @recv (ALLREDUCE, BROADCAST), @send == @recv +
 * rank * @count * 4 (ALLGATHER), @recv == @send + rank * @count * 4
 * (REDUCE_SCATTER); any other overlap of the two ranges is EINVAL, as is
 * an address not 4-byte aligned, a @root not below @nranks, or a @redop
 * not 0 for a collective that does not reduce. Each range lies in one
 * allocation of the file (EFAULT). Elements are 4 bytes (SNPU_DTYPE_*).
 *
 * Reductions are in rank order: element i of the result is
 * (...((x0[i] op x1[i]) op x2[i]) ...) op xn-1[i], xr being rank r's
 * input, whatever the devices and their cores: the same bits every run,
 * equal to a loop over the ranks in that order on any host. SUM of
 * SNPU_DTYPE_I32 wraps (two's complement); SUM of SNPU_DTYPE_F32 rounds
 * each addition to nearest (never fused or reassociated); MAX is
 * "a > b ? a : b", a the result so far and b the next rank's element
 * (for f32: an equal -0.0 and 0.0 give b, as does a NaN in either).
 *
 * How it runs: the elements are cut into @nranks chunks (the first ones of
 * ceil(@count / @nranks) elements, the last ones shorter or empty; for
 * ALLGATHER and REDUCE_SCATTER chunk r is rank r's @count elements). Each
 * rank's device cores first reduce the rank's own chunk, reading it from
 * every rank's send buffer (peer reads); then the chunks travel the ring
 * of ranks, each rank copying from the one before it (peer copies), in
 * @nranks - 1 steps. BROADCAST travels the ring from the root, chunk by
 * chunk. No rank waits for anything but its neighbour in the ring.
 *
 * Failures: a collective that fails or is cancelled on one rank (its
 * stream failed or was aborted, its file is closing, a block ran past the
 * watchdog) ends there with its own error and on every other rank with
 * ECONNABORTED; the communicator stays usable. A rank that leaves
 * (SNPU_IOC_COMM_DESTROY, its file closed, its process gone) breaks the
 * communicator: the collectives of the other ranks not complete end with
 * ECONNRESET, as soon as nothing runs on their buffers (never waiting for
 * the stream of another rank), and SUBMIT, SQEs and COMM_JOIN get
 * ECONNRESET from then on. A rank left alone in a broken communicator
 * destroys its handle.
 *
 * SNPU_IOC_COMM_DESTROY (struct snpu_handle_op) waits for the rank's
 * collectives queued and not complete (interruptibly: EINTR, nothing
 * changed), then leaves; with SNPU_COMM_DESTROY_FORCE it leaves at once
 * and they end with ECANCELED. SNPU_IOC_COMM_QUERY reports a rank's state.
 */
#define SNPU_COLL_ALLREDUCE		1
#define SNPU_COLL_BROADCAST		2
#define SNPU_COLL_ALLGATHER		3
#define SNPU_COLL_REDUCE_SCATTER	4

#define SNPU_DTYPE_I32			1
#define SNPU_DTYPE_F32			2

#define SNPU_REDOP_SUM			1
#define SNPU_REDOP_MAX			2

#define SNPU_COMM_ID_BYTES		16
#define SNPU_COMM_MAX_RANKS		64
#define SNPU_COMM_MAX_PER_FILE		64
#define SNPU_COMM_MAX_PENDING		256

#define SNPU_COMM_DESTROY_FORCE		_BITUL(0)

/**
 * struct snpu_comm_id - SNPU_IOC_COMM_ID
 * @size: in: sizeof; out: bytes written
 * @flags: must be zero
 * @id: out: the new communicator's id
 * @reserved: must be zero
 */
struct snpu_comm_id {
	__u32 size;
	__u32 flags;
	__u8 id[SNPU_COMM_ID_BYTES];
	__u64 reserved[2];
};

#define SNPU_COMM_ID_SIZE_VER0		40

/**
 * struct snpu_comm_join - SNPU_IOC_COMM_JOIN
 * @size: in: sizeof; out: bytes written
 * @flags: must be zero
 * @id: in: the communicator, from SNPU_IOC_COMM_ID
 * @nranks: in: its number of ranks, 1..SNPU_COMM_MAX_RANKS
 * @rank: in: the rank the file takes, below @nranks
 * @handle: out: the rank's handle in this file
 * @pad: must be zero
 * @reserved: must be zero
 */
struct snpu_comm_join {
	__u32 size;
	__u32 flags;
	__u8 id[SNPU_COMM_ID_BYTES];
	__u32 nranks;
	__u32 rank;
	__u32 handle;
	__u32 pad;
	__u64 reserved[2];
};

#define SNPU_COMM_JOIN_SIZE_VER0	56

/**
 * struct snpu_comm_query - SNPU_IOC_COMM_QUERY
 * @size: in: sizeof; out: bytes written
 * @flags: must be zero
 * @handle: in: a rank handle of this file
 * @rank: out: its rank
 * @nranks: out: the communicator's number of ranks
 * @joined: out: how many ranks have joined so far
 * @error: out: 0, or -ECONNRESET once a rank left
 * @pad: zero
 * @queued: out: collectives this rank has queued
 * @reserved: must be zero
 */
struct snpu_comm_query {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__u32 rank;
	__u32 nranks;
	__u32 joined;
	__s32 error;
	__u32 pad;
	__u64 queued;
	__u64 reserved[2];
};

#define SNPU_COMM_QUERY_SIZE_VER0	56

/*
 * Command queues. A context may set up one pair of rings: a submission
 * queue (SQ) of struct snpu_task entries and a completion queue (CQ) of
 * struct snpu_cqe, in one mapping of the device file at @mmap_offset. The
 * layout is the kernel's: it reports where each field is, as byte offsets
 * from the start of the mapping. Heads and tails are free-running __u32
 * counters; an entry's index is counter & mask.
 *
 * Who writes what, and the ordering each side needs:
 *
 *   SQ tail   the process: fill the entries, then store the tail with
 *             release semantics; the kernel loads it with acquire.
 *   SQ head   the kernel, with release after it copied the entries (each
 *             is copied once, then checked); the process loads it with
 *             acquire before reusing entries.
 *   SQ flags  the kernel: SNPU_SQ_NEED_WAKEUP when the poller sleeps. The
 *             process stores its tail, then needs a full barrier before
 *             reading the flags (the poller sets the flag, then a barrier,
 *             then reads the tail once more before it sleeps).
 *   SQ counter  the kernel: tails that claimed more than a ring of
 *             entries (the kernel clamps them).
 *   CQ tail   the kernel, with release after writing the entries; the
 *             process loads it with acquire.
 *   CQ head   the process, with release after it read the entries.
 *   CQ flags  the kernel: SNPU_CQ_OVERFLOW while completions wait for
 *             room; they are moved in, in order, by the next SNPU_IOC_ENTER
 *             that finds room. Nothing is dropped: a waiting completion
 *             holds its task's slot, so a process that never reaps runs
 *             out of task slots (SUBMIT and the SQ stop with ENOSPC/EBUSY).
 *   CQ counter  the kernel: completions that had to wait for room.
 *
 * A bad SQE is consumed and gets a CQE with its user_data and the error.
 */
#define SNPU_RING_SQPOLL	_BITUL(0)	/* a kernel thread consumes the SQ */
/*
 * Host callbacks of the file that become ready from now on are delivered
 * as completions (SNPU_CQE_F_CALLBACK) instead of to CALLBACK_WAIT, in
 * the order they become ready; while the CQ has no room they wait and
 * go in as the process reaps (ENTER, or the poller), where CALLBACK_WAIT
 * may also take them. Complete one with an SNPU_OP_CALLBACK_DONE SQE, or
 * with SNPU_IOC_CALLBACK_DONE (ABI 0.10).
 */
#define SNPU_RING_CALLBACK_CQE	_BITUL(1)

#define SNPU_RING_MAX_ENTRIES	4096	/* SQ; the CQ may be twice as big */
#define SNPU_SQ_NEED_WAKEUP	_BITUL(0)
#define SNPU_CQ_OVERFLOW	_BITUL(0)

/**
 * struct snpu_ring_offsets - where the fields of one ring are
 * @head: offset of the __u32 head
 * @tail: offset of the __u32 tail
 * @mask: offset of the __u32 mask (entries - 1)
 * @entries: offset of the __u32 number of entries
 * @flags: offset of the __u32 flags
 * @counter: offset of the __u32 counter (SQ: clamped tails; CQ: overflows)
 * @array: offset of the entries
 * @pad: zero
 */
struct snpu_ring_offsets {
	__u32 head;
	__u32 tail;
	__u32 mask;
	__u32 entries;
	__u32 flags;
	__u32 counter;
	__u32 array;
	__u32 pad;
};

/**
 * struct snpu_ring_setup - SNPU_IOC_RING_SETUP, once per file
 * @size: in: sizeof; out: bytes written
 * @flags: in: SNPU_RING_SQPOLL, SNPU_RING_CALLBACK_CQE
 * @sq_entries: in: power of two, 1..SNPU_RING_MAX_ENTRIES
 * @cq_entries: in: power of two, @sq_entries..2 * SNPU_RING_MAX_ENTRIES,
 *              or 0 for twice @sq_entries
 * @idle_ms: in: SQPOLL: how long the poller spins on an empty SQ before it
 *           sleeps, 1..10000, 0 for 100; must be 0 without SQPOLL;
 *           above 100 it is taken as 100 without CAP_SYS_NICE
 * @pad: must be zero
 * @mmap_offset: out: mmap(2) offset of the rings
 * @mmap_bytes: out: length to map
 * @sq: out: SQ field offsets
 * @cq: out: CQ field offsets
 * @reserved: must be zero
 *
 * EBUSY when the file already has rings. EAGAIN (SQPOLL, without
 * CAP_SYS_NICE) when the caller's user already runs 4 pollers on the
 * device; a poller counts until its file is released.
 */
struct snpu_ring_setup {
	__u32 size;
	__u32 flags;
	__u32 sq_entries;
	__u32 cq_entries;
	__u32 idle_ms;
	__u32 pad;
	__u64 mmap_offset;
	__u64 mmap_bytes;
	struct snpu_ring_offsets sq;
	struct snpu_ring_offsets cq;
	__u64 reserved[2];
};

#define SNPU_RING_SETUP_SIZE_VER0	120

/**
 * struct snpu_ring_query - SNPU_IOC_RING_QUERY: the file's rings
 * @size: in: sizeof; out: bytes written
 * @flags: must be zero
 * @ring_flags: out: SNPU_RING_* as set up
 * @sq_entries: out: SQ entries
 * @cq_entries: out: CQ entries
 * @idle_ms: out: SQPOLL: the poller's idle time (after the clamp); else 0
 * @mmap_offset: out: mmap(2) offset of the rings
 * @mmap_bytes: out: length to map
 * @sq: out: SQ field offsets
 * @cq: out: CQ field offsets
 * @reserved: must be zero
 *
 * What SNPU_IOC_RING_SETUP reported when the rings were made, for a
 * process that did not make them: the file's rings came from a
 * checkpoint image (SNPU_IOC_CKPT_RESTORE), or from another process.
 * ENXIO when the file has no rings.
 */
struct snpu_ring_query {
	__u32 size;
	__u32 flags;
	__u32 ring_flags;
	__u32 sq_entries;
	__u32 cq_entries;
	__u32 idle_ms;
	__u64 mmap_offset;
	__u64 mmap_bytes;
	struct snpu_ring_offsets sq;
	struct snpu_ring_offsets cq;
	__u64 reserved[2];
};

#define SNPU_RING_QUERY_SIZE_VER0	120

/**
 * struct snpu_cqe - a completion, 32 bytes
 * @user_data: the task's user_data
 * @result: 0, or the task's -errno (also for an SQE refused at submit)
 * @flags: 0, or SNPU_CQE_F_CALLBACK
 * @time_ns: completion time, CLOCK_MONOTONIC
 * @callback: with SNPU_CQE_F_CALLBACK, in place of @time_ns: the ready
 *            callback's @cookie (for SNPU_OP_CALLBACK_DONE) and @stream
 * @seq: the task's sequence number in its stream, 0 if refused
 *
 * With SNPU_CQE_F_CALLBACK the entry is not a completion: the host
 * callback task @user_data of sequence number @seq waits for the process
 * (@result 0). Its completion comes as usual once it is done.
 */
struct snpu_cqe {
	__u64 user_data;
	__s32 result;
	__u32 flags;
	union {
		__u64 time_ns;
		struct {
			__u32 cookie;
			__u32 stream;
		} callback;
	};
	__u64 seq;
};

#define SNPU_CQE_F_CALLBACK	_BITUL(0)	/* a ready host callback */

#define SNPU_ENTER_GETEVENTS	_BITUL(0)	/* wait for @min_complete */
#define SNPU_ENTER_SQ_WAKEUP	_BITUL(1)	/* wake the poller */

/**
 * struct snpu_enter - SNPU_IOC_ENTER: the doorbell
 * @size: in: sizeof; out: bytes written
 * @flags: in: SNPU_ENTER_*
 * @to_submit: in: consume up to this many SQEs (not with SQPOLL: 0)
 * @min_complete: in: with GETEVENTS, wait until the CQ holds this many
 * @timeout_ns: in: for the wait: relative (0 polls) or, with
 *              SNPU_WAIT_ABSOLUTE, a CLOCK_MONOTONIC deadline; -1 forever
 * @submitted: out: SQEs consumed
 * @pad: must be zero
 * @reserved: must be zero
 *
 * Moves waiting completions into the CQ first. Fewer than @to_submit are
 * consumed when the SQ holds fewer, or task slots run out; EBUSY when
 * completions still wait for room and nothing could be consumed.
 */
struct snpu_enter {
	__u32 size;
	__u32 flags;
	__u32 to_submit;
	__u32 min_complete;
	__s64 timeout_ns;
	__u32 submitted;
	__u32 pad;
	__u64 reserved[2];
};

#define SNPU_ENTER_SIZE_VER0		48

/*
 * Owners and attached streams. An owner (an executor instance) names extra
 * streams by key: SNPU_IOC_OWNER_CREATE takes a struct snpu_stream_create
 * whose @priority becomes the priority of the owner's attached streams
 * and whose @handle returns the owner;
 * SNPU_IOC_OWNER_DESTROY (struct snpu_handle_op, no flags) waits for the
 * work of every attached stream of the owner, then destroys them and the
 * owner (EINTR on a signal: nothing is destroyed). A context has at most
 * as many owners as its stream quota (ENOSPC). Attached streams count
 * against the stream quota and are used like any stream, but only their
 * owner destroys them: SNPU_IOC_STREAM_DESTROY of one is EPERM.
 */

/* Bytes of an attached-stream key, with its terminating NUL. */
#define SNPU_ATTACHED_KEY_MAX	64

/**
 * struct snpu_attached_stream - SNPU_IOC_ATTACHED_STREAM_GET
 * @size: in: sizeof; out: bytes written
 * @flags: must be zero
 * @owner: in: an owner handle
 * @handle: out: the attached stream
 * @created: out: 1 when this call created the stream, else 0
 * @pad: must be zero
 * @key: in: 1 to SNPU_ATTACHED_KEY_MAX - 1 bytes and a NUL; the bytes
 *       after the NUL must be zero
 * @reserved: must be zero
 *
 * The first call for a key creates a stream (ENOSPC past the stream quota,
 * nothing created); later calls with the same owner and key return the
 * same stream. Different owners never share a stream. EINVAL for an empty
 * key or one not terminated within @key; ENOENT for a handle that names no
 * owner, or an owner being destroyed.
 */
struct snpu_attached_stream {
	__u32 size;
	__u32 flags;
	__u32 owner;
	__u32 handle;
	__u32 created;
	__u32 pad;
	char key[SNPU_ATTACHED_KEY_MAX];
	__u64 reserved[2];
};

#define SNPU_ATTACHED_STREAM_SIZE_VER0	104

/*
 * Process snapshot. The snapshot state belongs to the process (thread
 * group) that opened the file and covers every snpu file it opened, on
 * every device; any of its files may make the calls, from any of its
 * threads. Another process holding the file (a child that inherited it by
 * fork(2), a receiver of SCM_RIGHTS) gets EPERM for every snapshot and
 * background-thread call but SNAPSHOT_STATE, a query, which it may make.
 *
 *   RUNNING --LOCK--> LOCKED --BACKUP--> BACKED_UP --RESTORE--> LOCKED
 *   LOCKED, BACKED_UP --UNLOCK--> RUNNING
 *
 * Any other transition is EBADFD and changes nothing (BACKUP in
 * BACKED_UP is allowed: the last image wins). While the process is not
 * RUNNING, its resource-modifying calls (allocations and frees, creates and
 * destroys, stream abort and reset, SUBMIT, ENTER's submission,
 * RING_SETUP, synchronous copies and memsets, ATTACHED_STREAM_GET) block
 * interruptibly until UNLOCK, from every thread but the one that locked,
 * which gets EDEADLK; the wait comes before the call's own checks. The
 * process's kernel poller takes no SQE meanwhile. Queries,
 * synchronize, callbacks and the snapshot calls never block on the state
 * (BG_PARK waits for RUNNING: that is what it is for).
 * When the last snpu file of the process is closed the state is gone
 * (RUNNING for a new open).
 */
#define SNPU_STATE_RUNNING	0
#define SNPU_STATE_LOCKED	1
#define SNPU_STATE_BACKED_UP	2

/**
 * struct snpu_snapshot - SNPU_IOC_SNAPSHOT_* and SNPU_IOC_BG_*
 * @size: in: sizeof; out: bytes written
 * @flags: must be zero
 * @timeout_ns: in: LOCK: how long modifying calls in progress may take to
 *              return and registered background threads to park, -1
 *              forever; must be 0 for the other commands
 * @state: out: SNPU_STATE_* after the call
 * @bg_threads: out: background threads registered in the process
 * @image_bytes: out: size of the last backup image, 0 when none
 * @pid: out: the process (thread group id in the caller's namespace)
 * @pad: must be zero
 * @reserved: must be zero
 *
 * LOCK: RUNNING -> LOCKED, then waits for modifying calls in progress to
 * return and for every registered background thread to park; on timeout
 * (ETIMEDOUT) or a signal (EINTR) the state goes back to RUNNING and the
 * blocked calls resume. BACKUP: waits (interruptibly) until no task of the
 * process is queued or running, then saves every allocation's address and
 * bytes and every object into an image in swappable memory (ENOMEM when
 * it cannot be allocated; the previous image is kept). RESTORE:
 * writes the image's bytes back at the same addresses, checks that every
 * object of the image still has its handle (ESTALE when one is gone; EIO
 * when the image cannot be read back), skips the files closed since the
 * backup, and clears stream errors. UNLOCK: back to RUNNING, the image is
 * dropped, blocked calls resume. A snapshot call made while another one
 * of the process is in progress waits for it, interruptibly (EINTR).
 *
 * BG_REGISTER makes the calling thread a background thread (EEXIST when
 * it is one); BG_UNREGISTER undoes it (ENOENT when it is not). BG_PARK
 * parks the calling background thread until the process is RUNNING
 * (returns at once when it is; EINTR on a signal; ENOENT for a thread that
 * is not registered). A background thread blocked in a modifying call
 * counts as parked too, and so does one that exited without
 * unregistering (LOCK notices that within 100 ms). The entries of
 * threads that exited without unregistering are dropped by the next
 * BG_REGISTER or LOCK of the process; a process has at most SNPU_BG_MAX
 * live registered threads: BG_REGISTER beyond returns ENOSPC.
 */
struct snpu_snapshot {
	__u32 size;
	__u32 flags;
	__s64 timeout_ns;
	__u32 state;
	__u32 bg_threads;
	__u64 image_bytes;
	__u32 pid;
	__u32 pad;
	__u64 reserved[2];
};

#define SNPU_SNAPSHOT_SIZE_VER0		56

/* Registered background threads a process may have (BG_REGISTER). */
#define SNPU_BG_MAX			256

/*
 * The state page: mmap(2) of SNPU_STATE_MMAP_OFFSET, one page, read-only
 * (PROT_WRITE is EPERM). The kernel stores the process's state with
 * release semantics before blocked calls are woken; read it with acquire.
 * @seq counts transitions. See "Mappings" above for the offsets.
 */

struct snpu_state_page {
	__u32 state;
	__u32 seq;
};

#define SNPU_IOC_GET_INFO	_IOWR(SNPU_IOC_MAGIC, 0x00, struct snpu_info)
#define SNPU_IOC_CTX_QUERY	_IOWR(SNPU_IOC_MAGIC, 0x01, struct snpu_ctx_query)
#define SNPU_IOC_MEM_ALLOC	_IOWR(SNPU_IOC_MAGIC, 0x02, struct snpu_mem_alloc)
#define SNPU_IOC_MEM_FREE	_IOW(SNPU_IOC_MAGIC, 0x03, struct snpu_mem_free)
#define SNPU_IOC_MEM_QUERY	_IOWR(SNPU_IOC_MAGIC, 0x04, struct snpu_mem_query)
#define SNPU_IOC_MEM_COPY	_IOW(SNPU_IOC_MAGIC, 0x05, struct snpu_mem_copy)
#define SNPU_IOC_MEM_SET	_IOW(SNPU_IOC_MAGIC, 0x06, struct snpu_mem_set)
#define SNPU_IOC_HOST_ALLOC	_IOWR(SNPU_IOC_MAGIC, 0x07, struct snpu_host_alloc)
#define SNPU_IOC_HOST_REGISTER	_IOWR(SNPU_IOC_MAGIC, 0x08, struct snpu_host_register)
#define SNPU_IOC_HOST_FREE	_IOW(SNPU_IOC_MAGIC, 0x09, struct snpu_handle_op)
#define SNPU_IOC_STREAM_CREATE	_IOWR(SNPU_IOC_MAGIC, 0x0a, struct snpu_stream_create)
#define SNPU_IOC_STREAM_DESTROY	_IOW(SNPU_IOC_MAGIC, 0x0b, struct snpu_handle_op)
#define SNPU_IOC_STREAM_SYNC	_IOWR(SNPU_IOC_MAGIC, 0x0c, struct snpu_wait)
#define SNPU_IOC_STREAM_QUERY	_IOWR(SNPU_IOC_MAGIC, 0x0d, struct snpu_stream_query)
#define SNPU_IOC_STREAM_ABORT	_IOW(SNPU_IOC_MAGIC, 0x0e, struct snpu_handle_op)
#define SNPU_IOC_STREAM_RESET	_IOW(SNPU_IOC_MAGIC, 0x0f, struct snpu_handle_op)
#define SNPU_IOC_EVENT_CREATE	_IOWR(SNPU_IOC_MAGIC, 0x10, struct snpu_stream_create)
#define SNPU_IOC_EVENT_DESTROY	_IOW(SNPU_IOC_MAGIC, 0x11, struct snpu_handle_op)
#define SNPU_IOC_EVENT_QUERY	_IOWR(SNPU_IOC_MAGIC, 0x12, struct snpu_event_query)
#define SNPU_IOC_EVENT_SYNC	_IOWR(SNPU_IOC_MAGIC, 0x13, struct snpu_wait)
#define SNPU_IOC_EVENT_ELAPSED	_IOWR(SNPU_IOC_MAGIC, 0x14, struct snpu_event_elapsed)
#define SNPU_IOC_SUBMIT		_IOWR(SNPU_IOC_MAGIC, 0x15, struct snpu_submit)
#define SNPU_IOC_CALLBACK_WAIT	_IOWR(SNPU_IOC_MAGIC, 0x16, struct snpu_callback)
#define SNPU_IOC_CALLBACK_DONE	_IOW(SNPU_IOC_MAGIC, 0x17, struct snpu_callback)
#define SNPU_IOC_NOP		_IO(SNPU_IOC_MAGIC, 0x18)
#define SNPU_IOC_RING_SETUP	_IOWR(SNPU_IOC_MAGIC, 0x19, struct snpu_ring_setup)
#define SNPU_IOC_ENTER		_IOWR(SNPU_IOC_MAGIC, 0x1a, struct snpu_enter)
#define SNPU_IOC_OWNER_CREATE	_IOWR(SNPU_IOC_MAGIC, 0x1b, struct snpu_stream_create)
#define SNPU_IOC_OWNER_DESTROY	_IOW(SNPU_IOC_MAGIC, 0x1c, struct snpu_handle_op)
#define SNPU_IOC_ATTACHED_STREAM_GET \
	_IOWR(SNPU_IOC_MAGIC, 0x1d, struct snpu_attached_stream)
#define SNPU_IOC_SNAPSHOT_LOCK	_IOWR(SNPU_IOC_MAGIC, 0x1e, struct snpu_snapshot)
#define SNPU_IOC_SNAPSHOT_BACKUP _IOWR(SNPU_IOC_MAGIC, 0x1f, struct snpu_snapshot)
#define SNPU_IOC_SNAPSHOT_RESTORE _IOWR(SNPU_IOC_MAGIC, 0x20, struct snpu_snapshot)
#define SNPU_IOC_SNAPSHOT_UNLOCK _IOWR(SNPU_IOC_MAGIC, 0x21, struct snpu_snapshot)
#define SNPU_IOC_SNAPSHOT_STATE	_IOWR(SNPU_IOC_MAGIC, 0x22, struct snpu_snapshot)
#define SNPU_IOC_BG_REGISTER	_IOWR(SNPU_IOC_MAGIC, 0x23, struct snpu_snapshot)
#define SNPU_IOC_BG_UNREGISTER	_IOWR(SNPU_IOC_MAGIC, 0x24, struct snpu_snapshot)
#define SNPU_IOC_BG_PARK	_IOWR(SNPU_IOC_MAGIC, 0x25, struct snpu_snapshot)
#define SNPU_IOC_GRAPH_CREATE	_IOWR(SNPU_IOC_MAGIC, 0x26, struct snpu_graph_create)
#define SNPU_IOC_GRAPH_DESTROY	_IOW(SNPU_IOC_MAGIC, 0x27, struct snpu_handle_op)
#define SNPU_IOC_COMM_ID	_IOWR(SNPU_IOC_MAGIC, 0x28, struct snpu_comm_id)
#define SNPU_IOC_COMM_JOIN	_IOWR(SNPU_IOC_MAGIC, 0x29, struct snpu_comm_join)
#define SNPU_IOC_COMM_DESTROY	_IOW(SNPU_IOC_MAGIC, 0x2a, struct snpu_handle_op)
#define SNPU_IOC_COMM_QUERY	_IOWR(SNPU_IOC_MAGIC, 0x2b, struct snpu_comm_query)
#define SNPU_IOC_EVENT_EXPORT	_IOWR(SNPU_IOC_MAGIC, 0x2c, struct snpu_event_export)
#define SNPU_IOC_MEM_EXPORT	_IOWR(SNPU_IOC_MAGIC, 0x2d, struct snpu_mem_export)
#define SNPU_IOC_MEM_IMPORT	_IOWR(SNPU_IOC_MAGIC, 0x2e, struct snpu_mem_import)

/* Checkpoint to a file (ABI 0.14): the structs are in linux/snpu_ckpt.h. */
#include <linux/snpu_ckpt.h>

#define SNPU_CKPT_PROC_SIZE_VER0	64
#define SNPU_CKPT_RESTORE_SIZE_VER0	56

#define SNPU_IOC_CKPT_PROC	_IOWR(SNPU_IOC_MAGIC, 0x30, struct snpu_ckpt_proc)
#define SNPU_IOC_CKPT_RESTORE	_IOWR(SNPU_IOC_MAGIC, 0x31, struct snpu_ckpt_restore)
#define SNPU_IOC_RING_QUERY	_IOWR(SNPU_IOC_MAGIC, 0x32, struct snpu_ring_query)

#endif /* _UAPI_LINUX_SNPU_H */
