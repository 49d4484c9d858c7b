/*
 * Private to the intrfs daemon: the filesystem object, the node table, the
 * jobs that carry FUSE requests to worker threads, the options, and the
 * interfaces between the daemon's files.
 *
 * A FUSE request becomes a job: the libfuse handler (ops.c, on a session
 * thread) copies what the request says into the job, makes its task and
 * submits it (workers.c), which has the interrupt path watch it
 * (interrupt.c) and queues it; a worker thread enters the task, runs the job
 * inside the region the mount mode asks for, leaves the region, then
 * replies.  So the session threads never wait for the network and an
 * INTERRUPT is read and routed however many requests are stuck.
 *
 * Lock order, outermost first:
 *   fs->locks.lock (locks.c: a task mutex, never held across a call to
 *     the server), before fs->nodes_lock;
 *   a dirhandle's lock (dircache.c), a node's wb.commit_lock, then its
 *     wb.lock (writeback.c): task mutexes, taken interruptibly, only in a
 *     job's task;
 *   libfuse's lock of a request (held around the interrupt callback),
 *     then fs->watch.lock (interrupt.c), then fs->locks.lock (the
 *     watcher's locks_killed());
 *   leaves, held for a few instructions and never across a wait:
 *     fs->nodes_lock (nodes.c; access.c and silly.c use it for their node
 *     fields), fs->pool.lock (workers.c), fs->notify.lock (notify.c),
 *     fs->callers.lock (callers.c) and the buffer pool's lock (bufpool.c).
 * The leaves never nest in each other; the buffer pool's is taken under
 * wb.lock.
 *
 * Errors: every int function returns 0 or a negative errno, and every
 * errno parameter is negative; the sign flips once, in fs_reply_err().
 */
#ifndef INTRFS_FUSEFS_I_H
#define INTRFS_FUSEFS_I_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include "intrfs/netclient.h"
#include "intrfs/util.h"
#include "intrfs/region.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>

/*
 * The daemon's own options, beside netclient's (struct nc_opts); set by
 * options.c before any thread starts, read-only after.
 */
struct fs_opts {
	bool direct_io; /* every open bypasses the page cache */
	/*
	 * nocto: an open trusts the attribute cache; by default (cto) it
	 * asks the server, so what another client wrote and closed is seen.
	 */
	bool nocto;
	/*
	 * Locks: nolock keeps every lock in this kernel, and so does
	 * local_lock=all; local_lock=posix or flock keeps that kind; the
	 * rest go to the server's lock manager (locks.c).
	 */
	bool nolock, local_posix, local_flock;
	/* Attribute timeouts in seconds, as nfs(5)'s; 0 with noac. */
	double acregmin, acdirmin;
	bool neg_cache; /* lookupcache=all: negative entries for acdirmin */
	unsigned hung_timeout; /* seconds before the watchdog reports */
	/*
	 * caller_hold_max=: the seconds a caller's uninterruptible region
	 * may hold a fatal signal back (callers.c); CALLER_HOLD_UNSET when
	 * not given: then the major timeout.
	 */
	unsigned caller_hold_max;
	unsigned max_workers;
	unsigned wbuf_mb; /* uncommitted data kept per file, MiB */
	unsigned max_read; /* FUSE's max_read=, bytes; 0: not given */
	bool allow_other;
	/*
	 * caller_hold_any: any caller's uninterruptible region holds fatal
	 * signals back, not only a caller's with CAP_SYS_ADMIN.
	 */
	bool caller_hold_any;
	char *logfile;
	char *trace; /* trace=: the event trace's file from the mount on */
};

/* FUSE's options among the mount options, passed on to libfuse. */
struct fs_fuse_opts {
	char opts[1024];
	bool fsname_set;
};

/*
 * A node's write-behind state (writeback.c, which alone touches it).
 * wb.lock and wb.commit_lock are task mutexes: commit_lock serialises
 * COMMITs and truncates and is taken before lock, which protects every
 * field below but needs_sync and is held only for list work.
 */
struct extent;
struct wb_node {
	task_mutex_t lock, commit_lock;
	task_cond_t cond; /* with lock: sending, busy or committing changed */
	/*
	 * Anything for a flush to do: published at the end of each lock
	 * section, read without it.
	 */
	_Atomic bool needs_sync;
	struct extent *sending; /* protected by lock: WRITEs on the way */
	unsigned nsending; /* protected by lock */
	size_t sending_bytes; /* protected by lock */
	unsigned busy; /* protected by lock: write jobs not done with it */
	bool committing; /* protected by lock: a COMMIT holds extents */
	/* Protected by lock: written, not committed, oldest first. */
	struct extent *dirty, **dirty_tail;
	size_t dirty_bytes; /* protected by lock */
	int write_error; /* protected by lock: -errno for the next sync */
};

struct access_entry;

struct node {
	/* Set when the node is made, read-only after: no lock. */
	fuse_ino_t ino; /* FUSE nodeid: the node's address, or 1 */
	struct nc_fh fh;

