// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * snpu-bench-sync: what stream-order synchronization costs, beside the
 * work it orders, in one run. Everything goes through the SQ.
 *
 *   snpu-bench-sync [-d N] [-r ROUNDS] [-n COUNT]
 *                   [pingpong|callback|roundtrip|fence|dmabuf]
 *
 * pingpong: COUNT pairs of one-block 4 KiB FILLs, one on stream A and
 *           one on stream B, against the same pairs tied by EVENT_RECORD
 *           on A, STREAM_WAIT on B, EVENT_RECORD on B and STREAM_WAIT on
 *           A (the next pair waits for both): ns per pair, and what the
 *           four entries add, as a fraction of a pair.
 * callback: COUNT host callbacks on 8 streams against COUNT FILLs on the
 *           same streams: served by this thread with CALLBACK_WAIT and
 *           CALLBACK_DONE (the ioctl path), and served from the ring
 *           loop, delivered as CQEs and completed with DONE entries
 *           (SNPU_RING_CALLBACK_CQE); ns per task and the ratio to a FILL.
 * roundtrip: one FILL submitted and its CQE waited for, against a byte
 *           sent back and forth between two threads over two pipes: the
 *           wake-up floor of the machine.
 * fence:    one launch and an EVENT_RECORD submitted (SNPU_IOC_SUBMIT),
 *           then its completion waited for two ways: the event's
 *           sync_file exported (SNPU_IOC_EVENT_EXPORT) and waited for
 *           with epoll, against SNPU_IOC_EVENT_SYNC; ns from submit to
 *           the waiter's return, and the ratio. Two rows: a NOP kernel
 *           (the wait's own cost) and a 1 MiB FILL on one block (real
 *           work the waiter sleeps through; one block leaves the
 *           waiter's syscalls a CPU of a 2-CPU guest, two blocks would
 *           time the waiter's competition with the cores).
 * dmabuf:   a 64 MiB D2D copy task whose source is a dma-buf imported
 *           from another file of the device (MEM_EXPORT, MEM_IMPORT)
 *           against the same copy from native device memory of the
 *           context: ms per copy and the ratio (1.0: the import costs
 *           nothing once made).
 *
 * All five without an argument, else the one named (for a profile of
 * one path). Medians of ROUNDS rounds (default 9); the two sides of each pair of
 * figures run in alternating order from round to round.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "snpu.h"
#include "bench.h"

#define RING_ENTRIES	256
#define BATCH		32
#define FILL_BYTES	4096
#define CB_STREAMS	8
#define BIG_FILL	(1U << 20)
#define DMABUF_BYTES	(64ULL << 20)

static void die(const char *what, int err)
{
	fprintf(stderr, "snpu-bench-sync: %s: %s\n", what, strerror(-err));
	exit(1);
}

struct bench {
	struct snpu_device *dev;
	struct snpu_ring ring;		/* plain */
	struct snpu_ring cbring;	/* SNPU_RING_CALLBACK_CQE, own file */
	struct snpu_device *cbdev;
	uint32_t s[CB_STREAMS];
	uint32_t cbs[CB_STREAMS];	/* the streams of cbdev */
	uint32_t ea, eb;
	uint64_t buf[CB_STREAMS];
	uint64_t cbbuf[CB_STREAMS];
	uint64_t big;			/* BIG_FILL bytes, the fence part's */
	unsigned int count, rounds;
};

static void prep_fill(struct snpu_task *t, uint32_t stream, uint64_t addr)
{
	struct snpu_kernel_arg a[2] = {
		snpu_arg_buf(addr, FILL_BYTES), snpu_arg_u64(0x5a),
	};

	snpu_prep_launch(t, stream, SNPU_KERNEL_FILL, 1, a, 2);
}

typedef void (*make_fn)(struct bench *, unsigned int, struct snpu_task *);

/*
 * Queue up to BATCH more of @n entries made by @make, while at most half
 * the SQ is in flight (@done of *@sent complete). Return: how many.
 */
static unsigned int queue_batch(struct snpu_ring *r, struct bench *b,
				make_fn make, unsigned int n,
				unsigned int *sent, unsigned int done)
{
	unsigned int k;

	for (k = 0; k < BATCH && *sent < n &&
	     *sent - done < r->sq.entries / 2; k++) {
		struct snpu_task *sqe = snpu_ring_get_sqe(r);

		if (!sqe)
			break;
		make(b, (*sent)++, sqe);
	}
	return k;
}

/*
 * Run @n entries made by @make(i, sqe) through @r, @batch per submit,
 * at most the SQ's entries in flight, every CQE checked. A CQE of a
 * callback is answered with a DONE entry. Return: ns.
 */
static uint64_t ring_run(struct snpu_ring *r, unsigned int n, make_fn make,
			 struct bench *b)
{
	unsigned int sent = 0, done = 0, k;
	uint64_t t0 = now_ns();
	struct snpu_cqe *c;
	int ret;

	while (done < n) {
		k = queue_batch(r, b, make, n, &sent, done);
		while (!snpu_ring_peek_cqe(r, &c)) {
			if (snpu_cqe_is_callback(c)) {
				struct snpu_task *sqe = snpu_ring_get_sqe(r);

				if (!sqe)
					break;
				snpu_prep_callback_done(sqe, c->callback.cookie,
							0);
			} else if (c->result) {
				die("task", c->result);
			} else {
				done++;
			}
			snpu_ring_cqe_seen(r, c);
		}
		/* Nothing new to queue: wait for what is in flight. */
		ret = snpu_ring_submit_and_wait(r, !k && sent > done ? 1 : 0);
		if (ret < 0 && ret != -EBUSY)
			die("ring submit", ret);
	}
	return now_ns() - t0;
}

/* ---- ping-pong ------------------------------------------------------- */

static void make_pair(struct bench *b, unsigned int i, struct snpu_task *t)
{
	prep_fill(t, b->s[i & 1], b->buf[i & 1]);
	t->user_data = i;
}

/* Per pair: FILL A, RECORD A, WAIT B, FILL B, RECORD B, WAIT A. */
static void make_pingpong(struct bench *b, unsigned int i,
			  struct snpu_task *t)
{
	switch (i % 6) {
	case 0:
		prep_fill(t, b->s[0], b->buf[0]);
		break;
	case 1:
		snpu_prep_event_record(t, b->s[0], b->ea);
		break;
	case 2:
		snpu_prep_stream_wait(t, b->s[1], b->ea);
		break;
	case 3:
		prep_fill(t, b->s[1], b->buf[1]);
		break;
	case 4:
		snpu_prep_event_record(t, b->s[1], b->eb);
		break;
	default:
		snpu_prep_stream_wait(t, b->s[0], b->eb);
		break;
	}
	t->user_data = i;
}

static void pingpong(struct bench *b)
{
	uint64_t *pair = calloc(b->rounds, 8), *pp = calloc(b->rounds, 8);
	uint64_t *add = calloc(b->rounds, 8);
	unsigned int r, n = b->count;

	if (!pair || !pp || !add)
		die("calloc", -ENOMEM);
	/* Warm: the job pool, the event captures. */
	ring_run(&b->ring, 6 * 64, make_pingpong, b);
	for (r = 0; r < b->rounds; r++) {
		if (r & 1)
			pp[r] = ring_run(&b->ring, 6 * n, make_pingpong, b) / n;
		pair[r] = ring_run(&b->ring, 2 * n, make_pair, b) / n;
		if (!(r & 1))
			pp[r] = ring_run(&b->ring, 6 * n, make_pingpong, b) / n;
		add[r] = pp[r] > pair[r] ? (pp[r] - pair[r]) * 1000 / pair[r] : 0;
	}
	printf("pingpong: %u pairs of one-block %u-byte FILLs on two streams, ns per pair\n",
	       n, FILL_BYTES);
	printf("  pairs alone %llu, tied by record/wait/record/wait %llu: the four entries add %.3fx a pair\n",
	       (unsigned long long)median(pair, b->rounds),
	       (unsigned long long)median(pp, b->rounds),
	       (double)median(add, b->rounds) / 1000);
	free(pair);
	free(pp);
	free(add);
}

/* ---- callbacks -------------------------------------------------------- */

static void make_fill8(struct bench *b, unsigned int i, struct snpu_task *t)
{
	prep_fill(t, b->cbs[i % CB_STREAMS], b->cbbuf[i % CB_STREAMS]);
	t->user_data = i;
}

static void make_callback(struct bench *b, unsigned int i,
			  struct snpu_task *t)
{
	snpu_prep_host_func(t, b->cbs[i % CB_STREAMS], i);
}

/* The same FILLs on the plain file's streams, for the ioctl path. */
static void make_fill8_plain(struct bench *b, unsigned int i,
			     struct snpu_task *t)
{
	prep_fill(t, b->s[i % CB_STREAMS], b->buf[i % CB_STREAMS]);
	t->user_data = i;
}

static void make_callback_plain(struct bench *b, unsigned int i,
				struct snpu_task *t)
{
	snpu_prep_host_func(t, b->s[i % CB_STREAMS], i);
}

/*
 * The callbacks through the plain ring, served by this thread with
 * CALLBACK_WAIT and CALLBACK_DONE: submitted in batches, each one waited
 * for and answered, their CQEs reaped as they come. Return: ns.
 */
static uint64_t callback_ioctl_run(struct bench *b, unsigned int n)
{
	struct snpu_ring *r = &b->ring;
	unsigned int sent = 0, served = 0, done = 0, k;
	struct snpu_callback_info info;
	uint64_t t0 = now_ns();
	struct snpu_cqe *c;
	int ret;

	while (done < n) {
		k = queue_batch(r, b, make_callback_plain, n, &sent, done);
		if (k) {
			ret = snpu_ring_submit(r);
			if (ret < 0)
				die("ring submit", ret);
		}
		/* Each one submitted comes up once the one before is done. */
		while (served < sent) {
			ret = snpu_callback_wait(b->dev, -1, &info);
			if (ret)
				die("callback wait", ret);
			ret = snpu_callback_done(b->dev, info.cookie, 0);
			if (ret)
				die("callback done", ret);
			served++;
		}
		while (!snpu_ring_peek_cqe(r, &c)) {
			if (c->result)
				die("callback task", c->result);
			done++;
			snpu_ring_cqe_seen(r, c);
		}
	}
	return now_ns() - t0;
}

static void callbacks(struct bench *b)
{
	uint64_t *fi = calloc(b->rounds, 8), *io = calloc(b->rounds, 8);
	uint64_t *fr = calloc(b->rounds, 8), *rg = calloc(b->rounds, 8);
	uint64_t *xi = calloc(b->rounds, 8), *xr = calloc(b->rounds, 8);
	unsigned int r, n = b->count;

	if (!fi || !io || !fr || !rg || !xi || !xr)
		die("calloc", -ENOMEM);
	callback_ioctl_run(b, 64);
	ring_run(&b->cbring, 64, make_callback, b);
	for (r = 0; r < b->rounds; r++) {
		if (r & 1) {
			io[r] = callback_ioctl_run(b, n) / n;
			rg[r] = ring_run(&b->cbring, n, make_callback, b) / n;
		}
		fi[r] = ring_run(&b->ring, n, make_fill8_plain, b) / n;
		fr[r] = ring_run(&b->cbring, n, make_fill8, b) / n;
		if (!(r & 1)) {
			io[r] = callback_ioctl_run(b, n) / n;
			rg[r] = ring_run(&b->cbring, n, make_callback, b) / n;
		}
		xi[r] = io[r] * 1000 / fi[r];
		xr[r] = rg[r] * 1000 / fr[r];
	}
	printf("callback: %u host callbacks on %u streams through the SQ against %u FILLs, ns per task\n",
	       n, CB_STREAMS, n);
	printf("  ioctl path (CALLBACK_WAIT + CALLBACK_DONE): %llu against %llu: %.3fx a FILL\n",
	       (unsigned long long)median(io, b->rounds),
	       (unsigned long long)median(fi, b->rounds),
	       (double)median(xi, b->rounds) / 1000);
	printf("  ring path (callback CQEs, DONE entries):   %llu against %llu: %.3fx a FILL\n",
	       (unsigned long long)median(rg, b->rounds),
	       (unsigned long long)median(fr, b->rounds),
	       (double)median(xr, b->rounds) / 1000);
	free(fi);
	free(io);
	free(fr);
	free(rg);
	free(xi);
	free(xr);
}

/* ---- round trip -------------------------------------------------------- */

struct pipes {
	int ab[2], ba[2];
	unsigned int n;
};

static void *echo(void *arg)
{
	struct pipes *p = arg;
	unsigned int i;
	char c;

	for (i = 0; i < p->n; i++)
		if (read(p->ab[0], &c, 1) != 1 || write(p->ba[1], &c, 1) != 1)
			break;
	return NULL;
}

/* ns per round trip of a byte between two threads. */
static uint64_t pipe_run(unsigned int n)
{
	struct pipes p = { .n = n };
	pthread_t th;
	uint64_t t0;
	unsigned int i;
	char c = 'x';

	if (pipe(p.ab) || pipe(p.ba))
		die("pipe", -errno);
	if (pthread_create(&th, NULL, echo, &p))
		die("pthread_create", -EAGAIN);
	t0 = now_ns();
	for (i = 0; i < n; i++)
		if (write(p.ab[1], &c, 1) != 1 || read(p.ba[0], &c, 1) != 1)
			die("pipe ping-pong", -EIO);
	t0 = now_ns() - t0;
	pthread_join(th, NULL);
	close(p.ab[0]);
	close(p.ab[1]);
	close(p.ba[0]);
	close(p.ba[1]);
	return t0 / n;
}

/* ns per FILL submitted and its CQE waited for, one at a time. */
static uint64_t one_task_run(struct bench *b, unsigned int n)
{
	struct snpu_ring *r = &b->ring;
	uint64_t t0 = now_ns();
	struct snpu_cqe *c;
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		struct snpu_task *sqe = snpu_ring_get_sqe(r);

		if (!sqe)
			die("ring full", -EBUSY);
		prep_fill(sqe, b->s[0], b->buf[0]);
		ret = snpu_ring_submit_and_wait(r, 1);
		if (ret < 0)
			die("ring submit and wait", ret);
		if (snpu_ring_peek_cqe(r, &c))
			die("round trip", -EIO);
		if (c->result)
			die("round trip", c->result);
		snpu_ring_cqe_seen(r, c);
	}
	return (now_ns() - t0) / n;
}

