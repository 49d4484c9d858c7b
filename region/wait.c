/*
 * Per-call waits: fd readiness, timed sleep, mutex lock and condition wait,
 * each in an interruptible, killable or uninterruptible mode that the
 * current task's regions and policy may tighten.
 *
 * Every wait is the same loop, the user-space shape of the kernel's
 * ___wait_event(): check the condition, then whether an interrupt may be
 * delivered to a wait of this effective mode, then the deadline, then sleep
 * on the thread's waker (region_i.h) until something changes.  The
 * condition wins over an interrupt and an interrupt over the deadline.  A
 * pending interrupt the wait may not deliver is recorded as deferred and the
 * wait goes on sleeping: nothing is lost, since the interrupt stays pending
 * and the waker has been drained.
 *
 * Mutex and condition waiters queue on the object's wq_lock and are woken by
 * setting their flag and writing their waker while holding it; a waiter
 * always takes wq_lock once more before it returns, so the waker never
 * touches a waiter that has gone.  A wait never sleeps holding a lock.
 *
 * Lock order: wq_lock is a leaf; nothing else is taken while it is held.
 */
#include "region_i.h"
#include "intrfs/util.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

struct wait {
	struct thread_ctx *tc;
	struct task *t; /* NULL: a thread without a task */
	enum task_mode eff; /* after regions and policy */
	uint64_t deadline; /* monotonic ns; 0 for none */
};

enum task_mode region__eff(const struct region_state *rs, enum task_mode m)
{
	uint64_t c;

	if (rs->policy == REGION_POLICY_PERCALL)
		return m;
	c = atomic_load_explicit(&rs->count, memory_order_relaxed);
	if (region__uninterruptible_depth(c))
		return TASK_UNINTERRUPTIBLE;
	if (region__killable_depth(c) && m < TASK_KILLABLE)
		return TASK_KILLABLE;
	return m;
}

enum task_mode region_task_effective_mode(enum task_mode mode)
{
	const struct region_state *rs = region__cur;

	return rs ? region__eff(rs, mode) : mode;
}

static unsigned allowed_kinds(enum task_mode eff)
{
	switch (eff) {
	case TASK_INTERRUPTIBLE:
		return TASK_INTR_NORMAL | TASK_INTR_FATAL;
	case TASK_KILLABLE:
		return TASK_INTR_FATAL;
	case TASK_UNINTERRUPTIBLE:
		break;
	}
	return 0;
}

static void deliver(struct task *t, enum task_intr kind)
{
	unsigned old = atomic_fetch_or_explicit(&t->delivered, kind,
						memory_order_relaxed);
	uint64_t d = 0, now;

	/* An interrupt is counted once, however many waits it ends. */
	if (old & kind)
		return;
	now = region_now_ns();
	atomic_store_explicit(&t->delivered_ns[kind], now,
			      memory_order_relaxed);
	atomic_fetch_add_explicit(&region__stats.delivered, 1,
				  memory_order_relaxed);
	REGION__COUNT_POLICY(t, REGION__PDELIVERED);
	if (atomic_load_explicit(&t->deferred, memory_order_relaxed) & kind) {
		uint64_t raised = atomic_load_explicit(&t->raised_ns[kind],
						       memory_order_relaxed);

		d = raised && now > raised ? now - raised : 0;
		atomic_fetch_add_explicit(&region__stats.deferred_delivered, 1,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&region__stats.deferral_ns_total, d,
					  memory_order_relaxed);
		{
			unsigned b = 0;

			for (uint64_t lim = 1000000;
			     b + 1 < REGION_DEFERRAL_BUCKETS && d >= lim;
			     lim *= 10)
				b++;
			atomic_fetch_add_explicit(
				&region__stats.deferral_hist[b], 1,
				memory_order_relaxed);
		}
		atomic_max_u64(&region__stats.deferral_ns_max, d);
	}
	region__emit(REGION_EV_INTR_DELIVERED, t, NULL, 0, kind, d);
}

