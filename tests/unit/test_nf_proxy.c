/*
 * netfault's proxy (netfault/proxy.c) end to end on loopback: the proxy
 * runs in-process on its own loop in a thread of the test, between a
 * client made of raw sockets here and the fake RPC server (fake_rpc.h) or
 * a raw upstream socket when the test must see what the server side gets.
 * Each test checks what a peer observes (bytes, replies, timing bounds,
 * the connection's end) and the proxy's log of events.  The events are
 * read once the proxy's thread is joined: the loop owns them while it runs.
 * The netfault binary itself is run for its command-line errors.
 */
#include "test.h"

#include "fake_rpc.h"
#include "netfault_i.h"
#include "rpc_encode.h"

#include <uv.h>

#include <arpa/inet.h>
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct px {
	uv_loop_t loop;
	uv_async_t stop;
	pthread_t th;
	struct nf_proxy *p;
	struct nf_ruleset *rs;
	struct nf_events *ev;
	unsigned port;
	struct nf_stats st; /* at the stop */
	struct fake_rpc *f; /* px_start_fake()'s server, stopped with the proxy */
};

static void on_stop(uv_async_t *a)
{
	struct px *x = a->data;

	nf_proxy_close(x->p);
	uv_close((uv_handle_t *)a, NULL);
}

static void *px_thread(void *arg)
{
	struct px *x = arg;

	uv_run(&x->loop, UV_RUN_DEFAULT);
	return NULL;
}

/* A proxy from an ephemeral port to up_port with rules (NULL-ended). */
static void px_start(struct px *x, unsigned up_port, const char *const *rules)
{
	char err[512];
	unsigned id;

	memset(x, 0, sizeof(*x));
	ASSERT_EQ(uv_loop_init(&x->loop), 0);
	x->rs = nf_ruleset_new();
	x->ev = nf_events_new(64);
	ASSERT_NE(x->rs, NULL);
	ASSERT_NE(x->ev, NULL);
	for (; rules && *rules; rules++) {
		if (nf_ruleset_add(x->rs, *rules, &id, err, sizeof(err)))
			TEST__FAIL("rule: %s", err);
	}
	ASSERT_EQ(nf_proxy_new(&x->loop, x->rs, x->ev, STDERR_FILENO, &x->p),
		  0);
	ASSERT_EQ(nf_proxy_listen(x->p, 0, "127.0.0.1", up_port, &x->port), 0);
	x->stop.data = x;
	ASSERT_EQ(uv_async_init(&x->loop, &x->stop, on_stop), 0);
	ASSERT_EQ(pthread_create(&x->th, NULL, px_thread, x), 0);
}

/* A fake RPC server, and a proxy to it with rules (NULL-ended). */
static void px_start_fake(struct px *x, const char *const *rules)
{
	struct fake_rpc *f = fake_rpc_start(0);

	ASSERT_NE(f, NULL);
	px_start(x, fake_rpc_port(f), rules);
	x->f = f;
}

/*
 * Stops the proxy (and px_start_fake()'s server); returns the events it
 * logged (up to max).
 */
static size_t px_stop(struct px *x, struct nf_event *out, size_t max)
{
	size_t n;

	uv_async_send(&x->stop);
	ASSERT_EQ(pthread_join(x->th, NULL), 0);
	n = nf_events_since(x->ev, 0, out, max);
	x->st = *nf_proxy_stats(x->p);
	nf_proxy_free(x->p);
	ASSERT_EQ(uv_loop_close(&x->loop), 0);
	nf_events_free(x->ev);
	nf_ruleset_free(x->rs);
	if (x->f)
		fake_rpc_stop(x->f);
	return n;
}

