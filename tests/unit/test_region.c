/*
 * Tests of the region API: what a wait returns for each policy, region
 * stack, per-call mode and interrupt kind (a table), deferred delivery after
 * the regions end, the checks (unbalanced end, a task leaving inside a
 * region, the hung-task watchdog), and the mutex and condition waits.
 * report_lock, a leaf, guards what the report hook captured: the watchdog
 * thread reports while the test reads.
 */
#include "test.h"
#include "stack.h"

#include "intrfs/region.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* Expected outcome of an interrupt for one wait. */
enum outcome {
	NOW, /* the wait returns -EINTR */
	LATER, /* the wait completes; the next same-mode wait after the
		* regions end returns -EINTR */
	NEVER, /* the wait completes and a same-mode wait after the regions
		* end does not deliver it either */
};

#define I TASK_INTERRUPTIBLE
#define K TASK_KILLABLE
#define U TASK_UNINTERRUPTIBLE
#define NRM TASK_INTR_NORMAL
#define FTL TASK_INTR_FATAL

/*
 * Region stacks are written outermost first: "UK" is a killable region
 * inside an uninterruptible one.
 */
static const struct table_row {
	const char *stack;
	enum task_mode mode;
	enum task_intr kind;
	enum outcome percall, region, sigmask;
} table[] = {
	/* No region: the per-call mode decides under every policy. */
	{ "", I, NRM, NOW, NOW, NOW },
	{ "", I, FTL, NOW, NOW, NOW },
	{ "", K, NRM, NEVER, NEVER, NEVER },
	{ "", K, FTL, NOW, NOW, NOW },
	{ "", U, NRM, NEVER, NEVER, NEVER },
	{ "", U, FTL, NEVER, NEVER, NEVER },
	/* One uninterruptible region: the seed's bug under percall. */
	{ "U", I, NRM, NOW, LATER, LATER },
	{ "U", I, FTL, NOW, LATER, LATER },
	{ "U", K, FTL, NOW, LATER, LATER },
	{ "U", K, NRM, NEVER, NEVER, NEVER },
	{ "U", U, FTL, NEVER, NEVER, NEVER },
	/* One killable region: only fatal interrupts get through. */
	{ "K", I, NRM, NOW, LATER, LATER },
	{ "K", I, FTL, NOW, NOW, NOW },
	{ "K", K, FTL, NOW, NOW, NOW },
	{ "K", K, NRM, NEVER, NEVER, NEVER },
	{ "K", U, FTL, NEVER, NEVER, NEVER },
	/* Mixed nesting: an inner region never loosens an outer one. */
	{ "UK", I, FTL, NOW, LATER, LATER },
	{ "UK", K, FTL, NOW, LATER, LATER },
	{ "UK", I, NRM, NOW, LATER, LATER },
	{ "KU", I, FTL, NOW, LATER, LATER },
	{ "KU", I, NRM, NOW, LATER, LATER },
	{ "UKU", I, FTL, NOW, LATER, LATER },
	{ "UKU", K, FTL, NOW, LATER, LATER },
	{ "KUK", I, FTL, NOW, LATER, LATER },
	{ "KUK", I, NRM, NOW, LATER, LATER },
	{ "KKK", I, FTL, NOW, NOW, NOW },
	{ "KKK", I, NRM, NOW, LATER, LATER },
	{ "UUU", I, NRM, NOW, LATER, LATER },
	{ "UUU", K, FTL, NOW, LATER, LATER },
	{ "KKU", U, FTL, NEVER, NEVER, NEVER },
	{ "KUU", K, NRM, NEVER, NEVER, NEVER },
	{ "KKKK", K, FTL, NOW, NOW, NOW },
	{ "UKUK", K, FTL, NOW, LATER, LATER },
};

void test_begin_stack(const char *stack)
{
	for (const char *p = stack; *p; p++) {
		if (*p == 'U')
			region_begin_uninterruptible("test: uninterruptible");
		else
			region_begin_killable("test: killable");
	}
}

void test_end_stack(const char *stack)
{
	for (size_t i = strlen(stack); i-- > 0;) {
		if (stack[i] == 'U')
			region_end_uninterruptible();
		else
			region_end_killable();
	}
}

enum when { BEFORE_WAIT, DURING_WAIT };