	/*
	 * Protected by fs->nodes_lock.  A node lives while the kernel holds
	 * lookups on it, a file handle is open on it, or a job has it pinned
	 * (node_find_pin(), node_close()); the last of node_forget(),
	 * node_close() and node_unpin() frees it.
	 */
	uint64_t nlookup;
	unsigned opens; /* FUSE open/create not yet released */
	unsigned pins;
	struct node *hnext;
	/*
	 * Protected by fs->nodes_lock: what the server last said of the file
	 * (node_saw_attr()), for the access cache and the entry timeouts.
	 * attr_gen counts the changes of mode, owner, group or ctime, which
	 * end what the access cache knows.  type and fileid are written
	 * under the lock too, but read without it: a file's type and number
	 * never change once the server has told them.
	 */
	mode_t type; /* S_IFMT bits; 0 until the server says */
	uint64_t fileid;
	mode_t mode; /* type and permission bits; 0: not seen yet */
	uint32_t uid, gid;
	struct timespec ctime;
	uint64_t attr_gen;
	struct access_entry *access; /* access.c; protected by nodes_lock */
	/*
	 * Protected by fs->nodes_lock: the size and times the kernel was
	 * last given (node_stat()), for close-to-open: an open that finds
	 * the server's differ invalidates the kernel's.  kattr_set false:
	 * not known (an answer the kernel refused, an invalidation), so the
	 * next open invalidates.
	 */
	bool kattr_set;
	uint64_t ksize;
	struct timespec kmtime, kctime;
	/*
	 * Protected by fs->nodes_lock: a directory's size and times when the
	 * kernel's copy of its listing (FOPEN_CACHE_DIR) was last started;
	 * rdc_set false: none to keep.
	 */
	bool rdc_set;
	uint64_t rdc_size;
	struct timespec rdc_mtime, rdc_ctime;
	/*
	 * Protected by fs->nodes_lock: a directory's name in its parent, as
	 * last handed to the kernel; invalidating that entry drops every
	 * cached entry below it (access.c).
	 */
	fuse_ino_t dparent;
	char *dname;
	/*
	 * Silly rename (silly.c), protected by fs->nodes_lock: the hidden
	 * name of a file unlinked open, its directory, and who unlinked it
	 * (who removes it).
	 */
	char *silly_name;
	struct nc_fh silly_dir;
	struct nc_cred silly_cred;

	struct wb_node wb; /* writeback.c; its own locks */

	/*
	 * locks.c, protected by fs->locks.lock: the ranges owners hold on
	 * the file, how many (also read without the lock, as a hint), and
	 * the next node that has some.
	 */
	struct lk_range *locks;
	_Atomic unsigned nlocks;
	struct node *lnext;
};

#define NODE_BUCKETS 4096
#define ROOT_NAME_BUCKETS 256

/* The worker pool (workers.c); every field protected by lock. */
struct worker_pool {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a job was queued, or stopping */
	pthread_cond_t done; /* a worker exited, or the last job ended */
	struct job *head, *tail; /* queued, first come first served */
	unsigned workers, idle, queued, running;
	unsigned inline_running; /* jobs run by the session thread itself */
	bool stopping;
	/*
	 * The session's end (workers_end_watch()): the thread that bounds
	 * the jobs' time once the mount is gone, the pipe that says the
	 * loop returned, and what it found (written before it is joined).
	 */
	pthread_t ender;
	int end_pipe[2];
	unsigned end_timeout_s;
	bool ender_running, drained;
};

/* Interrupt routing (interrupt.c): the jobs in flight, for the watcher. */
struct intr_watch {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* with lock: wakes the watcher */
	struct job *jobs; /* protected by lock */
	bool stop; /* protected by lock */
	pthread_t thread;
};

/*
 * Kernel entries to invalidate (notify.c): queued by workers, sent by the
 * notifier threads, never from a request's own path.
 */
#define NOTIFIERS 4
struct notifier {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* with lock: an item, or stop */
	struct notify_item *head; /* protected by lock */
	bool stop; /* protected by lock */
	pthread_t threads[NOTIFIERS];
	unsigned nthreads; /* set by notify_start(), read-only after */
};

/* The control endpoint (control.c), for intrfsctl. */
struct ctl_state {
	int fd; /* the listening socket; -1: none */
	int stop[2]; /* a byte on stop[1] ends the thread */
	uid_t owner; /* who mounted: may ask, as root may */
	unsigned major, minor; /* the mount's device: names the socket */
	/*
	 * Under policy linux switched on live, the mode and the send's mode
	 * it replaced, brought back when it is switched off.  The control
	 * thread's alone, but for their setting at mount.
	 */
	enum nc_intr_mode mode_before_linux;
	enum task_mode send_before_linux;
	char path[108];
	pthread_t thread;
};

/*
 * File locks (locks.c).  Every field but those set once at the start is
 * protected by lock, a task mutex: the owners, the waiters, the janitor's
 * queue, the nodes with ranges.
 */
struct lk_owner;
struct lk_waiter;
struct lk_closing;
struct jan_item;
struct lock_state {
	task_mutex_t lock;
	task_cond_t jan_cond; /* with lock: work for the janitor, or stop */
	task_cond_t done_cond; /* with lock: an item of the janitor done */
	struct lk_owner *owners;
	struct lk_waiter *waiters;
	/* Last closes letting go of locks, and the requests they hold up. */
	struct lk_closing *closing;
	struct lk_waiter *close_waiters;
	uint64_t close_seq; /* the last close counted */
	/* The last open file's number (locks_open()); atomic, no lock. */
	_Atomic uint64_t files;
	struct jan_item *queue;
	struct node *nodes; /* those with ranges, by lnext */
	unsigned nranges;
	unsigned abandoned; /* calls the janitor gave up (unmount) */
	bool busy; /* the janitor is making a call */
	bool stop;
	/*
	 * The server's lock manager, found at the first lock (setup, a task
	 * mutex, serialises the finding): nlm_ok once found, and callbacks,
	 * written before it, read after it; nlm_missing (with setup) once
	 * said it is not there.
	 */
	task_mutex_t setup;
	_Atomic bool nlm_ok;
	bool callbacks; /* GRANTED can come */
	bool nlm_missing;
	/* Set by locks_start(), read-only after. */
	bool running; /* the janitor runs */
	char oh_tag[64]; /* this daemon, in every owner handle */
	task_t *task; /* the janitor's */
	pthread_t janitor;
	int journal_fd;
	char *journal;
	char prefix[320]; /* of the journals of this export */
};

