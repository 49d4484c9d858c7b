/*
 * Tests of the scenario parser (tests/scenarios/runner/parse.c): every
 * ```scn block of tests/scenarios/README.md and every scenario file kept
 * in tests/scenarios/ parses, and its canonical
 * form parses back to the same canonical form; each kind of mistake is
 * refused with FILE:LINE:COL, the line and a caret under the mistake; the
 * defaults are the README's.  And the copyup workload's check (work.c)
 * on each thing a copy-up can leave behind.
 */
#include "test.h"

#include "scenario.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

/* text parses, and its canonical form is a fixed point. */
static void round_trip(const char *name, const char *text)
{
	static struct scenario a, b;
	char *c1 = NULL, *c2 = NULL;
	size_t l1 = 0, l2 = 0;
	FILE *f;

	if (scn_parse_text(name, text, &a, stderr) < 0)
		TEST__FAIL("%s did not parse:\n%s", name, text);
	f = open_memstream(&c1, &l1);
	scn_print(&a, f);
	fclose(f);
	if (scn_parse_text(name, c1, &b, stderr) < 0)
		TEST__FAIL("the canonical form of %s did not parse:\n%s", name,
			   c1);
	f = open_memstream(&c2, &l2);
	scn_print(&b, f);
	fclose(f);
	ASSERT_STR_EQ(c2, c1);
	free(c1);
	free(c2);
}

TEST_IMPL(scenario_readme_examples)
{
	FILE *f = fopen(SCN_README, "r");
	char line[1024], text[8192];
	bool in = false;
	unsigned n = 0;

	ASSERT_NOT_NULL(f);
	text[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "```", 3) == 0) {
			if (in) {
				round_trip("README.md", text);
				n++;
			}
			in = strncmp(line, "```scn", 6) == 0;
			text[0] = '\0';
			continue;
		}
		if (in && strlen(text) + strlen(line) < sizeof(text))
			strcat(text, line);
	}
	fclose(f);
	ASSERT_GE(n, 1);
	return 0;
}

/* The .scn files of dir parse; how many there are. */
static unsigned files_parse(const char *dir)
{
	static struct scenario s;
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned n = 0;

	if (!d)
		TEST__FAIL("%s: %s", dir, strerror(errno));
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char path[1024];

		if (len < 5 || strcmp(e->d_name + len - 4, ".scn") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (scn_parse_file(path, &s, stderr) < 0)
			TEST__FAIL("%s does not parse", path);
		n++;
	}
	closedir(d);
	fprintf(stderr, "%u scenario files in %s parse\n", n, dir);
	return n;
}

/* The scenario files kept in the tree (not the generated matrix). */
TEST_IMPL(scenario_files_parse)
{
	/* An empty or misnamed directory would pass without these. */
	ASSERT_GE(files_parse(SCN_DIR), 14);
	return 0;
}

TEST_IMPL(scenario_defaults)
{
	static struct scenario s;

	ASSERT_EQ(scn_parse_text("dir/seed-1.scn", "workload read\n", &s,
				 stderr),
		  0);
	ASSERT_STR_EQ(s.name, "seed-1");
	ASSERT_EQ(s.op, OP_READ);
	ASSERT_EQ(s.size, 1u << 20);
	ASSERT_EQ(s.chunk, 1u << 20);
	ASSERT_EQ(s.procs, 1);
	ASSERT_EQ(s.direct, false);
	ASSERT_EQ(s.sig, 0);
	ASSERT_EQ(s.nresults, 1);
	ASSERT_EQ(s.results[0], RES_OK);
	ASSERT_EQ(s.export_state, ST_AUTO);
	ASSERT_EQ(s.timeout_ns, 60000000000ull);
	ASSERT_EQ(s.nfaults, 0);
	ASSERT(!s.overlay);
	return 0;
}

/* text printed in canonical form, whole. */
static char *canonical(const char *text)
{
	static struct scenario s;
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	if (scn_parse_text("t.scn", text, &s, stderr) < 0)
		TEST__FAIL("did not parse:\n%s", text);
	f = open_memstream(&out, &len);
	scn_print(&s, f);
	fclose(f);
	return out;
}

/*
 * expect call=: the alternatives in their order, none and the signal
 * that killed the process among them; the last expect line's call= is
 * the one; printed after result=, only when asked for.
 */
