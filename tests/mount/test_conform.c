/*
 * Conformance: the behaviours independent POSIX and NFS suites check, one
 * table row each, every outcome checked on the export directory itself
 * (bytes, modes, owners, names).  Truncating opens; files unlinked or
 * renamed over while open (silly rename) and their cleanup, also after the
 * daemon dies; permission checks a cached entry must not skip, as a user
 * that is not root on an allow_other mount; setuid/setgid cleared by a
 * write of someone else; times NFSv3 cannot carry.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long a release (asynchronous in FUSE) may take to remove a name. */
#define RELEASE_MS 3000

/* Truncating opens. */

static int open_wronly_trunc(const char *path)
{
	return open(path, O_WRONLY | O_TRUNC);
}

static int open_rdwr_trunc(const char *path)
{
	return open(path, O_RDWR | O_TRUNC);
}

static int open_creat_trunc(const char *path)
{
	return open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
}

static int do_creat(const char *path)
{
	return creat(path, 0644);
}

TEST_IMPL(conform_truncating_open)
{
	static const struct {
		const char *how;
		int (*open)(const char *path); /* NULL: the shell's > */
	} cases[] = {
		{ "open(O_WRONLY|O_TRUNC)", open_wronly_trunc },
		{ "open(O_RDWR|O_TRUNC)", open_rdwr_trunc },
		{ "open(O_WRONLY|O_CREAT|O_TRUNC)", open_creat_trunc },
		{ "creat()", do_creat },
		{ "the shell's >", NULL },
	};
	static const char longer[] = "longer text here\n";
	struct mnt m;
	struct test_server s;

	srv_get(&s);
	/* Attribute caching on: the open must truncate, not the cache. */
	mnt_start(&m, &s, "");
	for (unsigned i = 0; i < ARRAY_SIZE(cases); i++) {
		char name[16], cmd[1024];
		int fd;

		snprintf(name, sizeof(name), "t%u", i);
		write_file(mpath(&m, name), longer, sizeof(longer) - 1);
		if (cases[i].open) {
			fd = cases[i].open(mpath(&m, name));
			if (fd < 0)
				TEST__FAIL("%s: %s", cases[i].how,
					   strerror(errno));
			ASSERT_EQ(write(fd, "x\n", 2), 2);
			ASSERT_EQ(close(fd), 0);
		} else {
			snprintf(cmd, sizeof(cmd), "printf 'x\\n' > %s",
				 mpath(&m, name));
			ASSERT_EQ(system(cmd), 0);
		}
		fprintf(stderr, "# %s\n", cases[i].how);
		assert_same_bytes(lpath(&m, name), "x\n", 2);
		assert_same_bytes(mpath(&m, name), "x\n", 2);
	}
	/* O_RDONLY|O_TRUNC truncates too, as on Linux. */
	write_file(mpath(&m, "ro"), longer, sizeof(longer) - 1);
	{
		int fd = open(mpath(&m, "ro"), O_RDONLY | O_TRUNC);

		ASSERT_GE(fd, 0);
		ASSERT_EQ(close(fd), 0);
		assert_same_bytes(lpath(&m, "ro"), "", 0);
	}
	mnt_stop(&m);
	return 0;
}

/* Silly rename. */

/* The .nfs* names in a directory of the export; the first in name. */
static unsigned silly_names(const char *dir, char *name, size_t len)
{
	struct dirent *de;
	unsigned n = 0;
	DIR *d = path_opendir(dir);

	if (!d)
		TEST__FAIL("opendir %s: %s", dir, path_strerror(errno));
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, ".nfs", 4) != 0)
			continue;
		if (n++ == 0 && name)
			snprintf(name, len, "%s", de->d_name);
	}
	closedir(d);
	return n;
}

