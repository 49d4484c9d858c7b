/*
 * safepath: paths a program that may run as root opens (safepath.h says
 * the rule).  Organised as the walk (normalize, the directory checks, one
 * held descriptor a component), the open in a held directory (made with
 * O_EXCL, or an existing file checked), and the child that opens as
 * another user and sends the descriptor back.
 *
 * It holds no lock and keeps no state; the child it forks makes only
 * system calls (no malloc, no stdio) so that a threaded caller is safe.
 */
#include "safepath.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Formats msg and returns rc (a negative errno). */
__attribute__((format(printf, 4, 5))) static int
say(char *msg, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;

	if (msg && len) {
		va_start(ap, fmt);
		vsnprintf(msg, len, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* An unsigned number that is all of s, or false. */
static bool whole_number(const char *s, unsigned long *v)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoul(s, &end, 10);
	return !*end && !errno;
}

uid_t safepath_invoker(void)
{
	unsigned long v;

	if (getuid() == 0 && whole_number(getenv("SUDO_UID"), &v) &&
	    v < (uid_t)-1)
		return (uid_t)v;
	return getuid();
}

/* The invoker's gid: SUDO_GID beside SUDO_UID, else from passwd. */
static gid_t invoker_gid(void)
{
	unsigned long v;

	if (getuid() == 0 && whole_number(getenv("SUDO_GID"), &v) &&
	    v < (gid_t)-1)
		return (gid_t)v;
	return (gid_t)-1;
}

int safepath_user_of(uid_t uid, gid_t gid, struct safepath_user *u)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	int n = SAFEPATH_GROUPS_MAX;

	memset(u, 0, sizeof(*u));
	u->uid = uid;
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) != 0 || !res) {
		if (gid == (gid_t)-1)
			return -ENOENT;
		u->gid = gid;
		u->ngroups = 1;
		u->groups[0] = gid;
		return 0;
	}
	u->gid = gid == (gid_t)-1 ? pw.pw_gid : gid;
	/* Too many groups: the first SAFEPATH_GROUPS_MAX, never more. */
	if (getgrouplist(pw.pw_name, u->gid, u->groups, &n) < 0)
		n = SAFEPATH_GROUPS_MAX;
	u->ngroups = n;
	return 0;
}

int safepath_peer(int sock, struct safepath_user *u)
{
	struct ucred cred;
	socklen_t cl = sizeof(cred), gl;

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0)
		return -errno;
	memset(u, 0, sizeof(*u));
	u->uid = cred.uid;
	u->gid = cred.gid;
#ifdef SO_PEERGROUPS
	gl = sizeof(u->groups);
	if (getsockopt(sock, SOL_SOCKET, SO_PEERGROUPS, u->groups, &gl) == 0) {
		u->ngroups = (int)(gl / sizeof(gid_t));
		return 0;
	}
#else
	(void)gl;
#endif
	/* An older kernel, or more groups than room: passwd's. */
	return safepath_user_of(cred.uid, cred.gid, u);
}

