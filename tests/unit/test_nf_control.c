/*
 * Tests of netfault's rules in force, its event log and its control
 * socket (netfault/ruleset.c, netfault/control.c): ids from 1 never
 * reused, removal of one rule and of all, the order of the walk, the
 * bound on rules; the event ring's bound and its since-query; and the
 * control socket over a real Unix socket in a temporary directory, its
 * answers compared whole: add (applied before the answer), a bad rule's
 * message with its caret, clear, list, stats, events, JSON escaping,
 * requests split and pipelined, a NUL byte in a request, an overlong
 * line, a peer of another uid, the socket's mode, a stale socket replaced
 * and a live one left alone, a socket in a directory that is not there.
 *
 * The test drives the loop itself (uv_run with UV_RUN_NOWAIT) between
 * polls of its client socket, so the control and the client run on one
 * thread and the ruleset can be read as soon as an answer is in.
 */
#include "test.h"

#include "netfault_i.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#define WAIT_MS 5000

struct fixture {
	char dir[32];
	char path[96];
	uv_loop_t loop;
	struct nf_ruleset *rs;
	struct nf_events *ev;
	struct nf_stats st;
	struct nf_control *c;
};

struct client {
	int fd;
	size_t len;
	char buf[1 << 16];
};

static void fx_init(struct fixture *fx)
{
	memset(fx, 0, sizeof(*fx));
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/nfctl-XXXXXX");
	ASSERT_NOT_NULL(mkdtemp(fx->dir));
	snprintf(fx->path, sizeof(fx->path), "%s/ctl.sock", fx->dir);
	ASSERT_EQ(uv_loop_init(&fx->loop), 0);
	fx->rs = nf_ruleset_new();
	ASSERT_NOT_NULL(fx->rs);
	fx->ev = nf_events_new(8);
	ASSERT_NOT_NULL(fx->ev);
}

static void fx_start(struct fixture *fx)
{
	fx_init(fx);
	ASSERT_EQ(nf_control_start(&fx->loop, fx->path, fx->rs, fx->ev, &fx->st,
				   &fx->c, NULL, 0),
		  0);
}

/* Stops the control, checks that every handle closed and the socket file
 * went (the directory is empty then), and frees the rest. */
static void fx_done(struct fixture *fx)
{
	struct stat sb;

	if (fx->c)
		nf_control_stop(fx->c);
	ASSERT_EQ(lstat(fx->path, &sb), -1);
	ASSERT_EQ(uv_run(&fx->loop, UV_RUN_DEFAULT), 0);
	ASSERT_EQ(uv_loop_close(&fx->loop), 0);
	ASSERT_EQ(rmdir(fx->dir), 0);
	nf_ruleset_free(fx->rs);
	nf_events_free(fx->ev);
}

