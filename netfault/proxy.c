/*
 * netfault's proxy on libuv's loop: this file owns the listeners, the
 * connection pairs (a client accepted on a listener and the connection
 * made for it to the upstream server), the bytes queued between the two
 * sides of a pair, and the faults applied to them.  Each direction of a
 * pair (a "half": it reads one socket and writes the other) parses what it
 * reads with rpc.c's nf_stream, sends every record through every rule of
 * the ruleset in order, and queues the record with the record faults
 * decided for it; its queue is then written out in order, a delayed record
 * holding the ones after it and a reordered one stepping aside until
 * enough later records passed.  Stream faults (stall, throttle, blackhole,
 * close-after, refuse) are looked up on a 25 ms tick, when a connection
 * starts and whenever a rule is added or removed, and act while their
 * schedule says so.
 *
 * It never blocks and never spins: all waiting is libuv's (reads, writes,
 * one timer per half, the tick).  Memory per pair is bounded whatever the
 * peers send: a half stops reading once NF_QUEUE_MAX bytes wait to be
 * written and reads again when half of that drained; the parser holds at
 * most NF_WIRE_MAX, and the copy of the bytes it has not yet returned as
 * records (kept so that a stream given up on, -EPROTO, is forwarded whole,
 * unparsed) as much plus one read.  Everything runs on the one loop
 * thread: no locks.
 */
#include "netfault_i.h"

#include <uv.h>

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define READ_CHUNK 65536u
#define TICK_MS 25u
#define XIDS_MAX 1024u
/* The client ports a listener remembers the upstream port of. */
#define PORTS_MAX 64u

/* The stream faults a half can be under, each with the id of its rule. */
enum { SF_STALL, SF_THROTTLE, SF_BLACKHOLE, SF_CLOSE_AFTER, SF_N };

static const enum nf_fault sf_fault[SF_N] = {
	[SF_STALL] = NF_STALL,
	[SF_THROTTLE] = NF_THROTTLE,
	[SF_BLACKHOLE] = NF_BLACKHOLE,
	[SF_CLOSE_AFTER] = NF_CLOSE_AFTER,
};

/* One record (or a run of unparsed bytes) waiting to be written. */
struct seg {
	struct seg *next;
	uint8_t *buf;
	size_t len, off; /* off: bytes written so far */
	uint64_t due_ns; /* delay: not written before */
	unsigned hold; /* reorder: records still to pass it */
	size_t slice; /* 0: in one write */
	bool reset; /* RST both sides once reset_at bytes went */
	size_t reset_at;
	bool record; /* a parsed record: it counts for reorder */
};

struct half;

struct wreq {
	uv_write_t req;
	struct half *h;
	size_t len;
	bool slice, then_reset;
	uint8_t data[];
};

struct pair;

struct half {
	struct pair *pair;
	enum nf_dir dir;
	uv_tcp_t *src, *dst;
	struct nf_stream *st;
	bool broken; /* the parser gave up: bytes go through unparsed */
	/* The bytes read and not yet returned by the parser as records. */
	uint8_t *mirror;
	size_t mstart, mlen, mcap;
	struct seg *head;
	size_t queued; /* in segs not yet written and in writes in flight */
	unsigned inflight;
	bool slicing; /* a slice is being written: the next waits for it */
	bool reading, eof, shut;
	uv_timer_t timer;
	uv_shutdown_t sreq;
	unsigned active[SF_N]; /* rule ids; 0: not under that fault */
	uint64_t kibps, close_after;
	double tokens; /* throttle's bucket, bytes */
	uint64_t tokens_ns;
	uint64_t sent; /* bytes written to dst */
};

struct pair {
	struct nf_proxy *p;
	struct pair *next, **pprev;
	unsigned id;
	uv_tcp_t client, server;
	uv_connect_t creq;
	struct half h[2];
	struct nf_xids *xids;
	unsigned handles; /* open; the pair is freed when none is left */
	bool connected, closing;
	struct listener *l;
	uint16_t client_port; /* the client's source port */
	bool bound; /* the upstream socket was bound to a remembered port */
};

struct listener {
	uv_tcp_t tcp;
	struct nf_proxy *p;
	struct listener *next;
	struct sockaddr_storage up;
	/*
	 * A client that connects again from the same port is sent upstream
	 * from the same port as before, as if netfault were not there: the
	 * server's duplicate request cache, kept per client address and
	 * port, then still answers the calls it retransmits.
	 */
	struct {
		uint16_t client, up;
	} ports[PORTS_MAX];
	unsigned next_port;
};

