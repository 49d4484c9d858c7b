/*
 * fuse_floor MOUNTPOINT: the floor FUSE itself sets for a metadata
 * workload and for sequential I/O.  A bare FUSE daemon (libfuse3 low-level
 * API, the same multi-threaded loop as intrfs) that keeps its whole
 * namespace in memory and answers every request at once: no server, no
 * RPC, no region.  It caches as intrfs does by default (entries and
 * directories 30 s, files' attributes 3 s, negative entries 30 s), so the
 * kernel sends it the same requests.  meta_bench on it measures what FUSE
 * costs (the kernel, the /dev/fuse round trips, libfuse); the bare-RPC
 * floor measures what the server costs; intrfs is held to their sum.
 *
 * Its files have a size and no bytes: a write keeps none of its data (it
 * only moves the file's end), a read answers zeros.  It asks INIT for what
 * intrfs asks (1 MiB writes and readahead requests, 16 in the background,
 * asynchronous reads, no writeback cache), so dd on it moves its data
 * through FUSE as dd on intrfs does, and the CPU that takes is what FUSE
 * alone costs a GiB.  Runs in the foreground until unmounted.
 */
#include "floor_serve.h"
#include "fuse_wants.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define ENTRY_S 30.0
#define FILE_ATTR_S 3.0
#define DIR_ATTR_S 30.0
#define HASH_BITS 16
#define HASH_SIZE (1u << HASH_BITS)

struct node {
	fuse_ino_t ino, parent;
	char *name; /* NULL once removed */
	struct stat st;
	fuse_ino_t *kids; /* directories: children, 0 for a removed one */
	size_t nkids, cap;
	struct node *hnext; /* on the (parent, name) hash chain */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct node **nodes; /* by inode number */
static size_t nnodes, nodes_cap;
static struct node *hash[HASH_SIZE];

static unsigned hash_of(fuse_ino_t parent, const char *name)
{
	unsigned h = (unsigned)parent * 2654435761u;

	while (*name)
		h = h * 31 + (unsigned char)*name++;
	return h & (HASH_SIZE - 1);
}

static struct node *find(fuse_ino_t parent, const char *name)
{
	for (struct node *n = hash[hash_of(parent, name)]; n; n = n->hnext)
		if (n->parent == parent && n->name && !strcmp(n->name, name))
			return n;
	return NULL;
}

static struct node *get(fuse_ino_t ino)
{
	return ino < nnodes ? nodes[ino] : NULL;
}

static void unhash(struct node *n)
{
	struct node **p = &hash[hash_of(n->parent, n->name)];

	while (*p != n)
		p = &(*p)->hnext;
	*p = n->hnext;
}

static void kid_remove(struct node *dir, fuse_ino_t ino)
{
	for (size_t i = 0; i < dir->nkids; i++)
		if (dir->kids[i] == ino)
			dir->kids[i] = 0;
}

static int kid_add(struct node *dir, fuse_ino_t ino)
{
	if (dir->nkids == dir->cap) {
		size_t cap = dir->cap ? dir->cap * 2 : 16;
		fuse_ino_t *k = realloc(dir->kids, cap * sizeof(*k));

		if (!k)
			return ENOMEM;
		dir->kids = k;
		dir->cap = cap;
	}
	dir->kids[dir->nkids++] = ino;
	return 0;
}

/* A new node name in parent; 0 or an errno. */
static int make(fuse_ino_t parent, const char *name, mode_t mode,
		const struct fuse_ctx *ctx, struct node **out)
{
	struct node *dir = get(parent), *n;
	struct timespec now;

	if (!dir || !S_ISDIR(dir->st.st_mode))
		return ENOENT;
	if (find(parent, name))
		return EEXIST;
	if (nnodes == nodes_cap) {
		size_t cap = nodes_cap ? nodes_cap * 2 : 1024;
		struct node **t = realloc(nodes, cap * sizeof(*t));

		if (!t)
			return ENOMEM;
		nodes = t;
		nodes_cap = cap;
	}
	n = calloc(1, sizeof(*n));
	if (!n || !(n->name = strdup(name)) || kid_add(dir, nnodes)) {
		if (n)
			free(n->name);
		free(n);
		return ENOMEM;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	n->ino = nnodes;
	n->parent = parent;
	n->st.st_ino = n->ino;
	n->st.st_mode = mode;
	n->st.st_nlink = S_ISDIR(mode) ? 2 : 1;
	n->st.st_uid = ctx ? ctx->uid : 0;
	n->st.st_gid = ctx ? ctx->gid : 0;
	n->st.st_atim = n->st.st_mtim = n->st.st_ctim = now;
	dir->st.st_mtim = dir->st.st_ctim = now;
	nodes[nnodes++] = n;
	n->hnext = hash[hash_of(parent, name)];
	hash[hash_of(parent, name)] = n;
	*out = n;
	return 0;
}

static void entry_of(const struct node *n, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	if (!n) {
		e->entry_timeout = ENTRY_S; /* a negative entry */
		return;
	}
	e->ino = n->ino;
	e->attr = n->st;
	e->entry_timeout = ENTRY_S;
	e->attr_timeout = S_ISDIR(n->st.st_mode) ? DIR_ATTR_S : FILE_ATTR_S;
}

static void ff_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;

	pthread_mutex_lock(&lock);
	entry_of(find(parent, name), &e);
	pthread_mutex_unlock(&lock);
	fuse_reply_entry(req, &e);
}

static void ff_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct node *n;
	struct stat st;

