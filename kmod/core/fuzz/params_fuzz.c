// SPDX-License-Identifier: GPL-2.0
/*
 * Fuzz target: snpu_params_check() (kmod/core/params.c), the module
 * parameters of one load.
 *
 * Input: the eight parameters as 32-bit words in struct order, then one
 * byte that picks a parameter to break.
 *
 * Properties, each a trap when it does not hold:
 * - the answer is NULL exactly when every parameter is in its documented
 *   range (README.md, core.h), the same when asked twice;
 * - otherwise it is exactly "<name> must be in [<min>, <max>]" for the
 *   first parameter out of range, in struct order, with the limits of
 *   core.h ("[0, mem_mb]" for ctx_mem_mb);
 * - accepted parameters bound what the module derives from them: device
 *   memory and both per-context quotas are at most FUZZ_MAX_DEV_BYTES
 *   bytes (the bound the kernel target assumes for every buffer);
 * - accepted parameters with the picked one moved just out of its range
 *   are refused, with a message that names it.
 */
#include <stdlib.h>

#include "fuzz.h"

struct limit {
	const char *name;
	size_t off;
	unsigned int min;
	unsigned int max;	/* 0: up to mem_mb */
};

#define LIMIT(f, lo, hi) { #f, offsetof(struct snpu_params, f), lo, hi }

static const struct limit limits[] = {
	LIMIT(devices, 1, SNPU_MAX_DEVICES),
	LIMIT(cores, 1, SNPU_MAX_CORES),
	LIMIT(mem_mb, SNPU_MIN_MEM_MB, SNPU_MAX_MEM_MB),
	LIMIT(ctx_mem_mb, 0, 0),
	LIMIT(ctx_host_mb, 1, SNPU_MAX_CTX_HOST_MB),
	LIMIT(ctx_streams, 1, SNPU_MAX_CTX_STREAMS),
	LIMIT(ctx_events, 1, SNPU_MAX_CTX_EVENTS),
	LIMIT(ctx_tasks, 1, SNPU_MAX_CTX_TASKS),
	LIMIT(ctx_graphs, 1, SNPU_MAX_CTX_GRAPHS),
	LIMIT(ctx_graph_mb, 1, SNPU_MAX_CTX_GRAPH_MB),
};

#define NLIMITS ARRAY_SIZE(limits)

static unsigned int *field(struct snpu_params *p, unsigned int i)
{
	return (unsigned int *)((char *)p + limits[i].off);
}

static unsigned int max_of(const struct snpu_params *p, unsigned int i)
{
	return limits[i].max ? limits[i].max : p->mem_mb;
}

/* Index of the first parameter out of range, NLIMITS when none is. */
static unsigned int first_bad(struct snpu_params *p)
{
	unsigned int i, v;

	for (i = 0; i < NLIMITS; i++) {
		v = *field(p, i);
		if (v < limits[i].min || v > max_of(p, i))
			return i;
	}
	return NLIMITS;
}

static const char *check(const struct snpu_params *p)
{
	struct snpu_params before = *p;
	const char *msg = snpu_params_check(p);

	FUZZ_CHECK(!memcmp(&before, p, sizeof(*p)), "parameters written");
	FUZZ_CHECK(snpu_params_check(p) == msg, "not deterministic");
	return msg;
}

static void check_message(struct snpu_params *p, const char *msg,
			  unsigned int bad)
{
	char want[96];

	if (limits[bad].max)
		snprintf(want, sizeof(want), "%s must be in [%u, %u]",
			 limits[bad].name, limits[bad].min, limits[bad].max);
	else
		snprintf(want, sizeof(want), "%s must be in [0, mem_mb]",
			 limits[bad].name);
	FUZZ_CHECK(msg && !strcmp(msg, want), "got \"%s\", want \"%s\"",
		   msg ? msg : "(null)", want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct snpu_params p;
	const char *msg;
	unsigned int i, bad, pick;

	_Static_assert(sizeof(p) == NLIMITS * sizeof(unsigned int),
		       "struct snpu_params has a field the target does not know");
	for (i = 0; i < NLIMITS; i++)
		*field(&p, i) = (unsigned int)fuzz_take(&in, 4);
	pick = (unsigned int)fuzz_take(&in, 1) % NLIMITS;

	msg = check(&p);
	bad = first_bad(&p);
	if (bad < NLIMITS) {
		check_message(&p, msg, bad);
		return 0;
	}
	FUZZ_CHECK(!msg, "valid parameters refused: \"%s\"", msg);

	FUZZ_CHECK(((__u64)p.mem_mb << 20) <= FUZZ_MAX_DEV_BYTES, "mem_mb");
	FUZZ_CHECK(((__u64)p.ctx_mem_mb << 20) <= FUZZ_MAX_DEV_BYTES, "ctx");
	FUZZ_CHECK(((__u64)p.ctx_host_mb << 20) <= FUZZ_MAX_DEV_BYTES, "host");

	/* Just below the minimum, else just above the maximum. */
	if (limits[pick].min)
		*field(&p, pick) = limits[pick].min - 1;
	else
		*field(&p, pick) = max_of(&p, pick) + 1;
	msg = check(&p);
	FUZZ_CHECK(first_bad(&p) == pick, "pick %u", pick);
	check_message(&p, msg, pick);
	return 0;
}