struct table_case {
	const struct table_row *row;
	enum region_policy policy;
	enum when when;
	task_t *task;
	int pipefd[2];
	sem_t entered, raised;
	int r1, r2;
	unsigned deferred, pending;
};

static void *table_worker(void *arg)
{
	struct table_case *tc = arg;
	char byte;

	region_task_enter(tc->task);
	sem_post(&tc->entered);
	if (tc->when == BEFORE_WAIT)
		sem_wait(&tc->raised);
	test_begin_stack(tc->row->stack);
	tc->r1 = region_task_wait_fd(tc->pipefd[0], POLLIN, tc->row->mode,
				     2000000000, NULL);
	if (tc->r1 == 0 && read(tc->pipefd[0], &byte, 1) != 1)
		tc->r1 = -EIO;
	test_end_stack(tc->row->stack);
	tc->r2 = region_task_wait_fd(tc->pipefd[0], POLLIN, tc->row->mode,
				     30000000, NULL);
	tc->pending = region_task_pending(tc->task);
	region_task_leave(tc->task);
	return NULL;
}

/* Waits until t is inside a wait (2 s deadline). */
static void wait_until_waiting(task_t *t)
{
	test_wait_task(t, NULL, 2000);
}

static void run_table_case(struct table_case *tc)
{
	const struct table_row *row = tc->row;
	enum outcome want = tc->policy == REGION_POLICY_PERCALL ? row->percall :
			    tc->policy == REGION_POLICY_REGION	? row->region :
								  row->sigmask;
	struct task_attr attr = { "table", tc->policy, NULL };
	struct task_info ti;
	pthread_t th;

	tc->task = region_task_create(&attr);
	ASSERT_NOT_NULL(tc->task);
	ASSERT_EQ(pipe(tc->pipefd), 0);
	sem_init(&tc->entered, 0, 0);
	sem_init(&tc->raised, 0, 0);
	ASSERT_EQ(pthread_create(&th, NULL, table_worker, tc), 0);
	sem_wait(&tc->entered);
	if (tc->when == DURING_WAIT)
		wait_until_waiting(tc->task);
	region_task_interrupt(tc->task, row->kind);
	if (tc->when == BEFORE_WAIT)
		sem_post(&tc->raised);
	if (want != NOW) {
		/* Long enough for a wrongly delivered interrupt to show. */
		test_sleep_ms(15);
		ASSERT_EQ(write(tc->pipefd[1], "x", 1), 1);
	}
	pthread_join(th, NULL);
	region_task_snapshot(tc->task, &ti);

	if (want == NOW) {
		ASSERT_EQ(tc->r1, -EINTR);
		ASSERT_EQ(tc->r2, -EINTR); /* interrupts are sticky */
	} else if (want == LATER) {
		ASSERT_EQ(tc->r1, 0);
		ASSERT_EQ(tc->r2, -EINTR);
		ASSERT(ti.deferred & row->kind);
	} else {
		ASSERT_EQ(tc->r1, 0);
		ASSERT_EQ(tc->r2, -ETIMEDOUT);
	}
	ASSERT_EQ(tc->pending, row->kind);
	close(tc->pipefd[0]);
	close(tc->pipefd[1]);
	sem_destroy(&tc->entered);
	sem_destroy(&tc->raised);
	region_task_put(tc->task);
}

TEST_IMPL(region_interrupt_table)
{
	static const enum region_policy policies[] = { REGION_POLICY_PERCALL,
						       REGION_POLICY_REGION,
						       REGION_POLICY_SIGMASK };

	for (size_t r = 0; r < ARRAY_SIZE(table); r++)
		for (size_t p = 0; p < ARRAY_SIZE(policies); p++)
			for (int w = BEFORE_WAIT; w <= DURING_WAIT; w++) {
				struct table_case tc = { 0 };

				tc.row = &table[r];
				tc.policy = policies[p];
				tc.when = (enum when)w;
				fprintf(stderr,
					"case: stack \"%s\" mode %s "
					"kind %s policy %s %s\n",
					table[r].stack,
					region_task_mode_name(table[r].mode),
					table[r].kind == NRM ? "normal" :
							       "fatal",
					region_policy_name(policies[p]),
					w == BEFORE_WAIT ? "before" : "during");
				run_table_case(&tc);
			}
	return 0;
}

