/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Heap allocations counted through ASan's malloc hook, for the unit tests
 * that check a path allocates nothing: read @allocs before and after.
 */
#ifndef SNPU_TESTS_ALLOC_COUNT_H
#define SNPU_TESTS_ALLOC_COUNT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

int __sanitizer_install_malloc_and_free_hooks(
	void (*malloc_hook)(const volatile void *, size_t),
	void (*free_hook)(const volatile void *)) __attribute__((weak));

static atomic_ulong allocs;

static void count_malloc(const volatile void *p, size_t size)
{
	atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
}

static void count_free(const volatile void *p)
{
}

/* Install the hook once per test process. Return: false without ASan. */
static bool alloc_counter_on(void)
{
	static bool on;

	if (on)
		return true;
	if (!__sanitizer_install_malloc_and_free_hooks ||
	    !__sanitizer_install_malloc_and_free_hooks(count_malloc,
						       count_free))
		return false;
	on = true;
	return true;
}

#endif
