/*
 * The daemon exits once its mount is gone, whatever the server does: a
 * request still waiting for a server that does not answer (stalled with
 * SIGSTOP, here) gets the unmount's grace (10 s) and is then given up on,
 * also when it runs on one of libfuse's session threads, whose loop waits
 * for it.  Once after an abort through /sys/fs/fuse/connections, with a
 * reader waiting in its open; once after an unmount, with the flush of a
 * writer killed in close() still waiting for its COMMIT.  A daemon that
 * is still there past the bound fails the test with its task table.
 */
#include "harness.h"

#include "mntrig.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The unmount's grace (intrfs.c's UNMOUNT_DRAIN_S), and the test's bound. */
#define GRACE_MS 10000
#define EXIT_MS 20000

/*
 * Waits for m's daemon to exit, its mount gone, the server still stalled:
 * within EXIT_MS, after it gave up on the server (its log says so).  A
 * daemon still there fails the test with what its tasks wait for.
 */
static void daemon_exits(struct mnt *m, uint64_t t0)
{
	static char log[16384];
	unsigned ms;

	if (mntrig_unmount(m->dir, m->pid, EXIT_MS) < 0) {
		mnt_dump_tasks(m, log, sizeof(log));
		mntrig_kill(m->dir, m->pid);
		m->pid = 0;
		TEST__FAIL("the daemon had not exited %d s after its mount "
			   "went (the server stalled); killed.  Its log (%s) "
			   "ends:\n%s",
			   EXIT_MS / 1000, m->log, log);
	}
	ms = (unsigned)((region_now_ns() - t0) / 1000000);
	m->pid = 0;
	fprintf(stderr, "# the daemon exited %u ms after its mount went\n", ms);
	mnt_read_log(m, log, sizeof(log));
	ASSERT_CONTAINS(log, "giving up on them");
	ASSERT_GE(ms, GRACE_MS - 1000);
	mnt_stop(m);
}

TEST_IMPL(unmount_abort_server_stalled)
{
	struct test_server s;
	struct probe p;
	struct probe_result r;
	struct mnt m;
	unsigned conn;
	uint64_t t0;
	int status;

	srv_get(&s);
	mnt_start(&m, &s, "hard");
	write_file(mpath(&m, "f"), "stalled", 7);
	conn = mntrig_connection(m.dir);
	ASSERT_GT(conn, 0);
	srv_stall(&s);
	/* The read's open waits for the server (its ACCESS call). */
	probe_start(&p, PROBE_STAT, mpath(&m, "g"), 0, false, 0);
	probe_wait_ready(&p);
	probe_go(&p);
	probe_wait_blocked(&p);
	t0 = region_now_ns();
	ASSERT_EQ(mntrig_abort(conn), 0);
	/* The kernel ends the caller's request at once. */
	ASSERT(probe_wait(&p, 5000, &r, &status));
	ASSERT_EQ(r.ret, -1);
	ASSERT_EQ(r.err, ECONNABORTED);
	daemon_exits(&m, t0);
	srv_resume(&s);
	return 0;
}

TEST_IMPL(unmount_flush_server_stalled)
{
	static char buf[1 << 20];
	struct test_server s;
	struct mnt m;
	int go[2], ready[2], status;
	uint64_t t0;
	pid_t pid;
	char c;

	srv_get(&s);
	mnt_start(&m, &s, "hard");
	ASSERT_EQ(pipe2(go, O_CLOEXEC), 0);
	ASSERT_EQ(pipe2(ready, O_CLOEXEC), 0);
	memset(buf, 'w', sizeof(buf));
	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		/* Written behind, not committed; closed on the parent's word. */
		int fd = open(mpath(&m, "f"), O_WRONLY | O_CREAT, 0644);

		if (fd < 0 || write(fd, buf, sizeof(buf)) != sizeof(buf))
			_exit(1);
		if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(1);
		close(fd);
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	ASSERT_EQ(read(ready[0], &c, 1), 1);
	srv_stall(&s);
	ASSERT_EQ(write(go[1], "g", 1), 1);
	/* Its flush waits for the COMMIT; killed, it is answered. */
	for (unsigned i = 0; !proc_in_fuse(pid); i++) {
		if (i == 1000)
			TEST__FAIL("the writer never waited in its close");
		test_sleep_ms(10);
	}
	kill(pid, SIGKILL);
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT(WIFSIGNALED(status));
	t0 = region_now_ns();
	daemon_exits(&m, t0);
	srv_resume(&s);
	close(ready[0]);
	close(go[1]);
	return 0;
}