TEST_IMPL(scenario_expect_call)
{
	static struct scenario s;
	const char *text =
		"workload read\n"
		"expect result=killed|EINTR call=SIGKILL|read|none\n";
	char *out;

	ASSERT_EQ(scn_parse_text("t.scn", text, &s, stderr), 0);
	ASSERT_EQ(s.ncalls, 3);
	ASSERT_STR_EQ(s.calls[0], "SIGKILL");
	ASSERT_STR_EQ(s.calls[1], "read");
	ASSERT_STR_EQ(s.calls[2], "none");
	out = canonical(text);
	ASSERT_CONTAINS(out, "expect result=killed|EINTR "
			     "call=SIGKILL|read|none export=auto "
			     "data=intact\n");
	free(out);
	round_trip("t.scn", text);
	out = canonical("workload write\nexpect result=EINTR\n");
	if (strstr(out, "call="))
		TEST__FAIL("call= printed though not asked for:\n%s", out);
	free(out);
	ASSERT_EQ(scn_parse_text("t.scn", "workload read\n", &s, stderr), 0);
	ASSERT_EQ(s.ncalls, 0);
	ASSERT_EQ(scn_parse_text("t.scn",
				 "workload read\nexpect call=read\n"
				 "expect call=open|none\n",
				 &s, stderr),
		  0);
	ASSERT_EQ(s.ncalls, 2);
	ASSERT_STR_EQ(s.calls[0], "open");
	return 0;
}

/*
 * region KIND [REASON]: the reason is its words as written (a trailing
 * comment is not part of it), "scenario" when there is none; printed
 * back after the mount line.
 */
TEST_IMPL(scenario_region)
{
	static struct scenario s;
	const char *text = "mount hard\n"
			   "region   uninterruptible  waiting  for p0   # why\n"
			   "workload read\n";
	char *out;

	ASSERT_EQ(scn_parse_text("t.scn", text, &s, stderr), 0);
	ASSERT(s.has_region);
	ASSERT_EQ(s.region_kind, REGION_UNINTERRUPTIBLE);
	ASSERT_STR_EQ(s.region_reason, "waiting  for p0");
	out = canonical(text);
	ASSERT_CONTAINS(out, "mount hard\n"
			     "region uninterruptible waiting  for p0\n"
			     "workload read ");
	free(out);
	round_trip("t.scn", text);
	ASSERT_EQ(scn_parse_text("r.scn", "region killable\nworkload read\n",
				 &s, stderr),
		  0);
	ASSERT(s.has_region);
	ASSERT_EQ(s.region_kind, REGION_KILLABLE);
	ASSERT_STR_EQ(s.region_reason, "scenario");
	out = canonical("region killable\nworkload read\n");
	ASSERT_CONTAINS(out, "region killable scenario\n");
	free(out);
	ASSERT_EQ(scn_parse_text("n.scn", "workload read\n", &s, stderr), 0);
	ASSERT(!s.has_region);
	return 0;
}

/*
 * A copyup, as --check prints it, whole: every default written out, its
 * upper directory after the workload's keys, beside a region and call=.
 */
TEST_IMPL(scenario_copyup)
{
	static struct scenario s;
	const char *text = "name cu\n"
			   "mount hard,intr,policy=region\n"
			   "region killable copy-up\n"
			   "workload copyup size=3M chunk=256K direct "
			   "upper=intrfs\n"
			   "signal SIGINT at=500ms\n"
			   "expect result=EINTR call=read\n";
	char *out;

	ASSERT_EQ(scn_parse_text("t.scn", text, &s, stderr), 0);
	ASSERT_EQ(s.op, OP_COPYUP);
	ASSERT(s.upper_intrfs);
	ASSERT(s.direct);
	out = canonical(text);
	ASSERT_STR_EQ(out, "name cu\n"
			   "mount hard,intr,policy=region\n"
			   "region killable copy-up\n"
			   "workload copyup size=3M chunk=256K entries=100 "
			   "procs=1 direct upper=intrfs\n"
			   "signal SIGINT handler at=500ms\n"
			   "expect result=EINTR call=read export=auto "
			   "data=intact\n"
			   "timeout 1m\n");
	free(out);
	round_trip("t.scn", text);
	/* Upper and work directories are local by default. */
	ASSERT_EQ(scn_parse_text("c.scn", "workload copyup\n", &s, stderr), 0);
	ASSERT(!s.upper_intrfs);
	out = canonical("workload copyup\n");
	ASSERT_CONTAINS(out, "workload copyup size=1M chunk=1M entries=100 "
			     "procs=1 buffered upper=local\n");
	free(out);
	/* Only a copyup has an upper directory to print. */
	out = canonical("workload write\n");
	ASSERT_CONTAINS(out, "workload write size=1M chunk=1M entries=100 "
			     "procs=1 buffered\n");
	free(out);
	return 0;
}