struct nf_proxy {
	uv_loop_t *loop;
	struct nf_ruleset *rs;
	struct nf_events *ev;
	int log_fd;
	uint64_t start_ns;
	uv_timer_t tick;
	struct listener *listeners;
	struct pair *pairs;
	unsigned next_conn;
	unsigned handles; /* the tick and the listeners, open */
	bool closing;
	struct nf_stats st;
	/* Every read lands here and is consumed before the read callback
	 * returns: one buffer serves every socket of the loop. */
	char rbuf[READ_CHUNK];
};

static uint64_t now_ns(const struct nf_proxy *p)
{
	return uv_hrtime() - p->start_ns;
}

static void flush(struct half *h);
static void pair_close(struct pair *pair, bool rst);

/* ---- the log of faults ------------------------------------------------ */

static void fault_applied(struct nf_proxy *p, unsigned rule,
			  enum nf_fault fault, unsigned conn,
			  const struct nf_msg *msg)
{
	struct nf_event e = { .rule = rule, .fault = fault, .conn = conn };
	const char *prog = NULL, *proc = NULL;
	char xid[16] = "-", name[64] = "-";

	e.at_ns = now_ns(p);
	e.msg = *msg;
	nf_events_push(p->ev, &e);
	p->st.faults++;
	if (p->log_fd < 0)
		return;
	if (msg->rpc) {
		snprintf(xid, sizeof(xid), "0x%08" PRIx32, msg->xid);
		prog = nf_prog_name(msg->prog);
		proc = nf_proc_name(msg->prog, msg->vers, msg->proc);
		if (prog && proc)
			snprintf(name, sizeof(name), "%s.%s", prog, proc);
		else if (msg->prog)
			snprintf(name, sizeof(name), "%" PRIu32 ".%" PRIu32,
				 msg->prog, msg->proc);
	}
	dprintf(p->log_fd,
		"netfault: %" PRIu64 ".%03" PRIu64
		" conn %u rule %u %s %s xid %s %s\n",
		e.at_ns / 1000000000u, e.at_ns / 1000000u % 1000u, conn, rule,
		nf_fault_name(fault), msg->dir == NF_CALL ? "call" : "reply",
		xid, name);
}

/* ---- stream faults ---------------------------------------------------- */

/* Which stream faults act on h now; an event for each that starts. */
static void stream_faults(struct half *h, uint64_t now)
{
	struct nf_proxy *p = h->pair->p;
	unsigned act[SF_N] = { 0 }, id;
	struct nf_rule *r = NULL;

	while ((r = nf_ruleset_next(p->rs, r, &id))) {
		int k;

		if (!nf_rule_stream(r) || !nf_rule_on_dir(r, h->dir) ||
		    !nf_rule_active(r, now))
			continue;
		switch (nf_rule_fault(r)) {
		case NF_STALL:
			k = SF_STALL;
			break;
		case NF_THROTTLE:
			k = SF_THROTTLE;
			break;
		case NF_BLACKHOLE:
			k = SF_BLACKHOLE;
			break;
		case NF_CLOSE_AFTER:
			k = SF_CLOSE_AFTER;
			break;
		default:
			continue;
		}
		if (act[k])
			continue;
		act[k] = id;
		if (k == SF_THROTTLE)
			h->kibps = nf_rule_arg(r, 0);
		if (k == SF_CLOSE_AFTER)
			h->close_after = nf_rule_arg(r, 0);
	}
	for (int k = 0; k < SF_N; k++) {
		if (act[k] && !h->active[k]) {
			struct nf_msg msg = { .dir = h->dir };

			fault_applied(p, act[k], sf_fault[k], h->pair->id,
				      &msg);
			if (k == SF_THROTTLE) {
				h->tokens = 0;
				h->tokens_ns = now;
			}
		}
		h->active[k] = act[k];
	}
}

/* The refuse rule in force now, or 0. */
static unsigned refusing(struct nf_proxy *p, uint64_t now)
{
	struct nf_rule *r = NULL;
	unsigned id;

	while ((r = nf_ruleset_next(p->rs, r, &id)))
		if (nf_rule_fault(r) == NF_REFUSE && nf_rule_active(r, now))
			return id;
	return 0;
}

/* ---- reading ---------------------------------------------------------- */

