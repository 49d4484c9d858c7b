/*
 * The Network Lock Manager version 4 client (nlm4.x): TEST, LOCK, CANCEL
 * and UNLOCK to the server's lock manager, over a transport of its own
 * (the server's NLM port, from nlmport= or its rpcbind) with the mount's
 * timeouts and wait mode, so that a lock call waits like any NFS call of
 * the caller's task and region.  Each call carries a cookie of its own
 * (a counter), this host's name (caller_name, as Linux's lockd sends its
 * node name), the file handle, and the owner the caller names: nothing here
 * knows which process a lock is for.
 *
 * The server's answer is returned in *st, not as an error: whether a
 * DENIED is an error, and which one (EAGAIN, or ENOLCK for a lock that
 * was to wait), is the caller's to say, with nc_nlm_errno().
 *
 * Nothing here waits on its own nor locks: the client object's lock
 * fields are set by nc_nlm_start() before any call, the cookie and the
 * status monitor's state are atomics.
 */
#include "netclient_i.h"

#include "nlm4.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

_Static_assert((int)NC_NLM_GRANTED == (int)NLM4_GRANTED &&
		       (int)NC_NLM_DENIED == (int)NLM4_DENIED &&
		       (int)NC_NLM_DENIED_NOLOCKS == (int)NLM4_DENIED_NOLOCKS &&
		       (int)NC_NLM_BLOCKED == (int)NLM4_BLOCKED &&
		       (int)NC_NLM_DENIED_GRACE_PERIOD ==
			       (int)NLM4_DENIED_GRACE_PERIOD &&
		       (int)NC_NLM_DEADLCK == (int)NLM4_DEADLCK &&
		       (int)NC_NLM_ROFS == (int)NLM4_ROFS &&
		       (int)NC_NLM_STALE_FH == (int)NLM4_STALE_FH &&
		       (int)NC_NLM_FBIG == (int)NLM4_FBIG &&
		       (int)NC_NLM_FAILED == (int)NLM4_FAILED,
	       "nc_nlm_stat must be nlm4_stats");
_Static_assert(NC_NLM_OHSIZE <= MAXNETOBJ_SZ, "an owner handle must fit");

/* Lock calls go one after another per caller; a few callers at once. */
#define NLM_SLOTS 16

/* What the server answered, and what a process sees. */
static const struct {
	const char *name;
	int err; /* positive */
} nlm_stats[] = {
	[NLM4_GRANTED] = { "NLM4_GRANTED", 0 },
	[NLM4_DENIED] = { "NLM4_DENIED", EAGAIN },
	[NLM4_DENIED_NOLOCKS] = { "NLM4_DENIED_NOLOCKS", ENOLCK },
	[NLM4_BLOCKED] = { "NLM4_BLOCKED", ENOLCK },
	[NLM4_DENIED_GRACE_PERIOD] = { "NLM4_DENIED_GRACE_PERIOD", ENOLCK },
	[NLM4_DEADLCK] = { "NLM4_DEADLCK", EDEADLK },
	[NLM4_ROFS] = { "NLM4_ROFS", EROFS },
	[NLM4_STALE_FH] = { "NLM4_STALE_FH", ESTALE },
	[NLM4_FBIG] = { "NLM4_FBIG", EOVERFLOW },
	[NLM4_FAILED] = { "NLM4_FAILED", ENOLCK },
};

#define NLM_NSTATS (ARRAY_SIZE(nlm_stats))

int nc_nlm_errno(enum nc_nlm_stat st)
{
	return (unsigned)st < NLM_NSTATS ? -nlm_stats[st].err : -ENOLCK;
}

const char *nc_nlm_stat_name(enum nc_nlm_stat st)
{
	return (unsigned)st < NLM_NSTATS ? nlm_stats[st].name : "NLM4_?";
}

