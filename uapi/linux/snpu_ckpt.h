/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * snpu checkpoint to a file and restore into a new process (ABI 0.14;
 * graphs, rings and communicators in images since 0.15).
 * Included by linux/snpu.h; see Documentation/checkpoint.rst.
 *
 * Two ioctls:
 *
 *   SNPU_IOC_CKPT_PROC     acts on a process (the caller's, or another one
 *                          it may ptrace): @op SNPU_CKPT_OP_STATE, _LOCK,
 *                          _CHECKPOINT (write an image into @fd), _UNLOCK.
 *   SNPU_IOC_CKPT_RESTORE  recreates context @index of the image read from
 *                          @fd in the caller's fresh file.
 *
 * The image is a stream: a struct snpu_ckpt_header, then chunks, each a
 * struct snpu_ckpt_chunk and @len payload bytes, with a CRC32C of both.
 * Everything is little-endian; every struct is a multiple of 8 bytes.
 */
#ifndef _UAPI_LINUX_SNPU_CKPT_H
#define _UAPI_LINUX_SNPU_CKPT_H

#include <linux/types.h>

/* "SNPUCKPT" read as a little-endian u64. */
#define SNPU_CKPT_MAGIC		0x54504b4355504e53ULL
/*
 * The layout of the image: 2 (ABI 0.15) adds graphs, rings and
 * communicators; a reader takes 1 and 2, and refuses another (ENOEXEC)
 * and, in a version 1 image, a chunk that version did not have (EPROTO).
 */
#define SNPU_CKPT_VERSION	2
#define SNPU_CKPT_VERSION_MIN	1
/* The most payload bytes of one chunk. */
#define SNPU_CKPT_CHUNK_MAX	0x100000U	/* 1 MiB */

/**
 * struct snpu_ckpt_header - the first 64 bytes of an image
 * @magic: SNPU_CKPT_MAGIC
 * @version: SNPU_CKPT_VERSION
 * @abi_major: SNPU_ABI_MAJOR of the driver that wrote it
 * @abi_minor: SNPU_ABI_MINOR of the driver that wrote it
 * @header_size: sizeof(struct snpu_ckpt_header)
 * @contexts: number of SNPU_CKPT_CTX chunks that follow
 * @page_size: the writer's page size (host memory sizes are its multiples)
 * @mem_align: SNPU_MEM_ALIGN of the writer (device addresses)
 * @flags: 0
 * @reserved: 0
 * @pad: 0
 * @crc: CRC32C of the header with @crc zero
 */
struct snpu_ckpt_header {
	__u64 magic;
	__u32 version;
	__u16 abi_major;
	__u16 abi_minor;
	__u32 header_size;
	__u32 contexts;
	__u32 page_size;
	__u32 mem_align;
	__u64 flags;
	__u64 reserved[2];
	__u32 pad;
	__u32 crc;
};

/* Chunk types, in the order of Documentation/checkpoint.rst. */
#define SNPU_CKPT_CTX		1	/* struct snpu_ckpt_ctx */
#define SNPU_CKPT_MEM		2	/* struct snpu_ckpt_mem */
#define SNPU_CKPT_DATA		3	/* struct snpu_ckpt_data, then bytes */
#define SNPU_CKPT_HOST		4	/* struct snpu_ckpt_host */
#define SNPU_CKPT_OWNER		5	/* struct snpu_ckpt_owner */
#define SNPU_CKPT_STREAM	6	/* struct snpu_ckpt_stream */
#define SNPU_CKPT_EVENT		7	/* struct snpu_ckpt_event */
#define SNPU_CKPT_END		8	/* struct snpu_ckpt_end */
#define SNPU_CKPT_GRAPH		9	/* struct snpu_ckpt_graph, then DATA */
#define SNPU_CKPT_RING		10	/* struct snpu_ckpt_ring, then DATA */
#define SNPU_CKPT_COMM		11	/* struct snpu_ckpt_comm */

/**
 * struct snpu_ckpt_chunk - the header of one chunk
 * @type: SNPU_CKPT_*
 * @len: payload bytes that follow, at most SNPU_CKPT_CHUNK_MAX + 8
 * @seq: the chunk's number, from 0
 * @crc: CRC32C of this header with @crc zero, then of the payload
 */
struct snpu_ckpt_chunk {
	__u32 type;
	__u32 len;
	__u32 seq;
	__u32 crc;
};

/**
 * struct snpu_ckpt_ctx - a context (one open file) and its device
 * @dev_index: the device it was open on (the device map's "old")
 * @cores: that device's cores
 * @mem_total: that device's memory
 * @va_window: the window of device addresses of the context
 * @next_handle: where the handle cursor stood
 * @nmem: SNPU_CKPT_MEM chunks of the context
 * @nobj: SNPU_CKPT_HOST, _OWNER, _STREAM, _EVENT and _COMM chunks of the
 *        context
 * @mem_bytes: sum of the allocations' sizes
 * @host_bytes: sum of the host memory's sizes
 * @nring: SNPU_CKPT_RING chunks of the context: 1 when it had rings, else 0
 * @pad: 0
 * @reserved: 0
 */
