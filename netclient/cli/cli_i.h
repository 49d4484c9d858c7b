/*
 * Private to intrfs-client: the invocation every command works on, the
 * parsed SERVER:/PATH argument, and what the program's files offer each
 * other.  Nothing here is seen outside the program.
 *
 * The files, top-down:
 *   main.c      command line, --help, the command table, the signal
 *               thread, messages and exit codes
 *   commands.c  stat, rm, mkdir, exports, df
 *   ls.c        ls: reading a directory and the long listing
 *   transfer.c  cat and put, each run in two lanes
 *   lanes.c     the two transfer lanes and their turn-taking
 *   remote.c    SERVER:/PATH arguments, the client, finding a path's handle
 *   localio.c   interruptible reads and writes on the local side
 *   format.c    attributes in human terms: types, modes, times, sizes
 *
 * Every netclient call runs in a task (the main thread's, or the second
 * lane's), inside the region the -o intr mode asks for; no file makes one
 * from any other thread.
 */
#ifndef INTRFS_CLI_I_H
#define INTRFS_CLI_I_H

#include "intrfs/netclient.h"
#include "intrfs/region.h"

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define CLI_REMOTE_PATH_MAX PATH_MAX
/* A host name (HOST_NAME_MAX is 64 on Linux) or a dotted quad. */
#define CLI_SERVER_MAX 256

/* One invocation: the options, the task, the client and the error to show. */
struct cli_run {
	const struct cli_cmd *cmd;
	struct nc_opts opts;
	bool verbose, long_list;
	mode_t umask;
	struct nc_cred cred;
	task_t *task;
	task_t *lane_task; /* the second I/O lane's (cat, put) */
	task_t *beside_task; /* what runs beside the lanes (put's COMMITs) */
	nc_client_t *client;
	struct nc_stats stats_before; /* of clients given up on, for -v */
	const char *what; /* the argument an error is about */
	char err[512]; /* detail for the error message, or "" */
	bool usage_error; /* the failure is a usage error: exit 2 */
	bool stdout_gone; /* stdout's reader went away: exit quietly */
};

struct cli_cmd {
	const char *name;
	const char *args; /* for usage */
	int nargs;
	const char *flags; /* getopt letters the command takes */
	int (*fn)(struct cli_run *r, char **argv);
	const char *help;
};

/* A SERVER:/PATH argument, the path normalised. */
struct cli_remote {
	char server[CLI_SERVER_MAX];
	char path[CLI_REMOTE_PATH_MAX];
	char parent[CLI_REMOTE_PATH_MAX]; /* path without its last component */
	const char *name; /* the last component; NULL for "/" */
};

/* main.c: errors as the user sees them. */

/* Prints a usage error for r's command, marks it exit 2, returns -EINVAL. */
int cli_usage_fail(struct cli_run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Sets the detail shown after strerror() and returns rc. */
int cli_fail_detail(struct cli_run *r, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The commands, each given its arguments after the options. */
int cli_cmd_ls(struct cli_run *r, char **argv);
int cli_cmd_stat(struct cli_run *r, char **argv);
int cli_cmd_cat(struct cli_run *r, char **argv);
int cli_cmd_put(struct cli_run *r, char **argv);
int cli_cmd_rm(struct cli_run *r, char **argv);
int cli_cmd_mkdir(struct cli_run *r, char **argv);
int cli_cmd_exports(struct cli_run *r, char **argv);
int cli_cmd_df(struct cli_run *r, char **argv);

/* remote.c: from an argument to a handle on the server. */

int cli_parse_remote(struct cli_run *r, const char *arg,
		     struct cli_remote *rem);
int cli_need_name(struct cli_run *r, const char *arg,
		  const struct cli_remote *rem);
int cli_client_get(struct cli_run *r, const char *server);
int cli_mount_dir(struct cli_run *r, const char *server, const char *path,
		  struct nc_fh *fh);
int cli_open_path(struct cli_run *r, const struct cli_remote *rem,
		  bool dir_first, struct nc_fh *fh, struct nc_attr *attr);
int cli_open_arg(struct cli_run *r, const char *arg, bool dir_first,
		 struct cli_remote *rem, struct nc_fh *fh,
		 struct nc_attr *attr);
int cli_open_parent(struct cli_run *r, const char *arg, struct cli_remote *rem,
		    struct nc_fh *dir);

/* localio.c: the local side's waits are task waits. */

bool cli_fd_never_blocks(int fd);
int cli_read_full(int fd, bool may_block, void *buf, size_t len, size_t *got);
int cli_write_full(int fd, bool may_block, const void *buf, size_t len);

/* format.c */

const char *cli_type_name(mode_t mode);
void cli_mode_string(mode_t mode, char buf[11]);
void cli_format_time(const struct timespec *ts, const char *fmt, char *buf,
		     size_t len);
void cli_human_size(uint64_t v, char *buf, size_t len);
int cli_width(const char *s, int w);

/* lanes.c: chunk k of a transfer belongs to lane k % CLI_LANES. */

#define CLI_LANES 2

struct cli_lanes {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t turn; /* the chunk whose local I/O may go next */
	uint64_t end; /* chunks at or past this one are not needed */
	int rc; /* the first error; the lanes stop once it is set */
	const char *what; /* what that error is about */
	bool done; /* both lanes have returned */
};

void cli_lanes_fail(struct cli_lanes *l, int rc, const char *what);
bool cli_lanes_wait_turn(struct cli_lanes *l, uint64_t k);
void cli_lanes_pass_turn(struct cli_lanes *l, uint64_t k, bool last);
bool cli_lanes_needed(struct cli_lanes *l, uint64_t k);
int cli_run_lanes(struct cli_run *r, void (*fn)(void *, unsigned),
		  void (*beside)(void *), void *job, struct cli_lanes *l);

#endif /* INTRFS_CLI_I_H */
