/*
 * The workload: what each process of a scenario does, the old state the
 * runner prepares on the export before it, and the check of the export
 * after it.  Process k's files are its own (p<k>.a, p<k>.b; copyup's
 * p<k>.a in the upper directory and p<k>.a.tmp in the work directory): an
 * old byte and a new byte differ at every offset, so a written file shows
 * byte by byte what reached the server.
 *
 * The runner is root, and the export holds what any client of the server
 * put there: every name the preparation and the checks open is resolved
 * beneath the scenario's directory (struct work_at, tests/lib/beneath.h),
 * never through a symbolic link, and a file a check reads must have no
 * other name (a hard link): either is refused and named.
 */
#include "scenario.h"

#include "beneath.h"
#include "pr_region.h"

#include <intrfs/region.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ALIGN 4096

void work_names(const struct scenario *s, unsigned k, char *a, char *b,
		size_t len)
{
	(void)s;
	snprintf(a, len, "p%u.a", k);
	snprintf(b, len, "p%u.b", k);
}

unsigned char work_old_byte(unsigned k, uint64_t off)
{
	return (unsigned char)((off * 131u + off / 4096u + k * 29u) & 0xff);
}

unsigned char work_new_byte(unsigned k, uint64_t off)
{
	return work_old_byte(k, off) ^ 0xa5;
}

static void fill(unsigned char *buf, size_t len, unsigned k, uint64_t off,
		 bool new)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = new ? work_new_byte(k, off + i) :
			       work_old_byte(k, off + i);
}

/* name's path below at, for messages. */
static const char *at_path(const struct work_at *at, const char *name,
			   char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", at->path, name);
	return buf;
}

/* name made anew below at with k's old bytes; -1 with errno. */
static int write_old_file(const struct work_at *at, const char *name,
			  uint64_t size, unsigned k)
{
	unsigned char buf[65536];
	int fd = beneath_open(at->fd, name, O_WRONLY | O_CREAT | O_EXCL, 0666);

	if (fd < 0) {
		errno = -fd;
		return -1;
	}
	for (uint64_t off = 0; off < size;) {
		size_t n = size - off < sizeof(buf) ? (size_t)(size - off) :
						      sizeof(buf);
		ssize_t w;

		fill(buf, n, k, off, false);
		w = write(fd, buf, n);
		if (w <= 0) {
			close(fd);
			return -1;
		}
		off += (uint64_t)w;
	}
	if (fchmod(fd, 0666) < 0 || close(fd) < 0)
		return -1;
	return 0;
}

int work_prepare(const struct scenario *s, const struct work_at *dir,
		 unsigned k)
{
	char a[32], b[32];
	int rc, d;

	work_names(s, k, a, b, sizeof(a));
	switch (s->op) {
	case OP_READ:
	case OP_WRITE:
	case OP_FSYNC:
	case OP_STAT:
	case OP_REMOVE:
	case OP_RENAME:
		return write_old_file(dir, a, s->size, k);
	case OP_COPYUP:
		if (k == 0 && s->upper_intrfs && work_copyup_dirs(dir) < 0)
			return -1;
		return write_old_file(dir, a, s->size, k);
	case OP_LOCK:
		return write_old_file(dir, a, 1, k);
	case OP_READDIR:
		rc = beneath_mkdir(dir->fd, a, 0777);
		d = rc < 0 ? rc :
			     beneath_open(dir->fd, a, O_PATH | O_DIRECTORY, 0);
		if (d < 0) {
			errno = -d;
			return -1;
		}
		for (unsigned i = 0; i < s->entries; i++) {
			char e[16];
			int fd;

			snprintf(e, sizeof(e), "e%05u", i);
			fd = beneath_open(d, e, O_WRONLY | O_CREAT | O_EXCL,
					  0666);
			if (fd < 0 || close(fd) < 0) {
				if (fd < 0)
					errno = -fd;
				close(d);
				return -1;
			}
		}
		close(d);
		return 0;
	case OP_CREATE:
	case OP_MKDIR:
		return 0;
	}
	return 0;
}