/*
 * Ending the inner regions one by one: the interrupt is delivered only once
 * the last region that holds it back has ended.
 */
struct unwind_arg {
	enum region_policy policy;
	task_t *task;
	int rc[4];
};

static void *unwind_worker(void *arg)
{
	struct unwind_arg *ua = arg;

	region_task_enter(ua->task);
	region_begin_killable("outer killable");
	region_begin_uninterruptible("middle uninterruptible");
	region_begin_killable("inner killable");
	region_task_interrupt(ua->task, TASK_INTR_NORMAL);
	ua->rc[0] = region_task_sleep(1000000, TASK_INTERRUPTIBLE);
	region_end_killable();
	ua->rc[1] = region_task_sleep(1000000, TASK_INTERRUPTIBLE);
	region_end_uninterruptible();
	/* Still inside the outer killable region: a normal one waits. */
	ua->rc[2] = region_task_sleep(1000000, TASK_INTERRUPTIBLE);
	region_end_killable();
	ua->rc[3] = region_task_sleep(1000000, TASK_INTERRUPTIBLE);
	region_task_leave(ua->task);
	return NULL;
}

TEST_IMPL(region_inner_end_keeps_outer)
{
	for (int p = REGION_POLICY_REGION; p <= REGION_POLICY_SIGMASK; p++) {
		struct task_attr attr = { "unwind", (enum region_policy)p,
					  NULL };
		struct unwind_arg ua = { (enum region_policy)p, NULL, { 0 } };
		pthread_t th;

		ua.task = region_task_create(&attr);
		ASSERT_EQ(pthread_create(&th, NULL, unwind_worker, &ua), 0);
		pthread_join(th, NULL);
		ASSERT_EQ(ua.rc[0], 0);
		ASSERT_EQ(ua.rc[1], 0);
		ASSERT_EQ(ua.rc[2], 0);
		ASSERT_EQ(ua.rc[3], -EINTR);
		region_task_put(ua.task);
	}
	return 0;
}

/* Counters and deferral time. */

static void *stats_worker(void *arg)
{
	task_t *t = arg;
	int rc;

	region_task_enter(t);
	region_begin_uninterruptible("stats");
	region_task_interrupt(t, TASK_INTR_FATAL);
	rc = region_task_sleep(30000000, TASK_INTERRUPTIBLE);
	ASSERT_EQ(rc, 0);
	region_end_uninterruptible();
	rc = region_task_check_interrupt(TASK_KILLABLE);
	ASSERT_EQ(rc, -EINTR);
	rc = region_task_check_interrupt(TASK_KILLABLE);
	ASSERT_EQ(rc, -EINTR);
	region_task_leave(t);
	return NULL;
}

TEST_IMPL(region_stats_deferral)
{
	struct task_attr attr = { "stats", REGION_POLICY_REGION, NULL };
	struct region_stats before, after;
	task_t *t = region_task_create(&attr);
	struct task_info ti;
	pthread_t th;

	region_stats_get(&before);
	ASSERT_EQ(pthread_create(&th, NULL, stats_worker, t), 0);
	pthread_join(th, NULL);
	region_stats_get(&after);
	ASSERT_UINT64_EQ(after.raised - before.raised, 1);
	ASSERT_UINT64_EQ(after.deferred - before.deferred, 1);
	/* Delivered twice, counted once. */
	ASSERT_UINT64_EQ(after.delivered - before.delivered, 1);
	ASSERT_UINT64_EQ(after.deferred_delivered - before.deferred_delivered,
			 1);
	/* It was held back for the whole 30 ms sleep. */
	ASSERT_UINT64_GE(after.deferral_ns_total - before.deferral_ns_total,
			 29000000);
	ASSERT_UINT64_GE(after.deferral_ns_max, 29000000);
	/* In the histogram's 10-100 ms decade. */
	ASSERT_UINT64_EQ(after.deferral_hist[2] - before.deferral_hist[2], 1);
	/* The task's own record says the same. */
	region_task_snapshot(t, &ti);
	ASSERT_EQ(ti.deferred, TASK_INTR_FATAL);
	ASSERT_EQ(ti.delivered, TASK_INTR_FATAL);
	ASSERT_UINT64_GE(ti.deferral_ns, 29000000);
	ASSERT_UINT64_LE(ti.deferral_ns, after.deferral_ns_max);
	region_task_put(t);
	return 0;
}

