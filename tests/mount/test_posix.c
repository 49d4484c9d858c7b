/*
 * POSIX behaviour of each operation through a real mount, checked against
 * the export directory itself: the bytes, the attributes, the entries.  Then
 * credentials (allow_other, a non-root caller acting as itself), errors at
 * close, and the mount's own options and failures.
 */
#include "harness.h"
#include "mntrig.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#define OTHER_GID 1234

/* Data round trips around the 1 MiB rsize/wsize and FUSE's page size. */
TEST_IMPL(posix_data_round_trips)
{
	static const size_t sizes[] = {
		0,	    1,	     4095,    4096,    4097,
		131072,	    1048575, 1048576, 1048577, 3 * 1048576 + 17,
		9 * 1048576
	};
	size_t max = 9 * 1048576;
	char *buf = malloc(max), name[32];
	struct mnt m;
	struct test_server s;

	ASSERT_NOT_NULL(buf);
	mnt_fresh(&m, &s, "");
	for (unsigned i = 0; i < ARRAY_SIZE(sizes); i++) {
		fill_random(buf, sizes[i], i + 1);
		snprintf(name, sizeof(name), "f%zu", sizes[i]);
		/* One write(2) of the whole size: several WRITE calls. */
		write_file(mpath(&m, name), buf, sizes[i]);
		assert_same_bytes(lpath(&m, name), buf, sizes[i]);
		assert_same_bytes(mpath(&m, name), buf, sizes[i]);
	}
	/* Written on the server, read through the mount with O_DIRECT. */
	fill_random(buf, max, 99);
	write_file(lpath(&m, "server-side"), buf, max);
	{
		char *got = NULL;
		int fd = open(mpath(&m, "server-side"), O_RDONLY | O_DIRECT);
		ssize_t n;

		ASSERT_GE(fd, 0);
		ASSERT_EQ(posix_memalign((void **)&got, 4096, max), 0);
		n = read(fd, got, max);
		ASSERT_EQ(n, max);
		ASSERT_MEM_EQ(got, buf, max);
		close(fd);
		free(got);
	}
	/* Overwrite in the middle, then append. */
	{
		int fd = open(mpath(&m, "server-side"), O_WRONLY);

		ASSERT_GE(fd, 0);
		memset(buf + 5000, 'x', 70000);
		ASSERT_EQ(pwrite(fd, buf + 5000, 70000, 5000), 70000);
		ASSERT_EQ(fsync(fd), 0);
		ASSERT_EQ(close(fd), 0);
		assert_same_bytes(lpath(&m, "server-side"), buf, max);
		fd = open(mpath(&m, "server-side"), O_WRONLY | O_APPEND);
		ASSERT_GE(fd, 0);
		ASSERT_EQ(write(fd, "tail", 4), 4);
		ASSERT_EQ(close(fd), 0);
		memcpy(buf + max - 4, "tail", 4);
		{
			struct stat st;

			lstat_ok(lpath(&m, "server-side"), &st);
			ASSERT_EQ(st.st_size, max + 4);
		}
	}
	free(buf);
	mnt_stop(&m);
	return 0;
}

