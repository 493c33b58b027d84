// SPDX-License-Identifier: GPL-2.0
/*
 * snpu device memory: allocations placed in the context's device address
 * space (a maple tree keyed by address), backed by driver-owned memory,
 * charged to the device and the context.
 */
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "snpu.h"

/* Largest alignment an allocation may ask for. */
#define SNPU_MEM_MAX_ALIGN	BIT_ULL(30)

/* An import is charged to its context only: snpu did not allocate it. */
static void snpu_mem_uncharge(struct snpu_mem *mem)
{
	struct snpu_context *ctx = mem->ctx;

	if (!mem->dmabuf)
		atomic64_sub(mem->charged, &ctx->sdev->mem_used);
	atomic64_sub(mem->charged, &ctx->mem_used);
}

/* The backing: our pages, or an import's kernel mapping and attachment. */
static void snpu_mem_free(struct snpu_mem *mem)
{
	if (mem->dmabuf)
		snpu_dmabuf_import_release(mem);
	else
		vfree(mem->vaddr);
	kfree(mem);
}

static void snpu_mem_release(struct kref *ref)
{
	struct snpu_mem *mem = container_of(ref, struct snpu_mem, ref);

	snpu_mem_uncharge(mem);
	snpu_mem_free(mem);
}

static void snpu_mem_free_work(struct work_struct *work)
{
	struct snpu_mem *mem = container_of(work, struct snpu_mem, free_work);

	snpu_mem_free(mem);
}

/* The charge goes at once, the memory when the worker gets to it. */
static void snpu_mem_release_deferred(struct kref *ref)
{
	struct snpu_mem *mem = container_of(ref, struct snpu_mem, ref);

	snpu_mem_uncharge(mem);
	INIT_WORK(&mem->free_work, snpu_mem_free_work);
	queue_work(snpu_free_wq, &mem->free_work);
}

/**
 * snpu_mem_put() - drop a reference to a device allocation
 * @mem: the allocation
 *
 * The last reference frees the memory and its charge. May sleep.
 */
void snpu_mem_put(struct snpu_mem *mem)
{
	kref_put(&mem->ref, snpu_mem_release);
}

/**
 * snpu_mem_put_deferred() - drop a reference to a device allocation from
 * a job
 * @mem: the allocation
 *
 * Like snpu_mem_put(), but the last reference leaves the vfree() of a
 * possibly large buffer to snpu_free_wq: a core completing a job never
 * does it. The charge goes at once.
 */
void snpu_mem_put_deferred(struct snpu_mem *mem)
{
	kref_put(&mem->ref, snpu_mem_release_deferred);
}

/**
 * snpu_mem_resolve_locked() - check a device range and reference it
 * @ctx: the context
 * @addr: device address
 * @bytes: extent, > 0
 * @memp: the allocation, with a reference the caller drops
 * @kaddr: kernel address of @addr
 *
 * Return: 0, or -EFAULT when [@addr, @addr + @bytes) is not inside one
 * allocation of @ctx.
 */
int snpu_mem_resolve_locked(struct snpu_context *ctx, u64 addr, u64 bytes,
			    struct snpu_mem **memp, void **kaddr)
{
	struct snpu_mem *mem;
	u64 off;

	lockdep_assert_held(&ctx->lock);
	if (!bytes)
		return -EFAULT;
	/* Tasks in a row mostly name the same allocation: try it first. */
	mem = ctx->mem_hint;
	if (!mem || addr < mem->addr || addr - mem->addr >= mem->bytes) {
		if (addr < ctx->va_base || addr > ctx->va_end)
			return -EFAULT;
		mem = mtree_load(&ctx->va, addr);
		if (!mem)
			return -EFAULT;
		ctx->mem_hint = mem;
	}
	/* The tree covers the rounded size: the tail past @bytes is not ours. */
	off = addr - mem->addr;
	if (off >= mem->bytes || bytes > mem->bytes - off)
		return -EFAULT;

	kref_get(&mem->ref);
	*memp = mem;
	*kaddr = mem->vaddr + off;
	return 0;
}

