// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * snpu-bench-snapshot: the cost of a process snapshot, each figure beside
 * a baseline measured in the same run.
 *
 *   snpu-bench-snapshot [-d N] [-r ROUNDS] [-l LOCKS] [-s MIB[,MIB...]]
 *
 * copy: for each size (default 16, 64 and 256 MiB of device memory, in
 *       allocations of at most 16 MiB filled with a pattern), ROUNDS
 *       snapshots (lock, backup, restore, unlock); the backup and the
 *       restore are timed: GB/s of the median round. Beside them, memcpy(3) of the same number of bytes
 *       between two user buffers, into a destination already faulted in
 *       ("warm") and into a fresh one ("cold", what a backup does: its
 *       image is a new shmem file each time); write(2) of them into a new
 *       memfd ("memfd": the shmem path of the image, from user space);
 *       and the ratios of backup and restore to the warm memcpy.
 * lock: latency of snpu_snapshot_lock() (one SNAPSHOT_STATE check and
 *       SNAPSHOT_LOCK) of an idle process and of a busy one (a second
 *       thread submits kernel launches without pause, synchronizing every
 *       32), median, 90th percentile and maximum of LOCKS locks; and of
 *       snpu_snapshot_unlock().
 * checkpoint: snpu_bg_checkpoint() of a running process (two loads and a
 *       compare: no system call), beside an empty call through a function
 *       pointer and SNPU_IOC_NOP (the cheapest ioctl).
 * file: for each size, ROUNDS checkpoints of a locked process into a file
 *       in DIR (-t, default /tmp, tmpfs in the VM) with
 *       snpu_ckpt_checkpoint(), and restores of that file into a fresh
 *       file of the device with snpu_ckpt_restore() (after the original
 *       closed); beside them, cp(1) of the image to another file of DIR,
 *       in the same run: GB/s of the device bytes, medians, and the ratios.
 *
 * Device memory must hold the largest size: load the module with
 * mem_mb=1024 and give the VM 2 GiB (make bench does).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "snpu.h"
#include "bench.h"

#define MIB		(1ULL << 20)
#define CHUNK		(16 * MIB)
#define MAX_SIZES	8
#define MAX_CHUNKS	1024
#define BUSY_BYTES	(64 * 1024)

/* The @pct-th percentile of sorted @v. */
static uint64_t pctl(const uint64_t *v, unsigned int n, unsigned int pct)
{
	unsigned int i = (n * pct + 99) / 100;

	return v[i ? i - 1 : 0];
}

static void die(const char *what, int err)
{
	fprintf(stderr, "snpu-bench-snapshot: %s: %s\n", what, strerror(-err));
	exit(1);
}

static double gbps(uint64_t bytes, uint64_t ns)
{
	return ns ? (double)bytes / (double)ns : 0;
}

/* ---- memcpy baseline ----------------------------------------------------- */

