/*
 * The transport's receive path: one receiver thread per transport reads the
 * socket, splits the stream into records (record marking, RFC 5531, section
 * 11), finds the waiting call by XID and hands it the reply; the call's own
 * task decodes the reply header and results (nc__decode_reply()).  The
 * receiver also watches a connection with calls in flight for a dead path,
 * and closes the sockets that the calls' side drops.  A call alone in
 * flight reads its own reply instead (nc__lone_read(): no wake-up of the
 * receiver and then of the call), in its task and its wait's mode, so
 * that its regions and policy decide that wait too; the receiver takes
 * over as soon as a second call is in flight.
 *
 * The receiver never waits for anything but the socket (and, with nothing
 * to read, for a connection), so a call never waits behind another task's
 * reply; it never sends, and never decides a call's timeouts.  It is not a
 * task: nothing interrupts it.
 *
 * A stream that is not ONC RPC (a record too long, a record that is not a
 * reply) is "not an RPC reply": the connection is dropped and, on a soft or
 * softerr transport, the calls in flight fail with -EPROTO at once, since
 * sending them again would get the same.  A reply that does not decode
 * fails its own call with -EPROTO; the stream stays good.
 *
 * A connection can die without a word (a partition: no FIN, no RST) while
 * TCP backs off its retransmissions for minutes.  The receiver looks at the
 * socket twice a second while calls are in flight: data queued on a socket
 * that has had no acknowledgement for dead_after (timeo, within 1..10 s)
 * means the path is gone, and the connection is dropped, to be made again
 * by the next call that sends.  A stalled server (its kernel still
 * acknowledges) is not a dead path.
 *
 * Lock order (xprt_i.h): send_lock before lock.  The receiver takes lock
 * for short sections, and send_lock, with lock not held, only to close a
 * dropped socket.
 */
#include "xprt_i.h"

#include <arpa/inet.h>
#include <errno.h>
/* Not netinet/tcp.h: its struct tcp_info lacks tcpi_snd_wnd. */
#include <linux/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* Record marking: the length of a fragment. */
#define RM_LEN_MASK 0x7fffffffu
/* The biggest reply we take: a full READ plus headers and attributes. */
#define REPLY_MAX (NC_MAX_IO + 64 * 1024)
/* What one recv() may bring. */
#define RX_STAGING NC__RX_STAGING
/* What is left of a fragment for it to be read straight into its record. */
#define RX_DIRECT_MIN (16 * 1024)
/* How often the receiver looks at the socket while calls are in flight. */
#define LIVENESS_POLL_MS 500

/* Decoding, in the call's task. */

int nc__decode_reply(struct nc__xprt *x, struct nc__call *call)
{
	struct nc__rpc *r = call->rpc;
	char verfbuf[MAX_AUTH_BYTES];
	struct rpc_msg msg;
	XDR xdrs;
	int rc = 0;

	memset(&msg, 0, sizeof(msg));
	msg.acpted_rply.ar_verf.oa_base = verfbuf;
	msg.acpted_rply.ar_results.where = r->resp;
	msg.acpted_rply.ar_results.proc = r->xres;
	xdrmem_create(&xdrs, (char *)call->reply, (u_int)call->reply_len,
		      XDR_DECODE);
	if (!xdr_replymsg(&xdrs, &msg)) {
		/*
		 * The header decoded or not, the results did not: free what
		 * the result routine may have allocated.
		 */
		xdr_free(r->xres, r->resp);
		nc__count(&x->stats->bad_replies);
		rc = -EPROTO; /* not an RPC reply we can read */
	} else if (msg.rm_reply.rp_stat == MSG_DENIED) {
		rc = nc__rpc_reject_errno(msg.rjcted_rply.rj_stat,
					  msg.rjcted_rply.rj_why);
	} else if (msg.acpted_rply.ar_stat != SUCCESS) {
		rc = nc__rpc_accept_errno(msg.acpted_rply.ar_stat);
	}
	xdr_destroy(&xdrs);
	return rc;
}

/* Matching replies to calls. */

/* The call waiting for xid, or NULL.  Called with x->lock held. */
static struct nc__call *xid_find(struct nc__xprt *x, uint32_t xid)
{
	for (struct nc__call *c = *nc__xid_bucket(x, xid); c; c = c->hnext)
		if (c->xid == xid)
			return c;
	return NULL;
}

