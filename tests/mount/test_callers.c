/*
 * Caller-declared regions on real mounts: the ioctl and its errors, the
 * stacks of threads that end with regions open, and what a caller's
 * region does to its requests under each policy when the server stalls
 * and a signal comes; who may hold a fatal signal back, and for how long;
 * what one user may take of the caller table and of the log; then
 * intrfs-region(1), whose region reaches a command's descendants and
 * mounts made after it started, and no cgroup that only has its name.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef INTRFS_REGION_BIN
#error "INTRFS_REGION_BIN: the path of intrfs-region, from tests/meson.build"
#endif
#ifndef INTRFSCTL_BIN
#error "INTRFSCTL_BIN: the path of intrfsctl, from tests/meson.build"
#endif

#define FILE_LEN (1u << 20)
#define READ_LEN 65536
#define PROMPT_MS 1000
#define STALL_MS 400

/* The ioctl by hand: op, kind, reason; the depth it gave in *depth. */
static int raw_ioc(int fd, uint32_t op, uint32_t kind, uint32_t reserved,
		   const char *reason, unsigned *depth)
{
	struct region_caller_ioc ioc;

	memset(&ioc, 0, sizeof(ioc));
	ioc.op = op;
	ioc.kind = kind;
	ioc.reserved = reserved;
	if (reason)
		snprintf(ioc.reason, sizeof(ioc.reason), "%s", reason);
	if (ioctl(fd, REGION_CALLER_IOC, &ioc) < 0)
		return -errno;
	if (depth)
		*depth = ioc.depth;
	return 0;
}

/*
 * Runs argv with stdout and stderr into out (NUL-terminated); returns its
 * wait status.  Fails the test past timeout_ms.
 */
static int run_out(const char *const *argv, char *out, size_t len,
		   unsigned timeout_ms)
{
	uint64_t end = region_now_ns() + (uint64_t)timeout_ms * 1000000u;
	size_t got = 0;
	int p[2], st;
	pid_t pid;

	ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		struct pollfd pf = { p[0], POLLIN, 0 };
		uint64_t now = region_now_ns();
		ssize_t r;

		if (now >= end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			close(p[0]);
			TEST__FAIL("%s did not end within %u ms: %s", argv[0],
				   timeout_ms, out);
		}
		if (poll(&pf, 1, (int)((end - now) / 1000000) + 1) <= 0)
			continue;
		r = read(p[0], out + got, len - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
		out[got] = '\0';
	}
	out[got] = '\0';
	close(p[0]);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	return st;
}

/* intrfsctl MNT tasks --table, until it shows what (5 s), into out. */
static void tasks_show(const struct mnt *m, const char *what, char *out,
		       size_t len)
{
	for (int i = 0; i < 250; i++) {
		int st = run_out((const char *const[]){ INTRFSCTL_BIN, m->dir,
							"tasks", "--table",
							NULL },
				 out, len, 30000);

		ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		if (strstr(out, what))
			return;
		test_sleep_ms(20);
	}
	TEST__FAIL("intrfsctl tasks never showed '%s'; last:\n%s", what, out);
}

static void prepare_file(const struct mnt *m, const char *name)
{
	char *buf = malloc(FILE_LEN);

	ASSERT_NOT_NULL(buf);
	memset(buf, 'a', FILE_LEN);
	write_file(lpath(m, name), buf, FILE_LEN);
	free(buf);
}

/*
 * The door: any file or directory of the mount, not O_PATH, not another
 * filesystem's; the kinds, the balance, the depth, the log lines.
 */
TEST_IMPL(callers_ioctl_rules)
{
	struct test_server s;
	struct mnt m;
	char tmp[] = "/tmp/intrfs-test-ioc.XXXXXX";
	unsigned depth = 0;
	int f, d, p, t;

	srv_get(&s);
	mnt_start(&m, &s, "");
	write_file(lpath(&m, "f"), "x", 1);
	f = open(mpath(&m, "f"), O_RDONLY);
	d = open(m.dir, O_RDONLY | O_DIRECTORY);
	p = open(mpath(&m, "f"), O_PATH);
	t = mkstemp(tmp);
	ASSERT_GE(f, 0);
	ASSERT_GE(d, 0);
	ASSERT_GE(p, 0);
	ASSERT_GE(t, 0);
	unlink(tmp);

	/* Nested, on a file then on the directory (FUSE_CAP_IOCTL_DIR). */
	ASSERT_EQ(raw_ioc(f, REGION_CALLER_BEGIN, REGION_KILLABLE, 0, "outer",
			  &depth),
		  0);
	ASSERT_EQ(depth, 1);
	ASSERT_EQ(raw_ioc(d, REGION_CALLER_BEGIN, REGION_UNINTERRUPTIBLE, 0,
			  "inner", &depth),
		  0);
	ASSERT_EQ(depth, 2);
	/* An end must match the innermost begin. */
	ASSERT_EQ(region_caller_end(f, REGION_KILLABLE), -EINVAL);
	mnt_wait_log(&m,
		     "end of a killable caller region, but its innermost is "
		     "uninterruptible \"inner\"",
		     5000);
	ASSERT_EQ(raw_ioc(f, REGION_CALLER_END, REGION_UNINTERRUPTIBLE, 0, NULL,
			  &depth),
		  0);
	ASSERT_EQ(depth, 1);
	ASSERT_EQ(region_caller_end(d, REGION_KILLABLE), 0);
	ASSERT_EQ(region_caller_end(d, REGION_KILLABLE), -EINVAL);
	mnt_wait_log(&m, "end of a killable caller region without a begin",
		     5000);

	/* An unknown kind: the library refuses it, and so does the daemon. */
	ASSERT_EQ(region_caller_begin(f, (enum region_kind)7, "x"), -EINVAL);
	ASSERT_EQ(raw_ioc(f, REGION_CALLER_BEGIN, 7, 0, "x", NULL), -EINVAL);
	mnt_wait_log(&m, "caller region of unknown kind 7", 5000);
	ASSERT_EQ(raw_ioc(f, 9, REGION_KILLABLE, 0, "x", NULL), -EINVAL);
	ASSERT_EQ(raw_ioc(f, REGION_CALLER_BEGIN, REGION_KILLABLE, 1, "x",
			  NULL),
		  -EINVAL);

	/* Not a door: O_PATH, another filesystem, another ioctl. */
	ASSERT_EQ(region_caller_begin(p, REGION_KILLABLE, "x"), -EBADF);
	ASSERT_EQ(region_caller_begin(t, REGION_KILLABLE, "x"), -ENOTTY);
	ASSERT_EQ(ioctl(f, _IOR('r', 0x4d, int), &depth), -1);
	ASSERT_EQ(errno, ENOTTY);
	/* Nothing was left open by the refusals. */
	ASSERT_EQ(region_caller_end(f, REGION_KILLABLE), -EINVAL);

	close(f);
	close(d);
	close(p);
	close(t);
	mnt_stop(&m);
	return 0;
}

