// SPDX-License-Identifier: GPL-2.0
/*
 * dma-buf (ABI 0.13): device memory exported as a dma-buf
 * (SNPU_IOC_MEM_EXPORT) read and written through mmap(2) with
 * DMA_BUF_IOCTL_SYNC; imported (SNPU_IOC_MEM_IMPORT) into other contexts,
 * another device and another process (SCM_RIGHTS), where copies and
 * kernels work on it; the lifetimes (the exporter frees and closes while
 * an importer or a mapping holds the memory, an importer killed, rmmod
 * after); the charges; a snapshot with an export and an import; every
 * error path; unprivileged users. Raw ioctls (common/snpu_test.h).
 *
 * Runs with devices=2 ctx_mem_mb=8 (run_vm.sh's PARAMS_dmabuf): two
 * devices, and a context quota small enough to exceed with imports.
 */
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/dma-buf.h>

#include "snpu_test.h"
#include "../graph/graph_util.h"

#include "kselftest_harness.h"

#define SNPU_TEST_DEV1	"/dev/snpu1"
#define MODULE_REFCNT	"/sys/module/snpu/refcnt"
/* The context quota the suite runs with (PARAMS_dmabuf). */
#define CTX_QUOTA	(8ULL << 20)

static long page_size(void)
{
	return sysconf(_SC_PAGESIZE);
}

static int open_dev1(void)
{
	int fd = open(SNPU_TEST_DEV1, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* MEM_EXPORT; *@out gets the dma-buf fd. Return: 0 or -errno. */
static int mem_export(int fd, uint64_t addr, uint64_t bytes, uint32_t flags,
		      int *out)
{
	struct snpu_mem_export x = {
		.size = sizeof(x), .flags = flags, .addr = addr,
		.bytes = bytes, .fd = -1,
	};
	int ret = snpu_ioc(fd, SNPU_IOC_MEM_EXPORT, &x);

	if (!ret)
		*out = x.fd;
	return ret;
}

/* MEM_IMPORT; *@addr and *@bytes (if given) get the import. */
static int mem_import(int fd, int dmabuf, uint64_t *addr, uint64_t *bytes)
{
	struct snpu_mem_import x = {
		.size = sizeof(x), .fd = dmabuf,
	};
	int ret = snpu_ioc(fd, SNPU_IOC_MEM_IMPORT, &x);

	if (!ret) {
		*addr = x.addr;
		if (bytes)
			*bytes = x.bytes;
	}
	return ret;
}

static int dma_sync(int dmabuf, uint64_t flags)
{
	struct dma_buf_sync s = { .flags = flags };

	return ioctl(dmabuf, DMA_BUF_IOCTL_SYNC, &s) ? -errno : 0;
}

static uint64_t dev_mem_used(int fd)
{
	struct snpu_info info;

	if (snpu_get_info(fd, &info))
		return ~0ULL;
	return info.mem_used;
}

static uint64_t ctx_mem_used(int fd)
{
	struct snpu_ctx_query q;

	if (snpu_ctx_query(fd, &q))
		return ~0ULL;
	return q.mem_used;
}

static long long read_ll(const char *path)
{
	char buf[32] = "";
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return buf[0] ? strtoll(buf, NULL, 10) : -1;
}

/*
 * Wait up to 10 s for the device's mem_used to be @want (a dma-buf's last
 * reference may go from a deferred fput). Return: the last value read.
 */
static uint64_t wait_dev_mem_used(int fd, uint64_t want)
{
	uint64_t end = snpu_now_ns() + 10 * NS_PER_SEC, got;

	while ((got = dev_mem_used(fd)) != want && snpu_now_ns() < end)
		usleep(10000);
	return got;
}

/* Fill a host buffer with the 32-bit words seed, seed + 1, ... */
static void pattern(uint32_t *p, size_t bytes, uint32_t seed)
{
	size_t i;

	for (i = 0; i < bytes / 4; i++)
		p[i] = seed + i;
}

/* Return: the index of the first word of @p not @v, or -1. */
static long first_not(const uint32_t *p, size_t bytes, uint32_t v)
{
	size_t i;

	for (i = 0; i < bytes / 4; i++)
		if (p[i] != v)
			return i;
	return -1;
}

FIXTURE(dmabuf) {
	int fd;
	uint32_t s;
	long pg;
};

FIXTURE_SETUP(dmabuf)
{
	self->pg = page_size();
	self->fd = snpu_open_dev();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->s));
}

FIXTURE_TEARDOWN(dmabuf)
{
	close(self->fd);
}

/* GET_INFO says 0.13 or later and SNPU_CAP_DMABUF. */
TEST_F(dmabuf, abi_and_capability)
{
	struct snpu_info info;

	ASSERT_EQ(0, snpu_get_info(self->fd, &info));
	EXPECT_LE(13U, info.abi_minor);
	EXPECT_NE(0ULL, info.caps & SNPU_CAP_DMABUF);
}

