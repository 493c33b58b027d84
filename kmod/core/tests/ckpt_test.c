// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit tests of the checkpoint image validator (kmod/core/ckpt.c):
 * a whole image passes; every truncation, every flipped byte, each field
 * out of range and each chunk out of place fails with its documented
 * errno (Documentation/checkpoint.rst).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt_img.h"

#include "kselftest_harness.h"

static int parse(const struct img *im)
{
	struct snpu_ckpt_parser ps;

	return snpu_ckpt_parse_buf(im->p, im->n, &img_limits, &ps);
}

/* Offset of chunk @n's header in the reference image. */
static size_t chunk_at(const struct img *im, unsigned int n)
{
	size_t pos = sizeof(struct snpu_ckpt_header);
	struct snpu_ckpt_chunk c;

	while (n--) {
		memcpy(&c, im->p + pos, sizeof(c));
		pos += sizeof(c) + c.len;
	}
	return pos;
}

/* Rewrite chunk @n's CRC after its bytes were changed. */
static void refresh_crc(struct img *im, unsigned int n)
{
	size_t pos = chunk_at(im, n);
	struct snpu_ckpt_chunk c;
	__u32 crc;

	memcpy(&c, im->p + pos, sizeof(c));
	crc = snpu_ckpt_chunk_crc_begin(&c);
	crc = snpu_ckpt_crc(crc, im->p + pos + sizeof(c), c.len) ^ ~0U;
	c.crc = crc;
	memcpy(im->p + pos, &c, sizeof(c));
}

/* The record of chunk @n. */
static void *rec_of(struct img *im, unsigned int n)
{
	return im->p + chunk_at(im, n) + sizeof(struct snpu_ckpt_chunk);
}

FIXTURE(ckpt) {
	struct img im;
};

FIXTURE_SETUP(ckpt)
{
	memset(&self->im, 0, sizeof(self->im));
	img_reference(&self->im);
}

FIXTURE_TEARDOWN(ckpt)
{
	free(self->im.p);
}

/* Chunk numbers of the reference image. */
enum { C_CTX, C_MEM1, C_DATA1, C_DATA2, C_MEM2, C_DATA3, C_OWNER, C_HOST,
       C_HDATA, C_ASTREAM, C_STREAM, C_EVENT, C_END };

TEST_F(ckpt, whole_image_passes)
{
	struct snpu_ckpt_parser ps;

	ASSERT_EQ(0, snpu_ckpt_parse_buf(self->im.p, self->im.n, &img_limits,
					 &ps));
	EXPECT_EQ(1u, ps.ctx_seen);
	EXPECT_EQ((__u32)C_END + 1, ps.seq);
	EXPECT_EQ(5000ull + 4096, ps.mem_bytes);
	EXPECT_EQ(5u, ps.nobj);
}

TEST_F(ckpt, trailing_bytes_ignored)
{
	img_put(&self->im, "xyz", 3);
	ASSERT_EQ(0, parse(&self->im));
}

TEST_F(ckpt, every_truncation_is_enodata)
{
	size_t n, whole = self->im.n;

	for (n = 0; n < whole; n++) {
		self->im.n = n;
		ASSERT_EQ(-ENODATA, parse(&self->im)) TH_LOG("length %zu", n);
	}
}

TEST_F(ckpt, every_flipped_byte_fails)
{
	size_t i;
	int ret;

	for (i = 0; i < self->im.n; i++) {
		self->im.p[i] ^= 0x40;
		ret = parse(&self->im);
		self->im.p[i] ^= 0x40;
		ASSERT_NE(0, ret) TH_LOG("byte %zu", i);
	}
}

TEST_F(ckpt, wrong_magic_is_enoexec)
{
	struct snpu_ckpt_header *h = (void *)self->im.p;

	h->magic ^= 1;
	h->crc = snpu_ckpt_header_crc(h);
	ASSERT_EQ(-ENOEXEC, parse(&self->im));
}

TEST_F(ckpt, wrong_version_is_enoexec)
{
	struct snpu_ckpt_header *h = (void *)self->im.p;

	h->version = SNPU_CKPT_VERSION + 1;
	h->crc = snpu_ckpt_header_crc(h);
	ASSERT_EQ(-ENOEXEC, parse(&self->im));
}

TEST_F(ckpt, version_1_image_passes)
{
	struct snpu_ckpt_header *h = (void *)self->im.p;

	h->version = 1;
	h->crc = snpu_ckpt_header_crc(h);
	ASSERT_EQ(0, parse(&self->im));
	h->version = 0;
	h->crc = snpu_ckpt_header_crc(h);
	ASSERT_EQ(-ENOEXEC, parse(&self->im));
}

TEST_F(ckpt, wrong_abi_major_is_enoexec)
{
	struct snpu_ckpt_header *h = (void *)self->im.p;

	h->abi_major++;
	h->crc = snpu_ckpt_header_crc(h);
	ASSERT_EQ(-ENOEXEC, parse(&self->im));
}

TEST_F(ckpt, header_crc_mismatch_is_ebadmsg)
{
	struct snpu_ckpt_header *h = (void *)self->im.p;

	h->crc ^= 1;
	ASSERT_EQ(-EBADMSG, parse(&self->im));
}

