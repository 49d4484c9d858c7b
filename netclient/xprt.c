/*
 * The ONC RPC transport: one TCP connection to one server program, many
 * calls in flight, record marking (RFC 5531, section 11), AUTH_SYS, timeouts
 * and retransmission, hard/soft/softerr, reconnection.
 *
 * A call runs in its caller's task from start to finish, modeled as a small
 * loop over steps named after what they do (xprt_send_pending, the wait,
 * call_timeout): encode the record, take a slot (an entry in the XID table),
 * connect if needed, transmit, wait for the reply or a timeout, retransmit
 * with the same XID, decode.  A receiver thread per transport only reads:
 * it splits the stream into records, finds the call by XID and hands it the
 * reply; it never waits for anything but the socket, so a call never waits
 * behind another task's reply.
 *
 * The record send is the seed's scenario.  The send lock is taken with an
 * interruptible wait and the socket send waits interruptibly for room, the
 * way sendmsg() does; a signal is honoured only before the first byte.  Once
 * a byte is out the rest of the record is sent inside a nested killable
 * region, because a half record followed by another would desynchronise the
 * stream: when an interrupt pierces it anyway (a fatal one, or any under the
 * percall policy, which does not enforce regions) the connection is reset
 * and the other calls in flight are sent again on the next one.  On a soft
 * mount the rest of a record is waited for only until the call's major
 * timeout: then the connection is reset and the call fails, as every call
 * of a soft mount must.
 *
 * A connection can die without a word (a partition: no FIN, no RST) while
 * TCP backs off its retransmissions for minutes.  The receiver looks at the
 * socket twice a second while calls are in flight: data queued on a socket
 * that has had no acknowledgement for dead_after (timeo, within 1..10 s)
 * means the path is gone, and the connection is dropped and made again, with each connection
 * attempt bounded, so that calls go out as soon as the path is back; TCP
 * keepalive does the same for a connection where nothing is queued.
 * A stalled server (its kernel still acknowledges) is not a dead path.  When
 * a connection comes up, every call waiting is woken to send again at once.
 *
 * A stream that is not ONC RPC (a record too long, a record that is not a
 * reply, a reply that does not decode) is "not an RPC reply": -EPROTO.  On a
 * soft or softerr transport the calls in flight fail with it at once.
 *
 * Lock order: send_lock before lock.  lock protects the connection state,
 * the XID table and every call's state; it is held only for short sections
 * (never across a socket wait), so it is taken without an interruptible
 * wait.  The socket fd is closed only by the receiver thread, so that it
 * never reads a descriptor that has been reused, and only with send_lock
 * held, so that no sender writes to one: a sender checks, with send_lock
 * held, that its connection is still the current one.
 */
#include "netclient_i.h"

#include <arpa/inet.h>
#include <errno.h>
/* Not netinet/tcp.h: its struct tcp_info lacks tcpi_snd_wnd. */
#include <linux/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* Record marking: the last-fragment bit and the length of a fragment. */
#define RM_LAST 0x80000000u
#define RM_LEN_MASK 0x7fffffffu
/* The biggest reply we take: a full READ plus headers and attributes. */
#define REPLY_MAX (NC_MAX_IO + 64 * 1024)
/* Room for the RPC call header and the largest AUTH_SYS credential. */
#define CALL_HDR_MAX (64 + MAX_AUTH_BYTES)
#define XID_BUCKETS 256
#define RX_STAGING (64 * 1024)
/* nfs(5): timeo grows linearly, up to 600 seconds. */
#define TIMEO_MAX_NS (600ull * 1000000000ull)
#define DECISECOND_NS 100000000ull
/*
 * Reconnect backoff: from 100 ms, doubling, at most 2 s; one attempt waits
 * at most 2 s, after which a new socket sends a new SYN at once rather than
 * waiting for TCP's SYN backoff (1, 2, 4 s...) once the path is back.
 */
#define CONNECT_BACKOFF_MIN_NS 100000000ull
#define CONNECT_BACKOFF_MAX_NS 2000000000ull
#define CONNECT_ATTEMPT_MAX_NS 2000000000ull
/* A path is dead after this long without an acknowledgement: timeo, within. */
#define DEAD_AFTER_MIN_NS 1000000000ull
#define DEAD_AFTER_MAX_NS 10000000000ull
/* How often the receiver looks at the socket while calls are in flight. */
#define LIVENESS_POLL_MS 500
/* Keepalive probes, one a second, before an idle connection is dead. */
#define KEEPALIVE_PROBES 3

enum call_state {
	CALL_UNSENT, /* needs (re)transmission */
	CALL_SENT, /* sent on connection sent_gen, waiting */
	CALL_DONE, /* reply in hand, or failed (rc) */
};

struct nc_waiter {
	task_cond_t cond;
	struct nc_waiter *next_slot; /* on xprt->slot_waiters */
	bool on_slot_list;
};

struct nc_call {
	struct nc_rpc *rpc;
	uint32_t xid;
	struct nc_waiter *waiter;
	unsigned char *rec; /* record mark + call message but the tail */
	size_t rec_len;
	const unsigned char *tail; /* the rpc's tail, sent from where it is */
	size_t tail_len; /* with its XDR padding */

	/* Protected by xprt->lock. */
	enum call_state state;
	bool has_slot;
	uint64_t sent_gen;
	uint64_t deadline_ns; /* when the current timeout expires */
	uint64_t timeout_ns; /* the current timeout */
	uint64_t giveup_ns; /* soft: when the major timeout ends it; 0 */
	unsigned minor; /* retransmissions since the last major */
	unsigned char *reply;
	size_t reply_len;
	int rc;
	struct nc_call *hnext;
};

enum conn_state { CONN_DOWN, CONN_CONNECTING, CONN_UP };

