/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A writer of checkpoint images in memory, for the unit test and the fuzz
 * seeds: the layout of Documentation/checkpoint.rst, written from the
 * document, not from the module's writer.
 */
#ifndef _SNPU_CKPT_IMG_H
#define _SNPU_CKPT_IMG_H

#include <stdlib.h>
#include <string.h>

#include "core/ckpt.h"

struct img {
	unsigned char *p;
	size_t n;
	size_t cap;
	__u32 seq;
};

static inline void img_put(struct img *im, const void *b, size_t n)
{
	if (!n)
		return;
	if (im->n + n > im->cap) {
		im->cap = (im->n + n) * 2;
		im->p = realloc(im->p, im->cap);
		if (!im->p)
			abort();
	}
	memcpy(im->p + im->n, b, n);
	im->n += n;
}

static inline void img_header(struct img *im, __u32 contexts)
{
	struct snpu_ckpt_header h = {
		.magic = SNPU_CKPT_MAGIC,
		.version = SNPU_CKPT_VERSION,
		.abi_major = SNPU_ABI_MAJOR,
		.abi_minor = SNPU_ABI_MINOR,
		.header_size = sizeof(h),
		.contexts = contexts,
		.page_size = 4096,
		.mem_align = SNPU_MEM_ALIGN,
	};

	h.crc = snpu_ckpt_header_crc(&h);
	img_put(im, &h, sizeof(h));
}

/* A chunk of @type: @rec (@rlen bytes), then @extra (@elen bytes). */
static inline void img_chunk(struct img *im, __u32 type, const void *rec,
			     __u32 rlen, const void *extra, __u32 elen)
{
	struct snpu_ckpt_chunk c = {
		.type = type, .len = rlen + elen, .seq = im->seq++,
	};
	__u32 crc = snpu_ckpt_chunk_crc_begin(&c);

	crc = snpu_ckpt_crc(crc, rec, rlen);
	if (elen)
		crc = snpu_ckpt_crc(crc, extra, elen);
	c.crc = crc ^ ~0U;
	img_put(im, &c, sizeof(c));
	img_put(im, rec, rlen);
	img_put(im, extra, elen);
}

static inline void img_end(struct img *im)
{
	struct snpu_ckpt_end e = { .chunks = im->seq };

	img_chunk(im, SNPU_CKPT_END, &e, sizeof(e), NULL, 0);
}

#define IMG_WINDOW	3
#define IMG_BASE	(SNPU_VA_BASE + ((__u64)IMG_WINDOW << SNPU_VA_WINDOW_SHIFT))

/*
 * The reference image: one context on device 1 with two allocations
 * (5000 bytes in two DATA chunks, 4096 in one), driver-allocated host
 * memory of one page, an owner, an attached stream, a stream, an event.
 */
static inline void img_reference(struct img *im)
{
	static unsigned char bytes[8192];
	struct snpu_ckpt_ctx ctx = {
		.dev_index = 1, .cores = 2, .mem_total = 64 << 20,
		.va_window = IMG_WINDOW, .next_handle = 6, .nmem = 2,
		.nobj = 5, .mem_bytes = 5000 + 4096, .host_bytes = 4096,
	};
	struct snpu_ckpt_mem m1 = { .addr = IMG_BASE, .bytes = 5000 };
	struct snpu_ckpt_mem m2 = { .addr = IMG_BASE + 8192, .bytes = 4096 };
	struct snpu_ckpt_data d = { 0 };
	struct snpu_ckpt_owner o = { .handle = 1, .priority = 0 };
	struct snpu_ckpt_host h = { .handle = 2, .kind = SNPU_CKPT_HOST_ALLOC,
				    .bytes = 4096 };
	struct snpu_ckpt_stream as = { .handle = 3, .owner = 1, .key = "k" };
	struct snpu_ckpt_stream s = { .handle = 4, .completed = 7 };
	struct snpu_ckpt_event e = { .handle = 5 };
	unsigned int i;

	for (i = 0; i < sizeof(bytes); i++)
		bytes[i] = (unsigned char)(i * 7 + 1);
	img_header(im, 1);
	img_chunk(im, SNPU_CKPT_CTX, &ctx, sizeof(ctx), NULL, 0);
	img_chunk(im, SNPU_CKPT_MEM, &m1, sizeof(m1), NULL, 0);
	img_chunk(im, SNPU_CKPT_DATA, &d, sizeof(d), bytes, 3000);
	d.offset = 3000;
	img_chunk(im, SNPU_CKPT_DATA, &d, sizeof(d), bytes + 3000, 2000);
	img_chunk(im, SNPU_CKPT_MEM, &m2, sizeof(m2), NULL, 0);
	d.offset = 0;
	img_chunk(im, SNPU_CKPT_DATA, &d, sizeof(d), bytes, 4096);
	img_chunk(im, SNPU_CKPT_OWNER, &o, sizeof(o), NULL, 0);
	img_chunk(im, SNPU_CKPT_HOST, &h, sizeof(h), NULL, 0);
	img_chunk(im, SNPU_CKPT_DATA, &d, sizeof(d), bytes, 4096);
	img_chunk(im, SNPU_CKPT_STREAM, &as, sizeof(as), NULL, 0);
	img_chunk(im, SNPU_CKPT_STREAM, &s, sizeof(s), NULL, 0);
	img_chunk(im, SNPU_CKPT_EVENT, &e, sizeof(e), NULL, 0);
	img_end(im);
}