static void roundtrip(struct bench *b)
{
	uint64_t *task = calloc(b->rounds, 8), *pp = calloc(b->rounds, 8);
	uint64_t *x = calloc(b->rounds, 8);
	unsigned int r, n = b->count / 8 ? b->count / 8 : 1;

	if (!task || !pp || !x)
		die("calloc", -ENOMEM);
	for (r = 0; r < b->rounds; r++) {
		if (r & 1)
			pp[r] = pipe_run(n);
		task[r] = one_task_run(b, n);
		if (!(r & 1))
			pp[r] = pipe_run(n);
		x[r] = task[r] * 1000 / pp[r];
	}
	printf("roundtrip: one FILL submitted and waited for, against a two-thread pipe ping-pong\n");
	printf("  %llu ns against %llu ns: %.3fx\n",
	       (unsigned long long)median(task, b->rounds),
	       (unsigned long long)median(pp, b->rounds),
	       (double)median(x, b->rounds) / 1000);
	free(task);
	free(pp);
	free(x);
}

/* ---- fence: epoll on a sync_file against EVENT_SYNC --------------------- */

/* Submit @kernel (NOP, or a FILL of the big buffer) and a record of ea. */
static void submit_work(struct bench *b, uint32_t kernel)
{
	struct snpu_kernel_arg a[2] = {
		snpu_arg_buf(b->big, BIG_FILL), snpu_arg_u64(0x5a),
	};
	struct snpu_task t[2];
	int ret;

	if (kernel == SNPU_KERNEL_NOP)
		snpu_prep_launch(&t[0], b->s[0], kernel, 1, NULL, 0);
	else
		snpu_prep_launch(&t[0], b->s[0], kernel, 1, a, 2);
	snpu_prep_event_record(&t[1], b->s[0], b->ea);
	ret = snpu_submit(b->dev, t, 2, NULL);
	if (ret)
		die("submit", ret);
}

