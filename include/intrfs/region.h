/*
 * intrfs region API: tasks, per-call waits, regions of uninterruptibility
 * and interrupts, modelled in user space.
 *
 * A task is the unit of work that gets interrupted (later: one FUSE
 * request).  It runs on one thread at a time; region_task_enter() makes it the
 * current task of the calling thread.  Every blocking primitive here takes a
 * per-call mode, as the kernel's waits do today, and returns 0, -EINTR or
 * -ETIMEDOUT.  Regions (region_begin_*() / region_end_*()) nest to any depth
 * up to REGION_MAX_DEPTH and are tracked by a counter in the task, like
 * preempt_count(): inside an uninterruptible region every wait is
 * uninterruptible whatever its mode, inside a killable region only fatal
 * interrupts get through, and an inner end never loosens an outer region.
 *
 * Whether regions are enforced is the task's policy:
 *  - REGION_POLICY_PERCALL: regions are recorded, not enforced; the
 *    innermost wait's own mode decides (today's kernel).
 *  - REGION_POLICY_REGION: the counters are enforced (the proposal).
 *  - REGION_POLICY_SIGMASK: a region blocks real per-thread signals with
 *    pthread_sigmask() and an interrupt is a real signal sent to the task's
 *    thread (the alternative raised in the discussion); an uninterruptible
 *    region blocks fatal interrupts too, as the kernel could mask SIGKILL.
 *
 * An interrupt that is not deliverable stays pending ("deferred"); the wait
 * that saw it goes on, and the interrupt is delivered at the first
 * interruptible point after the region ends.  Interrupts are sticky, like a
 * pending signal: once raised, every later wait that may deliver it returns
 * -EINTR, until region_task_flush_interrupts().
 *
 * The begin/end fast path is inline (a handful of stores into the current
 * task's region state), which is why struct region_state is visible here; its
 * fields are private to the region API.
 */
#ifndef INTRFS_REGION_H
#define INTRFS_REGION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>

