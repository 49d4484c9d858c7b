/*
 * The ONC RPC transport's calls: one TCP connection to one server program,
 * many calls in flight, record marking (RFC 5531, section 11), AUTH_SYS,
 * timeouts and retransmission, hard/soft/softerr, reconnection.  The
 * receiver thread, which reads the replies, is in xprt_recv.c; the state
 * both share is in xprt_i.h.  The transport knows nothing of NFS nor of
 * mount options: it runs with the timeouts, wait mode and slots its
 * nc__xprt_cfg gives.
 *
 * A call runs in its caller's task from start to finish, modeled as a small
 * loop over steps named after what they do (xprt_send_pending, the wait,
 * call_timeout): encode the record, take a slot (an entry in the XID table),
 * connect if needed, transmit, wait for the reply or a timeout, retransmit
 * with the same XID, decode.  A call never waits behind another task's
 * reply: the receiver hands each reply to its own call.
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
 * A connection the receiver finds dead (xprt_recv.c) is made again with
 * each connection attempt bounded, so that calls go out as soon as the path
 * is back; TCP keepalive drops a connection where nothing is queued the
 * same way.  When a connection comes up, every call waiting is woken to
 * send again at once.
 *
 * Nothing here closes a socket that made it to NC__CONN_UP while the
 * receiver runs: the receiver does.  Nothing here waits with x->lock held
 * but on a condition of that lock.
 *
 * Lock order (xprt_i.h): send_lock before lock.  lock protects the
 * connection state, the timeouts, the XID table and every call's state; it
 * is held only for short sections (never across a socket wait), so it is
 * taken without an interruptible wait.  A sender checks, with send_lock
 * held, that its connection is still the current one: the receiver closes
 * a dropped socket only with send_lock held, so no sender ever writes to a
 * descriptor number that a new socket took.
 */
#include "xprt_i.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* Room for the RPC call header and the largest AUTH_SYS credential. */
#define CALL_HDR_MAX (64 + MAX_AUTH_BYTES)
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
#define NS_PER_SEC 1000000000ull
/* Keepalive probes, one a second, before an idle connection is dead. */
#define KEEPALIVE_PROBES 3

/* Timing. */

/*
 * From a call's first transmission (or a hard call's last major timeout)
 * to its major timeout: the first timeout and an increment per retry, at
 * most max_ns, as Linux's xprt_calc_majortimeo() has it.
 */
static uint64_t major_budget(const struct nc__timeout *to)
{
	uint64_t t = to->initial_ns + (uint64_t)to->retries * to->increment_ns;

	return t && t < to->max_ns ? t : to->max_ns;
}

/* The next timeout's deadline: no wait goes past the major timeout. */
static void set_deadline(struct nc__call *call, uint64_t now)
{
	call->deadline_ns = now + call->timeout_ns;
	if (call->deadline_ns > call->major_ns)
		call->deadline_ns = call->major_ns;
}

