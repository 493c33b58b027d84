// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * snpu-checkpoint: checkpoint a process's snpu device state to a file and
 * restore it into a new process, with cuda-checkpoint's verbs
 * (Documentation/checkpoint.rst):
 *
 *   snpu-checkpoint --get-state -p PID
 *   snpu-checkpoint --action lock -p PID [--timeout MS]
 *   snpu-checkpoint --action checkpoint -p PID --image FILE
 *   snpu-checkpoint --action unlock -p PID
 *   snpu-checkpoint --toggle -p PID [--timeout MS] [--image FILE]
 *   snpu-checkpoint --action restore --image FILE [--device-map OLD=NEW,..]
 *                   [-- CMD [ARG..]]
 *
 * The process is another one (the caller must be allowed to ptrace it) or
 * the caller's. --toggle locks a running process (and writes FILE when
 * given) and unlocks a locked one. A restore recreates every context of
 * the image in fresh files of this process, on the device the map gives
 * (the same index by default), then runs CMD with the files open, listed
 * in SNPU_CKPT_FDS (one fd per context, comma-separated, in the image's
 * order); without CMD it checks that the image restores and reports it.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snpu.h"

#define MAX_CTX	64

static const char *state_name(uint32_t state)
{
	switch (state) {
	case SNPU_STATE_RUNNING:
		return "running";
	case SNPU_STATE_LOCKED:
		return "locked";
	case SNPU_STATE_BACKED_UP:
		return "checkpointed";
	}
	return "unknown";
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: snpu-checkpoint --get-state -p PID\n"
		"       snpu-checkpoint --action lock|checkpoint|unlock -p PID "
		"[--timeout MS] [--image FILE]\n"
		"       snpu-checkpoint --toggle -p PID [--timeout MS] "
		"[--image FILE]\n"
		"       snpu-checkpoint --action restore --image FILE "
		"[--device-map OLD=NEW,..] [-- CMD [ARG..]]\n");
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "snpu-checkpoint: %s: %s\n", what, strerror(-err));
	return 1;
}

/* "0=1,2=3": map[old] = new; every other index maps to itself. */
static int parse_map(const char *s, unsigned int *map)
{
	unsigned int i;
	char *end;

	for (i = 0; i < MAX_CTX; i++)
		map[i] = i;
	while (*s) {
		unsigned long from, to;

		from = strtoul(s, &end, 10);
		if (end == s || *end != '=' || from >= MAX_CTX)
			return -EINVAL;
		s = end + 1;
		to = strtoul(s, &end, 10);
		if (end == s || (*end && *end != ',') || to >= MAX_CTX)
			return -EINVAL;
		map[from] = (unsigned int)to;
		s = *end ? end + 1 : end;
	}
	return 0;
}

