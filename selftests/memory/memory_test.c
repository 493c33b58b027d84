// SPDX-License-Identifier: GPL-2.0
/*
 * snpu device and host memory: MEM_ALLOC/FREE/QUERY/COPY/SET, the context
 * address space and its isolation, HOST_ALLOC + mmap, HOST_REGISTER, and
 * the lifetime of memory that queued tasks still use.
 *
 * Runs as root in the test VM with the module loaded with its defaults
 * (one device, mem_mb=256, ctx_host_mb=256); no other program uses the
 * device meanwhile, so the device-wide mem_used is this test's alone.
 */
#include <poll.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "snpu_test.h"

#define MiB		(1ULL << 20)
#define GiB		(1ULL << 30)
#define LONG_TIMEOUT	(30 * NS_PER_SEC)

static uint64_t round_up_u64(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

FIXTURE(mem) {
	int fd;
	long page;
	uint32_t mem_align;
	uint64_t mem_total;
	uint32_t stream;
};

FIXTURE_SETUP(mem)
{
	struct snpu_info info;

	self->page = sysconf(_SC_PAGESIZE);
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0) TH_LOG("open " SNPU_TEST_DEV ": %s",
				      strerror(-self->fd));
	ASSERT_EQ(0, snpu_get_info(self->fd, &info));
	self->mem_align = info.mem_align;
	self->mem_total = info.mem_total;
	ASSERT_EQ(SNPU_TEST_MEM_TOTAL, self->mem_total)
		TH_LOG("the suite expects the default mem_mb=256");
	ASSERT_NE(0U, self->mem_align);
	ASSERT_EQ(0U, self->mem_align & (self->mem_align - 1));
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL,
					&self->stream));
}

FIXTURE_TEARDOWN(mem)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* ---- MEM_ALLOC, MEM_QUERY, MEM_FREE ----------------------------------- */

TEST_F(mem, alloc_is_zero_filled)
{
	const size_t len = 64 * 1024 + 5;
	unsigned char *buf = malloc(len);
	uint64_t a, b;
	size_t i;

	ASSERT_NE(NULL, buf);
	/* Dirty memory, give it back, and take a new allocation. */
	ASSERT_EQ(0, snpu_alloc(self->fd, len, 0, &a));
	ASSERT_EQ(0, snpu_memset(self->fd, a, 0xff, len));
	ASSERT_EQ(0, snpu_free(self->fd, a));
	ASSERT_EQ(0, snpu_alloc(self->fd, len, 0, &b));
	memset(buf, 0x5a, len);
	ASSERT_EQ(0, snpu_d2h(self->fd, buf, b, len));
	for (i = 0; i < len; i++)
		if (buf[i])
			break;
	EXPECT_EQ(len, i) TH_LOG("byte %zu of a new allocation is 0x%02x",
				 i, i < len ? buf[i] : 0);
	free(buf);
}

TEST_F(mem, alloc_accounting_and_disjoint_ranges)
{
	static const uint64_t sizes[] = { 1, 4095, 4096, 4097, 100000 };
	uint64_t addr[5], charged = 0;
	struct snpu_ctx_query q;
	long long sys = -1;
	unsigned int i, j;

	for (i = 0; i < 5; i++) {
		ASSERT_EQ(0, snpu_alloc(self->fd, sizes[i], 0, &addr[i]));
		EXPECT_EQ(0U, addr[i] % self->mem_align);
		charged += round_up_u64(sizes[i], self->mem_align);
	}
	for (i = 0; i < 5; i++)
		for (j = 0; j < 5; j++)
			if (i != j)
				EXPECT_TRUE(addr[i] + sizes[i] <= addr[j] ||
					    addr[j] + sizes[j] <= addr[i])
					TH_LOG("allocations %u and %u overlap",
					       i, j);
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ(charged, q.mem_used);
	EXPECT_EQ(self->mem_total, q.mem_limit);
	ASSERT_EQ(0, snpu_sysfs_read("mem_used", &sys));
	EXPECT_EQ((long long)charged, sys);
	for (i = 0; i < 5; i++)
		ASSERT_EQ(0, snpu_free(self->fd, addr[i]));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ(0U, q.mem_used);
	ASSERT_EQ(0, snpu_sysfs_read("mem_used", &sys));
	EXPECT_EQ(0, sys);
}

/*
 * Many live allocations in one context (2000 x 4 KiB = 8 MiB of 256),
 * each stamped with its index: all must succeed, none may overlap (a
 * stamp survives every later allocation), and after freeing every other
 * one, allocations of other sizes and alignments fill the holes without
 * touching the survivors.
 */
TEST_F_TIMEOUT(mem, many_live_allocations, 120)
{
	const unsigned int n = 2000;
	uint64_t *addr = calloc(n, sizeof(*addr)), *more = calloc(n, 8);
	struct snpu_ctx_query q;
	unsigned int i, got = 0;
	uint32_t v;
	int ret = 0;

	ASSERT_NE(NULL, addr);
	ASSERT_NE(NULL, more);
	for (i = 0; i < n; i++) {
		ret = snpu_alloc(self->fd, 4096, 0, &addr[i]);
		if (ret)
			break;
		v = i;
		ASSERT_EQ(0, snpu_h2d(self->fd, addr[i], &v, 4));
		ASSERT_EQ(0, snpu_h2d(self->fd, addr[i] + 4092, &v, 4));
	}
	ASSERT_EQ(n, i) TH_LOG("allocation %u of 4 KiB failed: %s", i,
			       strerror(-ret));
	for (i = 0; i < n; i += 2)
		ASSERT_EQ(0, snpu_free(self->fd, addr[i]));
	for (i = 0; i < n / 2; i++) {
		uint64_t len = 1 + (i * 7919) % 12000;

		ret = snpu_alloc(self->fd, len, 1ULL << (12 + i % 4), &more[i]);
		if (ret)
			break;
		ASSERT_EQ(0, snpu_memset(self->fd, more[i], 0xee, len));
	}
	EXPECT_EQ(n / 2, i) TH_LOG("refill allocation %u failed: %s", i,
				   strerror(-ret));
	for (i = 1; i < n; i += 2) {
		uint32_t lo = ~0U, hi = ~0U;

		ASSERT_EQ(0, snpu_d2h(self->fd, &lo, addr[i], 4));
		ASSERT_EQ(0, snpu_d2h(self->fd, &hi, addr[i] + 4092, 4));
		if (lo != i || hi != i)
			break;
		got++;
	}
	EXPECT_EQ(n / 2, got) TH_LOG("allocation %u was overwritten",
				     2 * got + 1);
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_GE(q.mem_used, (uint64_t)n / 2 * 4096);
	free(addr);
	free(more);
}

TEST_F(mem, query_base_and_inner)
{
	const uint64_t len = 3 * 4096 + 17;
	uint64_t a, base, bytes, offs[] = { 0, 1, 4096, len - 1 };
	unsigned int i;

	ASSERT_EQ(0, snpu_alloc(self->fd, len, 0, &a));
	for (i = 0; i < 4; i++) {
		base = bytes = 0;
		ASSERT_EQ(0, snpu_mem_query(self->fd, a + offs[i], &base,
					    &bytes)) TH_LOG("offset %llu",
						(unsigned long long)offs[i]);
		EXPECT_EQ(a, base);
		EXPECT_EQ(len, bytes) TH_LOG("bytes is the size as requested");
	}
}

