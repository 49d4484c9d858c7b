/*
 * intrfsctl on a live mount: the request a stalled server holds is seen
 * with its caller, wait mode and region, then with the interrupt its
 * handled SIGINT raised and the region holds back; the counters count it;
 * the policy is switched for later requests; another user is refused, and
 * a directory that is not an intrfs mount is named as such.
 */
#include "../../fusefs/ctl.h"
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef INTRFSCTL_BIN
#error "INTRFSCTL_BIN: the path of intrfsctl, from tests/meson.build"
#endif

/*
 * Runs intrfsctl with args (NULL-terminated); its stdout and stderr go to
 * out.  Returns its exit status.
 */
static int ctl(char *out, size_t len, const char *const *args)
{
	const char *argv[8] = { INTRFSCTL_BIN };
	size_t n = 1, got = 0;
	int p[2], st;
	pid_t pid;

	for (; *args && n < 7; args++)
		argv[n++] = *args;
	ASSERT_EQ(pipe(p), 0);
	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		close(p[0]);
		dup2(p[1], 1);
		dup2(p[1], 2);
		execv(INTRFSCTL_BIN, (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		ssize_t r = read(p[0], out + got, len - 1 - got);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	out[got] = '\0';
	close(p[0]);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT(WIFEXITED(st));
	return WEXITSTATUS(st);
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
 * In a child running as another user: asks mnt's control socket for stats
 * and returns 0 if the daemon refused, naming who may ask.
 */
static int ask_refused(const char *mnt)
{
	static const char want[] =
		"error\nonly root and the user who mounted (uid 0)";
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char ans[512];
	size_t got = 0;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	signal(SIGPIPE, SIG_IGN);
	ctl_path(mnt, a.sun_path, sizeof(a.sun_path));
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
	char want[64], opts[200], trace[2][100], *got;
	int status;

	srv_get(&s);
	for (int i = 0; i < 2; i++) {
		snprintf(trace[i], sizeof(trace[i]),
			 "/tmp/intrfs-test-trace.%d.%d.json", (int)getpid(), i);
		unlink(trace[i]);
	}
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
	ASSERT_CONTAINS(out, "{\"trace\":\"/tmp/intrfs-test-trace.");
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
	ASSERT_CONTAINS(out, "the policy is percall, region or sigmask, not "
			     "'fast'");

	/*
	 * Another user is refused (asking the socket as intrfsctl does: the
	 * build tree may be closed to that user); a plain directory is not a
	 * mount.
	 */
	ASSERT_EQ(as_user(USER_UID, USER_GID, NULL, 0, ask_refused, m.dir), 0);
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
