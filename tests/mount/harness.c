/*
 * The mount test harness (harness.h).  It owns, for the test running in
 * this process, the mounts it made (live[]), the partition it loaded and
 * the server it may have stalled, and must never leave one of them behind:
 * on_abort() lets go of them all when an ASSERT aborts, and tests/run
 * stops the daemons it noted ($INTRFS_TEST_PIDS) if the process dies some
 * other way.  No locks: a test calls it from its main thread (a thread of
 * its own may only resume the server, which is a kill()).
 */
#include "harness.h"

#include "beneath.h"
#include "mntrig.h"
#include "netrig.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MOUNT_DEADLINE_MS 15000
#define UMOUNT_DEADLINE_MS 15000
#define MAX_LIVE 8

#ifndef NETFAULT_BIN
#error "NETFAULT_BIN: the path of netfault, from tests/meson.build"
#endif
#ifndef INTRFSCTL_BIN
#error "INTRFSCTL_BIN: the path of intrfsctl, from tests/meson.build"
#endif
#if !defined(TWO_HOSTS) || !defined(HOSTS_DIR)
#error "TWO_HOSTS, HOSTS_DIR: tests/lib/two-hosts and its directory"
#endif

static const struct test_server *live_srv;
static pid_t nf_pid;
/* The partition this process loaded, as table intrfs_test_PID. */
static struct netrig_partition part;
#define PART_PREFIX "intrfs_test"
static struct mnt *live[MAX_LIVE];
static unsigned seq;
/* This process's own network while it is in the client host's, or -1. */
static int home_netns = -1;

/* An ASSERT aborts: resume the server and let go of the mounts first. */
static void on_abort(int sig)
{
	if (part.loaded)
		net_heal();
	if (live_srv && live_srv->ganesha > 0)
		kill(live_srv->ganesha, SIGCONT);
	for (unsigned i = 0; i < MAX_LIVE; i++) {
		if (!live[i])
			continue;
		umount2(live[i]->dir, MNT_DETACH);
		if (live[i]->pid > 0)
			kill(live[i]->pid, SIGKILL);
	}
	if (nf_pid > 0)
		kill(nf_pid, SIGTERM);
	if (home_netns >= 0 &&
	    system(TWO_HOSTS " down " HOSTS_DIR " >/dev/null 2>&1") != 0)
		fprintf(stderr, "# two-hosts down failed\n");
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Exports. */

/*
 * The roots of the exports the tests read below (every server's a test
 * used in this process): a path below one is resolved beneath it.  Its
 * descriptor is opened for each call: a spare server's export is a new
 * filesystem at each start.
 */
#define MAX_EXPORTS 4
static char exports[MAX_EXPORTS][512];

static void note_export(const char *dir)
{
	unsigned i;

	for (i = 0; i < MAX_EXPORTS && exports[i][0]; i++)
		if (strcmp(exports[i], dir) == 0)
			return;
	if (i == MAX_EXPORTS)
		TEST__FAIL("more than %d exports in one test", MAX_EXPORTS);
	snprintf(exports[i], sizeof(exports[i]), "%s", dir);
}

/*
 * Whether path is below an export: then *top is its root (O_PATH, or
 * -errno) and *rel the rest of path.
 */
static bool below_export(const char *path, int *top, const char **rel)
{
	for (unsigned i = 0; i < MAX_EXPORTS && exports[i][0]; i++) {
		size_t n = strlen(exports[i]);

		if (strncmp(path, exports[i], n) == 0 && path[n] == '/') {
			*rel = path + n + 1;
			*top = beneath_root(exports[i]);
			return true;
		}
	}
	return false;
}

/* rc as the libc call returns it: -1 with errno, or rc. */
static int as_libc(int rc)
{
	if (rc >= 0)
		return rc;
	errno = -rc;
	return -1;
}

int path_open(const char *path, int flags, mode_t mode)
{
	const char *rel;
	int top, fd;

	if (!below_export(path, &top, &rel))
		return open(path, flags | O_CLOEXEC, mode);
	fd = top < 0 ? top : beneath_open(top, rel, flags, mode);
	if (top >= 0)
		close(top);
	return as_libc(fd);
}

int path_lstat(const char *path, struct stat *st)
{
	const char *rel;
	int top, rc;

	if (!below_export(path, &top, &rel))
		return lstat(path, st);
	rc = top < 0 ? top : beneath_lstat(top, rel, st);
	if (top >= 0)
		close(top);
	return as_libc(rc);
}

bool path_exists(const char *path)
{
	struct stat st;

	return path_lstat(path, &st) == 0;
}

ssize_t path_readlink(const char *path, char *buf, size_t len)
{
	char last[NAME_MAX + 1];
	const char *rel;
	int top, dir;
	ssize_t n;

	if (!below_export(path, &top, &rel))
		return readlink(path, buf, len);
	dir = top < 0 ? top : beneath_parent(top, rel, last, sizeof(last));
	if (top >= 0)
		close(top);
	if (dir < 0)
		return as_libc(dir);
	n = readlinkat(dir, last, buf, len);
	close(dir);
	return n;
}

int path_utimens(const char *path, const struct timespec ts[2])
{
	int fd = path_open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW, 0), rc;

	if (fd < 0)
		return -1;
	rc = futimens(fd, ts);
	close(fd);
	return rc;
}

