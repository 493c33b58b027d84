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
#define HDEV_GRAPHS	8
/* The cores it reports: what launches are sized for (snpu_launch_dims()). */
#define HDEV_CORES	4

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
	/*
	 * Graph capture, emulated: the tasks of the captured stream are
	 * kept instead of run, and a launch of a graph runs them all, as
	 * one queue entry. A task a graph cannot hold (a host copy, an
	 * event) breaks the capture: what was kept runs, then the rest.
	 */
	bool capturing, cap_broken;
	uint32_t cap_stream;
	unsigned int cap_slot;
	uint64_t cap_key;
	struct snpu_task *cap;
	unsigned int ncap, cap_cap;
	struct hdev_graph {
		uint64_t key;
		struct snpu_task *tasks;
		unsigned int n;
	} graphs[HDEV_GRAPHS];
	unsigned long entries[RT2_DEV_QUEUES];
	unsigned long graph_launches, captures, fallbacks;
};

int hostdev_open(struct hostdev **hp);
void hostdev_close(struct hostdev *h);

#endif /* RT2_HOSTDEV_H */
