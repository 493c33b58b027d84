// SPDX-License-Identifier: GPL-2.0
/*
 * snpu dma-buf: device memory shared with other contexts, processes and
 * drivers (SNPU_IOC_MEM_EXPORT, SNPU_IOC_MEM_IMPORT). See the kernel's
 * Documentation/driver-api/dma-buf.rst for the roles of exporter and
 * importer.
 *
 * Export: snpu is the exporter of a page-aligned range of one allocation.
 * The dma-buf holds a reference to the allocation (its pages stay when
 * MEM_FREE or the file's release drops the address) and one to the
 * context (whose memory counters the allocation's charge is taken from
 * when it finally goes). The backing is vmalloc()ed: the page list is
 * taken once at export, and every operation works from it:
 * map_dma_buf gives each attachment an sg_table of the pages mapped for
 * the attaching device; mmap inserts the pages into the caller's VMA;
 * vmap hands out the kernel address snpu's own cores use;
 * begin/end_cpu_access sync the attachments' mappings for the CPU and back
 * (DMA_BUF_IOCTL_SYNC). No fences are put in the reservation object:
 * snpu's work is ordered explicitly (sync_file fences, fence.c).
 *
 * Import: any dma-buf becomes an allocation of the importing context. snpu's
 * cores are CPU threads that reach memory by kernel address, so the import
 * attaches (letting the exporter pin the buffer) and keeps a kernel mapping
 * (dma_buf_vmap()) for the allocation's life; no DMA mapping is made. The
 * import is charged to the importer's context quota only: the memory is
 * the exporter's, charged where the exporter allocated it.
 */
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/file.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "snpu.h"

SNPU_IMPORT_NS_DMA_BUF;

/**
 * struct snpu_dmabuf - what snpu exports: a range of an allocation
 * @mem: the allocation, referenced
 * @vaddr: kernel address of the range's first byte
 * @bytes: length of the range, whole pages
 * @pages: the range's pages, @bytes / PAGE_SIZE of them
 * @lock: protects @attachments and their mapped state
 * @attachments: struct snpu_dmabuf_attach, by @node
 */
struct snpu_dmabuf {
	struct snpu_mem *mem;
	void *vaddr;
	u64 bytes;
	struct page **pages;
	struct mutex lock;		/* @attachments, their @dir */
	struct list_head attachments;
};

/**
 * struct snpu_dmabuf_attach - one device attached to an export
 * @dev: the attached device
 * @sgt: the pages, mapped for @dev while @dir is not DMA_NONE
 * @dir: the direction of the mapping, DMA_NONE when unmapped (under the
 *       export's @lock)
 * @node: in snpu_dmabuf.attachments
 */
struct snpu_dmabuf_attach {
	struct device *dev;
	struct sg_table sgt;
	enum dma_data_direction dir;
	struct list_head node;
};

static int snpu_dmabuf_attach(struct dma_buf *dmabuf,
			      struct dma_buf_attachment *attach)
{
	struct snpu_dmabuf *buf = dmabuf->priv;
	struct snpu_dmabuf_attach *a;
	int ret;

	a = kzalloc(sizeof(*a), GFP_KERNEL_ACCOUNT);
	if (!a)
		return -ENOMEM;
	ret = sg_alloc_table_from_pages(&a->sgt, buf->pages,
					buf->bytes >> PAGE_SHIFT, 0,
					buf->bytes, GFP_KERNEL_ACCOUNT);
	if (ret) {
		kfree(a);
		return ret;
	}
	a->dev = attach->dev;
	a->dir = DMA_NONE;
	attach->priv = a;
	mutex_lock(&buf->lock);
	list_add(&a->node, &buf->attachments);
	mutex_unlock(&buf->lock);
	return 0;
}

static void snpu_dmabuf_detach(struct dma_buf *dmabuf,
			       struct dma_buf_attachment *attach)
{
	struct snpu_dmabuf *buf = dmabuf->priv;
	struct snpu_dmabuf_attach *a = attach->priv;

	mutex_lock(&buf->lock);
	list_del(&a->node);
	mutex_unlock(&buf->lock);
	sg_free_table(&a->sgt);
	kfree(a);
}

