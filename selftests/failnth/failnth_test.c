// SPDX-License-Identifier: GPL-2.0
/*
 * Every allocating path of the driver with each of its allocations made
 * to fail in turn: the fail-nth technique of the kernel's iommufd
 * selftest. Writing N to /proc/self/task/<tid>/fail-nth makes the N-th
 * fault-injection site this thread reaches fail (slab and page
 * allocations here); reading it back gives 0 when the fault was injected.
 * For N = 1, 2, ... the call is made with the N-th site failing, until
 * the call gets through with no fault left to inject. Each failure must:
 *
 *   - return ENOMEM, or another errno the uapi header documents for the
 *     command (EFAULT for the page pinning of HOST_REGISTER);
 *   - change nothing: CTX_QUERY's counters, sysfs mem_used and contexts,
 *     the process's locked memory (VmLck) are as before, the struct is
 *     not written, and the object the call would have made (an address
 *     is the lowest free one, so the same every time; a handle is new
 *     every time, handles being handed out cyclically) does not exist;
 *   - leave a following identical call without injection succeeding
 *     exactly once: it gets that same address, or a handle never handed
 *     out before, and the counters move by exactly what one call moves
 *     them.
 *
 * A call that succeeds although a fault was injected (a site that has a
 * fallback) must be a real success too: its object is undone and the
 * state checked. Leaks are for kmemleak, which the debug tier scans after
 * the module is unloaded.
 *
 * The paths: MEM_ALLOC, HOST_ALLOC, mmap(2) of host memory,
 * HOST_REGISTER, STREAM_CREATE, EVENT_CREATE, OWNER_CREATE,
 * ATTACHED_STREAM_GET, SUBMIT, RING_SETUP (with and without SQPOLL),
 * open(2) of /dev/snpu0, and with the process snapshot (ABI 0.5, else
 * skipped) BG_REGISTER, SNAPSHOT_BACKUP and SNAPSHOT_RESTORE.
 *
 * Needs a kernel with CONFIG_FAULT_INJECTION, CONFIG_FAILSLAB,
 * CONFIG_FAIL_PAGE_ALLOC and CONFIG_FAULT_INJECTION_DEBUG_FS (the debug
 * kernel of `make check-debug`; Debian's kernel has none of them).
 * selftests/run_vm.sh runs this suite only when SNPU_TIER=debug; there a
 * kernel without fail-nth is a failure, not a skip.
 *
 * The fault sites' knobs in debugfs are set so that GFP_KERNEL, highmem
 * and order-0 allocations count (by default they are ignored), and so
 * that injected faults are not logged; the old values are put back.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "snpu_test.h"
#include "snpu_proc.h"
#include "snpu_ksft.h"

/* More sites than any path has: the loop must end before. */
#define MAX_NTH			20000
#define FAILNTH_TIMEOUT		1800
#define PAGE			4096UL
#define REG_PAGES		4

/* ---- fail-nth ------------------------------------------------------------ */

static int nth_fd = -1;

/* Arm the N-th fault site of this thread (0: disarm). */
static int nth_set(unsigned int n)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", n);

	return pwrite(nth_fd, buf, len, 0) == len ? 0 : -errno;
}

/* Return: 1 when the armed fault was injected, 0 when not, or -errno. */
static int nth_injected(void)
{
	char buf[16];
	ssize_t n = pread(nth_fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = 0;
	return strtoul(buf, NULL, 10) == 0;
}

/*
 * The debugfs knobs that make every allocation of ours a fault site, and
 * the console log level: each failed vmalloc logs a warning with a stack
 * and the memory state, slow on the VM's serial console (dmesg keeps it).
 */
static const struct knob {
	const char *path;
	const char *value;
} knobs[] = {
	{ "/proc/sys/kernel/printk", "4" },
	{ "/sys/kernel/debug/failslab/ignore-gfp-wait", "N" },
	{ "/sys/kernel/debug/failslab/verbose", "0" },
	{ "/sys/kernel/debug/fail_page_alloc/ignore-gfp-wait", "N" },
	{ "/sys/kernel/debug/fail_page_alloc/ignore-gfp-highmem", "N" },
	{ "/sys/kernel/debug/fail_page_alloc/min-order", "0" },
	{ "/sys/kernel/debug/fail_page_alloc/verbose", "0" },
};

#define NKNOBS	(sizeof(knobs) / sizeof(knobs[0]))

static char knob_saved[NKNOBS][32];

static int knob_rw(const char *path, char *old, size_t oldlen,
		   const char *value)
{
	ssize_t n;
	int fd;

	/* Some of them are stream files: a read and a write each. */
	if (old) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		n = read(fd, old, oldlen - 1);
		close(fd);
		if (n < 0)
			return -errno;
		old[n] = 0;
		old[strcspn(old, "\n")] = 0;
	}
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, value, strlen(value));
	close(fd);
	return n == (ssize_t)strlen(value) ? 0 : n < 0 ? -errno : -EIO;
}

