// SPDX-License-Identifier: GPL-2.0
/*
 * fdinfo of snpu files (/proc/PID/fdinfo/FD, the keys of the kernel's
 * Documentation/gpu/drm-usage-stats.rst and snpu-'s own), the device's
 * busy time in sysfs, and what "snpu-smi top" makes of both. Each figure
 * is checked against the work the test does itself: the tests run one at
 * a time and nothing else uses the device meanwhile. Raw ioctls only
 * (common/snpu_test.h).
 */
#include <sys/wait.h>

#include "snpu_test.h"

#include "kselftest_harness.h"
#include "json.h"

/* The module's defaults in the VM: 4 cores. */
#define SNPU_TEST_CORES	4

/* One fdinfo, as parsed: every "key:\tvalue" line by its key. */
struct fdinfo {
	unsigned int n;
	struct { char key[64]; char val[128]; } kv[64];
};

/* Read /proc/@pid/fdinfo/@fd. Return: 0 or -errno. */
static int fdinfo_read(pid_t pid, int fd, struct fdinfo *fi)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)pid, fd);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	memset(fi, 0, sizeof(*fi));
	while (fgets(line, sizeof(line), f) && fi->n < 64) {
		char *colon = strchr(line, ':'), *v;

		if (!colon)
			continue;
		*colon = '\0';
		for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
			;
		v[strcspn(v, "\n")] = '\0';
		snprintf(fi->kv[fi->n].key, sizeof(fi->kv[0].key), "%.63s", line);
		snprintf(fi->kv[fi->n].val, sizeof(fi->kv[0].val), "%.127s", v);
		fi->n++;
	}
	fclose(f);
	return 0;
}

/* The value of @key, or NULL. */
static const char *fdinfo_get(const struct fdinfo *fi, const char *key)
{
	unsigned int i;

	for (i = 0; i < fi->n; i++)
		if (!strcmp(fi->kv[i].key, key))
			return fi->kv[i].val;
	return NULL;
}

/* The number that starts the value of @key, or -1 when it is missing. */
static long long fdinfo_num(const struct fdinfo *fi, const char *key)
{
	const char *v = fdinfo_get(fi, key);

	return v ? strtoll(v, NULL, 10) : -1;
}

/* Become nobody (65534): no group, no capability. Return: 0 or -1. */
static int become_nobody(void)
{
	return setgroups(0, NULL) || setgid(65534) || setuid(65534) ? -1 : 0;
}

FIXTURE(fdinfo) {
	int fd;
	uint32_t s;
};

FIXTURE_SETUP(fdinfo)
{
	self->fd = snpu_open_dev();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->s));
}

FIXTURE_TEARDOWN(fdinfo)
{
	close(self->fd);
}

/* The drm keys and values of a fresh context, and the snpu- keys. */
TEST_F(fdinfo, keys_of_a_new_context)
{
	struct fdinfo fi;
	const char *v;

	ASSERT_EQ(0, fdinfo_read(getpid(), self->fd, &fi));
	ASSERT_NE(NULL, fdinfo_get(&fi, "drm-driver"));
	EXPECT_STREQ("snpu", fdinfo_get(&fi, "drm-driver"));
	EXPECT_LT(0, fdinfo_num(&fi, "drm-client-id"));
	v = fdinfo_get(&fi, "drm-engine-compute");
	ASSERT_NE(NULL, v);
	EXPECT_EQ(0, fdinfo_num(&fi, "drm-engine-compute"));
	EXPECT_NE(NULL, strstr(v, " ns"));
	EXPECT_EQ(SNPU_TEST_CORES,
		  fdinfo_num(&fi, "drm-engine-capacity-compute"));
	EXPECT_EQ(0, fdinfo_num(&fi, "drm-total-device"));
	EXPECT_EQ(0, fdinfo_num(&fi, "drm-resident-device"));
	EXPECT_EQ(0, fdinfo_num(&fi, "drm-total-host"));
	EXPECT_EQ(0, fdinfo_num(&fi, "drm-resident-host"));
	ASSERT_NE(NULL, fdinfo_get(&fi, "snpu-device"));
	EXPECT_STREQ("snpu0", fdinfo_get(&fi, "snpu-device"));
	EXPECT_EQ((long long)SNPU_TEST_MEM_TOTAL,
		  fdinfo_num(&fi, "snpu-mem-limit"));
	EXPECT_EQ((long long)SNPU_TEST_HOST_LIMIT,
		  fdinfo_num(&fi, "snpu-host-limit"));
	ASSERT_NE(NULL, fdinfo_get(&fi, "snpu-streams"));
	EXPECT_STREQ("1/64", fdinfo_get(&fi, "snpu-streams"));
	EXPECT_EQ(0, fdinfo_num(&fi, "snpu-events"));
	EXPECT_EQ(0, fdinfo_num(&fi, "snpu-tasks"));
	EXPECT_EQ(0, fdinfo_num(&fi, "snpu-tasks-done"));
	EXPECT_EQ(0, fdinfo_num(&fi, "snpu-graphs"));
	EXPECT_EQ(0, fdinfo_num(&fi, "snpu-graph-mem"));
}