/* Another user's: EACCES without allow_other, served with it. */
static int user_ioctl(const char *path)
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		/* Opened as root, used as the user: the ioctl is asked. */
		int fd = open(path, O_RDONLY), rc;

		if (fd < 0 || setgid(USER_GID) < 0 || setuid(USER_UID) < 0)
			_exit(100);
		rc = region_caller_begin(fd, REGION_KILLABLE, "user");
		_exit(rc == 0 ? 0 : -rc);
	}
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT(WIFEXITED(st));
	return WEXITSTATUS(st);
}

TEST_IMPL(callers_other_user)
{
	struct test_server s;
	struct mnt m;

	srv_get(&s);
	mnt_start(&m, &s, "");
	write_file(lpath(&m, "f"), "x", 1);
	ASSERT_EQ(user_ioctl(mpath(&m, "f")), EACCES);
	mnt_stop(&m);
	mnt_start(&m, &s, "allow_other");
	write_file(lpath(&m, "f"), "x", 1);
	ASSERT_EQ(user_ioctl(mpath(&m, "f")), 0);
	mnt_stop(&m);
	return 0;
}

static void *begin_and_exit(void *arg)
{
	const char *path = arg;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || region_caller_begin(fd, REGION_KILLABLE, "left open") ||
	    region_caller_begin(fd, REGION_UNINTERRUPTIBLE, "inner left"))
		return (void *)1;
	close(fd);
	return NULL;
}

/*
 * A thread that ends inside its regions: the daemon clears its stack and
 * says so, by pidfd (PIDFD_THREAD) or, as on kernels without it, by the
 * sweep of tids and start times.
 */
static void thread_exit_cleared(const char *opts, bool sweep)
{
	struct test_server s;
	struct mnt m;
	char want[160], log[16384];
	pthread_t th;
	void *ret;

	srv_get(&s);
	if (sweep)
		setenv("INTRFS_CALLERS_SWEEP", "1", 1);
	mnt_start(&m, &s, opts);
	unsetenv("INTRFS_CALLERS_SWEEP");
	write_file(lpath(&m, "f"), "x", 1);
	ASSERT_EQ(pthread_create(&th, NULL, begin_and_exit,
				 (void *)mpath(&m, "f")),
		  0);
	ASSERT_EQ(pthread_join(th, &ret), 0);
	ASSERT_NULL(ret);
	snprintf(want, sizeof(want),
		 "ended with 2 caller regions open, "
		 "cleared: killable \"left open\", "
		 "uninterruptible \"inner left\"");
	mnt_wait_log(&m, want, 5000);
	/* Once: the stack is gone, not cleared again. */
	test_sleep_ms(sweep ? 2200 : 200);
	mnt_read_log(&m, log, sizeof(log));
	ASSERT_EQ(strstr(strstr(log, want) + 1, want), NULL);
	mnt_stop(&m);
}

TEST_IMPL(callers_thread_exit_cleared)
{
	thread_exit_cleared("", false);
	return 0;
}

TEST_IMPL(callers_thread_exit_swept)
{
	thread_exit_cleared("", true);
	return 0;
}

enum outcome {
	COMPLETES, /* no EINTR: the call completes after the resume */
	EINTR_NOW, /* EINTR at once */
	KILLED_NOW, /* gone at once */
	KILLED_LATE, /* alive until the resume, then gone */
	EIO_LATE, /* no signal: EIO once the soft timeout runs out */
};

/*
 * One O_DIRECT read of a stalled server, inside a caller region of kind
 * (0: none), signal sig (0: none), on a mount with opts: what comes out.
 */
static void caller_row(const char *opts, enum region_kind kind, int sig,
		       enum outcome want)
{
	struct test_server s;
	struct probe victim;
	struct probe_result r;
	struct mnt m;
	char all[256], log[16384];
	uint64_t unread;
	int status;

