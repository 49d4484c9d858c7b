/*
 * One worker of the integrity exerciser: seeded random operations on its
 * own namespace of the mount (the directory wK), a model of what each of
 * its files must hold (model.c), and the checks against it — every read
 * through the mount during the run, then every file on the export after
 * the unmount.  It keeps a ring of its last operations and prints them,
 * with the seed, on the first mismatch or unexpected error, then exits 1.
 *
 * An EINTR makes what the call touched uncertain: a write's range holds the
 * old or the new bytes, a truncate happened or not.  A namespace call
 * (create, rename, unlink, mkdir, rmdir) that fails with EINTR is repeated
 * until its answer says what the first one did, so names are always known.
 * Any other error is a failure: on a hard mount faults must be invisible.
 *
 * The export is read as root: every name there is resolved beneath the
 * export's root (tests/lib/beneath.h), and a file the check reads must
 * be a regular file with no other name, so a link any client of the
 * server put there is refused and named, never followed.
 *
 * It talks to the parent through ctl: 'D' when its operations are done,
 * then waits for 'C' (faults cleared, signals stopped), closes everything
 * and sends 'F', waits for 'U' (unmounted), checks the export and sends
 * 'O'.  Its counters are in its shared page.
 */
#include "exercise_i.h"
#include "beneath.h"
#include "intrfs/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILES 8
#define MAX_DIRS 3
#define RING 512
#define RING_SHOWN 20
#define IO_MAX (256u * 1024u)
#define NAME_LEN 16

struct wfile {
	bool used;
	char name[NAME_LEN];
	int fd; /* -1: closed */
	bool direct; /* opened with O_DIRECT */
	struct model_file m;
};

struct worker {
	const struct xopts *o;
	unsigned k;
	struct xshared *sh;
	struct xrand r;
	int ctl;
	char dir[600]; /* its namespace on the mount */
	char local[600]; /* the same directory on the export */
	int top; /* the export's root (O_PATH) */
	char rel[200]; /* local, below top */
	struct wfile f[MAX_FILES];
	bool d_used[MAX_DIRS];
	char dname[MAX_DIRS][NAME_LEN];
	unsigned next_name;
	uint64_t opno;
	char ring[RING][256];
	uint64_t ring_n;
	uint8_t *buf, *rbuf;
	const char *phase; /* for reports: "run", "final", "export" */
	bool on_export; /* checking the export itself */
	unsigned op_eintr; /* EINTRs in the operation at hand */
	const char *focus; /* a failure's file: its older operations shown */
};

static volatile sig_atomic_t sigs_seen;

static void on_signal(int sig)
{
	(void)sig;
	sigs_seen++;
}

static void put(struct worker *w, const char *text)
{
	char *slot = w->ring[w->ring_n++ % RING];
	size_t n = strlen(text);

	if (n >= sizeof(w->ring[0]))
		n = sizeof(w->ring[0]) - 1;
	memcpy(slot, text, n);
	slot[n] = '\0';
}

/* Whether text names the file name (a whole word). */
static bool names_file(const char *text, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = text; (p = strstr(p, name)); p += len)
		if ((p == text || p[-1] == ' ') &&
		    (p[len] == '\0' || p[len] == ' '))
			return true;
	return false;
}

static void print_ring(struct worker *w)
{
	uint64_t first = w->ring_n > RING_SHOWN ? w->ring_n - RING_SHOWN : 0;
	uint64_t oldest = w->ring_n > RING ? w->ring_n - RING : 0;

	if (w->focus) {
		fprintf(stderr,
			"intrfs-exercise: the earlier operations of worker %u "
			"on %s (of its last %" PRIu64 "):\n",
			w->k, w->focus, w->ring_n - oldest);
		for (uint64_t i = oldest; i < first; i++)
			if (names_file(w->ring[i % RING], w->focus))
				fprintf(stderr, "  %s\n", w->ring[i % RING]);
	}
	fprintf(stderr,
		"intrfs-exercise: the last %" PRIu64
		" operations of worker %u (seed %" PRIu64 "):\n",
		w->ring_n - first, w->k, w->o->seed);
	for (uint64_t i = first; i < w->ring_n; i++)
		fprintf(stderr, "  %s\n", w->ring[i % RING]);
	if (w->sh->cur[0])
		fprintf(stderr, "  in progress: %s\n", w->sh->cur);
}

/*
 * What the worker's directory on the export holds now, behind the mount's
 * back: tells a stale cache in the client from a server that lost a change.
 */
static void print_export(const struct worker *w)
{
	int fd = beneath_open(w->top, w->rel, O_RDONLY | O_DIRECTORY, 0);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	fprintf(stderr, "intrfs-exercise: %s on the export now:", w->local);
	while ((e = readdir(d))) {
		struct stat st;

		if (e->d_name[0] == '.' &&
		    (!e->d_name[1] || strcmp(e->d_name, "..") == 0))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode))
			fprintf(stderr, " %s/", e->d_name);
		else if (S_ISLNK(st.st_mode))
			fprintf(stderr, " %s@", e->d_name);
		else
			fprintf(stderr, " %s(%lld)", e->d_name,
				(long long)st.st_size);
	}
	fputc('\n', stderr);
	closedir(d);
}

/* name in the worker's directory on the export, below top. */
static const char *xrel(const struct worker *w, const char *name, char *buf,
			size_t len)
{
	snprintf(buf, len, "%s/%s", w->rel, name);
	return buf;
}

