/*
 * The test rigs' mount side, one copy for the mount tests, the scenario
 * runner and the benchmarks' C tools: a server a script started (what
 * start-server, two-hosts and instance.env say as KEY=VALUE lines), an
 * intrfs daemon started in the foreground on a mount point, the wait for
 * its mount, its unmount and reaping, and the tail of its log.  Nothing
 * here asserts: each call returns what happened, and its caller decides
 * (the mount tests fail the test, the runner fails the scenario).
 */
#ifndef INTRFS_TEST_MNTRIG_H
#define INTRFS_TEST_MNTRIG_H

#include "proc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What a server's scripts say of it. */
struct srvrig {
	pid_t pid; /* pid= */
	char host[64]; /* server= */
	char export_dir[512]; /* export= */
	char client_netns[512]; /* client_netns= (two-hosts) */
	unsigned nfs_port, mount_port, nlm_port, rquota_port; /* *_port= */
};

/* One KEY=VALUE line into s: true when KEY is one of a server's. */
bool srvrig_line(struct srvrig *s, const char *line);
/*
 * Runs cmd (a shell command line, its stderr joined to its stdout) and
 * reads its lines into s; a line that is not a server's goes to other
 * (NULL: dropped).  The command's exit status, or -1 (errno) when it could
 * not be run.
 */
int srvrig_run(struct srvrig *s, const char *cmd,
	       void (*other)(const char *line));
/* The lines of a file (a run directory's instance.env): 0 or -errno. */
int srvrig_read(struct srvrig *s, const char *path);

/*
 * flags: PROC_OWN_GROUP (proc.h), the caller's signals never reach it;
 * PROC_PARENT_DEATH, SIGTERM (a clean unmount) when its starter dies.
 */

/*
 * Starts `bin -f source dir -o opts` with its stdout and stderr in log
 * (made empty, or made 0644; never through a symbolic link), and notes its pid
 * for tests/run (proc_note_pid).  Its pid, or -1 with why in err.
 */
pid_t mntrig_spawn(const char *bin, const char *source, const char *dir,
		   const char *opts, const char *log, unsigned flags, char *err,
		   size_t len);
/*
 * Waits until an intrfs mount sits on dir: 0.  1 when the daemon exited
 * first (reaped, its wait status in *status); -1 when deadline_ms passed
 * (the daemon still runs: the caller kills it or waits on).
 */
int mntrig_wait(pid_t pid, const char *dir, unsigned deadline_ms, int *status);
/*
 * Unmounts dir (detached when it is busy) and reaps its daemon pid (none
 * when pid <= 0) within deadline_ms: 0.  -1 when the daemon did not exit
 * by then: it is killed, reaped and its mount detached.
 */
int mntrig_stop(const char *dir, pid_t pid, unsigned deadline_ms);
/*
 * mntrig_stop() in two steps, for a caller that looks at a daemon that
 * did not exit before it kills it: mntrig_unmount() unmounts and reaps
 * as mntrig_stop() does, but returns -1 with the daemon still running;
 * mntrig_kill() kills it, reaps it and detaches its mount.
 */
int mntrig_unmount(const char *dir, pid_t pid, unsigned deadline_ms);
void mntrig_kill(const char *dir, pid_t pid);
/*
 * The FUSE connection of the intrfs mount on dir, as
 * /sys/fs/fuse/connections names it (the minor of its device): 0 when
 * there is no such mount.
 */
unsigned mntrig_connection(const char *dir);
/*
 * Aborts FUSE connection conn, as umount -f cannot once its daemon is
 * dying: every request waiting on it ends.  fusectl is mounted for the
 * time it takes when it is not.  0 or -errno.
 */
int mntrig_abort(unsigned conn);
/*
 * The last len - 1 bytes of the file at path into buf, NUL-terminated
 * (empty when it cannot be read); its size in *size unless size is NULL.
 */
void mntrig_log_tail(const char *path, char *buf, size_t len, off_t *size);
/*
 * Ends a child the rig started (netfault): SIGTERM, then SIGKILL when it
 * has not gone within grace_ms; reaped either way.
 */
void mntrig_end_child(pid_t pid, unsigned grace_ms);

/* Milliseconds on the monotonic clock. */
uint64_t mntrig_now_ms(void);

#endif