int path_mkdir(const char *path, mode_t mode)
{
	const char *rel;
	int top, rc;

	if (!below_export(path, &top, &rel))
		return mkdir(path, mode) < 0 ? -1 : chmod(path, mode);
	rc = top < 0 ? top : beneath_mkdir_mode(top, rel, mode);
	if (top >= 0)
		close(top);
	return as_libc(rc);
}

DIR *path_opendir(const char *path)
{
	int fd = path_open(path, O_RDONLY | O_DIRECTORY, 0);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);

	if (!d && fd >= 0) {
		int err = errno;

		close(fd);
		errno = err;
	}
	return d;
}

const char *path_strerror(int err)
{
	return beneath_strerror(err);
}

void srv_get(struct test_server *s)
{
	if (access("/dev/fuse", R_OK | W_OK) != 0)
		TEST_SKIP("/dev/fuse is not usable here (%s): no mount tests",
			  strerror(errno));
	testenv_server(s);
	note_export(s->export_dir);
	/* Unset, it fails the test here, not in a child that would exec it. */
	(void)intrfs_bin();
	live_srv = s;
	signal(SIGABRT, on_abort);
	signal(SIGPIPE, SIG_IGN);
}

const char *intrfs_bin(void)
{
	return testenv_get("INTRFS_BIN");
}

/*
 * SIGSTOP returns before the server's threads have stopped: wait until they
 * all have, so that no request sent after this is answered.
 */
void srv_stall(const struct test_server *s)
{
	test_stop_process(s->ganesha);
}

void srv_resume(const struct test_server *s)
{
	kill(s->ganesha, SIGCONT);
}

/*
 * The queues of the established TCP connections to the server's NFS port,
 * from /proc/net/tcp and tcp6: what the server has not read (rx_queue of
 * its end) and what the clients have not had acknowledged (tx_queue of
 * theirs).  Both ends are on this machine's loopback.
 */
static void srv_queues(const struct test_server *s, uint64_t *unread,
		       uint64_t *unacked)
{
	static const char *const files[] = { "/proc/net/tcp",
					     "/proc/net/tcp6" };

	*unread = *unacked = 0;
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		FILE *f = fopen(files[i], "r");
		char line[512];

		if (!f)
			continue; /* no IPv6 here */
		while (fgets(line, sizeof(line), f)) {
			unsigned lport, rport, state;
			uint64_t tx, rx;

			if (sscanf(line,
				   " %*d: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%x "
				   "%x %" SCNx64 ":%" SCNx64,
				   &lport, &rport, &state, &tx, &rx) != 5 ||
			    state != 1 /* TCP_ESTABLISHED */)
				continue;
			if (lport == s->nfs_port)
				*unread += rx;
			if (rport == s->nfs_port)
				*unacked += tx;
		}
		fclose(f);
	}
}

uint64_t srv_unread(const struct test_server *s)
{
	uint64_t unread, unacked;

	srv_queues(s, &unread, &unacked);
	return unread;
}