TEST_F(ckpt, header_flags_is_eproto)
{
	struct snpu_ckpt_header *h = (void *)self->im.p;

	h->flags = 1;
	h->crc = snpu_ckpt_header_crc(h);
	ASSERT_EQ(-EPROTO, parse(&self->im));
}

TEST_F(ckpt, header_contexts_out_of_range_is_eproto)
{
	struct snpu_ckpt_header *h = (void *)self->im.p;

	h->contexts = 0;
	h->crc = snpu_ckpt_header_crc(h);
	ASSERT_EQ(-EPROTO, parse(&self->im));
	h->contexts = SNPU_CKPT_MAX_CONTEXTS + 1;
	h->crc = snpu_ckpt_header_crc(h);
	ASSERT_EQ(-EPROTO, parse(&self->im));
	/* More contexts than the image has: END comes too early. */
	h->contexts = 2;
	h->crc = snpu_ckpt_header_crc(h);
	ASSERT_EQ(-EPROTO, parse(&self->im));
}

TEST_F(ckpt, data_crc_mismatch_is_ebadmsg)
{
	unsigned char *b = (unsigned char *)rec_of(&self->im, C_DATA2) + 100;

	*b ^= 1;
	ASSERT_EQ(-EBADMSG, parse(&self->im));
}

TEST_F(ckpt, chunk_seq_is_eproto)
{
	struct snpu_ckpt_chunk *c = (void *)(self->im.p +
					     chunk_at(&self->im, C_MEM2));

	c->seq++;
	refresh_crc(&self->im, C_MEM2);
	ASSERT_EQ(-EPROTO, parse(&self->im));
}

TEST_F(ckpt, chunk_length_is_eproto)
{
	struct snpu_ckpt_chunk *c = (void *)(self->im.p +
					     chunk_at(&self->im, C_EVENT));

	c->len = 16;
	ASSERT_EQ(-EPROTO, parse(&self->im));
	c->len = 0xffffffff;
	ASSERT_EQ(-EPROTO, parse(&self->im));
}

TEST_F(ckpt, unknown_type_is_eproto)
{
	struct snpu_ckpt_chunk *c = (void *)(self->im.p +
					     chunk_at(&self->im, C_EVENT));

	c->type = 99;
	refresh_crc(&self->im, C_EVENT);
	ASSERT_EQ(-EPROTO, parse(&self->im));
}

TEST_F(ckpt, ctx_counts_out_of_range_are_eproto)
{
	struct snpu_ckpt_ctx *ctx = rec_of(&self->im, C_CTX);
	struct snpu_ckpt_ctx keep = *ctx;

	ctx->nmem = 1;		/* a second MEM is one too many */
	refresh_crc(&self->im, C_CTX);
	EXPECT_EQ(-EPROTO, parse(&self->im));
	*ctx = keep;
	ctx->nobj = 4;		/* the event is one too many */
	refresh_crc(&self->im, C_CTX);
	EXPECT_EQ(-EPROTO, parse(&self->im));
	*ctx = keep;
	ctx->nobj = 6;		/* END comes before the sixth */
	refresh_crc(&self->im, C_CTX);
	EXPECT_EQ(-EPROTO, parse(&self->im));
	*ctx = keep;
	ctx->mem_bytes = ctx->mem_total + 1;
	refresh_crc(&self->im, C_CTX);
	EXPECT_EQ(-EPROTO, parse(&self->im));
	*ctx = keep;
	ctx->va_window = SNPU_VA_WINDOWS;
	refresh_crc(&self->im, C_CTX);
	EXPECT_EQ(-EPROTO, parse(&self->im));
	*ctx = keep;
	ctx->dev_index = SNPU_MAX_DEVICES;
	refresh_crc(&self->im, C_CTX);
	EXPECT_EQ(-EPROTO, parse(&self->im));
	*ctx = keep;
	ctx->reserved = 1;
	refresh_crc(&self->im, C_CTX);
	EXPECT_EQ(-EPROTO, parse(&self->im));
	*ctx = keep;
	ctx->pad = 1;
	refresh_crc(&self->im, C_CTX);
	EXPECT_EQ(-EPROTO, parse(&self->im));
	*ctx = keep;
	ctx->nring = 2;		/* one ring per context at most */
	refresh_crc(&self->im, C_CTX);
	EXPECT_EQ(-EPROTO, parse(&self->im));
	*ctx = keep;
	ctx->nring = 1;		/* announced, and END comes instead */
	refresh_crc(&self->im, C_CTX);
	EXPECT_EQ(-EPROTO, parse(&self->im));
}

TEST_F(ckpt, mem_address_out_of_range_is_eproto)
{
	struct snpu_ckpt_mem *m = rec_of(&self->im, C_MEM2);

	m->addr = IMG_BASE + 4096;	/* overlaps the first allocation */
	refresh_crc(&self->im, C_MEM2);
	EXPECT_EQ(-EPROTO, parse(&self->im));
	m->addr = IMG_BASE + 8192 + 1;	/* not aligned */
	refresh_crc(&self->im, C_MEM2);
	EXPECT_EQ(-EPROTO, parse(&self->im));
	m->addr = IMG_BASE + (1ULL << SNPU_VA_WINDOW_SHIFT);	/* next window */
	refresh_crc(&self->im, C_MEM2);
	EXPECT_EQ(-EPROTO, parse(&self->im));
}

