/*
 * The lock janitor, the lock journal, and the start and stop of the
 * daemon's file locks (locks.c has the requests).
 *
 * The janitor sends CANCEL, UNLOCK and reclaims: a thread with a task of
 * its own that no signal reaches (Linux's rpciod, where lockd's
 * asynchronous calls run), idle between them in a wait the hung-task
 * watchdog does not count.  A caller waits killably for its item, and a
 * killed caller leaves it to finish.  It tries UNLOCK until the server
 * answers (or the mount goes), CANCEL three times, then UNLOCK instead;
 * after a reboot of the server it reclaims every range held, and one the
 * server refuses is logged and dropped.
 *
 * A daemon that dies leaves its locks on the server.  Each daemon notes
 * the owners and files it locks in a journal of its own,
 * /run/intrfs/locks-SERVER-PORT-HASH.PID; the next mount of the same
 * export on this host unlocks what a dead daemon's journal names, as that
 * daemon's owners, in the janitor's first item (a mount never waits for
 * it).  Never FREE_ALL: the server frees by host, and would free every
 * mount's locks and the kernel's.
 *
 * The janitor's queue is fs->locks.lock's, as everything of locks.c.
 */
#include "locks_i.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

/* The janitor's UNLOCK after a failure; its CANCEL, at most so often. */
#define LK_RETRY_MS 1000
#define LK_CANCEL_TRIES 3

/* The journal. */

/* A file handle or an owner handle as hex. */
static void hex(char *out, const unsigned char *p, unsigned len)
{
	for (unsigned i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	out[2 * len] = '\0';
}

/*
 * One line when an owner takes its first lock on a file, "L FH SVID OH";
 * the journal starts over (journal_reset()) once nothing is held and
 * nothing is on its way.  Best effort: a journal that cannot be written
 * only costs what a dead daemon would leave on the server.  locks.lock
 * held.
 */
void lk_journal_note(struct intrfs *fs, const struct node *n,
		     const struct lk_owner *o)
{
	char fh[2 * NC_FHSIZE + 1], oh[2 * NC_NLM_OHSIZE + 1], line[512];
	int len;

	if (fs->locks.journal_fd < 0)
		return;
	hex(fh, n->fh.data, n->fh.len);
	hex(oh, o->name.oh, o->name.oh_len);
	len = snprintf(line, sizeof(line), "L %s %" PRId32 " %s\n", fh,
		       o->name.svid, oh);
	if (write(fs->locks.journal_fd, line, (size_t)len) != len)
		fprintf(stderr, "intrfs: the lock journal %s: %s\n",
			fs->locks.journal, strerror(errno));
}

/* This process's start time (/proc/self/stat's 22nd field), or 0. */
static unsigned long long start_time(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long t = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2,
			 "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u "
			 "%*d %*d %*d %*d %*d %*d %llu",
			 &t) != 1)
		return 0;
	return t;
}

/* The journal holds its daemon's name: "intrfs PID START". */
static void journal_reset(struct intrfs *fs)
{
	struct lock_state *L = &fs->locks;
	char line[64];
	int len;

	if (L->journal_fd < 0)
		return;
	len = snprintf(line, sizeof(line), "intrfs %d %llu\n", (int)getpid(),
		       start_time(getpid()));
	if (ftruncate(L->journal_fd, 0) < 0 ||
	    write(L->journal_fd, line, (size_t)len) != len)
		fprintf(stderr, "intrfs: the lock journal %s: %s\n", L->journal,
			strerror(errno));
}

/* The janitor. */

static void jan_wake(struct lock_state *L)
{
	region_task_cond_broadcast(&L->jan_cond);
}

/* Queues it (locks.lock held). */
void lk_jan_queue(struct lock_state *L, struct jan_item *it)
{
	struct jan_item **p = &L->queue;

	while (*p)
		p = &(*p)->next;
	it->next = NULL;
	*p = it;
	jan_wake(L);
}

/*
 * Has the janitor make the call, and waits for it killably: a caller that
 * is killed leaves it to the janitor.  Without memory, makes it here.
 */
