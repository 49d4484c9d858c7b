/*
 * Private to netfault, the RPC-aware fault proxy: the interfaces between its
 * files.
 *
 *   rpc.c    ONC RPC on a TCP stream (RFC 5531): record marking reassembled
 *            incrementally with bounded memory, call and reply headers
 *            decoded, replies matched to calls by XID, procedure names for
 *            NFSv3, MOUNT3, rpcbind and NLM.  Pure: no I/O, no clock, no
 *            libuv, no global state.
 *   rule.c   the rule language: a rule's text to struct nf_rule (with the
 *            position of a mistake), whether a message matches a rule now
 *            (target, Nth, count, probability with a seed, time window,
 *            schedule), and a rule back to text.  Pure but for the state
 *            each rule keeps (its counters, its random stream).
 *   ruleset.c the rules in force (ids, add, remove) and the bounded log of
 *            faults applied.  Pure.
 *   proxy.c  the proxy on libuv's loop: listeners, connection pairs, the
 *            faults applied to records and streams.
 *   control.c the control socket on the same loop; ctl.c: netfault-ctl,
 *            its client.  main.c: netfault's command line.
 *
 * Everything runs on the one libuv loop thread: nothing here locks.  No
 * file above rpc.c ever reads a byte of a record that rpc.c did not bound.
 */
#ifndef NETFAULT_I_H
#define NETFAULT_I_H

#include "intrfs/util.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- rpc.c ------------------------------------------------------------ */

/* Which way a record travels through the proxy. */
enum nf_dir {
	NF_CALL, /* client to server */
	NF_REPLY, /* server to client */
};

/* The largest record reassembled (a 1 MiB WRITE or READ and its header). */
#define NF_RECORD_MAX ((1u << 20) + 4096u)
/*
 * The most fragments one record may come in.  Clients fragment at their
 * send buffer's size (libtirpc: 64 KiB; Linux: never), so a legitimate
 * record of NF_RECORD_MAX needs a few dozen; the cap bounds the marks kept.
 */
#define NF_FRAGS_MAX 1024u
/* The most bytes a stream ever holds: one record and its marks. */
#define NF_WIRE_MAX (NF_RECORD_MAX + 4u * NF_FRAGS_MAX)

/* What the header of one record says; unknown fields are 0. */
struct nf_msg {
	enum nf_dir dir;
	bool rpc; /* the header decoded as an RPC call or reply */
	uint32_t xid;
	/* Calls: from the header; replies: from the call of the same XID. */
	uint32_t prog, vers, proc;
	bool matched; /* a reply whose call was seen */
	uint32_t len; /* the record's length, marks excluded */
	uint32_t hdr_len; /* bytes of RPC header before the procedure's body */
	unsigned frags; /* fragments the record came in */
	/* Replies: MSG_ACCEPTED or MSG_DENIED, and the accept_stat of an
	 * accepted one (SUCCESS, PROG_UNAVAIL...); meaningful when rpc. */
	uint32_t reply_stat, accept_stat;
};

/*
 * One direction of one connection: bytes in, whole records out.  A record
 * longer than NF_RECORD_MAX, one of more than NF_FRAGS_MAX fragments, or a
 * mark that says 0 bytes and not last, is a protocol error:
 * nf_stream_feed() returns -EPROTO, then and on every later feed, and the
 * caller stops parsing that stream (it may still pass its bytes on
 * unparsed).
 */
struct nf_stream;

/* NULL (errno ENOMEM) when out of memory. */
struct nf_stream *nf_stream_new(enum nf_dir dir);
void nf_stream_free(struct nf_stream *s);

/*
 * Feeds len bytes.  For each record completed, calls fn with the record's
 * bytes as they were on the wire (marks included: wire, wire_len), its
 * header (msg) and arg; wire and msg are valid during the call only.  fn's
 * non-zero return stops the feed and is returned: the stream then stands
 * at the boundary after that record, and the rest of buf was not parsed.
 * Bytes of an incomplete record are kept (at most NF_WIRE_MAX: the record
 * and its marks).  Returns 0, fn's return, -EPROTO, or -ENOMEM when the
 * record's buffer cannot grow (the stream is then broken as for -EPROTO).
 */
int nf_stream_feed(struct nf_stream *s, const void *buf, size_t len,
		   int (*fn)(const uint8_t *wire, size_t wire_len,
			     const struct nf_msg *msg, void *arg),
		   void *arg);
/* Bytes of the incomplete record held now (marks included). */
size_t nf_stream_buffered(const struct nf_stream *s);

