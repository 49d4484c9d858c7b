/*
 * intrfs netclient: an NFSv3 + MOUNT3 client over ONC RPC on TCP.
 *
 * One client talks to one server: a MOUNT transport for MNT/UMNT/EXPORT and
 * the NFS transports, each a TCP connection with many calls in flight (one,
 * or nconnect= of them, each call on the least busy).
 * Every blocking point runs in the calling task (include/intrfs/region.h)
 * with the per-call mode a Linux NFS client would use there, so the caller's
 * regions and policy decide what an interrupt does:
 *
 *   - the transport's send lock: an interruptible lock;
 *   - the record send: an interruptible socket-send primitive (the
 *     sendmsg() of the proposal), a signal honoured only before the first
 *     byte; the rest of the record is sent inside a nested killable region,
 *     and a fatal interrupt that pierces it resets the connection;
 *   - the reply wait: the mount's mode (intr: interruptible, killable,
 *     nointr: uninterruptible), with timeo/retrans and hard/soft/softerr.
 *
 * Every function returns 0 or a negative errno.  NFS3ERR_* statuses and RPC
 * failures map to errnos in one table (netclient/errors.c); -EINTR means the
 * task was interrupted, -EIO/-ETIMEDOUT a soft/softerr major timeout.  A
 * call that talks to the server can return -EINTR and is NC_MUST_CHECK:
 * ignoring that it was interrupted is a warning, and with -Werror (as CI
 * builds) an error.  Errors are returned, never printed: only the server's
 * state goes to stderr ("not responding", "OK"), as a Linux client says it
 * in the kernel log.
 */
#ifndef INTRFS_NETCLIENT_H
#define INTRFS_NETCLIENT_H

#include "intrfs/region.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* For a result that may say "interrupted" (-EINTR): it must be looked at. */
#define NC_MUST_CHECK __attribute__((warn_unused_result))

/* Options, named as nfs(5) names them. */

enum nc_timeo_mode {
	NC_HARD = 0, /* retry forever, "not responding, still trying" */
	NC_SOFT, /* -EIO after retrans retransmissions */
	NC_SOFTERR, /* -ETIMEDOUT after retrans retransmissions */
};

enum nc_intr_mode {
	NC_KILLABLE = 0, /* reply waits are killable (Linux >= 2.6.25) */
	NC_INTR, /* reply waits are interruptible */
	NC_NOINTR, /* reply waits are uninterruptible */
};

/*
 * The region a whole operation runs in, by mount mode: killable, none (intr)
 * or uninterruptible.  The daemon wraps each FUSE request in it and
 * intrfs-client each command; the transport's send region nests inside.
 * Macros, so that each use is its own call site in the region stack.
 */
#define NC_MODE_REGION_BEGIN(mode, why)                    \
	do {                                               \
		if ((mode) == NC_KILLABLE)                 \
			region_begin_killable(why);        \
		else if ((mode) == NC_NOINTR)              \
			region_begin_uninterruptible(why); \
	} while (0)

#define NC_MODE_REGION_END(mode)                      \
	do {                                          \
		if ((mode) == NC_KILLABLE)            \
			region_end_killable();        \
		else if ((mode) == NC_NOINTR)         \
			region_end_uninterruptible(); \
	} while (0)

#define NC_MAX_IO (1u << 20)
/* nconnect= at most, as Linux's NFS_MAX_CONNECTIONS. */
#define NC_NCONNECT_MAX 16

