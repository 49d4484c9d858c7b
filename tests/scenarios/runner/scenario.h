/*
 * intrfs-scenario: scenario files (tests/scenarios/README.md) parsed into
 * struct scenario, and run against a real mount of a real server through
 * netfault.  parse.c reads the files, work.c is what the workload
 * processes do, rig.c starts and stops what a scenario needs (netfault,
 * the mount, server pauses and restarts, partitions), keep.c keeps what
 * explains a failed one (logs, a stuck daemon's stacks), run.c runs the
 * timeline and checks the outcome, main.c is the command line.
 */
#ifndef INTRFS_SCENARIO_H
#define INTRFS_SCENARIO_H

#include "netrig.h"

#include <intrfs/region.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define SCN_NAME_MAX 160
#define SCN_TEXT_MAX 512
#define SCN_FAULTS_MAX 16
#define SCN_PROCS_MAX 64
#define SCN_ALTS_MAX 6

enum scn_op {
	OP_READ,
	OP_WRITE,
	OP_FSYNC,
	OP_CREATE,
	OP_REMOVE,
	OP_RENAME,
	OP_READDIR,
	OP_MKDIR,
	OP_STAT,
	OP_LOCK,
	OP_COPYUP,
};

/*
 * The calls a workload process makes, by which it reports the one that
 * failed (struct work_report's call, expect call=); scn_call_name() names
 * them.
 */
enum scn_call {
	CALL_OPEN,
	CALL_READ,
	CALL_WRITE,
	CALL_FSYNC,
	CALL_CLOSE,
	CALL_UNLINK,
	CALL_RENAME,
	CALL_OPENDIR,
	CALL_READDIR,
	CALL_CLOSEDIR,
	CALL_MKDIR,
	CALL_STAT,
	CALL_FLOCK,
	CALL_FCNTL,
	CALL_REGION, /* region_caller_begin(), before time 0 */
	CALL_HOLDER, /* lock: the holder process could not take the lock */
	CALL_CHECK, /* lock: whether the lock is held could not be told */
};

enum scn_fault_kind {
	FK_NETFAULT,
	FK_PAUSE,
	FK_RESTART,
	FK_PARTITION_DROP,
	FK_PARTITION_REJECT,
};

enum scn_action {
	ACT_HANDLER, /* a handler, no SA_RESTART */
	ACT_RESTART, /* a handler with SA_RESTART */
	ACT_DEFAULT, /* SIG_DFL */
};

enum scn_state {
	ST_AUTO,
	ST_NEW,
	ST_OLD,
	ST_ANY,
};

/* A time bound: unset, or at most / at least ns. */
struct scn_bound {
	bool set;
	uint64_t ns;
};

struct scn_fault {
	uint64_t at_ns;
	uint64_t for_ns; /* 0: until the workload is over */
	bool has_for;
	enum scn_fault_kind kind;
	char rule[SCN_TEXT_MAX]; /* netfault */
};

/*
 * A result: "ok", "killed", or an errno (positive).  RES_ERRNO_OK and
 * RES_KILLED are below every errno.
 */
#define RES_OK 0
#define RES_KILLED (-1)
#define RES_HUNG (-2)

struct scenario {
	char file[SCN_TEXT_MAX];
	char name[SCN_NAME_MAX];
	char about[SCN_TEXT_MAX];
	char mount[SCN_TEXT_MAX];
	/* The workload runs in an overlayfs whose lower layer is the mount. */
	bool overlay;
	/* workload */
	enum scn_op op;
	uint64_t size, chunk;
	unsigned entries, procs;
	bool direct;
	/* lock: a whole-file flock() rather than fcntl(F_SETLKW) */
	bool flock;
	uint64_t hold_ns; /* lock: how long past time 0 the holder keeps it */
	/* copyup: upper and work directories on the intrfs mount, not local */
	bool upper_intrfs;
	/*
	 * A caller region each process declares on the intrfs mount before
	 * time 0 (region_caller_begin()), lasting until it ends.
	 */
	bool has_region;
	enum region_kind region_kind;
	char region_reason[REGION_CALLER_REASON_MAX];
	/* faults */
	struct scn_fault faults[SCN_FAULTS_MAX];
	unsigned nfaults;
	/* signal: sig 0 is none */
	int sig;
	enum scn_action action;
	uint64_t sig_at_ns, every_ns;
	bool when_blocked;
	/* expectations */
	int results[SCN_ALTS_MAX]; /* RES_OK, RES_KILLED or an errno */
	unsigned nresults;
	/* The call that failed ("none": none did; a signal's name: killed). */
	char calls[SCN_ALTS_MAX][16];
	unsigned ncalls;
	struct scn_bound latency_max, latency_min, elapsed_max, elapsed_min;
	bool resets_eq_set, resets_min_set, resets_max_set;
	unsigned resets_eq, resets_min, resets_max;
	enum scn_state export_state;
	bool data_any;
	uint64_t timeout_ns;
};

