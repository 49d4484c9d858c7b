/*
 * Many clients, one export: two intrfs mounts of the same directory of the
 * export (two clients, A and B), every outcome checked through the other
 * mount and on the export itself.
 *
 * Close-to-open: what A wrote and closed, B sees whole at its next open,
 * whatever B had cached (attributes, pages, the name of a file A replaced),
 * by read(), mmap(), fstat() and the shell's tools; nocto trusts the cache
 * and sends no GETATTR at open.  Appends made in turns (one client's after
 * the other's has returned): O_APPEND writes from both clients keep every
 * line, in order, whatever B cached and however long between them, with
 * and without O_DIRECT, with files held open.  Appends made at once keep
 * every line under an fcntl() or flock() lock of the log around each, and
 * from processes of one client; from two clients without a lock they do
 * not (below).
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The whole of path by read() into buf (NUL-terminated); its length. */
static size_t read_all(const char *path, char *buf, size_t len)
{
	int fd = path_open(path, O_RDONLY, 0);
	size_t got = 0;
	ssize_t r;

	if (fd < 0)
		TEST__FAIL("open %s: %s", path, strerror(errno));
	while (got < len - 1 && (r = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)r;
	if (r < 0)
		TEST__FAIL("read %s: %s", path, strerror(errno));
	buf[got] = '\0';
	close(fd);
	return got;
}

/* The same through mmap() of the size fstat() gives after the open. */
static size_t read_mmap(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	void *p;

	if (fd < 0)
		TEST__FAIL("open %s: %s", path, strerror(errno));
	ASSERT_EQ(fstat(fd, &st), 0);
	ASSERT_LT(st.st_size, (off_t)len);
	buf[0] = '\0';
	if (st.st_size == 0) {
		close(fd);
		return 0;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT(p != MAP_FAILED);
	memcpy(buf, p, (size_t)st.st_size);
	buf[st.st_size] = '\0';
	munmap(p, (size_t)st.st_size);
	close(fd);
	return (size_t)st.st_size;
}

/* Appends s to path: open(O_APPEND), one write, close, as the shell's >>. */
static void append(const char *path, const char *s, int flags)
{
	size_t len = strlen(s);
	char *buf = NULL;
	int fd = open(path, O_WRONLY | O_APPEND | flags);

	if (fd < 0)
		TEST__FAIL("open %s O_APPEND: %s", path, strerror(errno));
	if (flags & O_DIRECT) {
		/* O_DIRECT through FUSE takes any alignment; a copy anyway. */
		ASSERT_EQ(posix_memalign((void **)&buf, 4096, 4096), 0);
		memcpy(buf, s, len);
	}
	ASSERT_EQ(write(fd, buf ? buf : s, len), (ssize_t)len);
	ASSERT_EQ(close(fd), 0);
	free(buf);
}

static void put(const char *path, const char *s)
{
	write_file(path, s, strlen(s));
}

/* Close-to-open. */

enum cto_prime { PRIME_STAT, PRIME_READ };
enum cto_change { REWRITE, REPLACE };
enum cto_see { SEE_READ, SEE_MMAP, SEE_FSTAT, SEE_SHELL };

TEST_IMPL(clients_close_to_open)
{
	static const struct {
		const char *what;
		enum cto_prime prime; /* what B cached before */
		enum cto_change change; /* what A did then */
		enum cto_see see; /* how B looks */
	} rows[] = {
		{ "B stat, A rewrites it longer, B read()", PRIME_STAT, REWRITE,
		  SEE_READ },
		{ "B stat, A rewrites it longer, B mmap()", PRIME_STAT, REWRITE,
		  SEE_MMAP },
		{ "B stat, A rewrites it longer, B fstat() after open",
		  PRIME_STAT, REWRITE, SEE_FSTAT },
		{ "B read (pages cached), A rewrites it longer, B read()",
		  PRIME_READ, REWRITE, SEE_READ },
		{ "B read (pages cached), A rewrites it longer, B mmap()",
		  PRIME_READ, REWRITE, SEE_MMAP },
		{ "B read, A rewrites it longer, B cat, tail, sha256sum",
		  PRIME_READ, REWRITE, SEE_SHELL },
		{ "B stat, A renames another file over it, B read()",
		  PRIME_STAT, REPLACE, SEE_READ },
		{ "B read, A renames another file over it, B fstat()",
		  PRIME_READ, REPLACE, SEE_FSTAT },
	};
	static const char first[] = "hello1\n", second[] = "longer content 3\n";
	char want_file[] = "/tmp/intrfs-test-see.XXXXXX";
	struct test_server s;
	struct mnt a, b;
	int wfd;

	srv_get(&s);
	/* What the shell's tools compare with: the export's bytes, a copy of
	 * the test's own (root's shell follows no path below the export). */
	wfd = mkstemp(want_file);
	ASSERT_GE(wfd, 0);
	ASSERT_EQ(write(wfd, second, strlen(second)), (ssize_t)strlen(second));
	close(wfd);
	/* Attribute caching on, as by default: the open must look. */
	mnt_start(&a, &s, "");
	mnt_start_shared(&b, &a, &s, "");
	for (unsigned i = 0; i < ARRAY_SIZE(rows); i++) {
		char name[16], tmp[24], buf[256], cmd[2048];
		struct stat st, want;
		size_t len = 0;

		snprintf(name, sizeof(name), "c%u", i);
		snprintf(tmp, sizeof(tmp), "c%u.new", i);
		put(mpath(&a, name), first);
		if (rows[i].prime == PRIME_STAT) {
			lstat_ok(mpath(&b, name), &st);
		} else {
			read_all(mpath(&b, name), buf, sizeof(buf));
			ASSERT_STR_EQ(buf, first);
		}
		if (rows[i].change == REWRITE) {
			put(mpath(&a, name), second);
		} else {
			put(mpath(&a, tmp), second);
			ASSERT_EQ(rename(mpath(&a, tmp), mpath(&a, name)), 0);
		}
		lstat_ok(lpath(&a, name), &want);
		ASSERT_EQ(want.st_size, (off_t)strlen(second));
		switch (rows[i].see) {
		case SEE_READ:
			len = read_all(mpath(&b, name), buf, sizeof(buf));
			break;
		case SEE_MMAP:
			len = read_mmap(mpath(&b, name), buf, sizeof(buf));
			break;
		case SEE_FSTAT: {
			int fd = open(mpath(&b, name), O_RDONLY);

			ASSERT_GE(fd, 0);
			ASSERT_EQ(fstat(fd, &st), 0);
			close(fd);
			if (st.st_size != want.st_size ||
			    st.st_ino != want.st_ino ||
			    st.st_mtim.tv_sec != want.st_mtim.tv_sec ||
			    st.st_mtim.tv_nsec != want.st_mtim.tv_nsec)
				TEST__FAIL(
					"%s: B's fstat after open: size %lld "
					"ino %llu mtime %lld.%09ld; the "
					"export's: size %lld ino %llu "
					"mtime %lld.%09ld",
					rows[i].what, (long long)st.st_size,
					(unsigned long long)st.st_ino,
					(long long)st.st_mtim.tv_sec,
					st.st_mtim.tv_nsec,
					(long long)want.st_size,
					(unsigned long long)want.st_ino,
					(long long)want.st_mtim.tv_sec,
					want.st_mtim.tv_nsec);
			continue;
		}
		case SEE_SHELL:
			/* Each tool opens the file itself. */
			snprintf(
				cmd, sizeof(cmd),
				"set -e; f='%s'; e='%s';"
				" test \"$(cat \"$f\" | wc -c)\" = %zu;"
				" test \"$(tail -c 9 \"$f\")\" = "
				"\"$(tail -c 9 \"$e\")\";"
				" test \"$(sha256sum <\"$f\")\" = "
				"\"$(sha256sum <\"$e\")\";"
				" cp \"$f\" \"$f.copy\"; cmp \"$f.copy\" \"$e\"",
				mpath(&b, name), want_file, strlen(second));
			if (system(cmd) != 0)
				TEST__FAIL("%s: cat, tail, sha256sum or cp on "
					   "B did not see the export's file",
					   rows[i].what);
			continue;
		}
		if (len != strlen(second) || strcmp(buf, second) != 0)
			TEST__FAIL("%s: B saw \"%s\" (%zu bytes), the export "
				   "holds \"%s\"",
				   rows[i].what, buf, len, second);
	}
	unlink(want_file);
	mnt_stop(&b);
	mnt_stop(&a);
	return 0;
}

/*
 * An open sends one GETATTR under cto (the default, and when cto comes
 * after nocto), none under nocto, which trusts the attribute cache.
 */
TEST_IMPL(clients_nocto)
{
	static const struct {
		const char *opts;
		uint64_t getattrs; /* per open of a file whose attributes
				      the kernel holds */
	} rows[] = {
		{ "", 1 },	    { "cto", 1 },	{ "nocto", 0 },
		{ "nocto,cto", 1 }, { "cto,nocto", 0 },
	};
	struct test_server s;
	struct mnt m;

	srv_get(&s);
	for (unsigned i = 0; i < ARRAY_SIZE(rows); i++) {
		struct stat st;
		uint64_t before;
		int fd;

		mnt_start(&m, &s, rows[i].opts);
		put(mpath(&m, "f"), "x\n");
		lstat_ok(mpath(&m, "f"), &st);
		before = mnt_proc_ops(&m, "GETATTR");
		for (int k = 0; k < 4; k++) {
			fd = open(mpath(&m, "f"), O_RDONLY);
			ASSERT_GE(fd, 0);
			ASSERT_EQ(close(fd), 0);
		}
		if (mnt_proc_ops(&m, "GETATTR") - before !=
		    4 * rows[i].getattrs)
			TEST__FAIL("-o '%s': 4 opens sent %llu GETATTRs, "
				   "not %llu",
				   rows[i].opts,
				   (unsigned long long)(mnt_proc_ops(
								&m, "GETATTR") -
							before),
				   (unsigned long long)(4 * rows[i].getattrs));
		mnt_stop(&m);
	}
	return 0;
}

/*
 * Listings: the kernel keeps a directory's listing while the directory has
 * not changed on the server, so a repeated listing sends no READDIRPLUS; a
 * file B creates, or one A creates or removes itself, shows at A's next
 * listing.
 */
static unsigned count_names(const char *dir, const char *want, bool *seen)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned n = 0;

	if (!d)
		TEST__FAIL("opendir %s: %s", dir, strerror(errno));
	*seen = false;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		n++;
		if (want && strcmp(e->d_name, want) == 0)
			*seen = true;
	}
	closedir(d);
	return n;
}