/* ---- state that a failed call must leave alone ------------------------- */

struct state {
	struct snpu_ctx_query q;	/* of the main file */
	long long mem_used;		/* sysfs */
	long long contexts;		/* sysfs */
	long long vmlck;		/* kB, /proc/self/status */
	struct snpu_snapshot snap;	/* SNAPSHOT_STATE, if the kernel has it */
};

static bool has_snapshot;

static int state_get(int fd, struct state *s)
{
	int ret;

	memset(s, 0, sizeof(*s));
	ret = snpu_ctx_query(fd, &s->q);
	if (!ret)
		ret = snpu_sysfs_read("mem_used", &s->mem_used);
	if (!ret)
		ret = snpu_sysfs_read("contexts", &s->contexts);
	s->vmlck = snpu_proc_kb("/proc/self/status", "VmLck");
	if (!ret && has_snapshot) {
		s->snap.size = sizeof(s->snap);
		ret = snpu_ioc(fd, SNPU_IOC_SNAPSHOT_STATE, &s->snap);
	}
	return ret;
}

/* Return: NULL when equal, else the name of the first field that differs. */
static const char *state_diff(const struct state *a, const struct state *b)
{
	if (a->q.mem_used != b->q.mem_used)
		return "CTX_QUERY mem_used";
	if (a->q.host_used != b->q.host_used)
		return "CTX_QUERY host_used";
	if (a->q.streams != b->q.streams)
		return "CTX_QUERY streams";
	if (a->q.events != b->q.events)
		return "CTX_QUERY events";
	if (a->q.tasks != b->q.tasks)
		return "CTX_QUERY tasks";
	if (a->mem_used != b->mem_used)
		return "sysfs mem_used";
	if (a->contexts != b->contexts)
		return "sysfs contexts";
	if (a->vmlck != b->vmlck)
		return "VmLck";
	if (a->snap.state != b->snap.state)
		return "snapshot state";
	if (a->snap.bg_threads != b->snap.bg_threads)
		return "snapshot bg_threads";
	if (a->snap.image_bytes != b->snap.image_bytes)
		return "snapshot image_bytes";
	return NULL;
}

/* ---- the paths ------------------------------------------------------------- */

/*
 * One allocating path. @call makes the call once (0 or -errno) and sets
 * *@res to what names its result (handle, address, sequence number);
 * @undo takes the result away again; @absent checks that the object
 * @res0 (what the first successful call returned) does not exist.
 */
struct fn;

struct path {
	const char *name;
	int errs[4];		/* documented besides ENOMEM */
	int (*call)(struct fn *f, uint64_t *res);
	int (*undo)(struct fn *f, uint64_t res);
	int (*absent)(struct fn *f, uint64_t res0);
	bool same_res;		/* a retry gets the same result */
	bool new_res;		/* a retry gets a new handle (handles are
				 * handed out cyclically, never res0 again) */
	int (*settle)(struct fn *f);	/* after a success, before the state */
};

struct fn {
	int fd;			/* the main file */
	int fd2;		/* RING_SETUP: a fresh file per call */
	uint32_t stream;
	uint32_t owner;
	void *reg;		/* REG_PAGES for HOST_REGISTER */
	uint32_t host;		/* host_mmap: the host memory */
	uint64_t host_off;
	uint64_t submitted;	/* SUBMIT: the stream's count before */
	uint64_t buf;		/* SUBMIT: a device buffer of a page */
	bool wrote;		/* the call wrote its struct although failing */
	const char *anomaly;	/* a success that is not what it should be */
	uint32_t ring_flags;
};

/*
 * Bytes [@from, @to) of the call's struct are outputs that were zero on
 * input: a refused call must have left them so.
 */
static void check_unwritten(struct fn *f, const void *p, size_t to,
			    size_t from)
{
	const unsigned char *c = p;
	size_t i;

	for (i = from; i < to; i++)
		if (c[i])
			f->wrote = true;
}

static int mem_alloc_call(struct fn *f, uint64_t *res)
{
	struct snpu_mem_alloc a = { .size = sizeof(a), .bytes = 16 * PAGE + 100 };
	int ret = snpu_ioc(f->fd, SNPU_IOC_MEM_ALLOC, &a);

	if (ret)
		check_unwritten(f, &a, sizeof(a), offsetof(struct snpu_mem_alloc, addr));
	*res = a.addr;
	return ret;
}

