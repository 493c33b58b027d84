// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit tests of rt2's model API (lib/rt2/model.c), kernel registry
 * (lib/rt2/kernels.c), lowering, passes and execution graph
 * (lib/rt2/graph.c): the checks of each model call, the classes and
 * workers of the kernels, which passes run in which mode, golden
 * execution graphs before and after the passes, the H2D and CopyFlow
 * splits with their size and cardinality rules one by one, the consumer
 * rules, and the launch order. Built under ASan/UBSan.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snpu_rt2.h"
#include "../rt2/rt2.h"
#include "rt2/hostdev.h"
#include "rt2/models.h"

#include "kselftest_harness.h"

#define F32	SNPU_RT2_F32
#define I32	SNPU_RT2_I32

static const float zeros[64];

/* Lower, run the passes of @flags, finalize, dump. */
static int lower_dump(const struct snpu_rt2_model *m, unsigned int flags,
		      char *buf, size_t len)
{
	struct rt2_build b = { .flags = flags };
	struct rt2_graph g;
	int ret;

	ret = rt2_lower(&b, m);
	if (!ret)
		ret = rt2_run_passes(&b);
	if (!ret)
		ret = rt2_finalize(&b, &g);
	rt2_build_fini(&b);
	if (ret)
		return ret;
	rt2_graph_dump(&g, buf, len);
	rt2_graph_fini(&g);
	return 0;
}

/* ---- model API ---------------------------------------------------------- */

TEST(model_shapes_checked)
{
	struct snpu_rt2_model *m;
	struct snpu_rt2_shape s = shape2(F32, 2, 3);

	ASSERT_EQ(-EINVAL, snpu_rt2_model_create(NULL));
	ASSERT_EQ(0, snpu_rt2_model_create(&m));
	ASSERT_EQ(0, snpu_rt2_model_input(m, &s));
	ASSERT_EQ(-EINVAL, snpu_rt2_model_input(NULL, &s));
	ASSERT_EQ(-EINVAL, snpu_rt2_model_input(m, NULL));
	s.dtype = 7;
	ASSERT_EQ(-EINVAL, snpu_rt2_model_input(m, &s));
	s = shape2(F32, 0, 3);
	ASSERT_EQ(-EINVAL, snpu_rt2_model_input(m, &s));
	s = shape2(F32, 2, 65537);
	ASSERT_EQ(-EINVAL, snpu_rt2_model_input(m, &s));
	s = shape2(F32, 2, 3);
	s.ndim = 0;
	ASSERT_EQ(-EINVAL, snpu_rt2_model_input(m, &s));
	s.ndim = 5;
	ASSERT_EQ(-EINVAL, snpu_rt2_model_input(m, &s));
	s = shape2(F32, 2, 3);
	s.dims[3] = 1;		/* past ndim: must be zero */
	ASSERT_EQ(-EINVAL, snpu_rt2_model_input(m, &s));
	s = shape2(I32, 2, 3);
	ASSERT_EQ(1, snpu_rt2_model_param(m, &s, zeros));
	ASSERT_EQ(-EINVAL, snpu_rt2_model_param(m, &s, NULL));
	snpu_rt2_model_destroy(m);
}

TEST(model_ops_checked)
{
	struct snpu_rt2_shape a = shape2(F32, 2, 3), b = shape2(F32, 3, 4);
	struct snpu_rt2_shape i = shape2(I32, 2, 3);
	struct snpu_rt2_op_desc d;
	struct snpu_rt2_model *m;
	int ta, tb, ti, y;

	ASSERT_EQ(0, snpu_rt2_model_create(&m));
	ta = snpu_rt2_model_input(m, &a);
	tb = snpu_rt2_model_param(m, &b, zeros);
	ti = snpu_rt2_model_input(m, &i);
	/* Unknown tensors, wrong counts, unknown type. */
	ASSERT_EQ(-EINVAL, op2(m, SNPU_RT2_OP_MATMUL, ta, 99));
	ASSERT_EQ(-EINVAL, op2(m, SNPU_RT2_OP_MATMUL, -1, tb));
	ASSERT_EQ(-EINVAL, op2(m, SNPU_RT2_OP_MATMUL, ta, -1));
	ASSERT_EQ(-EINVAL, op2(m, 99, ta, tb));
	/* k mismatch, dtype, add shapes, relu on i32. */
	ASSERT_EQ(-EINVAL, op2(m, SNPU_RT2_OP_MATMUL, tb, ta));
	ASSERT_EQ(-EINVAL, op2(m, SNPU_RT2_OP_MATMUL, ti, tb));
	ASSERT_EQ(-EINVAL, op2(m, SNPU_RT2_OP_ADD, ta, tb));
	ASSERT_EQ(-EINVAL, op2(m, SNPU_RT2_OP_ADD, ta, ti));
	ASSERT_EQ(-EINVAL, op2(m, SNPU_RT2_OP_RELU, ti, -1));
	ASSERT_EQ(-EINVAL, op2(m, SNPU_RT2_OP_RELU, ta, ta));
	/* A custom op needs its function and a valid output shape. */
	memset(&d, 0, sizeof(d));
	d.type = SNPU_RT2_OP_CUSTOM;
	d.nin = 1;
	d.in[0] = ta;
	d.out_shape = a;
	ASSERT_EQ(-EINVAL, snpu_rt2_model_op(m, &d));
	/* Nothing was added by the failures. */
	ASSERT_EQ(3U, m->ntensors);
	ASSERT_EQ(0U, m->nops);
	y = op2(m, SNPU_RT2_OP_MATMUL, ta, tb);
	ASSERT_EQ(3, y);
	ASSERT_EQ(2U, m->tensors[y].shape.dims[0]);
	ASSERT_EQ(4U, m->tensors[y].shape.dims[1]);
	ASSERT_EQ(4, op2(m, SNPU_RT2_OP_ADD, ti, ti));
	/* Outputs: not a parameter, not twice. */
	ASSERT_EQ(-EINVAL, snpu_rt2_model_output(m, tb));
	ASSERT_EQ(-EINVAL, snpu_rt2_model_output(m, 42));
	ASSERT_EQ(0, snpu_rt2_model_output(m, y));
	ASSERT_EQ(-EINVAL, snpu_rt2_model_output(m, y));
	snpu_rt2_model_destroy(m);
}