void srv_wait_call(const struct test_server *s, uint64_t before)
{
	ASSERT_WITHIN(srv_unread(s) > before, 10000);
}

void srv_wait_queues_full(const struct test_server *s)
{
	uint64_t end = region_now_ns() + 10000000000ull;
	uint64_t unread = 0, unacked = 0;
	unsigned same = 0;

	/* Full: the clients' side holds bytes, and nothing moved for 100 ms. */
	while (same < 10) {
		uint64_t r, a;

		test_sleep_ms(10);
		srv_queues(s, &r, &a);
		same = a > 0 && r == unread && a == unacked ? same + 1 : 0;
		unread = r;
		unacked = a;
		if (region_now_ns() > end)
			TEST__FAIL("the server's queues did not fill: %" PRIu64
				   " bytes unread, %" PRIu64 " unacknowledged",
				   unread, unacked);
	}
}

/* The spare server. */

/* A script's lines that are not the server's, as TAP comments. */
static void comment(const char *line)
{
	fprintf(stderr, "# %s\n", line);
}

/* Runs start-server for the spare and reads what it prints into s. */
static void spare_run_start(struct test_server *s)
{
	static struct srvrig spare; /* s points into it */
	const char *scripts = testenv_get("INTRFS_TEST_SCRIPTS");
	const char *dir = testenv_get("INTRFS_TEST_SPARE_DIR");
	unsigned ports[4];
	char cmd[2048];

	if (sscanf(testenv_get("INTRFS_TEST_SPARE_PORTS"), "%u %u %u %u",
		   &ports[0], &ports[1], &ports[2], &ports[3]) != 4)
		TEST__FAIL("INTRFS_TEST_SPARE_PORTS is not four ports");
	snprintf(cmd, sizeof(cmd),
		 "%s/start-server --run-dir %s --nfs-port %u --mount-port %u "
		 "--nlm-port %u --rquota-port %u",
		 scripts, dir, ports[0], ports[1], ports[2], ports[3]);
	memset(&spare, 0, sizeof(spare));
	if (srvrig_run(&spare, cmd, comment) != 0 || spare.pid <= 0)
		TEST__FAIL("the spare server did not start (%s)", cmd);
	s->ganesha = spare.pid;
	s->export_dir = spare.export_dir;
	note_export(s->export_dir);
	s->nfs_port = ports[0];
	s->mount_port = ports[1];
	s->nlm_port = ports[2];
}

void spare_start(struct test_server *s)
{
	srv_get(s);
	spare_run_start(s);
	live_srv = s;
}

void spare_restart(struct test_server *s)
{
	kill(s->ganesha, SIGKILL);
	/* Not our child: wait until it is gone. */
	if (!proc_gone_within(s->ganesha, 10000))
		TEST__FAIL("the spare server (pid %d) did not die",
			   (int)s->ganesha);
	spare_run_start(s);
}

void spare_stop(struct test_server *s)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd),
		 "%s/stop-server --run-dir %s >/dev/null 2>&1",
		 testenv_get("INTRFS_TEST_SCRIPTS"),
		 testenv_get("INTRFS_TEST_SPARE_DIR"));
	kill(s->ganesha, SIGCONT);
	if (system(cmd) != 0)
		fprintf(stderr, "# stop-server for the spare server failed\n");
	if (live_srv == s)
		live_srv = NULL;
}

/* Two hosts. */

/* Runs two-hosts CMD with args, and reads what it prints into s. */
static void hosts_run(struct test_server *s, const char *cmd, const char *args)
{
	static char export_dir[512]; /* s points to it */
	struct srvrig hosts = { 0 };
	char run[1200];

	snprintf(run, sizeof(run), "%s %s %s %s", TWO_HOSTS, cmd, HOSTS_DIR,
		 args);
	if (srvrig_run(&hosts, run, comment) != 0)
		TEST__FAIL("%s failed", run);
	/* What it did not say stays as it was. */
	if (hosts.pid > 0)
		s->ganesha = hosts.pid;
	if (hosts.export_dir[0]) {
		snprintf(export_dir, sizeof(export_dir), "%s",
			 hosts.export_dir);
		s->export_dir = export_dir;
		note_export(s->export_dir);
	}
	if (hosts.nfs_port)
		s->nfs_port = hosts.nfs_port;
	if (hosts.mount_port)
		s->mount_port = hosts.mount_port;
	if (hosts.nlm_port)
		s->nlm_port = hosts.nlm_port;
	if (strcmp(cmd, "up") == 0) {
		int fd = open(hosts.client_netns, O_RDONLY | O_CLOEXEC);

		ASSERT_GE(fd, 0);
		ASSERT_EQ(setns(fd, CLONE_NEWNET), 0);
		close(fd);
	}
}