/* Record buffers. */

unsigned char *nc__rec_get(struct nc__xprt *x, size_t need, size_t *cap)
{
	unsigned char *rec = NULL;

	if (need < NC__REC_MIN)
		return NULL;
	pthread_mutex_lock(&x->rec_lock);
	for (unsigned i = 0; i < x->nrec_cache; i++) {
		if (x->rec_cache_cap[i] >= need) {
			rec = x->rec_cache[i];
			*cap = x->rec_cache_cap[i];
			x->nrec_cache--;
			x->rec_cache[i] = x->rec_cache[x->nrec_cache];
			x->rec_cache_cap[i] = x->rec_cache_cap[x->nrec_cache];
			break;
		}
	}
	pthread_mutex_unlock(&x->rec_lock);
	return rec;
}

void nc__rec_put(struct nc__xprt *x, unsigned char *rec, size_t cap)
{
	if (rec && cap >= NC__REC_MIN) {
		pthread_mutex_lock(&x->rec_lock);
		if (x->nrec_cache < NC__REC_KEEP) {
			x->rec_cache[x->nrec_cache] = rec;
			x->rec_cache_cap[x->nrec_cache++] = cap;
			rec = NULL;
		}
		pthread_mutex_unlock(&x->rec_lock);
	}
	free(rec);
}

void nc__rec_drain(struct nc__xprt *x)
{
	while (x->nrec_cache)
		free(x->rec_cache[--x->nrec_cache]);
}

/*
 * Hands a complete record to its call.  Takes ownership of rec, of cap
 * bytes.  Returns -EPROTO for a record that is not an RPC reply at all.
 */
static int deliver(struct nc__xprt *x, unsigned char *rec, size_t len,
		   size_t cap)
{
	struct nc__call *call;
	uint32_t xid, dir;

	if (len < 8) {
		nc__count(&x->stats->bad_replies);
		nc__rec_put(x, rec, cap);
		return -EPROTO;
	}
	memcpy(&xid, rec, 4);
	memcpy(&dir, rec + 4, 4);
	/* XDR put both in network order. */
	xid = ntohl(xid);
	if (ntohl(dir) != REPLY) {
		nc__count(&x->stats->bad_replies);
		nc__rec_put(x, rec, cap);
		return -EPROTO;
	}
	region_task_mutex_lock_nofail(&x->lock);
	call = xid_find(x, xid);
	if (!call || call->state == NC__CALL_DONE) {
		nc__count(&x->stats->unknown_xids);
		if (x->orphans)
			x->orphans--;
		region_task_mutex_unlock(&x->lock);
		nc__rec_put(x, rec, cap);
		return 0;
	}
	call->reply = rec;
	call->reply_len = len;
	call->reply_cap = cap;
	call->reply_ns = region_now_ns();
	nc__count(&x->stats->receives);
	/* relaxed: a statistic. */
	atomic_store_explicit(&x->last_io_ns, call->reply_ns,
			      memory_order_relaxed);
	nc__event(x, NC_EV_REPLY, call, false, false);
	x->replied = true;
	x->connect_failures = 0;
	nc__call_finish(x, call, 0);
	region_task_cond_signal(&call->waiter->cond);
	if (x->not_responding) {
		x->not_responding = false;
		fprintf(stderr, "intrfs: server %s OK\n", x->server);
	}
	region_task_mutex_unlock(&x->lock);
	return 0;
}

/*
 * Ends every call in flight with rc (a stream that is not RPC, on a
 * transport that does not retry for ever).  Called with x->lock held.
 */
static void fail_all_calls(struct nc__xprt *x, int rc)
{
	for (unsigned i = 0; i < NC__XID_BUCKETS; i++) {
		while (x->table[i]) {
			struct nc__call *c = x->table[i];

			nc__call_finish(x, c, rc);
			region_task_cond_signal(&c->waiter->cond);
		}
	}
}

/* Reassembling records. */

void nc__rx_reset(struct nc__rx *rx)
{
	free(rx->rec);
	rx->rec = NULL;
	rx->rec_len = rx->rec_cap = 0;
	rx->mark_have = 0;
	rx->frag_left = 0;
	rx->last = false;
}