struct nc_opts {
	enum nc_timeo_mode timeo_mode;
	enum nc_intr_mode intr_mode;
	unsigned timeo; /* deciseconds before the first retransmission */
	unsigned retrans; /* retransmissions before a major timeout */
	unsigned rsize; /* cap on READ size; 0: the server's preference */
	unsigned wsize; /* cap on WRITE size; 0: the server's preference */
	unsigned port; /* NFS port; 0: ask rpcbind */
	unsigned mountport; /* MOUNT port; 0: ask rpcbind */
	unsigned nlmport; /* the lock manager's (NLM) port; 0: ask rpcbind */
	unsigned retry; /* minutes a hard mount keeps trying to mount */
	unsigned slots; /* calls in flight on each NFS connection */
	unsigned nconnect; /* NFS connections (TCP) to the server */
	enum region_policy policy; /* how the caller's regions are enforced */
	/*
	 * The mode of the send's waits, for the transport's send lock and
	 * for room in the socket (send=): interruptible as the kernel's
	 * sendmsg() (the default), or killable or uninterruptible, the
	 * per-call fix proposed instead of regions.
	 */
	enum task_mode send_mode;
	/*
	 * policy=linux: percall, with the per-call choices Linux's client
	 * makes (its measured behaviour, mount-scripts/oracle): every reply
	 * and send wait killable whatever intr or nointr says (Linux ignores
	 * both), and the waits for writes on their way (fsync, flush, a
	 * truncate) uninterruptible, as folio_wait_writeback() is.
	 */
	bool linux_waits;
};

/*
 * The names policy= takes, for messages: the region API's policies and
 * linux (percall with the waits linux_waits names).
 */
#define NC_POLICY_NAMES "percall, region, sigmask or linux"

/*
 * Defaults: hard, killable, policy=region, send=interruptible, and each
 * number's as --help says it (nc_opt_help(): timeo=600, retrans=2...).
 */
void nc_opts_init(struct nc_opts *o);

/* The option that names mode m ("killable", "intr", "nointr"). */
const char *nc_intr_mode_name(enum nc_intr_mode m);
/* Sets *m from such a name: 0, or -EINVAL. */
int nc_intr_mode_parse(const char *name, enum nc_intr_mode *m);

/*
 * Parses a comma-separated option string into o.  An option netclient does
 * not know is handed to unknown() (when not NULL), which returns 0 if it
 * took it, 1 if it does not know it either, or -EINVAL with a message in
 * err.  Returns 0, or -EINVAL with a message naming the option in err.
 */
int nc_opts_parse(struct nc_opts *o, const char *str,
		  int (*unknown)(const char *key, const char *val, void *arg,
				 char *err, size_t errlen),
		  void *arg, char *err, size_t errlen);
/* Writes the options back in nfs(5) form, e.g. "hard,timeo=600,...". */
void nc_opts_format(const struct nc_opts *o, char *buf, size_t len);

/*
 * What --help says of netclient's options, from the table the parser
 * uses (the daemon's help and intrfs-client's both print it): the row of
 * key ("timeo", "hard", "policy"...), *syntax what to type and help what
 * it does, lines split by '\n', each at most NC_OPT_HELP_WIDTH wide, the
 * option's default and range in it.  Returns help's length, or -ENOENT
 * for a key with no row.  nc_opt_help_key(i) is the i-th row's key in
 * the order a help lists them, NULL past the last.
 */
#define NC_OPT_HELP_WIDTH 54
int nc_opt_help(const char *key, const char **syntax, char *help, size_t len);
const char *nc_opt_help_key(unsigned i);

/* AUTH_SYS credentials; each call acts as the caller who made it. */
#define NC_MAX_GROUPS 16
struct nc_cred {
	uint32_t uid, gid;
	unsigned ngroups;
	uint32_t groups[NC_MAX_GROUPS];
};

/* The credentials of this process. */
void nc_cred_self(struct nc_cred *cred);

#define NC_FHSIZE 64
struct nc_fh {
	unsigned len;
	unsigned char data[NC_FHSIZE];
};

/* fattr3, with the type folded into mode (S_IFREG, S_IFDIR, ...). */
struct nc_attr {
	mode_t mode;
	uint32_t nlink;
	uint32_t uid, gid;
	uint64_t size, used;
	uint32_t rdev_major, rdev_minor;
	uint64_t fsid, fileid;
	struct timespec atime, mtime, ctime;
};

