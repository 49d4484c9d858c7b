/*
 * intrfs-client: a command-line NFSv3 client without FUSE, built on the
 * netclient API.  It lists, reads, writes, removes and makes files on a
 * server and shows what the transport did (-v), so the netclient and its
 * interrupt handling can be used and tested without a mount.
 *
 * Every netclient call runs in one task, the main thread's.  SIGINT and
 * SIGTERM are blocked in every thread and taken by a small signal thread
 * with sigwait(), which raises the task's interrupts with task_interrupt()
 * (not async-signal-safe, hence no handler): SIGINT raises a normal
 * interrupt, a second SIGINT or a SIGTERM a fatal one too, so a killable
 * wait can still be cut short.  The program's own waits on stdin and stdout
 * are task waits too, so an interrupt ends them as well.
 *
 * Exit status: 0 success, 1 failure, 2 usage error, 130 interrupted, 141
 * the reader of stdout went away (quietly, as a cat killed by SIGPIPE).
 */
#include "intrfs/netclient.h"
#include "intrfs/region.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef INTRFS_VERSION
#define INTRFS_VERSION "unknown"
#endif

#define PROG "intrfs-client"

enum {
	EXIT_FAIL = 1,
	EXIT_USAGE = 2,
	EXIT_INTR = 130,
	EXIT_PIPE = 141,
};

/* Large I/O moves this many rsize/wsize calls' worth per nc_pread/pwrite. */
#define IO_CHUNK_CALLS 16
/* The I/O size when the client reports none (it always should). */
#define IO_SIZE_FALLBACK 65536u
/* Passes a put makes before it gives up on a server that keeps restarting. */
#define PUT_MAX_PASSES 4
#define REMOTE_PATH_MAX PATH_MAX
/* A host name (HOST_NAME_MAX is 64 on Linux) or a dotted quad. */
#define SERVER_MAX 256

/* One invocation: the options, the task, the client and the error to show. */
struct run {
	const struct cmd *cmd;
	struct nc_opts opts;
	bool verbose, long_list;
	mode_t umask;
	struct nc_cred cred;
	task_t *task;
	task_t *lane_task; /* the second I/O lane's (cat, put) */
	nc_client_t *client;
	struct nc_stats stats_before; /* of clients given up on, for -v */
	const char *what; /* the argument an error is about */
	char err[512]; /* detail for the error message, or "" */
	bool usage_error; /* the failure is a usage error: exit 2 */
	bool stdout_gone; /* stdout's reader went away: exit quietly */
};

struct cmd {
	const char *name;
	const char *args; /* for usage */
	int nargs;
	const char *flags; /* getopt letters the command takes */
	int (*fn)(struct run *r, char **argv);
	const char *help;
};

/* A SERVER:/PATH argument, the path normalised. */
struct remote {
	char server[SERVER_MAX];
	char path[REMOTE_PATH_MAX];
	char parent[REMOTE_PATH_MAX]; /* path without its last component */
	const char *name; /* the last component; NULL for "/" */
};

static int usage_fail(struct run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int usage_fail(struct run *r, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: %s: ", PROG, r->cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nusage: %s %s %s\n", PROG, r->cmd->name,
		r->cmd->args);
	r->usage_error = true;
	return -EINVAL;
}

