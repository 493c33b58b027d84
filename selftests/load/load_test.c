// SPDX-License-Identifier: GPL-2.0
/*
 * snpu module load and unload: parameters, device nodes, sysfs, refusal of
 * bad parameters, unload with open files, and the .modinfo of snpu.ko.
 *
 * Runs as root in the test VM with the module not loaded. The module file
 * is $SNPU_KO, by default /opt/snpu/snpu.ko.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/snpu.h>

#include "kselftest_harness.h"
#include "snpu_test.h"

#define SNPU_KO_DEFAULT		"/opt/snpu/snpu.ko"
#define SNPU_SYSMOD		"/sys/module/snpu"
#define SNPU_SYSPARM		"/sys/module/snpu/parameters/"
#define SNPU_MISC		"/sys/class/misc/"
#define MAX_FDS			8

static const char *snpu_ko(void)
{
	const char *ko = getenv("SNPU_KO");

	return ko && *ko ? ko : SNPU_KO_DEFAULT;
}

static bool path_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

static bool is_chardev(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

static bool module_loaded(void)
{
	return path_exists(SNPU_SYSMOD);
}

/* Load snpu.ko with @params. Return: 0 or -errno of finit_module. */
static int module_load(const char *params)
{
	int fd, ret, err;

	fd = open(snpu_ko(), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(__NR_finit_module, fd, params, 0);
	err = errno;
	close(fd);
	return ret ? -err : 0;
}

/* Return: 0 or -errno of delete_module. */
static int module_unload(void)
{
	if (syscall(__NR_delete_module, "snpu", O_NONBLOCK))
		return -errno;
	return 0;
}

/*
 * Read a one-line file into @buf without its trailing newline.
 * Return: 0 or -errno; @buf is always a string.
 */
static int read_line(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd, err;

	buf[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	err = errno;
	close(fd);
	if (n < 0)
		return -err;
	buf[n] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return 0;
}

/* Assert that the file @path reads exactly @want (plus a newline). */
#define ASSERT_FILE(path, want) do {					\
	char __line[64];						\
									\
	ASSERT_EQ(0, read_line(path, __line, sizeof(__line)))		\
		TH_LOG("cannot read %s", path);				\
	ASSERT_STREQ(want, __line)					\
		TH_LOG("unexpected contents of %s", path);		\
} while (0)

/*
 * The kernel log from a point on: kmsg_open() opens /dev/kmsg positioned
 * after the last record, kmsg_find() reads the records logged since.
 */
static int kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (lseek(fd, 0, SEEK_END) < 0) {
		int err = errno;

		close(fd);
		return -err;
	}
	return fd;
}

/*
 * Return: true when a record logged since kmsg_open() (or the last call)
 * contains both @a and @b in its text.
 */
static bool kmsg_find(int fd, const char *a, const char *b)
{
	char rec[8192];
	bool found = false;

	for (;;) {
		const char *text;
		ssize_t n;

		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue;	/* records overwritten: go on */
		if (n <= 0)
			break;		/* EAGAIN: no more records */
		rec[n] = '\0';
		/* "prio,seq,usec,flags;text\n[ KEY=value\n]..." */
		text = strchr(rec, ';');
		text = text ? text + 1 : rec;
		if (strstr(text, a) && strstr(text, b))
			found = true;
	}
	return found;
}

static void close_fds(int *fds, int *nfds)
{
	while (*nfds > 0)
		close(fds[--*nfds]);
}

FIXTURE(load) {
	int fds[MAX_FDS];
	int nfds;
};

FIXTURE_SETUP(load)
{
	self->nfds = 0;
	if (module_loaded())
		ASSERT_EQ(0, module_unload());
	ASSERT_FALSE(module_loaded());
}

FIXTURE_TEARDOWN(load)
{
	close_fds(self->fds, &self->nfds);
	if (module_loaded())
		module_unload();
}

/* Open /dev/snpu0 and remember the file for the teardown. */
static void open_dev0(struct __test_metadata *_metadata,
		      FIXTURE_DATA(load) *self)
{
	int fd;

	ASSERT_LT(self->nfds, MAX_FDS);
	fd = open("/dev/snpu0", O_RDWR | O_CLOEXEC);
	ASSERT_GE(fd, 0) TH_LOG("open /dev/snpu0: %s", strerror(errno));
	self->fds[self->nfds++] = fd;
}