/* The first byte past the allocation (as requested) is not in it. */
TEST_F(mem, query_at_end_efault)
{
	uint64_t a;

	ASSERT_EQ(0, snpu_alloc(self->fd, 100, 0, &a));
	EXPECT_EQ(-EFAULT, snpu_mem_query(self->fd, a + 100, NULL, NULL));
}

/*
 * The rest of the allocation's granule, past the requested size, is not
 * part of the allocation either: "addr: any address inside an allocation",
 * and @bytes is "the allocation's size as requested".
 */
TEST_F(mem, query_in_granule_tail_efault)
{
	uint64_t a;

	ASSERT_EQ(0, snpu_alloc(self->fd, 100, 0, &a));
	EXPECT_EQ(-EFAULT, snpu_mem_query(self->fd, a + 101, NULL, NULL));
	EXPECT_EQ(-EFAULT, snpu_mem_query(self->fd, a + 200, NULL, NULL));
	EXPECT_EQ(-EFAULT, snpu_mem_query(self->fd, a + 4095, NULL, NULL));
}

/* A copy or memset starting in the granule tail is outside too. */
TEST_F(mem, copy_in_granule_tail_efault)
{
	unsigned char b[8] = { 0 };
	uint64_t a;

	ASSERT_EQ(0, snpu_alloc(self->fd, 100, 0, &a));
	EXPECT_EQ(-EFAULT, snpu_h2d(self->fd, a + 200, b, 8));
	EXPECT_EQ(-EFAULT, snpu_d2h(self->fd, b, a + 200, 8));
	EXPECT_EQ(-EFAULT, snpu_memset(self->fd, a + 200, 1, 8));
	EXPECT_EQ(-EFAULT, snpu_submit1(self->fd,
			snpu_t_memset(self->stream, a + 200, 1, 8)));
}

TEST_F(mem, free_inner_einval)
{
	uint64_t a, base;

	ASSERT_EQ(0, snpu_alloc(self->fd, 8192, 0, &a));
	EXPECT_EQ(-EINVAL, snpu_free(self->fd, a + 1));
	EXPECT_EQ(-EINVAL, snpu_free(self->fd, a + 4096));
	/* Still allocated. */
	ASSERT_EQ(0, snpu_mem_query(self->fd, a + 4096, &base, NULL));
	EXPECT_EQ(a, base);
	EXPECT_EQ(0, snpu_free(self->fd, a));
}

TEST_F(mem, free_unknown_einval)
{
	uint64_t a;

	EXPECT_EQ(-EINVAL, snpu_free(self->fd, 0));
	EXPECT_EQ(-EINVAL, snpu_free(self->fd, ~0ULL));
	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &a));
	EXPECT_EQ(-EINVAL, snpu_free(self->fd, a + (1ULL << 30)));
	EXPECT_EQ(0, snpu_free(self->fd, a));
	/* Double free. */
	EXPECT_EQ(-EINVAL, snpu_free(self->fd, a));
}

TEST_F(mem, freed_address_stops_resolving)
{
	unsigned char buf[64] = { 1 };
	uint64_t a, b;

	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &a));
	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &b));
	ASSERT_EQ(0, snpu_free(self->fd, a));
	EXPECT_EQ(-EFAULT, snpu_h2d(self->fd, a, buf, sizeof(buf)));
	EXPECT_EQ(-EFAULT, snpu_d2h(self->fd, buf, a, sizeof(buf)));
	EXPECT_EQ(-EFAULT, snpu_d2d(self->fd, b, a, sizeof(buf)));
	EXPECT_EQ(-EFAULT, snpu_d2d(self->fd, a, b, sizeof(buf)));
	EXPECT_EQ(-EFAULT, snpu_memset(self->fd, a, 0, sizeof(buf)));
	EXPECT_EQ(-EFAULT, snpu_mem_query(self->fd, a, NULL, NULL));
	EXPECT_EQ(-EFAULT, snpu_submit1(self->fd,
			snpu_t_copy(self->stream, SNPU_COPY_D2D, b, a, 64)));
}

TEST_F(mem, align_power_of_two_honoured)
{
	static const uint64_t aligns[] = {
		1, 2, 64, 4096, 8192, 65536, 1 * MiB, 2 * MiB, 64 * MiB, GiB,
	};
	uint64_t a, pad;
	unsigned int i;

	/* Misalign the allocator's cursor first. */
	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &pad));
	for (i = 0; i < sizeof(aligns) / sizeof(aligns[0]); i++) {
		uint64_t want = aligns[i] > self->mem_align ? aligns[i] :
				self->mem_align;

		ASSERT_EQ(0, snpu_alloc(self->fd, 4096 + 1, aligns[i], &a))
			TH_LOG("align %llu", (unsigned long long)aligns[i]);
		EXPECT_EQ(0U, a % want) TH_LOG("align %llu gave 0x%llx",
			(unsigned long long)aligns[i], (unsigned long long)a);
		ASSERT_EQ(0, snpu_free(self->fd, a));
		/* Keep the cursor misaligned. */
		ASSERT_EQ(0, snpu_free(self->fd, pad));
		ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &pad));
	}
}

TEST_F(mem, align_not_power_of_two_einval)
{
	static const uint64_t bad[] = { 3, 4097, 12288, (1ULL << 20) + 4096 };
	unsigned int i;
	uint64_t a;

	for (i = 0; i < 4; i++)
		EXPECT_EQ(-EINVAL, snpu_alloc(self->fd, 4096, bad[i], &a))
			TH_LOG("align %llu", (unsigned long long)bad[i]);
}

TEST_F(mem, align_above_1g_einval)
{
	uint64_t a;

	EXPECT_EQ(-EINVAL, snpu_alloc(self->fd, 4096, 2 * GiB, &a));
	EXPECT_EQ(-EINVAL, snpu_alloc(self->fd, 4096, 1ULL << 63, &a));
}

TEST_F(mem, alloc_bytes_zero_einval)
{
	uint64_t a;

	EXPECT_EQ(-EINVAL, snpu_alloc(self->fd, 0, 0, &a));
}

TEST_F(mem, alloc_above_device_einval)
{
	struct snpu_ctx_query q;
	uint64_t a;

	EXPECT_EQ(-EINVAL, snpu_alloc(self->fd, self->mem_total + 1, 0, &a));
	EXPECT_EQ(-EINVAL, snpu_alloc(self->fd, ~0ULL, 0, &a));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ(0U, q.mem_used);
}

TEST_F(mem, alloc_reserved_and_flags_einval)
{
	struct snpu_mem_alloc al = { .size = sizeof(al), .bytes = 4096 };
	struct snpu_mem_free fr = { .size = sizeof(fr) };
	struct snpu_mem_query mq = { .size = sizeof(mq) };
	uint64_t a;

	al.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_MEM_ALLOC, &al));
	al.reserved[1] = 0;
	al.flags = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_MEM_ALLOC, &al));

	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &a));
	fr.addr = a;
	fr.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_MEM_FREE, &fr));
	fr.reserved[0] = 0;
	fr.flags = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_MEM_FREE, &fr));
	mq.addr = a;
	mq.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_MEM_QUERY, &mq));
	/* The refused free did not free. */
	EXPECT_EQ(0, snpu_mem_query(self->fd, a, NULL, NULL));
}