/* ns per submit + EVENT_SYNC of the record. */
static uint64_t event_sync_run(struct bench *b, uint32_t kernel,
			       unsigned int n)
{
	uint64_t t0 = now_ns();
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		submit_work(b, kernel);
		ret = snpu_event_synchronize(b->dev, b->ea, -1);
		if (ret)
			die("event sync", ret);
	}
	return (now_ns() - t0) / n;
}

/* ns per submit + export of the record's fence + epoll_wait on it. */
static uint64_t epoll_fence_run(struct bench *b, int ep, uint32_t kernel,
				unsigned int n)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	uint64_t t0 = now_ns();
	unsigned int i;
	int ret, f;

	for (i = 0; i < n; i++) {
		submit_work(b, kernel);
		ret = snpu_event_export_fence(b->dev, b->ea, SNPU_EXPORT_CLOEXEC,
					      &f);
		if (ret)
			die("export fence", ret);
		if (epoll_ctl(ep, EPOLL_CTL_ADD, f, &ev))
			die("epoll_ctl", -errno);
		do {
			ret = epoll_wait(ep, &out, 1, -1);
		} while (ret < 0 && errno == EINTR);
		if (ret != 1)
			die("epoll_wait", ret < 0 ? -errno : -EIO);
		/* Closing the only fd takes it out of the epoll set. */
		close(f);
	}
	return (now_ns() - t0) / n;
}

