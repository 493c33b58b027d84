// SPDX-License-Identifier: GPL-2.0
/*
 * libsnpu_mpi's communicator over hosts (lib/mpi/snpu_mpi.h), each MPI
 * process one "host" with devices of its own: with P processes on the
 * module's 4 devices, process p takes devices p * L .. p * L + L - 1,
 * L = 4 / P (2 devices a host with 2 processes, 1 with 3 or 4). Each
 * all-reduce runs as a reduce-scatter inside the host, an MPI_Allreduce of
 * each device's shard by the proxy threads, and an all-gather inside the
 * host, ordered on the streams. Every device's result must equal the
 * hierarchical reference of common/coll_ref.h (each host's devices in
 * rank order, then the hosts in host order) bit for bit: for f32 sums
 * whose additions round too (sum_f32), which libsnpu_mpi adds in host
 * order itself instead of leaving the order to MPI_Allreduce, and run
 * twice on the same inputs to the same bits. With 2 hosts of 2 devices
 * the hierarchical order is not the flat one: the reference is checked
 * to differ from a flat loop over the ranks there, so the test sees the
 * order. Exact inputs (i32 sums wrap, f32 sums of small integers, maxima)
 * equal a flat loop over all devices as well.
 */
#include <errno.h>
#include <unistd.h>

#include <snpu.h>
#include <snpu_mpi.h>

#include "mpi_ksft.h"
#include "coll_ref.h"

#define MAXL	4
#define WAIT_NS	(120LL * 1000000000LL)

static const uint64_t counts[] = { 1, 7, 1001, 262147 };

struct hcase {
	const char *name;
	uint32_t dtype, redop;
};

static const struct hcase cases[] = {
	{ "sum_i32", SNPU_DTYPE_I32, SNPU_REDOP_SUM },
	{ "sum_f32_exact", SNPU_DTYPE_F32, SNPU_REDOP_SUM },
	{ "sum_f32", SNPU_DTYPE_F32, SNPU_REDOP_SUM },
	{ "max_f32", SNPU_DTYPE_F32, SNPU_REDOP_MAX },
	{ "max_i32", SNPU_DTYPE_I32, SNPU_REDOP_MAX },
};

#define NCASES	(sizeof(cases) / sizeof(cases[0]))
#define NCOUNTS	(sizeof(counts) / sizeof(counts[0]))
/* init, the cases, back to back, f32 sum twice, order seen, destroy */
#define PLAN	(1 + NCASES * NCOUNTS + 1 + 1 + 1 + 1)

static int me, nr;
static unsigned int L;
static struct snpu_device *devs[MAXL];
static uint32_t streams[MAXL];
static struct snpu_mpi_comm *hc;

/* Element @i of global device @g's input: sums of f32 stay exact. */
static uint32_t input(const struct hcase *c, unsigned int g, uint64_t i,
		      uint32_t salt)
{
	uint32_t h = cref_input(SNPU_DTYPE_I32, g, i, salt);

	if (!strcmp(c->name, "sum_f32_exact"))
		return cref_f2u((float)((int32_t)(h % 2001) - 1000));
	return cref_input(c->dtype, g, i, salt);
}

/* Element @i of the result: the hierarchical reference. */
static uint32_t expect(const struct hcase *c, uint64_t i, uint32_t salt)
{
	uint32_t v[MAXL * MAXL];
	unsigned int g;

	for (g = 0; g < nr * L; g++)
		v[g] = input(c, g, i, salt);
	return cref_reduce_hier(c->dtype, c->redop, v, nr, L);
}

/* Element @i reduced as one flat loop over every device in rank order. */
static uint32_t expect_flat(const struct hcase *c, uint64_t i, uint32_t salt)
{
	uint32_t acc = input(c, 0, i, salt);
	unsigned int g;

	for (g = 1; g < nr * L; g++)
		acc = cref_op(c->dtype, c->redop, acc, input(c, g, i, salt));
	return acc;
}

