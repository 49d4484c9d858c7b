/*
 * The FUSE operations: each turns a request into netclient calls and an
 * answer, and nothing more.  Each has three parts: the libfuse handler (on
 * a session thread: copy the arguments into a job and submit it), a run
 * function (inside the job's task and the mount mode's region: the NFS
 * calls; on the same session thread, or on a worker for writes,
 * workers.c) and a reply function (after the region: answer FUSE).  Forget, and a flush or release with nothing to do, are answered
 * on the session thread; a write is answered from inside its run, once its
 * WRITEs have left (write-behind).
 *
 * Operations that make several NFS calls for one request (create with a
 * verifier and its SETATTR, rename with RENAME_NOREPLACE, link and its
 * LOOKUP, a truncating open) run them in a region of their own, nested
 * inside the request's, inside which the transport's record-send region
 * nests in turn.
 *
 * What the Linux NFS client does beyond the protocol lives in files of its
 * own, which the operations call: write-behind (writeback.c), the
 * directory cache (dircache.c), the access cache and entry timeouts
 * (access.c), silly rename of files unlinked while open (silly.c), and the
 * clearing of setuid/setgid on a write by another than the owner
 * (killpriv.c).  open(O_TRUNC) truncates in the open.
 *
 * It owns no state and takes no lock of its own; a handler never waits
 * (the session loop must go on reading INTERRUPTs), and every answer goes
 * through fs_reply_err() or a fuse_reply_*() once.
 */
#include "fusefs_i.h"
#include "fuse_wants.h"

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

static void open_refused(struct job *j, struct node *n);

static struct nc_fh *fh_of(struct job *j, fuse_ino_t ino)
{
	return &node_of(j->fs, ino)->fh;
}

/* Whether j holds name in doubt itself (unsure.c): 1 or 0. */
static unsigned own_doubt(const struct job *j, const char *name)
{
	return (j->name_unsure && j->name == name) ||
	       (j->name2_unsure && j->name2 == name);
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
	int rc = node_entry(j->fs, parent, name, e, &j->entry);

	if (rc == 0 && unsure_name(j->fs, parent->ino, name, own_doubt(j, name),
				   j->unsure_gen))
		j->entry.entry_timeout = 0;
	if (rc || !wb_writes_on_way(n = node_of(j->fs, j->entry.ino)))
		return rc;
	rc = wb_wait_sent(j->fs, n, 0, 0);
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
	if (fuse_reply_entry(j->req, &j->entry) && j->entry.ino)
		node_kattr_unknown(j->fs, node_of(j->fs, j->entry.ino));
}

static void reply_attr(struct job *j)
{
	if (fuse_reply_attr(j->req, &j->st, attr_timeout(j->fs, j->st.st_mode)))
		node_kattr_unknown(j->fs, node_of(j->fs, j->ino));
}

static void reply_ok(struct job *j)
{
	fs_reply_err(j->req, 0);
}

static void reply_buf(struct job *j)
{
	fuse_reply_buf(j->req, j->buf, j->out_len);
}

static void reply_open(struct job *j)
{
	struct node *n = node_of(j->fs, j->ino);

	node_open(j->fs, n);
	/* What its locks are known by (locks_open()). */
	j->fi.fh = locks_open(j->fs);
	if (fuse_reply_open(j->req, &j->fi) == -ENOENT)
		open_refused(j, n);
}

/* Submits j, or fails it when copying its arguments failed. */
static void submit(struct job *j, bool ok)
{
	if (!ok)
		job_fail(j, -ENOMEM);
	else
		job_submit(j);
}

/*
 * A job for req (job_new()), or NULL when there is no memory for one; req
 * is answered ENOMEM then, and its handler returns.
 */
static struct job *new_job(fuse_req_t req, const char *op, job_run_fn run,
			   job_reply_fn reply)
{
	struct job *j = job_new(FS(req), req, op, run, reply);

	if (!j)
		fs_reply_err(req, -ENOMEM);
	return j;
}

static void copy_fi(struct job *j, const struct fuse_file_info *fi)
{
	if (fi) {
		j->fi = *fi;
		j->has_fi = true;
	}
}

/* init and destroy */

/*
 * libfuse splices a request into a pipe only where the pipe can hold the
 * biggest (max_write and a page of header, 2 MiB once rounded), and falls
 * back to copying without a word: say once why, for whoever reads the log
 * wondering where the CPU went.  F_SETPIPE_SZ past fs.pipe-max-size needs
 * CAP_SYS_RESOURCE.
 */