/*
 * An interrupt held back until the task's work was done and then flushed
 * is dropped, counted under the task's policy; one delivered is not.
 */
TEST_IMPL(region_stats_dropped)
{
	struct task_attr attr = { "dropped", REGION_POLICY_SIGMASK, NULL };
	struct region_stats before, after;
	const struct region_policy_stats *b, *a;
	task_t *t = region_task_create(&attr);

	region_stats_get(&before);
	region_task_enter(t);
	region_begin_killable("held");
	region_task_interrupt(t, TASK_INTR_NORMAL);
	ASSERT_EQ(region_task_sleep(1000000, TASK_INTERRUPTIBLE), 0);
	region_end_killable();
	region_task_flush_interrupts(t);
	region_task_interrupt(t, TASK_INTR_FATAL);
	ASSERT_EQ(region_task_sleep(1000000, TASK_INTERRUPTIBLE), -EINTR);
	region_task_leave(t);
	region_task_put(t);
	region_stats_get(&after);
	b = &before.per_policy[REGION_POLICY_SIGMASK];
	a = &after.per_policy[REGION_POLICY_SIGMASK];
	ASSERT_UINT64_EQ(after.dropped - before.dropped, 1);
	ASSERT_UINT64_EQ(a->raised - b->raised, 2);
	ASSERT_UINT64_EQ(a->deferred - b->deferred, 1);
	ASSERT_UINT64_EQ(a->delivered - b->delivered, 1);
	ASSERT_UINT64_EQ(a->dropped - b->dropped, 1);
	return 0;
}

/* Events reach the hook in order. */

static struct {
	enum region_event_type type[16];
	unsigned depth[16];
	unsigned n;
} events;

static void record_event(const struct region_event *ev, void *arg)
{
	(void)arg;
	if (events.n < 16) {
		events.type[events.n] = ev->type;
		events.depth[events.n] = ev->depth;
		events.n++;
	}
}

TEST_IMPL(region_events)
{
	struct task_attr attr = { "events", REGION_POLICY_REGION, NULL };
	task_t *t = region_task_create(&attr);
	int rc;

	region_task_enter(t);
	region_set_event_hook(record_event, NULL);
	region_begin_killable("ev outer");
	region_begin_uninterruptible("ev inner");
	region_task_interrupt(t, TASK_INTR_NORMAL);
	rc = region_task_check_interrupt(TASK_INTERRUPTIBLE);
	ASSERT_EQ(rc, 0);
	region_end_uninterruptible();
	region_end_killable();
	rc = region_task_check_interrupt(TASK_INTERRUPTIBLE);
	ASSERT_EQ(rc, -EINTR);
	region_set_event_hook(NULL, NULL);
	region_task_leave(t);
	region_task_put(t);

	ASSERT_EQ(events.n, 7);
	ASSERT_EQ(events.type[0], REGION_EV_BEGIN);
	ASSERT_EQ(events.depth[0], 1);
	ASSERT_EQ(events.type[1], REGION_EV_BEGIN);
	ASSERT_EQ(events.depth[1], 2);
	ASSERT_EQ(events.type[2], REGION_EV_INTR_RAISED);
	ASSERT_EQ(events.type[3], REGION_EV_INTR_DEFERRED);
	ASSERT_EQ(events.type[4], REGION_EV_END);
	ASSERT_EQ(events.depth[4], 2);
	ASSERT_EQ(events.type[5], REGION_EV_END);
	ASSERT_EQ(events.type[6], REGION_EV_INTR_DELIVERED);
	return 0;
}

/* The sigmask policy really changes the thread's signal mask. */

static bool blocked(int sig)
{
	sigset_t cur;

	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	return sigismember(&cur, sig);
}