struct nc_xprt {
	char server[256];
	struct sockaddr_in addr;
	uint32_t prog, vers;
	struct nc_opts opts;
	unsigned slots;
	struct nc_xstats *stats;
	char machname[64];
	enum task_mode mode; /* of every wait but the send primitive */

	task_mutex_t send_lock; /* serialises records on the stream */
	task_mutex_t lock;
	/* Everything below is protected by lock. */
	task_cond_t conn_cond; /* connection state and closing_fd changes */
	enum conn_state conn;
	int fd; /* -1 unless CONN_UP */
	int closing_fd; /* the receiver closes it; -1 when none */
	uint64_t gen; /* connection number, +1 per connect */
	uint16_t local_port; /* source port of the last connection */
	bool ever_connected;
	unsigned connect_failures;
	uint64_t next_connect_ns; /* no attempt before this */
	bool not_responding; /* "still trying" or "timed out" printed */
	bool garbage; /* the receiver found a stream not RPC */
	struct nc_call *table[XID_BUCKETS];
	unsigned inflight;
	struct nc_waiter *slot_waiters;
	uint32_t next_xid;
	bool stop;

	pthread_t rx;
	int rx_efd; /* wakes the receiver: stop, or a disconnect */
};

static void count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static enum task_mode wait_mode(enum nc_intr_mode m)
{
	switch (m) {
	case NC_INTR:
		return TASK_INTERRUPTIBLE;
	case NC_NOINTR:
		return TASK_UNINTERRUPTIBLE;
	case NC_KILLABLE:
		break;
	}
	return TASK_KILLABLE;
}

static uint64_t initial_timeout(const struct nc_xprt *x)
{
	uint64_t t =
		(uint64_t)(x->opts.timeo ? x->opts.timeo : 1) * DECISECOND_NS;

	return t < TIMEO_MAX_NS ? t : TIMEO_MAX_NS;
}

/* A soft call's whole budget: timeo, then timeo more per retransmission. */
static uint64_t major_budget(const struct nc_xprt *x)
{
	uint64_t t = 0, step = initial_timeout(x);

	for (unsigned i = 0; i <= x->opts.retrans; i++) {
		uint64_t to = step * (i + 1);

		t += to < TIMEO_MAX_NS ? to : TIMEO_MAX_NS;
	}
	return t;
}

static uint64_t dead_after(const struct nc_xprt *x)
{
	uint64_t t = initial_timeout(x);

	return t < DEAD_AFTER_MIN_NS ? DEAD_AFTER_MIN_NS :
	       t > DEAD_AFTER_MAX_NS ? DEAD_AFTER_MAX_NS :
				       t;
}

static int64_t until(uint64_t deadline)
{
	uint64_t now = region_now_ns();

	return deadline > now ? (int64_t)(deadline - now) : 0;
}

/* Encoding. */

bool_t nc_xdr_authsys(XDR *xdrs, const struct nc_cred *cred)
{
	struct authunix_parms p;
	gid_t gids[NC_MAX_GROUPS];
	char host[] = "intrfs";

	memset(&p, 0, sizeof(p));
	p.aup_time = 0;
	p.aup_machname = host;
	p.aup_uid = cred->uid;
	p.aup_gid = cred->gid;
	p.aup_len = cred->ngroups < NC_MAX_GROUPS ? cred->ngroups :
						    NC_MAX_GROUPS;
	for (unsigned i = 0; i < p.aup_len; i++)
		gids[i] = cred->groups[i];
	p.aup_gids = gids;
	return xdr_authunix_parms(xdrs, &p);
}

/* Builds the whole record (mark + call header + arguments) for call. */
static int encode_call(struct nc_xprt *x, struct nc_call *call)
{
	struct nc_rpc *r = call->rpc;
	char credbuf[MAX_AUTH_BYTES];
	struct rpc_msg msg;
	size_t args_len, cap;
	XDR xdrs;
	int err;

	memset(&msg, 0, sizeof(msg));
	msg.rm_xid = call->xid;
	msg.rm_direction = CALL;
	msg.rm_call.cb_rpcvers = RPC_MSG_VERSION;
	msg.rm_call.cb_prog = x->prog;
	msg.rm_call.cb_vers = x->vers;
	msg.rm_call.cb_proc = r->proc;
	msg.rm_call.cb_verf = _null_auth;
	if (r->cred) {
		xdrmem_create(&xdrs, credbuf, sizeof(credbuf), XDR_ENCODE);
		if (!nc_xdr_authsys(&xdrs, r->cred))
			return -EINVAL;
		msg.rm_call.cb_cred.oa_flavor = AUTH_SYS;
		msg.rm_call.cb_cred.oa_base = credbuf;
		msg.rm_call.cb_cred.oa_length = xdr_getpos(&xdrs);
		xdr_destroy(&xdrs);
	} else {
		msg.rm_call.cb_cred = _null_auth;
	}

	args_len = xdr_sizeof(r->xargs, (void *)r->argp);
	cap = 4 + CALL_HDR_MAX + args_len;
	err = -ENOMEM;
	call->rec = malloc(cap);
	if (!call->rec)
		goto out;
	xdrmem_create(&xdrs, (char *)call->rec + 4, (u_int)(cap - 4),
		      XDR_ENCODE);
	err = -EINVAL;
	if (!xdr_callmsg(&xdrs, &msg) || !r->xargs(&xdrs, (void *)r->argp))
		goto out_free_rec;
	call->rec_len = 4 + xdr_getpos(&xdrs);
	xdr_destroy(&xdrs);
	if (r->tail_len) {
		/*
		 * The arguments end with an empty opaque<>: its length word
		 * becomes the tail's, and the tail and its padding follow.
		 */
		uint32_t len;

		memcpy(&len, call->rec + call->rec_len - 4, 4);
		if (len != 0 || r->tail_len > NC_MAX_IO)
			goto out_free_rec_only;
		len = htonl(r->tail_len);
		memcpy(call->rec + call->rec_len - 4, &len, 4);
		call->tail = r->tail;
		call->tail_len = (r->tail_len + 3) & ~3u;
	}
	{
		uint32_t mark = htonl(RM_LAST | (uint32_t)(call->rec_len - 4 +
							   call->tail_len));

		memcpy(call->rec, &mark, 4);
	}
	return 0;

out_free_rec_only:
	free(call->rec);
	call->rec = NULL;
	return -EINVAL;

out_free_rec:
	xdr_destroy(&xdrs);
	free(call->rec);
	call->rec = NULL;
out:
	return err;
}