void lk_jan_do(struct intrfs *fs, enum jan_op op, const struct nc_fh *fh,
	       const struct nc_nlm_lock *lk, const struct nc_cred *cred,
	       bool wait)
{
	struct lock_state *L = &fs->locks;
	struct jan_item *it = calloc(1, sizeof(*it));
	int rc = 0;

	if (!it) {
		enum nc_nlm_stat st;

		fprintf(stderr, "intrfs: out of memory: a lock call made at "
				"once\n");
		if (op == JAN_UNLOCK)
			rc = nc_nlm_unlock(fs->nc, cred, fh, lk, &st);
		else
			rc = nc_nlm_cancel(fs->nc, cred, fh, lk, true, &st);
		(void)rc;
		return;
	}
	it->op = op;
	it->fh = *fh;
	it->lk = *lk;
	it->cred = *cred;
	region_task_mutex_lock_nofail(&L->lock);
	it->detached = !wait || !L->running;
	if (!L->running) {
		/* No janitor (the mount is going): nothing can be done. */
		region_task_mutex_unlock(&L->lock);
		free(it);
		return;
	}
	lk_jan_queue(L, it);
	while (wait && !it->done && rc == 0)
		rc = region_task_cond_wait(&L->done_cond, &L->lock,
					   TASK_KILLABLE, TASK_FOREVER);
	if (wait && !it->done)
		it->detached = true; /* killed: the janitor goes on */
	else if (wait)
		free(it);
	region_task_mutex_unlock(&L->lock);
}

/* Sleeps ms in the janitor's task before it tries again. */
static void jan_pause(struct lock_state *L, int64_t ms)
{
	int rc = region_task_sleep(ms * LK_MS, TASK_UNINTERRUPTIBLE);

	(void)L;
	(void)rc; /* uninterruptible: the time passed */
}

/* A call given up on (the mount went): the journal must stay. */
static void jan_abandon(struct lock_state *L)
{
	region_task_mutex_lock_nofail(&L->lock);
	L->abandoned++;
	region_task_mutex_unlock(&L->lock);
}

/* The range has gone from the server (or must be taken for gone). */
static void log_lock(const char *what, const struct nc_nlm_lock *lk,
		     const char *why)
{
	if (lk->len)
		fprintf(stderr,
			"intrfs: %s the lock of process %" PRId32
			" on bytes %" PRIu64 "-%" PRIu64 ": %s\n",
			what, lk->svid, lk->off, lk->off + lk->len - 1, why);
	else
		fprintf(stderr,
			"intrfs: %s the lock of process %" PRId32
			" from byte %" PRIu64 " on: %s\n",
			what, lk->svid, lk->off, why);
}

static void jan_unlock(struct intrfs *fs, struct jan_item *it)
{
	enum nc_nlm_stat st;
	int rc;

	for (;;) {
		rc = nc_nlm_unlock(fs->nc, &it->cred, &it->fh, &it->lk, &st);
		if (rc == -ESHUTDOWN || rc == -ENOLCK) {
			jan_abandon(&fs->locks);
			return;
		}
		if (rc == 0 && st != NC_NLM_DENIED_GRACE_PERIOD) {
			/* A stale handle: the file and its locks are gone. */
			if (st != NC_NLM_GRANTED && st != NC_NLM_STALE_FH)
				log_lock("server refused to release", &it->lk,
					 nc_nlm_stat_name(st));
			return;
		}
		jan_pause(&fs->locks, rc ? LK_RETRY_MS : LK_GRACE_MS);
	}
}

/*
 * As Linux's nlmclnt_cancel(): GRANTED, DENIED and DENIED_GRACE_PERIOD all
 * say nothing waits any more; three failures, and an UNLOCK instead.
 */
static void jan_cancel(struct intrfs *fs, struct jan_item *it)
{
	enum nc_nlm_stat st;
	int rc = 0;

	for (unsigned i = 0; i < LK_CANCEL_TRIES; i++) {
		rc = nc_nlm_cancel(fs->nc, &it->cred, &it->fh, &it->lk, true,
				   &st);
		if (rc == -ESHUTDOWN || rc == -ENOLCK) {
			jan_abandon(&fs->locks);
			return;
		}
		if (rc == 0 && (st == NC_NLM_GRANTED || st == NC_NLM_DENIED ||
				st == NC_NLM_DENIED_GRACE_PERIOD))
			return;
		jan_pause(&fs->locks, LK_RETRY_MS);
	}
	jan_unlock(fs, it);
}

static void reclaim_all(struct intrfs *fs);
static void journal_recover(struct intrfs *fs);

