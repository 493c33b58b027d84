// SPDX-License-Identifier: GPL-2.0
/*
 * Communicators in checkpoint images (Documentation/checkpoint.rst,
 * "Communicators"), through the raw ioctls.
 *
 * A process with a communicator of 2 or 4 ranks, each a file of its own
 * device, runs an all-reduce, checkpoints itself and closes its files. A
 * new process (a forked child) restores every context of the image into
 * fresh files, on the same devices or through a device map, and finds the
 * ranks under their handles, joined again once the last one is restored,
 * at the same sequence number; an all-reduce of new inputs gives the right
 * sums. Restores of the ranks by two processes never join each other; a
 * rank restored twice by one process is refused. A communicator with a
 * rank in another process, one not complete, an id nobody joined are
 * refused at checkpoint (EOPNOTSUPP), a collective queued on some ranks
 * only is refused at once (EBUSY) rather than waited for. Corrupt COMM
 * chunks are refused with nothing made. The module runs with devices=4
 * (run_vm.sh).
 */
#include <sys/wait.h>

#include "../comm/comm_util.h"

#include "kselftest_harness.h"

#define COUNT		3000	/* elements of an all-reduce */
#define NDEV		4

static int ckpt_proc(int fd, uint32_t op, int imgfd, struct snpu_ckpt_proc *out)
{
	struct snpu_ckpt_proc a = {
		.size = sizeof(a), .op = op,
		.timeout_ns = op == SNPU_CKPT_OP_LOCK ? -1 : 0,
		.fd = op == SNPU_CKPT_OP_CHECKPOINT ? imgfd : 0,
	};
	int ret = snpu_ioc(fd, SNPU_IOC_CKPT_PROC, &a);

	if (out)
		*out = a;
	return ret;
}

static int ckpt_restore(int fd, int imgfd, uint32_t index,
			struct snpu_ckpt_restore *out)
{
	struct snpu_ckpt_restore a = {
		.size = sizeof(a), .fd = imgfd, .index = index,
	};
	int ret = snpu_ioc(fd, SNPU_IOC_CKPT_RESTORE, &a);

	if (out)
		*out = a;
	return ret;
}

/* Lock, checkpoint into a new memfd, unlock: the memfd, or -errno. */
static int checkpoint_self(int fd, uint32_t *contexts)
{
	struct snpu_ckpt_proc out;
	int img, ret;

	img = memfd_create("snpu-ckpt-comm", MFD_CLOEXEC);
	if (img < 0)
		return -errno;
	ret = ckpt_proc(fd, SNPU_CKPT_OP_LOCK, -1, NULL);
	if (ret) {
		close(img);
		return ret;
	}
	ret = ckpt_proc(fd, SNPU_CKPT_OP_CHECKPOINT, img, &out);
	if (!ret && contexts)
		*contexts = out.contexts;
	if (ckpt_proc(fd, SNPU_CKPT_OP_UNLOCK, -1, NULL) && !ret)
		ret = -EIO;
	if (ret) {
		close(img);
		return ret;
	}
	return img;
}

/* Rank r's input: element i. */
static int32_t input(uint32_t r, uint32_t i, uint32_t salt)
{
	return (int32_t)(i * 7 + r * 1000 + salt * 100003);
}

/* Fill every rank's send buffer with input(salt), all-reduce, check sums. */
static int allreduce_check(struct rgroup *g, uint32_t salt)
{
	static int32_t buf[COUNT];
	unsigned int r, i;
	int ret;

	for (r = 0; r < g->n; r++) {
		for (i = 0; i < COUNT; i++)
			buf[i] = input(r, i, salt);
		ret = snpu_h2d(g->r[r].fd, g->r[r].send, buf, sizeof(buf));
		if (ret)
			return 1;
	}
	if (group_coll(g, SNPU_COLL_ALLREDUCE, SNPU_DTYPE_I32, SNPU_REDOP_SUM,
		       COUNT, 0))
		return 2;
	if (group_sync(g, NULL))
		return 3;
	for (r = 0; r < g->n; r++) {
		if (snpu_d2h(g->r[r].fd, buf, g->r[r].recv, sizeof(buf)))
			return 4;
		for (i = 0; i < COUNT; i++) {
			uint32_t sum = 0, q;

			for (q = 0; q < g->n; q++)
				sum += (uint32_t)input(q, i, salt);
			if ((uint32_t)buf[i] != sum)
				return 5;
		}
	}
	return 0;
}