/* Transposed operands: shapes inferred; this device cannot run them yet. */
TEST(model_matmul_transposed)
{
	struct snpu_rt2_shape a = shape2(F32, 3, 2), b = shape2(F32, 4, 3);
	struct snpu_rt2_op_desc d;
	struct snpu_rt2_model *m;
	char buf[256];
	int y;

	ASSERT_EQ(0, snpu_rt2_model_create(&m));
	memset(&d, 0, sizeof(d));
	d.type = SNPU_RT2_OP_MATMUL;
	d.nin = 2;
	d.in[0] = snpu_rt2_model_input(m, &a);
	d.in[1] = snpu_rt2_model_input(m, &b);
	d.flags = SNPU_RT2_MATMUL_TRANS_A | SNPU_RT2_MATMUL_TRANS_B;
	y = snpu_rt2_model_op(m, &d);
	ASSERT_EQ(2, y);
	ASSERT_EQ(2U, m->tensors[y].shape.dims[0]);
	ASSERT_EQ(4U, m->tensors[y].shape.dims[1]);
	d.flags = SNPU_RT2_MATMUL_TRANS_A;
	ASSERT_EQ(-EINVAL, snpu_rt2_model_op(m, &d));
	d.flags = 4;
	ASSERT_EQ(-EINVAL, snpu_rt2_model_op(m, &d));
	ASSERT_EQ(-EOPNOTSUPP, lower_dump(m, 0, buf, sizeof(buf)));
	snpu_rt2_model_destroy(m);
}

/* ---- registry ----------------------------------------------------------- */

TEST(registry_complete)
{
	unsigned int k;

	for (k = 0; k < RT2_K_COUNT; k++) {
		ASSERT_NE(NULL, rt2_kernels[k].name);
		ASSERT_NE(NULL, rt2_kernels[k].run);
		ASSERT_LE(rt2_kernels[k].cls, (unsigned int)RT2_CLASS_LAUNCH);
	}
}

/* BuildTensor is the only memory kernel placed on the normal worker. */
TEST(registry_normal_worker_exception)
{
	unsigned int k;

	for (k = 0; k < RT2_K_COUNT; k++) {
		if (rt2_kernels[k].cls != RT2_CLASS_MEMORY)
			continue;
		if (k == RT2_K_BUILD_TENSOR)
			ASSERT_EQ(RT2_W_NORMAL, rt2_kernel_worker(k));
		if (k != RT2_K_BUILD_TENSOR)
			ASSERT_EQ(RT2_W_MEMORY, rt2_kernel_worker(k));
	}
}

/* Kernels with a critical-section key all run on the one memory worker. */
TEST(registry_critical_sections_serialized)
{
	unsigned int k, keyed = 0;

	for (k = 0; k < RT2_K_COUNT; k++) {
		if (!rt2_kernels[k].cs_key)
			continue;
		keyed++;
		ASSERT_EQ(RT2_W_MEMORY, rt2_kernel_worker(k));
	}
	/* Every allocation and free is keyed. */
	ASSERT_EQ((unsigned int)RT2_CS_POOL,
		  rt2_kernels[RT2_K_ALLOC_OUTPUT].cs_key);
	ASSERT_EQ((unsigned int)RT2_CS_POOL, rt2_kernels[RT2_K_FREE_MEM].cs_key);
	ASSERT_EQ((unsigned int)RT2_CS_POOL,
		  rt2_kernels[RT2_K_ALLOC_MEM_HBM].cs_key);
	ASSERT_EQ((unsigned int)RT2_CS_POOL,
		  rt2_kernels[RT2_K_ALLOC_COPY_FLOW_HBM].cs_key);
	ASSERT_GE(keyed, 6U);
}

/* The split kernels' classes: sizes normal, alloc and result memory,
 * the launch one launch; the internal launches are not compute launches.
 */