static void on_alloc(uv_handle_t *handle, size_t hint, uv_buf_t *buf)
{
	struct half *h = handle->data;

	(void)hint;
	*buf = uv_buf_init(h->pair->p->rbuf, sizeof(h->pair->p->rbuf));
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

/*
 * Reads when the pair is up, the sender did not end, no stall holds it, and
 * the queue has room: it stops at NF_QUEUE_MAX and starts again below half
 * of it, so a slow receiver slows the sender through TCP itself.
 */
static void update_reading(struct half *h)
{
	bool want = h->reading;

	if (!h->pair->connected || h->pair->closing || h->eof ||
	    h->active[SF_STALL])
		want = false;
	else if (h->queued >= NF_QUEUE_MAX)
		want = false;
	else if (h->queued < NF_QUEUE_MAX / 2)
		want = true;
	if (want == h->reading)
		return;
	if (want && uv_read_start((uv_stream_t *)h->src, on_alloc, on_read))
		return;
	if (!want)
		uv_read_stop((uv_stream_t *)h->src);
	h->reading = want;
}

static struct seg *seg_new(const uint8_t *bytes, size_t len)
{
	struct seg *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->buf = malloc(len ? len : 1);
	if (!s->buf) {
		free(s);
		return NULL;
	}
	memcpy(s->buf, bytes, len);
	s->len = len;
	return s;
}

static void seg_free(struct seg *s)
{
	free(s->buf);
	free(s);
}

static void enqueue(struct half *h, struct seg *s)
{
	struct seg **pp = &h->head;

	while (*pp)
		pp = &(*pp)->next;
	*pp = s;
	h->queued += s->len;
}

/* Queues bytes that go through unparsed (unless a blackhole eats them). */
static int enqueue_raw(struct half *h, const uint8_t *bytes, size_t len)
{
	struct seg *s;

	if (!len || h->active[SF_BLACKHOLE])
		return 0;
	s = seg_new(bytes, len);
	if (!s)
		return -ENOMEM;
	enqueue(h, s);
	return 0;
}

/* The length of the fragment whose record mark is at mark. */
static size_t frag_len(const uint8_t *mark)
{
	return ((size_t)mark[0] << 24 | (size_t)mark[1] << 16 |
		(size_t)mark[2] << 8 | mark[3]) &
	       0x7fffffffu;
}

/* The offset in the wire bytes (marks included) of a body byte. */
static size_t body_to_wire(const uint8_t *wire, size_t wire_len, size_t off)
{
	size_t pos = 0, body = 0;

	while (pos + 4 <= wire_len) {
		size_t fl = frag_len(wire + pos);

		if (off < body + fl)
			return pos + 4 + (off - body);
		body += fl;
		pos += 4 + fl;
	}
	return SIZE_MAX;
}

/* Flips bytes of the header or of the body at offsets r draws. */
static void corrupt(struct nf_rule *r, const struct nf_msg *msg, uint8_t *wire,
		    size_t wire_len)
{
	uint64_t n = nf_rule_arg(r, 0) ? nf_rule_arg(r, 0) : 1;
	size_t lo = nf_rule_header(r) ? 0 : msg->hdr_len;
	size_t hi = nf_rule_header(r) ? msg->hdr_len : msg->len;

	if (hi > msg->len)
		hi = msg->len;
	for (uint64_t i = 0; i < n && lo < hi; i++) {
		size_t w = body_to_wire(wire, wire_len,
					lo + nf_rule_random(r) % (hi - lo));

		if (w < wire_len)
			wire[w] ^= 0xff;
	}
}

/*
 * short-read: a READ reply's data cut to the rule's bytes, the record sent
 * as one fragment.  Any other record, or one with no more data than that,
 * goes as it came.
 */
static int short_read(struct nf_rule *r, const struct nf_msg *msg,
		      struct seg *s)
{
	uint8_t *body = malloc(msg->len ? msg->len : 1);
	size_t pos = 0, have = 0, n;

	if (!body)
		return -ENOMEM;
	/* The body, its fragments' marks left out. */
	while (pos + 4 <= s->len && have < msg->len) {
		size_t fl = frag_len(s->buf + pos);

		if (fl > s->len - pos - 4 || fl > msg->len - have)
			break;
		memcpy(body + have, s->buf + pos + 4, fl);
		have += fl;
		pos += 4 + fl;
	}
	n = have == msg->len ? nf_read_reply_cut(body, have, msg,
						 (uint32_t)nf_rule_arg(r, 0)) :
			       have;
	if (n < have) {
		s->buf[0] = (uint8_t)(0x80 | n >> 24);
		s->buf[1] = (uint8_t)(n >> 16);
		s->buf[2] = (uint8_t)(n >> 8);
		s->buf[3] = (uint8_t)n;
		memcpy(s->buf + 4, body, n);
		s->len = 4 + n;
	}
	free(body);
	return 0;
}

/*
 * One record parsed: every rule sees it in order, the record faults that
 * match are applied to a copy, and the copy is queued (or not, for a drop
 * or under a blackhole).
 */
static int on_record(const uint8_t *wire, size_t wire_len,
		     const struct nf_msg *msg, void *arg)
{
	struct half *h = arg;
	struct pair *pair = h->pair;
	struct nf_proxy *p = pair->p;
	uint64_t now = now_ns(p), delay_ns = 0;
	bool drop = false, reset = false, dark = h->active[SF_BLACKHOLE];
	size_t reset_at = wire_len, slice = 0;
	unsigned dup = 0, hold = 0, id;
	struct nf_rule *r = NULL;
	struct seg *s;

	h->mstart += wire_len;
	p->st.records[h->dir]++;
	s = seg_new(wire, wire_len);
	if (!s)
		return -ENOMEM;
	s->record = true;
	while ((r = nf_ruleset_next(p->rs, r, &id))) {
		enum nf_fault f = nf_rule_fault(r);

		if (nf_rule_stream(r)) {
			nf_rule_observe(r, msg, now);
			continue;
		}
		/* Under a blackhole the record is decided like any other, so
		 * that nth= and count= see the same records whatever the
		 * stream faults, but it goes nowhere: nothing is applied. */
		if (!nf_rule_match(r, msg, now) || dark)
			continue;
		fault_applied(p, id, f, pair->id, msg);
		switch (f) {
		case NF_DELAY: {
			uint64_t d = nf_rule_delay_ms(r) * 1000000u;

			if (d > delay_ns)
				delay_ns = d;
			break;
		}
		case NF_DROP:
			drop = true;
			break;
		case NF_DUPLICATE:
			dup++;
			break;
		case NF_REORDER:
			if (nf_rule_arg(r, 0) > hold)
				hold = (unsigned)nf_rule_arg(r, 0);
			break;
		case NF_RESET:
			reset = true;
			if (nf_rule_arg(r, 0) < reset_at)
				reset_at = nf_rule_arg(r, 0);
			break;
		case NF_SLICE:
			if (!slice || nf_rule_arg(r, 0) < slice)
				slice = nf_rule_arg(r, 0);
			break;
		case NF_CORRUPT:
			corrupt(r, msg, s->buf, s->len);
			break;
		case NF_SHORT_READ:
			if (short_read(r, msg, s)) {
				seg_free(s);
				return -ENOMEM;
			}
			break;
		default:
			break;
		}
	}
	if (drop || dark) {
		seg_free(s);
		return 0;
	}
	s->due_ns = delay_ns ? now + delay_ns : 0;
	s->hold = hold;
	s->slice = slice;
	s->reset = reset;
	s->reset_at = reset_at;
	enqueue(h, s);
	while (dup-- && !reset) {
		struct seg *d = seg_new(s->buf, s->len);

		if (!d)
			return -ENOMEM;
		d->record = true;
		d->due_ns = s->due_ns;
		d->slice = slice;
		enqueue(h, d);
	}
	return 0;
}

/* Keeps the bytes read until the parser returns them as records. */
static int mirror_append(struct half *h, const char *buf, size_t len)
{
	if (h->mstart) {
		memmove(h->mirror, h->mirror + h->mstart, h->mlen - h->mstart);
		h->mlen -= h->mstart;
		h->mstart = 0;
	}
	if (h->mcap - h->mlen < len) {
		size_t cap = h->mlen + len;
		uint8_t *m = realloc(h->mirror, cap);

		if (!m)
			return -ENOMEM;
		h->mirror = m;
		h->mcap = cap;
	}
	memcpy(h->mirror + h->mlen, buf, len);
	h->mlen += len;
	return 0;
}

static void release_holds(struct half *h)
{
	for (struct seg *s = h->head; s; s = s->next)
		s->hold = 0;
}

static void maybe_shutdown(struct half *h);

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct half *h = stream->data;
	struct pair *pair = h->pair;
	struct nf_proxy *p = pair->p;
	int rc;

	if (pair->closing)
		return;
	if (nread == UV_EOF) {
		/* A record held for later ones that will never come now
		 * goes: the sender is done. */
		h->eof = true;
		release_holds(h);
		update_reading(h);
		flush(h);
		maybe_shutdown(h);
		return;
	}
	if (nread < 0) {
		pair_close(pair, true);
		return;
	}
	if (h->broken) {
		rc = enqueue_raw(h, (const uint8_t *)buf->base, (size_t)nread);
	} else {
		rc = mirror_append(h, buf->base, (size_t)nread);
		if (!rc)
			rc = nf_stream_feed(h->st, buf->base, (size_t)nread,
					    on_record, h);
		if (pair->closing)
			return;
		if (rc == -EPROTO || rc == -ENOMEM) {
			/* Given up on: what the parser held and the rest of
			 * this read go through as they came. */
			h->broken = true;
			p->st.unparsed[h->dir]++;
			rc = enqueue_raw(h, h->mirror + h->mstart,
					 h->mlen - h->mstart);
			free(h->mirror);
			h->mirror = NULL;
			h->mstart = h->mlen = h->mcap = 0;
		}
	}
	if (rc) {
		pair_close(pair, true);
		return;
	}
	flush(h);
	update_reading(h);
}

