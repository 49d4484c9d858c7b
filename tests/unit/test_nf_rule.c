/*
 * Tests of netfault's rule language (netfault/rule.c): every example of
 * netfault/RULES.md parses and its canonical form parses back to an equal
 * rule; every kind of mistake is refused with its message and the column
 * of the mistake; and the decision, table by table: the target (dir, prog,
 * proc, xid), nth and count, a seeded probability, the time window, at= and
 * for=, after=N:PROC:DIR, and flip=ON/OFF at and around its edges, in
 * nanoseconds.
 */
#include "test.h"

#include "netfault_i.h"
#include "nfs3.h"

#define MS 1000000ull
#define SEC (1000ull * MS)

static struct nf_rule *parse_ok(const char *text)
{
	struct nf_rule *r = NULL;
	char err[512];
	int rc = nf_rule_parse(text, &r, err, sizeof(err));

	if (rc != 0)
		TEST__FAIL("'%s' did not parse (%d): %s", text, rc, err);
	ASSERT_NOT_NULL(r);
	return r;
}

/* text parses; its canonical form is canon (NULL: text itself) and parses
 * back to an equal rule with the same canonical form. */
static void check_round_trip(const char *text, const char *canon)
{
	struct nf_rule *a = parse_ok(text), *b;
	char fa[NF_RULE_TEXT_MAX], fb[NF_RULE_TEXT_MAX];

	nf_rule_format(a, fa, sizeof(fa));
	if (canon)
		ASSERT_STR_EQ(fa, canon);
	b = parse_ok(fa);
	nf_rule_format(b, fb, sizeof(fb));
	ASSERT_STR_EQ(fb, fa);
	if (!nf_rule_equal(a, b))
		TEST__FAIL("'%s' and its canonical '%s' differ", text, fa);
	nf_rule_free(a);
	nf_rule_free(b);
}

static const struct {
	const char *text;
	const char *canon; /* NULL: the text is canonical */
} examples[] = {
	{ "delay 200", NULL },
	{ "delay 200 50 seed=7", NULL },
	{ "delay 200 0", "delay 200" },
	{ "drop", NULL },
	{ "duplicate dir=reply", NULL },
	{ "reorder 2 dir=reply", NULL },
	{ "reset", NULL },
	{ "reset after=0", "reset" },
	{ "reset   after=100\tdir=call proc=write",
	  "reset after=100 dir=call proc=WRITE" },
	{ "slice 1", NULL },
	{ "corrupt", NULL },
	{ "corrupt body bytes=1", "corrupt" },
	{ "corrupt header bytes=4 dir=reply", NULL },
	{ "stall dir=reply", NULL },
	{ "throttle 64", NULL },
	{ "blackhole", NULL },
	{ "refuse at=2s for=5s", NULL },
	{ "close-after 4096 dir=call", NULL },
	{ "close-after 0", NULL },
	{ "short-read 4096", "short-read 4096 dir=reply proc=READ" },
	{ "short-read 0 prog=nfs proc=read dir=reply nth=2",
	  "short-read 0 dir=reply proc=READ nth=2" },
	{ "drop dir=reply proc=WRITE", NULL },
	{ "drop proc=MNT prog=MOUNT", "drop proc=MNT" },
	{ "drop prog=MOUNT proc=NULL", NULL },
	{ "drop prog=nfs proc=null", "drop proc=NULL" },
	{ "drop prog=100003 proc=21", "drop proc=COMMIT" },
	{ "drop prog=200000 proc=2", NULL },
	{ "drop prog=MOUNT", NULL },
	{ "drop xid=0x1234abcd", NULL },
	{ "drop xid=255", "drop xid=0x000000ff" },
	{ "drop nth=1 proc=REMOVE dir=reply",
	  "drop dir=reply proc=REMOVE nth=1" },
	{ "drop nth=3 count=1", "drop nth=3" },
	{ "drop nth=3 count=all", NULL },
	{ "drop count=all", "drop" },
	{ "drop count=5", NULL },
	{ "drop prob=0.25 seed=42", NULL },
	{ "drop prob=0.250000000", "drop prob=0.25" },
	{ "drop prob=0.000000001", NULL },
	{ "drop prob=1", "drop" },
	{ "drop prob=1.0 seed=9", "drop" },
	{ "drop seed=0x10 prob=0.5", "drop prob=0.5 seed=16" },
	{ "drop at=0ms", "drop at=0s" },
	{ "drop at=60s", "drop at=1m" },
	{ "drop at=1500ms for=120000ms", "drop at=1500ms for=2m" },
	{ "drop until=7s from=2s", "drop from=2s until=7s" },
	{ "drop after=3:WRITE:reply", NULL },
	{ "drop after=1:commit", "drop after=1:COMMIT:call" },
	{ "drop after=1:NLM.LOCK:call", NULL },
	{ "drop after=1:MOUNT.NULL:call", NULL },
	{ "drop prog=portmap", "drop prog=RPCBIND" },
	{ "blackhole flip=1s/2s", NULL },
	{ "throttle 16 flip=500ms/1500ms at=1m",
	  "throttle 16 at=1m flip=500ms/1500ms" },
	{ "drop for=2s flip=1000ms/60000ms", "drop for=2s flip=1s/1m" },
};

