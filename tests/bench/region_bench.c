/*
 * The region benchmark: what a region begin/end pair costs under the region
 * policy and under the sigmask policy, and what the wait wrapper adds to a
 * raw poll() on an fd that is already ready.  Prints name=value lines; every
 * figure comes from the same run, each the best of several interleaved
 * rounds: noise from a shared machine only ever adds time, and interleaving
 * makes it hit both sides of a ratio alike.
 */
#include "intrfs/region.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define ROUNDS 9

/*
 * The barrier keeps the compiler from merging iterations: each pair reloads
 * the task's state as code between two regions would.
 */
static double pairs(long n)
{
	uint64_t t0 = region_now_ns();

	for (long i = 0; i < n; i++) {
		region_begin_uninterruptible("bench");
		region_end_uninterruptible();
		__asm__ volatile("" ::: "memory");
	}
	return (double)(region_now_ns() - t0) / (double)n;
}

static double waits(int fd, long n)
{
	uint64_t t0 = region_now_ns();

	for (long i = 0; i < n; i++) {
		int rc = region_task_wait_fd(fd, POLLIN, TASK_INTERRUPTIBLE,
					     TASK_FOREVER, NULL);

		if (rc != 0)
			abort();
	}
	return (double)(region_now_ns() - t0) / (double)n;
}

static double polls(int fd, long n)
{
	uint64_t t0 = region_now_ns();

	for (long i = 0; i < n; i++) {
		struct pollfd p = { fd, POLLIN, 0 };

		if (poll(&p, 1, 0) != 1)
			abort();
	}
	return (double)(region_now_ns() - t0) / (double)n;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double best(double *v)
{
	qsort(v, ROUNDS, sizeof(*v), cmp);
	return v[0];
}

int main(int argc, char **argv)
{
	struct task_attr region_attr = { "bench-region", REGION_POLICY_REGION,
					 NULL };
	struct task_attr sigmask_attr = { "bench-sigmask",
					  REGION_POLICY_SIGMASK, NULL };
	double region[ROUNDS], sigmask[ROUNDS], wait[ROUNDS], raw[ROUNDS];
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	long n_pair = (long)(20000000 * scale), n_sys = (long)(200000 * scale);
	task_t *rt = region_task_create(&region_attr);
	task_t *st = region_task_create(&sigmask_attr);
	int fd = eventfd(1, EFD_NONBLOCK);

	if (!rt || !st || fd < 0) {
		perror("region_bench");
		return 1;
	}
	if (n_pair < 1000)
		n_pair = 1000;
	if (n_sys < 100)
		n_sys = 100;
	for (int r = 0; r < ROUNDS; r++) {
		region_task_enter(rt);
		region[r] = pairs(n_pair);
		wait[r] = waits(fd, n_sys);
		raw[r] = polls(fd, n_sys);
		region_task_leave(rt);
		region_task_enter(st);
		sigmask[r] = pairs(n_sys);
		region_task_leave(st);
	}
	double rp = best(region), sp = best(sigmask);
	double wr = best(wait), pr = best(raw);

	printf("region_pair_ns=%.2f\n", rp);
	printf("sigmask_pair_ns=%.1f\n", sp);
	printf("sigmask_over_region=%.0f\n", sp / rp);
	printf("wait_ready_ns=%.1f\n", wr);
	printf("poll_ready_ns=%.1f\n", pr);
	printf("wait_over_poll=%.3f\n", wr / pr);
	region_task_put(rt);
	region_task_put(st);
	close(fd);
	return 0;
}
