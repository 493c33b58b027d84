/* SPDX-License-Identifier: GPL-2.0 */
/*
 * snpu driver internals shared between the files of the module.
 *
 * Locking, outermost first:
 *
 *   snpu_context.lock (mutex)     handles, address-space writes, quotas,
 *                                 object lifetimes; held by every ioctl
 *                                 that looks up or changes objects
 *   mmap_lock                     taken under the context lock by user
 *                                 copies (SUBMIT reading tasks) and by
 *                                 the release of registered memory
 *                                 (unaccounting) from HOST_FREE or a
 *                                 stream abort; never the reverse: mmap
 *                                 and vma close do not take it
 *   snpu_context.sched_lock       the task graph of the context: stream
 *                                 timelines, job states, successor lists,
 *                                 the callback queue (free jobs go back
 *                                 through a lock-free list, see @freed)
 *   snpu_device.ready_lock        the device's ready lists: the rotation
 *                                 of run queues per priority, every
 *                                 context's run queues and the block
 *                                 cursor and deadline of listed jobs
 *
 * Cores take only ready_lock to pick work and sched_lock to complete it,
 * never both at once.
 *
 * Scheduling policy (kmod/sched.c): strict priority between the three
 * priorities; within one, round-robin between contexts, one block per
 * turn, FIFO between the jobs of a context. A closing context's listed
 * jobs are taken off its run queues and finished without a core. The
 * watchdog (module parameter task_timeout_ms) fails a task whose first
 * block started longer ago with -ETIMEDOUT.
 */
#ifndef _SNPU_H
#define _SNPU_H

#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/dma-fence.h>
#include <linux/iosys-map.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/llist.h>
#include <linux/kref.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/maple_tree.h>
#include <linux/mm.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "compat.h"
#include "core/core.h"
#include "core/kernels.h"

struct dma_buf;
struct dma_buf_attachment;
struct mem_cgroup;
struct snpu_coll_part;

/* Ready lists, highest priority first. */
#define SNPU_NR_PRIO		3

/**
 * struct snpu_runq - a context's ready jobs of one priority
 * @node: in the device's rotation of that priority while @jobs is not
 *        empty
 * @jobs: jobs with blocks not handed out yet, in order, by snpu_job.node
 *
 * Under the device's ready_lock.
 */
struct snpu_runq {
	struct list_head node;
	struct list_head jobs;
};

/* Watchdog: a task running longer fails with -ETIMEDOUT; 0 disables it. */
extern unsigned int snpu_task_timeout_ms;

/**
 * struct snpu_quota - per-context limits (module parameters)
 * @mem: device memory bytes, 0 for no limit but the device's
 * @host: host memory bytes (allocated or registered)
 * @streams: streams
 * @events: events
 * @tasks: tasks submitted and not complete
 * @graphs: graphs
 * @graph_mem: kernel memory bytes of the graphs (definitions, instances)
 */
struct snpu_quota {
	u64 mem;
	u64 host;
	u64 graph_mem;
	u32 streams;
	u32 events;
	u32 tasks;
	u32 graphs;
};

extern struct snpu_quota snpu_quota;

/*
 * Module parameter test_hooks, read-only after load: the kernels SPIN and
 * FAIL and SNPU_IOC_NOP exist for tests and are refused (EOPNOTSUPP)
 * unless it is set.
 */
extern bool snpu_test_hooks;

/**
 * struct snpu_graph_stats - graph counters of a device (debugfs)
 * @launches: graph launches complete
 * @stitched: launches stitched to the launch before them
 * @nodes: nodes of the complete launches
 * @hazard_visits: hazard-list entries visited
 * @hazard_invalid: visited entries whose nodes do not conflict
 */
struct snpu_graph_stats {
	atomic64_t launches;
	atomic64_t stitched;
	atomic64_t nodes;
	atomic64_t hazard_visits;
	atomic64_t hazard_invalid;
};

/**
 * struct snpu_dev_pcpu - per-CPU counters of a device (debugfs, netlink)
 * @tasks: tasks completed (whatever their result)
 * @failed: tasks completed with an error
 * @cqes: completions written to a completion queue
 * @overflows: completions parked because their completion queue was full
 *
 * Incremented with this_cpu_inc() by whoever completes or posts, with no
 * lock of their own; summed over the CPUs by the readers.
 */
struct snpu_dev_pcpu {
	u64 tasks;
	u64 failed;
	u64 cqes;
	u64 overflows;
};

/**
 * struct snpu_core - one compute core of a device
 * @sdev: the device
 * @thread: the core's kernel thread
 * @index: the core's number in the device, 0 on
 * @clock: the core's last clock reading (ktime_get_ns()); its own
 *         thread's only, like @chain and @chained
 * @chain: the first of the tasks it ran back to back on one stream and
 *         has not completed yet (see sched.c)
 * @chained: how many, the task it runs now not counted
 * @streak: graph nodes it ran in a row without reading the clock
 * @batch: short graph nodes of one launch it took in one turn, to run
 *         next (its own thread's only; see snpu_pick())
 * @scratch: SNPU_COLL_TILE elements for the reductions of collectives
 *           of more than SNPU_COLL_PASS ranks (see core/coll.h)
 * @busy_ns: nanoseconds spent running blocks
 * @blocks: blocks run
 *
 * @busy_ns and @blocks are written by the core's thread only (WRITE_ONCE)
 * and read without a lock.
 */
struct snpu_core {
	struct snpu_device *sdev;
	struct task_struct *thread;
	unsigned int index;
	u64 clock;
	struct snpu_job *chain;
	u32 chained;
	u32 streak;
	struct list_head batch;
	void *scratch;
	u64 busy_ns;
	u64 blocks;
};

/* Snapshot transitions, for the statistics: snpu_snap_stats.ops[]. */
enum snpu_snap_op {
	SNPU_SNAP_LOCK,
	SNPU_SNAP_BACKUP,
	SNPU_SNAP_RESTORE,
	SNPU_SNAP_UNLOCK,
	SNPU_SNAP_NR,
};

/**
 * struct snpu_snap_stats - snapshot transitions through a device
 * @count: calls per enum snpu_snap_op
 * @failed: of them, calls that failed
 * @ns: nanoseconds the calls took, in all
 */
struct snpu_snap_stats {
	atomic64_t count[SNPU_SNAP_NR];
	atomic64_t failed[SNPU_SNAP_NR];
	atomic64_t ns[SNPU_SNAP_NR];
};

/**
 * struct snpu_device - one virtual accelerator, /dev/snpuN
 * @misc: the character device; its name is @name
 * @name: "snpuN"
 * @index: N
 * @cores: number of compute cores
 * @mem_total: device memory in bytes
 * @mem_used: bytes allocated by all contexts of this device
 * @contexts: number of open contexts (open file descriptions)
 * @va_windows: address windows of the live contexts
 * @ready_lock: protects @ready, the contexts' run queues and the block
 *              cursor and deadline of listed jobs
 * @ready: per priority, the rotation of the run queues (struct snpu_runq)
 *         that have jobs with blocks not yet handed to a core
 * @ready_wq: idle cores wait here
 * @ready_depth: works on the run queues (under @ready_lock)
 * @ready_max: high-water mark of @ready_depth (under @ready_lock)
 * @core: the cores
 * @ctx_lock: protects @ctx_list; every open and close takes it, so it is
 *            never held while waiting for a context's lock or work
 * @ctx_list: the open contexts, by snpu_context.dev_node
 * @debugfs: the device's debugfs directory
 * @gstats: graph counters
 * @pcpu: per-CPU task and completion counters
 * @snap: snapshot transitions made through the device's files
 *
 * A device lives from module load to module unload; every open file holds
 * a module reference, so no context outlives its device.
 */
