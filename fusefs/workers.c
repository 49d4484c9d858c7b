/*
 * Jobs, the worker pool and interrupt routing.
 *
 * A libfuse handler makes a job (job_new), copies the request's arguments
 * into it and submits it (job_submit): that registers the interrupt callback
 * and queues the job; an idle worker takes it, or a new worker is started,
 * so that a request never waits for another one to finish.  The session
 * threads only ever copy and queue: they never wait for the network.
 *
 * FUSE_INTERRUPT reaches on_interrupt() on a session thread.  The kernel
 * sends one per request, on the first signal, and none for a later SIGKILL,
 * so the callback raises a normal interrupt at once and then, but on intr
 * mounts where it changes nothing, reads the caller's /proc/<tid>/status:
 * a pending SIGKILL makes it fatal.  While a job holds a normal interrupt
 * back (a killable region), the watcher thread keeps reading the caller's
 * status, and raises a fatal interrupt when a SIGKILL comes.  A flush gets
 * no INTERRUPT at all (the kernel forces it: close(2) and a dying process's
 * exit path wait uninterruptibly): the watcher answers it once its caller
 * is dying and lets it finish in the background.  With nothing to watch
 * it sleeps.  When the interrupt ends the task's current wait,
 * the interrupt path answers EINTR itself, without waiting for the worker
 * to wake (answer_eintr).
 *
 * Lock order: pool_lock is a leaf.  The interrupt callback runs with
 * libfuse's request lock held and takes jobs_lock; the watcher answers a
 * request (libfuse's session lock) with jobs_lock held.
 */
#include "fusefs_i.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Workers idle longer than this exit, down to MIN_IDLE of them. */
#define WORKER_IDLE_S 30
#define MIN_IDLE 4
/* How often the watcher reads the status of callers that wait deferred. */
#define WATCH_INTERVAL_NS 2000000l
/* A forced request's caller is looked at once it has waited this long. */
#define FORCED_GRACE_NS 5000000ull
/* Room for /proc/<tid>/status, which is about 1.5 KiB. */
#define STATUS_MAX 4096

/* Interrupts. */

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

/* PF_EXITING in the kernel's task flags: do_exit() has begun. */
#define TASK_PF_EXITING 0x4u

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

/*
 * The caller's supplementary groups, from the "Groups:" line of its status
 * (what fuse_req_getgroups() reads too, in one pass here).  Returns how
 * many, at most max; 0 when they cannot be read.
 */
static unsigned caller_groups(pid_t tid, uint32_t *groups, unsigned max)
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

/*
 * The interrupt ends the request with EINTR whatever the worker does next:
 * answer now rather than after the worker wakes, unless the worker got to
 * the answer first.  Only when the task sits in a wait that this interrupt
 * ends, so that an operation that has finished is not reported cut short.
 */
static void answer_eintr(struct job *j, enum task_intr kind)
{
	if (!task_wait_ends_on(j->task, kind) ||
	    atomic_exchange(&j->answered, true))
		return;
	atomic_fetch_add_explicit(&j->fs->eintr_replies, 1,
				  memory_order_relaxed);
	fuse_reply_err(j->req, EINTR);
}

static void raise_fatal(struct job *j)
{
	atomic_fetch_or(&j->intr, TASK_INTR_FATAL);
	atomic_fetch_add_explicit(&j->fs->fatal_interrupts, 1,
				  memory_order_relaxed);
	/* Answer while the wait is still there to see, then end it. */
	answer_eintr(j, TASK_INTR_FATAL);
	task_interrupt(j->task, TASK_INTR_FATAL);
}

