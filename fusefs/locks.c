/*
 * File locks, as Linux's NFS client takes them: fcntl() and lockf()
 * (POSIX locks) and flock() go to the server's lock manager (NLM v4,
 * netclient's nc_nlm_*()), so that a lock taken through one client keeps
 * out the same lock through another; flock() is a whole-file POSIX lock
 * of its open file there, as Linux NFS maps it.  local_lock= keeps either
 * kind in this kernel instead (FUSE's own local locks), and nolock both.
 *
 * Owners: FUSE names a POSIX lock's owner (lock_owner: the caller's file
 * table, or the open file for an OFD lock); an flock() owner is its open
 * file, which this daemon numbers itself at the open (locks_open(), the
 * fi->fh FUSE hands back with every request on it), because FUSE's
 * lock_owner for an open file is made from the kernel's struct file
 * address, which the next open file often gets again.  The server knows
 * an owner by a number, the process id (svid), and an opaque handle made
 * of the owner's name and this daemon's (oh), so that no two owners of
 * this host's daemons meet on the server.  What each owner holds on each
 * file is kept here as the server keeps it (POSIX: a new lock replaces the
 * owner's overlapping ones, an unlock splits them), with the open file it
 * was taken through, for four ends: a close (FLUSH) releases its owner's
 * POSIX locks on the file; the last close of an open file (RELEASE) what
 * was taken through it (its flock(), its OFD locks, a POSIX lock whose
 * FLUSH never came), and nothing else; a reboot of the server has every
 * lock reclaimed in its grace period; and GETLK names a holder of this
 * mount by its process.
 *
 * Linux's NFS client lets go of an flock() before close() returns; FUSE
 * sends the RELEASE after close() has returned, without waiting for it,
 * so the daemon lets go of it when the RELEASE comes, and what was taken
 * after it stays: the last close of another open file never touches it,
 * and a lock request on the file that comes after a RELEASE with locks to
 * let go of waits for them to go (locks_release_begin(), on the session
 * thread, as the RELEASE is read), so that a process that closes a file
 * and locks it again through a new open file does not meet its own old
 * flock().  Another client may meet it until the UNLOCK is through.
 *
 * A lock that must wait (F_SETLKW, flock() without LOCK_NB) is sent with
 * block set; while the server answers BLOCKED, the waiter sleeps until
 * the server's GRANTED callback (lockd.c, when this daemon serves them)
 * wakes it, and sends the LOCK again every 30 s as Linux does, or every
 * LK_RESEND_POLL_MS when no callback can come (another service holds the
 * program on this host): a LOCK sent again is granted once the lock is
 * free.  The wait is interruptible, as Linux's nlmclnt_wait(), so the
 * request's regions and policy decide what a handled signal does to it;
 * a fatal one ends it whatever the regions (locks_killed(), from the
 * interrupt path): a lock wait is not I/O in flight, nothing is half done
 * when it ends, and its CANCEL is safe.  So a process that waits for a
 * lock inside an uninterruptible region (a caller's, a nointr mount's) can
 * still be killed, and two that wait for each other's locks are not stuck
 * for good.  A waiter that is interrupted never ends up holding the lock:
 * its CANCEL (or the UNLOCK of a lock granted as it left) is carried out
 * before its EINTR is answered (FUSE turns that into ERESTARTSYS, and an
 * SA_RESTART caller comes back with the same LOCK), and a GRANTED that
 * comes for nobody is answered DENIED, so that the server lets go.  Lock
 * requests therefore answer themselves (j->self_answers): the interrupt
 * path answers one early only once a caller's region held its fatal
 * signal back as long as it may (interrupt.c), and then a lock the server
 * grants it after goes back (j->lk_abandoned), but where its owner held
 * the range before.
 *
 * CANCEL, UNLOCK and reclaims are sent by the janitor (lockjan.c, with
 * the journal that releases a dead daemon's locks, and start and stop).
 *
 * Lock order: fs->locks.lock (a task mutex, never held across a call to
 * the server) before fs->nodes_lock (node_pin()).  It protects the
 * owners, every node's ranges, the waiters, the closes under way and the
 * janitor's queue.
 */
#include "locks_i.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

/* The largest offset a struct flock carries (off_t is 64-bit here). */
#define LK_OFF_MAX INT64_MAX

/* Ranges. */

uint64_t lk_end_of(uint64_t off, uint64_t len)
{
	return len == 0 || off + len - 1 < off ? LK_EOF : off + len - 1;
}

