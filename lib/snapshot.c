// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libsnpu: process snapshot (lock, backup, restore, unlock), the stage
 * callbacks each step runs, and background threads.
 *
 * The snapshot state belongs to the process in the kernel: one call
 * through the first device of the list changes it for every snpu file the
 * process has. The list of devices only says whose callbacks run, and in
 * which order. A step checks first that the state allows it (so that no
 * callback runs for a step the kernel would refuse), runs the PRE
 * callbacks, makes the kernel call, runs the POST callbacks, and when a
 * callback fails undoes the step with the kernel transition that leads
 * back (see Documentation/snapshot.rst).
 *
 * The callbacks live in the struct snpu_device, behind a mutex that is
 * held only to copy or change an entry, never while a callback runs. The
 * state page is mapped once per device, on the first checkpoint, and
 * published with a release store, so the checkpoint of a running process
 * is two loads and a compare.
 */
#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

static_assert(sizeof(struct snpu_snapshot) == 56,
	      "struct snpu_snapshot changed");
static_assert(SNPU_SNAPSHOT_STAGES == 6, "stage table size");

void snpu_snapshot_init(struct snpu_device *dev)
{
	pthread_mutex_init(&dev->snap_lock, NULL);
	memset(dev->snap_cb, 0, sizeof(dev->snap_cb));
	atomic_init(&dev->state_page, NULL);
}

void snpu_snapshot_fini(struct snpu_device *dev)
{
	const struct snpu_state_page *sp;

	sp = atomic_load_explicit(&dev->state_page, memory_order_relaxed);
	if (sp)
		munmap((void *)sp, (size_t)sysconf(_SC_PAGESIZE));
	atomic_store_explicit(&dev->state_page, NULL, memory_order_relaxed);
	pthread_mutex_destroy(&dev->snap_lock);
}

/* A zeroed argument; @timeout_ns only for LOCK. */
static void snpu_snap_arg(struct snpu_snapshot *s, int64_t timeout_ns)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	s->timeout_ns = timeout_ns;
}

/*
 * A transition. No retry on EINTR: LOCK and BACKUP wait, and a signal
 * must be able to end the wait (the kernel never restarts them).
 */
static int snpu_snap_call(struct snpu_device *dev, unsigned long cmd,
			  int64_t timeout_ns, struct snpu_snapshot *s)
{
	snpu_snap_arg(s, timeout_ns);
	return snpu_ioctl_wait(dev->fd, cmd, s);
}

/*
 * Check the device array, then read the process's state through the
 * first device: every step starts here.
 */
static int snpu_snap_state(struct snpu_device *const *devs, unsigned int ndev,
			   uint32_t *state)
{
	struct snpu_snapshot s;
	unsigned int i;
	int ret;

	if (!devs || !ndev)
		return -EINVAL;
	for (i = 0; i < ndev; i++)
		if (!devs[i])
			return -EINVAL;
	snpu_snap_arg(&s, 0);
	ret = snpu_ioctl(devs[0]->fd, SNPU_IOC_SNAPSHOT_STATE, &s);
	if (!ret)
		*state = s.state;
	return ret;
}

/*
 * Run @stage's callback of every device, in order. The first failure
 * stops the walk unless @all; the first failure is returned (a positive
 * return of a callback becomes -ECANCELED).
 */
static int snpu_snap_run(struct snpu_device *const *devs, unsigned int ndev,
			 unsigned int stage, bool all)
{
	struct snpu_snap_cb cb;
	unsigned int i;
	int ret, first = 0;

	for (i = 0; i < ndev; i++) {
		pthread_mutex_lock(&devs[i]->snap_lock);
		cb = devs[i]->snap_cb[stage];
		pthread_mutex_unlock(&devs[i]->snap_lock);
		if (!cb.fn)
			continue;
		ret = cb.fn(devs[i], stage, cb.arg);
		if (ret > 0)
			ret = -ECANCELED;
		if (ret && !first)
			first = ret;
		if (ret && !all)
			break;
	}
	return first;
}

