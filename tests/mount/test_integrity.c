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
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef EXERCISE_BIN
#error "EXERCISE_BIN: the path of intrfs-exercise, from tests/meson.build"
#endif

#define SHORT_SECONDS "20"
/* A worker that makes no progress this long fails the run. */
#define SHORT_STUCK "40"

TEST_IMPL(integrity_short)
{
	struct test_server s;
	char seed[32];
	time_t now = time(NULL);
	struct tm tm;
	pid_t pid;
	int st;

	srv_get(&s);
	gmtime_r(&now, &tm);
	strftime(seed, sizeof(seed), "%Y%m%d", &tm);
	fprintf(stderr, "# intrfs-exercise --seed %s --seconds %s\n", seed,
		SHORT_SECONDS);
	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		/* A test that times out takes the run with it (it cleans up
		 * on SIGTERM). */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		signal(SIGABRT, SIG_DFL);
		execl(EXERCISE_BIN, EXERCISE_BIN, "--seed", seed, "--seconds",
		      SHORT_SECONDS, "--procs", "4", "--stuck", SHORT_STUCK,
		      "--intrfs", intrfs_bin(), (char *)NULL);
		perror("exec intrfs-exercise");
		_exit(127);
	}
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT(WIFEXITED(st));
	if (WEXITSTATUS(st) != 0)
		TEST__FAIL("intrfs-exercise --seed %s failed (exit %d): its "
			   "report is above",
			   seed, WEXITSTATUS(st));
	return 0;
}
