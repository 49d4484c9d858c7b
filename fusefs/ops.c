/*
 * The FUSE operations.  Each has three parts: the libfuse handler (on a
 * session thread: copy the arguments into a job, submit it, return), a run
 * function (on a worker, inside the job's task and the mount mode's region:
 * the NFS calls) and a reply function (after the region: answer FUSE).
 * Forget, and a flush or release with nothing to do, are answered on the
 * session thread; a write is answered from inside its run (write-behind,
 * below).
 *
 * Operations that make several NFS calls for one request (a large write
 * split into WRITEs, a commit that must resend, create with a verifier and
 * its SETATTR, rename with RENAME_NOREPLACE, link and its LOOKUP) run them in
 * a region of their own, nested inside the request's, inside which the
 * transport's record-send region nests in turn.
 *
 * Writes go UNSTABLE and are kept (node->dirty) until a COMMIT says the
 * server has them on stable storage: at fsync, at flush (so close() reports
 * errors), and when a file's uncommitted data passes wbuf= MiB (or the
 * mount's, four times that).  A write whose verifier differs from the
 * COMMIT's was lost when the server restarted: it is sent again, FILE_SYNC.
 *
 * What the Linux NFS client does beyond the protocol lives beside: the
 * access cache and entry timeouts (access.c) answer open, opendir, access
 * and truncate by path; unlink and rename of files still open go through
 * silly rename (silly.c); open(O_TRUNC) truncates in the open; and the
 * kernel's clearing of setuid/setgid on a write by another than the owner
 * is done with the daemon's credentials (kills_priv()).
 */
#include "fusefs_i.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define FS(req) ((struct intrfs *)fuse_req_userdata(req))

/* Conversions. */

static void publish_sync_state(struct node *n);
static void open_refused(struct job *j, struct node *n);
static int wait_sent(struct node *n, uint64_t off, size_t len);
static bool writes_on_way(struct node *n);

void attr_to_stat(const struct nc_attr *a, struct stat *st)
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

static double attr_timeout(const struct intrfs *fs, mode_t mode)
{
	return S_ISDIR(mode) ? fs->o.acdirmin : fs->o.acregmin;
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
	pthread_mutex_unlock(&fs->nodes_lock);
	/* Unlinked while open: its hidden name is not a link to count. */
	if (silly && st->st_nlink > 0)
		st->st_nlink--;
}

/*
 * Makes the FUSE entry for name in parent, which the server gave a handle
 * for.  How long the kernel may keep it depends on who may search parent
 * (entry_timeout()).
 */
static int fill_entry(struct intrfs *fs, struct node *parent, const char *name,
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

static struct nc_fh *fh_of(struct job *j, fuse_ino_t ino)
{
	return &node_of(j->fs, ino)->fh;
}

/*
 * j->entry for a name the server just gave a handle for.  When writes to
 * that file are still on their way (write-behind) the size it gave may not
 * have them yet: wait for them and ask again.
 */
static int job_entry(struct job *j, struct node *parent, const char *name,
		     const struct nc_entry *e)
{
	struct nc_attr a;
	struct node *n;
	int rc = fill_entry(j->fs, parent, name, e, &j->entry);

	if (rc || !writes_on_way(n = node_of(j->fs, j->entry.ino)))
		return rc;
	rc = wait_sent(n, 0, 0);
	if (rc == 0)
		rc = nc_getattr(j->fs->nc, &j->cred, &e->fh, &a);
	if (rc == 0)
		node_stat(j->fs, n, &a, &j->entry.attr);
	else
		node_forget(j->fs, j->entry.ino, 1);
	return rc;
}

static void reply_entry(struct job *j)
{
	fuse_reply_entry(j->req, &j->entry);
}

static void reply_attr(struct job *j)
{
	fuse_reply_attr(j->req, &j->st, attr_timeout(j->fs, j->st.st_mode));
}

static void reply_ok(struct job *j)
{
	fuse_reply_err(j->req, 0);
}

static void reply_buf(struct job *j)
{
	fuse_reply_buf(j->req, j->buf, j->out_len);
}

static void reply_open(struct job *j)
{
	struct node *n = node_of(j->fs, j->ino);

	node_open(j->fs, n);
	if (fuse_reply_open(j->req, &j->fi) == -ENOENT)
		open_refused(j, n);
}

/* Submits j, or fails it when copying its names failed. */
static void submit(struct job *j, bool ok)
{
	if (!ok)
		job_fail(j, ENOMEM);
	else
		job_submit(j);
}

#define NEW_JOB(req, opname, runfn, replyfn)                                   \
	struct job *j = job_new(FS(req), (req), (opname), (runfn), (replyfn)); \
	if (!j) {                                                              \
		fuse_reply_err((req), ENOMEM);                                 \
		return;                                                        \
	}

static bool copy_fi(struct job *j, const struct fuse_file_info *fi)
{
	if (fi) {
		j->fi = *fi;
		j->has_fi = true;
	}
	return true;
}

/* init and destroy */

/*
 * Readahead as Linux NFS sizes it, 15 READs of rsize: the kernel gives a
 * FUSE mount 128 KiB, which keeps a reader waiting on one round trip after
 * another.  The window is the mount's bdi (/sys/class/bdi/MAJ:MIN), and
 * INIT's reply sets it too, so this runs once INIT is through: a stat of
 * the mount point waits for that, and our session threads answer it.
 * Best effort: only root may write there.
 */
#define NFS_MAX_READAHEAD 15

static void *raise_readahead(void *arg)
{
	struct intrfs *fs = arg;
	char path[96], val[32];
	struct stat st;
	int fd, len;

	if (stat(fs->mountpoint, &st) < 0)
		return NULL;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb",
		 major(st.st_dev), minor(st.st_dev));
	len = snprintf(val, sizeof(val), "%u",
		       NFS_MAX_READAHEAD * (nc_client_rsize(fs->nc) / 1024));
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (write(fd, val, (size_t)len) != len)
		fprintf(stderr,
			"intrfs: could not set readahead to %s KiB: "
			"%s\n",
			val, strerror(errno));
	close(fd);
	return NULL;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct intrfs *fs = userdata;
	pthread_attr_t attr;
	pthread_t th;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, raise_readahead, fs) != 0)
		fprintf(stderr, "intrfs: readahead left at the kernel's "
				"default\n");
	pthread_attr_destroy(&attr);
	/* Big requests: 1 MiB reads and writes, several in flight. */
	conn->max_write = NC_MAX_IO;
	conn->max_readahead = NC_MAX_IO;
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	/*
	 * Asked for, as the file system clears setuid and setgid itself,
	 * but libfuse 3.14 does not pass it on: kills_priv() takes the
	 * kernel's SETATTR instead.  open(O_TRUNC) truncates in the open
	 * (run_open).
	 */
	if (conn->capable & FUSE_CAP_HANDLE_KILLPRIV)
		conn->want |= FUSE_CAP_HANDLE_KILLPRIV;
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	/* The page cache would hide writes from the server's errors. */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
}