/* The directory a report names: the export's once the check is there. */
static const char *ndir(const struct worker *w)
{
	return w->on_export ? w->local : w->dir;
}

static void __attribute__((noreturn, format(printf, 2, 3)))
wfail(struct worker *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->sh->why, sizeof(w->sh->why), fmt, ap);
	va_end(ap);
	fprintf(stderr,
		"intrfs-exercise: FAILED (seed %" PRIu64
		") worker %u, %s: %s\n",
		w->o->seed, w->k, w->phase, w->sh->why);
	if (!w->on_export)
		print_export(w);
	print_ring(w);
	fflush(stderr);
	_exit(1);
}

/* The first byte that breaks the model, and how many more do in [off, end). */
/*
 * A read through the mount went wrong at off: whether the export has the
 * right byte there now tells a client that read wrong (or a write still on
 * its way) from a server that lost or cut the data.
 */
static void export_says(struct worker *w, struct wfile *f, uint64_t off)
{
	char path[700], rel[300];
	uint8_t b;
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", w->local, f->name);
	fd = beneath_open_file(w->top, xrel(w, f->name, rel, sizeof(rel)),
			       O_RDONLY, 0);
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "intrfs-exercise: on the export %s: %s\n", path,
			beneath_strerror(fd < 0 ? fd : -errno));
	} else if (pread(fd, &b, 1, (off_t)off) != 1) {
		fprintf(stderr,
			"intrfs-exercise: on the export %s has %lld bytes, "
			"none at offset %" PRIu64 "\n",
			path, (long long)st.st_size, off);
	} else {
		fprintf(stderr,
			"intrfs-exercise: on the export %s (%lld bytes) has "
			"0x%02x at offset %" PRIu64 ": %s\n",
			path, (long long)st.st_size, b, off,
			model_byte_ok(&f->m, off, b) ?
				"what the model wants (the mount read wrong)" :
				"not what the model wants either");
	}
	if (fd >= 0)
		close(fd);
}

static void __attribute__((noreturn))
mismatch(struct worker *w, struct wfile *f, uint64_t off, const uint8_t *got,
	 size_t len, size_t bad, const char *where)
{
	char want[120];
	size_t more = 0, last = bad;

	for (size_t i = bad + 1; i < len; i++)
		if (!model_byte_ok(&f->m, off + i, got[i])) {
			more++;
			last = i;
		}
	model_describe(&f->m, off + bad, want, sizeof(want));
	w->focus = f->name;
	if (!w->on_export)
		export_says(w, f, off + bad);
	wfail(w,
	      "MISMATCH in %s/%s at offset %" PRIu64 " (%s): expected %s, "
	      "found 0x%02x; %zu more bad bytes in the %zu read, the last at "
	      "offset %" PRIu64 "; the model says the size is in [%" PRIu64
	      ", %" PRIu64 "]",
	      ndir(w), f->name, off + bad, where, want, got[bad], more, len,
	      off + last, f->m.lo, f->m.hi);
}

static void check_bytes(struct worker *w, struct wfile *f, uint64_t off,
			const uint8_t *got, size_t len, const char *where)
{
	for (size_t i = 0; i < len; i++)
		if (!model_byte_ok(&f->m, off + i, got[i]))
			mismatch(w, f, off, got, len, i, where);
}

static void __attribute__((format(printf, 2, 3)))
op_begin(struct worker *w, const char *fmt, ...)
{
	va_list ap;
	int n;

	w->opno++;
	w->sh->ops++;
	w->op_eintr = 0;
	n = snprintf(w->sh->cur, sizeof(w->sh->cur), "#%" PRIu64 " ", w->opno);
	va_start(ap, fmt);
	vsnprintf(w->sh->cur + n, sizeof(w->sh->cur) - (size_t)n, fmt, ap);
	va_end(ap);
}