TEST_F(ckpt, data_offset_and_length_are_checked)
{
	struct snpu_ckpt_data *d = rec_of(&self->im, C_DATA2);
	struct snpu_ckpt_chunk *c = (void *)(self->im.p +
					     chunk_at(&self->im, C_DATA2));

	d->offset = 2999;
	refresh_crc(&self->im, C_DATA2);
	EXPECT_EQ(-EPROTO, parse(&self->im));
	d->offset = 3000;
	c->len += 1;		/* one byte more than the allocation */
	EXPECT_EQ(-EPROTO, parse(&self->im));
}

TEST_F(ckpt, handles_must_increase)
{
	struct snpu_ckpt_stream *s = rec_of(&self->im, C_STREAM);

	s->handle = 3;		/* the attached stream's */
	refresh_crc(&self->im, C_STREAM);
	EXPECT_EQ(-EPROTO, parse(&self->im));
	s->handle = 0;
	refresh_crc(&self->im, C_STREAM);
	EXPECT_EQ(-EPROTO, parse(&self->im));
	s->handle = 0x80000000u;
	refresh_crc(&self->im, C_STREAM);
	EXPECT_EQ(-EPROTO, parse(&self->im));
}

TEST_F(ckpt, stream_key_and_priority_are_checked)
{
	struct snpu_ckpt_stream *s = rec_of(&self->im, C_ASTREAM);
	struct snpu_ckpt_stream keep = *s;

	memset(s->key, 0, sizeof(s->key));	/* attached, empty key */
	refresh_crc(&self->im, C_ASTREAM);
	EXPECT_EQ(-EPROTO, parse(&self->im));
	*s = keep;
	memset(s->key, 'a', sizeof(s->key));	/* not terminated */
	refresh_crc(&self->im, C_ASTREAM);
	EXPECT_EQ(-EPROTO, parse(&self->im));
	*s = keep;
	s->priority = SNPU_PRIO_HIGH + 1;
	refresh_crc(&self->im, C_ASTREAM);
	EXPECT_EQ(-EPROTO, parse(&self->im));
}

TEST_F(ckpt, host_records_are_checked)
{
	struct snpu_ckpt_host *h = rec_of(&self->im, C_HOST);
	struct snpu_ckpt_host keep = *h;

	h->bytes = 100;			/* not whole pages */
	refresh_crc(&self->im, C_HOST);
	EXPECT_EQ(-EPROTO, parse(&self->im));
	*h = keep;
	h->kind = 7;
	refresh_crc(&self->im, C_HOST);
	EXPECT_EQ(-EPROTO, parse(&self->im));
	*h = keep;
	h->kind = SNPU_CKPT_HOST_REGISTERED;	/* with no address */
	refresh_crc(&self->im, C_HOST);
	EXPECT_EQ(-EPROTO, parse(&self->im));
}

TEST_F(ckpt, owner_after_objects_is_eproto)
{
	struct img im = { 0 };
	struct snpu_ckpt_ctx ctx = {
		.dev_index = 0, .cores = 1, .mem_total = 1 << 20, .nobj = 2,
	};
	struct snpu_ckpt_event e = { .handle = 1 };
	struct snpu_ckpt_owner o = { .handle = 2 };

	img_header(&im, 1);
	img_chunk(&im, SNPU_CKPT_CTX, &ctx, sizeof(ctx), NULL, 0);
	img_chunk(&im, SNPU_CKPT_EVENT, &e, sizeof(e), NULL, 0);
	img_chunk(&im, SNPU_CKPT_OWNER, &o, sizeof(o), NULL, 0);
	img_end(&im);
	EXPECT_EQ(-EPROTO, parse(&im));
	free(im.p);
}

TEST_F(ckpt, end_chunk_count_is_checked)
{
	struct snpu_ckpt_end *e = rec_of(&self->im, C_END);

	e->chunks--;
	refresh_crc(&self->im, C_END);
	EXPECT_EQ(-EPROTO, parse(&self->im));
}

TEST_F(ckpt, other_page_size_is_enoexec)
{
	struct snpu_ckpt_limits lim = img_limits;
	struct snpu_ckpt_parser ps;

	lim.page_size = 65536;
	EXPECT_EQ(-ENOEXEC, snpu_ckpt_parse_buf(self->im.p, self->im.n, &lim,
						&ps));
}

/* ---- rings ------------------------------------------------------------ */

FIXTURE(ring) {
	struct img im;
};

FIXTURE_SETUP(ring)
{
	memset(&self->im, 0, sizeof(self->im));
	img_ring(&self->im);
}

FIXTURE_TEARDOWN(ring)
{
	free(self->im.p);
}

/* Chunk numbers of the image with rings. */
enum { R_CTX, R_STREAM, R_RING, R_DATA1, R_DATA2, R_OVF, R_END };

/* Change the RING record with @fn, fix its CRC: the parse's answer. */
#define RING_EDIT(im, stmt) ({					\
	struct snpu_ckpt_ring *r = rec_of(im, R_RING);		\
	struct snpu_ckpt_ring keep = *r;			\
	int __ret;						\
								\
	stmt;							\
	refresh_crc(im, R_RING);				\
	__ret = parse(im);					\
	*r = keep;						\
	refresh_crc(im, R_RING);				\
	__ret;							\
})

