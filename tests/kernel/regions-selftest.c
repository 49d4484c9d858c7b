// SPDX-License-Identifier: GPL-2.0
/*
 * regions-selftest: the kernel's regions of uninterruptibility (the series
 * in kernel/patches/), seen from user space on the guest the oracle boots.
 * Each case runs in a child process that holds a region with
 * prctl(PR_REGION) around an ordinary interruptible wait a system call
 * makes (an empty pipe's read, a flock() wait, a nanosleep), while the
 * parent sends it a signal at SIGNAL_AT and ends the wait at RELEASE_AT;
 * the outcome (the call's result, a handler's run, the child killed) and
 * its time are checked against what the variant in force
 * (/proc/sys/kernel/regions) is expected to do.  Times are loose
 * (EARLY / LATE), as the guest runs under TCG.  Then what no variant may
 * break: no region is inherited across fork() or execve() and an end takes
 * no privilege (no child of a region's holder that SIGKILL cannot end);
 * pause() is outside a user-held region; no -ERESTARTNOINTR (errno 513)
 * reaches user space from a write restarted inside a region; kernel.regions
 * switched off and on does not hold a task in user space.
 *
 * Usage: regions-selftest [--variant off|state|delivery] [--bench N]
 *   --variant   the expectations to check (default: read from
 *               /proc/sys/kernel/regions)
 *   --bench N   instead of the cases, the cost: N rounds of getpid(),
 *               of a region begin and end (two prctl() calls) and of a
 *               1-byte read of /dev/zero, in ns a call
 * Exit status: 0 every case as expected, 1 a case was not, 2 the kernel
 * has no PR_REGION or a bad argument.
 */

#include "pr_region.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The signal comes at SIGNAL_AT, the wait can end at RELEASE_AT (ms). */
#define SIGNAL_AT 300
#define RELEASE_AT 1200
/* What happened before this was early (the signal's doing), else late. */
#define EARLY_BEFORE 900
/* A child still there this long after the release is stuck: killed. */
#define STUCK_AFTER 2000

enum variant { V_OFF, V_STATE, V_DELIVERY, V_COUNT };
static const char *const variant_name[] = { "off", "state", "delivery" };

enum wait_kind { W_PIPE, W_FLOCK, W_SLEEP, W_PAUSE };

/* One case's outcome, as the parent sees it. */
enum result { RES_OK, RES_EINTR, RES_KILLED, RES_OTHER };
static const char *const result_name[] = { "ok", "EINTR", "killed", "other" };

struct expect {
	enum result res;
	bool early;
};

struct tcase {
	const char *name;
	const char *what;
	int kinds[2]; /* regions begun, outermost first; 0 ends the list */
	enum wait_kind wait;
	int sig;
	bool handler; /* a handler (no SA_RESTART), or the default action */
	struct expect want[V_COUNT];
};

#define OK_LATE               \
	{                     \
		RES_OK, false \
	}
#define EINTR_EARLY             \
	{                       \
		RES_EINTR, true \
	}
#define KILLED_EARLY             \
	{                        \
		RES_KILLED, true \
	}
#define KILLED_LATE               \
	{                         \
		RES_KILLED, false \
	}