/*
 * A range of an allocation, mmapped: DMA_BUF_IOCTL_SYNC brackets reads
 * of the device's bytes and writes the device then sees.
 */
TEST_F(dmabuf, export_mmap_sync_reads_and_writes)
{
	size_t bytes = 4 * self->pg, win = 2 * self->pg;
	uint32_t *host = malloc(bytes), *back = malloc(bytes), *p;
	uint64_t a;
	int d;

	ASSERT_NE(NULL, host);
	ASSERT_NE(NULL, back);
	pattern(host, bytes, 0x1000);
	ASSERT_EQ(0, snpu_alloc(self->fd, bytes, 0, &a));
	ASSERT_EQ(0, snpu_h2d(self->fd, a, host, bytes));
	/* Pages 1 and 2 of the allocation. */
	ASSERT_EQ(0, mem_export(self->fd, a + self->pg, win,
				SNPU_EXPORT_CLOEXEC, &d));
	EXPECT_EQ(FD_CLOEXEC, fcntl(d, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ((off_t)win, lseek(d, 0, SEEK_END));
	p = mmap(NULL, win, PROT_READ | PROT_WRITE, MAP_SHARED, d, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, dma_sync(d, DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW));
	EXPECT_EQ(0, memcmp(p, (char *)host + self->pg, win));
	p[0] = 0xdeadbeef;
	p[win / 4 - 1] = 0xfeedf00d;
	ASSERT_EQ(0, dma_sync(d, DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW));
	ASSERT_EQ(0, snpu_d2h(self->fd, back, a, bytes));
	EXPECT_EQ(0xdeadbeef, back[self->pg / 4]);
	EXPECT_EQ(0xfeedf00d, back[(self->pg + win) / 4 - 1]);
	/* Pages outside the window are untouched. */
	EXPECT_EQ(0, memcmp(back, host, self->pg));
	EXPECT_EQ(0, memcmp((char *)back + self->pg + win,
			    (char *)host + self->pg + win, self->pg));
	/* The device's writes show in the mapping. */
	ASSERT_EQ(0, snpu_memset(self->fd, a + self->pg, 0x5a, win));
	ASSERT_EQ(0, dma_sync(d, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ));
	EXPECT_EQ(0x5a5a5a5aU, p[7]);
	ASSERT_EQ(0, dma_sync(d, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ));
	/* A mapping past the dma-buf's end is refused. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, win + self->pg, PROT_READ,
				   MAP_SHARED, d, 0));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, self->pg, PROT_READ, MAP_SHARED, d,
				   2 * self->pg));
	/* So is a private (copy-on-write) mapping of shared memory. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, self->pg, PROT_READ, MAP_PRIVATE, d,
				   0));
	EXPECT_EQ(EINVAL, errno);
	munmap(p, win);
	close(d);
	free(host);
	free(back);
}

/*
 * Imported into a second context of the device and a context of another
 * device: synchronous and queued D2D copies from it, a FILL into it and
 * an ADD_I32 reading it; the exporter sees what the importers wrote.
 */
TEST_F(dmabuf, import_other_context_and_device)
{
	size_t bytes = 16 * self->pg, n = bytes / 4, i;
	uint32_t *host = malloc(bytes), *back = malloc(bytes);
	int other = snpu_open_dev(), dev1 = open_dev1(), d;
	uint64_t a, ib, ic, nb, nc, got, base = 0, qb = 0;
	uint32_t sb, sc;
	long bad;

	ASSERT_NE(NULL, host);
	ASSERT_NE(NULL, back);
	ASSERT_LE(0, other);
	ASSERT_LE(0, dev1);
	pattern(host, bytes, 7);
	ASSERT_EQ(0, snpu_alloc(self->fd, bytes, 0, &a));
	ASSERT_EQ(0, snpu_h2d(self->fd, a, host, bytes));
	ASSERT_EQ(0, mem_export(self->fd, a, bytes, 0, &d));

	ASSERT_EQ(0, mem_import(other, d, &ib, &got));
	EXPECT_EQ(bytes, got);
	ASSERT_EQ(0, mem_import(dev1, d, &ic, &got));
	EXPECT_EQ(bytes, got);
	close(d);

	/* MEM_QUERY shows the import as an allocation of its size. */
	ASSERT_EQ(0, snpu_mem_query(other, ib + 5 * self->pg, &base, &qb));
	EXPECT_EQ(ib, base);
	EXPECT_EQ(bytes, qb);

	/* Device 0, second context: a synchronous D2D from the import. */
	ASSERT_EQ(0, snpu_alloc(other, bytes, 0, &nb));
	ASSERT_EQ(0, snpu_d2d(other, nb, ib, bytes));
	ASSERT_EQ(0, snpu_d2h(other, back, nb, bytes));
	EXPECT_EQ(0, memcmp(back, host, bytes));

	/* Device 1: a queued D2D, then c = import + copy, into the import. */
	ASSERT_EQ(0, snpu_stream_create(dev1, 0, &sc));
	ASSERT_EQ(0, snpu_alloc(dev1, bytes, 0, &nc));
	ASSERT_EQ(0, snpu_submit1(dev1, snpu_t_copy(sc, SNPU_COPY_D2D, nc, ic,
						    bytes)));
	ASSERT_EQ(0, snpu_submit1(dev1, snpu_t_binop(sc, SNPU_KERNEL_ADD_I32,
						     ic, ic, nc, bytes, 4)));
	ASSERT_EQ(0, snpu_stream_sync(dev1, sc, 10 * NS_PER_SEC, NULL));
	ASSERT_EQ(0, snpu_d2h(self->fd, back, a, bytes));
	for (bad = -1, i = 0; i < n; i++)
		if (back[i] != 2 * host[i]) {
			bad = i;
			break;
		}
	EXPECT_EQ(-1, bad);

	/* Device 0, second context: a FILL of the import, seen by all. */
	ASSERT_EQ(0, snpu_stream_create(other, 0, &sb));
	ASSERT_EQ(0, snpu_submit1(other, snpu_t_fill(sb, ib, bytes, 0xabcd1234,
						     4)));
	ASSERT_EQ(0, snpu_stream_sync(other, sb, 10 * NS_PER_SEC, NULL));
	ASSERT_EQ(0, snpu_d2h(self->fd, back, a, bytes));
	EXPECT_EQ(-1, first_not(back, bytes, 0xabcd1234));
	ASSERT_EQ(0, snpu_d2h(dev1, back, ic, bytes));
	EXPECT_EQ(-1, first_not(back, bytes, 0xabcd1234));

	/* MEM_FREE of an import detaches it: its address stops resolving. */
	ASSERT_EQ(0, snpu_free(dev1, ic));
	EXPECT_EQ(-EFAULT, snpu_d2h(dev1, back, ic, bytes));
	close(dev1);
	close(other);
	free(host);
	free(back);
}

/*
 * An import in a graph (bound to a slot and named by a plain address) and
 * in a collective (a communicator of one rank): both run on it.
 */
TEST_F(dmabuf, graph_and_collective_on_import)
{
	size_t pg = self->pg, bytes = 4 * pg, i;
	uint32_t *host = malloc(bytes), *back = malloc(bytes), h;
	struct snpu_comm_join j = { .size = sizeof(j) };
	struct snpu_comm_id id = { .size = sizeof(id) };
	int exporter = snpu_open_dev(), d;
	uint64_t a, ia, nb, slots[2];
	struct snpu_task t;
	struct gdef g;
	long bad;

	ASSERT_NE(NULL, host);
	ASSERT_NE(NULL, back);
	ASSERT_LE(0, exporter);
	pattern(host, bytes, 1000);
	ASSERT_EQ(0, snpu_alloc(exporter, bytes, 0, &a));
	ASSERT_EQ(0, snpu_h2d(exporter, a, host, bytes));
	ASSERT_EQ(0, mem_export(exporter, a, bytes, 0, &d));
	ASSERT_EQ(0, mem_import(self->fd, d, &ia, NULL));
	close(d);
	ASSERT_EQ(0, snpu_alloc(self->fd, bytes, 0, &nb));

	/* nb[page 0] = 2 * import[page 0]; import[page 1] filled. */
	slots[0] = slots[1] = bytes;
	ASSERT_EQ(0, g_init(&g, 2, slots, 0));
	ASSERT_LE(0, g_binop(&g, SNPU_KERNEL_ADD_I32, g_slot(1, 0),
			     g_slot(0, 0), g_slot(0, 0), pg, 2));
	ASSERT_LE(0, g_fill(&g, g_addr(ia + pg), pg, 0x0badcafe, 2));
	ASSERT_EQ(0, g_create(self->fd, &g, &h));
	g_free(&g);
	slots[0] = ia;
	slots[1] = nb;
	ASSERT_EQ(0, g_launch(self->fd, self->s, h, slots, 2, 0, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, 10 * NS_PER_SEC,
				      NULL));
	ASSERT_EQ(0, snpu_d2h(self->fd, back, nb, pg));
	for (bad = -1, i = 0; i < pg / 4; i++)
		if (back[i] != 2 * host[i]) {
			bad = i;
			break;
		}
	EXPECT_EQ(-1, bad);
	ASSERT_EQ(0, snpu_d2h(exporter, back, a + pg, pg));
	EXPECT_EQ(-1, first_not(back, pg, 0x0badcafe));

	/* An all-reduce of one rank from the import's page 2 into nb. */
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_COMM_ID, &id));
	memcpy(j.id, id.id, sizeof(j.id));
	j.nranks = 1;
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_COMM_JOIN, &j));
	memset(&t, 0, sizeof(t));
	t.op = SNPU_OP_COLL;
	t.stream = self->s;
	t.coll.comm = j.handle;
	t.coll.coll = SNPU_COLL_ALLREDUCE;
	t.coll.dtype = SNPU_DTYPE_I32;
	t.coll.redop = SNPU_REDOP_SUM;
	t.coll.count = pg / 4;
	t.coll.send = ia + 2 * pg;
	t.coll.recv = nb + pg;
	ASSERT_EQ(0, snpu_submit1(self->fd, t));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, 10 * NS_PER_SEC,
				      NULL));
	ASSERT_EQ(0, snpu_d2h(self->fd, back, nb + pg, pg));
	EXPECT_EQ(0, memcmp(back, (char *)host + 2 * pg, pg));
	close(exporter);
	free(host);
	free(back);
}