static void __attribute__((format(printf, 3, 4)))
op_end(struct worker *w, enum xop kind, const char *fmt, ...)
{
	char res[120], line[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(res, sizeof(res), fmt, ap);
	va_end(ap);
	snprintf(line, sizeof(line), "%s -> %s", w->sh->cur, res);
	put(w, line);
	w->sh->count[kind]++;
	w->sh->sigs = (uint64_t)sigs_seen;
	/* Relaxed: the parent only compares it with its clock (idle_ns()). */
	__atomic_store_n(&w->sh->progress_ns, xnow_ns(), __ATOMIC_RELAXED);
	w->sh->cur[0] = '\0';
	if (w->o->verbose)
		fprintf(stderr, "w%u %s\n", w->k, line);
}

/* A call failed: EINTR is counted and returns; anything else fails. */
static void failed(struct worker *w, const char *call, int err)
{
	if (err == EINTR) {
		w->sh->eintr++;
		w->op_eintr++;
		return;
	}
	wfail(w, "%s: %s (errno %d) in %s, after %u EINTRs in it", call,
	      strerror(err), err, w->sh->cur, w->op_eintr);
}

static const char *mpath(struct worker *w, const char *name)
{
	static char p[2][700];
	static unsigned i;
	char *s = p[i++ % 2];

	snprintf(s, sizeof(p[0]), "%s/%s", w->dir, name);
	return s;
}

/* The bytes a write of operation opno puts at off: seeded, per offset. */
static void fill(struct worker *w, uint8_t *buf, uint64_t off, size_t len)
{
	uint64_t key =
		xmix(w->o->seed ^ xmix(((uint64_t)w->k << 40) ^ w->opno));
	uint64_t word = 0, wi = UINT64_MAX;

	for (size_t i = 0; i < len; i++) {
		uint64_t p = off + i;

		if (p >> 3 != wi) {
			wi = p >> 3;
			word = xmix(key + wi);
		}
		buf[i] = (uint8_t)(word >> (8 * (p & 7)));
	}
}

static struct wfile *pick_file(struct worker *w)
{
	unsigned n = 0, i, j;

	for (i = 0; i < MAX_FILES; i++)
		n += w->f[i].used;
	if (!n)
		return NULL;
	j = (unsigned)xrand_below(&w->r, n);
	for (i = 0; i < MAX_FILES; i++)
		if (w->f[i].used && j-- == 0)
			return &w->f[i];
	return NULL;
}

static struct wfile *free_slot(struct worker *w)
{
	for (unsigned i = 0; i < MAX_FILES; i++)
		if (!w->f[i].used)
			return &w->f[i];
	return NULL;
}

static void new_name(struct worker *w, char *name, char prefix)
{
	snprintf(name, NAME_LEN, "%c%03u", prefix, w->next_name++);
}

/* Whether name is on the export now, seen behind the mount's back. */
static bool on_export(struct worker *w, const char *name)
{
	char rel[300];
	struct stat st;

	return beneath_lstat(w->top, xrel(w, name, rel, sizeof(rel)), &st) == 0;
}

/*
 * A namespace call that failed the first time with the errno that means
 * "already done", while the export shows it done: the server did it, its
 * reply was lost with a reset connection, and the retransmission on the
 * new connection missed the server's duplicate request cache (netfault's
 * connection to the server is a new one, from another port).  That is NFSv3
 * over a proxy, not the client: counted, not failed.
 */
static bool replayed(struct worker *w, bool done)
{
	if (!done || !w->o->faults)
		return false;
	w->sh->replays++;
	return true;
}

static void do_close(struct worker *w, struct wfile *f)
{
	if (f->fd < 0)
		return;
	op_begin(w, "close %s", f->name);
	if (close(f->fd) < 0)
		failed(w, "close", errno); /* the descriptor is gone anyway */
	f->fd = -1;
	op_end(w, XOP_CLOSE, "ok");
}

/*
 * Opens f with flags (O_RDWR and maybe O_CREAT, O_TRUNC, O_DIRECT).  An
 * interrupted O_TRUNC open may have truncated; the open is repeated
 * without it.
 */
static void open_file(struct worker *w, struct wfile *f, int flags,
		      enum xop kind)
{
	do_close(w, f);
	op_begin(w, "%s %s%s%s%s", kind == XOP_CREATE ? "create" : "open",
		 f->name, flags & O_EXCL ? " excl" : "",
		 flags & O_TRUNC ? " trunc" : "",
		 flags & O_DIRECT ? " direct" : "");
	for (;;) {
		int fd = open(mpath(w, f->name), flags, 0644), err;

		if (fd >= 0) {
			f->fd = fd;
			break;
		}
		err = errno; /* on_export() looks at the export: keep errno */
		if (!(flags & O_EXCL) || err != EEXIST ||
		    !replayed(w, on_export(w, f->name)))
			failed(w, "open", err);
		w->sh->retries++;
		if (flags & O_TRUNC)
			model_trunc_failed(&f->m, 0);
		/* An interrupted exclusive create may have created it. */
		flags &= ~(O_TRUNC | O_EXCL);
	}
	if (flags & O_TRUNC)
		model_trunc_ok(&f->m, 0);
	f->direct = flags & O_DIRECT;
	op_end(w, kind, "fd %d", f->fd);
}

static void ensure_open(struct worker *w, struct wfile *f)
{
	if (f->fd < 0)
		open_file(w, f, O_RDWR | (xrand_below(&w->r, 4) ? 0 : O_DIRECT),
			  XOP_OPEN);
}

static void op_create(struct worker *w)
{
	struct wfile *f = free_slot(w);

	if (!f)
		return;
	new_name(w, f->name, 'f');
	if (model_init(&f->m) < 0)
		wfail(w, "out of memory for a model");
	f->used = true;
	f->fd = -1;
	open_file(w, f,
		  O_RDWR | O_CREAT | O_EXCL |
			  (xrand_below(&w->r, 5) ? 0 : O_DIRECT),
		  XOP_CREATE);
}

static uint64_t pick_len(struct worker *w)
{
	uint64_t p = xrand_below(&w->r, 100);

	if (p < 80)
		return 1 + xrand_below(&w->r, 8192);
	if (p < 95)
		return 1 + xrand_below(&w->r, 65536);
	return 1 + xrand_below(&w->r, IO_MAX);
}

/* Writes at off: kind says how (write after lseek, pwrite, sparse). */
static void do_write(struct worker *w, struct wfile *f, enum xop kind,
		     uint64_t off, uint64_t len)
{
	ssize_t n;

	if (off >= MODEL_MAX)
		off = MODEL_MAX - 1;
	if (off + len > MODEL_MAX)
		len = MODEL_MAX - off;
	ensure_open(w, f);
	if (f->direct)
		kind = XOP_DWRITE;
	op_begin(w, "%s %s off=%" PRIu64 " len=%" PRIu64, xop_names[kind],
		 f->name, off, len);
	fill(w, w->buf, off, len);
	if (kind == XOP_WRITE) {
		if (lseek(f->fd, (off_t)off, SEEK_SET) < 0)
			failed(w, "lseek", errno);
		n = write(f->fd, w->buf, len);
	} else {
		n = pwrite(f->fd, w->buf, len, (off_t)off);
	}
	if (n < 0) {
		failed(w, "write", errno);
		model_write_failed(&f->m, off, w->buf, len);
		op_end(w, kind, "EINTR (the range is old or new)");
		return;
	}
	if ((uint64_t)n > len)
		wfail(w, "write returned %zd for %" PRIu64 " bytes", n, len);
	model_write_ok(&f->m, off, w->buf, (size_t)n);
	w->sh->bytes_written += (uint64_t)n;
	if ((uint64_t)n < len) {
		model_write_failed(&f->m, off + (uint64_t)n, w->buf + n,
				   len - (uint64_t)n);
		op_end(w, kind, "short %zd (the rest is old or new)", n);
		return;
	}
	op_end(w, kind, "ok");
}

static void op_write(struct worker *w, enum xop kind)
{
	struct wfile *f = pick_file(w);
	uint64_t off, len = pick_len(w);

	if (!f)
		return;
	if (kind == XOP_SPARSE)
		off = f->m.hi + 1 + xrand_below(&w->r, 256 * 1024);
	else if (xrand_below(&w->r, 4))
		off = xrand_below(&w->r, f->m.hi + 1);
	else /* around the end: appends and overlaps */
		off = f->m.hi > 4096 ? f->m.hi - xrand_below(&w->r, 4096) :
				       f->m.hi;
	do_write(w, f, kind, off, len);
}

static void op_trunc(struct worker *w)
{
	struct wfile *f = pick_file(w);
	uint64_t size;
	bool by_path;
	int rc;

	if (!f)
		return;
	if (xrand_below(&w->r, 2))
		size = xrand_below(&w->r, f->m.lo + 1);
	else
		size = f->m.hi + xrand_below(&w->r, 128 * 1024);
	if (size > MODEL_MAX)
		size = MODEL_MAX;
	by_path = f->fd < 0 || xrand_below(&w->r, 3) == 0;
	op_begin(w, "truncate %s%s to %" PRIu64, f->name,
		 by_path ? " (by path)" : "", size);
	rc = by_path ? truncate(mpath(w, f->name), (off_t)size) :
		       ftruncate(f->fd, (off_t)size);
	if (rc < 0) {
		failed(w, "truncate", errno);
		model_trunc_failed(&f->m, size);
		op_end(w, XOP_TRUNC, "EINTR (old or new size)");
		return;
	}
	model_trunc_ok(&f->m, size);
	op_end(w, XOP_TRUNC, "ok");
}

/*
 * Reads [off, off+len) through fd and checks it.  A short read is read on
 * until EOF or len: a signal may cut a read short without an error.  Returns
 * false if it was interrupted before it said where the file ends.
 */
static bool read_check(struct worker *w, struct wfile *f, int fd, uint64_t off,
		       uint64_t len, const char *where)
{
	uint64_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, w->rbuf, len - got, (off_t)(off + got));

		if (n < 0) {
			failed(w, "read", errno);
			return false;
		}
		if (n == 0) {
			if (off + got < f->m.lo)
				wfail(w,
				      "MISMATCH in %s/%s (%s): the file ends "
				      "at %" PRIu64 ", the model says it has "
				      "at least %" PRIu64 " bytes",
				      ndir(w), f->name, where, off + got,
				      f->m.lo);
			return true;
		}
		check_bytes(w, f, off + got, w->rbuf, (size_t)n, where);
		got += (uint64_t)n;
		w->sh->bytes_read += (uint64_t)n;
	}
	return true;
}

