/*
 * Writes seed inputs for fuzz_reply into a directory: well-formed reply
 * streams for the calls it waits on (XIDs 1 to 4: GETATTR, LOOKUP, READ,
 * READDIRPLUS), one split into fragments, one with a stray XID, one with an
 * NFS error, so that the fuzzer starts from the shapes a server really
 * sends.  The records are encoded by rpc_encode.h, as the unit tests' fake
 * server encodes its own.  Writes nothing but the files in DIR.
 */
#include "nfs3.h"
#include "rpc_encode.h"

#include <rpc/rpc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XDRPROC(f) ((xdrproc_t)(void (*)(void))(f))

static unsigned char out[1 << 16];
static size_t out_len;

/* Appends one reply record to out, in frags fragments. */
static void add_reply(uint32_t xid, xdrproc_t proc, void *res, unsigned frags)
{
	size_t n = rpc_encode_reply(out + out_len, sizeof(out) - out_len, xid,
				    proc, res, frags);

	if (n == 0) {
		fprintf(stderr, "fuzz_reply_seeds: reply %u does not fit\n",
			(unsigned)xid);
		exit(1);
	}
	out_len += n;
}

static void save(const char *dir, const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(out, 1, out_len, f) != out_len || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
	out_len = 0;
}

static fattr3 sample_attr(void)
{
	fattr3 a;

	memset(&a, 0, sizeof(a));
	a.type = NF3REG;
	a.mode = 0644;
	a.nlink = 1;
	a.size = 100;
	a.fileid = 42;
	return a;
}

int main(int argc, char **argv)
{
	static char handle[] = "0123456789abcdef";
	static char data[100];
	GETATTR3res ga;
	LOOKUP3res lk;
	READ3res rd;
	READDIRPLUS3res rdp;
	entryplus3 e2, e1;

	if (argc != 2) {
		fprintf(stderr, "usage: fuzz_reply_seeds DIR\n");
		return 2;
	}
	memset(&ga, 0, sizeof(ga));
	ga.status = NFS3_OK;
	ga.GETATTR3res_u.resok.obj_attributes = sample_attr();

	memset(&lk, 0, sizeof(lk));
	lk.status = NFS3_OK;
	lk.LOOKUP3res_u.resok.object.data.data_len = sizeof(handle) - 1;
	lk.LOOKUP3res_u.resok.object.data.data_val = handle;

	memset(&rd, 0, sizeof(rd));
	rd.status = NFS3_OK;
	rd.READ3res_u.resok.count = sizeof(data);
	rd.READ3res_u.resok.eof = 1;
	rd.READ3res_u.resok.data.data_len = sizeof(data);
	rd.READ3res_u.resok.data.data_val = data;

	memset(&e1, 0, sizeof(e1));
	memset(&e2, 0, sizeof(e2));
	e1.fileid = 1;
	e1.name = (char *)"a";
	e1.cookie = 1;
	e1.nextentry = &e2;
	e2.fileid = 2;
	e2.name = (char *)"bb";
	e2.cookie = 2;
	e2.name_attributes.attributes_follow = 1;
	e2.name_attributes.post_op_attr_u.attributes = sample_attr();
	memset(&rdp, 0, sizeof(rdp));
	rdp.status = NFS3_OK;
	rdp.READDIRPLUS3res_u.resok.reply.entries = &e1;
	rdp.READDIRPLUS3res_u.resok.reply.eof = 1;

	add_reply(1, XDRPROC(xdr_GETATTR3res), &ga, 1);
	add_reply(2, XDRPROC(xdr_LOOKUP3res), &lk, 1);
	add_reply(3, XDRPROC(xdr_READ3res), &rd, 1);
	add_reply(4, XDRPROC(xdr_READDIRPLUS3res), &rdp, 1);
	save(argv[1], "all-four");
	add_reply(3, XDRPROC(xdr_READ3res), &rd, 3);
	save(argv[1], "fragments");
	add_reply(99, XDRPROC(xdr_GETATTR3res), &ga, 1);
	add_reply(1, XDRPROC(xdr_GETATTR3res), &ga, 1);
	save(argv[1], "stray-xid");
	ga.status = NFS3ERR_STALE;
	add_reply(1, XDRPROC(xdr_GETATTR3res), &ga, 1);
	save(argv[1], "error-status");
	return 0;
}
