// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * snpu-bench: throughput and latency of the task path, each beside a
 * baseline measured in the same run.
 *
 *   snpu-bench [-d N] [-r ROUNDS] [-n TASKS]
 *   snpu-bench [-d N] [-r ROUNDS] [-n LOOKUPS] attached
 *
 * submit: NOP launches (block_dim 1) through SNPU_IOC_SUBMIT in batches of
 *         1, 8, 32 and 128, then one synchronize: tasks per second and ns
 *         per task, and that cost as a ratio of the syscall floor.
 * latency: one batch submitted and synchronized at once, per batch size.
 * floor: SNPU_IOC_NOP, an ioctl that does nothing.
 * ring: the same NOP launches through the command queues at the same
 *       batch sizes, without and with the kernel poller, beside io_uring's
 *       IORING_OP_NOP (liburing) at the same batch sizes: tasks per second
 *       as a ratio of the ioctl path's with one task per call (b1) and at
 *       the same batch size, ns per task as a ratio of io_uring's ns per op.
 * work: tasks that go through a core (FILL of 4 bytes and 4 KiB) through
 *       SUBMIT and the ring, beside io_uring's NOP; then launches large
 *       enough to split (a FILL, which moves memory, and a CRC32C, which
 *       computes) with block_dim 1, 2 and the device's cores.
 *
 * Throughput figures are the median of ROUNDS rounds; latencies the
 * median of LAT_SAMPLES batches.
 *
 * attached: the miss path of attached streams, through the driver, beside
 * the floor measured in the same rounds. "create" is the first
 * SNPU_IOC_ATTACHED_STREAM_GET of a new key (the driver creates the
 * stream), for up to 64 keys (half the stream quota) on an owner made for
 * the round; "lookup" is the same ioctl for a key an owner has (created
 * 0), with 1 key and with all the keys, which the driver finds by walking
 * the owner's list. libsnpu's first request of a key (the cache's miss:
 * an allocation, the owner's mutex and the ioctl), its later requests
 * (hits) and the destroy of an owner with its idle streams are measured
 * too. Each round measures everything once; medians of ROUNDS rounds.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>

#include "snpu.h"
#include "bench.h"

#define MAX_BATCH	128
#define LAT_SAMPLES	101

static void die(const char *what, int err)
{
	fprintf(stderr, "snpu-bench: %s: %s\n", what, strerror(-err));
	exit(1);
}

/* ns per SNPU_IOC_NOP over @n calls. */
static uint64_t floor_round(struct snpu_device *dev, unsigned int n)
{
	uint64_t t0 = now_ns();
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = snpu_nop(dev);
		if (ret)
			die("nop", ret);
	}
	return (now_ns() - t0) / n;
}

/* ns per task: @n NOP tasks in batches of @batch, then synchronize. */
static uint64_t submit_round(struct snpu_device *dev, uint32_t stream,
			     struct snpu_task *tasks, unsigned int batch,
			     unsigned int n)
{
	uint64_t t0 = now_ns();
	unsigned int done;
	int ret;

	for (done = 0; done < n; done += batch) {
		ret = snpu_submit(dev, tasks, batch, NULL);
		/* The context's task quota is full: wait for the stream. */
		if (ret == -ENOSPC) {
			ret = snpu_stream_synchronize(dev, stream, -1);
			if (!ret)
				ret = snpu_submit(dev, tasks, batch, NULL);
		}
		if (ret < 0)
			die("submit", ret);
	}
	ret = snpu_stream_synchronize(dev, stream, -1);
	if (ret)
		die("synchronize", ret);
	return (now_ns() - t0) / n;
}

/* ns from submitting one batch to its completion being seen. */
static uint64_t latency_round(struct snpu_device *dev, uint32_t stream,
			      const struct snpu_task *tasks, unsigned int batch)
{
	uint64_t t0 = now_ns();
	int ret;

	ret = snpu_submit(dev, tasks, batch, NULL);
	if (ret < 0)
		die("submit", ret);
	ret = snpu_stream_synchronize(dev, stream, -1);
	if (ret)
		die("synchronize", ret);
	return now_ns() - t0;
}