TEST(registry_split_classes)
{
	static const unsigned int h2d[4] = {
		RT2_K_CALC_DEVICE_COPY_SIZES, RT2_K_ALLOC_MEM_HBM,
		RT2_K_SHARE_H2D_COPY_RESULT, RT2_K_LAUNCH_H2D_COPY };
	static const unsigned int flow[4] = {
		RT2_K_CALC_COPY_FLOW_ALLOC_SIZES, RT2_K_ALLOC_COPY_FLOW_HBM,
		RT2_K_PREPARE_COPY_FLOW_RESULT, RT2_K_LAUNCH_COPY_FLOW_H2D };
	static const unsigned int cls[4] = {
		RT2_CLASS_NORMAL, RT2_CLASS_MEMORY, RT2_CLASS_MEMORY,
		RT2_CLASS_LAUNCH };
	unsigned int i;

	for (i = 0; i < 4; i++) {
		ASSERT_EQ(cls[i], rt2_kernels[h2d[i]].cls);
		ASSERT_EQ(cls[i], rt2_kernels[flow[i]].cls);
	}
	ASSERT_TRUE(rt2_kernel_is_launch(RT2_K_LAUNCH_H2D_COPY));
	ASSERT_TRUE(rt2_kernel_is_launch(RT2_K_LAUNCH_COPY_FLOW_H2D));
	ASSERT_FALSE(!!(rt2_kernels[RT2_K_LAUNCH_H2D_COPY].flags &
		     RT2_KF_COMPUTE_LAUNCH));
	ASSERT_FALSE(!!(rt2_kernels[RT2_K_LAUNCH_COPY_FLOW_H2D].flags &
		     RT2_KF_COMPUTE_LAUNCH));
	ASSERT_FALSE(!!(rt2_kernels[RT2_K_LAUNCH_D2H].flags &
		     RT2_KF_COMPUTE_LAUNCH));
	ASSERT_TRUE(!!(rt2_kernels[RT2_K_LAUNCH_MATMUL].flags &
		    RT2_KF_COMPUTE_LAUNCH));
	ASSERT_TRUE(!!(rt2_kernels[RT2_K_LAUNCH_CUSTOM].flags &
		    RT2_KF_COMPUTE_LAUNCH));
	/* The legacy mixed kernels are memory kernels. */
	ASSERT_EQ((unsigned int)RT2_CLASS_MEMORY,
		  rt2_kernels[RT2_K_H2D_COPY].cls);
	ASSERT_EQ((unsigned int)RT2_CLASS_MEMORY,
		  rt2_kernels[RT2_K_COPY_FLOW_LAUNCH].cls);
}

/* Every launch runs on the launch worker, in the strict launch order. */
TEST(registry_launches_on_launch_worker)
{
	unsigned int k;

	for (k = 0; k < RT2_K_COUNT; k++)
		if (rt2_kernel_is_launch(k))
			ASSERT_EQ(RT2_W_LAUNCH, rt2_kernel_worker(k));
}

TEST(registry_node_types)
{
	ASSERT_EQ(RT2_NT_FREE, rt2_kernel_node_type(RT2_K_FREE_MEM));
	ASSERT_EQ(RT2_NT_FREE_HOLD, rt2_kernel_node_type(RT2_K_FREE_MEM_HOLD));
	ASSERT_EQ(RT2_NT_LAUNCH, rt2_kernel_node_type(RT2_K_LAUNCH_ADD));
	ASSERT_EQ(RT2_NT_MEMORY, rt2_kernel_node_type(RT2_K_ALLOC_OUTPUT));
	ASSERT_EQ(RT2_NT_NORMAL, rt2_kernel_node_type(RT2_K_INFER_SHAPE));
}

/* ---- passes and modes --------------------------------------------------- */

static void expect_passes(struct __test_metadata *_metadata,
			  unsigned int flags, const char *want)
{
	const struct rt2_pass *p[8];
	char got[256] = "";
	unsigned int i, n;

	n = rt2_passes(flags, p, 8);
	for (i = 0; i < n; i++) {
		strcat(got, i ? " " : "");
		strcat(got, p[i]->name);
	}
	ASSERT_STREQ(want, got);
}

TEST(passes_by_mode)
{
	expect_passes(_metadata, 0, "CopyFlowLaunchFuse");
	expect_passes(_metadata, SNPU_RT2_EXEC_THREADS,
		      "CopyFlowLaunchFuse SplitMixedLaunchMemory RemoveLaunchFreeEdge");
	expect_passes(_metadata, SNPU_RT2_EXEC_THREADS |
		      SNPU_RT2_EXEC_DYN_MULTI_STREAM, "CopyFlowLaunchFuse");
	expect_passes(_metadata, SNPU_RT2_EXEC_DYN_MULTI_STREAM,
		      "CopyFlowLaunchFuse");
}

/* ---- golden execution graphs ------------------------------------------ */

/* y = x * w, y an output: the H2D input in each mode. */
static struct snpu_rt2_model *model_h2d(void)
{
	struct snpu_rt2_shape s = shape2(F32, 2, 2);
	struct snpu_rt2_model *m;
	int x, w, y;

	if (snpu_rt2_model_create(&m))
		return NULL;
	x = snpu_rt2_model_input(m, &s);
	w = snpu_rt2_model_param(m, &s, zeros);
	y = op2(m, SNPU_RT2_OP_MATMUL, x, w);
	snpu_rt2_model_output(m, y);
	return m;
}

static const char golden_h2d_single[] =
	"passes: CopyFlowLaunchFuse\n"
	"0 H2DCopy M p0 -> 4,5\n"
	"1 InferShape N p0 -> 2\n"
	"2 AllocOutputMemory M p0 -> 3\n"
	"3 BuildTensor M p0 -> 4,6,7\n"
	"4 LaunchMatMul L p0 -> 5,6,7\n"
	"5 FreeMemory F\n"
	"6 LaunchD2HCopy L p0 -> 7\n"
	"7 FreeMemory F\n";