/* Decodes a reply; returns 0 with r->resp filled, or -errno. */
static int decode_reply(struct nc_xprt *x, struct nc_call *call)
{
	struct nc_rpc *r = call->rpc;
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
		count(&x->stats->bad_replies);
		rc = -EPROTO; /* not an RPC reply we can read */
	} else if (msg.rm_reply.rp_stat == MSG_DENIED) {
		rc = nc_rpc_reject_errno(msg.rjcted_rply.rj_stat,
					 msg.rjcted_rply.rj_why);
	} else if (msg.acpted_rply.ar_stat != SUCCESS) {
		rc = nc_rpc_accept_errno(msg.acpted_rply.ar_stat);
	}
	xdr_destroy(&xdrs);
	return rc;
}

/* The XID table and slots.  Called with x->lock held. */

static struct nc_call **bucket(struct nc_xprt *x, uint32_t xid)
{
	return &x->table[xid % XID_BUCKETS];
}

static void table_insert(struct nc_xprt *x, struct nc_call *call)
{
	struct nc_call **b = bucket(x, call->xid);

	call->hnext = *b;
	*b = call;
	call->has_slot = true;
	x->inflight++;
}

static void wake_slot_waiters(struct nc_xprt *x)
{
	while (x->slot_waiters) {
		struct nc_waiter *w = x->slot_waiters;

		x->slot_waiters = w->next_slot;
		w->on_slot_list = false;
		task_cond_signal(&w->cond);
	}
}

static void table_remove(struct nc_xprt *x, struct nc_call *call)
{
	struct nc_call **p;

	if (!call->has_slot)
		return;
	for (p = bucket(x, call->xid); *p; p = &(*p)->hnext) {
		if (*p == call) {
			*p = call->hnext;
			break;
		}
	}
	call->has_slot = false;
	x->inflight--;
	wake_slot_waiters(x);
}

static struct nc_call *table_find(struct nc_xprt *x, uint32_t xid)
{
	for (struct nc_call *c = *bucket(x, xid); c; c = c->hnext)
		if (c->xid == xid)
			return c;
	return NULL;
}

/* Wakes every task with a call in flight: the connection changed. */
static void wake_all_calls(struct nc_xprt *x)
{
	for (unsigned i = 0; i < XID_BUCKETS; i++)
		for (struct nc_call *c = x->table[i]; c; c = c->hnext)
			task_cond_signal(&c->waiter->cond);
}

/*
 * Drops the connection.  Called with x->lock held.  The receiver closes the
 * socket; with reset, it does so with an RST, which also spares the source
 * port a TIME_WAIT so that the next connection can reuse it.
 */
static void xprt_disconnect(struct nc_xprt *x, bool by_client)
{
	uint64_t one = 1;
	ssize_t n;

	if (x->conn != CONN_UP)
		return;
	if (by_client)
		count(&x->stats->resets);
	/*
	 * A close would not wake a task that polls the socket (its poll
	 * holds the socket open): shut it down, so that a sender stuck on a
	 * dead path sees the connection go and sends again on the next one.
	 */
	shutdown(x->fd, SHUT_RDWR);
	x->conn = CONN_DOWN;
	x->closing_fd = x->fd;
	x->fd = -1;
	n = write(x->rx_efd, &one, sizeof(one));
	(void)n;
	task_cond_broadcast(&x->conn_cond);
	wake_all_calls(x);
}

/* Connecting.  Called with x->lock held; drops it while it waits. */

static int open_socket(struct nc_xprt *x, uint16_t port)
{
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	{
		/* An idle connection whose path died goes in seconds. */
		int idle = (int)(dead_after(x) / 1000000000ull), intvl = 1,
		    cnt = KEEPALIVE_PROBES;

		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl,
			   sizeof(intvl));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	}
	/*
	 * Reusing the previous source port lets the server's duplicate
	 * request cache recognise a retransmitted call after a reconnect.
	 */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (port) {
		struct sockaddr_in local = { 0 };

		local.sin_family = AF_INET;
		local.sin_port = htons(port);
		if (bind(fd, (struct sockaddr *)&local, sizeof(local)) < 0) {
			close(fd);
			return -errno;
		}
	}
	return fd;
}

static int try_connect(struct nc_xprt *x, uint16_t port, uint64_t deadline,
		       int *out)
{
	socklen_t len = sizeof(int);
	int fd, rc, soerr = 0;

	fd = open_socket(x, port);
	if (fd < 0)
		return fd;
	if (connect(fd, (struct sockaddr *)&x->addr, sizeof(x->addr)) < 0) {
		if (errno != EINPROGRESS) {
			rc = -errno;
			goto out_close;
		}
		rc = task_wait_fd(fd, POLLOUT, x->mode,
				  deadline ? until(deadline) : TASK_FOREVER,
				  NULL);
		if (rc)
			goto out_close;
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
		if (soerr) {
			rc = -soerr;
			goto out_close;
		}
	}
	*out = fd;
	return 0;

out_close:
	close(fd);
	return rc;
}

/*
 * Makes sure the transport is up.  Returns 0, -EINTR, -ETIMEDOUT when the
 * deadline (0: none) passed first, -EAGAIN when the backoff says not yet
 * (*retry_at tells when), or the connect error.
 */