/* ---- writing ---------------------------------------------------------- */

static void on_shutdown(uv_shutdown_t *req, int status)
{
	struct half *h = req->data;
	struct pair *pair = h->pair;

	(void)status;
	h->sreq.data = NULL;
	if (pair->closing)
		return;
	/* Both sides said they are done and were told: the pair ends. */
	if (pair->h[NF_CALL].shut && pair->h[NF_REPLY].shut &&
	    !pair->h[NF_CALL].sreq.data && !pair->h[NF_REPLY].sreq.data)
		pair_close(pair, false);
}

/* Once the sender ended and everything went, the receiver is told. */
static void maybe_shutdown(struct half *h)
{
	if (!h->eof || h->shut || h->head || h->inflight || h->pair->closing)
		return;
	h->shut = true;
	h->sreq.data = h;
	if (uv_shutdown(&h->sreq, (uv_stream_t *)h->dst, on_shutdown))
		pair_close(h->pair, false);
}

static void on_write(uv_write_t *req, int status)
{
	struct wreq *w = (struct wreq *)req;
	struct half *h = w->h;
	struct pair *pair = h->pair;
	bool then_reset = w->then_reset;

	h->queued -= w->len;
	h->inflight--;
	if (w->slice)
		h->slicing = false;
	free(w);
	if (pair->closing)
		return;
	if (status < 0) {
		pair_close(pair, true);
		return;
	}
	if (then_reset) {
		pair_close(pair, true);
		return;
	}
	flush(h);
	update_reading(h);
	maybe_shutdown(h);
}