TEST_IMPL(posix_namespace)
{
	char target[64];
	struct stat st, st2;
	struct mnt m;
	struct test_server s;
	ssize_t n;

	mnt_fresh(&m, &s, "");
	/* mkdir, rmdir */
	ASSERT_EQ(mkdir(mpath(&m, "d"), 0750), 0);
	lstat_ok(lpath(&m, "d"), &st);
	ASSERT(S_ISDIR(st.st_mode));
	ASSERT_EQ(st.st_mode & 07777, 0750 & ~umask(022));
	umask(022);
	ASSERT_EQ(rmdir(mpath(&m, "d")), 0);
	ASSERT_EQ(path_lstat(lpath(&m, "d"), &st), -1);
	ASSERT_EQ(errno, ENOENT);

	/* symlink, readlink */
	ASSERT_EQ(symlink("some/where", mpath(&m, "sl")), 0);
	n = path_readlink(lpath(&m, "sl"), target, sizeof(target));
	ASSERT_EQ(n, 10);
	n = readlink(mpath(&m, "sl"), target, sizeof(target));
	ASSERT_EQ(n, 10);
	ASSERT_MEM_EQ(target, "some/where", 10);

	/* link: one inode, two names */
	write_file(mpath(&m, "a"), "hello", 5);
	ASSERT_EQ(link(mpath(&m, "a"), mpath(&m, "b")), 0);
	lstat_ok(lpath(&m, "a"), &st);
	lstat_ok(lpath(&m, "b"), &st2);
	ASSERT_EQ(st.st_ino, st2.st_ino);
	ASSERT_EQ(st.st_nlink, 2);
	lstat_ok(mpath(&m, "a"), &st);
	ASSERT_EQ(st.st_nlink, 2);

	/* unlink */
	ASSERT_EQ(unlink(mpath(&m, "b")), 0);
	ASSERT_EQ(path_lstat(lpath(&m, "b"), &st), -1);
	lstat_ok(lpath(&m, "a"), &st);
	ASSERT_EQ(st.st_nlink, 1);

	/* mknod: a FIFO */
	ASSERT_EQ(mkfifo(mpath(&m, "fifo"), 0640), 0);
	lstat_ok(lpath(&m, "fifo"), &st);
	ASSERT(S_ISFIFO(st.st_mode));
	ASSERT_EQ(st.st_mode & 0777, 0640);

	/* rename, and rename over an existing target */
	write_file(mpath(&m, "old"), "old!", 4);
	ASSERT_EQ(rename(mpath(&m, "a"), mpath(&m, "c")), 0);
	ASSERT_EQ(path_lstat(lpath(&m, "a"), &st), -1);
	assert_same_bytes(lpath(&m, "c"), "hello", 5);
	ASSERT_EQ(rename(mpath(&m, "c"), mpath(&m, "old")), 0);
	assert_same_bytes(lpath(&m, "old"), "hello", 5);
	assert_same_bytes(mpath(&m, "old"), "hello", 5);
	ASSERT_EQ(lstat(mpath(&m, "c"), &st), -1);
	ASSERT_EQ(errno, ENOENT);
	/* a directory, across directories */
	ASSERT_EQ(mkdir(mpath(&m, "d1"), 0755), 0);
	ASSERT_EQ(mkdir(mpath(&m, "d2"), 0755), 0);
	write_file(mpath(&m, "d1/f"), "in d1", 5);
	ASSERT_EQ(rename(mpath(&m, "d1"), mpath(&m, "d2/moved")), 0);
	assert_same_bytes(lpath(&m, "d2/moved/f"), "in d1", 5);
	assert_same_bytes(mpath(&m, "d2/moved/f"), "in d1", 5);

	/* readdir sees exactly what the export has, each name once */
	{
		char name[32];
		bool seen_k[300] = { false };
		unsigned seen = 0;
		struct dirent *de;
		DIR *d;

		ASSERT_EQ(mkdir(mpath(&m, "many"), 0755), 0);
		for (unsigned i = 0; i < 300; i++) {
			snprintf(name, sizeof(name), "many/entry-%03u", i);
			write_file(lpath(&m, name), "", 0);
		}
		d = opendir(mpath(&m, "many"));
		ASSERT_NOT_NULL(d);
		while ((de = readdir(d))) {
			unsigned k;

			if (de->d_name[0] == '.')
				continue;
			ASSERT_EQ(sscanf(de->d_name, "entry-%u", &k), 1);
			ASSERT_LT(k, 300);
			ASSERT(!seen_k[k]);
			ASSERT_EQ(de->d_type, DT_REG);
			seen_k[k] = true;
			seen++;
		}
		closedir(d);
		ASSERT_EQ(seen, 300);
	}
	mnt_stop(&m);
	return 0;
}

