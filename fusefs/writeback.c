/*
 * Write-behind, as an NFS client does it.  This file owns a write's data
 * from the moment its job runs until the server has it on stable storage:
 * each node's struct wb_node (the extents on their way, those written but
 * not committed, the error to report) and the WRITE UNSTABLE, COMMIT and
 * FILE_SYNC resend calls that move them.
 *
 * A write is answered once its WRITE calls have left whole
 * (nc_pwrite_notify), while its job goes on in the background to take the
 * server's reply, keep the data until it is committed, and COMMIT when a
 * file's uncommitted data passes wbuf= MiB (or the mount's, four times
 * that).  Until the answer the job is the caller's request: it waits in the
 * caller's task and region, and the record send, the seed's scenario, is
 * the caller's.  A WRITE that fails after its answer is reported by the
 * file's next write, flush or fsync.  O_DIRECT writes are answered after
 * the reply, as Linux NFS answers them, and so are O_APPEND writes, which
 * go where the server's file ends (append_at_end()): another client's
 * next append must find this one there.  Writes are kept until a COMMIT
 * says the server has them: at fsync, at flush (so close() reports errors),
 * and at the bounds above.  A write whose verifier differs from the
 * COMMIT's was lost when the server restarted: it is sent again, FILE_SYNC.
 *
 * Order and bounds: a write waits while an earlier one to an overlapping
 * range is on its way (the server could apply them in either order) and
 * while WB_MAX_CALLS writes or WB_MAX_MIB MiB of a file are, or, while one
 * of the file's is, the mount's I/O buffers pass four times wbuf=; and,
 * while a COMMIT of the file's is, while those pass it or the file's new
 * data passes wbuf=.  What reads
 * or reports the file's data or size waits for the writes on their way
 * first: a read for those that overlap it, getattr, setattr and lookup for
 * all, flush and fsync for every write job to finish with the file.
 *
 * It never holds a lock across a call to the server, and never answers a
 * request but through the answer its caller hands it (struct wb_write):
 * it knows the mount, the caller's credentials and the node, never the
 * request.
 *
 * Lock order: a node's wb.commit_lock, which serialises COMMITs and
 * truncates (a truncate must not be undone by a COMMIT that holds extents
 * off the lists, nor by their later resend), before its wb.lock, which
 * protects the lists, counts and error and is held only for list work;
 * then the buffer pool's lock (bufpool.c, a leaf, under buf_free()).  Both
 * are task mutexes taken with an interruptible wait, like a filesystem's
 * mutex_lock_interruptible(): only from inside a job's task.  wb.cond is
 * broadcast, with wb.lock held, whenever sending, busy or committing
 * change.
 */
#include "fusefs_i.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/*
 * A file's writes on their way.  8 MiB keeps loopback's pipe full: 16 went
 * no faster, and held twice the memory.
 */
#define WB_MAX_CALLS 8
#define WB_MAX_MIB 8

/*
 * One write's data, kept until the server has it on stable storage: on
 * wb.sending while its WRITE is on the way, then on wb.dirty, with the
 * verifier of its reply, until a COMMIT with the same verifier.
 */
struct extent {
	struct extent *next;
	uint64_t off;
	size_t len;
	unsigned char verf[8]; /* of the WRITE reply */
	bool resend; /* the verifier changed between its calls */
	unsigned char data[];
};

/*
 * The mode of the mount's waits for writes on their way (and for the
 * locks that order them): interruptible, the per-call choice the policies
 * build on, or uninterruptible under policy=linux, as Linux's
 * folio_wait_writeback().  Set at mount and by intrfsctl's policy switch:
 * waits that start after a switch take the new mode (relaxed: one more
 * wait with the old one does not matter).
 */
static enum task_mode wb_mode(const struct intrfs *fs)
{
	return (enum task_mode)atomic_load_explicit(&fs->wb_mode,
						    memory_order_relaxed);
}