/*
 * Charge @bytes to the context quota, if there is one (-ENOSPC), and to
 * the device (-ENOMEM).
 */
static int snpu_mem_charge(struct snpu_context *ctx, u64 bytes)
{
	struct snpu_device *sdev = ctx->sdev;
	u64 used = atomic64_add_return(bytes, &ctx->mem_used);

	if (snpu_quota.mem && used > snpu_quota.mem) {
		atomic64_sub(bytes, &ctx->mem_used);
		return -ENOSPC;
	}
	if (atomic64_add_return(bytes, &sdev->mem_used) > sdev->mem_total) {
		atomic64_sub(bytes, &sdev->mem_used);
		atomic64_sub(bytes, &ctx->mem_used);
		return -ENOMEM;
	}
	return 0;
}

/**
 * snpu_mem_place() - give an allocation its address in the context
 * @ctx: the context
 * @mem: the allocation, backed and charged, not yet visible
 * @span: bytes of address space it covers, a multiple of SNPU_MEM_ALIGN
 * @align: alignment of its address, a power of two >= SNPU_MEM_ALIGN
 *
 * Sets @mem->addr; from then on the context's addresses resolve to it.
 *
 * Return: 0, or -ENOMEM when the address space has no such room (or no
 * memory for the tree's nodes).
 */
int snpu_mem_place(struct snpu_context *ctx, struct snpu_mem *mem, u64 span,
		   u64 align)
{
	u64 start = 0;
	int ret;

	MA_STATE(mas, &ctx->va, 0, 0);

	mutex_lock(&ctx->lock);
	mtree_lock(&ctx->va);
	ret = mas_empty_area(&mas, ctx->va_base, ctx->va_end,
			     span + align - SNPU_MEM_ALIGN);
	if (!ret) {
		start = round_up(mas.index, align);
		mas_set_range(&mas, start, start + span - 1);
		ret = mas_store_gfp(&mas, mem, GFP_KERNEL_ACCOUNT);
	} else {
		ret = -ENOMEM;
	}
	if (!ret)
		mem->addr = start;
	mtree_unlock(&ctx->va);
	mutex_unlock(&ctx->lock);
	return ret;
}

/**
 * snpu_mem_restore_locked() - recreate an allocation at its address
 * @ctx: the context being restored (kmod/ckpt.c)
 * @addr: the image's device address, checked to be in @ctx's window
 * @bytes: its size, > 0
 *
 * Charged and backed as MEM_ALLOC is; the bytes are zero until the
 * restore writes them.
 *
 * Return: the allocation, or ERR_PTR(-ENOSPC) past the context quota,
 * -ENOMEM past the device's memory or the memory cgroup's limit, -EPROTO
 * when the range is not free.
 */
struct snpu_mem *snpu_mem_restore_locked(struct snpu_context *ctx, u64 addr,
					 u64 bytes)
{
	u64 charged = round_up(bytes, SNPU_MEM_ALIGN);
	struct snpu_mem *mem;
	int ret;

	lockdep_assert_held(&ctx->lock);
	if (addr < ctx->va_base || charged - 1 > ctx->va_end - addr)
		return ERR_PTR(-EPROTO);
	mem = kzalloc(sizeof(*mem), GFP_KERNEL_ACCOUNT);
	if (!mem)
		return ERR_PTR(-ENOMEM);
	kref_init(&mem->ref);
	mem->ctx = ctx;
	mem->addr = addr;
	mem->bytes = bytes;
	ret = snpu_mem_charge(ctx, charged);
	if (ret) {
		kfree(mem);
		return ERR_PTR(ret);
	}
	mem->charged = charged;
	mem->vaddr = __vmalloc(charged, GFP_KERNEL_ACCOUNT | __GFP_ZERO |
			       __GFP_RETRY_MAYFAIL | __GFP_NOWARN);
	if (!mem->vaddr) {
		snpu_mem_put(mem);
		return ERR_PTR(-ENOMEM);
	}
	ret = mtree_insert_range(&ctx->va, addr, addr + charged - 1, mem,
				 GFP_KERNEL_ACCOUNT);
	if (ret) {
		snpu_mem_put(mem);
		return ERR_PTR(ret == -EEXIST ? -EPROTO : ret);
	}
	return mem;
}