/* Every file has its own client id; a dup of the fd shares it. */
TEST_F(fdinfo, client_id_per_file_shared_by_dup)
{
	struct fdinfo a, b, c;
	int other = snpu_open_dev(), dup_fd = dup(self->fd);

	ASSERT_LE(0, other);
	ASSERT_LE(0, dup_fd);
	ASSERT_EQ(0, fdinfo_read(getpid(), self->fd, &a));
	ASSERT_EQ(0, fdinfo_read(getpid(), other, &b));
	ASSERT_EQ(0, fdinfo_read(getpid(), dup_fd, &c));
	EXPECT_NE(fdinfo_num(&a, "drm-client-id"),
		  fdinfo_num(&b, "drm-client-id"));
	EXPECT_EQ(fdinfo_num(&a, "drm-client-id"),
		  fdinfo_num(&c, "drm-client-id"));
	close(dup_fd);
	close(other);
}

/*
 * drm-engine-compute grows by at least the SPINs' time on the cores (3
 * blocks of 20 ms each, twice), and by no more than the cores could run
 * meanwhile; another file's work is not this one's.
 */
TEST_F(fdinfo, engine_compute_grows_with_launches)
{
	struct snpu_task spin = snpu_t_spin(self->s, 20 * NS_PER_MS, 3);
	int other = snpu_open_dev();
	struct fdinfo a, b, o;
	long long grown;
	uint64_t t0, t1;

	ASSERT_LE(0, other);
	ASSERT_EQ(0, fdinfo_read(getpid(), self->fd, &a));
	t0 = snpu_now_ns();
	ASSERT_EQ(0, snpu_submit1(self->fd, spin));
	ASSERT_EQ(0, snpu_submit1(self->fd, spin));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, -1, NULL));
	t1 = snpu_now_ns();
	ASSERT_EQ(0, fdinfo_read(getpid(), self->fd, &b));
	ASSERT_EQ(0, fdinfo_read(getpid(), other, &o));
	grown = fdinfo_num(&b, "drm-engine-compute") -
		fdinfo_num(&a, "drm-engine-compute");
	EXPECT_GE(grown, 6 * 20 * NS_PER_MS);
	EXPECT_LE(grown, (long long)(t1 - t0) * SNPU_TEST_CORES);
	EXPECT_EQ(2, fdinfo_num(&b, "snpu-tasks-done") -
		     fdinfo_num(&a, "snpu-tasks-done"));
	EXPECT_EQ(0, fdinfo_num(&o, "drm-engine-compute"));
	close(other);
}

