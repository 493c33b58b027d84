// SPDX-License-Identifier: GPL-2.0
/*
 * snpu checkpoint to a file and restore into a new process
 * (Documentation/checkpoint.rst).
 *
 * A checkpoint writes a locked process's device state, context by
 * context, into a caller's file as the stream of linux/snpu_ckpt.h:
 * allocations with their bytes, host memory, owners, streams, events,
 * the rings (ring.c writes and remakes them). A
 * restore reads one context of such a stream into a fresh file of the
 * caller: the same device addresses (the context takes the image's
 * window of addresses), the same handles and so the same mmap offsets.
 *
 * Reads and writes go through kernel_read()/kernel_write() in chunks of
 * at most SNPU_CKPT_CHUNK_MAX bytes, straight from and into the device
 * memory: nothing is allocated for the stream but a bounded scratch buffer
 * for contexts a restore skips. Every chunk is checked by kmod/core/ckpt.c
 * before anything is made of it, and a restore that fails destroys what
 * it made: the file is as fresh as before.
 */
#include <linux/bitmap.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/maple_tree.h>
#include <linux/sched/signal.h>
#include <linux/sizes.h>
#include <linux/slab.h>

#include "snpu.h"
#include "comm.h"
#include "core/ckpt.h"
#include "graph.h"

/* Scratch for the bytes of a context that a restore skips. */
#define SNPU_CKPT_SCRATCH	SZ_64K

static int snpu_ckpt_put(struct snpu_ckpt_io *io, const void *buf, size_t len)
{
	ssize_t n;

	while (len) {
		if (signal_pending(current))
			return -EINTR;
		n = kernel_write(io->f, buf, len, &io->pos);
		if (n < 0)
			return n;
		if (!n)
			return -EIO;
		buf += n;
		len -= n;
	}
	return 0;
}

static int snpu_ckpt_get(struct snpu_ckpt_io *io, void *buf, size_t len)
{
	ssize_t n;

	while (len) {
		if (signal_pending(current))
			return -EINTR;
		n = kernel_read(io->f, buf, len, &io->pos);
		if (n < 0)
			return n;
		if (!n)
			return -ENODATA;	/* the image ends early */
		buf += n;
		len -= n;
	}
	return 0;
}

/**
 * snpu_ckpt_chunk() - write one chunk of an image
 * @io: the image being written
 * @type: SNPU_CKPT_*
 * @rec: its record
 * @rlen: the record's size
 * @data: DATA: the bytes after the record, else NULL
 * @dlen: how many
 *
 * Return: 0, -EINTR, or the file's error.
 */
int snpu_ckpt_chunk(struct snpu_ckpt_io *io, u32 type, const void *rec,
		    u32 rlen, const void *data, u32 dlen)
{
	struct snpu_ckpt_chunk c = {
		.type = type, .len = rlen + dlen, .seq = io->seq,
	};
	u32 crc = snpu_ckpt_chunk_crc_begin(&c);
	int ret;

	crc = snpu_ckpt_crc(crc, rec, rlen);
	if (dlen)
		crc = snpu_ckpt_crc(crc, data, dlen);
	c.crc = crc ^ ~0U;
	ret = snpu_ckpt_put(io, &c, sizeof(c));
	if (!ret)
		ret = snpu_ckpt_put(io, rec, rlen);
	if (!ret && dlen)
		ret = snpu_ckpt_put(io, data, dlen);
	if (!ret)
		io->seq++;
	return ret;
}

/**
 * snpu_ckpt_put_data() - write bytes as DATA chunks
 * @io: the image being written
 * @base: the bytes
 * @bytes: how many
 * @from: the offset of the first in what the DATA chunks carry
 *
 * Return: 0, -EINTR, or the file's error.
 */
