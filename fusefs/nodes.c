/*
 * The node table: FUSE nodeids to NFS file handles.  A node's nodeid is its
 * address (the root's is FUSE_ROOT_ID); nodes are found by handle when a
 * LOOKUP, CREATE or READDIRPLUS returns one, and live as long as the kernel
 * holds lookups on them (FORGET drops them).
 *
 * nodes_lock protects the hash chains and the lookup counts; it is a leaf
 * and never held across a wait.
 */
#include "fusefs_i.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	task_mutex_init(&n->wlock);
	task_mutex_init(&n->clock);
	task_cond_init(&n->wcond);
	n->dirty = NULL;
	n->dirty_tail = &n->dirty;
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
	for (struct extent *e = n->dirty, *next; e; e = next) {
		next = e->next;
		free(e);
	}
	task_mutex_destroy(&n->wlock);
	task_mutex_destroy(&n->clock);
	task_cond_destroy(&n->wcond);
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
	if (attr) {
		n->fileid = attr->fileid;
		n->type = attr->mode & S_IFMT;
	}
	n->nlookup++;
	pthread_mutex_unlock(&fs->nodes_lock);
	return n;
}

void node_forget(struct intrfs *fs, fuse_ino_t ino, uint64_t count)
{
	struct node *n = node_of(fs, ino), **p;

	if (n == &fs->root)
		return;
	pthread_mutex_lock(&fs->nodes_lock);
	n->nlookup = count < n->nlookup ? n->nlookup - count : 0;
	if (n->nlookup) {
		pthread_mutex_unlock(&fs->nodes_lock);
		return;
	}
	for (p = &fs->nodes[fh_hash(&n->fh)]; *p; p = &(*p)->hnext) {
		if (*p == n) {
			*p = n->hnext;
			break;
		}
	}
	pthread_mutex_unlock(&fs->nodes_lock);
	if (n->dirty_bytes)
		fprintf(stderr, "intrfs: %zu uncommitted bytes of file %" PRIu64
				" dropped with its last reference\n",
			n->dirty_bytes, n->fileid);
	node_free(n);
}
