// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libsnpu: the kernel's checks of a task descriptor, built into the
 * library so that graph capture refuses a task during recording with the
 * errno SNPU_IOC_SUBMIT would give (see graph.c). kmod/core is pure C
 * (GPL-2.0 OR MIT) that the module and the native unit tests build; the
 * library uses it under MIT. Only snpu_task_check() (with
 * snpu_coll_check()), snpu_kernel_buffers() and snpu_kernel_writes() are
 * called; the exported
 * symbol list (libsnpu.map) keeps all of it local to libsnpu.so.
 */
#include "../kmod/core/task.c"
#include "../kmod/core/coll.c"
#include "../kmod/core/kernels.c"
#include "../kmod/core/kernels_f32.c"
#include "../kmod/core/kernels_f32_avx2.c"