int work_copyup_dirs(const struct work_at *base)
{
	/* 0777: the workload's processes write there through the mount. */
	int rc = beneath_mkdir_mode(base->fd, "upper", 0777);

	if (rc == 0)
		rc = beneath_mkdir_mode(base->fd, "work", 0777);
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	return 0;
}

/* The workload's paths: through the mount (or the overlay on it). */
static const char *join(const char *dir, const char *name, char *buf,
			size_t len)
{
	snprintf(buf, len, "%s/%s", dir, name);
	return buf;
}

static volatile sig_atomic_t sigs_seen;

static void on_signal(int sig)
{
	(void)sig;
	sigs_seen++;
}

static void install(const struct scenario *s)
{
	struct sigaction sa;

	signal(SIGPIPE, SIG_IGN);
	if (!s->sig || s->sig == SIGKILL)
		return;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	if (s->action == ACT_DEFAULT) {
		sa.sa_handler = SIG_DFL;
	} else {
		sa.sa_handler = on_signal;
		sa.sa_flags = s->action == ACT_RESTART ? SA_RESTART : 0;
	}
	sigaction(s->sig, &sa, NULL);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void fail(struct work_report *r, enum scn_call call, int err)
{
	if (r->result != RES_OK)
		return;
	r->result = err ? err : EIO;
	snprintf(r->call, sizeof(r->call), "%s", scn_call_name(call));
}

static void do_read(const struct scenario *s, unsigned k, int fd,
		    unsigned char *buf, struct work_report *r)
{
	r->data_ok = true;
	while (r->done < s->size) {
		size_t want = s->size - r->done < s->chunk ?
				      (size_t)(s->size - r->done) :
				      (size_t)s->chunk;
		ssize_t n = read(fd, buf, want);

		if (n < 0) {
			fail(r, CALL_READ, errno);
			return;
		}
		if (n == 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != work_old_byte(k, r->done + (uint64_t)i))
				r->data_ok = false;
		r->done += (uint64_t)n;
	}
	if (r->done != s->size)
		r->data_ok = false;
}

static void do_write(const struct scenario *s, unsigned k, int fd,
		     unsigned char *buf, struct work_report *r)
{
	while (r->done < s->size) {
		size_t want = s->size - r->done < s->chunk ?
				      (size_t)(s->size - r->done) :
				      (size_t)s->chunk;
		ssize_t n;

		fill(buf, want, k, r->done, true);
		n = write(fd, buf, want);
		if (n < 0) {
			fail(r, CALL_WRITE, errno);
			return;
		}
		r->done += (uint64_t)n;
	}
	if (s->op == OP_FSYNC && fsync(fd) < 0)
		fail(r, CALL_FSYNC, errno);
}

static void do_readdir(const struct scenario *s, const char *path,
		       struct work_report *r)
{
	DIR *d = opendir(path);
	struct dirent *e;

	if (!d) {
		fail(r, CALL_OPENDIR, errno);
		return;
	}
	for (;;) {
		errno = 0;
		e = readdir(d);
		if (!e)
			break;
		if (e->d_name[0] == 'e')
			r->done++;
	}
	if (errno)
		fail(r, CALL_READDIR, errno);
	if (closedir(d) < 0)
		fail(r, CALL_CLOSEDIR, errno);
	r->data_ok = r->done == s->entries;
}

/* Locks: a holder, the waiter's call, and who holds it after. */

/* A write lock on the whole file: 0 or the errno. */
static int whole_lock(int fd, int cmd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	return fcntl(fd, cmd, &fl) == 0 ? 0 : errno;
}

/*
 * The holder, another process (another owner): takes the lock on path
 * before time 0 and lets go hold_ns after it (go: a byte on its pipe).
 * Its pid, or -1 when it could not take the lock.
 */
static pid_t start_holder(const char *path, uint64_t hold_ns, int *go)
{
	int ready[2], g[2];
	pid_t pid;
	char c;

	if (pipe(ready) < 0 || pipe(g) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		int fd = open(path, O_RDWR);

		/* Not left holding the lock when its waiter is gone. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGPIPE, SIG_IGN);
		close(ready[0]);
		close(g[1]);
		c = fd >= 0 && whole_lock(fd, F_SETLK) == 0 ? 'h' : 'x';
		if (write(ready[1], &c, 1) != 1 || c != 'h' ||
		    read(g[0], &c, 1) != 1)
			_exit(1);
		nanosleep(&(struct timespec){ (time_t)(hold_ns / 1000000000u),
					      (long)(hold_ns % 1000000000u) },
			  NULL);
		_exit(0); /* the exit lets go */
	}
	close(ready[1]);
	close(g[0]);
	if (pid < 0 || read(ready[0], &c, 1) != 1 || c != 'h') {
		close(ready[0]);
		close(g[1]);
		return -1;
	}
	close(ready[0]);
	*go = g[1];
	return pid;
}

/*
 * Whether another process can take the lock now: 1 when it cannot (the
 * caller holds it), 0 when it can, -1 when it could not tell.
 */
static int lock_taken(const char *path)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(path, O_RDWR);

		_exit(fd < 0 ? 2 : whole_lock(fd, F_SETLK) == 0 ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) > 1)
		return -1;
	return WEXITSTATUS(status);
}

