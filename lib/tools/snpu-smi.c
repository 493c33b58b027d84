// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * snpu-smi: show the snpu devices of this machine.
 *
 *   snpu-smi          one block per device
 *   snpu-smi -d N     device N only
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snpu.h"

static int show(unsigned int index)
{
	struct snpu_device *dev;
	struct snpu_info info;
	int ret;

	ret = snpu_open(index, 0, &dev);
	if (ret)
		return ret;
	ret = snpu_get_info(dev, &info);
	snpu_close(dev);
	if (ret)
		return ret;

	printf("snpu%u: abi %u.%u caps 0x%llx\n", info.dev_index,
	       info.abi_major, info.abi_minor, (unsigned long long)info.caps);
	printf("  cores          %u\n", info.cores);
	printf("  memory         %llu MiB (%llu bytes used)\n",
	       (unsigned long long)info.mem_total >> 20,
	       (unsigned long long)info.mem_used);
	printf("  max_block_dim  %u\n", info.max_block_dim);
	printf("  mem_align      %u\n", info.mem_align);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int i;
	int opt, ret;
	long one = -1;

	while ((opt = getopt(argc, argv, "d:h")) != -1) {
		switch (opt) {
		case 'd': {
			char *end;

			one = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end || one < 0) {
				fprintf(stderr, "snpu-smi: bad device '%s'\n", optarg);
				return 2;
			}
			break;
		}
		default:
			fprintf(stderr, "usage: %s [-d N]\n", argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}

	if (one >= 0) {
		ret = show(one);
		if (ret)
			fprintf(stderr, "snpu%ld: %s\n", one, strerror(-ret));
		return ret ? 1 : 0;
	}

	for (i = 0;; i++) {
		ret = show(i);
		if (ret == -ENOENT)
			break;
		if (ret) {
			fprintf(stderr, "snpu%u: %s\n", i, strerror(-ret));
			return 1;
		}
	}
	if (i == 0) {
		fprintf(stderr, "no snpu device (is the module loaded?)\n");
		return 1;
	}
	return 0;
}
