/*
 * What /proc says about a process, for the tests and the benchmarks that
 * stall a server, wait for a caller to be inside a FUSE request, or look
 * for a process's children, its pending signals or its end.  Processes are
 * found by their pid or their parent, never by a name pattern.  Nothing
 * here fails a test: the callers decide what a false means.
 */
#ifndef INTRFS_TEST_PROC_H
#define INTRFS_TEST_PROC_H

#include <stdbool.h>
#include <sys/types.h>

/* True when every thread of pid is stopped (state T in its stat). */
bool proc_threads_stopped(pid_t pid);
/*
 * Sends SIGSTOP to pid and waits until every thread of it has stopped: kill()
 * returns before they have, and a server thread still running would answer
 * a request meant to stay unanswered.  False if kill fails or they have not
 * all stopped within timeout_ms.
 */
bool proc_stop(pid_t pid, unsigned timeout_ms);
/* True while pid sleeps inside a FUSE request (its wchan). */
bool proc_in_fuse(pid_t pid);
/* True while pid sleeps in the kernel's NFS client (an RPC, its pages). */
bool proc_in_kernel_nfs(pid_t pid);
/*
 * /proc/<pid>/<name> into buf (NUL-terminated, at most len - 1 bytes of
 * one read); false when it cannot be opened.
 */
bool proc_read(pid_t pid, const char *name, char *buf, size_t len);
/* True while sig is pending for pid (its thread's or the process's). */
bool proc_signal_pending(pid_t pid, int sig);
/* A kB field of pid's status ("VmRSS", "VmHWM"); 0 when not there. */
unsigned long proc_status_kib(pid_t pid, const char *field);
/* The pids of the live children of parent (at most max); how many. */
unsigned proc_children(pid_t parent, pid_t *out, unsigned max);
/*
 * Whether pid is gone (or a zombie), polling up to timeout_ms; reaps it
 * if it is a child of the caller.
 */
bool proc_gone_within(pid_t pid, unsigned timeout_ms);

/* Whether an intrfs mount sits on dir (/proc/self/mountinfo). */
bool proc_intrfs_mounted(const char *dir);
/*
 * Notes pid where tests/run finds it ($INTRFS_TEST_PIDS, if set), so that
 * a daemon or a netfault a dead test left behind is stopped by its pid.
 */
void proc_note_pid(pid_t pid);
/* The spawned process's own process group: the caller's signals miss it. */
#define PROC_OWN_GROUP 1u
/* SIGTERM when the process that spawned it dies, however that ends. */
#define PROC_PARENT_DEATH 2u
/*
 * Starts bin with argv (NULL-terminated), its stdout on out_fd and its
 * stderr on err_fd (each -1: the caller's), and notes its pid
 * (proc_note_pid).  Its pid, or -1 with errno when it could not fork; a
 * failed exec ends the child with status 127 and a line on its stderr.
 */
pid_t proc_spawn(const char *bin, const char *const *argv, int out_fd,
		 int err_fd, unsigned flags);
/* A loopback TCP port nobody listens on now (0 if none was found). */
unsigned proc_free_port(void);

/*
 * netfault in front of a server: started (bin) on two free loopback ports
 * (*nfs_via, *mount_via) forwarding to host's nfs_port and mount_port,
 * with more arguments (NULL-terminated: --rule, --control, --log...), its
 * stderr in errlog (made anew, O_EXCL: whatever had that name is removed,
 * never written through), in a process group of its own, ended (SIGTERM) when
 * its parent ends, and noted (proc_note_pid).  A port taken between the
 * look for a free one and netfault's bind gets a new pair, up to
 * PROC_NETFAULT_TRIES starts.  Returns its pid once both listeners listen,
 * or -1 with what went wrong (netfault's stderr) in err: no free port, a
 * port taken at every try, or no start within deadline_ms.
 */
#define PROC_NETFAULT_TRIES 3
pid_t proc_netfault_start(const char *bin, const char *host, unsigned nfs_port,
			  unsigned mount_port, const char *const *more,
			  const char *errlog, unsigned deadline_ms,
			  unsigned *nfs_via, unsigned *mount_via, char *err,
			  size_t len);

#endif
