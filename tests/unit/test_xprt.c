/*
 * Tests of the RPC transport against the fake server (fake_rpc.h): round
 * trips and many calls in flight, retransmission with the same XID, major
 * timeouts under hard, soft and softerr, garbage, oversized and stray
 * replies, a connection refused, and the seed's scenario: an interrupt while
 * a record is stuck half sent, under each policy and region (a table).
 */
#include "test.h"

#include "fake_rpc.h"
#include "netclient_i.h"
#include "xprt_i.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <unistd.h>

static struct nc_opts opts_of(enum nc_timeo_mode tm, enum nc_intr_mode im,
			      unsigned timeo, unsigned retrans)
{
	struct nc_opts o;

	memset(&o, 0, sizeof(o));
	o.timeo_mode = tm;
	o.intr_mode = im;
	o.timeo = timeo;
	o.retrans = retrans;
	o.slots = 64;
	return o;
}

static struct nc__xprt *make_xprt(uint16_t port, const struct nc_opts *o,
				  struct nc__xstats *st)
{
	struct nc__xprt_cfg cfg;
	struct nc__xprt *x = NULL;

	memset(&cfg, 0, sizeof(cfg));
	cfg.server = "fake";
	cfg.addr.sin_family = AF_INET;
	cfg.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cfg.addr.sin_port = htons(port);
	cfg.prog = FAKE_PROG;
	cfg.vers = FAKE_VERS;
	cfg.timeout = nc__timeout_of(o->timeo_mode, o->timeo, o->retrans);
	cfg.wait_mode = nc__wait_mode(o->intr_mode);
	cfg.send_mode = o->send_mode;
	cfg.slots = o->slots;
	cfg.stats = st;
	ASSERT_EQ(nc__xprt_create(&cfg, &x), 0);
	return x;
}

static task_t *enter_task(enum region_policy policy)
{
	struct task_attr attr = { "xprt-test", policy, NULL };
	task_t *t = region_task_create(&attr);

	ASSERT_NOT_NULL(t);
	region_task_enter(t);
	return t;
}

static void leave_task(task_t *t)
{
	region_task_leave(t);
	region_task_put(t);
}

/* An ECHO call of in, its reply into out. */
static struct nc__rpc echo_rpc(struct fake_blob *in, struct fake_blob *out)
{
	return (struct nc__rpc){ .proc = FAKE_ECHO,
				 .xargs = NC__XDRPROC(fake_xdr_blob),
				 .argp = in,
				 .xres = NC__XDRPROC(fake_xdr_blob),
				 .resp = out };
}

/*
 * An ECHO of len bytes; checks the bytes that come back.  answer: the call
 * must be answered once sent (answer_once_sent).
 */
static int echo_call(struct nc__xprt *x, size_t len, bool answer)
{
	struct fake_blob in = { malloc(len + 1), (u_int)len },
			 out = { NULL, 0 };
	struct nc__rpc r = echo_rpc(&in, &out);
	int rc;

	r.answer_once_sent = answer;
	for (size_t i = 0; i < len; i++)
		in.val[i] = (char)(i * 7 + 3);
	rc = nc__xprt_call(x, &r);
	if (rc == 0) {
		ASSERT_EQ(out.len, len);
		ASSERT_MEM_EQ(in.val, out.val, len);
	}
	xdr_free(NC__XDRPROC(fake_xdr_blob), &out);
	free(in.val);
	return rc;
}

static int echo(struct nc__xprt *x, size_t len)
{
	return echo_call(x, len, false);
}

static uint64_t stat_of(_Atomic uint64_t *v)
{
	return atomic_load(v);
}

TEST_IMPL(xprt_echo_sizes)
{
	static const size_t sizes[] = {
		0, 1, 3, 4096, 65535, 262144, NC_MAX_IO
	};
	struct fake_rpc *f = fake_rpc_start(0);
	struct nc_opts o = opts_of(NC_HARD, NC_KILLABLE, 600, 2);
	struct nc__xstats st = { 0 };
	task_t *t = enter_task(REGION_POLICY_REGION);
	struct nc__xprt *x = make_xprt(fake_rpc_port(f), &o, &st);

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++)
		ASSERT_EQ(echo(x, sizes[i]), 0);
	ASSERT_EQ(stat_of(&st.calls), ARRAY_SIZE(sizes));
	ASSERT_EQ(stat_of(&st.retransmits), 0);
	ASSERT_EQ(fake_rpc_conns(f), 1);
	nc__xprt_destroy(x);
	leave_task(t);
	fake_rpc_stop(f);
	return 0;
}

/*
 * Reply records of NC__REC_MIN bytes and more are kept for the next reply:
 * replies of every size still arrive whole and right, a small record never
 * comes from the store, and the store holds at most NC__REC_KEEP buffers
 * (ASan sees the rest freed).
 */
TEST_IMPL(xprt_reply_buffers_kept)
{
	static const size_t sizes[] = { NC_MAX_IO, NC_MAX_IO, 262144,
					100,	   NC_MAX_IO, 70000 };
	struct fake_rpc *f = fake_rpc_start(0);
	struct nc_opts o = opts_of(NC_HARD, NC_KILLABLE, 600, 2);
	struct nc__xstats st = { 0 };
	task_t *t = enter_task(REGION_POLICY_REGION);
	struct nc__xprt *x = make_xprt(fake_rpc_port(f), &o, &st);
	unsigned char *p;
	size_t cap = 0;

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++)
		ASSERT_EQ(echo(x, sizes[i]), 0);
	ASSERT_GT(x->nrec_cache, 0);
	ASSERT_LE(x->nrec_cache, NC__REC_KEEP);
	ASSERT_NULL(nc__rec_get(x, NC__REC_MIN - 1, &cap));
	p = nc__rec_get(x, NC_MAX_IO, &cap);
	ASSERT_NOT_NULL(p);
	ASSERT_GE(cap, NC_MAX_IO);
	nc__rec_put(x, p, cap);
	ASSERT_NULL(nc__rec_get(x, (size_t)NC_MAX_IO * 4, &cap));
	for (unsigned i = 0; i < NC__REC_KEEP + 2; i++)
		nc__rec_put(x, malloc(NC__REC_MIN), NC__REC_MIN);
	nc__rec_put(x, malloc(16), 16);
	ASSERT_EQ(x->nrec_cache, NC__REC_KEEP);
	ASSERT_EQ(stat_of(&st.calls), ARRAY_SIZE(sizes));
	nc__xprt_destroy(x);
	leave_task(t);
	fake_rpc_stop(f);
	return 0;
}
/*
 * Bulk data as an rpc tail (sent from the caller's buffer, not encoded):
 * the fake server echoes the opaque, so the bytes, the length word and the
 * padding all arrived where XDR puts them.
 */
