/*
 * Tests of netfault's RPC parser (netfault/rpc.c): record reassembly from
 * any split of the stream and any fragmenting of the record, the bounds
 * that make a stream a protocol error, call and reply headers decoded or
 * refused (a table), replies matched to their calls by XID, the XID
 * table's bound, and the procedure names both ways.  Calls are built here
 * word by word; replies come from rpc_encode.h, as a server sends them.
 */
#include "test.h"

#include "netfault_i.h"
#include "rpc_encode.h"

#include <rpc/rpc.h>

#define NFS_PROG 100003u
#define NFS_VERS 3u
#define NFS_WRITE 7u
#define MOUNT_PROG 100005u

/* ---- building records ---------------------------------------------------- */

static size_t put32(uint8_t *b, size_t off, uint32_t v)
{
	b[off] = v >> 24;
	b[off + 1] = v >> 16;
	b[off + 2] = v >> 8;
	b[off + 3] = v;
	return off + 4;
}

/* An opaque_auth of flavor AUTH_SYS (or none) with len bytes of 0xab. */
static size_t put_auth(uint8_t *b, size_t off, uint32_t len)
{
	off = put32(b, off, len ? AUTH_SYS : AUTH_NONE);
	off = put32(b, off, len);
	memset(b + off, 0xab, len);
	return off + ((len + 3) & ~3u);
}

/*
 * A call's body: its header (with cred_len and verf_len bytes of auth),
 * then args bytes of arguments.  Returns the body's length and, in *hdr,
 * the header's.
 */
static size_t call_body(uint8_t *b, uint32_t xid, uint32_t prog, uint32_t proc,
			uint32_t cred_len, uint32_t verf_len, size_t args,
			size_t *hdr)
{
	size_t off = 0;

	off = put32(b, off, xid);
	off = put32(b, off, CALL);
	off = put32(b, off, RPC_MSG_VERSION);
	off = put32(b, off, prog);
	off = put32(b, off, NFS_VERS);
	off = put32(b, off, proc);
	off = put_auth(b, off, cred_len);
	off = put_auth(b, off, verf_len);
	if (hdr)
		*hdr = off;
	for (size_t i = 0; i < args; i++)
		b[off + i] = (uint8_t)i;
	return off + args;
}

/*
 * Frames len bytes of body as frags fragments of about equal size (the
 * last takes the rest) into out; returns the wire length.
 */
static size_t frame(uint8_t *out, const uint8_t *body, size_t len,
		    unsigned frags)
{
	size_t off = 0, done = 0, each = len / frags;

	for (unsigned i = 0; i < frags; i++) {
		bool last = i == frags - 1;
		size_t n = last ? len - done : each;

		off = put32(out, off, (uint32_t)n | (last ? RPC_LAST_FRAG : 0));
		memcpy(out + off, body + done, n);
		off += n;
		done += n;
	}
	return off;
}

/* ---- collecting what a stream hands out ---------------------------------- */

#define SEEN_MAX 8

struct seen {
	unsigned n;
	struct nf_msg msg[SEEN_MAX];
	uint8_t wire[SEEN_MAX][2048];
	size_t wire_len[SEEN_MAX];
	int stop_with; /* returned by the callback */
};

static int collect(const uint8_t *wire, size_t wire_len,
		   const struct nf_msg *msg, void *arg)
{
	struct seen *s = arg;

	ASSERT_LT(s->n, SEEN_MAX);
	ASSERT_UINT64_EQ(wire_len, 4u * msg->frags + msg->len);
	if (wire_len <= sizeof(s->wire[0]))
		memcpy(s->wire[s->n], wire, wire_len);
	s->wire_len[s->n] = wire_len;
	s->msg[s->n++] = *msg;
	return s->stop_with;
}

static int ignore(const uint8_t *wire, size_t wire_len,
		  const struct nf_msg *msg, void *arg)
{
	(void)wire;
	(void)wire_len;
	(void)msg;
	(*(unsigned *)arg)++;
	return 0;
}

/* ---- reassembly ------------------------------------------------------------ */