static int connect_path(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ASSERT_GE(fd, 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

static void cl_open(struct fixture *fx, struct client *cl)
{
	cl->fd = connect_path(fx->path);
	ASSERT_GE(cl->fd, 0);
	cl->len = 0;
}

static void cl_send(struct client *cl, const char *bytes, size_t len)
{
	ASSERT_EQ(send(cl->fd, bytes, len, MSG_NOSIGNAL), (ssize_t)len);
}

/*
 * Runs the loop until a whole line came back (returned without its
 * newline, valid until the next call) or the server closed the connection
 * (NULL).  Fails the test after WAIT_MS.
 */
static const char *cl_line(struct fixture *fx, struct client *cl)
{
	static char line[sizeof(cl->buf)];
	uint64_t end = region_now_ns() + WAIT_MS * 1000000ull;
	struct pollfd pfd = { .fd = cl->fd, .events = POLLIN };
	char *nl;
	ssize_t n;

	for (;;) {
		nl = memchr(cl->buf, '\n', cl->len);
		if (nl) {
			size_t l = (size_t)(nl - cl->buf);

			memcpy(line, cl->buf, l);
			line[l] = '\0';
			memmove(cl->buf, nl + 1, cl->len - l - 1);
			cl->len -= l + 1;
			return line;
		}
		if (region_now_ns() > end)
			TEST__FAIL("no answer within %d ms", WAIT_MS);
		uv_run(&fx->loop, UV_RUN_NOWAIT);
		if (poll(&pfd, 1, 1) <= 0)
			continue;
		ASSERT_LT(cl->len, sizeof(cl->buf));
		n = recv(cl->fd, cl->buf + cl->len, sizeof(cl->buf) - cl->len,
			 MSG_DONTWAIT);
		if (n == 0) {
			ASSERT_EQ(cl->len, 0);
			return NULL;
		}
		if (n < 0 && errno == ECONNRESET)
			return NULL;
		ASSERT_GT(n, 0);
		cl->len += (size_t)n;
	}
}

/* Sends one request line and checks the whole answer. */
static void expect(struct fixture *fx, struct client *cl, const char *req,
		   const char *answer)
{
	char line[8192];
	const char *got;

	snprintf(line, sizeof(line), "%s\n", req);
	cl_send(cl, line, strlen(line));
	got = cl_line(fx, cl);
	if (!got)
		TEST__FAIL("'%s': the connection closed without an answer",
			   req);
	if (strcmp(got, answer) != 0)
		TEST__FAIL("'%s' answered\n  %s\nnot\n  %s", req, got, answer);
}

/* ---- ruleset.c ---------------------------------------------------------- */

/* The ids of the walk, as "1 3 4". */
static void walk(const struct nf_ruleset *rs, char *out, size_t len)
{
	const struct nf_rule *r = NULL;
	unsigned id;
	size_t n = 0;

	out[0] = '\0';
	while ((r = nf_ruleset_next(rs, r, &id)))
		n += (size_t)snprintf(out + n, len - n, "%s%u", n ? " " : "",
				      id);
}

TEST_IMPL(nf_ruleset_ids)
{
	static const char *const rules[] = { "delay 10", "drop nth=2",
					     "duplicate dir=reply" };
	struct nf_ruleset *rs = nf_ruleset_new();
	char err[512], ids[64], text[NF_RULE_TEXT_MAX];
	const struct nf_rule *r;
	unsigned id, i;

	ASSERT_NOT_NULL(rs);
	ASSERT_NULL(nf_ruleset_next(rs, NULL, &id));
	for (i = 0; i < ARRAY_SIZE(rules); i++) {
		ASSERT_EQ(nf_ruleset_add(rs, rules[i], &id, err, sizeof(err)),
			  0);
		ASSERT_EQ(id, i + 1);
	}
	ASSERT_EQ(nf_ruleset_count(rs), 3);
	/* The walk is in the order added, each rule with its own text. */
	r = NULL;
	for (i = 0; i < ARRAY_SIZE(rules); i++) {
		r = nf_ruleset_next(rs, r, NULL);
		ASSERT_NOT_NULL(r);
		nf_rule_format(r, text, sizeof(text));
		ASSERT_STR_EQ(text, rules[i]);
	}
	ASSERT_NULL(nf_ruleset_next(rs, r, &id));

	ASSERT_EQ(nf_ruleset_remove(rs, 2), 0);
	ASSERT_EQ(nf_ruleset_remove(rs, 2), -ENOENT);
	ASSERT_EQ(nf_ruleset_remove(rs, 9), -ENOENT);
	walk(rs, ids, sizeof(ids));
	ASSERT_STR_EQ(ids, "1 3");
	/* A removed id is not given again; a refused rule takes none. */
	ASSERT_EQ(nf_ruleset_add(rs, "delay", &id, err, sizeof(err)), -EINVAL);
	ASSERT_CONTAINS(err, "^");
	ASSERT_EQ(nf_ruleset_add(rs, "stall", &id, err, sizeof(err)), 0);
	ASSERT_EQ(id, 4);
	walk(rs, ids, sizeof(ids));
	ASSERT_STR_EQ(ids, "1 3 4");
	ASSERT_EQ(nf_ruleset_remove(rs, 1), 0);
	walk(rs, ids, sizeof(ids));
	ASSERT_STR_EQ(ids, "3 4");

	ASSERT_EQ(nf_ruleset_remove(rs, 0), 0);
	ASSERT_EQ(nf_ruleset_count(rs), 0);
	ASSERT_NULL(nf_ruleset_next(rs, NULL, &id));
	ASSERT_EQ(nf_ruleset_add(rs, "drop", &id, err, sizeof(err)), 0);
	ASSERT_EQ(id, 5);
	nf_ruleset_free(rs);
	return 0;
}

static void count_change(void *arg)
{
	(*(unsigned *)arg)++;
}

/*
 * The change hook (the proxy's: stream faults looked up again at once)
 * runs on every add and remove that changed something, never on a refusal.
 */
TEST_IMPL(nf_ruleset_on_change)
{
	struct nf_ruleset *rs = nf_ruleset_new();
	unsigned changes = 0, id;
	char err[512];

	ASSERT_NOT_NULL(rs);
	nf_ruleset_on_change(rs, count_change, &changes);
	ASSERT_EQ(nf_ruleset_add(rs, "stall dir=reply", &id, err, sizeof(err)),
		  0);
	ASSERT_EQ(changes, 1);
	ASSERT_EQ(nf_ruleset_add(rs, "stall dir=sideways", &id, err,
				 sizeof(err)),
		  -EINVAL);
	ASSERT_EQ(changes, 1);
	ASSERT_EQ(nf_ruleset_remove(rs, 7), -ENOENT);
	ASSERT_EQ(changes, 1);
	ASSERT_EQ(nf_ruleset_remove(rs, id), 0);
	ASSERT_EQ(changes, 2);
	ASSERT_EQ(nf_ruleset_remove(rs, 0), 0);
	ASSERT_EQ(changes, 3);
	nf_ruleset_on_change(rs, NULL, NULL);
	ASSERT_EQ(nf_ruleset_add(rs, "drop", &id, err, sizeof(err)), 0);
	ASSERT_EQ(changes, 3);
	nf_ruleset_free(rs);
	return 0;
}

TEST_IMPL(nf_ruleset_bound)
{
	struct nf_ruleset *rs = nf_ruleset_new();
	char err[512];
	unsigned id, i;

	ASSERT_NOT_NULL(rs);
	for (i = 0; i < NF_RULES_MAX; i++)
		ASSERT_EQ(nf_ruleset_add(rs, "drop", &id, err, sizeof(err)), 0);
	ASSERT_EQ(nf_ruleset_add(rs, "drop", &id, err, sizeof(err)), -ENOSPC);
	ASSERT_CONTAINS(err, "too many rules");
	ASSERT_EQ(nf_ruleset_count(rs), NF_RULES_MAX);
	ASSERT_EQ(nf_ruleset_remove(rs, NF_RULES_MAX), 0);
	ASSERT_EQ(nf_ruleset_add(rs, "drop", &id, err, sizeof(err)), 0);
	ASSERT_EQ(id, NF_RULES_MAX + 1);
	nf_ruleset_free(rs);
	return 0;
}

TEST_IMPL(nf_events_ring)
{
	static const struct {
		uint64_t after;
		size_t max;
		size_t n;
		uint64_t first;
	} cases[] = {
		/* Six pushed into four places: 3..6 are kept. */
		{ 0, 16, 4, 3 }, { 2, 16, 4, 3 }, { 3, 16, 3, 4 },
		{ 5, 16, 1, 6 }, { 6, 16, 0, 0 }, { 99, 16, 0, 0 },
		{ 0, 2, 2, 3 },	 { 4, 1, 1, 5 },
	};
	struct nf_events *ev;
	struct nf_event e, out[16];
	unsigned i;
	size_t n, j;

	errno = 0;
	ASSERT_NULL(nf_events_new(0));
	ASSERT_EQ(errno, EINVAL);
	ev = nf_events_new(4);
	ASSERT_NOT_NULL(ev);
	ASSERT_EQ(nf_events_since(ev, 0, out, 16), 0);
	ASSERT_UINT64_EQ(nf_events_last(ev), 0);
	for (i = 1; i <= 6; i++) {
		memset(&e, 0, sizeof(e));
		e.rule = 100 + i;
		e.at_ns = i * 1000;
		nf_events_push(ev, &e);
		ASSERT_UINT64_EQ(e.seq, i);
	}
	ASSERT_UINT64_EQ(nf_events_last(ev), 6);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		n = nf_events_since(ev, cases[i].after, out, cases[i].max);
		ASSERT_EQ(n, cases[i].n);
		for (j = 0; j < n; j++) {
			ASSERT_UINT64_EQ(out[j].seq, cases[i].first + j);
			ASSERT_EQ(out[j].rule, 100 + out[j].seq);
			ASSERT_UINT64_EQ(out[j].at_ns, out[j].seq * 1000);
		}
	}
	nf_events_free(ev);
	return 0;
}

/* ---- control.c ---------------------------------------------------------- */

TEST_IMPL(nf_control_rules)
{
	struct fixture fx;
	struct client cl;
	struct stat sb;
	char err[512];
	unsigned id;

	fx_start(&fx);
	ASSERT_EQ(lstat(fx.path, &sb), 0);
	ASSERT(S_ISSOCK(sb.st_mode));
	ASSERT_EQ(sb.st_mode & 07777, 0600);
	cl_open(&fx, &cl);

	expect(&fx, &cl, "add delay 200 proc=WRITE", "{\"ok\":true,\"id\":1}");
	/* In force by the time the answer is read. */
	ASSERT_EQ(nf_ruleset_count(fx.rs), 1);
	expect(&fx, &cl, "add delay fast",
	       "{\"ok\":false,\"error\":\"rule 'delay fast': bad number "
	       "'fast' for MS at column 7\\n  delay fast\\n        ^\"}");
	ASSERT_EQ(nf_ruleset_count(fx.rs), 1);
	expect(&fx, &cl, "  add   drop nth=3 dir=call  \r",
	       "{\"ok\":true,\"id\":2}");
	expect(&fx, &cl, "list",
	       "{\"ok\":true,\"rules\":["
	       "{\"id\":1,\"rule\":\"delay 200 proc=WRITE\",\"matched\":0,"
	       "\"hits\":0},"
	       "{\"id\":2,\"rule\":\"drop dir=call nth=3\",\"matched\":0,"
	       "\"hits\":0}]}");
	expect(&fx, &cl, "clear 1", "{\"ok\":true,\"removed\":1}");
	ASSERT_EQ(nf_ruleset_count(fx.rs), 1);
	expect(&fx, &cl, "clear 1",
	       "{\"ok\":false,\"error\":\"clear: no rule 1\"}");
	expect(&fx, &cl, "clear x",
	       "{\"ok\":false,\"error\":\"clear: 'x' is not a rule id\"}");
	/* Rules added beside the socket show, with their counters. */
	ASSERT_EQ(nf_ruleset_add(fx.rs, "stall", &id, err, sizeof(err)), 0);
	ASSERT_EQ(id, 3);
	expect(&fx, &cl, "clear", "{\"ok\":true,\"removed\":2}");
	ASSERT_EQ(nf_ruleset_count(fx.rs), 0);
	expect(&fx, &cl, "list", "{\"ok\":true,\"rules\":[]}");
	expect(&fx, &cl, "list all",
	       "{\"ok\":false,\"error\":\"list takes no argument\"}");
	expect(&fx, &cl, "add",
	       "{\"ok\":false,\"error\":\"add needs a rule\"}");
	expect(&fx, &cl, "frob",
	       "{\"ok\":false,\"error\":\"unknown command 'frob'\"}");
	expect(&fx, &cl, "", "{\"ok\":false,\"error\":\"empty request\"}");
	/* Quotes, backslashes and control characters are escaped. */
	expect(&fx, &cl, "fr\"o\\b\x01\t",
	       "{\"ok\":false,\"error\":\"unknown command "
	       "'fr\\\"o\\\\b\\u0001'\"}");
	/* UTF-8 passes; bytes that are not UTF-8 become U+FFFD. */
	expect(&fx, &cl, "\xc3\xa9\xff\xc3",
	       "{\"ok\":false,\"error\":\"unknown command "
	       "'\xc3\xa9\\ufffd\\ufffd'\"}");
	close(cl.fd);
	fx_done(&fx);
	return 0;
}

TEST_IMPL(nf_control_stats_events)
{
	struct fixture fx;
	struct client cl;
	struct nf_event e;
	char err[512];
	unsigned id;

	fx_start(&fx);
	cl_open(&fx, &cl);
	fx.st = (struct nf_stats){ .conns = 3,
				   .open = 1,
				   .bytes = { 1000, 2000 },
				   .records = { 10, 9 },
				   .unparsed = { 0, 1 },
				   .faults = 3 };
	ASSERT_EQ(nf_ruleset_add(fx.rs, "drop proc=WRITE", &id, err,
				 sizeof(err)),
		  0);
	expect(&fx, &cl, "stats",
	       "{\"ok\":true,\"stats\":{\"conns\":3,\"open\":1,\"faults\":3,"
	       "\"bytes\":{\"call\":1000,\"reply\":2000},"
	       "\"records\":{\"call\":10,\"reply\":9},"
	       "\"unparsed\":{\"call\":0,\"reply\":1}},"
	       "\"rules\":[{\"id\":1,\"rule\":\"drop proc=WRITE\","
	       "\"matched\":0,\"hits\":0}]}");
	expect(&fx, &cl, "events", "{\"ok\":true,\"last\":0,\"events\":[]}");

	/* A call of a known procedure, a matched reply of an unknown one, an
	 * unmatched reply, and a stream fault with no record. */
	memset(&e, 0, sizeof(e));
	e = (struct nf_event){ .at_ns = 1500000000ull,
			       .rule = 1,
			       .fault = NF_DROP,
			       .conn = 2,
			       .msg = { .dir = NF_CALL,
					.rpc = true,
					.xid = 0xab,
					.prog = 100003,
					.vers = 3,
					.proc = 7 } };
	nf_events_push(fx.ev, &e);
	e = (struct nf_event){ .at_ns = 2000000,
			       .rule = 4,
			       .fault = NF_CLOSE_AFTER,
			       .conn = 1,
			       .msg = { .dir = NF_REPLY,
					.rpc = true,
					.matched = true,
					.xid = 0xdeadbeef,
					.prog = 400000,
					.vers = 1,
					.proc = 99 } };
	nf_events_push(fx.ev, &e);
	e = (struct nf_event){
		.rule = 2,
		.fault = NF_CORRUPT,
		.conn = 3,
		.msg = { .dir = NF_REPLY, .rpc = true, .xid = 1 }
	};
	nf_events_push(fx.ev, &e);
	e = (struct nf_event){ .at_ns = 999999,
			       .rule = 3,
			       .fault = NF_STALL,
			       .conn = 4,
			       .msg = { .dir = NF_REPLY } };
	nf_events_push(fx.ev, &e);
	expect(&fx, &cl, "events",
	       "{\"ok\":true,\"last\":4,\"events\":["
	       "{\"seq\":1,\"at_ms\":1500,\"rule\":1,\"fault\":\"drop\","
	       "\"conn\":2,\"dir\":\"call\",\"xid\":\"0x000000ab\","
	       "\"prog\":\"NFS\",\"vers\":3,\"proc\":\"WRITE\"},"
	       "{\"seq\":2,\"at_ms\":2,\"rule\":4,\"fault\":\"close-after\","
	       "\"conn\":1,\"dir\":\"reply\",\"xid\":\"0xdeadbeef\","
	       "\"prog\":400000,\"vers\":1,\"proc\":99},"
	       "{\"seq\":3,\"at_ms\":0,\"rule\":2,\"fault\":\"corrupt\","
	       "\"conn\":3,\"dir\":\"reply\",\"xid\":\"0x00000001\"},"
	       "{\"seq\":4,\"at_ms\":0,\"rule\":3,\"fault\":\"stall\","
	       "\"conn\":4,\"dir\":\"reply\"}]}");
	expect(&fx, &cl, "events 3",
	       "{\"ok\":true,\"last\":4,\"events\":["
	       "{\"seq\":4,\"at_ms\":0,\"rule\":3,\"fault\":\"stall\","
	       "\"conn\":4,\"dir\":\"reply\"}]}");
	expect(&fx, &cl, "events 4", "{\"ok\":true,\"last\":4,\"events\":[]}");
	expect(&fx, &cl, "events -1",
	       "{\"ok\":false,\"error\":\"events: '-1' is not a sequence "
	       "number\"}");
	close(cl.fd);
	fx_done(&fx);
	return 0;
}

/* Requests split over writes, several in one write, several clients. */
TEST_IMPL(nf_control_framing)
{
	struct fixture fx;
	struct client a, b;

	fx_start(&fx);
	cl_open(&fx, &a);
	cl_open(&fx, &b);
	cl_send(&a, "ad", 2);
	cl_send(&b, "list\n", 5);
	ASSERT_STR_EQ(cl_line(&fx, &b), "{\"ok\":true,\"rules\":[]}");
	cl_send(&a, "d dr", 4);
	cl_send(&a, "op\nclear 1\nfrob\n", 16);
	ASSERT_STR_EQ(cl_line(&fx, &a), "{\"ok\":true,\"id\":1}");
	ASSERT_STR_EQ(cl_line(&fx, &a), "{\"ok\":true,\"removed\":1}");
	ASSERT_STR_EQ(cl_line(&fx, &a),
		      "{\"ok\":false,\"error\":\"unknown command 'frob'\"}");
	/* A client that leaves does not disturb the other. */
	close(a.fd);
	expect(&fx, &b, "clear", "{\"ok\":true,\"removed\":0}");
	close(b.fd);
	fx_done(&fx);
	return 0;
}

/*
 * A NUL byte in a request would cut it short unseen, in C strings: `add
 * delay 10\0 proc=READ` would delay every record.  It is refused, with
 * nothing applied, for every command, and the connection goes on.
 */
TEST_IMPL(nf_control_nul)
{
	static const struct {
		const char *req; /* with its NUL, newline excluded */
		size_t len;
		const char *answer;
	} cases[] = {
		{ "add delay 10\0 proc=READ", 24,
		  "{\"ok\":false,\"error\":\"a NUL byte at column 13 of the "
		  "request (after 'add delay 10'): a request is one line of "
		  "text\"}" },
		{ "clear 1\0 2", 11,
		  "{\"ok\":false,\"error\":\"a NUL byte at column 8 of the "
		  "request (after 'clear 1'): a request is one line of "
		  "text\"}" },
		{ "\0add drop", 9,
		  "{\"ok\":false,\"error\":\"a NUL byte at column 1 of the "
		  "request (after ''): a request is one line of text\"}" },
		{ "list\0", 5,
		  "{\"ok\":false,\"error\":\"a NUL byte at column 5 of the "
		  "request (after 'list'): a request is one line of text\"}" },
	};
	struct fixture fx;
	struct client cl;
	char line[64], err[512];
	const char *got;
	unsigned id;

	fx_start(&fx);
	ASSERT_EQ(nf_ruleset_add(fx.rs, "drop nth=9", &id, err, sizeof(err)),
		  0);
	cl_open(&fx, &cl);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		ASSERT_LT(cases[i].len + 1, sizeof(line));
		memcpy(line, cases[i].req, cases[i].len);
		line[cases[i].len] = '\n';
		cl_send(&cl, line, cases[i].len + 1);
		got = cl_line(&fx, &cl);
		ASSERT_NOT_NULL(got);
		ASSERT_STR_EQ(got, cases[i].answer);
		/* Nothing applied: the one rule, unchanged. */
		ASSERT_EQ(nf_ruleset_count(fx.rs), 1);
	}
	expect(&fx, &cl, "list",
	       "{\"ok\":true,\"rules\":[{\"id\":1,\"rule\":\"drop nth=9\","
	       "\"matched\":0,\"hits\":0}]}");
	close(cl.fd);
	fx_done(&fx);
	return 0;
}

