/*
 * libFuzzer target for netfault's RPC parser (netfault/rpc.c): the input is
 * the bytes of both directions of one connection, interleaved.  Each step
 * takes a control byte (which stream, and how many bytes: 1 to 64, or a
 * large piece so that big records are reached quickly) and feeds that
 * many of the following bytes to a call stream or a reply stream sharing
 * one XID table.  Every record handed out is checked: its wire length is
 * its marks plus its body, its header fits in its body, and its marks,
 * walked again, add up to it; its body, stripped of marks, decodes to the
 * same header, and a reply cut as short-read cuts a READ reply stays
 * within its body.  Between feeds a stream never holds more than NF_WIRE_MAX
 * bytes, and a stream that reported -EPROTO stays broken.  The whole input
 * is also decoded as one body in each direction.  Built with clang only
 * (meson -Dfuzz=true); tests/run gives it a short run.
 */
#include "netfault_i.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define XIDS_MAX 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                 \
	do {                     \
		if (!(x))        \
			abort(); \
	} while (0)

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* A record's body without its marks, to decode again. */
static uint8_t body[NF_RECORD_MAX];

static int check_record(const uint8_t *wire, size_t wire_len,
			const struct nf_msg *msg, void *arg)
{
	size_t off = 0, blen = 0;
	unsigned frags = 0;
	bool last = false;
	struct nf_msg again;
	enum nf_dir *dir = arg;

	CHECK(msg->dir == *dir);
	CHECK(msg->frags >= 1 && msg->frags <= NF_FRAGS_MAX);
	CHECK(msg->len <= NF_RECORD_MAX);
	CHECK(wire_len == 4u * msg->frags + msg->len);
	CHECK(msg->hdr_len <= msg->len);
	CHECK(msg->rpc || (msg->hdr_len == 0 && !msg->matched));
	CHECK(!msg->matched || msg->dir == NF_REPLY);

	while (!last) {
		uint32_t m, n;

		CHECK(wire_len - off >= 4);
		m = be32(wire + off);
		n = m & 0x7fffffffu;
		last = m >> 31;
		off += 4;
		CHECK(n > 0 || last);
		CHECK(wire_len - off >= n);
		memcpy(body + blen, wire + off, n);
		blen += n;
		off += n;
		frags++;
	}
	CHECK(off == wire_len);
	CHECK(frags == msg->frags);
	CHECK(blen == msg->len);

	CHECK(nf_rpc_decode(body, blen, msg->dir, &again) == msg->rpc);
	CHECK(again.xid == msg->xid && again.hdr_len == msg->hdr_len);
	CHECK(again.len == msg->len);
	if (msg->dir == NF_CALL)
		CHECK(again.prog == msg->prog && again.vers == msg->vers &&
		      again.proc == msg->proc);
	else
		CHECK(again.reply_stat == msg->reply_stat &&
		      again.accept_stat == msg->accept_stat);
	/* Any reply, taken for an NFSv3 READ's: short-read's cut stays
	 * inside it, and a cut reply decodes to the same header. */
	if (msg->dir == NF_REPLY && msg->rpc) {
		struct nf_msg r = *msg;
		size_t n;

		r.matched = true;
		r.prog = 100003;
		r.vers = 3;
		r.proc = 6;
		n = nf_read_reply_cut(body, blen, &r, msg->xid & 0xfff);
		CHECK(n <= blen && n >= msg->hdr_len);
		CHECK(nf_rpc_decode(body, n, NF_REPLY, &again));
		CHECK(again.xid == msg->xid && again.hdr_len == msg->hdr_len);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nf_xids *x = nf_xids_new(XIDS_MAX);
	struct nf_stream *s[2];
	enum nf_dir dirs[2] = { NF_CALL, NF_REPLY };
	bool broken[2] = { false, false };
	struct nf_msg msg;
	size_t off = 0;

	CHECK(x);
	for (int i = 0; i < 2; i++) {
		s[i] = nf_stream_new(dirs[i]);
		CHECK(s[i]);
		nf_stream_set_xids(s[i], x);
	}

	while (off < size) {
		uint8_t ctl = data[off++];
		int which = ctl & 1;
		size_t n = (ctl >> 1) & 0x3f;
		int rc;

		/* The top bit asks for a large piece: up to 64 KiB. */
		n = (ctl & 0x80) ? (n + 1) * 1024 : n + 1;
		if (n > size - off)
			n = size - off;
		rc = nf_stream_feed(s[which], data + off, n, check_record,
				    &dirs[which]);
		off += n;
		CHECK(rc == 0 || rc == -EPROTO);
		CHECK(!broken[which] || rc == -EPROTO);
		if (rc == -EPROTO) {
			broken[which] = true;
			CHECK(nf_stream_buffered(s[which]) == 0);
		}
		CHECK(nf_stream_buffered(s[which]) <= NF_WIRE_MAX);
		CHECK(nf_xids_count(x) <= XIDS_MAX);
	}

	for (int i = 0; i < 2; i++) {
		if (nf_rpc_decode(data, size, dirs[i], &msg))
			CHECK(msg.hdr_len <= size && msg.rpc);
		else
			CHECK(msg.hdr_len == 0 && !msg.rpc);
		nf_stream_free(s[i]);
	}
	nf_xids_free(x);
	return 0;
}