struct snpu_device {
	struct miscdevice misc;
	char name[16];
	unsigned int index;
	unsigned int cores;
	u64 mem_total;
	atomic64_t mem_used;
	atomic_t contexts;
	struct ida va_windows;

	spinlock_t ready_lock;		/* @ready, run queues, job cursors */
	struct list_head ready[SNPU_NR_PRIO];
	wait_queue_head_t ready_wq;
	u32 ready_depth;
	u32 ready_max;
	struct snpu_core *core;

	struct mutex ctx_lock;		/* @ctx_list */
	struct list_head ctx_list;
	struct dentry *debugfs;
	struct snpu_graph_stats gstats;
	struct snpu_dev_pcpu __percpu *pcpu;
	struct snpu_snap_stats snap;
};

/* Handle types. */
enum snpu_obj_type {
	SNPU_OBJ_STREAM = 1,
	SNPU_OBJ_EVENT,
	SNPU_OBJ_HOST,
	SNPU_OBJ_OWNER,
	SNPU_OBJ_GRAPH,
	SNPU_OBJ_COMM,
};

/**
 * struct snpu_object - what a handle names
 * @type: enum snpu_obj_type
 * @handle: the handle, index in snpu_context.handles
 * @rcu: objects are freed after a grace period, so that RCU lookups (mmap)
 *       may read @type of an object being destroyed
 */
struct snpu_object {
	u32 type;
	u32 handle;
	struct rcu_head rcu;
};

/**
 * struct snpu_mem - a device allocation
 * @ref: the address space holds one until freed; each job naming it one;
 *       each dma-buf exported from it one (kmod/dmabuf.c)
 * @ctx: owner, for accounting; a dma-buf exported from the allocation
 *       keeps the context's memory (not its file) alive
 * @addr: device address
 * @bytes: size as requested
 * @charged: bytes charged to the context, and to the device unless it is
 *           an import
 * @vaddr: the backing memory: vmalloc()ed, or an import's kernel mapping
 * @free_work: frees it when a job dropped the last reference
 * @dmabuf: an import: the dma-buf it holds; NULL for snpu's own memory
 * @attach: an import: its attachment to @dmabuf
 * @map: an import: the kernel mapping of @dmabuf (dma_buf_vmap())
 */
struct snpu_mem {
	struct kref ref;
	struct snpu_context *ctx;
	u64 addr;
	u64 bytes;
	u64 charged;
	void *vaddr;
	struct work_struct free_work;
	struct dma_buf *dmabuf;
	struct dma_buf_attachment *attach;
	struct iosys_map map;
};

/**
 * struct snpu_host - host memory queued copies may use
 * @obj: handle
 * @ref: handle, mapping (driver-allocated) and jobs hold references
 * @ctx: owner, for accounting
 * @kaddr: kernel address of the memory
 * @bytes: size in bytes (whole pages)
 * @uaddr: user address while mapped or registered
 * @mapped: driver-allocated memory is mapped (only once)
 * @vma: the mapping that published @uaddr, until it is closed; copies of
 *       it hold references but never unpublish
 * @pages: registered memory: the pinned pages
 * @npages: pages charged to RLIMIT_MEMLOCK (registered: number of @pages)
 * @mm: the mm charged: locked_vm for registered memory, pinned_vm for
 *      driver-allocated memory
 * @free_work: unpins or frees it when a job dropped the last reference
 */
struct snpu_host {
	struct snpu_object obj;
	struct kref ref;
	struct snpu_context *ctx;
	void *kaddr;
	u64 bytes;
	u64 uaddr;
	atomic_t mapped;
	struct vm_area_struct *vma;
	struct page **pages;
	unsigned long npages;
	struct mm_struct *mm;
	struct work_struct free_work;
};

/**
 * struct snpu_stream - an in-order queue with a timeline
 * @obj: handle
 * @ref: the handle holds one, and so does a STREAM_SYNC that waits on
 *       the stream (it reads @error after the wait, whatever became of
 *       the handle meanwhile)
 * @prio: index into the ready lists, 0 highest
 * @priority: SNPU_PRIO_* as created
 * @destroying: a destroy is waiting for the stream; submit refuses it
 * @submitted: sequence number of the last job queued
 * @completed: sequence number of the last job completed
 * @error: sticky: the first failure, or -ECANCELED after an abort
 * @tail: the last queued job while it is not complete
 * @waits: its STREAM_WAIT jobs still waiting for another stream's capture
 * @fence_ctx: the dma_fence context of its exported captures, 0 until
 *             the first (under the context's sched_lock)
 * @owner: the owner of an attached stream, NULL for a plain stream
 * @owner_node: in @owner's list of attached streams
 * @key: an attached stream's key, zero-padded
 *
 * @submitted, @completed, @error and @tail are under the context's
 * sched_lock; the rest under its lock.
 */
struct snpu_stream {
	struct snpu_object obj;
	refcount_t ref;
	unsigned int prio;
	int priority;
	bool destroying;
	u64 submitted;
	u64 completed;
	int error;
	struct snpu_job *tail;
	struct list_head waits;
	u64 fence_ctx;
	struct snpu_owner *owner;
	struct list_head owner_node;
	char key[SNPU_ATTACHED_KEY_MAX];
};

/**
 * struct snpu_owner - an executor instance that owns attached streams
 * @obj: handle
 * @priority: SNPU_PRIO_* of its attached streams
 * @destroying: a destroy is waiting for its streams; lookups refuse it
 * @streams: its attached streams, by snpu_stream.owner_node
 *
 * Under the context's lock.
 */
struct snpu_owner {
	struct snpu_object obj;
	int priority;
	bool destroying;
	struct list_head streams;
};

/**
 * struct snpu_event - an event: the last capture recorded into it
 * @obj: handle
 * @capture: the record job of the last record, with a reference
 * @batch_recorded: a record of this event is in the batch being submitted
 */
struct snpu_event {
	struct snpu_object obj;
	struct snpu_job *capture;
	bool batch_recorded;
};

/* Lifecycle of a job (under sched_lock). */
enum snpu_job_state {
	SNPU_JOB_FREE,
	SNPU_JOB_WAITING,	/* predecessors pending */
	SNPU_JOB_READY,		/* on a ready list or being run */
	SNPU_JOB_CALLBACK,	/* queued for CALLBACK_WAIT */
	SNPU_JOB_DELIVERED,	/* delivered, waiting for CALLBACK_DONE */
	SNPU_JOB_DONE,
};