/* Sets the detail shown after strerror() and returns rc. */
static int fail_detail(struct run *r, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail_detail(struct run *r, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	return rc;
}

/*
 * Makes path absolute-canonical in out: no empty, "." or ".." components
 * and no trailing slash ("/" stays "/").  ".." is resolved by name, as
 * realpath -m does; the server is never asked about it, since a LOOKUP of
 * ".." at an export's root may leave the export.
 */
static int normalize_path(const char *in, char *out, size_t len)
{
	size_t o = 0;

	if (in[0] != '/')
		return -EINVAL;
	while (*in) {
		const char *p, *end;
		size_t n;

		while (*in == '/')
			in++;
		end = strchrnul(in, '/');
		n = (size_t)(end - in);
		p = in;
		in = end;
		if (n == 0 || (n == 1 && p[0] == '.'))
			continue;
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--; /* the slash before the component */
			continue;
		}
		if (o + 1 + n + 1 > len)
			return -ENAMETOOLONG;
		out[o++] = '/';
		memcpy(out + o, p, n);
		o += n;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return 0;
}

/* Splits SERVER:/PATH at the first ':' (the server is a name or IPv4). */
static int parse_remote(struct run *r, const char *arg, struct remote *rem)
{
	const char *colon = strchr(arg, ':');
	size_t n;
	int rc;

	if (!colon)
		return usage_fail(r, "'%s' is not SERVER:/PATH", arg);
	n = (size_t)(colon - arg);
	if (n == 0)
		return usage_fail(r, "'%s' names no server", arg);
	if (n >= sizeof(rem->server))
		return usage_fail(r, "server name in '%s' is too long", arg);
	memcpy(rem->server, arg, n);
	rem->server[n] = '\0';
	rc = normalize_path(colon + 1, rem->path, sizeof(rem->path));
	if (rc == -EINVAL)
		return usage_fail(r, "path in '%s' must be absolute", arg);
	if (rc < 0)
		return usage_fail(r, "path in '%s' is too long", arg);
	rem->name = NULL;
	snprintf(rem->parent, sizeof(rem->parent), "/");
	if (strcmp(rem->path, "/") != 0) {
		size_t slash = (size_t)(strrchr(rem->path, '/') - rem->path);

		rem->name = rem->path + slash + 1;
		if (slash > 0)
			snprintf(rem->parent, sizeof(rem->parent), "%.*s",
				 (int)slash, rem->path);
	}
	return 0;
}

/* For the commands that act on a name in a directory. */
static int need_name(struct run *r, const char *arg, const struct remote *rem)
{
	if (rem->name)
		return 0;
	return usage_fail(r,
			  "'%s' names no file, only the server's root; give "
			  "a path such as %s:/export/name",
			  arg, rem->server);
}

/* The client for server, made on first use. */
static int client_get(struct run *r, const char *server)
{
	int rc;

	if (r->client)
		return 0;
	rc = nc_client_create(server, &r->opts, &r->client, r->err,
			      sizeof(r->err));
	if (rc < 0)
		r->client = NULL;
	return rc;
}

/*
 * A client mounts once (a second nc_client_mount() on it would make a
 * second NFS transport): to try another path, start over with a new one,
 * keeping the old one's counters for -v.
 */
static int client_renew(struct run *r, const char *server)
{
	struct nc_stats st;

	if (r->client) {
		nc_client_stats(r->client, &st);
#define X(f, what) r->stats_before.f += st.f;
		NC_STATS_FIELDS(X)
#undef X
		nc_client_destroy(r->client);
		r->client = NULL;
	}
	r->err[0] = '\0';
	return client_get(r, server);
}

/* Mounts a directory on server; *fh is its handle. */
static int mount_dir(struct run *r, const char *server, const char *path,
		     struct nc_fh *fh)
{
	int rc;

	rc = client_get(r, server);
	if (rc < 0)
		return rc;
	return nc_client_mount(r->client, path, &r->cred, fh, r->err,
			       sizeof(r->err));
}

/* Mounts the parent and looks the name up; *mounted says how far it got. */
static int lookup_in_parent(struct run *r, const struct remote *rem,
			    struct nc_fh *fh, struct nc_attr *attr,
			    bool *mounted)
{
	struct nc_entry e;
	struct nc_fh dir;
	int rc;

	*mounted = false;
	rc = mount_dir(r, rem->server, rem->parent, &dir);
	if (rc < 0)
		return rc;
	*mounted = true;
	rc = nc_lookup(r->client, &r->cred, &dir, rem->name, &e);
	if (rc < 0)
		return rc;
	if (!e.has_fh)
		return fail_detail(r, -EIO, "LOOKUP %s returned no handle",
				   rem->name);
	*fh = e.fh;
	if (!attr)
		return 0;
	if (e.has_attr) {
		*attr = e.attr;
		return 0;
	}
	return nc_getattr(r->client, &r->cred, fh, attr);
}

/*
 * Finds the handle (and the attributes, if attr) of any path.  The
 * netclient mounts only directories, so a file is reached by mounting its
 * parent and looking it up; an export's root, whose parent may not be
 * exported, only by mounting it.  dir_first says which to try first: the
 * path (it is most likely a directory) or the parent.
 */
static int open_path(struct run *r, const struct remote *rem, bool dir_first,
		     struct nc_fh *fh, struct nc_attr *attr)
{
	bool mounted;
	int rc;

	if (dir_first || !rem->name) {
		rc = mount_dir(r, rem->server, rem->path, fh);
		if (rc == 0 && attr)
			rc = nc_getattr(r->client, &r->cred, fh, attr);
		if (rc != -ENOTDIR || !rem->name)
			return rc;
		rc = client_renew(r, rem->server);
		if (rc < 0)
			return rc;
		return lookup_in_parent(r, rem, fh, attr, &mounted);
	}
	rc = lookup_in_parent(r, rem, fh, attr, &mounted);
	/* Not exported, or not ours to see: maybe the path is an export. */
	if (mounted || (rc != -ENOENT && rc != -EACCES && rc != -EPERM))
		return rc;
	rc = client_renew(r, rem->server);
	if (rc < 0)
		return rc;
	rc = mount_dir(r, rem->server, rem->path, fh);
	if (rc == 0 && attr)
		rc = nc_getattr(r->client, &r->cred, fh, attr);
	return rc;
}

/* Interruptible I/O on the local side. */

static bool fd_never_blocks(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 &&
	       (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode));
}

/*
 * Reads up to len bytes, stopping early only at end of input.  On a pipe or
 * a terminal the wait for data is a task wait, so an interrupt ends it.
 */
static int read_full(int fd, bool may_block, void *buf, size_t len, size_t *got)
{
	char *p = buf;
	size_t off = 0;

	*got = 0;
	while (off < len) {
		ssize_t n;

		if (may_block) {
			int rc = task_wait_fd(fd, POLLIN, TASK_INTERRUPTIBLE,
					      TASK_FOREVER, NULL);
			if (rc < 0)
				return rc;
		}
		n = read(fd, p + off, len - off);
		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		off += (size_t)n;
	}
	*got = off;
	return 0;
}

/*
 * Writes all of buf.  On a pipe, a socket or a terminal each write waits for
 * room first (a task wait) and is at most PIPE_BUF bytes, which a writable
 * pipe always takes at once, so a stalled reader never holds the program in
 * a write() an interrupt cannot end.
 */
static int write_full(int fd, bool may_block, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		size_t step = len;
		ssize_t n;

		if (may_block) {
			int rc = task_wait_fd(fd, POLLOUT, TASK_INTERRUPTIBLE,
					      TASK_FOREVER, NULL);
			if (rc < 0)
				return rc;
			if (step > PIPE_BUF)
				step = PIPE_BUF;
		}
		n = write(fd, p, step);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Attributes in human terms. */

static char type_char(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR:
		return 'd';
	case S_IFLNK:
		return 'l';
	case S_IFCHR:
		return 'c';
	case S_IFBLK:
		return 'b';
	case S_IFIFO:
		return 'p';
	case S_IFSOCK:
		return 's';
	}
	return '-';
}

static const char *type_name(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "regular file";
	case S_IFDIR:
		return "directory";
	case S_IFLNK:
		return "symbolic link";
	case S_IFCHR:
		return "character device";
	case S_IFBLK:
		return "block device";
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "socket";
	}
	return "unknown";
}

/* "drwxr-sr-t" and friends, as ls -l writes them. */
static void mode_string(mode_t mode, char buf[11])
{
	static const char rwx[] = "rwxrwxrwx";

	buf[0] = type_char(mode);
	for (int i = 0; i < 9; i++)
		buf[1 + i] = mode & (0400u >> i) ? rwx[i] : '-';
	if (mode & S_ISUID)
		buf[3] = buf[3] == 'x' ? 's' : 'S';
	if (mode & S_ISGID)
		buf[6] = buf[6] == 'x' ? 's' : 'S';
	if (mode & S_ISVTX)
		buf[9] = buf[9] == 'x' ? 't' : 'T';
	buf[10] = '\0';
}

static void format_time(const struct timespec *ts, const char *fmt, char *buf,
			size_t len)
{
	time_t t = ts->tv_sec;
	struct tm tm;

	if (!localtime_r(&t, &tm) || strftime(buf, len, fmt, &tm) == 0)
		snprintf(buf, len, "%lld", (long long)ts->tv_sec);
}