static int xprt_connect_locked(struct nc_xprt *x, uint64_t deadline,
			       uint64_t *retry_at)
{
	struct sockaddr_in local;
	socklen_t llen = sizeof(local);
	uint16_t port;
	int rc, fd = -1;

	for (;;) {
		if (x->stop)
			return -ESHUTDOWN;
		if (x->conn == CONN_UP)
			return 0;
		if (x->conn == CONN_DOWN && x->closing_fd < 0)
			break;
		/* Another task is connecting, or the old socket is closing. */
		rc = task_cond_wait(&x->conn_cond, &x->lock, x->mode,
				    deadline ? until(deadline) : TASK_FOREVER);
		if (rc)
			return rc;
	}
	if (region_now_ns() < x->next_connect_ns) {
		*retry_at = x->next_connect_ns;
		return -EAGAIN;
	}
	x->conn = CONN_CONNECTING;
	port = x->local_port;
	task_mutex_unlock(&x->lock);

	{
		uint64_t cap = region_now_ns() + CONNECT_ATTEMPT_MAX_NS;

		if (!deadline || deadline > cap)
			deadline = cap;
	}
	rc = port ? try_connect(x, port, deadline, &fd) : -EADDRINUSE;
	if (rc == -EADDRINUSE || rc == -EADDRNOTAVAIL)
		rc = try_connect(x, 0, deadline, &fd);
	if (rc == 0 && getsockname(fd, (struct sockaddr *)&local, &llen) < 0)
		local.sin_port = 0;

	task_mutex_lock_nofail(&x->lock);
	if (rc == 0 && x->stop) {
		close(fd);
		rc = -ESHUTDOWN;
	}
	if (rc) {
		unsigned shift = x->connect_failures < 7 ? x->connect_failures :
							   7;
		uint64_t backoff = CONNECT_BACKOFF_MIN_NS << shift;

		x->conn = CONN_DOWN;
		if (rc != -EINTR) {
			x->connect_failures++;
			if (backoff > CONNECT_BACKOFF_MAX_NS)
				backoff = CONNECT_BACKOFF_MAX_NS;
			x->next_connect_ns = region_now_ns() + backoff;
		}
		task_cond_broadcast(&x->conn_cond);
		return rc;
	}
	if (x->ever_connected) {
		count(&x->stats->reconnects);
		if (port && ntohs(local.sin_port) == port)
			count(&x->stats->same_port);
	}
	x->ever_connected = true;
	x->local_port = ntohs(local.sin_port);
	x->fd = fd;
	x->gen++;
	x->conn = CONN_UP;
	x->connect_failures = 0;
	x->next_connect_ns = 0;
	x->garbage = false;
	task_cond_broadcast(&x->conn_cond);
	/* Calls sent on the connection that went: send them again now. */
	wake_all_calls(x);
	return 0;
}

int nc_xprt_connect(struct nc_xprt *x)
{
	uint64_t retry_at = 0;
	int rc;

	task_mutex_lock_nofail(&x->lock);
	rc = xprt_connect_locked(x, region_now_ns() + initial_timeout(x),
				 &retry_at);
	task_mutex_unlock(&x->lock);
	return rc;
}

/* Sending. */

/*
 * Sends what is left of call's record from byte off on: the encoded part,
 * then the tail from the caller's buffer, then the tail's padding.
 */
