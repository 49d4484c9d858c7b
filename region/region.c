/*
 * Regions of uninterruptibility: the slow paths of region begin/end (the
 * sigmask policy and the event hook), the checks (unbalanced end, the
 * hung-task watchdog), reports, events, counters, and the per-thread context
 * every wait sleeps on.
 *
 * The fast path of begin/end is inline in region.h and touches only the
 * current thread's region state; nothing here may take a lock on that path.
 * The watchdog thread reads other tasks' state through relaxed atomics and
 * takes only the task list lock (through region__tasks_walk()).
 *
 * Lock order: the watchdog's wd.lock is a leaf; the watchdog thread drops it
 * before it walks the task list under tasks_lock (task.c).
 */
#include "region_i.h"
#include "intrfs/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

__thread struct region_state *region__cur
	__attribute__((tls_model("initial-exec")));
__thread struct region_state *region__fast
	__attribute__((tls_model("initial-exec")));
__thread struct thread_ctx region__tc
	__attribute__((tls_model("initial-exec")));

_Atomic uint64_t region__clock_ms;
struct region__counters region__stats;

_Atomic(void (*)(const struct region_event *, void *)) region__event_fn;
static _Atomic(void *) event_arg;
static _Atomic(void (*)(const char *, void *)) report_fn;
static _Atomic(void *) report_arg;

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static pthread_key_t tc_key;

uint64_t region_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Names and parsing. */

const char *region_task_mode_name(enum task_mode mode)
{
	switch (mode) {
	case TASK_INTERRUPTIBLE:
		return "interruptible";
	case TASK_KILLABLE:
		return "killable";
	case TASK_UNINTERRUPTIBLE:
		return "uninterruptible";
	}
	return "?";
}

static const char *const policy_names[] = {
	[REGION_POLICY_PERCALL] = "percall",
	[REGION_POLICY_REGION] = "region",
	[REGION_POLICY_SIGMASK] = "sigmask",
};

const char *region_policy_name(enum region_policy policy)
{
	if ((unsigned)policy < ARRAY_SIZE(policy_names))
		return policy_names[policy];
	return "?";
}

