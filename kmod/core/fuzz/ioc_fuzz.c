// SPDX-License-Identifier: GPL-2.0
/*
 * Fuzz target: the ioctl argument rules of kmod/core/ioc.c:
 * snpu_ioc_check_size() and snpu_ioc_same(), against every struct size
 * and command of the uapi header, and snpu_key_check(). The lists come from
 * build/fuzz/gen/snpu_ioc_list.h, which the Makefile extracts from
 * uapi/linux/snpu.h, so a new command or struct is fuzzed without an
 * edit here.
 *
 * Input: a size, a second size, a raw first-published size, a command
 * number (4 bytes each), then a byte picking a struct, one picking a
 * command and one picking a key field size; the rest is the caller's
 * struct for the modelled copy and the key field.
 *
 * Properties, each a trap when it does not hold:
 * - at start: every SNPU_*_SIZE_VER0 is a multiple of 8, at least 8 (size
 *   and flags), at most the struct's size, which is at most
 *   SNPU_IOC_MAX_SIZE; both are accepted, one byte less than the first
 *   is -EINVAL, one more than the maximum -E2BIG; every command has the
 *   'S' type and no two commands match each other;
 * - snpu_ioc_check_size() is 0 exactly for ver0 <= size <= 4096, -EINVAL
 *   below ver0, -E2BIG above 4096, for any ver0; the sizes it accepts are
 *   an interval;
 * - for an accepted size, the copy of kmod/ioctl.c (min(size, struct)
 *   bytes in, the rest checked zero, min(size, struct) bytes back) stays
 *   inside both the caller's size and the kernel's struct (done on
 *   buffers of those exact sizes, under ASan), and writes back at least
 *   ver0 bytes;
 * - after -E2BIG, the struct size the kernel writes back is accepted;
 * - snpu_ioc_same() is true exactly when type, number and direction are
 *   equal, whatever the size bits; it is reflexive and symmetric, and
 *   any command number matches at most one command of the header;
 * - snpu_key_check() on a field of exactly its size (ASan sees a read
 *   past it) returns the key's length, 1..size-1, exactly when the field
 *   is non-empty text, a NUL and zeros, else -EINVAL; an accepted field
 *   is the canonical one of its key (equal keys, equal fields).
 */
#include <stdlib.h>

#include <linux/ioctl.h>

#include "fuzz.h"

struct size_rule {
	const char *name;
	__u32 ver0;
	__u32 ksize;
};

struct cmd {
	const char *name;
	unsigned int nr;
};

#define FUZZ_IOC_SIZE(v, s) { #v, v, sizeof(struct s) },
#define FUZZ_IOC_CMD(c)
static const struct size_rule sizes[] = {
#include "snpu_ioc_list.h"
};
#undef FUZZ_IOC_SIZE
#undef FUZZ_IOC_CMD

#define FUZZ_IOC_SIZE(v, s)
#define FUZZ_IOC_CMD(c) { #c, c },
static const struct cmd cmds[] = {
#include "snpu_ioc_list.h"
};
#undef FUZZ_IOC_SIZE
#undef FUZZ_IOC_CMD

#define NSIZES ARRAY_SIZE(sizes)
#define NCMDS ARRAY_SIZE(cmds)
#define SIZE_BITS ((unsigned int)_IOC_SIZEMASK << _IOC_SIZESHIFT)

static int want_size(__u32 usize, __u32 ver0)
{
	if (usize < ver0)
		return -EINVAL;
	if (usize > SNPU_IOC_MAX_SIZE)
		return -E2BIG;
	return 0;
}

static int check_size(__u32 usize, __u32 ver0)
{
	int ret = snpu_ioc_check_size(usize, ver0);

	FUZZ_CHECK(ret == want_size(usize, ver0), "size %u ver0 %u: %d",
		   usize, ver0, ret);
	return ret;
}

static bool want_same(unsigned int a, unsigned int b)
{
	return _IOC_TYPE(a) == _IOC_TYPE(b) && _IOC_NR(a) == _IOC_NR(b) &&
	       _IOC_DIR(a) == _IOC_DIR(b);
}

static bool same(unsigned int a, unsigned int b)
{
	bool s = snpu_ioc_same(a, b);

	FUZZ_CHECK(s == want_same(a, b), "0x%08x 0x%08x: %d", a, b, s);
	FUZZ_CHECK(snpu_ioc_same(b, a) == s, "0x%08x 0x%08x asymmetric", a, b);
	return s;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const struct size_rule *s;
	unsigned int i, j;

	for (i = 0; i < NSIZES; i++) {
		s = &sizes[i];
		FUZZ_CHECK(s->ver0 >= 8 && s->ver0 % 8 == 0 &&
			   s->ver0 <= s->ksize && s->ksize <= SNPU_IOC_MAX_SIZE,
			   "%s %u, struct %u", s->name, s->ver0, s->ksize);
		FUZZ_CHECK(check_size(s->ver0, s->ver0) == 0, "%s", s->name);
		FUZZ_CHECK(check_size(s->ksize, s->ver0) == 0, "%s", s->name);
		FUZZ_CHECK(check_size(s->ver0 - 1, s->ver0) == -EINVAL, "%s",
			   s->name);
		FUZZ_CHECK(check_size(SNPU_IOC_MAX_SIZE + 1, s->ver0) == -E2BIG,
			   "%s", s->name);
	}
	for (i = 0; i < NCMDS; i++) {
		FUZZ_CHECK(_IOC_TYPE(cmds[i].nr) == SNPU_IOC_MAGIC, "%s",
			   cmds[i].name);
		FUZZ_CHECK(same(cmds[i].nr, cmds[i].nr), "%s", cmds[i].name);
		for (j = 0; j < i; j++)
			FUZZ_CHECK(!same(cmds[i].nr, cmds[j].nr), "%s and %s",
				   cmds[i].name, cmds[j].name);
	}
	return 0;
}

