/*
 * Caller-declared regions: regions a caller of the mount opens around its
 * own requests, which every request it makes then runs inside, outside the
 * mount's own (the upper layer's region of the proposal, taken across
 * FUSE).  This file owns the callers' stacks (struct callers_state), the
 * ioctl that opens and closes them (REGION_CALLER_IOC, region.h), the
 * regions a process tree inherits from intrfs-region(1), and the reaper
 * that clears the stack of a thread that ends with regions open.
 *
 * Two ways in:
 *  - a thread's own, by the ioctl on any file or directory of the mount:
 *    a FUSE request carries its caller's thread id, so the stack is that
 *    thread's, for its requests to this mount;
 *  - a process tree's, by intrfs-region(1) (region_cg.h): a request's
 *    caller's cgroup path, from /proc/TID/cgroup, names the registry
 *    entries whose regions it runs in, outermost first.  The path is read
 *    at each request while the registry holds any entry, so a move between
 *    cgroups counts at once; while no intrfs-region runs, a request costs
 *    one stat of the registry (cached until the directory changes).
 * A request runs inside the tree's regions, then the thread's own, then
 * the mount's (job_run()).
 *
 * What a user may take.  Each thread's stack takes an entry of the table,
 * and a pidfd: a user without CAP_SYS_ADMIN may hold at most half of the
 * entries other users leave, never the last CALLER_RESERVED, so that no
 * user can take the last ones of another.  Every line a caller can make
 * the daemon log is rate-limited, per user (caller_log()).
 *
 * Who may hold what.  An uninterruptible region holds even SIGKILL back
 * while its request waits for the server, so it is for callers with
 * CAP_SYS_ADMIN in the daemon's user namespace, as the kernel series'
 * PR_REGION: another caller's is held as killable, unless the mount opts
 * in with caller_hold_any; either way no fatal signal is held past
 * callers_hold_ns() (interrupt.c).  intrfs-region(1)'s regions are root's:
 * only a registry entry root wrote counts, for the very cgroup it names.
 *
 * A thread that ends with regions open: each thread with a stack has a
 * pidfd (PIDFD_THREAD) that the reaper thread polls; when the thread
 * exits, the reaper clears its stack and logs it, and a request whose tid
 * matches a stack whose pidfd says the thread exited (a tid reused before
 * the reaper ran) gets none.  On kernels without PIDFD_THREAD (before
 * 6.9), the reaper looks every second at each stack's thread by its tid
 * and start time.
 *
 * The sites of caller regions are interned and never freed: a task's
 * region stack holds site pointers that introspection (intrfsctl, the
 * hung-task watchdog, the trace) follows with no hold on the job.
 *
 * Lock order: callers.lock is a leaf, never held across a read of /proc
 * or any wait; intern_lock is a leaf taken under it.
 */
#include "fusefs_i.h"
#include "region_cg.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL /* Linux 6.9's value */
#endif

/* Threads with a stack at once; a begin past it gets ENOSPC. */
#define CALLER_THREADS_MAX 4096
/* Entries only callers with CAP_SYS_ADMIN may take. */
#define CALLER_RESERVED 64
/* Lines a user's callers may have logged, so many every so often. */
#define CALLER_LOG_BURST 10
#define CALLER_LOG_INTERVAL_S 5
/* Linux caps a major timeout there (NFS_MAX_TCP_TIMEOUT, netclient's). */
#define MAJOR_TIMEOUT_MAX_S 600
/* Distinct (kind, reason, origin) sites kept; past it, a generic one. */
#define INTERN_MAX 4096
#define INTERN_BUCKETS 256
/* How often the reaper looks at the threads, without PIDFD_THREAD. */
#define SWEEP_MS 1000
/* A registry whose change is this recent is read again (coarse mtimes). */
#define REGISTRY_SETTLE_NS 50000000ull

struct caller {
	pid_t tid;
	uid_t uid; /* whose entry of the table it is */
	int pidfd; /* -1 without PIDFD_THREAD: identified by start */
	uint64_t start; /* the thread's start time, in clock ticks */
	char comm[16];
	unsigned depth;
	const struct region_site *stack[CALLER_DEPTH_MAX];
	/* The kind each begin asked for, which its end names. */
	uint8_t asked[CALLER_DEPTH_MAX];
	struct caller *next;
};

/* The threads with a stack of one user. */
struct caller_user {
	uid_t uid;
	unsigned n;
	struct caller_user *next;
};

/* Who asks: from /proc/TID/status, while the thread waits in the ioctl. */
struct ident {
	uid_t uid; /* its filesystem uid, as FUSE has it */
	bool admin; /* CAP_SYS_ADMIN in the daemon's user namespace */
};

