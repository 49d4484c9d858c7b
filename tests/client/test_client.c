/*
 * netclient against the real server (the ganesha tests/run starts): every
 * NFSv3 procedure, data round trips around the rsize/wsize boundaries, the
 * errno each NFS error maps to (a non-root caller's EACCES among them),
 * mount errors, and the hard/soft/softerr major timeouts with the server
 * stalled.  Every result is checked against the export directory itself.
 */
#include "test.h"
#include "testenv.h"

#include "intrfs/netclient.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

struct ctx {
	struct test_server env;
	nc_client_t *c;
	task_t *task;
	struct nc_cred root, user;
	struct nc_fh dir; /* a fresh directory of the export */
	char local[512]; /* the same, seen locally */
};

static unsigned seq;

/* A client mounted on a fresh directory of the export, in a task. */
static void ctx_open(struct ctx *x, const char *extra)
{
	struct task_attr attr = { "client-test", REGION_POLICY_REGION, NULL };
	char opts[256], err[512], sub[64], path[600];
	struct nc_opts o;

	memset(x, 0, sizeof(*x));
	testenv_server(&x->env);
	snprintf(sub, sizeof(sub), "c-%d-%u", (int)getpid(), ++seq);
	snprintf(x->local, sizeof(x->local), "%s/%s", x->env.export_dir, sub);
	ASSERT_EQ(mkdir(x->local, 0777), 0);
	ASSERT_EQ(chmod(x->local, 0777), 0);
	x->task = region_task_create(&attr);
	region_task_enter(x->task);
	nc_opts_init(&o);
	snprintf(opts, sizeof(opts), "port=%u,mountport=%u%s%s",
		 x->env.nfs_port, x->env.mount_port, extra[0] ? "," : "",
		 extra);
	ASSERT_EQ(nc_opts_parse(&o, opts, NULL, NULL, err, sizeof(err)), 0);
	ASSERT_EQ(nc_client_create(x->env.server, &o, &x->c, err, sizeof(err)),
		  0);
	nc_cred_self(&x->root);
	x->user.uid = x->user.gid = 1000;
	x->user.ngroups = 1;
	x->user.groups[0] = 1000;
	snprintf(path, sizeof(path), "%s", x->local);
	if (nc_client_mount(x->c, path, &x->root, &x->dir, err, sizeof(err)))
		TEST__FAIL("mount %s: %s", path, err);
}

static void ctx_close(struct ctx *x)
{
	nc_client_destroy(x->c);
	region_task_leave(x->task);
	region_task_put(x->task);
}

static const char *lp(const struct ctx *x, const char *rel)
{
	static char buf[4][700];
	static unsigned i;
	char *p = buf[i++ % 4];

	snprintf(p, 700, "%s/%s", x->local, rel);
	return p;
}

static struct nc_sattr mode(mode_t m)
{
	struct nc_sattr sa = { 0 };

	sa.set = NC_SET_MODE;
	sa.mode = m;
	return sa;
}

TEST_IMPL(client_mount_and_exports)
{
	struct ctx x;

	ctx_open(&x, "");
	ASSERT_STR_EQ(nc_client_export(x.c), x.env.export_dir);
	ASSERT_GT(nc_client_rsize(x.c), 0);
	ASSERT_LE(nc_client_rsize(x.c), NC_MAX_IO);
	ASSERT_GT(nc_client_wsize(x.c), 0);
	ASSERT_LE(nc_client_wsize(x.c), NC_MAX_IO);
	ASSERT_EQ(nc_null(x.c), 0);
	ctx_close(&x);
	return 0;
}

static int count_names(void *arg, const char *name, uint64_t fileid,
		       uint64_t cookie, const struct nc_fh *fh,
		       const struct nc_attr *attr)
{
	char *seen = arg;

	(void)fileid;
	(void)cookie;
	(void)fh;
	(void)attr;
	strcat(seen, name);
	strcat(seen, "/");
	return 0;
}

