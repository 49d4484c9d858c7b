/*
 * The mount test harness: the server the suite runs against (from the
 * environment tests/run sets), intrfs mounts made and unmade per test, the
 * server stalled and resumed (SIGSTOP/SIGCONT on ganesha), and child
 * processes that do one filesystem call and report what they saw (the
 * result, errno, how long it took) through a pipe.
 *
 * A test that fails (ASSERT aborts) still unmounts and resumes the server:
 * the harness catches SIGABRT for that.  Without /dev/fuse every mount test
 * is skipped with a message.
 */
#ifndef INTRFS_MOUNT_HARNESS_H
#define INTRFS_MOUNT_HARNESS_H

#include "test.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct srv {
	const char *server; /* 127.0.0.1 */
	const char *export_dir; /* the exported directory, local path */
	unsigned nfs_port, mount_port;
	pid_t ganesha;
	const char *intrfs; /* the daemon binary */
};

struct mnt {
	char dir[256]; /* mount point */
	char local[512]; /* the same directory seen on the export, locally */
	char log[256]; /* the daemon's stderr */
	char opts[800];
	pid_t pid; /* the daemon */
};

/* Reads the server from the environment; skips without /dev/fuse. */
void srv_get(struct srv *s);
/*
 * The spare server: a second private ganesha (its run directory and ports
 * from the environment tests/run sets) that a test may kill and start
 * again.  spare_start() fills s like srv_get(); spare_restart() kills it
 * with SIGKILL and starts it again on the same ports and export, returning
 * when it answers; spare_stop() stops it.
 */
void spare_start(struct srv *s);
void spare_restart(struct srv *s);
void spare_stop(struct srv *s);
/*
 * A partition: nftables drops every packet to and from TCP port, both
 * ways, with no RST (net_heal() lifts it; an ASSERT lifts it too).
 */
void net_partition(unsigned port);
void net_heal(void);
/* Stops (SIGSTOP) or resumes (SIGCONT) the server. */
void srv_stall(const struct srv *s);
void srv_resume(const struct srv *s);

/*
 * Mounts a fresh directory of the export (created empty, mode 0777) with
 * extra options opts ("" for none); waits until mounted, or fails the test
 * with the daemon's log.
 */
void mnt_start(struct mnt *m, const struct srv *s, const char *opts);
/* The daemon refused to mount: returns its exit status, log in buf. */
int mnt_start_fails(struct mnt *m, const struct srv *s, const char *opts,
		    char *buf, size_t len);
/* Only starts the daemon (m->pid); the test watches its log. */
void mnt_spawn(struct mnt *m, const struct srv *s, const char *opts);
void mnt_stop(struct mnt *m);
/* The pids of the live children of parent (at most max); how many. */
unsigned children_of(pid_t parent, pid_t *out, unsigned max);
/* Whether pid is gone (or a zombie), polling up to timeout_ms. */
bool proc_gone_within(pid_t pid, unsigned timeout_ms);
/* What the daemon has logged so far. */
void mnt_read_log(const struct mnt *m, char *buf, size_t len);
/* Waits up to ms for the daemon to log what; fails the test if it does not. */
void mnt_wait_log(const struct mnt *m, const char *what, unsigned ms);
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
void mnt_fresh(struct mnt *m, struct srv *s, const char *extra);

/* A user that is not root, for the credential and permission tests. */
#define USER_UID 1000
#define USER_GID 1000

/*
 * Runs fn(arg) in a child as uid/gid with the given supplementary groups;
 * returns what fn returned (an errno, 0 for success).
 */
int as_user(uid_t uid, gid_t gid, const gid_t *groups, int ngroups,
	    int (*fn)(const char *), const char *arg);

/* Files. */
void lstat_ok(const char *path, struct stat *st);
/* The file holds exactly len bytes, those of want. */
void assert_same_bytes(const char *path, const void *want, size_t len);
void write_file(const char *path, const void *buf, size_t len);
/* Reads a whole file; returns its length (-1 on error), malloc'ed *out. */
ssize_t read_file(const char *path, char **out);
void fill_random(void *buf, size_t len, unsigned seed);

#endif