/* Interned sites. */

static const char caller_file[] = "caller";

struct interned {
	struct region_site site;
	struct interned *next;
	char text[]; /* reason, then origin */
};

static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;
static struct interned *interned[INTERN_BUCKETS]; /* under intern_lock */
static unsigned ninterned; /* under intern_lock */

static const struct region_site too_many[] = {
	[REGION_UNINTERRUPTIBLE] = { REGION_UNINTERRUPTIBLE,
				     "(too many caller reasons)", caller_file,
				     0, "caller" },
	[REGION_KILLABLE] = { REGION_KILLABLE, "(too many caller reasons)",
			      caller_file, 0, "caller" },
};

static unsigned str_hash(const char *s, unsigned h)
{
	for (; *s; s++)
		h = h * 31u + (unsigned char)*s;
	return h;
}

/* The site of a caller region of kind, for reason, made by origin. */
static const struct region_site *intern(enum region_kind kind,
					const char *reason, const char *origin)
{
	unsigned h = str_hash(origin, str_hash(reason, (unsigned)kind)) %
		     INTERN_BUCKETS;
	size_t rl = strlen(reason), ol = strlen(origin);
	struct interned *e;

	pthread_mutex_lock(&intern_lock);
	for (e = interned[h]; e; e = e->next)
		if (e->site.kind == kind &&
		    strcmp(e->site.reason, reason) == 0 &&
		    strcmp(e->site.func, origin) == 0)
			goto out;
	e = ninterned < INTERN_MAX ? malloc(sizeof(*e) + rl + ol + 2) : NULL;
	if (!e) {
		pthread_mutex_unlock(&intern_lock);
		return &too_many[kind];
	}
	memcpy(e->text, reason, rl + 1);
	memcpy(e->text + rl + 1, origin, ol + 1);
	e->site.kind = kind;
	e->site.reason = e->text;
	e->site.file = caller_file;
	e->site.line = 0;
	e->site.func = e->text + rl + 1;
	e->next = interned[h];
	interned[h] = e;
	ninterned++;
out:
	pthread_mutex_unlock(&intern_lock);
	return &e->site;
}

bool caller_site(const struct region_site *site)
{
	return site->file == caller_file;
}

/* /proc, read with no lock held. */

/*
 * Reads path into buf (NUL-terminated); with root_only, only a regular
 * file root owns that nobody else may write.
 */
static bool read_file_as(const char *path, char *buf, size_t len,
			 bool root_only)
{
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return false;
	if (root_only &&
	    (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	     (st.st_mode & (S_IWGRP | S_IWOTH)))) {
		close(fd);
		return false;
	}
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return false;
	buf[n] = '\0';
	return true;
}

static bool read_file(const char *path, char *buf, size_t len)
{
	return read_file_as(path, buf, len, false);
}

/* Thread tid's start time (clock ticks after boot); 0 when it is gone. */
static uint64_t thread_start(pid_t tid)
{
	char path[64], buf[1024], *p;
	unsigned long long start;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)tid);
	if (!read_file(path, buf, sizeof(buf)))
		return 0;
	/* The name may hold spaces and parentheses: the last ')' ends it. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1,
			 " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u "
			 "%*u %*d %*d %*d %*d %*d %*d %llu",
			 &start) != 1)
		return 0;
	return start;
}

static void thread_comm(pid_t tid, char *out, size_t len)
{
	char path[64], buf[32];

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)tid);
	if (!read_file(path, buf, sizeof(buf)))
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	snprintf(out, len, "%s", buf[0] ? buf : "?");
}

/* A reason as the logs and the table show it: no control characters. */
static void clean_reason(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

/*
 * Who thread tid is: its filesystem uid, and whether it has CAP_SYS_ADMIN
 * in this daemon's user namespace (a capability of a namespace of its own
 * counts for nothing here).  -ESRCH when it is gone.
 */
static int caller_ident(const struct callers_state *cs, pid_t tid,
			struct ident *id)
{
	char path[64], buf[4096], *p;
	unsigned long long cap = 0;
	unsigned long uid[4];
	struct stat ns;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if (!read_file(path, buf, sizeof(buf)))
		return -ESRCH;
	p = strstr(buf, "\nUid:");
	if (!p || sscanf(p + 5, "%lu %lu %lu %lu", &uid[0], &uid[1], &uid[2],
			 &uid[3]) != 4)
		return -ESRCH;
	id->uid = (uid_t)uid[3];
	p = strstr(buf, "\nCapEff:");
	if (p && sscanf(p + 8, "%llx", &cap) != 1)
		cap = 0;
	id->admin = (cap >> CAP_SYS_ADMIN) & 1;
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)tid);
	if (id->admin && cs->userns_ino &&
	    (stat(path, &ns) < 0 || ns.st_ino != cs->userns_ino ||
	     ns.st_dev != cs->userns_dev))
		id->admin = false;
	return 0;
}