TEST_IMPL(xprt_tail_sizes)
{
	static const size_t sizes[] = { 1, 2, 3, 4, 5, 4097, 65537, NC_MAX_IO };
	struct fake_rpc *f = fake_rpc_start(0);
	struct nc_opts o = opts_of(NC_HARD, NC_KILLABLE, 600, 2);
	struct nc__xstats st = { 0 };
	task_t *t = enter_task(REGION_POLICY_REGION);
	struct nc__xprt *x = make_xprt(fake_rpc_port(f), &o, &st);
	char *data = malloc(NC_MAX_IO);

	ASSERT_NOT_NULL(data);
	for (size_t i = 0; i < NC_MAX_IO; i++)
		data[i] = (char)(i * 13 + 1);
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		struct fake_blob in = { NULL, 0 }, out = { NULL, 0 };
		struct nc__rpc r = echo_rpc(&in, &out);

		r.tail = data;
		r.tail_len = (uint32_t)sizes[i];
		ASSERT_EQ(nc__xprt_call(x, &r), 0);
		ASSERT_EQ(out.len, sizes[i]);
		ASSERT_MEM_EQ(out.val, data, sizes[i]);
		xdr_free(NC__XDRPROC(fake_xdr_blob), &out);
	}
	/* Then an ordinary call: the stream is still in step. */
	ASSERT_EQ(echo(x, 3), 0);
	free(data);
	nc__xprt_destroy(x);
	leave_task(t);
	fake_rpc_stop(f);
	return 0;
}

/* 32 calls answered 200 ms late each finish together: they were in flight. */
TEST_IMPL(xprt_batch_in_flight)
{
	struct fake_rpc *f = fake_rpc_start(0);
	struct nc_opts o = opts_of(NC_HARD, NC_KILLABLE, 600, 2);
	struct nc__xstats st = { 0 };
	task_t *t = enter_task(REGION_POLICY_REGION);
	struct nc__xprt *x = make_xprt(fake_rpc_port(f), &o, &st);
	struct fake_blob in[32], out[32];
	struct nc__rpc r[32];
	uint64_t t0;

	fake_rpc_set(f, FAKE_DELAY_MS, 200);
	for (unsigned i = 0; i < 32; i++) {
		in[i].val = malloc(8);
		in[i].len = 8;
		memset(in[i].val, (int)i, 8);
		out[i].val = NULL;
		out[i].len = 0;
		r[i] = echo_rpc(&in[i], &out[i]);
	}
	t0 = region_now_ns();
	ASSERT_EQ(nc__xprt_batch(x, r, 32), 0);
	ASSERT_LT(region_now_ns() - t0, 2000000000u); /* not 32 * 200 ms */
	for (unsigned i = 0; i < 32; i++) {
		ASSERT_EQ(r[i].rc, 0);
		ASSERT_EQ(out[i].len, 8);
		ASSERT_EQ(out[i].val[7], (char)i); /* each got its own reply */
		xdr_free(NC__XDRPROC(fake_xdr_blob), &out[i]);
		free(in[i].val);
	}
	nc__xprt_destroy(x);
	leave_task(t);
	fake_rpc_stop(f);
	return 0;
}

struct sent_seen {
	unsigned calls;
	uint64_t at_ns;
};

static void on_sent(void *arg)
{
	struct sent_seen *s = arg;

	s->calls++;
	s->at_ns = region_now_ns();
}

/*
 * The sent notification comes once, as soon as the records are out and
 * long before the replies (answered 300 ms late); the batch still returns
 * with the replies.  A call that fails before it is sent never notifies.
 */
TEST_IMPL(xprt_batch_notify_sent)
{
	struct fake_rpc *f = fake_rpc_start(0);
	struct nc_opts o = opts_of(NC_HARD, NC_KILLABLE, 600, 2);
	struct nc__xstats st = { 0 };
	task_t *t = enter_task(REGION_POLICY_REGION);
	struct nc__xprt *x = make_xprt(fake_rpc_port(f), &o, &st);
	struct sent_seen seen = { 0 };
	struct nc_sent_notify sent = { on_sent, &seen };
	struct fake_blob in[4], out[4];
	struct nc__rpc r[4];
	uint64_t t0, took;

	fake_rpc_set(f, FAKE_DELAY_MS, 300);
	for (unsigned i = 0; i < 4; i++) {
		in[i].len = 262144;
		in[i].val = calloc(1, in[i].len);
		out[i].val = NULL;
		out[i].len = 0;
		r[i] = echo_rpc(&in[i], &out[i]);
	}
	t0 = region_now_ns();
	ASSERT_EQ(nc__xprt_batch_notify(x, r, 4, &sent), 0);
	took = region_now_ns() - t0;
	ASSERT_EQ(seen.calls, 1);
	ASSERT_LT(seen.at_ns - t0, 150000000u);
	ASSERT_GE(took, 300000000u);
	for (unsigned i = 0; i < 4; i++) {
		ASSERT_EQ(out[i].len, in[i].len);
		xdr_free(NC__XDRPROC(fake_xdr_blob), &out[i]);
	}
	nc__xprt_destroy(x);
	fake_rpc_stop(f);

	/* Nobody listens: a soft call fails unsent, and says nothing. */
	{
		struct fake_rpc *gone = fake_rpc_start(0);
		uint16_t port = fake_rpc_port(gone);

		fake_rpc_stop(gone);
		o = opts_of(NC_SOFT, NC_KILLABLE, 1, 0);
		x = make_xprt(port, &o, &st);
		seen.calls = 0;
		ASSERT_NE(nc__xprt_batch_notify(x, r, 1, &sent), 0);
		ASSERT_EQ(seen.calls, 0);
		nc__xprt_destroy(x);
	}
	for (unsigned i = 0; i < 4; i++)
		free(in[i].val);
	leave_task(t);
	return 0;
}

