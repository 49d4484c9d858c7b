/*
 * An in-process ONC RPC server on loopback, for what a real server cannot be
 * made to do on cue: drop a reply, stop reading, answer garbage or an
 * oversized record, answer a stray XID, hold a reply.  It serves one test
 * program (FAKE_PROG, version 1): NULL, ECHO (opaque in, the same out) and
 * SINK (opaque in, nothing out), and records every call it reads.
 */
#ifndef INTRFS_FAKE_RPC_H
#define INTRFS_FAKE_RPC_H

#include <rpc/rpc.h>
#include <stdbool.h>
#include <stdint.h>

#define FAKE_PROG 0x2000f00du
#define FAKE_VERS 1u
#define FAKE_NULL 0u
#define FAKE_ECHO 1u
#define FAKE_SINK 2u

/* Behaviours; each counter applies to that many next calls. */
enum fake_knob {
	FAKE_DROP, /* read the call, never answer */
	FAKE_GARBAGE, /* answer a well-framed record of junk */
	FAKE_OVERSIZE, /* answer a record mark of 100 MB, then nothing */
	FAKE_STRAY_XID, /* answer a reply with another XID first */
	FAKE_STALL, /* 1: stop reading the sockets; 0: read again */
	FAKE_DELAY_MS, /* answer every call this late */
	FAKE_SPLIT_MS, /* send each reply's first half now, the rest this late */
};

struct fake_seen {
	uint32_t xid, proc;
	unsigned conn; /* 1 for the first connection accepted, ... */
	uint16_t peer_port; /* the client's source port on that connection */
	uint32_t len; /* argument bytes (ECHO, SINK) */
};

/* ECHO's and SINK's argument (and ECHO's result): XDR opaque<>. */
struct fake_blob {
	char *val;
	u_int len;
};

bool_t fake_xdr_blob(XDR *xdrs, void *blob);

struct fake_rpc;

/* Listens on 127.0.0.1 (port 0: any); NULL on failure. */
struct fake_rpc *fake_rpc_start(uint16_t port);
uint16_t fake_rpc_port(const struct fake_rpc *f);
void fake_rpc_stop(struct fake_rpc *f);
void fake_rpc_set(struct fake_rpc *f, enum fake_knob k, long value);
/* Copies up to max calls seen, oldest first; returns how many were seen. */
unsigned fake_rpc_seen(struct fake_rpc *f, struct fake_seen *out, unsigned max);
unsigned fake_rpc_conns(struct fake_rpc *f);
/* Waits until at least n calls were seen (with a 5 s deadline). */
bool fake_rpc_wait_seen(struct fake_rpc *f, unsigned n);
/* Bytes of call records read so far (to see a partial record arrive). */
uint64_t fake_rpc_bytes(struct fake_rpc *f);

#endif
