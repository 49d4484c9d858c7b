/*
 * Kernel entries invalidated from a thread of their own.  A worker that
 * learns an entry must go (a directory that stopped being searchable by
 * everyone) queues it here; the notifier writes the invalidation to
 * /dev/fuse.  The kernel takes the parent directory's lock for it, which
 * the request being answered may hold: so never from a request's path.
 *
 * notify_lock is a leaf: it protects the queue and notify_stop.
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

	pthread_mutex_lock(&fs->notify_lock);
	for (;;) {
		struct notify_item *it;
		int rc;

		while (!fs->notify_head && !fs->notify_stop)
			pthread_cond_wait(&fs->notify_cond, &fs->notify_lock);
		it = fs->notify_head;
		if (!it)
			break;
		fs->notify_head = it->next;
		pthread_mutex_unlock(&fs->notify_lock);
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
		pthread_mutex_lock(&fs->notify_lock);
	}
	pthread_mutex_unlock(&fs->notify_lock);
	return NULL;
}

int notify_start(struct intrfs *fs)
{
	pthread_mutex_init(&fs->notify_lock, NULL);
	pthread_cond_init(&fs->notify_cond, NULL);
	fs->notify_head = NULL;
	fs->notify_stop = false;
	return -pthread_create(&fs->notifier, NULL, notifier_main, fs);
}

void notify_stop(struct intrfs *fs)
{
	pthread_mutex_lock(&fs->notify_lock);
	fs->notify_stop = true;
	/* What is queued no longer matters: the mount is gone. */
	while (fs->notify_head) {
		struct notify_item *next = fs->notify_head->next;

		free(fs->notify_head);
		fs->notify_head = next;
	}
	pthread_cond_signal(&fs->notify_cond);
	pthread_mutex_unlock(&fs->notify_lock);
	pthread_join(fs->notifier, NULL);
	pthread_cond_destroy(&fs->notify_cond);
	pthread_mutex_destroy(&fs->notify_lock);
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
	pthread_mutex_lock(&fs->notify_lock);
	if (fs->notify_stop) {
		pthread_mutex_unlock(&fs->notify_lock);
		free(it);
		return;
	}
	for (p = &fs->notify_head; *p; p = &(*p)->next)
		;
	*p = it;
	pthread_cond_signal(&fs->notify_cond);
	pthread_mutex_unlock(&fs->notify_lock);
}