static int mem_alloc_undo(struct fn *f, uint64_t res)
{
	return snpu_free(f->fd, res);
}

static int mem_alloc_absent(struct fn *f, uint64_t res0)
{
	return snpu_mem_query(f->fd, res0, NULL, NULL) == -EFAULT ? 0 : -EEXIST;
}

static int host_alloc_call(struct fn *f, uint64_t *res)
{
	struct snpu_host_alloc a = { .size = sizeof(a), .bytes = 5 * PAGE - 7 };
	int ret = snpu_ioc(f->fd, SNPU_IOC_HOST_ALLOC, &a);

	if (ret)
		check_unwritten(f, &a, sizeof(a), offsetof(struct snpu_host_alloc, handle));
	*res = a.handle;
	return ret;
}

static int host_undo(struct fn *f, uint64_t res)
{
	return snpu_host_free(f->fd, res);
}

/* No host memory with that handle: freeing it must fail. */
static int host_absent(struct fn *f, uint64_t res0)
{
	return snpu_host_free(f->fd, res0) == -ENOENT ? 0 : -EEXIST;
}

static int host_register_call(struct fn *f, uint64_t *res)
{
	struct snpu_host_register r = {
		.size = sizeof(r), .addr = (uintptr_t)f->reg,
		.bytes = REG_PAGES * PAGE,
	};
	int ret = snpu_ioc(f->fd, SNPU_IOC_HOST_REGISTER, &r);

	if (ret)
		check_unwritten(f, &r, sizeof(r), offsetof(struct snpu_host_register, handle));
	*res = r.handle;
	return ret;
}

/* mmap(2) of host memory: the range goes into the context's tree. */
static int host_mmap_call(struct fn *f, uint64_t *res)
{
	void *p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
		       f->fd, (off_t)f->host_off);

	*res = (uintptr_t)p;
	return p == MAP_FAILED ? -errno : 0;
}

static int host_alloc2(struct fn *f)
{
	struct snpu_host_alloc a = { .size = sizeof(a), .bytes = 2 * PAGE };
	int ret = snpu_ioc(f->fd, SNPU_IOC_HOST_ALLOC, &a);

	f->host = a.handle;
	f->host_off = a.mmap_offset;
	return ret;
}

/*
 * Host memory is mapped once for its whole life, so each success needs
 * new memory: unmap, free, allocate again (with a new handle).
 * That a failed mmap did not use up the once is shown by the retry.
 */
static int host_mmap_undo(struct fn *f, uint64_t res)
{
	int ret = munmap((void *)(uintptr_t)res, 2 * PAGE) ? -errno : 0;

	if (!ret)
		ret = snpu_host_free(f->fd, f->host);
	if (!ret)
		ret = host_alloc2(f);
	return ret;
}

static int stream_create_call(struct fn *f, uint64_t *res)
{
	struct snpu_stream_create c = { .size = sizeof(c), .priority = 1 };
	int ret = snpu_ioc(f->fd, SNPU_IOC_STREAM_CREATE, &c);

	if (ret)
		check_unwritten(f, &c, sizeof(c), offsetof(struct snpu_stream_create, handle));
	*res = c.handle;
	return ret;
}

static int stream_undo(struct fn *f, uint64_t res)
{
	return snpu_stream_destroy(f->fd, res, 0);
}

static int stream_absent(struct fn *f, uint64_t res0)
{
	struct snpu_stream_query q;

	return snpu_stream_query(f->fd, res0, &q) == -ENOENT ? 0 : -EEXIST;
}

static int event_create_call(struct fn *f, uint64_t *res)
{
	struct snpu_stream_create c = { .size = sizeof(c) };
	int ret = snpu_ioc(f->fd, SNPU_IOC_EVENT_CREATE, &c);

	if (ret)
		check_unwritten(f, &c, sizeof(c), offsetof(struct snpu_stream_create, handle));
	*res = c.handle;
	return ret;
}

static int event_undo(struct fn *f, uint64_t res)
{
	return snpu_event_destroy(f->fd, res);
}

static int event_absent(struct fn *f, uint64_t res0)
{
	struct snpu_event_query q;

	return snpu_event_query(f->fd, res0, &q) == -ENOENT ? 0 : -EEXIST;
}

static int owner_create_call(struct fn *f, uint64_t *res)
{
	struct snpu_stream_create c = { .size = sizeof(c), .priority = -1 };
	int ret = snpu_ioc(f->fd, SNPU_IOC_OWNER_CREATE, &c);

	if (ret)
		check_unwritten(f, &c, sizeof(c), offsetof(struct snpu_stream_create, handle));
	*res = c.handle;
	return ret;
}