/* Waits until dir holds no .nfs* name (the release is asynchronous). */
static void assert_no_silly(const char *dir)
{
	uint64_t end = region_now_ns() + RELEASE_MS * 1000000ull;

	while (silly_names(dir, NULL, 0)) {
		if (region_now_ns() > end)
			TEST__FAIL("a .nfs* name is still in %s %d ms after "
				   "the last close",
				   dir, RELEASE_MS);
		test_sleep_ms(10);
	}
}

enum gone_how { UNLINKED, RENAMED_OVER };
enum fd_op { OP_READ, OP_WRITE, OP_FSTAT, OP_FTRUNCATE };

static const char original[] = "original content";

/* Does op on fd, the file having held `original`; checks what it did. */
static void fd_op_check(enum fd_op op, int fd, const char *silly_path)
{
	char buf[64] = "";
	struct stat st;

	switch (op) {
	case OP_READ:
		ASSERT_EQ(pread(fd, buf, sizeof(buf), 0),
			  (ssize_t)sizeof(original) - 1);
		ASSERT_MEM_EQ(buf, original, sizeof(original) - 1);
		break;
	case OP_WRITE:
		ASSERT_EQ(pwrite(fd, "NEW", 3, 0), 3);
		ASSERT_EQ(fsync(fd), 0);
		{
			char *got;

			ASSERT_EQ(read_file(silly_path, &got),
				  (ssize_t)sizeof(original) - 1);
			ASSERT_MEM_EQ(got, "NEWginal", 8);
			free(got);
		}
		break;
	case OP_FSTAT:
		ASSERT_EQ(fstat(fd, &st), 0);
		ASSERT_EQ(st.st_size, (off_t)sizeof(original) - 1);
		/* No name left but the hidden one: no link, as locally. */
		ASSERT_EQ(st.st_nlink, 0);
		break;
	case OP_FTRUNCATE:
		ASSERT_EQ(ftruncate(fd, 4), 0);
		lstat_ok(silly_path, &st);
		ASSERT_EQ(st.st_size, 4);
		break;
	}
}

TEST_IMPL(conform_unlinked_while_open)
{
	static const struct {
		enum gone_how how;
		enum fd_op op;
		const char *what;
	} cases[] = {
		{ UNLINKED, OP_READ, "unlink, then read" },
		{ UNLINKED, OP_WRITE, "unlink, then write" },
		{ UNLINKED, OP_FSTAT, "unlink, then fstat" },
		{ UNLINKED, OP_FTRUNCATE, "unlink, then ftruncate" },
		{ RENAMED_OVER, OP_READ, "rename over, then read" },
		{ RENAMED_OVER, OP_WRITE, "rename over, then write" },
		{ RENAMED_OVER, OP_FSTAT, "rename over, then fstat" },
		{ RENAMED_OVER, OP_FTRUNCATE, "rename over, then ftruncate" },
	};
	struct mnt m;
	struct test_server s;

	srv_get(&s);
	mnt_start(&m, &s, "");
	for (unsigned i = 0; i < ARRAY_SIZE(cases); i++) {
		char silly[256], spath[800], dir[16], f[32], g[32];
		struct stat st;
		int fd;

		fprintf(stderr, "# %s\n", cases[i].what);
		snprintf(dir, sizeof(dir), "d%u", i);
		snprintf(f, sizeof(f), "%s/f", dir);
		snprintf(g, sizeof(g), "%s/g", dir);
		ASSERT_EQ(mkdir(mpath(&m, dir), 0755), 0);
		write_file(mpath(&m, f), original, sizeof(original) - 1);
		fd = open(mpath(&m, f), O_RDWR);
		ASSERT_GE(fd, 0);
		if (cases[i].how == UNLINKED) {
			ASSERT_EQ(unlink(mpath(&m, f)), 0);
			ASSERT_EQ(path_lstat(lpath(&m, f), &st), -1);
			ASSERT_EQ(lstat(mpath(&m, f), &st), -1);
			ASSERT_EQ(errno, ENOENT);
		} else {
			write_file(mpath(&m, g), "replacement", 11);
			ASSERT_EQ(rename(mpath(&m, g), mpath(&m, f)), 0);
			assert_same_bytes(lpath(&m, f), "replacement", 11);
			assert_same_bytes(mpath(&m, f), "replacement", 11);
		}
		/* The data lives on under one hidden name, seen by readdir. */
		ASSERT_EQ(silly_names(lpath(&m, dir), silly, sizeof(silly)), 1);
		ASSERT_EQ(silly_names(mpath(&m, dir), NULL, 0), 1);
		snprintf(spath, sizeof(spath), "%s/%s", lpath(&m, dir), silly);
		fd_op_check(cases[i].op, fd, spath);
		ASSERT_EQ(close(fd), 0);
		assert_no_silly(lpath(&m, dir));
		if (cases[i].how == RENAMED_OVER)
			assert_same_bytes(lpath(&m, f), "replacement", 11);
	}
	mnt_stop(&m);
	return 0;
}

