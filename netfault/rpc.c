/*
 * ONC RPC on a TCP stream, as netfault sees it (RFC 5531): this file owns
 * the reassembly of records from their fragments (section 11, record
 * marking), the decoding of call and reply headers (section 9), the table
 * that matches a reply to its call by XID, and the names of the programs
 * and procedures netfault can aim at (NFSv3, MOUNT3, rpcbind, NLM).
 *
 * It never does I/O, never reads a clock, never uses libuv and keeps no
 * global state: bytes come in through nf_stream_feed() and whole records
 * go out through its callback, so a fuzzer can drive it alone.  It never
 * allocates per message: a stream's buffer grows to the largest record
 * seen (at most NF_WIRE_MAX) and stays.  It never trusts a length from the
 * wire before checking it against what is buffered.  Headers are decoded
 * by hand, big-endian with bounds checks, not with libtirpc's XDR routines
 * (which allocate); libtirpc's and rpcgen's headers give the protocol's
 * constants only, and nothing of libtirpc is linked.  No locks: a stream
 * and an XID table belong to the one loop thread.
 */
#include "netfault_i.h"

#include "mount3.h"
#include "nfs3.h"

#include <rpc/pmap_prot.h>
#include <rpc/rpc_msg.h>
#include <rpc/rpcb_prot.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The top bit of a record mark: this fragment ends the record (RFC 5531,
 * section 11); the other 31 bits are the fragment's length. */
#define MARK_LAST 0x80000000u
#define MARK_LEN 0x7fffffffu
#define MARK_SIZE 4u

/* An XDR unit: every item is a multiple of 4 bytes (RFC 4506, section 3). */
#define XDR_UNIT 4u

/* A big-endian 32-bit word, as XDR and record marks have it. */
static uint32_t load32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void store32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/*
 * The longest header decoded: a call's six words (xid, msg_type, rpcvers,
 * prog, vers, proc), then the credential and the verifier, each a flavor,
 * a length and at most MAX_AUTH_BYTES.  A reply's header is shorter.
 */
#define HDR_MAX (6u * XDR_UNIT + 2u * (2u * XDR_UNIT + MAX_AUTH_BYTES))

/* The buffer a stream starts with once it sees a record. */
#define WIRE_MIN 4096u

/* ---- header decoding --------------------------------------------------- */

/* A cursor over a body: every read is bounds-checked against len. */
struct cur {
	const uint8_t *p;
	size_t len, off;
};

static bool get_u32(struct cur *c, uint32_t *v)
{
	if (c->len - c->off < XDR_UNIT)
		return false;
	*v = load32(c->p + c->off);
	c->off += XDR_UNIT;
	return true;
}

/* Skips an opaque_auth: flavor, length (at most MAX_AUTH_BYTES), body. */
static bool skip_auth(struct cur *c)
{
	uint32_t flavor, len;
	size_t padded;

	if (!get_u32(c, &flavor) || !get_u32(c, &len))
		return false;
	if (len > MAX_AUTH_BYTES)
		return false;
	padded = (len + XDR_UNIT - 1) & ~(size_t)(XDR_UNIT - 1);
	if (c->len - c->off < padded)
		return false;
	c->off += padded;
	return true;
}

static bool decode_call(struct cur *c, struct nf_msg *msg)
{
	uint32_t rpcvers;

	if (!get_u32(c, &rpcvers) || rpcvers != RPC_MSG_VERSION)
		return false;
	if (!get_u32(c, &msg->prog) || !get_u32(c, &msg->vers) ||
	    !get_u32(c, &msg->proc))
		return false;
	/* The credential, then the verifier. */
	return skip_auth(c) && skip_auth(c);
}

