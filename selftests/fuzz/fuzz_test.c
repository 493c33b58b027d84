// SPDX-License-Identifier: GPL-2.0
/*
 * A seeded fuzzer of the whole user interface of /dev/snpu0: every ioctl
 * of uapi/linux/snpu.h (and command numbers that name none), mmap(2) and
 * munmap(2) of host memory, of the command queues and of the snapshot
 * state page, what else a process may do to those mappings (mremap(2),
 * mprotect(2), MADV_DONTNEED, fork(2) after MADV_DOFORK), the words of
 * the rings the process may write, poll(2), and
 * closing and reopening the file, from one thread or from several threads
 * sharing the files. Commands of a capability the kernel does not report
 * (GET_INFO caps) must be ENOTTY. The process snapshot is locked only
 * for the length of one operation, always unlocked again, so that the
 * calls of other threads it blocks resume.
 *
 * Arguments start from real objects (a table per file of the streams,
 * events, owners, host memory, device allocations and graphs the fuzzer
 * created) and are mutated: stale handles (destroyed), foreign ones (of
 * another file), handles of another type and garbage; @size on every
 * boundary of the argument conventions; every @flags bit and reserved
 * field; argument and user pointers that are NULL, unmapped, misaligned,
 * read-only, kernel addresses or that run into an unmapped page; device
 * ranges in, across and out of allocations; SUBMIT arrays of real tasks
 * with one field mutated; graph definitions (GRAPH_CREATE) valid as far as
 * the tables know or with counts, edges, slots, references, node size and
 * array pointers fuzzed, and graph launches with bindings in, across and
 * out of allocations; garbage SQ tails, SQEs and CQ heads; communicator
 * ids, joins (of ids this thread made, or garbage), queries and destroys,
 * and collectives of ranks that are their communicator's only rank;
 * sync_file exports of events and stream waits on them (FENCE_WAIT);
 * dma-buf exports of ranges in and out of allocations (mapped and read
 * at once, sometimes), and imports of this thread's dma-bufs, sync_files,
 * pipes, the snpu file and garbage fds, the imports used as allocations;
 * checkpoints of this process (CKPT_PROC: every op, pid, timeout and
 * file, or a whole lock, checkpoint into a memfd, unlock) and restores
 * (CKPT_RESTORE) of the images, whole or damaged (cut short, bytes
 * flipped, a byte flipped under a recomputed CRC), into fresh files,
 * which a refused restore must leave fresh.
 *
 * The oracle: every return is success or an errno the uapi header
 * documents for the command (the table cmds[] below, built from the
 * header's text). Where the argument conventions decide alone (command
 * matching, @size, the copy, @flags) the exact errno is required, a
 * refused call must leave the caller's struct as it was (but @size after
 * E2BIG), and a call with a non-zero reserved, pad or input-zero field
 * must fail (output-only fields are not input-zero: any value there is
 * accepted, and so are the fields of CALLBACK_WAIT and _DONE that only
 * the other command uses). At the end of each test every file is closed and a fresh one
 * must work (allocate, launch, synchronize, get the right bytes back; a
 * NOP through the rings), must report zero usage in CTX_QUERY, and the
 * device's sysfs mem_used and contexts must come back to where they were.
 *
 * Environment:
 *   SNPU_FUZZ_SEED   seed (default: from the clock); printed first as
 *                    "# seed: N"
 *   SNPU_FUZZ_OPS    operations per test (default FUZZ_DEFAULT_OPS)
 *   SNPU_FUZZ_SECS   time bound per test in seconds (default
 *                    FUZZ_DEFAULT_SECS); whichever bound comes first
 *   SNPU_FUZZ_THREADS  threads of the multi-threaded tests (default 4)
 *   SNPU_FUZZ_ONLY   run only the test of that name, skip the others
 *   SNPU_FUZZ_TRACE  1: print every operation (a full op sequence)
 *   SNPU_FUZZ_VERBOSE  1: the errnos of each command, in the statistics
 *
 * Reproducibility: the random choices of operation N of thread T are a
 * function of (seed, test, T, N) only, never of what the kernel returned,
 * so replaying a seed in the single-thread test replays the same sequence
 * of operations and arguments (the handles in the tables are whatever the
 * kernel returned; only results that depend on timing, such as a wait's
 * timeout, can make the state differ). With several threads the
 * interleaving is the scheduler's: replaying a seed is best effort, each
 * thread makes the same choices but they meet in another order.
 *
 * On a failure the test prints the seed, the test, the thread, the
 * operation index and the last operations of that thread, and how to
 * replay it. Runs as root in the test VM (and the single-thread mix
 * again as nobody: as_nobody), module loaded with defaults,
 * with or without the test hooks (test_hooks=1, SNPU_CAP_TEST_HOOKS):
 * without them SNPU_IOC_NOP must be EOPNOTSUPP, and most SPIN and FAIL
 * launches become NOPs, the others must be refused with EOPNOTSUPP.
 */
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "snpu_test.h"

#define FUZZ_DEFAULT_OPS	8000
#define FUZZ_DEFAULT_SECS	5
#define FUZZ_DEFAULT_THREADS	4
/* The harness's own timeout; the fuzzer's watchdog fires long before. */
#define FUZZ_HARNESS_TIMEOUT	3600
/* Past its time bound, how long a test may take to finish its threads. */
#define FUZZ_GRACE_SECS		60

#define PAGE			4096UL
#define NFDS			3
#define MAX_THREADS		16
#define NSTREAMS		12
#define NEVENTS			12
#define NOWNERS			4
#define NHOSTS			8
#define NALLOCS			16
#define NCOOKIES		16
#define NGRAPHS			8
#define NCOMMS			4	/* ranks per file; ids per thread */
#define NSHARED			4	/* dma-buf and sync_file fds per thread */
#define NMAPS			24
#define NTRACE			48
#define TRACE_LEN		240

#define ARG_PAGES		3	/* + 1 guard page */
#define TASK_PAGES		64	/* + 1 guard page */
#define SCRATCH_PAGES		256	/* + 1 guard page */
#define POOL_PAGES		32
#define FIXED_PAGES		32	/* reservation for MAP_FIXED mappings */

/* Bounds that keep the work the fuzzer queues cheap under QEMU TCG. */
#define TASK_MAX_BYTES		(256UL << 10)
#define COPY_MAX_BYTES		(1UL << 20)
#define SPIN_MAX_NS		50000ULL
#define GEMM_MAX_MACS		(1ULL << 18)
#define BLOCKS_MAX		64

#define RING_OFFSET		SNPU_RING_MMAP_OFFSET

/* A signal whose handler does nothing: it only interrupts a wait. */
#define SIG_INTR		(SIGRTMIN + 3)

static const uint64_t kernel_ptrs[] = {
	0xffffffff81000000ULL,	/* kernel text */
	0xffff888000000000ULL,	/* direct map */
	0xffffffffff600000ULL,	/* vsyscall page */
	0x8000000000000000ULL,	/* non-canonical */
	0x00007ffffffff000ULL,	/* the last user page */
	0xfffffffffffffff8ULL,
};

/* ---- random numbers ----------------------------------------------------- */

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

struct rng {
	uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
	r->s += 0x9e3779b97f4a7c15ULL;
	return mix64(r->s);
}

static uint32_t rn(struct rng *r, uint32_t n)
{
	return n ? (uint32_t)(rnd(r) % n) : 0;
}

static bool pct(struct rng *r, unsigned int p)
{
	return rn(r, 100) < p;
}

/* A value around a boundary of interest. */
static uint64_t boundary64(struct rng *r, uint64_t near)
{
	static const uint64_t v[] = {
		0, 1, 2, 3, 4, 7, 8, 0xff, 0x100, 0xfff, 0x1000, 0x1001,
		0x7fffffff, 0x80000000, 0xffffffff, 0x100000000ULL,
		0x7fffffffffffffffULL, 0x8000000000000000ULL, ~0ULL,
		~0ULL - 1,
	};

	switch (rn(r, 4)) {
	case 0:
		return near + (uint64_t)(int64_t)(int)(rn(r, 9) - 4);
	case 1:
		return rnd(r);
	default:
		return v[rn(r, sizeof(v) / sizeof(v[0]))];
	}
}

/* ---- errno sets ------------------------------------------------------- */

struct eset {
	uint64_t w[3];
};

static void eset_add(struct eset *s, int e)
{
	if (e > 0 && e < 192)
		s->w[e / 64] |= 1ULL << (e % 64);
}

static bool eset_has(const struct eset *s, int e)
{
	return e > 0 && e < 192 && (s->w[e / 64] >> (e % 64)) & 1;
}

static void eset_str(const struct eset *s, char *buf, size_t len)
{
	size_t n = 0;
	int e;

	buf[0] = 0;
	for (e = 1; e < 192 && n + 1 < len; e++)
		if (eset_has(s, e))
			n += snprintf(buf + n, len - n, "%s%s", n ? "," : "",
				      strerrorname_np(e) ?: "?");
}

static const char *ename(int e)
{
	const char *s = e ? strerrorname_np(e) : "0";

	return s ?: "E?";
}

/* ---- the commands ------------------------------------------------------- */

enum {
	C_GET_INFO, C_CTX_QUERY, C_MEM_ALLOC, C_MEM_FREE, C_MEM_QUERY,
	C_MEM_COPY, C_MEM_SET, C_HOST_ALLOC, C_HOST_REGISTER, C_HOST_FREE,
	C_STREAM_CREATE, C_STREAM_DESTROY, C_STREAM_SYNC, C_STREAM_QUERY,
	C_STREAM_ABORT, C_STREAM_RESET, C_EVENT_CREATE, C_EVENT_DESTROY,
	C_EVENT_QUERY, C_EVENT_SYNC, C_EVENT_ELAPSED, C_SUBMIT,
	C_CALLBACK_WAIT, C_CALLBACK_DONE, C_NOP, C_RING_SETUP, C_ENTER,
	C_OWNER_CREATE, C_OWNER_DESTROY, C_ATTACHED_GET,
	C_SNAP_LOCK, C_SNAP_BACKUP, C_SNAP_RESTORE, C_SNAP_UNLOCK,
	C_SNAP_STATE, C_BG_REGISTER, C_BG_UNREGISTER, C_BG_PARK,
	C_GRAPH_CREATE, C_GRAPH_DESTROY,
	C_COMM_ID, C_COMM_JOIN, C_COMM_DESTROY, C_COMM_QUERY,
	C_EVENT_EXPORT, C_MEM_EXPORT, C_MEM_IMPORT,
	C_CKPT_PROC, C_CKPT_RESTORE,
	C_COUNT
};

/*
 * A byte range of an argument that must be zero on input: reserved, pad,
 * an input a command does not use (SNAPSHOT_* but LOCK: timeout_ns).
 * Never an output-only field: those accept any value.
 */
struct zrange {
	uint16_t off, len;
};

#define Z(type, field) \
	{ offsetof(struct type, field), sizeof(((struct type *)0)->field) }

/*
 * One command: its number, first published size, size in this header,
 * the @flags bits it defines, and the errnos its handler may return as
 * the uapi header documents them (the argument conventions add ENOTTY,
 * EFAULT, EINVAL and E2BIG, checked separately and exactly).
 */
struct cmd_desc {
	const char *name;
	unsigned long nr;
	uint32_t ver0;
	uint32_t ksize;
	uint32_t flags;
	uint64_t cap;		/* SNPU_CAP_* it needs: else ENOTTY */
	bool always_intr;	/* may wait for ever: always arm the timer */
	bool modifies;		/* "resource-modifying": EDEADLK when locked */
	int errs[20];
	struct zrange zero[7];
};

/*
 * The commands, from the uapi header: number, first published size, size
 * in this header, the @flags bits they define, the capability they need,
 * and the errnos their handlers may return as the header documents them
 * (the argument conventions add ENOTTY, EFAULT, EINVAL and E2BIG, checked
 * separately and exactly). @modifies: the header's "resource-modifying
 * calls" (allocations and frees, creates and destroys, stream abort and
 * reset, SUBMIT, ENTER's submission, RING_SETUP, synchronous copies and
 * memsets, ATTACHED_STREAM_GET), which are EDEADLK from the thread that
 * locked the process for a snapshot.
 */
static const struct cmd_desc cmds[C_COUNT] = {
	[C_GET_INFO] = {
		.name = "GET_INFO", .nr = SNPU_IOC_GET_INFO,
		.ver0 = SNPU_INFO_SIZE_VER0, .ksize = sizeof(struct snpu_info),
		.errs = { EINVAL },
		.zero = { Z(snpu_info, reserved) },
	},
	[C_CTX_QUERY] = {
		.name = "CTX_QUERY", .nr = SNPU_IOC_CTX_QUERY,
		.ver0 = SNPU_CTX_QUERY_SIZE_VER0, .ksize = sizeof(struct snpu_ctx_query),
		.errs = { EINVAL },
		.zero = { Z(snpu_ctx_query, reserved) },
	},
	/* bytes, align out of range; quota; device or kernel memory */
	[C_MEM_ALLOC] = {
		.name = "MEM_ALLOC", .nr = SNPU_IOC_MEM_ALLOC,
		.ver0 = SNPU_MEM_ALLOC_SIZE_VER0, .ksize = sizeof(struct snpu_mem_alloc),
		.modifies = true,
		.errs = { EINVAL, ENOSPC, ENOMEM },
		.zero = { Z(snpu_mem_alloc, reserved) },
	},
	[C_MEM_FREE] = {
		.name = "MEM_FREE", .nr = SNPU_IOC_MEM_FREE,
		.ver0 = SNPU_MEM_FREE_SIZE_VER0, .ksize = sizeof(struct snpu_mem_free),
		.modifies = true,
		.errs = { EINVAL },
		.zero = { Z(snpu_mem_free, reserved) },
	},
	[C_MEM_QUERY] = {
		.name = "MEM_QUERY", .nr = SNPU_IOC_MEM_QUERY,
		.ver0 = SNPU_MEM_QUERY_SIZE_VER0, .ksize = sizeof(struct snpu_mem_query),
		.errs = { EINVAL, EFAULT },
		.zero = { Z(snpu_mem_query, reserved) },
	},
	/* EINTR: a fatal signal between two steps */
	[C_MEM_COPY] = {
		.name = "MEM_COPY", .nr = SNPU_IOC_MEM_COPY,
		.ver0 = SNPU_MEM_COPY_SIZE_VER0, .ksize = sizeof(struct snpu_mem_copy),
		.modifies = true,
		.errs = { EINVAL, EFAULT, EINTR },
		.zero = { Z(snpu_mem_copy, pad), Z(snpu_mem_copy, reserved) },
	},
	[C_MEM_SET] = {
		.name = "MEM_SET", .nr = SNPU_IOC_MEM_SET,
		.ver0 = SNPU_MEM_SET_SIZE_VER0, .ksize = sizeof(struct snpu_mem_set),
		.modifies = true,
		.errs = { EINVAL, EFAULT, EINTR },
		.zero = { Z(snpu_mem_set, pad), Z(snpu_mem_set, reserved) },
	},
	[C_HOST_ALLOC] = {
		.name = "HOST_ALLOC", .nr = SNPU_IOC_HOST_ALLOC,
		.ver0 = SNPU_HOST_ALLOC_SIZE_VER0, .ksize = sizeof(struct snpu_host_alloc),
		.modifies = true,
		.errs = { EINVAL, ENOSPC, ENOMEM },
		.zero = { Z(snpu_host_alloc, pad), Z(snpu_host_alloc, reserved) },
	},
	/* EFAULT: "or another error of the kernel's page pinning" */
	[C_HOST_REGISTER] = {
		.name = "HOST_REGISTER", .nr = SNPU_IOC_HOST_REGISTER,
		.ver0 = SNPU_HOST_REGISTER_SIZE_VER0, .ksize = sizeof(struct snpu_host_register),
		.modifies = true,
		.errs = { EINVAL, ENOSPC, ENOMEM, EFAULT, EEXIST },
		.zero = { Z(snpu_host_register, pad), Z(snpu_host_register, reserved) },
	},
	[C_HOST_FREE] = {
		.name = "HOST_FREE", .nr = SNPU_IOC_HOST_FREE,
		.ver0 = SNPU_HANDLE_OP_SIZE_VER0, .ksize = sizeof(struct snpu_handle_op),
		.modifies = true,
		.errs = { EINVAL, ENOENT },
		.zero = { Z(snpu_handle_op, pad), Z(snpu_handle_op, reserved) },
	},
	[C_STREAM_CREATE] = {
		.name = "STREAM_CREATE", .nr = SNPU_IOC_STREAM_CREATE,
		.ver0 = SNPU_STREAM_CREATE_SIZE_VER0, .ksize = sizeof(struct snpu_stream_create),
		.modifies = true,
		.errs = { EINVAL, ENOSPC, ENOMEM, EACCES },
		.zero = { Z(snpu_stream_create, reserved) },
	},
	/* waits for ever for the stream's work: always interrupted */
	[C_STREAM_DESTROY] = {
		.name = "STREAM_DESTROY", .nr = SNPU_IOC_STREAM_DESTROY,
		.ver0 = SNPU_HANDLE_OP_SIZE_VER0, .ksize = sizeof(struct snpu_handle_op),
		.flags = SNPU_STREAM_DESTROY_FORCE,
		.always_intr = true,
		.modifies = true,
		.errs = { EINVAL, ENOENT, EBUSY, EINTR, EPERM },
		.zero = { Z(snpu_handle_op, pad), Z(snpu_handle_op, reserved) },
	},
	[C_STREAM_SYNC] = {
		.name = "STREAM_SYNC", .nr = SNPU_IOC_STREAM_SYNC,
		.ver0 = SNPU_WAIT_SIZE_VER0, .ksize = sizeof(struct snpu_wait),
		.flags = SNPU_WAIT_ABSOLUTE,
		.errs = { EINVAL, ENOENT, ETIMEDOUT, EINTR },
		.zero = { Z(snpu_wait, reserved) },
	},
	[C_STREAM_QUERY] = {
		.name = "STREAM_QUERY", .nr = SNPU_IOC_STREAM_QUERY,
		.ver0 = SNPU_STREAM_QUERY_SIZE_VER0, .ksize = sizeof(struct snpu_stream_query),
		.errs = { EINVAL, ENOENT },
		.zero = { Z(snpu_stream_query, pad), Z(snpu_stream_query, reserved) },
	},
	[C_STREAM_ABORT] = {
		.name = "STREAM_ABORT", .nr = SNPU_IOC_STREAM_ABORT,
		.ver0 = SNPU_HANDLE_OP_SIZE_VER0, .ksize = sizeof(struct snpu_handle_op),
		.modifies = true,
		.errs = { EINVAL, ENOENT },
		.zero = { Z(snpu_handle_op, pad), Z(snpu_handle_op, reserved) },
	},
	[C_STREAM_RESET] = {
		.name = "STREAM_RESET", .nr = SNPU_IOC_STREAM_RESET,
		.ver0 = SNPU_HANDLE_OP_SIZE_VER0, .ksize = sizeof(struct snpu_handle_op),
		.modifies = true,
		.errs = { EINVAL, ENOENT, EBUSY },
		.zero = { Z(snpu_handle_op, pad), Z(snpu_handle_op, reserved) },
	},
	[C_EVENT_CREATE] = {
		.name = "EVENT_CREATE", .nr = SNPU_IOC_EVENT_CREATE,
		.ver0 = SNPU_STREAM_CREATE_SIZE_VER0, .ksize = sizeof(struct snpu_stream_create),
		.modifies = true,
		.errs = { EINVAL, ENOSPC, ENOMEM },
		.zero = { Z(snpu_stream_create, reserved) },
	},
	[C_EVENT_DESTROY] = {
		.name = "EVENT_DESTROY", .nr = SNPU_IOC_EVENT_DESTROY,
		.ver0 = SNPU_HANDLE_OP_SIZE_VER0, .ksize = sizeof(struct snpu_handle_op),
		.modifies = true,
		.errs = { EINVAL, ENOENT },
		.zero = { Z(snpu_handle_op, pad), Z(snpu_handle_op, reserved) },
	},
	[C_EVENT_QUERY] = {
		.name = "EVENT_QUERY", .nr = SNPU_IOC_EVENT_QUERY,
		.ver0 = SNPU_EVENT_QUERY_SIZE_VER0, .ksize = sizeof(struct snpu_event_query),
		.errs = { EINVAL, ENOENT },
		.zero = { Z(snpu_event_query, reserved) },
	},
	[C_EVENT_SYNC] = {
		.name = "EVENT_SYNC", .nr = SNPU_IOC_EVENT_SYNC,
		.flags = SNPU_WAIT_ABSOLUTE,
		.ver0 = SNPU_WAIT_SIZE_VER0, .ksize = sizeof(struct snpu_wait),
		.errs = { EINVAL, ENOENT, ETIMEDOUT, EINTR },
		.zero = { Z(snpu_wait, reserved) },
	},
	[C_EVENT_ELAPSED] = {
		.name = "EVENT_ELAPSED", .nr = SNPU_IOC_EVENT_ELAPSED,
		.ver0 = SNPU_EVENT_ELAPSED_SIZE_VER0, .ksize = sizeof(struct snpu_event_elapsed),
		.errs = { EINVAL, ENOENT, EBUSY },
		.zero = { Z(snpu_event_elapsed, reserved) },
	},
	[C_SUBMIT] = {
		.name = "SUBMIT", .nr = SNPU_IOC_SUBMIT,
		.ver0 = SNPU_SUBMIT_SIZE_VER0, .ksize = sizeof(struct snpu_submit),
		.modifies = true,
		.errs = { EINVAL, ENOSPC, EFAULT, E2BIG, ENOENT, EIO, EOPNOTSUPP,
			  EBADF },
		.zero = { Z(snpu_submit, reserved) },
	},
	[C_CALLBACK_WAIT] = {
		.name = "CALLBACK_WAIT", .nr = SNPU_IOC_CALLBACK_WAIT,
		.flags = SNPU_WAIT_ABSOLUTE,
		.ver0 = SNPU_CALLBACK_SIZE_VER0, .ksize = sizeof(struct snpu_callback),
		.errs = { EINVAL, ETIMEDOUT, EINTR },
		.zero = { Z(snpu_callback, pad), Z(snpu_callback, reserved) },
	},
	[C_CALLBACK_DONE] = {
		.name = "CALLBACK_DONE", .nr = SNPU_IOC_CALLBACK_DONE,
		.ver0 = SNPU_CALLBACK_SIZE_VER0, .ksize = sizeof(struct snpu_callback),
		.errs = { EINVAL, ENOENT },
		.zero = { Z(snpu_callback, pad), Z(snpu_callback, reserved) },
	},
	[C_NOP] = {
		.name = "NOP", .nr = SNPU_IOC_NOP,
	},
	[C_RING_SETUP] = {
		.name = "RING_SETUP", .nr = SNPU_IOC_RING_SETUP,
		.ver0 = SNPU_RING_SETUP_SIZE_VER0, .ksize = sizeof(struct snpu_ring_setup),
		.flags = SNPU_RING_SQPOLL | SNPU_RING_CALLBACK_CQE,
		.modifies = true,
		/* EAGAIN: a 5th SQ poller of a user without CAP_SYS_NICE */
		.errs = { EINVAL, EBUSY, ENOMEM, EAGAIN },
		.zero = { Z(snpu_ring_setup, pad), Z(snpu_ring_setup, reserved) },
	},
	/* "ENTER's submission" is resource-modifying */
	[C_ENTER] = {
		.name = "ENTER", .nr = SNPU_IOC_ENTER,
		.ver0 = SNPU_ENTER_SIZE_VER0, .ksize = sizeof(struct snpu_enter),
		.flags = SNPU_ENTER_GETEVENTS | SNPU_ENTER_SQ_WAKEUP |
			 SNPU_WAIT_ABSOLUTE,
		.modifies = true,
		.errs = { EINVAL, ENXIO, EBUSY, ETIMEDOUT, EINTR },
		.zero = { Z(snpu_enter, pad), Z(snpu_enter, reserved) },
	},
	/* takes a struct snpu_stream_create like STREAM_CREATE */
	[C_OWNER_CREATE] = {
		.name = "OWNER_CREATE", .nr = SNPU_IOC_OWNER_CREATE,
		.ver0 = SNPU_STREAM_CREATE_SIZE_VER0, .ksize = sizeof(struct snpu_stream_create),
		.cap = SNPU_CAP_ATTACHED,
		.modifies = true,
		.errs = { EINVAL, ENOMEM, EACCES },
		.zero = { Z(snpu_stream_create, reserved) },
	},
	/* waits for the attached streams' work: always interrupted */
	[C_OWNER_DESTROY] = {
		.name = "OWNER_DESTROY", .nr = SNPU_IOC_OWNER_DESTROY,
		.ver0 = SNPU_HANDLE_OP_SIZE_VER0, .ksize = sizeof(struct snpu_handle_op),
		.cap = SNPU_CAP_ATTACHED,
		.always_intr = true,
		.modifies = true,
		.errs = { EINVAL, ENOENT, EBUSY, EINTR },
		.zero = { Z(snpu_handle_op, pad), Z(snpu_handle_op, reserved) },
	},
	/* creates a stream: resource-modifying */
	[C_ATTACHED_GET] = {
		.name = "ATTACHED_STREAM_GET", .nr = SNPU_IOC_ATTACHED_STREAM_GET,
		.ver0 = SNPU_ATTACHED_STREAM_SIZE_VER0, .ksize = sizeof(struct snpu_attached_stream),
		.cap = SNPU_CAP_ATTACHED,
		.modifies = true,
		.errs = { EINVAL, ENOSPC, ENOENT, ENOMEM },
		.zero = { Z(snpu_attached_stream, pad), Z(snpu_attached_stream, reserved) },
	},
	/* the snapshot calls (ABI 0.5) */
	[C_SNAP_LOCK] = {
		.name = "SNAPSHOT_LOCK", .nr = SNPU_IOC_SNAPSHOT_LOCK,
		.ver0 = SNPU_SNAPSHOT_SIZE_VER0, .ksize = sizeof(struct snpu_snapshot),
		.cap = SNPU_CAP_SNAPSHOT,
		.errs = { EINVAL, EBADFD, ETIMEDOUT, EINTR, EPERM },
		.zero = { Z(snpu_snapshot, pad), Z(snpu_snapshot, reserved) },
	},
	/* waits until no task is queued or running */
	[C_SNAP_BACKUP] = {
		.name = "SNAPSHOT_BACKUP", .nr = SNPU_IOC_SNAPSHOT_BACKUP,
		.ver0 = SNPU_SNAPSHOT_SIZE_VER0, .ksize = sizeof(struct snpu_snapshot),
		.cap = SNPU_CAP_SNAPSHOT,
		.always_intr = true,
		.errs = { EINVAL, EBADFD, EINTR, ENOMEM, EPERM },
		.zero = { Z(snpu_snapshot, timeout_ns), Z(snpu_snapshot, pad), Z(snpu_snapshot, reserved) },
	},
	[C_SNAP_RESTORE] = {
		.name = "SNAPSHOT_RESTORE", .nr = SNPU_IOC_SNAPSHOT_RESTORE,
		.ver0 = SNPU_SNAPSHOT_SIZE_VER0, .ksize = sizeof(struct snpu_snapshot),
		.cap = SNPU_CAP_SNAPSHOT,
		.errs = { EINVAL, EBADFD, ESTALE, EIO, EINTR, EPERM },
		.zero = { Z(snpu_snapshot, timeout_ns), Z(snpu_snapshot, pad), Z(snpu_snapshot, reserved) },
	},
	[C_SNAP_UNLOCK] = {
		.name = "SNAPSHOT_UNLOCK", .nr = SNPU_IOC_SNAPSHOT_UNLOCK,
		.ver0 = SNPU_SNAPSHOT_SIZE_VER0, .ksize = sizeof(struct snpu_snapshot),
		.cap = SNPU_CAP_SNAPSHOT,
		.errs = { EINVAL, EBADFD, EINTR, EPERM },
		.zero = { Z(snpu_snapshot, timeout_ns), Z(snpu_snapshot, pad), Z(snpu_snapshot, reserved) },
	},
	[C_SNAP_STATE] = {
		.name = "SNAPSHOT_STATE", .nr = SNPU_IOC_SNAPSHOT_STATE,
		.ver0 = SNPU_SNAPSHOT_SIZE_VER0, .ksize = sizeof(struct snpu_snapshot),
		.cap = SNPU_CAP_SNAPSHOT,
		.errs = { EINVAL },
		.zero = { Z(snpu_snapshot, timeout_ns), Z(snpu_snapshot, pad), Z(snpu_snapshot, reserved) },
	},
	[C_BG_REGISTER] = {
		.name = "BG_REGISTER", .nr = SNPU_IOC_BG_REGISTER,
		.ver0 = SNPU_SNAPSHOT_SIZE_VER0, .ksize = sizeof(struct snpu_snapshot),
		.cap = SNPU_CAP_SNAPSHOT,
		.errs = { EINVAL, EEXIST, ENOMEM, EPERM },
		.zero = { Z(snpu_snapshot, timeout_ns), Z(snpu_snapshot, pad), Z(snpu_snapshot, reserved) },
	},
	[C_BG_UNREGISTER] = {
		.name = "BG_UNREGISTER", .nr = SNPU_IOC_BG_UNREGISTER,
		.ver0 = SNPU_SNAPSHOT_SIZE_VER0, .ksize = sizeof(struct snpu_snapshot),
		.cap = SNPU_CAP_SNAPSHOT,
		.errs = { EINVAL, ENOENT, EPERM },
		.zero = { Z(snpu_snapshot, timeout_ns), Z(snpu_snapshot, pad), Z(snpu_snapshot, reserved) },
	},
	/* parks until RUNNING: always interrupted */
	[C_BG_PARK] = {
		.name = "BG_PARK", .nr = SNPU_IOC_BG_PARK,
		.ver0 = SNPU_SNAPSHOT_SIZE_VER0, .ksize = sizeof(struct snpu_snapshot),
		.cap = SNPU_CAP_SNAPSHOT,
		.always_intr = true,
		.errs = { EINVAL, EINTR, ENOENT, EPERM },
		.zero = { Z(snpu_snapshot, timeout_ns), Z(snpu_snapshot, pad), Z(snpu_snapshot, reserved) },
	},
	/*
	 * graphs (ABI 0.7): E2BIG for a node's bytes past the kernel's
	 * node size, EOPNOTSUPP for a test hook without test_hooks, ENOENT
	 * for a collective node (ABI 0.11) naming no rank of the file
	 */
	[C_GRAPH_CREATE] = {
		.name = "GRAPH_CREATE", .nr = SNPU_IOC_GRAPH_CREATE,
		.ver0 = SNPU_GRAPH_CREATE_SIZE_VER0, .ksize = sizeof(struct snpu_graph_create),
		.cap = SNPU_CAP_GRAPHS,
		.modifies = true,
		.errs = { EINVAL, EFAULT, ENOSPC, ENOMEM, E2BIG, EOPNOTSUPP,
			  ENOENT },
		.zero = { Z(snpu_graph_create, pad), Z(snpu_graph_create, reserved) },
	},
	[C_GRAPH_DESTROY] = {
		.name = "GRAPH_DESTROY", .nr = SNPU_IOC_GRAPH_DESTROY,
		.ver0 = SNPU_HANDLE_OP_SIZE_VER0, .ksize = sizeof(struct snpu_handle_op),
		.cap = SNPU_CAP_GRAPHS,
		.modifies = true,
		.errs = { EINVAL, ENOENT },
		.zero = { Z(snpu_handle_op, pad), Z(snpu_handle_op, reserved) },
	},
	/*
	 * collectives (ABI 0.11): ENOSPC past SNPU_COMM_MAX_PER_FILE;
	 * COMM_JOIN's ENOENT, EACCES, EEXIST and ECONNRESET; a DESTROY
	 * without FORCE waits for the rank's collectives (EINTR, and
	 * EBUSY while another DESTROY waits)
	 */
	[C_COMM_ID] = {
		.name = "COMM_ID", .nr = SNPU_IOC_COMM_ID,
		.ver0 = SNPU_COMM_ID_SIZE_VER0, .ksize = sizeof(struct snpu_comm_id),
		.cap = SNPU_CAP_COLLECTIVES,
		.modifies = true,
		.errs = { EINVAL, ENOSPC, ENOMEM },
		.zero = { Z(snpu_comm_id, reserved) },
	},
	[C_COMM_JOIN] = {
		.name = "COMM_JOIN", .nr = SNPU_IOC_COMM_JOIN,
		.ver0 = SNPU_COMM_JOIN_SIZE_VER0, .ksize = sizeof(struct snpu_comm_join),
		.cap = SNPU_CAP_COLLECTIVES,
		.modifies = true,
		.errs = { EINVAL, ENOENT, EACCES, EEXIST, ECONNRESET, ENOSPC,
			  ENOMEM },
		.zero = { Z(snpu_comm_join, pad), Z(snpu_comm_join, reserved) },
	},
	[C_COMM_DESTROY] = {
		.name = "COMM_DESTROY", .nr = SNPU_IOC_COMM_DESTROY,
		.ver0 = SNPU_HANDLE_OP_SIZE_VER0, .ksize = sizeof(struct snpu_handle_op),
		.flags = SNPU_COMM_DESTROY_FORCE,
		.cap = SNPU_CAP_COLLECTIVES,
		.always_intr = true,
		.modifies = true,
		.errs = { EINVAL, ENOENT, EBUSY, EINTR },
		.zero = { Z(snpu_handle_op, pad), Z(snpu_handle_op, reserved) },
	},
	[C_COMM_QUERY] = {
		.name = "COMM_QUERY", .nr = SNPU_IOC_COMM_QUERY,
		.ver0 = SNPU_COMM_QUERY_SIZE_VER0, .ksize = sizeof(struct snpu_comm_query),
		.cap = SNPU_CAP_COLLECTIVES,
		.errs = { EINVAL, ENOENT },
		.zero = { Z(snpu_comm_query, reserved) },
	},
	/* fences (ABI 0.12): EINVAL for an event never recorded; no fd left */
	[C_EVENT_EXPORT] = {
		.name = "EVENT_EXPORT", .nr = SNPU_IOC_EVENT_EXPORT,
		.ver0 = SNPU_EVENT_EXPORT_SIZE_VER0, .ksize = sizeof(struct snpu_event_export),
		.flags = SNPU_EXPORT_CLOEXEC,
		.cap = SNPU_CAP_FENCES,
		.errs = { EINVAL, ENOENT, EMFILE, ENOMEM },
		.zero = { Z(snpu_event_export, reserved) },
	},
	/*
	 * dma-buf (ABI 0.13): EXPORT's EFAULT for a range outside one
	 * allocation; IMPORT's EBADF (no open file), EINVAL (not a
	 * dma-buf), ENOSPC (quota), EOPNOTSUPP (no kernel mapping)
	 */
	[C_MEM_EXPORT] = {
		.name = "MEM_EXPORT", .nr = SNPU_IOC_MEM_EXPORT,
		.ver0 = SNPU_MEM_EXPORT_SIZE_VER0, .ksize = sizeof(struct snpu_mem_export),
		.flags = SNPU_EXPORT_CLOEXEC,
		.cap = SNPU_CAP_DMABUF,
		.modifies = true,
		.errs = { EINVAL, EFAULT, EMFILE, ENOMEM },
		.zero = { Z(snpu_mem_export, pad), Z(snpu_mem_export, reserved) },
	},
	[C_MEM_IMPORT] = {
		.name = "MEM_IMPORT", .nr = SNPU_IOC_MEM_IMPORT,
		.ver0 = SNPU_MEM_IMPORT_SIZE_VER0, .ksize = sizeof(struct snpu_mem_import),
		.cap = SNPU_CAP_DMABUF,
		.modifies = true,
		.errs = { EINVAL, EBADF, ENOSPC, ENOMEM, EOPNOTSUPP },
		.zero = { Z(snpu_mem_import, pad), Z(snpu_mem_import, reserved) },
	},
	/*
	 * checkpoint to a file (ABI 0.14, Documentation/checkpoint.rst):
	 * CKPT_PROC's errors of LOCK (ETIMEDOUT, EINTR), of the checkpoint
	 * (EOPNOTSUPP for what an image cannot hold, EBUSY for a
	 * communicator whose ranks are not at the same collective, EPROTO
	 * for rings whose counters the process left out of range, ESTALE,
	 * EINTR, the file's write errors: ENOSPC, EIO; EINVAL for a file
	 * that cannot be written to); RESTORE's errors of the image and of
	 * the target (re-pinning registered host memory: EFAULT, EEXIST;
	 * a rings' poller past the user's limit: EAGAIN)
	 */
	[C_CKPT_PROC] = {
		.name = "CKPT_PROC", .nr = SNPU_IOC_CKPT_PROC,
		.ver0 = SNPU_CKPT_PROC_SIZE_VER0, .ksize = sizeof(struct snpu_ckpt_proc),
		.cap = SNPU_CAP_CHECKPOINT,
		.errs = { EINVAL, EBADF, EBADFD, EPERM, ESRCH, EOPNOTSUPP,
			  ESTALE, EINTR, ETIMEDOUT, ENOMEM, EBUSY, ENOSPC, EIO,
			  EPROTO },
		.zero = { Z(snpu_ckpt_proc, pad), Z(snpu_ckpt_proc, reserved) },
	},
	[C_CKPT_RESTORE] = {
		.name = "CKPT_RESTORE", .nr = SNPU_IOC_CKPT_RESTORE,
		.ver0 = SNPU_CKPT_RESTORE_SIZE_VER0, .ksize = sizeof(struct snpu_ckpt_restore),
		.cap = SNPU_CAP_CHECKPOINT,
		.modifies = true,
		.errs = { EINVAL, EBADF, ESPIPE, ENOTEMPTY, ENOENT, ENOEXEC,
			  EBADMSG, EPROTO, ENODATA, EADDRINUSE, ENOSPC, ENOMEM,
			  EACCES, EINTR, EEXIST, EFAULT, EAGAIN },
		.zero = { Z(snpu_ckpt_restore, reserved) },
	},
};

