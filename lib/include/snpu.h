/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libsnpu - the userspace library of the snpu accelerator runtime.
 *
 * Every call that can fail returns 0 (or a count) on success and a negative
 * errno on failure; read the error from the return value, not from errno
 * (which the system calls made on the way may change). The library keeps no
 * global state: everything lives in the objects the caller holds.
 *
 * Threads: every call on a struct snpu_device may run concurrently with any
 * other call on the same device from other threads, except snpu_close().
 * The kernel serializes what must be serialized; the library adds a lock
 * only where Documentation/lib/index.rst says (owner misses, the join
 * check, snapshot callbacks, the graph cache and captures).
 * The snpu_prep_*() and snpu_arg_*() helpers only touch the memory they
 * are given.
 *
 * Documentation/lib/ has a page per call.
 */
#ifndef LIBSNPU_SNPU_H
#define LIBSNPU_SNPU_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include <linux/snpu.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An open snpu device: one kernel context. Opaque. */
struct snpu_device;

/* ---- devices (LIBSNPU_0.1) ------------------------------------------- */

/*
 * snpu_open() flags. SNPU_OPEN_CHECK_JOINS: check that every operator run
 * by snpu_op_run() joins its attached-stream work into its stream before
 * it returns (also on when SNPU_CHECK_JOINS=1 is in the environment).
 */
#define SNPU_OPEN_CHECK_JOINS	(1U << 0)

int snpu_open(unsigned int index, unsigned int flags,
	      struct snpu_device **devp);
int snpu_open_path(const char *path, unsigned int flags,
		   struct snpu_device **devp);
void snpu_close(struct snpu_device *dev);
int snpu_device_fd(const struct snpu_device *dev);
int snpu_get_info(struct snpu_device *dev, struct snpu_info *info);

/* ---- context (LIBSNPU_0.2 from here on) ------------------------------- */

int snpu_ctx_query(struct snpu_device *dev, struct snpu_ctx_query *q);
int snpu_nop(struct snpu_device *dev);

/* ---- device memory ---------------------------------------------------- */

int snpu_mem_alloc(struct snpu_device *dev, uint64_t bytes, uint64_t align,
		   unsigned int flags, uint64_t *addr);
int snpu_mem_free(struct snpu_device *dev, uint64_t addr);
int snpu_mem_query(struct snpu_device *dev, uint64_t addr, uint64_t *base,
		   uint64_t *bytes);
int snpu_memcpy_h2d(struct snpu_device *dev, uint64_t dst, const void *src,
		    size_t n);
int snpu_memcpy_d2h(struct snpu_device *dev, void *dst, uint64_t src,
		    size_t n);
int snpu_memcpy_d2d(struct snpu_device *dev, uint64_t dst, uint64_t src,
		    size_t n);
int snpu_memset(struct snpu_device *dev, uint64_t addr, int value, size_t n);

/* ---- dma-buf (ABI 0.13, LIBSNPU_0.13) --------------------------------- */

int snpu_mem_export(struct snpu_device *dev, uint64_t addr, uint64_t bytes,
		    unsigned int flags, int *dmabuf_fd);
int snpu_mem_import(struct snpu_device *dev, int dmabuf_fd,
		    unsigned int flags, uint64_t *addr, uint64_t *bytes);

/* ---- host memory ------------------------------------------------------ */

/**
 * struct snpu_host_buf - host memory allocated by the driver and mapped
 * @ptr: start of the mapping
 * @bytes: size of the mapping: the requested size rounded up to pages
 * @handle: the driver's handle of the memory
 *
 * Filled by snpu_host_alloc(), released (and zeroed) by snpu_host_free().
 * The caller reads the fields and must not change them.
 */
struct snpu_host_buf {
	void *ptr;
	size_t bytes;
	uint32_t handle;
};

int snpu_host_alloc(struct snpu_device *dev, size_t bytes,
		    struct snpu_host_buf *buf);
