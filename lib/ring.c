// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libsnpu: command queues. The fast paths (get_sqe, peek, seen) are inline
 * in snpu.h; this file sets the rings up and rings the doorbell.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

static_assert(sizeof(struct snpu_ring_query) == SNPU_RING_QUERY_SIZE_VER0,
	      "struct snpu_ring_query changed");

/* Map the rings of @fd laid out as @sq and @cq say, and fill @ring. */
static int snpu_ring_map(int fd, unsigned int flags, uint64_t offset,
			 uint64_t bytes, const struct snpu_ring_offsets *sq,
			 const struct snpu_ring_offsets *cq,
			 struct snpu_ring *ring)
{
	void *mem;

	mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   (off_t)offset);
	if (mem == MAP_FAILED)
		return -errno;

	memset(ring, 0, sizeof(*ring));
	ring->fd = fd;
	ring->flags = flags;
	ring->mem = mem;
	ring->bytes = bytes;
	ring->sq.khead = (uint32_t *)((char *)mem + sq->head);
	ring->sq.ktail = (uint32_t *)((char *)mem + sq->tail);
	ring->sq.kflags = (uint32_t *)((char *)mem + sq->flags);
	ring->sq.kdropped = (uint32_t *)((char *)mem + sq->counter);
	ring->sq.mask = *(uint32_t *)((char *)mem + sq->mask);
	ring->sq.entries = *(uint32_t *)((char *)mem + sq->entries);
	ring->sq.sqes = (struct snpu_task *)((char *)mem + sq->array);
	/* Entries published before (a restored ring's) are the kernel's. */
	ring->sq.sqe_head = ring->sq.sqe_tail = *ring->sq.ktail;
	ring->cq.khead = (uint32_t *)((char *)mem + cq->head);
	ring->cq.ktail = (uint32_t *)((char *)mem + cq->tail);
	ring->cq.kflags = (uint32_t *)((char *)mem + cq->flags);
	ring->cq.koverflow = (uint32_t *)((char *)mem + cq->counter);
	ring->cq.mask = *(uint32_t *)((char *)mem + cq->mask);
	ring->cq.entries = *(uint32_t *)((char *)mem + cq->entries);
	ring->cq.cqes = (struct snpu_cqe *)((char *)mem + cq->array);
	return 0;
}

int snpu_ring_init_params(struct snpu_device *dev,
			  struct snpu_ring_setup *p, struct snpu_ring *ring)
{
	int ret;

	if (!dev || !p || !ring)
		return -EINVAL;
	p->size = sizeof(*p);
	ret = snpu_ioctl(dev->fd, SNPU_IOC_RING_SETUP, p);
	if (ret)
		return ret;

	/*
	 * The rings live as long as the file: when the map fails they stay,
	 * unmapped, and a new snpu_ring_init() on this device gets -EBUSY
	 * (snpu_ring_attach() maps them).
	 */
	return snpu_ring_map(dev->fd, p->flags, p->mmap_offset, p->mmap_bytes,
			     &p->sq, &p->cq, ring);
}

int snpu_ring_attach(struct snpu_device *dev, struct snpu_ring *ring)
{
	struct snpu_ring_query q;
	int ret;

	if (!dev || !ring)
		return -EINVAL;
	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	ret = snpu_ioctl(dev->fd, SNPU_IOC_RING_QUERY, &q);
	if (ret)
		return ret;
	return snpu_ring_map(dev->fd, q.ring_flags, q.mmap_offset,
			     q.mmap_bytes, &q.sq, &q.cq, ring);
}

int snpu_ring_init(struct snpu_device *dev, unsigned int entries,
		   unsigned int flags, struct snpu_ring *ring)
{
	struct snpu_ring_setup p;

	memset(&p, 0, sizeof(p));
	p.flags = flags;
	p.sq_entries = entries;
	return snpu_ring_init_params(dev, &p, ring);
}

void snpu_ring_exit(struct snpu_ring *ring)
{
	if (!ring || !ring->mem)
		return;
	munmap(ring->mem, ring->bytes);
	ring->mem = NULL;
}

int snpu_ring_enter(struct snpu_ring *ring, unsigned int to_submit,
		    unsigned int min_complete, unsigned int flags,
		    int64_t timeout_ns)
{
	struct snpu_enter e;
	int ret;

	if (!ring)
		return -EINVAL;
	memset(&e, 0, sizeof(e));
	e.size = sizeof(e);
	e.flags = flags;
	e.to_submit = to_submit;
	e.min_complete = min_complete;
	e.timeout_ns = timeout_ns;
	ret = flags & SNPU_ENTER_GETEVENTS ?
		snpu_ioctl_wait(ring->fd, SNPU_IOC_ENTER, &e) :
		snpu_ioctl(ring->fd, SNPU_IOC_ENTER, &e);
	return ret < 0 ? ret : (int)e.submitted;
}

/* Publish the entries handed out; return how many the kernel has not taken. */
static unsigned int snpu_ring_flush(struct snpu_ring *ring)
{
	uint32_t tail = ring->sq.sqe_tail;

	if (ring->sq.sqe_head != tail) {
		ring->sq.sqe_head = tail;
		__atomic_store_n(ring->sq.ktail, tail, __ATOMIC_RELEASE);
	}
	return tail - __atomic_load_n(ring->sq.khead, __ATOMIC_ACQUIRE);
}

int snpu_ring_submit_direct(struct snpu_ring *ring, unsigned int wait_nr)
{
	unsigned int pending, flags = 0;
	int ret;

	pending = snpu_ring_flush(ring);
	if (ring->flags & SNPU_RING_SQPOLL) {
		/* The tail store must be seen before we read the flag. */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(ring->sq.kflags, __ATOMIC_RELAXED) &
		    SNPU_SQ_NEED_WAKEUP)
			flags |= SNPU_ENTER_SQ_WAKEUP;
		if (!wait_nr && !flags)
			return pending;
		if (wait_nr)
			flags |= SNPU_ENTER_GETEVENTS;
		ret = snpu_ring_enter(ring, 0, wait_nr, flags, -1);
		return ret < 0 ? ret : (int)pending;
	}
	if (!pending && !wait_nr)
		return 0;
	if (wait_nr)
		flags |= SNPU_ENTER_GETEVENTS;
	return snpu_ring_enter(ring, pending, wait_nr, flags, -1);
}

int snpu_ring_submit_and_wait(struct snpu_ring *ring, unsigned int wait_nr)
{
	if (!ring)
		return -EINVAL;
	/* The SQ side is a graph capture's (graph.c). */
	if (ring->flags & SNPU_RING_LIB_CAPTURE)
		return snpu_capture_ring_submit(ring, wait_nr);
	return snpu_ring_submit_direct(ring, wait_nr);
}

int snpu_ring_submit(struct snpu_ring *ring)
{
	return snpu_ring_submit_and_wait(ring, 0);
}

int snpu_ring_wait_cqe(struct snpu_ring *ring, struct snpu_cqe **cqe)
{
	int ret;

	if (!ring || !cqe)
		return -EINVAL;
	while (snpu_ring_peek_cqe(ring, cqe)) {
		ret = snpu_ring_enter(ring, 0, 1, SNPU_ENTER_GETEVENTS, -1);
		if (ret < 0 && ret != -EBUSY)
			return ret;
	}
	return 0;
}
