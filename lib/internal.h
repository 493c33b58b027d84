/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libsnpu internals shared by the files of the library. Not installed.
 */
#ifndef LIBSNPU_INTERNAL_H
#define LIBSNPU_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/ioctl.h>

#include "snpu.h"

struct snpu_joins;
struct snpu_capture;

/* Buckets of a device's cache of graphs by key (graph.c). */
#define SNPU_GRAPH_BUCKET_BITS	6
#define SNPU_GRAPH_BUCKETS	(1U << SNPU_GRAPH_BUCKET_BITS)
struct snpu_graph_cached;
struct snpu_graph_ops;

/* A stage callback of the process snapshot (snapshot.c). */
struct snpu_snap_cb {
	snpu_snapshot_cb fn;
	void *arg;
};

/*
 * An open device: the file descriptor of one kernel context, the join
 * bookkeeping of the operator check when it is on (see op.c), and the
 * snapshot's per-device state (see snapshot.c): @snap_lock protects
 * @snap_cb (held only to copy or change an entry, never across a
 * callback); @state_page is the read-only mapping of the process's state
 * page, NULL until the first snpu_bg_checkpoint(), published with a
 * release store.
 */
struct snpu_device {
	int fd;
	struct snpu_joins *joins;
	pthread_mutex_t snap_lock;
	struct snpu_snap_cb snap_cb[SNPU_SNAPSHOT_STAGES];
	const struct snpu_state_page *_Atomic state_page;
	struct snpu_capture *_Atomic capture;
	_Atomic uint32_t capture_stream;
	pthread_mutex_t graph_lock;
	struct snpu_graph_cached *graphs[SNPU_GRAPH_BUCKETS];
	const struct snpu_graph_ops *graph_ops;
};

/*
 * The device's graph fields (graph.c): @capture is the capture in progress
 * (at most one per device), NULL when none: snpu_submit() and the rings
 * look at it first; @capture_stream is its stream, stored before it.
 * @graph_lock protects @graphs, the hash table of the definitions cached
 * by key, and the capture's state. @graph_ops, NULL for the driver, lets
 * the unit tests and benchmarks see what would be created and submitted
 * (@comm_query, NULL in a double that has no communicator, answers for
 * the rank handles a captured collective names).
 */
struct snpu_graph_ops {
	int (*create)(struct snpu_device *dev,
		      const struct snpu_graph_desc *desc, uint32_t *graph);
	int (*destroy)(struct snpu_device *dev, uint32_t graph);
	int (*submit)(struct snpu_device *dev, const struct snpu_task *tasks,
		      unsigned int count, uint64_t *seq);
	int (*comm_query)(struct snpu_device *dev, uint32_t handle,
			  struct snpu_comm_query *q);
	uint64_t caps;
};

void snpu_graph_init(struct snpu_device *dev);
void snpu_graph_fini(struct snpu_device *dev);

/* task.c, ring.c: the ordinary paths, without the capture's routing. */
int snpu_submit_direct(struct snpu_device *dev, const struct snpu_task *tasks,
		       unsigned int count, uint64_t *seq);
int snpu_ring_submit_direct(struct snpu_ring *ring, unsigned int wait_nr);

/* graph.c: the routing of snpu_submit() and of a ring under capture. */
int snpu_capture_submit(struct snpu_device *dev, const struct snpu_task *tasks,
			unsigned int count, uint64_t *seq);
int snpu_capture_ring_submit(struct snpu_ring *ring, unsigned int wait_nr);

/*
 * A library-only bit of struct snpu_ring's @flags: the ring's SQ side is
 * turned to a capture's buffer (see graph.c); never passed to the kernel.
 */
#define SNPU_RING_LIB_CAPTURE	(1U << 31)

/* core.c: the kernel's own checks of a task (kmod/core). */
int snpu_task_check(const struct snpu_task *t);
uint32_t snpu_kernel_buffers(uint32_t kernel);
uint32_t snpu_kernel_writes(uint32_t kernel);
int snpu_coll_ranges(const struct snpu_task *t, uint32_t nranks,
		     uint32_t rank, uint64_t *send_bytes, uint64_t *recv_bytes);

/* comm.c: SNPU_IOC_COMM_QUERY of a rank handle of @dev's file. */
int snpu_comm_query_handle(struct snpu_device *dev, uint32_t handle,
			   struct snpu_comm_query *q);

/*
 * The recorder (capture.c): a graph definition built from tasks, with
 * edges from the device ranges each node reads and writes.
 *
 * @nodes, @fanin_offsets (@nodes_count + 1 entries) and @fanin make the
 * definition as SNPU_IOC_GRAPH_CREATE takes it; the predecessors of each
 * node are sorted and unique. @acc is the access table: ranges with the
 * node that last wrote them or read them since, in order of start;
 * @acc_maxlen is the longest range ever entered, @pieces room for the
 * pieces a trim moves. @events are the events recorded by the body,
 * which a wait in the body may name. @slot_base and @slot_bytes are the
 * boundary slots (@slots_count of them, disjoint), set before recording.
 */
struct snpu_rec_access {
	uint64_t lo, hi;	/* [lo, hi) */
	uint32_t node;
	uint32_t write;
};

