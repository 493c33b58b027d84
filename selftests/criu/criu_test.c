// SPDX-License-Identifier: GPL-2.0
/*
 * CRIU with snpu_plugin.so (Documentation/checkpoint.rst, "CRIU"): a
 * process that uses device memory, driver-allocated host memory (mapped),
 * a stream and an event is dumped with `criu dump -t PID` (and is gone),
 * brought back with `criu restore` (on its device, or on another one
 * through SNPU_CRIU_DEVICE_MAP), checks its bytes and goes on working.
 *
 * The process is this program run as "criu_test workload DIR DEV": it
 * builds its state, writes DIR/ready, waits for DIR/go, then checks
 * everything and computes more, writing what it saw to DIR/result, and
 * exits 0 only if all of it was right. The test is its parent and a
 * child subreaper, so the restored process (criu restore -d) is its child
 * again and its exit status is the test's to read.
 *
 * Needs root (criu), the module with devices=4 (run_vm.sh), criu in PATH
 * (or /usr/sbin) and the plugin in SNPU_CRIU_PLUGIN_DIR (default
 * /opt/snpu/lib/criu); the guest set up by snpu-vm-criu (run_vm.sh).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "snpu.h"

#include "kselftest_harness.h"

#define N_I32		(256 * 1024)		/* 1 MiB of i32 */
#define BYTES		(N_I32 * sizeof(int32_t))
#define WAIT_MS		60000

static int32_t val_a(size_t i) { return (int32_t)(i * 2654435761u); }
static int32_t val_b(size_t i) { return (int32_t)(i * 7 + 3); }

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fputs(text, f);
	return fclose(f) ? -errno : 0;
}

static bool exists(const char *dir, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return !access(path, F_OK);
}

/* ---- the workload -------------------------------------------------------- */

struct wl {
	struct snpu_device *dev;
	uint64_t completed;
	struct snpu_host_buf host;
	uint64_t a, b, c, d;
	uint32_t stream, event;
	int32_t *buf;
};

static int add_i32(struct wl *w, uint64_t dst, uint64_t x, uint64_t y)
{
	struct snpu_kernel_arg args[3] = {
		snpu_arg_buf(dst, BYTES), snpu_arg_buf(x, BYTES),
		snpu_arg_buf(y, BYTES),
	};
	int ret;

	ret = snpu_launch(w->dev, w->stream, SNPU_KERNEL_ADD_I32, 4, args, 3);
	if (!ret)
		ret = snpu_event_record(w->dev, w->event, w->stream);
	if (!ret)
		ret = snpu_event_synchronize(w->dev, w->event, -1);
	return ret;
}

/* Build the state: a = host memory's bytes (async copy), b, c = a + b. */
static int wl_build(struct wl *w, unsigned int index)
{
	struct snpu_stream_query q;
	int32_t *h;
	size_t i;
	int ret;

	ret = snpu_open(index, 0, &w->dev);
	if (ret)
		return 10;
	if (snpu_host_alloc(w->dev, BYTES, &w->host) ||
	    snpu_stream_create(w->dev, 0, 0, &w->stream) ||
	    snpu_event_create(w->dev, &w->event) ||
	    snpu_mem_alloc(w->dev, BYTES, 0, 0, &w->a) ||
	    snpu_mem_alloc(w->dev, BYTES, 0, 0, &w->b) ||
	    snpu_mem_alloc(w->dev, BYTES, 0, 0, &w->c) ||
	    snpu_mem_alloc(w->dev, BYTES, 0, 0, &w->d))
		return 11;
	h = w->host.ptr;
	w->buf = malloc(BYTES);
	if (!w->buf)
		return 12;
	for (i = 0; i < N_I32; i++) {
		h[i] = val_a(i);
		w->buf[i] = val_b(i);
	}
	if (snpu_memcpy_async(w->dev, w->stream, SNPU_COPY_H2D, w->a,
			      (uint64_t)(uintptr_t)h, BYTES) ||
	    snpu_memcpy_h2d(w->dev, w->b, w->buf, BYTES))
		return 13;
	if (add_i32(w, w->c, w->a, w->b))
		return 14;
	q.size = sizeof(q);
	if (snpu_stream_query(w->dev, w->stream, &q))
		return 18;
	w->completed = q.completed;
	return 0;
}

