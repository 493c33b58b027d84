// SPDX-License-Identifier: GPL-2.0
/*
 * The ABI from a 32-bit process (built -m32 -static, run through the
 * kernel's IA32 emulation): the ioctls go through compat_ioctl, and every
 * mapping of the device file (host memory, the rings, the state page) is
 * reached by mmap2(), whose offset is a 32-bit count of pages. Each test
 * does real work through what it maps.
 */
#include <sys/syscall.h>

#include "kselftest_harness.h"
#include "snpu_test.h"

#define LONG_TIMEOUT	(30 * NS_PER_SEC)

FIXTURE(c32) {
	int fd;
	long page;
	uint32_t stream;
};

FIXTURE_SETUP(c32)
{
	ASSERT_EQ(4, (int)sizeof(void *)) TH_LOG("not a 32-bit build");
	self->page = sysconf(_SC_PAGESIZE);
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL,
					&self->stream));
}

FIXTURE_TEARDOWN(c32)
{
	close(self->fd);
}

/* mmap2(2) itself: the offset in pages, 32 bits. */
static void *map2(int fd, size_t len, int prot, uint64_t off, long page)
{
	if ((off / page) >> 32)
		return MAP_FAILED;
	return (void *)syscall(SYS_mmap2, NULL, len, prot, MAP_SHARED, fd,
			       (unsigned long)(off / page));
}

TEST_F(c32, get_info)
{
	struct snpu_info info;

	ASSERT_EQ(0, snpu_get_info(self->fd, &info));
	EXPECT_EQ((uint32_t)SNPU_ABI_MAJOR, info.abi_major);
	EXPECT_EQ((uint32_t)SNPU_ABI_MINOR, info.abi_minor);
	EXPECT_NE(0U, info.cores);
}

/* Host memory mapped by mmap2(), a round trip through the device. */
TEST_F(c32, host_memory_round_trip)
{
	const size_t len = 2 * self->page;
	unsigned char *in, *out;
	uint32_t hi, ho;
	uint64_t off, a;
	int32_t err = 1;
	size_t i;

	ASSERT_EQ(0, snpu_host_alloc(self->fd, len, &hi, &off));
	in = map2(self->fd, len, PROT_READ | PROT_WRITE, off, self->page);
	ASSERT_NE((uintptr_t)MAP_FAILED, (uintptr_t)in);
	ASSERT_EQ(0, snpu_host_alloc(self->fd, len, &ho, &off));
	out = map2(self->fd, len, PROT_READ | PROT_WRITE, off, self->page);
	ASSERT_NE((uintptr_t)MAP_FAILED, (uintptr_t)out);
	ASSERT_EQ(0, snpu_alloc(self->fd, len, 0, &a));
	for (i = 0; i < len; i++)
		in[i] = (unsigned char)(i * 7 + 3);
	struct snpu_task t[2] = {
		snpu_t_copy(self->stream, SNPU_COPY_H2D, a, (uintptr_t)in, len),
		snpu_t_copy(self->stream, SNPU_COPY_D2H, (uintptr_t)out, a, len),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, LONG_TIMEOUT,
				      &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(0, memcmp(in, out, len));
	EXPECT_EQ(0, munmap(in, len));
	EXPECT_EQ(0, munmap(out, len));
}

/* The rings mapped by mmap2(): a NOP goes through them. */
TEST_F(c32, rings_nop)
{
	struct snpu_ring_setup rs = { .size = sizeof(rs), .sq_entries = 4 };
	struct snpu_enter e = { .size = sizeof(e) };
	struct snpu_task *sqe;
	struct snpu_cqe *cqe;
	uint32_t *tail;
	char *p;

	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_RING_SETUP, &rs));
	p = map2(self->fd, rs.mmap_bytes, PROT_READ | PROT_WRITE,
		 rs.mmap_offset, self->page);
	ASSERT_NE((uintptr_t)MAP_FAILED, (uintptr_t)p);
	sqe = (struct snpu_task *)(p + rs.sq.array);
	*sqe = snpu_t_nop(self->stream);
	sqe->user_data = 0x3232;
	tail = (uint32_t *)(p + rs.sq.tail);
	__atomic_store_n(tail, 1, __ATOMIC_RELEASE);
	e.flags = SNPU_ENTER_GETEVENTS;
	e.to_submit = 1;
	e.min_complete = 1;
	e.timeout_ns = LONG_TIMEOUT;
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_ENTER, &e));
	EXPECT_EQ(1U, e.submitted);
	EXPECT_EQ(1U, __atomic_load_n((uint32_t *)(p + rs.cq.tail),
				      __ATOMIC_ACQUIRE));
	cqe = (struct snpu_cqe *)(p + rs.cq.array);
	EXPECT_EQ(0x3232ULL, cqe->user_data);
	EXPECT_EQ(0, cqe->result);
	EXPECT_EQ(0, munmap(p, rs.mmap_bytes));
}

/* The state page mapped by mmap2() shows the process's state. */
TEST_F(c32, state_page)
{
	struct snpu_snapshot s = { .size = sizeof(s) };
	struct snpu_state_page *sp;

	sp = map2(self->fd, self->page, PROT_READ, SNPU_STATE_MMAP_OFFSET,
		  self->page);
	ASSERT_NE((uintptr_t)MAP_FAILED, (uintptr_t)sp);
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_SNAPSHOT_STATE, &s));
	EXPECT_EQ(s.state, sp->state);
	EXPECT_EQ((uint32_t)SNPU_STATE_RUNNING, sp->state);
	EXPECT_EQ(0, munmap(sp, self->page));
}

TEST_HARNESS_MAIN