static void note_splice(const struct fuse_conn_info *conn)
{
	unsigned need = conn->max_write + 4096, pipe_size = 4096;
	unsigned long max = 0;
	int p[2], e = 0;
	FILE *f;

	if (!(conn->want & FUSE_CAP_SPLICE_READ) || pipe2(p, O_CLOEXEC) < 0)
		return;
	if (fcntl(p[0], F_SETPIPE_SZ, (int)need) < 0)
		e = errno;
	close(p[0]);
	close(p[1]);
	if (!e)
		return;
	f = fopen("/proc/sys/fs/pipe-max-size", "re");
	if (f) {
		if (fscanf(f, "%lu", &max) != 1)
			max = 0;
		fclose(f);
	}
	/* The kernel rounds a pipe's size up to a power of two pages. */
	while (pipe_size < need)
		pipe_size *= 2;
	fprintf(stderr,
		"intrfs: writes are copied from FUSE, not spliced: a pipe of "
		"%u bytes needs CAP_SYS_RESOURCE or fs.pipe-max-size >= "
		"%u (it is %lu): %s\n",
		need, pipe_size, max, strerror(e));
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct intrfs *fs = userdata;

	intrfs_fuse_wants(conn);
	note_splice(conn);
	/* libfuse refuses INIT unless this is what max_read= said. */
	if (fs->o.max_read)
		conn->max_read = fs->o.max_read;
	/*
	 * Asked for, as the file system clears setuid and setgid itself,
	 * but libfuse 3.14 does not pass it on: killpriv.c takes the
	 * kernel's SETATTR instead.  open(O_TRUNC) truncates in the open
	 * (run_open).
	 */
	if (conn->capable & FUSE_CAP_HANDLE_KILLPRIV)
		conn->want |= FUSE_CAP_HANDLE_KILLPRIV;
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	/* A caller's region may be declared on a directory too. */
	if (conn->capable & FUSE_CAP_IOCTL_DIR)
		conn->want |= FUSE_CAP_IOCTL_DIR;
	/*
	 * Locks go to the server's lock manager (locks.c) but for the kinds
	 * local_lock= or nolock keep in this kernel: without the capability
	 * the kernel takes them itself.
	 */
	if ((conn->capable & FUSE_CAP_POSIX_LOCKS) && !fs->o.nolock &&
	    !fs->o.local_posix)
		conn->want |= FUSE_CAP_POSIX_LOCKS;
	else
		conn->want &= ~FUSE_CAP_POSIX_LOCKS;
	if ((conn->capable & FUSE_CAP_FLOCK_LOCKS) && !fs->o.nolock &&
	    !fs->o.local_flock)
		conn->want |= FUSE_CAP_FLOCK_LOCKS;
	else
		conn->want &= ~FUSE_CAP_FLOCK_LOCKS;
	atomic_store_explicit(&fs->init_seen, true, memory_order_relaxed);
}

/* lookup, forget */

static int run_lookup(struct job *j)
{
	struct node *dir = node_of(j->fs, j->ino);
	struct nc_entry e;
	double neg;
	int rc = nc_lookup(j->fs->nc, &j->cred, &dir->fh, j->name, &e);

	if (rc == -ENOENT &&
	    (neg = entry_timeout(j->fs, dir, j->name, true)) > 0 &&
	    !unsure_name(j->fs, j->ino, j->name, 0, j->unsure_gen)) {
		/* A negative entry the kernel may cache. */
		memset(&j->entry, 0, sizeof(j->entry));
		j->entry.entry_timeout = neg;
		return 0;
	}
	return rc ? rc : job_entry(j, dir, j->name, &e);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct job *j = new_job(req, "lookup", run_lookup, reply_entry);

	if (!j)
		return;
	nfs_event(FS(req), VFSLOOKUP);
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
	int rc = wb_wait_sent(j->fs, n, 0, 0);

	if (rc == 0)
		rc = nc_getattr(j->fs->nc, &j->cred, &n->fh, &a);
	if (rc == 0)
		node_stat(j->fs, n, &a, &j->st);
	return rc;
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct job *j = new_job(req, "getattr", run_getattr, reply_attr);

	if (!j)
		return;
	nfs_event(FS(req), INODEREVALIDATE);
	(void)fi;
	j->ino = ino;
	submit(j, true);
}

/* The SETATTR that FUSE's attributes and to_set ask for. */
static struct nc_sattr sattr_of(const struct stat *attr, int to_set)
{
	struct nc_sattr sa = { 0 };

