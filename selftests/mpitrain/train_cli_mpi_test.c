// SPDX-License-Identifier: GPL-2.0
/*
 * snpu-train --mpi: the command-line trainer as one data-parallel job of
 * several processes under mpirun. Process p of P with --devices N drives
 * the ranks p*N.. of one communicator of P*N ranks, on the same devices,
 * rows and order of sums as one process with --devices P*N, so its
 * weights and last loss must be those bits: snpu-train prints them as
 * "weights: FNV-1a <digest> of <n> bytes; last step's loss <l> (<hex>)",
 * and the lines of the two runs must be equal. The runs are short (8 steps
 * of 24 images of the VM image's small data set, a hidden layer of 32).
 * Also: the options that cannot work are refused, by every process, with a
 * message and status 2, before any training.
 *
 * The module is loaded with devices=4 (run_vm.sh); mpirun runs as root
 * over the loopback interface (scripts/vm-mpi's configuration).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "kselftest_harness.h"

#define TRAIN	"/opt/snpu/bin/snpu-train"
#define MPIRUN	"timeout 240 mpirun --allow-run-as-root --oversubscribe"
#define ARGS	" -d /opt/snpu/data/fashion-mnist-mini --hidden 32 -b 24 -n 8" \
		" --test-subset 512 --svg - --plain -q"
#define OUT_MAX	(64 * 1024)

struct run {
	char out[OUT_MAX];	/* stdout and stderr */
	int status;		/* exit status, or -1 */
};

/* Run @cmd with sh; its output and exit status into @r. */
static void run(const char *cmd, struct run *r)
{
	size_t n = 0, k;
	FILE *f;
	int st;

	r->out[0] = 0;
	r->status = -1;
	f = popen(cmd, "r");
	if (!f)
		return;
	while (n < OUT_MAX - 1 &&
	       (k = fread(r->out + n, 1, OUT_MAX - 1 - n, f)) > 0)
		n += k;
	r->out[n] = 0;
	st = pclose(f);
	if (st != -1 && WIFEXITED(st))
		r->status = WEXITSTATUS(st);
}

/* The "weights: ..." line of @r's output into @line (empty if none). */
static void weights_line(const struct run *r, char *line, size_t len)
{
	const char *p = strstr(r->out, "\nweights: FNV-1a ");
	size_t n;

	line[0] = 0;
	if (!p)
		return;
	p++;
	n = strcspn(p, "\n");
	if (n >= len)
		n = len - 1;
	memcpy(line, p, n);
	line[n] = 0;
}

FIXTURE(cli) {
	struct run ref, mpi;
	char ref_w[256], mpi_w[256];
};

FIXTURE_SETUP(cli)
{
	memset(self, 0, sizeof(*self));
}

FIXTURE_TEARDOWN(cli)
{
}

/* Print both outputs when two runs should have matched. */
static void show(const struct run *a, const struct run *b)
{
	printf("# ---- one process:\n%s# ---- mpirun:\n%s", a->out, b->out);
}

/* 2 processes of 1 device: the bits of one process on 2 devices. */
TEST_F_TIMEOUT(cli, np2_equals_one_process_on_2_devices, 600)
{
	run(TRAIN ARGS " --devices 2 2>&1", &self->ref);
	run(MPIRUN " -np 2 " TRAIN ARGS " --mpi --compare-cpu 2>&1",
	    &self->mpi);
	weights_line(&self->ref, self->ref_w, sizeof(self->ref_w));
	weights_line(&self->mpi, self->mpi_w, sizeof(self->mpi_w));
	if (self->ref.status || self->mpi.status || !self->ref_w[0] ||
	    strcmp(self->ref_w, self->mpi_w))
		show(&self->ref, &self->mpi);
	ASSERT_EQ(0, self->ref.status);
	ASSERT_EQ(0, self->mpi.status);
	ASSERT_NE(0, self->ref_w[0]);
	EXPECT_STREQ(self->ref_w, self->mpi_w);
	EXPECT_NE(NULL, strstr(self->mpi.out, "on 2 devices of 2 processes"));
	EXPECT_NE(NULL, strstr(self->mpi.out, "every rank's weights "
					      "bit-identical"));
	/* And the data-parallel step on the CPU, bit for bit. */
	EXPECT_NE(NULL, strstr(self->mpi.out, "data-parallel CPU reference: "
					      "weights bit-identical"));
}