TEST_F(load, default_params)
{
	ASSERT_EQ(0, module_load(""));
	ASSERT_TRUE(module_loaded());

	ASSERT_TRUE(is_chardev("/dev/snpu0"));
	ASSERT_FALSE(path_exists("/dev/snpu1"));

	ASSERT_FILE(SNPU_MISC "snpu0/cores", "4");
	ASSERT_FILE(SNPU_MISC "snpu0/mem_mb", "256");
	ASSERT_FILE(SNPU_MISC "snpu0/mem_used", "0");
	ASSERT_FILE(SNPU_MISC "snpu0/contexts", "0");

	ASSERT_FILE(SNPU_SYSPARM "devices", "1");
	ASSERT_FILE(SNPU_SYSPARM "cores", "4");
	ASSERT_FILE(SNPU_SYSPARM "mem_mb", "256");

	ASSERT_EQ(0, module_unload());
	ASSERT_FALSE(path_exists("/dev/snpu0"));
	ASSERT_FALSE(path_exists(SNPU_MISC "snpu0"));
	ASSERT_FALSE(module_loaded());
}

TEST_F(load, three_devices)
{
	struct snpu_info info;
	char path[64];
	int i, fd;

	ASSERT_EQ(0, module_load("devices=3 cores=2 mem_mb=64"));

	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "/dev/snpu%d", i);
		ASSERT_TRUE(is_chardev(path)) TH_LOG("%s", path);
		snprintf(path, sizeof(path), SNPU_MISC "snpu%d/cores", i);
		ASSERT_FILE(path, "2");
		snprintf(path, sizeof(path), SNPU_MISC "snpu%d/mem_mb", i);
		ASSERT_FILE(path, "64");
	}
	ASSERT_FALSE(path_exists("/dev/snpu3"));
	ASSERT_FILE(SNPU_SYSPARM "devices", "3");

	fd = open("/dev/snpu2", O_RDWR | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	self->fds[self->nfds++] = fd;

	memset(&info, 0, sizeof(info));
	info.size = sizeof(info);
	ASSERT_EQ(0, ioctl(fd, SNPU_IOC_GET_INFO, &info))
		TH_LOG("GET_INFO: %s", strerror(errno));
	EXPECT_EQ(2U, info.dev_index);
	EXPECT_EQ(2U, info.cores);
	EXPECT_EQ(64ULL << 20, info.mem_total);
}

/* Each bad parameter value fails the load with EINVAL. */
FIXTURE(bad_param) {
	int kmsg;
};

/*
 * @params: the parameters of the load
 * @why: what the driver logs about them, NULL when the kernel's parameter
 *       parser refuses them before the driver runs
 */
FIXTURE_VARIANT(bad_param) {
	const char *params;
	const char *why;
};

FIXTURE_VARIANT_ADD(bad_param, devices_0) {
	.params = "devices=0",
	.why = "devices must be in",
};

FIXTURE_VARIANT_ADD(bad_param, devices_17) {
	.params = "devices=17",
	.why = "devices must be in",
};

FIXTURE_VARIANT_ADD(bad_param, cores_0) {
	.params = "cores=0",
	.why = "cores must be in",
};

FIXTURE_VARIANT_ADD(bad_param, cores_65) {
	.params = "cores=65",
	.why = "cores must be in",
};

FIXTURE_VARIANT_ADD(bad_param, mem_mb_0) {
	.params = "mem_mb=0",
	.why = "mem_mb must be in",
};

FIXTURE_VARIANT_ADD(bad_param, mem_mb_16385) {
	.params = "mem_mb=16385",
	.why = "mem_mb must be in",
};

FIXTURE_VARIANT_ADD(bad_param, devices_abc) {
	.params = "devices=abc",
	.why = NULL,
};

FIXTURE_VARIANT_ADD(bad_param, kernel_isa_sse3) {
	.params = "kernel_isa=sse3",
	.why = NULL,
};

FIXTURE_SETUP(bad_param)
{
	self->kmsg = -1;
	if (module_loaded())
		ASSERT_EQ(0, module_unload());
	ASSERT_FALSE(module_loaded());
	self->kmsg = kmsg_open();
	ASSERT_GE(self->kmsg, 0)
		TH_LOG("/dev/kmsg: %s", strerror(-self->kmsg));
}