	srv_get(&s);
	snprintf(all, sizeof(all), "%s,actimeo=60", opts);
	mnt_start(&m, &s, all);
	prepare_file(&m, "victim");
	probe_start_in(&victim, PROBE_READ, mpath(&m, "victim"), READ_LEN, true,
		       0, kind, "copy-up");
	probe_wait_ready(&victim);
	srv_stall(&s);
	unread = srv_unread(&s);
	probe_go(&victim);
	probe_wait_blocked(&victim);
	srv_wait_call(&s, unread);
	if (sig)
		ASSERT_EQ(kill(victim.pid, sig), 0);
	switch (want) {
	case COMPLETES:
	case KILLED_LATE:
		if (probe_wait(&victim, STALL_MS, &r, &status)) {
			srv_resume(&s);
			mnt_dump_tasks(&m, log, sizeof(log));
			TEST__FAIL("ended in the stall (ret %zd, errno %d, "
				   "status 0x%x); the daemon:\n%s",
				   r.ret, r.err, status, log);
		}
		srv_resume(&s);
		ASSERT(probe_wait(&victim, 20000, &r, &status));
		if (want == KILLED_LATE) {
			ASSERT(WIFSIGNALED(status));
			ASSERT_EQ(WTERMSIG(status), sig);
			break;
		}
		ASSERT(WIFEXITED(status));
		ASSERT_EQ(r.err, 0);
		ASSERT_EQ(r.ret, READ_LEN);
		ASSERT_EQ(r.data[0], 'a');
		ASSERT_EQ(r.sigs, sig == SIGINT ? 1 : 0);
		break;
	case EINTR_NOW:
		ASSERT(probe_wait(&victim, PROMPT_MS, &r, &status));
		srv_resume(&s);
		ASSERT(WIFEXITED(status));
		ASSERT_EQ(r.ret, -1);
		ASSERT_EQ(r.err, EINTR);
		break;
	case KILLED_NOW:
		ASSERT(probe_wait(&victim, PROMPT_MS, &r, &status));
		srv_resume(&s);
		ASSERT(WIFSIGNALED(status));
		ASSERT_EQ(WTERMSIG(status), sig);
		break;
	case EIO_LATE:
		ASSERT(probe_wait(&victim, 20000, &r, &status));
		srv_resume(&s);
		ASSERT(WIFEXITED(status));
		ASSERT_EQ(r.ret, -1);
		ASSERT_EQ(r.err, EIO);
		break;
	}
	mnt_stop(&m);
}

/*
 * On an intr mount a handled SIGINT ends a read (intr_hard_intr_sigint);
 * inside the caller's killable region it does not, under region and
 * sigmask: the caller's region encloses the mount's waits.  Under percall
 * it is recorded only, and the read's own wait decides: EINTR.
 */
TEST_IMPL(callers_region_killable_sigint)
{
	caller_row("hard,intr,policy=region", REGION_KILLABLE, SIGINT,
		   COMPLETES);
	return 0;
}

TEST_IMPL(callers_sigmask_killable_sigint)
{
	caller_row("hard,intr,policy=sigmask", REGION_KILLABLE, SIGINT,
		   COMPLETES);
	return 0;
}

TEST_IMPL(callers_percall_killable_sigint)
{
	caller_row("hard,intr,policy=percall", REGION_KILLABLE, SIGINT,
		   EINTR_NOW);
	return 0;
}

/* A killable region lets SIGKILL through at once. */
TEST_IMPL(callers_region_killable_sigkill)
{
	caller_row("hard,intr,policy=region", REGION_KILLABLE, SIGKILL,
		   KILLED_NOW);
	return 0;
}

/*
 * An uninterruptible region holds even SIGKILL until the server answers
 * (then the process dies); under percall the killable mount's own wait
 * lets it through.
 */
TEST_IMPL(callers_region_uninterruptible_sigkill)
{
	caller_row("hard,killable,policy=region", REGION_UNINTERRUPTIBLE,
		   SIGKILL, KILLED_LATE);
	return 0;
}

TEST_IMPL(callers_sigmask_uninterruptible_sigkill)
{
	caller_row("hard,killable,policy=sigmask", REGION_UNINTERRUPTIBLE,
		   SIGKILL, KILLED_LATE);
	return 0;
}

/* A handled signal waits too: the read completes, the handler after. */
TEST_IMPL(callers_region_uninterruptible_sigint)
{
	caller_row("hard,intr,policy=region", REGION_UNINTERRUPTIBLE, SIGINT,
		   COMPLETES);
	return 0;
}

TEST_IMPL(callers_percall_uninterruptible_sigkill)
{
	caller_row("hard,killable,policy=percall", REGION_UNINTERRUPTIBLE,
		   SIGKILL, KILLED_NOW);
	return 0;
}

/* A soft mount still times out inside an uninterruptible region. */
TEST_IMPL(callers_soft_uninterruptible_timeout)
{
	caller_row("soft,timeo=5,retrans=1,policy=region",
		   REGION_UNINTERRUPTIBLE, 0, EIO_LATE);
	return 0;
}

/*
 * intrfsctl tasks shows the caller's region in the request's stack,
 * outside the mount's, with the caller's tid and reason; the trace logs
 * the ioctl's begin and the request's frames.
 */
TEST_IMPL(callers_shown)
{
	struct test_server s;
	struct probe victim;
	struct probe_result r;
	struct mnt m;
	char trace[] = "/tmp/intrfs-test-trace.XXXXXX", opts[128], want[160];
	char out[16384], *buf, *caller, *own;
	int fd, status;
	pid_t pid;

	srv_get(&s);
	fd = mkstemp(trace);
	ASSERT_GE(fd, 0);
	close(fd);
	snprintf(opts, sizeof(opts), "hard,killable,trace=%s", trace);
	mnt_start(&m, &s, opts);
	prepare_file(&m, "victim");
	probe_start_in(&victim, PROBE_READ, mpath(&m, "victim"), READ_LEN, true,
		       0, REGION_KILLABLE, "copy-up of victim");
	probe_wait_ready(&victim);
	pid = victim.pid;
	srv_stall(&s);
	probe_go(&victim);
	probe_wait_blocked(&victim);
	snprintf(want, sizeof(want),
		 "killable region \"copy-up of victim\" of the caller, thread "
		 "%d (region_caller_begin)",
		 (int)pid);
	tasks_show(&m, want, out, sizeof(out));
	/* Listed innermost first: the mount's region above the caller's. */
	caller = strstr(out, want);
	own = strstr(out, "region \"fuse request\"");
	ASSERT_NOT_NULL(own);
	ASSERT(own < caller);
	srv_resume(&s);
	ASSERT(probe_wait(&victim, 20000, &r, &status));
	ASSERT_EQ(r.ret, READ_LEN);
	mnt_stop(&m);
	ASSERT_GE(read_file(trace, &buf), 0);
	unlink(trace);
	snprintf(want, sizeof(want),
		 "\"ev\":\"caller_region_begin\",\"tid\":%d,\"kind\":"
		 "\"killable\",\"reason\":\"copy-up of victim\",\"depth\":0",
		 (int)pid);
	ASSERT_CONTAINS(buf, want);
	ASSERT_CONTAINS(buf, "\"ev\":\"region_begin\"");
	ASSERT_CONTAINS(buf, "\"reason\":\"copy-up of victim\",\"site\":"
			     "\"caller\",\"by\":\"region_caller_begin\"");
	free(buf);
	return 0;
}