#define RING_ENTRIES	256

/* ns per task: @n copies of @tmpl through the SQ in batches, all reaped. */
static uint64_t ring_round(struct snpu_ring *ring, const struct snpu_task *tmpl,
			   unsigned int batch, unsigned int n)
{
	unsigned int sent = 0, done = 0, i;
	uint64_t t0 = now_ns();
	struct snpu_cqe *cqe;
	int ret;

	while (done < n) {
		while (sent < n && sent - done + batch <= ring->sq.entries) {
			for (i = 0; i < batch; i++) {
				struct snpu_task *sqe = snpu_ring_get_sqe(ring);

				/* The kernel still copies earlier entries. */
				if (!sqe)
					break;
				*sqe = *tmpl;
				sqe->user_data = sent + i;
			}
			sent += i;
			ret = snpu_ring_submit(ring);
			if (ret < 0)
				die("ring submit", ret);
			if (i < batch)
				break;
		}
		if (snpu_ring_peek_cqe(ring, &cqe)) {
			/* Half the tasks in flight: submission and execution overlap. */
			unsigned int want = (sent - done + 1) / 2;

			ret = snpu_ring_submit_and_wait(ring, want);
			if (ret < 0)
				die("ring wait", ret);
			continue;
		}
		do {
			if (cqe->result)
				die("ring task", cqe->result);
			snpu_ring_cqe_seen(ring, cqe);
			done++;
		} while (!snpu_ring_peek_cqe(ring, &cqe));
	}
	return (now_ns() - t0) / n;
}

/* ns per op: @n io_uring NOPs in batches, all reaped. */
static uint64_t uring_round(struct io_uring *ring, unsigned int batch,
			    unsigned int n)
{
	unsigned int sent = 0, done = 0, i;
	uint64_t t0 = now_ns();
	struct io_uring_cqe *cqe;
	int ret;

	while (done < n) {
		while (sent < n && sent - done + batch <= RING_ENTRIES) {
			for (i = 0; i < batch; i++)
				io_uring_prep_nop(io_uring_get_sqe(ring));
			sent += batch;
			ret = io_uring_submit(ring);
			if (ret < 0)
				die("io_uring submit", ret);
		}
		ret = io_uring_wait_cqe(ring, &cqe);
		if (ret)
			die("io_uring wait", ret);
		do {
			io_uring_cqe_seen(ring, cqe);
			done++;
		} while (!io_uring_peek_cqe(ring, &cqe));
	}
	return (now_ns() - t0) / n;
}

/* Ring figures at every batch size, on a context of its own. */
static void ring_bench(unsigned int index, unsigned int flags,
		       const char *name, uint64_t *v, unsigned int rounds,
		       unsigned int n, const uint64_t *ioctl_ns,
		       const uint64_t *uring_ns)
{
	static const unsigned int batches[] = { 1, 8, 32, 128 };
	struct snpu_device *dev;
	struct snpu_ring ring;
	struct snpu_task nop;
	uint32_t stream;
	unsigned int b, r;
	int ret;

	ret = snpu_open(index, 0, &dev);
	if (ret)
		die("open", ret);
	ret = snpu_stream_create(dev, SNPU_PRIO_NORMAL, 0, &stream);
	if (ret)
		die("stream create", ret);
	ret = snpu_ring_init(dev, RING_ENTRIES, flags, &ring);
	if (ret)
		die("ring init", ret);
	snpu_prep_launch(&nop, stream, SNPU_KERNEL_NOP, 1, NULL, 0);
	for (b = 0; b < 4; b++) {
		uint64_t per_task;

		for (r = 0; r < rounds; r++)
			v[r] = ring_round(&ring, &nop, batches[b], n);
		per_task = median(v, rounds);
		printf("%-7s batch %3u  %9.0f tasks/s %8llu ns/task  tasks/s %6.2fx ioctl b1 %6.2fx ioctl b%-3u  ns %5.2fx io_uring\n",
		       name, batches[b], 1e9 / (double)per_task,
		       (unsigned long long)per_task,
		       (double)ioctl_ns[0] / (double)per_task,
		       (double)ioctl_ns[b] / (double)per_task, batches[b],
		       (double)per_task / (double)uring_ns[b]);
	}
	snpu_ring_exit(&ring);
	snpu_close(dev);
}