/* Short tasks run back to back on a stream (chained) count too. */
TEST_F(fdinfo, engine_compute_counts_chained_tasks)
{
	struct snpu_task t[64];
	struct fdinfo a, b;
	uint64_t addr;
	unsigned int i;

	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &addr));
	for (i = 0; i < 64; i++)
		t[i] = snpu_t_fill(self->s, addr, 4096, i, 1);
	ASSERT_EQ(0, fdinfo_read(getpid(), self->fd, &a));
	ASSERT_EQ(0, snpu_submit(self->fd, t, 64, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, -1, NULL));
	ASSERT_EQ(0, fdinfo_read(getpid(), self->fd, &b));
	EXPECT_LT(fdinfo_num(&a, "drm-engine-compute"),
		  fdinfo_num(&b, "drm-engine-compute"));
	EXPECT_EQ(64, fdinfo_num(&b, "snpu-tasks-done") -
		      fdinfo_num(&a, "snpu-tasks-done"));
}

/* drm-total-device and -resident-device follow allocations and frees. */
TEST_F(fdinfo, device_memory_follows_alloc_and_free)
{
	struct fdinfo a, b, c;
	uint64_t addr;

	ASSERT_EQ(0, fdinfo_read(getpid(), self->fd, &a));
	ASSERT_EQ(0, snpu_alloc(self->fd, 1 << 20, 0, &addr));
	ASSERT_EQ(0, fdinfo_read(getpid(), self->fd, &b));
	EXPECT_EQ(1 << 20, fdinfo_num(&b, "drm-total-device") -
			   fdinfo_num(&a, "drm-total-device"));
	EXPECT_EQ(1 << 20, fdinfo_num(&b, "drm-resident-device") -
			   fdinfo_num(&a, "drm-resident-device"));
	ASSERT_EQ(0, snpu_free(self->fd, addr));
	ASSERT_EQ(0, fdinfo_read(getpid(), self->fd, &c));
	EXPECT_EQ(fdinfo_num(&a, "drm-total-device"),
		  fdinfo_num(&c, "drm-total-device"));
	EXPECT_EQ(fdinfo_num(&a, "drm-resident-device"),
		  fdinfo_num(&c, "drm-resident-device"));
}

/* drm-total-host and -resident-host count driver-allocated host memory. */
TEST_F(fdinfo, host_memory_follows_alloc_and_free)
{
	struct fdinfo a, b, c;
	uint64_t off;
	uint32_t h;

	ASSERT_EQ(0, fdinfo_read(getpid(), self->fd, &a));
	ASSERT_EQ(0, snpu_host_alloc(self->fd, 1 << 16, &h, &off));
	ASSERT_EQ(0, fdinfo_read(getpid(), self->fd, &b));
	EXPECT_EQ(1 << 16, fdinfo_num(&b, "drm-total-host") -
			   fdinfo_num(&a, "drm-total-host"));
	EXPECT_EQ(1 << 16, fdinfo_num(&b, "drm-resident-host") -
			   fdinfo_num(&a, "drm-resident-host"));
	ASSERT_EQ(0, snpu_host_free(self->fd, h));
	ASSERT_EQ(0, fdinfo_read(getpid(), self->fd, &c));
	EXPECT_EQ(fdinfo_num(&a, "drm-total-host"),
		  fdinfo_num(&c, "drm-total-host"));
}

/* The snpu- counts follow streams and events. */
TEST_F(fdinfo, streams_and_events_counted)
{
	struct fdinfo fi;
	uint32_t e, s2;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &s2));
	ASSERT_EQ(0, snpu_event_create(self->fd, &e));
	ASSERT_EQ(0, fdinfo_read(getpid(), self->fd, &fi));
	ASSERT_NE(NULL, fdinfo_get(&fi, "snpu-streams"));
	EXPECT_STREQ("2/64", fdinfo_get(&fi, "snpu-streams"));
	ASSERT_NE(NULL, fdinfo_get(&fi, "snpu-events"));
	EXPECT_STREQ("1/1024", fdinfo_get(&fi, "snpu-events"));
}

/* The sysfs busy_ns of the device grows by at least the SPIN's time. */
TEST_F(fdinfo, sysfs_busy_ns_grows)
{
	struct snpu_task spin = snpu_t_spin(self->s, 20 * NS_PER_MS, 2);
	long long a = 0, b = 0;

	ASSERT_EQ(0, snpu_sysfs_read("busy_ns", &a));
	ASSERT_EQ(0, snpu_submit1(self->fd, spin));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, -1, NULL));
	ASSERT_EQ(0, snpu_sysfs_read("busy_ns", &b));
	EXPECT_GE(b - a, 2 * 20 * NS_PER_MS);
}