/* Makes name, opens it, unlinks it: one hidden name; returns the fd. */
static int open_unlinked(const struct mnt *m, const char *name)
{
	int fd;

	write_file(mpath(m, name), original, sizeof(original) - 1);
	fd = open(mpath(m, name), O_RDONLY);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(unlink(mpath(m, name)), 0);
	ASSERT_EQ(silly_names(lpath(m, ""), NULL, 0), 1);
	return fd;
}

/* Unlinking the hidden name of a file still open is refused, as on Linux. */
TEST_IMPL(conform_silly_name_busy)
{
	char silly[256], path[800];
	struct mnt m;
	struct test_server s;
	int fd;

	srv_get(&s);
	mnt_start(&m, &s, "");
	fd = open_unlinked(&m, "f");
	ASSERT_EQ(silly_names(lpath(&m, ""), silly, sizeof(silly)), 1);
	snprintf(path, sizeof(path), "%s/%s", m.dir, silly);
	ASSERT_EQ(unlink(path), -1);
	ASSERT_EQ(errno, EBUSY);
	/* rmdir of its directory: not empty, as on Linux. */
	ASSERT_EQ(mkdir(mpath(&m, "d"), 0755), 0);
	write_file(mpath(&m, "d/x"), "x", 1);
	{
		int fd2 = open(mpath(&m, "d/x"), O_RDONLY);

		ASSERT_GE(fd2, 0);
		ASSERT_EQ(unlink(mpath(&m, "d/x")), 0);
		ASSERT_EQ(rmdir(mpath(&m, "d")), -1);
		ASSERT_EQ(errno, ENOTEMPTY);
		ASSERT_EQ(close(fd2), 0);
	}
	assert_no_silly(lpath(&m, "d"));
	ASSERT_EQ(rmdir(mpath(&m, "d")), 0);
	ASSERT_EQ(close(fd), 0);
	assert_no_silly(lpath(&m, ""));
	mnt_stop(&m);
	return 0;
}

/*
 * A daemon killed with files unlinked while open leaves their hidden
 * names; the next mount of the server removes them and says so.
 */
TEST_IMPL(conform_silly_after_daemon_death)
{
	char log[8192], dead_dir[512];
	struct mnt m, m2;
	struct test_server s;
	int fd, status;

	srv_get(&s);
	mnt_start(&m, &s, "");
	fd = open_unlinked(&m, "f");
	snprintf(dead_dir, sizeof(dead_dir), "%s", m.local);
	ASSERT_EQ(kill(m.pid, SIGKILL), 0);
	ASSERT_EQ(waitpid(m.pid, &status, 0), m.pid);
	m.pid = 0;
	close(fd); /* ENOTCONN: the daemon is gone */
	umount2(m.dir, MNT_DETACH);
	mnt_stop(&m);
	ASSERT_EQ(silly_names(dead_dir, NULL, 0), 1);

	mnt_start(&m2, &s, "");
	ASSERT_EQ(silly_names(dead_dir, NULL, 0), 0);
	mnt_read_log(&m2, log, sizeof(log));
	ASSERT_CONTAINS(log, "removed 1 hidden file");
	mnt_stop(&m2);
	return 0;
}