/* After the restore: every byte as it was, and more work on the objects. */
static int wl_check(struct wl *w, const char *dir)
{
	struct snpu_stream_query q = { .size = sizeof(q) };
	int32_t *h = w->host.ptr;
	char text[256];
	struct stat st;
	size_t i;

	/* The host memory's mapping, at its address, with its bytes. */
	for (i = 0; i < N_I32; i++)
		if (h[i] != val_a(i))
			return 20;
	/* The stream's timeline, as it stood. */
	if (snpu_stream_query(w->dev, w->stream, &q) ||
	    q.completed != w->completed)
		return 19;
	/* Device memory: a and c (= a + b) read back. */
	if (snpu_memcpy_d2h(w->dev, w->buf, w->a, BYTES))
		return 21;
	for (i = 0; i < N_I32; i++)
		if (w->buf[i] != val_a(i))
			return 22;
	if (snpu_memcpy_d2h(w->dev, w->buf, w->c, BYTES))
		return 23;
	for (i = 0; i < N_I32; i++)
		if (w->buf[i] != (int32_t)((uint32_t)val_a(i) + (uint32_t)val_b(i)))
			return 24;
	/* The stream and the event go on: d = c + a, into the host memory. */
	if (add_i32(w, w->d, w->c, w->a))
		return 25;
	memset(h, 0, BYTES);
	if (snpu_memcpy_async(w->dev, w->stream, SNPU_COPY_D2H,
			      (uint64_t)(uintptr_t)h, w->d, BYTES) ||
	    snpu_event_record(w->dev, w->event, w->stream) ||
	    snpu_event_synchronize(w->dev, w->event, -1))
		return 26;
	for (i = 0; i < N_I32; i++)
		if (h[i] != (int32_t)(2 * (uint32_t)val_a(i) + (uint32_t)val_b(i)))
			return 27;
	if (snpu_stream_query(w->dev, w->stream, &q) ||
	    q.completed <= w->completed)
		return 28;
	if (fstat(snpu_device_fd(w->dev), &st))
		return 29;
	/* Which device the file is on now (the device map), the timeline. */
	snprintf(text, sizeof(text), "rdev %u:%u\n", major(st.st_rdev),
		 minor(st.st_rdev));
	return write_file(dir, "result", text) ? 30 : 0;
}

/* @mode: "one"; "two": a second file of the device; "reg": registered. */
static int workload(const char *dir, unsigned int index, const char *mode)
{
	struct snpu_device *extra = NULL;
	struct wl w = { 0 };
	uint32_t reg;
	void *page;
	int ret, i;

	ret = wl_build(&w, index);
	/* What the plugin refuses: two files of a device, registered memory. */
	if (!ret && !strcmp(mode, "two") && snpu_open(index, 0, &extra))
		ret = 15;
	if (!ret && !strcmp(mode, "reg") &&
	    (posix_memalign(&page, 4096, 4096) ||
	     snpu_host_register(w.dev, page, 4096, &reg)))
		ret = 15;
	if (ret)
		return ret;
	if (write_file(dir, "ready", "ready\n"))
		return 16;
	for (i = 0; !exists(dir, "go"); i++) {
		if (i > WAIT_MS * 2)
			return 17;
		usleep(500);
	}
	ret = wl_check(&w, dir);
	if (extra)
		snpu_close(extra);
	snpu_close(w.dev);
	return ret;
}

/* ---- the test ------------------------------------------------------------ */

FIXTURE(criu) {
	char dir[64];
	char images[96];
	const char *plugins;
	pid_t pid;
};

FIXTURE_SETUP(criu)
{
	const char *path = getenv("PATH");
	char newpath[512];

	ASSERT_EQ(0U, geteuid()) TH_LOG("criu runs as root");
	snprintf(newpath, sizeof(newpath), "%s:/usr/sbin:/sbin",
		 path ? path : "/bin:/usr/bin");
	setenv("PATH", newpath, 1);
	self->plugins = getenv("SNPU_CRIU_PLUGIN_DIR") ?: "/opt/snpu/lib/criu";
	strcpy(self->dir, "/tmp/criu_test.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->images, sizeof(self->images), "%s/images",
		 self->dir);
	ASSERT_EQ(0, mkdir(self->images, 0700));
	/* The restored process is re-parented to this one. */
	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0));
	self->pid = 0;
}