/*
 * A lock workload: its holder's time and the flock() flag, printed back as
 * they were read; a lock waiter that failed must not hold the lock.
 */
TEST_IMPL(scenario_lock)
{
	static struct scenario s, again;
	const char *text = "workload lock hold=2500ms flock\n"
			   "signal SIGINT handler when=blocked\n"
			   "expect result=EINTR\n";
	char *printed = NULL;
	size_t len = 0;
	FILE *f;

	ASSERT_EQ(scn_parse_text("lock.scn", text, &s, stderr), 0);
	ASSERT_EQ(s.op, OP_LOCK);
	ASSERT_UINT64_EQ(s.hold_ns, 2500000000ull);
	ASSERT(s.flock);
	f = open_memstream(&printed, &len);
	ASSERT_NOT_NULL(f);
	scn_print(&s, f);
	fclose(f);
	ASSERT_CONTAINS(printed, "workload lock");
	ASSERT_CONTAINS(printed, "hold=2500ms flock");
	ASSERT_EQ(scn_parse_text("again.scn", printed, &again, stderr), 0);
	ASSERT_UINT64_EQ(again.hold_ns, s.hold_ns);
	ASSERT(again.flock);
	free(printed);
	/* The default holder keeps it 1 s; fcntl() without the flag. */
	ASSERT_EQ(scn_parse_text("d.scn", "workload lock\n", &s, stderr), 0);
	ASSERT_UINT64_EQ(s.hold_ns, 1000000000ull);
	ASSERT(!s.flock);
	/* hold= is a duration. */
	f = fopen("/dev/null", "w");
	ASSERT_NOT_NULL(f);
	ASSERT_EQ(scn_parse_text("bad.scn", "workload lock hold=5\n", &s, f),
		  -1);
	fclose(f);
	return 0;
}

TEST_IMPL(scenario_full)
{
	static struct scenario s;
	const char *text =
		"# comment\n"
		"name   a/b-c\n"
		"about  what it shows\n"
		"mount  soft,timeo=5\n"
		"overlay\n"
		"workload write size=16M chunk=64K procs=3 direct\n"
		"fault at=0 for=1500ms netfault stall dir=call\n"
		"fault at=2s restart\n"
		"fault at=100ms for=1s partition reject\n"
		"fault at=1m for=2s pause\n"
		"signal INT default at=250ms every=5ms when=blocked\n"
		"expect result=ok|EINTR|killed latency<=2s latency>=1ms\n"
		"expect elapsed<=3s resets>=1 resets<=4 export=any data=any\n"
		"timeout 90s\n";

	ASSERT_EQ(scn_parse_text("x.scn", text, &s, stderr), 0);
	ASSERT_STR_EQ(s.name, "a/b-c");
	ASSERT_STR_EQ(s.about, "what it shows");
	ASSERT_STR_EQ(s.mount, "soft,timeo=5");
	ASSERT(s.overlay);
	ASSERT_EQ(s.op, OP_WRITE);
	ASSERT_EQ(s.size, 16u << 20);
	ASSERT_EQ(s.chunk, 64u << 10);
	ASSERT_EQ(s.procs, 3);
	ASSERT(s.direct);
	ASSERT_EQ(s.nfaults, 4);
	ASSERT_EQ(s.faults[0].kind, FK_NETFAULT);
	ASSERT_STR_EQ(s.faults[0].rule, "stall dir=call");
	ASSERT_EQ(s.faults[0].for_ns, 1500000000ull);
	ASSERT_EQ(s.faults[1].kind, FK_RESTART);
	ASSERT(!s.faults[1].has_for);
	ASSERT_EQ(s.faults[1].at_ns, 2000000000ull);
	ASSERT_EQ(s.faults[2].kind, FK_PARTITION_REJECT);
	ASSERT_EQ(s.faults[3].kind, FK_PAUSE);
	ASSERT_EQ(s.faults[3].at_ns, 60000000000ull);
	ASSERT_EQ(s.sig, SIGINT);
	ASSERT_EQ(s.action, ACT_DEFAULT);
	ASSERT_EQ(s.sig_at_ns, 250000000ull);
	ASSERT_EQ(s.every_ns, 5000000ull);
	ASSERT(s.when_blocked);
	ASSERT_EQ(s.nresults, 3);
	ASSERT_EQ(s.results[1], EINTR);
	ASSERT_EQ(s.results[2], RES_KILLED);
	ASSERT_EQ(s.latency_max.ns, 2000000000ull);
	ASSERT_EQ(s.latency_min.ns, 1000000ull);
	ASSERT_EQ(s.elapsed_max.ns, 3000000000ull);
	ASSERT(s.resets_min_set && s.resets_max_set && !s.resets_eq_set);
	ASSERT_EQ(s.resets_min, 1);
	ASSERT_EQ(s.resets_max, 4);
	ASSERT_EQ(s.export_state, ST_ANY);
	ASSERT(s.data_any);
	ASSERT_EQ(s.timeout_ns, 90000000000ull);
	round_trip("x.scn", text);
	return 0;
}