/* A write waiting for room: killable there (balance_dirty_pages()). */
static enum task_mode wb_room_mode(const struct intrfs *fs)
{
	return (enum task_mode)atomic_load_explicit(&fs->wb_room_mode,
						    memory_order_relaxed);
}

void wb_set_wait_mode(struct intrfs *fs, enum task_mode m)
{
	atomic_store_explicit(&fs->wb_mode, (unsigned)m, memory_order_relaxed);
	atomic_store_explicit(
		&fs->wb_room_mode,
		(unsigned)(m == TASK_UNINTERRUPTIBLE ? TASK_KILLABLE : m),
		memory_order_relaxed);
}

void wb_node_init(struct wb_node *w)
{
	region_task_mutex_init(&w->lock);
	region_task_mutex_init(&w->commit_lock);
	region_task_cond_init(&w->cond);
	w->dirty = NULL;
	w->dirty_tail = &w->dirty;
}

static void free_extents(struct extent *e)
{
	for (struct extent *next; e; e = next) {
		next = e->next;
		buf_free(e);
	}
}

void wb_node_destroy(struct wb_node *w, uint64_t fileid)
{
	if (w->dirty_bytes)
		fprintf(stderr,
			"intrfs: %zu uncommitted bytes of file %" PRIu64
			" dropped with its last reference\n",
			w->dirty_bytes, fileid);
	free_extents(w->dirty);
	region_task_mutex_destroy(&w->lock);
	region_task_mutex_destroy(&w->commit_lock);
	region_task_cond_destroy(&w->cond);
}

void *wb_extent_new(struct bufpool *bp, uint64_t off, size_t len, void **data)
{
	struct extent *e = buf_alloc(bp, sizeof(*e) + len);

	if (!e)
		return NULL;
	memset(e, 0, sizeof(*e));
	e->off = off;
	e->len = len;
	*data = e->data;
	return e;
}

/*
 * Whether a flush has anything to do, for the session thread to read
 * without the lock: published at the end of each wb.lock section.
 */
static void publish_sync_state(struct wb_node *w)
{
	/* release: pairs with the acquire loads below. */
	atomic_store_explicit(&w->needs_sync,
			      w->dirty || w->write_error || w->busy ||
				      w->committing,
			      memory_order_release);
}

static bool needs_sync(struct wb_node *w)
{
	/*
	 * acquire: a reader that sees false sees every write job finished
	 * with the node, as the last wb.lock section published it.
	 */
	return atomic_load_explicit(&w->needs_sync, memory_order_acquire);
}

bool wb_nothing_to_sync(struct node *n)
{
	return !needs_sync(&n->wb);
}

bool wb_writes_on_way(struct node *n)
{
	struct wb_node *w = &n->wb;
	bool on;

	if (!needs_sync(w))
		return false;
	region_task_mutex_lock_nofail(&w->lock);
	on = w->sending != NULL;
	region_task_mutex_unlock(&w->lock);
	return on;
}

static bool overlaps(const struct extent *e, uint64_t off, size_t len)
{
	for (; e; e = e->next)
		if (len == 0 || (e->off < off + len && off < e->off + e->len))
			return true;
	return false;
}

int wb_wait_sent(const struct intrfs *fs, struct node *n, uint64_t off,
		 size_t len)
{
	struct wb_node *w = &n->wb;
	int rc;

	if (!needs_sync(w))
		return 0;
	rc = region_task_mutex_lock(&w->lock, wb_mode(fs), TASK_FOREVER);
	if (rc)
		return rc;
	while (rc == 0 && overlaps(w->sending, off, len))
		rc = region_task_cond_wait(&w->cond, &w->lock, wb_mode(fs),
					   TASK_FOREVER);
	region_task_mutex_unlock(
		&w->lock); /* held again, whatever the wait said */
	return rc;
}