/*
 * The lock call of a lock workload, and whether the caller held the lock
 * once it returned (the holder gone by then): an interrupted waiter never
 * may.
 */
static void do_lock(const struct scenario *s, const char *path, int fd,
		    pid_t holder, struct work_report *r)
{
	int err, taken;

	err = s->flock ? (flock(fd, LOCK_EX) == 0 ? 0 : errno) :
			 whole_lock(fd, F_SETLKW);
	if (err)
		fail(r, s->flock ? CALL_FLOCK : CALL_FCNTL, err);
	/* The end of the call: what follows is the check. */
	r->end_ns = now_ns();
	waitpid(holder, NULL, 0);
	taken = lock_taken(path);
	if (taken < 0)
		fail(r, CALL_CHECK, EIO);
	r->lock_held = taken == 1;
}

/*
 * Copy-up as overlayfs does it (ovl_copy_up_file() into a temporary of
 * its work directory, then a rename into the upper one), in user space:
 * the lower file, open since before time 0, read in chunks into
 * work/p<k>.a.tmp, which is synced, closed and renamed to upper/p<k>.a.
 * On an error the temporary goes, as overlayfs cleans up after a failed
 * copy-up, so a process that ended itself leaves nothing half done; only
 * a killed one may leave its temporary.
 */
static void do_copyup(const struct scenario *s, const struct work_dirs *d,
		      unsigned k, int lower, unsigned char *buf,
		      struct work_report *r)
{
	char a[32], b[32], tmp[SCN_TEXT_MAX + 80], fin[SCN_TEXT_MAX + 64];
	int fd;

	work_names(s, k, a, b, sizeof(a));
	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", d->work, a);
	join(d->upper, a, fin, sizeof(fin));
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		fail(r, CALL_OPEN, errno);
		return;
	}
	while (r->done < s->size) {
		size_t want = s->size - r->done < s->chunk ?
				      (size_t)(s->size - r->done) :
				      (size_t)s->chunk;
		ssize_t n = read(lower, buf, want);

		if (n < 0) {
			fail(r, CALL_READ, errno);
			goto out_unlink;
		}
		/* A short lower file: the check finds the copy short. */
		if (n == 0)
			break;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(fd, buf + off, (size_t)(n - off));

			if (w <= 0) {
				fail(r, CALL_WRITE, w < 0 ? errno : EIO);
				goto out_unlink;
			}
			off += w;
		}
		r->done += (uint64_t)n;
	}
	if (fsync(fd) < 0) {
		fail(r, CALL_FSYNC, errno);
		goto out_unlink;
	}
	if (close(fd) < 0) {
		fd = -1;
		fail(r, CALL_CLOSE, errno);
		goto out_unlink;
	}
	fd = -1;
	if (rename(tmp, fin) < 0) {
		fail(r, CALL_RENAME, errno);
		goto out_unlink;
	}
	return;