/* Each mistake: its message's first line, whole. */
static const struct {
	const char *text;
	const char *first;
	const char *caret_line; /* the third line: the caret under it */
} mistakes[] = {
	{ "workload reed\n", "f.scn:1:10: unknown operation 'reed'",
	  "           ^" },
	{ "workload read\nfault for=1s pause\n",
	  "f.scn:2:6: fault needs at=", NULL },
	{ "workload read\nfault at=1x pause\n", "f.scn:2:11: '1x' needs a unit",
	  "            ^" },
	{ "workload read\nfault at=2 pause\n", "f.scn:2:11: '2' needs a unit",
	  NULL },
	{ "workload read\nfault at=0 netfault stall at=2s\n",
	  "f.scn:2:27: in a rule, at=, for=, from= and until= count from "
	  "netfault's start",
	  NULL },
	{ "workload read\nfault at=0 partition\n",
	  "f.scn:2:21: partition is 'partition drop' or 'partition reject'",
	  NULL },
	{ "workload read\nsignal SIGFOO\n",
	  "f.scn:2:8: unknown signal 'SIGFOO'", NULL },
	{ "workload read\nsignal SIGKILL handler\n",
	  "f.scn:2:16: SIGKILL takes no action", NULL },
	{ "workload read\nexpect result=EWAT\n",
	  "f.scn:2:15: unknown result 'EWAT'", NULL },
	{ "workload read\nexpect result=ok|\n", "f.scn:2:18: unknown result ''",
	  NULL },
	{ "workload read\nexpect colour=red\n",
	  "f.scn:2:8: unknown check 'colour=red'", NULL },
	{ "workload read\nexpect latency\n",
	  "f.scn:2:8: 'latency' is not KEY=VALUE", NULL },
	{ "workload read\nmount hard,port=1\n",
	  "f.scn:2:7: port= and mountport= are netfault's", NULL },
	{ "workload read procs=0\n", "f.scn:1:21: procs= is 1 to 64", NULL },
	{ "workload read size=99999999999999999999\n",
	  "f.scn:1:20: 99999999999999999999 is too large", NULL },
	{ "workload read\nworkload write\n",
	  "f.scn:2:1: a second workload line", NULL },
	{ "workload read\nfrobnicate\n",
	  "f.scn:2:1: unknown directive "
	  "'frobnicate'",
	  NULL },
	{ "workload read\ntimeout 0\n", "f.scn:2:9: timeout must be > 0",
	  NULL },
	{ "workload read\noverlay lower\n", "f.scn:2:9: overlay takes nothing",
	  NULL },
	/* What netfault would refuse once mounted, refused here. */
	{ "workload read\nfault at=0 netfault drop proc=NOPE\n",
	  "f.scn:2:31: netfault refuses the rule: unknown procedure 'NOPE'",
	  "                                ^" },
	{ "workload read\nfault at=0 netfault delay -5\n",
	  "f.scn:2:27: netfault refuses the rule: bad number '-5' for MS",
	  NULL },
	{ "workload read\nfault at=0 netfault reorder 100000000\n",
	  "f.scn:2:29: netfault refuses the rule: N must be at most 1024",
	  NULL },
	/* region KIND [REASON] */
	{ "workload read\nregion\n",
	  "f.scn:2:7: region needs a kind: killable or uninterruptible",
	  "        ^" },
	{ "workload read\nregion sometimes\n",
	  "f.scn:2:8: unknown region kind 'sometimes' (killable, "
	  "uninterruptible)",
	  "         ^" },
	{ "workload read\nregion killable\nregion uninterruptible\n",
	  "f.scn:3:1: a second region line", "  ^" },
	{ "workload read\nregion killable "
	  "0123456789012345678901234567890123456789012345678901234567890123\n",
	  "f.scn:2:17: the reason is 64 bytes; a region's is at most 63",
	  "                  ^" },
	/* copyup and its upper= */
	{ "workload copyup upper=nfs\n",
	  "f.scn:1:23: upper= is local or intrfs",
	  "                        ^" },
	{ "workload read upper=local\n", "f.scn:1:15: upper= is copyup's",
	  NULL },
	{ "overlay\nworkload copyup\n",
	  "f.scn:2:10: copyup is the copy-up itself; overlay is the kernel's",
	  "           ^" },
	{ "workload copyup\noverlay\n",
	  "f.scn:2:1: copyup is the copy-up itself; overlay is the kernel's",
	  "  ^" },
	/* call= */
	{ "workload read\nexpect result=EINTR call=raed\n",
	  "f.scn:2:26: unknown call 'raed' (none, open, read, write,",
	  "                           ^" },
	{ "workload read\nexpect call=read|\n", "f.scn:2:18: unknown call ''",
	  NULL },
	{ "workload read\nexpect "
	  "call=read|read|read|read|read|read|read\n",
	  "f.scn:2:43: more than 6 calls", NULL },
	{ "workload read\nexpect call<=read\n",
	  "f.scn:2:8: unknown check 'call<=read'", NULL },
};