static const struct tcase cases[] = {
	{ "pipe-killable-sigint",
	  "pipe read, killable region, SIGINT to a handler",
	  { PR_REGION_KILLABLE },
	  W_PIPE,
	  SIGINT,
	  true,
	  { EINTR_EARLY, OK_LATE, OK_LATE } },
	{ "pipe-killable-sigkill",
	  "pipe read, killable region, SIGKILL",
	  { PR_REGION_KILLABLE },
	  W_PIPE,
	  SIGKILL,
	  false,
	  { KILLED_EARLY, KILLED_EARLY, KILLED_EARLY } },
	{ "pipe-killable-sigint-default",
	  "pipe read, killable region, SIGINT's default action (fatal)",
	  { PR_REGION_KILLABLE },
	  W_PIPE,
	  SIGINT,
	  false,
	  { KILLED_EARLY, KILLED_EARLY, KILLED_EARLY } },
	{ "pipe-unint-sigint",
	  "pipe read, uninterruptible region, SIGINT to a handler",
	  { PR_REGION_UNINTERRUPTIBLE },
	  W_PIPE,
	  SIGINT,
	  true,
	  { EINTR_EARLY, OK_LATE, OK_LATE } },
	{ "pipe-unint-sigkill",
	  "pipe read, uninterruptible region, SIGKILL",
	  { PR_REGION_UNINTERRUPTIBLE },
	  W_PIPE,
	  SIGKILL,
	  false,
	  { KILLED_EARLY, KILLED_LATE, KILLED_LATE } },
	{ "pipe-nested-sigkill",
	  "pipe read, killable region inside an uninterruptible one, SIGKILL",
	  { PR_REGION_UNINTERRUPTIBLE, PR_REGION_KILLABLE },
	  W_PIPE,
	  SIGKILL,
	  false,
	  { KILLED_EARLY, KILLED_LATE, KILLED_LATE } },
	{ "flock-killable-sigint",
	  "flock() wait, killable region, SIGINT to a handler",
	  { PR_REGION_KILLABLE },
	  W_FLOCK,
	  SIGINT,
	  true,
	  { EINTR_EARLY, OK_LATE, OK_LATE } },
	{ "flock-unint-sigkill",
	  "flock() wait, uninterruptible region, SIGKILL",
	  { PR_REGION_UNINTERRUPTIBLE },
	  W_FLOCK,
	  SIGKILL,
	  false,
	  { KILLED_EARLY, KILLED_LATE, KILLED_LATE } },
	/* do_nanosleep() tests signal_pending() itself: only delivery holds. */
	{ "nanosleep-killable-sigint",
	  "nanosleep, killable region, SIGINT to a handler",
	  { PR_REGION_KILLABLE },
	  W_SLEEP,
	  SIGINT,
	  true,
	  { EINTR_EARLY, EINTR_EARLY, OK_LATE } },
	/*
	 * SIGQUIT's default action dumps core: it does not become SIGKILL,
	 * and delivery holds it as a handled signal, to the region's end.
	 */
	{ "sleep-killable-sigquit-default",
	  "nanosleep, killable region, SIGQUIT's default action (core)",
	  { PR_REGION_KILLABLE },
	  W_SLEEP,
	  SIGQUIT,
	  false,
	  { KILLED_EARLY, KILLED_EARLY, KILLED_LATE } },
	/*
	 * pause() waits for a signal: a user-held region does not apply to
	 * it, or it would wait for ever for the signal the region holds.
	 */
	{ "pause-killable-sigusr1",
	  "pause(), killable region, SIGUSR1 to a handler",
	  { PR_REGION_KILLABLE },
	  W_PAUSE,
	  SIGUSR1,
	  true,
	  { EINTR_EARLY, EINTR_EARLY, EINTR_EARLY } },
	{ "pause-unint-sigkill",
	  "pause(), uninterruptible region, SIGKILL",
	  { PR_REGION_UNINTERRUPTIBLE },
	  W_PAUSE,
	  SIGKILL,
	  false,
	  { KILLED_EARLY, KILLED_EARLY, KILLED_EARLY } },
	{ "pipe-none-sigint",
	  "pipe read, no region, SIGINT to a handler",
	  { 0 },
	  W_PIPE,
	  SIGINT,
	  true,
	  { EINTR_EARLY, EINTR_EARLY, EINTR_EARLY } },
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_until(double t)
{
	double d = t - now_ms();
	struct timespec ts;

	if (d <= 0)
		return;
	ts.tv_sec = (time_t)(d / 1e3);
	ts.tv_nsec = (long)((d - ts.tv_sec * 1e3) * 1e6);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int region(int op, int kind)
{
	return prctl(PR_REGION, op, kind, 0, 0) < 0 ? -errno : 0;
}

static volatile sig_atomic_t handled;
static double handled_at;

static void on_signal(int sig)
{
	(void)sig;
	handled = 1;
	handled_at = now_ms();
}

/* What the child sends back: the call's result and when things happened. */
struct report {
	int rc;
	int err;
	double returned; /* ms after t0 */
	double handler; /* ms after t0, or -1 */
};

/*
 * The child: holds the case's regions, waits, reports.  t0 is shared
 * (CLOCK_MONOTONIC is the same for both processes).
 */
static void child(const struct tcase *c, double t0, int pfd[2], int rep_fd,
		  const char *lockfile)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct report r = { .handler = -1 };
	char b;
	int fd = -1;

	/* A default action that dumps core leaves no file behind. */
	setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 });
	if (c->handler)
		sigaction(c->sig, &sa, NULL);
	else
		signal(c->sig, SIG_DFL);
	close(pfd[1]);
	if (c->wait == W_FLOCK) {
		fd = open(lockfile, O_RDWR);
		if (fd < 0)
			_exit(3);
	}
	for (unsigned i = 0; i < ARRAY_SIZE(c->kinds) && c->kinds[i]; i++)
		if (region(PR_REGION_BEGIN, c->kinds[i]) < 0)
			_exit(4);
	switch (c->wait) {
	case W_PIPE:
		r.rc = (int)read(pfd[0], &b, 1);
		break;
	case W_FLOCK:
		r.rc = flock(fd, LOCK_EX);
		break;
	case W_SLEEP: {
		struct timespec ts = { .tv_sec = RELEASE_AT / 1000,
				       .tv_nsec =
					       (RELEASE_AT % 1000) * 1000000L };
		r.rc = nanosleep(&ts, NULL);
		break;
	}
	case W_PAUSE:
		r.rc = pause();
		break;
	}
	r.err = r.rc < 0 ? errno : 0;
	r.returned = now_ms() - t0;
	r.handler = handled ? handled_at - t0 : -1;
	for (int i = (int)ARRAY_SIZE(c->kinds) - 1; i >= 0; i--)
		if (c->kinds[i])
			region(PR_REGION_END, c->kinds[i]);
	if (write(rep_fd, &r, sizeof(r)) != sizeof(r))
		_exit(5);
	_exit(0);
}