static struct sg_table *snpu_dmabuf_map(struct dma_buf_attachment *attach,
					enum dma_data_direction dir)
{
	struct snpu_dmabuf *buf = attach->dmabuf->priv;
	struct snpu_dmabuf_attach *a = attach->priv;
	int ret;

	mutex_lock(&buf->lock);
	if (a->dir != DMA_NONE) {
		/* One mapping at a time per attachment. */
		ret = -EBUSY;
	} else {
		ret = dma_map_sgtable(a->dev, &a->sgt, dir, 0);
		if (!ret)
			a->dir = dir;
	}
	mutex_unlock(&buf->lock);
	return ret ? ERR_PTR(ret) : &a->sgt;
}

static void snpu_dmabuf_unmap(struct dma_buf_attachment *attach,
			      struct sg_table *sgt,
			      enum dma_data_direction dir)
{
	struct snpu_dmabuf *buf = attach->dmabuf->priv;
	struct snpu_dmabuf_attach *a = attach->priv;

	mutex_lock(&buf->lock);
	dma_unmap_sgtable(a->dev, sgt, dir, 0);
	a->dir = DMA_NONE;
	mutex_unlock(&buf->lock);
}

/*
 * The CPU sees the pages coherently through snpu's own mappings (the
 * cores' and user mmaps); what is left is the attached devices' view:
 * DMA_BUF_IOCTL_SYNC's start syncs their mappings for the CPU, its end
 * back for the devices.
 */
static void snpu_dmabuf_sync(struct snpu_dmabuf *buf, bool for_cpu)
{
	struct snpu_dmabuf_attach *a;

	mutex_lock(&buf->lock);
	list_for_each_entry(a, &buf->attachments, node) {
		if (a->dir == DMA_NONE)
			continue;
		if (for_cpu)
			dma_sync_sgtable_for_cpu(a->dev, &a->sgt, a->dir);
		else
			dma_sync_sgtable_for_device(a->dev, &a->sgt, a->dir);
	}
	mutex_unlock(&buf->lock);
}

static int snpu_dmabuf_begin_cpu(struct dma_buf *dmabuf,
				 enum dma_data_direction dir)
{
	snpu_dmabuf_sync(dmabuf->priv, true);
	return 0;
}

static int snpu_dmabuf_end_cpu(struct dma_buf *dmabuf,
			       enum dma_data_direction dir)
{
	snpu_dmabuf_sync(dmabuf->priv, false);
	return 0;
}

/*
 * The dma-buf core checked that the VMA's window lies in the buffer and
 * holds the dma-buf's file in vma->vm_file for the mapping's life, so the
 * pages outlive every PTE made here; fork, mremap and partial unmaps
 * need nothing more. The PTEs are made at once: a fault path would only
 * make them later, one at a time.
 */
static int snpu_dmabuf_mmap(struct dma_buf *dmabuf, struct vm_area_struct *vma)
{
	struct snpu_dmabuf *buf = dmabuf->priv;
	unsigned long n = vma_pages(vma);

	/* Shared memory: a private copy-on-write view of it is refused. */
	if (!(vma->vm_flags & VM_SHARED) ||
	    vma->vm_pgoff > buf->bytes >> PAGE_SHIFT ||
	    n > (buf->bytes >> PAGE_SHIFT) - vma->vm_pgoff)
		return -EINVAL;
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	return vm_insert_pages(vma, vma->vm_start, buf->pages + vma->vm_pgoff,
			       &n);
}

static int snpu_dmabuf_vmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	struct snpu_dmabuf *buf = dmabuf->priv;

	iosys_map_set_vaddr(map, buf->vaddr);
	return 0;
}

/* The address is the allocation's own: nothing to undo. */
static void snpu_dmabuf_vunmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
}

/*
 * The last reference to the dma-buf: fds, mappings, importers are gone.
 * The allocation goes now unless its context still names it or a job
 * holds it; the context's memory with the last of its references.
 */
static void snpu_dmabuf_release(struct dma_buf *dmabuf)
{
	struct snpu_dmabuf *buf = dmabuf->priv;
	struct snpu_context *ctx = buf->mem->ctx;

	WARN_ON(!list_empty(&buf->attachments));
	kvfree(buf->pages);
	snpu_mem_put(buf->mem);
	mutex_destroy(&buf->lock);
	kfree(buf);
	/* Uncharged above: a closed context's release may now see zero. */
	smp_mb__before_atomic();
	atomic_dec(&ctx->exports);
	snpu_ctx_put(ctx);
}