int snpu_host_free(struct snpu_device *dev, struct snpu_host_buf *buf);
int snpu_host_register(struct snpu_device *dev, void *ptr, size_t bytes,
		       uint32_t *handle);
int snpu_host_unregister(struct snpu_device *dev, uint32_t handle);

/* ---- streams ---------------------------------------------------------- */

int snpu_stream_create(struct snpu_device *dev, int priority,
		       unsigned int flags, uint32_t *stream);
int snpu_stream_destroy(struct snpu_device *dev, uint32_t stream,
			unsigned int flags);
int snpu_stream_synchronize(struct snpu_device *dev, uint32_t stream,
			    int64_t timeout_ns);
int snpu_stream_query(struct snpu_device *dev, uint32_t stream,
		      struct snpu_stream_query *q);
int snpu_stream_abort(struct snpu_device *dev, uint32_t stream);
int snpu_stream_reset(struct snpu_device *dev, uint32_t stream);
int snpu_stream_wait_event(struct snpu_device *dev, uint32_t stream,
			   uint32_t event);

/* ---- events ----------------------------------------------------------- */

int snpu_event_create(struct snpu_device *dev, uint32_t *event);
int snpu_event_destroy(struct snpu_device *dev, uint32_t event);
int snpu_event_query(struct snpu_device *dev, uint32_t event,
		     struct snpu_event_query *q);
int snpu_event_synchronize(struct snpu_device *dev, uint32_t event,
			   int64_t timeout_ns);
int snpu_event_elapsed_ns(struct snpu_device *dev, uint32_t start,
			  uint32_t end, int64_t *ns);
int snpu_event_record(struct snpu_device *dev, uint32_t event,
		      uint32_t stream);

/* ---- fences (ABI 0.12, LIBSNPU_0.12) ---------------------------------- */

int snpu_event_export_fence(struct snpu_device *dev, uint32_t event,
			    unsigned int flags, int *fence_fd);
int snpu_stream_wait_fence(struct snpu_device *dev, uint32_t stream,
			   int fence_fd);

/* ---- tasks ------------------------------------------------------------ */

/* A buffer argument of a launch: a device range. */
static inline struct snpu_kernel_arg snpu_arg_buf(uint64_t addr,
						  uint64_t bytes)
{
	struct snpu_kernel_arg a;

	a.value = addr;
	a.bytes = bytes;
	return a;
}

/* An integer scalar argument of a launch. */
static inline struct snpu_kernel_arg snpu_arg_u64(uint64_t v)
{
	struct snpu_kernel_arg a;

	a.value = v;
	a.bytes = 0;
	return a;
}

/* An f32 scalar argument of a launch: its IEEE bits, zero-extended. */
static inline struct snpu_kernel_arg snpu_arg_f32(float f)
{
	struct snpu_kernel_arg a;
	uint32_t bits;

	memcpy(&bits, &f, sizeof(bits));
	a.value = bits;
	a.bytes = 0;
	return a;
}

/*
 * The prep helpers zero the whole task, then fill in one operation. They
 * check nothing the kernel checks at submit, except that a launch has at
 * most SNPU_KERNEL_MAX_ARGS arguments. Set t->user_data afterwards if
 * wanted (snpu_prep_host_func() sets it).
 */
static inline int snpu_prep_launch(struct snpu_task *t, uint32_t stream,
				   uint32_t kernel, uint32_t block_dim,
				   const struct snpu_kernel_arg *args,
				   unsigned int nargs)
{
	if (!t || nargs > SNPU_KERNEL_MAX_ARGS || (nargs && !args))
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	t->op = SNPU_OP_LAUNCH;
	t->stream = stream;
	t->launch.kernel = kernel;
	t->launch.block_dim = block_dim;
	if (nargs)
		memcpy(t->launch.args, args, nargs * sizeof(*args));
	return 0;
}