TEST_IMPL(nf_rule_canonical)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(examples); i++)
		check_round_trip(examples[i].text, examples[i].canon);
	return 0;
}

/* Every line of RULES.md's ```rules blocks parses and round-trips. */
TEST_IMPL(nf_rule_rules_md)
{
	FILE *f = fopen(NF_RULES_MD, "r");
	char line[NF_RULE_TEXT_MAX];
	bool in = false;
	unsigned n = 0;

	ASSERT_NOT_NULL(f);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "```", 3) == 0) {
			in = strcmp(line, "```rules") == 0;
			continue;
		}
		if (!in || !line[0])
			continue;
		check_round_trip(line, NULL);
		n++;
	}
	fclose(f);
	ASSERT_GE(n, 30);
	return 0;
}

static const struct {
	const char *text;
	const char *first_line; /* the message's first line */
	size_t col;
} errors[] = {
	{ "", "rule '': missing fault at column 1", 1 },
	{ "   ", "rule '   ': missing fault at column 4", 4 },
	{ "dorp", "rule 'dorp': unknown fault 'dorp' at column 1", 1 },
	{ "Drop", "rule 'Drop': unknown fault 'Drop' at column 1", 1 },
	{ "drop proc=WRTE",
	  "rule 'drop proc=WRTE': unknown procedure 'WRTE' at column 11", 11 },
	{ "drop foo=1", "rule 'drop foo=1': unknown key 'foo' at column 6", 6 },
	{ "drop =1", "rule 'drop =1': unknown key '' at column 6", 6 },
	{ "delay", "rule 'delay': missing argument MS for 'delay' at column 6",
	  6 },
	{ "delay dir=call",
	  "rule 'delay dir=call': missing argument MS for 'delay' at column 7",
	  7 },
	{ "throttle\t",
	  "rule 'throttle\t': missing argument KIBPS for "
	  "'throttle' at column 10",
	  10 },
	{ "delay 10x", "rule 'delay 10x': bad number '10x' for MS at column 7",
	  7 },
	{ "delay 10 5 3",
	  "rule 'delay 10 5 3': unexpected argument '3' at column 12", 12 },
	{ "stall 5", "rule 'stall 5': unexpected argument '5' at column 7", 7 },
	{ "delay 10 dir=call 5",
	  "rule 'delay 10 dir=call 5': argument '5' after the keys at column "
	  "19",
	  19 },
	{ "reorder 0", "rule 'reorder 0': N must be at least 1 at column 9",
	  9 },
	{ "slice 99999999999999999999999",
	  "rule 'slice 99999999999999999999999': bad number "
	  "'99999999999999999999999' for BYTES at column 7",
	  7 },
	{ "corrupt middle",
	  "rule 'corrupt middle': corrupt takes header or body, not 'middle' "
	  "at column 9",
	  9 },
	{ "short-read",
	  "rule 'short-read': missing argument BYTES for "
	  "'short-read' at column 11",
	  11 },
	{ "short-read 1 dir=call",
	  "rule 'short-read 1 dir=call': short-read cuts replies: dir=reply "
	  "or no dir= at column 14",
	  14 },
	{ "short-read 1 proc=WRITE",
	  "rule 'short-read 1 proc=WRITE': short-read cuts NFS READ replies: "
	  "proc=READ or no proc= at column 14",
	  14 },
	{ "short-read 1 prog=MOUNT",
	  "rule 'short-read 1 prog=MOUNT': short-read cuts NFS READ replies: "
	  "proc=READ or no proc= at column 14",
	  14 },
	{ "short-read 4294967296",
	  "rule 'short-read 4294967296': BYTES must be at most 4294967295 at "
	  "column 12",
	  12 },
	{ "corrupt bytes=0",
	  "rule 'corrupt bytes=0': bytes must be at least 1 at column 15", 15 },
	{ "drop bytes=3",
	  "rule 'drop bytes=3': key 'bytes' is only for corrupt at column 6",
	  6 },
	{ "drop at=5x",
	  "rule 'drop at=5x': bad unit in '5x' for at (ms, s or m) at column "
	  "10",
	  10 },
	{ "drop at=5",
	  "rule 'drop at=5': bad unit in '5' for at (ms, s or m) at column 10",
	  10 },
	{ "drop at=s", "rule 'drop at=s': bad duration 's' for at at column 9",
	  9 },
	{ "drop for=0s", "rule 'drop for=0s': for must not be 0 at column 10",
	  10 },
	{ "drop dir=", "rule 'drop dir=': missing value for 'dir' at column 10",
	  10 },
	{ "drop dir=sideways",
	  "rule 'drop dir=sideways': bad direction 'sideways' (call or reply) "
	  "at column 10",
	  10 },
	{ "drop prog=NFZ",
	  "rule 'drop prog=NFZ': unknown program 'NFZ' at "
	  "column 11",
	  11 },
	{ "drop prog=MOUNT proc=WRITE",
	  "rule 'drop prog=MOUNT proc=WRITE': procedure 'WRITE' is not in "
	  "program MOUNT at column 22",
	  22 },
	{ "drop proc=7",
	  "rule 'drop proc=7': a procedure number needs prog= at column 6", 6 },
	{ "drop xid=0xzz",
	  "rule 'drop xid=0xzz': bad number '0xzz' for xid at column 10", 10 },
	{ "drop xid=0x100000000",
	  "rule 'drop xid=0x100000000': bad number '0x100000000' for xid at "
	  "column 10",
	  10 },
	{ "reorder 100000000",
	  "rule 'reorder 100000000': N must be at most 1024 at column 9", 9 },
	{ "reorder 4294967296",
	  "rule 'reorder 4294967296': N must be at most 1024 at column 9", 9 },
	{ "delay 86400001",
	  "rule 'delay 86400001': MS must be at most 86400000 at column 7", 7 },
	{ "delay 5 86400001",
	  "rule 'delay 5 86400001': JITTER_MS must be at most 86400000 at "
	  "column 9",
	  9 },
	{ "drop nth=0",
	  "rule 'drop nth=0': nth must be at least 1 at column 10", 10 },
	{ "drop nth=1 nth=2",
	  "rule 'drop nth=1 nth=2': key 'nth' given twice at column 12", 12 },
	{ "drop count=0",
	  "rule 'drop count=0': count must be at least 1 at column 12", 12 },
	{ "drop prob=1.5",
	  "rule 'drop prob=1.5': bad probability '1.5' (0 < P <= 1) at column "
	  "11",
	  11 },
	{ "drop prob=0",
	  "rule 'drop prob=0': bad probability '0' (0 < P <= 1) "
	  "at column 11",
	  11 },
	{ "drop prob=0.0000000001",
	  "rule 'drop prob=0.0000000001': bad probability '0.0000000001' (0 < "
	  "P <= 1) at column 11",
	  11 },
	{ "drop seed=3",
	  "rule 'drop seed=3': seed= without prob= or a delay's jitter at "
	  "column 6",
	  6 },
	{ "drop from=7s until=2s",
	  "rule 'drop from=7s until=2s': until= is not after from= at column "
	  "14",
	  14 },
	{ "drop at=1s after=3:WRITE:reply",
	  "rule 'drop at=1s after=3:WRITE:reply': at= and after= both say "
	  "when the rule starts at column 12",
	  12 },
	{ "drop after=3:WRITE:sideways",
	  "rule 'drop after=3:WRITE:sideways': bad direction 'sideways' (call "
	  "or reply) at column 20",
	  20 },
	{ "drop after=3:WRTE",
	  "rule 'drop after=3:WRTE': unknown procedure 'WRTE' at column 14",
	  14 },
	{ "drop after=0:WRITE",
	  "rule 'drop after=0:WRITE': after=N must be at least 1 at column 12",
	  12 },
	{ "drop after=3:",
	  "rule 'drop after=3:': missing procedure in after= at column 14",
	  14 },
	{ "drop after=100",
	  "rule 'drop after=100': after=BYTES is only for reset; a schedule is "
	  "after=N:PROC[:DIR] at column 12",
	  12 },
	{ "drop flip=1s",
	  "rule 'drop flip=1s': flip= takes ON/OFF durations, not '1s' at "
	  "column 11",
	  11 },
	{ "drop flip=1s/0s",
	  "rule 'drop flip=1s/0s': flip's OFF must not be 0 at column 14", 14 },
	{ "stall proc=WRITE",
	  "rule 'stall proc=WRITE': key 'proc' does not apply to stream fault "
	  "'stall' at column 7",
	  7 },
	{ "refuse dir=call",
	  "rule 'refuse dir=call': key 'dir' does not apply to stream fault "
	  "'refuse' at column 8",
	  8 },
};

