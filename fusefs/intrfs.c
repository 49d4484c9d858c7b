/*
 * intrfs: the daemon's main.  Reads the command line (the mount options
 * are options.c's), mounts the NFS export (MNT, FSINFO) in a task, mounts
 * the FUSE filesystem, starts the notifier, the interrupt watcher, the
 * workers and the hung-task watchdog, runs the libfuse session loop until
 * unmounted, and then stops them in the reverse order.  It also owns the
 * daemon's logging and the kill -USR1 dump.
 *
 * Without -f it forks first and the parent waits until the child reports
 * that both mounts worked, so that an error reaches the terminal and the
 * exit status of mount(8); the child then logs to logfile= or to syslog.
 *
 * It takes no lock; the dumper thread only reads (the task list through
 * the region library, counters relaxed).
 */
#include "fusefs_i.h"
#include "safepath.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#define PROG "intrfs"

/*
 * How long the requests still in progress get once the mount is gone (an
 * unmount, an abort), before the calls they wait for are ended.
 */
#define UNMOUNT_DRAIN_S 10

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
 * logfile=, opened before the mount by safepath's rule (the daemon may be
 * root: no symbolic link anywhere on the path, no directory another user
 * may change, a file in the invoking user's directory made as that user),
 * so that a refusal fails the mount with its reason; -1: none.
 */
static int logfile_fd = -1;

static int open_logfile(const char *path)
{
	char msg[SAFEPATH_MSG_MAX];

	logfile_fd = safepath_open(path, O_WRONLY | O_CREAT | O_APPEND, 0644,
				   msg, sizeof(msg));
	if (logfile_fd < 0) {
		fprintf(stderr, PROG ": logfile=%s\n", msg);
		return -1;
	}
	return 0;
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
	if (fs->o.logfile && logfile_fd >= 0) {
		dup2(logfile_fd, 2);
		close(logfile_fd);
		logfile_fd = -1;
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

/* A relative PATH option made absolute now: the daemon leaves its cwd. */
static int make_absolute(char **path)
{
	char cwd[4096], *abs;

	if (!*path || (*path)[0] == '/')
		return 0;
	if (!getcwd(cwd, sizeof(cwd)) ||
	    asprintf(&abs, "%s/%s", cwd, *path) < 0) {
		fprintf(stderr, PROG ": %s: %s\n", *path, strerror(errno));
		return -1;
	}
	free(*path);
	*path = abs;
	return 0;
}

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

/* Once, from the thread that announces the mount or from main's end. */
static void daemon_ready(char status)
{
	static atomic_int fd = -2;
	int expected = -2, mine;

	/* relaxed: ready_fd was set before any thread started. */
	if (!atomic_compare_exchange_strong_explicit(&fd, &expected, -1,
						     memory_order_relaxed,
						     memory_order_relaxed))
		return;
	mine = ready_fd;
	if (mine < 0)
		return;
	if (write(mine, &status, 1) != 1)
		perror(PROG ": telling the parent");
	close(mine);
}

/*
 * The mount is the kernel's once INIT is answered, and INIT may still fail
 * (libfuse refuses what init() set against what the options asked): a stat
 * of the mount point waits for it, served by the session threads.  Only
 * then is the mount announced and the mount command told it worked.
 *
 * The stat is a child's, which holds no descriptor of /dev/fuse: a thread
 * of the daemon itself whose request a session thread has read waits for
 * the answer whatever signal comes, so a kill -9 of the daemon at that
 * moment would leave it unable to exit (its last thread waiting on a
 * connection that only its exit would abort).  The child's request is
 * aborted with the connection instead, and the child ends.
 */
static atomic_bool announced;

/*
 * The device of the mount on path, as a stat there sees it once INIT is
 * through: 0, or -errno (the mount never came up, or the child failed).
 */
static int stat_own_mount(const char *path, dev_t *dev)
{
	int p[2], st, rc = -EIO;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		close(p[0]);
		close(p[1]);
		return rc;
	}
	if (pid == 0) {
		struct stat sb;

		/* Only async-signal-safe calls: the daemon has threads. */
		if (dup2(p[1], 3) < 0 ||
		    syscall(SYS_close_range, 4, ~0u, 0) < 0)
			_exit(1);
		if (stat(path, &sb) < 0)
			_exit(2);
		_exit(write(3, &sb.st_dev, sizeof(sb.st_dev)) ==
				      (ssize_t)sizeof(sb.st_dev) ?
			      0 :
			      1);
	}
	close(p[1]);
	do
		n = read(p[0], dev, sizeof(*dev));
	while (n < 0 && errno == EINTR);
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (n == (ssize_t)sizeof(*dev))
		rc = 0;
	return rc;
}

/*
 * Readahead of two READs of rsize: the one the reader takes next and the
 * one after it.  The kernel gives a FUSE mount 128 KiB, which splits a
 * reader's 1 MiB read() into 128 KiB READs, one round trip after another.
 * Linux NFS keeps the VM's 128 KiB as well (since 5.4; 15 x rsize before)
 * but reads a big read() in READs of rsize (its bdi's io_pages), which a
 * FUSE mount cannot ask for: a window of 2 x rsize comes closest.  More in
 * flight makes the server read a cold file slower, at as many places at
 * once: 15 READs read 512 MiB at 0.97 of nfs-cp's speed, 2 at 1.26 (and
 * 4 readers at 0.64 and 0.87).  Never smaller than what the kernel set.
 * The window is the mount's bdi (/sys/class/bdi/MAJ:MIN), and INIT's reply
 * sets it too, so this runs once INIT is through.  Best effort: only root
 * may write there.
 */
#define READAHEAD_READS 2

static void set_readahead(struct intrfs *fs, dev_t dev)
{
	char path[96], val[32];
	unsigned long want = READAHEAD_READS * (nc_client_rsize(fs->nc) / 1024);
	ssize_t n;
	int fd, len;

	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb",
		 major(dev), minor(dev));
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, val, sizeof(val) - 1);
	if (n > 0) {
		val[n] = '\0';
		if (strtoul(val, NULL, 10) >= want) {
			close(fd);
			return;
		}
	}
	len = snprintf(val, sizeof(val), "%lu", want);
	if (pwrite(fd, val, (size_t)len, 0) != len)
		fprintf(stderr,
			PROG ": could not set readahead to %s KiB: %s\n", val,
			strerror(errno));
	close(fd);
}

