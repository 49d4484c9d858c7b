/*
 * The scenario runner (tests/scenarios/runner/), run as root as the demo,
 * the oracle and tests/run run it: its files are in a directory of its
 * own, so links planted at the names it once used in /tmp, and one given
 * as its JSON file or in the middle of its path, are never written through; a rig that fails before
 * time 0 is reported as a scenario that could not run, not as a process
 * killed after the seconds since boot; the copyup workload copies whole
 * into local upper directories and into ones on the mount; expect call=
 * fails a scenario whose failed call is another, naming both; a region
 * is declared on the mount, where it holds a handled signal back, or
 * fails the scenario by name on a daemon without caller regions; a failed
 * scenario's logs are kept, and a daemon that stays after its unmount
 * has its threads' stacks kept before it is killed.  What a failed
 * scenario keeps on the export is removed.
 */
#include "harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
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
static int scn_run_more(const struct test_server *s, const char *file,
			const char *tmpdir, const char *json,
			const char *const *more, void (*planted)(pid_t pid),
			char *out, size_t len);

static int scn_run(const struct test_server *s, const char *file,
		   const char *tmpdir, const char *json,
		   void (*planted)(pid_t pid), char *out, size_t len)
{
	return scn_run_more(s, file, tmpdir, json, NULL, planted, out, len);
}

/* scn_run() with more options (NULL-terminated, at most 6). */
static int scn_run_more(const struct test_server *s, const char *file,
			const char *tmpdir, const char *json,
			const char *const *more, void (*planted)(pid_t pid),
			char *out, size_t len)
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
		const char *argv[18] = { "intrfs-scenario",
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
		for (; more && *more && n < 14; more++)
			argv[n++] = *more;
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

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/*
 * A failed scenario's directory, which the runner keeps on the export
 * ("     kept DIR"), removed: only below s's export, never elsewhere.
 */
static void unkeep(const struct test_server *s, const char *out)
{
	const char *at = strstr(out, "     kept ");
	char path[512], prefix[512];

	if (!at)
		return;
	snprintf(path, sizeof(path), "%.*s", (int)strcspn(at + 10, "\n"),
		 at + 10);
	snprintf(prefix, sizeof(prefix), "%s/scn-", s->export_dir);
	ASSERT_EQ(strncmp(path, prefix, strlen(prefix)), 0);
	ASSERT_EQ(nftw(path, rm_one, 8, FTW_DEPTH | FTW_PHYS), 0);
}

/* The text of path (at most len - 1 bytes) in buf. */
static void read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW);
	ssize_t n;

	ASSERT_GE(fd, 0);
	n = read(fd, buf, len - 1);
	ASSERT_GE(n, 0);
	buf[n] = '\0';
	close(fd);
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
	unkeep(&s, out);
	unlink(file);
	/*
	 * A set-up that fails before the scenario's processes start (the
	 * mount is refused): none of them is signalled.  One that was never
	 * forked has pid 0, and kill(0, SIGKILL) would end the runner's
	 * whole process group, this test with it.
	 */
	scn_write(dir, "nomount.scn",
		  "name no-mount\nmount no_such_option\nworkload stat\n"
		  "signal SIGKILL at=0\n",
		  file, sizeof(file));
	ASSERT_EQ(scn_run(&s, file, NULL, NULL, NULL, out, sizeof(out)), 1);
	ASSERT_CONTAINS(out, "FAIL no-mount  could not run: ");
	ASSERT_CONTAINS(out, "no_such_option");
	unkeep(&s, out);
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
	char json[64], vault[64], ldir[64], mid[96];
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
	/*
	 * A link in the middle of its path, towards a directory only root
	 * may enter: refused, naming the link; nothing made behind it.
	 */
	snprintf(vault, sizeof(vault), "%s/vault", dir);
	ASSERT_EQ(mkdir(vault, 0700), 0);
	snprintf(ldir, sizeof(ldir), "%s/ldir", dir);
	ASSERT_EQ(symlink(vault, ldir), 0);
	snprintf(mid, sizeof(mid), "%s/out.json", ldir);
	ASSERT_EQ(scn_run(&s, file, tmp, mid, NULL, out, sizeof(out)), 2);
	ASSERT_CONTAINS(out, ldir);
	ASSERT_CONTAINS(out, "is a symbolic link");
	snprintf(mid, sizeof(mid), "%s/out.json", vault);
	ASSERT_EQ(lstat(mid, &st), -1);
	unlink(ldir);
	rmdir(vault);

	unlink(json);
	unlink(file);
	unlink(victim);
	rmdir(tmp);
	rmdir(dir);
	return 0;
}