static inline void snpu_prep_copy(struct snpu_task *t, uint32_t stream,
				  uint32_t dir, uint64_t dst, uint64_t src,
				  uint64_t bytes)
{
	memset(t, 0, sizeof(*t));
	t->op = SNPU_OP_COPY;
	t->stream = stream;
	t->copy.dir = dir;
	t->copy.dst = dst;
	t->copy.src = src;
	t->copy.bytes = bytes;
}

/* @value is stored as is: the kernel refuses one outside 0..255. */
static inline void snpu_prep_memset(struct snpu_task *t, uint32_t stream,
				    uint64_t addr, int value, uint64_t bytes)
{
	memset(t, 0, sizeof(*t));
	t->op = SNPU_OP_MEMSET;
	t->stream = stream;
	t->memset.addr = addr;
	t->memset.bytes = bytes;
	t->memset.value = (uint32_t)value;
}

static inline void snpu_prep_event_record(struct snpu_task *t,
					  uint32_t stream, uint32_t event)
{
	memset(t, 0, sizeof(*t));
	t->op = SNPU_OP_EVENT_RECORD;
	t->stream = stream;
	t->event.event = event;
}

static inline void snpu_prep_stream_wait(struct snpu_task *t,
					 uint32_t stream, uint32_t event)
{
	memset(t, 0, sizeof(*t));
	t->op = SNPU_OP_STREAM_WAIT;
	t->stream = stream;
	t->event.event = event;
}

static inline void snpu_prep_fence_wait(struct snpu_task *t, uint32_t stream,
					int fence_fd)
{
	memset(t, 0, sizeof(*t));
	t->op = SNPU_OP_FENCE_WAIT;
	t->stream = stream;
	t->fence.fd = fence_fd;
}

static inline void snpu_prep_host_func(struct snpu_task *t, uint32_t stream,
				       uint64_t user_data)
{
	memset(t, 0, sizeof(*t));
	t->op = SNPU_OP_HOST_FUNC;
	t->stream = stream;
	t->user_data = user_data;
}

/*
 * An SQE that completes the callback the ring delivered with @cookie
 * (a completion flagged SNPU_CQE_F_CALLBACK), with @status 0 or a
 * -errno; SQ only (ABI 0.10).
 */
static inline void snpu_prep_callback_done(struct snpu_task *t,
					   uint32_t cookie, int32_t status)
{
	memset(t, 0, sizeof(*t));
	t->op = SNPU_OP_CALLBACK_DONE;
	t->callback.cookie = cookie;
	t->callback.status = status;
}

int snpu_submit(struct snpu_device *dev, const struct snpu_task *tasks,
		unsigned int count, uint64_t *seq);
int snpu_launch(struct snpu_device *dev, uint32_t stream, uint32_t kernel,
		uint32_t block_dim, const struct snpu_kernel_arg *args,
		unsigned int nargs);

/*
 * The block_dim of a launch sized to the device (LIBSNPU_0.10): enough
 * blocks to keep every core busy, none with less than SNPU_LAUNCH_MIN_WORK
 * of work (the units of SNPU_KERNEL_BLOCK_WORK_MAX: a core's chunk, about
 * half a millisecond of a GEMM under TCG), and as many more as the work
 * bound needs. See snpu_launch_dims(3).
 */
#define SNPU_LAUNCH_MIN_WORK	65536
int snpu_launch_dims(const struct snpu_info *info, uint32_t kernel,
		     const struct snpu_kernel_arg *args, unsigned int nargs);
int snpu_memcpy_async(struct snpu_device *dev, uint32_t stream, uint32_t dir,
		      uint64_t dst, uint64_t src, uint64_t bytes);
int snpu_memset_async(struct snpu_device *dev, uint32_t stream,
		      uint64_t addr, int value, uint64_t bytes);

/* ---- host callbacks --------------------------------------------------- */

