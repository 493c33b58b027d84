// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * snpu-train: train an MLP on Fashion-MNIST on the soft NPU, through rt2
 * (three workers, graph replay), the rings and the kernels; then test it.
 *
 *   snpu-train [options]
 *
 * The data are the IDX files of Debian's dataset-fashion-mnist package
 * (-d DIR). The model, its order of operations and its initialisation are
 * those of lib/tools/mlp.h (the CPU reference); the rt2 models are
 * lib/tools/mlp_rt2.h. Each step writes its batch into the executor's
 * pinned input buffers and runs the executor: the H2D copies, the
 * normalisation operator on an attached stream, one launch of the
 * captured graph (after the first step), the D2H copies of the loss and
 * the count of right answers.
 *
 * At the end: test accuracy, the time split (data, H2D, device compute,
 * D2H, runtime overhead) and a loss curve as SVG. See --help, and
 * Documentation/train.rst.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>

#ifdef SNPU_TRAIN_MPI
#include <mpi.h>
#endif

#include "snpu.h"
#include "snpu_rt2.h"
#include "idx.h"
#include "mlp.h"
#include "mlp_rt2.h"

#define DEFAULT_DATA	"/usr/share/datasets/fashion-mnist"
#define DEBUGFS		"/sys/kernel/debug"
#define CLASSES		10
#define DP_MAX		8	/* --devices, and ranks in all with --mpi */

/*
 * --mpi: this process in the MPI job (rank 0 of 1 without it). Set once in
 * main() before anything else runs; die() reads it to take the whole job
 * down with the process.
 */
struct job {
	bool mpi;
	int rank, size;
};

static struct job job = { .size = 1 };

struct opts {
	const char *data, *svg;
	unsigned int dev;
	struct mlp_cfg c;
	uint32_t epochs, steps, subset, test_subset, eval_batch;
	long checkpoint_at;
	bool graph, threads, cpu_only, compare_cpu, bench, quiet, plain;
	uint32_t bench_steps;
	unsigned int devices;
	bool mpi;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: snpu-train [options]\n"
"  -d, --data DIR        IDX files (default " DEFAULT_DATA ")\n"
"      --hidden N        hidden layer size (default 128)\n"
"  -b, --batch N         minibatch size (default 64)\n"
"      --lr F            learning rate (default 0.1)\n"
"  -e, --epochs N        passes over the training subset (default 1)\n"
"  -n, --steps N         steps instead of epochs\n"
"  -s, --seed N          initialisation and shuffle seed (default 1)\n"
"      --subset N        first N training images (default all)\n"
"      --test-subset N   first N test images (default all)\n"
"      --eval-batch N    test batch size (default 500)\n"
"      --svg FILE        loss curve (default snpu-train-loss.svg; - none)\n"
"      --checkpoint-at S after step S: lock, backup, device reset (fault\n"
"                        knob), restore, unlock; then check that the weights\n"
"                        end bit-identical to an uninterrupted run\n"
"      --compare-cpu     train the CPU reference on the same batches and\n"
"                        check that the weights are the same, bit for bit\n"
"      --bench N         steps/s over N steps: graph replay, op by op\n"
"                        through the ring, CPU reference, and a CPU trainer\n"
"                        whose GEMMs are OpenBLAS's (if libopenblas.so.0 is\n"
"                        there) with 1 thread and one per CPU\n"
"      --no-graph        submit the step op by op through the ring\n"
"      --single-thread   rt2's single-thread mode (default three workers)\n"
"      --cpu             train with the CPU reference only (no device)\n"
"  -D, --device N        /dev/snpuN (default 0)\n"
"      --devices N       data-parallel on /dev/snpu0..N-1: each device a\n"
"                        shard of every batch (batch / N rows), gradients\n"
"                        summed with an all-reduce, the same weights on all\n"
"      --mpi             under mpirun -np P: P processes of one host train\n"
"                        as one data-parallel job of P x N ranks (N of\n"
"                        --devices, default 1): process p on /dev/snpu(p*N)..,\n"
"                        the same weights as one process with --devices P*N\n"
"  -q, --quiet           no progress output\n"
"      --plain           progress as lines, also on a terminal\n");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "snpu-train: %s: %s\n", what, strerror(err < 0 ? -err : err));
#ifdef SNPU_TRAIN_MPI
	/* The other processes may be waiting for this one: end them too. */
	if (job.mpi) {
		fflush(NULL);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
#endif
	exit(1);
}

/* ---- the training data, in epochs of shuffled batches ------------------- */

struct data {
	struct idx_set train, test;
	uint32_t ntrain, ntest, in;
	uint32_t *order;
	uint32_t epoch_loaded;
	double load_s;
};

/* The items of step @step into @x and @y (its epoch's order, batch @b). */
static void batch_of(struct data *d, const struct opts *o, uint32_t step,
		     float *x, int32_t *y)
{
	uint32_t per = d->ntrain / o->c.batch;
	uint32_t epoch = step / per, first = (step % per) * o->c.batch;

	if (d->epoch_loaded != epoch) {
		mlp_epoch_order(o->c.seed, epoch, d->order, d->ntrain);
		d->epoch_loaded = epoch;
	}
	mlp_gather(x, y, d->train.images, d->train.labels, d->order, first,
		   o->c.batch, d->in);
}

/* ---- progress ---------------------------------------------------------------- */

struct progress {
	bool tty, quiet;
	double start, last;
	uint32_t steps, every;
};

static void progress(struct progress *p, uint32_t step, double loss,
		     double acc, uint32_t batch)
{
	double t = now_s(), rate = step * (double)batch / (t - p->start);
	char bar[41];
	unsigned int i, fill;

	if (p->quiet)
		return;
	if (p->tty) {
		if (step != p->steps && t - p->last < 0.1)
			return;
		p->last = t;
		fill = (unsigned int)(40.0 * step / p->steps);
		for (i = 0; i < 40; i++)
			bar[i] = i < fill ? '#' : '.';
		bar[40] = 0;
		printf("\r[%s] step %u/%u  loss %.4f  acc %5.1f%%  %.0f samples/s ",
		       bar, step, p->steps, loss, 100 * acc, rate);
		if (step == p->steps)
			printf("\n");
		fflush(stdout);
		return;
	}
	if (step % p->every && step != p->steps)
		return;
	printf("step %5u/%u  loss %.4f  acc %5.1f%%  %.0f samples/s\n", step,
	       p->steps, loss, 100 * acc, rate);
	fflush(stdout);
}

/* ---- the loss curve ---------------------------------------------------------- */