static const char golden_h2d_threads[] =
	"passes: CopyFlowLaunchFuse SplitMixedLaunchMemory RemoveLaunchFreeEdge\n"
	"0 InferShape N p0 -> 1\n"
	"1 AllocOutputMemory M p0 -> 2\n"
	"2 BuildTensor M p0 -> 6,7,9,10\n"
	"3 CalcDeviceCopySizes N p0 -> 4\n"
	"4 AllocMemHbm M p0 -> 5\n"
	"5 ShareH2DCopyResult M p0 -> 6,7,8,9\n"
	"6 FreeMemoryHoldAddr H\n"
	"7 FreeMemoryHoldAddr H\n"
	"8 LaunchH2DCopy L p0 -> 9\n"
	"9 LaunchMatMul L p0 -> 10\n"
	"10 LaunchD2HCopy L p0\n";

TEST(golden_h2d_single_thread)
{
	struct snpu_rt2_model *m = model_h2d();
	char buf[2048];

	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, lower_dump(m, 0, buf, sizeof(buf)));
	ASSERT_STREQ(golden_h2d_single, buf);
	snpu_rt2_model_destroy(m);
}

TEST(golden_h2d_three_workers)
{
	struct snpu_rt2_model *m = model_h2d();
	char buf[2048];

	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, lower_dump(m, SNPU_RT2_EXEC_THREADS, buf, sizeof(buf)));
	ASSERT_STREQ(golden_h2d_threads, buf);
	snpu_rt2_model_destroy(m);
}

/* Dynamic-shape multi-stream: no split, every edge kept (as single). */
TEST(golden_h2d_dyn_multi_stream)
{
	struct snpu_rt2_model *m = model_h2d();
	char buf[2048];

	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, lower_dump(m, SNPU_RT2_EXEC_THREADS |
				SNPU_RT2_EXEC_DYN_MULTI_STREAM,
				buf, sizeof(buf)));
	ASSERT_STREQ(golden_h2d_single, buf);
	snpu_rt2_model_destroy(m);
}

/* c = a + b, both fed only there: a copy flow of two. */
static struct snpu_rt2_model *model_flow(void)
{
	struct snpu_rt2_shape s = shape2(F32, 2, 2);
	struct snpu_rt2_model *m;
	int a, b, c;

	if (snpu_rt2_model_create(&m))
		return NULL;
	a = snpu_rt2_model_input(m, &s);
	b = snpu_rt2_model_input(m, &s);
	c = op2(m, SNPU_RT2_OP_ADD, a, b);
	snpu_rt2_model_output(m, c);
	return m;
}

/* Before the passes: one CopyFlowLaunch per input. */
TEST(golden_copy_flow_before_fuse)
{
	struct snpu_rt2_model *m = model_flow();
	struct rt2_build b = { .flags = 0 };
	struct rt2_graph g;
	char buf[2048];

	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, rt2_lower(&b, m));
	ASSERT_EQ(0, rt2_finalize(&b, &g));
	rt2_graph_dump(&g, buf, sizeof(buf));
	ASSERT_STREQ("passes:\n"
		     "0 CopyFlowLaunch M p0 c1 -> 5,6\n"
		     "1 CopyFlowLaunch M p0 c1 -> 5,7\n"
		     "2 InferShape N p0 -> 3\n"
		     "3 AllocOutputMemory M p0 -> 4\n"
		     "4 BuildTensor M p0 -> 5,8,9\n"
		     "5 LaunchAdd L p0 -> 6,7,8,9\n"
		     "6 FreeMemory F\n"
		     "7 FreeMemory F\n"
		     "8 LaunchD2HCopy L p0 -> 9\n"
		     "9 FreeMemory F\n", buf);
	rt2_graph_fini(&g);
	rt2_build_fini(&b);
	snpu_rt2_model_destroy(m);
}

/* Single-thread mode keeps the fused legacy copy-flow launch. */
TEST(golden_copy_flow_single_thread)
{
	struct snpu_rt2_model *m = model_flow();
	char buf[2048];

	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, lower_dump(m, 0, buf, sizeof(buf)));
	ASSERT_STREQ("passes: CopyFlowLaunchFuse\n"
		     "0 CopyFlowLaunch M p0 c2 -> 4,5,6\n"
		     "1 InferShape N p0 -> 2\n"
		     "2 AllocOutputMemory M p0 -> 3\n"
		     "3 BuildTensor M p0 -> 4,7,8\n"
		     "4 LaunchAdd L p0 -> 5,6,7,8\n"
		     "5 FreeMemory F\n"
		     "6 FreeMemory F\n"
		     "7 LaunchD2HCopy L p0 -> 8\n"
		     "8 FreeMemory F\n", buf);
	snpu_rt2_model_destroy(m);
}

