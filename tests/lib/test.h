/*
 * The harness every test program shares (unit, client, mount): TEST_IMPL()
 * defines a test, the ASSERT_*() macros check a value and abort the test's
 * child process when it is wrong, and runner.c runs each test in a child of
 * its own with a timeout and prints TAP.  A program's tests are listed in the
 * header its TEST_LIST names (unit/test-list.h, client/client-list.h,
 * mount/mount-list.h).
 *
 * The assertions follow libuv's and print both sides: ASSERT_EQ and its kin
 * compare signed integers (as long long), ASSERT_UINT64_EQ and its kin
 * unsigned ones (as uint64_t, so that a count or a duration past 2^63 is not
 * shown negative), ASSERT_PTR_EQ, ASSERT_NULL and ASSERT_NOT_NULL pointers,
 * ASSERT_STR_EQ strings, ASSERT_MEM_EQ byte ranges (with the first
 * difference and the bytes from there), ASSERT_CONTAINS a substring.
 * ASSERT_WITHIN polls a condition until a deadline: a test waits for what it
 * expects that way, never with a fixed sleep.  A failed assertion never
 * returns.
 */
#ifndef INTRFS_TEST_H
#define INTRFS_TEST_H

#include "intrfs/util.h"
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <intrfs/region.h>

#define TEST_IMPL(name)            \
	int run_test_##name(void); \
	int run_test_##name(void)

#define TEST__FAIL(...)                                         \
	do {                                                    \
		fprintf(stderr, "%s:%d: ", __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__);                   \
		fputc('\n', stderr);                            \
		fflush(stderr);                                 \
		abort();                                        \
	} while (0)