/* The copy of kmod/ioctl.c on buffers of exactly the two sizes. */
static void model_copy(const struct size_rule *s, __u32 usize,
		       struct fuzz_in *in)
{
	__u8 *user = malloc(usize), *karg = malloc(s->ksize);
	__u32 n = usize < s->ksize ? usize : s->ksize, i;
	bool tail_zero = true;

	FUZZ_CHECK(user && karg, "out of memory");
	for (i = 0; i < usize; i++)
		user[i] = in->n ? in->p[i % in->n] : 0;
	/* copy_struct_from_user(): what the caller lacks reads as zero. */
	memset(karg, 0, s->ksize);
	memcpy(karg, user, n);
	for (i = s->ksize; i < usize; i++)
		tail_zero &= !user[i];
	if (tail_zero) {
		/* The handler's answer goes back: min(size, struct) bytes. */
		FUZZ_CHECK(n >= s->ver0 && n <= s->ksize && n <= usize,
			   "%s: %u bytes back for size %u", s->name, n, usize);
		memcpy(user, karg, n);
	}
	free(user);
	free(karg);
}

static void check_key(unsigned int pick, const struct fuzz_in *in)
{
	/* Mostly the real field, else any size from 0 up. */
	size_t size = pick & 1 ? SNPU_ATTACHED_KEY_MAX : pick / 2 % 80, len, i;
	char *key = malloc(size ? size : 1), *canon;
	bool want = true;
	int ret;

	FUZZ_CHECK(key, "out of memory");
	for (i = 0; i < size; i++)
		key[i] = i < in->n ? (char)in->p[i] : 0;
	len = strnlen(key, size);
	if (!len || len == size)
		want = false;
	for (i = len + 1; i < size; i++)
		want &= !key[i];

	ret = snpu_key_check(key, size);
	FUZZ_CHECK(want ? ret == (int)len : ret == -EINVAL,
		   "size %zu, text %zu bytes: %d", size, len, ret);
	if (ret > 0) {
		/* The key written into a zeroed field gives the same bytes. */
		canon = calloc(1, size);
		FUZZ_CHECK(canon, "out of memory");
		memcpy(canon, key, ret);
		FUZZ_CHECK(!memcmp(canon, key, size),
			   "field of a %d-byte key not canonical", ret);
		free(canon);
	}
	free(key);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	__u32 usize = (__u32)fuzz_take(&in, 4);
	__u32 usize2 = (__u32)fuzz_take(&in, 4);
	__u32 ver0 = (__u32)fuzz_take(&in, 4);
	unsigned int nr = (unsigned int)fuzz_take(&in, 4), other;
	const struct size_rule *s = &sizes[fuzz_take(&in, 1) % NSIZES];
	const struct cmd *c = &cmds[fuzz_take(&in, 1) % NCMDS];
	unsigned int key_pick = (unsigned int)fuzz_take(&in, 1);
	__u32 lo, hi;
	unsigned int i, matches = 0;
	int ret;

	/* Any first-published size, then the header's. */
	check_size(usize, ver0);
	ret = check_size(usize, s->ver0);
	if (!ret)
		model_copy(s, usize, &in);
	else if (ret == -E2BIG)
		FUZZ_CHECK(check_size(s->ksize, s->ver0) == 0, "%s", s->name);
	if (!ret && !check_size(usize2, s->ver0)) {
		lo = usize < usize2 ? usize : usize2;
		hi = usize < usize2 ? usize2 : usize;
		FUZZ_CHECK(check_size(lo + (hi - lo) / 2, s->ver0) == 0,
			   "%s: hole between %u and %u", s->name, lo, hi);
	}

	/* Any two numbers, then a number against the header's commands. */
	same(nr, usize2);
	FUZZ_CHECK(same(nr, nr), "0x%08x", nr);
	for (i = 0; i < NCMDS; i++)
		matches += same(nr, cmds[i].nr);
	FUZZ_CHECK(matches <= 1, "0x%08x matches %u commands", nr, matches);
	if (same(nr, c->nr)) {
		other = (nr & ~SIZE_BITS) | ((usize2 << _IOC_SIZESHIFT) & SIZE_BITS);
		FUZZ_CHECK(same(other, c->nr), "%s with size bits 0x%x",
			   c->name, _IOC_SIZE(other));
		other = nr ^ (1U << _IOC_DIRSHIFT);
		FUZZ_CHECK(!same(other, c->nr), "%s with another direction",
			   c->name);
	}

	check_key(key_pick, &in);
	return 0;
}