TEST_IMPL(client_every_procedure)
{
	struct nc_sattr sa = mode(0640);
	struct nc_entry f, d, l, p, e;
	struct nc_write_res wr;
	struct nc_fsstat fss;
	struct nc_fsinfo fsi;
	struct nc_pathconf pc;
	unsigned char verf[8], cverf[8] = { 0 };
	char buf[256], seen[1024] = "";
	uint32_t got, granted;
	struct nc_attr a;
	struct stat st;
	struct ctx x;
	bool eof;

	ctx_open(&x, "");
	/* CREATE, WRITE, READ, GETATTR */
	ASSERT_EQ(nc_create(x.c, &x.root, &x.dir, "f", NC_CREATE_GUARDED, &sa,
			    &f),
		  0);
	ASSERT(f.has_fh);
	ASSERT_EQ(stat(lp(&x, "f"), &st), 0);
	ASSERT_EQ(st.st_mode & 07777, 0640);
	ASSERT_EQ(nc_write(x.c, &x.root, &f.fh, 0, 11, "hello world",
			   NC_FILE_SYNC, &wr, NULL),
		  0);
	ASSERT_EQ(wr.count, 11);
	ASSERT_EQ(nc_read(x.c, &x.root, &f.fh, 6, 100, buf, &got, &eof, &a), 0);
	ASSERT_EQ(got, 5);
	ASSERT(eof);
	ASSERT_MEM_EQ(buf, "world", 5);
	ASSERT_EQ(nc_getattr(x.c, &x.root, &f.fh, &a), 0);
	ASSERT_UINT64_EQ(a.size, 11);
	ASSERT(S_ISREG(a.mode));
	ASSERT_UINT64_EQ(a.fileid, st.st_ino);

	/* SETATTR: mode, size, times */
	sa.set = NC_SET_MODE | NC_SET_SIZE | NC_SET_MTIME;
	sa.mode = 0600;
	sa.size = 5;
	sa.mtime.tv_sec = 1000000000;
	sa.mtime.tv_nsec = 0;
	ASSERT_EQ(nc_setattr(x.c, &x.root, &f.fh, &sa, &a), 0);
	ASSERT_EQ(stat(lp(&x, "f"), &st), 0);
	ASSERT_EQ(st.st_mode & 07777, 0600);
	ASSERT_EQ(st.st_size, 5);
	ASSERT_EQ(st.st_mtime, 1000000000);

	/* UNSTABLE WRITE + COMMIT: the verifiers agree */
	ASSERT_EQ(nc_write(x.c, &x.root, &f.fh, 5, 6, " there", NC_UNSTABLE,
			   &wr, NULL),
		  0);
	ASSERT_EQ(nc_commit(x.c, &x.root, &f.fh, 0, 0, verf), 0);
	ASSERT_MEM_EQ(verf, wr.verf, 8);

	/* ACCESS, LOOKUP */
	ASSERT_EQ(nc_access(x.c, &x.root, &f.fh,
			    NC_ACCESS_READ | NC_ACCESS_MODIFY, &granted),
		  0);
	ASSERT_EQ(granted & (NC_ACCESS_READ | NC_ACCESS_MODIFY),
		  NC_ACCESS_READ | NC_ACCESS_MODIFY);
	ASSERT_EQ(nc_lookup(x.c, &x.root, &x.dir, "f", &e), 0);
	ASSERT_EQ(e.fh.len, f.fh.len);
	ASSERT_MEM_EQ(e.fh.data, f.fh.data, e.fh.len);

	/* MKDIR, SYMLINK + READLINK, MKNOD, LINK, RENAME */
	sa = mode(0750);
	ASSERT_EQ(nc_mkdir(x.c, &x.root, &x.dir, "d", &sa, &d), 0);
	ASSERT_EQ(stat(lp(&x, "d"), &st), 0);
	ASSERT(S_ISDIR(st.st_mode));
	ASSERT_EQ(st.st_mode & 07777, 0750);
	sa = mode(0777);
	ASSERT_EQ(nc_symlink(x.c, &x.root, &x.dir, "l", "the/target", &sa, &l),
		  0);
	ASSERT_EQ(nc_readlink(x.c, &x.root, &l.fh, buf, sizeof(buf)), 0);
	ASSERT_STR_EQ(buf, "the/target");
	ASSERT_EQ(readlink(lp(&x, "l"), buf, sizeof(buf)), 10);
	sa = mode(0644);
	ASSERT_EQ(nc_mknod(x.c, &x.root, &x.dir, "p", S_IFIFO, 0, 0, &sa, &p),
		  0);
	ASSERT_EQ(lstat(lp(&x, "p"), &st), 0);
	ASSERT(S_ISFIFO(st.st_mode));
	ASSERT_EQ(nc_link(x.c, &x.root, &f.fh, &x.dir, "f2"), 0);
	ASSERT_EQ(stat(lp(&x, "f"), &st), 0);
	ASSERT_EQ(st.st_nlink, 2);
	ASSERT_EQ(nc_rename(x.c, &x.root, &x.dir, "f2", &d.fh, "moved"), 0);
	ASSERT_EQ(access(lp(&x, "f2"), F_OK), -1);
	ASSERT_EQ(access(lp(&x, "d/moved"), F_OK), 0);

	/* READDIRPLUS and READDIR */
	ASSERT_EQ(nc_readdir(x.c, &x.root, &x.dir, 0, cverf, true, count_names,
			     seen, &eof),
		  0);
	ASSERT(eof);
	ASSERT_CONTAINS(seen, "f/");
	ASSERT_CONTAINS(seen, "d/");
	ASSERT_CONTAINS(seen, "l/");
	ASSERT_CONTAINS(seen, "p/");
	seen[0] = '\0';
	memset(cverf, 0, sizeof(cverf));
	ASSERT_EQ(nc_readdir(x.c, &x.root, &d.fh, 0, cverf, false, count_names,
			     seen, &eof),
		  0);
	ASSERT_CONTAINS(seen, "moved/");

	/* REMOVE, RMDIR */
	ASSERT_EQ(nc_remove(x.c, &x.root, &d.fh, "moved"), 0);
	ASSERT_EQ(nc_rmdir(x.c, &x.root, &x.dir, "d"), 0);
	ASSERT_EQ(access(lp(&x, "d"), F_OK), -1);

	/* FSSTAT, FSINFO, PATHCONF */
	ASSERT_EQ(nc_fsstat(x.c, &x.root, &x.dir, &fss), 0);
	ASSERT_UINT64_GT(fss.tbytes, 0);
	ASSERT_UINT64_LE(fss.fbytes, fss.tbytes);
	ASSERT_EQ(nc_fsinfo(x.c, &x.root, &x.dir, &fsi), 0);
	ASSERT_GT(fsi.rtmax, 0);
	ASSERT_GT(fsi.wtmax, 0);
	ASSERT_EQ(nc_pathconf(x.c, &x.root, &x.dir, &pc), 0);
	ASSERT_GE(pc.name_max, 255);
	ctx_close(&x);
	return 0;
}

