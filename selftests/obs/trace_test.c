// SPDX-License-Identifier: GPL-2.0
/*
 * The snpu tracepoints (kmod/trace.h) through tracefs: each test enables
 * the events/snpu/ events, runs a small workload of its own through
 * libsnpu and parses the trace. Every task it submitted must have exactly
 * one submit, one start (unless cancelled before it ran) and one
 * completion, in that order, and per stream the tasks start and complete
 * in sequence order.
 *
 * The trace clock is set to "mono" so that events of different CPUs are
 * ordered as they happened.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "snpu.h"

#include "kselftest_harness.h"
#include "json.h"

#define TRACEFS		"/sys/kernel/tracing"
#define DEBUGFS		"/sys/kernel/debug"
#define MAX_EV		8192
#define MAX_TASKS	512

enum ev_type { EV_SUBMIT, EV_START, EV_COMPLETE, EV_GRAPH, EV_NODE, EV_ENTER,
	       EV_SNAPSHOT, EV_RESET };

/* One parsed event: the fields any event may carry. */
struct ev {
	enum ev_type type;
	unsigned long long ctx, seq, queue_ns, run_ns;
	unsigned int dev, stream, op, kernel, block_dim;
	int core, result, pid;
	unsigned int from, to, submitted, to_submit, nodes, stitched;
	char transport[8];
};

struct tr {
	struct ev ev[MAX_EV];
	unsigned int n;
};

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	ssize_t w;

	if (fd < 0)
		return -errno;
	w = write(fd, s, strlen(s));
	close(fd);
	return w == (ssize_t)strlen(s) ? 0 : -EIO;
}

/* tracefs at TRACEFS, mounted here if the guest has not. */
static int tracefs_ready(void)
{
	if (!access(TRACEFS "/events/snpu", F_OK))
		return 0;
	if (mount("tracefs", TRACEFS, "tracefs", 0, NULL) && errno != EBUSY)
		return -errno;
	return access(TRACEFS "/events/snpu", F_OK) ? -errno : 0;
}

/* Stop, empty the buffer, enable every snpu event, start. */
static int trace_begin(void)
{
	int ret = tracefs_ready();

	if (ret)
		return ret;
	/*
	 * Recording comms and tgids hooks the scheduler's tracepoints; the
	 * events carry what the tests need without them.
	 */
	if (write_file(TRACEFS "/tracing_on", "0") ||
	    write_file(TRACEFS "/options/record-cmd", "0") ||
	    write_file(TRACEFS "/options/record-tgid", "0") ||
	    write_file(TRACEFS "/trace_clock", "mono") ||
	    write_file(TRACEFS "/trace", "") ||
	    write_file(TRACEFS "/events/enable", "0") ||
	    write_file(TRACEFS "/events/snpu/enable", "1") ||
	    write_file(TRACEFS "/tracing_on", "1"))
		return -EIO;
	return 0;
}

static void trace_end(void)
{
	write_file(TRACEFS "/tracing_on", "0");
	write_file(TRACEFS "/events/snpu/enable", "0");
}

static void field_ull(const char *line, const char *key,
		      unsigned long long *v)
{
	const char *p = strstr(line, key);

	if (p)
		*v = strtoull(p + strlen(key), NULL, 0);
}

static void field_int(const char *line, const char *key, int *v)
{
	const char *p = strstr(line, key);

	if (p)
		*v = (int)strtol(p + strlen(key), NULL, 0);
}

static void field_uint(const char *line, const char *key, unsigned int *v)
{
	unsigned long long x = 0;

	field_ull(line, key, &x);
	*v = (unsigned int)x;
}