int snpu_ckpt_put_data(struct snpu_ckpt_io *io, const void *base, u64 bytes,
		       u64 from)
{
	struct snpu_ckpt_data d;
	u64 off;
	u32 n;
	int ret;

	for (off = 0; off < bytes; off += n) {
		n = min_t(u64, bytes - off, SNPU_CKPT_CHUNK_MAX);
		d.offset = from + off;
		ret = snpu_ckpt_chunk(io, SNPU_CKPT_DATA, &d, sizeof(d),
				      base + off, n);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * The context's record; -EOPNOTSUPP for what an image cannot hold yet,
 * and the errors of snpu_comm_ckpt_check_locked().
 */
static int snpu_ckpt_ctx_rec_locked(struct snpu_context *ctx,
				    struct snpu_ckpt_ctx *r)
{
	struct snpu_ckpt_graph gr;
	struct snpu_object *obj;
	struct snpu_graph *g;
	struct snpu_mem *mem;
	unsigned long index = 0;
	const void *src;
	int ret;

	lockdep_assert_held(&ctx->lock);
	memset(r, 0, sizeof(*r));
	ret = snpu_comm_ckpt_check_locked(ctx);
	if (ret)
		return ret;
	ret = snpu_ring_ckpt_check_locked(ctx);
	if (ret)
		return ret;
	r->nring = ctx->ring ? 1 : 0;
	r->dev_index = ctx->sdev->index;
	r->cores = ctx->sdev->cores;
	r->mem_total = ctx->sdev->mem_total;
	r->va_window = ctx->va_window;
	r->next_handle = ctx->next_handle;
	mt_for_each(&ctx->va, mem, index, ULONG_MAX) {
		/*
		 * An import is another owner's memory: saved as bytes it
		 * would come back as memory of its own, no longer shared.
		 */
		if (mem->dmabuf)
			return -EOPNOTSUPP;
		r->nmem++;
		r->mem_bytes += mem->bytes;
	}
	xa_for_each(&ctx->handles, index, obj) {
		switch (obj->type) {
		case SNPU_OBJ_HOST:
			r->host_bytes += container_of(obj, struct snpu_host,
						      obj)->bytes;
			fallthrough;
		case SNPU_OBJ_STREAM:
		case SNPU_OBJ_EVENT:
		case SNPU_OBJ_OWNER:
		case SNPU_OBJ_COMM:
			r->nobj++;
			break;
		case SNPU_OBJ_GRAPH:
			/* A graph with collective nodes: -EOPNOTSUPP. */
			g = container_of(obj, struct snpu_graph, obj);
			ret = snpu_graph_ckpt_rec(g, &gr, &src);
			if (ret)
				return ret;
			r->nobj++;
			break;
		default:
			/* Nothing else is in images. */
			return -EOPNOTSUPP;
		}
	}
	return 0;
}

static int snpu_ckpt_put_obj_locked(struct snpu_ckpt_io *io,
				    struct snpu_context *ctx,
				    struct snpu_object *obj)
{
	struct snpu_ckpt_stream sr;
	struct snpu_ckpt_host hr;
	struct snpu_ckpt_event er;
	struct snpu_ckpt_comm cr;
	struct snpu_stream *s;
	struct snpu_host *h;
	int ret;

	switch (obj->type) {
	case SNPU_OBJ_HOST:
		h = container_of(obj, struct snpu_host, obj);
		memset(&hr, 0, sizeof(hr));
		hr.handle = obj->handle;
		hr.kind = h->pages ? SNPU_CKPT_HOST_REGISTERED :
				     SNPU_CKPT_HOST_ALLOC;
		hr.bytes = h->bytes;
		hr.uaddr = h->uaddr;
		ret = snpu_ckpt_chunk(io, SNPU_CKPT_HOST, &hr, sizeof(hr),
				      NULL, 0);
		if (!ret && !h->pages)
			ret = snpu_ckpt_put_data(io, h->kaddr, h->bytes, 0);
		return ret;
	case SNPU_OBJ_STREAM:
		s = container_of(obj, struct snpu_stream, obj);
		memset(&sr, 0, sizeof(sr));
		sr.handle = obj->handle;
		sr.priority = s->priority;
		if (s->owner) {
			sr.owner = s->owner->obj.handle;
			memcpy(sr.key, s->key, sizeof(sr.key));
		}
		spin_lock(&ctx->sched_lock);
		sr.completed = s->completed;
		spin_unlock(&ctx->sched_lock);
		return snpu_ckpt_chunk(io, SNPU_CKPT_STREAM, &sr, sizeof(sr),
				       NULL, 0);
	case SNPU_OBJ_EVENT:
		memset(&er, 0, sizeof(er));
		er.handle = obj->handle;
		return snpu_ckpt_chunk(io, SNPU_CKPT_EVENT, &er, sizeof(er),
				       NULL, 0);
	case SNPU_OBJ_COMM:
		snpu_comm_ckpt_rec_locked(container_of(obj,
						       struct snpu_comm_rank,
						       obj), &cr);
		return snpu_ckpt_chunk(io, SNPU_CKPT_COMM, &cr, sizeof(cr),
				       NULL, 0);
	}
	return 0;
}

/* A graph's definition: its record, then its nodes and edges as DATA. */
static int snpu_ckpt_put_graph(struct snpu_ckpt_io *io,
			       const struct snpu_graph *g)
{
	struct snpu_ckpt_graph gr;
	const void *src;
	int ret;

	ret = snpu_graph_ckpt_rec(g, &gr, &src);
	if (!ret)
		ret = snpu_ckpt_chunk(io, SNPU_CKPT_GRAPH, &gr, sizeof(gr),
				      NULL, 0);
	if (!ret)
		ret = snpu_ckpt_put_data(io, src, gr.def_bytes, 0);
	return ret;
}

static int snpu_ckpt_put_ctx_locked(struct snpu_ckpt_io *io,
				    struct snpu_context *ctx)
{
	struct snpu_ckpt_owner or;
	struct snpu_ckpt_mem mr;
	struct snpu_ckpt_ctx cr;
	struct snpu_object *obj;
	struct snpu_owner *o;
	struct snpu_mem *mem;
	unsigned long index = 0;
	int ret;

	lockdep_assert_held(&ctx->lock);
	ret = snpu_ckpt_ctx_rec_locked(ctx, &cr);
	if (!ret)
		ret = snpu_ckpt_chunk(io, SNPU_CKPT_CTX, &cr, sizeof(cr),
				      NULL, 0);
	/* The tree only changes under the context lock, which we hold. */
	mt_for_each(&ctx->va, mem, index, ULONG_MAX) {
		if (ret)
			return ret;
		memset(&mr, 0, sizeof(mr));
		mr.addr = mem->addr;
		mr.bytes = mem->bytes;
		ret = snpu_ckpt_chunk(io, SNPU_CKPT_MEM, &mr, sizeof(mr),
				      NULL, 0);
		if (!ret)
			ret = snpu_ckpt_put_data(io, mem->vaddr, mem->bytes, 0);
	}
	/* Owners first: an attached stream names one before it. */
	xa_for_each(&ctx->handles, index, obj) {
		if (ret)
			return ret;
		if (obj->type != SNPU_OBJ_OWNER)
			continue;
		o = container_of(obj, struct snpu_owner, obj);
		memset(&or, 0, sizeof(or));
		or.handle = obj->handle;
		or.priority = o->priority;
		ret = snpu_ckpt_chunk(io, SNPU_CKPT_OWNER, &or, sizeof(or),
				      NULL, 0);
	}
	xa_for_each(&ctx->handles, index, obj) {
		if (ret)
			return ret;
		ret = snpu_ckpt_put_obj_locked(io, ctx, obj);
	}
	/* Graphs next: their nodes name the memory restored before them. */
	xa_for_each(&ctx->handles, index, obj) {
		struct snpu_graph *g = container_of(obj, struct snpu_graph, obj);

		if (ret)
			return ret;
		if (obj->type == SNPU_OBJ_GRAPH)
			ret = snpu_ckpt_put_graph(io, g);
	}
	/* The rings last: their SQEs name the streams and graphs above. */
	if (!ret)
		ret = snpu_ring_ckpt_put_locked(io, ctx);
	return ret;
}

/**
 * snpu_ckpt_write() - write a locked process's image into a file
 * @p: the process, with its op_lock held, not RUNNING
 * @f: the caller's file, open for writing; written from its offset on,
 *     which advances (unless it is a stream: pipe, socket)
 * @bytes: out: the image's size
 * @contexts: out: contexts in it
 *
 * Waits for every task of the process, as a backup does, then writes
 * the header, each context, and the END chunk.
 *
 * Return: 0; -EBADF for a file not open for writing; -EINTR on a signal;
 * -EOPNOTSUPP for a process with a graph with collective nodes, an
 * import or a communicator with a rank in another process; -EBUSY for a
 * communicator with a collective queued on some of its ranks only;
 * -EPROTO for rings whose counters the process left out of range;
 * -ESTALE when one of its files closes meanwhile; errors of the file's
 * write. On error the file holds a partial image that a restore refuses.
 */
int snpu_ckpt_write(struct snpu_proc *p, struct file *f, u64 *bytes,
		    u32 *contexts)
{
	struct snpu_ckpt_header h = {
		.magic = SNPU_CKPT_MAGIC,
		.version = SNPU_CKPT_VERSION,
		.abi_major = SNPU_ABI_MAJOR,
		.abi_minor = SNPU_ABI_MINOR,
		.header_size = sizeof(h),
		.page_size = PAGE_SIZE,
		.mem_align = SNPU_MEM_ALIGN,
	};
	struct snpu_ckpt_io io = { .f = f };
	struct snpu_ckpt_end end = { 0 };
	struct snpu_image_ctxs c;
	unsigned long *live;
	bool stream;
	loff_t start;
	int ret;
	u32 i;

	lockdep_assert_held(&p->op_lock);
	if (!(f->f_mode & FMODE_WRITE))
		return -EBADF;
	ret = snpu_image_ctxs_get(p, &c);
	if (ret)
		return ret;
	/* The contexts counted in the header: open when the count is made. */
	live = bitmap_zalloc(c.n ?: 1, GFP_KERNEL);
	if (!live) {
		ret = -ENOMEM;
		goto out;
	}
	/*
	 * What an image cannot hold is refused before a byte is written,
	 * and before the tasks are waited for: a collective that waits for
	 * ranks the lock keeps from queuing theirs would never complete.
	 */
	for (i = 0; i < c.n; i++) {
		struct snpu_ckpt_ctx cr;

		mutex_lock(&c.ctx[i]->lock);
		ret = c.ctx[i]->closed ? 0 :
		      snpu_ckpt_ctx_rec_locked(c.ctx[i], &cr);
		mutex_unlock(&c.ctx[i]->lock);
		if (ret)
			goto out;
	}
	for (i = 0; i < c.n; i++) {
		ret = snpu_image_drain(c.ctx[i]);
		if (ret)
			goto out;
	}
	for (i = 0; i < c.n; i++) {
		if (READ_ONCE(c.ctx[i]->closed))
			continue;
		__set_bit(i, live);
		h.contexts++;
	}
	h.crc = snpu_ckpt_header_crc(&h);

	stream = f->f_mode & FMODE_STREAM;
	io.pos = stream ? 0 : f->f_pos;
	start = io.pos;
	ret = snpu_ckpt_put(&io, &h, sizeof(h));
	for (i = 0; i < c.n && !ret; i++) {
		if (!test_bit(i, live))
			continue;
		mutex_lock(&c.ctx[i]->lock);
		/* Counted in the header and closed since: the image is short. */
		if (c.ctx[i]->closed)
			ret = -ESTALE;
		else
			ret = snpu_ckpt_put_ctx_locked(&io, c.ctx[i]);
		mutex_unlock(&c.ctx[i]->lock);
	}
	if (!ret) {
		end.chunks = io.seq;
		ret = snpu_ckpt_chunk(&io, SNPU_CKPT_END, &end, sizeof(end),
				      NULL, 0);
	}
	if (!stream)
		f->f_pos = io.pos;
	*bytes = io.pos - start;
	*contexts = h.contexts;
out:
	bitmap_free(live);
	snpu_image_ctxs_put(&c);
	return ret;
}

/**
 * struct snpu_ckpt_rst - one restore
 * @io: the image's file
 * @ps: the validator's state
 * @ctx: the fresh context being restored
 * @index: the image's context to restore
 * @active: the current context of the image is @index
 * @dst: where the current allocation's or host memory's bytes go, NULL
 *       to read them into @scratch (a skipped context, registered memory)
 * @scratch: SNPU_CKPT_SCRATCH bytes, allocated when first needed
 * @dev_index: the device @index was checkpointed on
 * @next_handle: its handle cursor
 * @rr: the rings of @index, made, published after the END
 * @ring_data: the DATA chunks being read are the rings'
 * @graph: the GRAPH record whose definition the DATA chunks bring
 * @gdef: that definition, @graph.def_bytes, allocated at the record;
 *        handed to kmod/graph.c once whole
 */
struct snpu_ckpt_rst {
	struct snpu_ckpt_io io;
	struct snpu_ckpt_parser ps;
	struct snpu_context *ctx;
	u32 index;
	bool active;
	void *dst;
	void *scratch;
	u32 dev_index;
	u32 next_handle;
	struct snpu_ring_rst rr;
	bool ring_data;
	struct snpu_ckpt_graph graph;
	void *gdef;
};

/* Take the image's window of device addresses on this device. */
static int snpu_ckpt_window_locked(struct snpu_context *ctx, u32 window)
{
	struct snpu_device *sdev = ctx->sdev;
	int ret;

	lockdep_assert_held(&ctx->lock);
	if (window == ctx->va_window)
		return 0;
	ret = ida_alloc_range(&sdev->va_windows, window, window, GFP_KERNEL);
	if (ret < 0)
		return ret == -ENOSPC ? -EADDRINUSE : ret;
	ida_free(&sdev->va_windows, ctx->va_window);
	ctx->va_window = window;
	ctx->va_base = SNPU_VA_BASE + ((u64)window << SNPU_VA_WINDOW_SHIFT);
	ctx->va_end = ctx->va_base + (1ULL << SNPU_VA_WINDOW_SHIFT) - 1;
	return 0;
}

/* A handle the image gives twice, or an owner it does not have. */
static int snpu_ckpt_errno(int ret)
{
	return ret == -EBUSY ? -EPROTO : ret;
}

static int snpu_ckpt_make_host_locked(struct snpu_ckpt_rst *r,
				      const struct snpu_ckpt_host *rec)
{
	struct snpu_context *ctx = r->ctx;
	struct snpu_host *host;
	int ret;

	if (rec->kind == SNPU_CKPT_HOST_REGISTERED)
		host = snpu_host_new_register(ctx, rec->uaddr, rec->bytes);
	else
		host = snpu_host_new_alloc(ctx, rec->bytes);
	if (IS_ERR(host))
		return PTR_ERR(host);
	host->obj.handle = rec->handle;
	ret = snpu_host_publish_locked(ctx, host);
	if (ret) {
		snpu_host_put(host);
		return ret == -EEXIST ? -EPROTO : snpu_ckpt_errno(ret);
	}
	if (!host->pages)
		r->dst = host->kaddr;
	return 0;
}

static int snpu_ckpt_make_owner_locked(struct snpu_context *ctx,
				       const struct snpu_ckpt_owner *rec)
{
	struct snpu_owner *owner;
	int ret;

	ret = snpu_priority_check(rec->priority);
	if (ret)
		return ret;
	if (ctx->owners >= snpu_quota.streams)
		return -ENOSPC;
	owner = kzalloc(sizeof(*owner), GFP_KERNEL_ACCOUNT);
	if (!owner)
		return -ENOMEM;
	owner->priority = rec->priority;
	INIT_LIST_HEAD(&owner->streams);
	owner->obj.handle = rec->handle;
	ret = snpu_object_add_locked(ctx, &owner->obj, SNPU_OBJ_OWNER);
	if (ret) {
		kfree(owner);
		return snpu_ckpt_errno(ret);
	}
	ctx->owners++;
	return 0;
}

static int snpu_ckpt_make_stream_locked(struct snpu_context *ctx,
					const struct snpu_ckpt_stream *rec)
{
	struct snpu_owner *owner = NULL;
	struct snpu_object *obj;
	struct snpu_stream *s;
	int ret;

	ret = snpu_priority_check(rec->priority);
	if (ret)
		return ret;
	if (rec->owner) {
		obj = snpu_object_get_locked(ctx, rec->owner, SNPU_OBJ_OWNER);
		if (!obj)
			return -EPROTO;
		owner = container_of(obj, struct snpu_owner, obj);
		list_for_each_entry(s, &owner->streams, owner_node)
			if (!memcmp(s->key, rec->key, sizeof(s->key)))
				return -EPROTO;
		if (rec->priority != owner->priority)
			return -EPROTO;
	}
	s = snpu_stream_new_at_locked(ctx, rec->priority, rec->handle);
	if (IS_ERR(s))
		return snpu_ckpt_errno(PTR_ERR(s));
	if (owner) {
		s->owner = owner;
		memcpy(s->key, rec->key, sizeof(s->key));
		list_add_tail(&s->owner_node, &owner->streams);
	}
	spin_lock(&ctx->sched_lock);
	s->submitted = rec->completed;
	s->completed = rec->completed;
	spin_unlock(&ctx->sched_lock);
	return 0;
}

static int snpu_ckpt_make_event_locked(struct snpu_context *ctx,
				       const struct snpu_ckpt_event *rec)
{
	struct snpu_event *e;
	int ret;

	if (ctx->events >= snpu_quota.events)
		return -ENOSPC;
	e = kzalloc(sizeof(*e), GFP_KERNEL_ACCOUNT);
	if (!e)
		return -ENOMEM;
	e->obj.handle = rec->handle;
	ret = snpu_object_add_locked(ctx, &e->obj, SNPU_OBJ_EVENT);
	if (ret) {
		kfree(e);
		return snpu_ckpt_errno(ret);
	}
	ctx->events++;
	return 0;
}

/*
 * A graph: its definition comes in the DATA chunks that follow, into a
 * buffer of the size the validator bounded (at most a create's); the
 * graph is built when the last one has passed its CRC.
 */
static int snpu_ckpt_begin_graph(struct snpu_ckpt_rst *r,
				 const struct snpu_ckpt_graph *rec)
{
	r->gdef = kvmalloc(rec->def_bytes, GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!r->gdef)
		return -ENOMEM;
	r->graph = *rec;
	r->dst = r->gdef;
	return 0;
}

/* The context of the image starts: is it the one to restore? */
static int snpu_ckpt_begin_ctx_locked(struct snpu_ckpt_rst *r,
				      const struct snpu_ckpt_ctx *rec)
{
	struct snpu_context *ctx = r->ctx;

	r->active = r->ps.ctx_seen - 1 == r->index;
	if (!r->active)
		return 0;
	r->dev_index = rec->dev_index;
	r->next_handle = rec->next_handle;
	/* A device too small for it: refused before anything is made. */
	if (rec->mem_bytes > ctx->sdev->mem_total ||
	    (snpu_quota.mem && rec->mem_bytes > snpu_quota.mem) ||
	    rec->host_bytes > snpu_quota.host)
		return -ENOSPC;
	return snpu_ckpt_window_locked(ctx, rec->va_window);
}

/* Make what a record of the context being restored describes. */
static int snpu_ckpt_apply_locked(struct snpu_ckpt_rst *r, u32 type,
				  const void *rec)
{
	const struct snpu_ckpt_mem *mr = rec;
	struct snpu_mem *mem;

	r->dst = NULL;
	r->ring_data = false;
	if (type == SNPU_CKPT_CTX)
		return snpu_ckpt_begin_ctx_locked(r, rec);
	if (!r->active)
		return 0;
	switch (type) {
	case SNPU_CKPT_RING:
		r->ring_data = true;
		return snpu_ring_ckpt_make_locked(r->ctx, &r->rr, rec);
	case SNPU_CKPT_MEM:
		mem = snpu_mem_restore_locked(r->ctx, mr->addr, mr->bytes);
		if (IS_ERR(mem))
			return PTR_ERR(mem);
		r->dst = mem->vaddr;
		return 0;
	case SNPU_CKPT_HOST:
		return snpu_ckpt_make_host_locked(r, rec);
	case SNPU_CKPT_OWNER:
		return snpu_ckpt_make_owner_locked(r->ctx, rec);
	case SNPU_CKPT_STREAM:
		return snpu_ckpt_make_stream_locked(r->ctx, rec);
	case SNPU_CKPT_EVENT:
		return snpu_ckpt_make_event_locked(r->ctx, rec);
	case SNPU_CKPT_GRAPH:
		return snpu_ckpt_begin_graph(r, rec);
	case SNPU_CKPT_COMM:
		return snpu_comm_ckpt_make_locked(r->ctx, rec);
	}
	return 0;
}

/*
 * Where @n bytes of DATA at @off go, and how many of them go there (in
 * @n); NULL for the scratch buffer, at most its size.
 */
static void *snpu_ckpt_dst(struct snpu_ckpt_rst *r, u64 off, u32 *n)
{
	if (r->ring_data)
		return snpu_ring_ckpt_dst(&r->rr, off, n);
	if (r->dst)
		return r->dst + off;
	*n = min_t(u32, *n, SNPU_CKPT_SCRATCH);
	return NULL;
}

/* A DATA chunk: its bytes go where snpu_ckpt_dst() says. */
static int snpu_ckpt_get_data(struct snpu_ckpt_rst *r,
			      const struct snpu_ckpt_chunk *c, u32 *crc)
{
	struct snpu_ckpt_data d;
	u32 n, piece;
	void *dst;
	u64 off;
	int ret;

	ret = snpu_ckpt_get(&r->io, &d, sizeof(d));
	if (ret)
		return ret;
	*crc = snpu_ckpt_crc(*crc, &d, sizeof(d));
	/* Where the bytes go is checked before they go there. */
	if (d.offset != r->ps.data_off)
		return -EPROTO;
	n = c->len - sizeof(d);
	off = d.offset;
	while (n && !ret) {
		piece = n;
		dst = snpu_ckpt_dst(r, off, &piece);
		if (!dst) {
			if (!r->scratch)
				r->scratch = kvmalloc(SNPU_CKPT_SCRATCH,
						      GFP_KERNEL_ACCOUNT);
			if (!r->scratch)
				return -ENOMEM;
			dst = r->scratch;
		}
		ret = snpu_ckpt_get(&r->io, dst, piece);
		if (!ret)
			*crc = snpu_ckpt_crc(*crc, dst, piece);
		off += piece;
		n -= piece;
	}
	if (ret)
		return ret;
	if ((*crc ^ ~0U) != c->crc)
		return -EBADMSG;
	ret = snpu_ckpt_record_check(&r->ps, c, &d);
	if (ret || !r->gdef || r->ps.data_left)
		return ret;
	/* The graph's whole definition is in: kmod/graph.c takes it over. */
	ret = snpu_graph_restore_locked(r->ctx, &r->graph, r->gdef);
	r->gdef = NULL;
	return ret;
}

static int snpu_ckpt_read_locked(struct snpu_ckpt_rst *r, u32 *contexts)
{
	const struct snpu_ckpt_limits lim = {
		.abi_major = SNPU_ABI_MAJOR,
		.page_size = PAGE_SIZE,
		.mem_align = SNPU_MEM_ALIGN,
	};
	union {
		struct snpu_ckpt_ctx ctx;
		struct snpu_ckpt_mem mem;
		struct snpu_ckpt_host host;
		struct snpu_ckpt_owner owner;
		struct snpu_ckpt_stream stream;
		struct snpu_ckpt_event event;
		struct snpu_ckpt_ring ring;
		struct snpu_ckpt_graph graph;
		struct snpu_ckpt_end end;
		struct snpu_ckpt_comm comm;
	} rec;
	struct snpu_ckpt_header h;
	struct snpu_ckpt_chunk c;
	u32 crc;
	int ret;

	ret = snpu_ckpt_get(&r->io, &h, sizeof(h));
	if (!ret)
		ret = snpu_ckpt_header_check(&r->ps, &h, &lim);
	if (ret)
		return ret;
	*contexts = h.contexts;
	if (r->index >= h.contexts)
		return -ENOENT;
	while (r->ps.phase != SNPU_CKPT_P_DONE) {
		ret = snpu_ckpt_get(&r->io, &c, sizeof(c));
		if (!ret)
			ret = snpu_ckpt_chunk_check(&r->ps, &c);
		if (ret)
			return ret;
		crc = snpu_ckpt_chunk_crc_begin(&c);
		if (c.type == SNPU_CKPT_DATA) {
			ret = snpu_ckpt_get_data(r, &c, &crc);
			if (ret)
				return ret;
			continue;
		}
		/* snpu_ckpt_chunk_check() bounds c.len to the type's size. */
		ret = snpu_ckpt_get(&r->io, &rec, c.len);
		if (ret)
			return ret;
		if ((snpu_ckpt_crc(crc, &rec, c.len) ^ ~0U) != c.crc)
			return -EBADMSG;
		ret = snpu_ckpt_record_check(&r->ps, &c, &rec);
		if (!ret)
			ret = snpu_ckpt_apply_locked(r, c.type, &rec);
		if (ret)
			return ret;
	}
	return 0;
}

/* Destroy what a failed restore made: the context is fresh again. */
static void snpu_ckpt_unmake_locked(struct snpu_context *ctx)
{
	struct snpu_object *obj;
	unsigned long index;

	lockdep_assert_held(&ctx->lock);
	/* Graphs first: they hold the allocations their nodes name. */
	xa_for_each(&ctx->handles, index, obj) {
		struct snpu_graph *g = container_of(obj, struct snpu_graph, obj);

		if (obj->type == SNPU_OBJ_GRAPH)
			snpu_graph_destroy_locked(ctx, g);
	}
	/* Owners take their attached streams with them. */
	xa_for_each(&ctx->handles, index, obj) {
		struct snpu_owner *o = container_of(obj, struct snpu_owner, obj);

		if (obj->type == SNPU_OBJ_OWNER)
			snpu_owner_destroy_locked(ctx, o);
	}
	xa_for_each(&ctx->handles, index, obj) {
		struct snpu_stream *s = container_of(obj, struct snpu_stream, obj);
		struct snpu_event *e = container_of(obj, struct snpu_event, obj);
		struct snpu_host *h = container_of(obj, struct snpu_host, obj);
		struct snpu_comm_rank *cr = container_of(obj,
							 struct snpu_comm_rank,
							 obj);

		if (obj->type == SNPU_OBJ_STREAM)
			snpu_stream_destroy_locked(ctx, s);
		else if (obj->type == SNPU_OBJ_EVENT)
			snpu_event_destroy_locked(ctx, e);
		else if (obj->type == SNPU_OBJ_HOST)
			snpu_host_destroy_locked(ctx, h);
		else if (obj->type == SNPU_OBJ_COMM)
			snpu_comm_rank_destroy_locked(ctx, cr);
	}
	snpu_mem_unmake_all_locked(ctx);
}

int snpu_ioc_ckpt_restore(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_ckpt_restore *a = &arg->ckpt_restore;
	struct snpu_ckpt_rst r = { .ctx = ctx };
	u32 contexts = 0;
	struct file *f;
	u32 cursor;
	int ret;

	if (!snpu_zero(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	f = fget(a->fd);
	if (!f)
		return -EBADF;
	ret = -EBADF;
	if (!(f->f_mode & FMODE_READ))
		goto out_put;
	ret = -ESPIPE;
	if (!(f->f_mode & FMODE_PREAD))
		goto out_put;
	r.io.f = f;
	r.index = a->index;

	/*
	 * The context stays locked while the image is read: its other
	 * calls wait, and none sees it half made.
	 */
	mutex_lock(&ctx->lock);
	if (!xa_empty(&ctx->handles) || !mtree_empty(&ctx->va) || ctx->ring) {
		ret = -ENOTEMPTY;
		goto out_unlock;
	}
	cursor = ctx->next_handle;
	ret = snpu_ckpt_read_locked(&r, &contexts);
	if (!ret)
		ret = snpu_ring_ckpt_verify(&r.rr);
	/*
	 * The ranks restored meet their peers once all the rest is made
	 * and checked: nothing after this fails.
	 */
	if (!ret)
		ret = snpu_comm_ckpt_settle_locked(ctx);
	if (!ret)
		snpu_ring_ckpt_publish_locked(ctx, &r.rr);
	if (ret) {
		snpu_ring_ckpt_discard(ctx, &r.rr);
		snpu_ckpt_unmake_locked(ctx);
		ctx->next_handle = cursor;
	} else {
		ctx->next_handle = r.next_handle;
	}
out_unlock:
	mutex_unlock(&ctx->lock);
	kvfree(r.gdef);
	kvfree(r.scratch);
	a->contexts = contexts;
	a->dev_index = r.dev_index;
	a->bytes = r.io.pos;
out_put:
	fput(f);
	return ret;
}
