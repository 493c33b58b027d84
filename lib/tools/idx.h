/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * An IDX file loader (the format of the MNIST and Fashion-MNIST data
 * sets), gzip-compressed or plain, read with zlib.
 *
 * An IDX file is a big-endian header - two zero bytes, a type byte (0x08:
 * unsigned bytes, the only type read here), the number of dimensions -
 * then one big-endian u32 per dimension, then the elements in row-major
 * order. Images are 0x00000803 (count, rows, cols), labels 0x00000801
 * (count). idx_load() checks the magic number, the dimensions (against
 * what the caller expects, when it says), that the file holds every
 * element it declares and nothing after them, and for a pair of images and
 * labels that the counts agree and every label is below the class count.
 * A missing, wrong or truncated file is an error with a message, never a
 * crash.
 *
 * Header only (static functions): snpu-train, its unit tests and the train
 * kselftests include it; link with -lz.
 */
#ifndef SNPU_TOOLS_IDX_H
#define SNPU_TOOLS_IDX_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define IDX_MAGIC_IMAGES	0x00000803U
#define IDX_MAGIC_LABELS	0x00000801U
#define IDX_MAX_DIMS		3

/* At most this many elements in one file (the training images: 47 MB). */
#define IDX_MAX_BYTES		(256U << 20)

/**
 * struct idx_file - an IDX file in memory
 * @magic: IDX_MAGIC_IMAGES or IDX_MAGIC_LABELS
 * @ndim: dimensions (3 or 1)
 * @dims: the dimensions; dims[0] is the item count
 * @data: dims[0] * ... bytes, row major
 * @bytes: the size of @data
 */
struct idx_file {
	uint32_t magic;
	uint32_t ndim;
	uint32_t dims[IDX_MAX_DIMS];
	uint8_t *data;
	size_t bytes;
};