static bool overlap(uint64_t s1, uint64_t e1, uint64_t s2, uint64_t e2)
{
	return s1 <= e2 && s2 <= e1;
}

bool lk_spare_get(struct lk_spare *sp, unsigned n)
{
	sp->used = 0;
	sp->r[0] = sp->r[1] = NULL;
	for (unsigned i = 0; i < n; i++)
		if (!(sp->r[i] = malloc(sizeof(*sp->r[i]))))
			return false;
	return true;
}

void lk_spare_put(struct lk_spare *sp)
{
	for (unsigned i = sp->used; i < 2; i++)
		free(sp->r[i]);
}

static void node_locked(struct lock_state *L, struct node *n, int delta)
{
	/* relaxed: a hint for the flush fast path; the list is exact. */
	unsigned now = atomic_load_explicit(&n->nlocks, memory_order_relaxed) +
		       (unsigned)delta;

	atomic_store_explicit(&n->nlocks, now, memory_order_relaxed);
	L->nranges += (unsigned)delta;
	if (delta > 0 && now == 1) {
		n->lnext = L->nodes;
		L->nodes = n;
	} else if (delta < 0 && now == 0) {
		for (struct node **p = &L->nodes; *p; p = &(*p)->lnext) {
			if (*p == n) {
				*p = n->lnext;
				break;
			}
		}
	}
}

/*
 * The owner's ranges on n as the server has them after the owner locks
 * [start, end] (excl or not) or, with unlock, unlocks it: what overlaps
 * goes, what sticks out on either side stays.  An owner's ranges never
 * overlap each other, so at most one is split, with sp->r's first range
 * (sp may hold none: then the part past end is dropped here too, which
 * only loses track of it), and a lock takes the next.  Called with
 * locks.lock held; n stays pinned while it has ranges (the caller pins
 * and unpins, when node_locked() says so).
 */
void lk_ranges_set(struct lock_state *L, struct node *n, struct lk_owner *o,
		   uint64_t start, uint64_t end, bool excl, bool unlock,
		   uint64_t file, struct lk_spare *sp)
{
	struct lk_range **p = &n->locks;

	while (*p) {
		struct lk_range *r = *p;

		if (r->o != o || !overlap(r->start, r->end, start, end)) {
			p = &r->next;
			continue;
		}
		if (r->start < start && r->end > end && sp->used < 2 &&
		    sp->r[sp->used]) {
			/* Split in two: the right part is a new range. */
			struct lk_range *right = sp->r[sp->used++];

			*right = *r;
			right->start = end + 1;
			r->end = start - 1;
			right->next = r->next;
			r->next = right;
			o->refs++;
			node_locked(L, n, 1);
			p = &right->next;
			continue;
		}
		if (r->start < start) {
			r->end = start - 1;
		} else if (r->end > end) {
			r->start = end + 1;
		} else {
			*p = r->next;
			o->refs--;
			node_locked(L, n, -1);
			free(r);
			continue;
		}
		p = &r->next;
	}
	if (!unlock) {
		struct lk_range *r = sp->r[sp->used++];

		r->o = o;
		r->start = start;
		r->end = end;
		r->file = file;
		r->exclusive = excl;
		r->next = n->locks;
		n->locks = r;
		o->refs++;
		node_locked(L, n, 1);
	}
}

static bool owner_holds(const struct node *n, const struct lk_owner *o,
			uint64_t start, uint64_t end)
{
	for (const struct lk_range *r = n->locks; r; r = r->next)
		if (r->o == o && overlap(r->start, r->end, start, end))
			return true;
	return false;
}

/* Owners. */

static struct lk_owner *owner_find(struct intrfs *fs, uint64_t id, bool flock)
{
	for (struct lk_owner *o = fs->locks.owners; o; o = o->next)
		if (o->id == id && o->flock == flock)
			return o;
	return NULL;
}

/* Finds or makes the owner, with a reference.  locks.lock held. */
static struct lk_owner *owner_get(struct intrfs *fs, uint64_t id, bool flock,
				  pid_t pid, const struct nc_cred *cred)
{
	struct lk_owner *o = owner_find(fs, id, flock);
	int n;

	if (!o) {
		o = calloc(1, sizeof(*o));
		if (!o)
			return NULL;
		o->id = id;
		o->flock = flock;
		o->name.svid = pid;
		/* An open file's number never meets a lock_owner: F. */
		n = snprintf((char *)o->name.oh, sizeof(o->name.oh),
			     flock ? "F%015" PRIx64 "%s" : "%016" PRIx64 "%s",
			     id, fs->locks.oh_tag);
		o->name.oh_len = n < (int)sizeof(o->name.oh) ?
					 (unsigned)n :
					 (unsigned)sizeof(o->name.oh);
		o->next = fs->locks.owners;
		fs->locks.owners = o;
	}
	if (pid > 0)
		o->pid = pid;
	o->cred = *cred;
	o->refs++;
	return o;
}

