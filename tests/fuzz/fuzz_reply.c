/*
 * libFuzzer target for the reply path: the bytes are a TCP stream from the
 * server.  They go through the receiver's record parser (nc__rx_parse():
 * marks, fragments, the size cap, XID lookup) in chunks whose sizes the
 * input also chooses, and every record handed to a waiting call is decoded
 * as one of the NFSv3 results by nc__decode_reply(), as the transport does,
 * then freed.  The READDIRPLUS reply is decoded a second time by the
 * in-place decoder the client lists with (nfs3.c), and every name and
 * handle it hands out is read.  The receive path (xprt_recv.c) and nfs3.c
 * are compiled into this target with the fuzzer's instrumentation; no
 * socket is involved.  Built with
 * clang only (meson -Dfuzz=true); tests/run gives it a short run.
 */
#include "xprt_i.h"

#include "nfs3_i.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CALLS 4
#define READDIRPLUS_RESULT NC__XDRPROC(xdr_READDIRPLUS3res)

static const xdrproc_t results[CALLS] = {
	NC__XDRPROC(xdr_GETATTR3res),
	NC__XDRPROC(xdr_LOOKUP3res),
	NC__XDRPROC(xdr_READ3res),
	READDIRPLUS_RESULT,
};

union anyres {
	GETATTR3res getattr;
	LOOKUP3res lookup;
	READ3res read;
	READDIRPLUS3res readdirplus;
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The same READDIRPLUS reply through the in-place decoder: what it hands
 * out must lie inside the record (ASan sees a read past it).
 */
static void inplace_readdirplus(struct nc__xprt *x, struct nc__call *call)
{
	struct nc__rdp_res rdp;
	struct nc__rpc r = *call->rpc;
	struct nc__rpc *was = call->rpc;
	size_t sum = 0;

	memset(&rdp, 0, sizeof(rdp));
	r.xres = NC__XDRPROC(nc__xdr_readdirplus_inplace);
	r.resp = &rdp;
	call->rpc = &r;
	if (nc__decode_reply(x, call) == 0) {
		for (unsigned i = 0; i < rdp.n; i++) {
			const struct nc__rdp_entry *e = &rdp.e[i];

			if (e->fh_len > NFS3_FHSIZE)
				abort();
			sum += strlen(e->name);
			for (u_int k = 0; k < e->fh_len; k++)
				sum += e->fh[k];
		}
		xdr_free(r.xres, (char *)&rdp);
	}
	/* Used, so that the reads above stay. */
	if (sum == SIZE_MAX)
		abort();
	call->rpc = was;
}

/*
 * One transport for every input, never connected: its receiver thread
 * waits for a connection that never comes, and the input is fed to the
 * parser here instead.
 */
static struct nc__xprt *fuzz_xprt(void)
{
	static struct nc__xstats stats;
	static struct nc__xprt *x;
	struct nc__xprt_cfg cfg;

	if (x)
		return x;
	memset(&cfg, 0, sizeof(cfg));
	cfg.server = "fuzz";
	cfg.timeout = nc__timeout_of(NC_HARD, 600, 2);
	cfg.wait_mode = TASK_KILLABLE;
	cfg.slots = CALLS;
	cfg.stats = &stats;
	if (nc__xprt_create(&cfg, &x))
		abort();
	return x;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nc__xprt *x = fuzz_xprt();
	struct nc__waiter waiter;
	struct nc__call calls[CALLS];
	struct nc__rpc rpcs[CALLS];
	union anyres res[CALLS];
	struct nc__rx rx = { 0 };
	size_t off = 0;

	memset(&waiter, 0, sizeof(waiter));
	region_task_cond_init(&waiter.cond);
	memset(calls, 0, sizeof(calls));
	memset(res, 0, sizeof(res));
	region_task_mutex_lock_nofail(&x->lock);
	for (unsigned i = 0; i < CALLS; i++) {
		rpcs[i] = (struct nc__rpc){ 0 };
		rpcs[i].xres = results[i];
		rpcs[i].resp = &res[i];
		calls[i].rpc = &rpcs[i];
		calls[i].xid = i + 1;
		calls[i].waiter = &waiter;
		calls[i].state = NC__CALL_SENT;
		nc__xid_insert(x, &calls[i]);
	}
	region_task_mutex_unlock(&x->lock);

	/* Chunk sizes come from the input, so splits land anywhere. */
	while (off < size) {
		size_t n = 1 + data[off] % 97;

		off++;
		if (n > size - off)
			n = size - off;
		if (nc__rx_parse(x, &rx, data + off, n) < 0)
			break;
		off += n;
	}

	for (unsigned i = 0; i < CALLS; i++) {
		if (calls[i].reply && nc__decode_reply(x, &calls[i]) == 0)
			xdr_free(results[i], (char *)&res[i]);
		if (calls[i].reply && results[i] == READDIRPLUS_RESULT)
			inplace_readdirplus(x, &calls[i]);
		free(calls[i].reply);
	}
	/* The calls still waiting leave the table (a no-op for the rest). */
	region_task_mutex_lock_nofail(&x->lock);
	for (unsigned i = 0; i < CALLS; i++)
		nc__call_finish(x, &calls[i], -ECANCELED);
	region_task_mutex_unlock(&x->lock);
	region_task_cond_destroy(&waiter.cond);
	nc__rx_reset(&rx);
	return 0;
}