static int owner_undo(struct fn *f, uint64_t res)
{
	return snpu_handle_op(f->fd, SNPU_IOC_OWNER_DESTROY, res, 0);
}

static int attached_get(int fd, uint32_t owner, const char *key,
			uint32_t *handle, uint32_t *created,
			struct snpu_attached_stream *out)
{
	struct snpu_attached_stream a = { .size = sizeof(a), .owner = owner };
	int ret;

	snprintf(a.key, sizeof(a.key), "%s", key);
	ret = snpu_ioc(fd, SNPU_IOC_ATTACHED_STREAM_GET, &a);
	if (handle)
		*handle = a.handle;
	if (created)
		*created = a.created;
	if (out)
		*out = a;
	return ret;
}

/* No owner with that handle: getting a stream of it is ENOENT. */
static int owner_absent(struct fn *f, uint64_t res0)
{
	return attached_get(f->fd, res0, "probe", NULL, NULL, NULL) == -ENOENT ?
		0 : -EEXIST;
}

/* The first get of a key creates the stream; created must say so. */
static int attached_call(struct fn *f, uint64_t *res)
{
	struct snpu_attached_stream a;
	uint32_t h, created;
	int ret = attached_get(f->fd, f->owner, "fail-nth", &h, &created, &a);

	if (ret)
		check_unwritten(f, &a, offsetof(struct snpu_attached_stream, pad),
				offsetof(struct snpu_attached_stream, handle));
	else if (created != 1)
		f->anomaly = "the key's stream existed already (created 0)";
	*res = h;
	return ret;
}

/* Attached streams go with their owner: destroy it, make a new one. */
static int attached_undo(struct fn *f, uint64_t res)
{
	uint64_t owner;
	int ret = owner_undo(f, f->owner);

	if (!ret)
		ret = owner_create_call(f, &owner);
	f->owner = owner;
	return ret;
}

static int submit_call(struct fn *f, uint64_t *res)
{
	struct snpu_task t[2] = {
		snpu_t_nop(f->stream),
		snpu_t_fill(f->stream, f->buf, PAGE, 0x01020304, 2),
	};
	struct snpu_submit s = {
		.size = sizeof(s), .count = 2, .task_size = sizeof(t[0]),
		.tasks = (uintptr_t)t,
	};
	int ret = snpu_ioc(f->fd, SNPU_IOC_SUBMIT, &s);

	if (ret)
		check_unwritten(f, &s, sizeof(s), offsetof(struct snpu_submit, seq));
	else if (s.seq != f->submitted + 2)
		f->anomaly = "the batch's sequence number is not the stream's next but one";
	*res = s.seq;
	return ret;
}

/* Queued work is not undone: wait for it, so that the state is stable. */
static int submit_settle(struct fn *f)
{
	int32_t err = 0;
	int ret = snpu_stream_sync(f->fd, f->stream, 10 * NS_PER_SEC, &err);

	return ret ?: err;
}

static int submit_undo(struct fn *f, uint64_t res)
{
	f->submitted = res;
	return 0;
}

/* Nothing of a failed batch was queued on the stream. */
static int submit_absent(struct fn *f, uint64_t res0)
{
	struct snpu_stream_query q;
	int ret = snpu_stream_query(f->fd, f->stream, &q);

	if (ret)
		return ret;
	return q.submitted == f->submitted ? 0 : -EEXIST;
}

/* RING_SETUP on a fresh file each time: rings go only with the file. */
static int ring_call(struct fn *f, uint64_t *res)
{
	struct snpu_ring_setup s = {
		.size = sizeof(s), .sq_entries = 8, .flags = f->ring_flags,
		.idle_ms = f->ring_flags ? 1 : 0,
	};
	int ret = snpu_ioc(f->fd2, SNPU_IOC_RING_SETUP, &s);

	if (ret)
		check_unwritten(f, &s, sizeof(s), offsetof(struct snpu_ring_setup, mmap_offset));
	*res = s.mmap_bytes;
	return ret;
}

static int ring_undo(struct fn *f, uint64_t res)
{
	int fd = snpu_open_dev();

	if (fd < 0)
		return fd;
	close(f->fd2);
	f->fd2 = fd;
	return 0;
}

/* No rings: their mmap is ENXIO. */
static int ring_absent(struct fn *f, uint64_t res0)
{
	void *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd2,
		       (off_t)SNPU_RING_MMAP_OFFSET);

	if (p != MAP_FAILED) {
		munmap(p, PAGE);
		return -EEXIST;
	}
	return errno == ENXIO ? 0 : -errno;
}