TEST_IMPL(region_sigmask_masks)
{
	struct task_attr attr = { "sigmask", REGION_POLICY_SIGMASK, NULL };
	int nrm = region_sigmask_signal(TASK_INTR_NORMAL);
	int ftl = region_sigmask_signal(TASK_INTR_FATAL);
	task_t *t = region_task_create(&attr);

	region_task_enter(t);
	ASSERT(!blocked(nrm) && !blocked(ftl));
	region_begin_killable("mask normal");
	ASSERT(blocked(nrm) && !blocked(ftl));
	region_begin_uninterruptible("mask both");
	ASSERT(blocked(nrm) && blocked(ftl));
	region_begin_killable("already masked");
	region_end_killable();
	ASSERT(blocked(nrm) && blocked(ftl));
	region_end_uninterruptible();
	ASSERT(blocked(nrm) && !blocked(ftl));
	region_end_killable();
	ASSERT(!blocked(nrm) && !blocked(ftl));
	region_task_leave(t);
	region_task_put(t);
	return 0;
}

/* Checks: unbalanced end aborts and names the begin. */

/* clang-format off */
/* The begin and the line number are on the same line on purpose. */
static const int death_begin_line = __LINE__; static void death_mismatch(void *arg) { (void)arg; region_begin_uninterruptible("death: the outer reason"); region_end_killable(); }
/* clang-format on */

static void death_empty(void *arg)
{
	(void)arg;
	region_end_uninterruptible();
}

TEST_IMPL(region_unbalanced_end_aborts)
{
	char buf[4096], where[64];
	int status;

	status = test_run_child(death_mismatch, NULL, buf, sizeof(buf));
	ASSERT(WIFSIGNALED(status));
	ASSERT_EQ(WTERMSIG(status), SIGABRT);
	ASSERT_CONTAINS(buf, "region_end_killable()");
	ASSERT_CONTAINS(buf, "death: the outer reason");
	snprintf(where, sizeof(where), "test_region.c:%d", death_begin_line);
	ASSERT_CONTAINS(buf, where);

	status = test_run_child(death_empty, NULL, buf, sizeof(buf));
	ASSERT(WIFSIGNALED(status));
	ASSERT_EQ(WTERMSIG(status), SIGABRT);
	ASSERT_CONTAINS(buf, "with no region open");
	return 0;
}

/* Checks: a task that leaves inside a region is reported and unwound. */

static char report_buf[8192];
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned report_count;

static void capture_report(const char *msg, void *arg)
{
	(void)arg;
	pthread_mutex_lock(&report_lock);
	report_count++;
	strncat(report_buf, msg, sizeof(report_buf) - strlen(report_buf) - 2);
	strcat(report_buf, "\n");
	pthread_mutex_unlock(&report_lock);
}

TEST_IMPL(region_leave_inside_region_reported)
{
	struct task_attr attr = { "leaky", REGION_POLICY_SIGMASK, NULL };
	struct region_stats before, after;
	task_t *t = region_task_create(&attr);
	struct task_info ti;
	unsigned u, k;

	region_set_report_hook(capture_report, NULL);
	region_stats_get(&before);
	region_task_enter(t);
	region_begin_killable("leaky: forgot to end this");
	region_task_leave(t);
	region_stats_get(&after);
	ASSERT_UINT64_EQ(after.unbalanced_leave - before.unbalanced_leave, 1);
	ASSERT_CONTAINS(report_buf, "finished inside 1 region");
	ASSERT_CONTAINS(report_buf, "leaky: forgot to end this");
	region_task_snapshot(t, &ti);
	ASSERT_EQ(ti.depth, 0);
	/* The thread's own state and mask are back as they were. */
	region_depths(&u, &k);
	ASSERT_EQ(u + k, 0);
	ASSERT(!blocked(region_sigmask_signal(TASK_INTR_NORMAL)));
	region_task_put(t);
	return 0;
}

/* Checks: the hung-task watchdog. */

static void *watchdog_worker(void *arg)
{
	task_t *t = arg;
	int rc;

	region_task_enter(t);
	/* Interruptible and long: not reported. */
	rc = region_task_sleep(300000000, TASK_INTERRUPTIBLE);
	ASSERT_EQ(rc, 0);
	ASSERT_EQ(report_count, 0);
	region_begin_killable("watchdog: outer killable");
	region_begin_uninterruptible("watchdog: waiting for the server");
	rc = region_task_sleep(300000000, TASK_INTERRUPTIBLE);
	ASSERT_EQ(rc, 0);
	region_end_uninterruptible();
	region_end_killable();
	region_task_leave(t);
	return NULL;
}

