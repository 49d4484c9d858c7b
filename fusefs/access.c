/*
 * Permission checks a cached entry must not skip: the access cache and the
 * timeouts of the entries the kernel caches.
 *
 * The access cache is what the server said each caller may do to a file,
 * kept as Linux NFS keeps it (nfs_access_get_cached()): one entry per node
 * and credentials (uid, gid and groups), filled by an ACCESS call that asks
 * for every bit that applies to the file's type at once, and valid while
 * the node's attributes are: for the attribute timeout, and only until a
 * change of mode, owner, group or ctime is seen (node->attr_gen).  open,
 * opendir, access, and truncate by path consult it.
 *
 * Without default_permissions the kernel checks no search (x) permission
 * while it walks a path through entries it has cached: only a LOOKUP that
 * reaches us is checked, by the server.  The kernel's entry cache is
 * shared by every user, so on an allow_other mount an entry may be cached
 * only below a directory that every user may search; below any other its
 * timeout is 0 and each walk asks again.  When a directory stops being
 * searchable by all (a chmod here, or new attributes from the server), the
 * entries cached below it are invalidated: its own entry in its parent
 * (which drops the subtree), or, for the root, every name handed out.
 *
 * It never holds a lock across the ACCESS call, and never invalidates an
 * entry from a request's own path: invalidations go through the notifier
 * thread (notify.c).  Everything here is protected by fs->nodes_lock, a
 * leaf.
 */
#include "fusefs_i.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Entries kept per node: the callers that use one file are few. */
#define ACCESS_PER_NODE 8
/* Names under the root remembered for invalidation; beyond, timeout 0. */
#define ROOT_NAMES_MAX 4096
#define SEARCH_ALL (S_IXUSR | S_IXGRP | S_IXOTH)

struct access_entry {
	struct access_entry *next;
	struct nc_cred cred;
	uint32_t asked, granted;
	uint64_t gen; /* node->attr_gen when the server answered */
	uint64_t at_ns; /* when it was asked */
};

struct root_name {
	struct root_name *next;
	char name[];
};

static bool cred_equal(const struct nc_cred *a, const struct nc_cred *b)
{
	return a->uid == b->uid && a->gid == b->gid &&
	       a->ngroups == b->ngroups &&
	       memcmp(a->groups, b->groups,
		      a->ngroups * sizeof(a->groups[0])) == 0;
}

/* The attribute timeout of n, in ns.  Called with nodes_lock held. */
static uint64_t ttl_ns(const struct intrfs *fs, const struct node *n)
{
	return (uint64_t)(attr_timeout(fs, n->mode) * 1e9);
}

/* Called with nodes_lock held. */
static struct access_entry **find(struct node *n, const struct nc_cred *cr)
{
	struct access_entry **p;

	for (p = &n->access; *p; p = &(*p)->next)
		if (cred_equal(&(*p)->cred, cr))
			return p;
	return NULL;
}

enum cached { NOT_KNOWN, GRANTED, REFUSED };

/* What the cache alone says of cr doing want to n. */
static enum cached access_cached(struct intrfs *fs, struct node *n,
				 const struct nc_cred *cr, uint32_t want)
{
	struct access_entry **p;
	enum cached r = NOT_KNOWN;

	pthread_mutex_lock(&fs->nodes_lock);
	p = find(n, cr);
	if (p && (*p)->gen == n->attr_gen && (want & ~(*p)->asked) == 0 &&
	    region_now_ns() - (*p)->at_ns < ttl_ns(fs, n))
		r = ((*p)->granted & want) == want ? GRANTED : REFUSED;
	pthread_mutex_unlock(&fs->nodes_lock);
	return r;
}

/* What Linux asks for (nfs_access_calc_mask()): all that applies. */
static uint32_t bits_for(mode_t type)
{
	if (S_ISDIR(type))
		return NC_ACCESS_READ | NC_ACCESS_LOOKUP | NC_ACCESS_MODIFY |
		       NC_ACCESS_EXTEND | NC_ACCESS_DELETE;
	return NC_ACCESS_READ | NC_ACCESS_MODIFY | NC_ACCESS_EXTEND |
	       NC_ACCESS_EXECUTE;
}

static void remember(struct intrfs *fs, struct node *n,
		     const struct nc_cred *cr, uint32_t asked, uint32_t granted,
		     uint64_t gen, uint64_t at)
{
	struct access_entry *e = calloc(1, sizeof(*e)), **p;
	unsigned kept = 0;

	if (!e)
		return; /* asked again next time */
	e->cred = *cr;
	e->asked = asked;
	e->granted = granted;
	e->gen = gen;
	e->at_ns = at;
	pthread_mutex_lock(&fs->nodes_lock);
	p = find(n, cr);
	if (p) {
		struct access_entry *old = *p;

		*p = old->next;
		free(old);
	}
	e->next = n->access;
	n->access = e;
	/* The oldest go first: new entries are put at the head. */
	for (p = &n->access; *p; p = &(*p)->next) {
		if (++kept > ACCESS_PER_NODE) {
			struct access_entry *rest = *p;

			*p = NULL;
			while (rest) {
				struct access_entry *next = rest->next;

				free(rest);
				rest = next;
			}
			break;
		}
	}
	pthread_mutex_unlock(&fs->nodes_lock);
}

