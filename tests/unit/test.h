/*
 * The unit test harness: TEST_IMPL() defines a test, the ASSERT_*() macros
 * print both sides and abort, and runner.c runs each test in its own child
 * process with a timeout and prints TAP.  Tests are listed in test-list.h.
 */
#ifndef INTRFS_TEST_H
#define INTRFS_TEST_H

#include <inttypes.h>
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

#define ASSERT(x)                                            \
	do {                                                 \
		if (!(x))                                    \
			TEST__FAIL("ASSERT(%s) failed", #x); \
	} while (0)

#define ASSERT_NOT_NULL(p) ASSERT((p) != NULL)

/* Skips the running test (exit 77, as automake and libfuse's tests do). */
#define TEST_SKIP_STATUS 77
#define TEST_SKIP(...)                                 \
	do {                                           \
		fprintf(stderr, "SKIP: " __VA_ARGS__); \
		fputc('\n', stderr);                   \
		exit(TEST_SKIP_STATUS);                \
	} while (0)

#define ASSERT_STR_EQ(a, b)                                                   \
	do {                                                                  \
		const char *a_ = (a), *b_ = (b);                              \
		if (strcmp(a_, b_) != 0)                                      \
			TEST__FAIL("ASSERT_STR_EQ(%s, %s) failed: \"%s\" != " \
				   "\"%s\"",                                  \
				   #a, #b, a_, b_);                           \
	} while (0)

#define ASSERT_CONTAINS(hay, needle)                                         \
	do {                                                                 \
		const char *h_ = (hay), *n_ = (needle);                      \
		if (!h_ || !strstr(h_, n_))                                  \
			TEST__FAIL("ASSERT_CONTAINS(%s, %s) failed: \"%s\" " \
				   "does not contain \"%s\"",                \
				   #hay, #needle, h_ ? h_ : "(null)", n_);   \
	} while (0)

/* Helpers shared by tests (runner.c). */
void test_sleep_ms(unsigned ms);
/* SIGSTOP, then wait until every thread of pid has stopped. */
void test_stop_process(pid_t pid);
/*
 * Runs fn(arg) in a forked child, collects what it wrote to stderr into
 * buf, and returns its wait status.
 */
int test_run_child(void (*fn)(void *), void *arg, char *buf, size_t len);

#endif
