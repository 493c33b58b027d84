// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit tests of the snpu core (kmod/core): module parameter limits
 * and the ioctl argument rules. Built for the host under ASan/UBSan.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <linux/ioctl.h>

#include "core/core.h"

#include "kselftest_harness.h"

static const char *check(unsigned int devices, unsigned int cores,
			 unsigned int mem_mb)
{
	const struct snpu_params p = {
		.devices = devices,
		.cores = cores,
		.mem_mb = mem_mb,
		.ctx_host_mb = 256,
		.ctx_streams = 64,
		.ctx_events = 1024,
		.ctx_tasks = 4096,
		.ctx_graphs = 64,
		.ctx_graph_mb = 64,
	};

	return snpu_params_check(&p);
}

/*
 * A refusal's message starts with the parameter's name and gives its range
 * as the limits in core.h define it.
 */
#define ASSERT_BAD(msg, name, min, max) do {				\
	const char *__m = (msg);					\
	char __range[64];						\
									\
	snprintf(__range, sizeof(__range), "[%d, %d]", min, max);	\
	ASSERT_NE(NULL, __m);						\
	ASSERT_EQ(0, strncmp(__m, name " ", strlen(name " ")))		\
		TH_LOG("message \"%s\" does not name %s", __m, name);	\
	ASSERT_NE(NULL, strstr(__m, __range))				\
		TH_LOG("message \"%s\" lacks %s", __m, __range);	\
} while (0)

#define ASSERT_BAD_DEVICES(msg) \
	ASSERT_BAD(msg, "devices", 1, SNPU_MAX_DEVICES)
#define ASSERT_BAD_CORES(msg) \
	ASSERT_BAD(msg, "cores", 1, SNPU_MAX_CORES)
#define ASSERT_BAD_MEM_MB(msg) \
	ASSERT_BAD(msg, "mem_mb", SNPU_MIN_MEM_MB, SNPU_MAX_MEM_MB)

/* The limits the module documents in its parameter descriptions. */
TEST(params_limits)
{
	ASSERT_EQ(16, SNPU_MAX_DEVICES);
	ASSERT_EQ(64, SNPU_MAX_CORES);
	ASSERT_EQ(1, SNPU_MIN_MEM_MB);
	ASSERT_EQ(16384, SNPU_MAX_MEM_MB);
}

TEST(params_all_max)
{
	ASSERT_NULL(check(SNPU_MAX_DEVICES, SNPU_MAX_CORES, SNPU_MAX_MEM_MB));
}

TEST(params_all_min)
{
	ASSERT_NULL(check(1, 1, SNPU_MIN_MEM_MB));
}

/* Each boundary below moves one parameter from the defaults 1, 4, 256. */
TEST(params_devices_0)
{
	ASSERT_BAD_DEVICES(check(0, 4, 256));
}

TEST(params_devices_1)
{
	ASSERT_NULL(check(1, 4, 256));
}

TEST(params_devices_16)
{
	ASSERT_NULL(check(16, 4, 256));
}

TEST(params_devices_17)
{
	ASSERT_BAD_DEVICES(check(17, 4, 256));
}

TEST(params_devices_uint_max)
{
	ASSERT_BAD_DEVICES(check(UINT_MAX, 4, 256));
}

TEST(params_cores_0)
{
	ASSERT_BAD_CORES(check(1, 0, 256));
}

TEST(params_cores_1)
{
	ASSERT_NULL(check(1, 1, 256));
}

TEST(params_cores_64)
{
	ASSERT_NULL(check(1, 64, 256));
}

TEST(params_cores_65)
{
	ASSERT_BAD_CORES(check(1, 65, 256));
}

TEST(params_cores_uint_max)
{
	ASSERT_BAD_CORES(check(1, UINT_MAX, 256));
}

TEST(params_mem_mb_0)
{
	ASSERT_BAD_MEM_MB(check(1, 4, 0));
}

TEST(params_mem_mb_1)
{
	ASSERT_NULL(check(1, 4, 1));
}

TEST(params_mem_mb_16384)
{
	ASSERT_NULL(check(1, 4, 16384));
}

TEST(params_mem_mb_16385)
{
	ASSERT_BAD_MEM_MB(check(1, 4, 16385));
}

TEST(params_mem_mb_uint_max)
{
	ASSERT_BAD_MEM_MB(check(1, 4, UINT_MAX));
}

