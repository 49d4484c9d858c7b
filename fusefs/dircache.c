/*
 * The directory cache: what an open directory read from the server, kept
 * for the readdir and readdirplus requests that page through it.  An
 * opendir makes a struct dirhandle (its address is the FUSE file handle);
 * a readdir at offset 0, or the first one, reads the whole directory with
 * READDIRPLUS (or READDIR) calls, and every readdir fills the kernel's
 * buffer from that copy, an entry's offset being its index plus one.
 * readdirplus hands out a node and attributes for each entry but . and ..,
 * except for a file whose writes are still on their way (write-behind):
 * its size may not have them yet.
 *
 * It never answers a request itself.  A request answered EINTR may still
 * be running when the next one on its directory comes, or when the
 * releasedir does: so each readdir holds a reference on its dirhandle from
 * the session thread on (dir_hold()), and its lock serialises them.
 *
 * Lock order: a dirhandle's lock, a task mutex taken with an interruptible
 * wait (only inside a job's task), is held across the calls that fill the
 * copy; the node table's lock (nodes.c) and a node's write-behind lock
 * (writeback.c) are taken under it.
 */
#include "fusefs_i.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct dirent_copy {
	char *name;
	uint64_t fileid, cookie;
	bool has_entry;
	struct nc_entry e;
};

struct dirhandle {
	/* The opendir's, and one per readdir from its submission on. */
	_Atomic unsigned refs;
	task_mutex_t lock;
	struct dirent_copy *ents; /* protected by lock, as are n and cap */
	size_t n, cap;
	bool loaded; /* protected by lock: ents is a whole pass */
	uint64_t unsure_gen; /* protected by lock: unsure_gen() at the pass */
};

struct dirhandle *dir_open(void)
{
	struct dirhandle *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	/* relaxed: nobody else sees d before the opendir is answered. */
	atomic_store_explicit(&d->refs, 1, memory_order_relaxed);
	region_task_mutex_init(&d->lock);
	return d;
}

void dir_hold(struct dirhandle *d)
{
	/* relaxed: the caller holds a reference already (the open's). */
	atomic_fetch_add_explicit(&d->refs, 1, memory_order_relaxed);
}

static void dir_clear(struct dirhandle *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->ents[i].name);
	d->n = 0;
	d->loaded = false;
}

void dir_put(struct dirhandle *d)
{
	/* acq_rel: the last one out sees what every readdir left in d. */
	if (atomic_fetch_sub_explicit(&d->refs, 1, memory_order_acq_rel) != 1)
		return;
	dir_clear(d);
	free(d->ents);
	region_task_mutex_destroy(&d->lock);
	free(d);
}

static int collect(void *arg, const char *name, uint64_t fileid,
		   uint64_t cookie, const struct nc_fh *fh,
		   const struct nc_attr *attr)
{
	struct dirhandle *d = arg;
	struct dirent_copy *c;

	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 64;
		struct dirent_copy *p = realloc(d->ents, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		d->ents = p;
		d->cap = cap;
	}
	c = &d->ents[d->n];
	memset(c, 0, sizeof(*c));
	c->name = strdup(name);
	if (!c->name)
		return -ENOMEM;
	c->fileid = fileid;
	c->cookie = cookie;
	if (fh && attr) {
		c->has_entry = true;
		c->e.fh = *fh;
		c->e.attr = *attr;
		c->e.has_fh = c->e.has_attr = true;
	}
	d->n++;
	return 0;
}

/* Reads the whole directory once per pass (offset 0).  d->lock held. */
static int dir_load(const struct actor *a, struct dirhandle *d,
		    const struct dir_ask *q, bool plus)
{
	struct node *dir = node_of(a->fs, q->ino);
	unsigned char verf[8] = { 0 };
	uint64_t cookie = 0;
	bool eof = false;
	int rc = 0;

	dir_clear(d);
	/* Entries from this pass are as old as its start (unsure.c). */
	d->unsure_gen = q->unsure_gen;
	FS_REGION_BEGIN(a, "readdir: READDIRPLUS calls");
	while (!eof && rc == 0) {
		size_t before = d->n;

		rc = nc_readdir(a->fs->nc, a->cred, &dir->fh, cookie, verf,
				plus, collect, d, &eof);
		if (rc == 0 && d->n == before && !eof)
			rc = -EIO; /* no progress and no end: a bad server */
		if (rc == 0 && d->n > before)
			cookie = d->ents[d->n - 1].cookie;
	}
	FS_REGION_END(a);
	d->loaded = rc == 0;
	return rc;
}

/* One readdirplus entry: a node for each but . and .., counted once. */
static size_t add_plus(struct intrfs *fs, const struct dir_ask *q,
		       struct dirent_copy *c, uint64_t gen, char *buf,
		       size_t left, off_t next, int *rc)
{
	struct fuse_entry_param e = { 0 };
	bool dot = strcmp(c->name, ".") == 0 || strcmp(c->name, "..") == 0;
	size_t need;

	e.attr.st_ino = c->fileid;
	if (c->has_entry && !dot) {
		*rc = node_entry(fs, node_of(fs, q->ino), c->name, &c->e, &e);
		if (*rc)
			return 0;
		if (unsure_name(fs, q->ino, c->name, 0, gen))
			e.entry_timeout = 0;
		/*
		 * The size may not have the writes on their way: the entry
		 * goes without attributes (nodeid 0), and the kernel asks
		 * later.
		 */
		if (wb_writes_on_way(node_of(fs, e.ino))) {
			node_forget(fs, e.ino, 1);
			e.ino = 0;
			e.attr.st_mode = c->e.attr.mode & S_IFMT;
		}
	} else if (c->has_entry) {
		e.attr.st_mode = c->e.attr.mode & S_IFMT;
	}
	need = fuse_add_direntry_plus(q->req, buf, left, c->name, &e, next);
	if (need > left && e.ino)
		node_forget(fs, e.ino, 1);
	return need;
}

/* Fills q->buf from the copy, from entry q->off on.  d->lock held. */
static int fill(struct intrfs *fs, struct dirhandle *d, struct dir_ask *q,
		bool plus)
{
	size_t len = 0;
	int rc = 0;

	q->buf = buf_alloc(&fs->bufs, q->size);
	if (!q->buf)
		return -ENOMEM;
	for (size_t i = (size_t)q->off; i < d->n; i++) {
		struct dirent_copy *c = &d->ents[i];
		size_t need, left = q->size - len;

		if (plus) {
			need = add_plus(fs, q, c, d->unsure_gen, q->buf + len,
					left, (off_t)i + 1, &rc);
			if (rc)
				return rc;
		} else {
			struct stat st = { 0 };

			st.st_ino = c->fileid;
			st.st_mode = c->has_entry ? c->e.attr.mode & S_IFMT : 0;
			need = fuse_add_direntry(q->req, q->buf + len, left,
						 c->name, &st, (off_t)i + 1);
		}
		if (need > left)
			break;
		len += need;
	}
	q->len = len;
	return 0;
}

int dir_read(const struct actor *a, struct dirhandle *d, struct dir_ask *q,
	     bool plus)
{
	int rc = region_task_mutex_lock(&d->lock, TASK_INTERRUPTIBLE,
					TASK_FOREVER);

	if (rc)
		return rc;
	if (q->off == 0 || !d->loaded)
		rc = dir_load(a, d, q, plus);
	if (rc == 0)
		rc = fill(a->fs, d, q, plus);
	region_task_mutex_unlock(&d->lock);
	return rc;
}