/* What SETATTR, CREATE, MKDIR... set: a mask of NC_SET_*. */
enum {
	NC_SET_MODE = 1 << 0,
	NC_SET_UID = 1 << 1,
	NC_SET_GID = 1 << 2,
	NC_SET_SIZE = 1 << 3,
	NC_SET_ATIME = 1 << 4, /* to atime */
	NC_SET_ATIME_NOW = 1 << 5, /* to the server's time */
	NC_SET_MTIME = 1 << 6,
	NC_SET_MTIME_NOW = 1 << 7,
};

struct nc_sattr {
	unsigned set;
	mode_t mode; /* permission bits only */
	uint32_t uid, gid;
	uint64_t size;
	struct timespec atime, mtime;
};

/* A name's handle and attributes, as LOOKUP and CREATE return them. */
struct nc_entry {
	struct nc_fh fh;
	struct nc_attr attr;
	bool has_fh, has_attr;
};

struct nc_fsinfo {
	uint32_t rtmax, rtpref, wtmax, wtpref, dtpref;
	uint64_t maxfilesize;
	uint32_t properties;
};

struct nc_fsstat {
	uint64_t tbytes, fbytes, abytes, tfiles, ffiles, afiles;
};

struct nc_pathconf {
	uint32_t linkmax, name_max;
	bool no_trunc, chown_restricted, case_insensitive, case_preserving;
};

/*
 * The transport's counters, for the demo, the tests and introspection: one
 * list, X(name, what it counts), from which the struct, the transport's
 * atomics, intrfs-client's -v and every other dump are made.
 */
#define NC_STATS_FIELDS(X)                                           \
	X(calls, "calls completed (any result)")                     \
	X(retransmits, "resends after a timeout or a reset")         \
	X(major_timeouts, "timeo*(retrans+1) spent without a reply") \
	X(resets, "connections reset by the client")                 \
	X(partial_resets, "of those, a record cut by an interrupt")  \
	X(reconnects, "connections made after the first")            \
	X(same_port, "reconnects from the previous source port")     \
	X(bad_replies, "replies that did not decode")                \
	X(unknown_xids, "replies nobody waited for (dropped)")       \
	X(interrupted, "calls that ended with -EINTR")               \
	X(connects, "connections made")                              \
	X(connect_ns, "time spent connecting, ns")                   \
	X(sends, "records sent whole (calls and retransmissions)")   \
	X(receives, "replies taken for a call")                      \
	X(lone_reads, "calls that read their own reply, alone")      \
	X(backlog, "calls that waited for a free slot")              \
	X(inflight_sum, "calls in flight, summed at each send")      \
	X(inflight_max, "the most calls in flight on a connection")

struct nc_stats {
#define NC__STATS_FIELD(name, what) uint64_t name;
	NC_STATS_FIELDS(NC__STATS_FIELD)
#undef NC__STATS_FIELD
	/* Not a counter: since the NFS connection last sent or received. */
	uint64_t idle_ns;
};

/*
 * Per NFS procedure, the fields of Linux's /proc/self/mountstats "per-op
 * statistics": operations, transmissions, major timeouts, bytes sent and
 * received, cumulative queue time (call made to first sent), RTT (last
 * sent to reply) and execute time (made to done); and errors (calls that
 * ended in an error, NFS status or not).
 */
#define NC_PROC_STATS_FIELDS(X) \
	X(ops)                  \
	X(transmissions)        \
	X(major_timeouts)       \
	X(bytes_sent)           \
	X(bytes_recv)           \
	X(queue_ns)             \
	X(rtt_ns)               \
	X(execute_ns)           \
	X(errors)

struct nc_proc_stats {
#define NC__PROC_STATS_FIELD(name) uint64_t name;
	NC_PROC_STATS_FIELDS(NC__PROC_STATS_FIELD)
#undef NC__PROC_STATS_FIELD
};

/* NFSv3's procedures, NULL (0) to COMMIT (21). */
#define NC_NPROCS 22

/* The procedure's RFC 1813 name, "GETATTR"; "?" past COMMIT. */
const char *nc_proc_name(unsigned proc);

/*
 * Transport events, for tracing: a call sent again (after its timeout, or
 * on a new connection), a major timeout, a connection ended (by the
 * client, a record cut mid-way or not, or by the server), a reply taken.
 * The hook runs on the thread where the event happens, with the
 * transport's lock held: it must not wait and must not call netclient.
 */