/**
 * struct snpu_work - what the cores run: the blocks of a job, or of a
 * node of a graph launch
 * @node: in a run queue (under the device's ready_lock), or on a list of
 *        works to dispatch
 * @job: the task it belongs to: the job itself, or the graph launch
 * @gnode: the graph node, NULL for a job's own work
 * @op: SNPU_OP_LAUNCH, SNPU_OP_COPY or SNPU_OP_MEMSET
 * @nblocks: blocks to run
 * @next_block: next block to hand out (under the device's ready_lock)
 * @blocks_left: blocks not finished
 * @fail: first error of a block
 * @launch: SNPU_OP_LAUNCH, resolved
 * @units: steps of @launch (snpu_kernel_steps(): its units, or pieces of
 *         a long COLSUM's columns)
 * @chunk: units per chunk (snpu_kernel_chunk())
 * @fpu: the kernel uses the FPU
 * @copy: SNPU_OP_COPY and SNPU_OP_MEMSET (@src NULL, @value)
 * @coll: SNPU_OP_COLL: the rank's part of the collective and the step
 *        it runs: its @kind (SNPU_CSTEP_*), where it writes (@dst), what
 *        it copies (@src) or the element offset it reduces in every
 *        rank's send buffer (@off), and its @elems (see comm.c)
 *
 * @units, @chunk and @fpu are set by snpu_kernel_plan() when the launch is
 * prepared, so that a core computes none of them.
 */
struct snpu_work {
	struct list_head node;
	struct snpu_job *job;
	struct snpu_gnode *gnode;
	u32 op;
	u32 nblocks;
	u32 next_block;
	atomic_t blocks_left;
	atomic_t fail;
	union {
		struct {
			struct snpu_klaunch launch;
			u64 units;
			u64 chunk;
			bool fpu;
		};
		struct {
			void *dst;
			const void *src;
			u64 bytes;
			u8 value;
		} copy;
		struct {
			struct snpu_coll_part *part;
			u32 step;
			u32 kind;
			void *dst;
			const void *src;
			u64 off;
			u64 elems;
		} coll;
	};
};

/**
 * struct snpu_job - a task as the scheduler runs it, from the context pool
 * @node: free list, ready list, callback queue, or a submit's batch
 * @free_node: in the context's @freed
 * @ctx: owner
 * @stream: the stream; it outlives the job's run, not its completion:
 *          after SNPU_JOB_DONE only @stream_handle may be used
 * @stream_handle: the stream's handle, for event queries and callbacks
 * @event: EVENT_RECORD, STREAM_WAIT: the event, until committed
 * @seq: sequence number in @stream
 * @user_data: from the task
 * @op: SNPU_OP_*
 * @state: enum snpu_job_state
 * @gen: bumped at every reuse, part of callback cookies
 * @index: slot in the context's pool, part of callback cookies
 * @ref: the scheduler holds one until completion, an event one per
 *       capture, a stream waiter one until resolved, a synchronize call
 *       one while it waits, a full CQ one while the completion waits
 * @pending: predecessors not complete
 * @next: the stream successor, resolved at completion
 * @waiters: STREAM_WAIT jobs waiting for this (record) job
 * @wait_node: in the record job's @waiters
 * @wait_on: the record job this STREAM_WAIT job waits for
 * @swait_node: in its stream's @waits while @wait_on is set
 * @ov_node: in the ring's overflow list while its completion waits
 * @waited: a synchronize call sleeps until this job completes
 * @cqe: submitted through the command queue: completion posts a CQE
 * @cancel: decided when it became ready: finish it with -ECANCELED
 * @error: 0 or -errno the job ended with
 * @done_ns: completion time, CLOCK_MONOTONIC
 * @submit_ns: submit time while the completion tracepoint is enabled,
 *             else 0
 * @start_ns: when its first block started on a core, or (when traced)
 *            when it started without one; else 0
 * @stitched: SNPU_OP_GRAPH: started without waiting for the launch before
 *            it on its stream, whose completion it still waits for
 * @chained: run by the core that ran its stream predecessor, straight
 *           after it: that completion does not make it ready (set and
 *           read by that core only)
 * @work: LAUNCH, COPY, MEMSET: what the cores run
 * @ginst: SNPU_OP_GRAPH: the instance of the graph it runs
 * @mem: device allocations the job names, referenced until completion
 * @host: host memory the job names, referenced until completion
 * @out_fence: EVENT_RECORD: the fence SNPU_IOC_EVENT_EXPORT made of it
 *             while it was pending, referenced; signalled and dropped at
 *             its completion (under sched_lock)
 * @in_fence: FENCE_WAIT: the fence it waits for, referenced from prepare
 *            until its completion
 * @fence_cb: FENCE_WAIT: its callback on @in_fence
 * @fence_work: FENCE_WAIT: queued by @fence_cb (which may run in any
 *              context) to resolve the wait in process context
 * @fence_node: FENCE_WAIT: in the context's fence_waits while its
 *              callback is armed (under sched_lock)
 * @fence_error: FENCE_WAIT: @in_fence's error, its result (under
 *               sched_lock); EVENT_RECORD: the error an exported fence
 *               gets (the stream's error when it was cancelled by one)
 *
 * The scheduler fields (@state .. @done_ns) are under the context's
 * sched_lock.
 */
struct snpu_job {
	struct list_head node;
	struct llist_node free_node;
	struct snpu_context *ctx;
	struct snpu_stream *stream;
	u32 stream_handle;
	struct snpu_event *event;
	u64 seq;
	u64 user_data;
	u32 op;
	u32 state;
	u32 gen;
	u32 index;
	refcount_t ref;
	u32 pending;
	struct snpu_job *next;
	struct list_head waiters;
	struct list_head wait_node;
	struct snpu_job *wait_on;
	struct list_head swait_node;
	struct list_head ov_node;
	bool waited;
	bool cqe;
	bool cancel;
	int error;
	u64 done_ns;
	u64 submit_ns;
	u64 start_ns;
	bool stitched;
	bool chained;

	struct snpu_work work;
	struct snpu_ginst *ginst;
	struct snpu_mem *mem[SNPU_KERNEL_MAX_ARGS];
	struct snpu_host *host;

	struct dma_fence *out_fence;
	struct dma_fence *in_fence;
	struct dma_fence_cb fence_cb;
	struct work_struct fence_work;
	struct list_head fence_node;
	int fence_error;
};

/**
 * struct snpu_ring - the command queues of a context
 * @mem: the shared memory: header page, SQ entries, CQ entries
 * @bytes: size of @mem
 * @sq_off: offset of the SQ entries in @mem
 * @cq_off: offset of the CQ entries in @mem
 * @sqes: the SQ entries
 * @cqes: the CQ entries
 * @sq_entries: SQ size
 * @sq_mask: @sq_entries - 1
 * @cq_entries: CQ size
 * @cq_mask: @cq_entries - 1
 * @sq_head: the kernel's SQ head (under the context lock)
 * @cq_tail: the kernel's CQ tail (under sched_lock)
 * @cq_wake: CQ tail at which to wake ENTER (under sched_lock)
 * @cq_waiting: @cq_wake is set (under sched_lock)
 * @sq_head_user: the shared SQ head the kernel publishes
 * @sq_tail_user: the shared SQ tail the process writes
 * @cq_head: the shared CQ head the process writes
 * @cq_tail_user: the shared CQ tail the kernel publishes
 * @sq_flags: shared SQ flags (SNPU_SQ_NEED_WAKEUP)
 * @cq_flags: shared CQ flags (SNPU_CQ_OVERFLOW)
 * @sq_dropped: shared count of clamped SQ tails
 * @cq_overflow: shared count of completions that waited for room
 * @overflow: jobs whose completion waits for room (under sched_lock)
 * @cq_wq: SNPU_IOC_ENTER waiting for completions
 * @poll_wq: the sleeping poller
 * @poller: the SQ poller thread (SNPU_RING_SQPOLL) or NULL
 * @kicked: ENTER asked the sleeping poller to look again
 * @idle_ms: how long the poller spins on an empty SQ
 * @slot_gen: bumped whenever a task slot or a unit of the task quota frees
 *            (under sched_lock)
 * @slot_wait: the poller sleeps until @slot_gen moves (under sched_lock)
 * @poller_key: the (user, device) the poller is counted against
 * @callback_cqe: SNPU_RING_CALLBACK_CQE: ready host callbacks are
 *                delivered as completions (set before publication)
 * @frozen: a checkpoint is copying the rings: parked completions stay
 *          parked (under sched_lock)
 */