/* Who may hold what, and for how long. */

/* The user nobody: a caller without CAP_SYS_ADMIN. */
#define NOBODY 65534

enum who {
	ROOT,
	USER, /* nobody */
	USER_NS, /* nobody, with every capability of a user namespace */
};

/*
 * The kind the mount holds an uninterruptible region of who as (the
 * ioctl's kind, on the way back), in a child; 0 when who cannot be had
 * (no user namespaces here).
 */
static uint32_t held_as(const char *path, enum who who)
{
	int p[2], st;
	uint32_t kind = 0;
	pid_t pid;

	ASSERT_EQ(pipe(p), 0);
	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct region_caller_ioc ioc;
		int fd = open(path, O_RDONLY);
		gid_t g = NOBODY;

		signal(SIGABRT, SIG_DFL);
		if (fd < 0)
			_exit(100);
		if (who != ROOT &&
		    (setgroups(1, &g) < 0 || setresgid(g, g, g) < 0 ||
		     setresuid(NOBODY, NOBODY, NOBODY) < 0))
			_exit(101);
		if (who == USER_NS && unshare(CLONE_NEWUSER) < 0)
			_exit(0); /* says nothing: not to be had here */
		memset(&ioc, 0, sizeof(ioc));
		ioc.op = REGION_CALLER_BEGIN;
		ioc.kind = REGION_UNINTERRUPTIBLE;
		snprintf(ioc.reason, sizeof(ioc.reason), "who holds");
		if (ioctl(fd, REGION_CALLER_IOC, &ioc) < 0)
			_exit(102);
		if (write(p[1], &ioc.kind, sizeof(ioc.kind)) !=
		    sizeof(ioc.kind))
			_exit(103);
		_exit(0);
	}
	close(p[1]);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT(WIFEXITED(st));
	ASSERT_EQ(WEXITSTATUS(st), 0);
	if (read(p[0], &kind, sizeof(kind)) != sizeof(kind))
		kind = 0;
	close(p[0]);
	return kind;
}

/*
 * An uninterruptible region is for a caller with CAP_SYS_ADMIN in the
 * daemon's user namespace, as the kernel's PR_REGION: another caller's is
 * held as killable (and the log says so), unless the mount sets
 * caller_hold_any.  The capabilities of a user namespace of one's own
 * count for nothing.
 */
TEST_IMPL(callers_who_holds)
{
	static const struct {
		const char *opts;
		enum who who;
		enum region_kind held;
	} rows[] = {
		{ "allow_other", ROOT, REGION_UNINTERRUPTIBLE },
		{ "allow_other", USER, REGION_KILLABLE },
		{ "allow_other", USER_NS, REGION_KILLABLE },
		{ "allow_other,caller_hold_max=30", USER, REGION_KILLABLE },
		{ "allow_other,caller_hold_any", USER, REGION_UNINTERRUPTIBLE },
		{ "allow_other,caller_hold_any", USER_NS,
		  REGION_UNINTERRUPTIBLE },
	};
	static const char *const names[] = { "root", "nobody",
					     "nobody in a user namespace" };
	struct test_server s;

	srv_get(&s);
	for (unsigned i = 0; i < ARRAY_SIZE(rows); i++) {
		struct mnt m;
		uint32_t kind;

		mnt_start(&m, &s, rows[i].opts);
		write_file(lpath(&m, "f"), "x", 1);
		kind = held_as(mpath(&m, "f"), rows[i].who);
		if (!kind && rows[i].who == USER_NS) {
			fprintf(stderr, "# no user namespace for nobody here: "
					"that row not run\n");
		} else if (kind != (uint32_t)rows[i].held) {
			TEST__FAIL("-o %s: %s's uninterruptible region is held "
				   "as %s, not %s",
				   rows[i].opts, names[rows[i].who],
				   kind ? region_kind_name(kind) : "nothing",
				   region_kind_name(rows[i].held));
		}
		if (rows[i].who != ROOT && kind == REGION_KILLABLE)
			mnt_wait_log(&m,
				     "uninterruptible caller region \"who "
				     "holds\" of user 65534 held as killable",
				     5000);
		mnt_stop(&m);
	}
	return 0;
}

/*
 * A fatal signal held by an uninterruptible region while the server
 * stalls: the caller dies no later than the mount's bound (the major
 * timeout, or caller_hold_max=), long before the server comes back, and
 * not before it; a user's region, held as killable, lets SIGKILL through
 * at once.
 */
