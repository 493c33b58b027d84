// SPDX-License-Identifier: GPL-2.0
/*
 * Fuzz target: snpu_ckpt_parse_buf() (kmod/core/ckpt.c), the validator
 * of checkpoint images that the module runs on every chunk it restores.
 *
 * Input: one mode byte, then an image. With the mode's bit 0 set, the
 * header's and every chunk's CRC32C are recomputed before parsing (the
 * chunks found by their lengths), so that mutations reach the record
 * checks instead of stopping at a CRC mismatch.
 *
 * Properties, each a trap when it does not hold:
 * - the answer is 0 or one of the documented errnos: ENOEXEC, EBADMSG,
 *   EPROTO, ENODATA; the same when asked twice;
 * - an accepted image had its END: as many contexts as its header says,
 *   and its last context's counts and sizes match its record, within the
 *   device's memory and the host quota;
 * - every prefix of an accepted image that stops inside it is refused;
 * - an accepted context's rings (RING) are as many as it announced.
 */
#include <stdlib.h>

#include "fuzz.h"
#include "core/ckpt.h"

static const struct snpu_ckpt_limits lim = {
	.abi_major = SNPU_ABI_MAJOR, .page_size = 4096,
	.mem_align = SNPU_MEM_ALIGN,
};

/* Recompute the CRCs of @buf in place, walking chunks by their lengths. */
static void fix_crcs(unsigned char *buf, size_t n)
{
	struct snpu_ckpt_header h;
	struct snpu_ckpt_chunk c;
	size_t pos = sizeof(h);
	__u32 crc;

	if (n < sizeof(h))
		return;
	memcpy(&h, buf, sizeof(h));
	h.crc = snpu_ckpt_header_crc(&h);
	memcpy(buf, &h, sizeof(h));
	while (n - pos >= sizeof(c)) {
		memcpy(&c, buf + pos, sizeof(c));
		if (c.len > n - pos - sizeof(c))
			return;
		crc = snpu_ckpt_chunk_crc_begin(&c);
		c.crc = snpu_ckpt_crc(crc, buf + pos + sizeof(c), c.len) ^ ~0U;
		memcpy(buf + pos, &c, sizeof(c));
		pos += sizeof(c) + c.len;
	}
}

/* Bytes of the image that the parser consumed: up to its END chunk. */
static size_t consumed(const unsigned char *buf, size_t n)
{
	struct snpu_ckpt_chunk c;
	size_t pos = sizeof(struct snpu_ckpt_header);

	for (;;) {
		memcpy(&c, buf + pos, sizeof(c));
		pos += sizeof(c) + c.len;
		if (c.type == SNPU_CKPT_END)
			return pos;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snpu_ckpt_parser ps, ps2;
	struct snpu_ckpt_header h;
	unsigned char *buf;
	size_t n, used, cut;
	int ret, ret2;

	if (!size)
		return 0;
	n = size - 1;
	buf = malloc(n ? n : 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, n);
	if (data[0] & 1)
		fix_crcs(buf, n);

	ret = snpu_ckpt_parse_buf(buf, n, &lim, &ps);
	FUZZ_CHECK(!ret || ret == -ENOEXEC || ret == -EBADMSG ||
		   ret == -EPROTO || ret == -ENODATA, "ret %d", ret);
	ret2 = snpu_ckpt_parse_buf(buf, n, &lim, &ps2);
	FUZZ_CHECK(ret == ret2, "%d then %d", ret, ret2);
	if (ret) {
		free(buf);
		return 0;
	}

	memcpy(&h, buf, sizeof(h));
	FUZZ_CHECK(ps.phase == SNPU_CKPT_P_DONE, "phase %u", ps.phase);
	FUZZ_CHECK(ps.ctx_seen == h.contexts, "%u of %u contexts",
		   ps.ctx_seen, h.contexts);
	FUZZ_CHECK(snpu_ckpt_ctx_complete(&ps), "last context incomplete");
	FUZZ_CHECK(ps.mem_bytes <= ps.ctx.mem_total, "mem %llu > %llu",
		   (unsigned long long)ps.mem_bytes,
		   (unsigned long long)ps.ctx.mem_total);
	FUZZ_CHECK(ps.host_bytes <= ((__u64)SNPU_MAX_CTX_HOST_MB << 20),
		   "host %llu", (unsigned long long)ps.host_bytes);
	FUZZ_CHECK(ps.nring == ps.ctx.nring && ps.nring <= 1, "rings %u of %u",
		   ps.nring, ps.ctx.nring);

	used = consumed(buf, n);
	FUZZ_CHECK(used <= n, "consumed %zu of %zu", used, n);
	/* A few prefixes, spread over the image, all refused. */
	for (cut = 0; cut < used; cut += used / 7 + 1)
		FUZZ_CHECK(snpu_ckpt_parse_buf(buf, cut, &lim, &ps2) == -ENODATA,
			   "prefix %zu of %zu accepted", cut, used);
	FUZZ_CHECK(snpu_ckpt_parse_buf(buf, used - 1, &lim, &ps2) == -ENODATA,
		   "image without its last byte accepted");
	free(buf);
	return 0;
}