void region__note_deferred(struct task *t, unsigned kinds)
{
	/* The first to mark a kind counts it, whichever thread that is. */
	unsigned fresh = kinds &
			 ~atomic_fetch_or_explicit(&t->deferred, kinds,
						   memory_order_relaxed);

	for (unsigned k = TASK_INTR_NORMAL; k <= TASK_INTR_FATAL; k <<= 1) {
		if (!(fresh & k))
			continue;
		atomic_fetch_add_explicit(&region__stats.deferred, 1,
					  memory_order_relaxed);
		REGION__COUNT_POLICY(t, REGION__PDEFERRED);
		region__emit(REGION_EV_INTR_DEFERRED, t, NULL, 0,
			     (enum task_intr)k, 0);
	}
}

/*
 * The interruptible point of a wait: -EINTR if a pending interrupt may be
 * delivered to a wait of effective mode w->eff, else 0 (recording the
 * interrupts it holds back as deferred).
 */
static int intr_check(struct wait *w)
{
	struct task *t = w->t;
	unsigned pend, allowed, visible, held;

	if (!t)
		return 0;
	/* Acquire: pairs with the release in region_task_interrupt(). */
	pend = atomic_load_explicit(&t->pending, memory_order_acquire);
	if (!pend)
		return 0;
	allowed = allowed_kinds(w->eff);
	visible = pend;
	/*
	 * Under the sigmask policy an interrupt counts once its signal has
	 * been taken on this thread; until then it is still in flight, and
	 * the handler will wake us.
	 */
	if (t->rs.policy == REGION_POLICY_SIGMASK) {
		visible &= atomic_load_explicit(&w->tc->arrived,
						memory_order_relaxed);
		if ((pend & allowed) & ~visible) {
			sigset_t unused;

			/*
			 * A signal sent but not taken yet is taken on the way
			 * out of any system call: make one, so that an
			 * interrupt whose pthread_kill() has returned is seen.
			 */
			sigpending(&unused);
			visible = pend &
				  atomic_load_explicit(&w->tc->arrived,
						       memory_order_relaxed);
		}
	}
	if (visible & allowed) {
		deliver(t, (visible & allowed & TASK_INTR_FATAL) ?
				   TASK_INTR_FATAL :
				   TASK_INTR_NORMAL);
		return -EINTR;
	}
	held = pend & ~allowed &
	       ~atomic_load_explicit(&t->delivered, memory_order_relaxed);
	if (held)
		region__note_deferred(t, held);
	return 0;
}

int region_task_check_interrupt(enum task_mode mode)
{
	struct wait w;

	w.tc = &region__tc;
	w.t = w.tc->task;
	if (!w.t || !atomic_load_explicit(&w.t->pending, memory_order_relaxed))
		return 0;
	w.eff = region__eff(&w.t->rs, mode);
	w.deadline = 0;
	return intr_check(&w);
}

static void wait_enter(struct wait *w, const char *what, enum task_mode mode,
		       int64_t timeout_ns)
{
	uint64_t now = region_now_ns();
	struct task *t;

	w->tc = region__thread_ctx();
	w->t = t = w->tc->task;
	w->eff = region__eff(region__cur ? region__cur : &w->tc->own, mode);
	w->deadline = timeout_ns >= 0 ? now + (uint64_t)timeout_ns : 0;
	if (!t)
		return;
	atomic_store_explicit(&t->wait_mode, mode, memory_order_relaxed);
	atomic_store_explicit(&t->wait_eff, w->eff, memory_order_relaxed);
	atomic_store_explicit(&t->wait_start_ns, now, memory_order_relaxed);
	atomic_fetch_add_explicit(&t->wait_seq, 1, memory_order_relaxed);
	/* Release: a watcher that sees what also sees the fields above. */
	atomic_store_explicit(&t->wait_what, what, memory_order_release);
}

static void wait_exit(struct wait *w)
{
	if (w->t)
		atomic_store_explicit(&w->t->wait_what, NULL,
				      memory_order_relaxed);
}

/* Remaining time as a timespec; false when the deadline has passed. */
static bool wait_remaining(const struct wait *w, struct timespec *ts)
{
	uint64_t now, left;

	if (!w->deadline)
		return true;
	now = region_now_ns();
	if (now >= w->deadline)
		return false;
	left = w->deadline - now;
	ts->tv_sec = (time_t)(left / 1000000000u);
	ts->tv_nsec = (long)(left % 1000000000u);
	return true;
}

/*
 * Sleeps once on the waker and on fd (if >= 0).  Returns fd's revents (0
 * when woken another way), or -errno if ppoll() itself failed.
 */
