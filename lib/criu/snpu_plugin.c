// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * snpu_plugin.so: a CRIU plugin that checkpoints and restores the snpu
 * device state of the processes CRIU dumps (Documentation/checkpoint.rst,
 * "CRIU").
 *
 * CRIU hands every file it does not know to the plugins' DUMP_EXT_FILE
 * hook, and every mapping of a device file to HANDLE_DEVICE_VMA. For an
 * snpu file (a misc device whose node is snpuN):
 *
 * dump     the first file of a process locks the process
 *          (SNPU_CKPT_OP_LOCK) and writes its image, every context of it,
 *          into CRIU's image directory as snpu-<pid>.img
 *          (SNPU_CKPT_OP_CHECKPOINT). Each file gets a record,
 *          snpu-file-<id>.img: the process, its context in the image, its
 *          device and its open flags. A process left running (criu dump
 *          --leave-running) is unlocked when the dump ends.
 * restore  RESTORE_EXT_FILE runs in the restored process: it opens the
 *          device the context was on, or the one SNPU_CRIU_DEVICE_MAP
 *          maps it to, and recreates the context there
 *          (SNPU_IOC_CKPT_RESTORE): same handles, device addresses and
 *          mmap offsets. UPDATE_VMA_MAP maps each device mapping of the
 *          process onto the restored file of its device, at the same
 *          offset. RESUME_DEVICES_LATE unlocks a restored process that is
 *          not RUNNING.
 *
 * SNPU_CRIU_DEVICE_MAP (criu restore's environment): "OLD=NEW[,OLD=NEW..]",
 * device indexes; an index it does not name maps to itself.
 *
 * A process may have one file per device (each file is one context, told
 * apart by its device); mappings of a device go to that file.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/kcmp.h>

#include <criu/criu-plugin.h>
#include <linux/snpu.h>

/*
 * Messages go to CRIU's log (criu -o, -v): never to stderr, which in a
 * restored process is already the process's own file.
 */
#define SNPU_LOG_ERROR	1
#define SNPU_LOG_INFO	3
extern void print_on_level(unsigned int loglevel, const char *format, ...)
	__attribute__((format(printf, 2, 3)));
#define pr_err(fmt, ...) \
	print_on_level(SNPU_LOG_ERROR, "snpu_plugin: " fmt "\n", ##__VA_ARGS__)
#define pr_info(fmt, ...) \
	print_on_level(SNPU_LOG_INFO, "snpu_plugin: " fmt "\n", ##__VA_ARGS__)
#define MAX_DEVS	64
#define MAX_PROCS	64
#define REC_MAGIC	0x4c49465550524e53ULL	/* "SNRPUFIL" */

/* snpu-file-<id>.img: what a restore of file @id needs. */
struct snpu_file_rec {
	uint64_t magic;
	uint32_t pid;		/* the process at dump: its image */
	uint32_t index;		/* the file's context in that image */
	uint32_t dev_index;	/* the device it was open on */
	uint32_t open_flags;	/* O_ACCMODE and the status flags */
};

/* A process the dump locked, and a file of it to reach it through. */
struct snpu_locked {
	pid_t pid;
	int fd;
	uint32_t devs[MAX_DEVS];
	int ndevs;
};

/* Dump: the processes locked so far. CRIU runs the hooks in one thread. */
static struct snpu_locked locked[MAX_PROCS];
static int nlocked;

/* @dev is an snpu device: its index, else -1. */
static int snpu_dev_index(dev_t dev)
{
	char path[64], line[128];
	int index = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/dev/char/%u:%u/uevent",
		 major(dev), minor(dev));
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned int i;
		char end;

		if (sscanf(line, "DEVNAME=snpu%u%c", &i, &end) == 2 &&
		    end == '\n' && i < MAX_DEVS)
			index = (int)i;
	}
	fclose(f);
	return index;
}

static int snpu_fd_index(int fd)
{
	struct stat st;

	if (fstat(fd, &st) || !S_ISCHR(st.st_mode))
		return -1;
	return snpu_dev_index(st.st_rdev);
}

static int snpu_ckpt_op(int fd, uint32_t op, pid_t pid, int64_t timeout_ns,
			int img, struct snpu_ckpt_proc *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->op = op;
	a->pid = (uint32_t)pid;
	a->timeout_ns = timeout_ns;
	a->fd = img;
	return ioctl(fd, SNPU_IOC_CKPT_PROC, a) ? -errno : 0;
}

/* The process that opened the file @fd (its thread group id). */
static pid_t snpu_fd_pid(int fd)
{
	struct snpu_snapshot s = { .size = sizeof(s) };

	if (ioctl(fd, SNPU_IOC_SNAPSHOT_STATE, &s))
		return -errno;
	return (pid_t)s.pid;
}

static int pread_all(int fd, void *buf, size_t len, off_t off)
{
	while (len) {
		ssize_t n = pread(fd, buf, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -ENODATA;
		buf = (char *)buf + n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/*
 * The device of each context of the image @img, in order: their count.
 * -EOPNOTSUPP for an image with registered host memory: its restore
 * re-pins the user range while CRIU has not yet put the process's memory
 * back, so it would pin CRIU's pages, not the process's.
 */
static int image_devices(int img, uint32_t *devs, int max)
{
	struct snpu_ckpt_header h;
	struct snpu_ckpt_chunk c;
	struct snpu_ckpt_host host;
	struct snpu_ckpt_ctx ctx;
	off_t off;
	int n = 0, ret;

	ret = pread_all(img, &h, sizeof(h), 0);
	if (ret)
		return ret;
	if (h.magic != SNPU_CKPT_MAGIC || h.header_size != sizeof(h))
		return -ENOEXEC;
	if (h.contexts > (uint32_t)max)
		return -ENOSPC;
	/* The kernel checked the image as it wrote it: the layout is enough. */
	for (off = sizeof(h); ; off += c.len) {
		ret = pread_all(img, &c, sizeof(c), off);
		if (ret)
			return ret;
		off += sizeof(c);
		if (c.type == SNPU_CKPT_END)
			return n == (int)h.contexts ? n : -EPROTO;
		if (c.type == SNPU_CKPT_HOST) {
			if (c.len != sizeof(host))
				return -EPROTO;
			ret = pread_all(img, &host, sizeof(host), off);
			if (ret)
				return ret;
			if (host.kind == SNPU_CKPT_HOST_REGISTERED) {
				pr_err("registered host memory at %#llx: not restorable under CRIU",
				       (unsigned long long)host.uaddr);
				return -EOPNOTSUPP;
			}
			continue;
		}
		if (c.type != SNPU_CKPT_CTX)
			continue;
		if (n == (int)h.contexts)
			return -EPROTO;
		if (c.len != sizeof(ctx))
			return -EPROTO;
		ret = pread_all(img, &ctx, sizeof(ctx), off);
		if (ret)
			return ret;
		devs[n++] = ctx.dev_index;
	}
}

/* Lock process @pid through its file @fd and write its image. */
static struct snpu_locked *snpu_dump_proc(int fd, pid_t pid)
{
	struct snpu_locked *l = &locked[nlocked];
	struct snpu_ckpt_proc a;
	char name[64];
	int dir, img, ret;

	if (nlocked == MAX_PROCS) {
		pr_err("more than %d processes", MAX_PROCS);
		return NULL;
	}
	l->pid = pid;
	l->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (l->fd < 0) {
		pr_err("dup: %m");
		return NULL;
	}
	/*
	 * CRIU froze the process: no call of it is in progress, so the lock
	 * is at once unless a registered background thread must park.
	 */
	ret = snpu_ckpt_op(l->fd, SNPU_CKPT_OP_LOCK, pid, 10000000000LL, 0, &a);
	if (ret) {
		pr_err("lock of %d: %s", pid, strerror(-ret));
		goto err_close;
	}
	dir = criu_get_image_dir();
	snprintf(name, sizeof(name), "snpu-%d.img", pid);
	img = openat(dir, name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (img < 0) {
		ret = -errno;
		pr_err("%s: %s", name, strerror(-ret));
		goto err_unlock;
	}
	ret = snpu_ckpt_op(l->fd, SNPU_CKPT_OP_CHECKPOINT, pid, 0, img, &a);
	if (ret) {
		pr_err("checkpoint of %d: %s", pid, strerror(-ret));
		close(img);
		goto err_unlock;
	}
	l->ndevs = image_devices(img, l->devs, MAX_DEVS);
	close(img);
	if (l->ndevs < 0) {
		pr_err("%s: %s", name, strerror(-l->ndevs));
		goto err_unlock;
	}
	pr_info("process %d: %u context(s), %llu bytes in %s",
		pid, a.contexts, (unsigned long long)a.bytes, name);
	nlocked++;
	return l;

err_unlock:
	snpu_ckpt_op(l->fd, SNPU_CKPT_OP_UNLOCK, pid, 0, 0, &a);
err_close:
	close(l->fd);
	return NULL;
}

static int snpu_dump_file(int fd, int id)
{
	struct snpu_file_rec rec = { .magic = REC_MAGIC };
	struct snpu_locked *l = NULL;
	int dev, i, index = -1, out, flags;
	char name[64];
	pid_t pid;

	dev = snpu_fd_index(fd);
	if (dev < 0)
		return -ENOTSUP;
	pid = snpu_fd_pid(fd);
	if (pid <= 0) {
		pr_err("the process of a file: %s", strerror(-pid));
		return -1;
	}
	for (i = 0; i < nlocked; i++)
		if (locked[i].pid == pid)
			l = &locked[i];
	if (!l)
		l = snpu_dump_proc(fd, pid);
	if (!l)
		return -1;
	for (i = 0; i < l->ndevs; i++) {
		if (l->devs[i] != (uint32_t)dev)
			continue;
		if (index >= 0) {
			pr_err("process %d has two files of snpu%d: one per device is supported",
			       pid, dev);
			return -1;
		}
		index = i;
	}
	if (index < 0) {
		pr_err("snpu%d is not in the image of %d", dev, pid);
		return -1;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0)
		return -1;
	rec.pid = (uint32_t)pid;
	rec.index = (uint32_t)index;
	rec.dev_index = (uint32_t)dev;
	rec.open_flags = (uint32_t)flags & (O_ACCMODE | O_NONBLOCK | O_APPEND);
	snprintf(name, sizeof(name), "snpu-file-%d.img", id);
	out = openat(criu_get_image_dir(), name,
		     O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		pr_err("%s: %m", name);
		return -1;
	}
	if (write(out, &rec, sizeof(rec)) != sizeof(rec)) {
		pr_err("%s: short write", name);
		close(out);
		return -1;
	}
	return close(out) ? -1 : 0;
}
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__DUMP_EXT_FILE, snpu_dump_file)

/* SNPU_CRIU_DEVICE_MAP: the device that device @old is restored on. */
static int snpu_map_device(unsigned int old)
{
	const char *s = getenv("SNPU_CRIU_DEVICE_MAP");
	unsigned long from, to;
	char *end;

	while (s && *s) {
		from = strtoul(s, &end, 10);
		if (end == s || *end != '=')
			return -EINVAL;
		s = end + 1;
		to = strtoul(s, &end, 10);
		if (end == s || (*end && *end != ',') || to >= MAX_DEVS)
			return -EINVAL;
		if (from == old)
			return (int)to;
		s = *end ? end + 1 : end;
	}
	return (int)old;
}

static int snpu_restore_file(int id)
{
	struct snpu_ckpt_restore a = { .size = sizeof(a) };
	struct snpu_file_rec rec;
	int dir, recfd, img, fd, to, ret;
	char name[64];

	dir = criu_get_image_dir();
	snprintf(name, sizeof(name), "snpu-file-%d.img", id);
	recfd = openat(dir, name, O_RDONLY | O_CLOEXEC);
	if (recfd < 0)
		return errno == ENOENT ? -ENOTSUP : -1;
	ret = pread_all(recfd, &rec, sizeof(rec), 0);
	close(recfd);
	if (ret || rec.magic != REC_MAGIC) {
		pr_err("%s: not a file record", name);
		return -1;
	}
	to = snpu_map_device(rec.dev_index);
	if (to < 0) {
		pr_err("bad SNPU_CRIU_DEVICE_MAP");
		return -1;
	}
	snprintf(name, sizeof(name), "snpu-%u.img", rec.pid);
	img = openat(dir, name, O_RDONLY | O_CLOEXEC);
	if (img < 0) {
		pr_err("%s: %m", name);
		return -1;
	}
	snprintf(name, sizeof(name), "/dev/snpu%d", to);
	fd = open(name, (int)rec.open_flags);
	if (fd < 0) {
		pr_err("%s: %m", name);
		close(img);
		return -1;
	}
	a.fd = img;
	a.index = rec.index;
	ret = ioctl(fd, SNPU_IOC_CKPT_RESTORE, &a) ? -errno : 0;
	close(img);
	if (ret) {
		pr_err("context %u of %d (snpu%u) onto snpu%d: %s",
		       rec.index, rec.pid, rec.dev_index, to, strerror(-ret));
		close(fd);
		return -1;
	}
	pr_info("context %u of %d (snpu%u) restored onto snpu%d",
		rec.index, rec.pid, rec.dev_index, to);
	return fd;
}
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__RESTORE_EXT_FILE, snpu_restore_file)

/* Dump: a mapping of an snpu file is the plugin's (its pages are not). */
static int snpu_handle_vma(int fd, const struct stat *st)
{
	return snpu_dev_index(st->st_rdev) < 0 ? -ENOTSUP : 0;
}
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__HANDLE_DEVICE_VMA, snpu_handle_vma)

/* @a and @b of this process are one open file (dup(2)s of each other). */
static bool same_file(int a, int b)
{
	pid_t me = getpid();

	return syscall(SYS_kcmp, me, me, KCMP_FILE, a, b) == 0;
}

/*
 * Restore, in the restored process, after its files: the file of the
 * mapping's device (mapped) that RESTORE_EXT_FILE made, at the same
 * offset. @path is the mapping's file at dump ("/dev/snpuN").
 */
static int snpu_update_vma(const char *path, const uint64_t addr,
			   const uint64_t old_pgoff, uint64_t *new_pgoff,
			   int *plugin_fd)
{
	struct dirent *de;
	int old, to, found = -1;
	struct stat want, st;
	const char *base;
	char node[32];
	DIR *d;

	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (sscanf(base, "snpu%d", &old) != 1 || old < 0 || old >= MAX_DEVS)
		return -ENOTSUP;
	to = snpu_map_device((unsigned int)old);
	if (to < 0)
		return -1;
	snprintf(node, sizeof(node), "/dev/snpu%d", to);
	if (stat(node, &want))
		return -1;
	d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		int fd;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		fd = atoi(de->d_name);
		if (fd == dirfd(d) || fstat(fd, &st) || !S_ISCHR(st.st_mode) ||
		    st.st_rdev != want.st_rdev)
			continue;
		/* CRIU may hold a copy of the same file meanwhile. */
		if (found >= 0 && same_file(found, fd))
			continue;
		if (found >= 0) {
			pr_err("two files of %s: one per device is supported",
			       node);
			closedir(d);
			return -1;
		}
		found = fd;
	}
	closedir(d);
	if (found < 0) {
		pr_err("mapping at %#llx of %s: no restored file",
		       (unsigned long long)addr, path);
		return -1;
	}
	/* The driver kept the handles, so the offsets are the same. */
	*new_pgoff = old_pgoff;
	*plugin_fd = found;
	return 1;
}
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__UPDATE_VMA_MAP, snpu_update_vma)