static bool decode_reply(struct cur *c, struct nf_msg *msg)
{
	uint32_t v;

	if (!get_u32(c, &msg->reply_stat))
		return false;
	switch (msg->reply_stat) {
	case MSG_ACCEPTED:
		if (!skip_auth(c) || !get_u32(c, &msg->accept_stat))
			return false;
		switch (msg->accept_stat) {
		case SUCCESS:
		case PROG_UNAVAIL:
		case PROC_UNAVAIL:
		case GARBAGE_ARGS:
		case SYSTEM_ERR:
			return true;
		case PROG_MISMATCH:
			/* The lowest and highest versions supported. */
			return get_u32(c, &v) && get_u32(c, &v);
		}
		return false;
	case MSG_DENIED:
		if (!get_u32(c, &v))
			return false;
		switch (v) {
		case RPC_MISMATCH:
			/* The lowest and highest RPC versions supported. */
			return get_u32(c, &v) && get_u32(c, &v);
		case AUTH_ERROR:
			/* Why authentication failed (an auth_stat). */
			return get_u32(c, &v);
		}
		return false;
	}
	return false;
}

/* msg as for a record of len bytes going dir that is not RPC. */
static void msg_clear(struct nf_msg *msg, enum nf_dir dir, size_t len)
{
	memset(msg, 0, sizeof(*msg));
	msg->dir = dir;
	msg->len = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
}

bool nf_rpc_decode(const uint8_t *body, size_t len, enum nf_dir dir,
		   struct nf_msg *msg)
{
	struct cur c = { .p = body, .len = len, .off = 0 };
	uint32_t xid, type;
	bool ok;

	msg_clear(msg, dir, len);
	if (!get_u32(&c, &xid) || !get_u32(&c, &type))
		return false;
	if (type != (dir == NF_CALL ? CALL : REPLY))
		return false;
	msg->xid = xid;
	ok = dir == NF_CALL ? decode_call(&c, msg) : decode_reply(&c, msg);
	if (!ok) {
		/* Nothing half decoded is left for the caller to trust. */
		msg_clear(msg, dir, len);
		return false;
	}
	msg->rpc = true;
	msg->hdr_len = (uint32_t)c.off;
	return true;
}

/* ---- READ replies cut short ------------------------------------------- */

/* fattr3 on the wire: five 32-bit fields and eight 64-bit ones. */
#define FATTR3_XDR_LEN (5 * 4 + 8 * 8)

size_t nf_read_reply_cut(uint8_t *body, size_t len, const struct nf_msg *msg,
			 uint32_t keep)
{
	size_t off = msg->hdr_len;
	uint32_t follows, data;

	if (!msg->rpc || msg->dir != NF_REPLY || !msg->matched ||
	    msg->prog != NFS_PROGRAM || msg->vers != NFS_V3 ||
	    msg->proc != NFSPROC3_READ || msg->reply_stat != MSG_ACCEPTED ||
	    msg->accept_stat != SUCCESS || off > len || len - off < 8 ||
	    load32(body + off) != NFS3_OK)
		return len;
	/* READ3resok: post_op_attr, count, eof, then the data. */
	follows = load32(body + off + 4);
	if (follows > 1)
		return len;
	off += 8 + (follows ? FATTR3_XDR_LEN : 0);
	if (off > len || len - off < 12)
		return len;
	data = load32(body + off + 8);
	/* Only what the record holds, the cut's padding included. */
	if (data <= keep || data > len - off - 12 ||
	    ((size_t)keep + 3) / 4 * 4 > len - off - 12)
		return len;
	store32(body + off, keep);
	store32(body + off + 4, 0);
	store32(body + off + 8, keep);
	off += 12 + (size_t)keep;
	for (; keep % 4; keep++)
		body[off++] = 0;
	return off;
}

/* ---- the XID table ----------------------------------------------------- */

struct xid_entry {
	uint64_t seq; /* when it was noted; 0: the slot is free */
	uint32_t xid, prog, vers, proc;
};

struct nf_xids {
	unsigned max, count;
	uint64_t next_seq;
	struct xid_entry e[];
};

struct nf_xids *nf_xids_new(unsigned max)
{
	struct nf_xids *x;

	if (max == 0) {
		errno = EINVAL;
		return NULL;
	}
	x = calloc(1, sizeof(*x) + (size_t)max * sizeof(x->e[0]));
	if (!x)
		return NULL;
	x->max = max;
	x->next_seq = 1;
	return x;
}

void nf_xids_free(struct nf_xids *x)
{
	free(x);
}

unsigned nf_xids_count(const struct nf_xids *x)
{
	return x->count;
}