static int do_checkpoint(struct snpu_device *dev, pid_t pid,
			 const char *image)
{
	uint64_t bytes = 0;
	int fd, ret;

	if (!image) {
		fprintf(stderr, "snpu-checkpoint: checkpoint needs --image\n");
		return 2;
	}
	fd = open(image, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail(image, -errno);
	ret = snpu_ckpt_checkpoint(dev, pid, fd, &bytes);
	if (close(fd) && !ret)
		ret = -errno;
	if (ret == -EBADFD)
		fprintf(stderr, "snpu-checkpoint: the process runs: lock it first\n");
	if (ret)
		return fail("checkpoint", ret);
	printf("checkpointed %llu bytes to %s\n", (unsigned long long)bytes,
	       image);
	return 0;
}

static int do_restore(const char *image, const unsigned int *map,
		      char **cmd)
{
	uint32_t devs[MAX_CTX], dev_index;
	char fds[MAX_CTX * 12] = "";
	struct snpu_device *dev;
	int img, n, i, ret;

	if (!image) {
		fprintf(stderr, "snpu-checkpoint: restore needs --image\n");
		return 2;
	}
	img = open(image, O_RDONLY | O_CLOEXEC);
	if (img < 0)
		return fail(image, -errno);
	n = snpu_ckpt_image_devices(img, devs, MAX_CTX);
	if (n < 0)
		return fail(image, n);
	for (i = 0; i < n; i++) {
		unsigned int to = devs[i] < MAX_CTX ? map[devs[i]] : devs[i];

		ret = snpu_open(to, 0, &dev);
		if (ret)
			return fail("open", ret);
		ret = snpu_ckpt_restore(dev, img, (uint32_t)i, &dev_index);
		if (ret) {
			fprintf(stderr, "snpu-checkpoint: context %d (snpu%u) "
				"onto snpu%u: %s\n", i, devs[i], to,
				strerror(-ret));
			return 1;
		}
		printf("restored context %d of snpu%u onto snpu%u\n", i,
		       dev_index, to);
		/* Kept open across exec: the files are the restored state. */
		fcntl(snpu_device_fd(dev), F_SETFD, 0);
		snprintf(fds + strlen(fds), sizeof(fds) - strlen(fds), "%s%d",
			 i ? "," : "", snpu_device_fd(dev));
	}
	close(img);
	if (!cmd || !cmd[0])
		return 0;
	setenv("SNPU_CKPT_FDS", fds, 1);
	fflush(stdout);
	execvp(cmd[0], cmd);
	return fail(cmd[0], -errno);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "get-state", no_argument, NULL, 's' },
		{ "action", required_argument, NULL, 'a' },
		{ "toggle", no_argument, NULL, 't' },
		{ "pid", required_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "image", required_argument, NULL, 'i' },
		{ "device-map", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *action = NULL, *image = NULL;
	bool get_state = false, toggle = false;
	int64_t timeout_ns = -1;
	unsigned int map[MAX_CTX];
	struct snpu_device *dev;
	uint32_t state;
	pid_t pid = 0;
	int c, ret;

	parse_map("", map);
	while ((c = getopt_long(argc, argv, "sa:tp:T:i:m:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			get_state = true;
			break;
		case 'a':
			action = optarg;
			break;
		case 't':
			toggle = true;
			break;
		case 'p':
			pid = (pid_t)atoi(optarg);
			break;
		case 'T':
			timeout_ns = atoll(optarg) * 1000000LL;
			break;
		case 'i':
			image = optarg;
			break;
		case 'm':
			if (parse_map(optarg, map)) {
				fprintf(stderr, "snpu-checkpoint: bad --device-map\n");
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (get_state + toggle + !!action != 1) {
		usage(stderr);
		return 2;
	}
	if (action && !strcmp(action, "restore"))
		return do_restore(image, map, argv + optind);
	if (pid <= 0) {
		fprintf(stderr, "snpu-checkpoint: -p PID is needed\n");
		return 2;
	}
	/* Any device reaches the process; its file is this tool's own. */
	ret = snpu_open(0, 0, &dev);
	if (ret)
		return fail("open snpu0", ret);
	ret = snpu_ckpt_get_state(dev, pid, &state);
	if (ret)
		return fail("get-state", ret);
	if (get_state) {
		printf("%s\n", state_name(state));
		return 0;
	}
	if (toggle) {
		if (state != SNPU_STATE_RUNNING) {
			ret = snpu_ckpt_unlock(dev, pid);
			return ret ? fail("unlock", ret) : 0;
		}
		ret = snpu_ckpt_lock(dev, pid, timeout_ns);
		if (ret)
			return fail("lock", ret);
		return image ? do_checkpoint(dev, pid, image) : 0;
	}
	if (!strcmp(action, "lock")) {
		ret = snpu_ckpt_lock(dev, pid, timeout_ns);
		return ret ? fail("lock", ret) : 0;
	}
	if (!strcmp(action, "checkpoint"))
		return do_checkpoint(dev, pid, image);
	if (!strcmp(action, "unlock")) {
		ret = snpu_ckpt_unlock(dev, pid);
		return ret ? fail("unlock", ret) : 0;
	}
	usage(stderr);
	return 2;
}
