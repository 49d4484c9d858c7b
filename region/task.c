/*
 * Tasks and interrupts: creation and reference counting, binding a task to
 * the thread that runs it, raising an interrupt from any thread, the
 * interrupt bookkeeping (raised, deferred, delivered, deferral time), and
 * the task list that introspection and the watchdog walk.
 *
 * region_task_interrupt() never blocks on anything but task->lock, which is only
 * held for a few instructions, so it may be called from a FUSE session
 * thread.  Lock order: tasks_lock before task->lock.
 */
#include "region_i.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t tasks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct task *tasks_head; /* protected by tasks_lock */
static unsigned tasks_count; /* protected by tasks_lock */
static _Atomic uint64_t next_id = 1;

task_t *region_task_create(const struct task_attr *attr)
{
	struct task *t;

	region__global_init();
	/* Aligned, so that the region counter starts a cache line. */
	t = aligned_alloc(64, sizeof(*t));
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	memset(t, 0, sizeof(*t));
	t->id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
	snprintf(t->name, sizeof(t->name), "%s",
		 attr && attr->name ? attr->name : "task");
	t->rs.policy = attr ? (uint8_t)attr->policy : REGION_POLICY_REGION;
	t->data = attr ? attr->data : NULL;
	atomic_init(&t->refs, 1);
	pthread_mutex_init(&t->lock, NULL);

	pthread_mutex_lock(&tasks_lock);
	t->next = tasks_head;
	if (tasks_head)
		tasks_head->prev = t;
	tasks_head = t;
	tasks_count++;
	pthread_mutex_unlock(&tasks_lock);
	return t;
}

task_t *region_task_get(task_t *t)
{
	/* Relaxed: a new reference is made from one the caller holds. */
	atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
	return t;
}