static int write_bytes(struct half *h, const uint8_t *bytes, size_t len,
		       bool slice, bool then_reset)
{
	struct wreq *w = malloc(sizeof(*w) + len);
	uv_buf_t b;
	int rc;

	if (!w)
		return -ENOMEM;
	memcpy(w->data, bytes, len);
	w->h = h;
	w->len = len;
	w->slice = slice;
	w->then_reset = then_reset;
	b = uv_buf_init((char *)w->data, (unsigned)len);
	rc = uv_write(&w->req, (uv_stream_t *)h->dst, &b, 1, on_write);
	if (rc) {
		free(w);
		return rc;
	}
	/* The bytes move from the seg to the write: queued stays. */
	h->queued += len;
	h->inflight++;
	h->sent += len;
	h->pair->p->st.bytes[h->dir] += len;
	if (slice)
		h->slicing = true;
	return 0;
}

static void on_timer(uv_timer_t *t)
{
	struct half *h = t->data;

	flush(h);
	update_reading(h);
	maybe_shutdown(h);
}

/* How many bytes throttle lets through now; arms the timer when none. */
static size_t throttle_allows(struct half *h, uint64_t now, size_t want)
{
	double rate = (double)h->kibps * 1024.0; /* bytes a second */
	double cap = rate / 10 > 1024 ? rate / 10 : 1024;
	size_t need = want < 1024 ? want : 1024;

	h->tokens += (double)(now - h->tokens_ns) * rate / 1e9;
	h->tokens_ns = now;
	if (h->tokens > cap)
		h->tokens = cap;
	if (h->tokens >= (double)need)
		return h->tokens < (double)want ? (size_t)h->tokens : want;
	uv_timer_start(&h->timer, on_timer,
		       (uint64_t)(((double)need - h->tokens) * 1000 / rate) + 1,
		       0);
	return 0;
}

/*
 * Writes what may go now, in order: a held (reordered) record is stepped
 * over, a delayed one stops the walk and arms the timer, a slice waits for
 * the piece before it, throttle and close-after bound the bytes.
 */