/*
 * A daemon of s killed with a file unlinked while open: its hidden name
 * is left in the directory, *dir (its path on the export).
 */
static void leave_hidden(const struct test_server *s, char *dir, size_t len)
{
	struct mnt m;
	int fd, status;

	mnt_start(&m, s, "");
	fd = open_unlinked(&m, "f");
	snprintf(dir, len, "%s", m.local);
	ASSERT_EQ(kill(m.pid, SIGKILL), 0);
	ASSERT_EQ(waitpid(m.pid, &status, 0), m.pid);
	m.pid = 0;
	close(fd); /* ENOTCONN: the daemon is gone */
	umount2(m.dir, MNT_DETACH);
	mnt_stop(&m);
	ASSERT_EQ(silly_names(dir, NULL, 0), 1);
}

/*
 * Two servers on one host, each left a hidden name by a daemon that died:
 * the next mount of each removes its own, whichever comes first.  Each
 * server exports a filesystem of its own (start-server's), so that a
 * handle of one means nothing to the other (ESTALE): a shared journal
 * would have the first mount drop the other's line.
 */
TEST_IMPL(conform_silly_two_servers)
{
	char dir_a[512], dir_b[512];
	struct test_server a, b;
	struct mnt m;

	srv_get(&a);
	spare_start(&b);
	leave_hidden(&a, dir_a, sizeof(dir_a));
	leave_hidden(&b, dir_b, sizeof(dir_b));
	mnt_start(&m, &a, "");
	ASSERT_EQ(silly_names(dir_a, NULL, 0), 0);
	mnt_stop(&m);
	mnt_start(&m, &b, "");
	ASSERT_EQ(silly_names(dir_b, NULL, 0), 0);
	mnt_stop(&m);
	spare_stop(&b);
	return 0;
}

/*
 * A hidden name whose removal at the last close fails is logged, kept, and
 * removed at unmount.  The user who unlinked the file removes its hidden
 * name; here it may not write the directory any more when it closes it.
 */
TEST_IMPL(conform_silly_removed_at_unmount)
{
	int to_child[2], from_child[2];
	char dir[512], c;
	struct mnt m;
	struct test_server s;
	pid_t pid;

	srv_get(&s);
	mnt_start(&m, &s, "allow_other");
	ASSERT_EQ(mkdir(mpath(&m, "d"), 0777), 0);
	ASSERT_EQ(chmod(mpath(&m, "d"), 0777), 0);
	ASSERT_EQ(pipe(to_child), 0);
	ASSERT_EQ(pipe(from_child), 0);
	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		const gid_t g = USER_GID;
		int fd;

		signal(SIGABRT, SIG_DFL);
		if (setgroups(1, &g) < 0 || setgid(USER_GID) < 0 ||
		    setuid(USER_UID) < 0)
			_exit(2);
		write_file(mpath(&m, "d/f"), original, sizeof(original) - 1);
		fd = open(mpath(&m, "d/f"), O_RDONLY);
		if (fd < 0 || unlink(mpath(&m, "d/f")) < 0)
			_exit(3);
		/* Unlinked while open; close when told. */
		if (write(from_child[1], "u", 1) != 1 ||
		    read(to_child[0], &c, 1) != 1)
			_exit(4);
		_exit(close(fd) < 0 ? 5 : 0);
	}
	ASSERT_EQ(read(from_child[0], &c, 1), 1);
	ASSERT_EQ(silly_names(lpath(&m, "d"), NULL, 0), 1);
	/* The user may not write the directory now: its removal fails. */
	ASSERT_EQ(chmod(mpath(&m, "d"), 0755), 0);
	ASSERT_EQ(write(to_child[1], "c", 1), 1);
	{
		int st;

		ASSERT_EQ(waitpid(pid, &st, 0), pid);
		ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	mnt_wait_log(&m, "could not remove .nfs", 5000);
	ASSERT_EQ(silly_names(lpath(&m, "d"), NULL, 0), 1);
	/* It may again: the unmount removes it. */
	ASSERT_EQ(chmod(mpath(&m, "d"), 0777), 0);
	snprintf(dir, sizeof(dir), "%s", lpath(&m, "d"));
	mnt_stop(&m);
	ASSERT_EQ(silly_names(dir, NULL, 0), 0);
	close(to_child[0]);
	close(to_child[1]);
	close(from_child[0]);
	close(from_child[1]);
	return 0;
}