/*
 * The reference image with rings: one context, no allocation, a stream,
 * then its rings of 4 SQEs and 8 CQEs with SQPOLL: 2 SQEs submitted and
 * not taken, 3 CQEs not reaped, 2 completions parked for room. The
 * mapping's bytes (4096 + 4096 + 4096 with 4 KiB pages) in two DATA
 * chunks, the parked completions in a third.
 */
static inline void img_ring(struct img *im)
{
	static unsigned char bytes[3 * 4096 + 2 * sizeof(struct snpu_cqe)];
	struct snpu_ckpt_ctx ctx = {
		.dev_index = 0, .cores = 2, .mem_total = 64 << 20,
		.va_window = IMG_WINDOW, .next_handle = 2, .nobj = 1,
		.nring = 1,
	};
	struct snpu_ckpt_stream s = { .handle = 1, .completed = 9 };
	struct snpu_ckpt_ring r = {
		.flags = SNPU_RING_SQPOLL, .sq_entries = 4, .cq_entries = 8,
		.idle_ms = 100, .sq_head = 10, .sq_tail = 12, .cq_head = 5,
		.cq_tail = 8, .cq_flags = SNPU_CQ_OVERFLOW, .cq_overflow = 2,
		.noverflow = 2,
		.bytes = snpu_ckpt_ring_bytes(4, 8, 4096),
	};
	struct snpu_cqe *ovf = (void *)(bytes + 3 * 4096);
	struct snpu_ckpt_data d = { 0 };
	unsigned int i;

	for (i = 0; i < 3 * 4096; i++)
		bytes[i] = (unsigned char)(i * 5 + 3);
	ovf[0] = (struct snpu_cqe){ .user_data = 1, .seq = 10 };
	ovf[1] = (struct snpu_cqe){ .user_data = 2, .result = -5, .seq = 11 };
	img_header(im, 1);
	img_chunk(im, SNPU_CKPT_CTX, &ctx, sizeof(ctx), NULL, 0);
	img_chunk(im, SNPU_CKPT_STREAM, &s, sizeof(s), NULL, 0);
	img_chunk(im, SNPU_CKPT_RING, &r, sizeof(r), NULL, 0);
	img_chunk(im, SNPU_CKPT_DATA, &d, sizeof(d), bytes, 8192);
	d.offset = 8192;
	img_chunk(im, SNPU_CKPT_DATA, &d, sizeof(d), bytes + 8192, 4096);
	d.offset = 3 * 4096;
	img_chunk(im, SNPU_CKPT_DATA, &d, sizeof(d), bytes + 3 * 4096,
		  2 * sizeof(struct snpu_cqe));
	img_end(im);
}

/**
 * The graph reference image: one context with an allocation, a stream
 * and one graph of two nodes (a memset into slot 0, then a copy of it to
 * the allocation), one edge, one slot of 256 bytes, 64 bytes of scratch.
 * Its definition comes in two DATA chunks.
 */