static int open_call(struct fn *f, uint64_t *res)
{
	int fd = open(SNPU_TEST_DEV, O_RDWR | O_CLOEXEC);

	*res = fd;
	return fd < 0 ? -errno : 0;
}

static int open_undo(struct fn *f, uint64_t res)
{
	return close((int)res) ? -errno : 0;
}

/* ---- process snapshot (ABI 0.5) --------------------------------------- */

static int snap(int fd, unsigned long cmd, struct snpu_snapshot *out)
{
	struct snpu_snapshot s = { .size = sizeof(s) };
	int ret = snpu_ioc(fd, cmd, &s);

	if (out)
		*out = s;
	return ret;
}

static int bg_register_call(struct fn *f, uint64_t *res)
{
	struct snpu_snapshot s;
	int ret = snap(f->fd, SNPU_IOC_BG_REGISTER, &s);

	*res = s.bg_threads;
	return ret;
}

static int bg_register_undo(struct fn *f, uint64_t res)
{
	return snap(f->fd, SNPU_IOC_BG_UNREGISTER, NULL);
}

/* Not registered: unregistering is ENOENT. */
static int bg_absent(struct fn *f, uint64_t res0)
{
	return snap(f->fd, SNPU_IOC_BG_UNREGISTER, NULL) == -ENOENT ? 0 : -EEXIST;
}

/* BACKUP from LOCKED: the image of the file's allocations and objects. */
static int backup_call(struct fn *f, uint64_t *res)
{
	struct snpu_snapshot s;
	int ret = snap(f->fd, SNPU_IOC_SNAPSHOT_BACKUP, &s);

	*res = s.image_bytes;
	return ret;
}

/* Back to LOCKED without an image: UNLOCK drops it, LOCK again. */
static int backup_undo(struct fn *f, uint64_t res)
{
	int ret = snap(f->fd, SNPU_IOC_SNAPSHOT_UNLOCK, NULL);

	return ret ?: snap(f->fd, SNPU_IOC_SNAPSHOT_LOCK, NULL);
}

/* RESTORE from BACKED_UP: the image's bytes written back. */
static int restore_call(struct fn *f, uint64_t *res)
{
	struct snpu_snapshot s;
	int ret = snap(f->fd, SNPU_IOC_SNAPSHOT_RESTORE, &s);

	*res = s.state;
	return ret;
}

/* Back to BACKED_UP: a new backup (the last image wins). */
static int restore_undo(struct fn *f, uint64_t res)
{
	return snap(f->fd, SNPU_IOC_SNAPSHOT_BACKUP, NULL);
}

/* ---- the loop ----------------------------------------------------------- */

FIXTURE(failnth) {
	struct fn f;
	bool knobs_set;
};

FIXTURE_SETUP(failnth)
{
	char path[64];
	unsigned int i;
	int ret;

	snprintf(path, sizeof(path), "/proc/self/task/%d/fail-nth", gettid());
	nth_fd = open(path, O_RDWR | O_CLOEXEC);
	ASSERT_GE(nth_fd, 0)
		TH_LOG("%s: %s: this kernel has no CONFIG_FAULT_INJECTION; the debug tier's kernel must",
		       path, strerror(errno));
	for (i = 0; i < NKNOBS; i++) {
		ret = knob_rw(knobs[i].path, knob_saved[i],
			      sizeof(knob_saved[i]), knobs[i].value);
		ASSERT_EQ(0, ret)
			TH_LOG("%s: %s (CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC, CONFIG_FAULT_INJECTION_DEBUG_FS?)",
			       knobs[i].path, strerror(-ret));
	}
	self->knobs_set = true;

	self->f.fd = snpu_open_dev();
	ASSERT_GE(self->f.fd, 0);
	self->f.fd2 = -1;
	{
		struct snpu_info info;

		ASSERT_EQ(0, snpu_get_info(self->f.fd, &info));
		has_snapshot = info.caps & SNPU_CAP_SNAPSHOT;
	}
	ASSERT_EQ(0, snpu_stream_create(self->f.fd, SNPU_PRIO_NORMAL,
					&self->f.stream));
	self->f.reg = mmap(NULL, REG_PAGES * PAGE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, self->f.reg);
	memset(self->f.reg, 0x5a, REG_PAGES * PAGE);
}

FIXTURE_TEARDOWN(failnth)
{
	unsigned int i;

	if (nth_fd >= 0)
		nth_set(0);
	if (self->knobs_set)
		for (i = 0; i < NKNOBS; i++)
			knob_rw(knobs[i].path, NULL, 0, knob_saved[i]);
	if (self->f.fd2 >= 0)
		close(self->f.fd2);
	if (self->f.fd >= 0)
		close(self->f.fd);
	if (nth_fd >= 0)
		close(nth_fd);
}