static void flush(struct half *h)
{
	struct pair *pair = h->pair;
	uint64_t now = now_ns(pair->p);
	struct seg **pp;

again:
	for (pp = &h->head; *pp;) {
		struct seg *s = *pp;
		size_t n = s->len - s->off;
		bool released = false;

		if (pair->closing || h->slicing)
			return;
		if (s->hold) {
			pp = &s->next;
			continue;
		}
		if (s->due_ns > now) {
			uv_timer_start(&h->timer, on_timer,
				       (s->due_ns - now + 999999) / 1000000, 0);
			return;
		}
		if (s->slice && n > s->slice)
			n = s->slice;
		if (s->reset && s->off + n > s->reset_at)
			n = s->reset_at - s->off;
		if (h->active[SF_CLOSE_AFTER]) {
			if (h->sent >= h->close_after) {
				pair_close(pair, false);
				return;
			}
			if (n > h->close_after - h->sent)
				n = h->close_after - h->sent;
		}
		if (h->active[SF_THROTTLE] && n) {
			n = throttle_allows(h, now, n);
			if (!n)
				return;
			h->tokens -= (double)n;
		}
		if (n == 0 && s->reset) {
			pair_close(pair, true);
			return;
		}
		if (write_bytes(h, s->buf + s->off, n,
				s->slice && n < s->len - s->off,
				s->reset && s->off + n == s->reset_at)) {
			pair_close(pair, true);
			return;
		}
		s->off += n;
		h->queued -= n;
		if (s->reset && s->off == s->reset_at)
			return; /* the RST follows the write */
		if (s->off < s->len)
			continue; /* sliced, throttled or closing after */
		*pp = s->next;
		if (s->record) {
			for (struct seg *o = h->head; o != *pp; o = o->next)
				if (o->hold && --o->hold == 0)
					released = true;
		}
		seg_free(s);
		if (released)
			goto again;
	}
}

/* ---- connection pairs ------------------------------------------------- */

static void pair_free(struct pair *pair)
{
	for (int d = 0; d < 2; d++) {
		struct half *h = &pair->h[d];

		while (h->head) {
			struct seg *s = h->head;

			h->head = s->next;
			seg_free(s);
		}
		nf_stream_free(h->st);
		free(h->mirror);
	}
	nf_xids_free(pair->xids);
	free(pair);
}

static void on_close_tcp(uv_handle_t *handle)
{
	struct half *h = handle->data;
	struct pair *pair = h->pair;

	if (--pair->handles == 0)
		pair_free(pair);
}

static void close_tcp(uv_tcp_t *t, bool rst)
{
	if (uv_is_closing((uv_handle_t *)t))
		return;
	if (rst && uv_tcp_close_reset(t, on_close_tcp) == 0)
		return;
	uv_close((uv_handle_t *)t, on_close_tcp);
}

/* Closes both sides (with RST when rst) and, once closed, frees the pair. */
static void pair_close(struct pair *pair, bool rst)
{
	if (pair->closing)
		return;
	pair->closing = true;
	pair->p->st.open--;
	*pair->pprev = pair->next;
	if (pair->next)
		pair->next->pprev = pair->pprev;
	close_tcp(&pair->client, rst);
	close_tcp(&pair->server, rst && pair->connected);
	uv_close((uv_handle_t *)&pair->h[0].timer, on_close_tcp);
	uv_close((uv_handle_t *)&pair->h[1].timer, on_close_tcp);
}

/* The upstream port last used for a client port; 0 if none. */
static uint16_t up_port_of(const struct listener *l, uint16_t client)
{
	for (unsigned i = 0; i < PORTS_MAX; i++)
		if (l->ports[i].client == client)
			return l->ports[i].up;
	return 0;
}

static void remember_port(struct listener *l, uint16_t client, uint16_t up)
{
	unsigned i;

	for (i = 0; i < PORTS_MAX; i++)
		if (l->ports[i].client == client)
			break;
	if (i == PORTS_MAX) {
		i = l->next_port;
		l->next_port = (l->next_port + 1) % PORTS_MAX;
	}
	l->ports[i].client = client;
	l->ports[i].up = up;
}

static uint16_t port_of(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}

/*
 * The upstream socket, bound to the port this client port had before when
 * there is one and it is free (SO_REUSEADDR: the old connection may linger
 * in TIME_WAIT); otherwise the system picks.
 */
