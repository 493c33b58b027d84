// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libsnpu: graphs - the wrappers of SNPU_IOC_GRAPH_CREATE/DESTROY and of
 * the graph launch, and capture: the work a body puts on one stream is
 * recorded off the queues (capture.c builds the definition), created as a
 * graph at snpu_graph_end(), cached in the device under the caller's key
 * and launched as one task; a later snpu_graph_begin() of the key only
 * launches it.
 *
 * While a capture is in progress, snpu_submit() and the capture's ring
 * come here (dev->capture). A task of the captured stream is checked as
 * the kernel would check it, kept as given (for the fallback) and handed
 * to the recorder; nothing is queued for it. Tasks of other streams go on
 * as usual. When the body does something a graph cannot express, the
 * capture "breaks": the tasks kept so far are submitted the ordinary way
 * in their order, and the rest of the body goes the ordinary way too;
 * snpu_graph_end() then reports SNPU_GRAPH_NOT_RECORDED.
 *
 * A collective of the captured stream becomes a collective node: its
 * extents and checks depend on the communicator its rank handle names,
 * which the capture asks the driver for once per handle
 * (SNPU_IOC_COMM_QUERY) and keeps. Like every node of the graph, the
 * collective is queued, and matched with the other ranks' k-th, when
 * the graph is launched, not when the body runs.
 *
 * A ring capture turns the SQ side of the caller's struct snpu_ring to a
 * buffer of the capture (the same number of entries): snpu_ring_get_sqe()
 * hands out the buffer's entries, and snpu_ring_submit() (which sees
 * SNPU_RING_LIB_CAPTURE in ring->flags) brings them here. The ring's own
 * fields are put back when the capture ends or breaks.
 *
 * Locking: dev->graph_lock protects the cache and the capture; every call
 * that routes a task through a capture holds it for that call.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/*
 * Most events a recorded body may record: each is recorded again after
 * every launch of its graph, in the launch's batch.
 */
#define SNPU_GRAPH_MAX_EVENTS	16

/*
 * One cached definition: the graph created for @key, the events its body
 * recorded, and the extents of its boundary slots.
 */
struct snpu_graph_cached {
	struct snpu_graph_cached *next;
	uint64_t key;
	uint32_t graph;
	uint32_t events_count;
	uint32_t events[SNPU_GRAPH_MAX_EVENTS];
	uint32_t slots_count;
	uint64_t slot_bytes[SNPU_GRAPH_MAX_SLOTS];
};

/* A rank handle a captured collective names, as the driver reported it. */
struct snpu_capture_comm {
	uint32_t handle;
	uint32_t nranks;
	uint32_t rank;
};

/* The boundary slots a begin names: @count addresses and extents. */
struct snpu_graph_bind {
	const uint64_t *slots;
	const uint64_t *bytes;
	unsigned int count;
};

/**
 * struct snpu_capture - a capture in progress
 * @dev: the device
 * @ring: the ring of snpu_graph_begin_ring(), NULL for SNPU_IOC_SUBMIT
 * @stream: the captured stream
 * @key: the key the definition is cached under
 * @user_data: the launch's user_data (ring)
 * @caps: snpu_info.caps, for the checks of snpu_rec_check()
 * @broken: the body went to the ordinary path
 * @closing: snpu_graph_end() has it: tasks of the stream go on as usual
 * @error: the first error of that path, returned by snpu_graph_end()
 * @last: the result of the last batch that path submitted
 * @last_seq: the sequence number that batch got
 * @rec: the definition being recorded
 * @slots: the slot addresses of this invocation
 * @tasks: the captured tasks as given, in order
 * @batches: where each snpu_submit() batch of @tasks ends
 * @real: the SQ fields of @ring that the capture replaced
 * @sqbuf: the capture's SQ entries (ring)
 * @bhead: the head of @sqbuf: ring->sq.khead points here
 * @btail: ring->sq.ktail points here (never used)
 * @comms: the rank handles the body's collectives named (@comms_count)
 */
struct snpu_capture {
	struct snpu_device *dev;
	struct snpu_ring *ring;
	uint32_t stream;
	uint64_t key;
	uint64_t user_data;
	uint64_t caps;
	int broken;
	int closing;
	int error;
	int last;
	uint64_t last_seq;
	struct snpu_rec rec;
	uint64_t slots[SNPU_GRAPH_MAX_SLOTS];
	struct snpu_task *tasks;
	uint32_t tasks_count, tasks_cap;
	uint32_t *batches;
	uint32_t batches_count, batches_cap;
	struct {
		uint32_t *khead, *ktail;
		uint32_t mask, entries;
		struct snpu_task *sqes;
		uint32_t sqe_head, sqe_tail;
	} real;
	struct snpu_task *sqbuf;
	uint32_t bhead;
	uint32_t btail;
	struct snpu_capture_comm comms[SNPU_COMM_MAX_PER_FILE];
	uint32_t comms_count;
};

