/*
 * Private to the intrfs daemon: the filesystem object, the node table, the
 * jobs that carry FUSE requests to worker threads, and the options.
 *
 * A FUSE request becomes a job: the libfuse handler (on a session thread)
 * copies what the request says into the job, makes its task, registers the
 * interrupt callback and queues it; a worker thread enters the task, runs
 * the job inside the region the mount mode asks for, leaves the region,
 * then replies.  So the session threads never wait for the network and an
 * INTERRUPT is read and routed however many requests are stuck.
 *
 * Lock order: a node's clock before its wlock (task mutexes, taken
 * interruptibly), before fs->nodes_lock, fs->jobs_lock and fs->notify_lock,
 * which are leaves held for a few instructions.
 */
#ifndef INTRFS_FUSEFS_I_H
#define INTRFS_FUSEFS_I_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include "intrfs/netclient.h"
#include "intrfs/region.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/stat.h>

/* The daemon's own options, beside netclient's (struct nc_opts). */
struct fs_opts {
	bool direct_io;
	/* Seconds, as nfs(5)'s acregmin/acdirmin; 0 with noac. */
	double acregmin, acregmax, acdirmin, acdirmax;
	double neg_timeout; /* negative lookups (lookupcache=all) */
	unsigned hung_timeout; /* seconds before the watchdog reports */
	unsigned max_workers;
	unsigned wbuf_mb; /* uncommitted data kept per file, MiB */
	bool allow_other;
	char *logfile;
};

/*
 * One write's data, kept until the server has it on stable storage: on
 * node->sending while its WRITE is on the way, then on node->dirty, with
 * the verifier of its reply, until a COMMIT with the same verifier.
 */
struct extent {
	struct extent *next;
	uint64_t off;
	size_t len;
	unsigned char verf[8]; /* of the WRITE reply */
	bool resend; /* the verifier changed between its calls */
	unsigned char data[];
};

struct access_entry;

struct node {
	fuse_ino_t ino; /* FUSE nodeid: the node's address, or 1 */
	struct nc_fh fh;
	uint64_t fileid;
	mode_t type; /* S_IFMT bits */

	/*
	 * Protected by fs->nodes_lock.  A node lives while the kernel holds
	 * lookups on it, a file handle is open on it, or a job has it pinned
	 * (node_pin); the last of node_forget(), node_close() and
	 * node_unpin() frees it.
	 */
	uint64_t nlookup;
	unsigned opens; /* FUSE open/create not yet released */
	unsigned pins;
	struct node *hnext;
	/*
	 * What the server last said of the file (node_saw_attr()), for the
	 * access cache and the entry timeouts: attr_gen counts the changes of
	 * mode, owner, group or ctime, which end what the access cache knows.
	 */
	mode_t mode; /* type and permission bits; 0: not seen yet */
	uint32_t uid, gid;
	struct timespec ctime;
	uint64_t attr_gen;
	struct access_entry *access; /* access.c */
	/*
	 * A directory's name in its parent, as last handed to the kernel:
	 * invalidating that entry drops every cached entry below it.
	 */
	fuse_ino_t dparent;
	char *dname;
	/* Silly rename (silly.c): the hidden name of a file unlinked open. */
	char *silly_name;
	struct nc_fh silly_dir;
	struct nc_cred silly_cred; /* who unlinked it: who removes it */

	/*
	 * Write-behind state (ops.c), protected by wlock: a lock taken with
	 * an interruptible wait, like a filesystem's mutex_lock_interruptible(),
	 * and held only for list work, never across a call.  wcond is
	 * broadcast whenever sending, busy or committing change.  clock
	 * serialises COMMITs and truncates; it is taken before wlock.
	 */
	task_mutex_t wlock, clock;
	task_cond_t wcond;
	_Atomic bool needs_sync; /* anything for a flush to do, see ops.c */
	struct extent *sending; /* WRITEs on the way */
	unsigned nsending;
	size_t sending_bytes;
	unsigned busy; /* write jobs not finished with the node */
	bool committing; /* a COMMIT holds extents off the list */
	struct extent *dirty, **dirty_tail; /* written, not committed */
	size_t dirty_bytes;
	int write_error; /* to report at the next write/flush/fsync */
};

#define NODE_BUCKETS 4096
#define ROOT_NAME_BUCKETS 256

struct intrfs {
	char *source; /* SERVER:/PATH */
	char *mountpoint;
	struct nc_opts nco;
	struct fs_opts o;
	nc_client_t *nc;
	struct fuse_session *se;
	struct node root;