static void op_read(struct worker *w)
{
	struct wfile *f = pick_file(w);
	uint64_t off, len;
	enum xop kind;

	if (!f)
		return;
	ensure_open(w, f);
	kind = f->direct ? XOP_DREAD : XOP_READ;
	if (xrand_below(&w->r, 8) == 0) {
		off = 0;
		len = f->m.hi + 4096 > IO_MAX ? IO_MAX : f->m.hi + 4096;
	} else {
		off = xrand_below(&w->r, f->m.hi + 4096);
		len = pick_len(w);
	}
	op_begin(w, "%s %s off=%" PRIu64 " len=%" PRIu64, xop_names[kind],
		 f->name, off, len);
	if (!read_check(w, f, f->fd, off, len, "a read through the mount"))
		op_end(w, kind, "EINTR");
	else
		op_end(w, kind, "ok");
}

static void check_size(struct worker *w, struct wfile *f, uint64_t size,
		       const char *where)
{
	if (size < f->m.lo || size > f->m.hi)
		wfail(w,
		      "MISMATCH in %s/%s (%s): size %" PRIu64
		      ", the model says [%" PRIu64 ", %" PRIu64 "]",
		      ndir(w), f->name, where, size, f->m.lo, f->m.hi);
}

static void op_stat(struct worker *w)
{
	struct wfile *f = pick_file(w);
	struct stat st;
	int rc;

	if (!f)
		return;
	op_begin(w, "stat %s%s", f->name, f->fd < 0 ? " (by path)" : "");
	rc = f->fd < 0 ? stat(mpath(w, f->name), &st) : fstat(f->fd, &st);
	if (rc < 0) {
		failed(w, "stat", errno);
		op_end(w, XOP_STAT, "EINTR");
		return;
	}
	if (!S_ISREG(st.st_mode))
		wfail(w, "%s/%s is not a regular file (mode 0%o)", w->dir,
		      f->name, (unsigned)st.st_mode);
	check_size(w, f, (uint64_t)st.st_size, "stat through the mount");
	op_end(w, XOP_STAT, "size %lld", (long long)st.st_size);
}

