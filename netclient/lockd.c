/*
 * This host's side of the lock manager protocol: the callbacks a lock
 * needs.  The server's lock manager grants a LOCK it had answered BLOCKED
 * by calling the client's lock manager (program NLM version 4, found with
 * the client host's rpcbind): GRANTED, answered at once, or GRANTED_MSG,
 * answered by a GRANTED_RES call back to the server; and this host's status
 * monitor (rpc.statd), once asked with SM_MON to watch the server, calls
 * procedure 16 when the server rebooted, so that the locks are reclaimed.
 * The daemon says what a grant means and what a reboot does (struct
 * nc_lockd_ops); this file serves the calls, registers the program with
 * the local rpcbind and talks to the local status monitor.
 *
 * The service is libtirpc's (a connection's svc_fd on TCP, svc_dg on UDP,
 * the status monitor's transport) run by a thread of its own with a poll
 * loop that a pipe stops; its dispatch function takes no argument, so one
 * service per process (the daemon has one client).  The loop accepts the
 * TCP connections itself, so that it knows them: a server's lock manager
 * may open one for each GRANTED_MSG and never close it (ganesha 4.3 does),
 * and libtirpc serves no descriptor past FD_SETSIZE (1,024), so a
 * connection kept for good is a descriptor gone for good.  One idle for
 * CONN_IDLE_MS is closed, and past CONN_MAX the one idle longest, as
 * Linux's svc closes its temporary sockets (svc_age_temp_xprts(), idle 6
 * minutes; svc_check_conn_limits()); a server that wants to call again
 * connects again.
 *
 * Registration and the status monitor use short libtirpc client calls to
 * 127.0.0.1 of this network namespace: rpcbind takes SET and UNSET only
 * from a reserved port there, and rpc.statd takes SM_MON only from
 * 127.0.0.1, for program 100021.  A program already registered by a live
 * service (the kernel's lockd, a server's lock manager, another mount) is
 * left alone: then no callback comes, and the caller polls.  A
 * registration whose port nobody listens on is a dead daemon's, and is
 * replaced.
 *
 * The service thread only reads the lockd object, set before it starts,
 * but for the connections, which are its own until it has stopped;
 * GRANTED_RES calls go out in its own task, softerr, so that a server
 * that does not answer them keeps no callback waiting long.
 */
#include "netclient_i.h"

#include "nlm4.h"
#include "nsm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <rpc/pmap_prot.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

_Static_assert(NLM4_SM_PRIVSIZE == NSM_PRIVSIZE, "priv[] of the two");

/* Local calls (rpcbind, the status monitor) answer at once or not at all. */
#define LOCAL_TIMEOUT_S 3
/* GRANTED_RES: a second, then one more try. */
#define RES_TIMEO 10
#define RES_RETRANS 1
/* A callback connection that says nothing this long is closed... */
#define CONN_IDLE_MS 5000
/* ...and beyond this many, the one idle longest. */
#define CONN_MAX 64

/* A TCP connection a server's lock manager opened to us. */
struct conn {
	SVCXPRT *xp; /* libtirpc's, which closes fd */
	int fd;
	uint64_t last_ns; /* when it last had something to read */
};

struct nc__lockd {
	nc_client_t *c;
	struct nc_lockd_ops ops;
	int tcp_fd, udp_fd;
	unsigned tcp_port, udp_port;
	bool registered; /* the rpcbind mappings are ours */
	bool monitoring; /* SM_MON succeeded */
	char mon_name[INET_ADDRSTRLEN];
	char priv[NSM_PRIVSIZE]; /* ours, handed back by the monitor */
	SVCXPRT *udp; /* the datagram socket's */
	/* The service thread's: the connections tcp_fd accepted. */
	struct conn conns[CONN_MAX + 1];
	unsigned nconns;
	unsigned conn_refused; /* accepted past what libtirpc serves */
	struct nc__xprt *res; /* GRANTED_RES to the server */
	task_t *task; /* the service thread's */
	int stop[2];
	pthread_t thread;
	bool running;
};

/* The one service of this process, for the dispatch function. */
static struct nc__lockd *serving;

/* Local calls. */

/*
 * A libtirpc client of prog/vers at 127.0.0.1:port over TCP; from a
 * reserved port when resv (rpcbind takes SET and UNSET only from one).
 */