TEST_IMPL(nf_rule_errors)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(errors); i++) {
		struct nf_rule *r = (struct nf_rule *)&r;
		char err[512], want[512];
		const char *nl;
		int rc = nf_rule_parse(errors[i].text, &r, err, sizeof(err));

		if (rc != -EINVAL)
			TEST__FAIL("'%s' parsed (%d)", errors[i].text, rc);
		ASSERT_NULL(r);
		nl = strchr(err, '\n');
		ASSERT_NOT_NULL(nl);
		snprintf(want, sizeof(want), "%.*s", (int)(nl - err), err);
		ASSERT_STR_EQ(want, errors[i].first_line);
		/* Then the rule, then the caret under the column. */
		snprintf(want, sizeof(want), "\n  %s\n  ", errors[i].text);
		ASSERT_MEM_EQ(nl, want, strlen(want));
		nl += strlen(want);
		ASSERT_EQ(strlen(nl), errors[i].col);
		ASSERT_EQ(nl[errors[i].col - 1], '^');
		ASSERT_EQ(strspn(nl, " \t"), errors[i].col - 1);
	}
	return 0;
}

/* A short buffer gets as much of the message as fits, terminated. */
TEST_IMPL(nf_rule_error_truncated)
{
	struct nf_rule *r;
	char err[12];

	ASSERT_EQ(nf_rule_parse("drop proc=WRTE", &r, err, sizeof(err)),
		  -EINVAL);
	ASSERT_STR_EQ(err, "rule 'drop ");
	ASSERT_EQ(nf_rule_parse("drop proc=WRTE", &r, NULL, 0), -EINVAL);
	return 0;
}