/* 1024-based, as df -h: "0", "512", "4.0K", "20G". */
static void human_size(uint64_t v, char *buf, size_t len)
{
	static const char units[] = "KMGTPE";
	double x = (double)v;
	int u = -1;

	if (v < 1024) {
		snprintf(buf, len, "%" PRIu64, v);
		return;
	}
	while (x >= 1024 && u < 5) {
		x /= 1024;
		u++;
	}
	if (x < 10)
		snprintf(buf, len, "%.1f%c", x, units[u]);
	else
		snprintf(buf, len, "%.0f%c", x, units[u]);
}

/* ls */

struct dent {
	char *name;
	bool has_fh, has_attr;
	struct nc_fh fh;
	struct nc_attr attr;
};

struct dir_list {
	struct dent *v;
	size_t n, cap;
	uint64_t cookie; /* of the last entry, for the next READDIR */
	unsigned seen; /* entries in the current call */
	int rc; /* -ENOMEM from the callback */
};

static int dir_add(void *arg, const char *name, uint64_t fileid,
		   uint64_t cookie, const struct nc_fh *fh,
		   const struct nc_attr *attr)
{
	struct dir_list *dl = arg;
	struct dent *d;

	(void)fileid;
	dl->cookie = cookie;
	dl->seen++;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return 0;
	if (dl->n == dl->cap) {
		size_t cap = dl->cap ? dl->cap * 2 : 64;
		struct dent *v = realloc(dl->v, cap * sizeof(*v));

		if (!v) {
			dl->rc = -ENOMEM;
			return 1;
		}
		dl->v = v;
		dl->cap = cap;
	}
	d = &dl->v[dl->n];
	memset(d, 0, sizeof(*d));
	d->name = strdup(name);
	if (!d->name) {
		dl->rc = -ENOMEM;
		return 1;
	}
	if (fh) {
		d->fh = *fh;
		d->has_fh = true;
	}
	if (attr) {
		d->attr = *attr;
		d->has_attr = true;
	}
	dl->n++;
	return 0;
}

static void dir_free(struct dir_list *dl)
{
	for (size_t i = 0; i < dl->n; i++)
		free(dl->v[i].name);
	free(dl->v);
}

static int dent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dent *)a)->name,
		      ((const struct dent *)b)->name);
}

static int read_dir(struct run *r, const struct nc_fh *dir, struct dir_list *dl)
{
	unsigned char verf[8] = { 0 };
	bool eof = false;

	dl->cookie = 0;
	while (!eof) {
		int rc;

		dl->seen = 0;
		rc = nc_readdir(r->client, &r->cred, dir, dl->cookie, verf,
				r->long_list, dir_add, dl, &eof);
		if (rc < 0)
			return rc;
		if (dl->rc < 0)
			return dl->rc;
		/* Without progress the next call would ask the same again. */
		if (!eof && dl->seen == 0)
			return fail_detail(r, -EIO,
					   "the server sent an empty directory "
					   "page before the end");
	}
	qsort(dl->v, dl->n, sizeof(dl->v[0]), dent_cmp);
	return 0;
}

/* Fills in what READDIR (not PLUS) left out, for a long listing. */
static int dent_complete(struct run *r, const struct nc_fh *dir, struct dent *d)
{
	struct nc_entry e;
	int rc;

	if (d->has_attr && (d->has_fh || !S_ISLNK(d->attr.mode)))
		return 0;
	if (d->has_fh)
		rc = nc_getattr(r->client, &r->cred, &d->fh, &d->attr);
	else
		rc = nc_lookup(r->client, &r->cred, dir, d->name, &e);
	if (rc < 0)
		return rc;
	if (!d->has_fh) {
		if (!e.has_fh || !e.has_attr)
			return fail_detail(r, -EIO,
					   "LOOKUP %s returned no handle or "
					   "attributes",
					   d->name);
		d->fh = e.fh;
		d->attr = e.attr;
		d->has_fh = true;
	}
	d->has_attr = true;
	return 0;
}

struct long_row {
	char mode[11], nlink[16], uid[16], gid[16], size[48], mtime[32];
};

static void long_row_fill(const struct nc_attr *a, struct long_row *lr)
{
	mode_string(a->mode, lr->mode);
	snprintf(lr->nlink, sizeof(lr->nlink), "%" PRIu32, a->nlink);
	snprintf(lr->uid, sizeof(lr->uid), "%" PRIu32, a->uid);
	snprintf(lr->gid, sizeof(lr->gid), "%" PRIu32, a->gid);
	if (S_ISCHR(a->mode) || S_ISBLK(a->mode))
		snprintf(lr->size, sizeof(lr->size), "%" PRIu32 ", %" PRIu32,
			 a->rdev_major, a->rdev_minor);
	else
		snprintf(lr->size, sizeof(lr->size), "%" PRIu64, a->size);
	format_time(&a->mtime, "%Y-%m-%d %H:%M", lr->mtime, sizeof(lr->mtime));
}

static int width(const char *s, int w)
{
	int n = (int)strlen(s);

	return n > w ? n : w;
}

static int print_long(struct run *r, const struct nc_fh *dir, struct dent *v,
		      size_t n)
{
	struct long_row *rows;
	int wl = 0, wu = 0, wg = 0, ws = 0;
	int rc = 0;

	rows = calloc(n ? n : 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (dir) {
			rc = dent_complete(r, dir, &v[i]);
			if (rc < 0) {
				if (!r->err[0])
					fail_detail(r, rc,
						    "the attributes of %s",
						    v[i].name);
				goto out_free_rows;
			}
		}
		long_row_fill(&v[i].attr, &rows[i]);
		wl = width(rows[i].nlink, wl);
		wu = width(rows[i].uid, wu);
		wg = width(rows[i].gid, wg);
		ws = width(rows[i].size, ws);
	}
	for (size_t i = 0; i < n; i++) {
		char target[REMOTE_PATH_MAX] = "";

		if (S_ISLNK(v[i].attr.mode) && v[i].has_fh &&
		    nc_readlink(r->client, &r->cred, &v[i].fh, target,
				sizeof(target) - 1) < 0)
			target[0] = '\0';
		printf("%s %*s %*s %*s %*s %s %s%s%s\n", rows[i].mode, wl,
		       rows[i].nlink, wu, rows[i].uid, wg, rows[i].gid, ws,
		       rows[i].size, rows[i].mtime, v[i].name,
		       target[0] ? " -> " : "", target);
	}
out_free_rows:
	free(rows);
	return rc;
}

