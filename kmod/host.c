// SPDX-License-Identifier: GPL-2.0
/*
 * snpu host memory: the only host memory queued copies may touch. Either
 * allocated by the driver and mapped once into the process, or user
 * memory registered and pinned. Both are found by user address in the
 * context's host_va tree and kept alive by the jobs that use them.
 */
#include <linux/capability.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "snpu.h"

/*
 * Driver-allocated host memory is pinned memory the process can map:
 * charge it to RLIMIT_MEMLOCK like pinned user memory, in the mm's
 * pinned_vm (VmPin) as RDMA does for pinned user pages. Not locked_vm:
 * its release may run in the vma close of the last mapping, under the
 * mmap_lock that account_locked_vm() takes. The limit covers locked_vm
 * and pinned_vm together, so registered and allocated memory share it.
 */
static int snpu_host_pin_charge(struct mm_struct *mm, unsigned long npages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	s64 pinned = atomic64_add_return(npages, &mm->pinned_vm);

	if (pinned + READ_ONCE(mm->locked_vm) > limit &&
	    !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return -ENOMEM;
	}
	return 0;
}

static void snpu_host_unpin_charge(struct mm_struct *mm, unsigned long npages)
{
	atomic64_sub(npages, &mm->pinned_vm);
}

/* Unpin (and uncharge the pinning mm) or free; may take its mmap_lock. */
static void snpu_host_free(struct snpu_host *host)
{
	if (host->pages) {
		vunmap(host->kaddr);
		unpin_user_pages(host->pages, host->npages);
		account_locked_vm(host->mm, host->npages, false);
		mmdrop(host->mm);
		kvfree(host->pages);
	} else {
		vfree(host->kaddr);
		if (host->mm) {
			snpu_host_unpin_charge(host->mm, host->npages);
			mmdrop(host->mm);
		}
	}
	kfree_rcu(host, obj.rcu);
}

static void snpu_host_free_work(struct work_struct *work)
{
	snpu_host_free(container_of(work, struct snpu_host, free_work));
}

static void snpu_host_release(struct kref *ref)
{
	struct snpu_host *host = container_of(ref, struct snpu_host, ref);

	atomic64_sub(host->bytes, &host->ctx->host_used);
	snpu_host_free(host);
}

/* The quota is free at once, the memory when the worker gets to it. */
static void snpu_host_release_deferred(struct kref *ref)
{
	struct snpu_host *host = container_of(ref, struct snpu_host, ref);

	atomic64_sub(host->bytes, &host->ctx->host_used);
	INIT_WORK(&host->free_work, snpu_host_free_work);
	queue_work(snpu_free_wq, &host->free_work);
}

/**
 * snpu_host_put() - drop a reference to host memory
 * @host: the host memory
 *
 * The last reference unpins (and uncharges) or frees it. May sleep; never
 * called with mmap_lock held for registered memory (only mappings of
 * driver-allocated memory drop references under it).
 */
void snpu_host_put(struct snpu_host *host)
{
	kref_put(&host->ref, snpu_host_release);
}

/**
 * snpu_host_put_deferred() - drop a reference to host memory from a job
 * @host: the host memory
 *
 * Like snpu_host_put(), but the last reference leaves the unpinning (and
 * the user's mmap_lock it takes) or the vfree() to snpu_free_wq: a core
 * completing a job never does it. The context's quota is uncharged at
 * once.
 */
void snpu_host_put_deferred(struct snpu_host *host)
{
	kref_put(&host->ref, snpu_host_release_deferred);
}

/**
 * snpu_host_resolve() - find the host memory holding a user range
 * @ctx: the context
 * @uaddr: user address
 * @bytes: extent, > 0
 * @hostp: the host memory, with a reference the caller drops
 * @kaddr: kernel address of @uaddr
 *
 * Return: 0, or -EINVAL when the range is not inside one host memory
 * range of @ctx (mapped driver memory or registered memory).
 */
int snpu_host_resolve(struct snpu_context *ctx, u64 uaddr, u64 bytes,
		      struct snpu_host **hostp, void **kaddr)
{
	struct snpu_host *host;
	u64 off;

	if (!bytes || uaddr > ULONG_MAX)
		return -EINVAL;
	rcu_read_lock();
	host = mtree_load(&ctx->host_va, uaddr);
	if (host && !kref_get_unless_zero(&host->ref))
		host = NULL;
	rcu_read_unlock();
	if (!host)
		return -EINVAL;