	if (to_set & FUSE_SET_ATTR_MODE) {
		sa.set |= NC_SET_MODE;
		sa.mode = attr->st_mode & 07777;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		sa.set |= NC_SET_UID;
		sa.uid = attr->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		sa.set |= NC_SET_GID;
		sa.gid = attr->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		sa.set |= NC_SET_SIZE;
		sa.size = (uint64_t)attr->st_size;
	}
	if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
		sa.set |= NC_SET_ATIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_ATIME) {
		sa.set |= NC_SET_ATIME;
		sa.atime = attr->st_atim;
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		sa.set |= NC_SET_MTIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		sa.set |= NC_SET_MTIME;
		sa.mtime = attr->st_mtim;
	}
	return sa;
}

static int run_setattr(struct job *j)
{
	struct node *n = node_of(j->fs, j->ino);
	struct nc_sattr sa = sattr_of(&j->attr, j->to_set);
	struct nc_attr a;
	int rc;

	if (killpriv_only(j, n, &sa)) {
		/* The writer's part as the writer, the kernel's as us. */
		mode_t mode = sa.mode;

		rc = access_check(j->fs, &j->cred, n, NC_ACCESS_MODIFY);
		if (rc)
			return rc == -EACCES ? -EPERM : rc;
		sa.set &= ~(unsigned)NC_SET_MODE;
		FS_REGION_BEGIN(j, "setattr: then clear setuid/setgid");
		rc = sa.set & NC_SET_SIZE ?
			     wb_truncate(JOB_ACTOR(j), n, &sa, &a) :
		     sa.set ? nc_setattr(j->fs->nc, &j->cred, &n->fh, &sa, &a) :
			      0;
		if (rc == 0)
			rc = killpriv_set_mode(j, n, mode, &a);
		FS_REGION_END(j);
	} else if (sa.set & NC_SET_SIZE) {
		/*
		 * truncate() by path needs write permission, which the
		 * server does not ask of a file's owner: Linux NFS asks
		 * ACCESS first.  ftruncate() comes with the open file (fi),
		 * whose open checked it.
		 */
		if (!j->has_fi) {
			rc = access_check(j->fs, &j->cred, n, NC_ACCESS_MODIFY);
			if (rc)
				return rc;
		}
		rc = wb_truncate(JOB_ACTOR(j), n, &sa, &a);
	} else {
		/* The attributes it returns include the size. */
		rc = wb_wait_sent(j->fs, n, 0, 0);
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
	struct job *j = new_job(req, "setattr", run_setattr, reply_attr);

	if (!j)
		return;
	nfs_event(FS(req), VFSSETATTR);
	if (to_set & FUSE_SET_ATTR_SIZE)
		nfs_event(FS(req), SETATTRTRUNC);
	copy_fi(j, fi);
	j->ino = ino;
	j->attr = *attr;
	j->to_set = to_set;
	submit(j, true);
}

/* readlink */

static int run_readlink(struct job *j)
{
	j->buf = buf_alloc(&j->fs->bufs, PATH_MAX + 1);
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
	struct job *j = new_job(req, "readlink", run_readlink, reply_readlink);

	if (!j)
		return;
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
	struct job *j = new_job(req, "mknod", run_mknod, reply_entry);

	if (!j)
		return;
	j->ino = parent;
	j->name_dir = parent;
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
	struct job *j = new_job(req, "mkdir", run_mkdir, reply_entry);

	if (!j)
		return;
	j->ino = parent;
	j->name_dir = parent;
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
	struct job *j = new_job(req, "symlink", run_symlink, reply_entry);

	if (!j)
		return;
	j->ino = parent;
	j->name_dir = parent;
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
	FS_REGION_BEGIN(j, "create: CREATE, SETATTR");
	rc = nc_create(j->fs->nc, &j->cred, fh_of(j, j->ino), j->name, how, &sa,
		       &e);
	FS_REGION_END(j);
	if (rc)
		return rc;
	rc = node_entry(j->fs, node_of(j->fs, j->ino), j->name, &e, &j->entry);
	if (rc == 0 && unsure_name(j->fs, j->ino, j->name,
				   own_doubt(j, j->name), j->unsure_gen))
		j->entry.entry_timeout = 0;
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
		region_task_enter(j->task);
		silly_remove(j->fs, n, silly);
		region_task_leave(j->task);
	}
	node_unpin(j->fs, n);
}