static int cmd_ls(struct run *r, char **argv)
{
	struct dir_list dl = { 0 };
	struct remote rem;
	struct nc_attr attr;
	struct nc_fh fh;
	int rc;

	r->what = argv[0];
	rc = parse_remote(r, argv[0], &rem);
	if (rc < 0)
		return rc;
	rc = open_path(r, &rem, true, &fh, &attr);
	if (rc < 0)
		return rc;
	if (!S_ISDIR(attr.mode)) {
		/* As ls does for a file: the file itself, by its name. */
		struct dent d = {
			.fh = fh, .attr = attr, .has_fh = true, .has_attr = true
		};
		d.name = (char *)(rem.name ? rem.name : "/");
		if (!r->long_list) {
			printf("%s\n", d.name);
			return 0;
		}
		return print_long(r, NULL, &d, 1);
	}
	rc = read_dir(r, &fh, &dl);
	if (rc < 0)
		goto out_free_list;
	if (r->long_list) {
		rc = print_long(r, &fh, dl.v, dl.n);
	} else {
		for (size_t i = 0; i < dl.n; i++)
			printf("%s\n", dl.v[i].name);
	}
out_free_list:
	dir_free(&dl);
	return rc;
}

/* stat */

static void print_time(const char *name, const struct timespec *ts)
{
	char date[64], zone[16];

	format_time(ts, "%Y-%m-%d %H:%M:%S", date, sizeof(date));
	format_time(ts, "%z", zone, sizeof(zone));
	printf("%s=%lld.%09ld (%s.%09ld %s)\n", name, (long long)ts->tv_sec,
	       ts->tv_nsec, date, ts->tv_nsec, zone);
}

static int cmd_stat(struct run *r, char **argv)
{
	struct remote rem;
	struct nc_attr a;
	struct nc_fh fh;
	int rc;

	r->what = argv[0];
	rc = parse_remote(r, argv[0], &rem);
	if (rc < 0)
		return rc;
	rc = open_path(r, &rem, false, &fh, &a);
	if (rc < 0)
		return rc;
	printf("type=%s\n", type_name(a.mode));
	printf("mode=%04o\n", (unsigned)(a.mode & 07777));
	printf("nlink=%" PRIu32 "\n", a.nlink);
	printf("uid=%" PRIu32 "\n", a.uid);
	printf("gid=%" PRIu32 "\n", a.gid);
	printf("size=%" PRIu64 "\n", a.size);
	printf("used=%" PRIu64 "\n", a.used);
	if (S_ISCHR(a.mode) || S_ISBLK(a.mode))
		printf("rdev=%" PRIu32 ",%" PRIu32 "\n", a.rdev_major,
		       a.rdev_minor);
	printf("fsid=0x%016" PRIx64 "\n", a.fsid);
	printf("fileid=%" PRIu64 "\n", a.fileid);
	print_time("atime", &a.atime);
	print_time("mtime", &a.mtime);
	print_time("ctime", &a.ctime);
	return 0;
}

/* cat */

static size_t io_chunk(unsigned size)
{
	return (size_t)IO_CHUNK_CALLS * (size ? size : IO_SIZE_FALLBACK);
}

/*
 * Large transfers run in two lanes, each a task on its own thread with its
 * own batch of calls in flight: while one lane waits for the last replies of
 * its chunk or moves it to or from the local side, the other keeps the
 * connection busy.  Chunk k belongs to lane k % 2; the local side is used in
 * chunk order (turn).
 */
#define LANES 2

struct lanes {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t turn; /* the chunk whose local I/O may go next */
	uint64_t end; /* chunks at or past this one are not needed */
	int rc; /* the first error */
	const char *what; /* what that error is about */
	bool stop;
};

static void lanes_init(struct lanes *l)
{
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	l->turn = 0;
	l->end = UINT64_MAX;
	l->rc = 0;
	l->what = NULL;
	l->stop = false;
}

static void lanes_destroy(struct lanes *l)
{
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->cond);
}

/* Records the first error and stops both lanes. */
static void lanes_fail(struct lanes *l, int rc, const char *what)
{
	pthread_mutex_lock(&l->lock);
	if (!l->rc) {
		l->rc = rc;
		l->what = what;
	}
	l->stop = true;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
}

/* Waits for chunk k's turn; false when the lanes stop or k is not needed. */
static bool lanes_wait_turn(struct lanes *l, uint64_t k)
{
	bool go;

	pthread_mutex_lock(&l->lock);
	while (!l->stop && l->turn != k && k < l->end)
		pthread_cond_wait(&l->cond, &l->lock);
	go = !l->stop && k < l->end;
	pthread_mutex_unlock(&l->lock);
	return go;
}

/* Chunk k's local I/O is done; last: nothing after it is needed. */
static void lanes_pass_turn(struct lanes *l, uint64_t k, bool last)
{
	pthread_mutex_lock(&l->lock);
	l->turn = k + 1;
	if (last && k + 1 < l->end)
		l->end = k + 1;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
}

static bool lanes_needed(struct lanes *l, uint64_t k)
{
	bool go;

	pthread_mutex_lock(&l->lock);
	go = !l->stop && k < l->end;
	pthread_mutex_unlock(&l->lock);
	return go;
}

struct cat {
	struct run *r;
	struct nc_fh fh;
	size_t chunk;
	bool out_blocks;
	struct lanes l;
};

/* The second lane: its thread runs fn(job, 1) in its own task and region. */
struct lane {
	void (*fn)(void *job, unsigned index);
	void *job;
	const struct run *r;
};