const char *nc_nlm_proc_name(unsigned proc)
{
	switch (proc) {
	case NLMPROC4_NULL:
		return "NULL";
	case NLMPROC4_TEST:
		return "TEST";
	case NLMPROC4_LOCK:
		return "LOCK";
	case NLMPROC4_CANCEL:
		return "CANCEL";
	case NLMPROC4_UNLOCK:
		return "UNLOCK";
	case NLMPROC4_GRANTED_RES:
		return "GRANTED_RES";
	}
	return "?";
}

void nc_client_nlm_stats(const nc_client_t *c, struct nc_proc_stats *st)
{
	for (unsigned i = 0; i < NC_NPROCS; i++) {
		const struct nc__pstat *p = &c->nlm_pstats[i];

		/* Relaxed: statistics, each field read once. */
#define LOADP(f) st[i].f = atomic_load_explicit(&p->f, memory_order_relaxed);
		NC_PROC_STATS_FIELDS(LOADP)
#undef LOADP
	}
}

int nc_nlm_start(nc_client_t *c, char *err, size_t errlen)
{
	struct nc__timeout to;
	struct utsname u;
	unsigned port = c->opts.nlmport;
	int rc;

	if (c->nlm)
		return 0;
	if (uname(&u) == 0)
		snprintf(c->nodename, sizeof(c->nodename), "%s", u.nodename);
	else
		snprintf(c->nodename, sizeof(c->nodename), "localhost");
	if (!port) {
		rc = nc__find_port(c, NLM_PROG, NLM4_VERS, &port, err, errlen);
		if (rc)
			return rc;
	}
	rc = nc__client_xprt(c, port, NLM_PROG, NLM4_VERS, c->opts.timeo,
			     c->opts.retrans, NLM_SLOTS, &c->nlm);
	if (rc) {
		snprintf(err, errlen, "NLM transport: %s", strerror(-rc));
		return rc;
	}
	/* The mount's own timeouts, as the NFS transport has once mounted. */
	to = nc__timeout_of(c->opts.timeo_mode, c->opts.timeo, c->opts.retrans);
	nc__xprt_set_timeout(c->nlm, &to);
	c->nlm_port = port;
	return 0;
}

const char *nc_nlm_caller_name(const nc_client_t *c)
{
	return c->nodename;
}

/* Arguments. */

/* A cookie per call: a counter, in the bytes of cook. */
static nlm4_netobj cookie_of(nc_client_t *c, uint32_t *cook)
{
	/* relaxed: only uniqueness matters. */
	*cook = atomic_fetch_add_explicit(&c->nlm_cookie, 1,
					  memory_order_relaxed);
	return (nlm4_netobj){ sizeof(*cook), (char *)cook };
}

/* lk on fh as NLM's lock: only ever encoded, so the casts are safe. */
static nlm4_lock lock_of(nc_client_t *c, const struct nc_fh *fh,
			 const struct nc_nlm_lock *lk)
{
	nlm4_lock l;

	l.caller_name = c->nodename;
	l.fh = (nlm4_netobj){ fh->len, (char *)fh->data };
	l.oh = (nlm4_netobj){ lk->oh_len, (char *)lk->oh };
	l.svid = lk->svid;
	l.l_offset = lk->off;
	l.l_len = lk->len;
	return l;
}

/*
 * Runs one call to the server's lock manager.  Returns the transport's
 * error; the caller frees the result with xdr_free().
 */
static int nlm_call(nc_client_t *c, const struct nc_cred *cr, uint32_t proc,
		    xdrproc_t xargs, const void *args, xdrproc_t xres,
		    void *res)
{
	struct nc__rpc r = {
		.proc = proc,
		.xargs = xargs,
		.argp = args,
		.xres = xres,
		.resp = res,
		.cred = cr,
	};

	if (!c->nlm)
		return -ENOLCK; /* nc_nlm_start() found no lock manager */
	return nc__xprt_call(c->nlm, &r);
}