TEST_F(ring, whole_image_passes)
{
	struct snpu_ckpt_parser ps;

	ASSERT_EQ(0, snpu_ckpt_parse_buf(self->im.p, self->im.n, &img_limits,
					 &ps));
	EXPECT_EQ((__u32)R_END + 1, ps.seq);
	EXPECT_EQ(1u, ps.nring);
	EXPECT_TRUE(snpu_ckpt_ctx_complete(&ps));
}

/* Version 1 of the format had no rings: such an image is not one. */
TEST_F(ring, ring_in_a_version_1_image_is_eproto)
{
	struct snpu_ckpt_header *h = (void *)self->im.p;

	h->version = 1;
	h->crc = snpu_ckpt_header_crc(h);
	EXPECT_EQ(-EPROTO, parse(&self->im));
}

TEST_F(ring, every_truncation_is_enodata)
{
	size_t n, whole = self->im.n;

	for (n = 0; n < whole; n += 7) {
		self->im.n = n;
		ASSERT_EQ(-ENODATA, parse(&self->im)) TH_LOG("length %zu", n);
	}
}

TEST_F(ring, every_flipped_byte_fails)
{
	size_t i;
	int ret;

	for (i = 0; i < self->im.n; i++) {
		self->im.p[i] ^= 0x08;
		ret = parse(&self->im);
		self->im.p[i] ^= 0x08;
		ASSERT_NE(0, ret) TH_LOG("byte %zu", i);
	}
}

TEST_F(ring, entries_must_be_powers_of_two_in_range)
{
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im, r->sq_entries = 0));
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im, r->sq_entries = 3));
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im, r->cq_entries = 12));
	/* A CQ smaller than the SQ. */
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im, r->cq_entries = 2));
	/* Beyond SNPU_RING_MAX_ENTRIES, with the size they would make. */
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im, {
		r->sq_entries = 2 * SNPU_RING_MAX_ENTRIES;
		r->cq_entries = 2 * SNPU_RING_MAX_ENTRIES;
		r->bytes = snpu_ckpt_ring_bytes(r->sq_entries, r->cq_entries,
						4096);
	}));
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im, {
		r->cq_entries = 4 * SNPU_RING_MAX_ENTRIES;
		r->bytes = snpu_ckpt_ring_bytes(r->sq_entries, r->cq_entries,
						4096);
	}));
}

TEST_F(ring, mapping_size_must_match_entries)
{
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im, r->bytes += 4096));
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im, r->bytes -= 4096));
	/* Other entries of the same size are fine for the record... */
	EXPECT_EQ(0, RING_EDIT(&self->im, r->cq_entries = 16));
	/* ...but not with a mapping of another page size. */
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im,
				     r->bytes = snpu_ckpt_ring_bytes(4, 8, 8192)));
}

TEST_F(ring, flags_must_be_known)
{
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im, r->flags |= 4));
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im, r->sq_flags = 2));
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im, r->cq_flags = 2));
	EXPECT_EQ(0, RING_EDIT(&self->im, r->flags |= SNPU_RING_CALLBACK_CQE));
	EXPECT_EQ(0, RING_EDIT(&self->im, r->sq_flags = SNPU_SQ_NEED_WAKEUP));
}

TEST_F(ring, idle_time_goes_with_sqpoll)
{
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im, r->idle_ms = 0));
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im,
				     r->idle_ms = SNPU_CKPT_RING_MAX_IDLE_MS + 1));
	EXPECT_EQ(0, RING_EDIT(&self->im,
			       r->idle_ms = SNPU_CKPT_RING_MAX_IDLE_MS));
	/* Without SQPOLL, no idle time. */
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im, r->flags = 0));
	EXPECT_EQ(0, RING_EDIT(&self->im, { r->flags = 0; r->idle_ms = 0; }));
}

TEST_F(ring, indices_must_fit_the_rings)
{
	/* Five SQEs submitted to a ring of four. */
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im, r->sq_tail = r->sq_head + 5));
	/* A tail behind the head. */
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im, r->sq_tail = r->sq_head - 1));
	EXPECT_EQ(0, RING_EDIT(&self->im, r->sq_tail = r->sq_head + 4));
	/* Nine CQEs unreaped in a ring of eight; a head past the tail. */
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im, r->cq_head = r->cq_tail - 9));
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im, r->cq_head = r->cq_tail + 1));
	EXPECT_EQ(0, RING_EDIT(&self->im, r->cq_head = r->cq_tail - 8));
	/* Free-running: wrapping past 2^32 is fine. */
	EXPECT_EQ(0, RING_EDIT(&self->im, {
		r->sq_head = 0xffffffffu;
		r->sq_tail = 1;
		r->cq_head = 0xfffffffeu;
		r->cq_tail = 3;
	}));
}

TEST_F(ring, parked_completions_are_bounded)
{
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im,
				     r->noverflow = SNPU_CKPT_RING_MAX_OVERFLOW + 1));
	/* One more than the DATA carry: END comes while bytes are owed. */
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im, r->noverflow = 3));
	/* One fewer: the last DATA carries more than is owed. */
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im, r->noverflow = 1));
}

TEST_F(ring, reserved_and_pad_must_be_zero)
{
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im, r->pad = 1));
	EXPECT_EQ(-EPROTO, RING_EDIT(&self->im, r->reserved[1] = 1));
}

