// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The validator of checkpoint images (Documentation/checkpoint.rst).
 *
 * A reader checks the header, then for every chunk its header (before it
 * reads the payload: the length is known to be right for the type and the
 * place), the CRC32C it computes itself, and the record. Nothing in the
 * image is trusted: every length, count, handle, address and offset is
 * checked against the header, the context's record and what came before.
 * Errors: ENOEXEC (not an image this reader understands), EBADMSG (a CRC
 * mismatch), EPROTO (a record out of range or out of place).
 */
#ifdef __KERNEL__
#include <linux/string.h>

#include "compat.h"
#else
#include <string.h>
#endif

#include "ckpt.h"
#include "kernels.h"

/**
 * snpu_ckpt_crc() - update a CRC32C register with bytes
 * @crc: the register (~0 to start)
 * @buf: bytes
 * @len: how many
 *
 * Return: the register; the CRC of a message is its final value ^ ~0.
 */
__u32 snpu_ckpt_crc(__u32 crc, const void *buf, __u64 len)
{
#ifdef __KERNEL__
	/* The kernel's: several bytes a step, where the table takes one. */
	return snpu_kcrc32c(crc, buf, len);
#else
	return snpu_crc32c(crc, buf, len);
#endif
}

/**
 * snpu_ckpt_header_crc() - the CRC a header must carry
 * @h: the header; its @crc is ignored
 *
 * Return: CRC32C of the header with @crc zero.
 */
__u32 snpu_ckpt_header_crc(const struct snpu_ckpt_header *h)
{
	struct snpu_ckpt_header tmp = *h;

	tmp.crc = 0;
	return snpu_crc32c(~0U, &tmp, sizeof(tmp)) ^ ~0U;
}

/**
 * snpu_ckpt_chunk_crc_begin() - start the CRC of a chunk
 * @c: the chunk header; its @crc is ignored
 *
 * Continue with snpu_ckpt_crc() over the payload; the chunk's CRC is the
 * final value ^ ~0.
 *
 * Return: the register after the header with @crc zero.
 */
__u32 snpu_ckpt_chunk_crc_begin(const struct snpu_ckpt_chunk *c)
{
	struct snpu_ckpt_chunk tmp = *c;

	tmp.crc = 0;
	return snpu_crc32c(~0U, &tmp, sizeof(tmp));
}

/**
 * snpu_ckpt_payload_size() - the record size of a chunk type
 * @type: SNPU_CKPT_*
 *
 * Return: the size of the type's struct (for DATA, without its bytes), 0
 * for an unknown type.
 */
__u32 snpu_ckpt_payload_size(__u32 type)
{
	switch (type) {
	case SNPU_CKPT_CTX:
		return sizeof(struct snpu_ckpt_ctx);
	case SNPU_CKPT_MEM:
		return sizeof(struct snpu_ckpt_mem);
	case SNPU_CKPT_DATA:
		return sizeof(struct snpu_ckpt_data);
	case SNPU_CKPT_HOST:
		return sizeof(struct snpu_ckpt_host);
	case SNPU_CKPT_OWNER:
		return sizeof(struct snpu_ckpt_owner);
	case SNPU_CKPT_STREAM:
		return sizeof(struct snpu_ckpt_stream);
	case SNPU_CKPT_EVENT:
		return sizeof(struct snpu_ckpt_event);
	case SNPU_CKPT_END:
		return sizeof(struct snpu_ckpt_end);
	case SNPU_CKPT_GRAPH:
		return sizeof(struct snpu_ckpt_graph);
	case SNPU_CKPT_RING:
		return sizeof(struct snpu_ckpt_ring);
	case SNPU_CKPT_COMM:
		return sizeof(struct snpu_ckpt_comm);
	}
	return 0;
}