#ifdef __cplusplus
extern "C" {
#endif

#define REGION_MUST_CHECK __attribute__((warn_unused_result))

/* Per-call wait modes, ordered from most to least interruptible. */
enum task_mode {
	TASK_INTERRUPTIBLE = 0,
	TASK_KILLABLE = 1,
	TASK_UNINTERRUPTIBLE = 2,
};

/* Interrupt kinds; a bit each, so a set of pending interrupts is a mask. */
enum task_intr {
	TASK_INTR_NORMAL = 1,
	TASK_INTR_FATAL = 2,
};

enum region_policy {
	REGION_POLICY_PERCALL = 0,
	REGION_POLICY_REGION = 1,
	REGION_POLICY_SIGMASK = 2,
};

enum region_kind {
	REGION_UNINTERRUPTIBLE = 1,
	REGION_KILLABLE = 2,
};

/* A wait with no timeout. */
#define TASK_FOREVER ((int64_t)-1)

/* Deepest region nesting a task may have; deeper is a bug and aborts. */
#define REGION_MAX_DEPTH 32

/*
 * Where and why a region began.  The begin macros make one static instance
 * per call site, so a begin stores a single pointer.
 */
struct region_site {
	enum region_kind kind;
	const char *reason;
	const char *file;
	int line;
	const char *func;
};

/* Private to the region API (see the top of this file). */
struct region_frame {
	_Atomic(const struct region_site *) site;
	/* region_clock_ms() at begin: coarse, so that begin stays cheap. */
	_Atomic uint64_t stamp_ms;
};

/* Private to the region API (see the top of this file). */
struct region_state {
	/*
	 * The nesting counter, like preempt_count(): bits 32 and up hold the
	 * depth, bit i of the low 32 bits says whether level i is killable
	 * (1) or uninterruptible (0).  So an end checks that it matches its
	 * begin without touching the stack, and the uninterruptible and
	 * killable depths are a popcount away.  Only the owning thread
	 * writes it; other threads read it for introspection, hence relaxed
	 * atomics (plain moves on x86).
	 */
	_Atomic uint64_t count;
	uint8_t policy;
	/* Sigmask policy: which interrupt signals each level newly blocked. */
	uint8_t blocked[REGION_MAX_DEPTH];
	struct region_frame stack[REGION_MAX_DEPTH];
} __attribute__((aligned(64)));

#define REGION__DEPTH_ONE (1ull << 32)

/*
 * The calling thread's region state (its task's, or its own when it runs
 * none), and the same pointer when begin/end may take the inline path; NULL
 * there sends them to the out-of-line path: no state yet, the sigmask
 * policy, or an event hook.
 */
extern __thread struct region_state *region__cur
	__attribute__((tls_model("initial-exec")));
extern __thread struct region_state *region__fast
	__attribute__((tls_model("initial-exec")));
extern _Atomic uint64_t region__clock_ms;

void region__begin_slow(const struct region_site *site);
void region__end_slow(enum region_kind kind, const char *file, int line);
void region__overflow(const struct region_site *site) __attribute__((noreturn));
void region__unbalanced(struct region_state *rs, enum region_kind kind,
			const char *file, int line) __attribute__((noreturn));

static inline unsigned region__depth(uint64_t count)
{
	return (unsigned)(count >> 32);
}

/* The kind bits of the levels in use (the others are always 0). */
static inline uint32_t region__killable_bits(uint64_t count)
{
	return (uint32_t)count;
}

static inline unsigned region__killable_depth(uint64_t count)
{
	return (unsigned)__builtin_popcount(region__killable_bits(count));
}

static inline unsigned region__uninterruptible_depth(uint64_t count)
{
	return region__depth(count) - region__killable_depth(count);
}

/* Pushes a level; returns the new level's index. */
static inline unsigned region__push(struct region_state *rs,
				    const struct region_site *site)
{
	uint64_t c = atomic_load_explicit(&rs->count, memory_order_relaxed);
	unsigned d = region__depth(c);

	if (__builtin_expect(d >= REGION_MAX_DEPTH, 0))
		region__overflow(site);
	atomic_store_explicit(&rs->stack[d].site, site, memory_order_relaxed);
	atomic_store_explicit(&rs->stack[d].stamp_ms,
			      atomic_load_explicit(&region__clock_ms,
						   memory_order_relaxed),
			      memory_order_relaxed);
	/*
	 * Release: an introspecting reader that sees the new count also sees
	 * the frame it covers.
	 */
	atomic_store_explicit(&rs->count,
			      (c + REGION__DEPTH_ONE) |
				      ((uint64_t)(site->kind == REGION_KILLABLE)
				       << d),
			      memory_order_release);
	return d;
}

/* Pops the innermost level, which must be of this kind; returns its index. */
static inline unsigned region__pop(struct region_state *rs,
				   enum region_kind kind, const char *file,
				   int line)
{
	uint64_t c = atomic_load_explicit(&rs->count, memory_order_relaxed);
	unsigned d = region__depth(c);
	uint64_t k = kind == REGION_KILLABLE;

	if (__builtin_expect(d == 0 || ((c >> (d - 1)) & 1) != k, 0))
		region__unbalanced(rs, kind, file, line);
	atomic_store_explicit(&rs->count,
			      (c - REGION__DEPTH_ONE) & ~(k << (d - 1)),
			      memory_order_release);
	return d - 1;
}

static inline void region__begin(const struct region_site *site)
{
	struct region_state *rs = region__fast;

	if (__builtin_expect(rs == NULL, 0))
		region__begin_slow(site);
	else
		region__push(rs, site);
}

static inline void region__end(enum region_kind kind, const char *file,
			       int line)
{
	struct region_state *rs = region__fast;

	if (__builtin_expect(rs == NULL, 0))
		region__end_slow(kind, file, line);
	else
		region__pop(rs, kind, file, line);
}

#define REGION__BEGIN(k, why)                                     \
	do {                                                      \
		static const struct region_site region__site_ = { \
			(k), (why), __FILE__, __LINE__, __func__  \
		};                                                \
		region__begin(&region__site_);                    \
	} while (0)

/*
 * Begin/end a region.  The reason must be a string literal (or otherwise
 * live forever): it is shown by introspection and by the hung-task watchdog.
 * Ends must match begins innermost first; a mismatch aborts with a message
 * naming the innermost begin's call site.
 */
#define region_begin_uninterruptible(why) \
	REGION__BEGIN(REGION_UNINTERRUPTIBLE, (why))
#define region_end_uninterruptible() \
	region__end(REGION_UNINTERRUPTIBLE, __FILE__, __LINE__)
#define region_begin_killable(why) REGION__BEGIN(REGION_KILLABLE, (why))
#define region_end_killable() region__end(REGION_KILLABLE, __FILE__, __LINE__)

/*
 * A region whose site the caller made, for one declared elsewhere (by the
 * caller of a request, in another process, say): site, its kind, reason
 * and where, must live until the region ends.  These nest with the
 * macros' regions like any other; region_end_at() ends the innermost, which
 * must be site's kind.
 */
void region_begin_at(const struct region_site *site);
void region_end_at(const struct region_site *site);

/* Current uninterruptible and killable depths of the calling thread. */
void region_depths(unsigned *uninterruptible, unsigned *killable);

/*
 * Caller-declared regions: a thread opens a region that the waits of an
 * intrfs mount obey for every request this thread makes to that mount,
 * nested outside the mount's own regions (the upper layer's region of the
 * proposal, taken across FUSE).  fd is any open file or directory of the
 * mount (not O_PATH); reason is cut at REGION_CALLER_REASON_MAX - 1
 * bytes.  Each returns 0 or -errno: -ENOTTY on a file that is not on an
 * intrfs mount, -EINVAL for a kind that is neither, or an end with no
 * region of that kind innermost, -EBADF for an O_PATH descriptor, -EACCES
 * for another user's mount without allow_other.  A region a thread leaves
 * open when it ends is closed by the mount (and logged).
 */
#define REGION_CALLER_REASON_MAX 64
int region_caller_begin(int fd, enum region_kind kind, const char *reason);
int region_caller_end(int fd, enum region_kind kind);

/*
 * The ioctl behind them, which an intrfs daemon serves on any of its
 * files: a fixed-size struct, as FUSE passes ioctls through only then.
 */
enum region_caller_op {
	REGION_CALLER_BEGIN = 1,
	REGION_CALLER_END = 2,
};

struct region_caller_ioc {
	uint32_t op; /* enum region_caller_op */
	uint32_t kind; /* enum region_kind */
	uint32_t depth; /* out: the thread's caller regions after it */
	uint32_t reserved; /* 0 */
	char reason[REGION_CALLER_REASON_MAX];
};

#define REGION_CALLER_IOC _IOWR('r', 0x4c, struct region_caller_ioc)

/* Tasks. */

typedef struct task task_t;

struct task_attr {
	const char *name; /* copied; shown by introspection */
	enum region_policy policy;
	void *data; /* the creator's, returned by region_task_data() */
};

/* Returns a task holding one reference, or NULL with errno = ENOMEM. */
task_t *region_task_create(const struct task_attr *attr);
task_t *region_task_get(task_t *t);
void region_task_put(task_t *t);

/*
 * Makes t the calling thread's current task.  A thread runs one task at a
 * time; t must not be current on another thread.
 */
void region_task_enter(task_t *t);
/*
 * Ends t's run on this thread.  A task still inside a region is reported
 * (the region stack is named) and its regions are unwound.
 */
void region_task_leave(task_t *t);

task_t *region_task_current(void);
uint64_t region_task_id(const task_t *t);
void *region_task_data(const task_t *t);
enum region_policy region_task_policy(const task_t *t);

/*
 * Raises an interrupt on t from any thread and wakes its current wait.  Safe
 * to call before t runs and after it has left; t stays referenced by the
 * caller.
 */
void region_task_interrupt(task_t *t, enum task_intr kind);
/* Pending interrupts (a mask of enum task_intr). */
unsigned region_task_pending(const task_t *t);
/* Forgets pending interrupts, as flush_signals() does. */
void region_task_flush_interrupts(task_t *t);
/*
 * True when t is inside a wait that an interrupt of this kind ends now
 * (for a caller that wants to answer for it at once); a snapshot, from any
 * thread.
 */
bool region_task_wait_ends_on(const task_t *t, enum task_intr kind);

/*
 * An interruptible point that does not block: -EINTR when an interrupt is
 * pending that a wait of this mode would deliver now, else 0.
 */
REGION_MUST_CHECK int region_task_check_interrupt(enum task_mode mode);

/* The mode a wait of this per-call mode would have now, on this thread. */
enum task_mode region_task_effective_mode(enum task_mode mode);

/* Per-call waits.  timeout_ns is relative, TASK_FOREVER for none. */

/*
 * Waits until fd has one of events (POLLIN, POLLOUT, ...), stores what it
 * has in *revents when revents is not NULL.  A ready fd wins over a pending
 * interrupt, as in wait_event_interruptible().
 */
REGION_MUST_CHECK int region_task_wait_fd(int fd, short events,
					  enum task_mode mode,
					  int64_t timeout_ns, short *revents);

/* Sleeps for ns; 0 when the time has passed, -EINTR when interrupted. */
REGION_MUST_CHECK int region_task_sleep(int64_t ns, enum task_mode mode);

/* A mutex whose lock is a wait like the others (mutex_lock_interruptible). */
typedef struct task_mutex {
	/* 0 unlocked, 1 locked, 2 locked and maybe waited on. */
	_Atomic int state;
	pthread_mutex_t wq_lock;
	struct region__waiter *head, *tail; /* protected by wq_lock */
} task_mutex_t;

#define TASK_MUTEX_INITIALIZER                           \
	{                                                \
		0, PTHREAD_MUTEX_INITIALIZER, NULL, NULL \
	}

void region_task_mutex_init(task_mutex_t *m);
void region_task_mutex_destroy(task_mutex_t *m);
REGION_MUST_CHECK int region_task_mutex_lock(task_mutex_t *m,
					     enum task_mode mode,
					     int64_t timeout_ns);
/* Uninterruptible and unbounded: cannot fail, like mutex_lock(). */
void region_task_mutex_lock_nofail(task_mutex_t *m);
REGION_MUST_CHECK bool region_task_mutex_trylock(task_mutex_t *m);
void region_task_mutex_unlock(task_mutex_t *m);

typedef struct task_cond {
	pthread_mutex_t wq_lock;
	struct region__waiter *head, *tail; /* protected by wq_lock */
} task_cond_t;

#define TASK_COND_INITIALIZER                         \
	{                                             \
		PTHREAD_MUTEX_INITIALIZER, NULL, NULL \
	}

void region_task_cond_init(task_cond_t *c);
void region_task_cond_destroy(task_cond_t *c);
/*
 * Releases m, waits for a signal on c, takes m back (uninterruptibly) before
 * returning, whatever the result.  A waiter that was signalled returns 0 even
 * if an interrupt came too, so no wakeup is ever lost.
 */
REGION_MUST_CHECK int region_task_cond_wait(task_cond_t *c, task_mutex_t *m,
					    enum task_mode mode,
					    int64_t timeout_ns);
void region_task_cond_signal(task_cond_t *c);
void region_task_cond_broadcast(task_cond_t *c);

/* Introspection and checks. */

/* A consistent-enough copy of a task for display; see region_task_foreach(). */
struct task_info {
	uint64_t id;
	char name[48];
	enum region_policy policy;
	bool running; /* current on some thread */
	bool waiting; /* inside a wait */
	const char *wait_what; /* "poll", "sleep", "mutex", "cond" */
	enum task_mode wait_mode; /* per-call mode of the current wait */
	enum task_mode wait_eff; /* what regions and policy made of it */
	uint64_t wait_ns; /* how long the current wait has lasted */
	unsigned pending; /* enum task_intr bits */
	unsigned deferred; /* pending bits a wait had to defer */
	unsigned delivered; /* of those, the ones delivered since */
	uint64_t raised_age_ns; /* since the first pending interrupt */
	uint64_t deferral_ns; /* longest a deferred one was held back */
	unsigned depth;
	struct {
		const struct region_site *site;
		uint64_t age_ms; /* coarse; 0 when the clock is not running */
	} stack[REGION_MAX_DEPTH];
};

/* Calls fn on a snapshot of every live task; stops when fn returns != 0. */
int region_task_foreach(int (*fn)(const struct task_info *ti, void *arg),
			void *arg);
/* Fills ti from t. */
void region_task_snapshot(task_t *t, struct task_info *ti);

/* Deferral times by decade: < 1 ms, < 10 ms, < 100 ms, < 1 s, < 10 s, more. */
#define REGION_DEFERRAL_BUCKETS 6
/* The policies (enum region_policy), for per-policy counters. */
#define REGION_POLICIES 3

/* Interrupts of the tasks of one policy. */
struct region_policy_stats {
	uint64_t raised, delivered, deferred;
	uint64_t dropped; /* never delivered: flushed, or the task ended */
};

struct region_stats {
	uint64_t raised; /* region_task_interrupt() calls */
	uint64_t delivered; /* interrupts that made a wait return -EINTR */
	uint64_t deferred; /* interrupts a wait had to hold back */
	uint64_t deferred_delivered; /* of those, delivered later */
	uint64_t deferral_ns_total; /* raised → delivered, deferred ones */
	uint64_t deferral_ns_max;
	/* Deferred interrupts delivered, by how long they were held back. */
	uint64_t deferral_hist[REGION_DEFERRAL_BUCKETS];
	/* Interrupts never delivered: flushed, or the task ended with them. */
	uint64_t dropped;
	/* raised, delivered, deferred, dropped, by the task's policy. */
	struct region_policy_stats per_policy[REGION_POLICIES];
	uint64_t unbalanced_leave; /* tasks that left inside a region */
	uint64_t hung_reports; /* watchdog reports */
};

void region_stats_get(struct region_stats *st);

/*
 * Reports (a task left inside a region, the watchdog) go to stderr unless a
 * hook is set; the hook gets one complete message, possibly multi-line.
 */
void region_set_report_hook(void (*fn)(const char *msg, void *arg), void *arg);

/*
 * Events, for tracing: region begin/end, interrupt raised, deferred,
 * delivered.  The hook runs on the thread where the event happens and must
 * not wait.  Interrupt events are seen at once everywhere; begin/end events
 * at once on the calling thread and on other threads from their next
 * region_task_enter(), which keeps the hook off the inline begin/end path.
 */
enum region_event_type {
	REGION_EV_BEGIN,
	REGION_EV_END,
	REGION_EV_INTR_RAISED,
	REGION_EV_INTR_DEFERRED,
	REGION_EV_INTR_DELIVERED,
};

struct region_event {
	enum region_event_type type;
	uint64_t task_id; /* 0: a thread without a task */
	const struct region_site *site; /* begin/end */
	unsigned depth; /* after begin, before end */
	enum task_intr intr; /* interrupt events */
	uint64_t deferral_ns; /* delivered */
};

void region_set_event_hook(void (*fn)(const struct region_event *ev, void *arg),
			   void *arg);

/*
 * The hung-task watchdog: a thread that reports every task that has waited
 * uninterruptibly (effective mode) for longer than threshold_ns, once per
 * wait, with its region stack.  It also drives the coarse clock that dates
 * region frames.  Returns 0 or -errno.
 */
int region_watchdog_start(uint64_t threshold_ns);
void region_watchdog_stop(void);

/* Coarse milliseconds since the watchdog started; 0 if it never ran. */
uint64_t region_clock_ms(void);

/*
 * CLOCK_MONOTONIC in nanoseconds: the one clock intrfs measures time with
 * (deadlines, timeouts, ages, latencies), from the region library down to
 * the tests.
 */
uint64_t region_now_ns(void);

const char *region_task_mode_name(enum task_mode mode);
/* "killable" or "uninterruptible". */
const char *region_kind_name(enum region_kind kind);
const char *region_policy_name(enum region_policy policy);
/* Returns 0 and sets *policy, or -EINVAL. */
int region_policy_parse(const char *name, enum region_policy *policy);

/* The real-time signals the sigmask policy sends: NORMAL, FATAL. */
int region_sigmask_signal(enum task_intr kind);

#ifdef __cplusplus
}
#endif

#endif /* INTRFS_REGION_H */
