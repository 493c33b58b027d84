// SPDX-License-Identifier: GPL-2.0
/*
 * The snpu statistics: <debugfs>/snpu/snpu0/stats and .../contexts,
 * checked against the work each test does itself (the tests run one at a
 * time, and nothing else uses the device meanwhile), and snpu-smi's JSON
 * output (-j), which reads the same figures through the generic netlink
 * family, parsed and checked against the contexts the test opened.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "snpu.h"

#include "kselftest_harness.h"
#include "json.h"

#define DEBUGFS		"/sys/kernel/debug"
#define STATS		DEBUGFS "/snpu/snpu0/stats"
#define CONTEXTS	DEBUGFS "/snpu/snpu0/contexts"
/* The module's default stream quota, which the VM runner loads with. */
#define SNPU_TEST_STREAMS	64

struct stats {
	long long tasks, failed, cqes, overflows, ready_depth, ready_max;
	long long blocks, busy_ns, lock_count, unlock_count;
};

static int debugfs_ready(void)
{
	if (!access(STATS, R_OK))
		return 0;
	if (mount("debugfs", DEBUGFS, "debugfs", 0, NULL) && errno != EBUSY)
		return -errno;
	return access(STATS, R_OK) ? -errno : 0;
}

/* Parse STATS ("name value" lines, snapshot_* lines). Return: 0 or -errno. */
static int read_stats(struct stats *s)
{
	char line[256], name[64];
	long long v, c;
	FILE *f;
	int ret = debugfs_ready();

	if (ret)
		return ret;
	memset(s, 0, sizeof(*s));
	f = fopen(STATS, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "snapshot_%63s count %lld", name, &c) == 2) {
			if (!strcmp(name, "lock"))
				s->lock_count = c;
			else if (!strcmp(name, "unlock"))
				s->unlock_count = c;
			continue;
		}
		if (sscanf(line, "%63s %lld", name, &v) != 2)
			continue;
		if (!strcmp(name, "tasks"))
			s->tasks = v;
		else if (!strcmp(name, "tasks_failed"))
			s->failed = v;
		else if (!strcmp(name, "cqes"))
			s->cqes = v;
		else if (!strcmp(name, "cq_overflows"))
			s->overflows = v;
		else if (!strcmp(name, "ready_depth"))
			s->ready_depth = v;
		else if (!strcmp(name, "ready_max"))
			s->ready_max = v;
		else if (!strcmp(name, "blocks"))
			s->blocks = v;
		else if (!strcmp(name, "busy_ns"))
			s->busy_ns = v;
	}
	fclose(f);
	return 0;
}

/* One line of CONTEXTS. */
struct ctx_line {
	unsigned long long id, mem, mem_limit, host, host_limit;
	unsigned long long graph_mem, graph_mem_limit, done;
	unsigned int streams, streams_limit, events, events_limit;
	unsigned int tasks, tasks_limit, graphs, graphs_limit;
	int pid;
};

/* The lines of CONTEXTS whose pid is @pid, at most @max. Return: count. */
static int read_contexts(int pid, struct ctx_line *out, int max)
{
	char line[512];
	int n = 0;
	FILE *f;

	if (debugfs_ready())
		return -1;
	f = fopen(CONTEXTS, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f) && n < max) {
		struct ctx_line c;

		if (line[0] == '#')
			continue;
		if (sscanf(line, "%llu %d %llu/%llu %llu/%llu %u/%u %u/%u %u/%u %u/%u %llu/%llu %llu",
			   &c.id, &c.pid, &c.mem, &c.mem_limit, &c.host,
			   &c.host_limit, &c.streams, &c.streams_limit,
			   &c.events, &c.events_limit, &c.tasks,
			   &c.tasks_limit, &c.graphs, &c.graphs_limit,
			   &c.graph_mem, &c.graph_mem_limit, &c.done) != 17)
			continue;
		if (c.pid == pid)
			out[n++] = c;
	}
	fclose(f);
	return n;
}