void lk_owner_put(struct intrfs *fs, struct lk_owner *o)
{
	if (--o->refs)
		return;
	for (struct lk_owner **p = &fs->locks.owners; *p; p = &(*p)->next) {
		if (*p == o) {
			*p = o->next;
			break;
		}
	}
	free(o);
}

/* Holding and letting go. */

/* The lock of owner o on [off, off + len). */
struct nc_nlm_lock lk_lock_of(const struct lk_owner *o, uint64_t off,
			      uint64_t len, bool excl)
{
	struct nc_nlm_lock lk = o->name;

	lk.off = off;
	lk.len = len;
	lk.exclusive = excl;
	return lk;
}

/* Pins or unpins n when it gained its first range or lost its last. */
void lk_pin_change(struct intrfs *fs, struct node *n, bool had)
{
	/* relaxed: written under locks.lock by this very caller. */
	bool has = atomic_load_explicit(&n->nlocks, memory_order_relaxed) != 0;

	if (has && !had)
		node_pin(fs, n);
	else if (!has && had)
		node_unpin(fs, n);
}

/* A lock the server granted: kept here, and the file's cache dropped. */
static int granted(struct job *j, struct node *n, struct lk_owner *o,
		   const struct nc_nlm_lock *lk)
{
	struct lock_state *L = &j->fs->locks;
	uint64_t end = lk_end_of(lk->off, lk->len);
	struct lk_spare sp;
	bool first, had;
	int rc;

	if (!lk_spare_get(&sp, 2)) {
		lk_spare_put(&sp);
		/* Not kept, then not held either. */
		lk_jan_do(j->fs, JAN_UNLOCK, &n->fh, lk, &j->cred, true);
		return -ENOLCK;
	}
	region_task_mutex_lock_nofail(&L->lock);
	if (j->lk_abandoned && !owner_holds(n, o, lk->off, end)) {
		/* Its caller was answered EINTR and is dying: give it back. */
		region_task_mutex_unlock(&L->lock);
		lk_spare_put(&sp);
		lk_jan_do(j->fs, JAN_UNLOCK, &n->fh, lk, &j->cred, false);
		return -EINTR;
	}
	first = !owner_holds(n, o, 0, LK_EOF);
	had = n->locks != NULL;
	lk_ranges_set(L, n, o, lk->off, end, lk->exclusive, false, j->fi.fh,
		      &sp);
	lk_pin_change(j->fs, n, had);
	if (first)
		lk_journal_note(j->fs, n, o);
	region_task_mutex_unlock(&L->lock);
	lk_spare_put(&sp);
	/*
	 * As Linux's do_setlk(): a lock is a point of cache coherency, and
	 * what another client wrote under it must be read.
	 */
	if (S_ISREG(n->type)) {
		nfs_event(j->fs, DATAINVALIDATE);
		rc = fuse_lowlevel_notify_inval_inode(j->fs->se, n->ino, 0, 0);
		if (rc && rc != -ENOENT)
			fprintf(stderr,
				"intrfs: could not drop the cache of file "
				"%" PRIu64 " after a lock: %s\n",
				n->fileid, strerror(-rc));
	}
	return 0;
}

/*
 * Owner o lets go of [off, off + len) on n, here and then on the server
 * (the janitor's UNLOCK; wait: for it, killably).  Nothing is sent when o
 * holds nothing there, as Linux's nlmclnt_unlock() sends nothing then.
 */
void lk_release(struct intrfs *fs, struct node *n, struct lk_owner *o,
		uint64_t off, uint64_t len, const struct nc_cred *cred,
		bool wait)
{
	struct lock_state *L = &fs->locks;
	struct nc_nlm_lock lk = lk_lock_of(o, off, len, false);
	uint64_t end = lk_end_of(off, len);
	bool held, had;
	struct lk_spare sp;

	/* Without memory for a split, the part past end is forgotten. */
	lk_spare_get(&sp, 1);
	region_task_mutex_lock_nofail(&L->lock);
	held = owner_holds(n, o, off, end);
	had = n->locks != NULL;
	if (held)
		lk_ranges_set(L, n, o, off, end, false, true, 0, &sp);
	lk_pin_change(fs, n, had);
	region_task_mutex_unlock(&L->lock);
	lk_spare_put(&sp);
	if (held)
		lk_jan_do(fs, JAN_UNLOCK, &n->fh, &lk, cred, wait);
}