int safepath_normalize(const char *path, char *out, size_t len)
{
	char cwd[PATH_MAX];
	const char *parts[2] = { NULL, path };
	size_t o = 0;

	if (!path || !*path)
		return -ENOENT;
	if (len < 2)
		return -ENAMETOOLONG;
	if (path[0] != '/') {
		if (!getcwd(cwd, sizeof(cwd)))
			return -errno;
		parts[0] = cwd;
	}
	for (int i = 0; i < 2; i++) {
		const char *p = parts[i];

		while (p && *p) {
			size_t n;

			while (*p == '/')
				p++;
			n = strcspn(p, "/");
			if (n == 0 || (n == 1 && p[0] == '.')) {
				p += n;
				continue;
			}
			if (n == 2 && p[0] == '.' && p[1] == '.') {
				while (o > 0 && out[o - 1] != '/')
					o--;
				if (o > 0)
					o--;
			} else {
				if (o + 1 + n + 1 > len)
					return -ENAMETOOLONG;
				out[o++] = '/';
				memcpy(out + o, p, n);
				o += n;
			}
			p += n;
		}
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return 0;
}

/*
 * Whether root may write below the directory st (shown as shown, part of
 * path): it belongs to root or to the invoker, and nobody else may write
 * in it (group root aside) unless it is sticky.
 */
static int dir_ok(const struct stat *st, const char *shown, const char *path,
		  uid_t inv, char *msg, size_t len)
{
	mode_t m = st->st_mode;

	if (!S_ISDIR(m))
		return say(msg, len, -ENOTDIR, "%s: %s is not a directory",
			   path, shown);
	if (st->st_uid != 0 && st->st_uid != inv)
		return say(msg, len, -EPERM,
			   "%s: %s belongs to uid %u (neither root nor uid %u, "
			   "who runs this): not writing there as root",
			   path, shown, (unsigned)st->st_uid, (unsigned)inv);
	if (((m & S_IWOTH) || ((m & S_IWGRP) && st->st_gid != 0)) &&
	    !(m & S_ISVTX))
		return say(msg, len, -EPERM,
			   "%s: %s is writable by others (mode %04o) and not "
			   "sticky: not writing there as root",
			   path, shown, (unsigned)(m & 07777));
	return 0;
}

/*
 * Walks abs (normalized) from "/", every component a directory held open
 * O_PATH|O_NOFOLLOW and checked: the last one's descriptor, or -errno
 * with msg naming path (what the caller was given) and the component.
 */
static int walk(const char *abs, const char *path, char *msg, size_t len)
{
	char shown[PATH_MAX];
	uid_t inv = safepath_invoker();
	const char *p = abs;
	struct stat st;
	size_t o = 0;
	int fd, rc;

	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return say(msg, len, -errno, "%s: /: %s", path,
			   strerror(errno));
	if (fstat(fd, &st) < 0) {
		rc = say(msg, len, -errno, "%s: /: %s", path, strerror(errno));
		goto out_close;
	}
	rc = dir_ok(&st, "/", path, inv, msg, len);
	if (rc)
		goto out_close;
	for (;;) {
		size_t n;
		char name[NAME_MAX + 1];
		int nfd, e;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (n == 0)
			return fd;
		if (n > NAME_MAX || o + 1 + n + 1 > sizeof(shown)) {
			rc = say(msg, len, -ENAMETOOLONG, "%s: %s", path,
				 strerror(ENAMETOOLONG));
			goto out_close;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		shown[o++] = '/';
		memcpy(shown + o, name, n + 1);
		o += n;
		p += n;
		nfd = openat(fd, name,
			     O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0) {
			e = errno;
			if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISLNK(st.st_mode))
				rc = say(msg, len, -ELOOP,
					 "%s: %s is a symbolic link: not "
					 "followed as root (name the directory "
					 "it points to)",
					 path, shown);
			else
				rc = say(msg, len, -e, "%s: %s: %s", path,
					 shown,
					 e == ENOTDIR ? "not a directory" :
							strerror(e));
			goto out_close;
		}
		close(fd);
		fd = nfd;
		if (fstat(fd, &st) < 0) {
			rc = say(msg, len, -errno, "%s: %s: %s", path, shown,
				 strerror(errno));
			goto out_close;
		}
		rc = dir_ok(&st, shown, path, inv, msg, len);
		if (rc)
			goto out_close;
	}

out_close:
	close(fd);
	return rc;
}

int safepath_dir(const char *path, char *msg, size_t len)
{
	char abs[PATH_MAX];
	int rc, fd;

	if (geteuid() != 0) {
		fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		return fd >= 0 ? fd :
				 say(msg, len, -errno, "%s: %s", path,
				     strerror(errno));
	}
	rc = safepath_normalize(path, abs, sizeof(abs));
	if (rc)
		return say(msg, len, rc, "%s: %s", path, strerror(-rc));
	return walk(abs, path, msg, len);
}

/*
 * name in the directory dfd (or a path, with AT_FDCWD) opened with flags,
 * never through a link at its last component: made with O_EXCL when
 * O_CREAT asks, else the existing file opened without O_CREAT and
 * O_NONBLOCK (a FIFO does not hold the caller), not truncated yet.  *made
 * says which.  Only system calls: the child of open_child() runs it.
 * Returns the descriptor or -errno.
 */
static int open_in(int dfd, const char *name, int flags, mode_t mode,
		   bool *made)
{
	int base = (flags & ~O_TRUNC) | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY;

	/* A file removed between the two opens: try again, a few times. */
	for (int tries = 0; tries < 8; tries++) {
		int fd;

		if (flags & O_CREAT) {
			fd = openat(dfd, name, base | O_EXCL, mode);
			if (fd >= 0) {
				*made = true;
				return fd;
			}
			if (errno != EEXIST || (flags & O_EXCL))
				return -errno;
		}
		fd = openat(dfd, name,
			    (base & ~(O_CREAT | O_EXCL)) | O_NONBLOCK);
		if (fd >= 0) {
			*made = false;
			return fd;
		}
		if (errno != ENOENT || !(flags & O_CREAT))
			return -errno;
	}
	return -EAGAIN;
}

/*
 * The file fd just opened is one to write: a regular file, and when it
 * was not made now, with one link and owned by root, the invoker or uid.
 * Then truncated if flags ask, and blocking unless they ask otherwise.
 * 0 or -errno with msg; fd is closed on failure.
 */
static int file_ok(int fd, bool made, int flags, uid_t uid, bool root,
		   const char *path, char *msg, size_t len)
{
	struct stat st;
	int rc;

	if (fstat(fd, &st) < 0) {
		rc = say(msg, len, -errno, "%s: %s", path, strerror(errno));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = say(msg, len, -EINVAL, "%s: not a regular file", path);
		goto out_close;
	}
	if (root && !made && st.st_nlink != 1) {
		rc = say(msg, len, -EMLINK,
			 "%s: has %u hard links (one may be to another "
			 "file of root's): not writing to it as root",
			 path, (unsigned)st.st_nlink);
		goto out_close;
	}
	if (root && !made && st.st_uid != 0 && st.st_uid != uid &&
	    st.st_uid != safepath_invoker()) {
		rc = say(msg, len, -EPERM,
			 "%s: belongs to uid %u: not writing to it as root",
			 path, (unsigned)st.st_uid);
		goto out_close;
	}
	if ((flags & O_TRUNC) && ftruncate(fd, 0) < 0) {
		rc = say(msg, len, -errno, "%s: %s", path, strerror(errno));
		goto out_close;
	}
	if (!(flags & O_NONBLOCK)) {
		int fl = fcntl(fd, F_GETFL);

		if (fl >= 0)
			(void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	}
	return 0;

out_close:
	close(fd);
	return rc;
}

/* What the child of open_child() sends with the descriptor. */
struct child_said {
	int err; /* 0, or the errno of what failed */
	int made;
};

/* The child: u's credentials, then open_in(); only system calls. */
__attribute__((noreturn)) static void child_open(const struct safepath_user *u,
						 int dfd, const char *name,
						 int flags, mode_t mode,
						 int sock)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct child_said said = { 0, 0 };
	struct iovec iov = { &said, sizeof(said) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	bool made = false;
	int fd = -1;

	/*
	 * Nothing of root's stays open in a process that runs as the user
	 * but dfd, the socket and the standard streams, and the user may
	 * not trace it, dump it or open its /proc/PID/fd: it is made
	 * undumpable once its uid changed (a change of uid sets the flag
	 * from fs.suid_dumpable, which may be 1), and it never execs.
	 */
	if (dfd != AT_FDCWD) {
		if (dup2(dfd, 3) < 0)
			_exit(1);
		dfd = 3;
	}
	if (dup2(sock, 4) < 0)
		_exit(1);
	sock = 4;
	(void)syscall(SYS_close_range, 5, ~0u, 0);
	if (syscall(SYS_setgroups, (size_t)u->ngroups, u->groups) < 0 ||
	    syscall(SYS_setresgid, u->gid, u->gid, u->gid) < 0 ||
	    syscall(SYS_setresuid, u->uid, u->uid, u->uid) < 0 ||
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		said.err = errno;
	} else {
		fd = open_in(dfd, name, flags, mode, &made);
		if (fd < 0)
			said.err = -fd;
		said.made = made;
	}
	if (fd >= 0) {
		memset(&cm, 0, sizeof(cm));
		mh.msg_control = cm.buf;
		mh.msg_controllen = sizeof(cm.buf);
		cm.h.cmsg_level = SOL_SOCKET;
		cm.h.cmsg_type = SCM_RIGHTS;
		cm.h.cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(&cm.h), &fd, sizeof(int));
	}
	_exit(sendmsg(sock, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(said) ? 0 :
									  1);
}

/*
 * name in dfd (or the path name, with AT_FDCWD) opened by a child as u:
 * the descriptor, with *made, or -errno (the child's).
 */
static int open_child(const struct safepath_user *u, int dfd, const char *name,
		      int flags, mode_t mode, bool *made)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct child_said said = { EIO, 0 };
	struct iovec iov = { &said, sizeof(said) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cm.buf,
			     .msg_controllen = sizeof(cm.buf) };
	int sv[2], fd = -1, st;
	ssize_t n;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(sv[0]);
		close(sv[1]);
		return -e;
	}
	if (pid == 0)
		child_open(u, dfd, name, flags, mode, sv[1]);
	close(sv[1]);
	do
		n = recvmsg(sv[0], &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	close(sv[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (n == (ssize_t)sizeof(said)) {
		struct cmsghdr *h = CMSG_FIRSTHDR(&mh);

		if (h && h->cmsg_level == SOL_SOCKET &&
		    h->cmsg_type == SCM_RIGHTS &&
		    h->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&fd, CMSG_DATA(h), sizeof(int));
	}
	if (fd >= 0) {
		*made = said.made;
		return fd;
	}
	return -(said.err ? said.err : EIO);
}

/* Why an open failed, in words for msg. */
static const char *open_error(int e)
{
	return e == ELOOP ? "a symbolic link: not followed (name the file "
			    "itself)" :
	       e == ENXIO ? "not a regular file" :
			    strerror(e);
}

/* The last component of path: not empty, ".", or "..". */
static bool names_a_file(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return *b && strcmp(b, ".") != 0 && strcmp(b, "..") != 0;
}

int safepath_open(const char *path, int flags, mode_t mode, char *msg,
		  size_t len)
{
	char abs[PATH_MAX], *slash;
	struct safepath_user u;
	bool made = false;
	struct stat st;
	uid_t inv;
	int dfd, fd, rc;

	if (!names_a_file(path))
		return say(msg, len, -EISDIR,
			   "%s: names a directory, not a "
			   "file",
			   path);
	if (geteuid() != 0) {
		fd = open_in(AT_FDCWD, path, flags, mode, &made);
		if (fd < 0)
			return say(msg, len, fd, "%s: %s", path,
				   open_error(-fd));
		rc = file_ok(fd, made, flags, geteuid(), false, path, msg, len);
		return rc ? rc : fd;
	}
	rc = safepath_normalize(path, abs, sizeof(abs));
	if (rc)
		return say(msg, len, rc, "%s: %s", path, strerror(-rc));
	slash = strrchr(abs, '/');
	*slash = '\0';
	dfd = walk(abs[0] ? abs : "/", path, msg, len);
	if (dfd < 0)
		return dfd;
	inv = safepath_invoker();
	if (fstat(dfd, &st) < 0) {
		rc = say(msg, len, -errno, "%s: %s", path, strerror(errno));
		goto out_close;
	}
	if (st.st_uid != 0) {
		/* The invoker's directory: the invoker's rights decide. */
		rc = safepath_user_of(inv, invoker_gid(), &u);
		if (rc) {
			rc = say(msg, len, rc,
				 "%s: uid %u, who owns its directory, has no "
				 "passwd entry to write as",
				 path, (unsigned)inv);
			goto out_close;
		}
		fd = open_child(&u, dfd, slash + 1, flags, mode, &made);
	} else {
		fd = open_in(dfd, slash + 1, flags, mode, &made);
	}
	if (fd < 0) {
		rc = say(msg, len, fd, "%s: %s", path, open_error(-fd));
		goto out_close;
	}
	rc = file_ok(fd, made, flags, inv, true, path, msg, len);
	if (rc == 0)
		rc = fd;

out_close:
	close(dfd);
	return rc;
}

int safepath_open_as(const struct safepath_user *u, const char *path, int flags,
		     mode_t mode, char *msg, size_t len)
{
	bool made = false;
	int fd, rc;

	if (geteuid() == 0 && u->uid == 0)
		return safepath_open(path, flags, mode, msg, len);
	if (geteuid() != 0 && u->uid != geteuid())
		return say(msg, len, -EPERM,
			   "%s: only root opens a file as another user (uid "
			   "%u)",
			   path, (unsigned)u->uid);
	if (!names_a_file(path))
		return say(msg, len, -EISDIR,
			   "%s: names a directory, not a "
			   "file",
			   path);
	fd = geteuid() == 0 ?
		     open_child(u, AT_FDCWD, path, flags, mode, &made) :
		     open_in(AT_FDCWD, path, flags, mode, &made);
	if (fd < 0)
		return say(msg, len, fd, "%s: %s (as uid %u)", path,
			   open_error(-fd), (unsigned)u->uid);
	rc = file_ok(fd, made, flags, u->uid, geteuid() == 0, path, msg, len);
	return rc ? rc : fd;
}
