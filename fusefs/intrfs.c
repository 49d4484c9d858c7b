/*
 * intrfs: the daemon.  Parses the command line and the mount options (nfs(5)
 * names through netclient, the daemon's own here, FUSE's passed through),
 * mounts the NFS export (MNT, FSINFO) in a task, mounts the FUSE filesystem,
 * starts the workers, the fatal-signal watcher and the hung-task watchdog,
 * and runs the libfuse session loop until unmounted.
 *
 * Without -f it forks first and the parent waits until the child reports
 * that both mounts worked, so that an error reaches the terminal and the
 * exit status of mount(8); the child then logs to logfile= or to syslog.
 */
#include "fusefs_i.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#define PROG "intrfs"

/* nfs(5) defaults, in seconds. */
#define AC_REGMIN 3
#define AC_REGMAX 60
#define AC_DIRMIN 30
#define AC_DIRMAX 60
#define HUNG_TIMEOUT 120
#define MAX_WORKERS 512
#define WBUF_MB 64
/* How long an unmount waits for requests still in progress. */
#define UNMOUNT_DRAIN_S 10

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG
		" SERVER:/PATH MOUNTPOINT [-o OPTIONS] [-f] [-d]\n"
		"\n"
		"Mounts the NFSv3 export PATH of SERVER on MOUNTPOINT through "
		"FUSE.  Each request\nruns as a task in the region its mount "
		"mode asks for; signals become interrupts.\n"
		"\n"
		"  -o OPTIONS     comma-separated, as below (may be repeated)\n"
		"  -f             stay in the foreground, log to stderr\n"
		"  -d             debug: foreground, and libfuse prints every "
		"request\n"
		"  -h, --help     this help\n"
		"  -V, --version  the version\n"
		"\n"
		"NFS options (nfs(5) names):\n"
		"  hard (default) | soft | softerr   retry forever, or fail with "
		"EIO / ETIMEDOUT\n"
		"  timeo=N        deciseconds before the first retransmission "
		"(600)\n"
		"  retrans=N      retransmissions before a major timeout (2)\n"
		"  rsize=N, wsize=N  caps on READ/WRITE size (the server's "
		"choice, at most 1 MiB)\n"
		"  port=N, mountport=N  NFS and MOUNT ports (0: ask rpcbind)\n"
		"  retry=N        minutes a hard mount keeps trying to reach the "
		"server (2)\n"
		"  actimeo=N, acregmin=N, acregmax=N, acdirmin=N, acdirmax=N, "
		"noac\n"
		"                 attribute cache times in seconds (3/60/30/60)\n"
		"  lookupcache=all|positive|none  cache negative lookups or not\n"
		"  vers=3, proto=tcp  the only ones there are\n"
		"\n"
		"Interruptibility (intrfs gives them their historic meaning):\n"
		"  killable (default)  Ctrl-C waits for the server, kill -9 "
		"ends the call\n"
		"  intr           any signal ends the call with EINTR\n"
		"  nointr         nothing ends the call; the watchdog reports it\n"
		"  policy=region|percall|sigmask   how regions are enforced "
		"(region)\n"
		"  hung_timeout=N seconds before the watchdog reports a task "
		"blocked\n"
		"                 uninterruptibly (120; 0: off)\n"
		"  direct_io      every open bypasses the page cache (reads "
		"become\n"
		"                 interruptible; O_DIRECT does it per open)\n"
		"\n"
		"Daemon:\n"
		"  slots=N        NFS calls in flight on the connection (64)\n"
		"  max_workers=N  requests served at once (512)\n"
		"  wbuf=N         MiB of uncommitted writes kept per file before "
		"a COMMIT; four\n"
		"                 times that for the whole mount (64)\n"
		"  logfile=PATH   where the daemon logs (see Logs below)\n"
		"\n"
		"FUSE and mount options passed on: allow_other, "
		"default_permissions,\nauto_unmount, ro, rw, [no]suid, [no]dev, "
		"[no]exec, [no]atime, relatime, sync,\nasync, dirsync, "
		"fsname=, subtype=; ignored: defaults, [no]auto, [no]user,\n"
		"users, _netdev, nofail, x-*.\n"
		"\n"
		"kill -USR1 on the daemon logs every task: its wait, its "
		"pending interrupts\nand its region stack.\n"
		"\n"
		"Logs: with -f or -d, stderr.  Otherwise logfile=PATH; else "
		"syslog (daemon\nfacility) when /dev/log takes messages; else "
		"the stderr intrfs was started\nwith (mount's, or the "
		"terminal's).\n");
}