static void cat_lane(void *job, unsigned index)
{
	struct cat *c = job;
	char *buf = malloc(c->chunk);

	if (!buf) {
		lanes_fail(&c->l, -ENOMEM, NULL);
		return;
	}
	for (uint64_t k = index; lanes_needed(&c->l, k); k += LANES) {
		uint64_t off = k * c->chunk;
		size_t got = 0;
		bool eof = false;
		int rc;

		rc = nc_pread(c->r->client, &c->r->cred, &c->fh, off, c->chunk,
			      buf, &got, &eof);
		if (rc < 0) {
			lanes_fail(&c->l, rc, NULL);
			break;
		}
		if (!lanes_wait_turn(&c->l, k))
			break;
		rc = write_full(STDOUT_FILENO, c->out_blocks, buf, got);
		if (rc < 0) {
			if (rc == -EPIPE)
				c->r->stdout_gone = true;
			lanes_fail(&c->l, rc, "stdout");
			break;
		}
		lanes_pass_turn(&c->l, k, eof || got < c->chunk);
	}
	free(buf);
}

static void *lane_main(void *arg)
{
	struct lane *ln = arg;

	task_enter(ln->r->lane_task);
	NC_MODE_REGION_BEGIN(ln->r->opts.intr_mode, "intrfs-client: lane");
	ln->fn(ln->job, 1);
	NC_MODE_REGION_END(ln->r->opts.intr_mode);
	task_leave(ln->r->lane_task);
	return NULL;
}

/*
 * Runs fn(job, 0) here and fn(job, 1) on a second thread sharing l, waits,
 * and returns the lanes' result (what failed goes to r->what).
 */
static int run_lanes(struct run *r, void (*fn)(void *, unsigned), void *job,
		     struct lanes *l)
{
	struct lane second = { fn, job, r };
	pthread_t th;
	int rc;

	lanes_init(l);
	if (pthread_create(&th, NULL, lane_main, &second) != 0) {
		lanes_fail(l, -EAGAIN, NULL);
	} else {
		fn(job, 0);
		pthread_join(th, NULL);
	}
	rc = l->rc;
	if (l->what)
		r->what = l->what;
	lanes_destroy(l);
	return rc;
}

static int cmd_cat(struct run *r, char **argv)
{
	struct remote rem;
	struct cat c = { .r = r };
	int rc;

	r->what = argv[0];
	rc = parse_remote(r, argv[0], &rem);
	if (rc < 0)
		return rc;
	rc = open_path(r, &rem, false, &c.fh, NULL);
	if (rc < 0)
		return rc;
	c.chunk = io_chunk(nc_client_rsize(r->client));
	c.out_blocks = !fd_never_blocks(STDOUT_FILENO);
	return run_lanes(r, cat_lane, &c, &c.l);
}

/* put */

struct put {
	const char *local; /* as given, for messages */
	int fd;
	bool seekable, may_block;
	off_t start; /* where the input started, to read it again */
	struct nc_fh fh; /* the file on the server */
	size_t chunk;
	uint64_t bytes;
};

static int put_truncate(struct run *r, struct put *p)
{
	struct nc_sattr sa = { .set = NC_SET_SIZE, .size = 0 };

	return nc_setattr(r->client, &r->cred, &p->fh, &sa, NULL);
}

struct put_pass {
	struct run *r;
	struct put *p;
	struct lanes l;
	/* Under l.lock: */
	unsigned char verf[8];
	bool have_verf, changed, unstable;
	uint64_t bytes;
};

static void put_lane(void *job, unsigned index)
{
	struct put_pass *pp = job;
	struct put *p = pp->p;
	char *buf = malloc(p->chunk);

	if (!buf) {
		lanes_fail(&pp->l, -ENOMEM, NULL);
		return;
	}
	for (uint64_t k = index; lanes_needed(&pp->l, k); k += LANES) {
		struct nc_write_res res;
		size_t got;
		int rc;

		/* The input is read in order, one chunk at a time. */
		if (!lanes_wait_turn(&pp->l, k))
			break;
		rc = read_full(p->fd, p->may_block, buf, p->chunk, &got);
		if (rc < 0) {
			lanes_fail(&pp->l, rc, p->local);
			break;
		}
		lanes_pass_turn(&pp->l, k, got < p->chunk);
		if (got == 0)
			break;
		rc = nc_pwrite(pp->r->client, &pp->r->cred, &p->fh,
			       k * p->chunk, got, buf, NC_UNSTABLE, &res);
		if (rc < 0) {
			lanes_fail(&pp->l, rc, NULL);
			break;
		}
		/*
		 * The verifier of the first WRITE is the one the COMMIT must
		 * return; FILE_SYNC data survives a restart whatever it says.
		 */
		pthread_mutex_lock(&pp->l.lock);
		if (res.committed != NC_FILE_SYNC)
			pp->unstable = true;
		if (!pp->have_verf)
			memcpy(pp->verf, res.verf, sizeof(pp->verf));
		else if (memcmp(pp->verf, res.verf, sizeof(pp->verf)) != 0)
			pp->changed = true;
		if (res.verf_changed)
			pp->changed = true;
		pp->have_verf = true;
		if (k * p->chunk + got > pp->bytes)
			pp->bytes = k * p->chunk + got;
		pthread_mutex_unlock(&pp->l.lock);
	}
	free(buf);
}

/*
 * Writes the whole input UNSTABLE and COMMITs it.  *lost is set when the
 * server's write verifier changed on the way (it restarted, and UNSTABLE
 * data it had not committed may be gone).
 */
static int put_pass(struct run *r, struct put *p, bool *lost)
{
	struct put_pass pp = { .r = r, .p = p };
	unsigned char cverf[8];
	int rc;

	*lost = false;
	rc = run_lanes(r, put_lane, &pp, &pp.l);
	if (rc < 0)
		return rc;
	p->bytes = pp.bytes;
	/* Count 0: from offset 0 to the end of the file. */
	rc = nc_commit(r->client, &r->cred, &p->fh, 0, 0, cverf);
	if (rc < 0)
		return rc;
	if (pp.have_verf && memcmp(pp.verf, cverf, sizeof(cverf)) != 0)
		pp.changed = true;
	*lost = pp.changed && pp.unstable;
	return 0;
}