/*
 * Reads fh's first want bytes with nc_pread_inplace() and at most max
 * replies a call, as cat does: each call's replies in file order, each
 * within rsize, then the next call from where it stopped.  Returns the
 * bytes read into out; the end of the file must be seen.
 */
static size_t read_inplace_all(struct ctx *x, const struct nc_fh *fh,
			       size_t want, unsigned char *out, unsigned max)
{
	struct nc_rbuf b[4];
	size_t at = 0;
	bool eof = false;

	ASSERT_LE(max, ARRAY_SIZE(b));
	while (!eof) {
		size_t got = 0, sum = 0;
		unsigned n = 99;

		ASSERT_EQ(nc_pread_inplace(x->c, &x->root, fh, at, want - at, b,
					   max, &n, &got, &eof),
			  0);
		ASSERT_LE(n, max);
		for (unsigned i = 0; i < n; i++) {
			ASSERT_LE(b[i].len, nc_client_rsize(x->c));
			memcpy(out + at + sum, b[i].data, b[i].len);
			sum += b[i].len;
			nc_rbuf_release(&b[i]);
		}
		ASSERT_EQ(sum, got);
		at += got;
		if (at == want && !eof)
			break; /* all asked for, before the end */
		ASSERT(eof || got > 0);
	}
	return at;
}

/* Round trips around the READ and WRITE size boundaries. */
TEST_IMPL(client_data_sizes)
{
	struct ctx x;
	size_t rs, ws;
	char name[32];

	ctx_open(&x, "");
	rs = nc_client_rsize(x.c);
	ws = nc_client_wsize(x.c);
	const size_t sizes[] = { 0,	 1,  ws - 1, ws,	  ws + 1,
				 rs - 1, rs, rs + 1, 3 * ws + 17, 8u << 20 };

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t n = sizes[i], got = 0;
		unsigned char *in = malloc(n + 1), *out = malloc(n + 1);
		struct nc_sattr sa = mode(0644);
		struct nc_write_res wr;
		unsigned char verf[8];
		struct nc_entry f;
		char *local;
		bool eof;

		for (size_t k = 0; k < n; k++)
			in[k] = (unsigned char)(k * 31 + i);
		snprintf(name, sizeof(name), "size-%zu-%zu", i, n);
		ASSERT_EQ(nc_create(x.c, &x.root, &x.dir, name,
				    NC_CREATE_GUARDED, &sa, &f),
			  0);
		ASSERT_EQ(nc_pwrite(x.c, &x.root, &f.fh, 0, n, in, NC_UNSTABLE,
				    &wr),
			  0);
		ASSERT_EQ(nc_commit(x.c, &x.root, &f.fh, 0, 0, verf), 0);
		/* The bytes on the export. */
		{
			int fd = open(lp(&x, name), O_RDONLY);
			ssize_t r;

			ASSERT_GE(fd, 0);
			local = malloc(n + 1);
			r = read(fd, local, n + 1);
			close(fd);
			ASSERT_EQ(r, n);
			ASSERT_MEM_EQ(local, in, n);
			free(local);
		}
		ASSERT_EQ(nc_pread(x.c, &x.root, &f.fh, 0, n + 1, out, &got,
				   &eof),
			  0);
		ASSERT_EQ(got, n);
		ASSERT(eof);
		ASSERT_MEM_EQ(out, in, n);
		/* In place, one reply a call and two, to one byte past. */
		for (unsigned max = 1; max <= 2; max++) {
			memset(out, 0, n + 1);
			ASSERT_EQ(read_inplace_all(&x, &f.fh, n + 1, out, max),
				  n);
			ASSERT_MEM_EQ(out, in, n);
		}
		free(in);
		free(out);
	}
	ctx_close(&x);
	return 0;
}