TEST_IMPL(posix_attributes)
{
	struct timespec ts[2] = { { 1577836800, 123456789 },
				  { 1262304000, 5000 } };
	struct statvfs sv, lsv;
	struct stat st;
	struct mnt m;
	struct test_server s;
	char *buf;
	int fd;

	mnt_fresh(&m, &s, "");
	write_file(mpath(&m, "f"), "0123456789", 10);

	ASSERT_EQ(chmod(mpath(&m, "f"), 0604), 0);
	lstat_ok(lpath(&m, "f"), &st);
	ASSERT_EQ(st.st_mode & 07777, 0604);

	ASSERT_EQ(chown(mpath(&m, "f"), USER_UID, OTHER_GID), 0);
	lstat_ok(lpath(&m, "f"), &st);
	ASSERT_EQ(st.st_uid, USER_UID);
	ASSERT_EQ(st.st_gid, OTHER_GID);
	lstat_ok(mpath(&m, "f"), &st);
	ASSERT_EQ(st.st_uid, USER_UID);

	/* truncate down, then up: the new bytes read as zeros */
	ASSERT_EQ(truncate(mpath(&m, "f"), 4), 0);
	lstat_ok(lpath(&m, "f"), &st);
	ASSERT_EQ(st.st_size, 4);
	ASSERT_EQ(truncate(mpath(&m, "f"), 4096 * 3), 0);
	ASSERT_EQ(read_file(lpath(&m, "f"), &buf), 4096 * 3);
	ASSERT_MEM_EQ(buf, "0123", 4);
	for (unsigned i = 4; i < 4096 * 3; i++)
		ASSERT_EQ(buf[i], 0);
	free(buf);
	/* ftruncate on an open file, with writes before it */
	{
		fd = open(mpath(&m, "f"), O_RDWR);
		ASSERT_GE(fd, 0);
		ASSERT_EQ(pwrite(fd, "abcdef", 6, 0), 6);
		ASSERT_EQ(ftruncate(fd, 3), 0);
		ASSERT_EQ(close(fd), 0);
		assert_same_bytes(lpath(&m, "f"), "abc", 3);
	}

	/* utimens: atime and mtime to the nanosecond the server keeps */
	ASSERT_EQ(utimensat(AT_FDCWD, mpath(&m, "f"), ts, 0), 0);
	lstat_ok(lpath(&m, "f"), &st);
	ASSERT_EQ(st.st_atim.tv_sec, ts[0].tv_sec);
	ASSERT_EQ(st.st_mtim.tv_sec, ts[1].tv_sec);
	ASSERT_EQ(st.st_mtim.tv_nsec, ts[1].tv_nsec);
	lstat_ok(mpath(&m, "f"), &st);
	ASSERT_EQ(st.st_mtim.tv_sec, ts[1].tv_sec);

	/* statfs: the export's file system */
	ASSERT_EQ(statvfs(mpath(&m, "."), &sv), 0);
	fd = path_open(lpath(&m, "."), O_RDONLY | O_DIRECTORY, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(fstatvfs(fd, &lsv), 0);
	close(fd);
	ASSERT_UINT64_EQ((uint64_t)sv.f_blocks * sv.f_frsize,
			 (uint64_t)lsv.f_blocks * lsv.f_frsize);
	ASSERT_UINT64_GT(sv.f_files, 0);
	ASSERT_GE(sv.f_namemax, 255);

	/* access: what the mode allows root */
	ASSERT_EQ(access(mpath(&m, "f"), R_OK | W_OK), 0);
	ASSERT_EQ(access(mpath(&m, "f"), X_OK), -1);
	ASSERT_EQ(errno, EACCES);
	mnt_stop(&m);
	return 0;
}

TEST_IMPL(posix_errors)
{
	struct mnt m;
	struct test_server s;
	int fd;

	mnt_fresh(&m, &s, "");
	ASSERT_EQ(open(mpath(&m, "none"), O_RDONLY), -1);
	ASSERT_EQ(errno, ENOENT);
	ASSERT_EQ(mkdir(mpath(&m, "d"), 0755), 0);
	ASSERT_EQ(mkdir(mpath(&m, "d"), 0755), -1);
	ASSERT_EQ(errno, EEXIST);
	write_file(mpath(&m, "d/f"), "x", 1);
	ASSERT_EQ(rmdir(mpath(&m, "d")), -1);
	ASSERT_EQ(errno, ENOTEMPTY);
	ASSERT_EQ(open(mpath(&m, "d/f/x"), O_RDONLY), -1);
	ASSERT_EQ(errno, ENOTDIR);
	ASSERT_EQ(unlink(mpath(&m, "d")), -1);
	ASSERT(errno == EISDIR || errno == EPERM);
	fd = open(mpath(&m, "d/f"), O_WRONLY | O_CREAT | O_EXCL, 0644);
	ASSERT_EQ(fd, -1);
	ASSERT_EQ(errno, EEXIST);
	ASSERT_EQ(rename(mpath(&m, "d"), mpath(&m, "d/f")), -1);
	ASSERT(errno == ENOTDIR || errno == EINVAL);
	/* Nothing was lost on the way. */
	assert_same_bytes(lpath(&m, "d/f"), "x", 1);
	mnt_stop(&m);
	return 0;
}

static int try_read(const char *path)
{
	char c;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return errno;
	if (read(fd, &c, 1) < 0)
		return errno;
	close(fd);
	return 0;
}

static int try_create(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);

	if (fd < 0)
		return errno;
	if (write(fd, "mine", 4) != 4)
		return errno;
	return close(fd) < 0 ? errno : 0;
}

static int try_mkdir(const char *path)
{
	return mkdir(path, 0755) < 0 ? errno : 0;
}