/* ---- the wrappers ------------------------------------------------------ */

int snpu_graph_create(struct snpu_device *dev,
		      const struct snpu_graph_desc *desc, uint32_t *graph)
{
	struct snpu_graph_create c;
	int ret;

	if (!dev || !desc || !graph || desc->pad)
		return -EINVAL;
	if (dev->graph_ops)
		return dev->graph_ops->create(dev, desc, graph);
	memset(&c, 0, sizeof(c));
	c.size = sizeof(c);
	c.nodes_count = desc->nodes_count;
	c.edges_count = desc->edges_count;
	c.slots_count = desc->slots_count;
	c.node_size = sizeof(*desc->nodes);
	c.nodes = (uintptr_t)desc->nodes;
	c.fanin_offsets = (uintptr_t)desc->fanin_offsets;
	c.fanin = (uintptr_t)desc->fanin;
	c.slot_bytes = (uintptr_t)desc->slot_bytes;
	c.scratch_bytes = desc->scratch_bytes;
	ret = snpu_ioctl(dev->fd, SNPU_IOC_GRAPH_CREATE, &c);
	if (ret)
		return ret;
	*graph = c.graph;
	return 0;
}

int snpu_graph_destroy(struct snpu_device *dev, uint32_t graph)
{
	if (dev && dev->graph_ops)
		return dev->graph_ops->destroy(dev, graph);
	return snpu_ioctl_handle(dev, SNPU_IOC_GRAPH_DESTROY, graph, 0, 0);
}

int snpu_graph_launch(struct snpu_device *dev, uint32_t stream,
		      uint32_t graph, const uint64_t *slots,
		      unsigned int slots_count, uint64_t scratch)
{
	struct snpu_task t;

	if (slots_count > SNPU_GRAPH_MAX_SLOTS || (slots_count && !slots))
		return -EINVAL;
	snpu_prep_graph(&t, stream, graph, slots, slots_count, scratch);
	return snpu_submit(dev, &t, 1, NULL);
}

/* ---- the device's part ------------------------------------------------- */

void snpu_graph_init(struct snpu_device *dev)
{
	pthread_mutex_init(&dev->graph_lock, NULL);
	atomic_store_explicit(&dev->capture, NULL, memory_order_relaxed);
	memset(dev->graphs, 0, sizeof(dev->graphs));
}

static void snpu_capture_free(struct snpu_capture *cap)
{
	snpu_rec_fini(&cap->rec);
	free(cap->tasks);
	free(cap->batches);
	free(cap->sqbuf);
	free(cap);
}

static void snpu_ring_to_real(struct snpu_capture *cap);

/*
 * The graphs themselves go with the file. A capture still in progress is
 * dropped; its ring gets its own SQ side back.
 */
void snpu_graph_fini(struct snpu_device *dev)
{
	struct snpu_capture *cap;
	struct snpu_graph_cached *g;
	unsigned int i;

	cap = atomic_load_explicit(&dev->capture, memory_order_relaxed);
	if (cap) {
		if (cap->ring && (cap->ring->flags & SNPU_RING_LIB_CAPTURE))
			snpu_ring_to_real(cap);
		snpu_capture_free(cap);
	}
	for (i = 0; i < SNPU_GRAPH_BUCKETS; i++) {
		while ((g = dev->graphs[i])) {
			dev->graphs[i] = g->next;
			free(g);
		}
	}
	pthread_mutex_destroy(&dev->graph_lock);
}

/* The chain of @key: a multiplicative hash of the key's 64 bits. */
static struct snpu_graph_cached **snpu_graph_bucket(struct snpu_device *dev,
						    uint64_t key)
{
	return &dev->graphs[(key * 0x9e3779b97f4a7c15ULL) >>
			    (64 - SNPU_GRAPH_BUCKET_BITS)];
}

static struct snpu_graph_cached **snpu_graph_find(struct snpu_device *dev,
						  uint64_t key)
{
	struct snpu_graph_cached **pp;

	for (pp = snpu_graph_bucket(dev, key); *pp; pp = &(*pp)->next)
		if ((*pp)->key == key)
			return pp;
	return NULL;
}