static void *map_anon(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Median ns of memcpy(3) of @bytes; @cold: into a fresh mapping each time. */
static uint64_t memcpy_ns(size_t bytes, unsigned int rounds, int cold)
{
	uint64_t *t = calloc(rounds, sizeof(*t)), med;
	unsigned char *src = map_anon(bytes), *dst = NULL;
	unsigned int r;

	if (!t || !src)
		die("memcpy buffers", -ENOMEM);
	memset(src, 0x5a, bytes);
	if (!cold) {
		dst = map_anon(bytes);
		if (!dst)
			die("memcpy buffers", -ENOMEM);
		memset(dst, 0, bytes);
	}
	for (r = 0; r < rounds; r++) {
		uint64_t t0;

		if (cold) {
			dst = map_anon(bytes);
			if (!dst)
				die("memcpy buffers", -ENOMEM);
		}
		t0 = now_ns();
		memcpy(dst, src, bytes);
		t[r] = now_ns() - t0;
		/* Keep the copy: read one byte of it. */
		if (((volatile unsigned char *)dst)[bytes - 1] != 0x5a)
			die("memcpy check", -EIO);
		if (cold)
			munmap(dst, bytes);
	}
	if (!cold)
		munmap(dst, bytes);
	munmap(src, bytes);
	med = median(t, rounds);
	free(t);
	return med;
}

/*
 * Median ns of write(2) of @bytes into a new memfd: the shmem path a
 * backup's image takes, from user space.
 */
static uint64_t memfd_ns(size_t bytes, unsigned int rounds)
{
	uint64_t *t = calloc(rounds, sizeof(*t)), med;
	unsigned char *src = map_anon(bytes);
	unsigned int r;

	if (!t || !src)
		die("memfd buffers", -ENOMEM);
	memset(src, 0x5a, bytes);
	for (r = 0; r < rounds; r++) {
		int fd = memfd_create("snpu-bench", MFD_CLOEXEC);
		size_t done = 0;
		uint64_t t0;
		ssize_t n;

		if (fd < 0)
			die("memfd_create", -errno);
		t0 = now_ns();
		while (done < bytes) {
			n = write(fd, src + done, bytes - done);
			if (n <= 0)
				die("memfd write", n < 0 ? -errno : -EIO);
			done += n;
		}
		t[r] = now_ns() - t0;
		close(fd);
	}
	munmap(src, bytes);
	med = median(t, rounds);
	free(t);
	return med;
}

/* ---- backup and restore ---------------------------------------------------- */

struct copy_result {
	uint64_t bytes, image;
	uint64_t backup_ns, restore_ns;
	uint64_t memcpy_warm_ns, memcpy_cold_ns, memfd_ns;
};

static void copy_size(unsigned int index, uint64_t bytes, unsigned int rounds,
		      struct copy_result *res)
{
	uint64_t *tb = calloc(rounds, sizeof(*tb));
	uint64_t *tr = calloc(rounds, sizeof(*tr));
	uint64_t addr[MAX_CHUNKS], done, n;
	struct snpu_device *dev;
	unsigned int i = 0, r;
	int ret;

	if (!tb || !tr)
		die("calloc", -ENOMEM);
	memset(res, 0, sizeof(*res));
	res->bytes = bytes;
	/* The baselines first, while device memory is not held. */
	res->memcpy_warm_ns = memcpy_ns(bytes, rounds, 0);
	res->memcpy_cold_ns = memcpy_ns(bytes, rounds, 1);
	res->memfd_ns = memfd_ns(bytes, rounds);

	ret = snpu_open(index, 0, &dev);
	if (ret)
		die("snpu_open", ret);
	for (done = 0; done < bytes; done += n, i++) {
		n = bytes - done < CHUNK ? bytes - done : CHUNK;
		if (i == MAX_CHUNKS)
			die("size", -E2BIG);
		ret = snpu_mem_alloc(dev, n, 0, 0, &addr[i]);
		if (ret)
			die("snpu_mem_alloc (load the module with mem_mb=1024)",
			    ret);
		ret = snpu_memset(dev, addr[i], 0x3c + (i & 0x3f), n);
		if (ret)
			die("snpu_memset", ret);
	}
	/*
	 * A whole snapshot per round: the backup starts without an image
	 * (a second backup would also free the first one's pages), and the
	 * unlock, which drops the image, is not timed.
	 */
	for (r = 0; r < rounds; r++) {
		uint64_t t0;

		ret = snpu_snapshot_lock(&dev, 1, -1);
		if (ret)
			die("snpu_snapshot_lock", ret);
		t0 = now_ns();
		ret = snpu_snapshot_backup(&dev, 1, &res->image);
		tb[r] = now_ns() - t0;
		if (ret)
			die("snpu_snapshot_backup", ret);
		t0 = now_ns();
		ret = snpu_snapshot_restore(&dev, 1);
		tr[r] = now_ns() - t0;
		if (ret)
			die("snpu_snapshot_restore", ret);
		ret = snpu_snapshot_unlock(&dev, 1);
		if (ret)
			die("snpu_snapshot_unlock", ret);
	}
	snpu_close(dev);
	res->backup_ns = median(tb, rounds);
	res->restore_ns = median(tr, rounds);
	free(tb);
	free(tr);
}

/* ---- checkpoint to a file and restore ------------------------------------ */

struct file_result {
	uint64_t image;
	uint64_t ckpt_ns, restore_ns, cp_ns;
};

/* Allocate @bytes of device memory in @dev, filled with a pattern. */
static void fill_device(struct snpu_device *dev, uint64_t bytes)
{
	uint64_t addr, done, n;
	unsigned int i = 0;
	int ret;

	for (done = 0; done < bytes; done += n, i++) {
		n = bytes - done < CHUNK ? bytes - done : CHUNK;
		ret = snpu_mem_alloc(dev, n, 0, 0, &addr);
		if (ret)
			die("snpu_mem_alloc (load the module with mem_mb=1024)",
			    ret);
		ret = snpu_memset(dev, addr, 0x3c + (i & 0x3f), n);
		if (ret)
			die("snpu_memset", ret);
	}
}

static void file_size(unsigned int index, uint64_t bytes, unsigned int rounds,
		      const char *dir, struct file_result *res)
{
	uint64_t *tc = calloc(rounds, sizeof(*tc));
	uint64_t *tr = calloc(rounds, sizeof(*tr));
	uint64_t *tp = calloc(rounds, sizeof(*tp));
	char path[256], copy[256], cmd[600];
	struct snpu_device *dev;
	unsigned int r;
	uint64_t t0;
	int fd, ret;

	if (!tc || !tr || !tp)
		die("calloc", -ENOMEM);
	snprintf(path, sizeof(path), "%s/snpu-bench.img", dir);
	snprintf(copy, sizeof(copy), "%s/snpu-bench-cp.img", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s", path, copy);
	memset(res, 0, sizeof(*res));
	for (r = 0; r < rounds; r++) {
		ret = snpu_open(index, 0, &dev);
		if (ret)
			die("snpu_open", ret);
		fill_device(dev, bytes);
		unlink(path);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0)
			die(path, -errno);
		ret = snpu_ckpt_lock(dev, 0, -1);
		if (ret)
			die("snpu_ckpt_lock", ret);
		t0 = now_ns();
		ret = snpu_ckpt_checkpoint(dev, 0, fd, &res->image);
		tc[r] = now_ns() - t0;
		if (ret)
			die("snpu_ckpt_checkpoint", ret);
		close(fd);
		/* The process's files go: the restore takes their addresses. */
		snpu_close(dev);

		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			die(path, -errno);
		ret = snpu_open(index, 0, &dev);
		if (ret)
			die("snpu_open", ret);
		t0 = now_ns();
		ret = snpu_ckpt_restore(dev, fd, 0, NULL);
		tr[r] = now_ns() - t0;
		if (ret)
			die("snpu_ckpt_restore", ret);
		snpu_close(dev);
		close(fd);

		/* cp(1) of the same image, in the same directory. */
		unlink(copy);
		t0 = now_ns();
		ret = system(cmd);
		tp[r] = now_ns() - t0;
		if (ret)
			die("cp", -EIO);
	}
	unlink(copy);
	unlink(path);
	res->ckpt_ns = median(tc, rounds);
	res->restore_ns = median(tr, rounds);
	res->cp_ns = median(tp, rounds);
	free(tc);
	free(tr);
	free(tp);
}

/* ---- lock latency -------------------------------------------------------- */

struct busy {
	pthread_t th;
	struct snpu_device *dev;
	uint32_t stream;
	uint64_t buf;
	atomic_int stop;
	uint64_t launches;
	int err;
};

/* Launch a FILL of 64 KiB in 4 blocks without pause; sync every 32. */
static void *busy_fn(void *p)
{
	struct busy *b = p;
	struct snpu_kernel_arg args[2] = {
		snpu_arg_buf(b->buf, BUSY_BYTES), snpu_arg_u64(0x01010101),
	};
	int ret;

	while (!atomic_load(&b->stop)) {
		ret = snpu_launch(b->dev, b->stream, SNPU_KERNEL_FILL, 4,
				  args, 2);
		if (ret) {
			b->err = ret;
			break;
		}
		if (!(++b->launches % 32)) {
			ret = snpu_stream_synchronize(b->dev, b->stream, -1);
			if (ret) {
				b->err = ret;
				break;
			}
		}
	}
	return NULL;
}

struct lat {
	uint64_t med, p90, max;
};

static void lat_of(uint64_t *v, unsigned int n, struct lat *l)
{
	l->med = median(v, n);
	l->p90 = pctl(v, n, 90);
	l->max = v[n - 1];
}

static void lock_latency(struct snpu_device *dev, unsigned int locks,
			 struct lat *lock, struct lat *unlock)
{
	uint64_t *tl = calloc(locks, sizeof(*tl));
	uint64_t *tu = calloc(locks, sizeof(*tu));
	unsigned int i;
	int ret;

	if (!tl || !tu)
		die("calloc", -ENOMEM);
	for (i = 0; i < locks; i++) {
		uint64_t t0 = now_ns();

		ret = snpu_snapshot_lock(&dev, 1, -1);
		tl[i] = now_ns() - t0;
		if (ret)
			die("snpu_snapshot_lock", ret);
		t0 = now_ns();
		ret = snpu_snapshot_unlock(&dev, 1);
		tu[i] = now_ns() - t0;
		if (ret)
			die("snpu_snapshot_unlock", ret);
		/* Let a busy process run between locks. */
		usleep(2000);
	}
	lat_of(tl, locks, lock);
	lat_of(tu, locks, unlock);
	free(tl);
	free(tu);
}

/* ---- checkpoint ---------------------------------------------------------- */

static int empty_fn(struct snpu_device *dev)
{
	return 0;
}

/* ns per call of @fn over @n calls (a function pointer: no inlining). */
static double per_call(int (*volatile fn)(struct snpu_device *),
		       struct snpu_device *dev, uint64_t n)
{
	uint64_t i, t0 = now_ns();
	int acc = 0;

	for (i = 0; i < n; i++)
		acc |= fn(dev);
	if (acc)
		die("checkpoint", acc < 0 ? acc : -EIO);
	return (double)(now_ns() - t0) / (double)n;
}

static int nop_fn(struct snpu_device *dev)
{
	return snpu_nop(dev);
}

static void checkpoint_cost(struct snpu_device *dev, unsigned int rounds)
{
	uint64_t n = 2000000, nn = 20000;
	double c[3][16];
	unsigned int r, k;
	int ret;

	if (rounds > 16)
		rounds = 16;
	ret = snpu_bg_register(dev);
	if (ret)
		die("snpu_bg_register", ret);
	/* The first checkpoint maps the state page. */
	ret = snpu_bg_checkpoint(dev);
	if (ret)
		die("snpu_bg_checkpoint", ret);
	for (r = 0; r < rounds; r++) {
		c[0][r] = per_call(snpu_bg_checkpoint, dev, n);
		c[1][r] = per_call(empty_fn, dev, n);
		c[2][r] = per_call(nop_fn, dev, nn);
	}
	ret = snpu_bg_unregister(dev);
	if (ret)
		die("snpu_bg_unregister", ret);
	/* Median per kind (sort doubles by hand: few of them). */
	for (k = 0; k < 3; k++) {
		unsigned int i, j;

		for (i = 1; i < rounds; i++)
			for (j = i; j && c[k][j - 1] > c[k][j]; j--) {
				double x = c[k][j];

				c[k][j] = c[k][j - 1];
				c[k][j - 1] = x;
			}
	}
	printf("checkpoint (running), ns per call, median of %u rounds:\n",
	       rounds);
	printf("  snpu_bg_checkpoint    %8.2f\n", c[0][rounds / 2]);
	printf("  empty call            %8.2f\n", c[1][rounds / 2]);
	printf("  SNPU_IOC_NOP          %8.2f\n", c[2][rounds / 2]);
}

/* ---- main ------------------------------------------------------------------ */

static unsigned int parse_sizes(char *s, uint64_t *mib)
{
	unsigned int n = 0;
	char *tok;

	for (tok = strtok(s, ","); tok && n < MAX_SIZES;
	     tok = strtok(NULL, ","))
		mib[n++] = strtoull(tok, NULL, 0);
	return n;
}

int main(int argc, char **argv)
{
	uint64_t mib[MAX_SIZES] = { 16, 64, 256 };
	unsigned int nsizes = 3, rounds = 5, locks = 51, index = 0, i;
	const char *dir = "/tmp";
	struct lat idle_l, idle_u, busy_l, busy_u;
	struct snpu_device *dev;
	struct busy b;
	int opt, ret;

	while ((opt = getopt(argc, argv, "d:r:l:s:t:h")) != -1) {
		switch (opt) {
		case 'd':
			index = strtoul(optarg, NULL, 0);
			break;
		case 'r':
			rounds = strtoul(optarg, NULL, 0);
			break;
		case 'l':
			locks = strtoul(optarg, NULL, 0);
			break;
		case 's':
			nsizes = parse_sizes(optarg, mib);
			break;
		case 't':
			dir = optarg;
			break;
		default:
			fprintf(stderr,
				"usage: %s [-d N] [-r ROUNDS] [-l LOCKS] [-s MIB,...] [-t DIR]\n",
				argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (!rounds || !locks || !nsizes)
		die("arguments", -EINVAL);

	printf("backup and restore, GB/s (1e9 bytes/s), median of %u rounds:\n",
	       rounds);
	printf("  %6s %10s %7s %7s %8s %8s %7s %6s %6s\n", "MiB", "image",
	       "backup", "restore", "memcpy-w", "memcpy-c", "memfd", "bk/mc",
	       "rs/mc");
	for (i = 0; i < nsizes; i++) {
		struct copy_result r;
		double mc;

		copy_size(index, mib[i] * MIB, rounds, &r);
		mc = gbps(r.bytes, r.memcpy_warm_ns);
		printf("  %6llu %10llu %7.2f %7.2f %8.2f %8.2f %7.2f %6.2f %6.2f\n",
		       (unsigned long long)mib[i],
		       (unsigned long long)r.image,
		       gbps(r.bytes, r.backup_ns), gbps(r.bytes, r.restore_ns),
		       mc, gbps(r.bytes, r.memcpy_cold_ns),
		       gbps(r.bytes, r.memfd_ns),
		       gbps(r.bytes, r.backup_ns) / mc,
		       gbps(r.bytes, r.restore_ns) / mc);
		fflush(stdout);
	}

	printf("checkpoint to a file in %s and restore, GB/s of device memory, "
	       "median of %u rounds:\n", dir, rounds);
	printf("  %6s %10s %7s %7s %7s %6s %6s\n", "MiB", "image", "ckpt",
	       "restore", "cp", "ck/cp", "rs/cp");
	for (i = 0; i < nsizes; i++) {
		struct file_result f;
		uint64_t bytes = mib[i] * MIB;
		double cp;

		file_size(index, bytes, rounds, dir, &f);
		/* cp copies the whole image: its rate in the image's bytes. */
		cp = gbps(f.image, f.cp_ns);
		printf("  %6llu %10llu %7.2f %7.2f %7.2f %6.2f %6.2f\n",
		       (unsigned long long)mib[i], (unsigned long long)f.image,
		       gbps(bytes, f.ckpt_ns), gbps(bytes, f.restore_ns), cp,
		       gbps(bytes, f.ckpt_ns) / cp,
		       gbps(bytes, f.restore_ns) / cp);
		fflush(stdout);
	}

	ret = snpu_open(index, 0, &dev);
	if (ret)
		die("snpu_open", ret);
	lock_latency(dev, locks, &idle_l, &idle_u);

	memset(&b, 0, sizeof(b));
	b.dev = dev;
	ret = snpu_stream_create(dev, SNPU_PRIO_NORMAL, 0, &b.stream);
	if (!ret)
		ret = snpu_mem_alloc(dev, BUSY_BYTES, 0, 0, &b.buf);
	if (ret)
		die("busy setup", ret);
	ret = pthread_create(&b.th, NULL, busy_fn, &b);
	if (ret)
		die("pthread_create", -ret);
	usleep(20000);
	lock_latency(dev, locks, &busy_l, &busy_u);
	atomic_store(&b.stop, 1);
	pthread_join(b.th, NULL);
	if (b.err)
		die("busy thread", b.err);

	printf("lock latency, us, %u locks (median / p90 / max):\n", locks);
	printf("  idle  lock   %9.1f %9.1f %9.1f\n", idle_l.med / 1e3,
	       idle_l.p90 / 1e3, idle_l.max / 1e3);
	printf("  idle  unlock %9.1f %9.1f %9.1f\n", idle_u.med / 1e3,
	       idle_u.p90 / 1e3, idle_u.max / 1e3);
	printf("  busy  lock   %9.1f %9.1f %9.1f\n", busy_l.med / 1e3,
	       busy_l.p90 / 1e3, busy_l.max / 1e3);
	printf("  busy  unlock %9.1f %9.1f %9.1f\n", busy_u.med / 1e3,
	       busy_u.p90 / 1e3, busy_u.max / 1e3);
	printf("  (busy: %llu launches of FILL 64 KiB x4 blocks meanwhile)\n",
	       (unsigned long long)b.launches);

	checkpoint_cost(dev, rounds < 5 ? 5 : rounds);
	snpu_close(dev);
	return 0;
}