static int try_unlink(const char *path)
{
	return unlink(path) < 0 ? errno : 0;
}

TEST_IMPL(cred_each_caller_acts_as_itself)
{
	const gid_t own[] = { USER_GID },
		    with_other[] = { USER_GID, OTHER_GID };
	struct stat st;
	struct mnt m;
	struct test_server s;

	mnt_fresh(&m, &s, "allow_other");
	/* What only root may read. */
	write_file(mpath(&m, "secret"), "root only", 9);
	ASSERT_EQ(chmod(mpath(&m, "secret"), 0600), 0);
	ASSERT_EQ(as_user(USER_UID, USER_GID, own, 1, try_read,
			  mpath(&m, "secret")),
		  EACCES);
	ASSERT_EQ(try_read(mpath(&m, "secret")), 0);

	/* A group the user has only as a supplementary group. */
	write_file(mpath(&m, "group"), "group", 5);
	ASSERT_EQ(chown(mpath(&m, "group"), 0, OTHER_GID), 0);
	ASSERT_EQ(chmod(mpath(&m, "group"), 0640), 0);
	ASSERT_EQ(as_user(USER_UID, USER_GID, own, 1, try_read,
			  mpath(&m, "group")),
		  EACCES);
	ASSERT_EQ(as_user(USER_UID, USER_GID, with_other, 2, try_read,
			  mpath(&m, "group")),
		  0);

	/* What the user creates is the user's on the server. */
	ASSERT_EQ(as_user(USER_UID, USER_GID, own, 1, try_create,
			  mpath(&m, "users-file")),
		  0);
	lstat_ok(lpath(&m, "users-file"), &st);
	ASSERT_EQ(st.st_uid, USER_UID);
	ASSERT_EQ(st.st_gid, USER_GID);
	assert_same_bytes(lpath(&m, "users-file"), "mine", 4);
	ASSERT_EQ(as_user(USER_UID, USER_GID, own, 1, try_mkdir,
			  mpath(&m, "users-dir")),
		  0);
	lstat_ok(lpath(&m, "users-dir"), &st);
	ASSERT_EQ(st.st_uid, USER_UID);

	/* A root-owned directory the user may not write into. */
	ASSERT_EQ(mkdir(mpath(&m, "rootdir"), 0755), 0);
	ASSERT_EQ(as_user(USER_UID, USER_GID, own, 1, try_create,
			  mpath(&m, "rootdir/nope")),
		  EACCES);
	ASSERT_EQ(path_lstat(lpath(&m, "rootdir/nope"), &st), -1);
	write_file(mpath(&m, "rootdir/keep"), "k", 1);
	ASSERT_EQ(as_user(USER_UID, USER_GID, own, 1, try_unlink,
			  mpath(&m, "rootdir/keep")),
		  EACCES);
	assert_same_bytes(lpath(&m, "rootdir/keep"), "k", 1);
	mnt_stop(&m);
	return 0;
}

/* Without allow_other, FUSE itself keeps other users out. */
TEST_IMPL(cred_without_allow_other)
{
	const gid_t own[] = { USER_GID };
	struct mnt m;
	struct test_server s;

	mnt_fresh(&m, &s, "");
	write_file(mpath(&m, "open"), "anyone", 6);
	ASSERT_EQ(as_user(USER_UID, USER_GID, own, 1, try_read,
			  mpath(&m, "open")),
		  EACCES);
	mnt_stop(&m);
	return 0;
}

/*
 * An error that only shows at close is reported by close: the server stops
 * answering after the data went out UNSTABLE, and the COMMIT at close times
 * out on a soft mount.
 */
TEST_IMPL(posix_error_at_close)
{
	char *buf = malloc(1 << 20);
	uint64_t t0, took;
	struct mnt m;
	struct test_server s;
	int fd, rc, err;

	ASSERT_NOT_NULL(buf);
	mnt_fresh(&m, &s, "soft,timeo=5,retrans=1");
	fd = open(mpath(&m, "f"), O_WRONLY | O_CREAT, 0644);
	ASSERT_GE(fd, 0);
	memset(buf, 'z', 1 << 20);
	/*
	 * From the write on: the write is answered once sent, and the soft
	 * timeout of its WRITE (or of the COMMIT at close) runs from then.
	 */
	t0 = region_now_ns();
	ASSERT_EQ(write(fd, buf, 1 << 20), 1 << 20);
	srv_stall(&s);
	rc = close(fd);
	err = errno;
	took = region_now_ns() - t0;
	srv_resume(&s);
	ASSERT_EQ(rc, -1);
	ASSERT_EQ(err, EIO);
	ASSERT_UINT64_GE(took, 950000000u);
	/* A later fsync on a fresh open works again. */
	fd = open(mpath(&m, "f"), O_WRONLY);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(fsync(fd), 0);
	ASSERT_EQ(close(fd), 0);
	free(buf);
	mnt_stop(&m);
	return 0;
}

