/* SPDX-License-Identifier: GPL-2.0 */
/*
 * snpu tracepoints, system "snpu" in tracefs (events/snpu/).
 *
 * A task is named by (ctx, stream, seq): the context's id (unique since
 * load), the stream handle and the task's sequence number in the stream.
 * Each task that is submitted gets one snpu_task_submit and one
 * snpu_task_complete; one that runs gets one snpu_task_start in between:
 * on a core (core >= 0) when its first block is taken, or with core -1
 * when it needs no core (a NOP launch, an event record, a stream wait, a
 * callback delivered, a graph launch, whose nodes run on the cores: see
 * snpu_graph_node, one per node that runs, with core -1 for a NOP node,
 * which completes where it becomes ready). A task cancelled before it
 * ran has no start.
 *
 * Times are CLOCK_MONOTONIC nanoseconds. queue_ns is from submit to start,
 * run_ns from start to completion; both are 0 when the events were not
 * enabled at the task's submit (the driver reads the clock for them only
 * while snpu_task_submit is enabled).
 *
 * Tracepoints cost a static branch when disabled.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM snpu

#if !defined(_SNPU_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _SNPU_TRACE_H

#include <linux/tracepoint.h>

/* How a task reached the driver: snpu_task_submit.transport. */
#define SNPU_TRANSPORT_IOCTL	0
#define SNPU_TRANSPORT_RING	1

TRACE_EVENT(snpu_task_submit,
	    TP_PROTO(unsigned int dev, u64 ctx, u32 stream, u64 seq, u32 op,
		     u32 kernel, u32 block_dim, u32 transport),
	    TP_ARGS(dev, ctx, stream, seq, op, kernel, block_dim, transport),
	    TP_STRUCT__entry(__field(u64, ctx)
			     __field(u64, seq)
			     __field(u32, dev)
			     __field(u32, stream)
			     __field(u32, op)
			     __field(u32, kernel)
			     __field(u32, block_dim)
			     __field(u32, transport)
	    ),
	    TP_fast_assign(__entry->ctx = ctx;
			   __entry->seq = seq;
			   __entry->dev = dev;
			   __entry->stream = stream;
			   __entry->op = op;
			   __entry->kernel = kernel;
			   __entry->block_dim = block_dim;
			   __entry->transport = transport;
	    ),
	    TP_printk("dev=%u ctx=%llu stream=%u seq=%llu op=%u kernel=%u block_dim=%u transport=%s",
		      __entry->dev, __entry->ctx, __entry->stream, __entry->seq,
		      __entry->op, __entry->kernel, __entry->block_dim,
		      __entry->transport == SNPU_TRANSPORT_RING ? "ring" : "ioctl")
);

TRACE_EVENT(snpu_task_start,
	    TP_PROTO(unsigned int dev, u64 ctx, u32 stream, u64 seq, int core),
	    TP_ARGS(dev, ctx, stream, seq, core),
	    TP_STRUCT__entry(__field(u64, ctx)
			     __field(u64, seq)
			     __field(u32, dev)
			     __field(u32, stream)
			     __field(int, core)
	    ),
	    TP_fast_assign(__entry->ctx = ctx;
			   __entry->seq = seq;
			   __entry->dev = dev;
			   __entry->stream = stream;
			   __entry->core = core;
	    ),
	    TP_printk("dev=%u ctx=%llu stream=%u seq=%llu core=%d",
		      __entry->dev, __entry->ctx, __entry->stream, __entry->seq,
		      __entry->core)
);

TRACE_EVENT(snpu_task_complete,
	    TP_PROTO(unsigned int dev, u64 ctx, u32 stream, u64 seq, int result,
		     u64 queue_ns, u64 run_ns),
	    TP_ARGS(dev, ctx, stream, seq, result, queue_ns, run_ns),
	    TP_STRUCT__entry(__field(u64, ctx)
			     __field(u64, seq)
			     __field(u64, queue_ns)
			     __field(u64, run_ns)
			     __field(u32, dev)
			     __field(u32, stream)
			     __field(int, result)
	    ),
	    TP_fast_assign(__entry->ctx = ctx;
			   __entry->seq = seq;
			   __entry->queue_ns = queue_ns;
			   __entry->run_ns = run_ns;
			   __entry->dev = dev;
			   __entry->stream = stream;
			   __entry->result = result;
	    ),
	    TP_printk("dev=%u ctx=%llu stream=%u seq=%llu result=%d queue_ns=%llu run_ns=%llu",
		      __entry->dev, __entry->ctx, __entry->stream, __entry->seq,
		      __entry->result, __entry->queue_ns, __entry->run_ns)
);