/* Options the daemon takes (netclient hands them over). */

struct opt_ctx {
	struct intrfs *fs;
	char fuse_opts[1024];
	bool fsname_set;
};

static const char *const fuse_flags[] = {
	"allow_other",	"default_permissions",
	"auto_unmount", "ro",
	"rw",		"suid",
	"nosuid",	"dev",
	"nodev",	"exec",
	"noexec",	"async",
	"sync",		"dirsync",
	"atime",	"noatime",
	"diratime",	"nodiratime",
	"relatime",	"norelatime",
	"strictatime",	"nostrictatime",
	"lazytime",	"nolazytime",
};

static const char *const fuse_valued[] = { "fsname", "subtype", "max_read" };

static const char *const ignored[] = {
	"defaults", "auto",  "noauto",	"user",	  "nouser",
	"users",    "owner", "_netdev", "nofail", "comment",
};

static bool in(const char *key, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(key, list[i]) == 0)
			return true;
	return false;
}

#define IN(key, list) in((key), (list), sizeof(list) / sizeof((list)[0]))

static int add_fuse_opt(struct opt_ctx *c, const char *key, const char *val,
			char *err, size_t errlen)
{
	size_t len = strlen(c->fuse_opts);
	int n = snprintf(c->fuse_opts + len, sizeof(c->fuse_opts) - len,
			 "%s%s%s%s", len ? "," : "", key, val ? "=" : "",
			 val ? val : "");

	if (n < 0 || (size_t)n >= sizeof(c->fuse_opts) - len) {
		snprintf(err, errlen, "too many FUSE options");
		return -EINVAL;
	}
	return 0;
}

