// SPDX-License-Identifier: GPL-2.0
/*
 * Communicators: ids, joins and their errors, who may join, the limits,
 * query and destroy of a rank without collectives.
 *
 * Runs as root in the test VM with the module loaded with devices=4; the
 * tests about users fork a child that becomes nobody.
 */
#include "kselftest_harness.h"
#include "comm_util.h"

FIXTURE(life) {
	int fd[4];
};

FIXTURE_SETUP(life)
{
	unsigned int i;

	for (i = 0; i < 4; i++) {
		self->fd[i] = comm_open(i % comm_devices());
		ASSERT_LE(0, self->fd[i]);
	}
}

FIXTURE_TEARDOWN(life)
{
	unsigned int i;

	for (i = 0; i < 4; i++)
		close(self->fd[i]);
}

TEST_F(life, ids_differ_and_query_follows_joins)
{
	uint8_t a[SNPU_COMM_ID_BYTES], b[SNPU_COMM_ID_BYTES];
	struct snpu_comm_query q;
	uint32_t h0, h1;

	ASSERT_EQ(0, comm_id(self->fd[0], a));
	ASSERT_EQ(0, comm_id(self->fd[0], b));
	ASSERT_NE(0, memcmp(a, b, sizeof(a)));

	ASSERT_EQ(0, comm_join(self->fd[1], a, 3, 2, &h1));
	ASSERT_EQ(0, comm_query(self->fd[1], h1, &q));
	EXPECT_EQ(2u, q.rank);
	EXPECT_EQ(3u, q.nranks);
	EXPECT_EQ(1u, q.joined);
	EXPECT_EQ(0, q.error);
	EXPECT_EQ(0u, q.queued);
	ASSERT_EQ(0, comm_join(self->fd[0], a, 3, 0, &h0));
	ASSERT_EQ(0, comm_query(self->fd[1], h1, &q));
	EXPECT_EQ(2u, q.joined);
}

TEST_F(life, join_unknown_id_is_enoent)
{
	uint8_t id[SNPU_COMM_ID_BYTES];

	memset(id, 0x5a, sizeof(id));
	EXPECT_EQ(-ENOENT, comm_join(self->fd[0], id, 2, 0, NULL));
}

TEST_F(life, join_bad_ranks_is_einval)
{
	uint8_t id[SNPU_COMM_ID_BYTES];

	ASSERT_EQ(0, comm_id(self->fd[0], id));
	EXPECT_EQ(-EINVAL, comm_join(self->fd[0], id, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, comm_join(self->fd[0], id, SNPU_COMM_MAX_RANKS + 1,
				     0, NULL));
	EXPECT_EQ(-EINVAL, comm_join(self->fd[0], id, 2, 2, NULL));
	ASSERT_EQ(0, comm_join(self->fd[0], id, 2, 0, NULL));
	/* The first join fixed 2 ranks. */
	EXPECT_EQ(-EINVAL, comm_join(self->fd[1], id, 3, 1, NULL));
	EXPECT_EQ(0, comm_join(self->fd[1], id, 2, 1, NULL));
}

TEST_F(life, join_reserved_and_pad_are_einval)
{
	struct snpu_comm_join j = { .size = sizeof(j), .nranks = 2 };
	struct snpu_comm_id c = { .size = sizeof(c) };

	ASSERT_EQ(0, comm_id(self->fd[0], j.id));
	j.pad = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd[0], SNPU_IOC_COMM_JOIN, &j));
	j.pad = 0;
	j.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd[0], SNPU_IOC_COMM_JOIN, &j));
	j.reserved[1] = 0;
	j.flags = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd[0], SNPU_IOC_COMM_JOIN, &j));
	c.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd[0], SNPU_IOC_COMM_ID, &c));
}

TEST_F(life, rank_taken_and_second_rank_of_a_file_are_eexist)
{
	uint8_t id[SNPU_COMM_ID_BYTES];

	ASSERT_EQ(0, comm_id(self->fd[0], id));
	ASSERT_EQ(0, comm_join(self->fd[0], id, 3, 0, NULL));
	EXPECT_EQ(-EEXIST, comm_join(self->fd[1], id, 3, 0, NULL));
	/* A file is one rank at most. */
	EXPECT_EQ(-EEXIST, comm_join(self->fd[0], id, 3, 1, NULL));
	EXPECT_EQ(0, comm_join(self->fd[1], id, 3, 1, NULL));
}

TEST_F(life, complete_communicator_takes_no_join)
{
	uint8_t id[SNPU_COMM_ID_BYTES];

	ASSERT_EQ(0, comm_id(self->fd[0], id));
	ASSERT_EQ(0, comm_join(self->fd[0], id, 2, 0, NULL));
	ASSERT_EQ(0, comm_join(self->fd[1], id, 2, 1, NULL));
	EXPECT_EQ(-ENOENT, comm_join(self->fd[2], id, 2, 1, NULL));
}

TEST_F(life, id_goes_with_its_file_before_any_join)
{
	uint8_t id[SNPU_COMM_ID_BYTES];
	int fd = comm_open(0);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, comm_id(fd, id));
	close(fd);
	EXPECT_EQ(-ENOENT, comm_join(self->fd[0], id, 2, 0, NULL));
}

TEST_F(life, id_stays_with_its_ranks_after_its_file)
{
	uint8_t id[SNPU_COMM_ID_BYTES];
	int fd = comm_open(0);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, comm_id(fd, id));
	ASSERT_EQ(0, comm_join(self->fd[0], id, 2, 0, NULL));
	close(fd);
	EXPECT_EQ(0, comm_join(self->fd[1], id, 2, 1, NULL));
}