/* sndbuf: the client's send buffer (0: the system's). */
static int tcp_connect_buf(unsigned port, int sndbuf)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	ASSERT_GE(fd, 0);
	if (sndbuf)
		ASSERT_EQ(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf,
				     sizeof(sndbuf)),
			  0);
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ASSERT_EQ(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int tcp_connect(unsigned port)
{
	return tcp_connect_buf(port, 0);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

static uint8_t pattern(uint32_t xid, size_t i)
{
	return (uint8_t)(i * 7u + xid);
}

/* A call of prog, vers with an opaque of len pattern bytes; *rec_len set. */
static uint8_t *make_call_to(uint32_t prog, uint32_t vers, uint32_t xid,
			     uint32_t proc, size_t len, size_t *rec_len)
{
	size_t pad = (4 - len % 4) % 4, body = 44 + len + pad;
	uint8_t *r = calloc(1, 4 + body);
	uint32_t hdr[] = { xid, 0, 2, prog, vers,	  proc,
			   0,	0, 0, 0,    (uint32_t)len };

	ASSERT_NE(r, NULL);
	put32(r, RPC_LAST_FRAG | (uint32_t)body);
	for (size_t i = 0; i < 11; i++)
		put32(r + 4 + 4 * i, hdr[i]);
	for (size_t i = 0; i < len; i++)
		r[48 + i] = pattern(xid, i);
	*rec_len = 4 + body;
	return r;
}

/* A call of FAKE_PROG (the fake server's). */
static uint8_t *make_call(uint32_t xid, uint32_t proc, size_t len,
			  size_t *rec_len)
{
	return make_call_to(FAKE_PROG, FAKE_VERS, xid, proc, len, rec_len);
}

static void send_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		ASSERT_GT(n, 0);
		p += n;
		len -= (size_t)n;
	}
}

static void send_call(int fd, uint32_t xid, uint32_t proc, size_t len)
{
	size_t rl;
	uint8_t *r = make_call(xid, proc, len, &rl);

	send_all(fd, r, rl);
	free(r);
}

/* Reads exactly len bytes by deadline: 0, -ETIMEDOUT, or -EPIPE at the
 * connection's end (EOF or reset). */