/* SNPU_IOC_SUBMIT without the capture's routing (or the test double). */
static int snpu_capture_direct(struct snpu_device *dev,
			       const struct snpu_task *tasks,
			       unsigned int count, uint64_t *seq)
{
	if (dev->graph_ops)
		return dev->graph_ops->submit(dev, tasks, count, seq);
	return snpu_submit_direct(dev, tasks, count, seq);
}

/* ---- the ring's SQ side ------------------------------------------------ */

/* Point @ring's SQ side at the capture's buffer. */
static void snpu_ring_to_buffer(struct snpu_capture *cap)
{
	struct snpu_ring *ring = cap->ring;

	cap->real.khead = ring->sq.khead;
	cap->real.ktail = ring->sq.ktail;
	cap->real.mask = ring->sq.mask;
	cap->real.entries = ring->sq.entries;
	cap->real.sqes = ring->sq.sqes;
	cap->real.sqe_head = ring->sq.sqe_head;
	cap->real.sqe_tail = ring->sq.sqe_tail;
	ring->sq.khead = &cap->bhead;
	ring->sq.ktail = &cap->btail;
	ring->sq.sqes = cap->sqbuf;
	ring->sq.sqe_head = cap->bhead;
	ring->sq.sqe_tail = cap->bhead;
	ring->flags |= SNPU_RING_LIB_CAPTURE;
}

/* Give @ring its own SQ side back. */
static void snpu_ring_to_real(struct snpu_capture *cap)
{
	struct snpu_ring *ring = cap->ring;

	ring->sq.khead = cap->real.khead;
	ring->sq.ktail = cap->real.ktail;
	ring->sq.mask = cap->real.mask;
	ring->sq.entries = cap->real.entries;
	ring->sq.sqes = cap->real.sqes;
	ring->sq.sqe_head = cap->real.sqe_head;
	ring->sq.sqe_tail = cap->real.sqe_tail;
	ring->flags &= ~SNPU_RING_LIB_CAPTURE;
}

/*
 * Put @t in the real SQ of @ring (which has its own fields), submitting
 * what is there to make room when it is full.
 */
static int snpu_ring_push(struct snpu_ring *ring, const struct snpu_task *t)
{
	struct snpu_task *sqe = snpu_ring_get_sqe(ring);
	int ret;

	if (!sqe) {
		ret = snpu_ring_submit_direct(ring, 0);
		if (ret < 0)
			return ret;
		sqe = snpu_ring_get_sqe(ring);
		if (!sqe)
			return -EBUSY;
	}
	*sqe = *t;
	return 0;
}

/* ---- breaking a capture ------------------------------------------------ */

/*
 * The body cannot be a graph: submit the tasks kept so far the ordinary
 * way, in order, batch by batch, and let the rest of the body go the
 * ordinary way. The caller was told each batch was taken, so a batch the
 * kernel refuses does not stop the ones after it, as it would not have
 * without capture; the first error is kept in @cap->error. The ring stops
 * at an error of its own (a full SQ).
 */
static void snpu_capture_break(struct snpu_capture *cap)
{
	uint32_t b, start = 0, i;
	int ret = 0, r;

	if (cap->broken)
		return;
	cap->broken = 1;
	snpu_rec_fini(&cap->rec);
	if (cap->ring) {
		if (cap->ring->flags & SNPU_RING_LIB_CAPTURE)
			snpu_ring_to_real(cap);
		for (i = 0; i < cap->tasks_count && !ret; i++)
			ret = snpu_ring_push(cap->ring, &cap->tasks[i]);
		if (!ret) {
			ret = snpu_ring_submit_direct(cap->ring, 0);
			ret = ret < 0 ? ret : 0;
		}
	} else {
		for (b = 0; b < cap->batches_count; b++) {
			r = snpu_capture_direct(cap->dev, cap->tasks + start,
						cap->batches[b] - start,
						&cap->last_seq);
			if (r && !ret)
				ret = r;
			cap->last = r;
			start = cap->batches[b];
		}
	}
	if (ret && !cap->error)
		cap->error = ret;
	cap->tasks_count = 0;
	cap->batches_count = 0;
}