static void write_svg(const char *path, const float *loss, uint32_t n,
		      const struct opts *o, double test_acc)
{
	const double W = 640, H = 400, L = 60, R = 20, T = 40, B = 50;
	double maxl = 0, x, y, avg = 0;
	uint32_t i, win = n / 50 + 1;
	FILE *f;

	if (!path || !strcmp(path, "-") || !n)
		return;
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "snpu-train: %s: %s\n", path, strerror(errno));
		return;
	}
	for (i = 0; i < n; i++)
		if (loss[i] > maxl)
			maxl = loss[i];
	maxl = ceil(maxl * 2) / 2;
	if (maxl <= 0)
		maxl = 1;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
		"height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H);
	fprintf(f, "<text x=\"%.0f\" y=\"24\" text-anchor=\"middle\" "
		"font-size=\"14\">snpu-train: MLP %u-%u-%u on Fashion-MNIST, "
		"batch %u, lr %g; test accuracy %.2f%%</text>\n", W / 2,
		o->c.in, o->c.hid, o->c.out, o->c.batch, (double)o->c.lr,
		100 * test_acc);
	fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" "
		"stroke=\"black\"/>\n", L, H - B, W - R, H - B);
	fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" "
		"stroke=\"black\"/>\n", L, T, L, H - B);
	for (i = 0; i <= 4; i++) {
		y = H - B - i * (H - B - T) / 4;
		fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">"
			"%.2f</text>\n", L - 6, y + 4, maxl * i / 4);
		x = L + i * (W - L - R) / 4;
		fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">"
			"%u</text>\n", x, H - B + 16, (uint32_t)((uint64_t)n * i / 4));
	}
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">step"
		"</text>\n", (L + W - R) / 2, H - 12);
	fprintf(f, "<text x=\"16\" y=\"%.0f\" transform=\"rotate(-90 16 %.0f)\" "
		"text-anchor=\"middle\">training loss</text>\n", (T + H - B) / 2,
		(T + H - B) / 2);
	/* Every step, light; a moving average over @win steps, dark. */
	fprintf(f, "<polyline fill=\"none\" stroke=\"#9ecae1\" points=\"");
	for (i = 0; i < n; i++)
		fprintf(f, "%.1f,%.1f ", L + (W - L - R) * i / (n > 1 ? n - 1 : 1),
			H - B - (H - B - T) * loss[i] / maxl);
	fprintf(f, "\"/>\n<polyline fill=\"none\" stroke=\"#08519c\" "
		"stroke-width=\"2\" points=\"");
	for (i = 0; i < n; i++) {
		avg += loss[i];
		if (i >= win)
			avg -= loss[i - win];
		fprintf(f, "%.1f,%.1f ", L + (W - L - R) * i / (n > 1 ? n - 1 : 1),
			H - B - (H - B - T) * (avg / (i < win ? i + 1 : win)) / maxl);
	}
	fprintf(f, "\"/>\n</svg>\n");
	fclose(f);
}

/* ---- the device ---------------------------------------------------------------- */

struct dev {
	struct snpu_device *dev;
	struct snpu_rt2_dev *rd;
	struct snpu_info info;	/* launches are sized for its cores */
};

struct trainer {
	struct mlp_rt2 net;
	struct snpu_rt2_exec *e;
	float *x;
	int32_t *y;
};

static int trainer_init(struct trainer *t, struct dev *d, const struct opts *o,
			const struct mlp_params *p, bool graph)
{
	struct snpu_rt2_exec_opts eo = {
		.flags = (o->threads ? SNPU_RT2_EXEC_THREADS : 0) |
			 (graph ? SNPU_RT2_EXEC_GRAPH : 0),
	};
	int ret;

	ret = mlp_rt2_build(&t->net, &o->c, p, o->c.batch, true);
	if (ret)
		return ret;
	t->net.info = d->info;
	ret = snpu_rt2_exec_create(t->net.m, d->rd, &eo, &t->e);
	if (!ret)
		ret = snpu_rt2_exec_input(t->e, 0, NULL, (void **)&t->x);
	if (!ret)
		ret = snpu_rt2_exec_input(t->e, 1, NULL, (void **)&t->y);
	return ret;
}

static void trainer_fini(struct trainer *t)
{
	snpu_rt2_exec_destroy(t->e);
	mlp_rt2_free(&t->net);
	t->e = NULL;
}

/* Run a step on the batch in t->x, t->y; its mean loss and right count. */
static int trainer_step(struct trainer *t, uint32_t batch, double *loss,
			uint32_t *right)
{
	const float *l;
	const int32_t *ok;
	uint32_t i;
	int ret;

	ret = snpu_rt2_exec_run(t->e);
	if (!ret)
		ret = snpu_rt2_exec_output(t->e, 0, (const void **)&l, NULL);
	if (!ret)
		ret = snpu_rt2_exec_output(t->e, 1, (const void **)&ok, NULL);
	if (ret)
		return ret;
	*loss = 0;
	for (i = 0; i < batch; i++)
		*loss += l[i];
	*loss /= batch;
	*right = (uint32_t)ok[0];
	return 0;
}

/* The fault knob: what a device reset does (Documentation/snapshot.rst). */
static int device_reset(unsigned int dev)
{
	char path[128];
	int fd, ret = 0;

	snprintf(path, sizeof(path), DEBUGFS "/snpu/snpu%u/reset", dev);
	if (access(path, W_OK) &&
	    mount("debugfs", DEBUGFS, "debugfs", 0, NULL) && errno != EBUSY)
		return -errno;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, "1\n", 2) != 2)
		ret = -errno;
	close(fd);
	return ret;
}

/* Lock, back up, reset the device, restore, unlock. */
static int checkpoint(struct dev *d, const struct opts *o, double *secs)
{
	struct snpu_device *devs[1] = { d->dev };
	double t0 = now_s();
	uint64_t image = 0;
	int ret, ret2;

	ret = snpu_snapshot_lock(devs, 1, 1000000000LL);
	if (ret)
		return ret;
	ret = snpu_snapshot_backup(devs, 1, &image);
	if (!ret)
		ret = device_reset(o->dev);
	if (!ret)
		ret = snpu_snapshot_restore(devs, 1);
	ret2 = snpu_snapshot_unlock(devs, 1);
	*secs = now_s() - t0;
	if (!ret && !o->quiet)
		printf("checkpoint after step %ld: locked, backed up %.1f MiB, "
		       "device reset, restored, unlocked in %.3f s\n",
		       o->checkpoint_at, image / 1048576.0, *secs);
	return ret ? ret : ret2;
}

/* ---- evaluation -------------------------------------------------------------- */

static int evaluate(struct dev *d, struct data *da, const struct opts *o,
		    const struct mlp_params *p, double *acc)
{
	struct snpu_rt2_exec_opts eo = {
		.flags = (o->threads ? SNPU_RT2_EXEC_THREADS : 0) |
			 (o->graph ? SNPU_RT2_EXEC_GRAPH : 0),
	};
	uint32_t b = o->eval_batch < da->ntest ? o->eval_batch : da->ntest;
	struct snpu_rt2_exec *e;
	struct mlp_rt2 net;
	uint32_t first, rows, r, j, right = 0;
	const int32_t *ok;
	int32_t *y;
	float *x;
	int ret;

	ret = mlp_rt2_build(&net, &o->c, p, b, false);
	if (ret)
		return ret;
	net.info = d->info;
	ret = snpu_rt2_exec_create(net.m, d->rd, &eo, &e);
	if (ret) {
		mlp_rt2_free(&net);
		return ret;
	}
	/*
	 * Every run has the full batch (the normalisation declares its
	 * shape): a last, partial batch is padded with blank images labelled
	 * -1, which no argmax equals.
	 */
	for (first = 0; !ret && first < da->ntest; first += rows) {
		rows = da->ntest - first < b ? da->ntest - first : b;
		ret = snpu_rt2_exec_input(e, 0, NULL, (void **)&x);
		if (!ret)
			ret = snpu_rt2_exec_input(e, 1, NULL, (void **)&y);
		if (ret)
			break;
		for (r = 0; r < b; r++) {
			const uint8_t *img = da->test.images +
					     (size_t)(first + r) * o->c.in;

			for (j = 0; j < o->c.in; j++)
				x[(size_t)r * o->c.in + j] = r < rows ? img[j] : 0;
			y[r] = r < rows ? da->test.labels[first + r] : -1;
		}
		ret = snpu_rt2_exec_run(e);
		if (!ret)
			ret = snpu_rt2_exec_output(e, 0, (const void **)&ok, NULL);
		if (!ret)
			right += (uint32_t)ok[0];
	}
	snpu_rt2_exec_destroy(e);
	mlp_rt2_free(&net);
	*acc = (double)right / da->ntest;
	return ret;
}

