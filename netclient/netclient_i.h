/*
 * Private to netclient: the transport's call interface (xprt.c), the client
 * object (mount.c), and what the protocol files share.
 *
 * Layering: nfs3.c and mount.c build argument structs (rpcgen types from
 * nfs3.x / mount3.x), hand them to nc_xprt_call() / nc_xprt_batch() with
 * the xdr routines that encode them and decode the result, and map
 * statuses to errnos with nc_nfs3_errno() (errors.c).  xprt.c knows nothing
 * of NFS: it moves ONC RPC records over one TCP connection.
 *
 * Only mount.c includes mount3.h: its RFC type names (name, dirpath,
 * groups...) are too generic to be visible everywhere.
 */
#ifndef INTRFS_NETCLIENT_I_H
#define INTRFS_NETCLIENT_I_H

#include "intrfs/netclient.h"

#include <netinet/in.h>
#include <pthread.h>
#include <rpc/rpc.h>
#include <stdatomic.h>
#include <sys/socket.h>

struct nc_xprt;

/*
 * libtirpc's xdrproc_t is variadic; the cast through void (*)(void) says the
 * conversion is intended (GCC's -Wcast-function-type accepts that one).
 */
#define NC_XDRPROC(f) ((xdrproc_t)(void (*)(void))(f))

/*
 * One RPC call.  The caller fills the public part; xprt.c encodes argp with
 * xargs, and on an accepted, successful reply decodes the results into resp
 * with xres.  The caller then owns what xres allocated in resp (free it with
 * xdr_free(xres, resp)).  rc is 0 when resp holds a decoded result (whose own
 * status may still be an NFS error), else a negative errno: -EINTR, -EIO
 * (soft timeout), -EPROTO (not an RPC reply: one that does not decode, or a
 * stream that is not RPC), -ETIMEDOUT (softerr),
 * -EPROTONOSUPPORT / -EOPNOTSUPP / -EACCES for RPC-level rejections.
 */
struct nc_rpc {
	uint32_t proc;
	xdrproc_t xargs;
	const void *argp;
	xdrproc_t xres;
	void *resp;
	const struct nc_cred *cred; /* NULL: AUTH_NONE */
	int rc;
	struct nc_call *call; /* private to xprt.c */
	/*
	 * Bulk data sent without a copy: when tail_len is not 0, argp must
	 * encode to arguments that end with an empty opaque<>, which carries
	 * the tail_len bytes at tail instead.  They must stay put until the
	 * call returns (a retransmission sends them again).
	 */
	const void *tail;
	uint32_t tail_len;
};

/* The counters a transport keeps (struct nc_stats, as atomics). */
struct nc_xstats {
#define NC__XSTATS_FIELD(name, what) _Atomic uint64_t name;
	NC_STATS_FIELDS(NC__XSTATS_FIELD)
#undef NC__XSTATS_FIELD
};

struct nc_xprt_cfg {
	const char *server; /* for messages: "server 127.0.0.1 ..." */
	struct sockaddr_in addr;
	uint32_t prog, vers;
	const struct nc_opts *opts; /* timeo, retrans, hard/soft, intr */
	unsigned slots; /* calls in flight; 0: opts->slots */
	struct nc_xstats *stats; /* where to count; may be shared */
};

/*
 * Makes a transport; it connects on first use (in the calling task).
 * Returns 0 or -errno.
 */
int nc_xprt_create(const struct nc_xprt_cfg *cfg, struct nc_xprt **out);
void nc_xprt_destroy(struct nc_xprt *x);

/* One call, start to finish, in the calling task.  Returns r->rc. */
int nc_xprt_call(struct nc_xprt *x, struct nc_rpc *r);

/*
 * n calls in flight at once from the calling task: all are sent, then
 * their replies are awaited together.  Each r[i].rc says how it ended;
 * returns the first non-zero rc, or 0.  An interrupt ends every call not
 * yet answered with -EINTR.
 */
int nc_xprt_batch(struct nc_xprt *x, struct nc_rpc *r, unsigned n);

/*
 * nc_xprt_batch(), and sent->fn(sent->arg) once, in the calling task, as
 * soon as every call of the batch has been handed to the socket whole (or
 * has its reply): from then on only the server's answer is missing, and
 * the batch goes on to wait for it.  Not called when a call fails before it
 * is sent.
 */
int nc_xprt_batch_notify(struct nc_xprt *x, struct nc_rpc *r, unsigned n,
			 const struct nc_sent_notify *sent);

/*
 * Ends every call in flight and every later one with -ESHUTDOWN; the
 * transport stays allocated until nc_xprt_destroy().
 */
void nc_xprt_shutdown(struct nc_xprt *x);

/*
 * Changes the options the transport's next calls run with.  Mounting runs
 * softerr with short timeouts so that an attempt ends; then the mount's own
 * options apply.
 */
void nc_xprt_set_opts(struct nc_xprt *x, const struct nc_opts *o);

/* Makes sure the transport is connected now (used by mount). */
int nc_xprt_connect(struct nc_xprt *x);

/* The client. */

struct nc_client {
	char server[256];
	struct sockaddr_in addr; /* port 0 */
	struct nc_opts opts;
	struct nc_xstats stats; /* of every transport of this client */
	struct nc_xprt *nfs; /* set by nc_client_mount() */
	struct nc_cred mount_cred;
	char export_path[1024]; /* the export MNTed; "" before */
	struct nc_fh export_fh;
	unsigned nfs_port, mount_port;
	unsigned rsize, wsize;
	_Atomic bool no_readdirplus; /* the server said NOTSUPP once */
};

/* errno of an RPC accept_stat / reject_stat (errors.c). */
int nc_rpc_accept_errno(int accept_stat);
int nc_rpc_reject_errno(int reject_stat, int auth_stat);

/* The XDR routines for the AUTH_SYS credential body (xprt.c). */
bool_t nc_xdr_authsys(XDR *xdrs, const struct nc_cred *cred);

#endif /* INTRFS_NETCLIENT_I_H */