TEST_F(ring, data_length_and_offset_are_checked)
{
	struct snpu_ckpt_data *d = rec_of(&self->im, R_DATA2);

	d->offset = 8191;
	refresh_crc(&self->im, R_DATA2);
	EXPECT_EQ(-EPROTO, parse(&self->im));
	d->offset = 8192;
	refresh_crc(&self->im, R_DATA2);
	EXPECT_EQ(0, parse(&self->im));
}

TEST_F(ring, ring_out_of_place_is_eproto)
{
	struct snpu_ckpt_ctx ctx = {
		.cores = 1, .mem_total = 1 << 20, .nobj = 1, .nring = 1,
	};
	struct snpu_ckpt_ring r = {
		.sq_entries = 1, .cq_entries = 2,
		.bytes = snpu_ckpt_ring_bytes(1, 2, 4096),
	};
	static unsigned char bytes[3 * 4096];
	struct snpu_ckpt_event e = { .handle = 1 };
	struct snpu_ckpt_data d = { 0 };
	struct img im = { 0 };

	/* Before the context's objects. */
	img_header(&im, 1);
	img_chunk(&im, SNPU_CKPT_CTX, &ctx, sizeof(ctx), NULL, 0);
	img_chunk(&im, SNPU_CKPT_RING, &r, sizeof(r), NULL, 0);
	img_chunk(&im, SNPU_CKPT_DATA, &d, sizeof(d), bytes, sizeof(bytes));
	img_chunk(&im, SNPU_CKPT_EVENT, &e, sizeof(e), NULL, 0);
	img_end(&im);
	EXPECT_EQ(-EPROTO, parse(&im));
	free(im.p);

	/* In a context that announced none. */
	memset(&im, 0, sizeof(im));
	ctx.nring = 0;
	img_header(&im, 1);
	img_chunk(&im, SNPU_CKPT_CTX, &ctx, sizeof(ctx), NULL, 0);
	img_chunk(&im, SNPU_CKPT_EVENT, &e, sizeof(e), NULL, 0);
	img_chunk(&im, SNPU_CKPT_RING, &r, sizeof(r), NULL, 0);
	img_end(&im);
	EXPECT_EQ(-EPROTO, parse(&im));
	free(im.p);

	/* Twice. */
	memset(&im, 0, sizeof(im));
	ctx.nring = 1;
	img_header(&im, 1);
	img_chunk(&im, SNPU_CKPT_CTX, &ctx, sizeof(ctx), NULL, 0);
	img_chunk(&im, SNPU_CKPT_EVENT, &e, sizeof(e), NULL, 0);
	img_chunk(&im, SNPU_CKPT_RING, &r, sizeof(r), NULL, 0);
	img_chunk(&im, SNPU_CKPT_DATA, &d, sizeof(d), bytes, sizeof(bytes));
	img_chunk(&im, SNPU_CKPT_RING, &r, sizeof(r), NULL, 0);
	img_end(&im);
	EXPECT_EQ(-EPROTO, parse(&im));
	free(im.p);

	/* Right: after the objects, once. */
	memset(&im, 0, sizeof(im));
	img_header(&im, 1);
	img_chunk(&im, SNPU_CKPT_CTX, &ctx, sizeof(ctx), NULL, 0);
	img_chunk(&im, SNPU_CKPT_EVENT, &e, sizeof(e), NULL, 0);
	img_chunk(&im, SNPU_CKPT_RING, &r, sizeof(r), NULL, 0);
	img_chunk(&im, SNPU_CKPT_DATA, &d, sizeof(d), bytes, sizeof(bytes));
	img_end(&im);
	EXPECT_EQ(0, parse(&im));
	free(im.p);
}

TEST(parked_cqe_check)
{
	struct snpu_cqe c = { .user_data = 7, .result = -EIO, .seq = 3 };

	EXPECT_EQ(0, snpu_ckpt_ring_cqe_check(&c));
	c.result = 1;
	EXPECT_EQ(-EPROTO, snpu_ckpt_ring_cqe_check(&c));
	c.result = -4096;
	EXPECT_EQ(-EPROTO, snpu_ckpt_ring_cqe_check(&c));
	c.result = 0;
	c.flags = SNPU_CQE_F_CALLBACK;	/* a callback never waits there */
	EXPECT_EQ(-EPROTO, snpu_ckpt_ring_cqe_check(&c));
}

TEST(ring_bytes_is_the_modules_layout)
{
	/* A header page, 8 SQEs, 16 CQEs, each area whole pages. */
	EXPECT_EQ(3 * 4096ull, snpu_ckpt_ring_bytes(8, 16, 4096));
	EXPECT_EQ(4096ull + 4096 * sizeof(struct snpu_task) +
		  8192 * sizeof(struct snpu_cqe),
		  snpu_ckpt_ring_bytes(4096, 8192, 4096));
}

/* ---- graphs ------------------------------------------------------------ */

FIXTURE(gckpt) {
	struct img im;
};

FIXTURE_SETUP(gckpt)
{
	memset(&self->im, 0, sizeof(self->im));
	img_graph_reference(&self->im);
}

FIXTURE_TEARDOWN(gckpt)
{
	free(self->im.p);
}

/* Chunk numbers of the graph reference image. */
enum { G_CTX, G_MEM, G_MDATA, G_STREAM, G_GRAPH, G_GDATA1, G_GDATA2, G_END };