/* Permissions, as a user that is not root on an allow_other mount. */

static const gid_t user_groups[] = { USER_GID };

#define AS_USER(fn, path) as_user(USER_UID, USER_GID, user_groups, 1, fn, path)

static int try_chmod(const char *path)
{
	return chmod(path, 0600) < 0 ? errno : 0;
}

static int try_chown(const char *path)
{
	return chown(path, USER_UID, USER_GID) < 0 ? errno : 0;
}

static int try_truncate(const char *path)
{
	return truncate(path, 0) < 0 ? errno : 0;
}

static int try_open_read(const char *path)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static int try_open_trunc(const char *path)
{
	int fd = open(path, O_RDONLY | O_TRUNC);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static int try_stat(const char *path)
{
	struct stat st;

	return stat(path, &st) < 0 ? errno : 0;
}

/* Links path to "link-made" beside its directory. */
static int try_link(const char *path)
{
	char to[800], *slash;

	snprintf(to, sizeof(to), "%s", path);
	slash = strrchr(to, '/');
	*slash = '\0';
	slash = strrchr(to, '/');
	snprintf(slash + 1, sizeof(to) - (size_t)(slash + 1 - to), "link-made");
	return link(path, to) < 0 ? errno : 0;
}

static int try_opendir(const char *path)
{
	DIR *d = opendir(path);

	if (!d)
		return errno;
	closedir(d);
	return 0;
}

struct perm_case {
	const char *what;
	int (*op)(const char *path);
	const char *path; /* relative to the mount */
	int want; /* errno the user gets; 0: success */
};

/*
 * The tree every row starts from, made by root through the mount and
 * looked up by root first, so that the kernel has the entries cached:
 *   locked/     0700  (root's: no search for the user)
 *   locked/f    0666  "data"
 *   noread/     0311  (search, no read)
 *   mine        0444  the user's own, read-only
 */
static void perm_tree(const struct mnt *m)
{
	struct stat st;

	ASSERT_EQ(mkdir(mpath(m, "locked"), 0755), 0);
	write_file(mpath(m, "locked/f"), "data", 4);
	ASSERT_EQ(chmod(mpath(m, "locked/f"), 0666), 0);
	ASSERT_EQ(chmod(mpath(m, "locked"), 0700), 0);
	ASSERT_EQ(mkdir(mpath(m, "noread"), 0755), 0);
	ASSERT_EQ(chmod(mpath(m, "noread"), 0311), 0);
	write_file(mpath(m, "mine"), "mine", 4);
	ASSERT_EQ(chown(mpath(m, "mine"), USER_UID, USER_GID), 0);
	ASSERT_EQ(chmod(mpath(m, "mine"), 0444), 0);
	/* Cached by root's walks. */
	lstat_ok(mpath(m, "locked/f"), &st);
	lstat_ok(mpath(m, "mine"), &st);
}

/* Nothing a refused row tried shows on the export. */
static void assert_tree_unchanged(const struct mnt *m)
{
	struct stat st;

	lstat_ok(lpath(m, "locked/f"), &st);
	ASSERT_EQ(st.st_mode & 07777, 0666);
	ASSERT_EQ(st.st_uid, 0);
	ASSERT_EQ(st.st_nlink, 1);
	assert_same_bytes(lpath(m, "locked/f"), "data", 4);
	lstat_ok(lpath(m, "mine"), &st);
	ASSERT_EQ(st.st_mode & 07777, 0444);
	assert_same_bytes(lpath(m, "mine"), "mine", 4);
	ASSERT_EQ(path_lstat(lpath(m, "link-made"), &st), -1);
}

TEST_IMPL(conform_permissions)
{
	static const struct perm_case cases[] = {
		{ "chmod below a dir without search", try_chmod, "locked/f",
		  EACCES },
		{ "chown below a dir without search", try_chown, "locked/f",
		  EACCES },
		{ "truncate below a dir without search", try_truncate,
		  "locked/f", EACCES },
		{ "open below a dir without search", try_open_read, "locked/f",
		  EACCES },
		{ "stat below a dir without search", try_stat, "locked/f",
		  EACCES },
		{ "link from below a dir without search", try_link, "locked/f",
		  EACCES },
		{ "opendir without read", try_opendir, "noread", EACCES },
		{ "truncate(2) of one's own 0444 file", try_truncate, "mine",
		  EACCES },
		{ "O_RDONLY|O_TRUNC of one's own 0444 file", try_open_trunc,
		  "mine", EACCES },
		/* What the user may do still works. */
		{ "open one's own 0444 file for reading", try_open_read, "mine",
		  0 },
		{ "stat one's own file", try_stat, "mine", 0 },
	};
	struct mnt m;
	struct test_server s;

	srv_get(&s);
	/* Attribute and entry caching on: that is what is tested. */
	mnt_start(&m, &s, "allow_other");
	perm_tree(&m);
	for (unsigned i = 0; i < ARRAY_SIZE(cases); i++) {
		int got = AS_USER(cases[i].op, mpath(&m, cases[i].path));

		if (got != cases[i].want)
			TEST__FAIL("%s: the user got %s, not %s", cases[i].what,
				   got ? strerror(got) : "success",
				   cases[i].want ? strerror(cases[i].want) :
						   "success");
		assert_tree_unchanged(&m);
	}
	mnt_stop(&m);
	return 0;
}

/*
 * A directory the user has searched, and whose entries the kernel has
 * cached for the user, stops being searchable: the entries go at once.
 */
TEST_IMPL(conform_permissions_revoked)
{
	struct mnt m;
	struct test_server s;

	srv_get(&s);
	mnt_start(&m, &s, "allow_other");
	ASSERT_EQ(mkdir(mpath(&m, "d"), 0755), 0);
	ASSERT_EQ(mkdir(mpath(&m, "d/sub"), 0755), 0);
	write_file(mpath(&m, "d/sub/f"), "data", 4);
	ASSERT_EQ(chmod(mpath(&m, "d/sub/f"), 0666), 0);
	ASSERT_EQ(AS_USER(try_open_read, mpath(&m, "d/sub/f")), 0);
	ASSERT_EQ(chmod(mpath(&m, "d"), 0700), 0);
	ASSERT_EQ(AS_USER(try_open_read, mpath(&m, "d/sub/f")), EACCES);
	ASSERT_EQ(AS_USER(try_chmod, mpath(&m, "d/sub/f")), EACCES);
	ASSERT_EQ(chmod(mpath(&m, "d"), 0755), 0);
	ASSERT_EQ(AS_USER(try_open_read, mpath(&m, "d/sub/f")), 0);
	/* The root of the mount too. */
	ASSERT_EQ(chmod(mpath(&m, ""), 0700), 0);
	ASSERT_EQ(AS_USER(try_open_read, mpath(&m, "d/sub/f")), EACCES);
	ASSERT_EQ(chmod(mpath(&m, ""), 0777), 0);
	mnt_stop(&m);
	return 0;
}

/* setuid and setgid. */

static int append_data(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND);

	if (fd < 0)
		return errno;
	if (write(fd, "more", 4) != 4)
		return errno;
	return close(fd) < 0 ? errno : 0;
}

