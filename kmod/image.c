// SPDX-License-Identifier: GPL-2.0
/*
 * snpu snapshot images: a process's device state written to a shmem file
 * (swappable, not pinned), and read back by restore.
 *
 * An image is a sequence of records; a memory record is followed by the
 * allocation's bytes. Contexts are named by their id, objects by their
 * handle, allocations by their address: restore finds each of them again
 * and fails with -ESTALE when one is gone.
 */
#include <linux/fs.h>
#include <linux/maple_tree.h>
#include <linux/sched/signal.h>
#include <linux/shmem_fs.h>
#include <linux/slab.h>

#include "graph.h"

enum snpu_rec_type {
	SNPU_REC_CTX = 1,
	SNPU_REC_MEM,
	SNPU_REC_STREAM,
	SNPU_REC_EVENT,
	SNPU_REC_OWNER,
	SNPU_REC_HOST,
	SNPU_REC_GRAPH,
	SNPU_REC_END,
};

/**
 * struct snpu_rec - one record of an image
 * @type: enum snpu_rec_type
 * @handle: the object's handle
 * @id: CTX: the context's id
 * @addr: MEM: device address; HOST: user address
 * @bytes: MEM, HOST: size; MEM: that many bytes follow the record;
 *         GRAPH: the number of nodes
 * @priority: STREAM, OWNER: SNPU_PRIO_*
 * @owner: STREAM: the owner's handle of an attached stream, else 0
 * @key: STREAM: an attached stream's key
 */
struct snpu_rec {
	u32 type;
	u32 handle;
	u64 id;
	u64 addr;
	u64 bytes;
	s32 priority;
	u32 owner;
	char key[SNPU_ATTACHED_KEY_MAX];
};

/*
 * The image lives in the kernel's own shmem mount, which has no size
 * limit: running out of room there is running out of memory.
 */
static int snpu_image_write(struct file *f, const void *buf, size_t len,
			    loff_t *pos)
{
	ssize_t n = kernel_write(f, buf, len, pos);

	if (n == -ENOSPC || (n >= 0 && n != len))
		return -ENOMEM;
	return n < 0 ? n : 0;
}

static int snpu_image_read(struct file *f, void *buf, size_t len, loff_t *pos)
{
	ssize_t n = kernel_read(f, buf, len, pos);

	if (n < 0)
		return n;
	return n == len ? 0 : -EIO;
}

/* The record of a handle's object; false for nothing to save. */
static bool snpu_obj_rec(struct snpu_object *obj, struct snpu_rec *r)
{
	struct snpu_stream *s;
	struct snpu_owner *o;
	struct snpu_host *h;

	memset(r, 0, sizeof(*r));
	r->handle = obj->handle;
	switch (obj->type) {
	case SNPU_OBJ_STREAM:
		s = container_of(obj, struct snpu_stream, obj);
		r->type = SNPU_REC_STREAM;
		r->priority = s->priority;
		if (s->owner) {
			r->owner = s->owner->obj.handle;
			memcpy(r->key, s->key, sizeof(r->key));
		}
		return true;
	case SNPU_OBJ_EVENT:
		r->type = SNPU_REC_EVENT;
		return true;
	case SNPU_OBJ_OWNER:
		o = container_of(obj, struct snpu_owner, obj);
		r->type = SNPU_REC_OWNER;
		r->priority = o->priority;
		return true;
	case SNPU_OBJ_HOST:
		h = container_of(obj, struct snpu_host, obj);
		r->type = SNPU_REC_HOST;
		r->addr = h->uaddr;
		r->bytes = h->bytes;
		return true;
	case SNPU_OBJ_GRAPH:
		r->type = SNPU_REC_GRAPH;
		r->bytes = container_of(obj, struct snpu_graph, obj)->nodes;
		return true;
	}
	return false;
}

static int snpu_image_save_ctx_locked(struct snpu_context *ctx,
				      struct file *f, loff_t *pos)
{
	struct snpu_rec r = { .type = SNPU_REC_CTX, .id = ctx->id };
	struct snpu_object *obj;
	struct snpu_mem *mem;
	unsigned long index;
	int ret;