static const struct dma_buf_ops snpu_dmabuf_ops = {
	.attach = snpu_dmabuf_attach,
	.detach = snpu_dmabuf_detach,
	.map_dma_buf = snpu_dmabuf_map,
	.unmap_dma_buf = snpu_dmabuf_unmap,
	.release = snpu_dmabuf_release,
	.begin_cpu_access = snpu_dmabuf_begin_cpu,
	.end_cpu_access = snpu_dmabuf_end_cpu,
	.mmap = snpu_dmabuf_mmap,
	.vmap = snpu_dmabuf_vmap,
	.vunmap = snpu_dmabuf_vunmap,
};

/* Publish @dmabuf as a new fd of the caller, output written first. */
static int snpu_dmabuf_install(union snpu_ioc_arg *arg, struct dma_buf *dmabuf)
{
	struct snpu_mem_export *x = &arg->mem_export;
	int fd, ret;

	fd = get_unused_fd_flags(x->flags & SNPU_EXPORT_CLOEXEC ? O_CLOEXEC : 0);
	if (fd < 0)
		return fd;
	x->fd = fd;
	ret = snpu_ioc_copy_out(arg);
	if (ret) {
		put_unused_fd(fd);
		return ret;
	}
	/* The fd owns the reference from here on. */
	fd_install(fd, dmabuf->file);
	return 0;
}

/*
 * Exporting the whole of an import hands out the imported dma-buf itself
 * (as DRM PRIME does for a re-export); a part of it cannot be a dma-buf.
 */
static int snpu_dmabuf_reexport(union snpu_ioc_arg *arg, struct snpu_mem *mem)
{
	struct snpu_mem_export *x = &arg->mem_export;
	int ret;

	if (x->addr != mem->addr || x->bytes != mem->bytes) {
		snpu_mem_put(mem);
		return -EINVAL;
	}
	get_dma_buf(mem->dmabuf);
	ret = snpu_dmabuf_install(arg, mem->dmabuf);
	if (ret)
		dma_buf_put(mem->dmabuf);
	snpu_mem_put(mem);
	return ret;
}

int snpu_ioc_mem_export(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	DEFINE_DMA_BUF_EXPORT_INFO(info);
	struct snpu_mem_export *x = &arg->mem_export;
	struct snpu_dmabuf *buf;
	struct dma_buf *dmabuf;
	struct snpu_mem *mem;
	unsigned long i, n;
	void *kaddr;
	u64 off;
	int ret;

	BUILD_BUG_ON(SNPU_MEM_ALIGN % PAGE_SIZE);
	if (!snpu_zero(x->reserved, sizeof(x->reserved)) || x->pad ||
	    !x->bytes || !PAGE_ALIGNED(x->bytes))
		return -EINVAL;

	mutex_lock(&ctx->lock);
	ret = snpu_mem_resolve_locked(ctx, x->addr, 1, &mem, &kaddr);
	mutex_unlock(&ctx->lock);
	if (ret)
		return ret;
	if (mem->dmabuf)
		return snpu_dmabuf_reexport(arg, mem);
	/* Whole pages of the allocation: its last one is all its own. */
	off = x->addr - mem->addr;
	if (!PAGE_ALIGNED(off)) {
		ret = -EINVAL;
		goto err_put;
	}
	if (x->bytes > PAGE_ALIGN(mem->bytes) - off) {
		ret = -EFAULT;
		goto err_put;
	}

	ret = -ENOMEM;
	buf = kzalloc(sizeof(*buf), GFP_KERNEL_ACCOUNT);
	if (!buf)
		goto err_put;
	n = x->bytes >> PAGE_SHIFT;
	buf->pages = kvmalloc_array(n, sizeof(*buf->pages), GFP_KERNEL_ACCOUNT);
	if (!buf->pages)
		goto err_free;
	for (i = 0; i < n; i++)
		buf->pages[i] = vmalloc_to_page(kaddr + (i << PAGE_SHIFT));
	buf->mem = mem;
	buf->vaddr = kaddr;
	buf->bytes = x->bytes;
	mutex_init(&buf->lock);
	INIT_LIST_HEAD(&buf->attachments);

	info.ops = &snpu_dmabuf_ops;
	info.size = x->bytes;
	info.flags = O_RDWR;
	info.priv = buf;
	/* The release drops what the dma-buf holds from here on. */
	snpu_ctx_get(ctx);
	atomic_inc(&ctx->exports);
	dmabuf = dma_buf_export(&info);
	if (IS_ERR(dmabuf)) {
		atomic_dec(&ctx->exports);
		snpu_ctx_put(ctx);
		mutex_destroy(&buf->lock);
		ret = PTR_ERR(dmabuf);
		goto err_free;
	}

	ret = snpu_dmabuf_install(arg, dmabuf);
	if (ret)
		dma_buf_put(dmabuf);
	return ret;

err_free:
	kvfree(buf->pages);
	kfree(buf);
err_put:
	snpu_mem_put(mem);
	return ret;
}