/* Waits until every write job has finished with the file. */
static int wait_writes(const struct intrfs *fs, struct wb_node *w)
{
	int rc;

	rc = region_task_mutex_lock(&w->lock, wb_mode(fs), TASK_FOREVER);
	if (rc)
		return rc;
	while (rc == 0 && w->busy)
		rc = region_task_cond_wait(&w->cond, &w->lock, wb_mode(fs),
					   TASK_FOREVER);
	region_task_mutex_unlock(&w->lock);
	return rc;
}

static void dirty_append(struct wb_node *w, struct extent *e)
{
	e->next = NULL;
	*w->dirty_tail = e;
	w->dirty_tail = &e->next;
	w->dirty_bytes += e->len;
}

/* Drops what is kept of writes at or past size.  wb.lock held. */
static void trim_dirty(struct wb_node *w, uint64_t size)
{
	struct extent **p = &w->dirty;

	while (*p) {
		struct extent *e = *p;

		if (e->off >= size) {
			*p = e->next;
			w->dirty_bytes -= e->len;
			buf_free(e);
			continue;
		}
		if (e->off + e->len > size) {
			w->dirty_bytes -= e->off + e->len - size;
			e->len = (size_t)(size - e->off);
		}
		p = &e->next;
	}
	w->dirty_tail = &w->dirty;
	while (*w->dirty_tail)
		w->dirty_tail = &(*w->dirty_tail)->next;
}

int wb_truncate(const struct actor *a, struct node *n,
		const struct nc_sattr *sa, struct nc_attr *attr)
{
	struct wb_node *w = &n->wb;
	int rc = region_task_mutex_lock(&w->commit_lock, wb_mode(a->fs),
					TASK_FOREVER);

	if (rc)
		return rc;
	rc = wb_wait_sent(a->fs, n, 0, 0);
	if (rc == 0)
		rc = nc_setattr(a->fs->nc, a->cred, &n->fh, sa, attr);
	if (rc == 0) {
		region_task_mutex_lock_nofail(&w->lock);
		trim_dirty(w, sa->size);
		publish_sync_state(w);
		region_task_mutex_unlock(&w->lock);
	}
	region_task_mutex_unlock(&w->commit_lock);
	return rc;
}

/*
 * Extents whose WRITE got another verifier than the COMMIT's were lost
 * when the server restarted: they are sent again, FILE_SYNC, so that no
 * second commit is needed.
 */
/* Whether the server lost e: its WRITE's verifier is not the COMMIT's. */
static bool lost(const struct extent *e, const unsigned char verf[8])
{
	return e->resend || memcmp(e->verf, verf, sizeof(e->verf)) != 0;
}

static int resend_lost(const struct actor *a, struct node *n,
		       struct extent *batch, const unsigned char verf[8])
{
	struct nc_write_res res;
	size_t bytes = 0;
	int rc = 0;

	for (struct extent *e = batch; e; e = e->next)
		if (lost(e, verf))
			bytes += e->len;
	if (!bytes)
		return 0;
	fprintf(stderr,
		"intrfs: server %s restarted (write verifier changed): "
		"resending %zu uncommitted bytes of file %" PRIu64 "\n",
		nc_client_server(a->fs->nc), bytes, n->fileid);
	for (struct extent *e = batch; e && rc == 0; e = e->next)
		if (lost(e, verf))
			rc = nc_pwrite(a->fs->nc, a->cred, &n->fh, e->off,
				       e->len, e->data, NC_FILE_SYNC, &res);
	return rc;
}

/*
 * COMMITs what has been written, and resends what the server lost.  The
 * extents are taken off the list for the call, so writes go on meanwhile;
 * on failure they go back, to be committed by a later flush.
 */
