/*
 * intrfsctl on a live mount: the request a stalled server holds is seen
 * with its caller, wait mode and region, then with the interrupt its
 * handled SIGINT raised and the region holds back; the counters count it;
 * the policy is switched for later requests; another user is refused, and
 * a directory that is not an intrfs mount is named as such; mountstats
 * reads as Linux's /proc/self/mountstats, its opts line included.
 */
#include "../../fusefs/ctl.h"
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef INTRFSCTL_BIN
#error "INTRFSCTL_BIN: the path of intrfsctl, from tests/meson.build"
#endif

/*
 * Runs intrfsctl with args (NULL-terminated) as uid (0: as root), its
 * stdout and stderr into out; kills it after timeout_ms.  Returns its exit
 * status (-1: killed), how long it ran in *ns when ns is not NULL.
 */
/*
 * The binaries another user runs: the build tree's, unless a test copied
 * them where that user may execute them (the tree may be below a directory
 * only root may search, as a fresh clone in a mktemp -d).
 */
static const char *ctl_bin = INTRFSCTL_BIN, *daemon_bin;

static int ctl_run(char *out, size_t len, const char *const *args, uid_t uid,
		   unsigned timeout_ms, uint64_t *ns)
{
	const char *argv[8] = { ctl_bin };
	uint64_t t0 = region_now_ns(), end = t0 + timeout_ms * 1000000ull;
	size_t n = 1, got = 0;
	int p[2], st;
	pid_t pid;

	for (; *args && n < 7; args++)
		argv[n++] = *args;
	ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		if (uid && (setgid(uid) < 0 || setuid(uid) < 0))
			_exit(126);
		execv(ctl_bin, (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		uint64_t now = region_now_ns();
		struct pollfd pf = { p[0], POLLIN, 0 };
		ssize_t r;

		if (now >= end) {
			kill(pid, SIGKILL);
			break;
		}
		if (poll(&pf, 1, (int)((end - now) / 1000000) + 1) <= 0)
			continue;
		r = read(p[0], out + got, len - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	out[got] = '\0';
	close(p[0]);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	if (ns)
		*ns = region_now_ns() - t0;
	if (!WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* intrfsctl with args, as root; 30 s at most. */
static int ctl(char *out, size_t len, const char *const *args)
{
	int rc = ctl_run(out, len, args, 0, 30000, NULL);

	if (rc < 0)
		TEST__FAIL("intrfsctl did not answer within 30 s: %s", out);
	return rc;
}

/*
 * The control socket in dir that the daemon pid serves (its peer's
 * credentials name it), into out: true when there is one.
 */
static bool ctl_socket_of(const char *dir, pid_t pid, char *out, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool found = false;

	while (d && !found && (e = readdir(d))) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		struct ucred cred;
		socklen_t cl = sizeof(cred);
		int fd;

		if (!strstr(e->d_name, ".sock") ||
		    strlen(dir) + strlen(e->d_name) + 2 > sizeof(a.sun_path))
			continue;
		strcat(strcat(strcpy(a.sun_path, dir), "/"), e->d_name);
		/*
		 * Without waiting: a daemon of another test that does not
		 * accept (its backlog full) must not hold this one.
		 */
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    0);
		if (fd >= 0 &&
		    connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
		    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0 &&
		    cred.pid == pid) {
			snprintf(out, len, "%s", a.sun_path);
			found = true;
		}
		if (fd >= 0)
			close(fd);
	}
	if (d)
		closedir(d);
	return found;
}

/* The control socket of m's daemon, once it listens (5 s). */
static void ctl_socket(const struct mnt *m, char *out, size_t len)
{
	for (int i = 0; i < 250; i++) {
		if (ctl_socket_of(CTL_DIR, m->pid, out, len))
			return;
		test_sleep_ms(20);
	}
	TEST__FAIL("the daemon of %s (pid %d) has no control socket in %s",
		   m->dir, (int)m->pid, CTL_DIR);
}

/* m's file f, len zero bytes, written on the export. */
static void put_file(const struct mnt *m, size_t len)
{
	char *buf = calloc(1, len);

	ASSERT_NOT_NULL(buf);
	write_file(lpath(m, "f"), buf, len);
	free(buf);
}

/*
 * A reader of 64 KiB of m's file f (O_DIRECT, a SIGINT handler) whose READ
 * the stalled server s holds: the server stays stopped.
 */
static void stalled_read(struct probe *p, const struct mnt *m,
			 const struct test_server *s)
{
	uint64_t unread;

	probe_start(p, PROBE_READ, mpath(m, "f"), 65536, true, 0);
	probe_wait_ready(p);
	srv_stall(s);
	unread = srv_unread(s);
	probe_go(p);
	probe_wait_blocked(p);
	srv_wait_call(s, unread);
}

/*
 * In a child running as another user: asks the control socket sock for
 * stats and returns 0 if the daemon refused, naming who may ask.
 */
static int ask_refused(const char *sock)
{
	static const char want[] =
		"error\nonly root and the user who mounted (uid 0)";
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char ans[512];
	size_t got = 0;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	signal(SIGPIPE, SIG_IGN);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return 1;
	(void)!write(fd, "stats\n", 6);
	for (ssize_t r; got + 1 < sizeof(ans) &&
			(r = read(fd, ans + got, sizeof(ans) - 1 - got)) > 0;)
		got += (size_t)r;
	ans[got] = '\0';
	close(fd);
	return strncmp(ans, want, sizeof(want) - 1) == 0 ? 0 : 2;
}

/* intrfsctl MNT tasks, until what shows (5 s), into out. */
static void tasks_show(const struct mnt *m, const char *what, char *out,
		       size_t len)
{
	for (int i = 0; i < 250; i++) {
		ASSERT_EQ(ctl(out, len,
			      (const char *const[]){ m->dir, "tasks", NULL }),
			  0);
		if (strstr(out, what))
			return;
		test_sleep_ms(20);
	}
	TEST__FAIL("intrfsctl tasks never showed %s; last:\n%s", what, out);
}

TEST_IMPL(ctl_tasks_stats_policy)
{
	static char out[65536];
	struct test_server s;
	struct probe p;
	struct probe_result r;
	struct mnt m;
	char want[64], opts[200], trace[2][100], sock[108], *got;
	char dir[] = "/tmp/intrfs-test-ctl.XXXXXX";
	int status;

	srv_get(&s);
	ASSERT_NOT_NULL(mkdtemp(dir));
	for (int i = 0; i < 2; i++)
		snprintf(trace[i], sizeof(trace[i]), "%s/trace.%d.json", dir,
			 i);
	snprintf(opts, sizeof(opts), "hard,killable,actimeo=60,trace=%s",
		 trace[0]);
	mnt_start(&m, &s, opts);
	put_file(&m, 1 << 20);

	/* Nothing in flight. */
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ m.dir, "tasks", NULL }),
		  0);
	ASSERT_CONTAINS(
		out,
		"\"policy\":\"region\",\"mode\":\"killable\",\"tasks\":[]");

	/* A read the stalled server holds: its caller, wait and region. */
	stalled_read(&p, &m, &s);
	snprintf(want, sizeof(want), "\"pid\":%d", (int)p.pid);
	tasks_show(&m, want, out, sizeof(out));
	ASSERT_CONTAINS(out, "\"op\":\"read\"");
	ASSERT_CONTAINS(out,
			"\"mode\":\"killable\",\"effective\":\"killable\"");
	ASSERT_CONTAINS(out, "\"reason\":\"fuse request\"");
	ASSERT_CONTAINS(out, "\"pending\":\"none\"");
	/* Its RPC, as Linux's rpc_clnt tasks view shows one. */
	ASSERT_CONTAINS(out, "\"rpcs\":[{\"xid\":\"0x");
	ASSERT_CONTAINS(out, "\"proc\":\"READ\",\"transmissions\":1,"
			     "\"awaiting_reply\":true}");

	/* SIGINT with a handler: raised, held back by the region. */
	ASSERT_EQ(kill(p.pid, SIGINT), 0);
	tasks_show(&m, "\"deferred\":\"normal\"", out, sizeof(out));
	ASSERT_CONTAINS(out, "\"pending\":\"normal\"");
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ m.dir, "tasks", "--table", NULL }),
		  0);
	ASSERT_CONTAINS(out, "1 request in flight on ");
	ASSERT_CONTAINS(out, "normal deferred");
	srv_resume(&s);
	ASSERT(probe_wait(&p, 20000, &r, &status));
	ASSERT_EQ(r.ret, 65536);
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ m.dir, "stats", NULL }),
		  0);
	ASSERT_CONTAINS(out, "\"daemon\":{\"interrupts\":1,");
	/* The transport line: connects, sends, receives, idle time. */
	ASSERT_CONTAINS(out, "\"connects\":");
	ASSERT_CONTAINS(out, "\"receives\":");
	ASSERT_CONTAINS(out, "\"idle_ns\":");
	ASSERT_CONTAINS(out, "\"eintr_replies\":0");
	ASSERT_CONTAINS(out, "\"deferred_delivered\":");
	ASSERT_CONTAINS(out, "\"deferral_hist\":{\"<1ms\":");
	/* Per procedure, as mountstats: the READ counted and timed. */
	ASSERT_CONTAINS(out, "\"procedures\":{");
	ASSERT_CONTAINS(out, "\"READ\":{\"ops\":");

	/* The trace from the mount on: the read's region and interrupt. */
	ASSERT_GT(read_file(trace[0], &got), 0);
	ASSERT_CONTAINS(got, "\"ev\":\"region_begin\",\"task\":");
	ASSERT_CONTAINS(got, "\"reason\":\"fuse request\"");
	ASSERT_CONTAINS(got, "\"ev\":\"interrupt_raised\"");
	ASSERT_CONTAINS(got, "\"ev\":\"interrupt_deferred\"");
	ASSERT_CONTAINS(got, "\"ev\":\"reply\",\"prog\":100003");
	ASSERT_CONTAINS(got, "\"proc\":\"READ\"");
	free(got);
	/* Switched to another file live, then off. */
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ m.dir, "trace", "on", trace[1],
					     NULL }),
		  0);
	ASSERT_CONTAINS(out, "{\"trace\":\"/tmp/intrfs-test-ctl.");
	ASSERT_EQ(access(mpath(&m, "nothing-here"), F_OK), -1);
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ m.dir, "trace", "off", NULL }),
		  0);
	ASSERT_GT(read_file(trace[1], &got), 0);
	ASSERT_CONTAINS(got, "\"proc\":\"LOOKUP\"");
	free(got);
	/* Not on the mount (each line would be a request to trace). */
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ m.dir, "trace", "on",
					     mpath(&m, "t.json"), NULL }),
		  1);
	ASSERT_CONTAINS(out, "it is on this mount");
	unlink(trace[0]);
	unlink(trace[1]);
	rmdir(dir);

	/* Later requests run under the policy set now. */
	ASSERT_EQ(
		ctl(out, sizeof(out),
		    (const char *const[]){ m.dir, "policy", "percall", NULL }),
		0);
	ASSERT_CONTAINS(out, "{\"policy\":\"percall\",\"was\":\"region\"}");
	stalled_read(&p, &m, &s);
	snprintf(want, sizeof(want), "\"pid\":%d", (int)p.pid);
	tasks_show(&m, want, out, sizeof(out));
	ASSERT_CONTAINS(out, "\"op\":\"read\"");
	ASSERT_CONTAINS(out, "\"policy\":\"percall\",\"waiting\":true");
	srv_resume(&s);
	ASSERT(probe_wait(&p, 20000, &r, &status));
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ m.dir, "policy", "fast", NULL }),
		  1);
	ASSERT_CONTAINS(out, "the policy is percall, region, sigmask or linux, "
			     "not 'fast'");

	/*
	 * Another user is refused (asking the socket as intrfsctl does: the
	 * build tree may be closed to that user); a plain directory is not a
	 * mount.
	 */
	ctl_socket(&m, sock, sizeof(sock));
	ASSERT_EQ(as_user(USER_UID, USER_GID, NULL, 0, ask_refused, sock), 0);
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ m.local, "tasks", NULL }),
		  2);
	ASSERT_CONTAINS(out, "is not an intrfs mount (not a mount point)");
	mnt_stop(&m);
	/* Gone with the mount. */
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ m.dir, "tasks", NULL }),
		  2);
	return 0;
}