static int put_open(struct put *p)
{
	struct stat st;

	if (strcmp(p->local, "-") == 0) {
		p->fd = STDIN_FILENO;
	} else {
		p->fd = open(p->local, O_RDONLY | O_CLOEXEC);
		if (p->fd < 0)
			return -errno;
	}
	if (fstat(p->fd, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	p->may_block = !(S_ISREG(st.st_mode) || S_ISBLK(st.st_mode));
	p->start = lseek(p->fd, 0, SEEK_CUR);
	p->seekable = !p->may_block && p->start >= 0;
	return 0;
}

static int put_create(struct run *r, struct put *p, const struct nc_fh *dir,
		      const char *name)
{
	struct nc_sattr sa = {
		.set = NC_SET_MODE | NC_SET_SIZE,
		.mode = 0644 & ~r->umask,
		.size = 0,
	};
	struct nc_entry e;
	int rc;

	/* UNCHECKED: create, or truncate (size 0 above) what is there. */
	rc = nc_create(r->client, &r->cred, dir, name, NC_CREATE_UNCHECKED, &sa,
		       &e);
	if (rc < 0)
		return rc;
	if (!e.has_fh) {
		rc = nc_lookup(r->client, &r->cred, dir, name, &e);
		if (rc < 0)
			return rc;
		if (!e.has_fh)
			return fail_detail(
				r, -EIO, "the server returned no handle for %s",
				name);
	}
	p->fh = e.fh;
	if (e.has_attr && S_ISDIR(e.attr.mode))
		return -EISDIR;
	if (e.has_attr && !S_ISREG(e.attr.mode))
		return fail_detail(r, -EINVAL, "%s exists and is a %s", name,
				   type_name(e.attr.mode));
	/* A server that kept the old data gets an explicit truncation. */
	if (!e.has_attr || e.attr.size != 0)
		return put_truncate(r, p);
	return 0;
}

static int cmd_put(struct run *r, char **argv)
{
	struct put p = { .local = argv[0], .fd = -1 };
	struct remote rem;
	struct nc_fh dir;
	bool lost = true;
	int rc;

	r->what = argv[1];
	rc = parse_remote(r, argv[1], &rem);
	if (rc < 0)
		return rc;
	rc = need_name(r, argv[1], &rem);
	if (rc < 0)
		return rc;
	/* The input first: a missing local file must not empty the remote. */
	rc = put_open(&p);
	if (rc < 0) {
		r->what = argv[0];
		goto out_close;
	}
	rc = mount_dir(r, rem.server, rem.parent, &dir);
	if (rc < 0)
		goto out_close;
	rc = put_create(r, &p, &dir, rem.name);
	if (rc < 0)
		goto out_close;
	p.chunk = io_chunk(nc_client_wsize(r->client));
	for (int pass = 0; pass < PUT_MAX_PASSES && lost; pass++) {
		if (pass > 0) {
			if (!p.seekable) {
				rc = fail_detail(
					r, -EIO,
					"server restarted during put and "
					"the input cannot be re-read");
				goto out_close;
			}
			if (lseek(p.fd, p.start, SEEK_SET) < 0) {
				rc = -errno;
				r->what = argv[0];
				goto out_close;
			}
			rc = put_truncate(r, &p);
			if (rc < 0)
				goto out_close;
		}
		rc = put_pass(r, &p, &lost);
		if (rc < 0)
			goto out_close;
	}
	if (lost)
		rc = fail_detail(r, -EIO,
				 "the server's write verifier changed "
				 "in each of %d passes; giving up",
				 PUT_MAX_PASSES);
out_close:
	if (p.fd > STDIN_FILENO)
		close(p.fd);
	return rc;
}

/* rm, mkdir */

static int cmd_rm(struct run *r, char **argv)
{
	struct remote rem;
	struct nc_fh dir;
	int rc;

	r->what = argv[0];
	rc = parse_remote(r, argv[0], &rem);
	if (rc < 0)
		return rc;
	rc = need_name(r, argv[0], &rem);
	if (rc < 0)
		return rc;
	rc = mount_dir(r, rem.server, rem.parent, &dir);
	if (rc < 0)
		return rc;
	return nc_remove(r->client, &r->cred, &dir, rem.name);
}

static int cmd_mkdir(struct run *r, char **argv)
{
	struct nc_sattr sa = { .set = NC_SET_MODE, .mode = 0755 & ~r->umask };
	struct remote rem;
	struct nc_fh dir;
	int rc;

	r->what = argv[0];
	rc = parse_remote(r, argv[0], &rem);
	if (rc < 0)
		return rc;
	rc = need_name(r, argv[0], &rem);
	if (rc < 0)
		return rc;
	rc = mount_dir(r, rem.server, rem.parent, &dir);
	if (rc < 0)
		return rc;
	return nc_mkdir(r->client, &r->cred, &dir, rem.name, &sa, NULL);
}

/* exports, df */

static int print_export(const char *dir, void *arg)
{
	(void)arg;
	printf("%s\n", dir);
	return 0;
}

static int cmd_exports(struct run *r, char **argv)
{
	const char *server = argv[0];
	size_t n = strcspn(server, ":");
	char name[SERVER_MAX];
	int rc;

	r->what = server;
	/* "SERVER" or "SERVER:", nothing after: there is no path to list. */
	if (n == 0 || (server[n] == ':' && server[n + 1] != '\0'))
		return usage_fail(r, "'%s' is not a server name", server);
	if (n >= sizeof(name))
		return usage_fail(r, "server name '%s' is too long", server);
	memcpy(name, server, n);
	name[n] = '\0';
	rc = client_get(r, name);
	if (rc < 0)
		return rc;
	return nc_client_exports(r->client, &r->cred, print_export, NULL);
}

static int cmd_df(struct run *r, char **argv)
{
	char size[32], used[32], avail[32], pct[24], ipct[24];
	uint64_t bused, iused;
	struct nc_fsstat fs;
	struct remote rem;
	struct nc_fh fh;
	int w, rc;

	r->what = argv[0];
	rc = parse_remote(r, argv[0], &rem);
	if (rc < 0)
		return rc;
	rc = open_path(r, &rem, true, &fh, NULL);
	if (rc < 0)
		return rc;
	rc = nc_fsstat(r->client, &r->cred, &fh, &fs);
	if (rc < 0)
		return rc;
	bused = fs.tbytes > fs.fbytes ? fs.tbytes - fs.fbytes : 0;
	iused = fs.tfiles > fs.ffiles ? fs.tfiles - fs.ffiles : 0;
	human_size(fs.tbytes, size, sizeof(size));
	human_size(bused, used, sizeof(used));
	human_size(fs.abytes, avail, sizeof(avail));
	/* As df: used over what non-root users could have, rounded up. */
	if (bused + fs.abytes)
		snprintf(pct, sizeof(pct), "%" PRIu64 "%%",
			 (bused * 100 + bused + fs.abytes - 1) /
				 (bused + fs.abytes));
	else
		snprintf(pct, sizeof(pct), "-");
	if (iused + fs.afiles)
		snprintf(ipct, sizeof(ipct), "%" PRIu64 "%%",
			 (iused * 100 + iused + fs.afiles - 1) /
				 (iused + fs.afiles));
	else
		snprintf(ipct, sizeof(ipct), "-");
	w = width(argv[0], (int)strlen("Filesystem"));
	printf("%-*s %6s %6s %6s %5s %10s %10s %10s %5s %s\n", w, "Filesystem",
	       "Size", "Used", "Avail", "Use%", "Inodes", "IUsed", "IFree",
	       "IUse%", "Export");
	printf("%-*s %6s %6s %6s %5s %10" PRIu64 " %10" PRIu64 " %10" PRIu64
	       " %5s %s\n",
	       w, argv[0], size, used, avail, pct, fs.tfiles, iused, fs.afiles,
	       ipct, nc_client_export(r->client));
	return 0;
}

static const struct cmd cmds[] = {
	{ "ls", "[-l] SERVER:/PATH", 1, "l", cmd_ls,
	  "list a directory (-l: as ls -l)" },
	{ "stat", "SERVER:/PATH", 1, "", cmd_stat,
	  "print the attributes as name=value lines" },
	{ "cat", "SERVER:/PATH", 1, "", cmd_cat, "copy the file to stdout" },
	{ "put", "LOCAL SERVER:/PATH", 2, "", cmd_put,
	  "copy a local file (- for stdin) to the server,\n"
	  "create or truncate, COMMIT to stable storage" },
	{ "rm", "SERVER:/PATH", 1, "", cmd_rm, "remove a file" },
	{ "mkdir", "SERVER:/PATH", 1, "", cmd_mkdir,
	  "make a directory (mode 0755 minus the umask)" },
	{ "exports", "SERVER", 1, "", cmd_exports,
	  "list the server's exports" },
	{ "df", "SERVER:/PATH", 1, "", cmd_df,
	  "file system size and use (FSSTAT)" },
};

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [-o OPTIONS] [-v] COMMAND ARGS...\n"
		"       %s --help | --version\n\ncommands:\n",
		PROG, PROG);
	for (size_t i = 0; i < NCMDS; i++) {
		const char *h = cmds[i].help;
		int col =
			fprintf(f, "  %-7s %-20s ", cmds[i].name, cmds[i].args);

		/* Further lines of a help text start at its column. */
		for (const char *nl; (nl = strchr(h, '\n')); h = nl + 1)
			fprintf(f, "%.*s\n%*s", (int)(nl - h), h, col, "");
		fprintf(f, "%s\n", h);
	}
	fprintf(f,
		"\noptions:\n"
		"  -o OPTIONS   comma-separated, as for the mount; may repeat\n"
		"     hard|soft|softerr  retry forever (default), or fail with "
		"EIO / ETIMEDOUT\n"
		"                        after retrans retransmissions\n"
		"     intr|killable|nointr  what may interrupt a reply wait "
		"(default killable)\n"
		"     timeo=N            deciseconds before the first "
		"retransmission (600)\n"
		"     retrans=N          retransmissions before a major "
		"timeout (2)\n"
		"     rsize=N, wsize=N   caps on READ/WRITE sizes (default: "
		"the server's)\n"
		"     port=N             NFS port (default: ask rpcbind)\n"
		"     mountport=N        MOUNT port (default: ask rpcbind)\n"
		"     retry=N            minutes a hard mount retries MNT (2)\n"
		"     slots=N            calls in flight at once (64)\n"
		"     policy=P           the task's region policy: percall, "
		"region (default)\n"
		"                        or sigmask\n"
		"  -v           after the command, print on stderr the export, "
		"rsize, wsize\n"
		"               and the transport counters, one name=value a "
		"line\n"
		"  -h, --help   show this help\n"
		"  --version    show the version\n"
		"\nSIGINT interrupts the command; a second SIGINT, or SIGTERM, "
		"interrupts it\nfatally (through killable waits too).\n"
		"Exit status: 0 success, 1 failure, 2 usage error, 130 "
		"interrupted,\n141 stdout closed by its reader.\n");
}