/* Stop tracing and parse the buffer. Return: 0 or -errno. */
static int trace_read(struct tr *t)
{
	static const struct { const char *name; enum ev_type type; } names[] = {
		{ " snpu_task_submit: ", EV_SUBMIT },
		{ " snpu_task_start: ", EV_START },
		{ " snpu_task_complete: ", EV_COMPLETE },
		{ " snpu_graph_launch: ", EV_GRAPH },
		{ " snpu_graph_node: ", EV_NODE },
		{ " snpu_ring_enter: ", EV_ENTER },
		{ " snpu_snapshot_transition: ", EV_SNAPSHOT },
		{ " snpu_device_reset: ", EV_RESET },
	};
	char line[512];
	unsigned int i;
	FILE *f;

	write_file(TRACEFS "/tracing_on", "0");
	f = fopen(TRACEFS "/trace", "re");
	if (!f)
		return -errno;
	t->n = 0;
	while (fgets(line, sizeof(line), f) && t->n < MAX_EV) {
		struct ev *e = &t->ev[t->n];
		const char *p = NULL;

		if (line[0] == '#')
			continue;
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			p = strstr(line, names[i].name);
			if (p) {
				memset(e, 0, sizeof(*e));
				e->type = names[i].type;
				break;
			}
		}
		if (!p)
			continue;
		/* Keys are matched with a leading space: "seq=" vs "to_submit=". */
		field_uint(p, " dev=", &e->dev);
		field_ull(p, " ctx=", &e->ctx);
		field_uint(p, " stream=", &e->stream);
		field_ull(p, " seq=", &e->seq);
		field_uint(p, " op=", &e->op);
		field_uint(p, " kernel=", &e->kernel);
		field_uint(p, " block_dim=", &e->block_dim);
		field_int(p, " core=", &e->core);
		field_int(p, " result=", &e->result);
		field_ull(p, " queue_ns=", &e->queue_ns);
		field_ull(p, " run_ns=", &e->run_ns);
		field_int(p, " pid=", &e->pid);
		field_uint(p, " from=", &e->from);
		field_uint(p, " to=", &e->to);
		field_uint(p, " submitted=", &e->submitted);
		field_uint(p, " to_submit=", &e->to_submit);
		field_uint(p, " nodes=", &e->nodes);
		field_uint(p, " stitched=", &e->stitched);
		if (e->type == EV_NODE)
			field_uint(p, " node=", &e->nodes);
		if (strstr(p, "transport=ring"))
			strcpy(e->transport, "ring");
		else if (strstr(p, "transport=ioctl"))
			strcpy(e->transport, "ioctl");
		t->n++;
	}
	fclose(f);
	return 0;
}

/* What a test expects of one task it submitted. */
struct want {
	uint32_t stream;
	uint64_t seq;
	uint32_t op;
	int result;		/* its completion's */
	bool starts;		/* false: cancelled before it ran */
	bool core;		/* starts on a core */
	const char *transport;
};

/*
 * The context the test's tasks ran in: the ctx of the submit of its first
 * task (the test's own context is the only one submitting).
 */
static unsigned long long ctx_of(const struct tr *t, const struct want *w)
{
	unsigned int i;

	for (i = 0; i < t->n; i++)
		if (t->ev[i].type == EV_SUBMIT && t->ev[i].stream == w->stream &&
		    t->ev[i].seq == w->seq)
			return t->ev[i].ctx;
	return 0;
}

/* Was the graph launch (@ctx, @stream, @seq) stitched to the one before? */
static bool stitched(const struct tr *t, unsigned long long ctx,
		     uint32_t stream, uint64_t seq)
{
	unsigned int i;

	for (i = 0; i < t->n; i++)
		if (t->ev[i].type == EV_GRAPH && t->ev[i].ctx == ctx &&
		    t->ev[i].stream == stream && t->ev[i].seq == seq)
			return t->ev[i].stitched;
	return false;
}

/*
 * Check the trace against @w[0..n): one submit, one start (or none), one
 * completion per task, in that order, with the expected fields; and per
 * stream, starts and completions in sequence order, each start after the
 * completion of the task before it on the stream (except a stitched graph
 * launch, which starts before the launch it follows completes). Returns
 * the number of problems, printed as harness diagnostics.
 */