TEST_IMPL(nf_rule_accessors)
{
	static const struct {
		const char *text;
		enum nf_fault fault;
		uint64_t arg0, arg1;
		bool header, stream;
	} cases[] = {
		{ "delay 200 50 seed=1", NF_DELAY, 200, 50, false, false },
		{ "stall", NF_STALL, 0, 0, false, true },
		{ "throttle 64", NF_THROTTLE, 64, 0, false, true },
		{ "drop", NF_DROP, 0, 0, false, false },
		{ "duplicate", NF_DUPLICATE, 0, 0, false, false },
		{ "reorder 3", NF_REORDER, 3, 0, false, false },
		{ "reset after=100", NF_RESET, 100, 0, false, false },
		{ "slice 7", NF_SLICE, 7, 0, false, false },
		{ "corrupt", NF_CORRUPT, 1, 0, false, false },
		{ "corrupt header bytes=4", NF_CORRUPT, 4, 0, true, false },
		{ "blackhole", NF_BLACKHOLE, 0, 0, false, true },
		{ "refuse", NF_REFUSE, 0, 0, false, true },
		{ "close-after 4096", NF_CLOSE_AFTER, 4096, 0, false, true },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct nf_rule *r = parse_ok(cases[i].text);

		ASSERT_EQ(nf_rule_fault(r), cases[i].fault);
		ASSERT_UINT64_EQ(nf_rule_arg(r, 0), cases[i].arg0);
		ASSERT_UINT64_EQ(nf_rule_arg(r, 1), cases[i].arg1);
		ASSERT_UINT64_EQ(nf_rule_arg(r, 2), 0);
		ASSERT_EQ(nf_rule_header(r), cases[i].header);
		ASSERT_EQ(nf_rule_stream(r), cases[i].stream);
		ASSERT(nf_rule_on_dir(r, NF_CALL));
		ASSERT(nf_rule_on_dir(r, NF_REPLY));
		nf_rule_free(r);
	}
	return 0;
}

static struct nf_msg msg(enum nf_dir dir, uint32_t prog, uint32_t proc,
			 uint32_t xid)
{
	struct nf_msg m;

	memset(&m, 0, sizeof(m));
	m.dir = dir;
	m.rpc = true;
	m.matched = true;
	m.xid = xid;
	m.prog = prog;
	m.vers = 3;
	m.proc = proc;
	m.len = 100;
	return m;
}