/* Keep @count tasks of the captured stream, as one batch. */
static int snpu_capture_keep(struct snpu_capture *cap,
			     const struct snpu_task *tasks, unsigned int count)
{
	uint64_t want = (uint64_t)cap->tasks_count + count;
	uint32_t n;
	void *p;

	if (want > cap->tasks_cap) {
		n = cap->tasks_cap ? cap->tasks_cap : 64;
		while (n < want)
			n *= 2;
		p = realloc(cap->tasks, (size_t)n * sizeof(*cap->tasks));
		if (!p)
			return -ENOMEM;
		cap->tasks = p;
		cap->tasks_cap = n;
	}
	if (cap->batches_count == cap->batches_cap) {
		n = cap->batches_cap ? 2 * cap->batches_cap : 16;
		p = realloc(cap->batches, (size_t)n * sizeof(*cap->batches));
		if (!p)
			return -ENOMEM;
		cap->batches = p;
		cap->batches_cap = n;
	}
	memcpy(cap->tasks + cap->tasks_count, tasks, count * sizeof(*tasks));
	cap->tasks_count += count;
	cap->batches[cap->batches_count++] = cap->tasks_count;
	return 0;
}

/* Does @t of another stream wait for an event the body recorded? */
static int snpu_capture_waits_inside(const struct snpu_capture *cap,
				     const struct snpu_task *t)
{
	uint32_t i;

	if (t->op != SNPU_OP_STREAM_WAIT)
		return 0;
	for (i = 0; i < cap->rec.events_count; i++)
		if (cap->rec.events[i] == t->event.event)
			return 1;
	return 0;
}

/*
 * The rank the collective @t names: its size and rank, from the capture's
 * list or asked once of the driver.
 *
 * Return: 0; -ENOENT for a handle that names no rank of the file and
 * -ECONNRESET for a broken communicator, as SNPU_IOC_SUBMIT; or
 * SNPU_REC_UNSUPPORTED when the test double cannot tell.
 */
static int snpu_capture_comm(struct snpu_capture *cap,
			     const struct snpu_task *t, uint32_t *nranks,
			     uint32_t *rank)
{
	struct snpu_device *dev = cap->dev;
	struct snpu_comm_query q;
	uint32_t i;
	int ret;

	for (i = 0; i < cap->comms_count; i++) {
		if (cap->comms[i].handle == t->coll.comm) {
			*nranks = cap->comms[i].nranks;
			*rank = cap->comms[i].rank;
			return 0;
		}
	}
	if (dev->graph_ops && !dev->graph_ops->comm_query)
		return SNPU_REC_UNSUPPORTED;
	ret = dev->graph_ops ?
		dev->graph_ops->comm_query(dev, t->coll.comm, &q) :
		snpu_comm_query_handle(dev, t->coll.comm, &q);
	if (ret)
		return ret;
	if (q.error)
		return q.error;
	if (cap->comms_count < SNPU_COMM_MAX_PER_FILE)
		cap->comms[cap->comms_count++] = (struct snpu_capture_comm) {
			.handle = t->coll.comm,
			.nranks = q.nranks,
			.rank = q.rank,
		};
	*nranks = q.nranks;
	*rank = q.rank;
	return 0;
}

/*
 * The checks of a collective @t that SNPU_IOC_SUBMIT makes once it knows
 * the rank (see snpu_capture_comm(), and snpu_coll_ranges(): -EINVAL).
 */
static int snpu_capture_coll_check(struct snpu_capture *cap,
				   const struct snpu_task *t)
{
	uint32_t nranks, rank;
	uint64_t sb, rb;
	int ret;

	ret = snpu_capture_comm(cap, t, &nranks, &rank);
	if (ret)
		return ret;
	return snpu_coll_ranges(t, nranks, rank, &sb, &rb);
}

/*
 * Record one kept task; the capture breaks (with the task already kept)
 * when it cannot be expressed.
 */
static void snpu_capture_record(struct snpu_capture *cap,
				const struct snpu_task *t)
{
	uint32_t nranks, rank;
	int ret;

	if (t->op == SNPU_OP_COLL) {
		ret = snpu_capture_comm(cap, t, &nranks, &rank);
		if (!ret)
			ret = snpu_rec_add_coll(&cap->rec, t, nranks, rank);
	} else {
		ret = snpu_rec_add(&cap->rec, t);
	}
	if (ret)
		snpu_capture_break(cap);
}

/* ---- the routing of snpu_submit() -------------------------------------- */

/*
 * A batch during a capture. The tasks of the captured stream are checked
 * first, as the kernel checks them (a collective's with its rank), and
 * the batch refused as a whole on the first error. A batch wholly on the captured stream is recorded, and
 * *@seq set to 0: it has no sequence number yet. A batch wholly on other
 * streams goes on (the capture breaks first when one of its tasks waits
 * for an event the body recorded). A batch with both breaks the capture
 * and goes on, so that it stays all or nothing.
 */