/*
 * The watchdog switched on live reports a request blocked uninterruptibly;
 * kill -USR1 prints what tasks --table prints.
 */
TEST_IMPL(ctl_watchdog_and_usr1)
{
	static char out[4096];
	struct test_server s;
	struct probe p;
	struct mnt m;
	char log[32768];
	int status;

	srv_get(&s);
	mnt_start(&m, &s, "hard,nointr,hung_timeout=0");
	put_file(&m, 65536);
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ m.dir, "watchdog", "1", NULL }),
		  0);
	ASSERT_CONTAINS(out, "{\"watchdog_s\":1}");
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ m.dir, "watchdog", "soon", NULL }),
		  1);
	ASSERT_CONTAINS(out, "watchdog takes seconds");
	stalled_read(&p, &m, &s);
	mnt_wait_log(&m, "blocked uninterruptibly", 5000);
	ASSERT_EQ(kill(m.pid, SIGUSR1), 0);
	mnt_wait_log(&m, "1 request in flight on ", 5000);
	mnt_read_log(&m, log, sizeof(log));
	ASSERT_CONTAINS(log, "uninterruptible region \"fuse request\"");
	srv_resume(&s);
	ASSERT(probe_wait(&p, 20000, NULL, &status));
	mnt_stop(&m);
	return 0;
}

/* A stalled read gets SIGINT (a handler): returns whether EINTR came. */
static bool read_interrupted(const struct mnt *m, const struct test_server *s)
{
	struct probe p;
	struct probe_result r;
	int status;
	bool early;

	stalled_read(&p, m, s);
	ASSERT_EQ(kill(p.pid, SIGINT), 0);
	early = probe_wait(&p, 1000, &r, &status);
	srv_resume(s);
	if (!early)
		ASSERT(probe_wait(&p, 20000, &r, &status));
	ASSERT_EQ(r.sigs, 1);
	if (early) {
		ASSERT_EQ(r.ret, -1);
		ASSERT_EQ(r.err, EINTR);
	} else {
		ASSERT_EQ(r.ret, 65536);
	}
	return early;
}

/* The mount's mode switched live: intr lets SIGINT through, killable not. */
TEST_IMPL(ctl_mode_switch)
{
	static char out[4096];
	struct test_server s;
	struct mnt m;

	srv_get(&s);
	mnt_start(&m, &s, "hard,killable");
	put_file(&m, 65536);
	ASSERT(!read_interrupted(&m, &s));
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ m.dir, "mode", "intr", NULL }),
		  0);
	ASSERT_CONTAINS(out, "{\"mode\":\"intr\",\"was\":\"killable\"}");
	ASSERT(read_interrupted(&m, &s));
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ m.dir, "mode", "killable", NULL }),
		  0);
	ASSERT(!read_interrupted(&m, &s));
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ m.dir, "mode", "soft", NULL }),
		  1);
	ASSERT_CONTAINS(out,
			"the mode is killable, intr or nointr, not 'soft'");
	mnt_stop(&m);
	return 0;
}

/* Connections an unprivileged user holds open on the socket. */
#define FLOOD_CONNS 32
#define NOBODY 65534

/*
 * A child that connects FLOOD_CONNS times to sock as NOBODY, sends
 * nothing and holds every connection until killed; *ready gets a byte
 * once it has them all (or after 2 s, with those it got: a daemon that
 * takes one at a time leaves the rest in its backlog).
 */