static CLIENT *local_client(unsigned port, uint32_t prog, uint32_t vers,
			    bool resv, int *fd_out, int *err)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	CLIENT *cl;
	int fd;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		*err = -errno;
		return NULL;
	}
	if (resv && bindresvport(fd, NULL) < 0) {
		*err = errno == EACCES ? -EPERM : -errno;
		close(fd);
		return NULL;
	}
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		*err = -errno;
		close(fd);
		return NULL;
	}
	cl = clnttcp_create(&sin, prog, vers, &fd, 0, 0);
	if (!cl) {
		*err = -ECONNREFUSED;
		close(fd);
		return NULL;
	}
	*fd_out = fd;
	return cl;
}

static void local_close(CLIENT *cl, int fd)
{
	clnt_destroy(cl);
	close(fd);
}

static int local_call(CLIENT *cl, uint32_t proc, xdrproc_t xargs,
		      const void *args, xdrproc_t xres, void *res)
{
	struct timeval tv = { LOCAL_TIMEOUT_S, 0 };
	enum clnt_stat st =
		clnt_call(cl, proc, xargs, (char *)args, xres, (char *)res, tv);

	return st == RPC_SUCCESS ? 0 : st == RPC_TIMEDOUT ? -ETIMEDOUT : -EIO;
}

/* rpcbind (portmap version 2) on this host. */
static int pmap_call(uint32_t proc, const struct pmap *m, u_long *res)
{
	bool resv = proc != PMAPPROC_GETPORT;
	bool_t ok = FALSE;
	int fd, rc = 0;
	CLIENT *cl = local_client(PMAPPORT, PMAPPROG, PMAPVERS, resv, &fd, &rc);

	if (!cl)
		return rc;
	if (resv) {
		rc = local_call(cl, proc, NC__XDRPROC(xdr_pmap), m,
				NC__XDRPROC(xdr_bool), &ok);
		if (rc == 0 && !ok)
			rc = -EADDRINUSE;
	} else {
		rc = local_call(cl, proc, NC__XDRPROC(xdr_pmap), m,
				NC__XDRPROC(xdr_u_long), res);
	}
	local_close(cl, fd);
	return rc;
}

static unsigned local_getport(uint32_t prog, uint32_t vers, int proto)
{
	struct pmap m = { prog, vers, (u_long)proto, 0 };
	u_long port = 0;

	return pmap_call(PMAPPROC_GETPORT, &m, &port) == 0 ? (unsigned)port : 0;
}

/* Whether something answers a TCP connection on 127.0.0.1:port. */
static bool tcp_alive(unsigned port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool alive;

	if (fd < 0)
		return true; /* cannot tell: take it as alive */
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)port);
	alive = connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 ||
		errno != ECONNREFUSED;
	close(fd);
	return alive;
}

static void unregister(void)
{
	struct pmap m = { NLM_PROG, NLM4_VERS, IPPROTO_TCP, 0 };
	u_long none;

	pmap_call(PMAPPROC_UNSET, &m, &none);
}

/*
 * Registers NLM version 4 at our ports.  A mapping whose TCP port nobody
 * listens on is a dead daemon's: it goes.  A live one is left alone.
 */
static int register_lockd(struct nc__lockd *ld, char *err, size_t errlen)
{
	struct pmap tcp = { NLM_PROG, NLM4_VERS, IPPROTO_TCP, ld->tcp_port };
	struct pmap udp = { NLM_PROG, NLM4_VERS, IPPROTO_UDP, ld->udp_port };
	unsigned other = local_getport(NLM_PROG, NLM4_VERS, IPPROTO_TCP);
	u_long ok;
	int rc;

	if (!other)
		other = local_getport(NLM_PROG, NLM4_VERS, IPPROTO_UDP);
	if (other && tcp_alive(other)) {
		snprintf(err, errlen,
			 "program %d (nlockmgr) version %d is registered with "
			 "this host's rpcbind by another service, at port %u",
			 NLM_PROG, NLM4_VERS, other);
		return -EADDRINUSE;
	}
	if (other) {
		fprintf(stderr,
			"intrfs: nlockmgr's registration at port %u has no "
			"service behind it (a daemon that died): replaced\n",
			other);
		/* UNSET drops every protocol's mapping of the version. */
		unregister();
	}
	rc = pmap_call(PMAPPROC_SET, &tcp, &ok);
	if (rc == 0)
		rc = pmap_call(PMAPPROC_SET, &udp, &ok);
	if (rc) {
		unregister();
		snprintf(err, errlen,
			 "cannot register nlockmgr with this host's rpcbind: "
			 "%s",
			 rc == -EPERM ? "only root may (a reserved port)" :
			 rc == -EADDRINUSE ?
					"it refused (registered meanwhile)" :
					strerror(-rc));
		return rc;
	}
	ld->registered = true;
	return 0;
}

