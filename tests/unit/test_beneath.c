/*
 * tests/lib/beneath.c, both ways (openat2, and the component walk for
 * kernels without it): a tree with what a client of a server can plant in
 * an export (a symbolic link to a file outside, one that points back
 * inside, one on the way to a file, a hard link) and a path out by "..",
 * by an absolute name and by another filesystem; each row's outcome, and
 * nothing outside read, written, made or changed.
 */
#include "test.h"

#include "beneath.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

struct tree {
	char root[64]; /* the "export" */
	char out[64]; /* a directory beside it, with a secret */
	bool mounted; /* root/d/mnt holds a tmpfs */
	int fd; /* beneath_root(root) */
};

static void put(const char *dir, const char *rel, const char *data)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(write(fd, data, strlen(data)), (ssize_t)strlen(data));
	ASSERT_EQ(close(fd), 0);
}

static void in(char *buf, size_t len, const char *dir, const char *rel)
{
	snprintf(buf, len, "%s/%s", dir, rel);
}

static void tree_make(struct tree *t)
{
	char p[256], q[256];

	snprintf(t->root, sizeof(t->root), "/tmp/intrfs-beneath.XXXXXX");
	snprintf(t->out, sizeof(t->out), "/tmp/intrfs-beneath-out.XXXXXX");
	ASSERT_NOT_NULL(mkdtemp(t->root));
	ASSERT_NOT_NULL(mkdtemp(t->out));
	put(t->out, "secret", "secret");
	in(p, sizeof(p), t->root, "d");
	ASSERT_EQ(mkdir(p, 0755), 0);
	put(t->root, "d/f", "data");
	put(t->root, "d/g", "alone");
	in(p, sizeof(p), t->root, "d/f");
	in(q, sizeof(q), t->root, "d/hl");
	ASSERT_EQ(link(p, q), 0);
	in(p, sizeof(p), t->out, "secret");
	in(q, sizeof(q), t->root, "d/sl");
	ASSERT_EQ(symlink(p, q), 0);
	in(q, sizeof(q), t->root, "d/rel");
	ASSERT_EQ(symlink("../d/f", q), 0);
	in(q, sizeof(q), t->root, "dl");
	ASSERT_EQ(symlink("d", q), 0);
	in(p, sizeof(p), t->root, "d/mnt");
	ASSERT_EQ(mkdir(p, 0755), 0);
	/* Root only: another filesystem beneath (skipped, said, without). */
	t->mounted = mount("tmpfs", p, "tmpfs", 0, "size=1m") == 0;
	if (t->mounted)
		put(t->root, "d/mnt/x", "mounted");
	else
		fprintf(stderr, "# no tmpfs beneath (not root?): %s\n",
			strerror(errno));
	t->fd = beneath_root(t->root);
	ASSERT_GE(t->fd, 0);
}

static void tree_remove(struct tree *t)
{
	char cmd[256];

	close(t->fd);
	if (t->mounted) {
		char p[256];

		in(p, sizeof(p), t->root, "d/mnt");
		umount2(p, MNT_DETACH);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", t->root, t->out);
	ASSERT_EQ(system(cmd), 0);
}

/* The directory beside the export holds its secret, unchanged, alone. */
static void outside_untouched(const struct tree *t)
{
	char p[256], buf[16] = { 0 };
	struct stat st;
	int fd;

	in(p, sizeof(p), t->out, "secret");
	ASSERT_EQ(lstat(p, &st), 0);
	ASSERT_EQ(st.st_mode & 07777, 0600);
	ASSERT_EQ(st.st_size, 6);
	fd = open(p, O_RDONLY);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(read(fd, buf, sizeof(buf) - 1), 6);
	close(fd);
	ASSERT_STR_EQ(buf, "secret");
	in(p, sizeof(p), t->out, "made");
	ASSERT_EQ(lstat(p, &st), -1);
}

struct row {
	const char *rel;
	int flags;
	int want; /* 0: opens; else -errno */
};

static const struct row rows[] = {
	{ "d/f", O_RDONLY, 0 },
	{ "", O_RDONLY | O_DIRECTORY, 0 },
	{ ".", O_PATH, 0 },
	{ "d/./f", O_RDONLY, 0 },
	{ "d/hl", O_RDONLY, 0 },
	{ "d/sl", O_RDONLY, -ELOOP },
	{ "d/sl", O_PATH, -ELOOP },
	{ "d/sl", O_WRONLY | O_TRUNC, -ELOOP },
	{ "d/sl", O_WRONLY | O_CREAT, -ELOOP },
	{ "d/rel", O_RDONLY, -ELOOP },
	{ "dl/f", O_RDONLY, -ELOOP },
	{ "dl", O_RDONLY | O_DIRECTORY, -ELOOP },
	{ "../x", O_RDONLY, -EXDEV },
	{ "d/../d/f", O_RDONLY, -EXDEV },
	{ "/etc/passwd", O_RDONLY, -EXDEV },
	{ "d/nothing/x", O_RDONLY, -ENOENT },
	{ "d/new", O_WRONLY | O_CREAT | O_EXCL, 0 },
};

static void run_rows(struct tree *t, bool walk)
{
	beneath_force_walk(walk);
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		int fd = beneath_open(t->fd, rows[i].rel, rows[i].flags, 0600);

		if ((fd >= 0 ? 0 : fd) != rows[i].want)
			TEST__FAIL("%s: beneath_open(\"%s\", %#x) = %d (%s), "
				   "not %d",
				   walk ? "walk" : "openat2", rows[i].rel,
				   rows[i].flags, fd,
				   fd < 0 ? beneath_strerror(fd) : "opened",
				   rows[i].want);
		if (fd >= 0)
			close(fd);
	}
	/* Another filesystem beneath: a mount is not crossed. */
	if (t->mounted) {
		int fd = beneath_open(t->fd, "d/mnt/x", O_RDONLY, 0);

		ASSERT_EQ(fd, -EXDEV);
		ASSERT_EQ(beneath_open(t->fd, "d/mnt", O_PATH, 0), -EXDEV);
	}
	ASSERT_EQ(beneath_unlink(t->fd, "d/new", 0), 0);
	outside_untouched(t);
	beneath_force_walk(false);
}