/* A call fed in two pieces split at every byte gives the same record. */
TEST_IMPL(nf_call_every_split)
{
	uint8_t body[512], wire[600];
	size_t hdr, len = call_body(body, 0x1234, NFS_PROG, NFS_WRITE, 20, 0,
				    100, &hdr);
	size_t wlen = frame(wire, body, len, 1);

	for (size_t cut = 0; cut <= wlen; cut++) {
		struct nf_stream *s = nf_stream_new(NF_CALL);
		struct seen seen = { 0 };

		ASSERT_NOT_NULL(s);
		ASSERT_EQ(nf_stream_feed(s, wire, cut, collect, &seen), 0);
		ASSERT_EQ(seen.n, cut == wlen);
		ASSERT_UINT64_EQ(nf_stream_buffered(s), cut == wlen ? 0 : cut);
		ASSERT_EQ(nf_stream_feed(s, wire + cut, wlen - cut, collect,
					 &seen),
			  0);
		ASSERT_EQ(seen.n, 1);
		ASSERT_UINT64_EQ(seen.wire_len[0], wlen);
		ASSERT_MEM_EQ(seen.wire[0], wire, wlen);
		ASSERT(seen.msg[0].rpc);
		ASSERT_EQ(seen.msg[0].dir, NF_CALL);
		ASSERT_UINT64_EQ(seen.msg[0].xid, 0x1234);
		ASSERT_UINT64_EQ(seen.msg[0].prog, NFS_PROG);
		ASSERT_UINT64_EQ(seen.msg[0].vers, NFS_VERS);
		ASSERT_UINT64_EQ(seen.msg[0].proc, NFS_WRITE);
		ASSERT_UINT64_EQ(seen.msg[0].len, len);
		ASSERT_UINT64_EQ(seen.msg[0].hdr_len, hdr);
		ASSERT_EQ(seen.msg[0].frags, 1);
		ASSERT_UINT64_EQ(nf_stream_buffered(s), 0);
		nf_stream_free(s);
	}

	/* And one byte at a time. */
	struct nf_stream *s = nf_stream_new(NF_CALL);
	struct seen seen = { 0 };

	for (size_t i = 0; i < wlen; i++)
		ASSERT_EQ(nf_stream_feed(s, wire + i, 1, collect, &seen), 0);
	ASSERT_EQ(seen.n, 1);
	ASSERT_MEM_EQ(seen.wire[0], wire, wlen);
	ASSERT_UINT64_EQ(seen.msg[0].hdr_len, hdr);
	nf_stream_free(s);
	return 0;
}

/* A record in several fragments, the header split across them too. */
TEST_IMPL(nf_multi_fragment)
{
	static const unsigned frag_counts[] = { 1, 2, 3, 7, 40 };
	uint8_t body[512], wire[1024];
	size_t hdr, len = call_body(body, 77, MOUNT_PROG, 1, 0, 0, 60, &hdr);

	for (size_t i = 0; i < ARRAY_SIZE(frag_counts); i++) {
		unsigned frags = frag_counts[i];
		size_t wlen = frame(wire, body, len, frags);
		struct nf_stream *s = nf_stream_new(NF_CALL);
		struct seen seen = { 0 };

		ASSERT_EQ(nf_stream_feed(s, wire, wlen, collect, &seen), 0);
		ASSERT_EQ(seen.n, 1);
		ASSERT_EQ(seen.msg[0].frags, frags);
		ASSERT_UINT64_EQ(seen.msg[0].len, len);
		ASSERT_UINT64_EQ(seen.wire_len[0], wlen);
		ASSERT_MEM_EQ(seen.wire[0], wire, wlen);
		ASSERT(seen.msg[0].rpc);
		ASSERT_UINT64_EQ(seen.msg[0].xid, 77);
		ASSERT_UINT64_EQ(seen.msg[0].prog, MOUNT_PROG);
		ASSERT_UINT64_EQ(seen.msg[0].hdr_len, hdr);
		nf_stream_free(s);
	}
	return 0;
}

/* Two records in one feed come out in order; a zero-length last fragment
 * ends a record. */