static void op_fsync(struct worker *w)
{
	struct wfile *f = pick_file(w);

	if (!f || f->fd < 0)
		return;
	op_begin(w, "fsync %s", f->name);
	if (fsync(f->fd) < 0) {
		failed(w, "fsync", errno);
		op_end(w, XOP_FSYNC, "EINTR");
		return;
	}
	op_end(w, XOP_FSYNC, "ok");
}

static void op_reopen(struct worker *w)
{
	struct wfile *f = pick_file(w);
	int flags = O_RDWR;

	if (!f)
		return;
	if (xrand_below(&w->r, 4) == 0)
		flags |= O_DIRECT;
	if (xrand_below(&w->r, 12) == 0)
		flags |= O_TRUNC;
	open_file(w, f, flags, XOP_OPEN);
}

static void op_close(struct worker *w)
{
	struct wfile *f = pick_file(w);

	if (f)
		do_close(w, f);
}

struct two_paths {
	const char *a, *b;
};

static int call_rename(void *p)
{
	struct two_paths *t = p;

	return rename(t->a, t->b);
}

/* The names the namespace call at hand works on, for its done(). */
static const char *ns_from, *ns_to;

/* name exists through the mount exactly when it does on the export. */
static bool mount_agrees(struct worker *w, const char *name)
{
	struct stat st;

	return (lstat(mpath(w, name), &st) == 0) == on_export(w, name);
}

/*
 * After an interrupted namespace call that the server carried out, the
 * mount must show its names as the export does soon (intrfs invalidates
 * the kernel's entries for them once the call ends), not after an entry
 * timeout: within SETTLE_MS, or it is a failure.
 */
#define SETTLE_MS 2000

static void settle(struct worker *w, bool two)
{
	const char *bad;
	struct stat st;
	int err;

	for (unsigned ms = 0; ms < SETTLE_MS; ms += 5) {
		if (mount_agrees(w, ns_from) &&
		    (!two || mount_agrees(w, ns_to)))
			return;
		usleep(5000);
	}
	bad = mount_agrees(w, ns_from) ? ns_to : ns_from;
	err = lstat(mpath(w, bad), &st) < 0 ? errno : 0;
	wfail(w,
	      "a stale entry: %s is %s through the mount (%s) but %s on the "
	      "export %d ms after %s (%u EINTRs in it)",
	      bad, err ? "missing" : "there", err ? strerror(err) : "lstat ok",
	      on_export(w, bad) ? "there" : "missing", SETTLE_MS, w->sh->cur,
	      w->op_eintr);
}

/*
 * Repeats an interrupted namespace call until its answer tells what the
 * first one did: done_err is the errno that says "already done"; done()
 * says whether the export shows it done.
 */
static const char *retry_ns(struct worker *w, const char *call,
			    int (*fn)(void *), void *arg, int done_err,
			    bool (*done)(struct worker *w))
{
	int first = 1;

	for (;;) {
		int err;

		if (fn(arg) == 0) {
			if (!first)
				settle(w, fn == call_rename);
			return first ? "ok" : "ok after EINTR";
		}
		err = errno; /* done() looks at the export: keep errno */
		if (!first && err == done_err) {
			settle(w, fn == call_rename);
			return "EINTR, then done already";
		}
		if (first && err == done_err && replayed(w, done(w))) {
			settle(w, fn == call_rename);
			return "failed, yet done on the export (a replay)";
		}
		failed(w, call, err);
		w->sh->retries++;
		first = 0;
	}
}

static bool done_gone(struct worker *w)
{
	return !on_export(w, ns_from);
}

static bool done_there(struct worker *w)
{
	return on_export(w, ns_from);
}

static bool done_moved(struct worker *w)
{
	return !on_export(w, ns_from) && on_export(w, ns_to);
}

static int call_unlink(void *p)
{
	return unlink(p);
}

static int call_mkdir(void *p)
{
	return mkdir(p, 0755);
}

static int call_rmdir(void *p)
{
	return rmdir(p);
}

static void op_rename(struct worker *w)
{
	struct wfile *s = pick_file(w), *t = NULL;
	char to[NAME_LEN];
	struct two_paths tp;
	const char *res;

	if (!s)
		return;
	if (xrand_below(&w->r, 2)) {
		t = pick_file(w);
		if (t == s)
			t = NULL;
	}
	if (t)
		snprintf(to, sizeof(to), "%s", t->name);
	else
		new_name(w, to, 'f');
	/* Open files renamed over or away would be silly-renamed. */
	do_close(w, s);
	if (t)
		do_close(w, t);
	op_begin(w, "rename %s %s%s", s->name, to, t ? " (over)" : "");
	tp.a = mpath(w, s->name);
	tp.b = mpath(w, to);
	ns_from = s->name;
	ns_to = to;
	res = retry_ns(w, "rename", call_rename, &tp, ENOENT, done_moved);
	if (t) {
		model_move(&t->m, &s->m);
		s->used = false;
	} else {
		snprintf(s->name, sizeof(s->name), "%s", to);
	}
	op_end(w, XOP_RENAME, "%s", res);
}