TEST_F(gckpt, whole_image_passes)
{
	struct snpu_ckpt_parser ps;

	ASSERT_EQ(0, snpu_ckpt_parse_buf(self->im.p, self->im.n, &img_limits,
					 &ps));
	EXPECT_EQ((__u32)G_END + 1, ps.seq);
	EXPECT_EQ(2u, ps.nobj);
	EXPECT_EQ(0ull, ps.data_left);
}

TEST_F(gckpt, every_truncation_is_enodata)
{
	size_t n, whole = self->im.n;

	for (n = 0; n < whole; n++) {
		self->im.n = n;
		ASSERT_EQ(-ENODATA, parse(&self->im)) TH_LOG("length %zu", n);
	}
}

TEST_F(gckpt, every_flipped_byte_fails)
{
	size_t i;
	int ret;

	for (i = 0; i < self->im.n; i++) {
		self->im.p[i] ^= 0x40;
		ret = parse(&self->im);
		self->im.p[i] ^= 0x40;
		ASSERT_NE(0, ret) TH_LOG("byte %zu", i);
	}
}

/* The parser's answer with @r as the graph's record (CRC fixed), undone. */
static int with_graph(struct img *im, const struct snpu_ckpt_graph *r)
{
	struct snpu_ckpt_graph *g = rec_of(im, G_GRAPH);
	struct snpu_ckpt_graph keep = *g;
	int ret;

	*g = *r;
	refresh_crc(im, G_GRAPH);
	ret = parse(im);
	*g = keep;
	refresh_crc(im, G_GRAPH);
	return ret;
}

/* The reference record with one change, its def_bytes kept consistent. */
#define GRAPH_EPROTO(stmt)						\
	do {								\
		struct snpu_ckpt_graph r = *(struct snpu_ckpt_graph *)	\
			rec_of(&self->im, G_GRAPH);			\
		stmt;							\
		EXPECT_EQ(-EPROTO, with_graph(&self->im, &r)) TH_LOG(#stmt); \
	} while (0)

#define DEF_BYTES(r)	((r).def_bytes = snpu_ckpt_graph_def_bytes((r).nodes, \
								 (r).edges))

TEST_F(gckpt, node_count_out_of_range_is_eproto)
{
	GRAPH_EPROTO(r.nodes = 0; DEF_BYTES(r));
	GRAPH_EPROTO(r.nodes = SNPU_GRAPH_MAX_NODES + 1; DEF_BYTES(r));
	GRAPH_EPROTO(r.nodes = 0xffffffffu; DEF_BYTES(r));
	ASSERT_EQ(0, parse(&self->im));
}

TEST_F(gckpt, edge_count_out_of_range_is_eproto)
{
	/* One node has no predecessor to name. */
	GRAPH_EPROTO(r.nodes = 1; DEF_BYTES(r));
	GRAPH_EPROTO(r.nodes = 3000; r.edges = SNPU_GRAPH_MAX_EDGES + 1;
		     DEF_BYTES(r));
	/* Two nodes: one edge at most. */
	GRAPH_EPROTO(r.edges = 2; DEF_BYTES(r));
	ASSERT_EQ(0, parse(&self->im));
}

TEST_F(gckpt, def_bytes_inconsistent_is_eproto)
{
	__u64 want = snpu_ckpt_graph_def_bytes(2, 1);

	GRAPH_EPROTO(r.def_bytes = want - 4);
	GRAPH_EPROTO(r.def_bytes = want + 4);
	GRAPH_EPROTO(r.def_bytes = 0);
	GRAPH_EPROTO(r.def_bytes = ~0ull);
	/* Without edges there is no CSR: the nodes' bytes only. */
	GRAPH_EPROTO(r.edges = 0);
	EXPECT_EQ(2u * SNPU_GRAPH_NODE_SIZE, snpu_ckpt_graph_def_bytes(2, 0));
	EXPECT_EQ(2u * SNPU_GRAPH_NODE_SIZE + 4 * 4, want);
}

TEST_F(gckpt, slots_out_of_range_are_eproto)
{
	GRAPH_EPROTO(r.slots = SNPU_GRAPH_MAX_SLOTS + 1);
	GRAPH_EPROTO(r.slots = 2);		/* slot 1 with no extent */
	GRAPH_EPROTO(r.slots = 0);		/* slot 0's extent, no slot */
	GRAPH_EPROTO(r.slot_bytes[0] = 0);	/* a slot of no bytes */
	GRAPH_EPROTO(r.slot_bytes[7] = 1);	/* past the slots */
}

TEST_F(gckpt, handle_and_reserved_are_checked)
{
	GRAPH_EPROTO(r.handle = 0);
	GRAPH_EPROTO(r.handle = 0x80000000u);
	GRAPH_EPROTO(r.reserved[0] = 1);
	GRAPH_EPROTO(r.reserved[1] = 1);
}

TEST_F(gckpt, graph_data_offset_and_length_are_checked)
{
	struct snpu_ckpt_data *d = rec_of(&self->im, G_GDATA2);
	struct snpu_ckpt_chunk *c = (void *)(self->im.p +
					     chunk_at(&self->im, G_GDATA2));

	d->offset = 199;
	refresh_crc(&self->im, G_GDATA2);
	EXPECT_EQ(-EPROTO, parse(&self->im));
	d->offset = 200;
	refresh_crc(&self->im, G_GDATA2);
	c->len += 1;		/* one byte more than the definition */
	EXPECT_EQ(-EPROTO, parse(&self->im));
	c->len -= 1;
	EXPECT_EQ(0, parse(&self->im));
}