/*
 * Notes a call.  The same XID again (a retransmission) updates its entry;
 * otherwise a free slot is taken, or, when every slot holds an unanswered
 * call, the oldest one's.
 */
static void xids_put(struct nf_xids *x, const struct nf_msg *msg)
{
	struct xid_entry *e = NULL, *free_slot = NULL, *oldest = NULL;
	unsigned i;

	for (i = 0; i < x->max; i++) {
		struct xid_entry *t = &x->e[i];

		if (!t->seq) {
			if (!free_slot)
				free_slot = t;
		} else if (t->xid == msg->xid) {
			e = t;
			break;
		} else if (!oldest || t->seq < oldest->seq) {
			oldest = t;
		}
	}
	if (!e) {
		e = free_slot ? free_slot : oldest;
		if (free_slot)
			x->count++;
	}
	e->seq = x->next_seq++;
	e->xid = msg->xid;
	e->prog = msg->prog;
	e->vers = msg->vers;
	e->proc = msg->proc;
}

/* Fills a reply from its call's entry, which it frees. */
static void xids_take(struct nf_xids *x, struct nf_msg *msg)
{
	unsigned i;

	for (i = 0; i < x->max; i++) {
		struct xid_entry *e = &x->e[i];

		if (e->seq && e->xid == msg->xid) {
			msg->prog = e->prog;
			msg->vers = e->vers;
			msg->proc = e->proc;
			msg->matched = true;
			e->seq = 0;
			x->count--;
			return;
		}
	}
}

/* ---- record reassembly ------------------------------------------------- */

struct nf_stream {
	enum nf_dir dir;
	struct nf_xids *xids;
	bool broken; /* a protocol error was seen: nothing more is parsed */

	/* The record so far, as it was on the wire (marks included). */
	uint8_t *wire;
	size_t wire_len, wire_cap;

	/* The mark being read (have < MARK_SIZE) or the fragment's rest. */
	uint8_t mark[MARK_SIZE];
	unsigned mark_have;
	bool in_frag, last_frag;
	uint32_t frag_left;

	/* The record's body so far: its length, its fragments, and its
	 * first HDR_MAX bytes contiguous for the header decoder. */
	uint32_t body_len;
	unsigned frags;
	uint8_t hdr[HDR_MAX];
};

struct nf_stream *nf_stream_new(enum nf_dir dir)
{
	struct nf_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->dir = dir;
	return s;
}

void nf_stream_free(struct nf_stream *s)
{
	if (!s)
		return;
	free(s->wire);
	free(s);
}

void nf_stream_set_xids(struct nf_stream *s, struct nf_xids *x)
{
	s->xids = x;
}

size_t nf_stream_buffered(const struct nf_stream *s)
{
	return s->wire_len + s->mark_have;
}

/* Stops parsing for good; the buffer is given back. */
static int stream_break(struct nf_stream *s, int err)
{
	s->broken = true;
	free(s->wire);
	s->wire = NULL;
	s->wire_len = s->wire_cap = 0;
	s->mark_have = 0;
	return err;
}

/* Makes room for n more bytes; need never exceeds NF_WIRE_MAX. */
static int wire_reserve(struct nf_stream *s, size_t n)
{
	size_t need = s->wire_len + n, cap = s->wire_cap;
	uint8_t *p;

	if (need <= cap)
		return 0;
	if (cap < WIRE_MIN)
		cap = WIRE_MIN;
	while (cap < need)
		cap *= 2;
	if (cap > NF_WIRE_MAX)
		cap = NF_WIRE_MAX;
	p = realloc(s->wire, cap);
	if (!p)
		return -ENOMEM;
	s->wire = p;
	s->wire_cap = cap;
	return 0;
}

static void wire_append(struct nf_stream *s, const uint8_t *p, size_t n)
{
	memcpy(s->wire + s->wire_len, p, n);
	s->wire_len += n;
}

/*
 * A whole mark was read: checks it against the bounds, then keeps it as
 * part of the record.  Returns 0 or -EPROTO, -ENOMEM.
 */
