/*
 * Names in doubt.  While an op that creates, removes or renames a name is
 * in flight, and for a while after it failed or its caller was answered
 * EINTR, what the server has at that name may change at any moment: the
 * call may still be on its way, or be carried out after its caller gave
 * up on it.  The kernel must not cache an entry for such a name (positive
 * or negative) for the attribute cache's 30 s: the entries intrfs hands
 * out for it get timeout 0, so every walk asks the server again until the
 * doubt is over.  Invalidation (names_unsure() in workers.c) drops what
 * the kernel holds already; this keeps it from caching them again.
 *
 * A lookup that started before a doubt ended may carry the server's state
 * from before the call was carried out: each ended doubt (an op that
 * failed, once its grace is over) bumps gen, and a lookup that saw gen
 * change under it hands out timeout 0 too.  An op that succeeded leaves
 * no doubt: the kernel updates its own entries from the answer.
 *
 * fs->unsure.lock is a leaf.  The list is short: the namespace ops in
 * flight plus those that failed within the last grace period.
 */
#include "fusefs_i.h"

#include <stdlib.h>
#include <string.h>

struct unsure_name {
	struct unsure_name *next;
	fuse_ino_t dir;
	unsigned inflight; /* ops on the name not ended */
	uint64_t until_ns; /* in doubt until then, once inflight is 0 */
	bool doubted; /* an op on it failed: its end bumps gen */
	char name[];
};

void unsure_init(struct intrfs *fs)
{
	pthread_mutex_init(&fs->unsure.lock, NULL);
	fs->unsure.head = NULL;
	atomic_init(&fs->unsure.gen, 0);
}

void unsure_destroy(struct intrfs *fs)
{
	while (fs->unsure.head) {
		struct unsure_name *next = fs->unsure.head->next;

		free(fs->unsure.head);
		fs->unsure.head = next;
	}
	pthread_mutex_destroy(&fs->unsure.lock);
}

/* Drops doubts that are over.  Called with unsure.lock held. */
static void prune(struct intrfs *fs, uint64_t now)
{
	struct unsure_name **p = &fs->unsure.head;

	while (*p) {
		struct unsure_name *u = *p;

		if (u->inflight == 0 && u->until_ns <= now) {
			*p = u->next;
			/* release: pairs with unsure_gen()'s acquire. */
			if (u->doubted)
				atomic_fetch_add_explicit(&fs->unsure.gen, 1,
							  memory_order_release);
			free(u);
		} else {
			p = &u->next;
		}
	}
}

/* Called with unsure.lock held. */
static struct unsure_name *find(struct intrfs *fs, fuse_ino_t dir,
				const char *name)
{
	for (struct unsure_name *u = fs->unsure.head; u; u = u->next)
		if (u->dir == dir && strcmp(u->name, name) == 0)
			return u;
	return NULL;
}

bool unsure_begin(struct intrfs *fs, fuse_ino_t dir, const char *name)
{
	struct unsure_name *u;
	size_t len = strlen(name);

	pthread_mutex_lock(&fs->unsure.lock);
	u = find(fs, dir, name);
	if (!u) {
		u = malloc(sizeof(*u) + len + 1);
		if (!u) {
			pthread_mutex_unlock(&fs->unsure.lock);
			return false;
		}
		u->dir = dir;
		u->inflight = 0;
		u->until_ns = 0;
		u->doubted = false;
		memcpy(u->name, name, len + 1);
		u->next = fs->unsure.head;
		fs->unsure.head = u;
	}
	u->inflight++;
	pthread_mutex_unlock(&fs->unsure.lock);
	return true;
}

void unsure_end(struct intrfs *fs, fuse_ino_t dir, const char *name,
		uint64_t grace_ns)
{
	uint64_t now = region_now_ns();
	struct unsure_name *u;

	pthread_mutex_lock(&fs->unsure.lock);
	u = find(fs, dir, name);
	if (u && u->inflight > 0) {
		u->inflight--;
		if (grace_ns && now + grace_ns > u->until_ns) {
			u->until_ns = now + grace_ns;
			u->doubted = true;
		}
	}
	prune(fs, now);
	pthread_mutex_unlock(&fs->unsure.lock);
}

uint64_t unsure_gen(struct intrfs *fs)
{
	/* acquire: pairs with prune()'s release. */
	return atomic_load_explicit(&fs->unsure.gen, memory_order_acquire);
}

bool unsure_name(struct intrfs *fs, fuse_ino_t dir, const char *name,
		 unsigned own, uint64_t since_gen)
{
	uint64_t now = region_now_ns();
	struct unsure_name *u;
	bool doubt;

	pthread_mutex_lock(&fs->unsure.lock);
	prune(fs, now);
	u = find(fs, dir, name);
	doubt = (u && (u->inflight > own || u->until_ns > now)) ||
		atomic_load_explicit(&fs->unsure.gen, memory_order_relaxed) !=
			since_gen;
	pthread_mutex_unlock(&fs->unsure.lock);
	return doubt;
}