/* --devices composes: 2 processes of 2 devices are 4 ranks. */
TEST_F_TIMEOUT(cli, np2_of_2_devices_equals_one_process_on_4, 600)
{
	run(TRAIN ARGS " --devices 4 2>&1", &self->ref);
	run(MPIRUN " -np 2 " TRAIN ARGS " --mpi --devices 2 2>&1", &self->mpi);
	weights_line(&self->ref, self->ref_w, sizeof(self->ref_w));
	weights_line(&self->mpi, self->mpi_w, sizeof(self->mpi_w));
	if (self->ref.status || self->mpi.status || !self->ref_w[0] ||
	    strcmp(self->ref_w, self->mpi_w))
		show(&self->ref, &self->mpi);
	ASSERT_EQ(0, self->ref.status);
	ASSERT_EQ(0, self->mpi.status);
	ASSERT_NE(0, self->ref_w[0]);
	EXPECT_STREQ(self->ref_w, self->mpi_w);
	EXPECT_NE(NULL, strstr(self->mpi.out, "on 4 devices of 2 processes"));
}

/* 3 processes (an odd count) against one process on 3 devices. */
TEST_F_TIMEOUT(cli, np3_equals_one_process_on_3_devices, 600)
{
	run(TRAIN ARGS " --devices 3 2>&1", &self->ref);
	run(MPIRUN " -np 3 " TRAIN ARGS " --mpi 2>&1", &self->mpi);
	weights_line(&self->ref, self->ref_w, sizeof(self->ref_w));
	weights_line(&self->mpi, self->mpi_w, sizeof(self->mpi_w));
	if (self->ref.status || self->mpi.status || !self->ref_w[0] ||
	    strcmp(self->ref_w, self->mpi_w))
		show(&self->ref, &self->mpi);
	ASSERT_EQ(0, self->ref.status);
	ASSERT_EQ(0, self->mpi.status);
	ASSERT_NE(0, self->ref_w[0]);
	EXPECT_STREQ(self->ref_w, self->mpi_w);
}

/* The comparison sees a difference: another seed, other weights. */
TEST_F_TIMEOUT(cli, another_seed_gives_other_weights, 600)
{
	run(TRAIN ARGS " --devices 2 2>&1", &self->ref);
	run(MPIRUN " -np 2 " TRAIN ARGS " --mpi -s 2 2>&1", &self->mpi);
	weights_line(&self->ref, self->ref_w, sizeof(self->ref_w));
	weights_line(&self->mpi, self->mpi_w, sizeof(self->mpi_w));
	ASSERT_EQ(0, self->ref.status);
	ASSERT_EQ(0, self->mpi.status);
	ASSERT_NE(0, self->ref_w[0]);
	ASSERT_NE(0, self->mpi_w[0]);
	EXPECT_STRNE(self->ref_w, self->mpi_w);
}

/* Under mpirun without --mpi, every process refuses to train alone. */
TEST_F_TIMEOUT(cli, mpirun_without_mpi_option_is_refused, 300)
{
	run(MPIRUN " -np 2 " TRAIN ARGS " 2>&1", &self->mpi);
	EXPECT_NE(0, self->mpi.status);
	EXPECT_NE(NULL, strstr(self->mpi.out, "one of 2 processes of mpirun: "
					      "give --mpi"));
	EXPECT_EQ(NULL, strstr(self->mpi.out, "trained "));
}

/* 2 ranks do not divide a batch of 25. */
TEST_F_TIMEOUT(cli, ranks_not_dividing_the_batch_are_refused, 300)
{
	run(MPIRUN " -np 2 " TRAIN ARGS " --mpi -b 25 2>&1", &self->mpi);
	EXPECT_EQ(2, self->mpi.status);
	EXPECT_NE(NULL, strstr(self->mpi.out, "2 processes of 1 devices make "
					      "2 ranks"));
	EXPECT_EQ(NULL, strstr(self->mpi.out, "trained "));
}

/* 2 processes of 8 devices are more ranks than snpu-train takes. */
TEST_F_TIMEOUT(cli, too_many_ranks_are_refused, 300)
{
	run(MPIRUN " -np 2 " TRAIN ARGS " --mpi --devices 8 2>&1", &self->mpi);
	EXPECT_EQ(2, self->mpi.status);
	EXPECT_NE(NULL, strstr(self->mpi.out, "make 16 ranks: at most 8"));
	EXPECT_EQ(NULL, strstr(self->mpi.out, "trained "));
}

/* --mpi does not go with a single-device mode such as --checkpoint-at. */
TEST_F_TIMEOUT(cli, mpi_with_checkpoint_is_refused, 300)
{
	run(MPIRUN " -np 2 " TRAIN ARGS " --mpi --checkpoint-at 2 2>&1",
	    &self->mpi);
	EXPECT_EQ(2, self->mpi.status);
	EXPECT_NE(NULL, strstr(self->mpi.out, "neither it nor --mpi goes with"));
	EXPECT_EQ(NULL, strstr(self->mpi.out, "trained "));
}

TEST_HARNESS_MAIN