struct snpu_ckpt_ctx {
	__u32 dev_index;
	__u32 cores;
	__u64 mem_total;
	__u32 va_window;
	__u32 next_handle;
	__u32 nmem;
	__u32 nobj;
	__u64 mem_bytes;
	__u64 host_bytes;
	__u32 nring;
	__u32 pad;
	__u64 reserved;
};

/**
 * struct snpu_ckpt_mem - a device allocation; DATA chunks with its bytes
 * follow, in order
 * @addr: its device address
 * @bytes: its size as requested
 * @reserved: 0
 */
struct snpu_ckpt_mem {
	__u64 addr;
	__u64 bytes;
	__u64 reserved[2];
};

/**
 * struct snpu_ckpt_data - bytes of the allocation or host memory before
 * @offset: where they go in it; the chunk's bytes follow this struct
 */
struct snpu_ckpt_data {
	__u64 offset;
};

#define SNPU_CKPT_HOST_ALLOC		0	/* HOST_ALLOC: DATA follows */
#define SNPU_CKPT_HOST_REGISTERED	1	/* HOST_REGISTER: no DATA */

/**
 * struct snpu_ckpt_host - host memory
 * @handle: its handle (and so its mmap offset)
 * @kind: SNPU_CKPT_HOST_*
 * @bytes: its size, whole pages
 * @uaddr: REGISTERED: the user address registered (re-pinned at restore
 *         in the restoring process); ALLOC: where it was mapped, or 0
 * @reserved: 0
 */
struct snpu_ckpt_host {
	__u32 handle;
	__u32 kind;
	__u64 bytes;
	__u64 uaddr;
	__u64 reserved;
};

/**
 * struct snpu_ckpt_owner - an owner of attached streams
 * @handle: its handle
 * @priority: SNPU_PRIO_*
 * @reserved: 0
 */
struct snpu_ckpt_owner {
	__u32 handle;
	__s32 priority;
	__u64 reserved;
};

/**
 * struct snpu_ckpt_stream - a stream, or an attached stream
 * @handle: its handle
 * @priority: SNPU_PRIO_*
 * @owner: an attached stream's owner (an OWNER chunk before it), else 0
 * @pad: 0
 * @completed: the stream's timeline (submitted = completed: drained)
 * @key: an attached stream's key, NUL-terminated and zero-padded; else 0
 */
struct snpu_ckpt_stream {
	__u32 handle;
	__s32 priority;
	__u32 owner;
	__u32 pad;
	__u64 completed;
	char key[64];
};

/**
 * struct snpu_ckpt_event - an event (its capture is complete: drained)
 * @handle: its handle
 * @pad: 0
 */
struct snpu_ckpt_event {
	__u32 handle;
	__u32 pad;
};

/* Boundary slots of a graph: SNPU_GRAPH_MAX_SLOTS of linux/snpu.h. */
#define SNPU_CKPT_GRAPH_SLOTS	8

/**
 * struct snpu_ckpt_graph - a graph's definition, as SNPU_IOC_GRAPH_CREATE
 * took it; DATA chunks with its nodes and fanin CSR follow
 * @handle: its handle
 * @nodes: its nodes, 1..SNPU_GRAPH_MAX_NODES
 * @edges: its edges, 0..SNPU_GRAPH_MAX_EDGES
 * @slots: its boundary slots, 0..SNPU_GRAPH_MAX_SLOTS
 * @def_bytes: the bytes of the DATA chunks: @nodes struct snpu_graph_node
 *             (SNPU_GRAPH_NODE_SIZE each), then, when @edges is not 0,
 *             @nodes + 1 fanin offsets and @edges fanin indices (__u32)
 * @scratch_bytes: the scratch bytes a launch passes
 * @slot_bytes: the extent of each slot: the first @slots not 0, the rest 0
 * @reserved: 0
 */
struct snpu_ckpt_graph {
	__u32 handle;
	__u32 nodes;
	__u32 edges;
	__u32 slots;
	__u64 def_bytes;
	__u64 scratch_bytes;
	__u64 slot_bytes[SNPU_CKPT_GRAPH_SLOTS];
	__u64 reserved[2];
};