int region_policy_parse(const char *name, enum region_policy *policy)
{
	for (unsigned i = 0; i < ARRAY_SIZE(policy_names); i++) {
		if (strcmp(name, policy_names[i]) == 0) {
			*policy = (enum region_policy)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *region_kind_name(enum region_kind kind)
{
	return kind == REGION_UNINTERRUPTIBLE ? "uninterruptible" : "killable";
}

/* The per-thread context and the sigmask policy's signals. */

int region_sigmask_signal(enum task_intr kind)
{
	/*
	 * Two real-time signals well above the ones glibc keeps for itself;
	 * SIGRTMIN is a function call, so this is too.
	 */
	return kind == TASK_INTR_FATAL ? SIGRTMIN + 5 : SIGRTMIN + 4;
}

void region__sigset(sigset_t *set, unsigned kinds)
{
	sigemptyset(set);
	if (kinds & TASK_INTR_NORMAL)
		sigaddset(set, region_sigmask_signal(TASK_INTR_NORMAL));
	if (kinds & TASK_INTR_FATAL)
		sigaddset(set, region_sigmask_signal(TASK_INTR_FATAL));
}

unsigned region__kind_blocks(enum region_kind kind)
{
	return kind == REGION_UNINTERRUPTIBLE ?
		       TASK_INTR_NORMAL | TASK_INTR_FATAL :
		       TASK_INTR_NORMAL;
}

static void sigmask_handler(int sig)
{
	int saved = errno;
	unsigned kind = sig == region_sigmask_signal(TASK_INTR_FATAL) ?
				TASK_INTR_FATAL :
				TASK_INTR_NORMAL;

	/* Lock-free atomics and write() are async-signal-safe. */
	atomic_fetch_or_explicit(&region__tc.arrived, kind,
				 memory_order_relaxed);
	if (region__tc.ready)
		region__wake(&region__tc);
	errno = saved;
}

static void tc_destroy(void *p)
{
	struct thread_ctx *tc = p;

	if (tc->ready) {
		tc->ready = false;
		close(tc->efd);
		tc->efd = -1;
	}
}

static void global_init_once(void)
{
	struct sigaction sa;

	if (pthread_key_create(&tc_key, tc_destroy) != 0)
		abort();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sigmask_handler;
	sigfillset(&sa.sa_mask);
	/* No SA_RESTART: the signal should cut a ppoll() short. */
	sigaction(region_sigmask_signal(TASK_INTR_NORMAL), &sa, NULL);
	sigaction(region_sigmask_signal(TASK_INTR_FATAL), &sa, NULL);
}

void region__global_init(void)
{
	pthread_once(&global_once, global_init_once);
}

struct thread_ctx *region__thread_ctx(void)
{
	struct thread_ctx *tc = &region__tc;

	if (__builtin_expect(tc->ready, 1))
		return tc;
	region__global_init();
	tc->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (tc->efd < 0) {
		region__report("cannot create a waker eventfd: %s",
			       strerror(errno));
		abort();
	}
	tc->own.policy = REGION_POLICY_REGION;
	pthread_setspecific(tc_key, tc);
	tc->ready = true;
	return tc;
}

void region__refresh_fast(void)
{
	struct region_state *rs = region__cur;

	region__fast =
		rs && rs->policy != REGION_POLICY_SIGMASK &&
				!atomic_load_explicit(&region__event_fn,
						      memory_order_relaxed) ?
			rs :
			NULL;
}

struct region_state *region__thread_state(void)
{
	if (__builtin_expect(region__cur == NULL, 0)) {
		region__cur = &region__thread_ctx()->own;
		region__refresh_fast();
	}
	return region__cur;
}

void region_depths(unsigned *uninterruptible, unsigned *killable)
{
	const struct region_state *rs = region__cur;
	uint64_t c =
		rs ? atomic_load_explicit(&rs->count, memory_order_relaxed) : 0;

	if (uninterruptible)
		*uninterruptible = region__uninterruptible_depth(c);
	if (killable)
		*killable = region__killable_depth(c);
}

void region_begin_at(const struct region_site *site)
{
	region__begin(site);
}

void region_end_at(const struct region_site *site)
{
	region__end(site->kind, site->file, site->line);
}

/* Caller-declared regions: the ioctl an intrfs daemon serves. */

static int caller_ioc(int fd, enum region_caller_op op, enum region_kind kind,
		      const char *reason)
{
	struct region_caller_ioc ioc;

	if (kind != REGION_UNINTERRUPTIBLE && kind != REGION_KILLABLE)
		return -EINVAL;
	memset(&ioc, 0, sizeof(ioc));
	ioc.op = op;
	ioc.kind = kind;
	if (reason)
		snprintf(ioc.reason, sizeof(ioc.reason), "%s", reason);
	return ioctl(fd, REGION_CALLER_IOC, &ioc) < 0 ? -errno : 0;
}

int region_caller_begin(int fd, enum region_kind kind, const char *reason)
{
	return caller_ioc(fd, REGION_CALLER_BEGIN, kind, reason);
}

int region_caller_end(int fd, enum region_kind kind)
{
	return caller_ioc(fd, REGION_CALLER_END, kind, NULL);
}

/* Reports and events. */

void region_set_report_hook(void (*fn)(const char *msg, void *arg), void *arg)
{
	atomic_store_explicit(&report_arg, arg, memory_order_relaxed);
	/* Release: a reporter that sees fn also sees its arg. */
	atomic_store_explicit(&report_fn, fn, memory_order_release);
}

void region__report(const char *fmt, ...)
{
	void (*fn)(const char *, void *);
	char buf[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fn = atomic_load_explicit(&report_fn, memory_order_acquire);
	if (fn)
		fn(buf,
		   atomic_load_explicit(&report_arg, memory_order_relaxed));
	else
		fprintf(stderr, "intrfs: %s\n", buf);
}

void region_set_event_hook(void (*fn)(const struct region_event *, void *),
			   void *arg)
{
	atomic_store_explicit(&event_arg, arg, memory_order_relaxed);
	/* Release: a thread that sees fn also sees its arg. */
	atomic_store_explicit(&region__event_fn, fn, memory_order_release);
	region__refresh_fast();
}

void region__emit(enum region_event_type type, const struct task *t,
		  const struct region_site *site, unsigned depth,
		  enum task_intr intr, uint64_t deferral_ns)
{
	void (*fn)(const struct region_event *, void *);
	struct region_event ev;

	fn = atomic_load_explicit(&region__event_fn, memory_order_acquire);
	if (!fn)
		return;
	ev.type = type;
	ev.task_id = t ? t->id : 0;
	ev.site = site;
	ev.depth = depth;
	ev.intr = intr;
	ev.deferral_ns = deferral_ns;
	fn(&ev, atomic_load_explicit(&event_arg, memory_order_relaxed));
}

size_t region__format_stack(char *buf, size_t len,
			    const struct region_state *rs)
{
	uint64_t c = atomic_load_explicit(&rs->count, memory_order_acquire);
	unsigned d = region__depth(c);
	uint64_t now = region_clock_ms();
	size_t off = 0;

	if (d > REGION_MAX_DEPTH)
		d = REGION_MAX_DEPTH;
	if (d == 0) {
		off += snprintf(buf, len, "  (no region)\n");
		return off < len ? off : len;
	}
	for (unsigned i = d; i-- > 0 && off < len;) {
		const struct region_site *s = atomic_load_explicit(
			&rs->stack[i].site, memory_order_relaxed);
		uint64_t st = atomic_load_explicit(&rs->stack[i].stamp_ms,
						   memory_order_relaxed);

		if (!s)
			continue;
		off += snprintf(buf + off, len - off,
				"  #%u %s \"%s\" begun at %s:%d (%s)", i,
				region_kind_name(s->kind), s->reason, s->file,
				s->line, s->func);
		if (off < len && st && now >= st)
			off += snprintf(buf + off, len - off,
					", %" PRIu64 " ms ago", now - st);
		if (off < len)
			off += snprintf(buf + off, len - off, "\n");
	}
	return off < len ? off : len;
}

/* Slow paths of begin and end. */

void region__begin_slow(const struct region_site *site)
{
	struct region_state *rs = region__thread_state();
	unsigned depth = region__push(rs, site);

	if (rs->policy == REGION_POLICY_SIGMASK) {
		unsigned kinds = region__kind_blocks(site->kind);
		sigset_t set, old;

		/*
		 * Save and block, as local_irq_save() does: the cost of a real
		 * mask change at every begin is what this policy measures.
		 */
		region__sigset(&set, kinds);
		pthread_sigmask(SIG_BLOCK, &set, &old);
		rs->blocked[depth] = 0;
		if (!sigismember(&old, region_sigmask_signal(TASK_INTR_NORMAL)))
			rs->blocked[depth] |= kinds & TASK_INTR_NORMAL;
		if (!sigismember(&old, region_sigmask_signal(TASK_INTR_FATAL)))
			rs->blocked[depth] |= kinds & TASK_INTR_FATAL;
	}
	region__emit(REGION_EV_BEGIN, region__tc.task, site, depth + 1, 0, 0);
}

void region__end_slow(enum region_kind kind, const char *file, int line)
{
	struct region_state *rs = region__thread_state();
	unsigned depth = region__pop(rs, kind, file, line);

	/* The popped frame is still in the array. */
	region__emit(REGION_EV_END, region__tc.task,
		     atomic_load_explicit(&rs->stack[depth].site,
					  memory_order_relaxed),
		     depth + 1, 0, 0);
	if (rs->policy == REGION_POLICY_SIGMASK && rs->blocked[depth]) {
		sigset_t set;

		/*
		 * Restore what this begin changed; a signal that came meanwhile
		 * is handled right here, before pthread_sigmask() returns.
		 */
		region__sigset(&set, rs->blocked[depth]);
		rs->blocked[depth] = 0;
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	}
}

void region__overflow(const struct region_site *site)
{
	region__report("region stack overflow: %d regions deep at the begin "
		       "of %s \"%s\" at %s:%d (%s)",
		       REGION_MAX_DEPTH, region_kind_name(site->kind),
		       site->reason, site->file, site->line, site->func);
	abort();
}

void region__unbalanced(struct region_state *rs, enum region_kind kind,
			const char *file, int line)
{
	uint64_t c = atomic_load_explicit(&rs->count, memory_order_relaxed);
	unsigned d = region__depth(c);
	char stack[2048];

	if (d == 0) {
		region__report("unbalanced region end: region_end_%s() at "
			       "%s:%d with no region open",
			       region_kind_name(kind), file, line);
	} else {
		const struct region_site *top = atomic_load_explicit(
			&rs->stack[d - 1].site, memory_order_relaxed);

		region__format_stack(stack, sizeof(stack), rs);
		region__report("unbalanced region end: region_end_%s() at "
			       "%s:%d does not match the innermost region, "
			       "%s \"%s\" begun at %s:%d (%s)\nregion stack, "
			       "innermost first:\n%s",
			       region_kind_name(kind), file, line,
			       region_kind_name(top->kind), top->reason,
			       top->file, top->line, top->func, stack);
	}
	abort();
}

/* Counters. */

void region_stats_get(struct region_stats *st)
{
	struct region__counters *c = &region__stats;

	st->raised = atomic_load_explicit(&c->raised, memory_order_relaxed);
	st->delivered =
		atomic_load_explicit(&c->delivered, memory_order_relaxed);
	st->deferred = atomic_load_explicit(&c->deferred, memory_order_relaxed);
	st->deferred_delivered = atomic_load_explicit(&c->deferred_delivered,
						      memory_order_relaxed);
	st->deferral_ns_total = atomic_load_explicit(&c->deferral_ns_total,
						     memory_order_relaxed);
	st->deferral_ns_max =
		atomic_load_explicit(&c->deferral_ns_max, memory_order_relaxed);
	for (unsigned i = 0; i < REGION_DEFERRAL_BUCKETS; i++)
		st->deferral_hist[i] = atomic_load_explicit(
			&c->deferral_hist[i], memory_order_relaxed);
	st->dropped = atomic_load_explicit(&c->dropped, memory_order_relaxed);
	for (unsigned p = 0; p < REGION_POLICIES; p++) {
		struct region_policy_stats *ps = &st->per_policy[p];

		ps->raised =
			atomic_load_explicit(&c->per_policy[p][REGION__PRAISED],
					     memory_order_relaxed);
		ps->delivered = atomic_load_explicit(
			&c->per_policy[p][REGION__PDELIVERED],
			memory_order_relaxed);
		ps->deferred = atomic_load_explicit(
			&c->per_policy[p][REGION__PDEFERRED],
			memory_order_relaxed);
		ps->dropped = atomic_load_explicit(
			&c->per_policy[p][REGION__PDROPPED],
			memory_order_relaxed);
	}
	st->unbalanced_leave = atomic_load_explicit(&c->unbalanced_leave,
						    memory_order_relaxed);
	st->hung_reports =
		atomic_load_explicit(&c->hung_reports, memory_order_relaxed);
}

/* The hung-task watchdog and the coarse clock. */

#define WATCHDOG_TICK_MS 10

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool running; /* protected by lock */
	bool stop; /* protected by lock */
	uint64_t threshold_ns;
	uint64_t start_ns;
} wd = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
};

uint64_t region_clock_ms(void)
{
	return atomic_load_explicit(&region__clock_ms, memory_order_relaxed);
}

struct watchdog_scan {
	uint64_t now, threshold_ns;
};

static void watchdog_check(struct task *t, void *arg)
{
	const struct watchdog_scan *scan = arg;
	uint64_t now = scan->now;
	const char *what;
	uint64_t seq, start;
	char stack[2048];

	what = atomic_load_explicit(&t->wait_what, memory_order_acquire);
	if (!what || atomic_load_explicit(&t->wait_eff, memory_order_relaxed) !=
			     TASK_UNINTERRUPTIBLE)
		return;
	seq = atomic_load_explicit(&t->wait_seq, memory_order_relaxed);
	start = atomic_load_explicit(&t->wait_start_ns, memory_order_relaxed);
	if (seq == t->hung_seq || now < start ||
	    now - start < scan->threshold_ns)
		return;
	t->hung_seq = seq;
	region__format_stack(stack, sizeof(stack), &t->rs);
	atomic_fetch_add_explicit(&region__stats.hung_reports, 1,
				  memory_order_relaxed);
	region__report(
		"task %" PRIu64 " (%s) blocked uninterruptibly in %s "
		"(%s wait) for more than %" PRIu64 " ms, policy %s\n"
		"region stack, innermost first:\n%s",
		t->id, t->name, what,
		region_task_mode_name((enum task_mode)atomic_load_explicit(
			&t->wait_mode, memory_order_relaxed)),
		scan->threshold_ns / 1000000, region_policy_name(t->rs.policy),
		stack);
}

static void *watchdog_main(void *arg)
{
	uint64_t last_scan = 0;

	(void)arg;
	pthread_mutex_lock(&wd.lock);
	while (!wd.stop) {
		struct timespec ts;
		uint64_t now = region_now_ns();
		uint64_t scan_every = wd.threshold_ns / 4;

		/* 1 so that 0 keeps meaning "the clock never ran". */
		atomic_store_explicit(&region__clock_ms,
				      1 + (now - wd.start_ns) / 1000000,
				      memory_order_relaxed);
		if (scan_every < WATCHDOG_TICK_MS * 1000000ull)
			scan_every = WATCHDOG_TICK_MS * 1000000ull;
		if (wd.threshold_ns && now - last_scan >= scan_every) {
			struct watchdog_scan scan = { now, wd.threshold_ns };

			last_scan = now;
			pthread_mutex_unlock(&wd.lock);
			region__tasks_walk(watchdog_check, &scan);
			pthread_mutex_lock(&wd.lock);
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += WATCHDOG_TICK_MS * 1000000l;
		if (ts.tv_nsec >= 1000000000l) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000l;
		}
		pthread_cond_timedwait(&wd.cond, &wd.lock, &ts);
	}
	pthread_mutex_unlock(&wd.lock);
	return NULL;
}

int region_watchdog_start(uint64_t threshold_ns)
{
	int err;

	pthread_mutex_lock(&wd.lock);
	wd.threshold_ns = threshold_ns;
	if (wd.running) {
		pthread_mutex_unlock(&wd.lock);
		return 0;
	}
	wd.stop = false;
	wd.start_ns = region_now_ns();
	atomic_store_explicit(&region__clock_ms, 1, memory_order_relaxed);
	err = pthread_create(&wd.thread, NULL, watchdog_main, NULL);
	if (err == 0)
		wd.running = true;
	pthread_mutex_unlock(&wd.lock);
	return -err;
}

void region_watchdog_stop(void)
{
	pthread_mutex_lock(&wd.lock);
	if (!wd.running) {
		pthread_mutex_unlock(&wd.lock);
		return;
	}
	wd.stop = true;
	pthread_cond_signal(&wd.cond);
	pthread_mutex_unlock(&wd.lock);
	pthread_join(wd.thread, NULL);
	pthread_mutex_lock(&wd.lock);
	wd.running = false;
	pthread_mutex_unlock(&wd.lock);
}