/*
 * Fill the device from one context in 32 MiB pieces: the ninth does not
 * fit (ENOMEM: the device ran out; this context's quota is the device's,
 * ctx_mem_mb=0). Freeing everything brings both counters back to zero.
 */
TEST_F(mem, exhaust_device_then_free_all)
{
	const uint64_t piece = 32 * MiB;
	uint64_t addr[16], a;
	struct snpu_ctx_query q;
	unsigned int n = 0, i;
	long long sys = -1;
	int ret;

	while (n < 16) {
		ret = snpu_alloc(self->fd, piece, 0, &addr[n]);
		if (ret)
			break;
		n++;
	}
	EXPECT_EQ(self->mem_total / piece, n);
	EXPECT_EQ(-ENOMEM, ret);
	/* Full: even one byte does not fit. */
	EXPECT_EQ(-ENOMEM, snpu_alloc(self->fd, 1, 0, &a));
	ASSERT_EQ(0, snpu_sysfs_read("mem_used", &sys));
	EXPECT_EQ((long long)(n * piece), sys);

	for (i = 0; i < n; i++)
		ASSERT_EQ(0, snpu_free(self->fd, addr[i]));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ(0U, q.mem_used);
	ASSERT_EQ(0, snpu_sysfs_read("mem_used", &sys));
	EXPECT_EQ(0, sys);
	/* And the memory is usable again. */
	ASSERT_EQ(0, snpu_alloc(self->fd, piece, 0, &a));
	EXPECT_EQ(0, snpu_free(self->fd, a));
}

/*
 * Device memory is shared by contexts: B, well within its own quota, gets
 * ENOMEM when A holds the rest; closing B gives its memory back.
 */
TEST_F(mem, exhaust_device_two_contexts)
{
	uint64_t a, b1, b2;
	struct snpu_ctx_query q;
	long long sys = -1;
	int fdb;

	ASSERT_EQ(0, snpu_alloc(self->fd, 160 * MiB, 0, &a));
	fdb = snpu_open_dev();
	ASSERT_GE(fdb, 0);
	EXPECT_EQ(-ENOMEM, snpu_alloc(fdb, 128 * MiB, 0, &b1));
	ASSERT_EQ(0, snpu_ctx_query(fdb, &q));
	EXPECT_EQ(0U, q.mem_used) TH_LOG("a refused alloc changed nothing");
	ASSERT_EQ(0, snpu_alloc(fdb, 96 * MiB, 0, &b1));
	EXPECT_EQ(-ENOMEM, snpu_alloc(fdb, 4096, 0, &b2));
	ASSERT_EQ(0, snpu_sysfs_read("mem_used", &sys));
	EXPECT_EQ((long long)(256 * MiB), sys);
	close(fdb);
	ASSERT_EQ(0, snpu_sysfs_read("mem_used", &sys));
	EXPECT_EQ((long long)(160 * MiB), sys);
	ASSERT_EQ(0, snpu_free(self->fd, a));
	ASSERT_EQ(0, snpu_sysfs_read("mem_used", &sys));
	EXPECT_EQ(0, sys);
}

/* ---- synchronous copies ------------------------------------------------ */

FIXTURE(copy) {
	int fd;
	uint64_t a, b;
	unsigned char *src, *dst;
};

FIXTURE_VARIANT(copy) {
	uint64_t bytes;
	uint64_t offset;	/* into the allocations */
};

FIXTURE_VARIANT_ADD(copy, b1) { .bytes = 1 };
FIXTURE_VARIANT_ADD(copy, b4095) { .bytes = 4095 };
FIXTURE_VARIANT_ADD(copy, b4096) { .bytes = 4096 };
FIXTURE_VARIANT_ADD(copy, b1m_plus_3) { .bytes = (1 << 20) + 3 };
FIXTURE_VARIANT_ADD(copy, b4096_off7) { .bytes = 4096, .offset = 7 };

FIXTURE_SETUP(copy)
{
	uint64_t len = variant->bytes + variant->offset;

	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_alloc(self->fd, len, 0, &self->a));
	ASSERT_EQ(0, snpu_alloc(self->fd, len, 0, &self->b));
	self->src = malloc(variant->bytes);
	self->dst = malloc(variant->bytes);
	ASSERT_NE(NULL, self->src);
	ASSERT_NE(NULL, self->dst);
	snpu_fill_random(self->src, variant->bytes, variant->bytes * 31 + 7);
}

FIXTURE_TEARDOWN(copy)
{
	free(self->src);
	free(self->dst);
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(copy, h2d_d2d_d2h_roundtrip)
{
	uint64_t n = variant->bytes, off = variant->offset;

	ASSERT_EQ(0, snpu_h2d(self->fd, self->a + off, self->src, n));
	ASSERT_EQ(0, snpu_d2d(self->fd, self->b + off, self->a + off, n));
	memset(self->dst, ~self->src[0], n);
	ASSERT_EQ(0, snpu_d2h(self->fd, self->dst, self->b + off, n));
	EXPECT_EQ(0, memcmp(self->src, self->dst, n));
	/* The source allocation is intact too. */
	memset(self->dst, ~self->src[0], n);
	ASSERT_EQ(0, snpu_d2h(self->fd, self->dst, self->a + off, n));
	EXPECT_EQ(0, memcmp(self->src, self->dst, n));
}

TEST_F(copy, range_crossing_end_efault)
{
	uint64_t n = variant->bytes, off = variant->offset;
	uint64_t end = self->a + off + n;	/* one past allocation a */

	EXPECT_EQ(-EFAULT, snpu_h2d(self->fd, self->a + off + 1, self->src, n));
	EXPECT_EQ(-EFAULT, snpu_d2h(self->fd, self->dst, self->a + off + 1, n));
	EXPECT_EQ(-EFAULT, snpu_d2d(self->fd, self->b + off, self->a + off + 1,
				    n));
	EXPECT_EQ(-EFAULT, snpu_d2d(self->fd, self->a + off + 1, self->b + off,
				    n));
	/* Across the end, whatever follows the allocation. */
	EXPECT_EQ(-EFAULT, snpu_h2d(self->fd, end - 1, self->src, 2));
	EXPECT_EQ(-EFAULT, snpu_memset(self->fd, self->a + off + 1, 0, n));
	EXPECT_EQ(-EFAULT, snpu_memset(self->fd, end - 1, 0, 2));
}

/* ---- copy and memset argument checks ----------------------------------- */

TEST_F(mem, copy_spanning_two_allocations_efault)
{
	unsigned char buf[256] = { 0 };
	uint64_t a, b;

	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &a));
	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &b));
	if (b == a + 4096) {
		EXPECT_EQ(-EFAULT, snpu_h2d(self->fd, a + 4000, buf, 200));
		EXPECT_EQ(-EFAULT, snpu_d2h(self->fd, buf, a + 4000, 200));
	}
	if (a == b + 4096)
		EXPECT_EQ(-EFAULT, snpu_h2d(self->fd, b + 4000, buf, 200));
	/* Whatever the layout: a range past either allocation's end. */
	EXPECT_EQ(-EFAULT, snpu_h2d(self->fd, a + 4000, buf, 200));
	EXPECT_EQ(-EFAULT, snpu_h2d(self->fd, b + 4000, buf, 200));
}