/*
 * An unprivileged user reads its own file's fdinfo, whose figures move
 * with its work, and not another user's (the proc code's ptrace check).
 */
TEST_F(fdinfo, unprivileged_reads_its_own)
{
	pid_t kid, root_pid = getpid();
	int status;

	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid) {
		struct fdinfo a, b;
		struct snpu_task spin;
		uint64_t addr;
		uint32_t s;
		int fd;

		if (become_nobody())
			_exit(10);
		fd = snpu_open_dev();
		if (fd < 0 || snpu_stream_create(fd, 0, &s))
			_exit(11);
		if (fdinfo_read(getpid(), fd, &a))
			_exit(12);
		spin = snpu_t_spin(s, 10 * NS_PER_MS, 1);
		if (snpu_alloc(fd, 1 << 20, 0, &addr) ||
		    snpu_submit1(fd, spin) || snpu_stream_sync(fd, s, -1, NULL))
			_exit(13);
		if (fdinfo_read(getpid(), fd, &b))
			_exit(14);
		if (strcmp(fdinfo_get(&b, "drm-driver") ?: "", "snpu"))
			_exit(15);
		if (fdinfo_num(&b, "drm-engine-compute") -
		    fdinfo_num(&a, "drm-engine-compute") < 10 * NS_PER_MS)
			_exit(16);
		if (fdinfo_num(&b, "drm-total-device") -
		    fdinfo_num(&a, "drm-total-device") != 1 << 20)
			_exit(17);
		/* root's file is not nobody's to read. */
		if (fdinfo_read(root_pid, self->fd, &a) != -EACCES)
			_exit(18);
		_exit(0);
	}
	ASSERT_EQ(kid, waitpid(kid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("nobody's side failed at step %d", WEXITSTATUS(status));
}

/*
 * "snpu-smi -j top": the device's busy share and this process's compute
 * time, from sysfs and fdinfo, over a refresh with 3 blocks of SPIN.
 */
TEST_F(fdinfo, smi_top_shows_compute)
{
	struct snpu_task spin = snpu_t_spin(self->s, 100 * NS_PER_MS, 3);
	struct jdoc *d = calloc(1, sizeof(*d));
	char *out = malloc(1 << 16), *second, path[64];
	unsigned int i, found = 0;
	size_t n, r;
	FILE *f;

	ASSERT_NE(NULL, d);
	ASSERT_NE(NULL, out);
	f = popen(SMI " -j top -i 2 -n 2", "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(out, 1 << 16, f));
	n = strlen(out);
	ASSERT_EQ(0, snpu_submit1(self->fd, spin));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, -1, NULL));
	while (n + 1 < (1 << 16) &&
	       (r = fread(out + n, 1, (1 << 16) - 1 - n, f)) > 0)
		n += r;
	out[n] = '\0';
	ASSERT_EQ(0, pclose(f));
	second = strchr(out, '\n');
	ASSERT_NE(NULL, second);
	*second++ = '\0';
	ASSERT_EQ(0, jparse(second, d));
	ASSERT_NE(NULL, jget(d, "devices[0].busy_pct"));
	EXPECT_LT(0.0, strtod(jget(d, "devices[0].busy_pct"), NULL));
	EXPECT_LE(strtod(jget(d, "devices[0].busy_pct"), NULL), 100.0);
	for (i = 0; jnum(d, "processes", i, "pid") >= 0; i++) {
		if (jnum(d, "processes", i, "pid") != getpid())
			continue;
		found++;
		EXPECT_LE(3 * 100 * NS_PER_MS,
			  jnum(d, "processes", i, "compute_ns"));
		snprintf(path, sizeof(path), "processes[%u].compute_pct", i);
		ASSERT_NE(NULL, jget(d, path));
		EXPECT_LT(0.0, strtod(jget(d, path), NULL));
	}
	EXPECT_EQ(1U, found);
	free(d);
	free(out);
}

TEST_HARNESS_MAIN