void region_task_put(task_t *t)
{
	/*
	 * Acq-rel: the last put must see every write made by holders of the
	 * other references before it frees.
	 */
	if (atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1)
		return;
	pthread_mutex_lock(&tasks_lock);
	if (t->prev)
		t->prev->next = t->next;
	else
		tasks_head = t->next;
	if (t->next)
		t->next->prev = t->prev;
	tasks_count--;
	pthread_mutex_unlock(&tasks_lock);
	region__count_dropped(t);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

task_t *region_task_current(void)
{
	return region__tc.task;
}

uint64_t region_task_id(const task_t *t)
{
	return t->id;
}

void *region_task_data(const task_t *t)
{
	return t->data;
}

enum region_policy region_task_policy(const task_t *t)
{
	return (enum region_policy)t->rs.policy;
}

static void send_signals(pthread_t thread, unsigned kinds)
{
	if (kinds & TASK_INTR_NORMAL)
		pthread_kill(thread, region_sigmask_signal(TASK_INTR_NORMAL));
	if (kinds & TASK_INTR_FATAL)
		pthread_kill(thread, region_sigmask_signal(TASK_INTR_FATAL));
}

void region_task_enter(task_t *t)
{
	struct thread_ctx *tc = region__thread_ctx();
	unsigned pending;

	tc->saved_cur = region__cur;
	tc->task = t;
	region__cur = &t->rs;
	region__refresh_fast();
	if (t->rs.policy == REGION_POLICY_SIGMASK) {
		sigset_t both;

		atomic_store_explicit(&tc->arrived, 0, memory_order_relaxed);
		region__sigset(&both, TASK_INTR_NORMAL | TASK_INTR_FATAL);
		pthread_sigmask(SIG_UNBLOCK, &both, &tc->saved_mask);
	}
	pthread_mutex_lock(&t->lock);
	t->running = true;
	t->thread = pthread_self();
	t->tc = tc;
	pending = atomic_load_explicit(&t->pending, memory_order_relaxed);
	pthread_mutex_unlock(&t->lock);
	/* Interrupts raised before the task ran become signals now. */
	if (t->rs.policy == REGION_POLICY_SIGMASK && pending)
		send_signals(pthread_self(), pending);
}

static void unwind_regions(struct task *t)
{
	uint64_t c = atomic_load_explicit(&t->rs.count, memory_order_relaxed);
	unsigned d = region__depth(c);
	char stack[2048];

	if (d == 0)
		return;
	region__format_stack(stack, sizeof(stack), &t->rs);
	atomic_fetch_add_explicit(&region__stats.unbalanced_leave, 1,
				  memory_order_relaxed);
	region__report("task %" PRIu64 " (%s) finished inside %u region%s; "
		       "region stack, innermost first:\n%s",
		       t->id, t->name, d, d == 1 ? "" : "s", stack);
	if (t->rs.policy == REGION_POLICY_SIGMASK) {
		unsigned kinds = 0;
		sigset_t set;

		for (unsigned i = 0; i < d && i < REGION_MAX_DEPTH; i++) {
			kinds |= t->rs.blocked[i];
			t->rs.blocked[i] = 0;
		}
		region__sigset(&set, kinds);
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	}
	atomic_store_explicit(&t->rs.count, 0, memory_order_release);
}

void region_task_leave(task_t *t)
{
	struct thread_ctx *tc = &region__tc;

	unwind_regions(t);
	pthread_mutex_lock(&t->lock);
	t->running = false;
	t->tc = NULL;
	pthread_mutex_unlock(&t->lock);
	if (t->rs.policy == REGION_POLICY_SIGMASK) {
		static const struct timespec zero = { 0, 0 };
		sigset_t both;

		/*
		 * No more signals can be sent for t (running is false); the
		 * ones already sent are pending on this thread.  Take them
		 * while blocked so they cannot reach the next task.
		 */
		region__sigset(&both, TASK_INTR_NORMAL | TASK_INTR_FATAL);
		pthread_sigmask(SIG_BLOCK, &both, NULL);
		while (sigtimedwait(&both, NULL, &zero) > 0)
			;
		pthread_sigmask(SIG_SETMASK, &tc->saved_mask, NULL);
		atomic_store_explicit(&tc->arrived, 0, memory_order_relaxed);
	}
	region__cur = tc->saved_cur;
	region__refresh_fast();
	tc->task = NULL;
}

/* Kinds t's regions block under the sigmask policy, read from any thread. */
static unsigned sigmask_blocks(const struct task *t)
{
	uint64_t c = atomic_load_explicit(&t->rs.count, memory_order_relaxed);

	if (region__uninterruptible_depth(c))
		return region__kind_blocks(REGION_UNINTERRUPTIBLE);
	if (region__killable_depth(c))
		return region__kind_blocks(REGION_KILLABLE);
	return 0;
}

void region_task_interrupt(task_t *t, enum task_intr kind)
{
	uint64_t zero = 0;

	atomic_fetch_add_explicit(&region__stats.raised, 1,
				  memory_order_relaxed);
	REGION__COUNT_POLICY(t, REGION__PRAISED);
	/* The first raise since a flush dates the interrupt. */
	atomic_compare_exchange_strong_explicit(&t->raised_ns[kind], &zero,
						region_now_ns(),
						memory_order_relaxed,
						memory_order_relaxed);
	/*
	 * Release: a waiter that sees the bit (acquire in the wait) also sees
	 * the date above.
	 */
	atomic_fetch_or_explicit(&t->pending, kind, memory_order_release);
	region__emit(REGION_EV_INTR_RAISED, t, NULL, 0, kind, 0);

	pthread_mutex_lock(&t->lock);
	if (t->running) {
		if (t->rs.policy == REGION_POLICY_SIGMASK) {
			/*
			 * A masked signal wakes nobody, so the wait cannot see
			 * that it holds the interrupt back: the mask says so
			 * here, as the kernel's pending set would.
			 */
			if (sigmask_blocks(t) & kind)
				region__note_deferred(t, kind);
			send_signals(t->thread, kind);
		} else {
			region__wake(t->tc);
		}
	}
	pthread_mutex_unlock(&t->lock);
}

unsigned region_task_pending(const task_t *t)
{
	return atomic_load_explicit(&t->pending, memory_order_acquire);
}

bool region_task_wait_ends_on(const task_t *t, enum task_intr kind)
{
	int eff;

	if (!atomic_load_explicit(&t->wait_what, memory_order_acquire))
		return false;
	eff = atomic_load_explicit(&t->wait_eff, memory_order_relaxed);
	return kind == TASK_INTR_FATAL ? eff <= TASK_KILLABLE :
					 eff == TASK_INTERRUPTIBLE;
}

void region__count_dropped(struct task *t)
{
	unsigned lost =
		atomic_load_explicit(&t->pending, memory_order_relaxed) &
		~atomic_load_explicit(&t->delivered, memory_order_relaxed);

	for (unsigned k = TASK_INTR_NORMAL; k <= TASK_INTR_FATAL; k <<= 1) {
		if (!(lost & k))
			continue;
		atomic_fetch_add_explicit(&region__stats.dropped, 1,
					  memory_order_relaxed);
		REGION__COUNT_POLICY(t, REGION__PDROPPED);
	}
}

void region_task_flush_interrupts(task_t *t)
{
	region__count_dropped(t);
	atomic_store_explicit(&t->pending, 0, memory_order_relaxed);
	atomic_store_explicit(&t->deferred, 0, memory_order_relaxed);
	atomic_store_explicit(&t->delivered, 0, memory_order_relaxed);
	for (unsigned k = 0; k < 3; k++) {
		atomic_store_explicit(&t->raised_ns[k], 0,
				      memory_order_relaxed);
		atomic_store_explicit(&t->delivered_ns[k], 0,
				      memory_order_relaxed);
	}
	if (region__tc.task == t)
		atomic_store_explicit(&region__tc.arrived, 0,
				      memory_order_relaxed);
}

/* Introspection. */

void region_task_snapshot(task_t *t, struct task_info *ti)
{
	uint64_t now = region_now_ns(), clk = region_clock_ms();
	const char *what;
	uint64_t raised = 0;
	uint64_t c;
	unsigned d;

	memset(ti, 0, sizeof(*ti));
	ti->id = t->id;
	snprintf(ti->name, sizeof(ti->name), "%s", t->name);
	ti->policy = (enum region_policy)t->rs.policy;
	pthread_mutex_lock(&t->lock);
	ti->running = t->running;
	pthread_mutex_unlock(&t->lock);
	what = atomic_load_explicit(&t->wait_what, memory_order_acquire);
	if (what) {
		uint64_t st = atomic_load_explicit(&t->wait_start_ns,
						   memory_order_relaxed);

		ti->waiting = true;
		ti->wait_what = what;
		ti->wait_mode = (enum task_mode)atomic_load_explicit(
			&t->wait_mode, memory_order_relaxed);
		ti->wait_eff = (enum task_mode)atomic_load_explicit(
			&t->wait_eff, memory_order_relaxed);
		ti->wait_ns = now > st ? now - st : 0;
	}
	ti->pending = atomic_load_explicit(&t->pending, memory_order_acquire);
	ti->deferred = atomic_load_explicit(&t->deferred, memory_order_relaxed);
	for (unsigned k = 1; k < 3; k++) {
		uint64_t r = atomic_load_explicit(&t->raised_ns[k],
						  memory_order_relaxed);
		uint64_t dl = atomic_load_explicit(&t->delivered_ns[k],
						   memory_order_relaxed);
		uint64_t held;

		if (r && (!raised || r < raised))
			raised = r;
		if (!r || !(ti->deferred & k))
			continue;
		/* Held back until delivered, or until now if still held. */
		held = (dl ? dl : now) > r ? (dl ? dl : now) - r : 0;
		if (held > ti->deferral_ns)
			ti->deferral_ns = held;
		if (dl)
			ti->delivered |= k;
	}
	ti->raised_age_ns = raised && now > raised ? now - raised : 0;

	/*
	 * A snapshot of a stack its owner may be changing: every frame below
	 * the count read with acquire was complete when read.
	 */
	c = atomic_load_explicit(&t->rs.count, memory_order_acquire);
	d = region__depth(c);
	if (d > REGION_MAX_DEPTH)
		d = REGION_MAX_DEPTH;
	ti->depth = d;
	for (unsigned i = 0; i < d; i++) {
		uint64_t st = atomic_load_explicit(&t->rs.stack[i].stamp_ms,
						   memory_order_relaxed);

		ti->stack[i].site = atomic_load_explicit(&t->rs.stack[i].site,
							 memory_order_relaxed);
		ti->stack[i].age_ms = st && clk >= st ? clk - st : 0;
	}
}

int region_task_foreach(int (*fn)(const struct task_info *ti, void *arg),
			void *arg)
{
	struct task_info *ti;
	struct task **all;
	unsigned n = 0;
	int rc = 0;

	ti = malloc(sizeof(*ti));
	if (!ti)
		return -ENOMEM;
	pthread_mutex_lock(&tasks_lock);
	all = malloc(sizeof(*all) * (tasks_count + 1));
	if (!all) {
		pthread_mutex_unlock(&tasks_lock);
		free(ti);
		return -ENOMEM;
	}
	for (struct task *t = tasks_head; t; t = t->next) {
		unsigned r =
			atomic_load_explicit(&t->refs, memory_order_relaxed);

		/*
		 * A task whose count reached zero is waiting for tasks_lock
		 * to unlink itself: skip it rather than resurrect it.
		 */
		while (r && !atomic_compare_exchange_weak_explicit(
				    &t->refs, &r, r + 1, memory_order_relaxed,
				    memory_order_relaxed))
			;
		if (r)
			all[n++] = t;
	}
	pthread_mutex_unlock(&tasks_lock);

	/* fn runs without tasks_lock, so it may use any task call. */
	for (unsigned i = 0; i < n; i++) {
		if (rc == 0) {
			region_task_snapshot(all[i], ti);
			rc = fn(ti, arg);
		}
		region_task_put(all[i]);
	}
	free(all);
	free(ti);
	return rc;
}

void region__tasks_walk(void (*fn)(struct task *t, void *arg), void *arg)
{
	pthread_mutex_lock(&tasks_lock);
	for (struct task *t = tasks_head; t; t = t->next)
		fn(t, arg);
	pthread_mutex_unlock(&tasks_lock);
}