/**
 * struct snpu_callback_info - a host-function task delivered to the process
 * @user_data: the task's user_data
 * @cookie: pass to snpu_callback_done()
 * @stream: the stream the task runs on
 */
struct snpu_callback_info {
	uint64_t user_data;
	uint32_t cookie;
	uint32_t stream;
};

int snpu_launch_host_func(struct snpu_device *dev, uint32_t stream,
			  uint64_t user_data);
int snpu_callback_wait(struct snpu_device *dev, int64_t timeout_ns,
		       struct snpu_callback_info *out);
int snpu_callback_done(struct snpu_device *dev, uint32_t cookie, int status);

/* ---- command queues (LIBSNPU_0.3) ------------------------------------- */

/*
 * A submission ring (SQ) of tasks and a completion ring (CQ) shared with
 * the kernel. One thread at a time may use the SQ side (get_sqe, submit)
 * and one the CQ side (peek, wait, seen) of a ring; both may be the same
 * thread. The memory ordering (see uapi/linux/snpu.h):
 *
 *   - entries are written, then the SQ tail is stored with release;
 *   - the SQ head is loaded with acquire before an entry is reused;
 *   - with SNPU_RING_SQPOLL, a full fence separates the tail store from
 *     reading SNPU_SQ_NEED_WAKEUP;
 *   - the CQ tail is loaded with acquire before entries are read, and the
 *     CQ head stored with release after they were.
 */

/**
 * struct snpu_ring - the library's view of a context's command queues
 * @fd: the device file
 * @flags: SNPU_RING_* as set up
 * @mem: the mapping
 * @bytes: its length
 * @sq: SQ: kernel head, tail, flags, counter; mask, entries; entries;
 *      the entries handed out (@sqe_tail) and published (@sqe_head)
 * @cq: CQ: kernel head, tail, flags, counter; mask, entries; entries
 *
 * Filled by snpu_ring_init(), or snpu_ring_attach() for rings the file
 * has already (restored from a checkpoint); read the fields, do not
 * change them.
 */
struct snpu_ring {
	int fd;
	unsigned int flags;
	void *mem;
	size_t bytes;
	struct {
		uint32_t *khead, *ktail, *kflags, *kdropped;
		uint32_t mask, entries;
		struct snpu_task *sqes;
		uint32_t sqe_head, sqe_tail;
	} sq;
	struct {
		uint32_t *khead, *ktail, *kflags, *koverflow;
		uint32_t mask, entries;
		struct snpu_cqe *cqes;
	} cq;
};

int snpu_ring_init(struct snpu_device *dev, unsigned int entries,
		   unsigned int flags, struct snpu_ring *ring);
int snpu_ring_init_params(struct snpu_device *dev,
			  struct snpu_ring_setup *params,
			  struct snpu_ring *ring);
int snpu_ring_attach(struct snpu_device *dev, struct snpu_ring *ring);
void snpu_ring_exit(struct snpu_ring *ring);
int snpu_ring_enter(struct snpu_ring *ring, unsigned int to_submit,
		    unsigned int min_complete, unsigned int flags,
		    int64_t timeout_ns);
int snpu_ring_submit(struct snpu_ring *ring);
int snpu_ring_submit_and_wait(struct snpu_ring *ring, unsigned int wait_nr);
int snpu_ring_wait_cqe(struct snpu_ring *ring, struct snpu_cqe **cqe);

/*
 * The next free SQ entry, zeroed, or NULL when the SQ is full. Fill it
 * with a snpu_prep_*() helper, then snpu_ring_submit().
 */
static inline struct snpu_task *snpu_ring_get_sqe(struct snpu_ring *ring)
{
	uint32_t head = __atomic_load_n(ring->sq.khead, __ATOMIC_ACQUIRE);
	struct snpu_task *sqe;

	if (ring->sq.sqe_tail - head >= ring->sq.entries)
		return NULL;
	sqe = &ring->sq.sqes[ring->sq.sqe_tail++ & ring->sq.mask];
	memset(sqe, 0, sizeof(*sqe));
	return sqe;
}