static int check_tasks(struct __test_metadata *_metadata, const struct tr *t,
		       const struct want *w, unsigned int n)
{
	unsigned long long ctx = ctx_of(t, &w[0]);
	int bad = 0;
	unsigned int k, i;

	if (!ctx) {
		TH_LOG("no submit event for the first task");
		return 1;
	}
	for (k = 0; k < n; k++) {
		int sub = -1, start = -1, done = -1, nsub = 0, nstart = 0, ndone = 0;

		for (i = 0; i < t->n; i++) {
			const struct ev *e = &t->ev[i];

			if (e->ctx != ctx || e->stream != w[k].stream ||
			    e->seq != w[k].seq)
				continue;
			if (e->type == EV_SUBMIT) {
				nsub++;
				sub = i;
			} else if (e->type == EV_START) {
				nstart++;
				start = i;
			} else if (e->type == EV_COMPLETE) {
				ndone++;
				done = i;
			}
		}
		if (nsub != 1 || ndone != 1 || nstart != (w[k].starts ? 1 : 0)) {
			TH_LOG("stream %u seq %llu: %d submits, %d starts, %d completions",
			       w[k].stream, (unsigned long long)w[k].seq, nsub,
			       nstart, ndone);
			bad++;
			continue;
		}
		if (w[k].starts && !(sub < start && start < done)) {
			TH_LOG("stream %u seq %llu: submit %d, start %d, completion %d out of order",
			       w[k].stream, (unsigned long long)w[k].seq, sub,
			       start, done);
			bad++;
		}
		if (!w[k].starts && sub > done) {
			TH_LOG("stream %u seq %llu: completed before submitted",
			       w[k].stream, (unsigned long long)w[k].seq);
			bad++;
		}
		if (t->ev[sub].op != w[k].op ||
		    strcmp(t->ev[sub].transport, w[k].transport)) {
			TH_LOG("stream %u seq %llu: op %u transport %s, want %u %s",
			       w[k].stream, (unsigned long long)w[k].seq,
			       t->ev[sub].op, t->ev[sub].transport, w[k].op,
			       w[k].transport);
			bad++;
		}
		if (t->ev[done].result != w[k].result) {
			TH_LOG("stream %u seq %llu: result %d, want %d",
			       w[k].stream, (unsigned long long)w[k].seq,
			       t->ev[done].result, w[k].result);
			bad++;
		}
		if (w[k].starts && (t->ev[start].core >= 0) != w[k].core) {
			TH_LOG("stream %u seq %llu: started on core %d",
			       w[k].stream, (unsigned long long)w[k].seq,
			       t->ev[start].core);
			bad++;
		}
		/* The task before it on its stream completed before it started. */
		if (k && w[k - 1].stream == w[k].stream &&
		    w[k - 1].seq + 1 == w[k].seq && w[k].starts &&
		    !stitched(t, ctx, w[k].stream, w[k].seq)) {
			for (i = 0; i < t->n; i++) {
				const struct ev *e = &t->ev[i];

				if (e->type == EV_COMPLETE && e->ctx == ctx &&
				    e->stream == w[k].stream &&
				    e->seq == w[k - 1].seq)
					break;
			}
			if ((int)i > start) {
				TH_LOG("stream %u seq %llu started before seq %llu completed",
				       w[k].stream, (unsigned long long)w[k].seq,
				       (unsigned long long)w[k - 1].seq);
				bad++;
			}
		}
	}
	/* Per stream, completions in sequence order. */
	for (k = 0; k < n; k++) {
		unsigned long long last = 0;

		for (i = 0; i < t->n; i++) {
			const struct ev *e = &t->ev[i];

			if (e->type != EV_COMPLETE || e->ctx != ctx ||
			    e->stream != w[k].stream)
				continue;
			if (e->seq <= last) {
				TH_LOG("stream %u: seq %llu completed after %llu",
				       e->stream, e->seq, last);
				bad++;
			}
			last = e->seq;
		}
	}
	return bad;
}

