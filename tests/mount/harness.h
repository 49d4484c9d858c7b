/*
 * The mount test harness: the server the suite runs against (testenv.h),
 * intrfs mounts made and unmade per test, the server stalled and resumed
 * (SIGSTOP/SIGCONT on ganesha), what its sockets hold while it is stalled,
 * partitions, a spare server to kill, and child processes that do one
 * filesystem call and report what they saw (the result, errno, how long it
 * took) through a pipe.
 *
 * A test that fails (ASSERT aborts) still unmounts, heals the partition and
 * resumes the server: the harness catches SIGABRT for that.  Without
 * /dev/fuse every mount test is skipped with a message.
 */
#ifndef INTRFS_MOUNT_HARNESS_H
#define INTRFS_MOUNT_HARNESS_H

#include "intrfs/region.h"
#include "proc.h"
#include "test.h"
#include "testenv.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct mnt {
	char dir[256]; /* mount point */
	char local[512]; /* the same directory seen on the export, locally */
	char log[256]; /* the daemon's stderr */
	char opts[800];
	pid_t pid; /* the daemon */
};

/* Reads the server from the environment; skips without /dev/fuse. */
void srv_get(struct test_server *s);
/*
 * The spare server: a second private ganesha (its run directory and ports
 * from the environment tests/run sets) that a test may kill and start
 * again.  spare_start() fills s like srv_get(); spare_restart() kills it
 * with SIGKILL and starts it again on the same ports and export, returning
 * when it answers; spare_stop() stops it.
 */
void spare_start(struct test_server *s);
void spare_restart(struct test_server *s);
void spare_stop(struct test_server *s);
/*
 * Partitions, lifted by net_heal() (an ASSERT lifts them too).
 * net_partition(): nftables drops every packet to and from TCP port, both
 * ways, with no RST.  net_partition_reject(): the client's packets to port
 * are answered with an RST (a connect is refused at once, a connection
 * is reset when it sends), the server's are dropped.
 */
void net_partition(unsigned port);
/*
 * One connection only: the packets of local TCP port local_port to
 * remote_port, and back, are dropped.
 */
void net_block_flow(unsigned local_port, unsigned remote_port);
void net_partition_reject(unsigned port);
/* The connection attempts (SYNs) to port since net_partition_reject(). */
uint64_t net_partition_syns(void);
void net_heal(void);
/*
 * netfault in front of s with one rule (netfault/RULES.md), on free
 * loopback ports: *via is s reached through it, for mnt_start().  Stopped
 * by nf_front_stop(), or when the test aborts.
 */
void nf_front(struct test_server *via, const struct test_server *s,
	      const char *rule);
void nf_front_stop(void);
/*
 * The server as a host of its own (tests/lib/two-hosts): a server host and
 * a client host in network namespaces of this machine (10.77.0.2 and
 * 10.77.0.1).  hosts_up() starts them with a grace period of grace seconds
 * after each start (0: none), fills s, and moves this process, and so every
 * daemon and child it starts after, into the client host's network (its
 * mounts stay in this mount namespace).  hosts_restart() kills the
 * server's ganesha and starts it again (grace as above), and with notify
 * has the server's status monitor tell the clients it recorded, as a
 * rebooted host does.  hosts_down() stops it all and moves back.  An ASSERT
 * stops them too.
 */
void hosts_up(struct test_server *s, unsigned grace);
void hosts_restart(struct test_server *s, unsigned grace, bool notify);
void hosts_down(struct test_server *s);
/* Stops (SIGSTOP) or resumes (SIGCONT) the server. */
void srv_stall(const struct test_server *s);
void srv_resume(const struct test_server *s);
/*
 * The bytes of calls the server has not read yet (its sockets' receive
 * queues): while it is stalled, they grow when a call reaches it.
 */
uint64_t srv_unread(const struct test_server *s);
/*
 * Waits until a call reached the stalled server since it had unread
 * `before` bytes: the request that made it is in the daemon, not only
 * entering the kernel (10 s deadline).
 */
void srv_wait_call(const struct test_server *s, uint64_t before);
/*
 * Waits until the stalled server's receive queues and the clients' send
 * queues are full: they hold bytes and stop growing (10 s deadline).  A
 * write sent after this waits behind them.
 */
void srv_wait_queues_full(const struct test_server *s);

/*
 * Mounts a fresh directory of the export (created empty, mode 0777) with
 * extra options opts ("" for none); waits until mounted, or fails the test
 * with the daemon's log.
 */
void mnt_start(struct mnt *m, const struct test_server *s, const char *opts);
/*
 * A second client: mounts the directory of the export that other mounts,
 * as mnt_start() does.
 */
void mnt_start_shared(struct mnt *m, const struct mnt *other,
		      const struct test_server *s, const char *opts);
/* The daemon refused to mount: returns its exit status, log in buf. */
int mnt_start_fails(struct mnt *m, const struct test_server *s,
		    const char *opts, char *buf, size_t len);
/* Only starts the daemon (m->pid); the test watches its log. */
void mnt_spawn(struct mnt *m, const struct test_server *s, const char *opts);
void mnt_stop(struct mnt *m);
/*
 * The calls of NFS procedure proc ("GETATTR") m's daemon has made, from
 * intrfsctl stats.
 */
