/*
 * ONC RPC replies as a server sends them over TCP, for the code that plays
 * a server: the fake server of the unit tests (unit/fake_rpc.c) and the
 * fuzzer's seed corpus (fuzz/fuzz_reply_seeds.c).  A record is one or more
 * fragments, each behind a 4-byte mark (RFC 5531, section 11): its length,
 * with the top bit set on the last fragment.  Only accepted, successful
 * replies with the null verifier are made: what a test needs beyond that
 * (junk, a lying mark) it writes with rpc_mark() itself.
 */
#ifndef INTRFS_TEST_RPC_ENCODE_H
#define INTRFS_TEST_RPC_ENCODE_H

#include <rpc/rpc.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The top bit of a record mark: this fragment ends the record. */
#define RPC_LAST_FRAG 0x80000000u

/* A record mark for a fragment of len bytes, in network byte order. */
uint32_t rpc_mark(uint32_t len, bool last);
/* The fragment length a mark (network byte order) announces. */
uint32_t rpc_mark_len(uint32_t mark);
/*
 * The most bytes rpc_encode_reply() writes for these results in frags
 * fragments (res NULL: no results).
 */
size_t rpc_reply_max(xdrproc_t proc, void *res, unsigned frags);
/*
 * Writes the reply to xid carrying res (encoded by proc; NULL and
 * xdr_void for none) into buf, as a record of frags fragments of about
 * equal size.  Returns the bytes written, or 0 if the reply does not fit in
 * cap or does not encode.
 */
size_t rpc_encode_reply(unsigned char *buf, size_t cap, uint32_t xid,
			xdrproc_t proc, void *res, unsigned frags);

#endif