static void print_verbose(const struct run *r)
{
	const nc_client_t *c = r->client;
	struct nc_stats st;
	char opts[512];

	nc_client_stats(c, &st);
	nc_opts_format(nc_client_opts(c), opts, sizeof(opts));
	fprintf(stderr, "server=%s\n", nc_client_server(c));
	fprintf(stderr, "export=%s\n", nc_client_export(c));
	fprintf(stderr, "rsize=%u\n", nc_client_rsize(c));
	fprintf(stderr, "wsize=%u\n", nc_client_wsize(c));
	fprintf(stderr, "options=%s\n", opts);
	fprintf(stderr, "policy=%s\n", region_policy_name(r->opts.policy));
#define X(f, what) \
	fprintf(stderr, #f "=%" PRIu64 "\n", r->stats_before.f + st.f);
	NC_STATS_FIELDS(X)
#undef X
}

/* The signal thread: SIGINT and SIGTERM become the task's interrupts. */

struct sig_thread {
	pthread_t thread;
	task_t *task, *lane_task;
	sigset_t set;
	_Atomic bool stop;
	unsigned sigints; /* only the signal thread touches it */
};

static void *sig_main(void *arg)
{
	struct sig_thread *s = arg;

	for (;;) {
		int sig;

		if (sigwait(&s->set, &sig) != 0)
			continue;
		/* Acquire: pairs with the release in sig_thread_stop(). */
		if (atomic_load_explicit(&s->stop, memory_order_acquire))
			break;
		task_interrupt(s->task, TASK_INTR_NORMAL);
		task_interrupt(s->lane_task, TASK_INTR_NORMAL);
		/*
		 * A second Ctrl-C is fatal, as SIGINT is to a process without
		 * a handler: otherwise a hard, killable mount would ignore it.
		 */
		if (sig == SIGTERM || ++s->sigints > 1) {
			task_interrupt(s->task, TASK_INTR_FATAL);
			task_interrupt(s->lane_task, TASK_INTR_FATAL);
		}
	}
	return NULL;
}

static int sig_thread_start(struct sig_thread *s, task_t *task,
			    task_t *lane_task)
{
	s->task = task;
	s->lane_task = lane_task;
	atomic_init(&s->stop, false);
	s->sigints = 0;
	return -pthread_create(&s->thread, NULL, sig_main, s);
}

static void sig_thread_stop(struct sig_thread *s)
{
	atomic_store_explicit(&s->stop, true, memory_order_release);
	pthread_kill(s->thread, SIGINT);
	pthread_join(s->thread, NULL);
}

/* Runs the command in argv (the command name first); returns the status. */
static int run_command(struct run *r, int argc, char **argv)
{
	int opt, rc, status = 0;

	opterr = 0;
	optind = 0; /* glibc: start over, argv[0] is the command name */
	while ((opt = getopt(argc, argv, "+:l")) != -1) {
		if (opt == 'l' && strchr(r->cmd->flags, 'l')) {
			r->long_list = true;
			continue;
		}
		usage_fail(r, "unknown option '-%c'",
			   opt == '?' || opt == ':' ? optopt : opt);
		return EXIT_USAGE;
	}
	if (argc - optind != r->cmd->nargs) {
		usage_fail(r, "expected %d argument%s", r->cmd->nargs,
			   r->cmd->nargs == 1 ? "" : "s");
		return EXIT_USAGE;
	}

	rc = r->cmd->fn(r, argv + optind);
	if (fflush(stdout) == EOF && rc == 0) {
		rc = -errno;
		r->what = "stdout";
		r->err[0] = '\0';
		if (rc == -EPIPE)
			r->stdout_gone = true;
	}
	if (r->verbose && r->client)
		print_verbose(r);
	if (rc == 0)
		status = 0;
	else if (r->usage_error)
		status = EXIT_USAGE;
	else if (rc == -EINTR)
		status = EXIT_INTR;
	else if (r->stdout_gone)
		status = EXIT_PIPE;
	else
		status = EXIT_FAIL;
	if (status == EXIT_INTR) {
		fprintf(stderr, "interrupted\n");
	} else if (status == EXIT_FAIL) {
		fprintf(stderr, "%s: %s %s: %s%s%s\n", PROG, r->cmd->name,
			r->what ? r->what : "", strerror(-rc),
			r->err[0] ? ": " : "", r->err);
	}
	return status;
}

static const struct cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < NCMDS; i++)
		if (strcmp(cmds[i].name, name) == 0)
			return &cmds[i];
	return NULL;
}