/* With several bad parameters the message names the first one. */
TEST(params_first_bad_named)
{
	ASSERT_BAD_DEVICES(check(0, 0, 0));
	ASSERT_BAD_CORES(check(1, 0, 0));
	ASSERT_BAD_MEM_MB(check(1, 1, 0));
}

TEST(ioc_size_zero)
{
	ASSERT_EQ(-EINVAL, snpu_ioc_check_size(0, SNPU_INFO_SIZE_VER0));
}

TEST(ioc_size_below_ver0)
{
	ASSERT_EQ(-EINVAL, snpu_ioc_check_size(SNPU_INFO_SIZE_VER0 - 1,
					       SNPU_INFO_SIZE_VER0));
}

TEST(ioc_size_ver0)
{
	ASSERT_EQ(0, snpu_ioc_check_size(SNPU_INFO_SIZE_VER0,
					 SNPU_INFO_SIZE_VER0));
}

TEST(ioc_size_kernel_struct)
{
	ASSERT_EQ(0, snpu_ioc_check_size(sizeof(struct snpu_info),
					 SNPU_INFO_SIZE_VER0));
}

TEST(ioc_size_max)
{
	ASSERT_EQ(0, snpu_ioc_check_size(SNPU_IOC_MAX_SIZE,
					 SNPU_INFO_SIZE_VER0));
}

TEST(ioc_size_above_max)
{
	ASSERT_EQ(-E2BIG, snpu_ioc_check_size(SNPU_IOC_MAX_SIZE + 1,
					      SNPU_INFO_SIZE_VER0));
}

TEST(ioc_size_u32_max)
{
	ASSERT_EQ(-E2BIG, snpu_ioc_check_size(0xffffffffU,
					      SNPU_INFO_SIZE_VER0));
}

TEST(ioc_same_cmd)
{
	ASSERT_TRUE(snpu_ioc_same(SNPU_IOC_GET_INFO, SNPU_IOC_GET_INFO));
}

TEST(ioc_same_other_size)
{
	const unsigned int dir = _IOC_READ | _IOC_WRITE;

	ASSERT_TRUE(snpu_ioc_same(_IOC(dir, SNPU_IOC_MAGIC, 0, 200),
				  SNPU_IOC_GET_INFO));
	ASSERT_TRUE(snpu_ioc_same(_IOC(dir, SNPU_IOC_MAGIC, 0, 0),
				  SNPU_IOC_GET_INFO));
	ASSERT_TRUE(snpu_ioc_same(_IOC(dir, SNPU_IOC_MAGIC, 0, _IOC_SIZEMASK),
				  SNPU_IOC_GET_INFO));
}

TEST(ioc_same_other_nr)
{
	ASSERT_FALSE(snpu_ioc_same(_IOWR(SNPU_IOC_MAGIC, 1, struct snpu_info),
				   SNPU_IOC_GET_INFO));
	ASSERT_FALSE(snpu_ioc_same(_IOWR(SNPU_IOC_MAGIC, 0x80,
					 struct snpu_info),
				   SNPU_IOC_GET_INFO));
}

TEST(ioc_same_other_type)
{
	ASSERT_FALSE(snpu_ioc_same(_IOWR('T', 0, struct snpu_info),
				   SNPU_IOC_GET_INFO));
	ASSERT_FALSE(snpu_ioc_same(_IOWR(SNPU_IOC_MAGIC | 0x80, 0,
					 struct snpu_info),
				   SNPU_IOC_GET_INFO));
}

TEST(ioc_same_other_dir)
{
	ASSERT_FALSE(snpu_ioc_same(_IOR(SNPU_IOC_MAGIC, 0, struct snpu_info),
				   SNPU_IOC_GET_INFO));
	ASSERT_FALSE(snpu_ioc_same(_IOW(SNPU_IOC_MAGIC, 0, struct snpu_info),
				   SNPU_IOC_GET_INFO));
	ASSERT_FALSE(snpu_ioc_same(_IO(SNPU_IOC_MAGIC, 0), SNPU_IOC_GET_INFO));
}

