/*
 * Small helpers every part of intrfs shares: private, never installed.
 */
#ifndef INTRFS_UTIL_H
#define INTRFS_UTIL_H

#include <stdatomic.h>
#include <stdint.h>

/* The number of elements of array a (an array, not a pointer). */
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * *p becomes v if v is more: a high-water mark kept by many threads.
 * Relaxed: a statistic, nothing orders on it.
 */
static inline void atomic_max_u64(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t cur = atomic_load_explicit(p, memory_order_relaxed);

	while (v > cur &&
	       !atomic_compare_exchange_weak_explicit(
		       p, &cur, v, memory_order_relaxed, memory_order_relaxed))
		;
}

#endif