FIXTURE_TEARDOWN(bad_param)
{
	if (self->kmsg >= 0)
		close(self->kmsg);
	if (module_loaded())
		module_unload();
}

TEST_F(bad_param, refused)
{
	ASSERT_EQ(-EINVAL, module_load(variant->params))
		TH_LOG("load with \"%s\"", variant->params);
	ASSERT_FALSE(module_loaded());
	ASSERT_FALSE(path_exists("/dev/snpu0"));

	if (variant->why)
		ASSERT_TRUE(kmsg_find(self->kmsg, "snpu: bad module parameter",
				      variant->why))
			TH_LOG("no \"bad module parameter: %s\" in the log",
			       variant->why);
}

/*
 * kernel_isa: the f32 kernels' instruction set, chosen at load. auto (the
 * default) takes AVX2 when the CPU has it, else SSE2, and the parameter
 * reads back the choice; sse2 is always there; avx2 on a CPU without it
 * fails the load with EINVAL and says why.
 */
TEST_F(load, kernel_isa)
{
	bool avx2;
	int kmsg;

	__builtin_cpu_init();
	avx2 = __builtin_cpu_supports("avx2");
	ASSERT_EQ(0, module_load(""));
	ASSERT_FILE(SNPU_SYSPARM "kernel_isa", avx2 ? "avx2" : "sse2");
	ASSERT_EQ(0, module_unload());
	ASSERT_EQ(0, module_load("kernel_isa=sse2"));
	ASSERT_FILE(SNPU_SYSPARM "kernel_isa", "sse2");
	ASSERT_EQ(0, module_unload());
	ASSERT_EQ(0, module_load("kernel_isa=auto"));
	ASSERT_FILE(SNPU_SYSPARM "kernel_isa", avx2 ? "avx2" : "sse2");
	ASSERT_EQ(0, module_unload());
	kmsg = kmsg_open();
	ASSERT_GE(kmsg, 0);
	if (avx2) {
		ASSERT_EQ(0, module_load("kernel_isa=avx2"));
		ASSERT_FILE(SNPU_SYSPARM "kernel_isa", "avx2");
	} else {
		ASSERT_EQ(-EINVAL, module_load("kernel_isa=avx2"));
		ASSERT_FALSE(module_loaded());
		ASSERT_TRUE(kmsg_find(kmsg, "snpu: kernel_isa=avx2",
				      "cannot run AVX2"));
	}
	close(kmsg);
}

TEST_F_TIMEOUT(load, cycles, 120)
{
	int i, fd;

	for (i = 0; i < 20; i++) {
		ASSERT_EQ(0, module_load("")) TH_LOG("cycle %d", i);
		fd = open("/dev/snpu0", O_RDWR | O_CLOEXEC);
		ASSERT_GE(fd, 0) TH_LOG("cycle %d: %s", i, strerror(errno));
		ASSERT_EQ(0, close(fd));
		ASSERT_EQ(0, module_unload()) TH_LOG("cycle %d", i);
		ASSERT_FALSE(module_loaded());
		ASSERT_FALSE(path_exists("/dev/snpu0"));
	}
}

TEST_F(load, unload_busy)
{
	long ret;
	int err;

	ASSERT_EQ(0, module_load(""));
	open_dev0(_metadata, self);

	ret = syscall(__NR_delete_module, "snpu", O_NONBLOCK);
	err = errno;
	ASSERT_EQ(-1, ret);
	ASSERT_TRUE(err == EWOULDBLOCK || err == EAGAIN)
		TH_LOG("delete_module: %s", strerror(err));
	ASSERT_TRUE(module_loaded());
	ASSERT_TRUE(is_chardev("/dev/snpu0"));

	close_fds(self->fds, &self->nfds);
	ASSERT_EQ(0, module_unload());
	ASSERT_FALSE(module_loaded());
}

/* The flood: contexts x streams x tasks, each of the largest block_dim. */
#define FLOOD_CTX		4
#define FLOOD_STREAMS		4
#define FLOOD_TASKS		4
/* GEMM m = n = k: 48 MiB of buffers a context, minutes of work a task. */
#define FLOOD_DIM		2048ULL
/* The bound for reaping a killed flooder. */
#define REAP_NS			(5 * NS_PER_SEC)

