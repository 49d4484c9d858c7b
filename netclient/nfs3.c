/*
 * The NFSv3 procedures (RFC 1813, section 3.3) on top of the transport.
 * Each fills the rpcgen argument struct, runs one call through nfs_call()
 * (or many through nc__xprt_batch() for large I/O) and turns the result
 * into netclient's types.  The conversions live here once: fattr3 to
 * nc_attr, nc_sattr to sattr3, file handles, and the "new object" results
 * of CREATE, MKDIR, SYMLINK and MKNOD (a handle and attributes, completed
 * with LOOKUP or GETATTR when the server left them out, as Linux's
 * nfs_instantiate() does).
 *
 * Buffers: READ decodes straight into the caller's buffer through
 * xdr_read_into(), which bounds the data by the count asked for, so a
 * server cannot make us write past it; WRITE and SYMLINK send from the
 * caller's memory.  Nothing here waits on its own: every blocking point is
 * the transport's, in the calling task; and nothing here holds a lock (the
 * client's one shared hint, no_readdirplus, is an atomic).
 */
#include "netclient_i.h"

#include "nfs3_i.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

_Static_assert(NC_ACCESS_READ == ACCESS3_READ &&
		       NC_ACCESS_LOOKUP == ACCESS3_LOOKUP &&
		       NC_ACCESS_MODIFY == ACCESS3_MODIFY &&
		       NC_ACCESS_EXTEND == ACCESS3_EXTEND &&
		       NC_ACCESS_DELETE == ACCESS3_DELETE &&
		       NC_ACCESS_EXECUTE == ACCESS3_EXECUTE,
	       "NC_ACCESS_* must be RFC 1813's ACCESS3_* bits");
_Static_assert(NC_FHSIZE >= NFS3_FHSIZE, "a handle must fit in nc_fh");
_Static_assert((int)NC_UNSTABLE == (int)UNSTABLE &&
		       (int)NC_DATA_SYNC == (int)DATA_SYNC &&
		       (int)NC_FILE_SYNC == (int)FILE_SYNC,
	       "nc_stable must be stable_how");
_Static_assert(sizeof(((struct nc_write_res *)0)->verf) == NFS3_WRITEVERFSIZE,
	       "write verifier size");

/*
 * READDIR(PLUS) sizes.  maxcount bounds the whole reply: the smaller of
 * rsize and 64 KiB, which holds a few hundred entries with attributes and
 * handles while keeping one reply quick to send and decode.  dircount
 * bounds the names and cookies alone; like Linux (nfs3xdr.c) we ask for an
 * eighth of maxcount, which leaves the rest for attributes and handles.
 * Plain READDIR has no attributes: its count is maxcount.
 */
#define READDIR_MAXCOUNT (64u * 1024)
#define READDIR_DIRCOUNT_SHIFT 3

/* The permission bits of a mode: what sattr3 and fattr3 carry. */
#define MODE_PERM 07777

/*
 * A struct nc__rpc for procedure P, with P's rpcgen routines; the compound
 * literals make the compiler check that args and res are P's types.
 */