/*
 * The import is charged to the importer's context only: the device's
 * mem_used counts the exported memory once; the importer's quota counts
 * every import and refuses the one past it (ENOSPC).
 */
TEST_F(dmabuf, import_charged_to_importer_quota)
{
	uint64_t bytes = 6ULL << 20, a, i1, i2, dev0, ctx0;
	int other = snpu_open_dev(), d;

	ASSERT_LE(0, other);
	ASSERT_EQ(0, snpu_alloc(self->fd, bytes, 0, &a));
	ASSERT_EQ(0, mem_export(self->fd, a, bytes, 0, &d));
	dev0 = dev_mem_used(self->fd);
	ctx0 = ctx_mem_used(other);
	ASSERT_EQ(0, mem_import(other, d, &i1, NULL));
	EXPECT_EQ(dev0, dev_mem_used(self->fd));
	EXPECT_EQ(ctx0 + bytes, ctx_mem_used(other));
	/* 12 MiB would pass the 8 MiB quota. */
	EXPECT_EQ(-ENOSPC, mem_import(other, d, &i2, NULL));
	EXPECT_EQ(ctx0 + bytes, ctx_mem_used(other));
	ASSERT_EQ(0, snpu_free(other, i1));
	EXPECT_EQ(ctx0, ctx_mem_used(other));
	/* Room again. */
	ASSERT_EQ(0, mem_import(other, d, &i2, NULL));
	close(d);
	close(other);
}