/*
 * take more bytes of the current fragment are in rx->rec: a fragment that
 * ends ends its record when it is the last, and the record goes to its
 * call.
 */
static int rx_took(struct nc__xprt *x, struct nc__rx *rx, size_t take)
{
	int rc = 0;

	rx->rec_len += take;
	rx->frag_left -= take;
	if (rx->frag_left == 0) {
		rx->mark_have = 0;
		if (rx->last) {
			rc = deliver(x, rx->rec, rx->rec_len, rx->rec_cap);
			rx->rec = NULL;
			rx->rec_len = rx->rec_cap = 0;
		}
	}
	return rc;
}

int nc__rx_parse(struct nc__xprt *x, struct nc__rx *rx,
		 const unsigned char *buf, size_t len)
{
	size_t pos = 0;
	int rc;

	while (pos < len) {
		size_t take;

		if (rx->frag_left == 0 && rx->mark_have < 4) {
			uint32_t m;

			take = 4 - rx->mark_have < len - pos ?
				       4 - rx->mark_have :
				       len - pos;
			memcpy(rx->mark + rx->mark_have, buf + pos, take);
			rx->mark_have += (unsigned)take;
			pos += take;
			if (rx->mark_have < 4)
				break;
			memcpy(&m, rx->mark, 4);
			m = ntohl(m);
			rx->last = (m & NC__RM_LAST) != 0;
			rx->frag_left = m & RM_LEN_MASK;
			if (rx->rec_len + rx->frag_left > REPLY_MAX) {
				nc__count(&x->stats->bad_replies);
				return -EPROTO;
			}
			if (!rx->rec)
				rx->rec = nc__rec_get(x, rx->frag_left,
						      &rx->rec_cap);
			if (rx->rec_len + rx->frag_left > rx->rec_cap) {
				size_t cap = rx->rec_len + rx->frag_left;
				unsigned char *p =
					realloc(rx->rec, cap ? cap : 1);

				if (!p)
					return -ENOMEM;
				rx->rec = p;
				rx->rec_cap = cap;
			}
		}
		take = rx->frag_left < len - pos ? rx->frag_left : len - pos;
		memcpy(rx->rec + rx->rec_len, buf + pos, take);
		pos += take;
		rc = rx_took(x, rx, take);
		if (rc)
			return rc;
	}
	return 0;
}

/* The receiver thread. */

/*
 * Whether the path to the server is dead: data in flight that the server's
 * TCP has not acknowledged for dead_after, while calls wait.
 */
