// SPDX-License-Identifier: GPL-2.0
/*
 * snpu: the instruction set of the built-in f32 kernels, chosen once at
 * load (module parameter kernel_isa).
 *
 * The kernels come in an SSE2 build, which every x86-64 CPU runs, and an
 * AVX2 build (kmod/core/kernels_f32_avx2.c) with twice the lanes; both give
 * the same bits. "auto" takes AVX2 when the CPU has it and the kernel's
 * FPU state covers the YMM registers (so that kernel_fpu_begin() saves a
 * user's AVX state before a core uses them), else SSE2. The parameter
 * reads back the instruction set in use.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/moduleparam.h>
#include <linux/string.h>
#include <asm/cpufeature.h>
#include <asm/fpu/api.h>

#include "core/kernels.h"
#include "snpu.h"

#define SNPU_ISA_AUTO	-1

static int snpu_isa_want = SNPU_ISA_AUTO;
static bool snpu_isa_chosen;

static const char *const snpu_isa_names[] = {
	[SNPU_ISA_SSE2] = "sse2",
	[SNPU_ISA_AVX2] = "avx2",
};

static int snpu_isa_set(const char *val, const struct kernel_param *kp)
{
	if (sysfs_streq(val, "auto")) {
		snpu_isa_want = SNPU_ISA_AUTO;
		return 0;
	}
	if (sysfs_streq(val, "sse2")) {
		snpu_isa_want = SNPU_ISA_SSE2;
		return 0;
	}
	if (sysfs_streq(val, "avx2")) {
		snpu_isa_want = SNPU_ISA_AVX2;
		return 0;
	}
	return -EINVAL;
}

static int snpu_isa_get(char *buf, const struct kernel_param *kp)
{
	if (snpu_isa_chosen)
		return sysfs_emit(buf, "%s\n", snpu_kernel_isa_name());
	if (snpu_isa_want == SNPU_ISA_AUTO)
		return sysfs_emit(buf, "auto\n");
	return sysfs_emit(buf, "%s\n", snpu_isa_names[snpu_isa_want]);
}

static const struct kernel_param_ops snpu_isa_ops = {
	.set = snpu_isa_set,
	.get = snpu_isa_get,
};

module_param_cb(kernel_isa, &snpu_isa_ops, NULL, 0444);
MODULE_PARM_DESC(kernel_isa, "instruction set of the f32 kernels: auto (AVX2 when the CPU has it, else SSE2), sse2 or avx2 (default auto); reads back the one in use");

/* Can the cores use AVX2 inside kernel_fpu_begin()? */
static bool snpu_cpu_avx2(void)
{
	return boot_cpu_has(X86_FEATURE_AVX) &&
	       boot_cpu_has(X86_FEATURE_AVX2) &&
	       cpu_has_xfeatures(XFEATURE_MASK_SSE | XFEATURE_MASK_YMM, NULL);
}

/**
 * snpu_isa_init() - choose the f32 kernels' instruction set
 *
 * Context: at load, before any device exists, so before any kernel runs.
 * Return: 0, or -EINVAL when kernel_isa=avx2 asks for what the CPU lacks.
 */
int snpu_isa_init(void)
{
	int isa = snpu_isa_want;

	if (isa == SNPU_ISA_AUTO)
		isa = snpu_cpu_avx2() ? SNPU_ISA_AVX2 : SNPU_ISA_SSE2;
	if (isa == SNPU_ISA_AVX2 && !snpu_cpu_avx2()) {
		pr_err("kernel_isa=avx2, but this CPU cannot run AVX2 in the kernel\n");
		return -EINVAL;
	}
	if (snpu_kernel_set_isa(isa))
		return -EINVAL;
	snpu_isa_chosen = true;
	pr_debug("f32 kernels: %s\n", snpu_kernel_isa_name());
	return 0;
}