int snpu_snapshot_lock(struct snpu_device *const *devs, unsigned int ndev,
		       int64_t timeout_ns)
{
	struct snpu_snapshot s;
	uint32_t state;
	int ret;

	ret = snpu_snap_state(devs, ndev, &state);
	if (ret)
		return ret;
	if (state != SNPU_STATE_RUNNING)
		return -EBADFD;
	ret = snpu_snap_run(devs, ndev, SNPU_SNAPSHOT_LOCK_PRE, false);
	if (ret)
		return ret;
	/* The kernel knows -1 for ever; the library any negative value. */
	return snpu_snap_call(devs[0], SNPU_IOC_SNAPSHOT_LOCK,
			      timeout_ns < 0 ? -1 : timeout_ns, &s);
}

int snpu_snapshot_backup(struct snpu_device *const *devs, unsigned int ndev,
			 uint64_t *image_bytes)
{
	struct snpu_snapshot s, undo;
	uint32_t state;
	int ret;

	ret = snpu_snap_state(devs, ndev, &state);
	if (ret)
		return ret;
	if (state != SNPU_STATE_LOCKED && state != SNPU_STATE_BACKED_UP)
		return -EBADFD;
	ret = snpu_snap_run(devs, ndev, SNPU_SNAPSHOT_BACKUP_PRE, false);
	if (ret)
		return ret;
	ret = snpu_snap_call(devs[0], SNPU_IOC_SNAPSHOT_BACKUP, 0, &s);
	if (ret)
		return ret;
	ret = snpu_snap_run(devs, ndev, SNPU_SNAPSHOT_BACKUP_POST, false);
	if (ret) {
		/*
		 * Back to LOCKED: write back the bytes just saved (nothing
		 * ran since). From BACKED_UP the state already is what it
		 * was; only the image is the new one.
		 */
		if (state == SNPU_STATE_LOCKED)
			snpu_snap_call(devs[0], SNPU_IOC_SNAPSHOT_RESTORE, 0,
				       &undo);
		return ret;
	}
	if (image_bytes)
		*image_bytes = s.image_bytes;
	return 0;
}

int snpu_snapshot_restore(struct snpu_device *const *devs, unsigned int ndev)
{
	struct snpu_snapshot s;
	uint32_t state;
	int ret;

	ret = snpu_snap_state(devs, ndev, &state);
	if (ret)
		return ret;
	if (state != SNPU_STATE_BACKED_UP)
		return -EBADFD;
	ret = snpu_snap_run(devs, ndev, SNPU_SNAPSHOT_RESTORE_PRE, false);
	if (ret)
		return ret;
	ret = snpu_snap_call(devs[0], SNPU_IOC_SNAPSHOT_RESTORE, 0, &s);
	if (ret)
		return ret;
	ret = snpu_snap_run(devs, ndev, SNPU_SNAPSHOT_RESTORE_POST, false);
	if (ret)
		/* Back to BACKED_UP: an image of the bytes just restored. */
		snpu_snap_call(devs[0], SNPU_IOC_SNAPSHOT_BACKUP, 0, &s);
	return ret;
}

int snpu_snapshot_unlock(struct snpu_device *const *devs, unsigned int ndev)
{
	struct snpu_snapshot s;
	uint32_t state;
	int ret;

	ret = snpu_snap_state(devs, ndev, &state);
	if (ret)
		return ret;
	if (state == SNPU_STATE_RUNNING)
		return -EBADFD;
	ret = snpu_snap_call(devs[0], SNPU_IOC_SNAPSHOT_UNLOCK, 0, &s);
	if (ret)
		return ret;
	/* An unlock is never undone: every device hears of it. */
	return snpu_snap_run(devs, ndev, SNPU_SNAPSHOT_UNLOCK_POST, true);
}

int snpu_snapshot_get_state(struct snpu_device *dev, struct snpu_snapshot *out)
{
	if (!dev || !out)
		return -EINVAL;
	snpu_snap_arg(out, 0);
	return snpu_ioctl(dev->fd, SNPU_IOC_SNAPSHOT_STATE, out);
}