enum nc_event_type {
	NC_EV_RETRANSMIT,
	NC_EV_MAJOR_TIMEOUT,
	NC_EV_RESET,
	NC_EV_REPLY,
};

struct nc_event {
	enum nc_event_type type;
	uint32_t prog; /* 100003 NFS, 100005 MOUNT, 100000 rpcbind */
	uint32_t xid; /* 0 for a reset */
	unsigned proc;
	bool by_client; /* reset: the client ended it */
	bool partial; /* reset: a record was cut mid-way */
	uint64_t rtt_ns; /* reply: since the last transmission started */
};

void nc_set_event_hook(void (*fn)(const struct nc_event *ev, void *arg),
		       void *arg);

typedef struct nc_client nc_client_t;

/*
 * Makes a client for server (a host name or address) with options o.
 * Nothing is sent yet.  Returns 0 or -errno, with a message in err.
 */
int nc_client_create(const char *server, const struct nc_opts *o,
		     nc_client_t **out, char *err, size_t errlen);
/*
 * Makes every NFS call in flight, and every later one, fail with
 * -ESHUTDOWN: a daemon being unmounted stops waiting for its server.
 */
void nc_client_shutdown(nc_client_t *c);
/* Unmounts (UMNT, best effort) and frees. */
void nc_client_destroy(nc_client_t *c);

/*
 * Mounts path: finds the ports (rpcbind, unless given), lists the exports
 * and picks the longest one that is a prefix of path, MNTs it, LOOKUPs the
 * rest of path, connects the NFS transport and reads FSINFO to choose
 * rsize/wsize.  *root is the handle of path.  Runs in the calling task.
 */
NC_MUST_CHECK int nc_client_mount(nc_client_t *c, const char *path,
				  const struct nc_cred *cred,
				  struct nc_fh *root, char *err, size_t errlen);

/* After mount: the export used, the sizes chosen, the options. */
const char *nc_client_export(const nc_client_t *c);
unsigned nc_client_rsize(const nc_client_t *c);
unsigned nc_client_wsize(const nc_client_t *c);
const struct nc_opts *nc_client_opts(const nc_client_t *c);
const char *nc_client_server(const nc_client_t *c);
/* The NFS port mounted: port=, or rpcbind's answer. */
unsigned nc_client_nfs_port(const nc_client_t *c);
/* The source port of the first NFS connection (0: none yet). */
unsigned nc_client_local_port(const nc_client_t *c);
void nc_client_stats(const nc_client_t *c, struct nc_stats *st);
/*
 * The mount's intr/killable/nointr mode for the NFS calls' waits that
 * start from now on (a live switch, for demonstrations).
 */
void nc_client_set_intr_mode(nc_client_t *c, enum nc_intr_mode m);
/* The same for the send's waits (send=), for policy=linux set live. */
void nc_client_set_send_mode(nc_client_t *c, enum task_mode m);
/* A call in flight, as nc_client_task_calls() sees it. */
struct nc_call_info {
	uint32_t xid;
	unsigned proc; /* NFS procedure (nc_proc_name()) */
	unsigned transmissions; /* sent whole so far */
	bool awaiting; /* sent on the current connection, reply awaited */
};

/*
 * Task t's NFS calls in flight that have an XID (a slot), at most max, into
 * out; how many.  For the superset of Linux's rpc_clnt tasks view.
 */
unsigned nc_client_task_calls(nc_client_t *c, const task_t *t,
			      struct nc_call_info *out, unsigned max);
/*
 * The NFS connections (nconnect=): how many, and the calls each has
 * carried so far into calls[0..max-1].
 */
unsigned nc_client_connections(const nc_client_t *c, uint64_t *calls,
			       unsigned max);
/* The per-procedure counters of the NFS connections, st[NC_NPROCS]. */
void nc_client_proc_stats(const nc_client_t *c, struct nc_proc_stats *st);