/* Three workers: the four split nodes, all with count 2. */
TEST(golden_copy_flow_three_workers)
{
	struct snpu_rt2_model *m = model_flow();
	char buf[2048];

	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, lower_dump(m, SNPU_RT2_EXEC_THREADS, buf, sizeof(buf)));
	ASSERT_STREQ("passes: CopyFlowLaunchFuse SplitMixedLaunchMemory RemoveLaunchFreeEdge\n"
		     "0 InferShape N p0 -> 1\n"
		     "1 AllocOutputMemory M p0 -> 2\n"
		     "2 BuildTensor M p0 -> 6,7,8,10,11\n"
		     "3 CalcCopyFlowAllocSizes N p0 c2 -> 4\n"
		     "4 AllocCopyFlowHbm M p0 c2 -> 5\n"
		     "5 PrepareCopyFlowResult M p0 c2 -> 6,7,8,9,10\n"
		     "6 FreeMemoryHoldAddr H\n"
		     "7 FreeMemoryHoldAddr H\n"
		     "8 FreeMemoryHoldAddr H\n"
		     "9 LaunchCopyFlowH2D L p0 c2 -> 10\n"
		     "10 LaunchAdd L p0 -> 11\n"
		     "11 LaunchD2HCopy L p0\n", buf);
	snpu_rt2_model_destroy(m);
}

/* An input read by two ops, or also an output, is an H2D, not a flow. */
TEST(copy_flow_only_for_sole_consumer)
{
	struct snpu_rt2_shape s = shape2(F32, 2, 2);
	struct snpu_rt2_model *m;
	char buf[4096];
	int a, b, c;

	ASSERT_EQ(0, snpu_rt2_model_create(&m));
	a = snpu_rt2_model_input(m, &s);
	b = snpu_rt2_model_input(m, &s);
	c = op2(m, SNPU_RT2_OP_ADD, a, b);
	op2(m, SNPU_RT2_OP_RELU, a, -1);
	snpu_rt2_model_output(m, c);
	ASSERT_EQ(0, lower_dump(m, 0, buf, sizeof(buf)));
	ASSERT_EQ(NULL, strstr(buf, "CopyFlowLaunch M"));
	ASSERT_NE(NULL, strstr(buf, "H2DCopy"));
	snpu_rt2_model_destroy(m);
}

/* Lowering is deterministic, and executor construction leaves the model
 * as it was.
 */
TEST(lowering_stable_model_unchanged)
{
	struct snpu_rt2_model *m = model_flow();
	struct snpu_rt2_exec_opts o = { .flags = SNPU_RT2_EXEC_THREADS };
	struct snpu_rt2_exec *e1, *e2;
	char a[2048], b[2048];
	struct rt2_tensor *t0;
	struct rt2_op *op0;
	struct hostdev *h;

	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, hostdev_open(&h));
	t0 = malloc(m->ntensors * sizeof(*t0));
	op0 = malloc(m->nops * sizeof(*op0));
	memcpy(t0, m->tensors, m->ntensors * sizeof(*t0));
	memcpy(op0, m->ops, m->nops * sizeof(*op0));
	ASSERT_EQ(0, snpu_rt2_exec_create(m, &h->head, &o, &e1));
	ASSERT_EQ(0, snpu_rt2_exec_create(m, &h->head, &o, &e2));
	ASSERT_EQ(0, memcmp(t0, m->tensors, m->ntensors * sizeof(*t0)));
	ASSERT_EQ(0, memcmp(op0, m->ops, m->nops * sizeof(*op0)));
	ASSERT_GT(snpu_rt2_exec_dump(e1, a, sizeof(a)), 0);
	ASSERT_GT(snpu_rt2_exec_dump(e2, b, sizeof(b)), 0);
	ASSERT_STREQ(a, b);
	snpu_rt2_exec_destroy(e1);
	snpu_rt2_exec_destroy(e2);
	free(t0);
	free(op0);
	hostdev_close(h);
	snpu_rt2_model_destroy(m);
}

/* ---- fuse on built graphs --------------------------------------------- */

static int flow_node(struct rt2_build *b, int consumer, int32_t t)
{
	int id = rt2_build_node(b, RT2_K_COPY_FLOW_LAUNCH, -1, consumer);

	b->nodes[id].count = 1;
	b->nodes[id].nin = 1;
	b->nodes[id].nout = 1;
	b->nodes[id].in[0] = t;
	b->nodes[id].out[0] = t;
	b->nodes[id].arg = consumer;
	return id;
}

/* Flows for different consumers stay apart; more than RT2_NODE_IO make
 * a second fused node.
 */
TEST(fuse_groups_by_consumer_and_bound)
{
	struct rt2_build b = { .flags = 0 };
	unsigned int i, counts[2] = { 0 };
	int la0, la1, id;

	la0 = rt2_build_node(&b, RT2_K_LAUNCH_ADD, 0, 0);
	la1 = rt2_build_node(&b, RT2_K_LAUNCH_ADD, 1, 1);
	for (i = 0; i < RT2_NODE_IO + 1; i++) {
		id = flow_node(&b, 0, (int32_t)i);
		ASSERT_EQ(0, rt2_build_edge(&b, id, la0));
	}
	id = flow_node(&b, 1, 50);
	ASSERT_EQ(0, rt2_build_edge(&b, id, la1));
	ASSERT_EQ(0, rt2_pass_copy_flow_launch_fuse(&b));
	for (i = 0; i < b.nnodes; i++) {
		const struct rt2_node *n = &b.nodes[i];

		if (n->dead || n->kernel != RT2_K_COPY_FLOW_LAUNCH)
			continue;
		ASSERT_EQ(0, rt2_copy_flow_check(n));
		ASSERT_LT(n->arg, 2);
		if (n->arg == 1)
			ASSERT_EQ(1U, n->count);
		counts[n->arg]++;
	}
	ASSERT_EQ(2U, counts[0]);	/* 8 + 1 */
	ASSERT_EQ(1U, counts[1]);
	rt2_build_fini(&b);
}