/* Completions waiting in the CQ. */
static inline unsigned int snpu_ring_cq_ready(const struct snpu_ring *ring)
{
	return __atomic_load_n(ring->cq.ktail, __ATOMIC_ACQUIRE) -
	       *ring->cq.khead;
}

/* The oldest completion without waiting: 0, or -EAGAIN when none. */
static inline int snpu_ring_peek_cqe(struct snpu_ring *ring,
				     struct snpu_cqe **cqe)
{
	uint32_t head = *ring->cq.khead;

	if (__atomic_load_n(ring->cq.ktail, __ATOMIC_ACQUIRE) == head)
		return -EAGAIN;
	*cqe = &ring->cq.cqes[head & ring->cq.mask];
	return 0;
}

/* Hand @n completions back to the kernel. */
static inline void snpu_ring_cq_advance(struct snpu_ring *ring,
					unsigned int n)
{
	__atomic_store_n(ring->cq.khead, *ring->cq.khead + n,
			 __ATOMIC_RELEASE);
}

/* The completion from peek or wait has been read. */
static inline void snpu_ring_cqe_seen(struct snpu_ring *ring,
				      struct snpu_cqe *cqe)
{
	(void)cqe;
	snpu_ring_cq_advance(ring, 1);
}

/*
 * Not a completion but a host callback waiting for the process (rings
 * set up with SNPU_RING_CALLBACK_CQE): its cookie is cqe->callback.cookie.
 */
static inline int snpu_cqe_is_callback(const struct snpu_cqe *cqe)
{
	return !!(cqe->flags & SNPU_CQE_F_CALLBACK);
}

/* ---- owners and attached streams (LIBSNPU_0.4) ------------------------ */

/*
 * An owner is an executor instance: it requests extra streams by key and
 * owns them. Lookups are cached in the owner: a hit takes no lock and
 * allocates nothing; a miss asks the driver once. Calls on one owner may
 * run concurrently, except snpu_owner_destroy().
 */
struct snpu_owner;

int snpu_owner_create(struct snpu_device *dev, int priority,
		      struct snpu_owner **owner);
int snpu_owner_destroy(struct snpu_owner *owner);
uint32_t snpu_owner_handle(const struct snpu_owner *owner);
int snpu_owner_attached_stream(struct snpu_owner *owner, const char *key,
			       uint32_t *stream);

/*
 * The context an operator runs with: its device, its stream, and the
 * attached streams of its owner. The operator must join the work it puts
 * on attached streams back into its stream (record an event on the
 * attached stream, make its stream wait for it) before it returns.
 */
struct snpu_op_ctx;
typedef int (*snpu_op_fn)(struct snpu_op_ctx *ctx, void *arg);

int snpu_op_run(struct snpu_owner *owner, uint32_t stream, const char *name,
		snpu_op_fn fn, void *arg);
uint32_t snpu_op_ctx_stream(const struct snpu_op_ctx *ctx);
struct snpu_device *snpu_op_ctx_device(const struct snpu_op_ctx *ctx);
int snpu_op_ctx_request_attached_stream(struct snpu_op_ctx *ctx,
					const char *key, uint32_t *stream);

/* ---- process snapshot (LIBSNPU_0.5) ----------------------------------- */

/*
 * The snapshot state belongs to the process and covers every snpu file it
 * has open, on every device: RUNNING -> LOCKED (modifying calls of other
 * threads block, the locking thread's get -EDEADLK) -> BACKED_UP (an image
 * of device memory and objects is saved) -> RESTORE -> LOCKED -> UNLOCK ->
 * RUNNING. A step takes the devices whose stage callbacks it runs, in
 * order; the kernel call is made once, through devs[0]. A callback that
 * returns non-zero aborts the step, which is then rolled back to the state
 * before it (UNLOCK_POST excepted: an unlock is never undone). See
 * Documentation/snapshot.rst.
 */