TEST_IMPL(beneath_open_refuses_links)
{
	struct tree t;

	tree_make(&t);
	run_rows(&t, false);
	run_rows(&t, true);
	tree_remove(&t);
	return 0;
}

TEST_IMPL(beneath_file_and_names)
{
	char buf[8] = { 0 }, name[16];
	struct stat st;
	struct tree t;
	int fd;

	tree_make(&t);
	for (int walk = 0; walk < 2; walk++) {
		beneath_force_walk(walk);
		/* A hard link is refused where the caller wants its own file. */
		ASSERT_EQ(beneath_open_file(t.fd, "d/hl", O_RDONLY, 0),
			  -EMLINK);
		ASSERT_EQ(beneath_open_file(t.fd, "d/f", O_RDONLY, 0), -EMLINK);
		ASSERT_EQ(beneath_open_file(t.fd, "d", O_RDONLY, 0), -EISDIR);
		ASSERT_EQ(beneath_open_file(t.fd, "d/sl", O_RDONLY, 0), -ELOOP);
		fd = beneath_open_file(t.fd, "d/g", O_RDONLY, 0);
		ASSERT_GE(fd, 0);
		ASSERT_EQ(read(fd, buf, 5), 5);
		ASSERT_STR_EQ(buf, "alone");
		close(fd);
		/* lstat: the last name not followed, nor any on the way. */
		ASSERT_EQ(beneath_lstat(t.fd, "dl", &st), 0);
		ASSERT(S_ISLNK(st.st_mode));
		ASSERT_EQ(beneath_lstat(t.fd, "dl/f", &st), -ELOOP);
		ASSERT_EQ(beneath_lstat(t.fd, "", &st), 0);
		ASSERT(S_ISDIR(st.st_mode));
		/* chmod of a link changes nothing it points at. */
		ASSERT_EQ(beneath_chmod(t.fd, "d/sl", 0777), -ELOOP);
		ASSERT_EQ(beneath_mkdir_mode(t.fd, "d/m", 0777), 0);
		ASSERT_EQ(beneath_lstat(t.fd, "d/m", &st), 0);
		ASSERT_EQ(st.st_mode & 07777, 0777);
		ASSERT_EQ(beneath_mkdir(t.fd, "dl/m", 0777), -ELOOP);
		ASSERT_EQ(beneath_rename(t.fd, "d/m", "d/m2"), 0);
		ASSERT_EQ(beneath_rename(t.fd, "d/m2", "dl/m3"), -ELOOP);
		ASSERT_EQ(beneath_unlink(t.fd, "d/m2", AT_REMOVEDIR), 0);
		ASSERT_EQ(beneath_unlink(t.fd, "dl/f", 0), -ELOOP);
		ASSERT_EQ(beneath_parent(t.fd, ".", name, sizeof(name)),
			  -EINVAL);
		fd = beneath_parent(t.fd, "d/./f/", name, sizeof(name));
		ASSERT_GE(fd, 0);
		ASSERT_STR_EQ(name, "f");
		close(fd);
		ASSERT_EQ(beneath_lstat(t.fd, "d/.", &st), 0);
		ASSERT(S_ISDIR(st.st_mode));
		outside_untouched(&t);
	}
	beneath_force_walk(false);
	/* A tree removed: its links go, never what they point at. */
	if (t.mounted) {
		char p[256];

		in(p, sizeof(p), t.root, "d/mnt");
		ASSERT_EQ(umount2(p, 0), 0);
		t.mounted = false;
	}
	ASSERT_EQ(beneath_remove_tree(t.fd, "d"), 0);
	ASSERT_EQ(beneath_lstat(t.fd, "d", &st), -ENOENT);
	ASSERT_EQ(beneath_lstat(t.fd, "dl", &st), 0);
	ASSERT_EQ(beneath_remove_tree(t.fd, "d"), 0);
	outside_untouched(&t);
	tree_remove(&t);
	return 0;
}