TEST_F(gckpt, definition_crc_is_ebadmsg)
{
	unsigned char *b = (unsigned char *)rec_of(&self->im, G_GDATA1) + 20;

	*b ^= 1;
	EXPECT_EQ(-EBADMSG, parse(&self->im));
}

/* A context of objects and a graph, with the chunks in @order. */
static int graph_order(const __u32 *order, unsigned int n)
{
	static const struct snpu_graph_node nodes[1];
	struct snpu_ckpt_ctx ctx = {
		.dev_index = 0, .cores = 1, .mem_total = 1 << 20, .nobj = 3,
	};
	struct snpu_ckpt_owner o = { .handle = 1 };
	struct snpu_ckpt_event e = { .handle = 2 };
	struct snpu_ckpt_graph g = {
		.handle = 3, .nodes = 1,
		.def_bytes = SNPU_GRAPH_NODE_SIZE,
	};
	struct snpu_ckpt_data d = { 0 };
	struct img im = { 0 };
	unsigned int i;
	int ret;

	img_header(&im, 1);
	img_chunk(&im, SNPU_CKPT_CTX, &ctx, sizeof(ctx), NULL, 0);
	for (i = 0; i < n; i++) {
		if (order[i] == SNPU_CKPT_OWNER)
			img_chunk(&im, SNPU_CKPT_OWNER, &o, sizeof(o), NULL, 0);
		else if (order[i] == SNPU_CKPT_EVENT)
			img_chunk(&im, SNPU_CKPT_EVENT, &e, sizeof(e), NULL, 0);
		else if (order[i] == SNPU_CKPT_GRAPH)
			img_chunk(&im, SNPU_CKPT_GRAPH, &g, sizeof(g), NULL, 0);
		else
			img_chunk(&im, SNPU_CKPT_DATA, &d, sizeof(d), nodes,
				  sizeof(nodes));
	}
	img_end(&im);
	ret = parse(&im);
	free(im.p);
	return ret;
}

TEST(graphs_come_last)
{
	const __u32 ok[] = { SNPU_CKPT_OWNER, SNPU_CKPT_EVENT, SNPU_CKPT_GRAPH,
			     SNPU_CKPT_DATA };
	const __u32 event_after[] = { SNPU_CKPT_OWNER, SNPU_CKPT_GRAPH,
				      SNPU_CKPT_DATA, SNPU_CKPT_EVENT };
	const __u32 owner_after[] = { SNPU_CKPT_EVENT, SNPU_CKPT_GRAPH,
				      SNPU_CKPT_DATA, SNPU_CKPT_OWNER };
	const __u32 no_data[] = { SNPU_CKPT_OWNER, SNPU_CKPT_EVENT,
				  SNPU_CKPT_GRAPH };
	const __u32 obj_in_data[] = { SNPU_CKPT_OWNER, SNPU_CKPT_GRAPH,
				      SNPU_CKPT_EVENT, SNPU_CKPT_DATA };

	EXPECT_EQ(0, graph_order(ok, 4));
	EXPECT_EQ(-EPROTO, graph_order(event_after, 4));
	EXPECT_EQ(-EPROTO, graph_order(owner_after, 4));
	/* END while the definition is owed. */
	EXPECT_EQ(-EPROTO, graph_order(no_data, 3));
	EXPECT_EQ(-EPROTO, graph_order(obj_in_data, 4));
}

TEST(graph_handles_must_increase)
{
	static const struct snpu_graph_node nodes[1];
	struct snpu_ckpt_ctx ctx = {
		.dev_index = 0, .cores = 1, .mem_total = 1 << 20, .nobj = 2,
	};
	struct snpu_ckpt_graph g = {
		.handle = 5, .nodes = 1, .def_bytes = SNPU_GRAPH_NODE_SIZE,
	};
	struct snpu_ckpt_data d = { 0 };
	struct img im = { 0 };

	img_header(&im, 1);
	img_chunk(&im, SNPU_CKPT_CTX, &ctx, sizeof(ctx), NULL, 0);
	img_chunk(&im, SNPU_CKPT_GRAPH, &g, sizeof(g), NULL, 0);
	img_chunk(&im, SNPU_CKPT_DATA, &d, sizeof(d), nodes, sizeof(nodes));
	g.handle = 5;	/* the same again */
	img_chunk(&im, SNPU_CKPT_GRAPH, &g, sizeof(g), NULL, 0);
	img_chunk(&im, SNPU_CKPT_DATA, &d, sizeof(d), nodes, sizeof(nodes));
	img_end(&im);
	EXPECT_EQ(-EPROTO, parse(&im));
	free(im.p);
}

/* ---- communicator ranks (SNPU_CKPT_COMM) --------------------------------- */

/* Chunk numbers of img_comms(): CTX, STREAM, the ranks, END. */
enum { K_CTX, K_STREAM, K_COMM0, K_COMM1 };

TEST(comm_image_passes)
{
	struct img im = { 0 };
	struct snpu_ckpt_parser ps;

	img_comms(&im, 2, 4, 3);
	ASSERT_EQ(0, snpu_ckpt_parse_buf(im.p, im.n, &img_limits, &ps));
	EXPECT_EQ(3u, ps.nobj);
	EXPECT_EQ(2u, ps.ncomm);
	free(im.p);
}