struct resume_later {
	const struct test_server *s;
	unsigned ms;
};

/* The scenario: the server stays stopped r->ms, then goes on. */
static void *resume_main(void *arg)
{
	struct resume_later *r = arg;

	test_sleep_ms(r->ms);
	srv_resume(r->s);
	return NULL;
}

/*
 * Write-behind: with the server stopped, a write is answered once its
 * WRITE has left, and the close waits for the server and then has it all
 * on the export.  On a soft mount a WRITE that times out after its answer
 * fails the next write and the close, with EIO.  An O_DIRECT write waits
 * for its reply.
 */
TEST_IMPL(posix_write_behind)
{
	const size_t len = 1 << 20;
	struct resume_later later;
	char *buf = malloc(len), *dbuf;
	uint64_t t0, took;
	pthread_t th;
	struct mnt m;
	struct test_server s;
	int fd, err;
	ssize_t rc;

	ASSERT_NOT_NULL(buf);
	memset(buf, 'b', len);
	mnt_fresh(&m, &s, "hard");
	fd = open(mpath(&m, "wb"), O_WRONLY | O_CREAT, 0644);
	ASSERT_GE(fd, 0);
	srv_stall(&s);
	t0 = region_now_ns();
	ASSERT_EQ(write(fd, buf, len), (ssize_t)len);
	took = region_now_ns() - t0;
	ASSERT_UINT64_LT(took, 300000000u);
	later = (struct resume_later){ &s, 500 };
	ASSERT_EQ(pthread_create(&th, NULL, resume_main, &later), 0);
	/*
	 * What was answered is what a stat and an uncached read see: they
	 * wait for the WRITE, they do not get the server's older view.
	 */
	{
		struct stat st;
		char *back;
		int rfd;

		ASSERT_EQ(stat(mpath(&m, "wb"), &st), 0);
		ASSERT_EQ(st.st_size, (off_t)len);
		ASSERT_EQ(posix_memalign((void **)&back, 4096, len), 0);
		rfd = open(mpath(&m, "wb"), O_RDONLY | O_DIRECT);
		ASSERT_GE(rfd, 0);
		ASSERT_EQ(read(rfd, back, len), (ssize_t)len);
		ASSERT_MEM_EQ(back, buf, len);
		ASSERT_EQ(close(rfd), 0);
		free(back);
	}
	ASSERT_EQ(close(fd), 0);
	took = region_now_ns() - t0;
	pthread_join(th, NULL);
	ASSERT_UINT64_GE(took, 450000000u);
	assert_same_bytes(lpath(&m, "wb"), buf, len);

	/* O_DIRECT: answered with the reply, after the resume. */
	ASSERT_EQ(posix_memalign((void **)&dbuf, 4096, len), 0);
	memset(dbuf, 'd', len);
	fd = open(mpath(&m, "wb"), O_WRONLY | O_DIRECT);
	ASSERT_GE(fd, 0);
	srv_stall(&s);
	t0 = region_now_ns();
	later = (struct resume_later){ &s, 400 };
	ASSERT_EQ(pthread_create(&th, NULL, resume_main, &later), 0);
	ASSERT_EQ(write(fd, dbuf, len), (ssize_t)len);
	took = region_now_ns() - t0;
	pthread_join(th, NULL);
	ASSERT_UINT64_GE(took, 350000000u);
	ASSERT_EQ(close(fd), 0);
	assert_same_bytes(lpath(&m, "wb"), dbuf, len);
	free(dbuf);
	mnt_stop(&m);

	/* soft: the WRITE times out after its answer. */
	mnt_fresh(&m, &s, "soft,timeo=5,retrans=1");
	fd = open(mpath(&m, "wb"), O_WRONLY | O_CREAT, 0644);
	ASSERT_GE(fd, 0);
	srv_stall(&s);
	ASSERT_EQ(write(fd, buf, len), (ssize_t)len);
	/*
	 * The scenario: the server stays stopped past the WRITE's soft
	 * timeout (1 s: 0.5 + 0.5), and the next write comes after it.  The
	 * daemon logs the timeout a moment before the write-behind records
	 * the error: the log is no signal to write on.
	 */
	test_sleep_ms(2000);
	rc = write(fd, buf, len);
	err = errno;
	ASSERT_EQ(rc, -1);
	ASSERT_EQ(err, EIO);
	rc = close(fd);
	err = errno;
	srv_resume(&s);
	ASSERT_EQ(rc, -1);
	ASSERT_EQ(err, EIO);
	free(buf);
	mnt_stop(&m);
	return 0;
}