static void *janitor_main(void *arg)
{
	struct intrfs *fs = arg;
	struct lock_state *L = &fs->locks;
	int rc;

	region_task_enter(L->task);
	region_task_mutex_lock_nofail(&L->lock);
	for (;;) {
		struct jan_item *it = L->queue;

		if (!it) {
			if (L->stop)
				break;
			/*
			 * Idle, waiting for work: not a hung task.  The
			 * watchdog reports waits that nothing may end, as
			 * khungtaskd does, which skips a kernel thread's
			 * idle wait (TASK_IDLE, or TASK_INTERRUPTIBLE where
			 * no signal reaches it): no interrupt is ever raised
			 * on this task, so this one may say interruptible,
			 * and one raised all the same is dropped.
			 */
			rc = region_task_cond_wait(&L->jan_cond, &L->lock,
						   TASK_INTERRUPTIBLE,
						   TASK_FOREVER);
			if (rc == -EINTR)
				region_task_flush_interrupts(L->task);
			continue;
		}
		L->queue = it->next;
		L->busy = true;
		region_task_mutex_unlock(&L->lock);
		switch (it->op) {
		case JAN_UNLOCK:
			jan_unlock(fs, it);
			break;
		case JAN_CANCEL:
			jan_cancel(fs, it);
			break;
		case JAN_RECLAIM:
			reclaim_all(fs);
			break;
		case JAN_RECOVER:
			journal_recover(fs);
			break;
		}
		region_task_mutex_lock_nofail(&L->lock);
		L->busy = false;
		it->done = true;
		if (it->detached)
			free(it);
		region_task_cond_broadcast(&L->done_cond);
		/* Nothing held, nothing on its way: nothing to journal. */
		if (!L->nranges && !L->queue)
			journal_reset(fs);
	}
	region_task_mutex_unlock(&L->lock);
	region_task_leave(L->task);
	return NULL;
}

/*
 * Every range held is sent again with reclaim set, in the server's grace
 * period, by the janitor.  One that the server refuses (also for being
 * out of grace) is lost: it is logged and dropped here, as Linux's lockd
 * logs "failed to reclaim lock" (its process is not told).
 */
struct held {
	struct held *next;
	struct node *n;
	struct lk_owner *o;
	struct nc_nlm_lock lk;
};

static void reclaim_all(struct intrfs *fs)
{
	struct lock_state *L = &fs->locks;
	struct held *list = NULL, *h;
	unsigned all = 0, lost = 0;

	/* A copy of every range, its node pinned and owner held meanwhile. */
	region_task_mutex_lock_nofail(&L->lock);
	for (struct node *n = L->nodes; n; n = n->lnext) {
		for (struct lk_range *r = n->locks; r; r = r->next) {
			h = malloc(sizeof(*h));
			if (!h)
				break;
			h->n = n;
			h->o = r->o;
			h->lk = lk_lock_of(
				r->o, r->start,
				r->end == LK_EOF ? 0 : r->end - r->start + 1,
				r->exclusive);
			r->o->refs++;
			node_pin(fs, n);
			h->next = list;
			list = h;
		}
	}
	region_task_mutex_unlock(&L->lock);
	for (h = list; h; h = h->next, all++) {
		enum nc_nlm_stat st = NC_NLM_FAILED;
		int rc = nc_nlm_lock(fs->nc, &h->o->cred, &h->n->fh, &h->lk,
				     false, true, &st);
		struct lk_spare sp;
		bool had;

		if (rc == 0 && st == NC_NLM_GRANTED)
			continue;
		lost++;
		log_lock("failed to reclaim", &h->lk,
			 rc ? strerror(-rc) : nc_nlm_stat_name(st));
		lk_spare_get(&sp, 1);
		region_task_mutex_lock_nofail(&L->lock);
		had = h->n->locks != NULL;
		lk_ranges_set(L, h->n, h->o, h->lk.off,
			      lk_end_of(h->lk.off, h->lk.len), false, true, 0,
			      &sp);
		lk_pin_change(fs, h->n, had);
		region_task_mutex_unlock(&L->lock);
		lk_spare_put(&sp);
	}
	fprintf(stderr, "intrfs: server %s: %u locks reclaimed, %u lost\n",
		nc_client_server(fs->nc), all - lost, lost);
	while ((h = list)) {
		list = h->next;
		region_task_mutex_lock_nofail(&L->lock);
		lk_owner_put(fs, h->o);
		region_task_mutex_unlock(&L->lock);
		node_unpin(fs, h->n);
		free(h);
	}
}

/* A dead daemon's locks. */

