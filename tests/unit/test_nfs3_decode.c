/*
 * netclient's in-place READDIRPLUS decoder (nfs3.c) against rpcgen's
 * encoder of the same nfs3.x types: every field of every entry, names
 * whose terminating NUL lands in XDR padding or on the next field, and
 * replies cut short or malformed at each place, which must fail without
 * reading past the record (the asan suite runs this too).
 */
#include "test.h"

#include "nfs3_i.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#define NENT 6

static const char *const names[NENT] = {
	"a", "abcd", "", "five5", "a name of sixteen", "\xc3\xa9t\xc3\xa9",
};

/* Entry i's handle length: none (no handle), 1, 8, 64, ... */
static const int fh_lens[NENT] = { -1, 1, 8, NFS3_FHSIZE, 0, 3 };

struct reply {
	char buf[8192];
	u_int len;
};

static void fill_fattr(fattr3 *a, unsigned i)
{
	memset(a, 0, sizeof(*a));
	a->type = i % 2 ? NF3DIR : NF3REG;
	a->mode = 0640 + i;
	a->nlink = 1 + i;
	a->uid = 1000 + i;
	a->gid = 2000 + i;
	a->size = 4096ull * i + 7;
	a->fileid = 0x100000000ull + i;
	a->mtime.seconds = 1700000000u + i;
}

/* rpcgen's encoding of a READDIRPLUS3res with the entries above. */
static void encode(struct reply *r)
{
	READDIRPLUS3res res;
	entryplus3 ents[NENT];
	char fhs[NENT][NFS3_FHSIZE];
	XDR x;

	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	READDIRPLUS3resok *ok = &res.READDIRPLUS3res_u.resok;

	ok->dir_attributes.attributes_follow = TRUE;
	fill_fattr(&ok->dir_attributes.post_op_attr_u.attributes, 9);
	memcpy(ok->cookieverf, "verifier", NFS3_COOKIEVERFSIZE);
	for (unsigned i = 0; i < NENT; i++) {
		entryplus3 *e = &ents[i];

		memset(e, 0, sizeof(*e));
		e->fileid = 0xf00000000ull + i;
		e->name = (char *)names[i];
		/* High bytes set: a NUL written on one would show. */
		e->cookie = 0xff00000000000000ull | (i + 1);
		e->name_attributes.attributes_follow = i != 2;
		if (i != 2)
			fill_fattr(
				&e->name_attributes.post_op_attr_u.attributes,
				i);
		if (fh_lens[i] >= 0) {
			e->name_handle.handle_follows = TRUE;
			memset(fhs[i], 'A' + (int)i, sizeof(fhs[i]));
			e->name_handle.post_op_fh3_u.handle.data.data_len =
				(u_int)fh_lens[i];
			e->name_handle.post_op_fh3_u.handle.data.data_val =
				fhs[i];
		}
		e->nextentry = i + 1 < NENT ? &ents[i + 1] : NULL;
	}
	ok->reply.entries = &ents[0];
	ok->reply.eof = TRUE;
	xdrmem_create(&x, r->buf, sizeof(r->buf), XDR_ENCODE);
	ASSERT(xdr_READDIRPLUS3res(&x, &res));
	r->len = xdr_getpos(&x);
	xdr_destroy(&x);
}

/* Decodes len bytes of a copy of r (the decoder writes into it). */
static bool_t decode(const struct reply *r, u_int len, char **copy,
		     struct nc__rdp_res *out)
{
	XDR x;
	bool_t ok;

	*copy = malloc(len ? len : 1);
	ASSERT(*copy != NULL);
	memcpy(*copy, r->buf, len);
	memset(out, 0, sizeof(*out));
	xdrmem_create(&x, *copy, len, XDR_DECODE);
	ok = nc__xdr_readdirplus_inplace(&x, out);
	xdr_destroy(&x);
	return ok;
}

static void release(char *copy, struct nc__rdp_res *res)
{
	XDR x;

	xdrmem_create(&x, NULL, 0, XDR_FREE);
	ASSERT(nc__xdr_readdirplus_inplace(&x, res));
	ASSERT(res->e == NULL);
	free(copy);
}