/* An INTERRUPT for j's request: raise it, answer it, watch for a SIGKILL. */
static void handle_interrupt(struct job *j)
{
	atomic_fetch_add_explicit(&j->fs->interrupts, 1, memory_order_relaxed);
	atomic_fetch_or(&j->intr, TASK_INTR_NORMAL);
	/*
	 * On an intr mount nothing holds a normal interrupt back: answer
	 * first, then stop the task's work; whether the signal is fatal
	 * changes nothing, so the interrupt path spares the read of /proc.
	 */
	if (j->fs->nco.intr_mode == NC_INTR) {
		answer_eintr(j, TASK_INTR_NORMAL);
		task_interrupt(j->task, TASK_INTR_NORMAL);
		return;
	}
	task_interrupt(j->task, TASK_INTR_NORMAL);
	if (caller_fatal(j->tid)) {
		raise_fatal(j);
	} else {
		/* Held back, perhaps: the watcher looks for a SIGKILL. */
		pthread_mutex_lock(&j->fs->jobs_lock);
		pthread_cond_signal(&j->fs->watch_cond);
		pthread_mutex_unlock(&j->fs->jobs_lock);
	}
}

static void job_put(struct job *j);

/*
 * libfuse calls this with the request's lock held, so the worker cannot
 * unregister it meanwhile; but once it has answered, the worker may end
 * the job: the job is held until the callback returns.
 */
static void on_interrupt(fuse_req_t req, void *data)
{
	struct job *j = data;

	(void)req;
	atomic_fetch_add_explicit(&j->refs, 1, memory_order_relaxed);
	handle_interrupt(j);
	job_put(j);
}

/*
 * A forced request (flush: close(2) and the exit path) gets no INTERRUPT,
 * and its caller sleeps uninterruptibly until it is answered.  When the
 * caller is dying, it is answered now, but on nointr mounts; the job goes
 * on in the background, so what the process wrote is still delivered.
 * Called with jobs_lock held.
 */
static void answer_dying(struct job *j)
{
	atomic_fetch_or(&j->intr, TASK_INTR_FATAL);
	if (j->fs->nco.intr_mode == NC_NOINTR ||
	    atomic_exchange(&j->answered, true))
		return;
	atomic_fetch_add_explicit(&j->fs->fatal_interrupts, 1,
				  memory_order_relaxed);
	fuse_reply_err(j->req, EINTR);
}

static void *watcher_main(void *arg)
{
	struct intrfs *fs = arg;
	struct timespec ts = { 0, WATCH_INTERVAL_NS };

	pthread_mutex_lock(&fs->jobs_lock);
	while (!atomic_load(&fs->watcher_stop)) {
		uint64_t now = region_now_ns();
		unsigned held = 0;

		for (struct job *j = fs->jobs; j; j = j->inext) {
			unsigned intr = atomic_load(&j->intr);

			if (j->forced) {
				/* A close that waits: is its caller dying? */
				if (intr & TASK_INTR_FATAL ||
				    atomic_load(&j->answered))
					continue;
				if (now - j->start_ns >= FORCED_GRACE_NS &&
				    caller_fatal(j->tid))
					answer_dying(j);
				else
					held++;
				continue;
			}
			/* Held back and not fatal yet: did a SIGKILL come? */
			if (intr != TASK_INTR_NORMAL)
				continue;
			if (caller_fatal(j->tid))
				raise_fatal(j);
			else
				held++;
		}
		if (!held) {
			/* Nothing held back: sleep until on_interrupt says. */
			pthread_cond_wait(&fs->watch_cond, &fs->jobs_lock);
			continue;
		}
		pthread_mutex_unlock(&fs->jobs_lock);
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&fs->jobs_lock);
	}
	pthread_mutex_unlock(&fs->jobs_lock);
	return NULL;
}

/* Jobs. */

struct job *job_new(struct intrfs *fs, fuse_req_t req, const char *op,
		    job_run_fn run, job_reply_fn reply)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct task_attr attr = { op, fs->nco.policy, NULL };
	struct job *j;

	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->fs = fs;
	j->req = req;
	j->op = op;
	atomic_store_explicit(&j->refs, 1, memory_order_relaxed);
	j->run = run;
	j->reply = reply;
	j->tid = ctx->pid;
	j->cred.uid = ctx->uid;
	j->cred.gid = ctx->gid;
	/* Each caller acts as itself on the server, groups included. */
	j->cred.ngroups =
		caller_groups(ctx->pid, j->cred.groups, NC_MAX_GROUPS);
	attr.data = j;
	j->task = task_create(&attr);
	if (!j->task) {
		free(j);
		return NULL;
	}
	j->start_ns = region_now_ns();
	return j;
}