void hosts_up(struct test_server *s, unsigned grace)
{
	char args[32];

	snprintf(args, sizeof(args), "--grace %u", grace);
	ASSERT_EQ(home_netns, -1);
	home_netns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	ASSERT_GE(home_netns, 0);
	hosts_run(s, "up", args);
	s->server = "10.77.0.2";
	s->hosts = true;
	live_srv = s;
}

void hosts_restart(struct test_server *s, unsigned grace, bool notify)
{
	char args[48];

	snprintf(args, sizeof(args), "--grace %u%s", grace,
		 notify ? "" : " --no-notify");
	hosts_run(s, "restart", args);
}

void hosts_down(struct test_server *s)
{
	ASSERT_GE(home_netns, 0);
	ASSERT_EQ(setns(home_netns, CLONE_NEWNET), 0);
	close(home_netns);
	home_netns = -1;
	if (system(TWO_HOSTS " down " HOSTS_DIR " >/dev/null 2>&1") != 0)
		TEST__FAIL("two-hosts down failed");
	s->hosts = false;
	if (live_srv == s)
		live_srv = NULL;
}

/* Partitions. */

/* tests/run deletes the tables intrfs_test_* whatever happened here. */
void net_partition(unsigned port)
{
	char err[256];

	if (netrig_partition(&part, PART_PREFIX, port, NETRIG_DROP, err,
			     sizeof(err)))
		TEST__FAIL("%s", err);
}

void net_block_flow(unsigned local_port, unsigned remote_port)
{
	char err[256];

	if (netrig_block_flow(&part, PART_PREFIX, local_port, remote_port, err,
			      sizeof(err)))
		TEST__FAIL("%s", err);
}

void net_partition_reject(unsigned port)
{
	char err[256];

	if (netrig_partition(&part, PART_PREFIX, port, NETRIG_REJECT, err,
			     sizeof(err)))
		TEST__FAIL("%s", err);
}

uint64_t net_partition_syns(void)
{
	char err[256];
	uint64_t n = 0;

	if (netrig_partition_syns(&part, &n, err, sizeof(err)))
		TEST__FAIL("%s", err);
	return n;
}

void net_heal(void)
{
	if (netrig_heal(&part))
		fprintf(stderr, "# could not delete nftables table %s\n",
			part.table);
}

void nf_front(struct test_server *via, const struct test_server *s,
	      const char *rule)
{
	char log[128], err[1200];
	unsigned p1, p2;

	ASSERT_EQ(nf_pid, 0);
	snprintf(log, sizeof(log), "/tmp/intrfs-test-netfault.%d.log",
		 (int)getpid());
	nf_pid = proc_netfault_start(
		NETFAULT_BIN, s->server, s->nfs_port, s->mount_port,
		(const char *const[]){ "--rule", rule, NULL }, log, 10000, &p1,
		&p2, err, sizeof(err));
	unlink(log);
	if (nf_pid < 0) {
		nf_pid = 0;
		TEST__FAIL("%s", err);
	}
	*via = *s;
	via->nfs_port = p1;
	via->mount_port = p2;
}

void nf_front_stop(void)
{
	mntrig_end_child(nf_pid, 5000);
	nf_pid = 0;
}

static void track(struct mnt *m, bool on)
{
	for (unsigned i = 0; i < MAX_LIVE; i++) {
		if (on && !live[i]) {
			live[i] = m;
			return;
		}
		if (!on && live[i] == m) {
			live[i] = NULL;
			return;
		}
	}
}