static void reply_create(struct job *j)
{
	struct node *n = node_of(j->fs, j->entry.ino);

	node_open(j->fs, n);
	j->fi.fh = locks_open(j->fs);
	if (fuse_reply_create(j->req, &j->entry, &j->fi) == -ENOENT) {
		node_kattr_unknown(j->fs, n);
		open_refused(j, n);
	}
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct job *j = new_job(req, "create", run_create, reply_create);

	if (!j)
		return;
	nfs_event(FS(req), VFSOPEN);
	j->ino = parent;
	j->name_dir = parent;
	j->mode = mode;
	copy_fi(j, fi);
	j->name = strdup(name);
	submit(j, j->name != NULL);
}

/* unlink, rmdir, rename, link */

static int run_unlink(struct job *j)
{
	return silly_unlink(JOB_ACTOR(j), node_of(j->fs, j->ino), j->name);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct job *j = new_job(req, "unlink", run_unlink, reply_ok);

	if (!j)
		return;
	j->ino = parent;
	j->name_dir = parent;
	j->name = strdup(name);
	submit(j, j->name != NULL);
}

static int run_rmdir(struct job *j)
{
	return nc_rmdir(j->fs->nc, &j->cred, fh_of(j, j->ino), j->name);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct job *j = new_job(req, "rmdir", run_rmdir, reply_ok);

	if (!j)
		return;
	j->ino = parent;
	j->name_dir = parent;
	j->name = strdup(name);
	submit(j, j->name != NULL);
}

static int run_rename(struct job *j)
{
	struct nc_entry e;
	int rc = 0;

	if (j->flags & ~RENAME_NOREPLACE)
		return -EINVAL; /* RENAME_EXCHANGE has no NFSv3 call */
	FS_REGION_BEGIN(j, "rename: LOOKUP, RENAME");
	if (j->flags & RENAME_NOREPLACE) {
		rc = nc_lookup(j->fs->nc, &j->cred, fh_of(j, j->ino2), j->name2,
			       &e);
		rc = rc == 0 ? -EEXIST : rc == -ENOENT ? 0 : rc;
	} else {
		/* A target still open here keeps its data under a hidden name. */
		rc = silly_rename_target(JOB_ACTOR(j), node_of(j->fs, j->ino),
					 j->name, node_of(j->fs, j->ino2),
					 j->name2);
	}
	if (rc == 0)
		rc = nc_rename(j->fs->nc, &j->cred, fh_of(j, j->ino), j->name,
			       fh_of(j, j->ino2), j->name2);
	FS_REGION_END(j);
	return rc;
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	struct job *j = new_job(req, "rename", run_rename, reply_ok);

	if (!j)
		return;
	j->ino = parent;
	j->ino2 = newparent;
	j->name_dir = parent;
	j->name2_dir = newparent;
	j->flags = (int)flags;
	j->name = strdup(name);
	j->name2 = strdup(newname);
	submit(j, j->name && j->name2);
}

static int run_link(struct job *j)
{
	struct nc_entry e;
	int rc;

	FS_REGION_BEGIN(j, "link: LINK, LOOKUP");
	rc = nc_link(j->fs->nc, &j->cred, fh_of(j, j->ino), fh_of(j, j->ino2),
		     j->name);
	if (rc == 0)
		rc = nc_lookup(j->fs->nc, &j->cred, fh_of(j, j->ino2), j->name,
			       &e);
	FS_REGION_END(j);
	return rc ? rc : job_entry(j, node_of(j->fs, j->ino2), j->name, &e);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	struct job *j = new_job(req, "link", run_link, reply_entry);

	if (!j)
		return;
	j->ino = ino;
	j->ino2 = newparent;
	j->name_dir = newparent;
	j->name = strdup(newname);
	submit(j, j->name != NULL);
}

/* open, read */

/*
 * Close-to-open, as Linux NFS does it at every open: the server's
 * attributes, and when they are not what the kernel was last told (another
 * client changed the file), the kernel's invalidated before the open is
 * answered.  FUSE's answer to an open carries no attributes, and the kernel
 * would read up to the size it has; the pages go at every open anyway
 * (keep_cache is 0).  A handle the server no longer knows (another client
 * replaced the name) fails the open with ESTALE, and the VFS looks the name
 * up again (LOOKUP_REVAL).
 */