static int upstream_socket(struct pair *pair)
{
	const struct listener *l = pair->l;
	uint16_t up = pair->client_port ? up_port_of(l, pair->client_port) : 0;
	struct sockaddr_storage ss;
	int fd, one = 1;

	fd = socket(l->up.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (up) {
		memset(&ss, 0, sizeof(ss));
		ss.ss_family = l->up.ss_family;
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;

			a->sin_port = htons(up);
		} else {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

			a->sin6_port = htons(up);
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&ss, sizeof(ss)) == 0) {
			pair->bound = true;
		} else {
			close(fd);
			fd = socket(l->up.ss_family, SOCK_STREAM | SOCK_CLOEXEC,
				    0);
			if (fd < 0)
				return -errno;
		}
	}
	if (!pair->bound)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	return fd;
}

static void on_connect(uv_connect_t *req, int status)
{
	struct pair *pair = req->data;
	uint64_t now;

	if (pair->closing)
		return;
	if (pair->bound &&
	    (status == UV_EADDRINUSE || status == UV_EADDRNOTAVAIL))
		/* That port could not be had again: the next one is new. */
		remember_port(pair->l, pair->client_port, 0);
	if (status < 0) {
		if (pair->p->log_fd >= 0)
			dprintf(pair->p->log_fd,
				"netfault: conn %u: cannot connect upstream: "
				"%s\n",
				pair->id, uv_strerror(status));
		pair_close(pair, true);
		return;
	}
	pair->connected = true;
	uv_tcp_nodelay(&pair->server, 1);
	now = now_ns(pair->p);
	for (int d = 0; d < 2; d++) {
		stream_faults(&pair->h[d], now);
		update_reading(&pair->h[d]);
	}
}

static int pair_new(struct listener *l, struct pair **out)
{
	struct nf_proxy *p = l->p;
	struct pair *pair = calloc(1, sizeof(*pair));

	if (!pair)
		return -ENOMEM;
	pair->p = p;
	pair->xids = nf_xids_new(XIDS_MAX);
	for (int d = 0; d < 2; d++) {
		struct half *h = &pair->h[d];

		h->pair = pair;
		h->dir = d;
		h->src = d == NF_CALL ? &pair->client : &pair->server;
		h->dst = d == NF_CALL ? &pair->server : &pair->client;
		h->st = nf_stream_new(d);
		if (h->st)
			nf_stream_set_xids(h->st, pair->xids);
	}
	if (!pair->xids || !pair->h[0].st || !pair->h[1].st) {
		pair_free(pair);
		return -ENOMEM;
	}
	*out = pair;
	return 0;
}

static void on_close_refused(uv_handle_t *handle)
{
	free(handle);
}

static void on_connection(uv_stream_t *server, int status)
{
	struct listener *l = server->data;
	struct nf_proxy *p = l->p;
	struct pair *pair;
	unsigned rid;

	if (status < 0 || p->closing)
		return;
	rid = refusing(p, now_ns(p));
	if (rid) {
		/* Refused: the connection is taken off the backlog and
		 * reset at once, so the client sees it end and the backlog
		 * never fills. */
		uv_tcp_t *t = malloc(sizeof(*t));
		struct nf_msg msg = { .dir = NF_CALL };

		if (!t || uv_tcp_init(p->loop, t)) {
			free(t);
			return;
		}
		if (uv_accept(server, (uv_stream_t *)t) == 0) {
			fault_applied(p, rid, NF_REFUSE, 0, &msg);
			if (uv_tcp_close_reset(t, on_close_refused) == 0)
				return;
		}
		uv_close((uv_handle_t *)t, on_close_refused);
		return;
	}
	if (pair_new(l, &pair))
		return;
	uv_tcp_init(p->loop, &pair->client);
	uv_tcp_init(p->loop, &pair->server);
	uv_timer_init(p->loop, &pair->h[0].timer);
	uv_timer_init(p->loop, &pair->h[1].timer);
	pair->handles = 4;
	pair->client.data = pair->h[0].timer.data = &pair->h[NF_CALL];
	pair->server.data = pair->h[1].timer.data = &pair->h[NF_REPLY];
	pair->creq.data = pair;
	pair->id = ++p->next_conn;
	p->st.conns++;
	p->st.open++;
	pair->next = p->pairs;
	if (p->pairs)
		p->pairs->pprev = &pair->next;
	pair->pprev = &p->pairs;
	p->pairs = pair;
	pair->l = l;
	if (uv_accept(server, (uv_stream_t *)&pair->client)) {
		pair_close(pair, true);
		return;
	}
	{
		struct sockaddr_storage ss;
		int len = sizeof(ss), fd;

		if (uv_tcp_getpeername(&pair->client, (struct sockaddr *)&ss,
				       &len) == 0)
			pair->client_port = port_of(&ss);
		fd = upstream_socket(pair);
		if (fd >= 0 && uv_tcp_open(&pair->server, fd)) {
			close(fd);
			fd = -1;
		}
		if (fd < 0 || uv_tcp_connect(&pair->creq, &pair->server,
					     (const struct sockaddr *)&l->up,
					     on_connect)) {
			pair_close(pair, true);
			return;
		}
		/* The local port is the socket's from connect() on. */
		len = sizeof(ss);
		if (pair->client_port &&
		    uv_tcp_getsockname(&pair->server, (struct sockaddr *)&ss,
				       &len) == 0)
			remember_port(l, pair->client_port, port_of(&ss));
	}
	uv_tcp_nodelay(&pair->client, 1);
}