/* A message of at most @len bytes into @err (which may be NULL). */
static void idx_err(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void idx_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

/* Read exactly @n bytes; 0, or -EIO on a short read (truncated file). */
static int idx_read(gzFile f, void *buf, size_t n)
{
	uint8_t *p = buf;

	while (n) {
		unsigned int chunk = n > (1U << 30) ? 1U << 30 : (unsigned int)n;
		int r = gzread(f, p, chunk);

		if (r <= 0)
			return -EIO;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static uint32_t idx_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void idx_free(struct idx_file *f)
{
	free(f->data);
	memset(f, 0, sizeof(*f));
}

/**
 * idx_load() - read one IDX file
 * @path: the file, gzip-compressed or plain (zlib reads both)
 * @magic: the magic number it must have
 * @rows: for images, the rows and columns it must have (0: any)
 * @cols: see @rows
 * @f: the result, freed with idx_free()
 * @err: a message on error, or NULL
 * @errlen: its size
 *
 * Return: 0; -ENOENT (or the errno of open) when it cannot be opened;
 * -EBADMSG for a wrong magic number or dimensions; -EIO when the file is
 * shorter than its header says (truncated) or longer; -EFBIG past
 * IDX_MAX_BYTES; -ENOMEM.
 */
static int idx_load(const char *path, uint32_t magic, uint32_t rows,
		    uint32_t cols, struct idx_file *f, char *err,
		    size_t errlen)
{
	uint8_t hdr[4 + 4 * IDX_MAX_DIMS], extra;
	uint64_t bytes = 1;
	unsigned int i;
	gzFile gz;
	int ret;

	memset(f, 0, sizeof(*f));
	errno = 0;
	gz = gzopen(path, "rb");
	if (!gz) {
		ret = errno ? -errno : -ENOMEM;
		idx_err(err, errlen, "%s: cannot open: %s", path,
			strerror(-ret));
		return ret;
	}
	gzbuffer(gz, 1U << 17);
	ret = idx_read(gz, hdr, 4);
	if (ret) {
		idx_err(err, errlen, "%s: truncated: no IDX header", path);
		goto out;
	}
	f->magic = idx_be32(hdr);
	if (f->magic != magic) {
		idx_err(err, errlen,
			"%s: bad magic number 0x%08x (want 0x%08x)", path,
			f->magic, magic);
		ret = -EBADMSG;
		goto out;
	}
	f->ndim = hdr[3];
	if (f->ndim < 1 || f->ndim > IDX_MAX_DIMS) {
		ret = -EBADMSG;
		goto out;
	}
	ret = idx_read(gz, hdr + 4, 4 * f->ndim);
	if (ret) {
		idx_err(err, errlen, "%s: truncated in its header", path);
		goto out;
	}
	for (i = 0; i < f->ndim; i++) {
		f->dims[i] = idx_be32(hdr + 4 + 4 * i);
		bytes *= f->dims[i];
	}
	if (!f->dims[0] || (f->ndim == 3 && ((rows && f->dims[1] != rows) ||
					      (cols && f->dims[2] != cols) ||
					      !f->dims[1] || !f->dims[2]))) {
		idx_err(err, errlen, "%s: unexpected dimensions %u x %u x %u",
			path, f->dims[0], f->ndim > 1 ? f->dims[1] : 1,
			f->ndim > 2 ? f->dims[2] : 1);
		ret = -EBADMSG;
		goto out;
	}
	if (bytes > IDX_MAX_BYTES) {
		idx_err(err, errlen, "%s: %llu bytes of data, too large", path,
			(unsigned long long)bytes);
		ret = -EFBIG;
		goto out;
	}
	f->bytes = (size_t)bytes;
	f->data = malloc(f->bytes);
	if (!f->data) {
		ret = -ENOMEM;
		idx_err(err, errlen, "%s: out of memory", path);
		goto out;
	}
	ret = idx_read(gz, f->data, f->bytes);
	if (ret) {
		idx_err(err, errlen,
			"%s: truncated: the header declares %u items (%zu bytes)",
			path, f->dims[0], f->bytes);
		goto out;
	}
	if (gzread(gz, &extra, 1) != 0) {
		idx_err(err, errlen,
			"%s: more data than the %u items the header declares",
			path, f->dims[0]);
		ret = -EIO;
		goto out;
	}
out:
	if (ret && errlen && err && !err[0])
		idx_err(err, errlen, "%s: bad IDX file (%s)", path,
			strerror(-ret));
	if (ret)
		idx_free(f);
	gzclose(gz);
	return ret;
}

/**
 * struct idx_set - images and their labels
 * @n: items
 * @rows: image rows
 * @cols: image columns
 * @images: n * rows * cols bytes
 * @labels: n bytes, each below the class count
 */
struct idx_set {
	uint32_t n, rows, cols;
	struct idx_file img, lbl;
	const uint8_t *images, *labels;
};

static void idx_set_free(struct idx_set *s)
{
	idx_free(&s->img);
	idx_free(&s->lbl);
	memset(s, 0, sizeof(*s));
}

/**
 * idx_set_load() - images and labels from "DIR/PREFIX-images-idx3-ubyte.gz"
 * and "DIR/PREFIX-labels-idx1-ubyte.gz"
 * @dir: the directory
 * @prefix: "train" or "t10k"
 * @classes: every label must be below this
 * @s: the result, freed with idx_set_free()
 * @err: a message on error, or NULL
 * @errlen: its size
 *
 * Return: 0, an error of idx_load(), or -EBADMSG when the counts differ or
 * a label is out of range.
 */
static int idx_set_load(const char *dir, const char *prefix,
			unsigned int classes, struct idx_set *s, char *err,
			size_t errlen)
{
	char path[4096];
	uint32_t i;
	int ret;

	memset(s, 0, sizeof(*s));
	if (err && errlen)
		err[0] = 0;
	snprintf(path, sizeof(path), "%s/%s-images-idx3-ubyte.gz", dir, prefix);
	ret = idx_load(path, IDX_MAGIC_IMAGES, 0, 0, &s->img, err, errlen);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
	ret = idx_load(path, IDX_MAGIC_LABELS, 0, 0, &s->lbl, err, errlen);
	if (ret)
		goto fail;
	if (s->img.dims[0] != s->lbl.dims[0]) {
		idx_err(err, errlen, "%s: %u labels for %u images", path,
			s->lbl.dims[0], s->img.dims[0]);
		ret = -EBADMSG;
		goto fail;
	}
	for (i = 0; i < s->lbl.dims[0]; i++) {
		if (s->lbl.data[i] >= classes) {
			idx_err(err, errlen, "%s: label %u of item %u, not below %u",
				path, s->lbl.data[i], i, classes);
			ret = -EBADMSG;
			goto fail;
		}
	}
	s->n = s->img.dims[0];
	s->rows = s->img.dims[1];
	s->cols = s->img.dims[2];
	s->images = s->img.data;
	s->labels = s->lbl.data;
	return 0;
fail:
	idx_set_free(s);
	return ret;
}

#endif /* SNPU_TOOLS_IDX_H */