static int open_revalidate(struct job *j, struct node *n)
{
	struct nc_attr a;
	int rc = wb_wait_sent(j->fs, n, 0, 0);

	if (rc == 0)
		rc = nc_getattr(j->fs->nc, &j->cred, &n->fh, &a);
	if (rc)
		return rc;
	if (node_kattr_stale(j->fs, n, &a)) {
		nfs_event(j->fs, ATTRINVALIDATE);
		rc = fuse_lowlevel_notify_inval_inode(j->fs->se, j->ino, -1, 0);
		if (rc && rc != -ENOENT)
			fprintf(stderr,
				"intrfs: could not invalidate the attributes "
				"of file %" PRIu64 ": %s\n",
				a.fileid, strerror(-rc));
	}
	return 0;
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
	rc = access_check_mask(j->fs, &j->cred, n, mask);
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

		FS_REGION_BEGIN(j, "open: truncate (O_TRUNC)");
		rc = wb_truncate(JOB_ACTOR(j), n, &sa, &a);
		/*
		 * A truncate by another than the owner clears setuid and
		 * setgid; the kernel drops that on an atomic O_TRUNC open.
		 */
		if (rc == 0)
			rc = killpriv_after_truncate(j, n, &a);
		FS_REGION_END(j);
		if (rc)
			return rc;
		node_stat(j->fs, n, &a, &st);
	} else if (S_ISREG(n->type) && !j->fs->o.nocto) {
		rc = open_revalidate(j, n);
		if (rc)
			return rc;
	}
	j->fi.direct_io = wants_direct_io(j->fs, j->fi.flags);
	/* Close-to-open: what another client wrote must be seen. */
	j->fi.keep_cache = 0;
	return 0;
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct job *j = new_job(req, "open", run_open, reply_open);

	if (!j)
		return;
	nfs_event(FS(req), VFSOPEN);
	j->ino = ino;
	copy_fi(j, fi);
	submit(j, true);
}

/*
 * A read of one READ's size is answered from the reply itself (no copy
 * into a buffer of ours); a longer one is read into a buffer, as many
 * READs as it takes, and so is the rest of one whose reply came short
 * without the end of the file, after the bytes that came.
 */
/* A read's bytes, for mountstats: the caller's and READ's, and pages. */
static void read_counted(struct job *j)
{
	if (j->fi.flags & O_DIRECT)
		nfs_bytes(j->fs, DIRECTREADBYTES, j->out_len);
	else
		nfs_bytes(j->fs, NORMALREADBYTES, j->out_len);
	nfs_bytes(j->fs, SERVERREADBYTES, j->out_len);
	nfs_bytes(j->fs, READPAGES, (j->out_len + 4095) / 4096);
}

static int run_read(struct job *j)
{
	size_t have = 0, got = 0;
	bool eof;
	int rc;

	/* What was written there has been answered: it must be read back. */
	rc = wb_wait_sent(j->fs, node_of(j->fs, j->ino), (uint64_t)j->off,
			  j->size ? j->size : 1);
	if (rc)
		return rc;
	if (j->size > 0 && j->size <= nc_client_rsize(j->fs->nc)) {
		rc = nc_read_inplace(j->fs->nc, &j->cred, fh_of(j, j->ino),
				     (uint64_t)j->off, (uint32_t)j->size,
				     &j->rbuf, &eof);
		if (rc)
			return rc;
		if (j->rbuf.len == j->size || eof) {
			j->out_len = j->rbuf.len;
			read_counted(j);
			return 0;
		}
		nfs_event(j->fs, SHORTREAD);
		have = j->rbuf.len;
	}
	j->buf = buf_alloc(&j->fs->bufs, j->size ? j->size : 1);
	if (!j->buf) {
		nc_rbuf_release(&j->rbuf);
		return -ENOMEM;
	}
	/* A short reply's bytes are kept: the rest is read after them. */
	if (have)
		memcpy(j->buf, j->rbuf.data, have);
	nc_rbuf_release(&j->rbuf);
	rc = nc_pread(j->fs->nc, &j->cred, fh_of(j, j->ino),
		      (uint64_t)j->off + have, j->size - have,
		      (char *)j->buf + have, &got, &eof);
	j->out_len = have + got;
	if (rc == 0)
		read_counted(j);
	return rc;
}

static void reply_read(struct job *j)
{
	if (j->rbuf.data)
		fuse_reply_buf(j->req, j->rbuf.data, j->out_len);
	else
		fuse_reply_buf(j->req, j->buf, j->out_len);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct job *j = new_job(req, "read", run_read, reply_read);

	if (!j)
		return;
	nfs_event(FS(req), VFSREADPAGES);
	j->ino = ino;
	j->size = size;
	j->off = off;
	copy_fi(j, fi);
	submit(j, true);
}