/* The offset of entry i's name length in an encoding of the entries. */
static u_int name_len_at(unsigned want)
{
	/* status, post_op_attr (bool + fattr3: 84), cookieverf */
	u_int at = 4 + 4 + 84 + 8;

	for (unsigned i = 0; i <= want; i++) {
		u_int len = (u_int)strlen(names[i]);

		at += 4 + 8; /* value follows, fileid */
		if (i == want)
			return at;
		at += 4 + ((len + 3) & ~3u) + 8; /* name, cookie */
		at += 4 + (i != 2 ? 84 : 0); /* attributes */
		at += 4; /* handle follows */
		if (fh_lens[i] >= 0)
			at += 4 + (((u_int)fh_lens[i] + 3) & ~3u);
	}
	return 0;
}

static void put32(struct reply *r, u_int at, uint32_t v)
{
	v = htonl(v);
	memcpy(r->buf + at, &v, 4);
}

TEST_IMPL(nfs3_readdirplus_inplace)
{
	struct reply r, bad;
	struct nc__rdp_res res;
	char *copy;

	encode(&r);
	ASSERT(decode(&r, r.len, &copy, &res));
	ASSERT_EQ(res.status, NFS3_OK);
	ASSERT(res.eof);
	ASSERT_MEM_EQ(res.verf, "verifier", NFS3_COOKIEVERFSIZE);
	ASSERT(res.dir_attr.attributes_follow);
	ASSERT_EQ(res.n, NENT);
	for (unsigned i = 0; i < NENT; i++) {
		const struct nc__rdp_entry *e = &res.e[i];

		ASSERT_STR_EQ(e->name, names[i]);
		ASSERT_UINT64_EQ(e->fileid, 0xf00000000ull + i);
		ASSERT_UINT64_EQ(e->cookie, 0xff00000000000000ull | (i + 1));
		ASSERT_EQ(e->attr.attributes_follow, i != 2);
		if (i != 2) {
			const fattr3 *a = &e->attr.post_op_attr_u.attributes;

			ASSERT_EQ(a->mode, 0640 + i);
			ASSERT_UINT64_EQ(a->size, 4096ull * i + 7);
			ASSERT_UINT64_EQ(a->fileid, 0x100000000ull + i);
		}
		ASSERT_EQ(e->has_fh, fh_lens[i] >= 0);
		if (fh_lens[i] >= 0) {
			ASSERT_EQ(e->fh_len, (u_int)fh_lens[i]);
			for (u_int k = 0; k < e->fh_len; k++)
				ASSERT_EQ(e->fh[k], 'A' + (int)i);
		}
	}
	release(copy, &res);

	/* Cut short anywhere: a failure, never a read past the end. */
	for (u_int len = 0; len < r.len; len++) {
		ASSERT(!decode(&r, len, &copy, &res));
		release(copy, &res);
	}

	/* A name with a NUL in it. */
	bad = r;
	bad.buf[name_len_at(1) + 4 + 2] = '\0';
	ASSERT(!decode(&bad, bad.len, &copy, &res));
	release(copy, &res);

	/* A name longer than the record, and one that wraps the offset. */
	bad = r;
	put32(&bad, name_len_at(3), 100000);
	ASSERT(!decode(&bad, bad.len, &copy, &res));
	release(copy, &res);
	bad = r;
	put32(&bad, name_len_at(3), 0xfffffffdu);
	ASSERT(!decode(&bad, bad.len, &copy, &res));
	release(copy, &res);

	/* A handle longer than NFS3_FHSIZE. */
	bad = r;
	{
		/* Entry 1: name "abcd", cookie, attributes, follows, length. */
		u_int at = name_len_at(1) + 4 + 4 + 8 + 4 + 84 + 4;

		ASSERT_EQ(ntohl(*(uint32_t *)(void *)(bad.buf + at)), 1);
		put32(&bad, at, NFS3_FHSIZE + 1);
	}
	ASSERT(!decode(&bad, bad.len, &copy, &res));
	release(copy, &res);

	/* A failed READDIRPLUS: the status and the directory's attributes. */
	{
		READDIRPLUS3res fail;
		XDR x;

		memset(&fail, 0, sizeof(fail));
		fail.status = NFS3ERR_STALE;
		xdrmem_create(&x, bad.buf, sizeof(bad.buf), XDR_ENCODE);
		ASSERT(xdr_READDIRPLUS3res(&x, &fail));
		bad.len = xdr_getpos(&x);
		xdr_destroy(&x);
		ASSERT(decode(&bad, bad.len, &copy, &res));
		ASSERT_EQ(res.status, NFS3ERR_STALE);
		ASSERT_EQ(res.n, 0);
		release(copy, &res);
	}
	return 0;
}