TEST_IMPL(clients_listing_cache)
{
	struct test_server s;
	struct mnt a, b;
	uint64_t rdp;
	bool seen;
	char name[32];

	srv_get(&s);
	mnt_start(&a, &s, "");
	mnt_start_shared(&b, &a, &s, "");
	ASSERT_EQ(mkdir(mpath(&a, "d"), 0755), 0);
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "d/f%03d", i);
		put(mpath(&a, name), "x\n");
	}
	ASSERT_EQ(count_names(mpath(&a, "d"), NULL, &seen), 300);
	/* Again, and again: from the kernel's copy. */
	rdp = mnt_proc_ops(&a, "READDIRPLUS") + mnt_proc_ops(&a, "READDIR");
	for (int k = 0; k < 3; k++)
		ASSERT_EQ(count_names(mpath(&a, "d"), NULL, &seen), 300);
	ASSERT_UINT64_EQ(mnt_proc_ops(&a, "READDIRPLUS") +
				 mnt_proc_ops(&a, "READDIR"),
			 rdp);
	/* Another client adds a file: A's next listing has it. */
	put(mpath(&b, "d/from-b"), "b\n");
	ASSERT_EQ(count_names(mpath(&a, "d"), "from-b", &seen), 301);
	ASSERT(seen);
	ASSERT_UINT64_GT(mnt_proc_ops(&a, "READDIRPLUS") +
				 mnt_proc_ops(&a, "READDIR"),
			 rdp);
	/* A removes one and makes one: both show at once. */
	ASSERT_EQ(unlink(mpath(&a, "d/f000")), 0);
	put(mpath(&a, "d/from-a"), "a\n");
	ASSERT_EQ(count_names(mpath(&a, "d"), "from-a", &seen), 301);
	ASSERT(seen);
	ASSERT_EQ(count_names(mpath(&a, "d"), "f000", &seen), 301);
	ASSERT(!seen);
	/* Another client removes one: gone from A's next listing. */
	ASSERT_EQ(unlink(mpath(&b, "d/from-a")), 0);
	ASSERT_EQ(count_names(mpath(&a, "d"), "from-a", &seen), 300);
	ASSERT(!seen);
	mnt_stop(&b);
	mnt_stop(&a);
	return 0;
}