/*
 * A flooder, as nobody: FLOOD_CTX contexts full of long GEMM launches of
 * the largest block_dim (work that needs no test hook), the first opened
 * file's first: the files of an exiting process are released last opened
 * first, so the first one released has its work at the back. Tells
 * @ready, then waits to be killed.
 */
static void __attribute__((noreturn)) flooder(int ready)
{
	uint64_t mat = FLOOD_DIM * FLOOD_DIM * 4, buf[3];
	struct snpu_task t[FLOOD_TASKS];
	struct snpu_info info;
	int fd[FLOOD_CTX], c;
	unsigned int i, k, j;
	uint32_t s;

	if (snpu_drop_to_nobody())
		_exit(2);
	for (c = 0; c < FLOOD_CTX; c++) {
		fd[c] = snpu_open_dev();
		if (fd[c] < 0 || snpu_get_info(fd[c], &info))
			_exit(3);
	}
	for (c = 0; c < FLOOD_CTX; c++) {
		for (j = 0; j < 3; j++)
			if (snpu_alloc(fd[c], mat, 0, &buf[j]))
				_exit(4);
		for (i = 0; i < FLOOD_STREAMS; i++) {
			if (snpu_stream_create(fd[c], SNPU_PRIO_NORMAL, &s))
				_exit(5);
			for (k = 0; k < FLOOD_TASKS; k++) {
				t[k] = snpu_t_launch(s, SNPU_KERNEL_GEMM_F32,
						     info.max_block_dim);
				for (j = 0; j < 3; j++)
					snpu_t_buf(&t[k], j, buf[j], mat);
				for (j = 3; j < 6; j++)
					snpu_t_scalar(&t[k], j, FLOOD_DIM);
			}
			if (snpu_submit(fd[c], t, FLOOD_TASKS, NULL))
				_exit(6);
		}
	}
	if (write(ready, "r", 1) != 1)
		_exit(7);
	for (;;)
		pause();
}

/*
 * Another user floods the device and is killed: it is reaped within 5 s
 * (its closes do not wait for its queued work to reach a core), and the
 * module then unloads.
 */
TEST_F_TIMEOUT(load, rmmod_after_flood_killed, 120)
{
	uint64_t end, t0;
	int p[2], st = 0;
	bool reaped = false;
	pid_t pid;
	char r;

	ASSERT_EQ(0, module_load(""));
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		close(p[0]);
		flooder(p[1]);
	}
	close(p[1]);
	ASSERT_EQ(1, read(p[0], &r, 1)) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		TH_LOG("flooder failed: status %d", st);
	}
	close(p[0]);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	t0 = snpu_now_ns();
	end = t0 + REAP_NS;
	while (!reaped && snpu_now_ns() < end) {
		reaped = waitpid(pid, NULL, WNOHANG) == pid;
		if (!reaped)
			usleep(10000);
	}
	ASSERT_TRUE(reaped) TH_LOG("the killed flooder was not reaped in 5 s");
	TH_LOG("reaped after %llu ms",
	       (unsigned long long)(snpu_now_ns() - t0) / NS_PER_MS);
	ASSERT_EQ(0, module_unload());
	ASSERT_FALSE(module_loaded());
}

TEST_F(load, contexts_counted)
{
	ASSERT_EQ(0, module_load(""));
	ASSERT_FILE(SNPU_MISC "snpu0/contexts", "0");

	open_dev0(_metadata, self);
	ASSERT_FILE(SNPU_MISC "snpu0/contexts", "1");
	open_dev0(_metadata, self);
	open_dev0(_metadata, self);
	ASSERT_FILE(SNPU_MISC "snpu0/contexts", "3");

	/* A dup() shares the open file: still three contexts. */
	ASSERT_LT(self->nfds, MAX_FDS);
	self->fds[self->nfds] = dup(self->fds[0]);
	ASSERT_GE(self->fds[self->nfds], 0);
	self->nfds++;
	ASSERT_FILE(SNPU_MISC "snpu0/contexts", "3");

	close_fds(self->fds, &self->nfds);
	ASSERT_FILE(SNPU_MISC "snpu0/contexts", "0");
}