TEST_IMPL(mount_bad_options)
{
	static const struct {
		const char *opts, *want;
	} cases[] = {
		{ "frobnicate", "unknown option 'frobnicate'" },
		{ "timeo=abc", "option 'timeo'" },
		{ "timeo=0", "option 'timeo'" },
		{ "retrans=-1", "option 'retrans'" },
		{ "policy=never", "option 'policy'" },
		{ "vers=4", "vers" },
		{ "proto=udp", "proto" },
		{ "soft,hard,rsize=x", "option 'rsize'" },
		/* nfs(5) options this client cannot honour, and why. */
		{ "sec=krb5", "option 'sec=krb5' is not supported: intrfs "
			      "speaks AUTH_SYS only" },
		{ "nfsvers=4.1", "NFS version 3 only" },
		{ "vers=3,udp", "option 'udp' is not supported: intrfs uses "
				"TCP only" },
		{ "mountvers=1", "MOUNT version 3 only" },
		{ "nconnect=17", "option 'nconnect'" },
		{ "nconnect=0", "option 'nconnect'" },
		{ "acl", "no NFSACL" },
		{ "fsc", "no FS-Cache" },
		{ "clientaddr=1.2.3.4", "NFSv4's" },
		{ "local_lock=some", "option 'local_lock' is none, all, flock "
				     "or posix" },
		{ "nolock=1", "option 'nolock' takes no value" },
		{ "max_read=0", "option 'max_read' needs a number" },
		{ "cto=1", "option 'cto' takes no value" },
	};
	char log[8192];
	struct mnt m;
	struct test_server s;

	srv_get(&s);
	for (unsigned i = 0; i < ARRAY_SIZE(cases); i++) {
		int st = mnt_start_fails(&m, &s, cases[i].opts, log,
					 sizeof(log));

		ASSERT_NE(st, 0);
		ASSERT_CONTAINS(log, cases[i].want);
	}
	return 0;
}

/*
 * An fstab line written for Linux's NFS client mounts as it is: what means
 * the same for this client is accepted (and the mount works), and max_read=
 * caps the reads the kernel asks for.
 */
TEST_IMPL(mount_nfs5_options)
{
	static const char *const lines[] = {
		"vers=3,nfsvers=3,proto=tcp,tcp,mountproto=tcp,mountvers=3,"
		"sec=sys,hard,timeo=600,retrans=2,lock,local_lock=none,noacl,"
		"nofsc,rdirplus,noresvport,namlen=255,sharecache,ac,_netdev,"
		"defaults,nofail,x-systemd.automount",
		"nolock,nosharecache,nconnect=1,v3,noac,cto",
		"local_lock=flock,nocto,actimeo=5,lookupcache=positive",
	};
	struct test_server s;
	struct mnt m;
	char *got;

	srv_get(&s);
	for (unsigned i = 0; i < ARRAY_SIZE(lines); i++) {
		mnt_start(&m, &s, lines[i]);
		write_file(mpath(&m, "f"), "fstab\n", 6);
		ASSERT_EQ(read_file(mpath(&m, "f"), &got), 6);
		ASSERT_MEM_EQ(got, "fstab\n", 6);
		free(got);
		assert_same_bytes(lpath(&m, "f"), "fstab\n", 6);
		mnt_stop(&m);
	}
	return 0;
}

/*
 * max_read=N mounts (libfuse refused INIT unless init() asked for the
 * same) and caps each read request: a 1 MiB O_DIRECT read of a file takes
 * 1 MiB / N READ calls.
 */
