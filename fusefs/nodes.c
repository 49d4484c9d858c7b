/*
 * The node table: FUSE nodeids to NFS file handles.  A node's nodeid is its
 * address (the root's is FUSE_ROOT_ID); nodes are found by handle when a
 * LOOKUP, CREATE or READDIRPLUS returns one, and live as long as the kernel
 * holds lookups on them (FORGET drops them), a file handle is open on them,
 * or a job has them pinned: a release that commits or removes a silly name
 * goes on after the kernel has forgotten the inode.
 *
 * Each node also keeps what the server last said of its mode, owner and
 * ctime: a change ends what the access cache knows of it.  The same
 * attributes become the kernel's struct stat and FUSE entries here
 * (node_stat(), node_entry()).
 *
 * It never calls the server and never waits.  fs->nodes_lock protects the
 * hash chains, the counts and those attributes; it is a leaf and never held
 * across a wait.
 */
#include "fusefs_i.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

static unsigned fh_hash(const struct nc_fh *fh)
{
	/* FNV-1a: handles are opaque bytes, often with a common prefix. */
	uint32_t h = 2166136261u;

	for (unsigned i = 0; i < fh->len; i++)
		h = (h ^ fh->data[i]) * 16777619u;
	return h % NODE_BUCKETS;
}

static bool fh_equal(const struct nc_fh *a, const struct nc_fh *b)
{
	return a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}

static void node_init(struct node *n, const struct nc_fh *fh, mode_t type)
{
	n->fh = *fh;
	n->type = type;
	wb_node_init(&n->wb);
}

void nodes_init(struct intrfs *fs)
{
	pthread_mutex_init(&fs->nodes_lock, NULL);
	node_init(&fs->root, &fs->root.fh, S_IFDIR);
	fs->root.ino = FUSE_ROOT_ID;
	fs->root.nlookup = 1;
	fs->nodes[fh_hash(&fs->root.fh)] = &fs->root;
}

static void node_free(struct node *n)
{
	wb_node_destroy(&n->wb, n->fileid);
	access_drop(n);
	free(n->dname);
	free(n->silly_name);
	free(n);
}

void nodes_destroy(struct intrfs *fs)
{
	for (unsigned i = 0; i < NODE_BUCKETS; i++) {
		for (struct node *n = fs->nodes[i], *next; n; n = next) {
			next = n->hnext;
			if (n != &fs->root)
				node_free(n);
		}
		fs->nodes[i] = NULL;
	}
	access_drop(&fs->root);
	pthread_mutex_destroy(&fs->nodes_lock);
}

struct node *node_of(struct intrfs *fs, fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? &fs->root : (struct node *)(uintptr_t)ino;
}

struct node *node_lookup(struct intrfs *fs, const struct nc_fh *fh,
			 const struct nc_attr *attr)
{
	unsigned b = fh_hash(fh);
	struct node *n;

	pthread_mutex_lock(&fs->nodes_lock);
	for (n = fs->nodes[b]; n; n = n->hnext)
		if (fh_equal(&n->fh, fh))
			break;
	if (!n) {
		n = calloc(1, sizeof(*n));
		if (!n) {
			pthread_mutex_unlock(&fs->nodes_lock);
			return NULL;
		}
		node_init(n, fh, attr ? (attr->mode & S_IFMT) : 0);
		n->ino = (fuse_ino_t)(uintptr_t)n;
		n->hnext = fs->nodes[b];
		fs->nodes[b] = n;
	}
	n->nlookup++;
	pthread_mutex_unlock(&fs->nodes_lock);
	if (attr && node_saw_attr(fs, n, attr))
		entries_revoke(fs, n);
	return n;
}

/* Unhashes n once nothing holds it.  Called with nodes_lock held. */
static bool node_unused(struct intrfs *fs, struct node *n)
{
	struct node **p;

	if (n == &fs->root || n->nlookup || n->opens || n->pins)
		return false;
	for (p = &fs->nodes[fh_hash(&n->fh)]; *p; p = &(*p)->hnext) {
		if (*p == n) {
			*p = n->hnext;
			break;
		}
	}
	return true;
}

void node_forget(struct intrfs *fs, fuse_ino_t ino, uint64_t count)
{
	struct node *n = node_of(fs, ino);
	bool gone;

	if (n == &fs->root)
		return;
	pthread_mutex_lock(&fs->nodes_lock);
	n->nlookup = count < n->nlookup ? n->nlookup - count : 0;
	gone = node_unused(fs, n);
	pthread_mutex_unlock(&fs->nodes_lock);
	if (gone)
		node_free(n);
}