/* Window probes unanswered that, with no ACK for that long, mean dead. */
#define DEAD_PROBES 2
static bool path_dead(struct nc__xprt *x, int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	uint64_t dead_after;
	unsigned inflight;
	int outq = 0;

	region_task_mutex_lock_nofail(&x->lock);
	inflight = x->inflight;
	dead_after = nc__xprt_dead_after(x);
	region_task_mutex_unlock(&x->lock);
	if (!inflight || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
		return false;
	/*
	 * Bytes queued, sent or not (TCP in loss recovery may hold back
	 * what it has not sent), with no ACK for that long.  Into a closed
	 * window too, when TCP's probes of it go unanswered: a stopped
	 * server's kernel closes the window and answers each probe (ever
	 * rarer; each answer sets tcpi_probes, the probes unanswered, back
	 * to 0), while a path that is gone answers none.
	 */
	if (ioctl(fd, SIOCOUTQ, &outq) < 0 || outq == 0 ||
	    (ti.tcpi_snd_wnd == 0 && ti.tcpi_probes < DEAD_PROBES) ||
	    (uint64_t)ti.tcpi_last_ack_recv * 1000000ull < dead_after)
		return false;
	fprintf(stderr,
		"intrfs: server %s has acknowledged nothing for %u s: "
		"dropping the connection and making a new one\n",
		x->server, ti.tcpi_last_ack_recv / 1000);
	return true;
}

/*
 * One read of the socket by its reader: what came is parsed (each whole
 * record handed to its call).  Returns 1 when something was read, 0 when
 * nothing was there, -1 when the connection must be dropped: EOF, an
 * error, or (*garbage) a stream that is not RPC.  rx belongs to the
 * connection gen it was reset for; a new connection starts it afresh.
 */
static int rx_read(struct nc__xprt *x, int fd, uint64_t gen, bool *garbage)
{
	ssize_t n;

	if (x->rx_gen != gen) {
		nc__rx_reset(&x->rx);
		x->rx_gen = gen;
	}
	/*
	 * Deep in a big fragment (a READ's data): straight into the record,
	 * as much as the fragment still holds, with no staging copy.
	 */
	if (x->rx.rec && x->rx.frag_left >= RX_DIRECT_MIN) {
		n = recv(fd, x->rx.rec + x->rx.rec_len, x->rx.frag_left,
			 MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n <= 0)
			return -1;
		if (rx_took(x, &x->rx, (size_t)n) < 0) {
			*garbage = true;
			return -1;
		}
		return 1;
	}
	n = recv(fd, x->rx_staging, RX_STAGING, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0)
		return -1; /* EOF or a broken connection */
	if (nc__rx_parse(x, &x->rx, x->rx_staging, (size_t)n) < 0) {
		*garbage = true;
		return -1;
	}
	return 1;
}

/*
 * A dropped read (rx_read() -1, or a dead path) on connection gen: it goes,
 * counted as the client's reset when by_client, and a stream that is not
 * RPC ends a soft transport's calls.  Called with x->lock held.
 */
static void rx_drop(struct nc__xprt *x, uint64_t gen, bool by_client,
		    bool garbage)
{
	if (x->gen == gen && x->conn == NC__CONN_UP)
		nc__xprt_disconnect(x, by_client || garbage);
	if (garbage) {
		x->garbage = true;
		/* Sending again would get the same: soft ends here. */
		if (x->timeout.mode != NC_HARD)
			fail_all_calls(x, -EPROTO);
	}
}

/*
 * Watches fd until the connection ends, the transport stops or a
 * disconnect wakes us; reads it while calls are in flight and no call reads
 * its own reply.  Returns true when the receiver should drop the
 * connection itself (EOF, error, untrustworthy stream, dead path).
 */
static bool rx_connection(struct nc__xprt *x, int fd, uint64_t gen,
			  bool *by_client, bool *garbage)
{
	struct pollfd p[2] = { { fd, POLLIN, 0 }, { x->rx_efd, POLLIN, 0 } };

	for (;;) {
		bool parked, gone, reader;
		int ready, r;

		region_task_mutex_lock_nofail(&x->lock);
		gone = x->stop || x->gen != gen || x->conn != NC__CONN_UP;
		reader = x->reader_call != NULL;
		/*
		 * Parked with nothing in flight, or while a call reads its
		 * own reply: then only a hang-up of an idle connection is
		 * ours to see.  Not while the replies of calls given up may
		 * still come: those are read and dropped as they come.
		 */
		parked = reader || (x->inflight == 0 && x->orphans == 0);
		x->rx_parked = parked;
		region_task_mutex_unlock(&x->lock);
		if (gone)
			return false;
		p[0].fd = reader ? -1 : fd;
		p[0].events = parked ? POLLRDHUP : POLLIN;
		p[0].revents = 0;
		/*
		 * Parked too, it looks for a dead path twice a second: a call
		 * reading its own reply waits once, as long as its timeout.
		 */
		ready = poll(p, 2, LIVENESS_POLL_MS);
		if (ready < 0) {
			if (errno == EINTR)
				continue;
			return true;
		}
		if (ready == 0) {
			if (path_dead(x, fd)) {
				*by_client = true;
				return true;
			}
			continue;
		}
		if (p[1].revents) {
			uint64_t v;
			ssize_t n = read(x->rx_efd, &v, sizeof(v));

			(void)n;
			continue; /* look again at who reads */
		}
		if (!p[0].revents)
			continue;
		region_task_mutex_lock_nofail(&x->lock);
		/* A call may have become the reader since we looked. */
		parked = x->reader_call != NULL;
		if (!parked)
			x->rx_parked = false;
		region_task_mutex_unlock(&x->lock);
		if (parked)
			continue;
		r = rx_read(x, fd, gen, garbage);
		if (r < 0) {
			*by_client = *garbage;
			return true;
		}
	}
}

/* The lone-call receive. */

bool nc__lone_ok(const struct nc__xprt *x, const struct nc__call *call)
{
	return call->state == NC__CALL_SENT && x->conn == NC__CONN_UP &&
	       call->sent_gen == x->gen && x->inflight == 1 && call->has_slot &&
	       x->closing_fd < 0 &&
	       (x->reader_call == call ||
		(!x->reader_call && x->rx_parked && x->orphans == 0));
}

static void wake_receiver(struct nc__xprt *x)
{
	uint64_t one = 1;
	ssize_t n;

	x->rx_parked = false;
	n = write(x->rx_efd, &one, sizeof(one));
	(void)n;
}

void nc__reader_release(struct nc__xprt *x, const struct nc__call *call)
{
	if (x->reader_call != call)
		return;
	x->reader_call = NULL;
	if (x->inflight > 0 || x->orphans > 0 || x->closing_fd >= 0)
		wake_receiver(x);
	region_task_cond_broadcast(&x->conn_cond);
}

void nc__reader_ensure(struct nc__xprt *x)
{
	if (!x->reader_call && x->rx_parked && x->inflight > 0)
		wake_receiver(x);
}

int nc__lone_read(struct nc__xprt *x, const struct nc__call *call,
		  enum task_mode mode, uint64_t wake)
{
	int fd = x->fd;
	uint64_t gen = x->gen, now = region_now_ns();
	int64_t left = wake > now ? (int64_t)(wake - now) : 0;
	bool garbage = false;
	short rev = 0;
	int rc, r = 0;

	if (x->reader_call != call) {
		x->reader_call = call;
		nc__count(&x->stats->lone_reads);
	}
	region_task_mutex_unlock(&x->lock);
	rc = region_task_wait_fd(fd, POLLIN, mode, left, &rev);
	if (rc == 0)
		r = rx_read(x, fd, gen, &garbage);
	region_task_mutex_lock_nofail(&x->lock);
	if (r < 0)
		rx_drop(x, gen, garbage, garbage);
	return rc == -EINTR ? -EINTR : 0;
}

void nc__close_reset(int fd)
{
	struct linger lg = { 1, 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

void *nc__xprt_receiver(void *arg)
{
	struct nc__xprt *x = arg;

	region_task_mutex_lock_nofail(&x->lock);
	for (;;) {
		bool by_client = false, garbage = false, drop;
		uint64_t gen;
		int fd;

		if (x->closing_fd >= 0 && x->reader_call) {
			/* Not while a call reads it: it hands over first. */
			int rc = region_task_cond_wait(&x->conn_cond, &x->lock,
						       TASK_UNINTERRUPTIBLE,
						       TASK_FOREVER);

			(void)rc;
			continue;
		}
		if (x->closing_fd >= 0) {
			int cfd = x->closing_fd;

			/*
			 * A sender may still be inside send_record() with it
			 * (woken by the shutdown, about to see the error):
			 * close it only when none is, so that no sender ever
			 * writes to a number that a new socket took.
			 */
			region_task_mutex_unlock(&x->lock);
			region_task_mutex_lock_nofail(&x->send_lock);
			nc__close_reset(cfd);
			region_task_mutex_unlock(&x->send_lock);
			region_task_mutex_lock_nofail(&x->lock);
			x->closing_fd = -1;
			region_task_cond_broadcast(&x->conn_cond);
			continue;
		}
		if (x->stop)
			break;
		if (x->conn != NC__CONN_UP) {
			/* Not a task: nothing can interrupt this wait. */
			int rc = region_task_cond_wait(&x->conn_cond, &x->lock,
						       TASK_UNINTERRUPTIBLE,
						       TASK_FOREVER);

			(void)rc;
			continue;
		}
		fd = x->fd;
		gen = x->gen;
		region_task_mutex_unlock(&x->lock);

		drop = rx_connection(x, fd, gen, &by_client, &garbage);

		region_task_mutex_lock_nofail(&x->lock);
		if (drop)
			rx_drop(x, gen, by_client, garbage);
	}
	x->rx_parked = false;
	region_task_mutex_unlock(&x->lock);
	return NULL;
}