/* ---- real work --------------------------------------------------------- */

/* Bytes of the fill that one launch splits among block_dim blocks. */
#define WORK_BIG	(16u << 20)

static void prep_fill(struct snpu_task *t, uint32_t stream, uint64_t addr,
		      uint64_t bytes, uint32_t block_dim)
{
	const struct snpu_kernel_arg args[2] = {
		{ .value = addr, .bytes = bytes },
		{ .value = 0x5a5a5a5a },
	};

	snpu_prep_launch(t, stream, SNPU_KERNEL_FILL, block_dim, args, 2);
}

/* Bytes a CRC32C launch splits among block_dim blocks: work that computes. */
#define WORK_CRC	(4u << 20)

static void prep_crc(struct snpu_task *t, uint32_t stream, uint64_t out,
		     uint64_t in, uint32_t block_dim)
{
	const struct snpu_kernel_arg args[2] = {
		{ .value = out, .bytes = (uint64_t)block_dim * 4 },
		{ .value = in, .bytes = WORK_CRC },
	};

	snpu_prep_launch(t, stream, SNPU_KERNEL_CRC32C, block_dim, args, 2);
}

/* ns per fill of @bytes by a loop in this process: the same work at home. */
static uint64_t user_fill_round(uint32_t *buf, uint64_t bytes, unsigned int n)
{
	uint64_t t0 = now_ns();
	unsigned int i;
	uint64_t j;

	for (i = 0; i < n; i++) {
		for (j = 0; j < bytes / 4; j++)
			buf[j] = 0x5a5a5a5a;
		/* The stores are observable: the loop is not elided. */
		__asm__ volatile("" : : "r"(buf) : "memory");
	}
	return (now_ns() - t0) / n;
}

/* ns for one launch of @t, submitted and synchronized. */
static uint64_t launch_round(struct snpu_device *dev, uint32_t stream,
			     const struct snpu_task *t)
{
	return latency_round(dev, stream, t, 1);
}

/*
 * Tasks that go through a core: FILL launches of 4 bytes and 4 KiB, one
 * block each, on one stream, through one SUBMIT per task, SUBMIT batched
 * 32 at a time and the ring at batch 32, beside io_uring's NOP at batch 32
 * and the same 4 KiB fill as a loop in this process; then one fill of
 * WORK_BIG bytes and one CRC32C of WORK_CRC bytes with block_dim 1, 2 and
 * the device's cores.
 */