TEST_IMPL(xprt_retransmit_same_xid)
{
	struct fake_rpc *f = fake_rpc_start(0);
	struct nc_opts o = opts_of(NC_HARD, NC_KILLABLE, 1, 2); /* 100 ms */
	struct nc__xstats st = { 0 };
	task_t *t = enter_task(REGION_POLICY_REGION);
	struct nc__xprt *x = make_xprt(fake_rpc_port(f), &o, &st);
	struct fake_seen seen[4];

	fake_rpc_set(f, FAKE_DROP, 1);
	ASSERT_EQ(echo(x, 100), 0);
	ASSERT_EQ(fake_rpc_seen(f, seen, 4), 2);
	ASSERT_EQ(seen[0].xid, seen[1].xid);
	ASSERT_EQ(seen[0].conn, seen[1].conn); /* TCP: same connection */
	ASSERT_EQ(stat_of(&st.retransmits), 1);
	ASSERT_EQ(stat_of(&st.major_timeouts), 0);
	nc__xprt_destroy(x);
	leave_task(t);
	fake_rpc_stop(f);
	return 0;
}

/* Captures what the transport prints on stderr. */
static int capture_stderr(char *path, size_t len)
{
	int fd, saved;

	/* A name of its own (mkstemp): a fixed one in /tmp could be planted. */
	snprintf(path, len, "/tmp/intrfs-test-stderr.XXXXXX");
	fd = mkstemp(path);
	ASSERT_GE(fd, 0);
	saved = dup(2);
	dup2(fd, 2);
	close(fd);
	return saved;
}

static void read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	unlink(path);
}

static const struct timeout_case {
	enum nc_timeo_mode mode;
	int want;
} timeout_cases[] = {
	{ NC_SOFT, -EIO },
	{ NC_SOFTERR, -ETIMEDOUT },
};

TEST_IMPL(xprt_major_timeout_soft)
{
	for (size_t i = 0; i < ARRAY_SIZE(timeout_cases); i++) {
		struct fake_rpc *f = fake_rpc_start(0);
		/*
		 * timeo=1 retrans=2: the major timeout at 100 + 2 x 100 =
		 * 300 ms (Linux's xprt_calc_majortimeo); sent at 0 and at
		 * 100 ms, whose wait (200 ms) is cut at the major timeout.
		 */
		struct nc_opts o =
			opts_of(timeout_cases[i].mode, NC_KILLABLE, 1, 2);
		struct nc__xstats st = { 0 };
		task_t *t = enter_task(REGION_POLICY_REGION);
		struct nc__xprt *x = make_xprt(fake_rpc_port(f), &o, &st);
		uint64_t t0;

		fake_rpc_set(f, FAKE_DROP, 1000);
		t0 = region_now_ns();
		ASSERT_EQ(echo(x, 10), timeout_cases[i].want);
		ASSERT_GE(region_now_ns() - t0, 290000000u);
		ASSERT_LT(region_now_ns() - t0, 1000000000u);
		ASSERT_EQ(fake_rpc_seen(f, NULL, 0), 2);
		ASSERT_EQ(stat_of(&st.major_timeouts), 1);
		ASSERT_EQ(stat_of(&st.retransmits), 1);
		nc__xprt_destroy(x);
		leave_task(t);
		fake_rpc_stop(f);
	}
	return 0;
}

TEST_IMPL(xprt_major_timeout_hard)
{
	struct fake_rpc *f = fake_rpc_start(0);
	struct nc_opts o = opts_of(NC_HARD, NC_KILLABLE, 1, 1);
	struct nc__xstats st = { 0 };
	task_t *t = enter_task(REGION_POLICY_REGION);
	struct nc__xprt *x = make_xprt(fake_rpc_port(f), &o, &st);
	char path[64], log[4096];
	int saved;

	/*
	 * Past two major timeouts (at 200 and 400 ms: 100 + 100 each; sent
	 * every 100 ms), then answered.
	 */
	fake_rpc_set(f, FAKE_DROP, 5);
	saved = capture_stderr(path, sizeof(path));
	ASSERT_EQ(echo(x, 10), 0);
	dup2(saved, 2);
	read_file(path, log, sizeof(log));
	/*
	 * The sixth is answered; on a loaded machine its reply may still be
	 * on the way when the next send is due: one more, not two.
	 */
	ASSERT_GE(fake_rpc_seen(f, NULL, 0), 6);
	ASSERT_LE(fake_rpc_seen(f, NULL, 0), 7);
	ASSERT_GE(stat_of(&st.major_timeouts), 2);
	ASSERT_LE(stat_of(&st.major_timeouts), 3);
	ASSERT_CONTAINS(log, "server fake not responding, still trying");
	ASSERT_CONTAINS(log, "server fake OK");
	/* Once per episode, not once per major timeout. */
	ASSERT_NULL(strstr(strstr(log, "still trying") + 1, "still trying"));
	nc__xprt_destroy(x);
	leave_task(t);
	fake_rpc_stop(f);
	return 0;
}