/* A NUL byte is a mistake where it is, not the end of its line. */
TEST_IMPL(scenario_nul_byte)
{
	static const char text[] = "workload read\nname a\0b\nsignal SIGINT\n";
	static struct scenario s;
	char dir[] = "/tmp/intrfs-test-scn.XXXXXX", path[64], want[96];
	char *msg = NULL;
	size_t len = 0;
	FILE *f;
	int fd;

	ASSERT_NOT_NULL(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/f.scn", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	close(fd);
	f = open_memstream(&msg, &len);
	ASSERT_EQ(scn_parse_file(path, &s, f), -1);
	fclose(f);
	snprintf(want, sizeof(want), "%s:2:7: a NUL byte", path);
	ASSERT_EQ(strncmp(msg, want, strlen(want)), 0);
	free(msg);
	ASSERT_EQ(unlink(path), 0);
	ASSERT_EQ(rmdir(dir), 0);
	return 0;
}

TEST_IMPL(scenario_mistakes)
{
	static struct scenario s;
	char *msg = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&msg, &len);

	/* A mistake of the whole file has no line. */
	ASSERT_EQ(scn_parse_text("f.scn", "# nothing\n", &s, f), -1);
	fclose(f);
	ASSERT_STR_EQ(msg, "f.scn: no workload line (workload read, workload "
			   "write size=16M...)\n");
	free(msg);

	for (size_t i = 0; i < ARRAY_SIZE(mistakes); i++) {
		char *nl, *second, *third;

		msg = NULL;
		len = 0;
		f = open_memstream(&msg, &len);
		ASSERT_EQ(scn_parse_text("f.scn", mistakes[i].text, &s, f), -1);
		fclose(f);
		nl = strchr(msg, '\n');
		ASSERT_NOT_NULL(nl);
		*nl = '\0';
		if (strncmp(msg, mistakes[i].first, strlen(mistakes[i].first)))
			TEST__FAIL("for %s: '%s', want '%s...'",
				   mistakes[i].text, msg, mistakes[i].first);
		/* The line, then the caret. */
		second = nl + 1;
		third = strchr(second, '\n');
		ASSERT_NOT_NULL(third);
		third++;
		ASSERT_NOT_NULL(strchr(third, '^'));
		if (mistakes[i].caret_line)
			ASSERT_EQ(strncmp(third, mistakes[i].caret_line,
					  strlen(mistakes[i].caret_line)),
				  0);
		free(msg);
	}
	return 0;
}