/* The argument of any command, with room for a grown struct. */
union fz_arg {
	struct {
		uint32_t size;
		uint32_t flags;
	} hdr;
	struct snpu_info info;
	struct snpu_ctx_query ctx_query;
	struct snpu_mem_alloc mem_alloc;
	struct snpu_mem_free mem_free;
	struct snpu_mem_query mem_query;
	struct snpu_mem_copy mem_copy;
	struct snpu_mem_set mem_set;
	struct snpu_host_alloc host_alloc;
	struct snpu_host_register host_register;
	struct snpu_handle_op handle_op;
	struct snpu_stream_create create;
	struct snpu_wait wait;
	struct snpu_stream_query stream_query;
	struct snpu_event_query event_query;
	struct snpu_event_elapsed elapsed;
	struct snpu_submit submit;
	struct snpu_callback callback;
	struct snpu_ring_setup ring_setup;
	struct snpu_enter enter;
	struct snpu_attached_stream attached;
	struct snpu_snapshot snapshot;
	struct snpu_graph_create graph_create;
	struct snpu_comm_id comm_id;
	struct snpu_comm_join comm_join;
	struct snpu_comm_query comm_query;
	struct snpu_event_export event_export;
	struct snpu_mem_export mem_export;
	struct snpu_mem_import mem_import;
	struct snpu_ckpt_proc ckpt_proc;
	struct snpu_ckpt_restore ckpt_restore;
	uint8_t raw[256];
};

/* ---- state ---------------------------------------------------------------- */

enum { ST_EMPTY, ST_LIVE, ST_STALE };

struct fz_obj {
	uint32_t h;
	uint8_t st;
	int8_t owner;		/* attached streams: index in owners[] */
	bool recorded;		/* events: a record of it was queued */
};

struct fz_host {
	uint32_t h;
	uint8_t st;
	bool registered;
	bool mapped;
	uint64_t off;		/* mmap offset (allocated) */
	uint64_t bytes;		/* whole pages */
	uint64_t uaddr;		/* mapped or registered at, 0 if neither */
};

struct fz_alloc {
	uint64_t addr;
	uint64_t bytes;
	uint8_t st;
};

/* A graph and what a launch of it must pass. */
struct fz_graph {
	uint32_t h;
	uint8_t st;
	uint8_t slots;
	uint64_t slot_bytes[SNPU_GRAPH_MAX_SLOTS];
	uint64_t scratch_bytes;
};

struct fz_cookie {
	uint32_t cookie;
	unsigned int gen;
};

/* One file of the device and what the fuzzer knows of its context. */
struct fz_ctx {
	pthread_mutex_t lock;
	int fd;
	unsigned int gen;		/* bumped by every reopen */
	struct fz_obj streams[NSTREAMS];
	struct fz_obj events[NEVENTS];
	struct fz_obj owners[NOWNERS];
	struct fz_host hosts[NHOSTS];
	struct fz_alloc allocs[NALLOCS];
	struct fz_cookie cookies[NCOOKIES];
	struct fz_graph graphs[NGRAPHS];
	struct fz_obj comms[NCOMMS];	/* ranks; recorded: complete alone */
	unsigned int ncookies;
	bool ring_set;
	bool ring_tainted;		/* see ring_taint() */
	struct snpu_ring_setup ring;
};

enum { MAP_NONE, MAP_HOST, MAP_RING };

/* A mapping made (and only ever touched or unmapped) by one thread. */
struct fz_map {
	uint8_t kind;
	int ctx;
	unsigned int gen;
	char *p;
	size_t len;
	bool writable;
	bool tainted;			/* MAP_RING: see ring_taint() */
	struct snpu_ring_setup ring;	/* MAP_RING: the layout */
};

enum { MODE_SINGLE, MODE_THREADS, MODE_RINGS, MODE_NOBODY, MODE_COUNT };

static const char *const mode_names[MODE_COUNT] = {
	"single_thread", "multi_thread", "rings", "nobody",
};

struct fz;

struct fzt {
	struct fz *fz;
	int id;
	pthread_t th;
	uint64_t seed;
	uint64_t op;		/* index of the operation running */
	uint64_t ops;		/* operations done */
	uint64_t max_ops;
	bool clean;		/* build valid arguments (real tasks) */
	bool locked;		/* this thread has locked the process */
	bool bg;		/* this thread is a background thread */

	char *arg;		/* ARG_PAGES + guard */
	char *ro;		/* one read-only page */
	char *tasks;		/* TASK_PAGES + guard */
	char *scratch;		/* SCRATCH_PAGES + guard */
	char *pool;		/* POOL_PAGES for HOST_REGISTER */
	char *fixed;		/* FIXED_PAGES reserved, PROT_NONE */

	struct fz_map maps[NMAPS];

	timer_t timer;
	bool timer_ok;

	char cur[TRACE_LEN];	/* the operation running, for the watchdog */
	char trace[NTRACE][TRACE_LEN];
	unsigned int ntrace;

	uint64_t calls[C_COUNT];
	uint64_t oks[C_COUNT];
	uint64_t errs[192];
	uint32_t cmd_errs[C_COUNT][140];
	uint64_t mmaps, munmaps, ring_writes, reopens, cqes;
	uint64_t slow_ns[3];		/* the slowest operations */
	struct snpu_task last_graph;	/* the last graph launch made */
	int last_graph_ctx;		/* its file */
	unsigned int graph_burst;	/* repeats of it still to make */
	char slow[3][TRACE_LEN];
	uint8_t comm_ids[NCOMMS][SNPU_COMM_ID_BYTES];	/* COMM_ID's */
	unsigned int ncomm_ids;
	int dmabufs[NSHARED];	/* MEM_EXPORT's fds + 1; 0: none */
	int fences[NSHARED];	/* EVENT_EXPORT's fds + 1; 0: none */
	unsigned int ndmabufs, nfences;	/* exports so far */
	int alt_fd;		/* fd + 1 of a file fz_ioctl() uses, 0: none */
};

struct fz {
	int mode;
	uint64_t seed;
	uint64_t max_ops;
	uint64_t deadline_ns;
	int nthreads;
	bool mt;
	bool trace;
	uint64_t caps;		/* SNPU_CAP_* of the kernel */
	struct snpu_info info;
	struct fz_ctx ctx[NFDS];
	struct fzt th[MAX_THREADS];
	volatile int stop;
	pthread_mutex_t fail_lock;
	bool failed;
	char failmsg[8192];
	long long contexts_before;
};

static uint64_t g_seed;
static uint64_t g_ops = FUZZ_DEFAULT_OPS;
static double g_secs = FUZZ_DEFAULT_SECS;
static int g_threads = FUZZ_DEFAULT_THREADS;
static bool g_trace;
static bool g_verbose;
static const char *g_only;

static uint64_t now_ns(void)
{
	return snpu_now_ns();
}

/* ---- failure, trace ------------------------------------------------------ */

static void trace_add(struct fzt *t, const char *line)
{
	char *dst = t->trace[t->ntrace++ % NTRACE];
	size_t n = strnlen(line, TRACE_LEN - 1);

	memcpy(dst, line, n);
	dst[n] = 0;
	if (t->fz->trace)
		printf("# t%d %s\n", t->id, line);
}