TEST_IMPL(callers_hold_bounded)
{
	static const struct {
		const char *opts;
		uid_t uid;
		unsigned alive_ms; /* still held then */
		unsigned gone_ms; /* dead by then */
	} rows[] = {
		/* The major timeout: timeo × (retrans + 1) = 2 s. */
		{ "hard,timeo=10,retrans=1,policy=region", 0, 1500, 5000 },
		{ "hard,policy=region,caller_hold_max=1", 0, 700, 4000 },
		{ "hard,policy=sigmask,caller_hold_max=1", 0, 700, 4000 },
		{ "hard,policy=region,caller_hold_max=0", 0, 0, PROMPT_MS },
		/* A user's region is killable... */
		{ "allow_other,hard,policy=region", NOBODY, 0, PROMPT_MS },
		/* ...a bound alone lets it hold nothing... */
		{ "allow_other,hard,policy=region,caller_hold_max=1", NOBODY, 0,
		  PROMPT_MS },
		/* ...unless the mount lets it hold, bounded all the same. */
		{ "allow_other,hard,policy=region,caller_hold_any,"
		  "caller_hold_max=1",
		  NOBODY, 700, 4000 },
	};
	struct test_server s;

	srv_get(&s);
	for (unsigned i = 0; i < ARRAY_SIZE(rows); i++) {
		struct probe victim;
		struct probe_result r;
		struct mnt m;
		char all[256], log[16384];
		uint64_t unread, t0;
		int status;
		bool done;

		snprintf(all, sizeof(all), "%s,actimeo=60", rows[i].opts);
		mnt_start(&m, &s, all);
		prepare_file(&m, "victim");
		probe_start_in(&victim, PROBE_READ, mpath(&m, "victim"),
			       READ_LEN, true, rows[i].uid,
			       REGION_UNINTERRUPTIBLE, "held");
		probe_wait_ready(&victim);
		srv_stall(&s);
		unread = srv_unread(&s);
		probe_go(&victim);
		probe_wait_blocked(&victim);
		srv_wait_call(&s, unread);
		t0 = region_now_ns();
		ASSERT_EQ(kill(victim.pid, SIGKILL), 0);
		if (rows[i].alive_ms &&
		    probe_wait(&victim, rows[i].alive_ms, &r, &status)) {
			srv_resume(&s);
			TEST__FAIL("-o %s, uid %u: dead %.0f ms after SIGKILL, "
				   "before the bound",
				   all, (unsigned)rows[i].uid,
				   (double)(region_now_ns() - t0) / 1e6);
		}
		done = probe_wait(&victim, rows[i].gone_ms - rows[i].alive_ms,
				  &r, &status);
		if (!done) {
			mnt_dump_tasks(&m, log, sizeof(log));
			srv_resume(&s);
			TEST__FAIL("-o %s, uid %u: still alive %u ms after "
				   "SIGKILL, the server stalled; the "
				   "daemon:\n%s",
				   all, (unsigned)rows[i].uid, rows[i].gone_ms,
				   log);
		}
		fprintf(stderr, "# -o %s, uid %u: dead %.0f ms after SIGKILL\n",
			all, (unsigned)rows[i].uid,
			(double)(region_now_ns() - t0) / 1e6);
		ASSERT(WIFSIGNALED(status));
		ASSERT_EQ(WTERMSIG(status), SIGKILL);
		if (rows[i].alive_ms)
			mnt_wait_log(&m,
				     "by its uninterruptible caller region "
				     "\"held\" ends its request now",
				     5000);
		srv_resume(&s);
		mnt_stop(&m);
	}
	return 0;
}

/* The caller table. */

/* As callers.c: the table's entries, and those only root may take. */
#define TABLE 4096
#define RESERVED 64

struct hog {
	int fd; /* a file of the mount */
	int hold; /* read end: the threads wait on it */
	_Atomic unsigned ok, nospc, other;
	_Atomic unsigned done;
};

static void *hog_thread(void *arg)
{
	struct hog *h = arg;
	int rc = region_caller_begin(h->fd, REGION_KILLABLE, "hog");
	char c;

	if (rc == 0)
		atomic_fetch_add(&h->ok, 1);
	else if (rc == -ENOSPC)
		atomic_fetch_add(&h->nospc, 1);
	else
		atomic_fetch_add(&h->other, 1);
	atomic_fetch_add(&h->done, 1);
	/* Holds its region until the pipe closes, then ends with it open. */
	if (rc == 0 && read(h->hold, &c, 1) < 0)
		return NULL;
	return NULL;
}

/*
 * As uid, threads each open a region until one gets ENOSPC (at most
 * TABLE + 1); reports how many got one, then holds them until *release
 * is closed.  Its pid; *count the pipe its count comes on.
 */
static pid_t hog_start(const char *path, uid_t uid, int *count, int *release)
{
	int c[2], r[2];
	pid_t pid;

	ASSERT_EQ(pipe(c), 0);
	ASSERT_EQ(pipe(r), 0);
	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		static struct hog h;
		pthread_attr_t attr;
		gid_t g = (gid_t)uid;
		unsigned n[2];

		signal(SIGABRT, SIG_DFL);
		close(c[0]);
		close(r[1]);
		h.fd = open(path, O_RDONLY);
		h.hold = r[0];
		if (h.fd < 0 || setgroups(1, &g) < 0 ||
		    setresgid(g, g, g) < 0 || setresuid(uid, uid, uid) < 0)
			_exit(100);
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 64 * 1024);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		for (unsigned i = 0; i <= TABLE; i++) {
			pthread_t th;

			if (pthread_create(&th, &attr, hog_thread, &h) != 0)
				_exit(101);
			while (atomic_load(&h.done) <= i)
				sched_yield();
			if (atomic_load(&h.nospc) || atomic_load(&h.other))
				break;
		}
		n[0] = atomic_load(&h.ok);
		n[1] = atomic_load(&h.other);
		if (write(c[1], n, sizeof(n)) != sizeof(n))
			_exit(102);
		/* Until the parent lets go: the threads exit with it. */
		while (read(r[0], n, 1) > 0)
			;
		_exit(0);
	}
	close(c[1]);
	close(r[0]);
	*count = c[0];
	*release = r[1];
	return pid;
}