struct node *node_find_pin(struct intrfs *fs, const struct nc_fh *fh)
{
	struct node *n;

	pthread_mutex_lock(&fs->nodes_lock);
	for (n = fs->nodes[fh_hash(fh)]; n; n = n->hnext)
		if (fh_equal(&n->fh, fh))
			break;
	if (n)
		n->pins++;
	pthread_mutex_unlock(&fs->nodes_lock);
	return n;
}

void node_pin(struct intrfs *fs, struct node *n)
{
	pthread_mutex_lock(&fs->nodes_lock);
	n->pins++;
	pthread_mutex_unlock(&fs->nodes_lock);
}

void node_unpin(struct intrfs *fs, struct node *n)
{
	bool gone;

	pthread_mutex_lock(&fs->nodes_lock);
	n->pins--;
	gone = node_unused(fs, n);
	pthread_mutex_unlock(&fs->nodes_lock);
	if (gone)
		node_free(n);
}

void node_open(struct intrfs *fs, struct node *n)
{
	pthread_mutex_lock(&fs->nodes_lock);
	n->opens++;
	pthread_mutex_unlock(&fs->nodes_lock);
	/* Relaxed: a hint for unlink and rename, which look when it is set. */
	atomic_fetch_add_explicit(&fs->open_files, 1, memory_order_relaxed);
}

char *node_close(struct intrfs *fs, struct node *n)
{
	char *silly = NULL;

	pthread_mutex_lock(&fs->nodes_lock);
	n->pins++;
	/* A release for an open never counted (its answer failed) is none. */
	if (!n->opens) {
		pthread_mutex_unlock(&fs->nodes_lock);
		return NULL;
	}
	if (--n->opens == 0) {
		silly = n->silly_name;
		n->silly_name = NULL;
	}
	pthread_mutex_unlock(&fs->nodes_lock);
	atomic_fetch_sub_explicit(&fs->open_files, 1, memory_order_relaxed);
	return silly;
}

bool node_last_close(struct intrfs *fs, struct node *n)
{
	bool last;

	pthread_mutex_lock(&fs->nodes_lock);
	last = n->opens == 0;
	pthread_mutex_unlock(&fs->nodes_lock);
	return last;
}

/* Every user may search a directory of this mode. */
#define SEARCH_ALL (S_IXUSR | S_IXGRP | S_IXOTH)

bool node_saw_attr(struct intrfs *fs, struct node *n, const struct nc_attr *a)
{
	bool revoke;

	pthread_mutex_lock(&fs->nodes_lock);
	revoke = S_ISDIR(n->mode) && (n->mode & SEARCH_ALL) == SEARCH_ALL &&
		 (a->mode & SEARCH_ALL) != SEARCH_ALL;
	if (n->mode != a->mode || n->uid != a->uid || n->gid != a->gid ||
	    n->ctime.tv_sec != a->ctime.tv_sec ||
	    n->ctime.tv_nsec != a->ctime.tv_nsec)
		n->attr_gen++;
	n->mode = a->mode;
	n->uid = a->uid;
	n->gid = a->gid;
	n->ctime = a->ctime;
	n->fileid = a->fileid;
	n->type = a->mode & S_IFMT;
	pthread_mutex_unlock(&fs->nodes_lock);
	return revoke;
}

void node_set_dname(struct intrfs *fs, struct node *n, fuse_ino_t parent,
		    const char *name)
{
	char *copy = strdup(name);

	pthread_mutex_lock(&fs->nodes_lock);
	free(n->dname);
	n->dname = copy;
	n->dparent = parent;
	pthread_mutex_unlock(&fs->nodes_lock);
}

void nodes_foreach(struct intrfs *fs, void (*fn)(struct node *n, void *arg),
		   void *arg)
{
	pthread_mutex_lock(&fs->nodes_lock);
	for (unsigned i = 0; i < NODE_BUCKETS; i++)
		for (struct node *n = fs->nodes[i]; n; n = n->hnext)
			fn(n, arg);
	pthread_mutex_unlock(&fs->nodes_lock);
}

/* Attributes and entries, as the kernel gets them. */

static void attr_to_stat(const struct nc_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = a->fileid;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_size = (off_t)a->size;
	st->st_blocks = (blkcnt_t)((a->used + 511) / 512);
	st->st_blksize = 65536;
	st->st_rdev = makedev(a->rdev_major, a->rdev_minor);
	st->st_atim = a->atime;
	st->st_mtim = a->mtime;
	st->st_ctim = a->ctime;
}