static bool unhex(const char *s, unsigned char *out, unsigned max,
		  unsigned *len)
{
	size_t n = strlen(s);

	if (n % 2 || n / 2 > max)
		return false;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return false;
		out[i] = (unsigned char)v;
	}
	*len = (unsigned)(n / 2);
	return true;
}

/*
 * The journal at path, of a daemon that is gone: each owner it names has
 * every lock on its file released, as that owner (the UNLOCK of a lock it
 * no longer held is a no-op for the server).  Then the journal goes.
 */
static void journal_replay(struct intrfs *fs, const char *path)
{
	FILE *f = fopen(path, "re");
	char line[512], fh[2 * NC_FHSIZE + 2], oh[2 * NC_NLM_OHSIZE + 2];
	struct nc_cred cred;
	unsigned n = 0;

	if (!f)
		return;
	nc_cred_self(&cred);
	while (fgets(line, sizeof(line), f)) {
		struct nc_nlm_lock lk;
		struct nc_fh h;
		int32_t svid;

		memset(&lk, 0, sizeof(lk));
		memset(&h, 0, sizeof(h));
		if (sscanf(line, "L %129s %" SCNd32 " %193s", fh, &svid, oh) !=
			    3 ||
		    !unhex(fh, h.data, NC_FHSIZE, &h.len) ||
		    !unhex(oh, lk.oh, NC_NLM_OHSIZE, &lk.oh_len))
			continue;
		lk.svid = svid;
		lk_jan_do(fs, JAN_UNLOCK, &h, &lk, &cred, false);
		n++;
	}
	fclose(f);
	if (n)
		fprintf(stderr,
			"intrfs: releasing the locks a daemon that died left "
			"on server %s (%u owners and files, from %s)\n",
			nc_client_server(fs->nc), n, path);
	unlink(path);
}

/*
 * Whether the journal's daemon still runs: its pid, with its start time,
 * and not a zombie.  A daemon that died is a zombie until its parent
 * reaps it (a mount command's daemon in the foreground, a test's), and
 * kill(pid, 0) still finds it then: its state in /proc/PID/stat says.
 */