out_unlink:
	if (fd >= 0)
		close(fd);
	/*
	 * A signal that came for the failed call must not leave the
	 * temporary behind: a handled one can interrupt this unlink too.
	 * ENOENT: a rename that failed after the server made it.
	 */
	for (int i = 0; i < 100 && unlink(tmp) < 0 && errno == EINTR; i++)
		;
}

/*
 * Linux with the regions series (kernel/patches/): a region held from user
 * space applies to the sleeps of the process's system calls, as a caller
 * region on an intrfs mount applies to its requests.
 */
bool work_kernel_has_regions(void)
{
	if (prctl(PR_REGION, PR_REGION_BEGIN, PR_REGION_KILLABLE, 0, 0) < 0)
		return false;
	prctl(PR_REGION, PR_REGION_END, PR_REGION_KILLABLE, 0, 0);
	return true;
}

/*
 * The process's caller region on the intrfs mount, before time 0: every
 * request it makes to the mount from then on runs inside it.  d->mnt is
 * the mount itself: overlayfs does not pass the ioctl down to its lower
 * layer.  The directory stays open as long as the region, which ends
 * with the process.  On a kernel with regions, the kernel's client gets
 * the same region through prctl(PR_REGION).
 */
static void declare_region(const struct scenario *s, const struct work_dirs *d,
			   struct work_report *r)
{
	int fd, rc;

	if (!s->has_region)
		return;
	if (d->kernel_regions) {
		if (prctl(PR_REGION, PR_REGION_BEGIN,
			  s->region_kind == REGION_UNINTERRUPTIBLE ?
				  PR_REGION_UNINTERRUPTIBLE :
				  PR_REGION_KILLABLE,
			  0, 0) < 0)
			fail(r, CALL_REGION, errno);
		return;
	}
	if (!d->mnt)
		return;
	fd = open(d->mnt, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		fail(r, CALL_REGION, errno);
		return;
	}
	rc = region_caller_begin(fd, s->region_kind, s->region_reason);
	if (rc < 0)
		fail(r, CALL_REGION, -rc);
}

const char *work_lock_state(const struct work_report *rep, enum scn_state want,
			    char *buf, size_t len, const char **seen)
{
	const char *got = rep->lock_held ? "new" : "old";

	*seen = got;
	if ((want == ST_NEW && !rep->lock_held) ||
	    (want == ST_OLD && rep->lock_held)) {
		snprintf(buf, len, "%s",
			 rep->lock_held ? "the lock held" :
					  "the lock not held");
		return NULL;
	}
	return got;
}