static void job_free(struct job *j)
{
	task_put(j->task);
	free(j->name);
	free(j->name2);
	buf_free(j->buf);
	free(j);
}

static void job_put(struct job *j)
{
	/* acq_rel: the last one out sees every write the others made. */
	if (atomic_fetch_sub_explicit(&j->refs, 1, memory_order_acq_rel) == 1)
		job_free(j);
}

void job_fail(struct job *j, int err)
{
	fuse_reply_err(j->req, err);
	job_free(j);
}

static void jobs_link(struct intrfs *fs, struct job *j)
{
	pthread_mutex_lock(&fs->jobs_lock);
	j->inext = fs->jobs;
	if (fs->jobs)
		fs->jobs->iprev = j;
	fs->jobs = j;
	pthread_mutex_unlock(&fs->jobs_lock);
}

static void jobs_unlink(struct intrfs *fs, struct job *j)
{
	pthread_mutex_lock(&fs->jobs_lock);
	if (j->iprev)
		j->iprev->inext = j->inext;
	else
		fs->jobs = j->inext;
	if (j->inext)
		j->inext->iprev = j->iprev;
	pthread_mutex_unlock(&fs->jobs_lock);
}

void job_reply_early(struct job *j)
{
	if (atomic_exchange(&j->answered, true)) {
		/*
		 * The interrupt path answered EINTR: the caller was told the
		 * call failed (not replied), and the work goes on regardless.
		 */
		jobs_unlink(j->fs, j);
		j->detached = true;
		return;
	}
	fuse_req_interrupt_func(j->req, NULL, NULL);
	jobs_unlink(j->fs, j);
	/* What was raised before the answer must not cut what follows. */
	task_flush_interrupts(j->task);
	j->reply(j);
	j->replied = j->detached = true;
}

static void job_run(struct job *j)
{
	struct intrfs *fs = j->fs;
	int rc;

	task_enter(j->task);
	FS_REGION_BEGIN(fs, "fuse request");
	rc = j->run(j);
	FS_REGION_END(fs);
	task_leave(j->task);
	if (j->detached)
		goto out;
	if (atomic_exchange(&j->answered, true)) {
		/* The interrupt path answered EINTR: req is no longer ours. */
		jobs_unlink(fs, j);
		goto out;
	}

	/*
	 * Unregistering takes the request's lock, so it waits for a callback
	 * that is running; after it none can start, and the job may go.
	 */
	fuse_req_interrupt_func(j->req, NULL, NULL);
	jobs_unlink(fs, j);
	if (rc == 0) {
		j->reply(j);
	} else {
		if (rc == -EINTR)
			atomic_fetch_add_explicit(&fs->eintr_replies, 1,
						  memory_order_relaxed);
		/* A reply that was not RPC is an I/O error to a process. */
		fuse_reply_err(j->req, rc == -EPROTO ? EIO : -rc);
	}
out:
	job_put(j);
}

/* The pool. */

static void *worker_main(void *arg)
{
	struct intrfs *fs = arg;

	pthread_mutex_lock(&fs->pool_lock);
	for (;;) {
		struct job *j;

		while (!fs->queue_head && !fs->stopping) {
			struct timespec ts;
			int err;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += WORKER_IDLE_S;
			fs->idle++;
			err = pthread_cond_timedwait(&fs->pool_cond,
						     &fs->pool_lock, &ts);
			fs->idle--;
			if (err == ETIMEDOUT && !fs->queue_head &&
			    fs->idle >= MIN_IDLE)
				goto out;
		}
		if (!fs->queue_head)
			break; /* stopping */
		j = fs->queue_head;
		fs->queued--;
		fs->running++;
		fs->queue_head = j->qnext;
		if (!fs->queue_head)
			fs->queue_tail = NULL;
		pthread_mutex_unlock(&fs->pool_lock);
		job_run(j);
		pthread_mutex_lock(&fs->pool_lock);
		fs->running--;
		if (!fs->running && !fs->queue_head)
			pthread_cond_broadcast(&fs->pool_done);
	}
out:
	fs->workers--;
	pthread_cond_broadcast(&fs->pool_done);
	pthread_mutex_unlock(&fs->pool_lock);
	return NULL;
}