/* write, flush, fsync, release: write-behind (writeback.c) */

static void write_answer(void *arg)
{
	job_reply_early(arg);
}

static int run_write(struct job *j)
{
	struct wb_write w = {
		j->buf, j->fi.flags, { write_answer, j }, &j->replied
	};
	int rc = wb_write(JOB_ACTOR(j), node_of(j->fs, j->ino), &w);

	j->buf = w.data; /* NULL once write-behind took it */
	return rc;
}

static void reply_write(struct job *j)
{
	fuse_reply_write(j->req, j->out_len);
}

/*
 * The bytes move once, from the kernel to write-behind's buffer: with a
 * write_buf handler libfuse splices a write's request into a pipe (the
 * pipe holds the kernel's pages, uncopied) and the bytes are read from
 * there, rather than read into the session thread's 1 MiB request buffer
 * and copied again.  A small request still comes in the request buffer.
 */
static void op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in,
			 off_t off, struct fuse_file_info *fi)
{
	size_t size = fuse_buf_size(in);
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(size);
	struct job *j = new_job(req, "write", run_write, reply_write);
	ssize_t got;

	if (!j)
		return;
	nfs_event(FS(req), VFSUPDATEPAGE);
	j->ino = ino;
	j->size = size;
	j->out_len = size;
	j->off = off;
	copy_fi(j, fi);
	j->buf = wb_extent_new(&j->fs->bufs, (uint64_t)off, size,
			       &dst.buf[0].mem);
	if (!j->buf) {
		job_fail(j, -ENOMEM);
		return;
	}
	got = fuse_buf_copy(&dst, in, 0);
	if (got != (ssize_t)size) {
		fprintf(stderr,
			"intrfs: write: %zd of %zu bytes came from "
			"FUSE%s%s\n",
			got < 0 ? 0 : got, size, got < 0 ? ": " : "",
			got < 0 ? strerror((int)-got) : "");
		job_fail(j, -EIO);
		return;
	}
	/* Counted once they are here, as Linux counts what was copied. */
	if (fi->flags & O_DIRECT)
		nfs_bytes(FS(req), DIRECTWRITTENBYTES, size);
	else
		nfs_bytes(FS(req), NORMALWRITTENBYTES, size);
	if (in->buf[0].flags & FUSE_BUF_IS_FD)
		fs_count(&j->fs->stats.spliced_writes);
	/*
	 * A worker's: write-behind answers it early and it goes on, so a
	 * session thread that ran it would be held meanwhile, and libfuse
	 * would start another, with its own request buffer, for the next.
	 */
	j->pooled = true;
	job_submit(j);
}

/*
 * A flush or release with nothing uncommitted, no write on its way and no
 * error to report is answered on the session thread: no task, no worker.
 * A write's job is busy on the node before the write is answered, so the
 * kernel's flush, which comes after the answers, sees it.
 */
static bool nothing_to_sync(fuse_req_t req, fuse_ino_t ino)
{
	return wb_nothing_to_sync(node_of(FS(req), ino));
}

/*
 * flush and fsync: everything written is on stable storage, or an error.
 * The error of a write that failed after its answer is reported once.
 */
static int run_sync(struct job *j)
{
	return wb_sync(JOB_ACTOR(j), node_of(j->fs, j->ino));
}

/*
 * A flush: what was written goes to stable storage, and the POSIX locks of
 * the closing file table (fi->lock_owner) on the file are released, as
 * close(2) releases them.
 */
static int run_flush(struct job *j)
{
	struct node *n = node_of(j->fs, j->ino);
	int rc = wb_sync(JOB_ACTOR(j), n);

	locks_close(j, n, j->fi.lock_owner);
	return rc;
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	nfs_event(FS(req), VFSFLUSH);
	if (nothing_to_sync(req, ino) &&
	    !locks_held(FS(req), node_of(FS(req), ino), fi->lock_owner)) {
		fs_reply_err(req, 0);
		return;
	}
	struct job *j = new_job(req, "flush", run_flush, reply_ok);

	if (!j)
		return;
	j->forced = true;
	j->ino = ino;
	copy_fi(j, fi);
	submit(j, true);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	struct job *j = new_job(req, "fsync", run_sync, reply_ok);

	if (!j)
		return;
	nfs_event(FS(req), VFSFSYNC);
	(void)datasync;
	j->ino = ino;
	copy_fi(j, fi);
	submit(j, true);
}

