/*
 * Cross-thread stress of the region API: a task thread loops over random
 * region stacks and waits (fd, mutex, condition) while another thread raises
 * interrupts at random moments and completes the waits.  Every round checks
 * that a wait returns -EINTR exactly when an interrupt it may deliver was
 * raised (no spurious -EINTR), that such a wait always wakes (no lost
 * wakeup: a lost one hangs the round and fails it by timeout), and that an
 * interrupt held back is delivered once the regions end.  Runs under TSan
 * in CI.  One lock, s.m (a task mutex, itself under test): the task thread
 * and the interrupter take it for the mutex and condition waits, and it
 * guards s.flag.
 */
#include "test.h"
#include "stack.h"

#include "intrfs/region.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define ROUNDS 100000
#define ROUND_TIMEOUT_NS 5000000000ll

enum wait_kind { W_FD, W_MUTEX, W_COND, W_KINDS };

struct plan {
	enum region_policy policy;
	char stack[4]; /* outermost first, 'U' or 'K' */
	enum task_mode mode;
	enum wait_kind wait;
	unsigned intr; /* 0, or the kind raised */
	unsigned delay; /* spin iterations before raising */
	bool deliverable;
};

struct shared {
	sem_t go, done;
	struct plan plan;
	task_t *task;
	int efd;
	task_mutex_t m;
	task_cond_t c;
	bool flag; /* protected by m */
	bool stop;
};

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64*: reproducible from the printed seed. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

/*
 * The oracle, written from DESIGN.md independently of wait.c: the level a
 * region stack imposes, and which kinds a mode lets through.
 */
static enum task_mode oracle_mode(const struct plan *p)
{
	enum task_mode m = p->mode;

	if (p->policy == REGION_POLICY_PERCALL)
		return m;
	if (strchr(p->stack, 'U'))
		return TASK_UNINTERRUPTIBLE;
	if (strchr(p->stack, 'K') && m == TASK_INTERRUPTIBLE)
		return TASK_KILLABLE;
	return m;
}

static bool lets_through(enum task_mode m, unsigned kind)
{
	return m == TASK_INTERRUPTIBLE ||
	       (m == TASK_KILLABLE && kind == TASK_INTR_FATAL);
}

static void spin(unsigned n)
{
	for (volatile unsigned i = 0; i < n; i++)
		;
}

static void *interrupter(void *arg)
{
	struct shared *s = arg;

	for (;;) {
		struct plan p;

		sem_wait(&s->go);
		if (s->stop)
			break;
		p = s->plan;
		spin(p.delay);
		if (p.intr)
			region_task_interrupt(s->task, (enum task_intr)p.intr);
		if (!p.deliverable) {
			spin(p.delay / 2);
			switch (p.wait) {
			case W_FD:
				ASSERT_EQ(eventfd_write(s->efd, 1), 0);
				break;
			case W_MUTEX:
				region_task_mutex_unlock(&s->m);
				break;
			case W_COND:
				region_task_mutex_lock_nofail(&s->m);
				s->flag = true;
				region_task_cond_signal(&s->c);
				region_task_mutex_unlock(&s->m);
				break;
			case W_KINDS:
				break;
			}
		}
		sem_post(&s->done);
	}
	return NULL;
}

static int do_wait(struct shared *s, const struct plan *p)
{
	eventfd_t v;
	int rc = 0;

	switch (p->wait) {
	case W_FD:
		rc = region_task_wait_fd(s->efd, POLLIN, p->mode,
					 ROUND_TIMEOUT_NS, NULL);
		if (rc == 0)
			ASSERT_EQ(eventfd_read(s->efd, &v), 0);
		break;
	case W_MUTEX:
		rc = region_task_mutex_lock(&s->m, p->mode, ROUND_TIMEOUT_NS);
		if (rc == 0)
			region_task_mutex_unlock(&s->m);
		break;
	case W_COND:
		region_task_mutex_lock_nofail(&s->m);
		while (!s->flag && rc == 0)
			rc = region_task_cond_wait(&s->c, &s->m, p->mode,
						   ROUND_TIMEOUT_NS);
		s->flag = false;
		region_task_mutex_unlock(&s->m);
		break;
	case W_KINDS:
		break;
	}
	return rc;
}