/*
 * Calls seen and not yet answered, shared by both directions of a
 * connection: a call's (prog, vers, proc) noted by XID, looked up and
 * forgotten by its reply.  Bounded: when max calls are unanswered, the
 * oldest goes first.  A call sent again with the same XID (a
 * retransmission) takes no second entry.  Lookups scan the table: keep
 * max in the hundreds or low thousands.
 */
struct nf_xids;
/* NULL (errno EINVAL: max is 0; ENOMEM) on failure. */
struct nf_xids *nf_xids_new(unsigned max);
void nf_xids_free(struct nf_xids *x);
/* Unanswered calls noted now (at most max). */
unsigned nf_xids_count(const struct nf_xids *x);
/*
 * Connects the two streams of a connection to one XID table (NULL: none;
 * replies are then never matched).  The table must outlive the streams.
 */
void nf_stream_set_xids(struct nf_stream *s, struct nf_xids *x);

/*
 * Decodes the header of one record's body (marks removed) into msg;
 * false when it is not an RPC call or reply of direction dir (msg then
 * holds dir and len only).  Sets msg's dir, rpc, xid, len (to len),
 * hdr_len; prog, vers and proc for a call; reply_stat and accept_stat for
 * a reply (whose prog, vers, proc and matched are left 0).  Used by
 * nf_stream_feed and by the fuzzer.
 */
bool nf_rpc_decode(const uint8_t *body, size_t len, enum nf_dir dir,
		   struct nf_msg *msg);

/*
 * Cuts the data of an NFSv3 READ reply (body: the record, marks removed,
 * len bytes; msg: its header, from a call seen) to at most keep bytes, in
 * place: count and the data's length say keep, eof says false (the file
 * goes on past what the reply now carries), and the padding is zeros.
 * Returns the record's new length: len, unchanged, when it is not a
 * successful NFSv3 READ reply, or carries no more than keep bytes, or does
 * not decode.
 */
size_t nf_read_reply_cut(uint8_t *body, size_t len, const struct nf_msg *msg,
			 uint32_t keep);

/* Program and procedure names: "NFS", "WRITE"; NULL when unknown. */
const char *nf_prog_name(uint32_t prog);
const char *nf_proc_name(uint32_t prog, uint32_t vers, uint32_t proc);
/* A program by name ("NFS", "MOUNT", "RPCBIND" or "PORTMAP", "NLM"),
 * case-insensitive: 0 and *prog set, or -ENOENT. */
int nf_prog_lookup(const char *name, uint32_t *prog);
/* By name, case-insensitive: 0 and *prog, *proc set, or -ENOENT.  A
 * procedure name alone is looked up in NFSv3 first, then MOUNT3; any
 * program's procedure is named PROG.PROC ("NLM.LOCK", "RPCBIND.GETADDR",
 * "MOUNT.NULL"). */
int nf_proc_lookup(const char *name, uint32_t *prog, uint32_t *proc);

/* ---- rule.c ----------------------------------------------------------- */

enum nf_fault {
	NF_DELAY, /* ms [jitter_ms] */
	NF_STALL, /* stop reading the sending side */
	NF_THROTTLE, /* KiB/s */
	NF_DROP, /* the record is not forwarded */
	NF_DUPLICATE, /* the record is forwarded twice */
	NF_REORDER, /* held until n later records passed */
	NF_RESET, /* RST both sides; after_bytes: mid-record */
	NF_SLICE, /* forwarded in pieces of n bytes */
	NF_CORRUPT, /* flip bytes of the body (or the header) */
	NF_BLACKHOLE, /* accept, never answer */
	NF_REFUSE, /* stop accepting connections */
	NF_CLOSE_AFTER, /* close after n bytes */
	NF_SHORT_READ, /* a READ reply's data cut to n bytes */
};

/*
 * One rule: a fault, the records it aims at and when (rule.c's first
 * comment has the grammar, netfault/RULES.md the examples).  Opaque; it
 * keeps its own counters and seeded random streams.
 */
struct nf_rule;

/* reorder N: N at most this. */
#define NF_REORDER_MAX 1024u

/* A buffer this long always holds a rule's canonical text. */
#define NF_RULE_TEXT_MAX 512

/*
 * Parses one rule.  Returns 0, -ENOMEM, or -EINVAL with a message in err
 * that quotes the rule, gives the column of the mistake (from 1) and marks
 * it with a caret on a line of its own.
 */
int nf_rule_parse(const char *text, struct nf_rule **out, char *err,
		  size_t errlen);
void nf_rule_free(struct nf_rule *r);
/* The rule in canonical text form (for list and logs); it parses back to
 * a rule nf_rule_equal() to r.  Truncated when len is too short. */
