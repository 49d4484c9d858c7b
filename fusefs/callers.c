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
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL /* Linux 6.9's value */
#endif

/* Threads with a stack at once; a begin past it gets ENOSPC. */
#define CALLER_THREADS_MAX 4096
/* Distinct (kind, reason, origin) sites kept; past it, a generic one. */
#define INTERN_MAX 4096
#define INTERN_BUCKETS 256
/* How often the reaper looks at the threads, without PIDFD_THREAD. */
#define SWEEP_MS 1000
/* A registry whose change is this recent is read again (coarse mtimes). */
#define REGISTRY_SETTLE_NS 50000000ull

struct caller {
	pid_t tid;
	int pidfd; /* -1 without PIDFD_THREAD: identified by start */
	uint64_t start; /* the thread's start time, in clock ticks */
	char comm[16];
	unsigned depth;
	const struct region_site *stack[CALLER_DEPTH_MAX];
	struct caller *next;
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

static bool read_file(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return false;
	buf[n] = '\0';
	return true;
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

/* The region of registry entry id (its name's characters checked). */
static const struct region_site *registry_region(const char *id, size_t len)
{
	char path[128], buf[REGION_CALLER_REASON_MAX + 32], *reason, *nl;
	enum region_kind kind;

	if (len == 0 || len > 32 || strspn(id, "0123456789.") < len)
		return NULL;
	snprintf(path, sizeof(path), "%s/%.*s", REGION_REGISTRY_DIR, (int)len,
		 id);
	if (!read_file(path, buf, sizeof(buf)))
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
	if (nl)
		*nl = '\0';
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
		char *end = line + strcspn(line, "\n"), *p;

		/* "ID:CONTROLLERS:PATH": the path after the second ':'. */
		p = memchr(line, ':', (size_t)(end - line));
		p = p ? memchr(p + 1, ':', (size_t)(end - p - 1)) : NULL;
		while (p && p < end && n < max) {
			char *comp = p + 1;
			size_t len = strcspn(comp, "/\n");
			size_t pl = sizeof(REGION_CG_PREFIX) - 1;

			if (len > pl &&
			    strncmp(comp, REGION_CG_PREFIX, pl) == 0) {
				const struct region_site *s =
					registry_region(comp + pl, len - pl);

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

/* Takes c off the table.  Called with cs->lock held. */
static void unlink_caller(struct callers_state *cs, struct caller *c)
{
	struct caller **pp = bucket(cs, c->tid);

	while (*pp != c)
		pp = &(*pp)->next;
	*pp = c->next;
	cs->nthreads--;
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
static void cleared(struct caller *c)
{
	char list[512];
	size_t o = 0;

	list[0] = '\0';
	for (unsigned d = 0; d < c->depth && o < sizeof(list); d++)
		o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s \"%s\"",
				      d ? ", " : "",
				      region_kind_name(c->stack[d]->kind),
				      c->stack[d]->reason);
	fprintf(stderr,
		"intrfs: thread %d (%s) ended with %u caller region%s open, "
		"cleared: %s\n",
		(int)c->tid, c->comm, c->depth, c->depth == 1 ? "" : "s", list);
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
		cleared(gone);
	return n;
}

/* A new stack for thread tid; NULL with *rc set when it cannot be. */
static struct caller *new_caller(struct callers_state *cs, pid_t tid, int *rc)
{
	struct caller *c = calloc(1, sizeof(*c));

	if (!c) {
		*rc = -ENOMEM;
		return NULL;
	}
	c->tid = tid;
	c->pidfd = -1;
	thread_comm(tid, c->comm, sizeof(c->comm));
	if (cs->pidfd_threads) {
		c->pidfd = (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD);
		if (c->pidfd < 0) {
			/* The thread is gone already (it was killed). */
			*rc = -ESRCH;
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

static int caller_begin(struct callers_state *cs, pid_t tid,
			const struct region_site *site, unsigned *depth)
{
	struct caller *c, *made = NULL;
	int rc = 0;

	pthread_mutex_lock(&cs->lock);
	c = find(cs, tid);
	if (c && exited(c)) {
		unlink_caller(cs, c);
		pthread_mutex_unlock(&cs->lock);
		cleared(c);
		pthread_mutex_lock(&cs->lock);
		c = NULL;
	}
	if (!c) {
		if (cs->nthreads >= CALLER_THREADS_MAX) {
			pthread_mutex_unlock(&cs->lock);
			return -ENOSPC;
		}
		/*
		 * /proc and pidfd_open() with the lock dropped: only this
		 * thread, blocked in this ioctl, makes its stack.
		 */
		pthread_mutex_unlock(&cs->lock);
		made = new_caller(cs, tid, &rc);
		if (!made)
			return rc;
		pthread_mutex_lock(&cs->lock);
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
		rc = -ENOSPC;
	} else {
		c->stack[c->depth++] = site;
		*depth = c->depth;
	}
	pthread_mutex_unlock(&cs->lock);
	return rc;
}

static int caller_end(struct callers_state *cs, pid_t tid,
		      enum region_kind kind, unsigned *depth,
		      const struct region_site **site)
{
	struct caller *c;

	pthread_mutex_lock(&cs->lock);
	c = find(cs, tid);
	if (!c || c->depth == 0 || c->stack[c->depth - 1]->kind != kind) {
		*site = c && c->depth ? c->stack[c->depth - 1] : NULL;
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

int callers_ioctl(struct intrfs *fs, pid_t tid, struct region_caller_ioc *ioc)
{
	struct callers_state *cs = &fs->callers;
	const struct region_site *site = NULL;
	enum region_kind kind = (enum region_kind)ioc->kind;
	unsigned depth = 0;
	char comm[16];
	int rc;

	if (tid <= 0)
		return -ESRCH; /* a caller this daemon's pid namespace lacks */
	if (ioc->reserved ||
	    (ioc->op != REGION_CALLER_BEGIN && ioc->op != REGION_CALLER_END))
		return -EINVAL;
	if (kind != REGION_UNINTERRUPTIBLE && kind != REGION_KILLABLE) {
		thread_comm(tid, comm, sizeof(comm));
		fprintf(stderr,
			"intrfs: thread %d (%s): caller region of unknown kind "
			"%" PRIu32 " (1: uninterruptible, 2: killable)\n",
			(int)tid, comm, ioc->kind);
		return -EINVAL;
	}
	if (ioc->op == REGION_CALLER_BEGIN) {
		ioc->reason[sizeof(ioc->reason) - 1] = '\0';
		clean_reason(ioc->reason);
		site = intern(kind, ioc->reason[0] ? ioc->reason : "caller",
			      "region_caller_begin");
		rc = caller_begin(cs, tid, site, &depth);
		if (rc == -ENOSPC) {
			thread_comm(tid, comm, sizeof(comm));
			fprintf(stderr,
				"intrfs: thread %d (%s): no room for another "
				"caller region (at most %d a thread, %d "
				"threads)\n",
				(int)tid, comm, CALLER_DEPTH_MAX,
				CALLER_THREADS_MAX);
		}
		if (rc == 0)
			trace_caller("caller_region_begin", tid, site,
				     depth - 1);
	} else {
		rc = caller_end(cs, tid, kind, &depth, &site);
		if (rc == -EINVAL) {
			thread_comm(tid, comm, sizeof(comm));
			if (site)
				fprintf(stderr,
					"intrfs: thread %d (%s): end of a %s "
					"caller region, but its innermost is "
					"%s \"%s\"\n",
					(int)tid, comm, region_kind_name(kind),
					region_kind_name(site->kind),
					site->reason);
			else
				fprintf(stderr,
					"intrfs: thread %d (%s): end of a %s "
					"caller region without a begin\n",
					(int)tid, comm, region_kind_name(kind));
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
			cleared(c);
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
				cleared(c);
		}
		if (!cs->pidfd_threads)
			sweep(cs);
	}
	return NULL;
}

int callers_start(struct intrfs *fs)
{
	struct callers_state *cs = &fs->callers;
	struct epoll_event ev = { EPOLLIN, { .u64 = UINT64_MAX } };
	int probe;

	pthread_mutex_init(&cs->lock, NULL);
	cs->stop[0] = cs->stop[1] = -1;
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
	for (unsigned b = 0; b < CALLER_BUCKETS; b++)
		while (cs->tab[b]) {
			struct caller *c = cs->tab[b];

			cs->tab[b] = c->next;
			free_caller(c);
		}
	cs->nthreads = 0;
	close(cs->stop[0]);
	close(cs->stop[1]);
	close(cs->epfd);
	cs->running = false;
}
