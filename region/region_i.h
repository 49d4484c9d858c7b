/*
 * Private to the region API (region.c, task.c, wait.c): the task object, the
 * per-thread context every wait sleeps on, and the helpers the three files
 * share.  Nothing outside region/ may include it: libintrfs-region.so
 * exports none of these names (region.map).
 *
 * Every thread that waits owns a thread_ctx with an eventfd, its waker: a
 * wait sleeps in ppoll() on that eventfd (plus the fd it waits for), and
 * whoever wants it to look again writes the eventfd.  An eventfd is level
 * triggered, so a write that lands before the sleep is never lost; the
 * waiter drains it and re-checks every condition it sleeps on.  Under the
 * sigmask policy the interrupter sends a real signal instead, whose handler
 * writes the same eventfd.
 *
 * Lock order: tasks_lock (task.c) before task->lock; a task_mutex's or
 * task_cond's wq_lock is a leaf.
 */
#ifndef INTRFS_REGION_I_H
#define INTRFS_REGION_I_H

#include "intrfs/region.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

struct task;

struct thread_ctx {
	bool ready;
	int efd; /* the waker; -1 until ready */
	/* Sigmask policy: interrupt kinds whose signal this thread took. */
	_Atomic unsigned arrived;
	struct task *task; /* the current task, or NULL */
	struct region_state
		*saved_cur; /* region__cur before region_task_enter() */
	sigset_t saved_mask; /* sigmask policy: before region_task_enter() */
	struct region_state own; /* regions of a thread without a task */
};

/* A sleeper on a task_mutex or task_cond queue; lives on its stack. */
struct region__waiter {
	struct region__waiter *next, *prev;
	struct thread_ctx *tc;
	_Atomic int woken;
};

struct task {
	struct region_state rs; /* first: region__cur points here */
	uint64_t id;
	char name[48];
	void *data;
	_Atomic unsigned refs;

	_Atomic unsigned pending; /* enum task_intr bits */
	_Atomic unsigned deferred; /* pending bits a wait had to hold back */
	_Atomic unsigned delivered; /* bits a wait has returned -EINTR for */
	_Atomic uint64_t raised_ns[3]; /* by kind: first raise since flush */
	_Atomic uint64_t delivered_ns[3]; /* by kind: first delivery */

	pthread_mutex_t lock;
	bool running; /* protected by lock */
	pthread_t thread; /* protected by lock */
	struct thread_ctx *tc; /* protected by lock */

	/* The current wait: written by the owner, read by watchers. */
	_Atomic(const char *) wait_what; /* NULL when not waiting */
	_Atomic int wait_mode, wait_eff;
	_Atomic uint64_t wait_start_ns;
	_Atomic uint64_t wait_seq;
	uint64_t hung_seq; /* watchdog thread only: last wait reported */

	struct task *next, *prev; /* protected by tasks_lock */
};

extern __thread struct thread_ctx region__tc
	__attribute__((tls_model("initial-exec")));

/* The calling thread's region state, made on first use. */
struct region_state *region__thread_state(void);
/* Recomputes region__fast after region__cur, a policy or the hook changed. */
void region__refresh_fast(void);

/* Makes sure the calling thread's waker exists; returns its context. */
struct thread_ctx *region__thread_ctx(void);
/* Runs once: installs the sigmask policy's signal handler. */
void region__global_init(void);

void region__report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Appends the region stack of rs, innermost first, to buf. */
size_t region__format_stack(char *buf, size_t len,
			    const struct region_state *rs);
void region__emit(enum region_event_type type, const struct task *t,
		  const struct region_site *site, unsigned depth,
		  enum task_intr intr, uint64_t deferral_ns);
extern _Atomic(void (*)(const struct region_event *, void *)) region__event_fn;

/* Global counters (region.c). */
struct region__counters {
	_Atomic uint64_t raised, delivered, deferred, deferred_delivered;
	_Atomic uint64_t deferral_ns_total, deferral_ns_max;
	_Atomic uint64_t deferral_hist[REGION_DEFERRAL_BUCKETS];
	_Atomic uint64_t dropped;
	/* Per policy: raised, delivered, deferred, dropped (REGION__P*). */
	_Atomic uint64_t per_policy[REGION_POLICIES][4];
	_Atomic uint64_t unbalanced_leave, hung_reports;
};
extern struct region__counters region__stats;

enum {
	REGION__PRAISED,
	REGION__PDELIVERED,
	REGION__PDEFERRED,
	REGION__PDROPPED
};

/* Counts one interrupt event of task t in its policy's counters. */
#define REGION__COUNT_POLICY(t, which)                                      \
	atomic_fetch_add_explicit(                                          \
		&region__stats.per_policy[(t)->rs.policy % REGION_POLICIES] \
					 [(which)],                         \
		1, memory_order_relaxed)

/* The kinds t had raised and not delivered go uncounted from here: dropped. */
void region__count_dropped(struct task *t);

/* Signal set of the sigmask policy's signals for the kinds in mask. */
void region__sigset(sigset_t *set, unsigned kinds);
/* Kinds a region of this kind blocks under the sigmask policy. */
unsigned region__kind_blocks(enum region_kind kind);

/* Walks the task list under its lock (task.c), for the watchdog. */
void region__tasks_walk(void (*fn)(struct task *t, void *arg), void *arg);

/* Records kinds as held back by t, counting each once (wait.c). */
void region__note_deferred(struct task *t, unsigned kinds);

/* Mode of a wait after regions and policy (wait.c). */
enum task_mode region__eff(const struct region_state *rs, enum task_mode m);

static inline void region__wake(struct thread_ctx *tc)
{
	uint64_t one = 1;
	ssize_t n;

	/* EAGAIN means the counter is saturated: it is readable anyway. */
	n = write(tc->efd, &one, sizeof(one));
	(void)n;
}

#endif /* INTRFS_REGION_I_H */