static bool journal_live(const char *path)
{
	FILE *f = fopen(path, "re");
	unsigned long long start;
	char stat[64], buf[1024], *p;
	int pid, fd;
	ssize_t n;
	bool live = false;

	if (!f)
		return true; /* not ours to touch */
	if (fscanf(f, "intrfs %d %llu", &pid, &start) == 2)
		live = pid == getpid() ||
		       ((kill(pid, 0) == 0 || errno == EPERM) &&
			start_time(pid) == start);
	fclose(f);
	if (!live || pid == getpid())
		return live;
	snprintf(stat, sizeof(stat), "/proc/%d/stat", pid);
	fd = open(stat, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	/* "PID (COMM) STATE ...": COMM may hold anything, ')' too. */
	p = strrchr(buf, ')');
	return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

/*
 * This mount's journal, JOURNAL_DIR/locks-KEY.PID (journal_key()): the
 * same server, port and export share the prefix.  Local files only: made
 * at mount, before any lock.
 */
static void journal_create(struct intrfs *fs)
{
	struct lock_state *L = &fs->locks;
	char key[300], path[PATH_MAX + 32];
	int rc = journal_key(fs, key, sizeof(key));

	if (rc) {
		fprintf(stderr,
			"intrfs: no lock journal in %s (%s): if this daemon "
			"dies, its locks stay on the server until it restarts\n",
			JOURNAL_DIR, strerror(-rc));
		return;
	}
	snprintf(L->prefix, sizeof(L->prefix), "locks-%s", key);
	snprintf(path, sizeof(path), "%s/%s.%d", JOURNAL_DIR, L->prefix,
		 (int)getpid());
	L->journal = strdup(path);
	L->journal_fd = L->journal ?
				open(path,
				     O_WRONLY | O_CREAT | O_TRUNC | O_APPEND |
					     O_NOFOLLOW | O_CLOEXEC,
				     0600) :
				-1;
	if (L->journal_fd < 0)
		fprintf(stderr,
			"intrfs: no lock journal %s (%s): if this daemon dies, "
			"its locks stay on the server until it restarts\n",
			path, strerror(errno));
	journal_reset(fs);
}

/*
 * The journals of dead daemons of the same export: their owners' locks
 * are released (the janitor's first item: a mount does not wait for it).
 */
static void journal_recover(struct intrfs *fs)
{
	struct lock_state *L = &fs->locks;
	size_t plen = strlen(L->prefix);
	char path[PATH_MAX + 32];
	DIR *d = plen ? opendir(JOURNAL_DIR) : NULL;

	for (struct dirent *e; d && (e = readdir(d));) {
		if (strncmp(e->d_name, L->prefix, plen) != 0 ||
		    e->d_name[plen] != '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", JOURNAL_DIR, e->d_name);
		if (journal_live(path))
			continue;
		if (lk_nlm_ready(fs)) {
			fprintf(stderr,
				"intrfs: the locks a daemon that died left "
				"(%s) stay: no lock manager on server %s\n",
				path, nc_client_server(fs->nc));
			continue;
		}
		journal_replay(fs, path);
	}
	if (d)
		closedir(d);
}

/* Start and stop. */

int locks_start(struct intrfs *fs)
{
	struct lock_state *L = &fs->locks;
	struct task_attr attr = { "locks", REGION_POLICY_REGION, NULL };
	struct jan_item *it;
	struct utsname u;
	int rc;

	region_task_mutex_init(&L->lock);
	region_task_mutex_init(&L->setup);
	region_task_cond_init(&L->jan_cond);
	region_task_cond_init(&L->done_cond);
	L->journal_fd = -1;
	if (uname(&u) < 0)
		snprintf(u.nodename, sizeof(u.nodename), "localhost");
	snprintf(L->oh_tag, sizeof(L->oh_tag), "@%.24s:%d.%llx", u.nodename,
		 (int)getpid(), start_time(getpid()));
	if (fs->o.nolock || (fs->o.local_posix && fs->o.local_flock))
		return 0;
	L->task = region_task_create(&attr);
	if (!L->task)
		return -ENOMEM;
	rc = pthread_create(&L->janitor, NULL, janitor_main, fs);
	if (rc) {
		fprintf(stderr, "intrfs: cannot start the lock janitor: %s\n",
			strerror(rc));
		return -rc;
	}
	L->running = true;
	journal_create(fs);
	it = calloc(1, sizeof(*it));
	if (it) {
		it->op = JAN_RECOVER;
		it->detached = true;
		region_task_mutex_lock_nofail(&L->lock);
		lk_jan_queue(L, it);
		region_task_mutex_unlock(&L->lock);
	}
	return 0;
}

/* How long an unmount gives the UNLOCKs of what is still held. */
#define LK_STOP_S 5

void locks_stop(struct intrfs *fs)
{
	struct lock_state *L = &fs->locks;
	struct nc_cred cred;
	bool clean;

	if (!L->running) {
		nc_lockd_stop(fs->nc);
		return;
	}
	/* What no close released (the mount was cut): released now. */
	nc_cred_self(&cred);
	for (;;) {
		struct lk_owner *o = NULL;
		struct node *n = NULL;

		region_task_mutex_lock_nofail(&L->lock);
		if (L->nodes) {
			n = L->nodes;
			o = n->locks->o;
			o->refs++;
		}
		region_task_mutex_unlock(&L->lock);
		if (!n)
			break;
		lk_release(fs, n, o, 0, 0, &cred, false);
		region_task_mutex_lock_nofail(&L->lock);
		lk_owner_put(fs, o);
		region_task_mutex_unlock(&L->lock);
	}
	/* The janitor ends once its queue is empty, or is cut short. */
	region_task_mutex_lock_nofail(&L->lock);
	L->stop = true;
	jan_wake(L);
	region_task_mutex_unlock(&L->lock);
	for (unsigned i = 0; i < LK_STOP_S * 10; i++) {
		region_task_mutex_lock_nofail(&L->lock);
		clean = !L->queue && !L->busy;
		region_task_mutex_unlock(&L->lock);
		if (clean)
			break;
		usleep(100000);
	}
	if (!clean)
		fprintf(stderr,
			"intrfs: server %s has not taken every UNLOCK %d s "
			"after the unmount: the next mount releases them\n",
			nc_client_server(fs->nc), LK_STOP_S);
	nc_lockd_stop(fs->nc);
	/* Whatever is still queued ends with -ESHUTDOWN now. */
	nc_client_shutdown(fs->nc);
	pthread_join(L->janitor, NULL);
	L->running = false;
	while (L->queue) {
		struct jan_item *it = L->queue;

		L->queue = it->next;
		free(it);
	}
	if (L->journal_fd >= 0) {
		close(L->journal_fd);
		/* Kept when something may still be held, for the next mount. */
		if (clean && !L->abandoned)
			unlink(L->journal);
	}
	free(L->journal);
	region_task_put(L->task);
}