static void work_bench(unsigned int index, unsigned int rounds, unsigned int n,
		       uint64_t *v)
{
	static const uint64_t sizes[] = { 4, 4096 };
	struct snpu_task tasks[MAX_BATCH], big;
	uint64_t uring_ns, b1, b32, ring_ns, ns1 = 0, ns;
	uint32_t stream, bds[3];
	struct snpu_device *dev;
	struct snpu_info info;
	struct io_uring uring;
	struct snpu_ring ring;
	unsigned int s, r, i, k;
	uint64_t addr, out;
	uint32_t *buf;
	int ret;

	ret = io_uring_queue_init(RING_ENTRIES, &uring, 0);
	if (ret)
		die("io_uring init", ret);
	for (r = 0; r < rounds; r++)
		v[r] = uring_round(&uring, 32, n);
	uring_ns = median(v, rounds);
	io_uring_queue_exit(&uring);
	printf("work    io_uring NOP batch  32          %8llu ns/op\n",
	       (unsigned long long)uring_ns);

	ret = snpu_open(index, 0, &dev);
	if (ret)
		die("open", ret);
	ret = snpu_get_info(dev, &info);
	if (ret)
		die("info", ret);
	ret = snpu_stream_create(dev, SNPU_PRIO_NORMAL, 0, &stream);
	if (ret)
		die("stream create", ret);
	ret = snpu_mem_alloc(dev, WORK_BIG, 0, 0, &addr);
	if (ret)
		die("mem alloc", ret);
	ret = snpu_ring_init(dev, RING_ENTRIES, 0, &ring);
	if (ret)
		die("ring init", ret);

	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (i = 0; i < MAX_BATCH; i++)
			prep_fill(&tasks[i], stream, addr, sizes[s], 1);
		for (r = 0; r < rounds; r++)
			v[r] = submit_round(dev, stream, tasks, 1, n);
		b1 = median(v, rounds);
		for (r = 0; r < rounds; r++)
			v[r] = submit_round(dev, stream, tasks, 32, n);
		b32 = median(v, rounds);
		for (r = 0; r < rounds; r++)
			v[r] = ring_round(&ring, &tasks[0], 32, n);
		ring_ns = median(v, rounds);
		printf("work    fill %4llu B  submit b1 %8llu  b32 %8llu  ring b32 %8llu ns/task  ring %5.2fx io_uring  tasks/s %5.2fx submit b1 %5.2fx b32\n",
		       (unsigned long long)sizes[s], (unsigned long long)b1,
		       (unsigned long long)b32, (unsigned long long)ring_ns,
		       (double)ring_ns / (double)uring_ns,
		       (double)b1 / (double)ring_ns,
		       (double)b32 / (double)ring_ns);
	}
	snpu_ring_exit(&ring);

	buf = calloc(1, 4096);
	if (!buf)
		die("calloc", -ENOMEM);
	for (r = 0; r < rounds; r++)
		v[r] = user_fill_round(buf, 4096, n);
	printf("work    fill 4096 B  as a loop in this process %8llu ns/fill\n",
	       (unsigned long long)median(v, rounds));
	free(buf);

	/*
	 * One fill of WORK_BIG bytes, which moves memory, and one CRC32C of
	 * WORK_CRC bytes, which computes, with block_dim 1, 2 and cores.
	 */
	ret = snpu_mem_alloc(dev, 4096, 0, 0, &out);
	if (ret)
		die("mem alloc", ret);
	bds[0] = 1;
	bds[1] = 2;
	bds[2] = info.cores;
	for (k = 0; k < 2; k++) {
		for (s = 0; s < 3; s++) {
			if (s && bds[s] <= bds[s - 1])
				continue;
			if (k)
				prep_crc(&big, stream, out, addr, bds[s]);
			else
				prep_fill(&big, stream, addr, WORK_BIG, bds[s]);
			for (r = 0; r < rounds; r++)
				v[r] = launch_round(dev, stream, &big);
			ns = median(v, rounds);
			if (!s)
				ns1 = ns;
			printf("work    %-6s %2u MiB  block_dim %2u  %8llu us  %5.2fx block_dim 1  (%u cores)\n",
			       k ? "crc32c" : "fill",
			       (k ? WORK_CRC : WORK_BIG) >> 20, bds[s],
			       (unsigned long long)ns / 1000,
			       (double)ns1 / (double)ns, info.cores);
		}
	}
	snpu_mem_free(dev, out);
	snpu_mem_free(dev, addr);
	snpu_stream_destroy(dev, stream, 0);
	snpu_close(dev);
}

/* ---- attached streams ------------------------------------------------ */

#define ATT_MAX_KEYS	64

static void att_key(char *key, unsigned int i)
{
	snprintf(key, SNPU_ATTACHED_KEY_MAX, "bench.attached.stream.%u", i);
}