static int rm_tree(const char *dir)
{
	return nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

/*
 * What explains a failed scenario is kept: the daemon's log (and
 * netfault's) in a directory of the scenario's own under --out, or under
 * one made in TMPDIR without it, which the failure names.  A daemon that
 * does not exit after its unmount (here the real one, run by a wrapper
 * that stays, SIGUSR1 ignored, once the daemon has exited) has its threads'
 * stacks, kernel and user side, written there before it is killed.
 */
TEST_IMPL(runner_keeps_logs_and_stacks)
{
	static char out[16384], text[65536];
	char dir[] = "/tmp/intrfs-test-scn.XXXXXX", file[64], wrapper[64];
	char kept[128], path[256], want[512], tmp[64];
	const char *at;
	struct test_server s;
	FILE *f;

	srv_get(&s);
	ASSERT_NOT_NULL(mkdtemp(dir));
	snprintf(wrapper, sizeof(wrapper), "%s/stays", dir);
	f = fopen(wrapper, "w");
	ASSERT_NOT_NULL(f);
	fprintf(f, "#!/bin/sh\n'%s' \"$@\"\ntrap '' USR1\nexec sleep 600\n",
		intrfs_bin());
	ASSERT_EQ(fclose(f), 0);
	ASSERT_EQ(chmod(wrapper, 0700), 0);
	snprintf(kept, sizeof(kept), "%s/kept", dir);
	scn_write(dir, "stays.scn", "name stuck-daemon\nworkload stat\n", file,
		  sizeof(file));
	ASSERT_EQ(scn_run_more(&s, file, NULL, NULL,
			       (const char *const[]){ "--intrfs", wrapper,
						      "--out", kept, NULL },
			       NULL, out, sizeof(out)),
		  1);
	snprintf(want, sizeof(want),
		 "did not exit within 15 s of the unmount; killed (its log, "
		 "task table and threads' stacks kept in %s/001-stuck-daemon)",
		 kept);
	ASSERT_CONTAINS(out, want);
	snprintf(want, sizeof(want), "     logs kept in %s/001-stuck-daemon\n",
		 kept);
	ASSERT_CONTAINS(out, want);
	snprintf(path, sizeof(path), "%s/001-stuck-daemon/stacks.txt", kept);
	read_text(path, text, sizeof(text));
	ASSERT_CONTAINS(text, "had not exited 15 s after the unmount");
	ASSERT_CONTAINS(text, "Kernel-side stacks:\nthread ");
	ASSERT_CONTAINS(text, "(sleep) S ");
	/* gdb is one of mount-scripts/setup's packages. */
	ASSERT_CONTAINS(text, "User-side stacks (gdb):");
	ASSERT_CONTAINS(text, "#0 ");
	snprintf(path, sizeof(path), "%s/001-stuck-daemon/intrfs.log", kept);
	read_text(path, text, sizeof(text));
	ASSERT_CONTAINS(text, "intrfs: mounted ");
	unkeep(&s, out);
	unlink(file);

	/* Without --out: in a directory made in TMPDIR, at the failure. */
	snprintf(tmp, sizeof(tmp), "%s/tmp", dir);
	ASSERT_EQ(mkdir(tmp, 0700), 0);
	scn_write(dir, "fails.scn",
		  "name fails\nworkload stat\nexpect result=EIO\n", file,
		  sizeof(file));
	ASSERT_EQ(scn_run(&s, file, tmp, NULL, NULL, out, sizeof(out)), 1);
	at = strstr(out, "     logs kept in ");
	ASSERT_NOT_NULL(at);
	snprintf(path, sizeof(path), "%.*s", (int)strcspn(at + 18, "\n"),
		 at + 18);
	snprintf(want, sizeof(want), "%s/intrfs-scn-failed.", tmp);
	ASSERT_EQ(strncmp(path, want, strlen(want)), 0);
	ASSERT_CONTAINS(path, "/001-fails");
	snprintf(path + strlen(path), sizeof(path) - strlen(path),
		 "/intrfs.log");
	read_text(path, text, sizeof(text));
	ASSERT_CONTAINS(text, "intrfs: mounted ");
	unkeep(&s, out);
	unlink(file);
	ASSERT_EQ(rm_tree(dir), 0);
	return 0;
}

/*
 * copyup into local upper and work directories and into upper/ and work/
 * on the mount, two processes each: both pass, their copies whole, and
 * the JSON says where the upper directory was and that no temporary is
 * left.
 */
TEST_IMPL(runner_copyup)
{
	static char out[16384], js[16384];
	static const struct {
		const char *file, *text, *pass, *upper;
	} cases[] = {
		{ "local.scn",
		  "name cu-local\nworkload copyup size=256K chunk=64K "
		  "procs=2\nexpect result=ok call=none export=new\n",
		  "PASS cu-local  ok", "\"upper\":\"local\"" },
		{ "intrfs.scn",
		  "name cu-intrfs\nworkload copyup size=256K chunk=64K "
		  "procs=2 direct upper=intrfs\nexpect result=ok call=none "
		  "export=new\n",
		  "PASS cu-intrfs  ok", "\"upper\":\"intrfs\"" },
	};
	char dir[] = "/tmp/intrfs-test-scn.XXXXXX", file[64], json[64];
	struct test_server s;

	srv_get(&s);
	ASSERT_NOT_NULL(mkdtemp(dir));
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		scn_write(dir, cases[i].file, cases[i].text, file,
			  sizeof(file));
		snprintf(json, sizeof(json), "%s/%zu.json", dir, i);
		if (scn_run(&s, file, NULL, json, NULL, out, sizeof(out)) != 0)
			TEST__FAIL("%s did not pass:\n%s", cases[i].file, out);
		ASSERT_CONTAINS(out, cases[i].pass);
		read_text(json, js, sizeof(js));
		ASSERT_CONTAINS(js, "\"op\":\"copyup\"");
		ASSERT_CONTAINS(js, cases[i].upper);
		ASSERT_CONTAINS(js, "\"done\":262144");
		ASSERT_CONTAINS(js, "\"export\":\"new\",\"work_left\":0");
		ASSERT_CONTAINS(js, "{\"check\":\"call\",\"proc\":1,"
				    "\"want\":\"none\",\"got\":\"none\","
				    "\"pass\":true}");
		unlink(json);
		unlink(file);
	}
	rmdir(dir);
	return 0;
}