static int parse_seconds(const char *key, const char *val, double *out,
			 char *err, size_t errlen)
{
	char *end;
	double v;

	if (!val || !*val) {
		snprintf(err, errlen, "option '%s' needs a number of seconds",
			 key);
		return -EINVAL;
	}
	errno = 0;
	v = strtod(val, &end);
	if (errno || *end || v < 0 || v > 86400) {
		snprintf(err, errlen,
			 "option '%s' needs a number of seconds between 0 and "
			 "86400, not '%s'",
			 key, val);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int parse_count(const char *key, const char *val, unsigned min,
		       unsigned max, unsigned *out, char *err, size_t errlen)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = val && *val ? strtoul(val, &end, 10) : 0;
	if (!val || !*val || errno || *end || v < min || v > max) {
		snprintf(err, errlen,
			 "option '%s' needs a number between %u and %u, not "
			 "'%s'",
			 key, min, max, val ? val : "");
		return -EINVAL;
	}
	*out = (unsigned)v;
	return 0;
}

static int flag_only(const char *key, const char *val, char *err, size_t errlen)
{
	if (val) {
		snprintf(err, errlen, "option '%s' takes no value", key);
		return -EINVAL;
	}
	return 0;
}

/* netclient's callback: 0 taken, 1 unknown, -EINVAL with err set. */
static int fs_option(const char *key, const char *val, void *arg, char *err,
		     size_t errlen)
{
	struct opt_ctx *c = arg;
	struct fs_opts *o = &c->fs->o;
	unsigned n;
	int rc;

	if (strcmp(key, "direct_io") == 0) {
		o->direct_io = true;
		return flag_only(key, val, err, errlen);
	}
	if (strcmp(key, "noac") == 0) {
		o->acregmin = o->acregmax = o->acdirmin = o->acdirmax = 0;
		o->neg_timeout = 0;
		return flag_only(key, val, err, errlen);
	}
	if (strcmp(key, "actimeo") == 0) {
		double v;

		rc = parse_seconds(key, val, &v, err, errlen);
		o->acregmin = o->acregmax = o->acdirmin = o->acdirmax = v;
		o->neg_timeout = v;
		return rc;
	}
	if (strcmp(key, "acregmin") == 0)
		return parse_seconds(key, val, &o->acregmin, err, errlen);
	if (strcmp(key, "acregmax") == 0)
		return parse_seconds(key, val, &o->acregmax, err, errlen);
	if (strcmp(key, "acdirmin") == 0) {
		rc = parse_seconds(key, val, &o->acdirmin, err, errlen);
		o->neg_timeout = o->acdirmin;
		return rc;
	}
	if (strcmp(key, "acdirmax") == 0)
		return parse_seconds(key, val, &o->acdirmax, err, errlen);
	if (strcmp(key, "lookupcache") == 0) {
		if (val && strcmp(val, "all") == 0)
			o->neg_timeout = o->acdirmin;
		else if (val &&
			 (strcmp(val, "positive") == 0 ||
			  strcmp(val, "pos") == 0 || strcmp(val, "none") == 0))
			o->neg_timeout = 0;
		else {
			snprintf(err, errlen,
				 "option 'lookupcache' is all, positive or "
				 "none, not '%s'",
				 val ? val : "");
			return -EINVAL;
		}
		return 0;
	}
	if (strcmp(key, "hung_timeout") == 0)
		return parse_count(key, val, 0, 86400, &o->hung_timeout, err,
				   errlen);
	if (strcmp(key, "max_workers") == 0)
		return parse_count(key, val, 1, 65536, &o->max_workers, err,
				   errlen);
	if (strcmp(key, "wbuf") == 0) {
		rc = parse_count(key, val, 1, 4096, &n, err, errlen);
		o->wbuf_mb = n;
		return rc;
	}
	if (strcmp(key, "logfile") == 0) {
		if (!val || !*val) {
			snprintf(err, errlen, "option 'logfile' needs a path");
			return -EINVAL;
		}
		free(o->logfile);
		o->logfile = strdup(val);
		return o->logfile ? 0 : -ENOMEM;
	}
	if (strcmp(key, "bg") == 0 || strcmp(key, "fg") == 0) {
		if (strcmp(key, "fg") == 0)
			return flag_only(key, val, err, errlen);
		snprintf(err, errlen,
			 "option 'bg' is not supported: the mount retries in "
			 "the foreground for retry= minutes");
		return -EINVAL;
	}
	if (IN(key, fuse_flags)) {
		rc = flag_only(key, val, err, errlen);
		if (strcmp(key, "allow_other") == 0)
			o->allow_other = true;
		return rc ? rc : add_fuse_opt(c, key, NULL, err, errlen);
	}
	if (IN(key, fuse_valued)) {
		if (!val || !*val) {
			snprintf(err, errlen, "option '%s' needs a value", key);
			return -EINVAL;
		}
		if (strcmp(key, "fsname") == 0)
			c->fsname_set = true;
		return add_fuse_opt(c, key, val, err, errlen);
	}
	if (IN(key, ignored) || strncmp(key, "x-", 2) == 0)
		return 0;
	return 1;
}

/* Logging once the terminal is gone: stderr lines go to syslog. */

static void *syslog_pump(void *arg)
{
	FILE *in = fdopen((int)(intptr_t)arg, "r");
	char line[4096];

	if (!in)
		return NULL;
	while (fgets(line, sizeof(line), in)) {
		size_t n = strlen(line);

		if (n && line[n - 1] == '\n')
			line[n - 1] = '\0';
		syslog(LOG_NOTICE, "%s", line);
	}
	fclose(in);
	return NULL;
}

/* Whether a syslog daemon takes messages on /dev/log. */
static bool syslog_listens(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX,
				  .sun_path = "/dev/log" };
	int types[] = { SOCK_DGRAM, SOCK_STREAM };
	bool ok = false;

	for (unsigned i = 0; i < 2 && !ok; i++) {
		int fd = socket(AF_UNIX, types[i] | SOCK_CLOEXEC, 0);

		if (fd < 0)
			continue;
		ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		close(fd);
	}
	return ok;
}

/*
 * Where the daemon's log lines go once it is in the background: logfile=,
 * else syslog, else (no syslog here: messages would be lost) the stderr it
 * was started with.
 */
static int redirect_logs(const struct intrfs *fs)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (null < 0)
		return -errno;
	dup2(null, 0);
	dup2(null, 1);
	close(null);
	if (fs->o.logfile) {
		int fd = open(fs->o.logfile,
			      O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		if (fd < 0)
			return -errno;
		dup2(fd, 2);
		close(fd);
	} else if (syslog_listens()) {
		pthread_t th;
		int p[2];

		openlog(PROG, LOG_PID, LOG_DAEMON);
		if (pipe(p) < 0)
			return -errno;
		dup2(p[1], 2);
		close(p[1]);
		if (pthread_create(&th, NULL, syslog_pump,
				   (void *)(intptr_t)p[0]) == 0)
			pthread_detach(th);
	} else {
		fprintf(stderr,
			PROG ": no syslog listens on /dev/log: logging to this "
			     "stderr (logfile= names a file)\n");
	}
	setvbuf(stderr, NULL, _IOLBF, 0);
	return 0;
}