/*
 * Zero-copy sharing between processes: the parent's dma-buf goes to a
 * child over a unix socket (SCM_RIGHTS); the child, as nobody, imports it
 * and writes through the import; the parent sees the bytes in its own
 * allocation.
 */
TEST_F(dmabuf, scm_rights_zero_copy_to_nobody)
{
	size_t bytes = 8 * self->pg;
	uint32_t *back = malloc(bytes);
	int sv[2], d, status;
	uint64_t a;
	pid_t kid;

	ASSERT_NE(NULL, back);
	ASSERT_EQ(0, snpu_alloc(self->fd, bytes, 0, &a));
	ASSERT_EQ(0, mem_export(self->fd, a, bytes, SNPU_EXPORT_CLOEXEC, &d));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid) {
		uint64_t ia, ib;
		uint32_t s;
		int fd, got;

		close(sv[0]);
		close(d);
		close(self->fd);
		if (snpu_drop_to_nobody())
			_exit(10);
		got = snpu_recv_fd(sv[1]);
		fd = snpu_open_dev();
		if (got < 0 || fd < 0)
			_exit(11);
		if (mem_import(fd, got, &ia, &ib) || ib != bytes)
			_exit(12);
		close(got);
		if (snpu_stream_create(fd, 0, &s) ||
		    snpu_submit1(fd, snpu_t_fill(s, ia, bytes, 0x600df00d, 2)) ||
		    snpu_stream_sync(fd, s, 10 * NS_PER_SEC, NULL))
			_exit(13);
		close(fd);
		_exit(0);
	}
	close(sv[1]);
	ASSERT_EQ(0, snpu_send_fd(sv[0], d));
	close(d);
	ASSERT_EQ(kid, waitpid(kid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status))
		TH_LOG("the child failed at step %d", WEXITSTATUS(status));
	ASSERT_EQ(0, snpu_d2h(self->fd, back, a, bytes));
	EXPECT_EQ(-1, first_not(back, bytes, 0x600df00d));
	close(sv[0]);
	free(back);
}