#define SNPU_SNAPSHOT_LOCK_PRE		0	/* RUNNING, before LOCK */
#define SNPU_SNAPSHOT_BACKUP_PRE	1	/* before BACKUP */
#define SNPU_SNAPSHOT_BACKUP_POST	2	/* BACKED_UP, after BACKUP */
#define SNPU_SNAPSHOT_RESTORE_PRE	3	/* BACKED_UP, before RESTORE */
#define SNPU_SNAPSHOT_RESTORE_POST	4	/* LOCKED, after RESTORE */
#define SNPU_SNAPSHOT_UNLOCK_POST	5	/* RUNNING, after UNLOCK */
#define SNPU_SNAPSHOT_STAGES		6

/* Return 0 to go on, a negative errno to abort the step. */
typedef int (*snpu_snapshot_cb)(struct snpu_device *dev, unsigned int stage,
				void *arg);

int snpu_snapshot_lock(struct snpu_device *const *devs, unsigned int ndev,
		       int64_t timeout_ns);
int snpu_snapshot_backup(struct snpu_device *const *devs, unsigned int ndev,
			 uint64_t *image_bytes);
int snpu_snapshot_restore(struct snpu_device *const *devs,
			  unsigned int ndev);
int snpu_snapshot_unlock(struct snpu_device *const *devs, unsigned int ndev);
int snpu_snapshot_get_state(struct snpu_device *dev,
			    struct snpu_snapshot *out);
int snpu_snapshot_callback_register(struct snpu_device *dev,
				    unsigned int stage, snpu_snapshot_cb fn,
				    void *arg);
int snpu_snapshot_callback_unregister(struct snpu_device *dev,
				      unsigned int stage);

/*
 * Background threads: a registered thread must reach a safe point
 * (snpu_bg_checkpoint()) for LOCK to complete. The checkpoint of a running
 * process reads the mapped state page and makes no system call; it parks
 * the thread (returns 1 once resumed) while the process is locked.
 */
int snpu_bg_register(struct snpu_device *dev);
int snpu_bg_unregister(struct snpu_device *dev);
int snpu_bg_checkpoint(struct snpu_device *dev);

/* ---- checkpoint to a file (LIBSNPU_0.14) ------------------------------ */

/*
 * The process @pid (0: the caller's), through any device the caller has
 * open: get its state, lock it, write the image of its device state into
 * @fd (locked: LOCK first), unlock it. Another process needs the caller
 * to be allowed to ptrace it (-EPERM). A restore recreates context @index
 * of the image in @fd in the fresh device file @dev: same handles, device
 * addresses and mmap offsets. snpu_ckpt_image_devices() lists the device
 * of each context of an image (the device map's "old"). See
 * Documentation/checkpoint.rst.
 */
int snpu_ckpt_get_state(struct snpu_device *dev, pid_t pid, uint32_t *state);
int snpu_ckpt_lock(struct snpu_device *dev, pid_t pid, int64_t timeout_ns);
int snpu_ckpt_checkpoint(struct snpu_device *dev, pid_t pid, int fd,
			 uint64_t *bytes);
int snpu_ckpt_unlock(struct snpu_device *dev, pid_t pid);
int snpu_ckpt_restore(struct snpu_device *dev, int fd, uint32_t index,
		      uint32_t *dev_index);
int snpu_ckpt_image_devices(int fd, uint32_t *devs, unsigned int max);

/* ---- graphs (LIBSNPU_0.7) --------------------------------------------- */