TEST_IMPL(region_stress)
{
	static struct shared s;
	unsigned counts[3] = { 0, 0, 0 }; /* now, later, none */
	pthread_t th;
	int rounds = ROUNDS;
	const char *env = getenv("INTRFS_STRESS_ROUNDS");

	if (env)
		rounds = atoi(env);
	rng_state = region_now_ns() | 1;
	fprintf(stderr, "seed %" PRIu64 ", %d rounds\n", rng_state, rounds);
	sem_init(&s.go, 0, 0);
	sem_init(&s.done, 0, 0);
	s.efd = eventfd(0, EFD_NONBLOCK);
	region_task_mutex_init(&s.m);
	region_task_cond_init(&s.c);
	ASSERT_EQ(pthread_create(&th, NULL, interrupter, &s), 0);

	for (int r = 0; r < rounds; r++) {
		struct task_attr attr = { "stress", REGION_POLICY_REGION,
					  NULL };
		struct plan p = { 0 };
		unsigned depth = (unsigned)(rnd() % 4);
		enum task_mode eff;
		int rc, later;

		p.policy = attr.policy = (enum region_policy)(rnd() % 3);
		for (unsigned i = 0; i < depth; i++)
			p.stack[i] = rnd() % 2 ? 'U' : 'K';
		p.mode = (enum task_mode)(rnd() % 3);
		p.wait = (enum wait_kind)(rnd() % W_KINDS);
		p.intr = (unsigned)(rnd() % 3); /* 0, NORMAL, FATAL */
		p.delay = (unsigned)(rnd() % 4000);
		eff = oracle_mode(&p);
		p.deliverable = p.intr && lets_through(eff, p.intr);

		s.task = region_task_create(&attr);
		ASSERT_NOT_NULL(s.task);
		region_task_enter(s.task);
		if (p.wait == W_MUTEX)
			region_task_mutex_lock_nofail(
				&s.m); /* the interrupter frees it */
		s.plan = p;
		sem_post(&s.go);
		test_begin_stack(p.stack);
		rc = do_wait(&s, &p);
		if (rc != (p.deliverable ? -EINTR : 0))
			TEST__FAIL("round %d: policy %s stack \"%s\" mode %s "
				   "wait %d intr %u: got %d, want %d",
				   r, region_policy_name(p.policy), p.stack,
				   region_task_mode_name(p.mode), p.wait,
				   p.intr, rc, p.deliverable ? -EINTR : 0);
		test_end_stack(p.stack);
		sem_wait(&s.done);
		/* An interrupt held back is delivered now, if the mode lets it. */
		later = region_task_check_interrupt(p.mode);
		if (p.intr && lets_through(p.mode, p.intr))
			ASSERT_EQ(later, -EINTR);
		else
			ASSERT_EQ(later, 0);
		if (p.wait == W_MUTEX && p.deliverable)
			region_task_mutex_unlock(&s.m);
		region_task_leave(s.task);
		region_task_put(s.task);
		counts[p.deliverable ? 0 : (p.intr && later) ? 1 : 2]++;
	}
	s.stop = true;
	sem_post(&s.go);
	pthread_join(th, NULL);
	fprintf(stderr,
		"delivered at once %u, deferred then delivered %u, "
		"no interrupt delivered %u\n",
		counts[0], counts[1], counts[2]);
	/* Every class of outcome really happened. */
	ASSERT_GT(counts[0], (unsigned)rounds / 20);
	ASSERT_GT(counts[1], (unsigned)rounds / 20);
	ASSERT_GT(counts[2], (unsigned)rounds / 20);
	close(s.efd);
	return 0;
}