static int wait_sleep(struct wait *w, const struct timespec *ts, int fd,
		      short events)
{
	struct pollfd p[2];
	nfds_t n = 0;
	int wi, r;

	if (fd >= 0) {
		p[n].fd = fd;
		p[n].events = events;
		p[n].revents = 0;
		n++;
	}
	wi = (int)n;
	p[n].fd = w->tc->efd;
	p[n].events = POLLIN;
	p[n].revents = 0;
	n++;
	r = ppoll(p, n, w->deadline ? ts : NULL, NULL);
	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	if (p[wi].revents) {
		uint64_t v;
		ssize_t got = read(w->tc->efd, &v, sizeof(v));

		(void)got;
	}
	return fd >= 0 ? p[0].revents : 0;
}

int region_task_wait_fd(int fd, short events, enum task_mode mode,
			int64_t timeout_ns, short *revents)
{
	struct pollfd p = { fd, events, 0 };
	struct timespec ts;
	struct wait w;
	int n, rc;

	/* The condition first: a ready fd costs one poll() and no more. */
	n = poll(&p, 1, 0);
	if (n > 0) {
		if (revents)
			*revents = p.revents;
		return 0;
	}
	if (n < 0 && errno != EINTR)
		return -errno;

	wait_enter(&w, "poll", mode, timeout_ns);
	for (;;) {
		rc = intr_check(&w);
		if (rc)
			break;
		if (!wait_remaining(&w, &ts)) {
			rc = -ETIMEDOUT;
			break;
		}
		n = wait_sleep(&w, &ts, fd, events);
		if (n < 0) {
			rc = n;
			break;
		}
		if (n > 0) {
			if (revents)
				*revents = (short)n;
			rc = 0;
			break;
		}
	}
	wait_exit(&w);
	return rc;
}

int region_task_sleep(int64_t ns, enum task_mode mode)
{
	struct timespec ts;
	struct wait w;
	int rc;

	if (ns < 0)
		ns = 0;
	wait_enter(&w, "sleep", mode, ns);
	for (;;) {
		rc = intr_check(&w);
		if (rc)
			break;
		if (!wait_remaining(&w, &ts))
			break;
		rc = wait_sleep(&w, &ts, -1, 0);
		if (rc < 0)
			break;
	}
	wait_exit(&w);
	return rc;
}

/* Sleeps until me->woken, an interrupt it may deliver, or the deadline. */
static int wait_woken(struct wait *w, struct region__waiter *me)
{
	struct timespec ts;
	int rc;

	for (;;) {
		/* Acquire: pairs with the release in wake_one(). */
		if (atomic_load_explicit(&me->woken, memory_order_acquire))
			return 0;
		rc = intr_check(w);
		if (rc)
			return rc;
		if (!wait_remaining(w, &ts))
			return -ETIMEDOUT;
		rc = wait_sleep(w, &ts, -1, 0);
		if (rc < 0)
			return rc;
	}
}

static void enqueue(struct region__waiter **head, struct region__waiter **tail,
		    struct region__waiter *me)
{
	me->next = NULL;
	me->prev = *tail;
	if (*tail)
		(*tail)->next = me;
	else
		*head = me;
	*tail = me;
}

static void dequeue(struct region__waiter **head, struct region__waiter **tail,
		    struct region__waiter *me)
{
	if (me->prev)
		me->prev->next = me->next;
	else
		*head = me->next;
	if (me->next)
		me->next->prev = me->prev;
	else
		*tail = me->prev;
	me->next = me->prev = NULL;
}

/* Called with the queue's wq_lock held. */
static bool wake_one(struct region__waiter **head, struct region__waiter **tail)
{
	struct region__waiter *w = *head;

	if (!w)
		return false;
	dequeue(head, tail, w);
	atomic_store_explicit(&w->woken, 1, memory_order_release);
	region__wake(w->tc);
	return true;
}

/* Mutex. */

void region_task_mutex_init(task_mutex_t *m)
{
	atomic_init(&m->state, 0);
	pthread_mutex_init(&m->wq_lock, NULL);
	m->head = m->tail = NULL;
}

void region_task_mutex_destroy(task_mutex_t *m)
{
	pthread_mutex_destroy(&m->wq_lock);
}