/*
 * expect call=: a copy-up's O_DIRECT read waits on stalled replies on an
 * intr mount and a handled SIGINT ends it with EINTR.  call=read passes;
 * call=write fails, and the FAIL line names the check, what was wanted
 * and the call that failed.
 */
TEST_IMPL(runner_expect_call)
{
	static char out[16384];
	static const char body[] =
		"mount hard,intr,timeo=5,retrans=1\n"
		"fault at=0 for=1s netfault stall dir=reply\n"
		"workload copyup size=64K chunk=64K direct\n"
		"signal SIGINT handler at=300ms\n";
	char dir[] = "/tmp/intrfs-test-scn.XXXXXX", file[64], text[512];
	struct test_server s;

	srv_get(&s);
	ASSERT_NOT_NULL(mkdtemp(dir));
	snprintf(text, sizeof(text),
		 "name call-right\n%sexpect result=EINTR call=read|fsync "
		 "export=old\n",
		 body);
	scn_write(dir, "right.scn", text, file, sizeof(file));
	if (scn_run(&s, file, NULL, NULL, NULL, out, sizeof(out)) != 0)
		TEST__FAIL("call=read did not pass:\n%s", out);
	ASSERT_CONTAINS(out, "PASS call-right  EINTR (read)");
	unlink(file);

	snprintf(text, sizeof(text),
		 "name call-wrong\n%sexpect result=EINTR call=write|rename\n",
		 body);
	scn_write(dir, "wrong.scn", text, file, sizeof(file));
	ASSERT_EQ(scn_run(&s, file, NULL, NULL, NULL, out, sizeof(out)), 1);
	ASSERT_CONTAINS(out, "FAIL call-wrong  EINTR (read)");
	ASSERT_CONTAINS(out, ": want call=write|rename, got read");
	/* The result itself was right: only the call is named. */
	if (strstr(out, "want result="))
		TEST__FAIL("a right result is named as wrong:\n%s", out);
	unkeep(&s, out);
	unlink(file);
	rmdir(dir);
	return 0;
}

/*
 * A region line: each process declares the region on the intrfs mount
 * before time 0, and the JSON says which.  Its read waits on stalled
 * replies on an intr mount, which puts no region around it, and a
 * handled SIGINT comes: the declared killable region holds it back, so
 * the read completes (a daemon with caller regions); a daemon without
 * them answers ENOTTY, and the scenario fails on that by name.  A region
 * never declared would show as EINTR (read): both are failures here.
 */
TEST_IMPL(runner_region)
{
	static char out[16384], js[16384];
	char dir[] = "/tmp/intrfs-test-scn.XXXXXX", file[64], json[64];
	struct test_server s;
	int rc;

	srv_get(&s);
	ASSERT_NOT_NULL(mkdtemp(dir));
	scn_write(dir, "region.scn",
		  "name region-declared\n"
		  "mount hard,intr,policy=region,timeo=5,retrans=1\n"
		  "region killable runner test\n"
		  "fault at=0 for=1s netfault stall dir=reply\n"
		  "workload read size=64K chunk=64K direct\n"
		  "signal SIGINT handler at=300ms\n"
		  "expect result=ok call=none\n",
		  file, sizeof(file));
	snprintf(json, sizeof(json), "%s/out.json", dir);
	rc = scn_run(&s, file, NULL, json, NULL, out, sizeof(out));
	if (rc == 0)
		ASSERT_CONTAINS(out, "PASS region-declared  ok");
	else if (rc == 1)
		ASSERT_CONTAINS(out, "FAIL region-declared  ENOTTY (region)");
	else
		TEST__FAIL("the runner exited %d:\n%s", rc, out);
	unkeep(&s, out);
	read_text(json, js, sizeof(js));
	ASSERT_CONTAINS(js, "\"region\":{\"kind\":\"killable\","
			    "\"reason\":\"runner test\"}");
	unlink(json);
	unlink(file);
	rmdir(dir);
	return 0;
}