TEST_IMPL(nf_control_long_line)
{
	struct fixture fx;
	struct client cl;
	char line[4096 + 2];

	fx_start(&fx);
	cl_open(&fx, &cl);
	/* 4096 bytes is the most a request may have: answered. */
	memset(line, 'x', 4096);
	line[4096] = '\n';
	cl_send(&cl, line, 4097);
	ASSERT_CONTAINS(cl_line(&fx, &cl), "unknown command 'xxxx");
	expect(&fx, &cl, "list", "{\"ok\":true,\"rules\":[]}");
	/* One more, even before its newline: the error, then the close. */
	cl_send(&cl, line, 4096);
	cl_send(&cl, "x", 1);
	ASSERT_STR_EQ(cl_line(&fx, &cl),
		      "{\"ok\":false,\"error\":\"request longer than 4096 "
		      "bytes\"}");
	ASSERT_NULL(cl_line(&fx, &cl));
	close(cl.fd);
	fx_done(&fx);
	return 0;
}

/*
 * In a child running as nobody: connects to path and writes what it
 * learnt to the pipe: "connect: ERRNO" or the first line it was sent.
 */
static void as_nobody(const char *path, int out)
{
	struct timeval tv = { .tv_sec = 5 };
	char buf[512];
	ssize_t n;
	int fd;

	if (setgid(65534) != 0 || setuid(65534) != 0)
		_exit(3);
	fd = connect_path(path);
	if (fd < 0) {
		n = snprintf(buf, sizeof(buf), "connect: %d", -fd);
	} else {
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		send(fd, "list\n", 5, MSG_NOSIGNAL);
		n = recv(fd, buf, sizeof(buf) - 1, MSG_WAITALL);
		if (n < 0)
			n = snprintf(buf, sizeof(buf), "recv: %d", errno);
	}
	if (write(out, buf, (size_t)n) != n)
		_exit(4);
	_exit(0);
}