/* Waiting. */

static int64_t resend_ms(const struct lock_state *L)
{
	return L->callbacks ? LK_RESEND_CB_MS : LK_RESEND_POLL_MS;
}

/* What a LOCK that did not give the lock may have left on the server. */
enum left {
	LEFT_NOTHING, /* the server answered: nothing held or queued */
	LEFT_QUEUED, /* BLOCKED: queued until cancelled */
	LEFT_UNKNOWN, /* the call's fate is not known: maybe granted */
};

/*
 * Waits for a LOCK the server answered BLOCKED (or DENIED_GRACE_PERIOD):
 * a GRANTED callback, or the time to send it again.  0: granted; 1: send
 * it again; -EINTR, by an interrupt the regions let through or a fatal
 * signal (j->lk_killed) whatever they say.  w is j's lk_wait.  locks.lock
 * held.
 */
static int wait_blocked(struct lock_state *L, struct job *j,
			struct lk_waiter *w, int64_t ms)
{
	int rc = 0;

	while (!w->granted && !w->resend && !j->lk_killed && rc == 0)
		rc = region_task_cond_wait(&w->cond, &L->lock,
					   TASK_INTERRUPTIBLE, ms * LK_MS);
	if (w->granted)
		return 0;
	if (j->lk_killed)
		return -EINTR;
	w->resend = false;
	return rc == -ETIMEDOUT || rc == 0 ? 1 : rc;
}

/* Whether j's caller has a fatal signal (locks_killed()). */
static bool lk_killed(struct job *j)
{
	struct lock_state *L = &j->fs->locks;
	bool killed;

	region_task_mutex_lock_nofail(&L->lock);
	killed = j->lk_killed;
	region_task_mutex_unlock(&L->lock);
	return killed;
}

/*
 * Sleeps ms in j's task, as the server's grace period asks: 0 once the
 * time passed, -EINTR when interrupted or killed (wait_blocked()).
 */
static int lk_sleep(struct job *j, int64_t ms)
{
	struct lock_state *L = &j->fs->locks;
	struct lk_waiter w = { 0 };
	int rc;

	region_task_cond_init(&w.cond);
	region_task_mutex_lock_nofail(&L->lock);
	j->lk_wait = &w;
	rc = wait_blocked(L, j, &w, ms);
	j->lk_wait = NULL;
	region_task_mutex_unlock(&L->lock);
	region_task_cond_destroy(&w.cond);
	return rc < 0 ? rc : 0;
}

void locks_killed(struct job *j, bool abandoned)
{
	struct lock_state *L = &j->fs->locks;

	region_task_mutex_lock_nofail(&L->lock);
	j->lk_killed = true;
	if (abandoned)
		j->lk_abandoned = true;
	if (j->lk_wait)
		region_task_cond_broadcast(&j->lk_wait->cond);
	region_task_mutex_unlock(&L->lock);
}

/*
 * LOCK, and for a lock that may wait, the wait.  *got says whether the
 * server gave the lock, whatever rc says; *left what else it may have.
 */
static int lock_call(struct job *j, struct node *n,
		     const struct nc_nlm_lock *lk, bool wait, bool *got,
		     enum left *left)
{
	struct lock_state *L = &j->fs->locks;
	struct lk_waiter w = { .n = n, .lk = *lk };
	enum nc_nlm_stat st = NC_NLM_FAILED;
	int rc;