/* Daemonizing: the parent waits for the child's verdict. */

static int ready_fd = -1;

static void daemon_start(void)
{
	pid_t pid, parent = getpid();
	int p[2];
	char st = 1;

	if (pipe(p) < 0) {
		perror(PROG ": pipe");
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		perror(PROG ": fork");
		exit(1);
	}
	if (pid > 0) {
		close(p[1]);
		/* 0 from the child means mounted; EOF means it died. */
		if (read(p[0], &st, 1) != 1)
			st = 1;
		_exit(st);
	}
	close(p[0]);
	ready_fd = p[1];
	/*
	 * Until it has mounted, the daemon is the mount command's: when
	 * that dies (Ctrl-C on mount, a timeout killing it), the attempt
	 * ends too (daemon_ready() lets go).
	 */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
		_exit(1);
	setsid();
	if (chdir("/") < 0)
		perror(PROG ": chdir /");
}

static void daemon_ready(char status)
{
	if (ready_fd < 0)
		return;
	prctl(PR_SET_PDEATHSIG, 0);
	if (write(ready_fd, &status, 1) != 1)
		perror(PROG ": telling the parent");
	close(ready_fd);
	ready_fd = -1;
}

/* The command line. */

struct cmdline {
	const char *source, *mountpoint;
	char opts[4096];
	bool foreground, debug;
};

static int append_opts(struct cmdline *cl, const char *o)
{
	size_t len = strlen(cl->opts);
	int n = snprintf(cl->opts + len, sizeof(cl->opts) - len, "%s%s",
			 len ? "," : "", o);

	return n < 0 || (size_t)n >= sizeof(cl->opts) - len ? -1 : 0;
}

static int parse_cmdline(int argc, char **argv, struct cmdline *cl)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(cl, 0, sizeof(*cl));
	/* '+' is not used: mount.fuse3 puts -o after the operands. */
	while ((c = getopt_long(argc, argv, "o:fdhVs", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (append_opts(cl, optarg) < 0) {
				fprintf(stderr, PROG ": options too long\n");
				return 2;
			}
			break;
		case 'f':
			cl->foreground = true;
			break;
		case 'd':
			cl->debug = cl->foreground = true;
			break;
		case 's':
			break; /* single-threaded is never what we want */
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf(PROG " " INTRFS_VERSION "\n");
			exit(0);
		default:
			fprintf(stderr, "Try '" PROG " --help'.\n");
			return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr,
			PROG ": need SERVER:/PATH and MOUNTPOINT (try '" PROG
			     " --help')\n");
		return 2;
	}
	cl->source = argv[optind];
	cl->mountpoint = argv[optind + 1];
	return 0;
}

static int split_source(const char *source, char **server, char **path)
{
	const char *colon = strchr(source, ':');

	if (!colon || colon == source || colon[1] != '/') {
		fprintf(stderr,
			PROG ": '%s' is not SERVER:/PATH (an absolute path on "
			     "the server)\n",
			source);
		return -EINVAL;
	}
	*server = strndup(source, (size_t)(colon - source));
	*path = strdup(colon + 1);
	return *server && *path ? 0 : -ENOMEM;
}

static void fs_defaults(struct intrfs *fs)
{
	nc_opts_init(&fs->nco);
	fs->o.acregmin = AC_REGMIN;
	fs->o.acregmax = AC_REGMAX;
	fs->o.acdirmin = AC_DIRMIN;
	fs->o.acdirmax = AC_DIRMAX;
	fs->o.neg_timeout = AC_DIRMIN;
	fs->o.hung_timeout = HUNG_TIMEOUT;
	fs->o.max_workers = MAX_WORKERS;
	fs->o.wbuf_mb = WBUF_MB;
}

/* Mounts the export in a task of the mount's policy. */
static int nfs_mount(struct intrfs *fs, const char *server, const char *path)
{
	struct task_attr attr = { "mount", fs->nco.policy, NULL };
	struct nc_cred cred;
	char err[512] = "";
	task_t *t;
	int rc;

	rc = nc_client_create(server, &fs->nco, &fs->nc, err, sizeof(err));
	if (rc) {
		fprintf(stderr, PROG ": %s\n", err[0] ? err : strerror(-rc));
		return rc;
	}
	t = task_create(&attr);
	if (!t)
		return -ENOMEM;
	task_enter(t);
	nc_cred_self(&cred);
	rc = nc_client_mount(fs->nc, path, &cred, &fs->root.fh, err,
			     sizeof(err));
	if (rc == 0) {
		/* Who may search the root decides how long entries stay. */
		struct nc_attr a;

		if (nc_getattr(fs->nc, &cred, &fs->root.fh, &a) == 0) {
			fs->root.mode = a.mode;
			fs->root.uid = a.uid;
			fs->root.gid = a.gid;
			fs->root.ctime = a.ctime;
			fs->root.fileid = a.fileid;
		}
	}
	task_leave(t);
	task_put(t);
	if (rc) {
		fprintf(stderr, PROG ": mounting %s: %s\n", fs->source,
			err[0] ? err : strerror(-rc));
		return rc;
	}
	silly_recover(fs);
	return 0;
}

