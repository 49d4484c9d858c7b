/*
 * The integrity exerciser (tests/integrity/, intrfs-exercise) in the mount
 * suite: a short run against the suite's server, random operations from
 * four processes under random netfault rules and signals, every byte and
 * name checked on the export.  The seed is today's date, printed, so the
 * run varies from day to day and a failure is rerun with that seed; longer
 * runs are by hand (intrfs-exercise --help).
 */
#include "harness.h"

#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef EXERCISE_BIN
#error "EXERCISE_BIN: the path of intrfs-exercise, from tests/meson.build"
#endif

#define SHORT_KINDS "delay,drop,reorder,reset,slice"
#define SHORT_SECONDS "20"
/* A worker that makes no progress this long fails the run. */
#define SHORT_STUCK "40"

/*
 * Runs intrfs-exercise with args (NULL-terminated, after the program
 * name); returns its exit status.  With out, its stdout and stderr are
 * kept there (NUL-terminated) instead of going to the test's stderr.
 */
static int exercise(const char *const *args, char *out, size_t len)
{
	const char *argv[32] = { EXERCISE_BIN };
	size_t n = 1, got = 0;
	int p[2], st;
	pid_t pid;

	for (; *args && n < ARRAY_SIZE(argv) - 3; args++)
		argv[n++] = *args;
	argv[n++] = "--intrfs";
	argv[n++] = intrfs_bin();
	ASSERT_EQ(pipe(p), 0);
	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		/* A test that times out takes the run with it (it cleans up
		 * on SIGTERM). */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		signal(SIGABRT, SIG_DFL);
		close(p[0]);
		if (out) {
			dup2(p[1], 1);
			dup2(p[1], 2);
		}
		execv(EXERCISE_BIN, (char *const *)argv);
		perror("exec intrfs-exercise");
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		char buf[4096];
		ssize_t r = read(p[0], buf, sizeof(buf));

		if (r <= 0)
			break;
		if (out && got + 1 < len) {
			size_t take = (size_t)r < len - 1 - got ? (size_t)r :
								  len - 1 - got;

			memcpy(out + got, buf, take);
			got += take;
		}
	}
	if (out)
		out[got] = '\0';
	close(p[0]);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT(WIFEXITED(st));
	return WEXITSTATUS(st);
}

TEST_IMPL(integrity_short)
{
	struct test_server s;
	char seed[32];
	time_t now = time(NULL);
	struct tm tm;
	int rc;

	srv_get(&s);
	gmtime_r(&now, &tm);
	strftime(seed, sizeof(seed), "%Y%m%d", &tm);
	/*
	 * What a TCP path can do to RPC records: delay, lose (the client
	 * sends again), reset, cut in pieces, and answers in any order.  Not
	 * netfault's duplicate, which delivers a record twice, as TCP never
	 * does: longer runs by hand take it (--fault-kinds).
	 */
	fprintf(stderr,
		"# intrfs-exercise --seed %s --seconds %s --fault-kinds %s\n",
		seed, SHORT_SECONDS, SHORT_KINDS);
	rc = exercise((const char *const[]){ "--seed", seed, "--seconds",
					     SHORT_SECONDS, "--procs", "4",
					     "--stuck", SHORT_STUCK,
					     "--fault-kinds", SHORT_KINDS,
					     NULL },
		      NULL, 0);
	if (rc != 0)
		TEST__FAIL("intrfs-exercise --seed %s failed (exit %d): its "
			   "report is above",
			   seed, rc);
	return 0;
}

/*
 * The check can fail: a byte flipped on the export behind the mount's back
 * (--self-test-corrupt) is reported, with the offset, and the run fails.
 */
TEST_IMPL(integrity_detects_corruption)
{
	static char out[1 << 20];
	struct test_server s;

	srv_get(&s);
	ASSERT_EQ(exercise((const char *const[]){ "--seed", "1", "--ops", "300",
						  "--procs", "2", "--no-faults",
						  "--no-signals",
						  "--self-test-corrupt", NULL },
			   out, sizeof(out)),
		  1);
	ASSERT_CONTAINS(out, "self-test: flipped the byte at offset");
	ASSERT_CONTAINS(out, "MISMATCH in ");
	ASSERT_CONTAINS(out, "(on the export): expected ");
	ASSERT_CONTAINS(out, "the last 20 operations of worker 0 (seed 1)");
	return 0;
}

/*
 * A symbolic link a client of the server put in place of a file, over NFS
 * (--self-test-link: to a copy of the file's bytes, outside the export),
 * is refused and named by the check of the export: following it would
 * find every byte right, and a root tool that follows links there reads
 * (or writes) whatever they point at.
 */
TEST_IMPL(integrity_refuses_planted_link)
{
	static char out[1 << 20];
	struct test_server s;

	srv_get(&s);
	ASSERT_EQ(exercise((const char *const[]){ "--seed", "1", "--ops", "300",
						  "--procs", "2", "--no-faults",
						  "--no-signals",
						  "--self-test-link", NULL },
			   out, sizeof(out)),
		  1);
	ASSERT_CONTAINS(out, "is now a symbolic link to ");
	ASSERT_CONTAINS(out, "(seed 1) worker 0, check of the export after "
			     "the unmount: ");
	ASSERT_CONTAINS(out, "a symbolic link (not followed)");
	return 0;
}