	*got = false;
	*left = LEFT_NOTHING;
	region_task_cond_init(&w.cond);
	/* Before the LOCK goes: its GRANTED may beat its reply. */
	region_task_mutex_lock_nofail(&L->lock);
	w.next = L->waiters;
	L->waiters = &w;
	j->lk_wait = &w;
	region_task_mutex_unlock(&L->lock);
	for (;;) {
		/* A caller killed meanwhile asks the server for nothing more. */
		if (lk_killed(j)) {
			rc = -EINTR;
			break;
		}
		rc = nc_nlm_lock(j->fs->nc, &j->cred, &n->fh, lk, wait, false,
				 &st);
		if (rc) {
			*left = LEFT_UNKNOWN;
			break;
		}
		if (st == NC_NLM_GRANTED) {
			*got = true;
			break;
		}
		if (st == NC_NLM_BLOCKED && wait) {
			*left = LEFT_QUEUED;
		} else if (st != NC_NLM_DENIED_GRACE_PERIOD) {
			/* As Linux: a lock that was to wait and is DENIED. */
			rc = st == NC_NLM_DENIED && wait ? -ENOLCK :
							   nc_nlm_errno(st);
			break;
		}
		/* Blocked, or the server reclaims: wait, then ask again. */
		region_task_mutex_lock_nofail(&L->lock);
		rc = wait_blocked(L, j, &w,
				  st == NC_NLM_BLOCKED ? resend_ms(L) :
							 LK_GRACE_MS);
		region_task_mutex_unlock(&L->lock);
		if (rc == 0) {
			*got = true;
			break;
		}
		if (rc < 0)
			break;
	}
	region_task_mutex_lock_nofail(&L->lock);
	for (struct lk_waiter **p = &L->waiters; *p; p = &(*p)->next) {
		if (*p == &w) {
			*p = w.next;
			break;
		}
	}
	j->lk_wait = NULL;
	/* A GRANTED that came as it left: it holds the lock. */
	if (w.granted)
		*got = true;
	region_task_mutex_unlock(&L->lock);
	region_task_cond_destroy(&w.cond);
	return *got ? 0 : rc;
}

/* Whether a close of n numbered upto or before is letting go of locks. */
static bool closing_before(const struct lock_state *L, const struct node *n,
			   uint64_t upto)
{
	for (const struct lk_closing *c = L->closing; c; c = c->next)
		if (c->n == n && c->seq <= upto)
			return true;
	return false;
}

/*
 * Waits until the last closes of open files of n that came before this
 * request have let go of their locks: what a closed open file held is
 * gone for the locks taken after, as Linux's close() lets go of an
 * flock() before it returns.  Closes that come later are not waited for.
 * Interruptible as the lock wait; -EINTR, by an interrupt the regions let
 * through or a fatal signal.
 */
static int wait_closes(struct job *j, struct node *n)
{
	struct lock_state *L = &j->fs->locks;
	struct lk_waiter w = { .n = n };
	uint64_t upto;
	int rc = 0;

	region_task_mutex_lock_nofail(&L->lock);
	upto = L->close_seq;
	if (!closing_before(L, n, upto)) {
		region_task_mutex_unlock(&L->lock);
		return 0;
	}
	region_task_cond_init(&w.cond);
	w.next = L->close_waiters;
	L->close_waiters = &w;
	j->lk_wait = &w;
	while (closing_before(L, n, upto) && !j->lk_killed && rc == 0)
		rc = region_task_cond_wait(&w.cond, &L->lock,
					   TASK_INTERRUPTIBLE, TASK_FOREVER);
	if (j->lk_killed)
		rc = -EINTR;
	for (struct lk_waiter **p = &L->close_waiters; *p; p = &(*p)->next) {
		if (*p == &w) {
			*p = w.next;
			break;
		}
	}
	j->lk_wait = NULL;
	region_task_mutex_unlock(&L->lock);
	region_task_cond_destroy(&w.cond);
	return rc;
}

/*
 * Sets a lock of owner o: 0, or the errno.  An interrupted or failed
 * attempt leaves nothing new on the server, before it is answered (an
 * SA_RESTART caller comes back with the same LOCK): a LOCK queued is
 * cancelled; one whose fate is unknown is cancelled and the range
 * unlocked, what the owner held there before included, as Linux's
 * nlmclnt_lock() does.
 */
static int set_lock(struct job *j, struct node *n, struct lk_owner *o,
		    uint64_t off, uint64_t len, bool excl, bool wait)
{
	struct lock_state *L = &j->fs->locks;
	struct nc_nlm_lock lk = lk_lock_of(o, off, len, excl);
	enum left left;
	bool got, held;
	int rc;

	rc = wait_closes(j, n);
	if (rc)
		return rc;
	/* As Linux: what was written before the lock is the server's. */
	rc = wb_wait_sent(j->fs, n, 0, 0);
	if (rc)
		return rc;
	rc = lock_call(j, n, &lk, wait, &got, &left);
	if (got)
		return granted(j, n, o, &lk);
	if (left == LEFT_NOTHING)
		return rc;
	if (wait)
		lk_jan_do(j->fs, JAN_CANCEL, &n->fh, &lk, &j->cred, true);
	region_task_mutex_lock_nofail(&L->lock);
	held = owner_holds(n, o, off, lk_end_of(off, len));
	region_task_mutex_unlock(&L->lock);
	/*
	 * A CANCEL that meets a grant on its way ends the wait but may not
	 * release what the server took for it: an UNLOCK does, where the
	 * owner held nothing before.
	 */
	if (left == LEFT_UNKNOWN && held)
		lk_release(j->fs, n, o, off, len, &j->cred, true);
	else if (!held)
		lk_jan_do(j->fs, JAN_UNLOCK, &n->fh, &lk, &j->cred, true);
	return rc;
}