FIXTURE(trace) {
	struct snpu_device *dev;
	uint32_t s[2];
	uint64_t mem;
	struct tr *t;
	struct want *w;
	unsigned int n;
	uint64_t seq[2];
};

FIXTURE_SETUP(trace)
{
	ASSERT_EQ(0, snpu_open(0, 0, &self->dev));
	ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_NORMAL, 0,
					&self->s[0]));
	ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_NORMAL, 0,
					&self->s[1]));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 1 << 20, 0, 0, &self->mem));
	self->t = calloc(1, sizeof(*self->t));
	self->w = calloc(MAX_TASKS, sizeof(*self->w));
	ASSERT_NE(NULL, self->t);
	ASSERT_NE(NULL, self->w);
	ASSERT_EQ(0, trace_begin());
}

FIXTURE_TEARDOWN(trace)
{
	trace_end();
	free(self->t);
	free(self->w);
	snpu_close(self->dev);
}

/* Record what the test expects of a task it is about to submit. */
static void expect(FIXTURE_DATA(trace) *self, unsigned int si,
		   const struct snpu_task *task, int result, bool starts,
		   bool core, const char *transport)
{
	struct want *w = &self->w[self->n++];

	w->stream = self->s[si];
	w->seq = ++self->seq[si];
	w->op = task->op;
	w->result = result;
	w->starts = starts;
	w->core = core;
	w->transport = transport;
}

/* Tasks of every kind through SNPU_IOC_SUBMIT on two streams. */
TEST_F(trace, ioctl_tasks_submit_start_complete_in_order)
{
	struct snpu_kernel_arg spin = { .value = 20000 };
	struct snpu_task task[6];
	uint32_t ev;
	unsigned int r, i;
	uint64_t seq;

	ASSERT_EQ(0, snpu_event_create(self->dev, &ev));
	for (r = 0; r < 8; r++) {
		unsigned int si = r & 1;
		uint32_t s = self->s[si];

		ASSERT_EQ(0, snpu_prep_launch(&task[0], s, SNPU_KERNEL_SPIN,
					      2, &spin, 1));
		snpu_prep_memset(&task[1], s, self->mem, 0x5a, 4096);
		ASSERT_EQ(0, snpu_prep_launch(&task[2], s, SNPU_KERNEL_NOP, 1,
					      NULL, 0));
		snpu_prep_event_record(&task[3], s, ev);
		snpu_prep_copy(&task[4], s, SNPU_COPY_D2D, self->mem + 8192,
			       self->mem, 4096);
		ASSERT_EQ(0, snpu_prep_launch(&task[5], s, SNPU_KERNEL_NOP, 1,
					      NULL, 0));
		for (i = 0; i < 6; i++)
			expect(self, si, &task[i], 0, true,
			       i == 0 || i == 1 || i == 4, "ioctl");
		ASSERT_EQ(0, snpu_submit(self->dev, task, 6, &seq));
		ASSERT_EQ(self->seq[si], seq);
	}
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s[0], -1));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s[1], -1));
	ASSERT_EQ(0, trace_read(self->t));
	EXPECT_EQ(0, check_tasks(_metadata, self->t, self->w, self->n));
}

/* A task on a core reports its latencies; a SPIN of 20 us ran that long. */
TEST_F(trace, completion_reports_queue_and_run_latency)
{
	struct snpu_kernel_arg spin = { .value = 200000 };
	unsigned int i, found = 0;

	ASSERT_EQ(0, snpu_launch(self->dev, self->s[0], SNPU_KERNEL_SPIN, 1,
				 &spin, 1));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s[0], -1));
	ASSERT_EQ(0, trace_read(self->t));
	for (i = 0; i < self->t->n; i++) {
		const struct ev *e = &self->t->ev[i];

		if (e->type != EV_COMPLETE || e->stream != self->s[0] ||
		    e->seq != 1)
			continue;
		found++;
		EXPECT_EQ(0, e->result);
		EXPECT_GE(e->run_ns, 200000ULL);
	}
	EXPECT_EQ(1U, found);
}