/**
 * struct snpu_ckpt_ring - the command queues of a context (SNPU_IOC_RING_SETUP)
 * @flags: SNPU_RING_SQPOLL, SNPU_RING_CALLBACK_CQE as set up
 * @sq_entries: SQ entries: a power of two, 1..SNPU_RING_MAX_ENTRIES
 * @cq_entries: CQ entries: a power of two, @sq_entries..2 * that maximum
 * @idle_ms: SQPOLL: the poller's idle time, 1..10000; else 0
 * @sq_head: the kernel's SQ head: SQEs taken so far
 * @sq_tail: the SQ tail the process had published: the SQEs from @sq_head
 *           to it (at most @sq_entries) were submitted, not taken yet
 * @cq_head: the CQ head the process had stored: the CQEs from it to
 *           @cq_tail (at most @cq_entries) were not reaped yet
 * @cq_tail: the kernel's CQ tail: CQEs posted so far
 * @sq_flags: the shared SQ flags word (SNPU_SQ_NEED_WAKEUP)
 * @cq_flags: the shared CQ flags word (SNPU_CQ_OVERFLOW)
 * @sq_dropped: the shared count of clamped SQ tails
 * @cq_overflow: the shared count of completions that waited for room
 * @noverflow: completions waiting for room in the CQ, at most
 *             SNPU_CKPT_RING_MAX_OVERFLOW
 * @pad: 0
 * @bytes: the size of the rings' mapping, as SNPU_IOC_RING_SETUP reports
 *         it for these entries and the image's page size
 * @reserved: 0
 *
 * DATA chunks follow: the @bytes of the mapping (header page, SQEs,
 * CQEs), then the @noverflow waiting completions as struct snpu_cqe, in
 * the order they wait. The counters of the header page are this
 * record's: a restore writes them over the mapping's bytes.
 */
struct snpu_ckpt_ring {
	__u32 flags;
	__u32 sq_entries;
	__u32 cq_entries;
	__u32 idle_ms;
	__u32 sq_head;
	__u32 sq_tail;
	__u32 cq_head;
	__u32 cq_tail;
	__u32 sq_flags;
	__u32 cq_flags;
	__u32 sq_dropped;
	__u32 cq_overflow;
	__u32 noverflow;
	__u32 pad;
	__u64 bytes;
	__u64 reserved[2];
};

/* The most completions a RING chunk has waiting: a context's task quota. */
#define SNPU_CKPT_RING_MAX_OVERFLOW	32768

/**
 * struct snpu_ckpt_comm - a rank of a communicator all of whose ranks
 * are files of the process checkpointed
 * @handle: the rank's handle
 * @rank: the rank
 * @nranks: the communicator's ranks, 1..SNPU_COMM_MAX_RANKS
 * @pad: 0
 * @id: the communicator's id: the ranks of the image restored by one
 *      process find each other again by it, as COMM_JOIN does
 * @seq: the collectives each rank had queued (COMM_QUERY's @queued), the
 *       same on every rank of the communicator (drained): the sequence
 *       number of its next collective
 * @reserved: 0
 */
struct snpu_ckpt_comm {
	__u32 handle;
	__u32 rank;
	__u32 nranks;
	__u32 pad;
	__u8 id[16];
	__u64 seq;
	__u64 reserved[2];
};

/**
 * struct snpu_ckpt_end - the last chunk
 * @chunks: the number of chunks before it
 * @pad: 0
 */
struct snpu_ckpt_end {
	__u32 chunks;
	__u32 pad;
};

/* snpu_ckpt_proc.op */
#define SNPU_CKPT_OP_STATE	0	/* report @state */
#define SNPU_CKPT_OP_LOCK	1	/* RUNNING -> LOCKED, waits @timeout_ns */
#define SNPU_CKPT_OP_CHECKPOINT	2	/* LOCKED/BACKED_UP: image into @fd */
#define SNPU_CKPT_OP_UNLOCK	3	/* LOCKED/BACKED_UP -> RUNNING */

/**
 * struct snpu_ckpt_proc - SNPU_IOC_CKPT_PROC
 * @size: sizeof, for extension
 * @flags: 0
 * @op: SNPU_CKPT_OP_*
 * @pid: the process, in the caller's pid namespace; 0 for the caller's.
 *       Another process needs the caller to be allowed to ptrace it
 *       (EPERM), and an snpu file open (ESRCH)
 * @timeout_ns: LOCK: -1 forever, else >= 0; other ops: 0
 * @fd: CHECKPOINT: a file open for writing; other ops: 0
 * @state: out: SNPU_STATE_* after the call
 * @bytes: out: CHECKPOINT: the image's size
 * @contexts: out: CHECKPOINT: contexts in the image; others: the process's
 * @pad: 0
 * @reserved: 0
 */
struct snpu_ckpt_proc {
	__u32 size;
	__u32 flags;
	__u32 op;
	__u32 pid;
	__s64 timeout_ns;
	__s32 fd;
	__u32 state;
	__u64 bytes;
	__u32 contexts;
	__u32 pad;
	__u64 reserved[2];
};

/**
 * struct snpu_ckpt_restore - SNPU_IOC_CKPT_RESTORE
 * @size: sizeof, for extension
 * @flags: 0
 * @fd: a file open for reading, positioned anywhere: the image is read
 *      from its offset 0 (pread), so it must be seekable (ESPIPE)
 * @index: the context of the image to restore, from 0
 * @dev_index: out: the device the context was checkpointed on
 * @contexts: out: contexts in the image
 * @bytes: out: the image's size
 * @reserved: 0
 */
struct snpu_ckpt_restore {
	__u32 size;
	__u32 flags;
	__s32 fd;
	__u32 index;
	__u32 dev_index;
	__u32 contexts;
	__u64 bytes;
	__u64 reserved[3];
};

#endif /* _UAPI_LINUX_SNPU_CKPT_H */