/*
 * Restore, last: the restored contexts are RUNNING as made; a process
 * found locked (by a tool, meanwhile) is let go. -ENOTSUP for a process
 * without snpu files.
 */
static int snpu_resume_late(int pid)
{
	struct snpu_ckpt_proc a;
	int fd, ret;

	fd = open("/dev/snpu0", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -ENOTSUP;
	ret = snpu_ckpt_op(fd, SNPU_CKPT_OP_STATE, pid, 0, 0, &a);
	if (ret == -ESRCH) {
		ret = -ENOTSUP;
	} else if (!ret && a.state != SNPU_STATE_RUNNING) {
		ret = snpu_ckpt_op(fd, SNPU_CKPT_OP_UNLOCK, pid, 0, 0, &a);
		if (ret)
			pr_err("unlock of %d: %s", pid, strerror(-ret));
	}
	close(fd);
	return ret;
}
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__RESUME_DEVICES_LATE, snpu_resume_late)

static int snpu_plugin_init(int stage)
{
	nlocked = 0;
	return 0;
}

/*
 * The end of a dump: a process that lives on (--leave-running, or a
 * failed dump) runs again; one CRIU killed is gone with its lock.
 */
static void snpu_plugin_exit(int stage, int ret)
{
	struct snpu_ckpt_proc a;
	int i, err;

	for (i = 0; i < nlocked; i++) {
		err = snpu_ckpt_op(locked[i].fd, SNPU_CKPT_OP_UNLOCK,
				   locked[i].pid, 0, 0, &a);
		if (err && err != -ESRCH && err != -EBADFD)
			pr_err("unlock of %d: %s", locked[i].pid,
			       strerror(-err));
		close(locked[i].fd);
	}
	nlocked = 0;
}

CR_PLUGIN_REGISTER("snpu_plugin", snpu_plugin_init, snpu_plugin_exit)