struct bufs {
	uint64_t send[MAXL], recv[MAXL];
};

static int setup(const struct hcase *c, uint64_t count, uint32_t salt,
		 struct bufs *b)
{
	uint32_t *h = malloc(count * 4);
	unsigned int l;
	uint64_t i;
	int ret = 0;

	memset(b, 0, sizeof(*b));
	if (!h)
		return -ENOMEM;
	for (l = 0; !ret && l < L; l++) {
		for (i = 0; i < count; i++)
			h[i] = input(c, me * L + l, i, salt);
		ret = snpu_mem_alloc(devs[l], count * 4, 0, 0, &b->send[l]);
		if (!ret)
			ret = snpu_mem_alloc(devs[l], count * 4, 0, 0,
					     &b->recv[l]);
		if (!ret)
			ret = snpu_memcpy_h2d(devs[l], b->send[l], h,
					      count * 4);
		if (!ret)
			ret = snpu_memset(devs[l], b->recv[l], 0xa5, count * 4);
	}
	free(h);
	if (ret)
		mpit_diag("setup: %s", strerror(-ret));
	return ret;
}

static int check(const struct hcase *c, uint64_t count, uint32_t salt,
		 struct bufs *b)
{
	uint32_t *h = malloc(count * 4);
	unsigned int l;
	uint64_t i, bad = 0;
	int ret = 0;

	if (!h)
		return 0;
	for (l = 0; !ret && l < L; l++) {
		ret = snpu_memcpy_d2h(devs[l], h, b->recv[l], count * 4);
		if (ret) {
			mpit_diag("d2h: %s", strerror(-ret));
			break;
		}
		for (i = 0; i < count; i++) {
			uint32_t want = expect(c, i, salt);

			if (h[i] != want && bad++ < 3)
				mpit_diag("%s count %llu device %u: element %llu is 0x%08x, want 0x%08x",
					  c->name, (unsigned long long)count,
					  me * L + l, (unsigned long long)i,
					  h[i], want);
		}
	}
	free(h);
	return !ret && !bad;
}

static void release(struct bufs *b)
{
	unsigned int l;

	for (l = 0; l < L; l++) {
		if (b->send[l])
			snpu_mem_free(devs[l], b->send[l]);
		if (b->recv[l])
			snpu_mem_free(devs[l], b->recv[l]);
	}
}

static int sync_all(void)
{
	unsigned int l;
	int ret = 0, err;

	for (l = 0; l < L; l++) {
		err = snpu_stream_synchronize(devs[l], streams[l], WAIT_NS);
		if (err) {
			mpit_diag("sync device %u: %s", me * L + l,
				  strerror(-err));
			ret = ret ?: err;
		}
	}
	return ret;
}

static int run(const struct hcase *c, uint64_t count, uint32_t salt)
{
	struct bufs b;
	int ret, ok = 0;

	ret = setup(c, count, salt, &b);
	if (!ret) {
		ret = snpu_mpi_allreduce(hc, streams, b.send, b.recv, count,
					 c->dtype, c->redop);
		if (ret)
			mpit_diag("allreduce: %s", strerror(-ret));
	}
	if (!ret)
		ret = sync_all();
	if (!ret)
		ok = check(c, count, salt, &b);
	release(&b);
	return ok;
}

/* Two collectives queued back to back, then one sync. */
static int back_to_back(uint32_t salt)
{
	struct bufs b1, b2;
	int ret, ok = 0;

	ret = setup(&cases[0], 1001, salt, &b1);
	if (!ret)
		ret = setup(&cases[2], 4097, salt + 1, &b2);
	if (!ret)
		ret = snpu_mpi_allreduce(hc, streams, b1.send, b1.recv, 1001,
					 cases[0].dtype, cases[0].redop);
	if (!ret)
		ret = snpu_mpi_allreduce(hc, streams, b2.send, b2.recv, 4097,
					 cases[2].dtype, cases[2].redop);
	if (ret)
		mpit_diag("back to back: %s", strerror(-ret));
	if (!ret)
		ret = sync_all();
	if (!ret)
		ok = check(&cases[0], 1001, salt, &b1) &&
		     check(&cases[2], 4097, salt + 1, &b2);
	release(&b1);
	release(&b2);
	return ok;
}