TEST_F(mem, copy_bad_fields_einval)
{
	struct snpu_mem_copy c;
	unsigned char buf[16] = { 0 };
	uint64_t a;
	unsigned int i;

	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &a));
	for (i = 0; i < 7; i++) {
		memset(&c, 0, sizeof(c));
		c.size = sizeof(c);
		c.dir = SNPU_COPY_H2D;
		c.dst = a;
		c.src = (uintptr_t)buf;
		c.bytes = sizeof(buf);
		switch (i) {
		case 0: c.dir = 0; break;
		case 1: c.dir = 4; break;
		case 2: c.pad = 1; break;
		case 3: c.reserved[0] = 1; break;
		case 4: c.reserved[1] = 1ULL << 63; break;
		case 5: c.flags = 1; break;
		case 6: c.bytes = 0; break;
		}
		EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_MEM_COPY, &c))
			TH_LOG("case %u", i);
	}
	/* The same call, valid. */
	c.bytes = sizeof(buf);
	EXPECT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_MEM_COPY, &c));
}

TEST_F(mem, copy_bad_user_pointer_efault)
{
	uint64_t a;

	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &a));
	EXPECT_EQ(-EFAULT, snpu_copy(self->fd, SNPU_COPY_H2D, a, 0, 64));
	EXPECT_EQ(-EFAULT, snpu_copy(self->fd, SNPU_COPY_D2H, 0, a, 64));
	EXPECT_EQ(-EFAULT, snpu_copy(self->fd, SNPU_COPY_D2H,
				     0xffff800000000000ULL, a, 64));
}

TEST_F(mem, memset_sets_only_its_range)
{
	const size_t len = 10000;
	unsigned char *buf = malloc(len);
	uint64_t a;
	size_t i;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, snpu_alloc(self->fd, len, 0, &a));
	ASSERT_EQ(0, snpu_memset(self->fd, a, 0x11, len));
	ASSERT_EQ(0, snpu_memset(self->fd, a + 1000, 0xab, 5000));
	ASSERT_EQ(0, snpu_memset(self->fd, a + len - 1, 0xff, 1));
	ASSERT_EQ(0, snpu_d2h(self->fd, buf, a, len));
	for (i = 0; i < len; i++) {
		unsigned char want = i == len - 1 ? 0xff :
			(i >= 1000 && i < 6000) ? 0xab : 0x11;

		if (buf[i] != want)
			break;
	}
	EXPECT_EQ(len, i) TH_LOG("byte %zu is 0x%02x", i, buf[i]);
	free(buf);
}

TEST_F(mem, memset_bad_fields)
{
	struct snpu_mem_set m;
	uint64_t a;
	unsigned int i;

	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &a));
	for (i = 0; i < 5; i++) {
		memset(&m, 0, sizeof(m));
		m.size = sizeof(m);
		m.addr = a;
		m.bytes = 16;
		switch (i) {
		case 0: m.value = 256; break;
		case 1: m.pad = 1; break;
		case 2: m.reserved[0] = 1; break;
		case 3: m.flags = 1; break;
		case 4: m.bytes = 0; break;
		}
		EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_MEM_SET, &m))
			TH_LOG("case %u", i);
	}
	EXPECT_EQ(-EFAULT, snpu_memset(self->fd, a + 4090, 0, 16));
	EXPECT_EQ(-EFAULT, snpu_memset(self->fd, 0, 0, 16));
}

/* ---- isolation between contexts ---------------------------------------- */

TEST_F(mem, isolation_between_contexts)
{
	unsigned char pat[256], buf[256];
	struct snpu_stream_query sq;
	struct snpu_event_query eq;
	unsigned char *hp = NULL;
	uint32_t ev, bs, hh;
	uint64_t a, b, hoff;
	int fdb;

	snpu_fill_random(pat, sizeof(pat), 99);
	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &a));
	ASSERT_EQ(0, snpu_h2d(self->fd, a, pat, sizeof(pat)));
	ASSERT_EQ(0, snpu_event_create(self->fd, &ev));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_record(self->stream, ev)));
	/* A's host memory: one mapped page, and one more not yet mapped. */
	ASSERT_EQ(0, snpu_host_map(self->fd, self->page, &hh, (void **)&hp));
	ASSERT_EQ(0, snpu_host_alloc(self->fd, self->page, &hh, &hoff));

	fdb = snpu_open_dev();
	ASSERT_GE(fdb, 0);
	/* B owns nothing yet, so no handle of B can alias A's. */
	memset(buf, 0, sizeof(buf));
	EXPECT_EQ(-EFAULT, snpu_d2h(fdb, buf, a, sizeof(buf)));
	EXPECT_EQ(-EFAULT, snpu_h2d(fdb, a, buf, sizeof(buf)));
	EXPECT_EQ(-EFAULT, snpu_memset(fdb, a, 0, sizeof(buf)));
	EXPECT_EQ(-EFAULT, snpu_mem_query(fdb, a, NULL, NULL));
	EXPECT_EQ(-EINVAL, snpu_free(fdb, a));
	EXPECT_EQ(-ENOENT, snpu_stream_query(fdb, self->stream, &sq));
	EXPECT_EQ(-ENOENT, snpu_stream_sync(fdb, self->stream, 0, NULL));
	EXPECT_EQ(-ENOENT, snpu_stream_abort(fdb, self->stream));
	EXPECT_EQ(-ENOENT, snpu_stream_destroy(fdb, self->stream, 0));
	EXPECT_EQ(-ENOENT, snpu_submit1(fdb, snpu_t_nop(self->stream)));
	EXPECT_EQ(-ENOENT, snpu_event_query(fdb, ev, &eq));
	EXPECT_EQ(-ENOENT, snpu_event_sync(fdb, ev, 0, NULL));
	EXPECT_EQ(-ENOENT, snpu_event_destroy(fdb, ev));

	/* Nor A's host memory: mapping it, or naming it in a copy. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, self->page, PROT_READ | PROT_WRITE,
				   MAP_SHARED, fdb, hoff));
	EXPECT_EQ(EINVAL, errno);

	/* B's own stream cannot name A's memory in a task either. */
	ASSERT_EQ(0, snpu_alloc(fdb, 4096, 0, &b));
	EXPECT_NE(a, b);
	ASSERT_EQ(0, snpu_stream_create(fdb, 0, &bs));
	EXPECT_EQ(-EFAULT, snpu_submit1(fdb,
			snpu_t_copy(bs, SNPU_COPY_D2D, b, a, 64)));
	EXPECT_EQ(-EFAULT, snpu_submit1(fdb, snpu_t_memset(bs, a, 0, 64)));
	EXPECT_EQ(-EINVAL, snpu_submit1(fdb, snpu_t_copy(bs, SNPU_COPY_H2D, b,
					(uintptr_t)hp, 64)));
	EXPECT_EQ(-EINVAL, snpu_submit1(fdb, snpu_t_copy(bs, SNPU_COPY_D2H,
					(uintptr_t)hp, b, 64)));
	close(fdb);

	/* A is untouched and its objects still work. */
	ASSERT_EQ(0, snpu_d2h(self->fd, buf, a, sizeof(buf)));
	EXPECT_EQ(0, memcmp(pat, buf, sizeof(buf)));
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->stream, &sq));
	EXPECT_EQ(1U, sq.submitted);
	ASSERT_EQ(0, snpu_event_sync(self->fd, ev, LONG_TIMEOUT, NULL));
}