/*
 * Parses path into s.  On a mistake, prints FILE:LINE:COL: message, the
 * line and a caret to err, and returns -1.
 */
int scn_parse_file(const char *path, struct scenario *s, FILE *err);
/* Parses text (a whole file's contents) named path. */
int scn_parse_text(const char *path, const char *text, struct scenario *s,
		   FILE *err);
/* Copies src into dst of len bytes, cut to fit, always terminated. */
void scn_copy(char *dst, size_t len, const char *src);
/* Writes s back in canonical form. */
void scn_print(const struct scenario *s, FILE *out);

const char *scn_op_name(enum scn_op op);
const char *scn_call_name(enum scn_call call);
/* "killable" or "uninterruptible". */
const char *scn_region_kind_name(enum region_kind kind);
const char *scn_state_name(enum scn_state st);
/* "ok", "killed", "hung" or the errno's name ("EINTR"). */
const char *scn_result_name(int res);
/* The errno of a name ("EINTR"), or 0. */
int scn_errno_of(const char *name);
/* "SIGINT" for SIGINT; "SIG%d" otherwise. */
const char *scn_signal_name(int sig);
/* Formats ns as "1.503s" or "250ms"-like text for the result line. */
void scn_format_duration(uint64_t ns, char *buf, size_t len);

/* What one workload process reports through its pipe at its end. */
struct work_report {
	int result; /* RES_OK or an errno */
	char call[16]; /* the call that failed: "open", "write"... */
	uint64_t end_ns; /* CLOCK_MONOTONIC at its end */
	unsigned sigs; /* signals its handler saw */
	bool data_ok; /* what it read was right (read, readdir, stat) */
	uint64_t done; /* bytes (or entries) it got through */
	/* lock: whether it held the lock once its call returned */
	bool lock_held;
};

/*
 * Where a workload process works: dir holds its files (the mount, or the
 * overlay's merged directory); mnt is the intrfs mount it declares its
 * region on (NULL: none is declared, as under the kernel's client); upper
 * and work are copyup's directories.
 */
struct work_dirs {
	const char *dir;
	const char *mnt;
	const char *upper, *work;
	/* The kernel's client on a kernel with regions: prctl(PR_REGION). */
	bool kernel_regions;
};

/* Whether this kernel has regions held from user space (PR_REGION). */
bool work_kernel_has_regions(void);

/* The files of process k, relative to the scenario's directory. */
void work_names(const struct scenario *s, unsigned k, char *a, char *b,
		size_t len);
/* The old (k's prepared) and new (k's written) byte at offset off. */
unsigned char work_old_byte(unsigned k, uint64_t off);
unsigned char work_new_byte(unsigned k, uint64_t off);
/*
 * A lock workload's state: "new" when process k held the lock once its
 * call returned, "old" when it did not; checked against want as
 * work_check() does.
 */
const char *work_lock_state(const struct work_report *rep, enum scn_state want,
			    char *buf, size_t len, const char **seen);
/*
 * A directory the runner prepares or checks as root, by name: every name
 * below it is resolved beneath fd (tests/lib/beneath.h), never through a
 * link a client of the server planted; path is for messages.
 */
struct work_at {
	int fd;
	const char *path;
};

/*
 * Prepares process k's old state below dir (the export, seen locally):
 * its files made anew (O_EXCL); for copyup with upper=intrfs, process 0
 * makes the empty upper/ and work/ there too.  0, or -1 with errno.
 */
int work_prepare(const struct scenario *s, const struct work_at *dir,
		 unsigned k);
/* Makes base/upper and base/work, empty, for copyup; -1 with errno. */
int work_copyup_dirs(const struct work_at *base);
/*
 * The child's body: installs the signal action, declares its region,
 * gets ready in d (opens what it needs), writes a byte to ready_fd, waits
 * for a byte on go_fd, runs the op and writes a struct work_report to
 * report_fd.  Never returns.
 */
void work_child(const struct scenario *s, const struct work_dirs *d, unsigned k,
		int ready_fd, int go_fd, int report_fd);