static bool errno_ok(const struct path *p, int err)
{
	unsigned int i;

	if (err == ENOMEM)
		return true;
	for (i = 0; i < 4 && p->errs[i]; i++)
		if (p->errs[i] == err)
			return true;
	return false;
}

/*
 * Run @p with its 1st, 2nd, ... fault site failing until it succeeds
 * with no fault injected. Every step is checked as the top of the file
 * says.
 */
static void fail_nth(struct __test_metadata *_metadata, struct fn *f,
		     const struct path *p)
{
	struct state base, made, before, after;
	unsigned int n, failures = 0, tolerated = 0;
	bool stopped = false;
	uint64_t res0, res;
	const char *diff;
	int ret, inj;

	/* Without injection: the result every retry must get, the state. */
	ASSERT_EQ(0, state_get(f->fd, &base));
	f->anomaly = NULL;
	ret = p->call(f, &res0);
	ASSERT_EQ(0, ret) TH_LOG("%s: %s", p->name, strerror(-ret));
	ASSERT_EQ(NULL, f->anomaly) TH_LOG("%s: %s", p->name, f->anomaly);
	if (p->settle)
		ASSERT_EQ(0, p->settle(f));
	ASSERT_EQ(0, state_get(f->fd, &made));
	ASSERT_EQ(0, p->undo(f, res0));
	ASSERT_EQ(0, state_get(f->fd, &after));
	diff = state_diff(&base, &after);
	ASSERT_EQ(NULL, diff) TH_LOG("%s: undo leaves %s changed", p->name, diff);

	for (n = 1; n < MAX_NTH; n++) {
		ASSERT_EQ(0, state_get(f->fd, &before));
		f->wrote = false;
		f->anomaly = NULL;
		res = 0;
		ASSERT_EQ(0, nth_set(n));
		ret = p->call(f, &res);
		inj = nth_injected();
		ASSERT_EQ(0, nth_set(0));
		ASSERT_GE(inj, 0);

		if (!ret) {
			/* Through, with a fault absorbed or none left. */
			EXPECT_EQ(NULL, f->anomaly)
				TH_LOG("%s, fault %u: %s", p->name, n, f->anomaly);
			if (p->settle)
				ASSERT_EQ(0, p->settle(f));
			if (p->same_res)
				EXPECT_EQ(res0, res)
					TH_LOG("%s, fault %u: result %#llx, not %#llx",
					       p->name, n, (unsigned long long)res,
					       (unsigned long long)res0);
			if (p->new_res)
				EXPECT_NE(res0, res)
					TH_LOG("%s, fault %u: handle %#llx again",
					       p->name, n, (unsigned long long)res);
			ASSERT_EQ(0, state_get(f->fd, &after));
			diff = state_diff(&made, &after);
			EXPECT_EQ(NULL, diff)
				TH_LOG("%s, fault %u: a success left %s unlike the first",
				       p->name, n, diff);
			ASSERT_EQ(0, p->undo(f, res));
			if (!inj)
				break;
			tolerated++;
			continue;
		}

		/* The call failed: with the fault, as documented, no trace. */
		failures++;
		EXPECT_TRUE(inj)
			TH_LOG("%s, fault %u: failed with %s and no fault injected",
			       p->name, n, strerror(-ret));
		EXPECT_TRUE(errno_ok(p, -ret))
			TH_LOG("%s, fault %u: %s is not documented", p->name, n,
			       strerrorname_np(-ret));
		EXPECT_FALSE(f->wrote)
			TH_LOG("%s, fault %u: the refused call wrote its struct",
			       p->name, n);
		ASSERT_EQ(0, state_get(f->fd, &after));
		diff = state_diff(&before, &after);
		EXPECT_EQ(NULL, diff)
			TH_LOG("%s, fault %u (%s): %s changed", p->name, n,
			       strerrorname_np(-ret), diff);
		if (p->absent)
			EXPECT_EQ(0, p->absent(f, res0))
				TH_LOG("%s, fault %u (%s): the object exists",
				       p->name, n, strerrorname_np(-ret));

		/* The same call without injection works, exactly once. */
		f->anomaly = NULL;
		ret = p->call(f, &res);
		ASSERT_EQ(0, ret)
			TH_LOG("%s, after fault %u: the retry failed: %s",
			       p->name, n, strerror(-ret));
		EXPECT_EQ(NULL, f->anomaly)
			TH_LOG("%s, after fault %u: %s", p->name, n, f->anomaly);
		if (p->settle)
			ASSERT_EQ(0, p->settle(f));
		if (p->same_res)
			EXPECT_EQ(res0, res)
				TH_LOG("%s, after fault %u: retry result %#llx, not %#llx",
				       p->name, n, (unsigned long long)res,
				       (unsigned long long)res0);
		if (p->new_res)
			EXPECT_NE(res0, res)
				TH_LOG("%s, after fault %u: handle %#llx again",
				       p->name, n, (unsigned long long)res);
		ASSERT_EQ(0, state_get(f->fd, &after));
		diff = state_diff(&made, &after);
		EXPECT_EQ(NULL, diff)
			TH_LOG("%s, after fault %u: the retry left %s unlike one call",
			       p->name, n, diff);
		ASSERT_EQ(0, p->undo(f, res));
		ASSERT_EQ(0, state_get(f->fd, &after));
		diff = state_diff(&base, &after);
		ASSERT_EQ(NULL, diff)
			TH_LOG("%s, after fault %u: %s does not come back",
			       p->name, n, diff);
		if (snpu_ksft_failed(_metadata)) {
			stopped = true;	/* the first failing site is enough */
			break;
		}
	}
	if (stopped) {
		printf("# %s: stopped at fault site %u\n", p->name, n);
		return;
	}
	ASSERT_LT(n, (unsigned int)MAX_NTH) TH_LOG("%s: still failing at fault %u", p->name, n);
	printf("# %s: %u fault site(s): %u failed the call cleanly, %u absorbed\n",
	       p->name, n - 1, failures, tolerated);
}