/* lookup, forget */

static int run_lookup(struct job *j)
{
	struct node *dir = node_of(j->fs, j->ino);
	struct nc_entry e;
	double neg;
	int rc = nc_lookup(j->fs->nc, &j->cred, &dir->fh, j->name, &e);

	if (rc == -ENOENT &&
	    (neg = entry_timeout(j->fs, dir, j->name, true)) > 0) {
		/* A negative entry the kernel may cache. */
		memset(&j->entry, 0, sizeof(j->entry));
		j->entry.entry_timeout = neg;
		return 0;
	}
	return rc ? rc : job_entry(j, dir, j->name, &e);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	NEW_JOB(req, "lookup", run_lookup, reply_entry);
	j->ino = parent;
	j->name = strdup(name);
	submit(j, j->name != NULL);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	node_forget(FS(req), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		node_forget(FS(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

/* getattr, setattr */

static int run_getattr(struct job *j)
{
	struct node *n = node_of(j->fs, j->ino);
	struct nc_attr a;
	int rc = wait_sent(n, 0, 0);

	if (rc == 0)
		rc = nc_getattr(j->fs->nc, &j->cred, &n->fh, &a);
	if (rc == 0)
		node_stat(j->fs, n, &a, &j->st);
	return rc;
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	NEW_JOB(req, "getattr", run_getattr, reply_attr);
	(void)fi;
	j->ino = ino;
	submit(j, true);
}

/* Drops what is kept of writes at or past size (a truncate). */
static void trim_dirty(struct node *n, uint64_t size)
{
	struct extent **p = &n->dirty;

	while (*p) {
		struct extent *e = *p;

		if (e->off >= size) {
			*p = e->next;
			n->dirty_bytes -= e->len;
			buf_free(e);
			continue;
		}
		if (e->off + e->len > size) {
			n->dirty_bytes -= e->off + e->len - size;
			e->len = (size_t)(size - e->off);
		}
		p = &e->next;
	}
	n->dirty_tail = &n->dirty;
	while (*n->dirty_tail)
		n->dirty_tail = &(*n->dirty_tail)->next;
}

/*
 * SETATTR with a new size.  A truncate must not be undone by a write still
 * on its way or by a later resend of old data, so no COMMIT holds extents
 * meanwhile (clock), the writes on their way are waited for, and what is
 * kept past the new size is dropped.
 */
static int truncate_node(struct job *j, struct node *n,
			 const struct nc_sattr *sa, struct nc_attr *a)
{
	int rc = task_mutex_lock(&n->clock, TASK_INTERRUPTIBLE, TASK_FOREVER);

	if (rc)
		return rc;
	rc = wait_sent(n, 0, 0);
	if (rc == 0)
		rc = nc_setattr(j->fs->nc, &j->cred, &n->fh, sa, a);
	if (rc == 0) {
		task_mutex_lock_nofail(&n->wlock);
		trim_dirty(n, sa->size);
		publish_sync_state(n);
		task_mutex_unlock(&n->wlock);
	}
	task_mutex_unlock(&n->clock);
	return rc;
}

/*
 * Setuid and setgid on a write, truncate or chown by someone else than the
 * owner.  The kernel clears the bits with its own authority; a FUSE mount
 * asks the file system to, with HANDLE_KILLPRIV in INIT, which libfuse
 * 3.14 does not pass on: so the kernel sends the writer's SETATTR of the
 * mode without them, which the server refuses a writer who does not own
 * the file (and, on an atomic O_TRUNC open, drops it).  The daemon does
 * the kernel's part here: a SETATTR that only clears what the kernel
 * clears, from a caller who may write the file and is not in chmod(2), is
 * made with the daemon's own credentials.
 */
static bool in_group(const struct nc_cred *cr, uint32_t gid)
{
	if (cr->gid == gid)
		return true;
	for (unsigned i = 0; i < cr->ngroups; i++)
		if (cr->groups[i] == gid)
			return true;
	return false;
}

/*
 * The bits a write or truncate by cr clears, as the kernel decides it
 * (setattr_should_drop_suidgid()): setuid always, setgid with group
 * execute, or when cr is not in the file's group.
 */
static mode_t priv_bits(const struct nc_cred *cr, mode_t mode, uint32_t gid)
{
	mode_t kill = mode & S_ISUID;

	if ((mode & S_ISGID) && ((mode & S_IXGRP) || !in_group(cr, gid)))
		kill |= S_ISGID;
	return kill;
}

/*
 * Whether sa only clears setuid/setgid bits of n, for someone else than
 * its owner, and not in chmod(2): the kernel's clearing.
 */
static bool kills_priv(struct job *j, struct node *n, const struct nc_sattr *sa)
{
	mode_t cur, gone;
	uid_t owner;

	pthread_mutex_lock(&j->fs->nodes_lock);
	cur = n->mode & 07777;
	owner = n->uid;
	pthread_mutex_unlock(&j->fs->nodes_lock);
	gone = cur & ~sa->mode;
	return (sa->set & NC_SET_MODE) &&
	       !(sa->set & (NC_SET_UID | NC_SET_GID)) && j->cred.uid != 0 &&
	       j->cred.uid != owner && gone &&
	       (gone & ~(mode_t)(S_ISUID | S_ISGID)) == 0 &&
	       (sa->mode & ~cur) == 0 && !caller_in_chmod(j->tid);
}

/* Sets n's mode to mode as the daemon; a is the result. */
static int set_mode_as_daemon(struct job *j, struct node *n, mode_t mode,
			      struct nc_attr *a)
{
	struct nc_sattr sa = { .set = NC_SET_MODE, .mode = mode & 07777 };
	struct nc_cred self;

	nc_cred_self(&self);
	return nc_setattr(j->fs->nc, &self, &n->fh, &sa, a);
}

static int run_setattr(struct job *j)
{
	struct node *n = node_of(j->fs, j->ino);
	struct nc_sattr sa = { 0 };
	struct nc_attr a;
	int rc;

	if (j->to_set & FUSE_SET_ATTR_MODE) {
		sa.set |= NC_SET_MODE;
		sa.mode = j->attr.st_mode & 07777;
	}
	if (j->to_set & FUSE_SET_ATTR_UID) {
		sa.set |= NC_SET_UID;
		sa.uid = j->attr.st_uid;
	}
	if (j->to_set & FUSE_SET_ATTR_GID) {
		sa.set |= NC_SET_GID;
		sa.gid = j->attr.st_gid;
	}
	if (j->to_set & FUSE_SET_ATTR_SIZE) {
		sa.set |= NC_SET_SIZE;
		sa.size = (uint64_t)j->attr.st_size;
	}
	if (j->to_set & FUSE_SET_ATTR_ATIME_NOW) {
		sa.set |= NC_SET_ATIME_NOW;
	} else if (j->to_set & FUSE_SET_ATTR_ATIME) {
		sa.set |= NC_SET_ATIME;
		sa.atime = j->attr.st_atim;
	}
	if (j->to_set & FUSE_SET_ATTR_MTIME_NOW) {
		sa.set |= NC_SET_MTIME_NOW;
	} else if (j->to_set & FUSE_SET_ATTR_MTIME) {
		sa.set |= NC_SET_MTIME;
		sa.mtime = j->attr.st_mtim;
	}
	if (kills_priv(j, n, &sa)) {
		/* The writer's part as the writer, the kernel's as us. */
		mode_t mode = sa.mode;

		rc = access_check(j, n, NC_ACCESS_MODIFY);
		if (rc)
			return rc == -EACCES ? -EPERM : rc;
		sa.set &= ~(unsigned)NC_SET_MODE;
		FS_REGION_BEGIN(j->fs, "setattr: then clear setuid/setgid");
		rc = sa.set & NC_SET_SIZE ? truncate_node(j, n, &sa, &a) :
		     sa.set ? nc_setattr(j->fs->nc, &j->cred, &n->fh, &sa, &a) :
			      0;
		if (rc == 0)
			rc = set_mode_as_daemon(j, n, mode, &a);
		FS_REGION_END(j->fs);
	} else if (sa.set & NC_SET_SIZE) {
		/*
		 * truncate() by path needs write permission, which the
		 * server does not ask of a file's owner: Linux NFS asks
		 * ACCESS first.  ftruncate() comes with the open file (fi),
		 * whose open checked it.
		 */
		if (!j->has_fi) {
			rc = access_check(j, n, NC_ACCESS_MODIFY);
			if (rc)
				return rc;
		}
		rc = truncate_node(j, n, &sa, &a);
	} else {
		/* The attributes it returns include the size. */
		rc = wait_sent(n, 0, 0);
		if (rc == 0)
			rc = nc_setattr(j->fs->nc, &j->cred, &n->fh, &sa, &a);
	}
	if (rc == 0)
		node_stat(j->fs, n, &a, &j->st);
	return rc;
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	NEW_JOB(req, "setattr", run_setattr, reply_attr);
	copy_fi(j, fi);
	j->ino = ino;
	j->attr = *attr;
	j->to_set = to_set;
	submit(j, true);
}

/* readlink */

static int run_readlink(struct job *j)
{
	j->buf = buf_alloc(PATH_MAX + 1);
	if (!j->buf)
		return -ENOMEM;
	return nc_readlink(j->fs->nc, &j->cred, fh_of(j, j->ino), j->buf,
			   PATH_MAX + 1);
}

static void reply_readlink(struct job *j)
{
	fuse_reply_readlink(j->req, j->buf);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	NEW_JOB(req, "readlink", run_readlink, reply_readlink);
	j->ino = ino;
	submit(j, true);
}

/* mknod, mkdir, symlink, create */

static struct nc_sattr mode_sattr(mode_t mode)
{
	struct nc_sattr sa = { 0 };

	sa.set = NC_SET_MODE;
	sa.mode = mode & 07777;
	return sa;
}

static int run_mknod(struct job *j)
{
	struct nc_sattr sa = mode_sattr(j->mode);
	struct nc_entry e;
	int rc;

	if (S_ISREG(j->mode))
		rc = nc_create(j->fs->nc, &j->cred, fh_of(j, j->ino), j->name,
			       NC_CREATE_GUARDED, &sa, &e);
	else
		rc = nc_mknod(j->fs->nc, &j->cred, fh_of(j, j->ino), j->name,
			      j->mode & S_IFMT, major(j->rdev), minor(j->rdev),
			      &sa, &e);
	return rc ? rc : job_entry(j, node_of(j->fs, j->ino), j->name, &e);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	NEW_JOB(req, "mknod", run_mknod, reply_entry);
	j->ino = parent;
	j->mode = mode;
	j->rdev = rdev;
	j->name = strdup(name);
	submit(j, j->name != NULL);
}

static int run_mkdir(struct job *j)
{
	struct nc_sattr sa = mode_sattr(j->mode);
	struct nc_entry e;
	int rc = nc_mkdir(j->fs->nc, &j->cred, fh_of(j, j->ino), j->name, &sa,
			  &e);

	return rc ? rc : job_entry(j, node_of(j->fs, j->ino), j->name, &e);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	NEW_JOB(req, "mkdir", run_mkdir, reply_entry);
	j->ino = parent;
	j->mode = mode;
	j->name = strdup(name);
	submit(j, j->name != NULL);
}

static int run_symlink(struct job *j)
{
	struct nc_sattr sa = mode_sattr(0777);
	struct nc_entry e;
	int rc = nc_symlink(j->fs->nc, &j->cred, fh_of(j, j->ino), j->name,
			    j->name2, &sa, &e);

	return rc ? rc : job_entry(j, node_of(j->fs, j->ino), j->name, &e);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	NEW_JOB(req, "symlink", run_symlink, reply_entry);
	j->ino = parent;
	j->name = strdup(name);
	j->name2 = strdup(link);
	submit(j, j->name && j->name2);
}

static bool wants_direct_io(const struct intrfs *fs, int flags)
{
	/*
	 * Buffered reads go through readahead, which no signal interrupts:
	 * O_DIRECT and direct_io make reads interruptible requests.
	 */
	return fs->o.direct_io || (flags & O_DIRECT);
}

static int run_create(struct job *j)
{
	struct nc_sattr sa = mode_sattr(j->mode);
	enum nc_createmode how = NC_CREATE_UNCHECKED;
	struct nc_entry e;
	int rc;

	if (j->fi.flags & O_EXCL) {
		/*
		 * EXCLUSIVE: a verifier makes a retransmitted CREATE safe,
		 * and the attributes follow in a SETATTR: two calls, one
		 * region.
		 */
		how = NC_CREATE_EXCLUSIVE;
	} else if (j->fi.flags & O_TRUNC) {
		sa.set |= NC_SET_SIZE;
		sa.size = 0;
	}
	FS_REGION_BEGIN(j->fs, "create: CREATE, SETATTR");
	rc = nc_create(j->fs->nc, &j->cred, fh_of(j, j->ino), j->name, how, &sa,
		       &e);
	FS_REGION_END(j->fs);
	if (rc)
		return rc;
	rc = fill_entry(j->fs, node_of(j->fs, j->ino), j->name, &e, &j->entry);
	j->fi.direct_io = wants_direct_io(j->fs, j->fi.flags);
	j->fi.keep_cache = 0;
	return rc;
}

/*
 * The open is counted before it is answered (its release may come at
 * once); an answer the kernel refuses (the open was interrupted) means no
 * release will come.
 */
static void open_refused(struct job *j, struct node *n)
{
	char *silly = node_close(j->fs, n);

	if (silly) {
		task_enter(j->task);
		silly_remove(j, n, silly);
		task_leave(j->task);
	}
	node_unpin(j->fs, n);
}

static void reply_create(struct job *j)
{
	struct node *n = node_of(j->fs, j->entry.ino);

	node_open(j->fs, n);
	if (fuse_reply_create(j->req, &j->entry, &j->fi) == -ENOENT)
		open_refused(j, n);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	NEW_JOB(req, "create", run_create, reply_create);
	j->ino = parent;
	j->mode = mode;
	copy_fi(j, fi);
	j->name = strdup(name);
	submit(j, j->name != NULL);
}

/* unlink, rmdir, rename, link */

static int run_unlink(struct job *j)
{
	return silly_unlink(j, node_of(j->fs, j->ino), j->name);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	NEW_JOB(req, "unlink", run_unlink, reply_ok);
	j->ino = parent;
	j->name = strdup(name);
	submit(j, j->name != NULL);
}

static int run_rmdir(struct job *j)
{
	return nc_rmdir(j->fs->nc, &j->cred, fh_of(j, j->ino), j->name);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	NEW_JOB(req, "rmdir", run_rmdir, reply_ok);
	j->ino = parent;
	j->name = strdup(name);
	submit(j, j->name != NULL);
}

static int run_rename(struct job *j)
{
	struct nc_entry e;
	int rc = 0;

	if (j->flags & ~RENAME_NOREPLACE)
		return -EINVAL; /* RENAME_EXCHANGE has no NFSv3 call */
	FS_REGION_BEGIN(j->fs, "rename: LOOKUP, RENAME");
	if (j->flags & RENAME_NOREPLACE) {
		rc = nc_lookup(j->fs->nc, &j->cred, fh_of(j, j->ino2), j->name2,
			       &e);
		rc = rc == 0 ? -EEXIST : rc == -ENOENT ? 0 : rc;
	} else {
		/* A target still open here keeps its data under a hidden name. */
		rc = silly_rename_target(j, node_of(j->fs, j->ino), j->name,
					 node_of(j->fs, j->ino2), j->name2);
	}
	if (rc == 0)
		rc = nc_rename(j->fs->nc, &j->cred, fh_of(j, j->ino), j->name,
			       fh_of(j, j->ino2), j->name2);
	FS_REGION_END(j->fs);
	return rc;
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	NEW_JOB(req, "rename", run_rename, reply_ok);
	j->ino = parent;
	j->ino2 = newparent;
	j->flags = (int)flags;
	j->name = strdup(name);
	j->name2 = strdup(newname);
	submit(j, j->name && j->name2);
}

static int run_link(struct job *j)
{
	struct nc_entry e;
	int rc;

	FS_REGION_BEGIN(j->fs, "link: LINK, LOOKUP");
	rc = nc_link(j->fs->nc, &j->cred, fh_of(j, j->ino), fh_of(j, j->ino2),
		     j->name);
	if (rc == 0)
		rc = nc_lookup(j->fs->nc, &j->cred, fh_of(j, j->ino2), j->name,
			       &e);
	FS_REGION_END(j->fs);
	return rc ? rc : job_entry(j, node_of(j->fs, j->ino2), j->name, &e);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	NEW_JOB(req, "link", run_link, reply_entry);
	j->ino = ino;
	j->ino2 = newparent;
	j->name = strdup(newname);
	submit(j, j->name != NULL);
}

/* open, read */

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

/* Whether the caller may (the access cache, or ACCESS); -EACCES if not. */
static int check_access(struct job *j, struct node *n, int mask)
{
	uint32_t want = access_bits(n->type, mask);

	return want ? access_check(j, n, want) : 0;
}

static int run_open(struct job *j)
{
	struct node *n = node_of(j->fs, j->ino);
	int acc = j->fi.flags & O_ACCMODE;
	int mask = acc == O_RDONLY ? R_OK :
		   acc == O_WRONLY ? W_OK :
				     R_OK | W_OK;
	int rc;

	/* O_TRUNC needs write permission whatever the access mode, as on Linux. */
	if (j->fi.flags & O_TRUNC)
		mask |= W_OK;
	/* As Linux's NFS client does at open: the access cache, or ACCESS. */
	rc = check_access(j, n, mask);
	if (rc)
		return rc;
	if ((j->fi.flags & O_TRUNC) && S_ISREG(n->type)) {
		/*
		 * The mount has atomic O_TRUNC: the open truncates, and the
		 * times change as open(2) says they do.
		 */
		struct nc_sattr sa = { .set = NC_SET_SIZE | NC_SET_MTIME_NOW };
		struct nc_attr a;
		struct stat st;
		mode_t kill;

		FS_REGION_BEGIN(j->fs, "open: truncate (O_TRUNC)");
		rc = truncate_node(j, n, &sa, &a);
		/*
		 * A truncate by another than the owner clears setuid and
		 * setgid; the kernel drops that on an atomic O_TRUNC open.
		 */
		kill = rc == 0 && j->cred.uid && j->cred.uid != a.uid ?
			       priv_bits(&j->cred, a.mode, a.gid) :
			       0;
		if (kill)
			rc = set_mode_as_daemon(j, n, a.mode & 07777 & ~kill,
						&a);
		FS_REGION_END(j->fs);
		if (rc)
			return rc;
		node_stat(j->fs, n, &a, &st);
	}
	j->fi.direct_io = wants_direct_io(j->fs, j->fi.flags);
	/* Close-to-open: what another client wrote must be seen. */
	j->fi.keep_cache = 0;
	return 0;
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	NEW_JOB(req, "open", run_open, reply_open);
	j->ino = ino;
	copy_fi(j, fi);
	submit(j, true);
}

static int run_read(struct job *j)
{
	bool eof;
	int rc;

	j->buf = buf_alloc(j->size ? j->size : 1);
	if (!j->buf)
		return -ENOMEM;
	/* What was written there has been answered: it must be read back. */
	rc = wait_sent(node_of(j->fs, j->ino), (uint64_t)j->off,
		       j->size ? j->size : 1);
	if (rc)
		return rc;
	rc = nc_pread(j->fs->nc, &j->cred, fh_of(j, j->ino), (uint64_t)j->off,
		      j->size, j->buf, &j->out_len, &eof);
	return rc;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	NEW_JOB(req, "read", run_read, reply_buf);
	j->ino = ino;
	j->size = size;
	j->off = off;
	copy_fi(j, fi);
	submit(j, true);
}

/* write, flush, fsync, release */

/*
 * Write-behind, as an NFS client does it: a write is answered once its
 * WRITE calls have left whole (nc_pwrite_notify), while its job goes on in
 * the background to take the server's reply, keep the data until it is
 * committed, and COMMIT when a file's uncommitted data passes wbuf= MiB.
 * Until the answer the job is the caller's request: it waits in the
 * caller's task and region, and the record send, the seed's scenario, is
 * the caller's.  A WRITE that fails after its answer is reported by the
 * file's next write, flush or fsync.  O_DIRECT writes are answered after
 * the reply, as Linux NFS answers them.
 *
 * Order and bounds: a write waits while an earlier one to an overlapping
 * range is on its way (the server could apply them in either order) and
 * while WB_MAX_CALLS writes or WB_MAX_MIB MiB of a file are.  What reads
 * or reports the file's data or size waits for the writes on their way
 * first: a read for those that overlap it, getattr, setattr and lookup for
 * all, flush and fsync for every write job to finish with the file.
 */
#define WB_MAX_CALLS 16
#define WB_MAX_MIB 16

/*
 * Whether a flush has anything to do, for the session thread to read
 * without the lock: published at the end of each wlock section.
 */
static void publish_sync_state(struct node *n)
{
	atomic_store_explicit(&n->needs_sync,
			      n->dirty || n->write_error || n->busy ||
				      n->committing,
			      memory_order_release);
}

/*
 * A flush or release with nothing uncommitted, no write on its way and no
 * error to report is answered on the session thread: no task, no worker.
 * A write's job is busy on the node before the write is answered, so the
 * kernel's flush, which comes after the answers, sees it.
 */
static bool nothing_to_sync(fuse_req_t req, fuse_ino_t ino)
{
	struct node *n = node_of(FS(req), ino);

	return !atomic_load_explicit(&n->needs_sync, memory_order_acquire);
}

static bool writes_on_way(struct node *n)
{
	bool on;

	if (!atomic_load_explicit(&n->needs_sync, memory_order_acquire))
		return false;
	task_mutex_lock_nofail(&n->wlock);
	on = n->sending != NULL;
	task_mutex_unlock(&n->wlock);
	return on;
}

static bool overlaps(const struct extent *e, uint64_t off, size_t len)
{
	for (; e; e = e->next)
		if (len == 0 || (e->off < off + len && off < e->off + e->len))
			return true;
	return false;
}

/*
 * Waits until no write to [off, off+len) is on its way (len 0: none to
 * the file at all).  Interruptible: the region decides.
 */
static int wait_sent(struct node *n, uint64_t off, size_t len)
{
	int rc;

	if (!atomic_load_explicit(&n->needs_sync, memory_order_acquire))
		return 0;
	rc = task_mutex_lock(&n->wlock, TASK_INTERRUPTIBLE, TASK_FOREVER);
	if (rc)
		return rc;
	while (rc == 0 && overlaps(n->sending, off, len))
		rc = task_cond_wait(&n->wcond, &n->wlock, TASK_INTERRUPTIBLE,
				    TASK_FOREVER);
	task_mutex_unlock(&n->wlock); /* held again, whatever the wait said */
	return rc;
}

/* Waits until every write job has finished with the file. */
static int wait_writes(struct node *n)
{
	int rc;

	rc = task_mutex_lock(&n->wlock, TASK_INTERRUPTIBLE, TASK_FOREVER);
	if (rc)
		return rc;
	while (rc == 0 && n->busy)
		rc = task_cond_wait(&n->wcond, &n->wlock, TASK_INTERRUPTIBLE,
				    TASK_FOREVER);
	task_mutex_unlock(&n->wlock);
	return rc;
}

static void free_extents(struct extent *e)
{
	for (struct extent *next; e; e = next) {
		next = e->next;
		buf_free(e);
	}
}

static void dirty_append(struct node *n, struct extent *e)
{
	e->next = NULL;
	*n->dirty_tail = e;
	n->dirty_tail = &e->next;
	n->dirty_bytes += e->len;
}

/*
 * Extents whose WRITE got another verifier than the COMMIT's were lost
 * when the server restarted: they are sent again, FILE_SYNC, so that no
 * second commit is needed.
 */
static int resend_lost(struct job *j, struct node *n, struct extent *batch,
		       const unsigned char verf[8])
{
	struct nc_write_res res;
	size_t bytes = 0;
	int rc = 0;

	for (struct extent *e = batch; e; e = e->next)
		if (e->resend || memcmp(e->verf, verf, sizeof(e->verf)) != 0)
			bytes += e->len;
	if (!bytes)
		return 0;
	fprintf(stderr,
		"intrfs: server %s restarted (write verifier changed): "
		"resending %zu uncommitted bytes of file %" PRIu64 "\n",
		nc_client_server(j->fs->nc), bytes, n->fileid);
	for (struct extent *e = batch; e && rc == 0; e = e->next)
		if (e->resend || memcmp(e->verf, verf, sizeof(e->verf)) != 0)
			rc = nc_pwrite(j->fs->nc, &j->cred, &n->fh, e->off,
				       e->len, e->data, NC_FILE_SYNC, &res);
	return rc;
}

/*
 * COMMITs what has been written, and resends what the server lost.  The
 * extents are taken off the list for the call, so writes go on meanwhile;
 * on failure they go back, to be committed by a later flush.
 */
static int commit_dirty(struct job *j, struct node *n)
{
	unsigned char verf[8];
	struct extent *batch, **tail;
	size_t bytes;
	int rc;

	rc = task_mutex_lock(&n->clock, TASK_INTERRUPTIBLE, TASK_FOREVER);
	if (rc)
		return rc;
	task_mutex_lock_nofail(&n->wlock);
	batch = n->dirty;
	tail = n->dirty_tail;
	bytes = n->dirty_bytes;
	n->dirty = NULL;
	n->dirty_tail = &n->dirty;
	n->dirty_bytes = 0;
	n->committing = batch != NULL;
	publish_sync_state(n);
	task_mutex_unlock(&n->wlock);
	if (!batch) {
		task_mutex_unlock(&n->clock);
		return 0;
	}

	FS_REGION_BEGIN(j->fs, "commit: COMMIT, resend if the server lost it");
	rc = nc_commit(j->fs->nc, &j->cred, &n->fh, 0, 0, verf);
	if (rc == 0)
		rc = resend_lost(j, n, batch, verf);
	FS_REGION_END(j->fs);

	task_mutex_lock_nofail(&n->wlock);
	if (rc == 0) {
		free_extents(batch);
	} else {
		/* Back at the head: still to be committed. */
		*tail = n->dirty;
		if (!n->dirty)
			n->dirty_tail = tail;
		n->dirty = batch;
		n->dirty_bytes += bytes;
	}
	n->committing = false;
	task_cond_broadcast(&n->wcond);
	publish_sync_state(n);
	task_mutex_unlock(&n->wlock);
	task_mutex_unlock(&n->clock);
	return rc;
}

static void write_sent(void *arg)
{
	job_reply_early(arg);
}

/* Takes e off n->sending; called with wlock held. */
static void sending_remove(struct node *n, struct extent *e)
{
	for (struct extent **p = &n->sending; *p; p = &(*p)->next) {
		if (*p == e) {
			*p = e->next;
			break;
		}
	}
	n->nsending--;
	n->sending_bytes -= e->len;
}

static bool wb_full(const struct node *n, size_t len)
{
	return n->nsending &&
	       (n->nsending >= WB_MAX_CALLS ||
		n->sending_bytes + len > (size_t)WB_MAX_MIB << 20);
}

static int run_write(struct job *j)
{
	struct node *n = node_of(j->fs, j->ino);
	struct extent *e = (struct extent *)j->buf;
	struct nc_sent_notify sent = { write_sent, j };
	bool behind = !(j->fi.flags & O_DIRECT);
	struct nc_write_res res;
	bool commit;
	int rc;

	rc = task_mutex_lock(&n->wlock, TASK_INTERRUPTIBLE, TASK_FOREVER);
	if (rc)
		return rc;
	/* In order after overlapping writes, and not too many at once. */
	while (!n->write_error &&
	       (overlaps(n->sending, e->off, e->len) || wb_full(n, e->len))) {
		rc = task_cond_wait(&n->wcond, &n->wlock, TASK_INTERRUPTIBLE,
				    TASK_FOREVER);
		if (rc) {
			task_mutex_unlock(&n->wlock);
			return rc;
		}
	}
	/* A write that failed after its answer fails the next one. */
	if (n->write_error) {
		rc = n->write_error;
		task_mutex_unlock(&n->wlock);
		return rc;
	}
	j->buf = NULL;
	e->next = n->sending;
	n->sending = e;
	n->nsending++;
	n->sending_bytes += e->len;
	n->busy++;
	publish_sync_state(n);
	task_mutex_unlock(&n->wlock);

	FS_REGION_BEGIN(j->fs, "write: WRITE calls of one request");
	rc = nc_pwrite_notify(j->fs->nc, &j->cred, &n->fh, e->off, e->len,
			      e->data, NC_UNSTABLE, &res,
			      behind ? &sent : NULL);
	FS_REGION_END(j->fs);

	task_mutex_lock_nofail(&n->wlock);
	sending_remove(n, e);
	if (rc == 0 && res.committed != NC_FILE_SYNC) {
		/* Kept until committed. */
		memcpy(e->verf, res.verf, sizeof(e->verf));
		e->resend = res.verf_changed;
		dirty_append(n, e);
		e = NULL;
	}
	/*
	 * Its caller was told it went well: the file's next write, flush or
	 * fsync reports the failure.  Never an interruption, which was its
	 * caller's and was answered as EINTR (replied is false then).
	 */
	if (rc && rc != -EINTR && j->replied)
		n->write_error = rc;
	/*
	 * A file's uncommitted data is bounded by wbuf=, the mount's (with
	 * reads and writes on their way) by four times that: so is the
	 * daemon's memory, however many files are written.
	 */
	commit = rc == 0 && n->dirty_bytes &&
		 (n->dirty_bytes >= (size_t)j->fs->o.wbuf_mb << 20 ||
		  buf_busy_bytes() >= (size_t)j->fs->o.wbuf_mb << 22);
	task_cond_broadcast(&n->wcond);
	task_mutex_unlock(&n->wlock);
	buf_free(e);

	if (commit)
		rc = commit_dirty(j, n);

	task_mutex_lock_nofail(&n->wlock);
	if (rc && rc != -EINTR && j->replied && !n->write_error)
		n->write_error = rc;
	n->busy--;
	task_cond_broadcast(&n->wcond);
	publish_sync_state(n);
	task_mutex_unlock(&n->wlock);
	j->out_len = j->size;
	return rc;
}

static void reply_write(struct job *j)
{
	fuse_reply_write(j->req, j->out_len);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	NEW_JOB(req, "write", run_write, reply_write);
	struct extent *e = buf_alloc(sizeof(*e) + size);

	j->ino = ino;
	j->size = size;
	j->out_len = size;
	j->off = off;
	copy_fi(j, fi);
	if (e) {
		/* The request buffer is reused once this handler returns. */
		memset(e, 0, sizeof(*e));
		e->off = (uint64_t)off;
		e->len = size;
		memcpy(e->data, buf, size);
		j->buf = (char *)e;
	}
	submit(j, e != NULL);
}

/*
 * flush and fsync: everything written is on stable storage, or an error.
 * The error of a write that failed after its answer is reported once.
 */
static int run_sync(struct job *j)
{
	struct node *n = node_of(j->fs, j->ino);
	int rc;

	rc = wait_writes(n);
	if (rc == 0)
		rc = commit_dirty(j, n);
	if (rc)
		return rc;
	task_mutex_lock_nofail(&n->wlock);
	rc = n->write_error;
	n->write_error = 0;
	publish_sync_state(n);
	task_mutex_unlock(&n->wlock);
	return rc;
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (nothing_to_sync(req, ino)) {
		fuse_reply_err(req, 0);
		return;
	}
	NEW_JOB(req, "flush", run_sync, reply_ok);
	j->forced = true;
	j->ino = ino;
	copy_fi(j, fi);
	submit(j, true);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	NEW_JOB(req, "fsync", run_sync, reply_ok);
	(void)datasync;
	j->ino = ino;
	copy_fi(j, fi);
	submit(j, true);
}

static int run_release(struct job *j)
{
	struct node *n = node_of(j->fs, j->ino);
	/* flush came first; this catches writes from mmap and the like. */
	int rc = run_sync(j);

	if (rc && rc != -EINTR)
		fprintf(stderr, "intrfs: commit at release failed: %s\n",
			strerror(-rc));
	if (j->name) {
		/* The last close of a file unlinked while open. */
		silly_remove(j, n, j->name);
		j->name = NULL;
	}
	node_unpin(j->fs, n);
	return 0;
}

static void op_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct intrfs *fs = FS(req);
	struct node *n = node_of(fs, ino);
	/* Pinned until the release is done: a FORGET may come meanwhile. */
	char *silly = node_close(fs, n);
	struct job *j;

	if (!silly && nothing_to_sync(req, ino)) {
		fuse_reply_err(req, 0);
		node_unpin(fs, n);
		return;
	}
	j = job_new(fs, req, "release", run_release, reply_ok);
	if (!j) {
		fprintf(stderr, "intrfs: out of memory at release%s%s\n",
			silly ? ": left behind " : "", silly ? silly : "");
		fuse_reply_err(req, ENOMEM);
		free(silly);
		node_unpin(fs, n);
		return;
	}
	j->ino = ino;
	j->name = silly;
	copy_fi(j, fi);
	submit(j, true);
}

/* Directories. */

struct dirent_copy {
	char *name;
	uint64_t fileid, cookie;
	bool has_entry;
	struct nc_entry e;
};

struct dirhandle {
	struct dirent_copy *ents;
	size_t n, cap;
	bool loaded;
};

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

static void dir_clear(struct dirhandle *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->ents[i].name);
	d->n = 0;
	d->loaded = false;
}

/* Reads the whole directory once per pass (offset 0). */
static int dir_load(struct job *j, struct dirhandle *d, bool plus)
{
	unsigned char verf[8] = { 0 };
	uint64_t cookie = 0;
	bool eof = false;
	int rc = 0;

	dir_clear(d);
	FS_REGION_BEGIN(j->fs, "readdir: READDIRPLUS calls");
	while (!eof && rc == 0) {
		size_t before = d->n;

		rc = nc_readdir(j->fs->nc, &j->cred, fh_of(j, j->ino), cookie,
				verf, plus, collect, d, &eof);
		if (rc == 0 && d->n == before && !eof)
			rc = -EIO; /* no progress and no end: a bad server */
		if (rc == 0 && d->n > before)
			cookie = d->ents[d->n - 1].cookie;
	}
	FS_REGION_END(j->fs);
	d->loaded = rc == 0;
	return rc;
}

static int run_readdir_common(struct job *j, bool plus)
{
	struct dirhandle *d = (struct dirhandle *)(uintptr_t)j->fi.fh;
	size_t len = 0;
	int rc;

	if (j->off == 0 || !d->loaded) {
		rc = dir_load(j, d, plus);
		if (rc)
			return rc;
	}
	j->buf = buf_alloc(j->size);
	if (!j->buf)
		return -ENOMEM;
	for (size_t i = (size_t)j->off; i < d->n; i++) {
		struct dirent_copy *c = &d->ents[i];
		size_t need, left = j->size - len;
		bool dot = strcmp(c->name, ".") == 0 ||
			   strcmp(c->name, "..") == 0;

		if (!plus) {
			struct stat st = { 0 };

			st.st_ino = c->fileid;
			st.st_mode = c->has_entry ? c->e.attr.mode & S_IFMT : 0;
			need = fuse_add_direntry(j->req, j->buf + len, left,
						 c->name, &st, (off_t)i + 1);
		} else {
			struct fuse_entry_param e = { 0 };

			e.attr.st_ino = c->fileid;
			/* A node for each entry but . and .., counted once. */
			if (c->has_entry && !dot) {
				rc = fill_entry(j->fs, node_of(j->fs, j->ino),
						c->name, &c->e, &e);
				if (rc)
					return rc;
				/*
				 * The size may not have the writes on their
				 * way: the entry goes without attributes
				 * (nodeid 0), and the kernel asks later.
				 */
				if (writes_on_way(node_of(j->fs, e.ino))) {
					node_forget(j->fs, e.ino, 1);
					e.ino = 0;
					e.attr.st_mode = c->e.attr.mode &
							 S_IFMT;
				}
			} else if (c->has_entry) {
				e.attr.st_mode = c->e.attr.mode & S_IFMT;
			}
			need = fuse_add_direntry_plus(j->req, j->buf + len,
						      left, c->name, &e,
						      (off_t)i + 1);
			if (need > left && e.ino)
				node_forget(j->fs, e.ino, 1);
		}
		if (need > left)
			break;
		len += need;
	}
	j->out_len = len;
	return 0;
}

static int run_readdir(struct job *j)
{
	return run_readdir_common(j, false);
}

static int run_readdirplus(struct job *j)
{
	return run_readdir_common(j, true);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	NEW_JOB(req, "readdir", run_readdir, reply_buf);
	j->ino = ino;
	j->size = size;
	j->off = off;
	copy_fi(j, fi);
	submit(j, true);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	NEW_JOB(req, "readdirplus", run_readdirplus, reply_buf);
	j->ino = ino;
	j->size = size;
	j->off = off;
	copy_fi(j, fi);
	submit(j, true);
}

/* Reading a directory needs read permission on it, as on Linux. */
static int run_opendir(struct job *j)
{
	struct dirhandle *d;
	int rc = access_check(j, node_of(j->fs, j->ino), NC_ACCESS_READ);

	if (rc)
		return rc;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	j->fi.fh = (uint64_t)(uintptr_t)d;
	return 0;
}

static void reply_opendir(struct job *j)
{
	struct dirhandle *d = (struct dirhandle *)(uintptr_t)j->fi.fh;

	if (fuse_reply_open(j->req, &j->fi) == -ENOENT) {
		/* Interrupted: no releasedir will come. */
		free(d);
	}
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	NEW_JOB(req, "opendir", run_opendir, reply_opendir);
	j->ino = ino;
	copy_fi(j, fi);
	submit(j, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct dirhandle *d = (struct dirhandle *)(uintptr_t)fi->fh;

	(void)ino;
	dir_clear(d);
	free(d->ents);
	free(d);
	fuse_reply_err(req, 0);
}

/* statfs, access */

static int run_statfs(struct job *j)
{
	struct nc_fsstat fs;
	int rc = nc_fsstat(j->fs->nc, &j->cred, fh_of(j, j->ino), &fs);
	const unsigned long frsize = 4096;

	if (rc)
		return rc;
	memset(&j->stv, 0, sizeof(j->stv));
	j->stv.f_bsize = nc_client_wsize(j->fs->nc);
	j->stv.f_frsize = frsize;
	j->stv.f_blocks = fs.tbytes / frsize;
	j->stv.f_bfree = fs.fbytes / frsize;
	j->stv.f_bavail = fs.abytes / frsize;
	j->stv.f_files = fs.tfiles;
	j->stv.f_ffree = fs.ffiles;
	j->stv.f_favail = fs.afiles;
	j->stv.f_namemax = 255;
	return 0;
}

static void reply_statfs(struct job *j)
{
	fuse_reply_statfs(j->req, &j->stv);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	NEW_JOB(req, "statfs", run_statfs, reply_statfs);
	j->ino = ino;
	submit(j, true);
}

static int run_access(struct job *j)
{
	return check_access(j, node_of(j->fs, j->ino), j->flags);
}

static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	NEW_JOB(req, "access", run_access, reply_ok);
	j->ino = ino;
	j->flags = mask;
	submit(j, true);
}

const struct fuse_lowlevel_ops intrfs_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.statfs = op_statfs,
	.access = op_access,
	.create = op_create,
};