/* Appends. */

TEST_IMPL(clients_append)
{
	static const struct {
		const char *what;
		unsigned delay_ms; /* between A's append and B's */
		int b_flags; /* B's open flags beside O_WRONLY|O_APPEND */
	} rows[] = {
		{ "B cached the file, A appends, B appends at once", 0, 0 },
		{ "B cached the file, A appends, B appends 3.5 s later (past "
		  "acregmin)",
		  3500, 0 },
		{ "B cached the file, A appends, B appends with O_DIRECT", 0,
		  O_DIRECT },
	};
	static const char want[] = "base\na1\nb1\n";
	struct test_server s;
	struct mnt a, b;

	srv_get(&s);
	mnt_start(&a, &s, "");
	mnt_start_shared(&b, &a, &s, "");
	for (unsigned i = 0; i < ARRAY_SIZE(rows); i++) {
		char name[16], buf[256];

		snprintf(name, sizeof(name), "f%u", i);
		put(mpath(&a, name), "base\n");
		read_all(mpath(&b, name), buf, sizeof(buf));
		ASSERT_STR_EQ(buf, "base\n");
		append(mpath(&a, name), "a1\n", 0);
		if (rows[i].delay_ms)
			test_sleep_ms(rows[i].delay_ms);
		append(mpath(&b, name), "b1\n", rows[i].b_flags);
		read_all(lpath(&a, name), buf, sizeof(buf));
		if (strcmp(buf, want) != 0)
			TEST__FAIL("%s: the export holds \"%s\", not \"%s\"",
				   rows[i].what, buf, want);
		read_all(mpath(&a, name), buf, sizeof(buf));
		ASSERT_STR_EQ(buf, want);
		read_all(mpath(&b, name), buf, sizeof(buf));
		ASSERT_STR_EQ(buf, want);
	}
	mnt_stop(&b);
	mnt_stop(&a);
	return 0;
}