/*
 * "An address of another context never resolves", however many contexts
 * were opened in between: here 255 open/close pairs between A and B.
 */
TEST_F(mem, isolation_after_many_opens)
{
	unsigned char pat[64], buf[64];
	uint64_t a, b;
	int i, fd, fdb;

	snpu_fill_random(pat, sizeof(pat), 1);
	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &a));
	ASSERT_EQ(0, snpu_h2d(self->fd, a, pat, sizeof(pat)));
	for (i = 0; i < 255; i++) {
		fd = snpu_open_dev();
		ASSERT_GE(fd, 0);
		close(fd);
	}
	fdb = snpu_open_dev();
	ASSERT_GE(fdb, 0);
	ASSERT_EQ(0, snpu_alloc(fdb, 4096, 0, &b));
	EXPECT_NE(a, b) TH_LOG("B got A's address 0x%llx",
			       (unsigned long long)a);
	EXPECT_EQ(-EFAULT, snpu_mem_query(fdb, a, NULL, NULL));
	memset(buf, 0, sizeof(buf));
	EXPECT_EQ(-EFAULT, snpu_d2h(fdb, buf, a, sizeof(buf)));
	/* Whatever happens, never A's data. */
	EXPECT_NE(0, memcmp(pat, buf, sizeof(buf)));
	close(fdb);
}

/* ---- host memory: HOST_ALLOC and mmap ---------------------------------- */

TEST_F(mem, host_alloc_mmap_zeroed_and_accounted)
{
	const size_t len = 3 * self->page;
	struct snpu_ctx_query q;
	unsigned char *p = NULL;
	uint32_t h;
	size_t i;

	ASSERT_EQ(0, snpu_host_map(self->fd, len, &h, (void **)&p));
	for (i = 0; i < len; i++)
		if (p[i])
			break;
	EXPECT_EQ(len, i);
	memset(p, 0x3c, len);
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ((uint64_t)len, q.host_used);
	EXPECT_EQ(SNPU_TEST_HOST_LIMIT, q.host_limit);
	ASSERT_EQ(0, snpu_host_free(self->fd, h));
	ASSERT_EQ(0, munmap(p, len));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ(0U, q.host_used);
}

TEST_F(mem, host_alloc_rounds_to_pages)
{
	struct snpu_ctx_query q;
	uint64_t off;
	uint32_t h;
	void *p = NULL;

	ASSERT_EQ(0, snpu_host_alloc(self->fd, 100, &h, &off));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ((uint64_t)self->page, q.host_used);
	p = mmap(NULL, self->page, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, off);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap of the rounded size: %s",
					strerror(errno));
	munmap(p, self->page);
}

TEST_F(mem, host_alloc_bad_args_einval)
{
	struct snpu_host_alloc a = { .size = sizeof(a), .bytes = 4096 };
	uint64_t off;
	uint32_t h;

	EXPECT_EQ(-EINVAL, snpu_host_alloc(self->fd, 0, &h, &off));
	a.pad = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_HOST_ALLOC, &a));
	a.pad = 0;
	a.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_HOST_ALLOC, &a));
}

TEST_F(mem, host_mmap_twice_ebusy)
{
	const size_t len = 2 * self->page;
	uint64_t off;
	uint32_t h;
	void *p, *q;

	ASSERT_EQ(0, snpu_host_alloc(self->fd, len, &h, &off));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, off);
	ASSERT_NE(MAP_FAILED, p);
	q = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, off);
	EXPECT_EQ(MAP_FAILED, q);
	EXPECT_EQ(EBUSY, errno);
	/* "Once": not again after munmap either. */
	ASSERT_EQ(0, munmap(p, len));
	q = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, off);
	EXPECT_EQ(MAP_FAILED, q);
	EXPECT_EQ(EBUSY, errno);
}

TEST_F(mem, host_mmap_wrong_size_einval)
{
	const size_t len = 2 * self->page;
	uint64_t off;
	uint32_t h;
	void *p = NULL;

	ASSERT_EQ(0, snpu_host_alloc(self->fd, len, &h, &off));
	p = mmap(NULL, self->page, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, off);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, 3 * self->page, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, off);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	/* The right size still maps: the refusals did not consume it. */
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, off);
	ASSERT_NE(MAP_FAILED, p);
	munmap(p, len);
}

TEST_F(mem, host_mmap_bad_offset_einval)
{
	uint64_t off;
	uint32_t h;
	void *p = NULL;

	ASSERT_EQ(0, snpu_host_alloc(self->fd, self->page, &h, &off));
	/* An offset naming no host allocation: here the stream's handle. */
	p = mmap(NULL, self->page, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, (off_t)self->stream * self->page);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, self->page, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, off + 1000 * self->page);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
}

/* Host memory beyond the context's quota: ENOSPC, nothing charged. */
TEST_F(mem, host_quota_enospc)
{
	struct snpu_ctx_query q;
	uint64_t off, off2;
	uint32_t h, h2;

	ASSERT_EQ(0, snpu_host_alloc(self->fd, 128 * MiB, &h, &off));
	EXPECT_EQ(-ENOSPC, snpu_host_alloc(self->fd, 128 * MiB + 4096, &h2,
					   &off2));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ(128 * MiB, q.host_used);
	/* Exactly up to the quota fits. */
	EXPECT_EQ(0, snpu_host_alloc(self->fd, 128 * MiB, &h2, &off2));
	EXPECT_EQ(-ENOSPC, snpu_host_alloc(self->fd, 1, &h2, &off2));
	ASSERT_EQ(0, snpu_host_free(self->fd, h));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ(128 * MiB, q.host_used);
}

/* Registered memory cannot be mapped through the device file. */
TEST_F(mem, host_mmap_registered_handle_einval)
{
	unsigned char *m;
	uint32_t h;
	void *p;

	ASSERT_EQ(0, posix_memalign((void **)&m, self->page, self->page));
	memset(m, 0, self->page);
	ASSERT_EQ(0, snpu_host_register(self->fd, m, self->page, &h));
	p = mmap(NULL, self->page, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, (off_t)h * self->page);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	free(m);
}

/* A mapped driver allocation is host memory of the context: no overlap. */
TEST_F(mem, host_register_over_mapping_eexist)
{
	unsigned char *p = NULL;
	uint32_t h, h2;

	ASSERT_EQ(0, snpu_host_map(self->fd, 2 * self->page, &h, (void **)&p));
	EXPECT_EQ(-EEXIST, snpu_host_register(self->fd, p, 2 * self->page,
					      &h2));
	EXPECT_EQ(-EEXIST, snpu_host_register(self->fd, p + self->page,
					      self->page, &h2));
	munmap(p, 2 * self->page);
}

/*
 * What the process writes through its mapping is what queued copies
 * read, and what they write the process sees: a private mapping either
 * is refused or behaves the same.
 */