/* What a copy-up left, and what the check must make of it. */
#define CU_SIZE 65536u
static const struct {
	const char *what;
	uint64_t upper_size; /* upper/p0.a's bytes; 0: absent */
	bool upper_wrong; /* upper/p0.a holds other bytes than the lower's */
	const char *upper_extra; /* another name in upper/, or NULL */
	bool work_tmp; /* work/p0.a.tmp is left */
	bool killed;
	bool lower_changed;
	const char *state; /* "new", "old", or NULL: none (bad) */
	const char *why; /* in the message, when bad */
	unsigned work_left;
	/* What a client of the server could plant instead: */
	bool upper_symlink; /* upper/p0.a a link to a whole copy outside */
	bool lower_symlink; /* p0.a the same */
	bool lower_hard; /* p0.a with a second name */
} copyup_cases[] = {
	{ "copied", CU_SIZE, false, NULL, false, false, false, "new", NULL, 0,
	  false, false, false },
	{ "not begun", 0, false, NULL, false, false, false, "old", NULL, 0,
	  false, false, false },
	{ "a short final file", CU_SIZE / 2, false, NULL, false, false, false,
	  NULL, "has 32768 bytes, not 65536", 0, false, false, false },
	{ "the final file's bytes wrong", CU_SIZE, true, NULL, false, false,
	  false, NULL, "is not the lower file's bytes", 0, false, false,
	  false },
	{ "a half file under another name", 0, false, "p0.a.tmp", false, false,
	  false, NULL, "holds a name of process 0 other than p0.a", 0, false,
	  false, false },
	{ "a name of no process", CU_SIZE, false, "junk", false, false, false,
	  NULL, "holds junk, no process's", 0, false, false, false },
	{ "another process's name", CU_SIZE, false, "p1.a", false, false, false,
	  NULL, "holds p1.a, no process's", 0, false, false, false },
	{ "a temporary left by one that ended itself", 0, false, NULL, true,
	  false, false, NULL,
	  "keeps 1 temporary of process 0, which ended "
	  "itself",
	  1, false, false, false },
	{ "a temporary left by one killed", 0, false, NULL, true, true, false,
	  "old", NULL, 1, false, false, false },
	{ "the lower file changed", CU_SIZE, false, NULL, false, false, true,
	  NULL, "the lower file", 0, false, false, false },
	{ "the final file a symbolic link to a whole copy", 0, false, NULL,
	  false, false, false, NULL, "upper/p0.a: a symbolic link", 0, true,
	  false, false },
	{ "the lower file a symbolic link to a whole copy", 0, false, NULL,
	  false, false, false, NULL, "p0.a: a symbolic link", 0, false, true,
	  false },
	{ "the lower file a hard link", 0, false, NULL, false, false, false,
	  NULL, "p0.a: a file with other names too (a hard link", 0, false,
	  false, true },
};

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Removes dir and what is in it; 0 or -1. */
static int rm_tree(const char *dir)
{
	return nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

/* A file of n bytes, process 0's old ones (new with wrong). */
static void put_file(const char *path, uint64_t n, bool wrong)
{
	static unsigned char buf[CU_SIZE];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);

	ASSERT_GE(fd, 0);
	for (uint64_t i = 0; i < n; i++)
		buf[i] = wrong ? work_new_byte(0, i) : work_old_byte(0, i);
	ASSERT_EQ(write(fd, buf, n), (ssize_t)n);
	close(fd);
}

/*
 * work_copyup_check() on each thing a copy-up can leave: only a whole
 * copy (new) or nothing (old) passes, the lower file never changes, and
 * only a killed process may leave its temporary.
 */