static int recv_full(int fd, uint8_t *p, size_t len, uint64_t deadline)
{
	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		uint64_t now = region_now_ns();
		ssize_t n;

		if (now >= deadline)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)((deadline - now) / 1000000u) + 1) <= 0)
			continue;
		n = recv(fd, p, len, 0);
		if (n <= 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One whole record (its fragments joined) within ms; *out malloc'ed. */
static int recv_record(int fd, unsigned ms, uint8_t **out, size_t *len)
{
	uint64_t deadline = region_now_ns() + (uint64_t)ms * 1000000u;
	uint8_t mark[4], *buf = NULL;
	size_t have = 0;
	int rc;

	for (;;) {
		uint32_t m, fl;

		rc = recv_full(fd, mark, 4, deadline);
		if (rc)
			break;
		m = get32(mark);
		fl = m & ~RPC_LAST_FRAG;
		ASSERT_LE(have + fl, 2u << 20);
		buf = realloc(buf, have + fl + 1);
		ASSERT_NE(buf, NULL);
		rc = recv_full(fd, buf + have, fl, deadline);
		if (rc)
			break;
		have += fl;
		if (m & RPC_LAST_FRAG) {
			*out = buf;
			*len = have;
			return 0;
		}
	}
	free(buf);
	return rc;
}

/* An ECHO reply: its XID, and whether it carries len pattern bytes of
 * the call sent with pxid. */
static uint32_t check_echo(const uint8_t *r, size_t n, uint32_t pxid,
			   size_t len)
{
	ASSERT_GE(n, 28);
	ASSERT_EQ(get32(r + 4), 1); /* REPLY */
	ASSERT_EQ(get32(r + 8), 0); /* MSG_ACCEPTED */
	ASSERT_EQ(get32(r + 20), 0); /* SUCCESS */
	ASSERT_EQ(get32(r + 24), len);
	ASSERT_GE(n, 28 + len);
	for (size_t i = 0; i < len; i++)
		if (r[28 + i] != pattern(pxid, i))
			TEST__FAIL("byte %zu of the echo differs", i);
	return get32(r);
}

/* Sends ECHO xid of len bytes, expects its reply within ms. */
static void echo_ok(int fd, uint32_t xid, size_t len, unsigned ms)
{
	uint8_t *r;
	size_t n;

	send_call(fd, xid, FAKE_ECHO, len);
	ASSERT_EQ(recv_record(fd, ms, &r, &n), 0);
	ASSERT_EQ(check_echo(r, n, xid, len), xid);
	free(r);
}

TEST_IMPL(nf_proxy_pass_through)
{
	static const size_t sizes[] = { 0, 1, 3, 100, 4096, 65537, 1u << 20 };
	struct nf_event ev[4];
	struct px x;
	int fd;

	px_start_fake(&x, NULL);
	fd = tcp_connect(x.port);
	for (unsigned i = 0; i < 200; i++)
		echo_ok(fd, 100 + i, sizes[i % ARRAY_SIZE(sizes)] & 0x3ff,
			2000);
	for (unsigned i = 0; i < ARRAY_SIZE(sizes); i++)
		echo_ok(fd, 1000 + i, sizes[i], 5000);
	ASSERT_EQ(nf_proxy_stats(x.p)->conns, 1);
	close(fd);
	ASSERT_EQ(px_stop(&x, ev, 4), 0);
	return 0;
}

TEST_IMPL(nf_proxy_drop_nth_reply)
{
	const char *rules[] = { "drop dir=reply nth=2", NULL };
	struct nf_event ev[4];
	uint8_t *r;
	size_t n;
	struct px x;
	int fd;

	px_start_fake(&x, rules);
	fd = tcp_connect(x.port);
	echo_ok(fd, 0x11, 10, 2000);
	send_call(fd, 0x22, FAKE_ECHO, 10);
	ASSERT_EQ(recv_record(fd, 300, &r, &n), -ETIMEDOUT);
	ASSERT_EQ(fake_rpc_wait_seen(x.f, 2), true); /* the server answered */
	echo_ok(fd, 0x33, 10, 2000); /* and the next reply is the 3rd's */
	close(fd);
	ASSERT_EQ(px_stop(&x, ev, 4), 1);
	ASSERT_EQ(ev[0].fault, NF_DROP);
	ASSERT_EQ(ev[0].rule, 1);
	ASSERT_EQ(ev[0].conn, 1);
	ASSERT_EQ(ev[0].msg.xid, 0x22);
	ASSERT_EQ(ev[0].msg.dir, NF_REPLY);
	ASSERT_EQ(ev[0].msg.proc, FAKE_ECHO);
	return 0;
}

TEST_IMPL(nf_proxy_delay_reply)
{
	const char *rules[] = { "delay 200 dir=reply", NULL };
	struct nf_event ev[8];
	struct px x;
	int fd;

	px_start_fake(&x, rules);
	fd = tcp_connect(x.port);
	for (uint32_t xid = 1; xid <= 3; xid++) {
		uint64_t t0 = region_now_ns(), ms;

		echo_ok(fd, xid, 8, 3000);
		ms = (region_now_ns() - t0) / 1000000u;
		ASSERT_GE(ms, 200);
		ASSERT_LT(ms, 2000);
	}
	close(fd);
	ASSERT_EQ(px_stop(&x, ev, 8), 3);
	ASSERT_EQ(ev[2].fault, NF_DELAY);
	ASSERT_EQ(ev[2].msg.xid, 3);
	return 0;
}

TEST_IMPL(nf_proxy_duplicate_reply)
{
	const char *rules[] = { "duplicate dir=reply", NULL };
	struct nf_event ev[4];
	uint8_t *r;
	size_t n;
	struct px x;
	int fd;

	px_start_fake(&x, rules);
	fd = tcp_connect(x.port);
	send_call(fd, 0x77, FAKE_ECHO, 1000);
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(recv_record(fd, 2000, &r, &n), 0);
		ASSERT_EQ(check_echo(r, n, 0x77, 1000), 0x77);
		free(r);
	}
	ASSERT_EQ(recv_record(fd, 200, &r, &n), -ETIMEDOUT);
	ASSERT_EQ(fake_rpc_wait_seen(x.f, 1), true);
	close(fd);
	ASSERT_EQ(px_stop(&x, ev, 4), 1);
	ASSERT_EQ(ev[0].fault, NF_DUPLICATE);
	return 0;
}

