/*
 * Jobs and the worker pool.  This file owns a job's life (job_new() to the
 * last job_put()) and the pool of worker threads (struct worker_pool).
 *
 * A libfuse handler makes a job (job_new), copies the request's arguments
 * into it and submits it (job_submit): that has the interrupt path watch it
 * (interrupt.c), then the session thread that read the request runs it
 * itself, or, for a write (which write-behind answers early and which goes
 * on after), queues it for the pool: an idle worker takes it, or a new
 * worker is started, so that a request never waits for another one to
 * finish.  Whoever runs the job enters its task, runs it inside the mount
 * mode's region, itself inside the regions its caller declared
 * (callers.c), leaves them, then replies, unless the interrupt path
 * answered first.
 *
 * A session thread running a job is one libfuse no longer counts as
 * reading /dev/fuse; libfuse starts another whenever none is left, up to a
 * bound (intrfs.c) above the max_workers jobs that may run so, so an
 * INTERRUPT for a blocked request is always read.  Past that many jobs in
 * session threads, jobs go to the pool.
 *
 * The end of the session bounds the jobs' time (workers_end_watch()): a
 * job on a session thread holds libfuse's loop, which joins its threads
 * before it returns, so a hard call waiting for a server that does not
 * answer would keep the daemon from ever exiting after its unmount.  A
 * thread of its own sees the connection go (POLLERR on /dev/fuse, as
 * soon as the kernel aborts it at an unmount or through fusectl), gives
 * the jobs UNMOUNT_DRAIN_S (intrfs.c), then ends the calls still waiting.
 *
 * Lock order: pool.lock is a leaf, held for queue work only.  A job's
 * references are atomic: the worker's, and one for each interrupt callback
 * or watcher look in progress.
 */
#include "fusefs_i.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Workers idle longer than this exit, down to MIN_IDLE of them. */
#define WORKER_IDLE_S 30
#define MIN_IDLE 4

/* Jobs. */

struct job *job_new(struct intrfs *fs, fuse_req_t req, const char *op,
		    job_run_fn run, job_reply_fn reply)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	/* relaxed: see req_policy. */
	struct task_attr attr = { op,
				  (enum region_policy)atomic_load_explicit(
					  &fs->req_policy,
					  memory_order_relaxed),
				  NULL };
	struct job *j;

	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->fs = fs;
	j->req = req;
	/* relaxed: nobody else sees j before it is submitted. */
	atomic_store_explicit(&j->refs, 1, memory_order_relaxed);
	j->run = run;
	j->reply = reply;
	j->tid = ctx->pid;
	j->ncaller = callers_of(fs, ctx->pid, j->caller, CALLER_DEPTH_MAX);
	/* relaxed: see req_policy. */
	j->intr_mode = (enum nc_intr_mode)atomic_load_explicit(
		&fs->req_mode, memory_order_relaxed);
	j->cred.uid = ctx->uid;
	j->cred.gid = ctx->gid;
	/* Each caller acts as itself on the server, groups included. */
	j->cred.ngroups =
		caller_groups(ctx->pid, j->cred.groups, NC_MAX_GROUPS);
	attr.data = j;
	j->task = region_task_create(&attr);
	if (!j->task) {
		free(j);
		return NULL;
	}
	j->start_ns = region_now_ns();
	return j;
}

static void job_free(struct job *j)
{
	for (size_t i = 0; i < ARRAY_SIZE(j->pinned); i++)
		if (j->pinned[i])
			node_unpin(j->fs, j->pinned[i]);
	region_task_put(j->task);
	free(j->name);
	free(j->name2);
	buf_free(j->buf);
	nc_rbuf_release(&j->rbuf);
	free(j);
}

void job_hold(struct job *j)
{
	/*
	 * relaxed: the caller holds a reference already (the worker's, kept
	 * while the job is watched), so the count cannot reach zero meanwhile.
	 */
	atomic_fetch_add_explicit(&j->refs, 1, memory_order_relaxed);
}

void job_put(struct job *j)
{
	/* acq_rel: the last one out sees every write the others made. */
	if (atomic_fetch_sub_explicit(&j->refs, 1, memory_order_acq_rel) == 1)
		job_free(j);
}

void job_fail(struct job *j, int rc)
{
	fs_reply_err(j->req, rc);
	job_free(j);
}

bool job_take_answer(struct job *j)
{
	/*
	 * acq_rel: one side wins; the loser's next use of the job comes
	 * after the winner's decision to answer.
	 */
	return !atomic_exchange_explicit(&j->answered, true,
					 memory_order_acq_rel);
}

void job_reply_early(struct job *j)
{
	if (!job_take_answer(j)) {
		/*
		 * The interrupt path answered EINTR: the caller was told the
		 * call failed (not replied), and the work goes on regardless.
		 */
		intr_unwatch(j, false);
		j->detached = true;
		return;
	}
	intr_unwatch(j, true);
	/* What was raised before the answer must not cut what follows. */
	region_task_flush_interrupts(j->task);
	j->reply(j);
	j->replied = j->detached = true;
}