FIXTURE(stats) {
	struct snpu_device *dev;
	uint32_t s;
	uint64_t mem;
};

FIXTURE_SETUP(stats)
{
	ASSERT_EQ(0, debugfs_ready());
	ASSERT_EQ(0, snpu_open(0, 0, &self->dev));
	ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_NORMAL, 0,
					&self->s));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 1 << 20, 0, 0, &self->mem));
}

FIXTURE_TEARDOWN(stats)
{
	snpu_close(self->dev);
}

/* Tasks, failures and blocks count what ran; busy time covers the SPINs. */
TEST_F(stats, tasks_blocks_and_busy_time)
{
	struct snpu_kernel_arg spin = { .value = 100000 };
	struct snpu_kernel_arg fail = { .value = EIO };
	struct stats a, b;
	unsigned int i;

	ASSERT_EQ(0, read_stats(&a));
	for (i = 0; i < 10; i++)
		ASSERT_EQ(0, snpu_launch(self->dev, self->s, SNPU_KERNEL_SPIN,
					 3, &spin, 1));
	ASSERT_EQ(0, snpu_launch(self->dev, self->s, SNPU_KERNEL_NOP, 1,
				 NULL, 0));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	ASSERT_EQ(0, snpu_launch(self->dev, self->s, SNPU_KERNEL_FAIL, 1,
				 &fail, 1));
	EXPECT_EQ(-EIO, snpu_stream_synchronize(self->dev, self->s, -1));
	ASSERT_EQ(0, read_stats(&b));
	EXPECT_EQ(12, b.tasks - a.tasks);
	EXPECT_EQ(1, b.failed - a.failed);
	/* 10 launches of 3 blocks and the FAIL's one block ran on cores. */
	EXPECT_EQ(31, b.blocks - a.blocks);
	EXPECT_GE(b.busy_ns - a.busy_ns, 30LL * 100000);
	EXPECT_EQ(0, b.ready_depth);
}

/*
 * Works waiting for a core raise the high-water mark of the run queues:
 * 8 SPINs of 64 blocks of 1 s on 8 streams in one submit. A work stays
 * listed while it has blocks not handed out, so all 8 are listed for
 * minutes on the module's 4 cores, however slow the machine; they are
 * aborted at once.
 */
TEST_F(stats, ready_queue_high_water)
{
	struct snpu_kernel_arg spin = { .value = 1000000000 };
	struct snpu_task task[8];
	struct stats a, b;
	unsigned int i;
	uint32_t s[8];
	uint64_t seq;

	ASSERT_EQ(0, read_stats(&a));
	EXPECT_EQ(0, a.ready_depth);
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_NORMAL, 0,
						&s[i]));
		ASSERT_EQ(0, snpu_prep_launch(&task[i], s[i], SNPU_KERNEL_SPIN,
					      64, &spin, 1));
	}
	ASSERT_EQ(0, snpu_submit(self->dev, task, 8, &seq));
	ASSERT_EQ(0, read_stats(&b));
	for (i = 0; i < 8; i++)
		EXPECT_EQ(0, snpu_stream_abort(self->dev, s[i]));
	for (i = 0; i < 8; i++)
		EXPECT_EQ(-ECANCELED,
			  snpu_stream_synchronize(self->dev, s[i], -1));
	EXPECT_GE(b.ready_max, 8);
	EXPECT_EQ(8, b.ready_depth);
	ASSERT_EQ(0, read_stats(&b));
	EXPECT_EQ(0, b.ready_depth);
}

