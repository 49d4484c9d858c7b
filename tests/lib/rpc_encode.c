/*
 * ONC RPC reply records (rpc_encode.h), encoded with libtirpc's own
 * xdr_replymsg as a real server encodes them.  Never allocates: the caller
 * gives the buffer.
 */
#include "rpc_encode.h"

#include <arpa/inet.h>
#include <string.h>

/* The reply header around the results: xid to verifier, about 24 bytes. */
#define REPLY_HEADER_MAX 64

uint32_t rpc_mark(uint32_t len, bool last)
{
	return htonl((last ? RPC_LAST_FRAG : 0) | len);
}

uint32_t rpc_mark_len(uint32_t mark)
{
	return ntohl(mark) & ~RPC_LAST_FRAG;
}

size_t rpc_reply_max(xdrproc_t proc, void *res, unsigned frags)
{
	return REPLY_HEADER_MAX + (res ? xdr_sizeof(proc, res) : 0) +
	       4 * (frags ? frags : 1);
}

size_t rpc_encode_reply(unsigned char *buf, size_t cap, uint32_t xid,
			xdrproc_t proc, void *res, unsigned frags)
{
	size_t len, done = 0, out = 0, room;
	struct rpc_msg m;
	XDR x;

	if (frags == 0)
		frags = 1;
	if (cap < 4 * frags)
		return 0;
	memset(&m, 0, sizeof(m));
	m.rm_xid = xid;
	m.rm_direction = REPLY;
	m.rm_reply.rp_stat = MSG_ACCEPTED;
	m.acpted_rply.ar_verf = _null_auth;
	m.acpted_rply.ar_stat = SUCCESS;
	m.acpted_rply.ar_results.where = res;
	m.acpted_rply.ar_results.proc = proc;
	/*
	 * Encoded once, after room for every mark; the fragments are then
	 * moved down into place behind their marks.
	 */
	room = cap - 4 * frags;
	xdrmem_create(&x, (char *)buf + 4 * frags, (u_int)room, XDR_ENCODE);
	if (!xdr_replymsg(&x, &m))
		return 0;
	len = xdr_getpos(&x);
	for (unsigned f = 0; f < frags; f++) {
		bool last = f + 1 == frags;
		size_t part = last ? len - done : len / frags;
		uint32_t mark = rpc_mark((uint32_t)part, last);

		memmove(buf + out + 4, buf + 4 * frags + done, part);
		memcpy(buf + out, &mark, 4);
		out += 4 + part;
		done += part;
	}
	return out;
}