void nf_rule_format(const struct nf_rule *r, char *buf, size_t len);
/* Whether two rules say the same (their counters aside). */
bool nf_rule_equal(const struct nf_rule *a, const struct nf_rule *b);

enum nf_fault nf_rule_fault(const struct nf_rule *r);
/* A fault's name as rules spell it ("close-after"); "unknown" if none. */
const char *nf_fault_name(enum nf_fault fault);
/*
 * The fault's numbers: i = 0: delay's ms, throttle's KiB/s, reorder's n,
 * reset's after= bytes (0: at once), slice's bytes, corrupt's bytes=,
 * close-after's bytes; i = 1: delay's jitter ms.  0 when not given.
 */
uint64_t nf_rule_arg(const struct nf_rule *r, unsigned i);
bool nf_rule_header(const struct nf_rule *r); /* corrupt the header */
/* Stream faults (stall, throttle, blackhole, refuse, close-after) are on
 * or off as a whole; the others are decided record by record. */
bool nf_rule_stream(const struct nf_rule *r);
/* Whether r's dir= lets it act on the records going dir (no dir=: yes). */
bool nf_rule_on_dir(const struct nf_rule *r, enum nf_dir dir);

/*
 * Every record the proxy parsed goes to every rule, in the order the
 * records arrived, whether or not a rule before already acted on it:
 * through nf_rule_match() for a record fault, through nf_rule_observe()
 * for a stream fault (exactly one of the two per rule and record).  Both
 * count the events after=N:PROC:DIR waits for.
 */
void nf_rule_observe(struct nf_rule *r, const struct nf_msg *msg,
		     uint64_t now_ns);
/*
 * Whether the record msg, seen now_ns after the proxy started, gets r's
 * record fault.  A record counts towards nth only when its header matches
 * the target while the schedule is active, and towards count only when it
 * gets the fault; the probability is drawn only for a record that passed
 * both.  Always false for a stream fault.
 */
bool nf_rule_match(struct nf_rule *r, const struct nf_msg *msg,
		   uint64_t now_ns);
/* Whether r's schedule (window, at/after, for, flip) is on now. */
bool nf_rule_active(const struct nf_rule *r, uint64_t now_ns);
/* Counters for stats: faults applied; records matched while active. */
uint64_t nf_rule_hits(const struct nf_rule *r);
uint64_t nf_rule_matched(const struct nf_rule *r);
/* The next number of r's second random stream (seeded by seed=, apart
 * from the one prob= draws from): corrupt's offsets, for example. */
uint64_t nf_rule_random(struct nf_rule *r);
/* A delay rule's delay for one record: ms, plus or minus up to jitter. */
uint64_t nf_rule_delay_ms(struct nf_rule *r);

/* ---- ruleset.c: the rules in force, and the log of faults applied ----- */

/*
 * The rules in force, each with an id (from 1, never reused in a run), in
 * the order they were added.  The proxy walks them for every record; the
 * control socket adds and removes them.  A record's fault is decided when
 * the record is parsed and copied into the record (struct nf_action): a
 * rule removed later does not touch records already decided.
 */
struct nf_ruleset;
/* The most rules in force at once: memory stays bounded whatever is sent. */
#define NF_RULES_MAX 256u
/* NULL (errno ENOMEM) when out of memory. */
struct nf_ruleset *nf_ruleset_new(void);
void nf_ruleset_free(struct nf_ruleset *rs);
/* Parses text (nf_rule_parse) and appends it; *id is its id.  Returns 0,
 * nf_rule_parse()'s error, or -ENOSPC (with a message in err) when
 * NF_RULES_MAX rules are in force. */
int nf_ruleset_add(struct nf_ruleset *rs, const char *text, unsigned *id,
		   char *err, size_t errlen);
/* Removes rule id; -ENOENT if there is none.  id 0 removes every rule. */
int nf_ruleset_remove(struct nf_ruleset *rs, unsigned id);
/* The rule after prev (NULL: the first), and its id (id may be NULL);
 * NULL at the end.  Nothing may be added or removed during a walk. */
struct nf_rule *nf_ruleset_next(const struct nf_ruleset *rs,
				const struct nf_rule *prev, unsigned *id);
unsigned nf_ruleset_count(const struct nf_ruleset *rs);
/* fn(arg) runs after every add and remove (the proxy applies a stream
 * fault at once, not on its next tick); one at a time, NULL for none. */
void nf_ruleset_on_change(struct nf_ruleset *rs, void (*fn)(void *arg),
			  void *arg);