/* A listening socket on an ephemeral loopback port, *port set. */
static int raw_listen(unsigned *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ASSERT_GE(lfd, 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ASSERT_EQ(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ASSERT_EQ(listen(lfd, 4), 0);
	ASSERT_EQ(getsockname(lfd, (struct sockaddr *)&sin, &sl), 0);
	*port = ntohs(sin.sin_port);
	return lfd;
}

/* A connection to port from the local port from (reset when closed). */
static int tcp_connect_from(unsigned port, unsigned from)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct linger lg = { 1, 0 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	ASSERT_GE(fd, 0);
	ASSERT_EQ(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)),
		  0);
	ASSERT_EQ(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)from);
	ASSERT_EQ(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	sin.sin_port = htons((uint16_t)port);
	ASSERT_EQ(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

/* Accepts one connection on lfd (3 s); the peer's port in *peer. */
static int accept_peer(int lfd, unsigned *peer)
{
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	struct pollfd pfd = { .fd = lfd, .events = POLLIN };
	int fd;

	ASSERT_EQ(poll(&pfd, 1, 3000), 1);
	fd = accept(lfd, (struct sockaddr *)&sin, &sl);
	ASSERT_GE(fd, 0);
	*peer = ntohs(sin.sin_port);
	{
		/* Closed with an RST too, as netfault's reset does. */
		struct linger lg = { 1, 0 };

		ASSERT_EQ(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg,
				     sizeof(lg)),
			  0);
	}
	return fd;
}

/*
 * A client that connects again from the same port reaches the server from
 * the same port as before (the server's duplicate request cache is kept
 * per client port); another client port gets another upstream port.
 */
TEST_IMPL(nf_proxy_same_port_again)
{
	unsigned up_port, from, first, again, other;
	struct nf_event ev[4];
	struct px x;
	int lfd = raw_listen(&up_port), c, s;

	px_start(&x, up_port, NULL);
	/* A port the system picks, noted for the next connections. */
	c = tcp_connect_from(x.port, 0);
	{
		struct sockaddr_in sin;
		socklen_t sl = sizeof(sin);

		ASSERT_EQ(getsockname(c, (struct sockaddr *)&sin, &sl), 0);
		from = ntohs(sin.sin_port);
	}
	s = accept_peer(lfd, &first);
	close(c);
	close(s);
	test_sleep_ms(50);
	/* The same client port again, after a reset, three times. */
	for (int i = 0; i < 3; i++) {
		c = tcp_connect_from(x.port, from);
		s = accept_peer(lfd, &again);
		ASSERT_EQ(again, first);
		close(c); /* SO_LINGER 0: an RST */
		close(s);
		test_sleep_ms(50);
	}
	c = tcp_connect(x.port);
	s = accept_peer(lfd, &other);
	ASSERT_NE(other, first);
	close(c);
	close(s);
	close(lfd);
	px_stop(&x, ev, 4);
	return 0;
}

/* Reads fd until it ends or ms pass without a byte; returns the bytes. */
static size_t drain(int fd, uint8_t *buf, size_t cap, unsigned ms, bool *ended)
{
	size_t got = 0;

	*ended = false;
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, (int)ms) != 1)
			return got;
		n = recv(fd, buf + got, cap - got, 0);
		if (n <= 0) {
			*ended = true;
			return got;
		}
		got += (size_t)n;
		ASSERT_LT(got, cap);
	}
}

/* A raw upstream: the test sees exactly what the server side receives. */
TEST_IMPL(nf_proxy_reset_mid_record)
{
	const char *rules[] = { "reset dir=call after=100", NULL };
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	uint8_t buf[4096];
	struct nf_event ev[4];
	size_t got = 0;
	struct px x;
	int lfd, sfd, fd, rc;

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ASSERT_EQ(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ASSERT_EQ(listen(lfd, 4), 0);
	ASSERT_EQ(getsockname(lfd, (struct sockaddr *)&sin, &sl), 0);
	px_start(&x, ntohs(sin.sin_port), rules);
	fd = tcp_connect(x.port);
	send_call(fd, 0x99, FAKE_ECHO, 1000);
	sfd = accept(lfd, NULL, NULL);
	ASSERT_GE(sfd, 0);
	for (;;) {
		struct pollfd pfd = { .fd = sfd, .events = POLLIN };
		ssize_t n;

		ASSERT_EQ(poll(&pfd, 1, 3000), 1);
		n = recv(sfd, buf, sizeof(buf), 0);
		if (n <= 0)
			break; /* EOF or ECONNRESET: the server side ended */
		got += (size_t)n;
	}
	ASSERT_EQ(got, 100);
	rc = recv_full(fd, buf, 1, region_now_ns() + 3000000000u);
	ASSERT_EQ(rc, -EPIPE); /* the client side ended too */
	close(fd);
	close(sfd);
	close(lfd);
	ASSERT_EQ(px_stop(&x, ev, 4), 1);
	ASSERT_EQ(ev[0].fault, NF_RESET);
	ASSERT_EQ(ev[0].msg.xid, 0x99);
	return 0;
}

/*
 * While the stall is on, the proxy reads nothing of the client: the
 * client's send queue fills and its send would block; once the stall ends
 * the call goes through and is answered.
 */
TEST_IMPL(nf_proxy_stall_blocks_sender)
{
	const char *rules[] = { "stall dir=call for=1s", NULL };
	struct nf_event ev[4];
	size_t rl, off = 0, len = 1u << 20;
	uint8_t *rec = make_call(5, FAKE_ECHO, len, &rl), *r;
	uint64_t t0 = region_now_ns();
	bool blocked = false;
	struct px x;
	size_t n;
	int fd, outq = 0;

	px_start_fake(&x, rules);
	fd = tcp_connect_buf(x.port, 16384);
	while (off < rl) {
		ssize_t w = send(fd, rec + off, rl - off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w < 0) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };

			ASSERT_EQ(errno, EAGAIN);
			if (!blocked) {
				blocked = true;
				ASSERT_EQ(ioctl(fd, SIOCOUTQ, &outq), 0);
				ASSERT_GT(outq, 0);
				ASSERT_EQ(fake_rpc_bytes(x.f), 0);
			}
			ASSERT_GE(poll(&pfd, 1, 3000), 0);
			continue;
		}
		off += (size_t)w;
	}
	ASSERT_EQ(blocked, true);
	ASSERT_EQ(recv_record(fd, 5000, &r, &n), 0);
	ASSERT_EQ(check_echo(r, n, 5, len), 5);
	ASSERT_GE((region_now_ns() - t0) / 1000000u, 900);
	free(r);
	free(rec);
	close(fd);
	ASSERT_EQ(px_stop(&x, ev, 4), 1);
	ASSERT_EQ(ev[0].fault, NF_STALL);
	ASSERT_EQ(ev[0].msg.dir, NF_CALL);
	return 0;
}