TEST_IMPL(scenario_copyup_check)
{
	static struct scenario s;

	ASSERT_EQ(scn_parse_text("c.scn",
				 "workload copyup size=64K upper=intrfs\n", &s,
				 stderr),
		  0);
	for (size_t i = 0; i < ARRAY_SIZE(copyup_cases); i++) {
		char dir[] = "/tmp/intrfs-test-cu.XXXXXX", up[64], wk[64];
		char out[] = "/tmp/intrfs-test-cu-out.XXXXXX";
		char path[96], copy[96], why[1024];
		struct work_at at = { -1, dir }, upper = { -1, up },
			       work = { -1, wk };
		const char *got, *seen;
		unsigned left = 99;

		ASSERT_NOT_NULL(mkdtemp(dir));
		ASSERT_NOT_NULL(mkdtemp(out));
		at.fd = open(dir, O_PATH | O_DIRECTORY);
		ASSERT_GE(at.fd, 0);
		ASSERT_EQ(work_prepare(&s, &at, 0), 0);
		snprintf(up, sizeof(up), "%s/upper", dir);
		snprintf(wk, sizeof(wk), "%s/work", dir);
		upper.fd = open(up, O_PATH | O_DIRECTORY);
		work.fd = open(wk, O_PATH | O_DIRECTORY);
		ASSERT_GE(upper.fd, 0);
		ASSERT_GE(work.fd, 0);
		/* A whole copy outside, for the links. */
		snprintf(copy, sizeof(copy), "%s/copy", out);
		put_file(copy, CU_SIZE, false);
		if (copyup_cases[i].upper_symlink) {
			snprintf(path, sizeof(path), "%s/p0.a", up);
			ASSERT_EQ(symlink(copy, path), 0);
		}
		snprintf(path, sizeof(path), "%s/p0.a", dir);
		if (copyup_cases[i].lower_symlink) {
			ASSERT_EQ(unlink(path), 0);
			ASSERT_EQ(symlink(copy, path), 0);
		}
		if (copyup_cases[i].lower_hard) {
			char again[96];

			snprintf(again, sizeof(again), "%s/again", dir);
			ASSERT_EQ(link(path, again), 0);
		}
		if (copyup_cases[i].upper_size) {
			snprintf(path, sizeof(path), "%s/p0.a", up);
			put_file(path, copyup_cases[i].upper_size,
				 copyup_cases[i].upper_wrong);
		}
		if (copyup_cases[i].upper_extra) {
			snprintf(path, sizeof(path), "%s/%s", up,
				 copyup_cases[i].upper_extra);
			put_file(path, 100, false);
		}
		if (copyup_cases[i].work_tmp) {
			snprintf(path, sizeof(path), "%s/p0.a.tmp", wk);
			put_file(path, 100, false);
		}
		if (copyup_cases[i].lower_changed) {
			snprintf(path, sizeof(path), "%s/p0.a", dir);
			put_file(path, CU_SIZE, true);
		}
		why[0] = '\0';
		got = work_copyup_check(&s, &at, &upper, &work, 0, ST_ANY,
					copyup_cases[i].killed, why,
					sizeof(why), &seen, &left);
		if (copyup_cases[i].state) {
			if (!got || strcmp(got, copyup_cases[i].state))
				TEST__FAIL("%s: got %s (%s), want %s",
					   copyup_cases[i].what,
					   got ? got : "bad", why,
					   copyup_cases[i].state);
			ASSERT_STR_EQ(seen, copyup_cases[i].state);
		} else {
			if (got)
				TEST__FAIL("%s: passed as %s",
					   copyup_cases[i].what, got);
			ASSERT_NULL(seen);
			ASSERT_CONTAINS(why, copyup_cases[i].why);
		}
		ASSERT_EQ(left, copyup_cases[i].work_left);
		/* And a state that is not the one wanted is told apart. */
		if (copyup_cases[i].state) {
			bool is_new = !strcmp(copyup_cases[i].state, "new");

			got = work_copyup_check(&s, &at, &upper, &work, 0,
						is_new ? ST_OLD : ST_NEW,
						copyup_cases[i].killed, why,
						sizeof(why), &seen, &left);
			ASSERT_NULL(got);
			ASSERT_STR_EQ(seen, copyup_cases[i].state);
			ASSERT_CONTAINS(why, "the upper directory is");
		}
		close(at.fd);
		close(upper.fd);
		close(work.fd);
		ASSERT_EQ(rm_tree(dir), 0);
		ASSERT_EQ(rm_tree(out), 0);
	}
	return 0;
}