/* The log. */

void caller_log(struct callers_state *cs, uid_t uid, const char *fmt, ...)
{
	struct caller_ratelimit *rl =
		uid == 0 ? &cs->log_root : &cs->log[uid % CALLER_LOG_BUCKETS];
	uint64_t now = region_now_ns();
	unsigned missed = 0;
	char line[1024];
	va_list ap;
	bool ok;

	pthread_mutex_lock(&cs->lock);
	if (!rl->begin_ns ||
	    now - rl->begin_ns >= CALLER_LOG_INTERVAL_S * 1000000000ull) {
		missed = rl->missed;
		rl->begin_ns = now;
		rl->printed = rl->missed = 0;
	}
	ok = rl->printed < CALLER_LOG_BURST;
	if (ok)
		rl->printed++;
	else
		rl->missed++;
	pthread_mutex_unlock(&cs->lock);
	if (missed)
		fprintf(stderr,
			"intrfs: %u lines callers caused were not logged (at "
			"most %d every %d s for each user)\n",
			missed, CALLER_LOG_BURST, CALLER_LOG_INTERVAL_S);
	if (!ok)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "intrfs: %s\n", line);
}

uint64_t callers_hold_ns(const struct intrfs *fs)
{
	uint64_t ns;

	if (fs->o.caller_hold_max != CALLER_HOLD_UNSET)
		return (uint64_t)fs->o.caller_hold_max * 1000000000ull;
	/* The major timeout: timeo (deciseconds) × (retrans + 1). */
	ns = (uint64_t)(fs->nco.timeo ? fs->nco.timeo : 1) *
	     (fs->nco.retrans + 1) * 100000000ull;
	return ns < MAJOR_TIMEOUT_MAX_S * 1000000000ull ?
		       ns :
		       MAJOR_TIMEOUT_MAX_S * 1000000000ull;
}

/* The registry of intrfs-region(1)'s regions. */

