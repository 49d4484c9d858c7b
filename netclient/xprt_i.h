/*
 * The transport's own state, shared by its two halves and nothing else:
 * xprt.c (connect, send, timeouts and retransmission, the call's state
 * machine) and xprt_recv.c (the receiver thread: record reassembly, reply
 * decoding, XID matching).  The fuzzer includes it to drive the receive
 * path without a socket.  The rest of netclient sees only netclient_i.h.
 *
 * Lock order: send_lock before lock.  lock protects the connection state,
 * the timeouts, the XID table and every call's state; it is held only for
 * short sections (never across a socket wait), so it is taken without an
 * interruptible wait.  What is set at creation and never changes (server,
 * addr, prog, vers, slots, stats, rx_efd) is read without it, and so is
 * wait_mode, an atomic a live mode switch sets.
 * The socket fd is closed only by the receiver thread, so that it never
 * reads a descriptor that has been reused, and only with send_lock held, so
 * that no sender writes to one: a sender checks, with send_lock held, that
 * its connection is still the current one.
 */
#ifndef INTRFS_XPRT_I_H
#define INTRFS_XPRT_I_H

#include "netclient_i.h"

/* Record marking (RFC 5531, section 11): the last-fragment bit. */
#define NC__RM_LAST 0x80000000u
#define NC__XID_BUCKETS 256
/* What one recv() of the reader may bring. */
#define NC__RX_STAGING (64 * 1024)

enum nc__call_state {
	NC__CALL_UNSENT, /* needs (re)transmission */
	NC__CALL_SENT, /* sent on connection sent_gen, waiting */
	NC__CALL_DONE, /* reply in hand, or failed (rc) */
};

/* A task waiting in a batch: for its replies, a connection or a slot. */
struct nc__waiter {
	task_cond_t cond;
	struct nc__waiter *next_slot; /* on xprt->slot_waiters */
	bool on_slot_list;
};

struct nc__call {
	struct nc__rpc *rpc;
	uint32_t xid;
	const task_t *task; /* whose call it is, for nc_client_task_calls() */
	struct nc__waiter *waiter;
	unsigned char *rec; /* record mark + call message but the tail */
	size_t rec_len;
	const unsigned char *tail; /* the rpc's tail, sent from where it is */
	size_t tail_len; /* with its XDR padding */

	/* Protected by xprt->lock. */
	enum nc__call_state state;
	bool went; /* sent whole at least once */
	bool has_slot;
	uint64_t sent_gen;
	uint64_t deadline_ns; /* when the current timeout expires */
	uint64_t timeout_ns; /* the current timeout */
	uint64_t major_ns; /* when its major timeout falls */
	uint64_t giveup_ns; /* soft: when the major timeout ends it; 0 */
	/* For the per-procedure counters. */
	unsigned sends, majors;
	uint64_t first_sent_ns, last_sent_ns, reply_ns;
	unsigned char *reply;
	size_t reply_len, reply_cap;
	int rc;
	struct nc__call *hnext;
};

enum nc__conn_state { NC__CONN_DOWN, NC__CONN_CONNECTING, NC__CONN_UP };

struct nc__xprt;
/* Calls the event hook, if any (xprt.c); call may be NULL. */
void nc__event(const struct nc__xprt *x, enum nc_event_type type,
	       const struct nc__call *call, bool by_client, bool partial);

/* The record parser's state: a record being reassembled from fragments. */
struct nc__rx {
	unsigned char mark[4];
	unsigned mark_have;
	size_t frag_left; /* bytes of the current fragment still due */
	bool last; /* the current fragment is the record's last */
	unsigned char *rec;
	size_t rec_len, rec_cap;
};

/* Record buffers kept for reuse, and the smallest kept. */
#define NC__REC_KEEP 8
#define NC__REC_MIN (64u * 1024)

struct nc__xprt {
	char server[256];
	struct sockaddr_in addr;
	uint32_t prog, vers;
	/* Of every wait but the send's; set live by nc_client_set_intr_mode. */
	_Atomic unsigned wait_mode;
	/* Of the send primitive's (send=); set live, as wait_mode. */
	_Atomic unsigned send_mode;
	unsigned slots;
	struct nc__xstats *stats;
	struct nc__pstat *pstats; /* per procedure, or NULL */
	_Atomic uint64_t last_io_ns; /* a record last sent or a reply taken */
	_Atomic unsigned load; /* calls of batches under way (nc__xprt_load) */
	_Atomic uint64_t carried; /* calls ever made on it */

	task_mutex_t send_lock; /* serialises records on the stream */
	task_mutex_t lock;
	/* Everything below is protected by lock. */
	const struct nc__call *cut_call; /* a record being cut: a reset */
	struct nc__timeout timeout;
	task_cond_t conn_cond; /* connection state and closing_fd changes */
	enum nc__conn_state conn;
	int fd; /* -1 unless NC__CONN_UP */
	int closing_fd; /* the receiver closes it; -1 when none */
	uint64_t gen; /* connection number, +1 per connect */
	uint16_t local_port; /* source port of the last connection */
	bool ever_connected;
	/*
	 * Connections that failed, or that the server ended before it
	 * answered anything on them; 0 once a reply comes.
	 */
	unsigned connect_failures;
	uint64_t next_connect_ns; /* no attempt before this */
	bool replied; /* a reply came on the connection up now */
	bool not_responding; /* "still trying" or "timed out" printed */
	bool garbage; /* the receiver found a stream not RPC */
	struct nc__call *table[NC__XID_BUCKETS];
	unsigned inflight;
	/*
	 * Calls given up after they were sent on this connection, before
	 * their reply: the receiver reads for those replies even with
	 * nothing in flight (to drop them), and no call reads its own reply
	 * meanwhile.  Zero again on a new connection.
	 */
	unsigned orphans;
	struct nc__waiter *slot_waiters;
	uint32_t next_xid;
	bool stop;