/* Completions through the ring: each one counted, the parked ones too. */
TEST_F(stats, cqes_and_overflow_parks)
{
	struct snpu_ring_setup p = { .sq_entries = 8, .cq_entries = 8 };
	struct snpu_ring ring;
	struct snpu_cqe *cqe;
	struct stats a, b;
	unsigned int i, r, seen = 0;

	ASSERT_EQ(0, snpu_ring_init_params(self->dev, &p, &ring));
	ASSERT_EQ(0, read_stats(&a));
	/* 16 memsets, none reaped: the CQ holds 8, 8 wait for room. */
	for (r = 0; r < 2; r++) {
		for (i = 0; i < 8; i++) {
			struct snpu_task *sqe = snpu_ring_get_sqe(&ring);

			ASSERT_NE(NULL, sqe);
			snpu_prep_memset(sqe, self->s, self->mem, 1, 64);
		}
		ASSERT_EQ(8, snpu_ring_submit(&ring));
	}
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	while (seen < 16) {
		ASSERT_EQ(0, snpu_ring_wait_cqe(&ring, &cqe));
		snpu_ring_cqe_seen(&ring, cqe);
		seen++;
	}
	ASSERT_EQ(0, read_stats(&b));
	EXPECT_EQ(16, b.cqes - a.cqes);
	EXPECT_EQ(8, b.overflows - a.overflows);
	snpu_ring_exit(&ring);
}

/* Snapshot transitions are counted per kind. */
TEST_F(stats, snapshot_counts)
{
	struct snpu_device *devs[1] = { self->dev };
	struct stats a, b;

	ASSERT_EQ(0, read_stats(&a));
	ASSERT_EQ(0, snpu_snapshot_lock(devs, 1, -1));
	ASSERT_EQ(0, snpu_snapshot_unlock(devs, 1));
	ASSERT_EQ(0, read_stats(&b));
	EXPECT_EQ(1, b.lock_count - a.lock_count);
	EXPECT_EQ(1, b.unlock_count - a.unlock_count);
}

/* Each context of this process, its usage against its quotas. */
TEST_F(stats, contexts_usage_against_quotas)
{
	struct snpu_device *dev2;
	struct snpu_ctx_query q;
	struct ctx_line c[4];
	uint32_t s2, ev;
	uint64_t mem2;
	int n;

	ASSERT_EQ(0, snpu_open(0, 0, &dev2));
	ASSERT_EQ(0, snpu_stream_create(dev2, SNPU_PRIO_NORMAL, 0, &s2));
	ASSERT_EQ(0, snpu_stream_create(dev2, SNPU_PRIO_NORMAL, 0, &s2));
	ASSERT_EQ(0, snpu_event_create(dev2, &ev));
	ASSERT_EQ(0, snpu_mem_alloc(dev2, 3 << 20, 0, 0, &mem2));
	ASSERT_EQ(0, snpu_launch(dev2, s2, SNPU_KERNEL_NOP, 1, NULL, 0));
	ASSERT_EQ(0, snpu_launch(dev2, s2, SNPU_KERNEL_NOP, 1, NULL, 0));
	ASSERT_EQ(0, snpu_stream_synchronize(dev2, s2, -1));
	ASSERT_EQ(0, snpu_ctx_query(dev2, &q));

	n = read_contexts(getpid(), c, 4);
	ASSERT_EQ(2, n);
	/* Opened in that order: ids grow. */
	EXPECT_LT(c[0].id, c[1].id);
	EXPECT_EQ(1U, c[0].streams);
	EXPECT_EQ(1ULL << 20, c[0].mem);
	EXPECT_EQ(2U, c[1].streams);
	EXPECT_EQ(1U, c[1].events);
	EXPECT_EQ(3ULL << 20, c[1].mem);
	EXPECT_EQ(2ULL, c[1].done);
	EXPECT_EQ(0U, c[1].tasks);
	EXPECT_EQ(q.mem_limit, c[1].mem_limit);
	EXPECT_EQ(q.streams_limit, c[1].streams_limit);
	EXPECT_EQ(q.events_limit, c[1].events_limit);
	EXPECT_EQ(q.tasks_limit, c[1].tasks_limit);
	EXPECT_EQ(q.host_limit, c[1].host_limit);
	EXPECT_EQ(q.graphs_limit, c[1].graphs_limit);

	snpu_close(dev2);
	EXPECT_EQ(1, read_contexts(getpid(), c, 4));
}