static bool same_stat(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	       a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static bool registry_has_entries(void)
{
	DIR *d = opendir(REGION_REGISTRY_DIR);
	struct dirent *e;
	bool any = false;

	if (!d)
		return false;
	while (!any && (e = readdir(d)))
		any = e->d_name[0] != '.';
	closedir(d);
	return any;
}

/*
 * Whether any intrfs-region runs: the registry holds an entry.  The
 * answer is kept until the directory changes; a change is seen by its
 * times and size, which are coarse (a tick), so a directory that changed
 * in the last REGISTRY_SETTLE_NS is read again.
 */
static bool registry_busy(struct callers_state *cs)
{
	struct timespec now;
	struct stat st;
	bool busy;

	if (stat(REGION_REGISTRY_DIR, &st) < 0)
		return false;
	clock_gettime(CLOCK_REALTIME, &now);
	pthread_mutex_lock(&cs->lock);
	if (cs->reg_known && same_stat(&st, &cs->reg_st)) {
		busy = cs->reg_busy;
		pthread_mutex_unlock(&cs->lock);
		return busy;
	}
	pthread_mutex_unlock(&cs->lock);
	busy = registry_has_entries();
	pthread_mutex_lock(&cs->lock);
	cs->reg_st = st;
	cs->reg_busy = busy;
	cs->reg_known =
		(uint64_t)(now.tv_sec - st.st_mtim.tv_sec) * 1000000000ull +
			(uint64_t)(now.tv_nsec - st.st_mtim.tv_nsec) >
		REGISTRY_SETTLE_NS;
	pthread_mutex_unlock(&cs->lock);
	return busy;
}

/*
 * The region of registry entry id (its name's characters checked), for a
 * caller whose cgroup path up to the component that names it is cg
 * (cglen bytes): the entry's cgroup must be that very one, not one of the
 * same name that a user made in a subtree delegated to it.
 */
static const struct region_site *registry_region(const char *id, size_t len,
						 const char *cg, size_t cglen)
{
	char path[128], buf[PATH_MAX + REGION_CALLER_REASON_MAX + 32];
	char *reason, *nl, *where;
	enum region_kind kind;
	size_t wl;

	if (len == 0 || len > 32 || strspn(id, "0123456789.") < len)
		return NULL;
	snprintf(path, sizeof(path), "%s/%.*s", REGION_REGISTRY_DIR, (int)len,
		 id);
	/* intrfs-region(1) is root's: an entry anyone else wrote is not. */
	if (!read_file_as(path, buf, sizeof(buf), true))
		return NULL;
	reason = strchr(buf, '\n');
	if (!reason)
		return NULL;
	*reason++ = '\0';
	if (strcmp(buf, "killable") == 0)
		kind = REGION_KILLABLE;
	else if (strcmp(buf, "uninterruptible") == 0)
		kind = REGION_UNINTERRUPTIBLE;
	else
		return NULL;
	nl = strchr(reason, '\n');
	if (!nl)
		return NULL;
	*nl = '\0';
	/* "KIND\nREASON\nCGROUP\n": the cgroup's path ends with cg's. */
	where = nl + 1;
	wl = strcspn(where, "\n");
	if (wl < cglen || memcmp(where + wl - cglen, cg, cglen) != 0)
		return NULL;
	reason[REGION_CALLER_REASON_MAX - 1] = '\0';
	clean_reason(reason);
	return intern(kind, reason, "intrfs-region");
}

/*
 * The regions thread tid inherits from intrfs-region(1), outermost first,
 * at most max; how many.  The first hierarchy whose path names one holds
 * them all (intrfs-region uses one).
 */
static unsigned cgroup_regions(pid_t tid, const struct region_site **out,
			       unsigned max)
{
	char path[64], buf[8192];
	unsigned n = 0;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)tid);
	if (!read_file(path, buf, sizeof(buf)))
		return 0;
	for (char *line = buf; *line && n == 0;) {
		char *end = line + strcspn(line, "\n"), *p, *cg;

		/* "ID:CONTROLLERS:PATH": the path after the second ':'. */
		p = memchr(line, ':', (size_t)(end - line));
		p = p ? memchr(p + 1, ':', (size_t)(end - p - 1)) : NULL;
		cg = p ? p + 1 : NULL;
		while (p && p < end && n < max) {
			char *comp = p + 1;
			size_t len = strcspn(comp, "/\n");
			size_t pl = sizeof(REGION_CG_PREFIX) - 1;

			if (len > pl &&
			    strncmp(comp, REGION_CG_PREFIX, pl) == 0) {
				const struct region_site *s = registry_region(
					comp + pl, len - pl, cg,
					(size_t)(comp + len - cg));

				if (s)
					out[n++] = s;
			}
			p = comp + len < end && comp[len] == '/' ? comp + len :
								   NULL;
		}
		line = *end ? end + 1 : end;
	}
	return n;
}

/* The threads' own stacks. */

static struct caller **bucket(struct callers_state *cs, pid_t tid)
{
	return &cs->tab[(unsigned)tid % CALLER_BUCKETS];
}

/* Called with cs->lock held. */
static struct caller *find(struct callers_state *cs, pid_t tid)
{
	struct caller *c;

	for (c = *bucket(cs, tid); c; c = c->next)
		if (c->tid == tid)
			return c;
	return NULL;
}

/* User uid's count of threads with a stack.  Called with cs->lock held. */
static struct caller_user **user_slot(struct callers_state *cs, uid_t uid)
{
	struct caller_user **pp = &cs->users[(unsigned)uid % CALLER_BUCKETS];

	while (*pp && (*pp)->uid != uid)
		pp = &(*pp)->next;
	return pp;
}

static unsigned user_threads(struct callers_state *cs, uid_t uid)
{
	struct caller_user *u = *user_slot(cs, uid);

	return u ? u->n : 0;
}

/*
 * Whether a thread of a user holding n entries may have another: the
 * table has room, and for a caller without CAP_SYS_ADMIN, it would hold
 * at most half of what other users leave of the table but its last
 * CALLER_RESERVED entries.  So whatever one user holds, as many entries
 * are free, and root always finds some.  Called with cs->lock held.
 */
static bool share_left(const struct callers_state *cs, unsigned n, bool admin)
{
	unsigned room = CALLER_THREADS_MAX - CALLER_RESERVED;
	unsigned others = cs->nthreads - n;

	if (cs->nthreads >= CALLER_THREADS_MAX)
		return false;
	return admin || (others < room && n + 1 <= (room - others) / 2);
}

/* Counts c's entry to its user; false without memory.  cs->lock held. */
static bool user_add(struct callers_state *cs, uid_t uid)
{
	struct caller_user **pp = user_slot(cs, uid);

	if (!*pp) {
		*pp = calloc(1, sizeof(**pp));
		if (!*pp)
			return false;
		(*pp)->uid = uid;
	}
	(*pp)->n++;
	return true;
}

static void user_drop(struct callers_state *cs, uid_t uid)
{
	struct caller_user **pp = user_slot(cs, uid), *u = *pp;

	if (u && --u->n == 0) {
		*pp = u->next;
		free(u);
	}
}