#define NFS3_RPC(P, args, res, cr)                    \
	((struct nc__rpc){                            \
		.proc = NFSPROC3_##P,                 \
		.xargs = NC__XDRPROC(xdr_##P##3args), \
		.argp = (const P##3args *){ (args) }, \
		.xres = NC__XDRPROC(xdr_##P##3res),   \
		.resp = (P##3res *){ (res) },         \
		.cred = (cr),                         \
	})

/*
 * Runs one call.  Returns the transport's error, or the result's NFS
 * status as an errno.  Either way the caller frees the result with
 * xdr_free(r->xres, r->resp): results start zeroed, and xdr_free() of a
 * zeroed or already freed result is harmless.
 */
static int nfs_call(nc_client_t *c, struct nc__rpc *r, const nfsstat3 *status)
{
	int rc;

	if (!c->nfsx[0])
		return -ENOTCONN;
	rc = nc__xprt_call(nc__nfs(c), r);
	return rc ? rc : nc__nfs3_errno(*status);
}

/* Conversions. */

static nfs_fh3 fh_to3(const struct nc_fh *fh)
{
	nfs_fh3 f;

	f.data.data_len = fh->len;
	/* Only ever encoded: the cast does not let anything write to it. */
	f.data.data_val = (char *)fh->data;
	return f;
}

/* xdr_nfs_fh3 refuses more than NFS3_FHSIZE bytes, which fits (above). */
static void fh_from3(const nfs_fh3 *f, struct nc_fh *fh)
{
	fh->len = f->data.data_len;
	memcpy(fh->data, f->data.data_val, fh->len);
}

static diropargs3 dirop(const struct nc_fh *dir, const char *name)
{
	diropargs3 d;

	d.dir = fh_to3(dir);
	d.name = (char *)name; /* encoded only */
	return d;
}

/* ftype3 to the S_IF* type bits, and back (ftype_to3). */
static const mode_t ftypes[] = {
	[NF3REG] = S_IFREG,  [NF3DIR] = S_IFDIR, [NF3BLK] = S_IFBLK,
	[NF3CHR] = S_IFCHR,  [NF3LNK] = S_IFLNK, [NF3SOCK] = S_IFSOCK,
	[NF3FIFO] = S_IFIFO,
};

#define NFTYPES (ARRAY_SIZE(ftypes))

/* 0 for a type RFC 1813 does not have. */
static ftype3 ftype_to3(mode_t type)
{
	for (unsigned t = 0; t < NFTYPES; t++)
		if (ftypes[t] && ftypes[t] == (type & S_IFMT))
			return (ftype3)t;
	return (ftype3)0;
}

static struct timespec time_from3(const nfstime3 *t)
{
	struct timespec ts = { (time_t)t->seconds, (long)t->nseconds };

	return ts;
}

static nfstime3 time_to3(const struct timespec *ts)
{
	/* nfstime3 is unsigned 32-bit seconds, as Linux encodes it. */
	nfstime3 t = { (uint32)ts->tv_sec, (uint32)ts->tv_nsec };

	return t;
}

static void attr_from3(const fattr3 *f, struct nc_attr *a)
{
	unsigned t = (unsigned)f->type;

	/* An unknown type keeps its permission bits and no type bits. */
	a->mode = (t < NFTYPES ? ftypes[t] : 0) | (f->mode & MODE_PERM);
	a->nlink = f->nlink;
	a->uid = f->uid;
	a->gid = f->gid;
	a->size = f->size;
	a->used = f->used;
	a->rdev_major = f->rdev.specdata1;
	a->rdev_minor = f->rdev.specdata2;
	a->fsid = f->fsid;
	a->fileid = f->fileid;
	a->atime = time_from3(&f->atime);
	a->mtime = time_from3(&f->mtime);
	a->ctime = time_from3(&f->ctime);
}

/* Copies post-op attributes to a (which may be NULL); true if there were. */
static bool post_op_from3(const post_op_attr *p, struct nc_attr *a)
{
	if (!p->attributes_follow)
		return false;
	if (a)
		attr_from3(&p->post_op_attr_u.attributes, a);
	return true;
}

/* sa may be NULL: nothing is set. */
static sattr3 sattr_to3(const struct nc_sattr *sa)
{
	sattr3 s;

	memset(&s, 0, sizeof(s)); /* FALSE and DONT_CHANGE everywhere */
	if (!sa)
		return s;
	if (sa->set & NC_SET_MODE) {
		s.mode.set_it = TRUE;
		s.mode.set_mode3_u.mode = sa->mode & MODE_PERM;
	}
	if (sa->set & NC_SET_UID) {
		s.uid.set_it = TRUE;
		s.uid.set_uid3_u.uid = sa->uid;
	}
	if (sa->set & NC_SET_GID) {
		s.gid.set_it = TRUE;
		s.gid.set_gid3_u.gid = sa->gid;
	}
	if (sa->set & NC_SET_SIZE) {
		s.size.set_it = TRUE;
		s.size.set_size3_u.size = sa->size;
	}
	/* "Now" wins over a given time, as utimensat(UTIME_NOW) would. */
	if (sa->set & NC_SET_ATIME_NOW) {
		s.atime.set_it = SET_TO_SERVER_TIME;
	} else if (sa->set & NC_SET_ATIME) {
		s.atime.set_it = SET_TO_CLIENT_TIME;
		s.atime.set_atime_u.atime = time_to3(&sa->atime);
	}
	if (sa->set & NC_SET_MTIME_NOW) {
		s.mtime.set_it = SET_TO_SERVER_TIME;
	} else if (sa->set & NC_SET_MTIME) {
		s.mtime.set_it = SET_TO_CLIENT_TIME;
		s.mtime.set_mtime_u.mtime = time_to3(&sa->mtime);
	}
	return s;
}

/* What a LOOKUP-like or CREATE-like reply carried of the object. */
static void entry_from3(const nfs_fh3 *fh, const post_op_attr *attr,
			struct nc_entry *out)
{
	memset(out, 0, sizeof(*out));
	if (fh) {
		fh_from3(fh, &out->fh);
		out->has_fh = true;
	}
	out->has_attr = post_op_from3(attr, &out->attr);
}

/*
 * Fills in what the server left out: the handle with a LOOKUP of the name
 * (which brings attributes too), the attributes with a GETATTR.
 */
static int entry_complete(nc_client_t *c, const struct nc_cred *cr,
			  const struct nc_fh *dir, const char *name,
			  struct nc_entry *out)
{
	int rc;

	if (!out->has_fh)
		return nc_lookup(c, cr, dir, name, out);
	if (out->has_attr)
		return 0;
	rc = nc_getattr(c, cr, &out->fh, &out->attr);
	out->has_attr = rc == 0;
	return rc;
}

/*
 * The tail every CREATE-like procedure shares: run r, take the new
 * object's handle and attributes from the reply (obj, attr point into
 * r->resp), free it, complete the entry.  out may be NULL.
 */
static int make_node(nc_client_t *c, struct nc__rpc *r, const nfsstat3 *status,
		     const post_op_fh3 *obj, const post_op_attr *attr,
		     const struct nc_fh *dir, const char *name,
		     struct nc_entry *out)
{
	struct nc_entry unused;
	int rc;

	if (!out)
		out = &unused;
	rc = nfs_call(c, r, status);
	if (rc == 0)
		entry_from3(obj->handle_follows ? &obj->post_op_fh3_u.handle :
						  NULL,
			    attr, out);
	xdr_free(r->xres, r->resp);
	if (rc == 0 && out != &unused)
		rc = entry_complete(c, r->cred, dir, name, out);
	return rc;
}

/* Attributes and names. */

int nc_null(nc_client_t *c)
{
	struct nc__rpc r = {
		.proc = NFSPROC3_NULL,
		.xargs = NC__XDRPROC(xdr_void),
		.xres = NC__XDRPROC(xdr_void),
	};

	return c->nfsx[0] ? nc__xprt_call(nc__nfs(c), &r) : -ENOTCONN;
}

int nc_getattr(nc_client_t *c, const struct nc_cred *cr, const struct nc_fh *fh,
	       struct nc_attr *attr)
{
	GETATTR3args args = { fh_to3(fh) };
	GETATTR3res res = { 0 };
	struct nc__rpc r = NFS3_RPC(GETATTR, &args, &res, cr);
	int rc = nfs_call(c, &r, &res.status);

	if (rc == 0 && attr)
		attr_from3(&res.GETATTR3res_u.resok.obj_attributes, attr);
	xdr_free(r.xres, r.resp);
	return rc;
}

/* nfstime3 seconds are unsigned 32-bit: 1970 to early 2106. */
static bool time_fits3(const struct timespec *ts)
{
	return ts->tv_sec >= 0 && (uint64_t)ts->tv_sec <= UINT32_MAX &&
	       ts->tv_nsec >= 0 && ts->tv_nsec < 1000000000l;
}

int nc_setattr(nc_client_t *c, const struct nc_cred *cr, const struct nc_fh *fh,
	       const struct nc_sattr *sa, struct nc_attr *attr)
{
	SETATTR3args args = { fh_to3(fh),
			      sattr_to3(sa),
			      { FALSE, { { 0, 0 } } } };
	SETATTR3res res = { 0 };
	struct nc__rpc r = NFS3_RPC(SETATTR, &args, &res, cr);
	bool have = false;
	int rc;

	/* A size change landing after later WRITEs would cut them. */
	r.answer_once_sent = (sa->set & NC_SET_SIZE) != 0;
	/* A time NFSv3 cannot carry is refused, not stored wrapped. */
	if (((sa->set & NC_SET_ATIME) && !(sa->set & NC_SET_ATIME_NOW) &&
	     !time_fits3(&sa->atime)) ||
	    ((sa->set & NC_SET_MTIME) && !(sa->set & NC_SET_MTIME_NOW) &&
	     !time_fits3(&sa->mtime)))
		return -EOVERFLOW;
	rc = nfs_call(c, &r, &res.status);

	if (rc == 0)
		have = post_op_from3(&res.SETATTR3res_u.resok.obj_wcc.after,
				     attr);
	xdr_free(r.xres, r.resp);
	/* The caller wants the new attributes and the server kept them. */
	if (rc == 0 && attr && !have)
		rc = nc_getattr(c, cr, fh, attr);
	return rc;
}

int nc_lookup(nc_client_t *c, const struct nc_cred *cr, const struct nc_fh *dir,
	      const char *name, struct nc_entry *out)
{
	LOOKUP3args args = { dirop(dir, name) };
	LOOKUP3res res = { 0 };
	struct nc__rpc r = NFS3_RPC(LOOKUP, &args, &res, cr);
	struct nc_entry unused;
	int rc = nfs_call(c, &r, &res.status);

	if (!out)
		out = &unused; /* the caller only asks whether it exists */
	if (rc == 0)
		entry_from3(&res.LOOKUP3res_u.resok.object,
			    &res.LOOKUP3res_u.resok.obj_attributes, out);
	xdr_free(r.xres, r.resp);
	if (rc == 0 && out != &unused && !out->has_attr)
		rc = entry_complete(c, cr, dir, name, out);
	return rc;
}

int nc_lookup_path(nc_client_t *c, const struct nc_cred *cr,
		   const struct nc_fh *dir, const char *path,
		   struct nc_entry *out)
{
	char *copy, *save = NULL;
	bool walked = false;
	int rc = 0;

	copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	/* Empty components ("a//b", a leading or trailing '/') are skipped. */
	for (char *n = strtok_r(copy, "/", &save); n && rc == 0;
	     n = strtok_r(NULL, "/", &save)) {
		struct nc_fh from = walked ? out->fh : *dir;

		rc = nc_lookup(c, cr, &from, n, out);
		walked = true;
	}
	free(copy);
	if (rc == 0 && !walked) {
		/* No component: the entry is dir itself. */
		memset(out, 0, sizeof(*out));
		out->fh = *dir;
		out->has_fh = true;
		rc = nc_getattr(c, cr, dir, &out->attr);
		out->has_attr = rc == 0;
	}
	return rc;
}

int nc_access(nc_client_t *c, const struct nc_cred *cr, const struct nc_fh *fh,
	      uint32_t access, uint32_t *granted)
{
	ACCESS3args args = { fh_to3(fh), access };
	ACCESS3res res = { 0 };
	struct nc__rpc r = NFS3_RPC(ACCESS, &args, &res, cr);
	int rc = nfs_call(c, &r, &res.status);

	if (rc == 0)
		*granted = res.ACCESS3res_u.resok.access;
	xdr_free(r.xres, r.resp);
	return rc;
}

int nc_readlink(nc_client_t *c, const struct nc_cred *cr,
		const struct nc_fh *fh, char *buf, size_t len)
{
	READLINK3args args = { fh_to3(fh) };
	READLINK3res res = { 0 };
	struct nc__rpc r = NFS3_RPC(READLINK, &args, &res, cr);
	int rc = nfs_call(c, &r, &res.status);

	if (rc == 0) {
		const char *t = res.READLINK3res_u.resok.data;
		size_t n = t ? strlen(t) : 0;

		if (n >= len) {
			rc = -ENAMETOOLONG; /* no room for the NUL */
		} else {
			memcpy(buf, t, n);
			buf[n] = '\0';
		}
	}
	xdr_free(r.xres, r.resp);
	return rc;
}

/* READ, into the caller's buffer. */

/*
 * What xdr_read_into() decodes: a READ3res whose data goes to buf, or,
 * with buf NULL, stays where it is in the reply record (data_val points
 * into it).
 */
struct read_into {
	READ3res res;
	char *buf;
	u_int max; /* the count asked for: no more may arrive */
};

/*
 * READ3res, composed of the generated routines and xdr_bytes() so that it
 * stays the wire format of nfs3.x, but with the data decoded in place:
 * data_val preset to the caller's buffer makes xdr_bytes() copy into it
 * rather than allocate, and maxsize = the count asked for makes it refuse
 * a longer reply instead of writing past the buffer (the transport then
 * reports -EIO).  Nothing is ever allocated, so there is nothing to free;
 * XDR_FREE must not free the caller's buffer either.
 */
static bool_t xdr_read_into(XDR *xdrs, struct read_into *ri)
{
	READ3resok *ok = &ri->res.READ3res_u.resok;

	if (xdrs->x_op == XDR_FREE)
		return TRUE;
	if (!xdr_nfsstat3(xdrs, &ri->res.status))
		return FALSE;
	if (ri->res.status != NFS3_OK)
		return xdr_READ3resfail(xdrs, &ri->res.READ3res_u.resfail);
	if (!xdr_post_op_attr(xdrs, &ok->file_attributes) ||
	    !xdr_count3(xdrs, &ok->count) || !xdr_bool(xdrs, &ok->eof))
		return FALSE;
	if (xdrs->x_op == XDR_DECODE && !ri->buf) {
		/* In place: the reply is an xdrmem stream over the record. */
		u_int len, pos;

		if (!xdr_u_int(xdrs, &len) || len > ri->max)
			return FALSE;
		pos = XDR_GETPOS(xdrs);
		if (!XDR_SETPOS(xdrs, pos + ((len + 3) & ~3u)))
			return FALSE; /* not that much in the record */
		ok->data.data_len = len;
		ok->data.data_val = xdrs->x_base + pos;
		return TRUE;
	}
	if (xdrs->x_op == XDR_DECODE)
		ok->data.data_val = ri->buf;
	return xdr_bytes(xdrs, &ok->data.data_val, &ok->data.data_len, ri->max);
}

/* One READ of a batch: its arguments, its result, its nc_rpc. */
struct read_call {
	READ3args args;
	struct read_into ri;
};

static struct nc__rpc read_prepare(struct read_call *rc,
				   const struct nc_cred *cr,
				   const struct nc_fh *fh, uint64_t off,
				   uint32_t count, void *buf)
{
	memset(rc, 0, sizeof(*rc));
	rc->args.file = fh_to3(fh);
	rc->args.offset = off;
	rc->args.count = count;
	rc->ri.buf = buf;
	rc->ri.max = count;
	return (struct nc__rpc){
		.proc = NFSPROC3_READ,
		.xargs = NC__XDRPROC(xdr_READ3args),
		.argp = &rc->args,
		.xres = NC__XDRPROC(xdr_read_into),
		.resp = &rc->ri,
		.cred = cr,
	};
}

/*
 * The outcome of one READ whose call ended with xprt_rc (its nc__rpc's rc):
 * 0 with *got and *eof, or -errno.  The length of the opaque data is what
 * arrived; the count field merely repeats it.
 */
static int read_result(const struct read_call *rc, int xprt_rc, uint32_t *got,
		       bool *eof, struct nc_attr *attr)
{
	const READ3resok *ok = &rc->ri.res.READ3res_u.resok;
	int err = xprt_rc ? xprt_rc : nc__nfs3_errno(rc->ri.res.status);

	if (err)
		return err;
	*got = ok->data.data_len;
	*eof = ok->eof;
	post_op_from3(&ok->file_attributes, attr);
	return 0;
}

int nc_read(nc_client_t *c, const struct nc_cred *cr, const struct nc_fh *fh,
	    uint64_t off, uint32_t count, void *buf, uint32_t *got, bool *eof,
	    struct nc_attr *attr)
{
	struct read_call rd;
	struct nc__rpc r = read_prepare(&rd, cr, fh, off, count, buf);

	if (!c->nfsx[0])
		return -ENOTCONN;
	return read_result(&rd, nc__xprt_call(nc__nfs(c), &r), got, eof, attr);
}

int nc_read_inplace(nc_client_t *c, const struct nc_cred *cr,
		    const struct nc_fh *fh, uint64_t off, uint32_t count,
		    struct nc_rbuf *b, bool *eof)
{
	struct read_call rd;
	struct nc__rpc r = read_prepare(&rd, cr, fh, off, count, NULL);
	struct nc__xprt *x;
	uint32_t got = 0;
	int rc;

	memset(b, 0, sizeof(*b));
	*eof = false;
	if (!c->nfsx[0])
		return -ENOTCONN;
	r.keep_reply = true;
	x = nc__nfs(c);
	rc = read_result(&rd, nc__xprt_call(x, &r), &got, eof, NULL);
	if (rc) {
		nc__rec_put(x, r.reply_rec, r.reply_cap);
		return rc;
	}
	b->data = rd.ri.res.READ3res_u.resok.data.data_val;
	b->len = got;
	b->rec_ = r.reply_rec;
	b->cap_ = r.reply_cap;
	b->xprt_ = x;
	return 0;
}

void nc_rbuf_release(struct nc_rbuf *b)
{
	if (b->xprt_)
		nc__rec_put(b->xprt_, b->rec_, b->cap_);
	memset(b, 0, sizeof(*b));
}

/*
 * Calls per batch for size bytes in io-sized pieces: as many as the
 * transport keeps in flight, and no more than the I/O needs.
 */
static unsigned batch_calls(const nc_client_t *c, size_t size, unsigned io)
{
	size_t need = size / io + (size % io != 0);
	unsigned slots = nc__xprt_slots(c->nfsx[0]);

	return need < slots ? (unsigned)need : slots;
}

int nc_pread_inplace(nc_client_t *c, const struct nc_cred *cr,
		     const struct nc_fh *fh, uint64_t off, size_t len,
		     struct nc_rbuf *b, unsigned max, unsigned *n, size_t *got,
		     bool *eof)
{
	struct read_call *calls;
	struct nc__rpc *rpcs;
	struct nc__xprt *x;
	unsigned k, held = 0;
	size_t at = 0;
	bool stop = false;
	int rc;

	*n = 0;
	*got = 0;
	*eof = false;
	if (!c->nfsx[0] || !c->rsize)
		return -ENOTCONN;
	if (len == 0)
		return 0;
	if (max == 0)
		return -EINVAL;
	k = batch_calls(c, len, c->rsize);
	if (k > max)
		k = max;
	calls = calloc(k, sizeof(*calls));
	rpcs = calloc(k, sizeof(*rpcs));
	if (!calls || !rpcs) {
		free(calls);
		free(rpcs);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < k; i++) {
		uint32_t count =
			(uint32_t)(len - at < c->rsize ? len - at : c->rsize);

		rpcs[i] =
			read_prepare(&calls[i], cr, fh, off + at, count, NULL);
		rpcs[i].keep_reply = true;
		at += count;
	}
	x = nc__nfs(c);
	/*
	 * What counts is each reply, in file order, as in nc_pread(): rc is
	 * the first reply's below.  The replies after a failure, a short one
	 * or the end are given back unread.
	 */
	rc = nc__xprt_batch(x, rpcs, k);
	for (unsigned i = 0; i < k; i++) {
		uint32_t part = 0;
		bool end = false;

		if (!stop) {
			rc = read_result(&calls[i], rpcs[i].rc, &part, &end,
					 NULL);
			if (!rc && part == 0 && !end)
				rc = -EIO; /* no data and no end: it would loop */
			stop = rc != 0;
		}
		if (stop) {
			nc__rec_put(x, rpcs[i].reply_rec, rpcs[i].reply_cap);
			continue;
		}
		b[held] = (struct nc_rbuf){
			.data = calls[i].ri.res.READ3res_u.resok.data.data_val,
			.len = part,
			.rec_ = rpcs[i].reply_rec,
			.xprt_ = x,
			.cap_ = rpcs[i].reply_cap,
		};
		held++;
		*got += part;
		*eof = end;
		stop = end || part < calls[i].args.count;
	}
	if (rc) {
		while (held > 0)
			nc_rbuf_release(&b[--held]);
		*got = 0;
		*eof = false;
	}
	*n = held;
	free(rpcs);
	free(calls);
	return rc;
}

/*
 * In batches of nc_pread_inplace(), each reply's data copied out of its
 * record; after a short reply that is not the end, the rest is read again
 * from where it stopped.
 */
int nc_pread(nc_client_t *c, const struct nc_cred *cr, const struct nc_fh *fh,
	     uint64_t off, size_t len, void *buf, size_t *got, bool *eof)
{
	struct nc_rbuf *b;
	size_t done = 0;
	unsigned max;
	int rc = 0;

	*got = 0;
	*eof = false;
	if (!c->nfsx[0] || !c->rsize)
		return -ENOTCONN;
	if (len == 0)
		return 0;
	max = batch_calls(c, len, c->rsize);
	b = calloc(max, sizeof(*b));
	if (!b)
		return -ENOMEM;
	while (done < len && !*eof && rc == 0) {
		unsigned n;
		size_t part;

		rc = nc_pread_inplace(c, cr, fh, off + done, len - done, b, max,
				      &n, &part, eof);
		for (unsigned i = 0; i < n; i++) {
			memcpy((char *)buf + done, b[i].data, b[i].len);
			done += b[i].len;
			nc_rbuf_release(&b[i]);
		}
	}
	*got = done;
	free(b);
	return rc;
}

/* WRITE, from the caller's buffer. */

struct write_call {
	WRITE3args args;
	WRITE3res res;
};

static struct nc__rpc write_prepare(struct write_call *wc,
				    const struct nc_cred *cr,
				    const struct nc_fh *fh, uint64_t off,
				    uint32_t count, const void *buf,
				    enum nc_stable stable)
{
	memset(wc, 0, sizeof(*wc));
	wc->args.file = fh_to3(fh);
	wc->args.offset = off;
	wc->args.count = count;
	wc->args.stable = (stable_how)stable;
	struct nc__rpc r;

	/* The data goes from buf to the socket: no copy into the record. */
	wc->args.data.data_len = 0;
	wc->args.data.data_val = NULL;
	r = NFS3_RPC(WRITE, &wc->args, &wc->res, cr);
	r.tail = buf;
	r.tail_len = count;
	/* Landing after a later WRITE to the same bytes, it would undo it. */
	r.answer_once_sent = true;
	return r;
}

/*
 * The outcome of one WRITE whose call ended with xprt_rc (its nc__rpc's
 * rc), into res (count, committed, verf; verf_changed is the caller's), or
 * -errno.  The result holds nothing to free.
 */
static int write_result(const struct write_call *wc, int xprt_rc,
			struct nc_write_res *res, struct nc_attr *attr)
{
	const WRITE3resok *ok = &wc->res.WRITE3res_u.resok;
	int err = xprt_rc ? xprt_rc : nc__nfs3_errno(wc->res.status);

	if (err)
		return err;
	/* A server claiming more than was sent took what was sent. */
	res->count = ok->count < wc->args.count ? ok->count : wc->args.count;
	res->committed = (enum nc_stable)ok->committed;
	memcpy(res->verf, ok->verf, sizeof(res->verf));
	post_op_from3(&ok->file_wcc.after, attr);
	return 0;
}

int nc_write(nc_client_t *c, const struct nc_cred *cr, const struct nc_fh *fh,
	     uint64_t off, uint32_t count, const void *buf,
	     enum nc_stable stable, struct nc_write_res *res,
	     struct nc_attr *attr)
{
	struct write_call wc;
	struct nc__rpc r = write_prepare(&wc, cr, fh, off, count, buf, stable);
	int rc;

	if (!c->nfsx[0])
		return -ENOTCONN;
	rc = nc__xprt_call(nc__nfs(c), &r);
	memset(res, 0, sizeof(*res));
	rc = write_result(&wc, rc, res, attr);
	xdr_free(r.xres, r.resp);
	return rc;
}

/*
 * Large writes.  res->count is the total (capped at UINT32_MAX, the field's
 * width), res->committed the weakest stability any reply gave, res->verf
 * the last reply's verifier.  Nothing is sent for len 0 (res says FILE_SYNC:
 * there is nothing to commit).
 */
int nc_pwrite_notify(nc_client_t *c, const struct nc_cred *cr,
		     const struct nc_fh *fh, uint64_t off, size_t len,
		     const void *buf, enum nc_stable stable,
		     struct nc_write_res *res,
		     const struct nc_sent_notify *sent)
{
	struct write_call *calls = NULL;
	struct nc__rpc *rpcs = NULL;
	const char *p = buf;
	bool have_verf = false;
	size_t done = 0;
	unsigned max;
	int rc = 0;

	memset(res, 0, sizeof(*res));
	res->committed = NC_FILE_SYNC;
	if (!c->nfsx[0] || !c->wsize)
		return -ENOTCONN;
	if (len == 0)
		return 0;
	max = batch_calls(c, len, c->wsize);
	rc = -ENOMEM;
	calls = calloc(max, sizeof(*calls));
	rpcs = calloc(max, sizeof(*rpcs));
	if (!calls || !rpcs)
		goto out_free;
	rc = 0;
	while (done < len && rc == 0) {
		unsigned n = 0;
		size_t at = done;

		for (; at < len && n < max; n++) {
			uint32_t count = (uint32_t)(len - at < c->wsize ?
							    len - at :
							    c->wsize);

			rpcs[n] = write_prepare(&calls[n], cr, fh, off + at,
						count, p + at, stable);
			at += count;
		}
		/*
		 * The batch that reaches the end says when all has left.  Its
		 * result is its first failure; what counts is each reply, in
		 * file order, as for reads: after a short write the rest is
		 * sent again from where the server stopped.  One that took
		 * nothing is an error (as in Linux), or this would loop.
		 */
		rc = nc__xprt_batch_notify(nc__nfs(c), rpcs, n,
					   at == len ? sent : NULL);
		if (at == len)
			sent = NULL;
		for (unsigned i = 0; i < n; i++) {
			struct nc_write_res one;

			rc = write_result(&calls[i], rpcs[i].rc, &one, NULL);
			if (rc)
				break;
			if (have_verf &&
			    memcmp(res->verf, one.verf, sizeof(one.verf)) != 0)
				res->verf_changed = true; /* it rebooted */
			memcpy(res->verf, one.verf, sizeof(one.verf));
			have_verf = true;
			if (one.committed < res->committed)
				res->committed = one.committed;
			done += one.count;
			if (one.count == 0) {
				rc = -EIO;
				break;
			}
			if (one.count < calls[i].args.count)
				break;
		}
		for (unsigned i = 0; i < n; i++)
			xdr_free(rpcs[i].xres, rpcs[i].resp);
	}
	res->count = (uint32_t)(done < UINT32_MAX ? done : UINT32_MAX);
out_free:
	free(rpcs);
	free(calls);
	return rc;
}

int nc_pwrite(nc_client_t *c, const struct nc_cred *cr, const struct nc_fh *fh,
	      uint64_t off, size_t len, const void *buf, enum nc_stable stable,
	      struct nc_write_res *res)
{
	return nc_pwrite_notify(c, cr, fh, off, len, buf, stable, res, NULL);
}

int nc_commit(nc_client_t *c, const struct nc_cred *cr, const struct nc_fh *fh,
	      uint64_t off, uint32_t count, unsigned char verf[8])
{
	COMMIT3args args = { fh_to3(fh), off, count };
	COMMIT3res res = { 0 };
	struct nc__rpc r = NFS3_RPC(COMMIT, &args, &res, cr);
	int rc = nfs_call(c, &r, &res.status);

	if (rc == 0)
		memcpy(verf, res.COMMIT3res_u.resok.verf, NFS3_WRITEVERFSIZE);
	xdr_free(r.xres, r.resp);
	return rc;
}

/* Making names. */

/*
 * An EXCLUSIVE create's verifier: the server keeps it with the file, so
 * that a retransmission of this CREATE (the transport resends the same
 * bytes) finds its own file rather than EEXIST.  It only has to differ
 * between creates; the kernel's random pool is the simple way, with the
 * clock and a counter should it fail.
 */
static void create_verifier(createverf3 verf)
{
	static _Atomic uint32_t seq;
	struct timespec ts;
	uint32_t w[2];

	if (getrandom(w, sizeof(w), GRND_NONBLOCK) != (ssize_t)sizeof(w)) {
		clock_gettime(CLOCK_REALTIME, &ts);
		/* Relaxed: the counter only has to be unique. */
		w[0] = (uint32_t)ts.tv_sec ^ (uint32_t)getpid();
		w[1] = (uint32_t)ts.tv_nsec ^
		       atomic_fetch_add_explicit(&seq, 1, memory_order_relaxed)
			       << 30;
	}
	_Static_assert(sizeof(w) == NFS3_CREATEVERFSIZE, "verifier size");
	memcpy(verf, w, sizeof(w));
}

static int create_once(nc_client_t *c, const struct nc_cred *cr,
		       const struct nc_fh *dir, const char *name,
		       createmode3 mode, const struct nc_sattr *sa,
		       struct nc_entry *out)
{
	CREATE3args args;
	CREATE3res res = { 0 };
	struct nc__rpc r = NFS3_RPC(CREATE, &args, &res, cr);

	memset(&args, 0, sizeof(args));
	args.where = dirop(dir, name);
	args.how.mode = mode;
	if (mode == EXCLUSIVE)
		create_verifier(args.how.createhow3_u.verf);
	else
		args.how.createhow3_u.obj_attributes = sattr_to3(sa);
	return make_node(c, &r, &res.status, &res.CREATE3res_u.resok.obj,
			 &res.CREATE3res_u.resok.obj_attributes, dir, name,
			 out);
}

int nc_create(nc_client_t *c, const struct nc_cred *cr, const struct nc_fh *dir,
	      const char *name, enum nc_createmode how,
	      const struct nc_sattr *sa, struct nc_entry *out)
{
	static const createmode3 modes[] = {
		[NC_CREATE_UNCHECKED] = UNCHECKED,
		[NC_CREATE_GUARDED] = GUARDED,
		[NC_CREATE_EXCLUSIVE] = EXCLUSIVE,
	};
	struct nc_sattr after = { 0 };
	struct nc_entry e;
	int rc;

	if ((unsigned)how >= ARRAY_SIZE(modes))
		return -EINVAL;
	if (how != NC_CREATE_EXCLUSIVE)
		return create_once(c, cr, dir, name, modes[how], sa, out);

	rc = create_once(c, cr, dir, name, EXCLUSIVE, NULL, &e);
	if (rc == -EOPNOTSUPP) {
		/* A server without exclusive create: GUARDED, as Linux does. */
		return create_once(c, cr, dir, name, GUARDED, sa, out);
	}
	if (rc)
		return rc;
	/*
	 * RFC 1813, 3.3.8: the server may keep the verifier in the file's
	 * attributes (atime and mtime, in practice), so the client sets the
	 * attributes it wanted with a SETATTR.  Like Linux, the times the
	 * caller did not give become the server's "now", which overwrites
	 * the verifier.
	 */
	if (sa)
		after = *sa;
	if (!(after.set & (NC_SET_ATIME | NC_SET_ATIME_NOW)))
		after.set |= NC_SET_ATIME_NOW;
	if (!(after.set & (NC_SET_MTIME | NC_SET_MTIME_NOW)))
		after.set |= NC_SET_MTIME_NOW;
	rc = nc_setattr(c, cr, &e.fh, &after, &e.attr);
	if (rc)
		return rc;
	e.has_attr = true;
	if (out)
		*out = e;
	return 0;
}

int nc_mkdir(nc_client_t *c, const struct nc_cred *cr, const struct nc_fh *dir,
	     const char *name, const struct nc_sattr *sa, struct nc_entry *out)
{
	MKDIR3args args = { dirop(dir, name), sattr_to3(sa) };
	MKDIR3res res = { 0 };
	struct nc__rpc r = NFS3_RPC(MKDIR, &args, &res, cr);

	return make_node(c, &r, &res.status, &res.MKDIR3res_u.resok.obj,
			 &res.MKDIR3res_u.resok.obj_attributes, dir, name, out);
}

int nc_symlink(nc_client_t *c, const struct nc_cred *cr,
	       const struct nc_fh *dir, const char *name, const char *target,
	       const struct nc_sattr *sa, struct nc_entry *out)
{
	SYMLINK3args args = { dirop(dir, name),
			      { sattr_to3(sa), (char *)target } };
	SYMLINK3res res = { 0 };
	struct nc__rpc r = NFS3_RPC(SYMLINK, &args, &res, cr);

	return make_node(c, &r, &res.status, &res.SYMLINK3res_u.resok.obj,
			 &res.SYMLINK3res_u.resok.obj_attributes, dir, name,
			 out);
}

int nc_mknod(nc_client_t *c, const struct nc_cred *cr, const struct nc_fh *dir,
	     const char *name, mode_t type, uint32_t major, uint32_t minor,
	     const struct nc_sattr *sa, struct nc_entry *out)
{
	MKNOD3args args;
	MKNOD3res res = { 0 };
	struct nc__rpc r = NFS3_RPC(MKNOD, &args, &res, cr);
	mknoddata3 *what = &args.what;

	memset(&args, 0, sizeof(args));
	args.where = dirop(dir, name);
	what->type = ftype_to3(type);
	switch (what->type) {
	case NF3CHR:
	case NF3BLK:
		what->mknoddata3_u.device.dev_attributes = sattr_to3(sa);
		what->mknoddata3_u.device.spec.specdata1 = major;
		what->mknoddata3_u.device.spec.specdata2 = minor;
		break;
	case NF3FIFO:
	case NF3SOCK:
		what->mknoddata3_u.pipe_attributes = sattr_to3(sa);
		break;
	default:
		return -EINVAL; /* regular files, directories, links: not here */
	}
	return make_node(c, &r, &res.status, &res.MKNOD3res_u.resok.obj,
			 &res.MKNOD3res_u.resok.obj_attributes, dir, name, out);
}

/* Removing and moving names: nothing to keep from the result. */

int nc_remove(nc_client_t *c, const struct nc_cred *cr, const struct nc_fh *dir,
	      const char *name)
{
	REMOVE3args args = { dirop(dir, name) };
	REMOVE3res res = { 0 };
	struct nc__rpc r = NFS3_RPC(REMOVE, &args, &res, cr);
	int rc = nfs_call(c, &r, &res.status);

	xdr_free(r.xres, r.resp);
	return rc;
}

int nc_rmdir(nc_client_t *c, const struct nc_cred *cr, const struct nc_fh *dir,
	     const char *name)
{
	RMDIR3args args = { dirop(dir, name) };
	RMDIR3res res = { 0 };
	struct nc__rpc r = NFS3_RPC(RMDIR, &args, &res, cr);
	int rc = nfs_call(c, &r, &res.status);

	xdr_free(r.xres, r.resp);
	return rc;
}

int nc_rename(nc_client_t *c, const struct nc_cred *cr,
	      const struct nc_fh *from_dir, const char *from_name,
	      const struct nc_fh *to_dir, const char *to_name)
{
	RENAME3args args = { dirop(from_dir, from_name),
			     dirop(to_dir, to_name) };
	RENAME3res res = { 0 };
	struct nc__rpc r = NFS3_RPC(RENAME, &args, &res, cr);
	int rc = nfs_call(c, &r, &res.status);

	xdr_free(r.xres, r.resp);
	return rc;
}

int nc_link(nc_client_t *c, const struct nc_cred *cr, const struct nc_fh *fh,
	    const struct nc_fh *dir, const char *name)
{
	LINK3args args = { fh_to3(fh), dirop(dir, name) };
	LINK3res res = { 0 };
	struct nc__rpc r = NFS3_RPC(LINK, &args, &res, cr);
	int rc = nfs_call(c, &r, &res.status);

	xdr_free(r.xres, r.resp);
	return rc;
}

/* Directories. */

/*
 * Hands one entry to the callback.  Returns 0 to go on, 1 when the callback
 * asked to stop, or its negative errno.
 */
static int dirent_emit(nc_dirent_fn fn, void *arg, const char *name,
		       uint64_t fileid, uint64_t cookie, const struct nc_fh *fh,
		       const struct nc_attr *attr)
{
	int rc = fn(arg, name ? name : "", fileid, cookie, fh, attr);

	return rc > 0 ? 1 : rc;
}

static uint32_t readdir_maxcount(const nc_client_t *c)
{
	return c->rsize && c->rsize < READDIR_MAXCOUNT ? c->rsize :
							 READDIR_MAXCOUNT;
}

/*
 * READDIRPLUS3res decoded in place, in the wire format of nfs3.x: rpcgen's
 * decoder callocs every entry, its name and its handle, and frees them all
 * after, which was most of a listing's CPU in the daemon.  Here an entry's
 * numbers and attributes land in one array, and its name and handle point
 * into the reply record, kept until the entries are handed over.  A name
 * is terminated in the record: the byte after it is XDR padding or the
 * first of the cookie, decoded by then.
 */
/* Skips len bytes and their padding; where they are, or NULL. */
static char *xdr_inplace(XDR *xdrs, u_int len)
{
	u_int pos = XDR_GETPOS(xdrs), padded = (len + 3) & ~3u;

	/* Wrapped, it would move back: an entry read again, forever. */
	if (padded < len || pos + padded < pos ||
	    !XDR_SETPOS(xdrs, pos + padded))
		return NULL; /* not that much in the record */
	return xdrs->x_base + pos;
}

static bool_t xdr_rdp_entry(XDR *xdrs, struct nc__rdp_entry *e)
{
	bool_t follows;
	u_int len;

	if (!xdr_fileid3(xdrs, &e->fileid) || !xdr_u_int(xdrs, &len))
		return FALSE;
	e->name = xdr_inplace(xdrs, len);
	/* A name with a NUL in it would be another name once terminated. */
	if (!e->name || memchr(e->name, '\0', len))
		return FALSE;
	if (!xdr_cookie3(xdrs, &e->cookie) ||
	    !xdr_post_op_attr(xdrs, &e->attr) || !xdr_bool(xdrs, &follows))
		return FALSE;
	e->has_fh = follows;
	e->fh = NULL;
	e->fh_len = 0;
	if (follows) {
		if (!xdr_u_int(xdrs, &e->fh_len) || e->fh_len > NFS3_FHSIZE)
			return FALSE;
		e->fh = (const unsigned char *)xdr_inplace(xdrs, e->fh_len);
		if (!e->fh)
			return FALSE;
	}
	e->name[len] = '\0';
	return TRUE;
}

bool_t nc__xdr_readdirplus_inplace(XDR *xdrs, struct nc__rdp_res *r)
{
	if (xdrs->x_op == XDR_FREE) {
		free(r->e);
		r->e = NULL;
		r->n = r->cap = 0;
		return TRUE;
	}
	if (xdrs->x_op != XDR_DECODE || !xdr_nfsstat3(xdrs, &r->status))
		return FALSE;
	if (r->status != NFS3_OK)
		return xdr_post_op_attr(xdrs, &r->dir_attr);
	if (!xdr_post_op_attr(xdrs, &r->dir_attr) ||
	    !xdr_cookieverf3(xdrs, r->verf))
		return FALSE;
	for (;;) {
		bool_t more;

		if (!xdr_bool(xdrs, &more))
			return FALSE;
		if (!more)
			break;
		if (r->n == r->cap) {
			unsigned cap = r->cap ? 2 * r->cap : 64;
			struct nc__rdp_entry *e =
				realloc(r->e, cap * sizeof(*e));

			if (!e)
				return FALSE;
			r->e = e;
			r->cap = cap;
		}
		if (!xdr_rdp_entry(xdrs, &r->e[r->n]))
			return FALSE;
		r->n++;
	}
	return xdr_bool(xdrs, &r->eof);
}

static int readdir_plus(nc_client_t *c, const struct nc_cred *cr,
			const struct nc_fh *dir, uint64_t cookie,
			unsigned char verf[8], nc_dirent_fn fn, void *arg,
			bool *eof)
{
	READDIRPLUS3args args;
	struct nc__rdp_res res = { 0 };
	struct nc__rpc r = {
		.proc = NFSPROC3_READDIRPLUS,
		.xargs = NC__XDRPROC(xdr_READDIRPLUS3args),
		.argp = &args,
		.xres = NC__XDRPROC(nc__xdr_readdirplus_inplace),
		.resp = &res,
		.cred = cr,
		.keep_reply = true,
	};
	struct nc__xprt *x;
	int rc;

	if (!c->nfsx[0])
		return -ENOTCONN;
	memset(&args, 0, sizeof(args));
	args.dir = fh_to3(dir);
	args.cookie = cookie;
	memcpy(args.cookieverf, verf, NFS3_COOKIEVERFSIZE);
	args.maxcount = readdir_maxcount(c);
	args.dircount = args.maxcount >> READDIR_DIRCOUNT_SHIFT;
	x = nc__nfs(c);
	rc = nc__xprt_call(x, &r);
	if (rc == 0)
		rc = nc__nfs3_errno(res.status);
	if (rc == 0) {
		memcpy(verf, res.verf, NFS3_COOKIEVERFSIZE);
		for (unsigned i = 0; i < res.n && rc == 0; i++) {
			const struct nc__rdp_entry *e = &res.e[i];
			struct nc_attr at;
			struct nc_fh fh;
			bool has_attr = post_op_from3(&e->attr, &at);

			if (e->has_fh) {
				fh.len = e->fh_len;
				memcpy(fh.data, e->fh, e->fh_len);
			}
			rc = dirent_emit(fn, arg, e->name, e->fileid, e->cookie,
					 e->has_fh ? &fh : NULL,
					 has_attr ? &at : NULL);
		}
		*eof = rc == 0 && res.eof;
	}
	xdr_free(r.xres, r.resp);
	nc__rec_put(x, r.reply_rec, r.reply_cap);
	return rc > 0 ? 0 : rc;
}

static int readdir_plain(nc_client_t *c, const struct nc_cred *cr,
			 const struct nc_fh *dir, uint64_t cookie,
			 unsigned char verf[8], nc_dirent_fn fn, void *arg,
			 bool *eof)
{
	READDIR3args args;
	READDIR3res res = { 0 };
	struct nc__rpc r = NFS3_RPC(READDIR, &args, &res, cr);
	int rc;

	memset(&args, 0, sizeof(args));
	args.dir = fh_to3(dir);
	args.cookie = cookie;
	memcpy(args.cookieverf, verf, NFS3_COOKIEVERFSIZE);
	args.count = readdir_maxcount(c);
	rc = nfs_call(c, &r, &res.status);
	if (rc == 0) {
		const READDIR3resok *ok = &res.READDIR3res_u.resok;
		const entry3 *e;

		memcpy(verf, ok->cookieverf, NFS3_COOKIEVERFSIZE);
		for (e = ok->reply.entries; e && rc == 0; e = e->nextentry)
			rc = dirent_emit(fn, arg, e->name, e->fileid, e->cookie,
					 NULL, NULL);
		*eof = rc == 0 && ok->reply.eof;
	}
	xdr_free(r.xres, r.resp);
	return rc > 0 ? 0 : rc;
}

/*
 * A callback's positive return stops the listing with 0 (and *eof false:
 * entries may remain), a negative one is returned as the error.
 */
int nc_readdir(nc_client_t *c, const struct nc_cred *cr,
	       const struct nc_fh *dir, uint64_t cookie, unsigned char verf[8],
	       bool plus, nc_dirent_fn fn, void *arg, bool *eof)
{
	int rc;

	*eof = false;
	/*
	 * Relaxed: no_readdirplus is a hint with no data behind it; a
	 * racing call that misses it only asks once more and falls back.
	 */
	if (plus &&
	    !atomic_load_explicit(&c->no_readdirplus, memory_order_relaxed)) {
		rc = readdir_plus(c, cr, dir, cookie, verf, fn, arg, eof);
		if (rc != -EOPNOTSUPP)
			return rc;
		atomic_store_explicit(&c->no_readdirplus, true,
				      memory_order_relaxed);
	}
	return readdir_plain(c, cr, dir, cookie, verf, fn, arg, eof);
}

/* File system information. */

int nc_fsstat(nc_client_t *c, const struct nc_cred *cr, const struct nc_fh *fh,
	      struct nc_fsstat *out)
{
	FSSTAT3args args = { fh_to3(fh) };
	FSSTAT3res res = { 0 };
	struct nc__rpc r = NFS3_RPC(FSSTAT, &args, &res, cr);
	int rc = nfs_call(c, &r, &res.status);

	if (rc == 0) {
		const FSSTAT3resok *ok = &res.FSSTAT3res_u.resok;

		out->tbytes = ok->tbytes;
		out->fbytes = ok->fbytes;
		out->abytes = ok->abytes;
		out->tfiles = ok->tfiles;
		out->ffiles = ok->ffiles;
		out->afiles = ok->afiles;
	}
	xdr_free(r.xres, r.resp);
	return rc;
}

int nc_fsinfo(nc_client_t *c, const struct nc_cred *cr, const struct nc_fh *fh,
	      struct nc_fsinfo *out)
{
	FSINFO3args args = { fh_to3(fh) };
	FSINFO3res res = { 0 };
	struct nc__rpc r = NFS3_RPC(FSINFO, &args, &res, cr);
	int rc = nfs_call(c, &r, &res.status);

	if (rc == 0) {
		const FSINFO3resok *ok = &res.FSINFO3res_u.resok;

		out->rtmax = ok->rtmax;
		out->rtpref = ok->rtpref;
		out->wtmax = ok->wtmax;
		out->wtpref = ok->wtpref;
		out->dtpref = ok->dtpref;
		out->maxfilesize = ok->maxfilesize;
		out->properties = ok->properties;
	}
	xdr_free(r.xres, r.resp);
	return rc;
}

int nc_pathconf(nc_client_t *c, const struct nc_cred *cr,
		const struct nc_fh *fh, struct nc_pathconf *out)
{
	PATHCONF3args args = { fh_to3(fh) };
	PATHCONF3res res = { 0 };
	struct nc__rpc r = NFS3_RPC(PATHCONF, &args, &res, cr);
	int rc = nfs_call(c, &r, &res.status);

	if (rc == 0) {
		const PATHCONF3resok *ok = &res.PATHCONF3res_u.resok;

		out->linkmax = ok->linkmax;
		out->name_max = ok->name_max;
		out->no_trunc = ok->no_trunc;
		out->chown_restricted = ok->chown_restricted;
		out->case_insensitive = ok->case_insensitive;
		out->case_preserving = ok->case_preserving;
	}
	xdr_free(r.xres, r.resp);
	return rc;
}