struct snpu_rec {
	struct snpu_graph_node *nodes;
	uint32_t *fanin_offsets;
	uint32_t *fanin;
	struct snpu_rec_access *acc;
	struct snpu_rec_access *pieces;
	uint32_t *events;
	uint64_t acc_maxlen;
	uint64_t slot_base[SNPU_GRAPH_MAX_SLOTS];
	uint64_t slot_bytes[SNPU_GRAPH_MAX_SLOTS];
	uint32_t slots_count;
	uint32_t nodes_count, nodes_cap, offsets_cap;
	uint32_t edges_count, edges_cap;
	uint32_t acc_count, acc_cap, pieces_cap;
	uint32_t events_count, events_cap;
};

/* snpu_rec_add(): the task cannot be expressed in a graph. */
#define SNPU_REC_UNSUPPORTED	1

void snpu_rec_init(struct snpu_rec *r);
void snpu_rec_fini(struct snpu_rec *r);
int snpu_rec_check(const struct snpu_task *t, uint64_t caps);
int snpu_rec_add(struct snpu_rec *r, const struct snpu_task *t);
int snpu_rec_add_coll(struct snpu_rec *r, const struct snpu_task *t,
		      uint32_t nranks, uint32_t rank);
int snpu_rec_desc(const struct snpu_rec *r, struct snpu_graph_desc *desc);

/* snapshot.c: set up and tear down the snapshot fields of a device. */
void snpu_snapshot_init(struct snpu_device *dev);
void snpu_snapshot_fini(struct snpu_device *dev);

/* op.c: the captures a batch's waits name before and after submission. */
struct snpu_join_cap;
struct snpu_join_cap *snpu_joins_before(struct snpu_device *dev,
					const struct snpu_task *tasks,
					unsigned int count);
void snpu_joins_note(struct snpu_device *dev, const struct snpu_task *tasks,
		     unsigned int count, struct snpu_join_cap *caps);
int snpu_joins_init(struct snpu_device *dev, unsigned int flags);
void snpu_joins_fini(struct snpu_device *dev);

/* Buckets of an owner's cache of attached streams. */
#define SNPU_OWNER_BUCKET_BITS	6
#define SNPU_OWNER_BUCKETS	(1U << SNPU_OWNER_BUCKET_BITS)

/*
 * One cached attached stream. Immutable once published in a bucket; freed
 * with the owner.
 */
struct snpu_attached {
	struct snpu_attached *next;	/* bucket chain */
	struct snpu_attached *all;	/* every entry, for freeing */
	size_t len;
	uint32_t stream;
	char key[SNPU_ATTACHED_KEY_MAX];
};

struct snpu_owner;
/* How a miss creates or finds the stream: the driver, or a test double. */
typedef int (*snpu_owner_get_fn)(struct snpu_owner *owner, const char *key,
				 size_t len, uint32_t *stream);

/*
 * An owner: its kernel handle and its cache. @lock serializes misses
 * (and protects @all); hits read @bucket without it.
 */
struct snpu_owner {
	struct snpu_device *dev;
	uint32_t handle;
	snpu_owner_get_fn get;
	pthread_mutex_t lock;
	struct snpu_attached *all;
	struct snpu_attached *_Atomic bucket[SNPU_OWNER_BUCKETS];
};

int snpu_owner_init(struct snpu_owner *owner, struct snpu_device *dev,
		    snpu_owner_get_fn get);
void snpu_owner_fini(struct snpu_owner *owner);
int snpu_owner_lookup(struct snpu_owner *owner, const char *key,
		      struct snpu_attached **ap);

/* Attached streams an operator context remembers for the join check. */
#define SNPU_OP_TRACKED		16

/* The context of one operator call (snpu_op_run()). */
struct snpu_op_ctx {
	struct snpu_owner *owner;
	uint32_t stream;
	const char *name;
	unsigned int ntracked;
	unsigned int untracked;
	struct snpu_attached *tracked[SNPU_OP_TRACKED];
};

/*
 * Issue a command that does not block in the kernel; an EINTR (which such
 * a command does not return today) is retried.
 *
 * Return: the ioctl's non-negative result, or -errno.
 */
static inline int snpu_ioctl(int fd, unsigned long cmd, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, cmd, arg);
	} while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : ret;
}

/*
 * Issue a command that may block (synchronize, callback wait, stream
 * destroy, ENTER). A wait without timeout interrupted by a signal whose
 * handler has SA_RESTART is restarted by the kernel; a timed wait, or any
 * wait without SA_RESTART, gives the caller -EINTR, so that a signal can
 * end a wait, as with read(2).
 *
 * Return: 0, or -errno.
 */
static inline int snpu_ioctl_wait(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

/*
 * A command on one handle (struct snpu_handle_op): host free, stream
 * destroy, abort and reset, event destroy. @wait picks snpu_ioctl_wait().
 */
static inline int snpu_ioctl_handle(const struct snpu_device *dev,
				    unsigned long cmd, uint32_t handle,
				    uint32_t flags, int wait)
{
	struct snpu_handle_op op = {
		.size = sizeof(op),
		.flags = flags,
		.handle = handle,
	};

	if (!dev)
		return -EINVAL;
	return wait ? snpu_ioctl_wait(dev->fd, cmd, &op) :
		      snpu_ioctl(dev->fd, cmd, &op);
}

#endif /* LIBSNPU_INTERNAL_H */
