/*
 * Paths resolved beneath a directory, never through a link (beneath.h):
 * openat2(2) where the kernel has it, a walk of the components with
 * O_NOFOLLOW where it does not, and the few path operations an export's
 * reader needs (lstat, mkdir, chmod, unlink, rename, a tree's removal)
 * made from a descriptor of the directory that holds the name.
 * It never follows a symbolic link, never leaves the filesystem of the
 * directory it starts from, and never opens a FIFO or a device blocking
 * where the caller only meant to look.
 */
#include "beneath.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Set once openat2 answered ENOSYS, or by beneath_force_walk(). */
static bool use_walk;

void beneath_force_walk(bool on)
{
	use_walk = on;
}

int beneath_root(const char *path)
{
	int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/*
 * Splits rel into its components (none of them "" or "."), in buf: -EXDEV
 * for an absolute path or a "..", -ENAMETOOLONG past PATH_MAX.  Returns
 * how many, their starts in comp[] (at most max).
 */
static int split(const char *rel, char *buf, size_t len, char **comp, int max)
{
	int n = 0;
	char *p, *save = NULL;

	if (rel[0] == '/')
		return -EXDEV;
	if (strlen(rel) >= len)
		return -ENAMETOOLONG;
	strcpy(buf, rel);
	for (p = strtok_r(buf, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
		if (strcmp(p, ".") == 0)
			continue;
		if (strcmp(p, "..") == 0)
			return -EXDEV;
		if (n == max)
			return -ENAMETOOLONG;
		comp[n++] = p;
	}
	return n;
}

/* Whether name in dir is a symbolic link (to tell ELOOP from ENOTDIR). */
static bool is_link(int dir, const char *name)
{
	struct stat st;

	return fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISLNK(st.st_mode);
}

#define MAX_DEPTH 256

int beneath_open_walk(int dirfd, const char *rel, int flags, mode_t mode)
{
	char buf[PATH_MAX], *comp[MAX_DEPTH];
	struct stat root, st;
	int n, cur, fd, err;

	n = split(rel, buf, sizeof(buf), comp, MAX_DEPTH);
	if (n < 0)
		return n;
	if (fstat(dirfd, &root) < 0)
		return -errno;
	cur = openat(dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return -errno;
	for (int i = 0; i + 1 < n; i++) {
		fd = openat(cur, comp[i],
			    O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		err = errno;
		if (fd < 0 && err == ENOTDIR && is_link(cur, comp[i]))
			err = ELOOP;
		close(cur);
		if (fd < 0)
			return -err;
		if (fstat(fd, &st) < 0 || st.st_dev != root.st_dev) {
			close(fd);
			return -EXDEV;
		}
		cur = fd;
	}
	fd = openat(cur, n ? comp[n - 1] : ".", flags | O_NOFOLLOW | O_CLOEXEC,
		    mode);
	err = errno;
	if (fd < 0 && err == ENOTDIR && n && is_link(cur, comp[n - 1]))
		err = ELOOP;
	close(cur);
	if (fd < 0)
		return -err;
	if (fstat(fd, &st) < 0) {
		err = errno;
		close(fd);
		return -err;
	}
	/* O_PATH | O_NOFOLLOW opens a symbolic link itself. */
	if (S_ISLNK(st.st_mode) || st.st_dev != root.st_dev) {
		close(fd);
		return S_ISLNK(st.st_mode) ? -ELOOP : -EXDEV;
	}
	return fd;
}

int beneath_open(int dirfd, const char *rel, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		/* O_TMPFILE holds O_DIRECTORY's bit: compare it whole. */
		.mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ?
				mode :
				0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	char buf[PATH_MAX], *comp[MAX_DEPTH];
	int n, fd;

	/* The walk's refusals, for both: no "..", nothing absolute. */
	n = split(rel, buf, sizeof(buf), comp, MAX_DEPTH);
	if (n < 0)
		return n;
	if (!use_walk) {
		fd = (int)syscall(SYS_openat2, dirfd, n ? rel : ".", &how,
				  sizeof(how));
		if (fd >= 0)
			return fd;
		if (errno != ENOSYS)
			return -errno;
		use_walk = true;
	}
	return beneath_open_walk(dirfd, rel, flags, mode);
}

int beneath_open_file(int dirfd, const char *rel, int flags, mode_t mode)
{
	struct stat st;
	int fd = beneath_open(dirfd, rel, flags | O_NONBLOCK, mode);

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink > 1) {
		int err = S_ISDIR(st.st_mode) ? EISDIR :
			  S_ISREG(st.st_mode) ? EMLINK :
						ENXIO;

		close(fd);
		return -err;
	}
	/* Regular files ignore O_NONBLOCK; drop it for the caller anyway. */
	if (!(flags & O_NONBLOCK) &&
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		close(fd);
		return -errno;
	}
	return fd;
}

int beneath_parent(int dirfd, const char *rel, char *last, size_t len)
{
	char buf[PATH_MAX], parent[PATH_MAX], *comp[MAX_DEPTH];
	size_t at = 0;
	int n = split(rel, buf, sizeof(buf), comp, MAX_DEPTH);

	if (n < 0)
		return n;
	if (n == 0)
		return -EINVAL;
	if (strlen(comp[n - 1]) >= len)
		return -ENAMETOOLONG;
	strcpy(last, comp[n - 1]);
	/* The components before it: "" (dirfd itself) for one. */
	parent[0] = '\0';
	for (int i = 0; i + 1 < n; i++)
		at += (size_t)snprintf(parent + at, sizeof(parent) - at, "%s%s",
				       i ? "/" : "", comp[i]);
	return beneath_open(dirfd, parent, O_PATH | O_DIRECTORY, 0);
}

/* fn(parent, last, arg) on rel's parent, opened beneath dirfd. */
static int at_parent(int dirfd, const char *rel,
		     int (*fn)(int dir, const char *name, void *arg), void *arg)
{
	char last[NAME_MAX + 1];
	int dir = beneath_parent(dirfd, rel, last, sizeof(last)), rc;

	if (dir < 0)
		return dir;
	rc = fn(dir, last, arg);
	close(dir);
	return rc;
}

static int do_lstat(int dir, const char *name, void *st)
{
	return fstatat(dir, name, st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

int beneath_lstat(int dirfd, const char *rel, struct stat *st)
{
	char buf[PATH_MAX], *comp[MAX_DEPTH];
	int n = split(rel, buf, sizeof(buf), comp, MAX_DEPTH);

	if (n < 0)
		return n;
	if (n == 0)
		return fstat(dirfd, st) < 0 ? -errno : 0;
	return at_parent(dirfd, rel, do_lstat, st);
}

static int do_mkdir(int dir, const char *name, void *mode)
{
	return mkdirat(dir, name, *(mode_t *)mode) < 0 ? -errno : 0;
}

int beneath_mkdir(int dirfd, const char *rel, mode_t mode)
{
	return at_parent(dirfd, rel, do_mkdir, &mode);
}

int beneath_chmod(int dirfd, const char *rel, mode_t mode)
{
	char proc[64];
	int fd = beneath_open(dirfd, rel, O_PATH, 0), rc = 0;

	if (fd < 0)
		return fd;
	/*
	 * fchmod() does not take an O_PATH descriptor, and opening the file
	 * to read could block (a FIFO): its /proc link names exactly the
	 * inode opened, whatever its name points at now.
	 */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (chmod(proc, mode) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

int beneath_mkdir_mode(int dirfd, const char *rel, mode_t mode)
{
	int rc = beneath_mkdir(dirfd, rel, mode);

	return rc < 0 ? rc : beneath_chmod(dirfd, rel, mode);
}

static int do_unlink(int dir, const char *name, void *flags)
{
	return unlinkat(dir, name, *(int *)flags) < 0 ? -errno : 0;
}

int beneath_unlink(int dirfd, const char *rel, int flags)
{
	return at_parent(dirfd, rel, do_unlink, &flags);
}

int beneath_rename(int dirfd, const char *from, const char *to)
{
	char lf[NAME_MAX + 1], lt[NAME_MAX + 1];
	int df, dt, rc;

	df = beneath_parent(dirfd, from, lf, sizeof(lf));
	if (df < 0)
		return df;
	dt = beneath_parent(dirfd, to, lt, sizeof(lt));
	if (dt < 0) {
		close(df);
		return dt;
	}
	rc = renameat(df, lf, dt, lt) < 0 ? -errno : 0;
	close(df);
	close(dt);
	return rc;
}

/* name in dir and everything below it; dev: the tree's filesystem. */
static int remove_at(int dir, const char *name, dev_t dev, unsigned depth)
{
	struct dirent *e;
	struct stat st;
	int fd, rc = 0, r;
	DIR *d;

	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dir, name, 0) < 0 && errno != ENOENT ? -errno :
								       0;
	if (st.st_dev != dev)
		return -EXDEV;
	if (depth >= MAX_DEPTH)
		return -ELOOP;
	/* Swapped for a link since the look: refused here, left. */
	fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		r = remove_at(dirfd(d), e->d_name, dev, depth + 1);
		if (r && !rc)
			rc = r;
	}
	closedir(d);
	if (unlinkat(dir, name, AT_REMOVEDIR) < 0 && errno != ENOENT && !rc)
		rc = -errno;
	return rc;
}

int beneath_remove_tree(int dirfd, const char *rel)
{
	char last[NAME_MAX + 1];
	struct stat root;
	int dir, rc;

	if (fstat(dirfd, &root) < 0)
		return -errno;
	dir = beneath_parent(dirfd, rel, last, sizeof(last));
	if (dir < 0)
		return dir == -ENOENT ? 0 : dir;
	rc = remove_at(dir, last, root.st_dev, 0);
	close(dir);
	return rc;
}

const char *beneath_strerror(int err)
{
	switch (err < 0 ? -err : err) {
	case ELOOP:
		return "a symbolic link (not followed)";
	case EXDEV:
		return "outside the directory (.., an absolute path or "
		       "another filesystem: not followed)";
	case EMLINK:
		return "a file with other names too (a hard link: not read)";
	case ENXIO:
		return "not a regular file";
	default:
		return strerror(err < 0 ? -err : err);
	}
}
