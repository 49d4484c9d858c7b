/*
 * safepath: how a program that may run as root opens a path somebody gave
 * it (a log, a trace, a JSON file), and how it opens one as another user.
 * Every intrfs program that writes a path given to it goes through here:
 * intrfsctl's trace file, the daemon's logfile= and trace=,
 * intrfs-scenario --json, netfault --log.  Private, never installed.
 *
 * As root (euid 0) every other local user is hostile, so a path is walked
 * from "/" one component at a time, each opened O_PATH|O_DIRECTORY|
 * O_NOFOLLOW relative to the one before and held: nothing changed after a
 * check reaches what was checked.  A symbolic link anywhere is refused,
 * not followed.  Each directory must belong to root or to the invoking
 * user (safepath_invoker()) and must not be writable by others unless it
 * is sticky: OpenSSH's safe-path rule.  In a directory of root's the file
 * is made with O_CREAT|O_EXCL|O_NOFOLLOW; an existing one is opened with
 * O_NOFOLLOW|O_NONBLOCK and must be a regular file with one link, owned by
 * root or the invoking user.  In a directory of the invoking user's (not
 * root) the file is opened by a child that has taken that user's uid, gid
 * and groups, so that the user's rights decide and not root's; the
 * descriptor comes back over a socketpair.
 *
 * As anyone else the kernel's permission checks already keep the caller to
 * its own rights: the file is opened as asked, never through a symbolic
 * link at its last component, and must be a regular file.
 *
 * Every refusal says which path, which component and why in msg, e.g.
 * "/tmp/ud/x: /tmp/ud belongs to uid 1000 (neither root nor uid 0, who
 * runs this): not writing there as root".  Functions return a descriptor
 * or -errno, never set errno for the caller, never change the caller's
 * credentials (only a child's), and may be called from a threaded
 * process: the child they fork makes only system calls until _exit().
 */
#ifndef INTRFS_SAFEPATH_H
#define INTRFS_SAFEPATH_H

#include <stddef.h>
#include <sys/types.h>

/* Room for a refusal: the path, the component and the reason. */
#define SAFEPATH_MSG_MAX 1024
/* Supplementary groups a child takes (NGROUPS_MAX is 65536). */
#define SAFEPATH_GROUPS_MAX 256

/* The credentials a file is opened with. */
struct safepath_user {
	uid_t uid;
	gid_t gid;
	int ngroups;
	gid_t groups[SAFEPATH_GROUPS_MAX];
};

/*
 * The user on whose behalf this runs: SUDO_UID when the real uid is root
 * and sudo set it, else the real uid.
 */
uid_t safepath_invoker(void);

/*
 * uid's credentials: gid (or, when gid is (gid_t)-1, the passwd entry's)
 * and the groups getgrouplist() gives.  0, or -ENOENT when uid has no
 * passwd entry and gid was not given (with gid, its groups are gid alone).
 */
int safepath_user_of(uid_t uid, gid_t gid, struct safepath_user *u);

/*
 * The credentials of the process at the other end of the Unix socket sock
 * (SO_PEERCRED, and SO_PEERGROUPS where the kernel has it): 0 or -errno.
 */
int safepath_peer(int sock, struct safepath_user *u);

/*
 * path made absolute (against the working directory) with "." and ".."
 * taken out by their names, into out: 0 or -errno.  The walk refuses
 * symbolic links, so for the paths it accepts this is the path itself.
 */
int safepath_normalize(const char *path, char *out, size_t len);

/*
 * The directory path, as an O_PATH descriptor, walked as above when root:
 * the descriptor or -errno with msg.
 */
int safepath_dir(const char *path, char *msg, size_t len);

/*
 * The file path opened with flags (O_WRONLY or O_RDWR, with O_CREAT,
 * O_APPEND, O_TRUNC, O_EXCL, O_NONBLOCK as asked; O_CLOEXEC, O_NOCTTY
 * and O_NOFOLLOW always) and mode, as described above: the descriptor or
 * -errno with msg.  O_TRUNC only truncates once the file was checked.
 */
int safepath_open(const char *path, int flags, mode_t mode, char *msg,
		  size_t len);

/*
 * path opened as u: by a child that has taken u's groups, gid and uid
 * when the caller is root and u is not, so that only u's rights decide
 * (a relative path is the caller's working directory's, if u may search
 * it).  The file must be a regular file, with one link unless it was made
 * now.  The descriptor or -errno with msg.  When the caller is root and u
 * is root too, safepath_open().
 */
int safepath_open_as(const struct safepath_user *u, const char *path, int flags,
		     mode_t mode, char *msg, size_t len);

#endif