/*
 * An op that creates or removes names failed, or its caller was answered
 * EINTR: the server may have done it all the same (the call went out, or
 * its retransmission met a server that had), so the kernel must not keep
 * a negative or positive entry for those names: they are looked up again.
 */
void job_names_unsure(struct job *j)
{
	if (j->name_dir && j->name)
		notify_inval_entry(j->fs, j->name_dir, j->name);
	if (j->name2_dir && j->name2)
		notify_inval_entry(j->fs, j->name2_dir, j->name2);
}

/*
 * How long the names of an op that failed stay in doubt: its call, given
 * up on, may still be on its way to the server, as late as a
 * retransmission would have gone (timeo=), and at least DOUBT_MIN_NS.
 */
#define DOUBT_MIN_NS 3000000000u

static uint64_t doubt_ns(struct intrfs *fs)
{
	uint64_t ns = (uint64_t)fs->nco.timeo * 100000000u;

	return ns < DOUBT_MIN_NS ? DOUBT_MIN_NS : ns;
}

/*
 * Whether an op that ended with rc leaves its names in doubt: the call may
 * have been carried out, or may still be (interrupted, given up on, its
 * connection gone), rather than answered with an NFS status, which says
 * what the server did.
 */
static bool doubtful(int rc)
{
	switch (rc) {
	case -EINTR:
	case -EIO:
	case -ETIMEDOUT:
	case -ECANCELED:
	case -ESHUTDOWN:
	case -EPROTO:
	case -ECONNRESET:
	case -ENOTCONN:
		return true;
	}
	return false;
}

/* j's op on its names ended; doubt: as doubtful() says, or answered EINTR. */
static void names_end(struct job *j, bool doubt)
{
	uint64_t grace = doubt ? doubt_ns(j->fs) : 0;

	if (j->name_unsure)
		unsure_end(j->fs, j->name_dir, j->name, grace);
	if (j->name2_unsure)
		unsure_end(j->fs, j->name2_dir, j->name2, grace);
}

static void job_run(struct job *j)
{
	struct intrfs *fs = j->fs;
	bool doubt = true;
	int rc;

	region_task_enter(j->task);
	/* The caller's regions enclose the mount's (callers.c). */
	for (unsigned i = 0; i < j->ncaller; i++)
		region_begin_at(j->caller[i]);
	FS_REGION_BEGIN(j, "fuse request");
	rc = j->run(j);
	FS_REGION_END(j);
	for (unsigned i = j->ncaller; i-- > 0;)
		region_end_at(j->caller[i]);
	region_task_leave(j->task);
	if (j->detached) {
		/* Answered early: with success, or EINTR by the interrupt path. */
		if (rc || !j->replied)
			job_names_unsure(j);
		doubt = !j->replied || doubtful(rc);
		goto out;
	}
	if (!job_take_answer(j)) {
		/* The interrupt path answered EINTR: req is no longer ours. */
		job_names_unsure(j);
		intr_unwatch(j, false);
		goto out;
	}
	/* After it no callback runs, and the job may go. */
	intr_unwatch(j, true);
	doubt = doubtful(rc);
	if (rc == 0) {
		j->reply(j);
	} else {
		if (rc == -EINTR)
			fs_count(&fs->stats.eintr_replies);
		job_names_unsure(j);
		/* A reply that was not RPC is an I/O error to a process. */
		fs_reply_err(j->req, rc == -EPROTO ? -EIO : rc);
	}
out:
	names_end(j, doubt);
	job_put(j);
}

/* The pool. */

static void *worker_main(void *arg)
{
	struct intrfs *fs = arg;
	struct worker_pool *p = &fs->pool;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct job *j;

		while (!p->head && !p->stopping) {
			struct timespec ts;
			int err;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += WORKER_IDLE_S;
			p->idle++;
			err = pthread_cond_timedwait(&p->cond, &p->lock, &ts);
			p->idle--;
			if (err == ETIMEDOUT && !p->head && p->idle >= MIN_IDLE)
				goto out;
		}
		if (!p->head)
			break; /* stopping */
		j = p->head;
		p->queued--;
		p->running++;
		p->head = j->qnext;
		if (!p->head)
			p->tail = NULL;
		pthread_mutex_unlock(&p->lock);
		job_run(j);
		pthread_mutex_lock(&p->lock);
		p->running--;
		if (!p->running && !p->head)
			pthread_cond_broadcast(&p->done);
	}
out:
	p->workers--;
	pthread_cond_broadcast(&p->done);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Called with pool.lock held. */
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
		fs->pool.workers++;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

