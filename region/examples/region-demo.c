/*
 * region-demo: the scenarios of the LSFMM+BPF 2024 discussion, run under
 * each policy, printing what each wait returned.
 *
 * Every scenario is a stack of regions (what the callers expect) around one
 * per-call wait (what the helper at the bottom does, e.g. an interruptible
 * sendmsg()), and an interrupt raised while the task waits there.  The wait
 * is completed 20 ms later if it is still waiting; then the regions end, and
 * an interruptible point shows whether a deferred interrupt is delivered.
 *
 *   percall  regions recorded only: the innermost wait's mode decides
 *   region   the regions' counters decide (the proposal)
 *   sigmask  regions block real signals (the alternative in the discussion)
 *
 * It uses nothing but intrfs/region.h and links the shared library, as a
 * program outside the tree would.  Its one lock is the task_mutex a mutex
 * scenario waits on; run_one() holds it until it completes the wait.
 */
#include "intrfs/region.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct scenario {
	const char *title;
	const char *stack; /* outermost first: U uninterruptible, K killable */
	enum task_mode mode;
	enum task_intr intr;
	bool lock; /* the wait is a mutex lock, else waiting for an fd */
};

static const struct scenario scenarios[] = {
	{ "hard NFS mount, Ctrl-C in an interruptible sendmsg()", "U",
	  TASK_INTERRUPTIBLE, TASK_INTR_NORMAL, false },
	{ "hard NFS mount, kill -9 in an interruptible sendmsg()", "U",
	  TASK_INTERRUPTIBLE, TASK_INTR_FATAL, false },
	{ "killable NFS op, Ctrl-C in mutex_lock_interruptible()", "K",
	  TASK_INTERRUPTIBLE, TASK_INTR_NORMAL, true },
	{ "killable NFS op, kill -9 in mutex_lock_interruptible()", "K",
	  TASK_INTERRUPTIBLE, TASK_INTR_FATAL, true },
	{ "overlayfs (killable) over hard NFS, kill -9 in sendmsg()", "KU",
	  TASK_INTERRUPTIBLE, TASK_INTR_FATAL, false },
	{ "hard NFS inside killable inside hard, kill -9 in a killable wait",
	  "UKU", TASK_KILLABLE, TASK_INTR_FATAL, false },
	{ "no region, Ctrl-C in a killable wait", "", TASK_KILLABLE,
	  TASK_INTR_NORMAL, false },
};

struct run {
	const struct scenario *sc;
	task_t *task;
	task_mutex_t lock;
	int pipefd[2];
	sem_t entered;
	int rc_wait, rc_after;
	uint64_t wait_ns, deferral_ns;
};

static void *worker(void *arg)
{
	struct run *r = arg;
	const char *s = r->sc->stack;
	uint64_t t0;
	char byte;

	region_task_enter(r->task);
	for (const char *p = s; *p; p++) {
		if (*p == 'U')
			region_begin_uninterruptible("demo: hard mount");
		else
			region_begin_killable("demo: killable caller");
	}
	sem_post(&r->entered);
	t0 = region_now_ns();
	if (r->sc->lock) {
		r->rc_wait = region_task_mutex_lock(&r->lock, r->sc->mode,
						    1000000000);
		if (r->rc_wait == 0)
			region_task_mutex_unlock(&r->lock);
	} else {
		r->rc_wait = region_task_wait_fd(r->pipefd[0], POLLIN,
						 r->sc->mode, 1000000000, NULL);
		if (r->rc_wait == 0 && read(r->pipefd[0], &byte, 1) != 1)
			r->rc_wait = -EIO;
	}
	r->wait_ns = region_now_ns() - t0;
	for (size_t i = strlen(s); i-- > 0;) {
		if (s[i] == 'U')
			region_end_uninterruptible();
		else
			region_end_killable();
	}
	r->rc_after = region_task_check_interrupt(TASK_INTERRUPTIBLE);
	region_task_leave(r->task);
	return NULL;
}

static void describe(const struct run *r, char *buf, size_t len)
{
	if (r->rc_wait == -EINTR)
		snprintf(buf, len, "EINTR after %.2f ms",
			 (double)r->wait_ns / 1e6);
	else if (r->rc_wait == 0 && r->rc_after == -EINTR)
		snprintf(buf, len,
			 "completed; EINTR at the next "
			 "interruptible point, %.0f ms late",
			 (double)r->deferral_ns / 1e6);
	else if (r->rc_wait == 0)
		snprintf(buf, len, "completed; not delivered");
	else
		snprintf(buf, len, "error %d", r->rc_wait);
}

static void run_one(const struct scenario *sc, enum region_policy policy,
		    char *out, size_t len)
{
	struct task_attr attr = { "demo", policy, NULL };
	struct region_stats before, after;
	struct run r = { .sc = sc, .pipefd = { -1, -1 } };
	pthread_t th;

	region_task_mutex_init(&r.lock);
	region_task_mutex_lock_nofail(
		&r.lock); /* held until the wait completes */
	r.task = region_task_create(&attr);
	if (!r.task || pipe(r.pipefd) < 0) {
		snprintf(out, len, "setup failed: %s", strerror(errno));
		return;
	}
	sem_init(&r.entered, 0, 0);
	region_stats_get(&before);
	pthread_create(&th, NULL, worker, &r);
	sem_wait(&r.entered);
	usleep(2000); /* let it reach the wait */
	region_task_interrupt(r.task, sc->intr);
	usleep(20000);
	if (write(r.pipefd[1], "x", 1) != 1)
		perror("write");
	region_task_mutex_unlock(&r.lock);
	pthread_join(th, NULL);
	region_stats_get(&after);
	r.deferral_ns = after.deferral_ns_total - before.deferral_ns_total;
	describe(&r, out, len);
	close(r.pipefd[0]);
	close(r.pipefd[1]);
	sem_destroy(&r.entered);
	region_task_mutex_destroy(&r.lock);
	region_task_put(r.task);
}

int main(void)
{
	static const enum region_policy policies[] = { REGION_POLICY_PERCALL,
						       REGION_POLICY_REGION,
						       REGION_POLICY_SIGMASK };

	printf("Each row: a region stack (outermost first; U uninterruptible, "
	       "K killable)\naround one wait of the given per-call mode; the "
	       "interrupt comes 2 ms into the wait.\n\n");
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
		const struct scenario *sc = &scenarios[i];

		printf("%s\n  regions \"%s\", %s %s, %s interrupt\n", sc->title,
		       sc->stack, region_task_mode_name(sc->mode),
		       sc->lock ? "mutex lock" : "fd wait",
		       sc->intr == TASK_INTR_FATAL ? "fatal" : "normal");
		for (unsigned p = 0; p < 3; p++) {
			char res[96];

			run_one(sc, policies[p], res, sizeof(res));
			printf("    %-8s %s\n", region_policy_name(policies[p]),
			       res);
		}
	}
	return 0;
}