TEST_IMPL(nf_two_records_one_feed)
{
	uint8_t body[256], wire[1024];
	size_t len1 = call_body(body, 1, NFS_PROG, 1, 0, 0, 8, NULL);
	size_t off = frame(wire, body, len1, 1);
	size_t len2 = call_body(body, 2, NFS_PROG, 3, 8, 0, 0, NULL);
	struct nf_stream *s = nf_stream_new(NF_CALL);
	struct seen seen = { 0 };

	/* The second: its body in one fragment, then an empty last one. */
	off = put32(wire, off, (uint32_t)len2);
	memcpy(wire + off, body, len2);
	off += len2;
	off = put32(wire, off, RPC_LAST_FRAG);

	ASSERT_EQ(nf_stream_feed(s, wire, off, collect, &seen), 0);
	ASSERT_EQ(seen.n, 2);
	ASSERT_UINT64_EQ(seen.msg[0].xid, 1);
	ASSERT_UINT64_EQ(seen.msg[0].proc, 1);
	ASSERT_UINT64_EQ(seen.msg[0].len, len1);
	ASSERT_UINT64_EQ(seen.msg[1].xid, 2);
	ASSERT_UINT64_EQ(seen.msg[1].proc, 3);
	ASSERT_EQ(seen.msg[1].frags, 2);
	ASSERT_UINT64_EQ(seen.msg[1].len, len2);
	ASSERT_UINT64_EQ(seen.wire_len[0] + seen.wire_len[1], off);
	nf_stream_free(s);
	return 0;
}

/* The callback's non-zero return stops the feed at that record. */
TEST_IMPL(nf_callback_stops_feed)
{
	uint8_t body[256], wire[1024];
	size_t len = call_body(body, 5, NFS_PROG, 1, 0, 0, 0, NULL);
	size_t one = frame(wire, body, len, 1);
	struct nf_stream *s = nf_stream_new(NF_CALL);
	struct seen seen = { .stop_with = 7 };

	memcpy(wire + one, wire, one);
	ASSERT_EQ(nf_stream_feed(s, wire, 2 * one, collect, &seen), 7);
	ASSERT_EQ(seen.n, 1);
	ASSERT_UINT64_EQ(nf_stream_buffered(s), 0);
	/* The stream stands at the boundary: the rest can be fed again. */
	seen.stop_with = 0;
	ASSERT_EQ(nf_stream_feed(s, wire + one, one, collect, &seen), 0);
	ASSERT_EQ(seen.n, 2);
	nf_stream_free(s);
	return 0;
}

/*
 * Marks a stream refuses, and the largest record it takes.  Each fragment
 * is fed as its mark, then as many bytes as the mark says.
 */
TEST_IMPL(nf_bad_marks)
{
	static const struct {
		const char *what;
		unsigned n;
		uint32_t marks[2];
		int rc;
	} cases[] = {
		{ "oversized",
		  1,
		  { RPC_LAST_FRAG | (NF_RECORD_MAX + 1) },
		  -EPROTO },
		{ "largest mark, not last", 1, { 0x7fffffff }, -EPROTO },
		{ "two fragments summing over",
		  2,
		  { NF_RECORD_MAX, RPC_LAST_FRAG | 1 },
		  -EPROTO },
		{ "empty and not last", 2, { 8, 0 }, -EPROTO },
		{ "exactly the max", 1, { RPC_LAST_FRAG | NF_RECORD_MAX }, 0 },
		{ "the max in two",
		  2,
		  { NF_RECORD_MAX - 1, RPC_LAST_FRAG | 1 },
		  0 },
	};
	uint8_t *zeros = calloc(1, NF_RECORD_MAX);

	ASSERT_NOT_NULL(zeros);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct nf_stream *s = nf_stream_new(NF_CALL);
		unsigned records = 0;
		int rc = 0;

		fprintf(stderr, "# %s\n", cases[i].what);
		for (unsigned m = 0; m < cases[i].n && !rc; m++) {
			uint32_t mark = cases[i].marks[m];
			uint8_t b[4];

			put32(b, 0, mark);
			rc = nf_stream_feed(s, b, 4, ignore, &records);
			if (!rc)
				rc = nf_stream_feed(s, zeros,
						    mark & ~RPC_LAST_FRAG,
						    ignore, &records);
			ASSERT_UINT64_LE(nf_stream_buffered(s), NF_WIRE_MAX);
		}
		ASSERT_EQ(rc, cases[i].rc);
		ASSERT_EQ(records, cases[i].rc ? 0 : 1);
		if (rc) {
			/* Broken for good, and its buffer given back. */
			ASSERT_EQ(nf_stream_feed(s, zeros, 4, ignore, &records),
				  -EPROTO);
			ASSERT_UINT64_EQ(nf_stream_buffered(s), 0);
		}
		nf_stream_free(s);
	}
	free(zeros);

	/* More than NF_FRAGS_MAX fragments of one byte each. */
	struct nf_stream *s = nf_stream_new(NF_REPLY);
	unsigned records = 0;
	int rc = 0;

	for (unsigned f = 0; f <= NF_FRAGS_MAX && !rc; f++) {
		uint8_t b[5];

		put32(b, 0, 1);
		b[4] = 0;
		rc = nf_stream_feed(s, b, 5, ignore, &records);
		ASSERT_UINT64_LE(nf_stream_buffered(s), 5u * NF_FRAGS_MAX);
	}
	ASSERT_EQ(rc, -EPROTO);
	ASSERT_EQ(records, 0);
	nf_stream_free(s);
	return 0;
}

