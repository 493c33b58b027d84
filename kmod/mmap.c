// SPDX-License-Identifier: GPL-2.0
/*
 * snpu mappings of the device file: the command queues, the process's
 * state page and driver-allocated host memory, each at its own range of
 * page offsets (see SNPU_*_MMAP_OFFSET in uapi/linux/snpu.h). All three
 * are low enough for a 32-bit process's mmap2(), whose offset is a 32-bit
 * count of pages.
 *
 * Pages are never inserted ahead: every mapping is filled by its .fault
 * handler, so that whatever the process does to its mapping (MADV_DONTNEED,
 * a move, a fork that copies it) the next access finds the same memory
 * again. A mapping that holds a reference on an object takes one more in
 * .open for each copy the kernel makes of it, and drops one in .close.
 */
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "snpu.h"

/**
 * snpu_vmalloc_user() - zeroed kernel memory a process may map
 * @bytes: size, a multiple of the page size
 *
 * What the rings and driver-allocated host memory are made of: vfree()
 * frees it and snpu_vmalloc_fault() maps its pages. The pages are charged
 * to the caller's memory cgroup, and a cgroup at its limit fails the
 * allocation rather than invoking its OOM killer: the process asked for a
 * size, it gets ENOMEM.
 *
 * Return: the kernel address, or NULL.
 */
void *snpu_vmalloc_user(size_t bytes)
{
	const gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_RETRY_MAYFAIL |
			  __GFP_NOWARN;
	unsigned int i, npages = bytes >> PAGE_SHIFT;
	struct page **pages;
	void *kaddr;

	if (!npages || !PAGE_ALIGNED(bytes) || npages != bytes >> PAGE_SHIFT)
		return NULL;
	pages = kvcalloc(npages, sizeof(*pages), gfp);
	if (!pages)
		return NULL;
	for (i = 0; i < npages; i++) {
		if (fatal_signal_pending(current))
			goto err;
		pages[i] = alloc_page(gfp);
		if (!pages[i])
			goto err;
	}
	/* vfree() then frees the pages and the array. */
	kaddr = vmap(pages, npages, VM_MAP | VM_MAP_PUT_PAGES, PAGE_KERNEL);
	if (kaddr)
		return kaddr;
err:
	while (i--)
		__free_page(pages[i]);
	kvfree(pages);
	return NULL;
}

/**
 * snpu_vmalloc_fault() - fault in a page of vmalloc'ed memory
 * @vmf: the fault
 * @base: vmalloc'ed memory, mapped from page offset @pgoff of the file
 * @bytes: size of @base
 * @pgoff: the file's page offset of @base
 *
 * The page is found by file offset, not by address: a mapping split by a
 * partial munmap() or mprotect(), or moved by mremap(), keeps its offset.
 *
 * Return: 0 with @vmf->page referenced, or VM_FAULT_SIGBUS outside @base.
 */
vm_fault_t snpu_vmalloc_fault(struct vm_fault *vmf, void *base, size_t bytes,
			      unsigned long pgoff)
{
	struct page *page;

	if (vmf->pgoff < pgoff || vmf->pgoff - pgoff >= PAGE_ALIGN(bytes) >> PAGE_SHIFT)
		return VM_FAULT_SIGBUS;
	page = vmalloc_to_page(base + ((vmf->pgoff - pgoff) << PAGE_SHIFT));
	if (!page)
		return VM_FAULT_SIGBUS;
	get_page(page);
	vmf->page = page;
	return 0;
}

/**
 * snpu_mmap() - mmap(2) of the device file
 * @file: the file of a context
 * @vma: the new mapping
 *
 * Return: 0, or the errno of the mapping kind the offset names; -EINVAL
 * for an offset that names none.
 */
int snpu_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct snpu_context *ctx = file->private_data;

	if (vma->vm_pgoff == SNPU_RING_MMAP_OFFSET >> PAGE_SHIFT)
		return snpu_ring_mmap(ctx, vma);
	if (vma->vm_pgoff == SNPU_STATE_MMAP_OFFSET >> PAGE_SHIFT)
		return snpu_state_mmap(ctx, vma);
	if (vma->vm_pgoff >= SNPU_HOST_MMAP_OFFSET >> PAGE_SHIFT)
		return snpu_host_mmap(ctx, vma);
	return -EINVAL;
}