static pid_t flood_start(const char *sock, int *ready)
{
	int p[2];
	pid_t pid;

	ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		uint64_t end = region_now_ns() + 2000000000ull;
		unsigned n = 0;

		signal(SIGABRT, SIG_DFL);
		/* Set after setuid(), which clears it: gone with the test. */
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 ||
		    setuid(NOBODY) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
			_exit(2);
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock);
		while (n < FLOOD_CONNS && region_now_ns() < end) {
			int fd =
				socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);

			if (fd >= 0 && connect(fd, (struct sockaddr *)&a,
					       sizeof(a)) == 0) {
				n++;
				continue;
			}
			if (fd >= 0)
				close(fd);
			usleep(10000);
		}
		if (write(p[1], "r", 1) != 1)
			_exit(3);
		for (;;)
			pause();
	}
	close(p[1]);
	*ready = p[0];
	return pid;
}

/*
 * Root's intrfsctl answers at once while an unprivileged user holds 32
 * connections to the control socket and root itself holds idle ones: the
 * user is refused at accept, and no client waits behind another.
 */
TEST_IMPL(ctl_flood_root_answers)
{
	static char out[65536];
	struct test_server s;
	struct mnt m;
	struct pollfd pf;
	char sock[108], c;
	uint64_t ns, worst = 0;
	int ready, idle[4], st;
	pid_t flood;

	srv_get(&s);
	mnt_start(&m, &s, "");
	ctl_socket(&m, sock, sizeof(sock));
	flood = flood_start(sock, &ready);
	pf = (struct pollfd){ ready, POLLIN, 0 };
	ASSERT_EQ(poll(&pf, 1, 10000), 1);
	ASSERT_EQ(read(ready, &c, 1), 1);
	/* Root's own connections that never ask hold nobody either. */
	for (unsigned i = 0; i < ARRAY_SIZE(idle); i++) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };

		snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock);
		idle[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
		ASSERT_GE(idle[i], 0);
		connect(idle[i], (struct sockaddr *)&a, sizeof(a));
	}
	for (int i = 0; i < 5; i++) {
		int rc = ctl_run(out, sizeof(out),
				 (const char *const[]){ m.dir, "stats", NULL },
				 0, 20000, &ns);

		if (rc != 0)
			TEST__FAIL("intrfsctl stats under the flood: exit %d "
				   "after %.3f s: %s",
				   rc, ns / 1e9, out);
		ASSERT_CONTAINS(out, "\"transport\":{");
		if (ns > worst)
			worst = ns;
	}
	fprintf(stderr, "# root's stats under the flood: at most %.1f ms\n",
		worst / 1e6);
	ASSERT_UINT64_LT(worst, 100000000ull);
	kill(flood, SIGKILL);
	ASSERT_EQ(waitpid(flood, &st, 0), flood);
	close(ready);
	for (unsigned i = 0; i < ARRAY_SIZE(idle); i++)
		close(idle[i]);
	mnt_stop(&m);
	return 0;
}

/* Whether m's daemon has a control socket, waiting up to 5 s for it. */
static bool ctl_socket_within(const struct mnt *m, char *out, size_t len)
{
	for (int i = 0; i < 250; i++) {
		if (ctl_socket_of(CTL_DIR, m->pid, out, len))
			return true;
		test_sleep_ms(20);
	}
	return false;
}

/*
 * A daemon mounting a fresh directory of s's export on mnt as uid (0:
 * root; another user mounts through fusermount), its log in dir (private
 * to the test): b is it, mounted (its log says so) once this returns.
 */
static void mnt_spawn_as(struct mnt *b, const char *mnt,
			 const struct test_server *s, const char *dir,
			 uid_t uid)
{
	static unsigned seq;
	char src[700], opts[200];
	pid_t pid;

	memset(b, 0, sizeof(*b));
	snprintf(b->dir, sizeof(b->dir), "%s", mnt);
	snprintf(b->local, sizeof(b->local), "%s/ctl-%d-%u", s->export_dir,
		 (int)getpid(), ++seq);
	ASSERT_EQ(path_mkdir(b->local, 0777), 0);
	snprintf(b->log, sizeof(b->log), "%s/daemon-%u.log", dir, seq);
	snprintf(src, sizeof(src), "%s:%s", s->server, b->local);
	snprintf(opts, sizeof(opts), "port=%u,mountport=%u", s->nfs_port,
		 s->mount_port);
	snprintf(b->opts, sizeof(b->opts), "%s", opts);
	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int fd = open(b->log, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
			      0644);

		if (fd < 0 || fchown(fd, uid, uid) < 0)
			_exit(126);
		dup2(fd, 1);
		dup2(fd, 2);
		if (uid && (setgroups(0, NULL) < 0 || setgid(uid) < 0 ||
			    setuid(uid) < 0))
			_exit(126);
		execl(daemon_bin ? daemon_bin : intrfs_bin(), "intrfs", "-f",
		      src, b->dir, "-o", opts, (char *)NULL);
		_exit(127);
	}
	b->pid = pid;
	proc_note_pid(pid);
	mnt_wait_log(b, "intrfs: mounted ", 15000);
}

/*
 * The number that follows key (the JSON up to it) in intrfsctl's stats of
 * dir.  Not there: 0 when absent_zero (a procedure never called is not
 * listed), else the test fails.
 */
static uint64_t stats_number(const char *dir, const char *key, bool absent_zero)
{
	static char out[65536];
	const char *p;

	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ dir, "stats", NULL }),
		  0);
	p = strstr(out, key);
	if (!p && !absent_zero)
		TEST__FAIL("no %s in the stats: %.300s", key, out);
	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

/* The LOOKUPs a daemon counted, from intrfsctl's stats of dir. */
static uint64_t lookups(const char *dir)
{
	return stats_number(dir, "\"LOOKUP\":{\"ops\":", true);
}

/*
 * Two mounts stacked on one point: intrfsctl asks the one on top, the one
 * the path shows (its LOOKUPs count the lookups made there, its policy is
 * the one switched), and after its unmount the one below again.
 */
TEST_IMPL(ctl_stacked_visible)
{
	static char out[65536];
	char dir[] = "/tmp/intrfs-test-ctl.XXXXXX", sock[108];
	struct test_server s;
	struct mnt a, b;
	struct stat st;
	uint64_t a0, b0, b1;

	srv_get(&s);
	ASSERT_NOT_NULL(mkdtemp(dir));
	mnt_start(&a, &s, "");
	ctl_socket(&a, sock, sizeof(sock));
	a0 = lookups(a.dir);
	mnt_spawn_as(&b, a.dir, &s, dir, 0);
	if (!ctl_socket_within(&b, sock, sizeof(sock)))
		fprintf(stderr, "# the mount on top has no control socket\n");
	b0 = lookups(a.dir);
	for (int i = 0; i < 50; i++) {
		char name[32];

		snprintf(name, sizeof(name), "nothing-%d", i);
		ASSERT_EQ(stat(mpath(&a, name), &st), -1);
		ASSERT_EQ(errno, ENOENT);
	}
	b1 = lookups(a.dir);
	fprintf(stderr, "# LOOKUPs counted where 50 were made: %" PRIu64 "\n",
		b1 - b0);
	ASSERT_UINT64_GE(b1 - b0, 50);
	ASSERT_EQ(
		ctl(out, sizeof(out),
		    (const char *const[]){ a.dir, "policy", "percall", NULL }),
		0);
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ a.dir, "tasks", NULL }),
		  0);
	ASSERT_CONTAINS(out, "\"policy\":\"percall\"");
	/* The one on top gone, the one below answers, untouched. */
	mnt_stop(&b);
	ASSERT_UINT64_LT(lookups(a.dir) - a0, 50);
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ a.dir, "tasks", NULL }),
		  0);
	ASSERT_CONTAINS(out, "\"policy\":\"region\"");
	mnt_stop(&a);
	unlink(b.log);
	rmdir(dir);
	return 0;
}