void work_child(const struct scenario *s, const struct work_dirs *d, unsigned k,
		int ready_fd, int go_fd, int report_fd)
{
	struct work_report r = { .result = RES_OK };
	char a[32], b[32], pa[SCN_TEXT_MAX + 64], pb[SCN_TEXT_MAX + 64];
	unsigned char *buf = NULL;
	int fd = -1, flags, hgo = -1;
	pid_t holder = -1;
	struct stat st;
	char c = 'r';

	install(s);
	declare_region(s, d, &r);
	work_names(s, k, a, b, sizeof(a));
	join(d->dir, a, pa, sizeof(pa));
	join(d->dir, b, pb, sizeof(pb));
	if (s->op == OP_READ || s->op == OP_WRITE || s->op == OP_FSYNC ||
	    s->op == OP_COPYUP) {
		flags = s->op == OP_READ || s->op == OP_COPYUP ? O_RDONLY :
								 O_WRONLY;
		if (s->direct)
			flags |= O_DIRECT;
		if (posix_memalign((void **)&buf, ALIGN,
				   (size_t)s->chunk + ALIGN) != 0)
			_exit(120);
		if (r.result == RES_OK) {
			fd = open(pa, flags);
			if (fd < 0)
				fail(&r, CALL_OPEN, errno);
		}
	}
	if (s->op == OP_LOCK && r.result == RES_OK) {
		fd = open(pa, O_RDWR);
		if (fd < 0)
			fail(&r, CALL_OPEN, errno);
		else if ((holder = start_holder(pa, s->hold_ns, &hgo)) < 0)
			fail(&r, CALL_HOLDER, EAGAIN);
	}
	if (write(ready_fd, &c, 1) != 1 || read(go_fd, &c, 1) != 1)
		_exit(121);
	if (hgo >= 0 && write(hgo, &c, 1) != 1)
		fail(&r, CALL_HOLDER, EPIPE);
	if (r.result == RES_OK) {
		switch (s->op) {
		case OP_READ:
			do_read(s, k, fd, buf, &r);
			break;
		case OP_WRITE:
		case OP_FSYNC:
			do_write(s, k, fd, buf, &r);
			break;
		case OP_CREATE:
			fd = open(pa, O_CREAT | O_EXCL | O_WRONLY, 0644);
			if (fd < 0)
				fail(&r, CALL_OPEN, errno);
			break;
		case OP_REMOVE:
			if (unlink(pa) < 0)
				fail(&r, CALL_UNLINK, errno);
			break;
		case OP_RENAME:
			if (rename(pa, pb) < 0)
				fail(&r, CALL_RENAME, errno);
			break;
		case OP_READDIR:
			do_readdir(s, pa, &r);
			break;
		case OP_MKDIR:
			if (mkdir(pa, 0755) < 0)
				fail(&r, CALL_MKDIR, errno);
			break;
		case OP_STAT:
			if (stat(pa, &st) < 0)
				fail(&r, CALL_STAT, errno);
			else
				r.data_ok = (uint64_t)st.st_size == s->size;
			break;
		case OP_LOCK:
			do_lock(s, pa, fd, holder, &r);
			break;
		case OP_COPYUP:
			do_copyup(s, d, k, fd, buf, &r);
			break;
		}
		if (s->op != OP_LOCK && fd >= 0 && close(fd) < 0)
			fail(&r, CALL_CLOSE, errno);
	}
	/* A lock's call ended before its check (do_lock()). */
	if (!r.end_ns)
		r.end_ns = now_ns();
	r.sigs = (unsigned)sigs_seen;
	if (write(report_fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(122);
	_exit(0);
}

/*
 * The state of name below at, a file of its own that should hold k's old
 * or new bytes.
 */
static const char *check_bytes(const struct scenario *s,
			       const struct work_at *at, const char *name,
			       unsigned k, char *buf, size_t len)
{
	unsigned char chunk[65536];
	uint64_t off = 0, olds = 0, news = 0;
	char path[SCN_TEXT_MAX + 64];
	int fd = beneath_open_file(at->fd, name, O_RDONLY, 0);
	struct stat st;

	at_path(at, name, path, sizeof(path));
	if (fd < 0) {
		snprintf(buf, len, "%s: %s", path, beneath_strerror(fd));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size != s->size) {
		snprintf(buf, len, "%s has %lld bytes, not %llu", path,
			 (long long)st.st_size, (unsigned long long)s->size);
		close(fd);
		return NULL;
	}
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0) {
			snprintf(buf, len, "read %s: %s", path,
				 strerror(errno));
			close(fd);
			return NULL;
		}
		if (n == 0)
			break;
		for (ssize_t i = 0; i < n; i++, off++) {
			if (chunk[i] == work_old_byte(k, off)) {
				olds++;
			} else if (chunk[i] == work_new_byte(k, off)) {
				news++;
			} else {
				snprintf(
					buf, len,
					"%s is torn: byte %llu is 0x%02x, "
					"neither old (0x%02x) nor new (0x%02x)",
					path, (unsigned long long)off, chunk[i],
					work_old_byte(k, off),
					work_new_byte(k, off));
				close(fd);
				return NULL;
			}
		}
	}
	close(fd);
	if (news == s->size)
		return "new";
	if (olds == s->size)
		return "old";
	return "mixed";
}