static int truncating_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_TRUNC);

	if (fd < 0)
		return errno;
	return close(fd) < 0 ? errno : 0;
}

static int chmod_strip(const char *path)
{
	return chmod(path, 0777) < 0 ? errno : 0;
}

/*
 * Each row is run twice as the user: on a local file (the reference) and
 * on one through the mount;
 * the errno, the mode and the size must be the same.  Which bits a write
 * clears depends on the kernel (setgid without group x too, since 6.2).
 */
TEST_IMPL(conform_setuid_write)
{
	static const struct {
		const char *what;
		int (*op)(const char *path);
		mode_t mode;
	} cases[] = {
		{ "write to a setuid+setgid file", append_data, 06777 },
		{ "write to a setuid file", append_data, 04777 },
		{ "write to a setgid file", append_data, 02777 },
		{ "write to a setgid file without group x", append_data,
		  02666 },
		{ "O_TRUNC open of a setuid+setgid file", truncating_open,
		  06777 },
		{ "truncate(2) of a setuid file", try_truncate, 04777 },
		/* Only the kernel's clearing is done for the user. */
		{ "chmod of someone else's setuid file", chmod_strip, 06777 },
	};
	/* The reference files: where the user can reach them locally. */
	char refdir[] = "/tmp/intrfs-test-ref.XXXXXX";
	struct mnt m;
	struct test_server s;

	srv_get(&s);
	ASSERT_NOT_NULL(mkdtemp(refdir));
	ASSERT_EQ(chmod(refdir, 0755), 0);
	mnt_start(&m, &s, "allow_other");
	for (unsigned i = 0; i < ARRAY_SIZE(cases); i++) {
		char name[16], ref[sizeof(refdir) + 16];
		struct stat st, want;
		int got, local;

		snprintf(name, sizeof(name), "su%u", i);
		snprintf(ref, sizeof(ref), "%s/ref%u", refdir, i);
		write_file(ref, "ab", 2);
		ASSERT_EQ(chmod(ref, cases[i].mode), 0);
		local = AS_USER(cases[i].op, ref);
		lstat_ok(ref, &want);
		unlink(ref);

		write_file(mpath(&m, name), "ab", 2);
		ASSERT_EQ(chmod(mpath(&m, name), cases[i].mode), 0);
		got = AS_USER(cases[i].op, mpath(&m, name));
		if (got != local)
			TEST__FAIL("%s: the user got %s, locally %s",
				   cases[i].what,
				   got ? strerror(got) : "success",
				   local ? strerror(local) : "success");
		lstat_ok(lpath(&m, name), &st);
		if ((st.st_mode & 07777) != (want.st_mode & 07777))
			TEST__FAIL("%s: mode %04o on the server, %04o locally",
				   cases[i].what, st.st_mode & 07777,
				   want.st_mode & 07777);
		ASSERT_EQ(st.st_size, want.st_size);
		ASSERT_EQ(st.st_uid, 0);
		lstat_ok(mpath(&m, name), &st);
		ASSERT_EQ(st.st_mode & 07777, want.st_mode & 07777);
	}
	rmdir(refdir);
	mnt_stop(&m);
	return 0;
}

