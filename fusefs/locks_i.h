/*
 * What the two halves of the daemon's file locks share: locks.c (the
 * requests, owners, ranges, waiters and the lock manager's callbacks) and
 * lockjan.c (the janitor that sends CANCEL, UNLOCK and reclaims, the
 * journal a dead daemon's locks are released from, start and stop).
 * Never included outside them.  Every structure here is protected by
 * fs->locks.lock (fusefs_i.h's struct lock_state), but for what its
 * fields say otherwise.
 */
#ifndef INTRFS_LOCKS_I_H
#define INTRFS_LOCKS_I_H

#include "fusefs_i.h"

/* The end of a range that runs to the end of the file. */
#define LK_EOF UINT64_MAX
/* A blocked LOCK is sent again: as Linux (NLMCLNT_POLL_TIMEOUT)... */
#define LK_RESEND_CB_MS 30000
/* ...or, when no GRANTED can come, this often. */
#define LK_RESEND_POLL_MS 500
/* The server is in its grace period: ask again (NLMCLNT_GRACE_WAIT). */
#define LK_GRACE_MS 5000
#define LK_MS (1000000ll)

/* An owner, and how the server knows it. */
struct lk_owner {
	struct lk_owner *next;
	/* POSIX: FUSE's lock_owner; flock(): its open file (locks_open()) */
	uint64_t id;
	bool flock; /* an open file's flock(); else a POSIX owner */
	pid_t pid; /* its process, as the last request said */
	struct nc_cred cred; /* whose calls its reclaims are */
	struct nc_nlm_lock name; /* svid and oh */
	unsigned refs; /* its ranges, and requests in flight */
};

/* A range an owner holds on a node, as the server holds it. */
struct lk_range {
	struct lk_range *next; /* on the node's list */
	struct lk_owner *o;
	uint64_t start, end; /* end inclusive; LK_EOF: to the end */
	uint64_t file; /* the open file it was taken through */
	bool exclusive;
};

/*
 * The last close of an open file that holds locks (a RELEASE), from the
 * moment the session thread reads it until its locks are gone: a lock
 * request on the file waits for the ones that came before it.
 */
struct lk_closing {
	struct lk_closing *next;
	struct node *n;
	uint64_t file;
	uint64_t seq; /* lock_state's close_seq when it came */
};

/* A LOCK the server answered BLOCKED, on the stack of its request. */
struct lk_waiter {
	struct lk_waiter *next;
	struct node *n;
	struct nc_nlm_lock lk;
	bool granted; /* a GRANTED came for it */
	bool resend; /* the server rebooted: send it again now */
	task_cond_t cond;
};

enum jan_op { JAN_UNLOCK, JAN_CANCEL, JAN_RECLAIM, JAN_RECOVER };

/* A call the janitor makes. */
struct jan_item {
	struct jan_item *next;
	enum jan_op op;
	struct nc_fh fh;
	struct nc_nlm_lock lk;
	struct nc_cred cred;
	bool done;
	bool detached; /* nobody waits: the janitor frees it */
};

/* Room for what lk_ranges_set() may add: a split, and the new range. */
struct lk_spare {
	struct lk_range *r[2];
	unsigned used;
};

/* locks.c */
/* The last byte of [off, off + len); LK_EOF for len 0 (to the end). */
uint64_t lk_end_of(uint64_t off, uint64_t len);
/* n ranges allocated (false: not all of them); what is not used, freed. */
bool lk_spare_get(struct lk_spare *sp, unsigned n);
void lk_spare_put(struct lk_spare *sp);
/*
 * Owner o's ranges on n after it locks [start, end] (excl or not) through
 * open file `file` or, with unlock, unlocks it, as the server keeps them.
 * locks.lock held.
 */
void lk_ranges_set(struct lock_state *L, struct node *n, struct lk_owner *o,
		   uint64_t start, uint64_t end, bool excl, bool unlock,
		   uint64_t file, struct lk_spare *sp);
/* Pins or unpins n when it gained its first range or lost its last. */
void lk_pin_change(struct intrfs *fs, struct node *n, bool had);
/* Drops a reference on o, freed with the last.  locks.lock held. */
void lk_owner_put(struct intrfs *fs, struct lk_owner *o);
/* The lock of owner o on [off, off + len). */
struct nc_nlm_lock lk_lock_of(const struct lk_owner *o, uint64_t off,
			      uint64_t len, bool excl);
/*
 * Owner o lets go of [off, off + len) on n, here and on the server (the
 * janitor's UNLOCK; wait: for it, killably); nothing when it holds nothing
 * there.
 */
void lk_release(struct intrfs *fs, struct node *n, struct lk_owner *o,
		uint64_t off, uint64_t len, const struct nc_cred *cred,
		bool wait);
/* The server's lock manager, found (once): 0, -ENOLCK, -EINTR. */
int lk_nlm_ready(struct intrfs *fs);

/* lockjan.c */
/* Notes, in the journal, o's first lock on n.  locks.lock held. */
void lk_journal_note(struct intrfs *fs, const struct node *n,
		     const struct lk_owner *o);
/* Queues it for the janitor.  locks.lock held. */
void lk_jan_queue(struct lock_state *L, struct jan_item *it);
/*
 * Has the janitor make the call (UNLOCK or CANCEL), and with wait waits
 * for it killably: a caller that is killed leaves it to the janitor.
 */
void lk_jan_do(struct intrfs *fs, enum jan_op op, const struct nc_fh *fh,
	       const struct nc_nlm_lock *lk, const struct nc_cred *cred,
	       bool wait);

#endif