static void op_unlink(struct worker *w)
{
	struct wfile *f = pick_file(w);
	const char *res;

	if (!f)
		return;
	do_close(w, f);
	op_begin(w, "unlink %s", f->name);
	ns_from = f->name;
	res = retry_ns(w, "unlink", call_unlink, (void *)mpath(w, f->name),
		       ENOENT, done_gone);
	model_free(&f->m);
	f->used = false;
	op_end(w, XOP_UNLINK, "%s", res);
}

static void op_mkdir(struct worker *w)
{
	for (unsigned i = 0; i < MAX_DIRS; i++) {
		if (w->d_used[i])
			continue;
		new_name(w, w->dname[i], 'd');
		op_begin(w, "mkdir %s", w->dname[i]);
		ns_from = w->dname[i];
		op_end(w, XOP_MKDIR, "%s",
		       retry_ns(w, "mkdir", call_mkdir,
				(void *)mpath(w, w->dname[i]), EEXIST,
				done_there));
		w->d_used[i] = true;
		return;
	}
}

static void op_rmdir(struct worker *w)
{
	unsigned i = (unsigned)xrand_below(&w->r, MAX_DIRS);

	if (!w->d_used[i])
		return;
	op_begin(w, "rmdir %s", w->dname[i]);
	ns_from = w->dname[i];
	retry_ns(w, "rmdir", call_rmdir, (void *)mpath(w, w->dname[i]), ENOENT,
		 done_gone);
	w->d_used[i] = false;
	op_end(w, XOP_RMDIR, "ok");
}

/* Whether name is one the model has (a file or a directory). */
static bool known_name(struct worker *w, const char *name, bool *is_dir,
		       unsigned *idx)
{
	for (unsigned i = 0; i < MAX_FILES; i++)
		if (w->f[i].used && strcmp(w->f[i].name, name) == 0) {
			*is_dir = false;
			*idx = i;
			return true;
		}
	for (unsigned i = 0; i < MAX_DIRS; i++)
		if (w->d_used[i] && strcmp(w->dname[i], name) == 0) {
			*is_dir = true;
			*idx = i;
			return true;
		}
	return false;
}

/*
 * Lists dir and compares the names with the model's; silly-renamed files
 * (.nfs*) are allowed through the mount only (a release may still be on its
 * way), never on the export.  Returns false if interrupted.
 */
static bool list_check(struct worker *w, const char *dir, bool on_export)
{
	bool seen_f[MAX_FILES] = { false }, seen_d[MAX_DIRS] = { false };
	const char *where = on_export ? "the export" : "readdir of the mount";
	int fd = on_export ? beneath_open(w->top, w->rel,
					  O_RDONLY | O_DIRECTORY, 0) :
			     open(dir, O_RDONLY | O_DIRECTORY);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *e;

	if (on_export && fd < 0)
		wfail(w, "%s: %s", dir, beneath_strerror(fd));
	if (!d) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		failed(w, "opendir", err);
		return false;
	}
	for (;;) {
		bool is_dir;
		unsigned i;

		errno = 0;
		e = readdir(d);
		if (!e)
			break;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (!on_export && strncmp(e->d_name, ".nfs", 4) == 0)
			continue;
		if (!known_name(w, e->d_name, &is_dir, &i))
			wfail(w, "MISMATCH in %s (%s): unexpected entry %s",
			      dir, where, e->d_name);
		if (is_dir)
			seen_d[i] = true;
		else
			seen_f[i] = true;
	}
	if (errno) {
		int err = errno;

		closedir(d);
		failed(w, "readdir", err);
		return false;
	}
	closedir(d);
	for (unsigned i = 0; i < MAX_FILES; i++)
		if (w->f[i].used && !seen_f[i])
			wfail(w, "MISMATCH in %s (%s): file %s is missing", dir,
			      where, w->f[i].name);
	for (unsigned i = 0; i < MAX_DIRS; i++)
		if (w->d_used[i] && !seen_d[i])
			wfail(w, "MISMATCH in %s (%s): directory %s is missing",
			      dir, where, w->dname[i]);
	return true;
}

static void op_readdir(struct worker *w)
{
	op_begin(w, "readdir");
	op_end(w, XOP_READDIR, "%s",
	       list_check(w, w->dir, false) ? "ok" : "EINTR");
}

struct weighted {
	enum xop op;
	unsigned weight;
};

static const struct weighted mix[] = {
	{ XOP_CREATE, 4 }, { XOP_OPEN, 5 },    { XOP_CLOSE, 3 },
	{ XOP_WRITE, 10 }, { XOP_PWRITE, 14 }, { XOP_SPARSE, 3 },
	{ XOP_TRUNC, 5 },  { XOP_READ, 16 },   { XOP_STAT, 4 },
	{ XOP_FSYNC, 4 },  { XOP_RENAME, 3 },  { XOP_UNLINK, 2 },
	{ XOP_MKDIR, 1 },  { XOP_RMDIR, 1 },   { XOP_READDIR, 2 },
};

