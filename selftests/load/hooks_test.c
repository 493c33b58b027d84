// SPDX-License-Identifier: GPL-2.0
/*
 * The test hooks (SNPU_KERNEL_SPIN, SNPU_KERNEL_FAIL, SNPU_IOC_NOP) are off
 * unless the module is loaded with test_hooks=1: then SUBMIT and the
 * submission ring refuse launches of SPIN and FAIL with EOPNOTSUPP and
 * queue nothing, SNPU_IOC_NOP fails with EOPNOTSUPP, GET_INFO's caps lack
 * SNPU_CAP_TEST_HOOKS, and every other kernel still runs. With the
 * parameter they all work and the capability is reported.
 *
 * Runs as root in the test VM with the module not loaded (the load suite):
 * each test loads $SNPU_KO (default /opt/snpu/snpu.ko) with or without the
 * parameter, and unloads it.
 */
#include <sys/syscall.h>

#include "kselftest_harness.h"
#include "snpu_test.h"

#define SYSPARM		"/sys/module/snpu/parameters/test_hooks"

static int module_unload(void)
{
	return syscall(__NR_delete_module, "snpu", O_NONBLOCK) ? -errno : 0;
}

static bool module_loaded(void)
{
	return access("/sys/module/snpu", F_OK) == 0;
}

/* The first character of the parameter's sysfs file, or -errno. */
static int param_char(void)
{
	char c;
	int fd = open(SYSPARM, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, &c, 1);
	close(fd);
	return n == 1 ? c : -EIO;
}

/* The rings of a file, mapped. */
struct rring {
	void *mem;
	struct snpu_ring_setup s;
};

#define RU32(r, off)	((uint32_t *)((char *)(r)->mem + (off)))

static int rring_setup(int fd, struct rring *r)
{
	memset(r, 0, sizeof(*r));
	r->s.size = sizeof(r->s);
	r->s.sq_entries = 8;
	if (ioctl(fd, SNPU_IOC_RING_SETUP, &r->s))
		return -errno;
	r->mem = mmap(NULL, r->s.mmap_bytes, PROT_READ | PROT_WRITE,
		      MAP_SHARED, fd, r->s.mmap_offset);
	return r->mem == MAP_FAILED ? -errno : 0;
}

/*
 * Push @t, ENTER to submit it and wait for its CQE.
 * Return: the CQE's result, or a positive errno when the ring failed.
 */
static int rring_run(int fd, struct rring *r, const struct snpu_task *t)
{
	uint32_t tail = *RU32(r, r->s.sq.tail);
	struct snpu_task *sqes = (void *)((char *)r->mem + r->s.sq.array);
	const struct snpu_cqe *cqes = (void *)((char *)r->mem + r->s.cq.array);
	struct snpu_enter e = {
		.size = sizeof(e), .flags = SNPU_ENTER_GETEVENTS,
		.to_submit = 1, .min_complete = 1, .timeout_ns = 10 * NS_PER_SEC,
	};
	uint32_t head;
	int res;

	sqes[tail & *RU32(r, r->s.sq.mask)] = *t;
	__atomic_store_n(RU32(r, r->s.sq.tail), tail + 1, __ATOMIC_RELEASE);
	if (ioctl(fd, SNPU_IOC_ENTER, &e))
		return errno;
	if (e.submitted != 1)
		return EPROTO;
	head = *RU32(r, r->s.cq.head);
	if (__atomic_load_n(RU32(r, r->s.cq.tail), __ATOMIC_ACQUIRE) == head)
		return ENODATA;
	res = cqes[head & *RU32(r, r->s.cq.mask)].result;
	__atomic_store_n(RU32(r, r->s.cq.head), head + 1, __ATOMIC_RELEASE);
	return res;
}

FIXTURE(hooks) {
	int fd;
	uint32_t s;
	struct rring r;
};

FIXTURE_VARIANT(hooks) {
	const char *params;
	bool on;
};

FIXTURE_VARIANT_ADD(hooks, off_by_default) {
	.params = "", .on = false,
};

FIXTURE_VARIANT_ADD(hooks, off_explicit) {
	.params = "test_hooks=0", .on = false,
};

FIXTURE_VARIANT_ADD(hooks, on) {
	.params = "test_hooks=1", .on = true,
};

FIXTURE_SETUP(hooks)
{
	self->fd = -1;
	memset(&self->r, 0, sizeof(self->r));
	if (module_loaded())
		ASSERT_EQ(0, module_unload());
	ASSERT_EQ(0, snpu_module_load(variant->params))
		TH_LOG("insmod %s", variant->params);
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &self->s));
}