/*
 * kill -USR1 on the daemon prints every task: what it waits on, in which
 * mode, its pending interrupts and its region stack.  SIGUSR1 is blocked in
 * every thread and taken here with sigwait().
 */
static pthread_t dumper;
static atomic_bool dumper_stop;

static int dump_task(const struct task_info *ti, void *arg)
{
	(void)arg;
	fprintf(stderr, "intrfs: task %" PRIu64 " (%s)", ti->id, ti->name);
	if (ti->waiting)
		fprintf(stderr, ": %s wait, %s (as %s), %" PRIu64 " ms",
			ti->wait_what, task_mode_name(ti->wait_mode),
			task_mode_name(ti->wait_eff), ti->wait_ns / 1000000);
	else
		fprintf(stderr, ti->running ? ": running" : ": not running");
	if (ti->pending)
		fprintf(stderr, ", interrupt pending%s for %" PRIu64 " ms",
			ti->deferred ? " (deferred)" : "",
			ti->raised_age_ns / 1000000);
	fputc('\n', stderr);
	for (unsigned i = ti->depth; i-- > 0;) {
		const struct region_site *rs = ti->stack[i].site;

		fprintf(stderr, "intrfs:   %s region \"%s\" at %s:%d (%s)\n",
			rs->kind == REGION_KILLABLE ? "killable" :
						      "uninterruptible",
			rs->reason, rs->file, rs->line, rs->func);
	}
	return 0;
}

static void *dumper_main(void *arg)
{
	sigset_t set;
	int sig;

	(void)arg;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	while (sigwait(&set, &sig) == 0 &&
	       !atomic_load_explicit(&dumper_stop, memory_order_relaxed)) {
		fprintf(stderr, "intrfs: tasks on %s, policy %s:\n",
			nc_client_server(((struct intrfs *)arg)->nc),
			region_policy_name(((struct intrfs *)arg)->nco.policy));
		task_foreach(dump_task, NULL);
		fflush(stderr);
	}
	return NULL;
}