/* A group of @n ranks on devices 0..@n-1 with buffers, one all-reduce done. */
static int make_group(struct rgroup *g, unsigned int n)
{
	if (group_init(g, n, NDEV) ||
	    group_alloc(g, COUNT * 4, COUNT * 4))
		return -1;
	return allreduce_check(g, 1) ? -2 : 0;
}

/*
 * A group of @n ranks, checkpointed, its files closed (their windows of
 * device addresses free again): the image's memfd, or -errno.
 */
static int group_image(struct rgroup *g, unsigned int n, uint32_t *contexts)
{
	unsigned int i;
	int img;

	if (make_group(g, n))
		return -EIO;
	img = checkpoint_self(g->r[0].fd, contexts);
	for (i = 0; i < g->n; i++) {
		close(g->r[i].fd);
		g->r[i].fd = -1;
	}
	return img;
}

static int wait_child(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/*
 * In this (new) process: restore context i of @img into a fresh file of
 * device map(dev_index) for each i, the contexts in the order @order
 * gives; check each rank as it comes back, then all-reduce.
 * Return: 0, or a step number (for a child's exit status).
 */
static int restore_all(const struct rgroup *orig, int img, uint32_t contexts,
		       unsigned int shift, bool reverse)
{
	struct snpu_ckpt_restore out;
	struct snpu_comm_query q;
	struct snpu_info info;
	struct rgroup g = *orig;
	unsigned int k, i;

	if (contexts != g.n)
		return 10;
	for (k = 0; k < g.n; k++) {
		int fd;

		i = reverse ? g.n - 1 - k : k;
		fd = comm_open((i + shift) % NDEV);
		if (fd < 0)
			return 11;
		g.r[i].fd = fd;
		if (ckpt_restore(fd, img, i, &out))
			return 12;
		/* Context i was rank i's file, on device i. */
		if (out.dev_index != i || out.contexts != g.n)
			return 13;
		if (snpu_get_info(fd, &info) || info.dev_index != (i + shift) % NDEV)
			return 14;
		/* The same handle, the same rank; complete with the last. */
		if (comm_query(fd, g.r[i].comm, &q) || q.rank != i ||
		    q.nranks != g.n || q.joined != k + 1 || q.error ||
		    q.queued != 1)
			return 15;
	}
	for (i = 0; i < g.n; i++)
		if (comm_query(g.r[i].fd, g.r[i].comm, &q) || q.joined != g.n)
			return 16;
	/* Collectives after restore: the same sequence on every rank. */
	if (allreduce_check(&g, 2))
		return 17;
	if (allreduce_check(&g, 3))
		return 18;
	for (i = 0; i < g.n; i++)
		if (comm_query(g.r[i].fd, g.r[i].comm, &q) || q.queued != 3)
			return 19;
	group_fini(&g);
	return 0;
}

FIXTURE(ckcomm) {
	struct rgroup g;
	int img;
	uint32_t contexts;
};

FIXTURE_VARIANT(ckcomm) {
	unsigned int ranks;
	unsigned int shift;	/* the device map: d -> (d + shift) % 4 */
	bool nobody;
};

FIXTURE_VARIANT_ADD(ckcomm, two) { .ranks = 2 };
FIXTURE_VARIANT_ADD(ckcomm, four) { .ranks = 4 };
FIXTURE_VARIANT_ADD(ckcomm, two_mapped) { .ranks = 2, .shift = 1 };
FIXTURE_VARIANT_ADD(ckcomm, four_mapped) { .ranks = 4, .shift = 3 };
FIXTURE_VARIANT_ADD(ckcomm, two_as_nobody) { .ranks = 2, .nobody = true };

FIXTURE_SETUP(ckcomm)
{
	self->img = -1;
	if (variant->nobody)
		ASSERT_EQ(0, snpu_drop_to_nobody());
	self->img = group_image(&self->g, variant->ranks, &self->contexts);
	ASSERT_LE(0, self->img);
	ASSERT_EQ(variant->ranks, self->contexts);
}

FIXTURE_TEARDOWN(ckcomm)
{
	if (self->img >= 0)
		close(self->img);
}

TEST_F(ckcomm, new_process_restores_every_rank)
{
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (!pid)
		_exit(restore_all(&self->g, self->img, self->contexts,
				  variant->shift, false));
	EXPECT_EQ(0, wait_child(pid));
}

TEST_F(ckcomm, ranks_restored_in_any_order)
{
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (!pid)
		_exit(restore_all(&self->g, self->img, self->contexts,
				  variant->shift, true));
	EXPECT_EQ(0, wait_child(pid));
}

/* The same image restored twice in a row by one process: two communicators. */
TEST_F(ckcomm, restored_again_after_close)
{
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (!pid) {
		int st = restore_all(&self->g, self->img, self->contexts,
				     variant->shift, false);

		if (!st)
			st = restore_all(&self->g, self->img, self->contexts,
					 variant->shift, true);
		_exit(st);
	}
	EXPECT_EQ(0, wait_child(pid));
}

/* One process restores a rank once: a second file of it is EEXIST. */
TEST(rank_restored_twice_is_eexist)
{
	struct snpu_comm_query q;
	struct snpu_ctx_query u;
	struct snpu_info info;
	struct rgroup g;
	uint32_t contexts;
	uint64_t used;
	int fd0, fd1, img;

	img = group_image(&g, 2, &contexts);
	ASSERT_LE(0, img);
	fd0 = comm_open(0);
	ASSERT_LE(0, fd0);
	fd1 = comm_open(1);
	ASSERT_LE(0, fd1);
	ASSERT_EQ(0, ckpt_restore(fd0, img, 0, NULL));
	ASSERT_EQ(0, snpu_get_info(fd1, &info));
	used = info.mem_used;
	EXPECT_EQ(-EEXIST, ckpt_restore(fd1, img, 0, NULL));
	/* Nothing made in the refused file. */
	ASSERT_EQ(0, snpu_ctx_query(fd1, &u));
	EXPECT_EQ(0ULL, u.mem_used);
	EXPECT_EQ(0u, u.streams);
	ASSERT_EQ(0, snpu_get_info(fd1, &info));
	EXPECT_EQ(used, info.mem_used);
	EXPECT_EQ(-ENOENT, comm_query(fd1, g.r[0].comm, &q));
	/* The first one still waits for its peers. */
	ASSERT_EQ(0, comm_query(fd0, g.r[0].comm, &q));
	EXPECT_EQ(1u, q.joined);
	EXPECT_EQ(0, q.error);
	/* The refused file takes the other rank: the communicator is whole. */
	ASSERT_EQ(0, ckpt_restore(fd1, img, 1, NULL));
	ASSERT_EQ(0, comm_query(fd0, g.r[0].comm, &q));
	EXPECT_EQ(2u, q.joined);
	g.r[0].fd = fd0;
	g.r[1].fd = fd1;
	EXPECT_EQ(0, allreduce_check(&g, 4));
	group_fini(&g);
	close(img);
}

/*
 * Two processes each restore ranks of the image: each gets a
 * communicator of its own, never joined by the other's files.
 */
TEST(other_process_never_joins)
{
	int ready[2], done[2];
	struct snpu_comm_query q;
	struct rgroup g;
	uint32_t contexts;
	pid_t pid;
	char c;
	int fd, img;

	img = group_image(&g, 2, &contexts);
	ASSERT_LE(0, img);
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int cfd = comm_open(1);

		close(ready[0]);
		close(done[1]);
		if (cfd < 0 || ckpt_restore(cfd, img, 1, NULL))
			_exit(1);
		c = 0;
		if (write(ready[1], &c, 1) != 1)
			_exit(2);
		/* Until the parent has restored rank 0 and looked. */
		if (read(done[0], &c, 1) < 0)
			_exit(3);
		if (comm_query(cfd, g.r[1].comm, &q) || q.joined != 1 ||
		    q.error)
			_exit(4);
		_exit(0);
	}
	close(ready[1]);
	close(done[0]);
	ASSERT_EQ(1, read(ready[0], &c, 1));
	fd = comm_open(0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ckpt_restore(fd, img, 0, NULL));
	ASSERT_EQ(0, comm_query(fd, g.r[0].comm, &q));
	EXPECT_EQ(1u, q.joined);
	EXPECT_EQ(1, write(done[1], "x", 1));
	EXPECT_EQ(0, wait_child(pid));
	close(fd);
	close(ready[0]);
	close(done[1]);
	close(img);
}

