/*
 * Tests of the scenario parser (tests/scenarios/runner/parse.c): every
 * ```scn block of tests/scenarios/README.md and every scenario file kept
 * in tests/scenarios/ parses, and its canonical form parses back to the
 * same canonical form; each kind of mistake is refused with FILE:LINE:COL,
 * the line and a caret under the mistake; the defaults are the README's.
 */
#include "test.h"

#include "scenario.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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

/* The scenario files kept in the tree (not the generated matrix). */
TEST_IMPL(scenario_files_parse)
{
	static struct scenario s;
	DIR *d = opendir(SCN_DIR);
	struct dirent *e;
	unsigned n = 0;

	ASSERT_NOT_NULL(d);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char path[1024];

		if (len < 5 || strcmp(e->d_name + len - 4, ".scn") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", SCN_DIR, e->d_name);
		if (scn_parse_file(path, &s, stderr) < 0)
			TEST__FAIL("%s does not parse", path);
		n++;
	}
	closedir(d);
	fprintf(stderr, "%u scenario files parse\n", n);
	/* An empty or misnamed directory would pass without this. */
	ASSERT_GE(n, 9);
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