/* The state letter and Regions: line of a process, for the report. */
static void proc_view(pid_t pid, char *state, char *regions, size_t len)
{
	char path[64], line[256];
	FILE *f;

	*state = '?';
	regions[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "State:\t", 7) == 0)
			*state = line[7];
		else if (strncmp(line, "Regions:\t", 9) == 0)
			snprintf(regions, len, "%.*s",
				 (int)strcspn(line + 9, "\n"), line + 9);
	}
	fclose(f);
}

static bool run_case(const struct tcase *c, enum variant v)
{
	const struct expect *want = &c->want[v];
	char lockfile[] = "/tmp/regions-selftest.XXXXXX";
	char state, regions[160], got[160];
	int pfd[2], rep[2], lockfd = -1, st;
	struct report r = { 0 };
	enum result res;
	double t0, end, died;
	bool early, ok, stuck = false;
	pid_t pid;

	if (pipe(pfd) < 0 || pipe(rep) < 0)
		return false;
	if (c->wait == W_FLOCK) {
		lockfd = mkstemp(lockfile);
		if (lockfd < 0 || flock(lockfd, LOCK_EX) < 0)
			return false;
	}
	t0 = now_ms();
	pid = fork();
	if (pid < 0)
		return false;
	if (pid == 0) {
		close(rep[0]);
		child(c, t0, pfd, rep[1], lockfile);
	}
	close(rep[1]);
	close(pfd[0]);
	sleep_until(t0 + SIGNAL_AT - 50);
	proc_view(pid, &state, regions, sizeof(regions));
	sleep_until(t0 + SIGNAL_AT);
	kill(pid, c->sig);
	/* Until the release, watch for the child's death. */
	died = -1;
	while (now_ms() < t0 + RELEASE_AT) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			died = now_ms() - t0;
			break;
		}
		sleep_until(now_ms() + 5);
	}
	sleep_until(t0 + RELEASE_AT);
	/* The release: a byte in the pipe, the lock given up. */
	/* The reader may be gone: EPIPE (SIGPIPE is ignored). */
	(void)!write(pfd[1], "x", 1);
	if (lockfd >= 0)
		flock(lockfd, LOCK_UN);
	/* Not gone STUCK_AFTER after the release: stuck, killed. */
	while (died < 0 && waitpid(pid, &st, WNOHANG) != pid) {
		if (now_ms() >= t0 + RELEASE_AT + STUCK_AFTER) {
			stuck = true;
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		sleep_until(now_ms() + 5);
	}
	end = died >= 0 ? died : now_ms() - t0;
	if (WIFSIGNALED(st)) {
		res = RES_KILLED;
		r.returned = end;
	} else if (read(rep[0], &r, sizeof(r)) == sizeof(r)) {
		res = r.rc >= 0	     ? RES_OK :
		      r.err == EINTR ? RES_EINTR :
				       RES_OTHER;
	} else {
		res = RES_OTHER;
	}
	close(rep[0]);
	close(pfd[1]);
	if (lockfd >= 0) {
		close(lockfd);
		unlink(lockfile);
	}
	early = r.returned < EARLY_BEFORE;
	ok = res == want->res && early == want->early && !stuck;
	/* A handled signal the region held runs its handler only at the end. */
	if (ok && c->handler && res == RES_OK)
		ok = r.handler >= 0 && r.handler >= r.returned - 50;
	snprintf(got, sizeof(got), "%s after %.0f ms%s", result_name[res],
		 r.returned,
		 stuck ? " (stuck: killed by the test after the release)" : "");
	if (c->handler && res != RES_KILLED && r.handler >= 0)
		snprintf(got + strlen(got), sizeof(got) - strlen(got),
			 ", handler at %.0f ms", r.handler);
	printf("%s %-30s %-9s %s (want %s %s); before the signal: state %c, %s\n",
	       ok ? "PASS" : "FAIL", c->name, variant_name[v], got,
	       result_name[want->res],
	       want->early ? "at the signal" : "at the release", state,
	       regions[0] ? regions : "no Regions: line");
	fflush(stdout);
	return ok;
}