/* ---- header decoding ------------------------------------------------------- */

enum shape {
	GOOD_CALL,
	CRED_400,
	CRED_401,
	VERF_401,
	RPCVERS_3,
	REPLY_IN_CALL_DIR,
	ACCEPTED,
	ACCEPTED_VERF_401,
	ACCEPTED_PROG_MISMATCH,
	ACCEPTED_BAD_STAT,
	DENIED_RPC_MISMATCH,
	DENIED_AUTH_ERROR,
	DENIED_BAD_STAT,
	BAD_REPLY_STAT,
	CALL_IN_REPLY_DIR,
};

/* The body of each shape; returns its length. */
static size_t shape_body(enum shape sh, uint8_t *b)
{
	size_t off = 0;

	switch (sh) {
	case GOOD_CALL:
		return call_body(b, 9, NFS_PROG, NFS_WRITE, 24, 8, 16, NULL);
	case CRED_400:
		return call_body(b, 9, NFS_PROG, NFS_WRITE, 400, 0, 0, NULL);
	case CRED_401:
		return call_body(b, 9, NFS_PROG, NFS_WRITE, 401, 0, 0, NULL);
	case VERF_401:
		return call_body(b, 9, NFS_PROG, NFS_WRITE, 0, 401, 0, NULL);
	case RPCVERS_3:
		call_body(b, 9, NFS_PROG, NFS_WRITE, 0, 0, 0, NULL);
		put32(b, 8, 3);
		return 40;
	case CALL_IN_REPLY_DIR:
		return call_body(b, 9, NFS_PROG, NFS_WRITE, 0, 0, 0, NULL);
	default:
		break;
	}
	off = put32(b, off, 9);
	off = put32(b, off, REPLY);
	switch (sh) {
	case ACCEPTED:
	case REPLY_IN_CALL_DIR:
	case ACCEPTED_VERF_401:
	case ACCEPTED_PROG_MISMATCH:
	case ACCEPTED_BAD_STAT:
		off = put32(b, off, MSG_ACCEPTED);
		off = put_auth(b, off, sh == ACCEPTED_VERF_401 ? 401 : 4);
		if (sh == ACCEPTED_PROG_MISMATCH) {
			off = put32(b, off, PROG_MISMATCH);
			off = put32(b, off, 2);
			off = put32(b, off, 3);
		} else {
			off = put32(b, off,
				    sh == ACCEPTED_BAD_STAT ? 6 : SUCCESS);
		}
		break;
	case DENIED_RPC_MISMATCH:
		off = put32(b, off, MSG_DENIED);
		off = put32(b, off, RPC_MISMATCH);
		off = put32(b, off, 2);
		off = put32(b, off, 2);
		break;
	case DENIED_AUTH_ERROR:
		off = put32(b, off, MSG_DENIED);
		off = put32(b, off, AUTH_ERROR);
		off = put32(b, off, AUTH_BADCRED);
		break;
	case DENIED_BAD_STAT:
		off = put32(b, off, MSG_DENIED);
		off = put32(b, off, 2);
		off = put32(b, off, 0);
		off = put32(b, off, 0);
		break;
	case BAD_REPLY_STAT:
		off = put32(b, off, 2);
		off = put32(b, off, 0);
		break;
	default:
		abort();
	}
	/* Some results after the header. */
	off = put32(b, off, 0);
	return off;
}