int snpu_snapshot_callback_register(struct snpu_device *dev,
				    unsigned int stage, snpu_snapshot_cb fn,
				    void *arg)
{
	int ret = 0;

	if (!dev || !fn || stage >= SNPU_SNAPSHOT_STAGES)
		return -EINVAL;
	pthread_mutex_lock(&dev->snap_lock);
	if (dev->snap_cb[stage].fn) {
		ret = -EEXIST;
	} else {
		dev->snap_cb[stage].fn = fn;
		dev->snap_cb[stage].arg = arg;
	}
	pthread_mutex_unlock(&dev->snap_lock);
	return ret;
}

int snpu_snapshot_callback_unregister(struct snpu_device *dev,
				      unsigned int stage)
{
	int ret = 0;

	if (!dev || stage >= SNPU_SNAPSHOT_STAGES)
		return -EINVAL;
	pthread_mutex_lock(&dev->snap_lock);
	if (!dev->snap_cb[stage].fn)
		ret = -ENOENT;
	dev->snap_cb[stage].fn = NULL;
	dev->snap_cb[stage].arg = NULL;
	pthread_mutex_unlock(&dev->snap_lock);
	return ret;
}

/* ---- background threads ------------------------------------------------ */

static int snpu_bg_call(struct snpu_device *dev, unsigned long cmd)
{
	struct snpu_snapshot s;

	if (!dev)
		return -EINVAL;
	snpu_snap_arg(&s, 0);
	return snpu_ioctl(dev->fd, cmd, &s);
}

int snpu_bg_register(struct snpu_device *dev)
{
	return snpu_bg_call(dev, SNPU_IOC_BG_REGISTER);
}

int snpu_bg_unregister(struct snpu_device *dev)
{
	return snpu_bg_call(dev, SNPU_IOC_BG_UNREGISTER);
}

/* Map the state page; the first mapping published wins. */
static int snpu_state_map(struct snpu_device *dev,
			  const struct snpu_state_page **spp)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	const struct snpu_state_page *none = NULL;
	void *p;

	p = mmap(NULL, page, PROT_READ, MAP_SHARED, dev->fd,
		 (off_t)SNPU_STATE_MMAP_OFFSET);
	if (p == MAP_FAILED)
		return -errno;
	if (!atomic_compare_exchange_strong_explicit(&dev->state_page, &none,
						     p, memory_order_acq_rel,
						     memory_order_acquire)) {
		/* Another thread mapped it first: use that one. */
		munmap(p, page);
		*spp = none;
		return 0;
	}
	*spp = p;
	return 0;
}

/* Not running, or not mapped yet: kept out of the fast path's frame. */
static __attribute__((noinline)) int
snpu_bg_checkpoint_slow(struct snpu_device *dev)
{
	const struct snpu_state_page *sp;
	struct snpu_snapshot s;
	int ret;

	sp = atomic_load_explicit(&dev->state_page, memory_order_acquire);
	if (!sp) {
		ret = snpu_state_map(dev, &sp);
		if (ret)
			return ret;
	}
	if (__atomic_load_n(&sp->state, __ATOMIC_ACQUIRE) ==
	    SNPU_STATE_RUNNING)
		return 0;
	/* A safe point of a locked process: wait here until it runs. */
	snpu_snap_arg(&s, 0);
	ret = snpu_ioctl_wait(dev->fd, SNPU_IOC_BG_PARK, &s);
	return ret ? ret : 1;
}

int snpu_bg_checkpoint(struct snpu_device *dev)
{
	const struct snpu_state_page *sp;

	if (!dev)
		return -EINVAL;
	sp = atomic_load_explicit(&dev->state_page, memory_order_acquire);
	/* Pairs with the kernel's release store of the state. */
	if (__builtin_expect(sp && __atomic_load_n(&sp->state,
						   __ATOMIC_ACQUIRE) ==
			     SNPU_STATE_RUNNING, 1))
		return 0;
	return snpu_bg_checkpoint_slow(dev);
}