double attr_timeout(const struct intrfs *fs, mode_t mode)
{
	return S_ISDIR(mode) ? fs->o.acdirmin : fs->o.acregmin;
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* What the kernel is given of n's size and times.  nodes_lock held. */
static void kattr_set(struct node *n, const struct nc_attr *a)
{
	n->kattr_set = true;
	n->ksize = a->size;
	n->kmtime = a->mtime;
	n->kctime = a->ctime;
}

void node_stat(struct intrfs *fs, struct node *n, const struct nc_attr *a,
	       struct stat *st)
{
	bool silly;

	if (node_saw_attr(fs, n, a))
		entries_revoke(fs, n);
	attr_to_stat(a, st);
	pthread_mutex_lock(&fs->nodes_lock);
	silly = n->silly_name != NULL;
	kattr_set(n, a);
	pthread_mutex_unlock(&fs->nodes_lock);
	/* Unlinked while open: its hidden name is not a link to count. */
	if (silly && st->st_nlink > 0)
		st->st_nlink--;
}

void node_kattr_unknown(struct intrfs *fs, struct node *n)
{
	pthread_mutex_lock(&fs->nodes_lock);
	n->kattr_set = false;
	pthread_mutex_unlock(&fs->nodes_lock);
}

/*
 * Whether the kernel's copy of directory n's listing may be kept: known is
 * true and size and times are those of the copy's start; if not, the copy
 * starts again with them (none when !known).  nodes_lock held.
 */
static bool listing_keep(struct node *n, bool known, uint64_t size,
			 const struct timespec *mtime,
			 const struct timespec *ctime)
{
	bool keep = known && n->rdc_set && n->rdc_size == size &&
		    same_time(&n->rdc_mtime, mtime) &&
		    same_time(&n->rdc_ctime, ctime);

	if (!keep) {
		n->rdc_set = known;
		n->rdc_size = size;
		n->rdc_mtime = *mtime;
		n->rdc_ctime = *ctime;
	}
	return keep;
}

bool node_listing_keep(struct intrfs *fs, struct node *n,
		       const struct nc_attr *a)
{
	bool keep;

	if (node_saw_attr(fs, n, a))
		entries_revoke(fs, n);
	pthread_mutex_lock(&fs->nodes_lock);
	/* As close-to-open for a file's pages: size and times unmoved. */
	keep = listing_keep(n, true, a->size, &a->mtime, &a->ctime);
	pthread_mutex_unlock(&fs->nodes_lock);
	return keep;
}

bool node_listing_keep_seen(struct intrfs *fs, struct node *n)
{
	bool keep;

	pthread_mutex_lock(&fs->nodes_lock);
	keep = listing_keep(n, n->kattr_set, n->ksize, &n->kmtime, &n->kctime);
	pthread_mutex_unlock(&fs->nodes_lock);
	return keep;
}

bool node_kattr_stale(struct intrfs *fs, struct node *n,
		      const struct nc_attr *a)
{
	bool stale;

	if (node_saw_attr(fs, n, a))
		entries_revoke(fs, n);
	pthread_mutex_lock(&fs->nodes_lock);
	/*
	 * The size and the times, as Linux NFS compares its change
	 * attributes: ctime moves with every change, mtime and size with
	 * the data.
	 */
	stale = !n->kattr_set || n->ksize != a->size ||
		!same_time(&n->kmtime, &a->mtime) ||
		!same_time(&n->kctime, &a->ctime);
	/* Invalidated now: the kernel asks for them again (node_stat()). */
	if (stale)
		n->kattr_set = false;
	pthread_mutex_unlock(&fs->nodes_lock);
	return stale;
}

int node_entry(struct intrfs *fs, struct node *parent, const char *name,
	       const struct nc_entry *e, struct fuse_entry_param *out)
{
	struct node *n;

	if (!e->has_fh || !e->has_attr)
		return -EIO;
	n = node_lookup(fs, &e->fh, &e->attr);
	if (!n)
		return -ENOMEM;
	memset(out, 0, sizeof(*out));
	out->ino = n->ino;
	node_stat(fs, n, &e->attr, &out->attr);
	out->attr_timeout = attr_timeout(fs, e->attr.mode);
	out->entry_timeout = entry_timeout(fs, parent, name, false);
	if (S_ISDIR(e->attr.mode) && fs->o.allow_other)
		node_set_dname(fs, n, parent->ino, name);
	return 0;
}