	off = uaddr - host->uaddr;
	if (uaddr < host->uaddr || off >= host->bytes ||
	    bytes > host->bytes - off) {
		snpu_host_put(host);
		return -EINVAL;
	}
	*hostp = host;
	*kaddr = host->kaddr + off;
	return 0;
}

static int snpu_host_charge(struct snpu_context *ctx, u64 bytes)
{
	if (atomic64_add_return(bytes, &ctx->host_used) > snpu_quota.host) {
		atomic64_sub(bytes, &ctx->host_used);
		return -ENOSPC;
	}
	return 0;
}

/**
 * snpu_host_new_alloc() - driver-allocated host memory, not yet published
 * @ctx: the context
 * @bytes: whole pages, at most the host quota
 *
 * Charged to the context's quota, RLIMIT_MEMLOCK and the memory cgroup.
 * snpu_host_publish_locked() gives it a handle; snpu_host_put() undoes it.
 *
 * Return: the memory, zeroed, or an ERR_PTR: -ENOSPC, -ENOMEM.
 */
struct snpu_host *snpu_host_new_alloc(struct snpu_context *ctx, u64 bytes)
{
	struct snpu_host *host;
	int ret;

	host = kzalloc(sizeof(*host), GFP_KERNEL_ACCOUNT);
	if (!host)
		return ERR_PTR(-ENOMEM);
	kref_init(&host->ref);
	host->ctx = ctx;
	host->bytes = bytes;
	ret = snpu_host_charge(ctx, bytes);
	if (ret) {
		kfree(host);
		return ERR_PTR(ret);
	}
	/* CAP_IPC_LOCK goes past RLIMIT_MEMLOCK, as for registered memory. */
	ret = snpu_host_pin_charge(current->mm, bytes >> PAGE_SHIFT);
	if (ret)
		goto err;
	host->npages = bytes >> PAGE_SHIFT;
	mmgrab(current->mm);
	host->mm = current->mm;
	host->kaddr = snpu_vmalloc_user(bytes);
	if (!host->kaddr) {
		ret = -ENOMEM;
		goto err;
	}
	return host;
err:
	/* Never published: release frees and uncharges. */
	snpu_host_put(host);
	return ERR_PTR(ret);
}

/**
 * snpu_host_publish_locked() - give new host memory its handle
 * @ctx: the context
 * @host: from snpu_host_new_alloc() or snpu_host_new_register(); its
 *        @obj.handle preset by a restore, else 0
 *
 * Return: 0, or an errno of snpu_object_add_locked() or of the range tree
 * (-EEXIST: registered memory overlaps other registered memory); on error
 * the caller still owns @host.
 */
int snpu_host_publish_locked(struct snpu_context *ctx, struct snpu_host *host)
{
	int ret;

	lockdep_assert_held(&ctx->lock);
	if (!host->pages)
		return snpu_object_add_locked(ctx, &host->obj, SNPU_OBJ_HOST);
	ret = mtree_insert_range(&ctx->host_va, host->uaddr,
				 host->uaddr + host->bytes - 1, host,
				 GFP_KERNEL);
	if (!ret) {
		ret = snpu_object_add_locked(ctx, &host->obj, SNPU_OBJ_HOST);
		if (ret)
			mtree_erase(&ctx->host_va, host->uaddr);
	}
	return ret;
}

int snpu_ioc_host_alloc(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_host_alloc *a = &arg->host_alloc;
	struct snpu_host *host;
	int ret;

	if (!snpu_zero(a->reserved, sizeof(a->reserved)) || a->pad ||
	    !a->bytes || a->bytes > snpu_quota.host)
		return -EINVAL;
	host = snpu_host_new_alloc(ctx, PAGE_ALIGN(a->bytes));
	if (IS_ERR(host))
		return PTR_ERR(host);

	mutex_lock(&ctx->lock);
	ret = snpu_host_publish_locked(ctx, host);
	mutex_unlock(&ctx->lock);
	if (ret) {
		snpu_host_put(host);
		return ret;
	}
	a->handle = host->obj.handle;
	a->mmap_offset = SNPU_HOST_MMAP_OFFSET +
			 ((u64)host->obj.handle << PAGE_SHIFT);
	return 0;
}