/*
 * A failed task starts and completes with its error; the tasks behind it
 * on its stream complete with ECANCELED and never start.
 */
TEST_F(trace, failed_task_cancels_the_rest_without_start)
{
	struct snpu_kernel_arg fail = { .value = EIO };
	struct snpu_task task[4];
	unsigned int i;
	uint64_t seq;

	ASSERT_EQ(0, snpu_prep_launch(&task[0], self->s[0], SNPU_KERNEL_FAIL, 1,
				      &fail, 1));
	expect(self, 0, &task[0], -EIO, true, true, "ioctl");
	for (i = 1; i < 4; i++) {
		snpu_prep_memset(&task[i], self->s[0], self->mem, 1, 64);
		expect(self, 0, &task[i], -ECANCELED, false, false, "ioctl");
	}
	ASSERT_EQ(0, snpu_submit(self->dev, task, 4, &seq));
	EXPECT_EQ(-EIO, snpu_stream_synchronize(self->dev, self->s[0], -1));
	ASSERT_EQ(0, trace_read(self->t));
	EXPECT_EQ(0, check_tasks(_metadata, self->t, self->w, self->n));
}

/* Through the command queues: transport ring, and the ENTER calls. */
TEST_F(trace, ring_tasks_and_enter)
{
	struct snpu_kernel_arg spin = { .value = 10000 };
	unsigned int i, done = 0, entered = 0, enters = 0;
	struct snpu_ring ring;
	struct snpu_cqe *cqe;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 64, 0, &ring));
	for (i = 0; i < 48; i++) {
		struct snpu_task *sqe = snpu_ring_get_sqe(&ring);
		unsigned int si = i % 2;

		ASSERT_NE(NULL, sqe);
		if (i % 3 == 0)
			snpu_prep_launch(sqe, self->s[si], SNPU_KERNEL_NOP, 1,
					 NULL, 0);
		else if (i % 3 == 1)
			snpu_prep_launch(sqe, self->s[si], SNPU_KERNEL_SPIN, 1,
					 &spin, 1);
		else
			snpu_prep_memset(sqe, self->s[si], self->mem, 3, 256);
		expect(self, si, sqe, 0, true, i % 3 != 0, "ring");
		if (i % 8 == 7) {
			int ret = snpu_ring_submit(&ring);

			ASSERT_EQ(8, ret);
			enters++;
		}
	}
	while (done < 48) {
		ASSERT_EQ(0, snpu_ring_wait_cqe(&ring, &cqe));
		EXPECT_EQ(0, cqe->result);
		snpu_ring_cqe_seen(&ring, cqe);
		done++;
	}
	ASSERT_EQ(0, trace_read(self->t));
	EXPECT_EQ(0, check_tasks(_metadata, self->t, self->w, self->n));
	for (i = 0; i < self->t->n; i++) {
		const struct ev *e = &self->t->ev[i];

		if (e->type == EV_ENTER && e->to_submit)
			entered += e->submitted;
	}
	EXPECT_EQ(48U, entered);
	EXPECT_LE(enters, 6U);
	snpu_ring_exit(&ring);
}

/* A host callback starts when delivered, completes with its answer. */
TEST_F(trace, host_callback_starts_when_delivered)
{
	struct snpu_task task;
	struct snpu_callback_info cb;
	uint64_t seq;

	snpu_prep_host_func(&task, self->s[0], 77);
	expect(self, 0, &task, -EPROTO, true, false, "ioctl");
	ASSERT_EQ(0, snpu_submit(self->dev, &task, 1, &seq));
	ASSERT_EQ(0, snpu_callback_wait(self->dev, -1, &cb));
	EXPECT_EQ(77ULL, cb.user_data);
	ASSERT_EQ(0, snpu_callback_done(self->dev, cb.cookie, -EPROTO));
	EXPECT_EQ(-EPROTO, snpu_stream_synchronize(self->dev, self->s[0], -1));
	ASSERT_EQ(0, trace_read(self->t));
	EXPECT_EQ(0, check_tasks(_metadata, self->t, self->w, self->n));
}

