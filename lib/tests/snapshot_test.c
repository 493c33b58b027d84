// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit tests of libsnpu's snapshot calls (LIBSNPU_0.5) that need no
 * snpu device: argument checks, the callback table of a device
 * (registration rules, concurrent registration), and that a step whose
 * state check fails runs no callback. Built for the host under ASan/UBSan.
 *
 * A "fake" device is a struct snpu_device on /dev/null, set up with the
 * library's own snpu_snapshot_init(): what reaches ioctl(2) or mmap(2)
 * fails there (-ENOTTY, -ENODEV), which tells the library's checks from
 * the kernel's. The driver side is tested in selftests/snapshot/.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "snpu.h"
#include "../internal.h"

#include "kselftest_harness.h"

static int calls;

static int count_cb(struct snpu_device *dev, unsigned int stage, void *arg)
{
	calls++;
	return 0;
}

FIXTURE(fake)
{
	struct snpu_device dev;
	struct snpu_device *devs[1];
};

FIXTURE_SETUP(fake)
{
	self->dev.fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	ASSERT_GE(self->dev.fd, 0);
	snpu_snapshot_init(&self->dev);
	self->devs[0] = &self->dev;
	calls = 0;
}

FIXTURE_TEARDOWN(fake)
{
	snpu_snapshot_fini(&self->dev);
	close(self->dev.fd);
}

TEST(null_arguments)
{
	struct snpu_device *none[1] = { NULL };
	struct snpu_snapshot s;
	uint64_t bytes;

	EXPECT_EQ(-EINVAL, snpu_snapshot_lock(NULL, 1, -1));
	EXPECT_EQ(-EINVAL, snpu_snapshot_lock(none, 1, -1));
	EXPECT_EQ(-EINVAL, snpu_snapshot_backup(none, 0, &bytes));
	EXPECT_EQ(-EINVAL, snpu_snapshot_restore(none, 1));
	EXPECT_EQ(-EINVAL, snpu_snapshot_unlock(none, 1));
	EXPECT_EQ(-EINVAL, snpu_snapshot_get_state(NULL, &s));
	EXPECT_EQ(-EINVAL, snpu_snapshot_callback_register(NULL, 0, count_cb,
							   NULL));
	EXPECT_EQ(-EINVAL, snpu_snapshot_callback_unregister(NULL, 0));
	EXPECT_EQ(-EINVAL, snpu_bg_register(NULL));
	EXPECT_EQ(-EINVAL, snpu_bg_unregister(NULL));
	EXPECT_EQ(-EINVAL, snpu_bg_checkpoint(NULL));
}

TEST_F(fake, steps_reach_the_kernel_and_run_no_callback)
{
	struct snpu_snapshot s;
	uint64_t bytes = 3;
	unsigned int st;

	for (st = 0; st < SNPU_SNAPSHOT_STAGES; st++)
		ASSERT_EQ(0, snpu_snapshot_callback_register(&self->dev, st,
							     count_cb, NULL));
	/* The state check fails first: no callback runs. */
	EXPECT_EQ(-ENOTTY, snpu_snapshot_lock(self->devs, 1, 0));
	EXPECT_EQ(-ENOTTY, snpu_snapshot_backup(self->devs, 1, &bytes));
	EXPECT_EQ(-ENOTTY, snpu_snapshot_restore(self->devs, 1));
	EXPECT_EQ(-ENOTTY, snpu_snapshot_unlock(self->devs, 1));
	EXPECT_EQ(-ENOTTY, snpu_snapshot_get_state(&self->dev, &s));
	EXPECT_EQ(-ENOTTY, snpu_bg_register(&self->dev));
	EXPECT_EQ(-ENOTTY, snpu_bg_unregister(&self->dev));
	EXPECT_EQ(0, calls);
	EXPECT_EQ(3ULL, bytes);
	/* The checkpoint's first call maps the page: /dev/null refuses. */
	EXPECT_EQ(-ENODEV, snpu_bg_checkpoint(&self->dev));
	EXPECT_EQ(NULL, atomic_load(&self->dev.state_page));
}

TEST_F(fake, registration_rules)
{
	int a, b;

	EXPECT_EQ(-EINVAL, snpu_snapshot_callback_register(&self->dev, 0,
							   NULL, &a));
	EXPECT_EQ(-EINVAL, snpu_snapshot_callback_register(&self->dev,
				SNPU_SNAPSHOT_STAGES, count_cb, &a));
	EXPECT_EQ(-EINVAL, snpu_snapshot_callback_unregister(&self->dev,
				SNPU_SNAPSHOT_STAGES));
	EXPECT_EQ(-ENOENT, snpu_snapshot_callback_unregister(&self->dev,
				SNPU_SNAPSHOT_UNLOCK_POST));
	ASSERT_EQ(0, snpu_snapshot_callback_register(&self->dev,
			SNPU_SNAPSHOT_UNLOCK_POST, count_cb, &a));
	EXPECT_EQ(-EEXIST, snpu_snapshot_callback_register(&self->dev,
			SNPU_SNAPSHOT_UNLOCK_POST, count_cb, &b));
	/* The first one stays. */
	EXPECT_EQ(&a, self->dev.snap_cb[SNPU_SNAPSHOT_UNLOCK_POST].arg);
	EXPECT_EQ(0, snpu_snapshot_callback_unregister(&self->dev,
			SNPU_SNAPSHOT_UNLOCK_POST));
	EXPECT_EQ(NULL, self->dev.snap_cb[SNPU_SNAPSHOT_UNLOCK_POST].fn);
	EXPECT_EQ(0, snpu_snapshot_callback_register(&self->dev,
			SNPU_SNAPSHOT_UNLOCK_POST, count_cb, &b));
	EXPECT_EQ(&b, self->dev.snap_cb[SNPU_SNAPSHOT_UNLOCK_POST].arg);
}

struct reg {
	struct snpu_device *dev;
	atomic_int *go;
	int wins;
	int eexist;
};

static void *reg_fn(void *p)
{
	struct reg *r = p;
	int i, ret;

	while (!atomic_load(r->go))
		;
	for (i = 0; i < 2000; i++) {
		ret = snpu_snapshot_callback_register(r->dev,
				SNPU_SNAPSHOT_BACKUP_PRE, count_cb, r);
		if (!ret) {
			r->wins++;
			ret = snpu_snapshot_callback_unregister(r->dev,
					SNPU_SNAPSHOT_BACKUP_PRE);
			if (ret)
				return NULL;
		} else if (ret == -EEXIST) {
			r->eexist++;
		}
	}
	return NULL;
}

TEST_F(fake, concurrent_registration_one_owner_at_a_time)
{
	struct reg r[4];
	pthread_t th[4];
	atomic_int go = 0;
	int i, wins = 0, total = 0;

	for (i = 0; i < 4; i++) {
		r[i] = (struct reg){ .dev = &self->dev, .go = &go };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, reg_fn, &r[i]));
	}
	atomic_store(&go, 1);
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		wins += r[i].wins;
		total += r[i].wins + r[i].eexist;
	}
	/* Every attempt either won the slot or found it taken. */
	EXPECT_EQ(4 * 2000, total);
	EXPECT_GT(wins, 0);
	/* Each winner unregistered: the slot is empty. */
	EXPECT_EQ(NULL, self->dev.snap_cb[SNPU_SNAPSHOT_BACKUP_PRE].fn);
}

TEST_HARNESS_MAIN