static double evaluate_cpu(struct mlp_cpu *m, struct data *da)
{
	uint32_t first, r, j, right = 0, rows;
	float *x = malloc((size_t)m->c.batch * m->c.in * 4);

	if (!x)
		die("evaluate", -ENOMEM);
	for (first = 0; first < da->ntest; first += rows) {
		rows = da->ntest - first < m->c.batch ? da->ntest - first :
							m->c.batch;
		for (r = 0; r < rows; r++)
			for (j = 0; j < m->c.in; j++)
				x[(size_t)r * m->c.in + j] =
					da->test.images[(size_t)(first + r) *
							m->c.in + j];
		mlp_cpu_forward(m, x, rows);
		for (r = 0; r < rows; r++)
			right += mlp_argmax(m->z2 + (size_t)r * m->c.out,
					    m->c.out) == da->test.labels[first + r];
	}
	free(x);
	return (double)right / da->ntest;
}

/* ---- main ------------------------------------------------------------------- */

static uint32_t num(const char *s, const char *what)
{
	char *end;
	unsigned long v = strtoul(s, &end, 0);

	if (!*s || *end || v > UINT32_MAX) {
		fprintf(stderr, "snpu-train: bad %s '%s'\n", what, s);
		exit(2);
	}
	return (uint32_t)v;
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "data", 1, NULL, 'd' }, { "hidden", 1, NULL, 'H' },
		{ "batch", 1, NULL, 'b' }, { "lr", 1, NULL, 'l' },
		{ "epochs", 1, NULL, 'e' }, { "steps", 1, NULL, 'n' },
		{ "seed", 1, NULL, 's' }, { "subset", 1, NULL, 'S' },
		{ "test-subset", 1, NULL, 'T' }, { "eval-batch", 1, NULL, 'E' },
		{ "svg", 1, NULL, 'g' }, { "checkpoint-at", 1, NULL, 'c' },
		{ "compare-cpu", 0, NULL, 'C' }, { "bench", 1, NULL, 'B' },
		{ "no-graph", 0, NULL, 'N' }, { "single-thread", 0, NULL, '1' },
		{ "cpu", 0, NULL, 'P' }, { "device", 1, NULL, 'D' },
		{ "quiet", 0, NULL, 'q' }, { "help", 0, NULL, 'h' },
		{ "plain", 0, NULL, 'p' }, { "devices", 1, NULL, 'M' },
		{ "mpi", 0, NULL, 'm' }, { NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->data = DEFAULT_DATA;
	o->svg = "snpu-train-loss.svg";
	o->c = (struct mlp_cfg){ 784, 128, CLASSES, 64, 0.1f, 1 };
	o->epochs = 1;
	o->eval_batch = 500;
	o->checkpoint_at = -1;
	o->graph = true;
	o->threads = true;
	while ((c = getopt_long(argc, argv, "d:b:e:n:s:D:qh", lo, NULL)) != -1) {
		switch (c) {
		case 'd': o->data = optarg; break;
		case 'H': o->c.hid = num(optarg, "size"); break;
		case 'b': o->c.batch = num(optarg, "batch"); break;
		case 'l': o->c.lr = strtof(optarg, NULL); break;
		case 'e': o->epochs = num(optarg, "epochs"); break;
		case 'n': o->steps = num(optarg, "steps"); break;
		case 's': o->c.seed = num(optarg, "seed"); break;
		case 'S': o->subset = num(optarg, "subset"); break;
		case 'T': o->test_subset = num(optarg, "subset"); break;
		case 'E': o->eval_batch = num(optarg, "batch"); break;
		case 'g': o->svg = optarg; break;
		case 'c': o->checkpoint_at = num(optarg, "step"); break;
		case 'C': o->compare_cpu = true; break;
		case 'B': o->bench = true; o->bench_steps = num(optarg, "steps"); break;
		case 'N': o->graph = false; break;
		case '1': o->threads = false; break;
		case 'P': o->cpu_only = true; break;
		case 'D': o->dev = num(optarg, "device"); break;
		case 'q': o->quiet = true; break;
		case 'p': o->plain = true; break;
		case 'M': o->devices = num(optarg, "devices"); break;
		case 'm': o->mpi = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (o->devices > DP_MAX || ((o->devices > 1 || o->mpi) &&
	    (o->c.batch % (o->devices ? o->devices : 1) || o->bench ||
	     o->cpu_only || o->checkpoint_at >= 0))) {
		fprintf(stderr, "snpu-train: --devices takes 1 to %u devices "
			"that divide the batch; neither it nor --mpi goes with "
			"--bench, --cpu or --checkpoint-at\n", DP_MAX);
		exit(2);
	}
	if (o->mpi && !o->devices)
		o->devices = 1;
	if (optind != argc || !o->c.batch || !o->c.hid || o->c.hid > 65536 ||
	    !o->eval_batch || !(o->c.lr > 0) || o->c.batch > 65536 ||
	    o->eval_batch > 65536) {
		usage(stderr);
		exit(2);
	}
}

static void load(struct data *d, struct opts *o)
{
	char err[512];
	double t0 = now_s();
	int ret;

	ret = idx_set_load(o->data, "train", CLASSES, &d->train, err, sizeof(err));
	if (!ret)
		ret = idx_set_load(o->data, "t10k", CLASSES, &d->test, err,
				   sizeof(err));
	if (ret) {
		fprintf(stderr, "snpu-train: %s\n", err);
		exit(1);
	}
	if (d->train.rows * d->train.cols != d->test.rows * d->test.cols) {
		fprintf(stderr, "snpu-train: train and test images differ\n");
		exit(1);
	}
	d->in = o->c.in = d->train.rows * d->train.cols;
	d->ntrain = o->subset && o->subset < d->train.n ? o->subset : d->train.n;
	d->ntest = o->test_subset && o->test_subset < d->test.n ?
		   o->test_subset : d->test.n;
	if (d->ntrain < o->c.batch) {
		fprintf(stderr, "snpu-train: %u training items, fewer than a batch\n",
			d->ntrain);
		exit(2);
	}
	d->order = malloc(d->ntrain * sizeof(*d->order));
	if (!d->order)
		die("load", -ENOMEM);
	d->epoch_loaded = UINT32_MAX;
	if (!o->steps)
		o->steps = o->epochs * (d->ntrain / o->c.batch);
	d->load_s = now_s() - t0;
}

/*
 * ---- OpenBLAS, for the bench's CPU trainer --------------------------------
 *
 * Loaded when --bench runs, not linked: OpenBLAS starts a thread pool when
 * it is loaded, which the other uses of this program do not want. In
 * QEMU's default CPU model it needs OPENBLAS_CORETYPE=Prescott (it takes
 * that CPU for an Opteron and dies on a 3DNow! instruction).
 */
typedef void blas_sgemm_fn(int order, int ta, int tb, int m, int n, int k,
			   float alpha, const float *a, int lda,
			   const float *b, int ldb, float beta, float *c,
			   int ldc);
typedef void blas_threads_fn(int threads);

static blas_sgemm_fn *blas_sgemm;
static blas_threads_fn *blas_threads;

/* CBLAS's CblasRowMajor, CblasNoTrans, CblasTrans. */
#define BLAS_ROW_MAJOR	101
#define BLAS_NO_TRANS	111
#define BLAS_TRANS	112

/* OpenBLAS's kernels for the wrong CPU: say what to do, not just die. */
static void blas_sigill(int sig)
{
	static const char msg[] = "snpu-train: OpenBLAS ran an instruction "
		"this CPU does not have: set OPENBLAS_CORETYPE (Prescott in "
		"QEMU's default CPU model)\n";

	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(128 + sig);
	_exit(128 + sig);
}

static int blas_open(void)
{
	void *h;

	/* What was printed so far must survive a crash inside OpenBLAS. */
	fflush(stdout);
	signal(SIGILL, blas_sigill);
	h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return -ENOENT;
	blas_sgemm = (blas_sgemm_fn *)dlsym(h, "cblas_sgemm");
	blas_threads = (blas_threads_fn *)dlsym(h, "openblas_set_num_threads");
	return blas_sgemm && blas_threads ? 0 : -ENOENT;
}

/* mlp_gemm_fn over cblas_sgemm (its own order of operations). */
static void blas_gemm(float *c, const float *a, const float *b, uint32_t m,
		      uint32_t n, uint32_t k, int ta, int tb)
{
	blas_sgemm(BLAS_ROW_MAJOR, ta ? BLAS_TRANS : BLAS_NO_TRANS,
		   tb ? BLAS_TRANS : BLAS_NO_TRANS, (int)m, (int)n, (int)k,
		   1.0f, a, ta ? (int)m : (int)k, b, tb ? (int)k : (int)n,
		   0.0f, c, (int)n);
}

/*
 * The CPU reference over the same batches: its weights, its time; with
 * @gemm, a CPU trainer whose GEMMs are that (else the reference's loops).
 */
static double cpu_train(struct mlp_cpu *m, struct data *d, const struct opts *o,
			uint32_t steps, mlp_gemm_fn *gemm)
{
	float *x = malloc((size_t)o->c.batch * o->c.in * 4);
	int32_t *y = malloc(o->c.batch * 4);
	double t0;
	uint32_t s;

	if (!x || !y || mlp_cpu_init(m, &o->c))
		die("cpu", -ENOMEM);
	m->gemm = gemm;
	t0 = now_s();
	for (s = 0; s < steps; s++) {
		batch_of(d, o, s, x, y);
		mlp_cpu_step(m, x, y);
	}
	t0 = now_s() - t0;
	free(x);
	free(y);
	return t0;
}

static uint64_t params_bytes(const struct mlp_cfg *c)
{
	return 4ULL * ((uint64_t)c->in * c->hid + c->hid +
		       (uint64_t)c->hid * c->out + c->out);
}

static bool params_equal(const struct mlp_cfg *c, const struct mlp_params *a,
			 const struct mlp_params *b)
{
	return !memcmp(a->w1, b->w1, 4ULL * c->in * c->hid) &&
	       !memcmp(a->b1, b->b1, 4ULL * c->hid) &&
	       !memcmp(a->w2, b->w2, 4ULL * c->hid * c->out) &&
	       !memcmp(a->b2, b->b2, 4ULL * c->out);
}

static float params_diff(const struct mlp_cfg *c, const struct mlp_params *a,
			 const struct mlp_params *b)
{
	float d = mlp_max_rel_diff(a->w1, b->w1, (uint64_t)c->in * c->hid);

	d = fmaxf(d, mlp_max_rel_diff(a->b1, b->b1, c->hid));
	d = fmaxf(d, mlp_max_rel_diff(a->w2, b->w2, (uint64_t)c->hid * c->out));
	return fmaxf(d, mlp_max_rel_diff(a->b2, b->b2, c->out));
}

/* An uninterrupted device run of @steps steps, for the checks. */
static void device_train_plain(struct dev *d, struct data *da,
			       const struct opts *o, uint32_t steps,
			       bool graph, struct mlp_params *out, double *secs,
			       double *overhead)
{
	struct snpu_rt2_exec_stats st;
	struct mlp_params p;
	struct trainer t;
	double loss, t0;
	uint32_t s, right;
	int ret;

	if (mlp_params_init(&o->c, &p))
		die("params", -ENOMEM);
	ret = trainer_init(&t, d, o, &p, graph);
	if (ret)
		die("executor", ret);
	t0 = now_s();
	for (s = 0; s < steps; s++) {
		batch_of(da, o, s, t.x, t.y);
		ret = trainer_step(&t, o->c.batch, &loss, &right);
		if (ret)
			die("step", ret);
	}
	*secs = now_s() - t0;
	if (out && mlp_rt2_read(t.e, &t.net, &o->c, out))
		die("read back", -EIO);
	if (overhead && !snpu_rt2_exec_stats(t.e, &st))
		*overhead = 1 - (st.h2d_ns + st.compute_ns + st.d2h_ns) * 1e-9 /
			    *secs;
	trainer_fini(&t);
	mlp_params_free(&p);
}

/*
 * --bench: N steps each way, in BENCH_ROUNDS rounds that take turns (a
 * round runs N / BENCH_ROUNDS steps of every way, each way going on with
 * its own training), so that a host whose load changes slows every way
 * alike and the ratios hold: rt2 with graph replay, rt2 op by op through
 * the ring, the CPU reference, and the CPU trainer with OpenBLAS's GEMMs
 * with 1 thread and with one per CPU.
 */
#define BENCH_ROUNDS	4

enum { B_GRAPH, B_OPS, B_CPU, B_BLAS1, B_BLASN, B_WAYS };

static void bench(struct dev *d, struct data *da, const struct opts *o)
{
	const uint32_t n = o->bench_steps;
	struct snpu_rt2_exec_stats st;
	struct mlp_params p[2];
	struct trainer tr[2];
	struct mlp_cpu cpu[3];
	double secs[B_WAYS] = { 0 }, over[2] = { 0 }, loss, t0;
	uint32_t done[B_WAYS] = { 0 }, r, k, j, right, s;
	float *x = malloc((size_t)o->c.batch * o->c.in * 4);
	int32_t *y = malloc(o->c.batch * 4);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	bool blas = !blas_open();
	unsigned int w;
	int ret;

	if (!x || !y)
		die("bench", -ENOMEM);
	for (w = 0; w < 2; w++) {
		if (mlp_params_init(&o->c, &p[w]))
			die("params", -ENOMEM);
		ret = trainer_init(&tr[w], d, o, &p[w], w == B_GRAPH);
		if (ret)
			die("executor", ret);
	}
	for (w = 0; w < 3; w++) {
		if (mlp_cpu_init(&cpu[w], &o->c))
			die("cpu", -ENOMEM);
		cpu[w].gemm = w ? blas_gemm : NULL;
	}
	for (r = 0; r < BENCH_ROUNDS; r++) {
		k = n / BENCH_ROUNDS + (r < n % BENCH_ROUNDS);
		for (w = 0; w < B_WAYS; w++) {
			if (w >= B_BLAS1 && !blas)
				continue;
			if (w >= B_BLAS1)
				blas_threads(w == B_BLAS1 || cpus < 1 ? 1 :
					     (int)cpus);
			t0 = now_s();
			for (j = 0; j < k; j++) {
				s = done[w]++;
				if (w <= B_OPS) {
					batch_of(da, o, s, tr[w].x, tr[w].y);
					ret = trainer_step(&tr[w], o->c.batch,
							   &loss, &right);
					if (ret)
						die("step", ret);
				} else {
					batch_of(da, o, s, x, y);
					mlp_cpu_step(&cpu[w - B_CPU], x, y);
				}
			}
			secs[w] += now_s() - t0;
		}
	}
	for (w = 0; w < 2; w++) {
		if (!snpu_rt2_exec_stats(tr[w].e, &st))
			over[w] = 1 - (st.h2d_ns + st.compute_ns + st.d2h_ns) *
				      1e-9 / secs[w];
		trainer_fini(&tr[w]);
		mlp_params_free(&p[w]);
	}
	for (w = 0; w < 3; w++)
		mlp_cpu_free(&cpu[w]);
	free(x);
	free(y);
	printf("bench: MLP %u-%u-%u, batch %u, %u steps (%u rounds taking "
	       "turns): rt2 graph replay %.2f steps/s (runtime overhead "
	       "%.1f%%); op by op through the ring %.2f steps/s (%.2fx, "
	       "overhead %.1f%%); CPU reference %.2f steps/s (%.2fx)\n",
	       o->c.in, o->c.hid, o->c.out, o->c.batch, n, BENCH_ROUNDS,
	       n / secs[B_GRAPH], 100 * over[B_GRAPH], n / secs[B_OPS],
	       secs[B_GRAPH] / secs[B_OPS], 100 * over[B_OPS],
	       n / secs[B_CPU], secs[B_GRAPH] / secs[B_CPU]);
	if (!blas) {
		printf("bench: CPU with OpenBLAS: libopenblas.so.0 not found\n");
		return;
	}
	printf("bench: MLP %u-%u-%u, batch %u, %u steps: CPU with OpenBLAS's "
	       "GEMMs, 1 thread %.2f steps/s (graph replay %.2fx), %ld threads "
	       "%.2f steps/s (graph replay %.2fx)\n", o->c.in, o->c.hid,
	       o->c.out, o->c.batch, n, n / secs[B_BLAS1],
	       secs[B_BLAS1] / secs[B_GRAPH], cpus, n / secs[B_BLASN],
	       secs[B_BLASN] / secs[B_GRAPH]);
}

/*
 * ---- --mpi: one job of several processes ------------------------------------
 *
 * Under mpirun -np P, process p (its MPI rank) drives /dev/snpu(p*N) to
 * /dev/snpu(p*N+N-1), the ranks p*N.. of one snpu communicator of P x N
 * ranks: rank 0 draws its id and MPI_Bcast() gives it to every process,
 * which joins each of its files (snpu_comm_init_rank()). The ranks, their
 * devices, their rows of each batch and the order of every sum are those
 * of one process with --devices P*N, so the weights are the same bits.
 * The communicator is the driver's, over the files of one host: the
 * processes must share a host (checked; see Documentation/train.rst).
 * MPI carries the id, the steps' losses for the progress and the final
 * check of the weights; the gradients go through the devices.
 */

/* A process of mpirun that was not told --mpi would train alone. */
static int mpirun_size(void)
{
	static const char *const vars[] = {
		"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE",
	};
	unsigned int i;

	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);

		if (v && atoi(v) > 1)
			return atoi(v);
	}
	return 1;
}