/* The export list (MOUNTPROC3_EXPORT); fn is called once per export. */
NC_MUST_CHECK int nc_client_exports(nc_client_t *c, const struct nc_cred *cred,
				    int (*fn)(const char *dir, void *arg),
				    void *arg);

/* NFSv3 procedures (RFC 1813, section 3.3).  attr outputs may be NULL. */

NC_MUST_CHECK int nc_null(nc_client_t *c);
NC_MUST_CHECK int nc_getattr(nc_client_t *c, const struct nc_cred *cr,
			     const struct nc_fh *fh, struct nc_attr *attr);
/*
 * -EOVERFLOW for a time NFSv3 cannot carry (before 1970, or at or past
 * 2^32 seconds), rather than a wrapped one stored.
 */
NC_MUST_CHECK int nc_setattr(nc_client_t *c, const struct nc_cred *cr,
			     const struct nc_fh *fh, const struct nc_sattr *sa,
			     struct nc_attr *attr);
NC_MUST_CHECK int nc_lookup(nc_client_t *c, const struct nc_cred *cr,
			    const struct nc_fh *dir, const char *name,
			    struct nc_entry *out);
/* ACCESS bits, as RFC 1813 numbers them (nfs3.c checks against nfs3.x). */
enum {
	NC_ACCESS_READ = 0x01,
	NC_ACCESS_LOOKUP = 0x02,
	NC_ACCESS_MODIFY = 0x04,
	NC_ACCESS_EXTEND = 0x08,
	NC_ACCESS_DELETE = 0x10,
	NC_ACCESS_EXECUTE = 0x20,
};

/* access is a mask of NC_ACCESS_*; *granted gets what the server allows. */
NC_MUST_CHECK int nc_access(nc_client_t *c, const struct nc_cred *cr,
			    const struct nc_fh *fh, uint32_t access,
			    uint32_t *granted);
NC_MUST_CHECK int nc_readlink(nc_client_t *c, const struct nc_cred *cr,
			      const struct nc_fh *fh, char *buf, size_t len);
/*
 * Reads up to count bytes at off into buf in one READ (count <= rsize);
 * *got is what the server returned, *eof whether that is the end.
 */
NC_MUST_CHECK int nc_read(nc_client_t *c, const struct nc_cred *cr,
			  const struct nc_fh *fh, uint64_t off, uint32_t count,
			  void *buf, uint32_t *got, bool *eof,
			  struct nc_attr *attr);

enum nc_stable { NC_UNSTABLE = 0, NC_DATA_SYNC = 1, NC_FILE_SYNC = 2 };

struct nc_write_res {
	uint32_t count; /* bytes the server took */
	enum nc_stable committed; /* how stable it made them */
	unsigned char verf[8]; /* its write verifier */
	bool verf_changed; /* nc_pwrite: it changed between calls */
};

/* One WRITE (count <= wsize). */
NC_MUST_CHECK int nc_write(nc_client_t *c, const struct nc_cred *cr,
			   const struct nc_fh *fh, uint64_t off, uint32_t count,
			   const void *buf, enum nc_stable stable,
			   struct nc_write_res *res, struct nc_attr *attr);

/*
 * One READ of at most count bytes (count <= rsize) with its data left where
 * the reply landed, no copy: b->data and b->len, *eof.  On success
 * nc_rbuf_release(b) gives the reply back once the data is used; on
 * failure b holds nothing.
 */
struct nc_rbuf {
	const void *data;
	size_t len;
	void *rec_, *xprt_; /* the reply record and its transport */
	size_t cap_;
};
NC_MUST_CHECK int nc_read_inplace(nc_client_t *c, const struct nc_cred *cr,
				  const struct nc_fh *fh, uint64_t off,
				  uint32_t count, struct nc_rbuf *b, bool *eof);
void nc_rbuf_release(struct nc_rbuf *b);

/*
 * nc_read_inplace() for a range: [off, off+len) in up to max READs in
 * flight, their replies kept in b[0], b[1].. in file order, *n of them
 * holding *got bytes from off on.  It stops at the end of the file (*eof),
 * after a short reply, or once len is read or max replies are held, so
 * *got may be less than len with no *eof: the caller reads on from
 * off + *got.  On success each b[i] is given back with nc_rbuf_release();
 * on failure b holds nothing.
 */
