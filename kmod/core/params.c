// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Validation of the module parameters.
 */
#include "core.h"

/**
 * snpu_params_check() - check module parameters against their limits
 * @p: the parameters of this load
 *
 * Return: NULL when every parameter is in range, else a message naming the
 * first bad parameter and its range, for the load to print before failing.
 */
const char *snpu_params_check(const struct snpu_params *p)
{
	if (p->devices < 1 || p->devices > SNPU_MAX_DEVICES)
		return "devices must be in [1, 16]";
	if (p->cores < 1 || p->cores > SNPU_MAX_CORES)
		return "cores must be in [1, 64]";
	if (p->mem_mb < SNPU_MIN_MEM_MB || p->mem_mb > SNPU_MAX_MEM_MB)
		return "mem_mb must be in [1, 16384]";
	return NULL;
}