#ifdef SNPU_TRAIN_MPI
/* Leave the job with @status, every process alike (they decide alike). */
static void __attribute__((noreturn)) job_exit(int status)
{
	fflush(NULL);
	MPI_Finalize();
	exit(status);
}

static void job_start(int *argc, char ***argv, struct opts *o)
{
	MPI_Comm node;
	int hostsize;

	if (MPI_Init(argc, argv) != MPI_SUCCESS) {
		fprintf(stderr, "snpu-train: --mpi: MPI_Init failed\n");
		exit(1);
	}
	job.mpi = true;
	MPI_Comm_rank(MPI_COMM_WORLD, &job.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &job.size);
	/* The processes that share this one's memory: its host's. */
	if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
				MPI_INFO_NULL, &node) != MPI_SUCCESS)
		die("--mpi: MPI_Comm_split_type", EPROTO);
	MPI_Comm_size(node, &hostsize);
	MPI_Comm_free(&node);
	/* Every process sees the same sizes and options: all stop alike. */
	if (hostsize != job.size) {
		if (!job.rank)
			fprintf(stderr, "snpu-train: --mpi: the %d processes "
				"are not on one host: the gradients' all-reduce "
				"is a communicator of one host's devices\n",
				job.size);
		job_exit(2);
	}
	if ((uint64_t)o->devices * job.size > DP_MAX ||
	    o->c.batch % (o->devices * job.size)) {
		if (!job.rank)
			fprintf(stderr, "snpu-train: --mpi: %d processes of %u "
				"devices make %u ranks: at most %u, dividing "
				"the batch (%u)\n", job.size, o->devices,
				o->devices * job.size, DP_MAX, o->c.batch);
		job_exit(2);
	}
}