	/*
	 * Who reads the socket.  The receiver thread does while calls are in
	 * flight; with none it parks (rx_parked: it watches the socket only
	 * for a hang-up).  A call that is then alone in flight has its own
	 * task read its reply (reader_call: the lone-call receive, no hop
	 * through the receiver), and hands the reading back, with the
	 * receiver woken, once another call needs it.  Whoever reads owns
	 * rx and rx_staging; a record cut by a change of reader is finished
	 * by the next one.  The receiver never closes a socket while a call
	 * reads it.
	 */
	bool rx_parked;
	const struct nc__call *reader_call;
	struct nc__rx rx; /* owned by the reader */
	uint64_t rx_gen; /* the connection rx belongs to; the reader's */
	unsigned char *rx_staging; /* the reader's */

	pthread_t rx_thread;
	int rx_efd; /* wakes the receiver: stop, a disconnect, unparking */

	/*
	 * Record buffers given back after their reply was decoded, for the
	 * next big record (nc__rec_get/put): a 1 MiB READ reply in a fresh
	 * malloc is a page fault per page, which was half of a read's time.
	 * rec_lock is a leaf, taken with nothing else held.
	 */
	pthread_mutex_t rec_lock;
	unsigned char *rec_cache[NC__REC_KEEP];
	size_t rec_cache_cap[NC__REC_KEEP];
	unsigned nrec_cache;
};

/*
 * Relaxed: each counter is a statistic on its own, ordering nothing; a
 * reader may see any recent value.
 */
static inline void nc__count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/*
 * At each send, the calls in flight on its connection: summed (mountstats'
 * inflightsends) and the most (its maxslots).
 */
static inline void nc__count_inflight(struct nc__xstats *st, unsigned n)
{
	atomic_fetch_add_explicit(&st->inflight_sum, n, memory_order_relaxed);
	atomic_max_u64(&st->inflight_max, n);
}

/* The XID table's chain for xid.  Called with x->lock held. */
static inline struct nc__call **nc__xid_bucket(struct nc__xprt *x, uint32_t xid)
{
	return &x->table[xid % NC__XID_BUCKETS];
}

/* xprt.c: the calls' side.  Called with x->lock held. */

/* Enters call in the XID table, where it holds a slot until it is done. */
void nc__xid_insert(struct nc__xprt *x, struct nc__call *call);
/* Ends call with rc and frees its slot. */
void nc__call_finish(struct nc__xprt *x, struct nc__call *call, int rc);
/*
 * Drops the connection; by_client counts it as a reset of ours.  The
 * receiver closes the socket.
 */
void nc__xprt_disconnect(struct nc__xprt *x, bool by_client);
/* How long queued data may go unacknowledged before the path is dead. */
uint64_t nc__xprt_dead_after(const struct nc__xprt *x);

/* xprt_recv.c: the receiver's side. */

/*
 * Consumes len bytes of the stream, handing each whole record to the call
 * it answers.  Takes x->lock for each record.  Returns 0, or -EPROTO when
 * the stream can no longer be trusted (a record too long, or one that is
 * not a reply), or -ENOMEM.
 */
int nc__rx_parse(struct nc__xprt *x, struct nc__rx *rx,
		 const unsigned char *buf, size_t len);
/* Forgets a partial record: the next byte starts a record mark. */
void nc__rx_reset(struct nc__rx *rx);
/*
 * A kept record buffer of at least need bytes (its size in *cap), or NULL:
 * only records of NC__REC_MIN bytes and more are kept.
 */
unsigned char *nc__rec_get(struct nc__xprt *x, size_t need, size_t *cap);
/* Frees the kept buffers (the transport's end). */
void nc__rec_drain(struct nc__xprt *x);
/*
 * Decodes call's reply; returns 0 with the rpc's resp filled, or -errno.
 * Called without x->lock, once the call is done.
 */
int nc__decode_reply(struct nc__xprt *x, struct nc__call *call);
/* The receiver thread's body; arg is the transport. */
void *nc__xprt_receiver(void *arg);
/*
 * The lone-call receive, called with x->lock held in call's own task, the
 * only call in flight, sent on the connection up now: reads the socket
 * until something comes, the interrupt of mode, or wake (region_now_ns()
 * time); returns with x->lock held, 0 or -EINTR.  call stays the reader
 * until nc__reader_release().
 */
int nc__lone_read(struct nc__xprt *x, const struct nc__call *call,
		  enum task_mode mode, uint64_t wake);
/* True when call may read its own reply now (x->lock held). */
bool nc__lone_ok(const struct nc__xprt *x, const struct nc__call *call);
/*
 * call stops reading (x->lock held); the receiver is woken when calls are
 * still in flight or a socket waits to be closed.
 */
void nc__reader_release(struct nc__xprt *x, const struct nc__call *call);
/*
 * A call about to wait for its reply on its condition (x->lock held): the
 * receiver is woken if it is parked while calls are in flight.
 */
void nc__reader_ensure(struct nc__xprt *x);
/* Closes a socket with an RST (no TIME_WAIT for its source port). */
void nc__close_reset(int fd);

#endif /* INTRFS_XPRT_I_H */