/* The JSON of "snpu-smi -j stats": this process's two contexts as made. */
TEST_F(stats, smi_json_stats_matches_contexts)
{
	struct snpu_device *dev2;
	struct jdoc *d = calloc(1, sizeof(*d));
	char *out = malloc(1 << 16);
	unsigned int i, mine = 0;
	uint32_t s2, ev;
	uint64_t mem2;
	long long ids[2] = { -1, -1 };

	ASSERT_NE(NULL, d);
	ASSERT_NE(NULL, out);
	ASSERT_EQ(0, snpu_open(0, 0, &dev2));
	ASSERT_EQ(0, snpu_stream_create(dev2, SNPU_PRIO_NORMAL, 0, &s2));
	ASSERT_EQ(0, snpu_stream_create(dev2, SNPU_PRIO_NORMAL, 0, &s2));
	ASSERT_EQ(0, snpu_stream_create(dev2, SNPU_PRIO_NORMAL, 0, &s2));
	ASSERT_EQ(0, snpu_event_create(dev2, &ev));
	ASSERT_EQ(0, snpu_mem_alloc(dev2, 2 << 20, 0, 0, &mem2));
	for (i = 0; i < 5; i++)
		ASSERT_EQ(0, snpu_launch(dev2, s2, SNPU_KERNEL_NOP, 1, NULL, 0));
	ASSERT_EQ(0, snpu_stream_synchronize(dev2, s2, -1));

	ASSERT_EQ(0, smi_json("-j stats", d, out, 1 << 16));
	EXPECT_EQ(0, jnum(d, "devices", 0, "index"));
	EXPECT_GE(jnum(d, "devices", 0, "tasks"), 5);
	EXPECT_NE(-1, jnum(d, "devices", 0, "cqes"));
	EXPECT_NE(-1, jnum(d, "devices", 0, "busy_ns"));
	for (i = 0; jnum(d, "contexts", i, "id") >= 0; i++) {
		if (jnum(d, "contexts", i, "pid") != getpid())
			continue;
		EXPECT_EQ(0, jnum(d, "contexts", i, "dev"));
		ASSERT_LT(mine, 2U);
		ids[mine] = jnum(d, "contexts", i, "id");
		if (mine == 0) {
			EXPECT_EQ(1, jnum(d, "contexts", i, "streams"));
			EXPECT_EQ(1 << 20, jnum(d, "contexts", i, "mem_used"));
			EXPECT_EQ(0, jnum(d, "contexts", i, "events"));
		} else {
			EXPECT_EQ(3, jnum(d, "contexts", i, "streams"));
			EXPECT_EQ(2 << 20, jnum(d, "contexts", i, "mem_used"));
			EXPECT_EQ(1, jnum(d, "contexts", i, "events"));
			EXPECT_EQ(5, jnum(d, "contexts", i, "tasks_done"));
			EXPECT_EQ(SNPU_TEST_STREAMS,
				  jnum(d, "contexts", i, "streams_limit"));
		}
		mine++;
	}
	EXPECT_EQ(2U, mine);
	EXPECT_LT(ids[0], ids[1]);
	snpu_close(dev2);
	free(d);
	free(out);
}

/*
 * Without CAP_SYS_ADMIN the statistics list the caller's own contexts
 * only: nobody, with a context of its own, sees that one and not the
 * test's (root's), which is open meanwhile.
 */