TEST_IMPL(nf_rule_match_target)
{
	struct nf_msg wcall = msg(NF_CALL, NFS_PROGRAM, NFSPROC3_WRITE, 0x10);
	struct nf_msg wreply = msg(NF_REPLY, NFS_PROGRAM, NFSPROC3_WRITE, 0x10);
	struct nf_msg rreply = msg(NF_REPLY, NFS_PROGRAM, NFSPROC3_READ, 0x11);
	struct nf_msg mnt;
	struct nf_msg stray = wreply; /* a reply whose call was not seen */
	struct nf_msg junk; /* not RPC */
	const struct {
		const char *text;
		const struct nf_msg *m;
		bool hit;
	} cases[] = {
		{ "drop", &wcall, true },
		{ "drop", &junk, true },
		{ "drop dir=call", &wcall, true },
		{ "drop dir=call", &wreply, false },
		{ "drop dir=reply", &wreply, true },
		{ "drop dir=reply", &junk, true },
		{ "drop dir=call", &junk, false },
		{ "drop prog=NFS", &rreply, true },
		{ "drop prog=NFS", &mnt, false },
		{ "drop prog=MOUNT", &mnt, true },
		{ "drop prog=NFS", &junk, false },
		{ "drop proc=WRITE", &wcall, true },
		{ "drop proc=WRITE", &wreply, true },
		{ "drop proc=WRITE", &rreply, false },
		{ "drop proc=WRITE", &stray, false },
		{ "drop dir=reply", &stray, true },
		{ "drop proc=WRITE dir=reply", &wcall, false },
		{ "drop proc=WRITE dir=reply", &wreply, true },
		{ "drop proc=MNT", &mnt, true },
		{ "drop prog=MOUNT proc=1", &mnt, true },
		{ "drop prog=NFS proc=1", &mnt, false },
		{ "drop xid=0x10", &wcall, true },
		{ "drop xid=0x10", &wreply, true },
		{ "drop xid=0x10", &rreply, false },
		{ "drop xid=17", &rreply, true },
		{ "drop xid=0", &junk, false },
	};
	size_t i;

	uint32_t prog, proc;

	ASSERT_EQ(nf_proc_lookup("MNT", &prog, &proc), 0);
	mnt = msg(NF_CALL, prog, proc, 0x12);
	memset(&junk, 0, sizeof(junk));
	junk.dir = NF_REPLY;
	stray.matched = false;
	stray.prog = stray.proc = 0;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct nf_rule *r = parse_ok(cases[i].text);

		if (nf_rule_match(r, cases[i].m, 0) != cases[i].hit)
			TEST__FAIL("'%s' on case %zu: want %d", cases[i].text,
				   i, cases[i].hit);
		ASSERT_UINT64_EQ(nf_rule_hits(r), cases[i].hit);
		ASSERT_UINT64_EQ(nf_rule_matched(r), cases[i].hit);
		nf_rule_free(r);
	}
	return 0;
}

/* Feeds n WRITE calls (and a READ call between each, never a target);
 * returns the bit mask of the WRITEs (from 1) that got the fault. */
static uint64_t run_writes(const char *text, unsigned n)
{
	struct nf_rule *r = parse_ok(text);
	struct nf_msg w = msg(NF_CALL, NFS_PROGRAM, NFSPROC3_WRITE, 1);
	struct nf_msg rd = msg(NF_CALL, NFS_PROGRAM, NFSPROC3_READ, 2);
	uint64_t hits = 0;
	unsigned i;

	for (i = 1; i <= n; i++) {
		if (nf_rule_match(r, &w, i))
			hits |= 1ull << i;
		ASSERT(!nf_rule_match(r, &rd, i));
	}
	ASSERT_UINT64_EQ(nf_rule_matched(r), n);
	ASSERT_UINT64_EQ(nf_rule_hits(r), __builtin_popcountll(hits));
	nf_rule_free(r);
	return hits;
}

#define B(i) (1ull << (i))