static void fence_row(struct bench *b, int ep, uint32_t kernel,
		      const char *what, unsigned int n)
{
	uint64_t *es = calloc(b->rounds, 8), *fe = calloc(b->rounds, 8);
	uint64_t *x = calloc(b->rounds, 8);
	unsigned int r;

	if (!es || !fe || !x)
		die("calloc", -ENOMEM);
	event_sync_run(b, kernel, 8);
	epoll_fence_run(b, ep, kernel, 8);
	for (r = 0; r < b->rounds; r++) {
		if (r & 1)
			fe[r] = epoll_fence_run(b, ep, kernel, n);
		es[r] = event_sync_run(b, kernel, n);
		if (!(r & 1))
			fe[r] = epoll_fence_run(b, ep, kernel, n);
		x[r] = fe[r] * 1000 / es[r];
	}
	printf("  %-22s epoll on the sync_file %llu ns, EVENT_SYNC %llu ns: %.3fx\n",
	       what, (unsigned long long)median(fe, b->rounds),
	       (unsigned long long)median(es, b->rounds),
	       (double)median(x, b->rounds) / 1000);
	free(es);
	free(fe);
	free(x);
}

static void fences(struct bench *b)
{
	unsigned int n = b->count / 8 ? b->count / 8 : 1;
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0)
		die("epoll_create1", -errno);
	printf("fence: a launch and its record submitted, completion waited for, ns from submit\n");
	fence_row(b, ep, SNPU_KERNEL_NOP, "NOP (the wait alone):", n);
	fence_row(b, ep, SNPU_KERNEL_FILL, "1 MiB FILL, 1 block:", n);
	close(ep);
}