TEST_F_TIMEOUT(failnth, mem_alloc, FAILNTH_TIMEOUT)
{
	static const struct path p = {
		.name = "MEM_ALLOC",
		.call = mem_alloc_call,
		.undo = mem_alloc_undo,
		.absent = mem_alloc_absent,
		.same_res = true,
	};

	fail_nth(_metadata, &self->f, &p);
}

TEST_F_TIMEOUT(failnth, host_alloc, FAILNTH_TIMEOUT)
{
	static const struct path p = {
		.name = "HOST_ALLOC",
		.call = host_alloc_call,
		.undo = host_undo,
		.absent = host_absent,
		.new_res = true,
	};

	fail_nth(_metadata, &self->f, &p);
}

/* Not an ioctl, but it allocates: the range goes into the context's tree. */
TEST_F_TIMEOUT(failnth, host_mmap, FAILNTH_TIMEOUT)
{
	static const struct path p = {
		.name = "mmap of HOST_ALLOC memory",
		.call = host_mmap_call,
		.undo = host_mmap_undo,
	};

	ASSERT_EQ(0, host_alloc2(&self->f));
	fail_nth(_metadata, &self->f, &p);
}

TEST_F_TIMEOUT(failnth, host_register, FAILNTH_TIMEOUT)
{
	/* EFAULT: "or another error of the kernel's page pinning". */
	static const struct path p = {
		.name = "HOST_REGISTER",
		.errs = { EFAULT },
		.call = host_register_call,
		.undo = host_undo,
		.absent = host_absent,
		.new_res = true,
	};

	fail_nth(_metadata, &self->f, &p);
}

TEST_F_TIMEOUT(failnth, stream_create, FAILNTH_TIMEOUT)
{
	static const struct path p = {
		.name = "STREAM_CREATE",
		.call = stream_create_call,
		.undo = stream_undo,
		.absent = stream_absent,
		.new_res = true,
	};

	fail_nth(_metadata, &self->f, &p);
}

TEST_F_TIMEOUT(failnth, event_create, FAILNTH_TIMEOUT)
{
	static const struct path p = {
		.name = "EVENT_CREATE",
		.call = event_create_call,
		.undo = event_undo,
		.absent = event_absent,
		.new_res = true,
	};

	fail_nth(_metadata, &self->f, &p);
}

TEST_F_TIMEOUT(failnth, owner_create, FAILNTH_TIMEOUT)
{
	static const struct path p = {
		.name = "OWNER_CREATE",
		.call = owner_create_call,
		.undo = owner_undo,
		.absent = owner_absent,
		.new_res = true,
	};

	fail_nth(_metadata, &self->f, &p);
}

TEST_F_TIMEOUT(failnth, attached_stream_get, FAILNTH_TIMEOUT)
{
	static const struct path p = {
		.name = "ATTACHED_STREAM_GET",
		.call = attached_call,
		.undo = attached_undo,
		.absent = stream_absent,
		.new_res = true,
	};
	uint64_t owner;

	ASSERT_EQ(0, owner_create_call(&self->f, &owner));
	self->f.owner = owner;
	fail_nth(_metadata, &self->f, &p);
}

