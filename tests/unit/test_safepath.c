/*
 * lib/safepath and lib/termesc, run as root as the tools that use them
 * are: a symbolic link at the last component or in the middle of a path,
 * a directory of another user's, one others may write in (and a sticky
 * one, which is fine), a file with a second hard link, one of another
 * user's, a FIFO: each refused with a message naming the path and the
 * reason, and nothing written where the path was meant to lead.  A second
 * process swaps a directory for a link to a root-only one while paths
 * through it are opened: no file lands there.  A file in the invoking
 * user's directory is made as that user; a file opened as another user
 * gets that user's rights.  And control characters from a daemon are
 * escaped, valid UTF-8 passes.
 */
#include "test.h"

#include "safepath.h"
#include "termesc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Another user, and the one the tests make the invoking user. */
#define OTHER_UID 1000
#define NOBODY 65534

static char msg[SAFEPATH_MSG_MAX];

/* A fresh directory of root's (0755) under /tmp: its path in dir. */
static void tmp_root(char *dir, size_t len)
{
	if (geteuid() != 0)
		TEST_SKIP("safepath's rules are root's: run as root");
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");
	snprintf(dir, len, "/tmp/intrfs-test-sp.XXXXXX");
	ASSERT_NOT_NULL(mkdtemp(dir));
	ASSERT_EQ(chmod(dir, 0755), 0);
}

/* dir/name made as a directory with mode and owner. */
static void mkdir_as(const char *dir, const char *name, mode_t mode, uid_t uid,
		     char *out, size_t len)
{
	snprintf(out, len, "%s/%s", dir, name);
	ASSERT_EQ(mkdir(out, mode), 0);
	ASSERT_EQ(chmod(out, mode), 0);
	ASSERT_EQ(chown(out, uid, uid), 0);
}

/* path written with text, mode 0600, root's. */
static void put(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);

	ASSERT_GE(fd, 0);
	ASSERT_EQ(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* path holds text exactly. */
static void holds(const char *path, const char *text)
{
	char buf[256];
	int fd = open(path, O_RDONLY | O_NOFOLLOW);
	ssize_t n;

	ASSERT_GE(fd, 0);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	ASSERT_EQ(n, (ssize_t)strlen(text));
	ASSERT_MEM_EQ(buf, text, strlen(text));
}

/* path is there, as uid's. */
static void lstat_ok_uid(const char *path, uid_t uid)
{
	struct stat st;

	ASSERT_EQ(lstat(path, &st), 0);
	ASSERT_EQ(st.st_uid, uid);
}

static void absent(const char *path)
{
	struct stat st;

	ASSERT_EQ(lstat(path, &st), -1);
	ASSERT_EQ(errno, ENOENT);
}

static void rm_tree(const char *dir)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ASSERT_EQ(system(cmd), 0);
}

#define APPEND (O_WRONLY | O_APPEND | O_CREAT)

/*
 * Links planted towards root-only places, at the last component and in
 * the middle; an ancestor of another user's; one others may write in.
 * Each refused, naming the path and the component; nothing written.
 */
