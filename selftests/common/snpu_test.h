/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Raw-ioctl helpers shared by the snpu runtime selftests (memory, stream,
 * kernels, stress). They deliberately do not use libsnpu: every call is
 * the ioctl(2) of uapi/linux/snpu.h with a zeroed, fully sized argument.
 *
 * Every helper returns 0 (or a non-negative value where documented) or a
 * negative errno; none of them asserts, so they are safe to call from
 * threads other than the harness's test thread.
 */
#ifndef _SNPU_TEST_H
#define _SNPU_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/snpu.h>

#define SNPU_TEST_DEV		"/dev/snpu0"
#define SNPU_TEST_SYSFS		"/sys/class/misc/snpu0/"

/* Default module parameters the VM runner loads the module with. */
#define SNPU_TEST_MEM_TOTAL	(256ULL << 20)
#define SNPU_TEST_STREAMS	64
#define SNPU_TEST_EVENTS	1024
#define SNPU_TEST_TASKS		4096
#define SNPU_TEST_HOST_LIMIT	(256ULL << 20)

#define NS_PER_MS		1000000LL
#define NS_PER_SEC		1000000000LL

/* Return: 0 or -errno; ioctl(2) of @cmd on @fd with @arg. */
static inline int snpu_ioc(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

/* Return: an fd of /dev/snpu0 or -errno. */
static inline int snpu_open_dev(void)
{
	int fd = open(SNPU_TEST_DEV, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static inline uint64_t snpu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

/* ---- device and context ------------------------------------------------ */

static inline int snpu_get_info(int fd, struct snpu_info *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	return snpu_ioc(fd, SNPU_IOC_GET_INFO, info);
}

static inline int snpu_ctx_query(int fd, struct snpu_ctx_query *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	return snpu_ioc(fd, SNPU_IOC_CTX_QUERY, q);
}

/*
 * Read a decimal attribute of /sys/class/misc/snpu0/.
 * Return: 0 or -errno; *@val set on success.
 */
static inline int snpu_sysfs_read(const char *attr, long long *val)
{
	char path[256], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), SNPU_TEST_SYSFS "%s", attr);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = 0;
	*val = strtoll(buf, NULL, 10);
	return 0;
}

/* ---- device memory ----------------------------------------------------- */

static inline int snpu_alloc(int fd, uint64_t bytes, uint64_t align,
			     uint64_t *addr)
{
	struct snpu_mem_alloc a = {
		.size = sizeof(a), .bytes = bytes, .align = align,
	};
	int ret = snpu_ioc(fd, SNPU_IOC_MEM_ALLOC, &a);

	if (!ret)
		*addr = a.addr;
	return ret;
}

static inline int snpu_free(int fd, uint64_t addr)
{
	struct snpu_mem_free f = { .size = sizeof(f), .addr = addr };

	return snpu_ioc(fd, SNPU_IOC_MEM_FREE, &f);
}

static inline int snpu_mem_query(int fd, uint64_t addr, uint64_t *base,
				 uint64_t *bytes)
{
	struct snpu_mem_query q = { .size = sizeof(q), .addr = addr };
	int ret = snpu_ioc(fd, SNPU_IOC_MEM_QUERY, &q);

	if (!ret) {
		if (base)
			*base = q.base;
		if (bytes)
			*bytes = q.bytes;
	}
	return ret;
}

static inline int snpu_copy(int fd, uint32_t dir, uint64_t dst, uint64_t src,
			    uint64_t bytes)
{
	struct snpu_mem_copy c = {
		.size = sizeof(c), .dir = dir, .dst = dst, .src = src,
		.bytes = bytes,
	};

	return snpu_ioc(fd, SNPU_IOC_MEM_COPY, &c);
}

static inline int snpu_h2d(int fd, uint64_t dst, const void *src,
			   uint64_t bytes)
{
	return snpu_copy(fd, SNPU_COPY_H2D, dst, (uintptr_t)src, bytes);
}

static inline int snpu_d2h(int fd, void *dst, uint64_t src, uint64_t bytes)
{
	return snpu_copy(fd, SNPU_COPY_D2H, (uintptr_t)dst, src, bytes);
}

static inline int snpu_d2d(int fd, uint64_t dst, uint64_t src, uint64_t bytes)
{
	return snpu_copy(fd, SNPU_COPY_D2D, dst, src, bytes);
}

static inline int snpu_memset(int fd, uint64_t addr, uint32_t value,
			      uint64_t bytes)
{
	struct snpu_mem_set m = {
		.size = sizeof(m), .addr = addr, .bytes = bytes, .value = value,
	};

	return snpu_ioc(fd, SNPU_IOC_MEM_SET, &m);
}

/* ---- host memory ------------------------------------------------------- */

static inline int snpu_host_alloc(int fd, uint64_t bytes, uint32_t *handle,
				  uint64_t *offset)
{
	struct snpu_host_alloc a = { .size = sizeof(a), .bytes = bytes };
	int ret = snpu_ioc(fd, SNPU_IOC_HOST_ALLOC, &a);

	if (!ret) {
		*handle = a.handle;
		*offset = a.mmap_offset;
	}
	return ret;
}

/* HOST_ALLOC of @bytes (a multiple of the page size) and its mmap. */
static inline int snpu_host_map(int fd, uint64_t bytes, uint32_t *handle,
				void **ptr)
{
	uint64_t off;
	void *p;
	int ret;

	ret = snpu_host_alloc(fd, bytes, handle, &off);
	if (ret)
		return ret;
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
	if (p == MAP_FAILED)
		return -errno;
	*ptr = p;
	return 0;
}

static inline int snpu_host_register(int fd, const void *addr, uint64_t bytes,
				     uint32_t *handle)
{
	struct snpu_host_register r = {
		.size = sizeof(r), .addr = (uintptr_t)addr, .bytes = bytes,
	};
	int ret = snpu_ioc(fd, SNPU_IOC_HOST_REGISTER, &r);

	if (!ret)
		*handle = r.handle;
	return ret;
}

static inline int snpu_handle_op(int fd, unsigned long cmd, uint32_t handle,
				 uint32_t flags)
{
	struct snpu_handle_op op = {
		.size = sizeof(op), .flags = flags, .handle = handle,
	};

	return snpu_ioc(fd, cmd, &op);
}

static inline int snpu_host_free(int fd, uint32_t handle)
{
	return snpu_handle_op(fd, SNPU_IOC_HOST_FREE, handle, 0);
}

/* ---- streams and events ------------------------------------------------ */

static inline int snpu_stream_create(int fd, int32_t prio, uint32_t *handle)
{
	struct snpu_stream_create c = { .size = sizeof(c), .priority = prio };
	int ret = snpu_ioc(fd, SNPU_IOC_STREAM_CREATE, &c);

	if (!ret)
		*handle = c.handle;
	return ret;
}

static inline int snpu_stream_destroy(int fd, uint32_t handle, uint32_t flags)
{
	return snpu_handle_op(fd, SNPU_IOC_STREAM_DESTROY, handle, flags);
}

static inline int snpu_stream_abort(int fd, uint32_t handle)
{
	return snpu_handle_op(fd, SNPU_IOC_STREAM_ABORT, handle, 0);
}

static inline int snpu_stream_reset(int fd, uint32_t handle)
{
	return snpu_handle_op(fd, SNPU_IOC_STREAM_RESET, handle, 0);
}

/* STREAM_SYNC; *@error (if given) gets the stream's error on success. */
static inline int snpu_stream_sync(int fd, uint32_t handle, int64_t timeout_ns,
				   int32_t *error)
{
	struct snpu_wait w = {
		.size = sizeof(w), .handle = handle, .timeout_ns = timeout_ns,
	};
	int ret = snpu_ioc(fd, SNPU_IOC_STREAM_SYNC, &w);

	if (!ret && error)
		*error = w.error;
	return ret;
}

static inline int snpu_stream_query(int fd, uint32_t handle,
				    struct snpu_stream_query *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->handle = handle;
	return snpu_ioc(fd, SNPU_IOC_STREAM_QUERY, q);
}

static inline int snpu_event_create(int fd, uint32_t *handle)
{
	struct snpu_stream_create c = { .size = sizeof(c) };
	int ret = snpu_ioc(fd, SNPU_IOC_EVENT_CREATE, &c);

	if (!ret)
		*handle = c.handle;
	return ret;
}

static inline int snpu_event_destroy(int fd, uint32_t handle)
{
	return snpu_handle_op(fd, SNPU_IOC_EVENT_DESTROY, handle, 0);
}

static inline int snpu_event_query(int fd, uint32_t handle,
				   struct snpu_event_query *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->handle = handle;
	return snpu_ioc(fd, SNPU_IOC_EVENT_QUERY, q);
}

static inline int snpu_event_sync(int fd, uint32_t handle, int64_t timeout_ns,
				  int32_t *error)
{
	struct snpu_wait w = {
		.size = sizeof(w), .handle = handle, .timeout_ns = timeout_ns,
	};
	int ret = snpu_ioc(fd, SNPU_IOC_EVENT_SYNC, &w);

	if (!ret && error)
		*error = w.error;
	return ret;
}

static inline int snpu_event_elapsed(int fd, uint32_t start, uint32_t end,
				     int64_t *ns)
{
	struct snpu_event_elapsed e = {
		.size = sizeof(e), .start = start, .end = end,
	};
	int ret = snpu_ioc(fd, SNPU_IOC_EVENT_ELAPSED, &e);

	if (!ret)
		*ns = e.ns;
	return ret;
}

/* ---- tasks ------------------------------------------------------------- */

static inline struct snpu_task snpu_t_launch(uint32_t stream, uint32_t kernel,
					     uint32_t block_dim)
{
	struct snpu_task t;

	memset(&t, 0, sizeof(t));
	t.op = SNPU_OP_LAUNCH;
	t.stream = stream;
	t.launch.kernel = kernel;
	t.launch.block_dim = block_dim;
	return t;
}

static inline void snpu_t_buf(struct snpu_task *t, unsigned int i,
			      uint64_t addr, uint64_t bytes)
{
	t->launch.args[i].value = addr;
	t->launch.args[i].bytes = bytes;
}

static inline void snpu_t_scalar(struct snpu_task *t, unsigned int i,
				 uint64_t value)
{
	t->launch.args[i].value = value;
	t->launch.args[i].bytes = 0;
}

static inline struct snpu_task snpu_t_spin(uint32_t stream, uint64_t ns,
					   uint32_t block_dim)
{
	struct snpu_task t = snpu_t_launch(stream, SNPU_KERNEL_SPIN, block_dim);

	snpu_t_scalar(&t, 0, ns);
	return t;
}

static inline struct snpu_task snpu_t_fail(uint32_t stream, uint64_t err)
{
	struct snpu_task t = snpu_t_launch(stream, SNPU_KERNEL_FAIL, 1);

	snpu_t_scalar(&t, 0, err);
	return t;
}

static inline struct snpu_task snpu_t_nop(uint32_t stream)
{
	return snpu_t_launch(stream, SNPU_KERNEL_NOP, 1);
}

/* FILL of @bytes at @addr with the 32-bit @pattern. */
static inline struct snpu_task snpu_t_fill(uint32_t stream, uint64_t addr,
					   uint64_t bytes, uint32_t pattern,
					   uint32_t block_dim)
{
	struct snpu_task t = snpu_t_launch(stream, SNPU_KERNEL_FILL, block_dim);

	snpu_t_buf(&t, 0, addr, bytes);
	snpu_t_scalar(&t, 1, pattern);
	return t;
}

/* A three-buffer kernel (ADD/MUL): c = a op b over @bytes each. */
static inline struct snpu_task snpu_t_binop(uint32_t stream, uint32_t kernel,
					    uint64_t c, uint64_t a, uint64_t b,
					    uint64_t bytes, uint32_t block_dim)
{
	struct snpu_task t = snpu_t_launch(stream, kernel, block_dim);

	snpu_t_buf(&t, 0, c, bytes);
	snpu_t_buf(&t, 1, a, bytes);
	snpu_t_buf(&t, 2, b, bytes);
	return t;
}

static inline struct snpu_task snpu_t_copy(uint32_t stream, uint32_t dir,
					   uint64_t dst, uint64_t src,
					   uint64_t bytes)
{
	struct snpu_task t;

	memset(&t, 0, sizeof(t));
	t.op = SNPU_OP_COPY;
	t.stream = stream;
	t.copy.dir = dir;
	t.copy.dst = dst;
	t.copy.src = src;
	t.copy.bytes = bytes;
	return t;
}

static inline struct snpu_task snpu_t_memset(uint32_t stream, uint64_t addr,
					     uint32_t value, uint64_t bytes)
{
	struct snpu_task t;

	memset(&t, 0, sizeof(t));
	t.op = SNPU_OP_MEMSET;
	t.stream = stream;
	t.memset.addr = addr;
	t.memset.bytes = bytes;
	t.memset.value = value;
	return t;
}

static inline struct snpu_task snpu_t_event(uint32_t stream, uint32_t op,
					    uint32_t event)
{
	struct snpu_task t;

	memset(&t, 0, sizeof(t));
	t.op = op;
	t.stream = stream;
	t.event.event = event;
	return t;
}

static inline struct snpu_task snpu_t_record(uint32_t stream, uint32_t event)
{
	return snpu_t_event(stream, SNPU_OP_EVENT_RECORD, event);
}

static inline struct snpu_task snpu_t_wait(uint32_t stream, uint32_t event)
{
	return snpu_t_event(stream, SNPU_OP_STREAM_WAIT, event);
}

static inline struct snpu_task snpu_t_host_func(uint32_t stream,
						uint64_t user_data)
{
	struct snpu_task t;

	memset(&t, 0, sizeof(t));
	t.op = SNPU_OP_HOST_FUNC;
	t.stream = stream;
	t.user_data = user_data;
	return t;
}

/* SUBMIT of @count descriptors @task_size bytes apart at @tasks. */
static inline int snpu_submit_raw(int fd, const void *tasks, uint32_t count,
				  uint32_t task_size, uint64_t *seq)
{
	struct snpu_submit s = {
		.size = sizeof(s), .count = count, .task_size = task_size,
		.tasks = (uintptr_t)tasks,
	};
	int ret = snpu_ioc(fd, SNPU_IOC_SUBMIT, &s);

	if (!ret && seq)
		*seq = s.seq;
	return ret;
}

static inline int snpu_submit(int fd, const struct snpu_task *tasks,
			      uint32_t count, uint64_t *seq)
{
	return snpu_submit_raw(fd, tasks, count, sizeof(*tasks), seq);
}

static inline int snpu_submit1(int fd, struct snpu_task t)
{
	return snpu_submit(fd, &t, 1, NULL);
}

/* Submit any number of tasks in batches of at most SNPU_SUBMIT_MAX. */
static inline int snpu_submit_all(int fd, const struct snpu_task *tasks,
				  uint32_t count)
{
	uint32_t done, n;
	int ret;

	for (done = 0; done < count; done += n) {
		n = count - done;
		if (n > SNPU_SUBMIT_MAX)
			n = SNPU_SUBMIT_MAX;
		ret = snpu_submit(fd, tasks + done, n, NULL);
		if (ret)
			return ret;
	}
	return 0;
}

/* ---- callbacks --------------------------------------------------------- */

static inline int snpu_callback_wait(int fd, int64_t timeout_ns,
				     struct snpu_callback *cb)
{
	memset(cb, 0, sizeof(*cb));
	cb->size = sizeof(*cb);
	cb->timeout_ns = timeout_ns;
	return snpu_ioc(fd, SNPU_IOC_CALLBACK_WAIT, cb);
}

static inline int snpu_callback_done(int fd, uint32_t cookie, int32_t status)
{
	struct snpu_callback cb = {
		.size = sizeof(cb), .cookie = cookie, .status = status,
	};

	return snpu_ioc(fd, SNPU_IOC_CALLBACK_DONE, &cb);
}

/*
 * Take the next callback (waiting up to @timeout_ns) and complete it with
 * @status. Return: 0 or -errno; *@user_data (if given) set.
 */
static inline int snpu_callback_answer(int fd, int64_t timeout_ns,
				       int32_t status, uint64_t *user_data)
{
	struct snpu_callback cb;
	int ret = snpu_callback_wait(fd, timeout_ns, &cb);

	if (ret)
		return ret;
	if (user_data)
		*user_data = cb.user_data;
	return snpu_callback_done(fd, cb.cookie, status);
}

/* ---- misc -------------------------------------------------------------- */

/*
 * Load snpu.ko ($SNPU_KO, else the VM's /opt/snpu/snpu.ko) with the
 * module parameters @params. Return: 0 or -errno.
 */
static inline int snpu_module_load(const char *params)
{
	const char *ko = getenv("SNPU_KO");
	int fd, ret;

	fd = open(ko && *ko ? ko : "/opt/snpu/snpu.ko", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(__NR_finit_module, fd, params, 0) ? -errno : 0;
	close(fd);
	return ret;
}

/* The unprivileged user the permission tests become. */
#define SNPU_TEST_NOBODY	65534

/*
 * Become uid/gid 65534 with no supplementary group: no capability is
 * left. Return: 0, or -errno (-EPERM when the ids did not change).
 */
static inline int snpu_drop_to_nobody(void)
{
	if (setgroups(0, NULL) || setgid(SNPU_TEST_NOBODY) ||
	    setuid(SNPU_TEST_NOBODY))
		return -errno;
	return getuid() == SNPU_TEST_NOBODY && geteuid() == SNPU_TEST_NOBODY ?
		0 : -EPERM;
}

/* Send @fd over the unix socket @sock. Return: 0 or -errno. */
static inline int snpu_send_fd(int sock, int fd)
{
	char data = 'F', cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c;

	memset(cbuf, 0, sizeof(cbuf));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -errno;
}

/* Return: the descriptor received over the unix socket @sock, or -errno. */
static inline int snpu_recv_fd(int sock)
{
	char data, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -EIO;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
		return -EPROTO;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/* xorshift64*: a small deterministic generator for test data. */
static inline uint64_t snpu_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static inline void snpu_fill_random(void *buf, size_t len, uint64_t seed)
{
	unsigned char *p = buf;
	uint64_t st = seed | 1, v = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		if (!(i & 7))
			v = snpu_rand(&st);
		p[i] = v >> ((i & 7) * 8);
	}
}

#endif /* _SNPU_TEST_H */