/* Takes c off the table.  Called with cs->lock held. */
static void unlink_caller(struct callers_state *cs, struct caller *c)
{
	struct caller **pp = bucket(cs, c->tid);

	while (*pp != c)
		pp = &(*pp)->next;
	*pp = c->next;
	cs->nthreads--;
	user_drop(cs, c->uid);
	atomic_store_explicit(&cs->any, cs->nthreads > 0, memory_order_relaxed);
	if (c->pidfd >= 0)
		epoll_ctl(cs->epfd, EPOLL_CTL_DEL, c->pidfd, NULL);
}

static void free_caller(struct caller *c)
{
	if (c->pidfd >= 0)
		close(c->pidfd);
	free(c);
}

/* Whether c's thread has exited (its pidfd is readable).  No wait. */
static bool exited(const struct caller *c)
{
	struct pollfd p = { c->pidfd, POLLIN, 0 };

	return c->pidfd >= 0 && poll(&p, 1, 0) > 0;
}

/* Logs the regions c's thread left open as it ended; then frees c. */
static void cleared(struct callers_state *cs, struct caller *c)
{
	char list[512];
	size_t o = 0;

	list[0] = '\0';
	for (unsigned d = 0; d < c->depth && o < sizeof(list); d++)
		o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s \"%s\"",
				      d ? ", " : "",
				      region_kind_name(c->stack[d]->kind),
				      c->stack[d]->reason);
	caller_log(cs, c->uid,
		   "thread %d (%s) ended with %u caller region%s open, "
		   "cleared: %s",
		   (int)c->tid, c->comm, c->depth, c->depth == 1 ? "" : "s",
		   list);
	for (unsigned d = c->depth; d-- > 0;)
		trace_caller("caller_region_cleared", c->tid, c->stack[d], d);
	free_caller(c);
}

unsigned callers_of(struct intrfs *fs, pid_t tid,
		    const struct region_site **out, unsigned max)
{
	struct callers_state *cs = &fs->callers;
	struct caller *c, *gone = NULL;
	unsigned n = 0;

	if (tid <= 0)
		return 0;
	if (registry_busy(cs))
		n = cgroup_regions(tid, out, max);
	/* relaxed: a begin is answered before its thread's next request. */
	if (!atomic_load_explicit(&cs->any, memory_order_relaxed))
		return n;
	pthread_mutex_lock(&cs->lock);
	c = find(cs, tid);
	if (c && exited(c)) {
		/* Its thread exited and the tid is someone else's now. */
		unlink_caller(cs, c);
		gone = c;
		c = NULL;
	}
	for (unsigned d = 0; c && d < c->depth && n < max; d++)
		out[n++] = c->stack[d];
	pthread_mutex_unlock(&cs->lock);
	if (gone)
		cleared(cs, gone);
	return n;
}

/*
 * A pidfd of thread tid, kept above FD_SETSIZE where the limit allows:
 * thousands of them must not take the low descriptors that select() and
 * libtirpc's service (lockd.c) can use.  -errno when it cannot be had.
 */
static int thread_pidfd(pid_t tid)
{
	int fd = (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD), high;

	if (fd < 0)
		return -errno;
	if (fd < FD_SETSIZE) {
		high = fcntl(fd, F_DUPFD_CLOEXEC, FD_SETSIZE);
		if (high >= 0) {
			close(fd);
			fd = high;
		}
	}
	return fd;
}

/* A new stack for thread tid; NULL with *rc set when it cannot be. */
static struct caller *new_caller(struct callers_state *cs, pid_t tid, uid_t uid,
				 int *rc)
{
	struct caller *c = calloc(1, sizeof(*c));

	if (!c) {
		*rc = -ENOMEM;
		return NULL;
	}
	c->tid = tid;
	c->uid = uid;
	c->pidfd = -1;
	thread_comm(tid, c->comm, sizeof(c->comm));
	if (cs->pidfd_threads) {
		c->pidfd = thread_pidfd(tid);
		if (c->pidfd < 0) {
			/*
			 * The thread is gone already (it was killed), or the
			 * daemon has no descriptor left: no room then.
			 */
			*rc = c->pidfd == -EMFILE || c->pidfd == -ENFILE ?
				      -EMFILE :
				      -ESRCH;
			free(c);
			return NULL;
		}
	} else {
		c->start = thread_start(tid);
		if (!c->start) {
			*rc = -ESRCH;
			free(c);
			return NULL;
		}
	}
	return c;
}