TEST_IMPL(nf_rule_match_nth_count)
{
	static const struct {
		const char *text;
		uint64_t hits;
	} cases[] = {
		{ "drop proc=WRITE", B(1) | B(2) | B(3) | B(4) | B(5) | B(6) },
		{ "drop proc=WRITE nth=1", B(1) },
		{ "drop proc=WRITE nth=3", B(3) },
		{ "drop proc=WRITE nth=3 count=2", B(3) | B(4) },
		{ "drop proc=WRITE nth=4 count=all", B(4) | B(5) | B(6) },
		{ "drop proc=WRITE count=2", B(1) | B(2) },
		{ "drop proc=WRITE nth=7", 0 },
		{ "drop proc=WRITE nth=6 count=9", B(6) },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++)
		ASSERT_UINT64_EQ(run_writes(cases[i].text, 6), cases[i].hits);
	return 0;
}

static unsigned prob_hits(const char *text, unsigned n, uint8_t *seen)
{
	struct nf_rule *r = parse_ok(text);
	struct nf_msg w = msg(NF_REPLY, NFS_PROGRAM, NFSPROC3_WRITE, 1);
	unsigned i, hits = 0;

	for (i = 0; i < n; i++) {
		seen[i] = nf_rule_match(r, &w, i);
		hits += seen[i];
	}
	ASSERT_UINT64_EQ(nf_rule_hits(r), hits);
	ASSERT_UINT64_EQ(nf_rule_matched(r), n);
	nf_rule_free(r);
	return hits;
}

TEST_IMPL(nf_rule_prob_seed)
{
	enum { N = 10000 };
	static uint8_t a[N], b[N], c[N];
	unsigned ha, hb, hc;

	/* The same seed: the same decisions, record by record. */
	ha = prob_hits("drop prob=0.25 seed=42", N, a);
	hb = prob_hits("drop prob=0.25 seed=42", N, b);
	ASSERT_EQ(ha, hb);
	ASSERT_MEM_EQ(a, b, N);
	/* About a quarter (the binomial's sd is about 43). */
	ASSERT_GE(ha, 2300);
	ASSERT_LE(ha, 2700);
	/* Another seed: other decisions, the same rate. */
	hc = prob_hits("drop prob=0.25 seed=43", N, c);
	ASSERT(memcmp(a, c, N) != 0);
	ASSERT_GE(hc, 2300);
	ASSERT_LE(hc, 2700);
	ha = prob_hits("drop prob=0.01", N, a);
	ASSERT_GE(ha, 50);
	ASSERT_LE(ha, 150);
	ASSERT_EQ(prob_hits("drop prob=1", N, a), N);
	/* count caps the faults applied, not the draws. */
	ASSERT_EQ(prob_hits("drop prob=0.5 seed=1 count=7", N, a), 7);
	return 0;
}

/* Whether a record at each time gets the fault. */
struct at_case {
	uint64_t now;
	bool hit;
};

static void check_times(const char *text, const struct at_case *c, size_t n)
{
	struct nf_rule *r = parse_ok(text);
	struct nf_msg m = msg(NF_CALL, NFS_PROGRAM, NFSPROC3_READ, 1);
	size_t i;

	for (i = 0; i < n; i++) {
		if (nf_rule_match(r, &m, c[i].now) != c[i].hit)
			TEST__FAIL("'%s' at %" PRIu64 " ns: want %d", text,
				   c[i].now, c[i].hit);
		ASSERT_EQ(nf_rule_active(r, c[i].now), c[i].hit);
	}
	nf_rule_free(r);
}

TEST_IMPL(nf_rule_window)
{
	static const struct at_case window[] = {
		{ 0, false },	     { 2 * SEC - 1, false }, { 2 * SEC, true },
		{ 5 * SEC, true },   { 7 * SEC - 1, true },  { 7 * SEC, false },
		{ 60 * SEC, false },
	};
	static const struct at_case from[] = {
		{ 0, false },
		{ 1500 * MS - 1, false },
		{ 1500 * MS, true },
		{ 3600 * SEC, true },
	};
	static const struct at_case until[] = {
		{ 0, true },
		{ 60 * SEC - 1, true },
		{ 60 * SEC, false },
	};

	check_times("drop from=2s until=7s", window, ARRAY_SIZE(window));
	check_times("drop from=1500ms", from, ARRAY_SIZE(from));
	check_times("drop until=1m", until, ARRAY_SIZE(until));
	return 0;
}