/*
 * Starts a daemon mounting local, a directory of the export, or (NULL) a
 * fresh one; returns its pid.
 */
static pid_t spawn_daemon(struct mnt *m, const struct test_server *s,
			  const char *opts, const char *local)
{
	char sub[64], source[600], o[800], err[256];
	pid_t pid;
	int fd;

	if (local) {
		snprintf(m->local, sizeof(m->local), "%s", local);
		seq++;
	} else {
		/* A directory an earlier run left (its pid reused) is skipped. */
		note_export(s->export_dir);
		do {
			snprintf(sub, sizeof(sub), "t-%d-%u", (int)getpid(),
				 ++seq);
			snprintf(m->local, sizeof(m->local), "%s/%s",
				 s->export_dir, sub);
		} while (path_mkdir(m->local, 0777) < 0 && errno == EEXIST);
		if (!path_exists(m->local))
			TEST__FAIL("mkdir %s: %s", m->local,
				   path_strerror(errno));
	}
	snprintf(m->dir, sizeof(m->dir), "/tmp/intrfs-test-mnt.XXXXXX");
	ASSERT_NOT_NULL(mkdtemp(m->dir));
	/* Made here, ours alone: a fixed name in /tmp could be planted. */
	snprintf(m->log, sizeof(m->log), "/tmp/intrfs-test-log.XXXXXX");
	fd = mkstemp(m->log);
	ASSERT_GE(fd, 0);
	close(fd);
	snprintf(source, sizeof(source), "%s:%s", s->server, m->local);
	snprintf(o, sizeof(o), "port=%u,mountport=%u,nlmport=%u%s%s",
		 s->nfs_port, s->mount_port, s->nlm_port, opts[0] ? "," : "",
		 opts);
	snprintf(m->opts, sizeof(m->opts), "%s", o);
	pid = mntrig_spawn(intrfs_bin(), source, m->dir, o, m->log, 0, err,
			   sizeof(err));
	if (pid < 0)
		TEST__FAIL("%s", err);
	return pid;
}