static int att_get(int fd, uint32_t owner, const char *key,
		   struct snpu_attached_stream *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->owner = owner;
	memcpy(a->key, key, strnlen(key, sizeof(a->key) - 1));
	return ioctl(fd, SNPU_IOC_ATTACHED_STREAM_GET, a) < 0 ? -errno : 0;
}

static uint32_t att_owner_create(int fd)
{
	struct snpu_stream_create c = { .size = sizeof(c) };

	if (ioctl(fd, SNPU_IOC_OWNER_CREATE, &c) < 0)
		die("owner create", -errno);
	return c.handle;
}

/* ns of the destroy of @owner. */
static uint64_t att_owner_destroy(int fd, uint32_t owner)
{
	struct snpu_handle_op op = { .size = sizeof(op), .handle = owner };
	uint64_t t0 = now_ns();

	if (ioctl(fd, SNPU_IOC_OWNER_DESTROY, &op) < 0)
		die("owner destroy", -errno);
	return now_ns() - t0;
}

/* ns per ioctl: @nkeys new keys on a new owner; the owner is left in *@op. */
static uint64_t att_create_round(int fd, char (*keys)[SNPU_ATTACHED_KEY_MAX],
				 unsigned int nkeys, uint32_t *op)
{
	struct snpu_attached_stream a;
	uint32_t owner = att_owner_create(fd);
	uint64_t t0 = now_ns();
	unsigned int i;
	int ret;

	for (i = 0; i < nkeys; i++) {
		ret = att_get(fd, owner, keys[i], &a);
		if (ret)
			die("attached stream get (new key)", ret);
		if (a.created != 1)
			die("attached stream get: created is not 1", -EPROTO);
	}
	*op = owner;
	return (now_ns() - t0) / nkeys;
}

/* ns per ioctl: @n lookups of the first @nkeys keys, all existing. */
static uint64_t att_lookup_round(int fd, uint32_t owner,
				 char (*keys)[SNPU_ATTACHED_KEY_MAX],
				 unsigned int nkeys, unsigned int n)
{
	struct snpu_attached_stream a;
	uint64_t t0 = now_ns();
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = att_get(fd, owner, keys[i % nkeys], &a);
		if (ret)
			die("attached stream get (existing key)", ret);
		if (a.created)
			die("attached stream get: created is not 0", -EPROTO);
	}
	return (now_ns() - t0) / n;
}

/* ns per hit: @n requests through libsnpu of the first @nkeys keys. */
static uint64_t att_hit_round(struct snpu_owner *owner,
			      char (*keys)[SNPU_ATTACHED_KEY_MAX],
			      unsigned int nkeys, unsigned int n)
{
	uint64_t t0 = now_ns();
	uint32_t stream;
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = snpu_owner_attached_stream(owner, keys[i % nkeys], &stream);
		if (ret)
			die("snpu_owner_attached_stream (hit)", ret);
	}
	return (now_ns() - t0) / n;
}

enum att_metric {
	ATT_FLOOR, ATT_CREATE, ATT_LOOK1, ATT_LOOKN, ATT_MISS, ATT_HIT1,
	ATT_HITN, ATT_DESTROY, ATT_METRICS
};