static int commit_dirty(const struct actor *a, struct node *n)
{
	struct wb_node *w = &n->wb;
	unsigned char verf[8];
	struct extent *batch, **tail;
	size_t bytes;
	int rc;

	rc = region_task_mutex_lock(&w->commit_lock, wb_mode(a->fs),
				    TASK_FOREVER);
	if (rc)
		return rc;
	region_task_mutex_lock_nofail(&w->lock);
	batch = w->dirty;
	tail = w->dirty_tail;
	bytes = w->dirty_bytes;
	w->dirty = NULL;
	w->dirty_tail = &w->dirty;
	w->dirty_bytes = 0;
	w->committing = batch != NULL;
	publish_sync_state(w);
	region_task_mutex_unlock(&w->lock);
	if (!batch) {
		region_task_mutex_unlock(&w->commit_lock);
		return 0;
	}

	FS_REGION_BEGIN(a, "commit: COMMIT, resend if the server lost it");
	rc = nc_commit(a->fs->nc, a->cred, &n->fh, 0, 0, verf);
	if (rc == 0)
		rc = resend_lost(a, n, batch, verf);
	FS_REGION_END(a);

	region_task_mutex_lock_nofail(&w->lock);
	if (rc == 0) {
		free_extents(batch);
	} else {
		/* Back at the head: still to be committed. */
		*tail = w->dirty;
		if (!w->dirty)
			w->dirty_tail = tail;
		w->dirty = batch;
		w->dirty_bytes += bytes;
	}
	w->committing = false;
	region_task_cond_broadcast(&w->cond);
	publish_sync_state(w);
	region_task_mutex_unlock(&w->lock);
	region_task_mutex_unlock(&w->commit_lock);
	return rc;
}

/* Takes e off wb.sending.  wb.lock held. */
static void sending_remove(struct wb_node *w, struct extent *e)
{
	for (struct extent **p = &w->sending; *p; p = &(*p)->next) {
		if (*p == e) {
			*p = e->next;
			break;
		}
	}
	w->nsending--;
	w->sending_bytes -= e->len;
}

/*
 * Whether a write of len must wait for room: the file's own bounds, or the
 * mount's I/O buffers past four times wbuf=.  Only while the file has a
 * write on its way or a COMMIT holding its data, whose end wakes the
 * waiter: so a file over the mount's bound still sends one write at a
 * time, and none waits for another file.  While its COMMIT is under way a
 * file takes no more than wbuf= of new data: the data a slow COMMIT holds
 * is not added to by as much again as the link carries meanwhile.
 */
/* Whether the mount's I/O buffers are past their bound, four times wbuf=. */
static bool mount_over(const struct intrfs *fs)
{
	return buf_busy_bytes(&fs->bufs) >= (size_t)fs->o.wbuf_mb << 22;
}

static bool sending_full(const struct intrfs *fs, const struct wb_node *w,
			 size_t len)
{
	size_t wbuf = (size_t)fs->o.wbuf_mb << 20;
	bool over = mount_over(fs);

	if (w->nsending &&
	    (w->nsending >= WB_MAX_CALLS ||
	     w->sending_bytes + len > (size_t)WB_MAX_MIB << 20 || over))
		return true;
	return w->committing &&
	       (over || w->dirty_bytes + w->sending_bytes + len > wbuf);
}

/*
 * An append goes where the server's file ends now, not where the kernel's
 * cached size put it: another client may have appended since.  After this
 * file's writes on their way, a GETATTR.  The kernel learns the size at its
 * next look at the attributes, which it invalidates after every write; its
 * pages are left alone here (the writer holds their lock), and go when that
 * look finds the size moved.
 */
static int append_at_end(const struct actor *a, struct node *n,
			 struct extent *e)
{
	struct nc_attr attr;
	int rc = wb_wait_sent(a->fs, n, 0, 0);

	if (rc == 0)
		rc = nc_getattr(a->fs->nc, a->cred, &n->fh, &attr);
	if (rc == 0)
		e->off = attr.size;
	return rc;
}