/* ---- H2D size rules, one by one ----------------------------------------- */

TEST(h2d_alloc_is_original_size)
{
	struct snpu_rt2_shape orig = shape2(F32, 8, 4), run = shape2(F32, 3, 4);
	uint64_t alloc, copy;

	rt2_h2d_sizes(&orig, &run, true, &alloc, &copy);
	ASSERT_EQ(128U, alloc);
	ASSERT_EQ(48U, copy);
}

TEST(h2d_copy_from_shape_and_type)
{
	struct snpu_rt2_shape orig = shape2(I32, 5, 5), run = shape2(I32, 5, 1);
	uint64_t alloc, copy;

	rt2_h2d_sizes(&orig, &run, true, &alloc, &copy);
	ASSERT_EQ(100U, alloc);
	ASSERT_EQ(20U, copy);
}

TEST(h2d_zero_when_no_copy_needed)
{
	struct snpu_rt2_shape s = shape2(F32, 2, 2);
	uint64_t alloc = 1, copy = 1;

	rt2_h2d_sizes(&s, &s, false, &alloc, &copy);
	ASSERT_EQ(0U, alloc);
	ASSERT_EQ(0U, copy);
}

TEST(h2d_zero_when_empty)
{
	struct snpu_rt2_shape orig = shape2(F32, 2, 2), run = shape2(F32, 2, 2);
	uint64_t alloc = 1, copy = 1;

	run.dims[1] = 0;
	rt2_h2d_sizes(&orig, &run, true, &alloc, &copy);
	ASSERT_EQ(0U, alloc);
	ASSERT_EQ(0U, copy);
}

/* ---- the consumer rules of the split ------------------------------------ */

static bool has_edge(const struct rt2_graph *g, uint32_t from, uint32_t to)
{
	unsigned int j;

	for (j = 0; j < g->nodes[from].nsucc; j++)
		if (g->succs[g->nodes[from].succ_off + j] == to)
			return true;
	return false;
}

static int find(const struct rt2_graph *g, unsigned int kernel)
{
	unsigned int i;

	for (i = 0; i < g->nnodes; i++)
		if (g->nodes[i].kernel == kernel)
			return (int)i;
	return -1;
}

/*
 * A mixed H2D/flow node feeding a tensor-building consumer, a launch
 * consumer, a normal consumer and a free: launch consumers and the free
 * wait for the copy launch, the others do not; all read the result.
 */
static void consumer_rules(struct __test_metadata *_metadata,
			   unsigned int mixed, unsigned int result,
			   unsigned int launch)
{
	struct rt2_build b = { .flags = SNPU_RT2_EXEC_THREADS };
	struct rt2_graph g;
	int src, bt, la, nm, fr, in;
	int r, l, t[4], i;

	in = rt2_build_node(&b, RT2_K_EMPTY, -1, -1);
	src = rt2_build_node(&b, mixed, -1, 3);
	b.nodes[src].count = 1;
	b.nodes[src].nin = 1;
	b.nodes[src].nout = 1;
	bt = rt2_build_node(&b, RT2_K_BUILD_TENSOR, 3, 3);
	la = rt2_build_node(&b, RT2_K_LAUNCH_RELU, 3, 3);
	nm = rt2_build_node(&b, RT2_K_EMPTY, 3, 3);
	fr = rt2_build_node(&b, RT2_K_FREE_MEM, -1, -1);
	ASSERT_EQ(0, rt2_build_edge(&b, in, src));
	ASSERT_EQ(0, rt2_build_edge(&b, src, bt));
	ASSERT_EQ(0, rt2_build_edge(&b, src, la));
	ASSERT_EQ(0, rt2_build_edge(&b, src, nm));
	ASSERT_EQ(0, rt2_build_edge(&b, src, fr));
	ASSERT_EQ(0, rt2_build_edge(&b, la, fr));
	ASSERT_EQ(0, rt2_run_passes(&b));
	ASSERT_EQ(0, rt2_finalize(&b, &g));
	r = find(&g, result);
	l = find(&g, launch);
	ASSERT_GE(r, 0);
	ASSERT_GE(l, 0);
	ASSERT_EQ(-1, find(&g, mixed));
	/* Map builder indices to IDs through the kernels (unique here). */
	t[0] = find(&g, RT2_K_BUILD_TENSOR);
	t[1] = find(&g, RT2_K_LAUNCH_RELU);
	t[3] = find(&g, RT2_K_FREE_MEM);
	for (i = 0, t[2] = -1; i < (int)g.nnodes; i++)
		if (g.nodes[i].kernel == RT2_K_EMPTY && g.nodes[i].op == 3)
			t[2] = i;
	for (i = 0; i < 4; i++)
		ASSERT_TRUE(has_edge(&g, r, t[i]));
	ASSERT_FALSE(has_edge(&g, l, t[0]));	/* tensor building */
	ASSERT_TRUE(has_edge(&g, l, t[1]));	/* launch */
	ASSERT_FALSE(has_edge(&g, l, t[2]));	/* normal */
	ASSERT_TRUE(has_edge(&g, l, t[3]));	/* free */
	/* The internal launch inherits the source's compute-node index. */
	ASSERT_EQ(3, g.nodes[l].prio);
	/* Inputs of the mixed node go to the first split node. */
	ASSERT_EQ(1U, g.nodes[find(&g, RT2_K_EMPTY)].nsucc);
	rt2_graph_fini(&g);
	rt2_build_fini(&b);
}