/* One fault applied, for the log, `netfault-ctl events` and the tests. */
struct nf_event {
	uint64_t seq; /* from 1, in the order applied */
	uint64_t at_ns; /* since the proxy started */
	unsigned rule; /* the rule's id */
	enum nf_fault fault;
	unsigned conn; /* the connection pair, from 1 */
	struct nf_msg msg; /* the record it hit (stream faults: dir only) */
};

/* The last max events, oldest dropped first. */
struct nf_events;
/* NULL (errno EINVAL: max is 0; ENOMEM) on failure. */
struct nf_events *nf_events_new(unsigned max);
void nf_events_free(struct nf_events *ev);
/* Numbers e (sets e->seq) and keeps it. */
void nf_events_push(struct nf_events *ev, struct nf_event *e);
/* Copies up to max events with seq > after, oldest first; returns how many. */
size_t nf_events_since(const struct nf_events *ev, uint64_t after,
		       struct nf_event *out, size_t max);
/* The seq of the last event pushed (0: none yet). */
uint64_t nf_events_last(const struct nf_events *ev);

/* ---- proxy.c: listeners, connection pairs, faults applied ------------- */

/* Bytes a direction of a pair may hold unsent before it stops reading. */
#define NF_QUEUE_MAX (2u * NF_RECORD_MAX + 65536u)

struct uv_loop_s;
struct nf_proxy;
/*
 * A proxy on loop that applies the rules of rs, pushes every fault applied
 * to ev and logs it on log_fd (-1: no log), one line per fault.  rs and ev
 * must outlive it.  0 or -errno.
 */
int nf_proxy_new(struct uv_loop_s *loop, struct nf_ruleset *rs,
		 struct nf_events *ev, int log_fd, struct nf_proxy **out);
/*
 * Listens on 127.0.0.1:port (0: any; *bound gets the port) and forwards
 * each connection accepted to host:up_port (an IPv4 or IPv6 literal).
 */
int nf_proxy_listen(struct nf_proxy *p, unsigned port, const char *host,
		    unsigned up_port, unsigned *bound);
const struct nf_stats *nf_proxy_stats(const struct nf_proxy *p);
/* Closes the listeners and every connection; the loop then runs dry. */
void nf_proxy_close(struct nf_proxy *p);
/* Frees p once the loop has run dry after nf_proxy_close(). */
void nf_proxy_free(struct nf_proxy *p);

/* ---- control.c: the control socket; ctl.c: netfault-ctl ------------- */

/* The proxy's own counters, kept by proxy.c, read by the control socket. */
struct nf_stats {
	uint64_t conns; /* connection pairs accepted */
	uint64_t open; /* of those, open now */
	uint64_t bytes[2]; /* forwarded, by enum nf_dir */
	uint64_t records[2]; /* parsed, by enum nf_dir */
	uint64_t unparsed[2]; /* streams given up on (-EPROTO) */
	uint64_t faults; /* events pushed */
};

/*
 * Serves the control socket at path (a Unix socket made with mode 0600;
 * a peer whose uid is not ours is refused) on loop.  One request per
 * line (at most 4096 bytes; a longer one is answered with an error and
 * the connection closed), one JSON answer per request, in order, sent
 * only once the request was applied (netfault/CONTROL.md has the
 * details):
 *   add RULE          {"ok":true,"id":N}  or {"ok":false,"error":"..."}
 *   clear [ID]        {"ok":true,"removed":N}
 *   list              {"ok":true,"rules":[{"id":N,"rule":"...","matched":N,"hits":N}]}
 *   stats             {"ok":true,"stats":{...nf_stats...},"rules":[...]}
 *   events [AFTER]    {"ok":true,"last":N,"events":[{"seq":N,"at_ms":N,"rule":N,...}]}
 * A socket already at path is replaced when nobody answers on it (a
 * netfault that died); one that answers gives -EADDRINUSE, and anything
 * else at path -EEXIST.  path's directory is walked as safepath_dir()
 * walks it (netfault may be root) and held: the socket is made and
 * removed through it.  Returns 0, or -errno with what went wrong, naming
 * path, in msg (mlen bytes; msg may be NULL).  rs, ev and st (st may be
 * NULL: zeros) must outlive the control.
 */
struct uv_loop_s;
struct nf_control;
int nf_control_start(struct uv_loop_s *loop, const char *path,
		     struct nf_ruleset *rs, struct nf_events *ev,
		     const struct nf_stats *st, struct nf_control **out,
		     char *msg, size_t mlen);
/* Removes the socket file at once and closes the socket and every
 * connection; the memory goes once the loop ran their close callbacks. */
void nf_control_stop(struct nf_control *c);

#endif
