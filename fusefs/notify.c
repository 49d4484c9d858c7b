/*
 * Kernel entries invalidated from threads of their own.  A worker that
 * learns an entry must go (a directory that stopped being searchable by
 * everyone, a name an interrupted or failed op may have changed) queues it
 * here; a notifier writes the invalidation to /dev/fuse.  The kernel takes
 * the parent directory's lock for it, which the request being answered may
 * hold: so never from a request's path.  That lock may also be held for
 * long by another process's request waiting on a dead server: so there are
 * NOTIFIERS of them, and one entry stuck behind such a directory does not
 * hold back the others (a name that stays cached after the op that changed
 * it failed is a stale entry for the attribute cache's 30 s).
 *
 * fs->notify.lock is a leaf: it protects the queue and the stop flag, and
 * a notifier drops it before it writes to /dev/fuse.
 */
#include "fusefs_i.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An invalidation that took longer than this is logged. */
#define SLOW_NS 1000000000u

struct notify_item {
	struct notify_item *next;
	fuse_ino_t parent;
	char name[];
};

static void *notifier_main(void *arg)
{
	struct intrfs *fs = arg;

	pthread_mutex_lock(&fs->notify.lock);
	for (;;) {
		struct notify_item *it;
		uint64_t t0, took;
		int rc;

		while (!fs->notify.head && !fs->notify.stop)
			pthread_cond_wait(&fs->notify.cond, &fs->notify.lock);
		it = fs->notify.head;
		if (!it)
			break;
		fs->notify.head = it->next;
		pthread_mutex_unlock(&fs->notify.lock);
		t0 = region_now_ns();
		rc = fuse_lowlevel_notify_inval_entry(
			fs->se, it->parent, it->name, strlen(it->name));
		took = region_now_ns() - t0;
		if (took > SLOW_NS)
			fprintf(stderr,
				"intrfs: invalidating the entry %s took %.1f s "
				"(its directory was held by a request)\n",
				it->name, (double)took / 1e9);
		/*
		 * ENOENT: the kernel had not cached it, or forgot it;
		 * ENOTCONN, EBADF: the mount is going.
		 */
		if (rc && rc != -ENOENT && rc != -ENOTDIR && rc != -ENOTCONN &&
		    rc != -EBADF)
			fprintf(stderr,
				"intrfs: could not invalidate the entry %s: "
				"%s\n",
				it->name, strerror(-rc));
		free(it);
		pthread_mutex_lock(&fs->notify.lock);
	}
	pthread_mutex_unlock(&fs->notify.lock);
	return NULL;
}

int notify_start(struct intrfs *fs)
{
	pthread_mutex_init(&fs->notify.lock, NULL);
	pthread_cond_init(&fs->notify.cond, NULL);
	fs->notify.head = NULL;
	fs->notify.stop = false;
	fs->notify.nthreads = 0;
	for (unsigned i = 0; i < NOTIFIERS; i++) {
		int rc = pthread_create(&fs->notify.threads[i], NULL,
					notifier_main, fs);

		if (rc) {
			if (i > 0)
				break; /* fewer of them, still working */
			return -rc;
		}
		fs->notify.nthreads++;
	}
	return 0;
}

void notify_stop(struct intrfs *fs)
{
	pthread_mutex_lock(&fs->notify.lock);
	fs->notify.stop = true;
	/* What is queued no longer matters: the mount is gone. */
	while (fs->notify.head) {
		struct notify_item *next = fs->notify.head->next;

		free(fs->notify.head);
		fs->notify.head = next;
	}
	pthread_cond_broadcast(&fs->notify.cond);
	pthread_mutex_unlock(&fs->notify.lock);
	for (unsigned i = 0; i < fs->notify.nthreads; i++)
		pthread_join(fs->notify.threads[i], NULL);
	pthread_cond_destroy(&fs->notify.cond);
	pthread_mutex_destroy(&fs->notify.lock);
}

void notify_inval_entry(struct intrfs *fs, fuse_ino_t parent, const char *name)
{
	size_t len = strlen(name);
	struct notify_item *it = malloc(sizeof(*it) + len + 1), **p;

	if (!it) {
		fprintf(stderr,
			"intrfs: out of memory: the entry %s stays "
			"cached until its timeout\n",
			name);
		return;
	}
	it->next = NULL;
	it->parent = parent;
	memcpy(it->name, name, len + 1);
	pthread_mutex_lock(&fs->notify.lock);
	if (fs->notify.stop) {
		pthread_mutex_unlock(&fs->notify.lock);
		free(it);
		return;
	}
	for (p = &fs->notify.head; *p; p = &(*p)->next)
		;
	*p = it;
	pthread_cond_signal(&fs->notify.cond);
	pthread_mutex_unlock(&fs->notify.lock);
}