	lockdep_assert_held(&ctx->lock);
	/* Closed since the list was read: as if it had been closed before. */
	if (ctx->closed)
		return 0;
	ret = snpu_image_write(f, &r, sizeof(r), pos);
	/* The tree only changes under the context lock, which we hold. */
	index = 0;
	mt_for_each(&ctx->va, mem, index, ULONG_MAX) {
		if (ret)
			break;
		/*
		 * An import's bytes are its exporter's: not saved, and so
		 * not restored; the import keeps its address.
		 */
		if (mem->dmabuf)
			continue;
		memset(&r, 0, sizeof(r));
		r.type = SNPU_REC_MEM;
		r.addr = mem->addr;
		r.bytes = mem->bytes;
		ret = snpu_image_write(f, &r, sizeof(r), pos);
		if (!ret)
			ret = snpu_image_write(f, mem->vaddr, mem->bytes, pos);
		if (!ret && fatal_signal_pending(current))
			ret = -EINTR;
	}
	xa_for_each(&ctx->handles, index, obj) {
		if (ret)
			break;
		if (snpu_obj_rec(obj, &r))
			ret = snpu_image_write(f, &r, sizeof(r), pos);
	}
	return ret;
}

/**
 * snpu_image_ctxs_get() - hold the process's contexts by reference
 * @p: the process
 * @c: out: its contexts, for snpu_image_ctxs_put()
 *
 * Return: 0 or -ENOMEM.
 */
int snpu_image_ctxs_get(struct snpu_proc *p, struct snpu_image_ctxs *c)
{
	struct snpu_context *ctx;
	u32 n = 0;

	mutex_lock(&p->list_lock);
	list_for_each_entry(ctx, &p->contexts, proc_node)
		n++;
	c->ctx = kmalloc_array(n ?: 1, sizeof(*c->ctx), GFP_KERNEL);
	if (!c->ctx) {
		mutex_unlock(&p->list_lock);
		return -ENOMEM;
	}
	c->n = 0;
	list_for_each_entry(ctx, &p->contexts, proc_node) {
		snpu_ctx_get(ctx);
		c->ctx[c->n++] = ctx;
	}
	mutex_unlock(&p->list_lock);
	return 0;
}

/**
 * snpu_image_ctxs_put() - drop what snpu_image_ctxs_get() took
 * @c: the contexts
 */
void snpu_image_ctxs_put(struct snpu_image_ctxs *c)
{
	u32 i;

	for (i = 0; i < c->n; i++)
		snpu_ctx_put(c->ctx[i]);
	kfree(c->ctx);
}

/**
 * snpu_image_drain() - wait until no task of the context is queued or running
 * @ctx: a context of a locked process
 *
 * Return: 0 or -EINTR.
 */
int snpu_image_drain(struct snpu_context *ctx)
{
	int ret;

	spin_lock(&ctx->sched_lock);
	ctx->draining = true;
	spin_unlock(&ctx->sched_lock);
	ret = wait_event_interruptible(ctx->wq, !READ_ONCE(ctx->inflight));
	spin_lock(&ctx->sched_lock);
	ctx->draining = false;
	spin_unlock(&ctx->sched_lock);
	return ret == -ERESTARTSYS ? -EINTR : ret;
}

/**
 * snpu_image_backup() - save a locked process's device state
 * @p: the process, with its op_lock held and its modifying calls blocked
 * @reuse: an image no longer needed, whose pages to write over, or NULL
 * @image: out: the image: @reuse, or a new shmem file; NULL on error
 * @bytes: out: its size
 *
 * Waits for every task of the process to complete, then writes each
 * context's allocations (address, size, bytes) and objects.
 *
 * Return: 0, -EINTR on a signal, or -ENOMEM; on error the image is
 * dropped, @reuse included.
 */
int snpu_image_backup(struct snpu_proc *p, struct file *reuse,
		      struct file **image, u64 *bytes)
{
	struct snpu_rec end = { .type = SNPU_REC_END };
	struct snpu_image_ctxs c;
	struct file *f = reuse;
	loff_t pos = 0;
	int ret;
	u32 i;

	lockdep_assert_held(&p->op_lock);
	*image = reuse;
	if (!f) {
		f = snpu_shmem_file_noreserve("snpu-image", 0);
		if (IS_ERR(f))
			return PTR_ERR(f) == -ENOSPC ? -ENOMEM : PTR_ERR(f);
	}