/**
 * snpu_mem_unmake_all_locked() - free every allocation of a context that
 * has never run a task (a restore that failed)
 * @ctx: the context
 */
void snpu_mem_unmake_all_locked(struct snpu_context *ctx)
{
	struct snpu_mem *mem;
	unsigned long index = 0;

	lockdep_assert_held(&ctx->lock);
	ctx->mem_hint = NULL;
	mt_for_each(&ctx->va, mem, index, ULONG_MAX) {
		mtree_erase(&ctx->va, mem->addr);
		snpu_mem_put(mem);
	}
}

int snpu_ioc_mem_alloc(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_mem_alloc *a = &arg->mem_alloc;
	struct snpu_mem *mem;
	u64 align, charged;
	int ret;

	if (!snpu_zero(a->reserved, sizeof(a->reserved)) || !a->bytes ||
	    a->bytes > (u64)ctx->sdev->mem_total)
		return -EINVAL;
	if (a->align && (!is_power_of_2(a->align) ||
			 a->align > SNPU_MEM_MAX_ALIGN))
		return -EINVAL;
	align = max_t(u64, a->align, SNPU_MEM_ALIGN);
	charged = round_up(a->bytes, SNPU_MEM_ALIGN);

	mem = kzalloc(sizeof(*mem), GFP_KERNEL_ACCOUNT);
	if (!mem)
		return -ENOMEM;
	kref_init(&mem->ref);
	mem->ctx = ctx;
	mem->bytes = a->bytes;

	ret = snpu_mem_charge(ctx, charged);
	if (ret)
		goto err_free;
	mem->charged = charged;
	/*
	 * The backing is the process's: charged to its memory cgroup, where
	 * a limit fails the allocation rather than invoking the OOM killer.
	 */
	mem->vaddr = __vmalloc(charged, GFP_KERNEL_ACCOUNT | __GFP_ZERO |
			       __GFP_RETRY_MAYFAIL | __GFP_NOWARN);
	if (!mem->vaddr) {
		ret = -ENOMEM;
		goto err_uncharge;
	}

	ret = snpu_mem_place(ctx, mem, charged, align);
	if (ret)
		goto err_vfree;

	a->addr = mem->addr;
	return 0;

err_vfree:
	vfree(mem->vaddr);
err_uncharge:
	atomic64_sub(charged, &ctx->sdev->mem_used);
	atomic64_sub(charged, &ctx->mem_used);
err_free:
	kfree(mem);
	return ret;
}

int snpu_ioc_mem_free(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_mem_free *f = &arg->mem_free;
	struct snpu_mem *mem;

	if (!snpu_zero(f->reserved, sizeof(f->reserved)))
		return -EINVAL;

	mutex_lock(&ctx->lock);
	mem = f->addr >= ctx->va_base && f->addr <= ctx->va_end ?
		mtree_load(&ctx->va, f->addr) : NULL;
	if (!mem || mem->addr != f->addr) {
		mutex_unlock(&ctx->lock);
		return -EINVAL;
	}
	mtree_erase(&ctx->va, f->addr);
	if (ctx->mem_hint == mem)
		ctx->mem_hint = NULL;
	mutex_unlock(&ctx->lock);

	/* Jobs that name it keep it until they complete. */
	snpu_mem_put(mem);
	return 0;
}

int snpu_ioc_mem_query(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_mem_query *q = &arg->mem_query;
	struct snpu_mem *mem;
	void *kaddr;
	int ret;

	if (!snpu_zero(q->reserved, sizeof(q->reserved)))
		return -EINVAL;

	mutex_lock(&ctx->lock);
	ret = snpu_mem_resolve_locked(ctx, q->addr, 1, &mem, &kaddr);
	if (!ret) {
		q->base = mem->addr;
		q->bytes = mem->bytes;
	}
	mutex_unlock(&ctx->lock);
	if (!ret)
		snpu_mem_put(mem);
	return ret;
}

