// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libsnpu: owners, their attached streams, and the operator context.
 *
 * An owner caches the attached streams it has requested in a small hash
 * table of append-only chains. A lookup that hits reads the table with
 * acquire loads only: no lock, no allocation, no string building. A miss
 * takes the owner's own mutex, asks the driver once, and publishes the new
 * entry with a release store, so concurrent hits on the same owner stay
 * lock free and hits on other owners never meet this owner's mutex.
 */
#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static_assert(sizeof(struct snpu_attached_stream) == 104,
	      "struct snpu_attached_stream changed");

static inline unsigned int snpu_key_bucket(const char *key, size_t len)
{
	uint64_t head, tail, h;
	uint32_t a, b;

	/*
	 * The first, middle and last bytes and the length, with fixed-size
	 * loads (no loop over the key, no variable-size copy to stall on).
	 */
	if (len >= 8) {
		memcpy(&head, key, 8);
		memcpy(&tail, key + len - 8, 8);
		/* Long keys often differ in the middle ("layer.12.attn"). */
		if (len > 16) {
			uint64_t mid;

			memcpy(&mid, key + len / 2 - 4, 8);
			head ^= mid * 0xc2b2ae3d27d4eb4fULL;
		}
	} else if (len >= 4) {
		memcpy(&a, key, 4);
		memcpy(&b, key + len - 4, 4);
		head = a;
		tail = b;
	} else {
		head = (uint8_t)key[0] | (uint8_t)key[len / 2] << 8 |
		       (uint32_t)(uint8_t)key[len - 1] << 16;
		tail = 0;
	}
	/* Multiply, fold, multiply: every input bit reaches the top bits. */
	h = (head ^ (tail * 0x9e3779b97f4a7c15ULL) ^ len) *
	    0xff51afd7ed558ccdULL;
	h ^= h >> 32;
	h *= 0xc4ceb9fe1a85ec53ULL;
	return (unsigned int)(h >> (64 - SNPU_OWNER_BUCKET_BITS));
}

static struct snpu_attached *snpu_owner_find(struct snpu_owner *owner,
					     unsigned int bucket,
					     const char *key, size_t len)
{
	struct snpu_attached *a;

	a = atomic_load_explicit(&owner->bucket[bucket], memory_order_acquire);
	for (; a; a = a->next)
		if (a->len == len && !memcmp(a->key, key, len))
			return a;
	return NULL;
}

/* The driver's side of a miss: one ATTACHED_STREAM_GET. */
static int snpu_owner_get_driver(struct snpu_owner *owner, const char *key,
				 size_t len, uint32_t *stream)
{
	struct snpu_attached_stream arg = {
		.size = sizeof(arg),
		.owner = owner->handle,
	};
	int ret;

	memcpy(arg.key, key, len);
	ret = snpu_ioctl(owner->dev->fd, SNPU_IOC_ATTACHED_STREAM_GET, &arg);
	if (!ret)
		*stream = arg.handle;
	return ret;
}

static int snpu_owner_miss(struct snpu_owner *owner, unsigned int bucket,
			   const char *key, size_t len,
			   struct snpu_attached **ap)
{
	struct snpu_attached *a;
	uint32_t stream;
	int ret = 0;

	pthread_mutex_lock(&owner->lock);
	/* Another thread may have filled it meanwhile. */
	a = snpu_owner_find(owner, bucket, key, len);
	if (a)
		goto out;
	a = calloc(1, sizeof(*a));
	if (!a) {
		ret = -ENOMEM;
		goto out;
	}
	ret = owner->get(owner, key, len, &stream);
	if (ret) {
		free(a);
		a = NULL;
		goto out;
	}
	memcpy(a->key, key, len);
	a->len = len;
	a->stream = stream;
	a->next = atomic_load_explicit(&owner->bucket[bucket],
				       memory_order_relaxed);
	a->all = owner->all;
	owner->all = a;
	/* Publish the filled entry: pairs with the acquire in find. */
	atomic_store_explicit(&owner->bucket[bucket], a, memory_order_release);
out:
	pthread_mutex_unlock(&owner->lock);
	*ap = a;
	return ret;
}

/**
 * snpu_owner_lookup() - the attached stream of a key, cached
 * @owner: the owner
 * @key: 1 to SNPU_ATTACHED_KEY_MAX - 1 bytes, NUL-terminated
 * @ap: the cache entry
 *
 * Return: 0, or -errno (-EINVAL for a bad key, or what the driver says).
 */
int snpu_owner_lookup(struct snpu_owner *owner, const char *key,
		      struct snpu_attached **ap)
{
	unsigned int bucket;
	size_t len;

	if (!owner || !key || !ap)
		return -EINVAL;
	len = strnlen(key, SNPU_ATTACHED_KEY_MAX);
	if (!len || len == SNPU_ATTACHED_KEY_MAX)
		return -EINVAL;
	bucket = snpu_key_bucket(key, len);
	*ap = snpu_owner_find(owner, bucket, key, len);
	if (*ap)
		return 0;
	return snpu_owner_miss(owner, bucket, key, len, ap);
}

int snpu_owner_init(struct snpu_owner *owner, struct snpu_device *dev,
		    snpu_owner_get_fn get)
{
	memset(owner, 0, sizeof(*owner));
	owner->dev = dev;
	owner->get = get;
	return -pthread_mutex_init(&owner->lock, NULL);
}

void snpu_owner_fini(struct snpu_owner *owner)
{
	struct snpu_attached *a, *next;

	for (a = owner->all; a; a = next) {
		next = a->all;
		free(a);
	}
	pthread_mutex_destroy(&owner->lock);
}

int snpu_owner_create(struct snpu_device *dev, int priority,
		      struct snpu_owner **ownerp)
{
	struct snpu_stream_create c = {
		.size = sizeof(c),
		.priority = priority,
	};
	struct snpu_owner *owner;
	int ret;

	if (!dev || !ownerp)
		return -EINVAL;
	owner = malloc(sizeof(*owner));
	if (!owner)
		return -ENOMEM;
	ret = snpu_owner_init(owner, dev, snpu_owner_get_driver);
	if (ret) {
		free(owner);
		return ret;
	}
	ret = snpu_ioctl(dev->fd, SNPU_IOC_OWNER_CREATE, &c);
	if (ret) {
		snpu_owner_fini(owner);
		free(owner);
		return ret;
	}
	owner->handle = c.handle;
	*ownerp = owner;
	return 0;
}

int snpu_owner_destroy(struct snpu_owner *owner)
{
	int ret;

	if (!owner)
		return -EINVAL;
	ret = snpu_ioctl_handle(owner->dev, SNPU_IOC_OWNER_DESTROY,
				owner->handle, 0, 1);
	if (ret)
		return ret;
	snpu_owner_fini(owner);
	free(owner);
	return 0;
}

uint32_t snpu_owner_handle(const struct snpu_owner *owner)
{
	return owner ? owner->handle : 0;
}

int snpu_owner_attached_stream(struct snpu_owner *owner, const char *key,
			       uint32_t *stream)
{
	struct snpu_attached *a;
	int ret;

	if (!stream)
		return -EINVAL;
	ret = snpu_owner_lookup(owner, key, &a);
	if (!ret)
		*stream = a->stream;
	return ret;
}