/*
 * snpu-checkpoint restores every context of the image in files of its
 * own: the ranks meet in its process, on the devices of the map.
 */
TEST(cli_restores_the_ranks)
{
	const char *path = "/tmp/ckpt-comm-cli.img";
	char cmd[256], line[256];
	uint32_t contexts;
	struct rgroup g;
	ssize_t n;
	void *buf;
	FILE *p;
	int img, out, st;

	img = group_image(&g, 2, &contexts);
	ASSERT_LE(0, img);
	out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ASSERT_LE(0, out);
	n = lseek(img, 0, SEEK_END);
	ASSERT_LT(0, n);
	buf = malloc((size_t)n);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(n, pread(img, buf, (size_t)n, 0));
	ASSERT_EQ(n, write(out, buf, (size_t)n));
	free(buf);
	close(out);
	snprintf(cmd, sizeof(cmd),
		 "snpu-checkpoint --action restore --image %s --device-map 0=2,1=3",
		 path);
	p = popen(cmd, "r");
	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, fgets(line, sizeof(line), p));
	EXPECT_STREQ("restored context 0 of snpu0 onto snpu2\n", line);
	ASSERT_NE(NULL, fgets(line, sizeof(line), p));
	EXPECT_STREQ("restored context 1 of snpu1 onto snpu3\n", line);
	st = pclose(p);
	EXPECT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st));
	unlink(path);
	close(img);
}