uint64_t nc__xprt_dead_after(const struct nc__xprt *x)
{
	uint64_t t = x->timeout.initial_ns;

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

/* The AUTH_SYS credential body (RFC 5531, appendix A). */
static bool_t xdr_authsys(XDR *xdrs, const struct nc_cred *cred)
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
static int encode_call(struct nc__xprt *x, struct nc__call *call)
{
	struct nc__rpc *r = call->rpc;
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
		if (!xdr_authsys(&xdrs, r->cred))
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
		uint32_t mark =
			htonl(NC__RM_LAST |
			      (uint32_t)(call->rec_len - 4 + call->tail_len));

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

/* The XID table and slots.  Called with x->lock held. */

void nc__xid_insert(struct nc__xprt *x, struct nc__call *call)
{
	struct nc__call **b = nc__xid_bucket(x, call->xid);

	call->hnext = *b;
	*b = call;
	call->has_slot = true;
	x->inflight++;
}

static void wake_slot_waiters(struct nc__xprt *x)
{
	while (x->slot_waiters) {
		struct nc__waiter *w = x->slot_waiters;

		x->slot_waiters = w->next_slot;
		w->on_slot_list = false;
		region_task_cond_signal(&w->cond);
	}
}

static void xid_remove(struct nc__xprt *x, struct nc__call *call)
{
	struct nc__call **p;

	if (!call->has_slot)
		return;
	for (p = nc__xid_bucket(x, call->xid); *p; p = &(*p)->hnext) {
		if (*p == call) {
			*p = call->hnext;
			break;
		}
	}
	call->has_slot = false;
	x->inflight--;
	wake_slot_waiters(x);
}

void nc__call_finish(struct nc__xprt *x, struct nc__call *call, int rc)
{
	if (rc && call->has_slot && call->state == NC__CALL_SENT &&
	    call->sent_gen == x->gen && !call->reply)
		x->orphans++;
	call->state = NC__CALL_DONE;
	call->rc = rc;
	xid_remove(x, call);
}

unsigned nc__xprt_task_calls(struct nc__xprt *x, const task_t *t,
			     struct nc_call_info *out, unsigned max)
{
	unsigned n = 0;

	region_task_mutex_lock_nofail(&x->lock);
	for (unsigned i = 0; i < NC__XID_BUCKETS && n < max; i++)
		for (struct nc__call *c = x->table[i]; c && n < max;
		     c = c->hnext)
			if (c->task == t)
				out[n++] = (struct nc_call_info){
					c->xid, c->rpc->proc, c->sends,
					c->state == NC__CALL_SENT
				};
	region_task_mutex_unlock(&x->lock);
	return n;
}

/* Wakes every task with a call in flight: the connection changed. */
static void wake_all_calls(struct nc__xprt *x)
{
	for (unsigned i = 0; i < NC__XID_BUCKETS; i++)
		for (struct nc__call *c = x->table[i]; c; c = c->hnext)
			region_task_cond_signal(&c->waiter->cond);
}

/*
 * The next connect waits: from 100 ms, doubling with each failure, at most
 * 2 s.  Called with x->lock held.
 */
static void back_off(struct nc__xprt *x)
{
	unsigned shift = x->connect_failures < 7 ? x->connect_failures : 7;
	uint64_t backoff = CONNECT_BACKOFF_MIN_NS << shift;

	if (backoff > CONNECT_BACKOFF_MAX_NS)
		backoff = CONNECT_BACKOFF_MAX_NS;
	x->connect_failures++;
	x->next_connect_ns = region_now_ns() + backoff;
}

/*
 * Drops the connection.  Called with x->lock held.  The receiver closes the
 * socket, with an RST, which also spares the source port a TIME_WAIT so
 * that the next connection can reuse it.
 */
static enum task_mode wait_mode_of(const struct nc__xprt *x)
{
	/* relaxed: a mode switched live reaches waits that start later. */
	return (enum task_mode)atomic_load_explicit(&x->wait_mode,
						    memory_order_relaxed);
}

uint64_t nc__xprt_idle_ns(struct nc__xprt *x)
{
	uint64_t last = atomic_load_explicit(&x->last_io_ns,
					     memory_order_relaxed),
		 now = region_now_ns();

	return last && now > last ? now - last : 0;
}

unsigned nc__xprt_local_port(struct nc__xprt *x)
{
	unsigned port;

	region_task_mutex_lock_nofail(&x->lock);
	port = x->ever_connected ? x->local_port : 0;
	region_task_mutex_unlock(&x->lock);
	return port;
}

void nc__xprt_set_wait_mode(struct nc__xprt *x, enum task_mode mode)
{
	atomic_store_explicit(&x->wait_mode, (unsigned)mode,
			      memory_order_relaxed);
}

static enum task_mode send_mode_of(const struct nc__xprt *x)
{
	/* relaxed: as wait_mode_of(). */
	return (enum task_mode)atomic_load_explicit(&x->send_mode,
						    memory_order_relaxed);
}

void nc__xprt_set_send_mode(struct nc__xprt *x, enum task_mode mode)
{
	atomic_store_explicit(&x->send_mode, (unsigned)mode,
			      memory_order_relaxed);
}

/* The event hook (netclient.h); the argument is set before the function. */
static _Atomic(void (*)(const struct nc_event *, void *)) event_fn;
static void *_Atomic event_arg;

void nc_set_event_hook(void (*fn)(const struct nc_event *, void *), void *arg)
{
	atomic_store_explicit(&event_arg, arg, memory_order_relaxed);
	/* release: the argument is seen with the function. */
	atomic_store_explicit(&event_fn, fn, memory_order_release);
}

void nc__event(const struct nc__xprt *x, enum nc_event_type type,
	       const struct nc__call *call, bool by_client, bool partial)
{
	/* acquire: pairs with nc_set_event_hook(). */
	void (*fn)(const struct nc_event *, void *) =
		atomic_load_explicit(&event_fn, memory_order_acquire);
	struct nc_event ev = { 0 };

	if (!fn)
		return;
	ev.type = type;
	ev.prog = x->prog;
	ev.by_client = by_client;
	ev.partial = partial;
	if (call) {
		ev.xid = call->xid;
		ev.proc = call->rpc->proc;
		if (type == NC_EV_REPLY && call->last_sent_ns &&
		    call->reply_ns >= call->last_sent_ns)
			ev.rtt_ns = call->reply_ns - call->last_sent_ns;
	}
	fn(&ev, atomic_load_explicit(&event_arg, memory_order_relaxed));
}

void nc__xprt_disconnect(struct nc__xprt *x, bool by_client)
{
	uint64_t one = 1;
	ssize_t n;

	if (x->conn != NC__CONN_UP)
		return;
	nc__event(x, NC_EV_RESET, x->cut_call, by_client, x->cut_call != NULL);
	if (by_client)
		nc__count(&x->stats->resets);
	else if (!x->replied)
		/*
		 * The server ended a connection it answered nothing on (it
		 * accepts and closes, or something in between does): the
		 * next one waits as after a failed connect, rather than
		 * connecting again hundreds of times a second.
		 */
		back_off(x);
	/*
	 * A close would not wake a task that polls the socket (its poll
	 * holds the socket open): shut it down, so that a sender stuck on a
	 * dead path sees the connection go and sends again on the next one.
	 */
	shutdown(x->fd, SHUT_RDWR);
	x->conn = NC__CONN_DOWN;
	x->closing_fd = x->fd;
	x->fd = -1;
	n = write(x->rx_efd, &one, sizeof(one));
	(void)n;
	region_task_cond_broadcast(&x->conn_cond);
	wake_all_calls(x);
}

/*
 * Connecting.  xprt_connect_locked() is called with x->lock held and drops
 * it while it connects; the socket work below it runs without the lock.
 */

/*
 * A non-blocking socket, bound to port unless 0, whose keepalive drops an
 * idle connection after keepidle seconds of silence and a few probes.
 */
static int open_socket(uint16_t port, int keepidle)
{
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	{
		/* An idle connection whose path died goes in seconds. */
		int intvl = 1, cnt = KEEPALIVE_PROBES;

		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &keepidle,
			   sizeof(keepidle));
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

static int try_connect(struct nc__xprt *x, uint16_t port, int keepidle,
		       uint64_t deadline, int *out)
{
	socklen_t len = sizeof(int);
	int fd, rc, soerr = 0;

	fd = open_socket(port, keepidle);
	if (fd < 0)
		return fd;
	if (connect(fd, (struct sockaddr *)&x->addr, sizeof(x->addr)) < 0) {
		if (errno != EINPROGRESS) {
			rc = -errno;
			goto out_close;
		}
		rc = region_task_wait_fd(
			fd, POLLOUT, wait_mode_of(x),
			deadline ? until(deadline) : TASK_FOREVER, NULL);
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
static int xprt_connect_locked(struct nc__xprt *x, uint64_t deadline,
			       uint64_t *retry_at)
{
	struct sockaddr_in local;
	socklen_t llen = sizeof(local);
	uint16_t port;
	uint64_t t0;
	int rc, keepidle, fd = -1;

	for (;;) {
		if (x->stop)
			return -ESHUTDOWN;
		if (x->conn == NC__CONN_UP)
			return 0;
		if (x->conn == NC__CONN_DOWN && x->closing_fd < 0)
			break;
		/* Another task is connecting, or the old socket is closing. */
		rc = region_task_cond_wait(
			&x->conn_cond, &x->lock, wait_mode_of(x),
			deadline ? until(deadline) : TASK_FOREVER);
		if (rc)
			return rc;
	}
	if (region_now_ns() < x->next_connect_ns) {
		*retry_at = x->next_connect_ns;
		return -EAGAIN;
	}
	x->conn = NC__CONN_CONNECTING;
	port = x->local_port;
	/* An idle connection whose path died goes in seconds. */
	keepidle = (int)(nc__xprt_dead_after(x) / NS_PER_SEC);
	region_task_mutex_unlock(&x->lock);

	t0 = region_now_ns();
	if (!deadline || deadline > t0 + CONNECT_ATTEMPT_MAX_NS)
		deadline = t0 + CONNECT_ATTEMPT_MAX_NS;
	rc = port ? try_connect(x, port, keepidle, deadline, &fd) : -EADDRINUSE;
	if (rc == -EADDRINUSE || rc == -EADDRNOTAVAIL)
		rc = try_connect(x, 0, keepidle, deadline, &fd);
	/* relaxed: a statistic. */
	atomic_fetch_add_explicit(&x->stats->connect_ns, region_now_ns() - t0,
				  memory_order_relaxed);
	if (rc == 0 && getsockname(fd, (struct sockaddr *)&local, &llen) < 0)
		local.sin_port = 0;

	region_task_mutex_lock_nofail(&x->lock);
	if (rc == 0 && x->stop) {
		close(fd);
		rc = -ESHUTDOWN;
	}
	if (rc) {
		x->conn = NC__CONN_DOWN;
		if (rc != -EINTR)
			back_off(x);
		region_task_cond_broadcast(&x->conn_cond);
		return rc;
	}
	nc__count(&x->stats->connects);
	if (x->ever_connected) {
		nc__count(&x->stats->reconnects);
		if (port && ntohs(local.sin_port) == port)
			nc__count(&x->stats->same_port);
	}
	x->ever_connected = true;
	x->local_port = ntohs(local.sin_port);
	x->fd = fd;
	x->gen++;
	x->orphans = 0;
	x->conn = NC__CONN_UP;
	x->replied = false;
	x->next_connect_ns = 0;
	x->garbage = false;
	region_task_cond_broadcast(&x->conn_cond);
	/* Calls sent on the connection that went: send them again now. */
	wake_all_calls(x);
	return 0;
}

int nc__xprt_connect(struct nc__xprt *x)
{
	uint64_t retry_at = 0;
	int rc;

	region_task_mutex_lock_nofail(&x->lock);
	rc = xprt_connect_locked(x, region_now_ns() + x->timeout.initial_ns,
				 &retry_at);
	region_task_mutex_unlock(&x->lock);
	return rc;
}

/* Sending. */

/*
 * Sends what is left of call's record from byte off on: the encoded part,
 * then the tail from the caller's buffer, then the tail's padding.
 */
static ssize_t send_from(int fd, const struct nc__call *call, size_t off)
{
	static const unsigned char zeros[4];
	const struct nc__rpc *r = call->rpc;
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
static int send_record(struct nc__xprt *x, struct nc__call *call, int fd,
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
		/*
		 * The socket-send primitive: wait for room, interruptible as
		 * the kernel's sendmsg() unless send= made it otherwise.
		 */
		rc = region_task_wait_fd(fd, POLLOUT, send_mode_of(x),
					 !partial && deadline ?
						 until(deadline) :
					 partial && giveup ? until(giveup) :
							     TASK_FOREVER,
					 NULL);
		if (rc == 0)
			continue;
		if (!partial)
			return rc; /* -EINTR or -ETIMEDOUT: nothing sent */
		/* Cut mid-record: the stream cannot be trusted any more. */
		region_task_mutex_lock_nofail(&x->lock);
		nc__count(&x->stats->partial_resets);
		if (x->gen == gen) {
			x->cut_call = call; /* for the reset's event */
			nc__xprt_disconnect(x, true);
			x->cut_call = NULL;
		}
		region_task_mutex_unlock(&x->lock);
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
static int soft_timeout(struct nc__xprt *x)
{
	if (!x->not_responding) {
		x->not_responding = true;
		fprintf(stderr, "intrfs: server %s not responding, timed out\n",
			x->server);
	}
	return x->timeout.mode == NC_SOFT ? -EIO : -ETIMEDOUT;
}

/*
 * A call's timeout expired.  Called with x->lock held.  Returns 0 to go on
 * (retransmit), or the error that ends the call (soft, softerr).
 */
static int call_timeout(struct nc__xprt *x, struct nc__call *call)
{
	uint64_t now = region_now_ns();

	if (now < call->major_ns) {
		call->timeout_ns += x->timeout.increment_ns;
		if (call->timeout_ns > x->timeout.max_ns)
			call->timeout_ns = x->timeout.max_ns;
	} else {
		nc__count(&x->stats->major_timeouts);
		call->majors++;
		nc__event(x, NC_EV_MAJOR_TIMEOUT, call, false, false);
		if (x->timeout.mode != NC_HARD)
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
		call->timeout_ns = x->timeout.initial_ns;
		call->major_ns = now + major_budget(&x->timeout);
	}
	if (call->state == NC__CALL_SENT) {
		call->state = NC__CALL_UNSENT;
		nc__count(&x->stats->retransmits);
		nc__event(x, NC_EV_RETRANSMIT, call, false, false);
	}
	set_deadline(call, now);
	return 0;
}

/*
 * Whether call is to be sent now, x->lock held: one sent on a connection
 * that is gone is to be sent again (a retransmission), and one that has
 * no slot yet takes one if any is free.
 */
static bool call_to_send(struct nc__xprt *x, struct nc__call *call)
{
	if (call->state == NC__CALL_DONE)
		return false;
	if (call->state == NC__CALL_SENT &&
	    (x->conn != NC__CONN_UP || call->sent_gen != x->gen)) {
		/* Sent on a connection that is gone: again. */
		call->state = NC__CALL_UNSENT;
		nc__count(&x->stats->retransmits);
		nc__event(x, NC_EV_RETRANSMIT, call, false, false);
	}
	if (call->state != NC__CALL_UNSENT)
		return false;
	if (!call->has_slot) {
		if (x->inflight >= x->slots)
			return false; /* woken when one frees */
		nc__xid_insert(x, call);
	}
	return true;
}

/*
 * Sends call's record on fd, connection gen, with x->lock not held: under
 * the send lock, in the send's own mode (send=).  *xmit_at is when the
 * send started, as Linux stamps rq_xtime.  0, or the send's error.
 */
static int call_transmit(struct nc__xprt *x, struct nc__call *call, int fd,
			 uint64_t gen, uint64_t *xmit_at)
{
	int rc = region_task_mutex_lock(&x->send_lock, send_mode_of(x),
					until(call->deadline_ns));
	bool current;

	if (rc)
		return rc;
	/*
	 * The socket is closed only with send_lock held: if its connection
	 * is still the current one, fd is still that socket (not a number
	 * reused since).
	 */
	region_task_mutex_lock_nofail(&x->lock);
	current = x->gen == gen && x->conn == NC__CONN_UP;
	region_task_mutex_unlock(&x->lock);
	*xmit_at = region_now_ns();
	rc = current ? send_record(x, call, fd, gen, call->deadline_ns) :
		       -ECONNRESET;
	region_task_mutex_unlock(&x->send_lock);
	return rc;
}

/*
 * A record whole in a socket (so perhaps at the server, even if the
 * connection went since), x->lock held: counted and stamped, and, for a
 * call whose answer later calls depend on, the killable region begun.
 */
static void call_went(struct nc__xprt *x, struct nc__call *call,
		      uint64_t xmit_at, bool *held)
{
	/*
	 * The next call's waits (the send lock, a connection) must not
	 * abandon it.
	 */
	call->went = true;
	if (call->rpc->answer_once_sent && !*held) {
		region_begin_killable("rpc: a sent call that "
				      "later calls depend on");
		*held = true;
	}
	nc__count(&x->stats->sends);
	nc__count_inflight(x->stats, x->inflight);
	/* relaxed: a statistic. */
	atomic_store_explicit(&x->last_io_ns, xmit_at, memory_order_relaxed);
	call->sends++;
	call->last_sent_ns = xmit_at;
	if (!call->first_sent_ns)
		call->first_sent_ns = xmit_at;
}

/*
 * What a send's result rc makes of call (not done meanwhile), x->lock
 * held: sent on connection gen, ended by its major timeout, or its
 * connection dropped.  -ETIMEDOUT: the wait after runs the timeout.
 */
static void call_send_result(struct nc__xprt *x, struct nc__call *call, int rc,
			     uint64_t gen)
{
	if (rc == 0) {
		/*
		 * Sent on connection gen, even if it went while the lock was
		 * dropped (on loopback the reset of a rejected record can
		 * beat us here): then the batch sends it again on the next
		 * one (next_send_at()).
		 */
		call->state = NC__CALL_SENT;
		call->sent_gen = gen;
	} else if (rc == -ECANCELED) {
		nc__count(&x->stats->major_timeouts);
		nc__call_finish(x, call, soft_timeout(x));
	} else if (rc == -ECONNRESET) {
		if (x->gen == gen)
			nc__xprt_disconnect(x, false);
	}
}

/*
 * Sends every call of the batch that needs it.  Called with x->lock held;
 * drops it around the socket work.  Returns 0, -EINTR (the task was
 * interrupted: the caller ends the batch), or -EAGAIN with *retry_at set
 * when the connection cannot be made yet.
 */
static int xprt_send_pending(struct nc__xprt *x, struct nc__call *calls,
			     unsigned n, uint64_t *retry_at, bool *held)
{
	for (unsigned i = 0; i < n; i++) {
		struct nc__call *call = &calls[i];
		uint64_t gen, xmit_at = 0;
		int fd, rc;

		if (!call_to_send(x, call))
			continue;
		rc = xprt_connect_locked(x, call->deadline_ns, retry_at);
		if (rc == -EINTR || rc == -EAGAIN || rc == -ESHUTDOWN)
			return rc;
		if (rc) {
			/*
			 * A soft mount that never reached the server fails
			 * now with the reason; otherwise the call's timeouts
			 * decide, and the backoff paces the attempts.
			 */
			if (!x->ever_connected && x->timeout.mode != NC_HARD &&
			    rc != -ETIMEDOUT) {
				nc__call_finish(x, call, rc);
				continue;
			}
			*retry_at = x->next_connect_ns;
			return -EAGAIN;
		}
		fd = x->fd;
		gen = x->gen;
		region_task_mutex_unlock(&x->lock);
		rc = call_transmit(x, call, fd, gen, &xmit_at);
		region_task_mutex_lock_nofail(&x->lock);
		if (rc == 0)
			call_went(x, call, xmit_at, held);
		/*
		 * The reply may have come while x->lock was dropped: the call
		 * is done then, and must stay so.
		 */
		if (call->state == NC__CALL_DONE)
			continue;
		if (rc == -EINTR)
			return rc;
		call_send_result(x, call, rc, gen);
	}
	return 0;
}

/* The earliest deadline among calls still running. */
static uint64_t next_deadline(struct nc__call *calls, unsigned n)
{
	uint64_t d = 0;

	for (unsigned i = 0; i < n; i++)
		if (calls[i].state != NC__CALL_DONE &&
		    (!d || calls[i].deadline_ns < d))
			d = calls[i].deadline_ns;
	return d;
}

static bool all_done(struct nc__call *calls, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (calls[i].state != NC__CALL_DONE)
			return false;
	return true;
}

/*
 * Runs call_timeout() for every call whose deadline has passed; true if
 * any did.  Called with x->lock held.
 */
static bool run_timeouts(struct nc__xprt *x, struct nc__call *calls, unsigned n)
{
	uint64_t now = region_now_ns();
	bool any = false;

	for (unsigned i = 0; i < n; i++) {
		struct nc__call *call = &calls[i];
		int err;

		if (call->state == NC__CALL_DONE || now < call->deadline_ns)
			continue;
		any = true;
		err = call_timeout(x, call);
		if (err)
			nc__call_finish(x, call, err);
	}
	return any;
}

/*
 * When a call of the batch can next go out: 0 if none can (none needs to,
 * or none has room), now if one can at once, or the time the reconnect
 * backoff allows the connection it needs.  A call needs to go out if it
 * never did, or if it went out on a connection that is gone.  Called with
 * x->lock held.
 *
 * This is what the batch looks at before it sleeps, so that a change it
 * was not asleep for (its own send failing, the receiver dropping the
 * connection while the record was going out) is not missed: the call would
 * otherwise sleep until its timeout, 60 s on a hard mount, before anything
 * sent it again.  Linux's xprt_request_wait_receive() checks the same
 * thing (xprt_request_retransmit_after_disconnect) before a task sleeps.
 */
static uint64_t next_send_at(struct nc__xprt *x, struct nc__call *calls,
			     unsigned n)
{
	uint64_t now = region_now_ns();
	bool want = false;

	for (unsigned i = 0; i < n && !want; i++) {
		const struct nc__call *call = &calls[i];

		if (call->state == NC__CALL_SENT &&
		    (x->conn != NC__CONN_UP || call->sent_gen != x->gen))
			want = true;
		if (call->state == NC__CALL_UNSENT &&
		    (call->has_slot || x->inflight < x->slots))
			want = true;
	}
	if (!want)
		return 0;
	/*
	 * Up, or being made by another task (the connect waits for it on
	 * conn_cond, which also hears when it fails): at once.  Down: when
	 * the backoff says.
	 */
	if (x->conn != NC__CONN_DOWN || x->next_connect_ns <= now)
		return now;
	return x->next_connect_ns;
}

/* Every call has gone out whole at least once, or has its reply. */
static bool all_sent(struct nc__call *calls, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (calls[i].state == NC__CALL_UNSENT ||
		    (calls[i].state == NC__CALL_DONE && calls[i].rc != 0))
			return false;
	return true;
}

/*
 * Whether a call that must be answered once sent (answer_once_sent) went
 * out and is not done.  Called with x->lock held.
 */
static bool owes_answer(const struct nc__call *calls, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (calls[i].rpc->answer_once_sent && calls[i].went &&
		    calls[i].state != NC__CALL_DONE)
			return true;
	return false;
}

/* The call's share of the per-procedure counters, once it ended. */
static void account(struct nc__xprt *x, const struct nc__call *call,
		    uint64_t start, uint64_t end)
{
	struct nc__pstat *p;

	if (!x->pstats || call->rpc->proc >= NC_NPROCS)
		return;
	p = &x->pstats[call->rpc->proc];
	/* relaxed: statistics, each field on its own. */
#define ADD(f, v) atomic_fetch_add_explicit(&p->f, (v), memory_order_relaxed)
	ADD(ops, 1);
	ADD(transmissions, call->sends);
	ADD(major_timeouts, call->majors);
	ADD(bytes_sent,
	    (uint64_t)call->sends * (call->rec_len + call->tail_len));
	ADD(bytes_recv, call->reply_len);
	if (call->first_sent_ns)
		ADD(queue_ns, call->first_sent_ns - start);
	if (call->reply_ns && call->reply_ns >= call->last_sent_ns &&
	    call->last_sent_ns)
		ADD(rtt_ns, call->reply_ns - call->last_sent_ns);
	ADD(execute_ns, end - start);
	if (call->rc)
		ADD(errors, 1);
#undef ADD
}

/*
 * A batch's calls, as the steps below take them in turn (as sunrpc's
 * call_* steps do): made and encoded, driven to their end, ended, their
 * replies decoded into the rpcs.
 */
struct batch {
	struct nc__xprt *x;
	struct nc__rpc *rpcs;
	struct nc__call *calls;
	unsigned n;
	uint64_t start;
	struct nc__waiter waiter;
	/* The mode as the batch starts, for all its waits. */
	enum task_mode wait_mode;
	bool held; /* in the killable region owes_answer() asks for */
	const struct nc_sent_notify *sent; /* NULL once called */
};

/* Makes and encodes the calls; 0, or -ENOMEM with every rpc failed. */
static int batch_make(struct batch *b)
{
	struct nc__xprt *x = b->x;

	b->calls = calloc(b->n, sizeof(*b->calls));
	if (!b->calls) {
		for (unsigned i = 0; i < b->n; i++)
			b->rpcs[i].rc = -ENOMEM;
		return -ENOMEM;
	}
	region_task_cond_init(&b->waiter.cond);
	atomic_fetch_add_explicit(&x->load, b->n, memory_order_relaxed);
	atomic_fetch_add_explicit(&x->carried, b->n, memory_order_relaxed);

	region_task_mutex_lock_nofail(&x->lock);
	b->start = region_now_ns();
	for (unsigned i = 0; i < b->n; i++) {
		struct nc__call *call = &b->calls[i];

		call->rpc = &b->rpcs[i];
		call->task = region_task_current();
		call->waiter = &b->waiter;
		call->xid = x->next_xid++;
		call->timeout_ns = x->timeout.initial_ns;
		call->major_ns = b->start + major_budget(&x->timeout);
		set_deadline(call, b->start);
		call->giveup_ns = x->timeout.mode == NC_HARD ? 0 :
							       call->major_ns;
		call->state = NC__CALL_UNSENT;
	}
	region_task_mutex_unlock(&x->lock);
	for (unsigned i = 0; i < b->n; i++) {
		int rc = encode_call(x, &b->calls[i]);

		if (rc) {
			b->calls[i].state = NC__CALL_DONE;
			b->calls[i].rc = rc;
		}
	}
	return 0;
}

/*
 * Waits, x->lock held, for what comes first: a reply (read here when the
 * call is alone in flight, else by the receiver), a free slot, or wake.
 * 0, or -EINTR.
 */
static int batch_wait(struct batch *b, uint64_t wake)
{
	struct nc__xprt *x = b->x;
	int rc;

	/* Alone in flight: read the reply ourselves. */
	if (b->n == 1 && nc__lone_ok(x, &b->calls[0])) {
		rc = nc__lone_read(x, &b->calls[0], b->wait_mode, wake);
		return rc == -EINTR ? -EINTR : 0;
	}
	nc__reader_release(x, &b->calls[0]);
	nc__reader_ensure(x);
	if (x->inflight >= x->slots && !b->waiter.on_slot_list) {
		b->waiter.next_slot = x->slot_waiters;
		x->slot_waiters = &b->waiter;
		b->waiter.on_slot_list = true;
		nc__count(&x->stats->backlog);
	}
	rc = region_task_cond_wait(&b->waiter.cond, &x->lock, b->wait_mode,
				   until(wake));
	return rc == -EINTR ? -EINTR : 0;
}

/*
 * Drives the calls, x->lock held: sends, retransmits, times out and waits
 * until every one is done, or the transport stops or the task is
 * interrupted.  Returns 0, or why it stopped early (-ESHUTDOWN, -EINTR).
 */
static int batch_run(struct batch *b)
{
	struct nc__xprt *x = b->x;
	struct nc__call *calls = b->calls;
	unsigned n = b->n;
	int rc;

	for (;;) {
		uint64_t retry_at = 0, send_at, wake;

		if (x->stop)
			return -ESHUTDOWN;
		/*
		 * A reader whose connection went (or whose call must be sent
		 * again) hands the reading back before anything waits for
		 * the old socket to be closed.
		 */
		if (!nc__lone_ok(x, &calls[0]))
			nc__reader_release(x, &calls[0]);
		/*
		 * From here on its retransmissions and the wait for its reply
		 * end only on a fatal interrupt (under policies that enforce
		 * regions; percall shows what abandoning it does).
		 */
		if (!b->held && owes_answer(calls, n)) {
			region_begin_killable("rpc: a sent call that later "
					      "calls depend on");
			b->held = true;
		}
		rc = xprt_send_pending(x, calls, n, &retry_at, &b->held);
		if (rc == -EINTR || rc == -ESHUTDOWN)
			return rc;
		if (all_done(calls, n))
			return 0;
		if (b->sent && all_sent(calls, n)) {
			/* Once, and not under the lock: it may reply to FUSE. */
			const struct nc_sent_notify *sent = b->sent;

			b->sent = NULL;
			region_task_mutex_unlock(&x->lock);
			sent->fn(sent->arg);
			region_task_mutex_lock_nofail(&x->lock);
			continue;
		}
		/* Timeouts: every call whose deadline has passed. */
		if (run_timeouts(x, calls, n)) {
			if (all_done(calls, n))
				return 0;
			continue;
		}
		/*
		 * A connection that changed while the lock was dropped woke
		 * nobody waiting yet: look before sleeping.
		 */
		send_at = next_send_at(x, calls, n);
		if (send_at && send_at <= region_now_ns())
			continue;
		if (!b->held && owes_answer(calls, n))
			continue; /* into the region first */
		wake = next_deadline(calls, n);
		if (send_at && send_at < wake)
			wake = send_at;
		if (rc == -EAGAIN && retry_at && retry_at < wake)
			wake = retry_at;
		if (batch_wait(b, wake) == -EINTR)
			return -EINTR;
	}
}

/*
 * Ends what still runs with the reason rc the run ended, and lets go of
 * the reading and the slot list; drops x->lock and leaves the region.
 */
static void batch_end(struct batch *b, int rc)
{
	struct nc__xprt *x = b->x;

	for (unsigned i = 0; i < b->n; i++) {
		if (b->calls[i].state != NC__CALL_DONE) {
			nc__call_finish(x, &b->calls[i], rc ? rc : -EIO);
			if (rc == -EINTR)
				nc__count(&x->stats->interrupted);
		}
	}
	nc__reader_release(x, &b->calls[0]);
	if (b->waiter.on_slot_list) {
		struct nc__waiter **p;

		for (p = &x->slot_waiters; *p; p = &(*p)->next_slot)
			if (*p == &b->waiter) {
				*p = b->waiter.next_slot;
				break;
			}
	}
	region_task_mutex_unlock(&x->lock);
	if (b->held)
		region_end_killable();
}

/*
 * Decodes each reply into its rpc, counts it and gives its buffers back
 * (or the reply to the rpc that keeps it); frees the calls.  Returns the
 * first call's error, 0 if none failed.
 */
static int batch_collect(struct batch *b)
{
	struct nc__xprt *x = b->x;
	int first = 0;

	for (unsigned i = 0; i < b->n; i++) {
		struct nc__call *call = &b->calls[i];

		if (call->rc == 0 && call->reply)
			call->rc = nc__decode_reply(x, call);
		else if (call->rc == 0)
			call->rc = -EIO;
		account(x, call, b->start, region_now_ns());
		b->rpcs[i].rc = call->rc;
		if (call->rc && !first)
			first = call->rc;
		nc__count(&x->stats->calls);
		if (call->rpc->keep_reply && call->rc == 0 && call->reply) {
			b->rpcs[i].reply_rec = call->reply;
			b->rpcs[i].reply_cap = call->reply_cap;
		} else {
			nc__rec_put(x, call->reply, call->reply_cap);
		}
		free(call->rec);
	}
	atomic_fetch_sub_explicit(&x->load, b->n, memory_order_relaxed);
	region_task_cond_destroy(&b->waiter.cond);
	free(b->calls);
	return first;
}

int nc__xprt_batch_notify(struct nc__xprt *x, struct nc__rpc *rpcs, unsigned n,
			  const struct nc_sent_notify *sent)
{
	struct batch b = { .x = x, .rpcs = rpcs, .n = n, .sent = sent };

	if (n == 0)
		return 0;
	b.wait_mode = wait_mode_of(x);
	if (batch_make(&b))
		return -ENOMEM;
	region_task_mutex_lock_nofail(&x->lock);
	batch_end(&b, batch_run(&b));
	return batch_collect(&b);
}

int nc__xprt_batch(struct nc__xprt *x, struct nc__rpc *rpcs, unsigned n)
{
	return nc__xprt_batch_notify(x, rpcs, n, NULL);
}

unsigned nc__xprt_load(const struct nc__xprt *x)
{
	/* Relaxed: a hint for choosing a transport, ordering nothing. */
	return atomic_load_explicit(&x->load, memory_order_relaxed);
}

uint64_t nc__xprt_carried(const struct nc__xprt *x)
{
	/* Relaxed: a statistic. */
	return atomic_load_explicit(&x->carried, memory_order_relaxed);
}

int nc__xprt_call(struct nc__xprt *x, struct nc__rpc *r)
{
	return nc__xprt_batch(x, r, 1);
}

/* Creation. */

int nc__xprt_create(const struct nc__xprt_cfg *cfg, struct nc__xprt **out)
{
	struct nc__xprt *x;
	int err;

	err = -EINVAL;
	if (cfg->slots == 0)
		goto out;
	err = -ENOMEM;
	x = calloc(1, sizeof(*x));
	if (!x)
		goto out;
	snprintf(x->server, sizeof(x->server), "%s", cfg->server);
	x->addr = cfg->addr;
	x->prog = cfg->prog;
	x->vers = cfg->vers;
	x->timeout = cfg->timeout;
	atomic_init(&x->wait_mode, (unsigned)cfg->wait_mode);
	atomic_init(&x->send_mode, (unsigned)cfg->send_mode);
	x->slots = cfg->slots;
	x->stats = cfg->stats;
	x->pstats = cfg->pstats;
	x->fd = x->closing_fd = -1;
	/* A random start, so that a restarted client does not reuse XIDs. */
	x->next_xid = (uint32_t)region_now_ns() ^ (uint32_t)getpid() << 16;
	region_task_mutex_init(&x->send_lock);
	region_task_mutex_init(&x->lock);
	region_task_cond_init(&x->conn_cond);
	pthread_mutex_init(&x->rec_lock, NULL);
	x->rx_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (x->rx_efd < 0) {
		err = -errno;
		goto out_free;
	}
	x->rx_staging = malloc(NC__RX_STAGING);
	if (!x->rx_staging) {
		err = -ENOMEM;
		goto out_close_efd;
	}
	err = -pthread_create(&x->rx_thread, NULL, nc__xprt_receiver, x);
	if (err)
		goto out_free_staging;
	*out = x;
	return 0;

out_free_staging:
	free(x->rx_staging);
out_close_efd:
	close(x->rx_efd);
out_free:
	free(x);
out:
	return err;
}

void nc__xprt_set_timeout(struct nc__xprt *x, const struct nc__timeout *to)
{
	region_task_mutex_lock_nofail(&x->lock);
	x->timeout = *to;
	region_task_mutex_unlock(&x->lock);
}

unsigned nc__xprt_slots(const struct nc__xprt *x)
{
	return x->slots;
}

void nc__xprt_shutdown(struct nc__xprt *x)
{
	region_task_mutex_lock_nofail(&x->lock);
	x->stop = true;
	nc__xprt_disconnect(x, false);
	region_task_cond_broadcast(&x->conn_cond);
	wake_all_calls(x);
	region_task_mutex_unlock(&x->lock);
}

void nc__xprt_destroy(struct nc__xprt *x)
{
	uint64_t one = 1;
	ssize_t n;

	if (!x)
		return;
	region_task_mutex_lock_nofail(&x->lock);
	x->stop = true;
	nc__xprt_disconnect(x, false);
	region_task_cond_broadcast(&x->conn_cond);
	region_task_mutex_unlock(&x->lock);
	n = write(x->rx_efd, &one, sizeof(one));
	(void)n;
	pthread_join(x->rx_thread, NULL);
	if (x->closing_fd >= 0)
		nc__close_reset(x->closing_fd);
	close(x->rx_efd);
	nc__rx_reset(&x->rx);
	free(x->rx_staging);
	nc__rec_drain(x);
	pthread_mutex_destroy(&x->rec_lock);
	region_task_cond_destroy(&x->conn_cond);
	region_task_mutex_destroy(&x->lock);
	region_task_mutex_destroy(&x->send_lock);
	free(x);
}