static int snpu_capture_submit_locked(struct snpu_capture *cap,
				      const struct snpu_task *tasks,
				      unsigned int count, uint64_t *seq)
{
	struct snpu_device *dev = cap->dev;
	unsigned int i, mine = 0;
	int ret;

	for (i = 0; i < count; i++) {
		if (tasks[i].stream != cap->stream)
			continue;
		mine++;
		if (tasks[i].op == SNPU_OP_GRAPH)
			continue;	/* cannot be expressed: see below */
		ret = snpu_rec_check(&tasks[i], cap->caps);
		if (!ret && tasks[i].op == SNPU_OP_COLL)
			ret = snpu_capture_coll_check(cap, &tasks[i]);
		if (ret < 0)
			return ret;
	}
	if (mine < count) {
		for (i = 0; i < count && !mine; i++)
			if (snpu_capture_waits_inside(cap, &tasks[i]))
				break;
		if (mine || i < count)
			snpu_capture_break(cap);
		return snpu_capture_direct(dev, tasks, count, seq);
	}
	if (snpu_capture_keep(cap, tasks, count)) {
		snpu_capture_break(cap);
		return snpu_capture_direct(dev, tasks, count, seq);
	}
	for (i = 0; i < count && !cap->broken; i++)
		snpu_capture_record(cap, &tasks[i]);
	/* Broken by this batch: it was kept, and went out last. */
	if (cap->broken) {
		if (!cap->last && seq)
			*seq = cap->last_seq;
		return cap->last;
	}
	if (seq)
		*seq = 0;
	return 0;
}

int snpu_capture_submit(struct snpu_device *dev, const struct snpu_task *tasks,
			unsigned int count, uint64_t *seq)
{
	struct snpu_capture *cap;
	uint32_t stream;
	unsigned int i;
	int ret;

	/*
	 * A batch with no task of the captured stream and no wait (which
	 * might name an event the body recorded) has nothing to do with
	 * the capture: no lock.
	 */
	stream = atomic_load_explicit(&dev->capture_stream,
				      memory_order_acquire);
	for (i = 0; i < count; i++)
		if (tasks[i].stream == stream ||
		    tasks[i].op == SNPU_OP_STREAM_WAIT)
			break;
	if (i == count)
		return snpu_capture_direct(dev, tasks, count, seq);

	pthread_mutex_lock(&dev->graph_lock);
	cap = atomic_load_explicit(&dev->capture, memory_order_relaxed);
	if (!cap || cap->broken || cap->closing) {
		pthread_mutex_unlock(&dev->graph_lock);
		return snpu_capture_direct(dev, tasks, count, seq);
	}
	ret = snpu_capture_submit_locked(cap, tasks, count, seq);
	pthread_mutex_unlock(&dev->graph_lock);
	return ret;
}

/* ---- the routing of a ring --------------------------------------------- */

/*
 * The entries the body put in the capture's buffer, in order. Those of
 * the captured stream are recorded; a wait for completions, or an entry
 * that the kernel would refuse (its error then comes in a CQE, as
 * without capture), breaks the capture. Entries of other streams go to
 * the real SQ, submitted before this returns. A wait for completions
 * (@wait_nr) is left to the caller, who waits without the lock.
 *
 * Return: 0, or -errno.
 */
static int snpu_capture_ring_take(struct snpu_capture *cap,
				  unsigned int wait_nr)
{
	struct snpu_ring *ring = cap->ring;
	uint32_t tail = ring->sq.sqe_tail, pos;
	unsigned int passed = 0;
	struct snpu_task *t;
	int ret = 0;

	for (pos = cap->bhead; pos != tail && ret >= 0; pos++) {
		t = &cap->sqbuf[pos & cap->real.mask];
		if (!cap->broken && t->stream != cap->stream &&
		    snpu_capture_waits_inside(cap, t))
			snpu_capture_break(cap);
		if (cap->broken) {
			ret = cap->error ? cap->error :
					   snpu_ring_push(ring, t);
		} else if (t->stream != cap->stream) {
			/* The real SQ, for this one entry. */
			snpu_ring_to_real(cap);
			ret = snpu_ring_push(ring, t);
			cap->bhead = pos + 1;
			snpu_ring_to_buffer(cap);
			ring->sq.sqe_tail = tail;
			passed++;
		} else if (t->op == SNPU_OP_GRAPH ||
			   snpu_rec_check(t, cap->caps) ||
			   (t->op == SNPU_OP_COLL &&
			    snpu_capture_coll_check(cap, t)) ||
			   snpu_capture_keep(cap, t, 1)) {
			snpu_capture_break(cap);
			ret = cap->error ? cap->error :
					   snpu_ring_push(ring, t);
		} else {
			snpu_capture_record(cap, t);
		}
	}
	if (ret < 0)
		return ret;
	if (!cap->broken && wait_nr)
		snpu_capture_break(cap);
	if (cap->broken) {
		ret = snpu_ring_submit_direct(ring, 0);
		return ret < 0 ? ret : cap->error;
	}
	cap->bhead = tail;
	ring->sq.sqe_head = tail;
	if (passed) {
		snpu_ring_to_real(cap);
		ret = snpu_ring_submit_direct(ring, 0);
		snpu_ring_to_buffer(cap);
	}
	return ret < 0 ? ret : 0;
}