/*
 * Nobody cannot reach root's dma-buf without being handed its fd: not
 * through /proc/PID/fd, not by its number, not by root's device address.
 */
TEST_F(dmabuf, nobody_cannot_reach_roots_buffer)
{
	int d, status;
	uint64_t a;
	pid_t kid;

	ASSERT_EQ(0, snpu_alloc(self->fd, self->pg, 0, &a));
	/* Not passed: only its number is known. */
	ASSERT_EQ(0, mem_export(self->fd, a, self->pg, 0, &d));
	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid) {
		char path[64];
		uint32_t word;
		uint64_t ia;
		int fd, f;

		close(d);
		close(self->fd);
		if (snpu_drop_to_nobody())
			_exit(10);
		/* The parent (root) holds d; nobody may not open its fds. */
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", getppid(), d);
		f = open(path, O_RDWR | O_CLOEXEC);
		if (f >= 0 || (errno != EACCES && errno != EPERM))
			_exit(11);
		fd = snpu_open_dev();
		if (fd < 0)
			_exit(12);
		/* Its number names nothing here. */
		if (mem_import(fd, d, &ia, NULL) != -EBADF)
			_exit(13);
		/* Root's device address is not one of this context. */
		if (snpu_d2h(fd, &word, a, sizeof(word)) != -EFAULT)
			_exit(14);
		close(fd);
		_exit(0);
	}
	ASSERT_EQ(kid, waitpid(kid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("nobody's side failed at step %d", WEXITSTATUS(status));
	close(d);
}

/*
 * The exporter frees the allocation and closes its file while another
 * context holds an import: the importer keeps reading, writing and
 * launching on the memory; the device's memory stays charged until the
 * import goes.
 */
TEST_F(dmabuf, exporter_frees_and_closes_while_imported)
{
	size_t bytes = 8 * self->pg;
	uint32_t *host = malloc(bytes), *back = malloc(bytes);
	int exporter = snpu_open_dev(), d;
	uint64_t base, a, ia, na;

	ASSERT_NE(NULL, host);
	ASSERT_NE(NULL, back);
	ASSERT_LE(0, exporter);
	base = dev_mem_used(self->fd);
	pattern(host, bytes, 99);
	ASSERT_EQ(0, snpu_alloc(exporter, bytes, 0, &a));
	ASSERT_EQ(0, snpu_h2d(exporter, a, host, bytes));
	ASSERT_EQ(0, mem_export(exporter, a, bytes, 0, &d));
	ASSERT_EQ(0, mem_import(self->fd, d, &ia, NULL));
	close(d);
	ASSERT_EQ(0, snpu_free(exporter, a));
	close(exporter);
	/* Still charged: the import holds the pages. */
	EXPECT_EQ(base + bytes, dev_mem_used(self->fd));

	ASSERT_EQ(0, snpu_d2h(self->fd, back, ia, bytes));
	EXPECT_EQ(0, memcmp(back, host, bytes));
	ASSERT_EQ(0, snpu_alloc(self->fd, bytes, 0, &na));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_copy(self->s, SNPU_COPY_D2D,
							na, ia, bytes)));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_fill(self->s, ia, bytes,
							0x11223344, 2)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, 10 * NS_PER_SEC,
				      NULL));
	ASSERT_EQ(0, snpu_d2h(self->fd, back, na, bytes));
	EXPECT_EQ(0, memcmp(back, host, bytes));
	ASSERT_EQ(0, snpu_d2h(self->fd, back, ia, bytes));
	EXPECT_EQ(-1, first_not(back, bytes, 0x11223344));

	/* The last holder lets go: the memory and its charge go. */
	ASSERT_EQ(0, snpu_free(self->fd, ia));
	EXPECT_EQ(base + bytes, wait_dev_mem_used(self->fd, base + bytes));
	ASSERT_EQ(0, snpu_free(self->fd, na));
	EXPECT_EQ(base, wait_dev_mem_used(self->fd, base));
	free(host);
	free(back);
}

/* A mapping alone holds the memory past MEM_FREE, the fd and the file. */
TEST_F(dmabuf, mapping_outlives_fd_free_and_file)
{
	size_t bytes = 4 * self->pg;
	int exporter = snpu_open_dev(), d;
	uint64_t base, a;
	uint32_t *p;

	ASSERT_LE(0, exporter);
	base = dev_mem_used(self->fd);
	ASSERT_EQ(0, snpu_alloc(exporter, bytes, 0, &a));
	ASSERT_EQ(0, snpu_memset(exporter, a, 0x77, bytes));
	ASSERT_EQ(0, mem_export(exporter, a, bytes, 0, &d));
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, d, 0);
	ASSERT_NE(MAP_FAILED, p);
	close(d);
	ASSERT_EQ(0, snpu_free(exporter, a));
	close(exporter);
	EXPECT_EQ(base + bytes, dev_mem_used(self->fd));
	EXPECT_EQ(-1, first_not(p, bytes, 0x77777777));
	p[3] = 3;
	EXPECT_EQ(3U, p[3]);
	ASSERT_EQ(0, munmap(p, bytes));
	EXPECT_EQ(base, wait_dev_mem_used(self->fd, base));
}