static inline void img_graph_reference(struct img *im)
{
	static unsigned char bytes[4096];
	struct snpu_ckpt_ctx ctx = {
		.dev_index = 0, .cores = 2, .mem_total = 64 << 20,
		.va_window = IMG_WINDOW, .next_handle = 3, .nmem = 1,
		.nobj = 2, .mem_bytes = 4096,
	};
	struct snpu_ckpt_mem m = { .addr = IMG_BASE, .bytes = 4096 };
	struct snpu_ckpt_data d = { 0 };
	struct snpu_ckpt_stream s = { .handle = 1 };
	struct snpu_ckpt_graph g = {
		.handle = 2, .nodes = 2, .edges = 1, .slots = 1,
		.def_bytes = snpu_ckpt_graph_def_bytes(2, 1),
		.scratch_bytes = 64, .slot_bytes = { 256 },
	};
	struct {
		struct snpu_graph_node n[2];
		__u32 offsets[3];
		__u32 fanin[1];
	} def;

	memset(&def, 0, sizeof(def));
	def.n[0].task.op = SNPU_OP_MEMSET;
	def.n[0].task.memset.bytes = 256;
	def.n[0].task.memset.value = 0x5a;
	def.n[0].ref[0] = SNPU_GRAPH_REF_SLOT(0);
	def.n[1].task.op = SNPU_OP_COPY;
	def.n[1].task.copy.dir = SNPU_COPY_D2D;
	def.n[1].task.copy.dst = IMG_BASE;
	def.n[1].task.copy.bytes = 256;
	def.n[1].ref[0] = SNPU_GRAPH_REF_ADDR;
	def.n[1].ref[1] = SNPU_GRAPH_REF_SLOT(0);
	def.offsets[1] = 0;
	def.offsets[2] = 1;
	def.fanin[0] = 0;
	memset(bytes, 0x11, sizeof(bytes));
	img_header(im, 1);
	img_chunk(im, SNPU_CKPT_CTX, &ctx, sizeof(ctx), NULL, 0);
	img_chunk(im, SNPU_CKPT_MEM, &m, sizeof(m), NULL, 0);
	img_chunk(im, SNPU_CKPT_DATA, &d, sizeof(d), bytes, 4096);
	img_chunk(im, SNPU_CKPT_STREAM, &s, sizeof(s), NULL, 0);
	img_chunk(im, SNPU_CKPT_GRAPH, &g, sizeof(g), NULL, 0);
	img_chunk(im, SNPU_CKPT_DATA, &d, sizeof(d), &def, 200);
	d.offset = 200;
	img_chunk(im, SNPU_CKPT_DATA, &d, sizeof(d), (char *)&def + 200,
		  sizeof(def) - 200);
	img_end(im);
}

/*
 * An image of one context with a stream (handle 1) and @ncomm ranks
 * (handles 2..@ncomm + 1) of communicators of @nranks ranks, each its own
 * id, this file rank @rank, at sequence number 5.
 */
static inline void img_comms(struct img *im, __u32 ncomm, __u32 nranks,
			     __u32 rank)
{
	struct snpu_ckpt_ctx ctx = {
		.dev_index = 0, .cores = 2, .mem_total = 64 << 20,
		.va_window = IMG_WINDOW, .next_handle = ncomm + 2,
		.nobj = 1 + ncomm,
	};
	struct snpu_ckpt_stream s = { .handle = 1 };
	struct snpu_ckpt_comm c = { .nranks = nranks, .rank = rank, .seq = 5 };
	__u32 i;

	img_header(im, 1);
	img_chunk(im, SNPU_CKPT_CTX, &ctx, sizeof(ctx), NULL, 0);
	img_chunk(im, SNPU_CKPT_STREAM, &s, sizeof(s), NULL, 0);
	for (i = 0; i < ncomm; i++) {
		c.handle = 2 + i;
		memset(c.id, 0xc0 + (i & 0x3f), sizeof(c.id));
		c.id[0] = (__u8)i;
		img_chunk(im, SNPU_CKPT_COMM, &c, sizeof(c), NULL, 0);
	}
	img_end(im);
}

static const struct snpu_ckpt_limits img_limits = {
	.abi_major = SNPU_ABI_MAJOR, .page_size = 4096,
	.mem_align = SNPU_MEM_ALIGN,
};

#endif /* _SNPU_CKPT_IMG_H */