/* The status monitor. */

static int nsm_call(uint32_t proc, xdrproc_t xargs, const void *args,
		    xdrproc_t xres, void *res)
{
	unsigned port = local_getport(SM_PROG, SM_VERS, IPPROTO_TCP);
	CLIENT *cl;
	int fd, rc = 0;

	if (!port)
		return -ENOENT;
	cl = local_client(port, SM_PROG, SM_VERS, false, &fd, &rc);
	if (!cl)
		return rc;
	rc = local_call(cl, proc, xargs, args, xres, res);
	local_close(cl, fd);
	return rc;
}

static nsm_mon_id mon_id_of(struct nc__lockd *ld)
{
	nsm_mon_id id;

	id.mon_name = ld->mon_name;
	id.my_id.my_name = ld->c->nodename;
	id.my_id.my_prog = NLM_PROG;
	id.my_id.my_vers = NLM4_VERS;
	id.my_id.my_proc = NLMPROC4_SM_NOTIFY;
	return id;
}

static int monitor(struct nc__lockd *ld, char *err, size_t errlen)
{
	nsm_mon m = { mon_id_of(ld), { 0 } };
	nsm_stat_res res = { 0 };
	int rc;

	memcpy(m.priv, ld->priv, sizeof(m.priv));
	rc = nsm_call(SM_MON, NC__XDRPROC(xdr_nsm_mon), &m,
		      NC__XDRPROC(xdr_nsm_stat_res), &res);
	if (rc == 0 && res.res_stat != STAT_SUCC)
		rc = -EACCES;
	if (rc) {
		snprintf(err, errlen,
			 "this host's status monitor (rpc.statd) %s: a reboot "
			 "of server %s will not be noticed, nor its locks "
			 "reclaimed",
			 rc == -ENOENT ? "is not running" :
			 rc == -EACCES ? "refused to watch the server" :
					 "did not answer",
			 ld->mon_name);
		return rc;
	}
	/* relaxed: LOCKs carry whichever state they read. */
	atomic_store_explicit(&ld->c->nsm_state, res.state,
			      memory_order_relaxed);
	ld->monitoring = true;
	return 0;
}

static void unmonitor(struct nc__lockd *ld)
{
	nsm_mon_id id = mon_id_of(ld);
	nsm_stat res;

	if (ld->monitoring)
		nsm_call(SM_UNMON, NC__XDRPROC(xdr_nsm_mon_id), &id,
			 NC__XDRPROC(xdr_nsm_stat), &res);
	ld->monitoring = false;
}

/* The service. */

/* The caller's IPv4 address and port, from its transport. */
static bool caller_of(SVCXPRT *xp, struct in_addr *addr, unsigned *port)
{
	struct netbuf *nb = svc_getrpccaller(xp);
	const struct sockaddr_in *sin;

	if (!nb || nb->len < sizeof(*sin))
		return false;
	sin = (const struct sockaddr_in *)nb->buf;
	if (sin->sin_family != AF_INET)
		return false;
	*addr = sin->sin_addr;
	*port = ntohs(sin->sin_port);
	return true;
}

static void lock_from(const nlm4_testargs *a, struct nc_fh *fh,
		      struct nc_nlm_lock *lk)
{
	const nlm4_lock *l = &a->alock;

	memset(fh, 0, sizeof(*fh));
	memset(lk, 0, sizeof(*lk));
	fh->len = l->fh.nlm4_netobj_len <= NC_FHSIZE ? l->fh.nlm4_netobj_len :
						       0;
	memcpy(fh->data, l->fh.nlm4_netobj_val, fh->len);
	lk->oh_len = l->oh.nlm4_netobj_len <= NC_NLM_OHSIZE ?
			     l->oh.nlm4_netobj_len :
			     0;
	memcpy(lk->oh, l->oh.nlm4_netobj_val, lk->oh_len);
	lk->svid = l->svid;
	lk->off = l->l_offset;
	lk->len = l->l_len;
	lk->exclusive = a->exclusive;
}

/*
 * A grant: the daemon's answer when it comes from the server we lock on
 * and names a handle and owner that fit ours; DENIED otherwise, so that
 * the server lets go of a lock nobody here waits for.
 */