TEST_IMPL(mount_max_read)
{
	static const struct {
		const char *opts;
		uint64_t reads; /* READ calls for 1 MiB at least */
	} rows[] = {
		{ "", 1 },
		{ "max_read=131072", 8 },
		{ "max_read=65536", 16 },
	};
	struct test_server s;
	struct mnt m;
	char *buf;

	srv_get(&s);
	ASSERT_EQ(posix_memalign((void **)&buf, 4096, 1 << 20), 0);
	memset(buf, 'm', 1 << 20);
	for (unsigned i = 0; i < ARRAY_SIZE(rows); i++) {
		uint64_t before;
		int fd;

		mnt_start(&m, &s, rows[i].opts);
		write_file(lpath(&m, "big"), buf, 1 << 20);
		fd = open(mpath(&m, "big"), O_RDONLY | O_DIRECT);
		ASSERT_GE(fd, 0);
		before = mnt_proc_ops(&m, "READ");
		ASSERT_EQ(read(fd, buf, 1 << 20), 1 << 20);
		close(fd);
		if (mnt_proc_ops(&m, "READ") - before < rows[i].reads)
			TEST__FAIL(
				"-o '%s': 1 MiB in %llu READs, not %llu or "
				"more",
				rows[i].opts,
				(unsigned long long)(mnt_proc_ops(&m, "READ") -
						     before),
				(unsigned long long)rows[i].reads);
		if (rows[i].reads > 1 &&
		    mnt_proc_ops(&m, "READ") - before > rows[i].reads + 1)
			TEST__FAIL("-o '%s': more READs than max_read asks",
				   rows[i].opts);
		mnt_stop(&m);
	}
	free(buf);
	return 0;
}

/*
 * Extended attributes: none, as Linux's NFSv3 client lists none: an empty
 * list (not EOPNOTSUPP) for files and directories.
 */
TEST_IMPL(mount_listxattr_empty)
{
	struct test_server s;
	struct mnt m;
	char list[256];

	srv_get(&s);
	mnt_start(&m, &s, "");
	write_file(mpath(&m, "f"), "x", 1);
	ASSERT_EQ(listxattr(mpath(&m, "f"), list, sizeof(list)), 0);
	ASSERT_EQ(listxattr(mpath(&m, "f"), NULL, 0), 0);
	ASSERT_EQ(llistxattr(mpath(&m, ""), list, sizeof(list)), 0);
	mnt_stop(&m);
	return 0;
}

/*
 * The mount's readahead window, as /sys/class/bdi shows it, in KiB: set
 * before the daemon says it is mounted, which mnt_start() waits for.
 */
static unsigned readahead_kb(const struct mnt *m)
{
	char path[96], buf[32];
	struct stat st;
	FILE *f;

	ASSERT_EQ(stat(mpath(m, ""), &st), 0);
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb",
		 major(st.st_dev), minor(st.st_dev));
	f = fopen(path, "r");
	ASSERT_NOT_NULL(f);
	ASSERT_NOT_NULL(fgets(buf, sizeof(buf), f));
	fclose(f);
	return (unsigned)strtoul(buf, NULL, 10);
}

/*
 * Readahead of two READs of rsize, not the 128 KiB the kernel gives a
 * FUSE mount, which would split a 1 MiB read() into 128 KiB READs; but
 * never below those 128 KiB when rsize is small.
 */
TEST_IMPL(mount_readahead)
{
	struct mnt m;
	struct test_server s;

	srv_get(&s);
	mnt_start(&m, &s, "");
	ASSERT_EQ(readahead_kb(&m), 2u * 1024);
	mnt_stop(&m);
	mnt_start(&m, &s, "rsize=262144");
	ASSERT_EQ(readahead_kb(&m), 2u * 256);
	mnt_stop(&m);
	mnt_start(&m, &s, "rsize=32768");
	ASSERT_EQ(readahead_kb(&m), 128u);
	mnt_stop(&m);
	return 0;
}

/*
 * kill -9 of the daemon while its mount comes up ends it, even with the
 * daemon's own first look at the mount point in flight (a GETATTR of the
 * root, noac, its reply held 800 ms by netfault): it is reaped at once,
 * never left waiting on a request only its own exit would abort.
 */
TEST_IMPL(mount_killed_while_mounting)
{
	struct test_server s, via;
	struct mnt m;

	srv_get(&s);
	nf_front(&via, &s, "delay 800 dir=reply proc=GETATTR count=all");
	for (int i = 0; i < 3; i++) {
		uint64_t t0, end;
		unsigned conn;
		int st;

		mnt_spawn(&m, &via, "noac");
		/* mount(2) is through; the root's GETATTR is held. */
		ASSERT_WITHIN(proc_intrfs_mounted(m.dir), 15000);
		conn = mntrig_connection(m.dir);
		test_sleep_ms(200);
		ASSERT_EQ(kill(m.pid, SIGKILL), 0);
		t0 = region_now_ns();
		end = t0 + 5000000000ull;
		/* Reaped: every thread gone, not only the main one. */
		while (waitpid(m.pid, &st, WNOHANG) != m.pid) {
			if (region_now_ns() > end) {
				/* Let it go, then say what it did. */
				mntrig_abort(conn);
				waitpid(m.pid, &st, 0);
				umount2(m.dir, MNT_DETACH);
				TEST__FAIL(
					"round %d: intrfs (pid %d) could not "
					"exit 5 s after kill -9 (a thread "
					"waiting on its own mount)",
					i, (int)m.pid);
			}
			test_sleep_ms(1);
		}
		fprintf(stderr, "# round %d: reaped %.1f ms after kill -9\n", i,
			(double)(region_now_ns() - t0) / 1e6);
		umount2(m.dir, MNT_DETACH);
		rmdir(m.dir);
	}
	nf_front_stop();
	return 0;
}