/* What a child as nobody learnt, the loop run while it tries. */
static void nobody_tries(struct fixture *fx, char *got, size_t len)
{
	uint64_t end = region_now_ns() + WAIT_MS * 1000000ull;
	int p[2], status;
	pid_t pid;
	ssize_t n;

	ASSERT_EQ(pipe(p), 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		close(p[0]);
		as_nobody(fx->path, p[1]);
	}
	close(p[1]);
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (region_now_ns() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			TEST__FAIL("the child as nobody did not finish");
		}
		uv_run(&fx->loop, UV_RUN_NOWAIT);
		poll(NULL, 0, 1);
	}
	ASSERT(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
	n = read(p[0], got, len - 1);
	ASSERT_GE(n, 0);
	got[n] = '\0';
	close(p[0]);
}

TEST_IMPL(nf_control_other_uid)
{
	struct fixture fx;
	struct client cl;
	char got[512], want[128];

	if (geteuid() != 0)
		TEST_SKIP("needs root to run a client as another uid");
	fx_start(&fx);
	ASSERT_EQ(chmod(fx.dir, 0711), 0);
	/* The mode keeps another user out... */
	nobody_tries(&fx, got, sizeof(got));
	snprintf(want, sizeof(want), "connect: %d", EACCES);
	ASSERT_STR_EQ(got, want);
	/* ...and were it loosened, the peer's uid is checked. */
	ASSERT_EQ(chmod(fx.path, 0666), 0);
	nobody_tries(&fx, got, sizeof(got));
	ASSERT_STR_EQ(got, "{\"ok\":false,\"error\":\"uid 65534 may not use "
			   "this socket (only uid 0)\"}\n");
	/* Our own uid is still served. */
	cl_open(&fx, &cl);
	expect(&fx, &cl, "list", "{\"ok\":true,\"rules\":[]}");
	close(cl.fd);
	fx_done(&fx);
	return 0;
}