bool region_task_mutex_trylock(task_mutex_t *m)
{
	int z = 0;

	/* Acquire: the critical section sees the previous owner's writes. */
	return atomic_compare_exchange_strong_explicit(
		&m->state, &z, 1, memory_order_acquire, memory_order_relaxed);
}

static int mutex_lock_slow(task_mutex_t *m, enum task_mode mode,
			   int64_t timeout_ns)
{
	struct region__waiter me = { 0 };
	struct wait w;
	int rc;

	wait_enter(&w, "mutex", mode, timeout_ns);
	me.tc = w.tc;
	for (;;) {
		bool woken;

		pthread_mutex_lock(&m->wq_lock);
		/*
		 * 2, not 1: others may still be queued, and our unlock must
		 * wake them.
		 */
		if (atomic_exchange_explicit(&m->state, 2,
					     memory_order_acquire) == 0) {
			pthread_mutex_unlock(&m->wq_lock);
			rc = 0;
			break;
		}
		atomic_store_explicit(&me.woken, 0, memory_order_relaxed);
		enqueue(&m->head, &m->tail, &me);
		pthread_mutex_unlock(&m->wq_lock);

		rc = wait_woken(&w, &me);

		pthread_mutex_lock(&m->wq_lock);
		woken = atomic_load_explicit(&me.woken, memory_order_relaxed);
		if (!woken)
			dequeue(&m->head, &m->tail, &me);
		pthread_mutex_unlock(&m->wq_lock);
		/* A wakeup that raced with the interrupt is used, not lost. */
		if (rc && !woken)
			break;
	}
	wait_exit(&w);
	return rc;
}

int region_task_mutex_lock(task_mutex_t *m, enum task_mode mode,
			   int64_t timeout_ns)
{
	if (region_task_mutex_trylock(m))
		return 0;
	return mutex_lock_slow(m, mode, timeout_ns);
}

void region_task_mutex_lock_nofail(task_mutex_t *m)
{
	int rc = region_task_mutex_lock(m, TASK_UNINTERRUPTIBLE, TASK_FOREVER);

	(void)rc;
}

void region_task_mutex_unlock(task_mutex_t *m)
{
	/* Release: the next owner sees this critical section's writes. */
	if (atomic_exchange_explicit(&m->state, 0, memory_order_release) == 1)
		return;
	pthread_mutex_lock(&m->wq_lock);
	wake_one(&m->head, &m->tail);
	pthread_mutex_unlock(&m->wq_lock);
}

/* Condition variable. */

void region_task_cond_init(task_cond_t *c)
{
	pthread_mutex_init(&c->wq_lock, NULL);
	c->head = c->tail = NULL;
}

void region_task_cond_destroy(task_cond_t *c)
{
	pthread_mutex_destroy(&c->wq_lock);
}

int region_task_cond_wait(task_cond_t *c, task_mutex_t *m, enum task_mode mode,
			  int64_t timeout_ns)
{
	struct region__waiter me = { 0 };
	struct wait w;
	bool woken;
	int rc;

	wait_enter(&w, "cond", mode, timeout_ns);
	me.tc = w.tc;
	/* Queued before m is released: a signal after that finds us. */
	pthread_mutex_lock(&c->wq_lock);
	enqueue(&c->head, &c->tail, &me);
	pthread_mutex_unlock(&c->wq_lock);
	region_task_mutex_unlock(m);

	rc = wait_woken(&w, &me);

	pthread_mutex_lock(&c->wq_lock);
	woken = atomic_load_explicit(&me.woken, memory_order_relaxed);
	if (!woken)
		dequeue(&c->head, &c->tail, &me);
	pthread_mutex_unlock(&c->wq_lock);
	wait_exit(&w);
	if (woken)
		rc = 0;
	region_task_mutex_lock_nofail(m);
	return rc;
}

void region_task_cond_signal(task_cond_t *c)
{
	pthread_mutex_lock(&c->wq_lock);
	wake_one(&c->head, &c->tail);
	pthread_mutex_unlock(&c->wq_lock);
}

void region_task_cond_broadcast(task_cond_t *c)
{
	pthread_mutex_lock(&c->wq_lock);
	while (wake_one(&c->head, &c->tail))
		;
	pthread_mutex_unlock(&c->wq_lock);
}