/* ---- refused at checkpoint ------------------------------------------------ */

static void expect_refused(struct __test_metadata *_metadata, int fd, int err)
{
	int img = memfd_create("img", MFD_CLOEXEC);

	ASSERT_LE(0, img);
	ASSERT_EQ(0, ckpt_proc(fd, SNPU_CKPT_OP_LOCK, -1, NULL));
	EXPECT_EQ(err, ckpt_proc(fd, SNPU_CKPT_OP_CHECKPOINT, img, NULL));
	/* Refused before a byte is written. */
	EXPECT_EQ(0, lseek(img, 0, SEEK_END));
	EXPECT_EQ(0, ckpt_proc(fd, SNPU_CKPT_OP_UNLOCK, -1, NULL));
	close(img);
}

TEST(rank_in_other_process_is_eopnotsupp)
{
	int ready[2], done[2], fd;
	uint8_t id[SNPU_COMM_ID_BYTES];
	uint32_t h;
	pid_t pid;
	char c;

	fd = comm_open(0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, comm_id(fd, id));
	ASSERT_EQ(0, comm_join(fd, id, 2, 0, &h));
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int cfd = comm_open(1);

		close(fd);
		if (cfd < 0 || comm_join(cfd, id, 2, 1, &h))
			_exit(1);
		if (write(ready[1], "x", 1) != 1)
			_exit(2);
		if (read(done[0], &c, 1) < 0)
			_exit(3);
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	expect_refused(_metadata, fd, -EOPNOTSUPP);
	EXPECT_EQ(1, write(done[1], "x", 1));
	EXPECT_EQ(0, wait_child(pid));
	close(fd);
}

TEST(incomplete_communicator_is_eopnotsupp)
{
	uint8_t id[SNPU_COMM_ID_BYTES];
	uint32_t h;
	int fd;

	fd = comm_open(0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, comm_id(fd, id));
	ASSERT_EQ(0, comm_join(fd, id, 2, 0, &h));
	expect_refused(_metadata, fd, -EOPNOTSUPP);
	close(fd);
}

TEST(id_nobody_joined_is_eopnotsupp)
{
	uint8_t id[SNPU_COMM_ID_BYTES];
	int fd;

	fd = comm_open(0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, comm_id(fd, id));
	expect_refused(_metadata, fd, -EOPNOTSUPP);
	close(fd);
}

/*
 * A collective queued on rank 0 only: the lock keeps rank 1's from
 * coming, a checkpoint would wait for it for ever. Refused at once; once
 * unlocked, rank 1 queues its part and both complete.
 */
TEST(collective_on_some_ranks_is_ebusy)
{
	struct rgroup g;
	struct snpu_task t;
	uint32_t n = 0;
	int img;

	ASSERT_EQ(0, make_group(&g, 2));
	t = t_coll(g.r[0].stream, g.r[0].comm, SNPU_COLL_ALLREDUCE,
		   SNPU_DTYPE_I32, SNPU_REDOP_SUM, COUNT, g.r[0].send,
		   g.r[0].recv, 0);
	ASSERT_EQ(0, snpu_submit1(g.r[0].fd, t));
	expect_refused(_metadata, g.r[0].fd, -EBUSY);
	t = t_coll(g.r[1].stream, g.r[1].comm, SNPU_COLL_ALLREDUCE,
		   SNPU_DTYPE_I32, SNPU_REDOP_SUM, COUNT, g.r[1].send,
		   g.r[1].recv, 0);
	ASSERT_EQ(0, snpu_submit1(g.r[1].fd, t));
	EXPECT_EQ(0, group_sync(&g, NULL));
	/* Both at the same collective again: the image is made. */
	img = checkpoint_self(g.r[0].fd, &n);
	ASSERT_LE(0, img);
	EXPECT_EQ(2u, n);
	close(img);
	group_fini(&g);
}