TEST(h2d_split_consumer_rules)
{
	consumer_rules(_metadata, RT2_K_H2D_COPY,
		       RT2_K_SHARE_H2D_COPY_RESULT, RT2_K_LAUNCH_H2D_COPY);
}

TEST(copy_flow_split_consumer_rules)
{
	consumer_rules(_metadata, RT2_K_COPY_FLOW_LAUNCH,
		       RT2_K_PREPARE_COPY_FLOW_RESULT,
		       RT2_K_LAUNCH_COPY_FLOW_H2D);
}

/* ---- CopyFlow cardinality rules, one by one ----------------------------- */

static struct rt2_node flow_ok(unsigned int count)
{
	struct rt2_node n;
	unsigned int i;

	memset(&n, 0, sizeof(n));
	n.kernel = RT2_K_COPY_FLOW_LAUNCH;
	n.count = count;
	n.nin = count;
	n.nout = count;
	for (i = 0; i < count; i++) {
		n.in[i] = (int32_t)i;
		n.out[i] = (int32_t)i;
	}
	return n;
}

TEST(copy_flow_valid)
{
	struct rt2_node n = flow_ok(3);

	ASSERT_EQ(0, rt2_copy_flow_check(&n));
}

TEST(copy_flow_zero_count)
{
	struct rt2_node n = flow_ok(0);

	ASSERT_EQ(-EPROTO, rt2_copy_flow_check(&n));
}

TEST(copy_flow_count_above_bound)
{
	struct rt2_node n = flow_ok(RT2_NODE_IO);

	n.count = RT2_NODE_IO + 1;
	ASSERT_EQ(-EPROTO, rt2_copy_flow_check(&n));
}

TEST(copy_flow_input_count_differs)
{
	struct rt2_node n = flow_ok(3);

	n.nin = 2;
	ASSERT_EQ(-EPROTO, rt2_copy_flow_check(&n));
}

TEST(copy_flow_output_count_differs)
{
	struct rt2_node n = flow_ok(3);

	n.nout = 4;
	ASSERT_EQ(-EPROTO, rt2_copy_flow_check(&n));
}

TEST(copy_flow_index_mapping_differs)
{
	struct rt2_node n = flow_ok(3);

	n.out[1] = 7;
	ASSERT_EQ(-EPROTO, rt2_copy_flow_check(&n));
}

/* Every copy-flow kernel refuses a node that breaks the rule at run time,
 * before it touches anything.
 */
TEST(copy_flow_kernels_check_at_run_time)
{
	static const unsigned int k[5] = {
		RT2_K_COPY_FLOW_LAUNCH, RT2_K_CALC_COPY_FLOW_ALLOC_SIZES,
		RT2_K_ALLOC_COPY_FLOW_HBM, RT2_K_PREPARE_COPY_FLOW_RESULT,
		RT2_K_LAUNCH_COPY_FLOW_H2D };
	struct rt2_node n = flow_ok(2);
	unsigned int i;

	n.nin = 1;
	for (i = 0; i < 5; i++)
		ASSERT_EQ(-EPROTO, rt2_kernels[k[i]].run(NULL, &n));
}

/*
 * The allocated-address count must agree: an entry with an allocation
 * size but no address of its own, or an address without a size, is
 * refused by the result and launch kernels; a consistent flow passes.
 */
TEST(copy_flow_allocated_addresses_agree)
{
	static const unsigned int k[2] = {
		RT2_K_PREPARE_COPY_FLOW_RESULT, RT2_K_LAUNCH_COPY_FLOW_H2D };
	struct rt2_value vals[2];
	struct snpu_rt2_exec e;
	struct rt2_node n = flow_ok(2);
	unsigned int i;

	memset(&e, 0, sizeof(e));
	memset(vals, 0, sizeof(vals));
	e.vals = vals;
	for (i = 0; i < 2; i++) {
		/* Entry 0 sized without an address. */
		vals[0].alloc_bytes = 16;
		ASSERT_EQ(-EPROTO, rt2_kernels[k[i]].run(&e, &n));
		/* Entry 0 addressed, entry 1 has an address but no size. */
		vals[0].addr = 0x1000;
		vals[0].owned = true;
		vals[1].addr = 0x2000;
		vals[1].owned = true;
		ASSERT_EQ(-EPROTO, rt2_kernels[k[i]].run(&e, &n));
		memset(vals, 0, sizeof(vals));
	}
	/* Consistent, nothing to copy: both pass, nothing submitted. */
	vals[0].alloc_bytes = 16;
	vals[0].addr = 0x1000;
	vals[0].owned = true;
	ASSERT_EQ(0, rt2_kernels[RT2_K_PREPARE_COPY_FLOW_RESULT].run(&e, &n));
	ASSERT_TRUE(vals[0].ready);
	ASSERT_TRUE(vals[1].ready);
	ASSERT_EQ(0, rt2_kernels[RT2_K_LAUNCH_COPY_FLOW_H2D].run(&e, &n));
}