/* One queued D2D copy of DMABUF_BYTES from @src, waited for: ns. */
static uint64_t copy_run(struct bench *b, uint64_t dst, uint64_t src)
{
	uint64_t t0 = now_ns();
	int ret;

	ret = snpu_memcpy_async(b->dev, b->s[0], SNPU_COPY_D2D, dst, src,
				DMABUF_BYTES);
	if (!ret)
		ret = snpu_stream_synchronize(b->dev, b->s[0], -1);
	if (ret)
		die("dmabuf copy", ret);
	return now_ns() - t0;
}

/*
 * The source exported by cbdev's file (another context of the device) and
 * imported into dev's, against native memory of dev's context, copied to
 * the same destination; the two sides alternate first from round to round.
 */
static void dmabuf(struct bench *b)
{
	uint64_t *imp = calloc(b->rounds, 8), *nat = calloc(b->rounds, 8);
	uint64_t *x = calloc(b->rounds, 8);
	uint64_t xsrc, isrc, nsrc, dst, bytes;
	unsigned int r;
	int fd, ret;

	if (!imp || !nat || !x)
		die("calloc", -ENOMEM);
	ret = snpu_mem_alloc(b->cbdev, DMABUF_BYTES, 0, 0, &xsrc);
	if (!ret)
		ret = snpu_memset(b->cbdev, xsrc, 0x5a, DMABUF_BYTES);
	if (!ret)
		ret = snpu_mem_export(b->cbdev, xsrc, DMABUF_BYTES,
				      SNPU_EXPORT_CLOEXEC, &fd);
	if (!ret) {
		ret = snpu_mem_import(b->dev, fd, 0, &isrc, &bytes);
		close(fd);
	}
	if (!ret)
		ret = snpu_mem_alloc(b->dev, DMABUF_BYTES, 0, 0, &nsrc);
	if (!ret)
		ret = snpu_memset(b->dev, nsrc, 0x5a, DMABUF_BYTES);
	if (!ret)
		ret = snpu_mem_alloc(b->dev, DMABUF_BYTES, 0, 0, &dst);
	if (ret)
		die("dmabuf setup", ret);
	/* Both sources and the destination touched once before timing. */
	copy_run(b, dst, isrc);
	copy_run(b, dst, nsrc);
	for (r = 0; r < b->rounds; r++) {
		if (r & 1)
			nat[r] = copy_run(b, dst, nsrc);
		imp[r] = copy_run(b, dst, isrc);
		if (!(r & 1))
			nat[r] = copy_run(b, dst, nsrc);
		x[r] = imp[r] * 1000 / nat[r];
	}
	printf("dmabuf: a %llu MiB D2D copy task from an imported dma-buf, against one from native memory\n",
	       (unsigned long long)(DMABUF_BYTES >> 20));
	printf("  %.3f ms against %.3f ms: %.3fx\n",
	       (double)median(imp, b->rounds) / 1e6,
	       (double)median(nat, b->rounds) / 1e6,
	       (double)median(x, b->rounds) / 1000);
	snpu_mem_free(b->dev, dst);
	snpu_mem_free(b->dev, nsrc);
	snpu_mem_free(b->dev, isrc);
	snpu_mem_free(b->cbdev, xsrc);
	free(imp);
	free(nat);
	free(x);
}