/* Why a begin found no room (the log says it as it happens). */
enum no_room { ROOM, NO_DEPTH, NO_SHARE, NO_TABLE, NO_FD };

static int caller_begin(struct callers_state *cs, pid_t tid,
			const struct ident *id, const struct region_site *site,
			enum region_kind asked, unsigned *depth,
			enum no_room *why)
{
	struct caller *c, *made = NULL;
	int rc = 0;

	*why = ROOM;
	pthread_mutex_lock(&cs->lock);
	c = find(cs, tid);
	if (c && exited(c)) {
		unlink_caller(cs, c);
		pthread_mutex_unlock(&cs->lock);
		cleared(cs, c);
		pthread_mutex_lock(&cs->lock);
		c = NULL;
	}
	if (!c) {
		if (!share_left(cs, user_threads(cs, id->uid), id->admin)) {
			*why = cs->nthreads >= CALLER_THREADS_MAX ? NO_TABLE :
								    NO_SHARE;
			pthread_mutex_unlock(&cs->lock);
			return -ENOSPC;
		}
		/*
		 * /proc and pidfd_open() with the lock dropped: only this
		 * thread, blocked in this ioctl, makes its stack.
		 */
		pthread_mutex_unlock(&cs->lock);
		made = new_caller(cs, tid, id->uid, &rc);
		if (!made) {
			if (rc == -EMFILE) {
				*why = NO_FD;
				rc = -ENOSPC;
			}
			return rc;
		}
		pthread_mutex_lock(&cs->lock);
		/* Others may have taken the room meanwhile: look again. */
		if (!share_left(cs, user_threads(cs, id->uid), id->admin)) {
			*why = cs->nthreads >= CALLER_THREADS_MAX ? NO_TABLE :
								    NO_SHARE;
			rc = -ENOSPC;
		} else if (!user_add(cs, id->uid)) {
			rc = -ENOMEM;
		}
		if (rc) {
			pthread_mutex_unlock(&cs->lock);
			free_caller(made);
			return rc;
		}
		c = made;
		c->next = *bucket(cs, tid);
		*bucket(cs, tid) = c;
		cs->nthreads++;
		atomic_store_explicit(&cs->any, true, memory_order_relaxed);
		if (c->pidfd >= 0) {
			struct epoll_event ev = {
				EPOLLIN, { .u64 = (uint64_t)(uint32_t)c->tid }
			};

			epoll_ctl(cs->epfd, EPOLL_CTL_ADD, c->pidfd, &ev);
		}
	}
	if (c->depth >= CALLER_DEPTH_MAX) {
		*why = NO_DEPTH;
		rc = -ENOSPC;
	} else {
		c->asked[c->depth] = (uint8_t)asked;
		c->stack[c->depth++] = site;
		*depth = c->depth;
	}
	pthread_mutex_unlock(&cs->lock);
	return rc;
}

/*
 * Ends thread tid's innermost region, which must have asked for kind; else
 * -EINVAL, with *site and *innermost the innermost's (NULL: none).
 */
static int caller_end(struct callers_state *cs, pid_t tid,
		      enum region_kind kind, unsigned *depth,
		      const struct region_site **site,
		      enum region_kind *innermost, uid_t *uid)
{
	struct caller *c;

	pthread_mutex_lock(&cs->lock);
	c = find(cs, tid);
	if (c)
		*uid = c->uid;
	if (!c || c->depth == 0 || c->asked[c->depth - 1] != kind) {
		*site = c && c->depth ? c->stack[c->depth - 1] : NULL;
		if (*site)
			*innermost = (enum region_kind)c->asked[c->depth - 1];
		pthread_mutex_unlock(&cs->lock);
		return -EINVAL;
	}
	*site = c->stack[--c->depth];
	*depth = c->depth;
	if (c->depth == 0)
		unlink_caller(cs, c);
	else
		c = NULL;
	pthread_mutex_unlock(&cs->lock);
	if (c)
		free_caller(c);
	return 0;
}

/* Says why a begin of thread tid (id) found no room. */
static void no_room(struct intrfs *fs, pid_t tid, const struct ident *id,
		    enum no_room why)
{
	struct callers_state *cs = &fs->callers;
	unsigned mine;
	char comm[16];