/* Global options; returns -1 to go on, else the exit status. */
static int parse_options(struct run *r, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	char err[256];
	int opt;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:o:vh", longopts, NULL)) !=
	       -1) {
		switch (opt) {
		case 'o':
			if (nc_opts_parse(&r->opts, optarg, NULL, NULL, err,
					  sizeof(err)) < 0) {
				fprintf(stderr, "%s: %s\n", PROG, err);
				return EXIT_USAGE;
			}
			break;
		case 'v':
			r->verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("%s %s\n", PROG, INTRFS_VERSION);
			return 0;
		case ':':
			fprintf(stderr, "%s: option '%s' needs an argument\n",
				PROG, argv[optind - 1]);
			fprintf(stderr, "Try '%s --help'.\n", PROG);
			return EXIT_USAGE;
		default:
			if (optopt)
				fprintf(stderr, "%s: unknown option '-%c'\n",
					PROG, optopt);
			else
				fprintf(stderr, "%s: unknown option '%s'\n",
					PROG, argv[optind - 1]);
			fprintf(stderr, "Try '%s --help'.\n", PROG);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	r->cmd = find_cmd(argv[optind]);
	if (!r->cmd) {
		fprintf(stderr, "%s: unknown command '%s'; try '%s --help'.\n",
			PROG, argv[optind], PROG);
		return EXIT_USAGE;
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct task_attr attr = { .name = PROG };
	struct run r = { 0 };
	struct sig_thread sigs;
	int rc, status;

	nc_opts_init(&r.opts);
	status = parse_options(&r, argc, argv);
	if (status >= 0)
		return status;
	r.umask = umask(0);
	umask(r.umask);
	nc_cred_self(&r.cred);

	/* Before any thread exists, so that every thread inherits the mask. */
	sigemptyset(&sigs.set);
	sigaddset(&sigs.set, SIGINT);
	sigaddset(&sigs.set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs.set, NULL);
	/* A closed stdout or socket is an EPIPE to handle, not a death. */
	signal(SIGPIPE, SIG_IGN);

	attr.policy = r.opts.policy;
	r.task = task_create(&attr);
	attr.name = PROG " lane";
	r.lane_task = r.task ? task_create(&attr) : NULL;
	if (!r.task || !r.lane_task) {
		fprintf(stderr, "%s: cannot create a task: %s\n", PROG,
			strerror(errno));
		return EXIT_FAIL;
	}
	task_enter(r.task);
	rc = sig_thread_start(&sigs, r.task, r.lane_task);
	if (rc < 0) {
		fprintf(stderr, "%s: cannot start the signal thread: %s\n",
			PROG, strerror(-rc));
		status = EXIT_FAIL;
		goto out_leave;
	}

	/*
	 * The command runs in the region its mode asks for, as a FUSE request
	 * does in the daemon: killable (SIGINT waits for the server, a second
	 * one or SIGTERM ends the call), nointr (nothing does), intr (no
	 * region: any signal ends the call).  Each lane's task has its own.
	 */
	NC_MODE_REGION_BEGIN(r.opts.intr_mode, "intrfs-client: command");
	status = run_command(&r, argc - optind, argv + optind);
	NC_MODE_REGION_END(r.opts.intr_mode);

	if (r.client)
		nc_client_destroy(r.client);
	sig_thread_stop(&sigs);
out_leave:
	task_leave(r.task);
	task_put(r.task);
	task_put(r.lane_task);
	return status;
}