int snpu_capture_ring_submit(struct snpu_ring *ring, unsigned int wait_nr)
{
	struct snpu_capture *cap = (struct snpu_capture *)
		((char *)ring->sq.khead - offsetof(struct snpu_capture, bhead));
	unsigned int taken = ring->sq.sqe_tail - cap->bhead;
	int ret;

	pthread_mutex_lock(&cap->dev->graph_lock);
	ret = snpu_capture_ring_take(cap, wait_nr);
	pthread_mutex_unlock(&cap->dev->graph_lock);
	/* Broken by the wait: the ring is the caller's again. */
	if (!ret && wait_nr)
		ret = snpu_ring_submit_direct(ring, wait_nr);
	return ret < 0 ? ret : (int)taken;
}

/* ---- begin and end ----------------------------------------------------- */

/*
 * Launch @g on @stream, with its events recorded again after it, on the
 * capture's transport (the ring's entries with @user_data for the
 * launch, 0 for the event records). @routed: through the routing of
 * snpu_submit(), for a launch while another capture may be in progress
 * (not under graph_lock).
 */
static int snpu_graph_go(struct snpu_device *dev, struct snpu_ring *ring,
			 uint32_t stream, const struct snpu_graph_cached *g,
			 const uint64_t *slots, uint64_t user_data, int routed)
{
	struct snpu_task t[1 + SNPU_GRAPH_MAX_EVENTS];
	uint32_t i, n = 1 + g->events_count;
	int ret = 0;

	snpu_prep_graph(&t[0], stream, g->graph, slots, g->slots_count, 0);
	for (i = 0; i < g->events_count; i++)
		snpu_prep_event_record(&t[1 + i], stream, g->events[i]);
	if (!ring && routed)
		return snpu_capture_submit(dev, t, n, NULL);
	if (!ring)
		return snpu_capture_direct(dev, t, n, NULL);
	t[0].user_data = user_data;
	for (i = 0; i < n && !ret; i++)
		ret = snpu_ring_push(ring, &t[i]);
	if (!ret)
		ret = snpu_ring_submit_direct(ring, 0);
	return ret < 0 ? ret : 0;
}

/*
 * A cached @key: launch it. The entry is copied under the lock and
 * launched without it, so that replays of several threads do not wait
 * for each other. While another capture is in progress, a SUBMIT launch
 * goes through its routing (on the captured stream, it breaks that
 * capture, so that the order stays); a ring launch on the captured
 * stream is refused, and so are slots that are not the recorded ones
 * in number and extents.
 *
 * Return: SNPU_GRAPH_CACHED, 0 when @key is not cached, or -errno.
 */
static int snpu_graph_hit(struct snpu_device *dev, struct snpu_ring *ring,
			  uint32_t stream, uint64_t key, uint64_t user_data,
			  const struct snpu_graph_bind *bind)
{
	struct snpu_graph_cached **pp, hit;
	struct snpu_capture *cap;
	int ret;

	pthread_mutex_lock(&dev->graph_lock);
	pp = snpu_graph_find(dev, key);
	if (pp)
		hit = **pp;
	cap = atomic_load_explicit(&dev->capture, memory_order_relaxed);
	ret = cap && !cap->broken && !cap->closing && cap->stream == stream ?
		-EBUSY : 0;
	pthread_mutex_unlock(&dev->graph_lock);
	if (!pp)
		return 0;
	if (ring && ret)
		return ret;
	if (hit.slots_count != bind->count ||
	    (bind->count && memcmp(hit.slot_bytes, bind->bytes,
				   bind->count * sizeof(*bind->bytes))))
		return -EINVAL;
	ret = snpu_graph_go(dev, ring, stream, &hit, bind->slots, user_data,
			    1);
	return ret ? ret : SNPU_GRAPH_CACHED;
}