/* Bytes a synchronous copy or memset moves between rescheduling points. */
#define SNPU_SYNC_CHUNK		BIT(20)

/*
 * Copy (or with @dir 0 set to @value) in chunks, rescheduling between
 * them; user copies may fault, so no lock is held.
 */
static int snpu_mem_copy_chunks(u32 dir, void *dst, const void *src, u64 bytes,
				u8 value)
{
	/* Overlapping D2D with @dst above @src: last chunk first (memmove). */
	bool down = dir == SNPU_COPY_D2D && dst > src;
	u64 done, n, off;

	for (done = 0; done < bytes; done += n) {
		n = min_t(u64, bytes - done, SNPU_SYNC_CHUNK);
		off = down ? bytes - done - n : done;
		if (dir == SNPU_COPY_H2D) {
			if (copy_from_user(dst + off,
					   (const void __user *)src + off, n))
				return -EFAULT;
		} else if (dir == SNPU_COPY_D2H) {
			if (copy_to_user((void __user *)dst + off, src + off,
					 n))
				return -EFAULT;
		} else if (dir == SNPU_COPY_D2D) {
			memmove(dst + off, src + off, n);
		} else {
			memset(dst + off, value, n);
		}
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}
	return 0;
}

int snpu_ioc_mem_copy(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_mem_copy *c = &arg->mem_copy;
	struct snpu_mem *dmem = NULL, *smem = NULL;
	void *dst = NULL, *src = NULL;
	int ret = 0;

	if (!snpu_zero(c->reserved, sizeof(c->reserved)) || c->pad ||
	    !c->bytes || c->dir < SNPU_COPY_H2D || c->dir > SNPU_COPY_D2D)
		return -EINVAL;

	mutex_lock(&ctx->lock);
	if (c->dir != SNPU_COPY_D2H)
		ret = snpu_mem_resolve_locked(ctx, c->dst, c->bytes, &dmem, &dst);
	if (!ret && c->dir != SNPU_COPY_H2D)
		ret = snpu_mem_resolve_locked(ctx, c->src, c->bytes, &smem, &src);
	mutex_unlock(&ctx->lock);
	if (ret)
		goto out;

	if (c->dir == SNPU_COPY_H2D)
		src = (void __force *)u64_to_user_ptr(c->src);
	else if (c->dir == SNPU_COPY_D2H)
		dst = (void __force *)u64_to_user_ptr(c->dst);
	ret = snpu_mem_copy_chunks(c->dir, dst, src, c->bytes, 0);
out:
	if (dmem)
		snpu_mem_put(dmem);
	if (smem)
		snpu_mem_put(smem);
	return ret;
}

int snpu_ioc_mem_set(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_mem_set *m = &arg->mem_set;
	struct snpu_mem *mem;
	void *dst;
	int ret;

	if (!snpu_zero(m->reserved, sizeof(m->reserved)) || m->pad ||
	    m->value > 0xff || !m->bytes)
		return -EINVAL;

	mutex_lock(&ctx->lock);
	ret = snpu_mem_resolve_locked(ctx, m->addr, m->bytes, &mem, &dst);
	mutex_unlock(&ctx->lock);
	if (ret)
		return ret;
	ret = snpu_mem_copy_chunks(0, dst, NULL, m->bytes, m->value);
	snpu_mem_put(mem);
	return ret;
}

/**
 * snpu_mem_destroy_all() - free every allocation of a closing context
 * @ctx: the context, with no job left
 */
void snpu_mem_destroy_all(struct snpu_context *ctx)
{
	MA_STATE(mas, &ctx->va, 0, 0);
	struct snpu_mem *mem;

	/* No other user is left: the tree lock only keeps lockdep happy. */
	mtree_lock(&ctx->va);
	mas_for_each(&mas, mem, ULONG_MAX) {
		mas_pause(&mas);
		mtree_unlock(&ctx->va);
		snpu_mem_put(mem);
		mtree_lock(&ctx->va);
	}
	mtree_unlock(&ctx->va);
	mtree_destroy(&ctx->va);
}