TRACE_EVENT(snpu_graph_launch,
	    TP_PROTO(unsigned int dev, u64 ctx, u32 stream, u64 seq, u32 graph,
		     u32 nodes, bool stitched),
	    TP_ARGS(dev, ctx, stream, seq, graph, nodes, stitched),
	    TP_STRUCT__entry(__field(u64, ctx)
			     __field(u64, seq)
			     __field(u32, dev)
			     __field(u32, stream)
			     __field(u32, graph)
			     __field(u32, nodes)
			     __field(bool, stitched)
	    ),
	    TP_fast_assign(__entry->ctx = ctx;
			   __entry->seq = seq;
			   __entry->dev = dev;
			   __entry->stream = stream;
			   __entry->graph = graph;
			   __entry->nodes = nodes;
			   __entry->stitched = stitched;
	    ),
	    TP_printk("dev=%u ctx=%llu stream=%u seq=%llu graph=%u nodes=%u stitched=%d",
		      __entry->dev, __entry->ctx, __entry->stream, __entry->seq,
		      __entry->graph, __entry->nodes, __entry->stitched)
);

TRACE_EVENT(snpu_graph_node,
	    TP_PROTO(unsigned int dev, u64 ctx, u32 stream, u64 seq, u32 node, int core),
	    TP_ARGS(dev, ctx, stream, seq, node, core),
	    TP_STRUCT__entry(__field(u64, ctx)
			     __field(u64, seq)
			     __field(u32, dev)
			     __field(u32, stream)
			     __field(u32, node)
			     __field(int, core)
	    ),
	    TP_fast_assign(__entry->ctx = ctx;
			   __entry->seq = seq;
			   __entry->dev = dev;
			   __entry->stream = stream;
			   __entry->node = node;
			   __entry->core = core;
	    ),
	    TP_printk("dev=%u ctx=%llu stream=%u seq=%llu node=%u core=%d",
		      __entry->dev, __entry->ctx, __entry->stream, __entry->seq,
		      __entry->node, __entry->core)
);

TRACE_EVENT(snpu_ring_enter,
	    TP_PROTO(unsigned int dev, u64 ctx, u32 to_submit, u32 submitted,
		     u32 min_complete, u32 flags, int result),
	    TP_ARGS(dev, ctx, to_submit, submitted, min_complete, flags, result),
	    TP_STRUCT__entry(__field(u64, ctx)
			     __field(u32, dev)
			     __field(u32, to_submit)
			     __field(u32, submitted)
			     __field(u32, min_complete)
			     __field(u32, flags)
			     __field(int, result)
	    ),
	    TP_fast_assign(__entry->ctx = ctx;
			   __entry->dev = dev;
			   __entry->to_submit = to_submit;
			   __entry->submitted = submitted;
			   __entry->min_complete = min_complete;
			   __entry->flags = flags;
			   __entry->result = result;
	    ),
	    TP_printk("dev=%u ctx=%llu to_submit=%u submitted=%u min_complete=%u flags=%#x result=%d",
		      __entry->dev, __entry->ctx, __entry->to_submit,
		      __entry->submitted, __entry->min_complete, __entry->flags,
		      __entry->result)
);

TRACE_EVENT(snpu_snapshot_transition,
	    TP_PROTO(unsigned int dev, pid_t pid, u32 seq, u32 from, u32 to, int result),
	    TP_ARGS(dev, pid, seq, from, to, result),
	    TP_STRUCT__entry(__field(u32, dev)
			     __field(pid_t, pid)
			     __field(u32, seq)
			     __field(u32, from)
			     __field(u32, to)
			     __field(int, result)
	    ),
	    TP_fast_assign(__entry->dev = dev;
			   __entry->pid = pid;
			   __entry->seq = seq;
			   __entry->from = from;
			   __entry->to = to;
			   __entry->result = result;
	    ),
	    TP_printk("dev=%u pid=%d seq=%u from=%u to=%u result=%d",
		      __entry->dev, __entry->pid, __entry->seq, __entry->from,
		      __entry->to, __entry->result)
);

TRACE_EVENT(snpu_device_reset,
	    TP_PROTO(unsigned int dev, u32 contexts),
	    TP_ARGS(dev, contexts),
	    TP_STRUCT__entry(__field(u32, dev)
			     __field(u32, contexts)
	    ),
	    TP_fast_assign(__entry->dev = dev;
			   __entry->contexts = contexts;
	    ),
	    TP_printk("dev=%u contexts=%u", __entry->dev, __entry->contexts)
);

#endif /* _SNPU_TRACE_H */

/* Out of the kernel tree: the header is found through -I$(src)/kmod. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