/* The split refuses a flow that breaks the rule; all four carry the count. */
TEST(copy_flow_split_checks_and_carries_count)
{
	struct rt2_build b = { .flags = SNPU_RT2_EXEC_THREADS };
	struct rt2_graph g;
	unsigned int i, seen = 0;
	int id;

	id = flow_node(&b, 0, 0);
	b.nodes[id].count = 0;
	ASSERT_EQ(-EPROTO, rt2_pass_split_mixed_launch_memory(&b));
	b.nodes[id].count = 1;
	ASSERT_EQ(0, rt2_pass_split_mixed_launch_memory(&b));
	ASSERT_EQ(0, rt2_finalize(&b, &g));
	ASSERT_EQ(4U, g.nnodes);
	for (i = 0; i < g.nnodes; i++) {
		ASSERT_EQ(1U, g.nodes[i].count);
		seen++;
	}
	ASSERT_EQ(4U, seen);
	rt2_graph_fini(&g);
	rt2_build_fini(&b);
}

/* ---- final graph ---------------------------------------------------------- */

TEST(finalize_rejects_cycle)
{
	struct rt2_build b = { .flags = 0 };
	struct rt2_graph g;
	int a, c;

	a = rt2_build_node(&b, RT2_K_EMPTY, -1, -1);
	c = rt2_build_node(&b, RT2_K_EMPTY, -1, -1);
	ASSERT_EQ(0, rt2_build_edge(&b, a, c));
	ASSERT_EQ(0, rt2_build_edge(&b, c, a));
	ASSERT_EQ(-EINVAL, rt2_finalize(&b, &g));
	ASSERT_EQ(-EINVAL, rt2_build_edge(&b, a, a));
	rt2_build_fini(&b);
}

/* A launch that must wait for a later-priority launch cannot be ordered. */
TEST(finalize_rejects_contradicting_priorities)
{
	struct rt2_build b = { .flags = 0 };
	struct rt2_graph g;
	int hi, lo, mid;

	hi = rt2_build_node(&b, RT2_K_LAUNCH_ADD, 1, 1);
	mid = rt2_build_node(&b, RT2_K_EMPTY, -1, -1);
	lo = rt2_build_node(&b, RT2_K_LAUNCH_ADD, 0, 0);
	ASSERT_EQ(0, rt2_build_edge(&b, hi, mid));
	ASSERT_EQ(0, rt2_build_edge(&b, mid, lo));
	ASSERT_EQ(-EDEADLK, rt2_finalize(&b, &g));
	rt2_build_fini(&b);
}

/*
 * Independent launches: priority decides, not creation; CSR both ways
 * agree; duplicate edges are dropped.
 */
TEST(finalize_launch_order_and_csr)
{
	struct rt2_build b = { .flags = 0 };
	struct rt2_graph g;
	unsigned int i, j, k, npred = 0, nsucc = 0;
	int l2, l0, l1, ln, f;

	ln = rt2_build_node(&b, RT2_K_EMPTY_LAUNCH, -1, -1);
	ASSERT_EQ(0, ln);
	l2 = rt2_build_node(&b, RT2_K_LAUNCH_ADD, 2, 2);
	l0 = rt2_build_node(&b, RT2_K_LAUNCH_ADD, 0, 0);
	l1 = rt2_build_node(&b, RT2_K_LAUNCH_H2D_COPY, -1, 1);
	f = rt2_build_node(&b, RT2_K_FREE_MEM, -1, -1);
	ASSERT_EQ(0, rt2_build_edge(&b, l2, f));
	ASSERT_EQ(0, rt2_build_edge(&b, l0, f));
	ASSERT_EQ(0, rt2_build_edge(&b, l0, f));
	ASSERT_EQ(0, rt2_build_edge(&b, l1, f));
	ASSERT_EQ(0, rt2_finalize(&b, &g));
	ASSERT_EQ(4U, g.nlaunch);
	ASSERT_EQ(0, g.nodes[g.launch_order[0]].prio);
	ASSERT_EQ(1, g.nodes[g.launch_order[1]].prio);
	ASSERT_EQ(2, g.nodes[g.launch_order[2]].prio);
	ASSERT_EQ(-1, g.nodes[g.launch_order[3]].prio);	/* none: last */
	/* Launch IDs follow the launch order. */
	for (i = 1; i < g.nlaunch; i++)
		ASSERT_LT(g.launch_order[i - 1], g.launch_order[i]);
	ASSERT_EQ(3U, g.nedges);
	for (i = 0; i < g.nnodes; i++) {
		ASSERT_EQ(i, g.nodes[i].id);
		npred += g.nodes[i].npred;
		nsucc += g.nodes[i].nsucc;
		for (j = 0; j < g.nodes[i].npred; j++) {
			k = g.preds[g.nodes[i].pred_off + j];
			ASSERT_LT(k, i);	/* IDs in execution order */
			ASSERT_TRUE(has_edge(&g, k, i));
		}
	}
	ASSERT_EQ(3U, npred);
	ASSERT_EQ(3U, nsucc);
	rt2_graph_fini(&g);
	rt2_build_fini(&b);
}

TEST_HARNESS_MAIN