/**
 * struct snpu_graph_desc - a graph definition for snpu_graph_create()
 * @nodes: @nodes_count nodes (see struct snpu_graph_node)
 * @fanin_offsets: @nodes_count + 1 offsets into @fanin; NULL when
 *                 @edges_count is 0
 * @fanin: @edges_count predecessor indices; NULL when @edges_count is 0
 * @slot_bytes: @slots_count slot extents; NULL when @slots_count is 0
 * @scratch_bytes: bytes of scratch each launch passes, 0 for none
 * @nodes_count: 1 to SNPU_GRAPH_MAX_NODES
 * @edges_count: 0 to SNPU_GRAPH_MAX_EDGES
 * @slots_count: 0 to SNPU_GRAPH_MAX_SLOTS
 * @pad: must be zero
 */
struct snpu_graph_desc {
	const struct snpu_graph_node *nodes;
	const uint32_t *fanin_offsets;
	const uint32_t *fanin;
	const uint64_t *slot_bytes;
	uint64_t scratch_bytes;
	uint32_t nodes_count;
	uint32_t edges_count;
	uint32_t slots_count;
	uint32_t pad;
};

int snpu_graph_create(struct snpu_device *dev,
		      const struct snpu_graph_desc *desc, uint32_t *graph);
int snpu_graph_destroy(struct snpu_device *dev, uint32_t graph);

/*
 * A launch of @graph on @stream: one task. The first @slots_count (at most
 * SNPU_GRAPH_MAX_SLOTS; the rest are ignored) addresses of @slots bind the
 * graph's boundary slots; @scratch is its scratch (0 when it has none).
 */
static inline void snpu_prep_graph(struct snpu_task *t, uint32_t stream,
				   uint32_t graph, const uint64_t *slots,
				   unsigned int slots_count, uint64_t scratch)
{
	unsigned int i;

	memset(t, 0, sizeof(*t));
	t->op = SNPU_OP_GRAPH;
	t->stream = stream;
	t->graph.graph = graph;
	t->graph.scratch = scratch;
	for (i = 0; slots && i < slots_count && i < SNPU_GRAPH_MAX_SLOTS; i++)
		t->graph.slots[i] = slots[i];
}

int snpu_graph_launch(struct snpu_device *dev, uint32_t stream,
		      uint32_t graph, const uint64_t *slots,
		      unsigned int slots_count, uint64_t scratch);

/*
 * Capture: record the work a body puts on one stream as a graph, cached in
 * the device under a key, and launch it as one task:
 *
 *	ret = snpu_graph_begin(dev, stream, key);
 *	if (ret == 0) {
 *		... the body: snpu_submit() and the calls built on it ...
 *		ret = snpu_graph_end(dev);
 *	}
 *
 * snpu_graph_begin() returns SNPU_GRAPH_CACHED when @key is cached: the
 * graph was launched, skip the body and do not call snpu_graph_end().
 * snpu_graph_end() returns 0 when the body ran as one graph launch, or
 * SNPU_GRAPH_NOT_RECORDED when it could not be expressed and its tasks
 * went the ordinary way. snpu_graph_begin_ring() records what the body
 * puts in @ring's SQ instead; snpu_graph_begin_slots() (either transport)
 * binds the body's boundary buffers as slots, which each launch of the
 * cached graph may place elsewhere. See
 * Documentation/lib/snpu_graph_begin.rst.
 */
#define SNPU_GRAPH_CACHED		1
#define SNPU_GRAPH_NOT_RECORDED		2

int snpu_graph_begin(struct snpu_device *dev, uint32_t stream, uint64_t key);
int snpu_graph_begin_ring(struct snpu_device *dev, struct snpu_ring *ring,
			  uint32_t stream, uint64_t key, uint64_t user_data);
int snpu_graph_begin_slots(struct snpu_device *dev, struct snpu_ring *ring,
			   uint32_t stream, uint64_t key, uint64_t user_data,
			   const uint64_t *slots, const uint64_t *slot_bytes,
			   unsigned int slots_count);
int snpu_graph_end(struct snpu_device *dev);
int snpu_graph_forget(struct snpu_device *dev, uint64_t key);