/*
 * Each shape decodes (or not) with its header's length; every prefix of a
 * good header is refused, and trailing bytes never change the header.
 */
TEST_IMPL(nf_decode_table)
{
	static const struct {
		enum shape sh;
		enum nf_dir dir;
		bool rpc;
		uint32_t hdr_len, reply_stat, accept_stat;
	} cases[] = {
		{ GOOD_CALL, NF_CALL, true, 24 + 8 + 24 + 8 + 8, 0, 0 },
		{ CRED_400, NF_CALL, true, 24 + 8 + 400 + 8, 0, 0 },
		{ CRED_401, NF_CALL, false, 0, 0, 0 },
		{ VERF_401, NF_CALL, false, 0, 0, 0 },
		{ RPCVERS_3, NF_CALL, false, 0, 0, 0 },
		{ REPLY_IN_CALL_DIR, NF_CALL, false, 0, 0, 0 },
		{ ACCEPTED, NF_REPLY, true, 12 + 8 + 4 + 4, MSG_ACCEPTED,
		  SUCCESS },
		{ ACCEPTED_VERF_401, NF_REPLY, false, 0, 0, 0 },
		{ ACCEPTED_PROG_MISMATCH, NF_REPLY, true, 12 + 8 + 4 + 4 + 8,
		  MSG_ACCEPTED, PROG_MISMATCH },
		{ ACCEPTED_BAD_STAT, NF_REPLY, false, 0, 0, 0 },
		{ DENIED_RPC_MISMATCH, NF_REPLY, true, 12 + 4 + 8, MSG_DENIED,
		  0 },
		{ DENIED_AUTH_ERROR, NF_REPLY, true, 12 + 4 + 4, MSG_DENIED,
		  0 },
		{ DENIED_BAD_STAT, NF_REPLY, false, 0, 0, 0 },
		{ BAD_REPLY_STAT, NF_REPLY, false, 0, 0, 0 },
		{ CALL_IN_REPLY_DIR, NF_REPLY, false, 0, 0, 0 },
	};
	static uint8_t body[2048];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		size_t len = shape_body(cases[i].sh, body);
		struct nf_msg msg;

		fprintf(stderr, "# case %zu\n", i);
		ASSERT_EQ(nf_rpc_decode(body, len, cases[i].dir, &msg),
			  cases[i].rpc);
		ASSERT_EQ(msg.rpc, cases[i].rpc);
		ASSERT_EQ(msg.dir, cases[i].dir);
		ASSERT_UINT64_EQ(msg.len, len);
		ASSERT_UINT64_EQ(msg.hdr_len, cases[i].hdr_len);
		ASSERT_UINT64_LE(msg.hdr_len, len);
		if (!cases[i].rpc) {
			ASSERT_UINT64_EQ(msg.xid, 0);
			ASSERT_UINT64_EQ(msg.prog, 0);
			continue;
		}
		ASSERT_UINT64_EQ(msg.xid, 9);
		ASSERT_UINT64_EQ(msg.reply_stat, cases[i].reply_stat);
		ASSERT_UINT64_EQ(msg.accept_stat, cases[i].accept_stat);
		ASSERT(!msg.matched);
		if (cases[i].dir == NF_CALL) {
			ASSERT_UINT64_EQ(msg.prog, NFS_PROG);
			ASSERT_UINT64_EQ(msg.vers, NFS_VERS);
			ASSERT_UINT64_EQ(msg.proc, NFS_WRITE);
		}
		/* Truncated anywhere inside the header: not RPC. */
		for (size_t cut = 0; cut < cases[i].hdr_len; cut++) {
			ASSERT(!nf_rpc_decode(body, cut, cases[i].dir, &msg));
			ASSERT_UINT64_EQ(msg.hdr_len, 0);
		}
		ASSERT(nf_rpc_decode(body, cases[i].hdr_len, cases[i].dir,
				     &msg));
		ASSERT_UINT64_EQ(msg.hdr_len, cases[i].hdr_len);
	}
	return 0;
}

/* ---- matching replies to calls ------------------------------------------- */

static size_t reply_wire(uint8_t *wire, size_t cap, uint32_t xid,
			 unsigned frags)
{
	size_t n = rpc_encode_reply(wire, cap, xid,
				    (xdrproc_t)(void (*)(void))xdr_void, NULL,
				    frags);

	ASSERT_UINT64_GT(n, 0);
	return n;
}