NC_MUST_CHECK int nc_pread_inplace(nc_client_t *c, const struct nc_cred *cr,
				   const struct nc_fh *fh, uint64_t off,
				   size_t len, struct nc_rbuf *b, unsigned max,
				   unsigned *n, size_t *got, bool *eof);

/*
 * Large I/O: splits [off, off+len) into rsize/wsize calls and keeps up to
 * nc_client_opts()->slots of them in flight from the one calling task.
 * nc_pread() stops at end of file and returns the bytes read in *got.
 * nc_pwrite() writes it all or fails; res->verf_changed tells whether the
 * server's write verifier changed between the calls (UNSTABLE data may have
 * been lost and must be written again), res->committed is the weakest
 * stability any call got.
 */
NC_MUST_CHECK int nc_pread(nc_client_t *c, const struct nc_cred *cr,
			   const struct nc_fh *fh, uint64_t off, size_t len,
			   void *buf, size_t *got, bool *eof);
NC_MUST_CHECK int nc_pwrite(nc_client_t *c, const struct nc_cred *cr,
			    const struct nc_fh *fh, uint64_t off, size_t len,
			    const void *buf, enum nc_stable stable,
			    struct nc_write_res *res);

/*
 * Told when a write has left: every byte handed to the socket, only the
 * server's replies still due.  Write-behind answers its caller then.
 */
struct nc_sent_notify {
	void (*fn)(void *arg);
	void *arg;
};

/*
 * nc_pwrite(), calling sent->fn once when the last of its calls has been
 * sent whole (never, when it fails before that); it returns when the
 * replies are in, as nc_pwrite() does.
 */
NC_MUST_CHECK int nc_pwrite_notify(nc_client_t *c, const struct nc_cred *cr,
				   const struct nc_fh *fh, uint64_t off,
				   size_t len, const void *buf,
				   enum nc_stable stable,
				   struct nc_write_res *res,
				   const struct nc_sent_notify *sent);

NC_MUST_CHECK int nc_commit(nc_client_t *c, const struct nc_cred *cr,
			    const struct nc_fh *fh, uint64_t off,
			    uint32_t count, unsigned char verf[8]);

enum nc_createmode {
	NC_CREATE_UNCHECKED,
	NC_CREATE_GUARDED,
	NC_CREATE_EXCLUSIVE
};

NC_MUST_CHECK int nc_create(nc_client_t *c, const struct nc_cred *cr,
			    const struct nc_fh *dir, const char *name,
			    enum nc_createmode how, const struct nc_sattr *sa,
			    struct nc_entry *out);
NC_MUST_CHECK int nc_mkdir(nc_client_t *c, const struct nc_cred *cr,
			   const struct nc_fh *dir, const char *name,
			   const struct nc_sattr *sa, struct nc_entry *out);
NC_MUST_CHECK int nc_symlink(nc_client_t *c, const struct nc_cred *cr,
			     const struct nc_fh *dir, const char *name,
			     const char *target, const struct nc_sattr *sa,
			     struct nc_entry *out);
/* type is S_IFCHR, S_IFBLK, S_IFIFO or S_IFSOCK. */
NC_MUST_CHECK int nc_mknod(nc_client_t *c, const struct nc_cred *cr,
			   const struct nc_fh *dir, const char *name,
			   mode_t type, uint32_t major, uint32_t minor,
			   const struct nc_sattr *sa, struct nc_entry *out);
NC_MUST_CHECK int nc_remove(nc_client_t *c, const struct nc_cred *cr,
			    const struct nc_fh *dir, const char *name);
NC_MUST_CHECK int nc_rmdir(nc_client_t *c, const struct nc_cred *cr,
			   const struct nc_fh *dir, const char *name);