/* ---- communicators and collectives (LIBSNPU_0.11) --------------------- */

/*
 * NCCL's model: one process draws a unique id (a secret of
 * SNPU_COMM_ID_BYTES random bytes) and shares it out of band; each rank
 * joins with it on its own device (a file of any device, in any process
 * of the same effective user); collectives are then queued on the ranks'
 * streams, asynchronously: a call returns 0 once the collective is
 * queued, and its result arrives as any task's does (stream sync, events,
 * completions). The k-th collective a rank queues matches the k-th of
 * every other rank. See Documentation/lib/snpu_comm_init_rank.rst and
 * the "Collectives" section of Documentation/userspace-api.rst.
 *
 * A struct snpu_comm is one rank. Calls on one may run concurrently,
 * except snpu_comm_destroy() and snpu_comm_abort(), which free it; it
 * belongs to its device, and is destroyed before the device is closed.
 */
struct snpu_comm;

struct snpu_comm_unique_id {
	uint8_t id[SNPU_COMM_ID_BYTES];
};

int snpu_comm_get_unique_id(struct snpu_device *dev,
			    struct snpu_comm_unique_id *id);
int snpu_comm_init_rank(struct snpu_device *dev,
			const struct snpu_comm_unique_id *id,
			unsigned int nranks, unsigned int rank,
			struct snpu_comm **comm);
int snpu_comm_init_all(struct snpu_device *const *devs, unsigned int ndev,
		       struct snpu_comm **comms);
int snpu_comm_destroy(struct snpu_comm *comm);
int snpu_comm_abort(struct snpu_comm *comm);
int snpu_comm_count(const struct snpu_comm *comm);
int snpu_comm_user_rank(const struct snpu_comm *comm);
uint32_t snpu_comm_handle(const struct snpu_comm *comm);
struct snpu_device *snpu_comm_device(const struct snpu_comm *comm);
int snpu_comm_query(struct snpu_comm *comm, struct snpu_comm_query *q);

int snpu_comm_allreduce(struct snpu_comm *comm, uint32_t stream,
			uint64_t send, uint64_t recv, uint64_t count,
			uint32_t dtype, uint32_t redop);
int snpu_comm_broadcast(struct snpu_comm *comm, uint32_t stream,
			uint64_t send, uint64_t recv, uint64_t count,
			uint32_t dtype, unsigned int root);
int snpu_comm_allgather(struct snpu_comm *comm, uint32_t stream,
			uint64_t send, uint64_t recv, uint64_t count,
			uint32_t dtype);
int snpu_comm_reduce_scatter(struct snpu_comm *comm, uint32_t stream,
			     uint64_t send, uint64_t recv, uint64_t count,
			     uint32_t dtype, uint32_t redop);

/*
 * A collective task (SNPU_OP_COLL) of the rank @comm_handle
 * (snpu_comm_handle()) on @stream, for a batch of snpu_submit(), an SQE
 * or a graph node: @redop is 0 but for SNPU_COLL_ALLREDUCE and
 * SNPU_COLL_REDUCE_SCATTER, @root 0 but for SNPU_COLL_BROADCAST.
 */
static inline void snpu_prep_coll(struct snpu_task *t, uint32_t stream,
				  uint32_t comm_handle, uint32_t coll,
				  uint32_t dtype, uint32_t redop,
				  uint64_t count, uint64_t send,
				  uint64_t recv, uint32_t root)
{
	memset(t, 0, sizeof(*t));
	t->op = SNPU_OP_COLL;
	t->stream = stream;
	t->coll.comm = comm_handle;
	t->coll.coll = coll;
	t->coll.dtype = dtype;
	t->coll.redop = redop;
	t->coll.count = count;
	t->coll.send = send;
	t->coll.recv = recv;
	t->coll.root = root;
}

#ifdef __cplusplus
}
#endif

#endif /* LIBSNPU_SNPU_H */