static size_t call_wire(uint8_t *wire, uint32_t xid, uint32_t prog,
			uint32_t proc)
{
	uint8_t body[512];
	size_t len = call_body(body, xid, prog, proc, 16, 0, 12, NULL);

	return frame(wire, body, len, 1);
}

/*
 * A connection: two streams on one XID table.  Feeds a call then its reply
 * (from libtirpc's encoder) and checks what the reply learnt.
 */
TEST_IMPL(nf_reply_matched)
{
	struct nf_xids *x = nf_xids_new(16);
	struct nf_stream *c = nf_stream_new(NF_CALL);
	struct nf_stream *r = nf_stream_new(NF_REPLY);
	struct seen calls = { 0 }, replies = { 0 };
	uint8_t wire[1024];
	size_t n;

	ASSERT_NOT_NULL(x);
	nf_stream_set_xids(c, x);
	nf_stream_set_xids(r, x);

	n = call_wire(wire, 0xfeed, NFS_PROG, NFS_WRITE);
	ASSERT_EQ(nf_stream_feed(c, wire, n, collect, &calls), 0);
	ASSERT_EQ(nf_xids_count(x), 1);
	n = reply_wire(wire, sizeof(wire), 0xfeed, 2);
	ASSERT_EQ(nf_stream_feed(r, wire, n, collect, &replies), 0);
	ASSERT_EQ(replies.n, 1);
	ASSERT(replies.msg[0].rpc);
	ASSERT(replies.msg[0].matched);
	ASSERT_EQ(replies.msg[0].dir, NF_REPLY);
	ASSERT_UINT64_EQ(replies.msg[0].xid, 0xfeed);
	ASSERT_UINT64_EQ(replies.msg[0].prog, NFS_PROG);
	ASSERT_UINT64_EQ(replies.msg[0].vers, NFS_VERS);
	ASSERT_UINT64_EQ(replies.msg[0].proc, NFS_WRITE);
	ASSERT_UINT64_EQ(replies.msg[0].reply_stat, MSG_ACCEPTED);
	ASSERT_UINT64_EQ(replies.msg[0].accept_stat, SUCCESS);
	ASSERT_UINT64_EQ(replies.msg[0].hdr_len, 24);
	ASSERT_EQ(replies.msg[0].frags, 2);
	ASSERT_EQ(nf_xids_count(x), 0);

	/* The call was forgotten: the same reply again (a duplicate) is
	 * not matched. */
	ASSERT_EQ(nf_stream_feed(r, wire, n, collect, &replies), 0);
	ASSERT_EQ(replies.n, 2);
	ASSERT(replies.msg[1].rpc);
	ASSERT(!replies.msg[1].matched);
	ASSERT_UINT64_EQ(replies.msg[1].prog, 0);

	nf_stream_free(c);
	nf_stream_free(r);
	nf_xids_free(x);
	return 0;
}

/* A reply to an XID never called, and a stream without a table. */
TEST_IMPL(nf_reply_unknown_xid)
{
	struct nf_xids *x = nf_xids_new(4);
	struct nf_stream *c = nf_stream_new(NF_CALL);
	struct nf_stream *r = nf_stream_new(NF_REPLY);
	struct nf_stream *lone = nf_stream_new(NF_REPLY);
	struct seen calls = { 0 }, replies = { 0 };
	uint8_t wire[1024];
	size_t n;

	nf_stream_set_xids(c, x);
	nf_stream_set_xids(r, x);
	n = call_wire(wire, 100, NFS_PROG, NFS_WRITE);
	ASSERT_EQ(nf_stream_feed(c, wire, n, collect, &calls), 0);

	n = reply_wire(wire, sizeof(wire), 101, 1);
	ASSERT_EQ(nf_stream_feed(r, wire, n, collect, &replies), 0);
	ASSERT_EQ(replies.n, 1);
	ASSERT(replies.msg[0].rpc);
	ASSERT(!replies.msg[0].matched);
	ASSERT_UINT64_EQ(replies.msg[0].xid, 101);
	ASSERT_UINT64_EQ(replies.msg[0].prog, 0);
	ASSERT_UINT64_EQ(replies.msg[0].proc, 0);
	ASSERT_EQ(nf_xids_count(x), 1);

	n = reply_wire(wire, sizeof(wire), 100, 1);
	ASSERT_EQ(nf_stream_feed(lone, wire, n, collect, &replies), 0);
	ASSERT_EQ(replies.n, 2);
	ASSERT(!replies.msg[1].matched);
	ASSERT_EQ(nf_xids_count(x), 1);

	nf_stream_free(c);
	nf_stream_free(r);
	nf_stream_free(lone);
	nf_xids_free(x);
	return 0;
}