/* The server's lock manager. */

static enum nc_nlm_stat on_granted(void *arg, const struct nc_fh *fh,
				   const struct nc_nlm_lock *lk);
static void on_rebooted(void *arg, int state);

/*
 * The server's lock manager, found at the first lock, in the caller's task
 * (as Linux's lockd binds at its first call): a mount never waits for a
 * server's rpcbind it may not need.  Until found, each lock looks again
 * and fails with ENOLCK; once found, this host's side is started, once.
 */
int lk_nlm_ready(struct intrfs *fs)
{
	struct lock_state *L = &fs->locks;
	struct nc_lockd_ops ops = { on_granted, on_rebooted, fs };
	char err[512] = "";
	int rc;

	/* acquire: pairs with the release below; callbacks is set then. */
	if (atomic_load_explicit(&L->nlm_ok, memory_order_acquire))
		return 0;
	rc = region_task_mutex_lock(&L->setup, TASK_KILLABLE, TASK_FOREVER);
	if (rc)
		return rc;
	if (atomic_load_explicit(&L->nlm_ok, memory_order_relaxed))
		goto out;
	rc = nc_nlm_start(fs->nc, err, sizeof(err));
	if (rc) {
		/* Once, not at every lock. */
		if (!L->nlm_missing)
			fprintf(stderr,
				"intrfs: no lock manager on server %s: %s: "
				"locks fail with ENOLCK (nolock keeps them "
				"local)\n",
				nc_client_server(fs->nc), err);
		L->nlm_missing = true;
		rc = rc == -EINTR ? rc : -ENOLCK;
		goto out;
	}
	err[0] = '\0';
	rc = nc_lockd_start(fs->nc, &ops, err, sizeof(err));
	L->callbacks = rc == 0;
	if (rc)
		fprintf(stderr,
			"intrfs: no lock callbacks: %s: a blocked lock is "
			"granted when it is sent again, every %d ms\n",
			err, LK_RESEND_POLL_MS);
	else if (err[0])
		fprintf(stderr, "intrfs: %s\n", err);
	rc = 0;
	atomic_store_explicit(&L->nlm_ok, true, memory_order_release);
out:
	region_task_mutex_unlock(&L->setup);
	return rc;
}

/* The FUSE requests. */

/*
 * The owner a request names, held until the request ends: for flock(),
 * its open file (but for a file opened before locks_open() numbered
 * them: none is), else FUSE's lock_owner.
 */
static struct lk_owner *job_owner(struct job *j, bool flock, pid_t pid)
{
	struct lock_state *L = &j->fs->locks;
	uint64_t id = flock && j->fi.fh ? j->fi.fh : j->fi.lock_owner;
	struct lk_owner *o;

	region_task_mutex_lock_nofail(&L->lock);
	o = owner_get(j->fs, id, flock, pid, &j->cred);
	region_task_mutex_unlock(&L->lock);
	return o;
}

static void job_owner_put(struct job *j, struct lk_owner *o)
{
	struct lock_state *L = &j->fs->locks;

	region_task_mutex_lock_nofail(&L->lock);
	lk_owner_put(j->fs, o);
	region_task_mutex_unlock(&L->lock);
}

/* Sets or unsets a lock of the request's owner on [off, off + len). */
static int lock_request(struct job *j, bool flock, pid_t pid, int type,
			uint64_t off, uint64_t len, bool wait)
{
	struct node *n = node_of(j->fs, j->ino);
	struct lk_owner *o;
	int rc;

	/* Without the server's lock manager, no lock can be had. */
	rc = lk_nlm_ready(j->fs);
	if (rc)
		return rc;
	o = job_owner(j, flock, pid);
	if (!o)
		return -ENOLCK;
	if (type == F_UNLCK) {
		/* As Linux's do_unlk(): what was written goes first. */
		rc = wb_wait_sent(j->fs, n, 0, 0);
		if (rc == 0)
			lk_release(j->fs, n, o, off, len, &j->cred, true);
	} else {
		rc = set_lock(j, n, o, off, len, type == F_WRLCK, wait);
	}
	job_owner_put(j, o);
	return rc;
}