TEST_F(mem, host_mmap_private_coherent_or_refused)
{
	const size_t len = 2 * self->page;
	unsigned char *p = NULL, *back = malloc(len);
	uint64_t off, a;
	uint32_t h;
	int32_t err = 1;
	size_t i;

	ASSERT_NE(NULL, back);
	ASSERT_EQ(0, snpu_host_alloc(self->fd, len, &h, &off));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, self->fd, off);
	if (p == MAP_FAILED) {
		/* Refused: fine, and the handle can still be mapped shared. */
		EXPECT_EQ(EINVAL, errno);
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			 self->fd, off);
		ASSERT_NE(MAP_FAILED, p);
	}
	ASSERT_EQ(0, snpu_alloc(self->fd, len, 0, &a));
	snpu_fill_random(p, len, 8);
	/* Host -> device: the device reads what the process wrote. */
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_copy(self->stream,
			SNPU_COPY_H2D, a, (uintptr_t)p, len)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, LONG_TIMEOUT,
				      &err));
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, snpu_d2h(self->fd, back, a, len));
	EXPECT_EQ(0, memcmp(p, back, len))
		TH_LOG("queued copy read stale data");
	/* Device -> host: the process sees what the device wrote. */
	ASSERT_EQ(0, snpu_memset(self->fd, a, 0x6b, len));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_copy(self->stream,
			SNPU_COPY_D2H, (uintptr_t)p, a, len)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, LONG_TIMEOUT,
				      &err));
	for (i = 0; i < len; i++)
		if (p[i] != 0x6b)
			break;
	EXPECT_EQ(len, i) TH_LOG("the mapping missed the device's write");
	munmap(p, len);
	free(back);
}

/* Unmapped while a queued copy writes it: memory and charge stay until done. */
TEST_F(mem, host_munmap_while_queued)
{
	const size_t len = 2 * self->page;
	struct snpu_ctx_query q;
	unsigned char *p = NULL;
	uint64_t a;
	uint32_t h;
	int32_t err = 1;

	ASSERT_EQ(0, snpu_host_map(self->fd, len, &h, (void **)&p));
	ASSERT_EQ(0, snpu_alloc(self->fd, len, 0, &a));
	struct snpu_task t[3] = {
		snpu_t_host_func(self->stream, 1),
		snpu_t_copy(self->stream, SNPU_COPY_D2H, (uintptr_t)p, a, len),
		snpu_t_copy(self->stream, SNPU_COPY_H2D, a, (uintptr_t)p, len),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 3, NULL));
	ASSERT_EQ(0, munmap(p, len));
	ASSERT_EQ(0, snpu_host_free(self->fd, h));
	/* No longer nameable by new tasks. */
	EXPECT_EQ(-EINVAL, snpu_submit1(self->fd, snpu_t_copy(self->stream,
			SNPU_COPY_H2D, a, (uintptr_t)p, len)));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ((uint64_t)len, q.host_used);
	ASSERT_EQ(0, snpu_callback_answer(self->fd, LONG_TIMEOUT, 0, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, LONG_TIMEOUT,
				      &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ(0U, q.host_used);
}

/* A live mapping keeps the context alive after close(2). */
TEST_F(mem, close_with_live_mapping)
{
	long long c0 = -1, c1 = -1, used = -1;
	unsigned char *p = NULL;
	uint64_t a;
	uint32_t h;
	int fdb;

	ASSERT_EQ(0, snpu_sysfs_read("contexts", &c0));
	fdb = snpu_open_dev();
	ASSERT_GE(fdb, 0);
	ASSERT_EQ(0, snpu_alloc(fdb, 8192, 0, &a));
	ASSERT_EQ(0, snpu_host_map(fdb, self->page, &h, (void **)&p));
	close(fdb);
	ASSERT_EQ(0, snpu_sysfs_read("contexts", &c1));
	EXPECT_EQ(c0 + 1, c1);
	p[0] = 1;	/* still mapped, still writable */
	ASSERT_EQ(0, snpu_sysfs_read("mem_used", &used));
	EXPECT_EQ(8192, used);
	ASSERT_EQ(0, munmap(p, self->page));
	ASSERT_EQ(0, snpu_sysfs_read("contexts", &c1));
	EXPECT_EQ(c0, c1);
	ASSERT_EQ(0, snpu_sysfs_read("mem_used", &used));
	EXPECT_EQ(0, used);
}

/* Queued copies between mapped host memory and the device. */
TEST_F(mem, async_copy_mapped_host)
{
	const size_t len = 4 * self->page;
	unsigned char *in = NULL, *out = NULL;
	uint32_t hi, ho;
	uint64_t a, b;
	int32_t err = 1;

	ASSERT_EQ(0, snpu_host_map(self->fd, len, &hi, (void **)&in));
	ASSERT_EQ(0, snpu_host_map(self->fd, len, &ho, (void **)&out));
	ASSERT_EQ(0, snpu_alloc(self->fd, len, 0, &a));
	ASSERT_EQ(0, snpu_alloc(self->fd, len, 0, &b));
	snpu_fill_random(in, len, 1234);

	struct snpu_task t[3] = {
		snpu_t_copy(self->stream, SNPU_COPY_H2D, a, (uintptr_t)in, len),
		snpu_t_copy(self->stream, SNPU_COPY_D2D, b, a, len),
		/* Only a part, at an offset on both sides. */
		snpu_t_copy(self->stream, SNPU_COPY_D2H,
			    (uintptr_t)out + 100, b + 100, len - 200),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 3, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, LONG_TIMEOUT,
				      &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(0, memcmp(in + 100, out + 100, len - 200));
	EXPECT_EQ(0, out[99]);
	EXPECT_EQ(0, out[len - 100]);
}

TEST_F(mem, async_copy_malloc_memory_einval)
{
	const size_t len = 8192;
	unsigned char *m = malloc(len);
	struct snpu_stream_query q;
	unsigned char *mapped = NULL;
	uint64_t a;
	uint32_t h;

	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, snpu_alloc(self->fd, len, 0, &a));
	EXPECT_EQ(-EINVAL, snpu_submit1(self->fd, snpu_t_copy(self->stream,
			SNPU_COPY_H2D, a, (uintptr_t)m, len)));
	EXPECT_EQ(-EINVAL, snpu_submit1(self->fd, snpu_t_copy(self->stream,
			SNPU_COPY_D2H, (uintptr_t)m, a, len)));
	/* A range that starts in mapped host memory and runs past it. */
	ASSERT_EQ(0, snpu_host_map(self->fd, self->page, &h, (void **)&mapped));
	EXPECT_EQ(-EINVAL, snpu_submit1(self->fd, snpu_t_copy(self->stream,
			SNPU_COPY_H2D, a, (uintptr_t)mapped, self->page + 1)));
	EXPECT_EQ(0, snpu_submit1(self->fd, snpu_t_copy(self->stream,
			SNPU_COPY_H2D, a, (uintptr_t)mapped, self->page)));
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->stream, &q));
	EXPECT_EQ(1U, q.submitted);
	free(m);
}

TEST_F(mem, async_copy_after_munmap_einval)
{
	unsigned char *p = NULL;
	uint64_t a;
	uint32_t h;

	ASSERT_EQ(0, snpu_alloc(self->fd, self->page, 0, &a));
	ASSERT_EQ(0, snpu_host_map(self->fd, self->page, &h, (void **)&p));
	ASSERT_EQ(0, munmap(p, self->page));
	EXPECT_EQ(-EINVAL, snpu_submit1(self->fd, snpu_t_copy(self->stream,
			SNPU_COPY_H2D, a, (uintptr_t)p, self->page)));
}