/*
 * nconnect=4: four connections made at mount, calls spread over them (each
 * carries some of four concurrent streams), and every byte lands right.
 */
#define NC_STREAMS 4
#define NC_STREAM_BYTES (4u << 20)

struct nc_stream {
	struct ctx *x;
	unsigned i;
	int rc; /* 0, or the line that failed */
};

static void *nc_stream_run(void *arg)
{
	struct nc_stream *st = arg;
	struct task_attr attr = { "nconnect-stream", REGION_POLICY_REGION,
				  NULL };
	task_t *t = region_task_create(&attr);
	unsigned char *in = malloc(NC_STREAM_BYTES);
	unsigned char *out = malloc(NC_STREAM_BYTES);
	struct nc_sattr sa = mode(0644);
	struct nc_write_res wr;
	unsigned char verf[8];
	struct nc_entry f;
	char name[32];
	size_t got = 0;
	bool eof;

	region_task_enter(t);
	for (size_t k = 0; k < NC_STREAM_BYTES; k++)
		in[k] = (unsigned char)(k * 7 + st->i * 13 + k / 4096);
	snprintf(name, sizeof(name), "stream-%u", st->i);
	if (nc_create(st->x->c, &st->x->root, &st->x->dir, name,
		      NC_CREATE_GUARDED, &sa, &f))
		st->rc = __LINE__;
	else if (nc_pwrite(st->x->c, &st->x->root, &f.fh, 0, NC_STREAM_BYTES,
			   in, NC_UNSTABLE, &wr) ||
		 wr.count != NC_STREAM_BYTES)
		st->rc = __LINE__;
	else if (nc_commit(st->x->c, &st->x->root, &f.fh, 0, 0, verf))
		st->rc = __LINE__;
	else if (nc_pread(st->x->c, &st->x->root, &f.fh, 0, NC_STREAM_BYTES,
			  out, &got, &eof) ||
		 got != NC_STREAM_BYTES || memcmp(in, out, got) != 0)
		st->rc = __LINE__;
	region_task_leave(t);
	region_task_put(t);
	free(in);
	free(out);
	return NULL;
}

TEST_IMPL(client_nconnect)
{
	uint64_t carried[NC_NCONNECT_MAX];
	struct nc_stream st[NC_STREAMS];
	pthread_t th[NC_STREAMS];
	struct nc_stats stats;
	uint64_t one;
	struct ctx x;

	ctx_open(&x, "");
	ASSERT_EQ(nc_client_connections(x.c, carried, NC_NCONNECT_MAX), 1);
	nc_client_stats(x.c, &stats);
	one = stats.connects; /* MOUNT's and the one NFS connection */
	ctx_close(&x);

	ctx_open(&x, "nconnect=4");
	nc_client_stats(x.c, &stats);
	/* All four at mount, as Linux connects them. */
	ASSERT_UINT64_EQ(stats.connects, one + 3);
	ASSERT_EQ(nc_client_connections(x.c, carried, NC_NCONNECT_MAX), 4);
	for (unsigned i = 0; i < NC_STREAMS; i++) {
		st[i] = (struct nc_stream){ &x, i, 0 };
		ASSERT_EQ(pthread_create(&th[i], NULL, nc_stream_run, &st[i]),
			  0);
	}
	for (unsigned i = 0; i < NC_STREAMS; i++) {
		pthread_join(th[i], NULL);
		if (st[i].rc)
			TEST__FAIL("stream %u failed at line %d", i, st[i].rc);
	}
	ASSERT_EQ(nc_client_connections(x.c, carried, NC_NCONNECT_MAX), 4);
	for (unsigned i = 0; i < 4; i++)
		if (carried[i] == 0)
			TEST__FAIL("connection %u carried no call", i);
	/* The bytes on the export, each file its own pattern. */
	for (unsigned i = 0; i < NC_STREAMS; i++) {
		unsigned char *local = malloc(NC_STREAM_BYTES + 1);
		char name[32];
		ssize_t r;
		int fd;

		snprintf(name, sizeof(name), "stream-%u", i);
		fd = open(lp(&x, name), O_RDONLY);
		ASSERT_GE(fd, 0);
		r = read(fd, local, NC_STREAM_BYTES + 1);
		close(fd);
		ASSERT_EQ(r, NC_STREAM_BYTES);
		for (size_t k = 0; k < NC_STREAM_BYTES; k += 4093)
			ASSERT_EQ(local[k],
				  (unsigned char)(k * 7 + i * 13 + k / 4096));
		free(local);
	}
	nc_client_stats(x.c, &stats);
	ASSERT_UINT64_EQ(stats.connects, one + 3); /* none lost, none redone */
	ctx_close(&x);
	return 0;
}