	pthread_mutex_t nodes_lock;
	struct node *nodes[NODE_BUCKETS]; /* by fh, protected by nodes_lock */

	/* Jobs in flight, for the fatal-signal watcher; jobs_lock. */
	pthread_mutex_t jobs_lock;
	pthread_cond_t watch_cond; /* wakes the watcher; with jobs_lock */
	struct job *jobs;

	/* The worker pool (workers.c), protected by pool_lock. */
	pthread_mutex_t pool_lock;
	pthread_cond_t pool_cond;
	struct job *queue_head, *queue_tail;
	unsigned workers, idle, queued, running;
	bool stopping;
	pthread_cond_t pool_done;

	pthread_t watcher;
	_Atomic bool watcher_stop;

	_Atomic uint64_t ops, interrupts, fatal_interrupts, eintr_replies;

	/* Open handles of regular files: unlink and rename look then. */
	_Atomic unsigned open_files;
	/*
	 * Silly rename (silly.c): names made, the journal's path, and hidden
	 * names whose removal failed, tried again at unmount (nodes_lock).
	 */
	_Atomic unsigned silly_seq;
	char *silly_journal;
	struct silly_left *silly_left;

	/*
	 * Kernel entries to invalidate (notify.c): queued by workers, sent by
	 * the notifier thread, never from a request's own path.
	 */
	pthread_mutex_t notify_lock;
	pthread_cond_t notify_cond;
	struct notify_item *notify_head;
	bool notify_stop;
	pthread_t notifier;
	/*
	 * Names the kernel may cache under the root (access.c), protected by
	 * nodes_lock: the root has no entry of its own to invalidate.
	 */
	struct root_name *root_names[ROOT_NAME_BUCKETS];
	unsigned nroot_names;
};

struct job;
typedef int (*job_run_fn)(struct job *j);
typedef void (*job_reply_fn)(struct job *j);

/* What a job needs from the request, copied on the session thread. */
struct job {
	struct intrfs *fs;
	fuse_req_t req;
	task_t *task;
	const char *op;
	job_run_fn run; /* in the worker, inside the op's region */
	job_reply_fn reply; /* after the region, when run returned 0 */
	struct nc_cred cred;
	pid_t tid; /* the caller's thread */
	_Atomic unsigned intr; /* TASK_INTR_* raised so far */
	uint64_t start_ns;
	struct job *qnext; /* protected by fs->pool_lock */
	struct job *inext, *iprev; /* protected by fs->jobs_lock */

	fuse_ino_t ino, ino2;
	struct fuse_file_info fi;
	bool has_fi;
	char *name, *name2; /* copied */
	mode_t mode;
	dev_t rdev;
	int flags, to_set;
	off_t off;
	size_t size;
	char *buf; /* write data (copied), read/readlink/readdir output */
	struct stat attr;

	bool replied; /* answered with success before run ended */
	bool detached; /* answered from inside run: req is not ours */
	bool forced; /* no INTERRUPT comes for it (flush) */
	/*
	 * Set by whoever answers the request: the worker, or the interrupt
	 * path when it ends the request with EINTR itself.
	 */
	_Atomic bool answered;
	/*
	 * The worker's reference, and one while the interrupt callback runs:
	 * once the callback has answered, the worker may finish the job while
	 * the callback still interrupts its task.
	 */
	_Atomic unsigned refs;

	/* Results for reply(). */
	struct fuse_entry_param entry;
	struct stat st;
	struct statvfs stv;
	size_t out_len;
};

/*
 * The mount mode's region around work on one request: killable (the
 * default), uninterruptible (nointr) or none (intr).  A macro, so that each
 * use is its own call site with its own reason.
 */
#define FS_REGION_BEGIN(fs, why) NC_MODE_REGION_BEGIN((fs)->nco.intr_mode, why)
#define FS_REGION_END(fs) NC_MODE_REGION_END((fs)->nco.intr_mode)

/* nodes.c */
void nodes_init(struct intrfs *fs);
void nodes_destroy(struct intrfs *fs);
struct node *node_of(struct intrfs *fs, fuse_ino_t ino);
/* Finds or makes the node of fh and counts one lookup. */
struct node *node_lookup(struct intrfs *fs, const struct nc_fh *fh,
			 const struct nc_attr *attr);
void node_forget(struct intrfs *fs, fuse_ino_t ino, uint64_t n);
/* The node of fh if there is one, pinned (node_unpin()); NULL if not. */
struct node *node_find_pin(struct intrfs *fs, const struct nc_fh *fh);
void node_unpin(struct intrfs *fs, struct node *n);
/* A file handle opened and released on n. */
void node_open(struct intrfs *fs, struct node *n);
/*
 * Drops one open and pins n (the caller's node_unpin() lets it go); on the
 * last close, returns n's silly name, if it has one, for the caller to
 * remove and free.
 */
