/*
 * Private to netclient: the transport's call interface (xprt.c), the
 * settings a transport takes (built from the mount options in opts.c), the
 * client object (mount.c), and the error mapping the protocol files share
 * (errors.c).  Names here are nc__ (visible across netclient's files, never
 * outside it); nc_ is what include/intrfs/netclient.h exports.  Nothing
 * outside netclient/ includes this header but the transport's unit tests
 * and fuzzer.  Locks: only the transport has any (xprt_i.h gives their
 * order); the client object has none.
 *
 * Layering: nfs3.c and mount.c build argument structs (rpcgen types from
 * nfs3.x / mount3.x), hand them to nc__xprt_call() / nc__xprt_batch() with
 * the xdr routines that encode them and decode the result, and map
 * statuses to errnos with nc__nfs3_errno() (errors.c).  xprt.c knows nothing
 * of NFS nor of mount options: it moves ONC RPC records over one TCP
 * connection, with the timeouts, wait mode and slots it is given.  The
 * transport's own state is in xprt_i.h, for xprt.c and xprt_recv.c only.
 *
 * Only mount.c includes mount3.h: its RFC type names (name, dirpath,
 * groups...) are too generic to be visible everywhere.
 */
#ifndef INTRFS_NETCLIENT_I_H
#define INTRFS_NETCLIENT_I_H

#include "intrfs/netclient.h"
#include "intrfs/util.h"

#include <netinet/in.h>
#include <pthread.h>
#include <rpc/rpc.h>
#include <stdatomic.h>
#include <sys/socket.h>

struct nc__xprt;
struct nc__call;

/*
 * libtirpc's xdrproc_t is variadic; the cast through void (*)(void) says the
 * conversion is intended (GCC's -Wcast-function-type accepts that one).
 */
#define NC__XDRPROC(f) ((xdrproc_t)(void (*)(void))(f))

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
struct nc__rpc {
	uint32_t proc;
	xdrproc_t xargs;
	const void *argp;
	xdrproc_t xres;
	void *resp;
	const struct nc_cred *cred; /* NULL: AUTH_NONE */
	int rc;
	/*
	 * Bulk data sent without a copy: when tail_len is not 0, argp must
	 * encode to arguments that end with an empty opaque<>, which carries
	 * the tail_len bytes at tail instead.  They must stay put until the
	 * call returns (a retransmission sends them again).
	 */
	const void *tail;
	uint32_t tail_len;
	/*
	 * Once sent whole, the call is waited for in a nested killable
	 * region: abandoned on a handled signal, it could still reach the
	 * server after the caller's next calls and undo them (a WRITE over
	 * newer data, a size change cutting later writes).
	 */
	bool answer_once_sent;
	/*
	 * keep_reply: on success the reply record is not recycled but handed
	 * over in reply_rec/reply_cap (the results may point into it); the
	 * caller gives it back with nc__rec_put() on the same transport.
	 */
	bool keep_reply;
	void *reply_rec;
	size_t reply_cap;
};

/* Per procedure (struct nc_proc_stats, as atomics). */
struct nc__pstat {
#define NC__PSTAT_FIELD(name) _Atomic uint64_t name;
	NC_PROC_STATS_FIELDS(NC__PSTAT_FIELD)
#undef NC__PSTAT_FIELD
};

/* The counters a transport keeps (struct nc_stats, as atomics). */
struct nc__xstats {
#define NC__XSTATS_FIELD(name, what) _Atomic uint64_t name;
	NC_STATS_FIELDS(NC__XSTATS_FIELD)
#undef NC__XSTATS_FIELD
};

/*
 * How a transport times a call out, in the shape of Linux's struct
 * rpc_timeout (to_initial, to_increment, to_maxval, to_retries), timed as
 * Linux times it: the major timeout falls initial_ns + retries *
 * increment_ns (at most max_ns) after the first transmission
 * (xprt_calc_majortimeo); the first wait for a reply is initial_ns, each
 * retransmission waits increment_ns longer, and no wait goes past the
 * major timeout (xprt_request_timeout).  mode says what the major timeout
 * does: a hard call starts over from initial_ns with the next major
 * timeout as far again, a soft one fails with -EIO, a softerr one with
 * -ETIMEDOUT.  timeo=5,retrans=1: sent at 0 and 0.5 s, failed at 1.0 s.
 * nc__timeout_of() makes one from timeo= and retrans=.
 */