	/*
	 * The contexts closing meanwhile stay readable (and are skipped);
	 * contexts opened meanwhile have no task: the process is locked.
	 */
	ret = snpu_image_ctxs_get(p, &c);
	if (ret)
		goto out_put;
	for (i = 0; i < c.n; i++) {
		ret = snpu_image_drain(c.ctx[i]);
		if (ret)
			goto out;
	}
	for (i = 0; i < c.n; i++) {
		mutex_lock(&c.ctx[i]->lock);
		ret = snpu_image_save_ctx_locked(c.ctx[i], f, &pos);
		mutex_unlock(&c.ctx[i]->lock);
		if (ret)
			goto out;
	}
	ret = snpu_image_write(f, &end, sizeof(end), &pos);
	/* A reused file may be longer: the image ends here. */
	if (!ret && reuse)
		ret = vfs_truncate(&f->f_path, pos);
out:
	snpu_image_ctxs_put(&c);
out_put:
	if (ret) {
		fput(f);
		return ret;
	}
	*image = f;
	*bytes = pos;
	return 0;
}

/* Restore one record into @ctx (NULL: the context is gone, skip it). */
static int snpu_image_restore_rec(struct snpu_context *ctx,
				  const struct snpu_rec *r, struct file *f,
				  loff_t *pos)
{
	struct snpu_object *obj;
	struct snpu_stream *s;
	struct snpu_mem *mem;

	if (r->type == SNPU_REC_MEM) {
		if (!ctx) {
			*pos += r->bytes;
			return 0;
		}
		mem = mtree_load(&ctx->va, r->addr);
		if (!mem || mem->addr != r->addr || mem->bytes != r->bytes)
			return -ESTALE;
		return snpu_image_read(f, mem->vaddr, r->bytes, pos);
	}
	if (!ctx)
		return 0;

	obj = xa_load(&ctx->handles, r->handle);
	switch (r->type) {
	case SNPU_REC_STREAM:
		if (!obj || obj->type != SNPU_OBJ_STREAM)
			return -ESTALE;
		s = container_of(obj, struct snpu_stream, obj);
		/* Tasks were drained and none could be queued since. */
		spin_lock(&ctx->sched_lock);
		if (!s->tail)
			WRITE_ONCE(s->error, 0);
		spin_unlock(&ctx->sched_lock);
		return 0;
	case SNPU_REC_EVENT:
		return obj && obj->type == SNPU_OBJ_EVENT ? 0 : -ESTALE;
	case SNPU_REC_OWNER:
		return obj && obj->type == SNPU_OBJ_OWNER ? 0 : -ESTALE;
	case SNPU_REC_HOST:
		return obj && obj->type == SNPU_OBJ_HOST ? 0 : -ESTALE;
	case SNPU_REC_GRAPH:
		/* A definition never changes: the same handle, the same graph. */
		if (!obj || obj->type != SNPU_OBJ_GRAPH ||
		    container_of(obj, struct snpu_graph, obj)->nodes != r->bytes)
			return -ESTALE;
		return 0;
	}
	return -EIO;
}

static struct snpu_context *snpu_image_find_ctx(struct snpu_image_ctxs *c,
						u64 id)
{
	u32 i;

	for (i = 0; i < c->n; i++)
		if (c->ctx[i]->id == id)
			return c->ctx[i];
	return NULL;
}

/**
 * snpu_image_restore() - write a backup back into the process's state
 * @p: the process, with its op_lock held and its modifying calls blocked
 * @image: from snpu_image_backup()
 *
 * Every allocation gets its bytes back at its address and every stream's
 * error is cleared. A context closed since the backup is skipped.
 *
 * Return: 0; -ESTALE when an allocation or object of the image no longer
 * exists; -EIO for a bad image; -EINTR on a fatal signal.
 */
int snpu_image_restore(struct snpu_proc *p, struct file *image)
{
	struct snpu_context *ctx = NULL;
	struct snpu_image_ctxs c;
	struct snpu_rec r;
	loff_t pos = 0;
	int ret;

	lockdep_assert_held(&p->op_lock);
	ret = snpu_image_ctxs_get(p, &c);
	if (ret)
		return ret;
	for (;;) {
		ret = snpu_image_read(image, &r, sizeof(r), &pos);
		if (ret || r.type == SNPU_REC_END)
			break;
		if (r.type == SNPU_REC_CTX) {
			if (ctx)
				mutex_unlock(&ctx->lock);
			ctx = snpu_image_find_ctx(&c, r.id);
			if (ctx)
				mutex_lock(&ctx->lock);
			/* A context closing is skipped like a closed one. */
			if (ctx && ctx->closed) {
				mutex_unlock(&ctx->lock);
				ctx = NULL;
			}
			continue;
		}
		ret = snpu_image_restore_rec(ctx, &r, image, &pos);
		if (!ret && fatal_signal_pending(current))
			ret = -EINTR;
		if (ret)
			break;
	}
	if (ctx)
		mutex_unlock(&ctx->lock);
	snpu_image_ctxs_put(&c);
	return ret;
}
