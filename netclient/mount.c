/*
 * The client object and mounting, as mount.nfs does it: resolve the
 * server, find its ports with rpcbind (PMAPPROC_GETPORT) unless port= and
 * mountport= are given, list the exports and pick the longest one that
 * contains the path, MNT it, connect the NFS transport, LOOKUP the rest of
 * the path and read FSINFO to choose rsize and wsize.  UMNT on the way out.
 *
 * The rpcbind and MOUNT transports are short-lived and always softerr, with
 * short timeouts of their own, and so is the NFS transport until the mount
 * is done, so one attempt ends and says why; a hard mount that cannot reach
 * the server makes attempts for retry= minutes, saying once on stderr that
 * it is still trying, and sleeps killably in between so that a kill ends
 * it.  A server that answers what is not an RPC reply is not retried: the
 * error says so.  After mounting, the NFS transport has the mount's own
 * timeouts.  Every transport is configured here, from the mount options
 * through nc__timeout_of() and nc__wait_mode(), with an explicit number of
 * slots.  Errors are written to the caller's err buffer; nothing here
 * prints them but the one "still trying" notice of a hard mount.  The
 * client object has no lock: mounting and destroying run alone, and
 * nc_client_shutdown() only hands over to the transport, which has its own.
 *
 * Only this file includes mount3.h, whose RFC names (name, dirpath,
 * groups, exports) are too generic to be visible elsewhere; locals here
 * avoid those names (-Wshadow).
 */
#include "netclient_i.h"

#include "mount3.h"
#include "nfs3.h"
#include "nlm4.h"

#include <errno.h>
#include <netdb.h>
#include <rpc/pmap_prot.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/*
 * rpcbind answers at once or not at all: 2 s, then 4 s more, then give up
 * (a refused connection fails at once).  MOUNT calls take the mount's timeo
 * up to 10 s, and its retrans.  UMNT is a courtesy: 1 s, no retransmission.
 */
#define PMAP_TIMEO 20 /* deciseconds */
#define PMAP_RETRANS 1
#define MOUNT_TIMEO_MAX 100
#define UMNT_TIMEO 10
#define UMNT_RETRANS 0
/* The mount-phase transports carry one call at a time. */
#define MOUNT_SLOTS 1

/* Between the attempts of a hard mount: from 1 s, doubling, up to 10 s. */
#define NS_PER_SEC 1000000000ll
#define MOUNT_BACKOFF_MIN_NS (1 * NS_PER_SEC)
#define MOUNT_BACKOFF_MAX_NS (10 * NS_PER_SEC)
#define SECONDS_PER_MINUTE 60

/*
 * Transfer sizes: at least 4 KiB is rounded down to a multiple of it, and
 * a server that gives neither a preference nor a maximum gets 32 KiB.  A
 * maximum below 512 bytes is nonsense and ignored, as Linux does.
 */
#define IO_ALIGN 4096
#define IO_FALLBACK (32u * 1024)
#define IO_SANE_MIN 512

#define PORT_MAX 65535

