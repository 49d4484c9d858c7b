/*
 * What nfs3.c shares beyond the NFS calls: a decoder that needs nfs3.x's
 * types, for the fuzzer (tests/fuzz/fuzz_reply.c) to reach.
 */
#ifndef INTRFS_NFS3_I_H
#define INTRFS_NFS3_I_H

#include "nfs3.h"

#include <stdbool.h>
#include <stdint.h>

/*
 * nfs3.c: READDIRPLUS3res decoded in place, in nfs3.x's wire format: each
 * entry's numbers and attributes in the array e[0..n), its name (ended
 * with a NUL written into the record) and its handle pointing into the
 * reply record, which must be kept while they are used (keep_reply).
 * XDR_FREE frees the array.
 */
struct nc__rdp_entry {
	uint64_t fileid, cookie;
	char *name;
	const unsigned char *fh;
	u_int fh_len;
	bool has_fh;
	post_op_attr attr;
};

struct nc__rdp_res {
	nfsstat3 status;
	post_op_attr dir_attr;
	cookieverf3 verf;
	struct nc__rdp_entry *e;
	unsigned n, cap;
	bool_t eof;
};

bool_t nc__xdr_readdirplus_inplace(XDR *xdrs, struct nc__rdp_res *r);

#endif /* INTRFS_NFS3_I_H */