/*
 * A log file two clients append to in turn, 10 lines each: opened for
 * each line (the shell's >>), and held open by each for all of its lines.
 * Every line is on the export, in the order written.
 */
TEST_IMPL(clients_append_log)
{
	struct test_server s;
	struct mnt a, b;

	srv_get(&s);
	mnt_start(&a, &s, "");
	mnt_start_shared(&b, &a, &s, "");
	for (int held = 0; held <= 1; held++) {
		const char *name = held ? "held.log" : "each.log";
		char want[512] = "", line[32], got[512];
		int fa = -1, fb = -1;

		put(mpath(&a, name), "");
		if (held) {
			fa = open(mpath(&a, name), O_WRONLY | O_APPEND);
			fb = open(mpath(&b, name), O_WRONLY | O_APPEND);
			ASSERT_GE(fa, 0);
			ASSERT_GE(fb, 0);
		}
		for (int k = 0; k < 20; k++) {
			const struct mnt *m = k % 2 ? &b : &a;
			int fd = k % 2 ? fb : fa;

			snprintf(line, sizeof(line), "%c%d\n",
				 k % 2 ? 'b' : 'a', k / 2);
			strcat(want, line);
			if (held)
				ASSERT_EQ(write(fd, line, strlen(line)),
					  (ssize_t)strlen(line));
			else
				append(mpath(m, name), line, 0);
		}
		if (held) {
			ASSERT_EQ(close(fa), 0);
			ASSERT_EQ(close(fb), 0);
		}
		read_all(lpath(&a, name), got, sizeof(got));
		if (strcmp(got, want) != 0)
			TEST__FAIL("%s: the export holds\n%s\nnot\n%s",
				   held ? "held open" : "opened per line", got,
				   want);
	}
	mnt_stop(&b);
	mnt_stop(&a);
	return 0;
}