static void one_op(struct worker *w)
{
	unsigned total = 0, p;
	enum xop op = XOP_CREATE;

	for (size_t i = 0; i < ARRAY_SIZE(mix); i++)
		total += mix[i].weight;
	p = (unsigned)xrand_below(&w->r, total);
	for (size_t i = 0; i < ARRAY_SIZE(mix); i++) {
		if (p < mix[i].weight) {
			op = mix[i].op;
			break;
		}
		p -= mix[i].weight;
	}
	if (!pick_file(w))
		op = XOP_CREATE;
	switch (op) {
	case XOP_CREATE:
		op_create(w);
		break;
	case XOP_OPEN:
		op_reopen(w);
		break;
	case XOP_CLOSE:
		op_close(w);
		break;
	case XOP_WRITE:
	case XOP_PWRITE:
	case XOP_SPARSE:
		op_write(w, op);
		break;
	case XOP_TRUNC:
		op_trunc(w);
		break;
	case XOP_READ:
		op_read(w);
		break;
	case XOP_STAT:
		op_stat(w);
		break;
	case XOP_FSYNC:
		op_fsync(w);
		break;
	case XOP_RENAME:
		op_rename(w);
		break;
	case XOP_UNLINK:
		op_unlink(w);
		break;
	case XOP_MKDIR:
		op_mkdir(w);
		break;
	case XOP_RMDIR:
		op_rmdir(w);
		break;
	default:
		op_readdir(w);
		break;
	}
}

static void send_byte(struct worker *w, char c)
{
	while (write(w->ctl, &c, 1) != 1)
		if (errno != EINTR)
			_exit(2); /* the parent is gone */
}

static void wait_byte(struct worker *w, char want)
{
	char c;

	for (;;) {
		ssize_t n = read(w->ctl, &c, 1);

		if (n == 1 && c == want)
			return;
		if (n < 0 && errno == EINTR)
			continue;
		_exit(2); /* the parent is gone, or asks us to stop */
	}
}

/*
 * The end, through the mount: every file synced, read whole and checked,
 * closed; the directory listed.  No faults and no signals any more, but a
 * signal sent just before may still land: EINTR is retried.
 */
static void final_mount_check(struct worker *w)
{
	w->phase = "final check through the mount";
	for (unsigned i = 0; i < MAX_FILES; i++) {
		struct wfile *f = &w->f[i];
		struct stat st;

		if (!f->used)
			continue;
		if (f->fd < 0)
			open_file(w, f, O_RDWR, XOP_OPEN);
		op_begin(w, "final fsync, stat, read %s", f->name);
		while (fsync(f->fd) < 0)
			failed(w, "fsync", errno);
		while (fstat(f->fd, &st) < 0)
			failed(w, "fstat", errno);
		check_size(w, f, (uint64_t)st.st_size, "final fstat");
		while (!read_check(w, f, f->fd, 0, MODEL_MAX + 1,
				   "final read through the mount"))
			;
		op_end(w, XOP_READ, "ok");
		do_close(w, f);
	}
	op_begin(w, "final readdir");
	while (!list_check(w, w->dir, false))
		;
	op_end(w, XOP_READDIR, "ok");
}

/*
 * --self-test-link: what any client of the server can do to the export.
 * One of worker 0's files, closed, is replaced through the mount (over
 * NFS) by a symbolic link to a copy of its bytes outside the export, in
 * the run's work directory (the mount point's parent, root's): a check
 * of the export that follows it finds every byte right.
 */