/* ---- host memory: HOST_REGISTER ---------------------------------------- */

TEST_F(mem, host_register_async_copies)
{
	const size_t len = 4 * self->page;
	unsigned char *in = NULL, *out = NULL;
	uint32_t hi, ho;
	uint64_t a;
	int32_t err = 1;

	ASSERT_EQ(0, posix_memalign((void **)&in, self->page, len));
	ASSERT_EQ(0, posix_memalign((void **)&out, self->page, len));
	snpu_fill_random(in, len, 77);
	memset(out, 0, len);
	ASSERT_EQ(0, snpu_host_register(self->fd, in, len, &hi));
	ASSERT_EQ(0, snpu_host_register(self->fd, out, len, &ho));
	EXPECT_NE(hi, ho);
	ASSERT_EQ(0, snpu_alloc(self->fd, len, 0, &a));

	struct snpu_task t[2] = {
		snpu_t_copy(self->stream, SNPU_COPY_H2D, a, (uintptr_t)in, len),
		snpu_t_copy(self->stream, SNPU_COPY_D2H, (uintptr_t)out, a,
			    len),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, LONG_TIMEOUT,
				      &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(0, memcmp(in, out, len));
	EXPECT_EQ(0, snpu_host_free(self->fd, hi));
	EXPECT_EQ(0, snpu_host_free(self->fd, ho));
	free(in);
	free(out);
}

TEST_F(mem, host_register_accounting)
{
	const size_t len = 2 * self->page;
	struct snpu_ctx_query q;
	unsigned char *m;
	uint32_t h;

	ASSERT_EQ(0, posix_memalign((void **)&m, self->page, len));
	memset(m, 0, len);
	ASSERT_EQ(0, snpu_host_register(self->fd, m, len, &h));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ((uint64_t)len, q.host_used);
	ASSERT_EQ(0, snpu_host_free(self->fd, h));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ(0U, q.host_used);
	free(m);
}

TEST_F(mem, host_register_unaligned_einval)
{
	const size_t len = 4 * self->page;
	unsigned char *m;
	uint32_t h;

	ASSERT_EQ(0, posix_memalign((void **)&m, self->page, len));
	memset(m, 0, len);
	EXPECT_EQ(-EINVAL, snpu_host_register(self->fd, m + 8, self->page, &h));
	EXPECT_EQ(-EINVAL, snpu_host_register(self->fd, m, self->page + 1,
					      &h));
	EXPECT_EQ(-EINVAL, snpu_host_register(self->fd, m, 100, &h));
	EXPECT_EQ(-EINVAL, snpu_host_register(self->fd, m, 0, &h));
	free(m);
}

TEST_F(mem, host_register_overlap_eexist)
{
	const size_t len = 4 * self->page;
	struct snpu_ctx_query q;
	unsigned char *m;
	uint32_t h, h2;

	ASSERT_EQ(0, posix_memalign((void **)&m, self->page, len));
	memset(m, 0, len);
	ASSERT_EQ(0, snpu_host_register(self->fd, m + self->page,
					2 * self->page, &h));
	EXPECT_EQ(-EEXIST, snpu_host_register(self->fd, m + self->page,
					      2 * self->page, &h2));
	EXPECT_EQ(-EEXIST, snpu_host_register(self->fd, m, 2 * self->page,
					      &h2));
	EXPECT_EQ(-EEXIST, snpu_host_register(self->fd, m + 2 * self->page,
					      2 * self->page, &h2));
	EXPECT_EQ(-EEXIST, snpu_host_register(self->fd, m, len, &h2));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ((uint64_t)2 * self->page, q.host_used)
		TH_LOG("refused registrations stay uncharged");
	/* Adjacent, not overlapping: fine. */
	EXPECT_EQ(0, snpu_host_register(self->fd, m, self->page, &h2));
	EXPECT_EQ(0, snpu_host_free(self->fd, h2));
	EXPECT_EQ(0, snpu_host_free(self->fd, h));
	free(m);
}

TEST_F(mem, host_free_unknown_enoent)
{
	uint32_t ev;

	EXPECT_EQ(-ENOENT, snpu_host_free(self->fd, 0));
	EXPECT_EQ(-ENOENT, snpu_host_free(self->fd, 12345));
	/* A handle of another type is not host memory. */
	EXPECT_EQ(-ENOENT, snpu_host_free(self->fd, self->stream));
	ASSERT_EQ(0, snpu_event_create(self->fd, &ev));
	EXPECT_EQ(-ENOENT, snpu_host_free(self->fd, ev));
}

TEST_F(mem, host_free_twice_enoent)
{
	unsigned char *m;
	uint32_t h;

	ASSERT_EQ(0, posix_memalign((void **)&m, self->page, self->page));
	memset(m, 0, self->page);
	ASSERT_EQ(0, snpu_host_register(self->fd, m, self->page, &h));
	EXPECT_EQ(0, snpu_host_free(self->fd, h));
	EXPECT_EQ(-ENOENT, snpu_host_free(self->fd, h));
	free(m);
}

TEST_F(mem, host_free_registered_stops_resolving)
{
	const size_t len = 2 * self->page;
	unsigned char *m;
	uint64_t a;
	uint32_t h;

	ASSERT_EQ(0, posix_memalign((void **)&m, self->page, len));
	memset(m, 0, len);
	ASSERT_EQ(0, snpu_alloc(self->fd, len, 0, &a));
	ASSERT_EQ(0, snpu_host_register(self->fd, m, len, &h));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_copy(self->stream,
			SNPU_COPY_H2D, a, (uintptr_t)m, len)));
	ASSERT_EQ(0, snpu_host_free(self->fd, h));
	EXPECT_EQ(-EINVAL, snpu_submit1(self->fd, snpu_t_copy(self->stream,
			SNPU_COPY_H2D, a, (uintptr_t)m, len)));
	EXPECT_EQ(-EINVAL, snpu_submit1(self->fd, snpu_t_copy(self->stream,
			SNPU_COPY_D2H, (uintptr_t)m + self->page, a, 64)));
	/* The range may be registered again. */
	ASSERT_EQ(0, snpu_host_register(self->fd, m, len, &h));
	EXPECT_EQ(0, snpu_submit1(self->fd, snpu_t_copy(self->stream,
			SNPU_COPY_H2D, a, (uintptr_t)m, len)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, LONG_TIMEOUT,
				      NULL));
	EXPECT_EQ(0, snpu_host_free(self->fd, h));
	free(m);
}

/* ---- memory freed while queued tasks use it ---------------------------- */

/*
 * A task queued behind a host callback (the stream cannot pass it until
 * CALLBACK_DONE) and a 50 ms SPIN reads an allocation that is then freed:
 * the address stops resolving at once, the memory and its charge stay
 * until the task completes, and the task's result is right.
 */
