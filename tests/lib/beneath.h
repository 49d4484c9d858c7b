/*
 * An export read and changed by path, as root, without following what a
 * client of the server planted in it.  Anyone who speaks NFS to the server
 * may make symbolic links and hard links anywhere in an export (AUTH_SYS
 * lets a client say it is uid 0); root-run code that then opens
 * "EXPORT/dir/file" by path would follow a link to /etc/shadow, read it,
 * or truncate it.  Every path an export's reader opens is therefore
 * resolved beneath a descriptor of the export's root (or of a directory
 * in it): openat2(2) with RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS,
 * RESOLVE_NO_MAGICLINKS and RESOLVE_NO_XDEV, or, on a kernel without
 * openat2 (before 5.6), a walk of the components with O_NOFOLLOW that
 * refuses the same things.
 *
 * Every function returns 0 (or a descriptor) or a negative errno: -ELOOP
 * for a symbolic link met on the way or at the end, -EXDEV for a path
 * that leaves the directory ("..", an absolute path, another
 * filesystem), -EMLINK for a file that has other names (a hard link) where
 * the caller wants its own file.  beneath_strerror() says which in words.
 * Nothing here fails a test or prints: the callers name the path.
 */
#ifndef INTRFS_TEST_BENEATH_H
#define INTRFS_TEST_BENEATH_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

/*
 * The directory at path, trusted (a server's export as start-server made
 * it, an option root gave): O_PATH, followed as given.  A descriptor or
 * -errno.
 */
int beneath_root(const char *path);

/*
 * Opens rel (relative; "" or "." is dirfd itself) beneath dirfd with open
 * flags and mode (for O_CREAT).  A descriptor, or -errno.
 */
int beneath_open(int dirfd, const char *rel, int flags, mode_t mode);

/*
 * The same by the component walk beneath_open() falls back to where the
 * kernel has no openat2(2) (-ENOSYS): each directory opened O_PATH |
 * O_NOFOLLOW from the one before, the last one with O_NOFOLLOW.  For the
 * tests of both paths; callers use beneath_open().
 */
int beneath_open_walk(int dirfd, const char *rel, int flags, mode_t mode);

/* Whether beneath_open() uses the walk (set: for the tests). */
void beneath_force_walk(bool on);

/*
 * beneath_open() of a regular file that is the caller's own: -EMLINK when
 * it has other names too, -EISDIR for a directory, -ENOENT... as opening
 * says.  (A hard link can only name a file of the same filesystem; where
 * the export is a filesystem of its own that is another of its files, but
 * a tool that reads "its" file must not be handed someone else's.)
 */
int beneath_open_file(int dirfd, const char *rel, int flags, mode_t mode);

/*
 * The directory holding rel's last component (not "." nor "..": "d/."
 * is d), opened beneath dirfd (O_PATH | O_DIRECTORY), with that component
 * copied to last (len bytes); -EINVAL for a rel with none ("", ".").
 */
int beneath_parent(int dirfd, const char *rel, char *last, size_t len);

/* lstat(2) of rel beneath dirfd: nothing on the way followed either. */
int beneath_lstat(int dirfd, const char *rel, struct stat *st);
int beneath_mkdir(int dirfd, const char *rel, mode_t mode);
/* rel made (mode, O_EXCL) and its mode set to mode, whatever the umask. */
int beneath_mkdir_mode(int dirfd, const char *rel, mode_t mode);
int beneath_chmod(int dirfd, const char *rel, mode_t mode);
/* unlinkat(2) of rel beneath dirfd; flags 0 or AT_REMOVEDIR. */
int beneath_unlink(int dirfd, const char *rel, int flags);
int beneath_rename(int dirfd, const char *from, const char *to);
/*
 * rel and everything below it removed, never through a link: a symbolic
 * link is removed itself, a directory swapped for one meanwhile is left.
 * 0, or the first -errno met (it goes on past it).
 */
int beneath_remove_tree(int dirfd, const char *rel);

/* What -err says, in words for a report: "a symbolic link (not followed)". */
const char *beneath_strerror(int err);

#endif