static void plant_link(struct worker *w)
{
	static uint8_t buf[MODEL_MAX + 1];

	for (unsigned i = 0; i < MAX_FILES; i++) {
		struct wfile *f = &w->f[i];
		char copy[700], *slash;
		ssize_t n;
		int fd;

		if (!f->used || f->m.lo == 0)
			continue;
		fd = open(mpath(w, f->name), O_RDONLY);
		n = fd < 0 ? -1 : read(fd, buf, sizeof(buf));
		if (fd >= 0)
			close(fd);
		/* The work directory: the mount's, less "/mnt/wK". */
		snprintf(copy, sizeof(copy), "%s", w->dir);
		for (int up = 0; up < 2 && (slash = strrchr(copy, '/')); up++)
			*slash = '\0';
		snprintf(copy + strlen(copy), sizeof(copy) - strlen(copy),
			 "/copy-w%u-%s", w->k, f->name);
		if (n < 0)
			wfail(w, "self-test: cannot read %s", f->name);
		fd = open(copy, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
		if (fd < 0 || write(fd, buf, (size_t)n) != n || close(fd) < 0)
			wfail(w, "self-test: cannot write %s", copy);
		if (unlink(mpath(w, f->name)) < 0 ||
		    symlink(copy, mpath(w, f->name)) < 0)
			wfail(w, "self-test: cannot replace %s: %s", f->name,
			      strerror(errno));
		fprintf(stderr,
			"intrfs-exercise: self-test: %s/%s is now a symbolic "
			"link to %s, a copy of its %zd bytes\n",
			w->local, f->name, copy, n);
		return;
	}
	wfail(w, "self-test: no file with bytes to replace");
}

/* --self-test-corrupt: flip a certain byte of a file on the export. */
static void corrupt_one(struct worker *w)
{
	for (unsigned i = 0; i < MAX_FILES; i++) {
		struct wfile *f = &w->f[i];
		char path[700], rel[300];
		uint8_t b;
		int fd;

		if (!f->used || f->m.lo == 0)
			continue;
		for (uint64_t off = f->m.lo / 2; off < f->m.lo; off++) {
			if (!model_certain(&f->m, off))
				continue;
			snprintf(path, sizeof(path), "%s/%s", w->local,
				 f->name);
			fd = beneath_open_file(
				w->top, xrel(w, f->name, rel, sizeof(rel)),
				O_RDWR, 0);
			if (fd < 0 || pread(fd, &b, 1, (off_t)off) != 1)
				wfail(w, "self-test: cannot read %s", path);
			b ^= 0x5a;
			if (pwrite(fd, &b, 1, (off_t)off) != 1)
				wfail(w, "self-test: cannot write %s", path);
			close(fd);
			fprintf(stderr,
				"intrfs-exercise: self-test: flipped the byte "
				"at offset %" PRIu64 " of %s on the export\n",
				off, path);
			return;
		}
	}
	/* No certain byte anywhere: an entry the model does not have. */
	{
		char path[700], rel[300];
		int fd;

		snprintf(path, sizeof(path), "%s/stray", w->local);
		fd = beneath_open(w->top, xrel(w, "stray", rel, sizeof(rel)),
				  O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd >= 0)
			close(fd);
		fprintf(stderr,
			"intrfs-exercise: self-test: created %s on the "
			"export\n",
			path);
	}
}

/* After the unmount: the export itself against the model. */
static void export_check(struct worker *w)
{
	w->phase = "check of the export after the unmount";
	w->on_export = true;
	if (w->o->self_test_corrupt && w->k == 0)
		corrupt_one(w);
	op_begin(w, "export check");
	list_check(w, w->local, true);
	for (unsigned i = 0; i < MAX_DIRS; i++) {
		char path[700], rel[300];
		struct stat st;
		int rc;

		if (!w->d_used[i])
			continue;
		snprintf(path, sizeof(path), "%s/%s", w->local, w->dname[i]);
		xrel(w, w->dname[i], rel, sizeof(rel));
		rc = beneath_lstat(w->top, rel, &st);
		if (rc == 0 && !S_ISDIR(st.st_mode))
			rc = S_ISLNK(st.st_mode) ? -ELOOP : -ENOTDIR;
		if (rc == 0)
			rc = beneath_unlink(w->top, rel, AT_REMOVEDIR);
		if (rc < 0)
			wfail(w, "%s is not an empty directory: %s", path,
			      beneath_strerror(rc));
		rc = beneath_mkdir(w->top, rel, 0755);
		if (rc < 0)
			wfail(w, "mkdir %s: %s", path, beneath_strerror(rc));
	}
	for (unsigned i = 0; i < MAX_FILES; i++) {
		struct wfile *f = &w->f[i];
		char path[700], rel[300];
		struct stat st;
		int fd;

		if (!f->used)
			continue;
		snprintf(path, sizeof(path), "%s/%s", w->local, f->name);
		/* Its own file: no link followed, no other name. */
		fd = beneath_open_file(w->top,
				       xrel(w, f->name, rel, sizeof(rel)),
				       O_RDONLY, 0);
		if (fd < 0)
			wfail(w, "%s: %s", path, beneath_strerror(fd));
		if (fstat(fd, &st) < 0)
			wfail(w, "fstat %s: %s", path, strerror(errno));
		check_size(w, f, (uint64_t)st.st_size, "on the export");
		if (!read_check(w, f, fd, 0, MODEL_MAX + 1, "on the export"))
			wfail(w, "reading %s was interrupted", path);
		close(fd);
	}
	op_end(w, XOP_READ, "ok");
}

static void install_handlers(struct worker *w)
{
	struct sigaction sa;
	sigset_t set;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGUSR1, &sa, NULL); /* no SA_RESTART */
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR2, &sa, NULL);
	/* SIGALRM: restarting or not, by the seed. */
	sa.sa_flags = xrand_below(&w->r, 2) ? SA_RESTART : 0;
	sigaction(SIGALRM, &sa, NULL);
	/* The parent blocked them across the fork. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGALRM);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

int worker_main(const struct xopts *o, unsigned k, struct xshared *sh, int ctl,
		const char *mnt, const char *local, int top, const char *sub)
{
	static struct worker w;
	uint64_t end;

	w.o = o;
	w.k = k;
	w.sh = sh;
	w.ctl = ctl;
	w.phase = "run";
	w.r.s = xmix(o->seed) ^ xmix(0x1000 + k);
	snprintf(w.dir, sizeof(w.dir), "%s/w%u", mnt, k);
	snprintf(w.local, sizeof(w.local), "%s/w%u", local, k);
	w.top = top;
	snprintf(w.rel, sizeof(w.rel), "%s/w%u", sub, k);
	for (unsigned i = 0; i < MAX_FILES; i++)
		w.f[i].fd = -1;
	if (posix_memalign((void **)&w.buf, 4096, IO_MAX) ||
	    posix_memalign((void **)&w.rbuf, 4096, MODEL_MAX + 1))
		wfail(&w, "out of memory");
	install_handlers(&w);
	op_begin(&w, "mkdir w%u", k);
	ns_from = ".";
	op_end(&w, XOP_MKDIR, "%s",
	       retry_ns(&w, "mkdir", call_mkdir, w.dir, EEXIST, done_there));
	end = xnow_ns() + (uint64_t)(o->seconds * 1e9);
	while (o->ops ? w.opno < o->ops : xnow_ns() < end)
		one_op(&w);
	send_byte(&w, 'D');
	wait_byte(&w, 'C');
	final_mount_check(&w);
	if (o->self_test_link && k == 0)
		plant_link(&w);
	send_byte(&w, 'F');
	wait_byte(&w, 'U');
	export_check(&w);
	send_byte(&w, 'O');
	return 0;
}