	thread_comm(tid, comm, sizeof(comm));
	pthread_mutex_lock(&cs->lock);
	mine = user_threads(cs, id->uid);
	pthread_mutex_unlock(&cs->lock);
	switch (why) {
	case NO_DEPTH:
		caller_log(cs, id->uid,
			   "thread %d (%s): no room for another caller "
			   "region: it has %d open, the most a thread may",
			   (int)tid, comm, CALLER_DEPTH_MAX);
		break;
	case NO_SHARE:
		caller_log(cs, id->uid,
			   "thread %d (%s): no room for another caller "
			   "region: user %u has regions open in %u threads, "
			   "its share of the %d a mount keeps (half of what "
			   "other users leave, but the last %d, which are "
			   "for CAP_SYS_ADMIN)",
			   (int)tid, comm, (unsigned)id->uid, mine,
			   CALLER_THREADS_MAX, CALLER_RESERVED);
		break;
	case NO_TABLE:
		caller_log(cs, id->uid,
			   "thread %d (%s): no room for another caller "
			   "region: %d threads have regions open, the most a "
			   "mount keeps",
			   (int)tid, comm, CALLER_THREADS_MAX);
		break;
	case NO_FD:
		caller_log(cs, id->uid,
			   "thread %d (%s): no room for another caller "
			   "region: the daemon has no file descriptor left "
			   "to watch the thread with",
			   (int)tid, comm);
		break;
	case ROOM:
		break;
	}
}

int callers_ioctl(struct intrfs *fs, pid_t tid, struct region_caller_ioc *ioc)
{
	struct callers_state *cs = &fs->callers;
	const struct region_site *site = NULL;
	enum region_kind kind = (enum region_kind)ioc->kind, held = kind;
	enum region_kind innermost = kind;
	enum no_room why;
	struct ident id;
	unsigned depth = 0;
	char comm[16];
	int rc;

	if (tid <= 0)
		return -ESRCH; /* a caller this daemon's pid namespace lacks */
	rc = caller_ident(cs, tid, &id);
	if (rc)
		return rc;
	if (ioc->reserved ||
	    (ioc->op != REGION_CALLER_BEGIN && ioc->op != REGION_CALLER_END))
		return -EINVAL;
	if (kind != REGION_UNINTERRUPTIBLE && kind != REGION_KILLABLE) {
		thread_comm(tid, comm, sizeof(comm));
		caller_log(cs, id.uid,
			   "thread %d (%s): caller region of unknown kind "
			   "%" PRIu32 " (1: uninterruptible, 2: killable)",
			   (int)tid, comm, ioc->kind);
		return -EINVAL;
	}
	if (ioc->op == REGION_CALLER_BEGIN) {
		ioc->reason[sizeof(ioc->reason) - 1] = '\0';
		clean_reason(ioc->reason);
		if (kind == REGION_UNINTERRUPTIBLE && !id.admin &&
		    !fs->o.caller_hold_any) {
			held = REGION_KILLABLE;
			thread_comm(tid, comm, sizeof(comm));
			caller_log(cs, id.uid,
				   "thread %d (%s): uninterruptible caller "
				   "region \"%s\" of user %u held as "
				   "killable: only a caller with CAP_SYS_ADMIN "
				   "may hold a fatal signal back, unless the "
				   "mount sets caller_hold_any",
				   (int)tid, comm, ioc->reason,
				   (unsigned)id.uid);
		}
		site = intern(held, ioc->reason[0] ? ioc->reason : "caller",
			      "region_caller_begin");
		rc = caller_begin(cs, tid, &id, site, kind, &depth, &why);
		if (rc == -ENOSPC)
			no_room(fs, tid, &id, why);
		if (rc == 0) {
			trace_caller("caller_region_begin", tid, site,
				     depth - 1);
			/* The kind the mount holds it as, for the caller. */
			ioc->kind = (uint32_t)held;
		}
	} else {
		uid_t owner = id.uid;

		rc = caller_end(cs, tid, kind, &depth, &site, &innermost,
				&owner);
		if (rc == -EINVAL) {
			thread_comm(tid, comm, sizeof(comm));
			if (site)
				caller_log(cs, owner,
					   "thread %d (%s): end of a %s "
					   "caller region, but its innermost "
					   "is %s \"%s\"",
					   (int)tid, comm,
					   region_kind_name(kind),
					   region_kind_name(innermost),
					   site->reason);
			else
				caller_log(cs, owner,
					   "thread %d (%s): end of a %s "
					   "caller region without a begin",
					   (int)tid, comm,
					   region_kind_name(kind));
		}
		if (rc == 0)
			trace_caller("caller_region_end", tid, site, depth);
	}
	ioc->depth = depth;
	return rc;
}

/* The reaper. */