/* A status the server may send, or NLM4_FAILED for one it may not. */
static enum nc_nlm_stat stat_of(nlm4_stats s)
{
	return (unsigned)s < NLM_NSTATS ? (enum nc_nlm_stat)s : NC_NLM_FAILED;
}

int nc_nlm_test(nc_client_t *c, const struct nc_cred *cr,
		const struct nc_fh *fh, const struct nc_nlm_lock *lk,
		enum nc_nlm_stat *st, struct nc_nlm_lock *holder)
{
	uint32_t cook;
	nlm4_testargs args = { cookie_of(c, &cook), lk->exclusive,
			       lock_of(c, fh, lk) };
	nlm4_testres res = { 0 };
	int rc = nlm_call(c, cr, NLMPROC4_TEST, NC__XDRPROC(xdr_nlm4_testargs),
			  &args, NC__XDRPROC(xdr_nlm4_testres), &res);

	if (rc == 0) {
		*st = stat_of(res.stat.stat);
		if (*st == NC_NLM_DENIED && holder) {
			const nlm4_holder *h = &res.stat.nlm4_testrply_u.holder;

			memset(holder, 0, sizeof(*holder));
			holder->exclusive = h->exclusive;
			holder->svid = h->svid;
			holder->off = h->l_offset;
			holder->len = h->l_len;
			holder->oh_len = h->oh.nlm4_netobj_len < NC_NLM_OHSIZE ?
						 h->oh.nlm4_netobj_len :
						 NC_NLM_OHSIZE;
			memcpy(holder->oh, h->oh.nlm4_netobj_val,
			       holder->oh_len);
		}
	}
	xdr_free(NC__XDRPROC(xdr_nlm4_testres), (char *)&res);
	return rc;
}

/* The calls answered with an nlm4_res. */
static int res_call(nc_client_t *c, const struct nc_cred *cr, uint32_t proc,
		    xdrproc_t xargs, const void *args, enum nc_nlm_stat *st)
{
	nlm4_res res = { 0 };
	int rc = nlm_call(c, cr, proc, xargs, args, NC__XDRPROC(xdr_nlm4_res),
			  &res);

	if (rc == 0)
		*st = stat_of(res.stat.stat);
	xdr_free(NC__XDRPROC(xdr_nlm4_res), (char *)&res);
	return rc;
}

int nc_nlm_lock(nc_client_t *c, const struct nc_cred *cr,
		const struct nc_fh *fh, const struct nc_nlm_lock *lk,
		bool block, bool reclaim, enum nc_nlm_stat *st)
{
	uint32_t cook;
	/* relaxed: the state a monitor answered; any recent one will do. */
	nlm4_lockargs args = {
		cookie_of(c, &cook),
		block,
		lk->exclusive,
		lock_of(c, fh, lk),
		reclaim,
		atomic_load_explicit(&c->nsm_state, memory_order_relaxed),
	};

	return res_call(c, cr, NLMPROC4_LOCK, NC__XDRPROC(xdr_nlm4_lockargs),
			&args, st);
}

int nc_nlm_cancel(nc_client_t *c, const struct nc_cred *cr,
		  const struct nc_fh *fh, const struct nc_nlm_lock *lk,
		  bool block, enum nc_nlm_stat *st)
{
	uint32_t cook;
	nlm4_cancargs args = { cookie_of(c, &cook), block, lk->exclusive,
			       lock_of(c, fh, lk) };

	return res_call(c, cr, NLMPROC4_CANCEL, NC__XDRPROC(xdr_nlm4_cancargs),
			&args, st);
}

int nc_nlm_unlock(nc_client_t *c, const struct nc_cred *cr,
		  const struct nc_fh *fh, const struct nc_nlm_lock *lk,
		  enum nc_nlm_stat *st)
{
	uint32_t cook;
	nlm4_unlockargs args = { cookie_of(c, &cook), lock_of(c, fh, lk) };

	return res_call(c, cr, NLMPROC4_UNLOCK,
			NC__XDRPROC(xdr_nlm4_unlockargs), &args, st);
}
