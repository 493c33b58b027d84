// SPDX-License-Identifier: GPL-2.0
/*
 * No user stalls another through the statistics: a STATS dump of the
 * generic netlink family (here snpu-smi's, run as nobody) reads every
 * open context of a device while it holds the device's list of contexts,
 * which every open() and close() of the device takes. It must never wait
 * there for a context that is busy, or one user's long call (a snapshot
 * BACKUP of a large image, say) plus one dump would stall every other
 * user's opens and closes for as long.
 *
 * A context is kept busy for as long as the test likes: a SUBMIT whose
 * tasks lie in a page registered with userfaultfd stops in the copy of
 * its tasks, with the context's lock held, until the test fills the page.
 * No timing decides anything: the victim's open() and close() must return
 * while the SUBMIT is still stopped, whatever the machine's speed.
 */
#include <fcntl.h>
#include <grp.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "snpu_test.h"
#include "snpu_proc.h"

#define SMI		"/opt/snpu/bin/snpu-smi"
/* Hang guards, far above what each step needs on a slow machine. */
#define GUARD_MS	60000

/* A context whose lock a stopped SUBMIT holds. */
struct busy {
	int fd;
	int uffd;
	void *page;
	size_t len;
	pthread_t thread;
	int submit_ret;
};

static void *busy_submit(void *arg)
{
	struct busy *b = arg;

	/* Stops in the kernel's copy of the first task, lock held. */
	b->submit_ret = snpu_submit_raw(b->fd, b->page, 1,
					sizeof(struct snpu_task), NULL);
	return NULL;
}

/* Open a context and stop a SUBMIT on it. Return: 0 or -errno. */
static int busy_start(struct busy *b)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct pollfd pfd;
	struct uffd_msg msg;

	b->len = sysconf(_SC_PAGESIZE);
	b->fd = snpu_open_dev();
	if (b->fd < 0)
		return b->fd;
	b->uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (b->uffd < 0 || ioctl(b->uffd, UFFDIO_API, &api))
		return -errno;
	b->page = mmap(NULL, b->len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->page == MAP_FAILED)
		return -errno;
	reg.range.start = (uintptr_t)b->page;
	reg.range.len = b->len;
	if (ioctl(b->uffd, UFFDIO_REGISTER, &reg))
		return -errno;
	if (pthread_create(&b->thread, NULL, busy_submit, b))
		return -EAGAIN;
	/* The fault arrives once the SUBMIT is inside its copy. */
	pfd.fd = b->uffd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, GUARD_MS) != 1)
		return -ETIMEDOUT;
	if (read(b->uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT)
		return -EIO;
	return 0;
}

/* Fill the page with zeros: the SUBMIT reads an invalid task and ends. */
static int busy_stop(struct busy *b)
{
	struct uffdio_zeropage z = {
		.range = { .start = (uintptr_t)b->page, .len = b->len },
	};

	if (ioctl(b->uffd, UFFDIO_ZEROPAGE, &z))
		return -errno;
	pthread_join(b->thread, NULL);
	close(b->uffd);
	munmap(b->page, b->len);
	close(b->fd);
	return 0;
}

/*
 * Run "snpu-smi -j stats" as nobody, output dropped; wait until it has
 * exited (its status in *status) or sleeps uninterruptibly (the dump
 * waiting in the kernel, *status -1). Return: its pid.
 */
static pid_t dump_as_nobody(int *status)
{
	pid_t kid = fork();
	int i;

	if (!kid) {
		int null = open("/dev/null", O_WRONLY);

		if (null < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0 ||
		    snpu_drop_to_nobody())
			_exit(100);
		execl(SMI, SMI, "-j", "stats", (char *)NULL);
		_exit(101);
	}
	*status = -1;
	for (i = 0; kid > 0 && i < GUARD_MS; i++) {
		if (waitpid(kid, status, WNOHANG) == kid)
			break;
		/* 'D': blocked in the kernel, past the start of its dump. */
		if (snpu_proc_state(kid) == 'D')
			break;
		usleep(1000);
	}
	return kid;
}

/*
 * In a child: open the device and close the file (and a file opened
 * before). Return: 0 when both returned within the guard.
 */
static int open_close_in_time(void)
{
	int early = snpu_open_dev(), pfd[2], status;
	struct pollfd p;
	char c = 0;
	pid_t kid;

	if (early < 0 || pipe(pfd))
		return -EIO;
	kid = fork();
	if (!kid) {
		int fd = snpu_open_dev();

		c = fd >= 0 && !close(fd) && !close(early) ? 'y' : 'n';
		_exit(write(pfd[1], &c, 1) == 1 ? 0 : 1);
	}
	close(early);
	p.fd = pfd[0];
	p.events = POLLIN;
	if (poll(&p, 1, GUARD_MS) != 1 || read(pfd[0], &c, 1) != 1)
		c = 0;
	close(pfd[0]);
	close(pfd[1]);
	/* A child stuck in open() ends once the busy context is released. */
	if (c != 'y')
		return -ETIMEDOUT;
	waitpid(kid, &status, 0);
	return 0;
}

FIXTURE(stall) {
	struct busy b;
	pid_t dump;
	bool stopped;
};

FIXTURE_SETUP(stall)
{
	memset(&self->b, 0, sizeof(self->b));
	self->b.fd = -1;
	self->b.uffd = -1;
	self->dump = -1;
	self->stopped = false;
	ASSERT_EQ(0, busy_start(&self->b))
		TH_LOG("a SUBMIT stopped in a userfaultfd page (CONFIG_USERFAULTFD)");
}

FIXTURE_TEARDOWN(stall)
{
	int status;

	if (!self->stopped)
		busy_stop(&self->b);
	if (self->dump > 0)
		waitpid(self->dump, &status, 0);
}

/* Another user's opens and closes go on while a dump meets a busy context. */
TEST_F_TIMEOUT(stall, dump_never_stalls_open_and_close, 300)
{
	int status, ret;

	self->dump = dump_as_nobody(&status);
	ASSERT_LT(0, self->dump);
	ret = open_close_in_time();
	/* Release the busy context either way, then judge. */
	ASSERT_EQ(0, busy_stop(&self->b));
	self->stopped = true;
	EXPECT_EQ(0, ret) TH_LOG("open() or close() waited for the dump");
	if (status == -1) {
		ASSERT_EQ(self->dump, waitpid(self->dump, &status, 0));
	}
	self->dump = -1;
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("snpu-smi -j stats failed");
	/* The stopped SUBMIT read a zero task: an invalid one. */
	EXPECT_EQ(-EINVAL, self->b.submit_ret);
}

/* The dump itself finishes while the context is still busy. */
TEST_F_TIMEOUT(stall, dump_never_waits_for_a_busy_context, 300)
{
	int status = -1, i;

	self->dump = dump_as_nobody(&status);
	ASSERT_LT(0, self->dump);
	for (i = 0; status == -1 && i < GUARD_MS; i++) {
		if (waitpid(self->dump, &status, WNOHANG) == self->dump)
			break;
		status = -1;
		usleep(1000);
	}
	ASSERT_NE(-1, status) TH_LOG("the dump waits for the busy context");
	self->dump = -1;
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