TEST_IMPL(safepath_refusals)
{
	char dir[64], secret[128], vault[128], path[256], shown[256];
	static const struct {
		const char *name; /* below dir */
		int rc;
		const char *component; /* below dir; NULL: the path itself */
		const char *why;
	} cases[] = {
		{ "link", -ELOOP, NULL, "a symbolic link" },
		{ "ldir/x", -ELOOP, "ldir",
		  "is a symbolic link: not followed" },
		{ "user/x", -EPERM, "user", "belongs to uid 1000" },
		{ "user/own/x", -EPERM, "user", "belongs to uid 1000" },
		{ "world/x", -EPERM, "world",
		  "writable by others (mode 0777)" },
		{ "group/x", -EPERM, "group",
		  "writable by others (mode 0775)" },
		{ "root/hard", -EMLINK, NULL, "has 2 hard links" },
		{ "root/theirs", -EPERM, NULL, "belongs to uid 1000" },
		{ "root/fifo", -ENXIO, NULL, "not a regular file" },
		{ "root/sub", -EISDIR, NULL, "Is a directory" },
		{ "root/..", -EISDIR, NULL, "names a directory" },
		{ "file/x", -ENOTDIR, "file", "not a directory" },
		{ "none/x", -ENOENT, "none", "No such file" },
	};
	char d[128], own[192];
	int fd;

	tmp_root(dir, sizeof(dir));
	snprintf(secret, sizeof(secret), "%s/secret", dir);
	put(secret, "root's\n");
	mkdir_as(dir, "vault", 0700, 0, vault, sizeof(vault));
	snprintf(path, sizeof(path), "%s/link", dir);
	ASSERT_EQ(symlink(secret, path), 0);
	snprintf(path, sizeof(path), "%s/ldir", dir);
	ASSERT_EQ(symlink(vault, path), 0);
	mkdir_as(dir, "user", 0755, OTHER_UID, d, sizeof(d));
	mkdir_as(d, "own", 0755, 0, own, sizeof(own));
	mkdir_as(dir, "world", 0777, 0, d, sizeof(d));
	mkdir_as(dir, "group", 0775, 0, d, sizeof(d));
	ASSERT_EQ(chown(d, 0, OTHER_UID), 0);
	mkdir_as(dir, "root", 0755, 0, d, sizeof(d));
	snprintf(path, sizeof(path), "%s/root/hard", dir);
	ASSERT_EQ(link(secret, path), 0);
	snprintf(path, sizeof(path), "%s/root/theirs", dir);
	put(path, "theirs\n");
	ASSERT_EQ(chown(path, OTHER_UID, OTHER_UID), 0);
	snprintf(path, sizeof(path), "%s/root/fifo", dir);
	ASSERT_EQ(mkfifo(path, 0644), 0);
	mkdir_as(d, "sub", 0755, 0, path, sizeof(path));
	snprintf(path, sizeof(path), "%s/file", dir);
	put(path, "");

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, cases[i].name);
		msg[0] = '\0';
		fd = safepath_open(path, APPEND, 0644, msg, sizeof(msg));
		if (fd != cases[i].rc)
			TEST__FAIL("%s: %d, not %d (%s)", path, fd, cases[i].rc,
				   msg);
		/* The message starts with the path, names the component. */
		ASSERT_EQ(strncmp(msg, path, strlen(path)), 0);
		snprintf(shown, sizeof(shown), ": %s/%s", dir,
			 cases[i].component ? cases[i].component : "");
		if (cases[i].component)
			ASSERT_CONTAINS(msg, shown);
		ASSERT_CONTAINS(msg, cases[i].why);
	}
	/* Nothing reached root's file or root's directory. */
	holds(secret, "root's\n");
	snprintf(path, sizeof(path), "%s/x", vault);
	absent(path);
	snprintf(path, sizeof(path), "%s/root/theirs", dir);
	holds(path, "theirs\n");
	snprintf(path, sizeof(path), "%s/user/x", dir);
	absent(path);
	snprintf(path, sizeof(path), "%s/world/x", dir);
	absent(path);
	rm_tree(dir);
	return 0;
}

/*
 * What passes: root's directories, a sticky one others may write in, a
 * relative path with "." and "..", an existing file appended to, O_TRUNC
 * after the checks; and a directory of the invoking user's (SUDO_UID),
 * where the file is made as that user, with that user's rights.
 */