FIXTURE_TEARDOWN(criu)
{
	char cmd[128];

	if (self->pid > 0) {
		kill(self->pid, SIGKILL);
		waitpid(self->pid, NULL, 0);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", self->dir);
	if (system(cmd))
		TH_LOG("could not remove %s", self->dir);
}

/* Start the workload on snpu@index, setsid'd, stdio in files; wait ready. */
static pid_t start_workload(struct __test_metadata *_metadata,
			    const char *dir, unsigned int index, const char *mode)
{
	char idx[16];
	pid_t pid;
	int i;

	snprintf(idx, sizeof(idx), "%u", index);
	pid = fork();
	if (!pid) {
		char out[128];
		int fd;

		setsid();
		fd = open("/dev/null", O_RDONLY);
		dup2(fd, 0);
		snprintf(out, sizeof(out), "%s/workload.log", dir);
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 1);
		dup2(fd, 2);
		if (chdir(dir))
			_exit(126);
		execl("/proc/self/exe", "criu_test", "workload", dir, idx,
		      mode, NULL);
		_exit(127);
	}
	for (i = 0; pid > 0 && !exists(dir, "ready"); i++) {
		int st;

		if (i > WAIT_MS || waitpid(pid, &st, WNOHANG) == pid) {
			TH_LOG("the workload did not get ready");
			return -1;
		}
		usleep(1000);
	}
	return pid;
}