TEST_IMPL(region_watchdog_reports)
{
	struct task_attr attr = { "hung", REGION_POLICY_REGION, NULL };
	task_t *t = region_task_create(&attr);
	pthread_t th;

	region_set_report_hook(capture_report, NULL);
	ASSERT_EQ(region_watchdog_start(100000000), 0);
	ASSERT_EQ(pthread_create(&th, NULL, watchdog_worker, t), 0);
	pthread_join(th, NULL);
	region_watchdog_stop();
	/* Once per wait, however long it lasts past the threshold. */
	ASSERT_EQ(report_count, 1);
	ASSERT_CONTAINS(report_buf, "blocked uninterruptibly in sleep");
	ASSERT_CONTAINS(report_buf, "(interruptible wait)");
	ASSERT_CONTAINS(report_buf, "watchdog: waiting for the server");
	ASSERT_CONTAINS(report_buf, "watchdog: outer killable");
	ASSERT_CONTAINS(report_buf, "test_region.c:");
	/* The coarse clock dated the frames: ages are shown. */
	ASSERT_CONTAINS(report_buf, "ms ago");
	region_task_put(t);
	return 0;
}

/* Mutex and condition waits. */

struct lock_arg {
	task_mutex_t *m;
	task_cond_t *c;
	task_t *task;
	enum task_mode mode;
	int rc;
	bool flag;
	sem_t started;
};

static void *lock_worker(void *arg)
{
	struct lock_arg *la = arg;

	region_task_enter(la->task);
	sem_post(&la->started);
	la->rc = region_task_mutex_lock(la->m, la->mode, 2000000000);
	if (la->rc == 0)
		region_task_mutex_unlock(la->m);
	region_task_leave(la->task);
	return NULL;
}

TEST_IMPL(region_mutex)
{
	task_mutex_t m = TASK_MUTEX_INITIALIZER;
	struct task_attr attr = { "locker", REGION_POLICY_REGION, NULL };
	struct lock_arg la = { .m = &m, .mode = TASK_INTERRUPTIBLE, .rc = 1 };
	pthread_t th;
	int rc;

	/* Uncontended, then a timeout while held. */
	rc = region_task_mutex_lock(&m, TASK_INTERRUPTIBLE, TASK_FOREVER);
	ASSERT_EQ(rc, 0);
	ASSERT(!region_task_mutex_trylock(&m));
	rc = region_task_mutex_lock(&m, TASK_UNINTERRUPTIBLE, 5000000);
	ASSERT_EQ(rc, -ETIMEDOUT);

	/* An interruptible lock is cut short by an interrupt. */
	sem_init(&la.started, 0, 0);
	la.task = region_task_create(&attr);
	ASSERT_EQ(pthread_create(&th, NULL, lock_worker, &la), 0);
	sem_wait(&la.started);
	wait_until_waiting(la.task);
	region_task_interrupt(la.task, TASK_INTR_NORMAL);
	pthread_join(th, NULL);
	ASSERT_EQ(la.rc, -EINTR);
	region_task_put(la.task);

	/* A killable one is not, and gets the lock on unlock. */
	la.task = region_task_create(&attr);
	la.mode = TASK_KILLABLE;
	ASSERT_EQ(pthread_create(&th, NULL, lock_worker, &la), 0);
	sem_wait(&la.started);
	wait_until_waiting(la.task);
	region_task_interrupt(la.task, TASK_INTR_NORMAL);
	/* Long enough for a wrongly delivered interrupt to end the wait. */
	test_sleep_ms(10);
	region_task_mutex_unlock(&m);
	pthread_join(th, NULL);
	ASSERT_EQ(la.rc, 0);
	region_task_put(la.task);
	ASSERT(region_task_mutex_trylock(&m));
	region_task_mutex_unlock(&m);
	return 0;
}

static void *cond_worker(void *arg)
{
	struct lock_arg *la = arg;

	region_task_enter(la->task);
	region_task_mutex_lock_nofail(la->m);
	sem_post(&la->started);
	la->rc = 0;
	while (!la->flag && la->rc == 0)
		la->rc = region_task_cond_wait(la->c, la->m, la->mode,
					       2000000000);
	/* The mutex is held again whatever the result. */
	ASSERT(!region_task_mutex_trylock(la->m));
	region_task_mutex_unlock(la->m);
	region_task_leave(la->task);
	return NULL;
}