struct snpu_ring {
	void *mem;
	size_t bytes;
	size_t sq_off;
	size_t cq_off;
	struct snpu_task *sqes;
	struct snpu_cqe *cqes;
	u32 sq_entries;
	u32 sq_mask;
	u32 cq_entries;
	u32 cq_mask;
	u32 sq_head;
	u32 cq_tail;
	u32 cq_wake;
	bool cq_waiting;
	u32 *sq_head_user;
	u32 *sq_tail_user;
	u32 *cq_head;
	u32 *cq_tail_user;
	u32 *sq_flags;
	u32 *cq_flags;
	u32 *sq_dropped;
	u32 *cq_overflow;
	struct list_head overflow;
	wait_queue_head_t cq_wq;
	wait_queue_head_t poll_wq;
	struct task_struct *poller;
	bool kicked;
	unsigned int idle_ms;
	u32 slot_gen;
	bool slot_wait;
	unsigned long poller_key;
	bool callback_cqe;
	bool frozen;
};

/**
 * struct snpu_proc - the snapshot state of a process (thread group)
 * @ref: one per context of the process, and per transient user
 * @tgid: the process
 * @nr: its thread group id in the initial namespace
 * @uid: real uid of the thread that opened the process's first context
 * @euid: its effective uid; with @uid, who may see the process in queries
 * @id: key in the registry (a thread group id may be reused while an
 *      exited process's files live on in another process)
 * @op_lock: serializes snapshot transitions; protects @image,
 *           @image_bytes and @spare
 * @list_lock: protects @contexts (never held while waiting for a
 *             transition or a drain: opens and closes do not wait for
 *             LOCK or BACKUP, which take context references under it)
 * @contexts: the process's contexts, by snpu_context.proc_node
 * @image: the last backup, a shmem file, or NULL
 * @image_bytes: size of @image
 * @spare: the backup before @image, whose pages the next backup reuses
 * @lock: protects @state, @seq, @locker, @active, @bg, @nbg, @ncontexts
 * @state: SNPU_STATE_*
 * @seq: transitions so far
 * @locker: the thread that locked, while not RUNNING
 * @active: resource-modifying calls in progress
 * @bg: registered background threads (struct snpu_bg)
 * @nbg: number of entries in @bg
 * @ncontexts: number of entries in @contexts, for queries
 * @wq: blocked calls wait for RUNNING, LOCK for quiet, here
 * @state_page: the page user space maps read-only (struct snpu_state_page)
 *
 * Lock order: @op_lock, @list_lock, a context's lock, @lock.
 */
struct snpu_proc {
	struct kref ref;
	struct pid *tgid;
	pid_t nr;
	kuid_t uid;
	kuid_t euid;
	u32 id;

	struct mutex op_lock;		/* transitions, @image */
	struct mutex list_lock;		/* @contexts */
	struct list_head contexts;
	struct file *image;
	u64 image_bytes;
	struct file *spare;

	spinlock_t lock;		/* @state .. @nbg */
	u32 state;
	u32 seq;
	struct pid *locker;
	u32 active;
	struct list_head bg;
	u32 nbg;
	u32 ncontexts;
	wait_queue_head_t wq;
	struct page *state_page;
};

/**
 * struct snpu_ctx_busy - a context's time on one core
 * @ns: nanoseconds the core ran the context's blocks; written by that
 *      core's thread only (WRITE_ONCE), read without a lock
 *
 * One per core and context, each on its own cache line: the cores that
 * run blocks of one context never write the same line.
 */
struct snpu_ctx_busy {
	u64 ns;
} ____cacheline_aligned_in_smp;

/**
 * struct snpu_context - the state of one open file of a device
 * @ref: the file holds one until its release; a snapshot holds one while
 *       it works on the context without its process's list lock
 * @closed: the file's release has begun (under @lock): the objects and
 *          allocations are going, a snapshot skips the context
 * @sdev: the device this file was opened on
 * @lock: see the top of this file
 * @handles: handle -> struct snpu_object
 * @next_handle: where the cyclic handle allocation goes on from
 * @stream_hint: the stream the last lookup found, tried first by the next
 *               lookup
 * @mem_hint: the allocation the last device address resolved to, tried
 *            first by the next; in @va (no reference of its own)
 * @va: device address -> struct snpu_mem
 * @host_va: user address -> struct snpu_host (its own lock only)
 * @va_window: index of the context's window of device addresses
 * @va_base: first device address of this context
 * @va_end: last device address of this context
 * @mem_used: device memory bytes charged to this context (allocations,
 *            also those freed but still held by an exported dma-buf;
 *            imports)
 * @exports: dma-bufs exported from the context's allocations that still
 *           exist; each holds a reference to the context
 * @host_used: host memory bytes charged to this context
 * @streams: number of streams
 * @events: number of events
 * @owners: number of owners
 * @graphs: number of graphs
 * @graph_mem: kernel memory bytes of the graphs and their instances
 * @comms: number of communicator ranks (handles)
 * @comm_ids: communicator ids the file asked for that no rank joined yet
 *            (struct snpu_comm, by @holder_node; under snpu_comm_lock,
 *            see comm.c)
 * @ncomm_ids: their number (under snpu_comm_lock)
 * @sched_lock: see the top of this file
 * @pool: the jobs, in chunks of SNPU_POOL_CHUNK: @pool[i] holds jobs
 *        i * SNPU_POOL_CHUNK on; the first chunk is allocated at open,
 *        the others as submissions need them, none freed before release
 * @pool_size: number of jobs in @pool so far; grows (under both locks)
 *             up to @pool_max, read without lock by snpu_pool_job()
 * @pool_max: the most jobs @pool may hold
 * @pool_memcg: the opener's memory cgroup, charged for the chunks and
 *              for what the SQ poller allocates for the context
 * @free: free jobs that reservations take from (under @lock)
 * @freed: jobs put back since (any context, no lock), moved to @free in
 *         bulk by the next reservation that runs short
 * @inflight: jobs submitted and not complete
 * @tasks_done: tasks completed since open, for the statistics
 * @busy: the context's time on each core of the device (fdinfo's
 *        drm-engine-compute), allocated at open
 * @fence_waits: FENCE_WAIT jobs whose callback is armed (under
 *               @sched_lock)
 * @fence_ctx: dma_fence context of the signalled fences exported for
 *             captures already complete, 0 until the first (under
 *             @sched_lock)
 * @fence_seqno: the last seqno on @fence_ctx (under @sched_lock)
 * @callbacks: HOST_FUNC jobs ready for delivery
 * @dying: the file is being released: jobs are cancelled, not run
 * @draining: a backup waits for @inflight to reach 0
 * @wq: synchronize, callback and release waiters
 * @ring: the command queues, once set up: published complete, with
 *        release, under both locks; read with acquire (or under a lock)
 * @runq: ready jobs per priority (under the device's ready_lock)
 * @sched_closed: the file is closing: its jobs are no longer listed
 *                (under the device's ready_lock)
 * @proc: the process that opened the file
 * @proc_node: in @proc's contexts (under its list_lock)
 * @dev_node: in the device's contexts (under its ctx_lock)
 * @id: unique among the contexts since load, names it in images
 *
 * Created by open(2), torn down by the last close of the file
 * description, freed with the last reference.
 */