static void attached_bench(unsigned int index, unsigned int rounds,
			   unsigned int n, uint64_t *v)
{
	static char keys[ATT_MAX_KEYS][SNPU_ATTACHED_KEY_MAX];
	static const char *const what[ATT_METRICS] = {
		"floor    SNPU_IOC_NOP",
		"create   new key (ioctl, created 1)",
		"lookup   existing key (ioctl, 1 key)",
		"lookup   existing key (ioctl, %u keys)",
		"miss     new key (libsnpu)",
		"hit      libsnpu, 1 key",
		"hit      libsnpu, %u keys",
		"destroy  owner with %u idle streams",
	};
	uint64_t *m[ATT_METRICS], ns;
	struct snpu_ctx_query q;
	struct snpu_owner *owner;
	struct snpu_device *dev;
	struct snpu_info info;
	unsigned int nkeys, i, r, k;
	uint32_t handle, stream;
	char label[64];
	uint64_t t0;
	int fd, ret;

	ret = snpu_open(index, 0, &dev);
	if (ret)
		die("open", ret);
	ret = snpu_get_info(dev, &info);
	if (ret)
		die("get info", ret);
	if (!(info.caps & SNPU_CAP_ATTACHED)) {
		fprintf(stderr, "snpu-bench: the driver (ABI %u.%u) has no attached streams\n",
			info.abi_major, info.abi_minor);
		exit(1);
	}
	ret = snpu_ctx_query(dev, &q);
	if (ret)
		die("ctx query", ret);
	/* One round's owner, and the lookups' owner: half the quota each. */
	nkeys = (q.streams_limit - q.streams) / 2;
	if (nkeys > ATT_MAX_KEYS)
		nkeys = ATT_MAX_KEYS;
	if (!nkeys)
		die("no stream left in the quota", -ENOSPC);
	for (i = 0; i < nkeys; i++)
		att_key(keys[i], i);
	fd = snpu_device_fd(dev);
	for (k = 0; k < ATT_METRICS; k++) {
		m[k] = calloc(rounds, sizeof(*m[k]));
		if (!m[k])
			die("calloc", -ENOMEM);
	}

	/*
	 * Every round measures everything once, so that a slow spell of the
	 * host weighs on all the figures of a round, the floor included.
	 */
	att_create_round(fd, keys, nkeys, &handle);
	for (r = 0; r < rounds; r++) {
		uint32_t round_owner;

		m[ATT_FLOOR][r] = floor_round(dev, n);
		m[ATT_CREATE][r] = att_create_round(fd, keys, nkeys,
						    &round_owner);
		m[ATT_DESTROY][r] = att_owner_destroy(fd, round_owner);
		m[ATT_LOOK1][r] = att_lookup_round(fd, handle, keys, 1, n);
		m[ATT_LOOKN][r] = att_lookup_round(fd, handle, keys, nkeys, n);

		ret = snpu_owner_create(dev, SNPU_PRIO_NORMAL, &owner);
		if (ret)
			die("snpu_owner_create", ret);
		t0 = now_ns();
		for (i = 0; i < nkeys; i++) {
			ret = snpu_owner_attached_stream(owner, keys[i], &stream);
			if (ret)
				die("snpu_owner_attached_stream (miss)", ret);
		}
		m[ATT_MISS][r] = (now_ns() - t0) / nkeys;
		m[ATT_HIT1][r] = att_hit_round(owner, keys, 1, n);
		m[ATT_HITN][r] = att_hit_round(owner, keys, nkeys, n);
		ret = snpu_owner_destroy(owner);
		if (ret)
			die("snpu_owner_destroy", ret);
	}
	att_owner_destroy(fd, handle);

	printf("attached streams: median of %u rounds; x floor is the median of the rounds' ratios\n",
	       rounds);
	for (k = 0; k < ATT_METRICS; k++) {
		snprintf(label, sizeof(label), what[k], nkeys);
		/* The per-round ratio, in hundredths, before m[k] is sorted. */
		for (r = 0; r < rounds; r++)
			v[r] = m[k][r] * 100 / (m[ATT_FLOOR][r] ? m[ATT_FLOOR][r] : 1);
		ns = median(m[k], rounds);
		if (k == ATT_FLOOR)
			printf("%-40s %9llu ns\n", label,
			       (unsigned long long)ns);
		else
			printf("%-40s %9llu ns %7.2fx floor\n", label,
			       (unsigned long long)ns,
			       (double)median(v, rounds) / 100);
	}
	for (k = 0; k < ATT_METRICS; k++)
		free(m[k]);
	snpu_close(dev);
}