TEST_IMPL(nf_control_stale_live)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct fixture fx;
	struct nf_control *other = NULL;
	struct client cl;
	char path[200], longp[200];
	int fd;

	fx_init(&fx);
	/* A socket nobody listens on: what a netfault that died leaves. */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ASSERT_GE(fd, 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", fx.path);
	ASSERT_EQ(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(fd);
	ASSERT_EQ(connect_path(fx.path), -ECONNREFUSED);
	ASSERT_EQ(nf_control_start(&fx.loop, fx.path, fx.rs, fx.ev, NULL, &fx.c,
				   NULL, 0),
		  0);
	cl_open(&fx, &cl);
	expect(&fx, &cl, "stats",
	       "{\"ok\":true,\"stats\":{\"conns\":0,\"open\":0,\"faults\":0,"
	       "\"bytes\":{\"call\":0,\"reply\":0},"
	       "\"records\":{\"call\":0,\"reply\":0},"
	       "\"unparsed\":{\"call\":0,\"reply\":0}},\"rules\":[]}");

	/* A live one is left alone, and keeps serving. */
	ASSERT_EQ(nf_control_start(&fx.loop, fx.path, fx.rs, fx.ev, NULL,
				   &other, NULL, 0),
		  -EADDRINUSE);
	ASSERT_NULL(other);
	expect(&fx, &cl, "list", "{\"ok\":true,\"rules\":[]}");

	/* Something else at the path is not ours to remove. */
	snprintf(path, sizeof(path), "%s/file", fx.dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	ASSERT_GE(fd, 0);
	close(fd);
	ASSERT_EQ(nf_control_start(&fx.loop, path, fx.rs, fx.ev, NULL, &other,
				   NULL, 0),
		  -EEXIST);
	ASSERT_EQ(unlink(path), 0);
	memset(longp, 'a', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	ASSERT_EQ(nf_control_start(&fx.loop, longp, fx.rs, fx.ev, NULL, &other,
				   NULL, 0),
		  -ENAMETOOLONG);
	close(cl.fd);
	fx_done(&fx);
	return 0;
}

/*
 * A socket in a directory that is not there, or under a file: the error
 * says so (libuv alone would say EACCES for the first).
 */
TEST_IMPL(nf_control_bad_dir)
{
	struct fixture fx;
	struct nf_control *c = NULL;
	char path[200];
	int fd;

	fx_init(&fx);
	snprintf(path, sizeof(path), "%s/missing/ctl.sock", fx.dir);
	ASSERT_EQ(nf_control_start(&fx.loop, path, fx.rs, fx.ev, NULL, &c, NULL,
				   0),
		  -ENOENT);
	ASSERT_NULL(c);
	snprintf(path, sizeof(path), "%s/file", fx.dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	ASSERT_GE(fd, 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/file/ctl.sock", fx.dir);
	ASSERT_EQ(nf_control_start(&fx.loop, path, fx.rs, fx.ev, NULL, &c, NULL,
				   0),
		  -ENOTDIR);
	snprintf(path, sizeof(path), "%s/file", fx.dir);
	ASSERT_EQ(unlink(path), 0);
	fx_done(&fx);
	return 0;
}

/* A stop with a client connected and an answer unread frees everything. */
TEST_IMPL(nf_control_stop_busy)
{
	struct fixture fx;
	struct client cl;

	fx_start(&fx);
	cl_open(&fx, &cl);
	cl_send(&cl, "list\nlist\n", 10);
	uv_run(&fx.loop, UV_RUN_NOWAIT);
	nf_control_stop(fx.c);
	fx.c = NULL;
	ASSERT_EQ(connect_path(fx.path), -ENOENT);
	fx_done(&fx);
	close(cl.fd);
	return 0;
}

/*
 * A peer that sends many requests before reading any answer: reading it
 * pauses while megabytes of answers wait, and every answer still comes,
 * whole and in order.
 */
TEST_IMPL(nf_control_backpressure)
{
	enum { RULES = 50, REQUESTS = 3000 };
	static char reqs[REQUESTS * 5];
	struct fixture fx;
	struct client cl;
	char err[512], *first;
	const char *line;
	unsigned id, i;

	fx_start(&fx);
	for (i = 0; i < RULES; i++)
		ASSERT_EQ(nf_ruleset_add(fx.rs,
					 "delay 100 proc=WRITE dir=reply", &id,
					 err, sizeof(err)),
			  0);
	cl_open(&fx, &cl);
	for (i = 0; i < REQUESTS; i++)
		memcpy(reqs + 5 * i, "list\n", 5);
	cl_send(&cl, reqs, sizeof(reqs));
	line = cl_line(&fx, &cl);
	ASSERT_NOT_NULL(line);
	ASSERT_GT(strlen(line) * REQUESTS, 2u << 20);
	first = strdup(line);
	ASSERT_NOT_NULL(first);
	for (i = 1; i < REQUESTS; i++) {
		line = cl_line(&fx, &cl);
		ASSERT_NOT_NULL(line);
		ASSERT_STR_EQ(line, first);
	}
	expect(&fx, &cl, "clear", "{\"ok\":true,\"removed\":50}");
	free(first);
	close(cl.fd);
	fx_done(&fx);
	return 0;
}

/* ---- ctl.c: netfault-ctl against the socket ----------------------------- */

struct ctl_run {
	int status; /* the exit status, or -signal */
	char out[4096], err[4096];
};

/* Drains fd into buf (NUL-terminated); false at EOF. */
static bool drain(int fd, char *buf, size_t *len, size_t cap)
{
	ssize_t n = read(fd, buf + *len, cap - 1 - *len);

	if (n > 0)
		*len += (size_t)n;
	buf[*len] = '\0';
	return n > 0 || (n < 0 && errno == EAGAIN);
}

/* Runs netfault-ctl with args (NULL-terminated) and the loop beside it. */
static void run_ctl(struct fixture *fx, const char *const *args,
		    struct ctl_run *r)
{
	uint64_t end = region_now_ns() + WAIT_MS * 1000000ull;
	const char *argv[16] = { NF_CTL, "--socket", fx->path };
	size_t olen = 0, elen = 0, i;
	int o[2], e[2], status;
	bool oopen = true, eopen = true;
	pid_t pid;

	for (i = 0; args[i]; i++)
		argv[3 + i] = args[i];
	ASSERT_EQ(pipe2(o, O_CLOEXEC | O_NONBLOCK), 0);
	ASSERT_EQ(pipe2(e, O_CLOEXEC | O_NONBLOCK), 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		dup2(o[1], 1);
		dup2(e[1], 2);
		execv(NF_CTL, (char *const *)argv);
		_exit(127);
	}
	close(o[1]);
	close(e[1]);
	while (oopen || eopen) {
		if (region_now_ns() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			TEST__FAIL("netfault-ctl %s did not finish", args[0]);
		}
		uv_run(&fx->loop, UV_RUN_NOWAIT);
		poll(NULL, 0, 1);
		if (oopen)
			oopen = drain(o[0], r->out, &olen, sizeof(r->out));
		if (eopen)
			eopen = drain(e[0], r->err, &elen, sizeof(r->err));
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	r->status = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
	close(o[0]);
	close(e[0]);
}

TEST_IMPL(nf_ctl_program)
{
	static const struct {
		const char *args[6];
		int status;
		const char *out; /* all of stdout */
		const char *err; /* in stderr (NULL: stderr empty) */
	} cases[] = {
		{ { "add", "delay", "200", "proc=WRITE" },
		  0,
		  "{\"ok\":true,\"id\":1}\n",
		  NULL },
		{ { "add", "delay", "fast" },
		  1,
		  "{\"ok\":false,\"error\":\"rule 'delay fast': bad number "
		  "'fast' for MS at column 7\\n  delay fast\\n        ^\"}\n",
		  "netfault-ctl: rule 'delay fast': bad number 'fast' for MS "
		  "at column 7\n  delay fast\n        ^\n" },
		{ { "list" },
		  0,
		  "{\"ok\":true,\"rules\":[{\"id\":1,\"rule\":\"delay 200 "
		  "proc=WRITE\",\"matched\":0,\"hits\":0}]}\n",
		  NULL },
		{ { "clear", "7" },
		  1,
		  "{\"ok\":false,\"error\":\"clear: no rule 7\"}\n",
		  "clear: no rule 7" },
		{ { "clear" }, 0, "{\"ok\":true,\"removed\":1}\n", NULL },
		{ { "events", "0" },
		  0,
		  "{\"ok\":true,\"last\":0,\"events\":[]}\n",
		  NULL },
		{ { "clear", "x" }, 2, "", "'x' is not a rule id" },
		{ { "list", "all" }, 2, "", "list takes no argument" },
		{ { "frob" }, 2, "", "unknown command 'frob'" },
		{ { "add" }, 2, "", "add needs a rule" },
		{ { "--bogus" }, 2, "", "unknown option '--bogus'" },
		{ { "--help" }, 0, NULL, NULL },
	};
	struct fixture fx;
	struct ctl_run *r = malloc(sizeof(*r));
	unsigned i;

	ASSERT_NOT_NULL(r);
	fx_start(&fx);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		fprintf(stderr, "# netfault-ctl %s\n", cases[i].args[0]);
		memset(r, 0, sizeof(*r));
		run_ctl(&fx, cases[i].args, r);
		ASSERT_EQ(r->status, cases[i].status);
		if (cases[i].out)
			ASSERT_STR_EQ(r->out, cases[i].out);
		else
			ASSERT_CONTAINS(r->out, "Usage: netfault-ctl");
		if (cases[i].err)
			ASSERT_CONTAINS(r->err, cases[i].err);
		else
			ASSERT_STR_EQ(r->err, "");
	}
	fx_done(&fx);

	/* No socket: a clear message and 1. */
	memset(r, 0, sizeof(*r));
	fx_init(&fx);
	run_ctl(&fx, (const char *const[]){ "list", NULL }, r);
	ASSERT_EQ(r->status, 1);
	ASSERT_STR_EQ(r->out, "");
	ASSERT_CONTAINS(r->err, "netfault-ctl: cannot connect to ");
	ASSERT_CONTAINS(r->err, "ctl.sock: No such file or directory");
	fx_done(&fx);
	free(r);
	return 0;
}