/* LOCK then UNLOCK: two transitions of this process, RUNNING-LOCKED-RUNNING. */
TEST_F(trace, snapshot_transitions)
{
	struct snpu_device *devs[1] = { self->dev };
	unsigned int i, n = 0;

	ASSERT_EQ(0, snpu_snapshot_lock(devs, 1, -1));
	ASSERT_EQ(0, snpu_snapshot_unlock(devs, 1));
	ASSERT_EQ(0, trace_read(self->t));
	for (i = 0; i < self->t->n; i++) {
		const struct ev *e = &self->t->ev[i];

		if (e->type != EV_SNAPSHOT || e->pid != getpid())
			continue;
		if (n == 0) {
			EXPECT_EQ((unsigned int)SNPU_STATE_RUNNING, e->from);
			EXPECT_EQ((unsigned int)SNPU_STATE_LOCKED, e->to);
		} else {
			EXPECT_EQ((unsigned int)SNPU_STATE_LOCKED, e->from);
			EXPECT_EQ((unsigned int)SNPU_STATE_RUNNING, e->to);
		}
		EXPECT_EQ(0, e->result);
		n++;
	}
	EXPECT_EQ(2U, n);
}

/* The debugfs reset knob: one device_reset event naming the device. */
TEST_F(trace, device_reset)
{
	unsigned int i, n = 0;

	if (access(DEBUGFS "/snpu", F_OK))
		ASSERT_EQ(0, mount("debugfs", DEBUGFS, "debugfs", 0, NULL));
	ASSERT_EQ(0, write_file(DEBUGFS "/snpu/snpu0/reset", "1"));
	ASSERT_EQ(0, trace_read(self->t));
	for (i = 0; i < self->t->n; i++) {
		const struct ev *e = &self->t->ev[i];

		if (e->type == EV_RESET) {
			EXPECT_EQ(0U, e->dev);
			n++;
		}
	}
	EXPECT_EQ(1U, n);
}

/*
 * A graph launch: one task (submit, start without a core, completion),
 * one graph_launch naming its nodes, one graph_node per node on a core,
 * the root before the nodes that depend on it.
 */
TEST_F(trace, graph_launch_and_nodes)
{
	struct snpu_graph_node nodes[3];
	const uint32_t fanin_off[4] = { 0, 0, 1, 2 };
	const uint32_t fanin[2] = { 0, 0 };
	struct snpu_graph_desc desc = {
		.nodes = nodes, .fanin_offsets = fanin_off, .fanin = fanin,
		.nodes_count = 3, .edges_count = 2,
	};
	struct snpu_kernel_arg spin = { .value = 10000 };
	unsigned int i, l, launches = 0;
	struct snpu_task task;
	uint32_t graph;
	uint64_t seq;

	memset(nodes, 0, sizeof(nodes));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, snpu_prep_launch(&nodes[i].task, 0,
					      SNPU_KERNEL_SPIN, 1, &spin, 1));
	ASSERT_EQ(0, snpu_graph_create(self->dev, &desc, &graph));
	for (l = 0; l < 2; l++) {
		snpu_prep_graph(&task, self->s[0], graph, NULL, 0, 0);
		expect(self, 0, &task, 0, true, false, "ioctl");
		ASSERT_EQ(0, snpu_submit(self->dev, &task, 1, &seq));
	}
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s[0], -1));
	ASSERT_EQ(0, trace_read(self->t));
	EXPECT_EQ(0, check_tasks(_metadata, self->t, self->w, self->n));
	for (l = 0; l < 2; l++) {
		int at[3] = { -1, -1, -1 }, launch = -1, done = -1;

		for (i = 0; i < self->t->n; i++) {
			const struct ev *e = &self->t->ev[i];

			if (e->stream != self->s[0] || e->seq != l + 1)
				continue;
			if (e->type == EV_GRAPH) {
				EXPECT_EQ(3U, e->nodes);
				EXPECT_EQ(-1, launch);
				launch = i;
				launches++;
			} else if (e->type == EV_NODE) {
				ASSERT_LT(e->nodes, 3U);
				EXPECT_GE(e->core, 0);
				EXPECT_EQ(-1, at[e->nodes]);
				at[e->nodes] = i;
			} else if (e->type == EV_COMPLETE) {
				done = i;
			}
		}
		EXPECT_LT(launch, at[0]);
		EXPECT_LT(at[0], at[1]);
		EXPECT_LT(at[0], at[2]);
		EXPECT_LT(at[1], done);
		EXPECT_LT(at[2], done);
		EXPECT_NE(-1, launch);
	}
	EXPECT_EQ(2U, launches);
	EXPECT_EQ(0, snpu_graph_destroy(self->dev, graph));
}