/*
 * Exporting the whole of an import hands out the same dma-buf; a part of
 * an import cannot be exported.
 */
TEST_F(dmabuf, reexport_of_whole_import_is_same_dmabuf)
{
	size_t bytes = 2 * self->pg;
	int other = snpu_open_dev(), d, d2;
	struct stat st1, st2;
	uint64_t a, ia;

	ASSERT_LE(0, other);
	ASSERT_EQ(0, snpu_alloc(self->fd, bytes, 0, &a));
	ASSERT_EQ(0, mem_export(self->fd, a, bytes, 0, &d));
	ASSERT_EQ(0, mem_import(other, d, &ia, NULL));
	ASSERT_EQ(0, mem_export(other, ia, bytes, 0, &d2));
	ASSERT_EQ(0, fstat(d, &st1));
	ASSERT_EQ(0, fstat(d2, &st2));
	EXPECT_EQ(st1.st_ino, st2.st_ino);
	EXPECT_EQ(st1.st_dev, st2.st_dev);
	close(d2);
	EXPECT_EQ(-EINVAL, mem_export(other, ia, self->pg, 0, &d2));
	EXPECT_EQ(-EINVAL, mem_export(other, ia + self->pg, self->pg, 0, &d2));
	close(d);
	close(other);
}

/* MEM_EXPORT's errors, each with its errno; nothing is exported. */
TEST_F(dmabuf, export_errors)
{
	uint64_t a, b, pg = self->pg;
	struct snpu_mem_export x;
	int d = -1, fds0;

	ASSERT_EQ(0, snpu_alloc(self->fd, 2 * pg, 0, &a));
	ASSERT_EQ(0, snpu_alloc(self->fd, 2 * pg, 0, &b));
	fds0 = dup(0);
	ASSERT_LE(0, fds0);
	close(fds0);
	/* Misaligned: length zero or not whole pages, offset not a page. */
	EXPECT_EQ(-EINVAL, mem_export(self->fd, a, 0, 0, &d));
	EXPECT_EQ(-EINVAL, mem_export(self->fd, a, 100, 0, &d));
	EXPECT_EQ(-EINVAL, mem_export(self->fd, a, pg + 8, 0, &d));
	EXPECT_EQ(-EINVAL, mem_export(self->fd, a + 64, pg, 0, &d));
	/* Beyond the allocation, spanning two, in none. */
	EXPECT_EQ(-EFAULT, mem_export(self->fd, a, 3 * pg, 0, &d));
	EXPECT_EQ(-EFAULT, mem_export(self->fd, a + pg, 2 * pg, 0, &d));
	if (b == a + 2 * pg)
		EXPECT_EQ(-EFAULT, mem_export(self->fd, a, 4 * pg, 0, &d));
	EXPECT_EQ(-EFAULT, mem_export(self->fd, 0, pg, 0, &d));
	ASSERT_EQ(0, snpu_free(self->fd, b));
	EXPECT_EQ(-EFAULT, mem_export(self->fd, b, pg, 0, &d));
	/* Flags, pad, reserved, size. */
	EXPECT_EQ(-EINVAL, mem_export(self->fd, a, pg, 2, &d));
	EXPECT_EQ(-EINVAL, mem_export(self->fd, a, pg, 1U << 31, &d));
	memset(&x, 0, sizeof(x));
	x.size = sizeof(x);
	x.addr = a;
	x.bytes = pg;
	x.pad = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_MEM_EXPORT, &x));
	x.pad = 0;
	x.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_MEM_EXPORT, &x));
	x.reserved[1] = 0;
	x.size = 8;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_MEM_EXPORT, &x));
	x.size = SNPU_MEM_EXPORT_SIZE_VER0 - 8;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_MEM_EXPORT, &x));
	/* No fd was made by any of them: the next free one is the same. */
	d = dup(0);
	EXPECT_EQ(fds0, d);
	close(d);
	/* The whole allocation's pages, exactly, are fine. */
	ASSERT_EQ(0, mem_export(self->fd, a, 2 * pg, 0, &d));
	close(d);
}