static bool snpu_ckpt_zero(const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/**
 * snpu_ckpt_header_check() - check an image's header, start a parser
 * @ps: the parser, initialized here
 * @h: the header as read
 * @lim: what the reader accepts
 *
 * Return: 0; -ENOEXEC for another magic, version, size, ABI major, page
 * size or memory alignment; -EBADMSG for a CRC mismatch; -EPROTO for
 * non-zero flags or reserved fields or a context count out of range.
 */
int snpu_ckpt_header_check(struct snpu_ckpt_parser *ps,
			   const struct snpu_ckpt_header *h,
			   const struct snpu_ckpt_limits *lim)
{
	memset(ps, 0, sizeof(*ps));
	if (h->magic != SNPU_CKPT_MAGIC || h->version < SNPU_CKPT_VERSION_MIN ||
	    h->version > SNPU_CKPT_VERSION ||
	    h->header_size != sizeof(*h))
		return -ENOEXEC;
	if (snpu_ckpt_header_crc(h) != h->crc)
		return -EBADMSG;
	if (h->abi_major != lim->abi_major || h->page_size != lim->page_size ||
	    h->mem_align != lim->mem_align)
		return -ENOEXEC;
	if (h->flags || h->pad || !snpu_ckpt_zero(h->reserved, sizeof(h->reserved)))
		return -EPROTO;
	if (!h->contexts || h->contexts > SNPU_CKPT_MAX_CONTEXTS)
		return -EPROTO;
	ps->contexts = h->contexts;
	ps->page_size = h->page_size;
	ps->version = h->version;
	ps->phase = SNPU_CKPT_P_TOP;
	return 0;
}

/**
 * snpu_ckpt_ctx_complete() - has the current context all it announced
 * @ps: the parser
 *
 * Return: true when its MEM and object counts and sizes match its record
 * and no DATA is owed.
 */
bool snpu_ckpt_ctx_complete(const struct snpu_ckpt_parser *ps)
{
	return ps->nmem == ps->ctx.nmem && ps->nobj == ps->ctx.nobj &&
	       ps->mem_bytes == ps->ctx.mem_bytes &&
	       ps->host_bytes == ps->ctx.host_bytes && !ps->data_left &&
	       ps->nring == ps->ctx.nring;
}

/* Has the current context all it announced but its RING, still owed? */
static bool snpu_ckpt_ring_due(const struct snpu_ckpt_parser *ps)
{
	return ps->nmem == ps->ctx.nmem && ps->nobj == ps->ctx.nobj &&
	       ps->mem_bytes == ps->ctx.mem_bytes &&
	       ps->host_bytes == ps->ctx.host_bytes &&
	       ps->nring < ps->ctx.nring;
}

/* May a chunk of @type come now? */
static bool snpu_ckpt_type_ok(const struct snpu_ckpt_parser *ps, __u32 type)
{
	if (ps->phase == SNPU_CKPT_P_DONE)
		return false;
	/* Bytes owed to the last MEM or HOST come first. */
	if (ps->data_left)
		return type == SNPU_CKPT_DATA;
	/* Version 1 images had no graphs, rings or communicators. */
	if (ps->version < 2 && type > SNPU_CKPT_END)
		return false;
	switch (type) {
	case SNPU_CKPT_CTX:
	case SNPU_CKPT_END:
		return ps->phase == SNPU_CKPT_P_TOP || snpu_ckpt_ctx_complete(ps);
	case SNPU_CKPT_MEM:
		return ps->phase == SNPU_CKPT_P_MEM;
	case SNPU_CKPT_OWNER:
		return ps->phase == SNPU_CKPT_P_MEM ||
		       ps->phase == SNPU_CKPT_P_OWNER;
	case SNPU_CKPT_HOST:
	case SNPU_CKPT_STREAM:
	case SNPU_CKPT_EVENT:
	case SNPU_CKPT_COMM:
		return ps->phase >= SNPU_CKPT_P_MEM &&
		       ps->phase <= SNPU_CKPT_P_OBJ;
	case SNPU_CKPT_GRAPH:
		/* After every object a graph's nodes may name. */
		return ps->phase >= SNPU_CKPT_P_MEM &&
		       ps->phase <= SNPU_CKPT_P_GRAPH;
	case SNPU_CKPT_RING:
		/* Last of its context: after every allocation and object. */
		return ps->phase >= SNPU_CKPT_P_MEM &&
		       ps->phase <= SNPU_CKPT_P_GRAPH && snpu_ckpt_ring_due(ps);
	}
	return false;
}

/**
 * snpu_ckpt_chunk_check() - check a chunk's header before its payload
 * @ps: the parser
 * @c: the chunk header as read
 *
 * Return: 0 when @c->len payload bytes may be read now; -EPROTO for an
 * unknown type, a type out of place, a wrong length or sequence number.
 */
int snpu_ckpt_chunk_check(const struct snpu_ckpt_parser *ps,
			  const struct snpu_ckpt_chunk *c)
{
	__u32 size = snpu_ckpt_payload_size(c->type);

	if (!size || c->seq != ps->seq || !snpu_ckpt_type_ok(ps, c->type))
		return -EPROTO;
	if (c->type != SNPU_CKPT_DATA)
		return c->len == size ? 0 : -EPROTO;
	if (c->len <= size || c->len - size > SNPU_CKPT_CHUNK_MAX ||
	    c->len - size > ps->data_left)
		return -EPROTO;
	return 0;
}

static int snpu_ckpt_ctx_rec(struct snpu_ckpt_parser *ps,
			     const struct snpu_ckpt_ctx *r)
{
	if (ps->ctx_seen >= ps->contexts)
		return -EPROTO;
	if (r->dev_index >= SNPU_MAX_DEVICES || !r->cores ||
	    r->cores > SNPU_MAX_CORES || !r->mem_total ||
	    r->mem_total > ((__u64)SNPU_MAX_MEM_MB << 20) ||
	    r->va_window >= SNPU_VA_WINDOWS ||
	    r->next_handle > SNPU_CKPT_HANDLE_MAX ||
	    r->nmem > r->mem_total / SNPU_MEM_ALIGN ||
	    r->nobj > SNPU_CKPT_MAX_OBJECTS || r->mem_bytes > r->mem_total ||
	    r->nmem > r->mem_bytes ||
	    r->host_bytes > ((__u64)SNPU_MAX_CTX_HOST_MB << 20) ||
	    r->nring > 1 || r->pad || r->reserved)
		return -EPROTO;
	ps->ctx = *r;
	ps->ctx_seen++;
	ps->phase = SNPU_CKPT_P_MEM;
	ps->va_base = SNPU_VA_BASE + ((__u64)r->va_window << SNPU_VA_WINDOW_SHIFT);
	ps->va_end = ps->va_base + (1ULL << SNPU_VA_WINDOW_SHIFT) - 1;
	ps->nmem = 0;
	ps->nobj = 0;
	ps->mem_bytes = 0;
	ps->host_bytes = 0;
	ps->mem_next = ps->va_base;
	ps->last_handle = 0;
	ps->nring = 0;
	ps->ncomm = 0;
	return 0;
}

static int snpu_ckpt_mem_rec(struct snpu_ckpt_parser *ps,
			     const struct snpu_ckpt_mem *r)
{
	__u64 charged;

	if (ps->nmem >= ps->ctx.nmem || !r->bytes ||
	    r->bytes > ps->ctx.mem_total ||
	    r->bytes > ps->ctx.mem_bytes - ps->mem_bytes ||
	    r->addr % SNPU_MEM_ALIGN || r->addr < ps->mem_next ||
	    r->addr > ps->va_end ||
	    !snpu_ckpt_zero(r->reserved, sizeof(r->reserved)))
		return -EPROTO;
	charged = (r->bytes + SNPU_MEM_ALIGN - 1) & ~(__u64)(SNPU_MEM_ALIGN - 1);
	if (charged - 1 > ps->va_end - r->addr)
		return -EPROTO;
	ps->nmem++;
	ps->mem_bytes += r->bytes;
	ps->mem_next = r->addr + charged;
	ps->data_left = r->bytes;
	ps->data_off = 0;
	return 0;
}

/* Objects come in handle order within their phase; handles are 1..INT_MAX. */
static int snpu_ckpt_obj_handle(struct snpu_ckpt_parser *ps, __u32 handle,
				__u32 phase)
{
	if (ps->nobj >= ps->ctx.nobj || !handle ||
	    handle > SNPU_CKPT_HANDLE_MAX)
		return -EPROTO;
	if (ps->phase != phase) {
		ps->phase = phase;
		ps->last_handle = 0;
	}
	if (handle <= ps->last_handle)
		return -EPROTO;
	ps->last_handle = handle;
	ps->nobj++;
	return 0;
}

static bool snpu_ckpt_prio_ok(__s32 priority)
{
	return priority >= SNPU_PRIO_LOW && priority <= SNPU_PRIO_HIGH;
}

static int snpu_ckpt_host_rec(struct snpu_ckpt_parser *ps,
			      const struct snpu_ckpt_host *r)
{
	if (r->reserved || !r->bytes || r->bytes % 4096 ||
	    r->bytes > ps->ctx.host_bytes - ps->host_bytes ||
	    r->uaddr % 4096 || r->uaddr + r->bytes < r->uaddr)
		return -EPROTO;
	if (r->kind == SNPU_CKPT_HOST_REGISTERED) {
		if (!r->uaddr)
			return -EPROTO;
	} else if (r->kind != SNPU_CKPT_HOST_ALLOC) {
		return -EPROTO;
	}
	if (snpu_ckpt_obj_handle(ps, r->handle, SNPU_CKPT_P_OBJ))
		return -EPROTO;
	ps->host_bytes += r->bytes;
	if (r->kind == SNPU_CKPT_HOST_ALLOC) {
		ps->data_left = r->bytes;
		ps->data_off = 0;
	}
	return 0;
}

static int snpu_ckpt_stream_rec(struct snpu_ckpt_parser *ps,
				const struct snpu_ckpt_stream *r)
{
	if (r->pad || !snpu_ckpt_prio_ok(r->priority) ||
	    r->owner > SNPU_CKPT_HANDLE_MAX)
		return -EPROTO;
	if (r->owner ? snpu_key_check(r->key, sizeof(r->key)) < 0 :
		       !snpu_ckpt_zero(r->key, sizeof(r->key)))
		return -EPROTO;
	return snpu_ckpt_obj_handle(ps, r->handle, SNPU_CKPT_P_OBJ);
}

static bool snpu_ckpt_pow2(__u32 v)
{
	return v && !(v & (v - 1));
}

/**
 * snpu_ckpt_ring_bytes() - the size of the rings' mapping
 * @sq_entries: SQ entries
 * @cq_entries: CQ entries
 * @page_size: the page size
 *
 * The layout of kmod/ring.c: a header page, the SQ entries from the next
 * page, the CQ entries from the page after them.
 *
 * Return: the mapping's bytes.
 */
__u64 snpu_ckpt_ring_bytes(__u32 sq_entries, __u32 cq_entries,
			   __u32 page_size)
{
	__u64 pg = page_size;
	__u64 sq = (__u64)sq_entries * sizeof(struct snpu_task);
	__u64 cq = (__u64)cq_entries * sizeof(struct snpu_cqe);

	return pg + (sq + pg - 1) / pg * pg + (cq + pg - 1) / pg * pg;
}

/**
 * snpu_ckpt_ring_check() - check a RING record on its own
 * @r: the record
 * @page_size: the image's page size
 *
 * The sizes as SNPU_IOC_RING_SETUP takes them, known flags in each flags
 * word, the SQEs submitted and the CQEs not reaped within their rings,
 * the waiting completions within a context's task quota, the mapping's
 * size the one those entries make.
 *
 * Return: 0 or -EPROTO.
 */
int snpu_ckpt_ring_check(const struct snpu_ckpt_ring *r, __u32 page_size)
{
	if (r->pad || !snpu_ckpt_zero(r->reserved, sizeof(r->reserved)) ||
	    r->flags & ~(__u32)(SNPU_RING_SQPOLL | SNPU_RING_CALLBACK_CQE))
		return -EPROTO;
	if (!snpu_ckpt_pow2(r->sq_entries) ||
	    r->sq_entries > SNPU_RING_MAX_ENTRIES ||
	    !snpu_ckpt_pow2(r->cq_entries) || r->cq_entries < r->sq_entries ||
	    r->cq_entries > 2 * SNPU_RING_MAX_ENTRIES)
		return -EPROTO;
	if (r->flags & SNPU_RING_SQPOLL ?
	    !r->idle_ms || r->idle_ms > SNPU_CKPT_RING_MAX_IDLE_MS : r->idle_ms)
		return -EPROTO;
	if (r->sq_tail - r->sq_head > r->sq_entries ||
	    r->cq_tail - r->cq_head > r->cq_entries)
		return -EPROTO;
	if (r->sq_flags & ~(__u32)SNPU_SQ_NEED_WAKEUP ||
	    r->cq_flags & ~(__u32)SNPU_CQ_OVERFLOW)
		return -EPROTO;
	if (r->noverflow > SNPU_CKPT_RING_MAX_OVERFLOW)
		return -EPROTO;
	if (r->bytes != snpu_ckpt_ring_bytes(r->sq_entries, r->cq_entries,
					     page_size))
		return -EPROTO;
	return 0;
}

/**
 * snpu_ckpt_ring_cqe_check() - check a completion that waited for room
 * @cqe: one of the DATA after a RING's mapping
 *
 * Such a completion is a task's (a callback never waits there): no
 * flags, a result 0 or a -errno.
 *
 * Return: 0 or -EPROTO.
 */
int snpu_ckpt_ring_cqe_check(const struct snpu_cqe *cqe)
{
	if (cqe->flags || cqe->result > 0 || cqe->result < -4095)
		return -EPROTO;
	return 0;
}

static int snpu_ckpt_ring_rec(struct snpu_ckpt_parser *ps,
			      const struct snpu_ckpt_ring *r)
{
	if (snpu_ckpt_ring_check(r, ps->page_size))
		return -EPROTO;
	ps->nring++;
	ps->phase = SNPU_CKPT_P_RING;
	ps->data_left = r->bytes + (__u64)r->noverflow * sizeof(struct snpu_cqe);
	ps->data_off = 0;
	return 0;
}

/**
 * snpu_ckpt_graph_def_bytes() - the DATA bytes of a graph's definition
 * @nodes: its nodes, at most SNPU_GRAPH_MAX_NODES
 * @edges: its edges, at most SNPU_GRAPH_MAX_EDGES
 *
 * Return: the nodes' bytes, then the fanin CSR's when there are edges.
 */
__u64 snpu_ckpt_graph_def_bytes(__u32 nodes, __u32 edges)
{
	__u64 bytes = (__u64)nodes * SNPU_GRAPH_NODE_SIZE;

	if (edges)
		bytes += ((__u64)nodes + 1 + edges) * sizeof(__u32);
	return bytes;
}

/*
 * A graph: its counts within SNPU_IOC_GRAPH_CREATE's limits, its slots'
 * extents as the create ioctl takes them, the length of its definition
 * the one its counts give. The module rebuilds it through the create
 * ioctl's checks, which look at every node and edge.
 */
static int snpu_ckpt_graph_rec(struct snpu_ckpt_parser *ps,
			       const struct snpu_ckpt_graph *r)
{
	__u32 i;

	if (!r->nodes || r->nodes > SNPU_GRAPH_MAX_NODES ||
	    r->edges > SNPU_GRAPH_MAX_EDGES ||
	    r->slots > SNPU_CKPT_GRAPH_SLOTS ||
	    /* Each predecessor below its node: at most n (n - 1) / 2. */
	    r->edges > (__u64)r->nodes * (r->nodes - 1) / 2 ||
	    r->def_bytes != snpu_ckpt_graph_def_bytes(r->nodes, r->edges) ||
	    !snpu_ckpt_zero(r->reserved, sizeof(r->reserved)))
		return -EPROTO;
	/* The slots' extents not 0, the rest 0. */
	for (i = 0; i < SNPU_CKPT_GRAPH_SLOTS; i++) {
		bool slot = i < r->slots;

		if (slot != !!r->slot_bytes[i])
			return -EPROTO;
	}
	if (snpu_ckpt_obj_handle(ps, r->handle, SNPU_CKPT_P_GRAPH))
		return -EPROTO;
	ps->data_left = r->def_bytes;
	ps->data_off = 0;
	return 0;
}

/* A rank: a file holds at most SNPU_COMM_MAX_PER_FILE (COMM_JOIN's ENOSPC). */
static int snpu_ckpt_comm_rec(struct snpu_ckpt_parser *ps,
			      const struct snpu_ckpt_comm *r)
{
	if (r->pad || !snpu_ckpt_zero(r->reserved, sizeof(r->reserved)) ||
	    !r->nranks || r->nranks > SNPU_COMM_MAX_RANKS ||
	    r->rank >= r->nranks || ps->ncomm >= SNPU_COMM_MAX_PER_FILE)
		return -EPROTO;
	if (snpu_ckpt_obj_handle(ps, r->handle, SNPU_CKPT_P_OBJ))
		return -EPROTO;
	ps->ncomm++;
	return 0;
}

/**
 * snpu_ckpt_record_check() - check a chunk's record, advance the parser
 * @ps: the parser
 * @c: the chunk header, passed by snpu_ckpt_chunk_check()
 * @rec: its record (for DATA, the struct snpu_ckpt_data only)
 *
 * The caller has checked the chunk's CRC. For DATA, the bytes after the
 * record are the payload's rest and are not looked at.
 *
 * Return: 0, or -EPROTO for a record out of range or out of place.
 */
int snpu_ckpt_record_check(struct snpu_ckpt_parser *ps,
			   const struct snpu_ckpt_chunk *c, const void *rec)
{
	const struct snpu_ckpt_data *d;
	const struct snpu_ckpt_owner *o;
	const struct snpu_ckpt_event *e;
	const struct snpu_ckpt_end *end;
	__u64 n;
	int ret = 0;

	if (snpu_ckpt_chunk_check(ps, c))
		return -EPROTO;
	switch (c->type) {
	case SNPU_CKPT_CTX:
		ret = snpu_ckpt_ctx_rec(ps, rec);
		break;
	case SNPU_CKPT_MEM:
		ret = snpu_ckpt_mem_rec(ps, rec);
		break;
	case SNPU_CKPT_DATA:
		d = rec;
		n = c->len - sizeof(*d);
		if (d->offset != ps->data_off)
			return -EPROTO;
		ps->data_off += n;
		ps->data_left -= n;
		break;
	case SNPU_CKPT_HOST:
		ret = snpu_ckpt_host_rec(ps, rec);
		break;
	case SNPU_CKPT_OWNER:
		o = rec;
		if (o->reserved || !snpu_ckpt_prio_ok(o->priority))
			return -EPROTO;
		ret = snpu_ckpt_obj_handle(ps, o->handle, SNPU_CKPT_P_OWNER);
		break;
	case SNPU_CKPT_STREAM:
		ret = snpu_ckpt_stream_rec(ps, rec);
		break;
	case SNPU_CKPT_COMM:
		ret = snpu_ckpt_comm_rec(ps, rec);
		break;
	case SNPU_CKPT_EVENT:
		e = rec;
		if (e->pad)
			return -EPROTO;
		ret = snpu_ckpt_obj_handle(ps, e->handle, SNPU_CKPT_P_OBJ);
		break;
	case SNPU_CKPT_RING:
		ret = snpu_ckpt_ring_rec(ps, rec);
		break;
	case SNPU_CKPT_GRAPH:
		ret = snpu_ckpt_graph_rec(ps, rec);
		break;
	case SNPU_CKPT_END:
		end = rec;
		if (end->pad || end->chunks != ps->seq ||
		    ps->ctx_seen != ps->contexts)
			return -EPROTO;
		ps->phase = SNPU_CKPT_P_DONE;
		break;
	}
	if (!ret)
		ps->seq++;
	return ret;
}

/**
 * snpu_ckpt_end_check() - the image ended: was it whole
 * @ps: the parser
 *
 * Return: 0 after the END chunk, else -ENODATA (a truncated image).
 */
int snpu_ckpt_end_check(const struct snpu_ckpt_parser *ps)
{
	return ps->phase == SNPU_CKPT_P_DONE ? 0 : -ENODATA;
}

/**
 * snpu_ckpt_parse_buf() - check a whole image held in memory
 * @buf: the image
 * @len: its bytes
 * @lim: what the reader accepts
 * @ps: out: the parser at the end (contexts, chunks)
 *
 * The same checks, in the same order, as the module's reader, which reads
 * from a file: for tools that hold an image and for the tests.
 *
 * Return: 0 for a whole, valid image (bytes after its END are ignored),
 * or the first error: -ENOEXEC, -EBADMSG, -EPROTO, or -ENODATA when it
 * ends early.
 */
int snpu_ckpt_parse_buf(const void *buf, __u64 len,
			const struct snpu_ckpt_limits *lim,
			struct snpu_ckpt_parser *ps)
{
	/* Records are checked from an aligned copy. */
	union {
		struct snpu_ckpt_ctx ctx;
		struct snpu_ckpt_stream stream;
		struct snpu_ckpt_ring ring;
		struct snpu_ckpt_graph graph;
		struct snpu_ckpt_comm comm;
		__u64 align;
	} rec;
	const unsigned char *p = buf;
	struct snpu_ckpt_header h;
	struct snpu_ckpt_chunk c;
	__u64 pos = sizeof(h);
	__u32 crc, rsize;
	int ret;

	memset(ps, 0, sizeof(*ps));
	if (len < sizeof(h))
		return -ENODATA;
	memcpy(&h, p, sizeof(h));
	ret = snpu_ckpt_header_check(ps, &h, lim);
	if (ret)
		return ret;
	while (ps->phase != SNPU_CKPT_P_DONE) {
		if (len - pos < sizeof(c))
			return -ENODATA;
		memcpy(&c, p + pos, sizeof(c));
		pos += sizeof(c);
		ret = snpu_ckpt_chunk_check(ps, &c);
		if (ret)
			return ret;
		if (len - pos < c.len)
			return -ENODATA;
		crc = snpu_ckpt_chunk_crc_begin(&c);
		crc = snpu_ckpt_crc(crc, p + pos, c.len) ^ ~0U;
		if (crc != c.crc)
			return -EBADMSG;
		rsize = snpu_ckpt_payload_size(c.type);
		memcpy(&rec, p + pos, rsize);
		ret = snpu_ckpt_record_check(ps, &c, &rec);
		if (ret)
			return ret;
		pos += c.len;
	}
	return 0;
}