struct nc__timeout {
	uint64_t initial_ns;
	uint64_t increment_ns;
	uint64_t max_ns;
	unsigned retries;
	enum nc_timeo_mode mode;
};

/*
 * What a transport is made with.  Every field is explicit: the transport
 * reads nothing else, and none of it from the mount options.
 */
struct nc__xprt_cfg {
	const char *server; /* for messages: "server 127.0.0.1 ..." */
	struct sockaddr_in addr;
	uint32_t prog, vers;
	struct nc__timeout timeout;
	enum task_mode wait_mode; /* of every wait but the send primitive */
	enum task_mode send_mode; /* of the send primitive's (send=) */
	unsigned slots; /* calls in flight at most; at least 1 */
	struct nc__xstats *stats; /* where to count; may be shared */
	struct nc__pstat *pstats; /* [NC_NPROCS] per procedure, or NULL */
};

/*
 * The transport (xprt.c).
 *
 * Makes a transport; it connects on first use (in the calling task).
 * Returns 0 or -errno (-EINVAL for no slots).
 */
int nc__xprt_create(const struct nc__xprt_cfg *cfg, struct nc__xprt **out);
void nc__xprt_destroy(struct nc__xprt *x);
/* How long since x last sent a record or took a reply (0: never). */
uint64_t nc__xprt_idle_ns(struct nc__xprt *x);
/* The source port of its last connection (0: never connected). */
unsigned nc__xprt_local_port(struct nc__xprt *x);
/* The mode of the waits that start from now on (a live mode switch). */
void nc__xprt_set_wait_mode(struct nc__xprt *x, enum task_mode mode);
/* The same for the send primitive's waits (send=). */
void nc__xprt_set_send_mode(struct nc__xprt *x, enum task_mode mode);
/* Task t's calls in flight with an XID (at most max); how many. */
unsigned nc__xprt_task_calls(struct nc__xprt *x, const task_t *t,
			     struct nc_call_info *out, unsigned max);

/* One call, start to finish, in the calling task.  Returns r->rc. */
NC_MUST_CHECK int nc__xprt_call(struct nc__xprt *x, struct nc__rpc *r);

/*
 * n calls in flight at once from the calling task: all are sent, then
 * their replies are awaited together.  Each r[i].rc says how it ended;
 * returns the first non-zero rc, or 0.  An interrupt ends every call not
 * yet answered with -EINTR.
 */
NC_MUST_CHECK int nc__xprt_batch(struct nc__xprt *x, struct nc__rpc *r,
				 unsigned n);

/*
 * nc__xprt_batch(), and sent->fn(sent->arg) once, in the calling task, as
 * soon as every call of the batch has been handed to the socket whole (or
 * has its reply): from then on only the server's answer is missing, and
 * the batch goes on to wait for it.  Not called when a call fails before it
 * is sent.
 */
NC_MUST_CHECK int nc__xprt_batch_notify(struct nc__xprt *x, struct nc__rpc *r,
					unsigned n,
					const struct nc_sent_notify *sent);

/*
 * Ends every call in flight and every later one with -ESHUTDOWN; the
 * transport stays allocated until nc__xprt_destroy().
 */
void nc__xprt_shutdown(struct nc__xprt *x);

/*
 * Changes the timeouts of the transport's next calls.  Mounting runs
 * softerr with short timeouts so that an attempt ends; then the mount's own
 * timeouts apply.
 */
void nc__xprt_set_timeout(struct nc__xprt *x, const struct nc__timeout *to);

/* Makes sure the transport is connected now (used by mount). */
NC_MUST_CHECK int nc__xprt_connect(struct nc__xprt *x);