int access_check(struct intrfs *fs, const struct nc_cred *cred, struct node *n,
		 uint32_t want)
{
	uint32_t asked, granted = 0;
	uint64_t gen, at;
	enum cached known = access_cached(fs, n, cred, want);
	int r;

	if (known != NOT_KNOWN)
		return known == GRANTED ? 0 : -EACCES;
	pthread_mutex_lock(&fs->nodes_lock);
	/* Read before the call: a change seen meanwhile makes it stale. */
	gen = n->attr_gen;
	asked = bits_for(n->mode ? n->mode : n->type) | want;
	pthread_mutex_unlock(&fs->nodes_lock);
	at = region_now_ns();
	r = nc_access(fs->nc, cred, &n->fh, asked, &granted);
	if (r)
		return r;
	remember(fs, n, cred, asked, granted, gen, at);
	return (granted & want) == want ? 0 : -EACCES;
}

/* What access(2)'s mask asks of a file of this type, in ACCESS bits. */
static uint32_t access_bits(mode_t type, int mask)
{
	uint32_t a = 0;

	if (mask & R_OK)
		a |= S_ISDIR(type) ? NC_ACCESS_READ | NC_ACCESS_LOOKUP :
				     NC_ACCESS_READ;
	if (mask & W_OK)
		a |= S_ISDIR(type) ? NC_ACCESS_MODIFY | NC_ACCESS_EXTEND |
					     NC_ACCESS_DELETE :
				     NC_ACCESS_MODIFY | NC_ACCESS_EXTEND;
	if (mask & X_OK)
		a |= S_ISDIR(type) ? NC_ACCESS_LOOKUP : NC_ACCESS_EXECUTE;
	return a;
}

int access_check_mask(struct intrfs *fs, const struct nc_cred *cred,
		      struct node *n, int mask)
{
	uint32_t want = access_bits(n->type, mask);

	return want ? access_check(fs, cred, n, want) : 0;
}

void access_drop(struct node *n)
{
	while (n->access) {
		struct access_entry *next = n->access->next;

		free(n->access);
		n->access = next;
	}
}

/* Entry timeouts. */

static unsigned name_hash(const char *name)
{
	uint32_t h = 2166136261u;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	return h % ROOT_NAME_BUCKETS;
}

/* Whether name is remembered under the root now.  nodes_lock held. */
static bool root_name_keep(struct intrfs *fs, const char *name)
{
	struct root_name **b = &fs->root_names[name_hash(name)], *r;
	size_t len = strlen(name);

	for (r = *b; r; r = r->next)
		if (strcmp(r->name, name) == 0)
			return true;
	if (fs->nroot_names >= ROOT_NAMES_MAX)
		return false;
	r = malloc(sizeof(*r) + len + 1);
	if (!r)
		return false;
	memcpy(r->name, name, len + 1);
	r->next = *b;
	*b = r;
	fs->nroot_names++;
	return true;
}

double entry_timeout(struct intrfs *fs, struct node *parent, const char *name,
		     bool negative)
{
	double t = negative && !fs->o.neg_cache ? 0 : fs->o.acdirmin;
	bool ok;

	/* Without allow_other, one user (and root) sees the mount. */
	if (!fs->o.allow_other || t <= 0)
		return t;
	pthread_mutex_lock(&fs->nodes_lock);
	ok = S_ISDIR(parent->mode) &&
	     (parent->mode & SEARCH_ALL) == SEARCH_ALL &&
	     (parent != &fs->root || root_name_keep(fs, name));
	pthread_mutex_unlock(&fs->nodes_lock);
	return ok ? t : 0;
}

void entries_revoke(struct intrfs *fs, struct node *dir)
{
	struct root_name *names[ROOT_NAME_BUCKETS];
	fuse_ino_t parent = 0;
	char *dname = NULL;

	if (!fs->o.allow_other)
		return;
	pthread_mutex_lock(&fs->nodes_lock);
	if (dir == &fs->root) {
		memcpy(names, fs->root_names, sizeof(names));
		memset(fs->root_names, 0, sizeof(fs->root_names));
		fs->nroot_names = 0;
	} else if (dir->dname) {
		parent = dir->dparent;
		dname = strdup(dir->dname);
	}
	pthread_mutex_unlock(&fs->nodes_lock);
	if (dir != &fs->root) {
		if (dname)
			notify_inval_entry(fs, parent, dname);
		free(dname);
		return;
	}
	for (unsigned i = 0; i < ROOT_NAME_BUCKETS; i++) {
		for (struct root_name *r = names[i], *next; r; r = next) {
			next = r->next;
			notify_inval_entry(fs, FUSE_ROOT_ID, r->name);
			free(r);
		}
	}
}

void access_destroy(struct intrfs *fs)
{
	for (unsigned i = 0; i < ROOT_NAME_BUCKETS; i++) {
		for (struct root_name *r = fs->root_names[i], *next; r;
		     r = next) {
			next = r->next;
			free(r);
		}
		fs->root_names[i] = NULL;
	}
}