/*
 * An f32 sum with rounding, twice on the same inputs: both times the
 * reference's bits (so the same bits), in two collectives of one size.
 */
static int twice(uint32_t salt)
{
	return run(&cases[2], 65537, salt) && run(&cases[2], 65537, salt);
}

/*
 * The reference is not the flat order where the two differ (2 hosts of 2
 * devices: (a + b) + (c + d) against ((a + b) + c) + d); with one device
 * a host the two are the same loop, which this checks instead.
 */
static int order_seen(uint32_t salt)
{
	uint64_t i, differ = 0;

	for (i = 0; i < 65537; i++)
		differ += expect(&cases[2], i, salt) !=
			  expect_flat(&cases[2], i, salt);
	if (L == 1)
		return !differ;
	if (!differ)
		mpit_diag("the hierarchical reference is the flat one");
	return differ > 0;
}

int main(int argc, char **argv)
{
	unsigned int ndev = 0, l;
	int ok, ret = 0;
	uint32_t salt = 100;
	size_t c, k;
	char path[32];

	mpit_init(&argc, &argv, PLAN, &me, &nr);

	for (;;) {
		snprintf(path, sizeof(path), "/dev/snpu%u", ndev);
		if (access(path, F_OK))
			break;
		ndev++;
	}
	L = ndev / nr;
	if (L > MAXL)
		L = MAXL;
	ok = L > 0;
	if (!ok)
		mpit_diag("%d processes, %u devices", nr, ndev);
	for (l = 0; ok && l < L; l++) {
		ret = snpu_open(me * L + l, 0, &devs[l]);
		if (!ret)
			ret = snpu_stream_create(devs[l], SNPU_PRIO_NORMAL, 0,
						 &streams[l]);
		ok = !ret;
		if (!ok)
			mpit_diag("device %u: %s", me * L + l, strerror(-ret));
	}
	/* Collective: every process calls it, even one that failed above. */
	ret = snpu_mpi_comm_init(MPI_COMM_WORLD, devs, ok ? L : 0, &hc);
	if (ret && ok)
		mpit_diag("snpu_mpi_comm_init: %s", strerror(-ret));
	ok = ok && !ret;
	if (!mpit_result(ok, "hier_mpi.init_%d_hosts_of_%u_devices", nr, L)) {
		if (me == 0)
			printf("Bail out! no communicator\n");
		return mpit_finish();
	}

	for (c = 0; c < NCASES; c++)
		for (k = 0; k < NCOUNTS; k++) {
			ok = run(&cases[c], counts[k], salt++);
			mpit_result(ok, "hier_mpi.allreduce_%s.count_%llu",
				    cases[c].name,
				    (unsigned long long)counts[k]);
		}
	ok = back_to_back(salt);
	salt += 2;
	mpit_result(ok, "hier_mpi.back_to_back");
	ok = twice(salt);
	mpit_result(ok, "hier_mpi.sum_f32_twice_the_same_bits");
	ok = order_seen(salt);
	salt++;
	mpit_result(ok, "hier_mpi.reference_order_%s",
		    L > 1 ? "differs_from_flat" : "is_flat_with_one_device_a_host");

	ret = snpu_mpi_comm_destroy(hc);
	if (ret)
		mpit_diag("destroy: %s", strerror(-ret));
	for (l = 0; l < L; l++)
		snpu_close(devs[l]);
	mpit_result(!ret, "hier_mpi.destroy");
	return mpit_finish();
}