/*
 * Appends at once.  Two clients appending to one log at the same moment
 * lose lines, and so does Linux's client: NFSv3 has no atomic append (the
 * GETATTR that finds the end and the WRITE are two calls), so what that
 * race leaves is measured (tests/bench/append), never asserted.  What
 * holds, and is pinned here: every line is kept when each append is made
 * under a whole-file fcntl() lock of the log or an flock() of it (the
 * server's lock manager's, which both clients ask; the flock() goes with
 * the RELEASE that FUSE sends after close() has returned, and the next
 * open file's lock stays), and when the appenders are processes of one
 * client (the kernel holds the file's inode lock across a write, and an
 * append is answered once its WRITE is on the server).  Writer K's lines
 * are "wK-NNNN" and 3*(K-1) dots: lines of different lengths, so that one
 * written over another leaves a torn line.
 */
#define APPEND_PAD 3
#define APPEND_WRITERS 4

/* What an appender locks the log with around each append. */
enum append_lock { APPEND_UNLOCKED, APPEND_FCNTL, APPEND_FLOCK };

/* Writer k's line n, its newline included, in buf; its length. */
static int append_line(char *buf, size_t len, unsigned k, unsigned n)
{
	return snprintf(buf, len, "w%u-%04u%.*s\n", k, n,
			(int)(APPEND_PAD * (k - 1)), "..................");
}

/*
 * Writer k, a child: waits for EOF on go_fd, then appends count lines to
 * path, each an open(O_APPEND), the lock, a write and a close (which lets
 * go of the lock).  Exits 0, or the number of the step that failed (no
 * ASSERT in a child).
 */
static void appender(const char *path, unsigned k, unsigned count,
		     enum append_lock lock, int go_fd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char line[32], c;

	while (read(go_fd, &c, 1) > 0)
		;
	for (unsigned i = 1; i <= count; i++) {
		int len = append_line(line, sizeof(line), k, i);
		int fd = open(path, O_WRONLY | O_APPEND);

		if (fd < 0)
			_exit(1);
		if ((lock == APPEND_FCNTL && fcntl(fd, F_SETLKW, &fl)) ||
		    (lock == APPEND_FLOCK && flock(fd, LOCK_EX)))
			_exit(2);
		if (write(fd, line, (size_t)len) != len)
			_exit(3);
		if (close(fd))
			_exit(4);
	}
	_exit(0);
}

/*
 * The log holds each of the writers' count lines once, each writer's in
 * the order written, and nothing else.
 */