/* Called with pool_lock held. */
static void spawn_worker(struct intrfs *fs)
{
	pthread_attr_t attr;
	pthread_t th;
	sigset_t all, old;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/*
	 * Workers take no process signals (the sigmask policy unblocks its
	 * own per task).
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (pthread_create(&th, &attr, worker_main, fs) == 0)
		fs->workers++;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

void job_submit(struct job *j)
{
	struct intrfs *fs = j->fs;

	jobs_link(fs, j);
	/* May call on_interrupt() at once if the INTERRUPT came already. */
	fuse_req_interrupt_func(j->req, on_interrupt, j);
	if (j->forced) {
		/* No INTERRUPT will come: the watcher looks at its caller. */
		pthread_mutex_lock(&fs->jobs_lock);
		pthread_cond_signal(&fs->watch_cond);
		pthread_mutex_unlock(&fs->jobs_lock);
	}

	pthread_mutex_lock(&fs->pool_lock);
	j->qnext = NULL;
	if (fs->queue_tail)
		fs->queue_tail->qnext = j;
	else
		fs->queue_head = j;
	fs->queue_tail = j;
	fs->queued++;
	/*
	 * A worker that was signalled still counts as idle until it runs, so
	 * compare with the jobs queued, not with zero: two requests that come
	 * together must not share one idle worker.
	 */
	if (fs->queued > fs->idle && fs->workers < fs->o.max_workers)
		spawn_worker(fs);
	pthread_cond_signal(&fs->pool_cond);
	pthread_mutex_unlock(&fs->pool_lock);
}

int workers_start(struct intrfs *fs)
{
	pthread_mutex_init(&fs->pool_lock, NULL);
	pthread_cond_init(&fs->pool_cond, NULL);
	pthread_cond_init(&fs->pool_done, NULL);
	pthread_mutex_init(&fs->jobs_lock, NULL);
	pthread_cond_init(&fs->watch_cond, NULL);
	atomic_store(&fs->watcher_stop, false);
	pthread_mutex_lock(&fs->pool_lock);
	for (unsigned i = 0; i < MIN_IDLE; i++)
		spawn_worker(fs);
	pthread_mutex_unlock(&fs->pool_lock);
	return -pthread_create(&fs->watcher, NULL, watcher_main, fs);
}

bool workers_drain(struct intrfs *fs, unsigned timeout_s)
{
	struct timespec ts;
	bool idle;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_s;
	pthread_mutex_lock(&fs->pool_lock);
	while ((fs->running || fs->queue_head) &&
	       pthread_cond_timedwait(&fs->pool_done, &fs->pool_lock, &ts) !=
		       ETIMEDOUT)
		;
	idle = !fs->running && !fs->queue_head;
	pthread_mutex_unlock(&fs->pool_lock);
	return idle;
}

void workers_stop(struct intrfs *fs)
{
	pthread_mutex_lock(&fs->jobs_lock);
	atomic_store(&fs->watcher_stop, true);
	pthread_cond_signal(&fs->watch_cond);
	pthread_mutex_unlock(&fs->jobs_lock);
	pthread_join(fs->watcher, NULL);
	pthread_mutex_lock(&fs->pool_lock);
	fs->stopping = true;
	pthread_cond_broadcast(&fs->pool_cond);
	while (fs->workers)
		pthread_cond_wait(&fs->pool_done, &fs->pool_lock);
	pthread_mutex_unlock(&fs->pool_lock);
}