/* NFS errors arrive as the errno a local filesystem would give. */
TEST_IMPL(client_errors)
{
	struct nc_sattr sa = mode(0600);
	struct nc_entry f, d, e;
	struct nc_write_res wr;
	char buf[16];
	uint32_t got;
	struct ctx x;
	bool eof;

	ctx_open(&x, "");
	ASSERT_EQ(nc_lookup(x.c, &x.root, &x.dir, "missing", &e), -ENOENT);
	ASSERT_EQ(nc_remove(x.c, &x.root, &x.dir, "missing"), -ENOENT);
	ASSERT_EQ(nc_create(x.c, &x.root, &x.dir, "secret", NC_CREATE_GUARDED,
			    &sa, &f),
		  0);
	ASSERT_EQ(nc_write(x.c, &x.root, &f.fh, 0, 6, "secret", NC_FILE_SYNC,
			   &wr, NULL),
		  0);
	ASSERT_EQ(nc_create(x.c, &x.root, &x.dir, "secret", NC_CREATE_GUARDED,
			    &sa, &e),
		  -EEXIST);
	ASSERT_EQ(nc_lookup(x.c, &x.root, &f.fh, "x", &e), -ENOTDIR);
	sa = mode(0755);
	ASSERT_EQ(nc_mkdir(x.c, &x.root, &x.dir, "d", &sa, &d), 0);
	ASSERT_EQ(nc_mkdir(x.c, &x.root, &x.dir, "d", &sa, &e), -EEXIST);
	sa = mode(0644);
	ASSERT_EQ(nc_create(x.c, &x.root, &d.fh, "inside", NC_CREATE_GUARDED,
			    &sa, &e),
		  0);
	ASSERT_EQ(nc_rmdir(x.c, &x.root, &x.dir, "d"), -ENOTEMPTY);

	/* A non-root caller: root's 0600 file and root's 0755 directory. */
	ASSERT_EQ(nc_read(x.c, &x.user, &f.fh, 0, sizeof(buf), buf, &got, &eof,
			  NULL),
		  -EACCES);
	{
		struct nc_rbuf b[2];
		unsigned n = 99;
		size_t pgot = 99;

		ASSERT_EQ(nc_pread_inplace(x.c, &x.user, &f.fh, 0, 3u << 20, b,
					   2, &n, &pgot, &eof),
			  -EACCES);
		ASSERT_EQ(n, 0);
		ASSERT_EQ(pgot, 0);
		ASSERT(!eof);
	}
	ASSERT_EQ(nc_create(x.c, &x.user, &d.fh, "nope", NC_CREATE_GUARDED, &sa,
			    &e),
		  -EACCES);
	ASSERT_EQ(nc_remove(x.c, &x.user, &d.fh, "inside"), -EACCES);
	ASSERT_EQ(access(lp(&x, "d/inside"), F_OK), 0);
	ctx_close(&x);
	return 0;
}

/* Each caller acts as itself: a file user 1000 creates is 1000's. */
TEST_IMPL(client_caller_owns_what_it_creates)
{
	struct nc_sattr sa = mode(0644);
	struct nc_entry f;
	struct stat st;
	struct ctx x;

	ctx_open(&x, "");
	ASSERT_EQ(nc_create(x.c, &x.user, &x.dir, "mine", NC_CREATE_GUARDED,
			    &sa, &f),
		  0);
	ASSERT_EQ(stat(lp(&x, "mine"), &st), 0);
	ASSERT_EQ(st.st_uid, 1000);
	ASSERT_EQ(st.st_gid, 1000);
	ASSERT_EQ(f.attr.uid, 1000);
	ctx_close(&x);
	return 0;
}

