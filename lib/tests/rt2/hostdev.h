/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A host-only device interface for rt2's unit tests and benchmarks: it
 * runs every task at once, in the calling thread, the built-in kernels
 * with kmod/core's code. Device addresses are host pointers. Never part
 * of libsnpu.
 */
#ifndef RT2_HOSTDEV_H
#define RT2_HOSTDEV_H

#include <pthread.h>
#include <stdint.h>

#include "../../rt2/rt2.h"

#define HDEV_LOG	4096
#define HDEV_STREAMS	128

struct hdev_log {
	uint32_t op;
	uint32_t kernel;	/* LAUNCH: kernel; COPY: dir */
	uint32_t stream;
};

struct hostdev {
	struct snpu_rt2_dev head;
	pthread_mutex_t lock;
	unsigned long mem_allocs, mem_frees, host_allocs, host_frees;
	unsigned long tasks, waits;
	unsigned long fail_at;	/* fail the task with this number (1-based) */
	int fail_err;
	int err[RT2_DEV_QUEUES];
	/*
	 * Per stream (queues' 1..64, attached 100..107): the error a failed
	 * task left it in, refusing tasks with -EIO like the driver's
	 * streams until recovered; and the queue whose task failed it.
	 */
	int serr[HDEV_STREAMS];
	unsigned int sslot[HDEV_STREAMS];
	unsigned long recovers;
	bool used[RT2_DEV_QUEUES];
	unsigned int queues;
	unsigned int nlog;
	struct hdev_log log[HDEV_LOG];
	unsigned int nattached;
	char attached[8][32];
	uint32_t next_event;
};

int hostdev_open(struct hostdev **hp);
void hostdev_close(struct hostdev *h);

#endif /* RT2_HOSTDEV_H */