int locks_setlk(struct job *j)
{
	const struct flock *fl = &j->lock;

	return lock_request(j, false, fl->l_pid, fl->l_type,
			    (uint64_t)fl->l_start, (uint64_t)fl->l_len,
			    j->flags != 0);
}

int locks_flock(struct job *j)
{
	int op = j->flags & ~LOCK_NB;

	/* A whole-file lock of the open file, as Linux NFS has flock(). */
	return lock_request(j, true, j->tid,
			    op == LOCK_UN ? F_UNLCK :
			    op == LOCK_EX ? F_WRLCK :
					    F_RDLCK,
			    0, 0, !(j->flags & LOCK_NB));
}

int locks_getlk(struct job *j)
{
	struct lock_state *L = &j->fs->locks;
	struct node *n = node_of(j->fs, j->ino);
	struct flock *fl = &j->lock;
	struct nc_nlm_lock lk, holder;
	enum nc_nlm_stat st = NC_NLM_FAILED;
	struct lk_owner *o;
	int rc;

	rc = lk_nlm_ready(j->fs);
	if (rc == 0)
		rc = wait_closes(j, n);
	if (rc)
		return rc;
	o = job_owner(j, false, fl->l_pid);
	if (!o)
		return -ENOLCK;
	lk = lk_lock_of(o, (uint64_t)fl->l_start, (uint64_t)fl->l_len,
			fl->l_type == F_WRLCK);
	for (;;) {
		rc = nc_nlm_test(j->fs->nc, &j->cred, &n->fh, &lk, &st,
				 &holder);
		if (rc || st != NC_NLM_DENIED_GRACE_PERIOD)
			break;
		/* The server reclaims: ask again, as Linux does. */
		rc = lk_sleep(j, LK_GRACE_MS);
		if (rc)
			break;
	}
	if (rc == 0 && st == NC_NLM_GRANTED) {
		fl->l_type = F_UNLCK;
	} else if (rc == 0 && st == NC_NLM_DENIED) {
		fl->l_type = holder.exclusive ? F_WRLCK : F_RDLCK;
		fl->l_whence = SEEK_SET;
		/* Past LK_OFF_MAX, the kernel would refuse the answer. */
		fl->l_start = holder.off > (uint64_t)LK_OFF_MAX ?
				      LK_OFF_MAX :
				      (off_t)holder.off;
		fl->l_len = holder.len > (uint64_t)LK_OFF_MAX - holder.off ?
				    0 :
				    (off_t)holder.len;
		/*
		 * A holder of this mount is named by its process.  Another
		 * client's cannot be: its svid means nothing here, and FUSE
		 * maps the pid through the caller's namespace (a negative one,
		 * Linux NFS's answer, becomes 0): 0.
		 */
		fl->l_pid = 0;
		region_task_mutex_lock_nofail(&L->lock);
		for (struct lk_owner *x = L->owners; x; x = x->next)
			if (x->name.oh_len == holder.oh_len &&
			    memcmp(x->name.oh, holder.oh, holder.oh_len) == 0)
				fl->l_pid = x->pid;
		region_task_mutex_unlock(&L->lock);
	} else if (rc == 0) {
		rc = nc_nlm_errno(st);
	}
	job_owner_put(j, o);
	return rc;
}

bool locks_held(struct intrfs *fs, struct node *n, uint64_t owner)
{
	struct lock_state *L = &fs->locks;
	bool held = false;

	/* relaxed: a hint, exact once under the lock. */
	if (!atomic_load_explicit(&n->nlocks, memory_order_relaxed))
		return false;
	region_task_mutex_lock_nofail(&L->lock);
	for (const struct lk_range *r = n->locks; r && !held; r = r->next)
		held = r->o->id == owner && !r->o->flock;
	region_task_mutex_unlock(&L->lock);
	return held;
}

uint64_t locks_open(struct intrfs *fs)
{
	/* relaxed: only unique, ordered by nothing. */
	return atomic_fetch_add_explicit(&fs->locks.files, 1,
					 memory_order_relaxed) +
	       1;
}

/*
 * Lets go of the ranges on n that match, by the janitor's UNLOCKs,
 * waited for: those of POSIX owner `owner`, all of them in one; or with
 * by_file, those taken through open file `owner`, one each (their owner
 * may hold others, through other open files).
 */
