/*
 * The test runner every test program shares: runs every test of its list
 * (the header TEST_LIST names: unit/test-list.h, client/client-list.h,
 * mount/mount-list.h) or the ones named on the command line, each in a
 * child process of its own (its own process group) with the list's
 * timeout, and prints TAP on stdout.  A test passes when its child exits 0,
 * is skipped when it exits 77 (TEST_SKIP), and fails on a crash, an ASSERT
 * (abort) or the timeout; a child that outlives its timeout is killed.
 * Also the helpers test.h declares for the tests.
 *
 *   PROGRAM                 run all tests
 *   PROGRAM PATTERN...      run the tests whose names match (shell globs)
 *   PROGRAM --list          print the test names
 */
#include "test.h"
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef TEST_LIST
#error "TEST_LIST names the program's list of tests (see tests/meson.build)"
#endif

#define TEST_ENTRY(name, timeout_ms) int run_test_##name(void);
#include TEST_LIST
#undef TEST_ENTRY

struct test {
	const char *name;
	int (*fn)(void);
	unsigned timeout_ms;
};

static const struct test tests[] = {
#define TEST_ENTRY(name, timeout_ms) { #name, run_test_##name, timeout_ms },
#include TEST_LIST
#undef TEST_ENTRY
};

void test_stop_process(pid_t pid)
{
	if (!proc_stop(pid, 5000))
		TEST__FAIL("pid %d did not stop within 5 s (SIGSTOP)",
			   (int)pid);
}

void test_wait_task(task_t *t, const char *what, unsigned ms)
{
	struct task_info ti;

	ASSERT_WITHIN((region_task_snapshot(t, &ti), ti.waiting) &&
			      (!what || strcmp(ti.wait_what, what) == 0),
		      ms);
}

void test__mem_eq(const char *file, int line, const char *a_expr,
		  const char *b_expr, const void *a, const void *b, size_t len)
{
	const unsigned char *x = a, *y = b;
	size_t i, n;

	if (len == 0 || memcmp(a, b, len) == 0)
		return;
	for (i = 0; x[i] == y[i]; i++)
		;
	n = len - i < 16 ? len - i : 16;
	fprintf(stderr,
		"%s:%d: ASSERT_MEM_EQ(%s, %s, %zu) failed: they differ from "
		"byte %zu on\n  %s:",
		file, line, a_expr, b_expr, len, i, a_expr);
	for (size_t k = 0; k < n; k++)
		fprintf(stderr, " %02x", x[i + k]);
	fprintf(stderr, "\n  %s:", b_expr);
	for (size_t k = 0; k < n; k++)
		fprintf(stderr, " %02x", y[i + k]);
	fputc('\n', stderr);
	fflush(stderr);
	abort();
}

void test_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000l };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int test_run_child(void (*fn)(void *), void *arg, char *buf, size_t len)
{
	size_t off = 0;
	int p[2], status;
	pid_t pid;

	if (pipe(p) < 0)
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		fn(arg);
		_exit(0);
	}
	close(p[1]);
	for (;;) {
		ssize_t n = read(p[0], buf + off, len - 1 - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
		if (off == len - 1)
			break;
	}
	buf[off] = '\0';
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

/* Waits for pid with a deadline; returns its status, or -1 on timeout. */
static int wait_child(pid_t pid, unsigned timeout_ms)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	uint64_t end = region_now_ns() + (uint64_t)timeout_ms * 1000000u;
	int status;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		uint64_t now;

		if (r == pid)
			break;
		now = region_now_ns();
		if (now >= end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			status = -1;
			break;
		}
		if (fd >= 0) {
			struct pollfd p = { fd, POLLIN, 0 };

			poll(&p, 1, (int)((end - now) / 1000000u) + 1);
		} else {
			test_sleep_ms(1);
		}
	}
	if (fd >= 0)
		close(fd);
	return status;
}

static int run_one(unsigned n, const struct test *t)
{
	uint64_t start = region_now_ns();
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		printf("not ok %u - %s # fork: %s\n", n, t->name,
		       strerror(errno));
		return 1;
	}
	if (pid == 0) {
		setpgid(0, 0);
		_exit(t->fn() == 0 ? 0 : 1);
	}
	status = wait_child(pid, t->timeout_ms);
	if (status == -1) {
		printf("not ok %u - %s # timed out after %u ms\n", n, t->name,
		       t->timeout_ms);
		return 1;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		printf("ok %u - %s # %.1f ms\n", n, t->name,
		       (double)(region_now_ns() - start) / 1e6);
		return 0;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == TEST_SKIP_STATUS) {
		printf("ok %u - %s # SKIP (see the test's message)\n", n,
		       t->name);
		return 0;
	}
	if (WIFSIGNALED(status))
		printf("not ok %u - %s # killed by signal %d\n", n, t->name,
		       WTERMSIG(status));
	else
		printf("not ok %u - %s # exit status %d\n", n, t->name,
		       WEXITSTATUS(status));
	return 1;
}

static bool selected(const char *name, int argc, char **argv)
{
	if (argc <= 1)
		return true;
	for (int i = 1; i < argc; i++)
		if (fnmatch(argv[i], name, 0) == 0)
			return true;
	return false;
}

int main(int argc, char **argv)
{
	unsigned count = 0, n = 0, failed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 &&
	    (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		printf("usage: %s [--list | PATTERN...]\n", argv[0]);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "--list") == 0) {
		for (unsigned i = 0; i < ARRAY_SIZE(tests); i++)
			printf("%s\n", tests[i].name);
		return 0;
	}
	for (unsigned i = 0; i < ARRAY_SIZE(tests); i++)
		count += selected(tests[i].name, argc, argv);
	if (count == 0) {
		fprintf(stderr, "%s: no test matches\n", argv[0]);
		return 2;
	}
	printf("1..%u\n", count);
	/*
	 * The tests send SIGINT and SIGQUIT and expect their default action
	 * (the process killed) where nothing handles them; a shell that ran
	 * us in the background (a non-interactive one's "cmd &") left them
	 * ignored, which every process the tests start would inherit.
	 */
	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	for (unsigned i = 0; i < ARRAY_SIZE(tests); i++)
		if (selected(tests[i].name, argc, argv))
			failed += run_one(++n, &tests[i]);
	return failed ? 1 : 0;
}