/* Run criu with @args (NULL-terminated) and @env_map; its exit status. */
static int run_criu(struct __test_metadata *_metadata, const char *dir,
		    const char *log, const char *map, const char *const *args)
{
	char logpath[160], cmd[224];
	const char *argv[24];
	int n = 0, st;
	pid_t pid;

	argv[n++] = "criu";
	while (*args && n < 20)
		argv[n++] = *args++;
	argv[n++] = "-o";
	argv[n++] = log;
	argv[n] = NULL;
	pid = fork();
	if (!pid) {
		if (map)
			setenv("SNPU_CRIU_DEVICE_MAP", map, 1);
		else
			unsetenv("SNPU_CRIU_DEVICE_MAP");
		execvp("criu", (char *const *)argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		snprintf(logpath, sizeof(logpath), "%s/images/%s", dir, log);
		snprintf(cmd, sizeof(cmd), "grep -E 'Error|snpu' %s | tail -n 15 >&2",
			 logpath);
		TH_LOG("criu %s failed (status %#x); %s:", argv[1], st, logpath);
		if (system(cmd))
			TH_LOG("no log");
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int criu_dump(struct __test_metadata *_metadata, const char *dir,
		     const char *plugins, pid_t pid, bool leave_running)
{
	char images[96], spid[16];
	const char *args[12] = { "dump", "-t", spid, "-D", images, "-L",
				 plugins, "-v4" };

	snprintf(spid, sizeof(spid), "%d", pid);
	snprintf(images, sizeof(images), "%s/images", dir);
	if (leave_running)
		args[8] = "--leave-running";
	return run_criu(_metadata, dir, "dump.log", NULL, args);
}

static int criu_restore(struct __test_metadata *_metadata, const char *dir,
			const char *plugins, const char *map)
{
	char images[96];
	const char *args[] = { "restore", "-d", "-D", images, "-L", plugins,
			       "-v4", NULL };

	snprintf(images, sizeof(images), "%s/images", dir);
	return run_criu(_metadata, dir, "restore.log", map, args);
}

/* Let the (restored) workload go on and collect what it reports. */
static int finish(struct __test_metadata *_metadata, const char *dir,
		  pid_t pid, char *result, size_t len)
{
	char path[160];
	int st, n;
	FILE *f;

	if (write_file(dir, "go", "go\n"))
		return -1;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		TH_LOG("the workload ended with status %#x (exit code %d: "
		       "see wl_build/wl_check)", st, WEXITSTATUS(st));
		return -1;
	}
	snprintf(path, sizeof(path), "%s/result", dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = (int)fread(result, 1, len - 1, f);
	fclose(f);
	result[n < 0 ? 0 : n] = 0;
	return 0;
}

static void expect_on_device(struct __test_metadata *_metadata,
			     const char *result, unsigned int index)
{
	char node[32], want[96];
	struct stat st;

	snprintf(node, sizeof(node), "/dev/snpu%u", index);
	ASSERT_EQ(0, stat(node, &st));
	snprintf(want, sizeof(want), "rdev %u:%u\n", major(st.st_rdev),
		 minor(st.st_rdev));
	EXPECT_STREQ(want, result);
}

/* dump (gone), restore: the process has its bytes and goes on */
static void dump_restore(struct __test_metadata *_metadata,
			 FIXTURE_DATA(criu) *self, unsigned int from,
			 unsigned int to, const char *map)
{
	char result[128];
	int st;

	self->pid = start_workload(_metadata, self->dir, from, "one");
	ASSERT_LT(0, self->pid);
	ASSERT_EQ(0, criu_dump(_metadata, self->dir, self->plugins, self->pid,
			       false));
	/* criu killed it: it is gone, its device files closed. */
	ASSERT_EQ(self->pid, waitpid(self->pid, &st, 0));
	ASSERT_TRUE(WIFSIGNALED(st));
	ASSERT_EQ(-1, kill(self->pid, 0));
	ASSERT_EQ(ESRCH, errno);

	ASSERT_EQ(0, criu_restore(_metadata, self->dir, self->plugins, map));
	/* Restored under its pid, a child of this subreaper again. */
	ASSERT_EQ(0, kill(self->pid, 0));
	ASSERT_EQ(0, finish(_metadata, self->dir, self->pid, result,
			    sizeof(result)));
	self->pid = 0;
	expect_on_device(_metadata, result, to);
}

TEST_F(criu, dump_and_restore_on_the_same_device)
{
	dump_restore(_metadata, self, 0, 0, NULL);
}

TEST_F(criu, restore_onto_another_device)
{
	dump_restore(_metadata, self, 1, 3, "1=3");
}

/* The image lands in CRIU's image directory, one per process. */
TEST_F(criu, image_in_the_image_directory)
{
	char path[160];
	struct stat st;

	self->pid = start_workload(_metadata, self->dir, 0, "one");
	ASSERT_LT(0, self->pid);
	ASSERT_EQ(0, criu_dump(_metadata, self->dir, self->plugins, self->pid,
			       false));
	snprintf(path, sizeof(path), "%s/snpu-%d.img", self->images,
		 self->pid);
	ASSERT_EQ(0, stat(path, &st));
	/* Four allocations and the host memory, 1 MiB each, and records. */
	EXPECT_LT(5 * BYTES, (size_t)st.st_size);
	EXPECT_GT(5 * BYTES + 65536, (size_t)st.st_size);
}

/* --leave-running: the process is unlocked after the dump and goes on. */
TEST_F(criu, leave_running_unlocks)
{
	struct snpu_device *dev;
	char result[128];
	uint32_t state;

	self->pid = start_workload(_metadata, self->dir, 2, "one");
	ASSERT_LT(0, self->pid);
	ASSERT_EQ(0, criu_dump(_metadata, self->dir, self->plugins, self->pid,
			       true));
	ASSERT_EQ(0, snpu_open(0, 0, &dev));
	EXPECT_EQ(0, snpu_ckpt_get_state(dev, self->pid, &state));
	EXPECT_EQ((uint32_t)SNPU_STATE_RUNNING, state);
	snpu_close(dev);
	ASSERT_EQ(0, finish(_metadata, self->dir, self->pid, result,
			    sizeof(result)));
	self->pid = 0;
	expect_on_device(_metadata, result, 2);
}

/*
 * A restore onto a device that is not there fails, leaves no process,
 * and the image still restores afterwards (nothing was left taken).
 */
TEST_F(criu, restore_onto_missing_device_fails_cleanly)
{
	char result[128];
	int st;

	self->pid = start_workload(_metadata, self->dir, 0, "one");
	ASSERT_LT(0, self->pid);
	ASSERT_EQ(0, criu_dump(_metadata, self->dir, self->plugins, self->pid,
			       false));
	ASSERT_EQ(self->pid, waitpid(self->pid, &st, 0));
	EXPECT_NE(0, criu_restore(_metadata, self->dir, self->plugins, "0=9"));
	/*
	 * CRIU killed the half-restored process; if it exited before it
	 * reaped it, this subreaper inherited it: reap it here.
	 */
	if (waitpid(self->pid, &st, 0) == self->pid)
		EXPECT_TRUE(WIFSIGNALED(st));
	EXPECT_EQ(-1, kill(self->pid, 0));
	ASSERT_EQ(0, criu_restore(_metadata, self->dir, self->plugins, NULL));
	ASSERT_EQ(0, finish(_metadata, self->dir, self->pid, result,
			    sizeof(result)));
	self->pid = 0;
	expect_on_device(_metadata, result, 0);
}

/*
 * Two files of one device cannot be told apart: the dump fails, and the
 * process, which CRIU resumes, is unlocked and goes on.
 */
TEST_F(criu, two_files_of_one_device_refused)
{
	struct snpu_device *dev;
	char result[128];
	uint32_t state;

	self->pid = start_workload(_metadata, self->dir, 0, "two");
	ASSERT_LT(0, self->pid);
	EXPECT_NE(0, criu_dump(_metadata, self->dir, self->plugins, self->pid,
			       false));
	ASSERT_EQ(0, kill(self->pid, 0));
	ASSERT_EQ(0, snpu_open(1, 0, &dev));
	EXPECT_EQ(0, snpu_ckpt_get_state(dev, self->pid, &state));
	EXPECT_EQ((uint32_t)SNPU_STATE_RUNNING, state);
	snpu_close(dev);
	ASSERT_EQ(0, finish(_metadata, self->dir, self->pid, result,
			    sizeof(result)));
	self->pid = 0;
	expect_on_device(_metadata, result, 0);
}

/*
 * Registered host memory cannot come back under CRIU (the restore would
 * pin the range before CRIU maps the process's memory there): the dump
 * is refused, and the process, unlocked, goes on.
 */
TEST_F(criu, registered_host_memory_refused)
{
	struct snpu_device *dev;
	char result[128];
	uint32_t state;

	self->pid = start_workload(_metadata, self->dir, 1, "reg");
	ASSERT_LT(0, self->pid);
	EXPECT_NE(0, criu_dump(_metadata, self->dir, self->plugins, self->pid,
			       false));
	ASSERT_EQ(0, kill(self->pid, 0));
	ASSERT_EQ(0, snpu_open(0, 0, &dev));
	EXPECT_EQ(0, snpu_ckpt_get_state(dev, self->pid, &state));
	EXPECT_EQ((uint32_t)SNPU_STATE_RUNNING, state);
	snpu_close(dev);
	ASSERT_EQ(0, finish(_metadata, self->dir, self->pid, result,
			    sizeof(result)));
	self->pid = 0;
	expect_on_device(_metadata, result, 1);
}

/* ---- the job: snpu-train dumped mid-run ---------------------------------- */

#define TRAIN		"/opt/snpu/bin/snpu-train"
#define TRAIN_DATA	"/opt/snpu/data/fashion-mnist-mini"
#define TRAIN_STEPS	"30"

/*
 * snpu-train on snpu@index, setsid'd, its output in DIR/NAME; @graph:
 * graph replay (its default), else op by op through the ring.
 */
static pid_t start_train(const char *dir, const char *name, unsigned int index,
			 bool graph)
{
	char out[128], dev[16];
	pid_t pid;

	snprintf(dev, sizeof(dev), "%u", index);
	pid = fork();
	if (!pid) {
		int fd;

		setsid();
		fd = open("/dev/null", O_RDONLY);
		dup2(fd, 0);
		snprintf(out, sizeof(out), "%s/%s", dir, name);
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 1);
		dup2(fd, 2);
		if (chdir(dir))
			_exit(126);
		execl(TRAIN, "snpu-train", "-d", TRAIN_DATA, "-n", TRAIN_STEPS,
		      "--subset", "512", "--test-subset", "512", "--svg", "-",
		      "--plain", "-D", dev, graph ? NULL : "--no-graph", NULL);
		_exit(127);
	}
	return pid;
}

/* The first line of DIR/NAME that starts with @prefix, else "". */
static void find_line(const char *dir, const char *name, const char *prefix,
		      char *line, size_t len)
{
	char path[160];
	FILE *f;

	line[0] = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, (int)len, f))
		if (!strncmp(line, prefix, strlen(prefix))) {
			fclose(f);
			return;
		}
	line[0] = 0;
	fclose(f);
}