/* A socket at path that nobody listens on, as a daemon that died leaves. */
static void plant_dead_socket(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ASSERT_GE(fd, 0);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	unlink(path);
	ASSERT_EQ(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	close(fd);
}

/*
 * The socket of a daemon killed with SIGKILL stays; intrfsctl says so,
 * and the next mount removes it (and any other socket nobody listens on);
 * the socket of a mount unmounted is gone with it.
 */
TEST_IMPL(ctl_stale_socket)
{
	static char out[4096];
	char dead[108], b_sock[108], planted[108];
	struct test_server s;
	struct mnt a, b;
	struct stat st;
	int status;

	srv_get(&s);
	mnt_start(&a, &s, "");
	ctl_socket(&a, dead, sizeof(dead));
	ASSERT_EQ(kill(a.pid, SIGKILL), 0);
	ASSERT_EQ(waitpid(a.pid, &status, 0), a.pid);
	a.pid = 0;
	lstat_ok(dead, &st);
	ASSERT(S_ISSOCK(st.st_mode));
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ a.dir, "stats", NULL }),
		  2);
	ASSERT_CONTAINS(out, "is left by a daemon that is gone (nobody "
			     "listens on it)");
	umount2(a.dir, MNT_DETACH);
	mnt_stop(&a);

	snprintf(planted, sizeof(planted), "%s/ctl-0:%d.sock", CTL_DIR,
		 900000 + (int)getpid() % 10000);
	plant_dead_socket(planted);
	mnt_start(&b, &s, "");
	ctl_socket(&b, b_sock, sizeof(b_sock));
	ASSERT_EQ(lstat(planted, &st), -1);
	ASSERT_EQ(errno, ENOENT);
	/* Gone, or replaced by b's when b has the device a had. */
	if (strcmp(dead, b_sock) != 0) {
		ASSERT_EQ(lstat(dead, &st), -1);
		ASSERT_EQ(errno, ENOENT);
	}
	mnt_stop(&b);
	ASSERT_EQ(lstat(b_sock, &st), -1);
	ASSERT_EQ(errno, ENOENT);
	return 0;
}

/*
 * A mount made by a user (fusermount) has its control socket in that
 * user's runtime directory: root's intrfsctl and the user's find it and
 * are answered, and it is gone with the mount.
 */
/* Copies the executable src into dir (mode 0755): its new path. */
static const char *copy_exec(const char *src, const char *dir, const char *name,
			     char *out, size_t len)
{
	char cmd[1024];

	snprintf(out, len, "%s/%s", dir, name);
	snprintf(cmd, sizeof(cmd), "install -m 0755 '%s' '%s'", src, out);
	ASSERT_EQ(system(cmd), 0);
	return out;
}

/*
 * A mount of uid USER_UID's, as fusermount makes one: its directory, the
 * runtime directory a login session would have made, the binaries copied
 * where the user may run them, and its control socket.
 */
struct user_mount {
	char dir[64], mnt[96], run[64], ctl_dir[96], sock[108];
	char bin_daemon[128], bin_ctl[128];
	bool made_run_user, made_run;
	struct mnt m;
};

static void user_mount_up(struct user_mount *um, const struct test_server *s)
{
	struct stat st;

	memset(um, 0, sizeof(*um));
	snprintf(um->dir, sizeof(um->dir), "/tmp/intrfs-test-ctl.XXXXXX");
	ASSERT_NOT_NULL(mkdtemp(um->dir));
	ASSERT_EQ(chmod(um->dir, 0755), 0);
	snprintf(um->mnt, sizeof(um->mnt), "%s/mnt", um->dir);
	ASSERT_EQ(mkdir(um->mnt, 0755), 0);
	ASSERT_EQ(chown(um->mnt, USER_UID, USER_GID), 0);
	um->made_run_user = mkdir("/run/user", 0755) == 0;
	snprintf(um->run, sizeof(um->run), "/run/user/%u", USER_UID);
	um->made_run = mkdir(um->run, 0700) == 0;
	if (um->made_run)
		ASSERT_EQ(chown(um->run, USER_UID, USER_GID), 0);
	snprintf(um->ctl_dir, sizeof(um->ctl_dir), "%s/intrfs-ctl", um->run);
	daemon_bin = copy_exec(intrfs_bin(), um->dir, "intrfs", um->bin_daemon,
			       sizeof(um->bin_daemon));
	ctl_bin = copy_exec(INTRFSCTL_BIN, um->dir, "intrfsctl", um->bin_ctl,
			    sizeof(um->bin_ctl));
	mnt_spawn_as(&um->m, um->mnt, s, um->dir, USER_UID);
	ASSERT_WITHIN(ctl_socket_of(um->ctl_dir, um->m.pid, um->sock,
				    sizeof(um->sock)),
		      5000);
	lstat_ok(um->sock, &st);
	ASSERT_EQ(st.st_uid, USER_UID);
}

static void user_mount_down(struct user_mount *um)
{
	int status;

	ASSERT_EQ(umount2(um->mnt, 0), 0);
	ASSERT_EQ(waitpid(um->m.pid, &status, 0), um->m.pid);
	rmdir(um->ctl_dir);
	if (um->made_run)
		rmdir(um->run);
	if (um->made_run_user)
		rmdir("/run/user");
	unlink(um->m.log);
	unlink(um->bin_daemon);
	unlink(um->bin_ctl);
	daemon_bin = NULL;
	ctl_bin = INTRFSCTL_BIN;
	rmdir(um->mnt);
}

TEST_IMPL(ctl_user_mount)
{
	static char out[65536];
	struct user_mount um;
	struct test_server s;
	struct stat st;

	srv_get(&s);
	user_mount_up(&um, &s);
	ASSERT_EQ(ctl_run(out, sizeof(out),
			  (const char *const[]){ um.mnt, "stats", NULL }, 0,
			  30000, NULL),
		  0);
	ASSERT_CONTAINS(out, "\"transport\":{");
	ASSERT_EQ(ctl_run(out, sizeof(out),
			  (const char *const[]){ um.mnt, "stats", NULL },
			  USER_UID, 30000, NULL),
		  0);
	ASSERT_CONTAINS(out, "\"transport\":{");
	user_mount_down(&um);
	ASSERT_EQ(lstat(um.sock, &st), -1);
	ASSERT_EQ(errno, ENOENT);
	rmdir(um.dir);
	return 0;
}

/*
 * A daemon of the user's own making, as uid USER_UID: it takes over the
 * control socket sock (the user owns its directory), answers nconn
 * connections with answer, and writes "pwned" into any descriptor that
 * comes with a request.  It says on report, one byte a connection, 'F'
 * when a descriptor came and '-' when none did.  Its pid.
 */
static pid_t fake_daemon(const char *sock, const char *answer, int nconn,
			 int report)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int ready[2], lfd;
	char c;
	pid_t pid;

	ASSERT_EQ(pipe(ready), 0);
	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid > 0) {
		close(ready[1]);
		ASSERT_EQ(read(ready[0], &c, 1), 1);
		close(ready[0]);
		return pid;
	}
	close(ready[0]);
	signal(SIGPIPE, SIG_IGN);
	if (setgroups(0, NULL) < 0 || setgid(USER_GID) < 0 ||
	    setuid(USER_UID) < 0)
		_exit(126);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock);
	unlink(sock);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(lfd, 4) < 0)
		_exit(125);
	(void)!write(ready[1], "r", 1);
	for (int i = 0; i < nconn; i++) {
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(sizeof(int))];
		} u;
		char line[512];
		struct iovec iov = { line, sizeof(line) };
		struct msghdr mh = { .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = u.buf,
				     .msg_controllen = sizeof(u.buf) };
		struct cmsghdr *h;
		int cfd = accept(lfd, NULL, NULL), fd = -1;

		if (cfd < 0)
			_exit(124);
		if (recvmsg(cfd, &mh, 0) >= 0 && (h = CMSG_FIRSTHDR(&mh)) &&
		    h->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(h), sizeof(int));
		if (fd >= 0)
			(void)!write(fd, "pwned\n", 6);
		(void)!write(report, fd >= 0 ? "F" : "-", 1);
		(void)!write(cfd, answer, strlen(answer));
		close(cfd);
	}
	_exit(0);
}

