// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * rt2: the caching device allocator of an executor.
 *
 * Blocks are reused by exact size. A block that a plain free gives back
 * is reusable at once: every launch using it was submitted before the
 * free ran, on the executor's stream (or joined into it), so a later user
 * is ordered after them. A block that a hold-address free gives back is
 * *held* with the free's required generation: it is reusable once the
 * relation launches were submitted, i.e. once the published submitted
 * generation reached it.
 *
 * rt2_alloc_get() is the fast path: a free block of the size (the one
 * this value had in the last run first, so that a run with the same
 * shapes as the last one gets the same addresses), a held one whose
 * launches were submitted, or a new device block.
 *
 * Without a limit it never waits nor recycles: when no block of the size
 * is at hand it takes a new one, and when the value's block of the last
 * run is not at hand (still held, or taken) it takes a new one rather
 * than another value's, which becomes its block from then on. The pool
 * keeps every block it needed (at most one per value and size), so that
 * once the runs' timings have been seen no run asks the device again,
 * and no run ever synchronises the stream to recycle.
 *
 * Under a limit it takes a new block only while it fits; when the
 * value's block of the last run is still held, it recycles for that
 * block instead: the memory worker allocates and frees in the same
 * order every run, so from the second run on every value gets the
 * address it had. It never calls the scheduler. Past the limit it says
 * the caller must recycle, and which generation to wait for; the caller
 * waits (only for requirements that executed frees activated),
 * synchronises the stream, calls rt2_alloc_recycle() and retries.
 *
 * Only the memory worker (or the one thread) uses it: no lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rt2.h"

static uint32_t rt2_published(const uint32_t *submitted)
{
	return submitted ? __atomic_load_n(submitted, __ATOMIC_ACQUIRE) : 0;
}

/**
 * rt2_alloc_get() - a block of @bytes
 * @p: the pool
 * @d: the device
 * @bytes: the size
 * @addr: in: the address this value had last time, or 0; out: the block
 * @gen: RT2_ALLOC_RECYCLE: the generation to wait for first, 0 for none
 *
 * Return: 0, RT2_ALLOC_RECYCLE when the caller must recycle, or -errno.
 */
int rt2_alloc_get(struct rt2_pool *p, struct snpu_rt2_dev *d, uint64_t bytes,
		  uint64_t *addr, uint32_t *gen)
{
	uint32_t pub = rt2_published(p->submitted);
	uint64_t hint = *addr;
	bool own = false;	/* the value's last block is of this size */
	struct rt2_block *best = NULL, *b;
	uint32_t low = 0, high = 0;
	unsigned int i;
	int ret;

	for (i = 0; i < p->nblk; i++) {
		b = &p->blk[i];
		if (b->bytes != bytes)
			continue;
		own |= b->addr == hint;
		if (b->state == RT2_BLK_USED)
			continue;
		if (b->state == RT2_BLK_HELD && b->req > pub) {
			/*
			 * The value's own block of the last run, still held:
			 * under a limit, recycle for it rather than take
			 * another, so that the same shapes keep the same
			 * addresses.
			 */
			if (b->addr == hint && p->limit) {
				*gen = b->req;
				return RT2_ALLOC_RECYCLE;
			}
			continue;
		}
		if (!best || b->addr == hint)
			best = b;
		if (b->addr == hint)
			break;
	}
	/* No limit: never another value's block in place of its own. */
	if (best && !p->limit && own && best->addr != hint)
		best = NULL;
	if (best) {
		if (best->state == RT2_BLK_HELD)
			p->nheld--;
		best->state = RT2_BLK_USED;
		*addr = best->addr;
		return 0;
	}
	if (!p->limit || p->bytes + bytes <= p->limit) {
		if (p->nblk == p->cap) {
			unsigned int cap = p->cap ? 2 * p->cap : 16;

			b = realloc(p->blk, cap * sizeof(*b));
			if (!b)
				return -ENOMEM;
			p->blk = b;
			p->cap = cap;
		}
		ret = d->ops->mem_alloc(d, bytes, addr);
		if (ret)
			return ret;
		p->dev_allocs++;
		p->bytes += bytes;
		if (p->bytes > p->peak)
			p->peak = p->bytes;
		p->blk[p->nblk++] = (struct rt2_block){ *addr, bytes,
							 RT2_BLK_USED, 0 };
		return 0;
	}
	/* Must recycle: wait for the held blocks of this size, or for all. */
	for (i = 0; i < p->nblk; i++) {
		b = &p->blk[i];
		if (b->state != RT2_BLK_HELD)
			continue;
		if (b->req > high)
			high = b->req;
		if (b->bytes == bytes && (!low || b->req < low))
			low = b->req;
	}
	*gen = low ? low : high;
	return RT2_ALLOC_RECYCLE;
}

/**
 * rt2_alloc_put() - give a block back
 * @p: the pool
 * @addr: the block
 * @req: 0 (plain free), or a hold-address free's required generation
 *
 * Return: 0, or -ENOENT for an address the pool did not hand out.
 */
int rt2_alloc_put(struct rt2_pool *p, uint64_t addr, uint32_t req)
{
	unsigned int i;

	for (i = 0; i < p->nblk; i++) {
		struct rt2_block *b = &p->blk[i];

		if (b->addr != addr || b->state != RT2_BLK_USED)
			continue;
		b->state = req ? RT2_BLK_HELD : RT2_BLK_FREE;
		b->req = req;
		p->nheld += !!req;
		return 0;
	}
	return -ENOENT;
}

/**
 * rt2_alloc_recycle() - after the wait and the stream sync
 * @p: the pool
 * @d: the device
 * @submitted: the submitted generation reached
 * @need: the size the caller wants
 *
 * Held blocks whose launches were submitted become free; then, while
 * @need does not fit under the limit, free blocks of other sizes go back
 * to the device (safe: the stream was synchronised).
 *
 * Return: the number of blocks recycled or given back.
 */
unsigned int rt2_alloc_recycle(struct rt2_pool *p, struct snpu_rt2_dev *d,
			       uint32_t submitted, uint64_t need)
{
	unsigned int i, j, n = 0;

	for (i = 0; i < p->nblk; i++) {
		struct rt2_block *b = &p->blk[i];

		if (b->state == RT2_BLK_HELD && b->req <= submitted) {
			b->state = RT2_BLK_FREE;
			p->nheld--;
			n++;
		}
	}
	for (i = 0; i < p->nblk; i++)
		if (p->blk[i].state == RT2_BLK_FREE && p->blk[i].bytes == need)
			return n;
	for (i = 0, j = 0; i < p->nblk; i++) {
		struct rt2_block *b = &p->blk[i];

		/* Only a limit set by the caller gives blocks back. */
		if (p->limit && p->bytes + need > p->limit &&
		    b->state == RT2_BLK_FREE) {
			d->ops->mem_free(d, b->addr);
			p->bytes -= b->bytes;
			p->dev_frees++;
			n++;
			continue;
		}
		p->blk[j++] = *b;
	}
	p->nblk = j;
	return n;
}

/* The run is over and the device drained: every block is free. */
void rt2_alloc_release(struct rt2_pool *p)
{
	unsigned int i;

	for (i = 0; i < p->nblk; i++)
		p->blk[i].state = RT2_BLK_FREE;
	p->nheld = 0;
}

void rt2_alloc_fini(struct rt2_pool *p, struct snpu_rt2_dev *d)
{
	unsigned int i;

	for (i = 0; i < p->nblk; i++)
		d->ops->mem_free(d, p->blk[i].addr);
	free(p->blk);
	memset(p, 0, sizeof(*p));
}