void mnt_read_log(const struct mnt *m, char *buf, size_t len)
{
	int fd = open(m->log, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

bool mnt_log_within(const struct mnt *m, const char *what, unsigned ms,
		    char *buf, size_t len)
{
	uint64_t end = region_now_ns() + (uint64_t)ms * 1000000u;

	for (;;) {
		mnt_read_log(m, buf, len);
		if (strstr(buf, what))
			return true;
		if (region_now_ns() > end)
			return false;
		test_sleep_ms(20);
	}
}

void mnt_wait_log(const struct mnt *m, const char *what, unsigned ms)
{
	char log[16384];

	if (!mnt_log_within(m, what, ms, log, sizeof(log)))
		TEST__FAIL("the daemon did not log \"%s\" within %u ms:\n%s",
			   what, ms, log);
}

void mnt_dump_tasks(const struct mnt *m, char *buf, size_t len)
{
	uint64_t end = region_now_ns() + 2000000000ull;
	off_t size, last = -1;

	if (m->pid <= 0 || kill(m->pid, SIGUSR1) < 0) {
		mntrig_log_tail(m->log, buf, len, &size);
		return;
	}
	/* The dump is written in pieces: done when the log stops growing. */
	for (;;) {
		mntrig_log_tail(m->log, buf, len, &size);
		if (strstr(buf, "intrfs: tasks on") && size == last)
			return;
		if (region_now_ns() > end)
			return;
		last = size;
		test_sleep_ms(100);
	}
}

static void mount_wait(struct mnt *m, const struct test_server *s,
		       const char *opts, const char *local)
{
	char log[8192];
	int status, rc;

	memset(m, 0, sizeof(*m));
	m->pid = spawn_daemon(m, s, opts, local);
	track(m, true);
	rc = mntrig_wait(m->pid, m->dir, MOUNT_DEADLINE_MS, &status);
	if (rc == 0) {
		/*
		 * In /proc/mounts from mount(2) on, but up, as mount(8) sees
		 * it, once the daemon says so: after INIT and after its own
		 * look at the mount (a child's stat), whose GETATTR a test
		 * counting the requests in flight would otherwise see.
		 */
		mnt_wait_log(m, "intrfs: mounted ", MOUNT_DEADLINE_MS);
		return;
	}
	mnt_read_log(m, log, sizeof(log));
	if (rc > 0) {
		m->pid = 0;
		TEST__FAIL("intrfs exited (status %d) instead of mounting "
			   "-o %s:\n%s",
			   status, m->opts, log);
	}
	TEST__FAIL("intrfs did not mount within %d ms:\n%s", MOUNT_DEADLINE_MS,
		   log);
}

void mnt_start(struct mnt *m, const struct test_server *s, const char *opts)
{
	mount_wait(m, s, opts, NULL);
}

void mnt_start_shared(struct mnt *m, const struct mnt *other,
		      const struct test_server *s, const char *opts)
{
	mount_wait(m, s, opts, other->local);
}

void mnt_spawn(struct mnt *m, const struct test_server *s, const char *opts)
{
	memset(m, 0, sizeof(*m));
	m->pid = spawn_daemon(m, s, opts, NULL);
}

int mnt_start_fails(struct mnt *m, const struct test_server *s,
		    const char *opts, char *buf, size_t len)
{
	int status, rc;

	memset(m, 0, sizeof(*m));
	m->pid = spawn_daemon(m, s, opts, NULL);
	track(m, true);
	rc = mntrig_wait(m->pid, m->dir, MOUNT_DEADLINE_MS, &status);
	if (rc == 0)
		TEST__FAIL("intrfs mounted with -o %s", m->opts);
	if (rc < 0)
		TEST__FAIL("intrfs neither mounted nor exited within %d ms "
			   "with -o %s",
			   MOUNT_DEADLINE_MS, m->opts);
	m->pid = 0;
	track(m, false);
	mnt_read_log(m, buf, len);
	rmdir(m->dir);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void mnt_stop(struct mnt *m)
{
	int rc;

	if (live_srv)
		srv_resume(live_srv);
	rc = mntrig_stop(m->dir, m->pid, UMOUNT_DEADLINE_MS);
	m->pid = 0;
	track(m, false);
	if (rc < 0)
		TEST__FAIL("intrfs did not exit after the unmount");
	rmdir(m->dir);
}

/* intrfsctl m stats, its JSON in out. */
static void stats_json(const struct mnt *m, char *out, size_t len)
{
	size_t got = 0;
	int p[2], st;
	pid_t pid;

	ASSERT_EQ(pipe(p), 0);
	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		close(p[0]);
		dup2(p[1], 1);
		execl(INTRFSCTL_BIN, "intrfsctl", m->dir, "stats",
		      (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	for (ssize_t r;
	     got < len - 1 && (r = read(p[0], out + got, len - 1 - got)) > 0;)
		got += (size_t)r;
	out[got] = '\0';
	close(p[0]);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		TEST__FAIL("intrfsctl %s stats failed: %s", m->dir, out);
}

uint64_t mnt_proc_ops(const struct mnt *m, const char *proc)
{
	char out[16384], key[64];
	long long n;

	stats_json(m, out, sizeof(out));
	/* "PROC":{"ops":N */
	snprintf(key, sizeof(key), "%s\":{\"ops", proc);
	return netrig_json_number(out, key, &n) ? (uint64_t)n : 0;
}

uint64_t mnt_stat(const struct mnt *m, const char *name)
{
	char out[16384];
	long long n;

	stats_json(m, out, sizeof(out));
	if (!netrig_json_number(out, name, &n))
		TEST__FAIL("intrfsctl %s stats has no %s", m->dir, name);
	return (uint64_t)n;
}

const char *mpath(const struct mnt *m, const char *rel)
{
	static char buf[4][700];
	static unsigned i;
	char *p = buf[i++ % 4];

	snprintf(p, 700, "%s/%s", m->dir, rel);
	return p;
}

const char *lpath(const struct mnt *m, const char *rel)
{
	static char buf[4][700];
	static unsigned i;
	char *p = buf[i++ % 4];

	snprintf(p, 700, "%s/%s", m->local, rel);
	return p;
}

/* Probes. */

static volatile sig_atomic_t probe_sigs;

static void count_sig(int sig)
{
	(void)sig;
	probe_sigs++;
}

static void probe_child(enum probe_op op, const char *path, size_t len,
			bool direct, enum region_kind region,
			const char *reason, int out, int ready, int go)
{
	struct probe_result r = { 0 };
	struct sigaction sa = { 0 };
	uint64_t t0;
	struct stat st;
	char *buf = NULL;
	int fd = -1;

	sa.sa_handler = count_sig;
	sigaction(SIGINT, &sa, NULL); /* no SA_RESTART */
	if (posix_memalign((void **)&buf, 4096, len ? len : 4096) != 0)
		_exit(3);
	if (op == PROBE_READ)
		fd = open(path, O_RDONLY | (direct ? O_DIRECT : 0));
	else if (op == PROBE_WRITE)
		fd = open(path, O_WRONLY | O_CREAT | (direct ? O_DIRECT : 0),
			  0644);
	if (op != PROBE_STAT && fd < 0) {
		r.ret = -1;
		r.err = errno;
		if (write(ready, "r", 1) != 1)
			_exit(3);
		goto out;
	}
	if (region) {
		/* On the file itself, or for a stat on the file's parent. */
		int rfd = fd;
		int rc;

		if (op == PROBE_STAT) {
			char dir[512], *slash;

			snprintf(dir, sizeof(dir), "%s", path);
			slash = strrchr(dir, '/');
			if (slash)
				*slash = '\0';
			rfd = open(dir, O_RDONLY | O_DIRECTORY);
		}
		rc = region_caller_begin(rfd, region, reason);
		if (rc < 0) {
			r.ret = -1;
			r.err = -rc;
			snprintf(r.data, sizeof(r.data), "region");
			if (write(ready, "r", 1) != 1)
				_exit(3);
			goto out;
		}
	}
	if (write(ready, "r", 1) != 1 || read(go, buf, 1) != 1)
		_exit(3);
	memset(buf, 'w', len);
	t0 = region_now_ns();
	if (op == PROBE_READ) {
		r.ret = read(fd, buf, len);
	} else if (op == PROBE_WRITE) {
		r.ret = write(fd, buf, len);
		if (r.ret >= 0 && close(fd) < 0)
			r.ret = -1;
		fd = -1;
	} else {
		r.ret = stat(path, &st);
	}
	r.err = r.ret < 0 ? errno : 0;
	r.ns = region_now_ns() - t0;
	if (op == PROBE_READ && r.ret > 0)
		memcpy(r.data, buf, r.ret < 64 ? (size_t)r.ret : 64);
out:
	r.sigs = (unsigned)probe_sigs;
	if (write(out, &r, sizeof(r)) != sizeof(r))
		_exit(3);
	_exit(0);
}

void probe_start(struct probe *p, enum probe_op op, const char *path,
		 size_t len, bool direct, uid_t uid)
{
	probe_start_in(p, op, path, len, direct, uid, 0, NULL);
}

void probe_start_in(struct probe *p, enum probe_op op, const char *path,
		    size_t len, bool direct, uid_t uid, enum region_kind region,
		    const char *reason)
{
	int res[2], rdy[2], go[2];

	ASSERT_EQ(pipe(res), 0);
	ASSERT_EQ(pipe(rdy), 0);
	ASSERT_EQ(pipe(go), 0);
	fflush(NULL);
	p->pid = fork();
	ASSERT_GE(p->pid, 0);
	if (p->pid == 0) {
		close(res[0]);
		close(rdy[0]);
		close(go[1]);
		signal(SIGABRT, SIG_DFL);
		if (uid) {
			gid_t g = (gid_t)uid;

			if (setgroups(1, &g) < 0 || setgid(g) < 0 ||
			    setuid(uid) < 0)
				_exit(4);
		}
		probe_child(op, path, len, direct, region, reason, res[1],
			    rdy[1], go[0]);
	}
	close(res[1]);
	close(rdy[1]);
	close(go[0]);
	p->fd = res[0];
	p->ready_fd = rdy[0];
	p->go_fd = go[1];
}

void probe_go(struct probe *p)
{
	/* A child whose open failed is gone already: that is its result. */
	if (write(p->go_fd, "g", 1) != 1)
		return;
}

void probe_run(struct probe *p, enum probe_op op, const char *path, size_t len,
	       bool direct, uid_t uid)
{
	probe_start(p, op, path, len, direct, uid);
	probe_wait_ready(p);
	probe_go(p);
}

void probe_wait_blocked(const struct probe *p)
{
	ASSERT_WITHIN(probe_blocked(p), 10000);
}

void probe_wait_ready(struct probe *p)
{
	struct pollfd pf = { p->ready_fd, POLLIN, 0 };
	char c;

	ASSERT_EQ(poll(&pf, 1, 10000), 1);
	ASSERT_EQ(read(p->ready_fd, &c, 1), 1);
}

bool probe_blocked(const struct probe *p)
{
	return proc_in_fuse(p->pid);
}

bool probe_wait(struct probe *p, unsigned timeout_ms, struct probe_result *r,
		int *status)
{
	uint64_t end = region_now_ns() + (uint64_t)timeout_ms * 1000000u;
	int st;

	for (;;) {
		pid_t got = waitpid(p->pid, &st, WNOHANG);

		if (got == p->pid)
			break;
		if (region_now_ns() > end)
			return false;
		usleep(500);
	}
	if (status)
		*status = st;
	if (r) {
		memset(r, 0, sizeof(*r));
		if (read(p->fd, r, sizeof(*r)) != sizeof(*r))
			r->ret = -2; /* killed before it could say */
	}
	close(p->fd);
	close(p->ready_fd);
	close(p->go_fd);
	p->pid = 0;
	return true;
}

void mnt_fresh(struct mnt *m, struct test_server *s, const char *extra)
{
	char o[256];

	srv_get(s);
	snprintf(o, sizeof(o), "noac%s%s", extra[0] ? "," : "", extra);
	mnt_start(m, s, o);
}

int as_user(uid_t uid, gid_t gid, const gid_t *groups, int ngroups,
	    int (*fn)(const char *), const char *arg)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		signal(SIGABRT, SIG_DFL);
		if (setgroups((size_t)ngroups, groups) < 0 || setgid(gid) < 0 ||
		    setuid(uid) < 0)
			_exit(200);
		_exit(fn(arg));
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT(WIFEXITED(status));
	ASSERT_NE(WEXITSTATUS(status), 200);
	return WEXITSTATUS(status);
}

/* Files. */

void lstat_ok(const char *path, struct stat *st)
{
	if (path_lstat(path, st) < 0)
		TEST__FAIL("lstat %s: %s", path, path_strerror(errno));
}

void assert_same_bytes(const char *path, const void *want, size_t len)
{
	char *got;
	ssize_t n = read_file(path, &got);

	if (n < 0)
		TEST__FAIL("read %s: %s", path, path_strerror(errno));
	if ((size_t)n != len)
		TEST__FAIL("%s has %zd bytes, not %zu", path, n, len);
	for (size_t i = 0; i < len; i++)
		if (got[i] != ((const char *)want)[i])
			TEST__FAIL("%s differs at byte %zu of %zu", path, i,
				   len);
	free(got);
}

void write_file(const char *path, const void *buf, size_t len)
{
	int fd = path_open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	const char *p = buf;

	if (fd < 0)
		TEST__FAIL("open %s: %s", path, path_strerror(errno));
	while (len) {
		ssize_t n = write(fd, p, len);

		ASSERT_GT(n, 0);
		p += n;
		len -= (size_t)n;
	}
	ASSERT_EQ(close(fd), 0);
}

ssize_t read_file(const char *path, char **out)
{
	size_t cap = 1 << 20, len = 0;
	char *buf = malloc(cap);
	int fd = path_open(path, O_RDONLY, 0);

	if (fd < 0 || !buf) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			ASSERT_NOT_NULL(buf);
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			free(buf);
			close(fd);
			return -1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	*out = buf;
	return (ssize_t)len;
}

void fill_random(void *buf, size_t len, unsigned seed)
{
	unsigned char *p = buf;
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (unsigned char)x;
	}
}