/*
 * Checks process k's files below dir (the export) against want (ST_NEW,
 * ST_OLD or ST_ANY); returns the state found ("new", "old", "mixed" for a
 * write partly done, which passes ST_ANY) or NULL with why in buf.  *seen
 * is the state found even when it is not the one wanted, NULL when the
 * export is in none of them (torn, missing, at two places, a link).
 */
const char *work_check(const struct scenario *s, const struct work_at *dir,
		       unsigned k, enum scn_state want, char *buf, size_t len,
		       const char **seen);

/*
 * Checks what process k's copy-up left: the lower file below dir (the
 * export) unchanged, and upper and work (as the check sees them: locally,
 * or the export's) against want, as work_check() does: "new" when upper
 * holds the final file with the lower file's bytes and nothing else of
 * k's, "old" when it holds nothing of k's.  *work_left counts k's
 * temporaries left in work, which only a killed process may leave.
 */
const char *
work_copyup_check(const struct scenario *s, const struct work_at *dir,
		  const struct work_at *upper, const struct work_at *work,
		  unsigned k, enum scn_state want, bool killed, char *buf,
		  size_t len, const char **seen, unsigned *work_left);

/* The rig: what a scenario runs against. */
struct rig_server {
	char host[64];
	char export_dir[SCN_TEXT_MAX]; /* the export, a local directory */
	unsigned nfs_port, mount_port, nlm_port, rquota_port;
	char run_dir[SCN_TEXT_MAX]; /* "" without --server-dir */
	pid_t pid; /* ganesha; 0 without --server-dir */
};

struct rig_paths {
	char intrfs[SCN_TEXT_MAX];
	char netfault[SCN_TEXT_MAX];
	char scripts[SCN_TEXT_MAX];
};

struct rig {
	const struct rig_server *srv;
	const struct rig_paths *paths;
	bool verbose;
	/* The kernel's NFS client mounts, not intrfs (the oracle). */
	bool kernel;
	/* ... on a kernel with PR_REGION: a region line is held with it. */
	bool kernel_regions;
	char kernel_opts[SCN_TEXT_MAX * 3 + 256]; /* what mount(2) got */
	char dropped[SCN_TEXT_MAX]; /* options the kernel does not have */
	/*
	 * Every file of the run (netfault's socket and logs, mount points
	 * and their logs, overlay layers), in a directory made for the run
	 * (mkdtemp, 0700) and removed at its end: the runner is root, and a
	 * name of its own in a shared directory could be planted there.
	 */
	char run_dir[96];
	unsigned seq; /* the last mount point or overlay made in it */
	/*
	 * Where a failed scenario's logs are kept, a directory of its own
	 * per scenario: --out, else one made at the first failure
	 * ($TMPDIR/intrfs-scn-failed.XXXXXX); out_fd -1 until then.
	 */
	char out_dir[SCN_TEXT_MAX];
	int out_fd;
	/*
	 * The scenario running (rig_cell_begin()), and its directory in
	 * out_dir once something was kept there ("" and -1 until then).
	 */
	const char *cell_name;
	unsigned cell_seq;
	char cell_dir[SCN_TEXT_MAX + SCN_NAME_MAX + 16];
	int cell_fd;
	/* netfault */
	pid_t nf_pid;
	unsigned nf_nfs_port, nf_mount_port;
	unsigned nf_nlm_port; /* 0: the server's NLM port is not known */
	char nf_sock[128], nf_log[128];
	/* the mount */
	char sub[64]; /* the scenario's directory, below the export */
	char local[SCN_TEXT_MAX + 80]; /* that directory, seen locally */
	int dir_fd; /* that directory (O_PATH), opened beneath the export */
	char mnt[128]; /* the mount point */
	char mnt_log[160]; /* the daemon's log, kept until rig_cell_end() */
	/* The daemon's first hung-task report (its watchdog, hung_timeout=),
	 * kept from the log before the log goes; "" if none. */
	char hung[1024];
	/*
	 * How long the daemon took to exit after its unmount (ms), for
	 * the JSON; -1 when there was none (the kernel's client, no mount).
	 */
	long long exit_ms;
	/* copyup, upper=local: upper/ and work/ in cu; "" if none */
	char cu[128];
	/* overlay: upper/, work/ and merged/ in ovl; merged is mounted */
	char ovl[128];
	bool ovl_mounted;
	pid_t daemon;
	/* faults in force */
	bool paused, down;
	struct netrig_partition part; /* table intrfs_scn_PID */
};

/*
 * An overlayfs on r->ovl/merged with the intrfs mount as its lower layer
 * and upper and work directories on the local disk; 0 or -1 (why in err).
 * rig_overlay_umount() takes it down (before rig_umount()).
 */