char *node_close(struct intrfs *fs, struct node *n);
/*
 * Records what the server said of n.  Returns true when n is a directory
 * that every user could search before and not any more (its cached
 * entries must go, see access.c).
 */
bool node_saw_attr(struct intrfs *fs, struct node *n, const struct nc_attr *a);
/* Remembers the name the kernel caches a directory under. */
void node_set_dname(struct intrfs *fs, struct node *n, fuse_ino_t parent,
		    const char *name);
/* Calls fn on every node (nodes_lock held: fn must not block). */
void nodes_foreach(struct intrfs *fs, void (*fn)(struct node *n, void *arg),
		   void *arg);

/* access.c: the access cache and entry timeouts */
/*
 * Whether j's caller may do want (NC_ACCESS_* bits) to n: 0, -EACCES, or
 * the error of the ACCESS call that had to be made.
 */
int access_check(struct job *j, struct node *n, uint32_t want);
void access_drop(struct node *n);
/* How long the kernel may keep an entry under parent (seconds). */
double entry_timeout(struct intrfs *fs, struct node *parent, const char *name,
		     bool negative);
/* Every user lost search permission on dir: its cached entries go. */
void entries_revoke(struct intrfs *fs, struct node *dir);
void access_destroy(struct intrfs *fs);

/* notify.c: kernel entries invalidated from the notifier thread */
int notify_start(struct intrfs *fs);
void notify_stop(struct intrfs *fs);
void notify_inval_entry(struct intrfs *fs, fuse_ino_t parent, const char *name);

/* silly.c: unlink and rename over files still open */
/*
 * REMOVE name in dir, or, when it is a file still open here, RENAME it to
 * a hidden .nfsXXXXXXXXXXXXXXXXXXXXXXXX name that the last close removes.
 */
int silly_unlink(struct job *j, struct node *dir, const char *name);
/*
 * Before a rename onto to_dir/to_name: when that name is a file still
 * open here (and not the file being renamed), moves it to a hidden name.
 */
int silly_rename_target(struct job *j, struct node *from_dir,
			const char *from_name, struct node *to_dir,
			const char *to_name);
/* The last close of a silly-renamed file: REMOVE its hidden name. */
void silly_remove(struct job *j, struct node *n, char *name);
/*
 * At mount, in the mount's task: removes the hidden names a daemon that
 * died left behind, and logs what it could not.
 */
void silly_recover(struct intrfs *fs);
/*
 * At unmount: removes every hidden name still there (those of files still
 * open, those whose removal failed) if the server answers, else logs them.
 */
void silly_cleanup(struct intrfs *fs, bool server_answers);

/* workers.c */
int workers_start(struct intrfs *fs);
void workers_stop(struct intrfs *fs);
/*
 * Waits up to timeout_s for every job to finish (write-behind among them);
 * true when they have.
 */
bool workers_drain(struct intrfs *fs, unsigned timeout_s);
/* Makes a job for req, with its task and credentials. */
struct job *job_new(struct intrfs *fs, fuse_req_t req, const char *op,
		    job_run_fn run, job_reply_fn reply);
/* Whether thread tid is in chmod(2), fchmod(2) or fchmodat(2) now. */
bool caller_in_chmod(pid_t tid);
/* Registers the interrupt callback and queues j to a worker. */
void job_submit(struct job *j);
/* A job that fails before it runs (ENOMEM copying its arguments). */
void job_fail(struct job *j, int err);
/*
 * Answers j's request now, from inside run: the caller is done with it, no
 * interrupt reaches the job any more, and run goes on in the background.
 */
void job_reply_early(struct job *j);

/* bufpool.c: I/O buffers, reused */
/* len bytes (a write's extent, a read's data); free with buf_free(). */
void *buf_alloc(size_t len);
void buf_free(void *p);
/* Bytes of buffers in use now, headers included. */
size_t buf_busy_bytes(void);
/* The trimmer thread, which unmaps what stays idle. */
int bufpool_start(void);
void bufpool_stop(void);

/* ops.c */
extern const struct fuse_lowlevel_ops intrfs_ops;

/* attr.c-like helpers in ops.c, used by workers too */
void attr_to_stat(const struct nc_attr *a, struct stat *st);
/* attr_to_stat(), recording the attributes on n first. */
void node_stat(struct intrfs *fs, struct node *n, const struct nc_attr *a,
	       struct stat *st);

#endif