TEST_IMPL(mount_unreachable_server)
{
	char log[8192];
	struct mnt m;
	struct test_server s;
	uint64_t t0;
	int st;

	srv_get(&s);
	/* soft: a clear error, at once */
	t0 = region_now_ns();
	st = mnt_start_fails(&m, &s, "soft,port=1,mountport=1", log,
			     sizeof(log));
	ASSERT_NE(st, 0);
	ASSERT_CONTAINS(log, "Connection refused");
	ASSERT_UINT64_LT(region_now_ns() - t0, 5000000000ull);
	/* hard: says it is still trying, and keeps trying */
	mnt_spawn(&m, &s, "hard,retry=1,port=1,mountport=1");
	mnt_wait_log(&m, "not responding, still trying", 10000);
	/* The scenario: 300 ms more, and it has not given up. */
	test_sleep_ms(300);
	ASSERT_EQ(waitpid(m.pid, &st, WNOHANG), 0); /* still at it */
	ASSERT_EQ(kill(m.pid, SIGTERM), 0);
	ASSERT_EQ(waitpid(m.pid, &st, 0), m.pid);
	rmdir(m.dir);
	/* hard, retry=0: a single attempt, then the error */
	t0 = region_now_ns();
	st = mnt_start_fails(&m, &s, "hard,retry=0,port=1,mountport=1", log,
			     sizeof(log));
	ASSERT_NE(st, 0);
	ASSERT_CONTAINS(log, "Connection refused");
	return 0;
}

/*
 * mount -t fuse.intrfs and an fstab line, through mount.fuse3: needs intrfs
 * installed where mount(8) finds it (tests/run installs it).
 */
TEST_IMPL(mount_via_mount_command)
{
	char dir[] = "/tmp/intrfs-test-mnt.XXXXXX", src[600], cmd[2048],
	     fstab[] = "/tmp/intrfs-test-fstab.XXXXXX", path[700];
	struct test_server s;
	struct stat st;
	FILE *f;
	int fd;

	srv_get(&s);
	if (access("/usr/local/bin/intrfs", X_OK) != 0 &&
	    access("/usr/bin/intrfs", X_OK) != 0)
		TEST__FAIL("intrfs is not installed (meson install -C build): "
			   "mount -t fuse.intrfs cannot find it");
	snprintf(src, sizeof(src), "%s/viamount", s.export_dir);
	ASSERT(mkdir(src, 0777) == 0 || errno == EEXIST);
	ASSERT_NOT_NULL(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd),
		 "mount -t fuse.intrfs %s:%s %s -o "
		 "port=%u,mountport=%u,soft,timeo=50,noatime",
		 s.server, src, dir, s.nfs_port, s.mount_port);
	ASSERT_EQ(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/hello", dir);
	write_file(path, "via mount", 9);
	snprintf(path, sizeof(path), "%s/hello", src);
	ASSERT_EQ(stat(path, &st), 0);
	ASSERT_EQ(st.st_size, 9);
	snprintf(cmd, sizeof(cmd), "umount %s", dir);
	ASSERT_EQ(system(cmd), 0);

	/* The same through an fstab line. */
	fd = mkstemp(fstab);
	ASSERT_GE(fd, 0);
	f = fdopen(fd, "w");
	ASSERT_NOT_NULL(f);
	fprintf(f,
		"%s:%s %s fuse.intrfs port=%u,mountport=%u,hard,_netdev,"
		"noauto 0 0\n",
		s.server, src, dir, s.nfs_port, s.mount_port);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "mount -T %s %s", fstab, dir);
	ASSERT_EQ(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/hello", dir);
	ASSERT_EQ(stat(path, &st), 0);
	ASSERT_EQ(st.st_size, 9);
	snprintf(cmd, sizeof(cmd), "umount %s", dir);
	ASSERT_EQ(system(cmd), 0);
	unlink(fstab);
	rmdir(dir);
	return 0;
}