static void __attribute__((format(printf, 3, 4)))
say(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* The client object. */

static int resolve_errno(int gai)
{
	switch (gai) {
	case EAI_AGAIN:
		return -EAGAIN;
	case EAI_MEMORY:
		return -ENOMEM;
	case EAI_SYSTEM:
		return errno ? -errno : -EIO;
	}
	return -EHOSTUNREACH;
}

int nc_client_create(const char *server, const struct nc_opts *o,
		     nc_client_t **out, char *err, size_t errlen)
{
	struct addrinfo hints, *ai = NULL;
	nc_client_t *c;
	int gai;

	*out = NULL;
	if (!server || !*server) {
		say(err, errlen, "no server given");
		return -EINVAL;
	}
	if (strlen(server) >= sizeof(c->server)) {
		say(err, errlen, "server name '%.64s...' is too long", server);
		return -ENAMETOOLONG;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET; /* IPv4 only: struct nc_client holds one */
	hints.ai_socktype = SOCK_STREAM;
	gai = getaddrinfo(server, NULL, &hints, &ai);
	if (gai) {
		say(err, errlen, "cannot resolve server '%s': %s", server,
		    gai == EAI_SYSTEM ? strerror(errno) : gai_strerror(gai));
		return resolve_errno(gai);
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		freeaddrinfo(ai);
		say(err, errlen, "out of memory");
		return -ENOMEM;
	}
	snprintf(c->server, sizeof(c->server), "%s", server);
	memcpy(&c->addr, ai->ai_addr, sizeof(c->addr));
	c->addr.sin_port = 0;
	freeaddrinfo(ai);
	if (o)
		c->opts = *o;
	else
		nc_opts_init(&c->opts);
	*out = c;
	return 0;
}

/*
 * Why a call failed, for a message: "not an RPC reply" says more than
 * "Protocol error" of what is on that port.
 */
static const char *rpc_why(int rc)
{
	if (rc == -EPROTO)
		return "not an RPC reply (is an NFS server on that port?)";
	return strerror(-rc);
}

/*
 * A transport of this client to prog/vers on port, with the mount's wait
 * mode, slots calls in flight, and timeo/retrans timeouts under softerr:
 * while mounting, one attempt ends, with -ETIMEDOUT ("Connection timed
 * out", as mount.nfs says) when nobody answers, and the retry loop decides
 * what next.  The NFS transport gets the mount's own timeouts once mounted.
 */
int nc__client_xprt(nc_client_t *c, unsigned port, uint32_t prog, uint32_t vers,
		    unsigned timeo, unsigned retrans, unsigned slots,
		    struct nc__xprt **out)
{
	struct nc__xprt_cfg cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.server = c->server;
	cfg.addr = c->addr;
	cfg.addr.sin_port = htons((uint16_t)port);
	cfg.prog = prog;
	cfg.vers = vers;
	cfg.timeout = nc__timeout_of(NC_SOFTERR, timeo, retrans);
	cfg.wait_mode = nc__wait_mode(c->opts.intr_mode);
	cfg.send_mode = c->opts.send_mode;
	cfg.slots = slots;
	cfg.stats = &c->stats;
	/* Per procedure: NFS's and NLM's (MOUNT's are not counted). */
	cfg.pstats = prog == NFS_PROGRAM ? c->pstats :
		     prog == NLM_PROG	 ? c->nlm_pstats :
					   NULL;
	return nc__xprt_create(&cfg, out);
}

/* The mount-phase transports: rpcbind, MOUNT. */

static int aux_xprt(nc_client_t *c, unsigned port, uint32_t prog, uint32_t vers,
		    unsigned timeo, unsigned retrans, struct nc__xprt **out)
{
	return nc__client_xprt(c, port, prog, vers, timeo, retrans, MOUNT_SLOTS,
			       out);
}

static unsigned mount_timeo(const nc_client_t *c)
{
	return c->opts.timeo < MOUNT_TIMEO_MAX ? c->opts.timeo :
						 MOUNT_TIMEO_MAX;
}

static int mount_xprt(nc_client_t *c, struct nc__xprt **out)
{
	return aux_xprt(c, c->mount_port, MOUNT_PROGRAM, MOUNT_V3,
			mount_timeo(c), c->opts.retrans, out);
}

/*
 * Transport errors that say the server is not there, or not yet: what a
 * hard mount tries again.  An answer from the server (MNT refused, no such
 * export) is final.
 */
static bool unreachable(int rc)
{
	switch (-rc) {
	case ECONNREFUSED:
	case ECONNRESET:
	case ECONNABORTED:
	case EHOSTUNREACH:
	case EHOSTDOWN:
	case ENETUNREACH:
	case ENETDOWN:
	case ETIMEDOUT: /* no answer: softerr's major timeout */
		return true;
	}
	return false;
}

/* rpcbind. */

static const char *prog_name(uint32_t prog)
{
	return prog == MOUNT_PROGRAM ? "MOUNT" :
	       prog == NLM_PROG	     ? "NLM (the lock manager)" :
				       "NFS";
}

/* Asks rpcbind (on x) for the TCP port of prog/vers. */
static int getport(nc_client_t *c, struct nc__xprt *x, uint32_t prog,
		   uint32_t vers, unsigned *port, bool *retry, char *err,
		   size_t errlen)
{
	struct pmap map = { prog, vers, IPPROTO_TCP, 0 };
	u_long res = 0;
	struct nc__rpc r = {
		.proc = PMAPPROC_GETPORT,
		.xargs = NC__XDRPROC(xdr_pmap),
		.argp = &map,
		.xres = NC__XDRPROC(xdr_u_long),
		.resp = &res,
	};
	int rc = nc__xprt_call(x, &r);

	if (rc) {
		*retry = unreachable(rc);
		say(err, errlen, "rpcbind on %s: %s (%s do without it)",
		    c->server, rpc_why(rc),
		    prog == NLM_PROG ? "nlmport=" : "port= and mountport=");
		return rc;
	}
	if (res == 0 || res > PORT_MAX) {
		/* Maybe the server is still starting: mount.nfs retries. */
		*retry = true;
		say(err, errlen,
		    "rpcbind on %s: %s version %u over TCP is not registered",
		    c->server, prog_name(prog), vers);
		return -EPROTONOSUPPORT;
	}
	*port = (unsigned)res;
	return 0;
}

/* Sets c->nfs_port and c->mount_port from the options or from rpcbind. */
static int find_ports(nc_client_t *c, bool *retry, char *err, size_t errlen)
{
	struct nc__xprt *x;
	int rc;

	c->nfs_port = c->opts.port;
	c->mount_port = c->opts.mountport;
	if (c->nfs_port && c->mount_port)
		return 0;
	rc = aux_xprt(c, PMAPPORT, PMAPPROG, PMAPVERS, PMAP_TIMEO, PMAP_RETRANS,
		      &x);
	if (rc) {
		say(err, errlen, "rpcbind on %s: %s", c->server, strerror(-rc));
		return rc;
	}
	if (!c->nfs_port)
		rc = getport(c, x, NFS_PROGRAM, NFS_V3, &c->nfs_port, retry,
			     err, errlen);
	if (rc == 0 && !c->mount_port)
		rc = getport(c, x, MOUNT_PROGRAM, MOUNT_V3, &c->mount_port,
			     retry, err, errlen);
	nc__xprt_destroy(x);
	return rc;
}

int nc__find_port(nc_client_t *c, uint32_t prog, uint32_t vers, unsigned *port,
		  char *err, size_t errlen)
{
	struct nc__xprt *x;
	bool retry;
	int rc;

	rc = aux_xprt(c, PMAPPORT, PMAPPROG, PMAPVERS, PMAP_TIMEO, PMAP_RETRANS,
		      &x);
	if (rc) {
		say(err, errlen, "rpcbind on %s: %s", c->server, strerror(-rc));
		return rc;
	}
	rc = getport(c, x, prog, vers, port, &retry, err, errlen);
	nc__xprt_destroy(x);
	return rc;
}

/* Exports. */

static int list_exports(nc_client_t *c, struct nc__xprt *x,
			const struct nc_cred *cred, exports *list, bool *retry,
			char *err, size_t errlen)
{
	struct nc__rpc r = {
		.proc = MOUNTPROC3_EXPORT,
		.xargs = NC__XDRPROC(xdr_void),
		.xres = NC__XDRPROC(xdr_exports),
		.resp = list,
		.cred = cred,
	};
	int rc;

	*list = NULL;
	rc = nc__xprt_call(x, &r);
	if (rc) {
		*retry = unreachable(rc);
		say(err, errlen, "MOUNT service on %s (port %u): %s", c->server,
		    c->mount_port, rpc_why(rc));
	}
	return rc;
}

/*
 * How much of path the export dir covers: its length without trailing
 * slashes when it is path or a parent of path on a component boundary
 * ("/srv/export" covers "/srv/export" and "/srv/export/a", not
 * "/srv/exporter"), else -1.  "/" covers every absolute path, with 0.
 */
static long export_covers(const char *dir, const char *path)
{
	size_t n = strlen(dir);

	while (n > 0 && dir[n - 1] == '/')
		n--;
	if (strncmp(dir, path, n) != 0)
		return -1;
	return path[n] == '\0' || path[n] == '/' ? (long)n : -1;
}

int nc_client_exports(nc_client_t *c, const struct nc_cred *cred,
		      int (*fn)(const char *dir, void *arg), void *arg)
{
	char err[256];
	bool retry = false;
	struct nc__xprt *x;
	exports list = NULL;
	int rc = 0;

	if (!c->mount_port)
		rc = find_ports(c, &retry, err, sizeof(err));
	if (rc == 0)
		rc = mount_xprt(c, &x);
	if (rc)
		return rc;
	rc = list_exports(c, x, cred, &list, &retry, err, sizeof(err));
	nc__xprt_destroy(x);
	/* As for nc_readdir(): a positive return stops, a negative fails. */
	for (const exportnode *e = list; e && rc == 0; e = e->ex_next)
		rc = fn(e->ex_dir, arg);
	xdr_free(NC__XDRPROC(xdr_exports), &list);
	return rc > 0 ? 0 : rc;
}

/*
 * Picks the longest export that covers path into c->export_path and sets
 * *rest to the part of path below it.
 */
static int pick_export(nc_client_t *c, const exportnode *list, const char *path,
		       const char **rest, char *err, size_t errlen)
{
	char seen[512] = "";
	const char *best = NULL;
	size_t pos = 0;
	long best_len = -1;

	for (const exportnode *e = list; e; e = e->ex_next) {
		long n = export_covers(e->ex_dir, path);

		if (pos < sizeof(seen)) {
			int w = snprintf(seen + pos, sizeof(seen) - pos, "%s%s",
					 pos ? ", " : "", e->ex_dir);

			pos += w > 0 ? (size_t)w : 0;
		}
		if (n > best_len) {
			best_len = n;
			best = e->ex_dir;
		}
	}
	if (!best) {
		say(err, errlen,
		    "%s exports no directory containing %s (exports: %s)",
		    c->server, path, seen[0] ? seen : "none");
		return -ENOENT;
	}
	if (strlen(best) >= sizeof(c->export_path)) {
		say(err, errlen, "export %s:%.64s... is too long", c->server,
		    best);
		return -ENAMETOOLONG;
	}
	snprintf(c->export_path, sizeof(c->export_path), "%s", best);
	*rest = path + best_len;
	return 0;
}

/* Whether the flavors MNT returned let us in with AUTH_SYS. */
static bool auth_sys_ok(const mountres3_ok *ok)
{
	/* RFC 1813, 5.2.1: an empty list predates the field; assume yes. */
	if (ok->auth_flavors.auth_flavors_len == 0)
		return true;
	for (u_int i = 0; i < ok->auth_flavors.auth_flavors_len; i++)
		if (ok->auth_flavors.auth_flavors_val[i] == AUTH_SYS)
			return true;
	return false;
}

/* MNTs c->export_path into c->export_fh. */
static int mnt(nc_client_t *c, struct nc__xprt *x, const struct nc_cred *cred,
	       bool *retry, char *err, size_t errlen)
{
	char *dir = c->export_path; /* a dirpath; not called that (mount3.h) */
	mountres3 res;
	struct nc__rpc r = {
		.proc = MOUNTPROC3_MNT,
		.xargs = NC__XDRPROC(xdr_dirpath),
		.argp = &dir,
		.xres = NC__XDRPROC(xdr_mountres3),
		.resp = &res,
		.cred = cred,
	};
	const mountres3_ok *ok = &res.mountres3_u.mountinfo;
	int rc;

	memset(&res, 0, sizeof(res));
	rc = nc__xprt_call(x, &r);
	if (rc) {
		*retry = unreachable(rc);
		say(err, errlen, "MOUNT service on %s (port %u): %s", c->server,
		    c->mount_port, rpc_why(rc));
		goto out_free;
	}
	/* mountstat3 values are the NFS3ERR_* ones (mount3.x). */
	rc = nc__nfs3_errno((int)res.fhs_status);
	if (rc == -EACCES) {
		say(err, errlen, "access denied by server while mounting %s:%s",
		    c->server, c->export_path);
		goto out_free;
	}
	if (rc) {
		say(err, errlen, "mounting %s:%s failed: %s", c->server,
		    c->export_path, strerror(-rc));
		goto out_free;
	}
	rc = -EIO;
	if (ok->fhandle.fhandle3_len > NC_FHSIZE) {
		say(err, errlen, "%s sent a file handle of %u bytes for %s",
		    c->server, ok->fhandle.fhandle3_len, c->export_path);
		goto out_free;
	}
	rc = -EACCES;
	if (!auth_sys_ok(ok)) {
		say(err, errlen,
		    "%s:%s does not accept AUTH_SYS, the only security flavor "
		    "intrfs speaks",
		    c->server, c->export_path);
		goto out_free;
	}
	c->export_fh.len = ok->fhandle.fhandle3_len;
	memcpy(c->export_fh.data, ok->fhandle.fhandle3_val, c->export_fh.len);
	rc = 0;
out_free:
	xdr_free(NC__XDRPROC(xdr_mountres3), &res);
	return rc;
}

static unsigned io_size(unsigned opt, uint32_t pref, uint32_t max);

/* Ends the NFS transports (a failed mount, or the client's end). */
static void nfs_drop(nc_client_t *c)
{
	for (unsigned i = 0; i < c->nnfs; i++)
		nc__xprt_destroy(c->nfsx[i]);
	memset(c->nfsx, 0, sizeof(c->nfsx));
	c->nnfs = 0;
}

/*
 * The NFS transports, nconnect= of them, connected now so that an absent
 * server shows here (as Linux, which connects them all at mount); they run
 * with the mount-phase options until nc_client_mount() is done.
 */
static int nfs_connect(nc_client_t *c, bool *retry, char *err, size_t errlen)
{
	/* The options' slots= (at least 1 when parsed; 0 from a caller: 1). */
	unsigned slots = c->opts.slots ? c->opts.slots : 1;
	unsigned n = c->opts.nconnect ? c->opts.nconnect : 1;
	int rc = 0;

	if (n > NC_NCONNECT_MAX)
		n = NC_NCONNECT_MAX;
	for (unsigned i = 0; i < n && rc == 0; i++) {
		rc = nc__client_xprt(c, c->nfs_port, NFS_PROGRAM, NFS_V3,
				     mount_timeo(c), c->opts.retrans, slots,
				     &c->nfsx[i]);
		if (rc) {
			say(err, errlen, "NFS transport: %s", strerror(-rc));
			break;
		}
		c->nnfs = i + 1;
		rc = nc__xprt_connect(c->nfsx[i]);
		if (rc) {
			*retry = unreachable(rc);
			say(err, errlen, "NFS service on %s (port %u): %s%s",
			    c->server, c->nfs_port, rpc_why(rc),
			    i ? " (a connection beyond the first, nconnect=)" :
				"");
		}
	}
	if (rc)
		nfs_drop(c);
	return rc;
}

struct nc__xprt *nc__nfs(nc_client_t *c)
{
	unsigned start, best, best_load;

	if (c->nnfs <= 1)
		return c->nfsx[0];
	/* Relaxed: which transport to try first is only a spreading hint. */
	start = atomic_fetch_add_explicit(&c->nfs_next, 1,
					  memory_order_relaxed) %
		c->nnfs;
	best = start;
	best_load = nc__xprt_load(c->nfsx[start]);
	for (unsigned k = 1; k < c->nnfs && best_load; k++) {
		unsigned i = (start + k) % c->nnfs;
		unsigned load = nc__xprt_load(c->nfsx[i]);

		if (load < best_load) {
			best = i;
			best_load = load;
		}
	}
	return c->nfsx[best];
}

/*
 * The first NFS calls: the rest of the path below the export, and FSINFO
 * to choose rsize and wsize.  *root is the handle of the path.
 */
static int nfs_first_calls(nc_client_t *c, const struct nc_cred *cred,
			   const char *path, const char *rest,
			   struct nc_fh *root, bool *retry, char *err,
			   size_t errlen)
{
	struct nc_fsinfo fsi;
	struct nc_entry e;
	int rc;

	rc = nc_lookup_path(c, cred, &c->export_fh, rest, &e);
	if (rc) {
		*retry = unreachable(rc);
		say(err, errlen,
		    "cannot look up %s below %s:%s (NFS port %u): %s", path,
		    c->server, c->export_path, c->nfs_port, rpc_why(rc));
		return rc;
	}
	if (!S_ISDIR(e.attr.mode)) {
		say(err, errlen, "%s:%s is not a directory", c->server, path);
		return -ENOTDIR;
	}
	rc = nc_fsinfo(c, cred, &e.fh, &fsi);
	if (rc) {
		*retry = unreachable(rc);
		say(err, errlen, "FSINFO of %s:%s: %s (NFS port %u)", c->server,
		    path, rpc_why(rc), c->nfs_port);
		return rc;
	}
	c->rsize = io_size(c->opts.rsize, fsi.rtpref, fsi.rtmax);
	c->wsize = io_size(c->opts.wsize, fsi.wtpref, fsi.wtmax);
	*root = e.fh;
	return 0;
}

/*
 * One mount attempt: ports, EXPORT, MNT, connect, the path's handle and
 * FSINFO.  *retry says whether a failure is the server being away.
 */
static int mount_attempt(nc_client_t *c, const char *path,
			 const struct nc_cred *cred, struct nc_fh *root,
			 bool *retry, char *err, size_t errlen)
{
	const char *rest = "";
	struct nc__xprt *x;
	exports list;
	int rc;

	*retry = false;
	rc = find_ports(c, retry, err, errlen);
	if (rc)
		return rc;
	rc = mount_xprt(c, &x);
	if (rc) {
		say(err, errlen, "MOUNT transport: %s", strerror(-rc));
		return rc;
	}
	rc = list_exports(c, x, cred, &list, retry, err, errlen);
	if (rc)
		goto out_destroy;
	rc = pick_export(c, list, path, &rest, err, errlen);
	xdr_free(NC__XDRPROC(xdr_exports), &list);
	if (rc)
		goto out_destroy;
	rc = mnt(c, x, cred, retry, err, errlen);
	if (rc)
		goto out_forget;
	nc__xprt_destroy(x);
	/* From here the server knows us: UMNT on the way out. */
	rc = nfs_connect(c, retry, err, errlen);
	if (rc)
		return rc;
	rc = nfs_first_calls(c, cred, path, rest, root, retry, err, errlen);
	if (rc)
		nfs_drop(c);
	return rc;

out_forget:
	c->export_path[0] = '\0';
out_destroy:
	nc__xprt_destroy(x);
	return rc;
}

/*
 * Attempts until one works, fails for good, or (hard mounts) retry=
 * minutes have passed.  Soft mounts make one attempt.
 */
static int mount_retrying(nc_client_t *c, const char *path,
			  const struct nc_cred *cred, struct nc_fh *root,
			  char *err, size_t errlen)
{
	int64_t give_up =
		(int64_t)region_now_ns() +
		(int64_t)c->opts.retry * SECONDS_PER_MINUTE * NS_PER_SEC;
	int64_t backoff = MOUNT_BACKOFF_MIN_NS;
	bool said = false;

	for (;;) {
		int64_t left, nap;
		bool retry;
		int rc;

		rc = mount_attempt(c, path, cred, root, &retry, err, errlen);
		if (rc == 0 || !retry || c->opts.timeo_mode != NC_HARD)
			return rc;
		left = give_up - (int64_t)region_now_ns();
		if (left <= 0) {
			size_t n = errlen ? strlen(err) : 0;

			if (c->opts.retry && n < errlen)
				snprintf(err + n, errlen - n,
					 " (gave up after retry=%u minutes)",
					 c->opts.retry);
			return rc;
		}
		if (!said) {
			fprintf(stderr,
				"mount: server %s not responding, still "
				"trying\n",
				c->server);
			said = true;
		}
		nap = backoff < left ? backoff : left;
		/* Killable: a mount that waits for a dead server can be killed. */
		rc = region_task_sleep(nap, TASK_KILLABLE);
		if (rc) {
			say(err, errlen,
			    "mount of %s interrupted while waiting for the "
			    "server",
			    c->server);
			return rc;
		}
		backoff = backoff * 2 < MOUNT_BACKOFF_MAX_NS ?
				  backoff * 2 :
				  MOUNT_BACKOFF_MAX_NS;
	}
}

/*
 * rsize or wsize.  Like Linux (nfs_server_set_fsinfo()): the option, or
 * else the server's preferred size, capped by the server's maximum and
 * by NC_MAX_IO.  The preference, not the maximum, is the default because
 * it is what the server says works best; a server that gives no
 * preference gets its maximum, and one that gives neither IO_FALLBACK.
 */
static unsigned io_size(unsigned opt, uint32_t pref, uint32_t max)
{
	unsigned s = opt ? opt : pref ? pref : max ? max : IO_FALLBACK;

	if (max >= IO_SANE_MIN && s > max)
		s = max;
	if (s > NC_MAX_IO)
		s = NC_MAX_IO;
	if (s >= IO_ALIGN)
		s -= s % IO_ALIGN;
	return s;
}

int nc_client_mount(nc_client_t *c, const char *path,
		    const struct nc_cred *cred, struct nc_fh *root, char *err,
		    size_t errlen)
{
	struct nc__timeout to;
	int rc;

	if (errlen)
		err[0] = '\0';
	if (!path || path[0] != '/') {
		say(err, errlen, "'%s' is not an absolute path",
		    path ? path : "");
		return -EINVAL;
	}
	if (c->nfsx[0] || c->export_path[0]) {
		say(err, errlen, "%s is already mounted on this client",
		    c->export_path);
		return -EBUSY;
	}
	c->mount_cred = *cred;
	rc = mount_retrying(c, path, cred, root, err, errlen);
	if (rc)
		return rc;
	/* Mounted: from now on the mount's own timeouts. */
	to = nc__timeout_of(c->opts.timeo_mode, c->opts.timeo, c->opts.retrans);
	for (unsigned i = 0; i < c->nnfs; i++)
		nc__xprt_set_timeout(c->nfsx[i], &to);
	return 0;
}

/* UMNT, best effort: the server forgets stale mounts on its own anyway. */
static void umnt(nc_client_t *c)
{
	char *dir = c->export_path; /* a dirpath */
	struct nc__rpc r = {
		.proc = MOUNTPROC3_UMNT,
		.xargs = NC__XDRPROC(xdr_dirpath),
		.argp = &dir,
		.xres = NC__XDRPROC(xdr_void),
		.cred = &c->mount_cred,
	};
	struct nc__xprt *x;
	int rc;

	if (aux_xprt(c, c->mount_port, MOUNT_PROGRAM, MOUNT_V3, UMNT_TIMEO,
		     UMNT_RETRANS, &x))
		return;
	/* Whatever the answer, or an interrupt, the client goes. */
	rc = nc__xprt_call(x, &r);
	(void)rc;
	nc__xprt_destroy(x);
}

void nc_client_shutdown(nc_client_t *c)
{
	for (unsigned i = 0; c && i < c->nnfs; i++)
		nc__xprt_shutdown(c->nfsx[i]);
	if (c && c->nlm)
		nc__xprt_shutdown(c->nlm);
}

void nc_client_destroy(nc_client_t *c)
{
	if (!c)
		return;
	if (c->export_path[0] && c->mount_port)
		umnt(c);
	nc__lockd_destroy(c);
	nc__xprt_destroy(c->nlm);
	nfs_drop(c);
	free(c);
}

/* Accessors. */

const char *nc_client_export(const nc_client_t *c)
{
	return c->export_path;
}

unsigned nc_client_rsize(const nc_client_t *c)
{
	return c->rsize;
}

unsigned nc_client_wsize(const nc_client_t *c)
{
	return c->wsize;
}

const struct nc_opts *nc_client_opts(const nc_client_t *c)
{
	return &c->opts;
}

const char *nc_client_server(const nc_client_t *c)
{
	return c->server;
}

unsigned nc_client_nfs_port(const nc_client_t *c)
{
	return c->nfs_port;
}

unsigned nc_client_local_port(const nc_client_t *c)
{
	return c->nfsx[0] ? nc__xprt_local_port(c->nfsx[0]) : 0;
}

unsigned nc_client_task_calls(nc_client_t *c, const task_t *t,
			      struct nc_call_info *out, unsigned max)
{
	unsigned n = 0;

	for (unsigned i = 0; i < c->nnfs && n < max; i++)
		n += nc__xprt_task_calls(c->nfsx[i], t, out + n, max - n);
	return n;
}

unsigned nc_client_connections(const nc_client_t *c, uint64_t *calls,
			       unsigned max)
{
	for (unsigned i = 0; i < c->nnfs && i < max; i++)
		calls[i] = nc__xprt_carried(c->nfsx[i]);
	return c->nnfs;
}

void nc_client_set_intr_mode(nc_client_t *c, enum nc_intr_mode m)
{
	for (unsigned i = 0; i < c->nnfs; i++)
		nc__xprt_set_wait_mode(c->nfsx[i], nc__wait_mode(m));
	if (c->nlm)
		nc__xprt_set_wait_mode(c->nlm, nc__wait_mode(m));
}

void nc_client_set_send_mode(nc_client_t *c, enum task_mode m)
{
	for (unsigned i = 0; i < c->nnfs; i++)
		nc__xprt_set_send_mode(c->nfsx[i], m);
}

void nc_client_proc_stats(const nc_client_t *c, struct nc_proc_stats *st)
{
	for (unsigned i = 0; i < NC_NPROCS; i++) {
		const struct nc__pstat *p = &c->pstats[i];

		/* Relaxed: statistics, each field read once. */
#define LOADP(f) st[i].f = atomic_load_explicit(&p->f, memory_order_relaxed);
		NC_PROC_STATS_FIELDS(LOADP)
#undef LOADP
	}
}

const char *nc_proc_name(unsigned proc)
{
	static const char *const names[NC_NPROCS] = {
		"NULL",	    "GETATTR", "SETATTR",     "LOOKUP", "ACCESS",
		"READLINK", "READ",    "WRITE",	      "CREATE", "MKDIR",
		"SYMLINK",  "MKNOD",   "REMOVE",      "RMDIR",	"RENAME",
		"LINK",	    "READDIR", "READDIRPLUS", "FSSTAT", "FSINFO",
		"PATHCONF", "COMMIT"
	};

	return proc < NC_NPROCS ? names[proc] : "?";
}

void nc_client_stats(const nc_client_t *c, struct nc_stats *st)
{
	const struct nc__xstats *x = &c->stats;

	/* Relaxed: independent counters, each read once; no order needed. */
#define LOAD(f, what) st->f = atomic_load_explicit(&x->f, memory_order_relaxed);
	NC_STATS_FIELDS(LOAD)
#undef LOAD
	/* The mount is idle as long as its busiest connection. */
	st->idle_ns = 0;
	for (unsigned i = 0; i < c->nnfs; i++) {
		uint64_t idle = nc__xprt_idle_ns(c->nfsx[i]);

		if (i == 0 || idle < st->idle_ns)
			st->idle_ns = idle;
	}
}