TEST_IMPL(client_mount_errors)
{
	struct task_attr attr = { "mount-errors", REGION_POLICY_REGION, NULL };
	char opts[128], err[512];
	struct nc_cred cred;
	struct nc_opts o;
	struct nc_fh fh;
	nc_client_t *c;
	struct test_server e;
	task_t *t;

	testenv_server(&e);
	t = region_task_create(&attr);
	region_task_enter(t);
	nc_cred_self(&cred);

	/* A path the server does not export. */
	nc_opts_init(&o);
	snprintf(opts, sizeof(opts), "port=%u,mountport=%u", e.nfs_port,
		 e.mount_port);
	ASSERT_EQ(nc_opts_parse(&o, opts, NULL, NULL, err, sizeof(err)), 0);
	ASSERT_EQ(nc_client_create(e.server, &o, &c, err, sizeof(err)), 0);
	err[0] = '\0';
	ASSERT_NE(nc_client_mount(c, "/not/exported", &cred, &fh, err,
				  sizeof(err)),
		  0);
	ASSERT_CONTAINS(err, "/not/exported");
	nc_client_destroy(c);

	/* Nothing listening, soft: a clear error at once. */
	nc_opts_init(&o);
	ASSERT_EQ(nc_opts_parse(&o,
				"soft,timeo=10,retrans=1,port=1,mountport=1",
				NULL, NULL, err, sizeof(err)),
		  0);
	ASSERT_EQ(nc_client_create(e.server, &o, &c, err, sizeof(err)), 0);
	err[0] = '\0';
	ASSERT_EQ(nc_client_mount(c, e.export_dir, &cred, &fh, err,
				  sizeof(err)),
		  -ECONNREFUSED);
	ASSERT_CONTAINS(err, "refused");
	nc_client_destroy(c);

	/* Malformed options are refused, naming the option. */
	nc_opts_init(&o);
	ASSERT_EQ(nc_opts_parse(&o, "timeo=abc", NULL, NULL, err, sizeof(err)),
		  -EINVAL);
	ASSERT_CONTAINS(err, "timeo");
	ASSERT_EQ(nc_opts_parse(&o, "bogus", NULL, NULL, err, sizeof(err)),
		  -EINVAL);
	ASSERT_CONTAINS(err, "bogus");
	/* send= takes a wait mode, is written back when not the default. */
	ASSERT_EQ(nc_opts_parse(&o, "send=maybe", NULL, NULL, err, sizeof(err)),
		  -EINVAL);
	ASSERT_CONTAINS(err, "option 'send' is interruptible, killable or "
			     "uninterruptible, not 'maybe'");
	nc_opts_format(&o, opts, sizeof(opts));
	ASSERT(strstr(opts, "send=") == NULL);
	ASSERT_EQ(nc_opts_parse(&o, "send=killable", NULL, NULL, err,
				sizeof(err)),
		  0);
	ASSERT_EQ(o.send_mode, TASK_KILLABLE);
	nc_opts_format(&o, opts, sizeof(opts));
	ASSERT_CONTAINS(opts, "send=killable");
	/*
	 * policy=linux: percall with Linux's choices, whatever intr, nointr
	 * or send= say before or after it; another policy= ends it.
	 */
	nc_opts_init(&o);
	ASSERT_EQ(nc_opts_parse(&o, "intr,policy=linux,send=interruptible",
				NULL, NULL, err, sizeof(err)),
		  0);
	ASSERT_EQ(o.policy, REGION_POLICY_PERCALL);
	ASSERT(o.linux_waits);
	ASSERT_EQ(o.intr_mode, NC_KILLABLE);
	ASSERT_EQ(o.send_mode, TASK_KILLABLE);
	ASSERT_EQ(nc_opts_parse(&o, "nointr", NULL, NULL, err, sizeof(err)), 0);
	ASSERT_EQ(o.intr_mode, NC_KILLABLE);
	ASSERT_EQ(nc_opts_parse(&o, "policy=region,intr", NULL, NULL, err,
				sizeof(err)),
		  0);
	ASSERT(!o.linux_waits);
	ASSERT_EQ(o.intr_mode, NC_INTR);
	ASSERT_EQ(nc_opts_parse(&o, "policy=bsd", NULL, NULL, err, sizeof(err)),
		  -EINVAL);
	ASSERT_CONTAINS(err, "percall, region, sigmask or linux, not 'bsd'");
	region_task_leave(t);
	region_task_put(t);
	return 0;
}