TEST_F(mem, mem_free_while_queued)
{
	const size_t len = 64 * 1024;
	unsigned char *src = malloc(len), *out = NULL;
	struct snpu_ctx_query q;
	long long sys = -1;
	uint32_t ho;
	uint64_t a, ud = 0;
	int32_t err = 1;

	ASSERT_NE(NULL, src);
	snpu_fill_random(src, len, 4242);
	ASSERT_EQ(0, snpu_host_map(self->fd, len, &ho, (void **)&out));
	ASSERT_EQ(0, snpu_alloc(self->fd, len, 0, &a));
	ASSERT_EQ(0, snpu_h2d(self->fd, a, src, len));

	struct snpu_task t[3] = {
		snpu_t_host_func(self->stream, 0x6a7e),
		snpu_t_spin(self->stream, 50 * NS_PER_MS, 1),
		snpu_t_copy(self->stream, SNPU_COPY_D2H, (uintptr_t)out, a,
			    len),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 3, NULL));
	ASSERT_EQ(0, snpu_free(self->fd, a));

	EXPECT_EQ(-EFAULT, snpu_mem_query(self->fd, a, NULL, NULL));
	EXPECT_EQ(-EFAULT, snpu_d2h(self->fd, src, a, 1));
	EXPECT_EQ(-EINVAL, snpu_free(self->fd, a));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ((uint64_t)len, q.mem_used)
		TH_LOG("the queued copy still holds the memory");
	ASSERT_EQ(0, snpu_sysfs_read("mem_used", &sys));
	EXPECT_EQ((long long)len, sys);

	ASSERT_EQ(0, snpu_callback_answer(self->fd, LONG_TIMEOUT, 0, &ud));
	EXPECT_EQ(0x6a7eU, ud);
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, LONG_TIMEOUT,
				      &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(0, memcmp(src, out, len));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ(0U, q.mem_used);
	ASSERT_EQ(0, snpu_sysfs_read("mem_used", &sys));
	EXPECT_EQ(0, sys);
	free(src);
}

/* The same with a plain 50 ms SPIN in front (no callback gate). */
TEST_F(mem, mem_free_behind_spin)
{
	const size_t len = 16 * 1024;
	unsigned char *src = malloc(len), *out = NULL;
	struct snpu_ctx_query q;
	uint64_t a, b;
	uint32_t ho;
	int32_t err = 1;

	ASSERT_NE(NULL, src);
	snpu_fill_random(src, len, 99);
	ASSERT_EQ(0, snpu_host_map(self->fd, len, &ho, (void **)&out));
	ASSERT_EQ(0, snpu_alloc(self->fd, len, 0, &a));
	ASSERT_EQ(0, snpu_alloc(self->fd, len, 0, &b));
	ASSERT_EQ(0, snpu_h2d(self->fd, a, src, len));

	struct snpu_task t[3] = {
		snpu_t_spin(self->stream, 50 * NS_PER_MS, 1),
		snpu_t_copy(self->stream, SNPU_COPY_D2D, b, a, len),
		snpu_t_copy(self->stream, SNPU_COPY_D2H, (uintptr_t)out, b,
			    len),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 3, NULL));
	ASSERT_EQ(0, snpu_free(self->fd, a));
	ASSERT_EQ(0, snpu_free(self->fd, b));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, LONG_TIMEOUT,
				      &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(0, memcmp(src, out, len));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ(0U, q.mem_used);
	free(src);
}

/* Registered memory freed while a queued copy writes it: stays pinned. */
TEST_F(mem, host_free_while_queued)
{
	const size_t len = 2 * self->page;
	unsigned char *src = malloc(len), *m;
	struct snpu_ctx_query q;
	uint64_t a;
	uint32_t h;
	int32_t err = 1;

	ASSERT_NE(NULL, src);
	snpu_fill_random(src, len, 5);
	ASSERT_EQ(0, posix_memalign((void **)&m, self->page, len));
	memset(m, 0, len);
	ASSERT_EQ(0, snpu_alloc(self->fd, len, 0, &a));
	ASSERT_EQ(0, snpu_h2d(self->fd, a, src, len));
	ASSERT_EQ(0, snpu_host_register(self->fd, m, len, &h));

	struct snpu_task t[3] = {
		snpu_t_host_func(self->stream, 1),
		snpu_t_spin(self->stream, 50 * NS_PER_MS, 1),
		snpu_t_copy(self->stream, SNPU_COPY_D2H, (uintptr_t)m, a, len),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 3, NULL));
	ASSERT_EQ(0, snpu_host_free(self->fd, h));
	EXPECT_EQ(-EINVAL, snpu_submit1(self->fd, snpu_t_copy(self->stream,
			SNPU_COPY_D2H, (uintptr_t)m, a, len)));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ((uint64_t)len, q.host_used);

	ASSERT_EQ(0, snpu_callback_answer(self->fd, LONG_TIMEOUT, 0, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, LONG_TIMEOUT,
				      &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(0, memcmp(src, m, len));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ(0U, q.host_used);
	free(m);
	free(src);
}

/* Asynchronous memset. */
TEST_F(mem, async_memset)
{
	unsigned char buf[3000];
	uint64_t a;
	int32_t err = 1;
	size_t i;

	ASSERT_EQ(0, snpu_alloc(self->fd, sizeof(buf), 0, &a));
	ASSERT_EQ(0, snpu_submit1(self->fd,
			snpu_t_memset(self->stream, a + 1, 0xe7, 2998)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, LONG_TIMEOUT,
				      &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_d2h(self->fd, buf, a, sizeof(buf)));
	EXPECT_EQ(0, buf[0]);
	EXPECT_EQ(0, buf[2999]);
	for (i = 1; i < 2999; i++)
		if (buf[i] != 0xe7)
			break;
	EXPECT_EQ(2999U, i);
	EXPECT_EQ(-EINVAL, snpu_submit1(self->fd,
			snpu_t_memset(self->stream, a, 256, 16)));
	EXPECT_EQ(-EINVAL, snpu_submit1(self->fd,
			snpu_t_memset(self->stream, a, 1, 0)));
	EXPECT_EQ(-EFAULT, snpu_submit1(self->fd,
			snpu_t_memset(self->stream, a + 2990, 1, 11)));
}

/* Closing a context frees everything it allocated. */
TEST_F(mem, close_frees_everything)
{
	struct snpu_ctx_query q;
	long long sys = -1, ctxs0 = -1, ctxs1 = -1;
	uint64_t a;
	uint32_t h;
	void *p = NULL;
	int fdb;

	ASSERT_EQ(0, snpu_sysfs_read("contexts", &ctxs0));
	fdb = snpu_open_dev();
	ASSERT_GE(fdb, 0);
	ASSERT_EQ(0, snpu_sysfs_read("contexts", &ctxs1));
	EXPECT_EQ(ctxs0 + 1, ctxs1);
	ASSERT_EQ(0, snpu_alloc(fdb, 3 * MiB, 0, &a));
	ASSERT_EQ(0, snpu_alloc(fdb, 5000, 0, &a));
	ASSERT_EQ(0, snpu_host_map(fdb, self->page, &h, &p));
	ASSERT_EQ(0, munmap(p, self->page));
	ASSERT_EQ(0, snpu_sysfs_read("mem_used", &sys));
	EXPECT_EQ((long long)(3 * MiB + 8192), sys);
	close(fdb);
	ASSERT_EQ(0, snpu_sysfs_read("mem_used", &sys));
	EXPECT_EQ(0, sys);
	ASSERT_EQ(0, snpu_sysfs_read("contexts", &ctxs1));
	EXPECT_EQ(ctxs0, ctxs1);
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ(0U, q.mem_used);
}

TEST_HARNESS_MAIN