int main(int argc, char **argv)
{
	struct bench b = { .count = 2048, .rounds = 9 };
	unsigned int index = 0, i;
	const char *only = NULL;
	int opt, ret;

	while ((opt = getopt(argc, argv, "d:r:n:h")) != -1) {
		switch (opt) {
		case 'd':
			index = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			b.rounds = strtoul(optarg, NULL, 10);
			break;
		case 'n':
			b.count = strtoul(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: %s [-d N] [-r ROUNDS] [-n COUNT] [pingpong|callback|roundtrip|fence|dmabuf]\n",
				argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind < argc) {
		only = argv[optind];
		if (strcmp(only, "pingpong") && strcmp(only, "callback") &&
		    strcmp(only, "roundtrip") && strcmp(only, "fence") &&
		    strcmp(only, "dmabuf")) {
			fprintf(stderr, "snpu-bench-sync: unknown part %s\n",
				only);
			return 2;
		}
	}
	/* Each line as it is done, into a pipe too. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!b.rounds || !b.count) {
		fprintf(stderr, "snpu-bench-sync: ROUNDS and COUNT above 0\n");
		return 2;
	}
	ret = snpu_open(index, 0, &b.dev);
	if (!ret)
		ret = snpu_open(index, 0, &b.cbdev);
	if (ret)
		die("open", ret);
	for (i = 0; i < CB_STREAMS && !ret; i++) {
		ret = snpu_stream_create(b.dev, SNPU_PRIO_NORMAL, 0, &b.s[i]);
		if (!ret)
			ret = snpu_stream_create(b.cbdev, SNPU_PRIO_NORMAL, 0,
						 &b.cbs[i]);
		if (!ret)
			ret = snpu_mem_alloc(b.dev, FILL_BYTES, 0, 0, &b.buf[i]);
		if (!ret)
			ret = snpu_mem_alloc(b.cbdev, FILL_BYTES, 0, 0,
					     &b.cbbuf[i]);
	}
	if (!ret)
		ret = snpu_event_create(b.dev, &b.ea);
	if (!ret)
		ret = snpu_event_create(b.dev, &b.eb);
	if (!ret)
		ret = snpu_mem_alloc(b.dev, BIG_FILL, 0, 0, &b.big);
	if (!ret)
		ret = snpu_ring_init(b.dev, RING_ENTRIES, 0, &b.ring);
	if (!ret)
		ret = snpu_ring_init(b.cbdev, RING_ENTRIES,
				     SNPU_RING_CALLBACK_CQE, &b.cbring);
	if (ret)
		die("setup", ret);
	if (!only || !strcmp(only, "pingpong"))
		pingpong(&b);
	if (!only || !strcmp(only, "callback"))
		callbacks(&b);
	if (!only || !strcmp(only, "roundtrip"))
		roundtrip(&b);
	if (!only || !strcmp(only, "fence"))
		fences(&b);
	if (!only || !strcmp(only, "dmabuf"))
		dmabuf(&b);
	snpu_ring_exit(&b.cbring);
	snpu_ring_exit(&b.ring);
	snpu_close(b.cbdev);
	snpu_close(b.dev);
	return 0;
}