TEST_IMPL(region_cond)
{
	task_mutex_t m = TASK_MUTEX_INITIALIZER;
	task_cond_t c = TASK_COND_INITIALIZER;
	struct task_attr attr = { "waiter", REGION_POLICY_REGION, NULL };
	struct lock_arg la = {
		.m = &m, .c = &c, .mode = TASK_INTERRUPTIBLE, .rc = 1
	};
	pthread_t th;

	sem_init(&la.started, 0, 0);
	for (int i = 0; i < 2; i++) {
		la.task = region_task_create(&attr);
		la.flag = false;
		ASSERT_EQ(pthread_create(&th, NULL, cond_worker, &la), 0);
		sem_wait(&la.started);
		wait_until_waiting(la.task);
		if (i == 0) {
			region_task_interrupt(la.task, TASK_INTR_FATAL);
		} else {
			region_task_mutex_lock_nofail(&m);
			la.flag = true;
			region_task_cond_signal(&c);
			region_task_mutex_unlock(&m);
		}
		pthread_join(th, NULL);
		ASSERT_EQ(la.rc, i == 0 ? -EINTR : 0);
		region_task_put(la.task);
	}
	return 0;
}

/* A thread without a task may use regions and waits; nothing interrupts. */
TEST_IMPL(region_no_task)
{
	unsigned u, k;
	int rc;

	ASSERT_NULL(region_task_current());
	region_begin_killable("no task");
	region_begin_uninterruptible("no task either");
	region_depths(&u, &k);
	ASSERT_EQ(u, 1);
	ASSERT_EQ(k, 1);
	ASSERT_EQ(region_task_effective_mode(TASK_INTERRUPTIBLE),
		  TASK_UNINTERRUPTIBLE);
	rc = region_task_sleep(1000000, TASK_INTERRUPTIBLE);
	ASSERT_EQ(rc, 0);
	region_end_uninterruptible();
	ASSERT_EQ(region_task_effective_mode(TASK_INTERRUPTIBLE),
		  TASK_KILLABLE);
	region_end_killable();
	ASSERT_EQ(region_task_effective_mode(TASK_INTERRUPTIBLE),
		  TASK_INTERRUPTIBLE);
	return 0;
}

/* Introspection sees the region stack of a task running elsewhere. */

static void *introspect_worker(void *arg)
{
	struct lock_arg *la = arg;
	int rc;

	region_task_enter(la->task);
	region_begin_killable("introspect: outer");
	region_begin_uninterruptible("introspect: inner");
	rc = region_task_sleep(200000000, TASK_INTERRUPTIBLE);
	(void)rc;
	region_end_uninterruptible();
	region_end_killable();
	region_task_leave(la->task);
	return NULL;
}

static int find_task(const struct task_info *ti, void *arg)
{
	struct task_info *out = arg;

	if (ti->id == out->id) {
		*out = *ti;
		return 1;
	}
	return 0;
}

TEST_IMPL(region_introspection)
{
	struct task_attr attr = { "shown", REGION_POLICY_REGION, NULL };
	struct lock_arg la = { 0 };
	struct task_info ti = { 0 };
	pthread_t th;

	la.task = region_task_create(&attr);
	ASSERT_EQ(pthread_create(&th, NULL, introspect_worker, &la), 0);
	wait_until_waiting(la.task);
	ti.id = region_task_id(la.task);
	ASSERT_EQ(region_task_foreach(find_task, &ti), 1);
	ASSERT_STR_EQ(ti.name, "shown");
	ASSERT(ti.running && ti.waiting);
	ASSERT_STR_EQ(ti.wait_what, "sleep");
	ASSERT_EQ(ti.wait_mode, TASK_INTERRUPTIBLE);
	ASSERT_EQ(ti.wait_eff, TASK_UNINTERRUPTIBLE);
	ASSERT_EQ(ti.depth, 2);
	ASSERT_STR_EQ(ti.stack[0].site->reason, "introspect: outer");
	ASSERT_STR_EQ(ti.stack[1].site->reason, "introspect: inner");
	ASSERT_EQ(ti.stack[1].site->kind, REGION_UNINTERRUPTIBLE);
	region_task_interrupt(la.task, TASK_INTR_FATAL);
	region_task_snapshot(la.task, &ti);
	ASSERT_EQ(ti.pending, TASK_INTR_FATAL);
	pthread_join(th, NULL);
	region_task_snapshot(la.task, &ti);
	ASSERT(!ti.running && !ti.waiting);
	region_task_put(la.task);
	return 0;
}