TEST_IMPL(xprt_bad_replies)
{
	struct fake_rpc *f = fake_rpc_start(0);
	struct nc_opts o = opts_of(NC_HARD, NC_KILLABLE, 1, 2);
	struct nc__xstats st = { 0 };
	task_t *t = enter_task(REGION_POLICY_REGION);
	struct nc__xprt *x = make_xprt(fake_rpc_port(f), &o, &st);

	/*
	 * A reply that does not decode fails that call as "not an RPC
	 * reply"; the stream is still good.
	 */
	fake_rpc_set(f, FAKE_GARBAGE, 1);
	ASSERT_EQ(echo(x, 10), -EPROTO);
	ASSERT_EQ(stat_of(&st.bad_replies), 1);
	ASSERT_EQ(echo(x, 10), 0);
	ASSERT_EQ(fake_rpc_conns(f), 1);

	/* A stray XID is dropped; the call gets its own reply. */
	fake_rpc_set(f, FAKE_STRAY_XID, 1);
	ASSERT_EQ(echo(x, 10), 0);
	ASSERT_EQ(stat_of(&st.unknown_xids), 1);

	/*
	 * An oversized record cannot be skipped safely: the connection is
	 * reset and the call sent again on a new one.
	 */
	fake_rpc_set(f, FAKE_OVERSIZE, 1);
	ASSERT_EQ(echo(x, 10), 0);
	ASSERT_EQ(stat_of(&st.bad_replies), 2);
	ASSERT_EQ(stat_of(&st.resets), 1);
	ASSERT_EQ(stat_of(&st.reconnects), 1);
	ASSERT_EQ(fake_rpc_conns(f), 2);
	nc__xprt_destroy(x);
	leave_task(t);
	fake_rpc_stop(f);
	return 0;
}

/*
 * On a soft transport a stream that is not RPC ends the calls in flight
 * at once, with -EPROTO ("not an RPC reply"), not after the timeouts.
 */
TEST_IMPL(xprt_garbage_soft)
{
	struct fake_rpc *f = fake_rpc_start(0);
	struct nc_opts o = opts_of(NC_SOFTERR, NC_KILLABLE, 50, 2);
	struct nc__xstats st = { 0 };
	task_t *t = enter_task(REGION_POLICY_REGION);
	struct nc__xprt *x = make_xprt(fake_rpc_port(f), &o, &st);
	uint64_t t0 = region_now_ns();

	fake_rpc_set(f, FAKE_OVERSIZE, 1);
	ASSERT_EQ(echo(x, 10), -EPROTO);
	/* timeo is 5 s: this was not a timeout. */
	ASSERT_LT(region_now_ns() - t0, 1000000000ull);
	ASSERT_EQ(stat_of(&st.major_timeouts), 0);
	ASSERT_EQ(echo(x, 10), 0);
	nc__xprt_destroy(x);
	leave_task(t);
	fake_rpc_stop(f);
	return 0;
}

struct late_server {
	uint16_t port;
	struct fake_rpc *f;
};

static void *start_late(void *arg)
{
	struct late_server *ls = arg;

	/* The scenario: nothing listens for 400 ms. */
	test_sleep_ms(400);
	ls->f = fake_rpc_start(ls->port);
	return NULL;
}

TEST_IMPL(xprt_connect_refused)
{
	struct fake_rpc *f = fake_rpc_start(0);
	struct late_server ls = { fake_rpc_port(f), NULL };
	struct nc__xstats st = { 0 };
	struct nc_opts soft = opts_of(NC_SOFT, NC_KILLABLE, 10, 1);
	struct nc_opts hard = opts_of(NC_HARD, NC_KILLABLE, 10, 1);
	task_t *t = enter_task(REGION_POLICY_REGION);
	struct nc__xprt *x;
	pthread_t th;
	uint64_t t0;

	fake_rpc_stop(f); /* nothing listens on the port now */
	x = make_xprt(ls.port, &soft, &st);
	t0 = region_now_ns();
	ASSERT_EQ(echo(x, 1), -ECONNREFUSED);
	ASSERT_LT(region_now_ns() - t0, 500000000u);
	nc__xprt_destroy(x);

	/* Hard: keeps trying, with backoff, until the server is there. */
	x = make_xprt(ls.port, &hard, &st);
	ASSERT_EQ(pthread_create(&th, NULL, start_late, &ls), 0);
	t0 = region_now_ns();
	ASSERT_EQ(echo(x, 1), 0);
	ASSERT_GE(region_now_ns() - t0, 350000000u);
	pthread_join(th, NULL);
	ASSERT_NOT_NULL(ls.f);
	ASSERT_EQ(fake_rpc_conns(ls.f), 1);
	nc__xprt_destroy(x);
	fake_rpc_stop(ls.f);
	leave_task(t);
	return 0;
}

/* A server that accepts every connection and closes it at once. */
struct closer {
	int lfd;
	_Atomic unsigned accepted;
	_Atomic bool stop;
};

static void *closer_main(void *arg)
{
	struct closer *c = arg;

	while (!atomic_load(&c->stop)) {
		struct pollfd p = { c->lfd, POLLIN, 0 };
		int fd;

		if (poll(&p, 1, 50) != 1)
			continue;
		fd = accept(c->lfd, NULL, NULL);
		if (fd >= 0) {
			atomic_fetch_add(&c->accepted, 1);
			close(fd);
		}
	}
	return NULL;
}

/*
 * A server that ends every connection before it answers gets the connects
 * paced as failed ones are (100 ms, doubling), not hundreds a second; a
 * soft call still fails at its major timeout.
 */