/* Times: NFSv3 seconds are unsigned 32-bit. */
TEST_IMPL(conform_time_range)
{
	static const struct {
		time_t sec;
		int want; /* errno; 0: stored as given */
	} cases[] = {
		{ 0xffffffffll, 0 },
		{ 0x100000000ll, EOVERFLOW },
		{ 0x17fffffffll, EOVERFLOW },
		{ -1, EOVERFLOW },
		{ 1, 0 },
	};
	struct mnt m;
	struct test_server s;

	mnt_fresh(&m, &s, "");
	write_file(mpath(&m, "f"), "t", 1);
	for (unsigned i = 0; i < ARRAY_SIZE(cases); i++) {
		struct timespec ts[2] = { { cases[i].sec, 0 },
					  { cases[i].sec, 0 } };
		struct timespec keep[2] = { { 1000000000, 0 },
					    { 1000000000, 0 } };
		struct stat st;
		int rc, err;

		ASSERT_EQ(path_utimens(lpath(&m, "f"), keep), 0);
		rc = utimensat(AT_FDCWD, mpath(&m, "f"), ts, 0);
		err = errno;
		lstat_ok(lpath(&m, "f"), &st);
		if (cases[i].want) {
			ASSERT_EQ(rc, -1);
			ASSERT_EQ(err, cases[i].want);
			ASSERT_EQ(st.st_mtim.tv_sec, 1000000000);
		} else {
			ASSERT_EQ(rc, 0);
			ASSERT_EQ(st.st_mtim.tv_sec, cases[i].sec);
		}
	}
	mnt_stop(&m);
	return 0;
}

