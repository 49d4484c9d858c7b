/*
 * Interrupt routing: from a signal sent to the caller of a FUSE request to
 * the task of the job that serves it.  This file owns the FUSE interrupt
 * callback, the list of jobs in flight and the watcher thread that looks at
 * them (struct intr_watch), what the caller's /proc files say (dying, in
 * chmod(2), its groups), and the EINTR answers the interrupt path gives
 * itself.
 *
 * FUSE_INTERRUPT reaches on_interrupt() on a session thread.  It carries
 * no signal number, the kernel sends one per request, on the first signal,
 * and none for a later SIGKILL, so the callback raises a normal interrupt
 * at once and, but on intr mounts where it changes nothing, wakes the
 * watcher thread, which reads the caller's /proc/<tid>/status: a pending
 * SIGKILL (the kernel marks every fatal signal so) makes it fatal.  While
 * a job holds a normal interrupt back (a killable or uninterruptible
 * region), the watcher keeps reading the caller's status, and raises a
 * fatal interrupt when a SIGKILL comes.  A flush gets no INTERRUPT at all
 * (the kernel forces it: close(2) and a dying process's exit path wait
 * uninterruptibly): the watcher answers it once its caller is dying and
 * lets it finish in the background, but on nointr mounts or inside an
 * uninterruptible region of the caller's own (callers.c).  With nothing to
 * watch it sleeps.  When the interrupt ends the task's current wait, the
 * interrupt path answers EINTR itself, without waiting for the worker to
 * wake (answer_eintr).
 *
 * A fatal signal ends a lock wait whatever region encloses it (a lock wait
 * has nothing half done: locks_killed(), whose CANCEL goes first).  A
 * caller's uninterruptible region holds any other wait's fatal signal
 * back for at most callers_hold_ns() (caller_hold_max=): past it the
 * watcher answers EINTR as a killable region would have, and the job goes
 * on in the background (a lock request gives back what the server grants
 * it after).  The watcher sleeps until the first such bound meanwhile.
 *
 * It never reads /proc with a lock held that the interrupt callback needs,
 * nor in the callback, which libfuse runs with the request's lock held: a
 * read of /proc may wait on the very process that is stuck, and the session
 * thread must go on.  The watcher picks the jobs to look at under
 * watch.lock, holding a reference on each, drops the lock to read, and
 * takes it again to act on what is still true.
 *
 * Lock order: libfuse's lock of a request (held around the callback)
 * before watch.lock, which is held while the watcher raises an interrupt
 * or answers, before libfuse's session lock (a reply), the region
 * library's task locks (region_task_interrupt()) and fs->locks.lock
 * (locks_killed()).  Whoever sets a job's answered flag first answers its
 * request; nobody else touches it then.
 */
#include "fusefs_i.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* How often the watcher reads the status of callers that wait deferred. */
#define WATCH_INTERVAL_NS 2000000l
/* A forced request's caller is looked at once it has waited this long. */
#define FORCED_GRACE_NS 5000000ull
/* Room for /proc/<tid>/status, which is about 1.5 KiB. */
#define STATUS_MAX 4096
/* PF_EXITING in the kernel's task flags: do_exit() has begun. */
#define TASK_PF_EXITING 0x4u

/* The caller, from /proc.  Called with no lock held. */

/*
 * Reads /proc/<tid>/<file> into buf (NUL-terminated); false when the
 * thread is gone or the read fails.  One open and one read: the files read
 * here (status, stat, syscall) are at most about 1.5 KiB.
 */
static bool read_proc(pid_t tid, const char *file, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)tid, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