/* The calls the transport keeps in flight at most (cfg->slots). */
unsigned nc__xprt_slots(const struct nc__xprt *x);
/*
 * Gives a record buffer back (or frees it), a reply record kept by
 * keep_reply among them (xprt_recv.c); rec may be NULL.
 */
void nc__rec_put(struct nc__xprt *x, unsigned char *rec, size_t cap);
/* The calls of the batches under way on x now: a hint, already stale. */
unsigned nc__xprt_load(const struct nc__xprt *x);
/* The calls ever made on x. */
uint64_t nc__xprt_carried(const struct nc__xprt *x);

/*
 * The transport settings of the mount options (opts.c): nfs(5)'s timeo=
 * (deciseconds) and retrans= as a timeout strategy under mode, and the
 * wait mode of intr, killable or nointr.
 */
struct nc__timeout nc__timeout_of(enum nc_timeo_mode mode, unsigned timeo,
				  unsigned retrans);
enum task_mode nc__wait_mode(enum nc_intr_mode m);

/* The client object (mount.c; nfs3.c and nlm.c read it). */

struct nc_client {
	char server[256];
	struct sockaddr_in addr; /* port 0 */
	struct nc_opts opts;
	struct nc__xstats stats; /* of every transport of this client */
	struct nc__pstat pstats[NC_NPROCS]; /* of the NFS connection */
	/*
	 * The NFS transports, nconnect= of them, set by nc_client_mount()
	 * (nfsx[0] NULL before); nc__nfs() picks one for a call.
	 */
	struct nc__xprt *nfsx[NC_NCONNECT_MAX];
	unsigned nnfs;
	_Atomic unsigned nfs_next; /* where nc__nfs() starts looking */
	struct nc_cred mount_cred;
	char export_path[1024]; /* the export MNTed; "" before */
	struct nc_fh export_fh;
	unsigned nfs_port, mount_port;
	unsigned rsize, wsize;
	_Atomic bool no_readdirplus; /* the server said NOTSUPP once */
	/*
	 * The lock manager (nlm.c): its transport, set by nc_nlm_start()
	 * before any lock call and read-only after; this host's name as
	 * NLM calls carry it; the status monitor state LOCKs carry.
	 */
	struct nc__xprt *nlm;
	unsigned nlm_port;
	struct nc__pstat nlm_pstats[NC_NPROCS];
	char nodename[65];
	_Atomic int nsm_state;
	_Atomic uint32_t nlm_cookie; /* the next call's cookie */
	struct nc__lockd *lockd; /* lockd.c: the callbacks served */
};

/*
 * A transport of c to prog/vers on port of the server (mount.c), softerr
 * with timeo/retrans until set otherwise, with the mount's wait mode.
 */
int nc__client_xprt(nc_client_t *c, unsigned port, uint32_t prog, uint32_t vers,
		    unsigned timeo, unsigned retrans, unsigned slots,
		    struct nc__xprt **out);
/*
 * The NFS transport for the next call or batch: with nconnect=1 the one;
 * else the one with the fewest calls under way, ties taken in turn.  A
 * call stays on its transport, retransmissions included (a server's
 * duplicate request cache is per connection).  NULL before mount.
 */
struct nc__xprt *nc__nfs(nc_client_t *c);
/* The server's TCP port of prog/vers, from its rpcbind; err says why not. */
int nc__find_port(nc_client_t *c, uint32_t prog, uint32_t vers, unsigned *port,
		  char *err, size_t errlen);
/* lockd.c: stops the callbacks, if served (nc_client_destroy()). */
struct nc__lockd;
void nc__lockd_destroy(nc_client_t *c);

/* Errors (errors.c). */

/* The errno for an NFS3ERR_* status (or a mountstat3: the same numbers). */
int nc__nfs3_errno(int nfsstat3);
/* The status's RFC name, "NFS3ERR_NOENT", for messages and traces. */
const char *nc__nfs3_status_name(int nfsstat3);
/* errno of an RPC accept_stat / reject_stat. */
int nc__rpc_accept_errno(int accept_stat);
int nc__rpc_reject_errno(int reject_stat, int auth_stat);

#endif /* INTRFS_NETCLIENT_I_H */