void job_submit(struct job *j)
{
	struct intrfs *fs = j->fs;
	struct worker_pool *p = &fs->pool;

	if (j->ino) {
		j->pinned[0] = node_of(fs, j->ino);
		node_pin(fs, j->pinned[0]);
	}
	if (j->ino2) {
		j->pinned[1] = node_of(fs, j->ino2);
		node_pin(fs, j->pinned[1]);
	}
	j->unsure_gen = unsure_gen(fs);
	if (j->name_dir && j->name)
		j->name_unsure = unsure_begin(fs, j->name_dir, j->name);
	if (j->name2_dir && j->name2)
		j->name2_unsure = unsure_begin(fs, j->name2_dir, j->name2);
	intr_watch(j);
	pthread_mutex_lock(&p->lock);
	if (!j->pooled && !p->stopping &&
	    p->inline_running < fs->o.max_workers) {
		/*
		 * The session thread runs the job itself: one hand-over
		 * fewer, which is a fifth of a metadata request's time.
		 * libfuse starts another session thread when none is left
		 * reading, up to max_workers more than may run jobs
		 * (intrfs.c), so an INTERRUPT is always read.
		 */
		p->inline_running++;
		p->running++;
		pthread_mutex_unlock(&p->lock);
		job_run(j);
		pthread_mutex_lock(&p->lock);
		p->inline_running--;
		p->running--;
		if (!p->running && !p->head)
			pthread_cond_broadcast(&p->done);
		pthread_mutex_unlock(&p->lock);
		return;
	}
	j->qnext = NULL;
	if (p->tail)
		p->tail->qnext = j;
	else
		p->head = j;
	p->tail = j;
	p->queued++;
	/*
	 * A worker that was signalled still counts as idle until it runs, so
	 * compare with the jobs queued, not with zero: two requests that come
	 * together must not share one idle worker.
	 */
	if (p->queued > p->idle && p->workers < fs->o.max_workers)
		spawn_worker(fs);
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

int workers_start(struct intrfs *fs)
{
	struct worker_pool *p = &fs->pool;

	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	pthread_cond_init(&p->done, NULL);
	pthread_mutex_lock(&p->lock);
	for (unsigned i = 0; i < MIN_IDLE; i++)
		spawn_worker(fs);
	pthread_mutex_unlock(&p->lock);
	return p->workers ? 0 : -EAGAIN;
}

bool workers_drain(struct intrfs *fs, unsigned timeout_s)
{
	struct worker_pool *p = &fs->pool;
	struct timespec ts;
	bool idle;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_s;
	pthread_mutex_lock(&p->lock);
	while ((p->running || p->head) &&
	       pthread_cond_timedwait(&p->done, &p->lock, &ts) != ETIMEDOUT)
		;
	idle = !p->running && !p->head;
	pthread_mutex_unlock(&p->lock);
	return idle;
}

/*
 * How often the end's watch asks libfuse whether the session was told to
 * exit (a signal), which no POLLERR says: the connection is still there.
 */
#define END_LOOK_MS 500

static void *ender_main(void *arg)
{
	struct intrfs *fs = arg;
	struct worker_pool *p = &fs->pool;
	/*
	 * Events 0: /dev/fuse reports only POLLERR, once the kernel has
	 * aborted the connection (it is always writable, and readable
	 * whenever a request waits, which the session threads take).
	 */
	struct pollfd pfd[2] = { { fuse_session_fd(fs->se), 0, 0 },
				 { p->end_pipe[0], POLLIN, 0 } };

	while (!fuse_session_exited(fs->se)) {
		int n = poll(pfd, 2, END_LOOK_MS);

		if (n < 0 && errno != EINTR)
			break;
		if (n > 0)
			break;
	}
	/* Read by workers_end() once pthread_join() has ordered it. */
	p->drained = workers_drain(fs, p->end_timeout_s);
	if (!p->drained) {
		fprintf(stderr,
			"intrfs: server %s has not answered every request %u s "
			"after the unmount: giving up on them (written data "
			"may be lost)\n",
			nc_client_server(fs->nc), p->end_timeout_s);
		nc_client_shutdown(fs->nc);
	}
	return NULL;
}

int workers_end_watch(struct intrfs *fs, unsigned timeout_s)
{
	struct worker_pool *p = &fs->pool;
	sigset_t all, old;
	int rc;

	p->end_timeout_s = timeout_s;
	if (pipe2(p->end_pipe, O_CLOEXEC) < 0)
		return -errno;
	/* Signals are for the session's handlers and the dumper. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = -pthread_create(&p->ender, NULL, ender_main, fs);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		close(p->end_pipe[0]);
		close(p->end_pipe[1]);
		return rc;
	}
	p->ender_running = true;
	return 0;
}

bool workers_end(struct intrfs *fs, unsigned timeout_s)
{
	struct worker_pool *p = &fs->pool;

	if (!p->ender_running)
		return workers_drain(fs, timeout_s);
	(void)!write(p->end_pipe[1], "", 1);
	pthread_join(p->ender, NULL);
	close(p->end_pipe[0]);
	close(p->end_pipe[1]);
	p->ender_running = false;
	return p->drained;
}

void workers_stop(struct intrfs *fs)
{
	struct worker_pool *p = &fs->pool;

	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_broadcast(&p->cond);
	while (p->workers)
		pthread_cond_wait(&p->done, &p->lock);
	pthread_mutex_unlock(&p->lock);
}
