/*
 * libFuzzer target for the reply path: the bytes are a TCP stream from the
 * server.  They go through the receiver's record parser (marks, fragments,
 * the size cap, XID lookup) in chunks whose sizes the input also chooses,
 * and every record handed to a waiting call is decoded as one of the NFSv3
 * results, as the transport does, then freed.  Built with clang only
 * (meson -Dfuzz=true); tests/run gives it a short run.
 */
#include "../../netclient/xprt.c"

#include "nfs3.h"

#define CALLS 4

static const xdrproc_t results[CALLS] = {
	NC_XDRPROC(xdr_GETATTR3res),
	NC_XDRPROC(xdr_LOOKUP3res),
	NC_XDRPROC(xdr_READ3res),
	NC_XDRPROC(xdr_READDIRPLUS3res),
};

union anyres {
	GETATTR3res getattr;
	LOOKUP3res lookup;
	READ3res read;
	READDIRPLUS3res readdirplus;
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nc_xstats stats;
	static struct nc_xprt *x;
	struct nc_waiter waiter;
	struct nc_call calls[CALLS];
	struct nc_rpc rpcs[CALLS];
	union anyres res[CALLS];
	struct rx *rx;
	size_t off = 0;

	if (!x) {
		x = calloc(1, sizeof(*x));
		x->stats = &stats;
		x->slots = CALLS;
		task_mutex_init(&x->lock);
		snprintf(x->server, sizeof(x->server), "fuzz");
	}
	rx = calloc(1, sizeof(*rx));
	memset(&waiter, 0, sizeof(waiter));
	task_cond_init(&waiter.cond);
	memset(calls, 0, sizeof(calls));
	memset(res, 0, sizeof(res));
	task_mutex_lock_nofail(&x->lock);
	for (unsigned i = 0; i < CALLS; i++) {
		rpcs[i] = (struct nc_rpc){ 0 };
		rpcs[i].xres = results[i];
		rpcs[i].resp = &res[i];
		calls[i].rpc = &rpcs[i];
		calls[i].xid = i + 1;
		calls[i].waiter = &waiter;
		calls[i].state = CALL_SENT;
		table_insert(x, &calls[i]);
	}
	task_mutex_unlock(&x->lock);

	/* Chunk sizes come from the input, so splits land anywhere. */
	while (off < size) {
		size_t room = sizeof(rx->staging) - rx->have;
		size_t n = 1 + data[off] % 97;

		off++;
		if (n > size - off)
			n = size - off;
		if (n > room)
			n = room;
		memcpy(rx->staging + rx->have, data + off, n);
		rx->have += n;
		off += n;
		if (rx_parse(x, rx) < 0)
			break;
	}

	for (unsigned i = 0; i < CALLS; i++) {
		if (calls[i].reply && decode_reply(x, &calls[i]) == 0)
			xdr_free(results[i], (char *)&res[i]);
		free(calls[i].reply);
	}
	task_mutex_lock_nofail(&x->lock);
	for (unsigned i = 0; i < CALLS; i++)
		table_remove(x, &calls[i]);
	task_mutex_unlock(&x->lock);
	task_cond_destroy(&waiter.cond);
	rx_reset(rx);
	free(rx);
	return 0;
}