/* The defaults with one quota changed. */
static const char *check_quota(unsigned int mem_mb, unsigned int host_mb,
			       unsigned int streams, unsigned int events,
			       unsigned int tasks)
{
	const struct snpu_params p = {
		.devices = 1,
		.cores = 4,
		.mem_mb = 256,
		.ctx_mem_mb = mem_mb,
		.ctx_host_mb = host_mb,
		.ctx_streams = streams,
		.ctx_events = events,
		.ctx_tasks = tasks,
		.ctx_graphs = 64,
		.ctx_graph_mb = 64,
	};

	return snpu_params_check(&p);
}

TEST(quota_defaults_and_bounds_accepted)
{
	ASSERT_EQ(NULL, check_quota(0, 256, 64, 1024, 4096));
	ASSERT_EQ(NULL, check_quota(256, 1, 1, 1, 1));
	ASSERT_EQ(NULL, check_quota(1, SNPU_MAX_CTX_HOST_MB,
				    SNPU_MAX_CTX_STREAMS, SNPU_MAX_CTX_EVENTS,
				    SNPU_MAX_CTX_TASKS));
}

TEST(quota_ctx_mem_above_device_refused)
{
	const char *m = check_quota(257, 1, 1, 1, 1);

	ASSERT_NE(NULL, m);
	ASSERT_STREQ("ctx_mem_mb must be in [0, mem_mb]", m);
}

TEST(quota_host_refused)
{
	ASSERT_BAD(check_quota(0, 0, 64, 1024, 4096), "ctx_host_mb", 1,
		   SNPU_MAX_CTX_HOST_MB);
	ASSERT_BAD(check_quota(0, SNPU_MAX_CTX_HOST_MB + 1, 64, 1024, 4096),
		   "ctx_host_mb", 1, SNPU_MAX_CTX_HOST_MB);
}

TEST(quota_streams_refused)
{
	ASSERT_BAD(check_quota(0, 256, 0, 1024, 4096), "ctx_streams", 1,
		   SNPU_MAX_CTX_STREAMS);
	ASSERT_BAD(check_quota(0, 256, SNPU_MAX_CTX_STREAMS + 1, 1024, 4096),
		   "ctx_streams", 1, SNPU_MAX_CTX_STREAMS);
}

TEST(quota_events_refused)
{
	ASSERT_BAD(check_quota(0, 256, 64, 0, 4096), "ctx_events", 1,
		   SNPU_MAX_CTX_EVENTS);
	ASSERT_BAD(check_quota(0, 256, 64, SNPU_MAX_CTX_EVENTS + 1, 4096),
		   "ctx_events", 1, SNPU_MAX_CTX_EVENTS);
}

TEST(quota_tasks_refused)
{
	ASSERT_BAD(check_quota(0, 256, 64, 1024, 0), "ctx_tasks", 1,
		   SNPU_MAX_CTX_TASKS);
	ASSERT_BAD(check_quota(0, 256, 64, 1024, SNPU_MAX_CTX_TASKS + 1),
		   "ctx_tasks", 1, SNPU_MAX_CTX_TASKS);
}

/* Keys of attached streams: a fixed field, NUL-terminated, zero-padded. */
#define KEY_SIZE SNPU_ATTACHED_KEY_MAX

static int key_check(const char *text)
{
	char key[KEY_SIZE] = { 0 };

	memcpy(key, text, strnlen(text, KEY_SIZE));
	return snpu_key_check(key, sizeof(key));
}

TEST(key_one_byte)
{
	ASSERT_EQ(1, key_check("a"));
}

TEST(key_longest)
{
	char key[KEY_SIZE];

	memset(key, 'k', KEY_SIZE - 1);
	key[KEY_SIZE - 1] = 0;
	ASSERT_EQ(KEY_SIZE - 1, snpu_key_check(key, sizeof(key)));
}

TEST(key_empty)
{
	ASSERT_EQ(-EINVAL, key_check(""));
}

TEST(key_not_terminated)
{
	char key[KEY_SIZE];

	memset(key, 'k', KEY_SIZE);
	ASSERT_EQ(-EINVAL, snpu_key_check(key, sizeof(key)));
}

TEST(key_garbage_after_nul)
{
	char key[KEY_SIZE] = "abc";

	key[KEY_SIZE - 1] = 'x';
	ASSERT_EQ(-EINVAL, snpu_key_check(key, sizeof(key)));
}

TEST(key_bytes_after_nul_zero)
{
	char key[KEY_SIZE] = "abc";

	ASSERT_EQ(3, snpu_key_check(key, sizeof(key)));
}

TEST_HARNESS_MAIN