/* ---- corrupt COMM chunks -------------------------------------------------- */

static uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78 & -(crc & 1));
	}
	return crc;
}

struct image {
	uint8_t *p;
	size_t n;
};

static int read_image(int img, struct image *im)
{
	im->n = (size_t)lseek(img, 0, SEEK_END);
	im->p = malloc(im->n);
	return im->p && pread(img, im->p, im->n, 0) == (ssize_t)im->n ? 0 : -1;
}

/* Offset of the @k-th chunk of @type (from 0), or 0. */
static size_t find_chunk(const struct image *im, uint32_t type, unsigned int k)
{
	size_t pos = sizeof(struct snpu_ckpt_header);
	struct snpu_ckpt_chunk c;

	while (pos + sizeof(c) <= im->n) {
		memcpy(&c, im->p + pos, sizeof(c));
		if (c.type == type && !k--)
			return pos;
		pos += sizeof(c) + c.len;
	}
	return 0;
}

static void fix_crc(struct image *im, size_t at)
{
	struct snpu_ckpt_chunk c;

	memcpy(&c, im->p + at, sizeof(c));
	c.crc = 0;
	c.crc = crc32c_sw(crc32c_sw(~0U, &c, sizeof(c)),
			  im->p + at + sizeof(c), c.len) ^ ~0U;
	memcpy(im->p + at, &c, sizeof(c));
}

/* Restore context @index of @len bytes of @buf into a fresh file of @dev. */
static int try_image(const void *buf, size_t len, uint32_t index,
		     unsigned int dev, bool *clean)
{
	struct snpu_ctx_query u;
	struct snpu_info info;
	uint64_t used;
	int fd, img, ret;

	img = memfd_create("bad", MFD_CLOEXEC);
	if (img < 0 || write(img, buf, len) != (ssize_t)len)
		return 1;
	fd = comm_open(dev);
	if (fd < 0 || snpu_get_info(fd, &info))
		return 2;
	used = info.mem_used;
	ret = ckpt_restore(fd, img, index, NULL);
	*clean = !snpu_ctx_query(fd, &u) && !u.mem_used && !u.streams &&
		 !snpu_get_info(fd, &info) && info.mem_used == used;
	close(fd);
	close(img);
	return ret;
}

FIXTURE(corrupt) {
	struct image im;
	size_t comm0;		/* the COMM chunk of context 0 */
	struct snpu_ckpt_comm *rec;
};

FIXTURE_SETUP(corrupt)
{
	struct rgroup g;
	uint32_t n = 0;
	int img;

	ASSERT_EQ(0, make_group(&g, 2));
	img = checkpoint_self(g.r[0].fd, &n);
	ASSERT_LE(0, img);
	group_fini(&g);
	ASSERT_EQ(0, read_image(img, &self->im));
	close(img);
	self->comm0 = find_chunk(&self->im, SNPU_CKPT_COMM, 0);
	ASSERT_NE(0u, self->comm0);
	/* Context 0's: before the second CTX chunk. */
	ASSERT_LT(self->comm0, find_chunk(&self->im, SNPU_CKPT_CTX, 1));
	self->rec = (void *)(self->im.p + self->comm0 +
			     sizeof(struct snpu_ckpt_chunk));
	ASSERT_EQ(0u, self->rec->rank);
	ASSERT_EQ(2u, self->rec->nranks);
	ASSERT_EQ(1ULL, self->rec->seq);
}

FIXTURE_TEARDOWN(corrupt)
{
	free(self->im.p);
}

TEST_F(corrupt, whole_image_restores)
{
	bool clean;

	EXPECT_EQ(0, try_image(self->im.p, self->im.n, 0, 0, &clean));
	EXPECT_EQ(0, try_image(self->im.p, self->im.n, 1, 1, &clean));
}

