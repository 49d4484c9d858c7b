/*
 * The fake ONC RPC server of fake_rpc.h: one thread, a poll() loop over the
 * listening socket, the connections and a wakeup eventfd.  It decodes calls
 * with libtirpc's XDR like any server, answers according to the knobs, and
 * encodes its replies with rpc_encode.h.  Its receive buffer is small, so
 * that a client's send blocks soon after the server stops reading.
 *
 * One lock, f->lock, a leaf: the knobs, what was seen and the counters,
 * which the test reads while the server thread writes them.  The
 * connections and the replies held back are the server thread's alone.
 * The thread waits only in poll(): its sockets are non-blocking.
 */
#include "fake_rpc.h"

#include "rpc_encode.h"

#include <intrfs/region.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <rpc/rpc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FAKE_XDRPROC(f) ((xdrproc_t)(void (*)(void))(f))
#define MAX_CONNS 8
#define MAX_SEEN 4096
#define MAX_PENDING 256
#define RCVBUF (64 * 1024)

struct fconn {
	int fd;
	unsigned id;
	uint16_t port;
	unsigned char *buf;
	size_t len, cap;
};

struct pending {
	uint64_t due;
	unsigned conn;
	unsigned char *rec;
	size_t len;
};

struct fake_rpc {
	int lfd, efd;
	uint16_t port;
	pthread_t th;
	pthread_mutex_t lock;
	/* protected by lock */
	long knobs[FAKE_SPLIT_MS + 1];
	struct fake_seen seen[MAX_SEEN];
	unsigned nseen, nconns;
	uint64_t bytes;
	bool stop;
	/* the server thread's own */
	struct fconn conns[MAX_CONNS];
	struct pending pend[MAX_PENDING];
	unsigned npend;
};

static void kick(struct fake_rpc *f)
{
	uint64_t one = 1;
	ssize_t n = write(f->efd, &one, sizeof(one));

	(void)n;
}

static void *serve(void *arg);

struct fake_rpc *fake_rpc_start(uint16_t port)
{
	struct fake_rpc *f = calloc(1, sizeof(*f));
	struct sockaddr_in a = { 0 };
	socklen_t alen = sizeof(a);
	int one = 1, rcv = RCVBUF;