TEST_IMPL(safepath_accepted)
{
	char dir[64], path[256], d[128], cwd[256];
	struct stat st;
	int fd;

	tmp_root(dir, sizeof(dir));
	mkdir_as(dir, "sticky", 01777, 0, d, sizeof(d));
	snprintf(path, sizeof(path), "%s/./x/../f", d);
	/* "x" need not exist: ".." is taken by name (links are refused). */
	fd = safepath_open(path, APPEND, 0640, msg, sizeof(msg));
	ASSERT_GE(fd, 0);
	ASSERT_EQ(write(fd, "one\n", 4), 4);
	close(fd);
	snprintf(path, sizeof(path), "%s/f", d);
	ASSERT_EQ(lstat(path, &st), 0);
	ASSERT_EQ(st.st_uid, 0);
	ASSERT_EQ(st.st_mode & 07777, 0640);
	/* Appended to, then truncated. */
	ASSERT_NOT_NULL(getcwd(cwd, sizeof(cwd)));
	ASSERT_EQ(chdir(d), 0);
	fd = safepath_open("f", APPEND, 0640, msg, sizeof(msg));
	ASSERT_GE(fd, 0);
	ASSERT_EQ(write(fd, "two\n", 4), 4);
	close(fd);
	ASSERT_EQ(chdir(cwd), 0);
	holds(path, "one\ntwo\n");
	fd = safepath_open(path, O_WRONLY | O_CREAT | O_TRUNC, 0640, msg,
			   sizeof(msg));
	ASSERT_GE(fd, 0);
	/* Blocking, as asked: the O_NONBLOCK of the open is gone. */
	ASSERT_EQ(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	close(fd);
	holds(path, "");
	/* O_EXCL keeps its meaning. */
	ASSERT_EQ(safepath_open(path, O_WRONLY | O_CREAT | O_EXCL, 0640, msg,
				sizeof(msg)),
		  -EEXIST);

	/* The invoking user's directory: made as that user. */
	mkdir_as(dir, "mine", 0755, OTHER_UID, d, sizeof(d));
	snprintf(path, sizeof(path), "%s/report", d);
	ASSERT_EQ(safepath_open(path, APPEND, 0644, msg, sizeof(msg)), -EPERM);
	setenv("SUDO_UID", "1000", 1);
	setenv("SUDO_GID", "1000", 1);
	fd = safepath_open(path, APPEND, 0644, msg, sizeof(msg));
	if (fd < 0)
		TEST__FAIL("%s", msg);
	close(fd);
	lstat_ok_uid(path, OTHER_UID);
	/* Root's file there is not the user's to write: refused. */
	snprintf(path, sizeof(path), "%s/roots", d);
	put(path, "root's\n");
	ASSERT_EQ(chmod(path, 0644), 0);
	ASSERT_EQ(safepath_open(path, APPEND, 0644, msg, sizeof(msg)), -EACCES);
	ASSERT_CONTAINS(msg, "Permission denied");
	holds(path, "root's\n");
	rm_tree(dir);
	return 0;
}

/*
 * A second process swaps a directory on the path for a symbolic link to
 * a root-only directory (RENAME_EXCHANGE, as fast as it can) while root
 * opens files through it: each open lands in the real directory or is
 * refused naming the link; nothing lands in the root-only one.
 */
TEST_IMPL(safepath_swap_race)
{
	char dir[64], vault[128], real[192], swap[192], path[256], d[128];
	unsigned opened = 0, refused = 0;
	pid_t racer;
	int st;

	tmp_root(dir, sizeof(dir));
	mkdir_as(dir, "vault", 0700, 0, vault, sizeof(vault));
	mkdir_as(dir, "pub", 0755, 0, d, sizeof(d));
	mkdir_as(d, "x", 0755, 0, real, sizeof(real));
	snprintf(swap, sizeof(swap), "%s/y", d);
	ASSERT_EQ(symlink(vault, swap), 0);
	racer = fork();
	ASSERT_GE(racer, 0);
	if (racer == 0) {
		for (;;)
			renameat2(AT_FDCWD, real, AT_FDCWD, swap,
				  RENAME_EXCHANGE);
	}
	snprintf(path, sizeof(path), "%s/f", real);
	for (unsigned i = 0; i < 4000 && (i < 200 || !opened || !refused);
	     i++) {
		int fd = safepath_open(path, APPEND, 0644, msg, sizeof(msg));

		if (fd >= 0) {
			opened++;
			close(fd);
			continue;
		}
		refused++;
		ASSERT_CONTAINS(msg, path);
		if (fd == -ELOOP)
			ASSERT_CONTAINS(msg, "symbolic link");
	}
	kill(racer, SIGKILL);
	ASSERT_EQ(waitpid(racer, &st, 0), racer);
	snprintf(path, sizeof(path), "%s/f", vault);
	absent(path);
	/* Both happened: the race was run, not missed. */
	ASSERT_GT(opened, 0);
	ASSERT_GT(refused, 0);
	rm_tree(dir);
	return 0;
}

/*
 * A file opened as another user (nobody) gets that user's rights: not in
 * a root-only directory, and made as nobody in a sticky one.
 */
TEST_IMPL(safepath_open_as_user)
{
	char dir[64], path[256], d[128];
	struct safepath_user u;
	int fd;

	tmp_root(dir, sizeof(dir));
	ASSERT_EQ(safepath_user_of(NOBODY, (gid_t)-1, &u), 0);
	ASSERT_EQ(u.uid, NOBODY);
	ASSERT_GE(u.ngroups, 1);
	mkdir_as(dir, "vault", 0700, 0, d, sizeof(d));
	snprintf(path, sizeof(path), "%s/f", d);
	ASSERT_EQ(safepath_open_as(&u, path, APPEND, 0644, msg, sizeof(msg)),
		  -EACCES);
	ASSERT_CONTAINS(msg, path);
	ASSERT_CONTAINS(msg, "as uid 65534");
	absent(path);
	mkdir_as(dir, "pub", 01777, 0, d, sizeof(d));
	snprintf(path, sizeof(path), "%s/f", d);
	fd = safepath_open_as(&u, path, APPEND, 0644, msg, sizeof(msg));
	if (fd < 0)
		TEST__FAIL("%s", msg);
	ASSERT_EQ(write(fd, "x", 1), 1);
	close(fd);
	lstat_ok_uid(path, NOBODY);
	rm_tree(dir);
	return 0;
}

TEST_IMPL(safepath_normalize_names)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "/", "/" },		{ "/a/./b//c/", "/a/b/c" },
		{ "/a/../../b", "/b" }, { "/a/b/..", "/a" },
		{ "//..", "/" },
	};
	char out[300], cwd[256], want[300];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		ASSERT_EQ(safepath_normalize(cases[i].in, out, sizeof(out)), 0);
		ASSERT_STR_EQ(out, cases[i].out);
	}
	ASSERT_NOT_NULL(getcwd(cwd, sizeof(cwd)));
	ASSERT_EQ(safepath_normalize("x/../y", want, sizeof(want)), 0);
	snprintf(out, sizeof(out), "%s/y", strcmp(cwd, "/") ? cwd : "");
	ASSERT_STR_EQ(want, out);
	ASSERT_EQ(safepath_normalize("/aaaa/bbbb", out, 8), -ENAMETOOLONG);
	ASSERT_EQ(safepath_normalize("", out, sizeof(out)), -ENOENT);
	return 0;
}