TEST_IMPL(xprt_closed_at_once_backs_off)
{
	struct closer c = { .lfd = socket(AF_INET, SOCK_STREAM, 0) };
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	struct nc__xstats st = { 0 };
	struct nc_opts soft = opts_of(NC_SOFT, NC_KILLABLE, 10, 1);
	task_t *t = enter_task(REGION_POLICY_REGION);
	struct nc__xprt *x;
	pthread_t th;
	uint64_t t0, ns;
	unsigned n;

	ASSERT_GE(c.lfd, 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ASSERT_EQ(bind(c.lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ASSERT_EQ(listen(c.lfd, 16), 0);
	ASSERT_EQ(getsockname(c.lfd, (struct sockaddr *)&sin, &sl), 0);
	ASSERT_EQ(pthread_create(&th, NULL, closer_main, &c), 0);
	x = make_xprt(ntohs(sin.sin_port), &soft, &st);
	t0 = region_now_ns();
	/* timeo=10, retrans=1: the major timeout at 1 + 1 = 2 s. */
	ASSERT_EQ(echo(x, 1), -EIO);
	ns = region_now_ns() - t0;
	n = atomic_load(&c.accepted);
	fprintf(stderr, "%u connections in %.2f s\n", n, (double)ns / 1e9);
	/* 0, 0.1, 0.3, 0.7, 1.5 s: 5 within 2 s. */
	ASSERT_GE(n, 3);
	ASSERT_LE(n, 8);
	nc__xprt_destroy(x);
	atomic_store(&c.stop, true);
	pthread_join(th, NULL);
	close(c.lfd);
	leave_task(t);
	return 0;
}

/* The reply wait follows the mount's intr/killable/nointr mode. */
static const struct reply_case {
	enum nc_intr_mode mode;
	enum task_intr kind;
	int want;
} reply_cases[] = {
	{ NC_INTR, TASK_INTR_NORMAL, -EINTR },
	{ NC_INTR, TASK_INTR_FATAL, -EINTR },
	{ NC_KILLABLE, TASK_INTR_NORMAL, 0 },
	{ NC_KILLABLE, TASK_INTR_FATAL, -EINTR },
	{ NC_NOINTR, TASK_INTR_FATAL, 0 },
};

struct waiter_arg {
	struct nc__xprt *x;
	task_t *task;
	int rc;
};

static void *reply_waiter(void *arg)
{
	struct waiter_arg *w = arg;

	region_task_enter(w->task);
	w->rc = echo(w->x, 16);
	region_task_leave(w->task);
	return NULL;
}

TEST_IMPL(xprt_interrupt_reply_wait)
{
	for (size_t i = 0; i < ARRAY_SIZE(reply_cases); i++) {
		const struct reply_case *rc = &reply_cases[i];
		struct fake_rpc *f = fake_rpc_start(0);
		struct nc_opts o = opts_of(NC_HARD, rc->mode, 600, 2);
		struct nc__xstats st = { 0 };
		struct task_attr attr = { "waiter", REGION_POLICY_REGION,
					  NULL };
		struct waiter_arg w = { NULL, NULL, 1 };
		pthread_t th;

		fake_rpc_set(f, FAKE_DELAY_MS, 300);
		w.x = make_xprt(fake_rpc_port(f), &o, &st);
		w.task = region_task_create(&attr);
		ASSERT_EQ(pthread_create(&th, NULL, reply_waiter, &w), 0);
		ASSERT(fake_rpc_wait_seen(f, 1));
		region_task_interrupt(w.task, rc->kind);
		pthread_join(th, NULL);
		ASSERT_EQ(w.rc, rc->want);
		/* A late reply to an abandoned call is dropped, not misused. */
		if (rc->want == -EINTR) {
			ASSERT_WITHIN(stat_of(&st.unknown_xids) > 0, 5000);
			ASSERT_EQ(stat_of(&st.unknown_xids), 1);
		}
		nc__xprt_destroy(w.x);
		region_task_put(w.task);
		fake_rpc_stop(f);
	}
	return 0;
}

/*
 * A call alone in flight reads its own reply (no receiver hop); two tasks
 * calling at once are served by the receiver, and every call is answered.
 */
struct lone_arg {
	struct nc__xprt *x;
	unsigned n;
	int fails;
};

static void *lone_caller(void *arg)
{
	struct lone_arg *a = arg;
	task_t *t = enter_task(REGION_POLICY_REGION);

	/*
	 * Sizes in whole XDR units: libtirpc decodes padding into a static
	 * buffer, a race between two threads decoding at once (here the fake
	 * server and a caller) that TSan would report.
	 */
	for (unsigned i = 0; i < a->n; i++)
		if (echo(a->x, 4 * (25 + i % 750)) != 0)
			a->fails++;
	leave_task(t);
	return NULL;
}

/*
 * Waits (up to 2 s) until the receiver has parked with nothing in flight:
 * it parks only when it loops back after handing over a reply, which a
 * loaded machine may delay past the caller's next call.
 */
static bool receiver_parked(struct nc__xprt *x)
{
	for (unsigned i = 0; i < 2000; i++) {
		bool parked;

		region_task_mutex_lock_nofail(&x->lock);
		parked = x->rx_parked && !x->reader_call && x->inflight == 0;
		region_task_mutex_unlock(&x->lock);
		if (parked)
			return true;
		test_sleep_ms(1);
	}
	return false;
}

TEST_IMPL(xprt_lone_reads)
{
	struct fake_rpc *f = fake_rpc_start(0);
	struct nc_opts o = opts_of(NC_HARD, NC_INTR, 600, 2);
	struct nc__xstats st = { 0 };
	struct lone_arg a[2];
	pthread_t th[2];
	struct nc__xprt *x = make_xprt(fake_rpc_port(f), &o, &st);
	uint64_t lone;

	/*
	 * One at a time, each made while the receiver is parked: the
	 * receiver reads the first (the connection is new), each caller
	 * its own after that.
	 */
	{
		task_t *t = enter_task(REGION_POLICY_REGION);

		for (unsigned i = 0; i < 50; i++) {
			ASSERT(i == 0 || receiver_parked(x));
			ASSERT_EQ(echo(x, 10 + i * 997), 0);
		}
		leave_task(t);
	}
	ASSERT_EQ(stat_of(&st.receives), 50);
	ASSERT_GE(stat_of(&st.lone_reads), 49);
	lone = stat_of(&st.lone_reads);

	/* Two at once, the replies a millisecond late: both get theirs. */
	fake_rpc_set(f, FAKE_DELAY_MS, 1);
	for (unsigned i = 0; i < 2; i++) {
		a[i] = (struct lone_arg){ x, 300, 0 };
		ASSERT_EQ(pthread_create(&th[i], NULL, lone_caller, &a[i]), 0);
	}
	for (unsigned i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		ASSERT_EQ(a[i].fails, 0);
	}
	ASSERT_EQ(stat_of(&st.receives), 650);
	/* Some went through the receiver: not all were alone. */
	ASSERT_LT(stat_of(&st.lone_reads) - lone, 600);
	ASSERT_EQ(stat_of(&st.resets), 0);
	ASSERT_EQ(fake_rpc_conns(f), 1);
	nc__xprt_destroy(x);
	fake_rpc_stop(f);
	return 0;
}

/*
 * A lone call interrupted with half its reply read: the half stays with
 * the stream, the next reader finishes the record (dropped: its call is
 * gone) and the stream stays good, no reset.
 */
TEST_IMPL(xprt_lone_read_cut)
{
	struct fake_rpc *f = fake_rpc_start(0);
	struct nc_opts o = opts_of(NC_HARD, NC_INTR, 600, 2);
	struct nc__xstats st = { 0 };
	struct task_attr attr = { "waiter", REGION_POLICY_REGION, NULL };
	struct waiter_arg w = { NULL, NULL, 1 };
	uint64_t before;
	pthread_t th;
	task_t *t;

	w.x = make_xprt(fake_rpc_port(f), &o, &st);
	t = enter_task(REGION_POLICY_REGION);
	ASSERT_EQ(echo(w.x, 10), 0); /* connected; the receiver parks */
	ASSERT_EQ(echo(w.x, 10), 0);
	ASSERT(receiver_parked(w.x));
	before = stat_of(&st.lone_reads);
	fake_rpc_set(f, FAKE_SPLIT_MS, 400);
	w.task = region_task_create(&attr);
	ASSERT_EQ(pthread_create(&th, NULL, reply_waiter, &w), 0);
	ASSERT(fake_rpc_wait_seen(f, 3));
	test_sleep_ms(150); /* the first half is read by now */
	region_task_interrupt(w.task, TASK_INTR_NORMAL);
	pthread_join(th, NULL);
	ASSERT_EQ(w.rc, -EINTR);
	ASSERT_EQ(stat_of(&st.lone_reads), before + 1);
	fake_rpc_set(f, FAKE_SPLIT_MS, 0);
	test_sleep_ms(400); /* the second half is on its way */
	ASSERT_EQ(echo(w.x, 10), 0);
	ASSERT_EQ(stat_of(&st.unknown_xids), 1);
	ASSERT_EQ(stat_of(&st.bad_replies), 0);
	ASSERT_EQ(stat_of(&st.resets), 0);
	ASSERT_EQ(fake_rpc_conns(f), 1);
	leave_task(t);
	nc__xprt_destroy(w.x);
	region_task_put(w.task);
	fake_rpc_stop(f);
	return 0;
}

/*
 * A call that must be answered once sent (a WRITE, a size change) on an
 * intr mount: once it went out, a normal interrupt waits for its reply
 * under region (and sigmask); percall abandons it, as the reply wait's own
 * mode says; a fatal interrupt abandons it under any policy.
 */
static const struct answer_case {
	enum region_policy policy;
	enum task_intr kind;
	int want;
} answer_cases[] = {
	{ REGION_POLICY_REGION, TASK_INTR_NORMAL, 0 },
	{ REGION_POLICY_SIGMASK, TASK_INTR_NORMAL, 0 },
	{ REGION_POLICY_PERCALL, TASK_INTR_NORMAL, -EINTR },
	{ REGION_POLICY_REGION, TASK_INTR_FATAL, -EINTR },
};

static void *answer_waiter(void *arg)
{
	struct waiter_arg *w = arg;

	region_task_enter(w->task);
	w->rc = echo_call(w->x, 16, true);
	region_task_leave(w->task);
	return NULL;
}

TEST_IMPL(xprt_answer_once_sent)
{
	for (size_t i = 0; i < ARRAY_SIZE(answer_cases); i++) {
		const struct answer_case *ac = &answer_cases[i];
		struct fake_rpc *f = fake_rpc_start(0);
		struct nc_opts o = opts_of(NC_HARD, NC_INTR, 600, 2);
		struct nc__xstats st = { 0 };
		struct task_attr attr = { "answer", ac->policy, NULL };
		struct waiter_arg w = { NULL, NULL, 1 };
		uint64_t t0;
		pthread_t th;

		fprintf(stderr, "case %zu: policy %s, %s interrupt\n", i,
			region_policy_name(ac->policy),
			ac->kind == TASK_INTR_FATAL ? "fatal" : "normal");
		fake_rpc_set(f, FAKE_DELAY_MS, 300);
		w.x = make_xprt(fake_rpc_port(f), &o, &st);
		w.task = region_task_create(&attr);
		ASSERT_EQ(pthread_create(&th, NULL, answer_waiter, &w), 0);
		ASSERT(fake_rpc_wait_seen(f, 1));
		t0 = region_now_ns();
		region_task_interrupt(w.task, ac->kind);
		pthread_join(th, NULL);
		ASSERT_EQ(w.rc, ac->want);
		/* Answered: after the server's 300 ms; abandoned: at once. */
		if (ac->want == 0)
			ASSERT_GE(region_now_ns() - t0, 150000000u);
		else
			ASSERT_LT(region_now_ns() - t0, 150000000u);
		nc__xprt_destroy(w.x);
		region_task_put(w.task);
		fake_rpc_stop(f);
	}
	return 0;
}

/*
 * The seed's scenario: a record stuck half sent (the server stopped
 * reading), an interrupt, then the server reads again.
 */
enum send_outcome {
	COMPLETES, /* the record goes out whole, the call succeeds */
	RESET, /* -EINTR, and the connection is reset */
};

static const struct send_case {
	enum region_policy policy;
	char region; /* 'K' killable mount, 'U' nointr mount, 0 intr mount */
	enum task_intr kind;
	enum send_outcome want;
	enum task_mode send; /* send= */
} send_cases[] = {
	/* percall: the interruptible send decides, whatever the mount says. */
	{ REGION_POLICY_PERCALL, 'K', TASK_INTR_NORMAL, RESET,
	  TASK_INTERRUPTIBLE },
	{ REGION_POLICY_PERCALL, 'U', TASK_INTR_NORMAL, RESET,
	  TASK_INTERRUPTIBLE },
	{ REGION_POLICY_PERCALL, 0, TASK_INTR_NORMAL, RESET,
	  TASK_INTERRUPTIBLE },
	{ REGION_POLICY_PERCALL, 'U', TASK_INTR_FATAL, RESET,
	  TASK_INTERRUPTIBLE },
	/* region: the mount's region and the send's own killable region. */
	{ REGION_POLICY_REGION, 'K', TASK_INTR_NORMAL, COMPLETES,
	  TASK_INTERRUPTIBLE },
	{ REGION_POLICY_REGION, 'K', TASK_INTR_FATAL, RESET,
	  TASK_INTERRUPTIBLE },
	{ REGION_POLICY_REGION, 'U', TASK_INTR_NORMAL, COMPLETES,
	  TASK_INTERRUPTIBLE },
	{ REGION_POLICY_REGION, 'U', TASK_INTR_FATAL, COMPLETES,
	  TASK_INTERRUPTIBLE },
	{ REGION_POLICY_REGION, 0, TASK_INTR_NORMAL, COMPLETES,
	  TASK_INTERRUPTIBLE },
	{ REGION_POLICY_REGION, 0, TASK_INTR_FATAL, RESET, TASK_INTERRUPTIBLE },
	/* sigmask: as region, through real signal masks. */
	{ REGION_POLICY_SIGMASK, 'K', TASK_INTR_NORMAL, COMPLETES,
	  TASK_INTERRUPTIBLE },
	{ REGION_POLICY_SIGMASK, 'K', TASK_INTR_FATAL, RESET,
	  TASK_INTERRUPTIBLE },
	{ REGION_POLICY_SIGMASK, 'U', TASK_INTR_FATAL, COMPLETES,
	  TASK_INTERRUPTIBLE },
	/*
	 * percall with a send that is not interruptible (send=): the seed's
	 * hard mount no longer leaks; a killable send still dies of a fatal
	 * interrupt.
	 */
	{ REGION_POLICY_PERCALL, 'K', TASK_INTR_NORMAL, COMPLETES,
	  TASK_KILLABLE },
	{ REGION_POLICY_PERCALL, 'K', TASK_INTR_FATAL, RESET, TASK_KILLABLE },
	{ REGION_POLICY_PERCALL, 0, TASK_INTR_NORMAL, COMPLETES,
	  TASK_KILLABLE },
};

#define BIG_SEND (16u << 20)

struct sender {
	const struct send_case *sc;
	struct nc__xprt *x;
	task_t *task;
	sem_t started;
	int rc;
};

static void *sender_main(void *arg)
{
	struct sender *s = arg;
	struct fake_blob in = { calloc(1, BIG_SEND), BIG_SEND };
	struct nc__rpc r = { .proc = FAKE_SINK,
			     .xargs = NC__XDRPROC(fake_xdr_blob),
			     .argp = &in,
			     .xres = NC__XDRPROC(xdr_void) };

	region_task_enter(s->task);
	if (s->sc->region == 'K')
		region_begin_killable("test: killable mount");
	else if (s->sc->region == 'U')
		region_begin_uninterruptible("test: nointr mount");
	sem_post(&s->started);
	s->rc = nc__xprt_call(s->x, &r);
	if (s->sc->region == 'K')
		region_end_killable();
	else if (s->sc->region == 'U')
		region_end_uninterruptible();
	region_task_leave(s->task);
	free(in.val);
	return NULL;
}

/*
 * Starts s's sender thread on x in a task of policy: returns once it is in
 * its region and about to call.  sender_end() joins it and frees its task.
 */
static void sender_start(struct sender *s, struct nc__xprt *x,
			 enum region_policy policy, pthread_t *th)
{
	struct task_attr attr = { "sender", policy, NULL };

	s->x = x;
	s->task = region_task_create(&attr);
	ASSERT_NOT_NULL(s->task);
	sem_init(&s->started, 0, 0);
	ASSERT_EQ(pthread_create(th, NULL, sender_main, s), 0);
	sem_wait(&s->started);
}

static void sender_end(struct sender *s, pthread_t th)
{
	pthread_join(th, NULL);
	region_task_put(s->task);
	sem_destroy(&s->started);
}

static void wait_blocked_in_send(struct fake_rpc *f, task_t *t, unsigned depth)
{
	uint64_t end = region_now_ns() + 5000000000u;
	struct task_info ti;

	for (;;) {
		region_task_snapshot(t, &ti);
		/* Inside the send's own region, waiting for room. */
		if (ti.waiting && strcmp(ti.wait_what, "poll") == 0 &&
		    ti.depth == depth && fake_rpc_bytes(f) == 0)
			return;
		ASSERT_LT(region_now_ns(), end);
		usleep(1000);
	}
}

TEST_IMPL(xprt_interrupt_mid_record)
{
	for (size_t i = 0; i < ARRAY_SIZE(send_cases); i++) {
		const struct send_case *sc = &send_cases[i];
		struct fake_rpc *f = fake_rpc_start(0);
		struct nc_opts o = opts_of(NC_HARD, NC_KILLABLE, 600, 2);
		struct nc__xstats st = { 0 };
		struct sender s = { sc, NULL, NULL, { { 0 } }, 1 };
		pthread_t th;

		o.send_mode = sc->send;
		fprintf(stderr,
			"case %zu: policy %s region %c intr %s send %s\n", i,
			region_policy_name(sc->policy),
			sc->region ? sc->region : '-',
			sc->kind == TASK_INTR_FATAL ? "fatal" : "normal",
			region_task_mode_name(sc->send));
		fake_rpc_set(f, FAKE_STALL, 1);
		sender_start(&s, make_xprt(fake_rpc_port(f), &o, &st),
			     sc->policy, &th);
		wait_blocked_in_send(f, s.task, sc->region ? 2 : 1);
		region_task_interrupt(s.task, sc->kind);
		/* The scenario: 50 ms for the interrupt to end the send. */
		test_sleep_ms(50);
		fake_rpc_set(f, FAKE_STALL, 0);
		sender_end(&s, th);
		if (sc->want == COMPLETES) {
			ASSERT_EQ(s.rc, 0);
			ASSERT_EQ(stat_of(&st.partial_resets), 0);
			ASSERT_EQ(stat_of(&st.resets), 0);
			ASSERT(fake_rpc_wait_seen(f, 1));
		} else {
			ASSERT_EQ(s.rc, -EINTR);
			ASSERT_EQ(stat_of(&st.partial_resets), 1);
			ASSERT_EQ(stat_of(&st.resets), 1);
			ASSERT_EQ(stat_of(&st.interrupted), 1);
		}
		nc__xprt_destroy(s.x);
		fake_rpc_stop(f);
	}
	return 0;
}

/*
 * A soft transport gives a record stuck half sent until the call's major
 * timeout (timeo 0.2 s, retrans 1: 0.2 + 0.2 s), then resets the connection
 * and fails the call with EIO, like every other wait of a soft mount.
 */
TEST_IMPL(xprt_soft_send_gives_up)
{
	static const struct send_case killable = { REGION_POLICY_REGION, 'K',
						   TASK_INTR_NORMAL, RESET,
						   TASK_INTERRUPTIBLE };
	struct fake_rpc *f = fake_rpc_start(0);
	struct nc_opts o = opts_of(NC_SOFT, NC_KILLABLE, 2, 1);
	struct nc__xstats st = { 0 };
	struct sender s = { &killable, NULL, NULL, { { 0 } }, 1 };
	uint64_t t0, took;
	pthread_t th;

	fake_rpc_set(f, FAKE_STALL, 1);
	t0 = region_now_ns();
	sender_start(&s, make_xprt(fake_rpc_port(f), &o, &st),
		     REGION_POLICY_REGION, &th);
	sender_end(&s, th);
	took = region_now_ns() - t0;
	ASSERT_EQ(s.rc, -EIO);
	ASSERT_GE(took, 390000000ull);
	ASSERT_LT(took, 2000000000ull);
	ASSERT_EQ(stat_of(&st.major_timeouts), 1);
	ASSERT_EQ(stat_of(&st.partial_resets), 1);
	fake_rpc_set(f, FAKE_STALL, 0);
	nc__xprt_destroy(s.x);
	fake_rpc_stop(f);
	return 0;
}

/*
 * A reset for one task's half-sent record sends the other tasks' calls
 * again on the next connection, from the same source port.
 */
TEST_IMPL(xprt_reset_retransmits_others)
{
	static const struct send_case fatal = { REGION_POLICY_REGION, 'K',
						TASK_INTR_FATAL, RESET,
						TASK_INTERRUPTIBLE };
	struct fake_rpc *f = fake_rpc_start(0);
	struct nc_opts o = opts_of(NC_HARD, NC_KILLABLE, 600, 2);
	struct nc__xstats st = { 0 };
	struct task_attr attr = { "other", REGION_POLICY_REGION, NULL };
	struct waiter_arg w = { NULL, NULL, 1 };
	struct sender s = { &fatal, NULL, NULL, { { 0 } }, 1 };
	struct fake_seen seen[8];
	pthread_t tw, ts;
	unsigned n;

	fake_rpc_set(f, FAKE_STALL, 1);
	w.x = make_xprt(fake_rpc_port(f), &o, &st);
	w.task = region_task_create(&attr);
	/* The small call goes out whole and waits for its reply. */
	ASSERT_EQ(pthread_create(&tw, NULL, reply_waiter, &w), 0);
	test_wait_task(w.task, "cond", 5000);
	sender_start(&s, w.x, REGION_POLICY_REGION, &ts);
	wait_blocked_in_send(f, s.task, 2);
	region_task_interrupt(s.task, TASK_INTR_FATAL);
	sender_end(&s, ts);
	ASSERT_EQ(s.rc, -EINTR);
	fake_rpc_set(f, FAKE_STALL, 0);
	pthread_join(tw, NULL);
	ASSERT_EQ(w.rc, 0);
	ASSERT_EQ(stat_of(&st.partial_resets), 1);
	ASSERT_EQ(stat_of(&st.reconnects), 1);
	ASSERT_EQ(stat_of(&st.same_port), 1);
	ASSERT_GE(stat_of(&st.retransmits), 1);
	n = fake_rpc_seen(f, seen, 8);
	ASSERT_GE(n, 1);
	/* Answered on the second connection, from the first one's port. */
	ASSERT_EQ(seen[n - 1].conn, 2);
	ASSERT_EQ(seen[n - 1].proc, FAKE_ECHO);
	ASSERT_EQ(fake_rpc_conns(f), 2);
	nc__xprt_destroy(w.x);
	region_task_put(w.task);
	fake_rpc_stop(f);
	return 0;
}