TEST_F(life, ids_and_ranks_per_file_are_bounded)
{
	uint8_t id[SNPU_COMM_ID_BYTES];
	unsigned int i;

	for (i = 0; i < SNPU_COMM_MAX_PER_FILE; i++)
		ASSERT_EQ(0, comm_id(self->fd[0], id));
	EXPECT_EQ(-ENOSPC, comm_id(self->fd[0], id));
	/* A join takes the id off its holder's count. */
	ASSERT_EQ(0, comm_join(self->fd[1], id, 1, 0, NULL));
	EXPECT_EQ(0, comm_id(self->fd[0], id));

	for (i = 1; i < SNPU_COMM_MAX_PER_FILE; i++) {
		ASSERT_EQ(0, comm_id(self->fd[2], id));
		ASSERT_EQ(0, comm_join(self->fd[1], id, 1, 0, NULL));
	}
	ASSERT_EQ(0, comm_id(self->fd[2], id));
	EXPECT_EQ(-ENOSPC, comm_join(self->fd[1], id, 1, 0, NULL));
}

TEST_F(life, query_and_destroy_of_no_rank_are_enoent)
{
	struct snpu_comm_query q;
	uint32_t stream;

	ASSERT_EQ(0, snpu_stream_create(self->fd[0], SNPU_PRIO_NORMAL,
					&stream));
	EXPECT_EQ(-ENOENT, comm_query(self->fd[0], 12345, &q));
	EXPECT_EQ(-ENOENT, comm_query(self->fd[0], stream, &q));
	EXPECT_EQ(-ENOENT, comm_destroy(self->fd[0], stream, 0));
	EXPECT_EQ(-EINVAL, comm_destroy(self->fd[0], stream, 2));
}

TEST_F(life, destroy_leaves_and_breaks)
{
	uint8_t id[SNPU_COMM_ID_BYTES];
	struct snpu_comm_query q;
	uint32_t h0, h1;

	ASSERT_EQ(0, comm_id(self->fd[0], id));
	ASSERT_EQ(0, comm_join(self->fd[0], id, 3, 0, &h0));
	ASSERT_EQ(0, comm_join(self->fd[1], id, 3, 1, &h1));
	ASSERT_EQ(0, comm_destroy(self->fd[0], h0, 0));
	EXPECT_EQ(-ENOENT, comm_query(self->fd[0], h0, &q));
	ASSERT_EQ(0, comm_query(self->fd[1], h1, &q));
	EXPECT_EQ(-ECONNRESET, q.error);
	/* Broken: no more joins, and the file may join elsewhere. */
	EXPECT_EQ(-ECONNRESET, comm_join(self->fd[2], id, 3, 2, NULL));
	ASSERT_EQ(0, comm_destroy(self->fd[1], h1, SNPU_COMM_DESTROY_FORCE));
	EXPECT_EQ(-ENOENT, comm_destroy(self->fd[1], h1, 0));
}

/* Who may join: the same effective user only. */
static int child_join_as_nobody(const uint8_t *id, uint32_t rank)
{
	int fd, ret;

	if (snpu_drop_to_nobody())
		return 100;
	fd = comm_open(0);
	if (fd < 0)
		return 101;
	ret = comm_join(fd, id, 2, rank, NULL);
	close(fd);
	return ret == -EACCES ? 0 : 102;
}

TEST_F(life, nobody_cannot_join_roots_communicator)
{
	uint8_t id[SNPU_COMM_ID_BYTES];
	int status;
	pid_t pid;

	ASSERT_EQ(0, comm_id(self->fd[0], id));
	ASSERT_EQ(0, comm_join(self->fd[0], id, 2, 0, NULL));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(child_join_as_nobody(id, 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* The rank nobody asked for is still free for root. */
	EXPECT_EQ(0, comm_join(self->fd[1], id, 2, 1, NULL));
}

TEST_F(life, root_cannot_join_nobodys_communicator)
{
	uint8_t id[SNPU_COMM_ID_BYTES];
	int up[2], down[2], status;
	pid_t pid;

	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(down));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd;
		char c;

		close(up[0]);
		close(down[1]);
		if (snpu_drop_to_nobody())
			_exit(100);
		fd = comm_open(0);
		if (fd < 0 || comm_id(fd, id) ||
		    comm_join(fd, id, 2, 0, NULL) ||
		    write(up[1], id, sizeof(id)) != sizeof(id))
			_exit(101);
		/* Hold it until the parent has tried. */
		if (read(down[0], &c, 1) < 0)
			_exit(102);
		close(fd);
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	ASSERT_EQ((ssize_t)sizeof(id), read(up[0], id, sizeof(id)));
	EXPECT_EQ(-EACCES, comm_join(self->fd[0], id, 2, 1, NULL));
	close(down[1]);
	close(up[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* Nobody runs a whole collective of its own, across two files. */
TEST(nobody_runs_its_own_allreduce)
{
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct rgroup g;
		uint32_t v[64];
		unsigned int i;

		if (snpu_drop_to_nobody() || group_init(&g, 2, 2) ||
		    group_alloc(&g, sizeof(v), sizeof(v)))
			_exit(100);
		for (i = 0; i < 64; i++)
			v[i] = i;
		if (snpu_h2d(g.r[0].fd, g.r[0].send, v, sizeof(v)) ||
		    snpu_h2d(g.r[1].fd, g.r[1].send, v, sizeof(v)) ||
		    group_coll(&g, SNPU_COLL_ALLREDUCE, SNPU_DTYPE_I32,
			       SNPU_REDOP_SUM, 64, 0) ||
		    group_sync(&g, NULL) ||
		    snpu_d2h(g.r[1].fd, v, g.r[1].recv, sizeof(v)))
			_exit(101);
		for (i = 0; i < 64; i++)
			if (v[i] != 2 * i)
				_exit(102);
		group_fini(&g);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
