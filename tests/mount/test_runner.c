/*
 * The scenario runner (tests/scenarios/runner/), run as root as the demo,
 * the oracle and tests/run run it: its files are in a directory of its
 * own, so links planted at the names it once used in /tmp, and one given
 * as its JSON file, are never written through; a rig that fails before
 * time 0 is reported as a scenario that could not run, not as a process
 * killed after the seconds since boot.
 */
#include "harness.h"

#include <dirent.h>
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
 * not NULL and --json json when not NULL; before it starts, planted(pid)
 * is called with the pid it will have, when not NULL.  Its stdout and
 * stderr in out.  Returns its exit status.
 */
static int scn_run(const struct test_server *s, const char *file,
		   const char *tmpdir, const char *json,
		   void (*planted)(pid_t pid), char *out, size_t len)
{
	char nfs[16], mnt[16], c;
	uint64_t end = region_now_ns() + 120000000000ull;
	size_t got = 0;
	int p[2], gate[2], st;
	pid_t pid;

	snprintf(nfs, sizeof(nfs), "%u", s->nfs_port);
	snprintf(mnt, sizeof(mnt), "%u", s->mount_port);
	ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
	ASSERT_EQ(pipe2(gate, O_CLOEXEC), 0);
	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		const char *argv[16] = { "intrfs-scenario",
					 "--server",
					 s->server,
					 "--export",
					 s->export_dir,
					 "--nfs-port",
					 nfs,
					 "--mount-port",
					 mnt };
		size_t n = 9;

		if (json) {
			argv[n++] = "--json";
			argv[n++] = json;
		}
		argv[n++] = file;
		argv[n] = NULL;
		dup2(p[1], 1);
		dup2(p[1], 2);
		if (tmpdir)
			setenv("TMPDIR", tmpdir, 1);
		else
			unsetenv("TMPDIR");
		/* Runs once the parent has planted what it plants. */
		if (read(gate[0], &c, 1) != 1)
			_exit(126);
		execv(SCENARIO_BIN, (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	close(gate[0]);
	if (planted)
		planted(pid);
	ASSERT_EQ(write(gate[1], "g", 1), 1);
	close(gate[1]);
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
	ASSERT_EQ(scn_run(&s, file, NULL, NULL, NULL, out, sizeof(out)), 1);
	ASSERT_CONTAINS(out, "FAIL early-fail  could not run: pause needs "
			     "the server's pid");
	if (strstr(out, "killed after"))
		TEST__FAIL("a scenario that never ran has a duration:\n%s",
			   out);
	unlink(file);
	rmdir(dir);
	return 0;
}

/* A root-owned 0600 file the planted links point at. */
static char victim[64];
static const char secret[] = "root's own file\n";

/* The names the runner used to open in /tmp, for its pid. */
static const char *const old_names[] = { "/tmp/intrfs-scn-%d.netfault.err",
					 "/tmp/intrfs-scn-%d.netfault",
					 "/tmp/intrfs-scn-%d.sock" };

static void plant_links(pid_t pid)
{
	for (size_t i = 0; i < ARRAY_SIZE(old_names); i++) {
		char path[64];

		snprintf(path, sizeof(path), old_names[i], (int)pid);
		unlink(path);
		ASSERT_EQ(symlink(victim, path), 0);
	}
}

static pid_t links_of;

static void plant_and_note(pid_t pid)
{
	links_of = pid;
	plant_links(pid);
}

/*
 * Links planted towards a root-owned file, at the names the runner once
 * opened in /tmp for its pid and as its --json file, are never written
 * through; a scenario runs with every file in a directory of the run's
 * own under TMPDIR, removed at the end.
 */
TEST_IMPL(runner_never_follows_planted_links)
{
	static char out[16384];
	char dir[] = "/tmp/intrfs-test-scn.XXXXXX", tmp[64], file[64];
	char json[64];
	struct test_server s;
	struct stat st;
	DIR *d;
	int fd, n = 0;

	srv_get(&s);
	ASSERT_NOT_NULL(mkdtemp(dir));
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	fd = open(victim, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(write(fd, secret, sizeof(secret) - 1),
		  (ssize_t)sizeof(secret) - 1);
	close(fd);
	snprintf(tmp, sizeof(tmp), "%s/tmp", dir);
	ASSERT_EQ(mkdir(tmp, 0700), 0);
	scn_write(dir, "stat.scn", "name stat-ok\nworkload stat\n", file,
		  sizeof(file));

	ASSERT_EQ(scn_run(&s, file, tmp, NULL, plant_and_note, out,
			  sizeof(out)),
		  0);
	ASSERT_CONTAINS(out, "PASS stat-ok");
	assert_same_bytes(victim, secret, sizeof(secret) - 1);
	for (size_t i = 0; i < ARRAY_SIZE(old_names); i++) {
		char path[64];

		snprintf(path, sizeof(path), old_names[i], (int)links_of);
		lstat_ok(path, &st);
		ASSERT(S_ISLNK(st.st_mode));
		unlink(path);
	}
	/* The run's directory went with the run. */
	d = opendir(tmp);
	ASSERT_NOT_NULL(d);
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	ASSERT_EQ(n, 0);

	/* Its JSON file, a link towards the same file: refused. */
	snprintf(json, sizeof(json), "%s/out.json", dir);
	ASSERT_EQ(symlink(victim, json), 0);
	ASSERT_EQ(scn_run(&s, file, tmp, json, NULL, out, sizeof(out)), 2);
	assert_same_bytes(victim, secret, sizeof(secret) - 1);

	unlink(json);
	unlink(file);
	unlink(victim);
	rmdir(tmp);
	rmdir(dir);
	return 0;
}
