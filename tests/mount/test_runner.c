/*
 * The scenario runner (tests/scenarios/runner/), run as root as the demo,
 * the oracle and tests/run run it: a rig that fails before time 0 is
 * reported as a scenario that could not run, not as a process killed
 * after the seconds since boot.
 */
#include "harness.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SCENARIO_BIN
#error "SCENARIO_BIN: the path of intrfs-scenario, from tests/meson.build"
#endif

/* A scenario file text in dir; its path in path. */
static void scn_write(const char *dir, const char *name, const char *text,
		      char *path, size_t len)
{
	int fd;

	snprintf(path, len, "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/*
 * Runs the runner on file against the test server s (given by hand: no
 * run directory, so no pause or restart), with TMPDIR set to tmpdir when
 * not NULL; its stdout and stderr in out.  Returns its exit status.
 */
static int scn_run(const struct test_server *s, const char *file,
		   const char *tmpdir, char *out, size_t len)
{
	char nfs[16], mnt[16];
	uint64_t end = region_now_ns() + 120000000000ull;
	size_t got = 0;
	int p[2], st;
	pid_t pid;

	snprintf(nfs, sizeof(nfs), "%u", s->nfs_port);
	snprintf(mnt, sizeof(mnt), "%u", s->mount_port);
	ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		if (tmpdir)
			setenv("TMPDIR", tmpdir, 1);
		else
			unsetenv("TMPDIR");
		execl(SCENARIO_BIN, "intrfs-scenario", "--server", s->server,
		      "--export", s->export_dir, "--nfs-port", nfs,
		      "--mount-port", mnt, file, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		struct pollfd pf = { p[0], POLLIN, 0 };
		ssize_t r;

		if (region_now_ns() > end) {
			kill(pid, SIGKILL);
			break;
		}
		if (poll(&pf, 1, 100) <= 0)
			continue;
		r = read(p[0], out + got, len - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	out[got] = '\0';
	close(p[0]);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * A fault at time 0 that cannot be applied (pause, with no server pid):
 * the scenario could not run, and no time since boot is printed as its
 * duration.
 */
TEST_IMPL(runner_rig_failure_not_run)
{
	static char out[16384];
	char dir[] = "/tmp/intrfs-test-scn.XXXXXX", file[64];
	struct test_server s;

	srv_get(&s);
	ASSERT_NOT_NULL(mkdtemp(dir));
	scn_write(dir, "early.scn",
		  "name early-fail\nworkload stat\nfault at=0 pause\n", file,
		  sizeof(file));
	ASSERT_EQ(scn_run(&s, file, NULL, out, sizeof(out)), 1);
	ASSERT_CONTAINS(out, "FAIL early-fail  could not run: pause needs "
			     "the server's pid");
	if (strstr(out, "killed after"))
		TEST__FAIL("a scenario that never ran has a duration:\n%s",
			   out);
	unlink(file);
	rmdir(dir);
	return 0;
}
