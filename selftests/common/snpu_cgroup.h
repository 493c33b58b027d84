/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A memory cgroup of the test's own, for the suites that check what the
 * driver charges: cgroup2 is mounted on /sys/fs/cgroup when the VM has
 * not, the memory controller enabled, and the calling process moved into
 * a new cgroup until snpu_cg_leave(). Runs as root.
 */
#ifndef _SNPU_CGROUP_H
#define _SNPU_CGROUP_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define SNPU_CGROOT	"/sys/fs/cgroup"

/* Write @s to @path. Return: 0 or -errno. */
static inline int snpu_write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n < 0 ? -errno : 0;
}

/* The number at the start of @path, or -errno. */
static inline long long snpu_read_ll(const char *path)
{
	char buf[64];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	return strtoll(buf, NULL, 10);
}

/**
 * struct snpu_cg - a memory cgroup the test process is in
 * @dir: its directory, empty when not made
 * @path: scratch for the path of one of its files
 * @max_fd: memory.max, opened in advance: at the limit, an open may fail
 */
struct snpu_cg {
	char dir[128];
	char path[192];
	int max_fd;
};

static inline const char *snpu_cg_file(struct snpu_cg *cg, const char *name)
{
	snprintf(cg->path, sizeof(cg->path), "%s/%s", cg->dir, name);
	return cg->path;
}

/*
 * Make a cgroup named after @tag and the pid, with the memory controller
 * and no swap, and move the process into it. Return: 0 or -errno.
 */
static inline int snpu_cg_enter(struct snpu_cg *cg, const char *tag)
{
	struct stat st;
	char pid[32];
	int ret;

	cg->dir[0] = 0;
	cg->max_fd = -1;
	if (stat(SNPU_CGROOT "/cgroup.controllers", &st)) {
		mkdir(SNPU_CGROOT, 0755);
		if (mount("cgroup2", SNPU_CGROOT, "cgroup2", 0, NULL))
			return -errno;
	}
	ret = snpu_write_file(SNPU_CGROOT "/cgroup.subtree_control", "+memory");
	if (ret)
		return ret;
	snprintf(cg->dir, sizeof(cg->dir), SNPU_CGROOT "/snpu-%s-%d", tag,
		 getpid());
	if (mkdir(cg->dir, 0755)) {
		cg->dir[0] = 0;
		return -errno;
	}
	snprintf(pid, sizeof(pid), "%d", getpid());
	ret = snpu_write_file(snpu_cg_file(cg, "cgroup.procs"), pid);
	if (ret)
		return ret;
	/* Nothing to swap to: a limit fails charges, it cannot page out. */
	snpu_write_file(snpu_cg_file(cg, "memory.swap.max"), "0");
	cg->max_fd = open(snpu_cg_file(cg, "memory.max"), O_WRONLY | O_CLOEXEC);
	return cg->max_fd < 0 ? -errno : 0;
}

/* Back to the root cgroup, and the cgroup removed. */
static inline void snpu_cg_leave(struct snpu_cg *cg)
{
	char pid[32];

	if (cg->max_fd >= 0)
		close(cg->max_fd);
	cg->max_fd = -1;
	if (!cg->dir[0])
		return;
	snprintf(pid, sizeof(pid), "%d", getpid());
	snpu_write_file(SNPU_CGROOT "/cgroup.procs", pid);
	rmdir(cg->dir);
	cg->dir[0] = 0;
}

/* memory.current, in bytes. */
static inline long long snpu_cg_current(struct snpu_cg *cg)
{
	return snpu_read_ll(snpu_cg_file(cg, "memory.current"));
}

/* memory.max: @bytes, or no limit when negative. Return: 0 or -errno. */
static inline int snpu_cg_set_max(struct snpu_cg *cg, long long bytes)
{
	char buf[32];

	if (bytes < 0)
		snprintf(buf, sizeof(buf), "max");
	else
		snprintf(buf, sizeof(buf), "%lld", bytes);
	return pwrite(cg->max_fd, buf, strlen(buf), 0) < 0 ? -errno : 0;
}

/* A counter of memory.events, or -1. */
static inline long long snpu_cg_event(struct snpu_cg *cg, const char *name)
{
	char line[128];
	long long v = -1;
	size_t len = strlen(name);
	FILE *f = fopen(snpu_cg_file(cg, "memory.events"), "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, len) && line[len] == ' ')
			v = strtoll(line + len + 1, NULL, 10);
	fclose(f);
	return v;
}

#endif /* _SNPU_CGROUP_H */