/* MEM_IMPORT's errors, each with its errno; nothing is imported. */
TEST_F(dmabuf, import_errors)
{
	struct snpu_event_export ex = { .size = sizeof(ex) };
	struct snpu_mem_import x;
	uint64_t ctx0, ia, a;
	int p[2], d, sf;
	uint32_t e;

	ctx0 = ctx_mem_used(self->fd);
	/* Not open, not a dma-buf: a pipe, an snpu file, a sync_file. */
	EXPECT_EQ(-EBADF, mem_import(self->fd, -1, &ia, NULL));
	EXPECT_EQ(-EBADF, mem_import(self->fd, 1000, &ia, NULL));
	ASSERT_EQ(0, pipe(p));
	EXPECT_EQ(-EINVAL, mem_import(self->fd, p[0], &ia, NULL));
	close(p[0]);
	close(p[1]);
	EXPECT_EQ(-EINVAL, mem_import(self->fd, self->fd, &ia, NULL));
	ASSERT_EQ(0, snpu_event_create(self->fd, &e));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_record(self->s, e)));
	ex.handle = e;
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_EVENT_EXPORT, &ex));
	sf = ex.fd;
	EXPECT_EQ(-EINVAL, mem_import(self->fd, sf, &ia, NULL));
	close(sf);
	/* Flags, pad, reserved, size. */
	ASSERT_EQ(0, snpu_alloc(self->fd, self->pg, 0, &a));
	ASSERT_EQ(0, mem_export(self->fd, a, self->pg, 0, &d));
	memset(&x, 0, sizeof(x));
	x.size = sizeof(x);
	x.fd = d;
	x.flags = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_MEM_IMPORT, &x));
	x.flags = 0;
	x.pad = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_MEM_IMPORT, &x));
	x.pad = 0;
	x.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_MEM_IMPORT, &x));
	x.reserved[0] = 0;
	x.size = 12;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_MEM_IMPORT, &x));
	EXPECT_EQ(ctx0 + self->pg, ctx_mem_used(self->fd));
	/* The same struct, put right, imports. */
	x.size = sizeof(x);
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_MEM_IMPORT, &x));
	EXPECT_EQ((uint64_t)self->pg, x.bytes);
	close(d);
}

/*
 * A snapshot saves an exported allocation (a restore writes its bytes
 * back into the pages a mapping sees) and leaves an import out (its bytes
 * are the exporter's, here another process's, and a restore keeps them).
 */
TEST_F(dmabuf, snapshot_saves_exports_not_imports)
{
	size_t bytes = 2 * self->pg;
	int sv[2], d, theirs, status, go[2];
	struct snpu_snapshot s;
	uint64_t a, ia;
	uint32_t *p, w;
	pid_t kid;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	ASSERT_EQ(0, pipe(go));
	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid) {
		uint64_t ka;
		char c;
		int fd = snpu_open_dev(), kd;

		if (fd < 0 || snpu_alloc(fd, bytes, 0, &ka) ||
		    snpu_memset(fd, ka, 0x01, bytes) ||
		    mem_export(fd, ka, bytes, 0, &kd) ||
		    snpu_send_fd(sv[1], kd))
			_exit(10);
		close(kd);
		/* After the parent's backup: change the bytes. */
		if (read(go[0], &c, 1) != 1 || snpu_memset(fd, ka, 0x02, bytes))
			_exit(11);
		if (write(sv[1], "k", 1) != 1)
			_exit(12);
		/* Keep the file until the parent is done. */
		if (read(go[0], &c, 1) < 0)
			_exit(13);
		close(fd);
		_exit(0);
	}
	theirs = snpu_recv_fd(sv[0]);
	ASSERT_LE(0, theirs);
	ASSERT_EQ(0, mem_import(self->fd, theirs, &ia, NULL));
	close(theirs);
	ASSERT_EQ(0, snpu_alloc(self->fd, bytes, 0, &a));
	ASSERT_EQ(0, snpu_memset(self->fd, a, 0xa1, bytes));
	ASSERT_EQ(0, mem_export(self->fd, a, bytes, 0, &d));
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, d, 0);
	ASSERT_NE(MAP_FAILED, p);

	memset(&s, 0, sizeof(s));
	s.size = sizeof(s);
	s.timeout_ns = 10 * NS_PER_SEC;
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_SNAPSHOT_LOCK, &s));
	s.timeout_ns = 0;
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_SNAPSHOT_BACKUP, &s));
	/* The image holds our allocation's bytes, not the import's. */
	EXPECT_GE(s.image_bytes, (uint64_t)bytes);
	EXPECT_LT(s.image_bytes, (uint64_t)2 * bytes);
	/* Both change: ours through the mapping, theirs by the exporter. */
	p[0] = 0xbbbbbbbb;
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(1, read(sv[0], &w, 1));
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_SNAPSHOT_RESTORE, &s));
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_SNAPSHOT_UNLOCK, &s));
	/* Ours is restored, in the pages the mapping shows. */
	ASSERT_EQ(0, dma_sync(d, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ));
	EXPECT_EQ(0xa1a1a1a1U, p[0]);
	ASSERT_EQ(0, dma_sync(d, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ));
	/* The import kept its address and the exporter's new bytes. */
	ASSERT_EQ(0, snpu_d2h(self->fd, &w, ia + 4, sizeof(w)));
	EXPECT_EQ(0x02020202U, w);

	ASSERT_EQ(1, write(go[1], "d", 1));
	ASSERT_EQ(kid, waitpid(kid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	munmap(p, bytes);
	close(d);
}

/*
 * The child's body for killed_importer_then_rmmod: as nobody, export,
 * map, import on both devices, queue work on the imports behind a long
 * SPIN, tell the parent, and wait to be killed.
 */
static void hold_everything(int ready)
{
	uint64_t a, ia, ib, bytes = 1 << 20;
	int fd0, fd1, d;
	uint32_t s0, s1;
	void *p;

	if (snpu_drop_to_nobody())
		_exit(10);
	fd0 = snpu_open_dev();
	fd1 = open_dev1();
	if (fd0 < 0 || fd1 < 0 || snpu_stream_create(fd0, 0, &s0) ||
	    snpu_stream_create(fd1, 0, &s1))
		_exit(11);
	if (snpu_alloc(fd0, bytes, 0, &a) || mem_export(fd0, a, bytes, 0, &d))
		_exit(12);
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, d, 0);
	if (p == MAP_FAILED)
		_exit(13);
	if (mem_import(fd0, d, &ia, NULL) || mem_import(fd1, d, &ib, NULL))
		_exit(14);
	if (snpu_submit1(fd0, snpu_t_spin(s0, NS_PER_SEC, 1)) ||
	    snpu_submit1(fd0, snpu_t_fill(s0, ia, bytes, 1, 2)) ||
	    snpu_submit1(fd1, snpu_t_spin(s1, NS_PER_SEC, 1)) ||
	    snpu_submit1(fd1, snpu_t_fill(s1, ib, bytes, 2, 2)))
		_exit(15);
	if (write(ready, "r", 1) != 1)
		_exit(16);
	for (;;)
		pause();
}