/*
 * "snpu-smi -j trace -f FILE" on the trace of a workload: one stream per
 * stream of the test, its tasks in sequence order, each started and
 * completed with its result.
 */
TEST_F(trace, smi_trace_timeline)
{
	const char *saved = "/tmp/obs_trace.txt";
	struct snpu_kernel_arg spin = { .value = 20000 };
	struct jdoc *d = calloc(1, sizeof(*d));
	char *out = malloc(1 << 20), path[96], buf[4096];
	unsigned int i, k, found = 0;
	FILE *in, *to;
	size_t n;

	ASSERT_NE(NULL, d);
	ASSERT_NE(NULL, out);
	for (i = 0; i < 5; i++) {
		ASSERT_EQ(0, snpu_launch(self->dev, self->s[0],
					 SNPU_KERNEL_SPIN, 1, &spin, 1));
		ASSERT_EQ(0, snpu_memset_async(self->dev, self->s[1],
					       self->mem, 7, 512));
	}
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s[0], -1));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s[1], -1));
	write_file(TRACEFS "/tracing_on", "0");
	in = fopen(TRACEFS "/trace", "re");
	ASSERT_NE(NULL, in);
	to = fopen(saved, "we");
	ASSERT_NE(NULL, to);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		ASSERT_EQ(n, fwrite(buf, 1, n, to));
	fclose(in);
	ASSERT_EQ(0, fclose(to));

	ASSERT_EQ(0, smi_json("-j trace -f /tmp/obs_trace.txt", d, out,
			      1 << 20));
	for (k = 0; jnum(d, "streams", k, "stream") >= 0; k++) {
		unsigned int si;
		long long stream = jnum(d, "streams", k, "stream");

		if (stream != self->s[0] && stream != self->s[1])
			continue;
		si = stream == self->s[1];
		found++;
		for (i = 0; i < 5; i++) {
			snprintf(path, sizeof(path), "streams[%u].tasks", k);
			EXPECT_EQ(i + 1, jnum(d, path, i, "seq"));
			EXPECT_EQ(0, jnum(d, path, i, "result"));
			EXPECT_EQ(1, jnum(d, path, i, "block_dim"));
			snprintf(path, sizeof(path), "streams[%u].tasks[%u].op",
				 k, i);
			ASSERT_NE(NULL, jget(d, path));
			EXPECT_STREQ(si ? "memset" : "launch", jget(d, path));
			snprintf(path, sizeof(path),
				 "streams[%u].tasks[%u].completed", k, i);
			ASSERT_NE(NULL, jget(d, path));
			EXPECT_STREQ("true", jget(d, path));
			snprintf(path, sizeof(path),
				 "streams[%u].tasks[%u].started", k, i);
			ASSERT_NE(NULL, jget(d, path));
			EXPECT_STREQ("true", jget(d, path));
		}
		snprintf(path, sizeof(path), "streams[%u].tasks", k);
		EXPECT_EQ(-1, jnum(d, path, 5, "seq"));
	}
	EXPECT_EQ(2U, found);
	unlink(saved);
	free(d);
	free(out);
}

TEST_HARNESS_MAIN