/*
 * Charge an import to the context's quota: the configured one, else the
 * device's size (what MEM_QUERY/CTX_QUERY report as mem_limit).
 */
static int snpu_dmabuf_charge(struct snpu_context *ctx, u64 bytes)
{
	u64 limit = snpu_quota.mem ?: ctx->sdev->mem_total;

	if (atomic64_add_return(bytes, &ctx->mem_used) > limit) {
		atomic64_sub(bytes, &ctx->mem_used);
		return -ENOSPC;
	}
	return 0;
}

int snpu_ioc_mem_import(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_mem_import *x = &arg->mem_import;
	struct dma_buf *dmabuf;
	struct snpu_mem *mem;
	int ret;

	if (!snpu_zero(x->reserved, sizeof(x->reserved)) || x->pad)
		return -EINVAL;

	/* EBADF: no open file; EINVAL: not a dma-buf. */
	dmabuf = dma_buf_get(x->fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	ret = -EINVAL;
	if (!dmabuf->size || !PAGE_ALIGNED(dmabuf->size))
		goto err_put;

	ret = -ENOMEM;
	mem = kzalloc(sizeof(*mem), GFP_KERNEL_ACCOUNT);
	if (!mem)
		goto err_put;
	kref_init(&mem->ref);
	mem->ctx = ctx;
	mem->bytes = dmabuf->size;
	ret = snpu_dmabuf_charge(ctx, mem->bytes);
	if (ret)
		goto err_free;
	mem->charged = mem->bytes;

	mem->attach = dma_buf_attach(dmabuf, ctx->sdev->misc.this_device);
	if (IS_ERR(mem->attach)) {
		ret = PTR_ERR(mem->attach);
		goto err_uncharge;
	}
	ret = snpu_dma_buf_vmap(dmabuf, &mem->map);
	if (ret) {
		/* No kernel mapping from this exporter at all. */
		if (ret != -ENOMEM && ret != -EINTR)
			ret = -EOPNOTSUPP;
		goto err_detach;
	}
	if (mem->map.is_iomem) {
		ret = -EOPNOTSUPP;
		goto err_vunmap;
	}
	mem->vaddr = mem->map.vaddr;
	mem->dmabuf = dmabuf;

	ret = snpu_mem_place(ctx, mem, mem->bytes, SNPU_MEM_ALIGN);
	if (ret)
		goto err_vunmap;
	x->addr = mem->addr;
	x->bytes = mem->bytes;
	return 0;

err_vunmap:
	snpu_dma_buf_vunmap(dmabuf, &mem->map);
err_detach:
	dma_buf_detach(dmabuf, mem->attach);
err_uncharge:
	atomic64_sub(mem->bytes, &ctx->mem_used);
err_free:
	kfree(mem);
err_put:
	dma_buf_put(dmabuf);
	return ret;
}

/**
 * snpu_dmabuf_import_release() - let go of an import's dma-buf
 * @mem: the import, with no reference left (its charge gone already)
 *
 * Called where the memory of an allocation is freed: in process context,
 * from the last put or from snpu_free_wq. May sleep.
 */
void snpu_dmabuf_import_release(struct snpu_mem *mem)
{
	snpu_dma_buf_vunmap(mem->dmabuf, &mem->map);
	dma_buf_detach(mem->dmabuf, mem->attach);
	dma_buf_put(mem->dmabuf);
}