/* A directory only root may enter, holding root's 0600 file secret. */
static void make_vault(const char *dir, char *vault, size_t vlen, char *file,
		       size_t flen, const char *secret)
{
	snprintf(vault, vlen, "%s/vault", dir);
	ASSERT_EQ(mkdir(vault, 0700), 0);
	snprintf(file, flen, "%s/secret", vault);
	write_file(file, secret, strlen(secret));
	ASSERT_EQ(chmod(file, 0600), 0);
}

static const char vault_secret[] = "root's file\n";

/* 0 when path is there, else 1 (as_user()'s function). */
static int user_access(const char *path)
{
	return access(path, F_OK) == 0 ? 0 : 1;
}

/*
 * Root asks a user's mount for a trace: the file is opened with the
 * user's rights only, so the genuine daemon gets a file made as the user,
 * and a file only root may write is refused, naming it.
 */
TEST_IMPL(ctl_root_traces_as_user)
{
	static char out[65536];
	char vault[128], secret[160], pub[128], path[192];
	struct user_mount um;
	struct test_server s;
	struct stat st;
	char *text;

	srv_get(&s);
	user_mount_up(&um, &s);
	make_vault(um.dir, vault, sizeof(vault), secret, sizeof(secret),
		   vault_secret);
	snprintf(pub, sizeof(pub), "%s/pub", um.dir);
	ASSERT_EQ(mkdir(pub, 01777), 0);
	ASSERT_EQ(chmod(pub, 01777), 0);

	snprintf(path, sizeof(path), "%s/t.json", pub);
	ASSERT_EQ(
		ctl(out, sizeof(out),
		    (const char *const[]){ um.mnt, "trace", "on", path, NULL }),
		0);
	lstat_ok(path, &st);
	ASSERT_EQ(st.st_uid, USER_UID);
	/* A LOOKUP to trace: the user's (root may not look in). */
	ASSERT_EQ(as_user(USER_UID, USER_GID, NULL, 0, user_access,
			  mpath(&um.m, "traced")),
		  1);
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ um.mnt, "trace", "off", NULL }),
		  0);
	ASSERT_GT(read_file(path, &text), 0);
	ASSERT_CONTAINS(text, "\"proc\":\"LOOKUP\"");
	free(text);
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ um.mnt, "trace", "on", secret,
					     NULL }),
		  1);
	ASSERT_CONTAINS(out, secret);
	ASSERT_CONTAINS(out, "Permission denied (as uid 1000)");
	assert_same_bytes(secret, vault_secret, strlen(vault_secret));

	user_mount_down(&um);
	unlink(secret);
	rmdir(vault);
	unlink(path);
	rmdir(pub);
	rmdir(um.dir);
	return 0;
}

/*
 * A daemon of the user's own making takes over the control socket of the
 * user's mount (the user owns its directory), and root asks it: what it
 * answers (ESC ]0; to retitle root's terminal) reaches root's terminal
 * escaped, and for "trace on" it gets no descriptor of root's, so root's
 * 0600 file keeps its bytes and the refusal names it.
 */
TEST_IMPL(ctl_root_lends_no_descriptor)
{
	static const char evil[] = "ok\n\x1b]0;pwned\x07{\"a\":1}\n";
	static char out[65536];
	char vault[128], secret[160], got[8];
	struct user_mount um;
	struct test_server s;
	int rep[2], status;
	ssize_t n;
	pid_t fake;

	srv_get(&s);
	user_mount_up(&um, &s);
	make_vault(um.dir, vault, sizeof(vault), secret, sizeof(secret),
		   vault_secret);
	ASSERT_EQ(pipe(rep), 0);
	fake = fake_daemon(um.sock, evil, 2, rep[1]);
	close(rep[1]);

	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ um.mnt, "stats", NULL }),
		  0);
	ASSERT_NULL(strchr(out, '\x1b'));
	ASSERT_NULL(strchr(out, '\x07'));
	ASSERT_CONTAINS(out, "\\x1b]0;pwned\\x07{\"a\":1}\n");
	ASSERT_NE(ctl(out, sizeof(out),
		      (const char *const[]){ um.mnt, "trace", "on", secret,
					     NULL }),
		  0);
	ASSERT_CONTAINS(out, secret);
	assert_same_bytes(secret, vault_secret, strlen(vault_secret));
	ASSERT_EQ(waitpid(fake, &status, 0), fake);
	ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	n = read(rep[0], got, sizeof(got) - 1);
	close(rep[0]);
	ASSERT_EQ(n, 2);
	got[n] = '\0';
	ASSERT_STR_EQ(got, "--");

	user_mount_down(&um);
	unlink(secret);
	rmdir(vault);
	rmdir(um.dir);
	return 0;
}

/*
 * A reader of 64 KiB of m's file f (O_DIRECT) that named itself title (its
 * comm), whose READ the stalled server s holds: its pid.
 */
static pid_t titled_reader(const struct mnt *m, const struct test_server *s,
			   const char *title)
{
	int ready[2], go[2];
	uint64_t unread;
	struct probe p;
	char c = 0;
	pid_t pid;

	ASSERT_EQ(pipe(ready), 0);
	ASSERT_EQ(pipe(go), 0);
	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		void *buf;
		int fd;

		if (posix_memalign(&buf, 4096, 65536) != 0 ||
		    prctl(PR_SET_NAME, title) < 0)
			_exit(126);
		fd = open(mpath(m, "f"), O_RDONLY | O_DIRECT);
		if (fd < 0 || write(ready[1], "r", 1) != 1 ||
		    read(go[0], &c, 1) != 1)
			_exit(125);
		_exit(read(fd, buf, 65536) == 65536 ? 0 : 1);
	}
	close(ready[1]);
	close(go[0]);
	ASSERT_EQ(read(ready[0], &c, 1), 1);
	close(ready[0]);
	srv_stall(s);
	unread = srv_unread(s);
	ASSERT_EQ(write(go[1], "g", 1), 1);
	close(go[1]);
	memset(&p, 0, sizeof(p));
	p.pid = pid;
	probe_wait_blocked(&p);
	srv_wait_call(s, unread);
	return pid;
}

/*
 * A caller whose command name is an escape sequence (ESC ]0; sets a
 * terminal's title) is shown escaped in intrfsctl's tasks table, by the
 * daemon and by intrfsctl: no control character reaches the terminal.
 */
TEST_IMPL(ctl_table_escapes_callers)
{
	static char out[65536];
	struct test_server s;
	struct mnt m;
	int status;
	pid_t pid;

	srv_get(&s);
	mnt_start(&m, &s, "");
	put_file(&m, 65536);
	pid = titled_reader(&m, &s,
			    "\x1b]0;own\x07\x9b"
			    "2J");
	for (int i = 0; i < 250; i++) {
		ASSERT_EQ(ctl(out, sizeof(out),
			      (const char *const[]){ m.dir, "tasks", "--table",
						     NULL }),
			  0);
		if (strstr(out, "own"))
			break;
		test_sleep_ms(20);
	}
	srv_resume(&s);
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_CONTAINS(out, "\\x1b]0;own\\x07\\x9b2J");
	for (const char *c = out; *c; c++)
		if (*c != '\n' && (unsigned char)*c < 0x20)
			TEST__FAIL("a control character (0x%02x) in:\n%s",
				   (unsigned)(unsigned char)*c, out);
	ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	mnt_stop(&m);
	return 0;
}

/*
 * The daemon's own files, -o trace= and -o logfile=, never through a
 * symbolic link in the middle of the path (towards a directory only root
 * may enter): the mount is refused naming the path and the link, and
 * nothing is made behind the link.
 */