static bool exists(const struct work_at *at, const char *name, mode_t type)
{
	struct stat st;

	return beneath_lstat(at->fd, name, &st) == 0 &&
	       (st.st_mode & S_IFMT) == type;
}

/* name below at as a directory stream, or NULL with errno. */
static DIR *open_dir(const struct work_at *at, const char *name)
{
	int fd = beneath_open(at->fd, name, O_RDONLY | O_DIRECTORY, 0);
	DIR *d;

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

const char *work_check(const struct scenario *s, const struct work_at *dir,
		       unsigned k, enum scn_state want, char *buf, size_t len,
		       const char **seen)
{
	char a[32], b[32], pa[SCN_TEXT_MAX + 64];
	const char *got = NULL;
	bool ha, hb;

	*seen = NULL;

	work_names(s, k, a, b, sizeof(a));
	at_path(dir, a, pa, sizeof(pa));
	switch (s->op) {
	case OP_READ:
	case OP_STAT:
	case OP_WRITE:
	case OP_FSYNC:
		got = check_bytes(s, dir, a, k, buf, len);
		if (got && (s->op == OP_READ || s->op == OP_STAT) &&
		    strcmp(got, "old") != 0) {
			snprintf(buf, len, "%s changed (%s)", pa, got);
			return NULL;
		}
		if (got && (s->op == OP_READ || s->op == OP_STAT))
			return *seen = "unchanged";
		break;
	case OP_READDIR: {
		unsigned n = 0;
		DIR *d = open_dir(dir, a);
		struct dirent *e;

		if (!d) {
			snprintf(buf, len, "%s: %s", pa,
				 beneath_strerror(errno));
			return NULL;
		}
		while ((e = readdir(d)))
			n += e->d_name[0] == 'e';
		closedir(d);
		if (n != s->entries) {
			snprintf(buf, len, "%s has %u entries, not %u", pa, n,
				 s->entries);
			return NULL;
		}
		return *seen = "unchanged";
	}
	case OP_CREATE:
		got = exists(dir, a, S_IFREG) ? "new" : "old";
		break;
	case OP_LOCK:
		/* What a lock leaves is the report's: work_lock_state(). */
		return *seen = "unchanged";
	case OP_COPYUP:
		/* Its upper and work directories: work_copyup_check(). */
		snprintf(buf, len, "copyup is checked by work_copyup_check()");
		return NULL;
	case OP_MKDIR:
		got = exists(dir, a, S_IFDIR) ? "new" : "old";
		break;
	case OP_REMOVE:
		if (!exists(dir, a, S_IFREG))
			got = "new";
		else if ((got = check_bytes(s, dir, a, k, buf, len)) &&
			 strcmp(got, "old") != 0) {
			snprintf(buf, len, "%s is still there, changed", pa);
			return NULL;
		}
		break;
	case OP_RENAME:
		ha = exists(dir, a, S_IFREG);
		hb = exists(dir, b, S_IFREG);
		if (ha == hb) {
			if (ha)
				snprintf(buf, len,
					 "the file is at both %s and %s", a, b);
			else
				snprintf(buf, len,
					 "the file is at neither %s nor %s", a,
					 b);
			return NULL;
		}
		got = check_bytes(s, dir, ha ? a : b, k, buf, len);
		if (got && strcmp(got, "old") != 0) {
			snprintf(buf, len, "the renamed file's bytes changed");
			return NULL;
		}
		if (got)
			got = ha ? "old" : "new";
		break;
	}
	if (!got)
		return NULL;
	*seen = got;
	if ((want == ST_NEW && strcmp(got, "new") != 0) ||
	    (want == ST_OLD && strcmp(got, "old") != 0)) {
		snprintf(buf, len, "the export is %s, not %s", got,
			 scn_state_name(want));
		return NULL;
	}
	return got;
}

/* The process a name of the upper or work directory is of ("p<k>."), or -1. */
static int owner_of(const char *name, unsigned procs)
{
	char *end;
	unsigned long k;

	if (name[0] != 'p' || !isdigit((unsigned char)name[1]))
		return -1;
	k = strtoul(name + 1, &end, 10);
	return *end == '.' && k < procs ? (int)k : -1;
}

/*
 * Process k's names in dir: *mine counts them, and *other is set to the
 * first name there of no process (none: "").  -1 when dir cannot be read.
 */
static int scan_dir(const struct work_at *dir, unsigned procs, unsigned k,
		    unsigned *mine, char *other, size_t olen)
{
	DIR *d = open_dir(dir, ".");
	struct dirent *e;

	*mine = 0;
	other[0] = '\0';
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		int o = owner_of(e->d_name, procs);

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (o == (int)k)
			(*mine)++;
		else if (o < 0 && !other[0])
			snprintf(other, olen, "%s", e->d_name);
	}
	closedir(d);
	return 0;
}