/* The binary refuses a bad rule or option: exit 2 and a clear message. */
TEST_IMPL(nf_proxy_cli_errors)
{
	static const struct {
		const char *args, *says;
	} cases[] = {
		{ "--listen 13599=127.0.0.1:1 --rule 'drop proc=WRTE'",
		  "column 11" },
		{ "--listen 13599=127.0.0.1:1 --rule 'drop proc=WRTE'",
		  "           ^" },
		{ "--listen 13599", "bad --listen" },
		{ "--rule drop", "no --listen" },
		{ "--listen 1=127.0.0.1:2 --bogus", "bogus" },
		{ "--listen 1=127.0.0.1:2 --seed x", "bad --seed" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char cmd[512], out[4096];
		size_t n;
		FILE *p;
		int st;

		snprintf(cmd, sizeof(cmd), "'%s' %s 2>&1", NF_NETFAULT_BIN,
			 cases[i].args);
		p = popen(cmd, "r");
		ASSERT_NE(p, NULL);
		n = fread(out, 1, sizeof(out) - 1, p);
		out[n] = '\0';
		st = pclose(p);
		ASSERT_EQ(WIFEXITED(st), 1);
		ASSERT_EQ(WEXITSTATUS(st), 2);
		ASSERT_CONTAINS(out, cases[i].says);
	}
	return 0;
}

/* The 1st reply is held until one later reply passed: 2 comes first. */
TEST_IMPL(nf_proxy_reorder_reply)
{
	const char *rules[] = { "reorder 1 dir=reply nth=1", NULL };
	struct nf_event ev[4];
	uint8_t *r;
	size_t n;
	struct px x;
	int fd;

	px_start_fake(&x, rules);
	fd = tcp_connect(x.port);
	send_call(fd, 1, FAKE_ECHO, 16);
	ASSERT_EQ(fake_rpc_wait_seen(x.f, 1), true);
	send_call(fd, 2, FAKE_ECHO, 16);
	for (uint32_t want = 2; want >= 1; want--) {
		ASSERT_EQ(recv_record(fd, 2000, &r, &n), 0);
		ASSERT_EQ(check_echo(r, n, want, 16), want);
		free(r);
	}
	echo_ok(fd, 3, 16, 2000);
	close(fd);
	ASSERT_EQ(px_stop(&x, ev, 4), 1);
	ASSERT_EQ(ev[0].fault, NF_REORDER);
	ASSERT_EQ(ev[0].msg.xid, 1);
	return 0;
}

/* Sliced records still arrive whole and byte-identical. */
TEST_IMPL(nf_proxy_slice)
{
	static const struct {
		const char *rule;
		size_t len;
	} cases[] = {
		{ "slice 1", 64 },
		{ "slice 1000 dir=reply", 70000 },
		{ "slice 3 dir=call", 1000 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *rules[] = { cases[i].rule, NULL };
		struct nf_event ev[4];
		struct px x;
		int fd;

		px_start_fake(&x, rules);
		fd = tcp_connect(x.port);
		echo_ok(fd, 40 + (uint32_t)i, cases[i].len, 5000);
		close(fd);
		ASSERT_GE(px_stop(&x, ev, 4), 1);
		ASSERT_EQ(ev[0].fault, NF_SLICE);
	}
	return 0;
}

/* corrupt flips exactly one byte, in the body or in the RPC header. */
TEST_IMPL(nf_proxy_corrupt)
{
	static const struct {
		const char *rule;
		size_t lo, hi; /* where the flipped byte may be in the reply */
	} cases[] = {
		{ "corrupt dir=reply", 24, 28 + 200 },
		{ "corrupt header dir=reply", 0, 24 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *rules[] = { cases[i].rule, NULL };
		uint8_t *r, *want;
		size_t n, rl, diff = 0, at = 0;
		struct nf_event ev[4];
		struct px x;
		int fd;

		px_start_fake(&x, rules);
		fd = tcp_connect(x.port);
		send_call(fd, 9, FAKE_ECHO, 200);
		ASSERT_EQ(recv_record(fd, 2000, &r, &n), 0);
		ASSERT_EQ(n, 28 + 200);
		/* The reply as the server sent it: a call's body after
		 * its 40-byte header is the same opaque. */
		want = make_call(9, FAKE_ECHO, 200, &rl);
		for (size_t k = 0; k < n; k++) {
			static const uint8_t hdr[24] = {
				0, 0, 0, 9, 0, 0, 0, 1
			};
			uint8_t w = k < 24 ? hdr[k] : want[4 + 40 + k - 24];

			if (r[k] != w) {
				diff++;
				at = k;
			}
		}
		ASSERT_EQ(diff, 1);
		ASSERT_GE(at, cases[i].lo);
		ASSERT_LT(at, cases[i].hi);
		free(want);
		free(r);
		close(fd);
		ASSERT_EQ(px_stop(&x, ev, 4), 1);
		ASSERT_EQ(ev[0].fault, NF_CORRUPT);
	}
	return 0;
}

/*
 * A READ reply of len pattern bytes (with attributes or not, status
 * NFS3_OK or not), written as frags fragments; returns the body's length.
 */
static size_t send_read_reply(int fd, uint32_t xid, bool attrs, uint32_t status,
			      size_t len, unsigned frags)
{
	/* The RPC header, the status, post_op_attr, then READ3resok's rest. */
	size_t data = status ? 0 : 12 + (len + 3) / 4 * 4;
	size_t body = 24 + 4 + 4 + (attrs && !status ? 84 : 0) + data;
	uint8_t *b = calloc(1, body), *w = calloc(1, body + 4 * frags);
	size_t o, wl = 0, at = 0;

	ASSERT_NE(b, NULL);
	ASSERT_NE(w, NULL);
	put32(b, xid);
	put32(b + 4, 1); /* REPLY */
	/* MSG_ACCEPTED, AUTH_NONE verifier, SUCCESS: zeros. */
	o = 24;
	put32(b + o, status);
	o += 4;
	if (!status) {
		put32(b + o, attrs);
		o += 4;
		for (size_t i = 0; attrs && i < 84; i++)
			b[o++] = (uint8_t)(0xa0 + i);
		put32(b + o, (uint32_t)len); /* count */
		put32(b + o + 4, 1); /* eof */
		put32(b + o + 8, (uint32_t)len);
		o += 12;
		for (size_t i = 0; i < len; i++)
			b[o + i] = pattern(xid, i);
	}
	for (unsigned f = 0; f < frags; f++) {
		size_t fl = f + 1 < frags ? body / frags : body - at;

		put32(w + wl,
		      (f + 1 == frags ? RPC_LAST_FRAG : 0) | (uint32_t)fl);
		memcpy(w + wl + 4, b + at, fl);
		wl += 4 + fl;
		at += fl;
	}
	send_all(fd, w, wl);
	free(b);
	free(w);
	return body;
}

/*
 * short-read cuts an NFSv3 READ reply's data to BYTES: count, eof and the
 * length say so, the bytes kept are the first ones, the padding is zeros,
 * and the record comes as one fragment whatever it came in.  A reply with
 * no more data, a failed READ and another procedure's reply pass as they
 * came.
 */
TEST_IMPL(nf_proxy_short_read)
{
	static const struct {
		uint32_t keep;
		bool attrs;
		uint32_t status, proc;
		size_t len;
		unsigned frags;
		bool cut;
	} cases[] = {
		{ 1000, true, 0, 6, 5000, 1, true },
		{ 1001, false, 0, 6, 5000, 3, true },
		{ 0, true, 0, 6, 4096, 2, true },
		{ 5000, true, 0, 6, 5000, 1, false },
		{ 10, true, 70, 6, 0, 1, false }, /* NFS3ERR_STALE */
		{ 10, true, 0, 7, 5000, 1, false }, /* WRITE's: not READ */
	};
	unsigned up_port;
	int lfd = raw_listen(&up_port);

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char rule[64];
		const char *rules[] = { rule, NULL };
		uint32_t xid = 0x100 + (uint32_t)i, keep = cases[i].keep;
		uint8_t *call, *got;
		size_t cl, n, body, o;
		struct nf_event ev[4];
		unsigned peer;
		struct px x;
		int c, s;

		snprintf(rule, sizeof(rule), "short-read %u", keep);
		px_start(&x, up_port, rules);
		c = tcp_connect(x.port);
		s = accept_peer(lfd, &peer);
		call = make_call_to(100003, 3, xid, cases[i].proc, 0, &cl);
		send_all(c, call, cl);
		ASSERT_EQ(recv_record(s, 2000, &got, &n), 0);
		ASSERT_EQ(n, cl - 4);
		free(got);
		body = send_read_reply(s, xid, cases[i].attrs, cases[i].status,
				       cases[i].len, cases[i].frags);
		ASSERT_EQ(recv_record(c, 2000, &got, &n), 0);
		ASSERT_EQ(get32(got), xid);
		o = 24 + 4 + (cases[i].attrs ? 88 : 4);
		if (!cases[i].cut) {
			ASSERT_EQ(n, body);
		} else {
			ASSERT_EQ(n, o + 12 + (keep + 3) / 4 * 4);
			ASSERT_EQ(get32(got + o), keep); /* count */
			ASSERT_EQ(get32(got + o + 4), 0); /* eof */
			ASSERT_EQ(get32(got + o + 8), keep);
			for (size_t k = 0; k < keep; k++)
				ASSERT_EQ(got[o + 12 + k], pattern(xid, k));
			for (size_t k = keep; k % 4; k++)
				ASSERT_EQ(got[o + 12 + k], 0);
			/* The attributes as they were. */
			for (size_t k = 0; cases[i].attrs && k < 84; k++)
				ASSERT_EQ(got[32 + k], 0xa0 + k);
		}
		free(got);
		free(call);
		close(c);
		close(s);
		n = px_stop(&x, ev, 4);
		/* Applied to every READ reply, cut or not. */
		ASSERT_EQ(n, cases[i].proc == 6 ? 1u : 0u);
		if (n)
			ASSERT_EQ(ev[0].fault, NF_SHORT_READ);
	}
	close(lfd);
	return 0;
}

/* blackhole: the call goes in, nothing comes back. */
TEST_IMPL(nf_proxy_blackhole)
{
	const char *rules[] = { "blackhole dir=reply", NULL };
	struct nf_event ev[4];
	uint8_t *r;
	size_t n;
	struct px x;
	int fd;

	px_start_fake(&x, rules);
	fd = tcp_connect(x.port);
	send_call(fd, 1, FAKE_ECHO, 16);
	ASSERT_EQ(fake_rpc_wait_seen(x.f, 1), true);
	ASSERT_EQ(recv_record(fd, 300, &r, &n), -ETIMEDOUT);
	close(fd);
	ASSERT_EQ(px_stop(&x, ev, 4), 1);
	ASSERT_EQ(ev[0].fault, NF_BLACKHOLE);
	ASSERT_EQ(x.st.records[NF_REPLY], 1);
	ASSERT_EQ(x.st.bytes[NF_REPLY], 0);
	return 0;
}

/* refuse: a connection is ended at once; once off, they go through. */
TEST_IMPL(nf_proxy_refuse)
{
	const char *rules[] = { "refuse for=300ms", NULL };
	struct nf_event ev[4];
	uint8_t b;
	struct px x;
	int fd;

	px_start_fake(&x, rules);
	fd = tcp_connect(x.port);
	ASSERT_EQ(recv_full(fd, &b, 1, region_now_ns() + 2000000000u), -EPIPE);
	close(fd);
	ASSERT_EQ(fake_rpc_conns(x.f), 0);
	test_sleep_ms(350); /* the rule's window, not a wait for an event */
	fd = tcp_connect(x.port);
	echo_ok(fd, 1, 8, 2000);
	close(fd);
	ASSERT_EQ(px_stop(&x, ev, 4), 1);
	ASSERT_EQ(ev[0].fault, NF_REFUSE);
	return 0;
}

/* close-after: exactly BYTES go through, then the connection ends. */
TEST_IMPL(nf_proxy_close_after)
{
	const char *rules[] = { "close-after 100 dir=reply", NULL };
	struct nf_event ev[4];
	uint8_t buf[4096];
	bool ended;
	struct px x;
	int fd;

	px_start_fake(&x, rules);
	fd = tcp_connect(x.port);
	send_call(fd, 1, FAKE_ECHO, 1000);
	ASSERT_EQ(drain(fd, buf, sizeof(buf), 3000, &ended), 100);
	ASSERT_EQ(ended, true);
	close(fd);
	ASSERT_EQ(px_stop(&x, ev, 4), 1);
	ASSERT_EQ(ev[0].fault, NF_CLOSE_AFTER);
	return 0;
}

/* throttle 512 KiB/s: a 512 KiB reply takes about a second. */
TEST_IMPL(nf_proxy_throttle)
{
	const char *rules[] = { "throttle 512 dir=reply", NULL };
	struct nf_event ev[4];
	uint64_t t0, ms;
	struct px x;
	int fd;

	px_start_fake(&x, rules);
	fd = tcp_connect(x.port);
	t0 = region_now_ns();
	echo_ok(fd, 1, 512 * 1024, 5000);
	ms = (region_now_ns() - t0) / 1000000u;
	ASSERT_GE(ms, 800);
	ASSERT_LT(ms, 4000);
	close(fd);
	ASSERT_EQ(px_stop(&x, ev, 4), 1);
	ASSERT_EQ(ev[0].fault, NF_THROTTLE);
	return 0;
}

/* A stream that is not RPC (a mark past NF_RECORD_MAX) goes through
 * byte for byte, unparsed, and is counted. */
TEST_IMPL(nf_proxy_unparsed)
{
	uint8_t junk[20000], got[40000];
	struct nf_event ev[4];
	unsigned up;
	bool ended;
	struct px x;
	int lfd = raw_listen(&up), sfd, fd;

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 13u);
	put32(junk, 0x7ffffff0u); /* a first fragment far too long */
	px_start(&x, up, NULL);
	fd = tcp_connect(x.port);
	send_all(fd, junk, sizeof(junk));
	shutdown(fd, SHUT_WR);
	sfd = accept(lfd, NULL, NULL);
	ASSERT_GE(sfd, 0);
	ASSERT_EQ(drain(sfd, got, sizeof(got), 3000, &ended), sizeof(junk));
	ASSERT_EQ(ended, true);
	ASSERT_MEM_EQ(got, junk, sizeof(junk));
	close(sfd);
	close(fd);
	close(lfd);
	ASSERT_EQ(px_stop(&x, ev, 4), 0);
	ASSERT_EQ(x.st.unparsed[NF_CALL], 1);
	ASSERT_EQ(x.st.bytes[NF_CALL], sizeof(junk));
	return 0;
}

/*
 * A server that never reads: the proxy stops reading the client once its
 * queue is full, so the client's sends block long before 96 MiB, whatever
 * the kernel's buffers hold (without the bound the proxy would take it
 * all).
 */
TEST_IMPL(nf_proxy_bounded_queue)
{
	static uint8_t chunk[65536];
	size_t sent = 0, limit = 96u << 20;
	struct nf_event ev[4];
	unsigned up;
	struct px x;
	int lfd = raw_listen(&up), sfd, fd;
	bool blocked = false;

	memset(chunk, 0xa5, sizeof(chunk));
	put32(chunk, 0x7ffffff0u); /* not RPC: all of it goes unparsed */
	px_start(&x, up, NULL);
	fd = tcp_connect(x.port);
	sfd = accept(lfd, NULL, NULL);
	ASSERT_GE(sfd, 0);
	while (sent < limit) {
		ssize_t w = send(fd, chunk, sizeof(chunk),
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w < 0) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };

			ASSERT_EQ(errno, EAGAIN);
			/* Stuck for 500 ms: the proxy stopped reading. */
			if (poll(&pfd, 1, 500) == 0) {
				blocked = true;
				break;
			}
			continue;
		}
		sent += (size_t)w;
	}
	ASSERT_EQ(blocked, true);
	ASSERT_LT(sent, limit);
	close(fd);
	close(sfd);
	close(lfd);
	ASSERT_EQ(px_stop(&x, ev, 4), 0);
	return 0;
}