TEST_IMPL(ctl_daemon_files_no_link)
{
	char dir[] = "/tmp/intrfs-test-ctl.XXXXXX", vault[128], secret[160];
	char link[128], path[192], opts[256], mnt[64], src[600];
	static char buf[16384];
	struct test_server s;
	struct stat st;
	struct mnt m;
	int p[2], rc, status;
	size_t got = 0;
	pid_t pid;

	srv_get(&s);
	ASSERT_NOT_NULL(mkdtemp(dir));
	make_vault(dir, vault, sizeof(vault), secret, sizeof(secret),
		   vault_secret);
	snprintf(link, sizeof(link), "%s/ldir", dir);
	ASSERT_EQ(symlink(vault, link), 0);

	snprintf(opts, sizeof(opts), "trace=%s/t.json", link);
	rc = mnt_start_fails(&m, &s, opts, buf, sizeof(buf));
	ASSERT_NE(rc, 0);
	ASSERT_CONTAINS(buf, link);
	ASSERT_CONTAINS(buf, "is a symbolic link");
	snprintf(path, sizeof(path), "%s/t.json", vault);
	ASSERT_EQ(lstat(path, &st), -1);

	/* logfile= is the background daemon's: no -f. */
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	ASSERT_EQ(mkdir(mnt, 0755), 0);
	snprintf(src, sizeof(src), "%s:%s", s.server, s.export_dir);
	snprintf(opts, sizeof(opts), "port=%u,mountport=%u,logfile=%s/log",
		 s.nfs_port, s.mount_port, link);
	ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		dup2(p[1], 2);
		execl(intrfs_bin(), "intrfs", src, mnt, "-o", opts,
		      (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	for (ssize_t r; got + 1 < sizeof(buf) &&
			(r = read(p[0], buf + got, sizeof(buf) - 1 - got)) > 0;)
		got += (size_t)r;
	buf[got] = '\0';
	close(p[0]);
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		umount2(mnt, MNT_DETACH);
	snprintf(path, sizeof(path), "%s/log", vault);
	rc = lstat(path, &st);
	ASSERT_EQ(rc, -1);
	ASSERT(WIFEXITED(status) && WEXITSTATUS(status) != 0);
	ASSERT_CONTAINS(buf, link);
	ASSERT_CONTAINS(buf, "is a symbolic link");
	assert_same_bytes(secret, vault_secret, strlen(vault_secret));

	rmdir(mnt);
	unlink(link);
	unlink(secret);
	rmdir(vault);
	rmdir(dir);
	return 0;
}

/* Sends line to the control socket sock as it is; the answer in out. */
static void ask_raw(const char *sock, const char *line, char *out, size_t len)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t got = 0;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ASSERT_GE(fd, 0);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock);
	ASSERT_EQ(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ASSERT_EQ(send(fd, line, strlen(line), MSG_NOSIGNAL),
		  (ssize_t)strlen(line));
	for (ssize_t r;
	     got + 1 < len && (r = read(fd, out + got, len - 1 - got)) > 0;)
		got += (size_t)r;
	out[got] = '\0';
	close(fd);
}

/*
 * trace on FILE never follows a symbolic link (one planted towards a
 * root-owned file is refused and the file untouched), takes only a regular
 * file, resolves a relative FILE against the caller's directory, and the
 * daemon opens no path a client sends it.
 */
TEST_IMPL(ctl_trace_no_symlink)
{
	static const char secret[] = "root's file\n";
	static char out[4096];
	char dir[] = "/tmp/intrfs-test-ctl.XXXXXX", victim[64], link[64];
	char fifo[64], rel[64], raw[64], sock[108], line[160], *got;
	char vault[128], vsecret[160], ldir[128], lfile[192];
	struct test_server s;
	struct stat st;
	struct mnt m;
	int fd;

	srv_get(&s);
	ASSERT_NOT_NULL(mkdtemp(dir));
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(link, sizeof(link), "%s/link.json", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo.json", dir);
	snprintf(rel, sizeof(rel), "%s/rel.json", dir);
	snprintf(raw, sizeof(raw), "%s/raw.json", dir);
	fd = open(victim, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(write(fd, secret, sizeof(secret) - 1),
		  (ssize_t)sizeof(secret) - 1);
	close(fd);
	ASSERT_EQ(symlink(victim, link), 0);
	ASSERT_EQ(mkfifo(fifo, 0644), 0);
	mnt_start(&m, &s, "");
	ctl_socket(&m, sock, sizeof(sock));

	ASSERT_NE(
		ctl(out, sizeof(out),
		    (const char *const[]){ m.dir, "trace", "on", link, NULL }),
		0);
	ASSERT_CONTAINS(out, "symbolic link");
	ASSERT_NE(
		ctl(out, sizeof(out),
		    (const char *const[]){ m.dir, "trace", "on", fifo, NULL }),
		0);
	ASSERT_CONTAINS(out, "not a regular file");
	/* A link to a root-only directory in the middle: refused too. */
	make_vault(dir, vault, sizeof(vault), vsecret, sizeof(vsecret),
		   vault_secret);
	snprintf(ldir, sizeof(ldir), "%s/ldir", dir);
	ASSERT_EQ(symlink(vault, ldir), 0);
	snprintf(lfile, sizeof(lfile), "%s/t.json", ldir);
	ASSERT_EQ(
		ctl(out, sizeof(out),
		    (const char *const[]){ m.dir, "trace", "on", lfile, NULL }),
		1);
	ASSERT_CONTAINS(out, ldir);
	ASSERT_CONTAINS(out, "is a symbolic link");
	snprintf(lfile, sizeof(lfile), "%s/t.json", vault);
	ASSERT_EQ(lstat(lfile, &st), -1);
	/* Whatever the refusals did, nothing reached root's file. */
	ASSERT_EQ(access(mpath(&m, "nothing-here"), F_OK), -1);
	assert_same_bytes(victim, secret, sizeof(secret) - 1);

	/* A relative name is the caller's: run from dir. */
	ASSERT_EQ(chdir(dir), 0);
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ m.dir, "trace", "on", "rel.json",
					     NULL }),
		  0);
	ASSERT_EQ(chdir("/"), 0);
	ASSERT_EQ(access(mpath(&m, "nothing-either"), F_OK), -1);
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ m.dir, "trace", "off", NULL }),
		  0);
	ASSERT_GT(read_file(rel, &got), 0);
	ASSERT_CONTAINS(got, "\"proc\":\"LOOKUP\"");
	free(got);

	/* A path sent without its descriptor: nothing is opened. */
	snprintf(line, sizeof(line), "trace on %s\n", raw);
	ask_raw(sock, line, out, sizeof(out));
	ASSERT_CONTAINS(out, "error\n");
	ASSERT_EQ(lstat(raw, &st), -1);
	ASSERT_EQ(errno, ENOENT);

	mnt_stop(&m);
	unlink(rel);
	unlink(fifo);
	unlink(link);
	unlink(victim);
	unlink(ldir);
	unlink(vsecret);
	rmdir(vault);
	rmdir(dir);
	return 0;
}

/*
 * policy linux switched live, as -o policy=linux: a handled SIGINT no
 * longer interrupts an intr mount's stalled read (Linux's waits are
 * killable), mode is refused meanwhile, and leaving it brings intr back.
 */
TEST_IMPL(ctl_policy_linux)
{
	static char out[4096];
	struct test_server s;
	struct mnt m;

	srv_get(&s);
	mnt_start(&m, &s, "hard,intr,policy=percall");
	put_file(&m, 65536);
	ASSERT(read_interrupted(&m, &s));
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ m.dir, "policy", "linux", NULL }),
		  0);
	ASSERT_CONTAINS(out, "{\"policy\":\"linux\",\"was\":\"percall\"}");
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ m.dir, "tasks", NULL }),
		  0);
	ASSERT_CONTAINS(out, "\"policy\":\"linux\",\"mode\":\"killable\"");
	ASSERT(!read_interrupted(&m, &s));
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ m.dir, "mode", "intr", NULL }),
		  1);
	ASSERT_CONTAINS(out, "switch the policy first");
	ASSERT_EQ(
		ctl(out, sizeof(out),
		    (const char *const[]){ m.dir, "policy", "percall", NULL }),
		0);
	ASSERT_CONTAINS(out, "{\"policy\":\"percall\",\"was\":\"linux\"}");
	ASSERT(read_interrupted(&m, &s));
	mnt_stop(&m);
	return 0;
}