TEST_IMPL(nf_rule_at_for)
{
	static const struct at_case at_for[] = {
		{ 0, false },	    { 2 * SEC - 1, false },
		{ 2 * SEC, true },  { 7 * SEC - 1, true },
		{ 7 * SEC, false }, { 8 * SEC, false },
	};
	static const struct at_case at_only[] = {
		{ 0, false },
		{ 2 * SEC - 1, false },
		{ 2 * SEC, true },
		{ 1000 * SEC, true },
	};
	static const struct at_case for_only[] = {
		{ 0, true },
		{ 5 * SEC - 1, true },
		{ 5 * SEC, false },
	};

	check_times("drop at=2s for=5s", at_for, ARRAY_SIZE(at_for));
	check_times("drop at=2s", at_only, ARRAY_SIZE(at_only));
	check_times("drop for=5s", for_only, ARRAY_SIZE(for_only));
	return 0;
}

TEST_IMPL(nf_rule_flip)
{
	/* On [0, 1s), off [1s, 3s), on [3s, 4s), off [4s, 6s)... */
	static const struct at_case flip[] = {
		{ 0, true },	     { SEC - 1, true },
		{ SEC, false },	     { 3 * SEC - 1, false },
		{ 3 * SEC, true },   { 4 * SEC - 1, true },
		{ 4 * SEC, false },  { 30 * SEC, true },
		{ 31 * SEC, false },
	};
	/* From at=10s, for 7 s: on [10, 11), [13, 14), [16, 17), then off:
	 * for= cuts the span whatever flip= says. */
	static const struct at_case at_flip[] = {
		{ 0, false },
		{ 1 * SEC, false },
		{ 10 * SEC - 1, false },
		{ 10 * SEC, true },
		{ 11 * SEC - 1, true },
		{ 11 * SEC, false },
		{ 13 * SEC, true },
		{ 16 * SEC, true },
		{ 17 * SEC - 1, true },
		{ 17 * SEC, false },
		{ 19 * SEC, false },
	};
	static const struct at_case at_flip_long[] = {
		{ 16 * SEC + 500 * MS - 1, true },
		{ 16 * SEC + 500 * MS, false },
		{ 17 * SEC, false },
	};

	check_times("drop flip=1s/2s", flip, ARRAY_SIZE(flip));
	check_times("drop at=10s for=7s flip=1s/2s", at_flip,
		    ARRAY_SIZE(at_flip));
	check_times("drop at=10s for=6500ms flip=1s/2s", at_flip_long,
		    ARRAY_SIZE(at_flip_long));
	return 0;
}

/*
 * after=3:WRITE:reply: WRITE replies are counted while the rule is off
 * and whatever its target; the rule is on after the third (that one
 * excluded), for= and flip= measured from it.
 */