static int mark_done(struct nf_stream *s)
{
	uint32_t m = load32(s->mark);
	uint32_t len = m & MARK_LEN;
	bool last = m & MARK_LAST;
	int rc;

	s->mark_have = 0;
	if (len == 0 && !last)
		return -EPROTO;
	if (len > NF_RECORD_MAX - s->body_len)
		return -EPROTO;
	if (s->frags >= NF_FRAGS_MAX)
		return -EPROTO;
	rc = wire_reserve(s, MARK_SIZE);
	if (rc)
		return rc;
	wire_append(s, s->mark, MARK_SIZE);
	s->frags++;
	s->in_frag = true;
	s->last_frag = last;
	s->frag_left = len;
	return 0;
}

/*
 * Takes up to *np bytes of the current fragment and says in *np how many.
 * The buffer grows with what arrives, not with what a mark announces.
 */
static int frag_take(struct nf_stream *s, const uint8_t *p, size_t *np)
{
	size_t n = *np;
	int rc;

	if (n > s->frag_left)
		n = s->frag_left;
	rc = wire_reserve(s, n);
	if (rc)
		return rc;
	if (s->body_len < HDR_MAX) {
		size_t h = HDR_MAX - s->body_len;

		memcpy(s->hdr + s->body_len, p, h < n ? h : n);
	}
	wire_append(s, p, n);
	s->body_len += (uint32_t)n;
	s->frag_left -= (uint32_t)n;
	*np = n;
	return 0;
}

/* Hands a whole record to fn and makes ready for the next one. */
static int record_done(struct nf_stream *s,
		       int (*fn)(const uint8_t *wire, size_t wire_len,
				 const struct nf_msg *msg, void *arg),
		       void *arg)
{
	struct nf_msg msg;
	size_t hlen = s->body_len < HDR_MAX ? s->body_len : HDR_MAX;
	size_t wire_len = s->wire_len;

	nf_rpc_decode(s->hdr, hlen, s->dir, &msg);
	msg.len = s->body_len;
	msg.frags = s->frags;
	if (msg.rpc && s->xids) {
		if (s->dir == NF_CALL)
			xids_put(s->xids, &msg);
		else
			xids_take(s->xids, &msg);
	}
	/* The record is forgotten before fn sees it, so that the stream
	 * stands at the boundary whatever fn returns; the buffer stays for
	 * the next record and is not written until the next feed. */
	s->in_frag = false;
	s->body_len = 0;
	s->frags = 0;
	s->wire_len = 0;
	return fn(s->wire, wire_len, &msg, arg);
}

int nf_stream_feed(struct nf_stream *s, const void *buf, size_t len,
		   int (*fn)(const uint8_t *wire, size_t wire_len,
			     const struct nf_msg *msg, void *arg),
		   void *arg)
{
	const uint8_t *p = buf;
	int rc;

	if (s->broken)
		return -EPROTO;
	while (len > 0 || (s->in_frag && s->frag_left == 0)) {
		if (s->in_frag && s->frag_left == 0) {
			/* A fragment ended (perhaps an empty last one). */
			s->in_frag = false;
			if (s->last_frag) {
				rc = record_done(s, fn, arg);
				if (rc)
					return rc;
			}
			continue;
		}
		if (s->in_frag) {
			size_t n = len;

			rc = frag_take(s, p, &n);
			if (rc)
				return stream_break(s, rc);
			p += n;
			len -= n;
			continue;
		}
		s->mark[s->mark_have++] = *p++;
		len--;
		if (s->mark_have == MARK_SIZE) {
			rc = mark_done(s);
			if (rc)
				return stream_break(s, rc);
		}
	}
	return 0;
}

/* ---- names ------------------------------------------------------------- */

struct proc_name {
	uint32_t proc;
	const char *name;
};

#define PROC(num, name)   \
	{                 \
		num, name \
	}