int wb_write(const struct actor *a, struct node *n, struct wb_write *req)
{
	struct wb_node *w = &n->wb;
	struct extent *e = req->data;
	/*
	 * O_DIRECT writes are answered with the server's reply, as Linux NFS
	 * answers them, and so are appends: the next append, from any
	 * client, must find this one's end on the server.
	 */
	bool behind = !(req->flags & (O_DIRECT | O_APPEND));
	struct nc_write_res res;
	bool commit;
	int rc;

	if (req->flags & O_APPEND) {
		rc = append_at_end(a, n, e);
		if (rc)
			return rc;
	}
	rc = region_task_mutex_lock(&w->lock, wb_room_mode(a->fs),
				    TASK_FOREVER);
	if (rc)
		return rc;
	/* In order after overlapping writes, and not too many at once. */
	for (bool waited = false;
	     !w->write_error && (overlaps(w->sending, e->off, e->len) ||
				 sending_full(a->fs, w, e->len));
	     waited = true) {
		if (!waited)
			nfs_event(a->fs, CONGESTIONWAIT);
		rc = region_task_cond_wait(&w->cond, &w->lock,
					   wb_room_mode(a->fs), TASK_FOREVER);
		if (rc) {
			region_task_mutex_unlock(&w->lock);
			return rc;
		}
	}
	/* A write that failed after its answer fails the next one. */
	if (w->write_error) {
		rc = w->write_error;
		region_task_mutex_unlock(&w->lock);
		return rc;
	}
	req->data = NULL;
	e->next = w->sending;
	w->sending = e;
	w->nsending++;
	w->sending_bytes += e->len;
	w->busy++;
	publish_sync_state(w);
	region_task_mutex_unlock(&w->lock);

	FS_REGION_BEGIN(a, "write: WRITE calls of one request");
	rc = nc_pwrite_notify(a->fs->nc, a->cred, &n->fh, e->off, e->len,
			      e->data, NC_UNSTABLE, &res,
			      behind ? &req->answer : NULL);
	FS_REGION_END(a);

	if (rc == 0) {
		nfs_bytes(a->fs, SERVERWRITTENBYTES, e->len);
		nfs_bytes(a->fs, WRITEPAGES, (e->len + 4095) / 4096);
	}
	region_task_mutex_lock_nofail(&w->lock);
	sending_remove(w, e);
	if (rc == 0 && res.committed != NC_FILE_SYNC) {
		/* Kept until committed. */
		memcpy(e->verf, res.verf, sizeof(e->verf));
		e->resend = res.verf_changed;
		dirty_append(w, e);
		e = NULL;
	}
	/*
	 * Its caller was told it went well: the file's next write, flush or
	 * fsync reports the failure.  Never an interruption, which was its
	 * caller's and was answered as EINTR (replied is false then).
	 */
	if (rc && rc != -EINTR && *req->answered)
		w->write_error = rc;
	/*
	 * A file's uncommitted data is bounded by wbuf=, the mount's (with
	 * reads and writes on their way) by four times that: so is the
	 * daemon's memory, however many files are written.
	 */
	commit = rc == 0 && w->dirty_bytes &&
		 (w->dirty_bytes >= (size_t)a->fs->o.wbuf_mb << 20 ||
		  mount_over(a->fs));
	region_task_cond_broadcast(&w->cond);
	region_task_mutex_unlock(&w->lock);
	buf_free(e);

	if (commit)
		rc = commit_dirty(a, n);

	region_task_mutex_lock_nofail(&w->lock);
	if (rc && rc != -EINTR && *req->answered && !w->write_error)
		w->write_error = rc;
	w->busy--;
	region_task_cond_broadcast(&w->cond);
	publish_sync_state(w);
	region_task_mutex_unlock(&w->lock);
	return rc;
}

int wb_sync(const struct actor *a, struct node *n)
{
	struct wb_node *w = &n->wb;
	int rc;

	rc = wait_writes(a->fs, w);
	if (rc == 0)
		rc = commit_dirty(a, n);
	if (rc)
		return rc;
	region_task_mutex_lock_nofail(&w->lock);
	rc = w->write_error;
	w->write_error = 0;
	publish_sync_state(w);
	region_task_mutex_unlock(&w->lock);
	return rc;
}