struct snpu_context {
	struct kref ref;
	bool closed;
	struct snpu_device *sdev;

	struct mutex lock;		/* objects, handles, quotas */
	struct xarray handles;
	u32 next_handle;
	struct snpu_stream *stream_hint;	/* last stream looked up */
	struct snpu_mem *mem_hint;		/* last allocation resolved */
	struct maple_tree va;
	struct maple_tree host_va;
	unsigned int va_window;
	u64 va_base;
	u64 va_end;
	atomic64_t mem_used;
	atomic_t exports;
	atomic64_t host_used;
	u32 streams;
	u32 events;
	u32 owners;
	u32 graphs;
	atomic64_t graph_mem;
	u32 comms;
	struct list_head comm_ids;
	u32 ncomm_ids;

	spinlock_t sched_lock;		/* the task graph, see top */
	struct snpu_job **pool;
	u32 pool_size;
	u32 pool_max;
	struct mem_cgroup *pool_memcg;
	struct list_head free;
	struct llist_head freed;
	u32 inflight;
	u64 tasks_done;
	struct snpu_ctx_busy *busy;	/* one per core of the device */
	struct list_head fence_waits;
	u64 fence_ctx;
	u64 fence_seqno;
	struct list_head callbacks;
	bool dying;
	bool draining;
	wait_queue_head_t wq;
	struct snpu_ring *ring;

	struct snpu_runq runq[SNPU_NR_PRIO];
	bool sched_closed;

	struct snpu_proc *proc;
	struct list_head proc_node;
	struct list_head dev_node;
	u64 id;
};

/**
 * snpu_stats_task_done() - count a completed task in its device
 * @ctx: the task's context
 * @error: the task's result
 *
 * Inline: every completion calls it, under the scheduler lock.
 */
static inline void snpu_stats_task_done(struct snpu_context *ctx, int error)
{
	struct snpu_dev_pcpu __percpu *pc = ctx->sdev->pcpu;

	this_cpu_inc(pc->tasks);
	if (unlikely(error))
		this_cpu_inc(pc->failed);
}

/**
 * snpu_ring_slot_freed_locked() - a task slot or quota unit became free
 * @ctx: the context
 *
 * Wakes a poller that sleeps because task slots ran out.
 */
static inline void snpu_ring_slot_freed_locked(struct snpu_context *ctx)
{
	struct snpu_ring *ring = ctx->ring;

	lockdep_assert_held(&ctx->sched_lock);
	if (!ring)
		return;
	ring->slot_gen++;
	if (unlikely(ring->slot_wait)) {
		ring->slot_wait = false;
		wake_up(&ring->poll_wq);
	}
}

/* Jobs in a chunk of a context's pool (the first is allocated at open). */
#define SNPU_POOL_CHUNK_SHIFT	5
#define SNPU_POOL_CHUNK		BIT(SNPU_POOL_CHUNK_SHIFT)

/**
 * snpu_pool_job() - the job in a slot of a context's pool
 * @ctx: the context
 * @index: slot
 *
 * Return: the job, or NULL when the pool has no such slot (yet).
 */
static inline struct snpu_job *snpu_pool_job(struct snpu_context *ctx,
					     u32 index)
{
	/* Pairs with the release in snpu_pool_grow(): the chunk is there. */
	if (index >= smp_load_acquire(&ctx->pool_size))
		return NULL;
	return &ctx->pool[index >> SNPU_POOL_CHUNK_SHIFT]
			 [index & (SNPU_POOL_CHUNK - 1)];
}

union snpu_ioc_arg;

/* device.c */
struct snpu_device *snpu_device_create(unsigned int index,
				       const struct snpu_params *p,
				       struct dentry *debugfs);
void snpu_device_destroy(struct snpu_device *sdev);

/* isa.c: the f32 kernels' instruction set, chosen at load */
int snpu_isa_init(void);

/* context.c */
extern const struct file_operations snpu_fops;
extern struct workqueue_struct *snpu_free_wq;
int snpu_free_wq_init(void);
void snpu_free_wq_exit(void);
void snpu_ctx_get(struct snpu_context *ctx);
void snpu_ctx_put(struct snpu_context *ctx);
struct snpu_object *snpu_object_get_locked(struct snpu_context *ctx,
					   u32 handle, u32 type);
int snpu_object_add_locked(struct snpu_context *ctx, struct snpu_object *obj,
			   u32 type);
struct snpu_stream *snpu_stream_get_locked(struct snpu_context *ctx,
					   u32 handle);
struct snpu_event *snpu_event_get_locked(struct snpu_context *ctx, u32 handle);

/* memory.c */
int snpu_mem_resolve_locked(struct snpu_context *ctx, u64 addr, u64 bytes,
			    struct snpu_mem **memp, void **kaddr);
void snpu_mem_put(struct snpu_mem *mem);
void snpu_mem_put_deferred(struct snpu_mem *mem);
void snpu_mem_destroy_all(struct snpu_context *ctx);
int snpu_mem_place(struct snpu_context *ctx, struct snpu_mem *mem, u64 span,
		   u64 align);
struct snpu_mem *snpu_mem_restore_locked(struct snpu_context *ctx, u64 addr,
					 u64 bytes);
void snpu_mem_unmake_all_locked(struct snpu_context *ctx);