/*
 * Caller-declared regions (callers.c): the stacks of threads that opened
 * some by the ioctl, by tid, the threads each user has stacks for, what
 * the registry of intrfs-region(1) looked like, and the rate of the log
 * lines callers cause.  Every field but those set once at the start is
 * protected by lock, a leaf.
 */
#define CALLER_BUCKETS 256
/* Caller regions a request may run in: a thread's own, and inherited. */
#define CALLER_DEPTH_MAX 16
/* caller_hold_max= not given. */
#define CALLER_HOLD_UNSET UINT_MAX
/* Log lines of users other than root: their uid modulo this shares one. */
#define CALLER_LOG_BUCKETS 64
struct caller;
struct caller_user;
/* A rate limit of log lines, as the kernel's struct ratelimit_state. */
struct caller_ratelimit {
	uint64_t begin_ns; /* of the current interval */
	unsigned printed, missed; /* in it */
};
struct callers_state {
	pthread_mutex_t lock;
	struct caller *tab[CALLER_BUCKETS];
	unsigned nthreads;
	struct caller_user *users[CALLER_BUCKETS]; /* by uid */
	/* Root's lines, then everyone else's by uid. */
	struct caller_ratelimit log_root, log[CALLER_LOG_BUCKETS];
	/* Any stack at all: read without the lock, on every request. */
	_Atomic bool any;
	/* The registry's directory as last seen, and whether it held any. */
	struct stat reg_st;
	bool reg_known, reg_busy;
	/* Set by callers_start(), read-only after. */
	bool pidfd_threads; /* pidfd_open(PIDFD_THREAD) works */
	bool running;
	/* This daemon's user namespace, where CAP_SYS_ADMIN counts. */
	dev_t userns_dev;
	ino_t userns_ino;
	int epfd, stop[2];
	pthread_t reaper;
};

/* Names in doubt (unsure.c): entries for them are not cached. */
struct unsure_state {
	pthread_mutex_t lock;
	struct unsure_name *head; /* protected by lock */
	_Atomic uint64_t gen; /* doubts that ended; written under lock */
};

/*
 * Silly rename (silly.c): names made, the journal's path, and hidden names
 * whose removal failed, tried again at unmount.
 */
struct silly_state {
	/* Only uniqueness matters: see silly_move(). */
	_Atomic unsigned seq;
	char *journal; /* set at mount, read-only after */
	struct silly_left *left; /* protected by fs->nodes_lock */
};

/*
 * The daemon's counters, for the USR1 dump: X(name, what it counts), as
 * netclient's NC_STATS_FIELDS.  Statistics only: updated and read relaxed.
 */
#define FS_STATS_FIELDS(X)                                            \
	X(interrupts, "INTERRUPTs the kernel sent")                   \
	X(fatal_interrupts, "interrupts found fatal (SIGKILL, exit)") \
	X(eintr_replies, "requests answered EINTR")                   \
	X(spliced_writes, "writes whose bytes came through a pipe")

/*
 * mountstats.c: Linux's NFS event counters (fs/nfs/iostat.h), in its
 * order, counted where intrfs has their counterpart:
 *   INODEREVALIDATE  getattr requests
 *   DATAINVALIDATE   a file's cached pages dropped (after a lock, or
 *                    attributes another client changed)
 *   VFSOPEN, VFSLOOKUP, VFSACCESS, VFSSETATTR, VFSFLUSH, VFSFSYNC,
 *   VFSLOCK, VFSRELEASE  those requests (open: files, directories and
 *                    create; lock: getlk, setlk, flock)
 *   VFSUPDATEPAGE    write requests;  VFSREADPAGES  read requests
 *   VFSGETDENTS      readdir and readdirplus requests
 *   CONGESTIONWAIT   writes that waited for room (write-behind's bounds)
 *   SETATTRTRUNC     setattr requests that change the size
 *   SILLYRENAME      open files renamed .nfsXXX at unlink
 *   SHORTREAD        READ replies short of the request, not at the end
 * The rest stay 0.
 */
#define NFS_EVENTS(X)       \
	X(INODEREVALIDATE)  \
	X(DENTRYREVALIDATE) \
	X(DATAINVALIDATE)   \
	X(ATTRINVALIDATE)   \
	X(VFSOPEN)          \
	X(VFSLOOKUP)        \
	X(VFSACCESS)        \
	X(VFSUPDATEPAGE)    \
	X(VFSREADPAGE)      \
	X(VFSREADPAGES)     \
	X(VFSWRITEPAGE)     \
	X(VFSWRITEPAGES)    \
	X(VFSGETDENTS)      \
	X(VFSSETATTR)       \
	X(VFSFLUSH)         \
	X(VFSFSYNC)         \
	X(VFSLOCK)          \
	X(VFSRELEASE)       \
	X(CONGESTIONWAIT)   \
	X(SETATTRTRUNC)     \
	X(EXTENDWRITE)      \
	X(SILLYRENAME)      \
	X(SHORTREAD)        \
	X(SHORTWRITE)       \
	X(DELAY)            \
	X(PNFS_READ)        \
	X(PNFS_WRITE)

/*
 * And its byte counters: what readers and writers moved (direct: files
 * opened O_DIRECT), what READ and WRITE moved, and those in pages.
 */
#define NFS_BYTES(X)          \
	X(NORMALREADBYTES)    \
	X(NORMALWRITTENBYTES) \
	X(DIRECTREADBYTES)    \
	X(DIRECTWRITTENBYTES) \
	X(SERVERREADBYTES)    \
	X(SERVERWRITTENBYTES) \
	X(READPAGES)          \
	X(WRITEPAGES)