/* Without PIDFD_THREAD: the stacks whose threads are gone go. */
static void sweep(struct callers_state *cs)
{
	struct {
		pid_t tid;
		uint64_t start;
	} *v = NULL;
	size_t n = 0;

	pthread_mutex_lock(&cs->lock);
	if (cs->nthreads)
		v = malloc(cs->nthreads * sizeof(*v));
	for (unsigned b = 0; v && b < CALLER_BUCKETS; b++)
		for (struct caller *c = cs->tab[b]; c; c = c->next) {
			v[n].tid = c->tid;
			v[n++].start = c->start;
		}
	pthread_mutex_unlock(&cs->lock);
	for (size_t i = 0; i < n; i++) {
		struct caller *c;

		if (thread_start(v[i].tid) == v[i].start)
			continue;
		pthread_mutex_lock(&cs->lock);
		c = find(cs, v[i].tid);
		if (c && c->start == v[i].start)
			unlink_caller(cs, c);
		else
			c = NULL;
		pthread_mutex_unlock(&cs->lock);
		if (c)
			cleared(cs, c);
	}
	free(v);
}

static void *reaper_main(void *arg)
{
	struct callers_state *cs = arg;
	struct epoll_event evs[16];

	for (;;) {
		int n = epoll_wait(cs->epfd, evs, 16,
				   cs->pidfd_threads ? -1 : SWEEP_MS);

		if (n < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			pid_t tid = (pid_t)(uint32_t)evs[i].data.u64;
			struct caller *c;

			if (evs[i].data.u64 == UINT64_MAX)
				return NULL; /* callers_stop() */
			pthread_mutex_lock(&cs->lock);
			c = find(cs, tid);
			/* Ended and made again since: the event is stale. */
			if (c && exited(c))
				unlink_caller(cs, c);
			else
				c = NULL;
			pthread_mutex_unlock(&cs->lock);
			if (c)
				cleared(cs, c);
		}
		if (!cs->pidfd_threads)
			sweep(cs);
	}
	return NULL;
}

/*
 * Room for a pidfd of every thread the table holds, above FD_SETSIZE
 * (thread_pidfd()): the soft limit of descriptors is raised to that, as
 * far as the hard one allows.
 */
static void fd_room(void)
{
	rlim_t want = FD_SETSIZE + CALLER_THREADS_MAX + 1024;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
	setrlimit(RLIMIT_NOFILE, &rl);
}

int callers_start(struct intrfs *fs)
{
	struct callers_state *cs = &fs->callers;
	struct epoll_event ev = { EPOLLIN, { .u64 = UINT64_MAX } };
	struct stat ns;
	int probe;

	pthread_mutex_init(&cs->lock, NULL);
	cs->stop[0] = cs->stop[1] = -1;
	/* Where a caller's CAP_SYS_ADMIN counts (0: unknown, any). */
	if (stat("/proc/self/ns/user", &ns) == 0) {
		cs->userns_dev = ns.st_dev;
		cs->userns_ino = ns.st_ino;
	}
	fd_room();
	probe = (int)syscall(SYS_pidfd_open, (pid_t)syscall(SYS_gettid),
			     PIDFD_THREAD);
	/*
	 * INTRFS_CALLERS_SWEEP=1 does without PIDFD_THREAD, as on a kernel
	 * before 6.9 (for the tests).
	 */
	cs->pidfd_threads = probe >= 0 && !getenv("INTRFS_CALLERS_SWEEP");
	if (probe >= 0)
		close(probe);
	cs->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (cs->epfd < 0 || pipe2(cs->stop, O_CLOEXEC) < 0 ||
	    epoll_ctl(cs->epfd, EPOLL_CTL_ADD, cs->stop[0], &ev) < 0 ||
	    pthread_create(&cs->reaper, NULL, reaper_main, cs) != 0) {
		int rc = -errno;

		fprintf(stderr,
			"intrfs: cannot watch the callers' threads: %s\n",
			strerror(errno));
		if (cs->epfd >= 0)
			close(cs->epfd);
		if (cs->stop[0] >= 0) {
			close(cs->stop[0]);
			close(cs->stop[1]);
		}
		cs->epfd = -1;
		return rc ? rc : -EAGAIN;
	}
	cs->running = true;
	return 0;
}

void callers_stop(struct intrfs *fs)
{
	struct callers_state *cs = &fs->callers;

	if (!cs->running)
		return;
	(void)!write(cs->stop[1], "", 1);
	pthread_join(cs->reaper, NULL);
	for (unsigned b = 0; b < CALLER_BUCKETS; b++) {
		while (cs->tab[b]) {
			struct caller *c = cs->tab[b];

			cs->tab[b] = c->next;
			free_caller(c);
		}
		while (cs->users[b]) {
			struct caller_user *u = cs->users[b];

			cs->users[b] = u->next;
			free(u);
		}
	}
	cs->nthreads = 0;
	close(cs->stop[0]);
	close(cs->stop[1]);
	close(cs->epfd);
	cs->running = false;
}