/* Major timeouts with the server stalled, timed as Linux's client times them. */

struct resumer {
	pid_t pid;
	unsigned ms;
};

/* The scenario: the server stays stopped r->ms, then goes on. */
static void *resume_later(void *arg)
{
	struct resumer *r = arg;

	test_sleep_ms(r->ms);
	kill(r->pid, SIGCONT);
	return NULL;
}

static int stalled_getattr(const char *opts, unsigned resume_ms, uint64_t *took)
{
	struct resumer rs;
	struct ctx x;
	struct nc_attr a;
	pthread_t th;
	uint64_t t0;
	int rc;

	ctx_open(&x, opts);
	rs.pid = x.env.ganesha;
	rs.ms = resume_ms;
	test_stop_process(x.env.ganesha);
	if (resume_ms)
		ASSERT_EQ(pthread_create(&th, NULL, resume_later, &rs), 0);
	t0 = region_now_ns();
	rc = nc_getattr(x.c, &x.root, &x.dir, &a);
	*took = region_now_ns() - t0;
	if (resume_ms)
		pthread_join(th, NULL);
	kill(x.env.ganesha, SIGCONT);
	ctx_close(&x);
	return rc;
}

TEST_IMPL(client_major_timeouts)
{
	uint64_t took;

	/*
	 * timeo=5 retrans=1: sent at 0 and 0.5 s, the major timeout at
	 * 0.5 + 0.5 = 1.0 s, as Linux 6.1 measured in the oracle (EIO after
	 * 1.02 s), not 0.5 + 1.0.
	 */
	ASSERT_EQ(stalled_getattr("soft,timeo=5,retrans=1", 0, &took), -EIO);
	ASSERT_UINT64_GE(took, 950000000u);
	ASSERT_UINT64_LT(took, 1400000000u);
	ASSERT_EQ(stalled_getattr("softerr,timeo=5,retrans=1", 0, &took),
		  -ETIMEDOUT);
	ASSERT_UINT64_GE(took, 950000000u);
	ASSERT_UINT64_LT(took, 1400000000u);
	/* Hard keeps going past the major timeout, then succeeds. */
	ASSERT_EQ(stalled_getattr("hard,timeo=5,retrans=1", 2500, &took), 0);
	ASSERT_UINT64_GE(took, 2400000000u);
	return 0;
}

/* Locks: the server's lock manager (NLM v4), two owners on one file. */

enum nlm_op { TEST, LOCK, LOCK_WAIT, CANCEL, UNLOCK };

/* An owner: its number and handle, as the daemon would make them. */
static struct nc_nlm_lock owner_lock(int owner, bool excl, uint64_t off,
				     uint64_t len)
{
	struct nc_nlm_lock lk;

	memset(&lk, 0, sizeof(lk));
	lk.svid = 1000 + owner;
	lk.oh_len = (unsigned)snprintf((char *)lk.oh, sizeof(lk.oh),
				       "client-test:%d:owner%d", (int)getpid(),
				       owner);
	lk.exclusive = excl;
	lk.off = off;
	lk.len = len;
	return lk;
}