/*
 * What the tests check on the export by path (lpath(), the file helpers)
 * is read beneath its root: links a client put there over NFS (here,
 * through a mount) are not followed, to a file of root's outside the
 * export, to a file inside it, or on the way to one; nothing they point
 * at is read, made or changed, and the links themselves can be looked at.
 */
TEST_IMPL(conform_export_links_not_followed)
{
	char dir[] = "/tmp/intrfs-test-secret.XXXXXX", secret[64], buf[80];
	struct test_server s;
	struct stat st;
	struct mnt m;
	char *got;
	ssize_t n;
	int fd;

	srv_get(&s);
	ASSERT_NOT_NULL(mkdtemp(dir));
	snprintf(secret, sizeof(secret), "%s/secret", dir);
	fd = open(secret, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(write(fd, "root's", 6), 6);
	close(fd);
	mnt_start(&m, &s, "");
	write_file(mpath(&m, "in"), "inside", 6);
	ASSERT_EQ(mkdir(mpath(&m, "d"), 0755), 0);
	ASSERT_EQ(symlink(secret, mpath(&m, "out")), 0);
	ASSERT_EQ(symlink("in", mpath(&m, "back")), 0);
	ASSERT_EQ(symlink("d", mpath(&m, "dl")), 0);

	errno = 0;
	ASSERT_EQ(read_file(lpath(&m, "out"), &got), -1);
	ASSERT_EQ(errno, ELOOP);
	ASSERT_EQ(read_file(lpath(&m, "back"), &got), -1);
	ASSERT_EQ(errno, ELOOP);
	ASSERT_EQ(path_open(lpath(&m, "out"), O_WRONLY | O_TRUNC, 0), -1);
	ASSERT_EQ(errno, ELOOP);
	ASSERT_EQ(path_open(lpath(&m, "dl/new"), O_WRONLY | O_CREAT, 0644), -1);
	ASSERT_EQ(errno, ELOOP);
	ASSERT_EQ(path_lstat(lpath(&m, "dl/new"), &st), -1);
	ASSERT_EQ(errno, ELOOP);
	ASSERT_EQ(path_open(lpath(&m, "../x"), O_RDONLY, 0), -1);
	ASSERT_EQ(errno, EXDEV);
	/* The links themselves: looked at, not through. */
	lstat_ok(lpath(&m, "out"), &st);
	ASSERT(S_ISLNK(st.st_mode));
	n = path_readlink(lpath(&m, "out"), buf, sizeof(buf) - 1);
	ASSERT_EQ(n, (ssize_t)strlen(secret));
	buf[n] = '\0';
	ASSERT_STR_EQ(buf, secret);
	assert_same_bytes(lpath(&m, "in"), "inside", 6);
	/* Nothing they point at was touched. */
	assert_same_bytes(secret, "root's", 6);
	ASSERT_EQ(lstat(mpath(&m, "d/new"), &st), -1);
	mnt_stop(&m);
	unlink(secret);
	rmdir(dir);
	return 0;
}