static int run_release(struct job *j)
{
	struct node *n = node_of(j->fs, j->ino);
	/* flush came first; this catches writes from mmap and the like. */
	int rc = wb_sync(JOB_ACTOR(j), n);

	if (rc && rc != -EINTR)
		fprintf(stderr, "intrfs: commit at release failed: %s\n",
			strerror(-rc));
	/*
	 * What was taken through the open file goes with it (its flock(),
	 * which fi->flock_release says FUSE took, among them), and nothing
	 * taken through another, even when this was the last open of the
	 * file here: a newer open's lock may already be held.
	 */
	if (j->flags)
		locks_release(j, n, j->fi.fh);
	if (j->name) {
		/* The last close of a file unlinked while open. */
		silly_remove(j->fs, n, j->name);
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

	nfs_event(fs, VFSRELEASE);
	/* Pinned until the release is done: a FORGET may come meanwhile. */
	char *silly = node_close(fs, n);
	/* relaxed: a hint; locks_release_begin() looks under the lock. */
	bool locked = atomic_load_explicit(&n->nlocks, memory_order_relaxed);
	struct job *j;

	if (!silly && !locked && nothing_to_sync(req, ino)) {
		fs_reply_err(req, 0);
		node_unpin(fs, n);
		return;
	}
	j = job_new(fs, req, "release", run_release, reply_ok);
	if (!j) {
		fprintf(stderr, "intrfs: out of memory at release%s%s\n",
			silly ? ": left behind " : "", silly ? silly : "");
		fs_reply_err(req, -ENOMEM);
		free(silly);
		node_unpin(fs, n);
		return;
	}
	j->ino = ino;
	j->name = silly;
	/*
	 * Here, as the RELEASE is read: a lock request on the file that
	 * comes after it waits until what this open file held is gone.
	 */
	j->flags = locked && locks_release_begin(fs, n, fi->fh);
	copy_fi(j, fi);
	submit(j, true);
}

/* Directories: the directory cache (dircache.c) */

static struct dirhandle *dir_of(const struct fuse_file_info *fi)
{
	return (struct dirhandle *)(uintptr_t)fi->fh;
}

static int run_dir(struct job *j, bool plus)
{
	struct dir_ask q = { j->req, j->ino, j->unsure_gen, j->off, j->size,
			     NULL,   0 };
	int rc = dir_read(JOB_ACTOR(j), dir_of(&j->fi), &q, plus);

	j->buf = q.buf; /* freed with the job, on failure too */
	j->out_len = q.len;
	dir_put(dir_of(&j->fi));
	return rc;
}

static int run_readdir(struct job *j)
{
	return run_dir(j, false);
}

static int run_readdirplus(struct job *j)
{
	return run_dir(j, true);
}

static void readdir_submit(fuse_req_t req, const char *op, job_run_fn run,
			   fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	struct job *j = new_job(req, op, run, reply_buf);

	if (!j)
		return;
	j->ino = ino;
	j->size = size;
	j->off = off;
	copy_fi(j, fi);
	/* Held until the run is done: a releasedir may come before. */
	dir_hold(dir_of(fi));
	submit(j, true);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	nfs_event(FS(req), VFSGETDENTS);
	readdir_submit(req, "readdir", run_readdir, ino, size, off, fi);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	nfs_event(FS(req), VFSGETDENTS);
	readdir_submit(req, "readdirplus", run_readdirplus, ino, size, off, fi);
}

/*
 * Reading a directory needs read permission on it, as on Linux.  The
 * kernel keeps what it was given of the listing (FOPEN_CACHE_DIR), and
 * keeps it across opens (keep_cache) while the directory's size and times
 * on the server have not moved since the copy was started: a repeated
 * listing costs a GETATTR, no READDIRPLUS.  A change made through this
 * mount drops the copy in the kernel itself; one made by another client
 * shows at the next opendir, as close-to-open shows a file's.  nocto
 * keeps the copy while the attributes last seen have not moved.
 */
static int run_opendir(struct job *j)
{
	struct node *n = node_of(j->fs, j->ino);
	struct dirhandle *d;
	struct nc_attr a;
	int rc = access_check(j->fs, &j->cred, n, NC_ACCESS_READ);

	if (rc)
		return rc;
	if (!j->fs->o.nocto) {
		FS_REGION_BEGIN(j, "opendir: GETATTR (close-to-open)");
		rc = nc_getattr(j->fs->nc, &j->cred, &n->fh, &a);
		FS_REGION_END(j);
		if (rc)
			return rc;
		j->fi.keep_cache = node_listing_keep(j->fs, n, &a);
	} else {
		j->fi.keep_cache = node_listing_keep_seen(j->fs, n);
	}
	j->fi.cache_readdir = 1;
	d = dir_open();
	if (!d)
		return -ENOMEM;
	j->fi.fh = (uint64_t)(uintptr_t)d;
	return 0;
}

static void reply_opendir(struct job *j)
{
	if (fuse_reply_open(j->req, &j->fi) == -ENOENT) {
		/* Interrupted: no releasedir will come. */
		dir_put(dir_of(&j->fi));
	}
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct job *j = new_job(req, "opendir", run_opendir, reply_opendir);

	if (!j)
		return;
	nfs_event(FS(req), VFSOPEN);
	j->ino = ino;
	copy_fi(j, fi);
	submit(j, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	(void)ino;
	dir_put(dir_of(fi));
	fs_reply_err(req, 0);
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
	struct job *j = new_job(req, "statfs", run_statfs, reply_statfs);

	if (!j)
		return;
	j->ino = ino;
	submit(j, true);
}

static int run_access(struct job *j)
{
	return access_check_mask(j->fs, &j->cred, node_of(j->fs, j->ino),
				 j->flags);
}

static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct job *j = new_job(req, "access", run_access, reply_ok);

	if (!j)
		return;
	nfs_event(FS(req), VFSACCESS);
	j->ino = ino;
	j->flags = mask;
	submit(j, true);
}

/*
 * Extended attributes: none, NFSv3 carries none, and Linux's v3 client
 * lists none.  getxattr stays unimplemented: the kernel stops asking after
 * its first ENOSYS, where an answer would cost ls -l two requests an entry.
 */
static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	(void)ino;
	if (size == 0)
		fuse_reply_xattr(req, 0);
	else
		fuse_reply_buf(req, NULL, 0);
}