/* dmabuf.c */
int snpu_ioc_mem_export(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_mem_import(struct snpu_context *ctx, union snpu_ioc_arg *arg);
void snpu_dmabuf_import_release(struct snpu_mem *mem);

/* host.c */
int snpu_host_resolve(struct snpu_context *ctx, u64 uaddr, u64 bytes,
		      struct snpu_host **hostp, void **kaddr);
void snpu_host_put(struct snpu_host *host);
void snpu_host_put_deferred(struct snpu_host *host);
void *snpu_vmalloc_user(size_t bytes);
void snpu_host_destroy_locked(struct snpu_context *ctx, struct snpu_host *host);
int snpu_host_mmap(struct snpu_context *ctx, struct vm_area_struct *vma);
struct snpu_host *snpu_host_new_alloc(struct snpu_context *ctx, u64 bytes);
struct snpu_host *snpu_host_new_register(struct snpu_context *ctx, u64 addr,
					 u64 bytes);
int snpu_host_publish_locked(struct snpu_context *ctx, struct snpu_host *host);

/* stream.c, event.c */
int snpu_priority_check(s32 priority);
struct snpu_stream *snpu_stream_new_locked(struct snpu_context *ctx,
					   int priority);
struct snpu_stream *snpu_stream_new_at_locked(struct snpu_context *ctx,
					      int priority, u32 handle);
void snpu_stream_destroy_locked(struct snpu_context *ctx,
				struct snpu_stream *s);
struct snpu_job *snpu_stream_tail_get(struct snpu_context *ctx,
				      struct snpu_stream *s);
void snpu_owner_destroy_locked(struct snpu_context *ctx,
			       struct snpu_owner *owner);
void snpu_event_destroy_locked(struct snpu_context *ctx, struct snpu_event *e);
int snpu_wait_job(struct snpu_context *ctx, struct snpu_job *job, u32 flags,
		  s64 timeout_ns);

/* job.c */
int snpu_pool_init(struct snpu_context *ctx, u32 size);
void snpu_pool_fini(struct snpu_context *ctx);
void snpu_job_put_locked(struct snpu_context *ctx, struct snpu_job *job);
void snpu_job_put(struct snpu_context *ctx, struct snpu_job *job);
void snpu_job_complete(struct snpu_job *job, int error, u64 now,
		       struct snpu_work **handoff);
void snpu_job_finish(struct snpu_job *job, int error, u64 now,
		     struct list_head *todo);
void snpu_jobs_complete_run(struct snpu_job *job, u32 n, int error, u64 now,
			    struct snpu_work **handoff);
void snpu_jobs_run_handoff(struct list_head *todo, struct snpu_work **handoff);
int snpu_submit_locked(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_jobs_reserve(struct snpu_context *ctx, u32 count,
		      struct list_head *batch);
int snpu_job_prepare_locked(struct snpu_context *ctx, struct snpu_job *job,
			    const struct snpu_task *t);
u64 snpu_jobs_commit(struct snpu_context *ctx, struct list_head *batch);
u64 snpu_stream_nop_locked(struct snpu_context *ctx, struct snpu_stream *s);
void snpu_jobs_unwind(struct snpu_context *ctx, struct list_head *batch);
void snpu_cancel_all(struct snpu_context *ctx);
void snpu_stream_fail_locked(struct snpu_context *ctx, struct snpu_stream *s,
			     int error, struct list_head *todo);
void snpu_jobs_run(struct list_head *todo);
void snpu_job_trace_start(struct snpu_context *ctx, struct snpu_job *job);
void snpu_job_trace_complete(struct snpu_context *ctx, struct snpu_job *job);

/* comm.c */
int snpu_coll_prepare_locked(struct snpu_context *ctx, struct snpu_work *w,
			     const struct snpu_task *t, struct snpu_mem **mem);
void snpu_coll_unbind(struct snpu_work *w);
void snpu_coll_arrive(struct snpu_work *w, int cancel);
void snpu_coll_step_end(struct snpu_work *w, int error,
			struct snpu_work **handoff);
int snpu_coll_run_block(struct snpu_core *core, struct snpu_work *w,
			u32 block, u64 deadline);
void snpu_comm_cancel(struct snpu_context *ctx);
int snpu_comm_init(void);
void snpu_comm_exit(void);
void snpu_comm_release(struct snpu_context *ctx);
struct snpu_comm_rank;
void snpu_comm_rank_destroy_locked(struct snpu_context *ctx,
				   struct snpu_comm_rank *r);

/* sched.c */
int snpu_cores_start(struct snpu_device *sdev);
void snpu_cores_stop(struct snpu_device *sdev);
bool snpu_sched_ready(struct snpu_work *w, struct snpu_work **handoff);
bool snpu_sched_ready_list(struct list_head *works, struct snpu_work **handoff);
void snpu_work_complete(struct snpu_work *w, int error, u64 now,
			struct snpu_work **handoff);

/* graph.c */
struct snpu_graph;
struct snpu_gnode;
void snpu_graph_destroy_locked(struct snpu_context *ctx, struct snpu_graph *g);
int snpu_graph_ckpt_rec(const struct snpu_graph *g, struct snpu_ckpt_graph *r,
			const void **src);
int snpu_graph_restore_locked(struct snpu_context *ctx,
			      const struct snpu_ckpt_graph *r, void *src);
int snpu_graph_prepare_locked(struct snpu_context *ctx, struct snpu_job *job,
			      const struct snpu_task *t);
void snpu_graph_put_job(struct snpu_job *job);
u32 snpu_graph_commit_work(const struct snpu_job *job);
bool snpu_graph_stitch_locked(struct snpu_context *ctx, struct snpu_job *prev,
			      struct snpu_job *job);
void snpu_graph_start_locked(struct snpu_context *ctx, struct snpu_job *job);
void snpu_graph_unstitch_locked(struct snpu_job *job, struct list_head *todo);
void snpu_graph_dispatch(struct snpu_job *job, struct list_head *todo,
			 struct snpu_work **handoff);
void snpu_gnode_complete(struct snpu_gnode *node, int error,
			 struct snpu_work **handoff);
void snpu_graph_debugfs(struct snpu_device *sdev);
void snpu_sched_cancel(struct snpu_context *ctx);
void snpu_sched_init_ctx(struct snpu_context *ctx);

/* mmap.c */
int snpu_mmap(struct file *file, struct vm_area_struct *vma);
vm_fault_t snpu_vmalloc_fault(struct vm_fault *vmf, void *base, size_t bytes,
			      unsigned long pgoff);

/* ring.c */
void snpu_ring_post_locked(struct snpu_context *ctx, struct snpu_job *job);
bool snpu_ring_callback_locked(struct snpu_context *ctx, struct snpu_job *job);
bool snpu_ring_flush(struct snpu_context *ctx, struct snpu_ring *ring);
u32 snpu_ring_consume_locked(struct snpu_context *ctx, u32 max);
void snpu_ring_free(struct snpu_context *ctx);
int snpu_ring_mmap(struct snpu_context *ctx, struct vm_area_struct *vma);

/**
 * struct snpu_ckpt_io - one pass over the caller's file (ckpt.c)
 * @f: the file
 * @pos: where the next byte goes or comes from
 * @seq: chunks written so far
 */
struct snpu_ckpt_io {
	struct file *f;
	loff_t pos;
	u32 seq;
};

/**
 * struct snpu_ring_rst - the rings a restore is making (ring.c)
 * @ring: not published until the whole image is read, or NULL
 * @rec: the image's RING record
 * @ovf: the completions that waited for room, as read from the image
 * @jobs: a reserved job for each, to park them again
 */
struct snpu_ring_rst {
	struct snpu_ring *ring;
	struct snpu_ckpt_ring rec;
	struct snpu_cqe *ovf;
	struct list_head jobs;
};

int snpu_ckpt_chunk(struct snpu_ckpt_io *io, u32 type, const void *rec,
		    u32 rlen, const void *data, u32 dlen);
int snpu_ckpt_put_data(struct snpu_ckpt_io *io, const void *base, u64 bytes,
		       u64 from);
int snpu_ring_ckpt_check_locked(struct snpu_context *ctx);
int snpu_ring_ckpt_put_locked(struct snpu_ckpt_io *io,
			      struct snpu_context *ctx);
int snpu_ring_ckpt_make_locked(struct snpu_context *ctx,
			       struct snpu_ring_rst *rr,
			       const struct snpu_ckpt_ring *rec);
void *snpu_ring_ckpt_dst(struct snpu_ring_rst *rr, u64 off, u32 *n);
int snpu_ring_ckpt_verify(const struct snpu_ring_rst *rr);
void snpu_ring_ckpt_publish_locked(struct snpu_context *ctx,
				   struct snpu_ring_rst *rr);
void snpu_ring_ckpt_discard(struct snpu_context *ctx,
			    struct snpu_ring_rst *rr);

/* sqpoll.c */
int snpu_sqpoll_create(struct snpu_context *ctx, struct snpu_ring *ring);
void snpu_sqpoll_discard(struct snpu_ring *ring);
void snpu_ring_kick(struct snpu_context *ctx);
void snpu_ring_stop(struct snpu_context *ctx);

/* callback.c */
u32 snpu_callback_cookie(const struct snpu_job *job);
void snpu_callback_delivered_locked(struct snpu_context *ctx,
				    struct snpu_job *job);
int snpu_callback_complete(struct snpu_context *ctx, u32 cookie, int status);
__poll_t snpu_callback_poll(struct snpu_context *ctx, struct file *file,
			    poll_table *wait);

/* ioctl.c */
long snpu_ioctl(struct file *file, unsigned int cmd, unsigned long arg);
int snpu_ioc_copy_out(union snpu_ioc_arg *arg);

/* snapshot.c */
int snpu_proc_attach(struct snpu_context *ctx);
void snpu_proc_detach(struct snpu_context *ctx);
int snpu_proc_enter(struct snpu_proc *p);
bool snpu_proc_try_enter(struct snpu_proc *p);
void snpu_proc_exit(struct snpu_proc *p);
int snpu_state_mmap(struct snpu_context *ctx, struct vm_area_struct *vma);

/**
 * struct snpu_proc_info - what queries report of a process
 * @nr: thread group id in the namespace of the query, 0 when the process
 *      is not visible there
 * @uid: snpu_proc.uid
 * @euid: snpu_proc.euid
 * @state: SNPU_STATE_*
 * @seq: transitions so far
 * @bg_threads: registered background threads
 * @contexts: open contexts
 * @image_bytes: size of the last backup, 0 when none
 */
struct snpu_proc_info {
	pid_t nr;
	kuid_t uid;
	kuid_t euid;
	u32 state;
	u32 seq;
	u32 bg_threads;
	u32 contexts;
	u64 image_bytes;
};

struct pid_namespace;
int snpu_proc_info_next(unsigned long *cursor, struct pid_namespace *ns,
			struct snpu_proc_info *info);

/* image.c: under the process's op_lock */
int snpu_image_backup(struct snpu_proc *p, struct file *reuse,
		      struct file **image, u64 *bytes);
int snpu_image_restore(struct snpu_proc *p, struct file *image);

/**
 * struct snpu_image_ctxs - the process's contexts, held by reference
 * @ctx: the contexts
 * @n: how many
 *
 * Taken under the process's list lock, used without it: opens and closes
 * of the process never wait for a backup's drain or a restore's copies.
 */
struct snpu_image_ctxs {
	struct snpu_context **ctx;
	u32 n;
};

int snpu_image_ctxs_get(struct snpu_proc *p, struct snpu_image_ctxs *c);
void snpu_image_ctxs_put(struct snpu_image_ctxs *c);
int snpu_image_drain(struct snpu_context *ctx);

/* ckpt.c: checkpoint to a file, restore into a fresh context */
int snpu_ckpt_write(struct snpu_proc *p, struct file *f, u64 *bytes,
		    u32 *contexts);
int snpu_ioc_ckpt_proc(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_ckpt_restore(struct snpu_context *ctx, union snpu_ioc_arg *arg);

/* device.c */
struct snpu_device *snpu_device_get(unsigned int index);
struct snpu_context *snpu_device_ctx_next(struct snpu_device *sdev,
					  u64 *cursor);
void snpu_device_reset(struct snpu_device *sdev);

/* stats.c */
void snpu_stats_debugfs(struct snpu_device *sdev);
u64 snpu_ctx_busy_ns(struct snpu_context *ctx);

/* fence.c */
int snpu_ioc_event_export(struct snpu_context *ctx, union snpu_ioc_arg *arg);
void snpu_fence_signal_locked(struct snpu_context *ctx, struct snpu_job *job);
int snpu_fence_wait_prepare(struct snpu_job *job, s32 fd);
void snpu_fence_wait_arm_locked(struct snpu_context *ctx,
				struct snpu_job *job);
void snpu_fence_wait_cancel_locked(struct snpu_context *ctx,
				   struct snpu_stream *s,
				   struct list_head *todo);
void snpu_fence_job_init(struct snpu_job *job);
void snpu_job_resolve_locked(struct snpu_context *ctx, struct snpu_job *job,
			     struct list_head *todo);
struct seq_file;
void snpu_show_fdinfo(struct seq_file *m, struct file *file);

/**
 * struct snpu_dev_stats - a device's statistics, summed for a reader
 * @tasks: tasks completed
 * @failed: of them, with an error
 * @cqes: completions written to completion queues
 * @overflows: completions parked on a full completion queue
 * @ready_depth: works on the run queues now
 * @ready_max: the most works ever on the run queues at once
 * @busy_ns: nanoseconds the cores spent running blocks, all cores
 * @blocks: blocks run, all cores
 * @snap_count: snapshot transitions (every enum snpu_snap_op)
 * @snap_failed: of them, failed
 * @snap_ns: nanoseconds they took
 * @graph_launches: graph launches complete
 * @graph_visits: hazard-list entries visited
 */
struct snpu_dev_stats {
	u64 tasks;
	u64 failed;
	u64 cqes;
	u64 overflows;
	u64 ready_depth;
	u64 ready_max;
	u64 busy_ns;
	u64 blocks;
	u64 snap_count;
	u64 snap_failed;
	u64 snap_ns;
	u64 graph_launches;
	u64 graph_visits;
};

void snpu_stats_read(struct snpu_device *sdev, struct snpu_dev_stats *st);

/**
 * struct snpu_ctx_stats - a context's usage, for a reader
 * @q: usage and limits, as SNPU_IOC_CTX_QUERY reports them
 * @id: snpu_context.id
 * @tasks_done: tasks completed since open
 * @pid: its process's thread group id in the reader's pid namespace, 0
 *       when not visible there
 * @uid: snpu_proc.uid of its process
 * @euid: snpu_proc.euid of its process
 * @state: SNPU_STATE_* of its process
 */
struct snpu_ctx_stats {
	struct snpu_ctx_query q;
	u64 id;
	u64 tasks_done;
	pid_t pid;
	kuid_t uid;
	kuid_t euid;
	u32 state;
};

struct pid_namespace;
bool snpu_stats_ctx_next(struct snpu_device *sdev, u64 *cursor,
			 struct pid_namespace *ns, struct snpu_ctx_stats *cs);

/* netlink.c */
int snpu_nl_init(void);
void snpu_nl_exit(void);
void snpu_nl_transition(unsigned int dev, pid_t pid, u32 seq, u32 old_state,
			u32 new_state, int result);

u64 snpu_ctx_usage(struct snpu_context *ctx, struct snpu_ctx_query *q);

/* ioctl handlers, in the file of their object */
union snpu_ioc_arg;
int snpu_ioc_ctx_query(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_mem_alloc(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_mem_free(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_mem_query(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_mem_copy(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_mem_set(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_host_alloc(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_host_register(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_host_free(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_stream_create(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_stream_destroy(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_stream_sync(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_stream_query(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_stream_abort(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_stream_reset(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_event_create(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_event_destroy(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_event_query(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_event_sync(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_event_elapsed(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_submit(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_callback_wait(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_callback_done(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_ring_setup(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_ring_query(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_enter(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_owner_create(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_owner_destroy(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_attached_stream_get(struct snpu_context *ctx,
				 union snpu_ioc_arg *arg);
int snpu_ioc_snapshot_lock(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_snapshot_backup(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_snapshot_restore(struct snpu_context *ctx,
			      union snpu_ioc_arg *arg);
int snpu_ioc_snapshot_unlock(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_snapshot_state(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_bg_register(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_bg_unregister(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_bg_park(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_graph_create(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_graph_destroy(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_comm_id(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_comm_join(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_comm_destroy(struct snpu_context *ctx, union snpu_ioc_arg *arg);
int snpu_ioc_comm_query(struct snpu_context *ctx, union snpu_ioc_arg *arg);

/**
 * union snpu_ioc_arg - the argument of any ioctl, copied in by snpu_ioctl()
 * @hdr: the fields every argument starts with
 * @info: SNPU_IOC_GET_INFO
 * @ctx_query: SNPU_IOC_CTX_QUERY
 * @mem_alloc: SNPU_IOC_MEM_ALLOC
 * @mem_free: SNPU_IOC_MEM_FREE
 * @mem_query: SNPU_IOC_MEM_QUERY
 * @mem_copy: SNPU_IOC_MEM_COPY
 * @mem_set: SNPU_IOC_MEM_SET
 * @host_alloc: SNPU_IOC_HOST_ALLOC
 * @host_register: SNPU_IOC_HOST_REGISTER
 * @handle_op: destroy, free, abort, reset
 * @create: SNPU_IOC_STREAM_CREATE, SNPU_IOC_EVENT_CREATE
 * @wait: SNPU_IOC_STREAM_SYNC, SNPU_IOC_EVENT_SYNC
 * @stream_query: SNPU_IOC_STREAM_QUERY
 * @event_query: SNPU_IOC_EVENT_QUERY
 * @elapsed: SNPU_IOC_EVENT_ELAPSED
 * @submit: SNPU_IOC_SUBMIT
 * @callback: SNPU_IOC_CALLBACK_WAIT, SNPU_IOC_CALLBACK_DONE
 * @ring_setup: SNPU_IOC_RING_SETUP
 * @enter: SNPU_IOC_ENTER
 * @attached: SNPU_IOC_ATTACHED_STREAM_GET
 * @snapshot: SNPU_IOC_SNAPSHOT_*, SNPU_IOC_BG_*
 * @graph_create: SNPU_IOC_GRAPH_CREATE
 * @comm_id: SNPU_IOC_COMM_ID
 * @comm_join: SNPU_IOC_COMM_JOIN
 * @comm_query: SNPU_IOC_COMM_QUERY
 * @event_export: SNPU_IOC_EVENT_EXPORT
 * @mem_export: SNPU_IOC_MEM_EXPORT
 * @mem_import: SNPU_IOC_MEM_IMPORT
 * @ckpt_proc: SNPU_IOC_CKPT_PROC
 * @ckpt_restore: SNPU_IOC_CKPT_RESTORE
 * @ring_query: SNPU_IOC_RING_QUERY
 *
 * At most 120 bytes: the dispatcher keeps it on the stack (in a struct
 * snpu_ioc_call, with what snpu_ioc_copy_out() needs).
 */
union snpu_ioc_arg {
	struct {
		u32 size;
		u32 flags;
	} hdr;
	struct snpu_info info;
	struct snpu_ctx_query ctx_query;
	struct snpu_mem_alloc mem_alloc;
	struct snpu_mem_free mem_free;
	struct snpu_mem_query mem_query;
	struct snpu_mem_copy mem_copy;
	struct snpu_mem_set mem_set;
	struct snpu_host_alloc host_alloc;
	struct snpu_host_register host_register;
	struct snpu_handle_op handle_op;
	struct snpu_stream_create create;
	struct snpu_wait wait;
	struct snpu_stream_query stream_query;
	struct snpu_event_query event_query;
	struct snpu_event_elapsed elapsed;
	struct snpu_submit submit;
	struct snpu_callback callback;
	struct snpu_ring_setup ring_setup;
	struct snpu_enter enter;
	struct snpu_attached_stream attached;
	struct snpu_snapshot snapshot;
	struct snpu_graph_create graph_create;
	struct snpu_comm_id comm_id;
	struct snpu_comm_join comm_join;
	struct snpu_comm_query comm_query;
	struct snpu_event_export event_export;
	struct snpu_mem_export mem_export;
	struct snpu_mem_import mem_import;
	struct snpu_ckpt_proc ckpt_proc;
	struct snpu_ckpt_restore ckpt_restore;
	struct snpu_ring_query ring_query;
};

/**
 * snpu_timeout_left() - what is left of a wait's timeout
 * @flags: the argument's flags: SNPU_WAIT_ABSOLUTE
 * @timeout_ns: relative nanoseconds, or a CLOCK_MONOTONIC deadline with
 *              SNPU_WAIT_ABSOLUTE; negative for no timeout
 *
 * Return: nanoseconds left, 0 to poll, negative to wait forever.
 */
static inline s64 snpu_timeout_left(u32 flags, s64 timeout_ns)
{
	if (timeout_ns < 0 || !(flags & SNPU_WAIT_ABSOLUTE))
		return timeout_ns;
	return max_t(s64, timeout_ns - ktime_get_ns(), 0);
}

/**
 * snpu_wait_result() - the errno a wait returns
 * @flags: the argument's flags: SNPU_WAIT_ABSOLUTE
 * @timeout_ns: as passed
 * @ret: what the wait_event macro returned
 *
 * A restart repeats the call from its argument: right for no timeout and
 * for a deadline, wrong for a relative timeout, which would start over.
 *
 * Return: 0, -ETIMEDOUT, -ERESTARTSYS or -EINTR.
 */
static inline int snpu_wait_result(u32 flags, s64 timeout_ns, long ret)
{
	if (ret == -ETIME)
		return -ETIMEDOUT;
	if (ret == -ERESTARTSYS && timeout_ns >= 0 &&
	    !(flags & SNPU_WAIT_ABSOLUTE))
		return -EINTR;
	return ret;
}

static inline bool snpu_zero(const void *p, size_t len)
{
	return !memchr_inv(p, 0, len);
}

#endif /* _SNPU_H */