/* RFC 1813, section 3 (nfs3.x). */
static const struct proc_name nfs3_procs[] = {
	PROC(NFSPROC3_NULL, "NULL"),
	PROC(NFSPROC3_GETATTR, "GETATTR"),
	PROC(NFSPROC3_SETATTR, "SETATTR"),
	PROC(NFSPROC3_LOOKUP, "LOOKUP"),
	PROC(NFSPROC3_ACCESS, "ACCESS"),
	PROC(NFSPROC3_READLINK, "READLINK"),
	PROC(NFSPROC3_READ, "READ"),
	PROC(NFSPROC3_WRITE, "WRITE"),
	PROC(NFSPROC3_CREATE, "CREATE"),
	PROC(NFSPROC3_MKDIR, "MKDIR"),
	PROC(NFSPROC3_SYMLINK, "SYMLINK"),
	PROC(NFSPROC3_MKNOD, "MKNOD"),
	PROC(NFSPROC3_REMOVE, "REMOVE"),
	PROC(NFSPROC3_RMDIR, "RMDIR"),
	PROC(NFSPROC3_RENAME, "RENAME"),
	PROC(NFSPROC3_LINK, "LINK"),
	PROC(NFSPROC3_READDIR, "READDIR"),
	PROC(NFSPROC3_READDIRPLUS, "READDIRPLUS"),
	PROC(NFSPROC3_FSSTAT, "FSSTAT"),
	PROC(NFSPROC3_FSINFO, "FSINFO"),
	PROC(NFSPROC3_PATHCONF, "PATHCONF"),
	PROC(NFSPROC3_COMMIT, "COMMIT"),
};

/* RFC 1813, section 5.2 (mount3.x); versions 1 and 2 number these alike. */
/* clang-format off */
static const struct proc_name mount3_procs[] = {
	PROC(MOUNTPROC3_NULL, "NULL"),
	PROC(MOUNTPROC3_MNT, "MNT"),
	PROC(MOUNTPROC3_DUMP, "DUMP"),
	PROC(MOUNTPROC3_UMNT, "UMNT"),
	PROC(MOUNTPROC3_UMNTALL, "UMNTALL"),
	PROC(MOUNTPROC3_EXPORT, "EXPORT"),
};
/* clang-format on */

/* Portmap, rpcbind version 2 (RFC 1833, section 3). */
/* clang-format off */
static const struct proc_name pmap_procs[] = {
	PROC(PMAPPROC_NULL, "NULL"),
	PROC(PMAPPROC_SET, "SET"),
	PROC(PMAPPROC_UNSET, "UNSET"),
	PROC(PMAPPROC_GETPORT, "GETPORT"),
	PROC(PMAPPROC_DUMP, "DUMP"),
	PROC(PMAPPROC_CALLIT, "CALLIT"),
};
/* clang-format on */

/*
 * rpcbind versions 3 and 4 (RFC 1833, section 2.2); the last four are
 * version 4's.  NULL is 0 in every RPC program (RFC 5531, section 12).
 */
static const struct proc_name rpcb_procs[] = {
	PROC(PMAPPROC_NULL, "NULL"),
	PROC(RPCBPROC_SET, "SET"),
	PROC(RPCBPROC_UNSET, "UNSET"),
	PROC(RPCBPROC_GETADDR, "GETADDR"),
	PROC(RPCBPROC_DUMP, "DUMP"),
	PROC(RPCBPROC_CALLIT, "CALLIT"),
	PROC(RPCBPROC_GETTIME, "GETTIME"),
	PROC(RPCBPROC_UADDR2TADDR, "UADDR2TADDR"),
	PROC(RPCBPROC_TADDR2UADDR, "TADDR2UADDR"),
	PROC(RPCBPROC_GETVERSADDR, "GETVERSADDR"),
	PROC(RPCBPROC_INDIRECT, "INDIRECT"),
	PROC(RPCBPROC_GETADDRLIST, "GETADDRLIST"),
	PROC(RPCBPROC_GETSTAT, "GETSTAT"),
};

/*
 * The network lock manager has no .x file in the tree: program 100021 and
 * its procedures as rpcsvc's nlm_prot.x (from the X/Open XNFS
 * specification) numbers them, versions 1 to 3, and version 4 alike (RFC
 * 1813, appendix II).
 */