	(void)fi;
	pthread_mutex_lock(&lock);
	n = get(ino);
	if (n)
		st = n->st;
	pthread_mutex_unlock(&lock);
	if (!n)
		fuse_reply_err(req, ENOENT);
	else
		fuse_reply_attr(req, &st,
				S_ISDIR(st.st_mode) ? DIR_ATTR_S : FILE_ATTR_S);
}

static void ff_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct node *n;
	struct stat st;

	(void)fi;
	pthread_mutex_lock(&lock);
	n = get(ino);
	if (n) {
		if (to_set & FUSE_SET_ATTR_MODE)
			n->st.st_mode = (n->st.st_mode & S_IFMT) |
					(attr->st_mode & 07777);
		if (to_set & FUSE_SET_ATTR_SIZE)
			n->st.st_size = attr->st_size;
		if (to_set & FUSE_SET_ATTR_MTIME)
			n->st.st_mtim = attr->st_mtim;
		st = n->st;
	}
	pthread_mutex_unlock(&lock);
	if (!n)
		fuse_reply_err(req, ENOENT);
	else
		fuse_reply_attr(req, &st, FILE_ATTR_S);
}

/*
 * Makes parent/name of mode and answers the request: the entry (create's
 * with its open) or the error.
 */
static void make_reply(fuse_req_t req, fuse_ino_t parent, const char *name,
		       mode_t mode, struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	struct node *n;
	int rc;

	pthread_mutex_lock(&lock);
	rc = make(parent, name, mode, fuse_req_ctx(req), &n);
	if (rc == 0)
		entry_of(n, &e);
	pthread_mutex_unlock(&lock);
	if (rc)
		fuse_reply_err(req, rc);
	else if (fi)
		fuse_reply_create(req, &e, fi);
	else
		fuse_reply_entry(req, &e);
}

static void ff_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	make_reply(req, parent, name, S_IFREG | (mode & 07777), fi);
}

static void ff_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	make_reply(req, parent, name, S_IFDIR | (mode & 07777), NULL);
}

/* Removes parent/name (a directory when dir); 0 or an errno. */
static int drop(fuse_ino_t parent, const char *name, bool dir)
{
	struct node *n = find(parent, name);

	if (!n)
		return ENOENT;
	if (dir != S_ISDIR(n->st.st_mode))
		return dir ? ENOTDIR : EISDIR;
	if (dir)
		for (size_t i = 0; i < n->nkids; i++)
			if (n->kids[i])
				return ENOTEMPTY;
	unhash(n);
	kid_remove(get(parent), n->ino);
	free(n->name);
	n->name = NULL; /* the inode stays for the kernel's forget */
	return 0;
}

static void drop_reply(fuse_req_t req, fuse_ino_t parent, const char *name,
		       bool dir)
{
	int rc;

	pthread_mutex_lock(&lock);
	rc = drop(parent, name, dir);
	pthread_mutex_unlock(&lock);
	fuse_reply_err(req, rc);
}

static void ff_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	drop_reply(req, parent, name, false);
}

static void ff_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	drop_reply(req, parent, name, true);
}

static void ff_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname, unsigned flags)
{
	struct node *n, *to;
	char *copy;
	int rc = 0;

	pthread_mutex_lock(&lock);
	n = find(parent, name);
	to = find(newparent, newname);
	copy = strdup(newname);
	if (flags)
		rc = EINVAL;
	else if (!n || !get(newparent))
		rc = ENOENT;
	else if (!copy)
		rc = ENOMEM;
	else if (to && to != n)
		rc = drop(newparent, newname, S_ISDIR(to->st.st_mode));
	if (rc == 0 && n != to) {
		unhash(n);
		kid_remove(get(parent), n->ino);
		rc = kid_add(get(newparent), n->ino);
		free(n->name);
		n->name = copy;
		copy = NULL;
		n->parent = newparent;
		n->hnext = hash[hash_of(newparent, newname)];
		hash[hash_of(newparent, newname)] = n;
	}
	pthread_mutex_unlock(&lock);
	free(copy);
	fuse_reply_err(req, rc);
}

static void ff_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	fuse_reply_open(req, fi);
}

