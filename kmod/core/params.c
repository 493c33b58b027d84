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
	if (p->ctx_mem_mb > p->mem_mb)
		return "ctx_mem_mb must be in [0, mem_mb]";
	if (p->ctx_host_mb < 1 || p->ctx_host_mb > SNPU_MAX_CTX_HOST_MB)
		return "ctx_host_mb must be in [1, 16384]";
	if (p->ctx_streams < 1 || p->ctx_streams > SNPU_MAX_CTX_STREAMS)
		return "ctx_streams must be in [1, 4096]";
	if (p->ctx_events < 1 || p->ctx_events > SNPU_MAX_CTX_EVENTS)
		return "ctx_events must be in [1, 16384]";
	if (p->ctx_tasks < 1 || p->ctx_tasks > SNPU_MAX_CTX_TASKS)
		return "ctx_tasks must be in [1, 32768]";
	if (p->ctx_graphs < 1 || p->ctx_graphs > SNPU_MAX_CTX_GRAPHS)
		return "ctx_graphs must be in [1, 4096]";
	if (p->ctx_graph_mb < 1 || p->ctx_graph_mb > SNPU_MAX_CTX_GRAPH_MB)
		return "ctx_graph_mb must be in [1, 4096]";
	return NULL;
}