TEST_F_TIMEOUT(failnth, submit, FAILNTH_TIMEOUT)
{
	static const struct path p = {
		.name = "SUBMIT",
		.call = submit_call,
		.undo = submit_undo,
		.absent = submit_absent,
		.settle = submit_settle,
	};
	struct snpu_stream_query q;

	ASSERT_EQ(0, snpu_alloc(self->f.fd, PAGE, 0, &self->f.buf));
	ASSERT_EQ(0, snpu_stream_query(self->f.fd, self->f.stream, &q));
	self->f.submitted = q.submitted;
	fail_nth(_metadata, &self->f, &p);
}

TEST_F_TIMEOUT(failnth, ring_setup, FAILNTH_TIMEOUT)
{
	static const struct path p = {
		.name = "RING_SETUP",
		.call = ring_call,
		.undo = ring_undo,
		.absent = ring_absent,
		.same_res = true,
	};

	self->f.fd2 = snpu_open_dev();
	ASSERT_GE(self->f.fd2, 0);
	fail_nth(_metadata, &self->f, &p);
}

/* The poller is a kernel thread made by the call. */
TEST_F_TIMEOUT(failnth, ring_setup_sqpoll, FAILNTH_TIMEOUT)
{
	static const struct path p = {
		.name = "RING_SETUP with SQPOLL",
		.call = ring_call,
		.undo = ring_undo,
		.absent = ring_absent,
		.same_res = true,
	};

	self->f.fd2 = snpu_open_dev();
	ASSERT_GE(self->f.fd2, 0);
	self->f.ring_flags = SNPU_RING_SQPOLL;
	fail_nth(_metadata, &self->f, &p);
}

TEST_F_TIMEOUT(failnth, open, FAILNTH_TIMEOUT)
{
	static const struct path p = {
		.name = "open(2) of /dev/snpu0",
		.call = open_call,
		.undo = open_undo,
	};

	fail_nth(_metadata, &self->f, &p);
}

TEST_F_TIMEOUT(failnth, bg_register, FAILNTH_TIMEOUT)
{
	static const struct path p = {
		.name = "BG_REGISTER",
		.call = bg_register_call,
		.undo = bg_register_undo,
		.absent = bg_absent,
		.same_res = true,
	};

	if (!has_snapshot)
		SKIP(return, "the kernel has no SNPU_CAP_SNAPSHOT");
	fail_nth(_metadata, &self->f, &p);
}

/* The image: memory of its own, written from every allocation. */
TEST_F_TIMEOUT(failnth, snapshot_backup, FAILNTH_TIMEOUT)
{
	static const struct path p = {
		.name = "SNAPSHOT_BACKUP",
		.call = backup_call,
		.undo = backup_undo,
		.same_res = true,
	};
	uint64_t addr;

	if (!has_snapshot)
		SKIP(return, "the kernel has no SNPU_CAP_SNAPSHOT");
	ASSERT_EQ(0, snpu_alloc(self->f.fd, 3 * PAGE, 0, &addr));
	ASSERT_EQ(0, snpu_memset(self->f.fd, addr, 0x77, 3 * PAGE));
	ASSERT_EQ(0, snap(self->f.fd, SNPU_IOC_SNAPSHOT_LOCK, NULL));
	fail_nth(_metadata, &self->f, &p);
	EXPECT_EQ(0, snap(self->f.fd, SNPU_IOC_SNAPSHOT_UNLOCK, NULL));
}

TEST_F_TIMEOUT(failnth, snapshot_restore, FAILNTH_TIMEOUT)
{
	static const struct path p = {
		.name = "SNAPSHOT_RESTORE",
		.call = restore_call,
		.undo = restore_undo,
		.same_res = true,
	};
	uint64_t addr;

	if (!has_snapshot)
		SKIP(return, "the kernel has no SNPU_CAP_SNAPSHOT");
	ASSERT_EQ(0, snpu_alloc(self->f.fd, 3 * PAGE, 0, &addr));
	ASSERT_EQ(0, snpu_memset(self->f.fd, addr, 0x77, 3 * PAGE));
	ASSERT_EQ(0, snap(self->f.fd, SNPU_IOC_SNAPSHOT_LOCK, NULL));
	ASSERT_EQ(0, snap(self->f.fd, SNPU_IOC_SNAPSHOT_BACKUP, NULL));
	fail_nth(_metadata, &self->f, &p);
	EXPECT_EQ(0, snap(self->f.fd, SNPU_IOC_SNAPSHOT_UNLOCK, NULL));
}

TEST_HARNESS_MAIN