static nlm4_stats grant(struct nc__lockd *ld, SVCXPRT *xp,
			const nlm4_testargs *a)
{
	struct nc_nlm_lock lk;
	struct nc_fh fh;
	struct in_addr from;
	unsigned port;

	if (!caller_of(xp, &from, &port) ||
	    from.s_addr != ld->c->addr.sin_addr.s_addr)
		return NLM4_DENIED;
	lock_from(a, &fh, &lk);
	if (!fh.len || !lk.oh_len)
		return NLM4_DENIED;
	return (nlm4_stats)ld->ops.granted(ld->ops.arg, &fh, &lk);
}

static void granted_res(struct nc__lockd *ld, const nlm4_netobj *cookie,
			nlm4_stats stat)
{
	nlm4_res res = { *cookie, { stat } };
	struct nc__rpc r = {
		.proc = NLMPROC4_GRANTED_RES,
		.xargs = NC__XDRPROC(xdr_nlm4_res),
		.argp = &res,
		.xres = NC__XDRPROC(xdr_void),
	};

	if (ld->res && nc__xprt_call(ld->res, &r) != 0)
		fprintf(stderr,
			"intrfs: server %s did not take GRANTED_RES (%s): it "
			"may keep a lock it granted until its LOCK is sent "
			"again\n",
			ld->c->server,
			nc_nlm_stat_name((enum nc_nlm_stat)stat));
}

static void dispatch(struct svc_req *rq, SVCXPRT *xp)
{
	struct nc__lockd *ld = serving;
	nlm4_testargs ta;
	nlm4_sm_status ss;
	nlm4_res res;
	struct in_addr from;
	unsigned port;

	switch (rq->rq_proc) {
	case NLMPROC4_NULL:
		svc_sendreply(xp, NC__XDRPROC(xdr_void), NULL);
		return;
	case NLMPROC4_GRANTED:
	case NLMPROC4_GRANTED_MSG:
		memset(&ta, 0, sizeof(ta));
		if (!svc_getargs(xp, NC__XDRPROC(xdr_nlm4_testargs),
				 (char *)&ta)) {
			svcerr_decode(xp);
			return;
		}
		res.cookie = ta.cookie;
		res.stat.stat = grant(ld, xp, &ta);
		if (rq->rq_proc == NLMPROC4_GRANTED) {
			svc_sendreply(xp, NC__XDRPROC(xdr_nlm4_res),
				      (char *)&res);
		} else {
			svc_sendreply(xp, NC__XDRPROC(xdr_void), NULL);
			granted_res(ld, &res.cookie, res.stat.stat);
		}
		svc_freeargs(xp, NC__XDRPROC(xdr_nlm4_testargs), (char *)&ta);
		return;
	case NLMPROC4_SM_NOTIFY:
		memset(&ss, 0, sizeof(ss));
		if (!svc_getargs(xp, NC__XDRPROC(xdr_nlm4_sm_status),
				 (char *)&ss)) {
			svcerr_decode(xp);
			return;
		}
		svc_sendreply(xp, NC__XDRPROC(xdr_void), NULL);
		/* Only this host's status monitor, from a reserved port. */
		if (caller_of(xp, &from, &port) &&
		    from.s_addr == htonl(INADDR_LOOPBACK) && port < 1024 &&
		    memcmp(ss.priv, ld->priv, sizeof(ld->priv)) == 0)
			ld->ops.rebooted(ld->ops.arg, ss.state);
		svc_freeargs(xp, NC__XDRPROC(xdr_nlm4_sm_status), (char *)&ss);
		return;
	}
	svcerr_noproc(xp);
}

/* Connections. */

/* Closes connection i (libtirpc closes its descriptor). */
static void conn_close(struct nc__lockd *ld, unsigned i)
{
	svc_destroy(ld->conns[i].xp);
	ld->conns[i] = ld->conns[--ld->nconns];
}

/* Whether libtirpc serves fd (it is in svc_pollfd). */
static bool conn_served(int fd)
{
	for (int k = 0; k < svc_max_pollfd; k++)
		if (svc_pollfd[k].fd == fd)
			return true;
	return false;
}