/* True when thread tid is on its way out (its exit path closes files). */
static bool caller_exiting(pid_t tid)
{
	char buf[1024], *p;
	unsigned long flags;

	if (!read_proc(tid, "stat", buf, sizeof(buf)))
		return true; /* gone already */
	/* The name may hold spaces and parentheses: the last ')' ends it. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
		return false;
	return (flags & TASK_PF_EXITING) != 0;
}

/* Whether the SIGKILL bit is set in the mask after name in status. */
static bool kill_bit(const char *status, const char *name)
{
	unsigned long long mask;
	const char *p = strstr(status, name);

	if (!p || sscanf(p + strlen(name), "%llx", &mask) != 1)
		return false;
	return (mask & (1ull << (SIGKILL - 1))) != 0;
}

/*
 * True when thread tid is dying: the kernel marks every fatal signal by
 * setting SIGKILL in the pending set of each thread (SigPnd), a SIGKILL
 * sent to the process waits in the shared set (ShdPnd), and once the
 * thread runs its exit path, where it closes its files, neither need show
 * any more but the task is PF_EXITING.
 */
static bool caller_fatal(pid_t tid)
{
	char buf[STATUS_MAX];

	if (!read_proc(tid, "status", buf, sizeof(buf)))
		return true; /* the caller is gone: nothing is waiting */
	return kill_bit(buf, "\nSigPnd:") || kill_bit(buf, "\nShdPnd:") ||
	       caller_exiting(tid);
}

unsigned caller_groups(pid_t tid, uint32_t *groups, unsigned max)
{
	char buf[STATUS_MAX], *p, *end;
	unsigned n = 0;

	if (!read_proc(tid, "status", buf, sizeof(buf)))
		return 0;
	p = strstr(buf, "\nGroups:");
	if (!p)
		return 0;
	p += 8;
	while (n < max) {
		unsigned long g = strtoul(p, &end, 10);

		if (end == p)
			break;
		groups[n++] = (uint32_t)g;
		p = end;
	}
	return n;
}

bool caller_in_chmod(pid_t tid)
{
	char buf[64];
	long nr;

	if (!read_proc(tid, "syscall", buf, sizeof(buf)))
		return false;
	nr = strtol(buf, NULL, 10);
	return nr == SYS_chmod || nr == SYS_fchmod || nr == SYS_fchmodat;
}

/* Raising and answering. */

static void raised(struct job *j, unsigned kind)
{
	/*
	 * relaxed: region_task_interrupt() carries the interrupt itself; the watcher
	 * reads this only to choose the jobs worth a look at /proc, and a
	 * stale value costs one look more or one later.
	 */
	atomic_fetch_or_explicit(&j->intr, kind, memory_order_relaxed);
}

/*
 * The interrupt ends the request with EINTR whatever the worker does next:
 * answer now rather than after the worker wakes, unless the worker got to
 * the answer first.  Only when the task sits in a wait that this interrupt
 * ends, so that an operation that has finished is not reported cut short.
 */
static void answer_eintr(struct job *j, enum task_intr kind)
{
	/* A lock request answers itself, once it left nothing waiting. */
	if (j->self_answers || !region_task_wait_ends_on(j->task, kind) ||
	    !job_take_answer(j))
		return;
	fs_count(&j->fs->stats.eintr_replies);
	fs_reply_err(j->req, -EINTR);
	/*
	 * The kernel keeps a negative entry for the name the op was to
	 * create (a rename's target, a create's name) though the call may
	 * still be carried out: drop it now, not when the job ends.
	 */
	job_names_unsure(j);
}

/* Called with watch.lock held. */
static void raise_fatal(struct job *j)
{
	raised(j, TASK_INTR_FATAL);
	j->fatal_ns = region_now_ns();
	fs_count(&j->fs->stats.fatal_interrupts);
	/* Answer while the wait is still there to see, then end it. */
	answer_eintr(j, TASK_INTR_FATAL);
	region_task_interrupt(j->task, TASK_INTR_FATAL);
	/* A lock wait ends whatever region encloses it. */
	if (j->self_answers)
		locks_killed(j, false);
}

static void watcher_wake(struct intr_watch *w)
{
	pthread_mutex_lock(&w->lock);
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/*
 * An INTERRUPT for j's request: raise it, answer it, have the watcher look
 * for a SIGKILL.
 */
static void handle_interrupt(struct job *j)
{
	fs_count(&j->fs->stats.interrupts);
	raised(j, TASK_INTR_NORMAL);
	/*
	 * On an intr mount a normal interrupt ends the request's own waits:
	 * answer first, then stop the task's work.  A nested region may still
	 * hold it back (the record send is killable): then only a fatal
	 * signal ends the wait, and the watcher must look for one.
	 */
	if (j->intr_mode == NC_INTR) {
		answer_eintr(j, TASK_INTR_NORMAL);
		region_task_interrupt(j->task, TASK_INTR_NORMAL);
		/* relaxed: a hint; job_take_answer() decides. */
		if (!atomic_load_explicit(&j->answered, memory_order_relaxed))
			watcher_wake(&j->fs->watch);
		return;
	}
	region_task_interrupt(j->task, TASK_INTR_NORMAL);
	/* Held back, perhaps: the watcher reads whether it is fatal. */
	watcher_wake(&j->fs->watch);
}

/*
 * libfuse calls this with the request's lock held, so the worker cannot
 * unregister it meanwhile; but once it has answered, the worker may end
 * the job: the job is held until the callback returns.
 */
static void on_interrupt(fuse_req_t req, void *data)
{
	struct job *j = data;

	(void)req;
	job_hold(j);
	handle_interrupt(j);
	job_put(j);
}

bool caller_holds_fatal(const struct job *j)
{
	if (!j->ncaller || region_task_policy(j->task) == REGION_POLICY_PERCALL)
		return false;
	for (unsigned i = 0; i < j->ncaller; i++)
		if (j->caller[i]->kind == REGION_UNINTERRUPTIBLE)
			return true;
	return false;
}

/*
 * A forced request (flush: close(2) and the exit path) gets no INTERRUPT,
 * and its caller sleeps uninterruptibly until it is answered.  When the
 * caller is dying, it is answered now, but on nointr mounts; the job goes
 * on in the background, so what the process wrote is still delivered.
 * Called with watch.lock held.
 */
static void answer_dying(struct job *j)
{
	raised(j, TASK_INTR_FATAL);
	j->fatal_ns = region_now_ns();
	if (j->intr_mode == NC_NOINTR || caller_holds_fatal(j) ||
	    !job_take_answer(j))
		return;
	fs_count(&j->fs->stats.fatal_interrupts);
	fs_count(&j->fs->stats.eintr_replies);
	fs_reply_err(j->req, -EINTR);
	job_names_unsure(j);
}

/*
 * A fatal signal j's caller's uninterruptible region held back as long as
 * it may: answered EINTR now, as a killable region would have let it end
 * the call; the job goes on in the background.  Called with watch.lock
 * held.
 */
static void hold_expired(struct job *j)
{
	const struct region_site *site = NULL;
	uint64_t held = region_now_ns() - j->fatal_ns;

	/* A lock the server grants it from now on goes back. */
	if (j->self_answers)
		locks_killed(j, true);
	if (!job_take_answer(j))
		return;
	for (unsigned i = 0; i < j->ncaller; i++)
		if (j->caller[i]->kind == REGION_UNINTERRUPTIBLE)
			site = j->caller[i];
	caller_log(&j->fs->callers, j->cred.uid,
		   "thread %d: a fatal signal held back %.1f s by its "
		   "uninterruptible caller region \"%s\" ends its request "
		   "now (caller_hold_max=%.1f s)",
		   (int)j->tid, (double)held / 1e9, site ? site->reason : "?",
		   (double)callers_hold_ns(j->fs) / 1e9);
	fs_count(&j->fs->stats.eintr_replies);
	fs_reply_err(j->req, -EINTR);
	job_names_unsure(j);
}

/* The watcher. */

/*
 * Whether j holds a fatal signal back past the bound of its caller's
 * uninterruptible region: then it is to be answered now.  Before that, the
 * bound's time goes to *next (the earliest such).  Not on nointr mounts,
 * whose own region holds it as long as the server takes.  Called with
 * watch.lock held.
 */
static bool hold_over(const struct job *j, uint64_t now, uint64_t *next)
{
	uint64_t end;

	/* relaxed: a hint; job_take_answer() decides. */
	if (!(atomic_load_explicit(&j->intr, memory_order_relaxed) &
	      TASK_INTR_FATAL) ||
	    atomic_load_explicit(&j->answered, memory_order_relaxed) ||
	    j->intr_mode == NC_NOINTR || !caller_holds_fatal(j))
		return false;
	end = j->fatal_ns + callers_hold_ns(j->fs);
	if (now >= end)
		return true;
	if (!*next || end < *next)
		*next = end;
	return false;
}

/*
 * Whether the watcher should read j's caller's status now; *held counts
 * the jobs it is to come back to.  Called with watch.lock held.
 */
static bool worth_a_look(const struct job *j, uint64_t now, unsigned *held)
{
	/* relaxed: a hint for the look, see raised(). */
	unsigned intr = atomic_load_explicit(&j->intr, memory_order_relaxed);

	if (j->forced) {
		/* A close that waits: is its caller dying? */
		/* relaxed: a hint; job_take_answer() decides. */
		if (intr & TASK_INTR_FATAL ||
		    atomic_load_explicit(&j->answered, memory_order_relaxed))
			return false;
		if (now - j->start_ns < FORCED_GRACE_NS) {
			(*held)++;
			return false;
		}
		return true;
	}
	/* Held back and not fatal yet: did a SIGKILL come? */
	return intr == TASK_INTR_NORMAL;
}

static void *watcher_main(void *arg)
{
	struct intrfs *fs = arg;
	struct intr_watch *w = &fs->watch;
	struct timespec ts = { 0, WATCH_INTERVAL_NS };

	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		uint64_t now = region_now_ns(), bound = 0;
		struct job *look = NULL, *next;
		unsigned held = 0;

		for (struct job *j = w->jobs; j; j = j->inext) {
			if (hold_over(j, now, &bound))
				hold_expired(j);
			if (!worth_a_look(j, now, &held))
				continue;
			/* Linked: its worker's reference keeps it. */
			job_hold(j);
			j->wnext = look;
			look = j;
		}
		if (!look && !held && bound) {
			/* Only bounds to wait for: sleep until the first. */
			struct timespec until = { (time_t)(bound / 1000000000),
						  (long)(bound % 1000000000) };

			pthread_cond_timedwait(&w->cond, &w->lock, &until);
			continue;
		}
		if (!look && !held) {
			/* Nothing held back: sleep until on_interrupt says. */
			pthread_cond_wait(&w->cond, &w->lock);
			continue;
		}
		pthread_mutex_unlock(&w->lock);

		for (struct job *j = look; j; j = j->wnext)
			j->wfatal = caller_fatal(j->tid);

		pthread_mutex_lock(&w->lock);
		for (struct job *j = look; j; j = j->wnext) {
			/* Finished meanwhile, or seen to by someone else. */
			if (!j->linked || !worth_a_look(j, now, &held))
				continue;
			if (!j->wfatal)
				held++;
			else if (j->forced)
				answer_dying(j);
			else
				raise_fatal(j);
		}
		pthread_mutex_unlock(&w->lock);
		for (struct job *j = look; j; j = next) {
			next = j->wnext;
			job_put(j);
		}
		if (held)
			nanosleep(&ts, NULL);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* The list. */

void intr_watch(struct job *j)
{
	struct intr_watch *w = &j->fs->watch;

	pthread_mutex_lock(&w->lock);
	j->inext = w->jobs;
	j->iprev = NULL;
	if (w->jobs)
		w->jobs->iprev = j;
	w->jobs = j;
	j->linked = true;
	pthread_mutex_unlock(&w->lock);
	/* May call on_interrupt() at once if the INTERRUPT came already. */
	fuse_req_interrupt_func(j->req, on_interrupt, j);
	/* No INTERRUPT comes for a forced one: the watcher looks at it. */
	if (j->forced)
		watcher_wake(w);
}

void intr_unwatch(struct job *j, bool req_ours)
{
	struct intr_watch *w = &j->fs->watch;

	/*
	 * Unregistering takes the request's lock, so it waits for a callback
	 * that is running; after it none can start.  Not when the interrupt
	 * path answered: req is no longer ours then.
	 */
	if (req_ours)
		fuse_req_interrupt_func(j->req, NULL, NULL);
	pthread_mutex_lock(&w->lock);
	if (j->iprev)
		j->iprev->inext = j->inext;
	else
		w->jobs = j->inext;
	if (j->inext)
		j->inext->iprev = j->iprev;
	j->linked = false;
	pthread_mutex_unlock(&w->lock);
}

int intr_start(struct intrfs *fs)
{
	struct intr_watch *w = &fs->watch;
	pthread_condattr_t ca;

	pthread_mutex_init(&w->lock, NULL);
	/* Bounds are region_now_ns() times: CLOCK_MONOTONIC. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &ca);
	pthread_condattr_destroy(&ca);
	w->jobs = NULL;
	w->stop = false;
	return -pthread_create(&w->thread, NULL, watcher_main, fs);
}

void intr_stop(struct intrfs *fs)
{
	struct intr_watch *w = &fs->watch;

	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
}