static void ff_ok(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

#define MAX_IO NC_MAX_IO

/* What intrfs's init asks (fuse_wants.h), nothing more. */
static void ff_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	intrfs_fuse_wants(conn);
}

/* Zeros up to the file's end. */
static void ff_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	static const char zeros[MAX_IO];
	struct node *n;
	off_t end = 0;

	(void)fi;
	pthread_mutex_lock(&lock);
	n = get(ino);
	if (n)
		end = n->st.st_size;
	pthread_mutex_unlock(&lock);
	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (size > sizeof(zeros))
		size = sizeof(zeros);
	if (off >= end)
		size = 0;
	else if ((off_t)size > end - off)
		size = (size_t)(end - off);
	fuse_reply_buf(req, zeros, size);
}

/*
 * The bytes reach the daemon as they reach intrfs's, then are dropped; the
 * file's end moves past them.  Where libfuse read the request into its
 * buffer they are there already; where it spliced it into a pipe they are
 * read out of the pipe (as intrfs reads them into the buffer that keeps
 * them), which is the least a daemon must do to have them.
 */
static void ff_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in,
			 off_t off, struct fuse_file_info *fi)
{
	static __thread char *scratch;
	size_t size = fuse_buf_size(in);
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(size);
	struct node *n;

	(void)fi;
	if (in->buf[0].flags & FUSE_BUF_IS_FD) {
		if (!scratch)
			scratch = malloc(NC_MAX_IO);
		if (!scratch || size > NC_MAX_IO) {
			fuse_reply_err(req, !scratch ? ENOMEM : EINVAL);
			return;
		}
		dst.buf[0].mem = scratch;
		if (fuse_buf_copy(&dst, in, 0) != (ssize_t)size) {
			fuse_reply_err(req, EIO);
			return;
		}
	}
	pthread_mutex_lock(&lock);
	n = get(ino);
	if (n && off + (off_t)size > n->st.st_size)
		n->st.st_size = off + (off_t)size;
	pthread_mutex_unlock(&lock);
	if (!n)
		fuse_reply_err(req, ENOENT);
	else
		fuse_reply_write(req, size);
}

static void ff_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	(void)datasync;
	ff_ok(req, ino, fi);
}

static void ff_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	(void)ino;
	(void)nlookup;
	fuse_reply_none(req);
}

/* Entries of ino from offset off (an index into its children, +1). */
static void readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, bool plus)
{
	char *buf = malloc(size);
	size_t used = 0;
	struct node *dir;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&lock);
	dir = get(ino);
	for (size_t i = (size_t)off; dir && i < dir->nkids; i++) {
		struct node *n = get(dir->kids[i]);
		struct fuse_entry_param e;
		size_t len;

		if (!n || !n->name)
			continue;
		entry_of(n, &e);
		len = plus ? fuse_add_direntry_plus(req, buf + used,
						    size - used, n->name, &e,
						    (off_t)i + 1) :
			     fuse_add_direntry(req, buf + used, size - used,
					       n->name, &e.attr, (off_t)i + 1);
		if (len > size - used)
			break;
		used += len;
	}
	pthread_mutex_unlock(&lock);
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void ff_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	readdir_common(req, ino, size, off, false);
}

static void ff_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	readdir_common(req, ino, size, off, true);
}

static const struct fuse_lowlevel_ops ops = {
	.init = ff_init,
	.lookup = ff_lookup,
	.forget = ff_forget,
	.getattr = ff_getattr,
	.setattr = ff_setattr,
	.create = ff_create,
	.mkdir = ff_mkdir,
	.unlink = ff_unlink,
	.rmdir = ff_rmdir,
	.rename = ff_rename,
	.open = ff_open,
	.read = ff_read,
	.write_buf = ff_write_buf,
	.fsync = ff_fsync,
	.flush = ff_ok,
	.release = ff_ok,
	.opendir = ff_open,
	.readdir = ff_readdir,
	.readdirplus = ff_readdirplus,
	.releasedir = ff_ok,
};

int main(int argc, char **argv)
{
	struct node *root;

	if (argc != 2) {
		fprintf(stderr, "usage: fuse_floor MOUNTPOINT\n");
		return 2;
	}
	/* Inode 0 is no inode; 1 is the root. */
	nodes = calloc(1024, sizeof(*nodes));
	root = calloc(1, sizeof(*root));
	if (!nodes || !root)
		return 1;
	nodes_cap = 1024;
	root->ino = FUSE_ROOT_ID;
	root->name = strdup("/");
	root->st.st_ino = FUSE_ROOT_ID;
	root->st.st_mode = S_IFDIR | 0777;
	root->st.st_nlink = 2;
	nodes[FUSE_ROOT_ID] = root;
	nnodes = FUSE_ROOT_ID + 1;
	/* intrfs's loop: 8 idle threads. */
	return floor_serve(argv[0], argv[1], &ops, sizeof(ops), 8);
}