TEST(comm_ranks_are_checked)
{
	struct img im = { 0 };
	struct snpu_ckpt_comm *c, keep;

	img_comms(&im, 2, 2, 1);
	c = rec_of(&im, K_COMM1);
	keep = *c;
	c->nranks = 0;
	refresh_crc(&im, K_COMM1);
	EXPECT_EQ(-EPROTO, parse(&im));
	c->nranks = SNPU_COMM_MAX_RANKS + 1;
	c->rank = 0;
	refresh_crc(&im, K_COMM1);
	EXPECT_EQ(-EPROTO, parse(&im));
	*c = keep;
	c->rank = c->nranks;		/* not below nranks */
	refresh_crc(&im, K_COMM1);
	EXPECT_EQ(-EPROTO, parse(&im));
	*c = keep;
	c->pad = 1;
	refresh_crc(&im, K_COMM1);
	EXPECT_EQ(-EPROTO, parse(&im));
	*c = keep;
	c->reserved[1] = 1;
	refresh_crc(&im, K_COMM1);
	EXPECT_EQ(-EPROTO, parse(&im));
	*c = keep;
	c->handle = 2;			/* the first rank's */
	refresh_crc(&im, K_COMM1);
	EXPECT_EQ(-EPROTO, parse(&im));
	c->handle = 0;
	refresh_crc(&im, K_COMM1);
	EXPECT_EQ(-EPROTO, parse(&im));
	*c = keep;
	/* Any sequence number and id: what the ranks agree on is theirs. */
	c->seq = ~0ULL;
	memset(c->id, 0, sizeof(c->id));
	refresh_crc(&im, K_COMM1);
	EXPECT_EQ(0, parse(&im));
	free(im.p);
}

TEST(comm_rank_of_64_ranks_passes)
{
	struct img im = { 0 };

	img_comms(&im, 1, SNPU_COMM_MAX_RANKS, SNPU_COMM_MAX_RANKS - 1);
	EXPECT_EQ(0, parse(&im));
	free(im.p);
}

/* COMM_JOIN's bound: a file holds at most SNPU_COMM_MAX_PER_FILE ranks. */
TEST(comm_ranks_per_file_are_bounded)
{
	struct img im = { 0 };

	img_comms(&im, SNPU_COMM_MAX_PER_FILE, 2, 0);
	EXPECT_EQ(0, parse(&im));
	free(im.p);
	memset(&im, 0, sizeof(im));
	img_comms(&im, SNPU_COMM_MAX_PER_FILE + 1, 2, 0);
	EXPECT_EQ(-EPROTO, parse(&im));
	free(im.p);
}

TEST(comm_chunk_length_is_eproto)
{
	struct img im = { 0 };
	struct snpu_ckpt_chunk *c;

	img_comms(&im, 1, 2, 0);
	c = (void *)(im.p + chunk_at(&im, K_COMM0));
	c->len -= 8;
	EXPECT_EQ(-EPROTO, parse(&im));
	c->len += 16;
	EXPECT_EQ(-EPROTO, parse(&im));
	free(im.p);
}

/* A rank is an object: counted in nobj, and never before a MEM. */
TEST(comm_counted_and_placed)
{
	struct img im = { 0 };
	struct snpu_ckpt_ctx *ctx;
	struct snpu_ckpt_ctx cr = {
		.dev_index = 0, .cores = 1, .mem_total = 1 << 20, .nmem = 1,
		.nobj = 1, .mem_bytes = 4096, .va_window = IMG_WINDOW,
	};
	struct snpu_ckpt_comm c = { .handle = 1, .nranks = 2 };
	struct snpu_ckpt_mem m = { .addr = IMG_BASE, .bytes = 4096 };

	img_comms(&im, 2, 2, 0);
	ctx = rec_of(&im, K_CTX);
	ctx->nobj--;
	refresh_crc(&im, K_CTX);
	EXPECT_EQ(-EPROTO, parse(&im));
	ctx->nobj += 2;
	refresh_crc(&im, K_CTX);
	EXPECT_EQ(-EPROTO, parse(&im));
	free(im.p);

	memset(&im, 0, sizeof(im));
	img_header(&im, 1);
	img_chunk(&im, SNPU_CKPT_CTX, &cr, sizeof(cr), NULL, 0);
	img_chunk(&im, SNPU_CKPT_COMM, &c, sizeof(c), NULL, 0);
	img_chunk(&im, SNPU_CKPT_MEM, &m, sizeof(m), NULL, 0);
	img_end(&im);
	EXPECT_EQ(-EPROTO, parse(&im));
	free(im.p);
}

TEST(comm_truncations_and_flips_fail)
{
	struct img im = { 0 };
	size_t n, whole;

	img_comms(&im, 2, 2, 0);
	whole = im.n;
	for (n = 0; n < whole; n++) {
		im.n = n;
		ASSERT_EQ(-ENODATA, parse(&im)) TH_LOG("length %zu", n);
	}
	im.n = whole;
	for (n = chunk_at(&im, K_COMM0); n < chunk_at(&im, K_COMM1 + 1); n++) {
		im.p[n] ^= 0x20;
		ASSERT_NE(0, parse(&im)) TH_LOG("byte %zu", n);
		im.p[n] ^= 0x20;
	}
	free(im.p);
}

TEST_HARNESS_MAIN