int rig_overlay_mount(struct rig *r, char *err, size_t len);
void rig_overlay_umount(struct rig *r);
/*
 * copyup's local upper and work directories, r->cu/upper and r->cu/work,
 * made empty in the run's directory; 0 or -1 (why in err).
 * rig_copyup_remove() removes them with what is in them.
 */
int rig_copyup_make(struct rig *r, char *err, size_t len);
void rig_copyup_remove(struct rig *r);
/* Where the workload runs: the overlay's merged directory, or the mount. */
const char *rig_work_dir(const struct rig *r, char *buf, size_t len);

/*
 * The run's directory: $TMPDIR (or /tmp)/intrfs-scn.XXXXXX, made 0700;
 * 0 or -1 (why in err).  rig_run_dir_remove() removes it, empty, at the
 * end of the run.
 */
int rig_run_dir_make(struct rig *r, char *err, size_t len);
void rig_run_dir_remove(struct rig *r);

/* Reads RUN_DIR/instance.env of a start-server instance. */
int rig_server_from_dir(struct rig_server *srv, const char *run_dir, char *err,
			size_t len);
/* Starts netfault on two free loopback ports; 0 or -1 (why in err). */
int rig_netfault_start(struct rig *r, char *err, size_t len);
void rig_netfault_stop(struct rig *r);
/*
 * One request to netfault's control socket (netrig_ask()); its answer
 * line in ans.  Returns 0 when the answer says ok.
 */
int rig_netfault_ask(struct rig *r, const char *req, char *ans, size_t len);
/*
 * Makes the scenario's directory on the export (0777, O_EXCL: made anew,
 * beneath the export's root) and opens it (r->dir_fd).  rig_dir_remove()
 * removes it with what is in it, never through a link; rig_dir_close()
 * closes it, kept.
 */
int rig_dir_make(struct rig *r, unsigned seq, char *err, size_t len);
void rig_dir_remove(struct rig *r);
void rig_dir_close(struct rig *r);
/* Mounts the scenario's directory through netfault with opts. */
int rig_mount(struct rig *r, const char *opts, char *err, size_t len);
/*
 * Unmounts; 0, or -1 when the daemon had to be killed: before the kill,
 * its task table (kill -USR1, into its log) and every thread's stack,
 * kernel and user side, go to stacks.txt in the scenario's directory of
 * kept logs, which err names.
 */
int rig_umount(struct rig *r, char *err, size_t len);
/*
 * The daemon pid has not exited waited_ms after its unmount (keep.c): its
 * task table into its log (kill -USR1), then every thread's stack into
 * stacks.txt in the scenario's directory of kept logs; where says where,
 * or why they could not be kept.  The caller kills it after.
 */
void rig_keep_stacks(struct rig *r, pid_t pid, unsigned waited_ms, char *where,
		     size_t len);
/*
 * The output directory for failed scenarios' logs (--out): made 0700 when
 * it is not there; one that is there must be a directory of this uid's
 * that nobody else may write in, and not a symbolic link.  0 or -1 (why
 * in err).  Without it, the first failure makes one in $TMPDIR.
 */
int rig_out_open(struct rig *r, const char *dir, char *err, size_t len);
/*
 * A scenario starts (its name, its number in the run) and ends: at the
 * end, a failed one's logs (the daemon's, netfault's) are copied into its
 * directory of kept logs, whose path goes to kept (else ""), and the
 * run's copies are removed.
 */
void rig_cell_begin(struct rig *r, const char *name, unsigned seq);
void rig_cell_end(struct rig *r, bool failed, char *kept, size_t len);
/* Server faults; each 0 or -1 with why in err. */
int rig_pause(struct rig *r, char *err, size_t len);
void rig_resume(struct rig *r);
int rig_kill_server(struct rig *r, char *err, size_t len);
int rig_start_server(struct rig *r, char *err, size_t len);
int rig_partition(struct rig *r, bool reject, char *err, size_t len);
void rig_heal(struct rig *r);
/* Lifts every fault in force (the rules, a pause, a partition, a kill). */
void rig_lift_all(struct rig *r);
/* For a signal handler: undoes what can be undone with no allocation. */
void rig_emergency(struct rig *r);

/* Runs one scenario; prints its line, appends its JSON; true if passed. */
bool run_scenario(const struct scenario *s, struct rig *r,
		  const char *extra_opts, FILE *json, bool keep, unsigned seq);

/* The rig of the scenario running now, for the signal handler. */
extern struct rig *run_current_rig;

#endif