static void release_matching(struct job *j, struct node *n, uint64_t owner,
			     bool by_file)
{
	struct lock_state *L = &j->fs->locks;

	for (;;) {
		struct lk_owner *o = NULL;
		uint64_t off = 0, len = 0;
		struct nc_cred cred;

		region_task_mutex_lock_nofail(&L->lock);
		for (struct lk_range *r = n->locks; r && !o; r = r->next) {
			if (by_file ? r->file != owner :
				      r->o->flock || r->o->id != owner)
				continue;
			o = r->o;
			if (!by_file)
				break;
			off = r->start;
			len = r->end == LK_EOF ? 0 : r->end - r->start + 1;
		}
		if (o) {
			o->refs++;
			cred = o->cred;
		}
		region_task_mutex_unlock(&L->lock);
		if (!o)
			return;
		lk_release(j->fs, n, o, off, len, &cred, true);
		region_task_mutex_lock_nofail(&L->lock);
		lk_owner_put(j->fs, o);
		region_task_mutex_unlock(&L->lock);
	}
}

/* A close (FLUSH) releases its owner's (the caller's file table's). */
void locks_close(struct job *j, struct node *n, uint64_t owner)
{
	release_matching(j, n, owner, false);
}

bool locks_release_begin(struct intrfs *fs, struct node *n, uint64_t file)
{
	struct lock_state *L = &fs->locks;
	struct lk_closing *c;
	bool held = false;

	/* relaxed: a hint, exact once under the lock. */
	if (!atomic_load_explicit(&n->nlocks, memory_order_relaxed))
		return false;
	region_task_mutex_lock_nofail(&L->lock);
	for (const struct lk_range *r = n->locks; r && !held; r = r->next)
		held = r->file == file;
	/* Without memory, later requests do not wait: they may meet them. */
	if (held && (c = calloc(1, sizeof(*c)))) {
		c->n = n;
		c->file = file;
		c->seq = ++L->close_seq;
		c->next = L->closing;
		L->closing = c;
	}
	region_task_mutex_unlock(&L->lock);
	return held;
}

void locks_release(struct job *j, struct node *n, uint64_t file)
{
	struct lock_state *L = &j->fs->locks;
	struct lk_closing *c = NULL;

	release_matching(j, n, file, true);
	region_task_mutex_lock_nofail(&L->lock);
	for (struct lk_closing **p = &L->closing; *p; p = &(*p)->next) {
		if ((*p)->file == file) {
			c = *p;
			*p = c->next;
			break;
		}
	}
	if (c)
		for (struct lk_waiter *w = L->close_waiters; w; w = w->next)
			if (w->n == n)
				region_task_cond_broadcast(&w->cond);
	region_task_mutex_unlock(&L->lock);
	free(c);
}

/* The callbacks (on lockd.c's thread, which must not wait long). */

static enum nc_nlm_stat on_granted(void *arg, const struct nc_fh *fh,
				   const struct nc_nlm_lock *lk)
{
	struct intrfs *fs = arg;
	struct lock_state *L = &fs->locks;
	enum nc_nlm_stat st = NC_NLM_DENIED;

	region_task_mutex_lock_nofail(&L->lock);
	for (struct lk_waiter *w = L->waiters; w; w = w->next) {
		/* As Linux's nlmclnt_grant(): the file, owner and range. */
		if (w->n->fh.len != fh->len ||
		    memcmp(w->n->fh.data, fh->data, fh->len) != 0 ||
		    w->lk.oh_len != lk->oh_len ||
		    memcmp(w->lk.oh, lk->oh, lk->oh_len) != 0 ||
		    w->lk.off != lk->off || w->lk.len != lk->len)
			continue;
		w->granted = true;
		region_task_cond_broadcast(&w->cond);
		st = NC_NLM_GRANTED;
		break;
	}
	region_task_mutex_unlock(&L->lock);
	return st;
}

static void on_rebooted(void *arg, int state)
{
	struct intrfs *fs = arg;
	struct lock_state *L = &fs->locks;
	struct jan_item *it = calloc(1, sizeof(*it));

	fprintf(stderr,
		"intrfs: server %s rebooted (its status monitor's state is "
		"%d): reclaiming the locks held on it\n",
		nc_client_server(fs->nc), state);
	region_task_mutex_lock_nofail(&L->lock);
	/* The server forgot every blocked LOCK: send them again. */
	for (struct lk_waiter *w = L->waiters; w; w = w->next) {
		w->resend = true;
		region_task_cond_broadcast(&w->cond);
	}
	if (it && L->running) {
		it->op = JAN_RECLAIM;
		it->detached = true;
		lk_jan_queue(L, it);
		it = NULL;
	}
	region_task_mutex_unlock(&L->lock);
	free(it);
}