NC_MUST_CHECK int nc_rename(nc_client_t *c, const struct nc_cred *cr,
			    const struct nc_fh *from_dir, const char *from_name,
			    const struct nc_fh *to_dir, const char *to_name);
NC_MUST_CHECK int nc_link(nc_client_t *c, const struct nc_cred *cr,
			  const struct nc_fh *fh, const struct nc_fh *dir,
			  const char *name);

/*
 * One directory entry.  fh and attr are NULL when the server did not send
 * them (READDIR, or READDIRPLUS leaving them out).  Return non-zero to stop.
 */
typedef int (*nc_dirent_fn)(void *arg, const char *name, uint64_t fileid,
			    uint64_t cookie, const struct nc_fh *fh,
			    const struct nc_attr *attr);

/*
 * Reads the directory from cookie/verf (0 and zeroes to start): one
 * READDIRPLUS call, or READDIR when the server does not support it (plus
 * = false then, and remembered).  *eof when the last entry was sent; verf
 * is updated for the next call.
 */
NC_MUST_CHECK int nc_readdir(nc_client_t *c, const struct nc_cred *cr,
			     const struct nc_fh *dir, uint64_t cookie,
			     unsigned char verf[8], bool plus, nc_dirent_fn fn,
			     void *arg, bool *eof);

NC_MUST_CHECK int nc_fsstat(nc_client_t *c, const struct nc_cred *cr,
			    const struct nc_fh *fh, struct nc_fsstat *out);
NC_MUST_CHECK int nc_fsinfo(nc_client_t *c, const struct nc_cred *cr,
			    const struct nc_fh *fh, struct nc_fsinfo *out);
NC_MUST_CHECK int nc_pathconf(nc_client_t *c, const struct nc_cred *cr,
			      const struct nc_fh *fh, struct nc_pathconf *out);

/* Walks a slash-separated path from dir with LOOKUP. */
NC_MUST_CHECK int nc_lookup_path(nc_client_t *c, const struct nc_cred *cr,
				 const struct nc_fh *dir, const char *path,
				 struct nc_entry *out);

/*
 * Locks: the Network Lock Manager version 4 (NLM, RFC 1813 section 6 and
 * the XNFS specification), as Linux's lockd speaks it.  The server's lock
 * manager is asked with nc_nlm_*(); the calls run in the calling task
 * with the mount's timeouts and wait mode, like the NFS calls, and say
 * what the lock manager answered in *st (an answer is not an error: rc is
 * 0).  A LOCK that must wait is answered NC_NLM_BLOCKED; the server calls
 * this host back when it is granted (nc_lockd_start()), and the LOCK is
 * sent again now and then meanwhile, which also grants it.
 */
enum nc_nlm_stat {
	NC_NLM_GRANTED = 0,
	NC_NLM_DENIED, /* a conflicting lock is held */
	NC_NLM_DENIED_NOLOCKS,
	NC_NLM_BLOCKED, /* queued: granted later */
	NC_NLM_DENIED_GRACE_PERIOD, /* the server is reclaiming: try later */
	NC_NLM_DEADLCK,
	NC_NLM_ROFS,
	NC_NLM_STALE_FH,
	NC_NLM_FBIG,
	NC_NLM_FAILED,
};

/* A lock owner's opaque handle, at most this long. */
#define NC_NLM_OHSIZE 96

/*
 * A lock: a byte range, its kind, and its owner, a number (svid) and an
 * opaque handle (oh) that together name it to the server.
 */
struct nc_nlm_lock {
	uint64_t off, len; /* len 0: to the end of the file */
	bool exclusive; /* a write lock */
	int32_t svid;
	unsigned oh_len;
	unsigned char oh[NC_NLM_OHSIZE];
};

/*
 * The errno a process sees for st, as Linux's nlm_stat_to_errno():
 * DENIED EAGAIN, DEADLCK EDEADLK, ROFS EROFS, STALE_FH ESTALE, FBIG
 * EOVERFLOW, the rest ENOLCK; 0 for GRANTED.
 */