/* Rank 0's communicator id, to every process. */
static void job_bcast_id(struct snpu_comm_unique_id *id)
{
	if (MPI_Bcast(id, sizeof(*id), MPI_BYTE, 0, MPI_COMM_WORLD) !=
	    MPI_SUCCESS)
		die("--mpi: MPI_Bcast", EPROTO);
}

/* The (loss, right) pairs of every rank, in rank order, to process 0. */
static void job_gather(const double *mine, unsigned int n, double *all)
{
	if (!job.mpi) {
		memcpy(all, mine, 2 * n * sizeof(*all));
		return;
	}
	if (MPI_Gather(mine, 2 * (int)n, MPI_DOUBLE, all, 2 * (int)n,
		       MPI_DOUBLE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
		die("--mpi: MPI_Gather", EPROTO);
}

/* Whether every process's @w is process 0's, bit for bit. */
static bool job_same_weights(const struct mlp_cfg *c,
			     const struct mlp_params *w)
{
	float *const a[4] = { w->w1, w->b1, w->w2, w->b2 };
	const uint64_t n[4] = { (uint64_t)c->in * c->hid, c->hid,
				(uint64_t)c->hid * c->out, c->out };
	int same = 1, all = 0;
	unsigned int i;

	for (i = 0; i < 4; i++) {
		float *b = malloc(n[i] * 4);

		if (!b)
			die("memory", -ENOMEM);
		if (!job.rank)
			memcpy(b, a[i], n[i] * 4);
		if (MPI_Bcast(b, (int)n[i], MPI_FLOAT, 0, MPI_COMM_WORLD) !=
		    MPI_SUCCESS)
			die("--mpi: MPI_Bcast", EPROTO);
		same &= !memcmp(b, a[i], n[i] * 4);
		free(b);
	}
	if (MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) !=
	    MPI_SUCCESS)
		die("--mpi: MPI_Allreduce", EPROTO);
	return all;
}
#else
static void __attribute__((noreturn)) job_exit(int status)
{
	exit(status);
}

static void job_start(int *argc, char ***argv, struct opts *o)
{
	(void)argc;
	(void)argv;
	(void)o;
	fprintf(stderr, "snpu-train: --mpi: this snpu-train was built without "
		"Open MPI (pkg-config ompi-c found none): install it "
		"(scripts/deps mpi) and rebuild (make tools)\n");
	exit(2);
}

static void job_bcast_id(struct snpu_comm_unique_id *id)
{
	(void)id;
}

static void job_gather(const double *mine, unsigned int n, double *all)
{
	memcpy(all, mine, 2 * n * sizeof(*all));
}

static bool job_same_weights(const struct mlp_cfg *c,
			     const struct mlp_params *w)
{
	(void)c;
	(void)w;
	return true;
}
#endif

/*
 * ---- --devices N: data-parallel training --------------------------------
 *
 * One thread per device runs that rank's executor; every step, the main
 * thread cuts the batch into N shards of batch / N rows, starts the ranks
 * and waits for them. Each rank's model sums its gradients over the ranks
 * with SNPU_RT2_OP_ALLREDUCE (in rank order, the same bits everywhere) and
 * applies them at rate lr / N: the mean gradient of the whole batch.
 */
struct dp_rank {
	struct dev d;
	struct trainer t;
	struct snpu_comm *comm;
	double loss;
	uint32_t right;
	int err;
	pthread_t thread;
	struct dp *dp;
};

struct dp {
	struct dp_rank r[DP_MAX];
	unsigned int n;			/* ranks of this process */
	unsigned int base, total;	/* its first rank; ranks in all */
	uint32_t rows;			/* per rank */
	pthread_barrier_t go, done;
	bool stop;
};

static void *dp_thread(void *arg)
{
	struct dp_rank *k = arg;

	for (;;) {
		pthread_barrier_wait(&k->dp->go);
		if (k->dp->stop)
			return NULL;
		k->err = trainer_step(&k->t, k->dp->rows, &k->loss, &k->right);
		if (k->err)
			die("data-parallel step", k->err);
		pthread_barrier_wait(&k->dp->done);
	}
}

static void dp_init(struct dp *dp, const struct opts *o,
		    const struct mlp_params *p)
{
	struct snpu_rt2_exec_opts eo = {
		.flags = (o->threads ? SNPU_RT2_EXEC_THREADS : 0) |
			 (o->graph ? SNPU_RT2_EXEC_GRAPH : 0),
	};
	struct snpu_device *devs[DP_MAX];
	struct snpu_comm *comms[DP_MAX];
	struct mlp_cfg c = o->c;
	unsigned int r;
	int ret;

	dp->n = o->devices;
	dp->base = (unsigned int)job.rank * dp->n;
	dp->total = dp->n * (unsigned int)job.size;
	dp->rows = c.batch = o->c.batch / dp->total;
	for (r = 0; r < dp->n; r++) {
		struct dev *d = &dp->r[r].d;

		ret = snpu_open(dp->base + r, 0, &d->dev);
		if (!ret)
			ret = snpu_get_info(d->dev, &d->info);
		if (!ret)
			ret = snpu_rt2_dev_open(d->dev, 0, &d->rd);
		if (ret)
			die("open a device of --devices", ret);
		devs[r] = d->dev;
	}
	if (job.mpi) {
		struct snpu_comm_unique_id id = { 0 };

		/* Rank 0 draws the id; every process joins its files. */
		if (!job.rank) {
			ret = snpu_comm_get_unique_id(devs[0], &id);
			if (ret)
				die("communicator id", ret);
		}
		job_bcast_id(&id);
		for (r = 0; r < dp->n; r++) {
			ret = snpu_comm_init_rank(devs[r], &id, dp->total,
						  dp->base + r, &comms[r]);
			if (ret)
				die("join the communicator", ret);
		}
	} else {
		ret = snpu_comm_init_all(devs, dp->n, comms);
		if (ret)
			die("communicator", ret);
	}
	for (r = 0; r < dp->n; r++) {
		struct dp_rank *k = &dp->r[r];
		struct trainer *t = &k->t;

		k->comm = comms[r];
		k->dp = dp;
		ret = mlp_rt2_build_dp(&t->net, &c, p, c.batch, true,
				       dp->total);
		if (ret)
			die("model", ret);
		t->net.info = k->d.info;
		ret = snpu_rt2_exec_create(t->net.m, k->d.rd, &eo, &t->e);
		if (!ret)
			ret = snpu_rt2_exec_set_comm(t->e, k->comm);
		if (!ret)
			ret = snpu_rt2_exec_input(t->e, 0, NULL, (void **)&t->x);
		if (!ret)
			ret = snpu_rt2_exec_input(t->e, 1, NULL, (void **)&t->y);
		if (ret)
			die("executor", ret);
	}
	pthread_barrier_init(&dp->go, NULL, dp->n + 1);
	pthread_barrier_init(&dp->done, NULL, dp->n + 1);
	for (r = 0; r < dp->n; r++)
		if (pthread_create(&dp->r[r].thread, NULL, dp_thread, &dp->r[r]))
			die("thread", -EAGAIN);
}

/* One step on the batch in @x, @y: its mean loss and right count. */
static void dp_step(struct dp *dp, const struct opts *o, const float *x,
		    const int32_t *y, double *loss, uint32_t *right)
{
	double mine[2 * DP_MAX], all[2 * DP_MAX];
	unsigned int r;

	for (r = 0; r < dp->n; r++) {
		struct trainer *t = &dp->r[r].t;
		size_t row = (size_t)(dp->base + r) * dp->rows;

		memcpy(t->x, x + row * o->c.in, (size_t)dp->rows * o->c.in * 4);
		memcpy(t->y, y + row, (size_t)dp->rows * 4);
	}
	pthread_barrier_wait(&dp->go);
	pthread_barrier_wait(&dp->done);
	for (r = 0; r < dp->n; r++) {
		mine[2 * r] = dp->r[r].loss;
		mine[2 * r + 1] = dp->r[r].right;
	}
	/* Every rank's, in rank order (process 0 prints them). */
	job_gather(mine, dp->n, all);
	*loss = 0;
	*right = 0;
	for (r = 0; r < dp->total; r++) {
		*loss += all[2 * r];
		*right += (uint32_t)all[2 * r + 1];
	}
	*loss /= dp->total;
}

/* Read the weights back; every rank must hold the same bits. */
static void dp_fini(struct dp *dp, const struct opts *o, struct mlp_params *w)
{
	struct mlp_params u;
	unsigned int r;

	dp->stop = true;
	pthread_barrier_wait(&dp->go);
	for (r = 0; r < dp->n; r++)
		pthread_join(dp->r[r].thread, NULL);
	if (mlp_params_init(&o->c, &u))
		die("memory", -ENOMEM);
	for (r = 0; r < dp->n; r++) {
		struct dp_rank *k = &dp->r[r];
		int ret = mlp_rt2_read(k->t.e, &k->t.net, &o->c, r ? &u : w);

		if (ret)
			die("read back", ret);
		if (r && !params_equal(&o->c, w, &u)) {
			fprintf(stderr, "snpu-train: rank %u's weights differ "
				"from rank 0's\n", r);
			exit(1);
		}
		trainer_fini(&k->t);
		ret = snpu_comm_destroy(k->comm);
		if (ret)
			die("communicator", ret);
	}
	mlp_params_free(&u);
	if (job.mpi && !job_same_weights(&o->c, w)) {
		if (!job.rank)
			fprintf(stderr, "snpu-train: a process's weights "
				"differ from process 0's\n");
		job_exit(1);
	}
}

/* FNV-1a over the weights' bytes: a short name for their bits. */
static uint64_t params_digest(const struct mlp_cfg *c,
			      const struct mlp_params *w)
{
	const float *const a[4] = { w->w1, w->b1, w->w2, w->b2 };
	const uint64_t n[4] = { (uint64_t)c->in * c->hid, c->hid,
				(uint64_t)c->hid * c->out, c->out };
	uint64_t h = 0xcbf29ce484222325ULL, k;
	unsigned int i;

	for (i = 0; i < 4; i++) {
		const unsigned char *b = (const unsigned char *)a[i];

		for (k = 0; k < n[i] * 4; k++)
			h = (h ^ b[k]) * 0x100000001b3ULL;
	}
	return h;
}

/* The data-parallel CPU reference: mlp_cpu_dp_step() on the same batches. */
static void dp_cpu_train(struct mlp_cpu *m, unsigned int n, struct data *d,
			 const struct opts *o, uint32_t steps)
{
	struct mlp_cfg c = o->c;
	float *x = malloc((size_t)o->c.batch * o->c.in * 4);
	int32_t *y = malloc(o->c.batch * 4);
	unsigned int r;
	uint32_t s;

	c.batch /= n;
	for (r = 0; r < n; r++)
		if (mlp_cpu_init(&m[r], &c))
			die("cpu", -ENOMEM);
	if (!x || !y)
		die("cpu", -ENOMEM);
	for (s = 0; s < steps; s++) {
		batch_of(d, o, s, x, y);
		mlp_cpu_dp_step(m, n, x, y);
	}
	free(x);
	free(y);
}

static int train_dp(struct data *da, const struct opts *o,
		    struct progress *pr, float *curve)
{
	struct mlp_params p, w;
	struct dp *dp = calloc(1, sizeof(*dp));
	float *x = malloc((size_t)o->c.batch * o->c.in * 4);
	int32_t *y = malloc(o->c.batch * 4);
	double t0, t_run = 0, loss = 0, acc, run_loss = 0;
	uint32_t s, right, run_right = 0, run_n = 0;
	bool lead = !job.rank;	/* the process that reports */
	int ret, status = 0;

	if (!dp || !x || !y || mlp_params_init(&o->c, &p) ||
	    mlp_params_init(&o->c, &w))
		die("memory", -ENOMEM);
	dp_init(dp, o, &p);
	if (!lead)
		pr->quiet = true;
	if (!o->quiet && lead) {
		if (job.mpi)
			printf("data-parallel: %d processes of %u devices, %u "
			       "ranks, %u rows each per step\n", job.size,
			       dp->n, dp->total, dp->rows);
		else
			printf("data-parallel: %u devices, %u rows each per "
			       "step\n", dp->n, dp->rows);
	}
	pr->start = pr->last = now_s();
	for (s = 0; s < o->steps; s++) {
		batch_of(da, o, s, x, y);
		t0 = now_s();
		dp_step(dp, o, x, y, &loss, &right);
		t_run += now_s() - t0;
		curve[s] = (float)loss;
		run_loss += loss;
		run_right += right;
		run_n++;
		progress(pr, s + 1, run_loss / run_n,
			 (double)run_right / (run_n * o->c.batch), o->c.batch);
		if (pr->tty || (s + 1) % pr->every == 0)
			run_loss = 0, run_right = 0, run_n = 0;
	}
	dp_fini(dp, o, &w);
	if (!lead)
		goto out;
	if (job.mpi)
		printf("trained %u steps (%u samples) on %u devices of %d "
		       "processes in %.2f s: %.2f steps/s, %.0f samples/s; "
		       "every rank's weights bit-identical\n", o->steps,
		       o->steps * o->c.batch, dp->total, job.size,
		       now_s() - pr->start, o->steps / t_run,
		       o->steps * o->c.batch / t_run);
	else
		printf("trained %u steps (%u samples) on %u devices in %.2f s: "
		       "%.2f steps/s, %.0f samples/s; every rank's weights "
		       "bit-identical\n", o->steps, o->steps * o->c.batch,
		       dp->n, now_s() - pr->start, o->steps / t_run,
		       o->steps * o->c.batch / t_run);
	printf("weights: FNV-1a %016llx of %llu bytes; last step's loss %.6f "
	       "(%a)\n", (unsigned long long)params_digest(&o->c, &w),
	       (unsigned long long)params_bytes(&o->c), loss, loss);
	ret = evaluate(&dp->r[0].d, da, o, &w, &acc);
	if (ret)
		die("evaluate", ret);
	printf("test accuracy: %.2f%% (%u images)\n", 100 * acc, da->ntest);
	write_svg(o->svg, curve, o->steps, o, acc);
	if (o->compare_cpu) {
		struct mlp_cpu m[DP_MAX], one;
		unsigned int r;

		dp_cpu_train(m, dp->total, da, o, o->steps);
		if (params_equal(&o->c, &w, &m[0].p)) {
			printf("data-parallel CPU reference: weights "
			       "bit-identical (%llu bytes compared)\n",
			       (unsigned long long)params_bytes(&o->c));
		} else {
			printf("data-parallel CPU reference: weights DIFFER "
			       "(max relative difference %.3g)\n",
			       (double)params_diff(&o->c, &w, &m[0].p));
			status = 1;
		}
		cpu_train(&one, da, o, o->steps, NULL);
		printf("one device on the whole batch (CPU reference): max "
		       "relative difference of the weights %.3g\n",
		       (double)params_diff(&o->c, &w, &one.p));
		for (r = 0; r < dp->total; r++)
			mlp_cpu_free(&m[r]);
		mlp_cpu_free(&one);
	}
out:
	for (ret = 0; ret < (int)dp->n; ret++) {
		snpu_rt2_dev_close(dp->r[ret].d.rd);
		snpu_close(dp->r[ret].d.dev);
	}
	mlp_params_free(&p);
	mlp_params_free(&w);
	free(dp);
	free(x);
	free(y);
	return status;
}

int main(int argc, char **argv)
{
	struct snpu_rt2_exec_stats st;
	struct progress pr = { 0 };
	struct mlp_params p, w;
	struct trainer t;
	struct data da = { 0 };
	struct dev d = { 0 };
	struct opts o;
	double t0, t_data = 0, t_run = 0, t_total, loss, acc = 0, ck = 0;
	double run_loss = 0, eval_s;
	uint32_t s, right, run_right = 0, run_n = 0;
	float *curve;
	int ret, status = 0;

	parse(argc, argv, &o);
	if (o.mpi) {
		job_start(&argc, &argv, &o);
	} else if (mpirun_size() > 1) {
		fprintf(stderr, "snpu-train: one of %d processes of mpirun: "
			"give --mpi to train as one job (else each trains "
			"alone)\n", mpirun_size());
		exit(2);
	}
	load(&da, &o);
	if (!o.quiet && !job.rank)
		printf("snpu-train: MLP %u-%u-%u, batch %u, lr %g, seed %llu; "
		       "%u training images (%u steps), %u test images; "
		       "data loaded in %.2f s\n", o.c.in, o.c.hid, o.c.out,
		       o.c.batch, (double)o.c.lr, (unsigned long long)o.c.seed,
		       da.ntrain, o.steps, da.ntest, da.load_s);
	curve = calloc(o.steps + 1, sizeof(*curve));
	if (!curve || mlp_params_init(&o.c, &p) || mlp_params_init(&o.c, &w))
		die("memory", -ENOMEM);
	pr.tty = isatty(1) && !o.plain;
	pr.quiet = o.quiet;
	pr.steps = o.steps;
	pr.every = o.steps / 20 ? o.steps / 20 : 1;

	if (o.devices > 1 || o.mpi) {
		status = train_dp(&da, &o, &pr, curve);
		free(curve);
		mlp_params_free(&p);
		mlp_params_free(&w);
		if (job.mpi)
			job_exit(status);
		return status;
	}
	if (o.cpu_only) {
		struct mlp_cpu m;
		float *x = malloc((size_t)o.c.batch * o.c.in * 4);
		int32_t *y = malloc(o.c.batch * 4);

		if (!x || !y || mlp_cpu_init(&m, &o.c))
			die("cpu", -ENOMEM);
		pr.start = now_s();
		for (s = 0; s < o.steps; s++) {
			batch_of(&da, &o, s, x, y);
			curve[s] = (float)mlp_cpu_step(&m, x, y);
			progress(&pr, s + 1, curve[s], 0, o.c.batch);
		}
		t_total = now_s() - pr.start;
		acc = evaluate_cpu(&m, &da);
		printf("CPU reference: %u steps in %.2f s (%.2f steps/s), "
		       "test accuracy %.2f%%\n", o.steps, t_total,
		       o.steps / t_total, 100 * acc);
		write_svg(o.svg, curve, o.steps, &o, acc);
		return 0;
	}

	ret = snpu_open(o.dev, 0, &d.dev);
	if (!ret)
		ret = snpu_get_info(d.dev, &d.info);
	if (ret)
		die("open", ret);
	ret = snpu_rt2_dev_open(d.dev, 0, &d.rd);
	if (ret)
		die("rt2 device", ret);
	ret = trainer_init(&t, &d, &o, &p, o.graph);
	if (ret)
		die("executor", ret);

	pr.start = pr.last = now_s();
	for (s = 0; s < o.steps; s++) {
		t0 = now_s();
		batch_of(&da, &o, s, t.x, t.y);
		t_data += now_s() - t0;
		t0 = now_s();
		ret = trainer_step(&t, o.c.batch, &loss, &right);
		t_run += now_s() - t0;
		if (ret)
			die("step", ret);
		curve[s] = (float)loss;
		run_loss += loss;
		run_right += right;
		run_n++;
		progress(&pr, s + 1, run_loss / run_n,
			 (double)run_right / (run_n * o.c.batch), o.c.batch);
		if (pr.tty || (s + 1) % pr.every == 0)
			run_loss = 0, run_right = 0, run_n = 0;
		if (o.checkpoint_at >= 0 && s + 1 == (uint32_t)o.checkpoint_at) {
			ret = checkpoint(&d, &o, &ck);
			if (ret)
				die("checkpoint", ret);
		}
	}
	t_total = now_s() - pr.start;
	ret = snpu_rt2_exec_stats(t.e, &st);
	if (!ret)
		ret = mlp_rt2_read(t.e, &t.net, &o.c, &w);
	if (ret)
		die("read back", ret);
	trainer_fini(&t);

	t0 = now_s();
	ret = evaluate(&d, &da, &o, &w, &acc);
	if (ret)
		die("evaluate", ret);
	eval_s = now_s() - t0;

	{
		double h2d = st.h2d_ns * 1e-9, comp = st.compute_ns * 1e-9;
		double d2h = st.d2h_ns * 1e-9;
		double over = t_run - h2d - comp - d2h;

		if (over < 0)
			over = 0;
		printf("trained %u steps (%u samples) in %.2f s: %.2f steps/s, "
		       "%.0f samples/s\n", o.steps, o.steps * o.c.batch,
		       t_total, o.steps / t_run, o.steps * o.c.batch / t_run);
		/* As --devices does: what a resumed job must end with. */
		printf("weights: FNV-1a %016llx of %llu bytes; last step's "
		       "loss %.6f (%a)\n",
		       (unsigned long long)params_digest(&o.c, &w),
		       (unsigned long long)params_bytes(&o.c), loss, loss);
		printf("test accuracy: %.2f%% (%u images, evaluated in %.2f s)\n",
		       100 * acc, da.ntest, eval_s);
		printf("time split of training: data %.2f s (+ %.2f s loading), "
		       "H2D %.2f s, device compute %.2f s, D2H %.2f s, "
		       "runtime overhead %.2f s (%.1f%%)\n", t_data, da.load_s,
		       h2d, comp, d2h, over, 100 * over / t_run);
		printf("queue entries: %llu for %llu runs (%llu graph captures, "
		       "%llu graph launches, %llu fallbacks)\n",
		       (unsigned long long)st.entries,
		       (unsigned long long)st.runs,
		       (unsigned long long)st.graph_captures,
		       (unsigned long long)st.graph_launches,
		       (unsigned long long)st.graph_fallbacks);
	}
	write_svg(o.svg, curve, o.steps, &o, acc);
	if (o.svg && strcmp(o.svg, "-") && !o.quiet)
		printf("loss curve: %s\n", o.svg);

	if (o.checkpoint_at >= 0) {
		struct mlp_params u;
		double secs;

		if (mlp_params_init(&o.c, &u))
			die("memory", -ENOMEM);
		device_train_plain(&d, &da, &o, o.steps, o.graph, &u, &secs,
				   NULL);
		if (params_equal(&o.c, &w, &u)) {
			printf("checkpoint: weights bit-identical to an "
			       "uninterrupted run (%llu bytes compared)\n",
			       (unsigned long long)params_bytes(&o.c));
		} else {
			printf("checkpoint: weights DIFFER from an uninterrupted "
			       "run (max relative difference %g)\n",
			       (double)params_diff(&o.c, &w, &u));
			status = 1;
		}
		mlp_params_free(&u);
	}
	if (o.compare_cpu) {
		struct mlp_cpu m;
		float diff;

		cpu_train(&m, &da, &o, o.steps, NULL);
		if (params_equal(&o.c, &w, &m.p)) {
			printf("CPU reference: weights bit-identical (%llu bytes "
			       "compared)\n",
			       (unsigned long long)params_bytes(&o.c));
		} else {
			diff = params_diff(&o.c, &w, &m.p);
			printf("CPU reference: weights DIFFER (max relative "
			       "difference %.3g)\n", (double)diff);
			status = 1;
		}
		mlp_cpu_free(&m);
	}
	if (o.bench)
		bench(&d, &da, &o);
	(void)ck;
	mlp_params_free(&p);
	mlp_params_free(&w);
	free(curve);
	snpu_rt2_dev_close(d.rd);
	snpu_close(d.dev);
	return status;
}
