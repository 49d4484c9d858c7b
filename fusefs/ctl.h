/*
 * The control endpoint's address, shared by the daemon (control.c) and
 * intrfsctl (ctl_addr.c has the code): a Unix socket per mount, named
 * after the mount's device (major:minor), so that intrfsctl finds the
 * mount a path shows now, the top one of mounts stacked on one point, by
 * what the path resolves to and not by its text.  Root's mounts keep their
 * sockets in CTL_DIR (not the private directory of silly.c's journals:
 * anyone may connect, to be told whether they may ask); a user's mount
 * (fusermount) keeps its socket in that user's runtime directory,
 * /run/user/UID/intrfs-ctl, which root and that user reach.  A socket
 * whose daemon died (nobody listens) is replaced by the next mount that
 * gets the same device and removed by any mount that starts; the daemon
 * removes its own at unmount.
 *
 * The protocol: one request line ("tasks", "stats", "policy percall", each
 * with " table" appended for a table instead of JSON); "trace on FILE"
 * comes with FILE's descriptor (SCM_RIGHTS), opened by the caller: the
 * daemon never opens a path a client names.  The answer is "ok\n" or
 * "error\n" and then the text, and the daemon closes.
 */
#ifndef INTRFS_CTL_H
#define INTRFS_CTL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Root's mounts. */
#define CTL_DIR "/run/intrfs-ctl"
/* A user's mounts: inside that user's runtime directory. */
#define CTL_USER_RUNTIME "/run/user/%u"
#define CTL_USER_SUBDIR "intrfs-ctl"
/* Longest request line the daemon reads. */
#define CTL_LINE_MAX 512

/* One line of /proc/self/mountinfo. */
struct ctl_mount {
	unsigned major, minor;
	char point[PATH_MAX]; /* the mount point, unescaped */
	char fstype[64];
	/* A FUSE mount's user_id= (who mounted); (uid_t)-1 when not said. */
	uid_t owner;
};

/* The directory of the sockets of the mounts uid made. */
void ctl_dir(uid_t uid, char *buf, size_t len);
/* The socket of the mount of device major:minor that uid made. */
void ctl_path(uid_t uid, unsigned major, unsigned minor, char *buf, size_t len);
/*
 * The mount of device major:minor, from /proc/self/mountinfo: 0, or
 * -ENOENT when there is none (-errno when mountinfo cannot be read).
 */
int ctl_mount_of_dev(unsigned major, unsigned minor, struct ctl_mount *m);
/*
 * The last mount of type fstype on point (the one on top, when several are
 * stacked there): 0 or -ENOENT (-errno when mountinfo cannot be read).
 */
int ctl_mount_on(const char *point, const char *fstype, struct ctl_mount *m);

#endif