/**
 * snpu_host_new_register() - pin the caller's memory, not yet published
 * @ctx: the context
 * @addr: page-aligned user address of the caller's process
 * @bytes: whole pages
 *
 * Return: the memory, or an ERR_PTR: -EINVAL for a range out of the
 * address space or the quota, -ENOSPC, -ENOMEM, -EFAULT, errors of
 * RLIMIT_MEMLOCK and of pin_user_pages_fast().
 */
struct snpu_host *snpu_host_new_register(struct snpu_context *ctx, u64 addr,
					 u64 bytes)
{
	unsigned long npages;
	struct snpu_host *host;
	int pinned, ret;

	if (!bytes || !PAGE_ALIGNED(addr) || !PAGE_ALIGNED(bytes) ||
	    bytes > snpu_quota.host || addr + bytes < addr ||
	    addr + bytes > TASK_SIZE)
		return ERR_PTR(-EINVAL);
	npages = bytes >> PAGE_SHIFT;

	host = kzalloc(sizeof(*host), GFP_KERNEL_ACCOUNT);
	if (!host)
		return ERR_PTR(-ENOMEM);
	kref_init(&host->ref);
	host->ctx = ctx;
	host->bytes = bytes;
	host->uaddr = addr;
	ret = snpu_host_charge(ctx, bytes);
	if (ret) {
		kfree(host);
		return ERR_PTR(ret);
	}

	host->pages = kvcalloc(npages, sizeof(*host->pages),
			       GFP_KERNEL_ACCOUNT);
	if (!host->pages) {
		ret = -ENOMEM;
		goto err_uncharge;
	}
	/* account_locked_vm() lets CAP_IPC_LOCK through RLIMIT_MEMLOCK. */
	ret = account_locked_vm(current->mm, npages, true);
	if (ret)
		goto err_pages;
	pinned = pin_user_pages_fast(addr, npages,
				     FOLL_WRITE | FOLL_LONGTERM, host->pages);
	if (pinned != npages) {
		if (pinned > 0)
			unpin_user_pages(host->pages, pinned);
		ret = pinned < 0 ? pinned : -EFAULT;
		goto err_account;
	}
	host->kaddr = vmap(host->pages, npages, VM_MAP, PAGE_KERNEL);
	if (!host->kaddr) {
		ret = -ENOMEM;
		goto err_unpin;
	}
	host->npages = npages;
	mmgrab(current->mm);
	host->mm = current->mm;
	return host;

err_unpin:
	unpin_user_pages(host->pages, npages);
err_account:
	account_locked_vm(current->mm, npages, false);
err_pages:
	kvfree(host->pages);
err_uncharge:
	atomic64_sub(bytes, &ctx->host_used);
	kfree(host);
	return ERR_PTR(ret);
}

int snpu_ioc_host_register(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_host_register *r = &arg->host_register;
	struct snpu_host *host;
	int ret;

	if (!snpu_zero(r->reserved, sizeof(r->reserved)) || r->pad)
		return -EINVAL;
	host = snpu_host_new_register(ctx, r->addr, r->bytes);
	if (IS_ERR(host))
		return PTR_ERR(host);

	mutex_lock(&ctx->lock);
	ret = snpu_host_publish_locked(ctx, host);
	mutex_unlock(&ctx->lock);
	if (ret) {
		/* Never published: release unpins, uncharges and frees. */
		snpu_host_put(host);
		return ret;
	}
	r->handle = host->obj.handle;
	return 0;
}

/**
 * snpu_host_destroy_locked() - drop the handle of host memory
 * @ctx: the context
 * @host: host memory of @ctx
 *
 * Registered memory stops resolving at once; driver memory when it is
 * unmapped. The memory goes when jobs and the mapping let go of it.
 */
void snpu_host_destroy_locked(struct snpu_context *ctx, struct snpu_host *host)
{
	lockdep_assert_held(&ctx->lock);
	xa_erase(&ctx->handles, host->obj.handle);
	if (host->pages)
		mtree_erase(&ctx->host_va, host->uaddr);
	snpu_host_put(host);
}