#define NLM_PROGRAM 100021u
#define NLM_VERS_MIN 1u
#define NLM_VERS_MAX 4u
/* clang-format off */
static const struct proc_name nlm_procs[] = {
	PROC(0, "NULL"),
	PROC(1, "TEST"),
	PROC(2, "LOCK"),
	PROC(3, "CANCEL"),
	PROC(4, "UNLOCK"),
	PROC(5, "GRANTED"),
	PROC(6, "TEST_MSG"),
	PROC(7, "LOCK_MSG"),
	PROC(8, "CANCEL_MSG"),
	PROC(9, "UNLOCK_MSG"),
	PROC(10, "GRANTED_MSG"),
	PROC(11, "TEST_RES"),
	PROC(12, "LOCK_RES"),
	PROC(13, "CANCEL_RES"),
	PROC(14, "UNLOCK_RES"),
	PROC(15, "GRANTED_RES"),
	PROC(20, "SHARE"),
	PROC(21, "UNSHARE"),
	PROC(22, "NM_LOCK"),
	PROC(23, "FREE_ALL"),
};
/* clang-format on */

/* One program's procedures for a range of its versions. */
struct prog_names {
	uint32_t prog, vers_min, vers_max;
	const char *name;
	const struct proc_name *procs;
	size_t nprocs;
};

#define TABLE(t) t, sizeof(t) / sizeof((t)[0])

/*
 * Looked up in this order: a procedure name alone finds NFSv3's first,
 * then MOUNT3's.  rpcbind's program is portmap's, under two names.
 */
static const struct prog_names progs[] = {
	{ NFS_PROGRAM, NFS_V3, NFS_V3, "NFS", TABLE(nfs3_procs) },
	{ MOUNT_PROGRAM, 1, MOUNT_V3, "MOUNT", TABLE(mount3_procs) },
	{ PMAPPROG, PMAPVERS, PMAPVERS, "PORTMAP", TABLE(pmap_procs) },
	{ RPCBPROG, RPCBVERS, RPCBVERS4, "RPCBIND", TABLE(rpcb_procs) },
	{ NLM_PROGRAM, NLM_VERS_MIN, NLM_VERS_MAX, "NLM", TABLE(nlm_procs) },
};

/* How many of progs[] a bare procedure name is looked up in. */
#define BARE_PROGS 2

/* The name a program goes by: rpcbind's, not portmap's. */
const char *nf_prog_name(uint32_t prog)
{
	if (prog == RPCBPROG)
		return "RPCBIND";
	for (size_t i = 0; i < ARRAY_SIZE(progs); i++)
		if (progs[i].prog == prog)
			return progs[i].name;
	return NULL;
}

const char *nf_proc_name(uint32_t prog, uint32_t vers, uint32_t proc)
{
	for (size_t i = 0; i < ARRAY_SIZE(progs); i++) {
		const struct prog_names *p = &progs[i];

		if (p->prog != prog || vers < p->vers_min || vers > p->vers_max)
			continue;
		for (size_t j = 0; j < p->nprocs; j++)
			if (p->procs[j].proc == proc)
				return p->procs[j].name;
		return NULL;
	}
	return NULL;
}

int nf_prog_lookup(const char *text, uint32_t *prog)
{
	for (size_t i = 0; i < ARRAY_SIZE(progs); i++)
		if (strcasecmp(progs[i].name, text) == 0) {
			*prog = progs[i].prog;
			return 0;
		}
	return -ENOENT;
}

/* A procedure called pr of the programs progs[from] to progs[to - 1]
 * and, when pname is not NULL, of the one called pname (plen bytes). */
static int proc_find(const char *pname, size_t plen, const char *pr,
		     size_t from, size_t to, uint32_t *prog, uint32_t *proc)
{
	for (size_t i = from; i < to; i++) {
		const struct prog_names *p = &progs[i];

		if (pname && (strlen(p->name) != plen ||
			      strncasecmp(p->name, pname, plen) != 0))
			continue;
		for (size_t j = 0; j < p->nprocs; j++)
			if (strcasecmp(p->procs[j].name, pr) == 0) {
				*prog = p->prog;
				*proc = p->procs[j].proc;
				return 0;
			}
	}
	return -ENOENT;
}

int nf_proc_lookup(const char *text, uint32_t *prog, uint32_t *proc)
{
	const char *dot = strchr(text, '.');

	if (!dot)
		return proc_find(NULL, 0, text, 0, BARE_PROGS, prog, proc);
	return proc_find(text, (size_t)(dot - text), dot + 1, 0,
			 ARRAY_SIZE(progs), prog, proc);
}