static void check_log(const char *what, const char *path, unsigned writers,
		      unsigned count)
{
	unsigned last[APPEND_WRITERS + 1] = { 0 }, kept = 0, torn = 0;
	unsigned copies = 0, disorder = 0;
	bool *seen = calloc((size_t)writers * count, sizeof(*seen));
	char *buf, *end, bad[32] = "";
	ssize_t len = read_file(path, &buf);

	ASSERT_NOT_NULL(seen);
	ASSERT_GE(len, 0);
	for (char *line = buf; line < buf + len; line = end + 1) {
		char copy[32], want[32];
		unsigned k = 0, n = 0;
		size_t l;
		int wl = 0;

		end = memchr(line, '\n', (size_t)(buf + len - line));
		if (!end)
			end = buf + len;
		l = (size_t)(end - line);
		/* What the line says it is, parsed from a terminated copy. */
		snprintf(copy, sizeof(copy), "%.*s",
			 (int)(l < sizeof(copy) ? l : sizeof(copy) - 1), line);
		if (sscanf(copy, "w%u-%u", &k, &n) == 2 && k >= 1 &&
		    k <= writers && n >= 1 && n <= count)
			wl = append_line(want, sizeof(want), k, n);
		if (!wl || end == buf + len || l + 1 != (size_t)wl ||
		    memcmp(line, want, (size_t)wl) != 0) {
			if (!torn++)
				snprintf(bad, sizeof(bad), "%s", copy);
			continue;
		}
		if (seen[(k - 1) * count + n - 1]) {
			copies++;
			continue;
		}
		seen[(k - 1) * count + n - 1] = true;
		kept++;
		if (n < last[k])
			disorder++; /* after a later line of its writer */
		else
			last[k] = n;
	}
	free(buf);
	free(seen);
	if (kept != writers * count || torn || copies || disorder)
		TEST__FAIL("%s: the log holds %u of the %u lines written, %u "
			   "torn (the first: \"%s\"), %u copies, %u out of "
			   "order",
			   what, kept, writers * count, torn, bad, copies,
			   disorder);
}

TEST_IMPL(clients_append_at_once)
{
	static const struct {
		const char *what;
		unsigned mounts; /* writer K appends through mount (K-1) % mounts */
		unsigned writers, count;
		enum append_lock lock; /* around each append */
	} rows[] = {
		{ "4 processes of one client, no lock", 1, 4, 100,
		  APPEND_UNLOCKED },
		{ "2 clients, 2 processes each, an fcntl() lock around each "
		  "append",
		  2, 4, 15, APPEND_FCNTL },
		{ "2 clients, 2 processes each, flock() around each append", 2,
		  4, 15, APPEND_FLOCK },
	};
	struct test_server s;
	struct mnt m[2];

	srv_get(&s);
	mnt_start(&m[0], &s, "");
	mnt_start_shared(&m[1], &m[0], &s, "");
	for (unsigned i = 0; i < ARRAY_SIZE(rows); i++) {
		pid_t pids[APPEND_WRITERS];
		char name[16];
		int go[2];

		snprintf(name, sizeof(name), "log%u", i);
		put(mpath(&m[0], name), "");
		ASSERT_EQ(pipe(go), 0);
		for (unsigned k = 1; k <= rows[i].writers; k++) {
			const struct mnt *via = &m[(k - 1) % rows[i].mounts];

			pids[k - 1] = fork();
			ASSERT_GE(pids[k - 1], 0);
			if (pids[k - 1] == 0) {
				close(go[1]);
				appender(mpath(via, name), k, rows[i].count,
					 rows[i].lock, go[0]);
			}
		}
		close(go[0]);
		close(go[1]); /* all at once */
		for (unsigned k = 1; k <= rows[i].writers; k++) {
			int status;

			ASSERT_EQ(waitpid(pids[k - 1], &status, 0),
				  pids[k - 1]);
			if (!WIFEXITED(status) || WEXITSTATUS(status))
				TEST__FAIL("%s: writer %u failed (status "
					   "0x%x: 1 open, 2 lock, 3 write, 4 "
					   "close)",
					   rows[i].what, k, status);
		}
		check_log(rows[i].what, lpath(&m[0], name), rows[i].writers,
			  rows[i].count);
	}
	mnt_stop(&m[1]);
	mnt_stop(&m[0]);
	return 0;
}