static void announce(struct intrfs *fs)
{
	fprintf(stderr,
		PROG ": mounted %s on %s (export %s, rsize %u, wsize %u, "
		     "policy %s, pid %d)\n",
		fs->source, fs->mountpoint, nc_client_export(fs->nc),
		nc_client_rsize(fs->nc), nc_client_wsize(fs->nc),
		fs->nco.linux_waits ? "linux (percall with Linux's waits)" :
				      region_policy_name(fs->nco.policy),
		(int)getpid());
	/* relaxed: main reads it after joining this thread. */
	atomic_store_explicit(&announced, true, memory_order_relaxed);
	daemon_ready(0);
}

static void *announce_main(void *arg)
{
	struct intrfs *fs = arg;
	dev_t dev;

	/* The session ended first: it is the loop's end that reports. */
	if (stat_own_mount(fs->mountpoint, &dev) == 0 &&
	    !fuse_session_exited(fs->se)) {
		set_readahead(fs, dev);
		announce(fs);
	}
	return NULL;
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

	return n < 0 || (size_t)n >= sizeof(cl->opts) - len ? -E2BIG : 0;
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
				return -EINVAL;
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
			fs_usage(stdout);
			exit(0);
		case 'V':
			printf(PROG " " INTRFS_VERSION "\n");
			exit(0);
		default:
			fprintf(stderr, "Try '" PROG " --help'.\n");
			return -EINVAL;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr,
			PROG ": need SERVER:/PATH and MOUNTPOINT (try '" PROG
			     " --help')\n");
		return -EINVAL;
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
	t = region_task_create(&attr);
	if (!t)
		return -ENOMEM;
	region_task_enter(t);
	nc_cred_self(&cred);
	rc = nc_client_mount(fs->nc, path, &cred, &fs->root.fh, err,
			     sizeof(err));
	fs->mounted_ns = region_now_ns();
	if (rc == 0) {
		/* Who may search the root decides how long entries stay. */
		struct nc_attr a;
		/* Best effort: without them, entries are kept for 0 s. */
		int arc = nc_getattr(fs->nc, &cred, &fs->root.fh, &a);

		if (arc == 0) {
			fs->root.mode = a.mode;
			fs->root.uid = a.uid;
			fs->root.gid = a.gid;
			fs->root.ctime = a.ctime;
			fs->root.fileid = a.fileid;
		}
	}
	region_task_leave(t);
	region_task_put(t);
	if (rc) {
		fprintf(stderr, PROG ": mounting %s: %s\n", fs->source,
			err[0] ? err : strerror(-rc));
		return rc;
	}
	silly_recover(fs);
	return locks_start(fs);
}