/*
 * nconnect=3: three connections from the mount on, shown by intrfsctl
 * stats, each carrying some of a file's writes and reads, and the bytes
 * right on the export.
 */
TEST_IMPL(ctl_nconnect)
{
	const size_t len = 8u << 20;
	unsigned long long c[4] = { 0 };
	char out[65536], *got;
	struct test_server s;
	unsigned char *buf;
	const char *at;
	struct mnt m;
	int n;

	srv_get(&s);
	mnt_start(&m, &s, "nconnect=3");
	buf = malloc(len);
	ASSERT(buf != NULL);
	fill_random(buf, len, 3);
	write_file(mpath(&m, "nc"), buf, len);
	assert_same_bytes(lpath(&m, "nc"), buf, len);
	ASSERT_EQ(read_file(mpath(&m, "nc"), &got), (ssize_t)len);
	ASSERT_MEM_EQ(got, buf, len);
	free(got);
	free(buf);
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ m.dir, "stats", NULL }),
		  0);
	at = strstr(out, "\"connections\":[");
	ASSERT(at != NULL);
	n = sscanf(at, "\"connections\":[%llu,%llu,%llu,%llu]", &c[0], &c[1],
		   &c[2], &c[3]);
	ASSERT_EQ(n, 3);
	for (unsigned i = 0; i < 3; i++)
		if (c[i] == 0)
			TEST__FAIL("connection %u carried no call: %s", i, at);
	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ m.dir, "stats", "--table", NULL }),
		  0);
	ASSERT_CONTAINS(out, "connections                   3  calls each");
	mnt_stop(&m);
	return 0;
}

/*
 * A word too many or too few is refused, by intrfsctl and by the daemon,
 * and changes nothing.
 */
TEST_IMPL(ctl_extra_arguments)
{
	static const char *const bad[][4] = {
		{ "watchdog", "1", "2", NULL },
		{ "tasks", "x", NULL },
		{ "policy", "region", "x", NULL },
		{ "trace", "off", "x", NULL },
		{ "mode", NULL },
	};
	static const char *const raw[] = { "watchdog 1 2\n", "stats x\n",
					   "policy region x\n", "mode\n" };
	static char out[4096];
	struct test_server s;
	struct mnt m;
	char sock[108];

	srv_get(&s);
	mnt_start(&m, &s, "hung_timeout=0");
	ctl_socket(&m, sock, sizeof(sock));
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		const char *args[6] = { m.dir };

		for (size_t k = 0; bad[i][k]; k++)
			args[k + 1] = bad[i][k];
		ASSERT_EQ(ctl(out, sizeof(out), args), 2);
		ASSERT_CONTAINS(out, " takes ");
	}
	for (size_t i = 0; i < ARRAY_SIZE(raw); i++) {
		ask_raw(sock, raw[i], out, sizeof(out));
		if (strncmp(out, "error\n", 6) != 0)
			TEST__FAIL("the daemon took '%.*s': %s",
				   (int)strlen(raw[i]) - 1, raw[i], out);
		ASSERT_CONTAINS(out, " takes ");
	}
	/* The refused watchdog line did not switch it on. */
	mnt_read_log(&m, out, sizeof(out));
	if (strstr(out, "hung-task watchdog at"))
		TEST__FAIL("a refused request acted:\n%s", out);
	mnt_stop(&m);
	return 0;
}