/* Return: 0 or -errno of delete_module, retried while the module is busy. */
static int mod_unload(void)
{
	uint64_t end = snpu_now_ns() + 10 * NS_PER_SEC;

	while (syscall(__NR_delete_module, "snpu", O_NONBLOCK)) {
		if (errno != EAGAIN && errno != EBUSY)
			return -errno;
		if (snpu_now_ns() > end)
			return -errno;
		usleep(10000);
	}
	return 0;
}

/* The loaded module's parameters this suite depends on, as insmod takes. */
static void mod_params_now(char *buf, size_t len)
{
	static const char *const names[] = {
		"devices", "mem_mb", "ctx_mem_mb", "test_hooks",
	};
	size_t i, off = 0;
	char path[96];
	long long v;
	FILE *f;
	int c;

	buf[0] = 0;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "/sys/module/snpu/parameters/%s",
			 names[i]);
		f = fopen(path, "re");
		if (!f)
			continue;
		c = fgetc(f);
		if (c == 'Y' || c == 'N') {
			v = c == 'Y';
		} else {
			ungetc(c, f);
			if (fscanf(f, "%lld", &v) != 1)
				v = -1;
		}
		fclose(f);
		if (v >= 0)
			off += snprintf(buf + off, len - off, "%s%s=%lld",
					off ? " " : "", names[i], v);
	}
}

/*
 * A process killed (SIGKILL) while it holds exports, a mapping, imports
 * on two devices and queued work on them: everything is released (the
 * module's reference count comes back), and the module unloads; it is
 * loaded again with the same parameters for the tests after this one.
 */
TEST(killed_importer_then_rmmod)
{
	char params[256];
	int ready[2], status;
	long long ref0;
	pid_t kid;
	char c;

	mod_params_now(params, sizeof(params));
	ref0 = read_ll(MODULE_REFCNT);
	ASSERT_LE(0, ref0);
	ASSERT_EQ(0, pipe(ready));
	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid) {
		close(ready[0]);
		hold_everything(ready[1]);
	}
	close(ready[1]);
	ASSERT_EQ(1, read(ready[0], &c, 1))
		TH_LOG("the child did not get ready");
	EXPECT_LT(ref0, read_ll(MODULE_REFCNT));
	ASSERT_EQ(0, kill(kid, SIGKILL));
	ASSERT_EQ(kid, waitpid(kid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status));
	ASSERT_EQ(0, mod_unload());
	ASSERT_EQ(0, snpu_module_load(params)) TH_LOG("params: %s", params);
	close(ready[0]);
}

TEST_HARNESS_MAIN