#define TEST__CMP(a, op, b)                                                 \
	do {                                                                \
		long long a_ = (long long)(a), b_ = (long long)(b);         \
		if (!(a_ op b_))                                            \
			TEST__FAIL("ASSERT(%s %s %s) failed: %lld %s %lld", \
				   #a, #op, #b, a_, #op, b_);               \
	} while (0)

#define ASSERT_EQ(a, b) TEST__CMP(a, ==, b)
#define ASSERT_NE(a, b) TEST__CMP(a, !=, b)
#define ASSERT_LT(a, b) TEST__CMP(a, <, b)
#define ASSERT_LE(a, b) TEST__CMP(a, <=, b)
#define ASSERT_GT(a, b) TEST__CMP(a, >, b)
#define ASSERT_GE(a, b) TEST__CMP(a, >=, b)

#define TEST__CMP_U64(a, op, b)                                        \
	do {                                                           \
		uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);       \
		if (!(a_ op b_))                                       \
			TEST__FAIL("ASSERT(%s %s %s) failed: %" PRIu64 \
				   " %s %" PRIu64,                     \
				   #a, #op, #b, a_, #op, b_);          \
	} while (0)

#define ASSERT_UINT64_EQ(a, b) TEST__CMP_U64(a, ==, b)
#define ASSERT_UINT64_NE(a, b) TEST__CMP_U64(a, !=, b)
#define ASSERT_UINT64_LT(a, b) TEST__CMP_U64(a, <, b)
#define ASSERT_UINT64_LE(a, b) TEST__CMP_U64(a, <=, b)
#define ASSERT_UINT64_GT(a, b) TEST__CMP_U64(a, >, b)
#define ASSERT_UINT64_GE(a, b) TEST__CMP_U64(a, >=, b)

#define ASSERT(x)                                            \
	do {                                                 \
		if (!(x))                                    \
			TEST__FAIL("ASSERT(%s) failed", #x); \
	} while (0)

#define TEST__CMP_PTR(a, op, b)                                             \
	do {                                                                \
		const void *a_ = (a), *b_ = (b);                            \
		if (!(a_ op b_))                                            \
			TEST__FAIL("ASSERT(%s %s %s) failed: %p %s %p", #a, \
				   #op, #b, a_, #op, b_);                   \
	} while (0)

#define ASSERT_PTR_EQ(a, b) TEST__CMP_PTR(a, ==, b)
#define ASSERT_PTR_NE(a, b) TEST__CMP_PTR(a, !=, b)
#define ASSERT_NULL(p) TEST__CMP_PTR(p, ==, NULL)

/* errno says why a call that returns a pointer gave NULL. */
#define ASSERT_NOT_NULL(p)                                               \
	do {                                                             \
		const void *p_ = (p);                                    \
		int e_ = errno;                                          \
		if (p_ == NULL)                                          \
			TEST__FAIL("ASSERT_NOT_NULL(%s) failed (errno: " \
				   "%s)",                                \
				   #p, strerror(e_));                    \
	} while (0)

#define TEST__STR(a, b, equal)                                                 \
	do {                                                                   \
		const char *a_ = (a), *b_ = (b);                               \
		if (!a_ || !b_ || (strcmp(a_, b_) == 0) != (equal))            \
			TEST__FAIL("ASSERT_STR_%s(%s, %s) failed: \"%s\" "     \
				   "%s \"%s\"",                                \
				   (equal) ? "EQ" : "NE", #a, #b,              \
				   a_ ? a_ : "(null)",                         \
				   (equal) ? "!=" : "==", b_ ? b_ : "(null)"); \
	} while (0)

#define ASSERT_STR_EQ(a, b) TEST__STR(a, b, true)
#define ASSERT_STR_NE(a, b) TEST__STR(a, b, false)

/* len bytes at a and b are the same (len 0: always; NULL is fine then). */
#define ASSERT_MEM_EQ(a, b, len) \
	test__mem_eq(__FILE__, __LINE__, #a, #b, (a), (b), (size_t)(len))

#define ASSERT_CONTAINS(hay, needle)                                         \
	do {                                                                 \
		const char *h_ = (hay), *n_ = (needle);                      \
		if (!h_ || !strstr(h_, n_))                                  \
			TEST__FAIL("ASSERT_CONTAINS(%s, %s) failed: \"%s\" " \
				   "does not contain \"%s\"",                \
				   #hay, #needle, h_ ? h_ : "(null)", n_);   \
	} while (0)

/*
 * Polls cond every millisecond until it holds; fails the test if it still
 * does not after ms milliseconds.
 */
#define ASSERT_WITHIN(cond, ms)                                             \
	do {                                                                \
		uint64_t end_ = region_now_ns() + (uint64_t)(ms)*1000000u;  \
		while (!(cond)) {                                           \
			if (region_now_ns() > end_)                         \
				TEST__FAIL("ASSERT_WITHIN(%s, %s) failed: " \
					   "still false after %u ms",       \
					   #cond, #ms, (unsigned)(ms));     \
			test_sleep_ms(1);                                   \
		}                                                           \
	} while (0)

/* Skips the running test (exit 77, as automake and libfuse's tests do). */
#define TEST_SKIP_STATUS 77
#define TEST_SKIP(...)                                 \
	do {                                           \
		fprintf(stderr, "SKIP: " __VA_ARGS__); \
		fputc('\n', stderr);                   \
		exit(TEST_SKIP_STATUS);                \
	} while (0)

/* What the macros call (runner.c). */
void test__mem_eq(const char *file, int line, const char *a_expr,
		  const char *b_expr, const void *a, const void *b, size_t len);

/* Helpers shared by tests (runner.c). */
void test_sleep_ms(unsigned ms);
/* SIGSTOP, then wait until every thread of pid has stopped (5 s at most). */
void test_stop_process(pid_t pid);
/*
 * Waits up to ms for task t to wait, in a wait named what ("poll",
 * "mutex", "cond", "sleep"; NULL: any); fails the test if it does not.
 */
void test_wait_task(task_t *t, const char *what, unsigned ms);
/*
 * Runs fn(arg) in a forked child, collects what it wrote to stderr into
 * buf, and returns its wait status.
 */
int test_run_child(void (*fn)(void *), void *arg, char *buf, size_t len);

#endif