	if (!f)
		return NULL;
	pthread_mutex_init(&f->lock, NULL);
	f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(f->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(f->lfd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(port);
	if (bind(f->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(f->lfd, 8) < 0 ||
	    getsockname(f->lfd, (struct sockaddr *)&a, &alen) < 0) {
		close(f->lfd);
		free(f);
		return NULL;
	}
	f->port = ntohs(a.sin_port);
	f->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	for (unsigned i = 0; i < MAX_CONNS; i++)
		f->conns[i].fd = -1;
	if (pthread_create(&f->th, NULL, serve, f) != 0) {
		close(f->lfd);
		close(f->efd);
		free(f);
		return NULL;
	}
	return f;
}

uint16_t fake_rpc_port(const struct fake_rpc *f)
{
	return f->port;
}

void fake_rpc_set(struct fake_rpc *f, enum fake_knob k, long value)
{
	pthread_mutex_lock(&f->lock);
	f->knobs[k] = value;
	pthread_mutex_unlock(&f->lock);
	kick(f);
}

/* Takes one unit of a counting knob; true if it was set. */
static bool take(struct fake_rpc *f, enum fake_knob k)
{
	bool set;

	pthread_mutex_lock(&f->lock);
	set = f->knobs[k] > 0;
	if (set)
		f->knobs[k]--;
	pthread_mutex_unlock(&f->lock);
	return set;
}

static long knob(struct fake_rpc *f, enum fake_knob k)
{
	long v;

	pthread_mutex_lock(&f->lock);
	v = f->knobs[k];
	pthread_mutex_unlock(&f->lock);
	return v;
}

unsigned fake_rpc_seen(struct fake_rpc *f, struct fake_seen *out, unsigned max)
{
	unsigned n;

	pthread_mutex_lock(&f->lock);
	n = f->nseen;
	if (out)
		memcpy(out, f->seen, sizeof(*out) * (n < max ? n : max));
	pthread_mutex_unlock(&f->lock);
	return n;
}

unsigned fake_rpc_conns(struct fake_rpc *f)
{
	unsigned n;

	pthread_mutex_lock(&f->lock);
	n = f->nconns;
	pthread_mutex_unlock(&f->lock);
	return n;
}

uint64_t fake_rpc_bytes(struct fake_rpc *f)
{
	uint64_t n;

	pthread_mutex_lock(&f->lock);
	n = f->bytes;
	pthread_mutex_unlock(&f->lock);
	return n;
}

bool fake_rpc_wait_seen(struct fake_rpc *f, unsigned n)
{
	uint64_t end = region_now_ns() + 5000000000ull;

	while (fake_rpc_seen(f, NULL, 0) < n) {
		if (region_now_ns() > end)
			return false;
		usleep(1000);
	}
	return true;
}

static void send_all(int fd, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			struct pollfd pf = { fd, POLLOUT, 0 };

			poll(&pf, 1, 100);
			continue;
		}
		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

static struct fconn *conn_by_id(struct fake_rpc *f, unsigned id)
{
	for (unsigned i = 0; i < MAX_CONNS; i++)
		if (f->conns[i].fd >= 0 && f->conns[i].id == id)
			return &f->conns[i];
	return NULL;
}

bool_t fake_xdr_blob(XDR *xdrs, void *blob)
{
	struct fake_blob *b = blob;

	return xdr_bytes(xdrs, &b->val, &b->len, ~0u);
}

/* A reply record (mark included) for xid with results, in *out. */
static size_t build_reply(uint32_t xid, xdrproc_t proc, void *where,
			  unsigned char **out)
{
	size_t cap = rpc_reply_max(proc, where, 1), len;
	unsigned char *rec = malloc(cap);

	if (!rec)
		abort();
	len = rpc_encode_reply(rec, cap, xid, proc, where, 1);
	if (len == 0)
		abort();
	*out = rec;
	return len;
}

/* Queues len bytes of rec (taken over) for c, ms milliseconds from now. */
static void pend_add(struct fake_rpc *f, struct fconn *c, unsigned char *rec,
		     size_t len, long ms)
{
	struct pending *p = &f->pend[f->npend++];

	p->due = region_now_ns() + (uint64_t)ms * 1000000u;
	p->conn = c->id;
	p->rec = rec;
	p->len = len;
}

static void answer(struct fake_rpc *f, struct fconn *c, unsigned char *rec,
		   size_t len)
{
	long delay = knob(f, FAKE_DELAY_MS), split = knob(f, FAKE_SPLIT_MS);

	if (split > 0 && len > 8 && f->npend < MAX_PENDING) {
		size_t half = len / 2;
		unsigned char *rest = malloc(len - half);

		if (!rest)
			abort();
		memcpy(rest, rec + half, len - half);
		send_all(c->fd, rec, half);
		free(rec);
		pend_add(f, c, rest, len - half, split);
		return;
	}
	if (delay > 0 && f->npend < MAX_PENDING) {
		pend_add(f, c, rec, len, delay);
		return;
	}
	send_all(c->fd, rec, len);
	free(rec);
}

static void handle_call(struct fake_rpc *f, struct fconn *c, unsigned char *msg,
			size_t len)
{
	char cred[MAX_AUTH_BYTES], verf[MAX_AUTH_BYTES];
	struct fake_blob body = { NULL, 0 };
	struct fake_seen s = { 0 };
	unsigned char *rec;
	struct rpc_msg m;
	size_t rlen;
	XDR x;

	memset(&m, 0, sizeof(m));
	m.rm_call.cb_cred.oa_base = cred;
	m.rm_call.cb_verf.oa_base = verf;
	xdrmem_create(&x, (char *)msg, (u_int)len, XDR_DECODE);
	if (!xdr_callmsg(&x, &m) || m.rm_direction != CALL)
		return;
	if (m.rm_call.cb_proc != FAKE_NULL && !fake_xdr_blob(&x, &body))
		return;
	s.xid = m.rm_xid;
	s.proc = (uint32_t)m.rm_call.cb_proc;
	s.conn = c->id;
	s.peer_port = c->port;
	s.len = body.len;
	pthread_mutex_lock(&f->lock);
	if (f->nseen < MAX_SEEN)
		f->seen[f->nseen++] = s;
	pthread_mutex_unlock(&f->lock);

	if (take(f, FAKE_DROP))
		goto out;
	if (take(f, FAKE_GARBAGE)) {
		unsigned char junk[40];
		uint32_t v[3] = { rpc_mark(sizeof(junk) - 4, true),
				  htonl(s.xid), htonl(REPLY) };

		/* A record whose XID matches, then nonsense. */
		memcpy(junk, v, sizeof(v));
		memset(junk + 12, 0xee, sizeof(junk) - 12);
		send_all(c->fd, junk, sizeof(junk));
		goto out;
	}
	if (take(f, FAKE_OVERSIZE)) {
		uint32_t v[2] = { rpc_mark(100000000u, true), htonl(s.xid) };

		send_all(c->fd, v, sizeof(v));
		goto out;
	}
	if (take(f, FAKE_STRAY_XID)) {
		rlen = build_reply(s.xid + 7777, FAKE_XDRPROC(xdr_void), NULL,
				   &rec);
		send_all(c->fd, rec, rlen);
		free(rec);
	}
	if (s.proc == FAKE_ECHO)
		rlen = build_reply(s.xid, FAKE_XDRPROC(fake_xdr_blob), &body,
				   &rec);
	else
		rlen = build_reply(s.xid, FAKE_XDRPROC(xdr_void), NULL, &rec);
	answer(f, c, rec, rlen);
out:
	free(body.val);
}

/* Consumes complete records in c->buf. */
static void parse(struct fake_rpc *f, struct fconn *c)
{
	size_t off = 0;

	for (;;) {
		uint32_t mark;
		size_t flen;

		if (c->len - off < 4)
			break;
		memcpy(&mark, c->buf + off, 4);
		flen = rpc_mark_len(mark);
		if (c->len - off - 4 < flen)
			break;
		/* The client sends single-fragment records. */
		handle_call(f, c, c->buf + off + 4, flen);
		off += 4 + flen;
	}
	memmove(c->buf, c->buf + off, c->len - off);
	c->len -= off;
}

static void conn_close(struct fconn *c)
{
	close(c->fd);
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
	c->len = c->cap = 0;
}

static void accept_one(struct fake_rpc *f)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	int fd = accept4(f->lfd, (struct sockaddr *)&a, &alen,
			 SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return;
	for (unsigned i = 0; i < MAX_CONNS; i++) {
		if (f->conns[i].fd < 0) {
			pthread_mutex_lock(&f->lock);
			f->conns[i].id = ++f->nconns;
			pthread_mutex_unlock(&f->lock);
			f->conns[i].fd = fd;
			f->conns[i].port = ntohs(a.sin_port);
			return;
		}
	}
	close(fd);
}

static void read_conn(struct fake_rpc *f, struct fconn *c)
{
	ssize_t n;

	if (c->cap - c->len < 65536) {
		size_t cap = c->cap ? c->cap * 2 : 1 << 20;
		unsigned char *p = realloc(c->buf, cap);

		if (!p)
			abort();
		c->buf = p;
		c->cap = cap;
	}
	n = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(c);
		return;
	}
	c->len += (size_t)n;
	pthread_mutex_lock(&f->lock);
	f->bytes += (uint64_t)n;
	pthread_mutex_unlock(&f->lock);
	parse(f, c);
}

static void send_due(struct fake_rpc *f, int *timeout_ms)
{
	uint64_t now = region_now_ns();

	*timeout_ms = -1;
	for (unsigned i = 0; i < f->npend;) {
		struct pending *p = &f->pend[i];

		if (p->due <= now) {
			struct fconn *c = conn_by_id(f, p->conn);

			if (c)
				send_all(c->fd, p->rec, p->len);
			free(p->rec);
			f->pend[i] = f->pend[--f->npend];
			continue;
		}
		if (*timeout_ms < 0 ||
		    (int)((p->due - now) / 1000000u) + 1 < *timeout_ms)
			*timeout_ms = (int)((p->due - now) / 1000000u) + 1;
		i++;
	}
}

static void *serve(void *arg)
{
	struct fake_rpc *f = arg;

	for (;;) {
		struct pollfd p[2 + MAX_CONNS];
		struct fconn *pc[MAX_CONNS];
		unsigned n = 2, nc = 0;
		bool stalled = knob(f, FAKE_STALL) != 0;
		int timeout;

		pthread_mutex_lock(&f->lock);
		if (f->stop) {
			pthread_mutex_unlock(&f->lock);
			break;
		}
		pthread_mutex_unlock(&f->lock);
		send_due(f, &timeout);
		p[0] = (struct pollfd){ f->efd, POLLIN, 0 };
		p[1] = (struct pollfd){ f->lfd, POLLIN, 0 };
		for (unsigned i = 0; i < MAX_CONNS; i++) {
			if (f->conns[i].fd < 0 || stalled)
				continue;
			pc[nc++] = &f->conns[i];
			p[n++] = (struct pollfd){ f->conns[i].fd, POLLIN, 0 };
		}
		if (poll(p, n, timeout) < 0)
			continue;
		if (p[0].revents) {
			uint64_t v;
			ssize_t r = read(f->efd, &v, sizeof(v));

			(void)r;
		}
		if (p[1].revents)
			accept_one(f);
		for (unsigned i = 0; i < nc; i++)
			if (p[2 + i].revents && pc[i]->fd >= 0)
				read_conn(f, pc[i]);
	}
	return NULL;
}

void fake_rpc_stop(struct fake_rpc *f)
{
	pthread_mutex_lock(&f->lock);
	f->stop = true;
	pthread_mutex_unlock(&f->lock);
	kick(f);
	pthread_join(f->th, NULL);
	for (unsigned i = 0; i < MAX_CONNS; i++)
		if (f->conns[i].fd >= 0)
			conn_close(&f->conns[i]);
	for (unsigned i = 0; i < f->npend; i++)
		free(f->pend[i].rec);
	close(f->lfd);
	close(f->efd);
	pthread_mutex_destroy(&f->lock);
	free(f);
}
