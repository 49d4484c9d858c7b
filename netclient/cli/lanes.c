/*
 * intrfs-client's transfer lanes.  Large transfers run in two lanes, each a
 * task on its own thread with its own batch of calls in flight: while one
 * lane waits for the last replies of its chunk or moves it to or from the
 * local side, the other keeps the connection busy.  Chunk k belongs to lane
 * k % 2; the local side is used in chunk order (turn).  The job (cat, put)
 * says what a lane does with its chunks; this file only starts the second
 * lane, takes turns and carries the first error.  A job may also have a
 * task run beside the lanes for as long as they run (put's COMMITs): it
 * waits on l->cond under l->lock for the job's progress, the first error
 * or l->done, which are broadcast.
 *
 * It never makes a netclient call or local I/O itself, and never while
 * holding l->lock.  Lock order: l->lock is the only lock, a leaf; a job may
 * take it for bookkeeping of its own (put's verifiers), calling nothing
 * that waits while it holds it.
 */
#include "cli_i.h"

#include <errno.h>
#include <pthread.h>

static void lanes_init(struct cli_lanes *l)
{
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	l->turn = 0;
	l->end = UINT64_MAX;
	l->rc = 0;
	l->what = NULL;
	l->done = false;
}

static void lanes_destroy(struct cli_lanes *l)
{
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->cond);
}

/* Records the first error (rc < 0) and so stops both lanes. */
void cli_lanes_fail(struct cli_lanes *l, int rc, const char *what)
{
	pthread_mutex_lock(&l->lock);
	if (!l->rc) {
		l->rc = rc;
		l->what = what;
	}
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
}

/* Waits for chunk k's turn; false when the lanes stop or k is not needed. */
bool cli_lanes_wait_turn(struct cli_lanes *l, uint64_t k)
{
	bool go;

	pthread_mutex_lock(&l->lock);
	while (!l->rc && l->turn != k && k < l->end)
		pthread_cond_wait(&l->cond, &l->lock);
	go = !l->rc && k < l->end;
	pthread_mutex_unlock(&l->lock);
	return go;
}

/* Chunk k's local I/O is done; last: nothing after it is needed. */
void cli_lanes_pass_turn(struct cli_lanes *l, uint64_t k, bool last)
{
	pthread_mutex_lock(&l->lock);
	l->turn = k + 1;
	if (last && k + 1 < l->end)
		l->end = k + 1;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
}

bool cli_lanes_needed(struct cli_lanes *l, uint64_t k)
{
	bool go;

	pthread_mutex_lock(&l->lock);
	go = !l->rc && k < l->end;
	pthread_mutex_unlock(&l->lock);
	return go;
}

/* A thread of the lanes: fn(job, index) or beside(job), in its own task. */
struct lane {
	void (*fn)(void *job, unsigned index);
	void (*beside)(void *job);
	void *job;
	task_t *task;
	const struct cli_run *r;
};

static void *lane_main(void *arg)
{
	struct lane *ln = arg;

	region_task_enter(ln->task);
	NC_MODE_REGION_BEGIN(ln->r->opts.intr_mode, "intrfs-client: lane");
	if (ln->beside)
		ln->beside(ln->job);
	else
		ln->fn(ln->job, 1);
	NC_MODE_REGION_END(ln->r->opts.intr_mode);
	region_task_leave(ln->task);
	return NULL;
}

/*
 * Runs fn(job, 0) here and fn(job, 1) on a second thread sharing l, and
 * beside(job) on a third unless it is NULL; waits for all, and returns the
 * lanes' result (what failed goes to r->what).
 */
int cli_run_lanes(struct cli_run *r, void (*fn)(void *, unsigned),
		  void (*beside)(void *), void *job, struct cli_lanes *l)
{
	struct lane second = { fn, NULL, job, r->lane_task, r };
	struct lane third = { NULL, beside, job, r->beside_task, r };
	pthread_t th, bth;
	bool with_beside = false;
	int rc;

	lanes_init(l);
	if (beside) {
		with_beside = pthread_create(&bth, NULL, lane_main, &third) ==
			      0;
		if (!with_beside)
			cli_lanes_fail(l, -EAGAIN, NULL);
	}
	if (pthread_create(&th, NULL, lane_main, &second) != 0) {
		cli_lanes_fail(l, -EAGAIN, NULL);
	} else {
		fn(job, 0);
		pthread_join(th, NULL);
	}
	pthread_mutex_lock(&l->lock);
	l->done = true;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
	if (with_beside)
		pthread_join(bth, NULL);
	rc = l->rc;
	if (l->what)
		r->what = l->what;
	lanes_destroy(l);
	return rc;
}