static ssize_t send_from(int fd, const struct nc_call *call, size_t off)
{
	static const unsigned char zeros[4];
	const struct nc_rpc *r = call->rpc;
	struct iovec iov[3];
	struct msghdr msg = { 0 };
	size_t pad = call->tail_len - r->tail_len;
	int n = 0;

	if (off < call->rec_len) {
		iov[n++] =
			(struct iovec){ call->rec + off, call->rec_len - off };
		off = 0;
	} else {
		off -= call->rec_len;
	}
	if (off < r->tail_len) {
		iov[n++] = (struct iovec){ (void *)(call->tail + off),
					   r->tail_len - off };
		off = 0;
	} else {
		off -= r->tail_len;
	}
	if (off < pad)
		iov[n++] = (struct iovec){ (void *)(zeros + off), pad - off };
	msg.msg_iov = iov;
	msg.msg_iovlen = (size_t)n;
	return sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/*
 * Sends call's record whole on connection fd.  Called with send_lock held
 * and x->lock not held.  Returns 0; -EINTR when interrupted before the
 * first byte (nothing sent); -ECONNRESET when the connection broke or was
 * reset because an interrupt pierced a partly sent record; -ETIMEDOUT when
 * the deadline passed before the first byte; -ECANCELED when the call's
 * major timeout (soft) came with the record partly sent, and the
 * connection was reset.
 */
static int send_record(struct nc_xprt *x, struct nc_call *call, int fd,
		       uint64_t gen, uint64_t deadline)
{
	uint64_t giveup = call->giveup_ns;
	size_t total = call->rec_len + call->tail_len, off = 0;
	bool partial = false;
	int rc = 0;

	while (off < total) {
		ssize_t n = send_from(fd, call, off);

		if (n > 0) {
			off += (size_t)n;
			if (!partial && off < total) {
				/*
				 * From here on the record must go out whole:
				 * only a fatal interrupt may cut it, at the
				 * price of the connection.
				 */
				region_begin_killable(
					"rpc: record partly sent");
				partial = true;
			}
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			rc = -ECONNRESET;
			break;
		}
		/* The interruptible socket-send primitive: wait for room. */
		rc = task_wait_fd(fd, POLLOUT, TASK_INTERRUPTIBLE,
				  !partial && deadline ? until(deadline) :
				  partial && giveup    ? until(giveup) :
							 TASK_FOREVER,
				  NULL);
		if (rc == 0)
			continue;
		if (!partial)
			return rc; /* -EINTR or -ETIMEDOUT: nothing sent */
		/* Cut mid-record: the stream cannot be trusted any more. */
		task_mutex_lock_nofail(&x->lock);
		count(&x->stats->partial_resets);
		if (x->gen == gen)
			xprt_disconnect(x, true);
		task_mutex_unlock(&x->lock);
		if (rc == -ETIMEDOUT)
			rc = -ECANCELED; /* soft: the major timeout */
		else if (rc != -EINTR)
			rc = -ECONNRESET;
		break;
	}
	if (partial)
		region_end_killable();
	return rc;
}

/* Timeouts (nfs(5)): linear backoff, then a major timeout. */

/*
 * A soft or softerr call's major timeout: -EIO or -ETIMEDOUT, said once
 * until the server answers again, as Linux says it.  Called with x->lock
 * held.
 */
static int soft_timeout(struct nc_xprt *x)
{
	if (!x->not_responding) {
		x->not_responding = true;
		fprintf(stderr, "intrfs: server %s not responding, timed out\n",
			x->server);
	}
	return x->opts.timeo_mode == NC_SOFT ? -EIO : -ETIMEDOUT;
}

/*
 * A call's timeout expired.  Called with x->lock held.  Returns 0 to go on
 * (retransmit), or the error that ends the call (soft, softerr).
 */
static int call_timeout(struct nc_xprt *x, struct nc_call *call)
{
	call->minor++;
	if (call->minor <= x->opts.retrans) {
		call->timeout_ns += initial_timeout(x);
		if (call->timeout_ns > TIMEO_MAX_NS)
			call->timeout_ns = TIMEO_MAX_NS;
	} else {
		count(&x->stats->major_timeouts);
		if (x->opts.timeo_mode != NC_HARD)
			return soft_timeout(x);
		if (!x->not_responding) {
			x->not_responding = true;
			fprintf(stderr,
				"intrfs: server %s not responding%s, still "
				"trying\n",
				x->server,
				x->garbage ? " (it sends what is not an RPC "
					     "reply)" :
					     "");
		}
		/* As Linux does after a major timeout: start over. */
		call->minor = 0;
		call->timeout_ns = initial_timeout(x);
	}
	if (call->state == CALL_SENT) {
		call->state = CALL_UNSENT;
		count(&x->stats->retransmits);
	}
	call->deadline_ns = region_now_ns() + call->timeout_ns;
	return 0;
}

static void call_finish(struct nc_xprt *x, struct nc_call *call, int rc)
{
	call->state = CALL_DONE;
	call->rc = rc;
	table_remove(x, call);
}

/*
 * Sends every call of the batch that needs it.  Called with x->lock held;
 * drops it around the socket work.  Returns 0, -EINTR (the task was
 * interrupted: the caller ends the batch), or -EAGAIN with *retry_at set
 * when the connection cannot be made yet.
 */
static int xprt_send_pending(struct nc_xprt *x, struct nc_call *calls,
			     unsigned n, uint64_t *retry_at)
{
	for (unsigned i = 0; i < n; i++) {
		struct nc_call *call = &calls[i];
		uint64_t gen;
		int fd, rc;

		if (call->state == CALL_DONE)
			continue;
		if (call->state == CALL_SENT &&
		    (x->conn != CONN_UP || call->sent_gen != x->gen)) {
			/* Sent on a connection that is gone: again. */
			call->state = CALL_UNSENT;
			count(&x->stats->retransmits);
		}
		if (call->state != CALL_UNSENT)
			continue;
		if (!call->has_slot) {
			if (x->inflight >= x->slots)
				continue; /* woken when one frees */
			table_insert(x, call);
		}
		rc = xprt_connect_locked(x, call->deadline_ns, retry_at);
		if (rc == -EINTR || rc == -EAGAIN || rc == -ESHUTDOWN)
			return rc;
		if (rc) {
			/*
			 * A soft mount that never reached the server fails
			 * now with the reason; otherwise the call's timeouts
			 * decide, and the backoff paces the attempts.
			 */
			if (!x->ever_connected &&
			    x->opts.timeo_mode != NC_HARD && rc != -ETIMEDOUT) {
				call_finish(x, call, rc);
				continue;
			}
			*retry_at = x->next_connect_ns;
			return -EAGAIN;
		}
		fd = x->fd;
		gen = x->gen;
		task_mutex_unlock(&x->lock);

		rc = task_mutex_lock(&x->send_lock, TASK_INTERRUPTIBLE,
				     until(call->deadline_ns));
		if (rc == 0) {
			bool current;

			/*
			 * The socket is closed only with send_lock held: if
			 * its connection is still the current one, fd is
			 * still that socket (not a number reused since).
			 */
			task_mutex_lock_nofail(&x->lock);
			current = x->gen == gen && x->conn == CONN_UP;
			task_mutex_unlock(&x->lock);
			rc = current ? send_record(x, call, fd, gen,
						   call->deadline_ns) :
				       -ECONNRESET;
			task_mutex_unlock(&x->send_lock);
		}

		task_mutex_lock_nofail(&x->lock);
		/*
		 * The reply may have come while x->lock was dropped: the call
		 * is done then, and must stay so.
		 */
		if (call->state == CALL_DONE)
			continue;
		if (rc == -EINTR)
			return rc;
		if (rc == 0 && x->gen == gen && x->conn == CONN_UP) {
			call->state = CALL_SENT;
			call->sent_gen = gen;
		} else if (rc == -ECANCELED) {
			count(&x->stats->major_timeouts);
			call_finish(x, call, soft_timeout(x));
		} else if (rc == -ECONNRESET) {
			if (x->gen == gen)
				xprt_disconnect(x, false);
		}
		/* -ETIMEDOUT: the wait below runs the timeout at once. */
	}
	return 0;
}

/* The earliest deadline among calls still running. */
static uint64_t next_deadline(struct nc_call *calls, unsigned n)
{
	uint64_t d = 0;

	for (unsigned i = 0; i < n; i++)
		if (calls[i].state != CALL_DONE &&
		    (!d || calls[i].deadline_ns < d))
			d = calls[i].deadline_ns;
	return d;
}

static bool all_done(struct nc_call *calls, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (calls[i].state != CALL_DONE)
			return false;
	return true;
}

/*
 * Runs call_timeout() for every call whose deadline has passed; true if
 * any did.  Called with x->lock held.
 */
static bool run_timeouts(struct nc_xprt *x, struct nc_call *calls, unsigned n)
{
	uint64_t now = region_now_ns();
	bool any = false;

	for (unsigned i = 0; i < n; i++) {
		struct nc_call *call = &calls[i];
		int err;

		if (call->state == CALL_DONE || now < call->deadline_ns)
			continue;
		any = true;
		err = call_timeout(x, call);
		if (err)
			call_finish(x, call, err);
	}
	return any;
}

/*
 * Whether a call of the batch can go out now: the connection is up, and
 * the call went out on another one, or never did and has room.  Called
 * with x->lock held.
 */
static bool can_send_now(struct nc_xprt *x, struct nc_call *calls, unsigned n)
{
	if (x->conn != CONN_UP)
		return false;
	for (unsigned i = 0; i < n; i++) {
		const struct nc_call *call = &calls[i];

		if (call->state == CALL_SENT && call->sent_gen != x->gen)
			return true;
		if (call->state == CALL_UNSENT &&
		    (call->has_slot || x->inflight < x->slots))
			return true;
	}
	return false;
}

/* Every call has gone out whole at least once, or has its reply. */
static bool all_sent(struct nc_call *calls, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (calls[i].state == CALL_UNSENT ||
		    (calls[i].state == CALL_DONE && calls[i].rc != 0))
			return false;
	return true;
}

int nc_xprt_batch_notify(struct nc_xprt *x, struct nc_rpc *rpcs, unsigned n,
			 const struct nc_sent_notify *sent)
{
	struct nc_waiter waiter = { 0 };
	struct nc_call *calls;
	int first = 0, rc;
	uint64_t start;

	if (n == 0)
		return 0;
	calls = calloc(n, sizeof(*calls));
	if (!calls) {
		for (unsigned i = 0; i < n; i++)
			rpcs[i].rc = -ENOMEM;
		return -ENOMEM;
	}
	task_cond_init(&waiter.cond);

	task_mutex_lock_nofail(&x->lock);
	start = region_now_ns();
	for (unsigned i = 0; i < n; i++) {
		struct nc_call *call = &calls[i];

		call->rpc = &rpcs[i];
		call->waiter = &waiter;
		call->xid = x->next_xid++;
		call->timeout_ns = initial_timeout(x);
		call->deadline_ns = start + call->timeout_ns;
		call->giveup_ns = x->opts.timeo_mode == NC_HARD ?
					  0 :
					  start + major_budget(x);
		call->state = CALL_UNSENT;
	}
	task_mutex_unlock(&x->lock);
	for (unsigned i = 0; i < n; i++) {
		rc = encode_call(x, &calls[i]);
		if (rc) {
			calls[i].state = CALL_DONE;
			calls[i].rc = rc;
		}
	}

	task_mutex_lock_nofail(&x->lock);
	for (;;) {
		uint64_t retry_at = 0, wake;

		if (x->stop) {
			rc = -ESHUTDOWN;
			break;
		}
		rc = xprt_send_pending(x, calls, n, &retry_at);
		if (rc == -EINTR || rc == -ESHUTDOWN)
			break;
		if (all_done(calls, n))
			break;
		if (sent && all_sent(calls, n)) {
			/* Once, and not under the lock: it may reply to FUSE. */
			task_mutex_unlock(&x->lock);
			sent->fn(sent->arg);
			sent = NULL;
			task_mutex_lock_nofail(&x->lock);
			continue;
		}
		/* Timeouts: every call whose deadline has passed. */
		if (run_timeouts(x, calls, n)) {
			if (all_done(calls, n))
				break;
			continue;
		}
		/*
		 * A connection that changed while the lock was dropped woke
		 * nobody waiting yet: look before sleeping.
		 */
		if (can_send_now(x, calls, n))
			continue;
		wake = next_deadline(calls, n);
		if (rc == -EAGAIN && retry_at && retry_at < wake)
			wake = retry_at;
		if (x->inflight >= x->slots && !waiter.on_slot_list) {
			waiter.next_slot = x->slot_waiters;
			x->slot_waiters = &waiter;
			waiter.on_slot_list = true;
		}
		rc = task_cond_wait(&waiter.cond, &x->lock, x->mode,
				    until(wake));
		if (rc == -EINTR)
			break;
		rc = 0;
	}
	/* Whatever is still running ends with the reason the loop ended. */
	for (unsigned i = 0; i < n; i++) {
		if (calls[i].state != CALL_DONE) {
			call_finish(x, &calls[i], rc ? rc : -EIO);
			if (rc == -EINTR)
				count(&x->stats->interrupted);
		}
	}
	if (waiter.on_slot_list) {
		struct nc_waiter **p;

		for (p = &x->slot_waiters; *p; p = &(*p)->next_slot)
			if (*p == &waiter) {
				*p = waiter.next_slot;
				break;
			}
	}
	task_mutex_unlock(&x->lock);

	for (unsigned i = 0; i < n; i++) {
		struct nc_call *call = &calls[i];

		if (call->rc == 0 && call->reply)
			call->rc = decode_reply(x, call);
		else if (call->rc == 0)
			call->rc = -EIO;
		rpcs[i].rc = call->rc;
		if (call->rc && !first)
			first = call->rc;
		count(&x->stats->calls);
		free(call->reply);
		free(call->rec);
	}
	task_cond_destroy(&waiter.cond);
	free(calls);
	return first;
}

int nc_xprt_batch(struct nc_xprt *x, struct nc_rpc *rpcs, unsigned n)
{
	return nc_xprt_batch_notify(x, rpcs, n, NULL);
}

int nc_xprt_call(struct nc_xprt *x, struct nc_rpc *r)
{
	return nc_xprt_batch(x, r, 1);
}

/* Receiving: the receiver thread. */

/*
 * Hands a complete record to its call.  Takes ownership of rec.  Returns
 * -EPROTO for a record that is not an RPC reply at all.
 */
static int deliver(struct nc_xprt *x, unsigned char *rec, size_t len)
{
	struct nc_call *call;
	uint32_t xid, dir;

	if (len < 8) {
		count(&x->stats->bad_replies);
		free(rec);
		return -EPROTO;
	}
	memcpy(&xid, rec, 4);
	memcpy(&dir, rec + 4, 4);
	/* XDR put both in network order. */
	xid = ntohl(xid);
	if (ntohl(dir) != REPLY) {
		count(&x->stats->bad_replies);
		free(rec);
		return -EPROTO;
	}
	task_mutex_lock_nofail(&x->lock);
	call = table_find(x, xid);
	if (!call || call->state == CALL_DONE) {
		count(&x->stats->unknown_xids);
		task_mutex_unlock(&x->lock);
		free(rec);
		return 0;
	}
	call->reply = rec;
	call->reply_len = len;
	call_finish(x, call, 0);
	task_cond_signal(&call->waiter->cond);
	if (x->not_responding) {
		x->not_responding = false;
		fprintf(stderr, "intrfs: server %s OK\n", x->server);
	}
	task_mutex_unlock(&x->lock);
	return 0;
}

/*
 * Ends every call in flight with rc (a stream that is not RPC, on a
 * transport that does not retry for ever).  Called with x->lock held.
 */
static void fail_all_calls(struct nc_xprt *x, int rc)
{
	for (unsigned i = 0; i < XID_BUCKETS; i++) {
		while (x->table[i]) {
			struct nc_call *c = x->table[i];

			call_finish(x, c, rc);
			task_cond_signal(&c->waiter->cond);
		}
	}
}

/* The record parser's state. */
struct rx {
	unsigned char staging[RX_STAGING];
	size_t have, pos; /* staging[pos, have) not consumed */
	unsigned char mark[4];
	unsigned mark_have;
	size_t frag_left; /* bytes of the current fragment still due */
	bool last; /* the current fragment is the record's last */
	unsigned char *rec;
	size_t rec_len, rec_cap;
};

static void rx_reset(struct rx *rx)
{
	free(rx->rec);
	rx->rec = NULL;
	rx->rec_len = rx->rec_cap = 0;
	rx->have = rx->pos = 0;
	rx->mark_have = 0;
	rx->frag_left = 0;
	rx->last = false;
}

/*
 * Consumes staged bytes.  Returns 0, or -EPROTO when the stream can no
 * longer be trusted (a record beyond REPLY_MAX, or one that is not a
 * reply).
 */
static int rx_parse(struct nc_xprt *x, struct rx *rx)
{
	while (rx->pos < rx->have) {
		size_t avail = rx->have - rx->pos, take;

		if (rx->frag_left == 0 && rx->mark_have < 4) {
			uint32_t m;

			take = 4 - rx->mark_have < avail ? 4 - rx->mark_have :
							   avail;
			memcpy(rx->mark + rx->mark_have, rx->staging + rx->pos,
			       take);
			rx->mark_have += (unsigned)take;
			rx->pos += take;
			if (rx->mark_have < 4)
				break;
			memcpy(&m, rx->mark, 4);
			m = ntohl(m);
			rx->last = (m & RM_LAST) != 0;
			rx->frag_left = m & RM_LEN_MASK;
			if (rx->rec_len + rx->frag_left > REPLY_MAX) {
				count(&x->stats->bad_replies);
				return -EPROTO;
			}
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
		take = rx->frag_left < rx->have - rx->pos ? rx->frag_left :
							    rx->have - rx->pos;
		memcpy(rx->rec + rx->rec_len, rx->staging + rx->pos, take);
		rx->rec_len += take;
		rx->pos += take;
		rx->frag_left -= take;
		if (rx->frag_left == 0) {
			rx->mark_have = 0;
			if (rx->last) {
				int rc = deliver(x, rx->rec, rx->rec_len);

				rx->rec = NULL;
				rx->rec_len = rx->rec_cap = 0;
				if (rc)
					return rc;
			}
		}
	}
	if (rx->pos == rx->have)
		rx->pos = rx->have = 0;
	return 0;
}

/*
 * Whether the path to the server is dead: data in flight that the server's
 * TCP has not acknowledged for dead_after(), while calls wait.
 */
static bool path_dead(struct nc_xprt *x, int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	unsigned inflight;
	int outq = 0;

	task_mutex_lock_nofail(&x->lock);
	inflight = x->inflight;
	task_mutex_unlock(&x->lock);
	if (!inflight || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
		return false;
	/*
	 * Bytes queued, sent or not (TCP in loss recovery may hold back
	 * what it has not sent), into a window the server opened, with no
	 * ACK for that long.  A stopped server's kernel closes the window
	 * instead, and answers the probes (ever rarer) that test it.
	 */
	if (ioctl(fd, SIOCOUTQ, &outq) < 0 || outq == 0 ||
	    ti.tcpi_snd_wnd == 0 ||
	    (uint64_t)ti.tcpi_last_ack_recv * 1000000ull < dead_after(x))
		return false;
	fprintf(stderr,
		"intrfs: server %s has acknowledged nothing for %u s: "
		"dropping the connection and making a new one\n",
		x->server, ti.tcpi_last_ack_recv / 1000);
	return true;
}

/*
 * Reads from fd until the connection ends, the transport stops or a
 * disconnect wakes us.  Returns true when the receiver should drop the
 * connection itself (EOF, error, untrustworthy stream, dead path).
 */
static bool rx_connection(struct nc_xprt *x, struct rx *rx, int fd,
			  uint64_t gen, bool *by_client, bool *garbage)
{
	struct pollfd p[2] = { { fd, POLLIN, 0 }, { x->rx_efd, POLLIN, 0 } };

	for (;;) {
		ssize_t n;
		int ready = poll(p, 2, LIVENESS_POLL_MS);

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
			bool gone;

			n = read(x->rx_efd, &v, sizeof(v));
			(void)n;
			task_mutex_lock_nofail(&x->lock);
			gone = x->stop || x->gen != gen || x->conn != CONN_UP;
			task_mutex_unlock(&x->lock);
			if (gone)
				return false;
		}
		if (!p[0].revents)
			continue;
		n = recv(fd, rx->staging + rx->have,
			 sizeof(rx->staging) - rx->have, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			return true; /* EOF or a broken connection */
		rx->have += (size_t)n;
		if (rx_parse(x, rx) < 0) {
			*by_client = true;
			*garbage = true;
			return true;
		}
	}
}

static void close_reset(int fd)
{
	struct linger lg = { 1, 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

static void *rx_main(void *arg)
{
	struct nc_xprt *x = arg;
	struct rx *rx = calloc(1, sizeof(*rx));

	if (!rx)
		abort();
	task_mutex_lock_nofail(&x->lock);
	for (;;) {
		bool by_client = false, garbage = false, drop;
		uint64_t gen;
		int fd;

		if (x->closing_fd >= 0) {
			int cfd = x->closing_fd;

			/*
			 * A sender may still be inside send_record() with it
			 * (woken by the shutdown, about to see the error):
			 * close it only when none is, so that no sender ever
			 * writes to a number that a new socket took.
			 */
			task_mutex_unlock(&x->lock);
			task_mutex_lock_nofail(&x->send_lock);
			close_reset(cfd);
			task_mutex_unlock(&x->send_lock);
			task_mutex_lock_nofail(&x->lock);
			x->closing_fd = -1;
			task_cond_broadcast(&x->conn_cond);
			continue;
		}
		if (x->stop)
			break;
		if (x->conn != CONN_UP) {
			/* Not a task: nothing can interrupt this wait. */
			int rc = task_cond_wait(&x->conn_cond, &x->lock,
						TASK_UNINTERRUPTIBLE,
						TASK_FOREVER);

			(void)rc;
			continue;
		}
		fd = x->fd;
		gen = x->gen;
		task_mutex_unlock(&x->lock);

		rx_reset(rx);
		drop = rx_connection(x, rx, fd, gen, &by_client, &garbage);

		task_mutex_lock_nofail(&x->lock);
		if (drop && x->gen == gen && x->conn == CONN_UP)
			xprt_disconnect(x, by_client);
		if (garbage) {
			x->garbage = true;
			/* Sending again would get the same: soft ends here. */
			if (x->opts.timeo_mode != NC_HARD)
				fail_all_calls(x, -EPROTO);
		}
	}
	task_mutex_unlock(&x->lock);
	rx_reset(rx);
	free(rx);
	return NULL;
}

/* Creation. */

int nc_xprt_create(const struct nc_xprt_cfg *cfg, struct nc_xprt **out)
{
	struct nc_xprt *x;
	int err;

	err = -ENOMEM;
	x = calloc(1, sizeof(*x));
	if (!x)
		goto out;
	snprintf(x->server, sizeof(x->server), "%s", cfg->server);
	x->addr = cfg->addr;
	x->prog = cfg->prog;
	x->vers = cfg->vers;
	x->opts = *cfg->opts;
	x->slots = cfg->slots	    ? cfg->slots :
		   cfg->opts->slots ? cfg->opts->slots :
				      1;
	x->stats = cfg->stats;
	x->mode = wait_mode(cfg->opts->intr_mode);
	x->fd = x->closing_fd = -1;
	/* A random start, so that a restarted client does not reuse XIDs. */
	x->next_xid = (uint32_t)region_now_ns() ^ (uint32_t)getpid() << 16;
	task_mutex_init(&x->send_lock);
	task_mutex_init(&x->lock);
	task_cond_init(&x->conn_cond);
	x->rx_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (x->rx_efd < 0) {
		err = -errno;
		goto out_free;
	}
	err = -pthread_create(&x->rx, NULL, rx_main, x);
	if (err)
		goto out_close_efd;
	*out = x;
	return 0;

out_close_efd:
	close(x->rx_efd);
out_free:
	free(x);
out:
	return err;
}

void nc_xprt_set_opts(struct nc_xprt *x, const struct nc_opts *o)
{
	task_mutex_lock_nofail(&x->lock);
	x->opts = *o;
	x->mode = wait_mode(o->intr_mode);
	task_mutex_unlock(&x->lock);
}

void nc_xprt_shutdown(struct nc_xprt *x)
{
	task_mutex_lock_nofail(&x->lock);
	x->stop = true;
	xprt_disconnect(x, false);
	task_cond_broadcast(&x->conn_cond);
	wake_all_calls(x);
	task_mutex_unlock(&x->lock);
}

void nc_client_shutdown(nc_client_t *c)
{
	if (c && c->nfs)
		nc_xprt_shutdown(c->nfs);
}

void nc_xprt_destroy(struct nc_xprt *x)
{
	uint64_t one = 1;
	ssize_t n;

	if (!x)
		return;
	task_mutex_lock_nofail(&x->lock);
	x->stop = true;
	xprt_disconnect(x, false);
	task_cond_broadcast(&x->conn_cond);
	task_mutex_unlock(&x->lock);
	n = write(x->rx_efd, &one, sizeof(one));
	(void)n;
	pthread_join(x->rx, NULL);
	if (x->closing_fd >= 0)
		close_reset(x->closing_fd);
	close(x->rx_efd);
	task_cond_destroy(&x->conn_cond);
	task_mutex_destroy(&x->lock);
	task_mutex_destroy(&x->send_lock);
	free(x);
}