/* Slots within limits, each non-empty, not wrapping, disjoint. */
static int snpu_graph_bind_check(const struct snpu_graph_bind *b)
{
	unsigned int i, j;

	if (b->count > SNPU_GRAPH_MAX_SLOTS ||
	    (b->count && (!b->slots || !b->bytes)))
		return -EINVAL;
	for (i = 0; i < b->count; i++) {
		if (!b->bytes[i] || b->slots[i] + b->bytes[i] < b->slots[i])
			return -EINVAL;
		for (j = 0; j < i; j++)
			if (b->slots[i] < b->slots[j] + b->bytes[j] &&
			    b->slots[j] < b->slots[i] + b->bytes[i])
				return -EINVAL;
	}
	return 0;
}

static int snpu_graph_start(struct snpu_device *dev, struct snpu_ring *ring,
			    uint32_t stream, uint64_t key, uint64_t user_data,
			    const struct snpu_graph_bind *bind)
{
	struct snpu_stream_query q;
	struct snpu_capture *cap;
	struct snpu_info info;
	uint64_t caps;
	unsigned int i;
	int ret;

	ret = snpu_graph_bind_check(bind);
	if (ret)
		return ret;
	ret = snpu_graph_hit(dev, ring, stream, key, user_data, bind);
	if (ret)
		return ret;
	if (atomic_load_explicit(&dev->capture, memory_order_acquire))
		return -EBUSY;

	if (dev->graph_ops) {
		caps = dev->graph_ops->caps;
	} else {
		ret = snpu_get_info(dev, &info);
		if (ret)
			return ret;
		if (!(info.caps & SNPU_CAP_GRAPHS))
			return -EOPNOTSUPP;
		caps = info.caps;
		/* The stream of the body, as SUBMIT would find it. */
		ret = snpu_stream_query(dev, stream, &q);
		if (ret)
			return ret;
	}

	cap = calloc(1, sizeof(*cap));
	if (!cap)
		return -ENOMEM;
	cap->dev = dev;
	cap->ring = ring;
	cap->stream = stream;
	cap->key = key;
	cap->user_data = user_data;
	cap->caps = caps;
	snpu_rec_init(&cap->rec);
	for (i = 0; i < bind->count; i++) {
		cap->slots[i] = bind->slots[i];
		cap->rec.slot_base[i] = bind->slots[i];
		cap->rec.slot_bytes[i] = bind->bytes[i];
	}
	cap->rec.slots_count = bind->count;
	if (ring) {
		cap->sqbuf = calloc(ring->sq.entries, sizeof(*cap->sqbuf));
		if (!cap->sqbuf) {
			free(cap);
			return -ENOMEM;
		}
	}

	pthread_mutex_lock(&dev->graph_lock);
	/* Another thread's capture started, or cached the key, meanwhile. */
	if (snpu_graph_find(dev, key)) {
		pthread_mutex_unlock(&dev->graph_lock);
		snpu_capture_free(cap);
		return snpu_graph_start(dev, ring, stream, key, user_data,
					bind);
	}
	if (atomic_load_explicit(&dev->capture, memory_order_relaxed)) {
		ret = -EBUSY;
		goto fail;
	}
	if (ring) {
		/* What the caller prepared before begin goes first. */
		ret = snpu_ring_submit_direct(ring, 0);
		if (ret < 0)
			goto fail;
		snpu_ring_to_buffer(cap);
	}
	atomic_store_explicit(&dev->capture_stream, stream,
			      memory_order_relaxed);
	atomic_store_explicit(&dev->capture, cap, memory_order_release);
	pthread_mutex_unlock(&dev->graph_lock);
	return 0;
fail:
	pthread_mutex_unlock(&dev->graph_lock);
	snpu_capture_free(cap);
	return ret;
}

int snpu_graph_begin_slots(struct snpu_device *dev, struct snpu_ring *ring,
			   uint32_t stream, uint64_t key, uint64_t user_data,
			   const uint64_t *slots, const uint64_t *slot_bytes,
			   unsigned int slots_count)
{
	struct snpu_graph_bind bind = {
		.slots = slots,
		.bytes = slot_bytes,
		.count = slots_count,
	};

	if (!dev || (ring && (!ring->mem || ring->fd != dev->fd ||
			      (ring->flags & SNPU_RING_LIB_CAPTURE))))
		return -EINVAL;
	return snpu_graph_start(dev, ring, stream, key, user_data, &bind);
}