/*
 * Read the whole file @path. Return: a malloc()ed buffer and its length in
 * @lenp, or NULL.
 */
static void *read_file(const char *path, size_t *lenp)
{
	struct stat st;
	void *buf = NULL;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || st.st_size <= 0)
		goto out;
	buf = malloc(st.st_size);
	if (!buf)
		goto out;
	n = read(fd, buf, st.st_size);
	if (n != st.st_size) {
		free(buf);
		buf = NULL;
		goto out;
	}
	*lenp = n;
out:
	close(fd);
	return buf;
}

/*
 * Find the section @name of the ELF64 image @img of @len bytes.
 * Return: its header, or NULL when there is none or the image is bad.
 */
static const Elf64_Shdr *elf_section(const unsigned char *img, size_t len,
				     const char *name)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
	const Elf64_Shdr *sh, *strs;
	unsigned int i;

	if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shentsize != sizeof(*sh) || eh->e_shstrndx >= eh->e_shnum)
		return NULL;
	if (eh->e_shoff > len ||
	    (len - eh->e_shoff) / sizeof(*sh) < eh->e_shnum)
		return NULL;

	sh = (const Elf64_Shdr *)(img + eh->e_shoff);
	strs = &sh[eh->e_shstrndx];
	if (strs->sh_offset > len || strs->sh_size > len - strs->sh_offset)
		return NULL;

	for (i = 0; i < eh->e_shnum; i++) {
		const char *s;

		if (sh[i].sh_name >= strs->sh_size)
			continue;
		s = (const char *)img + strs->sh_offset + sh[i].sh_name;
		if (strnlen(s, strs->sh_size - sh[i].sh_name) ==
		    strs->sh_size - sh[i].sh_name)
			continue;	/* not terminated */
		if (strcmp(s, name))
			continue;
		if (sh[i].sh_offset > len ||
		    sh[i].sh_size > len - sh[i].sh_offset)
			return NULL;
		return &sh[i];
	}
	return NULL;
}

/*
 * Return: true when the NUL-separated strings @p[0..@len) hold one that
 * starts with @prefix (or, when @exact, equals it).
 */
static bool strings_have(const char *p, size_t len, const char *prefix,
			 bool exact)
{
	size_t plen = strlen(prefix);
	const char *end = p + len;

	while (p < end) {
		size_t n = strnlen(p, end - p);

		if (n >= plen && !memcmp(p, prefix, plen) &&
		    (!exact || n == plen))
			return true;
		p += n + 1;
	}
	return false;
}

/* Expect a string of .modinfo to start with (or be, when @exact) @str. */
#define EXPECT_MODINFO(str, exact)					\
	EXPECT_TRUE(strings_have(modinfo, sh->sh_size, str, exact))	\
		TH_LOG("no %s \"%s\" in .modinfo",			\
		       (exact) ? "string" : "string starting", str)

TEST(modinfo_fields)
{
	const Elf64_Shdr *sh;
	const char *modinfo;
	unsigned char *img;
	size_t len = 0;

	img = read_file(snpu_ko(), &len);
	ASSERT_NE(NULL, img) TH_LOG("cannot read %s", snpu_ko());

	sh = elf_section(img, len, ".modinfo");
	ASSERT_NE(NULL, sh) TH_LOG("no .modinfo section in %s", snpu_ko());
	ASSERT_GT(sh->sh_size, 0UL);
	modinfo = (const char *)img + sh->sh_offset;

	EXPECT_MODINFO("description=", false);
	EXPECT_MODINFO("license=GPL", true);
	EXPECT_MODINFO("parm=devices:", false);
	EXPECT_MODINFO("parm=cores:", false);
	EXPECT_MODINFO("parm=mem_mb:", false);
	EXPECT_MODINFO("parmtype=devices:uint", true);
	EXPECT_MODINFO("parmtype=cores:uint", true);
	EXPECT_MODINFO("parmtype=mem_mb:uint", true);
	EXPECT_MODINFO("parm=test_hooks:", false);
	EXPECT_MODINFO("parmtype=test_hooks:bool", true);
	/* The description says something beyond the key. */
	EXPECT_FALSE(strings_have(modinfo, sh->sh_size, "description=", true));

	free(img);
}

TEST_HARNESS_MAIN