int main(int argc, char **argv)
{
	static const unsigned int batches[] = { 1, 8, 32, 128 };
	struct snpu_task tasks[MAX_BATCH];
	unsigned int rounds = 7, n = 2048, index = 0, b, r, i;
	uint64_t *v, floor_ns, ioctl_ns[4], uring_ns[4];
	struct io_uring uring;
	struct snpu_device *dev;
	uint32_t stream;
	int opt, ret;

	while ((opt = getopt(argc, argv, "d:r:n:h")) != -1) {
		switch (opt) {
		case 'd':
			index = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			rounds = strtoul(optarg, NULL, 10);
			break;
		case 'n':
			n = strtoul(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: %s [-d N] [-r ROUNDS] [-n TASKS] [attached|work]\n",
				argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind < argc && strcmp(argv[optind], "attached") &&
	    strcmp(argv[optind], "work")) {
		fprintf(stderr, "snpu-bench: unknown mode '%s'\n", argv[optind]);
		return 2;
	}
	if (!rounds || n < MAX_BATCH || n % MAX_BATCH) {
		fprintf(stderr, "snpu-bench: ROUNDS > 0, TASKS a multiple of %d\n",
			MAX_BATCH);
		return 2;
	}
	v = calloc(rounds > LAT_SAMPLES ? rounds : LAT_SAMPLES, sizeof(*v));
	if (!v)
		return 1;
	if (optind < argc) {
		if (!strcmp(argv[optind], "work"))
			work_bench(index, rounds, n, v);
		else
			attached_bench(index, rounds, n, v);
		free(v);
		return 0;
	}

	ret = snpu_open(index, 0, &dev);
	if (ret)
		die("open", ret);
	ret = snpu_stream_create(dev, SNPU_PRIO_NORMAL, 0, &stream);
	if (ret)
		die("stream create", ret);
	for (i = 0; i < MAX_BATCH; i++)
		snpu_prep_launch(&tasks[i], stream, SNPU_KERNEL_NOP, 1, NULL, 0);

	for (r = 0; r < rounds; r++)
		v[r] = floor_round(dev, n);
	floor_ns = median(v, rounds);
	printf("floor   SNPU_IOC_NOP                 %8llu ns/ioctl\n",
	       (unsigned long long)floor_ns);

	for (b = 0; b < sizeof(batches) / sizeof(batches[0]); b++) {
		unsigned int batch = batches[b];
		uint64_t lat;

		for (r = 0; r < rounds; r++)
			v[r] = submit_round(dev, stream, tasks, batch, n);
		ioctl_ns[b] = median(v, rounds);
		for (r = 0; r < LAT_SAMPLES; r++)
			v[r] = latency_round(dev, stream, tasks, batch);
		lat = median(v, LAT_SAMPLES);
		printf("submit  batch %3u  %9.0f tasks/s %8llu ns/task %6.2fx floor   latency %8llu ns\n",
		       batch, 1e9 / (double)ioctl_ns[b],
		       (unsigned long long)ioctl_ns[b],
		       (double)ioctl_ns[b] / (double)floor_ns,
		       (unsigned long long)lat);
	}

	ret = io_uring_queue_init(RING_ENTRIES, &uring, 0);
	if (ret)
		die("io_uring init", ret);
	for (b = 0; b < sizeof(batches) / sizeof(batches[0]); b++) {
		for (r = 0; r < rounds; r++)
			v[r] = uring_round(&uring, batches[b], n);
		uring_ns[b] = median(v, rounds);
		printf("io_uring batch %3u %9.0f ops/s   %8llu ns/op   (IORING_OP_NOP)\n",
		       batches[b], 1e9 / (double)uring_ns[b],
		       (unsigned long long)uring_ns[b]);
	}
	io_uring_queue_exit(&uring);

	ring_bench(index, 0, "ring", v, rounds, n, ioctl_ns, uring_ns);
	ring_bench(index, SNPU_RING_SQPOLL, "sqpoll", v, rounds, n, ioctl_ns,
		   uring_ns);
	work_bench(index, rounds, n, v);

	snpu_stream_destroy(dev, stream, 0);
	snpu_close(dev);
	free(v);
	return 0;
}