#define NFS__ENUM_EV(name) NFSEV_##name,
enum nfs_event { NFS_EVENTS(NFS__ENUM_EV) NFSEV_N };
#undef NFS__ENUM_EV
#define NFS__ENUM_B(name) NFSB_##name,
enum nfs_bytes { NFS_BYTES(NFS__ENUM_B) NFSB_N };
#undef NFS__ENUM_B

struct nfs_iostats {
	_Atomic uint64_t events[NFSEV_N];
	_Atomic uint64_t bytes[NFSB_N];
};

struct fs_stats {
#define FS__STATS_FIELD(name, what) _Atomic uint64_t name;
	FS_STATS_FIELDS(FS__STATS_FIELD)
#undef FS__STATS_FIELD
};

static inline void fs_count(_Atomic uint64_t *counter)
{
	/* relaxed: a statistic for the USR1 dump; nothing orders on it. */
	atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

/* relaxed, both: statistics, nothing orders on them. */
#define nfs_event(fs, name)                                               \
	atomic_fetch_add_explicit(&(fs)->iostats.events[NFSEV_##name], 1, \
				  memory_order_relaxed)
#define nfs_bytes(fs, name, n)                                            \
	atomic_fetch_add_explicit(&(fs)->iostats.bytes[NFSB_##name], (n), \
				  memory_order_relaxed)

/*
 * A mount's I/O buffers (bufpool.c): the idle slabs, newest first, and the
 * trimmer's state, protected by lock (a leaf); the gauges relaxed.
 */
struct bufpool {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* wakes the trimmer to stop */
	struct buf_hdr *idle;
	bool trimmer_stop;
	bool trimmer_running;
	bool ready; /* bufpool_start() ran */
	pthread_t trimmer;
	_Atomic size_t busy_bytes;
	_Atomic uint64_t busy_peak;
};

struct intrfs {
	/* Set before the session starts, read-only after: no lock. */
	char *source; /* SERVER:/PATH */
	char *mountpoint;
	struct nc_opts nco;
	struct fs_opts o;
	nc_client_t *nc;
	struct fuse_session *se;

	struct node root; /* never freed; its fields as any node's */
	pthread_mutex_t nodes_lock;
	struct node *nodes[NODE_BUCKETS]; /* by fh; protected by nodes_lock */
	/*
	 * Names the kernel may cache under the root (access.c), protected by
	 * nodes_lock: the root has no entry of its own to invalidate.
	 */
	struct root_name *root_names[ROOT_NAME_BUCKETS];
	unsigned nroot_names;
	/* Open handles of regular files: unlink and rename look then. */
	_Atomic unsigned open_files;

	struct worker_pool pool;
	struct intr_watch watch;
	struct notifier notify;
	struct unsure_state unsure;
	struct silly_state silly;
	struct lock_state locks;
	struct callers_state callers;
	struct fs_stats stats;
	struct bufpool bufs;
	struct nfs_iostats iostats; /* mountstats.c */
	uint64_t mounted_ns; /* region_now_ns() at mount: mountstats' age */
	struct ctl_state ctl;
	/*
	 * The policy new requests get: policy= at mount, changed live by
	 * intrfsctl (enum region_policy).  Read relaxed: a request made as it
	 * changes may get either.
	 */
	_Atomic unsigned req_policy;
	/* policy=linux: req_policy is percall, with Linux's own waits. */
	_Atomic bool req_linux;
	/* The same for the mount's mode (enum nc_intr_mode). */
	_Atomic unsigned req_mode;
	/*
	 * The mode (enum task_mode) of write-behind's waits for writes on
	 * their way, and of a write's wait for room (writeback.c,
	 * wb_set_wait_mode()): set with the policy, read relaxed.
	 */
	_Atomic unsigned wb_mode, wb_room_mode;
	/*
	 * INIT reached init() (ops.c): with the session loop ending without
	 * error, the mount came up, even if it went before the announcer's
	 * check (intrfs.c).  Set relaxed, read after the loop's threads end.
	 */
	_Atomic bool init_seen;
};

struct job;
typedef int (*job_run_fn)(struct job *j);
typedef void (*job_reply_fn)(struct job *j);

/*
 * What a job needs from the request, copied on the session thread before
 * the job is submitted; after that, the worker's alone, but for the fields
 * marked otherwise.
 */
struct job {
	struct intrfs *fs;
	fuse_req_t req; /* ours until answered is set by someone else */
	task_t *task;
	job_run_fn run; /* in the job's thread, inside the op's region */
	job_reply_fn reply; /* after the region, when run returned 0 */
	struct nc_cred cred;
	pid_t tid; /* the caller's thread */
	/*
	 * The caller's regions when the request came (callers.c), outermost
	 * first: the job runs inside them, outside the mount's own.
	 */
	const struct region_site *caller[CALLER_DEPTH_MAX];
	unsigned ncaller;
	enum nc_intr_mode intr_mode; /* the mount's, when the request came */
	uint64_t start_ns;
	bool forced; /* no INTERRUPT comes for it (flush) */
	/*
	 * A lock request: the interrupt path never answers it early; it
	 * answers EINTR itself once nothing is left waiting on the server.
	 */
	bool self_answers;
	bool pooled; /* run by a worker, never by the session thread */
	/* TASK_INTR_* raised so far; atomic, see interrupt.c. */
	_Atomic unsigned intr;
	/*
	 * Set by whoever answers the request: the worker, or the interrupt
	 * path when it ends the request with EINTR itself.
	 */
	_Atomic bool answered;
	/*
	 * The worker's reference, and one while an interrupt callback runs
	 * or the watcher looks: once the callback has answered, the worker
	 * may finish the job while the callback still interrupts its task.
	 */
	_Atomic unsigned refs;
	struct job *qnext; /* protected by fs->pool.lock */
	/* Protected by fs->watch.lock: on the watched list (interrupt.c). */
	struct job *inext, *iprev;
	bool linked;
	/* The watcher thread's own, between two holds of watch.lock. */
	struct job *wnext;
	bool wfatal;
	/* Protected by fs->watch.lock: when a fatal interrupt was raised. */
	uint64_t fatal_ns;
	/*
	 * A lock request (locks.c), protected by fs->locks.lock: the wait
	 * it is in, that a fatal signal came (its waits end), and that the
	 * interrupt path answered it (what the server grants it now is
	 * given back).
	 */
	struct lk_waiter *lk_wait;
	bool lk_killed, lk_abandoned;

	fuse_ino_t ino, ino2;
	/*
	 * The nodes of ino and ino2, pinned from job_submit() to the job's
	 * end: the kernel holds its inodes only until the request is
	 * answered, and the interrupt path may answer EINTR while the worker
	 * still uses them.
	 */
	struct node *pinned[2];
	struct fuse_file_info fi;
	bool has_fi;
	char *name, *name2; /* copied */
	/*
	 * The directories whose entries name and name2 this op creates or
	 * removes (0: none).  When the op fails or its answer was EINTR, the
	 * server may still have done it: the kernel's entries for those names
	 * are invalidated (names_unsure() in workers.c).
	 */
	fuse_ino_t name_dir, name2_dir;
	/* Which of them are in doubt for this op (unsure.c), from submit. */
	bool name_unsure, name2_unsure;
	/* unsure_gen() at submit: a doubt that ended since is a doubt. */
	uint64_t unsure_gen;
	mode_t mode;
	dev_t rdev;
	int flags, to_set;
	off_t off;
	size_t size;
	char *buf; /* write data (copied), read/readlink/readdir output */
	struct nc_rbuf rbuf; /* a read's data where its reply landed */
	struct stat attr;
	struct flock lock; /* getlk, setlk: the lock, and getlk's answer */

	bool replied; /* answered with success before run ended */
	bool detached; /* answered from inside run: req is not ours */

	/* Results for reply(). */
	struct fuse_entry_param entry;
	struct stat st;
	struct statvfs stv;
	size_t out_len;
};

/*
 * Whom the server calls of the modules under ops.c (access, dircache,
 * silly, writeback) act for: the mount, the caller's credentials, and the
 * mount mode its region takes.  They take this and the node, never the
 * request; JOB_ACTOR() makes one from a request.
 */
struct actor {
	struct intrfs *fs;
	const struct nc_cred *cred;
	enum nc_intr_mode intr_mode; /* the mount's, when the request came */
};

/* The actor of request j, for the call it is an argument of. */
#define JOB_ACTOR(j) \
	(&(const struct actor){ (j)->fs, &(j)->cred, (j)->intr_mode })

/*
 * The mount mode's region around work on one request: killable (the
 * default), uninterruptible (nointr) or none (intr), as the mode was when
 * the request came (j->intr_mode, or an actor's).  A macro, so that each
 * use is its own call site with its own reason.
 */
#define FS_REGION_BEGIN(j, why) NC_MODE_REGION_BEGIN((j)->intr_mode, why)
#define FS_REGION_END(j) NC_MODE_REGION_END((j)->intr_mode)

/*
 * Answers req with rc, 0 or -errno: the one place the sign flips, as
 * fuse_reply_err() takes a positive errno.
 */
static inline void fs_reply_err(fuse_req_t req, int rc)
{
	fuse_reply_err(req, -rc);
}

/* options.c: the mount options and --help */
/* Defaults for o (nfs(5)'s where it names them). */
void fs_opts_init(struct fs_opts *o);
/*
 * Parses str into fs->nco (netclient's options) and fs->o (the daemon's),
 * and FUSE's into fo.  Returns 0, or -EINVAL with a message in err.
 */
int fs_opts_parse(struct intrfs *fs, const char *str, struct fs_fuse_opts *fo,
		  char *err, size_t errlen);
void fs_usage(FILE *f);

/* nodes.c: the node table, and attributes as the kernel gets them */
void nodes_init(struct intrfs *fs);
void nodes_destroy(struct intrfs *fs);
struct node *node_of(struct intrfs *fs, fuse_ino_t ino);
/* Finds or makes the node of fh and counts one lookup. */
struct node *node_lookup(struct intrfs *fs, const struct nc_fh *fh,
			 const struct nc_attr *attr);
void node_forget(struct intrfs *fs, fuse_ino_t ino, uint64_t n);
/* The node of fh if there is one, pinned (node_unpin()); NULL if not. */
struct node *node_find_pin(struct intrfs *fs, const struct nc_fh *fh);
/* Keeps n alive until node_unpin(), whatever FORGETs come meanwhile. */
void node_pin(struct intrfs *fs, struct node *n);
void node_unpin(struct intrfs *fs, struct node *n);
/* A file handle opened and released on n. */
void node_open(struct intrfs *fs, struct node *n);
/*
 * Drops one open and pins n (the caller's node_unpin() lets it go); on the
 * last close, returns n's silly name, if it has one, for the caller to
 * remove and free.
 */
char *node_close(struct intrfs *fs, struct node *n);
/* After node_close(): whether no open of n is left here. */
bool node_last_close(struct intrfs *fs, struct node *n);
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
/* How long the kernel may keep attributes of this mode (seconds). */
double attr_timeout(const struct intrfs *fs, mode_t mode);
/*
 * n's attributes a as the kernel gets them, recorded on n first (also as
 * what the kernel holds).
 */
void node_stat(struct intrfs *fs, struct node *n, const struct nc_attr *a,
	       struct stat *st);
/* The kernel refused an answer with n's attributes: it holds older ones. */
void node_kattr_unknown(struct intrfs *fs, struct node *n);
/*
 * Close-to-open: records a, the server's attributes found at an open, and
 * whether the kernel's size and times of n differ from them (or are not
 * known); then they are to be invalidated, and no longer known.
 */
bool node_kattr_stale(struct intrfs *fs, struct node *n,
		      const struct nc_attr *a);
/*
 * An opendir of directory n whose attributes the server gave as a: true
 * when the kernel's copy of its listing may be kept (they are what they
 * were when the copy was started); else the copy starts again now.
 */
bool node_listing_keep(struct intrfs *fs, struct node *n,
		       const struct nc_attr *a);
/* The same under nocto, from the attributes the kernel was last given. */
bool node_listing_keep_seen(struct intrfs *fs, struct node *n);
/*
 * The FUSE entry for name in parent, which the server gave e for: finds or
 * makes its node and counts one lookup.  How long the kernel may keep it
 * depends on who may search parent (entry_timeout()).
 */
int node_entry(struct intrfs *fs, struct node *parent, const char *name,
	       const struct nc_entry *e, struct fuse_entry_param *out);

/* access.c: the access cache and entry timeouts */
/*
 * Whether cred may do want (NC_ACCESS_* bits) to n on fs: 0, -EACCES, or
 * the error of the ACCESS call that had to be made.
 */
int access_check(struct intrfs *fs, const struct nc_cred *cred, struct node *n,
		 uint32_t want);
/* access_check() for an access(2) mask (R_OK, W_OK, X_OK). */
int access_check_mask(struct intrfs *fs, const struct nc_cred *cred,
		      struct node *n, int mask);
void access_drop(struct node *n);
/* How long the kernel may keep an entry under parent (seconds). */
double entry_timeout(struct intrfs *fs, struct node *parent, const char *name,
		     bool negative);
/* Every user lost search permission on dir: its cached entries go. */
void entries_revoke(struct intrfs *fs, struct node *dir);
void access_destroy(struct intrfs *fs);

/* killpriv.c: setuid and setgid cleared as the kernel would */
/*
 * Whether sa only clears setuid/setgid bits of n, for someone else than
 * its owner, and not in chmod(2): the kernel's clearing.
 */
bool killpriv_only(struct job *j, struct node *n, const struct nc_sattr *sa);
/* Sets n's mode to mode as the daemon; a is the result. */
int killpriv_set_mode(struct job *j, struct node *n, mode_t mode,
		      struct nc_attr *a);
/*
 * After j's truncate of n, which left attributes a: clears what a
 * truncate by another than the owner clears, as the daemon.
 */
int killpriv_after_truncate(struct job *j, struct node *n, struct nc_attr *a);

/* writeback.c: write-behind */
void wb_node_init(struct wb_node *w);
/* The mode of fs's write-behind waits (policy=linux: uninterruptible). */
void wb_set_wait_mode(struct intrfs *fs, enum task_mode m);
/* Frees what w keeps, logging the bytes never committed. */
void wb_node_destroy(struct wb_node *w, uint64_t fileid);
/*
 * A buffer for struct wb_write's data: a write of len bytes at off, which
 * the session thread puts at *data (the request's own buffer is reused).
 * NULL: no memory.
 */
void *wb_extent_new(struct bufpool *bp, uint64_t off, size_t len, void **data);
/* One write request as write-behind takes it. */
struct wb_write {
	void *data; /* from wb_extent_new(); wb_write() takes it, and NULLs it */
	int flags; /* the open's: O_DIRECT and O_APPEND are answered late */
	/* Answers the request early, once its WRITEs have left. */
	struct nc_sent_notify answer;
	/* Whether it was answered (early) when the WRITE's reply came. */
	const bool *answered;
};
/*
 * Writes w->data to n for a: answers the request once its WRITEs have
 * left (w->answer), unless O_DIRECT or O_APPEND, and keeps the data until
 * committed.
 */
int wb_write(const struct actor *a, struct node *n, struct wb_write *w);
/*
 * Waits until no write to [off, off+len) is on its way (len 0: none to
 * the file at all), in fs's write-behind wait mode (the region decides).
 */
int wb_wait_sent(const struct intrfs *fs, struct node *n, uint64_t off,
		 size_t len);
/* Whether writes to n are on their way now. */
bool wb_writes_on_way(struct node *n);
/* Whether a flush of n has nothing to do; without a lock or a wait. */
bool wb_nothing_to_sync(struct node *n);
/*
 * SETATTR sa, with a new size, of n: after the writes on their way, with
 * no COMMIT meanwhile, dropping what is kept past the new size.
 */
int wb_truncate(const struct actor *a, struct node *n,
		const struct nc_sattr *sa, struct nc_attr *attr);
/*
 * flush and fsync: every write job done with n, what they wrote
 * committed, and the error of a write that failed after its answer
 * reported once.
 */
int wb_sync(const struct actor *a, struct node *n);

/* dircache.c: what an open directory read, for readdir(plus) */
struct dirhandle;
/* A dirhandle for opendir, with one reference (dir_put()). */
struct dirhandle *dir_open(void);
void dir_hold(struct dirhandle *d);
void dir_put(struct dirhandle *d);
/* What a readdir(plus) asks of an open directory, and its answer. */
struct dir_ask {
	fuse_req_t req; /* whose session encodes the entries */
	fuse_ino_t ino; /* the directory */
	uint64_t unsure_gen; /* unsure_gen() when the request came */
	off_t off; /* the entry to start from */
	size_t size; /* the answer's most bytes */
	char *buf; /* out: the entries (buf_alloc()), the caller's to free */
	size_t len; /* out: their bytes */
};
/* Fills q->buf and q->len from entry q->off on, reading if need be. */
int dir_read(const struct actor *a, struct dirhandle *d, struct dir_ask *q,
	     bool plus);

/* notify.c: kernel entries invalidated from the notifier thread */
int notify_start(struct intrfs *fs);
void notify_stop(struct intrfs *fs);
void notify_inval_entry(struct intrfs *fs, fuse_ino_t parent, const char *name);

/* s as the inside of a JSON string (quotes and controls escaped), cut to fit. */
void json_escape(char *out, size_t len, const char *s);

/* trace.c: the event trace; trace_init() once, before the session */
int trace_init(void);
/*
 * The trace to path, a regular file not under mountpoint, opened by
 * safepath's rule (lib/safepath.h): 0, or -errno with msg saying why
 * (-EINVAL not absolute, -EXDEV on the mount, safepath's refusals).
 */
int trace_on(const char *path, const char *mountpoint, char *msg, size_t len);
/*
 * The trace to fd (a caller opened it for writing; it stays the caller's),
 * a regular file not on the mount's device mount_dev: 0, or -EINVAL,
 * -EXDEV, -errno.
 */
int trace_on_fd(int fd, dev_t mount_dev);
void trace_off(void);
/* A caller region of thread tid began, ended or was cleared (ev). */
void trace_caller(const char *ev, pid_t tid, const struct region_site *site,
		  unsigned depth);

/* control.c: the endpoint intrfsctl talks to (ctl.h) */
int control_start(struct intrfs *fs);
void control_stop(struct intrfs *fs);
/* tasks --table and stats --table, for kill -USR1. */
void control_dump(struct intrfs *fs, FILE *f);
/* The policy new requests get: a region API policy's name, or "linux". */
const char *control_policy_name(struct intrfs *fs);

/* unsure.c: names an op in flight, or one that failed, may change */
void unsure_init(struct intrfs *fs);
void unsure_destroy(struct intrfs *fs);
/* The op on dir/name starts; false: out of memory (then no doubt kept). */
bool unsure_begin(struct intrfs *fs, fuse_ino_t dir, const char *name);
/* It ended; grace_ns: how long the name stays in doubt (0: succeeded). */
void unsure_end(struct intrfs *fs, fuse_ino_t dir, const char *name,
		uint64_t grace_ns);
uint64_t unsure_gen(struct intrfs *fs);
/*
 * Whether an entry for dir/name found now must not be cached: the name is
 * in doubt (own: ops of the asking job's own on it, not counted), or a
 * doubt ended since since_gen.
 */
bool unsure_name(struct intrfs *fs, fuse_ino_t dir, const char *name,
		 unsigned own, uint64_t since_gen);
/* Entries for j's names are dropped from the kernel: the op failed. */
void job_names_unsure(struct job *j);

/* silly.c: unlink and rename over files still open */
/* Where the daemon's journals are (silly.c's, lockjan.c's). */
#define JOURNAL_DIR "/run/intrfs"
/*
 * The journals' name part for this mount (made once JOURNAL_DIR is): the
 * server's address, its NFS port and a hash of the export, so that two
 * servers on one host, or two exports of one server, never share one.
 * 0, or -errno when JOURNAL_DIR cannot be made.
 */
int journal_key(struct intrfs *fs, char *out, size_t len);
/*
 * REMOVE name in dir, or, when it is a file still open here, RENAME it to
 * a hidden .nfsXXXXXXXXXXXXXXXXXXXXXXXX name that the last close removes.
 */
int silly_unlink(const struct actor *a, struct node *dir, const char *name);
/*
 * Before a rename onto to_dir/to_name: when that name is a file still
 * open here (and not the file being renamed), moves it to a hidden name.
 */
int silly_rename_target(const struct actor *a, struct node *from_dir,
			const char *from_name, struct node *to_dir,
			const char *to_name);
/* The last close of a silly-renamed file: REMOVE its hidden name. */
void silly_remove(struct intrfs *fs, struct node *n, char *name);
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

/* workers.c: jobs and the worker pool */
int workers_start(struct intrfs *fs);
void workers_stop(struct intrfs *fs);
/*
 * Waits up to timeout_s for every job to finish (write-behind among them);
 * true when they have.
 */
bool workers_drain(struct intrfs *fs, unsigned timeout_s);
/*
 * Once the FUSE session ends (the mount is gone: an unmount, an abort
 * through fusectl; or the loop was told to stop), no request can be
 * answered any more, and the jobs still running, those on session threads
 * too, get timeout_s to finish what they owe the server; then every call
 * still waiting is ended (nc_client_shutdown()), so that the jobs end and
 * libfuse's loop, which waits for its threads, returns.  workers_end_watch()
 * starts that watch once mounted; workers_end() tells it the loop returned
 * and joins it: true when every job finished in time (false also when the
 * watch could not start and the jobs did not finish).
 */
int workers_end_watch(struct intrfs *fs, unsigned timeout_s);
bool workers_end(struct intrfs *fs, unsigned timeout_s);
/* Makes a job for req, with its task and credentials. */
struct job *job_new(struct intrfs *fs, fuse_req_t req, const char *op,
		    job_run_fn run, job_reply_fn reply);
/* Has the interrupt path watch j and queues it to a worker. */
void job_submit(struct job *j);
/* A job that fails before it runs: answers rc (-errno) and frees it. */
void job_fail(struct job *j, int rc);
/*
 * Whether the caller is the one to answer j's request: true once, for the
 * worker or the interrupt path, whichever comes first.
 */
bool job_take_answer(struct job *j);
/* Another reference on j, for a caller that holds one already. */
void job_hold(struct job *j);
void job_put(struct job *j);
/*
 * Answers j's request now, from inside run: the caller is done with it, no
 * interrupt reaches the job any more, and run goes on in the background.
 */
void job_reply_early(struct job *j);

/* interrupt.c: interrupt routing */
int intr_start(struct intrfs *fs);
void intr_stop(struct intrfs *fs);
/* Registers the interrupt callback for j and puts it on the watched list. */
void intr_watch(struct job *j);
/*
 * Takes j off the watched list; req_ours (the worker answers) unregisters
 * the callback first, waiting for one that runs.
 */
void intr_unwatch(struct job *j, bool req_ours);
/*
 * The caller's supplementary groups, from the "Groups:" line of its status
 * (what fuse_req_getgroups() reads too, in one pass here).  Returns how
 * many, at most max; 0 when they cannot be read.
 */
unsigned caller_groups(pid_t tid, uint32_t *groups, unsigned max);
/* Whether thread tid is in chmod(2), fchmod(2) or fchmodat(2) now. */
bool caller_in_chmod(pid_t tid);
/*
 * Whether j's caller declared an uninterruptible region that its task's
 * policy enforces: it holds even a fatal signal back, for at most
 * callers_hold_ns().
 */
bool caller_holds_fatal(const struct job *j);

/* callers.c: caller-declared regions */
int callers_start(struct intrfs *fs);
void callers_stop(struct intrfs *fs);
/*
 * The regions thread tid's requests run in now, outermost first (those it
 * inherits from intrfs-region(1), then its own), at most max; how many.
 */
unsigned callers_of(struct intrfs *fs, pid_t tid,
		    const struct region_site **out, unsigned max);
/*
 * The ioctl REGION_CALLER_IOC from thread tid: begins or ends a region of
 * its stack; 0 (ioc->depth set) or -errno (-EINVAL and a log line for an
 * unknown kind or an end that matches no begin).
 */
int callers_ioctl(struct intrfs *fs, pid_t tid, struct region_caller_ioc *ioc);
/* Whether site is a caller's region (its reason, tid and origin shown). */
bool caller_site(const struct region_site *site);
/*
 * How long a caller's uninterruptible region may hold a fatal signal back:
 * caller_hold_max=, or the mount's major timeout.
 */
uint64_t callers_hold_ns(const struct intrfs *fs);
/*
 * Logs a line that user uid's calls caused, "intrfs: " and fmt, unless
 * that user has had CALLER_LOG_BURST lines in the last
 * CALLER_LOG_INTERVAL_S; the first line after such an interval says how
 * many were dropped.  Root's lines are counted apart.
 */
void caller_log(struct callers_state *cs, uid_t uid, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* mountstats.c: the mount as a /proc/self/mountstats entry, to f */
void mountstats_out(struct intrfs *fs, FILE *f);

/* bufpool.c: I/O buffers, reused */
/*
 * len bytes (a write's extent, a read's data) from bp; free with
 * buf_free().  NULL: no memory.
 */
void *buf_alloc(struct bufpool *bp, size_t len);
/* Gives p back to the pool it came from; p may be NULL. */
void buf_free(void *p);
/* Bytes of bp's buffers in use now, headers included. */
size_t buf_busy_bytes(const struct bufpool *bp);
/* The most buf_busy_bytes() has been. */
size_t buf_busy_peak(const struct bufpool *bp);
/*
 * Makes bp ready and starts its trimmer thread, which unmaps what stays
 * idle: 0, or -errno.  bufpool_stop() ends it and unmaps every idle slab
 * (nothing when bufpool_start() never ran); buffers still in use stay
 * mapped until buf_free(), which must not come after it.
 */
int bufpool_start(struct bufpool *bp);
void bufpool_stop(struct bufpool *bp);

/* locks.c: file locks over the server's lock manager (NLM) */
/*
 * At mount: finds the server's lock manager, serves its callbacks, starts
 * the janitor, releases what a dead daemon's journal names.  A server
 * without one is logged: then locks fail with ENOLCK.
 */
int locks_start(struct intrfs *fs);
/* At unmount: what is still held is released, the rest stops. */
void locks_stop(struct intrfs *fs);
/* setlk (j->lock, j->flags: wait), flock (j->flags: the op), getlk. */
int locks_setlk(struct job *j);
int locks_flock(struct job *j);
int locks_getlk(struct job *j);
/*
 * A number for a new open file (its fi->fh), never 0 and never given
 * twice: what its flock() owner and the locks taken through it are known
 * by, so that its RELEASE, whenever it comes, touches no later open file's.
 */
uint64_t locks_open(struct intrfs *fs);
/*
 * Whether POSIX owner `owner` (a FUSE lock_owner) holds locks on n;
 * without waiting.
 */
bool locks_held(struct intrfs *fs, struct node *n, uint64_t owner);
/* A close (FLUSH) of n by owner: its POSIX locks there go. */
void locks_close(struct job *j, struct node *n, uint64_t owner);
/*
 * The last close of open file `file` of n (RELEASE), on the session
 * thread, as it comes: whether the file holds locks, which
 * locks_release() lets go of; lock requests on n that come meanwhile
 * wait for that.  Without waiting.
 */
bool locks_release_begin(struct intrfs *fs, struct node *n, uint64_t file);
/*
 * The locks taken through open file `file` of n go (its flock(), OFD
 * locks, POSIX locks whose FLUSH never came), and nothing else.
 */
void locks_release(struct job *j, struct node *n, uint64_t file);
/*
 * Lock request j's caller has a fatal signal: its lock waits end now,
 * whatever region encloses them (what it queued is cancelled first).
 * With abandoned, the interrupt path answers it now: a lock the server
 * grants it after is given back.  Takes locks.lock.
 */
void locks_killed(struct job *j, bool abandoned);

/* ops.c: the FUSE operations */
extern const struct fuse_lowlevel_ops intrfs_ops;

#endif