uint64_t mnt_proc_ops(const struct mnt *m, const char *proc);
/* The number named name ("io_buffers_peak") in intrfsctl stats' JSON. */
uint64_t mnt_stat(const struct mnt *m, const char *name);
/* The daemon binary (INTRFS_BIN). */
const char *intrfs_bin(void);
/* What the daemon has logged so far. */
void mnt_read_log(const struct mnt *m, char *buf, size_t len);
/* Whether the daemon logs what within ms (its log is then in buf). */
bool mnt_log_within(const struct mnt *m, const char *what, unsigned ms,
		    char *buf, size_t len);
/* Waits up to ms for the daemon to log what; fails the test if it does not. */
void mnt_wait_log(const struct mnt *m, const char *what, unsigned ms);
/*
 * For a failure to say why: has the daemon log its task table and
 * statistics (kill -USR1) and puts the end of its log, the dump included,
 * in buf.
 */
void mnt_dump_tasks(const struct mnt *m, char *buf, size_t len);
/* Paths inside the mount and on the export. */
const char *mpath(const struct mnt *m, const char *rel);
const char *lpath(const struct mnt *m, const char *rel);

/* One call in a child process. */
struct probe_result {
	ssize_t ret; /* what the call returned */
	int err; /* errno when ret < 0 */
	uint64_t ns; /* how long the call took */
	unsigned sigs; /* SIGINTs the handler saw */
	char data[64]; /* the first bytes read, for reads */
};

enum probe_op {
	PROBE_READ, /* open O_DIRECT (unless buffered), read len bytes */
	PROBE_WRITE, /* open, write len bytes of 'w', close */
	PROBE_STAT,
};

struct probe {
	pid_t pid;
	int fd; /* the result pipe */
	int ready_fd; /* the child writes a byte when its file is open */
	int go_fd; /* the parent writes a byte to let it make its call */
};

/*
 * Starts a child that installs a SIGINT handler (no SA_RESTART), opens
 * path, says it is ready and waits for probe_go(), then does op.  uid != 0
 * runs it as that user.
 */
void probe_start(struct probe *p, enum probe_op op, const char *path,
		 size_t len, bool direct, uid_t uid);
/*
 * probe_start() with a caller region (region_caller_begin()) of kind
 * region (0: none) declared on the opened file before the ready byte (for
 * a stat, on its directory).  A region refused is the probe's result:
 * ret -1, err its errno, data "region".
 */
void probe_start_in(struct probe *p, enum probe_op op, const char *path,
		    size_t len, bool direct, uid_t uid, enum region_kind region,
		    const char *reason);
/* Waits for the child's ready byte (its file is open). */
void probe_wait_ready(struct probe *p);
void probe_go(struct probe *p);
/* probe_start + probe_wait_ready + probe_go. */
void probe_run(struct probe *p, enum probe_op op, const char *path, size_t len,
	       bool direct, uid_t uid);
/* Waits until the child is blocked in a FUSE request (10 s deadline). */
void probe_wait_blocked(const struct probe *p);
/* True if the child finished within timeout_ms (result in *r, if any). */
bool probe_wait(struct probe *p, unsigned timeout_ms, struct probe_result *r,
		int *status);
/* Blocked in the kernel waiting on FUSE (its /proc/PID/wchan). */
bool probe_blocked(const struct probe *p);

/* Mounts with attribute caching off (noac), so each check sees the server. */
void mnt_fresh(struct mnt *m, struct test_server *s, const char *extra);

/* A user that is not root, for the credential and permission tests. */
#define USER_UID 1000
#define USER_GID 1000

/*
 * Runs fn(arg) in a child as uid/gid with the given supplementary groups;
 * returns what fn returned (an errno, 0 for success).
 */
int as_user(uid_t uid, gid_t gid, const gid_t *groups, int ngroups,
	    int (*fn)(const char *), const char *arg);

/*
 * Paths.  A test reads the export by path as root, and any client of the
 * server may put links there: a path below a server's export (lpath(),
 * s->export_dir/...) is resolved beneath the export's root
 * (tests/lib/beneath.h), never through a symbolic link, never out of it;
 * any other path (the mount's) as given.  Each returns what the call it
 * stands for returns, -1 with errno (ELOOP for a link met) on failure.
 * The file helpers below use them.
 */
int path_open(const char *path, int flags, mode_t mode);
int path_lstat(const char *path, struct stat *st);
/* Whether path is there (itself: a link is, and is not followed). */
bool path_exists(const char *path);
ssize_t path_readlink(const char *path, char *buf, size_t len);
int path_utimens(const char *path, const struct timespec ts[2]);
/* mkdir, then the mode set whatever the umask. */
int path_mkdir(const char *path, mode_t mode);
/* NULL with errno. */
DIR *path_opendir(const char *path);
/* What errno says, for a message: "a symbolic link (not followed)". */
const char *path_strerror(int err);

/* Files. */
void lstat_ok(const char *path, struct stat *st);
/* The file holds exactly len bytes, those of want. */
void assert_same_bytes(const char *path, const void *want, size_t len);
void write_file(const char *path, const void *buf, size_t len);
/* Reads a whole file; returns its length (-1 on error), malloc'ed *out. */
ssize_t read_file(const char *path, char **out);
void fill_random(void *buf, size_t len, unsigned seed);

#endif