static int try_begin(const char *path)
{
	int fd = open(path, O_RDONLY), rc;

	if (fd < 0)
		return errno;
	rc = region_caller_begin(fd, REGION_KILLABLE, "other");
	if (rc == 0)
		rc = region_caller_end(fd, REGION_KILLABLE);
	close(fd);
	return -rc;
}

/*
 * A user's threads may hold at most half of the caller table that other
 * users leave (but its last entries, root's): the user's next begin gets
 * ENOSPC, said in the log, while another user and root still get theirs.
 * The log stays bounded when the hog's threads all end with their regions
 * open.
 */
TEST_IMPL(callers_table_share)
{
	static const gid_t user_gid[] = { USER_GID };
	struct test_server s;
	struct mnt m;
	unsigned n[2], share = (TABLE - RESERVED) / 2;
	char *log;
	int count, release, st;
	pid_t pid;

	srv_get(&s);
	mnt_start(&m, &s, "allow_other");
	write_file(lpath(&m, "f"), "x", 1);
	pid = hog_start(mpath(&m, "f"), NOBODY, &count, &release);
	ASSERT_EQ(read(count, n, sizeof(n)), (ssize_t)sizeof(n));
	fprintf(stderr, "# nobody's threads got %u regions, then ENOSPC\n",
		n[0]);
	ASSERT_EQ(n[1], 0);
	ASSERT_EQ(n[0], share);
	mnt_wait_log(&m,
		     "no room for another caller region: user 65534 has "
		     "regions open in 2016 threads",
		     5000);
	/* Another user, and root. */
	ASSERT_EQ(as_user(USER_UID, USER_GID, user_gid, 1, try_begin,
			  mpath(&m, "f")),
		  0);
	ASSERT_EQ(try_begin(mpath(&m, "f")), 0);
	/* The hog's threads end, each with its region open. */
	close(release);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(count);
	test_sleep_ms(1000);
	ASSERT_GE(read_file(m.log, &log), 0);
	fprintf(stderr, "# the log after %u threads ended: %zu bytes\n", n[0],
		strlen(log));
	ASSERT_LT(strlen(log), 16384);
	free(log);
	mnt_stop(&m);
	return 0;
}

/* The log. */

/* As nobody: bad ioctls for ms; how many were made. */
static unsigned flood(const char *path, unsigned ms)
{
	int p[2], st;
	unsigned calls = 0;
	pid_t pid;

	ASSERT_EQ(pipe(p), 0);
	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int fd = open(path, O_RDONLY);
		gid_t g = NOBODY;
		uint64_t end = region_now_ns() + (uint64_t)ms * 1000000u;
		unsigned k = 0;

		signal(SIGABRT, SIG_DFL);
		if (fd < 0 || setgroups(1, &g) < 0 || setresgid(g, g, g) < 0 ||
		    setresuid(NOBODY, NOBODY, NOBODY) < 0)
			_exit(100);
		while (region_now_ns() < end) {
			/* An unknown kind, and ends without a begin. */
			if (raw_ioc(fd, REGION_CALLER_BEGIN, 9, 0, "x", NULL) !=
				    -EINVAL ||
			    region_caller_end(fd, REGION_KILLABLE) != -EINVAL)
				_exit(101);
			k += 2;
		}
		if (write(p[1], &k, sizeof(k)) != sizeof(k))
			_exit(102);
		_exit(0);
	}
	close(p[1]);
	ASSERT_EQ(read(p[0], &calls, sizeof(calls)), (ssize_t)sizeof(calls));
	close(p[0]);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return calls;
}

/*
 * A user's bad ioctls in a loop: a few log lines, then a count of those
 * not written; root's own line still comes while the user's are dropped.
 */
TEST_IMPL(callers_log_flood)
{
	struct test_server s;
	struct mnt m;
	struct stat st;
	unsigned calls;
	off_t before;
	int fd;

	srv_get(&s);
	mnt_start(&m, &s, "allow_other");
	write_file(lpath(&m, "f"), "x", 1);
	ASSERT_EQ(stat(m.log, &st), 0);
	before = st.st_size;
	calls = flood(mpath(&m, "f"), 3000);
	ASSERT_EQ(stat(m.log, &st), 0);
	fprintf(stderr, "# %u bad ioctls in 3 s: %lld bytes of log\n", calls,
		(long long)(st.st_size - before));
	ASSERT_GT(calls, 1000);
	ASSERT_LT(st.st_size - before, 4096);
	/* Root, right after: not dropped with the user's. */
	fd = open(mpath(&m, "f"), O_RDONLY);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(raw_ioc(fd, REGION_CALLER_BEGIN, 11, 0, "x", NULL), -EINVAL);
	close(fd);
	mnt_wait_log(&m, "caller region of unknown kind 11", 5000);
	/* The next interval says how many lines were not written. */
	test_sleep_ms(2500);
	flood(mpath(&m, "f"), 100);
	mnt_wait_log(&m, "lines callers caused were not logged", 5000);
	mnt_stop(&m);
	return 0;
}

/* intrfs-region(1). */

struct cmd {
	pid_t pid; /* intrfs-region */
	pid_t probe; /* the region-probe below it */
	int out; /* its stdout */
	int ready, go;
};

/*
 * intrfs-region ARGS -- sh -c 'region-probe ...; exit $?': the probe is
 * the shell's child, a descendant of the command.
 */