/* Locks (locks.c) */

static void reply_lock(struct job *j)
{
	fuse_reply_lock(j->req, &j->lock);
}

static void op_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		     struct flock *lock)
{
	struct job *j = new_job(req, "getlk", locks_getlk, reply_lock);

	if (!j)
		return;
	nfs_event(FS(req), VFSLOCK);
	j->ino = ino;
	copy_fi(j, fi);
	j->lock = *lock;
	j->self_answers = true;
	submit(j, true);
}

static void op_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		     struct flock *lock, int sleep)
{
	struct job *j =
		new_job(req, sleep ? "setlkw" : "setlk", locks_setlk, reply_ok);

	if (!j)
		return;
	nfs_event(FS(req), VFSLOCK);
	j->ino = ino;
	copy_fi(j, fi);
	j->lock = *lock;
	j->flags = sleep;
	j->self_answers = true;
	submit(j, true);
}

static void op_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		     int op)
{
	struct job *j = new_job(req, "flock", locks_flock, reply_ok);

	if (!j)
		return;
	nfs_event(FS(req), VFSLOCK);
	j->ino = ino;
	copy_fi(j, fi);
	j->flags = op;
	j->self_answers = true;
	submit(j, true);
}

/*
 * ioctl: only REGION_CALLER_IOC, a caller's region (callers.c), answered
 * on the session thread: it never waits for the server.  A restricted
 * ioctl, so the kernel copied the struct in and copies it back out.
 */
static void op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd,
		     void *arg, struct fuse_file_info *fi, unsigned flags,
		     const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	struct region_caller_ioc ioc;
	int rc;

	(void)ino;
	(void)arg;
	(void)fi;
	(void)flags;
	if (cmd != (unsigned int)REGION_CALLER_IOC) {
		fs_reply_err(req, -ENOTTY);
		return;
	}
	if (in_bufsz < sizeof(ioc) || out_bufsz < sizeof(ioc)) {
		fs_reply_err(req, -EINVAL);
		return;
	}
	memcpy(&ioc, in_buf, sizeof(ioc));
	rc = callers_ioctl(FS(req), fuse_req_ctx(req)->pid, &ioc);
	if (rc)
		fs_reply_err(req, rc);
	else
		fuse_reply_ioctl(req, 0, &ioc, sizeof(ioc));
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
	.write_buf = op_write_buf,
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
	.listxattr = op_listxattr,
	.getlk = op_getlk,
	.setlk = op_setlk,
	.flock = op_flock,
	.ioctl = op_ioctl,
};