static int check(bool cond, const char *what)
{
	printf("%s %s\n", cond ? "PASS" : "FAIL", what);
	return cond ? 0 : 1;
}

/* The Regions: line of this process, parsed. */
static int my_depths(unsigned *uu, unsigned *uk)
{
	char state, line[160];

	proc_view(getpid(), &state, line, sizeof(line));
	return sscanf(line,
		      "uninterruptible=%*u killable=%*u user_uninterruptible=%u user_killable=%u",
		      uu, uk) == 2 ?
		       0 :
		       -1;
}

/* Nesting, unbalanced ends, bad kinds, inheritance, privilege. */
static int api_cases(void)
{
	unsigned uu = 9, uk = 9;
	int fails = 0, st, rc, end;
	pid_t pid;
	bool ok;

	fails += check(
		region(PR_REGION_BEGIN, PR_REGION_KILLABLE) == 0 &&
			region(PR_REGION_BEGIN, PR_REGION_KILLABLE) == 0 &&
			region(PR_REGION_BEGIN, PR_REGION_UNINTERRUPTIBLE) ==
				0 &&
			my_depths(&uu, &uk) == 0 && uu == 1 && uk == 2,
		"api-nesting: two killable and one uninterruptible region show as user_uninterruptible=1 user_killable=2");
	fails += check(
		region(PR_REGION_END, PR_REGION_UNINTERRUPTIBLE) == 0 &&
			region(PR_REGION_END, PR_REGION_UNINTERRUPTIBLE) ==
				-EINVAL &&
			my_depths(&uu, &uk) == 0 && uu == 0 && uk == 2,
		"api-unbalanced: an end without a begin is EINVAL and the depth stays at 0");
	/* Regions end innermost first. */
	rc = region(PR_REGION_BEGIN, PR_REGION_UNINTERRUPTIBLE);
	end = region(PR_REGION_END, PR_REGION_KILLABLE);
	ok = rc == 0 && end == -EINVAL && my_depths(&uu, &uk) == 0 && uu == 1 &&
	     uk == 2;
	if (end == 0) /* a killable one ended: put it back */
		region(PR_REGION_BEGIN, PR_REGION_KILLABLE);
	ok = region(PR_REGION_END, PR_REGION_UNINTERRUPTIBLE) == 0 && ok;
	fails += check(
		ok,
		"api-order: ending a killable region while an uninterruptible one inside it is open is EINVAL, and ends nothing");
	fails += check(
		region(PR_REGION_BEGIN, 7) == -EINVAL &&
			region(3, PR_REGION_KILLABLE) == -EINVAL &&
			prctl(PR_REGION, PR_REGION_BEGIN, PR_REGION_KILLABLE, 1,
			      0) < 0 &&
			errno == EINVAL,
		"api-bad-input: an unknown kind, operation or a stray argument is EINVAL");
	/*
	 * No region is inherited: a child of fork() starts in none, and
	 * execve() ends what the process held.
	 */
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (my_depths(&uu, &uk) < 0 || uu != 0 || uk != 0)
			_exit(1);
		if (region(PR_REGION_BEGIN, PR_REGION_UNINTERRUPTIBLE) < 0 ||
		    region(PR_REGION_BEGIN, PR_REGION_KILLABLE) < 0)
			_exit(2);
		execl("/bin/sh", "sh", "-c",
		      "grep -q 'user_uninterruptible=0 user_killable=0' /proc/self/status",
		      (char *)NULL);
		_exit(3);
	}
	waitpid(pid, &st, 0);
	fails += check(
		WIFEXITED(st) && WEXITSTATUS(st) == 0,
		"api-not-inherited: a child of fork() starts in no region (its parent in user_killable=2), and execve() ends the ones it began");
	region(PR_REGION_END, PR_REGION_KILLABLE);
	region(PR_REGION_END, PR_REGION_KILLABLE);
	fails += check(my_depths(&uu, &uk) == 0 && uu == 0 && uk == 0,
		       "api-balanced: every region ended, the depths are 0");
	/* A begin takes CAP_SYS_ADMIN, an end nothing. */
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (region(PR_REGION_BEGIN, PR_REGION_UNINTERRUPTIBLE) < 0 ||
		    setgid(65534) < 0 || setuid(65534) < 0)
			_exit(3);
		_exit(region(PR_REGION_END, PR_REGION_UNINTERRUPTIBLE) == 0 &&
				      my_depths(&uu, &uk) == 0 && uu == 0 ?
			      0 :
			      1);
	}
	waitpid(pid, &st, 0);
	fails += check(
		WIFEXITED(st) && WEXITSTATUS(st) == 0,
		"api-end-unprivileged: a process that began a region as root and became uid 65534 ends it");
	/* Without CAP_SYS_ADMIN: EPERM. */
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(3);
		_exit(region(PR_REGION_BEGIN, PR_REGION_KILLABLE) == -EPERM ?
			      0 :
			      1);
	}
	waitpid(pid, &st, 0);
	fails += check(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		       "api-eperm: a process without CAP_SYS_ADMIN gets EPERM");
	return fails;
}