/* ---- the proxy -------------------------------------------------------- */

/* Every pair's stream faults looked up again, and acted on. */
static void stream_faults_all(void *arg)
{
	struct nf_proxy *p = arg;
	uint64_t now = now_ns(p);
	struct pair *next;

	for (struct pair *pair = p->pairs; pair; pair = next) {
		next = pair->next;
		if (!pair->connected)
			continue;
		for (int d = 0; d < 2 && !pair->closing; d++) {
			stream_faults(&pair->h[d], now);
			update_reading(&pair->h[d]);
			flush(&pair->h[d]);
		}
	}
}

static void on_tick(uv_timer_t *t)
{
	stream_faults_all(t->data);
}

int nf_proxy_new(struct uv_loop_s *loop, struct nf_ruleset *rs,
		 struct nf_events *ev, int log_fd, struct nf_proxy **out)
{
	struct nf_proxy *p = calloc(1, sizeof(*p));
	int rc;

	if (!p)
		return -ENOMEM;
	p->loop = loop;
	p->rs = rs;
	p->ev = ev;
	p->log_fd = log_fd;
	p->start_ns = uv_hrtime();
	rc = uv_timer_init(loop, &p->tick);
	if (rc) {
		free(p);
		return rc;
	}
	p->tick.data = p;
	p->handles = 1;
	uv_timer_start(&p->tick, on_tick, TICK_MS, TICK_MS);
	nf_ruleset_on_change(rs, stream_faults_all, p);
	*out = p;
	return 0;
}

static void on_close_listener(uv_handle_t *handle)
{
	struct listener *l = handle->data;

	l->p->handles--;
	free(l);
}

int nf_proxy_listen(struct nf_proxy *p, unsigned port, const char *host,
		    unsigned up_port, unsigned *bound)
{
	struct listener *l = calloc(1, sizeof(*l));
	struct sockaddr_in sin;
	struct sockaddr_storage ss;
	int rc, len = sizeof(ss);

	if (!l)
		return -ENOMEM;
	if (port > 65535 || up_port == 0 || up_port > 65535) {
		free(l);
		return -EINVAL;
	}
	if (uv_ip4_addr(host, (int)up_port, (struct sockaddr_in *)&l->up) &&
	    uv_ip6_addr(host, (int)up_port, (struct sockaddr_in6 *)&l->up)) {
		free(l);
		return -EINVAL;
	}
	l->p = p;
	rc = uv_tcp_init(p->loop, &l->tcp);
	if (rc) {
		free(l);
		return rc;
	}
	l->tcp.data = l;
	p->handles++;
	l->next = p->listeners;
	p->listeners = l;
	uv_ip4_addr("127.0.0.1", (int)port, &sin);
	rc = uv_tcp_bind(&l->tcp, (const struct sockaddr *)&sin, 0);
	if (!rc)
		rc = uv_listen((uv_stream_t *)&l->tcp, 128, on_connection);
	if (!rc)
		rc = uv_tcp_getsockname(&l->tcp, (struct sockaddr *)&ss, &len);
	if (rc)
		return rc; /* nf_proxy_close() closes it with the rest */
	if (bound)
		*bound = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return 0;
}

const struct nf_stats *nf_proxy_stats(const struct nf_proxy *p)
{
	return &p->st;
}

static void on_close_tick(uv_handle_t *handle)
{
	struct nf_proxy *p = handle->data;

	p->handles--;
}

void nf_proxy_close(struct nf_proxy *p)
{
	if (p->closing)
		return;
	p->closing = true;
	nf_ruleset_on_change(p->rs, NULL, NULL);
	uv_close((uv_handle_t *)&p->tick, on_close_tick);
	for (struct listener *l = p->listeners; l; l = l->next)
		uv_close((uv_handle_t *)&l->tcp, on_close_listener);
	p->listeners = NULL;
	while (p->pairs)
		pair_close(p->pairs, false);
}

void nf_proxy_free(struct nf_proxy *p)
{
	free(p);
}