TEST_IMPL(client_nlm_locks)
{
	/* One row a call, in order, on one file; len 0 is to the end. */
	static const struct {
		const char *what;
		int owner;
		enum nlm_op op;
		bool excl;
		uint64_t off, len;
		enum nc_nlm_stat want;
		int holder; /* TEST's DENIED: the owner in the way */
	} rows[] = {
		{ "A takes the whole file", 0, LOCK, true, 0, 0, NC_NLM_GRANTED,
		  0 },
		{ "B tests a byte of it", 1, TEST, false, 4096, 1,
		  NC_NLM_DENIED, 0 },
		{ "B may not read-lock it", 1, LOCK, false, 0, 10,
		  NC_NLM_DENIED, 0 },
		{ "A tests its own lock: no conflict", 0, TEST, true, 0, 0,
		  NC_NLM_GRANTED, 0 },
		{ "B queues a wait", 1, LOCK_WAIT, true, 0, 0, NC_NLM_BLOCKED,
		  0 },
		{ "B cancels it", 1, CANCEL, true, 0, 0, NC_NLM_GRANTED, 0 },
		{ "A lets go of the first 100 bytes", 0, UNLOCK, true, 0, 100,
		  NC_NLM_GRANTED, 0 },
		{ "B takes them", 1, LOCK, true, 0, 100, NC_NLM_GRANTED, 0 },
		{ "B may not take byte 100, A's", 1, LOCK, true, 100, 1,
		  NC_NLM_DENIED, 0 },
		{ "A tests byte 99: B's", 0, TEST, false, 99, 1, NC_NLM_DENIED,
		  1 },
		{ "A queues a wait for bytes 0-99", 0, LOCK_WAIT, true, 0, 100,
		  NC_NLM_BLOCKED, 0 },
		{ "B lets go", 1, UNLOCK, true, 0, 0, NC_NLM_GRANTED, 0 },
		{ "A's wait, sent again, is granted", 0, LOCK_WAIT, true, 0,
		  100, NC_NLM_GRANTED, 0 },
		{ "A downgrades all to a read lock", 0, LOCK, false, 0, 0,
		  NC_NLM_GRANTED, 0 },
		{ "B read-locks beside it", 1, LOCK, false, 0, 0,
		  NC_NLM_GRANTED, 0 },
		{ "B may not write-lock", 1, LOCK, true, 10, 10, NC_NLM_DENIED,
		  0 },
		{ "A unlocks all", 0, UNLOCK, false, 0, 0, NC_NLM_GRANTED, 0 },
		{ "B upgrades: A is gone", 1, LOCK, true, 10, 10,
		  NC_NLM_GRANTED, 0 },
		{ "B unlocks what it never held", 1, UNLOCK, true, 1 << 20, 1,
		  NC_NLM_GRANTED, 0 },
		{ "B unlocks all", 1, UNLOCK, true, 0, 0, NC_NLM_GRANTED, 0 },
	};
	struct nc_sattr sa = mode(0644);
	struct nc_entry e;
	struct ctx x;
	char opts[64], err[512];

	testenv_server(&x.env);
	snprintf(opts, sizeof(opts), "nlmport=%u", x.env.nlm_port);
	ctx_open(&x, opts);
	if (nc_nlm_start(x.c, err, sizeof(err)))
		TEST__FAIL("nc_nlm_start: %s", err);
	ASSERT_EQ(nc_create(x.c, &x.root, &x.dir, "f", NC_CREATE_GUARDED, &sa,
			    &e),
		  0);
	for (unsigned i = 0; i < ARRAY_SIZE(rows); i++) {
		struct nc_nlm_lock lk = owner_lock(rows[i].owner, rows[i].excl,
						   rows[i].off, rows[i].len);
		struct nc_nlm_lock holder, want_holder;
		enum nc_nlm_stat st = NC_NLM_FAILED;
		int rc = 0;

		switch (rows[i].op) {
		case TEST:
			rc = nc_nlm_test(x.c, &x.root, &e.fh, &lk, &st,
					 &holder);
			break;
		case LOCK:
		case LOCK_WAIT:
			rc = nc_nlm_lock(x.c, &x.root, &e.fh, &lk,
					 rows[i].op == LOCK_WAIT, false, &st);
			break;
		case CANCEL:
			rc = nc_nlm_cancel(x.c, &x.root, &e.fh, &lk, true, &st);
			break;
		case UNLOCK:
			rc = nc_nlm_unlock(x.c, &x.root, &e.fh, &lk, &st);
			break;
		}
		if (rc || st != rows[i].want)
			TEST__FAIL("%s: rc %d (%s), %s, not %s", rows[i].what,
				   rc, strerror(-rc), nc_nlm_stat_name(st),
				   nc_nlm_stat_name(rows[i].want));
		if (rows[i].op != TEST || st != NC_NLM_DENIED)
			continue;
		/* Who is in the way, and which range. */
		want_holder = owner_lock(rows[i].holder, false, 0, 0);
		ASSERT_EQ(holder.svid, want_holder.svid);
		ASSERT_EQ(holder.oh_len, want_holder.oh_len);
		ASSERT_MEM_EQ(holder.oh, want_holder.oh, holder.oh_len);
		ASSERT(holder.exclusive);
		ASSERT_UINT64_EQ(holder.off, 0);
		ASSERT_UINT64_EQ(holder.len, rows[i].holder ? 100 : 0);
	}
	/* As Linux maps them. */
	ASSERT_EQ(nc_nlm_errno(NC_NLM_DENIED), -EAGAIN);
	ASSERT_EQ(nc_nlm_errno(NC_NLM_DEADLCK), -EDEADLK);
	ASSERT_EQ(nc_nlm_errno(NC_NLM_DENIED_NOLOCKS), -ENOLCK);
	ASSERT_EQ(nc_nlm_errno(NC_NLM_STALE_FH), -ESTALE);
	ctx_close(&x);
	return 0;
}