/*
 * kill -USR1 on the daemon prints what intrfsctl's tasks --table and
 * stats --table print (control.c).  SIGUSR1 is blocked in every thread and
 * taken here with sigwait().
 */
static pthread_t dumper;
static atomic_bool dumper_stop;

static void *dumper_main(void *arg)
{
	struct intrfs *fs = arg;
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	/*
	 * acquire: pairs with the release store before the stopping
	 * pthread_kill(), so the signal that wakes us shows the flag.
	 */
	while (sigwait(&set, &sig) == 0 &&
	       !atomic_load_explicit(&dumper_stop, memory_order_acquire)) {
		fprintf(stderr, "intrfs: tasks on %s, policy %s:\n",
			nc_client_server(fs->nc), control_policy_name(fs));
		control_dump(fs, stderr);
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
	       const struct fs_fuse_opts *fo)
{
	char fuse_opts[1400];
	char *fargv[5];
	int fargc = 0, rc;
	struct fuse_args args;
	struct fuse_loop_config *lc;
	pthread_t announcer;
	bool drained;

	snprintf(fuse_opts, sizeof(fuse_opts), "%s%ssubtype=intrfs%s%s",
		 fo->opts, fo->opts[0] ? "," : "",
		 fo->fsname_set ? "" : ",fsname=",
		 fo->fsname_set ? "" : fs->source);
	fargv[fargc++] = (char *)PROG;
	fargv[fargc++] = (char *)"-o";
	fargv[fargc++] = fuse_opts;
	if (cl->debug)
		fargv[fargc++] = (char *)"-d";
	fargv[fargc] = NULL;
	args = (struct fuse_args)FUSE_ARGS_INIT(fargc, fargv);

	rc = trace_init();
	if (rc) {
		fprintf(stderr,
			PROG ": cannot start the trace: /dev/null: %s\n",
			strerror(-rc));
		return rc;
	}
	if (fs->o.trace) {
		char msg[SAFEPATH_MSG_MAX];

		rc = trace_on(fs->o.trace, fs->mountpoint, msg, sizeof(msg));
		if (rc) {
			fprintf(stderr, PROG ": cannot write the trace to %s\n",
				msg);
			return rc;
		}
	}
	nodes_init(fs);
	unsure_init(fs);
	fs->ctl.fd = -1;
	atomic_init(&fs->req_policy, (unsigned)fs->nco.policy);
	atomic_init(&fs->req_linux, fs->nco.linux_waits);
	fs->ctl.mode_before_linux = fs->nco.intr_mode;
	/* policy=linux overrode send=: leaving it goes back to the default. */
	fs->ctl.send_before_linux = fs->nco.linux_waits ? TASK_INTERRUPTIBLE :
							  fs->nco.send_mode;
	wb_set_wait_mode(fs, fs->nco.linux_waits ? TASK_UNINTERRUPTIBLE :
						   TASK_INTERRUPTIBLE);
	atomic_init(&fs->req_mode, (unsigned)fs->nco.intr_mode);
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
	rc = bufpool_start(&fs->bufs);
	if (rc == 0)
		rc = callers_start(fs);
	if (rc == 0)
		rc = intr_start(fs);
	if (rc == 0) {
		rc = workers_start(fs);
		/* No worker at all: nothing was submitted, the watcher goes. */
		if (rc)
			intr_stop(fs);
	}
	if (rc) {
		fprintf(stderr, PROG ": cannot start workers: %s\n",
			strerror(-rc));
		callers_stop(fs);
		goto out_unmount;
	}
	/* Without it, an unmount waits for every job as it did before. */
	if (workers_end_watch(fs, UNMOUNT_DRAIN_S) < 0)
		fprintf(stderr, PROG
			": cannot watch for the unmount: a request the "
			"server does not answer keeps the daemon after it\n");
	if (fs->o.hung_timeout)
		region_watchdog_start((uint64_t)fs->o.hung_timeout *
				      1000000000ull);
	else
		region_watchdog_start(0);

	if (!cl->foreground && redirect_logs(fs) < 0)
		perror(PROG ": logging");
	if (pthread_create(&announcer, NULL, announce_main, fs) != 0) {
		/* Announced before INIT, then. */
		announcer = 0;
		announce(fs);
	}
	if (pthread_create(&dumper, NULL, dumper_main, fs) != 0)
		dumper = 0;
	/* Without it the mount still works: control_start() says why. */
	(void)control_start(fs);

	/*
	 * The parent-death signal is the main thread's, which the loop
	 * keeps from here on: no longer the mount command's once the
	 * session runs (INIT follows at once).
	 */
	prctl(PR_SET_PDEATHSIG, 0);
	lc = fuse_loop_cfg_create();
	fuse_loop_cfg_set_clone_fd(lc, 1);
	fuse_loop_cfg_set_idle_threads(lc, 8);
	/*
	 * Session threads run most jobs themselves (workers.c), at most
	 * max_workers at once: room for that many more to read requests.
	 */
	fuse_loop_cfg_set_max_threads(lc, 2 * fs->o.max_workers + 8);
	rc = fuse_session_loop_mt(fs->se, lc) < 0 ? -EIO : 0;
	fuse_loop_cfg_destroy(lc);
	control_stop(fs);
	if (announcer)
		pthread_join(announcer, NULL);
	/*
	 * Not announced: either INIT failed, or the mount went before the
	 * announcer's stat got to it (a mount unmounted as soon as it was
	 * used): INIT reached init() and the loop ended without an error
	 * (libfuse's own refusals of INIT are the loop's error), so it did
	 * come up.  relaxed: joined, and the session threads are done.
	 */
	if (!atomic_load_explicit(&announced, memory_order_relaxed) &&
	    rc == 0 &&
	    atomic_load_explicit(&fs->init_seen, memory_order_relaxed))
		announce(fs);
	if (!atomic_load_explicit(&announced, memory_order_relaxed)) {
		fprintf(stderr,
			PROG ": the kernel's FUSE mount on %s never came up "
			     "(its INIT failed: see above)\n",
			fs->mountpoint);
		if (rc == 0)
			rc = -EIO;
	}

	/*
	 * Unmounted.  Writes already answered are still owed to the server:
	 * they had time since the session ended, then every call still
	 * waiting was ended (workers.c), which is also what let the loop
	 * return while a session thread's job waited for the server.
	 */
	drained = workers_end(fs, UNMOUNT_DRAIN_S);
	silly_cleanup(fs, drained);
	locks_stop(fs);
	nc_client_shutdown(fs->nc);
	if (dumper) {
		/* release: seen by the dumper once the signal is. */
		atomic_store_explicit(&dumper_stop, true, memory_order_release);
		pthread_kill(dumper, SIGUSR1);
		pthread_join(dumper, NULL);
	}
	region_watchdog_stop();
	intr_stop(fs);
	workers_stop(fs);
	callers_stop(fs);
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
	unsure_destroy(fs);
	access_destroy(fs);
	free(fs->silly.journal);
	return rc;
}

int main(int argc, char **argv)
{
	struct intrfs fs;
	struct fs_fuse_opts fo;
	struct cmdline cl;
	char err[512] = "";
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

	if (parse_cmdline(argc, argv, &cl))
		return 2;
	memset(&fs, 0, sizeof(fs));
	nc_opts_init(&fs.nco);
	fs_opts_init(&fs.o);
	memset(&fo, 0, sizeof(fo));
	if (fs_opts_parse(&fs, cl.opts, &fo, err, sizeof(err))) {
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
	if (make_absolute(&fs.o.logfile) || make_absolute(&fs.o.trace))
		return 2;
	if (fs.o.logfile && !cl.foreground && open_logfile(fs.o.logfile))
		return 2;

	if (!cl.foreground)
		daemon_start();
	block_sigusr1();
	rc = nfs_mount(&fs, server, path);
	if (rc == 0)
		rc = run(&fs, &cl, &fo);
	daemon_ready(1);
	nc_client_destroy(fs.nc);
	free(server);
	free(path);
	free(fs.source);
	free(fs.mountpoint);
	free(fs.o.logfile);
	free(fs.o.trace);
	bufpool_stop(&fs.bufs);
	return rc ? 1 : 0;
}
