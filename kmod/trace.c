// SPDX-License-Identifier: GPL-2.0
/*
 * snpu tracepoints: the one file that instantiates the events of
 * kmod/trace.h.
 */
#include "snpu.h"

#define CREATE_TRACE_POINTS
#include "trace.h"