TEST_F(stats, smi_json_stats_unprivileged_own_only)
{
	pid_t kid = fork();
	int status;

	ASSERT_LE(0, kid);
	if (!kid) {
		struct jdoc *d = calloc(1, sizeof(*d));
		char *out = malloc(1 << 16);
		struct snpu_device *dev;
		unsigned int i, own = 0, other = 0;

		/* Become nobody (65534), no group, no capability. */
		if (!d || !out || setgroups(0, NULL) || setgid(65534) ||
		    setuid(65534) || snpu_open(0, 0, &dev))
			_exit(10);
		if (smi_json("-j stats", d, out, 1 << 16))
			_exit(11);
		for (i = 0; jnum(d, "contexts", i, "id") >= 0; i++) {
			if (jnum(d, "contexts", i, "pid") == getpid())
				own++;
			else
				other++;
		}
		if (jnum(d, "devices", 0, "index") != 0)
			_exit(12);
		_exit(own == 1 && other == 0 ? 0 : 13);
	}
	ASSERT_EQ(kid, waitpid(kid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("nobody's side failed at step %d (13: it saw another's context)",
		       WEXITSTATUS(status));
}

/* "snpu-smi -j" and "-j status": the device, and this process, parse. */
TEST_F(stats, smi_json_devices_and_status)
{
	struct jdoc *d = calloc(1, sizeof(*d));
	char *out = malloc(1 << 16);
	struct snpu_info info;
	unsigned int i, found = 0;
	char path[64];

	ASSERT_NE(NULL, d);
	ASSERT_NE(NULL, out);
	ASSERT_EQ(0, snpu_get_info(self->dev, &info));
	ASSERT_EQ(0, smi_json("-j", d, out, 1 << 16));
	EXPECT_EQ(0, jnum(d, "devices", 0, "index"));
	EXPECT_EQ((long long)info.cores, jnum(d, "devices", 0, "cores"));
	EXPECT_EQ(SNPU_ABI_MINOR, jnum(d, "devices", 0, "abi_minor"));
	EXPECT_EQ(-1, jnum(d, "devices", 1, "index"));

	ASSERT_EQ(0, smi_json("status -j", d, out, 1 << 16));
	EXPECT_EQ((long long)info.cores, jnum(d, "devices", 0, "cores"));
	EXPECT_GE(jnum(d, "devices", 0, "contexts"), 1);
	for (i = 0; jnum(d, "processes", i, "pid") >= 0; i++) {
		if (jnum(d, "processes", i, "pid") != getpid())
			continue;
		found++;
		EXPECT_EQ(1, jnum(d, "processes", i, "contexts"));
		snprintf(path, sizeof(path), "processes[%u].state", i);
		ASSERT_NE(NULL, jget(d, path));
		EXPECT_STREQ("RUNNING", jget(d, path));
	}
	EXPECT_EQ(1U, found);
	free(d);
	free(out);
}

/*
 * "snpu-smi -j top -n 2": one object per refresh; this process with its
 * context, streams and memory, and the tasks it completed between the
 * refreshes counted in its rate (tasks/s times the interval). The tasks
 * are submitted once the first refresh was read, and take far less than
 * the 3 s between the refreshes.
 */
TEST_F(stats, smi_json_top)
{
	struct jdoc *d = calloc(1, sizeof(*d));
	char *out = malloc(1 << 16), *second;
	unsigned int i, found = 0;
	char path[64];
	FILE *f;
	size_t n = 0, r;

	ASSERT_NE(NULL, d);
	ASSERT_NE(NULL, out);
	f = popen(SMI " -j top -i 3 -n 2", "r");
	ASSERT_NE(NULL, f);
	/* The first refresh is out: 50 tasks before the second. */
	ASSERT_NE(NULL, fgets(out, 1 << 16, f));
	n = strlen(out);
	for (i = 0; i < 50; i++)
		ASSERT_EQ(0, snpu_launch(self->dev, self->s, SNPU_KERNEL_NOP,
					 1, NULL, 0));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	while (n + 1 < (1 << 16) && (r = fread(out + n, 1, (1 << 16) - 1 - n, f)) > 0)
		n += r;
	out[n] = '\0';
	ASSERT_EQ(0, pclose(f));
	second = strchr(out, '\n');
	ASSERT_NE(NULL, second);
	*second++ = '\0';
	ASSERT_EQ(0, jparse(out, d));
	ASSERT_EQ(0, jparse(second, d));
	for (i = 0; jnum(d, "processes", i, "pid") >= 0; i++) {
		double rate, interval;

		if (jnum(d, "processes", i, "pid") != getpid())
			continue;
		found++;
		EXPECT_EQ(1, jnum(d, "processes", i, "contexts"));
		EXPECT_EQ(1, jnum(d, "processes", i, "streams"));
		EXPECT_EQ(1 << 20, jnum(d, "processes", i, "mem_used"));
		EXPECT_EQ(0, jnum(d, "processes", i, "tasks"));
		snprintf(path, sizeof(path), "processes[%u].tasks_per_s", i);
		ASSERT_NE(NULL, jget(d, path));
		rate = strtod(jget(d, path), NULL);
		ASSERT_NE(NULL, jget(d, "interval"));
		interval = strtod(jget(d, "interval"), NULL);
		/* 50 tasks in the interval, to the print's rounding. */
		EXPECT_GE(rate * interval, 49.5);
		EXPECT_LE(rate * interval, 50.5);
	}
	EXPECT_EQ(1U, found);
	free(d);
	free(out);
}

/* "snpu-smi -j stats -d 0": that device's counters only, no contexts. */
TEST_F(stats, smi_json_stats_one_device)
{
	struct jdoc *d = calloc(1, sizeof(*d));
	char *out = malloc(1 << 16);

	ASSERT_NE(NULL, d);
	ASSERT_NE(NULL, out);
	ASSERT_EQ(0, smi_json("-j stats -d 0", d, out, 1 << 16));
	EXPECT_EQ(0, jnum(d, "devices", 0, "index"));
	EXPECT_NE(-1, jnum(d, "devices", 0, "tasks"));
	EXPECT_NE(-1, jnum(d, "devices", 0, "ready_max"));
	EXPECT_EQ(-1, jnum(d, "devices", 1, "index"));
	EXPECT_EQ(-1, jnum(d, "contexts", 0, "id"));
	free(d);
	free(out);
}

/* Run "snpu-smi ARGS 2>&1": its exit status, its first line in @line. */
static int smi_run(const char *args, char *line, size_t len)
{
	char cmd[256];
	FILE *f;
	int st;

	snprintf(cmd, sizeof(cmd), SMI " %s 2>&1", args);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	line[0] = '\0';
	if (!fgets(line, len, f))
		line[0] = '\0';
	while (fgetc(f) != EOF)
		;
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A device that does not exist: status 1 and the kernel's errno. */
TEST_F(stats, smi_stats_no_such_device)
{
	char line[256];

	EXPECT_EQ(1, smi_run("stats -d 7", line, sizeof(line)));
	EXPECT_STREQ("snpu-smi: get: No such device\n", line);
}

/* --help: every subcommand on stdout, status 0; a bad option: status 2. */
TEST_F(stats, smi_help_and_bad_options)
{
	static const char *const subs[] = { " status", " stats", " top",
					    " events", " trace", "-j" };
	char cmd[64], buf[4096];
	unsigned int i;
	size_t n;
	FILE *f;

	f = popen(SMI " --help 2>/dev/null", "r");
	ASSERT_NE(NULL, f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	EXPECT_EQ(0, pclose(f));
	for (i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
		EXPECT_NE(NULL, strstr(buf, subs[i]));
	EXPECT_EQ(2, smi_run("top -i 0", buf, sizeof(buf)));
	EXPECT_EQ(2, smi_run("stats -x", buf, sizeof(buf)));
	snprintf(cmd, sizeof(cmd), "trace -f /nonexistent");
	EXPECT_EQ(1, smi_run(cmd, buf, sizeof(buf)));
}

TEST_HARNESS_MAIN