/* What a daemon may send, and what reaches the terminal. */
TEST_IMPL(termesc_controls)
{
	static const struct {
		const char *in, *out;
		int flags;
	} cases[] = {
		{ "ok\n{\"a\":1}\n", "ok\n{\"a\":1}\n", TERMESC_LINES },
		{ "a\nb\tc", "a\\x0ab\\x09c", 0 },
		{ "\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07", TERMESC_LINES },
		{ "del\x7f", "del\\x7f", 0 },
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
		  "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 0 },
		/* C1 CSI in UTF-8, and as a lone byte. */
		{ "\xc2\x9b"
		  "2J",
		  "\\xc2\\x9b2J", 0 },
		{ "\x9b"
		  "2J",
		  "\\x9b2J", 0 },
		/* Overlong, surrogate, cut short, past U+10FFFF. */
		{ "\xc0\xaf", "\\xc0\\xaf", 0 },
		{ "\xed\xa0\x80", "\\xed\\xa0\\x80", 0 },
		{ "\xe2\x82", "\\xe2\\x82", 0 },
		{ "\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80", 0 },
		{ "back\\slash", "back\\slash", 0 },
	};
	char out[128], *buf;
	size_t len;
	FILE *f;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		termesc(out, sizeof(out), cases[i].in, strlen(cases[i].in),
			cases[i].flags);
		ASSERT_STR_EQ(out, cases[i].out);
		f = open_memstream(&buf, &len);
		ASSERT_NOT_NULL(f);
		ASSERT_EQ(termesc_fwrite(f, cases[i].in, strlen(cases[i].in),
					 cases[i].flags),
			  0);
		fclose(f);
		ASSERT_STR_EQ(buf, cases[i].out);
		free(buf);
	}
	/* Cut at a whole escape, always terminated. */
	ASSERT_EQ(termesc(out, 6,
			  "ab\x1b"
			  "cd",
			  5, 0),
		  2);
	ASSERT_STR_EQ(out, "ab");
	ASSERT_EQ(termesc(out, 8,
			  "ab\x1b"
			  "cd",
			  5, 0),
		  7);
	ASSERT_STR_EQ(out, "ab\\x1bc");
	return 0;
}

/*
 * netfault --log and --control, which may run as root, through a link in
 * the middle of the path towards a directory only root may enter: refused
 * before it listens, naming the link; nothing made behind it (before,
 * netfault wrote its log, or listened, in the link's target).
 */
TEST_IMPL(netfault_paths_no_link)
{
	static const char *const opts[] = { "--log", "--control" };

	for (unsigned i = 0; i < ARRAY_SIZE(opts); i++) {
		char dir[64], vault[128], link[128], cmd[512], out[2048];
		char path[192];
		size_t got;
		FILE *p;
		int st;

		tmp_root(dir, sizeof(dir));
		mkdir_as(dir, "vault", 0700, 0, vault, sizeof(vault));
		snprintf(link, sizeof(link), "%s/ldir", dir);
		ASSERT_EQ(symlink(vault, link), 0);
		snprintf(cmd, sizeof(cmd),
			 "timeout 10 '%s' --listen 1=127.0.0.1:9 %s '%s/f' "
			 "2>&1",
			 NF_NETFAULT_BIN, opts[i], link);
		p = popen(cmd, "r");
		ASSERT_NOT_NULL(p);
		got = fread(out, 1, sizeof(out) - 1, p);
		out[got] = '\0';
		st = pclose(p);
		ASSERT(WIFEXITED(st));
		if (WEXITSTATUS(st) != 1)
			TEST__FAIL("netfault %s %s/f: exit %d, not 1: %s",
				   opts[i], link, WEXITSTATUS(st), out);
		ASSERT_CONTAINS(out, link);
		ASSERT_CONTAINS(out, "is a symbolic link");
		snprintf(path, sizeof(path), "%s/f", vault);
		absent(path);
		rm_tree(dir);
	}
	return 0;
}