/*
 * The table holds max unanswered calls: one more evicts the oldest; an
 * answered call frees its slot (nothing is evicted then); a retransmitted
 * call takes no second slot.
 */
TEST_IMPL(nf_xids_eviction)
{
	enum { MAX = 4 };
	struct nf_xids *x = nf_xids_new(MAX);
	struct nf_stream *c = nf_stream_new(NF_CALL);
	struct nf_stream *r = nf_stream_new(NF_REPLY);
	struct seen calls = { 0 }, replies;
	uint8_t wire[1024];
	size_t n;

	errno = 0;
	ASSERT_NULL(nf_xids_new(0));
	ASSERT_EQ(errno, EINVAL);
	nf_stream_set_xids(c, x);
	nf_stream_set_xids(r, x);

	/* Calls 1..MAX+1 (proc = xid): call 1 is evicted. */
	for (uint32_t xid = 1; xid <= MAX + 1; xid++) {
		n = call_wire(wire, xid, NFS_PROG, xid);
		calls.n = 0;
		ASSERT_EQ(nf_stream_feed(c, wire, n, collect, &calls), 0);
		ASSERT_UINT64_LE(nf_xids_count(x), MAX);
	}
	ASSERT_EQ(nf_xids_count(x), MAX);
	/* Call 3 again, a retransmission: still MAX, and 2 still there. */
	n = call_wire(wire, 3, NFS_PROG, 3);
	calls.n = 0;
	ASSERT_EQ(nf_stream_feed(c, wire, n, collect, &calls), 0);
	ASSERT_EQ(nf_xids_count(x), MAX);

	static const struct {
		uint32_t xid;
		bool matched;
	} answers[] = {
		{ 1, false }, { 2, true }, { 3, true },
		{ 4, true },  { 5, true }, { 3, false },
	};
	for (size_t i = 0; i < ARRAY_SIZE(answers); i++) {
		memset(&replies, 0, sizeof(replies));
		n = reply_wire(wire, sizeof(wire), answers[i].xid, 1);
		ASSERT_EQ(nf_stream_feed(r, wire, n, collect, &replies), 0);
		ASSERT_EQ(replies.n, 1);
		ASSERT_EQ(replies.msg[0].matched, answers[i].matched);
		if (answers[i].matched)
			ASSERT_UINT64_EQ(replies.msg[0].proc, answers[i].xid);
	}
	ASSERT_EQ(nf_xids_count(x), 0);

	/* Two answered, so two free slots: MAX calls evict nothing. */
	for (uint32_t xid = 10; xid < 10 + MAX; xid++) {
		n = call_wire(wire, xid, NFS_PROG, xid);
		calls.n = 0;
		ASSERT_EQ(nf_stream_feed(c, wire, n, collect, &calls), 0);
		n = reply_wire(wire, sizeof(wire), xid, 1);
		if (xid < 12) {
			memset(&replies, 0, sizeof(replies));
			ASSERT_EQ(nf_stream_feed(r, wire, n, collect, &replies),
				  0);
			ASSERT(replies.msg[0].matched);
		}
	}
	ASSERT_EQ(nf_xids_count(x), 2);
	for (uint32_t xid = 20; xid < 20 + MAX - 2; xid++) {
		n = call_wire(wire, xid, NFS_PROG, xid);
		calls.n = 0;
		ASSERT_EQ(nf_stream_feed(c, wire, n, collect, &calls), 0);
	}
	ASSERT_EQ(nf_xids_count(x), MAX);
	memset(&replies, 0, sizeof(replies));
	n = reply_wire(wire, sizeof(wire), 12, 1);
	ASSERT_EQ(nf_stream_feed(r, wire, n, collect, &replies), 0);
	ASSERT(replies.msg[0].matched);

	nf_stream_free(c);
	nf_stream_free(r);
	nf_xids_free(x);
	return 0;
}