TEST_IMPL(nf_rule_after_event)
{
	struct nf_rule *r =
		parse_ok("drop dir=call proc=COMMIT after=3:WRITE:reply "
			 "for=2s flip=500ms/500ms");
	struct nf_msg wcall = msg(NF_CALL, NFS_PROGRAM, NFSPROC3_WRITE, 1);
	struct nf_msg wreply = msg(NF_REPLY, NFS_PROGRAM, NFSPROC3_WRITE, 1);
	struct nf_msg commit = msg(NF_CALL, NFS_PROGRAM, NFSPROC3_COMMIT, 2);
	struct nf_msg stray = wreply;
	uint64_t t0 = 10 * SEC;

	stray.matched = false;
	ASSERT(!nf_rule_match(r, &commit, 0));
	ASSERT(!nf_rule_match(r, &wreply, 1 * SEC));
	ASSERT(!nf_rule_match(r, &wcall, 2 * SEC)); /* a call: not counted */
	ASSERT(!nf_rule_match(r, &stray, 2 * SEC)); /* call not seen */
	ASSERT(!nf_rule_match(r, &wreply, 3 * SEC));
	ASSERT(!nf_rule_match(r, &commit, 4 * SEC));
	ASSERT(!nf_rule_active(r, 4 * SEC));
	/* The third WRITE reply starts the span but is not in it. */
	ASSERT(!nf_rule_match(r, &wreply, t0));
	ASSERT(nf_rule_active(r, t0));
	ASSERT(nf_rule_match(r, &commit, t0));
	ASSERT(!nf_rule_match(r, &wreply, t0 + 1)); /* not its target */
	ASSERT(nf_rule_match(r, &commit, t0 + 500 * MS - 1));
	ASSERT(!nf_rule_match(r, &commit, t0 + 500 * MS));
	ASSERT(!nf_rule_match(r, &commit, t0 + SEC - 1));
	ASSERT(nf_rule_match(r, &commit, t0 + SEC));
	ASSERT(nf_rule_match(r, &commit, t0 + 1500 * MS - 1));
	ASSERT(!nf_rule_match(r, &commit, t0 + 2 * SEC));
	/* Later WRITE replies do not start it again. */
	ASSERT(!nf_rule_match(r, &wreply, t0 + 3 * SEC));
	ASSERT(!nf_rule_match(r, &commit, t0 + 3 * SEC));
	ASSERT_UINT64_EQ(nf_rule_hits(r), 4);
	nf_rule_free(r);

	/* The record that completes the event is not yet after it. */
	r = parse_ok("drop proc=WRITE dir=reply after=2:WRITE:reply");
	ASSERT(!nf_rule_match(r, &wreply, 1));
	ASSERT(!nf_rule_match(r, &wreply, 2));
	ASSERT(nf_rule_match(r, &wreply, 3));
	ASSERT(nf_rule_match(r, &wreply, 4));
	nf_rule_free(r);

	/* A stream fault counts its events through nf_rule_observe(). */
	r = parse_ok("stall dir=reply after=1:CREATE:reply");
	ASSERT(!nf_rule_active(r, 0));
	ASSERT(!nf_rule_on_dir(r, NF_CALL));
	ASSERT(nf_rule_on_dir(r, NF_REPLY));
	wreply.proc = NFSPROC3_CREATE;
	nf_rule_observe(r, &wreply, 5 * SEC);
	ASSERT(!nf_rule_active(r, 5 * SEC - 1));
	ASSERT(nf_rule_active(r, 5 * SEC));
	ASSERT(!nf_rule_match(r, &wreply, 6 * SEC));
	nf_rule_free(r);

	/* nth counts only the records seen once the span started. */
	r = parse_ok("drop proc=WRITE after=1:CREATE nth=2");
	wcall.proc = NFSPROC3_WRITE;
	commit.proc = NFSPROC3_CREATE;
	ASSERT(!nf_rule_match(r, &wcall, 1));
	ASSERT(!nf_rule_match(r, &wcall, 2));
	ASSERT(!nf_rule_match(r, &commit, 3));
	ASSERT(!nf_rule_match(r, &wcall, 4));
	ASSERT(nf_rule_match(r, &wcall, 5));
	ASSERT(!nf_rule_match(r, &wcall, 6));
	nf_rule_free(r);
	return 0;
}

TEST_IMPL(nf_rule_delay_jitter)
{
	struct nf_rule *a = parse_ok("delay 100 20 seed=5");
	struct nf_rule *b = parse_ok("delay 100 20 seed=5");
	struct nf_rule *c = parse_ok("delay 10 30");
	struct nf_rule *d = parse_ok("delay 100");
	bool low = false, high = false;
	unsigned i;

	for (i = 0; i < 1000; i++) {
		uint64_t x = nf_rule_delay_ms(a);

		ASSERT_UINT64_EQ(nf_rule_delay_ms(b), x);
		ASSERT_UINT64_GE(x, 80);
		ASSERT_UINT64_LE(x, 120);
		low |= x == 80;
		high |= x == 120;
		ASSERT_UINT64_LE(nf_rule_delay_ms(c), 40);
		ASSERT_UINT64_EQ(nf_rule_delay_ms(d), 100);
	}
	ASSERT(low && high);
	nf_rule_free(a);
	nf_rule_free(b);
	nf_rule_free(c);
	nf_rule_free(d);
	return 0;
}

/* short-read aims at NFS READ replies, whatever its rule leaves out. */
TEST_IMPL(nf_rule_short_read_target)
{
	struct nf_msg rcall = msg(NF_CALL, NFS_PROGRAM, NFSPROC3_READ, 0x20);
	struct nf_msg rreply = msg(NF_REPLY, NFS_PROGRAM, NFSPROC3_READ, 0x20);
	struct nf_msg wreply = msg(NF_REPLY, NFS_PROGRAM, NFSPROC3_WRITE, 0x21);
	struct nf_rule *r = parse_ok("short-read 10");

	ASSERT_EQ(nf_rule_fault(r), NF_SHORT_READ);
	ASSERT_UINT64_EQ(nf_rule_arg(r, 0), 10);
	ASSERT(!nf_rule_stream(r));
	ASSERT(!nf_rule_on_dir(r, NF_CALL));
	ASSERT(nf_rule_on_dir(r, NF_REPLY));
	ASSERT(!nf_rule_match(r, &rcall, 0));
	ASSERT(!nf_rule_match(r, &wreply, 0));
	ASSERT(nf_rule_match(r, &rreply, 0));
	nf_rule_free(r);
	return 0;
}