const char *
work_copyup_check(const struct scenario *s, const struct work_at *dir,
		  const struct work_at *upper, const struct work_at *work,
		  unsigned k, enum scn_state want, bool killed, char *buf,
		  size_t len, const char **seen, unsigned *work_left)
{
	char a[32], b[32], path[SCN_TEXT_MAX + 64], other[256];
	const char *got, *bytes;
	unsigned in_upper;

	*seen = NULL;
	*work_left = 0;
	work_names(s, k, a, b, sizeof(a));
	/* Copy-up reads the lower file; nothing may change it. */
	bytes = check_bytes(s, dir, a, k, buf, len);
	if (!bytes)
		return NULL;
	if (strcmp(bytes, "old") != 0) {
		snprintf(buf, len, "the lower file %s changed (%s)",
			 at_path(dir, a, path, sizeof(path)), bytes);
		return NULL;
	}
	if (scan_dir(work, s->procs, k, work_left, other, sizeof(other)) < 0) {
		snprintf(buf, len, "%s: %s", work->path,
			 beneath_strerror(errno));
		return NULL;
	}
	if (*work_left && !killed) {
		snprintf(buf, len,
			 "%s keeps %u temporar%s of process %u, which ended "
			 "itself",
			 work->path, *work_left, *work_left == 1 ? "y" : "ies",
			 k);
		return NULL;
	}
	if (other[0]) {
		snprintf(buf, len, "%s holds %s, no process's", work->path,
			 other);
		return NULL;
	}
	if (scan_dir(upper, s->procs, k, &in_upper, other, sizeof(other)) < 0) {
		snprintf(buf, len, "%s: %s", upper->path,
			 beneath_strerror(errno));
		return NULL;
	}
	if (other[0]) {
		snprintf(buf, len, "%s holds %s, no process's", upper->path,
			 other);
		return NULL;
	}
	at_path(upper, a, path, sizeof(path));
	if (in_upper == 0) {
		got = "old";
	} else if (in_upper == 1 && exists(upper, a, S_IFLNK)) {
		snprintf(buf, len, "%s: %s", path, beneath_strerror(-ELOOP));
		return NULL;
	} else if (in_upper > 1 || !exists(upper, a, S_IFREG)) {
		snprintf(buf, len,
			 "%s holds a name of process %u other than %s (%u "
			 "in all)",
			 upper->path, k, a, in_upper);
		return NULL;
	} else {
		/* The copy is whole when it holds the lower (old) bytes. */
		bytes = check_bytes(s, upper, a, k, buf, len);
		if (!bytes)
			return NULL;
		if (strcmp(bytes, "old") != 0) {
			snprintf(buf, len,
				 "%s is not the lower file's bytes (%s)", path,
				 bytes);
			return NULL;
		}
		got = "new";
	}
	*seen = got;
	if ((want == ST_NEW && strcmp(got, "new") != 0) ||
	    (want == ST_OLD && strcmp(got, "old") != 0)) {
		snprintf(buf, len, "the upper directory is %s, not %s", got,
			 scn_state_name(want));
		return NULL;
	}
	return got;
}