/* A connection the listening socket has: served from now on. */
static void conn_accept(struct nc__lockd *ld, uint64_t now)
{
	int fd = accept4(ld->tcp_fd, NULL, NULL, SOCK_CLOEXEC);
	SVCXPRT *xp;

	if (fd < 0)
		return; /* gone meanwhile, or no descriptor: it may retry */
	xp = svc_fd_create(fd, 0, 0);
	if (!xp) {
		close(fd);
		return;
	}
	if (!conn_served(fd)) {
		/* Past FD_SETSIZE, libtirpc keeps it without serving it. */
		if (!ld->conn_refused++)
			fprintf(stderr,
				"intrfs: lock callbacks: descriptor %d is past "
				"what libtirpc serves: callback connections "
				"are closed at once\n",
				fd);
		svc_destroy(xp);
		return;
	}
	ld->conns[ld->nconns++] = (struct conn){ xp, fd, now };
	if (ld->nconns > CONN_MAX) {
		unsigned oldest = 0;

		for (unsigned i = 1; i < ld->nconns; i++)
			if (ld->conns[i].last_ns < ld->conns[oldest].last_ns)
				oldest = i;
		conn_close(ld, oldest);
	}
}

/*
 * After libtirpc served fds (poll's view of svc_pollfd, max of them):
 * forgets the connections it closed (the peer's EOF; it took them out of
 * svc_pollfd, and only this thread puts any in), notes which had
 * something, closes those idle too long.  The milliseconds until the
 * next one will be, or -1.
 */
static int conns_sweep(struct nc__lockd *ld, const struct pollfd *fds, int max,
		       uint64_t now)
{
	uint64_t next = UINT64_MAX;
	unsigned i = 0;

	while (i < ld->nconns) {
		struct conn *c = &ld->conns[i];

		if (!conn_served(c->fd)) {
			ld->conns[i] = ld->conns[--ld->nconns];
			continue;
		}
		for (int k = 0; k < max; k++)
			if (fds[k].fd == c->fd && fds[k].revents)
				c->last_ns = now;
		if (now - c->last_ns >= CONN_IDLE_MS * 1000000ull) {
			conn_close(ld, i);
			continue;
		}
		if (c->last_ns + CONN_IDLE_MS * 1000000ull < next)
			next = c->last_ns + CONN_IDLE_MS * 1000000ull;
		i++;
	}
	return next == UINT64_MAX ? -1 : (int)((next - now) / 1000000 + 1);
}

static void *lockd_main(void *arg)
{
	struct nc__lockd *ld = arg;
	struct pollfd *fds = NULL;
	int n = 0, timeout = -1;

	region_task_enter(ld->task);
	for (;;) {
		int max = svc_max_pollfd, ready;
		struct pollfd *grown;
		uint64_t now;

		if (max + 2 > n) {
			grown = realloc(fds, (size_t)(max + 2) * sizeof(*fds));
			if (!grown) {
				fprintf(stderr, "intrfs: lock callbacks: out "
						"of memory\n");
				break;
			}
			fds = grown;
			n = max + 2;
		}
		memcpy(fds, svc_pollfd, (size_t)max * sizeof(*fds));
		fds[max] = (struct pollfd){ ld->stop[0], POLLIN, 0 };
		fds[max + 1] = (struct pollfd){ ld->tcp_fd, POLLIN, 0 };
		ready = poll(fds, (nfds_t)max + 2, timeout);
		if (ready < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (fds[max].revents)
			break;
		/* Only svc_pollfd's count: svc_getreq_poll() stops there. */
		if (fds[max + 1].revents)
			ready--;
		if (ready)
			svc_getreq_poll(fds, ready);
		now = region_now_ns();
		timeout = conns_sweep(ld, fds, max, now);
		if (fds[max + 1].revents) {
			conn_accept(ld, now);
			if (timeout < 0)
				timeout = CONN_IDLE_MS;
		}
	}
	free(fds);
	region_task_leave(ld->task);
	return NULL;
}

/* A socket of type on any address, port chosen by the kernel. */
static int listen_socket(int type, unsigned *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int one = 1, fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 16) < 0) ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	*port = ntohs(sin.sin_port);
	return fd;
}

