/*
 * Kernel entries invalidated from a thread of their own.  A worker that
 * learns an entry must go (a directory that stopped being searchable by
 * everyone) queues it here; the notifier writes the invalidation to
 * /dev/fuse.  The kernel takes the parent directory's lock for it, which
 * the request being answered may hold: so never from a request's path.
 *
 * fs->notify.lock is a leaf: it protects the queue and the stop flag, and
 * the notifier drops it before it writes to /dev/fuse.
 */
#include "fusefs_i.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
		int rc;

		while (!fs->notify.head && !fs->notify.stop)
			pthread_cond_wait(&fs->notify.cond, &fs->notify.lock);
		it = fs->notify.head;
		if (!it)
			break;
		fs->notify.head = it->next;
		pthread_mutex_unlock(&fs->notify.lock);
		rc = fuse_lowlevel_notify_inval_entry(
			fs->se, it->parent, it->name, strlen(it->name));
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
	return -pthread_create(&fs->notify.thread, NULL, notifier_main, fs);
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
	pthread_cond_signal(&fs->notify.cond);
	pthread_mutex_unlock(&fs->notify.lock);
	pthread_join(fs->notify.thread, NULL);
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