int nc_nlm_errno(enum nc_nlm_stat st);
/* The status's RFC name, "NLM4_DENIED". */
const char *nc_nlm_stat_name(enum nc_nlm_stat st);
/* The name of NLM procedure proc, "LOCK"; "?" for one not counted. */
const char *nc_nlm_proc_name(unsigned proc);
/* The per-procedure counters of the lock manager's calls, st[NC_NPROCS]. */
void nc_client_nlm_stats(const nc_client_t *c, struct nc_proc_stats *st);

/*
 * After mount: finds the server's lock manager (the nlmport= option, or
 * the server's rpcbind) and makes the transport to it.  Returns 0, or
 * -errno with a message in err (no lock manager there).
 */
int nc_nlm_start(nc_client_t *c, char *err, size_t errlen);
/* This host's name as lock calls carry it (caller_name). */
const char *nc_nlm_caller_name(const nc_client_t *c);

/* TEST: NC_NLM_DENIED fills *holder (may be NULL) with the lock in the way. */
NC_MUST_CHECK int nc_nlm_test(nc_client_t *c, const struct nc_cred *cr,
			      const struct nc_fh *fh,
			      const struct nc_nlm_lock *lk,
			      enum nc_nlm_stat *st, struct nc_nlm_lock *holder);
/* LOCK: block asks to be queued; reclaim, after the server rebooted. */
NC_MUST_CHECK int nc_nlm_lock(nc_client_t *c, const struct nc_cred *cr,
			      const struct nc_fh *fh,
			      const struct nc_nlm_lock *lk, bool block,
			      bool reclaim, enum nc_nlm_stat *st);
/* CANCEL a LOCK that was BLOCKED. */
NC_MUST_CHECK int nc_nlm_cancel(nc_client_t *c, const struct nc_cred *cr,
				const struct nc_fh *fh,
				const struct nc_nlm_lock *lk, bool block,
				enum nc_nlm_stat *st);
NC_MUST_CHECK int nc_nlm_unlock(nc_client_t *c, const struct nc_cred *cr,
				const struct nc_fh *fh,
				const struct nc_nlm_lock *lk,
				enum nc_nlm_stat *st);

/*
 * This host's side (lockd.c): the callbacks the server's lock manager and
 * this host's status monitor (rpc.statd) make.  Both run on the service's
 * own thread, which must not be kept waiting.
 */
struct nc_lockd_ops {
	/*
	 * GRANTED or GRANTED_MSG from the server: lk on fh, which a LOCK was
	 * BLOCKED for, is its owner's now.  NC_NLM_GRANTED if it is still
	 * wanted (then it is held), NC_NLM_DENIED if not: the server
	 * releases it.
	 */
	enum nc_nlm_stat (*granted)(void *arg, const struct nc_fh *fh,
				    const struct nc_nlm_lock *lk);
	/* The server rebooted (the status monitor says): reclaim. */
	void (*rebooted)(void *arg, int state);
	void *arg;
};

/*
 * Serves the callbacks for c's server: TCP and UDP sockets, program NLM
 * version 4 registered with this host's rpcbind, and this host's status
 * monitor asked to watch the server (SM_MON).  Returns 0; or -EADDRINUSE
 * when another live service holds the program (a lock manager of this
 * host: the kernel's, a server's, another mount's), -EPERM when this
 * process may not register one (not root), or another -errno, each with a
 * message in err: then no callback comes, and a LOCK that was BLOCKED is
 * granted only by sending it again.  The monitor's failure is not one:
 * err says so, and a reboot of the server goes unnoticed.
 */
int nc_lockd_start(nc_client_t *c, const struct nc_lockd_ops *ops, char *err,
		   size_t errlen);
/* Whether callbacks can come (nc_lockd_start() succeeded). */
bool nc_lockd_serving(const nc_client_t *c);
/* Whether the status monitor watches the server (reboots are noticed). */
bool nc_lockd_monitoring(const nc_client_t *c);
/* Stops serving: SM_UNMON, the registration removed, the sockets closed. */
void nc_lockd_stop(nc_client_t *c);

#ifdef __cplusplus
}
#endif

#endif /* INTRFS_NETCLIENT_H */