/* ---- names ----------------------------------------------------------------- */

TEST_IMPL(nf_names)
{
	static const struct {
		const char *text; /* looked up */
		uint32_t prog, vers, proc;
		const char *name; /* nf_proc_name's answer */
	} known[] = {
		{ "NULL", NFS_PROG, 3, 0, "NULL" },
		{ "getattr", NFS_PROG, 3, 1, "GETATTR" },
		{ "Write", NFS_PROG, 3, 7, "WRITE" },
		{ "REMOVE", NFS_PROG, 3, 12, "REMOVE" },
		{ "readdirplus", NFS_PROG, 3, 17, "READDIRPLUS" },
		{ "COMMIT", NFS_PROG, 3, 21, "COMMIT" },
		{ "MNT", MOUNT_PROG, 3, 1, "MNT" },
		{ "umntall", MOUNT_PROG, 3, 4, "UMNTALL" },
		{ "EXPORT", MOUNT_PROG, 3, 5, "EXPORT" },
		{ "nfs.write", NFS_PROG, 3, 7, "WRITE" },
		{ "MOUNT.NULL", MOUNT_PROG, 3, 0, "NULL" },
		{ "mount.dump", MOUNT_PROG, 1, 2, "DUMP" },
		{ "PORTMAP.GETPORT", 100000, 2, 3, "GETPORT" },
		{ "rpcbind.getaddr", 100000, 3, 3, "GETADDR" },
		{ "RPCBIND.GETSTAT", 100000, 4, 12, "GETSTAT" },
		{ "NLM.LOCK", 100021, 4, 2, "LOCK" },
		{ "nlm.free_all", 100021, 3, 23, "FREE_ALL" },
	};
	static const char *const unknown[] = {
		"",	   "WRIT", "WRITEX", "LOCK",	   "GETPORT",
		"NFS.MNT", "NFS.", ".WRITE", "NOPE.WRITE", "NFS.WRITE.X",
	};
	static const struct {
		uint32_t prog, vers, proc;
	} unnamed[] = {
		{ NFS_PROG, 3, 22 },  { NFS_PROG, 2, 1 }, { NFS_PROG, 4, 1 },
		{ MOUNT_PROG, 3, 6 }, { 100000, 2, 6 },	  { 100021, 4, 16 },
		{ 100021, 5, 1 },     { 100099, 1, 0 },
	};
	uint32_t prog, proc;

	for (size_t i = 0; i < ARRAY_SIZE(known); i++) {
		prog = proc = 0xdead;
		ASSERT_EQ(nf_proc_lookup(known[i].text, &prog, &proc), 0);
		ASSERT_UINT64_EQ(prog, known[i].prog);
		ASSERT_UINT64_EQ(proc, known[i].proc);
		ASSERT_STR_EQ(nf_proc_name(known[i].prog, known[i].vers,
					   known[i].proc),
			      known[i].name);
	}
	for (size_t i = 0; i < ARRAY_SIZE(unknown); i++) {
		fprintf(stderr, "# \"%s\"\n", unknown[i]);
		ASSERT_EQ(nf_proc_lookup(unknown[i], &prog, &proc), -ENOENT);
	}
	for (size_t i = 0; i < ARRAY_SIZE(unnamed); i++)
		ASSERT_NULL(nf_proc_name(unnamed[i].prog, unnamed[i].vers,
					 unnamed[i].proc));

	ASSERT_STR_EQ(nf_prog_name(NFS_PROG), "NFS");
	ASSERT_STR_EQ(nf_prog_name(MOUNT_PROG), "MOUNT");
	ASSERT_STR_EQ(nf_prog_name(100000), "RPCBIND");
	ASSERT_STR_EQ(nf_prog_name(100021), "NLM");
	ASSERT_NULL(nf_prog_name(100099));
	ASSERT_EQ(nf_prog_lookup("nlm", &prog), 0);
	ASSERT_UINT64_EQ(prog, 100021);
	ASSERT_EQ(nf_prog_lookup("Portmap", &prog), 0);
	ASSERT_UINT64_EQ(prog, 100000);
	ASSERT_EQ(nf_prog_lookup("nfs3", &prog), -ENOENT);
	return 0;
}