TEST_F(corrupt, fields_out_of_range_are_eproto)
{
	struct snpu_ckpt_comm keep = *self->rec;
	bool clean;

	self->rec->nranks = 0;
	fix_crc(&self->im, self->comm0);
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, 0, 0, &clean));
	EXPECT_TRUE(clean);
	*self->rec = keep;
	self->rec->nranks = SNPU_COMM_MAX_RANKS + 1;
	fix_crc(&self->im, self->comm0);
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, 0, 0, &clean));
	EXPECT_TRUE(clean);
	*self->rec = keep;
	self->rec->rank = 2;
	fix_crc(&self->im, self->comm0);
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, 0, 0, &clean));
	EXPECT_TRUE(clean);
	*self->rec = keep;
	self->rec->reserved[0] = 1;
	fix_crc(&self->im, self->comm0);
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, 0, 0, &clean));
	EXPECT_TRUE(clean);
	*self->rec = keep;
	self->rec->handle = 0;
	fix_crc(&self->im, self->comm0);
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, 0, 0, &clean));
	EXPECT_TRUE(clean);
	/* A corrupt chunk of context 0 refuses context 1's restore too. */
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, 1, 1, &clean));
	EXPECT_TRUE(clean);
}

TEST_F(corrupt, crc_and_truncation)
{
	size_t end = self->comm0 + sizeof(struct snpu_ckpt_chunk) +
		     sizeof(struct snpu_ckpt_comm);
	bool clean;

	self->im.p[end - 1] ^= 1;
	EXPECT_EQ(-EBADMSG, try_image(self->im.p, self->im.n, 0, 0, &clean));
	EXPECT_TRUE(clean);
	self->im.p[end - 1] ^= 1;
	EXPECT_EQ(-ENODATA, try_image(self->im.p, end - 5, 0, 0, &clean));
	EXPECT_TRUE(clean);
	EXPECT_EQ(-ENODATA, try_image(self->im.p, self->comm0 + 3, 0, 0,
				      &clean));
	EXPECT_TRUE(clean);
}

/*
 * Ranks that do not belong together: another rank count or sequence
 * number than the rank restored before them (EPROTO), after a valid
 * restore of rank 0 by this process; the refused file stays fresh and
 * the valid rank 1 still completes the communicator afterwards.
 */
TEST_F(corrupt, mismatched_peers_are_eproto)
{
	struct snpu_ckpt_comm *r1;
	struct snpu_ckpt_comm keep;
	struct snpu_comm_query q;
	struct image bad;
	size_t comm1;
	bool clean;
	int fd0, fd1, img;

	comm1 = find_chunk(&self->im, SNPU_CKPT_COMM, 1);
	ASSERT_NE(0u, comm1);
	bad.n = self->im.n;
	bad.p = malloc(bad.n);
	ASSERT_NE(NULL, bad.p);
	memcpy(bad.p, self->im.p, bad.n);
	r1 = (void *)(bad.p + comm1 + sizeof(struct snpu_ckpt_chunk));
	keep = *r1;

	img = memfd_create("good", MFD_CLOEXEC);
	ASSERT_LE(0, img);
	ASSERT_EQ((ssize_t)self->im.n, write(img, self->im.p, self->im.n));
	fd0 = comm_open(0);
	ASSERT_LE(0, fd0);
	ASSERT_EQ(0, ckpt_restore(fd0, img, 0, NULL));

	r1->seq++;
	fix_crc(&bad, comm1);
	EXPECT_EQ(-EPROTO, try_image(bad.p, bad.n, 1, 1, &clean));
	EXPECT_TRUE(clean);
	*r1 = keep;
	r1->nranks = 3;
	fix_crc(&bad, comm1);
	EXPECT_EQ(-EPROTO, try_image(bad.p, bad.n, 1, 1, &clean));
	EXPECT_TRUE(clean);
	/* Rank 0 again, in a second file: EEXIST. */
	EXPECT_EQ(-EEXIST, try_image(self->im.p, self->im.n, 0, 1, &clean));
	EXPECT_TRUE(clean);
	ASSERT_EQ(0, comm_query(fd0, self->rec->handle, &q));
	EXPECT_EQ(1u, q.joined);
	EXPECT_EQ(0, q.error);
	/* The real rank 1 completes it: nothing of the refusals stayed. */
	fd1 = comm_open(1);
	ASSERT_LE(0, fd1);
	ASSERT_EQ(0, ckpt_restore(fd1, img, 1, NULL));
	ASSERT_EQ(0, comm_query(fd0, self->rec->handle, &q));
	EXPECT_EQ(2u, q.joined);
	EXPECT_EQ(0, q.error);
	close(fd1);
	free(bad.p);
	close(img);
	close(fd0);
}

TEST_HARNESS_MAIN