FIXTURE_TEARDOWN(hooks)
{
	if (self->r.mem && self->r.mem != MAP_FAILED)
		munmap(self->r.mem, self->r.s.mmap_bytes);
	if (self->fd >= 0)
		close(self->fd);
	if (module_loaded())
		EXPECT_EQ(0, module_unload());
}

/* The expected result of a hook: 0 with the parameter, else EOPNOTSUPP. */
static int hook_ret(const FIXTURE_VARIANT(hooks) *v)
{
	return v->on ? 0 : -EOPNOTSUPP;
}

TEST_F(hooks, param_in_sysfs)
{
	EXPECT_EQ(variant->on ? 'Y' : 'N', param_char());
}

TEST_F(hooks, caps_bit)
{
	struct snpu_info info;

	ASSERT_EQ(0, snpu_get_info(self->fd, &info));
	EXPECT_EQ(variant->on ? (uint64_t)SNPU_CAP_TEST_HOOKS : 0ULL,
		  info.caps & SNPU_CAP_TEST_HOOKS);
	/* Every feature is there either way. */
	EXPECT_EQ((uint64_t)(SNPU_CAPS_KNOWN & ~SNPU_CAP_TEST_HOOKS),
		  info.caps & ~SNPU_CAP_TEST_HOOKS);
}

TEST_F(hooks, nop_ioctl)
{
	EXPECT_EQ(hook_ret(variant), snpu_ioc(self->fd, SNPU_IOC_NOP, NULL));
}

TEST_F(hooks, submit_spin)
{
	struct snpu_stream_query q;
	int32_t err = 1;

	EXPECT_EQ(hook_ret(variant),
		  snpu_submit1(self->fd, snpu_t_spin(self->s, NS_PER_MS, 1)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, 10 * NS_PER_SEC,
				      &err));
	EXPECT_EQ(0, err);
	/* Refused: nothing was queued. */
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(variant->on ? 1ULL : 0ULL, q.submitted);
}

TEST_F(hooks, submit_fail)
{
	struct snpu_stream_query q;
	int32_t err = 1;

	EXPECT_EQ(hook_ret(variant),
		  snpu_submit1(self->fd, snpu_t_fail(self->s, EIO)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, 10 * NS_PER_SEC,
				      &err));
	/* Run, it fails its stream; refused, the stream stays clean. */
	EXPECT_EQ(variant->on ? -EIO : 0, err);
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(variant->on ? 1ULL : 0ULL, q.submitted);
}

/* All or nothing: a batch with one hook in it queues nothing. */
TEST_F(hooks, submit_batch_with_hook)
{
	struct snpu_stream_query q;
	struct snpu_task t[3];

	t[0] = snpu_t_nop(self->s);
	t[1] = snpu_t_spin(self->s, NS_PER_MS, 1);
	t[2] = snpu_t_nop(self->s);
	EXPECT_EQ(hook_ret(variant), snpu_submit(self->fd, t, 3, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, 10 * NS_PER_SEC,
				      NULL));
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(variant->on ? 3ULL : 0ULL, q.submitted);
}

TEST_F(hooks, ring_spin)
{
	struct snpu_task t = snpu_t_spin(self->s, NS_PER_MS, 1);

	ASSERT_EQ(0, rring_setup(self->fd, &self->r));
	EXPECT_EQ(hook_ret(variant), rring_run(self->fd, &self->r, &t));
}

TEST_F(hooks, ring_fail)
{
	struct snpu_task t = snpu_t_fail(self->s, EIO);

	ASSERT_EQ(0, rring_setup(self->fd, &self->r));
	EXPECT_EQ(variant->on ? -EIO : -EOPNOTSUPP,
		  rring_run(self->fd, &self->r, &t));
}

/* The other kernels run either way: a FILL, read back. */
TEST_F(hooks, other_kernels_run)
{
	struct snpu_task t[2];
	uint32_t buf[256];
	uint64_t addr;
	unsigned int i;
	int32_t err = 1;

	ASSERT_EQ(0, snpu_alloc(self->fd, sizeof(buf), 0, &addr));
	t[0] = snpu_t_fill(self->s, addr, sizeof(buf), 0x5eed1234U, 2);
	t[1] = snpu_t_nop(self->s);
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, 10 * NS_PER_SEC,
				      &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_d2h(self->fd, buf, addr, sizeof(buf)));
	for (i = 0; i < 256; i++)
		ASSERT_EQ(0x5eed1234U, buf[i]) TH_LOG("word %u", i);
}

TEST_F(hooks, ring_other_kernel_runs)
{
	struct snpu_task t = snpu_t_nop(self->s);

	ASSERT_EQ(0, rring_setup(self->fd, &self->r));
	EXPECT_EQ(0, rring_run(self->fd, &self->r, &t));
}

TEST_HARNESS_MAIN
