/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel APIs that differ between the kernels snpu builds against
 * (Debian 12's 6.1, Debian 13's 6.12, Debian's newest 7.x), in one place.
 *
 * Kbuild decides which form a kernel has by looking for it in that
 * kernel's own headers, and defines SNPU_HAVE_<NAME> when it finds the
 * newer one: no kernel version number is compared, so a distribution
 * kernel that backported a change builds as well. Each wrapper names the
 * kernel where its API changed. To support another change: a probe in
 * Kbuild, a wrapper here, and the call sites through the wrapper.
 */
#ifndef SNPU_COMPAT_H
#define SNPU_COMPAT_H

#include <linux/capability.h>
#include <linux/crc32.h>
#include <linux/dma-buf.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/coredump.h>
#include <linux/sched/task.h>
#include <linux/shmem_fs.h>
#include <net/genetlink.h>

/*
 * 7.x: a task's dumpability is its exec state's
 * (task_exec_state_get_dumpable(), not exported to modules) and the mm
 * has no user namespace; before, get_dumpable() of its mm. May the caller
 * treat @task as ptrace does a dumpable one? Without the state a module
 * cannot tell a setuid process from another, so it needs CAP_SYS_PTRACE
 * over the target's namespace @tns, as for a process that is not dumpable.
 */
static inline bool snpu_task_dumpable_ok(struct task_struct *task,
					 struct user_namespace *tns)
{
#ifdef SNPU_HAVE_TASK_EXEC_STATE
	return ns_capable(tns, CAP_SYS_PTRACE);
#else
	struct mm_struct *mm;
	bool ok = true;

	task_lock(task);
	mm = task->mm;
	if (mm && get_dumpable(mm) != SUID_DUMP_USER &&
	    !ns_capable(mm->user_ns, CAP_SYS_PTRACE))
		ok = false;
	task_unlock(task);
	return ok;
#endif
}

/*
 * 6.15: crc32c() is in the kernel itself (lib/crc), and __crc32c_le() is
 * gone; before, crc32c() was libcrc32c's, a module of its own (which the
 * test VM's insmod does not load), and __crc32c_le() the kernel's. Both
 * update a raw CRC-32C register, as snpu_crc32c() does.
 */
static inline u32 snpu_kcrc32c(u32 crc, const void *p, size_t len)
{
#ifdef SNPU_HAVE_CRC32C_LIB
	return crc32c(crc, p, len);
#else
	return __crc32c_le(crc, p, len);
#endif
}

/*
 * 6.3: VMA flags are written through vm_flags_set() and vm_flags_clear()
 * (vm_flags became read-only to the rest of the kernel); before, directly.
 */
#ifndef SNPU_HAVE_VM_FLAGS_SET
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}

static inline void vm_flags_clear(struct vm_area_struct *vma,
				  vm_flags_t flags)
{
	vma->vm_flags &= ~flags;
}
#endif

/**
 * snpu_shmem_file_noreserve() - an unlinked shmem file that reserves no
 * memory up front (its pages are charged as they are written)
 * @name: the file's name, as /proc/PID/maps would show it
 * @size: its initial size in bytes
 *
 * shmem_file_setup() takes its VM_NORESERVE flag as an unsigned long up
 * to 6.12, and as a vma_flags_t made with mk_vma_flags() in 7.x (the
 * form Debian's 7.2 and 7.3 headers have).
 *
 * Return: the file, or an ERR_PTR() as shmem_file_setup() returns it.
 */
static inline struct file *snpu_shmem_file_noreserve(const char *name,
						     loff_t size)
{
#ifdef SNPU_HAVE_SHMEM_VMA_FLAGS
	return shmem_file_setup(name, size, mk_vma_flags(VMA_NORESERVE_BIT));
#else
	return shmem_file_setup(name, size, VM_NORESERVE);
#endif
}

/**
 * snpu_genl_dump_attrs() - the attributes of a generic netlink dump request
 * @cb: the dump's callback, in its start() or dumpit()
 *
 * 6.6 embedded a struct genl_info, with the parsed attributes, in struct
 * genl_dumpit_info (read with genl_info_dump()); the old @attrs member of
 * struct genl_dumpit_info is gone from 6.12's headers.
 *
 * Return: the attribute table, NULL when the family parses none.
 */
static inline struct nlattr **snpu_genl_dump_attrs(struct netlink_callback *cb)
{
#ifdef SNPU_HAVE_GENL_INFO_DUMP
	return genl_info_dump(cb)->attrs;
#else
	return genl_dumpit_info(cb)->attrs;
#endif
}

/*
 * 6.2: an importer's dma_buf_vmap() needs the dma-buf's reservation lock
 * held, and dma_buf_vmap_unlocked() takes it; before, dma_buf_vmap()
 * took the dma-buf's own mutex itself (and no _unlocked form existed).
 */
static inline int snpu_dma_buf_vmap(struct dma_buf *dmabuf,
				    struct iosys_map *map)
{
#ifdef SNPU_HAVE_DMA_BUF_VMAP_UNLOCKED
	return dma_buf_vmap_unlocked(dmabuf, map);
#else
	return dma_buf_vmap(dmabuf, map);
#endif
}

static inline void snpu_dma_buf_vunmap(struct dma_buf *dmabuf,
				       struct iosys_map *map)
{
#ifdef SNPU_HAVE_DMA_BUF_VMAP_UNLOCKED
	dma_buf_vunmap_unlocked(dmabuf, map);
#else
	dma_buf_vunmap(dmabuf, map);
#endif
}

/*
 * 6.13: MODULE_IMPORT_NS() takes the namespace as a string literal; up to
 * 6.12, as a bare token it stringifies.
 */
#ifdef SNPU_HAVE_NS_STRING
#define SNPU_IMPORT_NS_DMA_BUF	MODULE_IMPORT_NS("DMA_BUF")
#else
#define SNPU_IMPORT_NS_DMA_BUF	MODULE_IMPORT_NS(DMA_BUF)
#endif

#endif /* SNPU_COMPAT_H */