static int wait_exit0(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* How many files of /dev/snpu@index process @pid has open. */
static int open_on(pid_t pid, unsigned int index)
{
	char dir[64], path[320], link[64], want[32];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	snprintf(want, sizeof(want), "/dev/snpu%u", index);
	d = opendir(dir);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		ssize_t len;

		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = 0;
		n += !strcmp(link, want);
	}
	closedir(d);
	return n;
}

/*
 * snpu-train uninterrupted, then again dumped by criu once it reported a
 * step (of 30: progress every step), restored (onto snpu@to), finishing with
 * the same weights bit for bit (its FNV-1a digest and last loss).
 */
static void train_job(struct __test_metadata *_metadata,
		      FIXTURE_DATA(criu) *self, unsigned int from,
		      unsigned int to, const char *map, bool graph)
{
	char want[160], got[160], step[160];
	int i, st;

	self->pid = start_train(self->dir, "plain.out", from, graph);
	ASSERT_LT(0, self->pid);
	ASSERT_EQ(0, wait_exit0(self->pid));
	self->pid = 0;
	find_line(self->dir, "plain.out", "weights: FNV-1a", want,
		  sizeof(want));
	ASSERT_NE(0, want[0]);

	self->pid = start_train(self->dir, "job.out", from, graph);
	ASSERT_LT(0, self->pid);
	for (i = 0; ; i++) {
		find_line(self->dir, "job.out", "step ", step, sizeof(step));
		if (step[0])
			break;
		ASSERT_NE(self->pid, waitpid(self->pid, &st, WNOHANG));
		ASSERT_GT(WAIT_MS, i);
		usleep(1000);
	}
	ASSERT_EQ(0, criu_dump(_metadata, self->dir, self->plugins, self->pid,
			       false));
	ASSERT_EQ(self->pid, waitpid(self->pid, &st, 0));
	ASSERT_TRUE(WIFSIGNALED(st));
	/* Dumped mid-run: no weights yet. */
	find_line(self->dir, "job.out", "weights: FNV-1a", got, sizeof(got));
	ASSERT_EQ(0, got[0]);
	TH_LOG("dumped after: %s", step);

	ASSERT_EQ(0, criu_restore(_metadata, self->dir, self->plugins, map));
	/* Its device file is on snpu@to now. */
	EXPECT_EQ(1, open_on(self->pid, to));
	if (from != to)
		EXPECT_EQ(0, open_on(self->pid, from));
	ASSERT_EQ(0, wait_exit0(self->pid));
	self->pid = 0;
	find_line(self->dir, "job.out", "weights: FNV-1a", got, sizeof(got));
	EXPECT_STREQ(want, got);
}

/* Op by op through the ring: the ring comes back with its indices. */
TEST_F_TIMEOUT(criu, train_ring_dumped_mid_run_ends_bit_identical, 600)
{
	train_job(_metadata, self, 0, 0, NULL, false);
}

/* Graph replay (the default), onto another device: graphs come back too. */
TEST_F_TIMEOUT(criu, train_graph_restored_onto_another_device_ends_bit_identical,
	       600)
{
	train_job(_metadata, self, 1, 2, "1=2", true);
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "workload"))
		return workload(argv[2], (unsigned int)atoi(argv[3]), argv[4]);
	return test_harness_run(argc, argv);
}