static int serve(struct nc__lockd *ld, char *err, size_t errlen)
{
	ld->tcp_fd = listen_socket(SOCK_STREAM, &ld->tcp_port);
	if (ld->tcp_fd < 0)
		goto fail;
	/* A connection reset before its accept() must not hold the loop. */
	if (fcntl(ld->tcp_fd, F_SETFL, O_NONBLOCK) < 0) {
		int rc = -errno;

		close(ld->tcp_fd);
		ld->tcp_fd = rc;
		goto fail;
	}
	ld->udp_fd = listen_socket(SOCK_DGRAM, &ld->udp_port);
	if (ld->udp_fd < 0)
		goto fail;
	/*
	 * NULL netconfig: registered by us, from a reserved port.  The
	 * program's dispatch is every transport's, the connections' too.
	 */
	ld->udp = svc_dg_create(ld->udp_fd, 0, 0);
	if (!ld->udp ||
	    !svc_reg(ld->udp, NLM_PROG, NLM4_VERS, dispatch, NULL)) {
		snprintf(err, errlen,
			 "lock callbacks: libtirpc's service "
			 "would not start");
		return -ENOMEM;
	}
	return 0;
fail:
	snprintf(err, errlen, "lock callbacks: no socket: %s",
		 strerror(ld->tcp_fd < 0 ? -ld->tcp_fd : -ld->udp_fd));
	return ld->tcp_fd < 0 ? ld->tcp_fd : ld->udp_fd;
}

int nc_lockd_start(nc_client_t *c, const struct nc_lockd_ops *ops, char *err,
		   size_t errlen)
{
	struct nc__lockd *ld;
	char more[256] = "";
	int rc;

	if (c->lockd || serving) {
		snprintf(err, errlen, "lock callbacks are served already");
		return -EBUSY;
	}
	if (!c->nlm_port) {
		snprintf(err, errlen, "no lock manager (nc_nlm_start())");
		return -ENOLCK;
	}
	ld = calloc(1, sizeof(*ld));
	if (!ld)
		return -ENOMEM;
	ld->c = c;
	ld->ops = *ops;
	ld->tcp_fd = ld->udp_fd = ld->stop[0] = ld->stop[1] = -1;
	inet_ntop(AF_INET, &c->addr.sin_addr, ld->mon_name,
		  sizeof(ld->mon_name));
	if (getrandom(ld->priv, sizeof(ld->priv), 0) != sizeof(ld->priv)) {
		/* Only needs to differ from another mount's. */
		snprintf(ld->priv, sizeof(ld->priv), "%d", (int)getpid());
	}
	ld->task = region_task_create(
		&(struct task_attr){ "lockd", c->opts.policy, NULL });
	if (!ld->task) {
		free(ld);
		return -ENOMEM;
	}
	c->lockd = ld;
	serving = ld;
	rc = serve(ld, err, errlen);
	if (rc == 0)
		rc = nc__client_xprt(c, c->nlm_port, NLM_PROG, NLM4_VERS,
				     RES_TIMEO, RES_RETRANS, 1, &ld->res);
	if (rc == 0 && pipe2(ld->stop, O_CLOEXEC) < 0)
		rc = -errno;
	if (rc == 0)
		rc = register_lockd(ld, err, errlen);
	if (rc == 0) {
		rc = -pthread_create(&ld->thread, NULL, lockd_main, ld);
		ld->running = rc == 0;
	}
	if (rc) {
		nc_lockd_stop(c);
		return rc;
	}
	/* Without a monitor, locks work, but a reboot goes unnoticed. */
	if (monitor(ld, more, sizeof(more)))
		snprintf(err, errlen, "%s", more);
	return 0;
}

bool nc_lockd_serving(const nc_client_t *c)
{
	return c->lockd && c->lockd->running;
}

bool nc_lockd_monitoring(const nc_client_t *c)
{
	return c->lockd && c->lockd->monitoring;
}

void nc_lockd_stop(nc_client_t *c)
{
	struct nc__lockd *ld = c->lockd;

	if (!ld)
		return;
	unmonitor(ld);
	if (ld->registered)
		unregister();
	if (ld->running) {
		if (write(ld->stop[1], "", 1) != 1)
			perror("intrfs: stopping the lock callbacks");
		pthread_join(ld->thread, NULL);
	}
	/*
	 * Not svc_unreg(): it would also unset the program at rpcbind,
	 * which may be another service's.  svc_destroy() closes the
	 * sockets.
	 */
	while (ld->nconns)
		conn_close(ld, 0);
	if (ld->tcp_fd >= 0)
		close(ld->tcp_fd);
	if (ld->udp)
		svc_destroy(ld->udp);
	else if (ld->udp_fd >= 0)
		close(ld->udp_fd);
	for (int i = 0; i < 2; i++)
		if (ld->stop[i] >= 0)
			close(ld->stop[i]);
	nc__xprt_destroy(ld->res);
	region_task_put(ld->task);
	serving = NULL;
	c->lockd = NULL;
	free(ld);
}

void nc__lockd_destroy(nc_client_t *c)
{
	nc_lockd_stop(c);
}