static void block_sigusr1(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

static int run(struct intrfs *fs, const struct cmdline *cl,
	       const struct opt_ctx *oc)
{
	char fuse_opts[1400];
	char *fargv[5];
	int fargc = 0, rc;
	struct fuse_args args;
	struct fuse_loop_config *lc;
	bool drained;

	snprintf(fuse_opts, sizeof(fuse_opts), "%s%ssubtype=intrfs%s%s",
		 oc->fuse_opts, oc->fuse_opts[0] ? "," : "",
		 oc->fsname_set ? "" : ",fsname=",
		 oc->fsname_set ? "" : fs->source);
	fargv[fargc++] = (char *)PROG;
	fargv[fargc++] = (char *)"-o";
	fargv[fargc++] = fuse_opts;
	if (cl->debug)
		fargv[fargc++] = (char *)"-d";
	fargv[fargc] = NULL;
	args = (struct fuse_args)FUSE_ARGS_INIT(fargc, fargv);

	nodes_init(fs);
	fs->se = fuse_session_new(&args, &intrfs_ops, sizeof(intrfs_ops), fs);
	if (!fs->se) {
		fprintf(stderr, PROG ": bad FUSE options '%s'\n", fuse_opts);
		return -EINVAL;
	}
	rc = notify_start(fs);
	if (rc) {
		fprintf(stderr, PROG ": cannot start the notifier: %s\n",
			strerror(-rc));
		goto out_destroy;
	}
	if (fuse_set_signal_handlers(fs->se) < 0) {
		rc = -EIO;
		goto out_notify;
	}
	if (fuse_session_mount(fs->se, fs->mountpoint) < 0) {
		fprintf(stderr, PROG ": cannot mount on %s\n", cl->mountpoint);
		rc = -EIO;
		goto out_signals;
	}
	rc = bufpool_start();
	if (rc == 0)
		rc = workers_start(fs);
	if (rc) {
		fprintf(stderr, PROG ": cannot start workers: %s\n",
			strerror(-rc));
		goto out_unmount;
	}
	if (fs->o.hung_timeout)
		region_watchdog_start((uint64_t)fs->o.hung_timeout *
				      1000000000ull);
	else
		region_watchdog_start(0);

	if (!cl->foreground && redirect_logs(fs) < 0)
		perror(PROG ": logging");
	fprintf(stderr,
		PROG ": mounted %s on %s (export %s, rsize %u, wsize %u, "
		     "policy %s, pid %d)\n",
		fs->source, fs->mountpoint, nc_client_export(fs->nc),
		nc_client_rsize(fs->nc), nc_client_wsize(fs->nc),
		region_policy_name(fs->nco.policy), (int)getpid());
	daemon_ready(0);
	if (pthread_create(&dumper, NULL, dumper_main, fs) != 0)
		dumper = 0;

	lc = fuse_loop_cfg_create();
	fuse_loop_cfg_set_clone_fd(lc, 1);
	fuse_loop_cfg_set_idle_threads(lc, 8);
	rc = fuse_session_loop_mt(fs->se, lc) < 0 ? -EIO : 0;
	fuse_loop_cfg_destroy(lc);

	/*
	 * Unmounted.  Writes already answered are still owed to the server:
	 * give them time, then end every call still waiting.
	 */
	drained = workers_drain(fs, UNMOUNT_DRAIN_S);
	if (!drained)
		fprintf(stderr,
			PROG ": server %s has not answered every request %d s "
			     "after the unmount: giving up on them (written "
			     "data may be lost)\n",
			nc_client_server(fs->nc), UNMOUNT_DRAIN_S);
	silly_cleanup(fs, drained);
	nc_client_shutdown(fs->nc);
	if (dumper) {
		atomic_store(&dumper_stop, true);
		pthread_kill(dumper, SIGUSR1);
		pthread_join(dumper, NULL);
	}
	region_watchdog_stop();
	workers_stop(fs);
out_unmount:
	fuse_session_unmount(fs->se);
out_signals:
	fuse_remove_signal_handlers(fs->se);
out_notify:
	notify_stop(fs);
out_destroy:
	fuse_session_destroy(fs->se);
	fuse_opt_free_args(&args);
	nodes_destroy(fs);
	access_destroy(fs);
	free(fs->silly_journal);
	return rc;
}

int main(int argc, char **argv)
{
	struct intrfs fs;
	struct opt_ctx oc;
	struct cmdline cl;
	char err[512];
	char *server = NULL, *path = NULL;
	struct stat st;
	int rc;

	/*
	 * Reply records of up to 1 MiB live a few milliseconds: kept in the
	 * heap, not mapped and unmapped (page faults and zeroing) each time.
	 * I/O buffers come from bufpool.c; the rest is small, and a few
	 * arenas keep what the many threads free from staying scattered.
	 */
	mallopt(M_MMAP_THRESHOLD, 4 * NC_MAX_IO);
	mallopt(M_TRIM_THRESHOLD, 4 * NC_MAX_IO);
	mallopt(M_ARENA_MAX, 4);

	rc = parse_cmdline(argc, argv, &cl);
	if (rc)
		return rc;
	memset(&fs, 0, sizeof(fs));
	fs_defaults(&fs);
	memset(&oc, 0, sizeof(oc));
	oc.fs = &fs;
	if (nc_opts_parse(&fs.nco, cl.opts, fs_option, &oc, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s\n", err);
		return 2;
	}
	if (split_source(cl.source, &server, &path))
		return 2;
	if (stat(cl.mountpoint, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, PROG ": mount point %s: %s\n", cl.mountpoint,
			errno ? strerror(errno) : "not a directory");
		return 2;
	}
	fs.source = strdup(cl.source);
	/* Absolute: the daemon leaves its working directory. */
	fs.mountpoint = realpath(cl.mountpoint, NULL);
	if (!fs.mountpoint)
		fs.mountpoint = strdup(cl.mountpoint);

	if (!cl.foreground)
		daemon_start();
	block_sigusr1();
	rc = nfs_mount(&fs, server, path);
	if (rc == 0)
		rc = run(&fs, &cl, &oc);
	daemon_ready(1);
	nc_client_destroy(fs.nc);
	free(server);
	free(path);
	free(fs.source);
	free(fs.mountpoint);
	free(fs.o.logfile);
	bufpool_stop();
	return rc ? 1 : 0;
}