static void cmd_start(struct cmd *c, const char *kind, const char *reason,
		      const char *path)
{
	int out[2], rdy[2], go[2];
	char line[32];
	ssize_t n;

	ASSERT_EQ(pipe(out), 0);
	ASSERT_EQ(pipe(rdy), 0);
	ASSERT_EQ(pipe(go), 0);
	fflush(NULL);
	c->pid = fork();
	ASSERT_GE(c->pid, 0);
	if (c->pid == 0) {
		dup2(out[1], 1);
		dup2(rdy[1], 3);
		dup2(go[0], 4);
		execl(INTRFS_REGION_BIN, "intrfs-region", "-k", kind, "-r",
		      reason, "--", "/bin/sh", "-c", "\"$0\" \"$@\"; exit $?",
		      REGION_PROBE_BIN, "read", path, "65536", "direct",
		      (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	close(rdy[1]);
	close(go[0]);
	c->out = out[0];
	c->ready = rdy[0];
	c->go = go[1];
	n = read(c->ready, line, sizeof(line) - 1);
	ASSERT_GT(n, 0);
	line[n] = '\0';
	c->probe = (pid_t)atoi(line);
	ASSERT_GT(c->probe, 0);
	ASSERT_NE(c->probe, c->pid);
}

/* Its line ("ret=... err=... sigs=..."), and intrfs-region's status. */
static int cmd_end(struct cmd *c, char *line, size_t len)
{
	size_t got = 0;
	ssize_t n;
	int st;

	while (got < len - 1 &&
	       (n = read(c->out, line + got, len - 1 - got)) > 0)
		got += (size_t)n;
	line[got] = '\0';
	ASSERT_EQ(waitpid(c->pid, &st, 0), c->pid);
	close(c->out);
	close(c->ready);
	close(c->go);
	return st;
}

/*
 * The region follows fork and exec: a descendant's read, inside a killable
 * region on an intr mount, survives a handled SIGINT under region (and
 * leaks EINTR under percall).  The region goes with the command.
 */
static void cmd_row(const char *policy, const char *want_line)
{
	struct test_server s;
	struct mnt m;
	struct cmd c;
	char opts[128], line[256], want[200], out[16384], reg[64];
	uint64_t unread;
	int st;

	srv_get(&s);
	snprintf(opts, sizeof(opts), "hard,intr,actimeo=60,policy=%s", policy);
	mnt_start(&m, &s, opts);
	prepare_file(&m, "victim");
	cmd_start(&c, "killable", "cmd copy", mpath(&m, "victim"));
	snprintf(reg, sizeof(reg), "/run/intrfs/regions/%d", (int)c.pid);
	ASSERT_EQ(access(reg, F_OK), 0);
	srv_stall(&s);
	unread = srv_unread(&s);
	ASSERT_EQ(write(c.go, "g", 1), 1);
	ASSERT_WITHIN(proc_in_fuse(c.probe), 10000);
	srv_wait_call(&s, unread);
	snprintf(want, sizeof(want),
		 "killable region \"cmd copy\" of the caller, thread %d "
		 "(intrfs-region)",
		 (int)c.probe);
	tasks_show(&m, want, out, sizeof(out));
	ASSERT_EQ(kill(c.probe, SIGINT), 0);
	test_sleep_ms(STALL_MS);
	srv_resume(&s);
	st = cmd_end(&c, line, sizeof(line));
	ASSERT(WIFEXITED(st));
	ASSERT_EQ(WEXITSTATUS(st), 0);
	if (strncmp(line, want_line, strlen(want_line)) != 0)
		TEST__FAIL("the probe said '%s', not '%s...'", line, want_line);
	/* The region is gone with the command. */
	ASSERT_EQ(access(reg, F_OK), -1);
	mnt_stop(&m);
}

TEST_IMPL(callers_cmd_region)
{
	cmd_row("region", "ret=65536 err=0 sigs=1 ");
	return 0;
}

TEST_IMPL(callers_cmd_percall)
{
	cmd_row("percall", "ret=-1 err=4 sigs=1 ");
	return 0;
}

/*
 * Usage, exit statuses, nesting, and a mount made after the command began:
 * its requests are in the region too (the trace shows the frames).
 */
TEST_IMPL(callers_cmd_usage)
{
	struct test_server s;
	struct mnt m;
	char out[8192], trace[] = "/tmp/intrfs-test-trace.XXXXXX", opts[128];
	char *buf;
	int st, fd, go[2];
	pid_t pid;

	st = run_out((const char *const[]){ INTRFS_REGION_BIN, NULL }, out,
		     sizeof(out), 10000);
	ASSERT(WIFEXITED(st));
	ASSERT_EQ(WEXITSTATUS(st), 2);
	ASSERT_CONTAINS(out, "no command to run");
	ASSERT_CONTAINS(out, "Usage: intrfs-region");
	st = run_out((const char *const[]){ INTRFS_REGION_BIN, "-k", "soft",
					    "--", "true", NULL },
		     out, sizeof(out), 10000);
	ASSERT_EQ(WEXITSTATUS(st), 2);
	ASSERT_CONTAINS(out, "unknown kind 'soft'");
	st = run_out((const char *const[]){ INTRFS_REGION_BIN, "--help", NULL },
		     out, sizeof(out), 10000);
	ASSERT_EQ(WEXITSTATUS(st), 0);
	ASSERT_CONTAINS(out, "-k, --kind");
	st = run_out((const char *const[]){ INTRFS_REGION_BIN, "--",
					    "/nonexistent/cmd", NULL },
		     out, sizeof(out), 10000);
	ASSERT_EQ(WEXITSTATUS(st), 127);
	ASSERT_CONTAINS(out, "cannot run /nonexistent/cmd");
	st = run_out((const char *const[]){ INTRFS_REGION_BIN, "/bin/sh", "-c",
					    "exit 7", NULL },
		     out, sizeof(out), 10000);
	ASSERT(WIFEXITED(st));
	ASSERT_EQ(WEXITSTATUS(st), 7);
	st = run_out((const char *const[]){ INTRFS_REGION_BIN, "/bin/sh", "-c",
					    "kill -TERM $$", NULL },
		     out, sizeof(out), 10000);
	ASSERT(WIFSIGNALED(st));
	ASSERT_EQ(WTERMSIG(st), SIGTERM);
	/* Nested: the inner cgroup inside the outer. */
	st = run_out((const char *const[]){ INTRFS_REGION_BIN, "-r", "outer",
					    "--", INTRFS_REGION_BIN, "-k",
					    "uninterruptible", "-r", "inner",
					    "--", "/bin/cat",
					    "/proc/self/cgroup", NULL },
		     out, sizeof(out), 10000);
	ASSERT_EQ(WEXITSTATUS(st), 0);
	ASSERT(strstr(out, "/intrfs-region.") &&
	       strstr(strstr(out, "/intrfs-region.") + 1, "/intrfs-region."));

	/* A mount made after the command started. */
	fd = mkstemp(trace);
	ASSERT_GE(fd, 0);
	close(fd);
	ASSERT_EQ(pipe(go), 0);
	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(go[0], 4);
		dup2(null, 1);
		execl(INTRFS_REGION_BIN, "intrfs-region", "-r", "late mount",
		      "--", "/bin/sh", "-c", "read p <&4 && cat \"$p\"",
		      (char *)NULL);
		_exit(127);
	}
	close(go[0]);
	srv_get(&s);
	snprintf(opts, sizeof(opts), "trace=%s", trace);
	mnt_start(&m, &s, opts);
	write_file(lpath(&m, "f"), "late\n", 5);
	dprintf(go[1], "%s\n", mpath(&m, "f"));
	close(go[1]);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT(WIFEXITED(st));
	ASSERT_EQ(WEXITSTATUS(st), 0);
	mnt_stop(&m);
	ASSERT_GE(read_file(trace, &buf), 0);
	unlink(trace);
	ASSERT_CONTAINS(buf, "\"reason\":\"late mount\",\"site\":\"caller\","
			     "\"by\":\"intrfs-region\"");
	free(buf);
	return 0;
}

/*
 * A cgroup of the same name as an intrfs-region's, made elsewhere (as a
 * user may in a subtree delegated to it), is not that region: a process
 * in it gets EINTR from a handled SIGINT on an intr mount, as outside any
 * region, where the real one's processes would complete the read.
 */
TEST_IMPL(callers_cmd_forged)
{
	struct test_server s;
	struct probe victim;
	struct probe_result r;
	struct mnt m;
	char reg[64], *entry, *cg, *slash, parent[512], forged[600];
	char procs[640], pid[16], *own;
	uint64_t unread;
	int in[2], status, fd;
	pid_t cmd;

	srv_get(&s);
	mnt_start(&m, &s, "hard,intr,actimeo=60,policy=region");
	prepare_file(&m, "victim");
	/* The real region: a command that waits for its stdin to close. */
	ASSERT_EQ(pipe(in), 0);
	fflush(NULL);
	cmd = fork();
	ASSERT_GE(cmd, 0);
	if (cmd == 0) {
		dup2(in[0], 0);
		close(in[1]);
		execl(INTRFS_REGION_BIN, "intrfs-region", "-k", "killable",
		      "-r", "real", "--", "/bin/sh", "-c", "read x",
		      (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	snprintf(reg, sizeof(reg), "/run/intrfs/regions/%d", (int)cmd);
	ASSERT_WITHIN(access(reg, F_OK) == 0, 10000);
	/* Its third line is its cgroup: the same name, one level down. */
	ASSERT_GT(read_file(reg, &entry), 0);
	cg = strchr(entry, '\n');
	ASSERT_NOT_NULL(cg);
	cg = strchr(cg + 1, '\n');
	ASSERT_NOT_NULL(cg);
	cg++;
	cg[strcspn(cg, "\n")] = '\0';
	slash = strrchr(cg, '/');
	ASSERT_NOT_NULL(slash);
	*slash = '\0';
	snprintf(parent, sizeof(parent), "%s/intrfs-region.forged", cg);
	snprintf(forged, sizeof(forged), "%s/%s", parent, slash + 1);
	free(entry);
	ASSERT_EQ(mkdir(parent, 0755), 0);
	ASSERT_EQ(mkdir(forged, 0755), 0);

	probe_start(&victim, PROBE_READ, mpath(&m, "victim"), READ_LEN, true,
		    0);
	probe_wait_ready(&victim);
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", forged);
	fd = open(procs, O_WRONLY);
	ASSERT_GE(fd, 0);
	snprintf(pid, sizeof(pid), "%d", (int)victim.pid);
	ASSERT_EQ(write(fd, pid, strlen(pid)), (ssize_t)strlen(pid));
	close(fd);
	ASSERT(proc_read(victim.pid, "cgroup", procs, sizeof(procs)));
	own = strstr(procs, "/intrfs-region.forged/intrfs-region.");
	ASSERT_NOT_NULL(own);

	srv_stall(&s);
	unread = srv_unread(&s);
	probe_go(&victim);
	probe_wait_blocked(&victim);
	srv_wait_call(&s, unread);
	ASSERT_EQ(kill(victim.pid, SIGINT), 0);
	if (!probe_wait(&victim, PROMPT_MS, &r, &status)) {
		srv_resume(&s);
		TEST__FAIL("a SIGINT did not end the read in the forged "
			   "cgroup: it ran in the real region");
	}
	srv_resume(&s);
	ASSERT(WIFEXITED(status));
	ASSERT_EQ(r.ret, -1);
	ASSERT_EQ(r.err, EINTR);
	ASSERT_EQ(rmdir(forged), 0);
	ASSERT_EQ(rmdir(parent), 0);
	close(in[1]);
	ASSERT_EQ(waitpid(cmd, &status, 0), cmd);
	mnt_stop(&m);
	return 0;
}