int snpu_graph_begin(struct snpu_device *dev, uint32_t stream, uint64_t key)
{
	return snpu_graph_begin_slots(dev, NULL, stream, key, 0, NULL, NULL,
				      0);
}

int snpu_graph_begin_ring(struct snpu_device *dev, struct snpu_ring *ring,
			  uint32_t stream, uint64_t key, uint64_t user_data)
{
	if (!ring)
		return -EINVAL;
	return snpu_graph_begin_slots(dev, ring, stream, key, user_data, NULL,
				      NULL, 0);
}

/*
 * The capture is closed first, under the lock; then it is the caller's
 * alone, and the create, the launch or the fallback run without the
 * lock, so that no thread waits for the lock while this one waits in
 * the kernel (for the snapshot lock, say). Tasks of the stream that
 * other threads submit meanwhile go on as usual, unordered with the
 * body's, as they would be without capture.
 */
int snpu_graph_end(struct snpu_device *dev)
{
	struct snpu_graph_cached *g = NULL;
	struct snpu_graph_desc desc;
	struct snpu_capture *cap;
	uint32_t graph;
	int ret;

	if (!dev)
		return -EINVAL;
	pthread_mutex_lock(&dev->graph_lock);
	cap = atomic_load_explicit(&dev->capture, memory_order_relaxed);
	if (!cap || cap->closing) {
		pthread_mutex_unlock(&dev->graph_lock);
		return -EINVAL;
	}
	/* What the body put in the ring and did not submit yet. */
	if (cap->ring && !cap->broken) {
		ret = snpu_capture_ring_take(cap, 0);
		if (ret < 0 && !cap->error)
			cap->error = ret;
	}
	cap->closing = 1;
	pthread_mutex_unlock(&dev->graph_lock);

	/* Nothing to launch (no node), or too many events: ordinary path. */
	if (!cap->broken && (snpu_rec_desc(&cap->rec, &desc) ||
			     cap->rec.events_count > SNPU_GRAPH_MAX_EVENTS))
		snpu_capture_break(cap);
	if (!cap->broken) {
		g = malloc(sizeof(*g));
		ret = g ? snpu_graph_create(dev, &desc, &graph) : -ENOMEM;
		if (ret)
			snpu_capture_break(cap);
	}
	if (cap->broken) {
		free(g);
		g = NULL;
		ret = cap->error ? cap->error : SNPU_GRAPH_NOT_RECORDED;
		goto out;
	}

	g->key = cap->key;
	g->graph = graph;
	g->events_count = cap->rec.events_count;
	if (g->events_count)
		memcpy(g->events, cap->rec.events,
		       g->events_count * sizeof(*g->events));
	g->slots_count = cap->rec.slots_count;
	memcpy(g->slot_bytes, cap->rec.slot_bytes, sizeof(g->slot_bytes));
	if (cap->ring)
		snpu_ring_to_real(cap);
	ret = snpu_graph_go(dev, cap->ring, cap->stream, g, cap->slots,
			    cap->user_data, 0);
	if (ret && !cap->ring) {
		/*
		 * SUBMIT queued nothing: the body goes the ordinary way,
		 * where the same error shows where it belongs. (An SQ entry
		 * may be taken later, so a ring launch is never undone.)
		 */
		snpu_graph_destroy(dev, graph);
		free(g);
		g = NULL;
		snpu_capture_break(cap);
		ret = cap->error ? cap->error : SNPU_GRAPH_NOT_RECORDED;
	}
out:
	pthread_mutex_lock(&dev->graph_lock);
	if (g) {
		g->next = *snpu_graph_bucket(dev, g->key);
		*snpu_graph_bucket(dev, g->key) = g;
	}
	atomic_store_explicit(&dev->capture, NULL, memory_order_relaxed);
	pthread_mutex_unlock(&dev->graph_lock);
	snpu_capture_free(cap);
	return ret;
}

int snpu_graph_forget(struct snpu_device *dev, uint64_t key)
{
	struct snpu_graph_cached **pp, *g;
	int ret;

	if (!dev)
		return -EINVAL;
	pthread_mutex_lock(&dev->graph_lock);
	pp = snpu_graph_find(dev, key);
	if (!pp) {
		pthread_mutex_unlock(&dev->graph_lock);
		return -ENOENT;
	}
	g = *pp;
	*pp = g->next;
	pthread_mutex_unlock(&dev->graph_lock);
	ret = snpu_graph_destroy(dev, g->graph);
	free(g);
	return ret;
}