int snpu_ioc_host_free(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_handle_op *op = &arg->handle_op;
	struct snpu_object *obj;

	if (!snpu_zero(op->reserved, sizeof(op->reserved)) || op->pad)
		return -EINVAL;
	mutex_lock(&ctx->lock);
	obj = snpu_object_get_locked(ctx, op->handle, SNPU_OBJ_HOST);
	if (obj)
		snpu_host_destroy_locked(ctx,
					 container_of(obj, struct snpu_host, obj));
	mutex_unlock(&ctx->lock);
	return obj ? 0 : -ENOENT;
}

/*
 * Every copy the kernel makes of a mapping (fork after MADV_DOFORK, the
 * new range of an mremap(), refused or not) holds a reference of its own.
 */
static void snpu_host_vm_open(struct vm_area_struct *vma)
{
	struct snpu_host *host = vma->vm_private_data;

	kref_get(&host->ref);
}

/*
 * Only the mapping that published the range unpublishes it: a copy that
 * goes away (a child's, or an mremap() target the kernel unmaps again)
 * leaves the process's own mapping resolving.
 */
static void snpu_host_vm_close(struct vm_area_struct *vma)
{
	struct snpu_host *host = vma->vm_private_data;

	if (READ_ONCE(host->vma) == vma) {
		mtree_erase(&host->ctx->host_va, host->uaddr);
		WRITE_ONCE(host->vma, NULL);
	}
	snpu_host_put(host);
}

static vm_fault_t snpu_host_vm_fault(struct vm_fault *vmf)
{
	struct snpu_host *host = vmf->vma->vm_private_data;

	return snpu_vmalloc_fault(vmf, host->kaddr, host->bytes,
				  (SNPU_HOST_MMAP_OFFSET >> PAGE_SHIFT) +
				  host->obj.handle);
}

/* A mapping is one range for its whole life: no split, no move. */
static int snpu_host_vm_split(struct vm_area_struct *vma, unsigned long addr)
{
	return -EINVAL;
}

static int snpu_host_vm_mremap(struct vm_area_struct *vma)
{
	return -EINVAL;
}

static const struct vm_operations_struct snpu_host_vm_ops = {
	.open = snpu_host_vm_open,
	.close = snpu_host_vm_close,
	.fault = snpu_host_vm_fault,
	.may_split = snpu_host_vm_split,
	.mremap = snpu_host_vm_mremap,
};

/**
 * snpu_host_mmap() - map driver-allocated host memory
 * @ctx: the context
 * @vma: the mapping: offset from SNPU_IOC_HOST_ALLOC, the whole size
 *
 * Runs under mmap_lock, so it takes no context lock: the handle is looked
 * up under RCU. The mapping holds a reference on the memory; pages are
 * faulted in (snpu_vmalloc_fault()).
 *
 * Return: 0, -EINVAL for a bad offset or size or a private mapping,
 * -EBUSY when already mapped, -EEXIST when the range overlaps registered
 * memory.
 */
int snpu_host_mmap(struct snpu_context *ctx, struct vm_area_struct *vma)
{
	unsigned long len = vma->vm_end - vma->vm_start;
	unsigned long pgoff = vma->vm_pgoff - (SNPU_HOST_MMAP_OFFSET >> PAGE_SHIFT);
	struct snpu_object *obj;
	struct snpu_host *host = NULL;
	int ret;

	if (pgoff > U32_MAX)
		return -EINVAL;
	rcu_read_lock();
	obj = xa_load(&ctx->handles, pgoff);
	if (obj && obj->type == SNPU_OBJ_HOST) {
		host = container_of(obj, struct snpu_host, obj);
		if (host->pages || !kref_get_unless_zero(&host->ref))
			host = NULL;
	}
	rcu_read_unlock();
	if (!host)
		return -EINVAL;

	/* A private mapping would hide the process's writes from the device. */
	ret = -EINVAL;
	if (len != host->bytes || !(vma->vm_flags & VM_SHARED))
		goto err;
	ret = -EBUSY;
	if (atomic_cmpxchg(&host->mapped, 0, 1))
		goto err;

	host->uaddr = vma->vm_start;
	ret = mtree_insert_range(&ctx->host_va, vma->vm_start, vma->vm_end - 1,
				 host, GFP_KERNEL);
	if (ret)
		goto err_unmark;
	vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP);
	WRITE_ONCE(host->vma, vma);
	vma->vm_private_data = host;
	vma->vm_ops = &snpu_host_vm_ops;
	return 0;

err_unmark:
	atomic_set(&host->mapped, 0);
err:
	snpu_host_put(host);
	return ret;
}
