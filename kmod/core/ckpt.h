/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * snpu checkpoint images: the validator of the stream's header and chunks
 * (see Documentation/checkpoint.rst). Pure C: no locks, no sleeping, no
 * allocation; shared by the module, libsnpu's reader, the unit test and
 * the fuzz target.
 */
#ifndef _SNPU_CORE_CKPT_H
#define _SNPU_CORE_CKPT_H

#include "core.h"

/* Device address windows: one per context (kmod/context.c). */
#define SNPU_VA_BASE		0x100000000000ULL	/* 2^44 */
#define SNPU_VA_WINDOW_SHIFT	36
#define SNPU_VA_WINDOWS		65536

/* Bounds of an image, beyond the module parameters' limits. */
#define SNPU_CKPT_MAX_CONTEXTS	SNPU_VA_WINDOWS
#define SNPU_CKPT_MAX_OBJECTS	0x100000U	/* 2^20 */
#define SNPU_CKPT_HANDLE_MAX	0x7fffffffU
/* The SQ poller's longest idle time (SNPU_IOC_RING_SETUP's idle_ms). */
#define SNPU_CKPT_RING_MAX_IDLE_MS	10000

/**
 * struct snpu_ckpt_limits - what the reader accepts
 * @abi_major: its SNPU_ABI_MAJOR: another one is ENOEXEC
 * @page_size: its page size: another one is ENOEXEC
 * @mem_align: its SNPU_MEM_ALIGN: another one is ENOEXEC
 */
struct snpu_ckpt_limits {
	__u32 abi_major;
	__u32 page_size;
	__u32 mem_align;
};

/* Where the parser is (enum snpu_ckpt_phase). */
enum snpu_ckpt_phase {
	SNPU_CKPT_P_TOP,	/* a CTX or END comes next */
	SNPU_CKPT_P_MEM,	/* MEM, or the first object of the context */
	SNPU_CKPT_P_OWNER,	/* OWNER, or the next kind of object */
	SNPU_CKPT_P_OBJ,	/* HOST, STREAM, EVENT, COMM by handle */
	SNPU_CKPT_P_GRAPH,	/* GRAPH, in handle order, after all objects */
	SNPU_CKPT_P_RING,	/* the RING and its DATA, the context's last */
	SNPU_CKPT_P_DONE,	/* END seen */
};

/**
 * struct snpu_ckpt_parser - the state of one reading of an image
 * @contexts: contexts the header announced
 * @seq: number of the next chunk
 * @ctx_seen: CTX chunks so far
 * @phase: enum snpu_ckpt_phase
 * @ctx: the current context's record
 * @va_base: its first device address
 * @va_end: its last device address
 * @nmem: its MEM chunks so far
 * @nobj: its object chunks so far
 * @mem_bytes: sum of its MEM sizes so far
 * @host_bytes: sum of its HOST sizes so far
 * @mem_next: the lowest address the next MEM may start at
 * @last_handle: the last handle of the current phase
 * @data_left: bytes the DATA chunks of the current MEM or HOST still owe
 * @data_off: offset the next DATA chunk must have
 * @page_size: the image's page size (the rings' layout)
 * @nring: its RING chunks so far
 * @ncomm: its COMM chunks so far
 * @version: the image's format version
 */
struct snpu_ckpt_parser {
	__u32 contexts;
	__u32 seq;
	__u32 ctx_seen;
	__u32 phase;
	struct snpu_ckpt_ctx ctx;
	__u64 va_base;
	__u64 va_end;
	__u32 nmem;
	__u32 nobj;
	__u64 mem_bytes;
	__u64 host_bytes;
	__u64 mem_next;
	__u32 last_handle;
	__u64 data_left;
	__u64 data_off;
	__u32 page_size;
	__u32 nring;
	__u32 ncomm;
	__u32 version;
};

__u32 snpu_ckpt_crc(__u32 crc, const void *buf, __u64 len);
__u32 snpu_ckpt_header_crc(const struct snpu_ckpt_header *h);
__u32 snpu_ckpt_chunk_crc_begin(const struct snpu_ckpt_chunk *c);
__u32 snpu_ckpt_payload_size(__u32 type);
int snpu_ckpt_header_check(struct snpu_ckpt_parser *ps,
			   const struct snpu_ckpt_header *h,
			   const struct snpu_ckpt_limits *lim);
int snpu_ckpt_chunk_check(const struct snpu_ckpt_parser *ps,
			  const struct snpu_ckpt_chunk *c);
int snpu_ckpt_record_check(struct snpu_ckpt_parser *ps,
			   const struct snpu_ckpt_chunk *c, const void *rec);
__u64 snpu_ckpt_ring_bytes(__u32 sq_entries, __u32 cq_entries,
			   __u32 page_size);
int snpu_ckpt_ring_check(const struct snpu_ckpt_ring *r, __u32 page_size);
int snpu_ckpt_ring_cqe_check(const struct snpu_cqe *cqe);
int snpu_ckpt_end_check(const struct snpu_ckpt_parser *ps);
__u64 snpu_ckpt_graph_def_bytes(__u32 nodes, __u32 edges);
bool snpu_ckpt_ctx_complete(const struct snpu_ckpt_parser *ps);
int snpu_ckpt_parse_buf(const void *buf, __u64 len,
			const struct snpu_ckpt_limits *lim,
			struct snpu_ckpt_parser *ps);

#endif /* _SNPU_CORE_CKPT_H */