static void fz_fail(struct fzt *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fz_fail(struct fzt *t, const char *fmt, ...)
{
	struct fz *fz = t->fz;
	char msg[512];
	va_list ap;
	size_t n;
	unsigned int i, first;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	pthread_mutex_lock(&fz->fail_lock);
	if (!fz->failed) {
		fz->failed = true;
		n = snprintf(fz->failmsg, sizeof(fz->failmsg),
			     "FUZZ FAILURE: %s\n  seed %llu, test %s, thread %d, op %llu\n"
			     "  replay: SNPU_FUZZ_SEED=%llu SNPU_FUZZ_OPS=%llu SNPU_FUZZ_ONLY=%s%s\n"
			     "  last operations of thread %d (oldest first):\n",
			     msg, (unsigned long long)fz->seed,
			     mode_names[fz->mode], t->id,
			     (unsigned long long)t->op,
			     (unsigned long long)g_seed,
			     (unsigned long long)(fz->mt ? fz->max_ops :
						  t->op + 1),
			     mode_names[fz->mode],
			     fz->mt ? " (multi-threaded: best effort)" : "",
			     t->id);
		first = t->ntrace > NTRACE ? t->ntrace - NTRACE : 0;
		for (i = first; i < t->ntrace && n < sizeof(fz->failmsg); i++)
			n += snprintf(fz->failmsg + n, sizeof(fz->failmsg) - n,
				      "    %s\n", t->trace[i % NTRACE]);
	}
	fz->stop = 1;
	pthread_mutex_unlock(&fz->fail_lock);
}

/* ---- the interrupt timer, crashes of the fuzzer itself ------------------ */

static __thread struct fzt *tl_self;

/* A fault in the fuzzer is its own bug: say where, then die of it. */
static void on_fault(int sig)
{
	static const char hdr[] = "# fuzzer fault in: ";
	void *bt[32];
	int n;

	if (write(2, hdr, sizeof(hdr) - 1) > 0 && tl_self &&
	    write(2, tl_self->cur, strnlen(tl_self->cur, TRACE_LEN)) > 0)
		n = write(2, "\n", 1);
	n = backtrace(bt, 32);
	backtrace_symbols_fd(bt, n, 2);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void on_intr(int sig)
{
	(void)sig;
}

static void timer_init(struct fzt *t)
{
	struct sigevent sev;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIG_INTR;
	sev._sigev_un._tid = gettid();
	t->timer_ok = !timer_create(CLOCK_MONOTONIC, &sev, &t->timer);
}

/*
 * Interrupt the ioctl about to be made after @ns, and every 2 ms after
 * that until disarmed: a signal that comes before the call sleeps would
 * not end its wait.
 */
static void timer_arm(struct fzt *t, uint64_t ns)
{
	struct itimerspec its;

	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = ns / NS_PER_SEC;
	its.it_value.tv_nsec = ns % NS_PER_SEC;
	its.it_interval.tv_nsec = 2 * NS_PER_MS;
	if (t->timer_ok)
		timer_settime(t->timer, 0, &its, NULL);
}

static void timer_disarm(struct fzt *t)
{
	struct itimerspec its;

	memset(&its, 0, sizeof(its));
	if (t->timer_ok)
		timer_settime(t->timer, 0, &its, NULL);
}

/* ---- tables --------------------------------------------------------------- */

static struct fz_ctx *C(struct fzt *t, int c)
{
	return &t->fz->ctx[c];
}

static void lock(struct fzt *t, int c)
{
	pthread_mutex_lock(&C(t, c)->lock);
}

static void unlock(struct fzt *t, int c)
{
	pthread_mutex_unlock(&C(t, c)->lock);
}

static int pick_ctx(struct fzt *t, struct rng *r)
{
	unsigned int p = rn(r, 100);

	if (t->fz->mt)
		return rn(r, NFDS);
	return p < 75 ? 0 : p < 90 ? 1 : 2;
}

static int other_ctx(struct rng *r, int c)
{
	return (c + 1 + rn(r, NFDS - 1)) % NFDS;
}

enum { K_STREAM, K_EVENT, K_OWNER, K_HOST, K_GRAPH };

static void objs_of(struct fz_ctx *x, int kind, void **base, unsigned int *n,
		    size_t *stride)
{
	switch (kind) {
	case K_STREAM:
		*base = x->streams, *n = NSTREAMS, *stride = sizeof(x->streams[0]);
		break;
	case K_EVENT:
		*base = x->events, *n = NEVENTS, *stride = sizeof(x->events[0]);
		break;
	case K_OWNER:
		*base = x->owners, *n = NOWNERS, *stride = sizeof(x->owners[0]);
		break;
	case K_GRAPH:
		*base = x->graphs, *n = NGRAPHS, *stride = sizeof(x->graphs[0]);
		break;
	default:
		*base = x->hosts, *n = NHOSTS, *stride = sizeof(x->hosts[0]);
		break;
	}
}

/* fz_obj, fz_host and fz_graph all start with { u32 h; u8 st; }. */
struct fz_hdr {
	uint32_t h;
	uint8_t st;
};

/* Handle of an entry in state @st of @kind in ctx @c, from a random start. */
static bool find_obj(struct fzt *t, struct rng *r, int c, int kind, int st,
		     uint32_t *h, int *idx)
{
	struct fz_ctx *x = C(t, c);
	unsigned int n, i, start;
	size_t stride;
	void *base;
	bool found = false;

	objs_of(x, kind, &base, &n, &stride);
	start = rn(r, n);
	lock(t, c);
	for (i = 0; i < n; i++) {
		struct fz_hdr *o = (void *)((char *)base +
					    ((start + i) % n) * stride);

		if (o->st == st) {
			*h = o->h;
			if (idx)
				*idx = (start + i) % n;
			found = true;
			break;
		}
	}
	unlock(t, c);
	return found;
}

static uint32_t garbage_handle(struct rng *r)
{
	static const uint32_t v[] = {
		0, 1, 2, 3, 0x7fffffff, 0x80000000, 0xffffffff, 0xfffffffe,
		0x10000, 4096,
	};

	return pct(r, 30) ? rn(r, 64) : pct(r, 50) ? (uint32_t)rnd(r) :
		v[rn(r, sizeof(v) / sizeof(v[0]))];
}

/*
 * A handle for @kind on ctx @c: mostly a live one of @c, else a stale one,
 * one of another file, one of another type, or garbage.
 */
static uint32_t pick_handle(struct fzt *t, struct rng *r, int c, int kind,
			    int *idx)
{
	unsigned int p = rn(r, 100);
	uint32_t h;

	if (idx)
		*idx = -1;
	if ((p < 68 || t->clean) && find_obj(t, r, c, kind, ST_LIVE, &h, idx))
		return h;
	if (p < 78 && find_obj(t, r, c, kind, ST_STALE, &h, NULL))
		return h;
	if (p < 85 && find_obj(t, r, other_ctx(r, c), kind, ST_LIVE, &h, NULL))
		return h;
	if (p < 91 && find_obj(t, r, c, (kind + 1 + rn(r, 3)) % 5, ST_LIVE,
			       &h, NULL))
		return h;
	return garbage_handle(r);
}

/* A free (or stale) slot of @kind in @c, under the lock. */
static void *free_slot(struct fz_ctx *x, int kind, struct rng *r)
{
	unsigned int n, i, start = rn(r, 64);
	size_t stride;
	void *base;

	objs_of(x, kind, &base, &n, &stride);
	for (i = 0; i < n; i++) {
		struct fz_hdr *o = (void *)((char *)base +
					    ((start + i) % n) * stride);

		if (o->st != ST_LIVE)
			return o;
	}
	return NULL;
}

static bool table_full(struct fzt *t, struct rng *r, int c, int kind)
{
	bool full;

	lock(t, c);
	full = !free_slot(C(t, c), kind, r);
	unlock(t, c);
	return full;
}

/* Record a new live handle; when the table is full the handle is lost. */
static void add_obj(struct fzt *t, struct rng *r, int c, int kind, uint32_t h,
		    int owner)
{
	struct fz_ctx *x = C(t, c);
	struct fz_obj *o;

	lock(t, c);
	o = free_slot(x, kind, r);
	if (o) {
		o->h = h;
		o->st = ST_LIVE;
		o->owner = owner;
		o->recorded = false;
	}
	unlock(t, c);
}

static void mark_stale(struct fzt *t, int c, int kind, uint32_t h)
{
	struct fz_ctx *x = C(t, c);
	unsigned int n, i;
	size_t stride;
	void *base;

	objs_of(x, kind, &base, &n, &stride);
	lock(t, c);
	for (i = 0; i < n; i++) {
		struct fz_hdr *o = (void *)((char *)base + i * stride);

		if (o->st == ST_LIVE && o->h == h)
			o->st = ST_STALE;
	}
	unlock(t, c);
}

static bool stream_known(struct fzt *t, int c, uint32_t h)
{
	bool known = false;
	int i;

	lock(t, c);
	for (i = 0; i < NSTREAMS; i++)
		if (C(t, c)->streams[i].st == ST_LIVE &&
		    C(t, c)->streams[i].h == h)
			known = true;
	unlock(t, c);
	return known;
}

/* A device allocation of @c (or stale, foreign, none). */
static bool pick_alloc(struct fzt *t, struct rng *r, int c,
		       struct fz_alloc *out)
{
	unsigned int p = rn(r, 100), i, start = rn(r, NALLOCS);
	int want = ST_LIVE, cc = c;
	bool found = false;

	if (t->clean)
		p = 0;
	if (p >= 97)
		return false;
	if (p >= 90)
		want = ST_STALE;
	else if (p >= 84)
		cc = other_ctx(r, c);
	lock(t, cc);
	for (i = 0; i < NALLOCS; i++) {
		struct fz_alloc *a = &C(t, cc)->allocs[(start + i) % NALLOCS];

		if (a->st == want) {
			*out = *a;
			found = true;
			break;
		}
	}
	unlock(t, cc);
	return found;
}

static uint64_t garbage_addr(struct fzt *t, struct rng *r)
{
	switch (rn(r, 7)) {
	case 0:
		return 0;
	case 1:
		return 1ULL << 44;	/* the start of the first window */
	case 2:
		return (1ULL << 44) + ((uint64_t)rn(r, 8) << 36) +
			(rn(r, 4) << 12);
	case 3:
		return kernel_ptrs[rn(r, sizeof(kernel_ptrs) / 8)];
	case 4:
		return (uintptr_t)t->scratch;
	default:
		return boundary64(r, 1ULL << 44);
	}
}

/*
 * A device range: in an allocation, across its end, in its rounded tail,
 * before it, empty, huge; or not in any allocation. @a4: aligned for
 * 32-bit elements. A range meant to be valid is at most @maxlen bytes.
 */
static void pick_range(struct fzt *t, struct rng *r, int c, bool a4,
		       uint64_t maxlen, __u64 *addr, __u64 *bytes)
{
	struct fz_alloc a;
	uint64_t off, len, room;

	if (!pick_alloc(t, r, c, &a)) {
		*addr = garbage_addr(t, r);
		*bytes = pct(r, 80) ? 4 + rn(r, 4096) : boundary64(r, 4096);
		return;
	}
	switch (t->clean ? rn(r, 14) : rn(r, 20)) {
	default:	/* inside */
		off = rn(r, a.bytes);
		if (a4)
			off &= ~3ULL;
		room = a.bytes - off;
		len = 1 + rn(r, room < maxlen ? room : maxlen);
		if (a4)
			len = len < 4 ? (room >= 4 ? 4 : len) : len & ~3ULL;
		break;
	case 12:
	case 13:	/* the whole allocation */
		off = 0;
		len = a.bytes < maxlen ? a.bytes : maxlen;
		if (a4 && len >= 4)
			len &= ~3ULL;
		break;
	case 14:	/* one byte past its end */
		off = a4 ? rn(r, a.bytes) & ~3ULL : rn(r, a.bytes);
		len = a.bytes - off + (a4 ? 4 : 1);
		break;
	case 15:	/* in the rounded tail, or just past it */
		off = a.bytes + rn(r, 8);
		len = 4;
		break;
	case 16:	/* empty */
		off = 0;
		len = 0;
		break;
	case 17:	/* just before it */
		off = (uint64_t)-4;
		len = 8;
		break;
	case 18:	/* huge */
		off = rn(r, 4) * 4;
		len = boundary64(r, a.bytes);
		break;
	case 19:	/* the last byte(s) */
		len = a4 ? 4 : 1;
		off = a.bytes >= len ? a.bytes - len : 0;
		break;
	}
	*addr = a.addr + off;
	*bytes = len;
}

/*
 * A user pointer for @len bytes: valid scratch memory mostly, else NULL,
 * kernel, unmapped, read-only, running into a guard page, misaligned, or
 * host memory of a context. Never the fuzzer's own argument memory.
 */
static uint64_t pick_uptr(struct fzt *t, struct rng *r, uint64_t len)
{
	uint64_t sz = SCRATCH_PAGES * PAGE;
	uint64_t l = len < sz ? len : sz;
	unsigned int i;

	switch (t->clean ? 0 : rn(r, 20)) {
	default:
		return (uintptr_t)t->scratch + rn(r, sz - l + 1);
	case 10:
		return (uintptr_t)t->scratch + rn(r, 8);
	case 11:	/* ends in the guard page */
		return (uintptr_t)t->scratch + sz - l + 1 + rn(r, l ? l : 1);
	case 12:
		return 0;
	case 13:
		return kernel_ptrs[rn(r, sizeof(kernel_ptrs) / 8)];
	case 14:
		return (uintptr_t)t->scratch + sz;	/* guard page */
	case 15:
		return (uintptr_t)t->ro + rn(r, 64);
	case 16:
		return (uintptr_t)t->pool + rn(r, POOL_PAGES) * PAGE;
	case 17:	/* inside host memory of a context, or the guard page */
		for (i = 0; i < NMAPS; i++) {
			struct fz_map *m = &t->maps[(i + rn(r, NMAPS)) % NMAPS];

			if (m->kind == MAP_HOST && m->len >= len)
				return (uintptr_t)m->p + rn(r, m->len - len + 1);
		}
		return (uintptr_t)t->scratch + sz;
	case 18:
		return rnd(r);
	}
}

/* Host memory of ctx @c for a queued copy: a mapped or registered range. */
static uint64_t pick_host_range(struct fzt *t, struct rng *r, int c,
				uint64_t len)
{
	struct fz_host hs[NHOSTS];
	unsigned int i, n = 0;
	int cc = pct(r, 90) ? c : other_ctx(r, c);

	if (t->clean)
		cc = c;
	lock(t, cc);
	for (i = 0; i < NHOSTS; i++) {
		struct fz_host *x = &C(t, cc)->hosts[i];

		if (t->clean ? x->st == ST_LIVE && (x->registered || x->mapped) &&
		    x->bytes >= len : x->st != ST_EMPTY && x->uaddr)
			hs[n++] = *x;
	}
	unlock(t, cc);
	if (!n || (!t->clean && pct(r, 10)))
		return pick_uptr(t, r, len);
	i = rn(r, n);
	switch (t->clean ? 0 : rn(r, 10)) {
	default:
		if (len > hs[i].bytes)
			return hs[i].uaddr;
		return hs[i].uaddr + rn(r, hs[i].bytes - len + 1);
	case 8:		/* across its end */
		return hs[i].uaddr + hs[i].bytes - (len > 1 ? len / 2 : 0);
	case 9:
		return hs[i].uaddr - PAGE;
	}
}

/* ---- argument memory -------------------------------------------------- */

enum {
	P_NORMAL, P_MISALIGNED, P_STRADDLE, P_RO, P_NULL, P_KERNEL,
	P_GUARD, P_COUNT
};

static const char *const place_names[P_COUNT] = {
	"normal", "misaligned", "straddle", "ro", "null", "kernel", "guard",
};

static char *guard_of(struct fzt *t)
{
	return t->arg + ARG_PAGES * PAGE;
}

/* ---- the ioctl executor ------------------------------------------------- */

#define F_NOMUTATE	1U	/* a call that builds state: no mutation */
#define F_LIGHT		2U	/* mutate rarely */
#define F_BADNR		4U	/* a command number no command has */

struct call {
	int cmd;
	unsigned long nr;
	bool bad_nr;
	int place;
	uint32_t k;		/* P_STRADDLE: readable bytes */
	uint32_t usize;
	bool tail_nz;
	char *at;		/* where the struct went */
	int ret;		/* 0 or -errno */
};

/*
 * A mutated value may ask for real work: a few hundred MiB allocated and
 * zeroed, a poller spinning for seconds. Keep what would be valid cheap.
 */
static void cap_cost(int cmd, union fz_arg *a)
{
	const uint64_t big = 4ULL << 20;

	switch (cmd) {
	case C_MEM_ALLOC:
		if (a->mem_alloc.bytes > big &&
		    a->mem_alloc.bytes <= SNPU_TEST_MEM_TOTAL)
			a->mem_alloc.bytes = big + a->mem_alloc.bytes % 4096;
		break;
	case C_HOST_ALLOC:
		if (a->host_alloc.bytes > big &&
		    a->host_alloc.bytes <= SNPU_TEST_HOST_LIMIT)
			a->host_alloc.bytes = big + a->host_alloc.bytes % 4096;
		break;
	case C_RING_SETUP:
		if (a->ring_setup.flags & SNPU_RING_SQPOLL &&
		    a->ring_setup.idle_ms > 20 &&
		    a->ring_setup.idle_ms <= 10000)
			a->ring_setup.idle_ms = 20;
		break;
	default:
		break;
	}
}

/* Is the struct @a of @cmd non-zero in a range that must be zero? */
static bool zero_violated(int cmd, const union fz_arg *a)
{
	const struct cmd_desc *d = &cmds[cmd];
	unsigned int i, j;

	for (i = 0; i < sizeof(d->zero) / sizeof(d->zero[0]); i++)
		for (j = 0; j < d->zero[i].len; j++)
			if (a->raw[d->zero[i].off + j])
				return true;
	return false;
}

static uint32_t pick_size(struct rng *r, const struct cmd_desc *d,
			  bool *tail_nz)
{
	*tail_nz = false;
	switch (rn(r, 14)) {
	case 0:
		return 0;
	case 1:
		return 4;
	case 2:
		return 7;
	case 3:
		return d->ver0 - 1;
	case 4:
		return d->ver0;
	case 5:
		*tail_nz = pct(r, 50);
		return d->ver0 + 1;
	case 6:
		*tail_nz = pct(r, 50);
		return d->ksize + 8;
	case 7:
		*tail_nz = pct(r, 50);
		return SNPU_IOC_MAX_SIZE;
	case 8:
		return SNPU_IOC_MAX_SIZE + 1;
	case 9:
		return pct(r, 50) ? 0xffffffff : 0x80000000;
	case 10:
		*tail_nz = pct(r, 50);
		return d->ksize + 1 + rn(r, SNPU_IOC_MAX_SIZE - d->ksize);
	case 11:
		return rn(r, d->ver0);
	default:
		return d->ksize;
	}
}

/* The ioctl number: the command's, its size bits changed, or none. */
static unsigned long pick_nr(struct rng *r, const struct cmd_desc *d,
			     bool *bad)
{
	unsigned long nr = d->nr, dir = _IOC_DIR(d->nr);
	unsigned int p = rn(r, 100);

	*bad = false;
	if (p < 50)
		return nr;
	if (p < 85)	/* size bits are ignored: any value */
		return _IOC(dir, _IOC_TYPE(nr), _IOC_NR(nr), rn(r, 1 << 14));
	*bad = true;
	if (p < 93) {	/* another direction */
		unsigned long nd = (dir + 1 + rn(r, 3)) & 3;

		return _IOC(nd, _IOC_TYPE(nr), _IOC_NR(nr), _IOC_SIZE(nr));
	}
	if (p < 98) {	/* a number no command has: past the last one */
		/*
		 * The header's last command, not the table's: a command the
		 * fuzzer does not call (RING_QUERY) is a real number all the
		 * same.
		 */
		unsigned int first = _IOC_NR(SNPU_IOC_RING_QUERY) + 1;

		return _IOC(dir, SNPU_IOC_MAGIC, first + rn(r, 256 - first),
			    _IOC_SIZE(nr));
	}
	/* another type (none the VFS handles itself) */
	return _IOC(dir, "QAs\xff"[rn(r, 4)], _IOC_NR(nr), _IOC_SIZE(nr));
}

/* One word of the struct (past size and flags) set to something odd. */
static void mutate_word(struct rng *r, union fz_arg *a, uint32_t ksize)
{
	uint32_t off;

	if (ksize <= 8)
		return;
	off = 8 + rn(r, (ksize - 8) / 4) * 4;
	if (off + 8 <= ksize && pct(r, 50)) {
		uint64_t v;

		memcpy(&v, a->raw + off, 8);
		v = boundary64(r, v);
		memcpy(a->raw + off, &v, 8);
	} else {
		uint32_t v;

		memcpy(&v, a->raw + off, 4);
		v = (uint32_t)boundary64(r, v);
		memcpy(a->raw + off, &v, 4);
	}
}

/* Set one byte of a must-be-zero range. */
static void mutate_zero(struct rng *r, union fz_arg *a, int cmd)
{
	const struct cmd_desc *d = &cmds[cmd];
	unsigned int n = 0, i;

	while (n < sizeof(d->zero) / sizeof(d->zero[0]) && d->zero[n].len)
		n++;
	if (!n)
		return;
	i = rn(r, n);
	a->raw[d->zero[i].off + rn(r, d->zero[i].len)] = 1 + rn(r, 255);
}

static void fmt_call(struct fzt *t, char *buf, size_t len, int c,
		     const struct call *k, const union fz_arg *a)
{
	const struct cmd_desc *d = &cmds[k->cmd];
	size_t n;
	uint32_t i, words = d->ksize / 8;

	n = snprintf(buf, len, "op %llu fd%d %s nr=%#lx%s size=%u%s place=%s",
		     (unsigned long long)t->op, c, d->name, k->nr,
		     k->bad_nr ? "(bad)" : "", k->usize,
		     k->tail_nz ? "+tail" : "", place_names[k->place]);
	if (k->place == P_STRADDLE && n < len)
		n += snprintf(buf + n, len - n, "/%u", k->k);
	for (i = 1; i < words && n < len; i++) {
		uint64_t w;

		memcpy(&w, a->raw + i * 8, 8);
		n += snprintf(buf + n, len - n, " %llx", (unsigned long long)w);
	}
}

/*
 * Issue @cmd on ctx @c with the argument @a (a valid-ish struct the
 * generator built), after mutating the command number, @size, @flags,
 * fields and where the struct lies, unless @fl says not to. Checks the
 * result against what the header documents and, on success, copies the
 * kernel's output back into @a.
 *
 * Return: 0 or -errno.
 */
static int fz_ioctl(struct fzt *t, struct rng *r, int c, int cmd,
		    union fz_arg *a, unsigned int fl)
{
	const struct cmd_desc *d = &cmds[cmd];
	struct fz *fz = t->fz;
	unsigned int mut = fl & F_NOMUTATE ? 0 : fl & F_LIGHT ? 8 : 30;
	struct call k = { .cmd = cmd };
	static const uint32_t inf = 0xffffffff;
	uint32_t R, W, copied, win;
	struct eset allowed = { { 0 } };
	int exact = -1;		/* the one errno expected, 0: success */
	bool e2big_size = false;	/* E2BIG here writes back @size */
	bool must_fail, ior = _IOC_DIR(d->nr) & _IOC_READ;
	bool intr = false;
	char before[SNPU_IOC_MAX_SIZE + 64];
	char desc[TRACE_LEN], line[2 * TRACE_LEN];
	int64_t to;
	uint64_t intr_ns;
	unsigned int i;
	int fd, err;

	/* Mutations of the command number, flags and fields. */
	k.nr = d->nr;
	if (pct(r, mut / 3))
		k.nr = pick_nr(r, d, &k.bad_nr);
	while (fl & F_BADNR && !k.bad_nr)
		k.nr = pick_nr(r, d, &k.bad_nr);
	if (d->ksize) {
		if (pct(r, mut / 2))
			a->hdr.flags |= 1U << rn(r, 32);
		else if (d->flags && pct(r, 30))
			a->hdr.flags |= d->flags & (uint32_t)rnd(r);
		if (pct(r, mut / 3))
			mutate_zero(r, a, cmd);
		if (pct(r, mut / 2))
			mutate_word(r, a, d->ksize);
	}
	if (!(fl & F_NOMUTATE))
		cap_cost(cmd, a);
	must_fail = d->ksize && zero_violated(cmd, a);

	/* @size and the bytes past the struct. */
	k.usize = d->ksize;
	if (d->ksize && pct(r, mut / 2))
		k.usize = pick_size(r, d, &k.tail_nz);
	if (d->ksize)
		a->hdr.size = k.usize;

	/* Where the struct lies. */
	k.place = P_NORMAL;
	if (pct(r, mut / 2))
		k.place = rn(r, P_COUNT);
	/* Bytes written: the struct, and the tail up to @size if it fits. */
	win = d->ksize;
	if (k.usize > win && k.usize <= SNPU_IOC_MAX_SIZE)
		win = k.usize;
	switch (k.place) {
	case P_NORMAL:
		k.at = t->arg + 64;
		R = W = inf;
		break;
	case P_MISALIGNED:
		k.at = t->arg + 64 + 1 + rn(r, 7);
		R = W = inf;
		break;
	case P_STRADDLE:
		k.k = rn(r, win + 1);
		k.at = guard_of(t) - k.k;
		R = W = k.k;
		break;
	case P_RO:
		k.at = t->ro + (pct(r, 50) ? 0 : PAGE - win);
		R = inf;
		W = 0;
		break;
	case P_NULL:
		k.at = NULL;
		R = W = 0;
		break;
	case P_KERNEL:
		k.at = (char *)(uintptr_t)kernel_ptrs[rn(r, 4)];
		R = W = 0;
		break;
	default:
		k.at = guard_of(t) + rn(r, 64);
		R = W = 0;
		break;
	}
	if (k.place == P_RO)
		mprotect(t->ro, PAGE, PROT_READ | PROT_WRITE);
	if (k.place <= P_RO) {
		uint32_t n = k.place == P_STRADDLE ? k.k : win;

		memcpy(k.at, a->raw, n < d->ksize ? n : d->ksize);
		if (n > d->ksize)
			memset(k.at + d->ksize, 0, n - d->ksize);
		if (k.tail_nz && k.usize > d->ksize) {
			uint32_t pos = d->ksize + rn(r, k.usize - d->ksize);

			if (pos < n)
				k.at[pos] = 1 + rn(r, 255);
			else
				k.tail_nz = false;	/* out of reach */
		}
	} else {
		k.tail_nz = false;
	}
	if (k.place == P_RO)
		mprotect(t->ro, PAGE, PROT_READ);

	/* What the header says must happen. */
	if (k.bad_nr || (d->cap && !(fz->caps & d->cap))) {
		exact = ENOTTY;
	} else if (!d->ksize) {
		/* SNPU_IOC_NOP, a test hook: refused without them. */
		exact = fz->caps & SNPU_CAP_TEST_HOOKS ? 0 : EOPNOTSUPP;
	} else if (R < 4) {
		exact = EFAULT;
	} else if (k.usize < d->ver0) {
		exact = EINVAL;
	} else if (k.usize > SNPU_IOC_MAX_SIZE) {
		exact = W >= 4 ? E2BIG : EFAULT;
		e2big_size = true;
	} else if (R < k.usize && k.usize <= d->ksize) {
		exact = EFAULT;
	} else if (R < k.usize) {
		/* The copy faults; a non-zero tail byte may be seen first. */
		eset_add(&allowed, EFAULT);
		eset_add(&allowed, E2BIG);
		must_fail = true;
		e2big_size = true;
	} else if (k.tail_nz) {
		exact = W >= 4 ? E2BIG : EFAULT;
		e2big_size = true;
	} else if (a->hdr.flags & ~d->flags) {
		exact = EINVAL;
	} else {
		for (i = 0; i < sizeof(d->errs) / sizeof(d->errs[0]) &&
			    d->errs[i]; i++)
			eset_add(&allowed, d->errs[i]);
		/*
		 * This thread locked the process: it would wait for itself.
		 * Alone, nothing can unlock meanwhile: the call must fail.
		 */
		if (d->modifies && t->locked &&
		    (cmd != C_ENTER || a->enter.to_submit)) {
			eset_add(&allowed, EDEADLK);
			if (!fz->mt)
				must_fail = true;
		}
		copied = k.usize < d->ksize ? k.usize : d->ksize;
		if (ior && W < copied) {
			eset_add(&allowed, EFAULT);
			must_fail = true;
		}
	}

	/* Waits that could last: interrupted by the timer. */
	to = 0;
	if (cmd == C_STREAM_SYNC || cmd == C_EVENT_SYNC)
		to = a->wait.timeout_ns;
	else if (cmd == C_CALLBACK_WAIT)
		to = a->callback.timeout_ns;
	else if (cmd == C_ENTER)
		to = a->enter.timeout_ns;
	else if (cmd == C_SNAP_LOCK)
		to = a->snapshot.timeout_ns;
	else if (cmd == C_CKPT_PROC && a->ckpt_proc.op == SNPU_CKPT_OP_LOCK)
		to = a->ckpt_proc.timeout_ns;
	/* A checkpoint waits for the tasks, then writes: give it time. */
	else if (cmd == C_CKPT_PROC || cmd == C_CKPT_RESTORE)
		to = -1;
	if (d->always_intr || to < 0 || to > 20 * NS_PER_MS)
		intr = true;
	intr_ns = (1 + rn(r, 20)) * NS_PER_MS;
	if (cmd == C_CKPT_PROC || cmd == C_CKPT_RESTORE)
		intr_ns *= 1 + rn(r, 40);

	fmt_call(t, desc, sizeof(desc), c, &k, a);
	snprintf(t->cur, sizeof(t->cur), "%s", desc);
	if (k.place <= P_RO)
		memcpy(before, k.at, k.place == P_STRADDLE ? k.k : win);

	fd = t->alt_fd ? t->alt_fd - 1 : C(t, c)->fd;
	if (intr)
		timer_arm(t, intr_ns);
	err = ioctl(fd, k.nr, k.at) < 0 ? errno : 0;
	if (intr)
		timer_disarm(t);
	k.ret = -err;

	t->calls[cmd]++;
	if (!err)
		t->oks[cmd]++;
	else if (err < 192)
		t->errs[err]++;
	if (err < 140)
		t->cmd_errs[cmd][err]++;
	snprintf(line, sizeof(line), "%s -> %s", desc, ename(err));
	trace_add(t, line);

	/* The errno. */
	if (exact >= 0) {
		if (err != exact) {
			fz_fail(t, "%s returned %s, the header says %s (%s)",
				d->name, ename(err), ename(exact), desc);
			return k.ret;
		}
	} else if (err ? !eset_has(&allowed, err) : must_fail) {
		char es[256];

		eset_str(&allowed, es, sizeof(es));
		fz_fail(t, "%s returned %s; documented: %s%s (%s)", d->name,
			ename(err), err || !must_fail ? "0," : "", es, desc);
		return k.ret;
	}

	/* What the kernel wrote back. */
	if (k.place <= P_RO && d->ksize) {
		uint32_t n = k.place == P_STRADDLE ? k.k : win;
		uint32_t sz = 0;

		if (n >= 4)
			memcpy(&sz, k.at, 4);
		/* SUBMIT's E2BIG for a task's tail writes nothing back. */
		if (err == E2BIG && e2big_size) {
			if (sz != d->ksize)
				fz_fail(t, "%s: E2BIG wrote size %u, not %u (%s)",
					d->name, sz, d->ksize, desc);
			memcpy(k.at, before, 4);
		}
		if (!err && ior) {
			copied = k.usize < d->ksize ? k.usize : d->ksize;
			if (sz != copied)
				fz_fail(t, "%s: success wrote size %u, not %u (%s)",
					d->name, sz, copied, desc);
			if (n > copied &&
			    memcmp(k.at + copied, before + copied, n - copied))
				fz_fail(t, "%s: wrote past min(size, its struct) (%s)",
					d->name, desc);
			memcpy(a->raw, k.at, copied);
		} else if (memcmp(k.at, before, n)) {
			fz_fail(t, "%s: %s call changed its argument (%s)",
				d->name, err ? "a refused" : "an _IOW", desc);
		}
	}
	return k.ret;
}

/* ---- tasks -------------------------------------------------------------- */

/* Bound the work of a task that would be valid: the fuzzer never waits long. */
static void task_cap(struct snpu_task *tk)
{
	struct snpu_kernel_arg *g = tk->launch.args;

	if (tk->op != SNPU_OP_LAUNCH)
		return;
	if (tk->launch.kernel == SNPU_KERNEL_SPIN && !g[0].bytes &&
	    g[0].value > SPIN_MAX_NS && g[0].value <= 10000000000ULL)
		g[0].value %= SPIN_MAX_NS;
	if ((tk->launch.kernel == SNPU_KERNEL_GEMM_F32 ||
	     tk->launch.kernel == SNPU_KERNEL_GEMM_TN_F32 ||
	     tk->launch.kernel == SNPU_KERNEL_GEMM_NT_F32) && !g[3].bytes &&
	    !g[4].bytes && !g[5].bytes && g[3].value && g[4].value &&
	    g[5].value && g[3].value <= 65536 && g[4].value <= 65536 &&
	    g[5].value <= 65536) {
		while (g[3].value * g[4].value * g[5].value > GEMM_MAX_MACS) {
			if (g[5].value > 1)
				g[5].value /= 2;
			else if (g[3].value > 1)
				g[3].value /= 2;
			else
				g[4].value /= 2;
		}
	}
	if (tk->launch.block_dim > BLOCKS_MAX &&
	    tk->launch.block_dim <= 65535 &&
	    tk->launch.kernel != SNPU_KERNEL_NOP &&
	    tk->launch.kernel != SNPU_KERNEL_FAIL)
		tk->launch.block_dim = 1 + tk->launch.block_dim % BLOCKS_MAX;
	if (tk->launch.kernel == SNPU_KERNEL_SPIN && tk->launch.block_dim > 4)
		tk->launch.block_dim = 4;
}

/*
 * Without the test hooks (SNPU_CAP_TEST_HOOKS clear), a SPIN or FAIL
 * launch is refused with EOPNOTSUPP and would fail its whole batch: make
 * most of them NOPs, keep one in eight (never in clean mode) to be
 * refused. Decided by bits already drawn: the choices that follow stay
 * the same.
 */
static void task_hooks(struct fzt *t, struct snpu_task *tk)
{
	if (tk->op != SNPU_OP_LAUNCH || t->fz->caps & SNPU_CAP_TEST_HOOKS ||
	    (tk->launch.kernel != SNPU_KERNEL_SPIN &&
	     tk->launch.kernel != SNPU_KERNEL_FAIL))
		return;
	if (t->clean || tk->user_data % 8) {
		tk->launch.kernel = SNPU_KERNEL_NOP;
		memset(tk->launch.args, 0, sizeof(tk->launch.args));
	}
}

static __u64 min64(__u64 a, __u64 b)
{
	return a < b ? a : b;
}

static uint32_t pick_blocks(struct rng *r)
{
	switch (rn(r, 40)) {
	case 0:
		return 0;
	case 1:
		return 65536;
	case 2:
		return 65535;
	default:
		return 1 + (pct(r, 70) ? rn(r, 4) : rn(r, BLOCKS_MAX));
	}
}

static void launch_args(struct fzt *t, struct rng *r, int c,
			struct snpu_task *tk, uint64_t maxlen)
{
	struct snpu_kernel_arg *g = tk->launch.args;
	uint32_t kern = tk->launch.kernel, bd = tk->launch.block_dim;
	__u64 a0, b0;
	uint64_t m, n, kk;
	unsigned int i;

	switch (kern) {
	case SNPU_KERNEL_COPY:
		pick_range(t, r, c, false, maxlen, &g[1].value, &g[1].bytes);
		pick_range(t, r, c, false, maxlen, &g[0].value, &b0);
		if (t->clean)
			g[1].bytes = min64(g[1].bytes, b0);
		g[0].bytes = b0 > g[1].bytes || pct(r, 20) ? b0 : g[1].bytes;
		break;
	case SNPU_KERNEL_FILL:
		pick_range(t, r, c, true, maxlen, &g[0].value, &g[0].bytes);
		g[1].value = (uint32_t)rnd(r);
		break;
	case SNPU_KERNEL_ADD_I32:
	case SNPU_KERNEL_ADD_F32:
	case SNPU_KERNEL_MUL_I32:
	case SNPU_KERNEL_MUL_F32:
		pick_range(t, r, c, true, maxlen, &g[0].value, &g[0].bytes);
		for (i = 1; i < 3; i++) {
			pick_range(t, r, c, true, maxlen, &g[i].value, &a0);
			if (t->clean)
				g[0].bytes = min64(g[0].bytes, a0);
			g[i].bytes = a0 >= g[0].bytes || pct(r, 10) ? a0 :
				g[0].bytes;
		}
		break;
	case SNPU_KERNEL_AXPY_F32:
	case SNPU_KERNEL_RELU_F32:
		pick_range(t, r, c, true, maxlen, &g[0].value, &g[0].bytes);
		pick_range(t, r, c, true, maxlen, &g[1].value, &a0);
		if (t->clean)
			g[0].bytes = min64(g[0].bytes, a0);
		g[1].bytes = a0 >= g[0].bytes || pct(r, 10) ? a0 : g[0].bytes;
		if (kern == SNPU_KERNEL_AXPY_F32)
			g[2].value = pct(r, 90) ? 0x3f800000 : rnd(r);
		break;
	case SNPU_KERNEL_GEMM_F32:
	case SNPU_KERNEL_GEMM_TN_F32:	/* a k x m, b k x n: the same sizes */
	case SNPU_KERNEL_GEMM_NT_F32:	/* a m x k, b n x k */
		m = 1 + rn(r, 16);
		n = 1 + rn(r, 16);
		kk = 1 + rn(r, 16);
		pick_range(t, r, c, true, maxlen, &g[0].value, &g[0].bytes);
		pick_range(t, r, c, true, maxlen, &g[1].value, &g[1].bytes);
		pick_range(t, r, c, true, maxlen, &g[2].value, &g[2].bytes);
		if (t->clean || pct(r, 80)) {
			/* Shrink the problem to what the buffers hold. */
			while (m > 1 && g[0].bytes < 4 * m * n)
				m--;
			while (n > 1 && g[0].bytes < 4 * m * n)
				n--;
			while (kk > 1 && (g[1].bytes < 4 * m * kk ||
					  g[2].bytes < 4 * kk * n))
				kk--;
		}
		g[3].value = m;
		g[4].value = n;
		g[5].value = kk;
		break;
	case SNPU_KERNEL_REDUCE_SUM_I32:
	case SNPU_KERNEL_REDUCE_SUM_F32:
	case SNPU_KERNEL_CRC32C:
		pick_range(t, r, c, true, maxlen, &g[0].value, &g[0].bytes);
		if ((t->clean || pct(r, 85)) && g[0].bytes < 4ULL * bd)
			tk->launch.block_dim = bd = g[0].bytes / 4 ?: 1;
		pick_range(t, r, c, kern != SNPU_KERNEL_CRC32C, maxlen,
			   &g[1].value, &g[1].bytes);
		break;
	case SNPU_KERNEL_SPIN:
		g[0].value = rn(r, SPIN_MAX_NS);
		break;
	case SNPU_KERNEL_FAIL:
		g[0].value = pct(r, 90) ? 1 + rn(r, 4095) :
			boundary64(r, 4095);
		break;
	case SNPU_KERNEL_BIAS_ADD_F32:
	case SNPU_KERNEL_RELU_BWD_F32:
	case SNPU_KERNEL_AFFINE_F32:
		/* y, then x (and bias, or y of the ReLU) at least as large. */
		pick_range(t, r, c, true, maxlen, &g[0].value, &g[0].bytes);
		for (i = 1; i < (kern == SNPU_KERNEL_AFFINE_F32 ? 2U : 3U);
		     i++) {
			pick_range(t, r, c, true, maxlen, &g[i].value, &a0);
			if (t->clean)
				g[0].bytes = min64(g[0].bytes, a0);
			g[i].bytes = a0 >= g[0].bytes || pct(r, 10) ? a0 :
				g[0].bytes;
		}
		if (kern == SNPU_KERNEL_AFFINE_F32) {
			g[2].value = pct(r, 90) ? 0x3b808081 : rnd(r);
			g[3].value = pct(r, 90) ? 0xbf000000 : rnd(r);
		} else if (kern == SNPU_KERNEL_BIAS_ADD_F32) {
			/* n divides y's elements and fits the bias. */
			n = 1 + rn(r, 16);
			while ((t->clean || pct(r, 85)) && n > 1 &&
			       ((g[0].bytes / 4) % n || g[2].bytes < 4 * n))
				n--;
			g[3].value = n;
		}
		break;
	case SNPU_KERNEL_SOFTMAX_XENT_F32:
		/* Rows of ncls logits; loss, labels one per row. */
		n = 1 + rn(r, 16);
		pick_range(t, r, c, true, maxlen, &g[2].value, &g[2].bytes);
		while ((t->clean || pct(r, 85)) && n > 1 &&
		       (g[2].bytes / 4) % n)
			n--;
		pick_range(t, r, c, true, maxlen, &g[1].value, &g[1].bytes);
		if (t->clean)
			g[2].bytes = min64(g[2].bytes, g[1].bytes / (4 * n) *
					   (4 * n)) ?: g[2].bytes;
		pick_range(t, r, c, true, maxlen, &g[0].value, &g[0].bytes);
		pick_range(t, r, c, true, maxlen, &g[3].value, &g[3].bytes);
		g[4].value = n;
		g[5].value = pct(r, 90) ? 0x3d000000 : rnd(r);
		break;
	case SNPU_KERNEL_COLSUM_F32:
	case SNPU_KERNEL_ARGMAX_F32:
		/* in of rows x n, out of n columns or of rows. */
		n = 1 + rn(r, 16);
		pick_range(t, r, c, true, maxlen, &g[1].value, &g[1].bytes);
		while ((t->clean || pct(r, 85)) && n > 1 &&
		       (g[1].bytes / 4) % n)
			n--;
		pick_range(t, r, c, true, maxlen, &g[0].value, &g[0].bytes);
		g[2].value = n;
		break;
	case SNPU_KERNEL_COUNT_EQ_I32:
		/* out per block, a, b at least as large as a. */
		pick_range(t, r, c, true, maxlen, &g[0].value, &g[0].bytes);
		if ((t->clean || pct(r, 85)) && g[0].bytes < 4ULL * bd)
			tk->launch.block_dim = bd = g[0].bytes / 4 ?: 1;
		pick_range(t, r, c, true, maxlen, &g[1].value, &g[1].bytes);
		pick_range(t, r, c, true, maxlen, &g[2].value, &a0);
		if (t->clean)
			g[1].bytes = min64(g[1].bytes, a0);
		g[2].bytes = a0 >= g[1].bytes || pct(r, 10) ? a0 : g[1].bytes;
		break;
	default:
		break;
	}
}

/* One field of a real task set to something else. */
static void task_mutate(struct fzt *t, struct rng *r, int c,
			struct snpu_task *tk)
{
	uint32_t *w = (uint32_t *)tk;
	uint64_t *q = (uint64_t *)tk;

	switch (rn(r, 8)) {
	case 0:
		tk->op = pct(r, 50) ? rn(r, 8) : (uint32_t)boundary64(r, 6);
		break;
	case 1:
		tk->flags = 1U << rn(r, 32);
		break;
	case 2:
		tk->stream = pick_handle(t, r, c, K_STREAM, NULL);
		break;
	case 3:
		tk->reserved0 = (uint32_t)boundary64(r, 0);
		break;
	case 4:
		w[6 + rn(r, 26)] = (uint32_t)boundary64(r, w[6]);
		break;
	default:
		q[3 + rn(r, 13)] = boundary64(r, q[3 + rn(r, 13)]);
		break;
	}
}

/* A live event of @c that a successful SUBMIT recorded. */
static bool find_recorded(struct fzt *t, struct rng *r, int c, __u32 *h)
{
	unsigned int i, start = rn(r, NEVENTS);
	bool found = false;

	lock(t, c);
	for (i = 0; i < NEVENTS && !found; i++) {
		struct fz_obj *e = &C(t, c)->events[(start + i) % NEVENTS];

		if (e->st == ST_LIVE && e->recorded) {
			*h = e->h;
			found = true;
		}
	}
	unlock(t, c);
	return found;
}

/*
 * A device address for @bytes of a graph's slot or scratch: in a live
 * allocation that holds them (clean), else in one too small, across an
 * end, stale, foreign or garbage.
 */
static uint64_t pick_bound(struct fzt *t, struct rng *r, int c,
			   uint64_t bytes)
{
	struct fz_alloc a;

	if (!t->clean && pct(r, 15))
		return pct(r, 30) ? 0 : garbage_addr(t, r);
	if (!pick_alloc(t, r, c, &a))
		return garbage_addr(t, r);
	if (a.bytes >= bytes && (t->clean || pct(r, 80)))
		return a.addr + 4 * rn(r, (a.bytes - bytes) / 4 + 1);
	return a.addr + rn(r, a.bytes);
}

/* Is @h a live graph of ctx @c? */
static bool graph_known(struct fzt *t, int c, uint32_t h)
{
	bool known = false;
	int i;

	lock(t, c);
	for (i = 0; i < NGRAPHS; i++)
		if (C(t, c)->graphs[i].st == ST_LIVE &&
		    C(t, c)->graphs[i].h == h)
			known = true;
	unlock(t, c);
	return known;
}

/*
 * A graph launch (ABI 0.7): a graph of the tables and its bindings; or
 * the last launch made again (same stream, graph and bindings), so that
 * back-to-back launches get stitched.
 */
static void gen_graph_task(struct fzt *t, struct rng *r, int c,
			   struct snpu_task *tk)
{
	struct fz_graph g = { .slots = (uint8_t)rn(r, SNPU_GRAPH_MAX_SLOTS) };
	unsigned int i;
	int idx;

	if (t->last_graph.op == SNPU_OP_GRAPH && t->last_graph_ctx == c &&
	    (t->graph_burst || pct(r, 30)) &&
	    (!t->clean || graph_known(t, c, t->last_graph.graph.graph))) {
		uint64_t ud = tk->user_data;

		if (t->graph_burst)
			t->graph_burst--;
		*tk = t->last_graph;
		tk->user_data = ud;
		return;
	}
	tk->op = SNPU_OP_GRAPH;
	tk->graph.graph = pick_handle(t, r, c, K_GRAPH, &idx);
	if (idx >= 0) {
		lock(t, c);
		g = C(t, c)->graphs[idx];
		unlock(t, c);
	} else {
		for (i = 0; i < g.slots; i++)
			g.slot_bytes[i] = 4096;
		g.scratch_bytes = pct(r, 50) ? 4096 : 0;
	}
	for (i = 0; i < g.slots; i++)
		tk->graph.slots[i] = pick_bound(t, r, c, g.slot_bytes[i]);
	if (g.scratch_bytes)
		tk->graph.scratch = pick_bound(t, r, c, g.scratch_bytes);
	if (!t->clean && pct(r, 5))
		tk->graph.slots[rn(r, SNPU_GRAPH_MAX_SLOTS)] =
			pick_bound(t, r, c, 4);
	if (!t->clean && pct(r, 5))
		tk->graph.scratch = pick_bound(t, r, c, 4);
	t->last_graph = *tk;
	t->last_graph_ctx = c;
	/* Often the next tasks of this file launch it again, back to back. */
	t->graph_burst = pct(r, 50) ? rn(r, 6) : 0;
}

/* Does ctx @c have a live graph (for a launch in a clean batch)? */
static bool graph_live(struct fzt *t, struct rng *r, int c)
{
	uint32_t h;

	return find_obj(t, r, c, K_GRAPH, ST_LIVE, &h, NULL);
}

static uint32_t pick_comm(struct fzt *t, struct rng *r, int c, bool alone,
			  int *idx);

/*
 * A collective of a rank of @c that is its communicator's only rank, so
 * that it never waits for another; false when @c has none.
 */
static bool gen_coll(struct fzt *t, struct rng *r, int c,
		     struct snpu_task *tk, uint64_t maxlen)
{
	__u64 sb, rb;
	int idx;

	tk->coll.comm = pick_comm(t, r, c, true, &idx);
	if (idx < 0)
		return false;
	tk->op = SNPU_OP_COLL;
	tk->coll.coll = 1 + rn(r, 4);
	tk->coll.dtype = 1 + rn(r, 2);
	if (tk->coll.coll == SNPU_COLL_ALLREDUCE ||
	    tk->coll.coll == SNPU_COLL_REDUCE_SCATTER)
		tk->coll.redop = 1 + rn(r, 2);
	pick_range(t, r, c, true, maxlen, &tk->coll.recv, &rb);
	pick_range(t, r, c, true, rb, &tk->coll.send, &sb);
	tk->coll.count = (sb < rb ? sb : rb) / 4;
	if (!tk->coll.count)
		tk->coll.count = 1;
	/* One rank: in place is the same buffer, for every collective. */
	if (pct(r, 20))
		tk->coll.send = tk->coll.recv;
	return true;
}

/*
 * A real task for ctx @c: an op with its arguments taken from the tables,
 * sometimes with one field mutated. @cheap: for big batches, tasks that
 * cost next to nothing.
 */
static int pick_shared_fd(struct fzt *t, struct rng *r, int c,
			  const int *table);

static void gen_task(struct fzt *t, struct rng *r, int c,
		     struct snpu_task *tk, bool cheap)
{
	uint64_t maxlen = cheap ? 4096 : pct(r, 95) ? TASK_MAX_BYTES / 16 :
		TASK_MAX_BYTES;
	unsigned int p = rn(r, 100);
	__u64 b2;

	memset(tk, 0, sizeof(*tk));
	tk->stream = pick_handle(t, r, c, K_STREAM, NULL);
	tk->user_data = rnd(r);
	if (t->fz->caps & SNPU_CAP_GRAPHS && !cheap &&
	    ((t->graph_burst && t->last_graph_ctx == c) || pct(r, 10)) &&
	    (!t->clean || graph_live(t, r, c))) {
		gen_graph_task(t, r, c, tk);
	} else if (cheap && p < 60) {
		tk->op = SNPU_OP_LAUNCH;
		tk->launch.kernel = pct(r, 80) ? SNPU_KERNEL_NOP :
			SNPU_KERNEL_FAIL;
		tk->launch.block_dim = 1 + rn(r, 2);
		if (tk->launch.kernel == SNPU_KERNEL_FAIL)
			tk->launch.args[0].value = 1 + rn(r, 4095);
	} else if (p < 45) {
		tk->op = SNPU_OP_LAUNCH;
		tk->launch.kernel = pct(r, 97) ? rn(r, SNPU_KERNEL_COUNT) :
			(uint32_t)boundary64(r, SNPU_KERNEL_COUNT);
		tk->launch.block_dim = pick_blocks(r);
		if (t->clean) {
			/*
			 * Few failures: they would leave the streams in error.
			 * Not SOFTMAX_XENT, whose labels are whatever the
			 * memory holds (EDOM at run time).
			 */
			tk->launch.kernel = rn(r, SNPU_KERNEL_COUNT - 3);
			if (tk->launch.kernel >= SNPU_KERNEL_SPIN)
				tk->launch.kernel += 2;
			if (tk->launch.kernel >= SNPU_KERNEL_SOFTMAX_XENT_F32)
				tk->launch.kernel++;
			if (pct(r, 3))
				tk->launch.kernel = SNPU_KERNEL_FAIL;
			tk->launch.block_dim = 1 + rn(r, 4);
		}
		launch_args(t, r, c, tk, maxlen);
	} else if (p < 60) {
		tk->op = SNPU_OP_COPY;
		tk->copy.dir = pct(r, 95) || t->clean ? 1 + rn(r, 3) : rn(r, 8);
		switch (tk->copy.dir) {
		case SNPU_COPY_H2D:
			pick_range(t, r, c, false, maxlen, &tk->copy.dst,
				   &tk->copy.bytes);
			tk->copy.src = pick_host_range(t, r, c, tk->copy.bytes);
			break;
		case SNPU_COPY_D2H:
			pick_range(t, r, c, false, maxlen, &tk->copy.src,
				   &tk->copy.bytes);
			tk->copy.dst = pick_host_range(t, r, c, tk->copy.bytes);
			break;
		default:
			pick_range(t, r, c, false, maxlen, &tk->copy.src,
				   &tk->copy.bytes);
			pick_range(t, r, c, false, tk->copy.bytes,
				   &tk->copy.dst, &b2);
			if (b2 < tk->copy.bytes && pct(r, 70))
				tk->copy.bytes = b2;
			break;
		}
	} else if (p < 70) {
		tk->op = SNPU_OP_MEMSET;
		pick_range(t, r, c, false, maxlen, &tk->memset.addr,
			   &tk->memset.bytes);
		tk->memset.value = pct(r, 95) || t->clean ? rn(r, 256) :
			256 + rn(r, 8);
	} else if (p < 80 || (p < 90 && t->clean &&
			      !find_recorded(t, r, c, &tk->event.event))) {
		tk->op = SNPU_OP_EVENT_RECORD;
		tk->event.event = pick_handle(t, r, c, K_EVENT, NULL);
	} else if (p < 90) {
		tk->op = SNPU_OP_STREAM_WAIT;
		if (!t->clean)
			tk->event.event = pick_handle(t, r, c, K_EVENT, NULL);
	} else if (p < 93 && t->fz->caps & SNPU_CAP_COLLECTIVES &&
		   !cheap && gen_coll(t, r, c, tk, maxlen)) {
		/* a collective of a rank alone, made by gen_coll() */
	} else if (p < 94 && t->fz->caps & SNPU_CAP_FENCES && !cheap) {
		/* SUBMIT only: the rings and graphs refuse it (EINVAL). */
		tk->op = SNPU_OP_FENCE_WAIT;
		tk->fence.fd = pick_shared_fd(t, r, c, t->fences);
	} else if (p < 96) {
		tk->op = SNPU_OP_HOST_FUNC;
	} else {
		tk->op = SNPU_OP_LAUNCH;
		tk->launch.kernel = SNPU_KERNEL_SPIN;
		tk->launch.block_dim = 1 + rn(r, 2);
		tk->launch.args[0].value = rn(r, SPIN_MAX_NS);
	}
	if (!t->clean && pct(r, 25))
		task_mutate(t, r, c, tk);
	task_cap(tk);
	task_hooks(t, tk);
}

/* After a successful SUBMIT: the events it records count as recorded. */
static void mark_recorded(struct fzt *t, int c, const char *tasks,
			  uint32_t count, uint32_t tsz)
{
	struct snpu_task tk;
	uint32_t i, j;

	lock(t, c);
	for (i = 0; i < count; i++) {
		memcpy(&tk, tasks + (size_t)i * tsz, sizeof(tk));
		if (tk.op != SNPU_OP_EVENT_RECORD)
			continue;
		for (j = 0; j < NEVENTS; j++)
			if (C(t, c)->events[j].st == ST_LIVE &&
			    C(t, c)->events[j].h == tk.event.event)
				C(t, c)->events[j].recorded = true;
	}
	unlock(t, c);
}

/* ---- generators of the ioctl arguments --------------------------------- */

static int64_t pick_timeout(struct rng *r)
{
	switch (rn(r, 12)) {
	case 0:
		return -1;	/* interrupted by the timer */
	case 1:
		return -2;
	case 2:
		return boundary64(r, 0);
	case 3:
	case 4:
		return 1000 + rn(r, 100000);
	case 5:
		return NS_PER_MS;
	default:
		return 0;
	}
}

static uint64_t pick_alloc_bytes(struct fzt *t, struct rng *r)
{
	static const uint64_t v[] = {
		1, 3, 4, 100, 4095, 4096, 4097, 8192, 12288, 65536,
	};
	uint64_t v0;

	switch (rn(r, 40)) {
	case 0:
		return 0;
	case 1:
		return t->fz->info.mem_total + 1;
	case 2:
		v0 = boundary64(r, t->fz->info.mem_total);
		return v0 > (4ULL << 20) && v0 <= t->fz->info.mem_total ?
			v0 % (1 << 20) : v0;
	case 3:
		return (1 + rn(r, 4)) << 20;
	case 4:
	case 5:
	case 6:
		return v[rn(r, sizeof(v) / sizeof(v[0]))];
	default:
		return 1 + rn(r, 65536);
	}
}

static void post_alloc(struct fzt *t, struct rng *r, int c, uint64_t addr,
		       uint64_t bytes)
{
	struct fz_ctx *x = C(t, c);
	unsigned int i, start = rn(r, NALLOCS);

	lock(t, c);
	for (i = 0; i < NALLOCS; i++) {
		struct fz_alloc *a = &x->allocs[(start + i) % NALLOCS];

		if (a->st != ST_LIVE) {
			a->addr = addr;
			a->bytes = bytes;
			a->st = ST_LIVE;
			break;
		}
	}
	unlock(t, c);
}

static void alloc_stale(struct fzt *t, int c, uint64_t addr)
{
	unsigned int i;

	lock(t, c);
	for (i = 0; i < NALLOCS; i++)
		if (C(t, c)->allocs[i].st == ST_LIVE &&
		    C(t, c)->allocs[i].addr == addr)
			C(t, c)->allocs[i].st = ST_STALE;
	unlock(t, c);
}

static bool allocs_full(struct fzt *t, int c)
{
	unsigned int i, n = 0;

	lock(t, c);
	for (i = 0; i < NALLOCS; i++)
		n += C(t, c)->allocs[i].st == ST_LIVE;
	unlock(t, c);
	return n == NALLOCS;
}

static void op_mem_free(struct fzt *t, struct rng *r, int c)
{
	union fz_arg a;
	struct fz_alloc al;

	memset(&a, 0, sizeof(a));
	a.mem_free.size = sizeof(a.mem_free);
	if (pick_alloc(t, r, c, &al))
		a.mem_free.addr = pct(r, 90) ? al.addr : al.addr + 1 + rn(r, 64);
	else
		a.mem_free.addr = garbage_addr(t, r);
	if (!fz_ioctl(t, r, c, C_MEM_FREE, &a, 0))
		alloc_stale(t, c, a.mem_free.addr);
}

static void op_mem_alloc(struct fzt *t, struct rng *r, int c)
{
	static const uint64_t al[] = {
		1, 2, 3, 4096, 8192, 65536, 1 << 20, 1ULL << 30,
		(1ULL << 30) + 1, 1ULL << 31, 1ULL << 63,
	};
	union fz_arg a;

	if (allocs_full(t, c))
		return op_mem_free(t, r, c);
	memset(&a, 0, sizeof(a));
	a.mem_alloc.size = sizeof(a.mem_alloc);
	a.mem_alloc.bytes = pick_alloc_bytes(t, r);
	if (pct(r, 25))
		a.mem_alloc.align = al[rn(r, sizeof(al) / sizeof(al[0]))];
	if (!fz_ioctl(t, r, c, C_MEM_ALLOC, &a, 0)) {
		uint64_t align = a.mem_alloc.align > 4096 ?
			a.mem_alloc.align : 4096;

		if (a.mem_alloc.addr & (align - 1))
			fz_fail(t, "MEM_ALLOC: address %#llx not aligned to %#llx",
				(unsigned long long)a.mem_alloc.addr,
				(unsigned long long)align);
		post_alloc(t, r, c, a.mem_alloc.addr, a.mem_alloc.bytes);
	}
}

static void op_mem_query(struct fzt *t, struct rng *r, int c)
{
	union fz_arg a;
	__u64 bytes;

	memset(&a, 0, sizeof(a));
	a.mem_query.size = sizeof(a.mem_query);
	pick_range(t, r, c, false, 1 << 20, &a.mem_query.addr, &bytes);
	if (!fz_ioctl(t, r, c, C_MEM_QUERY, &a, 0) &&
	    (a.mem_query.addr < a.mem_query.base ||
	     a.mem_query.addr >= a.mem_query.base + a.mem_query.bytes))
		fz_fail(t, "MEM_QUERY: %#llx is not in [%#llx, +%llu)",
			(unsigned long long)a.mem_query.addr,
			(unsigned long long)a.mem_query.base,
			(unsigned long long)a.mem_query.bytes);
}

static void ring_taint(struct fzt *t, uint64_t lo, uint64_t hi);

static void op_mem_copy(struct fzt *t, struct rng *r, int c)
{
	union fz_arg a;
	__u64 b2;

	memset(&a, 0, sizeof(a));
	a.mem_copy.size = sizeof(a.mem_copy);
	t->clean = pct(r, 40);
	a.mem_copy.dir = pct(r, 95) || t->clean ? 1 + rn(r, 3) :
		(uint32_t)boundary64(r, 3);
	switch (a.mem_copy.dir) {
	case SNPU_COPY_H2D:
		pick_range(t, r, c, false, COPY_MAX_BYTES, &a.mem_copy.dst,
			   &a.mem_copy.bytes);
		a.mem_copy.src = pick_uptr(t, r, a.mem_copy.bytes);
		break;
	case SNPU_COPY_D2H:
		pick_range(t, r, c, false, COPY_MAX_BYTES, &a.mem_copy.src,
			   &a.mem_copy.bytes);
		a.mem_copy.dst = pick_uptr(t, r, a.mem_copy.bytes);
		break;
	default:
		pick_range(t, r, c, false, COPY_MAX_BYTES, &a.mem_copy.src,
			   &a.mem_copy.bytes);
		pick_range(t, r, c, false, a.mem_copy.bytes, &a.mem_copy.dst,
			   &b2);
		if (b2 < a.mem_copy.bytes && (t->clean || pct(r, 70)))
			a.mem_copy.bytes = b2;
		break;
	}
	t->clean = false;
	fz_ioctl(t, r, c, C_MEM_COPY, &a, 0);
	/* Up to where it faulted, whatever the result. */
	if (a.mem_copy.dir == SNPU_COPY_D2H)
		ring_taint(t, a.mem_copy.dst, a.mem_copy.dst + a.mem_copy.bytes);
}

static void op_mem_set(struct fzt *t, struct rng *r, int c)
{
	union fz_arg a;

	memset(&a, 0, sizeof(a));
	a.mem_set.size = sizeof(a.mem_set);
	t->clean = pct(r, 40);
	pick_range(t, r, c, false, COPY_MAX_BYTES, &a.mem_set.addr,
		   &a.mem_set.bytes);
	t->clean = false;
	a.mem_set.value = pct(r, 95) ? rn(r, 256) : (uint32_t)boundary64(r, 255);
	fz_ioctl(t, r, c, C_MEM_SET, &a, 0);
}

static struct fz_map *map_slot(struct fzt *t)
{
	unsigned int i;

	for (i = 0; i < NMAPS; i++)
		if (t->maps[i].kind == MAP_NONE)
			return &t->maps[i];
	return NULL;
}

static void host_mapped(struct fzt *t, int c, uint32_t h, uint64_t uaddr)
{
	unsigned int i;

	lock(t, c);
	for (i = 0; i < NHOSTS; i++) {
		struct fz_host *x = &C(t, c)->hosts[i];

		if (x->st == ST_LIVE && !x->registered && x->h == h) {
			x->mapped = true;
			x->uaddr = uaddr;
		}
	}
	unlock(t, c);
}

static void map_forget(struct fzt *t, struct fz_map *m);
static void refill(struct fzt *t, char *p, size_t len);

/* Unmap (whole) the mappings of this thread that meet [lo, hi). */
static void unmap_overlapping(struct fzt *t, char *lo, char *hi)
{
	unsigned int i;

	for (i = 0; i < NMAPS; i++) {
		struct fz_map *m = &t->maps[i];

		if (m->kind != MAP_NONE && m->p < hi && m->p + m->len > lo) {
			munmap(m->p, m->len);
			refill(t, m->p, m->len);
			map_forget(t, m);
		}
	}
}

/* mmap(2) of host memory of ctx @c, often mutated. */
static void op_host_mmap(struct fzt *t, struct rng *r, int c)
{
	struct fz *fz = t->fz;
	struct fz_map *m = map_slot(t);
	struct fz_host hs = { 0 };
	bool have = false, must_fail = false, fixed = false;
	unsigned int i, start = rn(r, NHOSTS);
	int flags = MAP_SHARED, prot = PROT_READ | PROT_WRITE, err;
	uint64_t off, len;
	char line[2 * TRACE_LEN];
	void *want = NULL, *p;

	if (!m)
		return;
	lock(t, c);
	for (i = 0; i < NHOSTS; i++) {
		struct fz_host *x = &C(t, c)->hosts[(start + i) % NHOSTS];

		if (x->st != ST_EMPTY && !x->registered &&
		    (pct(r, 30) || (x->st == ST_LIVE && !x->mapped))) {
			hs = *x;
			have = true;
			break;
		}
	}
	unlock(t, c);
	off = have ? hs.off : SNPU_HOST_MMAP_OFFSET + ((uint64_t)rn(r, 64) << 12);
	len = have ? hs.bytes : PAGE * (1 + rn(r, 4));
	switch (rn(r, 20)) {
	case 0:
		len += PAGE;
		must_fail = have && hs.st == ST_LIVE;
		break;
	case 1:
		if (len > PAGE) {
			len -= PAGE;
			must_fail = have && hs.st == ST_LIVE;
		}
		break;
	case 2:
		flags = MAP_PRIVATE;
		must_fail = true;
		break;
	case 3:
		off += PAGE;
		break;
	case 4:
		off = RING_OFFSET + PAGE * rn(r, 2);
		break;
	case 5:
		off = boundary64(r, off) & ~(PAGE - 1);
		if (off > (1ULL << 46))
			off = 1ULL << 46;
		/* The state page has an op of its own. */
		if (off == SNPU_STATE_MMAP_OFFSET)
			off += PAGE;
		break;
	case 6:		/* over the register pool: EEXIST if registered */
		if (fz->mt)	/* a hole would let other threads map there */
			break;
		want = t->pool + PAGE * rn(r, POOL_PAGES / 2);
		if (len > POOL_PAGES / 2 * PAGE)
			len = PAGE;
		flags |= MAP_FIXED;
		fixed = true;
		break;
	case 7:		/* in the reservation */
		if (fz->mt)
			break;
		want = t->fixed + PAGE * rn(r, FIXED_PAGES / 2);
		if (len > FIXED_PAGES / 2 * PAGE)
			len = PAGE;
		flags |= MAP_FIXED;
		break;
	case 8:
		prot = PROT_READ;
		break;
	default:
		break;
	}
	if (fz->mt)
		must_fail = flags == MAP_PRIVATE;
	/* MAP_FIXED must not replace a mapping the fuzzer still tracks. */
	if (want)
		unmap_overlapping(t, want, (char *)want + len);
	snprintf(t->cur, sizeof(t->cur),
		 "op %llu fd%d mmap host h=%u off=%#llx len=%#llx flags=%#x prot=%d",
		 (unsigned long long)t->op, c, hs.h, (unsigned long long)off,
		 (unsigned long long)len, flags, prot);
	p = mmap(want, len, prot, flags, C(t, c)->fd, (off_t)off);
	err = p == MAP_FAILED ? errno : 0;
	t->mmaps++;
	snprintf(line, sizeof(line), "%s -> %s at %p", t->cur, ename(err),
		 err ? NULL : p);
	trace_add(t, line);
	if (err ? (err != EINVAL && err != EBUSY && err != EEXIST &&
		   err != ENXIO) : must_fail) {
		fz_fail(t, "mmap of host memory returned %s (%s)", ename(err),
			t->cur);
		if (!err)
			munmap(p, len);
		return;
	}
	if (err) {
		if (fixed)	/* MAP_FIXED unmapped the pool pages */
			mmap(want, len, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		else if (want)
			mmap(want, len, PROT_NONE, MAP_PRIVATE |
			     MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
		return;
	}
	m->kind = off == RING_OFFSET ? MAP_RING : MAP_HOST;
	m->ctx = c;
	m->gen = C(t, c)->gen;
	m->p = p;
	m->len = len;
	m->writable = prot & PROT_WRITE;
	if (m->kind == MAP_RING) {
		/* A ring view made by the wrong door: not used for writes. */
		m->writable = false;
		memset(&m->ring, 0, sizeof(m->ring));
	} else {
		host_mapped(t, c, hs.h, (uintptr_t)p);
	}
}

static void op_host_alloc(struct fzt *t, struct rng *r, int c)
{
	union fz_arg a;
	struct fz_host *x;

	if (table_full(t, r, c, K_HOST)) {
		union fz_arg f;

		memset(&f, 0, sizeof(f));
		f.handle_op.size = sizeof(f.handle_op);
		f.handle_op.handle = pick_handle(t, r, c, K_HOST, NULL);
		if (!fz_ioctl(t, r, c, C_HOST_FREE, &f, F_LIGHT))
			mark_stale(t, c, K_HOST, f.handle_op.handle);
		return;
	}
	memset(&a, 0, sizeof(a));
	a.host_alloc.size = sizeof(a.host_alloc);
	switch (rn(r, 30)) {
	case 0:
		a.host_alloc.bytes = 0;
		break;
	case 1:
		a.host_alloc.bytes = SNPU_TEST_HOST_LIMIT + 1;
		break;
	case 2:
		a.host_alloc.bytes = boundary64(r, SNPU_TEST_HOST_LIMIT);
		if (a.host_alloc.bytes <= SNPU_TEST_HOST_LIMIT)
			a.host_alloc.bytes %= 1 << 20;
		break;
	default:
		a.host_alloc.bytes = pct(r, 50) ? PAGE * (1 + rn(r, 4)) :
			1 + rn(r, 65536);
		break;
	}
	if (fz_ioctl(t, r, c, C_HOST_ALLOC, &a, 0))
		return;
	lock(t, c);
	x = free_slot(C(t, c), K_HOST, r);
	if (x) {
		memset(x, 0, sizeof(*x));
		x->h = a.host_alloc.handle;
		x->st = ST_LIVE;
		x->off = a.host_alloc.mmap_offset;
		x->bytes = (a.host_alloc.bytes + PAGE - 1) & ~(PAGE - 1);
	}
	unlock(t, c);
	if (pct(r, 60))
		op_host_mmap(t, r, c);
}

static void op_host_register(struct fzt *t, struct rng *r, int c)
{
	union fz_arg a;
	struct fz_host *x;
	unsigned int i;

	if (table_full(t, r, c, K_HOST))
		return op_host_alloc(t, r, c);
	memset(&a, 0, sizeof(a));
	a.host_register.size = sizeof(a.host_register);
	a.host_register.addr = (uintptr_t)t->pool + PAGE * rn(r, POOL_PAGES);
	a.host_register.bytes = PAGE * (1 + rn(r, 4));
	switch (rn(r, 24)) {
	case 0:
		a.host_register.addr += 1 + rn(r, PAGE - 1);
		break;
	case 1:
		a.host_register.bytes += 1 + rn(r, PAGE - 1);
		break;
	case 2:
		a.host_register.bytes = 0;
		break;
	case 3:	/* wraps around */
		a.host_register.addr = ~0ULL - PAGE + 1;
		break;
	case 4:	/* past the user address space */
		a.host_register.addr = 0x7ffffffff000ULL - PAGE;
		a.host_register.bytes = 2 * PAGE;
		break;
	case 5:
		a.host_register.addr = kernel_ptrs[rn(r, 3)] & ~(PAGE - 1);
		break;
	case 6:
		a.host_register.addr = (uintptr_t)t->ro;
		a.host_register.bytes = PAGE;
		break;
	case 7:
		a.host_register.addr = (uintptr_t)guard_of(t);
		break;
	case 8:
		a.host_register.addr = (uintptr_t)t->fixed;
		break;
	case 9:
		a.host_register.bytes = SNPU_TEST_HOST_LIMIT + PAGE;
		break;
	case 10:	/* another context's (or our) host memory mapping */
		for (i = 0; i < NMAPS; i++) {
			struct fz_map *m = &t->maps[i];

			if (m->kind == MAP_HOST) {
				a.host_register.addr = (uintptr_t)m->p;
				a.host_register.bytes = m->len;
				break;
			}
		}
		break;
	case 11:
		a.host_register.addr = (uintptr_t)t->scratch +
			PAGE * rn(r, SCRATCH_PAGES);
		break;
	default:
		break;
	}
	if (fz_ioctl(t, r, c, C_HOST_REGISTER, &a, 0))
		return;
	ring_taint(t, a.host_register.addr,
		   a.host_register.addr + a.host_register.bytes);
	lock(t, c);
	x = free_slot(C(t, c), K_HOST, r);
	if (x) {
		memset(x, 0, sizeof(*x));
		x->h = a.host_register.handle;
		x->st = ST_LIVE;
		x->registered = true;
		x->bytes = a.host_register.bytes;
		x->uaddr = a.host_register.addr;
	}
	unlock(t, c);
}

static void op_host_free(struct fzt *t, struct rng *r, int c)
{
	union fz_arg a;

	memset(&a, 0, sizeof(a));
	a.handle_op.size = sizeof(a.handle_op);
	a.handle_op.handle = pick_handle(t, r, c, K_HOST, NULL);
	if (!fz_ioctl(t, r, c, C_HOST_FREE, &a, 0))
		mark_stale(t, c, K_HOST, a.handle_op.handle);
}

static int32_t pick_prio(struct rng *r)
{
	return pct(r, 90) ? (int32_t)rn(r, 3) - 1 :
		(int32_t)(uint32_t)boundary64(r, 1);
}

static void op_stream_destroy(struct fzt *t, struct rng *r, int c)
{
	union fz_arg a;

	memset(&a, 0, sizeof(a));
	a.handle_op.size = sizeof(a.handle_op);
	a.handle_op.handle = pick_handle(t, r, c, K_STREAM, NULL);
	if (pct(r, 60))
		a.handle_op.flags = SNPU_STREAM_DESTROY_FORCE;
	if (!fz_ioctl(t, r, c, C_STREAM_DESTROY, &a, 0))
		mark_stale(t, c, K_STREAM, a.handle_op.handle);
}

static void op_stream_create(struct fzt *t, struct rng *r, int c)
{
	union fz_arg a;

	if (table_full(t, r, c, K_STREAM))
		return op_stream_destroy(t, r, c);
	memset(&a, 0, sizeof(a));
	a.create.size = sizeof(a.create);
	a.create.priority = pick_prio(r);
	if (!fz_ioctl(t, r, c, C_STREAM_CREATE, &a, 0))
		add_obj(t, r, c, K_STREAM, a.create.handle, -1);
}

static void op_wait(struct fzt *t, struct rng *r, int c, int cmd)
{
	union fz_arg a;

	memset(&a, 0, sizeof(a));
	a.wait.size = sizeof(a.wait);
	a.wait.handle = pick_handle(t, r, c, cmd == C_STREAM_SYNC ? K_STREAM :
				    K_EVENT, NULL);
	a.wait.timeout_ns = pick_timeout(r);
	if (!fz_ioctl(t, r, c, cmd, &a, 0) &&
	    (a.wait.error > 0 || a.wait.error < -4095))
		fz_fail(t, "%s: error %d is not a -errno", cmds[cmd].name,
			a.wait.error);
}

static void op_handle_cmd(struct fzt *t, struct rng *r, int c, int cmd,
			  int kind)
{
	union fz_arg a;

	memset(&a, 0, sizeof(a));
	a.handle_op.size = sizeof(a.handle_op);
	a.handle_op.handle = pick_handle(t, r, c, kind, NULL);
	if (!fz_ioctl(t, r, c, cmd, &a, 0) && cmd == C_EVENT_DESTROY)
		mark_stale(t, c, K_EVENT, a.handle_op.handle);
}

static void op_stream_query(struct fzt *t, struct rng *r, int c)
{
	union fz_arg a;
	struct snpu_stream_query *q = &a.stream_query;

	memset(&a, 0, sizeof(a));
	q->size = sizeof(*q);
	q->handle = pick_handle(t, r, c, K_STREAM, NULL);
	if (!fz_ioctl(t, r, c, C_STREAM_QUERY, &a, 0) &&
	    (q->completed > q->submitted || q->error > 0 ||
	     q->error < -4095 || q->priority < -1 || q->priority > 1))
		fz_fail(t, "STREAM_QUERY: submitted %llu completed %llu error %d priority %d",
			(unsigned long long)q->submitted,
			(unsigned long long)q->completed, q->error,
			q->priority);
}

static void op_event_create(struct fzt *t, struct rng *r, int c)
{
	union fz_arg a;

	if (table_full(t, r, c, K_EVENT))
		return op_handle_cmd(t, r, c, C_EVENT_DESTROY, K_EVENT);
	memset(&a, 0, sizeof(a));
	a.create.size = sizeof(a.create);
	if (pct(r, 5))
		a.create.priority = pick_prio(r);
	if (!fz_ioctl(t, r, c, C_EVENT_CREATE, &a, 0))
		add_obj(t, r, c, K_EVENT, a.create.handle, -1);
}

static void op_event_query(struct fzt *t, struct rng *r, int c)
{
	union fz_arg a;
	struct snpu_event_query *q = &a.event_query;

	memset(&a, 0, sizeof(a));
	q->size = sizeof(*q);
	q->handle = pick_handle(t, r, c, K_EVENT, NULL);
	if (!fz_ioctl(t, r, c, C_EVENT_QUERY, &a, 0) &&
	    (q->state > SNPU_EVENT_COMPLETE || q->error > 0 ||
	     q->error < -4095 ||
	     (q->state == SNPU_EVENT_NEVER_RECORDED && (q->stream || q->seq))))
		fz_fail(t, "EVENT_QUERY: state %u stream %u error %d seq %llu",
			q->state, q->stream, q->error,
			(unsigned long long)q->seq);
}

static void op_event_elapsed(struct fzt *t, struct rng *r, int c)
{
	union fz_arg a;

	memset(&a, 0, sizeof(a));
	a.elapsed.size = sizeof(a.elapsed);
	a.elapsed.start = pick_handle(t, r, c, K_EVENT, NULL);
	a.elapsed.end = pick_handle(t, r, c, K_EVENT, NULL);
	fz_ioctl(t, r, c, C_EVENT_ELAPSED, &a, 0);
}

/* ---- graphs (ABI 0.7) ------------------------------------------------------ */

static void op_graph_destroy(struct fzt *t, struct rng *r, int c)
{
	union fz_arg a;

	memset(&a, 0, sizeof(a));
	a.handle_op.size = sizeof(a.handle_op);
	a.handle_op.handle = pick_handle(t, r, c, K_GRAPH, NULL);
	if (!fz_ioctl(t, r, c, C_GRAPH_DESTROY, &a, 0))
		mark_stale(t, c, K_GRAPH, a.handle_op.handle);
}

static void graph_add(struct fzt *t, struct rng *r, int c, uint32_t h,
		      const struct fz_graph *g)
{
	struct fz_graph *o;

	lock(t, c);
	o = free_slot(C(t, c), K_GRAPH, r);
	if (o) {
		*o = *g;
		o->h = h;
		o->st = ST_LIVE;
	}
	unlock(t, c);
}

/*
 * Bind device address @i of node @n (value *@v, extent @bytes) to a slot
 * or the scratch: within them (clean), or anywhere, or of a kind that
 * does not exist.
 */
static void graph_ref(struct fzt *t, struct rng *r, const struct fz_graph *g,
		      struct snpu_graph_node *n, unsigned int i, __u64 *v,
		      uint64_t bytes)
{
	unsigned int s;
	uint64_t ext;

	if (!t->clean && pct(r, 10)) {
		n->ref[i] = pct(r, 50) ? SNPU_GRAPH_REF_SLOT(rn(r, 10)) :
			(uint32_t)boundary64(r, SNPU_GRAPH_REF_SCRATCH);
		*v = pct(r, 50) ? rn(r, 8192) : boundary64(r, 4096);
		return;
	}
	if (g->slots && pct(r, 40)) {
		s = rn(r, g->slots);
		if (g->slot_bytes[s] < bytes && t->clean)
			return;
		n->ref[i] = SNPU_GRAPH_REF_SLOT(s);
	} else if (g->scratch_bytes && pct(r, 25)) {
		s = SNPU_GRAPH_MAX_SLOTS;
		if (g->scratch_bytes < bytes && t->clean)
			return;
		n->ref[i] = SNPU_GRAPH_REF_SCRATCH;
	} else {
		return;		/* stays a plain address */
	}
	ext = s < SNPU_GRAPH_MAX_SLOTS ? g->slot_bytes[s] : g->scratch_bytes;
	if (ext >= bytes && ext - bytes < (1ULL << 32))
		*v = 4 * rn(r, (ext - bytes) / 4 + 1);
	else
		*v = 4 * rn(r, 2048);
	if (!t->clean && pct(r, 10))
		*v += pct(r, 50) ? 4096 : boundary64(r, 0);
}

/* One node of a graph being made: a task of the generator, rebound. */
static void graph_node(struct fzt *t, struct rng *r, int c,
		       const struct fz_graph *g, struct snpu_graph_node *n,
		       bool cheap)
{
	struct snpu_task *tk = &n->task;
	unsigned int i;

	memset(n, 0, sizeof(*n));
	gen_task(t, r, c, tk, cheap);
	if (t->clean || pct(r, 90)) {
		tk->stream = 0;
		tk->user_data = 0;
	}
	if (t->clean && (tk->op == SNPU_OP_COPY ? tk->copy.dir !=
			 SNPU_COPY_D2D : tk->op != SNPU_OP_LAUNCH &&
			 tk->op != SNPU_OP_MEMSET)) {
		memset(tk, 0, sizeof(*tk));
		tk->op = SNPU_OP_LAUNCH;
		tk->launch.kernel = SNPU_KERNEL_NOP;
		tk->launch.block_dim = 1;
	}
	switch (tk->op) {
	case SNPU_OP_LAUNCH:
		for (i = 0; i < SNPU_KERNEL_MAX_ARGS; i++)
			if (tk->launch.args[i].bytes)
				graph_ref(t, r, g, n, i,
					  &tk->launch.args[i].value,
					  tk->launch.args[i].bytes);
		break;
	case SNPU_OP_COPY:
		graph_ref(t, r, g, n, 0, &tk->copy.dst, tk->copy.bytes);
		graph_ref(t, r, g, n, 1, &tk->copy.src, tk->copy.bytes);
		break;
	case SNPU_OP_MEMSET:
		graph_ref(t, r, g, n, 0, &tk->memset.addr, tk->memset.bytes);
		break;
	}
	if (!t->clean && pct(r, 3))
		n->ref[rn(r, 6)] = (uint32_t)rnd(r);
	if (!t->clean && pct(r, 2))
		n->reserved = 1ULL << rn(r, 64);
}

/*
 * GRAPH_CREATE of a random definition: half of them valid as far as the
 * tables know (the nodes are real tasks, edges point back), the others
 * with counts, the CSR, slots, references, node size and the arrays'
 * pointers fuzzed. Created graphs go into the table for launches.
 */
static void op_graph_create(struct fzt *t, struct rng *r, int c)
{
	char *nodes = t->tasks, *csr = t->scratch;
	size_t room = TASK_PAGES * PAGE;
	uint32_t *offs = (uint32_t *)csr;
	uint32_t *fanin = (uint32_t *)(csr + (64 << 10));
	uint64_t *sb = (uint64_t *)(csr + (512 << 10));
	struct snpu_graph_create *gc;
	bool clean = pct(r, 50);
	uint32_t n, e = 0, nsz = SNPU_GRAPH_NODE_SIZE, i, j, nslots;
	struct fz_graph g;
	union fz_arg a;

	if (table_full(t, r, c, K_GRAPH))
		return op_graph_destroy(t, r, c);
	memset(&g, 0, sizeof(g));
	t->clean = clean;
	switch (clean ? 0 : rn(r, 12)) {
	case 1:
		n = 0;
		break;
	case 2:
		n = SNPU_GRAPH_MAX_NODES + rn(r, 2);
		break;
	case 3:
		n = 64 + rn(r, 448);
		break;
	default:
		n = 1 + rn(r, pct(r, 80) ? 8 : 64);
		break;
	}
	switch (clean ? 0 : rn(r, 10)) {
	case 1:
		nsz = SNPU_GRAPH_NODE_SIZE - 8 * (1 + rn(r, 4));
		break;
	case 2:
		nsz = SNPU_GRAPH_NODE_SIZE + 8 * (1 + rn(r, 4));
		break;
	case 3:
		nsz = rn(r, 2) ? 0 : SNPU_TASK_SIZE;
		break;
	default:
		break;
	}
	/* One past the limit sometimes; the table keeps at most the limit. */
	nslots = clean ? rn(r, 4) : rn(r, SNPU_GRAPH_MAX_SLOTS + 2);
	g.slots = nslots < SNPU_GRAPH_MAX_SLOTS ? nslots :
		SNPU_GRAPH_MAX_SLOTS;
	for (i = 0; i < nslots; i++) {
		sb[i] = clean || pct(r, 85) ? 64 * (1 + rn(r, 64)) :
			pct(r, 50) ? 0 : boundary64(r, 1ULL << 20);
		if (i < SNPU_GRAPH_MAX_SLOTS)
			g.slot_bytes[i] = sb[i];
	}
	g.scratch_bytes = pct(r, 50) ? 0 : clean || pct(r, 90) ?
		64 * (1 + rn(r, 64)) : boundary64(r, 4096);

	/*
	 * The nodes: the first 512 that fit made, the rest of the array
	 * left as it is (a refusal is what such a count gets anyway).
	 */
	offs[0] = 0;
	for (i = 0; i < n; i++) {
		struct snpu_graph_node nd;

		if ((size_t)(i + 1) * (nsz ?: 1) <= room && i < 512) {
			graph_node(t, r, c, &g, &nd, n > 8);
			memcpy(nodes + (size_t)i * nsz, &nd,
			       nsz < sizeof(nd) ? nsz : sizeof(nd));
			if (nsz > sizeof(nd))
				memset(nodes + (size_t)i * nsz + sizeof(nd),
				       0, nsz - sizeof(nd));
			if (nsz > sizeof(nd) && !clean && pct(r, 5))
				nodes[(size_t)i * nsz + sizeof(nd) +
				      rn(r, nsz - sizeof(nd))] = 1;
		}
		/* Edges to earlier nodes; the fuzzed ones anywhere. */
		for (j = 0; j < i && e < (60 << 10) / 4 && i < 512; j++)
			if (pct(r, n > 16 ? 2 : 25))
				fanin[e++] = j;
		if (!clean && e && pct(r, 3))
			fanin[e - 1] = pct(r, 50) ? i + rn(r, 3) :
				(uint32_t)rnd(r);
		if (!clean && e > 1 && pct(r, 2))
			fanin[e - 1] = fanin[e - 2];
		if (i < 4096)
			offs[i + 1] = e;
	}
	if (!clean && pct(r, 10))
		offs[rn(r, n < 4096 ? n + 1 : 4097)] = (uint32_t)rnd(r) %
			(e + 2);

	memset(&a, 0, sizeof(a));
	gc = &a.graph_create;
	gc->size = sizeof(*gc);
	gc->nodes_count = n;
	gc->edges_count = e;
	gc->slots_count = nslots;
	gc->node_size = nsz;
	gc->nodes = (uintptr_t)nodes;
	gc->fanin_offsets = (uintptr_t)offs;
	gc->fanin = e || pct(r, 50) ? (uintptr_t)fanin : 0;
	gc->slot_bytes = nslots || pct(r, 50) ? (uintptr_t)sb : 0;
	gc->scratch_bytes = g.scratch_bytes;
	if (!clean) {
		if (pct(r, 5))
			gc->edges_count = pct(r, 50) ? e + 1 :
				SNPU_GRAPH_MAX_EDGES + rn(r, 2);
		if (pct(r, 5))
			gc->nodes = pick_uptr(t, r, (uint64_t)n * nsz);
		if (pct(r, 4))
			gc->fanin_offsets = pick_uptr(t, r, 4ULL * (n + 1));
		if (pct(r, 4))
			gc->fanin = pick_uptr(t, r, 4ULL * e);
		if (pct(r, 4))
			gc->slot_bytes = pick_uptr(t, r, 8ULL * g.slots);
		if (pct(r, 4))	/* ends in the guard page */
			gc->nodes = (uintptr_t)(nodes + room -
						(uint64_t)n * nsz / 2);
	}
	gc->graph = (uint32_t)rnd(r);	/* output only: any value */
	t->clean = false;
	if (fz_ioctl(t, r, c, C_GRAPH_CREATE, &a, clean ? F_NOMUTATE : F_LIGHT))
		return;
	if (!a.graph_create.graph)
		fz_fail(t, "GRAPH_CREATE: success with handle 0");
	graph_add(t, r, c, a.graph_create.graph, &g);
}

/* SUBMIT of a batch of real tasks, some mutated, in odd places. */
static void op_submit(struct fzt *t, struct rng *r, int c)
{
	union fz_arg a;
	uint32_t count, tsz = SNPU_TASK_SIZE, i, bad;
	size_t room = TASK_PAGES * PAGE;
	bool cheap, clean = pct(r, 50);
	char *base;

	/*
	 * Half the batches are real tasks, valid as far as the tables know,
	 * in a well-formed call, one task of them (or none) with one field
	 * mutated; the other half are fuzzed everywhere.
	 */
	switch (clean ? 4 : rn(r, 20)) {
	case 0:
		count = 0;
		break;
	case 1:
		count = SNPU_SUBMIT_MAX + rn(r, 2);
		break;
	case 2:
	case 3:
		count = 8 + rn(r, 120);
		break;
	default:
		count = 1 + rn(r, 6);
		break;
	}
	switch (clean ? 3 : rn(r, 16)) {
	case 0:
		tsz = SNPU_TASK_SIZE - 1 - rn(r, 8);
		break;
	case 1:
		tsz = SNPU_TASK_SIZE + 8 * (1 + rn(r, 4));
		break;
	case 2:
		tsz = SNPU_IOC_MAX_SIZE + rn(r, 2);
		break;
	default:
		break;
	}
	cheap = count > 8;
	if ((uint64_t)count * tsz > room)
		count = tsz ? room / tsz : 1;
	base = t->tasks;
	memset(base, 0, count ? (size_t)count * tsz : tsz);
	t->clean = clean;
	bad = clean && pct(r, 50) ? rn(r, count ? count : 1) : ~0U;
	for (i = 0; i < count; i++) {
		struct snpu_task tk;

		gen_task(t, r, c, &tk, cheap);
		if (i == bad) {		/* one field of one task mutated */
			task_mutate(t, r, c, &tk);
			task_cap(&tk);
		}
		memcpy(base + (size_t)i * tsz, &tk,
		       tsz < sizeof(tk) ? tsz : sizeof(tk));
		if (tsz > sizeof(tk) && pct(r, 5) && !clean)
			base[(size_t)i * tsz + sizeof(tk) +
			     rn(r, tsz - sizeof(tk))] = 1;
	}
	memset(&a, 0, sizeof(a));
	a.submit.size = sizeof(a.submit);
	a.submit.count = count;
	a.submit.task_size = tsz;
	a.submit.tasks = (uintptr_t)base;
	switch (clean ? 4 : rn(r, 24)) {
	case 0:	/* the array ends at or runs into the guard page */
		if (count && (size_t)count * tsz <= room) {
			size_t bytes = (size_t)count * tsz, sh = 8 * rn(r, 4);

			memmove(base + room - bytes + sh, base, bytes - sh);
			a.submit.tasks = (uintptr_t)(base + room - bytes + sh);
		}
		break;
	case 1:
		a.submit.tasks = 0;
		break;
	case 2:
		a.submit.tasks = kernel_ptrs[rn(r, sizeof(kernel_ptrs) / 8)];
		break;
	case 3:	/* misaligned: the same bytes, shifted */
		memmove(base + 3, base, (size_t)count * tsz < room - 3 ?
			(size_t)count * tsz : room - 3);
		a.submit.tasks = (uintptr_t)base + 3;
		break;
	default:
		break;
	}
	t->clean = false;
	if (fz_ioctl(t, r, c, C_SUBMIT, &a, clean ? F_NOMUTATE : F_LIGHT))
		return;
	if (!a.submit.seq)
		fz_fail(t, "SUBMIT: success with seq 0");
	mark_recorded(t, c, (const char *)(uintptr_t)a.submit.tasks,
		      a.submit.count, a.submit.task_size);
}

static void cookie_add(struct fzt *t, int c, uint32_t cookie)
{
	struct fz_ctx *x = C(t, c);

	lock(t, c);
	if (x->ncookies < NCOOKIES) {
		x->cookies[x->ncookies].cookie = cookie;
		x->cookies[x->ncookies].gen = x->gen;
		x->ncookies++;
	}
	unlock(t, c);
}

/* A delivered cookie of @c (taken out of the table), or garbage. */
static uint32_t cookie_take(struct fzt *t, struct rng *r, int c)
{
	struct fz_ctx *x = C(t, c);
	uint32_t cookie = (uint32_t)rnd(r);
	unsigned int i;

	if (pct(r, 10))
		return pct(r, 50) ? cookie : cookie & 0xffff;
	lock(t, c);
	if (x->ncookies) {
		i = rn(r, x->ncookies);
		cookie = x->cookies[i].cookie;
		if (pct(r, 90))
			x->cookies[i] = x->cookies[--x->ncookies];
	}
	unlock(t, c);
	return cookie;
}

static int32_t pick_status(struct rng *r)
{
	switch (rn(r, 10)) {
	case 0:
		return -(int32_t)(1 + rn(r, 4095));
	case 1:
		return (int32_t)(uint32_t)boundary64(r, (uint64_t)-4095);
	default:
		return 0;
	}
}

static void op_callback_done(struct fzt *t, struct rng *r, int c,
			     uint32_t cookie)
{
	union fz_arg a;

	memset(&a, 0, sizeof(a));
	a.callback.size = sizeof(a.callback);
	a.callback.cookie = cookie;
	a.callback.status = pick_status(r);
	fz_ioctl(t, r, c, C_CALLBACK_DONE, &a, 0);
}

static void op_callback(struct fzt *t, struct rng *r, int c)
{
	union fz_arg a;

	if (pct(r, 30))
		return op_callback_done(t, r, c, cookie_take(t, r, c));
	memset(&a, 0, sizeof(a));
	a.callback.size = sizeof(a.callback);
	a.callback.timeout_ns = pct(r, 70) ? 0 : pick_timeout(r);
	if (fz_ioctl(t, r, c, C_CALLBACK_WAIT, &a, 0))
		return;
	if (pct(r, 85))
		op_callback_done(t, r, c, a.callback.cookie);
	else
		cookie_add(t, c, a.callback.cookie);
}

/* ---- owners and attached streams (ABI 0.4) ------------------------------ */

static void op_owner_destroy(struct fzt *t, struct rng *r, int c)
{
	union fz_arg a;
	int idx, i;

	memset(&a, 0, sizeof(a));
	a.handle_op.size = sizeof(a.handle_op);
	a.handle_op.handle = pick_handle(t, r, c, K_OWNER, &idx);
	if (fz_ioctl(t, r, c, C_OWNER_DESTROY, &a, 0))
		return;
	mark_stale(t, c, K_OWNER, a.handle_op.handle);
	if (idx < 0)
		return;
	lock(t, c);
	for (i = 0; i < NSTREAMS; i++)
		if (C(t, c)->streams[i].st == ST_LIVE &&
		    C(t, c)->streams[i].owner == idx)
			C(t, c)->streams[i].st = ST_STALE;
	unlock(t, c);
}

static void op_owner_create(struct fzt *t, struct rng *r, int c)
{
	union fz_arg a;

	if (table_full(t, r, c, K_OWNER))
		return op_owner_destroy(t, r, c);
	memset(&a, 0, sizeof(a));
	a.create.size = sizeof(a.create);
	a.create.priority = pick_prio(r);
	if (!fz_ioctl(t, r, c, C_OWNER_CREATE, &a, 0))
		add_obj(t, r, c, K_OWNER, a.create.handle, -1);
}

static void op_attached_get(struct fzt *t, struct rng *r, int c)
{
	struct snpu_attached_stream *s;
	union fz_arg a;
	unsigned int len;
	int idx;

	memset(&a, 0, sizeof(a));
	s = &a.attached;
	s->size = sizeof(*s);
	s->owner = pick_handle(t, r, c, K_OWNER, &idx);
	switch (rn(r, 20)) {
	case 0:		/* empty */
		break;
	case 1:		/* not terminated */
		memset(s->key, 'k', sizeof(s->key));
		break;
	case 2:		/* the longest */
		memset(s->key, 'l', sizeof(s->key) - 1);
		break;
	case 3:		/* bytes after the NUL */
		snprintf(s->key, sizeof(s->key), "k%u", rn(r, 4));
		s->key[sizeof(s->key) - 1 - rn(r, 8)] = 'x';
		break;
	case 4:
		len = 1 + rn(r, sizeof(s->key) - 1);
		while (len--)
			s->key[len] = 1 + rn(r, 255);
		break;
	default:	/* a few keys, so that they are found again */
		snprintf(s->key, sizeof(s->key), "key%u", rn(r, 6));
		break;
	}
	if (fz_ioctl(t, r, c, C_ATTACHED_GET, &a, 0))
		return;
	if (s->created > 1)
		fz_fail(t, "ATTACHED_STREAM_GET: created %u", s->created);
	if (!stream_known(t, c, s->handle) && !table_full(t, r, c, K_STREAM))
		add_obj(t, r, c, K_STREAM, s->handle, idx);
}

/* ---- command queues --------------------------------------------------- */

/* A view of the rings of file generation @gen of ctx @c. */
static void view_add(struct fzt *t, int c, unsigned int gen, bool tainted,
		     void *p, size_t len, const struct snpu_ring_setup *s)
{
	struct fz_map *m = map_slot(t);

	if (!m) {
		munmap(p, len);
		return;
	}
	m->kind = MAP_RING;
	m->ctx = c;
	m->gen = gen;
	m->p = p;
	m->len = len;
	m->writable = true;
	m->tainted = tainted;
	m->ring = *s;
}

/*
 * The process wrote [@lo, @hi) of its memory through the kernel (a D2H
 * copy), or registered it, which lets the device write it until it is
 * freed. Where that range meets a view of rings, their pages are the
 * process's to scribble on like any other ring write: the CQ of those
 * rings, in every view of them, is read from now on but not checked.
 */
static void ring_taint(struct fzt *t, uint64_t lo, uint64_t hi)
{
	unsigned int i, j;

	for (i = 0; i < NMAPS; i++) {
		struct fz_map *m = &t->maps[i];

		if (m->kind != MAP_RING || m->tainted ||
		    (uintptr_t)m->p >= hi || (uintptr_t)m->p + m->len <= lo)
			continue;
		for (j = 0; j < NMAPS; j++) {
			struct fz_map *v = &t->maps[j];

			if (v->kind == MAP_RING && v->ctx == m->ctx &&
			    v->gen == m->gen)
				v->tainted = true;
		}
		lock(t, m->ctx);
		if (C(t, m->ctx)->gen == m->gen)
			C(t, m->ctx)->ring_tainted = true;
		unlock(t, m->ctx);
	}
}

/* mmap(2) of the rings of ctx @c, sometimes mutated. */
static void op_ring_map(struct fzt *t, struct rng *r, int c)
{
	struct snpu_ring_setup s;
	bool known, tainted, must_fail = false;
	uint64_t off = RING_OFFSET, len;
	int flags = MAP_SHARED, err;
	char line[2 * TRACE_LEN];
	unsigned int gen;
	void *p;

	if (!map_slot(t))
		return;
	/*
	 * The table lock is held until the mapping exists: the layout read
	 * here is that of the rings the file has (a reopen or the record of
	 * a RING_SETUP takes the lock). mmap(2) of the rings never waits.
	 */
	lock(t, c);
	known = C(t, c)->ring_set;
	s = C(t, c)->ring;
	gen = C(t, c)->gen;
	tainted = C(t, c)->ring_tainted;
	len = known ? s.mmap_bytes : PAGE * (1 + rn(r, 8));
	if (known)
		off = s.mmap_offset;
	switch (rn(r, 12)) {
	case 0:
		len += PAGE;
		must_fail = known && !t->fz->mt;
		break;
	case 1:
		flags = MAP_PRIVATE;
		must_fail = true;
		break;
	case 2:		/* just the header and the SQ */
		if (known && s.cq.array > PAGE)
			len = s.cq.array;
		break;
	case 3:
		len = PAGE;
		break;
	default:
		break;
	}
	snprintf(t->cur, sizeof(t->cur),
		 "op %llu fd%d mmap ring off=%#llx len=%#llx flags=%#x",
		 (unsigned long long)t->op, c, (unsigned long long)off,
		 (unsigned long long)len, flags);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, C(t, c)->fd,
		 (off_t)off);
	err = p == MAP_FAILED ? errno : 0;
	unlock(t, c);
	t->mmaps++;
	snprintf(line, sizeof(line), "%s -> %s at %p", t->cur, ename(err),
		 err ? NULL : p);
	trace_add(t, line);
	if (err ? err != EINVAL && err != ENXIO : must_fail) {
		fz_fail(t, "mmap of the rings returned %s (%s)", ename(err),
			t->cur);
		if (!err)
			munmap(p, len);
		return;
	}
	if (err)
		return;
	if (!known) {	/* no layout to use it with */
		munmap(p, len);
		return;
	}
	view_add(t, c, gen, tainted, p, len, &s);
}

static void op_ring_setup(struct fzt *t, struct rng *r, int c)
{
	static const uint32_t sqs[] = {
		1, 2, 4, 8, 16, 32, 64, 128, 0, 3, 4096, 4097, 8192, 6,
	};
	struct snpu_ring_setup *s;
	union fz_arg a;
	unsigned int gen;
	uint32_t sq;

	memset(&a, 0, sizeof(a));
	s = &a.ring_setup;
	s->size = sizeof(*s);
	sq = pct(r, 80) ? sqs[rn(r, 8)] : sqs[rn(r, sizeof(sqs) / 4)];
	s->sq_entries = sq;
	switch (rn(r, 10)) {
	case 0:
		s->cq_entries = sq;
		break;
	case 1:
		s->cq_entries = 2 * sq;
		break;
	case 2:
		s->cq_entries = (uint32_t)boundary64(r, 2 * sq);
		break;
	case 3:
		s->cq_entries = 4 * sq;
		break;
	case 4:
		s->cq_entries = sq / 2;
		break;
	default:
		break;
	}
	if (pct(r, 35)) {
		s->flags = SNPU_RING_SQPOLL;
		s->idle_ms = pct(r, 90) ? 1 + rn(r, 10) : 0;
	} else if (pct(r, 5)) {
		s->idle_ms = pct(r, 50) ? 10000 : 1;	/* without SQPOLL */
	}
	/* Callbacks as CQEs (0.10), with or without the poller. */
	if (pct(r, 50))
		s->flags |= SNPU_RING_CALLBACK_CQE;
	if (pct(r, 3))
		s->idle_ms = 10001;
	lock(t, c);
	gen = C(t, c)->gen;
	unlock(t, c);
	if (fz_ioctl(t, r, c, C_RING_SETUP, &a, 0))
		return;
	if (s->mmap_offset != RING_OFFSET || !s->mmap_bytes ||
	    s->sq.array + (uint64_t)s->sq_entries * SNPU_TASK_SIZE >
	    s->mmap_bytes)
		fz_fail(t, "RING_SETUP: layout offset %#llx bytes %llu sq.array %u",
			(unsigned long long)s->mmap_offset,
			(unsigned long long)s->mmap_bytes, s->sq.array);
	if (!s->cq_entries)
		s->cq_entries = 2 * s->sq_entries;
	/* Replaced meanwhile: those rings were of the old file (or unknown). */
	lock(t, c);
	if (gen == C(t, c)->gen) {
		C(t, c)->ring_set = true;
		C(t, c)->ring = *s;
	}
	unlock(t, c);
	if (pct(r, 80))
		op_ring_map(t, r, c);
}

static struct fz_map *pick_view(struct fzt *t, struct rng *r)
{
	unsigned int i, start = rn(r, NMAPS);

	for (i = 0; i < NMAPS; i++) {
		struct fz_map *m = &t->maps[(start + i) % NMAPS];

		if (m->kind == MAP_RING && m->writable)
			return m;
	}
	return NULL;
}

static uint32_t *view_word(struct fz_map *m, uint32_t off)
{
	return off + 4 <= m->len ? (uint32_t *)(m->p + off) : NULL;
}

/* SQEs (real, mutated, garbage) into a view, then a tail, maybe garbage. */
static void op_ring_push(struct fzt *t, struct rng *r)
{
	struct fz_map *m = pick_view(t, r);
	struct snpu_ring_setup *s;
	uint32_t *tail, *head, tl, n, i, nt;
	char line[2 * TRACE_LEN];

	if (!m)
		return op_ring_map(t, r, pick_ctx(t, r));
	s = &m->ring;
	tail = view_word(m, s->sq.tail);
	head = view_word(m, s->sq.head);
	if (!tail || !head ||
	    s->sq.array + (uint64_t)s->sq_entries * SNPU_TASK_SIZE > m->len)
		return;
	tl = *tail;
	n = 1 + (pct(r, 80) ? rn(r, 4) : rn(r, s->sq_entries));
	t->clean = pct(r, 60);
	for (i = 0; i < n; i++) {
		struct snpu_task *sqe = (struct snpu_task *)
			(m->p + s->sq.array +
			 (uint64_t)((tl + i) & (s->sq_entries - 1)) *
			 SNPU_TASK_SIZE);
		struct snpu_task tk;
		unsigned int p = rn(r, 100);

		if (p < 8) {
			/* Answers a delivered callback, or a stale cookie. */
			memset(&tk, 0, sizeof(tk));
			tk.op = SNPU_OP_CALLBACK_DONE;
			tk.callback.cookie = cookie_take(t, r, m->ctx);
			tk.callback.status = pick_status(r);
			tk.user_data = rnd(r);
			if (pct(r, 10))
				task_mutate(t, r, m->ctx, &tk);
		} else if (p < 80) {
			gen_task(t, r, m->ctx, &tk, n > 4);
			if (t->clean && pct(r, 10)) {
				task_mutate(t, r, m->ctx, &tk);
				task_cap(&tk);
			}
		} else if (p < 90) {
			memset(&tk, 0, sizeof(tk));
		} else {
			snpu_fill_random(&tk, sizeof(tk), rnd(r));
			task_cap(&tk);
		}
		memcpy(sqe, &tk, sizeof(tk));
	}
	t->clean = false;
	switch (rn(r, 12)) {
	case 0:
		nt = *head - 1;
		break;
	case 1:
		nt = *head + s->sq_entries + 1 + rn(r, 4);
		break;
	case 2:
		nt = (uint32_t)rnd(r);
		break;
	default:
		nt = tl + n;
		break;
	}
	__atomic_store_n(tail, nt, __ATOMIC_RELEASE);
	t->ring_writes++;
	snprintf(line, sizeof(line), "op %llu fd%d ring push %u sqes at %p tail %u -> %u",
		 (unsigned long long)t->op, m->ctx, n, (void *)m->p, tl, nt);
	trace_add(t, line);
}

/* A word of the ring header, the process's or the kernel's, set to garbage. */
static void op_ring_scribble(struct fzt *t, struct rng *r)
{
	struct fz_map *m = pick_view(t, r);
	struct snpu_ring_offsets *o;
	uint32_t *w, off;
	char line[2 * TRACE_LEN];

	if (!m)
		return;
	o = pct(r, 50) ? &m->ring.sq : &m->ring.cq;
	switch (rn(r, 8)) {
	case 0:
		off = o->head;
		break;
	case 1:
		off = o->tail;
		break;
	case 2:
		off = o->flags;
		break;
	case 3:
		off = o->mask;
		break;
	case 4:
		off = o->entries;
		break;
	case 5:
		off = o->counter;
		break;
	default:
		off = rn(r, PAGE / 4) * 4;
		break;
	}
	w = view_word(m, off);
	if (!w)
		return;
	*w = (uint32_t)boundary64(r, *w);
	t->ring_writes++;
	snprintf(line, sizeof(line), "op %llu fd%d ring scribble %p[%u] = %#x",
		 (unsigned long long)t->op, m->ctx, (void *)m->p, off, *w);
	trace_add(t, line);
}

static bool cqe_ok(const struct snpu_cqe *e)
{
	if (!e->user_data && !e->result && !e->seq && !e->time_ns &&
	    !e->flags)
		return true;	/* never written */
	/* A ready callback: a task's sequence number, no result. */
	if (e->flags == SNPU_CQE_F_CALLBACK)
		return !e->result && e->seq;
	if (e->flags || e->result > 0 || e->result < -4095 || !e->time_ns)
		return false;
	/* Refused at submit: the errors SUBMIT documents for a task. */
	if (!e->seq)
		return e->result == -EINVAL || e->result == -ENOENT ||
			e->result == -EIO || e->result == -EFAULT ||
			e->result == -EOPNOTSUPP;
	return true;
}

/* Read the CQ of a view, check the entries, move the head (or not). */
static void op_ring_reap(struct fzt *t, struct rng *r)
{
	struct fz_map *m = pick_view(t, r);
	struct snpu_ring_setup *s;
	uint32_t *head, *tail, hd, tl, n, i;
	char line[2 * TRACE_LEN];

	if (!m)
		return;
	s = &m->ring;
	head = view_word(m, s->cq.head);
	tail = view_word(m, s->cq.tail);
	if (!head || !tail ||
	    s->cq.array + (uint64_t)s->cq_entries * sizeof(struct snpu_cqe) >
	    m->len)
		return;
	hd = *head;
	tl = __atomic_load_n(tail, __ATOMIC_ACQUIRE);
	n = tl - hd;
	if (n > s->cq_entries)
		n = s->cq_entries;
	for (i = 0; i < n; i++) {
		struct snpu_cqe e;
		uint32_t idx = hd + i, tl2;

		memcpy(&e, m->p + s->cq.array + (uint64_t)(idx &
		       (s->cq_entries - 1)) * sizeof(e), sizeof(e));
		/*
		 * The kernel may be writing the entry again (a head moved
		 * by another view, or garbage): only an entry the kernel
		 * cannot have started to overwrite is checked.
		 */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		tl2 = __atomic_load_n(tail, __ATOMIC_ACQUIRE);
		if ((uint32_t)(tl2 - idx) >= s->cq_entries)
			continue;
		t->cqes++;
		/* A callback the ring delivered: a cookie to answer. */
		if (!m->tainted && e.flags == SNPU_CQE_F_CALLBACK)
			cookie_add(t, m->ctx, e.callback.cookie);
		if (!m->tainted && !cqe_ok(&e)) {
			fz_fail(t, "CQE user_data %#llx result %d flags %#x seq %llu time %llu",
				(unsigned long long)e.user_data, e.result,
				e.flags, (unsigned long long)e.seq,
				(unsigned long long)e.time_ns);
			return;
		}
	}
	__atomic_store_n(head, pct(r, 90) ? tl : (uint32_t)boundary64(r, tl),
			 __ATOMIC_RELEASE);
	snprintf(line, sizeof(line), "op %llu fd%d ring reap %u at %p (head %u tail %u)",
		 (unsigned long long)t->op, m->ctx, n, (void *)m->p, hd, tl);
	trace_add(t, line);
}

static void op_enter(struct fzt *t, struct rng *r, int c)
{
	struct snpu_enter *e;
	union fz_arg a;
	uint32_t cq = 16;

	lock(t, c);
	if (C(t, c)->ring_set)
		cq = C(t, c)->ring.cq_entries;
	unlock(t, c);
	memset(&a, 0, sizeof(a));
	e = &a.enter;
	e->size = sizeof(*e);
	e->flags = rn(r, 4);
	switch (rn(r, 6)) {
	case 0:
		e->to_submit = 0;
		break;
	case 1:
		e->to_submit = (uint32_t)boundary64(r, cq);
		break;
	default:
		e->to_submit = 1 + rn(r, 8);
		break;
	}
	switch (rn(r, 6)) {
	case 0:
		e->min_complete = cq + rn(r, 2);
		break;
	case 1:
		e->min_complete = (uint32_t)boundary64(r, cq);
		break;
	default:
		e->min_complete = rn(r, 3);
		break;
	}
	e->timeout_ns = pick_timeout(r);
	if (!fz_ioctl(t, r, c, C_ENTER, &a, 0) && e->submitted > e->to_submit)
		fz_fail(t, "ENTER: submitted %u of %u", e->submitted,
			e->to_submit);
}

/* ---- process snapshot (ABI 0.5) ------------------------------------------ */

static int snap_call(struct fzt *t, struct rng *r, int c, int cmd,
		     int64_t timeout, unsigned int fl, struct snpu_snapshot *out)
{
	union fz_arg a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.snapshot.size = sizeof(a.snapshot);
	a.snapshot.timeout_ns = timeout;
	ret = fz_ioctl(t, r, c, cmd, &a, fl);
	if (!ret && (a.snapshot.state > SNPU_STATE_BACKED_UP ||
		     a.snapshot.pid != (uint32_t)getpid()))
		fz_fail(t, "%s: state %u pid %u (the process is %d)",
			cmds[cmd].name, a.snapshot.state, a.snapshot.pid,
			getpid());
	if (out)
		*out = a.snapshot;
	return ret;
}

static int64_t pick_lock_timeout(struct rng *r)
{
	switch (rn(r, 6)) {
	case 0:
		return 0;
	case 1:
		return -1;	/* interrupted by the timer if it waits */
	default:
		return (1 + rn(r, 10)) * NS_PER_MS;
	}
}

/* UNLOCK after a successful LOCK of this thread: alone, it must work. */
static void snap_unlock(struct fzt *t, struct rng *r, int c)
{
	struct snpu_snapshot st;
	int ret = snap_call(t, r, c, C_SNAP_UNLOCK, 0, F_NOMUTATE, NULL);

	t->locked = false;
	if (t->fz->mt)
		return;
	if (ret)
		fz_fail(t, "SNAPSHOT_UNLOCK after our LOCK: %s", ename(-ret));
	else if (!snap_call(t, r, c, C_SNAP_STATE, 0, F_NOMUTATE, &st) &&
		 st.state != SNPU_STATE_RUNNING)
		fz_fail(t, "SNAPSHOT_STATE after UNLOCK: state %u", st.state);
}

/* A modifying operation made while this thread holds the lock. */
static void op_modifying(struct fzt *t, struct rng *r, int c)
{
	switch (rn(r, 10)) {
	case 0:
		op_mem_alloc(t, r, c);
		break;
	case 1:
		op_mem_free(t, r, c);
		break;
	case 2:
		op_submit(t, r, c);
		break;
	case 8:		/* not in the header's list: must not be refused */
		op_handle_cmd(t, r, c, C_STREAM_ABORT, K_STREAM);
		break;
	case 9:
		op_handle_cmd(t, r, c, C_STREAM_RESET, K_STREAM);
		break;
	case 3:
		op_stream_create(t, r, c);
		break;
	case 4:
		op_event_create(t, r, c);
		break;
	case 7:
		if (t->fz->caps & SNPU_CAP_GRAPHS)
			op_graph_create(t, r, c);
		else
			op_attached_get(t, r, c);
		break;
	case 5:
		op_host_alloc(t, r, c);
		break;
	case 6:
		op_mem_copy(t, r, c);
		break;
	default:
		op_attached_get(t, r, c);
		break;
	}
}

/*
 * Snapshot calls: one fuzzed, background-thread registration, or a whole
 * LOCK, modifying calls (EDEADLK), BACKUP, RESTORE, UNLOCK. A lock taken
 * here is always released before the operation ends, so that the calls
 * of other threads it blocks resume soon.
 */
static void op_snapshot(struct fzt *t, struct rng *r, int c)
{
	struct fz *fz = t->fz;
	struct snpu_snapshot st;
	unsigned int p = rn(r, 100), i, n;
	int cmd, ret;

	if (!(fz->caps & SNPU_CAP_SNAPSHOT) || p < 30) {
		cmd = C_SNAP_LOCK + rn(r, C_BG_PARK - C_SNAP_LOCK + 1);
		ret = snap_call(t, r, c, cmd, cmd == C_SNAP_LOCK ?
				pick_lock_timeout(r) : 0, 0, NULL);
		if (!ret && cmd == C_SNAP_LOCK) {
			t->locked = true;
			snap_unlock(t, r, c);
		} else if (!ret && cmd == C_BG_REGISTER) {
			t->bg = true;
		} else if (!ret && cmd == C_BG_UNREGISTER) {
			t->bg = false;
		} else if (ret == -EFAULT && cmd == C_SNAP_LOCK) {
			/*
			 * The copy-out may have failed after the handler ran
			 * ("whatever the handler did stays done"): the lock
			 * may be ours. Give it back; EBADFD if it was not.
			 */
			t->locked = true;
			snap_call(t, r, c, C_SNAP_UNLOCK, 0, F_NOMUTATE, NULL);
			t->locked = false;
		} else if (ret == -EFAULT &&
			   (cmd == C_BG_REGISTER || cmd == C_BG_UNREGISTER)) {
			/* Registered or not: not any more (or ENOENT). */
			snap_call(t, r, c, C_BG_UNREGISTER, 0, F_NOMUTATE, NULL);
			t->bg = false;
		}
		return;
	}
	if (p < 45) {
		/* A background thread: registered, parked, mostly gone again. */
		if (!t->bg) {
			ret = snap_call(t, r, c, C_BG_REGISTER, 0, F_NOMUTATE, &st);
			if (!ret)
				t->bg = true;
			else if (!fz->mt)
				fz_fail(t, "BG_REGISTER of a new thread: %s",
					ename(-ret));
		}
		snap_call(t, r, c, C_BG_PARK, 0, F_NOMUTATE, NULL);
		if (pct(r, 70)) {
			ret = snap_call(t, r, c, C_BG_UNREGISTER, 0, F_NOMUTATE,
					NULL);
			if (!ret)
				t->bg = false;
			else
				fz_fail(t, "BG_UNREGISTER of a registered thread: %s",
					ename(-ret));
		}
		return;
	}
	/* A background thread would never park while it holds the lock. */
	if (t->bg && !snap_call(t, r, c, C_BG_UNREGISTER, 0, F_NOMUTATE, NULL))
		t->bg = false;
	ret = snap_call(t, r, c, C_SNAP_LOCK, pick_lock_timeout(r), F_NOMUTATE,
			NULL);
	if (ret)
		return;
	t->locked = true;
	n = rn(r, 3);
	for (i = 0; i < n; i++)
		op_modifying(t, r, c);
	ret = snap_call(t, r, c, C_SNAP_BACKUP, 0, F_NOMUTATE, &st);
	if (!ret && st.state != SNPU_STATE_BACKED_UP && !fz->mt)
		fz_fail(t, "SNAPSHOT_BACKUP: state %u", st.state);
	if (!ret && pct(r, 60)) {
		ret = snap_call(t, r, c, C_SNAP_RESTORE, 0, F_NOMUTATE, &st);
		/* Alone, nothing changed since the backup: it must work. */
		if (ret && !fz->mt)
			fz_fail(t, "SNAPSHOT_RESTORE right after BACKUP: %s",
				ename(-ret));
	}
	snap_unlock(t, r, c);
}

/* mmap(2) of the state page: one page, read-only. */
static void op_state_map(struct fzt *t, struct rng *r, int c)
{
	bool cap = t->fz->caps & SNPU_CAP_SNAPSHOT;
	size_t len = pct(r, 85) ? PAGE : PAGE * (2 + rn(r, 2));
	int prot = pct(r, 80) ? PROT_READ : PROT_READ | PROT_WRITE;
	int flags = pct(r, 90) ? MAP_SHARED : MAP_PRIVATE;
	int err, want;
	char line[2 * TRACE_LEN];
	void *p;

	/* Without the page, the offset names no host memory: EINVAL. */
	want = !cap || len != PAGE ? EINVAL : prot & PROT_WRITE ? EPERM : 0;
	snprintf(t->cur, sizeof(t->cur),
		 "op %llu fd%d mmap state page len=%#zx prot=%d flags=%#x",
		 (unsigned long long)t->op, c, len, prot, flags);
	p = mmap(NULL, len, prot, flags, C(t, c)->fd,
		 (off_t)SNPU_STATE_MMAP_OFFSET);
	err = p == MAP_FAILED ? errno : 0;
	t->mmaps++;
	snprintf(line, sizeof(line), "%s -> %s at %p", t->cur, ename(err),
		 err ? NULL : p);
	trace_add(t, line);
	/* A private read-only mapping is not documented either way. */
	if (err != want && !(flags == MAP_PRIVATE && !want && err == EINVAL)) {
		fz_fail(t, "mmap of the state page: %s, the header says %s",
			ename(err), ename(want));
	} else if (!err) {
		uint32_t state = __atomic_load_n((uint32_t *)p,
						 __ATOMIC_ACQUIRE);

		if (state > SNPU_STATE_BACKED_UP)
			fz_fail(t, "state page: state %u", state);
		if (!mprotect(p, len, PROT_READ | PROT_WRITE))
			fz_fail(t, "the state page became writable with mprotect");
	}
	if (!err)
		munmap(p, len);
}

/* ---- mappings ------------------------------------------------------------ */

static void map_forget(struct fzt *t, struct fz_map *m)
{
	unsigned int i;

	if (m->kind == MAP_HOST) {
		/* The address stays in the table: a stale host range. */
		lock(t, m->ctx);
		for (i = 0; i < NHOSTS; i++) {
			struct fz_host *x = &C(t, m->ctx)->hosts[i];

			if (!x->registered && x->uaddr == (uintptr_t)m->p)
				x->mapped = false;
		}
		unlock(t, m->ctx);
	}
	m->kind = MAP_NONE;
}

/*
 * After an unmap in the register pool or the MAP_FIXED reservation (only
 * done single-threaded): fill the hole again at once, so that no other
 * mapping lands there.
 */
static void refill(struct fzt *t, char *p, size_t len)
{
	if (p >= t->pool && p < t->pool + POOL_PAGES * PAGE) {
		if (mmap(p, len, PROT_READ | PROT_WRITE, MAP_PRIVATE |
			 MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
			fz_fail(t, "refilling the pool: %s", ename(errno));
	} else if (p >= t->fixed && p < t->fixed + FIXED_PAGES * PAGE) {
		if (mmap(p, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
			 MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED)
			fz_fail(t, "refilling the reservation: %s",
				ename(errno));
	}
}

/* munmap(2) of a mapping: whole, or a part (refused for host memory). */
static void op_munmap(struct fzt *t, struct rng *r)
{
	unsigned int i, start = rn(r, NMAPS);
	struct fz_map *m = NULL;
	char line[2 * TRACE_LEN];
	size_t off = 0, len;
	int err, what = rn(r, 10);

	for (i = 0; i < NMAPS && !m; i++)
		if (t->maps[(start + i) % NMAPS].kind != MAP_NONE)
			m = &t->maps[(start + i) % NMAPS];
	if (!m)
		return;
	len = m->len;
	if (what < 2 && m->len > PAGE) {
		/* a part: host memory refuses the split */
		off = what ? PAGE : 0;
		len = m->len - PAGE;
	}
	snprintf(t->cur, sizeof(t->cur), "op %llu munmap %s fd%d %p+%#zx len %#zx",
		 (unsigned long long)t->op, m->kind == MAP_HOST ? "host" : "ring",
		 m->ctx, (void *)m->p, off, len);
	if (what == 2 && m->kind == MAP_HOST && m->len > PAGE) {
		/* mprotect of a part: refused */
		err = mprotect(m->p, PAGE, PROT_NONE) ? errno : 0;
		snprintf(line, sizeof(line), "%s mprotect -> %s", t->cur,
			 ename(err));
		trace_add(t, line);
		if (err != EINVAL)
			fz_fail(t, "mprotect of a part of host memory: %s",
				ename(err));
		return;
	}
	if (what == 3 && m->kind == MAP_HOST) {
		void *p = mremap(m->p, m->len, m->len + PAGE, MREMAP_MAYMOVE);

		err = p == MAP_FAILED ? errno : 0;
		snprintf(line, sizeof(line), "%s mremap -> %s", t->cur,
			 ename(err));
		trace_add(t, line);
		if (!err) {
			fz_fail(t, "mremap of host memory succeeded");
			m->p = p;
			m->len += PAGE;
		}
		return;
	}
	err = munmap(m->p + off, len) ? errno : 0;
	t->munmaps++;
	snprintf(line, sizeof(line), "%s -> %s", t->cur, ename(err));
	trace_add(t, line);
	if (m->kind == MAP_HOST && len != m->len) {
		if (err != EINVAL)
			fz_fail(t, "munmap of a part of host memory: %s",
				ename(err));
		return;
	}
	if (err) {
		fz_fail(t, "munmap: %s", ename(err));
		return;
	}
	refill(t, m->p + off, len);
	if (len == m->len) {
		map_forget(t, m);
	} else if (off) {	/* ring view: the head is left */
		m->len = off;
	} else {		/* ring view: the tail is left, unusable */
		munmap(m->p + len, m->len - len);
		map_forget(t, m);
	}
}

/* Read (and write back, where writable) a byte of every page of @m. */
static void map_touch(const struct fz_map *m)
{
	volatile char *v = m->p;
	size_t off;

	for (off = 0; off < m->len; off += PAGE) {
		char c = v[off];

		if (m->writable && m->kind == MAP_HOST)
			v[off] = c;
	}
}

/*
 * What a process may do to a mapping besides munmap(2): MADV_DONTNEED,
 * mprotect(2) of the whole, fork(2) after MADV_DOFORK (the child touches
 * its copy and exits), mremap(2) moves, shrinks and grows. The kernel
 * may refuse the call; the mapping must keep working either way (every
 * page is touched afterwards: a lost page is SIGBUS), and the reference
 * counts must survive the copies the kernel makes and drops (the debug
 * kernel reports an underflow; the final checks find a leak).
 */
static void op_map_vm(struct fzt *t, struct rng *r)
{
	unsigned int i, start = rn(r, NMAPS);
	struct fz_map *m = NULL;
	char line[2 * TRACE_LEN];
	int err = 0, what = rn(r, 6), st;
	bool refused = false;
	char *dst;
	void *q;
	pid_t pid;

	for (i = 0; i < NMAPS && !m; i++)
		if (t->maps[(start + i) % NMAPS].kind != MAP_NONE)
			m = &t->maps[(start + i) % NMAPS];
	if (!m)
		return;
	snprintf(t->cur, sizeof(t->cur), "op %llu mapvm %d %s fd%d %p len %#zx",
		 (unsigned long long)t->op, what,
		 m->kind == MAP_HOST ? "host" : "ring", m->ctx, (void *)m->p,
		 m->len);
	switch (what) {
	case 0:
		err = madvise(m->p, m->len, MADV_DONTNEED) ? errno : 0;
		break;
	case 1:
		err = mprotect(m->p, m->len, PROT_READ) ? errno : 0;
		if (!err && m->writable)
			err = mprotect(m->p, m->len, PROT_READ | PROT_WRITE) ?
				errno : 0;
		break;
	case 2:
		/*
		 * 7.x refuses MADV_DOFORK with EINVAL on every mapping of the
		 * device (they are VM_DONTEXPAND, one of VM_SPECIAL's flags;
		 * selftests/memory/mapping_test.c, madv_dofork()), 6.1 and
		 * 6.12 carry it out. Both are the contract: a refusal leaves
		 * the mapping as it was, so the child inherits the rings (as
		 * always) and no host memory, which it checks.
		 */
		err = madvise(m->p, m->len, MADV_DOFORK) ? errno : 0;
		refused = err == EINVAL;
		if (err && !refused)
			break;
		pid = fork();
		if (!pid) {
			if (!refused || m->kind != MAP_HOST) {
				map_touch(m);
				_exit(0);
			}
			/* Not inherited: madvise() finds no mapping. */
			if (!madvise(m->p, m->len, MADV_NORMAL))
				_exit(4);
			_exit(errno == ENOMEM ? 0 : 5);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid)
			err = errno;
		else if (!WIFEXITED(st) || WEXITSTATUS(st))
			fz_fail(t, "a child touching its copy of a mapping: status %#x",
				st);
		if (m->kind == MAP_HOST && !refused)
			madvise(m->p, m->len, MADV_DONTFORK);
		break;
	case 3:		/* a move to the MAP_FIXED reservation */
		if (t->fz->mt || m->len > FIXED_PAGES / 2 * PAGE ||
		    (m->p >= t->fixed && m->p < t->fixed + FIXED_PAGES * PAGE))
			return;
		dst = t->fixed + PAGE * rn(r, FIXED_PAGES / 2);
		unmap_overlapping(t, dst, dst + m->len);
		q = mremap(m->p, m->len, m->len, MREMAP_MAYMOVE | MREMAP_FIXED,
			   dst);
		err = q == MAP_FAILED ? errno : 0;
		refused = err && m->kind == MAP_HOST;
		if (err) {
			/* The kernel unmapped the target: fill it again. */
			refill(t, dst, m->len);
		} else if (m->kind == MAP_HOST) {
			fz_fail(t, "mremap moved host memory");
		} else {
			refill(t, m->p, m->len);
			m->p = q;
		}
		break;
	case 4:		/* shrink by a page */
		if (m->len <= PAGE)
			return;
		q = mremap(m->p, m->len, m->len - PAGE, 0);
		err = q == MAP_FAILED ? errno : 0;
		refused = err && m->kind == MAP_HOST;
		if (!err && m->kind == MAP_HOST) {
			fz_fail(t, "mremap shrank host memory");
		} else if (!err) {
			refill(t, m->p + m->len - PAGE, PAGE);
			m->len -= PAGE;
		}
		break;
	default:	/* grow: never (the size is the object's) */
		q = mremap(m->p, m->len, m->len + PAGE, MREMAP_MAYMOVE);
		err = q == MAP_FAILED ? errno : 0;
		refused = !!err;
		if (!err) {
			fz_fail(t, "mremap grew a mapping of the device");
			m->p = q;
			m->len += PAGE;
		}
		break;
	}
	snprintf(line, sizeof(line), "%s -> %s", t->cur, ename(err));
	trace_add(t, line);
	if (err && !refused)
		fz_fail(t, "%s: %s", t->cur, ename(err));
	map_touch(m);
}

/* Replace pages of the register pool: registered ranges keep the old ones. */
static void op_pool_remap(struct fzt *t, struct rng *r)
{
	unsigned int first = rn(r, POOL_PAGES), n = 1 + rn(r, 4);
	char *lo, *hi;

	if (first + n > POOL_PAGES)
		n = POOL_PAGES - first;
	lo = t->pool + first * PAGE;
	hi = lo + n * PAGE;
	/* Host memory mapped over the pool goes first, whole. */
	unmap_overlapping(t, lo, hi);
	if (mmap(lo, n * PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		fz_fail(t, "remapping the register pool: %s", ename(errno));
	else
		memset(lo, 0x5a, n * PAGE);
}

/* ---- files ----------------------------------------------------------------- */

static void ctx_forget(struct fz_ctx *x)
{
	unsigned int i;

	for (i = 0; i < NSTREAMS; i++)
		if (x->streams[i].st == ST_LIVE)
			x->streams[i].st = ST_STALE;
	for (i = 0; i < NEVENTS; i++)
		if (x->events[i].st == ST_LIVE)
			x->events[i].st = ST_STALE;
	for (i = 0; i < NOWNERS; i++)
		if (x->owners[i].st == ST_LIVE)
			x->owners[i].st = ST_STALE;
	for (i = 0; i < NHOSTS; i++) {
		if (x->hosts[i].st == ST_LIVE)
			x->hosts[i].st = ST_STALE;
		x->hosts[i].mapped = false;
	}
	for (i = 0; i < NALLOCS; i++)
		if (x->allocs[i].st == ST_LIVE)
			x->allocs[i].st = ST_STALE;
	for (i = 0; i < NCOMMS; i++)
		if (x->comms[i].st == ST_LIVE)
			x->comms[i].st = ST_STALE;
	for (i = 0; i < NGRAPHS; i++)
		if (x->graphs[i].st == ST_LIVE)
			x->graphs[i].st = ST_STALE;
	x->ncookies = 0;
	x->ring_set = false;
	x->ring_tainted = false;
	x->gen++;
}

/*
 * Close the file of ctx @c and open a new one: its work is cancelled,
 * its handles go stale, mappings keep the old context until unmapped.
 * With threads the new file replaces the old one atomically (dup2), so
 * that the number always names a device file while others use it.
 */
static void op_reopen(struct fzt *t, struct rng *r, int c)
{
	struct fz_ctx *x = C(t, c);
	char line[2 * TRACE_LEN];
	int fd;

	snprintf(t->cur, sizeof(t->cur), "op %llu reopen fd%d",
		 (unsigned long long)t->op, c);
	t->reopens++;
	fd = open(SNPU_TEST_DEV, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fz_fail(t, "open %s: %s", SNPU_TEST_DEV, ename(errno));
		return;
	}
	lock(t, c);
	if (t->fz->mt) {
		if (dup3(fd, x->fd, O_CLOEXEC) < 0)
			fz_fail(t, "dup3: %s", ename(errno));
		close(fd);
	} else {
		close(x->fd);
		x->fd = fd;
	}
	ctx_forget(x);
	unlock(t, c);
	snprintf(line, sizeof(line), "%s -> fd %d", t->cur, x->fd);
	trace_add(t, line);
	(void)r;
}

static void op_poll(struct fzt *t, struct rng *r, int c)
{
	struct pollfd p = { .fd = C(t, c)->fd, .events = POLLIN | POLLOUT };
	int n = poll(&p, 1, 0);

	(void)r;
	if (n < 0 || (n && (p.revents & ~(POLLIN | POLLRDNORM))))
		fz_fail(t, "poll: %d revents %#x (%s)", n, p.revents,
			ename(n < 0 ? errno : 0));
}

/* The largest valid sizes, freed at once: ST only (memory of the VM). */
static void op_big(struct fzt *t, struct rng *r, int c)
{
	union fz_arg a;

	memset(&a, 0, sizeof(a));
	if (pct(r, 50)) {
		a.mem_alloc.size = sizeof(a.mem_alloc);
		a.mem_alloc.bytes = t->fz->info.mem_total;
		if (!fz_ioctl(t, r, c, C_MEM_ALLOC, &a, F_NOMUTATE)) {
			struct fz_alloc al = { a.mem_alloc.addr, 0, 0 };

			memset(&a, 0, sizeof(a));
			a.mem_free.size = sizeof(a.mem_free);
			a.mem_free.addr = al.addr;
			if (fz_ioctl(t, r, c, C_MEM_FREE, &a, F_NOMUTATE))
				fz_fail(t, "MEM_FREE of a whole-device allocation failed");
		}
	} else {
		a.host_alloc.size = sizeof(a.host_alloc);
		a.host_alloc.bytes = SNPU_TEST_HOST_LIMIT;
		if (!fz_ioctl(t, r, c, C_HOST_ALLOC, &a, F_NOMUTATE)) {
			uint32_t h = a.host_alloc.handle;

			memset(&a, 0, sizeof(a));
			a.handle_op.size = sizeof(a.handle_op);
			a.handle_op.handle = h;
			if (fz_ioctl(t, r, c, C_HOST_FREE, &a, F_NOMUTATE))
				fz_fail(t, "HOST_FREE of a whole-quota allocation failed");
		}
	}
}

/* A command number the driver must not know, with a pointer to anything. */
static void op_bad_nr(struct fzt *t, struct rng *r, int c)
{
	union fz_arg a;

	memset(&a, 0, sizeof(a));
	a.hdr.size = sizeof(a.info);
	fz_ioctl(t, r, c, C_GET_INFO + rn(r, C_COUNT), &a, F_BADNR);
}

/* ---- communicators (ABI 0.11) ------------------------------------------ */

/*
 * A rank handle of @c: mostly a tracked one (@alone: one of a
 * communicator of one rank, which never waits for another), else garbage.
 */
static uint32_t pick_comm(struct fzt *t, struct rng *r, int c, bool alone,
			  int *idx)
{
	struct fz_ctx *x = C(t, c);
	unsigned int i, start = rn(r, NCOMMS);
	uint32_t h = 0;
	bool found = false;

	*idx = -1;
	lock(t, c);
	for (i = 0; i < NCOMMS && !found; i++) {
		struct fz_obj *o = &x->comms[(start + i) % NCOMMS];

		if (o->st == ST_LIVE && (!alone || o->recorded)) {
			h = o->h;
			*idx = (start + i) % NCOMMS;
			found = true;
		}
	}
	unlock(t, c);
	return found || alone ? h : garbage_handle(r);
}

/*
 * COMM_ID, COMM_JOIN (of an id this thread made, mostly for one rank, or
 * of garbage), COMM_QUERY and COMM_DESTROY. Only ranks of a communicator
 * of one rank get collectives (gen_task()): the others would wait for
 * ranks that never come.
 */
static void op_comm(struct fzt *t, struct rng *r, int c)
{
	unsigned int p = rn(r, 100);
	union fz_arg a;
	int idx;

	if (!(t->fz->caps & SNPU_CAP_COLLECTIVES))
		return;
	memset(&a, 0, sizeof(a));
	if (p < 25 || (p < 60 && !t->ncomm_ids)) {
		a.comm_id.size = sizeof(a.comm_id);
		if (!fz_ioctl(t, r, c, C_COMM_ID, &a, 0))
			memcpy(t->comm_ids[t->ncomm_ids++ % NCOMMS],
			       a.comm_id.id, SNPU_COMM_ID_BYTES);
	} else if (p < 60) {
		struct fz_obj *o = NULL;
		unsigned int i;

		a.comm_join.size = sizeof(a.comm_join);
		if (pct(r, 90))
			memcpy(a.comm_join.id,
			       t->comm_ids[rn(r, t->ncomm_ids < NCOMMS ?
					      t->ncomm_ids : NCOMMS)],
			       SNPU_COMM_ID_BYTES);
		else
			memset(a.comm_join.id, (int)rn(r, 256),
			       SNPU_COMM_ID_BYTES);
		a.comm_join.nranks = pct(r, 70) ? 1 : pct(r, 95) ?
			1 + rn(r, 3) : (uint32_t)boundary64(r, 64);
		a.comm_join.rank = pct(r, 95) && a.comm_join.nranks ?
			rn(r, a.comm_join.nranks) : (uint32_t)boundary64(r, 1);
		if (fz_ioctl(t, r, c, C_COMM_JOIN, &a, 0))
			return;
		lock(t, c);
		for (i = 0; i < NCOMMS && !o; i++)
			if (C(t, c)->comms[i].st != ST_LIVE)
				o = &C(t, c)->comms[i];
		if (o) {
			o->h = a.comm_join.handle;
			o->st = ST_LIVE;
			o->recorded = a.comm_join.nranks == 1;
		}
		unlock(t, c);
	} else if (p < 80) {
		a.comm_query.size = sizeof(a.comm_query);
		a.comm_query.handle = pick_comm(t, r, c, false, &idx);
		if (!fz_ioctl(t, r, c, C_COMM_QUERY, &a, 0) &&
		    (a.comm_query.rank >= a.comm_query.nranks ||
		     a.comm_query.joined > a.comm_query.nranks ||
		     a.comm_query.error > 0))
			fz_fail(t, "COMM_QUERY: rank %u of %u, %u joined, error %d",
				a.comm_query.rank, a.comm_query.nranks,
				a.comm_query.joined, a.comm_query.error);
	} else {
		a.handle_op.size = sizeof(a.handle_op);
		a.handle_op.handle = pick_comm(t, r, c, false, &idx);
		if (pct(r, 80))
			a.handle_op.flags = SNPU_COMM_DESTROY_FORCE;
		if (!fz_ioctl(t, r, c, C_COMM_DESTROY, &a, 0) && idx >= 0) {
			lock(t, c);
			if (C(t, c)->comms[idx].h == a.handle_op.handle)
				C(t, c)->comms[idx].st = ST_STALE;
			unlock(t, c);
		}
	}
}

/* ---- sync_file and dma-buf exports, imports (ABI 0.12, 0.13) ---------- */

/*
 * An fd for FENCE_WAIT or MEM_IMPORT: mostly one of @table (this thread's
 * exports), else one of the other kind, a pipe end... whatever @c's file,
 * stdio, -1 or a number past any open file.
 */
static int pick_shared_fd(struct fzt *t, struct rng *r, int c,
			  const int *table)
{
	const int *other = table == t->fences ? t->dmabufs : t->fences;
	unsigned int p = rn(r, 100), i = rn(r, NSHARED);

	if (p < 70 && table[i])
		return table[i] - 1;
	if (p < 80 && other[i])
		return other[i] - 1;
	if (p < 88)
		return C(t, c)->fd;
	if (p < 92)
		return rn(r, 3);
	if (p < 96)
		return -1;
	return 100000 + rn(r, 1000);
}

/* Keep @fd in @table, closing the one it replaces. */
static void keep_shared_fd(int *table, unsigned int *n, int fd)
{
	int *slot = &table[(*n)++ % NSHARED];

	if (*slot)
		close(*slot - 1);
	*slot = fd + 1;
}

static void close_shared_fds(struct fzt *t)
{
	unsigned int i;

	for (i = 0; i < NSHARED; i++) {
		if (t->dmabufs[i])
			close(t->dmabufs[i] - 1);
		if (t->fences[i])
			close(t->fences[i] - 1);
		t->dmabufs[i] = t->fences[i] = 0;
	}
}

/*
 * EVENT_EXPORT of an event of @c, or MEM_EXPORT of a range: mostly whole
 * pages of an allocation (mapped and read at once, sometimes), else
 * anything pick_range() makes.
 */
static void op_export(struct fzt *t, struct rng *r, int c)
{
	union fz_arg a;
	struct fz_alloc al;

	memset(&a, 0, sizeof(a));
	if (pct(r, 40)) {
		a.event_export.size = sizeof(a.event_export);
		a.event_export.handle = pick_handle(t, r, c, K_EVENT, NULL);
		if (pct(r, 50))
			a.event_export.flags = SNPU_EXPORT_CLOEXEC;
		if (!fz_ioctl(t, r, c, C_EVENT_EXPORT, &a, 0))
			keep_shared_fd(t->fences, &t->nfences,
				       a.event_export.fd);
		return;
	}
	a.mem_export.size = sizeof(a.mem_export);
	if (pct(r, 50))
		a.mem_export.flags = SNPU_EXPORT_CLOEXEC;
	if (pct(r, 75) && pick_alloc(t, r, c, &al)) {
		uint64_t pages = (al.bytes + PAGE - 1) / PAGE;
		uint64_t first = rn(r, pages);

		a.mem_export.addr = al.addr + first * PAGE;
		a.mem_export.bytes = (1 + rn(r, pages - first)) * PAGE;
	} else {
		pick_range(t, r, c, false, 1 << 20, &a.mem_export.addr,
			   &a.mem_export.bytes);
	}
	if (fz_ioctl(t, r, c, C_MEM_EXPORT, &a, 0))
		return;
	if (pct(r, 30)) {
		volatile uint8_t *m = mmap(NULL, PAGE, PROT_READ, MAP_SHARED,
					   a.mem_export.fd, 0);

		if (m == MAP_FAILED)
			fz_fail(t, "mmap of an exported dma-buf: %s",
				strerror(errno));
		else
			(void)m[rn(r, PAGE)], munmap((void *)m, PAGE);
	}
	keep_shared_fd(t->dmabufs, &t->ndmabufs, a.mem_export.fd);
}

/* MEM_IMPORT of one of this thread's dma-bufs or of another fd. */
static void op_import(struct fzt *t, struct rng *r, int c)
{
	union fz_arg a;

	if (allocs_full(t, c))
		return op_mem_free(t, r, c);
	memset(&a, 0, sizeof(a));
	a.mem_import.size = sizeof(a.mem_import);
	a.mem_import.fd = pick_shared_fd(t, r, c, t->dmabufs);
	if (fz_ioctl(t, r, c, C_MEM_IMPORT, &a, 0))
		return;
	if (!a.mem_import.bytes || a.mem_import.bytes % PAGE ||
	    a.mem_import.addr & (PAGE - 1))
		fz_fail(t, "MEM_IMPORT: %llu bytes at %#llx",
			(unsigned long long)a.mem_import.bytes,
			(unsigned long long)a.mem_import.addr);
	post_alloc(t, r, c, a.mem_import.addr, a.mem_import.bytes);
}

/* ---- checkpoint to a file, restore into a fresh file (ABI 0.14) -------- */

static uint32_t fz_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78 & -(crc & 1));
	}
	return crc;
}

static int ckpt_call(struct fzt *t, struct rng *r, int c, uint32_t op,
		     uint32_t pid, int64_t timeout, int fd, unsigned int fl,
		     struct snpu_ckpt_proc *out)
{
	union fz_arg a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.ckpt_proc.size = sizeof(a.ckpt_proc);
	a.ckpt_proc.op = op;
	a.ckpt_proc.pid = pid;
	a.ckpt_proc.timeout_ns = timeout;
	a.ckpt_proc.fd = fd;
	ret = fz_ioctl(t, r, c, C_CKPT_PROC, &a, fl);
	if (!ret && a.ckpt_proc.state > SNPU_STATE_BACKED_UP)
		fz_fail(t, "CKPT_PROC: state %u", a.ckpt_proc.state);
	if (out)
		*out = a.ckpt_proc;
	return ret;
}

/* A pid to act on: mostly ours; init and garbage have no snpu file. */
static uint32_t ckpt_pid(struct rng *r)
{
	switch (rn(r, 8)) {
	case 0:
		return 1;
	case 1:
		return 0x3fffff00 + rn(r, 256);
	case 2:
		return (uint32_t)getppid();
	case 3:
	case 4:
		return (uint32_t)getpid();
	default:
		return 0;
	}
}

/*
 * A file that is not a good image or image target: none, not open, the
 * wrong direction, a pipe, /dev/null, the snpu file. Kept in @tmp (fd + 1)
 * for the caller to close.
 */
static int ckpt_odd_fd(struct fzt *t, struct rng *r, int c, int *tmp)
{
	int fds[2];

	switch (rn(r, 6)) {
	case 0:
		return -1;
	case 1:
		return 900 + (int)rn(r, 100);
	case 2:
		*tmp = open("/dev/null", (pct(r, 50) ? O_RDONLY : O_WRONLY) |
			    O_CLOEXEC) + 1;
		return *tmp - 1;
	case 3:
		/* The write end: a checkpoint could fill it; read end only. */
		if (pipe2(fds, O_CLOEXEC | O_NONBLOCK))
			return -1;
		close(fds[1]);
		*tmp = fds[0] + 1;
		return fds[0];
	case 4:
		return C(t, c)->fd;
	default:
		*tmp = memfd_create("fz-ckpt-odd", MFD_CLOEXEC) + 1;
		return *tmp - 1;
	}
}

/* After a refused restore the file must be as fresh as before. */
static void ckpt_check_fresh(struct fzt *t, int fd, int ret)
{
	struct snpu_ctx_query q;

	int err = snpu_ctx_query(fd, &q);

	if (err) {
		fz_fail(t, "CTX_QUERY of a restore target: %s", ename(-err));
		return;
	}
	if (q.mem_used || q.host_used || q.streams || q.events)
		fz_fail(t, "CKPT_RESTORE refused with %s left mem %llu host %llu streams %u events %u",
			ename(-ret), (unsigned long long)q.mem_used,
			(unsigned long long)q.host_used, q.streams, q.events);
}

/*
 * A copy of the image @img (@len bytes) in a new memfd, damaged: cut
 * short, bytes flipped, or a byte flipped under a CRC made right again
 * (so that the record checks see it). The memfd, or -1.
 */
static int ckpt_mutate(struct fzt *t, struct rng *r, int img, uint64_t len)
{
	struct snpu_ckpt_chunk ch;
	struct snpu_ckpt_header h;
	uint64_t pos, at, cut = len;
	unsigned int i, n;
	uint8_t b, *buf;
	ssize_t k;
	int m;

	m = memfd_create("fz-ckpt-bad", MFD_CLOEXEC);
	buf = malloc(1 << 16);
	if (m < 0 || !buf) {
		free(buf);
		if (m >= 0)
			close(m);
		return -1;
	}
	for (pos = 0; pos < len; pos += (uint64_t)k) {
		k = pread(img, buf, 1 << 16, (off_t)pos);
		if (k <= 0 || pwrite(m, buf, (size_t)k, (off_t)pos) != k) {
			free(buf);
			close(m);
			return -1;
		}
	}
	free(buf);
	if (!len)
		return m;
	switch (rn(r, 4)) {
	case 0:		/* cut short */
		cut = rn(r, (uint32_t)(len < 0xffffffffULL ? len : 0xffffffffULL));
		if (ftruncate(m, (off_t)cut))
			fz_fail(t, "ftruncate: %s", ename(errno));
		return m;
	case 1:		/* bytes flipped */
		n = 1 + rn(r, 3);
		for (i = 0; i < n; i++) {
			at = rnd(r) % len;
			if (pread(m, &b, 1, (off_t)at) == 1) {
				b ^= (uint8_t)(1 + rn(r, 255));
				if (pwrite(m, &b, 1, (off_t)at) != 1)
					break;
			}
		}
		return m;
	default:	/* a byte flipped, its CRC right */
		break;
	}
	at = rnd(r) % len;
	if (pread(m, &b, 1, (off_t)at) != 1)
		return m;
	b ^= (uint8_t)(1 + rn(r, 255));
	if (pwrite(m, &b, 1, (off_t)at) != 1)
		return m;
	if (at < sizeof(h)) {
		if (pread(m, &h, sizeof(h), 0) != sizeof(h))
			return m;
		h.crc = 0;
		h.crc = fz_crc32c(~0U, &h, sizeof(h)) ^ ~0U;
		if (pwrite(m, &h, sizeof(h), 0) != sizeof(h))
			fz_fail(t, "pwrite: %s", ename(errno));
		return m;
	}
	/* Find the chunk that holds @at (headers before it are intact). */
	for (pos = sizeof(h); pos < len; pos += sizeof(ch) + ch.len) {
		if (pread(m, &ch, sizeof(ch), (off_t)pos) != sizeof(ch))
			return m;
		if (at < pos + sizeof(ch) + ch.len)
			break;
	}
	if (pos >= len || ch.len > SNPU_CKPT_CHUNK_MAX + 64 ||
	    pos + sizeof(ch) + ch.len > len)
		return m;
	buf = malloc(ch.len ?: 1);
	if (!buf)
		return m;
	if (pread(m, buf, ch.len, (off_t)(pos + sizeof(ch))) == (ssize_t)ch.len) {
		ch.crc = 0;
		ch.crc = fz_crc32c(fz_crc32c(~0U, &ch, sizeof(ch)), buf,
				   ch.len) ^ ~0U;
		if (pwrite(m, &ch, sizeof(ch), (off_t)pos) != sizeof(ch))
			fz_fail(t, "pwrite: %s", ename(errno));
	}
	free(buf);
	return m;
}

/*
 * Restore context @index of @img into a fresh file of the device: a
 * refusal must leave it fresh; a restored file must refuse a second
 * restore (ENOTEMPTY) when it holds anything.
 */
static void ckpt_restore_fresh(struct fzt *t, struct rng *r, int c, int img,
			       uint32_t index, bool mutate)
{
	struct snpu_ctx_query q;
	union fz_arg a;
	int fd, ret;

	fd = open(SNPU_TEST_DEV, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fz_fail(t, "open %s: %s", SNPU_TEST_DEV, ename(errno));
		return;
	}
	memset(&a, 0, sizeof(a));
	a.ckpt_restore.size = sizeof(a.ckpt_restore);
	a.ckpt_restore.fd = img;
	a.ckpt_restore.index = index;
	t->alt_fd = fd + 1;
	ret = fz_ioctl(t, r, c, C_CKPT_RESTORE, &a,
		       mutate ? F_LIGHT : F_NOMUTATE);
	if (ret) {
		ckpt_check_fresh(t, fd, ret);
	} else if (!snpu_ctx_query(fd, &q) &&
		   (q.mem_used || q.host_used || q.streams || q.events)) {
		memset(&a, 0, sizeof(a));
		a.ckpt_restore.size = sizeof(a.ckpt_restore);
		a.ckpt_restore.fd = img;
		ret = fz_ioctl(t, r, c, C_CKPT_RESTORE, &a, F_NOMUTATE);
		/* The fuzzer's timer may interrupt it first (EINTR). */
		if (ret != -ENOTEMPTY && ret != -EINTR)
			fz_fail(t, "CKPT_RESTORE into a restored file: %s",
				ename(-ret));
	}
	t->alt_fd = 0;
	close(fd);
}

/* An object of a kind images hold, in file @c. */
static void ckpt_build(struct fzt *t, struct rng *r, int c)
{
	switch (rn(r, 7)) {
	case 0:
		op_mem_alloc(t, r, c);
		break;
	case 1:
		op_stream_create(t, r, c);
		break;
	case 2:
		op_event_create(t, r, c);
		break;
	case 3:
		op_host_alloc(t, r, c);
		break;
	case 4:
		op_owner_create(t, r, c);
		break;
	case 5:
		op_attached_get(t, r, c);
		break;
	default:
		op_mem_copy(t, r, c);
		break;
	}
}

/*
 * Checkpoints of this process and restores of images: one call fuzzed
 * (any op, pid, timeout, file), or a whole LOCK, modifying calls
 * (EDEADLK), CHECKPOINT into a memfd, UNLOCK, then the image (or a
 * damaged copy) restored context by context into fresh files, sometimes
 * after one of the files was replaced (its window of device addresses is
 * free again: its context restores). The lock is always released before
 * the operation ends.
 */
static void op_ckpt(struct fzt *t, struct rng *r, int c)
{
	struct fz *fz = t->fz;
	struct snpu_ckpt_proc out;
	int img, odd = 0, ret, bad;
	uint32_t i, n, contexts;
	uint64_t len;
	bool fresh;

	img = memfd_create("fz-ckpt", MFD_CLOEXEC);
	if (img < 0) {
		fz_fail(t, "memfd_create: %s", ename(errno));
		return;
	}
	if (!(fz->caps & SNPU_CAP_CHECKPOINT) || pct(r, 35)) {
		uint32_t op = rn(r, 6);
		int fd = pct(r, 60) ? img : ckpt_odd_fd(t, r, c, &odd);

		if (pct(r, 60)) {
			ret = ckpt_call(t, r, c, op, ckpt_pid(r),
					op == SNPU_CKPT_OP_LOCK ?
					pick_lock_timeout(r) : 0,
					op == SNPU_CKPT_OP_CHECKPOINT ? fd : 0,
					0, NULL);
			/* A lock that may be ours: give it back. */
			if ((!ret || ret == -EFAULT) &&
			    op == SNPU_CKPT_OP_LOCK) {
				t->locked = true;
				ckpt_call(t, r, c, SNPU_CKPT_OP_UNLOCK, 0, 0,
					  0, F_NOMUTATE, NULL);
				t->locked = false;
			}
		} else {
			ckpt_restore_fresh(t, r, c, fd, rn(r, 4), true);
		}
		if (odd)
			close(odd - 1);
		close(img);
		return;
	}
	/*
	 * Rings, graphs, communicators and imports are not in images yet:
	 * sometimes start again from fresh files with a few objects, so
	 * that checkpoints succeed and their images restore.
	 */
	fresh = pct(r, 50);
	if (fresh) {
		/* A mapping keeps its file, and its context, open. */
		for (i = 0; i < NMAPS; i++) {
			struct fz_map *m = &t->maps[i];

			if (m->kind != MAP_NONE) {
				munmap(m->p, m->len);
				refill(t, m->p, m->len);
				map_forget(t, m);
			}
		}
		for (i = 0; i < NFDS; i++)
			op_reopen(t, r, (int)i);
		n = 2 + rn(r, 8);
		for (i = 0; i < n; i++)
			ckpt_build(t, r, pick_ctx(t, r));
	}
	/* A background thread would never park while it holds the lock. */
	if (t->bg && !snap_call(t, r, c, C_BG_UNREGISTER, 0, F_NOMUTATE, NULL))
		t->bg = false;
	if (ckpt_call(t, r, c, SNPU_CKPT_OP_LOCK, pct(r, 50) ? 0 : getpid(),
		      pick_lock_timeout(r), 0, F_NOMUTATE, NULL)) {
		close(img);
		return;
	}
	t->locked = true;
	n = rn(r, 3);
	for (i = 0; i < n; i++)
		op_modifying(t, r, c);
	ret = ckpt_call(t, r, c, SNPU_CKPT_OP_CHECKPOINT, 0, 0, img,
			F_NOMUTATE, &out);
	len = (uint64_t)lseek(img, 0, SEEK_END);
	if (!ret && (out.bytes != len || !out.contexts ||
		     out.state == SNPU_STATE_RUNNING))
		fz_fail(t, "CHECKPOINT: %llu bytes reported, %llu written, %u contexts, state %u",
			(unsigned long long)out.bytes, (unsigned long long)len,
			out.contexts, out.state);
	contexts = ret ? 1 : out.contexts;
	t->locked = false;
	bad = ckpt_call(t, r, c, SNPU_CKPT_OP_UNLOCK, 0, 0, 0, F_NOMUTATE,
			NULL);
	if (bad && !fz->mt)
		fz_fail(t, "CKPT_PROC UNLOCK after our LOCK: %s", ename(-bad));
	/* Partial images (EINTR) are restored too: they must be refused. */
	if (!len)
		goto out;
	/* Its window free again: a fresh file takes it, the restore fits. */
	if (fresh || pct(r, 30))
		op_reopen(t, r, rn(r, NFDS));
	for (i = 0; i <= contexts && i < 4; i++) {
		int m = -1;

		if (pct(r, 50))
			m = ckpt_mutate(t, r, img, len);
		ckpt_restore_fresh(t, r, c, m >= 0 ? m : img,
				   pct(r, 95) ? i : (uint32_t)rnd(r), false);
		if (m >= 0)
			close(m);
	}
out:
	close(img);
}

/* ---- the operation mix ----------------------------------------------- */

enum {
	OP_GET_INFO, OP_CTX_QUERY, OP_MEM_ALLOC, OP_MEM_FREE, OP_MEM_QUERY,
	OP_MEM_COPY, OP_MEM_SET, OP_HOST_ALLOC, OP_HOST_REGISTER,
	OP_HOST_FREE, OP_HOST_MMAP, OP_STREAM_CREATE, OP_STREAM_DESTROY,
	OP_STREAM_SYNC, OP_STREAM_QUERY, OP_STREAM_ABORT, OP_STREAM_RESET,
	OP_EVENT_CREATE, OP_EVENT_DESTROY, OP_EVENT_QUERY, OP_EVENT_SYNC,
	OP_EVENT_ELAPSED, OP_SUBMIT, OP_CALLBACK, OP_NOP, OP_RING_SETUP,
	OP_RING_MAP, OP_RING_PUSH, OP_RING_SCRIBBLE, OP_RING_REAP, OP_ENTER,
	OP_OWNER_CREATE, OP_OWNER_DESTROY, OP_ATTACHED_GET, OP_MUNMAP,
	OP_POOL_REMAP, OP_REOPEN, OP_POLL, OP_BIG, OP_BAD_NR, OP_SNAPSHOT,
	OP_STATE_MAP, OP_MAP_VM, OP_GRAPH_CREATE, OP_GRAPH_DESTROY,
	OP_COMM, OP_EXPORT, OP_IMPORT, OP_CKPT,
	OP_COUNT
};

/* Weights per test (in tenths of a percent, roughly). */
static const uint16_t weights[MODE_NOBODY][OP_COUNT] = {
	[MODE_SINGLE] = {
		[OP_GET_INFO] = 10, [OP_CTX_QUERY] = 10, [OP_MEM_ALLOC] = 50,
		[OP_MEM_FREE] = 25, [OP_MEM_QUERY] = 20, [OP_MEM_COPY] = 30,
		[OP_MEM_SET] = 20, [OP_HOST_ALLOC] = 25,
		[OP_HOST_REGISTER] = 20, [OP_HOST_FREE] = 15,
		[OP_HOST_MMAP] = 15, [OP_STREAM_CREATE] = 40,
		[OP_STREAM_DESTROY] = 12, [OP_STREAM_SYNC] = 25,
		[OP_STREAM_QUERY] = 20, [OP_STREAM_ABORT] = 10,
		[OP_STREAM_RESET] = 15, [OP_EVENT_CREATE] = 30,
		[OP_EVENT_DESTROY] = 10, [OP_EVENT_QUERY] = 15,
		[OP_EVENT_SYNC] = 15, [OP_EVENT_ELAPSED] = 10,
		[OP_SUBMIT] = 110, [OP_CALLBACK] = 35, [OP_NOP] = 5,
		[OP_RING_SETUP] = 8, [OP_RING_MAP] = 6, [OP_RING_PUSH] = 30,
		[OP_RING_SCRIBBLE] = 4, [OP_RING_REAP] = 20, [OP_ENTER] = 30,
		[OP_OWNER_CREATE] = 15, [OP_OWNER_DESTROY] = 6,
		[OP_ATTACHED_GET] = 25, [OP_MUNMAP] = 10, [OP_POOL_REMAP] = 3,
		[OP_REOPEN] = 3, [OP_POLL] = 4, [OP_BIG] = 1, [OP_BAD_NR] = 8,
		[OP_SNAPSHOT] = 12, [OP_STATE_MAP] = 3, [OP_MAP_VM] = 6,
		[OP_GRAPH_CREATE] = 30, [OP_GRAPH_DESTROY] = 10,
		[OP_COMM] = 15, [OP_EXPORT] = 15, [OP_IMPORT] = 10,
		[OP_CKPT] = 10,
	},
	[MODE_THREADS] = {
		[OP_GET_INFO] = 5, [OP_CTX_QUERY] = 10, [OP_MEM_ALLOC] = 50,
		[OP_MEM_FREE] = 30, [OP_MEM_QUERY] = 15, [OP_MEM_COPY] = 25,
		[OP_MEM_SET] = 15, [OP_HOST_ALLOC] = 25,
		[OP_HOST_REGISTER] = 20, [OP_HOST_FREE] = 20,
		[OP_HOST_MMAP] = 15, [OP_STREAM_CREATE] = 40,
		[OP_STREAM_DESTROY] = 20, [OP_STREAM_SYNC] = 25,
		[OP_STREAM_QUERY] = 15, [OP_STREAM_ABORT] = 15,
		[OP_STREAM_RESET] = 15, [OP_EVENT_CREATE] = 30,
		[OP_EVENT_DESTROY] = 20, [OP_EVENT_QUERY] = 10,
		[OP_EVENT_SYNC] = 15, [OP_EVENT_ELAPSED] = 10,
		[OP_SUBMIT] = 110, [OP_CALLBACK] = 40, [OP_NOP] = 5,
		[OP_RING_SETUP] = 6, [OP_RING_MAP] = 6, [OP_RING_PUSH] = 25,
		[OP_RING_SCRIBBLE] = 4, [OP_RING_REAP] = 15, [OP_ENTER] = 25,
		[OP_OWNER_CREATE] = 15, [OP_OWNER_DESTROY] = 10,
		[OP_ATTACHED_GET] = 25, [OP_MUNMAP] = 12, [OP_POOL_REMAP] = 3,
		[OP_REOPEN] = 5, [OP_POLL] = 4, [OP_BIG] = 0, [OP_BAD_NR] = 4,
		[OP_SNAPSHOT] = 12, [OP_STATE_MAP] = 3, [OP_MAP_VM] = 5,
		[OP_GRAPH_CREATE] = 30, [OP_GRAPH_DESTROY] = 15,
		[OP_COMM] = 15, [OP_EXPORT] = 15, [OP_IMPORT] = 10,
		[OP_CKPT] = 8,
	},
	[MODE_RINGS] = {
		[OP_GET_INFO] = 2, [OP_CTX_QUERY] = 5, [OP_MEM_ALLOC] = 30,
		[OP_MEM_FREE] = 15, [OP_MEM_QUERY] = 5, [OP_MEM_COPY] = 5,
		[OP_MEM_SET] = 5, [OP_HOST_ALLOC] = 15,
		[OP_HOST_REGISTER] = 10, [OP_HOST_FREE] = 8,
		[OP_HOST_MMAP] = 10, [OP_STREAM_CREATE] = 30,
		[OP_STREAM_DESTROY] = 12, [OP_STREAM_SYNC] = 15,
		[OP_STREAM_QUERY] = 5, [OP_STREAM_ABORT] = 12,
		[OP_STREAM_RESET] = 15, [OP_EVENT_CREATE] = 20,
		[OP_EVENT_DESTROY] = 8, [OP_EVENT_QUERY] = 5,
		[OP_EVENT_SYNC] = 5, [OP_EVENT_ELAPSED] = 2,
		[OP_SUBMIT] = 30, [OP_CALLBACK] = 35, [OP_NOP] = 2,
		[OP_RING_SETUP] = 25, [OP_RING_MAP] = 30, [OP_RING_PUSH] = 130,
		[OP_RING_SCRIBBLE] = 25, [OP_RING_REAP] = 80, [OP_ENTER] = 110,
		[OP_OWNER_CREATE] = 5, [OP_OWNER_DESTROY] = 3,
		[OP_ATTACHED_GET] = 10, [OP_MUNMAP] = 35, [OP_POOL_REMAP] = 2,
		[OP_REOPEN] = 12, [OP_POLL] = 3, [OP_BIG] = 0, [OP_BAD_NR] = 2,
		[OP_SNAPSHOT] = 8, [OP_STATE_MAP] = 2, [OP_MAP_VM] = 12,
		[OP_GRAPH_CREATE] = 15, [OP_GRAPH_DESTROY] = 5,
		[OP_COMM] = 8, [OP_EXPORT] = 8, [OP_IMPORT] = 5,
		[OP_CKPT] = 4,
	},
};

static void run_op(struct fzt *t, struct rng *r)
{
	/* As nobody: the single-thread mix. */
	const uint16_t *w = weights[t->fz->mode == MODE_NOBODY ? MODE_SINGLE :
				    t->fz->mode];
	unsigned int total = 0, i, x;
	int c = pick_ctx(t, r);

	for (i = 0; i < OP_COUNT; i++)
		total += w[i];
	x = rn(r, total);
	for (i = 0; i < OP_COUNT && x >= w[i]; i++)
		x -= w[i];

	switch (i) {
	case OP_GET_INFO: {
		union fz_arg a;

		memset(&a, 0, sizeof(a));
		a.info.size = sizeof(a.info);
		if (!fz_ioctl(t, r, c, C_GET_INFO, &a, 0) &&
		    (a.info.abi_major != SNPU_ABI_MAJOR ||
		     a.info.caps & ~SNPU_CAPS_KNOWN || !a.info.cores ||
		     a.info.mem_align != 4096 || a.info.dev_index))
			fz_fail(t, "GET_INFO: abi %u caps %#llx cores %u align %u index %u",
				a.info.abi_major,
				(unsigned long long)a.info.caps,
				a.info.cores, a.info.mem_align,
				a.info.dev_index);
		break;
	}
	case OP_CTX_QUERY: {
		union fz_arg a;
		struct snpu_ctx_query *q = &a.ctx_query;

		memset(&a, 0, sizeof(a));
		q->size = sizeof(*q);
		if (!fz_ioctl(t, r, c, C_CTX_QUERY, &a, 0) &&
		    (q->mem_used > q->mem_limit ||
		     q->host_used > q->host_limit ||
		     q->streams > q->streams_limit ||
		     q->events > q->events_limit ||
		     q->tasks > q->tasks_limit || q->mem_used & 4095))
			fz_fail(t, "CTX_QUERY over a limit: mem %llu/%llu host %llu/%llu streams %u/%u events %u/%u tasks %u/%u",
				(unsigned long long)q->mem_used,
				(unsigned long long)q->mem_limit,
				(unsigned long long)q->host_used,
				(unsigned long long)q->host_limit,
				q->streams, q->streams_limit, q->events,
				q->events_limit, q->tasks, q->tasks_limit);
		break;
	}
	case OP_MEM_ALLOC:
		op_mem_alloc(t, r, c);
		break;
	case OP_MEM_FREE:
		op_mem_free(t, r, c);
		break;
	case OP_MEM_QUERY:
		op_mem_query(t, r, c);
		break;
	case OP_MEM_COPY:
		op_mem_copy(t, r, c);
		break;
	case OP_MEM_SET:
		op_mem_set(t, r, c);
		break;
	case OP_HOST_ALLOC:
		op_host_alloc(t, r, c);
		break;
	case OP_HOST_REGISTER:
		op_host_register(t, r, c);
		break;
	case OP_HOST_FREE:
		op_host_free(t, r, c);
		break;
	case OP_HOST_MMAP:
		op_host_mmap(t, r, c);
		break;
	case OP_STREAM_CREATE:
		op_stream_create(t, r, c);
		break;
	case OP_STREAM_DESTROY:
		op_stream_destroy(t, r, c);
		break;
	case OP_STREAM_SYNC:
		op_wait(t, r, c, C_STREAM_SYNC);
		break;
	case OP_STREAM_QUERY:
		op_stream_query(t, r, c);
		break;
	case OP_STREAM_ABORT:
		op_handle_cmd(t, r, c, C_STREAM_ABORT, K_STREAM);
		break;
	case OP_STREAM_RESET:
		op_handle_cmd(t, r, c, C_STREAM_RESET, K_STREAM);
		break;
	case OP_EVENT_CREATE:
		op_event_create(t, r, c);
		break;
	case OP_EVENT_DESTROY:
		op_handle_cmd(t, r, c, C_EVENT_DESTROY, K_EVENT);
		break;
	case OP_EVENT_QUERY:
		op_event_query(t, r, c);
		break;
	case OP_EVENT_SYNC:
		op_wait(t, r, c, C_EVENT_SYNC);
		break;
	case OP_EVENT_ELAPSED:
		op_event_elapsed(t, r, c);
		break;
	case OP_SUBMIT:
		op_submit(t, r, c);
		break;
	case OP_CALLBACK:
		op_callback(t, r, c);
		break;
	case OP_NOP: {
		union fz_arg a;

		memset(&a, 0, sizeof(a));
		fz_ioctl(t, r, c, C_NOP, &a, 0);
		break;
	}
	case OP_RING_SETUP:
		op_ring_setup(t, r, c);
		break;
	case OP_RING_MAP:
		op_ring_map(t, r, c);
		break;
	case OP_RING_PUSH:
		op_ring_push(t, r);
		break;
	case OP_RING_SCRIBBLE:
		op_ring_scribble(t, r);
		break;
	case OP_RING_REAP:
		op_ring_reap(t, r);
		break;
	case OP_ENTER:
		/* Mostly a file with rings: without, ENTER is just ENXIO. */
		for (i = 0; i < NFDS && pct(r, 70); i++)
			if (C(t, (c + i) % NFDS)->ring_set) {
				c = (c + i) % NFDS;
				break;
			}
		op_enter(t, r, c);
		break;
	case OP_OWNER_CREATE:
		op_owner_create(t, r, c);
		break;
	case OP_OWNER_DESTROY:
		op_owner_destroy(t, r, c);
		break;
	case OP_ATTACHED_GET:
		op_attached_get(t, r, c);
		break;
	case OP_MUNMAP:
		op_munmap(t, r);
		break;
	case OP_MAP_VM:
		op_map_vm(t, r);
		break;
	case OP_POOL_REMAP:
		op_pool_remap(t, r);
		break;
	case OP_REOPEN:
		op_reopen(t, r, c);
		break;
	case OP_POLL:
		op_poll(t, r, c);
		break;
	case OP_BIG:
		if (!t->fz->mt)
			op_big(t, r, c);
		break;
	case OP_SNAPSHOT:
		op_snapshot(t, r, c);
		break;
	case OP_STATE_MAP:
		op_state_map(t, r, c);
		break;
	case OP_GRAPH_CREATE:
		op_graph_create(t, r, c);
		break;
	case OP_GRAPH_DESTROY:
		op_graph_destroy(t, r, c);
		break;
	case OP_COMM:
		op_comm(t, r, c);
		break;
	case OP_EXPORT:
		op_export(t, r, c);
		break;
	case OP_IMPORT:
		op_import(t, r, c);
		break;
	case OP_CKPT:
		op_ckpt(t, r, c);
		break;
	default:
		op_bad_nr(t, r, c);
		break;
	}
}

/* ---- threads ---------------------------------------------------------------- */

static void *map_region(size_t pages, int prot)
{
	void *p = mmap(NULL, pages * PAGE, prot,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static int thread_mem_init(struct fzt *t)
{
	t->arg = map_region(ARG_PAGES + 1, PROT_READ | PROT_WRITE);
	t->ro = map_region(1, PROT_READ);
	t->tasks = map_region(TASK_PAGES + 1, PROT_READ | PROT_WRITE);
	t->scratch = map_region(SCRATCH_PAGES + 1, PROT_READ | PROT_WRITE);
	t->pool = map_region(POOL_PAGES, PROT_READ | PROT_WRITE);
	t->fixed = map_region(FIXED_PAGES, PROT_NONE);
	if (!t->arg || !t->ro || !t->tasks || !t->scratch || !t->pool ||
	    !t->fixed)
		return -1;
	mprotect(t->arg + ARG_PAGES * PAGE, PAGE, PROT_NONE);
	mprotect(t->tasks + TASK_PAGES * PAGE, PAGE, PROT_NONE);
	mprotect(t->scratch + SCRATCH_PAGES * PAGE, PAGE, PROT_NONE);
	memset(t->scratch, 0x3c, SCRATCH_PAGES * PAGE);
	memset(t->pool, 0x5a, POOL_PAGES * PAGE);
	return 0;
}

static void thread_mem_fini(struct fzt *t)
{
	unsigned int i;

	for (i = 0; i < NMAPS; i++)
		if (t->maps[i].kind != MAP_NONE) {
			munmap(t->maps[i].p, t->maps[i].len);
			t->maps[i].kind = MAP_NONE;
		}
	if (t->arg)
		munmap(t->arg, (ARG_PAGES + 1) * PAGE);
	if (t->ro)
		munmap(t->ro, PAGE);
	if (t->tasks)
		munmap(t->tasks, (TASK_PAGES + 1) * PAGE);
	if (t->scratch)
		munmap(t->scratch, (SCRATCH_PAGES + 1) * PAGE);
	if (t->pool)
		munmap(t->pool, POOL_PAGES * PAGE);
	if (t->fixed)
		munmap(t->fixed, FIXED_PAGES * PAGE);
	if (t->timer_ok)
		timer_delete(t->timer);
}

static void *thread_main(void *arg)
{
	struct fzt *t = arg;
	struct fz *fz = t->fz;

	tl_self = t;
	timer_init(t);
	for (t->op = 0; t->op < t->max_ops && !fz->stop; t->op++) {
		struct rng r = {
			mix64(t->seed ^ mix64(t->op + 0x51ed2701ULL)),
		};

		uint64_t t0 = now_ns(), dt;
		int k;

		if (!(t->op & 15) && t0 > fz->deadline_ns)
			break;
		t->cur[0] = 0;
		run_op(t, &r);
		t->ops++;
		dt = now_ns() - t0;
		for (k = 0; k < 3; k++) {
			if (dt > t->slow_ns[k]) {
				memmove(&t->slow_ns[k + 1], &t->slow_ns[k],
					(2 - k) * sizeof(t->slow_ns[0]));
				memmove(t->slow[k + 1], t->slow[k],
					(2 - k) * sizeof(t->slow[0]));
				t->slow_ns[k] = dt;
				snprintf(t->slow[k], TRACE_LEN, "%s",
					 t->ntrace ? t->trace[(t->ntrace - 1) %
							      NTRACE] : "");
				break;
			}
		}
	}
	/* The exports hold allocations: the end-of-test checks need them gone. */
	close_shared_fds(t);
	snprintf(t->cur, sizeof(t->cur), "finished after %llu ops",
		 (unsigned long long)t->ops);
	return NULL;
}

/* ---- the watchdog -------------------------------------------------------- */

struct watchdog {
	struct fz *fz;
	pthread_t th;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	uint64_t limit_ns;
};

static void *watchdog_main(void *arg)
{
	struct watchdog *wd = arg;
	struct timespec ts;
	int i, ret = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += wd->limit_ns / NS_PER_SEC;
	pthread_mutex_lock(&wd->lock);
	while (!wd->done && ret != ETIMEDOUT)
		ret = pthread_cond_timedwait(&wd->cond, &wd->lock, &ts);
	pthread_mutex_unlock(&wd->lock);
	if (wd->done)
		return NULL;
	if (wd->fz->failed)	/* a failure stopped the threads, one hangs */
		printf("# %s", wd->fz->failmsg);
	printf("# watchdog: %s is stuck %llu s after its start (seed %llu); each thread's operation:\n",
	       mode_names[wd->fz->mode],
	       (unsigned long long)(wd->limit_ns / NS_PER_SEC),
	       (unsigned long long)wd->fz->seed);
	for (i = 0; i < wd->fz->nthreads; i++)
		printf("#   thread %d: %s\n", i, wd->fz->th[i].cur);
	for (i = 0; i < wd->fz->nthreads; i++) {
		struct fzt *t = &wd->fz->th[i];
		unsigned int j = t->ntrace > 16 ? t->ntrace - 16 : 0;

		printf("#   thread %d, its last operations:\n", i);
		for (; j < t->ntrace; j++)
			printf("#     %s\n", t->trace[j % NTRACE]);
	}
	fflush(stdout);
	abort();
	return NULL;
}

/* ---- setup, health check, the tests ----------------------------------- */

static void __attribute__((constructor)) fuzz_env(void)
{
	const char *s;

	s = getenv("SNPU_FUZZ_SEED");
	g_seed = s && *s ? strtoull(s, NULL, 0) :
		(snpu_now_ns() ^ ((uint64_t)getpid() << 40)) % 1000000000000ULL;
	s = getenv("SNPU_FUZZ_OPS");
	if (s && *s)
		g_ops = strtoull(s, NULL, 0);
	s = getenv("SNPU_FUZZ_SECS");
	if (s && *s)
		g_secs = strtod(s, NULL);
	s = getenv("SNPU_FUZZ_THREADS");
	if (s && *s)
		g_threads = atoi(s);
	if (g_threads < 1)
		g_threads = 1;
	if (g_threads > MAX_THREADS)
		g_threads = MAX_THREADS;
	s = getenv("SNPU_FUZZ_TRACE");
	g_trace = s && *s && strcmp(s, "0");
	g_only = getenv("SNPU_FUZZ_ONLY");
	s = getenv("SNPU_FUZZ_VERBOSE");
	g_verbose = s && *s && strcmp(s, "0");
	printf("# seed: %llu\n", (unsigned long long)g_seed);
	printf("# ops per test: %llu, at most %.1f s per test, %d threads (SNPU_FUZZ_OPS, SNPU_FUZZ_SECS, SNPU_FUZZ_THREADS)\n",
	       (unsigned long long)g_ops, g_secs, g_threads);
	fflush(stdout);
}

static void print_stats(struct fz *fz, double secs, uint64_t ops)
{
	uint64_t calls[C_COUNT] = { 0 }, oks[C_COUNT] = { 0 }, errs[192] = { 0 };
	uint64_t mmaps = 0, munmaps = 0, rw = 0, reopens = 0, cqes = 0;
	char buf[1024];
	size_t n = 0;
	int i, j;

	for (i = 0; i < fz->nthreads; i++) {
		struct fzt *t = &fz->th[i];

		for (j = 0; j < C_COUNT; j++) {
			calls[j] += t->calls[j];
			oks[j] += t->oks[j];
		}
		for (j = 0; j < 192; j++)
			errs[j] += t->errs[j];
		mmaps += t->mmaps;
		munmaps += t->munmaps;
		rw += t->ring_writes;
		reopens += t->reopens;
		cqes += t->cqes;
	}
	printf("# %s: %llu ops in %.2f s (%.0f ops/s), %d thread(s), %d files\n",
	       mode_names[fz->mode], (unsigned long long)ops, secs,
	       secs > 0 ? ops / secs : 0.0, fz->nthreads, NFDS);
	for (j = 0; j < C_COUNT; j++) {
		n += snprintf(buf + n, sizeof(buf) - n, " %s=%llu/%llu",
			      cmds[j].name, (unsigned long long)oks[j],
			      (unsigned long long)calls[j]);
		if (n > 80 || j == C_COUNT - 1) {
			printf("# %s: ok/calls%s\n", mode_names[fz->mode], buf);
			n = 0;
		}
	}
	n = 0;
	buf[0] = 0;
	for (j = 1; j < 192; j++)
		if (errs[j] && n < sizeof(buf))
			n += snprintf(buf + n, sizeof(buf) - n, " %s=%llu",
				      ename(j), (unsigned long long)errs[j]);
	printf("# %s: errnos%s\n", mode_names[fz->mode], buf);
	for (j = 0; g_verbose && j < C_COUNT; j++) {
		int e;

		n = 0;
		buf[0] = 0;
		for (e = 0; e < 140; e++) {
			uint64_t sum = 0;

			for (i = 0; i < fz->nthreads; i++)
				sum += fz->th[i].cmd_errs[j][e];
			if (sum && n < sizeof(buf))
				n += snprintf(buf + n, sizeof(buf) - n, " %s=%llu",
					      ename(e), (unsigned long long)sum);
		}
		printf("# %s:   %s:%s\n", mode_names[fz->mode], cmds[j].name,
		       buf);
	}
	for (i = 0; i < fz->nthreads; i++)
		for (j = 0; j < 3; j++)
			if (fz->th[i].slow_ns[j] > 100 * NS_PER_MS)
				printf("# %s: slow: thread %d, %.3f s: %s\n",
				       mode_names[fz->mode], i,
				       fz->th[i].slow_ns[j] / 1e9,
				       fz->th[i].slow[j]);
	printf("# %s: mmaps %llu, munmaps %llu, ring writes %llu, CQEs read %llu, reopens %llu\n",
	       mode_names[fz->mode], (unsigned long long)mmaps,
	       (unsigned long long)munmaps, (unsigned long long)rw,
	       (unsigned long long)cqes, (unsigned long long)reopens);
	fflush(stdout);
}

/* Wait for a sysfs attribute of snpu0 to reach @want. */
static int sysfs_wait(const char *attr, long long want, long long *got)
{
	uint64_t end = now_ns() + 10 * NS_PER_SEC;
	int ret;

	do {
		ret = snpu_sysfs_read(attr, got);
		if (ret)
			return ret;
		if (*got == want)
			return 0;
		usleep(10000);
	} while (now_ns() < end);
	return -ETIMEDOUT;
}

/*
 * After the fuzzing: a fresh file must do real work and see no usage, and
 * the device's memory and contexts come back to where they were.
 */
static void health_check(struct __test_metadata *_metadata, struct fz *fz)
{
	enum { N = 1024 };
	static int32_t a[N], b[N], c[N];
	struct snpu_ring_setup rs;
	struct snpu_ctx_query q;
	struct snpu_task tk;
	struct snpu_enter e;
	uint64_t da, db, dc;
	uint32_t s;
	int32_t err = -1;
	long long v;
	char *ring;
	int fd, i;

	fd = snpu_open_dev();
	ASSERT_GE(fd, 0) TH_LOG("health: open: %s", strerror(-fd));
	ASSERT_EQ(0, snpu_ctx_query(fd, &q));
	EXPECT_EQ(0ULL, q.mem_used);
	EXPECT_EQ(0ULL, q.host_used);
	EXPECT_EQ(0U, q.streams);
	EXPECT_EQ(0U, q.events);
	EXPECT_EQ(0U, q.tasks);

	for (i = 0; i < N; i++) {
		a[i] = i * 7 - 3;
		b[i] = 1000 - i;
	}
	ASSERT_EQ(0, snpu_alloc(fd, sizeof(a), 0, &da));
	ASSERT_EQ(0, snpu_alloc(fd, sizeof(b), 0, &db));
	ASSERT_EQ(0, snpu_alloc(fd, sizeof(c), 0, &dc));
	ASSERT_EQ(0, snpu_h2d(fd, da, a, sizeof(a)));
	ASSERT_EQ(0, snpu_h2d(fd, db, b, sizeof(b)));
	ASSERT_EQ(0, snpu_stream_create(fd, SNPU_PRIO_NORMAL, &s));
	ASSERT_EQ(0, snpu_submit1(fd, snpu_t_binop(s, SNPU_KERNEL_ADD_I32, dc,
						   da, db, sizeof(c), 4)));
	ASSERT_EQ(0, snpu_stream_sync(fd, s, 10 * NS_PER_SEC, &err));
	ASSERT_EQ(0, err);
	memset(c, 0, sizeof(c));
	ASSERT_EQ(0, snpu_d2h(fd, c, dc, sizeof(c)));
	for (i = 0; i < N; i++)
		ASSERT_EQ(a[i] + b[i], c[i]) TH_LOG("health: c[%d]", i);

	/* A NOP through the command queues. */
	memset(&rs, 0, sizeof(rs));
	rs.size = sizeof(rs);
	rs.sq_entries = 4;
	ASSERT_EQ(0, snpu_ioc(fd, SNPU_IOC_RING_SETUP, &rs));
	ring = mmap(NULL, rs.mmap_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		    fd, (off_t)rs.mmap_offset);
	ASSERT_NE(MAP_FAILED, ring);
	tk = snpu_t_nop(s);
	tk.user_data = 0x600d;
	memcpy(ring + rs.sq.array, &tk, sizeof(tk));
	__atomic_store_n((uint32_t *)(ring + rs.sq.tail), 1, __ATOMIC_RELEASE);
	memset(&e, 0, sizeof(e));
	e.size = sizeof(e);
	e.flags = SNPU_ENTER_GETEVENTS;
	e.to_submit = 1;
	e.min_complete = 1;
	e.timeout_ns = 10 * NS_PER_SEC;
	ASSERT_EQ(0, snpu_ioc(fd, SNPU_IOC_ENTER, &e));
	ASSERT_EQ(1U, e.submitted);
	ASSERT_EQ(1U, __atomic_load_n((uint32_t *)(ring + rs.cq.tail),
				     __ATOMIC_ACQUIRE));
	{
		struct snpu_cqe cqe;

		memcpy(&cqe, ring + rs.cq.array, sizeof(cqe));
		EXPECT_EQ(0x600dULL, cqe.user_data);
		EXPECT_EQ(0, cqe.result);
	}
	munmap(ring, rs.mmap_bytes);
	if (fz->caps & SNPU_CAP_SNAPSHOT) {
		struct snpu_snapshot ss = { .size = sizeof(ss) };

		ASSERT_EQ(0, snpu_ioc(fd, SNPU_IOC_SNAPSHOT_STATE, &ss));
		EXPECT_EQ((__u32)SNPU_STATE_RUNNING, ss.state);
		EXPECT_EQ(0U, ss.bg_threads);
		EXPECT_EQ(0ULL, ss.image_bytes);
	}
	close(fd);

	ASSERT_EQ(0, sysfs_wait("mem_used", 0, &v))
		TH_LOG("health: sysfs mem_used is %lld with every file closed", v);
	ASSERT_EQ(0, sysfs_wait("contexts", fz->contexts_before, &v))
		TH_LOG("health: sysfs contexts is %lld, was %lld", v,
		       fz->contexts_before);
}

static uint64_t mode_seed(int mode, int thread)
{
	return mix64(g_seed ^ mix64(((uint64_t)mode << 32) | (uint32_t)thread));
}

FIXTURE(fuzz) {
	struct fz *fz;
};

FIXTURE_SETUP(fuzz)
{
	struct sigaction sa;
	int i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_intr;	/* no SA_RESTART: waits end with EINTR */
	ASSERT_EQ(0, sigaction(SIG_INTR, &sa, NULL));
	signal(SIGSEGV, on_fault);
	{
		void *bt[4];

		backtrace(bt, 4);	/* loads libgcc before any fault */
	}
	signal(SIGBUS, on_fault);
	self->fz = calloc(1, sizeof(*self->fz));
	ASSERT_NE(NULL, self->fz);
	pthread_mutex_init(&self->fz->fail_lock, NULL);
	for (i = 0; i < NFDS; i++) {
		pthread_mutex_init(&self->fz->ctx[i].lock, NULL);
		self->fz->ctx[i].fd = -1;
	}
}

FIXTURE_TEARDOWN(fuzz)
{
	struct fz *fz = self->fz;
	int i;

	if (!fz)
		return;
	for (i = 0; i < NFDS; i++)
		if (fz->ctx[i].fd >= 0)
			close(fz->ctx[i].fd);
	free(fz);
}

static void run_fuzz(struct __test_metadata *_metadata, struct fz *fz,
		     int mode, int nthreads)
{
	struct watchdog wd = { .fz = fz };
	uint64_t start;
	uint64_t ops = 0;
	double secs;
	int i, fd;

	if (g_only && *g_only && strcmp(g_only, mode_names[mode]))
		SKIP(return, "not selected by SNPU_FUZZ_ONLY=%s", g_only);

	fz->mode = mode;
	fz->seed = mode_seed(mode, -1);
	fz->nthreads = nthreads;
	fz->mt = nthreads > 1;
	fz->trace = g_trace;
	fz->max_ops = g_ops;
	ASSERT_EQ(0, snpu_sysfs_read("contexts", &fz->contexts_before));

	fd = snpu_open_dev();
	ASSERT_GE(fd, 0) TH_LOG("open: %s", strerror(-fd));
	ASSERT_EQ(0, snpu_get_info(fd, &fz->info));
	close(fd);
	fz->caps = fz->info.caps;
	/* The test hooks are a module parameter, not a feature. */
	if ((fz->caps & SNPU_CAPS_KNOWN & ~SNPU_CAP_TEST_HOOKS) !=
	    (SNPU_CAPS_KNOWN & ~SNPU_CAP_TEST_HOOKS))
		printf("# %s: the kernel has ABI %u.%u caps %#llx: the commands of the missing capabilities must return ENOTTY\n",
		       mode_names[mode], fz->info.abi_major,
		       fz->info.abi_minor,
		       (unsigned long long)fz->info.caps);
	for (i = 0; i < NFDS; i++) {
		fz->ctx[i].fd = open(SNPU_TEST_DEV, O_RDWR | O_CLOEXEC);
		ASSERT_GE(fz->ctx[i].fd, 0);
	}

	start = now_ns();
	fz->deadline_ns = start + (uint64_t)(g_secs * NS_PER_SEC);
	for (i = 0; i < nthreads; i++) {
		struct fzt *t = &fz->th[i];

		t->fz = fz;
		t->id = i;
		t->seed = mode_seed(mode, i);
		t->max_ops = (g_ops + nthreads - 1) / nthreads;
		snprintf(t->cur, sizeof(t->cur), "starting");
		ASSERT_EQ(0, thread_mem_init(t));
	}
	pthread_mutex_init(&wd.lock, NULL);
	pthread_cond_init(&wd.cond, NULL);
	wd.limit_ns = (uint64_t)(g_secs + FUZZ_GRACE_SECS) * NS_PER_SEC;
	ASSERT_EQ(0, pthread_create(&wd.th, NULL, watchdog_main, &wd));
	for (i = 0; i < nthreads; i++)
		ASSERT_EQ(0, pthread_create(&fz->th[i].th, NULL, thread_main,
					    &fz->th[i]));
	for (i = 0; i < nthreads; i++) {
		pthread_join(fz->th[i].th, NULL);
		ops += fz->th[i].ops;
	}
	secs = (now_ns() - start) / 1e9;

	/* Everything goes: mappings, then files. */
	for (i = 0; i < nthreads; i++)
		thread_mem_fini(&fz->th[i]);
	for (i = 0; i < NFDS; i++) {
		close(fz->ctx[i].fd);
		fz->ctx[i].fd = -1;
	}
	pthread_mutex_lock(&wd.lock);
	wd.done = true;
	pthread_cond_signal(&wd.cond);
	pthread_mutex_unlock(&wd.lock);
	pthread_join(wd.th, NULL);

	print_stats(fz, secs, ops);
	if (fz->failed) {
		printf("# %s", fz->failmsg);
		fflush(stdout);
	}
	ASSERT_FALSE(fz->failed);
	health_check(_metadata, fz);
}

/* One thread, three files: every command, mmap, munmap, reopen. */
TEST_F_TIMEOUT(fuzz, single_thread, FUZZ_HARNESS_TIMEOUT)
{
	run_fuzz(_metadata, self->fz, MODE_SINGLE, 1);
}

/* Threads sharing the files; files replaced and memory unmapped under them. */
TEST_F_TIMEOUT(fuzz, multi_thread, FUZZ_HARNESS_TIMEOUT)
{
	run_fuzz(_metadata, self->fz, MODE_THREADS, g_threads);
}

/* The command queues from several threads: views mapped and unmapped,
 * garbage tails and heads, SQPOLL, ENTER, files replaced mid-flight. */
TEST_F_TIMEOUT(fuzz, rings, FUZZ_HARNESS_TIMEOUT)
{
	run_fuzz(_metadata, self->fz, MODE_RINGS, g_threads > 1 ? 3 : 1);
}

/*
 * The single-thread mix as an unprivileged user (nobody): what a user
 * without capabilities may do to the 0666 node, checkpoints of its own
 * process and restores of its images included.
 */
TEST_F_TIMEOUT(fuzz, as_nobody, FUZZ_HARNESS_TIMEOUT)
{
	if (!g_only || !*g_only || !strcmp(g_only, mode_names[MODE_NOBODY]))
		ASSERT_EQ(0, snpu_drop_to_nobody());
	run_fuzz(_metadata, self->fz, MODE_NOBODY, 1);
}

TEST_HARNESS_MAIN
