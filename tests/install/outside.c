/*
 * outside: a program built outside the tree against the installed region
 * library, with nothing but what `pkg-config --cflags --libs intrfs-region`
 * gives it.  It runs one task through nested regions and an interrupt raised
 * inside them, and checks what the public calls report: the depths, the
 * effective mode, the interrupt held back in the regions and delivered at
 * the first interruptible point after them.  Prints "ok" and exits 0 only
 * when every check holds; it never uses a name that region.h does not
 * declare.
 */
#include <intrfs/region.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                           \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "outside: %s:%d: check failed: %s\n", \
				__FILE__, __LINE__, #cond);                   \
			exit(1);                                              \
		}                                                             \
	} while (0)

static void check_depths(unsigned want_u, unsigned want_k)
{
	unsigned u, k;

	region_depths(&u, &k);
	CHECK(u == want_u);
	CHECK(k == want_k);
}

int main(void)
{
	struct task_attr attr = { "outside", REGION_POLICY_REGION, NULL };
	struct region_stats before, after;
	enum region_policy policy;
	task_t *t;

	CHECK(region_policy_parse("region", &policy) == 0);
	CHECK(policy == REGION_POLICY_REGION);
	region_stats_get(&before);

	t = region_task_create(&attr);
	CHECK(t != NULL);
	region_task_enter(t);
	CHECK(region_task_current() == t);
	check_depths(0, 0);

	region_begin_uninterruptible("outside: hard");
	region_begin_killable("outside: killable");
	check_depths(1, 1);
	CHECK(region_task_effective_mode(TASK_INTERRUPTIBLE) ==
	      TASK_UNINTERRUPTIBLE);

	/* Raised inside the regions: pending, but no wait may deliver it. */
	region_task_interrupt(t, TASK_INTR_FATAL);
	CHECK(region_task_pending(t) == TASK_INTR_FATAL);
	CHECK(region_task_check_interrupt(TASK_INTERRUPTIBLE) == 0);

	region_end_killable();
	region_end_uninterruptible();
	check_depths(0, 0);

	/* Out of the regions, the first interruptible point delivers it. */
	CHECK(region_task_check_interrupt(TASK_INTERRUPTIBLE) == -EINTR);
	CHECK(region_task_sleep(1000000, TASK_KILLABLE) == -EINTR);
	region_task_flush_interrupts(t);
	CHECK(region_task_sleep(1000, TASK_INTERRUPTIBLE) == 0);

	region_task_leave(t);
	CHECK(region_task_current() == NULL);
	region_task_put(t);

	region_stats_get(&after);
	CHECK(after.raised == before.raised + 1);
	CHECK(after.deferred == before.deferred + 1);
	CHECK(after.deferred_delivered == before.deferred_delivered + 1);
	printf("ok\n");
	return 0;
}