TEST_IMPL(region_policy_names)
{
	enum region_policy p;

	ASSERT_EQ(region_policy_parse("percall", &p), 0);
	ASSERT_EQ(p, REGION_POLICY_PERCALL);
	ASSERT_EQ(region_policy_parse("region", &p), 0);
	ASSERT_EQ(p, REGION_POLICY_REGION);
	ASSERT_EQ(region_policy_parse("sigmask", &p), 0);
	ASSERT_EQ(p, REGION_POLICY_SIGMASK);
	ASSERT_EQ(region_policy_parse("Region", &p), -EINVAL);
	ASSERT_EQ(region_policy_parse("", &p), -EINVAL);
	ASSERT_STR_EQ(region_policy_name(REGION_POLICY_SIGMASK), "sigmask");
	return 0;
}

/*
 * A region whose site the caller made (region_begin_at): it nests with the
 * macros' regions and is enforced like them; under percall, recorded only.
 */
struct at_arg {
	enum region_policy policy;
	task_t *task;
	int rc;
	unsigned u, k;
};

static const struct region_site at_site = { REGION_KILLABLE, "caller's",
					    "caller", 0, "test" };

static void *at_worker(void *arg)
{
	struct at_arg *a = arg;

	region_task_enter(a->task);
	region_begin_at(&at_site);
	region_begin_uninterruptible("inner");
	region_depths(&a->u, &a->k);
	region_end_uninterruptible();
	region_task_interrupt(a->task, TASK_INTR_NORMAL);
	a->rc = region_task_sleep(20000000, TASK_INTERRUPTIBLE);
	region_end_at(&at_site);
	region_task_flush_interrupts(a->task);
	region_task_leave(a->task);
	return NULL;
}

TEST_IMPL(region_begin_at_nests)
{
	for (int p = REGION_POLICY_PERCALL; p <= REGION_POLICY_SIGMASK; p++) {
		struct task_attr attr = { "at", (enum region_policy)p, NULL };
		struct at_arg a = { (enum region_policy)p, NULL, 1, 0, 0 };
		pthread_t th;

		a.task = region_task_create(&attr);
		ASSERT_NOT_NULL(a.task);
		ASSERT_EQ(pthread_create(&th, NULL, at_worker, &a), 0);
		pthread_join(th, NULL);
		ASSERT_EQ(a.u, 1);
		ASSERT_EQ(a.k, 1);
		/* Killable: a normal interrupt waits, but under percall. */
		ASSERT_EQ(a.rc, p == REGION_POLICY_PERCALL ? -EINTR : 0);
		region_task_put(a.task);
	}
	return 0;
}

/*
 * Caller regions off an intrfs mount: the ABI's size and number are
 * fixed, an unknown kind never leaves the library, and a file of another
 * filesystem, an O_PATH descriptor or a closed one are refused by the
 * kernel (the mount tests do the rest on a real mount).
 */
TEST_IMPL(region_caller_off_mount)
{
	char tmp[] = "/tmp/intrfs-unit-ioc.XXXXXX";
	int fd = mkstemp(tmp), path;

	ASSERT_GE(fd, 0);
	unlink(tmp);
	ASSERT_EQ(sizeof(struct region_caller_ioc), 80);
	ASSERT_EQ(REGION_CALLER_IOC, 0xc050724cu);
	ASSERT_EQ(region_caller_begin(fd, REGION_KILLABLE, "x"), -ENOTTY);
	ASSERT_EQ(region_caller_end(fd, REGION_UNINTERRUPTIBLE), -ENOTTY);
	ASSERT_EQ(region_caller_begin(fd, (enum region_kind)0, "x"), -EINVAL);
	ASSERT_EQ(region_caller_end(fd, (enum region_kind)3), -EINVAL);
	path = open("/tmp", O_PATH);
	ASSERT_GE(path, 0);
	ASSERT_EQ(region_caller_begin(path, REGION_KILLABLE, "x"), -EBADF);
	close(path);
	close(fd);
	ASSERT_EQ(region_caller_begin(fd, REGION_KILLABLE, "x"), -EBADF);
	return 0;
}