/* Runs a shell command line; its output (and stderr) into out. */
static int run_sh(char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int run_sh(char *out, size_t len, const char *fmt, ...)
{
	char cmd[1024];
	size_t got = 0;
	va_list ap;
	FILE *p;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	p = popen(cmd, "r");
	ASSERT(p != NULL);
	for (size_t r;
	     got < len - 1 && (r = fread(out + got, 1, len - 1 - got, p)) > 0;)
		got += r;
	out[got] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* How many numbers follow the word key on its line of text. */
static unsigned numbers_after(const char *text, const char *key)
{
	const char *at = strstr(text, key);
	unsigned n = 0;

	if (!at)
		return 0;
	at += strlen(key);
	for (;;) {
		char *end;

		while (*at == ' ' || *at == '\t')
			at++;
		strtoull(at, &end, 10);
		if (end == at)
			return n;
		n++;
		at = end;
	}
}

/* intrfsctl m mountstats, into out and the file path. */
static void mountstats_to(const struct mnt *m, const char *path, char *out,
			  size_t len)
{
	FILE *f;

	ASSERT_EQ(ctl(out, len,
		      (const char *const[]){ m->dir, "mountstats", NULL }),
		  0);
	f = fopen(path, "w");
	ASSERT(f != NULL);
	fputs(out, f);
	ASSERT_EQ(fclose(f), 0);
}

/*
 * intrfsctl MNT mountstats is a /proc/self/mountstats entry that
 * nfs-utils' mountstats(8) reads unchanged (its mountstats, iostat and
 * nfsstat views, and -S for what changed since a snapshot), with the
 * fields its parser needs, and figures that are the mount's.
 */
TEST_IMPL(ctl_mountstats)
{
	static const char tool[] = "/usr/sbin/mountstats";
	const size_t buffered = 3u << 20, direct = 2u << 20;
	static const char *const procs[] = {
		"NULL",	    "GETATTR", "SETATTR",     "LOOKUP", "ACCESS",
		"READLINK", "READ",    "WRITE",	      "CREATE", "MKDIR",
		"SYMLINK",  "MKNOD",   "REMOVE",      "RMDIR",	"RENAME",
		"LINK",	    "READDIR", "READDIRPLUS", "FSSTAT", "FSINFO",
		"PATHCONF", "COMMIT"
	};
	char f0[] = "/tmp/intrfs-mountstats.XXXXXX", f1[64], line[512];
	static char out[65536], view[65536];
	struct test_server s;
	unsigned char *buf;
	struct mnt m;
	int fd;

	if (access(tool, X_OK) != 0)
		TEST__FAIL("%s is missing: install nfs-common "
			   "(mount-scripts/setup does)",
			   tool);
	srv_get(&s);
	mnt_start(&m, &s, "");
	fd = mkstemp(f0);
	ASSERT_GE(fd, 0);
	close(fd);
	snprintf(f1, sizeof(f1), "%s.1", f0);
	mountstats_to(&m, f0, out, sizeof(out));

	ASSERT_EQ(posix_memalign((void **)&buf, 4096, buffered), 0);
	fill_random(buf, buffered, 11);
	write_file(mpath(&m, "ms-buffered"), buf, buffered);
	fd = open(mpath(&m, "ms-direct"), O_WRONLY | O_CREAT | O_DIRECT, 0644);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(write(fd, buf, direct), (ssize_t)direct);
	ASSERT_EQ(fsync(fd), 0);
	close(fd);
	fd = open(mpath(&m, "ms-direct"), O_RDONLY | O_DIRECT);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(read(fd, buf, direct), (ssize_t)direct);
	close(fd);
	free(buf);
	/* Its age is in whole seconds, as Linux's: one passes. */
	test_sleep_ms(1100);
	mountstats_to(&m, f1, out, sizeof(out));

	/* The lines and fields the tool's parser takes. */
	snprintf(line, sizeof(line),
		 "mounted on %s with fstype nfs statvers=1.1", m.dir);
	ASSERT_CONTAINS(out, line);
	ASSERT_EQ(numbers_after(out, "\tevents:"), 27);
	ASSERT_EQ(numbers_after(out, "\tbytes:"), 8);
	ASSERT_CONTAINS(out, "RPC iostats version: 1.1  p/v: 100003/3 (nfs)");
	ASSERT_EQ(numbers_after(out, "\txprt:\ttcp"), 13);
	/* Every NFSv3 procedure, in order, with its nine fields. */
	for (size_t i = 0; i < ARRAY_SIZE(procs); i++) {
		snprintf(line, sizeof(line), " %s:", procs[i]);
		ASSERT_EQ(numbers_after(out, line), 9);
	}
	/* The mount's own figures: the WRITEs intrfsctl stats counts. */
	snprintf(line, sizeof(line), "       WRITE: %" PRIu64 " ",
		 mnt_proc_ops(&m, "WRITE"));
	ASSERT_CONTAINS(out, line);

	ASSERT_EQ(run_sh(view, sizeof(view), "%s mountstats -f %s 2>&1", tool,
			 f1),
		  0);
	snprintf(line, sizeof(line),
		 "applications wrote %zu bytes via write(2)", buffered);
	ASSERT_CONTAINS(view, line);
	snprintf(line, sizeof(line),
		 "applications wrote %zu bytes via O_DIRECT write(2)", direct);
	ASSERT_CONTAINS(view, line);
	snprintf(line, sizeof(line),
		 "applications read %zu bytes via O_DIRECT read(2)", direct);
	ASSERT_CONTAINS(view, line);
	snprintf(line, sizeof(line), "client wrote %zu bytes via NFS WRITE",
		 buffered + direct);
	ASSERT_CONTAINS(view, line);
	ASSERT_CONTAINS(view, "NFS mount age: 0:00:0");

	ASSERT_EQ(run_sh(view, sizeof(view), "%s iostat -f %s -S %s 2>&1", tool,
			 f1, f0),
		  0);
	ASSERT_CONTAINS(view, "write:");
	ASSERT_CONTAINS(view, "read:");
	ASSERT_NULL(strstr(view, "Traceback"));

	ASSERT_EQ(run_sh(view, sizeof(view), "%s nfsstat -f %s -S %s 2>&1",
			 tool, f1, f0),
		  0);
	ASSERT_CONTAINS(view, "Client nfs v3");
	ASSERT_NULL(strstr(view, "Traceback"));

	ASSERT_EQ(ctl(out, sizeof(out),
		      (const char *const[]){ m.dir, "mountstats", "x", NULL }),
		  2);
	unlink(f0);
	unlink(f1);
	mnt_stop(&m);
	return 0;
}

/*
 * The opts: line of intrfsctl MNT mountstats says the locking and cto
 * options as Linux's nfs_show_mount_options() does: nolock (which keeps
 * every lock local: local_lock=all), local_lock= for each kind kept in
 * this kernel, nocto; none of them on a mount with the defaults.
 */
TEST_IMPL(ctl_mountstats_opts)
{
	static const struct {
		const char *mount;
		const char *has[3]; /* in the opts: line */
		const char *lacks[2]; /* not in it */
	} rows[] = {
		{ "",
		  { ",hard,proto=tcp,", "local_lock=none\n" },
		  { "nolock", "nocto" } },
		{ "nolock",
		  { ",hard,nolock,proto=tcp,", "local_lock=all\n" },
		  { "nocto" } },
		{ "local_lock=flock", { "local_lock=flock\n" }, { "nolock" } },
		{ "local_lock=posix", { "local_lock=posix\n" }, { "nolock" } },
		{ "local_lock=all", { "local_lock=all\n" }, { "nolock" } },
		{ "nolock,lock", { "local_lock=none\n" }, { "nolock" } },
		{ "soft,nocto,nolock",
		  { ",soft,nocto,nolock,proto=tcp,", "local_lock=all\n" },
		  { ",hard" } },
	};
	static char out[65536];
	struct test_server s;
	char opts[2048];
	const char *line;
	struct mnt m;
	size_t n;

	srv_get(&s);
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		fprintf(stderr, "# -o %s\n", rows[i].mount);
		mnt_start(&m, &s, rows[i].mount);
		ASSERT_EQ(
			ctl(out, sizeof(out),
			    (const char *const[]){ m.dir, "mountstats", NULL }),
			0);
		mnt_stop(&m);
		/* The line, its newline included. */
		line = strstr(out, "\topts:\t");
		ASSERT_NOT_NULL(line);
		n = strcspn(line, "\n") + 1;
		ASSERT_LT(n, sizeof(opts));
		memcpy(opts, line, n);
		opts[n] = '\0';
		for (size_t k = 0; k < ARRAY_SIZE(rows[i].has); k++)
			if (rows[i].has[k])
				ASSERT_CONTAINS(opts, rows[i].has[k]);
		for (size_t k = 0; k < ARRAY_SIZE(rows[i].lacks); k++)
			if (rows[i].lacks[k] && strstr(opts, rows[i].lacks[k]))
				TEST__FAIL("-o %s: the opts line says %s: %s",
					   rows[i].mount, rows[i].lacks[k],
					   opts);
	}
	return 0;
}

/* Whether a pipe here may hold len bytes, as the daemon's (root too) may. */
static bool pipe_can_hold(size_t len)
{
	int p[2];
	bool ok;

	if (pipe2(p, O_CLOEXEC) < 0)
		return false;
	ok = fcntl(p[0], F_SETPIPE_SZ, (int)len) >= 0;
	close(p[0]);
	close(p[1]);
	return ok;
}

#define PIPE_MAX "/proc/sys/fs/pipe-max-size"
static char pipe_max_was[32];

/* Async-signal-safe: also from the SIGABRT of a failed assertion. */
static void pipe_max_set(const char *v)
{
	int fd = open(PIPE_MAX, O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		/* Whether it took, pipe_can_hold() tells. */
		ssize_t w = write(fd, v, strlen(v));

		(void)w;
		close(fd);
	}
}

/* A failed assertion aborts: the sysctl goes back first. */
static void pipe_max_restore_on_abort(int sig)
{
	pipe_max_set(pipe_max_was);
	signal(sig, SIG_DFL);
	raise(sig);
}

/*
 * A write's bytes come from FUSE through a pipe where a pipe may hold a
 * whole request (1 MiB and a page: CAP_SYS_RESOURCE, or fs.pipe-max-size
 * at 2 MiB), and are copied where not, the log saying why; either way
 * every byte is on the export.  Both, with the sysctl as it is and raised.
 */
TEST_IMPL(ctl_write_splice)
{
	const size_t len = 8u << 20, req = (1u << 20) + 4096;
	struct test_server s;
	unsigned char *buf;
	char log[16384];
	FILE *f;

	srv_get(&s);
	f = fopen(PIPE_MAX, "re");
	ASSERT_NOT_NULL(f);
	ASSERT(fgets(pipe_max_was, sizeof(pipe_max_was), f) != NULL);
	fclose(f);
	signal(SIGABRT, pipe_max_restore_on_abort);
	buf = malloc(len);
	ASSERT_NOT_NULL(buf);
	fill_random(buf, len, 7);
	for (int raised = 0; raised < 2; raised++) {
		unsigned long long n;
		struct mnt m;
		bool splice;

		if (raised)
			pipe_max_set("2097152");
		splice = pipe_can_hold(req);
		/* The raised sysctl must let any root process splice. */
		if (raised && !splice)
			TEST__FAIL("a pipe of %zu bytes is refused with "
				   "fs.pipe-max-size at 2097152",
				   req);
		mnt_start(&m, &s, "");
		write_file(mpath(&m, "sp"), buf, len);
		assert_same_bytes(lpath(&m, "sp"), buf, len);
		n = stats_number(m.dir, "\"spliced_writes\":", false);
		mnt_read_log(&m, log, sizeof(log));
		if (splice) {
			/* 8 requests of 1 MiB, each through the pipe. */
			ASSERT_GE(n, (unsigned long long)(len >> 20));
			ASSERT(strstr(log, "not spliced") == NULL);
		} else {
			ASSERT_EQ(n, 0ull);
			ASSERT_CONTAINS(log, "writes are copied from FUSE, not "
					     "spliced: a pipe of 1052672 bytes "
					     "needs CAP_SYS_RESOURCE or "
					     "fs.pipe-max-size >= 2097152");
		}
		ASSERT_EQ(unlink(mpath(&m, "sp")), 0);
		mnt_stop(&m);
		pipe_max_set(pipe_max_was);
	}
	signal(SIGABRT, SIG_DFL);
	free(buf);
	return 0;
}