/* Writes kernel.regions: 0, or -1 having said why. */
static int set_variant(enum variant v)
{
	char val[4];
	int fd = open("/proc/sys/kernel/regions", O_WRONLY), rc = -1;
	int n = snprintf(val, sizeof(val), "%d\n", (int)v);

	if (fd >= 0) {
		rc = write(fd, val, (size_t)n) == n ? 0 : -1;
		close(fd);
	}
	if (rc < 0)
		perror("kernel.regions");
	return rc;
}

/*
 * kernel.regions=0 releases a task held in an uninterruptible region: a
 * SIGKILL held at SIGNAL_AT ends it when the sysctl is written, before the
 * release.  Only where regions are on.
 */
static int sysctl_case(enum variant v)
{
	int pfd[2], st;
	double t0, died;
	pid_t pid;
	bool ok;

	if (v == V_OFF || pipe(pfd) < 0)
		return 0;
	t0 = now_ms();
	pid = fork();
	if (pid == 0) {
		char b;

		close(pfd[1]);
		region(PR_REGION_BEGIN, PR_REGION_UNINTERRUPTIBLE);
		if (read(pfd[0], &b, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(pfd[0]);
	sleep_until(t0 + SIGNAL_AT);
	kill(pid, SIGKILL);
	sleep_until(t0 + (SIGNAL_AT + RELEASE_AT) / 2.0);
	set_variant(V_OFF);
	waitpid(pid, &st, 0);
	died = now_ms() - t0;
	set_variant(v);
	close(pfd[1]);
	ok = WIFSIGNALED(st) && died > SIGNAL_AT + 100 &&
	     died < RELEASE_AT - 100;
	printf("%s %-30s %-9s killed=%d after %.0f ms (want killed when kernel.regions=0 is written, at %d ms)\n",
	       ok ? "PASS" : "FAIL", "sysctl-off-releases", variant_name[v],
	       WIFSIGNALED(st), died, (SIGNAL_AT + RELEASE_AT) / 2);
	return ok ? 0 : 1;
}

/*
 * No unkillable child: root begins an uninterruptible region and forks;
 * the child becomes uid 65534 and waits on a pipe.  SIGKILL at SIGNAL_AT
 * kills it at once: it inherited no region.
 */
static int inherit_case(enum variant v)
{
	int pfd[2], st;
	double t0, died = -1;
	pid_t pid;
	bool ok;

	if (pipe(pfd) < 0)
		return 1;
	fflush(stdout);
	if (region(PR_REGION_BEGIN, PR_REGION_UNINTERRUPTIBLE) < 0)
		return 1;
	t0 = now_ms();
	pid = fork();
	if (pid == 0) {
		char b;

		close(pfd[1]);
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(3);
		_exit(read(pfd[0], &b, 1) < 0 ? 1 : 0);
	}
	region(PR_REGION_END, PR_REGION_UNINTERRUPTIBLE);
	close(pfd[0]);
	sleep_until(t0 + SIGNAL_AT);
	kill(pid, SIGKILL);
	while (now_ms() < t0 + RELEASE_AT) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			died = now_ms() - t0;
			break;
		}
		sleep_until(now_ms() + 5);
	}
	(void)!write(pfd[1], "x", 1);
	if (died < 0) {
		waitpid(pid, &st, 0);
		died = now_ms() - t0;
	}
	close(pfd[1]);
	ok = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && died < EARLY_BEFORE;
	printf("%s %-30s %-9s killed=%d after %.0f ms (want killed at the signal: a child of fork() in a region's parent, now uid 65534, is in none)\n",
	       ok ? "PASS" : "FAIL", "fork-setuid-sigkill", variant_name[v],
	       WIFSIGNALED(st), died);
	return ok ? 0 : 1;
}

/*
 * No -ERESTART* reaches user space.  Two processes write lo's MTU at once;
 * netdev_store() answers restart_syscall() when the other holds rtnl,
 * which sets TIF_SIGPENDING with no signal pending and returns
 * -ERESTARTNOINTR, to be restarted on the way out.  One of the two writes
 * inside a killable region.  Every write must succeed.
 */
#define MTU_WRITES 4000
#define MTU_PATH "/sys/class/net/lo/mtu"

static unsigned mtu_writer(bool in_region)
{
	char mtu[32];
	unsigned bad = 0;
	ssize_t n;
	int fd = open(MTU_PATH, O_RDWR);

	if (fd < 0)
		return MTU_WRITES;
	n = pread(fd, mtu, sizeof(mtu) - 1, 0);
	if (n <= 0)
		return MTU_WRITES;
	if (in_region && region(PR_REGION_BEGIN, PR_REGION_KILLABLE) < 0)
		return MTU_WRITES;
	for (unsigned i = 0; i < MTU_WRITES; i++)
		if (pwrite(fd, mtu, (size_t)n, 0) != n)
			bad++;
	close(fd);
	return bad;
}

static int restart_case(enum variant v)
{
	unsigned bad[2] = { 0, 0 };
	pid_t pids[2];
	int rep[2], st;
	bool ok = true;

	if (access(MTU_PATH, W_OK) < 0) {
		printf("FAIL %-30s %-9s no %s to write (%s): the guest needs lo\n",
		       "restart-not-leaked", variant_name[v], MTU_PATH,
		       strerror(errno));
		return 1;
	}
	if (pipe(rep) < 0)
		return 1;
	fflush(stdout);
	for (int k = 0; k < 2; k++) {
		pids[k] = fork();
		if (pids[k] == 0) {
			unsigned b = mtu_writer(k == 0);

			_exit(write(rep[1], &b, sizeof(b)) == sizeof(b) ? 0 :
									  1);
		}
	}
	close(rep[1]);
	for (int k = 0; k < 2; k++) {
		waitpid(pids[k], &st, 0);
		ok = ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	/* Which report is whose does not matter: both must be 0. */
	for (int k = 0; k < 2; k++)
		if (read(rep[0], &bad[k], sizeof(bad[k])) != sizeof(bad[k]))
			ok = false;
	close(rep[0]);
	ok = ok && !bad[0] && !bad[1];
	printf("%s %-30s %-9s %u and %u of %d writes of %s failed (one writer in a killable region; want 0: no errno 513, ERESTARTNOINTR)\n",
	       ok ? "PASS" : "FAIL", "restart-not-leaked", variant_name[v],
	       bad[0], bad[1], MTU_WRITES, MTU_PATH);
	return ok ? 0 : 1;
}

/*
 * Switched off and on again, regions do not hold a task in user space.
 * A child in a killable region waits on a pipe; kernel.regions goes to 0;
 * the read returns (no syscall exit hook while off); kernel.regions goes
 * back; the child now spins in user space, making no system call.  A
 * handled SIGUSR1 must reach it.  Only where regions are on.
 */
struct spin {
	volatile int handled;
	volatile int stop;
};

static struct spin *spin;

static void on_spin_signal(int sig)
{
	(void)sig;
	spin->handled = 1;
}

static int toggle_case(enum variant v)
{
	double t0, sent, seen = -1;
	int pfd[2], st;
	pid_t pid;
	bool ok;

	if (v == V_OFF || pipe(pfd) < 0)
		return 0;
	spin = mmap(NULL, sizeof(*spin), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (spin == MAP_FAILED)
		return 1;
	fflush(stdout);
	t0 = now_ms();
	pid = fork();
	if (pid == 0) {
		struct sigaction sa = { .sa_handler = on_spin_signal };
		char b;

		close(pfd[1]);
		sigaction(SIGUSR1, &sa, NULL);
		if (region(PR_REGION_BEGIN, PR_REGION_KILLABLE) < 0 ||
		    read(pfd[0], &b, 1) != 1)
			_exit(1);
		while (!spin->handled && !spin->stop)
			; /* no system call */
		_exit(0);
	}
	close(pfd[0]);
	sleep_until(t0 + SIGNAL_AT);
	ok = set_variant(V_OFF) == 0;
	sleep_until(t0 + SIGNAL_AT + 100);
	(void)!write(pfd[1], "x", 1);
	sleep_until(t0 + SIGNAL_AT + 300);
	ok = set_variant(v) == 0 && ok;
	sleep_until(t0 + SIGNAL_AT + 400);
	kill(pid, SIGUSR1);
	sent = now_ms();
	while (now_ms() < sent + 1000) {
		if (spin->handled) {
			seen = now_ms() - sent;
			break;
		}
		sleep_until(now_ms() + 5);
	}
	spin->stop = 1;
	waitpid(pid, &st, 0);
	close(pfd[1]);
	munmap(spin, sizeof(*spin));
	ok = ok && seen >= 0 && seen < 500 && WIFEXITED(st) &&
	     WEXITSTATUS(st) == 0;
	printf("%s %-30s %-9s SIGUSR1 to a child spinning in user space %s (want handled at once, after kernel.regions went to 0 mid-read and back)\n",
	       ok ? "PASS" : "FAIL", "sysctl-toggle-user-space",
	       variant_name[v],
	       seen >= 0 ? "handled" : "not handled within 1 s");
	return ok ? 0 : 1;
}

/*
 * A stop is never held past the region: a child in a killable region
 * waits on a pipe; at SIGNAL_AT it is sent SIGSTOP (job control) or
 * PTRACE_INTERRUPT (a ptrace trap); the wait ends at RELEASE_AT.  As for
 * a mainline killable sleep, the stop may wait for the wait to end, but
 * no longer: the child must be stopped within STOP_LATE of the release
 * (at the signal where no region holds it, under off).
 */
#define STOP_LATE 500

enum stop_kind { STOP_SIGSTOP, STOP_PTRACE };

/* The state letter of pid in /proc/PID/stat, or '?'. */
static char stat_state(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/* Whether the child is stopped now: a ptrace stop seen by waitpid(). */
static bool child_stopped(pid_t pid, enum stop_kind how)
{
	int st;

	if (how == STOP_SIGSTOP)
		return stat_state(pid) == 'T';
	return waitpid(pid, &st, WNOHANG | __WALL) == pid && WIFSTOPPED(st);
}

static int stop_case(enum variant v, enum stop_kind how)
{
	static const char *const name[] = { "stop-killable-sigstop",
					    "stop-killable-ptrace" };
	double t0, stopped = -1;
	int pfd[2], st;
	bool ok, early;
	pid_t pid;

	if (pipe(pfd) < 0)
		return 1;
	fflush(stdout);
	t0 = now_ms();
	pid = fork();
	if (pid == 0) {
		char b;

		close(pfd[1]);
		if (region(PR_REGION_BEGIN, PR_REGION_KILLABLE) < 0 ||
		    read(pfd[0], &b, 1) != 1)
			_exit(1);
		region(PR_REGION_END, PR_REGION_KILLABLE);
		_exit(0);
	}
	close(pfd[0]);
	if (how == STOP_PTRACE && ptrace(PTRACE_SEIZE, pid, 0, 0) < 0) {
		printf("FAIL %-30s %-9s PTRACE_SEIZE: %s\n", name[how],
		       variant_name[v], strerror(errno));
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		close(pfd[1]);
		return 1;
	}
	sleep_until(t0 + SIGNAL_AT);
	if (how == STOP_SIGSTOP)
		kill(pid, SIGSTOP);
	else
		ptrace(PTRACE_INTERRUPT, pid, 0, 0);
	while (now_ms() < t0 + RELEASE_AT + STOP_LATE + 500) {
		if (now_ms() >= t0 + RELEASE_AT && pfd[1] >= 0) {
			(void)!write(pfd[1], "x", 1);
			close(pfd[1]);
			pfd[1] = -1;
		}
		if (child_stopped(pid, how)) {
			stopped = now_ms() - t0;
			break;
		}
		sleep_until(now_ms() + 5);
	}
	if (pfd[1] >= 0) {
		(void)!write(pfd[1], "x", 1);
		close(pfd[1]);
	}
	if (how == STOP_SIGSTOP)
		kill(pid, SIGCONT);
	else
		ptrace(PTRACE_DETACH, pid, 0, 0);
	/* Stopped or not, it must finish its read and exit. */
	while (waitpid(pid, &st, __WALL) == pid && WIFSTOPPED(st))
		ptrace(PTRACE_DETACH, pid, 0, 0);
	early = stopped >= 0 && stopped < EARLY_BEFORE;
	ok = stopped >= 0 && stopped < RELEASE_AT + STOP_LATE &&
	     (v != V_OFF || early) && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	if (stopped >= 0)
		printf("%s %-30s %-9s stopped after %.0f ms, then exited %d (want stopped %s)\n",
		       ok ? "PASS" : "FAIL", name[how], variant_name[v],
		       stopped, WIFEXITED(st) ? WEXITSTATUS(st) : -1,
		       v == V_OFF ? "at the signal" :
				    "by the release, at the latest");
	else
		printf("%s %-30s %-9s not stopped %d ms after the release (want stopped %s)\n",
		       "FAIL", name[how], variant_name[v], STOP_LATE + 500,
		       v == V_OFF ? "at the signal" :
				    "by the release, at the latest");
	return ok ? 0 : 1;
}

static double per_call_ns(double t0, long n)
{
	return (now_ms() - t0) * 1e6 / (double)n;
}

static void sort5(double *v)
{
	for (int i = 0; i < 5; i++)
		for (int j = i + 1; j < 5; j++)
			if (v[j] < v[i]) {
				double t = v[i];

				v[i] = v[j];
				v[j] = t;
			}
}

static void print_fig(const char *name, double *v)
{
	sort5(v);
	printf(",\"%s_ns\":%.1f,\"%s_min\":%.1f,\"%s_max\":%.1f", name, v[2],
	       name, v[0], name, v[4]);
}

/*
 * The cost, in ns a call: medians of 5 interleaved rounds of getpid(), a
 * 1-byte read of /dev/zero, a 1-byte write and read through a pipe, and
 * (where the kernel has PR_REGION) a region begin and end.
 */
static int bench(long n)
{
	double g[5], p[5], z[5], w[5], t;
	char b;
	int fd = open("/dev/zero", O_RDONLY), pfd[2];
	bool regions = region(PR_REGION_BEGIN, PR_REGION_KILLABLE) == 0;

	if (fd < 0 || pipe(pfd) < 0)
		return 1;
	if (regions)
		region(PR_REGION_END, PR_REGION_KILLABLE);
	for (int k = 0; k < 5; k++) {
		t = now_ms();
		for (long i = 0; i < n; i++)
			syscall(SYS_getpid);
		g[k] = per_call_ns(t, n);
		t = now_ms();
		for (long i = 0; i < n && regions; i++) {
			region(PR_REGION_BEGIN, PR_REGION_KILLABLE);
			region(PR_REGION_END, PR_REGION_KILLABLE);
		}
		p[k] = regions ? per_call_ns(t, n) : 0;
		t = now_ms();
		for (long i = 0; i < n; i++)
			if (read(fd, &b, 1) != 1)
				return 1;
		z[k] = per_call_ns(t, n);
		t = now_ms();
		for (long i = 0; i < n; i++)
			if (write(pfd[1], &b, 1) != 1 ||
			    read(pfd[0], &b, 1) != 1)
				return 1;
		w[k] = per_call_ns(t, n);
	}
	printf("{\"rounds\":5,\"calls\":%ld", n);
	print_fig("getpid", g);
	print_fig("read", z);
	print_fig("pipe", w);
	if (regions)
		print_fig("region_pair", p);
	printf("}\n");
	close(fd);
	close(pfd[0]);
	close(pfd[1]);
	return 0;
}

int main(int argc, char **argv)
{
	int v = -1, fails = 0;
	long n = 0;
	FILE *f;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--variant") == 0 && i + 1 < argc) {
			for (v = 0; v < V_COUNT; v++)
				if (strcmp(argv[i + 1], variant_name[v]) == 0)
					break;
			if (v == V_COUNT) {
				fprintf(stderr,
					"regions-selftest: --variant is off, state or delivery\n");
				return 2;
			}
			i++;
		} else if (strcmp(argv[i], "--bench") == 0 && i + 1 < argc) {
			n = atol(argv[++i]);
			if (n <= 0) {
				fprintf(stderr,
					"regions-selftest: --bench takes a number of calls\n");
				return 2;
			}
		} else {
			fprintf(stderr,
				"usage: regions-selftest [--variant off|state|delivery] [--bench N]\n");
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	if (n)
		return bench(n);
	if (region(PR_REGION_BEGIN, PR_REGION_KILLABLE) < 0) {
		fprintf(stderr,
			"regions-selftest: this kernel has no PR_REGION (%s): not the regions series\n",
			strerror(errno));
		return 2;
	}
	region(PR_REGION_END, PR_REGION_KILLABLE);
	if (v < 0) {
		f = fopen("/proc/sys/kernel/regions", "r");
		if (!f || fscanf(f, "%d", &v) != 1 || v < 0 || v >= V_COUNT) {
			fprintf(stderr,
				"regions-selftest: cannot read kernel.regions\n");
			return 2;
		}
		fclose(f);
	}
	fails += api_cases();
	for (unsigned i = 0; i < ARRAY_SIZE(cases); i++)
		fails += !run_case(&cases[i], (enum variant)v);
	fails += sysctl_case((enum variant)v);
	fails += inherit_case((enum variant)v);
	fails += restart_case((enum variant)v);
	fails += toggle_case((enum variant)v);
	fails += stop_case((enum variant)v, STOP_SIGSTOP);
	fails += stop_case((enum variant)v, STOP_PTRACE);
	printf("%s: %d failure(s), variant %s\n", fails ? "FAIL" : "PASS",
	       fails, variant_name[v]);
	return fails ? 1 : 0;
}
